"""KV footprint by accounting mode: Reference, Serialized, Reserved, Prefix store.

Modes (docs/semantics.md §13), per component, per tensor-parallel rank:

- Reference: the payload itself, tokens_held(T) x payload/token + state.
- Serialized: the stored form, payload + quantisation scales (+ row padding).
- Reserved: what the allocator holds for a running sequence: whole pages,
  ceil(T/B) for full attention / MLA / indexer; min(ceil(T/B), ceil((W - 1)/B) + 1)
  for a sliding window (what pcs replay's window group holds,
  :func:`pcs.cache.groups.window_hold_blocks`); one state slot per sequence.
- Prefix store: the prefix kept as cache objects: floor(T/B) full blocks (only
  full blocks are cached, vLLM), each of :func:`block_bytes` (serialized), a hybrid
  model's each its pages (:func:`hybrid_block_parts`).

What one cached prefix block holds (``block_bytes``), per component:

- full_attention / mla_latent / indexer_keys: the block's B tokens of every
  layer of that kind.
- sliding_window: the block's own B tokens of the sliding layers too. vLLM
  caches sliding-layer blocks like any other (blocks that slide out of a running
  request's window are freed into the prefix cache, ``SlidingWindowManager.
  remove_skipped_blocks``), and a hit ending at block i needs the sliding KV of
  the cdiv(W - 1, B) blocks before it (``SlidingWindowManager.find_longest_cache_hit``),
  so a store that can end a hit at any block keeps it for every block. SGLang's
  ``SWARadixCache`` instead drops sliding KV outside the window ("tombstones"), so
  this is an upper bound for SWA-aware stores.
- ssm_state: one full state snapshot (conv + recurrent, all linear layers) per
  checkpoint, the state after the checkpoint's last token: vLLM ``mamba_cache_mode="all"``
  (``MambaManager.find_longest_cache_hit`` restores only the last hit block's state).
  :func:`block_bytes` gives that whole state per block (a cache group's block, what
  :func:`hybrid_pages` is built from, and what a replay with every layer as full attention
  stores); a block of the model as pcs replay and pcs deploy count it, and footprint's
  B/block and Prefix store, is its pages (:func:`hybrid_block_parts`): vLLM raises the
  attention block size to b_h (:func:`hybrid_block_size`, 544 tokens for Qwen3-Next) so
  one attention page holds a state page; the replay keeps B-token blocks and checkpoints
  every N = B x ceil(b_h / B) tokens, the checkpoint's pages spread over the N / B blocks
  (docs/semantics.md §13.1). ``"align"`` mode and SGLang ``MambaRadixCache`` keep fewer
  snapshots (only at chunk ends / radix nodes).

``layout`` "reserved" (GPU) and "serialized" (lower tiers) hold the same bytes
per cached block in this model: a GPU page carries the same scales (vLLM carves
per-token-head scales from the KV allocation); the difference between the modes
is in how a running sequence is rounded (:func:`reserved_bytes`). Per-tensor
scales (vLLM ``fp8``) live outside the pages: no block carries them; the
footprint reports them once (``outside_pages_bytes``, :mod:`pcs.model.layouts`).
"""
from __future__ import annotations

from dataclasses import field
from typing import Any, Callable

from pcs.argcheck import MAX_BLOCK_SIZE, MAX_COUNT, MAX_TOKENS, check_int
from pcs.errors import (INT64_LIMIT, ArgumentTypeError, UserError, keyword_refusal, keyword_refusals,
                        shown_repr)
from pcs.model.components import KVComponent
from pcs.model.spec import ModelSpec, check_mode
from pcs._dataclass import dataclass


def _as_model(model: ModelSpec | str) -> ModelSpec:
    from pcs.model.presets import as_model  # presets import this module's siblings only

    return as_model(model)

