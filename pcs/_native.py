"""The compiled twins, imported once, and the one switch that picks them: ``auto | c | python``.

pcs keeps every replay rule in plain Python (the reference) and speeds up the
hot loops with optional C extensions built by ``pip install`` (``setup.py``).
Each C file sits beside the Python module it mirrors and is diffed against it
in the tests:

========== ============================= ======================================
twin       extension (C source)          Python reference it mirrors
========== ============================= ======================================
stackdist  ``pcs.curves._stackdist``     :mod:`pcs.curves.stackdist` (stack depths)
lruscan    ``pcs.engine._lruscan``       :class:`pcs.engine.lruscan._PythonLru`
lruhier    ``pcs.cache._lruhier``        :class:`pcs.cache.Hierarchy` (all-LRU tiers)
========== ============================= ======================================

This module is the only place that imports them. The switch: ``auto`` (the
compiled twin when it is built, else the Python one), ``c`` (the compiled
twin or a ValueError), ``python`` (always the reference). Its default comes
from the environment variable ``PCS_NATIVE`` (``auto`` when unset), and every
API that runs a twin takes the same three words (``native=``, ``kernel=``).
"""
from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType

__all__ = ["MODES", "HELP", "TWINS", "module", "built", "resolve", "default_mode", "missing"]

#: Values of the switch.
MODES = ("auto", "c", "python")
#: One line for the ``--native`` option of every command that runs a twin.
HELP = ("Compiled twins: auto (the compiled code when built), c (the compiled code or an error), python (the "
        "plain Python references; same results, slower). Default: $PCS_NATIVE or auto.")

#: twin name -> extension module name.
TWINS = {"stackdist": "pcs.curves._stackdist", "lruscan": "pcs.engine._lruscan", "lruhier": "pcs.cache._lruhier"}

_loaded: dict[str, ModuleType | None] = {}


def module(twin: str) -> ModuleType | None:
    """The compiled extension of ``twin`` (imported once), or None when it is not built.

    Raises:
        KeyError: unknown twin name (see :data:`TWINS`).
    """
    if twin not in _loaded:
        try:
            _loaded[twin] = importlib.import_module(TWINS[twin])
        except ImportError:
            _loaded[twin] = None
    return _loaded[twin]


def built(twin: str) -> bool:
    """Whether the compiled extension of ``twin`` imports."""
    return module(twin) is not None


def missing() -> list[str]:
    """Names of the twins whose extension is not built (empty on a normal install)."""
    return [t for t in TWINS if not built(t)]


def default_mode() -> str:
    """The switch's default: ``$PCS_NATIVE`` or ``auto``.

    Raises:
        ValueError: ``PCS_NATIVE`` is set to something other than :data:`MODES`.
    """
    mode = os.environ.get("PCS_NATIVE", "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"PCS_NATIVE={mode!r} is not one of {', '.join(MODES)}")
    return mode


def resolve(mode: str | None, twin: str, option: str = "native") -> str:
    """``"c"`` or ``"python"``: which implementation of ``twin`` runs under ``mode``.

    Args:
        mode: ``auto``, ``c``, ``python`` or None (= :func:`default_mode`).
        twin: a key of :data:`TWINS`.
        option: the caller's name for the switch, used in the error message.
    Raises:
        ValueError: unknown mode, or ``c`` when the extension is not built.
    """
    mode = default_mode() if mode is None else mode
    if mode not in MODES:
        raise ValueError(f"unknown {option} {mode!r}; valid: {', '.join(MODES)}")
    if mode == "python":
        return "python"
    if built(twin):
        return "c"
    if mode == "c":
        raise ValueError(f"{option} 'c': the compiled {TWINS[twin]} is not built (reinstall with `pip install -e .` and a "
                         "C compiler); valid: python")
    warnings.warn(f"{TWINS[twin]} (compiled) is not built; using the slower Python twin", RuntimeWarning,
                  stacklevel=3)
    return "python"
