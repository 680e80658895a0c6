"""One normaliser (pcs.trace.batches.as_batches): every source kind gives the same checked batches."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from pcs.errors import PathError
from pcs.trace import DEFAULT_TRACE, RequestBatch, open_trace
from pcs.trace.batches import as_batches, ceil_blocks, reiterable

Req = namedtuple("Req", "arrival_s prompt_tokens output_tokens block_size block_hashes")
NoOutput = namedtuple("NoOutput", "arrival_s prompt_tokens block_size block_hashes")

COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens", "block_offsets", "block_hashes")


def joined(batches) -> dict:
    """The batches' columns concatenated (offsets rebased), with their first request ids and block size."""
    batches = list(batches)
    out = {c: np.concatenate([getattr(b, c) for b in batches]) for c in COLUMNS if c != "block_offsets"}
    counts = np.concatenate([np.diff(b.block_offsets) for b in batches])
    out["block_offsets"] = np.concatenate(([0], np.cumsum(counts)))
    out["first_ids"] = [b.first_request_id for b in batches]
    out["sizes"] = [len(b) for b in batches]
    out["block_size"] = {b.block_size for b in batches}
    return out


def test_hand_made_requests_become_one_batch():
    # two requests, block size 4: 9 tokens -> ceil(9/4) = 3 ids; 4 tokens -> 1 id
    reqs = [Req(0.5, 9, 2, 4, np.array([10, 11, 12], np.uint64)), Req(1.0, 4, 0, 4, np.array([10], np.uint64))]
    (b,) = list(as_batches(reqs))
    assert isinstance(b, RequestBatch) and (b.first_request_id, b.block_size, len(b)) == (0, 4, 2)
    assert b.arrival_s.dtype == np.float64 and b.arrival_s.tolist() == [0.5, 1.0]
    assert b.prompt_tokens.dtype == np.int64 and b.prompt_tokens.tolist() == [9, 4]
    assert b.output_tokens.tolist() == [2, 0]
    assert b.block_offsets.dtype == np.int64 and b.block_offsets.tolist() == [0, 3, 4]
    assert b.block_hashes.dtype == np.uint64 and b.block_hashes.tolist() == [10, 11, 12, 10]


def test_rows_split_and_number_the_batches():
    # 5 requests, 2 per batch: batches of 2, 2, 1 starting at ids 0, 2, 4; no output_tokens field -> 0
    reqs = [NoOutput(float(i), 4, 4, np.array([i], np.uint64)) for i in range(5)]
    got = joined(as_batches(reqs, rows=2))
    assert (got["sizes"], got["first_ids"]) == ([2, 2, 1], [0, 2, 4])
    assert got["output_tokens"].tolist() == [0] * 5 and got["block_hashes"].tolist() == [0, 1, 2, 3, 4]


def test_every_source_kind_gives_the_same_columns():
    trace = open_trace(DEFAULT_TRACE)
    requests = list(trace)
    kinds = {"path": str(DEFAULT_TRACE), "none": None, "trace": trace, "list": requests,
             "tuple": tuple(requests), "generator": (r for r in requests)}
    ref = joined(trace.iter_batches())
    for name, source in kinds.items():
        got = joined(as_batches(source, rows=7))
        for c in COLUMNS:
            assert got[c].dtype == ref[c].dtype and np.array_equal(got[c], ref[c]), (name, c)
        assert got["block_size"] == ref["block_size"], name
        assert got["first_ids"] == list(np.cumsum([0] + got["sizes"][:-1])), name


def test_renumbers_batches_that_do_not_start_at_the_running_id():
    class Shifted:
        def iter_batches(self):
            for b in open_trace(DEFAULT_TRACE).iter_batches():
                yield b.with_first_id(b.first_request_id + 1000)

    got = joined(as_batches(Shifted()))
    assert got["first_ids"][0] == 0 and got["first_ids"] == list(np.cumsum([0] + got["sizes"][:-1]))


def test_bad_input_errors():
    one = np.array([1], np.uint64)
    with pytest.raises(ValueError, match="one block size; got 4 and 8"):
        list(as_batches([Req(0.0, 4, 0, 4, one), Req(0.0, 8, 0, 8, one)]))
    with pytest.raises(ValueError, match="one block size; got 4 and 8"):        # across batches too
        list(as_batches([Req(0.0, 4, 0, 4, one), Req(0.0, 8, 0, 8, one)], rows=1))
    with pytest.raises(ValueError, match="request 0: field 'block_size': must be in 1..1,048,576, got 0"):
        list(as_batches([Req(0.0, 4, 0, 0, one)]))
    with pytest.raises(ValueError, match="request 0: field 'prompt_tokens': must be in 0..9,223,372,036,854,775,807"):
        list(as_batches([Req(0.0, -4, 0, 4, one)]))

    class NegativeOutput:
        def iter_batches(self):
            b = next(open_trace(DEFAULT_TRACE).iter_batches())
            yield RequestBatch(0, b.block_size, b.arrival_s, b.prompt_tokens, b.output_tokens - 10**9,
                               b.block_offsets, b.block_hashes)

    with pytest.raises(ValueError, match="token counts must be >= 0"):
        list(as_batches(NegativeOutput()))
    with pytest.raises(PathError, match=r"^trace='/nonexistent/trace.jsonl': No such file or directory$"):
        list(as_batches("/nonexistent/trace.jsonl"))


def test_reiterable():
    reqs = [Req(0.0, 4, 0, 4, np.array([1], np.uint64))]
    assert reiterable(reqs) is reqs
    assert reiterable(r for r in reqs) == reqs
    assert reiterable(str(DEFAULT_TRACE)).path == DEFAULT_TRACE
    assert reiterable(None).path == DEFAULT_TRACE


@pytest.mark.parametrize("bs, tokens, blocks", [
    # ceil(t / 512) by hand: 511 tokens fill 1 block, 513 need 2; ceil(-1 / 512) = 0, ceil(-513 / 512) = -1
    (512, [0, 1, 511, 512, 513, 1024, 1025, -1, -512, -513], [0, 1, 1, 1, 2, 2, 3, 0, -1, -1]),
    (1, [0, 7, -7], [0, 7, -7]),
    (3, [0, 1, 3, 4, -4], [0, 1, 1, 2, -1]),                   # not a power of two: the division
])
def test_ceil_blocks_by_hand(bs, tokens, blocks):
    assert ceil_blocks(np.array(tokens, np.int64), bs).tolist() == blocks


def test_ceil_blocks_equals_the_division_on_any_int64():
    # the shift for a power-of-two block size against numpy's floor division, at the int64 extremes too
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.integers(-2**63, 2**63 - 1, 20_000, dtype=np.int64, endpoint=True),
                        np.array([0, 1, -1, 2**63 - 1, -2**63, -2**63 + 1], np.int64)])
    for bs in (1, 2, 16, 512, 2**20, 2**40):
        with np.errstate(over="ignore"):
            assert np.array_equal(ceil_blocks(x, bs), -(-x // bs)), bs
