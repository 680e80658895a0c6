"""Independent reference simulators of the replay rules (tests only; readable over fast).

Written from the rules as documented in ``docs/semantics.md`` (§2-§9, §11) -- not
from the code of ``pcs.cache`` or ``pcs.engine``: nothing here imports pcs. Plain dicts and ``OrderedDict``s,
one rule per function, so a disagreement with pcs points at one rule.

What it covers: one or more tiers (GPU first), eviction policies ``lru``,
``slru`` (segmented LRU, protected share 0.8) and ``fifo``, write-back,
sequential timing and modeled timing (arrivals, FIFO admission with
head-of-line waiting, reservations of the partial last block and all output
blocks, FIFO link queues, a compute model passed in, computed blocks cached at
TTFT, release at finish tail first).

Output (:class:`RefResult`): hit tokens (all tiers and per tier), prompt
tokens, block misses, requests truncated and requests waited, and per request
the hit blocks and (modeled) the wait for KV space.

Where the written rules allow two readings, :class:`Readings` names both; the
default is the one pcs implements (``tests/engine/test_exact_sample.py`` shows the
other changes the numbers). Section numbers (§N) are those of docs/semantics.md.

Entry points: :func:`read_mooncake` (a Mooncake JSONL file -> :class:`Req`
list) and :func:`simulate`. Speed: ~0.1 s for the 25,158 block accesses of
``traces/sample_exact.jsonl``; it is not meant for the real traces.
"""
from __future__ import annotations

import heapq
import json
import math
from collections import OrderedDict
from dataclasses import dataclass, field

__all__ = ["Req", "RefResult", "Link", "Readings", "read_mooncake", "simulate", "POLICIES"]


@dataclass(frozen=True)
class Readings:
    """Where the written rules leave a choice, which reading to simulate.

    The defaults are the readings pcs implements and docs/semantics.md §7 and §9
    state; each alternative is what another sentence of pcs's docstrings suggested,
    kept so that a test shows the choice changes the numbers
    (``tests/engine/test_exact_sample.py``).

    Attributes:
        lower_insert: how a lower tier takes a batch of demoted blocks:
            ``"batch"`` (the batch is the newest content, :meth:`RefTier.insert_batch`)
            or ``"flat"`` (one by one, :meth:`RefTier.insert_flat`).
        demote: when a request's GPU victims move down a tier: ``"after_restore"``
            (its restores read their lower copies, and touch them, first) or
            ``"before_restore"`` (as the reservation evicts them).
        admit_after: (modeled) events after which a waiting head is tried again:
            ``"finish"`` (only a finish gives KV space back; an arrival is tried at
            once only when nobody waits) or ``"any_event"`` (also after a TTFT, whose
            newly cached blocks may shorten the head's need, and at every arrival).
    """

    lower_insert: str = "batch"
    demote: str = "after_restore"
    admit_after: str = "finish"


@dataclass(frozen=True)
class Req:
    """One request.

    Attributes:
        arrival_s: arrival time, seconds (Mooncake: ``timestamp`` ms / 1000).
        prompt_tokens: prompt length, tokens.
        output_tokens: output length, tokens.
        hashes: block ids, one per ``block_size`` prompt tokens, the partial
            last block included (python ints).
        block_size: tokens per block.
    """

    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    hashes: tuple
    block_size: int = 512


