"""Plain-text report of one replay summary (``pcs replay --format table``).

The first lines put the real hit ratio beside the single-sequence hit ratio
and split the gap by cause (lesson 1, docs/semantics.md §12); the tier table
shows bytes per block per tier -- payload (Reference), GPU (Reserved), lower
tiers (Serialized) -- next to restore bytes and times, so a smaller KV dtype
can be seen not to shrink everything in proportion (lesson 2).
"""
from __future__ import annotations

from typing import Any

from pcs.units import (format_bandwidth, format_bytes, format_count, format_counted, format_duration, format_percent,
                       format_points, points_between, split_percent)
from pcs.report.table import render_table, shown_name, shown_relative_path

__all__ = ["render_replay", "gap_texts", "payload_gap_texts", "engine_note", "model_label", "slot_unit", "tier_rows", "hybrid_rows", "block_bytes", "model_block_pages", "TIER_TITLE", "HYBRID_TIER_TITLE", "header_line", "tier_policies_text", "lens_rows",
           "lens_text", "ttft_note", "REAL_LABEL", "CEILING_LABEL", "CEILING_MEANING"]


def gap_texts(ideal: float | None, ss: float | None, seq: float | None, real: float | None,
              hybrid: float | None = None, oracle: float | None = None) -> dict[str, str]:
    """The gap split's terms (docs/semantics.md §12) as every report prints them, keyed as the JSON ``gap``:
    each the difference of the printed ratios (:func:`pcs.units.points_between`), so the rows add up on screen
    -- block_rounding = ideal - single-sequence, capacity_eviction = single-sequence - sequential - the printed
    hybrid_rules, concurrency = sequential - real, and with an oracle capacity = single-sequence - oracle,
    policy = oracle - real. Arguments: the ratios (0..1, None for 0/0); ``hybrid`` the hybrid rules term (a
    ratio of prompt tokens; None: no hybrid model, no key); ``oracle`` the oracle's hit ratio (None: no keys)."""
    out = {"block_rounding": points_between(ideal, ss), "capacity_eviction": points_between(ss, seq, hybrid),
           "concurrency": points_between(seq, real)}
    if hybrid is not None:
        out["hybrid_rules"] = format_points(hybrid)
    if oracle is not None:
        out["capacity"], out["policy"] = points_between(ss, oracle), points_between(oracle, real)
    return out


def payload_gap_texts(s: dict[str, Any]) -> dict[str, str]:
    """:func:`gap_texts` of a replay payload (its four ratios, ``gap.hybrid_rules``, ``oracle_hit_ratio``)."""
    return gap_texts(s["ideal_hit_ratio"], s["single_sequence_hit_ratio"], s["sequential_hit_ratio"],
                     s["hit_ratio"], (s.get("gap") or {}).get("hybrid_rules"), s.get("oracle_hit_ratio"))


#: Lesson 1's words, one place for every report (replay, compare, sweep, HTML): the real hit ratio a finite cache
#: reaches and the single-sequence (infinite-cache) ratio beside it (docs/semantics.md §12).
REAL_LABEL = "hit ratio (real, token-weighted)"
CEILING_LABEL = "single-sequence hit ratio"
CEILING_MEANING = "infinite cache, same block rules: NOT what a finite cache reaches"


#: The header marker of a ``--compute infinite`` run: every prefill and decode at full speed at once, so no
#: compute queue -- prefill still takes its time (docs/semantics.md §9, ``pcs replay --help``).
UNLIMITED = "unlimited compute, no queueing (--compute infinite)"


def timing_label(timing: str, compute: str | None) -> str:
    """``modeled timing``, or ``modeled timing, unlimited compute, no queueing (--compute infinite)`` when no
    compute queue runs (docs/semantics.md §9): the header of a replay, a compare and a fleet run says which
    model the figures are."""
    return f"{timing} timing" + (f", {UNLIMITED}" if compute == "infinite" else "")


def model_label(s: dict[str, Any]) -> str:
    """The model as a header names it: the config file it was read from (``model_file``, what ``--model`` takes
    back) with the config's own name, or the preset's name."""
    model = shown_name(s["model"])      # a config's long name cut (the JSON keeps it)
    return f"{s['model_file']} ({model})" if s.get("model_file") else model


def header_line(s: dict[str, Any]) -> str:
    """One line naming the run: trace, model, hardware, block size, timing (and unlimited compute), policy."""
    dtype = f", KV {s['kv_dtype']}" if s.get("kv_dtype") else ""
    return (f"pcs replay: {shown_relative_path(s['trace'])} | {model_label(s)}{dtype} on {s['tp']}x {shown_name(s['gpu'])} (TP={s['tp']}) | "
            f"block {format_counted(s['block_size'], 'token')} | {timing_label(s['timing'], s.get('compute'))} | "
            f"{tier_policies_text(s['tiers'])}, write-{s['write_policy']}")


def tier_policies_text(tiers: list[dict[str, Any]]) -> str:
    """The eviction policies of a run's tiers (the summary's ``tiers`` rows, GPU first) as one text: the policy
    when every tier has it (``lru``), else each tier's in tier order (``gpu=slru/cpu=lru``): a sorted set of
    names (``lru/slru``) read as the GPU tier's first."""
    pols = [t["policy"] for t in tiers]
    return pols[0] if len(set(pols)) == 1 else "/".join(f"{t['name']}={t['policy']}" for t in tiers)


