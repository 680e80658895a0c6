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
from pcs._heldimport import held_import
from pcs.errors import UserError, shown_path, shown_repr
from pcs.outfile import arrow_file

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
    pq = held_import("pyarrow.parquet")

    try:
        with arrow_file(path) as f:      # by its bytes: the folder's name need not be UTF-8
            names = pq.read_schema(f).names
            table = pq.read_table(f, columns=[n for n in ("point_id", "kind") if n in names], use_threads=False)
    except (OSError, ValueError, KeyError):
        return False
    return misplaced_row(path, table.column("point_id")[0].as_py()) is None and not old_curve_point(table, names)


#: A curve point's columns written before 2026-12-04 -> today's names (pcs.curves.result.upgrade_curve_payload).
_OLD_CURVE_COLUMNS = {"block_accesses": "cacheable_blocks", "distinct_blocks": "distinct_cacheable_blocks"}


def old_curve_point(table: Any, names: Any = None) -> bool:
    """Whether a point file's one-row ``table`` is a curve point written before 2026-12-04, when its
    ``block_accesses`` counted the cacheable blocks and ``distinct_blocks`` the distinct ones among them
    (docs/json.md): such a point is not done (``pcs sweep run`` runs it again under today's names, so one column
    never holds both meanings), and :func:`read_results` reads it under today's names. ``names``: the file's
    column names when ``table`` holds only some of its columns (``point_id`` and ``kind`` at least)."""
    names = set(table.column_names if names is None else names)
    return ("kind" in names and table.column("kind")[0].as_py() == "curve" and "distinct_blocks" in names
            and "cacheable_blocks" not in names)


def _upgraded_curve_point(table: Any) -> Any:
    """An old curve point's ``table`` (:func:`old_curve_point`) under today's names: its two counts renamed,
    ``block_accesses`` (every hash id, not written then) null, its ``result_json`` upgraded alike."""
    import json

    pa = held_import("pyarrow")

    from pcs import jsondepth
    from pcs.curves.result import upgrade_curve_payload

    table = table.rename_columns([_OLD_CURVE_COLUMNS.get(n, n) for n in table.column_names])
    table = table.append_column("block_accesses", pa.array([None], pa.int64()))
    if "result_json" in table.column_names and table.column("result_json")[0].as_py() is not None:
        payload = upgrade_curve_payload(jsondepth.loads(table.column("result_json")[0].as_py(),
                                                        object_pairs_hook=jsondepth.no_duplicate_keys))
        i = table.column_names.index("result_json")
        table = table.set_column(i, "result_json", pa.array([json.dumps(payload)], table.schema.field(i).type))
    return table


def misplaced_row(path: Path, point_id: Any) -> str | None:
    """Why a point file's row is not its name's point, or None when it is: ``<point_id>.parquet`` holds the row
    whose ``point_id`` is that name (:func:`write_point`); another point's row (a copied or renamed file) would
    count that point twice and leave the named one unrun."""
    if point_id == path.stem:
        return None
    return f"holds the row of point {shown_repr(point_id)}, not of {shown_repr(path.stem)} (a copied or renamed point file)"


def point_file_problem(path: Path, names: list[str] | None = None, rows: int | None = None) -> str | None:
    """Why ``path`` is not a point file of a sweep, or None when it is one: a Parquet file of one row with
    ``point_id`` and ``kind`` columns (:func:`write_point`). ``names`` / ``rows``: its schema's column names
    and row count when already read (else its footer is read)."""
    if names is None or rows is None:
        pq = held_import("pyarrow.parquet")

        try:
            with arrow_file(path) as f:      # by its bytes: the folder's name need not be UTF-8
                meta = pq.read_metadata(f)
        except (OSError, ValueError) as exc:   # pyarrow's ArrowInvalid is a ValueError, ArrowIOError an OSError
            return f"not a readable Parquet file ({_first_line(exc)})"
        names, rows = list(meta.schema.names), meta.num_rows
    if "point_id" not in names or "kind" not in names or rows != 1:
        return (f"not a sweep point file (one row with point_id and kind columns; it has {rows:,} rows"
                f"{'' if 'point_id' in names else ', no point_id column'})")
    return None


def unreadable_point(path: Path, problem: str) -> UserError:
    """The error for a file of a results directory that is not a point file (:func:`point_file_problem`)."""
    return UserError(f"{shown_path(path)}: {problem}: delete or move it (pcs sweep run runs the point of a "
                     "damaged point file again)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _parquet_bytes(table: Any) -> bytes:
    """Parquet bytes without column statistics or the Arrow schema copy: a one-row file of a replay's
    ~160 columns is ~30 KB instead of ~60 KB (the types read back the same)."""
    pa = held_import("pyarrow")
    pq = held_import("pyarrow.parquet")

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
    pa = held_import("pyarrow")

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
    pa = held_import("pyarrow")
    pq = held_import("pyarrow.parquet")

    from pcs.trace.pathcheck import check_input_dir

    check_input_dir(out, "out")        # the path as given (Path('') is '.')
    out = Path(out)
    from concurrent.futures import ThreadPoolExecutor

    files = sorted(out.glob("*.parquet"))
    # one file per point, each ~240 columns: the per-file decode dominates; pyarrow releases the GIL, so
    # reading files on a few threads at once halves the time on 2 cores (benchmarks/bench_sweep.py)
    def read(f: Path):
        problem = point_file_problem(f)
        if problem is not None:
            raise unreadable_point(f, problem)
        try:
            with arrow_file(f) as source:
                table = pq.read_table(source, use_threads=False)
        except (OSError, ValueError) as exc:
            raise unreadable_point(f, f"not a readable Parquet file ({_first_line(exc)})") from None
        misplaced = misplaced_row(f, table.column("point_id")[0].as_py())
        if misplaced is not None:
            raise unreadable_point(f, misplaced)
        if not old_curve_point(table):
            return table
        try:
            return _upgraded_curve_point(table)
        except ValueError as exc:     # its result_json not JSON, or a key twice in one object
            raise unreadable_point(f, f"result_json is not the JSON pcs writes ({_first_line(exc)})") from None

    with ThreadPoolExecutor(max_workers=min(8, max(1, len(files)))) as pool:
        tables = list(pool.map(read, files))
    if not tables:
        return pa.table({"point_id": pa.array([], pa.string()), "kind": pa.array([], pa.string())})
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise UserError(f"{out}: the points' columns do not fit together: {str(exc).splitlines()[0]}") from None
