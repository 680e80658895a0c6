"""The one-pass next-turn search (:func:`pcs.engine.turns.decode_blocks`) against the rule read literally.

The reference below is the rule of the module docstring of ``pcs/engine/turns.py`` (docs/semantics.md §9),
one request A at a time, scanning every later request B: quadratic, obviously right, tests only.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)
from helpers import req, traces
from pcs import _native
from pcs.engine import turns
from pcs.trace.batches import as_batches

NATIVES = ["python", "c"] if _native.built("turns") else ["python"]


def next_turns_by_the_rule(reqs) -> tuple[dict, int]:
    """(request index -> decode-block ids, pairs): A's next turn is the first later B with A's last full
    prompt block id at position f - 1 and p_B >= p_A + o_A; A's decode blocks are B's ids at positions
    f .. min((p_A + o_A - 1) // bs, B's cacheable blocks) - 1."""
    hashes, pairs = {}, 0
    for a, ra in enumerate(reqs):
        bs, p, o, ids = ra.block_size, ra.prompt_tokens, ra.output_tokens, [int(x) for x in ra.block_hashes]
        f = p // bs
        if f < 1 or len(ids) < f:
            continue
        for rb in reqs[a + 1:]:
            b_ids = [int(x) for x in rb.block_hashes]
            if len(b_ids) >= f and b_ids[f - 1] == ids[f - 1] and rb.prompt_tokens >= p + o:
                pairs += 1
                end = min((p + o - 1) // bs, min(rb.prompt_tokens // bs, len(b_ids)))
                if end > f:
                    hashes[a] = b_ids[f:end]
                break
    return hashes, pairs


@pytest.mark.parametrize("native", NATIVES)
def test_hand_trace_one_pass(native):
    # bs 2. A (0): ids [5, 6] prompt 4 output 1 -> waits on (6, f=2); B (1) holds 6 at position 0 only: not A's
    # next turn (wrong position). C (2): [5, 6, 7, 8] prompt 8 >= 5: A's next turn, A's KV ends at 4 tokens
    # (end = (4 + 1 - 1) // 2 = 2 = f): a pair without ids. D (3): prompt 3 output 9: waits on (7, f=1);
    # E (4): [7, 1, 2, 3, 4, 9] prompt 12 >= 12: D's next turn; D's output fills positions 1 .. (12 - 1) // 2 - 1
    # = 4, E's cacheable blocks reach 6 -> [1, 2, 3, 4].
    reqs = [req([5, 6], 0, prompt=4, out=1, bs=2), req([6], 1, prompt=2, out=0, bs=2),
            req([5, 6, 7, 8], 2, prompt=8, out=0, bs=2), req([7, 8], 3, prompt=3, out=9, bs=2),
            req([7, 1, 2, 3, 4, 9], 4, prompt=12, out=0, bs=2)]
    dec = turns.decode_blocks(reqs, native)
    assert dec.hashes == {3: [1, 2, 3, 4]} and dec.pairs == 2 and dec.requests == 5
    # the chunked view the compiled step loop reads: requests 2 .. 4 -> request 3 (row 1) holds ids 1 .. 4
    off, ids = dec.arrays(2, 3)
    assert off.tolist() == [0, 0, 4, 4] and ids.tolist() == [1, 2, 3, 4] and dec.get(0) == []


@settings(max_examples=150, deadline=None)
@given(traces(max_requests=30), st.integers(1, 7), st.sampled_from(NATIVES), st.data())
def test_one_pass_equals_the_rule(reqs, rows, native, data):
    # arbitrary outputs so that p_B >= p_A + o_A both holds and fails; small batches so that next turns
    # cross batch boundaries
    reqs = [req(r.block_hashes.tolist(), r.arrival_s, prompt=r.prompt_tokens,
                out=data.draw(st.integers(0, 12)), bs=r.block_size) for r in reqs]
    want_hashes, want_pairs = next_turns_by_the_rule(reqs)
    orig = turns.as_batches
    turns.as_batches = functools.partial(as_batches, rows=rows)
    try:
        dec = turns.decode_blocks(reqs, native)
    finally:
        turns.as_batches = orig
    assert (dec.hashes, dec.pairs, dec.requests) == (want_hashes, want_pairs, len(reqs))
    # arrays(first, m) over any window lists the same ids as the dict
    first = data.draw(st.integers(0, len(reqs)))
    m = data.draw(st.integers(0, len(reqs) - first))
    off, ids = dec.arrays(first, m)
    assert [ids[off[r]:off[r + 1]].tolist() for r in range(m)] == [want_hashes.get(first + r, []) for r in range(m)]


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_compiled_equals_reference_on_mooncake():
    from pcs.engine.decoded import Decoded
    from pcs.trace import open_trace

    src = Decoded(open_trace(str(MOONCAKE)))
    c, py = turns.decode_blocks(src, "c"), turns.decode_blocks(src, "python")
    assert (c.pairs, c.requests) == (py.pairs, py.requests) and c.pairs > 0
    assert np.array_equal(c.index, py.index) and np.array_equal(c.starts, py.starts)
    assert np.array_equal(c.ids, py.ids) and c.hashes == py.hashes


@pytest.mark.parametrize("native", NATIVES)
def test_several_requests_wait_on_one_key(native):
    # bs 2; A0, A1, A2 all hold [5, 6] (prompt 4: f = 2, key (6, 2)) with p + o = 8, 6, 4: none is another's next
    # turn (prompt 4 < 6, 8; A2 arrives after A1 with 4 < 6), so three wait on one key (the compiled heap grows past
    # its one inline entry). B (3): [5, 6, 7, 8, 9] prompt 10 resolves all three, smallest p + o first: A2 ends at
    # (4 - 1) // 2 = 1 and A1 at (6 - 1) // 2 = 2, not past f = 2 (pairs without ids); A0 ends at (8 - 1) // 2 = 3:
    # B's id at position 2 -> [7]. The emptied key is used again: C (4) [5, 6] prompt 4 output 4 waits, D (5)
    # [5, 6, 1, 2] prompt 8 >= 8 resolves it: positions 2 .. (8 - 1) // 2 - 1 = 2 -> [1]. Pairs 4.
    reqs = [req([5, 6], 0, prompt=4, out=4, bs=2), req([5, 6], 1, prompt=4, out=2, bs=2),
            req([5, 6], 2, prompt=4, out=0, bs=2), req([5, 6, 7, 8, 9], 3, prompt=10, out=0, bs=2),
            req([5, 6], 4, prompt=4, out=4, bs=2), req([5, 6, 1, 2], 5, prompt=8, out=0, bs=2)]
    dec = turns.decode_blocks(reqs, native)
    assert dec.hashes == {0: [7], 4: [1]} and dec.pairs == 4
    assert (dec.hashes, dec.pairs) == next_turns_by_the_rule(reqs)


@pytest.mark.parametrize("native", NATIVES)
def test_ids_past_the_id_bitmap(native):
    # bs 2. The compiled search skips positions whose id no key holds with a bitmap indexed by id while ids stay
    # dense; a key on a huge id (2**40) cannot go in it and later ids take the hashed filter. A (0): [1, 2**40]
    # prompt 4 output 3 -> waits on (2**40, f=2), s = 7. B (1): [1, 2**40, 9, 10] prompt 8 >= 7: A's next turn;
    # A's KV ends at (7 - 1) // 2 = 3 blocks, B's cacheable 4 -> A's decode block is B's id at position 2: [9].
    # C (2): [3] prompt 2 output 0 -> waits on (3, f=1), s = 2. D (3): [3, 11] prompt 4 >= 2: C's next turn, C's
    # KV ends at (2 - 1) // 2 = 0 <= f: a pair without ids. B and D register too but nothing later resolves them.
    reqs = [req([1, 2**40], 0, prompt=4, out=3, bs=2), req([1, 2**40, 9, 10], 1, prompt=8, out=0, bs=2),
            req([3], 2, prompt=2, out=0, bs=2), req([3, 11], 3, prompt=4, out=0, bs=2)]
    dec = turns.decode_blocks(reqs, native)
    assert dec.hashes == {0: [9]} and dec.pairs == 2
    assert (dec.hashes, dec.pairs) == next_turns_by_the_rule(reqs)


@pytest.mark.parametrize("native", NATIVES)
def test_a_key_on_an_id_above_every_earlier_key(native):
    # bs 2. The compiled search skips a position whose id is above every key's id so far; a key registered later on
    # a larger id must still be found. A (0): [10, 11] prompt 4 output 4 -> waits on (11, f=2), s = 8. B (1):
    # [10, 11, 50, 51] prompt 8 >= 8 holds 11 at position 1: A's next turn; A's KV ends at (8 - 1) // 2 = 3 blocks,
    # B's cacheable 4 -> position 2: [50]. B waits on (51, f=4), s = 12 (51 above every earlier key, 11). C (2):
    # [10, 11, 50, 51, 52, 53] prompt 12 >= 12 holds 51 at position 3: B's next turn; B's KV ends at
    # (12 - 1) // 2 = 5, C's cacheable 6 -> position 4: [52]. Pairs 2.
    reqs = [req([10, 11], 0, prompt=4, out=4, bs=2), req([10, 11, 50, 51], 1, prompt=8, out=4, bs=2),
            req([10, 11, 50, 51, 52, 53], 2, prompt=12, out=0, bs=2)]
    dec = turns.decode_blocks(reqs, native)
    assert dec.hashes == {0: [50], 1: [52]} and dec.pairs == 2
    assert (dec.hashes, dec.pairs) == next_turns_by_the_rule(reqs)


@pytest.mark.parametrize("native", NATIVES)
def test_more_keyed_positions_than_one_gathering(native):
    # bs 2. The compiled search gathers the positions a key may hold 32 at a time; B holds 40 of them. A_k
    # (k = 0 .. 39): ids [1 .. k + 1], prompt 2 (k + 1), output 200 -> waits on (k + 1, f = k + 1), s = 2 k + 202
    # (no A's prompt, at most 80, reaches another's s). B: ids [1 .. 140], prompt 280 >= every s, cacheable 140:
    # it holds id k + 1 at position k for every k, so it resolves all 40 (the last 8 past the first gathering). A_k's
    # KV ends at (2 k + 201) // 2 = k + 100 blocks (below 140) -> positions k + 1 .. k + 99: ids k + 2 .. k + 100.
    reqs = [req(list(range(1, k + 2)), k, prompt=2 * (k + 1), out=200, bs=2) for k in range(40)]
    reqs.append(req(list(range(1, 141)), 40, prompt=280, out=0, bs=2))
    dec = turns.decode_blocks(reqs, native)
    assert dec.hashes == {k: list(range(k + 2, k + 101)) for k in range(40)} and dec.pairs == 40
    assert (dec.hashes, dec.pairs) == next_turns_by_the_rule(reqs)


@pytest.mark.parametrize("native", NATIVES)
def test_resolved_out_of_request_order_laid_out_by_request(native):
    # bs 2. A0 (0): [1, 2, 3, 4] prompt 8 output 4 -> waits on (4, f=4), s = 12; A1 (1): [1, 2] prompt 4 output 4
    # -> waits on (2, f=2), s = 8. B (2): [1 .. 7] prompt 14 resolves at position 1 first (A1: KV ends at
    # (8 - 1) // 2 = 3 -> position 2: [3]), then at position 3 (A0: (12 - 1) // 2 = 5 -> position 4: [5]). The
    # arrays are by request index whatever the order of resolution: index [0, 1], starts [0, 1, 2], ids [5, 3].
    reqs = [req([1, 2, 3, 4], 0, prompt=8, out=4, bs=2), req([1, 2], 1, prompt=4, out=4, bs=2),
            req([1, 2, 3, 4, 5, 6, 7], 2, prompt=14, out=0, bs=2)]
    dec = turns.decode_blocks(reqs, native)
    assert dec.index.tolist() == [0, 1] and dec.starts.tolist() == [0, 1, 2] and dec.ids.tolist() == [5, 3]
    assert dec.hashes == {0: [5], 1: [3]} and dec.pairs == 2
    assert (dec.hashes, dec.pairs) == next_turns_by_the_rule(reqs)


# -- the search walked batch by batch while the trace is decoded (TurnWalk, Decoded(source, turns)) ----------------
@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
@settings(max_examples=60, deadline=None)
@given(traces(max_requests=30), st.integers(1, 7), st.booleans(), st.data())
def test_walked_while_decoding_equals_the_rule(reqs, rows, threaded, data):
    # the same rule (next_turns_by_the_rule, written from the module docstring) whether the walk runs on a worker
    # or inline, over batches of 1-7 requests (next turns cross batch boundaries)
    from pcs.engine.decoded import Decoded

    reqs = [req(r.block_hashes.tolist(), r.arrival_s, prompt=r.prompt_tokens,
                out=data.draw(st.integers(0, 12)), bs=r.block_size) for r in reqs]
    want_hashes, want_pairs = next_turns_by_the_rule(reqs)
    walk = turns.TurnWalk(threaded)
    for b in as_batches(reqs, rows=rows):
        walk.add(b)
    dec = walk.result()
    assert (dec.hashes, dec.pairs, dec.requests) == (want_hashes, want_pairs, len(reqs))
    src = Decoded(reqs, turns.TurnWalk(threaded))
    assert (src.next_turns.hashes, src.next_turns.pairs) == (want_hashes, want_pairs)
    assert Decoded(reqs).next_turns is None


def _workers(before: set) -> list:
    import threading

    return [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_walked_while_decoding_equals_the_reference_on_mooncake(monkeypatch):
    # 64 KiB chunks: the walk runs beside the decode of about 46 chunks (on the compiled walk thread)
    import threading

    from pcs.engine.decoded import Decoded
    from pcs.trace import source

    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 16)
    before = set(threading.enumerate())
    src = Decoded(str(MOONCAKE), turns.TurnWalk(True))
    py = turns.decode_blocks(src, "python")
    c = src.next_turns
    assert (c.pairs, c.requests) == (py.pairs, py.requests) == (c.pairs, 12031) and c.pairs > 0
    assert np.array_equal(c.index, py.index) and np.array_equal(c.starts, py.starts) and np.array_equal(c.ids, py.ids)
    assert not _workers(before)


class _CtrlCAt20(turns.TurnWalk):
    """A walk whose caller gets Ctrl-C right after handing it the 20th batch (that batch's walk in flight)."""

    fed = 0

    def add(self, b) -> None:
        super().add(b)
        self.fed += 1
        if self.fed == 20:
            raise KeyboardInterrupt


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
@pytest.mark.parametrize("stop", ["bad line", "ctrl-c"])
def test_a_decode_stopped_part_way_leaves_no_walk_behind(monkeypatch, tmp_path, stop):
    # a bad line at 6,000 of 12,031 (the one-line error names it; 64 KiB chunks: about the 24th of 46) or Ctrl-C
    # at the 20th batch: the walk in flight is waited for, its worker ended
    import threading

    from pcs.engine.decoded import Decoded
    from pcs.errors import InputError
    from pcs.trace import source

    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 16)
    lines = MOONCAKE.read_bytes().splitlines(keepends=True)
    if stop == "bad line":
        lines[5999] = b'{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": "x"}\n'
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines))
    walk = _CtrlCAt20(True) if stop == "ctrl-c" else turns.TurnWalk(True)
    before, threads = set(threading.enumerate()), _os_threads()
    with pytest.raises(InputError if stop == "bad line" else KeyboardInterrupt,
                       match="t.jsonl:6000.*hash_ids" if stop == "bad line" else None):
        Decoded(str(path), walk)
    assert not _workers(before) and (stop == "bad line" or walk.fed == 20)
    assert not _new_native_threads(threads)     # no thread left but the kept walk thread


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
def test_batches_added_while_the_worker_walks_are_walked_in_its_call():
    # the hand trace of test_hand_trace_one_pass, one request a batch: batch 0's walk is held (its ``also`` waits)
    # while batches 1-4 are added; once let go, the worker walks them in the same call, in order, before anything
    # else hands them over (no later add, no result), and the outcome is the hand trace's
    import threading
    import time

    reqs = [req([5, 6], 0, prompt=4, out=1, bs=2), req([6], 1, prompt=2, out=0, bs=2),
            req([5, 6, 7, 8], 2, prompt=8, out=0, bs=2), req([7, 8], 3, prompt=3, out=9, bs=2),
            req([7, 1, 2, 3, 4, 9], 4, prompt=12, out=0, bs=2)]
    go, walked = threading.Event(), []
    walk = turns.TurnWalk(True)
    for k, b in enumerate(as_batches(reqs, rows=1)):
        walk.add(b, (lambda: (walked.append(0), go.wait(5))) if k == 0 else (lambda k=k: walked.append(k)))
    go.set()
    deadline = time.monotonic() + 5
    while len(walked) < 5 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert walked == [0, 1, 2, 3, 4]
    dec = walk.result()
    assert dec.hashes == {3: [1, 2, 3, 4]} and dec.pairs == 2 and dec.requests == 5


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
@settings(max_examples=60, deadline=None)
@given(traces(max_requests=30), st.integers(1, 7), st.sampled_from([0, 1, 3, 30, 1025, 5000, -7]), st.data())
def test_a_size_hint_changes_no_result(reqs, rows, hint, data):
    # the requests hint (TurnWalk(requests=...)) only sizes the key table and the heaps at the first walk: below the
    # trace's requests (the table then grows past it), above them (1025, 5000: heaps reserved ahead), none or
    # negative (0, -7: not known), the outcome is the rule's (next_turns_by_the_rule), batches of 1-7 requests
    reqs = [req(r.block_hashes.tolist(), r.arrival_s, prompt=r.prompt_tokens,
                out=data.draw(st.integers(0, 12)), bs=r.block_size) for r in reqs]
    want_hashes, want_pairs = next_turns_by_the_rule(reqs)
    walk = turns.TurnWalk(False, requests=hint)
    for b in as_batches(reqs, rows=rows):
        walk.add(b)
    dec = walk.result()
    assert (dec.hashes, dec.pairs, dec.requests) == (want_hashes, want_pairs, len(reqs))


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
@pytest.mark.parametrize("hint", [12031, 1500, 1 << 40])
def test_a_size_hint_on_mooncake_equals_the_reference(hint):
    # the trace's own count (12,031 requests), a smaller one (the table grows past it, with the heaps reserved for
    # 1,500 keys) and a footer's absurd count (2**40: taken as at most 2**20, a 48 MB table, no MemoryError)
    from pcs.engine.decoded import Decoded
    from pcs.trace import open_trace

    src = Decoded(open_trace(str(MOONCAKE)))
    walk = turns.TurnWalk(False, requests=hint)
    for b in src.batches:
        walk.add(b)
    c, py = walk.result(), turns.decode_blocks(src, "python")
    assert (c.pairs, c.requests) == (py.pairs, py.requests) == (c.pairs, 12031) and c.pairs > 0
    assert np.array_equal(c.index, py.index) and np.array_equal(c.starts, py.starts) and np.array_equal(c.ids, py.ids)


