"""The payload lens: what another KV dtype would and would not change in a replay.

Lesson 2 of pcs (docs/semantics.md §13): halving payload bytes (FP8 instead
of BF16) does not halve latency, and with scales in the pages it does not
halve stored bytes either. Every replay report shows it on the run's own
numbers: the run's dtype beside one alternative (vLLM's FP8 for a 16-bit run,
BF16 for a narrower one), with the hits held fixed:

- payload (Reference) bytes per block scale by the bit width;
- stored bytes per block (GPU Reserved, lower-tier Serialized) carry the
  quantisation scales that live in the pages (:mod:`pcs.model.quant`): vLLM's
  fp8 keeps per-tensor scales outside the pages, so its stored bytes halve
  exactly (x0.500); ``fp8_per_token_head`` / ``nvfp4`` shrink less (x0.516
  for fp8_per_token_head on llama-2-70b);
- the restore transfer time of the run's restores, ``restores x setup +
  restored blocks x bytes per block / bandwidth`` (no queueing; the
  ``LinkSpec`` model of :mod:`pcs.hardware`), shrinks like the stored bytes
  when the per-restore setup is 0 (the default links) and less otherwise;
- the prefill of the missed tokens does not shrink at all: the compute model
  (:mod:`pcs.compute`) counts FLOPs of weights and attention, not KV bytes;
- so the mean TTFT moves only by the restore time saved per request.

The capacity a tier holds in blocks grows by the inverse of the stored-byte
ratio; more blocks may raise the hit ratio, which the lens does not replay
(run ``pcs replay --dtype ...`` for that).
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

from pcs.engine.result import PayloadLens

__all__ = ["alternative_dtype", "baseline_reason", "payload_block_bytes", "payload_lens"]

_WIDE = ("fp32", "bf16", "fp16")


def alternative_dtype(dtype: str) -> str:
    """The dtype the lens compares with: ``fp8`` for 16/32-bit KV, else ``bf16``.

    >>> alternative_dtype("bf16"), alternative_dtype("fp8")
    ('fp8', 'bf16')
    """
    return "fp8" if dtype in _WIDE else "bf16"


def baseline_reason(dtype: str, alt: str) -> str:
    """Why a narrow run names bf16 as its 16-bit baseline, for the lens line ("" when the run is 16/32-bit).

    A default run of an fp16 checkpoint (llama-2-70b) shows ``KV fp16 vs fp8`` and the same model with
    ``--dtype fp8`` shows ``KV fp8 vs bf16``: bf16 and fp16 both store 2 bytes a value (quant ``DTYPE_BITS``),
    so every figure of the lens is the same for either, and bf16 is the 16-bit baseline ``pcs footprint``
    compares with as well (its ``*_ratio_vs_bf16``). The JSON keeps ``alt_dtype`` = bf16.

    >>> baseline_reason("fp8", "bf16")
    'bf16 = any 16-bit KV: fp16 stores the same 2 bytes a value'
    >>> baseline_reason("fp16", "fp8")
    ''
    """
    return "" if dtype in _WIDE or alt != "bf16" else "bf16 = any 16-bit KV: fp16 stores the same 2 bytes a value"


def _restore_s(links: Sequence[Any], nbytes: Sequence[int]) -> float:
    return sum(lk.restores * lk.setup_s + b / lk.bandwidth_bps for lk, b in zip(links, nbytes))


def _group_bytes(model: Any, block_size: int, layout: str) -> tuple[int, int]:
    """(run, alt): the TP group's bytes per block in ``layout`` (``pcs.model.group_block_bytes``) of the run's
    dtype and the alternative's, kept per (model, block size, layout) for the next replay in the process
    (:func:`_kept_group_bytes`); a model that cannot be hashed is worked out each time.

    Raises:
        UserError: as ``ModelSpec.with_dtype`` and ``group_block_bytes`` (nothing is kept then)."""
    try:
        return _kept_group_bytes(model, block_size, layout)
    except TypeError:      # unhashable: not kept
        return _kept_group_bytes.__wrapped__(model, block_size, layout)


@functools.lru_cache(maxsize=32)
def _kept_group_bytes(model: Any, block_size: int, layout: str) -> tuple[int, int]:
    """:func:`_group_bytes`' values, kept: a ``ModelSpec`` is frozen, so equal models give equal bytes (the
    summary's payload lens asked for eight blocks' bytes and three specs of the other dtype on every replay,
    about 0.3 ms)."""
    from pcs.model import group_block_bytes as block_bytes  # the TP group's bytes, as the tiers hold them

    alt = model.with_dtype(alternative_dtype(model.kv_dtype))
    return block_bytes(model, block_size, layout).total_bytes, block_bytes(alt, block_size, layout).total_bytes


def payload_block_bytes(spec: Any, block_size: int, plan: Any) -> int:
    """The payload (Reference layout, the TP group's bytes) of one block of a hybrid model ``spec`` (``with_tp``)
    in the page layout ``plan`` (:class:`pcs.engine.hybrid.HybridPlan`): per group, each component's bytes of a
    group block x the group's pages per block of the model / its pages per group block, rounded down (the split of
    ``pcs.engine.hybridsummary.component_bytes``; a state group's checkpoint spread over the blocks between
    checkpoints, ``pcs.cache.groups.pages_per_model_block``), summed. qwen3-next-80b-a3b TP 8, B = 16:
    8 x (196,608 + 4,939,776 x 3 // 27) = 8 x 745,472 B, not a whole state a block (docs/semantics.md §13.1).
    A replay's ``reference_bytes_per_block`` and its payload lens' (int bytes)."""
    from pcs.model import group_block_bytes

    ref = group_block_bytes(spec, block_size, "reference").per_component
    return sum(g.model_block_pages * ref[c] // g.pages for g in plan.groups for c in g.components)


def _payload_per_block(model: Any, block_size: int, pages: Any) -> tuple[int, int]:
    """(run, alt): :func:`payload_block_bytes` of the run's dtype and plan and of the alternative's."""
    alt = model.with_dtype(alternative_dtype(model.kv_dtype))
    return payload_block_bytes(model, block_size, pages[0]), payload_block_bytes(alt, block_size, pages[1])


def _block_layouts(model: Any, block_size: int, gpu_capacity_bytes: int, nlinks: int, pages: Any):
    """Per dtype (run, alt): (GPU bytes per block, whole blocks the GPU holds, per link bytes per block).

    Without ``pages``: the model's Reserved / Serialized block (``pcs.model.group_block_bytes``) and the
    GPU bytes // Reserved. With ``pages`` (a hybrid run's and the alternative's
    :class:`pcs.engine.hybrid.HybridPlan`): the run's own page layout, pages per block x page bytes and
    whole blocks of the pool (``HybridPlan.block_layout``), page padding included (docs/semantics.md §13.1).
    """
    if pages is None:
        return [(g, gpu_capacity_bytes // g if g else 0, [low] * nlinks)
                for g, low in zip(_group_bytes(model, block_size, "reserved"),
                                  _group_bytes(model, block_size, "serialized"))]
    out = []
    for k in range(2):
        (g, cap), low = pages[k].block_layout(0), [pages[k].block_layout(j)[0] for j in range(1, nlinks + 1)]
        out.append((g, cap, low))
    return out


def payload_lens(model: Any, block_size: int, gpu_capacity_bytes: int, links: Sequence[Any],
                 prefill_s: float, ttft_mean_s: float, requests: int, pages: Any = None) -> PayloadLens:
    """The run's dtype beside the alternative one, hits held fixed.

    Args:
        model: the run's :class:`pcs.model.ModelSpec`, split over its TP ranks (its ``kv_dtype`` is the run's).
        block_size: tokens per block.
        gpu_capacity_bytes: the GPU tier's size in bytes (as given, or its
            blocks x the run's bytes per block when given in blocks).
        links: the summary's envelope link rows (:class:`pcs.engine.result.LinkEnvelope`,
            one per lower tier; read: ``restores``, ``restored_blocks``, ``restored_bytes``,
            ``setup_s`` in s, ``bandwidth_bps`` in bytes/s).
        prefill_s: the run's total prefill seconds of missed tokens.
        ttft_mean_s: the run's mean TTFT, seconds.
        requests: number of requests.
        pages: a hybrid run's ``(plan, alternative's plan)`` (:class:`pcs.engine.hybrid.HybridPlan`, the
            same tier bytes in the other dtype), or None. With it the Reserved / Serialized bytes per
            block and the GPU's blocks are the page layout's (pages per block x page bytes, whole blocks),
            the run's restored bytes are its links' ``restored_bytes`` and the alternative's those scaled
            by its bytes per block (docs/semantics.md §13).
    Returns:
        :class:`pcs.engine.result.PayloadLens`: ``dtype``, ``alt_dtype``, ``layout`` (the run's
        :class:`pcs.model.layouts.KVLayout` name) and,
        each a ``(run, alt)`` pair: ``reference_bytes_per_block``,
        ``gpu_bytes_per_block`` (Reserved), ``lower_bytes_per_block``
        (Serialized, the first lower tier's), ``gpu_capacity_blocks``, ``restored_bytes``,
        ``restore_transfer_s``, ``prefill_s`` and ``ttft_mean_s`` (the
        alternative's = the run's minus the change in restore transfer time
        per request; waits and queueing held fixed).
    """
    dtype = model.kv_dtype
    alt = alternative_dtype(dtype)
    ref = _group_bytes(model, block_size, "reference") if pages is None else _payload_per_block(model, block_size,
                                                                                                 pages)
    (g0, c0, low0), (g1, c1, low1) = _block_layouts(model, block_size, gpu_capacity_bytes, len(links), pages)
    if pages is None:
        moved = ([lk.restored_blocks * b for lk, b in zip(links, low0)],
                 [lk.restored_blocks * b for lk, b in zip(links, low1)])
    else:
        moved = ([lk.restored_bytes for lk in links],
                 [lk.restored_bytes * b1 // b0 if b0 else 0 for lk, b0, b1 in zip(links, low0, low1)])
    transfer = tuple(_restore_s(links, m) for m in moved)
    # no lower tier: the Serialized block as the first lower tier would hold it; a hybrid run's, its page layout
    # (pages per block x page bytes: a Serialized block holds the bytes of a Reserved one, pcs.model.footprint)
    serialized = _group_bytes(model, block_size, "serialized") if pages is None else (g0, g1)
    return PayloadLens(
        dtype=dtype, alt_dtype=alt, layout=model.kv_layout.name,
        reference_bytes_per_block=ref,
        gpu_bytes_per_block=(g0, g1),
        lower_bytes_per_block=(low0[0], low1[0]) if links else serialized,
        gpu_capacity_blocks=(c0, c1),
        restored_bytes=(sum(moved[0]), sum(moved[1])),
        restore_transfer_s=transfer,
        prefill_s=(prefill_s, prefill_s),
        ttft_mean_s=(ttft_mean_s, ttft_mean_s - (transfer[0] - transfer[1]) / max(requests, 1)),
    )