def read_mooncake(path, block_size: int = 512) -> list[Req]:
    """Requests of a Mooncake JSONL file (``timestamp`` in ms, ``input_length``,
    ``output_length``, ``hash_ids``), in file order. No validation: test data only."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            out.append(Req(o["timestamp"] / 1000.0, o["input_length"], o["output_length"],
                           tuple(o["hash_ids"]), block_size))
    return out


# --------------------------------------------------------------------------- policies
# docs/semantics.md §8. Every policy holds only the evictable (unpinned) blocks of
# its tier and receives keys in eviction order (first key = first to go among them):
# add (released or stored; ``reused`` = it was a hit), remove (pinned), touch (an
# unpinned access), evict(n) (n victims or None, all-or-nothing), forget (the tier
# evicted them itself) and order (first victim first).

class LRU:
    """Least recently used: release or access makes a block the most recent."""

    def __init__(self, capacity_blocks: int) -> None:
        self.q: OrderedDict = OrderedDict()  # first = least recently used

    def __len__(self) -> int:
        return len(self.q)

    def add(self, keys, reused: bool) -> None:
        for k in keys:
            self.q[k] = None

    def remove(self, keys) -> None:
        for k in keys:
            del self.q[k]

    def touch(self, keys) -> None:
        for k in keys:
            self.q.move_to_end(k)

    forget = remove

    def order(self) -> list:
        return list(self.q)

    def evict(self, n: int):
        if n > len(self.q):
            return None
        return [self.q.popitem(last=False)[0] for _ in range(n)]


class FIFO:
    """First in, first out: a block keeps the place it got when the policy first
    saw it, also while pinned; accesses never move it (libCacheSim ``FIFO.c``)."""

    def __init__(self, capacity_blocks: int) -> None:
        self.entered: OrderedDict = OrderedDict()  # every known block, entry order
        self.evictable: set = set()

    def __len__(self) -> int:
        return len(self.evictable)

    def add(self, keys, reused: bool) -> None:
        for k in keys:
            self.entered.setdefault(k, None)
            self.evictable.add(k)

    def remove(self, keys) -> None:
        self.evictable.difference_update(keys)

    def forget(self, keys) -> None:
        """Held ``keys`` leave the tier (evicted by the tier, not chosen here)."""
        for k in keys:
            del self.entered[k]
            self.evictable.discard(k)

    def order(self) -> list:
        return [k for k in self.entered if k in self.evictable]

    def touch(self, keys) -> None:
        pass

    def evict(self, n: int):
        if n > len(self.evictable):
            return None
        victims = []
        for k in self.entered:
            if len(victims) == n:
                break
            if k in self.evictable:
                victims.append(k)
        for k in victims:
            del self.entered[k]
            self.evictable.discard(k)
        return victims


class SLRU:
    """Segmented LRU (Karedla, Love and Wherry 1994; Caffeine's main space): a new
    block enters probation; a reuse (released as a hit, or touched) moves it to
    protected, which holds at most floor(share x capacity) blocks, its overflow
    going from its LRU end to probation's MRU end; victims come from probation's
    LRU end, from protected only when probation is empty."""

    def __init__(self, capacity_blocks: int, share: float = 0.8) -> None:
        self.limit = math.floor(share * capacity_blocks)
        self.probation: OrderedDict = OrderedDict()
        self.protected: OrderedDict = OrderedDict()

    def __len__(self) -> int:
        return len(self.probation) + len(self.protected)

    def _protect(self, k) -> None:
        self.probation.pop(k, None)
        self.protected.pop(k, None)
        self.protected[k] = None
        while len(self.protected) > self.limit:
            self.probation[self.protected.popitem(last=False)[0]] = None

    def add(self, keys, reused: bool) -> None:
        for k in keys:
            if reused:
                self._protect(k)
            else:
                self.probation[k] = None

    def remove(self, keys) -> None:
        for k in keys:
            if k in self.probation:
                del self.probation[k]
            else:
                del self.protected[k]

    def touch(self, keys) -> None:
        for k in keys:
            self._protect(k)

    forget = remove

    def order(self) -> list:
        return list(self.probation) + list(self.protected)

    def evict(self, n: int):
        if n > len(self):
            return None
        victims = []
        for seg in (self.probation, self.protected):
            while seg and len(victims) < n:
                victims.append(seg.popitem(last=False)[0])
        return victims


POLICIES = {"lru": LRU, "slru": SLRU, "fifo": FIFO}


# --------------------------------------------------------------------------- tiers
class RefTier:
    """``capacity`` slots, each either resident (key -> pin count) or reserved (§5, §7)."""

    def __init__(self, name: str, capacity: int, policy: str) -> None:
        self.name, self.capacity = name, capacity
        self.pins: dict = {}
        self.reserved = 0
        self.policy = POLICIES[policy](capacity)

    def free(self) -> int:
        return self.capacity - len(self.pins) - self.reserved

    def pin(self, keys) -> None:
        for k in keys:
            if self.pins[k] == 0:
                self.policy.remove([k])
            self.pins[k] += 1

    def unpin(self, keys, reused: bool) -> None:
        """Drop one pin per key (eviction order); keys reaching 0 become evictable."""
        back = []
        for k in keys:
            self.pins[k] -= 1
            if self.pins[k] == 0:
                back.append(k)
        self.policy.add(back, reused)

    def reserve(self, n: int):
        """Reserve ``n`` slots evicting as needed; the victims, or None (nothing changes)."""
        victims = self.policy.evict(max(0, n - self.free()))
        if victims is None:
            return None
        for k in victims:
            del self.pins[k]
        self.reserved += n
        return victims

    def fill(self, keys) -> None:
        """A reserved slot per key becomes a resident block pinned once; a key already
        resident is pinned instead and its slot stays reserved."""
        for k in keys:
            if k in self.pins:
                self.pin([k])
            else:
                self.reserved -= 1
                self.pins[k] = 1

    def insert(self, keys, mode: str) -> list:
        """Lower tier (no pins): store ``keys`` (eviction order); what was pushed out, in eviction order."""
        return self.insert_flat(keys) if mode == "flat" else self.insert_batch(keys)

    def insert_flat(self, keys) -> list:
        """First reading of ``Tier.insert``'s docstring, "what a flat policy fed the keys
        one by one reaches": a resident key is touched, a new one stored, evicting one
        victim when the tier is full -- possibly a key further on in the same batch,
        which is then stored again as new."""
        out = []
        for k in keys:
            if k in self.pins:
                self.policy.touch([k])
                continue
            if self.free() == 0:
                victims = self.policy.evict(1)
                if victims is None:
                    out.append(k)
                    continue
                out += victims
                for v in victims:
                    del self.pins[v]
            self.pins[k] = 0
            self.policy.add([k], False)
        return out

    def insert_batch(self, keys) -> list:
        """Second reading, "the batch is the newest content ... pushed out after every
        older unpinned block": the batch's resident keys are set aside while its new
        keys take room from the older blocks; then, in batch order, new keys are added
        and resident ones touched (set aside + given back as reused = a touch for every
        policy: LRU and SLRU make them most recent, FIFO keeps their place). A batch
        larger than the tier loses its first keys."""
        cut = max(0, len(keys) - self.capacity)
        out, keys = list(keys[:cut]), list(keys[cut:])
        gone = [k for k in out if k in self.pins]
        self.policy.forget(gone)
        for k in gone:
            del self.pins[k]
        again = {k for k in keys if k in self.pins}
        self.policy.remove(again)
        fresh = [k for k in keys if k not in self.pins]
        victims = self.policy.evict(max(0, len(fresh) - self.free()))
        for k in victims:
            del self.pins[k]
        for k in keys:
            self.pins[k] = 0
            self.policy.add([k], k in again)
        return victims + out


# --------------------------------------------------------------------------- hierarchy
@dataclass
class Hold:
    """One running request's hold on the GPU tier."""

    used: list            # pinned GPU keys of the lead (hits, restored, resident beyond the cap), chain order
    new: list             # keys to compute that got a slot, chain order
    reserved: int         # reserved slots (new blocks until filled, partial block, output)
    hits: int             # hit blocks
    tier_hits: list       # hit blocks per tier
    restored: list        # restored blocks per tier (index 0 unused)
    lead: int             # leading blocks resident in some tier at lookup
    truncated: bool


class RefHierarchy:
    """Tiers GPU first, write-back: a GPU victim moves down a tier, the last tier drops (§7)."""

    def __init__(self, capacities, policies, readings: Readings = Readings()) -> None:
        names = ["gpu", "cpu", "ssd", "remote"]
        self.readings = readings
        self.tiers = [RefTier(names[i], c, p) for i, (c, p) in enumerate(zip(capacities, policies))]

    def demote(self, j: int, victims) -> None:
        if j + 1 < len(self.tiers) and victims:
            self.demote(j + 1, self.tiers[j + 1].insert(victims, self.readings.lower_insert))

    def where(self, key):
        """Index of the highest tier holding ``key``, or None."""
        for j, t in enumerate(self.tiers):
            if key in t.pins:
                return j
        return None

    def lookup(self, keys, n: int):
        """Tier of each leading block resident in some tier, stopping at the first miss (§3)."""
        where = []
        for k in keys[:n]:
            j = self.where(k)
            if j is None:
                break
            where.append(j)
        return where

    def start(self, keys, n: int, cap: int, extra: int, wait_if_full: bool):
        """Admit one request: look up (§3), pin before allocating, reserve, truncate when the
        GPU tier can never hold it (§5), restore (§7); a Hold, or None when it must wait (§9).

        A hit counts at the highest tier holding the block; GPU lead blocks beyond the
        last-token cap are pinned and used, lower-tier ones beyond it are computed (§4)."""
        gpu = self.tiers[0]
        where = self.lookup(keys, n)
        lead = len(where)
        used = [keys[i] for i in range(lead) if where[i] == 0]
        restores = [i for i in range(min(cap, lead)) if where[i] > 0]
        new = [keys[i] for i in range(cap, lead) if where[i] > 0] + list(keys[lead:n])
        hits, truncated = min(cap, lead), False
        if len(used) + len(restores) + len(new) + extra > gpu.capacity:
            truncated = True
            budget = gpu.capacity - len(used)
            if len(restores) > budget:
                hits, restores, new, extra = restores[budget], restores[:budget], [], 0
            else:
                new = new[:budget - len(restores)]
                extra = min(extra, budget - len(restores) - len(new))
        slots = len(restores) + len(new) + extra
        evictable_now = len(gpu.policy) - sum(1 for k in used if gpu.pins[k] == 0)
        if wait_if_full and slots > gpu.free() + evictable_now:
            return None
        gpu.pin(used)
        victims = gpu.reserve(slots)
        if self.readings.demote == "before_restore":
            self.demote(0, victims)
        restored = self.restore(keys, where, restores)
        if self.readings.demote == "after_restore":
            self.demote(0, victims)
        kept = set(restores)
        pinned = [keys[i] for i in range(lead) if where[i] == 0 or i in kept]
        tier_hits = [sum(1 for i in range(hits) if where[i] == j) for j in range(len(self.tiers))]
        return Hold(pinned, new, len(new) + extra, hits, tier_hits, restored, lead, truncated)

    def restore(self, keys, where, restores) -> list:
        """Fill the GPU slots of lower-tier hits; their lower copies stay and are touched
        (tail first, so the head is the most recent)."""
        restored = [0] * len(self.tiers)
        self.tiers[0].fill([keys[i] for i in restores])
        for i in reversed(restores):
            restored[where[i]] += 1
            low = self.tiers[where[i]]
            if keys[i] in low.pins:
                low.policy.touch([keys[i]])
        return restored

    def prefill_done(self, hold: Hold) -> None:
        """The computed blocks become cached, pinned, in the GPU tier."""
        gpu = self.tiers[0]
        before = gpu.reserved
        gpu.fill(hold.new)
        hold.reserved -= before - gpu.reserved

    def finish(self, hold: Hold) -> None:
        """Pins dropped tail first (computed ones, then the lead's), reserved slots given back (§6)."""
        gpu = self.tiers[0]
        gpu.unpin(list(reversed(hold.new)), reused=False)
        gpu.unpin(list(reversed(hold.used)), reused=True)
        gpu.reserved -= hold.reserved


# --------------------------------------------------------------------------- replay
@dataclass(frozen=True)
class Link:
    """A restore link: ``setup_s + bytes / bandwidth_bps`` per transfer (one per request and tier)."""

    bandwidth_bps: float
    setup_s: float = 0.0

    def transfer_s(self, num_bytes: int) -> float:
        return self.setup_s + num_bytes / self.bandwidth_bps


@dataclass
class RefResult:
    """Counters of one reference replay (tokens and blocks)."""

    prompt_tokens: int = 0
    hit_tokens: int = 0
    tier_hit_tokens: list = field(default_factory=list)
    block_misses: int = 0
    requests_truncated: int = 0
    requests_waited: int = 0
    hit_blocks: list = field(default_factory=list)   # per request, trace order
    wait_s: list = field(default_factory=list)       # per request (modeled), admission - arrival


def block_rules(req: Req):
    """(keys, cacheable blocks n, max hit blocks cap): full blocks only (§2), hits capped
    at prompt - 1 tokens rounded down to blocks (§4); an id repeated inside the request
    ends the cacheable chain before the repeat."""
    keys, bs = list(req.hashes), req.block_size
    n = min(req.prompt_tokens // bs, len(keys))
    for i, k in enumerate(keys[:n]):
        if k in keys[:i]:
            n = i
            break
    cap = min(n, max(0, req.prompt_tokens - 1) // bs)
    return keys, n, cap


def _count(res: RefResult, req: Req, hold: Hold) -> None:
    """Token-weighted hits, per tier; block misses = cacheable blocks after the lead (§11)."""
    bs = req.block_size
    res.prompt_tokens += req.prompt_tokens
    res.hit_tokens += min(hold.hits * bs, req.prompt_tokens)
    for j, h in enumerate(hold.tier_hits):
        res.tier_hit_tokens[j] += h * bs
    res.block_misses += block_rules(req)[1] - hold.lead
    res.requests_truncated += hold.truncated
    res.hit_blocks.append(hold.hits)


def simulate(requests, capacities, policies, timing: str = "sequential", compute=None,
             links=None, lower_bytes_per_block=None, readings: Readings = Readings()) -> RefResult:
    """Replay ``requests`` through tiers of ``capacities`` blocks (GPU first).

    Args:
        requests: :class:`Req` list, arrival order.
        capacities: blocks per tier, GPU first.
        policies: policy name per tier (``lru``, ``slru``, ``fifo``), or one name for all.
        timing: ``sequential`` (each request finished before the next, full prompt
            blocks only) or ``modeled``.
        compute: (modeled) object with ``prefill_s(new_tokens, cached_tokens)`` and
            ``decode_s_per_token(context_tokens)`` returning floats.
        links: (modeled) a :class:`Link` per lower tier (list, index 0 = the first lower tier).
        lower_bytes_per_block: (modeled) bytes per block per lower tier, same indexing.
        readings: the reading of the rules the documentation leaves open (:class:`Readings`).
    Returns:
        :class:`RefResult`.
    """
    if isinstance(policies, str):
        policies = [policies] * len(capacities)
    h = RefHierarchy(capacities, policies, readings)
    res = RefResult(tier_hit_tokens=[0] * len(capacities))
    if timing == "sequential":
        for req in requests:
            keys, n, cap = block_rules(req)
            hold = h.start(keys, n, cap, 0, wait_if_full=False)
            _count(res, req, hold)
            h.prefill_done(hold)
            h.finish(hold)
        return res
    Modeled(h, res, compute, links, lower_bytes_per_block).run(requests)
    return res


class Modeled:
    """The modeled-timing event loop (§9): arrivals, FIFO admission, TTFT, finish.

    A request reserves ceil((prompt + output) / block_size) GPU slots at admission
    (its cacheable blocks, the partial last block and all output blocks); TTFT = admission
    + restores (one FIFO server per link) + prefill of the missed tokens; its computed
    blocks are cached at TTFT; finish = TTFT + output x decode_s_per_token(prompt +
    output // 2). Events at equal times run in creation order (TTFT before finish)."""

    def __init__(self, h: RefHierarchy, res: RefResult, compute, links, lower_bpb) -> None:
        self.h, self.res, self.compute = h, res, compute
        self.links, self.lower_bpb = links or [], lower_bpb or []
        self.link_free = [0.0] * len(self.links)
        self.events: list = []   # (time, creation number, kind, payload)
        self.created = 0
        self.queue: list = []    # waiting requests, FIFO

    def push(self, t: float, kind: str, payload) -> None:
        heapq.heappush(self.events, (t, self.created, kind, payload))
        self.created += 1

    def run(self, requests) -> None:
        for req in requests:
            while self.events and self.events[0][0] <= req.arrival_s:
                self.step()
            self.queue.append(req)
            if len(self.queue) == 1 or self.h.readings.admit_after == "any_event":
                self.admit(req.arrival_s)     # behind a waiting request it waits too (head of line)
        while self.events:
            self.step()

    def step(self) -> None:
        """One event; a waiting head is tried again when a finish gives KV space back."""
        t, _, kind, hold = heapq.heappop(self.events)
        if kind == "ttft":
            self.h.prefill_done(hold)
            if self.h.readings.admit_after == "any_event":
                self.admit(t)
        else:
            self.h.finish(hold)
            self.admit(t)

    def admit(self, now: float) -> None:
        """Admit waiting requests in order until the head cannot get its slots."""
        while self.queue:
            req = self.queue[0]
            keys, n, cap = block_rules(req)
            total = -(-(req.prompt_tokens + req.output_tokens) // req.block_size)
            hold = self.h.start(keys, n, cap, total - n, wait_if_full=True)
            if hold is None:
                return
            self.queue.pop(0)
            _count(self.res, req, hold)
            self.res.requests_waited += now > req.arrival_s
            self.res.wait_s.append(now - req.arrival_s)
            ttft = now + self.restore_s(now, hold) + self.prefill_s(req, hold)
            self.push(ttft, "ttft", hold)
            out = req.output_tokens
            self.push(ttft + out * self.compute.decode_s_per_token(req.prompt_tokens + out // 2), "finish", hold)

    def restore_s(self, now: float, hold: Hold) -> float:
        """Seconds until the last restore of the request ends; each link a FIFO server."""
        end = now
        for j, blocks in enumerate(hold.restored[1:]):
            if blocks:
                start = max(now, self.link_free[j])
                self.link_free[j] = start + self.links[j].transfer_s(blocks * self.lower_bpb[j])
                end = max(end, self.link_free[j])
        return end - now

    def prefill_s(self, req: Req, hold: Hold) -> float:
        cached = min(hold.hits * req.block_size, req.prompt_tokens)
        return self.compute.prefill_s(req.prompt_tokens - cached, cached)
