"""The two-tier one-pass scan on its worker (:func:`_two_tier_scan`, joined by :class:`_ScanJoin`), the no-cache
step run queued behind it on the same worker (:class:`_Tail`, :class:`_Queued`) and the sequential baseline
(:func:`_baseline`: from the scan, or in C). The threads' rule is :mod:`pcs.engine.runner`'s module docstring;
split out of it.
"""
from __future__ import annotations

import dataclasses
import queue
import threading
from typing import Any, Callable, Sequence

import numpy as np

from pcs.blocks import BlockRules
from pcs.engine import fastpath, select, seqbase
from pcs.beside import Beside, threads_wanted
from pcs.engine.engine import EngineResult
from pcs.engine.loops import _close_beside, _hybrid_kwargs
from pcs.engine.placement import _Plan, _scan_decode


def _two_tier_scan(plans: list[_Plan], source: Any, rules: BlockRules, tiers: Sequence, write_policy: str,
                   requested: str, decode: Any, side: Beside) -> Callable[[], fastpath.Scan] | None:
    """Begin the one-pass scan with the run's two tiers on ``side`` when ``auto`` placed a modeled run's sequential
    baseline on ``compiled-hierarchy`` over two ``lru`` tiers with write-back (docs/semantics.md §15: the baseline
    from the one-pass scan, not a second C pass): the same hash probe per id gives the single-sequence walks and the
    baseline's hit blocks (``Scan.baseline_hits``, equal to the compiled hierarchy's: tests/engine/test_seqbase.py).
    ``decode``: decode blocks (:func:`_scan_decode`), walked in the same scan. Returns the call that waits for the
    scan (:class:`_ScanJoin`), or None when it does not apply (nothing started; the baseline's reason then says why,
    :func:`pcs.engine.select.baseline_reason`).

    Threads: on a threaded ``side`` the scan runs on its worker while the caller builds and runs the step loops
    (the compiled scan releases the GIL in ``lru_feed``: pcs/engine/_lruscan.c). It reads the decoded batches
    (read-only numpy arrays), ``decode`` (:meth:`pcs.engine.turns.DecodeBlocks.arrays` of more than one request
    builds new arrays and writes nothing; of one request it memoises a span table both threads would build alike),
    the rules (frozen) and two capacities (ints), and writes only its own ``SequentialLru`` and columns, which no
    one else sees before the join; the plans are relabelled at the join, on the caller's thread. So the scan gives
    the result of running it first (tests/engine/test_scan_beside.py)."""
    if len(plans) < 2:
        return None
    base = plans[-1]
    if not select.baseline_in_scan(base.row, base.config, requested, write_policy):
        base.reason = select.baseline_reason(base.reason, base.row, base.config, write_policy)
        return None
    gate = threading.Event() if side.threaded else None
    tail = _Tail() if side.threaded else None
    # a stop before the gate opens, or before the loops hand the tail its end: settle opens the gate, ends the tail
    side.opener = (lambda: (gate.set(), tail.abort())) if gate is not None else None
    side.start(_gated, gate, _scan_then_tail, tail, source, tiers[0].capacity_blocks, rules,
               tiers[1].capacity_blocks, decode)
    return _ScanJoin(side, plans[-1], gate, tail)


#: The markers of a :class:`_Tail`'s queue: the chunks are all put (the no-cache run closes), or the call stopped.
_END, _ABORT = object(), object()


class _Tail:
    """The no-cache step run queued behind the two-tier scan on the scan's worker (:func:`_scan_then_tail`): the
    calling thread puts the no-cache engine (or None: no such run), then each chunk as the run's loop is fed, then
    :data:`_END`; the worker, once its scan is done, feeds the engine every chunk in order and closes it
    (:func:`_close_beside`). Why: beside the run's feed the scan and the no-cache feed were two more runnable
    threads on the 2-core machine, and the calling thread waited in the run queue behind its own workers
    (docs/performance.md, "The read beside the pieces, the no-cache run behind the scan, ..."); one after the
    other on one worker they end before the run's feed and close. :meth:`abort` (any way out: an error, a stop)
    ends the worker's wait at once."""

    def __init__(self) -> None:
        self._q = queue.SimpleQueue()

    def put(self, item: Any) -> None:
        """Queue the engine (or None), a chunk, or :data:`_END`."""
        self._q.put(item)

    def abort(self) -> None:
        """Let the worker return without the rest (its no-cache result then None); harmless once it has ended."""
        self._q.put(_ABORT)

    def run(self) -> EngineResult | None:
        """On the worker: the no-cache engine fed every chunk put, then closed; None when there is none or the
        call stopped first."""
        engine = self._q.get()
        if engine is None or engine is _ABORT or engine is _END:
            return None
        while (ch := self._q.get()) is not _END:
            if ch is _ABORT:
                return None
            engine.feed(ch)
        return _close_beside(engine)


