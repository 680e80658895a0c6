"""Helpers shared by the tests (not a test module; test modules import only this one and
``reference``, the independent replay simulator).

- independent references: ``prefix_lookup`` (one request's lead against a resident set), ``lru_replay`` (a sequential one-tier LRU prefix
  cache written from docs/semantics.md with an OrderedDict), ``brute_force_opt``
  (the best hits over every eviction choice, tiny traces only);
- hypothesis strategies: ``chained_traces`` / ``arbitrary_traces`` (curve
  and scan tests), ``traces`` (cache and engine properties), ``rules_strategy``;
- ``per_trace`` (sizes for the committed sample or the real trace in twin tests),
  ``pcs_policy_name`` (policy names across the renames in flight);
- ``assert_file_error_names`` (a loader's InputError names the file and the field), ``file_input_error`` (the
  InputError a loader raises on a file written from text, to check its line and field);
- small builders: ``req``, ``make_requests``, ``stress_trace``, ``conversation_trace`` (multi-turn
  chats), ``run`` (a replay through Python tiers), ``LinearCompute`` and ``DyadicCompute`` (simple
  compute models);
- hand-traced constants (``HAND_*``, ``CYCLE_SPEC``) with their working;
- ``flat_hits``: a flat key stream through one pcs tier (the policies' libCacheSim stream);
- twin equality: ``hierarchy_state``, ``admission_fields``, ``drive_direct_calls`` + ``finish_and_check``,
  ``assert_twin_runs_equal``, ``tables_equal``; compiled-hierarchy twins: ``trace_context``, ``twin_tiers``,
  ``twin_hierarchy``, ``engine_run``, ``replay_twins``, ``STRESS_CASES``, ``TWIN_TRACE_CASES``, ``twin_trace_case``,
  ``assert_trace_replays_equal``; step-scheduler twins: ``STEP_TIME_S``, ``step_times``, ``step_setups``,
  ``step_flags``; hybrid groups: ``group_sets``; fleets with a shared tier:
  ``FLEET_TIERS``, ``assert_empty_shared_tier_is_plain``, ``assert_one_instance_is_single_replay``;
- ``pcs_parquet``: a pcs Parquet trace (Mooncake, 512-token blocks) written from its four columns;
- process-wide state: ``in_fresh_process`` (a test body run in a new interpreter);
- the step loops' prefill tables: ``room_spy`` (which of ``pcs.engine.chunks._room``'s calls moved a table).
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine
from pcs.engine.timing import TimeModel
from pcs.errors import InputError

BS = 4  # tokens per block in the synthetic traces


def pcs_policy_name(name: str) -> str:
    """The pcs name of a policy: ``slru`` is registered as ``protected`` until the rename lands."""
    from pcs.cache.policies import POLICY_NAMES

    return name if name in POLICY_NAMES or name != "slru" else "protected"


def per_trace(path, *, sample, mooncake):
    """The value for the trace an ``exact_trace`` test runs on: ``sample`` for the committed
    ``traces/sample_exact.jsonl`` (14,415 distinct blocks), ``mooncake`` for the real
    conversation trace (182,790): capacities scale with the trace."""
    return sample if Path(path).name == "sample_exact.jsonl" else mooncake


@dataclass(frozen=True)
class TraceReq:
    """Duck-typed pcs.trace.Request: what curve(), single_sequence_hits() read."""

    prompt_tokens: int
    block_hashes: np.ndarray
    block_size: int = BS
    output_tokens: int = 1
    arrival_s: float = 0.0


def make_requests(spec: list[tuple[list[int], int]], bs: int = BS) -> list[TraceReq]:
    """[(ids, prompt_tokens)] -> requests; ids must have ceil(P / bs) entries."""
    out = []
    for i, (ids, p) in enumerate(spec):
        assert len(ids) == -(-p // bs), (ids, p)
        out.append(TraceReq(p, np.asarray(ids, dtype=np.uint64), bs, arrival_s=float(i)))
    return out


def prefix_lookup(req, rules: BlockRules, resident) -> tuple[list[int], int, int, int]:
    """(ids, cacheable blocks n, hit cap in blocks, lead) of one request against ``resident`` (a container of
    ids): lead = leading cacheable blocks resident (the prefix rule, docs/semantics.md §3; cap: §4)."""
    ids = req.block_hashes.tolist()
    p, bs = req.prompt_tokens, req.block_size
    n = rules.cacheable_blocks(p, len(ids), bs)
    cap = rules.max_hit_blocks(p, len(ids), bs)
    lead = 0
    while lead < n and ids[lead] in resident:
        lead += 1
    return ids, n, cap, lead


def lru_replay(requests, capacity: int, rules: BlockRules = BlockRules()) -> tuple[int, int, int]:
    """(hit_tokens, block_misses, requests_truncated) of the sequential LRU replay."""
    cache: OrderedDict[int, None] = OrderedDict()  # first = LRU, last = MRU
    hit_tokens = misses = truncated = 0
    for req in requests:
        hashes, n, cap, lead = prefix_lookup(req, rules, cache)
        p, bs = req.prompt_tokens, req.block_size
        hit_tokens += rules.hit_tokens(min(cap, lead), p, bs)
        misses += n - lead
        pinned = set(hashes[:lead])
        held = hashes[:lead]
        for h in hashes[lead:n]:
            if h not in cache:
                if len(cache) >= capacity:
                    victim = next((k for k in cache if k not in pinned), None)
                    if victim is None:
                        truncated += 1
                        break
                    del cache[victim]
                cache[h] = None
            pinned.add(h)
            held.append(h)
        for h in reversed(held):  # tail first, head last: the head ends MRU
            cache.move_to_end(h)
        assert len(cache) <= capacity
    return hit_tokens, misses, truncated


def brute_force_opt(requests, capacity: int, rules: BlockRules = BlockRules(), leaves_only: bool = True) -> int:
    """Max token-weighted hits over all eviction choices (tiny chained traces only).

    Same mechanics as the replay (pins, forced insertion of new blocks,
    truncation when nothing is evictable); each eviction may pick any
    unpinned block (``leaves_only``: only those with no resident child).
    """
    reqs, parent = [], {}
    for req in requests:
        hashes = [int(h) for h in req.block_hashes]
        p, bs = req.prompt_tokens, req.block_size
        n = rules.cacheable_blocks(p, len(hashes), bs)
        cap = rules.max_hit_blocks(p, len(hashes), bs)
        weights = [rules.hit_tokens(i + 1, p, bs) - rules.hit_tokens(i, p, bs) if i < cap else 0 for i in range(n)]
        for i in range(1, n):
            assert parent.setdefault(hashes[i], hashes[i - 1]) == hashes[i - 1], "ids must be chained"
        reqs.append((tuple(hashes[:n]), tuple(weights)))

    def allocations(ids, j, resident, pinned):
        if j == len(ids):
            yield resident
            return
        x = ids[j]
        if x in resident:
            yield from allocations(ids, j + 1, resident, pinned | {x})
            return
        if len(resident) < capacity:
            yield from allocations(ids, j + 1, resident | {x}, pinned | {x})
            return
        victims = [v for v in resident if v not in pinned
                   and not (leaves_only and any(parent.get(c) == v for c in resident))]
        if not victims:
            yield resident  # truncated: the request keeps its head only
            return
        for v in victims:
            yield from allocations(ids, j + 1, (resident - {v}) | {x}, pinned | {x})

    @lru_cache(maxsize=None)
    def best(r: int, resident: frozenset) -> int:
        if r == len(reqs):
            return 0
        ids, weights = reqs[r]
        lead = 0
        while lead < len(ids) and ids[lead] in resident:
            lead += 1
        gain = sum(weights[:lead])
        return gain + max(best(r + 1, s) for s in allocations(ids, lead, resident, frozenset(ids[:lead])))

    return best(0, frozenset())


@st.composite
def chained_traces(draw, max_requests: int = 14, max_blocks: int = 6):
    """Requests whose ids form a prefix tree: each request copies a prefix of
    an earlier one (or nothing) and appends fresh ids, as chained hashes do."""
    chains: list[list[int]] = []
    spec = []
    fresh = 1000
    for _ in range(draw(st.integers(1, max_requests))):
        nblocks = draw(st.integers(0, max_blocks))
        base: list[int] = []
        if chains and draw(st.booleans()):
            src = chains[draw(st.integers(0, len(chains) - 1))]
            base = src[: draw(st.integers(0, min(len(src), nblocks)))]
        ids = base + list(range(fresh, fresh + nblocks - len(base)))
        fresh += nblocks
        chains.append(ids)
        p = 0 if nblocks == 0 else draw(st.integers((nblocks - 1) * BS + 1, nblocks * BS))
        spec.append((ids, p))
    return make_requests(spec)


@st.composite
def arbitrary_traces(draw, max_requests: int = 12, max_blocks: int = 5, alphabet: int = 6):
    """Requests with ids drawn from a small alphabet: repeats and ids under
    different parents included (not chained hashes)."""
    spec = []
    for _ in range(draw(st.integers(1, max_requests))):
        nblocks = draw(st.integers(0, max_blocks))
        ids = draw(st.lists(st.integers(0, alphabet - 1), min_size=nblocks, max_size=nblocks))
        p = 0 if nblocks == 0 else draw(st.integers((nblocks - 1) * BS + 1, nblocks * BS))
        spec.append((ids, p))
    return make_requests(spec)


rules_strategy = st.builds(BlockRules, cache_partial_blocks=st.booleans(), recompute_last_token=st.booleans())

# A hand-traced trace (BS = 4). Per request: ids, P -> n cacheable, cap:
#   r0 [1,2,3]   P=12 -> n=3 (12//4), cap=min(3, 11//4)=2
#   r1 [1,2,4]   P=10 -> n=2,          cap=min(2, 9//4)=2
#   r2 [1,5]     P=8  -> n=2,          cap=min(2, 7//4)=1
#   r3 [1,2,3,6] P=13 -> n=3,          cap=min(3, 12//4)=3
# Stack after each request (MRU first; stamped tail first, head last):
#   r0: 1 2 3    r1 depths 1:0 2:1 -> 1 2 3
#   r2 depths 1:0 5:cold -> 1 5 2 3      r3 depths 1:0 2:2 3:3
# Hits (tokens) per capacity C = sum over requests of 4 * min(cap, lead):
#   C=1: r1 4 + r2 4 + r3 4 = 12;  C=2: 8 + 4 + 4 = 16;  C=3: 8 + 4 + 8 = 20;
#   C>=4: 8 + 4 + 12 = 24 (the ceiling). Prompt tokens 12+10+8+13 = 43.
# Block misses (n - lead): r0 3 always; C=1: 3+1+1+2 = 7; C>=4: 3+0+1+0 = 4.
# At C=2 r0 (n=3) is truncated: 1 and 2 are pinned when 3 needs a slot; so
# is r3 (lead 1; 2 evicts 5; then 1 and 2 are pinned when 3 needs a slot).
HAND_SPEC = [([1, 2, 3], 12), ([1, 2, 4], 10), ([1, 5], 8), ([1, 2, 3, 6], 13)]
HAND_HITS = {0: 0, 1: 12, 2: 16, 3: 20, 4: 24, 10: 24}
HAND_MISSES = {1: 7, 4: 4}
HAND_PROMPT = 43
CYCLE_SPEC = [([i, 100 + k], 5) for k, i in enumerate((1, 2, 3, 1, 2, 3, 1))]

ALL_RULES = [BlockRules(), BlockRules(True, False), BlockRules(False, False), BlockRules(True, True)]
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

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


class DyadicCompute:
    """A linear compute model whose constants are powers of two (sums stay exact in binary).

    prefill_s(new, cached) = new x 2^-14 s + cached x 2^-18 s (61 us per computed token,
    3.8 us per cached one); decode_s_per_token(context) = 2^-7 s + context x 2^-20 s
    (7.8 ms per step plus 0.95 us per context token). Numpy-broadcastable, so pcs's
    ``TimeModel`` and the reference (``tests/reference.py``) call the same object.
    """

    A, B, C0, C1 = 2.0 ** -14, 2.0 ** -18, 2.0 ** -7, 2.0 ** -20

    def prefill_s(self, new, cached=0):
        return new * self.A + cached * self.B

    def decode_s_per_token(self, ctx):
        return self.C0 + ctx * self.C1


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


@st.composite
def traces(draw, max_requests=20):
    chains: list[list[int]] = []
    reqs = []
    nxt = 0
    t = 0.0
    for _ in range(draw(st.integers(1, max_requests))):
        ids: list[int] = []
        if chains and draw(st.booleans()):
            base = chains[draw(st.integers(0, len(chains) - 1))]
            ids = base[:draw(st.integers(0, len(base)))]
        m = draw(st.integers(0 if ids else 1, 5))
        ids = ids + list(range(nxt, nxt + m))
        nxt += m
        chains.append(ids)
        prompt = len(ids) * BS - draw(st.integers(0, BS - 1))
        t += draw(st.sampled_from([0.0, 0.001, 0.004, 0.02, 0.2]))
        reqs.append(Req(t, prompt, draw(st.integers(0, 9)), BS, np.array(ids, dtype=np.uint64)))
    return reqs


# --- the CLI as a user meets it (tests/cli/test_hostile_*.py) --------------------------------------------

#: A hand trace for the decode pass with next turns: (ids, arrival s, prompt, output) a request, block size 4
#: (tests/engine/test_decoded_ahead.py writes it as JSONL, timestamps in ms; test_decoded_parquet_here.py as
#: Parquet). Next turns (docs/semantics.md §9): r0 (f = 10 // 4 = 2 full blocks, id 2 at position 1, p + o = 13)
#: -> r4 (position 1 holds 2, 20 >= 13): its decode blocks are positions 2 .. (13 - 1) // 4 - 1 = 2, r4's id
#: there: [3]. r1 (f = 2, p + o = 8) -> r4 too, positions 2 .. 1: none. r2 (f = 1, id 1 at position 0, p + o = 9)
#: -> r4 (position 0 holds 1): positions 1 .. (9 - 1) // 4 - 1 = 1: [2]. r3 (f = 0) takes no part; r4 has no later
#: request. So 3 pairs, ids for r0 and r2.
DECODE_HAND = [([1, 2, 3], 0.0, 10, 3), ([1, 2], 1.0, 8, 0), ([1, 5], 2.0, 5, 4), ([7], 3.0, 3, 2),
               ([1, 2, 3, 4, 6], 4.0, 20, 1)]
#: Its cacheable blocks min(P // 4, ids) and max hit min(cacheable, (P - 1) // 4) per request (default rules,
#: docs/semantics.md §2, §4), and its prefill table: a request's row (P - min(4 h, P)) x 0.001 s for h = 0 .. max
#: hit (LinearCompute), the rows one after the other.
DECODE_HAND_CACHEABLE, DECODE_HAND_MAX_HIT = [2, 2, 1, 0, 5], [2, 1, 1, 0, 4]
DECODE_HAND_TABLE = [0.010, 0.006, 0.002, 0.008, 0.004, 0.005, 0.001, 0.003, 0.020, 0.016, 0.012, 0.008, 0.004]


def check_decoded_hand(src, rules, timing) -> None:
    """Assert what :class:`pcs.engine.decoded.Decoded` of :data:`DECODE_HAND` holds (one batch of 5 rows, the next
    turns worked out above, one chunk with the hand cacheable / max-hit blocks and prefill table), ``rules`` and
    ``timing`` the chunk pieces' (default BlockRules, LinearCompute)."""
    assert [len(b) for b in src.batches] == [5]
    b = src.batches[0]
    assert b.prompt_tokens.tolist() == [10, 8, 5, 3, 20] and b.arrival_s.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert b.block_hashes.tolist() == [1, 2, 3, 1, 2, 1, 5, 7, 1, 2, 3, 4, 6]
    nt = src.next_turns
    assert (nt.index.tolist(), nt.starts.tolist(), nt.ids.tolist(), nt.pairs, nt.requests) == \
        ([0, 2], [0, 1, 2], [3, 2], 3, 5)
    (ch,) = list(src.made_chunks(rules, timing, False))
    assert (ch.cacheable, ch.max_hit_blocks) == (DECODE_HAND_CACHEABLE, DECODE_HAND_MAX_HIT)
    assert ch.arrays[7].tolist() == pytest.approx(DECODE_HAND_TABLE, rel=1e-12, abs=0)


