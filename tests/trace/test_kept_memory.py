"""The memory the JSONL reader keeps past a call for the next one is bounded, leased to one reader at a time and
can be dropped (pcs.trace.pool; pcs.trace.release_buffers; docs/traces-formats.md, "Memory kept between calls").

Bounds worked from their definitions: an arena is kept past its reader only with at most 2^20 ids (8 MiB of
uint64), a read buffer only of at most 2 x 1 MiB (the default chunk's pair), at most one arena and two buffers.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import pcs.trace
from pcs import _native
from pcs.trace import jsonfast, source
from pcs.trace.hashids import MOONCAKE, ReadState, read_hashid_jsonl

twin = pytest.mark.skipif(not _native.built("jsonrows"), reason="pcs.trace._jsonrows is not built")


def _clear_mappings():
    twin = _native.module("jsonrows")
    if twin is not None:
        twin.kept_clear()


@pytest.fixture
def empty():
    jsonfast.ARENAS.release()
    source.SPARES.release()
    _clear_mappings()
    yield
    jsonfast.ARENAS.release()
    source.SPARES.release()
    _clear_mappings()


def test_the_bounds_are_the_documented_ones():
    assert jsonfast.KEPT_ARENA_IDS * 8 == 8 * 2 ** 20          # 8 MiB of ids
    assert source.KEPT_SPARE_BYTES == 2 * 2 ** 20               # the default 1 MiB chunk's two halves
    assert jsonfast.ARENAS.most == 1 and source.SPARES.most == 2


@twin
def test_an_arena_over_the_bound_is_not_kept_past_its_reader(empty):
    a = jsonfast.arena()
    a.append(np.zeros(2 ** 20, np.uint64))                      # exactly the bound: kept
    jsonfast.ARENAS.keep(a)
    assert jsonfast.ARENAS.items() == [a] and a.leased == 0
    assert jsonfast.arena() is a
    a.append(np.zeros(2 ** 20 + 1, np.uint64))                  # 2^20 + 1 ids: given back, dropped
    jsonfast.ARENAS.keep(a)
    assert jsonfast.ARENAS.items() == [] and a.leased == 0


@twin
def test_a_large_read_buffer_is_not_kept(empty):
    ext = _native.module("jsonrows")
    small, large = ext.ReadBuffer(2 * 2 ** 20), ext.ReadBuffer(2 * 2 ** 20 + 1)
    source.SPARES.keep(small, large)
    assert source.SPARES.items() == [small]


def _mooncake(path, n: int, first_id: int) -> None:
    """n Mooncake rows of 100 bytes with their LF (row i: timestamp i ms, prompt 1536 tokens = 3 blocks of 512,
    ids first_id + 3i .. first_id + 3i + 2)."""
    rows = (b'{"timestamp": %d, "input_length": 1536, "output_length": 1, "hash_ids": [%d, %d, %d]}' % (
        i, first_id + 3 * i, first_id + 3 * i + 1, first_id + 3 * i + 2) for i in range(n))
    path.write_bytes(b"".join(r.ljust(99) + b"\n" for r in rows))


@twin
@pytest.mark.parametrize("ahead", [False, True])
def test_a_paused_reader_and_a_second_call_do_not_share_an_arena(empty, tmp_path, monkeypatch, ahead):
    # 250-byte reads of 100-byte rows: chunks of 2, 3, 2 rows. Reader 1 is paused after its first batch, which is
    # dropped here (the reader's own frame may still view it; an arena leased with no view alive is
    # tests/trace/test_decode_ahead.py's). A second whole read meanwhile must lease another arena, and each
    # reader's ids read back as written (reader 1: 0 .. 20, reader 2: 1000 .. 1020).
    monkeypatch.setattr(source, "CHUNK_BYTES", 250)
    p1, p2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _mooncake(p1, 7, 0)
    _mooncake(p2, 7, 1000)
    read = lambda p: read_hashid_jsonl(p, p.name, MOONCAKE, None, ReadState(), side_by_side=True, decode_ahead=ahead)
    one = read(p1)
    first = next(one)
    held = first.block_hashes.base.obj                         # reader 1's arena (the batch views it)
    assert first.block_hashes.tolist() == list(range(6))
    del first
    gc.collect()
    assert held.leased == 1                                    # reader 1 holds it
    two = list(read(p2))
    assert all(b.block_hashes.base.obj is not held for b in two)
    assert np.concatenate([b.block_hashes for b in two]).tolist() == list(range(1000, 1021))
    rest = list(one)
    assert np.concatenate([b.block_hashes for b in rest]).tolist() == list(range(6, 21))
    assert all(b.block_hashes.base.obj is held for b in rest)
    assert np.concatenate([b.block_hashes for b in two]).tolist() == list(range(1000, 1021))   # still intact
    assert held.leased == 0 and jsonfast.ARENAS.items() == [held]   # given back at its end: kept, the newest


@twin
def test_release_buffers_empties_what_a_replay_kept(empty, tmp_path):
    path = tmp_path / "t.jsonl"   # three requests of 2 blocks (block 512), enough for the reader to keep its buffers
    path.write_text("".join(f'{{"timestamp": {i}, "input_length": 1024, "output_length": 1, "hash_ids": [{2 * i}, '
                            f'{2 * i + 1}]}}\n' for i in range(3)))
    pcs.replay(str(path))
    source.SPARES.keep(_native.module("jsonrows").ReadBuffer(8))   # a read buffer kept too (a tiny replay may
    arenas, spares = jsonfast.ARENAS.items(), source.SPARES.items()   # read without decoding ahead)
    assert len(arenas) == 1 and arenas[0].leased == 0           # the replay's (6 ids), given back
    assert len(spares) in (1, 2) and all(b.leased == 0 for b in spares)
    kept_spares = len(spares)
    del arenas, spares        # this test's own references: the pools' are then the last ones
    # the arena object and the buffers dropped, then the arena's 32 MiB mapping (ARENA_IDS ids of 8 B, 4 MB or more:
    # pcs/_kept.h), given to the module's pool as the arena died, unmapped
    assert pcs.trace.release_buffers() == 1 + kept_spares + 1
    assert jsonfast.ARENAS.items() == [] and source.SPARES.items() == []
    assert _native.module("jsonrows").kept_bytes() == 0
    assert pcs.trace.release_buffers() == 0                     # nothing left: a no-op


class _Box:
    """A pool item with the compiled twin's lease contract (take / give_back), in plain Python."""

    def __init__(self) -> None:
        self.leased = False

    def take(self) -> bool:
        free, self.leased = not self.leased, True
        return free

    def give_back(self) -> None:
        self.leased = False


def test_a_keep_reentered_on_the_same_thread_does_not_deadlock():
    """A reader's generator finalized by the collector while another reader's keep holds the pool's lock (an
    allocation inside it) gives its buffers back on the same thread: the keep is re-entered. With a plain lock the
    thread waited on itself for ever (seen in the whole suite as a hung worker in Pool.keep, called from
    Pool.keep); both items must be given back and kept, the re-entered one first (it was kept before the outer
    item's own append)."""
    import threading

    from pcs.trace.pool import Pool

    outer, inner = _Box(), _Box()
    outer.take(), inner.take()
    pool: Pool

    def kept(item) -> bool:
        if item is outer and inner.leased:
            pool.keep(inner)          # what the finalized reader's `finally` does
        return True

    pool = Pool(2, kept)
    worker = threading.Thread(target=pool.keep, args=(outer,), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "Pool.keep re-entered on its own thread deadlocked"
    assert not outer.leased and not inner.leased
    assert pool.items() == [inner, outer]
    assert pool.take() is inner and pool.take() is outer and pool.take() is None
