"""The trace read once for the event loops (:func:`_decoded_once`) and fed to them chunk by chunk (:func:`_feed`,
:func:`_fed_loops`), the next chunk made on a worker while the loops run, the no-cache run fed beside or behind
the two-tier scan. Split out of :mod:`pcs.engine.runner`.
"""
from __future__ import annotations

from typing import Any, Callable

from pcs import _native
from pcs.blocks import BlockRules
from pcs.beside import Beside, threads_wanted
from pcs.engine.chunks import ChunkPieces, iter_chunks, table_entries_bound
from pcs.engine.decoded import Decoded
from pcs.engine.engine import ReplayEngine
from pcs.engine.loops import HierarchyAhead, _event_loops, _presize_samplers
from pcs.engine.passes import SharedPasses
from pcs.engine.placement import StepSetup
from pcs.engine.scanjoin import _ScanJoin, _no_cache_side
from pcs.engine.turns import TurnWalk, requests_hint
from pcs.trace.batches import read_ahead
from pcs.trace.parquet import expected_block_hashes


def _feed(source: Any, rules: BlockRules, time_model: Any, engines: list[ReplayEngine],
          progress: Callable[[int], None] | None, decode: bool = True, passes: SharedPasses | None = None,
          side: ReplayEngine | None = None, beside: Beside | None = None,
          first: Callable[[], None] | None = None) -> None:
    """Feed every chunk of ``source`` to every engine once; ``decode=False``: no decode seconds (step scheduler);
    with ``passes`` the chunks are made once for the runs of the replay (the same time model); a decoded trace
    whose chunks were made in the decode pass (:meth:`pcs.engine.decoded.Decoded.made_chunks`) hands them over --
    its first joined batch's made there, the others made whole as they are taken (on the read-ahead worker below).
    ``side``: one more engine, fed each chunk through ``beside`` (on a worker thread) while the others are fed
    and the next chunk is made (the side's feeds stay in chunk order: each is joined before the next starts).
    Without ``passes``, when every engine's loop releases the GIL, the next chunk is made on a worker thread while
    the engines replay this one (:func:`pcs.trace.batches.read_ahead`: one chunk in flight, the chunks in order;
    the maker alone touches the time model's decode memo, :class:`pcs.engine.timing.TimeModel`) -- unless the
    decoded trace is one joined batch, whose one chunk the worker could only make while this thread waits for it
    (a thread start and two hand-overs of the GIL on the critical path: the 1x Mooncake call), so it is made here.
    ``first``: called once, just before the engines' first feed (:meth:`_ScanJoin.open`)."""
    made = source.made_chunks(rules, time_model, decode) if passes is None and isinstance(source, Decoded) else None
    chunks = made if made is not None else iter_chunks(source, rules, time_model, decode) if passes is None else \
        passes.get(("chunks", rules, id(time_model), decode), lambda: list(iter_chunks(source, rules, time_model, decode)))
    one = made is not None and len(source.batches) == 1
    if passes is None and not one and all(getattr(e, "releases_gil", False) for e in engines):
        chunks = read_ahead(chunks, linger=True)   # the next chunk made (or joined) on a worker while the loops run
    try:
        for ch in chunks:
            if side is not None:
                beside.join()              # the previous chunk's side feed (nothing pending at the first)
                beside.start(side.feed, ch)
            if first is not None:
                first, go = None, first
                go()
            for e in engines:
                e.feed(ch)
            if progress is not None:
                progress(len(ch))
        if side is not None:
            beside.join()
    except BaseException:
        try:
            if side is not None:
                beside.close()         # waits for the side's call, drops its outcome, ends the worker thread
            if hasattr(chunks, "close"):
                chunks.close()         # waits for the chunk in flight (read_ahead), ends its worker thread
        finally:
            for e in engines:          # a loop's own side worker (NativeStepEngine.settle): waited for, ended
                settle = getattr(e, "settle", None)
                if settle is not None:
                    settle()
        raise


def _decoded_once(source: Any, plans: list, step: StepSetup | None, timing: str, native: str | None,
                  rules: BlockRules, time_model: Any, meanwhile: Callable[[int], None] | None = None,
                  keep_worker: bool = False) -> Any:
    """``source`` decoded once when more than one pass reads it (an event-loop plan), else as it is. When the
    step scheduler will need the next-turn search (:func:`_resolve_step`) and it runs compiled, the search walks
    each batch as it is decoded, on a worker thread (:class:`pcs.engine.turns.TurnWalk`; the decoded trace's
    ``next_turns``), instead of a pass of its own after the decode; and the step loops' first chunk is made from
    each batch as it is read (:class:`pcs.engine.chunks.ChunkPieces`, taken by :func:`_feed`), so the loops start on
    a chunk already made (the later chunks are made whole by :func:`_feed`'s read-ahead worker while the loops run
    the ones before: ``ChunkPieces.groups_ahead``). With threads (:func:`pcs.beside.threads_wanted`) a trace file is read on a worker of its
    own and the calling thread makes the pieces meanwhile (``Decoded(..., ahead=True)``). ``meanwhile``: called with
    the trace's block hashes while the walk finishes its last batch (``Decoded``'s; a
    :class:`pcs.engine.loops.HierarchyAhead`). ``keep_worker``: the walk's worker thread kept idle for the caller
    (``Decoded``'s: :meth:`pcs.engine.decoded.Decoded.take_worker`), who closes it."""
    if not any(p.row.kind == "event-loop" for p in plans):
        return source
    walk = pieces = None
    if step is not None and timing == "modeled" and step.config.cache_decode_blocks is not False:
        if _native.resolve(native, "turns") == "c":
            walk = TurnWalk(threads_wanted(), requests_hint(source))
            pieces = None if time_model is None else ChunkPieces(rules, time_model, table_entries_bound(source))
    return Decoded(source, walk, pieces, ahead=walk is not None and threads_wanted(), meanwhile=meanwhile,
                   keep_worker=keep_worker)


def _fed_loops(loop_args: tuple, source: Any, rules: BlockRules, time_model: Any,
               progress: Callable[[int], None] | None, decode: bool, passes: SharedPasses | None,
               first: Callable[[], None] | None = None, scan2: _ScanJoin | None = None,
               ahead: HierarchyAhead | None = None) -> tuple:
    """The run's event loops (:func:`_event_loops` of ``loop_args``), the no-cache step run popped off them (or
    None) and its :class:`pcs.beside.Beside`, after feeding them every chunk of ``source`` (:func:`_feed`).
    ``decode``: decode seconds are computed (the instant-compute modeled loop only; sequential timing never reads
    them). ``first``: called once the loops are built, just before their first feed (or at once without loops).
    ``scan2``: the two-tier scan, behind which the no-cache loop runs on the scan's worker (:func:`_no_cache_side`).
    ``ahead``: the run's first hierarchy built during the decode (:class:`pcs.engine.loops.HierarchyAhead`), or None."""
    plans, resolved = loop_args[0], loop_args[6]
    loops = _event_loops(*loop_args, expected_blocks=expected_block_hashes(source), ahead=ahead)
    if resolved is not None:
        _presize_samplers(source, loops)
    no_cache = loops.pop() if len(loops) > len(plans) else None
    beside = _no_cache_side(no_cache, scan2)
    if any(loops):
        _feed(source, rules, time_model, [e for e in loops if e is not None], progress, decode, passes, no_cache,
              beside, first)
    elif first is not None:
        first()
    return loops, no_cache, beside
