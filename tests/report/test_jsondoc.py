"""docs/json.md is generated from the result dataclasses and matches what the commands print.

Two checks: the committed file equals a fresh :func:`pcs.report.jsondoc.render`
(regenerate with ``python -m pcs.report.jsondoc > docs/json.md``), and each
object the CLI really prints lists, in its documented section, exactly its
keys in the printed order (keys documented as omitted may be absent).
"""
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.report.jsondoc import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "json.md"


def test_docs_json_md_is_current():
    assert DOC.read_text(encoding="utf-8") == render(), \
        "docs/json.md is stale: run python -m pcs.report.jsondoc > docs/json.md"


def _sections() -> dict[str, list[tuple[str, bool]]]:
    """class name -> [(key, may be omitted)] from the tables of docs/json.md."""
    out: dict[str, list[tuple[str, bool]]] = {}
    name = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            name = line[4:].strip()
            out[name] = []
        elif line.startswith(("## ", "Keys ")):      # a command's heading or its CLI-added keys
            name = None
        elif name and line.startswith("| `"):
            cells = re.split(r"(?<!\\)\|", line)       # | key | type | unit | meaning |, "\|" inside a cell
            out[name].append((re.match(r" `([^`]+)`", cells[1]).group(1), "omitted" in cells[4]))
    return out


def _check(obj: dict, section: list[tuple[str, bool]], where: str) -> None:
    documented = [k for k, _ in section]
    if documented and documented[1:2] == ["<policy>_hit_ratio"]:          # one key per compared policy
        policies = [k for k in obj if k.endswith("_hit_ratio") and k not in ("belady_hit_ratio", "ceiling_hit_ratio")]
        documented = documented[:1] + policies + documented[2:]
        section = [(k, False) for k in documented]
    omittable = {k for k, omit in section if omit}
    assert list(obj) == [k for k in documented if k in obj], where
    assert set(documented) - set(obj) <= omittable, where


def _run(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def sections():
    return _sections()


def test_replay_output_is_documented(sections):
    s = _run("replay", "--quiet", "--tier", "gpu=400GB", "--tier", "cpu=2TB", "--tier-policy", "cpu=protected")
    # the keys the CLI adds, documented below the tables (skipped: always, 0 for a clean read)
    assert list(s)[-3:] == ["skipped", "trace_file", "replay_command"] and s["skipped"] == 0
    _check({k: v for k, v in s.items() if k not in ("skipped", "trace_file", "replay_command")},
           sections["ReplaySummary"], "replay")
    for t in s["tiers"]:
        _check(t, sections["TierSummary"], "tiers[]")
    assert "protected_share" in s["tiers"][1]
    _check(s["gap"], sections["GapSplit"], "gap")
    _check(s["bytes"], sections["BytesSummary"], "bytes")
    _check(s["envelope"], sections["EnvelopeSummary"], "envelope")
    _check(s["envelope"]["links"][0], sections["LinkEnvelope"], "envelope.links[]")
    _check(s["payload_lens"], sections["PayloadLens"], "payload_lens")


def test_compare_output_is_documented(sections):
    c = _run("compare", "--quiet", "--policy", "lru", "--policy", "fifo", "--tier", "gpu=300blocks",
             "--curve-capacities", "100blocks,300blocks")
    assert list(c)[-2:] == ["skipped", "notes"]               # the keys the CLI adds (notes: synthetic sample)
    _check({k: v for k, v in c.items() if k not in ("skipped", "notes")}, sections["CompareResult"], "compare")
    # the key the CLI adds to each variant, last and documented below the tables
    assert list(c["variants"][0])[-1] == "tier_capacities"
    assert "`variants[].tier_capacities`" in (Path(__file__).resolve().parents[2] / "docs" / "json.md").read_text(
        encoding="utf-8")
    _check({k: v for k, v in c["variants"][0].items() if k != "tier_capacities"}, sections["CompareVariant"],
           "variants[]")
    _check(c["curve"][0], sections["CompareCurveRow"], "curve[]")
    assert "lru_hit_ratio" in c["curve"][0] and "fifo_hit_ratio" in c["curve"][0]


@pytest.mark.parametrize("model", [[], ["--model", "llama-3.1-8b"]], ids=["blocks", "bytes"])
def test_curve_output_is_documented(sections, model):
    c = _run("curve", "--capacities", "100blocks,300blocks", *model)
    # the keys the CLI adds, documented below the tables (notes: the bundled sample's reuse is synthetic)
    assert list(c)[-4:] == ["dtype", "layout", "skipped", "notes"]
    _check({k: v for k, v in c.items() if k not in ("dtype", "layout", "skipped", "notes")}, sections["CurveResult"], "curve")
    _check(c["rows"][0], sections["CurveRow"], "rows[]")
    _check(c["knee"]["p50"], sections["CurveKnee"], "knee")
    assert ("capacity_bytes" in c["rows"][0]) == bool(model)
