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
lruhier    ``pcs.cache._lruhier``        :class:`pcs.cache.Hierarchy` (tiers with compiled policies)
stepsched  ``pcs.engine._stepsched``     :class:`pcs.engine.scheduler.StepEngine` (the step scheduler's loop)
statscan   ``pcs.trace._statscan``       :mod:`pcs.trace.stats` / :mod:`pcs.trace.tree` (numpy stats)
turns      ``pcs.engine._turns``         :func:`pcs.engine.turns.decode_blocks_python` (next-turn search)
grouphier  ``pcs.cache._grouphier``      :class:`pcs.cache.grouphier.GroupHierarchy` (hybrid cache groups)
jsonrows   ``pcs.trace._jsonrows`` (C++) :func:`pcs.trace.hashids.read_hashid_jsonl` line by line (JSONL)
route      ``pcs.fleet._route``          :func:`pcs.fleet.route._route_loop` (the fleet's routing pass)
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
from types import ModuleType
from pcs.choices import close_tail
from pcs.errors import UnknownNameError, UserError, shown_repr

__all__ = ["MODES", "HELP", "TWINS", "SLOWER", "module", "loaded", "built", "resolve", "default_mode", "missing",
           "missing_note"]

#: Values of the switch.
MODES = ("auto", "c", "python")
#: One line for the ``--native`` option of every command that runs a twin.
HELP = ("Compiled twins: auto (the compiled code when built; a configuration no compiled engine covers runs in "
        "Python and engine_reason says why), c (the compiled code of every twin the chosen engine uses: an error "
        "when one is not built or when no compiled engine covers the configuration), python (the plain Python "
        "references; same results, slower; the summaries' percentile sorts, numpy's values bit for bit, follow "
        "$PCS_NATIVE only). Default: $PCS_NATIVE or auto.")

#: twin name -> extension module name.
TWINS = {"stackdist": "pcs.curves._stackdist", "lruscan": "pcs.engine._lruscan", "lruhier": "pcs.cache._lruhier",
         "stepsched": "pcs.engine._stepsched", "statscan": "pcs.trace._statscan",
         "turns": "pcs.engine._turns", "prefill": "pcs.engine._prefill",
         "grouphier": "pcs.cache._grouphier", "jsonrows": "pcs.trace._jsonrows", "route": "pcs.fleet._route",
         "seqpol": "pcs.engine._seqpol"}

#: twin name -> what runs slower without it. benchmarks/bench_native.py on the Mooncake trace (2 cores):
#: curve 4.9x, sequential one-tier replay 5.1x, modeled two-tier replay 1.6x slower on the Python twins.
SLOWER = {"stackdist": "curves", "lruscan": "sequential one-tier replays",
          "lruhier": "replays on lru, fifo, slru, sieve, 2q, s3fifo, arc or lfu tiers",
          "stepsched": "default step-scheduler replays", "statscan": "pcs trace stats",
          "turns": "the next-turn search of step-scheduler replays", "prefill": "the prefill tables of modeled replays",
          "grouphier": "hybrid-model replays", "jsonrows": "Mooncake and Bailian JSONL reads",
          "route": "fleet routing with the prefix, cache-aware and least-loaded routers",
          "seqpol": "the sequential baseline of two fifo / slru tiers"}

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


def loaded(twin: str) -> ModuleType | None:
    """The compiled extension of ``twin`` when this process has imported it already (:func:`module`), else None;
    never imports it (for a caller that may run on a worker thread and only wants the twin if it is there).

    Raises:
        KeyError: unknown twin name (see :data:`TWINS`).
    """
    TWINS[twin]
    return _loaded.get(twin)


def built(twin: str) -> bool:
    """Whether the compiled extension of ``twin`` imports."""
    return module(twin) is not None


def missing() -> list[str]:
    """Names of the twins whose extension is not built (empty on a normal install)."""
    return [t for t in TWINS if not built(t)]


def missing_note() -> str | None:
    """One line saying which compiled twins are not built, what is slower and how to build them; None if all are.

    The CLI prints it once per run of a command that uses twins (not with
    ``--quiet``); ``setup.py`` prints the same advice when a build fails.
    """
    gone = missing()
    if not gone:
        return None
    return (f"compiled twins not built ({', '.join(TWINS[t] for t in gone)}): "
            f"{', '.join(SLOWER[t] for t in gone)} run on the Python twins, 1.5-5x slower; "
            "install a C compiler and the Python headers (Debian/Ubuntu: apt install build-essential python3-dev; "
            "macOS: xcode-select --install) and reinstall: pip install -e .")


def default_mode() -> str:
    """The switch's default: ``$PCS_NATIVE`` or ``auto``.

    Raises:
        UserError: ``PCS_NATIVE`` is set to something other than :data:`MODES`.
    """
    raw = os.environ.get("PCS_NATIVE", "auto")
    mode = raw.strip().lower() or "auto"
    if mode not in MODES:
        raise UserError(f"environment variable PCS_NATIVE={shown_repr(raw)} is not one of {', '.join(MODES)}: unset it or "
                        f"set one of those{close_tail(mode, MODES)}")
    return mode


def resolve(mode: str | None, twin: str, option: str = "native") -> str:
    """``"c"`` or ``"python"``: which implementation of ``twin`` runs under ``mode``.

    Args:
        mode: ``auto``, ``c``, ``python`` or None (= :func:`default_mode`).
        twin: a key of :data:`TWINS`.
        option: the caller's name for the switch, used in the error message.
    Raises:
        UserError: unknown mode, or ``c`` when the extension is not built.
    """
    mode = default_mode() if mode is None else mode
    if mode not in MODES:
        raise UnknownNameError(option, mode, MODES)
    if mode == "python":
        return "python"
    if built(twin):
        return "c"
    if mode == "c":
        raise UserError(f"{option} 'c': the compiled {TWINS[twin]} is not built (reinstall with `pip install -e .` and a "
                         "C compiler); valid: python")
    return "python"  # auto without the twin: the CLI says so once per run (missing_note), no Python warning
