"""What the HTML report shows: JSON payloads -> one page model (headline, figures, tables, inputs).

The page is built from the JSON the commands print (``pcs replay``,
``compare``, ``curve``, ``footprint`` with ``--format json``; keys in
docs/replay.md, docs/curves.md), so ``pcs report RUN.json`` and ``pcs replay
--html`` draw the same page. :func:`build_page` returns plain dicts and lists
that the Jinja2 template (pcs/report/templates/report.html.j2) lays out;
the figures are :class:`pcs.report.htmlcharts.Chart`.

Kinds of payload (:func:`payload_kind`): a replay summary (``hit_ratio`` and
``tiers``), a compare (``variants``), a curve (``rows`` and ``knee``), a
footprint (``components`` and ``by_dtype``).
"""
from __future__ import annotations

import shlex
from typing import Any, Callable, Sequence

from pcs.report import htmlcharts as hc
from pcs.report.htmltime import hybrid_residency_chart, time_charts, utilisation_chart
from pcs.report.htmltables import (compare_table, envelope_table, footprint_tables, hybrid_table, lens_table,
                                    runs_table, tier_table)
from pcs.errors import UserError, quoted, shown_name
from pcs.report.replay import slot_unit
from pcs.units import format_counted, format_percent, tier_arg

__all__ = ["KINDS", "payload_kind", "build_page", "inputs_rows", "reproduce_command"]

#: The payload kinds a page accepts, in the order their sections appear.
KINDS = ("replay", "compare", "curve", "footprint")


def payload_kind(payload: Any) -> str:
    """Which command printed ``payload``: one of :data:`KINDS`.

    Raises:
        UserError: not a JSON object of one of those commands; the JSON of a fleet (``per_instance`` from
            ``pcs replay --instances``, ``routers`` from ``pcs compare --router``) is named as such, with what
            the page accepts instead.
    """
    if isinstance(payload, dict):
        if "hit_ratio" in payload and "tiers" in payload and "gap" in payload:
            return "replay"
        if "variants" in payload:
            return "compare"
        if "rows" in payload and "knee" in payload and "ceiling_hit_ratio" in payload:
            return "curve"
        if "components" in payload and "by_dtype" in payload:
            return "footprint"
        if "per_instance" in payload or "routers" in payload:
            raise UserError(f"the JSON of a fleet ({_FLEET_JSON}), which the page does not draw: pcs report takes "
                             "the JSON of a single-instance pcs replay, compare, curve or footprint (--format json); "
                             "a fleet's figures are its table, --format json or csv and --requests-out")
    raise UserError("not the JSON of pcs replay, compare, curve or footprint (--format json)")


#: Where fleet JSON comes from (:func:`payload_kind` names it when refusing one).
_FLEET_JSON = "pcs replay or pcs compare with --instances, --router or --shared-tier"

#: replay headline numbers the page reads -> their type (null: a ratio of 0/0, no prompt tokens); each is held to
#: its type and range rule by the one check of every kind (pcs.report.payloadcheck.check_value, RANGES)
_REPLAY_NUMBERS = {"hit_ratio": float | None, "single_sequence_hit_ratio": float | None,
                   "ideal_hit_ratio": float | None, "sequential_hit_ratio": float | None, "requests": int,
                   "block_size": int}
#: the gap terms the page reads: each null (no prompt tokens) or a number of the range rule of ``gap.TERM``
_GAP_READ = ("block_rounding", "capacity_eviction", "concurrency", "hybrid_rules")
#: replay JSON objects the page reads: key -> (what it must be, the check)
_REPLAY_FIELDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "gap": ("an object of the gap split's terms", lambda v: isinstance(v, dict)),
    "tiers": ("a non-empty list of tier objects", lambda v: isinstance(v, list) and bool(v) and all(
        isinstance(t, dict) and isinstance(t.get("capacity_blocks"), int) and isinstance(t.get("name"), str)
        for t in v)),
    "envelope": ("an object with a links list", lambda v: isinstance(v, dict) and isinstance(v.get("links"), list)),
    "hit_ratio_per_tier": ("an object", lambda v: isinstance(v, dict)),
    "notes": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v)),
}
#: top-level keys the page reads without a default (its header, the curve's trace and block size, the envelope):
#: pcs replay always writes them, and a file lacking one is refused by name (a hand-edited file ended in a
#: KeyError traceback, review 47m); other keys a file lacks are left alone (an older pcs)
_REPLAY_NEEDS = ("trace", "model", "gpu", "tp", "block_size", "timing", "policy", "write_policy",
                 "cache_partial_blocks", "recompute_last_token", "reference_bytes_per_block", "envelope")
