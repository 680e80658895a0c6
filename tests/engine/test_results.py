"""Typed results: frozen, slotted, and ``to_dict()`` keeps the JSON contract key for key, in order.

The key lists below are the JSON contract of ``pcs replay`` / ``pcs curve``
as printed by main before the results were typed (recorded from its
``--format json`` output; ``deployment`` came later); keys may be
added after them, none renamed, dropped or reordered.
"""
import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.curves.api import curve
from pcs.engine.api import replay
from pcs.engine.result import ReplaySummary
from pcs.schema import common, field, json_fields, result
from helpers import HAND_SPEC, make_requests

REPLAY_KEYS = [
    "trace", "model", "kv_dtype", "gpu", "tp", "block_size", "timing", "policy", "write_policy",
    "cache_partial_blocks", "recompute_last_token", "requests", "prompt_tokens", "hit_tokens", "block_accesses",
    "cacheable_blocks", "hit_blocks", "block_misses", "hit_ratio", "hit_ratio_per_tier",
    "single_sequence_hit_ratio", "ideal_hit_ratio", "sequential_hit_ratio", "gap", "requests_with_hit",
    "requests_truncated", "requests_waited", "reference_bytes_per_block", "tiers", "bytes", "envelope",
    "payload_lens", "notes", "deployment", "series", "distributions", "compute", "scheduler"]
#: added after them by the engine-selection table (docs/semantics.md §15)
ENGINE_KEYS = ["engine", "engine_reason", "baseline_engine", "baseline_engine_reason"]
#: then whether the side work ran on worker threads (PCS_THREADS, pcs.beside.threads_decision)
THREADS_KEYS = ["threads"]
#: added after them by the gap split's oracle run (replay(gap_oracle=True); docs/semantics.md §12)
ORACLE_KEYS = ["oracle_hit_ratio"]
#: present when the run cached decode blocks (the default step scheduler on the sample: next turns detected)
DECODE_KEYS = ["single_sequence_with_decode_hit_ratio"]
TIER_KEYS = [
    "name", "layout", "policy", "capacity_blocks", "capacity_bytes", "bytes_per_block",
    "bytes_per_block_by_component", "link", "link_bandwidth_bps", "link_setup_s", "hit_blocks", "hit_tokens",
    "restored_blocks", "restored_bytes", "written_blocks", "written_bytes", "evicted_blocks",
    "resident_blocks_end", "resident_bytes_end", "resident_bytes_end_by_component", "resident_blocks_peak",
    "resident_bytes_peak", "resident_bytes_peak_by_component"]
BYTES_KEYS = ["restored", "restored_per_link", "written_per_tier", "recomputed_tokens", "recomputed_bytes",
              "dropped_blocks", "peak_reserved_blocks", "peak_reserved_bytes"]
ENVELOPE_KEYS = ["links", "ttft_p50_s", "ttft_p99_s", "ttft_no_cache_alone_p50_s", "ttft_no_cache_alone_p99_s", "wait_p50_s",
                 "wait_p99_s", "prefill_saved_s"]
LINK_KEYS = ["tier", "link", "bandwidth_bps", "setup_s", "restores", "restored_blocks", "restored_bytes",
             "restore_s", "transfer_s", "queue_s", "prefill_saved_s", "restores_slower_than_recompute",
             "share_slower", "blocks_slower_than_recompute", "break_even_bps", "break_even_bps_per_gpu"]
LENS_KEYS = ["dtype", "alt_dtype", "layout", "reference_bytes_per_block", "gpu_bytes_per_block", "lower_bytes_per_block",
             "gpu_capacity_blocks", "restored_bytes", "restore_transfer_s", "prefill_s", "ttft_mean_s"]
CURVE_KEYS = ["trace", "block_size", "requests", "block_accesses", "cacheable_blocks", "distinct_cacheable_blocks",
              "prompt_tokens",
              "sample_rate", "kernel", "engine", "engine_reason", "model", "block_bytes", "ceiling_hit_ratio", "knee", "rows"]
ROW_KEYS = ["capacity_blocks", "capacity_bytes", "lru_hit_ratio", "belady_hit_ratio", "ceiling_hit_ratio",
            "lru_block_misses", "belady_block_misses"]
KNEE_KEYS = ["percent_of_ceiling", "capacity_blocks", "capacity_bytes", "lru_hit_ratio"]


