"""A steady two-tier replay's calling thread runs no ``import`` statement in the engine functions it calls every
time (their imports are the modules' own, at load): on Python 3.11 each ``from <module> import name`` run inside a
function of a module that is not a package looks for the module's ``__path__`` and formats two AttributeErrors
before it finds none (~5,400 instructions), ~140 a call before (docs/performance.md, "The 1x call's imports and
its time series' steps"). Also: :func:`pcs.engine.series._steps` is ``np.diff(values, prepend=first)``."""
from __future__ import annotations

import dis
import sys

import numpy as np
import pytest

import pcs
from pcs.engine.series import _steps
from tests.helpers import SMALL_TRACE

_IMPORT_NAME = dis.opmap["IMPORT_NAME"]

#: The modules whose per-call functions this covers (each function's imports moved to the module's top, or its
#: module imported there and its names read at the call: a test that replaces a name patches that module).
#: pcs/engine/hybrid.py keeps its one (pcs.model.footprint, numpy): ``pcs replay --help`` loads that module, numpy-free
#: (tests/cli/test_import_hygiene.py); so does pcs/engine/select.py its ten.
_MODULES = ("pcs/engine/api.py", "pcs/engine/stepnative.py", "pcs/engine/loops.py", "pcs/engine/feed.py",
            "pcs/engine/placement.py", "pcs/engine/keptsetup.py", "pcs/engine/runparts.py", "pcs/engine/turns.py",
            "pcs/engine/chunks.py", "pcs/engine/timing.py", "pcs/engine/deployment.py",
            "pcs/engine/computecheck.py", "pcs/engine/apiobjects.py", "pcs/engine/schedresult.py",
            "pcs/engine/scanjoin.py", "pcs/cache/native.py", "pcs/cache/policies/__init__.py")

def _imports_run(call) -> list[tuple[str, str, str]]:
    """(file, function, module) of each IMPORT_NAME this thread executes in a function (not a module body) of
    :data:`_MODULES` during ``call()``."""
    seen = []

    def trace(frame, event, arg):
        code = frame.f_code
        if event == "call":
            if not code.co_filename.replace("\\", "/").endswith(_MODULES) or code.co_name == "<module>":
                return None
            frame.f_trace_opcodes = True
            return trace
        if event == "opcode" and code.co_code[frame.f_lasti] == _IMPORT_NAME:
            seen.append((code.co_filename, code.co_name, code.co_names[code.co_code[frame.f_lasti + 1]]))
        return trace

    sys.settrace(trace)
    try:
        call()
    finally:
        sys.settrace(None)
    return seen


@pytest.mark.parametrize("threads", ["auto", "off"])
def test_a_steady_replay_runs_no_import_in_the_engine_functions(monkeypatch, threads):
    monkeypatch.setenv("PCS_THREADS", threads)

    def call():
        return pcs.replay(str(SMALL_TRACE), tiers=["gpu=64blocks", "cpu=256blocks"], policy="lru")

    first = call()                     # loads what a first call loads
    seen = _imports_run(call)
    assert seen == []
    assert first.summary.engine == "compiled-step"     # the loop whose set-up and close these functions are


@pytest.mark.parametrize("values, first", [
    (np.array([], dtype=np.int64), 0),
    (np.array([7], dtype=np.int64), 7),
    (np.array([3, 3, 10, 2**62, 2**62], dtype=np.int64), 3),
    (np.array([], dtype=np.float64), 0.0),
    (np.array([-0.0], dtype=np.float64), 0.0),
    (np.array([1.5, np.inf, np.inf, np.nan, -0.0, 2.0, 1e300, -1e300], dtype=np.float64), 0.0),
])
def test_steps_are_numpys_diff_with_the_first_prepended(values, first):
    # by hand: [3, 3, 10, 2^62, 2^62] with 3 first -> 0, 0, 7, 2^62 - 10, 0
    with np.errstate(invalid="ignore"):     # inf - inf: NaN either way
        got = _steps(values, first)
        want = np.diff(values, prepend=np.asarray([first], dtype=values.dtype))
    assert got.dtype == values.dtype and got.shape == values.shape
    assert got.tobytes() == want.tobytes()
    if len(values) == 5:
        assert got.tolist() == [0, 0, 7, 2**62 - 10, 0]
