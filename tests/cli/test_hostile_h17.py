"""Hostile input, round 17: one configuration in two spellings, traces named by result files,
per-rank figures, round trips of written traces, 0/0 ratios.

The rule for duplicates: one configuration given twice in two spellings is refused with one line naming both
(exit 2), as ``docs/sweep.md`` "Axes" promises for sweep axes -- never run twice or merged silently.
"""
import pytest

import pcs
from helpers import SMALL_TRACE, assert_one_line_error, invoke
from pcs.errors import UserError
from pcs.sweep.axes import expand_axis

T = SMALL_TRACE
SEQ = ("--timing", "sequential")


# --- F5: one configuration in two spellings ------------------------------------------------------------------------

@pytest.mark.parametrize("axis, values, words", [
    ("policy", ["lru", "LRU"], "'LRU' and 'lru' are the same policy"),           # policy names are case-insensitive
    ("policy", ["slru", "protected"], "'protected' and 'slru' are the same policy"),    # an alias
    ("policy", ["slru", "slru:protected_share=0.8"], "are the same policy"),   # 0.8 is slru's default share
    ("tier-policy.cpu", ["fifo", " FIFO"], "are the same policy"),
])
def test_sweep_policy_axis_refuses_one_policy_in_two_spellings(axis, values, words):
    with pytest.raises(UserError, match=words):
        expand_axis(axis, values)


def test_sweep_policy_axis_keeps_two_configurations():
    # two shares are two configurations; lru and fifo two policies
    assert expand_axis("policy", ["slru:protected_share=0.2", "slru:protected_share=0.8"]) == [
        "slru:protected_share=0.2", "slru:protected_share=0.8"]
    assert expand_axis("policy", ["lru", "fifo"]) == ["lru", "fifo"]


def test_compare_refuses_one_tier_list_in_two_units():
    # 200 GB = 200,000 MB = 2e11 bytes: one tier list, written twice
    r = invoke("compare", T, *SEQ, "--tiers", "gpu=200GB", "--tiers", "GPU=200000MB", "-q")
    assert_one_line_error(r, "tier lists gpu=200GB and GPU=200000MB are the same tiers at the same sizes")


def test_compare_refuses_blocks_and_the_bytes_that_make_them():
    # llama-2-70b fp16 at 512-token blocks: 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per token,
    # x 512 = 167,772,160 B per block; 200 GB / 167,772,160 B = 1192.09 -> 1,192 blocks (whole blocks)
    r = invoke("compare", T, *SEQ, "--model", "llama-2-70b", "--tiers", "gpu=1192blocks", "--tiers", "gpu=200GB",
               "-q")
    assert_one_line_error(r, "tier lists gpu=1192blocks and gpu=200GB come to the same tiers (gpu=1192blocks)")


def test_compare_api_refuses_one_tier_list_twice():
    with pytest.raises(UserError, match="are the same tiers at the same sizes"):
        pcs.compare(T, tier_sets=[["gpu=1TB"], ["gpu=1000GB"]], timing="sequential")


def test_compare_runs_two_different_tier_lists():
    out = pcs.compare(T, tier_sets=[["gpu=10blocks"], ["gpu=20blocks"]], timing="sequential")
    assert [v.tiers for v in out.variants] == ["gpu=10blocks", "gpu=20blocks"]


# --- F11: curve capacities ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("caps, model, words", [
    ("1000blocks,5000blocks,1000blocks", (), "'1000blocks' is listed twice"),
    # 200 GB at llama-2-70b's 167,772,160 B per block = 1,192 whole blocks (as above)
    ("1192blocks,200GB", ("--model", "llama-2-70b"), "'200GB' and '1192blocks' are both 1192 blocks"),
])
def test_curve_refuses_one_capacity_twice(caps, model, words):
    assert_one_line_error(invoke("curve", T, "--capacities", caps, *model, "-q"), words)


def test_compare_curve_capacities_refuse_one_capacity_twice():
    r = invoke("compare", T, *SEQ, "--tier", "gpu=10blocks", "--curve-capacities", "5blocks,5blocks", "-q")
    assert_one_line_error(r, "--curve-capacities: '5blocks' is listed twice")


# --- F6: JSONL written at blocks its readers do not assume -------------------------------------------------------

from helpers import SMALL_AZURE  # noqa: E402

BAILIAN = SMALL_TRACE.parent / "bailian_6.jsonl"
NOTE = "is mooncake JSONL at 16-token blocks, but mooncake is read at 512-token blocks unless told: " \
       "read it with --block-size 16"


