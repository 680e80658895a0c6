"""The HTML report's tables, as plain data: ``{"title", "headers", "rows", "notes"}``.

A row is a list of cells ``{"text", "num", "best"}``: ``text`` as shown
(formatted by :mod:`pcs.units`), ``num`` for right alignment, ``best`` for
the marked cell of a compare row. The template escapes every text.
Inputs are the JSON payloads of docs/replay.md (replay, compare) and the
footprint JSON of ``pcs footprint --format json``.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable, Sequence

from pcs.errors import shown_name
from pcs.units import (format_bandwidth, format_bytes, format_count, format_counted, format_duration, format_percent,
                       format_points, tier_arg)
from pcs.report.replay import (CEILING_LABEL, REAL_LABEL, RESTORE_TIME_NOTE, TP_NOTE, block_bytes, break_even_cells,
                               hybrid_rows, lens_rows, model_block_pages, payload_gap_texts, slot_unit, tier_rows,
                               ttft_note)

__all__ = ["MARKED_NOTE", "cell", "envelope_table", "tier_table", "hybrid_table", "footprint_tables", "compare_table", "runs_table", "best_columns",
           "shown_best", "shown_number", "BEST"]

#: compare metrics where one direction is better: JSON key -> "max" or "min" (other rows are not marked;
#: restored bytes, for example, are neither good nor bad by themselves).
BEST = {"hit_ratio": "max", "gap_capacity_eviction": "min", "gap_concurrency": "absmin", "share_slower": "min",
        "ttft_p50_s": "min", "ttft_p99_s": "min", "wait_p99_s": "min", "requests_truncated": "min",
        "written_bytes": "min"}


#: The legend of a table whose best cells are marked (compare, runs side by side): which way is better per row.
MARKED_NOTE = ("marked: the best value of a row where one direction is better (higher hit ratio; smaller gaps "
               "(concurrency: nearest 0, its sign says which way), TTFT, waits, writes, truncations, slower restores), "
               "judged on the figures shown: every cell showing the best one is marked, none when all show the same")


def cell(text: Any, num: bool = False, best: bool = False) -> dict:
    """One table cell (``None`` shows as ``-``)."""
    return {"text": "-" if text is None else str(text), "num": num, "best": best}


def _table(title: str, headers: Sequence[str], rows: list[list[dict]], notes: Sequence[str] = ()) -> dict:
    return {"title": title, "headers": list(headers), "rows": rows, "notes": list(notes)}


def envelope_table(s: dict) -> dict | None:
    """Per lower-tier link: bandwidth, restores, bytes, times, restores slower than recompute, break-even."""
    e = s["envelope"]
    if not e["links"]:
        return None
    rows = [[cell(f"{lk['tier']} -> gpu"), cell(lk["link"]), cell(format_bandwidth(lk["bandwidth_bps"]), True),
             cell(format_count(lk["restores"]), True), cell(format_bytes(lk["restored_bytes"]), True),
             cell(format_duration(lk["transfer_s"]), True), cell(format_duration(lk["queue_s"]), True),
             cell(format_duration(lk["prefill_saved_s"]), True),
             cell(f"{format_count(lk['restores_slower_than_recompute'])} ({format_percent(lk['share_slower'])})"
                  if lk["share_slower"] is not None else "-", True),
             *(cell(c if lk["restores"] else None, True) for c in break_even_cells(lk))] for lk in e["links"]]
    notes = [ttft_note(s),
             RESTORE_TIME_NOTE + "; slower = the restore (queueing included) took longer than the prefill its hits "
             "saved; break-even = restored bytes / (full - remaining prefill - setup) over the run "
             "(docs/semantics.md §10)", TP_NOTE]
    return _table("Restore vs recompute, per link", ["link", "name", "bandwidth", "restores", "bytes",
                                                     "transfer time", "queueing", "prefill saved",
                                                     "slower than recompute", "break-even (TP group)",
                                                     "break-even per GPU"], rows, notes)


def lens_table(s: dict, label: str = "") -> dict | None:
    """Lesson 2: the run's KV dtype beside another with the hits held (:func:`pcs.report.replay.lens_rows`); ``s``
    a replay's JSON or a compare variant's (``label``, its name, goes before the title)."""
    if not s.get("payload_lens"):
        return None
    title, headers, rows, notes = lens_rows(s)
    return _table(f"{label}: {title}" if label else title, headers,
                  [[cell(r[0])] + [cell(v, True) for v in r[1:]] for r in rows], notes)


def tier_table(s: dict) -> dict:
    """The text report's tier table (:func:`pcs.report.replay.tier_rows`): the payload row, then per tier its
    layout, bytes per block (or page), capacity, policy, hits, restored, written, evicted, resident; its notes."""
    title, headers, rows, notes = tier_rows(s)
    return _table(title, headers, [[cell(r[0]), cell(r[1])] + [cell(v, True) for v in r[2:4]] + [cell(r[4])]
                                   + [cell(v, True) for v in r[5:]] for r in rows], notes)


def hybrid_table(s: dict) -> dict | None:
    """A hybrid model's table of the text report (:func:`pcs.report.replay.hybrid_rows`): bytes per component at
    each tier's peak beside the all-full-attention run, its hit ratio and the hit tokens lost to the rules in the
    notes; None for a model that is not hybrid."""
    if not s.get("hybrid"):
        return None
    title, headers, rows, notes = hybrid_rows(s)
    return _table(title, headers, [[cell(r[0]), cell(r[1])] + [cell(v, True) for v in r[2:]] for r in rows], notes)


def _replay_footprint(s: dict) -> dict:
    """Bytes of one block per KV component in each accounting mode the run uses (docs/semantics.md §13); a
    hybrid model's block is its pages (:func:`pcs.report.replay.block_bytes`), the padding up to them a row."""
    comps = list(s["tiers"][0]["bytes_per_block_by_component"])
    modes = [("GPU: Reserved", s["tiers"][0])] + [(f"{t['name']}: Serialized", t) for t in s["tiers"][1:2]]
    rows = [[cell(c)] + [cell(format_bytes(t["bytes_per_block_by_component"].get(c)), True) for _, t in modes]
            for c in comps]
    whole = [block_bytes(s, t) for _, t in modes]
    pad = [w - sum(t["bytes_per_block_by_component"].values()) for w, (_, t) in zip(whole, modes)]
    if any(pad):
        rows.append([cell("page padding (up to whole pages)")] + [cell(format_bytes(p), True) for p in pad])
    rows.append([cell("all components")] + [cell(format_bytes(w), True) for w in whole])
    rows.append([cell("payload (Reference)")] + [cell(format_bytes(s["reference_bytes_per_block"]), True)]
                + [cell("") for _ in modes[1:]])
    notes = ([f"a block of the model = {' + '.join(_pages(s))} pages; all components = those pages' bytes, "
              "padding included (the payload lens' Reserved bytes/block)"] if s.get("hybrid") else [])
    return _table(f"Bytes of one {s['block_size']}-token block per component and accounting mode (per TP group)",
                  ["component"] + [m for m, _ in modes], rows, notes)


