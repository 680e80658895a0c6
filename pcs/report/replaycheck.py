"""The checks of a replay JSON that relate its fields (one field's type and range: :mod:`pcs.report.payloadcheck`).

``pcs report`` reads a replay JSON that a user may have edited; each rule here is one the run itself keeps, so
a file breaking it is refused in one line (``field 'X': must be ...``) before the page computes with it:

- the objects the result declares as free-form (``trace_file``, ``deployment``) hold the keys the page and the
  trace check read, each of its type (:data:`TRACE_FILE`; a ``deployment`` key holding ``_bytes`` is a count);
- a tier's byte figures are its block figures times its ``bytes_per_block`` (:func:`pcs.schema.bytes_of`,
  docs/semantics.md §13) -- but a hybrid tier of pools whose pages differ in size (``--hybrid-kv-cache-manager
  sglang``: ``hybrid.pools``, ``bytes_per_block`` the first pool's page): its capacity is its pools' pages and
  their bytes, and each other byte figure lies between its pages x the smallest and x the largest page
  (docs/semantics.md §13.1) --, and every tier splits its block over the components tier 0 names
  (``bytes_per_block_by_component``: the page's per-component table has one row per component of tier 0);
- a part is at most its whole: ``hit_blocks <= block_accesses``, ``hit_tokens <= prompt_tokens``,
  ``requests_with_hit <= requests`` (each hit is one of the accesses, tokens, requests counted).
"""
from __future__ import annotations

from typing import Any

from pcs.errors import UserError, quoted

__all__ = ["TRACE_FILE", "TRACE_FILE_NEEDS", "check_replay_relations"]

#: ``trace_file`` as pcs replay writes it (pcs.trace.fingerprint.trace_file): key -> type; ``bytes`` is a count
TRACE_FILE: dict[str, Any] = {"path": str, "bytes": int, "head_tail_blake2b": str, "mtime_ns": int}
#: the keys of ``trace_file`` that pcs report reads to find and check the trace (mtime_ns only for a note)
TRACE_FILE_NEEDS = ("path", "bytes", "head_tail_blake2b")
#: ``deployment`` keys the page reads that are not ``*_bytes*`` counts (those are held to integers by name)
_DEPLOYMENT: dict[str, Any] = {"gpu_tier_from": str, "model": str, "gpu": str, "tp": int, "fits": bool,
                               "derivation": str}
#: (part, whole) pairs of top-level counts: the part counts some of what the whole counts
_PARTS = (("hit_blocks", "block_accesses"), ("hit_tokens", "prompt_tokens"), ("requests_with_hit", "requests"))


def check_replay_relations(s: dict) -> None:
    """The rules of the module docstring on a replay JSON whose fields' types :func:`check_payload
    <pcs.report.payloadcheck.check_payload>` has checked (a field a file lacks is left alone: an older pcs).

    Raises:
        UserError: ``field 'tiers[0].capacity_bytes': must be capacity_blocks x bytes_per_block = 167,772,160,
            got 5`` and the like, naming the first field that breaks a rule.
    """
    from pcs.report.payloadcheck import _check_row

    if isinstance(s.get("trace_file"), dict):
        _check_row(s["trace_file"], TRACE_FILE, TRACE_FILE_NEEDS, "trace_file.")
    if isinstance(s.get("deployment"), dict):
        _check_row(s["deployment"], _DEPLOYMENT, (), "deployment.")
    hybrid = s.get("hybrid")
    pools = hybrid.get("pools") if isinstance(hybrid, dict) and isinstance(hybrid.get("pools"), dict) else {}
    _check_tiers(s.get("tiers") or [], pools)
    for part, whole in _PARTS:
        if isinstance(s.get(part), int) and isinstance(s.get(whole), int) and s[part] > s[whole]:
            raise UserError(f"field '{part}': must be at most {whole} ({s[whole]:,}), got {s[part]:,}")


def _tier_products() -> list[tuple[str, str]]:
    """``(bytes field, blocks field)`` of each TierSummary field declared ``bytes_of(blocks field)``."""
    from pcs.engine.result import TierSummary
    from pcs.schema import json_fields

    return [(f.key, f.doc[:-len(" x bytes_per_block")]) for f in json_fields(TierSummary)
            if f.doc.endswith(" x bytes_per_block")]


def _page_sizes(pools: dict, name: Any) -> list[tuple[int, int]]:
    """``(capacity_pages, page_bytes)`` of each pool of tier ``name`` in ``hybrid.pools`` when its pages differ
    in size (several pools, SGLang), else [] (one page size: the tier's products hold as for any tier)."""
    rows = pools.get(name) if isinstance(name, str) else None
    if not isinstance(rows, list) or not all(isinstance(p, dict) and isinstance(p.get("capacity_pages"), int)
                                             and isinstance(p.get("page_bytes"), int) for p in rows):
        return []
    sizes = [(p["capacity_pages"], p["page_bytes"]) for p in rows]
    return sizes if len({b for _, b in sizes}) > 1 else []


def _check_pooled(i: int, t: dict, sizes: list[tuple[int, int]]) -> None:
    """A tier of pools of different page sizes (:func:`_page_sizes`): capacity_blocks and capacity_bytes its
    pools' pages and bytes; each other byte figure between its pages x the smallest and the largest page."""
    pages, nbytes = sum(c for c, _ in sizes), sum(c * b for c, b in sizes)
    for key, want in (("capacity_blocks", pages), ("capacity_bytes", nbytes)):
        if isinstance(t.get(key), int) and t[key] != want:
            what = "pages" if key == "capacity_blocks" else "pages x page_bytes"
            raise UserError(f"field 'tiers[{i}].{key}': must be its pools' {what} (hybrid.pools) = {want:,}, "
                            f"got {t[key]:,}")
    lo, hi = min(b for _, b in sizes), max(b for _, b in sizes)
    for key, blocks in _tier_products():
        if key != "capacity_bytes" and isinstance(t.get(key), int) and isinstance(t.get(blocks), int) \
                and not t[blocks] * lo <= t[key] <= t[blocks] * hi:
            raise UserError(f"field 'tiers[{i}].{key}': must lie between {blocks} x the smallest and x the largest "
                            f"page (hybrid.pools) = {t[blocks] * lo:,} .. {t[blocks] * hi:,}, got {t[key]:,}")


def _check_tiers(tiers: list, pools: dict) -> None:
    """Each tier's ``bytes_of`` products (a tier of pools of several page sizes: :func:`_check_pooled`), and its
    components those of tier 0 (see the module docstring)."""
    comps = None
    for i, t in enumerate(tiers):
        if not isinstance(t, dict) or not isinstance(t.get("bytes_per_block"), int):
            continue
        sizes = _page_sizes(pools, t.get("name"))
        if sizes:
            _check_pooled(i, t, sizes)
        for key, blocks in _tier_products() if not sizes else ():
            if isinstance(t.get(key), int) and isinstance(t.get(blocks), int) \
                    and t[key] != t[blocks] * t["bytes_per_block"]:
                raise UserError(f"field 'tiers[{i}].{key}': must be {blocks} x bytes_per_block = "
                                f"{t[blocks] * t['bytes_per_block']:,}, got {t[key]:,}")
        split = t.get("bytes_per_block_by_component")
        if isinstance(split, dict):
            comps = list(split) if comps is None else comps
            if list(split) != comps or not split:
                raise UserError(f"field 'tiers[{i}].bytes_per_block_by_component': must name the components of "
                                f"tiers[0] ({', '.join(comps) or 'at least one'}), got {quoted(split, 60)}")