def _ceiling_rows(s: dict[str, Any]) -> list[list[str]]:
    """The ceiling beside the real hit ratio: the single-sequence ratio, decode-aware when the run cached the
    next turns' decode blocks (then the prompt-only one follows, the gap split's term; docs/semantics.md
    §12, §17), so real <= ceiling in every run."""
    ss, ssd = s["single_sequence_hit_ratio"], s.get("single_sequence_with_decode_hit_ratio")
    if ssd is None:
        return [[CEILING_LABEL, format_percent(ss), CEILING_MEANING]]
    return [["single-sequence with decode hit ratio", format_percent(ssd),
             "infinite cache, same block rules, incl. the next turns' cached decode blocks: NOT what a finite "
             "cache reaches"],
            [CEILING_LABEL, format_percent(ss),
             "prompt blocks only (no cached decode blocks): the single-sequence of the gap split below"]]


def _concurrency_meaning(s: dict[str, Any]) -> str:
    """The concurrency row's meaning; with cached decode blocks it names their share of a negative term."""
    text = "sequential - real: prefixes in flight, held space (< 0: cached next-turn outputs, luckier evictions)"
    ssd = s.get("single_sequence_with_decode_hit_ratio")
    if ssd is None:
        return text
    return (text + f"; the next turns' cached decode blocks raise the ceiling by "
            f"{points_between(ssd, s['single_sequence_hit_ratio'])}")


def _oracle_capacity_meaning(s: dict[str, Any]) -> str:
    """The oracle capacity row's meaning; when negative, why (docs/semantics.md §12: under the step scheduler
    the oracle also hits cached decode blocks and sees the future by admissions)."""
    text = f"single-sequence - the Belady oracle on these tiers ({format_percent(s['oracle_hit_ratio'])})"
    if s["gap"]["capacity"] >= 0:
        return text
    return (text + "; < 0: the oracle also hits cached decode blocks and re-admissions, which the prompt-only "
            "single-sequence counts as first uses (a looser bound under --compute step)")


def _hit_table(s: dict[str, Any]) -> str:
    g, shown = s["gap"], payload_gap_texts(s)
    rows = [
        [REAL_LABEL, format_percent(s["hit_ratio"]),
         "hit tokens / prompt tokens, this cache, this traffic"],
    ] + _ceiling_rows(s)
    per = s["hit_ratio_per_tier"]
    for i, (tier, text) in enumerate(zip(per, split_percent(list(per.values()), s["hit_ratio"]))):
        said = i == 0 and s.get("hybrid") and len(per) > 1
        rows.append([f"  hits served by {tier}", text,
                     "hybrid: a block counts at the lowest tier any page it reads came from" if said else ""])
    rows += [
        ["gap: block rounding", shown["block_rounding"],
         f"ideal {format_percent(s['ideal_hit_ratio'])} (partial blocks, no last-token cap) - single-sequence"],
        ["gap: capacity and eviction", shown["capacity_eviction"],
         f"single-sequence - sequential replay of these tiers ({format_percent(s['sequential_hit_ratio'])})"
         + (" - hybrid rules (row below)" if g.get("hybrid_rules") is not None else "")],
        ["gap: concurrency", shown["concurrency"], _concurrency_meaning(s)],
    ]
    if s.get("oracle_hit_ratio") is not None:     # --gap-oracle (docs/semantics.md §12)
        rows += [
            ["oracle split: capacity", shown["capacity"], _oracle_capacity_meaning(s)],
            ["oracle split: policy", shown["policy"], "oracle - real: what the policies leave on the table; "
             "with the row above a second split of single-sequence - real, not added to the gaps above"],
        ]
    if g.get("hybrid_rules") is not None:
        rows.append(["gap: hybrid rules", shown["hybrid_rules"],
                     "in the sequential replay: its hits lost to a missing state checkpoint or an evicted window "
                     "block (this run's own: the Hybrid model table)" + _rules_row_said(s)])
    rows += [
        ["requests", format_count(s["requests"]),
         f"{format_count(s['requests_with_hit'])} with a hit, {format_count(s['requests_truncated'])} truncated"
         f" (larger than the GPU tier), {format_count(s['requests_waited'])} waited for KV space"],
    ]
    return render_table(["hit ratio", "value", "meaning"], rows, title="Hit ratio: real vs single-sequence",
                        wrap=True)


def slot_unit(s: dict[str, Any]) -> str:
    """``"page"`` for a hybrid model's replay payload (its tiers hold pages, docs/semantics.md §3.1), else ``"block"``."""
    return "page" if s.get("hybrid") else "block"


#: The tier table's title, one for the text and the HTML page.
TIER_TITLE = "Tiers (hits count once, at the highest tier holding the block)"
#: A hybrid model's (docs/replay.md, "hits per tier"): a block's pages may come from several tiers.
HYBRID_TIER_TITLE = "Tiers (a hit block counts once, at the lowest tier any page it reads came from)"