def beside_workers(before: set) -> list:
    """The ``pcs-beside`` worker threads alive now that were not in ``before`` (a set of threads)."""
    import threading

    return [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


ROOT = Path(__file__).resolve().parents[1]
#: 8 Mooncake requests, 512-token blocks (traces/formats/, sources in traces/README.md): fast to replay.
SMALL_TRACE = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"
#: 8 rows of the Azure 2023 conversation CSV (lengths only: reuse synthesised).
SMALL_AZURE = ROOT / "traces" / "formats" / "azure2023_conv_8.csv"


def invoke(*args, input=None):
    """``pcs ARGS`` in this process (click's runner; stdout and stderr apart)."""
    from click.testing import CliRunner

    from pcs.cli.main import cli

    return CliRunner().invoke(cli, [str(a) for a in args], input=input)


def invoke_json(*args):
    """``pcs ARGS --format json --quiet`` in this process: exit 0 asserted, the printed JSON parsed."""
    import json

    r = invoke(*args, "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def assert_one_line_error(result, *needles) -> str:
    """Exit 2, nothing on stdout, one line ``pcs: error: ...`` on stderr holding every needle; returns it."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pcs: error:"), result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def all_commands():
    """``[(["trace", "stats"], command), ...]``: every leaf command of ``pcs``, subcommands included."""
    import click

    from pcs.cli.main import cli

    out = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), path + [name])
        else:
            out.append((path, cmd))

    walk(cli, [])
    return out


def flat_hits(policy: str, capacity: int, keys, context=None) -> list[bool]:
    """A flat key stream through ONE pcs tier, sequential, one block per request (each key a
    one-block request: lookup, pin or reserve + fill, release): per key, hit or not.

    The stream on which the policies' block-cache semantics coincide with a flat cache of
    unit objects (libCacheSim, ``policy_reference``): nothing is pinned when a victim is chosen,
    and every miss evicts at most one block, for the one key about to be stored.
    """
    h = Hierarchy([Tier("gpu", capacity, make_policy(policy, capacity, context))])
    out = []
    for k in keys:
        adm = h.start([k], 1, 1, 0, False)
        out.append(adm.prefix_hit_blocks == 1)
        h.prefill_done(adm)
        h.finish(adm)
    return out


# --- the step scheduler (tests/engine/test_scheduler_*.py) -------------------------------------------------

def step_cost(token_s=0.001, weights_s=0.0, kv_token_s=0.0, attn_pair_s=0.0, attn_token_s=0.0, layers=1):
    """A :class:`pcs.compute.StepCost` with only the named coefficients (the rest 0)."""
    from pcs.compute import StepCost

    return StepCost(weights_active_s=weights_s, weights_total_s=weights_s, kv_seq_s=0.0, kv_token_s=kv_token_s,
                    token_s=token_s, attn_seq_s=0.0, attn_token_s=attn_token_s, attn_pair_s=attn_pair_s,
                    layers=layers)


class DyadicLink:
    """A link whose times are dyadic: setup 2^-12 s, 2^-20 s per byte (io size ignored)."""

    setup_s = 2.0 ** -12

    def transfer_s(self, num_bytes, io_size_bytes=None):
        return self.setup_s + num_bytes * 2.0 ** -20


def step_run(reqs, capacities, cost, budget=8, seqs=8, restore_policy="layerwise", rules=BlockRules(),
             links=None, block_bytes=None, compute=None, decode=None, skip=True, check=True, native=False,
             write_policy="back", hierarchy=None, engine=None, **config):
    """Replay ``reqs`` with the step scheduler over LRU tiers of ``capacities`` blocks; returns the engine
    (closed: ``engine.result`` holds the EngineResult; ``engine.steps_log`` every advance). ``hierarchy``:
    another hierarchy than the tiers' (``capacities`` then names only its tiers' count); ``engine``: a
    StepEngine subclass."""
    from pcs.cache.native import NativeHierarchy
    from pcs.engine.schedconfig import SchedulerConfig
    from pcs.engine.scheduler import StepEngine

    names = ("gpu", "cpu", "ssd")[:len(capacities)]
    tiers = [Tier(n, c, make_policy("lru", c)) for n, c in zip(names, capacities)]
    if hierarchy is not None:
        h = hierarchy
    else:
        h = NativeHierarchy(tiers, write_policy) if native else Hierarchy(tiers, write_policy)
    config.setdefault("restore_timeout_per_token_s", 0.0)
    cfg = SchedulerConfig(max_num_batched_tokens=budget, max_num_seqs=seqs, restore_policy=restore_policy,
                          cache_decode_blocks=decode is not None, **config)
    eng = (engine or StepEngine)(h, links or [None] * len(tiers), block_bytes or [0] * len(tiers), cost, cfg,
                     rules.recompute_last_token, decode, check=check, skip=skip, log_steps=True)
    for ch in iter_chunks(reqs, rules, TimeModel(compute) if compute is not None else None):
        eng.feed(ch)
    eng.result = eng.close()
    return eng


def assert_file_error_names(tmp_path, name: str, text: str, load, where: str) -> None:
    """Write ``text`` to ``tmp_path / name``; ``load(path)`` must raise an InputError naming the path and
    ``field '<where>'`` (the input-error rule: one line naming file and field)."""
    err = file_input_error(tmp_path, name, text, load)
    assert str(tmp_path / name) in str(err) and f"field '{where}'" in str(err)


def file_input_error(tmp_path, name: str, text: str, load) -> InputError:
    """Write ``text`` to ``tmp_path / name``: the InputError ``load(path)`` raises (the test fails without one)."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load(path)
    return err.value


def tables_equal(a, b, drop=()) -> None:
    """Two requests tables (pyarrow) equal: the same columns in the same order (``a`` may have the columns
    ``drop`` besides), each equal value by value, NaN equal to NaN (the step scheduler's columns hold NaN;
    pyarrow's ``equals`` says no)."""
    assert set(drop) <= set(a.column_names) and not set(drop) & set(b.column_names), drop
    assert [c for c in a.column_names if c not in drop] == b.column_names
    for c in b.column_names:
        x, y = (t.column(c).to_numpy(zero_copy_only=False) for t in (a, b))
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), c


