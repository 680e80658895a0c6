"""Does restoring a cached prefix beat recomputing it? (docs/semantics.md §10)

Serial model: the cached path reads D bytes at B_eff, then computes what is not
cached and pays a fixed overhead (setup + convert + sync)::

    T_cached = D / B_eff + T_remaining + T_overhead   against   T_full

Break-even bandwidth: B* = D / (T_full - T_remaining - T_overhead). When that
denominator is <= 0 no bandwidth makes the cached path faster. The decision
rounds the three times to integer nanoseconds (``Decimal(repr(seconds))``, so
0.05 - 0.02 - 0.03 is exactly 0, never 1e-17 s and a break-even of 3e26 B/s, and
a computed 0.3 - 0.1 = 0.19999999999999998 s is 200 ms); from those times on
everything is exact: the margin, each row's read D / B_eff and net saving as
fractions, the verdict the saving's sign. The figures shown beside a verdict
(``margin_s``, ``cached_s``, ``saved_s``) are those exact values as the nearest
float, so ``saved_s`` > 0 is "faster", < 0 "slower", 0 "equal"; the result keeps
T_full, T_remaining and T_overhead as given, so ``full_prefill_s - cached_s`` may
differ from ``saved_s`` by the times' sub-nanosecond part. The break-even is the
same rule as a replay's links (:func:`break_even_bps`).

With overlap: if W seconds of independent compute run between issuing the
load and needing the data, the exposed wait is max(0, T_IO - W) with
T_IO = D / B_eff (only work that does not depend on the loaded data counts in W).

>>> r = envelope(10**9, 0.100, 0.030, 0.005, [10e9, 20e9])
>>> [row.verdict for row in r.rows], round(r.break_even_bps / 1e9, 2)
(['slower', 'faster'], 15.38)
>>> envelope(10**9, 0.05, 0.02, 0.03, [1e12]).break_even_bps is None
True
"""
from __future__ import annotations

from pcs.errors import shown_repr

import math
import numbers
from dataclasses import fields
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import Any, Iterable
from pcs.argcheck import check_bandwidth, check_byte_count, check_int, check_number_list, check_real
from pcs._dataclass import dataclass
from pcs.errors import keyword_refusals

__all__ = ["EnvelopeRow", "EnvelopeResult", "envelope", "break_even_bps", "seconds_to_ns",
           "restore_bytes_for_tokens", "restore_for_tokens", "restored_tokens"]


def seconds_to_ns(seconds: float | int, name: str = "a time") -> int:
    """Seconds to integer nanoseconds via the shortest decimal repr (exact for typed values).

    >>> seconds_to_ns(0.05) - seconds_to_ns(0.02) - seconds_to_ns(0.03)
    0

    Args:
        seconds: any real number >= 0 but bool (:func:`pcs.argcheck.check_real`).
        name: the parameter for the message, e.g. ``"full_prefill_s"``.
    Raises:
        UserError: negative, non-finite or not a number; the message names ``name``.
    """
    value = check_real(seconds, name, lo=0)
    exact = Decimal(int(seconds)) if isinstance(seconds, numbers.Integral) else Decimal(repr(value))
    return int((exact * 10**9).to_integral_value(rounding=ROUND_HALF_EVEN))


@dataclass(frozen=True, slots=True)
class EnvelopeRow:
    """One bandwidth's outcome.

    Attributes:
        bandwidth_bps: B_eff in bytes/s.
        read_s: D / B_eff in seconds (inf when B_eff is 0 and D > 0).
        cached_s: read_s + T_remaining + T_overhead.
        saved_s: T_full - cached_s (negative when the cached path is slower).
        verdict: "faster", "slower" or "equal" (cached path vs recompute, exact).
        exposed_wait_s: max(0, read_s - W), or None without an overlap window.
    """

    bandwidth_bps: float
    read_s: float
    cached_s: float
    saved_s: float
    verdict: str
    exposed_wait_s: float | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this row (keys as the attribute names; inf/NaN as None, as the CLI prints null)."""
        return {f.name: json_number(getattr(self, f.name)) for f in fields(self)}

    as_dict = to_dict   # the former name, kept for callers


@dataclass(frozen=True, slots=True)
class EnvelopeResult:
    """The envelope for one restore: inputs, margin, break-even and one row per bandwidth.

    Attributes:
        restore_bytes: D in bytes.
        full_prefill_s, remaining_s, overhead_s: T_full, T_remaining, T_overhead as given (s).
        overlap_s: W in seconds, or None.
        margin_s: T_full - T_remaining - T_overhead from integer nanoseconds (s);
            the time budget the read must fit in.
        break_even_bps: D / margin_s in bytes/s, or None when margin_s <= 0.
        rows: one :class:`EnvelopeRow` per bandwidth, in the given order.
    """

    restore_bytes: int
    full_prefill_s: float
    remaining_s: float
    overhead_s: float
    overlap_s: float | None
    margin_s: float
    break_even_bps: float | None
    rows: tuple[EnvelopeRow, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: scalar fields plus ``rows`` as a list of objects; strict JSON (inf/NaN as None, as
        the CLI prints null), named as the other results' ``to_dict``."""
        out = {f.name: json_number(getattr(self, f.name)) for f in fields(self) if f.name != "rows"}
        out["rows"] = [row.to_dict() for row in self.rows]
        return out

    as_dict = to_dict   # the former name, kept for callers