def tier_rows(s: dict[str, Any]) -> tuple[str, list[str], list[list[str]], list[str]]:
    """The tier table as (title, headers, rows of strings, notes), for the text and the HTML page: the payload
    row, then per tier its layout, bytes per block (or page), capacity, policy (+ admission), hits, restored,
    written, evicted and resident bytes; the notes say what a hybrid model's columns count."""
    rows = [["payload", "reference", format_bytes(s["reference_bytes_per_block"]), "-", "-", "-", "-", "-", "-",
             "-", "-"]]
    unit = slot_unit(s)
    for t in s["tiers"]:
        rows.append([t["name"], t["layout"], format_bytes(t["bytes_per_block"]),
                     f"{format_bytes(t['capacity_bytes'])} = {format_count(t['capacity_blocks'])} "
                     f"{'pages' if unit == 'page' else 'blk'}",
                     t["policy"] + (f" +{t['admission']}" if t.get("admission") else ""),
                     format_count(t["hit_blocks"]), format_bytes(t["restored_bytes"]),
                     format_bytes(t["written_bytes"]), format_count(t["evicted_blocks"]),
                     format_bytes(t["resident_bytes_end"]), format_bytes(t["resident_bytes_peak"])])
    headers = ["tier", "layout", f"bytes/{unit}", "capacity", "policy",
               "hit blocks" if unit == "block" else "hit blocks (model)", "restored", "written", "evicted",
               "resident end", "resident peak"]
    return (TIER_TITLE if unit == "block" else HYBRID_TIER_TITLE), headers, rows, _tier_notes(s, unit)


def _tier_notes(s: dict[str, Any], unit: str) -> list[str]:
    notes = [f"bytes/{unit}: GPU holds the Reserved layout, lower tiers the Serialized layout; " + (
        "a smaller KV dtype shrinks the payload, not in-page scales, padding, setup or compute" if unit == "block"
        else "a smaller KV dtype shrinks every page, the state's padding up to the attention page included "
             "(docs/hybrid.md: the page is sized by the attention layers), not setup or compute")]
    if unit == "page":
        pool = ("pages of the shared pool" if (s.get("hybrid") or {}).get("manager") != "sglang" else
                "pages of its pools (SGLang: one pool per kind of layer, their pages added)")
        notes.append(f"hybrid model: a tier's bytes/page, capacity, evicted and resident count {pool} (JSON "
                     "bytes_per_block and capacity_blocks are per page too: blocks_unit \"page\"); hit blocks (model) (JSON hit_blocks), "
                     "the payload row and 'block by component' are per block of the model")
    multi = [t for t in s["tiers"] if len(t["bytes_per_block_by_component"]) > 1]
    for t in multi:
        notes.append(f"{t['name']} block by component: {_block_parts(s, t)}")
    notes += _whole_block_note(s, unit)
    for t in s["tiers"]:
        if t.get("admission"):
            notes.append(f"{t['name']} admission {t['admission']}: {format_counted(t['refused_blocks'], 'block')} "
                         "refused (passed on or dropped)")
    return notes


def _tier_table(s: dict[str, Any]) -> str:
    title, headers, rows, notes = tier_rows(s)
    return render_table(headers, rows, title=title, notes=notes, split=(5,))   # the tier, then its traffic


def _block_parts(s: dict[str, Any], tier: dict[str, Any]) -> str:
    """A tier's "block by component" text: each component's bytes in one block of the model, and for a hybrid
    model the page padding up to the block's pages and their bytes (:func:`block_bytes`), so the parts add up to
    the block beside them (Nemotron-H TP 1, B 512: full_attention 8.39 MB, ssm_state 25.90 MB, page padding
    24.43 MB = 7 pages, 58.72 MB)."""
    comps = tier["bytes_per_block_by_component"]
    parts = ", ".join(f"{k} {format_bytes(v)}" for k, v in comps.items())
    if not s.get("hybrid"):
        return parts
    whole, pages = block_bytes(s, tier), sum(model_block_pages(s))
    pad = whole - sum(comps.values())      # 0 where the pages hold the components exactly (SGLang's pools)
    parts += f", page padding {format_bytes(pad)}" if pad else ""
    return f"{parts} = {format_counted(pages, 'page')}, {format_bytes(whole)}{_align_words(s, tier)}"


def _align_words(s: dict[str, Any], tier: dict[str, Any]) -> str:
    """Under ``--mamba-cache-mode align`` (docs/semantics.md §3.1: a request saves one state, at its last
    checkpoint), why the block's state share stays "all"'s spread: which blocks hold a state then depends on
    where requests end (the trace), so no figure a block follows from the configuration; "all"'s spread is the
    most a block can hold (align saves a subset of "all"'s checkpoints) and what a tier given in blocks counts."""
    h = s["hybrid"]
    if h.get("mamba_cache_mode") != "align":
        return ""
    pools = h["pools"][tier["name"]]
    one = sum(g["pages_per_block"] * pools[g["pool"]]["page_bytes"] for g in h["groups"] if g["rule"] == "state")
    return (f" (--mamba-cache-mode align: a request keeps one state, {format_bytes(one)} of pages, at its last "
            "checkpoint; which blocks hold one depends on where requests end, so the state's share here is "
            "\"all\"'s spread, the most a block holds, as a tier given in blocks counts it)")


