"""A long value in the common command-line refusals is cut once by pcs.errors.quoted and the refusal names the
option (mend45c, item 2: a 5,000-character value was echoed whole, up to three times, 15 KB; --model and a trace
path printed it then ': File name too long' with no option). The counts are the values' lengths, worked out
from how each value is built below (5,000 x's plus the characters around them)."""
from __future__ import annotations

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke

X = "x" * 5000
_REPLAY = ("replay", SMALL_TRACE, "--tier", "gpu=auto", "--tier", "cpu=1GB")


@pytest.mark.parametrize("args,needles", [
    # 1 + 5,000: the tier's size, then the size parser's own words (its unit: the 5,000 x's)
    (("--tier", f"gpu=1{X}"), ["bad tier size '1xxx", "(5,001 characters) for tier 'gpu'", "(5,000 characters)"]),
    (("--tier", f"gpu={X}GB"), ["bad tier size 'xxx", "(5,002 characters)"]),
    # 'lru:' + 5,000: the spec as --policy gave it, then the option refused
    (("--policy", f"lru:{X}"), ["--policy lru:xxx", "(5,004 characters)", "eviction policy 'lru' takes no options, got 'xxx"]),
    (("--policy", f"lfu:aging={X}"), ["--policy lfu:aging=xxx", "(5,010 characters)", "lfu aging must be one of"]),
    (("--tier-policy", f"cpu=lru:{X}"), ["--tier-policy cpu=lru:xxx", "(5,004 characters)"]),
    (("--link", f"cpu={X}"), ["--link cpu=xxx", "(5,000 characters): neither a preset"]),
    (("--admit", f"cpu=reuse:{X}"), ["--admit cpu=reuse:xxx", "(5,010 characters)", "got 'xxx"]),
    (("--gpu", X), ["unknown GPU 'xxx", "(5,000 characters)"]),
    # --model: 5,000 + '.json' names a file, too long a name for the system
    (("--model", X + ".json"), ["--model xxx", "(5,005 characters): File name too long"]),
])
def test_a_long_replay_value_is_cut_once_and_named(args, needles):
    line = assert_one_line_error(invoke(*_REPLAY, *args), *needles)
    assert len(line) < 600, len(line)


def test_a_long_model_config_path_is_cut_and_named():
    line = assert_one_line_error(invoke("footprint", "--model-config", X, "--tokens", "5"),
                                 "--model-config xxx", "(5,000 characters): File name too long")
    assert len(line) < 400, len(line)


def test_a_long_trace_path_is_cut_and_named():
    line = assert_one_line_error(invoke("replay", X + ".jsonl"), "TRACE xxx", "(5,006 characters): File name too long")
    assert len(line) < 400, len(line)


def test_envelope_and_budget_values_are_cut_and_named():
    line = assert_one_line_error(invoke("envelope", "--restore-bytes", "1GB", "--full-prefill", "1" + X,
                                        "--remaining-compute", "30ms", "--overhead", "5ms", "--bandwidth", "10GB/s"),
                                 "--full-prefill '1xxx", "(5,001 characters): invalid duration")
    assert len(line) < 800, len(line)
    # 'A:30GB:' + 5,000 = 5,007: the workload as --workload gave it, then the bandwidth parser's words
    line = assert_one_line_error(invoke("budget", "--workload", f"A:30GB:{X}", "--capacity-have", "80GB",
                                        "--bandwidth-have", "3TB/s"),
                                 "--workload 'A:30GB:xxx", "(5,007 characters): invalid bandwidth 'xxx",
                                 "(5,000 characters)")
    assert len(line) < 400, len(line)
