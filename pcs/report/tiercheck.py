"""Warnings about a tier configuration in which a lower tier never receives a block, from a replay's summary.

The replay accepts any order of the tiers below the GPU (docs/semantics.md §7: tiers run in the order given,
fastest first by intent), and a tier that receives nothing leaves no trace but zeros in the tier table. Three
kinds of configuration are named after the run, each with why and what to give instead:

- **size 0** below the GPU: the tier holds nothing and passes every block on (§7, "a tier of size 0 holds nothing
  and passes everything on"): a what-if ("no DRAM tier") that a sweep may mean, so a note, not an error;
- **a slower link above a faster one** (``--tier ssd=10TB --tier cpu=1TB``: 8x nvme-gen4 56 GB/s above 8x
  pcie-gen5-x16 400 GB/s): under write-back the faster tier gets only what the slower evicts, and every block it
  holds was first written to the slower one. LMCache (local CPU, then local disk, then remote) and SGLang HiCache
  (device, host, then storage) order their tiers fastest first; pcs runs the order given, so a note suggests it;
- **a tier that received no block** in the run (``written_blocks`` 0, size > 0): under write-back a tier gets only
  what the tier above evicts (§7), and the tier above evicted none (a GPU tier of size 0 holds no block, so it
  cached none to evict; else it holds every block written to it; when
  requests were truncated, the note says so: their blocks past what fit in the GPU tier are cached in no tier,
  §5, so they never pass through it), or the tier's admission refused every block offered to it.

These are notes, not errors: each run is well defined and answers a question someone may ask (a sweep over a
tier's size passes through 0); an error would refuse those. Mechanism only: the summary's own figures, no rule
of the engine is restated.
"""
from __future__ import annotations

from typing import Any

from pcs.units import format_bandwidth, format_bytes, format_count, format_counted

__all__ = ["tier_config_notes", "with_replay_notes", "without_trace_notes"]


def _unit(t: dict[str, Any]) -> str:
    """How ``--tier`` spells the tier's capacity count: ``blocks`` (a hybrid model's pages are no capacity unit:
    its tier is given in bytes, and its count here is what those bytes held)."""
    return "blocks" if t.get("blocks_unit") != "page" else "pages"


def _order_note(tiers: list[dict[str, Any]]) -> list[str]:
    """A note per lower tier whose restore link is faster than the link of the lower tier above it."""
    notes = []
    for above, below in zip(tiers[1:], tiers[2:]):
        a, b = above.get("link_bandwidth_bps"), below.get("link_bandwidth_bps")
        if a and b and b > a:
            order = sorted(tiers[1:], key=lambda t: -(t.get("link_bandwidth_bps") or 0))
            given = " ".join(f"--tier {t['name']}={t['capacity_blocks']}{_unit(t)}" for t in [tiers[0], *order])
            notes.append(f"tier order: {above['name']} ({format_bandwidth(a)} link) sits above {below['name']} "
                         f"({format_bandwidth(b)}): tiers run in the order given, so {below['name']} gets only "
                         f"what {above['name']} evicts and is read only for blocks {above['name']} no longer holds; "
                         f"LMCache and SGLang HiCache put the faster tier first (host DRAM, then disk, then "
                         f"remote); for that order give {given}")
    return notes


def _empty_note(above: dict[str, Any], tier: dict[str, Any], write_policy: str, truncated: str = "") -> str | None:
    """Why a lower tier of non-zero size received no block, or None when it received some. ``truncated``: the
    truncated requests (``8 of 8 requests``) when ``above`` is the GPU tier and some were, else ''
    (:func:`_held_said`)."""
    if tier["capacity_blocks"] == 0 or tier.get("written_blocks"):
        return None
    name, unit = tier["name"], "page" if tier.get("blocks_unit") == "page" else "block"
    if tier.get("admission") and tier.get("refused_blocks"):
        why = (f"its admission ({tier['admission']}) refused all {format_counted(tier['refused_blocks'], unit)} "
               f"offered to it")
    elif write_policy == "back" and not above.get("evicted_blocks"):
        why = (f"under write-back a tier gets only what the tier above evicts, and {above['name']} "
               f"({format_bytes(above['capacity_bytes'])} = {format_counted(above['capacity_blocks'], unit)}) "
               f"evicted none{':' if above['capacity_blocks'] else ';'} {_held_said(above, unit, truncated)}")
    else:
        why = f"no {unit} reached it"
    return f"tier {name} received no {unit} in this run ({format_bytes(tier['capacity_bytes'])} unused): {why}"