def _pages(s: dict) -> list[str]:
    return [f"{n} {g['name']}" for n, g in zip(model_block_pages(s), s["hybrid"]["groups"])]


_FOOTPRINT_MODES = (("Reference", "reference_bytes"), ("Serialized", "serialized_bytes"),
                    ("Reserved", "reserved_bytes"), ("Prefix store", "prefix_store_bytes"))


def _per_token_block(c: dict, per_token: bool) -> list[dict]:
    """A footprint component's B/token (reference, serialized) and B/block cells, as the text table has them: a
    fixed state per sequence as ``N/seq``, the page padding row by block only."""
    grows = c["reference_bytes_per_token"] > 0
    ref = format_count(c["reference_bytes_per_token"]) if grows else (
        f"{format_count(c['fixed_bytes_per_sequence'])}/seq" if per_token else "-")
    ser = format_count(c["serialized_bytes_per_token"]) if grows else "-"
    return [cell(ref, True), cell(ser, True), cell(format_count(c["serialized_bytes_per_block"]), True)]


def footprint_tables(p: dict) -> list[dict]:
    """A replay payload: bytes per block per component and mode; a footprint payload: its components and dtypes."""
    if "tiers" in p:
        return [_replay_footprint(p)]
    rows = [[cell("page padding" if c["name"] == "page_padding" else c["name"]), cell(c["describe"])]
            + _per_token_block(c, c["name"] != "page_padding")
            + [cell(format_bytes(c[k]), True) for _, k in _FOOTPRINT_MODES] for c in p["components"]]
    rows.append([cell("total"), cell("")] + [cell(format_count(p[k]), True) for k in
                                             ("reference_bytes_per_token", "serialized_bytes_per_token",
                                              "serialized_bytes_per_block")]
                + [cell(format_bytes(p[k]), True) for _, k in _FOOTPRINT_MODES])
    comp = _table(f"Bytes of {p['sequences']:,} x {format_counted(p['tokens'], 'token')} per component and accounting mode "
                  f"(block {p['block_size']}, per GPU, TP={p['tp']})",
                  ["component", "shape", "B/token ref", "B/token ser", "B/block"] + [m for m, _ in _FOOTPRINT_MODES],
                  rows, p.get("notes") or ())
    drows = [[cell(d.get("layout") or d["dtype"])] + [cell(f"{format_bytes(d[k])} ({_times(d[k[:-6] + '_ratio_vs_bf16'])})", True)
                                   for _, k in _FOOTPRINT_MODES] for d in p["by_dtype"]]
    dt = _table("The same by KV layout (ratio to bf16)", ["layout"] + [m for m, _ in _FOOTPRINT_MODES], drows)
    return [comp, dt]


