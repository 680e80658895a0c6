"""Every duration option takes one type (``pcs.cli.params.Duration``, docs/semantics.md §16): a unit, and a plain
number only where the option's name carries the unit (``--router-stale-s``, ``trace synth --think-s``: seconds);
``--ttft-slo 500`` (500 ms or 500 s?) is refused as the envelope's ``--full-prefill 100`` is. ``60s`` = ``1min``
= 60 s and ``0.005s`` = ``5ms`` by definition of the units (1 min = 60 s, 1 ms = 1e-3 s), so each pair must give
the same value and the same output.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import invoke, invoke_json

ROOT = Path(__file__).resolve().parents[2]
TOKENS = str(ROOT / "traces" / "sample_tokens.jsonl")
CHAT = str(ROOT / "traces" / "sample_chat.jsonl")
STEP = ("--tier", "gpu=20blocks", "--tier", "cpu=60blocks")
BEST = STEP + ("--restore-policy", "best-effort")
FLEET = ("--instances", "2", "--router", "prefix")

#: option, two spellings, the JSON path where the run reports it, the seconds worked out by hand, other args
CASES = [
    ("--ttft-slo", "2s", "2000ms", ("scheduler", "ttft_slo_s"), 2.0, STEP),
    ("--restore-timeout", "0.005s", "5ms", ("scheduler", "restore_timeout_s"), 0.005, BEST),
    ("--restore-timeout-per-token", "0.000035s", "35us", ("scheduler", "restore_timeout_per_token_s"), 3.5e-05,
     BEST),
    ("--router-stale-s", "0.5", "500ms", ("router_stale_s",), 0.5, FLEET),
]
#: the duration options whose name carries no unit: a plain number other than 0 is refused (option, other args)
UNIT_REQUIRED = [("--ttft-slo", STEP), ("--restore-timeout", BEST), ("--restore-timeout-per-token", BEST),
                 ("--residency-step", ("--model", "gemma-3-27b", "--tier", "gpu=40GB"))]


def _json(*args):
    return invoke_json("replay", TOKENS, *args)


@pytest.mark.parametrize("option,first,second,path,seconds,extra", CASES, ids=[c[0] for c in CASES])
def test_two_spellings_of_one_duration_give_one_run(option, first, second, path, seconds, extra):
    a, b = _json(*extra, option, first), _json(*extra, option, second)
    got = a
    for key in path:
        got = got[key]
    assert got == pytest.approx(seconds, rel=1e-12)
    assert a == b


@pytest.mark.parametrize("option,extra", UNIT_REQUIRED, ids=[o for o, _ in UNIT_REQUIRED])
def test_a_plain_number_is_refused_where_the_name_carries_no_unit(option, extra):
    # 500 could be 500 ms or 500 s: one line naming the option and the two spellings that work, exit 2
    r = invoke("replay", TOKENS, *extra, option, "500")
    assert r.exit_code == 2
    assert f"'{option}': '500' has no unit: give a unit: 500ms or 500s" in r.output
    assert "Traceback" not in r.output


def test_router_stale_s_is_seconds_as_its_name_says():
    # the name carries the unit (as a hardware file's setup_s): 2 = 2 s = 2000 ms
    a, b = _json(*FLEET, "--router-stale-s", "2"), _json(*FLEET, "--router-stale-s", "2000ms")
    assert a["router_stale_s"] == 2.0
    assert a == b


def test_residency_step_takes_units():
    # 60s = 1min (the hybrid residency series' step)
    outs = [invoke("replay", CHAT, "-q", "--format", "json", "--model", "gemma-3-27b", "--tier", "gpu=40GB",
                   "--residency-step", v) for v in ("60s", "1min")]
    assert [r.exit_code for r in outs] == [0, 0], outs[0].output
    assert json.loads(outs[0].stdout) == json.loads(outs[1].stdout)


def test_think_s_takes_units(tmp_path):
    # trace synth --think-s: 150 = 150s = 2.5min (its name carries the unit); same seed, same bytes
    files = []
    for i, v in enumerate(("150", "150s", "2.5min")):
        out = tmp_path / f"t{i}.jsonl"
        r = invoke("trace", "synth", str(out), "--requests", "50", "--seed", "3", "--think-s", v)
        assert r.exit_code == 0, r.output
        files.append(out.read_bytes())
    assert files[0] == files[1] == files[2]


@pytest.mark.parametrize("option", ["--ttft-slo", "--restore-timeout", "--residency-step", "--router-stale-s"])
@pytest.mark.parametrize("value", ["5parsecs", "-1s", "nan", "２s"])
def test_a_bad_duration_is_one_line_naming_the_option(option, value):
    r = invoke("replay", TOKENS, option, value)
    assert r.exit_code == 2
    assert option in r.output and "Traceback" not in r.output


def test_full_width_digits_are_refused_in_tier_sizes():
    # Python's int() reads '２００' as 200; pcs takes ASCII digits only (docs/semantics.md §16)
    r = invoke("replay", TOKENS, "--tier", "gpu=２００blocks")
    assert r.exit_code == 2
    assert "digits must be ASCII 0-9, not '２' (U+FF12)" in r.output


@pytest.mark.parametrize("value", ["0", "0ms", "1e-300s"])
def test_a_zero_ttft_slo_is_refused_by_the_duration_type(value):
    # --ttft-slo is Duration(0, 1e9, min_open=True): 0 s, and 1e-300 s (below 1 ns, rounds to 0), are refused
    # by the one type while the command line is parsed, with no second parse in the replay command
    r = invoke("replay", TOKENS, "--ttft-slo", value)
    assert r.exit_code == 2
    assert "--ttft-slo" in r.output and "Traceback" not in r.output


def test_the_scheduler_config_takes_the_parsed_seconds():
    # the click type already turned "250ms" into 0.25 s (1 ms = 1e-3 s) and "35us" into 3.5e-05 s
    from pcs.cli.replay import _scheduler_config

    kw = {"max_num_batched_tokens": None, "max_num_seqs": None, "restore_policy": "best-effort",
          "restore_timeout": 0.25, "restore_timeout_per_token": 3.5e-05, "restore_fallback": True,
          "cache_decode_blocks": None, "max_preemptions": 3, "ttft_slo": 2.0, "cache_blocks_at": "prefill-done"}
    cfg = _scheduler_config(kw)
    assert (cfg.restore_timeout_s, cfg.restore_timeout_per_token_s, cfg.ttft_slo_s) == (0.25, 3.5e-05, 2.0)
