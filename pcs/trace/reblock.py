"""Re-blocking a hash-id trace for an engine with another block size: exact when coarser, bounds when finer.

A hash-id trace recorded at B tokens per block (Mooncake 512) says which
B-token blocks two requests share, not which tokens: a question about an
engine with b-token blocks (vLLM 16) has an exact answer only in one
direction (docs/semantics.md §1, chained ids stand for whole prefixes):

- **coarser, b = k x B**: coarse block J is the fine blocks Jk .. Jk+k-1, so
  two coarse blocks are equal exactly when their last fine ids (which stand
  for the whole prefix) and lengths are: id = mix(last fine id, tokens). Exact.
- **finer, b = B / k**: each B-block becomes ceil(t / b) sub-blocks (t its
  tokens). Two streams bound what the engine could see:

  * ``lower``: no reuse inside a B-block beyond what its id says. Sub-block
    j of block X is mix(X, j): a shared B-block shares all its sub-blocks, a
    differing one none.
  * ``upper``: the longest shared run possible inside the first differing
    B-block. Sub-blocks of the children of one parent P (siblings: blocks
    that follow the same prefix) share their first k - 1 sub-blocks (for a
    partial block of t tokens, its first t // b, all full): sub-block j of X
    is mix(P, j) for j < that limit, else mix(X, j). Two different siblings
    cannot share all k sub-blocks (they would be the same block), so this is
    the most sharing the B-ids allow.

  Any engine's real b-block stream shares at least what ``lower`` shares and
  at most what ``upper`` does, so hit ratios at b lie between the two
  replays' (sharing more never costs an LRU hit: stack distances only
  shrink; the hypothesis test in tests/trace/test_reblock.py checks it on
  token traces, whose exact answer is known).

Both directions need chained ids (every id always follows the same parent
id), which Mooncake's and Bailian's are; :func:`check_chained` refuses others.
Streaming: each request is mapped on its own, batch by batch.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterator

import numpy as np

from pcs.errors import UnknownNameError, UserError, shown_path
from pcs.trace.idmix import mix64
from pcs.trace.request import RequestBatch
from pcs._dataclass import dataclass

__all__ = ["whole_factor", "BOUNDS", "ReblockedTrace", "check_chained", "reblock_batch", "reblock", "plan_engine_block_size",
           "interval_payload", "MEANING"]

#: What the interval means, for tables and JSON.
MEANING = ("a trace recorded at {B}-token blocks says which {B}-token blocks requests share, not which tokens: "
           "lower assumes no sharing inside one {B}-token block beyond its id (a differing block shares none of its "
           "{b}-token parts), upper the longest run its id allows (siblings share all parts but the last); "
           "an engine with {b}-token blocks sees a hit ratio between the two")

BOUNDS = ("lower", "upper")
_TAG_LOWER, _TAG_UPPER, _TAG_COARSE = 0x10E4, 0x0FFE4, 0xC0A25E
#: The upper bound's shared parts of a request's first block (no parent) in a family of their own: a parent id
#: standing for "no parent" would be some trace's real id (any uint64 is one).
_TAG_UPPER_FIRST = 0x0FFE5


def _positions(b: RequestBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row of each id, its position in the row, tokens in its block)."""
    row = np.repeat(np.arange(len(b)), b.num_blocks)
    pos = np.arange(b.block_hashes.size) - b.block_offsets[:-1][row]
    tok = np.minimum(b.block_size, b.prompt_tokens[row] - pos * b.block_size)
    return row, pos, tok


