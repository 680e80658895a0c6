"""pcs report on a damaged replay JSON: one line naming the file and the field, exit 2, no page (issue 11 kind)."""
import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "run.json"
    r = CliRunner().invoke(cli, ["replay", "--timing", "sequential", "--tier", "gpu=200blocks", "--format", "json",
                                 "--quiet"])
    assert r.exit_code == 0, r.output
    out.write_text(r.stdout)
    return json.loads(r.stdout)


@pytest.mark.parametrize("key,value,needle", [
    ("hit_ratio", float("nan"), "field 'hit_ratio': must be a ratio in [0, 1], got NaN"),
    ("hit_ratio", "x", "field 'hit_ratio': must be a ratio in [0, 1]"),
    ("hit_ratio", 2.5, "field 'hit_ratio': must be a ratio in [0, 1], got 2.5"),
    ("single_sequence_hit_ratio", -0.1, "field 'single_sequence_hit_ratio'"),
    ("tiers", [], "field 'tiers': must be a non-empty list"),
    ("tiers", None, "field 'tiers'"),
    ("envelope", None, "field 'envelope': must be an object with a links list"),
    ("gap", None, "field 'gap'"),
    ("notes", None, "field 'notes': must be a list of strings"),
    ("block_size", 0, "field 'block_size': must be a positive number of tokens, got 0"),
    ("requests", -5, "field 'requests': must be a count >= 0, got -5"),
    ("requests", 10**400, "field 'requests'"),
    ("deployment", "s", "field 'deployment': must be an object or null"),
    ("series", "junk", "field 'series': must be an object or null"),
])
def test_damaged_field_is_one_line(tmp_path, good, key, value, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(good, **{key: value})))
    page = tmp_path / "page.html"
    r = CliRunner().invoke(cli, ["report", str(bad), "-o", str(page), "--no-curve"])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"pcs: error: {bad}: ") and needle in lines[0], r.output
    assert not page.exists()


def test_the_undamaged_json_still_makes_a_page(tmp_path, good):
    src = tmp_path / "run.json"
    src.write_text(json.dumps(good))
    r = CliRunner().invoke(cli, ["report", str(src), "--html", str(tmp_path / "p.html"), "--no-curve"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.html").stat().st_size > 10_000
