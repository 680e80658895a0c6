"""``dataclass`` with its generated methods compiled on first use, so importing a module of records is cheap.

On Python 3.11 and 3.12 the standard decorator writes every generated method (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, a frozen class's ``__setattr__`` / ``__delattr__``) as source text and compiles it
with ``exec`` while the class is created: about 0.7 M instructions a method, a third of the CPU of a small
``pcs replay`` (benchmarks/bench_startup.py, docs/performance.md), though most records never print, compare
or hash. :func:`dataclass` runs the standard decorator unchanged but hands it, in place of each compiled
method, a stand-in holding the same source; the stand-in compiles the method with the standard code the
first time the method is looked up or called and then puts the real function in the class. The class, its
fields (``dataclasses.fields``, ``replace``, ``asdict``), its ``__slots__`` and every method's behaviour are
those of ``dataclasses.dataclass``; only the compile moves to first use. On an interpreter whose
``dataclasses`` has no ``_create_fn`` (3.13 builds all methods in one ``exec``) it is the standard decorator.

The compile itself is kept, as Python keeps a module's ``.pyc``: the code of each method compiled from a
module's records is saved beside that module's ``.pyc`` (``__pycache__/<module>.<tag>.dataclass``, written
at exit as the ``.pyc`` files are: not under ``PYTHONDONTWRITEBYTECODE``, nor where the folder cannot be
written) and read back by the next process, which runs it instead of compiling the same text again. An entry
is the method's whole source text and its code, so only identical text reuses code; the file also records
the module's source size and modification time and is ignored once the module changes. A small ``pcs
replay`` compiled ~50 methods, ~7 % of its instructions (docs/performance.md).
"""
from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import marshal
import os
import sys
import threading
from types import CodeType
from typing import Any, Callable, TypeVar, dataclass_transform

__all__ = ["dataclass"]

_T = TypeVar("_T")
_ORIGINAL: Callable[..., Any] | None = getattr(dataclasses, "_create_fn", None)
_LOCK = threading.RLock()
#: module name -> its saved code (method source -> code), the module's (size, mtime_ns) and whether it grew.
_CODES: dict[str, tuple[dict[str, CodeType], tuple[int, int], list[bool]]] = {}
#: methods compiled and methods whose code came from a saved file, in this process (tests read them).
COUNTS = {"compiled": 0, "reused": 0}


def _cache_file(module: str) -> tuple[str, tuple[int, int]] | None:
    """The code file of ``module`` (beside its ``.pyc``) and the module source's (size, mtime_ns); None when
    the module has no source file or the interpreter writes no ``.pyc`` names."""
    source = getattr(sys.modules.get(module), "__file__", None) if module != "__main__" else None
    if not source or not source.endswith(".py"):
        return None
    try:
        pyc = importlib.util.cache_from_source(source)
        st = os.stat(source)
    except (NotImplementedError, ValueError, OSError):
        return None
    return pyc[:-len(".pyc")] + ".dataclass", (st.st_size, st.st_mtime_ns)


