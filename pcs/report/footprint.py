"""Report of a KV footprint (``pcs footprint``): bytes per component and per accounting mode.

Modes: Reference (payload), Serialized (payload + scales + padding), Reserved
(whole blocks, window + 1 block, fixed state slots), Prefix store (full
blocks kept as cache objects) (``docs/semantics.md`` §13; :mod:`pcs.model`).
"""
from __future__ import annotations

from typing import Any

from pcs.model.footprint import PAGE_PADDING, FootprintResult
from pcs.report.table import render_table, shown_name
from pcs.units import format_bytes, format_count, format_counted

__all__ = ["render_footprint", "footprint_notes", "fp8_note"]

_MODES = ("reference_bytes", "serialized_bytes", "reserved_bytes", "prefix_store_bytes")


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"x{x:.3f}"


def _component_table(res: FootprintResult, hybrid_block: int | None) -> str:
    headers = ["component", "layers", "layout", "held tok", "B/token ref", "B/token ser", "B/block",
               "Reference", "Serialized", "Reserved", "Prefix store"]
    rows: list[list[Any]] = []
    for c in res.components:
        if c["name"] == PAGE_PADDING:   # named as pcs replay names it; bytes only where whole pages are held
            rows.append(["page padding", "", "-", "", "-", "-", format_count(c["serialized_bytes_per_block"])]
                        + [format_bytes(c[k]) for k in _MODES])
            continue
        grows = c["reference_bytes_per_token"] > 0
        per_token_ref = format_count(c["reference_bytes_per_token"]) if grows else \
            f"{format_count(c['fixed_bytes_per_sequence'])}/seq"
        rows.append([c["name"], c["layers"], c["layout"],    # the layout's one name: nvfp4 (docs/views.md)
                     format_count(c["tokens_held"]), per_token_ref,
                     format_count(c["serialized_bytes_per_token"]) if grows else "-",
                     format_count(c["serialized_bytes_per_block"])]
                    + [format_bytes(c[k]) for k in _MODES])
    t = res.totals
    rows.append(["total", res.num_layers, layout_name(res), "",
                 format_count(res.per_token["reference"]), format_count(res.per_token["serialized"]),
                 format_count(res.per_block["serialized"])] + [format_bytes(t[k]) for k in _MODES])
    title = (f"KV footprint: {shown_name(res.model)}, {layout_name(res)}, {format_counted(res.tokens, 'token')} x "
             f"{format_counted(res.sequences, 'sequence')},"
             f" block {res.block_size}, tp {res.tp} (bytes per rank)")
    return render_table(headers, rows, title=title, notes=footprint_notes(res, hybrid_block))


def layout_name(res: FootprintResult) -> str:
    """The layout's one name (``nvfp4`` for ``--dtype fp4``, docs/models.md): what the text shows under
    ``layout``; the JSON's ``dtype`` is the value type (``fp4``)."""
    return res.layout.get("name") or res.dtype


def _dtype_table(res: FootprintResult) -> str:
    headers = ["layout", "Reference", "vs bf16", "Serialized", "vs bf16", "Reserved", "vs bf16",
               "Prefix store", "vs bf16"]
    rows = []
    for r in res.by_dtype:
        row = [r["layout"]]
        for k in _MODES:
            row += [format_bytes(r[k]), _ratio(r[k.replace("_bytes", "_ratio_vs_bf16")])]
        rows.append(row)
    return render_table(headers, rows, title="Same sequences by KV layout (vs bf16 only values narrow; scales, bf16 "
                                             "parts, a state do not):")   # 93 columns: the table's width


