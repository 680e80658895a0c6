"""The typed curve result: what ``pcs.curve(...)`` returns and ``pcs curve --format json`` prints.

:class:`CurveResult` holds the trace facts, the ceiling, one :class:`CurveKnee`
per knee level and one :class:`CurveRow` per capacity; ``to_dict()`` gives the
JSON object, keys in the order the CLI prints them. Ratios are token-weighted
(hit tokens / prompt tokens) under the block rules (``docs/semantics.md``
§14). Units and meanings per field: ``docs/json.md``. :func:`upgrade_curve_payload`
reads the JSON of a pcs before 2026-12-04 (``pcs report`` takes it).
"""
from __future__ import annotations

from typing import Any

from pcs.schema import common, field, result, to_dict

__all__ = ["CurveRow", "CurveKnee", "CurveResult", "OLD_NAMES", "upgrade_curve_payload", "upgraded_curve"]

_NO_MODEL = "without a model"


@result
class CurveRow:
    """Hit ratios and block misses at one capacity."""

    capacity_blocks: int = field("blocks", "cache size")
    capacity_bytes: int | None = field("bytes", "capacity_blocks x the model's reserved bytes per block",
                                       omit=_NO_MODEL)
    lru_hit_ratio: float | None = field("ratio", "exact (or SHARDS-estimated) LRU hit ratio, one tier, sequential; "
                                                 "null when the trace has no prompt tokens (0/0)")
    belady_hit_ratio: float | None = field("ratio", "offline optimum (Belady's MIN); null when not computed or "
                                                    "when the trace has no prompt tokens (0/0)")
    ceiling_hit_ratio: float | None = field("ratio", "single-sequence hit ratio (infinite cache); null when the "
                                                     "trace has no prompt tokens (0/0)")
    lru_block_misses: int = field("blocks", "LRU block misses (sum over requests of blocks - prefix-hit blocks)")
    belady_block_misses: int | None = field("blocks", "Belady block misses; null when not computed")


@result
class CurveKnee:
    """The smallest capacity whose LRU hit ratio reaches a share of the ceiling."""

    percent_of_ceiling: int = field("percent", "the knee level, percent of the ceiling (50, 90 or 99)")
    capacity_blocks: int | None = field("blocks", "smallest such capacity; null when the ceiling is 0")
    capacity_bytes: int | None = field("bytes", "capacity_blocks x the model's reserved bytes per block",
                                       omit=_NO_MODEL)
    lru_hit_ratio: float | None = field("ratio", "LRU hit ratio at that capacity; null when the ceiling is 0")