#: optional objects: absent, null or an object
_REPLAY_OPTIONAL = ("deployment", "series", "distributions", "scheduler", "payload_lens", "hybrid")


def check_replay_payload(s: dict) -> None:
    """Check the fields of a replay JSON that the page reads (a damaged or hand-edited file).

    Raises:
        UserError: ``field 'NAME': missing (pcs replay always writes it)`` for the first of :data:`_REPLAY_NEEDS`
            absent; ``field 'NAME': must be WHAT, got VALUE`` for the first bad field.
    """
    from pcs.report.payloadcheck import check_value

    missing = next((k for k in _REPLAY_NEEDS if k not in s), None)
    if missing is not None:
        raise UserError(f"field '{missing}': missing (pcs replay always writes it)")
    for key, tp in _REPLAY_NUMBERS.items():
        if key in s:
            check_value(s[key], tp, key)
    for key, (what, ok) in _REPLAY_FIELDS.items():
        if key in s and not ok(s[key]):
            raise UserError(f"field '{key}': must be {what}, got {quoted(s[key], 60)}")
    for term in _GAP_READ if isinstance(s.get("gap"), dict) else ():
        if term in s["gap"]:
            check_value(s["gap"][term], float | None, f"gap.{term}")
    for key in _REPLAY_OPTIONAL:
        if s.get(key) is not None and not isinstance(s[key], dict):
            raise UserError(f"field '{key}': must be an object or null, got {quoted(s[key], 60)}")
    for key in _REPLAY_NUMERIC:
        if s.get(key) is not None:
            _check_numbers(key, s[key])
    _check_waterfall(s)


#: the waterfall's levels: null together (no prompt tokens, 0/0) or numbers together
_LEVELS = ("ideal_hit_ratio", "single_sequence_hit_ratio", "sequential_hit_ratio", "hit_ratio")


def _check_waterfall(s: dict) -> None:
    """The gap split the page draws (docs/semantics.md §12): its levels are numbers together or null together
    (null only with no prompt tokens, every ratio 0/0), and the gap terms sum to ideal - real.

    Raises:
        UserError: naming the first level or gap term that is null while ``prompt_tokens`` is above 0 or another
            level is a number (``field 'ideal_hit_ratio': must be a ratio in [0, 1] when hit_ratio is one ...``),
            a missing level, or the gap when its terms do not sum.
    """
    from pcs.report.payloadcheck import must_be

    if not isinstance(s.get("gap"), dict):
        return                                  # refused by check_replay_payload when present; nothing drawn
    why = _why_numbers(s)
    if why is None:
        return                                  # every level null, no prompt tokens: the waterfall is left out
    for key in _LEVELS:
        if key not in s:
            raise UserError(f"field '{key}' is missing (a replay JSON of an older pcs? the page's gap split needs "
                            "it: run pcs replay --format json again)")
    g = s["gap"]       # numbers beside numbers: a null level or term is only for a run with no ratios
    for path in [*_LEVELS, *(f"gap.{k}" for k in _GAP_READ if k in g)]:
        if (g.get(path[4:]) if path.startswith("gap.") else s.get(path)) is None:
            raise UserError(f"field '{path}': must be {must_be(float, path, True)} when {why} (null only "
                            "when every ratio is: no prompt tokens), got null")
    terms = [g.get(k) or 0.0 for k in _GAP_READ]       # each absent or in [-1, 1]: check_replay_payload
    if abs(s["ideal_hit_ratio"] - sum(terms) - s["hit_ratio"]) >= 1e-9:
        raise UserError("field 'gap': its terms must sum to ideal_hit_ratio - hit_ratio (docs/semantics.md §12), "
                        f"got {quoted(g, 60)}")


