"""pcs report refuses a replay JSON whose threads.mode is none of auto, on, off (pcs.beside.THREADS_MODES): one
line naming the file and the field, exit 2, no traceback -- as the checker refuses other fields."""
import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli


@pytest.fixture(scope="module")
def replay_json(tmp_path_factory):
    out = CliRunner().invoke(cli, ["replay", "traces/sample_chat.jsonl", "--format", "json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def _report(tmp_path, payload):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(payload))
    return path, CliRunner().invoke(cli, ["report", str(path), "--html", str(tmp_path / "r.html")])


@pytest.mark.parametrize("mode", ["bogus", "AUTO", ""])
def test_unknown_mode_refused(tmp_path, replay_json, mode):
    payload = dict(replay_json, threads={"mode": mode, "used": False, "reason": "x"})
    path, res = _report(tmp_path, payload)
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines == [f"pcs: error: {path}: field 'threads.mode': must be one of auto, on, off, got {json.dumps(mode)}"]


@pytest.mark.parametrize("mode", ["auto", "on", "off"])
def test_each_mode_accepted(tmp_path, replay_json, mode):
    payload = dict(replay_json, threads={"mode": mode, "used": mode == "on", "reason": "x"})
    _, res = _report(tmp_path, payload)
    assert res.exit_code == 0, res.output