def fp8_note(layout: str, reference: float | None, serialized: float | None, reserved: float | None,
             prefix_store: float | None = None, state_bytes: int = 0,
             checkpoints: tuple[int, int] | None = None) -> str:
    """The sentence naming the layout an fp8 KV cache runs as on a model and its ratios vs bf16 (x, floats or
    None), one text for ``pcs footprint``'s note and replay's payload lens note: plain ``fp8`` (vLLM's per-tensor
    scales outside the pages), or the layout vLLM picks instead for any fp8 cache dtype (``fp8_ds_mla`` on
    DeepSeek-V3.2, its scales and rope values in the pages), named as the one that runs (docs/semantics.md §13).
    Plain fp8 says per ratio what holds: x0.500 exactly, or above it where a recurrent state of ``state_bytes``
    B a sequence (which stays in its dtype) is counted; ``prefix_store``: footprint's fourth ratio (None: not
    shown). ``checkpoints``: a state model's checkpoint interval N in tokens, (bf16, fp8) (``by_dtype``'s
    ``checkpoint_tokens``): when they differ, the Prefix store's ratio is said to come from checkpoints stored
    less often (N = B x ceil(b_h / B), b_h vLLM's hybrid block, which grows as the attention page shrinks;
    docs/semantics.md §13.1), not from the state shrinking.

    >>> fp8_note("fp8_ds_mla", 0.6, 0.614, 0.614, 0.614)[-73:]
    'Reference x0.600, Serialized x0.614, Reserved x0.614, Prefix store x0.614'
    >>> fp8_note("fp8", 0.5, 0.5, 0.5)[48:118]
    'vs bf16: Reference x0.500, Serialized x0.500, Reserved x0.500 (exactly'
    """
    modes = [("Reference", reference), ("Serialized", serialized), ("Reserved", reserved),
             ("Prefix store", prefix_store)][:4 if prefix_store is not None else 3]
    if layout != "fp8":
        ratios = ", ".join(f"{m} {_ratio(r)}" for m, r in modes)
        return (f"fp8 runs as {layout} on this model (vLLM picks it for any fp8 cache dtype; its "     # never per-tensor
                f"scales and 64 bf16 rope values a token sit in the pages) vs bf16: {ratios}")
    sparser = checkpoints is not None and checkpoints[0] != checkpoints[1] and prefix_store is not None
    if sparser:
        modes = modes[:3]
    half = [f"{m} {_ratio(r)}" for m, r in modes if r == 0.5]
    other = [f"{m} {_ratio(r)}" for m, r in modes if r != 0.5]
    parts = ([", ".join(other) + (f" (the recurrent state, {state_bytes:,} B a sequence, does not shrink)"
                                  if state_bytes else "")] if other else []) + \
        ([", ".join(half) + " (exactly half)"] if half else [])
    if sparser:
        parts.append(f"Prefix store {_ratio(prefix_store)} (not the state shrinking: a state checkpoint every "
                     f"{checkpoints[1]:,} tokens instead of {checkpoints[0]:,}, as vLLM's hybrid block grows when "
                     "the attention page shrinks, so fewer checkpoints are stored)")
    return (f"fp8 (vLLM: per-tensor scales outside the pages) vs bf16: {'; '.join(parts)}; as many blocks, each "
            "of fewer bytes; fp8_per_token_head keeps its scales in the pages, so it shrinks less")


def footprint_notes(res: FootprintResult, hybrid_block: int | None) -> list[str]:
    """Every note of the ``pcs footprint`` table, in its order (the JSON's ``notes``, the HTML page's)."""
    notes = []
    fp8 = next((r for r in res.by_dtype if "fp8" in (r["layout"], r.get("asked"))), None)
    if fp8 and fp8["reference_ratio_vs_bf16"] is not None:
        base = res.by_dtype[0].get("checkpoint_tokens")
        every = (base, fp8["checkpoint_tokens"]) if base and fp8.get("checkpoint_tokens") else None
        notes.append(fp8_note(fp8["layout"], *(fp8[f"{m}_ratio_vs_bf16"] for m in ("reference", "serialized",
                                                                                  "reserved", "prefix_store")),
                              state_bytes=_state_bytes(res), checkpoints=every))
    notes.append("Reserved: ceil(T/B) blocks; a sliding window holds min(T, W) and reserves ceil((W-1)/B)+1"
                 " blocks (as pcs replay); recurrent state is one fixed slot per sequence")
    if any(c["name"] == PAGE_PADDING for c in res.components):
        notes.append("page padding: a hybrid block takes whole pages of vLLM's uniform page size (as pcs replay "
                     "counts them); the row is those pages' bytes beyond the components', in Reserved, Prefix store "
                     "and B/block (docs/semantics.md §13.1)")
    state = " (a block's pages: a state checkpoint's pages spread over the blocks between checkpoints, as pcs " \
        "replay counts them, docs/semantics.md §13.1)" if hybrid_block else ""
    notes.append(f"Prefix store: {_prefix_blocks(res)} x {format_count(res.per_block['serialized'])} B{state}")
    if hybrid_block and hybrid_block != res.block_size:
        notes.append(f"vLLM would use --block-size {hybrid_block} for this hybrid (one attention page >= one"
                     f" state page); at block {res.block_size} pcs replay keeps a state checkpoint every"
                     f" {hybrid_block} tokens rounded up to whole blocks, which B/block and Prefix store count")
    notes.append("Prefix store is what keeping the whole prefix costs; how much of it a finite, shared cache"
                 " really keeps (the real hit ratio, below the single-sequence ratio) is what pcs replay answers")
    differ = _replay_defaults_note(res)
    return notes + ([differ] if differ else []) + res.model_notes()  # layout, per-rank vs per-group bytes, assumptions


