"""A Parquet footer's counts are size hints only (pcs/trace/parquet.py footer_block_hashes, footer_rows): a count no
real trace has -- below 0, or past FOOTER_HINT_MAX = 2**40 ids -- is "not known" (0 / None), so no table or id
arena is sized by it. Before, a footer of 2**62 block hashes in one row group made the id arena refuse with a
TypeError ("pcs: internal error"), and row groups summing past 2**63 an OverflowError, where the Python reference
replayed the file. The footers here are stand-ins with pyarrow's FileMetaData attributes (a real lying file needs
its Thrift footer rewritten)."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from pcs.trace.parquet import FOOTER_HINT_MAX, footer_block_hashes, footer_rows


def _footer(per_group: list[int], rows: int = 600):
    cols = [NS(path="timestamp"), NS(path="block_hashes.list.element")]
    groups = [NS(column=lambda j, n=n: NS(num_values=n if j == 1 else 0)) for n in per_group]
    md = NS(num_columns=2, schema=NS(column=lambda j: cols[j]), num_row_groups=len(groups),
            row_group=lambda g: groups[g], num_rows=rows)
    return NS(metadata=md)


@pytest.mark.parametrize("per_group, hint", [
    ([3, 4], 7),                                  # the sum over row groups
    ([], 0),                                      # no row group: nothing counted
    ([1 << 40], 1 << 40),                         # at the bound: taken
    ([1 << 40, 1], 0),                            # the sum past it
    ([1 << 62], 0),                               # the arena's TypeError before
    ([1 << 62] * 120, 0),                         # the OverflowError before (sum past 2**63)
    ([-1, 5], 0),                                 # a negative count makes the sum meaningless
    ([5, -5], 0),                                 # even when the sum looks fine
])
def test_implausible_block_hash_counts_are_not_known(per_group, hint):
    assert FOOTER_HINT_MAX == 2 ** 40
    assert footer_block_hashes(_footer(per_group)) == hint


@pytest.mark.parametrize("rows, hint", [(600, 600), (0, 0), (1 << 40, 1 << 40), ((1 << 40) + 1, None),
                                        (-1, None), (1 << 62, None)])
def test_implausible_row_counts_are_not_known(rows, hint):
    assert footer_rows(_footer([3], rows)) == hint


def test_a_footer_without_block_hashes_says_nothing():
    pf = NS(metadata=NS(num_columns=1, schema=NS(column=lambda j: NS(path="timestamp")), num_row_groups=1,
                        row_group=lambda g: None, num_rows=3))
    assert footer_block_hashes(pf) == 0


def _reading(rows_per_batch: list[int], footer_rows: int, group_rows: list[int] | None = None,
             group_values: list[int] | None = None):
    """A stand-in file: its batches as read, the file's row count, each row group's row count and the values its
    ``timestamp`` chunk holds (default: its row count, as in a file nobody edited)."""
    import pyarrow as pa

    batches = [pa.record_batch({"timestamp": pa.array([0.0] * n)}) for n in rows_per_batch]
    groups = [footer_rows] if group_rows is None else group_rows
    values = groups if group_values is None else group_values
    md = NS(num_rows=footer_rows, num_row_groups=len(groups),
            row_group=lambda g: NS(num_rows=groups[g], column=lambda j: NS(num_values=values[g])))
    return NS(column_paths=[("timestamp",)], num_row_groups=len(groups), metadata=md,
              iter_batches=lambda *a, **k: iter(batches))


@pytest.mark.parametrize("got, footer, groups, said", [
    ([], 600, None, "600 rows"),
    ([4, 1], 6, None, "6 rows"),
    ([4, 3], 6, None, "6 rows"),
    # the file's row count and the chunk's value count both edited to 0, its row groups' left at 1,700: pyarrow
    # reads none and the file's count agrees; the row groups' does not
    ([], 0, [1000, 700], "0 rows (1,700 in its row groups)"),
    ([], -1, [1700], "-1 rows (1,700 in its row groups)"),
])
def test_rows_the_footer_counts_and_the_chunks_do_not_give_are_a_corrupt_file(got, footer, groups, said):
    # a column chunk's value count edited to 0 (or a wrong row count): pyarrow yields fewer rows (none for a count
    # of 0) without an error, and the file read as "empty trace (no requests)"; the read now names the mismatch
    from pcs.errors import InputError
    from pcs.trace.parquet import _record_batches

    with pytest.raises(InputError) as e:
        list(_record_batches(_reading(got, footer, groups), "t.parquet", 4096, ["timestamp"]))
    assert str(e.value) == (f"t.parquet: unreadable Parquet data, the file is corrupt: its footer counts "
                            f"{said}, its column chunks gave {sum(got)}")


def test_a_read_of_every_row_the_footer_counts_passes():
    from pcs.trace.parquet import _record_batches

    assert [b.num_rows for b in _record_batches(_reading([4, 2], 6), "t.parquet", 4096, ["timestamp"])] == [4, 2]
    assert [b.num_rows for b in _record_batches(_reading([4, 2], 6, [3, 0, 3]), "t.parquet", 4096,
                                                ["timestamp"])] == [4, 2]    # an empty row group among them


def test_a_row_group_counting_fewer_rows_than_its_chunk_holds_is_a_corrupt_file():
    # the file's count and one row group's lowered to agree with each other (review: a 120,310-row file read as
    # 70,000 rows, silently): pyarrow reads the row group's count of rows, so every count agrees with the read; the
    # row group's flat column still holds one value a row, 54,774 where the row group says 4,464
    from pcs.errors import InputError
    from pcs.trace.parquet import _record_batches

    f = _reading([65536, 4464], 70000, [65536, 4464], [65536, 54774])
    with pytest.raises(InputError) as e:
        list(_record_batches(f, "t.parquet", 65536, ["timestamp"]))
    assert str(e.value) == ("t.parquet: unreadable Parquet data, the file is corrupt: its row group 1 counts 4,464 "
                            "rows, its column timestamp holds 54,774 values")
    one = _reading([1], 1, [1], [2])     # counts of one in the singular
    with pytest.raises(InputError, match="its row group 0 counts 1 row, its column timestamp holds 2 values$"):
        list(_record_batches(one, "t.parquet", 65536, ["timestamp"]))


def test_row_groups_of_real_files_agree_with_their_chunks(tmp_path):
    # pyarrow's own files, row groups of 1, 3 and 7 rows and an empty one: every row group's count is its flat
    # column's values, so the read passes and gives every row
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pcs.trace.parquet import _open, _record_batches

    path = tmp_path / "t.parquet"
    table = pa.table({"timestamp": pa.array([float(i) for i in range(11)]),
                      "ids": pa.array([[i, i + 1] for i in range(11)], pa.list_(pa.uint64()))})
    with pq.ParquetWriter(path, table.schema) as w:
        for lo, hi in ((0, 1), (1, 1), (1, 4), (4, 11)):
            w.write_table(table.slice(lo, hi - lo))
    pf = _open(path, "t.parquet")
    assert [pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)] == [1, 0, 3, 7]
    assert sum(b.num_rows for b in _record_batches(pf, "t.parquet", 4, ["timestamp", "ids"])) == 11
