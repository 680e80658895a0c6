"""Refusals that did not name the option where their siblings did, and the small wording findings of a new
user (mend45c, items 3 and 4). Each expectation is worked out from the rule the message follows, not copied:
the option as typed leads; a long name's look-alikes by difflib (pcs.choices.CLOSE_CUTOFF 0.6); footprint's
blocks from T = 131,072 tokens, B = 16: floor(T/B) = 8,192 a sequence."""
from __future__ import annotations

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke

_REPLAY = ("replay", SMALL_TRACE, "--tier", "gpu=auto", "--tier", "cpu=1GB")


@pytest.mark.parametrize("args,start", [
    (("--policy", "s3fifo:small_share=2"), "pcs: error: --policy s3fifo:small_share=2: s3fifo small_share must be"),
    (("--tier-policy", "cpu=s3fifo:small_share=2"),
     "pcs: error: --tier-policy cpu=s3fifo:small_share=2: s3fifo small_share must be"),
    (("--policy", "lfu:aging=dynamc"), "pcs: error: --policy lfu:aging=dynamc: lfu aging must be one of dynamic, none"),
    # an empty --model-config is named as typed (it said --model '')
    (("--model-config", ""), "pcs: error: --model-config '': empty"),
])
def test_a_replay_refusal_names_the_option_as_typed(args, start):
    line = assert_one_line_error(invoke(*_REPLAY, *args))
    assert line.startswith(start), line


def test_a_model_folder_without_config_names_the_option(tmp_path):
    folder = tmp_path / "dir"
    folder.mkdir()
    assert_one_line_error(invoke(*_REPLAY, "--model-config", folder),
                          f"--model-config {folder / 'config.json'}: No such file or directory")


def test_budget_names_the_workload_option_and_value():
    line = assert_one_line_error(invoke("budget", "--workload", "A:30GB:10GBs", "--capacity-have", "80GB",
                                        "--bandwidth-have", "3TB/s"))
    assert line.startswith("pcs: error: --workload 'A:30GB:10GBs': invalid bandwidth '10GBs': unit must end in /s")


@pytest.mark.parametrize("args,option", [(("--admit", "cpux=reuse:2"), "--admit"),
                                         (("--tier-policy", "cpux=lru"), "--tier-policy"),
                                         (("--link", "cpux=25GB/s"), "--link")])
def test_a_mistyped_tier_name_gets_a_did_you_mean_as_tier_does(args, option):
    # cpux against cpu: 2 x 3 / (4 + 3) = 0.86, above 0.6; against gpu: 2 x 2 / 7 = 0.57, below
    assert_one_line_error(invoke(*_REPLAY, *args),
                          f"{option} {args[1]}: names tier 'cpux', which is not among the tiers: gpu, cpu; did you "
                          "mean 'cpu'?")


def test_a_size_value_suggests_the_size_field_first(tmp_path):
    hw = tmp_path / "hw.toml"
    hw.write_text('[gpu.mine]\nhbm = "80GB"\n')
    # 80GB is a size: hbm_bytes (named hbm_..., a size field) before hbm_bps (difflib 2 x 3 / 10 = 0.6)
    assert_one_line_error(invoke(*_REPLAY, "--hardware-file", hw),
                          "unknown GPUSpec field 'hbm'; did you mean one of: 'hbm_bytes', 'hbm_bps'?")
    hw.write_text('[gpu.mine]\nhbm = "3TB/s"\n')       # a bandwidth: hbm_bps alone (hbm_bytes takes no bandwidth)
    assert_one_line_error(invoke(*_REPLAY, "--hardware-file", hw), "unknown GPUSpec field 'hbm'; did you mean 'hbm_bps'?")


def _notes(*args) -> list[str]:
    r = invoke("footprint", "--model", "llama-3.1-70b", "--tokens", "131072", *args)
    assert r.exit_code == 0, r.output
    return [ln for ln in r.output.splitlines() if ln.startswith("note:")]


def test_footprint_words_n_sequences_blocks_right():
    notes = _notes("--sequences", "4")
    assert any("Prefix store: 4 x floor(T/B) = 4 x 8,192 = 32,768 full blocks x" in n for n in notes), notes
    assert any("Prefix store: floor(T/B) = 8,192 full blocks x" in n for n in _notes())


@pytest.mark.parametrize("args,said", [
    (("--tp", "8"), "pcs replay's default differs (the trace's block size: 512 for the bundled sample and "
                    "Mooncake): give --block-size 512 to set"),
    (("--block-size", "512"), "pcs replay's default differs (TP 8): give --tp 8 to set"),
    ((), "pcs replay's defaults differ (TP 8, the trace's block size: 512 for the bundled sample and Mooncake): "
         "give --block-size 512 --tp 8 to set"),
])
def test_footprint_says_only_which_replay_default_differs(args, said):
    assert any(said in n for n in _notes(*args)), _notes(*args)


def test_footprint_at_replay_defaults_says_none_differ():
    assert not any("differ" in n for n in _notes("--tp", "8", "--block-size", "512"))


@pytest.mark.parametrize("args,said", [
    (("--admit", "cpu=reuse:m=2"), "admission 'reuse' takes no option 'm'; its options: n="),
    (("--instances", "2", "--router", "random:k=3"), "not of random; its options: seed="),
    (("--policy", "lru:k=3"), "eviction policy 'lru' takes no options, got 'k'"),       # said once (mend46e)
])
def test_one_wording_for_the_options_a_name_takes(args, said):
    assert_one_line_error(invoke(*_REPLAY, *args), said)


def test_a_folder_as_the_trace_is_named_trace_as_the_empty_one(tmp_path):
    assert_one_line_error(invoke("replay", tmp_path), f"TRACE {tmp_path}: Is a directory")   # the readers' wording (mend46e)
    assert_one_line_error(invoke("replay", ""), "TRACE ''")
    assert "[TRACE]" not in invoke("replay", tmp_path).stderr
