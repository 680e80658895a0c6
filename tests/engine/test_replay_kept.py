"""The default compute model and its step cost are kept for the next replay in the process (pcs.engine.api):
equal inputs get the same (frozen) objects, an input that cannot be hashed gets its own, and a second replay
prints what the first did."""
from __future__ import annotations

import json
from pathlib import Path

TRACE = Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl"


def test_compute_model_kept_for_equal_inputs():
    from pcs.engine.api import _compute_model, _kept_step_cost
    from pcs.hardware import get_gpu
    from pcs.model import get_model

    gpu = get_gpu("h100-sxm")
    a = _compute_model(get_model("llama-2-70b").with_tp(8), gpu, 8, 512)
    b = _compute_model(get_model("llama-2-70b").with_tp(8), gpu, 8, 512)   # an equal spec, a new object
    assert a is b
    assert _compute_model(get_model("llama-2-70b").with_tp(8), gpu, 8, 256) is not a   # another block size
    assert _kept_step_cost(a) is _kept_step_cost(b) and _kept_step_cost(a) == a.step_cost()


def test_unhashable_spec_gets_its_own_model():
    from pcs.engine.api import _compute_model
    from pcs.hardware import get_gpu
    from pcs.model import get_model

    spec = get_model("llama-2-70b").with_tp(8)

    class Unhashable:        # a caller's own model object: every attribute of the spec, no hash
        __hash__ = None

        def __getattr__(self, name):
            return getattr(spec, name)

    gpu = get_gpu("h100-sxm")
    mine = _compute_model(Unhashable(), gpu, 8, 512)
    assert mine is not _compute_model(spec, gpu, 8, 512)


def test_second_replay_prints_the_same():
    import pcs

    kw = dict(tiers=["gpu=2000blocks", "cpu=8000blocks"], policy="lru")
    first = json.dumps(pcs.replay(str(TRACE), **kw).summary.to_dict(), sort_keys=True)
    assert json.dumps(pcs.replay(str(TRACE), **kw).summary.to_dict(), sort_keys=True) == first