def block_bytes(s: dict[str, Any], tier: dict[str, Any]) -> int:
    """Bytes one block of the model takes in ``tier`` (a replay payload's tier row), int: its ``bytes_per_block``,
    or for a hybrid model (whose tiers count pages, docs/semantics.md §3.1) the sum over its cache groups of
    pages per block of the model x the page bytes of the group's pool in that tier, padding included, a state
    group's pages per checkpoint spread over the blocks between checkpoints, rounded up
    (:func:`model_block_pages`; ``HybridPlan.block_layout``'s bytes, the payload lens' Reserved bytes/block for
    the GPU tier)."""
    h = s.get("hybrid")
    if not h:
        return tier["bytes_per_block"]
    pools = h["pools"][tier["name"]]
    return sum(n * pools[g["pool"]]["page_bytes"] for n, g in zip(model_block_pages(s), h["groups"]))


def model_block_pages(s: dict[str, Any]) -> list[int]:
    """Pages one block of the model takes in each cache group of a hybrid replay payload ``s``: the group's
    ``pages_per_block``, a state group's (pages per checkpoint) spread over the blocks between checkpoints,
    rounded up -- :func:`pcs.cache.groups.pages_per_model_block`, the rule of ``HybridPlan.block_pages``."""
    from pcs.cache.groups import pages_per_model_block

    return [pages_per_model_block(g["rule"], g["pages_per_block"], g["span_tokens"], s["block_size"])
            for g in s["hybrid"]["groups"]]


def _whole_block_note(s: dict[str, Any], unit: str) -> list[str]:
    """Why the GPU tier's capacity is below the deployment's size printed in the notes: a tier holds whole
    blocks (or pages), floor(size / bytes per block) of them (docs/semantics.md §13); none when both print alike."""
    dep, gpu = s.get("deployment") or {}, s["tiers"][0]
    size = dep.get("gpu_tier_bytes")
    if dep.get("gpu_tier_from") != "deployment" or not size or format_bytes(gpu["capacity_bytes"]) == format_bytes(size):
        return []
    return [f"{gpu['name']} capacity counts whole {unit}s: the deployment's {format_bytes(size)} holds "
            f"{format_count(gpu['capacity_blocks'])} {unit}s of {format_bytes(gpu['bytes_per_block'])} = "
            f"{format_bytes(gpu['capacity_bytes'])}"]


def _restored_detail(s: dict[str, Any]) -> str:
    """Per lower tier (its link to the GPU), the blocks restored from it and their bytes: ``from cpu 26,309 blk =
    4.41 TB`` (a hybrid model's tiers count pages: ``pages``); ``-`` with one tier. From ``tiers[].restored_blocks``
    and ``bytes.restored_per_link`` (bytes, keyed by tier name)."""
    unit = " pages" if s.get("hybrid") else " blk"
    blocks = {t["name"]: t["restored_blocks"] for t in s["tiers"]}
    return ", ".join(f"from {k} {format_count(blocks[k])}{unit} = {format_bytes(v)}"
                     for k, v in s["bytes"]["restored_per_link"].items()) or "-"


def _bytes_table(s: dict[str, Any]) -> str:
    b = s["bytes"]
    pages = bool(s.get("hybrid"))    # a hybrid model's tiers count pages (docs/semantics.md §3.1)
    rows = [["restored to GPU", format_bytes(b["restored"]), _restored_detail(s)],
            ["written to lower tiers", format_bytes(sum(b["written_per_tier"].values())), _written_detail(s)],
            ["recomputed (prefilled) KV", format_bytes(b["recomputed_bytes"]),
             f"{format_counted(b['recomputed_tokens'], 'prompt token')} prefilled"],
            ["peak Reserved of running requests", format_bytes(b["peak_reserved_bytes"]),
             f"{format_count(b['peak_reserved_blocks'])} GPU {'page' if pages else 'block'}"
             f"{'' if b['peak_reserved_blocks'] == 1 else 's'} pinned or reserved at once"],
            ["dropped from the last tier", format_count(b["dropped_blocks"]) + (" pages" if pages else " blk"),
             "evicted from the last tier: no copy left"]]
    return render_table(["bytes", "total", "detail"], rows, title="Bytes", notes=_restored_again_notes(s), wrap=True,
                        text_columns=(2,))


def _written_detail(s: dict[str, Any]) -> str:
    """Per lower tier, the blocks written to it and their bytes, as the restored row gives them: ``cpu 24,904 blk =
    4.18 TB``; ``-`` with one tier. From ``tiers[].written_blocks`` and ``bytes.written_per_tier``."""
    unit = " pages" if s.get("hybrid") else " blk"
    blocks = {t["name"]: t["written_blocks"] for t in s["tiers"]}
    return ", ".join(f"{k} {format_count(blocks[k])}{unit} = {format_bytes(v)}"
                     for k, v in s["bytes"]["written_per_tier"].items()) or "-"


def _restored_again_notes(s: dict[str, Any]) -> list[str]:
    """A note per lower tier that restored more blocks than it served hits: a preempted request's re-admission
    restores its lower-tier hits again over the link, while its hits count once (docs/semantics.md §9, "KV space
    grows block by block"); none for a hybrid model."""
    if s.get("hybrid"):      # hit blocks count blocks of the model, restores count pages: not comparable
        return []
    unit = "blocks"
    return [f"{t['name']}: {format_count(t['restored_blocks'])} {unit} restored for {format_count(t['hit_blocks'])} "
            f"hit {unit}: {format_count(t['restored_blocks'] - t['hit_blocks'])} restored again when preempted "
            "requests were re-admitted (a hit counts once, the link carries each restore; docs/semantics.md §9)"
            for t in s["tiers"][1:] if t["restored_blocks"] > t["hit_blocks"]]


