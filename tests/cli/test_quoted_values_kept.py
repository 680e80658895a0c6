"""Re-wording an error into the caller's words (``--sort`` on the command line, ``sort`` in a sweep plan, for the
API's ``sort=``: :func:`pcs.cli.common.option_names`) touches only the advice the code wrote, never a value the
message quotes from the user's input: a trace's field, a Parquet metadata value, a sweep plan's value. Before, a
field holding the text ``block_size=16 max_num_seqs`` came back as ``--block-size 16 --max-num-seqs``.

Worked out by hand from the readers' documented messages (docs/traces.md): ``q.jsonl`` (Mooncake, 512-token blocks,
ms timestamps) line 1 fine (t 0), line 2 ``"input_length": "block_size=16 max_num_seqs sort="`` -> ``field
'input_length': must be an integer, got "block_size=16 max_num_seqs sort="`` (the value as JSON writes it, 35
characters, under the 40 shown), line 3 fine (t 2000), line 4 t 1000 -> ``field 'timestamp': decreases (1000 after
2000); use sort= to reorder``, line 5 ``"input_length": "block_size=16 max_num_seqs timing='sequential' x"`` (48
characters, 13 + 13 + 20 + 2: its first 40 shown, cut with its closing quote and length, as the API shows it,
``"block_size=16 max_num_seqs timing='seque..." (48 characters)``: pcs.errors.quoted), line 6 fine.
"""
from __future__ import annotations

import json

import pytest

from tests.helpers import assert_one_line_error, invoke

VALUE = 'got "block_size=16 max_num_seqs sort="'
CUT = "got \"block_size=16 max_num_seqs timing='seque...\" (48 characters)"
LINE2 = f"q.jsonl:2: field 'input_length': must be an integer, {VALUE}"
LINE4 = "q.jsonl:4: field 'timestamp': decreases (1000 after 2000); use --sort to reorder"
LINE5 = f"q.jsonl:5: field 'input_length': must be an integer, {CUT}"


def _row(ts, i, length=1024):
    return json.dumps({"timestamp": ts, "input_length": length, "output_length": 10, "hash_ids": [2 * i, 2 * i + 1]})


def _trace(tmp_path):
    lines = [_row(0, 0), _row(1000, 1, "block_size=16 max_num_seqs sort="), _row(2000, 2), _row(1000, 3),
             _row(2500, 4, "block_size=16 max_num_seqs timing='sequential' x"), _row(3000, 5)]
    (tmp_path / "q.jsonl").write_text("\n".join(lines) + "\n")


