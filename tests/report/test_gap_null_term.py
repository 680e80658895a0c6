"""pcs report on a replay JSON whose gap split holds a null term beside numbers (a run with prompt tokens has every
term a number; null is only for a run with no ratios, docs/semantics.md §12): exit 2 naming the term, no traceback.
Found by a hostile-input review (2026-12-04): the sample's block_rounding is 0.0, so a null there passed the sum
check (null read as 0) and the waterfall then subtracted None (an internal-error traceback, exit 1). Also: a
threads object saying mode off and used true (off never hands work to a thread) is refused."""
import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli


@pytest.fixture(scope="module")
def replay_json():
    out = CliRunner().invoke(cli, ["replay", "traces/sample_chat.jsonl", "--format", "json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def _report(tmp_path, payload):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(payload))
    return path, CliRunner().invoke(cli, ["report", str(path), "--html", str(tmp_path / "r.html")])


@pytest.mark.parametrize("term", ["block_rounding", "capacity_eviction", "concurrency"])
def test_null_term_beside_numbers_refused(tmp_path, replay_json, term):
    payload = dict(replay_json, gap=dict(replay_json["gap"], **{term: None}))
    path, res = _report(tmp_path, payload)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "internal error" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"pcs: error: {path}: field 'gap.{term}': must be a number")


def test_zero_term_still_drawn(tmp_path, replay_json):
    # the sample fits its cache blocks whole: ideal = single-sequence, so block_rounding is exactly 0.0
    assert replay_json["gap"]["block_rounding"] == 0.0
    _, res = _report(tmp_path, replay_json)
    assert res.exit_code == 0, res.output


def test_mode_off_used_true_refused(tmp_path, replay_json):
    payload = dict(replay_json, threads={"mode": "off", "used": True, "reason": "x"})
    path, res = _report(tmp_path, payload)
    assert res.exit_code == 2
    assert [ln for ln in res.output.splitlines() if ln.strip()] == [
        f"pcs: error: {path}: field 'threads.used': must be false when threads.mode is off (PCS_THREADS=off runs "
        "every part on the calling thread), got true"]
    payload = dict(replay_json, threads={"mode": "off", "used": False, "reason": "x"})
    assert _report(tmp_path, payload)[1].exit_code == 0
