"""pcs report on a damaged replay JSON: one line naming the file and the field, exit 2, no page."""
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
    ("block_size", 0, "field 'block_size': must be a count >= 1 up to 1,048,576 (tokens per block, pcs.choices.MAX_BLOCK_SIZE), got 0"),
    ("requests", -5, "field 'requests': must be a count >= 0 below 2^63, got -5"),
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


@pytest.mark.parametrize("path,value,needle", [
    (("distributions", "ttft_cdf", "with_cache_s"), "abc",
     "field 'distributions.ttft_cdf.with_cache_s': must be a number, a list of numbers or null"),
    (("distributions", "ttft_cdf", "without_cache_scheduled_s"), [0.5, "x"],
     "field 'distributions.ttft_cdf.without_cache_scheduled_s[1]': must be a number or null"),
    (("distributions", "restore_vs_recompute", "requests"), True,
     "field 'distributions.restore_vs_recompute.requests'"),
    (("series", "t_s"), [[1.0]], "field 'series.t_s[0]': must be a number or null"),
    (("series", "resident_bytes", "gpu"), ["1"], "field 'series.resident_bytes.gpu[0]'"),
])
def test_damaged_chart_data_is_one_line(tmp_path, good, path, value, needle):
    """A chart's numbers replaced by strings, booleans or nested lists (a hand-edited file): one line naming the
    dotted field, exit 2 -- the kind of the scheduled no-cache CDF's new list, checked for every chart leaf."""
    payload = json.loads(json.dumps(good))
    payload.setdefault("series", {"t_s": [0.0], "resident_bytes": {"gpu": [0]}})
    payload["distributions"].setdefault("ttft_cdf", {})
    node = payload
    for k in path[:-1]:
        node = node.setdefault(k, {}) if node.get(k) is not None else node.__setitem__(k, {}) or node[k]
    node[path[-1]] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(payload))
    page = tmp_path / "page.html"
    r = CliRunner().invoke(cli, ["report", str(bad), "-o", str(page), "--no-curve"])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], r.output
    assert not page.exists()