def _scan_then_tail(tail: _Tail | None, *args: Any) -> tuple:
    """:func:`_scan_parts` of ``args``, then (on a threaded side) ``tail``'s no-cache run: ``(parts, no-cache
    result or None)``."""
    return _scan_parts(*args), (tail.run() if tail is not None else None)


def _scan_parts(source: Any, capacity: int, rules: BlockRules, lower: int, decode: Any) -> tuple:
    """The two-tier scan (:func:`pcs.engine.fastpath.scan`, compiled, unchecked) and, on the same thread once it is
    done, what the caller makes of it after the loops: ``(scan, (single-sequence, ideal) results, the baseline when
    its premise held else None, the decode-aware ceiling when ``decode`` was walked else None)``
    (:func:`pcs.engine.fastpath.single_results`, :func:`pcs.engine.seqbase.baseline_from_scan`,
    :func:`pcs.engine.fastpath.decode_result`). Each reads the scan alone and makes new objects, so on the scan's
    worker they are what the caller would make after the join, off the calling thread's path."""
    sc = fastpath.scan(source, capacity, rules, "c", False, lower, decode)
    base = seqbase.baseline_from_scan(sc, 2) if sc.baseline_hits is not None else None
    return _spent(sc), fastpath.single_results(sc), base, fastpath.decode_result(sc)


def _spent(sc: fastpath.Scan) -> fastpath.Scan:
    """``sc`` once :func:`_scan_parts` has read every result off it, its per-request columns (numpy, shape (R,))
    replaced by zero-length ones of the same dtypes (``baseline_hits`` and ``seen_decode`` stay None when they
    were). The caller reads no column of the joined scan, only whether its premise held (:meth:`_ScanJoin.__call__`)
    and whether it walked decode blocks (:func:`single_with_decode`), so the columns -- 11 of 8 B per request,
    10.6 MB at 10x Mooncake -- are not kept alive beside the loops (the scan ends while the run's feed goes on)."""
    cols = {f.name: getattr(sc, f.name) for f in dataclasses.fields(sc)}
    return dataclasses.replace(sc, **{k: v[:0].copy() for k, v in cols.items() if isinstance(v, np.ndarray)})


