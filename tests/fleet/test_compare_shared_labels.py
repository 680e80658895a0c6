"""``pcs compare --router`` names the shared tier and the router's staleness, and labels what the shared tier
captures apart from what routing captures; the fleet replay's per-instance ceiling is named the sub-trace
ceiling when a shared tier serves other instances' writes
(docs/semantics.md §17.1)."""
from __future__ import annotations

from helpers import req
from pcs.fleet import fleet_replay
from pcs.fleet.compare import compare_routers
from pcs.report.fleet import compare_title, render_fleet, render_router_compare

BS = 4
STEP = dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1)


def _reqs() -> list:
    # block size 4. A at 0 s: ids [1, 2], prompt 8; B at 10 s: ids [1, 2, 3], prompt 12 (cap (12 - 1) // 4 = 2
    # blocks). Round-robin on 2 instances sends A to 0 and B to 1: each sub-trace holds one request, so
    # routing alone captures nothing (0 / 20); with a shared tier every instance reads every write and B can
    # hit [1, 2] = 8 tokens: captured 8 / 20 = 40 %.
    return [req([1, 2], 0.0, prompt=8, out=0, bs=BS), req([1, 2, 3], 10.0, prompt=12, out=0, bs=BS)]


def test_compare_with_a_shared_tier_names_it_and_splits_the_capture():
    # the delay reaches prefix only (round-robin reads no cache index: pcs.fleet.routers.stale_view_applies)
    res = compare_routers(_reqs(), ["round-robin", "prefix"], instances=2, router_stale_s=5.0,
                          shared_tier="remote=1TB", write_policy="through", **STEP)
    row = res.to_dict()["routers"][0]
    assert row["routing_captured_hit_ratio"] == 0.0
    assert row["captured_hit_ratio"] == 8 / 20
    assert row["shared_tier"].startswith("remote=") and row["shared_tier"].endswith("write-through")
    title = compare_title(res.trace, res.to_dict()["routers"])
    assert "2 instances | view 5.00 s stale for prefix (the others read no cache index) | shared tier remote=" \
        in title
    text = render_router_compare(res.to_dict()["routers"], title)
    assert "captured (shared tier: every instance reads every write)" in text
    assert "captured by routing alone (no shared tier)" in text and "hit ratio served by the shared tier" in text
    assert not any(line.startswith("captured by routing  ") for line in text.splitlines())


def test_compare_without_a_shared_tier_keeps_the_routing_rows():
    res = compare_routers(_reqs(), ["round-robin"], instances=2, **STEP)
    rows = res.to_dict()["routers"]
    assert "shared_tier" not in rows[0] and "routing_captured_hit_ratio" not in rows[0]
    assert compare_title(res.trace, rows).endswith("| 2 instances | exact view")
    text = render_router_compare(rows, compare_title(res.trace, rows))
    assert "captured by routing" in text and "shared tier" not in text


def test_fleet_per_instance_column_is_the_sub_trace_ceiling_with_a_shared_tier():
    s = fleet_replay(_reqs(), instances=2, router="round-robin", shared_tier="remote=1TB", write_policy="through",
                     **STEP).summary.to_dict()
    text = render_fleet(s)
    assert "sub-trace ceiling" in text and "without the shared tier" in text
    plain = render_fleet(fleet_replay(_reqs(), instances=2, router="round-robin", **STEP).summary.to_dict())
    # one name with or without a shared tier (walkthrough F6d): the column is each instance's sub-trace ceiling;
    # the note on the shared tier's reads only with one
    assert "sub-trace ceiling" in plain and "without the shared tier" not in plain