@result
class CurveResult:
    """Hit ratios per capacity, the LRU knees, and the trace facts behind them (``pcs.curve``).

    ``capacity_bytes`` keys appear in rows and knees only with a model
    (``block_bytes`` not None).
    """

    trace: str = field("-", "trace path or a description")
    block_size: int = common()
    requests: int = field("count", "requests in the trace")
    block_accesses: int = field("blocks", "block lookups: sum over requests of their blocks, partial last blocks "
                                          "included (as in pcs replay and pcs trace stats)")
    cacheable_blocks: int = field("blocks", "blocks the cache may hold under the block rules: the accesses the curve "
                                            "replays (as in pcs replay)")
    distinct_cacheable_blocks: int | None = field("blocks", "distinct ids among the cacheable blocks: a one-tier "
                                                            "cache this large never evicts; null when sampled")
    prompt_tokens: int = field("tokens", "sum of prompt tokens (denominator of the ratios)")
    sample_rate: float = field("ratio", "SHARDS sampling rate (1.0 = exact)")
    kernel: str = field("-", "stack-depth kernel used: c or python")
    engine: str = field("-", "what computed the LRU curve: stack-distance (exact, one pass) or shards (sampled)")
    engine_reason: str = field("-", "why: the sampling rate and which stack-depth kernel ran (C or Python) under "
                                    "native")
    model: str | None = field("-", "model preset name; null without a model")
    block_bytes: int | None = field("bytes", "the model's reserved bytes per block; null without a model")
    ceiling_hit_ratio: float | None = field("ratio", "single-sequence (infinite-cache) hit ratio; null when the "
                                                     "trace has no prompt tokens (0/0: every ratio of the curve "
                                                     "is then null)")
    knee: dict[str, CurveKnee] = field("-", "knees keyed p50, p90, p99")
    rows: tuple[CurveRow, ...] = field("-", "one row per capacity, ascending")
    lru: Any = field("-", "the full one-pass LRU curve, every capacity (pcs.curves.api.LruCurve)", json=False,
                     default=None)
    notes: tuple[str, ...] = field("-", "the trace's caveats, in the API's words (synthetic prefix reuse, bad lines "
                                        "skipped: pcs.trace.api.trace_notes of the trace read; none for "
                                        "FlatAccesses), as pcs.replay's summary.notes end with them; the command "
                                        "prints them in its own words", json=False, default=())

    @property
    def distinct_blocks(self) -> int | None:
        """Gone on 2026-12-04 (it counted the distinct cacheable blocks): always raises.

        Raises:
            AttributeError: naming ``distinct_cacheable_blocks``, its new name.
        """
        raise AttributeError("CurveResult.distinct_blocks was renamed on 2026-12-04: use .distinct_cacheable_blocks "
                             "(the same count); .block_accesses now counts every block hash, as in pcs replay, "
                             "and the old .block_accesses is .cacheable_blocks (docs/curves.md, Python)")

    def to_dict(self) -> dict[str, Any]:
        """The JSON payload of ``pcs curve --format json`` (keys in ``docs/json.md``) less the keys the command adds
        after it (docs/json.md, "pcs curve"): ``dtype`` (its ``--dtype`` option), ``notes`` -- the trace's caveats
        (synthetic prefix reuse, bad lines skipped: :func:`pcs.trace.api.trace_notes` of the trace read) and a
        sampled curve's (:func:`pcs.report.curve.sampled_note`, :func:`pcs.curves.api.small_sample_note`) --,
        ``skipped`` and ``skipped_lines`` (the trace's ``Trace.skipped``, ``Trace.skipped_lines``)."""
        out = to_dict(self)
        if self.block_bytes is None:
            for entry in (*out["knee"].values(), *out["rows"]):
                entry.pop("capacity_bytes")
        return out


#: a curve JSON's keys before 2026-12-04 -> today's names (``block_accesses`` is a today's key too, counting every
#: block hash; ``distinct_blocks`` only a pcs before then wrote)
_RENAMED = {"block_accesses": "cacheable_blocks", "distinct_blocks": "distinct_cacheable_blocks"}
#: today's name -> the old one (a message about a key the file lacks names both)
OLD_NAMES = {new: old for old, new in _RENAMED.items()}


def upgrade_curve_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A curve JSON under today's names, whichever pcs wrote it (:func:`upgraded_curve`'s first item)."""
    return upgraded_curve(payload)[0]


def upgraded_curve(payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A curve JSON under today's names, whichever pcs wrote it, and the names its file holds.

    Before 2026-12-04 the curve's ``block_accesses`` counted the cacheable
    blocks (today's ``cacheable_blocks``) and ``distinct_blocks`` the distinct
    ones among them (today's ``distinct_cacheable_blocks``); the count of every
    block hash (today's ``block_accesses``, as in ``pcs replay``) was not
    written, so the upgraded copy lacks that key. A file holding an old name
    beside its new one (:func:`_both_names`) is read only when the two agree.

    Args:
        payload: a ``pcs curve --format json`` object (not changed).
    Returns:
        (upgraded, written). ``upgraded``: ``payload`` itself when it has neither old key, or has
        ``cacheable_blocks`` or ``distinct_cacheable_blocks`` and no ``distinct_blocks`` (today's JSON: one
        missing is then an error of today's file, not an old file); else a copy under today's names (renamed in
        place; an old key beside its equal new one dropped). ``written``: today's name -> the name the file
        holds, for each key read under its old name (a message about the value names the field as written:
        ``{"distinct_cacheable_blocks": "distinct_blocks"}``); empty for today's file.
    Raises:
        UserError: an old name and its new name both present with different values, e.g.
            ``the curve has both distinct_blocks (its name before 2026-12-04) and
            distinct_cacheable_blocks (today's name), which disagree: 5 and 7``; a today's file (block_accesses
            beside a different cacheable_blocks) lacking ``distinct_cacheable_blocks`` but holding
            ``distinct_blocks``: ``field 'distinct_cacheable_blocks': missing ...``.
    """
    today = any(k in payload for k in _RENAMED.values())
    if not today:
        if not any(k in payload for k in _RENAMED):
            return payload, {}
        return {_RENAMED.get(k, k): v for k, v in payload.items()}, {_RENAMED[k]: k for k in _RENAMED if k in payload}
    if "distinct_blocks" not in payload:
        return payload, {}
    return _both_names(payload)


