"""Modeled timing, traced by hand: concurrency misses, FIFO waits, truncation, links."""
from __future__ import annotations

import math

import pytest

from pcs.blocks import BlockRules
from pcs.engine.chunks import iter_chunks, rule_columns
from helpers import LinearCompute, req, run

import numpy as np


def test_prefix_still_being_computed_is_a_miss():
    # prefill 1 ms per new token, 4-token blocks, no output. A: 8 tokens -> TTFT 8 ms.
    reqs = [req([1, 2], t=0.0), req([1, 2], t=0.001), req([1, 2], t=0.009)]
    res, _ = run(reqs, [100], timing="modeled", compute=LinearCompute())
    # B arrives at 1 ms, A's blocks become cached at 8 ms: B misses both and computes them too.
    # C arrives at 9 ms: hits both (no last-token cap in these rules): prefill of 0 tokens.
    assert list(res.columns["hit_blocks"]) == [0, 0, 2]
    assert list(res.columns["ttft_s"]) == pytest.approx([0.008, 0.008, 0.0])
    # the same stream in sequential timing: B and C hit
    seq, _ = run(reqs, [100], timing="sequential", compute=LinearCompute())
    assert list(seq.columns["hit_blocks"]) == [0, 2, 2]


def test_fifo_wait_for_kv_space_and_head_of_line():
    # GPU of 3 blocks. A: ids [1,2], 8 prompt + 4 output tokens -> ceil(12/4) = 3 slots (2 prompt + 1 extra).
    #   TTFT 8 ms, decode 4 x 10 ms -> finishes at 48 ms.
    # B at 1 ms: [3], needs 1 slot; none free, nothing evictable (A pins 2, reserves 1): waits to 48 ms.
    # C at 2 ms: [1] would fit with 0 new slots, but waits behind B (FIFO).
    # At 48 ms A releases tail first (2 then 1, LRU..MRU = 2, 1); B takes 1 slot: free is 1 (the
    #   extra slot) -> no eviction; then C hits block 1 (0 new slots).
    reqs = [req([1, 2], t=0.0, out=4), req([3], t=0.001), req([1], t=0.002)]
    res, h = run(reqs, [3], timing="modeled", compute=LinearCompute())
    c = res.columns
    assert list(c["wait_s"]) == pytest.approx([0.0, 0.047, 0.046])
    assert list(c["hit_blocks"]) == [0, 0, 1]
    assert list(c["ttft_s"]) == pytest.approx([0.008, 0.047 + 0.004, 0.046 + 0.0])
    assert list(c["finish_s"]) == pytest.approx([0.048, 0.052, 0.048])
    assert res.ledger.requests_waited == 2
    assert res.ledger.peak_reserved_blocks == 3


def test_request_larger_than_gpu_caches_its_head_never_hangs():
    reqs = [req([1, 2, 3, 4, 5], out=3), req([1, 2, 3, 4, 5])]
    for timing in ("sequential", "modeled"):
        res, h = run(reqs, [2], timing=timing, compute=LinearCompute())
        assert res.ledger.requests_truncated == 2
        assert list(res.columns["hit_blocks"]) == [0, 2], timing   # the head (ids 1, 2) was cached
        assert set(h.tiers[0].resident) == {1, 2}


def test_restore_on_a_fifo_link_queues():
    class Link:
        name, setup_s = "test", 0.001

        def transfer_s(self, nbytes, io):
            return self.setup_s + nbytes / 1000.0      # 1000 B/s

    # GPU 1 block, CPU 10 blocks, 100 B per CPU block. Prefill free (a = 0).
    # t=0: A [1] computed; t=1: B [2] evicts 1 to CPU; t=2: C [1] restores 1 block: 1 ms + 0.1 s;
    # t=2: D [1]... D arrives at 2.0 too: C pinned block 1 in the GPU, so D hits it in the GPU tier.
    # t=2: E [2] restores 2 from the CPU; but the GPU (1 block) is pinned by C and D: E waits until C and
    #   D finish (at 2.101, TTFT = restore), then restores over the link, free again by then.
    reqs = [req([1], t=0), req([2], t=1), req([1], t=2), req([1], t=2), req([2], t=2)]
    res, _ = run(reqs, [1, 10], timing="modeled", compute=LinearCompute(a=0.0, d=0.0),
                 block_bytes=[1000, 100], links=[None, Link()])
    c = res.columns
    assert list(c["hit_tokens_cpu"]) == [0, 0, 4, 0, 4]
    assert list(c["hit_tokens_gpu"]) == [0, 0, 0, 4, 0]
    assert list(c["restore_s"]) == pytest.approx([0, 0, 0.101, 0, 0.101])
    assert list(c["wait_s"]) == pytest.approx([0, 0, 0, 0, 0.101])
    assert res.ledger.links[1].restored_bytes == 200


