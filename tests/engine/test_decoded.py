"""One decode per replay (:class:`pcs.engine.decoded.Decoded`) and the step scheduler's tables without decode times."""
from __future__ import annotations

import numpy as np

from helpers import req
from pcs.compute import ComputeModel
from pcs.engine.decoded import Decoded
from pcs.engine.timing import TimeModel
from pcs.hardware import get_gpu
from pcs.model import get_model
from pcs.trace.batches import as_batches


def test_decoded_reads_the_source_once_and_replays_its_batches():
    reads = []

    def once():                       # a one-shot source: a second read would see nothing
        reads.append(1)
        yield from [req([1, 2], 0.0, out=3), req([1, 2, 3], 1.0, out=0), req([7], 2.0, prompt=3)]

    d = Decoded(once())
    first, second = list(as_batches(d)), list(as_batches(d))
    assert len(reads) == 1 and len(first) == len(second) == 1
    assert first[0] is second[0]
    b = first[0]
    # 3 requests, 2 + 3 + 1 ids, block size 4 (helpers.req)
    assert (d.block_size, d.num_block_hashes) == (4, 6)
    assert b.block_hashes.tolist() == [1, 2, 1, 2, 3, 7] and b.prompt_tokens.tolist() == [8, 12, 3]


def test_tables_without_decode_keep_the_prefill_table():
    tm = TimeModel(ComputeModel(get_model("llama-3.1-8b"), get_gpu("h100-sxm"), block_size=16))
    p, o, cap = np.array([40, 16, 5]), np.array([3, 0, 9]), np.array([2, 0, 0])
    pre, off, dec = tm.tables(p, o, cap, 16)
    pre2, off2, dec2 = tm.tables(p, o, cap, 16, decode=False)
    # rows hold cap + 1 entries: 3 + 1 + 1
    assert off == off2 == [0, 3, 4, 5] and pre == pre2 and dec2 == [] and len(dec) == 3


def _reference_table(compute, p, cap, bs):
    """The prefill table entry by entry through the checked ``prefill_s`` on Python ints (the reference)."""
    return [float(compute.prefill_s(P - min(h * bs, P), min(h * bs, P))) for P, c in zip(p, cap) for h in range(c + 1)]


def test_prefill_table_from_counts_equals_prefill_s_entry_by_entry():
    # models with one full-attention component, sliding windows + full (gemma-3), MLA (deepseek), hybrid (gpt-oss)
    rng = np.random.default_rng(7)
    p = rng.integers(1, 200_000, 120)
    p[:3] = [1, 16, 17]                                  # one token, exactly one block, one block and a token
    cap = np.minimum((p - 1) // 16, rng.integers(0, 40, 120))   # rows of up to 40 entries: a quick reference
    cap[3:6] = (p[3:6] - 1) // 16                        # and three whole rows
    for name in ("llama-3.1-8b", "gemma-3-27b", "deepseek-v3", "gpt-oss-120b"):
        tm = TimeModel(ComputeModel(get_model(name), get_gpu("h100-sxm"), block_size=16))
        pre, off, _ = tm.tables(p, np.zeros_like(p), cap, 16, decode=False, arrays=True)
        assert pre.tolist() == _reference_table(tm.compute, p.tolist(), cap.tolist(), 16), name


def test_prefill_table_keeps_a_subclass_prefill_s():
    # a compute model overriding prefill_s is called, not bypassed: every entry is its 1.0
    class Flat(ComputeModel):
        def prefill_s(self, new_tokens, cached_tokens=0):
            return np.ones(np.broadcast(np.asarray(new_tokens), np.asarray(cached_tokens)).shape)

    tm = TimeModel(Flat(get_model("llama-3.1-8b"), get_gpu("h100-sxm"), block_size=16))
    pre, off, _ = tm.tables(np.array([40, 5]), np.array([1, 1]), np.array([2, 0]), 16, decode=False, arrays=True)
    assert pre.tolist() == [1.0, 1.0, 1.0, 1.0] and off.tolist() == [0, 3, 4]


def test_prefill_s_of_counts_hand_computed():
    # llama-3.1-8b, one H100 (989.4 TFLOP/s dense BF16) at 0.5: 1 new token after 0 cached is
    # (2 x 8,030,261,248 + 524,288) FLOPs (tests/analysis/test_compute.py)
    cm = ComputeModel(get_model("llama-3.1-8b"), get_gpu("h100-sxm"))
    got = cm.prefill_s_of_counts(np.array([1.0]), np.array([0.0]))
    assert got.tolist() == [16_061_046_784 / (989.4e12 * 0.5)]


class _Batches:
    """A source of ready batches (``iter_batches``), as a reader yields them."""

    def __init__(self, batches):
        self.batches = batches

    def iter_batches(self):
        return iter(self.batches)


def test_decoded_joins_small_batches_in_order(monkeypatch):
    from pcs.engine import decoded
    from pcs.trace.request import RequestBatch

    # batches of 2, 2, 2, 3 and 1 requests, request k holding the ids (2k, 2k + 1); joined up to 4 requests:
    # 2 + 2 = 4, then 2 (2 + 3 > 4), then 3 + 1 = 4 -> batches of 4, 2, 4 requests starting at requests 0, 4, 6
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 4)
    sizes, parts, k = [2, 2, 2, 3, 1], [], 0
    for n in sizes:
        ids = np.arange(2 * k, 2 * (k + n), dtype=np.uint64)
        parts.append(RequestBatch(0, 4, np.arange(k, k + n, dtype=np.float64), np.full(n, 8), np.zeros(n, np.int64),
                                  np.arange(0, 2 * n + 1, 2, dtype=np.int64), ids))
        k += n
    d = Decoded(_Batches(parts))
    assert [len(b) for b in d.batches] == [4, 2, 4]
    assert [b.first_request_id for b in d.batches] == [0, 4, 6]
    assert d.batches[2].block_offsets.tolist() == [0, 2, 4, 6, 8]
    assert np.concatenate([b.block_hashes for b in d.batches]).tolist() == list(range(20))
    assert np.concatenate([b.arrival_s for b in d.batches]).tolist() == list(range(10))
    assert d.num_block_hashes == 20