def ttft_note(s: dict[str, Any]) -> str:
    """TTFT with and without the cache, like for like: both scheduled on the same instance when the step
    scheduler ran, else the no-cache figure is each request's full prefill with no wait."""
    e, sc = s["envelope"], s.get("scheduler")
    with_cache = f"TTFT p50 {format_duration(e['ttft_p50_s'])} / p99 {format_duration(e['ttft_p99_s'])} with the cache"
    if sc and sc.get("no_cache"):
        t = sc["no_cache"]["ttft_s"]
        return (f"{with_cache}; {format_duration(t['p50'])} / {format_duration(t['p99'])} without it (the same "
                f"trace scheduled on the same instance; each prefill alone, no queue: "
                f"{format_duration(e['ttft_no_cache_alone_p50_s'])} / {format_duration(e['ttft_no_cache_alone_p99_s'])})")
    return (f"{with_cache}; {format_duration(e['ttft_no_cache_alone_p50_s'])} / "
            f"{format_duration(e['ttft_no_cache_alone_p99_s'])} without it (each prefill alone, no queue, no wait)")


#: The envelope table's columns split each restore: restore time = transfer time + queueing.
RESTORE_TIME_NOTE = "restore time = transfer time (setup + bytes / bandwidth) + queueing for the link"
#: Bandwidth and the first break-even are the TP group's; the second is one GPU's, as links are given.
TP_NOTE = ("bandwidth and break-even (TP group) are for all TP ranks together (TP x one GPU's link); break-even "
           "per GPU = that / TP, comparable with --link and pcs hardware, which are per GPU")


#: A size given in bytes becomes whole blocks, floor(size / bytes per block) (docs/semantics.md §13): the bytes
#: printed are those blocks' and may fall just short of the size given (80GB -> 79.99 GB).
WHOLE_BLOCKS_NOTE = ("a size given in bytes holds whole blocks, floor(size / bytes per block): the blocks and bytes "
                     "printed are those blocks', just under the size given when it is no multiple of a block "
                     "(e.g. 80GB -> 79.99 GB)")


def break_even_cells(lk: dict[str, Any]) -> list[str]:
    """The two break-even cells of one envelope link row: the TP group's and one GPU's ("-" without restores)."""
    if not lk["restores"]:
        return ["-", "-"]
    return [format_bandwidth(lk["break_even_bps"]), format_bandwidth(lk["break_even_bps_per_gpu"])]


def _envelope_table(s: dict[str, Any]) -> str:
    e = s["envelope"]
    rows = []
    for lk in e["links"]:
        share = format_percent(lk["share_slower"]) if lk["share_slower"] is not None else "-"
        rows.append([f"{lk['tier']} -> gpu", f"{lk['link']} = {format_bandwidth(lk['bandwidth_bps'])}",
                     format_count(lk["restores"]), format_bytes(lk["restored_bytes"]),
                     format_duration(lk["transfer_s"]), format_duration(lk["queue_s"]),
                     format_duration(lk["prefill_saved_s"]),
                     f"{format_count(lk['restores_slower_than_recompute'])} ({share})", *break_even_cells(lk)])
    notes = [ttft_note(s),
             f"wait for KV space p50 {format_duration(e['wait_p50_s'])} / p99 {format_duration(e['wait_p99_s'])}; "
             f"prefill time saved by all hits {format_duration(e['prefill_saved_s'])}",
             RESTORE_TIME_NOTE + "; slower = restore time (queueing included) > the prefill its hits saved; "
             "break-even = restored bytes / (full - remaining prefill - setup), summed over the run",
             TP_NOTE]
    return render_table(["link", "bandwidth", "restores", "bytes", "transfer time", "queueing", "prefill saved",
                         "slower than recompute", "break-even (TP group)", "break-even per GPU"], rows,
                        title="Bandwidth envelope: restore vs recompute, per link", notes=notes, split=(6,))    # the restores, then vs recompute


def _p50_p99(p: dict[str, Any] | None) -> str:
    return f"{format_duration(p['p50'])} / {format_duration(p['p99'])}" if p else "-"


def _latency_rows(sc: dict[str, Any]) -> list[list[str]]:
    w, n = sc["with_cache"], sc.get("no_cache")
    rows = []
    for label, key in (("TTFT p50 / p99", "ttft_s"), ("TPOT p50 / p99", "tpot_s"), ("end-to-end p50 / p99", "e2e_s")):
        rows.append([label, _p50_p99(w[key]), _p50_p99(n[key]) if n else "-"])
    rows.append(["busy time / makespan", f"{format_duration(w['busy_s'])} / {format_duration(w['makespan_s'])}",
                 f"{format_duration(n['busy_s'])} / {format_duration(n['makespan_s'])}" if n else "-"])
    rows.append(["utilisation", format_percent(w["utilisation"]), format_percent(n["utilisation"]) if n else "-"])
    rows.append(["preemptions", format_count(w["preemptions"]), format_count(n["preemptions"]) if n else "-"])
    slo = sc.get("ttft_slo_s")
    if slo is not None:                      # --ttft-slo: requests meeting it, and goodput (met / makespan)
        label = f"TTFT <= {format_duration(slo)}: met / goodput"
        rows.append([label, _slo_cell(w), _slo_cell(n) if n else "-"])
    return rows


