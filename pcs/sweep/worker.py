"""What runs where a point runs: the trace held in memory, one task -> one row.

:class:`LoadedTrace` is a trace read once by the driver (numpy columns, no
file handle), so it pickles to a process-pool worker once and goes into
Ray's object store once, whatever the node. :func:`run_task` makes the
task's one ``pcs`` call and turns the typed result's ``to_dict()`` into the
dataset row (:func:`make_row`); an exception in a point is returned as
an :class:`Outcome` with the error, so one bad point does not stop the others.
"""
from __future__ import annotations

import json
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pcs.errors import UserError

__all__ = ["LoadedTrace", "Outcome", "load_trace", "run_task", "make_row", "flatten", "init_worker",
           "run_pooled", "LABEL_KEYS"]

#: keys that name the entries of a list of objects in a result (``tiers[].name`` -> ``tiers.gpu.*``; a footprint's
#: ``by_dtype`` rows by their ``layout``: two fp8 layouts share the value type ``dtype``)
LABEL_KEYS = ("name", "tier", "variant", "capacity_blocks", "component", "layout", "dtype")


class LoadedTrace:
    """A trace read into memory: what :func:`pcs.replay`, :func:`pcs.compare` and :func:`pcs.curve` read.

    Attributes:
        path: the file read (as :class:`pcs.trace.Trace` has it; ``ReplaySummary.trace`` shows it).
        name: the name messages use.
        block_size: tokens per block of the ids.
        batches: the :class:`pcs.trace.RequestBatch` es in order (ids numbered from 0).
        reuse: where the ids' sharing comes from (:attr:`pcs.trace.Trace.reuse`).
        skipped: bad lines skipped by the read (``on_error="skip"``).
        skipped_lines: the first of them named (:attr:`pcs.trace.Trace.skipped_lines`).
        format: the trace format read (:attr:`pcs.trace.Trace.format`; the notes name a command for Azure CSVs).

    Memory: the whole trace's columns (about 8 bytes per block hash plus
    40 bytes per request).
    """

    __slots__ = ("path", "name", "block_size", "batches", "reuse", "skipped", "format", "skipped_lines")

    def __init__(self, path: Path, name: str, block_size: int, batches: list, reuse: str = "recorded",
                 skipped: int = 0, format: str | None = None, skipped_lines: tuple = ()) -> None:
        self.path, self.name, self.block_size, self.batches = path, name, block_size, batches
        self.reuse, self.skipped, self.format, self.skipped_lines = reuse, skipped, format, skipped_lines

    def __repr__(self) -> str:
        return f"LoadedTrace({self.name!r}, block_size={self.block_size}, batches={len(self.batches)})"

    def iter_batches(self) -> Iterator[Any]:
        """The batches, as :meth:`pcs.trace.Trace.iter_batches` yields them."""
        return iter(self.batches)

    def estimated_requests(self) -> int:
        """The number of requests (exact: they are in memory)."""
        return sum(len(b) for b in self.batches)

    def __iter__(self):
        for b in self.batches:
            yield from b.requests()


def load_trace(key: tuple) -> LoadedTrace:
    """Open and read the trace of a :attr:`pcs.sweep.kinds.Task.trace_key`.

    Raises:
        PathError: the trace is missing, a directory or not readable (named as the plan's ``trace``).
        InputError / UserError: as :func:`pcs.trace.open_trace` and its readers (with the step scheduler's row
            bounds when the key says so: an output length of 2**62 tokens or more, named by file, line and field).
    """
    from pcs.trace import open_trace
    from pcs.trace.pathcheck import check_input_file
    from pcs.trace.rowlimits import STEP_LIMITS

    path, open_kwargs, step = key
    if path is not None:
        check_input_file(path, "trace")
    try:
        trace = open_trace(path, **dict(open_kwargs))
        trace = trace.limited(STEP_LIMITS) if step else trace     # the step scheduler's row bounds, as replay reads
        batches = list(trace.iter_batches())
    except UserError as exc:
        raise _in_plan_words(exc) from None
    return LoadedTrace(trace.path, trace.name, trace.block_size, batches, trace.reuse, trace.skipped, trace.format,
                       trace.skipped_lines)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished point.

    Attributes:
        point_id: the point.
        row: the dataset row as one-row Parquet bytes (:func:`pcs.sweep.store.encode_row`;
            None when the point failed).
        requests: the per-request table as Parquet bytes, when asked and the kind has one.
        error: the exception's message (its class name only when it has none) when the point failed, else None.
        user_error: the failure is the input's (a :class:`pcs.errors.UserError` or OSError), not a bug.
        traceback: the failure's traceback text (bugs only).
        option: the plan option the failure refuses, when the error tells (:func:`pcs.sweep.kinds.culprit`; the
            driver names the plan line of its value), else None.
    """

    point_id: str
    row: bytes | None
    requests: bytes | None = None
    error: str | None = None
    user_error: bool = False
    traceback: str | None = None
    option: str | None = None


def _scalar(value: Any) -> Any:
    """A cell: lists as JSON text, NaN/inf as None, numpy scalars as Python ones."""
    from pcs.cli.common import to_jsonable

    value = to_jsonable(value)
    return json.dumps(value) if isinstance(value, list) else value


def _label(items: list) -> list[str] | None:
    """The labels of a list of objects, when one of :data:`LABEL_KEYS` names each entry uniquely."""
    if not items or not all(isinstance(x, dict) for x in items):
        return None
    for key in LABEL_KEYS:
        labels = [x.get(key) for x in items]
        if all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in labels) \
                and len(set(map(str, labels))) == len(labels):
            return [str(v) for v in labels]
    return None


#: Keys a command's ``--format json`` adds beside its result's ``to_dict()``, kept in a point's ``result_json``
#: only, never made into columns (docs/sweep.md: the columns are the ``to_dict()`` keys): the command line that
#: reruns a replay, a compare variant's tier sizes (the ``tiers`` column and the variant's own keys hold them).
JSON_ONLY = frozenset({"replay_command", "tier_capacities"})


def flatten(payload: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A result's JSON object as flat columns, less the :data:`JSON_ONLY` keys at any depth.

    Nested objects join their keys with dots (``gap.concurrency``); a list of
    objects keyed by one of :data:`LABEL_KEYS` becomes one group per entry
    (``tiers.gpu.hit_blocks``, ``envelope.links.cpu.restore_s``); any other
    list is a JSON text cell (``notes``).
    """
    out: dict[str, Any] = {}
    for k, v in payload.items():
        if k in JSON_ONLY:
            continue
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        elif isinstance(v, (list, tuple)) and _label(list(v)) is not None:
            for label, item in zip(_label(list(v)), v):
                out.update(flatten(item, f"{key}.{label}."))
        else:
            out[key] = _scalar(list(v) if isinstance(v, tuple) else v)
    return out


