"""Small helpers shared by the cache/replay tests (not a test module)."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.replay.engine import ReplayEngine, TimeModel
from pcs.replay.stream import iter_chunks

Req = namedtuple("Req", "arrival_s prompt_tokens output_tokens block_size block_hashes")

#: every hash id is a unit and may hit (no last-token cap): hand traces stay short
UNIT_RULES = BlockRules(cache_partial_blocks=True, recompute_last_token=False)


def req(ids, t=0.0, prompt=None, out=0, bs=4):
    """A request over ``ids`` (full blocks of ``bs`` tokens unless ``prompt`` is given)."""
    return Req(float(t), len(ids) * bs if prompt is None else prompt, out, bs, np.array(ids, dtype=np.uint64))


class LinearCompute:
    """Prefill ``a`` s per new token (cached tokens free); decode ``d`` s per token."""

    def __init__(self, a=0.001, d=0.01):
        self.a, self.d = a, d

    def prefill_s(self, new, cached=0):
        return np.asarray(new, dtype=np.float64) * self.a

    def decode_s_per_token(self, ctx):
        return np.full(np.shape(ctx), self.d)


def run(reqs, capacities, policy="lru", timing="sequential", rules=UNIT_RULES, write_policy="back",
        block_bytes=None, compute=None, check=True, names=("gpu", "cpu", "ssd", "remote"), links=None):
    """Replay ``reqs`` through tiers of ``capacities`` blocks; returns (EngineResult, Hierarchy)."""
    policies = policy if isinstance(policy, (list, tuple)) else [policy] * len(capacities)
    tiers = [Tier(n, c, make_policy(p, c)) for n, c, p in zip(names, capacities, policies)]
    h = Hierarchy(tiers, write_policy)
    eng = ReplayEngine(h, timing, block_bytes=block_bytes, check=check, links=links)
    for ch in iter_chunks(reqs, rules, TimeModel(compute) if compute is not None else None):
        eng.feed(ch)
    return eng.close(), h


def stress_trace(seed: int, n: int, bs: int = 4) -> list:
    """A seeded prefix-chained trace: 70 % of requests reuse a prefix of an earlier chain and
    append up to 8 fresh ids; arrivals 0-50 ms apart; outputs 0-30 tokens."""
    import random

    rng = random.Random(seed)
    chains: list[list[int]] = []
    reqs = []
    nxt, t = 0, 0.0
    for _ in range(n):
        ids: list[int] = []
        if chains and rng.random() < 0.7:
            base = rng.choice(chains)
            ids = base[:rng.randint(0, len(base))]
        m = rng.randint(0 if ids else 1, 8)
        ids = ids + list(range(nxt, nxt + m))
        nxt += m
        chains.append(ids)
        t += rng.choice([0.0, 0.002, 0.01, 0.05])
        reqs.append(Req(t, len(ids) * bs - rng.randint(0, bs - 1), rng.randint(0, 30), bs,
                        np.array(ids, dtype=np.uint64)))
    return reqs
