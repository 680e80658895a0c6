"""Shared CLI pieces: the output-format option, one emit path, error mapping.

Every command builds a JSON-able ``dict`` payload and a table string, then
calls :func:`emit`; nothing else prints results.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import sys
from typing import Any, Callable, Iterator

import click

__all__ = ["PcsUsageError", "format_option", "emit", "user_errors", "to_jsonable"]


class PcsUsageError(click.ClickException):
    """A user error: printed as one line ``pcs: error: ...``, exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:  # noqa: D401 - click API
        click.echo(f"pcs: error: {self.format_message()}", err=True)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn user-input failures into :class:`PcsUsageError` (exit 2, one line).

    Caught: click's ``UsageError`` (bad option values, missing options,
    unknown commands: one line naming the command's ``--help``),
    ``ValueError`` (bad values, :class:`pcs.errors.InputError`),
    ``FileNotFoundError``/``IsADirectoryError``/``PermissionError``, and
    ``KeyError`` raised for unknown preset names.
    """
    try:
        yield
    except click.UsageError as exc:  # click's own parse errors: one line too, not usage + hint + error
        where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        raise PcsUsageError(f"{exc.format_message()}{where}") from None
    except click.ClickException:
        raise
    except (ValueError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        raise PcsUsageError(str(msg).splitlines()[0] if str(msg) else type(exc).__name__) from None
    except (FileNotFoundError, IsADirectoryError, PermissionError, NotADirectoryError) as exc:
        raise PcsUsageError(f"{exc.filename}: {exc.strerror}") from None
    except BrokenPipeError:  # `pcs ... | head`
        sys.stderr.close()


def format_option(f: Callable) -> Callable:
    """``--format table|json|csv`` (default table)."""
    return click.option(
        "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
        show_default=True, help="Output format. JSON keys are documented in docs/ and stay stable.",
    )(f)


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and non-finite floats for JSON.

    NaN and infinities become ``None`` (JSON has no spelling for them).
    """
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if np is not None:
        if isinstance(obj, np.ndarray):
            return [to_jsonable(v) for v in obj.tolist()]
        if isinstance(obj, np.generic):
            obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _csv_text(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    if rows:
        fields: list[str] = []
        for row in rows:
            for k in row:
                if k not in fields:
                    fields.append(k)
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for row in rows:
            w.writerow({k: ("" if v is None else v) for k, v in to_jsonable(row).items()})
    return buf.getvalue()


def emit(payload: dict[str, Any], fmt: str, table: str | Callable[[], str], rows_key: str | None = "rows") -> None:
    """Print one result in the chosen format.

    Args:
        payload: the JSON object (stable keys, documented in docs/).
        fmt: ``table``, ``json`` or ``csv``.
        table: the rendered table, or a callable returning it.
        rows_key: for CSV, the payload key holding a list of row dicts; when
            absent or None the flat scalar fields of ``payload`` make one row.
    """
    if fmt == "json":
        click.echo(json.dumps(to_jsonable(payload), indent=2))
    elif fmt == "csv":
        rows = payload.get(rows_key) if rows_key else None
        if not isinstance(rows, list):
            rows = [{k: v for k, v in payload.items() if not isinstance(v, (dict, list))}]
        click.echo(_csv_text(rows), nl=False)
    else:
        click.echo(table() if callable(table) else table)
