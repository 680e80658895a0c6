"""Plain-text report of a compare result (``pcs compare --format table``).

One column per variant, one row per figure in :data:`ROWS`; with curve rows,
a second table of hit ratio by capacity, one column per policy beside Belady
and the ceiling. A new figure is one :class:`pcs.engine.compare.CompareVariant`
field and one entry in :data:`ROWS`.
"""
from __future__ import annotations

from typing import Any, Callable

from pcs.engine.compare import CompareResult
from pcs.engine.schedresult import SATURATION_NOTE_START
from pcs.report.replay import (CEILING_LABEL, CEILING_MEANING, REAL_LABEL, WHOLE_BLOCKS_NOTE, gap_texts, lens_text,
                               model_label, timing_label)
from pcs.report.table import render_table, shown_relative_path
from pcs.units import format_bytes, format_count, format_duration, format_percent, format_points, split_percent_sum

__all__ = ["render_compare", "variant_gap_texts", "variant_notes", "capacity_text", "ROWS"]


def _pts(x: float) -> str:
    return format_points(x)  # -0.0 prints as 0.0


#: (row label, CompareVariant attribute, formatter); None values print as "-".
ROWS: list[tuple[str, str, Callable[[Any], str]]] = [
    (REAL_LABEL, "hit_ratio", format_percent),
    (CEILING_LABEL, "single_sequence_hit_ratio", format_percent),
    ("  incl. next turns' decode blocks", "single_sequence_with_decode_hit_ratio", format_percent),
    ("gap: block rounding", "gap_block_rounding", _pts),
    ("gap: capacity and eviction", "gap_capacity_eviction", _pts),
    ("gap: concurrency", "gap_concurrency", _pts),
    ("gap: hybrid rules", "gap_hybrid_rules", _pts),
    ("oracle hit ratio", "oracle_hit_ratio", format_percent),
    ("oracle split: capacity", "gap_capacity", _pts),
    ("oracle split: policy", "gap_policy", _pts),
    ("  hits served by lower tiers", "lower_tier_hit_ratio", format_percent),
    ("restored bytes", "restored_bytes", format_bytes),
    ("written to lower tiers", "written_bytes", format_bytes),
    ("restores slower than recompute", "share_slower", format_percent),
    ("TTFT p50", "ttft_p50_s", format_duration),
    ("TTFT p99", "ttft_p99_s", format_duration),
    ("wait p99", "wait_p99_s", format_duration),
    ("requests truncated", "requests_truncated", format_count),
]


def _getter(v: Any) -> Callable[[str], Any]:
    """A field of a compare variant by name: a :class:`pcs.engine.compare.CompareVariant`'s attribute or its JSON
    dict's key, None where it has none."""
    return v.get if isinstance(v, dict) else (lambda k: getattr(v, k, None))


def variant_gap_texts(v: Any) -> dict[str, str]:
    """A compare variant's gap rows as printed, keyed by its ``gap_*`` field (``v``: a
    :class:`pcs.engine.compare.CompareVariant` or its JSON dict): :func:`pcs.report.replay.gap_texts`, each term
    the difference of the printed ratios; ideal and sequential, which the variant does not carry, are
    single-sequence + block rounding and real + concurrency."""
    get = _getter(v)
    ss, real, br, conc = (get(k) for k in ("single_sequence_hit_ratio", "hit_ratio", "gap_block_rounding",
                                             "gap_concurrency"))
    ideal = None if ss is None or br is None else ss + br
    seq = None if real is None or conc is None else real + conc
    texts = gap_texts(ideal, ss, seq, real, get("gap_hybrid_rules"), get("oracle_hit_ratio"))
    return {f"gap_{k}": text for k, text in texts.items()}


def lower_tiers_text(v: Any) -> str:
    """A compare variant's "hits served by lower tiers" as ``pcs replay`` of the same run prints its lower tiers'
    rows: the sum of their apportioned parts (:func:`pcs.units.split_percent_sum`, the rule of
    :func:`pcs.units.split_percent`), from the variant's ``hit_ratio_per_tier`` (a :class:`CompareVariant` or its
    JSON, the text table and the HTML page alike); a variant without it (a JSON written before it was added) its
    exact ratio rounded (``format_percent``)."""
    get = _getter(v)
    per_tier, hit = get("hit_ratio_per_tier"), get("hit_ratio")
    if not per_tier or hit is None:
        return format_percent(get("lower_tier_hit_ratio"))
    return split_percent_sum(list(per_tier.values()), hit, 1)


def _cell(v: Any, attr: str, fmt: Callable[[Any], str]) -> str:
    """One variant's figure of a ROWS row; a gap row the difference of the printed ratios
    (:func:`variant_gap_texts`); the lower tiers' row the sum of their printed parts (:func:`lower_tiers_text`);
    ``-`` for None."""
    if getattr(v, attr) is None:
        return "-"
    if attr == "lower_tier_hit_ratio":
        return lower_tiers_text(v)
    return variant_gap_texts(v)[attr] if fmt is _pts else fmt(getattr(v, attr))


def _variants_table(res: CompareResult, notes: tuple[str, ...]) -> str:
    first = res.variants[0].summary if res.variants else None
    timing = timing_label(res.timing, first.compute if first is not None else None)
    body = [[label] + [_cell(v, attr, fmt) for v in res.variants]
            for label, attr, fmt in ROWS if any(getattr(v, attr) is not None for v in res.variants)
            or not attr.startswith(("oracle", "gap_capacity", "gap_policy", "single_sequence_with", "gap_hybrid"))]
    body[0:0] = _tier_rows(res)
    return render_table(["metric"] + [v.variant for v in res.variants], body,
                        title=f"pcs compare: {shown_relative_path(res.trace)} | "
                              f"{model_label(first.to_dict()) if first is not None else res.model} | {timing}",
                        notes=[_gap_note(res), "tiers: " + WHOLE_BLOCKS_NOTE] + list(notes))


