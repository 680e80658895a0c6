"""A Parquet trace's chunk tables reserved at most to its footer's bound (pcs/engine/chunks.py ``table_entries_bound``,
``ChunkPieces(entries=...)``).

The rule: a Parquet trace's footer bounds the step loops' prefill-table entries (max hit + 1 a row, and a row's max
hit is at most its block hashes): block hashes + rows. A joined batch's table is reserved for its estimated entries,
but never past what that bound leaves after the pieces before it; a bound that is too small only makes the table
grow, the values unchanged. The expected numbers are worked by hand from that rule and the files written here.
"""
from __future__ import annotations

import pytest

from helpers import LinearCompute, req, room_spy
from pcs.blocks import BlockRules
from pcs.engine import decoded
from pcs.engine.chunks import ChunkPieces, table_entries_bound
from pcs.engine.timing import TimeModel
from pcs.trace.batches import as_batches

TWO = ('{"timestamp": 0, "input_length": 1536, "output_length": 1, "hash_ids": [1, 2, 3]}\n'
       '{"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}\n')


def _two_parquet(tmp_path):
    import pcs
    from pcs.trace.convert import convert

    src = tmp_path / "two.jsonl"                      # 2 requests of 3 and 2 block hashes
    src.write_text(TWO)
    convert(pcs.open_trace(src), tmp_path / "two.parquet")
    return pcs.open_trace(tmp_path / "two.parquet"), pcs.open_trace(src)


def test_the_bound_is_the_footers_block_hashes_plus_rows(tmp_path):
    pq, js = _two_parquet(tmp_path)
    assert (pq.parquet_rows, pq.parquet_block_hashes) == (2, 5)
    assert table_entries_bound(pq) == 7               # 5 block hashes + 2 rows
    assert js.parquet_rows is None and table_entries_bound(js) == 0        # JSONL: not known
    assert table_entries_bound([req([1, 2], 0.0)]) == 0                    # in memory: not known


@pytest.mark.parametrize("entries, size, moves", [(0, 7, [False] * 3), (6, 6, [False] * 3),
                                                   (4, 8, [False, False, True])])
def test_a_joined_batchs_table_is_reserved_at_most_to_the_bound(monkeypatch, entries, size, moves):
    # three batches of one request each (prompt 5, block size 4: max hit 1, so 2 entries a row: 0.005 and 0.001 s)
    # joined into one of 3 rows; its first piece's estimate is 2 + ceil(2 x 2 x 5 / 4) = 7 entries
    # (chunks._group_estimate). Bound 0 (unknown): 7. Bound 6 (the 3 rows' 2 each): 6, no move. Bound 4 (too
    # small): 4, the third piece grows it to max(2 x 4, 4 + 2) = 8 -- one move, the same values.
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 3)
    moved = room_spy(monkeypatch)
    pieces = ChunkPieces(BlockRules(), TimeModel(LinearCompute()), entries)
    batches = list(as_batches([req([1, 2], float(i), prompt=5, out=0) for i in range(3)], rows=1))
    for b in batches:
        pieces.add(b, False)
    assert moved == moves and len(pieces._groups[0][1]) == size
    (ch,) = list(pieces.take([decoded._join(batches)]))
    assert ch.arrays[7].tolist() == pytest.approx([0.005, 0.001] * 3, rel=1e-12, abs=0)
    assert ch.arrays[8].tolist() == [0, 2, 4, 6]


def test_the_next_joined_batch_gets_what_the_bound_leaves(monkeypatch):
    # five such requests in batches of one, joined up to 3 rows: [r0 r1 r2] [r3 r4]. Bound 10 (5 rows x 2). The
    # first joined batch reserves its estimate, 7 (below 10), and fills 6; the second's first piece estimates 7
    # too, but the bound leaves 10 - 6 = 4: its table is 4 entries, exactly what r3 and r4 fill.
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 3)
    moved = room_spy(monkeypatch)
    pieces = ChunkPieces(BlockRules(), TimeModel(LinearCompute()), 10)
    for i, b in enumerate(as_batches([req([1, 2], float(i), prompt=5, out=0) for i in range(5)], rows=1)):
        pieces.add(b, i == 3)
    assert [len(g[1]) for g in pieces._groups] == [7, 4] and [g[2] for g in pieces._groups] == [6, 4]
    assert not any(moved)
