"""What a deployment's KV pool holds: GPU-tier blocks, the longest request, concurrent requests.

``pcs deploy`` reports these; the GPU tier's bytes come from
:func:`pcs.model.deploy.size_deployment` -- the function ``pcs replay`` sizes its default GPU tier with -- and
its bytes per block from :func:`gpu_block_bytes`: :func:`pcs.model.parallel.group_block_bytes` (Reserved), or
for a hybrid model the whole pages a block takes in replay's pool (``HybridPlan.block_layout`` of
:func:`pcs.model.footprint.hybrid_pages`, page padding included, docs/semantics.md §13.1), so the GPU-tier
blocks are the whole blocks replay's GPU tier holds. A request of T tokens needs
:func:`pcs.model.footprint.reserved_bytes` per rank (whole pages, a window + 1 page, a fixed state slot), as
vLLM's ``KVCacheSpec.max_memory_usage_bytes`` budgets it, plus a hybrid model's page padding of the blocks it
holds (:func:`request_bytes_of`, the Reserved of ``pcs footprint``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pcs.model.deploy import Deployment
from typing import Callable

from pcs.model.footprint import PAGE_PADDING, hybrid_block_parts, hybrid_pages, model_block_bytes, reserved_bytes_of
from pcs.model.parallel import group_block_bytes, tp_placement
from pcs.model.spec import ModelSpec

__all__ = ["DeployPlan", "plan_deployment", "longest_request_tokens", "gpu_block_bytes", "request_bytes_of"]

#: Requests longer than this count as unbounded (a model whose pages stop growing: all sliding / state).
_MAX_TOKENS = 1 << 40


def gpu_block_bytes(spec: ModelSpec, block_size: int) -> tuple[int, int]:
    """(per rank, per TP group) bytes of one block of ``spec`` (the ``with_tp`` spec) in a GPU tier, int bytes:
    the Reserved layout (:func:`pcs.model.parallel.group_block_bytes`), or for a hybrid model the pages one
    block takes in replay's shared pool x the page bytes (``HybridPlan.block_layout`` of
    :func:`pcs.model.footprint.hybrid_pages`: page padding included, docs/semantics.md §13.1), per rank x the
    ranks holding a copy -- the bytes per block of replay's payload lens, whose GPU tier holds
    floor(bytes / this) whole blocks.

    Raises:
        UserError: block_size < 1 (:func:`pcs.model.footprint.block_bytes`).

    >>> from pcs.model import get_model   # 7 pages x 5,242,880 B per rank (full 1, sliding 6)
    >>> gpu_block_bytes(get_model("gemma-3-27b").with_tp(8), 512)
    (36700160, 293601280)
    """
    plan = hybrid_pages(spec, block_size, "reserved")
    if plan is None:
        total = group_block_bytes(spec, block_size, "reserved").total_bytes
        return total // tp_placement(spec).ranks_holding_copy, total
    per_rank = plan.block_layout(0)[0]
    return per_rank, per_rank * tp_placement(spec).ranks_holding_copy


def request_bytes_of(spec: ModelSpec, block_size: int) -> Callable[[int], int]:
    """Bytes one running request of T tokens holds on one rank, as a function of T (int tokens -> int bytes):
    :func:`pcs.model.footprint.reserved_bytes` plus, for a hybrid model, the page padding of the blocks each
    group reserves (one slot for a state) -- the Reserved total of ``pcs footprint`` (docs/semantics.md §13.1).

    Raises:
        UserError: block_size < 1; the function: tokens < 0.
    """
    from pcs.model.footprint import _padding_row    # the footprint's page padding rule, one place

    plain = reserved_bytes_of(spec, block_size)
    if hybrid_pages(spec, block_size, "reserved") is None:
        return plain

    def request_bytes(tokens: int) -> int:
        pad = _padding_row(spec, tokens, block_size, 1)
        return plain(tokens) + (pad["reserved_bytes"] if pad else 0)
    return request_bytes


def longest_request_tokens(spec: ModelSpec, pool_bytes_per_rank: int, block_size: int) -> int | None:
    """Largest T whose reserved bytes (:func:`request_bytes_of`) fit ``pool_bytes_per_rank`` (None: unbounded, 0:
    not even one token).

    ``spec`` is the ``with_tp`` spec. Binary search; reserved bytes never shrink as T grows.
    """
    need = request_bytes_of(spec, block_size)
    fits = lambda t: need(t) <= pool_bytes_per_rank  # noqa: E731
    if fits(_MAX_TOKENS):
        return None
    if not fits(1):
        return 0
    lo, hi = 1, _MAX_TOKENS
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


@dataclass(frozen=True, slots=True)
class DeployPlan:
    """A deployment and what its GPU tier holds (JSON keys in :meth:`to_dict`)."""

    deployment: Deployment
    block_size: int
    request_tokens: int
    layout: dict[str, Any]
    tp_group: dict[str, Any]
    bytes_per_block_per_rank: int
    bytes_per_block: int
    gpu_blocks: int
    longest_request_tokens: int | None
    request_bytes_per_rank: int
    concurrent_requests: int
    assumptions: tuple[str, ...] = ()
    max_context_tokens: int | None = None
    payload_bytes_per_block_per_rank: int = 0
    page_padding_bytes_per_block_per_rank: int = 0
    alt: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The payload of ``pcs deploy --format json`` (keys in docs/views.md)."""
        out = self.deployment.to_dict()
        out.update({"block_size": self.block_size, "layout": self.layout, "tp_group": self.tp_group,
                    "bytes_per_block_per_rank": self.bytes_per_block_per_rank,
                    "bytes_per_block": self.bytes_per_block, "gpu_blocks": self.gpu_blocks,
                    "longest_request_tokens": self.longest_request_tokens, "request_tokens": self.request_tokens,
                    "request_bytes_per_rank": self.request_bytes_per_rank,
                    "concurrent_requests": self.concurrent_requests, "assumptions": list(self.assumptions),
                    "max_context_tokens": self.max_context_tokens,
                    "payload_bytes_per_block_per_rank": self.payload_bytes_per_block_per_rank,
                    "page_padding_bytes_per_block_per_rank": self.page_padding_bytes_per_block_per_rank,
                    "alt": dict(self.alt)})
        return out


