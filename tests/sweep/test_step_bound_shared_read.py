"""A sweep's shared read checks the step scheduler's row bounds for the points that scheduler times, as ``pcs
replay`` and ``pcs compare`` read a trace for such a run (``pcs.engine.api.row_limits``; docs/semantics.md §9): an
output length of 2**62 tokens or more is refused naming file, line and field, or skipped with ``on-error = "skip"``.
Before, the sweep read the trace without them and each point failed with the scheduler's own message, which names
no line ("an output length of 4611686018427387904 tokens is past what the step scheduler models (2**62) ...").

Worked out by hand: ``big.jsonl`` has 4 lines (Mooncake, 1024 tokens = 2 ids each, timestamps 0-3000 ms), line 3's
output_length 2**62 = 4,611,686,018,427,387,904. Raise mode: refused at line 3, field ``output_length``. Skip mode:
a modeled (step) point replays 3 requests, 1 skipped (line 3); a sequential point, which has no such bound,
replays all 4, none skipped -- what ``pcs replay`` gives for each.
"""
from __future__ import annotations

import json

import pytest

from pcs.errors import InputError
from tests.helpers import assert_one_line_error, invoke

BIG = 2 ** 62


def _trace(tmp_path):
    rows = [{"timestamp": 1000 * i, "input_length": 1024, "output_length": BIG if i == 2 else 10,
             "hash_ids": [2 * i, 2 * i + 1]} for i in range(4)]
    (tmp_path / "big.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _plan(tmp_path, kind: str, fixed: str, axes: str):
    p = tmp_path / f"{kind}.toml"
    p.write_text(f'kind = "{kind}"\n[fixed]\ntrace = "big.jsonl"\n{fixed}[axes]\n{axes}\n')
    return p


@pytest.mark.parametrize("kind, axes", [("replay", 'policy = ["lru", "fifo"]'),
                                        ("compare", 'tier = ["gpu=100blocks", "gpu=200blocks"]')])
def test_raise_mode_names_file_line_and_field(tmp_path, monkeypatch, kind, axes):
    from pcs.sweep import run_sweep

    monkeypatch.chdir(tmp_path)
    _trace(tmp_path)
    plan = _plan(tmp_path, kind, "", axes)
    with pytest.raises(InputError) as err:
        run_sweep(plan, tmp_path / "out", jobs=1)
    assert (err.value.path, err.value.line, err.value.field) == (str(tmp_path / "big.jsonl"), 3, "output_length")
    assert err.value.problem.startswith("4,611,686,018,427,387,904 tokens is past what the step scheduler models")
    line = assert_one_line_error(invoke("sweep", plan, "-o", tmp_path / "out2", "--jobs", "1", "-q"))
    assert line.startswith(f"pcs: error: {tmp_path / 'big.jsonl'}:3: field 'output_length': 4,611,686,018,427,387,904 "
                           "tokens is past what the step scheduler models")       # the plan's path, resolved


def test_skip_mode_skips_the_line_for_step_points_only(tmp_path, monkeypatch):
    from pcs.sweep import read_results, run_sweep

    monkeypatch.chdir(tmp_path)
    _trace(tmp_path)
    plan = _plan(tmp_path, "replay", 'on-error = "skip"\n', 'timing = ["modeled", "sequential"]')
    run = run_sweep(plan, tmp_path / "out", jobs=1)
    assert (run.points, run.failed) == (2, 0)
    rows = {r["option.timing"]: r for r in read_results(run.out).to_pylist()}
    assert (rows["modeled"]["requests"], rows["modeled"]["skipped"]) == (3, 1)
    named = json.loads(rows["modeled"]["result_json"])["skipped_lines"]
    assert [(s["line"], s["field"]) for s in named] == [(3, "output_length")]
    assert (rows["sequential"]["requests"], rows["sequential"]["skipped"]) == (4, 0)
    for timing, want in (("modeled", (3, 1)), ("sequential", (4, 0))):       # what pcs replay gives alone
        r = invoke("replay", "big.jsonl", "--on-error", "skip", "--timing", timing, "--format", "json", "-q")
        out = json.loads(r.stdout)
        assert (out["requests"], out["skipped"]) == want
