"""pcs report refuses a curve or compare JSON whose numbers are out of range, as it refuses a replay JSON's: a hit
ratio outside [0, 1], a count below 0 (block_size below 1) or beyond 2^63 (found 2026-12-04: a curve with
ceiling_hit_ratio 7.5, a row's lru_hit_ratio -3.0, requests -1, a count of 10^400 drew a page, exit 0)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def curve_json(tmp_path_factory) -> dict:
    r = CliRunner().invoke(cli, ["curve", str(ROOT / "traces" / "sample_chat.jsonl"), "--capacities",
                                 "10blocks,100blocks", "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _report(tmp_path: Path, payload: dict):
    f = tmp_path / "c.json"
    f.write_text(json.dumps(payload))
    return CliRunner().invoke(cli, ["report", str(f), "-o", str(tmp_path / "c.html")])


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(ceiling_hit_ratio=7.5), "field 'ceiling_hit_ratio': must be a ratio in [0, 1], got 7.5"),
    (lambda d: d["rows"][0].update(lru_hit_ratio=-3.0), "field 'rows[0].lru_hit_ratio': must be a ratio in [0, 1], got -3.0"),
    (lambda d: d["rows"][1].update(capacity_blocks=-10), "field 'rows[1].capacity_blocks': must be a count >= 0"),
    (lambda d: d.update(requests=-1), "field 'requests': must be a count >= 0"),
    (lambda d: d.update(block_size=0), "field 'block_size': must be a count >= 1"),
    (lambda d: d.update(cacheable_blocks=10 ** 400), "got an integer of 401 digits"),
])
def test_out_of_range_curve_fields_are_refused(tmp_path, curve_json, edit, message):
    payload = copy.deepcopy(curve_json)
    edit(payload)
    r = _report(tmp_path, payload)
    assert r.exit_code == 2 and message in r.output, r.output
    assert not (tmp_path / "c.html").exists()


def test_the_untouched_curve_draws_its_page(tmp_path, curve_json):
    r = _report(tmp_path, curve_json)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "c.html").read_text().startswith("<!DOCTYPE html>")


def test_the_inputs_row_leaves_out_what_the_curve_does_not_record(tmp_path, curve_json):
    # a curve run without --model records model null: the page's Inputs row said "model None" (2026-12-04)
    assert curve_json["model"] is None
    r = _report(tmp_path, curve_json)
    assert r.exit_code == 0, r.output
    page = (tmp_path / "c.html").read_text()
    assert "model None" not in page and "block_size 512" in page