def _alternative(spec: ModelSpec, dep: Deployment, block_size: int) -> dict[str, Any]:
    """The other KV dtype the payload lens sets beside a run (``pcs.engine.lens.alternative_dtype``: fp8 for a
    16/32-bit KV, else bf16) on the same GPU tier: ``dtype`` (its value type, as the lens' ``alt_dtype``), ``layout``
    (the layout that runs, by its one name: fp8 on DeepSeek-V3.2 runs as fp8_ds_mla), ``bytes_per_block_per_rank``
    and ``gpu_blocks`` -- lesson 2 (docs/semantics.md §13), as deploy's note gives it."""
    from pcs.engine.lens import alternative_dtype

    alt = spec.with_dtype(alternative_dtype(spec.kv_dtype))
    per_rank, per_group = gpu_block_bytes(alt, block_size)
    return {"dtype": alt.kv_dtype, "layout": alt.kv_layout.name, "bytes_per_block_per_rank": per_rank, "gpu_blocks": dep.kv_bytes // per_group}


def plan_deployment(spec: ModelSpec, dep: Deployment, block_size: int, request_tokens: int) -> DeployPlan:
    """What ``dep``'s KV pool holds for ``spec`` (a ``with_tp(dep.tp)`` spec) at ``block_size``.

    Raises:
        UserError: the weights do not fit (:meth:`Deployment.check_fits`), block_size < 1 or
            request_tokens < 1.
    """
    dep.check_fits()
    from pcs.argcheck import check_int

    request_tokens = check_int(request_tokens, "request_tokens", 1)   # numpy ints too; the CLI bounds --request-tokens
    per_rank, per_group = gpu_block_bytes(spec, block_size)
    per_request = request_bytes_of(spec, block_size)(request_tokens)
    return DeployPlan(dep, block_size, request_tokens, spec.kv_layout.to_dict(), tp_placement(spec).to_dict(),
                      per_rank, per_group, dep.kv_bytes // per_group,
                      longest_request_tokens(spec, dep.kv_bytes_per_gpu, block_size), per_request,
                      dep.kv_bytes_per_gpu // per_request if per_request else 0, spec.assumptions,
                      spec.max_context_tokens, model_block_bytes(spec, block_size, "reference"),
                      (hybrid_block_parts(spec, block_size) or {}).get(PAGE_PADDING, 0),
                      _alternative(spec, dep, block_size))