def _slo_cell(x: dict[str, Any]) -> str:
    share = format_percent(x["slo_met_share"]) if x.get("slo_met_share") is not None else "-"
    rps = f"{x['goodput_rps']:.3g} req/s" if x.get("goodput_rps") is not None else "-"
    return f"{share} / {rps}"


def csv_row(s: dict[str, Any]) -> dict[str, Any]:
    """The one CSV row of ``pcs replay --format csv``: the summary's flat fields, plus the TTFT SLO's
    (``ttft_slo_s``, ``slo_met``, ``slo_met_share``, ``goodput_rps`` with the cache, ``no_cache_*`` without)
    when ``--ttft-slo`` was given."""
    row = {k: v for k, v in s.items() if not isinstance(v, (dict, list))}
    sc = s.get("scheduler")
    if sc and sc.get("ttft_slo_s") is not None:
        row["ttft_slo_s"] = sc["ttft_slo_s"]
        for prefix, key in (("", "with_cache"), ("no_cache_", "no_cache")):
            run = sc.get(key) or {}
            for f in ("slo_met", "slo_met_share", "goodput_rps"):
                row[prefix + f] = run.get(f)
    return row


def _scheduler_table(s: dict[str, Any]) -> str:
    sc = s["scheduler"]
    rows = _latency_rows(sc)
    share = format_percent(sc["share_losing"]) if sc["share_losing"] is not None else "-"
    notes = [f"step scheduler (docs/semantics.md §9): {format_counted(sc['max_num_batched_tokens'], 'token')} per step, "
             f"at most {format_count(sc['max_num_seqs'])} running, {format_counted(sc['steps'], 'step')}; restores "
             f"{sc['restore_policy']}{', fallback on' if sc['restore_fallback'] else ''}; 'without the cache' is "
             "the same trace on the same instance with no prefix cache",
             f"wait p50 / p99 (with the cache): KV space {_p50_p99(sc['wait_kv_s'])}, compute "
             f"{_p50_p99(sc['wait_compute_s'])}, link {_p50_p99(sc['wait_link_s'])}",
             f"restores that would lose to recompute: {format_count(sc['restores_losing'])} of "
             f"{format_count(sc['restores_considered'])} ({share}), {format_count(sc['restores_skipped'])} recomputed "
             f"instead; {format_counted(sc['requests_preempted'], 'request')} preempted, "
             f"{format_counted(sc['preempted_recompute_tokens'], 'token')} prefilled again; "
             f"{format_counted(sc['decode_blocks_cached'], 'decode block')} cached for next turns"]
    return render_table(["scheduled latency and load", "with the cache", "without the cache"], rows,
                        title="Compute: step scheduler, with and without the cache",
                        notes=notes)


def _ratio(pair: list) -> str:
    run, alt = pair
    return f"x{alt / run:.3f}" if run else "-"


def lens_rows(s: dict[str, Any]) -> tuple[str, list[str], list[list[str]], list[str]]:
    """The payload lens (lesson 2) as (title, headers, rows of strings, notes), for the text and the HTML page.

    The title names the two layouts only (``Payload is not everything: KV fp8_per_token_head vs bf16``, 56
    columns; the longest layout name, ``int8_per_token_head``, 57): why a narrow run's 16-bit baseline is bf16
    (:func:`pcs.engine.lens.baseline_reason`) is the note after the lens', so the title line fits 100 columns with a
    label before it (a compare variant's name, a fleet's instance) as the table does."""
    lens = s["payload_lens"]
    d, a = lens["dtype"], lens["alt_dtype"]
    spec = [("payload bytes/block (Reference)", "reference_bytes_per_block", format_bytes),
            ("GPU bytes/block (Reserved)", "gpu_bytes_per_block", format_bytes),
            ("lower-tier bytes/block (Serialized)", "lower_bytes_per_block", format_bytes),
            ("blocks the GPU tier holds", "gpu_capacity_blocks", format_count),
            ("bytes of this run's restores", "restored_bytes", format_bytes),
            ("their transfer time (setup + bytes/B)", "restore_transfer_s", format_duration),
            ("prefill of the missed tokens", "prefill_s", format_duration),
            ("mean TTFT (waits and queueing held)", "ttft_mean_s", format_duration)]
    rows = [[label, fmt(lens[key][0]), fmt(lens[key][1]), _ratio(lens[key])] for label, key, fmt in spec]
    from pcs.engine.lens import baseline_reason

    why = baseline_reason(d, a)        # fp8 vs bf16 beside fp16 vs fp8: one 16-bit width, said in a note
    notes = [_lens_note(a, lens, _fp8_runs_as(s))] + [why] * bool(why) + _padding_note(lens)
    run = lens.get("layout") or d      # the layout as the user typed it: fp8_per_token_head, nvfp4
    return (f"Payload is not everything: KV {run} vs {a}",      # 61 columns at most: a label before it fits
            ["same hits, other KV dtype", f"{run} (this run)", a, f"{a} / this run"], rows, notes)   # within 100 columns


def _padding_note(lens: dict[str, Any]) -> list[str]:
    """A note when the GPU bytes/block move further than the payload (a hybrid model whose state pads up to the
    attention page: the padding scales with the page, docs/hybrid.md); none otherwise."""
    pay, gpu = lens["reference_bytes_per_block"], lens["gpu_bytes_per_block"]
    if not (pay[0] and gpu[0]) or abs(gpu[1] / gpu[0] - 1) <= abs(pay[1] / pay[0] - 1):
        return []
    return [f"here the stored bytes move more than the payload ({_ratio(gpu)} against {_ratio(pay)}): the pages "
            "are sized by the attention layers and the state is padded up to them, so the padding scales with "
            "the page (docs/hybrid.md)"]


