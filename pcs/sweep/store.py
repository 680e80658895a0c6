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
``OUT/`` reads as the points alone. A null cell has its column's declared
type (:mod:`pcs.sweep.columns`), so the points of one plan read as one
dataset with ``pyarrow.dataset.dataset(out).to_table()`` and
``pq.read_table(out)``. Rows of different plans may differ in columns
(other tiers, other kinds): :func:`read_results` unifies them, a column a
row lacks being null.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
from pcs.errors import UserError

__all__ = ["done_ids", "misplaced_row", "write_point", "read_results", "encode_row", "encode_requests", "REQUESTS_DIR"]

REQUESTS_DIR = "_requests"


def done_ids(out: str | Path) -> set[str]:
    """Ids of the points whose row is in ``out`` and reads back (an absent directory has none).

    A file that is not a readable point file (:func:`point_file_problem`: truncated, garbage, another
    table) is not done: ``pcs sweep run`` runs its point again and replaces it."""
    out = Path(out)
    return {p.stem for p in out.glob("*.parquet") if _holds_own_row(p)} if out.is_dir() else set()


def _holds_own_row(path: Path) -> bool:
    """Whether ``path`` is a point file (:func:`point_file_problem`) holding its own point's row
    (:func:`misplaced_row`: a copied or renamed file is not its name's point, which must run)."""
    if point_file_problem(path) is not None:
        return False
    import pyarrow.parquet as pq

    try:
        ids = pq.read_table(path, columns=["point_id"], use_threads=False).column(0).to_pylist()
    except (OSError, ValueError):
        return False
    return misplaced_row(path, ids[0]) is None


def misplaced_row(path: Path, point_id: Any) -> str | None:
    """Why a point file's row is not its name's point, or None when it is: ``<point_id>.parquet`` holds the row
    whose ``point_id`` is that name (:func:`write_point`); another point's row (a copied or renamed file) would
    count that point twice and leave the named one unrun."""
    if point_id == path.stem:
        return None
    return f"holds the row of point {point_id!r}, not of {path.stem!r} (a copied or renamed point file)"


def point_file_problem(path: Path, names: list[str] | None = None, rows: int | None = None) -> str | None:
    """Why ``path`` is not a point file of a sweep, or None when it is one: a Parquet file of one row with
    ``point_id`` and ``kind`` columns (:func:`write_point`). ``names`` / ``rows``: its schema's column names
    and row count when already read (else its footer is read)."""
    if names is None or rows is None:
        import pyarrow.parquet as pq

        try:
            meta = pq.read_metadata(path)
        except (OSError, ValueError) as exc:   # pyarrow's ArrowInvalid is a ValueError, ArrowIOError an OSError
            return f"not a readable Parquet file ({_first_line(exc)})"
        names, rows = list(meta.schema.names), meta.num_rows
    if "point_id" not in names or "kind" not in names or rows != 1:
        return (f"not a sweep point file (one row with point_id and kind columns; it has {rows:,} rows"
                f"{'' if 'point_id' in names else ', no point_id column'})")
    return None


def unreadable_point(path: Path, problem: str) -> UserError:
    """The error for a file of a results directory that is not a point file (:func:`point_file_problem`)."""
    return UserError(f"{path}: {problem}: delete or move it (pcs sweep run runs the point of a "
                     "damaged point file again)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _parquet_bytes(table: Any) -> bytes:
    """Parquet bytes without column statistics or the Arrow schema copy: a one-row file of a replay's
    ~160 columns is ~30 KB instead of ~60 KB (the types read back the same)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, write_statistics=False, store_schema=False)
    return sink.getvalue().to_pybytes()


def encode_row(row: dict[str, Any], types: dict[str, str] | None = None) -> bytes:
    """A point's row as the bytes of its one-row Parquet file (made where the point ran, so the
    driver only writes bytes: about 0.3 ms a point instead of 3 ms). ``types``: the declared Arrow
    types of its columns (:func:`pcs.sweep.columns.declared_types`), given to the null ones."""
    from pcs.sweep.columns import typed_table

    return _parquet_bytes(typed_table(row, types or {}))


def encode_requests(point_id: str, requests: Any) -> bytes:
    """A per-request table (pyarrow) as Parquet bytes, with a ``point_id`` column first."""
    import pyarrow as pa

    return _parquet_bytes(requests.add_column(0, "point_id", pa.array([point_id] * requests.num_rows, pa.string())))


def _write_atomic(data: bytes, target: Path) -> None:
    """``data`` onto ``target`` through :func:`pcs.outfile.atomic_output` (a temporary file beside it, renamed)."""
    from pcs.outfile import atomic_output

    with atomic_output(target) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def write_point(out: str | Path, point_id: str, row: bytes, requests: bytes | None = None) -> Path:
    """Write one point's row (and its per-request table) atomically; returns the row's file.

    Args:
        out: the results directory (created if absent).
        point_id: names the files.
        row: :func:`encode_row` of the point's row.
        requests: :func:`encode_requests` of its per-request table, or None.
    Raises:
        OSError: the directory cannot be written.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if requests is not None:
        (out / REQUESTS_DIR).mkdir(exist_ok=True)
        _write_atomic(requests, out / REQUESTS_DIR / f"{point_id}.parquet")
    target = out / f"{point_id}.parquet"
    _write_atomic(row, target)
    return target


def read_results(out: str | Path) -> Any:
    """Every finished point of ``out`` as one pyarrow Table, rows ordered by point id.

    Columns are the union over the files (first seen first); a column a file
    lacks is null in its row; a column that is null in some rows and numbers
    in others takes the numbers' type.

    Raises:
        PathError: ``out`` is missing, not a directory or not readable.
        UserError: a column has incompatible types across files (text in one, numbers in another); a
            ``*.parquet`` file that is not a readable point file (named).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    from pcs.trace.pathcheck import check_input_dir

    check_input_dir(out, "out")
    from concurrent.futures import ThreadPoolExecutor

    files = sorted(out.glob("*.parquet"))
    # one file per point, each ~240 columns: the per-file decode dominates; pyarrow releases the GIL, so
    # reading files on a few threads at once halves the time on 2 cores (benchmarks/bench_sweep.py)
    def read(f: Path):
        problem = point_file_problem(f)
        if problem is not None:
            raise unreadable_point(f, problem)
        try:
            table = pq.read_table(f, use_threads=False)
        except (OSError, ValueError) as exc:
            raise unreadable_point(f, f"not a readable Parquet file ({_first_line(exc)})") from None
        misplaced = misplaced_row(f, table.column("point_id")[0].as_py())
        if misplaced is not None:
            raise unreadable_point(f, misplaced)
        return table

    with ThreadPoolExecutor(max_workers=min(8, max(1, len(files)))) as pool:
        tables = list(pool.map(read, files))
    if not tables:
        return pa.table({"point_id": pa.array([], pa.string()), "kind": pa.array([], pa.string())})
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise UserError(f"{out}: the points' columns do not fit together: {str(exc).splitlines()[0]}") from None