__all__ = ["BlockBytes", "block_bytes", "reserved_bytes", "reserved_bytes_of", "prefix_store_bytes",
           "component_bytes", "hybrid_block_size", "hybrid_pages", "hybrid_block_parts", "model_block_bytes",
           "page_padding_per_block",
           "hybrid_restore",
           "PAGE_PADDING", "FootprintResult", "footprint"]


@dataclass(frozen=True, slots=True)
class BlockBytes:
    """Bytes one cached prefix block occupies, in total and per component name (one rank)."""

    total_bytes: int
    per_component: dict[str, int] = field(default_factory=dict)


def _check_block_size(block_size: int) -> int:
    """``block_size`` as an int in [1, 2^20] (``--block-size``'s range, :mod:`pcs.argcheck`); UserError if not."""
    return check_int(block_size, "block_size", lo=1, hi=MAX_BLOCK_SIZE)


def _check_tokens(tokens: int) -> int:
    """``tokens`` as an int >= 0 (:mod:`pcs.argcheck`); UserError if not."""
    return check_int(tokens, "tokens", lo=0)


def _component_block_bytes(c: KVComponent, block_size: int, layout: str) -> int:
    per_token = c.payload_bytes_per_token()
    fixed = c.fixed_payload_bytes()
    if layout != "reference":
        per_token += c.scale_bytes_per_token()
    return block_size * per_token + fixed


def block_bytes(model: ModelSpec | str, block_size: int, layout: str = "serialized") -> BlockBytes:
    """Bytes one cached prefix block of ``block_size`` tokens occupies in ``layout``.

    See the module docstring for what each component's share holds. The GPU
    tier holds "reserved", lower tiers "serialized"; "reference" is payload only.

    Raises:
        UserError: block_size < 1 or an unknown layout.

    >>> from pcs.model import get_model
    >>> block_bytes(get_model("llama-3.1-8b"), 16, "reference").total_bytes  # 16 x 131,072
    2097152
    """
    block_size = _check_block_size(block_size)
    check_mode(layout)
    model = _as_model(model)
    per = {c.name: _component_block_bytes(c, block_size, layout) for c in model.components}
    return BlockBytes(total_bytes=sum(per.values()), per_component=per)


def component_bytes(c: KVComponent, tokens: int, block_size: int) -> dict[str, int]:
    """One component's bytes for one sequence of ``tokens`` tokens, in every mode (one rank).

    Keys: ``reference_bytes``, ``serialized_bytes``, ``reserved_bytes``,
    ``prefix_store_bytes`` (floor(T/B) blocks x serialized block bytes),
    ``prefix_store_gpu_bytes`` (the same blocks in the reserved layout).
    """
    held = c.tokens_held(tokens)
    payload, scales, fixed = c.payload_bytes_per_token(), c.scale_bytes_per_token(), c.fixed_payload_bytes()
    full_blocks = tokens // block_size
    return {
        "reference_bytes": held * payload + fixed,
        "serialized_bytes": held * (payload + scales) + fixed,
        "reserved_bytes": c.reserved_blocks(tokens, block_size) * block_size * (payload + scales) + fixed,
        "prefix_store_bytes": full_blocks * _component_block_bytes(c, block_size, "serialized"),
        "prefix_store_gpu_bytes": full_blocks * _component_block_bytes(c, block_size, "reserved"),
    }


def reserved_bytes(model: ModelSpec | str, tokens: int, block_size: int) -> int:
    """Bytes the allocator holds for ONE running sequence of ``tokens`` tokens (one rank).

    Full attention, MLA, indexer: ceil(T/B) pages; sliding window:
    min(ceil(T/B), ceil((W - 1)/B) + 1) pages; recurrent state: one slot (vLLM
    ``mamba_cache_mode="none"``). Pages include quantisation scales.

    Raises:
        UserError: tokens < 0 or block_size < 1.

    >>> from pcs.model import get_model
    >>> reserved_bytes(get_model("llama-3.1-8b"), 17, 16)  # 2 blocks x 16 x 131,072
    4194304
    """
    tokens = _check_tokens(tokens)
    return reserved_bytes_of(model, block_size)(tokens)


