"""Which output blocks a fleet's ceilings count: each instance's decode blocks, and the fleet's union of them.

Under the step scheduler with ``--cache-decode-blocks`` (docs/semantics.md §9)
an instance caches a finished request's full output blocks under the ids the
next turn's chain has at those positions; each instance finds the next turns
in its own sub-trace (:func:`pcs.engine.turns.decode_blocks` of the sub-trace,
as its replay does). The ceilings of the fleet gap split (§17) count those
blocks as seen after the request (:func:`pcs.engine.decodescan.decode_aware_hits`):

- an instance's ceiling (captured): its own decode blocks, exactly what its
  step scheduler caches (the next turns its replay found in its sub-trace,
  :func:`pcs.engine.turns.decode_blocks`);
- the fleet ceiling: request A's decode blocks found in the whole trace
  (what one instance replaying the whole trace caches) together with those
  A's instance found in its sub-trace, when the two differ
  (:func:`fleet_decode`). The union makes the fleet ceiling's cache hold,
  after every request, what every instance's ceiling holds after it, so
  ceiling >= captured per request (the prefix rule's hit only grows with the
  cache). The two differ only when a sub-trace's first later request holding
  A's last prompt block is not the whole trace's (that one went elsewhere).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["fleet_decode", "renumber"]


def renumber(decode: Any, order: np.ndarray) -> Any:
    """``decode`` (:class:`pcs.engine.turns.DecodeBlocks`, trace numbering) for the requests taken in the order
    ``order`` (int64 (n,), a permutation of the trace positions: request ``order[k]`` becomes k); None stays
    None. The walk of a fleet with a shared tier takes them in its first-admission order (§17.1)."""
    from pcs.engine.turns import DecodeBlocks

    if decode is None:
        return None
    at = np.empty(len(order), np.int64)
    at[order] = np.arange(len(order), dtype=np.int64)
    return DecodeBlocks.from_resolutions(at[decode.index], np.diff(decode.starts), decode.ids, decode.requests,
                                         decode.pairs)


def fleet_decode(whole_source: Any, per: list, rows_of: list, step: bool, setting: bool | None,
                 native: str | None = None) -> Any:
    """The fleet ceiling's decode blocks (module docstring), or None (prompt blocks only).

    Args:
        whole_source: the whole trace (a source :func:`pcs.engine.turns.decode_blocks` reads).
        per: per instance the decode blocks its run cached (sub-trace numbering) or None.
        rows_of: per instance its requests' trace positions (int64).
        step: the instances ran the step scheduler (decode blocks are cached by no other timing).
        setting: the run's ``cache_decode_blocks`` (:class:`pcs.engine.schedconfig.SchedulerConfig`): None =
            auto, resolved on the whole trace as one replay of it resolves it (next turns detected).
    Returns:
        :class:`pcs.engine.turns.DecodeBlocks` in trace numbering: request A's ids are the whole trace's
        (when one replay of the whole trace caches decode blocks), then those of A's instance not among
        them; None when neither caches any.
    """
    from pcs.engine.turns import DecodeBlocks, decode_blocks

    if not step or setting is False:
        return None
    whole = decode_blocks(whole_source, native)
    if setting is None and not whole.detected:
        whole = DecodeBlocks(requests=whole.requests)
    if len(whole.index) == 0 and all(d is None for d in per):
        return None
    merged, changed = dict(whole.hashes), False
    for dec, rows in zip(per, rows_of):
        if dec is None:
            continue
        at = np.asarray(rows, np.int64)[dec.index].tolist()
        for a, ids in zip(at, (dec.get(k) for k in dec.index.tolist())):
            have = merged.get(a, [])
            known = set(have)
            extra = [x for x in ids if x not in known]
            if extra:
                merged[a], changed = have + extra, True
    return DecodeBlocks.from_dict(merged, whole.requests, whole.pairs) if changed else whole
