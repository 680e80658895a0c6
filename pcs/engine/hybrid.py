"""A hybrid model's cache groups and pools for a replay (``docs/semantics.md §3.1``, §13.1).

:func:`plan_hybrid` turns the model's KV components into cache groups
(:class:`pcs.cache.groups.CacheGroup`) and sizes their pools in each tier,
the way the engine named by ``hybrid_kv_cache_manager`` does:

- ``vllm`` (default): vLLM's hybrid KV cache manager -- ONE pool per tier with
  a uniform page size (``vllm/v1/core/kv_cache_utils.py``,
  ``_get_kv_cache_groups_uniform_page_size``): layers of one kind are split
  into groups of G layers, G = the fewest layers of a kind (the most when all
  kinds are within 1.25x of each other), the last group padded; a page holds
  one block of G layers, the per-layer page being the largest of the kinds
  (smaller ones padded, as vLLM pads the Mamba state page to the attention
  page); a group's block takes ceil(layers / G) pages. For a model with an
  SSM state vLLM raises the block size to the hybrid block size b_h
  (:func:`pcs.model.footprint.hybrid_block_size`) so a state fits a page; the
  replay keeps the trace's B-token blocks and checkpoints states every
  N = B x ceil(b_h / B) tokens (the smallest multiple of B at least b_h), a
  state taking the N-token attention page (``mamba_cache_mode`` ``all``: a
  state at every checkpoint; ``align``: only at a request's last one);
- ``sglang``: SGLang's separate pools -- one per group, sized from the tier's
  bytes by ``swa_full_tokens_ratio`` (SWA tokens / full tokens, default 0.8)
  and ``mamba_full_memory_ratio`` (state bytes / full KV bytes, default 0.9)
  (``python/sglang/srt/server_args.py``); chunked local attention goes in an
  SWA pool too; a page is one block of its group, states every block;
- ``disabled``: vLLM ``--disable-hybrid-kv-cache-manager``: every layer as
  full attention -- the replay is the one of a non-hybrid model.

Full attention, MLA latents and indexer keys share the full rule and are
freed together, so they form one group: a model made only of them (Llama,
DeepSeek V3.2) has one group and replays exactly as before.
"""
from __future__ import annotations

from typing import Any, Sequence

from pcs.units import plural
from pcs.cache.groups import RULES, CacheGroup
from pcs.errors import UnknownNameError, UserError, keyword_refusal, shown_repr
from pcs._dataclass import dataclass

__all__ = ["MANAGERS", "DEFAULT_MANAGER", "MAMBA_CACHE_MODES", "SWA_FULL_TOKENS_RATIO", "MAMBA_FULL_MEMORY_RATIO",
           "HybridPlan", "cache_groups", "plan_hybrid", "check_hybrid_options"]

#: ``hybrid_kv_cache_manager`` values (module docstring); the first is the default.
MANAGERS = ("vllm", "sglang", "disabled")
DEFAULT_MANAGER = "vllm"
#: vLLM ``CacheConfig.mamba_cache_mode`` values pcs models; "all" is vLLM's default with prefix caching.
MAMBA_CACHE_MODES = ("all", "align")
#: SGLang ``ServerArgs.swa_full_tokens_ratio`` default.
SWA_FULL_TOKENS_RATIO = 0.8
#: SGLang ``ServerArgs.mamba_full_memory_ratio`` default.
MAMBA_FULL_MEMORY_RATIO = 0.9

_RULE_OF = {"full_attention": "full", "mla_latent": "full", "indexer_keys": "full", "sliding_window": "window",
            "chunked_local": "chunk", "ssm_state": "state"}