def reserved_bytes_of(model: ModelSpec | str, block_size: int) -> Callable[[int], int]:
    """:func:`reserved_bytes` of ``model`` as a function of the tokens, each component's page bytes (B x
    (payload + scales) per token) and fixed bytes worked out once: per component, its reserved pages x page bytes
    + fixed bytes (:func:`component_bytes`' ``reserved_bytes``). For many calls (a replay's decode time per
    context length: ``pcs.engine.api``), 20x faster than :func:`reserved_bytes` per call.

    Raises:
        UserError: block_size < 1; the function: tokens < 0.
    """
    block_size = _check_block_size(block_size)
    parts = [(c.reserved_blocks, block_size * (c.payload_bytes_per_token() + c.scale_bytes_per_token()),
              c.fixed_payload_bytes()) for c in _as_model(model).components]

    def reserved(tokens: int) -> int:
        tokens = _check_tokens(tokens)
        return sum(pages(tokens, block_size) * page_bytes + fixed for pages, page_bytes, fixed in parts)
    return reserved


def prefix_store_bytes(model: ModelSpec | str, tokens: int, block_size: int, layout: str = "serialized") -> int:
    """Bytes to keep a ``tokens``-token prefix as cache objects: floor(T/B) blocks x block_bytes."""
    tokens = _check_tokens(tokens)
    return (tokens // block_size) * block_bytes(_as_model(model), block_size, layout).total_bytes


def hybrid_block_size(model: ModelSpec) -> int | None:
    """Block size vLLM picks for an attention + recurrent-state hybrid so a page fits one state.

    vLLM ``HybridAttentionMambaModelConfig.verify_and_update_config``
    (``vllm/model_executor/models/config.py``): block = 16 x cdiv(state page,
    16 x attention bytes per token), both per layer and rank; the state page is
    then padded to the attention page. Qwen3-Next: 16 x cdiv(1,097,728, 16 x 2,048) = 544.
    Returns None for models without both kinds of layer.
    """
    state = model.component("ssm_state")
    attn = model.component("full_attention") or model.component("sliding_window")
    if state is None or attn is None:
        return None
    state_page = -(-state.fixed_payload_bytes() // state.num_layers)
    attn_token = -(-(attn.payload_bytes_per_token() + attn.scale_bytes_per_token()) // attn.num_layers)
    return 16 * -(-state_page // (16 * attn_token))


def hybrid_pages(model: ModelSpec, block_size: int, layout: str = "reserved") -> Any:
    """The page layout a replay gives one rank of a hybrid model (``pcs.engine.hybrid.plan_hybrid`` with pcs
    replay's default manager, vLLM's uniform page size; docs/semantics.md §13.1), or None for a model that is
    not hybrid. Its groups' ``pages`` and ``page_bytes[0]`` are the rule every view uses for what a hybrid
    block moves and reserves, page padding included.

    Args:
        model: the spec (``with_tp`` for one rank's bytes); block_size: B tokens; layout: of the tier.
    Returns:
        :class:`pcs.engine.hybrid.HybridPlan` of one tier (capacity 0), or None.
    """
    from pcs.engine.hybrid import DEFAULT_MANAGER, MAMBA_CACHE_MODES, MAMBA_FULL_MEMORY_RATIO, \
        SWA_FULL_TOKENS_RATIO, plan_hybrid

    return plan_hybrid(model, block_size, ["tier"], [block_bytes(model, block_size, layout)], [(0, None)],
                       DEFAULT_MANAGER, SWA_FULL_TOKENS_RATIO, MAMBA_FULL_MEMORY_RATIO, MAMBA_CACHE_MODES[0])


def hybrid_block_parts(model: ModelSpec, block_size: int, layout: str = "reserved") -> dict[str, int] | None:
    """Bytes per component of ONE block of a hybrid model (one rank), as a replay counts a block: each group's pages
    per model block (:func:`pcs.cache.groups.pages_per_model_block`: a state group's pages per checkpoint spread
    over the blocks between checkpoints, rounded up) split by the replay's rule
    (:func:`pcs.engine.hybridsummary.component_bytes`: pages x component bytes per group block / pages per group
    block), plus ``page_padding`` when the pages can pad; the values add up to ``HybridPlan.block_layout``'s
    bytes. None for a model that is not hybrid. qwen3-next-80b-a3b, TP 8, B = 16: full_attention 196,608, ssm_state
    3 x 4,939,776 // 27 = 548,864 (the state over the 9 blocks between checkpoints), page_padding 40,960:
    4 pages = 786,432 B (docs/semantics.md §13.1).

    Raises:
        UserError: block_size < 1 or an unknown layout (:func:`block_bytes`).
    """
    from pcs.engine.hybridsummary import component_bytes as split_pages

    plan = hybrid_pages(model, block_size, layout)
    if plan is None:
        return None
    return split_pages(plan, 0, [g.model_block_pages for g in plan.groups])


def model_block_bytes(model: ModelSpec, block_size: int, layout: str = "reserved") -> int:
    """Bytes of one block of ``model`` (one rank) in ``layout`` as a tier holds it, int: :func:`block_bytes`, or
    for a hybrid model its pages (:func:`hybrid_block_parts`; Reference: the components' shares, no padding) --
    footprint's B/block, deploy's payload beside its pages.

    Raises:
        UserError: block_size < 1 or an unknown layout.
    """
    parts = hybrid_block_parts(model, block_size, layout)
    if parts is None:
        return block_bytes(model, block_size, layout).total_bytes
    return sum(v for k, v in parts.items() if layout != "reference" or k != PAGE_PADDING)


def page_padding_per_block(plan: Any) -> list[int]:
    """Per group of ``plan`` (:func:`hybrid_pages`): bytes of page padding in one block of the group, its pages x
    page bytes minus its components' bytes (what a replay reports as ``page_padding``, docs/semantics.md §13.1)."""
    return [g.pages * plan.page_bytes[0][g.pool] - sum(plan.component_bytes[0][i].values())
            for i, g in enumerate(plan.groups)]


def hybrid_restore(model: ModelSpec, blocks: int, block_size: int,
                   layout: str = "serialized") -> tuple[int, int] | None:
    """(hit blocks, bytes) a hybrid model's restore of a ``blocks``-block cached prefix from a lower tier moves
    (one rank), or None for a model that is not hybrid: the longest hit every group accepts
    (:func:`pcs.cache.groups.fixed_point`, a state group's hit ending at a checkpoint), each group reading only
    the blocks its rule needs (``CacheGroup.need_from``: a window's last blocks, one state), each block its
    pages x page bytes (:func:`hybrid_pages`, page padding included), as pcs replay counts ``restored_bytes``.

    >>> from pcs.model import get_model   # 16 x 5,242,880 + 2 x 6 pages x 5,242,880 (window 1,024 = 2 blocks)
    >>> hybrid_restore(get_model("gemma-3-27b").with_tp(8), 16, 512)
    (16, 146800640)
    """
    from pcs.cache.groups import fixed_point

    plan = hybrid_pages(model, block_size, layout)
    if plan is None:
        return None
    k = fixed_point(plan.groups, blocks, lambda g, i: True)
    pages = [g.pages * (k - g.need_from(k)) if k else 0 for g in plan.groups]
    return k, sum(n * plan.page_bytes[0][g.pool] for n, g in zip(pages, plan.groups))


_MODE_KEYS = ("reference_bytes", "serialized_bytes", "reserved_bytes", "prefix_store_bytes",
              "prefix_store_gpu_bytes")


@dataclass(frozen=True, slots=True)
class FootprintResult:
    """Footprint of ``sequences`` sequences of ``tokens`` tokens (JSON keys in :meth:`to_dict`)."""

    model: str
    dtype: str
    tokens: int
    block_size: int
    sequences: int
    tp: int
    components: tuple[dict[str, Any], ...]
    totals: dict[str, int]
    per_token: dict[str, int]
    per_block: dict[str, int]
    by_dtype: tuple[dict[str, Any], ...]
    num_layers: int = 0
    source: str = ""
    layout: dict[str, Any] = field(default_factory=dict)
    outside_pages_bytes: int = 0
    assumptions: tuple[str, ...] = ()
    tp_group: dict[str, Any] = field(default_factory=dict)
    layer_pattern: dict[str, int] = field(default_factory=dict)
    max_context_tokens: int | None = None

    def model_notes(self) -> list[str]:
        """Lines for the table: the layout, per-rank vs per-group bytes, assumptions made, and a warning when
        T is past the model's context (its config's ``max_position_embeddings``)."""
        lay = self.layout
        notes = [f"layout {lay['describe']}; padding: {lay['padding']}; source: {lay['source']}"]
        past = past_context(self.tokens, self.max_context_tokens)
        if past:
            notes.append(f"T = {past}")
        if self.outside_pages_bytes:
            notes.append(f"per-tensor scales outside the pages: {self.outside_pages_bytes:,} B per rank in all"
                         " (not in any block)")
        if self.tp_group:
            notes.append(self.tp_group["note"])
        notes += [f"assumed: {a}" for a in self.assumptions]
        return notes

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON payload of ``pcs footprint --format json`` (keys in docs/views.md)."""
        out: dict[str, Any] = {"model": self.model, "dtype": self.dtype, "tokens": self.tokens,
                               "block_size": self.block_size, "sequences": self.sequences, "tp": self.tp,
                               "num_layers": self.num_layers, "source": self.source}
        out["reference_bytes_per_token"] = self.per_token["reference"]
        out["serialized_bytes_per_token"] = self.per_token["serialized"]
        for mode, v in self.per_block.items():
            out[f"{mode}_bytes_per_block"] = v
        out.update(self.totals)
        out["components"] = [dict(c) for c in self.components]
        out["by_dtype"] = [dict(r) for r in self.by_dtype]
        out["layout"] = dict(self.layout)
        out["outside_pages_bytes"] = self.outside_pages_bytes
        out["layer_pattern"] = dict(self.layer_pattern)
        out["tp_group"] = dict(self.tp_group)
        out["assumptions"] = list(self.assumptions)
        out["max_context_tokens"] = self.max_context_tokens
        return out


def past_context(tokens: int | None, max_context: int | None) -> str | None:
    """The warning when ``tokens`` exceed the model's context ``max_context`` (``max_position_embeddings``), else
    None: "N tokens is past the model's context, M tokens (...)"; a note, not an error: the bytes are still
    what such a sequence would take (pcs footprint, pcs deploy)."""
    if tokens is None or max_context is None or tokens <= max_context:
        return None
    return (f"{tokens:,} tokens is past the model's context, {max_context:,} tokens (config.json "
            "max_position_embeddings): no one sequence that long runs on it")


#: The row (and replay's pseudo-component) holding a hybrid model's page padding.
PAGE_PADDING = "page_padding"


_BLOCK_LAYOUTS = ("reference", "serialized", "reserved")


def _hybrid_blocks(model: ModelSpec, block_size: int) -> dict[str, dict[str, int]] | None:
    """Per layout of :data:`_BLOCK_LAYOUTS`: :func:`hybrid_block_parts` (a hybrid block's bytes per component,
    the replay's pages), or None for a model that is not hybrid."""
    parts = {m: hybrid_block_parts(model, block_size, m) for m in _BLOCK_LAYOUTS}
    return None if parts["reserved"] is None else parts


def _padding_row(model: ModelSpec, tokens: int, block_size: int, sequences: int) -> dict[str, Any] | None:
    """A hybrid model's page padding as a component row (None when it has none): the pages a replay counts
    (:func:`hybrid_pages`) minus the components' bytes, for the blocks each mode holds: Reserved, a running
    sequence's reserved blocks of each group (one slot for a state: the group's pages of one checkpoint,
    :func:`page_padding_per_block`); Prefix store and B/block, floor(T/B) (resp. one) blocks of the model, each
    its pages (:func:`hybrid_block_parts`: a state group's pages spread over the blocks between checkpoints).
    ``reserved_blocks``: the blocks of the padded groups a running sequence reserves (one padded group: Reserved =
    reserved_blocks x its padding per block). Reference and Serialized are 0: they count the tokens held,
    token-exact, with no pages to pad (a component's Serialized is not its blocks x B/block either); B/block
    (``serialized_bytes_per_block``) is the padding a stored whole block carries."""
    plans = [hybrid_pages(model, block_size, m) for m in ("serialized", "reserved")]
    if plans[0] is None:
        return None
    pads = [page_padding_per_block(p) for p in plans]
    block = [hybrid_block_parts(model, block_size, m).get(PAGE_PADDING, 0) for m in ("serialized", "reserved")]
    if not any(pads[0]) and not any(pads[1]) and not any(block):
        return None
    held = [1 if g.rule == "state" else model.component(g.components[0]).reserved_blocks(tokens, block_size)
            for g in plans[1].groups]
    full = tokens // block_size
    row: dict[str, Any] = {
        "name": PAGE_PADDING, "layers": 0, "dtype": model.kv_dtype, "layout": "-",
        "describe": "whole pages of vLLM's uniform page size (docs/semantics.md §13.1)", "tokens_held": 0,
        "reference_bytes_per_token": 0, "serialized_bytes_per_token": 0, "fixed_bytes_per_sequence": 0,
        "reference_bytes_per_block": 0, "serialized_bytes_per_block": block[0],
        "reserved_blocks": sum(n for n, p in zip(held, pads[1]) if p)}    # the held blocks whose pages pad
    row.update({"reference_bytes": 0, "serialized_bytes": 0,
                "reserved_bytes": sum(n * p for n, p in zip(held, pads[1])) * sequences,
                "prefix_store_bytes": full * block[0] * sequences,
                "prefix_store_gpu_bytes": full * block[1] * sequences})
    return row


def _rows(model: ModelSpec, tokens: int, block_size: int, sequences: int) -> list[dict[str, Any]]:
    """The footprint's component rows (:func:`_component_row`) and, for a hybrid model with page padding, the
    padding row (:func:`_padding_row`): what the totals add up."""
    parts = _hybrid_blocks(model, block_size)
    rows = [_component_row(c, tokens, block_size, sequences, parts) for c in model.components]
    pad = _padding_row(model, tokens, block_size, sequences)
    return rows + ([pad] if pad else [])


def _totals(rows: list[dict[str, Any]], model: ModelSpec, tokens: int, block_size: int,
            sequences: int) -> dict[str, int]:
    sums = {k: sum(r[k] for r in rows) for k in _MODE_KEYS}
    sums["fixed_bytes_per_sequence"] = model.fixed_bytes_per_sequence()
    sums["prefix_store_blocks"] = (tokens // block_size) * sequences
    return sums


def _component_row(c: KVComponent, tokens: int, block_size: int, sequences: int,
                   parts: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    """One component's row. ``parts`` (:func:`_hybrid_blocks`, a hybrid model): its bytes per block and
    Prefix store are its share of the replay's pages (a state: the state over the blocks between checkpoints),
    else a block's B tokens (+ the whole fixed state)."""
    row: dict[str, Any] = {
        "name": c.name, "layers": c.num_layers, "dtype": c.dtype, "layout": getattr(c, "layout_name", c.dtype),
        "describe": c.describe(),
        "tokens_held": c.tokens_held(tokens),
        "reference_bytes_per_token": c.payload_bytes_per_token(),
        "serialized_bytes_per_token": c.payload_bytes_per_token() + c.scale_bytes_per_token(),
        "fixed_bytes_per_sequence": c.fixed_payload_bytes(),
        "reference_bytes_per_block": _component_block_bytes(c, block_size, "reference"),
        "serialized_bytes_per_block": _component_block_bytes(c, block_size, "serialized"),
        "reserved_blocks": c.reserved_blocks(tokens, block_size),
    }
    row.update({k: v * sequences for k, v in component_bytes(c, tokens, block_size).items()})
    if parts is not None:
        full = tokens // block_size
        row["reference_bytes_per_block"] = parts["reference"][c.name]
        row["serialized_bytes_per_block"] = parts["serialized"][c.name]
        row["prefix_store_bytes"] = full * parts["serialized"][c.name] * sequences
        row["prefix_store_gpu_bytes"] = full * parts["reserved"][c.name] * sequences
    return row


@keyword_refusals
def footprint(model: ModelSpec | str, tokens: int, block_size: int = 16, dtype: str | None = None,
              sequences: int = 1, tp: int | None = None) -> FootprintResult:
    """KV bytes of ``sequences`` sequences of ``tokens`` tokens in every accounting mode.

    Args:
        model: the spec (already ``with_tp`` if wanted; bytes are per rank),
            or a preset name (``pcs models``).
        tp: tensor-parallel ranks to split an unsplit ``model`` over, as ``pcs footprint --tp`` (None: the
            spec's own; a spec already split over other ranks is refused).
        tokens: T, tokens per sequence (>= 0).
        block_size: B, tokens per block/page (>= 1).
        dtype: KV dtype to apply first (None keeps the model's).
        sequences: N independent sequences (nothing shared); all byte totals x N.
    Returns:
        FootprintResult; ``by_dtype`` compares bf16, fp8, fp8_per_token_head and the chosen dtype, each row
        named by the layout that runs (``asked``: the name given when it differs, fp8 on DeepSeek-V3.2 running
        as fp8_ds_mla), so that vLLM's per-tensor fp8 halving all three modes while in-page scales
        (fp8_per_token_head, fp8_ds_mla) shrink Serialized and Reserved less is visible.
    Raises:
        UserError: (:class:`pcs.errors.UserError`, a ValueError; an unknown name as its
            :class:`pcs.errors.UnknownNameError`) bad tokens, block size, sequences or dtype.
        ArgumentTypeError: ``tp`` not an integer (a bool included).
    """
    tokens = check_int(tokens, "tokens", lo=0, hi=MAX_TOKENS)      # --tokens' range
    block_size = _check_block_size(block_size)
    sequences = check_int(sequences, "sequences", lo=1, hi=MAX_COUNT)
    with keyword_refusal("model", model):
        model = _as_model(model)
    with keyword_refusal("tp", tp):
        model = _split(model, tp)
    with keyword_refusal("dtype", dtype):
        spec = model.with_dtype(dtype) if dtype is not None else model
    rows = _rows(spec, tokens, block_size, sequences)
    per_token = {m: spec.kv_bytes_per_token(m) for m in ("reference", "serialized")}
    from pcs.model.parallel import tp_placement

    group = tp_placement(spec).to_dict()
    per_block = {m: model_block_bytes(spec, block_size, m) for m in _BLOCK_LAYOUTS}   # the rows' B/block, summed
    group["bytes_per_block"] = {m: v * group["ranks_holding_copy"] for m, v in per_block.items()}
    totals = _totals(rows, spec, tokens, block_size, sequences)
    by_dtype = tuple(_by_dtype(model, spec, tokens, block_size, sequences))
    _check_fits(tokens, sequences, [totals, *by_dtype])
    return FootprintResult(model=spec.name, dtype=spec.kv_dtype, tokens=tokens, block_size=block_size,
                           sequences=sequences, tp=spec.tp, components=tuple(rows),
                           totals=totals, per_token=per_token,
                           per_block=per_block, by_dtype=by_dtype,
                           num_layers=spec.num_layers, source=spec.source, layout=spec.kv_layout.to_dict(),
                           outside_pages_bytes=spec.outside_page_bytes(), assumptions=spec.assumptions,
                           tp_group=group, layer_pattern=_pattern_counts(spec),
                           max_context_tokens=spec.max_context_tokens)


def _split(model: ModelSpec, tp: int | None) -> ModelSpec:
    """``model`` over ``tp`` ranks (``tp=`` of :func:`footprint`): unchanged for None or its own TP.

    Raises:
        ArgumentTypeError: ``tp`` not an integer (``True`` is not read as 1).
    """
    if isinstance(tp, bool) or not (tp is None or isinstance(tp, int)):
        raise ArgumentTypeError(f"tp must be an integer, got {shown_repr(tp)} ({type(tp).__name__})")
    if tp is None or tp == model.tp:
        return model
    tp = check_int(tp, "tp", lo=1, hi=MAX_COUNT)
    if model.tp != 1:
        raise UserError(f"tp={tp}: the model is already split over {model.tp} ranks; give the unsplit model")
    return model.with_tp(tp)


def _check_fits(tokens: int, sequences: int, rows: list[dict[str, Any]]) -> None:
    """Refuse a footprint whose bytes exceed 2^63 - 1, the bound of every size pcs takes and writes
    (docs/semantics.md §16; an int64 column, a JSON integer strict readers can hold): ``--tokens 1000000000
    --sequences 1000000000`` of llama-3.1-70b is 3.3e23 bytes, which the JSON would print as a 24-digit integer."""
    from pcs.units import MAX_VALUE, format_bytes

    most = max(v for row in rows for k, v in row.items() if k.endswith("_bytes") and isinstance(v, int))
    if most > MAX_VALUE:
        raise UserError(f"{tokens:,} tokens x {sequences:,} sequences need {format_bytes(most)} = {most:.3e} B, more "
                        f"than {INT64_LIMIT} bytes (about 9,223 PB), the largest size pcs handles: give fewer tokens "
                        "or sequences")


def _pattern_counts(spec: ModelSpec) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in spec.layer_types:
        counts[t] = counts.get(t, 0) + 1
    return counts


def _by_dtype(model: ModelSpec, spec: ModelSpec, tokens: int, block_size: int, sequences: int) -> list[dict]:
    """bf16, vLLM's fp8 (scales outside the pages), fp8_per_token_head (scales in the pages) and the chosen
    layout side by side (ratios vs bf16): lesson 2, docs/semantics.md §13."""
    rows, base, seen = [], None, set()
    for d in dict.fromkeys(("bf16", "fp8", "fp8_per_token_head", spec.kv_layout.name)):
        try:
            m = model.with_dtype(d)
        except ValueError:  # no such layout for this model (MLA has no per-token-head fp8 in vLLM)
            continue
        runs = m.kv_layout.name     # the layout that runs: fp8 on DeepSeek-V3.2's latent is fp8_ds_mla
        if runs in seen:
            continue
        seen.add(runs)
        t = _totals(_rows(m, tokens, block_size, sequences), m, tokens, block_size, sequences)
        base = base or t
        row: dict[str, Any] = {"dtype": m.kv_dtype, "layout": runs}   # the value type, the layout's one name
        if runs != d:
            row["asked"] = d
        hb = hybrid_block_size(m)   # a state model: the replay's checkpoint interval N = B ceil(b_h / B) (§13.1)
        if hb:
            row["checkpoint_tokens"] = block_size * -(-hb // block_size)
        for k in ("reference_bytes", "serialized_bytes", "reserved_bytes", "prefix_store_bytes"):
            row[k] = t[k]
            row[k.replace("_bytes", "_ratio_vs_bf16")] = (t[k] / base[k]) if base[k] else None
        rows.append(row)
    return rows