def test_the_first_joined_batch_is_capped_apart(monkeypatch):
    # seven batches of one request, joined up to 4 requests but the first joined batch up to 2
    # (FIRST_MERGE_REQUESTS): 1 + 1 = 2, then 1 + 1 + 1 + 1 = 4, then the last 1 -> 2, 4, 1 requests from 0, 2, 6;
    # a first batch read larger than the first cap (3 requests) stays whole, the next ones joined up to 4
    from pcs.engine import decoded
    from pcs.trace.request import RequestBatch

    def batch(k: int, n: int) -> RequestBatch:
        return RequestBatch(k, 4, np.arange(k, k + n, dtype=np.float64), np.full(n, 8), np.zeros(n, np.int64),
                            np.arange(0, 2 * n + 1, 2, dtype=np.int64), np.arange(2 * k, 2 * (k + n), dtype=np.uint64))

    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 4)
    monkeypatch.setattr(decoded, "FIRST_MERGE_REQUESTS", 2)
    d = Decoded(_Batches([batch(k, 1) for k in range(7)]))
    assert [len(b) for b in d.batches] == [2, 4, 1]
    assert [b.first_request_id for b in d.batches] == [0, 2, 6]
    assert np.concatenate([b.block_hashes for b in d.batches]).tolist() == list(range(14))
    d = Decoded(_Batches([batch(0, 3), batch(3, 1), batch(4, 1), batch(5, 2)]))
    assert [len(b) for b in d.batches] == [3, 4]


def test_joined_batches_replay_as_the_chunks_read(monkeypatch):
    # the bundled sample read in ~4 KB chunks (several batches): the same summary and per-request table whether
    # Decoded joins them (the default) or keeps every chunk (MERGE_REQUESTS 1)
    import pcs
    from pcs.engine import decoded
    from pcs.trace import source

    monkeypatch.setattr(source, "CHUNK_BYTES", 4096)
    kw = dict(tiers=["gpu=300blocks", "cpu=1200blocks"], policy="lru")
    joined = pcs.replay(None, **kw)
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 1)
    assert len(Decoded(None).batches) > 2
    apart = pcs.replay(None, **kw)
    assert joined.summary == apart.summary
    assert joined.requests.equals(apart.requests)
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 1 << 16)      # a first joined batch of a few chunks, the rest
    monkeypatch.setattr(decoded, "FIRST_MERGE_REQUESTS", 8)      # joined after it
    assert len(Decoded(None).batches) == 2
    capped = pcs.replay(None, **kw)
    assert joined.summary == capped.summary
    assert joined.requests.equals(capped.requests)