def _held_said(above: dict[str, Any], unit: str, truncated: str) -> str:
    """What the tier that evicted none held: nothing when its size is 0 (a GPU tier of 0 blocks or pages: no
    block is cached, docs/semantics.md §5); else every block it was given; when requests were truncated (the GPU tier
    could not hold them, docs/semantics.md §5), that it kept what it cached while the truncated requests' blocks
    past what fit were cached in no tier -- computed, never stored, so none passed through it (a 1-block GPU tier
    under requests that all start with the same block: it keeps that block, pinned by each request, and caches
    nothing else)."""
    peak = format_count(above["resident_blocks_peak"])
    if above["capacity_blocks"] == 0:
        return (f"it has size 0: it holds no {unit}, so it cached none to evict" + (
            f"; {truncated} truncated (larger than the {above['name']} tier, docs/semantics.md §5): their {unit}s "
            "were cached in no tier" if truncated else ""))
    if not truncated:
        return f"it held every {unit} it was given (at most {peak} at once)"
    return (f"it kept every {unit} it cached (at most {peak} at once); {truncated} truncated (larger than the "
            f"{above['name']} tier, docs/semantics.md §5): their {unit}s past what fit were cached in no tier, so "
            f"none of those passed through {above['name']}")


def _truncated_said(s: dict[str, Any]) -> str:
    """``8 of 8 requests were`` / ``its one request was`` for a summary's truncated requests; '' for none."""
    n, total = s.get("requests_truncated") or 0, s.get("requests") or 0
    if not n:
        return ""
    return "its one request was" if total == 1 else f"{format_count(n)} of {format_count(total)} requests were"


def _feeder(tiers: list[dict[str, Any]], i: int) -> dict[str, Any]:
    """The tier whose evictions reach tier ``i``: the nearest above it of non-zero size (a size-0 tier passes every
    block on, §7), else the one just above."""
    return next((tiers[j] for j in range(i - 1, -1, -1) if tiers[j]["capacity_blocks"] > 0), tiers[i - 1])


def tier_config_notes(s: dict[str, Any]) -> list[str]:
    """Notes on the lower tiers of a replay summary ``s`` (``pcs replay --format json``'s object: ``tiers`` with
    ``name``, ``capacity_blocks``, ``capacity_bytes``, ``link_bandwidth_bps``, ``written_blocks``,
    ``evicted_blocks``, ``resident_blocks_peak``, ``admission``, ``refused_blocks``; ``write_policy``) that
    never received a block or cannot receive one: size 0, a slower link above a faster one, none written in the
    run (module docstring). Returns [] for a GPU-only run or when every lower tier received blocks."""
    tiers = s.get("tiers") or []
    notes = [f"tier {t['name']} has size 0: it holds no block and passes every block it is given on"
             + (" (the last tier: they are dropped)" if i == len(tiers) - 1 else f" to {tiers[i + 1]['name']}")
             for i, t in enumerate(tiers) if i > 0 and t["capacity_blocks"] == 0]
    notes += _order_note(tiers)
    said = _truncated_said(s)
    notes += [n for i, t in enumerate(tiers) if i > 0
              if (n := _empty_note(f := _feeder(tiers, i), t, s.get("write_policy") or "back",
                                   said if f is tiers[0] else "")) is not None]
    return notes


def with_replay_notes(summary: Any, trace: Any, words: Any = None) -> Any:
    """The replay summary ``summary`` (:class:`pcs.engine.summary.ReplaySummary`) with the notes ``pcs replay``
    adds after the run, in its order: the trace's own (:func:`pcs.trace.api.trace_notes`: synthetic reuse,
    skipped lines), then the tiers that never received a block (:func:`tier_config_notes`). The one place both
    ``pcs replay`` and a sweep's replay points make them, so a sweep row holds what ``pcs replay`` prints.
    ``words``: the API's words in the interface's, for the skipped lines named (:func:`pcs.trace.api.trace_notes`)."""
    import dataclasses

    from pcs.trace.api import trace_notes

    summary = without_trace_notes(summary, trace)
    extra = tuple(trace_notes(trace, words)) + tuple(tier_config_notes(summary.to_dict()))
    return dataclasses.replace(summary, notes=summary.notes + extra) if extra else summary


def without_trace_notes(summary: Any, trace: Any) -> Any:
    """``summary`` without the trace's caveats :func:`pcs.replay` appended last to its notes in the API's words
    (:func:`pcs.trace.api.trace_notes` of ``trace``), for a caller that gives them in its own (``pcs replay``, a
    sweep: :func:`with_replay_notes`); ``summary`` itself when its notes do not end with them."""
    import dataclasses

    from pcs.trace.api import trace_notes

    api = tuple(trace_notes(trace))
    if not api or tuple(summary.notes[-len(api):]) != api:
        return summary
    return dataclasses.replace(summary, notes=tuple(summary.notes[:-len(api)]))
