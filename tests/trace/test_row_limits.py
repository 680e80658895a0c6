"""A run's row bounds checked at the read (pcs/trace/rowlimits.py, docs/semantics.md §9 "Bounds").

The step scheduler models output lengths below 2**62 tokens; ``--timing sequential`` and ``--compute infinite`` take
any int64. Before, a longer one passed the reader and the scheduler refused it with "an output length of ... tokens
is past what the step scheduler models (2**62)": no file, line or field, and ``--on-error skip`` did not skip it.
Now a step-timed run hands the reader its bound: the row is refused as ``FILE:LINE: field 'output_length': ...``
(Parquet: the 1-based row, ``output_tokens``) or skipped and counted, on every read path (the authority, pyarrow,
simdjson, the compiled twin), and runs that count no steps still read it.

Worked by hand: 2**62 = 4,611,686,018,427,387,904; 2**63 - 1 = 9,223,372,036,854,775,807.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import pcs
from pcs import _native
from pcs.errors import InputError
from pcs.trace import jsonfast, open_trace
from pcs.trace.hashids import MOONCAKE, ReadState, read_hashid_jsonl
from pcs.trace.rowlimits import NO_LIMITS, STEP_LIMITS, RowLimits
from pcs.trace.stats import trace_stats
from tests.helpers import assert_one_line_error, invoke

LIMIT = 4611686018427387904          # 2**62, written out
TOP = 9223372036854775807            # 2**63 - 1
WHY = ("tokens is past what the step scheduler models (an output length below 2**62 = 4,611,686,018,427,387,904 "
       "tokens; docs/semantics.md §9)")
PATHS = [False, "pyarrow", "simdjson"] + (["native"] if _native.built("jsonrows") else [])


def _line(i: int, out: int = 5) -> str:
    # row i: 600 tokens at 512-token blocks = 2 ids, its own (2i, 2i + 1); i seconds (ms timestamps)
    return json.dumps({"timestamp": 1000 * i, "input_length": 600, "output_length": out, "hash_ids": [2 * i, 2 * i + 1]})


def _trace(tmp_path, bad_at: int, out: int, n: int = 60):
    """``n`` clean rows (enough for the shortcut parsers to take the chunk), line ``bad_at`` (1-based) with output
    length ``out``."""
    p = tmp_path / "o.jsonl"
    p.write_text("".join(_line(i, out if i + 1 == bad_at else 5) + "\n" for i in range(n)))
    return p


def _read(path, fast, limits, on_error="raise"):
    state = ReadState(limits=limits)
    rows = [o for b in read_hashid_jsonl(path, "o.jsonl", MOONCAKE, None, state, on_error, fast=fast)
            for o in b.output_tokens.tolist()]
    return rows, state


@pytest.mark.parametrize("fast", PATHS)
@pytest.mark.parametrize("out", [LIMIT, LIMIT + 1, TOP])
def test_step_bound_refused_at_the_read_naming_line_and_field(tmp_path, fast, out):
    p = _trace(tmp_path, 40, out)
    with pytest.raises(InputError) as ei:
        _read(p, fast, STEP_LIMITS)
    e = ei.value
    assert (e.path, e.line, e.field) == ("o.jsonl", 40, "output_length")
    assert str(e).startswith(f"o.jsonl:40: field 'output_length': {out:,} {WHY}")


@pytest.mark.parametrize("fast", PATHS)
def test_step_bound_skipped_and_counted(tmp_path, fast):
    p = _trace(tmp_path, 40, TOP)
    rows, state = _read(p, fast, STEP_LIMITS, on_error="skip")
    assert rows == [5] * 59 and state.skipped == 1
    assert (state.first_skipped.line, state.first_skipped.field) == (40, "output_length")


@pytest.mark.parametrize("fast", PATHS)
def test_just_below_the_bound_and_no_bound_are_read(tmp_path, fast):
    p = _trace(tmp_path, 40, LIMIT - 1)
    assert _read(p, fast, STEP_LIMITS)[0][39] == LIMIT - 1
    p = _trace(tmp_path, 40, TOP)
    assert _read(p, fast, NO_LIMITS)[0][39] == TOP       # the reader's own rule: any int64 >= 0


def test_row_checks_bound_by_hand():
    if not _native.built("jsonrows"):
        pytest.skip("pcs.trace._jsonrows is not built")
    twin = _native.module("jsonrows")
    for n in range(1, 11):                               # the four-row steps and the rows after them
        for j in range(n):
            ts, il, offs = np.arange(n, dtype=np.float64), np.zeros(n, np.int64), np.zeros(n + 1, np.int64)
            for v, ok in ((LIMIT - 1, True), (LIMIT, False), (TOP, False), (-1, False), (0, True)):
                ol = np.zeros(n, np.int64)
                ol[j] = v
                assert twin.row_checks(ts, il, ol, offs, 512, 1.0, None, LIMIT)[0] is ok, (n, j, v)
            ol = np.zeros(n, np.int64)
            ol[j] = TOP
            assert twin.row_checks(ts, il, ol, offs, 512, 1.0)[0] is True       # the default: 2**63, no bound
            assert twin.row_checks(ts, il, ol, offs, 3, 1.0, None, 2**63)[0] is True   # bs 3: the scalar loop
            assert twin.row_checks(ts, il, ol, offs, 3, 1.0, None, TOP)[0] is False
    one = (np.zeros(1), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(2, np.int64), 512, 1.0, None)
    for bad in (0, 2**63 + 1):
        with pytest.raises(ValueError):
            twin.row_checks(*one, bad)


@pytest.mark.parametrize("seed", range(30))
def test_bound_check_twin_equals_numpy(seed):
    if not _native.built("jsonrows"):
        pytest.skip("pcs.trace._jsonrows is not built")
    twin = _native.module("jsonrows")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    below = int(rng.choice([1, 7, LIMIT, 2**63]))
    ol = rng.integers(0, 10, n).astype(np.int64)
    for i in rng.integers(0, n, int(rng.integers(0, 3))):
        ol[i] = int(rng.choice([below - 1, min(below, TOP), TOP, -1, 0]))
    ts, il, offs = np.arange(n, dtype=np.float64), np.zeros(n, np.int64), np.zeros(n + 1, np.int64)
    state = ReadState(limits=RowLimits(below))
    want = jsonfast._values_checked(MOONCAKE, 512, state, ts, il, ol, offs)
    got = jsonfast._values_checked(MOONCAKE, 512, state, ts, il, ol, offs, twin)
    assert (want is None) == (got is None) == (not all(0 <= v < below for v in ol.tolist()))


def _parquet(tmp_path, out):
    p = _trace(tmp_path, 2, out, n=3)
    q = tmp_path / "o.parquet"
    r = invoke("trace", "convert", p, q, "-q")
    assert r.exit_code == 0, r.output
    return q


def test_parquet_row_refused_and_skipped(tmp_path):
    q = _parquet(tmp_path, TOP)
    t = open_trace(q).limited(STEP_LIMITS)
    with pytest.raises(InputError) as ei:
        list(t.iter_batches())
    e = ei.value
    assert (e.path.endswith("/o.parquet"), e.line, e.field) == (True, 2, "output_tokens")   # row 2, the column
    assert e.problem.startswith(f"{TOP:,} {WHY}")
    t = open_trace(q, on_error="skip")
    rows = [o for b in t.limited(STEP_LIMITS).iter_batches() for o in b.output_tokens.tolist()]
    assert rows == [5, 5] and t.skipped == 1        # counted on the trace the view was made of
    assert [o for b in t.iter_batches() for o in b.output_tokens.tolist()] == [5, TOP, 5]   # unchanged itself


def test_token_trace_row_refused(tmp_path):
    p = tmp_path / "k.jsonl"
    p.write_text('{"timestamp": 0, "token_ids": [1, 2, 3], "output_length": 10}\n'
                 f'{{"timestamp": 5, "token_ids": [1, 2, 4], "output_length": {LIMIT}}}\n')
    with pytest.raises(InputError) as ei:
        list(open_trace(p, block_size=2).limited(STEP_LIMITS).iter_batches())
    e = ei.value
    assert (e.path.endswith("/k.jsonl"), e.line, e.field) == (True, 2, "output_length")
    assert e.problem.startswith(f"{LIMIT:,} {WHY}")


@pytest.mark.parametrize("name", ["o.jsonl", "o.parquet"])
def test_cli_replay_names_file_line_field_and_skips(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    path = _parquet(tmp_path, TOP) if name.endswith("parquet") else _trace(tmp_path, 2, TOP, n=3)
    field = "output_tokens" if name.endswith("parquet") else "output_length"
    for extra in ([], ["--instances", "2"]):
        r = invoke("replay", path.name, "--tier", "gpu=100blocks", *extra)
        assert_one_line_error(r, f"pcs: error: {name}:2: field '{field}': {TOP:,} tokens is past what the step "
                              "scheduler models", "use --compute infinite or --timing sequential")
        r = invoke("replay", path.name, "--tier", "gpu=100blocks", "--on-error", "skip", "--format", "json", "-q",
                   *extra)
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["requests"] == 2
    r = invoke("compare", path.name, "--tier", "gpu=100blocks", "--policy", "lru", "--policy", "fifo")
    assert_one_line_error(r, f"pcs: error: {name}:2: field '{field}': {TOP:,} tokens is past what the step scheduler")
    for other in (["--timing", "sequential"], ["--compute", "infinite"]):   # no steps: the row is read
        r = invoke("replay", path.name, "--tier", "gpu=100blocks", "--format", "json", "-q", *other)
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["requests"] == 3


def test_api_replay_leaves_the_trace_unlimited(tmp_path):
    t = open_trace(_trace(tmp_path, 2, TOP, n=3), on_error="skip")
    assert pcs.replay(t, tiers=["gpu=100blocks"]).summary.requests == 2 and t.skipped == 1
    assert t.limits == NO_LIMITS
    assert pcs.replay(t, tiers=["gpu=100blocks"], timing="sequential").summary.requests == 3 and t.skipped == 0


@pytest.mark.parametrize("native", ["python", "c"])
def test_trace_stats_output_total_is_exact(tmp_path, native):
    # two output lengths of 2**63 - 1 (the readers take any int64): 2**64 - 2 = 18,446,744,073,709,551,614 tokens.
    # Before: the int64 sum wrapped to -2.
    p = tmp_path / "two.jsonl"
    p.write_text(_line(0, TOP) + "\n" + _line(1, TOP) + "\n")
    if native == "c" and not _native.built("statscan"):
        pytest.skip("pcs.trace._statscan is not built")
    s = trace_stats(str(p), native=native)
    assert (s["output_tokens_total"], s["prompt_tokens_total"]) == (18446744073709551614, 1200)
