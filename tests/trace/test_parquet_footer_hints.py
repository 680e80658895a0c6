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


def _reading(rows_per_batch: list[int], footer_rows: int, group_rows: list[int] | None = None):
    import pyarrow as pa

    batches = [pa.record_batch({"timestamp": pa.array([0.0] * n)}) for n in rows_per_batch]
    groups = [footer_rows] if group_rows is None else group_rows
    md = NS(num_rows=footer_rows, num_row_groups=len(groups), row_group=lambda g: NS(num_rows=groups[g]))
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
