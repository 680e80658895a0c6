"""Review 47a, F1: a trace whose reader yields session ids keeps them through `trace convert` and `trace transform`
to Parquet (docs/traces.md: the pcs-trace/1 schema carries session_id "for session traces"), and a Mooncake JSONL
output, which has no session fields, says on stderr that they are dropped."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
BURST3 = ROOT / "traces" / "formats" / "burstgpt3_5.csv"
BAILIAN = ROOT / "traces" / "formats" / "bailian_6.jsonl"


def _session_column(path) -> list:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return table.column("session_id").to_pylist() if "session_id" in table.column_names else None


@pytest.mark.parametrize("command", ["convert", "transform"])
def test_burstgpt_release3_sessions_reach_parquet(tmp_path, command):
    # By hand from the CSV: rows 1 and 3 share one Session ID, rows 4 and 5 another, row 2 has none; sessions are
    # numbered densely in first-appearance order (pcs.trace.lengthonly): 0, -1, 0, 1, 1. BurstGPT has no parents
    # or turns, so session_id alone is written (pcs.trace.parquet reads session_id alone).
    out = tmp_path / "b.parquet"
    res = invoke("trace", command, BURST3, out, "-q")
    assert res.exit_code == 0, res.output + res.stderr
    assert _session_column(out) == [0, -1, 0, 1, 1]
    import pyarrow.parquet as pq

    assert "parent_id" not in pq.read_schema(out).names


def test_session_router_gives_one_number_on_csv_and_its_parquet(tmp_path):
    out = tmp_path / "b.parquet"
    assert invoke("trace", "convert", BURST3, out, "-q").exit_code == 0
    args = ["--instances", "2", "--router", "session", "--tier", "gpu=4blocks", "--format", "json"]
    csv, parquet = invoke("replay", BURST3, *args), invoke("replay", out, *args)
    assert parquet.exit_code == 0, parquet.stderr
    assert json.loads(parquet.stdout)["hit_ratio"] == json.loads(csv.stdout)["hit_ratio"]


@pytest.mark.parametrize("command", ["convert", "transform"])
@pytest.mark.parametrize("source, cols", [(BURST3, "session_id"), (BAILIAN, "session_id, parent_id, turn")])
def test_mooncake_output_notes_the_dropped_session_fields(tmp_path, command, source, cols):
    res = invoke("trace", command, source, tmp_path / "m.jsonl")
    assert res.exit_code == 0, res.stderr
    assert f"the input's session fields ({cols}) are dropped" in res.stderr


def test_no_session_note_for_a_trace_without_sessions(tmp_path):
    res = invoke("trace", "convert", ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl", tmp_path / "m.jsonl")
    assert res.exit_code == 0 and "session fields" not in res.stderr


def test_bailian_output_of_burstgpt_sessions_is_refused(tmp_path):
    # session ids alone are no chat tree (Bailian rows need chat_id and parent_chat_id): one rule for convert
    # and transform, read from the Parquet too.
    pq_path = tmp_path / "b.parquet"
    assert invoke("trace", "convert", BURST3, pq_path, "-q").exit_code == 0
    for command, src in (("convert", BURST3), ("transform", BURST3), ("convert", pq_path)):
        res = invoke("trace", command, src, tmp_path / "x.jsonl", "--to", "bailian")
        assert res.exit_code == 2 and f"{src} (" in res.stderr and ") has no parent_id: a Bailian row's chat_id " \
            "and parent_chat_id are the request's session_id and parent_id" in res.stderr, (command, src)