@pytest.fixture(scope="module")
def default_run():
    return replay(tiers=["gpu=400GB", "cpu=2TB"], tier_policies={"cpu": "protected"})


def test_replay_json_keys_in_order(default_run):
    d = default_run.summary.to_dict()
    assert list(d) == REPLAY_KEYS + ENGINE_KEYS + THREADS_KEYS + DECODE_KEYS
    assert list(d["threads"]) == ["mode", "used", "reason"]
    assert list(d["tiers"][0]) == TIER_KEYS + ["blocks_unit"]   # lru GPU tier: no protected_share
    assert list(d["tiers"][1]) == TIER_KEYS + ["protected_share", "blocks_unit"]
    assert d["tiers"][1]["protected_share"] == 0.8              # the protected policy's default share
    assert list(d["bytes"]) == BYTES_KEYS and list(d["envelope"]) == ENVELOPE_KEYS
    assert list(d["envelope"]["links"][0]) == LINK_KEYS and list(d["payload_lens"]) == LENS_KEYS
    assert list(d["gap"]) == ["block_rounding", "capacity_eviction", "concurrency"]
    # to_dict is plain JSON data: lists, dicts, scalars
    assert isinstance(d["notes"], list) and isinstance(d["payload_lens"]["prefill_s"], list)
    assert json.loads(json.dumps(d)) == d


def test_cli_prints_to_dict(default_run):
    out = CliRunner().invoke(cli, ["replay", "--tier", "gpu=400GB", "--tier", "cpu=2TB", "--tier-policy",
                                   "cpu=protected", "--format", "json", "--quiet"])
    assert out.exit_code == 0, out.output
    printed, api = json.loads(out.stdout), json.loads(json.dumps(default_run.summary.to_dict()))
    # and the trace file it read, for pcs report to check (docs/json.md "Keys pcs replay adds")
    assert printed.pop("trace_file")["path"] == str(Path(api["trace"]).resolve())
    assert printed.pop("replay_command").startswith("pcs replay --tier gpu=400GB")   # and the command that reruns it
    assert printed.pop("skipped") == 0      # and how many bad lines its read skipped: none in the sample
    # review 47a: the notes about the trace it read (pcs.trace.api.trace_notes: the sample is synthetic) are the
    # API's too, the caveat a Python user must see; no word of them needs the command's words here
    assert "prefix reuse is synthetic" in api["notes"][-1]
    assert printed == api


def test_attributes_and_renamed_key(default_run):
    s = default_run.summary
    # bytes.restored is the sum over the lower tiers' restored bytes; the attribute carries the unit
    assert s.bytes.restored_bytes == s.to_dict()["bytes"]["restored"] == sum(t.restored_bytes for t in s.tiers)
    # the gap terms sum to ideal - real (docs/semantics.md §12)
    assert s.gap.block_rounding + s.gap.capacity_eviction + s.gap.concurrency == pytest.approx(
        s.ideal_hit_ratio - s.hit_ratio, abs=1e-15)


def test_frozen_and_slotted(default_run):
    s = default_run.summary
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.hit_ratio = 1.0
    assert not hasattr(s, "__dict__") and not hasattr(s.tiers[0], "__dict__")


def test_engine_keys_last_and_omitted_when_unset(default_run):
    s = default_run.summary
    # the cpu tier is slru: the one-tier lru-scan does not apply; slru has a compiled twin, so the modeled run
    # (default step scheduler) runs the C step loop over the compiled hierarchy and its (two-tier) sequential
    # baseline the compiled hierarchy, when they are built; else the reference
    from pcs import _native
    base = "compiled-hierarchy" if _native.built("lruhier") else "reference"
    run = "compiled-step" if base != "reference" and _native.built("stepsched") else base
    assert (s.engine, s.baseline_engine) == (run, base)
    d = dataclasses.replace(s, **{k: None for k in ENGINE_KEYS + THREADS_KEYS + DECODE_KEYS}).to_dict()
    assert list(d) == REPLAY_KEYS
    d = dataclasses.replace(s, engine="lru-scan", engine_reason="asked for", threads=None,
                            single_sequence_with_decode_hit_ratio=None).to_dict()
    assert list(d)[-4:] == ENGINE_KEYS and d["engine"] == "lru-scan"