def assert_twin_runs_equal(a, ha, b, hb) -> None:
    """Two engine runs (:class:`pcs.engine.engine.ReplayEngine` results ``a``, ``b`` over hierarchies ``ha``
    -- the Python reference -- and ``hb`` -- its compiled twin) are equal: ledger, every per-request column
    byte for byte (NaN == NaN as bytes) and the hierarchies' end states (:func:`hierarchy_state`)."""
    assert a.ledger == b.ledger
    as_bytes = lambda cols: {k: v.tobytes() for k, v in cols.items()}  # noqa: E731
    assert as_bytes(a.columns) == as_bytes(b.columns)
    assert hierarchy_state(ha) == hierarchy_state(hb)


#: One per-step time of a drawn :class:`pcs.compute.StepCost` (s).
STEP_TIME_S = st.floats(1e-7, 1e-2, allow_nan=False)


@st.composite
def step_times(draw) -> dict:
    """The per-step times (s, each :data:`STEP_TIME_S`) of a StepCost of the step-scheduler twin tests, all but
    ``attn_pair_s`` and ``layers`` (each test draws those its way)."""
    return {k: draw(STEP_TIME_S) for k in ("weights_active_s", "weights_total_s", "kv_seq_s", "kv_token_s",
                                           "token_s", "attn_seq_s", "attn_token_s")}


