"""Packages that import their submodules on first use, so importing one light submodule (``pcs.model.layouts``,
``pcs.cache.groups``) does not load the package's heavy ones (numpy) first.

``pcs replay --help`` and a small replay start faster this way (benchmarks/bench_startup.py;
``tests/cli/test_import_hygiene.py``).
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__all__ = ["lazy_package"]


class _LazyPackage(types.ModuleType):
    """A package module whose public names (``_lazy_exports``: name -> submodule) are imported on first use."""

    def __getattr__(self, name: str) -> Any:
        exports = self.__dict__.get("_lazy_exports", {})
        if name in exports:
            value = getattr(importlib.import_module(f"{self.__name__}.{exports[name]}"), name)
            self.__dict__[name] = value
            return value
        if not name.startswith("__"):
            try:
                return importlib.import_module(f"{self.__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{self.__name__}.{name}":
                    raise
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        # The import system binds a loaded submodule as an attribute of its package; a submodule spelled like a
        # public name (pcs.model.footprint, the module of pcs.model.footprint(), the function) must not hide it.
        if isinstance(value, types.ModuleType) and name in self.__dict__.get("_lazy_exports", {}):
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(self.__dict__.get("_lazy_exports", {})))


def lazy_package(package: str, exports: dict[str, str]) -> None:
    """Make the package ``package`` (its ``__name__``, already in ``sys.modules``) import its names lazily.

    Args:
        package: the package's ``__name__``.
        exports: public name -> the submodule (relative to ``package``) that defines it. Reading such a name
            imports the submodule and caches the value; another name that is a submodule imports it; anything
            else raises ``AttributeError``.
    """
    module = sys.modules[package]
    module.__dict__["_lazy_exports"] = dict(exports)
    module.__class__ = _LazyPackage
