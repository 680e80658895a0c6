"""The count of the lines ``--on-error skip`` skipped is a JSON key, ``skipped``, in every command whose JSON names
them (``skipped_lines``): the key and count ``pcs trace stats`` and ``pcs trace convert`` always had, and
``Trace.skipped`` in the Python API. Before, ``pcs replay``, ``compare`` (with ``--router`` too), ``replay
--instances`` and ``curve`` gave the count only inside a note's text ("7 bad trace lines were skipped").

Worked out by hand: ``t.jsonl`` (Mooncake, 512-token blocks) has 10 lines; lines 1, 4 and 7 are fine (1024 tokens =
2 ids of their own, timestamps 0, 3000, 6000 ms), the 7 others have ``"input_length": "x"`` (refused: "must be an
integer"). So 7 are skipped, more than the 5 named (``SKIPPED_NAMED``): ``skipped`` is 7 and ``skipped_lines`` names
lines 2, 3, 5, 6, 8. A clean file gives ``skipped`` 0 -- the key is always there (stable keys for JSON readers).
"""
from __future__ import annotations

import json

import pytest

from tests.helpers import invoke

GOOD = (1, 4, 7)
COMMANDS = {
    "replay": ("replay", "{}", "--tier", "gpu=100blocks"),
    "replay --instances": ("replay", "{}", "--tier", "gpu=100blocks", "--instances", "2"),
    "compare": ("compare", "{}", "--tier", "gpu=100blocks", "--policy", "lru", "--policy", "fifo"),
    "compare --router": ("compare", "{}", "--tier", "gpu=100blocks", "--instances", "2", "--router", "round-robin",
                         "--router", "least-loaded"),
    "curve": ("curve", "{}"),
    "trace stats": ("trace", "stats", "{}"),
    "trace convert": ("trace", "convert", "{}", "out.parquet"),
}


def _trace(tmp_path, bad: bool):
    rows = [{"timestamp": 1000 * (i - 1), "input_length": 1024 if i in GOOD or not bad else "x",
             "output_length": 10, "hash_ids": [2 * i, 2 * i + 1]} for i in range(1, 11)]
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def _json(tmp_path, name: str, *extra: str) -> dict:
    args = [a.format(_trace(tmp_path, "--on-error" in extra).name) for a in COMMANDS[name]]
    r = invoke(*args, *extra, "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", COMMANDS)
def test_seven_skipped_of_ten_is_seven_in_every_json(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    out = _json(tmp_path, name, "--on-error", "skip")
    assert out["skipped"] == 7
    assert [s["line"] for s in out["skipped_lines"]] == [2, 3, 5, 6, 8]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_clean_read_has_the_key_at_zero(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    out = _json(tmp_path, name)
    assert out["skipped"] == 0
    assert out.get("skipped_lines", []) == []


def test_parquet_rows_count_under_the_same_key(tmp_path, monkeypatch):
    """A Parquet trace's skipped rows: the same key (convert the JSONL keeping its bad values is impossible, so
    the rows are written bad by pyarrow: rows 2-4 with a negative prompt_tokens)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.chdir(tmp_path)
    _json(tmp_path, "trace convert")                       # a clean t.jsonl -> out.parquet, 10 rows
    t = pq.read_table("out.parquet")
    col = t.column_names.index("prompt_tokens")
    lengths = pa.array([1024, -1, -2, -3] + [1024] * 6, type=t.schema.field(col).type)
    pq.write_table(t.set_column(col, t.schema.field(col), lengths), "bad.parquet")
    r = invoke("replay", "bad.parquet", "--tier", "gpu=100blocks", "--on-error", "skip", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["skipped"] == 3
    assert [s["row"] for s in out["skipped_lines"]] == [2, 3, 4]


def test_a_sweep_row_carries_the_count_as_its_command_prints_it(tmp_path):
    """A sweep point's row: a ``skipped`` column and the same key in ``result_json`` (the row is what the command
    prints alone, docs/sweep.md), the 5 first named in ``skipped_lines``."""
    from pcs.sweep import read_results, run_sweep

    p = _trace(tmp_path, bad=True)
    (tmp_path / "plan.toml").write_text(f'kind = "replay"\n[fixed]\ntrace = "{p.name}"\non-error = "skip"\n'
                                        'tier = {gpu = "100blocks"}\n[axes]\npolicy = ["lru", "fifo"]\n')
    run = run_sweep(tmp_path / "plan.toml", tmp_path / "out", jobs=1)
    assert (run.points, run.failed) == (2, 0)
    for row in read_results(run.out).to_pylist():
        assert row["skipped"] == 7
        out = json.loads(row["result_json"])
        assert out["skipped"] == 7
        assert [s["line"] for s in out["skipped_lines"]] == [2, 3, 5, 6, 8]
