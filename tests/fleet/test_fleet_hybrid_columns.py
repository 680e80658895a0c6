"""A request table's columns follow the configuration (model, tiers, options), never the data (review 46f, F2).

``gpu_resident_bytes_page_padding`` (docs/replay.md, docs/semantics.md §13.1) was written only when some request
saw padded pages, so a fleet of a hybrid model whose instances differed stopped with "pcs: internal error" (pyarrow
could not join tables of different columns), and one replay's column count moved with the trace. The column is
there exactly when the configuration's pages can pad (pcs.engine.hybridsummary.pads), 0 where nothing is padded.

Figures worked out by hand for gemma-3-27b at TP 2 with 512-token blocks: 62 layers, 10 full attention and 52
sliding window, 16 KV heads of 128 (8 per rank); a layer's token is 8 x 128 x 2 (K, V) x 2 B = 4,096 B per rank;
vLLM's uniform page holds G = 10 layers (the fewest of a kind) of one block: 10 x 512 x 4,096 x 2 ranks =
41,943,040 B per TP group; a full-attention block takes 1 page, a sliding-window block ceil(52 / 10) = 6 pages
(8 layer slots of padding), so a block of the model is 7 pages and gpu=2blocks holds 14 pages.
"""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from helpers import ROOT, invoke
from pcs import replay
from pcs.fleet import fleet_replay
from pcs.trace.request import Request

PAD = "gpu_resident_bytes_page_padding"
BYTE_COLS = ("gpu_resident_bytes_full_attention", "gpu_resident_bytes_sliding_window", PAD)
PAGE = 41_943_040
#: the review's fleet trace: round-robin gives instance 0 lines 1 and 3,
#: instance 1 line 2
LINES = ({"timestamp": 0, "input_length": 2560, "output_length": 1, "hash_ids": [5, 1, 3, 4, 2]},
         {"timestamp": 500, "input_length": 512, "output_length": 0, "hash_ids": [20]},
         {"timestamp": 1000, "input_length": 512, "output_length": 0, "hash_ids": [9]})
KW = ("--model", "gemma-3-27b", "--tp", "2", "--tier", "gpu=2blocks", "--timing", "sequential")


def _write(path, lines) -> str:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def _rows(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _single(tmp_path, name: str, lines) -> list[dict]:
    """``pcs replay`` of ``lines`` alone: its request table's rows."""
    out = tmp_path / f"{name}.csv"
    r = invoke("replay", _write(tmp_path / f"{name}.jsonl", lines), *KW, "-q", "--requests-out", out)
    assert r.exit_code == 0, r.output
    return _rows(out)


def test_a_fleet_of_a_hybrid_model_joins_its_instances_tables(tmp_path):
    """The CLI reproducer runs (it ended in an internal error); each request's padding column is its instance's
    value: requests 0 and 1 are the first on their instance's empty GPU, nothing resident, 0 bytes; request 2 is
    instance 0's second request, as the run of instance 0's requests alone gives it (its first line and third).
    Its resident bytes are 7 pages: the 14-page GPU less the 7 its one block reserves, the rest holding request 0's
    pages (it wrote 5 blocks, 35 pages)."""
    out = tmp_path / "fleet.csv"
    r = invoke("replay", _write(tmp_path / "t.jsonl", LINES), *KW, "--instances", "2", "--router", "round-robin",
               "-q", "--requests-out", out)
    assert r.exit_code == 0, r.output
    fleet = _rows(out)
    assert [row["instance"] for row in fleet] == ["0", "1", "0"]
    assert [int(fleet[i][PAD]) for i in (0, 1)] == [0, 0]
    assert all(int(fleet[i][c]) == 0 for i in (0, 1) for c in BYTE_COLS)
    alone0 = _single(tmp_path, "i0", [LINES[0], LINES[2]])
    alone1 = _single(tmp_path, "i1", [LINES[1]])
    assert [row[PAD] for row in alone0] == [fleet[0][PAD], fleet[2][PAD]]
    assert [row[PAD] for row in alone1] == [fleet[1][PAD]]
    assert sum(int(fleet[2][c]) for c in BYTE_COLS) == 7 * PAGE
    assert int(fleet[2][PAD]) > 0


@pytest.mark.parametrize("native", ["auto", "python"])
def test_fleet_replay_of_a_hybrid_model_through_the_api(native):
    """The reviewer's API reproducer (a request repeating an id; round-robin): pcs.fleet_replay runs, and its
    padding column equals each instance's own replay of its requests."""
    rows = [(8.01, 6, 1, [0, 1, 2, 3, 4, 5]),
            (13.01, 18, 2, [0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12, 13, 14, 15, 16, 17]),
            (15.51, 10, 0, list(range(20, 30))),
            (15.51, 5, 0, [0, 1, 2, 40, 41])]

    def trace(sub):
        return [Request(i, t, p, o, np.array(h, dtype=np.uint64), 1) for i, (t, p, o, h) in enumerate(sub)]

    kw = dict(tiers=["gpu=2blocks"], timing="sequential", model="gemma-3-27b", tp=2, native=native)
    fleet = fleet_replay(trace(rows), instances=2, router="round-robin", **kw).requests
    pad = fleet.column(PAD).to_pylist()
    for inst, sub in ((0, [rows[0], rows[2]]), (1, [rows[1], rows[3]])):
        alone = replay(trace(sub), **kw).requests
        assert alone.column(PAD).to_pylist() == [pad[i] for i in range(len(rows)) if i % 2 == inst]


def test_one_replay_has_the_documented_columns_with_and_without_padding(tmp_path):
    """docs/replay.md: 30 columns for gemma-3-27b on two tiers with the step scheduler -- on the sample (padded
    pages resident) and on one request (nothing resident at its admission: no byte padded) alike; the tiers'
    by-component bytes name the same keys too. SGLang's pools (a page is one block of its group) never pad:
    no padding column on either trace."""
    one = _write(tmp_path / "one.jsonl", [{"timestamp": 0, "input_length": 1024, "output_length": 1,
                                          "hash_ids": [1, 2]}])
    sample = str(ROOT / "traces" / "sample_chat.jsonl")
    runs = [replay(t, model="gemma-3-27b") for t in (sample, one)]
    assert [len(r.requests.column_names) for r in runs] == [30, 30]
    assert runs[0].requests.column(PAD).to_numpy().any()
    assert not runs[1].requests.column(PAD).to_numpy().any()
    keys = [[set(t.resident_bytes_peak_by_component) for t in r.summary.tiers] for r in runs]
    assert keys[0] == keys[1] and all("page_padding" in k for k in keys[0])
    sg = [replay(t, model="gemma-3-27b", hybrid_kv_cache_manager="sglang").requests.column_names
          for t in (sample, one)]
    assert sg[0] == sg[1] and PAD not in sg[0]