def _finer(b: RequestBatch, fine: int, bound: str) -> RequestBatch:
    k = b.block_size // fine
    h = b.block_hashes
    row, pos, tok = _positions(b)
    nsub = -(-tok // fine)
    sub_offs = np.zeros(h.size + 1, dtype=np.int64)
    np.cumsum(nsub, out=sub_offs[1:])
    src = np.repeat(np.arange(h.size), nsub)
    j = np.arange(sub_offs[-1]) - sub_offs[:-1][src]
    ids = mix64(_TAG_LOWER, h[src], j)
    if bound == "upper":
        parent = np.zeros_like(h)
        parent[1:] = h[:-1]
        limit = np.where(tok == b.block_size, k - 1, tok // fine)
        common = j < limit[src]
        first = (pos == 0)[src]
        inner, top = common & ~first, common & first
        ids[inner] = mix64(_TAG_UPPER, parent[src][inner], j[inner])
        ids[top] = mix64(_TAG_UPPER_FIRST, j[top])
    per_row = np.bincount(row, weights=nsub, minlength=len(b)).astype(np.int64)
    offs = np.zeros(len(b) + 1, dtype=np.int64)
    np.cumsum(per_row, out=offs[1:])
    return replace(b, block_size=fine, block_offsets=offs, block_hashes=ids)


def _coarser(b: RequestBatch, coarse: int) -> RequestBatch:
    k = coarse // b.block_size
    new_n = -(-b.prompt_tokens // coarse)
    row = np.repeat(np.arange(len(b)), new_n)
    offs = np.zeros(len(b) + 1, dtype=np.int64)
    np.cumsum(new_n, out=offs[1:])
    J = np.arange(offs[-1]) - offs[:-1][row]
    last = np.minimum((J + 1) * k, b.num_blocks[row]) - 1
    length = np.minimum(coarse, b.prompt_tokens[row] - J * coarse)
    ids = mix64(_TAG_COARSE, b.block_hashes[b.block_offsets[:-1][row] + last], length)
    return replace(b, block_size=coarse, block_offsets=offs, block_hashes=ids)


def whole_factor(block_size: int, recorded: int) -> bool:
    """Whether a hash-id trace recorded at ``recorded``-token blocks re-blocks to ``block_size`` (both > 0): one is
    a multiple of the other (docs/traces-formats.md: exact at a multiple, an interval at a divisor) -- the one test
    of :func:`reblock` and the refusals naming the road (pcs.trace.api)."""
    return block_size % recorded == 0 or recorded % block_size == 0


def reblock_batch(b: RequestBatch, block_size: int, bound: str = "lower") -> RequestBatch:
    """One batch at ``block_size``: exact when it is a multiple of ``b.block_size``, else the ``bound`` stream.

    Args:
        b: requests with chained ids at ``b.block_size`` = B.
        block_size: the engine's b; a multiple of B, or a divisor of it.
        bound: ``lower`` or ``upper`` (finer only; ignored when coarser).
    Returns:
        the requests with ids at b (``np.ndarray[np.uint64]``, ``ceil(prompt / b)`` per request).
    Raises:
        UserError: b neither divides B nor is a multiple of it; unknown bound.

    >>> one = RequestBatch(0, 4, np.zeros(2), np.array([8, 6]), np.zeros(2, dtype=np.int64),
    ...                    np.array([0, 2, 4]), np.array([1, 2, 1, 3], dtype=np.uint64))
    >>> lo, up = reblock_batch(one, 2, "lower"), reblock_batch(one, 2, "upper")
    >>> lo.num_blocks.tolist(), bool(lo.block_hashes[2] == lo.block_hashes[6])
    ([4, 3], False)
    >>> bool(up.block_hashes[2] == up.block_hashes[6])   # siblings 2 and 3 of parent 1 share their first half
    True
    """
    bs = b.block_size
    if bound not in BOUNDS:
        raise UnknownNameError("bound", bound, BOUNDS)
    if block_size == bs:
        return b
    if block_size % bs == 0:
        return _coarser(b, block_size)
    if bs % block_size == 0:
        return _finer(b, block_size, bound)
    raise UserError(f"block size {block_size} neither divides the trace's {bs} nor is a multiple of it; "
                     "a hash-id trace can only be re-blocked by a whole factor")


def check_chained(b: RequestBatch, name: str = "trace") -> None:
    """Raise UserError unless every id always follows the same parent id (chained ids)."""
    h = b.block_hashes
    if h.size == 0:
        return
    parent = np.zeros_like(h)
    parent[1:] = h[:-1]
    first = np.zeros(h.size, dtype=np.uint64)  # 1 at a request's first block: the root, whatever id 0 stands for
    starts = b.block_offsets[:-1][b.num_blocks > 0]
    parent[starts], first[starts] = 0, 1
    pairs = np.unique(np.stack([h, parent, first], axis=1), axis=0)
    if pairs.shape[0] != np.unique(h).size:
        raise UserError(f"{shown_path(name)}: some block hash follows different parent hashes, so hashes are not chained prefix "
                         "hashes and cannot be re-blocked")


@dataclass
class ReblockedTrace:
    """A trace read at its own block size and served at another (a ``Trace`` look-alike for ``pcs.replay``).

    Attributes:
        source: the underlying :class:`pcs.trace.Trace` (at its recorded size B).
        block_size: the engine's b.
        bound: ``exact`` (coarser), ``lower`` or ``upper`` (finer).
    """

    source: object
    block_size: int
    bound: str

    @property
    def path(self):
        return self.source.path

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def format(self) -> str:
        return self.source.format

    @property
    def skipped(self) -> int:
        return self.source.skipped

    @property
    def skipped_lines(self) -> tuple:
        return self.source.skipped_lines

    def iter_batches(self) -> Iterator[RequestBatch]:
        """The source's batches re-blocked one by one (ids renumbered by the source)."""
        bound = "lower" if self.bound == "exact" else self.bound
        for b in self.source.iter_batches():
            yield reblock_batch(b, self.block_size, bound)

    def __iter__(self):
        for b in self.iter_batches():
            yield from b.requests()


def reblock(trace, block_size: int, check: bool = True) -> dict[str, ReblockedTrace]:
    """The streams that answer a question at ``block_size`` about ``trace`` (at its own B).

    Returns:
        ``{"exact": ...}`` when ``block_size`` is a multiple of B, else
        ``{"lower": ..., "upper": ...}``.
    Raises:
        UserError: not a whole factor; ids not chained (with ``check``: one
            pass over the trace).
    """
    bs = trace.block_size
    if not whole_factor(block_size, bs):
        raise UserError(f"block size {block_size} neither divides the trace's {bs} nor is a multiple of it; "
                         "a hash-id trace can only be re-blocked by a whole factor")
    if check:
        from pcs.trace.request import concat_batches

        check_chained(concat_batches(list(trace.iter_batches()), bs), trace.name)
    if block_size % bs == 0:
        return {"exact": ReblockedTrace(trace, block_size, "exact")}
    return {b: ReblockedTrace(trace, block_size, b) for b in BOUNDS}


def plan_engine_block_size(path, fmt: str | None, block_size: int | None) -> int | None:
    """The recorded block size B when ``block_size`` asks for re-blocking a hash-id trace, else None.

    ``--block-size`` on a Mooncake/Bailian file has meant the size it was
    recorded at; it still does when the file's id counts fit it. When they
    fit the format's default B instead (``len(hash_ids) == ceil(input_length
    / B)`` on a line where the two sizes disagree), ``block_size`` is the
    engine's and the trace is re-blocked from B. Parquet stores B. ``path`` None is the bundled sample
    (:func:`pcs.trace.api.trace_path`), which ``open_trace`` reads then.
    """
    from pcs.trace.api import trace_path
    from pcs.trace.source import is_stream

    if block_size is None:
        return None
    path = trace_path(path)         # no trace named: the bundled sample, as open_trace reads it
    if is_stream(path):             # stdin, a FIFO: read once, by open_trace
        return None
    from pcs.errors import InputError
    from pcs.trace.api import _default_block_size, detect_format

    try:        # as --on-error skip detects it: a first line the reader would skip is passed over here, and a
        fmt = fmt or detect_format(path, on_error="skip")   # file open_trace refuses is refused there, in its
    except InputError:                                      # words for the run's own on_error
        return None
    if fmt == "parquet":
        from pcs.trace.parquet import parquet_block_size

        stored = parquet_block_size(path, str(path))
        return stored if stored != block_size else None
    if fmt not in ("mooncake", "bailian"):
        return None
    native = _default_block_size(fmt)
    if native == block_size:
        return None
    return native if _ids_fit(path, native, block_size) else None


def _ids_fit(path, native: int, asked: int, max_lines: int = 1000) -> bool:
    """True when the first line whose id count tells the two sizes apart fits ``native``, among the first
    ``max_lines`` non-blank lines. A line the readers refuse (bad JSON, a key twice, no ``input_length`` or
    ``hash_ids``) tells nothing and is passed over: with ``--on-error skip`` the readers skip it, without it
    they refuse it whichever block size is used."""
    from pcs import jsondepth
    from pcs.trace.source import peek_lines

    for line in peek_lines(path, max_lines=max_lines, max_bytes=64 << 20):
        try:
            obj = jsondepth.loads(line, object_pairs_hook=jsondepth.no_duplicate_keys)   # as the readers: a key
            p, n = int(obj["input_length"]), len(obj["hash_ids"])      # twice tells nothing
        except (ValueError, KeyError, TypeError):
            continue
        a, b = -(-p // native), -(-p // asked)
        if a != b:
            return n == a
    return False


def interval_payload(streams: dict, summaries: dict) -> dict:
    """The JSON of ``pcs replay --block-size b`` on a finer b: both replays and the interval.

    Args:
        streams: :func:`reblock` 's ``{"lower", "upper"}``.
        summaries: the replay summary of each bound.
    Returns:
        ``{"trace", "trace_block_size", "block_size", "hit_ratio_interval",
        "single_sequence_hit_ratio_interval", "meaning", "rows", "lower", "upper",
        "title", "notes"}``; each interval is ``[lower bound's, upper bound's]``.
    """
    lo, up = streams["lower"], streams["upper"]
    B, b = lo.source.block_size, lo.block_size
    rows = [{"bound": k, "block_size": b, "hit_ratio": summaries[k]["hit_ratio"],
             "single_sequence_hit_ratio": summaries[k]["single_sequence_hit_ratio"]} for k in BOUNDS]
    meaning = MEANING.format(B=B, b=b)
    return {"trace": lo.name, "trace_block_size": B, "block_size": b,
            "hit_ratio_interval": [summaries["lower"]["hit_ratio"], summaries["upper"]["hit_ratio"]],
            "single_sequence_hit_ratio_interval": [summaries["lower"]["single_sequence_hit_ratio"],
                                                   summaries["upper"]["single_sequence_hit_ratio"]],
            "meaning": meaning, "rows": rows, "lower": summaries["lower"], "upper": summaries["upper"],
            "title": f"{lo.name}: recorded at {B}-token blocks, replayed at {b}",
            "notes": [meaning]}
