"""pcs report refuses a replay JSON whose threads.mode is none of auto, on, off (pcs.beside.THREADS_MODES): one
line naming the file and the field, exit 2, no traceback -- as the checker refuses other fields. The replay JSON:
tests/conftest.py sample_replay."""
import json

import pytest


@pytest.mark.parametrize("mode", ["bogus", "AUTO", ""])
def test_unknown_mode_refused(sample_replay, report_json, mode):
    res, path = report_json(dict(sample_replay, threads={"mode": mode, "used": False, "reason": "x"}))
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines == [f"pcs: error: {path}: field 'threads.mode': must be one of auto, on, off, got {json.dumps(mode)}"]


@pytest.mark.parametrize("mode", ["auto", "on", "off"])
def test_each_mode_accepted(sample_replay, report_json, mode):
    res, _ = report_json(dict(sample_replay, threads={"mode": mode, "used": mode == "on", "reason": "x"}))
    assert res.exit_code == 0, res.output
