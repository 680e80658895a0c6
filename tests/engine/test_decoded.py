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
    assert (d.block_size, d.num_block_ids) == (4, 6)
    assert b.block_hashes.tolist() == [1, 2, 1, 2, 3, 7] and b.prompt_tokens.tolist() == [8, 12, 3]


def test_tables_without_decode_keep_the_prefill_table():
    tm = TimeModel(ComputeModel(get_model("llama-3.1-8b"), get_gpu("h100-sxm"), block_size=16))
    p, o, cap = np.array([40, 16, 5]), np.array([3, 0, 9]), np.array([2, 0, 0])
    pre, off, dec = tm.tables(p, o, cap, 16)
    pre2, off2, dec2 = tm.tables(p, o, cap, 16, decode=False)
    # rows hold cap + 1 entries: 3 + 1 + 1
    assert off == off2 == [0, 3, 4, 5] and pre == pre2 and dec2 == [] and len(dec) == 3
