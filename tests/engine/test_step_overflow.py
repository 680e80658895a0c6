"""Huge output lengths under the step scheduler: the compiled loop (pcs/engine/_stepsched.c) must refuse exactly
as the Python reference does, never wrap its 64-bit step arithmetic (a decode of k steps sums j over k steps:
k * k > 2**63 for k > 3.04e9, which wrapped to negative times and indexed its busy bins out of bounds)."""
import pytest

import pcs

TIERS = ["gpu=8blocks", "cpu=16blocks"]


def _rows(tmp_path, output_length):
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]}\n'
                 f'{{"timestamp": 5, "input_length": 512, "output_length": {output_length}, "hash_ids": [9]}}\n')
    return str(p)


def _error(path, **kw):
    with pytest.raises(ValueError) as e:
        pcs.replay(path, tiers=TIERS, **kw)
    return str(e.value)


@pytest.mark.parametrize("output_length", [4294531200, 2**32 - 1, 10**11, 2**62 - 1])
@pytest.mark.parametrize("model", [None, "gpt-oss-120b"])
def test_compiled_loop_refuses_as_the_reference(tmp_path, output_length, model):
    # 4294531200 decode steps: (0 + k - 1) * k = 1.84e19 > 2**63 - 1 = 9.22e18, the case that wrapped. At any
    # step time of at least ~1 ms such a decode lasts > 4e6 s... and 1e11 tokens far past the 366-day span limit:
    # both loops must stop with the same span error (the same time, so the same float sums).
    kw = {"model": model} if model else {}
    path = _rows(tmp_path, output_length)
    ref = _error(path, engine="hybrid" if model else "reference", **kw)
    fast = _error(path, **kw)
    assert "ran past 366 days (31,622,400 s)" in ref and fast == ref


@pytest.mark.parametrize("output_length", [2**62, 2**63 - 1])
def test_output_lengths_from_2_62_are_refused_by_both_loops(tmp_path, output_length):
    # requests in memory meet the scheduler's own check (a trace file's reader refuses the row first, naming its
    # line: tests/trace/test_row_limits.py)
    path = _rows(tmp_path, output_length)
    reqs = list(pcs.open_trace(path))
    msg = f"an output length of {output_length:,} tokens is past what the step scheduler models (2**62)"
    assert msg in _error(reqs) and msg in _error(reqs, engine="reference")
    at_read = f"t.jsonl:2: field 'output_length': {output_length:,} tokens is past what the step scheduler models"
    assert at_read in _error(path) and at_read in _error(path, engine="reference")
    assert pcs.replay(path, tiers=TIERS, compute_mode="infinite").summary.requests == 2    # no step scheduler: runs