def _fp8_runs_as(s: dict[str, Any]) -> str | None:
    """The layout fp8 runs as on the lens' model when the lens sets fp8 beside bf16 and vLLM runs another layout
    for it (``fp8_ds_mla`` on DeepSeek-V3.2, docs/semantics.md §13); None otherwise or for a model no preset
    names (a config.json run: the general note). A run whose layout was given (``--dtype fp8_per_token_head`` on a
    model where vLLM runs plain fp8) is no layout vLLM picks: the general note too."""
    lens = s["payload_lens"]
    if "fp8" not in (lens["dtype"], lens["alt_dtype"]):
        return None
    if lens["dtype"] == "fp8" and lens.get("layout") in (None, "fp8"):
        return None
    from pcs.errors import UserError
    from pcs.model import get_model

    try:
        name = get_model(s["model"]).with_dtype("fp8").kv_layout.name
    except (UserError, KeyError, TypeError):
        return None
    if lens["dtype"] == "fp8":
        return lens["layout"] if name == lens["layout"] else None
    return None if name == "fp8" else name


def _lens_note(a: str, lens: dict[str, Any], fp8_layout: str | None = None) -> str:
    """The lens' note, worded for the direction of the comparison: a narrower other dtype
    shrinks the stored bytes, a wider one (bf16 beside an fp8 / nvfp4 run) grows them. ``fp8_layout``: the layout
    fp8 runs as on this model when not plain fp8 (:func:`_fp8_runs_as`), named with this lens' ratios vs bf16
    (:func:`pcs.report.footprint.fp8_note`, footprint's text) instead of plain fp8's x0.500."""
    narrower = lens["gpu_bytes_per_block"][1] <= lens["gpu_bytes_per_block"][0]
    move = "shrink" if narrower else "grow"
    fp8 = "vLLM fp8: x0.500 of bf16; fp8_per_token_head, nvfp4: less, pcs footprint shows both"
    if fp8_layout:
        from pcs.report.footprint import fp8_note

        keys = ("reference_bytes_per_block", "lower_bytes_per_block", "gpu_bytes_per_block")
        pairs = [lens[k] if lens["alt_dtype"] == "fp8" else lens[k][::-1] for k in keys]    # (bf16, fp8)
        fp8 = fp8_note(fp8_layout, *(p[1] / p[0] if p[0] else None for p in pairs))
    return (f"stored bytes {move} with the payload only where the scales sit outside the pages "
            f"({fp8}), "
            f"a per-restore setup does not {move}, and the prefill of missed tokens not at all, "
            "so with the hits held fixed TTFT barely moves; a real --dtype "
            f"{a} replay {'also ' if narrower else ''}fits {_blocks_ratio(lens['gpu_capacity_blocks'], narrower)} "
            "per tier, so the hits change and with them restore bytes and TTFT: replay with it to see")


def _blocks_ratio(pair: list, narrower: bool) -> str:
    """How many blocks the other dtype fits per tier, for the lens' note: ``x2.000 the blocks`` from the GPU tier's
    blocks (this run's, the other dtype's); ``more blocks`` / ``fewer blocks`` where this run's GPU tier holds none
    (a GPU tier of 0: no ratio, and a lower tier sized in bytes still fits more or fewer)."""
    return f"{_ratio(pair)} the blocks" if pair[0] else ("more blocks" if narrower else "fewer blocks")


def lens_text(s: dict[str, Any], label: str = "", notes: bool = True) -> str:
    """The payload lens of ``s`` (a replay summary's or a compare variant's JSON, or any dict with its
    ``payload_lens``) as a text table; ``label`` goes before the title (a compare variant's name); ``notes``
    False leaves the note out (said once under several tables)."""
    title, headers, rows, lens_notes = lens_rows(s)
    return render_table(headers, rows, title=f"{label}: {title}" if label else title,
                        notes=lens_notes if notes else ())


def hybrid_rows(s: dict[str, Any]) -> tuple[str, list[str], list[list[str]], list[str]]:
    """A hybrid model's table (title, headers, rows, notes), one source for the text and the HTML report
    (:func:`pcs.report.htmltables.hybrid_table`): per tier and component the bytes at the tier's peak beside the
    all-full-attention run's, and notes with that run's hit ratio and this run's hit tokens lost to the rules."""
    h = s["hybrid"]
    full = h.get("full_attention") or {}
    ft = full.get("tiers", {})
    rows = []
    for t in s["tiers"]:
        other = ft.get(t["name"], {}).get("resident_bytes_peak_by_component", {})
        for comp, v in t["resident_bytes_peak_by_component"].items():
            rows.append([t["name"], comp, format_bytes(v), format_bytes(other[comp]) if comp in other else "-"])
    notes = [f"the same run with every layer as full attention: hit ratio {format_percent(full['hit_ratio'])} "
             f"(this run {format_percent(s['hit_ratio'])})"
             + (_padding_said(s, full) if full["hit_ratio"] != s["hit_ratio"] else "")] if full else []
    notes.append(_lost_said(s, full) + " (JSON hybrid.lost_tokens, --requests-out hybrid_lost_tokens; the gap's "
                 "hybrid rules term is the sequential replay's); each column is the components at that run's tier "
                 "peak (JSON tiers[].resident_bytes_peak_by_component), page_padding = vLLM's uniform page size "
                 "padding")
    return (f"Hybrid model ({h['manager']}): resident bytes per component",
            ["tier", "component", "at the tier's peak", "all full attention"], rows, notes)


