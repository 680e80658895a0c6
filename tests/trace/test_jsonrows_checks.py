"""The readers' value checks compiled (``pcs.trace._jsonrows``: ``row_checks``, ``rows_rise``) against numpy's.

``pcs.trace.jsonfast._values_checked`` and ``rows_distinct`` keep the numpy reference (``twin=None``); the compiled
twin must give the same answer, arrivals and largest timestamp: hand-worked rows first, then random columns with
every rule broken somewhere. The readers' errors for each rule (file:line:field) are in test_trace_errors.py and
test_parquet_batches.py; here, that a bad row inside an otherwise clean JSONL chunk or Parquet batch still gets them
with the twin on.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pcs import _native
from pcs.errors import InputError
from pcs.trace import jsonfast, open_trace
from pcs.trace.batches import MAX_ARRIVAL_S
from pcs.trace.hashids import MOONCAKE, ReadState

pytestmark = pytest.mark.skipif(not _native.built("jsonrows"), reason="pcs.trace._jsonrows is not built")
TWIN = _native.module("jsonrows")


def _cols(ts, il, ol, counts):
    offs = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(np.asarray(counts, dtype=np.int64), out=offs[1:])
    return (np.asarray(ts, dtype=np.float64), np.asarray(il, dtype=np.int64), np.asarray(ol, dtype=np.int64), offs)


def test_row_checks_by_hand():
    # ceil(512/512) = 1, ceil(513/512) = 2, ceil(0/512) = 0; timestamps in ms: arrivals 0, 1, 1 s
    ts, il, ol, offs = _cols([0, 1000, 1000], [512, 513, 0], [1, 1, 0], [1, 2, 0])
    arrival = np.full(3, 7.0)
    assert TWIN.row_checks(ts, il, ol, offs, 512, 1000.0, arrival) == (True, True, 1000.0, 1.0)
    assert arrival.tolist() == [0.0, 1.0, 1.0]
    # a non-power-of-two block size: ceil(7/3) = 3, ceil(6/3) = 2
    assert TWIN.row_checks(*_cols([5, 2], [7, 6], [0, 0], [3, 2]), 3, 1.0)[:2] == (True, False)
    assert TWIN.row_checks(*_cols([5], [7], [0], [2]), 3, 1.0)[0] is False
    assert TWIN.row_checks(*_cols([5], [-1], [0], [0]), 3, 1.0)[0] is False
    assert TWIN.row_checks(*_cols([5], [0], [-1], [0]), 3, 1.0)[0] is False
    assert TWIN.row_checks(*_cols([math.inf], [0], [0], [0]), 3, 1.0)[0] is False
    assert TWIN.row_checks(*_cols([math.nan], [0], [0], [0]), 3, 1.0)[0] is False
    # the largest |arrival|: -9000 ms is 9 s; no row: far 0, ts_max -inf
    assert TWIN.row_checks(*_cols([-9000, 4000], [0, 0], [0, 0], [0, 0]), 512, 1000.0)[2:] == (4000.0, 9.0)
    assert TWIN.row_checks(*_cols([], [], [], []), 512, 1000.0) == (True, True, -math.inf, 0.0)
    # the largest int64 prompt: ceil((2**63 - 1) / 512) = 2**54, no overflow in the rounding up
    assert TWIN.row_checks(*_cols([0], [2**63 - 1], [0], [0]), 512, 1.0)[0] is False
    big = np.array([0, 2**54], dtype=np.int64)
    assert TWIN.row_checks(np.zeros(1), np.array([2**63 - 1]), np.zeros(1, np.int64), big, 512, 1.0)[0] is True
    # -0.0 timestamps give +0.0 arrivals
    arrival = np.empty(1)
    TWIN.row_checks(*_cols([-0.0], [0], [0], [0]), 512, 1000.0, arrival)
    assert math.copysign(1.0, arrival[0]) == 1.0
    with pytest.raises(ValueError):
        TWIN.row_checks(*_cols([0], [0], [0], [0]), 0, 1.0)
    with pytest.raises(ValueError):   # offsets of another length
        TWIN.row_checks(np.zeros(2), np.zeros(2, np.int64), np.zeros(2, np.int64), np.zeros(2, np.int64), 1, 1.0)


@pytest.mark.parametrize("n", range(1, 11))
def test_row_checks_each_rule_at_each_row(n):
    # n rows of 512 tokens (one id each) a second apart: every rule broken at every row j (the four-row steps and
    # the rows after them), the others kept; ts in ms
    def facts(**broken):
        ts, il, ol, counts = [1000.0 * i for i in range(n)], [512] * n, [0] * n, [1] * n
        for name, (j, v) in broken.items():
            {"ts": ts, "il": il, "ol": ol, "counts": counts}[name][j] = v
        return TWIN.row_checks(*_cols(ts, il, ol, counts), 512, 1000.0, np.empty(n))

    assert facts() == (True, True, 1000.0 * (n - 1), float(n - 1))
    ts, il, ol, offs = _cols([-0.0] + [1000.0 * i for i in range(1, n)], [512] * n, [0] * n, [1] * n)
    arrival = np.empty(n)
    assert TWIN.row_checks(ts, il, ol, offs, 512, 1000.0, arrival)[:2] == (True, True)
    assert not np.signbit(arrival).any() and arrival.tolist() == [float(i) for i in range(n)]   # -0.0 ms: +0.0 s
    for j in range(n):
        for bad in ({"ts": (j, math.nan)}, {"ts": (j, -math.inf)}, {"il": (j, -1)}, {"ol": (j, -1)},
                    {"il": (j, 513)}, {"counts": (j, 2)}):
            assert facts(**bad)[0] is False, (j, bad)
        if j:
            assert facts(ts=(j, 1000.0 * j - 1500.0))[:2] == (True, False), j
        assert facts(ts=(j, -5e9))[3] == 5e6, j   # the largest |arrival| at any row: -5e9 ms is 5e6 s


def test_rows_rise_by_hand():
    u = lambda v: np.array(v, dtype=np.uint64)   # noqa: E731
    o = lambda v: np.array(v, dtype=np.int64)    # noqa: E731
    assert TWIN.rows_rise(u([1, 2, 3, 4, 5, 6]), o([0, 6]))
    assert not TWIN.rows_rise(u([1, 2, 3, 4, 6, 5]), o([0, 6]))        # the last pair: the row's last step
    assert not TWIN.rows_rise(u([1, 2, 2, 4, 5, 6, 7, 8, 9]), o([0, 9]))  # the first step
    assert not TWIN.rows_rise(u([1, 2, 3, 4, 5, 6, 7, 8, 8]), o([0, 9]))  # the overlapping last step
    assert TWIN.rows_rise(u([5, 1, 2, 0]), o([0, 1, 3, 3, 4]))         # drops at row starts (one row empty)
    assert not TWIN.rows_rise(u([5, 1, 1]), o([0, 1, 3]))
    assert TWIN.rows_rise(u([2**63 - 1, 2**63, 2**64 - 1]), o([0, 3]))  # the unsigned order
    assert not TWIN.rows_rise(u([2**63, 1]), o([0, 2]))
    # rows of five ids or more (four pairs a step) across 2**63: rising in the unsigned order, not in the signed one
    assert TWIN.rows_rise(u([1, 2, 3, 4, 5, 2**63, 2**63 + 1]), o([0, 7]))
    assert not TWIN.rows_rise(u([2**63, 1, 2, 3, 4, 5]), o([0, 6]))            # only the row's first id is high
    assert not TWIN.rows_rise(u([7, 8, 9, 10, 11, 12, 2**63 + 9, 13]), o([0, 8]))
    # an id >= 2**63 in the first step of a run of ten: the run's first id, or among the step's last four
    assert not TWIN.rows_rise(u([2**63] + list(range(1, 10))), o([0, 10]))
    assert TWIN.rows_rise(u([1, 2, 3, 4, 5, 6, 2**63, 2**63 + 1, 2**63 + 2, 2**63 + 3]), o([0, 10]))
    # the ids as one run (eight pairs a step): drops at row starts only, one inside a row at each place
    run = list(range(10, 30)) + list(range(5, 25))
    assert TWIN.rows_rise(u(run), o([0, 0, 20, 20, 40, 40]))
    for j in range(1, 40):
        if j != 20:
            bad = list(run)
            bad[j] = bad[j - 1]
            assert not TWIN.rows_rise(u(bad), o([0, 0, 20, 20, 40, 40])), j
    assert TWIN.rows_rise(u([]), o([0]))
    with pytest.raises(ValueError):
        TWIN.rows_rise(u([1, 2]), o([0, 3]))


@pytest.mark.parametrize("seed", range(40))
def test_row_checks_equal_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    bs = int(rng.choice([1, 3, 16, 512, 1000]))
    il = rng.integers(0, 5000, n)
    ts = np.sort(rng.integers(0, 10**6, n)).astype(np.float64)
    ol = rng.integers(0, 500, n)
    counts = -(-il // bs)
    for _ in range(int(rng.integers(0, 3))):      # break a rule (or two) in a random row
        if not n:
            break
        i, k = int(rng.integers(n)), int(rng.integers(8))
        if k == 0:
            ts[i] = rng.choice([math.nan, math.inf, -math.inf])
        elif k == 1:
            il[i] = -int(rng.integers(1, 9))
        elif k == 2:
            ol[i] = -1
        elif k == 3:
            counts[i] += int(rng.choice([-1, 1]))
        elif k == 4 and i:
            ts[i] = ts[i - 1] - float(rng.choice([1, 0.5]))
        elif k == 5:
            ts[i] = float(rng.choice([1, -1])) * (MAX_ARRIVAL_S * 1000.0 + 1000.0)
        elif k == 6:
            ts[i] = -0.0
    ts_c, il_c, ol_c, offs = _cols(ts, il, ol, np.maximum(counts, 0))
    spec = MOONCAKE
    for last, order in ((-math.inf, True), (float(ts[0]) + 1 if n else 0.0, True), (math.inf, False)):
        want = jsonfast._values_checked(spec, bs, ReadState(last_ts=last, check_order=order), ts_c, il_c, ol_c, offs)
        got = jsonfast._values_checked(spec, bs, ReadState(last_ts=last, check_order=order), ts_c, il_c, ol_c, offs,
                                       TWIN)
        assert (want is None) == (got is None)
        if want is not None:
            assert got[1] == want[1] and np.array_equal(got[0], want[0])
            assert np.array_equal(np.signbit(got[0]), np.signbit(want[0]))


@pytest.mark.parametrize("seed", range(60))
def test_rows_rise_equals_numpy(seed):
    rng = np.random.default_rng(seed)
    # rows of 0 to 13 ids, each sorted and distinct: across the whole unsigned range (above 2**63 too) for even
    # seeds, below 2**40 for odd ones (the ids as one run, compared signed)
    top = 2**64 - 1 if seed % 2 == 0 else 2**40
    rows = [np.unique(rng.integers(0, top, int(c), dtype=np.uint64, endpoint=True))
            for c in rng.integers(0, 14, int(rng.integers(1, 30)))]
    counts = np.array([r.size for r in rows], dtype=np.int64)
    hashes = np.concatenate(rows + [np.zeros(0, np.uint64)])
    offs = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offs[1:])
    if hashes.size > 1 and rng.random() < 0.7:   # one pair out of order (or equal), somewhere
        j = int(rng.integers(1, hashes.size))
        hashes[j] = hashes[j - 1] - np.uint64(rng.integers(0, 2))
    want = jsonfast.rows_distinct(hashes, offs)
    assert jsonfast.rows_distinct(hashes, offs, TWIN) == want
    # the shortcut itself: every row rises
    rises = all((np.diff(hashes[offs[r]:offs[r + 1]].astype(object)) > 0).all() for r in range(counts.size))
    assert TWIN.rows_rise(hashes, offs) == rises


def _line(ts, n_tokens, first, ids=None):
    ids = list(range(first, first + math.ceil(n_tokens / 512))) if ids is None else ids
    return json.dumps({"timestamp": ts, "input_length": n_tokens, "output_length": 5, "hash_ids": ids})


# (bad row at line 40 of 60 clean rows, field, words): each rule the compiled checks answer for a JSONL chunk
BAD = [
    (_line(39_000, 600, 10**6, [10**6, 10**6 + 1, 10**6 + 2]), "hash_ids", "ceil(600 / block size 512) = 2"),
    (_line(39_000, -3, 10**6, []), "input_length", "must be >= 0"),
    (json.dumps({"timestamp": 39_000, "input_length": 600, "output_length": -2, "hash_ids": [7, 8]}),
     "output_length", "must be >= 0"),
    (_line(1_000, 600, 10**6), "timestamp", "decreases"),
    (_line((2**32 + 1) * 1000, 600, 10**6), "timestamp", "beyond +-2**32 s"),
    (_line(39_000, 1100, 10**6, [9, 4, 9]), "hash_ids", "repeated at positions 0 and 2"),
]


@pytest.mark.parametrize("bad,field,words", BAD, ids=[b[1] + str(i) for i, b in enumerate(BAD)])
def test_a_bad_row_in_a_clean_chunk_names_its_line(tmp_path, monkeypatch, bad, field, words):
    monkeypatch.setenv("PCS_NATIVE", "c")
    lines = [_line(1000 * i, 600 + i, 100 * i) for i in range(60)]
    lines[39] = bad
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        list(open_trace(p, format="mooncake"))
    assert (e.value.line, e.value.field) == (40, field) and words in str(e.value)


def test_a_bad_row_in_a_clean_parquet_batch_names_its_row(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pcs.trace.parquet import arrow_schema

    monkeypatch.setenv("PCS_NATIVE", "c")
    schema = arrow_schema(block_size=4)
    n = 50
    ids = [[10 * i, 10 * i + 1] for i in range(n)]
    base = {"arrival_s": [float(i) for i in range(n)], "prompt_tokens": [8] * n, "output_tokens": [1] * n}
    for col, value, field, words in (("arrival_s", 0.5, "arrival_s", "decreases"),
                                     ("prompt_tokens", 9, "block_hashes", "ceil(9 / block size 4) = 3"),
                                     ("output_tokens", -1, "output_tokens", "must be >= 0"),
                                     ("arrival_s", math.inf, "arrival_s", "finite"),
                                     ("block_hashes", [5, 5], "block_hashes", "repeated")):
        cols = {k: list(v) for k, v in base.items()}
        cols["block_hashes"] = [list(x) for x in ids]
        cols[col][30] = value
        tbl = pa.table({**cols, "block_hashes": pa.array(cols["block_hashes"], pa.list_(pa.uint64()))}).cast(schema)
        p = tmp_path / f"{col}.parquet"
        pq.write_table(tbl, p)
        with pytest.raises(InputError) as e:
            list(open_trace(p))
        assert (e.value.line, e.value.field) == (31, field) and words in str(e.value), str(e.value)
        t = open_trace(p, on_error="skip")
        assert len(list(t)) == n - 1 and t.skipped == 1
    clean = pa.table({**base, "block_hashes": pa.array(ids, pa.list_(pa.uint64()))}).cast(schema)
    pq.write_table(clean, tmp_path / "clean.parquet")
    assert [r.arrival_s for r in open_trace(tmp_path / "clean.parquet")] == [float(i) for i in range(n)]