def _why_numbers(s: dict) -> str | None:
    """Why a replay's waterfall levels must all be numbers: ``hit_ratio is one`` (the first of hit_ratio,
    sequential_hit_ratio, single_sequence_hit_ratio, ideal_hit_ratio that is a number), else ``prompt_tokens is
    above 0`` (an integer > 0: a ratio's denominator), else None (every level null or absent, no prompt tokens)."""
    first = next((k for k in reversed(_LEVELS) if s.get(k) is not None), None)
    if first is not None:
        return f"{first} is one"
    tokens = s.get("prompt_tokens")
    return "prompt_tokens is above 0" if isinstance(tokens, int) and tokens > 0 else None


#: objects whose every leaf (in lists and nested objects) the charts read as a number: number or null
_REPLAY_NUMERIC = ("series", "distributions")


def _check_numbers(path: str, value) -> None:
    """Raise UserError naming the first leaf under ``path`` that is neither a number nor null."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_numbers(f"{path}.{k}", v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, (dict, list)) or not (v is None or _is_number(v)):
                raise UserError(f"field '{path}[{i}]': must be a number or null, got {quoted(v, 60)}")
    elif not (value is None or _is_number(value)):
        raise UserError(f"field '{path}': must be a number, a list of numbers or null, got {quoted(value, 60)}")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _ceiling_note(s: dict) -> str:
    """The single-sequence headline's note: the ceiling, or (decode blocks cached) the decode-aware one
    beside it (docs/semantics.md §12, §17)."""
    ssd = s.get("single_sequence_with_decode_hit_ratio")
    if ssd is None:
        return "infinite cache, same block rules: the ceiling"
    return ("infinite cache, same block rules, prompt blocks only; the ceiling, incl. the next turns' cached "
            f"decode blocks, is {format_percent(ssd)}")


def _headline(s: dict, oracle: dict | None) -> list[dict]:
    """The three numbers at the top, each with its raw JSON value (the browser test compares them). Each is shown
    as the gap chart and the text report show it, to 0.1 % (:func:`pcs.units.format_percent`), so a card and the
    waterfall's levels are the same printed figures (docs/semantics.md §12 "Printed figures add up")."""
    items = [{"key": "hit_ratio", "label": "real hit ratio", "value": s["hit_ratio"],
              "text": format_percent(s["hit_ratio"]), "note": f"this cache, this traffic ({s['timing']} timing)"},
             {"key": "single_sequence_hit_ratio", "label": "single-sequence hit ratio",
              "value": s["single_sequence_hit_ratio"], "text": format_percent(s["single_sequence_hit_ratio"]),
              "note": _ceiling_note(s)}]
    if oracle is not None and oracle.get("hit_ratio") is not None:
        items.append({"key": "oracle_hit_ratio", "label": "oracle (Belady)", "value": oracle["hit_ratio"],
                      "text": format_percent(oracle["hit_ratio"]),
                      "note": f"offline-optimal eviction, one tier of {format_counted(oracle['capacity_blocks'], 'block')} "
                              "(the run's total), sequential"})
    return items


def _run_marks(s: dict) -> list[dict]:
    """The run's capacities on the curve: the GPU tier, and all tiers together with the real hit ratio; none for a
    hybrid model's run, whose tiers count pages (no place on a curve's axis of whole-model blocks)."""
    if s.get("hybrid"):
        return []
    caps = [t["capacity_blocks"] for t in s["tiers"]]
    marks = [{"label": f"{s['tiers'][0]['name']} {caps[0]:,} blk", "capacity_blocks": caps[0]}]
    if len(caps) > 1:
        marks.append({"label": f"all tiers {sum(caps):,} blk", "capacity_blocks": sum(caps)})
    marks[-1]["hit_ratio"] = s["hit_ratio"]
    return marks


def _section(sid: str, title: str, charts: Sequence[hc.Chart | None] = (), tables: Sequence[dict] = (),
             intro: str = "") -> dict | None:
    charts = [c for c in charts if c is not None]
    tables = [t for t in tables if t]
    if not charts and not tables:
        return None
    return {"id": sid, "title": title, "charts": charts, "tables": tables, "intro": intro}


#: Why a replay page has no oracle: a hybrid model's run, or one run without the curve (``--no-curve``).
NO_ORACLE_HYBRID = ("No oracle: Belady and the hit-rate curve apply the all-full-attention rules and count "
                    "whole-model blocks, while a hybrid model's tiers count pages under its groups' rules "
                    "(docs/hybrid.md), so neither is drawn for this run.")