def _gap_note(res: CompareResult) -> str:
    """What the ceiling and gap rows mean; the oracle split's part only when its rows are printed (a variant has
    ``gap_capacity``: --gap-oracle alone; --admit does not bring them), the decode blocks' part only when a variant cached them (its
    ``single_sequence_with_decode_hit_ratio`` row is printed; docs/semantics.md §12)."""
    oracle = any(v.gap_capacity is not None for v in res.variants)
    decode = any(v.single_sequence_with_decode_hit_ratio is not None for v in res.variants)
    return (f"single-sequence = {CEILING_MEANING}; the gap rows sum to ideal - real"
            + (" (the oracle split's capacity + policy split single-sequence - real again: not added to them)"
               if oracle else "")
            + ("; when a variant cached the next turns' decode blocks, the single-sequence incl. them is its "
               "ceiling" if decode else ""))


def _capacity(t: Any) -> str:
    """One tier's capacity as the replay's tier table prints it (:func:`capacity_text`)."""
    return capacity_text(t.capacity_bytes, t.capacity_blocks, t.blocks_unit == "page")


def capacity_text(capacity_bytes: int, capacity_blocks: int, pages: bool) -> str:
    """A tier's capacity as every compare table prints it: ``199.98 GB = 1,192 blk`` (decimal bytes beside the
    whole blocks; ``pages`` for a hybrid model: the bytes per block come from the model, so a size given in
    blocks reads in bytes too). The text table and the HTML one (from the JSON's ``tier_capacities``) both."""
    return f"{format_bytes(capacity_bytes)} = {format_count(capacity_blocks)} {'pages' if pages else 'blk'}"


def _tier_rows(res: CompareResult) -> list[list[str]]:
    """``tier NAME`` rows, one per tier name in first-seen order over the variants (decimal bytes beside the
    whole blocks, ``-`` where a variant has no such tier); a variant without a summary shows its ``tiers`` text
    in the first row."""
    names: list[str] = []
    for v in res.variants:
        for t in (v.summary.tiers if v.summary is not None else ()):
            if t.name not in names:
                names.append(t.name)
    if not names:
        return [["tiers"] + [v.tiers for v in res.variants]]
    rows = []
    for i, name in enumerate(names):
        cells = []
        for v in res.variants:
            t = next((t for t in v.summary.tiers if t.name == name), None) if v.summary is not None else None
            cells.append(_capacity(t) if t is not None else (v.tiers if v.summary is None and i == 0 else "-"))
        rows.append([f"tier {name}"] + cells)
    return rows


def _curve_table(res: CompareResult) -> str:
    pols = list(res.curve[0].policy_hit_ratios)
    bounds = [] if res.curve_note else ["belady", "ceiling"]      # a hybrid model's curve leaves them out
    body = [[format_count(r.capacity_blocks)] + [format_percent(r.policy_hit_ratios[p]) for p in pols] +
            ([format_percent(r.belady_hit_ratio), format_percent(r.ceiling_hit_ratio)] if bounds else [])
            for r in res.curve]
    return render_table(["capacity (blocks)"] + pols + bounds, body,
                        title="Hit ratio by capacity: one tier, sequential timing",
                        notes=[res.curve_note] if res.curve_note else
                        ["lru from the exact one-pass curve; other policies replayed per capacity; belady = "
                         "offline optimum; ceiling = single-sequence (infinite cache)"])


def render_compare(res: CompareResult) -> str:
    """The variants table and, with curve rows, the capacity table (one string).

    The notes of the variants' replays (defaults used, saturation, a GPU
    tier above the deployment's HBM ...) follow the variants table
    (:func:`variant_notes`).
    """
    text = _variants_table(res, variant_notes(res))
    text += "\n\n" + _lens_tables(res)
    if res.curve is not None:
        text += "\n\n" + _curve_table(res)
    return text


def variant_notes(res: CompareResult) -> tuple[str, ...]:
    """The notes of every variant's replay, each once: a note every variant has as it stands; any other led by
    the variant it describes (``lru+gpu=5000blocks: the instance was busy ...``), one per variant that has it,
    in variant order -- the saturation of one tier list is not the other's, nor is one GPU tier's size. A
    saturation note every variant has is led by ``each variant (lru, fifo): ``: it describes each run.

    Returns:
        the notes, in the order first met (variants in table order, each variant's notes in its order).
    """
    per = [(v.variant, tuple(v.summary.notes) if v.summary is not None else ()) for v in res.variants]
    every = f"each variant ({', '.join(label for label, _ in per)}): " if len(per) > 1 else ""
    out: dict[str, None] = {}
    for label, notes in per:
        for note in notes:
            if not all(note in ns for _, ns in per):
                out.setdefault(f"{label}: {note}")
            else:   # one run's busy note stands for each variant's own run: it says so
                out.setdefault(every + note if note.startswith(SATURATION_NOTE_START) else note)
    return tuple(out)


def _lens_tables(res: CompareResult) -> str:
    """Lesson 2 per variant, in the replay report's words (:func:`pcs.report.replay.lens_text`): payload vs reserved
    bytes, restore bytes and TTFT beside another KV dtype, hits held; the note once, under the last table."""
    vs = [v.to_dict() for v in res.variants]
    return "\n\n".join(lens_text(v, v["variant"], notes=i == len(vs) - 1) for i, v in enumerate(vs))