def _load(path: str, stamp: tuple[int, int]) -> dict[str, CodeType]:
    """The saved code of ``path`` when it was saved for this interpreter and this module source; else empty."""
    try:
        with open(path, "rb") as fh:
            magic, saved_stamp, codes = marshal.loads(fh.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if magic != importlib.util.MAGIC_NUMBER or saved_stamp != stamp or not isinstance(codes, dict):
        return {}
    return {k: v for k, v in codes.items() if isinstance(k, str) and isinstance(v, CodeType)}


def _codes(module: str | None) -> dict[str, CodeType] | None:
    """The code saved for ``module``'s records (read once), or None when it has no code file."""
    if module not in _CODES:
        where = _cache_file(module) if module else None
        if where is None:
            return None
        _CODES[module] = (_load(*where), where[1], [False])
    return _CODES[module][0]


def _save() -> None:
    """At exit: write the code of each module that compiled a method (a temporary file, then renamed); nothing
    under ``PYTHONDONTWRITEBYTECODE``; a folder that cannot be written is left alone, as for a ``.pyc``."""
    if sys.dont_write_bytecode:
        return
    for module, (codes, stamp, grew) in list(_CODES.items()):
        where = _cache_file(module) if grew[0] else None
        if where is None or where[1] != stamp:
            continue
        tmp = f"{where[0]}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(where[0]), exist_ok=True)
            with open(tmp, "wb") as fh:
                fh.write(marshal.dumps((importlib.util.MAGIC_NUMBER, stamp, codes)))
            os.replace(tmp, where[0])
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


atexit.register(_save)


def _create(name: str, args: tuple, kwargs: dict) -> Callable[..., Any]:
    """``_create_fn(name, *args, **kwargs)`` of the standard module, its ``exec`` of the method's text served from
    the module's saved code (:func:`_codes`) when the same text was compiled before (a script's records,
    ``__main__``, are compiled each time, as Python compiles the script).

    ``compile(..., dont_inherit=True)`` then ``exec`` of the code is what ``exec`` of the text does in
    ``dataclasses`` (a module without ``__future__`` imports).
    """
    module = (kwargs.get("globals") or {}).get("__name__")
    with _LOCK:
        codes = _codes(module)
        if codes is None:
            COUNTS["compiled"] += 1
            return _ORIGINAL(name, *args, **kwargs)

        owner = threading.get_ident()

        def exec_saved(text: str, globals_: Any = None, locals_: Any = None) -> None:
            if threading.get_ident() != owner:  # another thread's standard dataclass meanwhile: untouched
                return exec(text, globals_, locals_)
            code = codes.get(text)
            if code is None:
                code = codes[text] = compile(text, "<string>", "exec", dont_inherit=True)
                _CODES[module][2][0] = True
                COUNTS["compiled"] += 1
            else:
                COUNTS["reused"] += 1
            exec(code, globals_, locals_)

        dataclasses.exec = exec_saved
        try:
            return _ORIGINAL(name, *args, **kwargs)
        finally:
            del dataclasses.exec


class _Deferred:
    """One generated method, not yet compiled: the arguments the standard ``_create_fn`` was called with.

    A descriptor: looked up on the class or an instance, it compiles the method, stores the function in the
    class that holds it (named ``Class.method``, as the standard decorator names it) and returns what the
    function would. Callable too (the same function). ``__repr__`` is not one: see :func:`_deferred_repr`.
    """

    __slots__ = ("__name__", "_args", "_kwargs", "_fn")

    def __init__(self, name: str, args: tuple, kwargs: dict) -> None:
        self.__name__ = name
        self._args, self._kwargs, self._fn = (name, *args), kwargs, None

    def _compile(self) -> Callable[..., Any]:
        if self._fn is None:
            self._fn = _create(self._args[0], self._args[1:], self._kwargs)
        return self._fn

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        fn = self._compile()
        for klass in (owner or type(obj)).__mro__:
            if klass.__dict__.get(self.__name__) is self:
                fn.__qualname__ = f"{klass.__qualname__}.{fn.__name__}"  # as the standard _set_qualname
                type.__setattr__(klass, self.__name__, fn)
                break
        return fn.__get__(obj, owner)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile()(*args, **kwargs)


def _deferred_repr(args: tuple, kwargs: dict) -> Callable[..., Any]:
    """``__repr__``, compiled on its first call: a plain function, as the recursion guard that wraps it copies its
    name, module and docstring (those of the compiled one: the class's module, no docstring)."""
    compiled: list = []

    def __repr__(*a: Any, **k: Any) -> Any:
        if not compiled:
            compiled.append(_create("__repr__", args, kwargs))
        return compiled[0](*a, **k)

    __repr__.__qualname__ = "__create_fn__.<locals>.__repr__"
    __repr__.__module__ = (kwargs.get("globals") or {}).get("__name__")
    __repr__.__doc__ = None
    return __repr__


def _deferred_create_fn(name: str, *args: Any, **kwargs: Any) -> Any:
    return _deferred_repr(args, kwargs) if name == "__repr__" else _Deferred(name, args, kwargs)


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: type[_T] | None = None, /, **options: Any) -> Any:
    """``dataclasses.dataclass(cls, **options)`` with the generated methods compiled on first use.

    Args:
        cls: the class, or None when called with options (``@dataclass(frozen=True, slots=True)``).
        **options: the standard decorator's keywords, passed on unchanged.

    Returns:
        The dataclass (a new class when ``slots=True``, as with the standard decorator), or the decorator.

    Raises:
        TypeError: whatever the standard decorator raises for the class and options.
    """
    def wrap(klass: type[_T]) -> type[_T]:
        if _ORIGINAL is None:
            return dataclasses.dataclass(klass, **options)
        with _LOCK:
            dataclasses._create_fn = _deferred_create_fn
            try:
                return dataclasses.dataclass(klass, **options)
            finally:
                dataclasses._create_fn = _ORIGINAL
    return wrap if cls is None else wrap(cls)