@pytest.mark.parametrize("make", [
    lambda out: ("trace", "convert", SMALL_AZURE, out),                       # lengths only: pcs blocks at 16
    lambda out: ("trace", "convert", BAILIAN, out, "--to", "mooncake"),       # Bailian's 16-token blocks kept
    lambda out: ("trace", "synth", out, "--requests", "5", "--seed", "1", "--block-size", "16"),
    lambda out: ("trace", "transform", BAILIAN, out, "--to", "mooncake", "--speed", "2"),
])
def test_mooncake_jsonl_at_16_token_blocks_is_noted_when_written(tmp_path, make):
    out = tmp_path / "t.jsonl"
    r = invoke(*make(out))
    assert r.exit_code == 0, r.output
    assert f"pcs: note: {out} {NOTE}" in r.stderr
    # and the note is right: read at 16 it replays, read at the default it is refused naming 16
    assert invoke("replay", out, "--block-size", "16", "-q").exit_code == 0


def test_no_note_when_the_block_size_is_the_formats_own(tmp_path):
    r = invoke("trace", "convert", SMALL_TRACE, tmp_path / "m.jsonl")          # Mooncake at 512 stays at 512
    assert r.exit_code == 0 and "note:" not in r.stderr, r.output
    r = invoke("trace", "convert", SMALL_AZURE, tmp_path / "a.parquet")       # Parquet keeps 16 in its metadata
    assert r.exit_code == 0 and "block-size" not in r.stderr, r.output


def test_refusal_names_the_block_size_that_fits(tmp_path):
    out = tmp_path / "a.jsonl"
    assert invoke("trace", "convert", SMALL_AZURE, out).exit_code == 0
    # row 1 of the CSV: 374 context tokens; at 16-token blocks ceil(374 / 16) = 24 ids (23.375 -> 24);
    # at 512: ceil(374 / 512) = 1. Block sizes giving 24 ids: 374/24 = 15.6 <= B < 374/23 = 16.3, so B = 16 only.
    assert_one_line_error(invoke("replay", out, "-q"), "a.jsonl:1: field 'hash_ids': has 24 ids but "
                          "ceil(374 / block size 512) = 1", "(--block-size 16 fits)")


# --- F7: arrivals as exact as the file -------------------------------------------------------------------------------

def _arrivals(path, **kw):
    from pcs.trace.api import open_trace

    return [a for b in open_trace(str(path), **kw).iter_batches() for a in b.arrival_s.tolist()]


def test_azure_arrivals_are_the_files_differences_rounded_once():
    # rows 1-2: 18:15:46.6805900 and 18:15:50.9951690 -> 4.3145790 s by hand (50.9951690 - 46.6805900), the
    # double nearest 4.314579 (two epoch floats of ulp 2.4e-7 s gave 4.314579010009766)
    arr = _arrivals(SMALL_AZURE)
    assert arr[:2] == [0.0, 4.314579]


def test_azure_conversion_jsonl_and_parquet_read_back_alike(tmp_path):
    # Parquet keeps the CSV's arrivals; JSONL (ms, divided by 1000 when read) reads them back exactly where a
    # double ms divides to them, else 1 ulp off: row 4, 4.710427 s, is such a one (4710.427 ms / 1000 =
    # 4.710427000000001 and the doubles beside 4710.427 skip it), which only a reader dividing the decimal
    # could keep
    import math

    for out in ("a.parquet", "a.jsonl"):
        assert invoke("trace", "convert", SMALL_AZURE, tmp_path / out, "-q").exit_code == 0
    pq, js = _arrivals(tmp_path / "a.parquet"), _arrivals(tmp_path / "a.jsonl", block_size=16)
    assert pq == _arrivals(SMALL_AZURE)
    assert [i for i, (a, b) in enumerate(zip(pq, js)) if a != b] == [3]
    assert abs(pq[3] - js[3]) == math.ulp(4.710427)


# --- F2: pcs report reads the run's trace or says why not ------------------------------------------------------------

import hashlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402

SAMPLE_CHAT = SMALL_TRACE.parent.parent / "sample_chat.jsonl"