NO_ORACLE_NOT_COMPUTED = "No oracle: the offline optimum (Belady) was not computed for this page (--no-curve)."
#: ... or a bound of a re-blocked replay (``pcs replay --block-size`` finer than the trace's blocks).
NO_ORACLE_BOUND = ("No oracle: this run is a bound of a trace replayed at a finer block size than it was recorded at "
                   "(docs/traces-formats.md, re-blocking); each bound reads its own block stream, so no one curve or "
                   "offline optimum is drawn for the page.")
#: ... or a page given its curve as a ``pcs curve`` JSON: the trace is then not read, so Belady is not run.
NO_ORACLE_CURVE_GIVEN = ("No oracle: the hit-rate curve came from the pcs curve JSON given, so the trace was not read "
                         "for the offline optimum (Belady) at this run's capacity; report the replay JSON without "
                         "the curve JSON to have both computed from its trace.")


def _headline_section(s: dict, oracle: dict | None, curve_given: bool = False) -> dict | None:
    """The gap waterfall's section: titled by what it draws, saying why there is no oracle when there is none
    (``curve_given``: the page's curve is a ``pcs curve`` payload among the inputs)."""
    if oracle is not None and oracle.get("hit_ratio") is not None:
        return _section("headline", "Hit ratio: real, single-sequence, oracle", [hc.waterfall_chart(s, oracle)])
    why = NO_ORACLE_HYBRID if s.get("hybrid") else NO_ORACLE_BOUND if s.get("bound") else \
        NO_ORACLE_CURVE_GIVEN if curve_given else NO_ORACLE_NOT_COMPUTED
    return _section("headline", "Hit ratio: real vs single-sequence", [hc.waterfall_chart(s, None)], intro=why)


def _replay_sections(s: dict, curve: dict | None, oracle: dict | None,
                     curve_given: bool = False) -> list[dict | None]:
    dist = s.get("distributions")
    return [
        _headline_section(s, oracle, curve_given),
        _section("curve", "Hit-rate curve", [hc.curve_chart(curve, _run_marks(s))] if curve else []),
        _section("time", "Over simulated time", [*time_charts(s.get("series")), hybrid_residency_chart(s.get("hybrid")),
                                                 utilisation_chart(s.get("scheduler"))]),
        _section("distributions", "Distributions", [hc.ttft_chart(dist), hc.restore_chart(dist)]),
        _section("envelope", "Bandwidth envelope per link", tables=[envelope_table(s)]),
        _section("tiers", "Tiers and footprint", tables=[tier_table(s), hybrid_table(s), *footprint_tables(s)]),
        _section("lens", "Payload is not everything", tables=[lens_table(s)]),
    ]


