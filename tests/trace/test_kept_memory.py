"""The memory the JSONL reader keeps past a call for the next one is bounded and can be dropped
(pcs.trace.release_buffers; docs/traces-formats.md, "Memory kept between calls").

Bounds worked from their definitions: an arena is kept past its reader only with at most 2^20 ids (8 MiB of
uint64), a read buffer only of at most 2 x 1 MiB (the default chunk's pair), at most one arena and two buffers.
"""
from __future__ import annotations

import numpy as np
import pytest

import pcs.trace
from pcs.trace import jsonfast, source


@pytest.fixture
def empty(monkeypatch):
    monkeypatch.setattr(jsonfast, "_KEPT_ARENAS", [])
    monkeypatch.setattr(source, "_SPARES", [])


def test_the_bounds_are_the_documented_ones():
    assert jsonfast.KEPT_ARENA_IDS * 8 == 8 * 2 ** 20          # 8 MiB of ids
    assert source.KEPT_SPARE_BYTES == 2 * 2 ** 20               # the default 1 MiB chunk's two halves


def test_an_arena_over_the_bound_is_not_kept_past_its_reader(empty):
    a = jsonfast.arena()
    if a is None:
        pytest.skip("the compiled twin is not built")
    a.append(np.zeros(2 ** 20, np.uint64))                      # exactly the bound: kept
    jsonfast._trim_arenas()
    assert jsonfast._KEPT_ARENAS == [a]
    a.append(np.zeros(1, np.uint64))                            # 2^20 + 1 ids: dropped
    jsonfast._trim_arenas()
    assert jsonfast._KEPT_ARENAS == []


def test_a_large_read_buffer_is_not_kept(empty):
    small, large = np.empty(2 * 2 ** 20, np.uint8), np.empty(2 * 2 ** 20 + 1, np.uint8)
    source._keep_spares(small, large, None)
    assert len(source._SPARES) == 1 and source._SPARES[0] is small


def test_release_buffers_empties_what_a_replay_kept(empty, tmp_path):
    path = tmp_path / "t.jsonl"   # three requests of 2 blocks (block 512), enough for the reader to keep its buffers
    path.write_text("".join(f'{{"timestamp": {i}, "input_length": 1024, "output_length": 1, "hash_ids": [{2 * i}, '
                            f'{2 * i + 1}]}}\n' for i in range(3)))
    pcs.replay(str(path))
    if jsonfast.arena() is None:
        pytest.skip("the compiled twin is not built")
    assert len(jsonfast._KEPT_ARENAS) == 1                      # the replay's (6 ids), taken again above
    source._keep_spares(np.empty(8, np.uint8))                  # a read buffer kept too
    spares = len(source._SPARES)
    assert spares >= 1 and pcs.trace.release_buffers() == 1 + spares
    assert jsonfast._KEPT_ARENAS == [] and source._SPARES == []
    assert pcs.trace.release_buffers() == 0                     # nothing left: a no-op
