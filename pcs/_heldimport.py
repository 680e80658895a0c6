"""Heavy third-party packages imported with stop signals held on the main thread, so a Ctrl-C cannot leave one
half-initialised.

pcs imports numpy, pyarrow and the like on first use (``import pcs`` stays cheap, :mod:`pcs._lazy`), so the first
``pcs.replay`` of a process imports them. A ``KeyboardInterrupt`` raised part-way through such an import leaves
the package out of ``sys.modules`` but its compiled extension modules loaded -- numpy's cannot be initialised a
second time -- and every later import of the package in that process finds it broken (``AttributeError: module
'numpy' has no attribute 'matrix'``). This finder (on ``sys.meta_path`` from ``import pcs`` on) runs the outermost
import of each module of :data:`HEAVY` on the main thread -- the only thread a signal handler runs in -- with Ctrl-C
and the stop signals held (:func:`pcs.beside._signals_held`): a signal that comes meanwhile is raised once the
module has finished. That exception leaves the import statement, and the import machinery takes a module whose
import raised out of ``sys.modules``; the finished module is kept here and handed back, unchanged, by the next
import of its name, on any thread. Other imports on other threads, modules already imported and every other name
pass through untouched (one tuple lookup per module not yet imported). Checked by ``tests/engine/test_held_import.py``.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

__all__ = ["HEAVY", "install"]

#: Top-level packages whose import runs with stop signals held: third-party packages with compiled extensions
#: that pcs imports lazily (a test adds a fake one).
HEAVY = {"numpy", "pyarrow", "matplotlib", "msgpack", "simdjson", "tokenizers"}

#: Modules whose held import finished while a stop signal came: name -> module, handed back by the next import.
_finished: dict[str, Any] = {}
#: Held imports running on the main thread (the imports they make inside pass through).
_depth = 0


class _HeldLoader:
    """The loader of a held import: the real loader's ``exec_module`` run with stop signals held; any other
    attribute is the real loader's. The spec and the module get the real loader back once it has run."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        """Run the module with stop signals held; a signal that came is raised after it, the finished module kept
        in :data:`_finished` for the next import of its name.

        Raises:
            KeyboardInterrupt, pcs.errors.Stopped: a stop signal that came during the import.
        """
        global _depth
        from pcs.beside import _signals_held

        name, done = module.__spec__.name, False
        try:
            with _signals_held() as came:
                _depth += 1
                try:
                    self.loader.exec_module(module)
                    done = True
                finally:
                    _depth -= 1
                    module.__spec__.loader = module.__loader__ = self.loader
                    if done and came:
                        _finished[name] = module
        except BaseException:
            if not done:
                _finished.pop(name, None)
            raise


class _Finished:
    """The loader that hands back a module whose held import finished while a stop signal came."""

    def __init__(self, module: Any, loader: Any) -> None:
        self.module, self.loader = module, loader

    def create_module(self, spec: Any) -> Any:
        return self.module

    def exec_module(self, module: Any) -> None:
        module.__spec__.loader = self.loader


class _HeldImports:
    """The ``sys.meta_path`` finder of the held imports (module docstring)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.partition(".")[0] not in HEAVY:
            return None
        module = _finished.pop(name, None)      # on any thread: run again, its body would find it half-done
        if module is not None:
            spec = module.__spec__
            spec.loader = _Finished(module, spec.loader)
            return spec
        if _depth or threading.current_thread() is not threading.main_thread():
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1:]:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _HeldLoader(spec.loader)
                return spec
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(f, _HeldImports) for f in sys.meta_path):
        sys.meta_path.insert(0, _HeldImports())
