"""``pcs replay`` / ``pcs compare`` with the step scheduler's options, as a user meets them."""
from __future__ import annotations

import json

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke


def _json(*args):
    r = invoke("replay", SMALL_TRACE, "--quiet", "--format", "json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_step_is_the_default_and_infinite_the_old_model():
    step, inf = _json(), _json("--compute", "infinite")
    assert step["compute"] == "step" and inf["compute"] == "infinite"
    assert "scheduler" in step and "scheduler" not in inf
    s = step["scheduler"]
    assert (s["max_num_batched_tokens"], s["max_num_seqs"], s["restore_policy"]) == (8192, 1024, "layerwise")
    assert 0 < s["with_cache"]["utilisation"] <= 1 and s["no_cache"]["ttft_s"]["p50"] is not None
    # sequential timing has no compute mode: the flag changes nothing
    assert _json("--timing", "sequential") == _json("--timing", "sequential", "--compute", "infinite")


def test_options_reach_the_summary():
    s = _json("--max-num-batched-tokens", "2048", "--max-num-seqs", "64", "--restore-policy", "best-effort",
              "--restore-timeout", "5ms", "--restore-timeout-per-token", "20us", "--no-restore-fallback",
              "--no-cache-decode-blocks", "--max-preemptions", "2", "--ttft-slo", "1.5s")["scheduler"]
    assert (s["max_num_batched_tokens"], s["max_num_seqs"], s["restore_policy"]) == (2048, 64, "best-effort")
    assert s["restore_timeout_s"] == pytest.approx(0.005) and s["restore_timeout_per_token_s"] == pytest.approx(2e-5)
    assert (s["restore_fallback"], s["cache_decode_blocks"], s["max_preemptions"]) == (False, False, 2)
    assert s["ttft_slo_s"] == 1.5 and "goodput_rps" in s["with_cache"] and "slo_met" in s["no_cache"]


@pytest.mark.parametrize("args, needles", [
    (["--ttft-slo", "fast"], ["--ttft-slo", "fast"]),
    (["--restore-timeout", "-1s"], ["--restore-timeout"]),
    (["--max-num-batched-tokens", "16", "--max-num-seqs", "32"], ["max_num_batched_tokens (16)", "max_num_seqs (32)"]),
    (["--compute", "warp"], ["--compute"]),
])
def test_bad_options(args, needles):
    assert_one_line_error(invoke("replay", SMALL_TRACE, "--quiet", *args), *needles)


def test_compare_takes_the_options():
    r = invoke("compare", SMALL_TRACE, "--quiet", "--format", "json", "--policy", "lru", "--policy", "fifo",
               "--compute", "infinite")
    assert r.exit_code == 0, r.output
    r = invoke("compare", SMALL_TRACE, "--quiet", "--format", "json", "--policy", "lru", "--restore-policy", "wait")
    assert r.exit_code == 0, r.output
