"""Shared CLI pieces: output-format and quiet options, choices, progress, one emit path, error grades.

Every command parses options, calls the API, renders with :mod:`pcs.report`
and calls :func:`emit`; nothing else prints results.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import sys
import traceback
from typing import Any, Callable, Iterable, Iterator

import click

from pcs.errors import BUG_REPORT

__all__ = ["PcsUsageError", "RegistryChoice", "format_option", "quiet_option", "Progress", "emit", "user_errors",
           "to_jsonable"]


class PcsUsageError(click.ClickException):
    """A user error: printed as one line ``pcs: error: ...``, exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:  # noqa: D401 - click API
        click.echo(f"pcs: error: {self.format_message()}", err=True)


class PcsInternalError(click.ClickException):
    """A bug in pcs: the traceback, then one line saying it is a bug and where to report it; exit code 1."""

    exit_code = 1

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    def show(self, file=None) -> None:  # noqa: D401 - click API
        click.echo(self.trace, err=True, nl=False)
        click.echo(f"pcs: internal error: {BUG_REPORT}", err=True)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Grade what escapes a command: user errors as one line (exit 2), bugs with a traceback (exit 1).

    User errors (:class:`PcsUsageError`, one line ``pcs: error: ...``):
    click's ``UsageError`` (bad option values, missing options, unknown
    commands: one line naming the command's ``--help``); ``ValueError``,
    the house grade for bad user input, with its subclasses
    :class:`pcs.errors.InputError` (file content) and
    :class:`pcs.errors.UnknownNameError` (registry lookups: models, GPUs,
    links, policies); ``OSError`` on a file (missing, a directory, no
    permission ...). Every other exception (``AssertionError``,
    ``TypeError``, ``IndexError``, ``KeyError`` ...) is a bug in pcs
    (:class:`PcsInternalError`). A closed pipe (``pcs ... | head``) ends
    quietly. Grades: :mod:`pcs.errors`.
    """
    try:
        yield
    except click.UsageError as exc:  # click's own parse errors: one line too, not usage + hint + error
        where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        raise PcsUsageError(f"{exc.format_message()}{where}") from None
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except ValueError as exc:
        raise PcsUsageError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    except BrokenPipeError:  # `pcs ... | head`
        sys.stderr.close()
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        raise PcsUsageError(f"{where}{exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - everything else is a bug: show it, say so
        raise PcsInternalError(exc) from None


class RegistryChoice(click.Choice):
    """A ``click.Choice`` over a registry's names that also accepts its aliases, checked by the registry.

    The value reaches the command as the user wrote it (so a result that
    echoes it stays as today); ``lookup`` (e.g.
    :func:`pcs.cache.policies.get_policy`) decides validity and raises
    ``ValueError`` naming the valid names, which becomes click's one-line
    usage error naming the option.

    Args:
        choices: the names shown in ``--help`` (registered names, then aliases).
        lookup: callable raising ``ValueError`` for an unknown name.
    """

    def __init__(self, choices: Iterable[str], lookup: Callable[[str], Any]) -> None:
        super().__init__(list(choices), case_sensitive=False)
        self.lookup = lookup

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            self.lookup(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return value


class Progress:
    """A tqdm bar on stderr after ~2 s, called with the work done since the last call.

    Off with ``--quiet`` or when stderr is not a terminal (nothing on a
    non-terminal stderr).

    Args:
        quiet: the ``--quiet`` flag.
        desc: the bar's label.
        unit: the unit counted, e.g. ``" req"``.
        total: the total work when known (gives an ETA), else None.
    """

    def __init__(self, quiet: bool, desc: str = "replay", unit: str = " req", total: int | None = None) -> None:
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit=unit, delay=2.0, file=sys.stderr, leave=False, desc=desc)

    def __call__(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def quiet_option(f: Callable) -> Callable:
    """``-q/--quiet``: no progress bar and no notes on stderr (every command takes it)."""
    return click.option("--quiet", "-q", is_flag=True, help="No progress bar and no notes on stderr.")(f)


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