def build_page(payloads: Sequence[dict], curve: dict | None = None, oracle: dict | None = None,
               command: Sequence[str] | None = None, version: str | None = None) -> dict:
    """The page model of one or more payloads.

    Args:
        payloads: JSON objects of ``pcs replay/compare/curve/footprint``
            (at least one). The first replay gives the headline; several
            replays also get a side-by-side table.
        curve: the hit-rate curve to draw for the first replay (a curve
            payload, maybe with ``lru_dense`` and ``bytes_per_block``,
            :func:`pcs.report.htmlcurve.replay_curve`); a curve payload among
            ``payloads`` is used when this is None.
        oracle: ``{"hit_ratio", "capacity_blocks"}`` (Belady at the run's capacity) or None.
        command: the command line that wrote the page (argv, shown quoted).
        version: the pcs version.
    Returns:
        dict with ``title``, ``subtitle``, ``headline`` (list), ``sections``
        (list of ``{id, title, charts, tables, intro}``), ``inputs`` (rows),
        ``notes``, ``charts`` (every chart, in page order).
    Raises:
        UserError: (:class:`pcs.errors.UserError`, a ValueError) no payloads, or one of an unknown kind.
    """
    if not payloads:
        raise UserError("no JSON payloads to report")
    by_kind: dict[str, list[dict]] = {k: [] for k in KINDS}
    for p in payloads:
        by_kind[payload_kind(p)].append(p)
    runs, curves = by_kind["replay"], by_kind["curve"]
    main_curve = curve if curve is not None else (curves[0] if curves else None)
    sections: list[dict | None] = []
    if runs:
        sections += _replay_sections(runs[0], main_curve, oracle, curve is None and bool(curves))
        if len(runs) > 1:
            sections.append(_section("runs", "Runs side by side", tables=[runs_table(runs)]))
    elif main_curve is not None:
        sections.append(_section("curve", "Hit-rate curve", [hc.curve_chart(main_curve)]))
    for i, c in enumerate(by_kind["compare"]):
        sections.append(_section(f"compare{i or ''}", "Compare: one column per variant",
                                 [hc.compare_chart(c["variants"], f"compare{i or ''}"),
                                  hc.compare_curve_chart(c.get("curve") or [], f"compare_curve{i or ''}")],
                                 [compare_table(c)] + [lens_table(v, v["variant"]) for v in c["variants"]
                                                        if v.get("payload_lens")]))
    for i, c in enumerate(c for c in curves if c is not main_curve):
        sections.append(_section(f"curve{i + 2}", f"Hit-rate curve: {c['trace']}",
                                 [hc.curve_chart(c, (), f"curve{i + 2}")]))
    for i, f in enumerate(by_kind["footprint"]):
        sections.append(_section(f"footprint{i or ''}", f"KV footprint: {shown_name(f['model'])}, {format_counted(f['tokens'], 'token')}",
                                 [hc.footprint_chart(f, f"footprint_bytes{i or ''}")], footprint_tables(f)))
    sections = [s for s in sections if s is not None]
    first = payloads[0]
    return {"title": _title(first, payload_kind(first)), "subtitle": _subtitle(runs, by_kind),
            "headline": _headline(runs[0], oracle) if runs else [], "sections": sections,
            "inputs": inputs_rows(payloads, command, version), "notes": _notes(payloads),
            "charts": [c for s in sections for c in s["charts"]]}


def _title(p: dict, kind: str) -> str:
    name = str(p.get("trace") or p.get("model") or "")
    return f"pcs {kind}: {name.rsplit('/', 1)[-1]}" if name else f"pcs {kind}"


def _subtitle(runs: list[dict], by_kind: dict) -> str:
    if runs:
        from pcs.report.replay import header_line

        return header_line(runs[0])
    counts = [f"{len(v)} {k}" for k, v in by_kind.items() if v]
    return "report of " + ", ".join(counts)


def _notes(payloads: Sequence[dict]) -> list[str]:
    """The payloads' notes, each once: a note every payload has unlabelled, the others after the payload they
    belong to (``run 2: ...``, numbered as the side-by-side columns; other kinds ``compare 1: ...``)."""
    from pcs.report.curve import with_sampled_note

    notes = [with_sampled_note(p) if payload_kind(p) == "curve" else [str(n) for n in p.get("notes", ()) or ()]
             for p in payloads]
    count: dict[str, int] = {}
    labels = []
    for p in payloads:
        kind = payload_kind(p)
        count[kind] = count.get(kind, 0) + 1
        labels.append(f"{'run' if kind == 'replay' else kind} {count[kind]}: ")
    seen: dict[str, None] = {}
    for label, own in zip(labels, notes):
        for n in own:
            seen.setdefault(n if len(payloads) == 1 or all(n in o for o in notes) else label + n)
    return list(seen)


def _tiers_text(s: dict) -> str:
    unit = slot_unit(s)
    return ", ".join(f"{t['name']} {t['capacity_blocks']:,} {unit}s ({t['policy']}"
                     + (f", link {t['link']}" if t.get("link") else "") + ")" for t in s["tiers"])


#: Rows of the inputs table for a replay payload: label and a function payload -> text.
_REPLAY_INPUTS: list[tuple[str, Callable[[dict], Any]]] = [
    ("trace", lambda s: s["trace"]),
    ("model", lambda s: f"{shown_name(s['model'])} (KV {s.get('kv_dtype') or 'default'})"),
    ("hardware", lambda s: f"{s['tp']}x {shown_name(s['gpu'])}, TP={s['tp']}"),
    ("tiers", _tiers_text),
    ("policy", lambda s: f"{s['policy']}, write-{s['write_policy']}"),
    ("timing", lambda s: s["timing"]),
    ("block rules", lambda s: f"{format_counted(s['block_size'], 'token')} per block; partial last block "
                              f"{'cached' if s['cache_partial_blocks'] else 'not cached'}; last token "
                              f"{'recomputed' if s['recompute_last_token'] else 'not recomputed'}"),
]


