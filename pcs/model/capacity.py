"""What a deployment's KV pool holds: GPU-tier blocks, the longest request, concurrent requests.

``pcs deploy`` reports these; the GPU tier's bytes come from
:func:`pcs.model.deploy.size_deployment` and its bytes per block from
:func:`pcs.model.parallel.group_block_bytes` -- the same two functions
``pcs replay`` sizes its default GPU tier with, so both agree.
A request of T tokens needs :func:`pcs.model.footprint.reserved_bytes` per rank
(whole pages, a window + 1 page, a fixed state slot), as vLLM's
``KVCacheSpec.max_memory_usage_bytes`` budgets it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pcs.model.deploy import Deployment
from pcs.model.footprint import reserved_bytes
from pcs.model.parallel import group_block_bytes, tp_placement
from pcs.model.spec import ModelSpec

__all__ = ["DeployPlan", "plan_deployment", "longest_request_tokens"]

#: Requests longer than this count as unbounded (a model whose pages stop growing: all sliding / state).
_MAX_TOKENS = 1 << 40


def longest_request_tokens(spec: ModelSpec, pool_bytes_per_rank: int, block_size: int) -> int | None:
    """Largest T whose reserved bytes fit ``pool_bytes_per_rank`` (None: unbounded, 0: not even one token).

    ``spec`` is the ``with_tp`` spec. Binary search; reserved bytes never shrink as T grows.
    """
    fits = lambda t: reserved_bytes(spec, t, block_size) <= pool_bytes_per_rank  # noqa: E731
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

    def to_dict(self) -> dict[str, Any]:
        """The payload of ``pcs deploy --format json``."""
        out = self.deployment.to_dict()
        out.update({"block_size": self.block_size, "layout": self.layout, "tp_group": self.tp_group,
                    "bytes_per_block_per_rank": self.bytes_per_block_per_rank,
                    "bytes_per_block": self.bytes_per_block, "gpu_blocks": self.gpu_blocks,
                    "longest_request_tokens": self.longest_request_tokens, "request_tokens": self.request_tokens,
                    "request_bytes_per_rank": self.request_bytes_per_rank,
                    "concurrent_requests": self.concurrent_requests, "assumptions": list(self.assumptions),
                    "max_context_tokens": self.max_context_tokens})
        return out


def plan_deployment(spec: ModelSpec, dep: Deployment, block_size: int, request_tokens: int) -> DeployPlan:
    """What ``dep``'s KV pool holds for ``spec`` (a ``with_tp(dep.tp)`` spec) at ``block_size``.

    Raises:
        UserError: the weights do not fit (:meth:`Deployment.check_fits`), block_size < 1 or
            request_tokens < 1.
    """
    dep.check_fits()
    from pcs.argcheck import check_int

    request_tokens = check_int(request_tokens, "request_tokens", 1)   # numpy ints too; the CLI bounds --request-tokens
    bb = group_block_bytes(spec, block_size, "reserved")
    per_request = reserved_bytes(spec, request_tokens, block_size)
    return DeployPlan(dep, block_size, request_tokens, spec.kv_layout.to_dict(), tp_placement(spec).to_dict(),
                      bb.total_bytes // spec.tp, bb.total_bytes, dep.kv_bytes // bb.total_bytes,
                      longest_request_tokens(spec, dep.kv_bytes_per_gpu, block_size), per_request,
                      dep.kv_bytes_per_gpu // per_request if per_request else 0, spec.assumptions,
                      spec.max_context_tokens)
