"""The step scheduler: modeled timing with compute as a shared, finite resource (``--compute step``).

One instance runs steps back to back, as a continuous-batching engine (vLLM
v1 ``vllm/v1/core/sched/scheduler.py``) does. The rules, each stated once
(``docs/semantics.md §9``, §10; the plain reference a compiled twin will be diffed against):

1. **Arrivals** join the waiting queue (FIFO) at their trace time; a step
   already running finishes first (requests join at step boundaries).
2. **A step** at time ``now``: first every running request past its prefill
   gets one decode token (decode first; ``max_num_seqs <=
   max_num_batched_tokens`` so all fit); then the prefilling requests, in
   admission order, get chunks of their remaining prompt, each
   ``min(remaining, budget left)`` (chunked prefill); then, while budget is
   left and fewer than ``max_num_seqs`` run, waiting requests are admitted
   in FIFO order and get chunks the same way. The head of the queue that
   cannot get its KV space blocks the queue (head of line). A request whose
   restores must land first (``wait``, ``best-effort``) is admitted but
   gets no chunk until they do.
3. **Admission** (:meth:`pcs.cache.Hierarchy.start`): lookup, pins, and
   slots for the restores, the computed prompt blocks and the partial last
   block (``ceil(prompt / block_size)`` blocks in all). Restores are planned
   over the links (:mod:`pcs.engine.restores`); with ``restore_fallback`` a
   restore that takes longer (link queue included) than the prefill its hits
   save is skipped: the hits end at the GPU lead (``gpu_lead_blocks``) and
   the rest is recomputed. A prefill computes at least one token.
4. **Step time** from :class:`pcs.compute.StepCost`: prefill FLOPs of each
   chunk given its cached context, the decode batch's FLOPs, and the bytes
   read (weights once, each sequence's KV), ``max(memory, compute)``.
   ``layerwise``: a step holding a request's first chunk while its restore
   is in flight is stretched by ``max(0, land - start - W)``,
   ``W = compute x (L - 1) / L`` (the stall; the request's exposed restore).
5. **Prefill done** (last chunk): the computed blocks are cached
   (:meth:`~pcs.cache.Hierarchy.prefill_done`), the first token is out (TTFT
   = end of that step - arrival); the request decodes from the next step.
   With ``cache_blocks_at`` ``scheduled`` (vLLM v1: ``allocate_slots`` caches
   the full blocks of each chunk it schedules) the full blocks a chunk
   completes are cached when the step is composed, before the next admission
   of that step looks up; with ``chunk-done`` (SGLang's
   ``cache_unfinished_req``) at the end of each step that ran a chunk
   (:meth:`~pcs.cache.Hierarchy.cache_computed`; ``docs/semantics.md §9``).
6. **KV space grows block by block**: a decode step writing a token at a
   block boundary needs one more GPU slot (:meth:`~pcs.cache.Hierarchy.grow`).
   When none is obtainable, the youngest running request that grows is
   preempted (vLLM's FCFS ``self.running.pop()``, recompute): its blocks
   are freed (full decode blocks cached first, as vLLM hashes full blocks),
   it goes back to the head of the queue and later recomputes its prompt and
   the tokens generated so far (counted as waste; its hits count once, at
   its first admission). A request preempted ``max_preemptions`` times is
   re-admitted with every block it will need, so it cannot be preempted again.
7. **Finish** after ``output_tokens`` tokens (the first from the prefill):
   with ``cache_decode_blocks`` its full output blocks are cached under the
   next turn's ids (:mod:`pcs.engine.turns`), then its pins dropped tail first.

Event skipping: between events (an arrival, a restore landing, a prefill
step, a request finishing, a block boundary that cannot be served) the step
composition is constant -- d decoding requests, total context S growing by d
per step -- so k pure decode steps are advanced at once in closed form
(:meth:`StepCost.decode_run_s`); block boundaries inside the k steps are
served at its start (nothing else touches the cache meanwhile, so victims
and order are the same). ``skip=False`` runs one step at a time (the
reference the tests diff against). State is kept in flat ints and one
``__slots__`` record per request (a C struct in a compiled twin); the per-step
work allocates nothing.
"""
from __future__ import annotations

import heapq
import math
from array import array
from collections import deque

from pcs.blocks import BlockRules
from pcs.compute import decode_steps_for, decode_sum
from pcs.engine import restores as rst
from pcs.engine.engine import ReplayEngine
from pcs.engine.schedstats import SchedulerCounters, end_times
from pcs.engine.series import NoSampler
from pcs.errors import UserError, shown_repr
from pcs.trace.rowlimits import STEP_OUTPUT_BELOW

__all__ = ["StepEngine", "STEP_COLUMNS"]

_INF = float("inf")
_NAN = float("nan")
_NONE: list = []                  # no decode blocks (shared, never changed)
#: Per-request columns the step scheduler adds (after the modeled ones); units in pcs.engine.summary.
STEP_COLUMNS = (("wait_compute_s", "d"), ("wait_link_s", "d"), ("exposed_restore_s", "d"), ("prefill_steps_s", "d"),
                ("e2e_s", "d"), ("tpot_s", "d"), ("preemptions", "q"), ("recomputed_hit_blocks", "q"), ("decode_blocks_cached", "q"))


