"""Messages that name the cause and the option the user wrote (hostile-input findings F11.3-F11.6, F4):

- a sweep point relays an API error in the plan's words (``engine = "auto"``, ``max-num-seqs``);
- ``--tier-policy NAME=...`` reaches a fleet's shared tier (docs/semantics.md §17.1: "its policy is the run's
  ``--policy`` (or ``--tier-policy NAME=...``)");
- an ``--admit`` argument refused by its kind names the option and the value given;
- the step scheduler's 366-day limit names a slow GPU when the GPU computes most of the run, the trace's
  timestamps when it does not (both engines alike);
- a default derived from the GPU's rates that is not finite names those rates, not the option left unset.
"""
from __future__ import annotations

import json

import pytest

from helpers import ROOT, SMALL_TRACE, assert_one_line_error, invoke, invoke_json

SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
TIERS = ("--tier", "gpu=40blocks", "--tier", "cpu=150blocks")


def _head(tmp_path, n: int):
    """The first ``n`` rows of traces/sample_chat.jsonl as a file."""
    path = tmp_path / f"head{n}.jsonl"
    path.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:n]))
    return path


def test_a_sweep_point_error_uses_the_plans_words(tmp_path):
    """lru-scan runs one LRU tier only; with two tiers the point fails. ``pcs replay`` says "use --engine
    auto"; the plan spells options without dashes and values as TOML, so the point says ``engine = "auto"``."""
    plan = tmp_path / "p.toml"
    plan.write_text(f'kind = "replay"\n[fixed]\ntrace = "{SMALL_TRACE}"\ntiming = "sequential"\n'
                    'tier = {gpu = "40blocks", cpu = "100blocks"}\n[axes]\nengine = ["lru-scan", "reference"]\n')
    out = invoke("sweep", plan, "-o", tmp_path / "out", "--jobs", "1", "-q")
    assert out.exit_code == 2, out.output
    # the plan's line 7, where engine's value 'lru-scan' is written (the value the message quotes)
    errs = [ln for ln in out.stderr.splitlines() if ln.startswith(f"pcs: error: {plan}:7: point ")]
    assert len(errs) == 1 and "engine 'lru-scan' cannot run this replay" in errs[0], out.stderr
    assert errs[0].endswith('use engine = "auto"') and "engine='auto'" not in errs[0], errs[0]
    cli = invoke("replay", SMALL_TRACE, "--timing", "sequential", "--tier", "gpu=40blocks", "--tier",
                 "cpu=100blocks", "--engine", "lru-scan", "-q")
    assert_one_line_error(cli, "use --engine auto")


@pytest.mark.parametrize("api,cli,plan", [
    ("max_num_seqs must be an integer >= 1", "--max-num-seqs must be", "max-num-seqs must be"),
    ("restore_timeout_per_token_s must be finite", "--restore-timeout-per-token must",
     "restore-timeout-per-token must"),
    ("use compute_mode='infinite' here", "use --compute infinite here", 'use compute = "infinite" here'),
    ("native 'c' asks for compiled code", "--native c asks", 'native = "c" asks'),
    ("use engine='auto'", "use --engine auto", 'use engine = "auto"'),
])
def test_plan_wording_of_api_names(api, cli, plan):
    """The API's keyword names become the command line's options, or with ``plan`` the plan's option names
    (docs/sweep.md "Options": the long option without its dashes, the value as TOML writes it)."""
    from pcs.cli.common import option_names

    assert cli in option_names(api)
    assert plan in option_names(api, plan=True)


def test_a_tier_policy_reaches_the_shared_tier():
    """``--tier-policy remote=fifo`` with ``--shared-tier remote=...`` is the same configuration as
    ``--policy fifo`` with the private tiers set back to lru by ``--tier-policy``: every number equal, and the
    shared tier reports fifo (before: "names tier 'remote', which is not among the tiers: gpu, cpu")."""
    fleet = ("--instances", "2", "--shared-tier", "remote=100blocks", *TIERS)
    a = invoke_json("replay", SMALL_TRACE, *fleet, "--tier-policy", "remote=fifo")
    b = invoke_json("replay", SMALL_TRACE, *fleet, "--policy", "fifo", "--tier-policy", "gpu=lru",
                    "--tier-policy", "cpu=lru")
    assert a["shared_tier"]["policy"] == "fifo"
    assert a.pop("replay_command") != b.pop("replay_command")     # each run's own command line; the rest equal
    assert a == b
    # a tier that is nowhere: the list of tiers names the shared one too
    assert_one_line_error(invoke("replay", SMALL_TRACE, *fleet, "--tier-policy", "disk=fifo", "-q"),
                          "--tier-policy disk=fifo: names tier 'disk', which is not among the tiers: gpu, cpu, remote")


@pytest.mark.parametrize("value,says", [
    ("cpu=reuse:0", "--admit cpu=reuse:0: admission reuse: N must be an int >= 1, got 0"),
    ("cpu=selective:k=-1", "--admit cpu=selective:k=-1: admission selective: K must be an int >= 1, got -1"),
    ("cpu=reuse:m=3", "--admit cpu=reuse:m=3: admission 'reuse' takes no option 'm'"),
])
def test_an_admit_argument_error_names_the_option(value, says):
    assert_one_line_error(invoke("replay", SMALL_TRACE, *TIERS, "--admit", value, "-q"), says)