def _gated(gate: threading.Event | None, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` once ``gate`` is set (None: at once): a worker started early waits, without the GIL, until the
    calling thread lets it go (:meth:`_ScanJoin.open`)."""
    if gate is not None:
        gate.wait()
    return fn(*args)


class _ScanJoin:
    """Wait for the two-tier scan :func:`_two_tier_scan` began and label the baseline's plan by its outcome: moved
    to ``lru-scan``, or -- the ids break the scan's premise (not chained) -- left on ``compiled-hierarchy`` with the
    reason why. Calling again gives the same scan; the scan's exception is raised at the first call.

    The scan's worker is started at once but waits at ``gate`` until :meth:`open` -- called just before the run's
    first step-loop feed (:func:`_feed`'s ``first``), when the calling thread is about to release the GIL in the
    compiled loop -- so the scan's Python and numpy work (its batches' checks and rule columns, which hold the
    GIL) does not contend with the calling thread's building of the loops and its first chunk (docs/performance.md
    "The 1x call's critical path"). :meth:`open` is called again on every way out (the join, an error): idempotent.
    """

    def __init__(self, side: Beside, base: _Plan, gate: threading.Event | None = None,
                 tail: _Tail | None = None) -> None:
        self._side, self._base, self._scan, self._gate, self.tail = side, base, None, gate, tail
        self.parts: tuple = (None, None, None)    # made with the scan (_scan_parts), once joined
        self.no_cache: EngineResult | None = None  # the tail's no-cache result (:class:`_Tail`), once joined

    def open(self) -> None:
        """Let the scan's worker begin (nothing when it runs inline or has begun)."""
        if self._gate is not None:
            self._gate.set()

    def __call__(self) -> fastpath.Scan:
        if self._scan is None:
            self.open()
            (sc, *parts), self.no_cache = self._side.join()
            self._scan, self.parts = sc, tuple(parts)
            if sc.baseline_hits is None:
                self._base.reason += "; not lru-scan: the block hashes are not chained (found while scanning)"
            else:
                self._base.row, self._base.reason = select.get_row("lru-scan"), select.TWO_TIER_SCAN
        return self._scan


def _open_scan(plans: list[_Plan], source: Any, rules: BlockRules, tiers0: list, write_policy: str, requested: str,
               resolved: Any, scan_side: Beside) -> tuple[_ScanJoin | None, Callable[[], None] | None]:
    """Start the two-tier scan on ``scan_side`` (:func:`_two_tier_scan`) and return it with its gate (``go``: lets
    its worker begin, :class:`_ScanJoin`), both None when no scan runs; with no event loops to build first, the
    gate is opened at once."""
    scan2 = _two_tier_scan(plans, source, rules, tiers0, write_policy, requested, _scan_decode(resolved), scan_side)
    go = scan2.open if scan2 is not None else None
    if go is not None and plans[0].row.kind != "event-loop":
        go()               # no loops to build: the scan goes now
    return scan2, go


def _baseline(scan2: _ScanJoin | None, plans: list[_Plan], source: Any, rules: BlockRules,
              make_tiers: Callable[[], list], write_policy: str, hybrid: Any, block_bytes: Sequence[int],
              step_s: float, beside: Beside) -> Callable[[], EngineResult] | None:
    """The call giving the sequential baseline of a modeled run when it does not run as an event loop: from the
    two-tier scan ``scan2`` (:func:`pcs.engine.seqbase.baseline_from_scan`, once the scan has joined) or, placed on
    ``compiled-hierarchy`` (also a scan that found the ids not chained) or ``compiled-hybrid``, in C
    (:func:`pcs.engine.seqbase.begin_sequential`: on ``beside``'s worker thread while the caller goes on when its
    hierarchy releases the GIL, else done before this returns) -- the lean walk of two fifo / slru tiers on a worker as
    a :class:`pcs.engine.walkjoin.WalkJoin`, behind which the single-sequence walk and the no-cache run queue --;
    None for any other placement."""
    if scan2 is not None:
        def from_scan() -> EngineResult:
            if scan2().baseline_hits is not None:
                return scan2.parts[1]          # seqbase.baseline_from_scan, made on the scan's worker
            return _baseline(None, plans, source, rules, make_tiers, write_policy, hybrid, block_bytes, step_s,
                             Beside(False))()    # the scan left the plan on compiled-hierarchy: the loops are done
        return from_scan
    if len(plans) < 2 or plans[-1].row.name not in ("compiled-hierarchy", "compiled-hybrid"):
        return None
    kw = _hybrid_kwargs(hybrid, block_bytes, step_s) if plans[-1].row.name == "compiled-hybrid" else {}
    hierarchy = plans[-1].row.load()(make_tiers(), write_policy, **kw)
    if not hasattr(hierarchy, "groups") and seqbase.policy_walk(hierarchy) is not None:   # the JSON says which ran
        plans[-1].reason += "; " + seqbase.POLICY_WALK_REASON
    return seqbase.begin_sequential(source, hierarchy, rules, beside, side_work=True)


class _Queued:
    """The no-cache run's side when its feeds and close go to the scan's worker behind the scan (:class:`_Tail`),
    in place of its own :class:`pcs.beside.Beside` (the calls :func:`_feed` and :func:`_close_runs` make on it):
    ``start`` of a feed queues the chunk, ``start`` of :func:`_close_beside` queues the end, ``join`` returns
    nothing before the end and, after it, waits for the scan's worker (:class:`_ScanJoin`, or the lean walk's
    :class:`pcs.engine.walkjoin.WalkJoin`) and gives the no-cache result; ``close`` ends the worker's wait (an
    error, a stop)."""

    threaded = True

    def __init__(self, scan2: Any) -> None:
        self._scan2, self._ended = scan2, False

    def start(self, fn: Callable[..., Any], *args: Any) -> None:
        self._ended = fn is _close_beside
        self._scan2.tail.put(_END if self._ended else args[0])

    def join(self) -> EngineResult | None:
        if not self._ended:
            return None
        self._scan2()
        return self._scan2.no_cache

    def close(self) -> None:
        self._scan2.tail.abort()


def _no_cache_side(no_cache: Any, scan2: Any) -> Beside | _Queued:
    """Where the no-cache loop runs: where :func:`_beside` places it, and when that is a worker thread and the
    two-tier scan runs threaded (``scan2``, a :class:`_ScanJoin`; or the lean walk's
    :class:`pcs.engine.walkjoin.WalkJoin`, which has the same ``tail``), behind it on its worker (:class:`_Queued`;
    no thread of its own). Hands that worker its engine (or None)."""
    side, tail = _beside(no_cache), (scan2.tail if scan2 is not None else None)
    queued = tail is not None and no_cache is not None and side.threaded
    if tail is not None:
        tail.put(no_cache if queued else None)
    return _Queued(scan2) if queued else side


def _beside(loop: Any) -> Beside:
    """Where the no-cache loop runs: on a worker thread when its compiled loop releases the GIL
    (:attr:`pcs.engine.stepnative.NativeStepEngine.releases_gil`) and threads are wanted
    (:func:`pcs.beside.threads_wanted`), else inline."""
    return Beside(bool(getattr(loop, "releases_gil", False)) and threads_wanted())