def _rules_row_said(s: dict[str, Any]) -> str:
    """The gap's hybrid rules row when the sequential replay hit nothing, nor its line with every layer as full
    attention, yet the row is not 0: what the rules refused at lookup, before truncation cut every hit."""
    full = (s.get("hybrid") or {}).get("full_attention") or {}
    if not s["gap"].get("hybrid_rules") or s["sequential_hit_ratio"] or full.get("sequential_hit_ratio", 1):
        return ""
    return ("; here refused at lookup, before truncation: that replay kept no hit, nor the same with every layer "
            "as full attention, so read this row with capacity and eviction (the GPU tier holds no request whole)")


def _all_truncated(n: int) -> str:
    """``all N requests were truncated``; for one request, ``its one request was truncated``."""
    return "its one request was truncated" if n == 1 else f"all {format_count(n)} requests were truncated"


def _lost_said(s: dict[str, Any], full: dict[str, Any]) -> str:
    """What became of the hits the hybrid rules refused (``hybrid.lost_tokens``, counted at each request's lookup,
    before a truncation cuts its hits: docs/semantics.md §5, §12), in the words the run's numbers bear out.

    Every request truncated with no hit in this run nor in the same run with every layer as full attention: no
    request kept a hit, so none was lost to the rules (the tier holds no request whole), whatever the lookup
    counted. Every request truncated otherwise: the count is the lookup's, before the truncation."""
    lost, n = format_count(s["hybrid"]["lost_tokens"]), s.get("requests") or 0
    every = n > 0 and s.get("requests_truncated") == n
    if not s["hybrid"]["lost_tokens"]:
        return "0 hit tokens of this run lost to the hybrid rules"
    if every and not s.get("hit_tokens") and not (full or {}).get("hit_ratio"):
        return (f"no hit of this run lost to the hybrid rules: {_all_truncated(n)} (larger "
                "than the GPU tier) and kept no hit, as the same run with every layer as full attention; the "
                f"{lost} tokens the rules refused at lookup, before the truncation, were no hit to lose")
    if every:
        return (f"{lost} hit tokens of this run refused by the hybrid rules at lookup (full attention held them "
                f"then), counted before {_all_truncated(n)} (larger than the GPU tier)")
    return f"{lost} hit tokens of this run lost to the hybrid rules (full attention held them)"


def _padding_said(s: dict[str, Any], full: dict[str, Any]) -> str:
    """``; the difference includes ... page padding ...`` for the comparison line (docs/replay.md, the gap)."""
    pad = full.get("page_padding_bytes_peak") or {}
    gpu = s["tiers"][0]
    if not pad.get(gpu["name"]):
        return ""
    return (f"; the difference includes the page padding, {format_bytes(pad[gpu['name']])} of "
            f"{gpu['name']}'s {format_bytes(gpu['capacity_bytes'])} at its peak, which the gap split counts under "
            "capacity and eviction (its hybrid rules row is only the hits the rules refused)")


def _hybrid_table(s: dict[str, Any]) -> str:
    """A hybrid model: peak resident bytes per component per tier beside the all-full-attention run."""
    title, headers, rows, notes = hybrid_rows(s)
    return render_table(headers, rows, title=title, notes=notes)


def engine_note(s: dict[str, Any]) -> str:
    """Which engine ran the replay and its sequential baseline (``engine``, ``baseline_engine``; a scan's Python
    kernel named, :func:`pcs.engine.select.engine_label`); why: ``engine_reason`` in the JSON (docs/semantics.md
    §15). ``s``: the summary dict (:meth:`pcs.engine.result.ReplaySummary.to_dict`) with ``engine`` set."""
    from pcs.engine.select import engine_label

    run = engine_label(s["engine"], s.get("engine_reason"))
    base = s.get("baseline_engine")
    if base is None:
        return f"engine {run} (why: engine_reason in --format json)"
    base = engine_label(base, s.get("baseline_engine_reason"))
    return (f"engine {run}, sequential baseline {'the same' if base == run else base} "
            "(why: engine_reason, baseline_engine_reason in --format json)")


def render_replay(s: dict[str, Any]) -> str:
    """The whole report: header, hit rate, tiers, bytes, envelope, compute (step scheduler), payload lens."""
    parts = [header_line(s)]
    parts.extend(f"note: {n}" for n in s.get("notes", ()))
    if s.get("engine"):
        parts.append(f"note: {engine_note(s)}")
    parts += ["", _hit_table(s), "", _tier_table(s), "", _bytes_table(s)]
    if s.get("hybrid"):
        parts += ["", _hybrid_table(s)]
    if s["envelope"]["links"] or s["timing"] == "modeled":
        parts += ["", _envelope_table(s)]
    if s.get("scheduler"):
        parts += ["", _scheduler_table(s)]
    parts += ["", lens_text(s)]
    return "\n".join(parts)