def test_the_span_message_names_the_cause():
    """By hand: a run 4e7 s long (past 366 days = 366 x 86,400 = 31,622,400 s) with the GPU busy 3.6e7 s of it
    (3.6e7 / 4e7 = 90 %) is the GPU's doing; 1e9 s with 10 s busy is the trace's (its arrivals lie that far
    apart). The limit reads in days and seconds with its reason (31,622,400 / 3,600 = 8,784 hourly bins); the
    run's own time is not printed to 4 digits (3.162e+07 s would read as below 31,622,400 s)."""
    from pcs.engine.schedstats import span_message

    gpu = span_message(4e7, 3.6e7)
    assert gpu.startswith("the step scheduler's clock ran past 366 days (31,622,400 s) after the first arrival, "
                          "the longest run it models (its utilisation series keeps at most 8,784 hourly bins): ")
    assert "the GPU was busy for 90 % of that time" in gpu and "bf16_flops" in gpu and "timestamps" not in gpu
    trace = span_message(1e9, 10.0)
    assert "check the trace's timestamps" in trace and "GPU was busy" not in trace and "e+" not in trace


def test_the_compiled_span_error_is_worded_by_the_reference():
    """The C loop's own words (pcs/engine/_stepsched.c add_busy, values "%.4g") become span_message's line."""
    from pcs.engine.schedstats import span_message
    from pcs.engine.stepnative import span_limit
    from pcs.errors import UserError

    c_text = ("the step scheduler's run reaches 4e+07 s after the first arrival, past its limit of 31,622,400 s "
              "(366 days): the GPU computes for 3.6e+07 s of it, so its steps are that slow: check ...")
    with pytest.raises(UserError) as got, span_limit():
        raise ValueError(c_text)
    assert str(got.value) == span_message(4e7, 3.6e7)
    with pytest.raises(UserError) as got, span_limit():
        raise ValueError("the step scheduler's run reaches 1e+09 s after the first arrival, past its limit of "
                         "31,622,400 s (366 days): check the trace's timestamps ...")
    assert str(got.value) == span_message(1e9, 0.0)
    with pytest.raises(ValueError, match="other"), span_limit():
        raise ValueError("other")


@pytest.mark.parametrize("engine", ["auto", "reference"])
def test_a_slow_gpu_past_the_366_day_limit_is_named(tmp_path, engine):
    """bf16_flops = 1e9 FLOP/s (the hardware file's floor) with the default llama-2-70b on 8 GPUs: one
    prompt token's matmuls take about 2 x 70e9 / 8 / (1e9 x MFU 0.5) = 35 s per GPU, and the first 200 rows of
    the sample hold 2.54 M prompt tokens over 82 s of arrivals, so the GPU computes far past 366 days
    (31,622,400 s) with no idle time to speak of: both engines name the GPU's rates."""
    hw = tmp_path / "hw.toml"
    hw.write_text("[gpu.h100-sxm]\nbf16_flops = 1e9\n")
    out = invoke("replay", _head(tmp_path, 200), *TIERS, "--hardware-file", hw, "--engine", engine, "-q")
    assert_one_line_error(out, "ran past 366 days (31,622,400 s) after the first arrival, the longest run it models",
                          "the GPU was busy for ",
                          "check the GPU's rates (bf16_flops, hbm_bps in --hardware-file)")


def test_a_far_timestamp_still_names_the_trace(tmp_path):
    """Two requests 1e12 ms (1e9 s) apart, 1024 tokens each: the GPU computes well under a second; the limit is
    passed by the gap, so the message names the trace's timestamps, on both engines."""
    trace = tmp_path / "far.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": t, "input_length": 1024, "output_length": 5,
                                         "hash_ids": [1, 2]}) + "\n" for t in (0, 10 ** 12)))
    for engine in ("auto", "reference"):
        out = invoke("replay", trace, *TIERS, "--engine", engine, "-q")
        assert_one_line_error(out, "check the trace's timestamps")
        assert "GPU was busy" not in out.output


def test_an_infinite_default_timeout_names_the_gpu_rates():
    """``restore_timeout_per_token_s`` unset takes the GPU's time per token; when that is not finite (rates too
    small for the model), the error names the rates, with the option only as what the value is the default of."""
    from pcs.engine.schedconfig import SchedulerConfig
    from pcs.errors import UserError

    with pytest.raises(UserError, match=r"^the GPU's time per token is inf s \(the default of "
                                        r"restore_timeout_per_token_s\): the GPU's rates"):
        SchedulerConfig().resolved(None, float("inf"), False)
    from pcs.hardware import get_gpu

    given = SchedulerConfig(restore_timeout_per_token_s=0.5).resolved(get_gpu("h100-sxm"), float("inf"), False)
    assert given.restore_timeout_per_token_s == 0.5      # given: the GPU's time per token is not read