def json_number(value: Any) -> Any:
    """``value``, or None for a float that is NaN or infinite (JSON has no spelling for them)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _check_bytes(restore_bytes: int) -> int:
    return check_byte_count(restore_bytes, "restore_bytes", lo=0)


def _ns(full_prefill_s: float, remaining_s: float, overhead_s: float) -> tuple[int, int, int]:
    """T_full, T_remaining, T_overhead in integer nanoseconds (:func:`seconds_to_ns`; UserError naming a bad one)."""
    return (seconds_to_ns(full_prefill_s, "full_prefill_s"), seconds_to_ns(remaining_s, "remaining_s"),
            seconds_to_ns(overhead_s, "overhead_s"))


def break_even_bps(restore_bytes: int, full_prefill_s: float, remaining_s: float,
                   overhead_s: float) -> float | None:
    """Bandwidth at which restoring ``restore_bytes`` costs exactly the full prefill.

    B* = D / (T_full - T_remaining - T_overhead), the times in integer
    nanoseconds (see the module docstring): the figure of :func:`envelope` and of
    a replay's links (``envelope.links[].break_even_bps``, pcs.engine.summary).

    >>> round(break_even_bps(10**9, 0.1, 0.03, 0.005) / 1e9, 4)   # 1 GB / 65 ms
    15.3846

    Returns:
        bytes/s, 0.0 when D is 0, or None when the denominator is <= 0.
    Raises:
        UserError: negative bytes or times.
    """
    d = _check_bytes(restore_bytes)
    full_ns, remaining_ns, overhead_ns = _ns(full_prefill_s, remaining_s, overhead_s)
    margin_ns = full_ns - remaining_ns - overhead_ns
    if margin_ns <= 0:
        return None
    return d * 1e9 / margin_ns


def _row(d: int, bandwidth_bps: float, margin: Fraction, full_prefill_s: Fraction,
         overlap_s: float | None) -> EnvelopeRow:
    """One bandwidth's row, decided exactly: saved = margin - D / B as a fraction, its sign the verdict, and
    ``saved_s`` / ``cached_s`` that fraction (and T_full - it) as the nearest float, so they never disagree."""
    read = Fraction(d) / Fraction(bandwidth_bps) if d else Fraction(0)     # B >= 1 B/s (check_bandwidth)
    saved = margin - read
    verdict = "faster" if saved > 0 else "slower" if saved < 0 else "equal"
    read_s = float(read)
    exposed = None if overlap_s is None else max(0.0, read_s - overlap_s)
    return EnvelopeRow(float(bandwidth_bps), read_s, float(full_prefill_s - saved), float(saved), verdict, exposed)


@keyword_refusals
def envelope(restore_bytes: int, full_prefill_s: float, remaining_s: float, overhead_s: float,
             bandwidths_bps: Iterable[float], overlap_s: float | None = None) -> EnvelopeResult:
    """Cached path against recompute at each bandwidth (docs/semantics.md §10).

    Args:
        restore_bytes: D, bytes read to restore the prefix (int >= 0).
        full_prefill_s: T_full, seconds to prefill the whole prompt without cache.
        remaining_s: T_remaining, seconds of prefill still needed after the restore.
        overhead_s: T_overhead, fixed seconds per restore (setup + convert + sync).
        bandwidths_bps: effective restore bandwidths in bytes/s (each >= 1 B/s, as ``--bandwidth``:
            :func:`pcs.argcheck.check_bandwidth`).
        overlap_s: W, seconds of independent compute overlapping the load, or None.
    Returns:
        EnvelopeResult with one row per bandwidth and the break-even bandwidth.
    Raises:
        UserError: (a ValueError naming the parameter, :mod:`pcs.argcheck`) bytes that are not an integer
            >= 0; negative or non-finite times or bandwidths; ``bandwidths_bps`` not a list of numbers.
    """
    d = _check_bytes(restore_bytes)
    times_ns = _ns(full_prefill_s, remaining_s, overhead_s)
    full, margin = Fraction(times_ns[0], 10**9), Fraction(times_ns[0] - times_ns[1] - times_ns[2], 10**9)
    full_prefill_s, remaining_s, overhead_s = float(full_prefill_s), float(remaining_s), float(overhead_s)
    if overlap_s is not None:
        seconds_to_ns(overlap_s, "overlap_s")  # validates
        overlap_s = float(overlap_s)
    rows = []
    for bw in check_number_list(bandwidths_bps, "bandwidths_bps",
                                lambda v, n: check_bandwidth(check_real(v, n, lo=0), f"{n} = {shown_repr(v)}")):
        rows.append(_row(d, float(bw), margin, full, overlap_s))
    return EnvelopeResult(
        restore_bytes=d, full_prefill_s=float(full_prefill_s), remaining_s=float(remaining_s),
        overhead_s=float(overhead_s), overlap_s=None if overlap_s is None else float(overlap_s),
        margin_s=float(margin), break_even_bps=break_even_bps(d, full_prefill_s, remaining_s, overhead_s),
        rows=tuple(rows),
    )


def restore_bytes_for_tokens(model: Any, tokens: int, block_size: int = 16, layout: str = "serialized",
                             prompt_tokens: int | None = None) -> int:
    """Bytes to restore ``tokens`` cached tokens of ``model`` from a lower tier: :func:`restore_for_tokens`' bytes.

    >>> from pcs.model import get_model
    >>> restore_bytes_for_tokens(get_model("llama-3.1-8b"), 1000, 512)   # 1 block of 512 x 131,072 B
    67108864

    Raises:
        UserError: tokens < 0 or block_size < 1, or an unknown layout name.
    """
    return restore_for_tokens(model, tokens, block_size, layout, prompt_tokens)[1]


def restore_for_tokens(model: Any, tokens: int, block_size: int = 16, layout: str = "serialized",
                       prompt_tokens: int | None = None) -> tuple[int, int]:
    """(tokens restored, bytes moved) when ``tokens`` cached tokens of ``model`` come back from a lower tier.

    Only full blocks are cached (docs/semantics.md §2): tokens are rounded DOWN to
    whole blocks, and with ``prompt_tokens`` capped at that prompt's best-case hit (§4, the last token is
    recomputed: :func:`restored_tokens`). Lower tiers keep the "serialized" form
    (payload plus scales and padding), which is what crosses the link (docs/semantics.md §13).
    A model of full attention only moves every block: blocks x
    ``pcs.model.block_bytes(model, block_size, layout).total_bytes``. A hybrid model moves what pcs replay's
    restore moves (:func:`pcs.model.footprint.hybrid_restore`, docs/semantics.md §3.1, §13.1): the hit every
    cache group accepts (a state group's ends at a checkpoint, fewer tokens), a sliding window only its last
    blocks, a state group one state, each block as whole pages (page padding included).

    >>> from pcs.model import get_model   # full 16 x 5,242,880 + window 2 x 27,262,976 + padding 2 x 4,194,304
    >>> restore_for_tokens(get_model("gemma-3-27b").with_tp(8), 8192, 512)
    (8192, 146800640)
    >>> restore_for_tokens(get_model("llama-3.1-8b"), 8192, 512, prompt_tokens=8192)   # 15 x 512 x 131,072 B
    (7680, 1006632960)

    Raises:
        UserError: tokens < 0 or block_size < 1, or an unknown layout name.
    """
    tokens = restored_tokens(tokens, block_size, prompt_tokens)
    from pcs.model import block_bytes  # lazy: the model package is only needed here
    from pcs.model.footprint import hybrid_restore

    hybrid = hybrid_restore(model, tokens // block_size, block_size, layout)
    if hybrid is not None:
        return hybrid[0] * block_size, hybrid[1]
    return tokens, tokens // block_size * int(block_bytes(model, block_size, layout).total_bytes)


def restored_tokens(tokens: int, block_size: int, prompt_tokens: int | None = None) -> int:
    """The part of ``tokens`` cached tokens a restore can bring back: the full blocks (docs/semantics.md §2,
    :meth:`pcs.blocks.BlockRules.cacheable_blocks`) times ``block_size``, and with ``prompt_tokens`` no more
    than that prompt's best-case hit (docs/semantics.md §4, :meth:`pcs.blocks.BlockRules.best_hit_tokens`: the
    last token is recomputed for the first output's logits, so a full hit still computes a block, as replay
    counts it); the rest is computed.

    >>> restored_tokens(1000, 512), restored_tokens(1024, 512), restored_tokens(100, 512)
    (512, 1024, 0)
    >>> restored_tokens(8192, 512, prompt_tokens=8192), restored_tokens(8192, 16, prompt_tokens=8192)
    (7680, 8176)

    Raises:
        UserError: (a ValueError) tokens or prompt_tokens < 0 or block_size < 1, naming the parameter.
    """
    from pcs.blocks import BlockRules

    tokens = check_int(tokens, "tokens", lo=0)
    block_size = check_int(block_size, "block_size", lo=1)
    full = BlockRules().cacheable_blocks(tokens, -(-tokens // block_size), block_size) * block_size
    if prompt_tokens is None:
        return full
    return min(full, BlockRules().best_hit_tokens(check_int(prompt_tokens, "prompt_tokens", lo=0), block_size))