class _Req:
    """One request's scheduling state (a record; fields as named in the module docstring).

    ``seq``, ``rem``, ``ctx`` are set at admission and ``kv0``, ``g0`` when the prefill completes, before any
    read (fewer stores per request; an early read would raise AttributeError rather than see a stale value).
    """

    __slots__ = ("k", "ch", "i", "arrival", "p0", "p", "o", "out", "adm", "seq", "rem", "ctx", "ready",
                 "land", "kv0", "g0", "decoding", "epoch", "preemptions", "grows", "chain", "dh", "dh_in", "first",
                 "kv_mark", "ttft", "prefill_s", "exposed_s", "args")

    def __init__(self, k: int, ch, i: int, arrival: float, p: int, o: int, dh: list, kv_mark: float) -> None:
        self.k = k
        self.ch = ch
        self.i = i
        self.arrival = arrival
        self.p0 = self.p = p
        self.o = o
        self.out = self.epoch = self.preemptions = self.dh_in = 0
        self.adm = self.chain = self.args = None
        self.ready = self.grows = self.first = True
        self.land = -_INF
        self.decoding = False
        self.dh = dh
        self.kv_mark = kv_mark
        self.ttft = _NAN
        self.prefill_s = self.exposed_s = 0.0


class StepEngine(ReplayEngine):
    """Modeled timing with the step scheduler (rules in the module docstring); feed chunks, then close.

    Args:
        hierarchy: the tiers (:class:`pcs.cache.Hierarchy` or the compiled twin).
        links, block_bytes: as :class:`pcs.engine.engine.ReplayEngine`.
        cost: :class:`pcs.compute.StepCost`.
        config: a resolved :class:`pcs.engine.schedconfig.SchedulerConfig` (no None left).
        recompute_last_token: the hit cap rule (docs/semantics.md §4) for re-admissions.
        decode: :class:`pcs.engine.turns.DecodeBlocks` (used when ``config.cache_decode_blocks``) or None.
        no_cache: every request computes its whole prompt and nothing is cached (the no-cache baseline).
        check: assert the hierarchy's and the scheduler's invariants after every event (slow).
        skip: advance pure decode runs in closed form (False: one step at a time, the reference).
        log_steps: keep ``(start_s, seconds, stall_s, tokens, decode_seqs, chunks, steps)`` per advance in ``steps_log``.
    """

    def __init__(self, hierarchy, links, block_bytes, cost, config, recompute_last_token: bool = True,
                 decode=None, no_cache: bool = False, check: bool = False, skip: bool = True,
                 log_steps: bool = False) -> None:
        super().__init__(hierarchy, "modeled", links=links, block_bytes=block_bytes, check=check)
        if no_cache:
            self.sampler = NoSampler()         # the no-cache run's time series is never read
        for name, code in STEP_COLUMNS:
            self._cols[name] = array(code)
        self.cost = cost
        self.config = config
        self.budget = config.max_num_batched_tokens
        self.max_seqs = config.max_num_seqs
        self.policy = config.restore_policy
        self.last_token = recompute_last_token
        # a re-admission's chain holds exactly its cacheable blocks: every hash counts (cache_partial_blocks)
        self._chain_rules = BlockRules(cache_partial_blocks=True, recompute_last_token=recompute_last_token)
        self.decode = decode if (config.cache_decode_blocks and decode is not None and not no_cache) else None
        at = "prefill-done" if no_cache else config.cache_blocks_at      # nothing is cached without the cache
        if at != "prefill-done" and not hasattr(hierarchy, "cache_computed"):
            raise UserError(f"cache_blocks_at {shown_repr(at)} needs a hierarchy with cache_computed (pcs.cache.Hierarchy); "
                             f"{type(hierarchy).__name__} caches at prefill done only")
        self._at_scheduled, self._at_chunk = at == "scheduled", at == "chunk-done"
        self.no_cache = no_cache
        self.skip = skip
        self.steps_log = [] if log_steps else None
        self.stats = SchedulerCounters()
        self.now = 0.0                 # start of the next step, seconds (trace clock)
        self.G = 0                     # steps run so far: a decoding request's context grows by one per step
        self.d = 0                     # decoding requests
        self.S = 0                     # their context tokens in total, at step G
        self.waiting: deque = deque()
        self.running: dict = {}        # admission seq -> request, admission order (the youngest last)
        self.prefilling: list = []     # admitted requests with prompt left, admission order
        self._fin: list = []           # heap (step at which it is done, seq, epoch, request)
        self._blk: list = []           # heap (step needing one more block, seq, epoch, request)
        self._pending: list = []       # heap (time its restores are ready, seq, epoch, request)
        self._seq = 0
        self._fed = 0
        self._last_arrival = -_INF
        self._in_system = 0
        self._blocked = False          # the queue's head found no KV space; retried after a release
        self._kv_acc = 0.0             # time the queue has been blocked for KV space, up to _kv_since
        self._kv_since = -_INF         # when the current block began (-inf: not blocked; times may be < 0)
        self._bs = None
        self._done = None              # (chunks, step seconds) of the step that began, for _end
        self._half = False             # clock_advance ran _begin, _end is due (a fleet's one clock)
        self._admitted = 0             # requests admitted at least once (first admissions follow trace order)
        self._bin, self._bin_lo = 0, _INF   # stats.busy_per_s[_bin] covers [_bin_lo, _bin_lo + 1) s from origin_s
        self._views: list = []         # memoryviews of the columns the loop writes (_grow_columns)
        self._grow_columns(0)
        self._held = hierarchy.held_blocks
        plain = cost.attn_pair_s is not None
        self._c = (cost.token_s, cost.attn_pair_s if plain else 0.0, cost.kv_seq_s, cost.kv_token_s,
                   cost.token_s + cost.attn_seq_s, cost.attn_token_s, cost.weights_active_s, cost.weights_total_s,
                   plain)                      # (token_s + attn_seq_s): a decode sequence's per-step term

    # -- feeding -----------------------------------------------------------------------------------
    def feed(self, chunk) -> None:
        """Replay the requests of ``chunk`` (in order, after all earlier chunks).

        Raises:
            UserError: an output length of 2**62 tokens or more (:func:`check_output_tokens`).
        """
        m = len(chunk.arrival_s)
        check_output_tokens(chunk.output_tokens)
        self._bs = chunk.block_size
        self._feed_inputs(chunk)
        if not self._fed and m:
            self.stats.origin_s = chunk.arrival_s[0]
            self._start_clocks(chunk.arrival_s[0])
        self._grow_columns(m)
        dec = self.decode.hashes if self.decode is not None else None
        bs, waiting, stats = chunk.block_size, self.waiting, self.stats
        prompts, outputs, cacheable = chunk.prompt_tokens, chunk.output_tokens, chunk.cacheable
        k, last, now = self._fed, self._last_arrival, self.now
        area, mark = stats.in_system_area_s, self._kv_clock()    # both constant while the clock stands
        for i, a in enumerate(chunk.arrival_s):
            if a < last:
                a = last                      # a trace out of order: treat as arriving now
            last = a
            if now < a:
                stats.in_system_area_s = area
                self._run_until(a)
                if self.now < a:
                    self._idle(a)
                now, area, mark = self.now, stats.in_system_area_s, self._kv_clock()
            if a >= self._next_sample:       # the first arrival (t0); later boundaries are taken as time moves
                self._next_sample = self.sampler.take(a, self._snapshot)
            p = prompts[i]
            dh = dec.get(k, _NONE) if dec is not None and cacheable[i] == p // bs else _NONE
            waiting.append(_Req(k, chunk, i, a, p, outputs[i], dh, mark))
            k += 1
            area += now - a
            self._in_system += 1
        stats.in_system_area_s = area
        self._fed, self._last_arrival = k, last

    def _start_clocks(self, first_s: float) -> None:
        """The links' free times and the step clock start at the first arrival ``first_s`` (docs/semantics.md
        §9, clock start; ``_stepsched.c`` ``feed`` does the same)."""
        super()._start_clocks(first_s)
        self.now = float(first_s)

    def _grow_columns(self, m: int) -> None:
        """Add m rows to the per-request columns (0, or NaN for times) and view the ones the loop writes.

        The loop stores through memoryviews (an item store skips the array's argument parsing); a view pins
        its array's size, so the views are released before the columns grow and taken again after."""
        for v in self._views:
            v.release()
        c = self._cols
        for name in ("hit_blocks", "missed_blocks", "hit_tokens", "restored_bytes", "truncated", "preemptions",
                     "restore_s", "wait_link_s",
                     "recomputed_hit_blocks", "decode_blocks_cached") + tuple(
                         f"hit_tokens_{t.name}" for t in self.h.tiers):
            col = c[name]
            col.frombytes(bytes(col.itemsize * m))        # zeros (0, 0.0), copied rather than converted
        nans = array("d", (_NAN,)) * m
        for name in ("prefill_s", "wait_s", "ttft_s", "finish_s", "wait_compute_s", "exposed_restore_s",
                     "prefill_steps_s", "e2e_s", "tpot_s"):
            c[name].extend(nans)
        view = lambda names: tuple(memoryview(c[n]) for n in names)  # noqa: E731
        self._tier_cols = view(f"hit_tokens_{t.name}" for t in self.h.tiers)
        self._first_cols = view(("hit_blocks", "missed_blocks", "hit_tokens", "recomputed_hit_blocks", "truncated",
                                 "wait_s", "prefill_s"))
        self._end_cols = view(("ttft_s", "prefill_steps_s", "exposed_restore_s", "finish_s", "preemptions"))
        self._restore_cols = view(("restored_bytes", "restore_s", "wait_link_s", "decode_blocks_cached"))
        self._views = [*self._tier_cols, *self._first_cols, *self._end_cols, *self._restore_cols]

    def close(self):
        """Run until every request has finished; return the ledger and columns (:class:`EngineResult`)."""
        self._run_until(_INF)
        assert not self.waiting and not self.running, "a request could never finish"
        st = self.stats
        st.end_s = self.now
        st.steps = self.G              # the steps counter is the clock of decode steps (both advance in _elapse)
        for v in self._views:
            v.release()
        self._views = []
        end_times(self._cols)
        return super().close()

    # -- the loop ----------------------------------------------------------------------------------
    def _run_until(self, t: float) -> None:
        """Run steps while the next one starts before ``t`` (``t`` = inf: until nothing is left)."""
        begin, end = self._begin, self._end
        while self.now < t:
            if not begin(t):
                return
            end()

    def _begin(self, t: float) -> bool:
        """The first half of one loop iteration at ``now`` (bounded by ``t``): restores that landed, block
        boundaries due, admissions (lookups, pins, evictions), then the step's time -- the clock moves to its
        end -- or a decode run, or idling to the next event; False when there is nothing to run before ``t``
        and nothing pending (the clock stands). The second half is :meth:`_end`."""
        pend, blk = self._pending, self._blk
        if pend and pend[0][0] <= self.now:
            self._ready_due()
        if blk and blk[0][0] <= self.G:
            self._grow_now()
        chunks = self._compose()
        if chunks:
            self._done = (chunks, self._prefill_step(chunks))
        elif self.d:
            nxt = pend[0][0] if pend else _INF
            self._decode_skip(t if t < nxt else nxt)
        else:
            nxt = pend[0][0] if pend else _INF
            nxt = t if t < nxt else nxt
            if nxt == _INF:
                return False
            self._idle(nxt)
        return True

    def _end(self) -> None:
        """The second half, at the end of the step (``now``): its chunks ran (prefills that completed cache
        their blocks), requests whose last decode step ran finish."""
        done = self._done
        if done is not None:
            self._done = None
            self._chunks_ran(*done)
        fin = self._fin
        if fin and fin[0][0] <= self.G:
            self._finish_due()
        if self.check:
            self._check()

    # -- one clock over many instances (a fleet, pcs.fleet.stepclock) ----------------------------------
    def clock_event(self) -> tuple | None:
        """This instance's next event on a fleet's clock: ``(time_s, 0)`` = the end of the step that began
        (:meth:`_end` is due), ``(time_s, 1)`` = the next step begins (or the clock idles to the next
        restore landing), None = nothing to do until a request arrives (docs/semantics.md §17.2)."""
        if self._half:
            return (self.now, 0)
        if self.waiting or self.running or self._pending:
            return (self.now, 1)
        return None

    def clock_advance(self, until_s: float) -> None:
        """Run this instance's next event (:meth:`clock_event`); ``until_s``: the arrival time of its next
        request not fed yet (inf: none), which bounds a decode run or an idle stretch as :meth:`feed` does.
        Running the two halves one after the other is the loop of :meth:`_run_until`."""
        if self._half:
            self._half = False
            self._end()
        elif self._begin(until_s):
            self._half = True

    def _idle(self, until: float) -> None:
        """Nothing to compute: the clock moves to ``until``."""
        if until >= self._next_sample:   # time-series boundaries in (now, until] see the state during the gap
            self._next_sample = self.sampler.take(until, self._snapshot)
        self.stats.in_system_area_s += self._in_system * (until - self.now)
        self.now = until

    def _elapse(self, seconds: float, stall: float, steps: int, tokens: int, chunks: int) -> None:
        """``steps`` steps taking ``seconds`` (stall included) ran from ``now``."""
        st, now = self.stats, self.now
        end = now + seconds
        if end >= self._next_sample:   # boundaries in (now, now + seconds]: the state during the steps
            self._next_sample = self.sampler.take(end, self._snapshot)
        if self.steps_log is not None:
            self.steps_log.append((now, seconds, stall, tokens, self.d, chunks, steps))
        t0 = now - st.origin_s
        t1 = t0 + seconds
        if self._bin_lo <= t0 and t1 < self._bin_lo + 1.0:   # within the current 1-second bin (most steps)
            st.busy_per_s[self._bin] += seconds
            st.busy_s += seconds
        else:
            st.add_busy(now, seconds)
            b = int(t1)                         # the bin the clock is in now, while bins are 1 s and listed
            self._bin, self._bin_lo = (b, float(b)) if st.bin_s == 1 and b < len(st.busy_per_s) else (0, _INF)
        if stall:
            st.stall_s += stall
        st.in_system_area_s += self._in_system * seconds
        self.now = end
        self.G += steps
        self.S += self.d * steps

    def _compose(self) -> list:
        """The prefill chunks of the step at ``now`` (running prefills, then admissions): [(request, tokens)]."""
        left = self.budget - self.d
        chunks = []
        w = self.waiting
        for r in self.prefilling:
            if left <= 0:
                return chunks
            if r.ready:
                n = r.rem
                if n > left:
                    n = left
                chunks.append((r, n))
                left -= n
                if self._at_scheduled:
                    self._cache_upto(r, r.ctx + n)
        if not w or left <= 0 or self._blocked:
            return chunks
        running, seqs = self.running, self.max_seqs
        while w and left > 0 and len(running) < seqs:
            r = w[0]
            if not self._admit(r):
                self._blocked = True
                if self._kv_since == -_INF:
                    self._kv_since = self.now
                break
            w.popleft()
            if r.ready:
                n = r.rem if r.rem < left else left
                chunks.append((r, n))
                left -= n
                if self._at_scheduled:
                    self._cache_upto(r, r.ctx + n)
        return chunks

    def _cache_upto(self, r, tokens: int) -> None:
        """Cache r's computed blocks that lie wholly within its first ``tokens`` prompt tokens (``cache_blocks_at``
        ``scheduled`` / ``chunk-done``). Chain positions below len(pinned) are its hits and the GPU-resident block
        past the hit cap (§4 leaves at most one), so full block m - 1 is computed block m - len(pinned) - 1."""
        adm = r.adm
        self.h.cache_computed(adm, tokens // self._bs - len(adm.pinned_hashes))

    def _prefill_step(self, chunks: list) -> float:
        """Run one step with prefill chunks (and the decode batch): ``StepCost.step_s`` written out; the
        clock moves to its end. Returns the step's seconds without the stall (:meth:`_chunks_ran` applies it)."""
        tok_s, pair_s, kv_seq, kv_tok, dec_s, attn_tok, w_act, w_tot, plain = self._c
        d, now = self.d, self.now
        comp = mem = 0.0
        tokens = d
        late = False                           # a chunk's restore still in flight (layerwise)
        for r, n in chunks:
            c = r.ctx
            comp += tok_s * n + (pair_s * (n * c + n * (n + 1) / 2) if plain else self.cost.chunk_attn_s(n, c))
            mem += kv_seq + kv_tok * c
            tokens += n
            if r.land > now:
                late = True
        S = self.S
        weights = w_act * tokens
        memory = (weights if weights < w_tot else w_tot) + mem + d * kv_seq + kv_tok * S
        step = comp + d * dec_s + attn_tok * S
        if memory > step:
            step = memory
        stall = 0.0
        if late and self.policy == "layerwise":
            for r, _ in chunks:
                if r.land > now:
                    e = rst.exposed_s(r.land, now, step, self.cost.layers)
                    if r.ttft != r.ttft:
                        r.exposed_s += e
                    if e > stall:
                        stall = e
                    r.land = -_INF
        self.stats.prefill_steps += 1
        self._elapse(step + stall, stall, 1, tokens, len(chunks))
        return step

    def _chunks_ran(self, chunks: list, step: float) -> None:
        """The chunks of a prefill step of ``step`` seconds ran: contexts grow; finished prefills complete."""
        for r, n in chunks:
            r.ctx += n
            if r.ttft != r.ttft:
                r.prefill_s += step
            r.rem -= n
            if not r.rem:
                self._prefill_complete(r)
            elif self._at_chunk:
                self._cache_upto(r, r.ctx)

    def _decode_skip(self, t: float) -> None:
        """Advance pure decode steps until the first finish, block shortage or the first step starting at >= t."""
        fin = self._fin
        while fin and fin[0][2] != fin[0][3].epoch:
            heapq.heappop(fin)
        G, d = self.G, self.d
        most = fin[0][0] - G
        terms = self.cost.decode_terms(d, self.S)     # StepCost.decode_steps_within / decode_run_s, terms once
        k = most if t == _INF else decode_steps_for(terms, t - self.now, most)
        if not self.skip:
            k = 1
        blk = self._blk
        if blk and blk[0][0] < G + k:
            k = self._grow_ahead(k)                   # serves boundaries only: d and S stay
        self._elapse(decode_sum(terms, k), 0.0, k, d, 0)

    # -- KV space ------------------------------------------------------------------------------------
    def _push_boundary(self, r, g: int) -> None:
        """Queue r's next block boundary at or after step ``g`` (KV length kv0 + (step - g0) at that step)."""
        kv = r.kv0 + (g - r.g0)
        nxt = g + (-kv) % self._bs
        if nxt < r.g0 + (r.o - r.out):           # before its last decode step
            heapq.heappush(self._blk, (nxt, r.seq, r.epoch, r))

    def _grow_now(self) -> None:
        """Serve the block boundaries of step G, preempting the youngest growing request when no slot is left."""
        self._serve_boundaries(self.G + 1, stop=False)

    def _grow_ahead(self, k: int) -> int:
        """Serve the boundaries of steps G+1 .. G+k-1 now; returns the steps that can run (up to the first
        boundary without a slot)."""
        return self._serve_boundaries(self.G + k, stop=True) - self.G

    def _serve_boundaries(self, limit: int, stop: bool) -> int:
        """Serve the queued block boundaries of steps before ``limit``, first step first: each grows its request
        by one block and queues the request's next boundary (:meth:`_push_boundary` written out: hot path).
        A boundary without a free slot preempts the youngest growing request (``stop`` False: the boundaries
        of step G, each next one counted from G + 1) or ends the service (``stop`` True: steps ahead of G);
        returns the step of that boundary, else ``limit``."""
        blk, h, bs, now = self._blk, self.h, self._bs, self.G
        while blk and blk[0][0] < limit:
            g, _, ep, r = blk[0]
            if ep != r.epoch:
                heapq.heappop(blk)
            elif h.grow(r.adm, 1):
                g = (g if stop else now) + 1
                nxt = g + (-(r.kv0 + (g - r.g0))) % bs
                if nxt < r.g0 + (r.o - r.out):
                    heapq.heapreplace(blk, (nxt, r.seq, ep, r))
                else:
                    heapq.heappop(blk)
            elif stop:
                self._note_held()
                return g
            else:
                self._preempt(self._victim())
        self._note_held()
        return limit

    def _victim(self):
        """The youngest running request that grows (vLLM FCFS preemption: the last of the running list)."""
        for r in reversed(self.running.values()):
            if r.grows:
                return r
        raise AssertionError("no request to preempt")  # the one needing a block grows

    def _preempt(self, v) -> None:
        """Free v's blocks and put it back at the head of the queue (recompute later)."""
        v.epoch += 1
        del self.running[v.seq]
        h, bs = self.h, self._bs
        if v.decoding:
            kv = v.kv0 + (self.G - v.g0)
            self.d -= 1
            self.S -= kv
            v.decoding = False
            v.out += self.G - v.g0                               # one token per decode step run
            m = min(len(v.dh), max(0, kv // bs - v.p0 // bs))   # full output blocks, hashed when full
            self._cache_decode(v, m)
            h.finish(v.adm)
            v.p = v.p0 + v.out                                   # recompute prompt and output so far
            v.chain = self._prompt_chain(v) + v.dh[:m] if m else self._prompt_chain(v)
            v.dh_in = m
        else:
            self.prefilling.remove(v)
            h.abort(v.adm)
        v.adm = None
        v.ready, v.land = True, -_INF
        v.preemptions += 1
        self.stats.preemptions += 1
        self.waiting.appendleft(v)
        self._release()

    def _release(self) -> None:
        """KV space was given back: the queue's head may fit now."""
        self._blocked = False
        if self._kv_since > -_INF:
            self._kv_acc += self.now - self._kv_since
            self._kv_since = -_INF

    def _kv_clock(self) -> float:
        """Seconds the queue has been blocked for KV space so far (a request's share: the change while it waits)."""
        return self._kv_acc + (self.now - self._kv_since if self._kv_since > -_INF else 0.0)

    def _cache_decode(self, r, m: int) -> None:
        """Cache r's first m decode blocks (those not already in its chain)."""
        if m > r.dh_in:
            self.h.extend(r.adm, r.dh[r.dh_in:m])
            self._restore_cols[3][r.k] += m - r.dh_in
            self.stats.decode_blocks_cached += m - r.dh_in
            r.dh_in = m

    @staticmethod
    def _prompt_chain(r) -> list:
        ch, i = r.ch, r.i
        o = ch.offsets[i]
        return ch.block_hashes[o:o + ch.cacheable[i]]

    # -- admission -----------------------------------------------------------------------------------
    def _admission(self, r) -> tuple:
        """``Hierarchy.start``'s arguments for r (its chain, cacheable blocks, hit cap, extra slots), and
        whether it holds all its blocks at once (preempted ``max_preemptions`` times)."""
        bs, p = self._bs, r.p
        if self.no_cache:
            chain, n, cap = _NONE, 0, 0
        elif r.first:
            ch, i = r.ch, r.i
            o = ch.offsets[i]
            n = ch.cacheable[i]
            chain, cap = ch.block_hashes[o:o + n], ch.max_hit_blocks[i]
        else:
            chain = r.chain if r.chain is not None else self._prompt_chain(r)
            n = len(chain)
            cap = self._chain_rules.max_hit_blocks(p, n, bs)   # §4 over the chain's n cacheable blocks
        fixed = r.preemptions >= self.config.max_preemptions
        tokens = p + (r.o - r.out) - 1 if fixed else p
        extra = -(-tokens // bs) - n
        return chain, n, cap, extra if extra > 0 else 0, fixed

    def _admit(self, r) -> bool:
        """Try to admit the queue's head at ``now``; False when its KV space is not available."""
        args = r.args
        if args is None:
            args = r.args = self._admission(r)
        chain, n, cap, extra, fixed = args
        adm = self.h.start(chain, n, cap, extra, True)
        if adm is None:
            return False
        r.args = None
        r.adm = adm
        r.grows = not (fixed or adm.truncated)
        s = r.seq = self._seq          # before the restores: (time, seq, epoch) heap keys are unique, so
        self._seq = s + 1              # heapq never compares two requests
        kept = adm.hit_blocks
        if kept != adm.hit_blocks_per_tier[0]:       # hits below the GPU: restores to plan
            kept = self._restores(r, adm)
        p, ht = r.p, kept * self._bs
        if ht < p:
            r.ctx, r.rem = ht, p - ht
        else:                                        # a prefill computes at least one token
            r.ctx, r.rem, ht = p - 1, 1, p
        self.running[s] = r
        self.prefilling.append(r)
        if r.first:
            self._first_columns(r, adm, kept, ht)
            r.first = False
            self._admitted += 1
        else:
            self.stats.recompute_tokens += r.rem
            if adm.truncated:
                self._truncated_again(r)
        return True

    def _truncated_again(self, r) -> None:
        """r's re-admission after a preemption was truncated (its prompt + output so far, or its whole sequence
        with ``max_preemptions``, outgrew the GPU tier): r counts as truncated, once; ``requests_outgrown`` counts
        the requests whose first admission was whole (docs/semantics.md §5, §9)."""
        col = self._first_cols[4]
        if not col[r.k]:
            col[r.k] = True
            self.stats.requests_outgrown += 1

    def _restores(self, r, adm) -> int:
        """Plan r's restores (fallback, overlap policy; r has hits below the GPU); returns the hit blocks kept."""
        hits = adm.hit_blocks
        now, bs, p, st = self.now, self._bs, r.p, self.stats
        plan = rst.plan(adm, now, self._link_free, self.links, self.block_bytes)
        land = begin = -_INF                                 # latest end, latest start of a transfer
        for _, _, _, b, x in plan:
            if b + x > land:
                land = b + x
            if b > begin:
                begin = b
        lead = adm.gpu_lead_blocks
        t_lead, t_hits = lead * bs, hits * bs                 # min(., p) written out
        t_lead, t_hits = t_lead if t_lead < p else p, t_hits if t_hits < p else p
        saved = self.cost.prefill_s(p - t_lead, t_lead) - self.cost.prefill_s(p - t_hits, t_hits)
        st.restores_considered += 1
        if rst.loses(land - now, saved):
            st.restores_losing += 1
            if self.config.restore_fallback:
                st.restores_skipped += 1
                return lead
        ch, i = r.ch, r.i
        pre = ch.prefill_s if r.first else []
        restore_s, nbytes = rst.commit(plan, adm, now, self._link_free, self.ledger.links, self.links, pre,
                                       ch.prefill_offsets[i] if pre else 0)
        land = now + restore_s
        k, (c_bytes, c_restore, c_link, _) = r.k, self._restore_cols
        c_bytes[k] += nbytes                   # every admission's restores: the link's bytes (docs/semantics.md §8)
        if r.first:
            c_restore[k] = restore_s
            c_link[k] = begin - now
        return self._overlap(r, plan, land, hits, lead)

    def _overlap(self, r, plan: list, land: float, hits: int, lead: int) -> int:
        """Apply the restore policy to a performed restore landing at ``land``; returns the hit blocks kept."""
        policy = self.policy
        if policy == "layerwise":
            r.land = land
            return hits
        ready, kept = land, hits
        if policy == "best-effort":
            cfg = self.config
            deadline = self.now + cfg.restore_timeout_s + cfg.restore_timeout_per_token_s * (hits - lead) * self._bs
            if land > deadline:
                ready = deadline
                kept = lead + sum(rst.landed_blocks(blocks, b, b + x, self._setup(j), deadline)
                                  for j, blocks, _, b, x in plan)
                kept = min(kept, hits)
                self.stats.restore_timeouts += 1
        if r.ttft != r.ttft:
            r.exposed_s += ready - self.now
        r.ready = False
        heapq.heappush(self._pending, (ready, r.seq, r.epoch, r))
        return kept

    def _setup(self, j: int) -> float:
        link = self.links[j]
        return link.setup_s if link is not None else 0.0

    def _ready_due(self) -> None:
        """Requests whose restores have landed (or timed out) may prefill."""
        pend = self._pending
        while pend and pend[0][0] <= self.now:
            _, _, ep, r = heapq.heappop(pend)
            if ep == r.epoch:
                r.ready = True

    # -- prefill done, finish ------------------------------------------------------------------------
    def _prefill_complete(self, r) -> None:
        """r's last chunk ran: cache its computed blocks; its first (or next) token is out."""
        self.prefilling.remove(r)
        self.h.prefill_done(r.adm)
        if r.ttft != r.ttft:
            r.ttft = self.now
        out = r.out = r.out + 1
        if out >= r.o:
            self._finish(r)
            return
        G, p, seq, ep = self.G, r.p, r.seq, r.epoch
        r.decoding = True
        r.kv0, r.g0 = p, G
        self.d += 1
        self.S += p
        last = G + r.o - out                                    # its last decode step
        heapq.heappush(self._fin, (last, seq, ep, r))
        if r.grows:                                             # _push_boundary(r, G) written out (kv = p at G)
            nxt = G + (-p) % self._bs
            if nxt < last:
                heapq.heappush(self._blk, (nxt, seq, ep, r))

    def _finish_due(self) -> None:
        """Requests whose last decode step has run."""
        fin, G, pop = self._fin, self.G, heapq.heappop
        while fin and fin[0][0] <= G:
            _, _, ep, r = pop(fin)
            if ep == r.epoch:
                kv = r.kv0 + (G - r.g0)
                self.d -= 1
                self.S -= kv
                r.decoding = False
                r.out = r.o
                self._finish(r)

    def _finish(self, r) -> None:
        """r is done at ``now``: decode blocks cached, pins dropped, its times written (latencies: close)."""
        if r.dh and r.grows:
            self._cache_decode(r, min(len(r.dh), max(0, (r.p0 + r.o - 1) // self._bs - r.p0 // self._bs)))
        self.h.finish(r.adm)
        r.epoch += 1
        del self.running[r.seq]
        self._in_system -= 1
        self._blocked = False                                   # _release() written out
        now = self.now
        if self._kv_since > -_INF:
            self._kv_acc += now - self._kv_since
            self._kv_since = -_INF
        k = r.k                                                 # absolute times; schedstats.end_times after the run
        ttft_c, steps_c, exposed_c, finish_c, preempt_c = self._end_cols
        ttft_c[k] = r.ttft
        steps_c[k] = r.prefill_s
        exposed_c[k] = r.exposed_s
        finish_c[k] = now
        if r.preemptions:
            preempt_c[k] = r.preemptions

    # -- columns ---------------------------------------------------------------------------------------
    def _first_columns(self, r, adm, kept: int, ht: int) -> None:
        """Hits, wait and tier columns of r's first admission (its prompt counts once; the columns start at 0)."""
        k, found = r.k, adm.hit_blocks
        th = adm.hit_blocks_per_tier
        if kept == found:
            if kept == th[0]:
                if kept:
                    self.ledger.tier_hit_blocks[0] += kept
                    self._tier_cols[0][k] = ht
            else:
                bs, last, tb, cols = self._bs, adm.last_hit_tier, self.ledger.tier_hit_blocks, self._tier_cols
                for j, b in enumerate(th):
                    tb[j] += b
                    cols[j][k] = b * bs + (ht - kept * bs if j == last else 0)
        else:
            self._kept_tiers(k, adm, kept, ht)
        hit_blocks, missed, hit_tokens, recomputed, truncated, wait, prefill = self._first_cols
        ch, i = r.ch, r.i
        if kept:
            hit_blocks[k] = kept
            hit_tokens[k] = ht
        missed[k] = ch.cacheable[i] - adm.prefix_hit_blocks
        if found != kept:
            recomputed[k] = found - kept
        if adm.truncated:
            truncated[k] = True
        since = self._kv_since                                  # _kv_clock() written out: the queue's wait for
        wait[k] = self._kv_acc + (self.now - since if since > -_INF else 0.0) - r.kv_mark   # KV space (rest: compute)
        pre = ch.prefill_s
        prefill[k] = pre[ch.prefill_offsets[i] + kept] if pre else 0.0
        held = self._held()                                     # _note_held() written out
        if held > self.ledger.peak_reserved_blocks:
            self.ledger.peak_reserved_blocks = held

    def _kept_tiers(self, k: int, adm, kept: int, ht: int) -> None:
        """Tier columns when fewer hits were kept than found (fallback, best-effort): the GPU lead, then what
        landed per lower tier in tier order."""
        bs = self._bs
        th = adm.hit_blocks_per_tier
        blocks = [adm.gpu_lead_blocks] + [0] * (len(th) - 1)
        last = 0
        left = kept - blocks[0]
        for j in range(1, len(th)):
            take = min(left, adm.restored_blocks_per_tier[j])
            blocks[j] = take
            left -= take
            last = j if take else last
        for j, b in enumerate(blocks):
            self.ledger.tier_hit_blocks[j] += b
            self._tier_cols[j][k] = b * bs + (ht - kept * bs if j == last else 0)

    def _note_held(self) -> None:
        """Peak of the GPU slots held by running requests (pinned + reserved), as the modeled engine counts it."""
        held = self._held()
        if held > self.ledger.peak_reserved_blocks:
            self.ledger.peak_reserved_blocks = held

    def _snapshot(self) -> tuple:
        """A time-series sample's state (:class:`pcs.engine.series.Sampler`, docs/semantics.md §11): requests
        admitted at least once, waiting (preempted ones included), resident blocks per tier, restored bytes per
        link so far, when each link is free, and running (admitted, not finished, not preempted)."""
        return (self._admitted, len(self.waiting), [len(t.resident) for t in self.h.tiers],
                [lk.restored_bytes for lk in self.ledger.links], self._link_free[:], len(self.running))

    def _check(self) -> None:
        """Invariants after an event (tests): the hierarchy's, the decode batch's and the budget's."""
        self.h._check()
        dec = [r for r in self.running.values() if r.decoding]
        assert self.d == len(dec), (self.d, len(dec))
        assert self.S == sum(r.kv0 + (self.G - r.g0) for r in dec), "decode context"
        assert len(self.running) <= self.max_seqs
        assert self.d <= self.budget


#: The largest output length the step scheduler takes, exclusive (docs/semantics.md §9): the one value,
#: :data:`pcs.trace.rowlimits.STEP_OUTPUT_BELOW` (why 2**62 is there), which a replay's trace reader checks too,
#: naming file, line and field; this check is for sources read without it (requests in memory, a sweep's batches).
MAX_OUTPUT_TOKENS = STEP_OUTPUT_BELOW


def check_output_tokens(output_tokens) -> None:
    """Raise UserError when a request's output length (tokens; a sequence or int64 array) is >= 2**62.

    One rule for the Python loop and its compiled twin, which checks the same before its int64 step arithmetic."""
    if not len(output_tokens):
        return
    top = int(output_tokens.max() if hasattr(output_tokens, "max") else max(output_tokens))
    if top >= MAX_OUTPUT_TOKENS:
        raise UserError(f"an output length of {top:,} tokens is past what the step scheduler "
                         "models (2**62): check the trace's output lengths, or use compute_mode='infinite' / "
                         "timing='sequential'")
