"""Hit-ratio curves: LRU at every capacity in one pass, Belady, the ceiling.

``curve(trace)`` answers "what hit ratio at every cache size": the exact LRU
curve for all capacities from one histogram of prefix-aware LRU stack depths
(:mod:`pcs.curves.stackdist`, Mattson et al. 1970), the offline optimum at
the listed capacities (:mod:`pcs.curves.belady`), and the single-sequence
ceiling (infinite cache, :func:`pcs.blocks.single_sequence_hits`), which the
LRU curve reaches at its largest useful capacity.

All ratios are token-weighted (hit tokens / prompt tokens over the trace)
with the block rules of :class:`pcs.blocks.BlockRules`, and equal what
``pcs replay --timing sequential --policy lru`` with one tier of that size
reports (docs/semantics.md §14).

Optional spatial sampling (SHARDS, Waldspurger et al., FAST'15) with the
chain heads kept exact: :mod:`pcs.curves.shards`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from pcs.argcheck import (MAX_BLOCK_SIZE, MAX_COUNT, MAX_POINTS, MAX_SEED, check_flag, check_int,
                          check_number_list, check_real)
from pcs.blocks import BlockRules
from pcs.curves import stackdist
from pcs.curves.result import CurveKnee, CurveResult, CurveRow
from pcs.curves.stackdist import FlatAccesses
from pcs.units import format_counted, format_rate
from pcs.errors import UserError, keyword_refusal, keyword_refusals, shown_repr
from pcs.trace.batches import as_batches, reiterable

__all__ = ["KNEE_PERCENTS", "DEFAULT_POINTS", "MIN_SAMPLED_BLOCKS", "LruCurve", "CurveResult", "CurveRow",
           "CurveKnee", "load_accesses", "lru_curve", "capacity_grid", "curve", "small_sample_note"]

#: Knee levels, percent of the ceiling (docs/semantics.md §14: 50 %, 90 %, 99 %).
KNEE_PERCENTS = (50, 90, 99)


def _source(trace: Any, block_size: int | None) -> Any:
    """``trace`` as :func:`load_accesses` reads it: a path or None opened (:func:`pcs.trace.batches.reiterable`,
    ``block_size`` passed on), any other source as it is."""
    return reiterable(trace, block_size) if trace is None or isinstance(trace, (str, Path)) else trace


def load_accesses(trace: Any = None, block_size: int | None = None,
                  rules: BlockRules = BlockRules()) -> tuple[FlatAccesses, str]:
    """Flatten a trace's cacheable block accesses.

    Args:
        trace: a :class:`FlatAccesses` (returned as it is), or any source
            :func:`pcs.trace.batches.as_batches` reads: a path (None ->
            :data:`pcs.trace.DEFAULT_TRACE`), a :class:`pcs.trace.Trace`, an
            iterable of :class:`pcs.trace.Request`.
        block_size: passed to :func:`pcs.trace.open_trace` for paths.
        rules: block rules.
    Returns:
        ``(accesses, name)``; name is the trace path or a description.
    Raises:
        UserError / InputError: bad trace content; PathError: a trace path missing, a directory or unreadable.
    """
    if isinstance(trace, FlatAccesses):
        return trace, "<accesses>"
    source = _source(trace, block_size)
    name = str(getattr(source, "name", getattr(source, "path", "<requests>")))
    parts = [stackdist.flatten_columns(b.prompt_tokens, b.block_offsets, b.block_hashes, b.block_size, rules)
             for b in as_batches(source)]
    return stackdist.concat(parts), name


@dataclass(frozen=True, slots=True)
class LruCurve:
    """The exact (or SHARDS-estimated) LRU curve for every capacity.

    Attributes:
        hit_tokens_cum: shape (K + 1,): entry k = hit tokens of accesses whose
            lead depth is < k (int64 exact, float64 when sampled and rescaled
            to the full trace); constant from k = K on (K = max depth + 1).
        hit_blocks_cum: same for hit-able accesses counted once each (every
            cacheable access, not only those under the last-token cap).
        prompt_tokens: total prompt tokens (denominator of ratios).
        num_accesses: cacheable block accesses of the full trace.
        num_distinct: distinct cacheable blocks (of the sample when sampled).
        sample_rate: SHARDS rate (1.0 = exact); capacity C maps to depth
            index ``ceil(C * sample_rate)``.
        kernel: stack-depth kernel used ("c" or "python").
        sampled_blocks: with sampling, the distinct blocks the hash sample kept beyond the exact chain heads
            (:attr:`pcs.curves.shards.SampledDepths.num_sampled_blocks`: what the estimate scales up); None when
            exact or nothing was estimated. :func:`small_sample_note` reads it.
    """

    hit_tokens_cum: np.ndarray
    hit_blocks_cum: np.ndarray
    prompt_tokens: int
    num_accesses: int
    num_distinct: int
    sample_rate: float
    kernel: str
    sampled_blocks: int | None = None

    def _index(self, capacity_blocks) -> np.ndarray:
        c = np.asarray(capacity_blocks, dtype=np.int64)
        if np.any(c < 0):
            raise UserError(f"capacities must be >= 0 blocks, got {capacity_blocks}")
        return np.minimum(c, self.hit_tokens_cum.shape[0] - 1)

    @property
    def max_useful_capacity_blocks(self) -> int:
        """Smallest capacity at which LRU reaches the ceiling (0 when nothing ever hits)."""
        return int(self.hit_tokens_cum.shape[0] - 1)

    def hit_tokens(self, capacity_blocks):
        """Token-weighted LRU hits at capacity(ies) in blocks (int64; float64 when sampled)."""
        return self.hit_tokens_cum[self._index(capacity_blocks)]

    def hit_ratio(self, capacity_blocks):
        """Hit tokens / prompt tokens at capacity(ies) in blocks (float64, the shape of ``capacity_blocks``).

        A trace with no prompt tokens has 0 / 0 at every capacity: undefined, NaN here (an array keeps its
        float64 type), as ``CurveRow`` and the JSON give None / null (docs/semantics.md §12).
        """
        hits = self.hit_tokens(capacity_blocks)
        if not self.prompt_tokens:
            return np.full(np.shape(hits), np.nan)[()]
        return hits / self.prompt_tokens

    def block_misses(self, capacity_blocks):
        """Sum over requests of ``n - lead`` (block misses before the last-token cap)."""
        return self.num_accesses - self.hit_blocks_cum[self._index(capacity_blocks)]

    @property
    def ceiling_hit_tokens(self):
        """Hit tokens with an unbounded cache (== single_sequence_hits(...).hit_tokens)."""
        return self.hit_tokens_cum[-1]

    def knee(self, percent: int) -> int | None:
        """Smallest capacity in blocks whose LRU hit tokens reach ``percent`` % of the ceiling.

        Exact (integer arithmetic on the histogram) over ALL capacities, not
        only listed ones. None when the ceiling is 0 (nothing can ever hit).
        """
        top = self.ceiling_hit_tokens
        if top <= 0:
            return None
        return int(np.argmax(self.hit_tokens_cum * 100 >= percent * top))


def lru_curve(flat: FlatAccesses, kernel: str | None = None, sample_rate: float = 1.0, seed: int = 0,
              exact_head_blocks: int = 1) -> LruCurve:
    """The LRU curve from one pass of stack depths plus a weighted histogram.

    Block i of request r hits at capacity C iff its lead depth (running max
    of depths along the request) is in [0, C); the hits at every C are the
    cumulative sum of the histogram of lead depths weighted by hit tokens.
    With ``sample_rate`` < 1 the depths and weights are SHARDS estimates
    (:func:`pcs.curves.shards.sampled_lead_depths`).

    Raises:
        UserError: bad kernel or sample rate.
    """
    kernel = stackdist.resolve_kernel(kernel)
    if sample_rate == 1.0:
        lead, distinct = stackdist.stack_depths(flat.block_hashes, flat.req_offsets, kernel, lead=True)
        w_hist, b_hist = stackdist.depth_histograms(lead, flat.hit_weight_tokens, kernel)
    else:
        from pcs.curves.shards import sampled_lead_depths

        est = sampled_lead_depths(flat, sample_rate, seed, exact_head_blocks, kernel)
        hit = est.lead >= 0
        size = int(est.lead.max()) + 1 if hit.any() else 0
        w_hist = np.bincount(est.lead[hit], weights=est.hit_weight_tokens[hit], minlength=size)
        b_hist = np.bincount(est.lead[hit], weights=est.block_weight[hit], minlength=size)
        distinct = est.num_distinct
    tokens_cum = np.concatenate(([0], np.cumsum(w_hist))).astype(w_hist.dtype)
    blocks_cum = np.concatenate(([0], np.cumsum(b_hist))).astype(b_hist.dtype)
    return LruCurve(tokens_cum, blocks_cum, flat.prompt_tokens, flat.num_accesses, distinct,
                    float(sample_rate), kernel, None if sample_rate == 1.0 else est.num_sampled_blocks)


#: Fewest distinct sampled blocks (beyond the exact chain heads) below which :func:`small_sample_note` warns.
#: Measured (docs/curves.md, "How small a sample"): on the bundled sample, the Mooncake trace and its 10x replica,
#: 29 capacities, 8 seeds, samples of 1,305-1,719 blocks erred by 0.56-0.64 points on average (3.92 at worst);
#: below, see :data:`SAMPLE_ERRORS` (the 10x replica's ~850 blocks: 1.52 on average, its ~330: 4.79). (SHARDS'
#: fixed-size variant, Waldspurger et al. FAST'15, bounds the sample the same way: by its count of distinct sampled
#: blocks, s_max, not by the rate.)
MIN_SAMPLED_BLOCKS = 1000

#: The measured SHARDS error of samples below :data:`MIN_SAMPLED_BLOCKS`, by size, smallest first: (fewest and most
#: sampled blocks measured, (lowest, highest) mean absolute error over the capacities in percentage points, worst
#: error in points), each over the three traces and 8 seeds of docs/curves.md's table ("How small a sample",
#: ``benchmarks/shards_sample_size.py``). :func:`small_sample_note` cites the largest size measured at or below a
#: sample's (error falls as the sample grows, so a sample between two sizes errs no more than the smaller one did).
SAMPLE_ERRORS = ((0, 4, (5.83, 18.18), 34.23), (32, 58, (1.40, 14.07), 19.48), (327, 349, (0.64, 4.79), 8.72),
                 (504, 864, (0.42, 1.52), 4.64))


def small_sample_note(lru: LruCurve) -> str | None:
    """The warning of a sampled curve whose sample is small (fewer than :data:`MIN_SAMPLED_BLOCKS` distinct sampled
    blocks, :attr:`LruCurve.sampled_blocks`), with the error docs/curves.md measured at that size
    (:data:`SAMPLE_ERRORS`), else None (exact, or a sample that large, or nothing estimated). ``pcs curve``
    prints it on stderr and adds it to the JSON's ``notes``.

    >>> small_sample_note(LruCurve(np.zeros(1), np.zeros(1), 0, 0, 0, 1.0, "c")) is None
    True
    >>> small_sample_note(LruCurve(np.zeros(1), np.zeros(1), 0, 0, 0, 0.01, "c", 400)).split(": ")[1]
    'samples of 327-349 blocks (the largest size measured at or below it) erred by 0.64-4.79 points on average over the capacities and by up to 8.72 (docs/curves.md'
    """
    n = lru.sampled_blocks
    if n is None or n >= MIN_SAMPLED_BLOCKS:
        return None
    lo, hi, (m0, m1), worst = next(e for e in reversed(SAMPLE_ERRORS) if e[0] <= n)
    where = "" if n <= hi else " (the largest size measured at or below it)"
    return (f"SHARDS sample rate {format_rate(lru.sample_rate)} kept {format_counted(n, 'distinct block')} beyond "
            "the exact chain heads, fewer "
            f"than {MIN_SAMPLED_BLOCKS:,}: samples of {lo:,}-{hi:,} blocks{where} erred by {m0:.2f}-{m1:.2f} points "
            f"on average over the capacities and by up to {worst:.2f} (docs/curves.md: 3 traces, 8 seeds); raise "
            "--sample-rate, or drop it for the exact curve")


def capacity_grid(max_blocks: int, points: int, start: int = 1) -> list[int]:
    """``points`` capacities spaced geometrically from ``start`` to ``max_blocks`` (deduplicated).

    >>> capacity_grid(1000, 4)
    [1, 10, 100, 1000]
    >>> capacity_grid(1000, 3, start=10)
    [10, 100, 1000]

    Raises:
        UserError: ``points`` not an integer in [1, 1000] (:data:`pcs.argcheck.MAX_POINTS`, as ``--points``).
    """
    points = check_int(points, "points", lo=1, hi=MAX_POINTS)
    top = max(int(max_blocks), 1)
    return sorted({int(x) for x in np.rint(np.geomspace(min(max(int(start), 1), top), top, points))})


def flat_start(lru: "LruCurve") -> int:
    """The largest capacity (blocks, >= 1) whose LRU hit tokens still equal those at 1 block: below it the curve
    is flat (e.g. a block every request shares, hit at any size, and nothing else until one request's run of
    blocks fits), so a grid starting here loses no step of the curve.

    Raises:
        nothing: a curve that never rises gives 1.
    """
    cum = lru.hit_tokens_cum
    rise = np.flatnonzero(cum[1:] > cum[1]) if cum.shape[0] > 2 else np.empty(0, dtype=np.int64)
    return int(rise[0]) if rise.size else 1


#: Capacities in the default grid when neither capacities nor points are given.
DEFAULT_POINTS = 12


def refuse_hybrid_model(spec: Any, block_size: int) -> None:
    """A hybrid model (cache groups other than one full-attention group, docs/semantics.md §3.1) is refused: the
    one-pass curves (§14) apply the all-full-attention rules only, so its curve and byte axis would be another
    model's (docs/hybrid.md "Not on hybrid models").

    Raises:
        UserError: naming the model and the command that replays under its rules.
    """
    from pcs.engine.hybrid import cache_groups, is_hybrid

    if is_hybrid(cache_groups(spec, block_size, block_size, False)):
        given = spec.config_file or spec.name          # a config file: its path, what model= takes back
        raise UserError(f"pcs curve's one-pass curves ignore hybrid model {given}'s cache-group rules; "
                        f"for its hit ratio by capacity run compare with model='{given}' and curve_capacities=")


def _block_bytes(model: Any, block_size: int) -> tuple[str, int]:
    from pcs.model import block_bytes, get_model

    with keyword_refusal("model", model):
        spec = get_model(model) if isinstance(model, str) else model
    refuse_hybrid_model(spec, block_size)
    return spec.name, int(block_bytes(spec, block_size, "reserved").total_bytes)


def _capacities(lru: LruCurve, capacities: Sequence[int] | None, points: int | None) -> list[int]:
    """The listed capacities, sorted, or the geometric grid from the end of the curve's flat start
    (:func:`flat_start`) up to the LRU ceiling.

    Raises:
        UserError: an empty list (a capacity listed twice is refused before, :func:`_once`).
    """
    if capacities is None:
        return capacity_grid(lru.max_useful_capacity_blocks, DEFAULT_POINTS if points is None else points,
                             flat_start(lru))
    if not capacities:
        raise UserError("capacities must be a non-empty list of blocks >= 0, got []")
    return sorted(capacities)


def _rows(lru: LruCurve, caps: list[int], bel: dict, bb: int | None, prompt: int,
          ceiling: float | None) -> tuple[CurveRow, ...]:
    """One :class:`CurveRow` per capacity; its ratios None when ``prompt`` is 0 (0/0, docs/semantics.md §12)."""
    return tuple(CurveRow(
        capacity_blocks=c, capacity_bytes=None if bb is None else c * bb,
        lru_hit_ratio=float(lru.hit_ratio(c)) if prompt else None,
        belady_hit_ratio=bel[c].hit_tokens / prompt if c in bel and prompt else None,
        ceiling_hit_ratio=ceiling, lru_block_misses=int(np.rint(lru.block_misses(c))),
        belady_block_misses=bel[c].block_misses if c in bel else None) for c in caps)


def _knee(lru: LruCurve, bb: int | None) -> dict[str, CurveKnee]:
    """``{"p50"|"p90"|"p99": CurveKnee}``."""
    knee = {}
    for pct in KNEE_PERCENTS:
        k = lru.knee(pct)
        knee[f"p{pct}"] = CurveKnee(percent_of_ceiling=pct, capacity_blocks=k,
                                    capacity_bytes=None if k is None or bb is None else k * bb,
                                    lru_hit_ratio=None if k is None else float(lru.hit_ratio(k)))
    return knee


def _native_mode(kernel: str | None, native: str | None) -> str | None:
    """The one ``auto | c | python`` switch from ``native=`` or ``kernel=``, its deprecated alias, resolved before the
    trace is read (:func:`pcs.curves.stackdist.resolve_kernel`).

    Raises:
        UserError: both given and different; an unknown or unbuilt kernel (led by ``native=`` or ``kernel=``)."""
    if kernel is not None and native is not None and kernel != native:
        raise UserError(f"native={shown_repr(native)} and kernel={shown_repr(kernel)} name the same switch; give one")
    mode = native if native is not None else kernel
    with keyword_refusal("native" if native is not None else "kernel", mode):
        stackdist.resolve_kernel(mode)          # an unknown or unbuilt kernel refused before the trace is read
    return mode


def _engine(mode: str | None, kernel: str, sample_rate: float) -> tuple[str, str]:
    """``(engine, engine_reason)`` of a curve: ``stack-distance`` (exact) or ``shards`` (sampled), and why; ``kernel``
    is the stack-depth kernel that ran (``c``: pcs/curves/_stackdist.c, ``python``: pcs/curves/stackdist.py)."""
    from pcs._native import default_mode

    mode = default_mode() if mode is None else mode
    engine = "stack-distance" if sample_rate == 1.0 else "shards"
    how = "exact, one pass" if sample_rate == 1.0 else f"SHARDS sampling at rate {format_rate(sample_rate)}"
    impl = "the compiled stack-depth kernel" if kernel == "c" else "the Python stack-depth kernel"
    why = "" if mode != "auto" else (", compiled twin built" if kernel == "c" else ", compiled twin not built")
    return engine, f"{how}; {impl} (native={mode}{why})"


def _belady(flat: FlatAccesses, caps: Sequence[int], progress: Callable[[int], None] | None) -> dict[int, int]:
    """Belady's hit blocks at each capacity of ``caps`` (one pass each, :mod:`pcs.curves.belady`); ``progress(1)``
    after each pass."""
    from pcs.curves.belady import belady_hits, plan_belady

    plan, out = plan_belady(flat), {}
    for c in caps:
        out[c] = belady_hits(plan, c)
        if progress is not None:
            progress(1)
    return out


def _once(capacities: list[int]) -> list[int]:
    """``capacities`` as given, each once: one row per capacity, a repeat refused rather than merged in silence,
    worded as ``--capacities`` refuses it (:func:`pcs.cli.params.parse_capacity_list`).

    >>> _once([5, 1])
    [5, 1]

    Raises:
        UserError: ``capacities: 5 is listed twice; give each capacity once``.
    """
    seen: set[int] = set()
    for c in capacities:
        if c in seen:
            raise UserError(f"capacities: {c} is listed twice; give each capacity once")
        seen.add(c)
    return capacities


def _checked_args(capacities: Any, points: Any, sample_rate: Any, seed: Any, exact_head_blocks: Any,
                  belady: Any, block_size: Any) -> tuple:
    """:func:`curve`'s numeric arguments checked by :mod:`pcs.argcheck` with the CLI's ranges (``--points``
    1..1000, ``--seed`` 0..2^63-1, ``--exact-head-blocks`` 0..10^9, ``--sample-rate`` (0, 1], ``--block-size``
    1..2^20); capacities as a list of ints >= 0, each once (a str is refused, not iterated; :func:`_once`).

    Raises:
        UserError: naming the parameter; both ``capacities`` and ``points`` given.
    """
    if capacities is not None and points is not None:
        raise UserError("give capacities or points, not both")
    caps = None if capacities is None else _once(check_number_list(capacities, "capacities",
                                                                   lambda v, n: check_int(v, n, lo=0)))
    points = None if points is None else check_int(points, "points", lo=1, hi=MAX_POINTS)
    if block_size is not None:
        check_int(block_size, "block_size", lo=1, hi=MAX_BLOCK_SIZE)
    return (caps, points, check_real(sample_rate, "sample_rate", lo=0, lo_open=True, hi=1),
            check_int(seed, "seed", lo=0, hi=MAX_SEED), check_int(exact_head_blocks, "exact_head_blocks", lo=0,
                                                                   hi=MAX_COUNT), check_flag(belady, "belady"))


def _caveats(source: Any) -> tuple[str, ...]:
    """The caveat notes of the trace a curve read (:func:`pcs.trace.api.trace_notes`, read after the trace was;
    none for flat accesses, which carry no trace)."""
    from pcs.trace.api import trace_notes

    return () if isinstance(source, FlatAccesses) else trace_notes(source)


@keyword_refusals
def curve(trace: Any = None, capacities: Sequence[int] | None = None, points: int | None = None,
          model: Any = None, *, block_size: int | None = None, rules: BlockRules = BlockRules(),
          belady: bool = True, sample_rate: float = 1.0, seed: int = 0, exact_head_blocks: int = 1,
          kernel: str | None = None, native: str | None = None,
          progress: Callable[[int], None] | None = None) -> CurveResult:
    """LRU, Belady and ceiling hit ratios of a trace at many capacities.

    Args:
        trace: path / Trace / iterable of Requests / FlatAccesses
            (see :func:`load_accesses`); None = the bundled sample trace.
        capacities: cache sizes in blocks (>= 0, each once: a capacity listed twice is refused, as the CLI
            refuses it); or
        points: that many capacities spaced geometrically up to the
            capacity where LRU reaches the ceiling (default 12).
        model: preset name or ModelSpec; adds ``capacity_bytes`` = capacity x
            ``pcs.model.block_bytes(model, block_size, "reserved").total_bytes``
            (the GPU tier holds the reserved layout); a hybrid model is refused (:func:`refuse_hybrid_model`).
        block_size: tokens per block for token traces (passed to open_trace).
        rules: block rules (full blocks only, last-token cap by default).
        belady: compute the offline optimum at each capacity (pure Python,
            one pass per capacity, docs/performance.md; skipped when sampled).
        sample_rate: SHARDS rate in (0, 1]; 1.0 = exact.
        seed: sampling hash seed.
        exact_head_blocks: with sampling, blocks seen within this many head
            positions are kept exactly (:mod:`pcs.curves.shards`).
        native: ``auto``, ``c`` or ``python``: the compiled stack-depth
            kernel or its Python twin (:mod:`pcs._native`); None =
            ``$PCS_NATIVE`` or ``auto``.
        kernel: deprecated alias of ``native`` (its older name, same values; still accepted, equal to ``native``
            when both are given). The result keeps its ``kernel`` key (the kernel that ran) beside ``engine``.
        progress: called with 1 after each capacity's Belady pass (the slow part), or None.
    Returns:
        :class:`CurveResult`. A trace with no prompt tokens (every prompt 0 tokens) has 0 / 0 for every ratio:
        ``ceiling_hit_ratio`` and each row's ``lru_hit_ratio``, ``belady_hit_ratio`` and ``ceiling_hit_ratio``
        are None (JSON null, ``-`` in the table) and ``lru.hit_ratio(...)`` is NaN (docs/semantics.md §12).
    Raises:
        UserError: (a ValueError naming the parameter, :func:`_checked_args`) both or bad capacities/points,
            a bad sample rate, seed, exact_head_blocks or native/kernel, ``native`` and ``kernel`` that differ,
            unknown model, a hybrid model; InputError for bad trace content.
    """
    capacities, points, sample_rate, seed, exact_head_blocks, belady = _checked_args(
        capacities, points, sample_rate, seed, exact_head_blocks, belady, block_size)
    mode = _native_mode(kernel, native)
    source = _source(trace, block_size)         # opened once: its caveats are read after load_accesses reads it
    flat, name = load_accesses(source, block_size, rules)
    lru = lru_curve(flat, mode, sample_rate, seed, exact_head_blocks)
    caps = _capacities(lru, capacities, points)
    model_name, bb = _block_bytes(model, flat.block_size) if model is not None else (None, None)
    prompt, exact = flat.prompt_tokens, sample_rate == 1.0
    bel = _belady(flat, caps, progress) if belady and exact else {}
    ceiling = float(lru.ceiling_hit_tokens / prompt) if prompt else None     # 0/0: undefined (semantics §12)
    engine, reason = _engine(mode, lru.kernel, float(sample_rate))
    return CurveResult(trace=name, block_size=flat.block_size, requests=flat.num_requests,
                       block_accesses=flat.block_accesses, cacheable_blocks=flat.num_accesses,
                       distinct_cacheable_blocks=lru.num_distinct if exact else None,
                       prompt_tokens=prompt, sample_rate=float(sample_rate), kernel=lru.kernel,
                       engine=engine, engine_reason=reason,
                       model=model_name, block_bytes=bb, ceiling_hit_ratio=ceiling, knee=_knee(lru, bb),
                       rows=_rows(lru, caps, bel, bb, prompt, ceiling), lru=lru,
                       notes=_caveats(source))