def make_row(point_id: str, kind: str, options: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """The dataset row of a point (columns: docs/sweep.md).

    ``point_id``, ``kind``, one ``option.NAME`` column per option
    (``option.tier.cpu`` per entry of a NAME=VALUE option), the flattened
    result (:func:`flatten`), and ``result_json``: the result's whole JSON
    object, as the command prints it with ``--format json`` (less the ``trace_file`` pcs replay adds for
    pcs report: a sweep names its trace in ``option.trace``; pcs curve's ``dtype`` and ``layout``: ``option.dtype``). A point that read a trace (its result has
    ``skipped``) has a ``skipped_lines`` cell whether or not the read skipped a line: ``[]`` for a clean read, as
    its ``skipped`` is 0 (the JSON leaves the key out, as every command's does), so one plan's points have the same
    columns and a clean point's cell is never null beside a point that skipped lines (docs/sweep.md).
    """
    from pcs.cli.common import to_jsonable

    row: dict[str, Any] = {"point_id": point_id, "kind": kind}
    for name, value in options.items():
        if isinstance(value, dict):
            row.update({f"option.{name}.{e}": _scalar(v) for e, v in value.items()})
        else:
            row[f"option.{name}"] = _scalar(value)
    row.update(flatten(payload))
    if "skipped" in payload:
        row.setdefault("skipped_lines", "[]")       # a clean read names no line (its JSON leaves the key out)
    row["result_json"] = json.dumps(to_jsonable(payload))
    return row


def run_task(task: Any, trace: Any = None, with_requests: bool = False) -> Outcome:
    """Run one :class:`pcs.sweep.kinds.Task`: its ``pcs`` call on ``trace``, the row.

    Args:
        task: the task.
        trace: the loaded trace of ``task.trace_key`` (None for footprint).
        with_requests: keep a replay's per-request table.
    Returns:
        :class:`Outcome` with the row encoded here (the driver only writes bytes); exceptions are
        caught into it (never raised).
    """
    import pcs
    from pcs.sweep.columns import declared_types
    from pcs.sweep.store import encode_requests, encode_row

    try:
        fn = getattr(pcs, task.call)
        res = fn(trace, **task.kwargs) if task.trace_key is not None else fn(**task.kwargs)
        typed = _replay_summary(res.summary, trace) if task.call == "replay" else res
        requests = (encode_requests(task.point_id, res.requests) if with_requests and task.call == "replay"
                    else None)
        row = encode_row(make_row(task.point_id, task.kind, task.options, _payload(task, typed, trace)),
                         declared_types(typed))
        return Outcome(task.point_id, row, requests)
    except Exception as exc:  # noqa: BLE001 - reported per point by the driver
        from pcs.errors import UserError

        user = isinstance(exc, (UserError, OSError))   # a plain ValueError is a bug (pcs/errors.py)
        msg = str(exc).splitlines()[0] if str(exc) else ""
        option = None
        if user:        # the API's words (max_num_seqs, engine='auto') in the plan's (max-num-seqs, engine = "auto")
            from pcs.cli.common import option_names
            from pcs.sweep.kinds import culprit
            msg, option = option_names(msg, plan=True), culprit(exc, task.options) or _quoted_holder(msg, task.options)
        return Outcome(task.point_id, None, None, msg or type(exc).__name__, user,   # the message, no class name
                       None if user else traceback.format_exc(), option)


def _quoted_holder(message: str, options: dict[str, Any]) -> str | None:
    """The one option whose (string) value ``message`` quotes (``engine 'lru-scan' cannot run this replay``:
    ``engine``), or None when none or several do: a failed point's line is then not named, never guessed."""
    quoted = set(re.findall(r"""(?<!\w)'([^'\\]+)'""", message))
    holders = [k for k, v in options.items() if isinstance(v, str) and v in quoted]
    return holders[0] if len(holders) == 1 else None


def _payload(task: Any, typed: Any, trace: Any) -> dict[str, Any]:
    """The point's JSON object as its command prints it with ``--format json`` (docs/sweep.md, ``result_json``):
    a footprint's with its notes (:func:`pcs.report.footprint.footprint_payload`), the others with the count of the
    lines their read skipped and the first of them named (``skipped``, ``skipped_lines``:
    :func:`pcs.cli.common.with_skipped_lines`, in the plan's words) and the notes and keys the command adds
    (:func:`_with_notes`); a replay's with the ``replay_command`` that reruns it (:attr:`pcs.sweep.kinds.Task.rerun`)."""
    if task.call == "footprint":
        from pcs.report.footprint import footprint_payload

        return footprint_payload(typed, task.kwargs["model"], task.kwargs.get("dtype"))
    payload = typed.to_dict()
    if trace is not None:
        from pcs.cli.common import with_skipped_lines

        with_skipped_lines(payload, trace, _plan_words)
    if task.call == "replay" and getattr(task, "rerun", None):
        payload["replay_command"] = task.rerun
    return _with_notes(task.call, payload, trace, typed)


def _with_notes(call: str, payload: dict[str, Any], trace: Any, typed: Any = None) -> dict[str, Any]:
    """``pcs compare`` / ``pcs curve`` payloads with the trace's notes, and a compare's with its tiers' notes
    (:func:`pcs.cli.compare.tier_notes`) and each variant's ``tier_capacities`` (:func:`pcs.cli.compare.
    add_tier_capacities`), as those commands print them with ``--format json``."""
    if call not in ("compare", "curve"):
        return payload
    notes: list = []
    if trace is not None:
        from pcs.trace.api import trace_notes

        notes += trace_notes(trace, _plan_words)
    if call == "compare" and typed is not None:
        from pcs.cli.compare import add_tier_capacities, tier_notes

        notes += tier_notes(typed)
        payload = dict(payload, variants=[dict(v) for v in payload["variants"]])
        add_tier_capacities(typed, payload)
    if notes:
        payload = {**payload, "notes": list(payload.get("notes") or []) + notes}
    return payload


def _replay_summary(summary: Any, trace: LoadedTrace) -> Any:
    """The summary with the notes ``pcs replay`` adds after the run (the trace's, then the tiers that never
    received a block: :func:`pcs.report.tiercheck.with_replay_notes`)."""
    from pcs.report.tiercheck import with_replay_notes

    return with_replay_notes(summary, trace, _plan_words)


def _in_plan_words(exc: UserError) -> UserError:
    """A trace reader's refusal (API words: ``on_error='skip'``, ``timing='sequential'``) in a plan's words
    (``on-error = "skip"``, ``timing = "sequential"``), marked so the command line prints it as it is
    (``plan_words``, as :class:`pcs.sweep.kinds.PlanError`); a path refusal and a plug-in's error unchanged.
    ``exc`` itself is re-worded (its class kept) and returned."""
    from pcs.errors import InputError, PathError

    if isinstance(exc, PathError) or not (isinstance(exc, InputError) or type(exc) is UserError):
        return exc
    if isinstance(exc, InputError):     # its own class kept (a blank line's, a cut file's): only the words change
        exc.problem = _plan_words(exc.problem)
        exc.args = (str(InputError(exc.path, exc.line, exc.field, exc.problem)),)
    else:
        exc.args = (_plan_words(str(exc)),)
    exc.plan_words = True
    return exc


def _plan_words(text: str) -> str:
    """An API message in a sweep plan's words (``sort = true`` for ``sort=``: :func:`pcs.cli.common.option_names`)."""
    from pcs.cli.common import option_names

    return option_names(text, plan=True)


_TRACES: dict[tuple, LoadedTrace] = {}


def init_worker(traces: dict[tuple, LoadedTrace]) -> None:
    """Process-pool initializer: keep the driver's loaded traces (pickled once per worker).

    Workers ignore SIGINT: Ctrl-C reaches the whole process group, and the driver alone handles it (it ends the
    pool and says how many points are saved); a worker's own KeyboardInterrupt printed a traceback. The driver
    starts its workers with SIGINT ignored already (:func:`pcs.sweep.backends.run_local`); this keeps it so in
    a pool started otherwise.
    """
    import signal

    global _TRACES
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _TRACES = traces


def run_pooled(args: tuple) -> Outcome:
    """Process-pool entry: ``(task, with_requests)`` -> :func:`run_task` on the worker's copy of the trace."""
    task, with_requests = args
    return run_task(task, _TRACES.get(task.trace_key), with_requests)