def _times(ratio: float | None) -> str:
    """A ratio to bf16 as the page shows it: ``x0.500``; ``-`` for null (0 bytes against 0: no ratio)."""
    return "-" if ratio is None else f"x{ratio:.3f}"


def best_columns(values: Sequence[Any], direction: str | None) -> set[int]:
    """Indexes of the best values (ties all marked); none when no direction, a value is missing, or all are equal.
    ``direction``: ``"max"``, ``"min"``, or ``"absmin"`` (a signed gap: nearest 0 is best, as a gap below 0 is
    the real run beating the sequential one, not a better cache)."""
    if direction is None or any(v is None for v in values):
        return set()
    if direction == "absmin":
        values = [abs(v) for v in values]
    if len(set(values)) <= 1:
        return set()
    target = max(values) if direction == "max" else min(values)
    return {i for i, v in enumerate(values) if v == target}


#: Multipliers of the units a marked cell prints in (pcs.units' formatters), to compare shown figures as numbers.
_SHOWN_UNITS = {"": 1, "%": 1, "pts": 1, "B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15,
                "ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9}


def shown_number(text: str | None) -> Decimal | None:
    """The figure a cell shows, as an exact number in its kind's smallest unit (``+0.4 pts`` -> 0.4, ``6.0 %`` ->
    6.0, ``221.44 ms`` -> 221440000 ns, ``1.50 GB`` -> 1500000000 B, ``1,204`` -> 1204); None for ``-``, None,
    ``nan ...`` (a NaN orders against nothing: ``max`` of Decimal NaNs raises ``InvalidOperation``) or a text of
    another kind (then the row is not marked).
    The best cell of a row is chosen on these (:func:`shown_best`), so the mark agrees with what the row shows."""
    if text is None or text == "-":
        return None
    num, _, unit = text.replace(",", "").partition(" ")
    try:
        value = Decimal(num) * _SHOWN_UNITS[unit]
    except (KeyError, ArithmeticError):     # not a figure of a marked row's kinds: no mark
        return None
    return None if value.is_nan() else value


def shown_best(texts: Sequence[str | None], direction: str | None) -> set[int]:
    """:func:`best_columns` of the figures the cells show (:func:`shown_number`), not of the exact JSON values:
    every cell showing the best figure is marked; none when the shown figures are all equal or one is ``-``."""
    return best_columns([shown_number(t) for t in texts], direction)


def _metrics() -> list[tuple[str, str, Callable[[Any], str]]]:
    """(label, JSON key, formatter) of every compare figure, in the order of ``pcs compare``'s table."""
    from pcs.report.compare import ROWS

    return list(ROWS)


def compare_table(c: dict) -> dict:
    """One column per variant, one row per metric; the best cell of a row marked (:data:`BEST`)."""
    vs = c["variants"]
    rows = _compare_tier_rows(vs)
    for label, key, fmt in _metrics():
        values = [v.get(key) for v in vs]
        if key == "gap_hybrid_rules" and all(x is None for x in values):
            continue                                    # no hybrid model among the variants (as the text table)
        texts = [_shown(v, key, fmt, x) for v, x in zip(vs, values)]
        best = shown_best(texts, BEST.get(key))
        rows.append([cell(label)] + [cell(t, True, i in best) for i, t in enumerate(texts)])
    return _table(f"{c['trace']} | {shown_name(c['model'])} | {c['timing']} timing", ["metric"] + [v["variant"] for v in vs],
                  rows, [MARKED_NOTE])


def _shown(v: dict, key: str, fmt: Callable[[Any], str], x: Any) -> str | None:
    """A compare variant's cell as the text table prints it: a gap row the difference of the printed ratios
    (:func:`pcs.report.compare.variant_gap_texts`), the lower tiers' row the sum of their printed parts
    (:func:`pcs.report.compare.lower_tiers_text`), None for a null value."""
    from pcs.report.compare import lower_tiers_text, variant_gap_texts

    if x is None:
        return None
    if key == "lower_tier_hit_ratio":
        return lower_tiers_text(v)          # the sum of the parts pcs replay prints, as the text table
    return variant_gap_texts(v)[key] if key.startswith("gap_") else fmt(x)


def _compare_tier_rows(vs: Sequence[dict]) -> list[list[dict]]:
    """The compare table's tier rows as the text table's (:func:`pcs.report.compare._tier_rows`): ``tier NAME``
    rows, one per tier name in first-seen order, ``199.98 GB = 1,192 blk`` from each variant's
    ``tier_capacities`` (pages for a hybrid model, whose variants carry a ``gap_hybrid_rules``), ``-`` where a
    variant has no such tier; a variant without ``tier_capacities`` (a JSON written before they were added)
    shows its ``tiers`` text in the first row, as a variant without a summary does in the text table."""
    from pcs.report.compare import capacity_text

    caps = [v.get("tier_capacities") or {} for v in vs]
    names = list(dict.fromkeys(name for cap in caps for name in cap))
    if not names:
        return [[cell("tiers")] + [cell(v["tiers"]) for v in vs]]
    rows = []
    for i, name in enumerate(names):
        cells = []
        for v, cap in zip(vs, caps):
            t = cap.get(name)
            text = (capacity_text(t["capacity_bytes"], t["capacity_blocks"], v.get("gap_hybrid_rules") is not None)
                    if t is not None else (v["tiers"] if not cap and i == 0 else "-"))
            cells.append(cell(text))
        rows.append([cell(f"tier {name}")] + cells)
    return rows


#: Rows of the side-by-side table of several replay payloads: label, JSON path, formatter, better direction.
RUN_ROWS: list[tuple[str, tuple[str, ...], Callable[[Any], str], str | None]] = [
    (REAL_LABEL, ("hit_ratio",), format_percent, "max"),
    (CEILING_LABEL, ("single_sequence_hit_ratio",), format_percent, None),
    # the gap rows print the difference of the printed ratios (_run_cell), not format_points of the JSON value
    ("gap: block rounding", ("gap", "block_rounding"), format_points, None),
    ("gap: capacity and eviction", ("gap", "capacity_eviction"), format_points, "min"),
    ("gap: concurrency", ("gap", "concurrency"), format_points, "absmin"),
    ("gap: hybrid rules", ("gap", "hybrid_rules"), format_points, None),     # hybrid models only (left out without one)
    ("restored bytes", ("bytes", "restored"), format_bytes, None),
    ("TTFT p50", ("envelope", "ttft_p50_s"), format_duration, "min"),
    ("TTFT p99", ("envelope", "ttft_p99_s"), format_duration, "min"),
    ("wait p99", ("envelope", "wait_p99_s"), format_duration, "min"),
    ("requests truncated", ("requests_truncated",), format_count, "min"),
]


def _at(s: dict, path: tuple[str, ...]) -> Any:
    for k in path:
        s = s.get(k) if isinstance(s, dict) else None
    return s


def _tier_args(s: dict) -> str:
    """A replay payload's tiers as ``--tier`` values pcs replay accepts (:func:`pcs.units.tier_arg`)."""
    return " ".join(tier_arg(t["name"], t["capacity_blocks"], t.get("capacity_bytes"), slot_unit(s) == "page")
                    for t in s["tiers"])


def _run_cell(s: dict, path: tuple[str, ...], fmt: Callable[[Any], str], x: Any) -> str | None:
    """A run's cell: a gap term the difference of the printed ratios (:func:`pcs.report.replay.payload_gap_texts`,
    as the text report), None for a null value."""
    if x is None:
        return None
    return payload_gap_texts(s)[path[1]] if path[0] == "gap" else fmt(x)


def runs_table(runs: Sequence[dict]) -> dict:
    """Several replay payloads side by side (one column per run, the best cell of a row marked)."""
    rows = [[cell("tiers")] + [cell(_tier_args(s)) for s in runs]]
    for label, path, fmt, direction in RUN_ROWS:
        values = [_at(s, path) for s in runs]
        if path == ("gap", "hybrid_rules") and all(x is None for x in values):
            continue
        texts = [_run_cell(s, path, fmt, x) for s, x in zip(runs, values)]
        best = shown_best(texts, direction)
        rows.append([cell(label)] + [cell(t, True, i in best) for i, t in enumerate(texts)])
    return _table(f"{runs[0]['trace']} | {shown_name(runs[0]['model'])}", ["metric"] + run_labels(runs), rows, [MARKED_NOTE])


#: What a run's column may be named by (JSON key, shown as): the settings that can tell runs apart.
_RUN_SETTINGS = (("bound", "{} bound"), ("model", "{}"), ("kv_dtype", "KV {}"), ("policy", "{}"), ("write_policy", "write-{}"),
                 ("timing", "{}"), ("compute", "compute {}"), ("gpu", "{}"), ("tp", "TP {}"),
                 ("block_size", "block {}"), ("trace", "{}"))


def run_labels(runs: Sequence[dict]) -> list[str]:
    """``run i: ...`` naming the settings that differ between the runs (KV fp16 vs KV fp8, lru vs fifo, tiers);
    policy and timing when none does."""
    parts: list[list[str]] = [[] for _ in runs]
    for key, form in _RUN_SETTINGS:
        values = [s.get(key) for s in runs]
        if len(set(map(str, values))) > 1:
            for p, v in zip(parts, values):
                p.append(form.format(v))
    tiers = [_tier_args(s) for s in runs]
    if len(set(tiers)) > 1 and not any(parts):
        parts = [[t] for t in tiers]
    if not any(parts):
        parts = [[s["policy"], s["timing"]] for s in runs]
    return [f"run {i + 1}: {', '.join(p)}" for i, p in enumerate(parts)]