def _same(a: Any, b: Any) -> bool:
    """Two JSON values equal as written: of one type, so true is not 1 and 25144.0 is not 25144 (the kept value is
    then checked as a count like any other; a disguised one must not pass as agreeing)."""
    return type(a) is type(b) and a == b


def _both_names(payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A curve JSON with ``distinct_blocks`` (only a pcs before 2026-12-04 wrote it) beside today's names: with
    ``distinct_cacheable_blocks`` a today's file with the old key beside (the two must agree; ``block_accesses``
    then counts every block hash); without it an old file given ``cacheable_blocks`` (its ``block_accesses``,
    the old name of that count, must agree). The agreeing old key is dropped, the other renamed
    (:func:`upgraded_curve`'s two items).

    Raises:
        UserError: the two names of one count disagree (both named, both values); an old file given a
            ``cacheable_blocks`` other than its ``block_accesses`` is no old file: a today's file lacking
            ``distinct_cacheable_blocks`` (:func:`_missing_distinct`).
    """
    from pcs.errors import UserError

    old_file = "distinct_cacheable_blocks" not in payload
    if old_file and "block_accesses" in payload and not _same(payload["block_accesses"], payload["cacheable_blocks"]):
        raise _missing_distinct(payload)
    old, new = payload["distinct_blocks"], payload.get("distinct_cacheable_blocks")
    if not old_file and not _same(old, new):
        raise UserError(f"the curve has both distinct_blocks (its name before 2026-12-04) and "
                        f"distinct_cacheable_blocks (today's name), which disagree: {_shown(old)} and {_shown(new)}; "
                        "keep one of them (a curve JSON of today's pcs has distinct_cacheable_blocks alone)")
    if not old_file:
        return {k: v for k, v in payload.items() if k != "distinct_blocks"}, {}
    return ({_RENAMED.get(k, k): v for k, v in payload.items() if k != "block_accesses"},
            {"distinct_cacheable_blocks": "distinct_blocks"})


def _missing_distinct(payload: dict[str, Any]) -> Exception:
    """The error of a today's file (``block_accesses`` beside a different ``cacheable_blocks``: two counts a pcs
    before 2026-12-04 never wrote apart) that lacks ``distinct_cacheable_blocks`` and holds ``distinct_blocks``:
    the field missing is named first, then why the old name does not stand in for it."""
    from pcs.errors import UserError

    return UserError(f"field 'distinct_cacheable_blocks': missing (pcs curve always writes it); the file has "
                     f"distinct_blocks, its name before 2026-12-04, but beside today's block_accesses "
                     f"({_shown(payload['block_accesses'])}) and a different cacheable_blocks "
                     f"({_shown(payload['cacheable_blocks'])}), which a pcs before then never wrote apart (its "
                     "block_accesses counted the cacheable blocks): not that pcs's file")


def _shown(value: Any) -> str:
    """``value`` as JSON for a message, a long one cut (:func:`pcs.errors.quoted`)."""
    from pcs.errors import quoted

    return quoted(value)