def inputs_rows(payloads: Sequence[dict], command: Sequence[str] | None, version: str | None) -> list[list[str]]:
    """The inputs table: what each payload ran on, the pcs version and the command lines (label, text)."""
    rows: list[list[str]] = []
    for p in payloads:
        kind = payload_kind(p)
        if kind == "replay":
            rows += [[label, str(fn(p))] for label, fn in _REPLAY_INPUTS]
            recorded = p.get("replay_command")
            rows.append(["replay command" if recorded else "replay command (rebuilt from what the JSON records)",
                         recorded or reproduce_command(p)])
        else:
            what = {"compare": ("trace", "model", "timing"), "curve": ("trace", "model", "block_size", "sample_rate"),
                    "footprint": ("model", "dtype", "tokens", "block_size", "tp")}[kind]
            rows.append([f"{kind}", "; ".join(f"{k} {p[k]}" for k in what if p.get(k) is not None)])   # absent: left out
    rows.append(["pcs version", version or "unknown"])
    if command:
        rows.append(["page written by", shlex.join(command)])
    return rows


def reproduce_command(s: dict) -> str:
    """A ``pcs replay`` command line rebuilt from a replay payload that has no ``replay_command`` (the one
    ``pcs replay`` records, :mod:`pcs.cli.rerun`, which the page prints instead): a payload of ``pcs.replay()``
    or of an older pcs. Tiers in blocks, so sizes are exact (a hybrid model's in its pages' exact bytes,
    :func:`pcs.units.tier_arg`); ``--compute``, the hybrid manager and ``--mamba-cache-mode align`` when the
    payload records them. Options a payload does not record (a hardware file, the step scheduler's knobs, the
    hybrid pools' ratios, ``--admit``) are not in it: the page labels it as rebuilt."""
    args = ["pcs", "replay", s["trace"], "--model", s["model"], "--gpu", s["gpu"], "--tp", str(s["tp"])]
    if s.get("kv_dtype"):
        args += ["--dtype", s["kv_dtype"]]
    args += ["--block-size", str(s["block_size"])]
    for t in s["tiers"]:
        args += ["--tier", tier_arg(t["name"], t["capacity_blocks"], t["capacity_bytes"], slot_unit(s) == "page")]
    for t in s["tiers"][1:]:
        if t.get("link"):
            args += ["--link", f"{t['name']}={_link_arg(t, s['tp'])}"]
    pols = {t["policy"] for t in s["tiers"]}
    if len(pols) == 1:
        args += ["--policy", pols.pop()]
    else:
        args += [a for t in s["tiers"] for a in ("--tier-policy", f"{t['name']}={t['policy']}")]
    args += ["--timing", s["timing"], "--write-policy", s["write_policy"]]
    if s.get("compute") and s["timing"] == "modeled":
        args += ["--compute", s["compute"]]
    if isinstance(s.get("hybrid"), dict) and s["hybrid"].get("manager"):
        args += ["--hybrid-kv-cache-manager", s["hybrid"]["manager"]]
        if s["hybrid"].get("mamba_cache_mode") == "align":
            args += ["--mamba-cache-mode", "align"]
    shares = {t["protected_share"] for t in s["tiers"] if t.get("protected_share") is not None}
    if len(shares) == 1:
        args += ["--protected-share", f"{shares.pop():g}"]
    if s["cache_partial_blocks"]:
        args.append("--cache-partial-blocks")
    if not s["recompute_last_token"]:
        args.append("--no-recompute-last-token")
    return shlex.join(args)


def _link_arg(t: dict, tp: int) -> str:
    """``--link`` value of a tier row: the preset name ("8x pcie-gen5-x16" at TP 8), else bytes/s per GPU."""
    name = str(t["link"]).split("x ", 1)[-1] if str(t["link"]).startswith(f"{tp}x ") else str(t["link"])
    if " " not in name and "/" not in name:
        return name
    return f"{t['link_bandwidth_bps'] / tp:.17g}"