def test_the_requests_hint_is_a_parquet_footers_rows(tmp_path):
    # requests_hint: a Parquet trace's rows as its footer counts them (2 here: the file written below), else 0
    import pcs
    from pcs.trace.convert import convert

    src = tmp_path / "two.jsonl"
    src.write_text('{"timestamp": 0, "input_length": 1536, "output_length": 1, "hash_ids": [1, 2, 3]}\n'
                   '{"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}\n')
    convert(pcs.open_trace(src), tmp_path / "two.parquet")
    assert turns.requests_hint(pcs.open_trace(tmp_path / "two.parquet")) == 2
    assert turns.requests_hint(pcs.open_trace(src)) == 0                    # JSONL: not known before the read
    assert turns.requests_hint(str(src)) == 0 and turns.requests_hint([req([1, 2], 0.0)]) == 0


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
def test_a_replay_of_parquet_hands_the_walk_its_footers_rows(tmp_path, monkeypatch):
    # the default-like two-tier replay (step scheduler, modeled) of a Parquet trace walks with the footer's rows as
    # its hint (3 rows written here), of the same trace as JSONL with none; the outcome is the same either way
    import pcs
    from pcs.trace.convert import convert

    src = tmp_path / "three.jsonl"
    src.write_text('{"timestamp": 0, "input_length": 1536, "output_length": 600, "hash_ids": [1, 2, 3]}\n'
                   '{"timestamp": 1, "input_length": 2560, "output_length": 1, "hash_ids": [1, 2, 3, 4, 5]}\n'
                   '{"timestamp": 2, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}\n')
    convert(pcs.open_trace(src), tmp_path / "three.parquet")
    seen, init = [], turns.TurnWalk.__init__

    def spy(self, threaded, requests=0):
        seen.append(requests)
        init(self, threaded, requests)

    monkeypatch.setattr(turns.TurnWalk, "__init__", spy)
    kw = dict(tiers=["gpu=16384blocks", "cpu=65536blocks"], policy="lru")
    a, b = pcs.replay(str(tmp_path / "three.parquet"), **kw), pcs.replay(str(src), **kw)
    assert seen == [3, 0]
    cols = [c for c in a.requests.column_names if c != "tpot_s"]       # tpot_s: NaN for one-token outputs
    assert a.requests.select(cols).equals(b.requests.select(cols)) and a.summary.hit_ratio == b.summary.hit_ratio


