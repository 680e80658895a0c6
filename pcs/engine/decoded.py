"""A trace read once: its checked batches kept in memory for the passes of one replay.

A replay over event-loop engines reads its trace more than once: the one-pass
scan (single-sequence and ideal results), the next-turn search of the step
scheduler (:mod:`pcs.engine.turns`) and the feed of the engines. Parsing JSONL
(or decoding Parquet) each time cost one full decode per pass; :class:`Decoded`
decodes once and every pass iterates the same :class:`pcs.trace.RequestBatch`
objects (read-only numpy arrays; nobody writes into them).

Memory: the decoded trace -- 8 B per block id plus 32 B per request
(arrival, prompt, output, offset) -- for as long as the replay runs.
"""
from __future__ import annotations

from typing import Any, Iterator

from pcs.trace.batches import as_batches

__all__ = ["Decoded"]


class Decoded:
    """``source`` decoded once (:func:`pcs.trace.batches.as_batches`), re-iterable without decoding again.

    Args:
        source: anything :func:`pcs.trace.batches.as_batches` reads.
    Attributes:
        batches: the checked batches, ids numbered from 0, in order.
        block_size: tokens per block (None for an empty trace).
        num_block_ids: block ids in the trace (sizes the scan's table once).
    Raises:
        ValueError, InputError: as :func:`pcs.trace.batches.as_batches`.
    """

    def __init__(self, source: Any) -> None:
        self.batches = list(as_batches(source))
        self.block_size = int(self.batches[0].block_size) if self.batches else None
        self.num_block_ids = sum(int(b.block_offsets[-1] - b.block_offsets[0]) for b in self.batches)

    def iter_batches(self) -> Iterator:
        """The batches, in order (each call starts again)."""
        return iter(self.batches)