@dataclass(frozen=True, slots=True)
class HybridPlan:
    """Cache groups and pools of one replay.

    Attributes:
        manager: ``vllm`` or ``sglang``.
        groups: the cache groups, full rule first.
        pools: pools per tier level (1 shared, or one per group).
        page_bytes: ``[level][pool]`` bytes of one page (the tier's layout, TP group).
        capacity_pages: ``[level][pool]`` pages of each pool.
        component_bytes: ``[level][group]`` component name -> bytes of one block of the group
            (real bytes; ``pages x page_bytes`` minus these is page padding).
        layer_group_size: vLLM's G (layers per page), None for ``sglang``.
        hybrid_block_size: vLLM's hybrid block size b_h for a model with a state, else None.
        checkpoint_tokens: the state checkpoint interval N, or None without a state group.
        notes: sentences for the summary's notes.
    """

    manager: str
    groups: tuple[CacheGroup, ...]
    pools: int
    page_bytes: tuple[tuple[int, ...], ...]
    capacity_pages: tuple[tuple[int, ...], ...]
    component_bytes: tuple[tuple[dict, ...], ...]
    layer_group_size: int | None
    hybrid_block_size: int | None
    checkpoint_tokens: int | None
    notes: tuple[str, ...]

    def pool_name(self, level: str, p: int) -> str:
        """A pool's tier name: the level's (shared pool) or ``level/group``."""
        return level if self.pools == 1 else f"{level}/{self.groups[p].name}"

    def block_pages(self) -> tuple[int, ...]:
        """Pages one block of the model takes in each pool: its groups' pages per block, a state group's
        pages per checkpoint spread over the blocks between checkpoints (rounded up)."""
        out = [0] * self.pools
        for g in self.groups:
            out[g.pool] += g.model_block_pages     # pcs.cache.groups.pages_per_model_block
        return tuple(out)

    def block_layout(self, level: int) -> tuple[int, int]:
        """(bytes of one block of the model at a level = pages per block x page bytes, summed over the
        pools; whole blocks the level holds = the fewest any pool holds), docs/semantics.md §13.1."""
        per = self.block_pages()
        nbytes = sum(n * b for n, b in zip(per, self.page_bytes[level]))
        return nbytes, min(c // n for c, n in zip(self.capacity_pages[level], per) if n)


def check_hybrid_options(manager: str | None, swa_ratio: float | None, mamba_ratio: float | None,
                         mamba_mode: str | None) -> tuple[str, float, float, str]:
    """Defaults filled in and each option checked.

    Raises:
        UserError: unknown manager or mode (the message lists the valid ones), a ratio not > 0.
    """
    manager = manager or DEFAULT_MANAGER
    if manager not in MANAGERS:
        with keyword_refusal("hybrid_kv_cache_manager", manager):
            raise UnknownNameError("hybrid KV cache manager", manager, MANAGERS)
    mamba_mode = mamba_mode or MAMBA_CACHE_MODES[0]
    if mamba_mode not in MAMBA_CACHE_MODES:
        with keyword_refusal("mamba_cache_mode", mamba_mode):
            raise UnknownNameError("mamba cache mode", mamba_mode, MAMBA_CACHE_MODES)
    swa = SWA_FULL_TOKENS_RATIO if swa_ratio is None else swa_ratio
    mamba = MAMBA_FULL_MEMORY_RATIO if mamba_ratio is None else mamba_ratio
    for name, v in (("swa-full-tokens-ratio", swa), ("mamba-full-memory-ratio", mamba)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or v != v or v == float("inf"):
            raise UserError(f"--{name} must be a number > 0, got {shown_repr(v)}")
    return manager, float(swa), float(mamba), mamba_mode


def cache_groups(spec, block_size: int, checkpoint_tokens: int, align: bool) -> list[CacheGroup]:
    """The model's components as cache groups, full rule first (pages 1, pool 0: set by the plan)."""
    by_rule: dict[str, list] = {r: [] for r in RULES}
    for c in spec.components:
        by_rule[_RULE_OF[c.name]].append(c)
    out = []
    for rule in RULES:
        comps = by_rule[rule]
        if not comps:
            continue
        spans = {"window": lambda c: c.window_tokens, "chunk": lambda c: c.chunk_tokens,
                 "state": lambda c: checkpoint_tokens, "full": lambda c: 0}[rule]
        if rule == "full":
            out.append(CacheGroup("+".join(c.name for c in comps), rule, tuple(c.name for c in comps), block_size,
                                  0, layers=max(c.num_layers for c in comps)))
        else:   # one sliding / chunked / state component per model; kept apart if there were two
            out += [CacheGroup(c.name, rule, (c.name,), block_size, spans(c), layers=c.num_layers, align=align)
                    for c in comps]
    return out


def is_hybrid(groups: Sequence[CacheGroup]) -> bool:
    """More than one group, or one that is not full attention."""
    return len(groups) > 1 or groups[0].rule != "full"


def _group_bytes(groups: Sequence[CacheGroup], per_component: dict) -> list[dict]:
    return [{c: per_component[c] for c in g.components} for g in groups]


def _layer_group_size(groups: Sequence[CacheGroup]) -> int:
    """vLLM's G: the fewest layers of a kind, or the most when every kind is within 1.25x of the fewest."""
    layers = [g.layers for g in groups]
    lo, hi = min(layers), max(layers)
    return hi if hi < lo * 1.25 else lo


def _vllm_pages(groups: list[CacheGroup], comp: list[list[dict]], B: int) -> tuple[list[int], list[int], int]:
    """Pages per block of each group, page bytes per level, G (vLLM's uniform page size)."""
    G = _layer_group_size(groups)
    per_layer = [[-(-sum(c.values()) // g.layers) for g, c in zip(groups, lvl)] for lvl in comp]
    token = [[q for g, q in zip(groups, lvl) if g.rule != "state"] for lvl in per_layer]
    q = [max(t) if t else max(lvl) for t, lvl in zip(token, per_layer)]
    pages = []
    for gi, g in enumerate(groups):
        per = -(-g.layers // G)
        if g.rule == "state":
            per *= max(g.every_blocks, -(-per_layer[0][gi] // q[0]))
        pages.append(per)
    page_bytes = [max(G * ql, max(-(-sum(c.values()) // p) for c, p in zip(lvl, pages))) for ql, lvl in zip(q, comp)]
    return pages, page_bytes, G


def _sglang_split(groups: Sequence[CacheGroup], comp: list[dict], B: int, size: int, swa: float,
                  mamba: float) -> list[int]:
    """Pages (blocks or states) per group pool from one tier's bytes (SGLang's ratios)."""
    blk = [sum(c.values()) for c in comp]
    full = next((i for i, g in enumerate(groups) if g.rule == "full"), 0)
    per_full_token = blk[full] / B
    weight = per_full_token
    for i, g in enumerate(groups):
        if i == full:
            continue
        weight += mamba * per_full_token if g.rule == "state" else swa * blk[i] / B
    tokens = size / weight
    out = []
    for i, g in enumerate(groups):
        if i == full:
            out.append(int(tokens // B))
        elif g.rule == "state":
            out.append(int(mamba * tokens * per_full_token // blk[i]))
        else:
            out.append(int(swa * tokens // B))
    return out


def _checkpoint(spec, B: int, manager: str) -> tuple[int | None, int]:
    """(vLLM's hybrid block size b_h or None, the checkpoint interval N in tokens)."""
    from pcs.model.footprint import hybrid_block_size

    bh = hybrid_block_size(spec) if manager == "vllm" else None
    return bh, B * max(1, -(-bh // B)) if bh else B


def plan_hybrid(spec, block_size: int, level_names: Sequence[str], block_bytes: Sequence[Any],
                sizes: Sequence[tuple[int | None, int | None]], manager: str, swa_ratio: float,
                mamba_ratio: float, mamba_mode: str) -> HybridPlan | None:
    """The groups and pools of a replay, or None when the model is not hybrid or the manager is ``disabled``.

    Args:
        spec: the ``with_tp`` model; block_size: the replay's B.
        level_names: tier names, GPU first.
        block_bytes: per level, :class:`pcs.model.footprint.BlockBytes` of the TP group in the tier's layout.
        sizes: per level, (capacity bytes, capacity blocks) as given (blocks: of the all-full-attention
            block, ``block_bytes[j].total_bytes``).
        manager, swa_ratio, mamba_ratio, mamba_mode: as :func:`check_hybrid_options` returns them.
    Raises:
        UserError: a tier smaller than one page of a pool.
    """
    bh, N = _checkpoint(spec, block_size, manager)
    groups = cache_groups(spec, block_size, N, mamba_mode == "align")
    if manager == "disabled" or not is_hybrid(groups):
        return None
    comp = [_group_bytes(groups, bb.per_component) for bb in block_bytes]
    total = [b if b is not None else n * bb.total_bytes for (b, n), bb in zip(sizes, block_bytes)]
    if manager == "vllm":
        pages, page_bytes, G = _vllm_pages(groups, comp, block_size)
        groups = [_with(g, pages=p) for g, p in zip(groups, pages)]
        pb = tuple((b,) for b in page_bytes)
        cap = tuple((t // b,) for t, b in zip(total, page_bytes))
        pools = 1
    else:
        G, pools = None, len(groups)
        groups = [_with(g, pool=i) for i, g in enumerate(groups)]
        pb = tuple(tuple(sum(c.values()) for c in lvl) for lvl in comp)
        cap = tuple(tuple(_sglang_split(groups, lvl, block_size, t, swa_ratio, mamba_ratio))
                    for lvl, t in zip(comp, total))
    for name, t, caps, bts in zip(level_names, total, cap, pb):
        if t and min(caps) == 0:
            _refuse_empty_pool(name, t, caps, bts, groups, pools, swa_ratio, mamba_ratio)
    plan = HybridPlan(manager, tuple(groups), pools, pb, cap, tuple(tuple(c) for c in comp), G, bh,
                      N if any(g.rule == "state" for g in groups) else None, ())
    return _with_notes(plan, level_names)


def _refuse_empty_pool(name: str, total: int, caps, page_bytes, groups, pools: int, swa_ratio, mamba_ratio) -> None:
    """UserError for a tier of ``total`` bytes in which a pool got 0 pages: one pool (vLLM's manager) -> the tier is
    smaller than a page; several (SGLang's split, docs/hybrid.md) -> name the pool, its page and the ratio to change."""
    if pools == 1:
        raise UserError(f"tier {shown_repr(name)} ({total:,} B) is smaller than one page ({page_bytes[0]:,} B)")
    i = list(caps).index(0)
    swa, mamba = f"swa_full_tokens_ratio (now {shown_repr(swa_ratio)})", f"mamba_full_memory_ratio (now {shown_repr(mamba_ratio)})"
    ratio = mamba if any(g.rule == "state" for g in groups) else swa     # the ratio that splits this model's pools
    raise UserError(f"tier {shown_repr(name)} ({total:,} B): SGLang's pool split leaves pool {shown_repr(groups[i].name)} no page "
                    f"({page_bytes[i]:,} B per page; pages per pool: {', '.join(map(str, caps))}); change {ratio} "
                    "or give the tier more bytes")


def _with(g: CacheGroup, **kw) -> CacheGroup:
    from dataclasses import replace

    return replace(g, **kw)


def _describe(g: CacheGroup) -> str:
    rule = {"window": f"window {g.span_tokens}", "chunk": f"chunk {g.span_tokens}",
            "state": f"state every {g.span_tokens} tokens{' (align)' if g.align else ''}", "full": "full"}[g.rule]
    return f"{g.name} ({rule}, {g.layers} {plural(g.layers, 'layer')}, {g.pages} {plural(g.pages, 'page')}/block)"


def _state_room_notes(plan: HybridPlan, gpu: str) -> list[str]:
    """A note when the GPU pool of a state group holds fewer pages than one running state: every request,
    which reserves its running state at admission (docs/semantics.md §3.1), is truncated."""
    out = []
    for g in plan.groups:
        room = plan.capacity_pages[0][g.pool]
        if g.rule == "state" and room < g.pages:
            out.append(f"{gpu} holds {room:,} {plural(room, 'page')} of {g.name}'s pool, fewer than one running state ({g.pages:,} "
                       "pages): every request reserves one at admission (vLLM MambaManager takes it from the same "
                       "block pool), so every request is truncated (docs/semantics.md §3.1, §5)")
    return out


def _with_notes(plan: HybridPlan, level_names: Sequence[str]) -> HybridPlan:
    from dataclasses import replace

    groups = "; ".join(_describe(g) for g in plan.groups)
    if plan.manager == "vllm":
        pools = ", ".join(f"{n} {c[0]:,} pages of {b[0]:,} B" for n, c, b in
                          zip(level_names, plan.capacity_pages, plan.page_bytes))
        notes = [f"hybrid KV cache (vLLM hybrid KV cache manager): groups {groups}; one shared pool per tier, "
                 f"{plan.layer_group_size} layers per page: {pools}"]
    else:
        pools = "; ".join(f"{n}: " + ", ".join(f"{g.name} {c:,} x {b:,} B" for g, c, b in zip(plan.groups, cs, bs))
                          for n, cs, bs in zip(level_names, plan.capacity_pages, plan.page_bytes))
        notes = [f"hybrid KV cache (SGLang separate pools): groups {groups}; pools {pools}"]
    notes += _state_room_notes(plan, level_names[0])
    if plan.hybrid_block_size:
        notes.append(f"hybrid block size: vLLM serves this model with {plan.hybrid_block_size}-token blocks "
                     f"(hybrid page-size rule); the replay keeps the trace's {plan.groups[0].block_size}-token "
                     f"blocks and checkpoints states every {plan.checkpoint_tokens} tokens")
    return replace(plan, notes=tuple(notes))