def _run_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SMALL_TRACE, tmp_path / "t.jsonl")
    r = invoke("replay", "t.jsonl", "--timing", "sequential", "--tier", "gpu=20blocks", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    (tmp_path / "r.json").write_text(r.stdout)
    return json.loads(r.stdout)


def test_replay_json_records_the_trace_file(tmp_path, monkeypatch):
    run = _run_json(tmp_path, monkeypatch)
    data = SMALL_TRACE.read_bytes()            # under 2 MiB: the hash covers the whole file (first MiB + rest)
    h = hashlib.blake2b(digest_size=16)
    h.update(data[:1 << 20])
    h.update(data[1 << 20:])
    assert run["trace"] == "t.jsonl"           # as typed
    assert run["trace_file"]["path"] == str(tmp_path / "t.jsonl")
    assert run["trace_file"]["bytes"] == len(data)
    assert run["trace_file"]["head_tail_blake2b"] == h.hexdigest()


def test_report_refuses_a_changed_trace_and_warns_when_asked(tmp_path, monkeypatch):
    _run_json(tmp_path, monkeypatch)
    size = (tmp_path / "t.jsonl").stat().st_size
    shutil.copy(SAMPLE_CHAT, tmp_path / "t.jsonl")          # another trace at the run's path
    r = invoke("report", "r.json", "-o", "a.html")
    assert_one_line_error(r, f"has {SAMPLE_CHAT.stat().st_size:,} bytes, the run read {size:,}", "--changed-trace warn")
    assert not (tmp_path / "a.html").exists()
    r = invoke("report", "r.json", "-o", "a.html", "--changed-trace", "warn")
    assert r.exit_code == 0 and "the curve and oracle are drawn from it as it is now" in r.stderr, r.output
    assert invoke("report", "r.json", "-o", "b.html", "--no-curve").exit_code == 0


def test_report_reads_the_runs_trace_from_another_directory(tmp_path, monkeypatch):
    _run_json(tmp_path, monkeypatch)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(SAMPLE_CHAT, other / "t.jsonl")              # a different t.jsonl in the current directory
    monkeypatch.chdir(other)
    r = invoke("report", "../r.json", "-o", "a.html")
    assert r.exit_code == 0 and "note:" not in r.stderr, r.output   # the run's own (absolute) trace, unchanged


def test_report_same_size_other_bytes_is_refused(tmp_path, monkeypatch):
    _run_json(tmp_path, monkeypatch)
    text = (tmp_path / "t.jsonl").read_text()
    (tmp_path / "t.jsonl").write_text(text.replace('"output_length": 1', '"output_length": 2', 1))
    assert (tmp_path / "t.jsonl").stat().st_size == len(text)
    assert_one_line_error(invoke("report", "r.json", "-o", "a.html"), "same size, other first/last MiB")


# --- F3: envelope's D and B are per TP rank, and say so --------------------------------------------------------------

ENV = ("envelope", "--restore-tokens", "21504", "--tokens", "22950", "--model", "llama-2-70b", "--block-size", "512",
       "--bandwidth", "50GB/s", "--overhead", "10us")


def test_envelope_labels_d_per_rank_and_gives_the_groups_bytes():
    # llama-2-70b fp16: 2 (K, V) x 80 layers x 8 KV heads x 128 dims x 2 B = 327,680 B per token; TP 8 (the
    # default) splits the 8 KV heads one per rank: 40,960 B per token per rank; 21,504 tokens = 42 blocks of 512:
    # D = 42 x 512 x 40,960 = 880,803,840 B per rank, 7,046,430,720 B for the group (pcs replay's restored bytes
    # of such a request). Read over one GPU's 50 GB/s link: 880,803,840 / 5e10 = 17.6160768 ms
    from helpers import invoke_json

    out = invoke_json(*ENV)
    assert (out["tp"], out["restore_bytes_scope"]) == (8, "per_rank")
    assert out["restore_bytes"] == 880_803_840 and out["restore_bytes_all_ranks"] == 7_046_430_720
    assert out["rows"][0]["read_s"] == pytest.approx(0.0176160768, rel=1e-12)
    assert out["break_even_bps_all_ranks"] == pytest.approx(8 * out["break_even_bps"], rel=1e-15)
    text = invoke(*ENV).stdout
    assert "restore 880.80 MB of fp16 KV in 512-token blocks per GPU (TP 8: 7.05 GB for the TP group; bandwidths " \
           "per GPU link" in text
    assert "per TP rank" not in text and "per GPU rank" not in text   # one name: per GPU (docs/semantics.md §9, §10)


def test_envelope_given_bytes_keep_the_users_scope():
    from helpers import invoke_json

    out = invoke_json("envelope", "--restore-bytes", "1GB", "--full-prefill", "100ms", "--bandwidth", "10GB/s")
    assert out["restore_bytes_scope"] == "given" and out["restore_bytes_all_ranks"] is None
    assert "per GPU (TP" not in invoke("envelope", "--restore-bytes", "1GB", "--full-prefill", "100ms",
                                       "--bandwidth", "10GB/s").stdout