@st.composite
def step_setups(draw, min_gpu_blocks: int, min_budget: int) -> tuple:
    """(requests, tier capacities, token budget, links) of a step-scheduler twin test: up to 20 :func:`traces`
    requests; 1-3 tiers, the GPU's ``min_gpu_blocks``-24 blocks, each lower one's 0-40; a budget of
    ``min_budget``-24 tokens a step; links: None for the GPU tier, then per lower tier None (the tier's default)
    or a LinkSpec of 1e5-1e11 B/s, 0-1 ms setup and maybe an IOPS limit (10-1e6 at 4096 B)."""
    from pcs.hardware import LinkSpec
    reqs = draw(traces(max_requests=20))
    ntiers = draw(st.integers(1, 3))
    caps = [draw(st.integers(min_gpu_blocks, 24))] + [draw(st.integers(0, 40)) for _ in range(ntiers - 1)]
    budget = draw(st.integers(min_budget, 24))
    link = st.one_of(st.none(), st.builds(lambda bw, s, iops: LinkSpec("t", bw, s, iops, 4096 if iops else None,
                                                                       "test"),
                                          st.floats(1e5, 1e11), st.floats(0, 1e-3),
                                          st.one_of(st.none(), st.floats(10, 1e6))))
    return reqs, caps, budget, [None] + draw(st.lists(link, min_size=ntiers - 1, max_size=ntiers - 1))


@st.composite
def step_flags(draw, caps) -> dict:
    """The scheduler switches both step-scheduler twin tests draw: fallback, preemptions (0-3), decode, event
    skipping, write policy, no cache, bytes per block per tier (``caps``: the tiers), last-token recompute."""
    return dict(fallback=draw(st.booleans()), max_preemptions=draw(st.integers(0, 3)), decode=draw(st.booleans()),
                skip=draw(st.booleans()), write_policy=draw(st.sampled_from(["back", "through"])),
                no_cache=draw(st.booleans()), block_bytes=[draw(st.sampled_from([0, 256, 4096, 65536])) for _ in caps],
                last_token=draw(st.booleans()))


