"""The results directory: a Parquet dataset with one file per finished point.

Layout of ``OUT/``:

- ``<point_id>.parquet``: one row, the point's options and metrics
  (:func:`pcs.sweep.worker.make_row`); written to a hidden temporary file
  beside it and renamed, so the file exists only whole. A point whose file
  exists is done; a killed sweep loses only the points in flight.
- ``_requests/<point_id>.parquet``: the point's per-request table with a
  ``point_id`` column first (``pcs sweep --requests``, replay points),
  written before the point's row so a done point has its table too.

``pyarrow.dataset`` and pandas skip names starting with ``_`` or ``.``, so
``OUT/`` reads as the points alone. Rows of different plans may differ in
columns (other tiers, other kinds): :func:`read_results` unifies them, a
column a row lacks being null.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["done_ids", "write_point", "read_results", "REQUESTS_DIR"]

REQUESTS_DIR = "_requests"


def done_ids(out: str | Path) -> set[str]:
    """Ids of the points whose row is in ``out`` (an absent directory has none)."""
    out = Path(out)
    return {p.stem for p in out.glob("*.parquet")} if out.is_dir() else set()


def _write_atomic(table: Any, target: Path) -> None:
    import pyarrow.parquet as pq

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_point(out: str | Path, row: dict[str, Any], requests: Any = None) -> Path:
    """Write one point's row (and its per-request table) atomically; returns the row's file.

    Args:
        out: the results directory (created if absent).
        row: the dataset row; ``row["point_id"]`` names the file.
        requests: a pyarrow Table or None.
    Raises:
        OSError: the directory cannot be written.
    """
    import pyarrow as pa

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pid = row["point_id"]
    if requests is not None:
        (out / REQUESTS_DIR).mkdir(exist_ok=True)
        table = requests.add_column(0, "point_id", pa.array([pid] * requests.num_rows, pa.string()))
        _write_atomic(table, out / REQUESTS_DIR / f"{pid}.parquet")
    target = out / f"{pid}.parquet"
    _write_atomic(pa.Table.from_pylist([row]), target)
    return target


def read_results(out: str | Path) -> Any:
    """Every finished point of ``out`` as one pyarrow Table, rows ordered by point id.

    Columns are the union over the files (first seen first); a column a file
    lacks is null in its row; a column that is null in some rows and numbers
    in others takes the numbers' type.

    Raises:
        FileNotFoundError: ``out`` is not a directory.
        ValueError: a column has incompatible types across files (text in one, numbers in another).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    if not out.is_dir():
        raise FileNotFoundError(2, "No such directory", str(out))
    tables = [pq.read_table(p) for p in sorted(out.glob("*.parquet"))]
    if not tables:
        return pa.table({"point_id": pa.array([], pa.string()), "kind": pa.array([], pa.string())})
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(f"{out}: the points' columns do not fit together: {str(exc).splitlines()[0]}") from None
