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
