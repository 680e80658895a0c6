"""Report of a deployment (``pcs deploy``): weights, the KV pool, GPU-tier blocks, the longest request, concurrency."""
from __future__ import annotations

from typing import Any

from pcs.model.footprint import past_context
from pcs.report.table import render_table, shown_name
from pcs.units import format_bytes as gb
from pcs.units import format_count as n
from pcs.units import format_counted, plural

__all__ = ["render_deploy"]


def _payload_note(d: dict[str, Any]) -> list[str]:
    """Lesson 2 where deploy shows it (the payload lens' form, docs/semantics.md §13): a block's payload (Reference)
    against the pages it reserves per rank, and the other KV dtype's block and GPU-tier blocks with the hits held
    fixed; none for a payload without the keys (an older JSON)."""
    pay, alt = d.get("payload_bytes_per_block_per_rank"), d.get("alt") or {}
    if not pay or not alt:
        return []
    per, name, pad = d["bytes_per_block_per_rank"], d["layout"]["name"], d.get("page_padding_bytes_per_block_per_rank", 0)
    x = lambda a, b: f"x{a / b:.3f}"    # noqa: E731
    beyond = [f"{n(b)} B of {what}" for b, what in ((per - pay - pad, "in-page scales"), (pad, "page padding")) if b]
    why = ", ".join(beyond) if beyond else "nothing beyond the payload"
    return [f"payload vs reserved: a block's payload (Reference) is {n(pay)} B per rank, its pages reserve {n(per)} B "
            f"({x(per, pay)}: {why}); {alt.get('layout') or alt['dtype']} for {name}: "
            f"{n(alt['bytes_per_block_per_rank'])} B a block ({x(alt['bytes_per_block_per_rank'], per)}), "
            f"{n(alt['gpu_blocks'])} GPU-tier blocks against {n(d['gpu_blocks'])} (deploy computes bytes and "
            "blocks only: pcs replay's payload lens gives the restores and TTFT with the hits held fixed, a --dtype "
            "replay the hits the extra blocks earn)"]


def render_deploy(d: dict[str, Any]) -> str:
    """The table of one deployment: ``d`` is the JSON payload of ``pcs deploy`` (:func:`pcs.model.deploy.size_deployment`
    with ``concurrent_requests``, ``longest_request_tokens`` ... from :func:`pcs.model.capacity.plan_deployment`);
    sizes in GB (1e9 bytes), counts with separators."""

    t = d["tp"]
    longest = d["longest_request_tokens"]
    rows = [
        ["GPU tier (KV pool)", gb(d["gpu_tier_bytes"]), f"x {format_counted(t, 'GPU')}: pcs replay's default GPU tier"],
        ["GPU-tier blocks", n(d["gpu_blocks"]), f"GPU tier // bytes per block ({format_counted(d['block_size'], 'token')})"],
        ["GPUs", f"{t} x {d['gpu']}", f"HBM {gb(d['hbm_bytes_per_gpu'])} each"],
        ["usable per GPU", gb(d["usable_bytes_per_gpu"]), f"HBM x gpu_memory_utilization {d['gpu_memory_utilization']:g}"],
        ["weights", gb(d["weights_bytes"]), f"per GPU {gb(d['weights_bytes_per_gpu'])}"],
        ["reserve per GPU", gb(d["reserve_bytes_per_gpu"]), "activations and runtime (see note)"],
        ["KV pool per GPU", gb(d["kv_bytes_per_gpu"]), "usable - weights per GPU - reserve"],
        ["bytes per block", n(d["bytes_per_block"]),
         f"per rank {n(d['bytes_per_block_per_rank'])} x {format_counted(d['tp_group']['ranks_holding_copy'], 'rank')}, "
         f"{d['block_size']}-token blocks, {d['layout']['name']}"],
        ["longest request", "unbounded" if longest is None else f"{n(longest)} {plural(longest, 'token')}",
         "reserved pages of one request fit the pool"],
        [f"requests of {n(d['request_tokens'])} {plural(d['request_tokens'], 'token')}", n(d["concurrent_requests"]),
         f"each reserves {gb(d['request_bytes_per_rank'])} per rank"],
    ]
    notes = [d["derivation"], f"KV layout {d['layout']['describe']}", d["tp_group"]["note"],
             f"reserve: {d['reserve_source']}"] + [f"assumed: {a}" for a in d["assumptions"]]
    notes += _payload_note(d)
    ctx = d.get("max_context_tokens")
    for what, tokens in (("the longest request the pool holds", longest), ("--request-tokens", d["request_tokens"])):
        past = past_context(tokens, ctx)
        if past:
            notes.append(f"{what}: {past}")
    if d["block_size"] != 512:
        notes.append(f"block {format_counted(d['block_size'], 'token')} (--block-size): pcs replay uses its trace's block size (the "
                     "bundled sample and Mooncake: 512), so its bytes per block differ; give --block-size to match")
    return render_table(["quantity", "value", "how"], rows, notes=notes,
                        title=f"Deployment: {shown_name(d['model'])}, {shown_name(d['gpu'])} x{d['tp']} (TP {d['tp']}), "
                              f"block {format_counted(d['block_size'], 'token')}")