def twin_tiers(caps, specs, admits=None, ctx=None) -> list:
    """Tiers ``t0``, ``t1``, ... of ``caps[j]`` blocks, eviction spec ``specs[j]``; ``admits[j]``: tier j's
    ``+``-joined admission specs or None (``admits`` None: no admission anywhere); ``ctx``: the trace context
    (a :class:`pcs.cache.policies.PolicyContext` or None), one fresh clock per call as pcs.replay builds one per
    hierarchy. Policies and admissions that read no trace ignore ``ctx``."""
    from pcs.cache.admission import apply_admission
    ctx = ctx.fresh() if ctx is not None else None
    tiers = []
    for j, (c, s) in enumerate(zip(caps, specs)):
        adm = admits[j] if admits else None
        p, a = apply_admission(adm.split("+") if adm else (), make_policy(s, c, ctx), ctx)
        tiers.append(Tier(f"t{j}", c, p, a))
    return tiers


def tier_configs(specs):
    """The twin tests' drawn set-up: ([(capacity 0-12 blocks, spec from ``specs``)] for 1-3 tiers, timing, block
    rules, write policy)."""
    return st.tuples(st.lists(st.tuples(st.integers(0, 12), st.sampled_from(specs)), min_size=1, max_size=3),
                     st.sampled_from(["sequential", "modeled"]), st.sampled_from(ALL_RULES),
                     st.sampled_from(["back", "through"]))


def trace_context(reqs, rules: BlockRules, cost: bool = True):
    """The trace pre-pass of ``reqs`` (:class:`TraceOracle`: chain parents and depths, future uses) as a policy
    context; block cost 1 + depth / 8 s (every depth a different cost, ties in H within a depth), or none
    (``cost`` False: every block 1 s)."""
    from pcs.cache.policies import PolicyContext
    from pcs.cache.policies.context import TraceOracle
    return PolicyContext(TraceOracle.build(iter_chunks(reqs, rules)), (lambda d: 1.0 + d / 8) if cost else None)


def twin_hierarchy(tiers, wp: str, use_native: bool):
    """The compiled twin over ``tiers`` (``use_native``) or the Python reference, wrapped by ``clocked`` so its
    policies' shared clock follows admissions (the compiled one counts its own; without a clock: unwrapped)."""
    from pcs.cache.native import NativeHierarchy
    from pcs.cache.policies.context import clocked
    return NativeHierarchy(tiers, wp) if use_native else clocked(Hierarchy(tiers, wp))


def engine_run(h, reqs, timing: str, rules: BlockRules, check: bool = True):
    """``reqs`` through the event loop over hierarchy ``h`` (7 bytes a block per tier, :class:`LinearCompute`),
    ``_check`` after every step when ``check``: the EngineResult."""
    eng = ReplayEngine(h, timing, block_bytes=[7] * len(h.tiers), check=check)
    for ch in iter_chunks(reqs, rules, TimeModel(LinearCompute())):
        eng.feed(ch)
    return eng.close()


def replay_twins(reqs, caps, specs, timing: str, rules: BlockRules, wp: str, admits=None, ctx=None,
                 check: bool = True):
    """Replay ``reqs`` on the Python hierarchy and on its compiled twin, each over fresh :func:`twin_tiers`
    (``caps``, ``specs``, ``admits``, ``ctx``), and assert them equal (:func:`assert_twin_runs_equal`): returns
    (the reference's EngineResult, the compiled hierarchy). ``check``: each hierarchy's ``_check`` after every step;
    False: once, at the end (a per-step check walks every tier: O(steps x blocks) on tiers of thousands)."""
    runs = []
    for use_native in (False, True):
        h = twin_hierarchy(twin_tiers(caps, specs, admits, ctx), wp, use_native)
        runs += [engine_run(h, reqs, timing, rules, check), h]
        check or h._check()
    assert_twin_runs_equal(*runs)
    return runs[0], runs[3]


#: The seeded stress grid of the twin tests: (tier capacities in blocks, timing, write policy); the 6-block GPU
#: tier truncates long requests of :func:`stress_trace`, the 9-block CPU tier overflows.
STRESS_CASES = [(caps, timing, wp) for caps in ([40, 60, 80], [6, 20, 30], [6, 9])
                for timing in ("sequential", "modeled") for wp in ("back", "through")]

#: The pcs.replay cases of the twin tests, per trace (:func:`per_trace`): (timing, write policy, tiers).
TWIN_TRACE_CASES = {"mooncake": [("modeled", "back", ["gpu=400GB", "cpu=2TB"]),
                                 ("sequential", "through", ["gpu=100GB", "cpu=1TB"]),
                                 ("modeled", "back", ["gpu=20GB", "cpu=200GB", "ssd=1TB"])],
                    "sample": [("modeled", "back", ["gpu=100GB", "cpu=500GB"]),
                               ("sequential", "through", ["gpu=25GB", "cpu=250GB"]),
                               ("modeled", "back", ["gpu=20GB", "cpu=50GB", "ssd=250GB"])]}


def twin_trace_case(path, case: int, mixed: bool, cases=TWIN_TRACE_CASES) -> tuple:
    """(timing, write policy, tiers) of ``case`` for the trace at ``path``; on the Mooncake trace (30-60 s per
    pair of replays) only case 0 runs unless ``mixed`` (the others skip)."""
    if Path(path).name != "sample_exact.jsonl" and case and not mixed:
        pytest.skip("on the Mooncake trace: case 0 each, every case for the mixed one")
    return per_trace(path, **cases)[case]


def assert_trace_replays_equal(path, **kw) -> tuple:
    """``pcs.replay(path, **kw)`` by the reference engine and by ``auto``, which must pick the compiled step
    scheduler (modeled timing) or the compiled hierarchy (sequential): per-request tables byte-identical (NaN
    finish_s of sequential runs equal as bytes), summaries equal but for the keys naming the engine. Returns
    (reference, auto) results."""
    import dataclasses
    from pcs.engine.api import replay
    from pcs.engine.select import SUMMARY_KEYS
    a = replay(path, engine="reference", **kw)
    b = replay(path, engine="auto", **kw)
    assert (a.summary.engine, b.summary.engine) == ("reference", "compiled-step" if kw["timing"] == "modeled"
                                                     else "compiled-hierarchy")
    assert a.requests.column_names == b.requests.column_names
    for name in a.requests.column_names:
        assert a.requests[name].to_numpy().tobytes() == b.requests[name].to_numpy().tobytes(), name
    unnamed = {k: None for k in SUMMARY_KEYS}
    assert dataclasses.replace(a.summary, **unnamed) == dataclasses.replace(b.summary, **unnamed)
    return a, b


