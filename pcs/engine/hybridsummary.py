"""A hybrid replay's figures per component: pages per group -> bytes, tier rows, the summary section.

A group's pages hold its components' blocks (``HybridPlan.component_bytes``);
bytes per component are ``pages x component bytes per block / pages per
block``, and ``page_padding`` is the rest of the pages' bytes (vLLM's uniform
page size pads smaller layers and the last layer group), so a tier's
figures always add up to pages x page bytes (``docs/semantics.md §13.1``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from pcs.engine.result import HybridSummary

__all__ = ["component_bytes", "pads", "request_columns", "tier_fields", "hybrid_summary", "PADDING"]

#: The pseudo-component holding page padding.
PADDING = "page_padding"


def component_bytes(plan, level: int, pages: Sequence[int]) -> dict[str, int]:
    """Bytes per component of ``pages[g]`` pages of each group at a level, and ``page_padding`` (0 when nothing
    is padded) when the level's pages can hold padding (:func:`pads`): the keys follow the configuration, never
    the pages held."""
    out: dict[str, int] = {}
    pad = 0
    for g, (grp, n) in enumerate(zip(plan.groups, pages)):
        used = 0
        for c, b in plan.component_bytes[level][g].items():
            v = n * b // grp.pages
            out[c] = out.get(c, 0) + v
            used += v
        pad += n * plan.page_bytes[level][grp.pool] - used
    if pads(plan, level):
        out[PADDING] = pad
    return out


def pads(plan, level: int) -> bool:
    """Whether pages of ``plan`` at ``level`` can hold page padding (bytes a page holds beyond its group's
    components' share, :func:`component_bytes`' rule): whether ONE page of some group does. That decides it for
    any number n of pages: with no padding in one page, each component's bytes per group block are a multiple of
    the group's pages and they fill its pages exactly, so n pages pad 0 bytes too. A configuration's property
    (model, dtype, TP, block size, manager, layout), never the data's: the ``page_padding`` key and the
    ``gpu_resident_bytes_page_padding`` request column are there, 0 where nothing is padded, exactly when it holds.
    SGLang's pools (a page is one block of its group) never pad; vLLM's uniform page pads smaller layers, the last
    layer group and the state page (docs/semantics.md §13.1)."""
    return any(plan.page_bytes[level][grp.pool] - sum(b // grp.pages for b in plan.component_bytes[level][g].values())
               for g, grp in enumerate(plan.groups))


def request_columns(plan, residency) -> dict[str, np.ndarray]:
    """Per-request columns: ``gpu_resident_bytes_<component>`` (the GPU's resident pages right after the request's
    admission: cached pages, its hits and restores included, not the slots it reserved for the pages its prefill
    will write; ``gpu_resident_bytes_page_padding`` when the GPU's pages can pad, :func:`pads`, 0 where they hold
    none), ``hybrid_lost_tokens``: the same columns for every trace of one configuration (a fleet's instances
    join their tables)."""
    pages = [np.frombuffer(c, dtype=np.int64) if len(c) else np.zeros(0, np.int64) for c in residency.request_pages]
    n = len(pages[0])
    cols: dict[str, np.ndarray] = {}
    pad = np.zeros(n, np.int64)
    for g, (grp, pg) in enumerate(zip(plan.groups, pages)):
        used = np.zeros(n, np.int64)
        for c, b in plan.component_bytes[0][g].items():
            v = pg * b // grp.pages
            key = f"gpu_resident_bytes_{c}"
            cols[key] = cols.get(key, np.zeros(n, np.int64)) + v
            used += v
        pad += pg * plan.page_bytes[0][grp.pool] - used
    if pads(plan, 0):
        cols[f"gpu_resident_bytes_{PADDING}"] = pad
    lost = np.frombuffer(residency.request_lost, dtype=np.int64) if n else np.zeros(0, np.int64)
    cols["hybrid_lost_tokens"] = lost * plan.groups[0].block_size
    return cols


def tier_fields(plan, residency, j: int) -> dict[str, Any]:
    """The :class:`pcs.engine.result.TierSummary` fields of level j measured in pages and bytes.

    ``capacity_blocks`` and ``resident_blocks_*`` count pages; ``bytes_per_block`` is the page of the
    (first) pool; ``bytes_per_block_by_component`` gives each component's bytes in one block of the model
    (:func:`component_bytes` of each group's pages per model block, ``pcs.cache.groups.pages_per_model_block``:
    a state's checkpoint spread over the blocks between checkpoints; padding left out), what the report's "block by
    component" and the HTML page's per-component table show beside the block's pages (docs/semantics.md §13.1);
    ``blocks_unit`` says so ("page"), keys kept so that no number moves.
    """
    cap = plan.capacity_pages[j]
    end, peak = residency.pages[j], residency.peak_pages[j]
    written = sum(w * plan.page_bytes[j][g.pool] for w, g in zip(residency.written[j], plan.groups))
    per_block = {c: b for c, b in component_bytes(plan, j, [g.model_block_pages for g in plan.groups]).items()
                 if c != PADDING}
    return dict(blocks_unit="page", capacity_blocks=sum(cap),
                capacity_bytes=sum(c * b for c, b in zip(cap, plan.page_bytes[j])),
                bytes_per_block=plan.page_bytes[j][0], bytes_per_block_by_component=per_block,
                written_bytes=written if j else 0, resident_blocks_end=sum(end),
                resident_bytes_end=residency.level_bytes(j), resident_bytes_end_by_component=component_bytes(plan, j, end),
                resident_blocks_peak=sum(peak), resident_bytes_peak=residency.peak_bytes[j],
                resident_bytes_peak_by_component=component_bytes(plan, j, peak))


def _series(plan, residency) -> dict[str, Any]:
    """Per tier: the fixed-step samples and the tier's peak sample, bytes per component."""
    out: dict[str, Any] = {"step_s": residency.step_s, "tiers": {}}
    for j, name in enumerate(residency.levels):
        rows = [(t, "step", counts[j]) for t, counts in residency.samples]
        if residency.peak_bytes[j]:
            rows.append((residency.peak_t[j], "peak", residency.peak_pages[j]))
        rows.sort(key=lambda r: (r[0], r[1] == "peak"))
        per = [component_bytes(plan, j, r[2]) for r in rows]
        comps = sorted({c for p in per for c in p})
        tier = {"t_s": [r[0] for r in rows], "kind": [r[1] for r in rows]}
        tier.update({c: [p.get(c, 0) for p in per] for c in comps})
        out["tiers"][name] = tier
    return out


def _full_attention(full, padding: dict[str, int]) -> dict[str, Any] | None:
    """The comparison line's figures, with this run's page padding at each tier's peak beside them (the
    comparison's difference includes the capacity it takes; docs/replay.md, the gap)."""
    if full is None:
        return None
    return {"hit_ratio": full.hit_ratio, "hit_ratio_per_tier": dict(full.hit_ratio_per_tier),
            "page_padding_bytes_peak": padding,
            "sequential_hit_ratio": full.sequential_hit_ratio, "engine": full.engine,
            "tiers": {t.name: {"capacity_blocks": t.capacity_blocks, "resident_bytes_peak": t.resident_bytes_peak,
                               "resident_bytes_peak_by_component": dict(t.resident_bytes_peak_by_component)}
                      for t in full.tiers}}


def _mamba_mode(plan) -> str | None:
    """The run's ``--mamba-cache-mode`` as its state group holds it ("align" or "all"), None without one."""
    states = [g for g in plan.groups if g.rule == "state"]
    return None if not states else "align" if states[0].align else "all"


def hybrid_summary(plan, residency, lost_tokens: int, full=None) -> HybridSummary:
    """The summary's ``hybrid`` section (fields: :class:`pcs.engine.result.HybridSummary`).

    Args:
        plan: the :class:`pcs.engine.hybrid.HybridPlan`; residency: the run's
            :class:`pcs.cache.residency.Residency`; lost_tokens: the run's hit tokens the rules refused;
        full: the summary of the same replay with every layer as full attention, or None.
    """
    levels = residency.levels
    lower = range(1, len(levels))
    peaks = {name: component_bytes(plan, j, residency.group_peak_pages[j]) for j, name in enumerate(levels)}
    groups = tuple({"name": g.name, "rule": g.rule, "components": list(g.components), "layers": g.layers,
                    "span_tokens": g.span_tokens, "pages_per_block": g.pages, "pool": g.pool} for g in plan.groups)
    pools = {name: tuple({"name": plan.pool_name(name, p), "capacity_pages": c, "page_bytes": b}
                         for p, (c, b) in enumerate(zip(plan.capacity_pages[j], plan.page_bytes[j])))
             for j, name in enumerate(levels)}
    return HybridSummary(
        manager=plan.manager, groups=groups, layer_group_size=plan.layer_group_size,
        hybrid_block_size=plan.hybrid_block_size, checkpoint_tokens=plan.checkpoint_tokens, pools=pools,
        lost_tokens=int(lost_tokens),
        restored_bytes_by_component={levels[j]: component_bytes(plan, j, residency.restored[j]) for j in lower},
        written_bytes_by_component={levels[j]: component_bytes(plan, j, residency.written[j]) for j in lower},
        resident_bytes_peak_by_component=peaks,
        mamba_cache_mode=_mamba_mode(plan), series=_series(plan, residency), full_attention=_full_attention(
            full, {name: int(component_bytes(plan, j, residency.peak_pages[j]).get("page_padding", 0))
                   for j, name in enumerate(levels)}))   # at the tier's peak, as tier_fields
