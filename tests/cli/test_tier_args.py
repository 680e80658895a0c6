"""Every tier spec pcs prints is one ``pcs replay --tier`` accepts, and every example an error gives is accepted.

- the examples of the size, bandwidth, duration and capacity errors parse (a capacity's through the CLI's
  ``--tier``: a plain ``512`` is refused there, so no message offers it);
- :func:`pcs.units.tier_arg` written out by hand: blocks as ``Nblocks``; a hybrid model's pages as their exact
  bytes (11,491 pages x 41,943,040 B = 481,967,472,640 B = ``481.96747264GB``), which parse back to those bytes;
- ``pcs compare`` of a hybrid model on the default tiers (both managers) and on given tiers, the HTML runs
  table, run labels and the rerun command: each printed ``--tier`` value runs and gives the same capacities.
"""
from __future__ import annotations

import re

import pytest

from helpers import ROOT, invoke
from pcs.engine.api import replay
from pcs.engine.compare import compare
from pcs.errors import UserError
from pcs.report.htmlpage import reproduce_command
from pcs.report.htmltables import run_labels, runs_table
from pcs.units import parse_bandwidth, parse_bytes, parse_capacity, parse_duration, tier_arg

SAMPLE = ROOT / "traces" / "sample_chat.jsonl"


def _examples(message: str) -> list[str]:
    """The examples of an error's ``expected ...`` part: ``such as A, B or C`` / ``(A, B) or ... (C)``."""
    tail = message.split("expected ", 1)[1]
    tail = re.sub(r"\((GB decimal|GiB binary)[^)]*\)", "", tail)
    tail = tail.split("such as ", 1)[-1]
    return [x.strip() for x in re.split(r",|\bor\b|\(|\)|;", tail)
            if re.match(r"^\s*[\d.]", x) and x.strip()]


@pytest.mark.parametrize("parse,bad", [(parse_bytes, "5x"), (parse_bandwidth, "5x"), (parse_duration, "5x"),
                                       (parse_capacity, "11491pages")])
def test_every_example_an_error_gives_is_accepted(parse, bad):
    with pytest.raises(UserError) as e:
        parse(bad)
    examples = _examples(str(e.value))
    assert len(examples) >= 3, str(e.value)
    for x in examples:
        parse(x)
        if parse is parse_capacity:
            r = invoke("replay", SAMPLE, "--tier", f"gpu={x}", "--timing", "sequential", "--format", "json",
                       "--quiet")
            assert r.exit_code == 0, (x, r.output)


def test_tier_arg_hand_worked():
    assert tier_arg("gpu", 953, 953 * 167_772_160, False) == "gpu=953blocks"
    assert tier_arg("gpu", 11_491, 11_491 * 41_943_040, True) == "gpu=481.96747264GB"
    assert parse_capacity("481.96747264GB").size_bytes == 481_967_472_640
    assert tier_arg("cpu", 2, 2 * 512, True) == "cpu=1024B"
    assert parse_capacity("2000GB").size_bytes == 2 * 10**12


def _same_run(spec: str, summary, **kw) -> None:
    s = replay(SAMPLE, model="gemma-3-27b", timing="sequential", tiers=spec.split(), **kw).summary
    assert [t.capacity_blocks for t in s.tiers] == [t.capacity_blocks for t in summary.tiers]
    assert s.hit_ratio == summary.hit_ratio


@pytest.mark.parametrize("manager", ["vllm", "sglang"])
def test_compare_of_a_hybrid_model_prints_tiers_replay_takes(manager):
    r = compare(SAMPLE, model="gemma-3-27b", timing="sequential", hybrid_kv_cache_manager=manager,
                policies=["lru", "fifo"])
    v = r.variants[0]
    # the deployment's 481.968 GB (8 x (80 GB x 0.9 - 6.754 GB weights - 5 GB reserve)) and cpu=2TB
    assert v.tiers == "gpu=481.968GB cpu=2TB"
    _same_run(v.tiers, v.summary, hybrid_kv_cache_manager=manager)
    r = compare(SAMPLE, model="gemma-3-27b", timing="sequential", tiers=["gpu=40GB", "cpu=200GB"])
    assert r.variants[0].tiers == "gpu=40GB cpu=200GB"


def test_html_tables_and_rerun_command_of_a_hybrid_run_print_tiers_replay_takes():
    s = replay(SAMPLE, model="gemma-3-27b", timing="sequential", tiers=["gpu=40GB", "cpu=200GB"]).summary
    d = s.to_dict()
    spec = " ".join(tier_arg(t["name"], t["capacity_blocks"], t["capacity_bytes"], True) for t in d["tiers"])
    assert "pages" not in spec
    _same_run(spec, s)
    other = dict(d, tiers=[dict(t, capacity_blocks=t["capacity_blocks"] // 2,
                                capacity_bytes=t["capacity_bytes"] // 2) for t in d["tiers"]])
    table = runs_table([d, other])
    assert "pages" not in repr(table) and spec in repr(table)
    assert run_labels([d, other])[0] == f"run 1: {spec}"
    cmd = reproduce_command(d)
    assert all(f"--tier {a}" in cmd for a in spec.split()) and "blocks" not in cmd