class HandTrace:
    """A hand-written trace: ``rows`` of (arrival_s, ids); every prompt is 2 full blocks + 1 token (the first two
    ids cacheable and hittable, §2, §4: hits capped at 2 blocks; the third partial), ``output_tokens`` each."""

    name = "<hand>"

    def __init__(self, rows, bs: int = 4, output_tokens: int = 0):
        from pcs.trace.request import RequestBatch

        ids = [list(r[1]) for r in rows]
        offs = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in ids], out=offs[1:])
        n = len(rows)
        self.block_size = bs
        self.batch = RequestBatch(0, bs, np.array([float(r[0]) for r in rows]), np.full(n, 2 * bs + 1),
                                  np.full(n, output_tokens, dtype=np.int64), offs,
                                  np.array([i for x in ids for i in x], dtype=np.uint64))

    def iter_batches(self):
        yield self.batch


def hierarchy_state(h) -> tuple:
    """Everything observable of a tier hierarchy's end state (Python or compiled): residents, each policy's
    order, per-tier stats, reserved and pinned counts, written and dropped blocks."""
    return ([dict(t.resident) for t in h.tiers], [t.policy.order() for t in h.tiers],
            [(t.stats, t.reserved_blocks, t.num_pinned, len(t.policy)) for t in h.tiers],
            list(h.written_blocks), h.dropped_blocks)


def admission_fields(a) -> tuple:
    """Every observable field of one Admission (Python or compiled), for equality between twins."""
    return (a.prefix_hit_blocks, a.hit_blocks, list(a.hit_blocks_per_tier), a.last_hit_tier,
            list(a.restored_blocks_per_tier), bool(a.truncated), list(a.pinned_hashes), list(a.computed_hashes),
            a.reserved_blocks)


def drive_direct_calls(hs: list, chains: list, wait: bool) -> None:
    """Drive two hierarchies (the Python reference and a compiled twin) with the same direct calls -- start
    (request r skips r % 2 tail blocks, r % 3 extra slots), abort, prefill_done, grow, finish, requests left
    running -- and assert after each step that every Admission field and the end state agree."""
    running: list[list] = [[], []]
    for r, keys in enumerate(chains):
        n = len(keys)
        outs = [h.start(keys, n, max(0, n - r % 2), r % 3, wait) for h in hs]
        if outs[0] is None or outs[1] is None:
            assert outs[0] is None and outs[1] is None
        else:
            f = admission_fields
            assert f(outs[0]) == f(outs[1])
            for h, a, run in zip(hs, outs, running):
                if r % 3 == 2:          # preempted before its prefill: its pins dropped, its blocks not cached
                    h.abort(a)
                else:
                    h.prefill_done(a)
                    run.append(a)
        if r % 4 == 1 and running[0]:   # the oldest running request decodes into r % 3 more slots (may not fit)
            assert [h.grow(run[0], r % 3) for h, run in zip(hs, running)] in ([True, True], [False, False])
        finish_and_check(hs, running, r)


def finish_and_check(hs: list, running: list[list], r: int) -> None:
    """The end of step ``r`` of a twin drive: on odd steps each hierarchy finishes its oldest running request
    (``running[i]`` is hierarchy i's admissions in start order), then every hierarchy's ``_check()`` (the
    invariants) runs and all their end states (:func:`hierarchy_state`) must be equal."""
    if r % 2:                       # finish the oldest running request every other step
        for h, run in zip(hs, running):
            if run:
                h.finish(run.pop(0))
    for h in hs:
        h._check()
    states = [hierarchy_state(h) for h in hs]
    assert all(s == states[0] for s in states[1:])


@st.composite
def group_sets(draw, min_window: int = 1):
    """Hybrid cache groups (:class:`pcs.cache.groups.CacheGroup`): full attention (maybe) plus 1-3 of window /
    chunk / state, random spans (window ``min_window``-14 tokens, chunk 2-12, state 1-3 blocks of ``BS``) and
    pages per block, one layer each."""
    from pcs.cache.groups import CacheGroup
    kinds = draw(st.lists(st.sampled_from(["window", "chunk", "state"]), min_size=1, max_size=3, unique=True))
    groups = []
    if draw(st.booleans()) or len(kinds) == 1:
        groups.append(CacheGroup("full_attention", "full", ("full_attention",), BS, 0, draw(st.integers(1, 2)),
                                 layers=1))
    for kind in kinds:
        span = {"window": st.integers(min_window, 14), "chunk": st.integers(2, 12),
                "state": st.sampled_from([BS, 2 * BS, 3 * BS])}[kind]
        groups.append(CacheGroup(kind, kind, (kind,), BS, draw(span), draw(st.integers(1, 3)), layers=1,
                                 align=kind == "state" and draw(st.booleans())))
    return groups


#: Private tiers of the shared-tier fleet properties (tests/fleet/test_shared_tier.py, test_shared_step.py).
FLEET_TIERS = st.sampled_from([["gpu=24blocks", "cpu=40blocks"], ["gpu=12blocks"], ["gpu=30blocks", "cpu=8blocks"]])


def assert_empty_shared_tier_is_plain(reqs, **kw) -> None:
    """A fleet (``pcs.fleet_replay(reqs, **kw)``) with a 0-block shared tier equals the same fleet without one
    (docs/semantics.md §17.1: an empty shared tier holds nothing): per-instance figures, hit ratio, TTFT p50
    and p99, the per-request table but for its remote-hit column; the shared tier served and held nothing."""
    from pcs.fleet import fleet_replay
    plain = fleet_replay(reqs, **kw)
    zero = fleet_replay(reqs, shared_tier="remote=0blocks", **kw)
    assert [x.to_dict() for x in zero.summary.per_instance] == [x.to_dict() for x in plain.summary.per_instance]
    assert zero.summary.hit_ratio == plain.summary.hit_ratio
    assert zero.summary.ttft_p50_s == plain.summary.ttft_p50_s
    assert zero.summary.ttft_p99_s == plain.summary.ttft_p99_s
    tables_equal(zero.requests, plain.requests, drop=("hit_tokens_remote",))
    assert zero.summary.shared_tier.hit_tokens == 0 and zero.summary.shared_tier.peak_resident_blocks == 0


def assert_one_instance_is_single_replay(reqs, tiers: list, shared_blocks: int, **kw) -> None:
    """A one-instance fleet with a shared tier of ``shared_blocks`` equals the single replay whose lowest tier
    is that tier (docs/semantics.md §17.1) -- request table, hit ratio, the shared tier's peak -- whenever no
    restore's lease had to spare a block (the single replay has no leases; the fleet counts them)."""
    import pcs
    from pcs.fleet import fleet_replay
    shared = f"remote={shared_blocks}blocks"
    f = fleet_replay(reqs, instances=1, router="round-robin", tiers=tiers, shared_tier=shared, **kw)
    one = pcs.replay(reqs, tiers=tiers + [shared], **kw)
    if f.summary.shared_tier.lease_spared_blocks == 0:
        tables_equal(f.requests, one.requests, drop=("instance",))
        assert f.summary.hit_ratio == one.summary.hit_ratio
        assert f.summary.shared_tier.peak_resident_blocks == one.summary.tiers[-1].resident_blocks_peak


