"""fleetcheck-21 finding 9b: a router-view delay applies only to routers that read the cache index, one rule for
the API and the CLI (pcs.fleet.routers.stale_view_applies; docs/cluster.md, docs/semantics.md §17)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from helpers import DyadicCompute, req
from pcs.cli.main import cli
from pcs.fleet import fleet_replay
from pcs.fleet.compare import compare_routers
from pcs.report.fleet import compare_title

SMALL = dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1, tiers=["gpu=24blocks", "cpu=40blocks"],
             compute=DyadicCompute(), timing="sequential")
REFUSED = "no router in use reads them"


def _reqs() -> list:
    # block size 4: r0 at 0 s and r1 at 0.01 s, both [1, 2, 3] (12 tokens; hittable (12 - 1) // 4 = 2 blocks =
    # 8 tokens), 4 output tokens each. Service time (the router's load estimate, §17) of r0: prefill 12 x 2^-14
    # s + 4 decode steps of >= 2^-7 s = at least 31 ms, so r0 is still in flight on instance 0 when r1 arrives.
    # prefix, exact view: r1 matches 2 blocks on instance 0 -> 0; captured = 8 / 24 tokens.
    # prefix, 10 s stale: r0's store reaches the view at 10 s, so r1 sees empty indexes (match 0, 0) and the
    # load (1, 0) -> 1; each instance holds one request: captured 0.
    # round-robin: r0 -> 0, r1 -> 1 whatever the view; captured 0.
    return [req([1, 2, 3], 0.0, out=4), req([1, 2, 3], 0.01, out=4)]


def test_the_delay_changes_what_an_index_router_sees():
    exact = fleet_replay(_reqs(), instances=2, router="prefix", **SMALL)
    stale = fleet_replay(_reqs(), instances=2, router="prefix", router_stale_s=10.0, **SMALL)
    assert exact.assignment.tolist() == [0, 0] and exact.summary.gap.captured_hit_ratio == 8 / 24
    assert stale.assignment.tolist() == [0, 1] and stale.summary.gap.captured_hit_ratio == 0.0
    assert stale.summary.router_stale_s == 10.0


@pytest.mark.parametrize("router", ["round-robin", "random", "least-loaded", "consistent-hash"])
def test_api_refuses_a_delay_no_router_reads(router):
    with pytest.raises(ValueError, match=REFUSED):
        fleet_replay(_reqs(), instances=2, router=router, router_stale_s=10.0, **SMALL)
    # an exact view (0, the default) is every router's view: accepted and recorded as 0
    assert fleet_replay(_reqs(), instances=2, router=router, router_stale_s=0.0, **SMALL).summary.router_stale_s == 0


def test_api_still_refuses_a_negative_delay():
    with pytest.raises(ValueError, match=">= 0 seconds"):
        fleet_replay(_reqs(), instances=2, router="round-robin", router_stale_s=-1.0, **SMALL)


def test_compare_passes_the_delay_only_to_index_routers():
    res = compare_routers(_reqs(), ["round-robin", "prefix"], instances=2, router_stale_s=10.0, **SMALL)
    rows = res.to_dict()["routers"]
    assert [(r["router"], r["router_stale_s"]) for r in rows] == [("round-robin", 0.0), ("prefix", 10.0)]
    assert rows[1]["captured_hit_ratio"] == 0.0          # prefix saw the stale view (8 / 24 when exact)
    alone = compare_routers(_reqs(), ["round-robin"], instances=2, **SMALL).to_dict()["routers"][0]
    assert rows[0] == alone                               # round-robin's column is its exact-view run
    assert compare_title(res.trace, rows).endswith(
        "| 2 instances | view 10.00 s stale for prefix (the others read no cache index)")
    with pytest.raises(ValueError, match=REFUSED):
        compare_routers(_reqs(), ["round-robin", "random"], instances=2, router_stale_s=10.0, **SMALL)


@pytest.mark.parametrize("cmd", ["replay", "compare"])
def test_cli_refuses_with_the_api_rule(cmd):
    res = CliRunner().invoke(cli, [cmd, "--instances", "2", "--router", "round-robin", "--router-stale-s", "10"])
    assert res.exit_code == 2 and REFUSED in res.output and "Traceback" not in res.output
