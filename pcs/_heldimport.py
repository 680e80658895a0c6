"""pcs's own first imports of heavy third-party packages, run on the main thread with stop signals held, so a
Ctrl-C cannot leave one half-initialised.

pcs imports numpy, pyarrow and matplotlib on first use (``import pcs`` stays cheap, :mod:`pcs._lazy`), so the first
``pcs.replay`` of a process imports them. A ``KeyboardInterrupt`` raised part-way through such an import leaves the
package out of ``sys.modules`` but its compiled extension modules loaded -- numpy's cannot be initialised a second
time -- and every later import of the package in that process finds it broken (``AttributeError: module 'numpy'
has no attribute 'matrix'``). :func:`held_import` is called where pcs first imports such a package: in
``pcs.__getattr__`` (numpy, before the module of a public function is imported: every public function is reached
through it) and at pcs's lazy import sites of pyarrow and matplotlib. Nothing is installed: a user's own imports,
``importlib.util.find_spec``, loaders and signal handlers see no change (a global ``sys.meta_path`` finder did:
a ``find_spec`` probe ran numpy's body a second time). Checked by ``tests/engine/test_held_import.py``.
"""
from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

__all__ = ["held_import"]


def _initializing(module: ModuleType) -> bool:
    """Whether ``module`` is in ``sys.modules`` while another thread's import still runs its body (its spec's
    ``_initializing`` flag, set by importlib for that time): :func:`importlib.import_module` then waits for that
    import to finish, where returning the module would hand out one whose names are not all defined yet."""
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def _wait_for(name: str, module: ModuleType) -> ModuleType:
    """``name`` (``module`` in ``sys.modules``), once the other thread importing it has finished: its body runs
    there, so nothing here needs signals held (a Ctrl-C meanwhile is raised at once). In a cycle of imports across
    threads importlib refuses to wait (its ``_DeadlockError``); the module is then returned as it is, as the
    ``import`` statement does."""
    try:
        return importlib.import_module(name)
    except RuntimeError as exc:
        if type(exc).__name__ != "_DeadlockError":
            raise
        return sys.modules.get(name, module)


def held_import(name: str) -> ModuleType:
    """Import the module *name* (dotted, absolute) and return it; when it is not yet in ``sys.modules`` and this is
    the main thread, the import runs with Ctrl-C and the stop signals held (:func:`pcs.beside._signals_held`): a
    signal that comes meanwhile is run once the import has finished, the module whole in ``sys.modules``. Anywhere
    else -- a worker thread (no signal handler runs there), a module already imported -- a plain
    :func:`importlib.import_module`. A module another thread is still importing is waited for (as ``import``
    waits), never returned half-initialised: several threads making a process's first ``pcs.replay`` at once
    each get the whole function.

    Raises:
        ImportError: the module cannot be imported (as ``import``).
        KeyboardInterrupt, pcs.errors.Stopped: a stop signal that came during the import (held, then run).
    """
    module = sys.modules.get(name)
    if module is not None:
        return module if not _initializing(module) else _wait_for(name, module)
    if threading.current_thread() is not threading.main_thread():
        return importlib.import_module(name)
    from pcs.beside import _signals_held

    with _signals_held():
        module = importlib.import_module(name)
    return module
