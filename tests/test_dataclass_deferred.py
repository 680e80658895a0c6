"""pcs._dataclass.dataclass: the standard dataclass, its generated methods compiled on first use.

Each check builds the same class body twice, with ``dataclasses.dataclass`` and with the deferred decorator,
and asserts both behave alike; the expected values (reprs, equality, errors) are the documented behaviour of
the standard decorator, written out by hand.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import pytest

import pcs._dataclass as deferred


def _pair(**options):
    """The same three-field class, made by each decorator."""
    made = []
    for decorate in (dataclasses.dataclass, deferred.dataclass):
        class Point:
            """A point."""
            x: int
            y: str = "a"
            z: tuple = dataclasses.field(default_factory=tuple)
        made.append(decorate(**options)(Point))
    return made


@pytest.mark.parametrize("options", [dict(frozen=True, slots=True), dict(slots=True), dict(frozen=True),
                                     dict(frozen=True, slots=True, eq=False), dict(order=True)])
def test_deferred_methods_behave_as_the_standard_ones(options):
    for cls in _pair(**options):
        p = cls(1)
        assert repr(p) == "_pair.<locals>.Point(x=1, y='a', z=())"  # the class qualname
        assert str(inspect.signature(cls)) == "(x: 'int', y: 'str' = 'a', z: 'tuple' = <factory>) -> None"  # string annotations (__future__)
        assert [f.name for f in dataclasses.fields(cls)] == ["x", "y", "z"]
        assert dataclasses.replace(p, x=5).x == 5
        assert dataclasses.asdict(p) == {"x": 1, "y": "a", "z": ()}
        if options.get("eq", True):
            assert p == cls(1) and p != cls(2) and cls.__init__.__qualname__ == "_pair.<locals>.Point.__init__"
        else:
            assert p != cls(1) and p == p  # identity comparison: eq=False keeps object.__eq__
        if options.get("frozen"):
            with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
                p.x = 3
            with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'x'"):
                del p.x
            assert dataclasses.astuple(copy.deepcopy(p)) == (1, "a", ())
        else:
            p.x = 3
            assert p.x == 3
        if options.get("frozen") and options.get("eq", True):
            assert hash(p) == hash(cls(p.x))  # the generated __hash__: a hash of the field tuple
        if options.get("slots"):
            assert cls.__slots__ == ("x", "y", "z") and not hasattr(p, "__dict__")
        if options.get("order"):
            assert cls(1) < cls(2) and sorted([cls(3), cls(1)]) == [cls(1), cls(3)]


def test_pickling_a_deferred_frozen_slotted_record():
    cls = deferred.dataclass(frozen=True, slots=True)(type("Rec", (), {"__annotations__": {"a": "int"},
                                                                      "__module__": __name__}))
    globals()["Rec"] = cls
    try:
        assert pickle.loads(pickle.dumps(cls(7))) == cls(7)
    finally:
        del globals()["Rec"]


def test_only_the_methods_used_are_compiled():
    """A fresh class has stand-ins; constructing an instance compiles ``__init__`` alone (then stored in the
    class as a plain function), printing compiles ``__repr__``; the standard decorator's name stays restored."""
    if deferred._ORIGINAL is None:
        pytest.skip("this interpreter's dataclasses has no _create_fn: the standard decorator is used")

    @deferred.dataclass(frozen=True, slots=True)
    class Pair:
        """Two numbers."""
        a: int
        b: int

    assert dataclasses._create_fn is deferred._ORIGINAL
    kinds = {name: type(Pair.__dict__[name]).__name__ for name in ("__init__", "__eq__", "__hash__", "__setattr__")}
    assert kinds == dict.fromkeys(kinds, "_Deferred")
    Pair(1, 2)
    assert inspect.isfunction(Pair.__dict__["__init__"]) and type(Pair.__dict__["__eq__"]).__name__ == "_Deferred"
    assert repr(Pair(1, 2)).endswith(".<locals>.Pair(a=1, b=2)")
    assert Pair(1, 2) == Pair(1, 2) and inspect.isfunction(Pair.__dict__["__eq__"])


def test_a_subclass_compiles_the_method_into_the_class_that_defines_it():
    @deferred.dataclass
    class Base:
        """A base."""
        a: int

    class Child(Base):
        pass

    assert Child(4).a == 4
    assert inspect.isfunction(Base.__dict__["__init__"]) and "__init__" not in Child.__dict__


