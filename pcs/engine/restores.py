"""Restores of lower-tier hits over the tiers' links: FIFO link queues, the envelope's verdict, overlap policies.

The one place of the restore rules both modeled engines use (``docs/semantics.md §9``, §10):

- each lower tier's link is a FIFO server: a request's restore from tier j
  starts when the link is free (``max(now, link_free[j])``) and takes
  ``LinkSpec.transfer_s(bytes, io_size_bytes=bytes per block)``; the request's
  restore time is the latest end over its links minus its admission;
- a restore *loses* when it takes longer than the prefill its hits save
  (the envelope, §10): per link in the ledger (:func:`commit`), per request
  for the step scheduler's fallback (:func:`loses`);
- with the step scheduler, how a restore overlaps compute is a policy
  (:data:`RESTORE_POLICIES`): ``layerwise`` -- layer l's KV is needed by
  layer l's attention only, so the loads of one prefill step overlap its
  compute and only ``max(0, restore left - W)`` is exposed with ``W = step
  compute x (L - 1) / L`` (LMCache's layer-wise retrieval; vLLM's KV
  connector ``wait_for_layer_load``); ``wait`` -- prefill starts when every
  block has landed (vLLM's ``WAITING_FOR_REMOTE_KVS``); ``best-effort`` --
  wait at most ``base + per_token x restored tokens``, then recompute what has
  not landed (:func:`landed_blocks`).
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["RESTORE_POLICIES", "plan", "commit", "link_restores", "loses", "landed_blocks", "exposed_s"]

#: How restores overlap compute in the step scheduler; the first is the default.
RESTORE_POLICIES = ("layerwise", "wait", "best-effort")


def plan(adm, now: float, link_free: Sequence[float], links: Sequence, block_bytes: Sequence[int],
         queue: bool = True) -> list:
    """The restores of one admission, without changing anything.

    Returns:
        one tuple per lower tier with restored blocks, tier order:
        ``(j, blocks, nbytes, begin_s, transfer_s)`` -- the transfer starts at
        ``begin_s`` (``max(now, link_free[j])``, or ``now`` when ``queue`` is
        False: sequential timing has no link queue) and ends at ``begin_s + transfer_s``.
    """
    out = []
    restored = adm.restored_blocks_per_tier
    by_tier = getattr(adm, "restored_bytes_per_tier", None)   # a hybrid hierarchy's pages differ per pool
    for j in range(1, len(restored)):
        blocks = restored[j]
        if not blocks:
            continue
        bpb = block_bytes[j]
        nbytes = blocks * bpb if by_tier is None else by_tier[j]
        bpb = bpb if by_tier is None else nbytes // blocks
        link = links[j]
        xfer = link.transfer_s(nbytes, bpb or None) if link is not None else 0.0
        begin = max(now, link_free[j]) if queue else now
        out.append((j, blocks, nbytes, begin, xfer))
    return out


def commit(restores: list, adm, now: float, link_free: list, ledger_links: list, links: Sequence, pre: list,
           base: int, queue: bool = True) -> tuple[float, int]:
    """Occupy the links for ``restores`` (:func:`plan`) and count them in the ledger.

    Per link: restores, blocks, bytes, restore time (end - now, queueing
    included), transfer time, setup, and, with a prefill table ``pre`` (row
    offset ``base``, ``pre[base + h]`` = prefill seconds with h hit blocks),
    the prefill the tier's hits save and whether the restore took longer
    (``slower_restores``).

    Returns:
        (the request's restore seconds = latest end - now, restored bytes).
    """
    worst = 0.0
    total_bytes = 0
    th = adm.hit_blocks_per_tier
    above_by_tier = [th[0]] * len(th)
    for j in range(2, len(th)):
        above_by_tier[j] = above_by_tier[j - 1] + th[j - 1]
    for j, blocks, nbytes, begin, xfer in restores:
        end = begin + xfer
        if queue:
            link_free[j] = end
        dur = end - now
        worst = max(worst, dur)
        total_bytes += nbytes
        lk = ledger_links[j]
        link = links[j]
        lk.restores += 1
        lk.restored_blocks += blocks
        lk.restored_bytes += nbytes
        lk.restore_s += dur
        lk.transfer_s += xfer
        lk.overhead_s += link.setup_s if link is not None else 0.0
        if pre:
            above = above_by_tier[j]
            full_j, rem_j = pre[base + above], pre[base + above + th[j]]
            lk.full_prefill_s += full_j
            lk.remaining_prefill_s += rem_j
            if dur > full_j - rem_j:
                lk.slower_restores += 1
                lk.slower_blocks += blocks
    return worst, total_bytes


def link_restores(adm, now: float, link_free: list, ledger_links: list, links: Sequence, block_bytes: Sequence[int],
                  pre: list, base: int, queue: bool) -> tuple[float, int]:
    """:func:`plan` then :func:`commit`: the restores of one admission as they happen."""
    return commit(plan(adm, now, link_free, links, block_bytes, queue), adm, now, link_free, ledger_links, links,
                  pre, base, queue)


def loses(restore_s: float, prefill_saved_s: float) -> bool:
    """The envelope's verdict (§10): a restore loses when it takes longer than the prefill it saves."""
    return restore_s > prefill_saved_s


def landed_blocks(blocks: int, begin_s: float, end_s: float, setup_s: float, deadline_s: float) -> int:
    """Blocks of a transfer (``begin_s`` .. ``end_s``, setup first, then the blocks at an even rate) landed by
    ``deadline_s``; whole blocks, in chain order."""
    if deadline_s >= end_s:
        return blocks
    moving = end_s - begin_s - setup_s
    if deadline_s <= begin_s + setup_s or moving <= 0:
        return 0
    return min(blocks, int(blocks * (deadline_s - begin_s - setup_s) / moving))


def exposed_s(land_s: float, step_start_s: float, step_compute_s: float, layers: int) -> float:
    """Layer-wise loading: the part of a restore a prefill step cannot hide (the seed's rule, §10).

    The step computes its L layers in turn, each taking ``step_compute_s / L``;
    the restore lands at ``land_s``; layer L - 1 (the last) can start only
    then, so the overlap window is ``W = step_compute_s x (L - 1) / L`` and the
    step is stretched by ``max(0, land_s - step_start_s - W)``.
    """
    window = step_compute_s * (layers - 1) / layers
    late = land_s - step_start_s - window
    return late if late > 0 else 0.0
