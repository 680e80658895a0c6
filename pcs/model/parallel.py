"""Tensor parallelism: how a TP group holds a block, and what a replay tier stores per block.

A footprint is per rank (:func:`pcs.model.footprint.block_bytes` of
``spec.with_tp(tp)``). A replay tier serves the whole TP group, so its bytes
per block are the per-rank bytes x the ranks -- every rank of
the group holds its own share of every block (docs/semantics.md §13):

- GQA / sliding / chunked KV: heads are split, at least one per rank; with
  tp > KV heads each head lives on tp / heads ranks (vLLM
  ``ModelConfig.get_num_kv_heads`` = max(1, heads // tp)), so the group holds
  replicas and there are only min(tp, heads) distinct shards;
- MLA latents and indexer keys: one copy on every rank (``get_num_kv_heads``
  returns 1 for MLA): one distinct shard, tp replicas;
- recurrent state: split (vLLM ``divide(..., tp)``), tp distinct shards.

A restore moves each rank's share over that rank's own link, all ranks at
once (vLLM's offloading connector runs one transfer per worker): the time is
setup + per-rank bytes / per-GPU bandwidth. Replicas move on their own ranks'
links, so the distinct data is never spread over more than the distinct shards'
links: replicated KV restores no faster than one copy over one link.
"""
from __future__ import annotations

from pcs.units import plural
from pcs.model.footprint import BlockBytes, block_bytes
from pcs.model.spec import ModelSpec
from pcs._dataclass import dataclass

__all__ = ["TPPlacement", "tp_placement", "group_block_bytes", "group_bytes_per_token"]


@dataclass(frozen=True, slots=True)
class TPPlacement:
    """Where a TP group's copies of one block live.

    Attributes:
        tp: ranks in the group.
        ranks_holding_copy: ranks that hold a share of every block (= tp).
        shards: component name -> distinct shards across the group.
        replicas: component name -> ranks holding each shard (tp / shards).
    """

    tp: int
    ranks_holding_copy: int
    shards: dict[str, int]
    replicas: dict[str, int]

    def note(self) -> str:
        """One sentence: per-rank vs per-group bytes, and what is replicated."""
        rep = [f"{name} on {r} ranks each" for name, r in self.replicas.items() if r > 1]
        what = f"; replicated: {', '.join(rep)}" if rep else ""
        if self.tp == 1:
            return "TP 1: one GPU holds every block whole: footprint bytes and replay tier bytes are alike"
        return (f"TP {self.tp}: footprint bytes are per GPU (one TP rank); replay tiers are per TP group = per-rank bytes "
                f"x {self.ranks_holding_copy} {plural(self.ranks_holding_copy, 'rank')}, each holding its share of every block{what}; a restore moves "
                "each rank's share over its own link in parallel")

    def to_dict(self) -> dict:
        """JSON form (``tp_group`` in ``pcs footprint``/``deploy``, ``deployment`` in replay)."""
        return {"tp": self.tp, "ranks_holding_copy": self.ranks_holding_copy, "shards": dict(self.shards),
                "replicas": dict(self.replicas), "note": self.note()}


def _shards(component, tp: int) -> int:
    if component.name in ("mla_latent", "indexer_keys"):
        return 1
    heads = getattr(component, "num_kv_heads", None)
    return tp if heads is None else min(tp, heads)


def tp_placement(spec: ModelSpec) -> TPPlacement:
    """The placement of ``spec`` (a ``with_tp`` spec; ``spec.tp`` ranks)."""
    tp = spec.tp
    shards = {c.name: _shards(c, tp) for c in spec.components}
    return TPPlacement(tp, tp, shards, {k: tp // v for k, v in shards.items()})


def group_block_bytes(spec: ModelSpec, block_size: int, layout: str = "serialized") -> BlockBytes:
    """Bytes one block occupies in a replay tier of the TP group: per-rank bytes x the ranks (each holds its share).

    ``spec`` is the ``with_tp`` spec. Raises as :func:`pcs.model.footprint.block_bytes`.

    >>> from pcs.model import get_model
    >>> group_block_bytes(get_model("deepseek-v3").with_tp(8), 512, "reserved").total_bytes  # 8 x 70,272 x 512
    287834112
    """
    per_rank = block_bytes(spec, block_size, layout)
    ranks = tp_placement(spec).ranks_holding_copy
    return BlockBytes(per_rank.total_bytes * ranks, {k: v * ranks for k, v in per_rank.per_component.items()})


def group_bytes_per_token(spec: ModelSpec, mode: str = "reference") -> int:
    """Bytes one more token adds across the TP group (``spec.kv_bytes_per_token(mode)`` x ranks)."""
    return spec.kv_bytes_per_token(mode) * tp_placement(spec).ranks_holding_copy
