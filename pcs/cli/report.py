"""``pcs report``: one self-contained HTML page (and ``--plot`` figures) from the JSON of other commands.

Also the ``--html FILE`` / ``--plot DIR`` options that ``replay``, ``compare``,
``curve`` and ``footprint`` share (:func:`html_options`, :func:`write_outputs`).
The page: :mod:`pcs.report.html`; the figures: :mod:`pcs.report.htmlplot`;
docs/report.md.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import click

from pcs import jsondepth
from pcs.cli.common import command, emit, format_option, quiet_option
from pcs.cli.params import CheckedPath, Choice
from pcs.errors import UserError, bad_byte, shown_path, shown_repr
from pcs.units import a_or_an, format_counted

__all__ = ["report", "html_options", "check_outputs", "write_outputs", "write_replay_outputs", "command_line"]


def html_options(f: Callable) -> Callable:
    """``--html FILE`` and ``--plot DIR`` (the page and its figures)."""
    f = click.option("--plot", "plot_dir", type=CheckedPath(file_okay=False), default=None,
                     help="Also write every figure of the page as DIR/<figure>.png and .svg "
                          "(needs the plot extra: pip install -e '.[plot]').")(f)
    return click.option("--html", "html_path", type=CheckedPath(dir_okay=False), default=None,
                        help="Also write a self-contained HTML report to FILE (charts, tables, inputs; no "
                             "network; needs the report extra: pip install -e '.[report]').")(f)


def command_line() -> list[str] | None:
    """The command line of this pcs process (``pcs`` + its arguments), or None when not run as ``pcs``."""
    prog = os.path.basename(sys.argv[0]) if sys.argv else ""
    return ["pcs", *sys.argv[1:]] if prog in ("pcs", "__main__.py") else None


def check_outputs(html_path: str | None, plot_dir: str | None, inputs: Mapping[str, object] = {},
                  html_option: str = "--html", others: Mapping[str, object] = {}) -> None:
    """Fail before any work when an output cannot be written or its extra is not installed.

    The page goes through :func:`pcs.outfile.check_outputs` (its folder
    exists and is writable, it is not an input of the run, not ``-``);
    ``--plot DIR`` is a folder (made if missing) whose parent must exist, and not a symbolic link to a missing
    target (:func:`pcs.trace.pathcheck.dangling_link_problem`: ``curve --plot DIR`` takes a file as well, so its
    ``CheckedPath`` lets a link through).

    Args:
        inputs: what each input of the run is (``"TRACE"`` ...) -> its path or None.
        html_option: the option naming the page (``--html``; ``-o`` for ``pcs report``).
        others: the run's other outputs (``"--requests-out"`` -> path or None), already checked one by one;
            no two outputs of a run, the ``--plot`` folder included, may name one path.
    Raises:
        UserError: one line naming the option and the fix.
    """
    from pcs.outfile import check_outputs as check_files, refuse_dash_folder, refuse_one_path

    check_files({**others, html_option: html_path}, inputs)
    refuse_dash_folder("--plot", plot_dir, "figures")
    refuse_one_path("--plot", plot_dir, {**others, html_option: html_path})
    if plot_dir:
        p = Path(plot_dir)
        if p.is_symlink() and not p.exists():     # no folder can be made there (it said `File exists`)
            from pcs.trace.pathcheck import dangling_link_problem

            raise UserError(f"--plot {shown_path(plot_dir)}: {dangling_link_problem(plot_dir)}")
        if p.exists() and not p.is_dir():
            raise UserError(f"--plot {shown_path(plot_dir)}: exists and is not a folder (--plot names a folder of "
                            "figures)")
        if not p.resolve().parent.is_dir():
            raise UserError(f"--plot {shown_path(plot_dir)}: the folder {shown_repr(str(p.parent))} does not exist")
    if html_path:
        from pcs.report.html import require_jinja2

        require_jinja2()
    if plot_dir:
        from pcs.report.htmlplot import require_vl_convert

        require_vl_convert()


def write_outputs(html_path: str | None, plot_dir: str | None, payloads: Sequence[dict], *,
                  curve: dict | None = None, oracle: dict | None = None) -> dict:
    """Write the page and/or the figures of ``payloads`` (see :func:`pcs.report.html.write_report`).

    Returns:
        ``{"html", "html_bytes", "charts", "plots"}``: the page written (None
        without ``html_path``), its size in bytes, the chart ids, the figure files.
    Raises:
        UserError: a missing extra (Jinja2, vl-convert); a directory that does not exist.
    """
    done: dict[str, Any] = {"html": html_path, "html_bytes": None, "charts": [], "plots": []}
    if not (html_path or plot_dir):
        return done
    check_outputs(html_path, plot_dir)
    from pcs.cli.common import to_jsonable
    from pcs.report.html import write_report
    from pcs.report.htmlpage import build_page

    payloads = [to_jsonable(p) for p in payloads]
    if html_path:
        page = write_report(html_path, payloads, curve=curve, oracle=oracle, command=command_line())
    else:
        page = build_page(payloads, curve=curve, oracle=oracle)
    done["charts"] = [c.id for c in page["charts"]]
    if html_path:
        done["html_bytes"] = Path(html_path).stat().st_size
    if plot_dir:
        from pcs.report.htmlplot import write_plots

        done["plots"] = [str(p) for p in write_plots(page["charts"], plot_dir)]
    return done


def _unreadable_trace(trace: str) -> str | None:
    """Why a replay JSON's ``trace`` cannot be read again for its page, or None when it is a file:
    missing, stdin, a directory, a device, a FIFO or a socket (:func:`pcs.outfile.node_kind`)."""
    from pcs.outfile import node_kind

    if trace == "-":
        return "trace - was stdin, read once by the run"
    shown = shown_path(trace)
    try:
        kind = node_kind(trace)
    except OSError as exc:
        return f"trace {shown} cannot be read ({exc.strerror or exc})"
    if kind == "file":
        return None
    return f"trace {shown} not found" if kind is None else f"trace {shown} is {a_or_an(kind)}, not a file"


def replay_page_curve(trace: Any, s: dict, quiet: bool) -> tuple[dict | None, dict | None]:
    """The curve and oracle of a replay page (:func:`pcs.report.htmlcurve.replay_curve`); (None, None) if unreadable."""
    from pcs.report.htmlcurve import replay_curve

    why = _unreadable_trace(trace) if isinstance(trace, str) else None
    if not why and isinstance(trace, str) and any("re-blocked" in str(n) for n in s.get("notes", ())):
        why = "the run re-blocked its trace"
    if why:
        if not quiet:
            click.echo(f"pcs: note: {why}: no hit-rate curve and no oracle on the page (give a pcs curve JSON "
                       "too)", err=True)
        return None, None
    return replay_curve(trace, s)


def write_replay_outputs(html_path: str | None, plot_dir: str | None, result: Any, kw: dict[str, Any],
                         trace: Any = None, summary: Any = None, command: str | None = None) -> None:
    """``pcs replay --html/--plot``: the run's page, its curve and oracle from the same trace.

    Args:
        result: the :class:`pcs.engine.api.ReplayResult`.
        kw: the parsed replay options (``trace``, ``trace_format``, ``block_size``, ``sort``, ``on_error``,
            ``quiet``): the trace is read again for the curve and oracle as the run read it (``--on-error skip``
            skips the bad lines the run skipped; ``--sort`` orders it the same).
        trace: the opened trace the run read when it is not a plain path (a re-blocked one).
        summary: the summary the command prints (the run's with the trace notes added); None = the run's.
        command: the command line that reruns the run (:func:`pcs.cli.rerun.replay_command`), for the page.
    """
    s = (summary if summary is not None else result.summary).to_dict()
    if command:
        s["replay_command"] = command
    as_run = kw.get("sort") or kw.get("on_error", "raise") != "raise"
    if trace is None and kw["trace"] and (kw["trace_format"] or (as_run and _unreadable_trace(kw["trace"]) is None)):
        from pcs.trace import open_trace

        trace = open_trace(kw["trace"], format=kw["trace_format"], block_size=kw["block_size"],
                           sort=kw.get("sort"), on_error=kw.get("on_error", "raise"))
    curve, oracle = replay_page_curve(trace if trace is not None else s["trace"], s, kw["quiet"])
    write_outputs(html_path, plot_dir, [s], curve=curve, oracle=oracle)


def run_read_options(run: dict) -> dict[str, Any]:
    """How a replay JSON's run read its trace, from its ``replay_command`` (``pcs replay ... --on-error skip
    --sort``): the :func:`pcs.trace.open_trace` keywords ``on_error`` and ``sort`` it gave, {} when it gave
    neither (or the JSON has no command: a JSON from before it, or not --format json)."""
    import shlex

    try:
        words = shlex.split(run.get("replay_command") or "")
    except ValueError:
        return {}
    opts: dict[str, Any] = {}
    for i, w in enumerate(words):
        if w == "--sort":
            opts["sort"] = True
        elif w.startswith("--on-error="):
            opts["on_error"] = w.split("=", 1)[1]
        elif w == "--on-error" and i + 1 < len(words):
            opts["on_error"] = words[i + 1]
    return opts


def _as_run_read(trace: str, run: dict) -> Any:
    """The trace path of a replay page, opened as the run read it (:func:`run_read_options`: ``--on-error skip``
    skips the bad lines the run skipped) when it gave such options and the file is there, at the run's block size
    (``block_size``, as :func:`pcs.report.htmlcurve.replay_curve` reads a path: a token trace is blocked at it);
    else the path."""
    opts = run_read_options(run)
    if not opts or _unreadable_trace(trace) is not None or any("re-blocked" in str(n) for n in run.get("notes", ())):
        return trace                            # replay_page_curve notes why there is no curve, as before
    from pcs.trace import open_trace

    return open_trace(trace, block_size=run.get("block_size"), **opts)   # as the path's read: the run's block size


def _unrecorded_trace(run: dict, quiet: bool) -> str:
    """The trace of a replay JSON whose ``trace_file`` is null (stdin, a FIFO) or absent, with a note that it is read
    unchecked (no size or hash recorded): a sweep point's ``result_json`` (a ``replay_command`` and no
    ``trace_file`` key: pcs sweep leaves it out, docs/sweep.md) names it in its ``replay_command`` (absolute, as the sweep read it:
    :func:`pcs.cli.rerun.command_trace`); any other (an older pcs, or not ``--format json``) as typed, from the
    current directory."""
    from pcs.cli.rerun import command_trace

    command = run.get("replay_command")    # a sweep point's: no trace_file key (pcs replay writes null for stdin)
    try:
        trace = command_trace(command) if isinstance(command, str) and "trace_file" not in run else None
    except UserError:                   # not a pcs replay line; the bundled sample missing: named as typed
        trace = None
    if trace is not None and _names_another(trace, run.get("trace")):
        if not quiet:                   # a hand-edited line: its file would draw another trace's curve and oracle
            click.echo(f"pcs: note: the replay JSON has no trace_file and its replay_command names "
                       f"{shown_path(trace)}, not its trace: trace {shown_path(run['trace'])} is read from the "
                       "current directory unchecked", err=True)
        return run["trace"]
    if trace is None:
        if run["trace"] != "-" and not quiet:
            click.echo(f"pcs: note: the replay JSON has no trace_file (an older pcs, or not --format json): trace "
                       f"{shown_path(run['trace'])} is read from the current directory unchecked", err=True)
        return run["trace"]
    if trace != "-" and not quiet:
        from pcs.trace import DEFAULT_TRACE

        how = ("the bundled sample (its replay_command names no trace)" if trace == str(DEFAULT_TRACE)
               else "as its replay_command names it")
        click.echo(f"pcs: note: the replay JSON has no trace_file (a pcs sweep point's result_json: the sweep "
                   f"leaves it out): trace {shown_path(trace)}, {how}, is read unchecked (no size or hash "
                   "recorded)", err=True)
    return trace


def _names_another(command_trace: str, trace: Any) -> bool:
    """Whether a sweep point's ``replay_command`` trace (absolute) is another file than its JSON's ``trace`` (as the
    plan named it, relative to the plan's folder): their last path components differ."""
    return isinstance(trace, str) and os.path.basename(command_trace) != os.path.basename(trace)


def _checked_trace(run: dict, changed: str, quiet: bool) -> str | None:
    """The trace file to read again for a replay page: ``trace_file.path`` (absolute, as the run resolved it)
    after :func:`pcs.trace.fingerprint.trace_file_change` -- a UserError when it is not the run's trace
    (``changed`` ``"refuse"``), else a note; a JSON without ``trace_file``: :func:`_unrecorded_trace`."""
    from pcs.trace.fingerprint import trace_file_change

    recorded = run.get("trace_file")
    if not isinstance(recorded, dict):     # null: stdin or a FIFO (pcs replay), absent: a sweep point, an older pcs
        return _unrecorded_trace(run, quiet)
    if not os.path.lexists(recorded["path"]):
        return recorded["path"]                 # replay_page_curve notes it: no curve, no oracle, as before
    why, note = trace_file_change(recorded)
    if why and changed == "refuse":
        raise UserError(f"{why}: the page's curve and oracle would not be this run's; restore the trace, or give "
                         "--no-curve (no curve, no oracle) or --changed-trace warn (draw them from it anyway)")
    if (why or note) and not quiet:
        click.echo(f"pcs: note: {why or note}" + (": the curve and oracle are drawn from it as it is now"
                                                   if why else ""), err=True)
    return recorded["path"]


#: Keys of a trace's request line (Mooncake ``hash_ids``/``input_length``, the token format's ``token_ids``, a
#: chat request's ``messages``), none of which a pcs JSON document has at its top level.
_TRACE_KEYS = ("hash_ids", "input_length", "token_ids", "messages")


def _refuse_trace(path: str) -> None:
    """Refuse a trace given to ``pcs report`` in one line, before the JSON reader calls it "not JSON".

    A trace is a Parquet file (its ``PAR1`` magic), a CSV trace (an Azure or BurstGPT header, ``timestamp,...``
    in any case) or JSON Lines: a first line that is a request (a key of :data:`_TRACE_KEYS`), or two lines that
    are each an object (vLLM's KV events). A pcs JSON document is one object, indented or on one line, never a
    line per request (docs/json.md).

    Raises:
        UserError: ``PATH: a trace, not pcs JSON: replay it with --format json first``, with the command.
    """
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    lines = [ln for ln in head.lstrip().split(b"\n")[:2] if ln.strip()]
    objs = [_json_object(ln) for ln in lines]
    kind = None
    if head.startswith(b"PAR1"):
        kind = "a Parquet trace"
    elif lines and lines[0].lower().startswith(b"timestamp,"):
        kind = "a CSV trace"
    elif objs and objs[0] is not None and (any(k in objs[0] for k in _TRACE_KEYS)
                                           or len(objs) == 2 and objs[1] is not None):
        kind = "a trace"
    if kind is not None:
        raise UserError(f"{shown_path(path)}: {kind}, not pcs JSON: replay it with --format json first "
                        f"(pcs replay {shown_path(path)} --format json > run.json; then pcs report run.json)")


def _json_object(line: bytes) -> dict | None:
    """``line`` as a JSON object, or None (not JSON, not an object, or cut at the 64 KiB read)."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _json_text(path: str) -> str:
    """The text of a JSON file pcs report reads: UTF-8, a leading byte-order mark skipped (Windows editors write
    one; the trace readers and config files skip it too).

    Raises:
        UserError: ``PATH:LINE: not UTF-8 text (byte N); save the file as UTF-8``.
    """
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise UserError(f"{shown_path(path)}:{line}: not UTF-8 text ({bad_byte(data, exc.start)}); save the file as UTF-8") from None


def _read_payloads(path: str) -> list[dict]:
    """The payloads of one input file: its JSON (:func:`_read_payload`), or for the JSON of a re-blocked replay
    (``pcs replay --block-size b`` on a trace recorded at coarser blocks, :func:`pcs.trace.reblock.interval_payload`:
    the ``lower`` and ``upper`` bounds' replays) its two replays, each checked as a replay JSON and named by its
    ``bound`` (the side-by-side table's columns), the interval's meaning among the first one's notes."""
    payload = _read_payload(path)
    if not _is_interval(payload):
        return [payload]
    out = []
    for bound in ("lower", "upper"):
        try:
            _check_one("replay", payload[bound])
        except (UserError, ValueError) as exc:
            raise UserError(f"{shown_path(path)}: {bound}: {exc}") from None
        out.append({**payload[bound], "bound": bound})
    if payload.get("meaning"):
        out[0]["notes"] = [*out[0].get("notes", ()), str(payload["meaning"])]
    return out


def _is_interval(payload: Any) -> bool:
    """Whether ``payload`` is a re-blocked replay's JSON (both bounds' replays and the interval)."""
    return isinstance(payload, dict) and "hit_ratio_interval" in payload and isinstance(payload.get("lower"), dict) \
        and isinstance(payload.get("upper"), dict)


def _check_one(kind: str, payload: dict, written: dict | None = None) -> None:
    """A payload of ``kind`` checked as :func:`_read_payload` checks it (the replay's closer message first)."""
    from pcs.report.htmlpage import check_replay_payload
    from pcs.report.payloadcheck import check_payload

    if kind == "replay":
        check_replay_payload(payload)     # the headline's ranges and the gap's sum: the closer message first
    check_payload(kind, payload, written)     # then every field against its declared type (one walk)


def _read_payload(path: str) -> dict:
    from pcs.curves.result import upgraded_curve
    from pcs.report.htmlpage import payload_kind
    from pcs.trace.pathcheck import check_regular_file

    check_regular_file(path)     # a FIFO would block the read until a writer came
    _refuse_trace(path)
    try:
        payload = jsondepth.loads(_json_text(path), object_pairs_hook=jsondepth.no_duplicate_keys)
    except jsondepth.DuplicateKeyError as exc:
        raise UserError(f"{shown_path(path)}{'' if exc.lineno is None else f':{exc.lineno}'}: "
                        f"{f'field {shown_repr(exc.field)}: ' if exc.field else ''}{exc}") from None
    except jsondepth.TooDeepError as exc:
        raise UserError(f"{shown_path(path)}: {exc}") from None
    except jsondepth.NumberTooLongError as exc:
        field = f"field '{exc.field}': " if exc.field else ""
        raise UserError(f"{shown_path(path)}:{exc.lineno}: {field}{exc}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{shown_path(path)}: line {exc.lineno}: not JSON ({exc.msg.removesuffix(' at')} at column "
                        f"{exc.colno})") from None
    if _is_interval(payload):
        return payload          # its two replays are checked by _read_payloads
    try:
        kind, written = payload_kind(payload), {}
        if kind == "curve":     # a curve JSON of a pcs before 2026-12-04: today's names, and the names it holds
            payload, written = upgraded_curve(payload)
        _check_one(kind, payload, written)
    except ValueError as exc:
        raise UserError(f"{shown_path(path)}: {exc}") from None
    return payload


def _refuse_trace_output(html_path: str | None, payloads: Sequence[dict]) -> None:
    """The trace each replay JSON names is an input of the report too (the page's curve and oracle are read from
    it, and a later report of that JSON reads it again): ``-o`` may not name it (:func:`pcs.outfile.refuse_inputs`).

    Raises:
        UserError: ``-o PATH is also an input file of this run (the trace of input N) ...``.
    """
    from pcs.outfile import refuse_inputs
    from pcs.report.htmlpage import payload_kind

    traces = []
    for i, p in enumerate(payloads):
        if payload_kind(p) == "replay":
            recorded = p.get("trace_file")
            traces.append((f"the trace of input {i + 1}",
                           recorded.get("path") if isinstance(recorded, dict) else p.get("trace")))
    refuse_inputs([("-o", html_path)], traces)


@command("report")
@click.argument("files", nargs=-1, required=True, type=CheckedPath(dir_okay=False, exists=True))
@click.option("-o", "--output", "--html", "html_path", type=CheckedPath(dir_okay=False), default=None,
              help="The HTML page to write (self-contained: opens from a file, no network).")
@click.option("--plot", "plot_dir", type=CheckedPath(file_okay=False), default=None,
              help="Also write every figure as DIR/<figure>.png and .svg (pip install -e '.[plot]').")
@click.option("--no-curve", is_flag=True,
              help="Do not read a replay's trace for the hit-rate curve and the oracle (Belady).")
@click.option("--changed-trace", type=Choice(["refuse", "warn"]), default="refuse", show_default=True,
              help="When the replay's trace file is not the one the run read (size or a hash of its first and "
                   "last MiB differ, recorded as trace_file): refuse, or warn and draw the curve and oracle from "
                   "the file as it is now.")
@format_option
@quiet_option
def report(files: tuple[str, ...], html_path: str | None, plot_dir: str | None, no_curve: bool,
           changed_trace: str, fmt: str, quiet: bool) -> None:
    """Draw one HTML page from the JSON of pcs replay, compare, curve and footprint (--format json).

    \b
    The first replay gives the headline (real vs single-sequence hit ratio and
    the oracle, the gap split as a waterfall), its curve, time series,
    distributions, envelope and tiers; more replays add a side-by-side table;
    compare, curve and footprint JSON add their sections. A replay's curve and
    oracle are computed from its trace when the file is there (--no-curve: not).
    Example:
      pcs replay trace.jsonl --format json > run.json
      pcs report run.json -o report.html --plot figures/
      pcs report run.json curve.json compare.json -o all.html
    Prints what it wrote (--format json: html, html_bytes, charts, plots).
    """
    if not (html_path or plot_dir):
        raise click.UsageError("give -o FILE.html and/or --plot DIR")
    check_outputs(html_path, plot_dir, {f"input {i + 1}": f for i, f in enumerate(files)}, html_option="-o")
    payloads = [p for f in files for p in _read_payloads(f)]
    curve = oracle = None
    from pcs.report.htmlpage import payload_kind

    _refuse_trace_output(html_path, payloads)

    kinds = [payload_kind(p) for p in payloads]
    runs = [p for p, k in zip(payloads, kinds) if k == "replay"]
    if runs and not no_curve and "curve" not in kinds and "bound" not in runs[0]:   # a bound: no one block stream
        trace = _checked_trace(runs[0], changed_trace, quiet)
        curve, oracle = replay_page_curve(_as_run_read(trace, runs[0]), runs[0], quiet) if trace else (None, None)
    done = write_outputs(html_path, plot_dir, payloads, curve=curve, oracle=oracle)
    emit(done, fmt, lambda: _written(done), rows_key=None)


def _written(done: dict) -> str:
    """The table form of ``pcs report``: what was written."""
    lines = []
    if done["html"]:
        lines.append(f"wrote {shown_path(done['html'])}: {format_counted(len(done['charts']), 'chart')}, "
                     f"{format_counted(done['html_bytes'], 'byte')}")
    if done["plots"]:
        lines.append(f"wrote {format_counted(len(done['plots']), 'figure file')}: {', '.join(map(shown_path, done['plots']))}")
    return "\n".join(lines)