def test_skip_notes_and_json_keep_the_value_and_reword_the_advice(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _trace(tmp_path)
    for args in (["replay", "q.jsonl", "--tier", "gpu=100blocks"], ["trace", "stats", "q.jsonl"]):
        r = invoke(*args, "--on-error", "skip")                         # the table's notes
        assert r.exit_code == 0, r.output
        notes = [ln for ln in r.stdout.splitlines() if ln.startswith("note: skipped")]
        assert notes == [f"note: skipped {LINE2}", f"note: skipped {LINE4}", f"note: skipped {LINE5}"]
    for args in (["replay", "q.jsonl", "--tier", "gpu=100blocks"], ["trace", "stats", "q.jsonl"],
                 ["trace", "convert", "q.jsonl", "out.parquet"]):
        r = invoke(*args, "--on-error", "skip", "--format", "json")
        assert r.exit_code == 0, r.output
        named = json.loads(r.stdout)["skipped_lines"]
        assert [s["message"] for s in named] == [LINE2, LINE4, LINE5]
        assert [s["problem"] for s in named] == [f"must be an integer, {VALUE}",
                                                 "decreases (1000 after 2000); use --sort to reorder",
                                                 f"must be an integer, {CUT}"]
        if args[0] == "replay":                                         # the notes on stderr, as in the table
            assert f"pcs: note: skipped {LINE2}" in r.stderr.splitlines()
            assert f"pcs: note: skipped {LINE4}" in r.stderr.splitlines()


def test_raise_mode_keeps_the_value(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _trace(tmp_path)
    for args in (["replay", "q.jsonl"], ["trace", "stats", "q.jsonl"]):
        assert assert_one_line_error(invoke(*args)) == f"pcs: error: {LINE2}"


def test_parquet_metadata_value_kept_beside_reworded_advice(tmp_path, monkeypatch):
    """A pcs Parquet trace whose ``pcs.block_size`` metadata is the text ``block_size=16 max_num_seqs``: refused
    with the API's ``(the block_size= range), got 'block_size=16 max_num_seqs'`` (the value's repr) -- the range's
    advice re-worded, the value not."""
    import pyarrow.parquet as pq

    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.jsonl").write_text(_row(0, 0) + "\n" + _row(1000, 1) + "\n")
    assert invoke("trace", "convert", "c.jsonl", "c.parquet", "-q").exit_code == 0
    t = pq.read_table("c.parquet")
    meta = {**t.schema.metadata, b"pcs.block_size": b"block_size=16 max_num_seqs"}
    pq.write_table(t.replace_schema_metadata(meta), "m.parquet")
    want = ("pcs: error: m.parquet: field 'pcs.block_size': metadata must be an integer of tokens in [1, 1048576] "
            "(the --block-size range), got 'block_size=16 max_num_seqs'")
    for args in (["replay", "m.parquet"], ["trace", "stats", "m.parquet"],
                 ["trace", "convert", "m.parquet", "o.jsonl"]):
        assert assert_one_line_error(invoke(*args)) == want


def test_sweep_rows_and_errors_keep_the_value(tmp_path, monkeypatch):
    """A sweep point's notes and ``skipped_lines`` (the plan's words: ``use sort = true to reorder``), and a point's error
    quoting the plan's own value, refused as it is planned (``model = "x sort= x"``: ``unknown model 'x sort= x'``
    beside the advice in the plan's words, ``model = "path/to/config.json"``)."""
    from pcs.sweep import read_results, run_sweep
    from pcs.sweep.kinds import PlanError

    monkeypatch.chdir(tmp_path)
    _trace(tmp_path)
    (tmp_path / "plan.toml").write_text('kind = "replay"\n[fixed]\ntrace = "q.jsonl"\non-error = "skip"\n'
                                        'tier = {gpu = "100blocks"}\n[axes]\npolicy = ["lru", "fifo"]\n')
    run = run_sweep(tmp_path / "plan.toml", tmp_path / "out", jobs=1)
    assert (run.points, run.failed) == (2, 0)
    path = tmp_path / "q.jsonl"                                           # a plan's path, resolved
    for row in read_results(run.out).to_pylist():
        notes = json.loads(row["notes"])
        assert f"skipped {path}:2: field 'input_length': must be an integer, {VALUE}" in notes
        assert f"skipped {path}:4: field 'timestamp': decreases (1000 after 2000); use sort = true to reorder" in notes
        named = json.loads(row["result_json"])["skipped_lines"]
        assert [s["problem"] for s in named] == [f"must be an integer, {VALUE}",
                                                 "decreases (1000 after 2000); use sort = true to reorder",
                                                 f"must be an integer, {CUT}"]
    (tmp_path / "c.jsonl").write_text(_row(0, 0) + "\n")
    (tmp_path / "bad.toml").write_text('kind = "replay"\n[fixed]\ntrace = "c.jsonl"\nmodel = "x sort= x"\n'
                                       '[axes]\npolicy = ["lru", "fifo"]\n')
    with pytest.raises(PlanError) as err:              # refused while the points are planned, none run
        run_sweep(tmp_path / "bad.toml", tmp_path / "out2", jobs=1)
    assert "unknown model 'x sort= x'; valid: " in str(err.value)
    assert str(err.value).endswith('(or give a Hugging Face config.json path: model = "path/to/config.json")')