def test_every_field_has_a_unit_and_help_shows_it():
    import pydoc

    from pcs.engine.result import BytesSummary

    assert [f.key for f in json_fields(ReplaySummary)] == (REPLAY_KEYS + ENGINE_KEYS + THREADS_KEYS + ORACLE_KEYS + DECODE_KEYS
                                                        + ["hybrid", "model_file"])
    text = pydoc.render_doc(ReplaySummary, renderer=pydoc.plaintext)
    assert "hit_ratio [ratio]: real hit ratio" in text and "to_dict" in text
    assert "restored_bytes [bytes]:" in BytesSummary.__doc__ and "JSON key ``restored``" in BytesSummary.__doc__


def test_field_rejects_unknown_unit():
    with pytest.raises(ValueError, match="unknown unit"):
        field("furlongs", "a distance")


def test_undeclared_field_is_an_error():
    @result
    class Bad:
        x: int = 0

    with pytest.raises(TypeError, match="Bad.x"):
        json_fields(Bad)


def test_common_field_keeps_its_place_and_the_shared_meaning():
    # a common() field sits where it is declared (JSON order) and reads as ReplaySummary.trace read on main
    @result
    class Toy:
        first: int = field("count", "declared before")
        trace: str = common()
        last: int = field("count", "declared after")

    assert list(Toy(1, "t.jsonl", 2).to_dict()) == ["first", "trace", "last"]
    info = json_fields(Toy)[1]
    assert (info.key, info.unit, info.doc) == ("trace", "-", "trace path, or <requests> for an in-memory trace")
    assert "trace [-]: trace path" in Toy.__doc__


def test_common_field_not_in_the_table_is_an_error():
    with pytest.raises(TypeError, match=r"Toy\.tracefile: common\(\) names no field"):
        @result
        class Toy:
            tracefile: str = common()


def test_curve_result_typed_rows_and_keys():
    # HAND_SPEC (tests/helpers.py): LRU hits 12 / 16 / 24 tokens of 43 at 1 / 2 / 4 blocks
    res = curve(make_requests(HAND_SPEC), capacities=[1, 2, 4])
    assert [(r.capacity_blocks, r.lru_hit_ratio) for r in res.rows] == [(1, 12 / 43), (2, 16 / 43), (4, 24 / 43)]
    assert res.knee["p50"].capacity_blocks == 1 and res.requests == 4
    d = res.to_dict()
    assert list(d) == CURVE_KEYS
    assert list(d["rows"][0]) == [k for k in ROW_KEYS if k != "capacity_bytes"]   # no model: no bytes
    assert list(d["knee"]) == ["p50", "p90", "p99"]
    assert list(d["knee"]["p90"]) == [k for k in KNEE_KEYS if k != "capacity_bytes"]


def test_curve_result_with_model_has_bytes():
    # llama-3.1-8b bf16, 4-token blocks: 32 layers x 8 heads x 128 x 2 (K, V) x 2 B x 4 = 524,288 B per block
    res = curve(make_requests(HAND_SPEC), capacities=[2], model="llama-3.1-8b")
    d = res.to_dict()
    assert list(d["rows"][0]) == ROW_KEYS and list(d["knee"]["p50"]) == KNEE_KEYS
    assert d["rows"][0]["capacity_bytes"] == 2 * 524_288 and d["block_bytes"] == 524_288


def test_to_dict_copies_plain_sequences_and_walks_the_others():
    """``to_dict`` turns every tuple and list into a new list: one of plain numbers, strings, booleans and None
    keeps each element as it is (copied without a call per element); one holding a result, a dict, a tuple or a
    subclass of float (numpy's float64) is walked element by element, as before."""
    import numpy as np

    from pcs.schema import _convert

    plain = (1, 2.5, "a", None, True)
    out = _convert(plain)
    assert out == [1, 2.5, "a", None, True] and type(out) is list and out[4] is True
    inner = [1.0, 2.0]
    assert _convert(inner) == [1.0, 2.0] and _convert(inner) is not inner
    assert _convert([(1, 2), {"k": (3,)}]) == [[1, 2], {"k": [3]}]
    x = np.float64(0.5)
    walked = _convert([x, 1])
    assert walked == [0.5, 1] and walked[0] is x
    assert _convert([]) == [] and _convert(()) == []