def assert_group_states_equal(ref, nat) -> None:
    """Two hybrid hierarchies (GroupHierarchy, NativeGroupHierarchy) in the same end state: written and dropped
    pages, each level's resident pages with pin counts, eviction order, stats and reservations, residency."""
    assert (ref.written_blocks, ref.dropped_blocks) == (nat.written_blocks, nat.dropped_blocks)
    for x, y in zip(ref.tiers, nat.tiers):
        assert dict(x.resident) == dict(y.resident)
        assert x.policy.order() == y.policy.order()
        assert x.stats == y.stats and x.reserved_blocks == y.reserved_blocks
    assert residency_fields(ref.residency) == residency_fields(nat.residency)


def residency_fields(r) -> dict:
    """Every field of a pcs.cache.residency.Residency, comparable with == (the compiled twins' equality)."""
    d = {k: getattr(r, k) for k in ("pages", "group_peak_pages", "restored", "written", "dropped", "peak_bytes",
                                    "peak_t", "samples", "peak_held_bytes", "clock", "_next")}
    d["peak_pages"] = [tuple(p) for p in r.peak_pages]
    d["request_pages"] = [list(c) for c in r.request_pages]
    d["request_lost"] = list(r.request_lost)
    return d


def without_engine_keys(d):
    """A summary dict (nested) without the keys that name the engine (pcs.engine.select.SUMMARY_KEYS)."""
    from pcs.engine.select import SUMMARY_KEYS

    if isinstance(d, dict):
        return {k: without_engine_keys(v) for k, v in d.items() if k not in SUMMARY_KEYS}
    if isinstance(d, list):
        return [without_engine_keys(v) for v in d]
    return d


def conversation_trace(rng, conversations: int, turns: int, system_blocks: int = 1) -> list:
    """Multi-turn conversations, block size 4: turn j's prompt is turn j - 1's prompt, its output and a new
    message; every conversation starts with the same ``system_blocks`` blocks (ids 0 ..). A full block keeps
    its id from turn to turn (its tokens do not change); a partial last block gets a fresh id (its tokens are a
    prefix of the block the next turn holds there). Turns of all conversations interleave by arrival."""
    nxt = [1000]

    def fresh():
        nxt[0] += 1
        return nxt[0]

    out = []
    for c in range(conversations):
        ids_at: dict = {k: k for k in range(system_blocks)}   # position -> id of the full block there
        p, t = system_blocks * BS + int(rng.integers(0, 2 * BS)), float(rng.uniform(0, 0.05))
        for _ in range(turns):
            o = int(rng.integers(1, 3 * BS))
            full = p // BS
            ids = [ids_at.setdefault(k, fresh()) for k in range(full)] + ([fresh()] if p % BS else [])
            out.append(Req(t, p, o, BS, np.array(ids, dtype=np.uint64)))
            p, t = p + o + int(rng.integers(0, 2 * BS)), t + float(rng.choice([0.001, 0.01, 0.05, 0.3]))
    return sorted(out, key=lambda r: r.arrival_s)


def batch(rows, sessions=None, bs=4, parents=None):
    """A RequestBatch from hand-written rows (routing tests): rows (arrival_s, ids) or (arrival_s, ids, prompt_tokens),
    ``bs`` tokens per block (prompt = ids x bs unless given), no output tokens; optional session and parent ids."""
    ids = [list(r[1]) for r in rows]
    offs = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in ids], out=offs[1:])
    prompt = np.array([r[2] if len(r) > 2 else len(r[1]) * bs for r in rows], dtype=np.int64)
    from pcs.trace.request import RequestBatch

    return RequestBatch(0, bs, np.array([float(r[0]) for r in rows]), prompt, np.zeros(len(rows), dtype=np.int64),
                        offs, np.array([i for x in ids for i in x], dtype=np.uint64),
                        None if sessions is None else np.array(sessions, dtype=np.int64),
                        None if parents is None else np.array(parents, dtype=np.int64))

def home_hash(x: int, seed: int) -> int:
    """The tables' 64-bit hash, written out again: xor the seed in, xor the high word into the low one, then the
    Fibonacci multiply (Knuth, TAOCP vol. 3 §6.4) by 0x9E3779B97F4A7C15 mod 2**64."""
    x ^= seed
    return ((x ^ (x >> 32)) * 0x9E3779B97F4A7C15) % 2**64


def index_probes(slots, keys, seed: int) -> int:
    """The slots a lookup of every key reads in all (1 when a key sits at its home slot, the top k bits of its
    hash, home_hash), asserting each key is found by linear probing before an empty slot, with 2**k >= 2 x
    len(keys) slots."""
    size = len(slots)
    k = size.bit_length() - 1
    assert size == 1 << k and size >= 2 * len(keys)
    probes = 0
    for j, key in enumerate((int(key) for key in keys)):
        i = home_hash(key, seed) >> (64 - k)
        probes += 1
        while slots[i] != j:
            assert slots[i] >= 0, key
            i = (i + 1) % size
            probes += 1
    return probes


def fresh_env(**variables: str) -> dict:
    """This process's environment for a new interpreter, the repository alone on ``PYTHONPATH`` (the child imports
    this tree's pcs, whatever the caller's ``PYTHONPATH`` or installed copy), with ``variables`` (name=value) set."""
    import os

    return dict(os.environ, PYTHONPATH=str(ROOT), **variables)