def test_the_methods_carry_the_standard_names_modules_and_docstrings():
    """What doc tools read: each method's name, qualname, module and docstring are the standard decorator's
    (``__repr__``'s recursion guard copies them from what it wraps: the class's module, no docstring)."""
    def described(cls):
        return {name: (fn.__name__, fn.__qualname__.split("Point.")[-1], fn.__module__, fn.__doc__)
                for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
                for fn in [getattr(cls, name)]} | {"wrapped": (cls.__repr__.__wrapped__.__qualname__,
                                                              cls.__repr__.__wrapped__.__module__)}
    standard, lazy = _pair(frozen=True, slots=True)
    assert described(lazy) == described(standard)
    assert described(lazy)["__init__"] == ("__init__", "__init__", __name__, None)
    assert described(lazy)["wrapped"] == ("__create_fn__.<locals>.__repr__", __name__)


_RECORDS = '''
from pcs._dataclass import dataclass


@dataclass(frozen=True)
class Span:
    """A span."""
    start: int
    stop: int = 10
'''

_USE = '''
import json, sys
import pcs._dataclass as d
from recs import Span
s = Span(3)
print(json.dumps({"repr": repr(s), "eq": s == Span(3, 10), "hash": hash(s) == hash((3, 10)),
                  "fields": [f for f in Span.__dataclass_fields__], "counts": d.COUNTS}))
'''


def _run_records(folder, env_extra=None):
    """Run :data:`_USE` in a fresh interpreter with ``folder`` (holding ``recs.py``) first on the path."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), str(Path(deferred.__file__).parents[1])])
    env.update(env_extra or {})
    out = subprocess.run([sys.executable, "-c", _USE], cwd=folder, env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def test_the_compiled_methods_are_saved_and_reused_by_the_next_process(tmp_path):
    """Span(3) builds with __init__, prints with __repr__, compares with __eq__, hashes with __hash__: 4 methods.
    The first process compiles the 4 and saves them beside recs.py's .pyc; the second reuses the 4, compiles
    none, and behaves the same (Span(start=3, stop=10), equal to Span(3, 10), hash of (3, 10))."""
    if deferred._ORIGINAL is None:
        pytest.skip("this interpreter's dataclasses has no _create_fn: the standard decorator is used")
    (tmp_path / "recs.py").write_text(_RECORDS)
    want = {"repr": "Span(start=3, stop=10)", "eq": True, "hash": True, "fields": ["start", "stop"]}
    first = _run_records(tmp_path)
    assert first.pop("counts") == {"compiled": 4, "reused": 0} and first == want
    assert [p.name.split(".")[-1] for p in (tmp_path / "__pycache__").glob("recs.*.dataclass")] == ["dataclass"]
    second = _run_records(tmp_path)
    assert second.pop("counts") == {"compiled": 0, "reused": 4} and second == want


def test_a_changed_module_compiles_again_and_nothing_is_saved_without_bytecode(tmp_path):
    """The saved code names the module source's size and time: a third field (default 0) makes the text of
    __init__, __repr__, __eq__ and __hash__ new, so all 4 compile again (Span(start=3, stop=10, step=0));
    under PYTHONDONTWRITEBYTECODE no file is written, so a second such process compiles the 4 again."""
    if deferred._ORIGINAL is None:
        pytest.skip("this interpreter's dataclasses has no _create_fn: the standard decorator is used")
    (tmp_path / "recs.py").write_text(_RECORDS)
    _run_records(tmp_path)
    (tmp_path / "recs.py").write_text(_RECORDS + "    step: int = 0\n")
    got = _run_records(tmp_path, {"PYTHONDONTWRITEBYTECODE": "1"})
    assert got["counts"] == {"compiled": 4, "reused": 0} and got["repr"] == "Span(start=3, stop=10, step=0)"
    assert got["eq"] is True and got["fields"] == ["start", "stop", "step"]   # Span(3) and Span(3, 10): (3, 10, 0)
    again = _run_records(tmp_path, {"PYTHONDONTWRITEBYTECODE": "1"})
    assert again["counts"] == {"compiled": 4, "reused": 0}