#: the committed traces (a fresh clone has them): the twins of the Mooncake tests above
SAMPLES = ["sample_chat.jsonl", "sample_exact.jsonl", "sample_azure_conv.jsonl", "sample_tokens.jsonl"]


class _Counted(turns.TurnWalk):
    """A walk that counts the batches handed to it."""

    fed = 0

    def add(self, b) -> None:
        super().add(b)
        self.fed += 1


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("threaded", [False, True])
def test_compiled_equals_reference_on_the_samples(monkeypatch, name, threaded):
    # the compiled walk while decoding (4 KiB chunks: every sample in several batches; threaded: on the compiled walk thread)
    # and the one-pass compiled search against the Python reference over the same decoded trace: the same pairs,
    # next turns and decode-block ids
    import threading

    from helpers import ROOT
    from pcs.engine.decoded import Decoded
    from pcs.trace import source

    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 12)
    before = set(threading.enumerate())
    walk = _Counted(threaded)
    src = Decoded(str(ROOT / "traces" / name), walk)
    py = turns.decode_blocks(src, "python")
    assert walk.fed > 1 or name == "sample_tokens.jsonl", "next turns found across batches"   # 25 requests: one
    assert py.pairs > 0 and py.ids.size > 0, "the sample has next turns with decode blocks"
    for c in (src.next_turns, turns.decode_blocks(src, "c")):
        assert (c.pairs, c.requests) == (py.pairs, py.requests)
        assert np.array_equal(c.index, py.index) and np.array_equal(c.starts, py.starts)
        assert np.array_equal(c.ids, py.ids) and c.hashes == py.hashes
    assert not _workers(before)