def fresh_run(args, cwd=None, timeout: float | None = None, **variables: str):
    """``args`` (the arguments after the executable: ``["-c", code]``, ``["-m", "pcs", ...]``, a script and its
    arguments) run by a new interpreter, this one's executable, in the environment of :func:`fresh_env`
    (``variables`` set), in folder ``cwd`` (None: this one's), for at most ``timeout`` seconds. Returns the
    subprocess.CompletedProcess, stdout and stderr as text, whatever its exit status (the caller checks it).

    Raises:
        subprocess.TimeoutExpired: it ran longer than ``timeout``.
    """
    import subprocess
    import sys

    return subprocess.run([sys.executable, *args], env=fresh_env(**variables), capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def fresh_python(code: str, cwd) -> str:
    """The stdout of ``code`` run by a new interpreter (:func:`fresh_run`: this one's executable, the repository
    first on its path) in folder ``cwd``: what a fresh process imports and allocates, apart from the test process's
    state.

    Raises:
        subprocess.CalledProcessError: the code failed (its stderr in the exception).
    """
    r = fresh_run(["-c", code], cwd)
    r.check_returncode()
    return r.stdout


def unwrapped(text: str) -> str:
    """A text report with each wrapped table cell back on its row: a line that starts with 10 spaces or more (the
    continuation of a last column wrapped by ``render_table(wrap=True)``) joined to the line above with one space."""
    out: list[str] = []
    for line in text.split("\n"):
        if out and line.startswith(" " * 10) and line.strip():
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


def old_curve(payload: dict) -> dict:
    """The curve JSON a pcs before 2026-12-04 wrote of the same run: cacheable_blocks under block_accesses, the
    distinct count under distinct_blocks, no count of every hash (today's block_accesses)."""
    names = {"cacheable_blocks": "block_accesses", "distinct_cacheable_blocks": "distinct_blocks"}
    return {names.get(k, k): v for k, v in payload.items() if k != "block_accesses"}


def in_fresh_process(test_file: str, body: str) -> None:
    """Run function ``body`` of test module ``test_file`` (its ``__file__``) in a new interpreter; AssertionError
    with the child's stderr when it fails. For tests of process-wide state, the pools of mappings kept between calls
    (pcs/_kept.h, one per extension module): under pytest-xdist a worker thread an earlier test's replay left
    running could take or give a mapping between two reads of a pool's size (test_small_columns_are_not_mapped
    failed once so)."""
    import subprocess
    import sys

    here = Path(test_file).resolve()
    code = (f"import sys; sys.path[:0] = [{str(Path(__file__).resolve().parent)!r}, {str(here.parent)!r}]; "
            f"import {here.stem} as t; t.{body}()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def as_sampled(curve: dict, rate: float, **more) -> dict:
    """A copy of the exact curve JSON ``curve`` as pcs writes a sampled one (``sample_rate`` ``rate`` below 1): no
    Belady value in any row or knee (pcs computes Belady only for an exact curve), and the keys ``more``."""
    out = {**curve, "sample_rate": rate, **more}
    out["rows"] = [{**r, "belady_hit_ratio": None, "belady_block_misses": None} for r in curve["rows"]]
    out["knee"] = {k: {**v, **{b: None for b in ("belady_hit_ratio", "belady_block_misses") if b in v}}
                   for k, v in (curve.get("knee") or {}).items()}
    return out


def room_spy(monkeypatch) -> list:
    """``pcs.engine.chunks._room`` wrapped for the test: the returned list gets, per call, whether it moved an
    existing table (a growth past the reservation: True) or not (a first reservation, or room enough: False)."""
    from pcs.engine import chunks

    moved: list = []
    real = chunks._room

    def room(table, used, need, reserve=0):
        out = real(table, used, need, reserve)
        moved.append(table is not None and out is not table)
        return out

    monkeypatch.setattr(chunks, "_room", room)
    return moved


def spy_compiled_turns(monkeypatch) -> list:
    """Every call a :class:`pcs.engine.turns.TurnWalk` made from now on makes into the compiled search
    (``pcs.engine._turns``: ``new``, ``walk``, ``queue``, ``drain``, ``result``), in order: ``(name, thread,
    args)``; ``args`` without the walk's state (a ``queue`` or ``walk``: first request index, block size,
    hashes, offsets, prompt, output; a ``drain``: drop). The calls go on to the real module unchanged."""
    import threading

    from pcs import _native

    real_module, calls = _native.module, []

    class Spy:
        def __init__(self, real):
            self._real = real

        def __getattr__(self, name):
            real = getattr(self._real, name)

            def call(*a):
                calls.append((name, threading.current_thread(), a if name == "new" else a[1:]))
                return real(*a)
            return call

    monkeypatch.setattr(_native, "module", lambda twin: Spy(real_module(twin)) if twin == "turns" else
                        real_module(twin))
    return calls


def pcs_parquet(tmp_path, arrival, prompt, output, ids):
    """``tmp_path / "t.parquet"``: a pcs Parquet trace (schema ``pcs-trace/1``, 512-token blocks, from Mooncake)
    of the columns given as lists -- ``arrival`` seconds (float64), ``prompt`` and ``output`` tokens (int64),
    ``ids`` each row's block hashes (list of uint64) -- any values, bad ones too (docs/traces-formats.md)."""
    import pytest

    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    meta = {"pcs.schema": "pcs-trace/1", "pcs.block_size": "512", "pcs.source_format": "mooncake"}
    t = pa.table({"arrival_s": pa.array(arrival, pa.float64()), "prompt_tokens": pa.array(prompt, pa.int64()),
                  "output_tokens": pa.array(output, pa.int64()),
                  "block_hashes": pa.array(ids, pa.list_(pa.uint64()))}).replace_schema_metadata(meta)
    p = tmp_path / "t.parquet"
    pq.write_table(t, p)
    return p


# A sweep plan's first lines (line 1: kind, 3: [fixed], 4: trace, 5: timing, 6: tier); a test adds from line 7.
PLAN_HEAD = f'kind = "replay"\n\n[fixed]\ntrace = "{SMALL_TRACE}"\ntiming = "sequential"\n' \
            'tier = {gpu = "500blocks", cpu = "10GB"}\n'


def plan_refusal(tmp_path, text: str) -> str:
    """The message of the UserError ``pcs.sweep.api.prepare`` raises for a plan ``p.toml`` in ``tmp_path``
    holding ``text`` (the checks made before any point runs)."""
    from pcs.errors import UserError
    from pcs.sweep.api import prepare

    plan = tmp_path / "p.toml"
    plan.write_text(text)
    with pytest.raises(UserError) as err:
        prepare(plan, tmp_path / "out")
    return str(err.value)


def sweep_point_json(tmp_path) -> str:
    """The ``result_json`` of the one replay point of a plan ``plans/plan.toml`` in ``tmp_path`` over a copy of
    :data:`SMALL_TRACE` named ``t8.jsonl`` beside it (sequential timing, a 500-block gpu tier), run by ``pcs sweep
    run plans/plan.toml -o out`` from ``tmp_path`` (the caller makes it the current folder)."""
    import shutil

    import pyarrow.parquet as pq

    plans = tmp_path / "plans"
    plans.mkdir()
    shutil.copy(SMALL_TRACE, plans / "t8.jsonl")
    (plans / "plan.toml").write_text('kind = "replay"\n[fixed]\ntrace = "t8.jsonl"\ntiming = "sequential"\n'
                                     'tier = {gpu = "500blocks"}\n')
    assert invoke("sweep", "run", "plans/plan.toml", "-o", "out", "-q").exit_code == 0
    return pq.read_table(next((tmp_path / "out").rglob("*.parquet"))).to_pylist()[0]["result_json"]