def _state_bytes(res: FootprintResult) -> int:
    """A recurrent state's bytes a sequence (one rank; 0 without one): the ``ssm_state`` component's fixed bytes."""
    return sum(c["fixed_bytes_per_sequence"] for c in res.components if c["name"] == "ssm_state")


def _prefix_blocks(res: FootprintResult) -> str:
    """The Prefix store's blocks as the note works them out: ``floor(T/B) = 8,192 full blocks``, or for N
    sequences ``4 x floor(T/B) = 4 x 8,192 = 32,768 full blocks`` (the total is N sequences' blocks, not
    floor(T/B))."""
    total, n = res.totals["prefix_store_blocks"], res.sequences
    if n == 1:
        return f"floor(T/B) = {format_counted(total, 'full block')}"
    return f"{n:,} x floor(T/B) = {n:,} x {format_count(total // n)} = {format_counted(total, 'full block')}"


def _replay_defaults_note(res: FootprintResult) -> str | None:
    """The note saying which of pcs replay's defaults (TP 8, the trace's block size: 512 for the bundled sample and
    Mooncake) this view differs from, and the flags that set them; None when it differs from neither (only what
    differs is said: ``--tp 8`` given, the TP is not named)."""
    differs = [(what, flag) for what, flag, same in (
        ("the trace's block size: 512 for the bundled sample and Mooncake", "--block-size 512", res.block_size == 512),
        ("TP 8", "--tp 8", res.tp == 8)) if not same]
    if not differs:
        return None
    verb = "defaults differ" if len(differs) > 1 else "default differs"
    return (f"this view: block {res.block_size}, TP {res.tp}; pcs replay's {verb} "
            f"({', '.join(w for w, _ in reversed(differs))}): give {' '.join(f for _, f in differs)} to set these "
            "bytes beside its")


def footprint_payload(res: FootprintResult, model: Any, dtype: str | None = None) -> dict[str, Any]:
    """The JSON object ``pcs footprint`` prints and a sweep's footprint point stores: ``res.to_dict()`` plus
    ``notes``, every note the table prints (:func:`footprint_notes`), so the CLI and the sweep give one object.

    Args:
        res: the footprint result.
        model: the model spec the footprint was computed for (TP applied), for its hybrid block size.
        dtype: the ``dtype=`` the footprint was asked for, or None for the model's own.
    """
    from pcs.model.footprint import hybrid_block_size

    hybrid_block = hybrid_block_size(model.with_dtype(dtype) if dtype else model)
    return {**res.to_dict(), "notes": footprint_notes(res, hybrid_block)}


def render_footprint(res: FootprintResult, hybrid_block: int | None) -> str:
    """The ``pcs footprint`` tables: bytes per component in every mode, then the same sequences by KV dtype.

    Args:
        res: :func:`pcs.model.footprint` result (bytes per tensor-parallel
            rank; tokens; blocks).
        hybrid_block: the block size vLLM would pick for a hybrid model
            (tokens), or None; a note names it when it differs.
    Returns:
        Two tables separated by a blank line, no trailing newline.
    """
    return _component_table(res, hybrid_block) + "\n\n" + _dtype_table(res)
