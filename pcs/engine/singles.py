"""A replay's single-sequence and ideal results (docs/semantics.md §12): from a one-pass scan already made, from
the two-tier scan's worker, or their own pass -- on the idle scan worker behind the loops' first feed when it can
(:func:`_early_singles`) -- and the decode-aware ceiling (:func:`single_with_decode`). Split out of
:mod:`pcs.engine.runner`.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.engine import fastpath
from pcs.beside import Beside
from pcs.engine.passes import SharedPasses
from pcs.engine.placement import _Plan, _scan_decode, _shared
from pcs.engine.scanjoin import _ScanJoin, _gated


def single_with_decode(resolved: tuple | None, source: Any, native: str | None = None,
                       sc: fastpath.Scan | None = None, passes: SharedPasses | None = None,
                       scanned_only: bool = False,
                       ready: SingleSequenceResult | None = None) -> SingleSequenceResult | None:
    """The single-sequence result with each request's cached decode blocks seen after it
    (:func:`pcs.engine.decodescan.decode_aware_hits`; docs/semantics.md §12, §17) when the step scheduler of
    ``resolved`` (:func:`_resolve_step`) caches decode blocks, else None (the prompt-only ceiling holds).
    From the one-pass scan ``sc`` when it walked them (``Scan.seen_decode``), else one more sequential scan of
    ``source``, O(1) per id. With ``passes`` the result is kept for the replay's other run (it depends on the trace,
    the rules and the decode blocks only, not on the tiers: a hybrid model's run takes the one its comparison line's
    scan walked instead of scanning again); ``scanned_only``: None unless it is kept or ``sc`` walked it (nothing
    is scanned); ``ready``: ``sc``'s result made already (:func:`_scan_parts`, on the scan's worker)."""
    decode = _scan_decode(resolved)
    if decode is None:
        return None
    key = ("single_with_decode", resolved[3], id(decode))   # decode: the passes' own object, kept while they live
    if sc is not None and sc.seen_decode is not None:
        made = ready if ready is not None else fastpath.decode_result(sc)
        return made if passes is None else passes.put(key, made)
    if passes is not None and passes.has(key):
        return passes.get(key, lambda: None)
    if scanned_only:
        return None
    from pcs.engine.decodescan import decode_aware_hits

    return _shared(passes, key, lambda: decode_aware_hits(source, resolved[3], decode, native))


def _singles(scans: list, scan2: Any, source: Any, rules: BlockRules, native: str | None, resolved: tuple | None,
             passes: SharedPasses | None, ready: tuple | None = None) -> tuple:
    """(the single-sequence and ideal results, the scan that walked the decode-aware ceiling or None): from a
    one-pass scan already made, else one more pass over the decoded batches, made before the engines grow (8-16 B
    per distinct id); with ``passes`` shared by the runs of one replay (the decode-aware ceiling then comes from
    :func:`single_with_decode`'s own scan). ``ready``: ``scan2``'s results made already (:func:`_scan_parts`)."""
    singles = next((fastpath.single_results(s) for s in scans if s is not None), None)
    if singles is None and scan2 is not None:
        singles = ready if ready is not None else fastpath.single_results(scan2)
    if singles is None:
        scan2 = None if passes is not None else fastpath.scan(source, 0, rules, native, check=False,
                                                              decode=_scan_decode(resolved))
        singles = _shared(passes, ("singles", rules), lambda: fastpath.single_results(
            scan2 if scan2 is not None else fastpath.scan(source, 0, rules, native, check=False)))
    elif passes is not None:
        passes.put(("singles", rules), singles)
    return singles, scan2


class _SideSingles:
    """:func:`_singles` begun on a worker behind ``gate`` (:func:`_early_singles`); calling it opens the gate (a
    run whose loops were never fed would else wait for ever) and waits for its ``(singles, scan)``."""

    def __init__(self, side: Beside, gate: threading.Event) -> None:
        self._side, self._gate = side, gate

    def __call__(self) -> tuple:
        self._gate.set()
        return self._side.join()


def _early_singles(scans: list, scan2: _ScanJoin | None, go: Callable[[], None] | None, args: tuple,
                   plans: list[_Plan], side: Beside, walk: Any = None) -> tuple:
    """``(early, go)``: the run's single-sequence results when no two-tier scan gives them (``scan2`` None) and no
    one-tier scan ran (:func:`_singles`' own pass at 0 slots, ``args`` = its source, rules, native, resolved and
    passes) -- made now, or, when the run has event loops to build and feed, no shared passes and ``side`` (the
    idle scan worker) is threaded, begun on ``side`` behind a gate (``go``, opened just before the loops' first
    feed, as the two-tier scan's :meth:`_ScanJoin.open`): the walk, compiled and without the GIL in ``lru_feed``,
    then runs beside the step loop instead of before it on the calling thread; its result is the same (it reads
    the decoded batches and the decode blocks only, as the two-tier scan does: :func:`_two_tier_scan`). With
    ``walk`` (the lean walk's baseline on its worker, :class:`pcs.engine.walkjoin.WalkJoin`) that worker takes the
    pass behind the baseline instead of ``side`` (``go`` then opens ``walk``'s gate); ``walk`` is told "none" when
    the pass runs here. ``early`` None with ``scan2``; ``go`` is ``scan2``'s gate then."""
    if scan2 is not None:
        return None, go
    if args[4] is not None or not side.threaded or any(s is not None for s in scans) or \
            plans[0].row.kind != "event-loop":
        if walk is not None:
            walk.then_singles(None)
        return _singles(scans, None, *args), go
    if walk is not None:
        walk.then_singles(_singles, scans, None, *args)
        return _WalkSingles(walk), walk.open
    gate = threading.Event()
    side.opener = gate.set                # a stop before the gate opens: settle opens it
    side.start(_gated, gate, _singles, scans, None, *args)
    return _SideSingles(side, gate), gate.set


class _WalkSingles:
    """:func:`_singles` queued behind the lean walk's baseline (:func:`_early_singles`); calling it waits for that
    worker (:class:`pcs.engine.walkjoin.WalkJoin`) and gives the walk's ``(singles, scan)``."""

    def __init__(self, walk: Any) -> None:
        self._walk = walk

    def __call__(self) -> tuple:
        self._walk()
        return self._walk.singles


def _joined_singles(early: tuple | None, scans: list, scan2: _ScanJoin | None, source: Any, rules: BlockRules,
                    native: str | None, resolved: Any, passes: SharedPasses | None) -> tuple:
    """``(singles, scan, ready)``: the run's single-sequence results and the scan they came from -- ``early``
    when they were made before the loops, else joined from the two-tier scan, whose results were made on its
    worker (:func:`_scan_parts`) -- and its decode-aware pass made beside (``ready``; None for ``early``)."""
    if early is not None:
        early = early() if isinstance(early, (_SideSingles, _WalkSingles)) else early
        return early[0], early[1], None
    singles, scan = _singles(scans, scan2(), source, rules, native, resolved, passes, scan2.parts[0])
    return singles, scan, scan2.parts[2]
