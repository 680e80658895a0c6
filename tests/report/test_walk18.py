"""The new-user walkthrough's findings (fleet shared-tier label, hybrid padding note, envelope split, ...), each
checked against values worked out by hand in the comments."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import invoke, invoke_json

ROOT = Path(__file__).resolve().parents[2]


def _json(*args):
    return invoke_json(*args)


def test_fleet_shared_tier_share_is_not_called_a_recovery(tmp_path):
    # Two requests [1,2,3] (3 blocks of 512 = 1,536 tokens) at 0 s and 1 s, 2 instances round-robin, a write-through
    # shared tier. Fleet ceiling = 1,024 / 3,072 = 33.3 %; own sub-traces (one request each) 0 % -> routing loses
    # 33.3 pts. Instance 2's request reads blocks 1, 2 from the shared tier (written through by instance 1):
    # 1,024 / 3,072 = 33.3 % of prompt tokens. The row names that a share of prompt tokens, not "recovers".
    from pcs.fleet import fleet_replay
    from pcs.report.fleet import render_fleet
    t = tmp_path / "two.jsonl"
    t.write_text('{"timestamp": 0, "input_length": 1536, "output_length": 1, "hash_ids": [1, 2, 3]}\n'
                 '{"timestamp": 1000, "input_length": 1536, "output_length": 1, "hash_ids": [1, 2, 3]}\n')
    s = fleet_replay(str(t), instances=2, router="round-robin", timing="sequential",
                     shared_tier="remote=100blocks", write_policy="through").summary.to_dict()
    assert s["shared_tier"]["hit_ratio"] == pytest.approx(1024 / 3072)
    text = render_fleet(s)
    row = next(line for line in text.splitlines() if line.startswith("captured by routing (each instance's sub-trace ceiling, summed)"))
    assert "-33.3 pts split across instances" in row and "serves 33.3 % of prompt tokens" in row
    assert "recovers" not in text
    line = next(x for x in text.splitlines() if x.startswith("prompt tokens served by it (its hit ratio)"))
    assert line.split()[-2:] == ["33.3", "%"]


def test_hybrid_padding_note_matches_its_table():
    # qwen3-next-80b-a3b at TP 8, block 512 (the sample's): one attention page = 12 layers x 1 KV head x 256 x
    # (K, V) x 2 B x 512 tokens x 8 ranks = 50,331,648 B; a block = 4 pages (1 attention + 3 state) = 201,326,592 B;
    # fp8 halves the page: 100,663,296 B (x0.500). Payload: attention 50,331,648 + state 36 layers x 1,097,728 B =
    # 39,518,208 -> 89,849,856 B; fp8: 25,165,824 + 39,518,208 = 64,684,032 B (x0.720). The stored bytes shrink
    # more than the payload, so the notes may not say padding does not shrink.
    res = _json("replay", str(ROOT / "traces" / "sample_chat.jsonl"), "--model", "qwen3-next-80b-a3b",
                "--tier", "gpu=100GB")
    lens = res["payload_lens"]
    assert lens["gpu_bytes_per_block"] == [201_326_592, 100_663_296]
    assert lens["reference_bytes_per_block"] == [89_849_856, 64_684_032]
    text = " ".join(invoke("replay", str(ROOT / "traces" / "sample_chat.jsonl"), "--model", "qwen3-next-80b-a3b",
                           "--tier", "gpu=100GB", "-q").stdout.split())
    assert "shrinks the payload, not in-page scales, padding" not in text
    assert "the state's padding up to the attention page included" in text
    assert "stored bytes move more than the payload (x0.500 against x0.720)" in text


def test_dense_model_keeps_the_payload_note():
    # llama-2-70b fp16 -> fp8 (the default run): payload and GPU bytes both x0.500, no padding note.
    text = " ".join(invoke("replay", "-q").stdout.split())
    assert "a smaller KV dtype shrinks the payload, not in-page scales, padding, setup or compute" in text
    assert "move more than the payload" not in text


def test_envelope_splits_d_and_remaining_at_whole_blocks(tmp_path):
    # llama-3.1-8b bf16 at TP 8: 2 (K, V) x 32 layers x 1 KV head per rank x 128 x 2 B = 16,384 B per token.
    # 1,000 restore tokens at block 512: only full blocks are cached (docs/semantics.md §2) -> 1 block = 512 tokens,
    # D = 512 x 16,384 = 8,388,608 B (not 2 blocks = 16,777,216 B). Measured prefill (0,0), (1000, 100 ms),
    # (2000, 300 ms), linear: total(1,100) = 100 + 100 x 0.2 = 120 ms = T_full; T_remaining = total(1,100) -
    # total(512) = 120 - 51.2 = 68.8 ms (588 tokens after 512 cached, the same split as D).
    csv = tmp_path / "prefill.csv"
    csv.write_text("tokens,seconds\n1000,100ms\n2000,300ms\n")
    out = _json("envelope", "--restore-tokens", "1000", "--tokens", "1100", "--model", "llama-3.1-8b",
                "--block-size", "512", "--prefill-csv", str(csv), "--bandwidth", "50GB/s")
    assert out["restore_bytes"] == 8_388_608 and out["restored_tokens"] == 512 and out["restore_tokens"] == 1000
    assert out["full_prefill_s"] == pytest.approx(0.120, rel=1e-12)
    assert out["remaining_s"] == pytest.approx(0.0688, rel=1e-12)
    title = invoke("envelope", "--restore-tokens", "1000", "--tokens", "1100", "--model", "llama-3.1-8b",
                   "--block-size", "512", "--prefill-csv", str(csv), "--bandwidth", "50GB/s", "-q").stdout
    assert "restore 8.39 MB = 512 of the 1,000 tokens" in title and "the other 488 are computed" in title
    # D given in bytes: the tokens are the user's split, not rounded (remaining = total(1,100) - total(1,000) = 20 ms)
    out = _json("envelope", "--restore-bytes", "1GB", "--restore-tokens", "1000", "--tokens", "1100",
                "--block-size", "512", "--prefill-csv", str(csv), "--bandwidth", "50GB/s")
    assert out["restored_tokens"] == 1000 and out["remaining_s"] == pytest.approx(0.020, rel=1e-12)


def test_replay_counts_requests_past_the_models_context():
    # Counted here from the sample trace itself (json, no pcs): requests whose prompt + output exceed llama-2-70b's
    # 4,096-token context (config max_position_embeddings), those whose prompt alone does, the longest prompt.
    rows = [json.loads(line) for line in (ROOT / "traces" / "sample_chat.jsonl").read_text().splitlines() if line]
    over = sum(r["input_length"] + r["output_length"] > 4096 for r in rows)
    alone = sum(r["input_length"] > 4096 for r in rows)
    longest = max(r["input_length"] for r in rows)
    assert (over, alone, longest, len(rows)) == (1204, 1151, 124_164, 1700)   # the walkthrough's count by hand
    notes = _json("replay")["notes"]
    note = next(n for n in notes if "past the model's context" in n)
    assert note.startswith("1,204 of 1,700 requests run past the model's context, 4,096 tokens")
    assert "1,151 by the prompt alone, longest prompt 124,164" in note and "stands in" in note
    # llama-3.1-8b's context is 131,072 tokens > every request here: no note
    assert not any("past the model's context" in n for n in _json("replay", "--model", "llama-3.1-8b")["notes"])


def test_oracle_rows_are_a_second_split_not_more_gap_terms():
    # §12: block rounding + capacity/eviction + concurrency = ideal - real; the oracle pair splits single-sequence
    # - real again (capacity = single - oracle, policy = oracle - real), so the text names them apart.
    s = _json("replay", "--gap-oracle", "--compute", "infinite")
    g = s["gap"]
    assert g["block_rounding"] + g["capacity_eviction"] + g["concurrency"] == pytest.approx(
        s["ideal_hit_ratio"] - s["hit_ratio"], abs=1e-12)
    assert g["capacity"] + g["policy"] == pytest.approx(s["single_sequence_hit_ratio"] - s["hit_ratio"], abs=1e-12)
    text = invoke("replay", "--gap-oracle", "--compute", "infinite", "-q").stdout
    assert "gap: capacity (oracle)" not in text and "oracle split: capacity" in text
    assert "second split of single-sequence - real, not added to the gaps above" in " ".join(text.split())


def test_belady_label_groups_thousands():
    # the gap chart's oracle label: 14,292 blocks, as every other count in the report
    from pcs.report.htmlcharts import waterfall_chart
    s = _json("replay")
    chart = waterfall_chart(s, {"hit_ratio": 0.4, "capacity_blocks": 14292})
    assert "Belady at 14,292 blocks" in json.dumps(chart, default=str)


def test_signed_concurrency_gap_marks_the_one_nearest_zero():
    # gap: concurrency -0.8, -0.5, -4.0 pts (lru, fifo, slru in the walkthrough): -4.0 is the real run 4 pts above
    # its sequential replay, not the best cache; nearest 0 is -0.5 (index 1). A tie in size (-0.5, +0.5) marks both.
    from pcs.report.htmltables import BEST, RUN_ROWS, best_columns
    assert best_columns([-0.008, -0.005, -0.040], "absmin") == {1}
    assert best_columns([-0.005, 0.005, 0.01], "absmin") == {0, 1}
    assert best_columns([0.005, -0.005], "absmin") == set()              # equal in size: nothing is best
    assert BEST["gap_concurrency"] == "absmin"
    assert dict((r[0], r[3]) for r in RUN_ROWS)["gap: concurrency"] == "absmin"


def test_runs_table_names_what_varies():
    # two replays that differ only in --dtype: the columns say KV fp16 / KV fp8, not "lru, modeled" twice
    from pcs.report.htmltables import run_labels
    a = {"model": "llama-2-70b", "kv_dtype": "fp16", "policy": "lru", "timing": "modeled", "tiers": [
        {"name": "gpu", "capacity_blocks": 2372}]}
    assert run_labels([a, {**a, "kv_dtype": "fp8", "tiers": [{"name": "gpu", "capacity_blocks": 4744}]}]) == [
        "run 1: KV fp16", "run 2: KV fp8"]
    assert run_labels([a, {**a, "policy": "fifo"}]) == ["run 1: lru", "run 2: fifo"]
    assert run_labels([a, {**a, "tiers": [{"name": "gpu", "capacity_blocks": 100}]}]) == [
        "run 1: gpu=2372blocks", "run 2: gpu=100blocks"]     # --tier values pcs replay accepts (a plain 2372 is not)
    assert run_labels([a, a]) == ["run 1: lru, modeled", "run 2: lru, modeled"]   # nothing differs


def test_curve_grid_starts_where_the_curve_can_rise(tmp_path):
    # Block 512, four requests of 1,537 tokens with 4 ids: 3 full blocks cacheable, hit cap (1,537 - 1)//512 = 3.
    # Cacheable accesses: A 0 1 2 | B 0 4 5 | C 0 7 8 | D 0 1 2. A request's blocks enter the LRU order with the
    # head most recent (the tail is evicted first, docs/semantics.md §14), so the stack before each request, most
    # recent first: B sees [0 1 2] (0 at depth 1), C sees [0 4 5 1 2] (0 at 1), D sees [0 7 8 4 5 1 2]: 0 at 1,
    # 1 at 6, 2 at 7. Hit tokens by capacity (prefix rule): c = 1..5 -> the three 0s = 1,536; c = 6 -> + D's 1 =
    # 2,048; c >= 7 -> 2,560. Equal to 1 block's up to c = 5: the flat start is 5, and the grid starts there.
    from pcs.curves.api import capacity_grid, flat_start, load_accesses, lru_curve
    rows = [[0, 1, 2, 3], [0, 4, 5, 6], [0, 7, 8, 9], [0, 1, 2, 10]]
    t = tmp_path / "t.jsonl"
    t.write_text("".join(json.dumps({"timestamp": 1000 * i, "input_length": 1537, "output_length": 1,
                                     "hash_ids": ids}) + "\n" for i, ids in enumerate(rows)))
    flat, _ = load_accesses(str(t))
    lru = lru_curve(flat)
    assert [int(lru.hit_tokens(c)) for c in (1, 5, 6, 7, 8)] == [1536, 1536, 2048, 2560, 2560]
    assert flat_start(lru) == 5
    assert capacity_grid(lru.max_useful_capacity_blocks, 2, flat_start(lru)) == [5, 7]


def test_hybrid_tier_table_says_what_it_counts():
    # SGLang's manager keeps one pool per kind of layer: the note names its pools, not "the shared pool"; the hit
    # column counts blocks of the model (512 tokens each): gpu hit blocks x 512 / prompt tokens = the gpu's share
    args = ("replay", str(ROOT / "traces" / "sample_chat.jsonl"), "--model", "qwen3-next-80b-a3b", "--tier",
            "gpu=100GB", "--hybrid-kv-cache-manager", "sglang", "--compute", "infinite")
    s = _json(*args)
    gpu = s["tiers"][0]
    assert gpu["hit_blocks"] * 512 / s["prompt_tokens"] == pytest.approx(s["hit_ratio_per_tier"]["gpu"], rel=1e-12)
    text = " ".join(invoke(*args, "-q").stdout.split())
    assert "hit blocks (model)" in text and "pages of its pools (SGLang" in text and "shared pool" not in text


def test_views_say_their_tp_and_block_size():
    # footprint's defaults (TP 1, block 16) and deploy's (block 16) differ from replay's (TP 8, block 512): said
    foot = " ".join(invoke("footprint", "--model", "llama-2-70b", "--tokens", "4096", "-q").stdout.split())
    assert "this view: block 16, TP 1; pcs replay's defaults differ" in foot
    same = invoke("footprint", "--model", "llama-2-70b", "--tokens", "4096", "--block-size", "512", "--tp", "8",
                  "-q").stdout
    assert "this view:" not in same
    dep = invoke("deploy", "--model", "llama-2-70b", "-q").stdout
    assert dep.splitlines()[0] == "Deployment: llama-2-70b, h100-sxm x8 (TP 8), block 16 tokens"
    assert "pcs replay uses its trace's block size" in " ".join(dep.split())
    text = invoke("replay", "-q").stdout
    assert "Hit ratio: real vs single-sequence" in text and "Hit rate" not in text


def test_dash_sits_right_in_a_number_column():
    # a column of numbers with one "-" (no value): the dash ends where the numbers end; a text column keeps it left
    from pcs.report.table import render_table
    lines = render_table(["metric", "a", "policy"], [["tiers", "gpu=5000blocks", "lru"], ["x", "12.5 %", "-"],
                                                      ["y", "-", "fifo"], ["z", "3.0 %", "lru"]]).splitlines()
    assert lines[3] == "x               12.5 %  -"        # text column (policy): the dash stays left
    assert lines[4] == "y                    -  fifo"     # number column (a): right-aligned like 12.5 %