# -- the search's own thread (_turns.queue / drain): batches walked without a Python worker or the GIL ------------
def _hand_reqs() -> list:
    """test_hand_trace_one_pass's trace (bs 2): request 3's decode blocks are [1, 2, 3, 4], 2 pairs."""
    return [req([5, 6], 0, prompt=4, out=1, bs=2), req([6], 1, prompt=2, out=0, bs=2),
            req([5, 6, 7, 8], 2, prompt=8, out=0, bs=2), req([7, 8], 3, prompt=3, out=9, bs=2),
            req([7, 1, 2, 3, 4, 9], 4, prompt=12, out=0, bs=2)]


def _os_threads() -> set:
    """This process's threads as the system lists them (a pthread of a C extension included), ids."""
    import os

    return set(map(int, os.listdir("/proc/self/task")))


def _thread_name(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:      # ended meanwhile
        return ""


def _new_native_threads(before: set) -> set:
    """The threads running now that were not in ``before`` (:func:`_os_threads`) and are no Python thread: a C
    extension's own (threads of other tests that end meanwhile do not count), but for the process's one next-turn
    walk thread (``pcs-turns``: started once, kept)."""
    import threading

    new = _os_threads() - before - {t.native_id for t in threading.enumerate()}
    return {t for t in new if _thread_name(t) != "pcs-turns"}


def _walk_threads() -> list:
    """The process's ``pcs-turns`` threads (at most one: _turns.queue's walk thread)."""
    return [t for t in _os_threads() if _thread_name(t) == "pcs-turns"]


def _walk_args(b, first: int) -> tuple:
    i8 = np.int64
    return (first, int(b.block_size), np.ascontiguousarray(b.block_hashes, np.uint64),
            np.ascontiguousarray(b.block_offsets, i8), np.ascontiguousarray(b.prompt_tokens, i8),
            np.ascontiguousarray(b.output_tokens, i8))


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
def test_a_threaded_walk_without_also_starts_no_python_worker():
    # TurnWalk(True).add without ``also`` hands each batch to the process's walk thread: no pcs-beside worker is
    # started for the walks (the Python worker waited for the GIL to end each walk and to begin the next), the
    # outcome is the hand trace's, and a second walk uses the same thread (one pcs-turns thread, kept)
    import threading

    before, threads = set(threading.enumerate()), _os_threads()
    walk = turns.TurnWalk(True)
    for b in as_batches(_hand_reqs(), rows=1):
        walk.add(b)
    assert not _workers(before)
    dec = walk.result()
    assert dec.hashes == {3: [1, 2, 3, 4]} and dec.pairs == 2 and dec.requests == 5
    assert not _new_native_threads(threads) and not _workers(before)
    walker = _walk_threads()
    assert len(walker) == 1              # the walk thread, kept for the next walk (its malloc arena stays warm)
    again = turns.TurnWalk(True)
    for b in as_batches(_hand_reqs(), rows=2):
        again.add(b)
    assert again.result().hashes == {3: [1, 2, 3, 4]} and _walk_threads() == walker


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
def test_batches_queued_then_batches_with_also_are_walked_in_order():
    # requests 0-2 queued on the search's thread, 3-4 with an ``also`` (the Python worker): the queue is drained
    # before request 3's walk, so request 4 resolves request 3 as in the hand trace; the ``also`` calls run in order
    walk, called = turns.TurnWalk(True), []
    for k, b in enumerate(as_batches(_hand_reqs(), rows=1)):
        walk.add(b, None if k < 3 else (lambda k=k: called.append(k)))
    dec = walk.result()
    assert dec.hashes == {3: [1, 2, 3, 4]} and dec.pairs == 2 and called == [3, 4]


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
def test_the_compiled_queue_walks_in_order_and_drains():
    # _turns.queue / drain by hand on the hand trace, one request a batch: walk and result refuse a state with
    # batches queued (RuntimeError), drain walks them all, result is the hand trace's; drain(drop=True) on a second
    # state returns without an error; no thread but the one walk thread is left
    tn = _native.module("turns")
    threads = _os_threads()
    batches = list(as_batches(_hand_reqs(), rows=1))
    state = tn.new()
    for k, b in enumerate(batches):
        tn.queue(state, *_walk_args(b, k))
    with pytest.raises(RuntimeError, match="queued"):
        tn.walk(state, *_walk_args(batches[0], 5))
    with pytest.raises(RuntimeError, match="queued"):
        tn.result(state)
    tn.drain(state)
    index, starts, ids, pairs = tn.result(state)
    assert (np.frombuffer(index, np.int64).tolist(), np.frombuffer(starts, np.int64).tolist(),
            np.frombuffer(ids, np.uint64).tolist(), pairs) == ([3], [0, 4], [1, 2, 3, 4], 2)
    other = tn.new()
    for k, b in enumerate(batches):
        tn.queue(other, *_walk_args(b, k))
    tn.drain(other, True)
    tn.drain(other)          # nothing queued: a no-op
    del other
    assert not _new_native_threads(threads) and len(_walk_threads()) == 1
    with pytest.raises(ValueError, match="inconsistent"):
        tn.queue(state, 0, 2, np.zeros(1, np.uint64), np.array([0, 5], np.int64), np.zeros(1, np.int64),
                 np.zeros(1, np.int64))


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
def test_a_state_dropped_with_batches_queued_is_freed_and_the_walks_go_on():
    # a state let go with batches still queued (no drain: an error path that never reached the walk's close) is
    # freed once its walk under way is done; a later state's batches are walked as ever (the hand trace's result)
    tn = _native.module("turns")
    threads = _os_threads()
    state = tn.new()
    for k, b in enumerate(as_batches(_hand_reqs(), rows=1)):
        tn.queue(state, *_walk_args(b, k))
    del state
    later = tn.new()
    for k, b in enumerate(as_batches(_hand_reqs(), rows=1)):
        tn.queue(later, *_walk_args(b, k))
    tn.drain(later)
    assert tn.result(later)[3] == 2 and np.frombuffer(tn.result(later)[2], np.uint64).tolist() == [1, 2, 3, 4]
    assert not _new_native_threads(threads) and len(_walk_threads()) == 1


def _walk_in_child(conn) -> None:
    walk = turns.TurnWalk(True)
    for b in as_batches(_hand_reqs(), rows=1):
        walk.add(b)
    dec = walk.result()
    conn.send((dec.hashes, dec.pairs))
    conn.close()


@pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")
def test_a_forked_child_walks_on_a_walk_thread_of_its_own():
    # a child made by fork after the parent's walk thread started has no such thread (fork copies one thread):
    # its first batch starts one (pthread_atfork resets the queue), so its walk ends with the hand trace's result
    # instead of waiting forever for a thread that is not there
    import multiprocessing

    walk = turns.TurnWalk(True)
    for b in as_batches(_hand_reqs(), rows=1):
        walk.add(b)
    walk.result()
    assert len(_walk_threads()) == 1
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_walk_in_child, args=(child,))
    proc.start()
    got = parent.recv() if parent.poll(30) else None
    proc.join(30)
    if proc.is_alive():      # a child stuck waiting for a walk thread it does not have: killed, the test fails
        proc.kill()
        proc.join()
    assert got == ({3: [1, 2, 3, 4]}, 2) and proc.exitcode == 0