def test_rule_columns_match_block_rules():
    rng = np.random.default_rng(0)
    p = rng.integers(0, 3000, 500)
    bs = 512
    nh = -(-p // bs) + rng.integers(0, 2, 500)          # sometimes one id more than the tokens need
    out = rng.integers(0, 900, 500)
    for rules in (BlockRules(), BlockRules(True, True), BlockRules(False, False), BlockRules(True, False)):
        n, cap, extra = rule_columns(p, nh, out, bs, rules)
        for i in range(500):
            assert n[i] == rules.cacheable_blocks(int(p[i]), int(nh[i]), bs)
            assert cap[i] == rules.max_hit_blocks(int(p[i]), int(nh[i]), bs)
            assert extra[i] == max(0, math.ceil((p[i] + out[i]) / bs) - n[i])


def test_mixed_block_sizes_are_rejected():
    with pytest.raises(ValueError, match="block size"):
        list(iter_chunks([req([1], bs=4), req([2], bs=8)], BlockRules()))


def test_two_restores_at_once_queue_on_the_link():
    class Link:
        name, setup_s = "test", 0.001

        def transfer_s(self, nbytes, io):
            return self.setup_s + nbytes / 1000.0      # 1000 B/s

    # GPU 2 blocks, CPU 10, 100 B per CPU block, free prefill.
    # t=0: A [1], B [2] computed. t=1: C [3,4] evicts 2 then... both (1, 2) to the CPU.
    # t=2: D [1] restores over the idle link: 1 ms + 0.1 s = 0.101 s.
    # t=2: E [2] restores too; the link is busy until 2.101: ends at 2.202 -> restore_s 0.202 (0.101 queueing).
    reqs = [req([1], t=0), req([2], t=0), req([3, 4], t=1), req([1], t=2), req([2], t=2)]
    res, _ = run(reqs, [2, 10], timing="modeled", compute=LinearCompute(a=0.0, d=0.0),
                 block_bytes=[1000, 100], links=[None, Link()])
    assert list(res.columns["restore_s"]) == pytest.approx([0, 0, 0, 0.101, 0.202])
    lk = res.ledger.links[1]
    assert lk.restores == 2 and lk.transfer_s == pytest.approx(0.202)
    assert lk.restore_s - lk.transfer_s == pytest.approx(0.101)    # the queueing


@pytest.mark.parametrize("timing", ["sequential", "modeled"])
def test_row_buffer_flushed_between_chunks_keeps_every_column(monkeypatch, timing):
    # The engine buffers per-request rows flat and moves them into the typed columns once
    # `flush_rows` requests are buffered (checked after each chunk). Flushing after every chunk
    # (flush_rows = 1, chunks of 7 requests) must give the same columns, in the same order, as one
    # flush at close (flush_rows larger than the trace): the flush only moves rows, it never
    # reorders or drops them.
    from helpers import stress_trace
    from pcs.engine.engine import ReplayEngine

    reqs = stress_trace(7, 60)
    monkeypatch.setattr(ReplayEngine, "flush_rows", 10**9)
    one, _ = run(reqs, [6, 12], timing=timing, rules=BlockRules(4))
    monkeypatch.setattr(ReplayEngine, "flush_rows", 1)
    monkeypatch.setattr("pcs.trace.batches.BATCH_REQUESTS", 7)
    monkeypatch.setattr("pcs.trace.batches.as_batches.__defaults__", (None, None, 7, False, False, False))
    flushes = []
    real_flush = ReplayEngine._flush
    monkeypatch.setattr(ReplayEngine, "_flush", lambda self: (flushes.append(len(self._rows)), real_flush(self)))
    many, _ = run(reqs, [6, 12], timing=timing, rules=BlockRules(4))
    assert len(flushes) >= 60 // 7   # 9 chunks of <= 7 requests: a flush after every chunk, then at close
    assert len(one.columns["hit_blocks"]) == 60
    for name in one.columns:
        assert list(many.columns[name]) == list(one.columns[name]) or (
            name.endswith("_s") and all(math.isnan(a) and math.isnan(b) or a == b
                                        for a, b in zip(many.columns[name], one.columns[name]))), name
