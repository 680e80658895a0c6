"""The replay on the committed sample and the real Mooncake trace against an independent reference
written here from the rules."""
from __future__ import annotations

import json
from collections import OrderedDict

import pytest

from helpers import per_trace, prefix_lookup
from pcs.blocks import BlockRules

CAPACITIES = {"sample": (200, 1000, 4000), "mooncake": (1000, 5000, 20000)}   # blocks


def reference_lru_hit_ratio(requests, capacity: int, rules: BlockRules = BlockRules()) -> float:
    """One LRU tier of ``capacity`` blocks, sequential, written from the rules (not from pcs.cache):

    1. lookup: lead = leading cacheable blocks resident; hits = min(cap, lead);
    2. pin the lead blocks (out of the LRU list), then allocate the new blocks by evicting from the
       LRU end; if they cannot all fit, cache the head that fits;
    3. finish: the request's blocks go back to the LRU list tail first (head most recent).
    """
    lru: OrderedDict[int, None] = OrderedDict()       # unpinned resident blocks, LRU first
    hit_tokens = prompt_tokens = 0
    for r in requests:
        ids, n, cap, lead = prefix_lookup(r, rules, lru)
        p, bs = r.prompt_tokens, r.block_size
        for k in ids[:lead]:                        # pin
            del lru[k]
        new = ids[lead:n][:max(0, capacity - lead)]
        while lru and len(lru) + lead + len(new) > capacity:
            lru.popitem(last=False)
        for k in reversed(ids[:lead] + new):        # release tail first
            lru[k] = None
        hit_tokens += rules.hit_tokens(min(cap, lead), p, bs)
        prompt_tokens += p
    return hit_tokens / prompt_tokens


@pytest.fixture(scope="module")
def trace_requests(exact_trace):
    from pcs.trace import open_trace

    return list(open_trace(exact_trace))


@pytest.mark.parametrize("size", range(3))
def test_hit_ratio_equals_reference(exact_trace, trace_requests, size):
    from pcs.engine.api import replay

    capacity = per_trace(exact_trace, **CAPACITIES)[size]
    s = replay(trace_requests, tiers=[f"gpu={capacity}blocks"], policy="lru", timing="sequential").summary
    expected = reference_lru_hit_ratio(trace_requests, capacity)
    assert s.hit_ratio == expected
    assert s.hit_ratio < s.single_sequence_hit_ratio     # lesson 1: finite cache < infinite
    assert s.gap.concurrency == 0.0


def test_cli_json_and_single_sequence_equal_trace_stats(exact_trace, trace_requests):
    from click.testing import CliRunner

    from pcs.cli.main import cli
    from pcs.trace import open_trace, trace_stats

    capacity = per_trace(exact_trace, **CAPACITIES)[1]
    out = CliRunner().invoke(cli, ["replay", str(exact_trace), "--tier", f"gpu={capacity}blocks", "--policy", "lru",
                                   "--timing", "sequential", "--format", "json", "--quiet"])
    assert out.exit_code == 0, out.output
    s = json.loads(out.stdout)
    assert s["hit_ratio"] == reference_lru_hit_ratio(trace_requests, capacity)
    assert s["single_sequence_hit_ratio"] == trace_stats(open_trace(exact_trace))["single_sequence_hit_ratio"]
    gap = s["gap"]
    assert gap["block_rounding"] + gap["capacity_eviction"] + gap["concurrency"] == pytest.approx(
        s["ideal_hit_ratio"] - s["hit_ratio"], abs=1e-15)


def print_golden() -> None:  # pragma: no cover - helper: `python tests/test_replay_reference.py`
    """Print fresh reference values (after an intended change of the rules)."""
    from conftest import MOONCAKE_CONV
    from pcs.trace import open_trace

    reqs = list(open_trace(MOONCAKE_CONV))
    for c in CAPACITIES:
        print(c, reference_lru_hit_ratio(reqs, c))


if __name__ == "__main__":  # pragma: no cover
    print_golden()
