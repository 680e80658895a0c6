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
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable, TypeVar, dataclass_transform

__all__ = ["dataclass"]

_T = TypeVar("_T")
_ORIGINAL: Callable[..., Any] | None = getattr(dataclasses, "_create_fn", None)
_LOCK = threading.RLock()


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
            self._fn = _ORIGINAL(*self._args, **self._kwargs)
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
            compiled.append(_ORIGINAL("__repr__", *args, **kwargs))
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
