"""``pcs sweep``: run a plan of points into a Parquet dataset; ``pcs sweep summarize``: best points, the front.

``pcs sweep PLAN -o OUT`` is ``pcs sweep run PLAN -o OUT``. Options ->
:func:`pcs.sweep.api.prepare` / :func:`pcs.sweep.api.execute` ->
:func:`pcs.sweep.summary.summarize` -> :mod:`pcs.report.sweep` -> :func:`pcs.cli.common.emit`.
"""
from __future__ import annotations

from typing import Any

import click

from pcs.cli.common import SHORT_FOR, PcsGroup, Progress, emit, format_option, no_such_command, quiet_option
from pcs.cli.params import CheckedPath, Choice, Int
from pcs.errors import UserError, shown_path
from pcs.units import format_counted

__all__ = ["sweep"]

_OBJECTIVE = click.option("--objective", type=Choice(["hit-ratio", "ttft-p99"]), default="hit-ratio",
                          show_default=True, help="The Pareto front's objective against the tiers' bytes.")
#: the most --jobs (local processes) taken
MAX_JOBS = 4096


class _SweepGroup(PcsGroup):
    """A group whose first argument, when it is not a subcommand, is the plan of ``run``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            if _mistyped_command(args[0], ctx):
                raise no_such_command(args[0], ctx)
            args = ["run", *args]       # a refusal names the command as typed too (pcs.cli.common._usage_line)
            ctx.meta[SHORT_FOR] = (f"{ctx.command_path} PLAN", f"{ctx.command_path} run PLAN")
        return super().parse_args(ctx, _bare_ray_before_plan(args))


def _mistyped_command(word: str, ctx: click.Context) -> bool:
    """Whether ``word``, the first argument of ``pcs sweep`` and no subcommand, is a subcommand mistyped rather
    than the plan of the shorthand ``pcs sweep PLAN``: it is no option, holds no dot and no path separator (a
    word that does is a file name: ``run.tom``, ``plan.tmol``, ``dir/run`` are missing plans, never command
    typos), no file or folder of that name exists, and a subcommand is close to it
    (:func:`pcs.choices.close_names`: ``runn`` -> ``run``). A file named ``runn`` is still run as a plan. Commands
    are case-sensitive, as click's are: ``Run`` / ``RUN`` (no such file) are refused with the hint ``run``."""
    import os

    from pcs.choices import close_names

    separators = "." + os.sep + (os.altsep or "")
    return (not word.startswith("-") and not any(c in word for c in separators) and not os.path.lexists(word)
            and bool(close_names(word, ctx.command.list_commands(ctx))))


def _bare_ray_before_plan(args: list[str]) -> list[str]:
    """``--ray PLAN`` means a bare ``--ray`` (a local Ray) then the plan: an existing file is never a Ray address."""
    import os

    out = list(args)
    for i, a in enumerate(out[:-1]):
        if a == "--ray" and os.path.isfile(out[i + 1]):
            out[i] = "--ray=local"
    return out


@click.group("sweep", cls=_SweepGroup, no_args_is_help=True)
def sweep() -> None:
    """Run a plan of many replays (or compares, curves, footprints) into one
    Parquet dataset, then summarise it: `pcs sweep PLAN -o OUT` runs PLAN
    (= `pcs sweep run`), `pcs sweep summarize OUT` prints the best points and
    the Pareto front. Plan format, columns and Ray clusters: docs/sweep.md.

    \b
    Example:
      pcs sweep traces/sweep_sample.toml -o sweep-out
      pcs sweep plan.toml -o results --jobs 2
      pcs sweep plan.toml -o results --ray               (a local Ray)
      pcs sweep plan.toml -o results --ray=ray://head:10001
      pcs sweep summarize results --objective ttft-p99
    """


def _fail(result: Any) -> None:
    """Failed points: one line each on stderr; exit 1 when one was a bug in pcs (traceback shown), else 2."""
    from pcs.errors import BUG_REPORT

    for err in result.errors:
        click.echo(f"pcs: error: {err}", err=True)
    for tb in result.tracebacks:
        click.echo(tb, err=True, nl=False)
    if result.tracebacks:
        click.echo(f"pcs: internal error: {BUG_REPORT}", err=True)
        raise SystemExit(1)
    if result.failed:
        done = result.ran + result.skipped_points
        where = f"the rest ({done:,}) are in {result.out}" if done else f"no point is in {result.out}"
        raise UserError(f"{result.failed} of {format_counted(result.points, 'point')} failed (listed above); {where}; fix the plan "
                         "and rerun: done points are skipped")


@sweep.command("run", twins=True)
@click.argument("plan", type=CheckedPath(exists=True, dir_okay=False))
@click.option("-o", "--out", required=True, type=CheckedPath(file_okay=False),
              help="Results directory: one Parquet file per point (created; points already there are skipped).")
@click.option("--jobs", type=Int(1, MAX_JOBS), default=None,
              help="Local processes, at most the CPUs this process may use (default: those CPUs; more is "
                   "capped to them with a note; 1 runs in this process).")
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="[ADDRESS]",
              help="Run the points as Ray tasks (needs the ray extra: pip install -e '.[ray]'): alone, on the Ray this process "
                   "knows or a new local one; --ray=ADDRESS joins a cluster (auto, ray://head:10001).")
@click.option("--force", is_flag=True, help="Run the points already in OUT again (their rows are replaced).")
@click.option("--requests", "with_requests", is_flag=True,
              help="Also keep each replay point's per-request table in OUT/_requests/<point_id>.parquet.")
@_OBJECTIVE
@format_option
@quiet_option
def run(plan: str, out: str, jobs: int | None, ray_address: str | None, force: bool, with_requests: bool,
        objective: str, fmt: str, quiet: bool) -> None:
    """Run every point of PLAN not yet in OUT; each point's row is written as soon as it finishes.

    \b
    Example:
      pcs sweep run traces/sweep_sample.toml -o sweep-out --jobs 2
    A killed sweep (SIGTERM, Ctrl-C) keeps its finished points; run it again to do the rest.
    """
    from pcs.outfile import refuse_dash_folder
    from pcs.sweep.lock import sweep_lock

    refuse_dash_folder("-o", out, "results")
    with sweep_lock(out):       # one sweep per folder (a second refuses): done points read and the rest run
        _run_locked(plan, out, jobs, ray_address, force, with_requests, objective, fmt, quiet)


#: A plan of this many points or more says so on stderr before its points are checked (about 1 ms each: 1 s).
PLANNING_NOTE_POINTS = 1_000


def _prepare_told(plan: str, out: str, force: bool, quiet: bool) -> Any:
    """:func:`pcs.sweep.api.prepare` with a ``planning`` progress bar over its points and, for a plan of
    :data:`PLANNING_NOTE_POINTS` or more, a note line first (a large plan was silent for seconds before its first
    point); both off with ``-q``."""
    from pcs.sweep.api import prepare
    from pcs.sweep.plan import load_plan
    from pcs.trace.pathcheck import check_input_file

    check_input_file(plan, "plan")
    loaded = load_plan(plan)
    n = len(loaded.points)
    if not quiet and n >= PLANNING_NOTE_POINTS:
        click.echo(f"pcs: note: checking the {n:,} points of {shown_path(plan)} (each point's options, as its command "
                   "parses them) before the first one runs", err=True)
    with Progress(quiet, desc="planning", unit=" point", total=n) as planning:
        return prepare(loaded, out, force, progress=planning)


def _jobs_capped(jobs: int | None, tasks: int, quiet: bool) -> int | None:
    """``--jobs`` at most the CPUs this process may use (:func:`pcs.sweep.backends.default_jobs`): a point is one
    CPU-bound replay, so more processes only share the CPUs, each with its own copy of the traces; a note says so.
    A value the run would not use anyway (more than its points) gets no note."""
    from pcs.sweep.backends import default_jobs

    cpus = default_jobs()
    if jobs is None or jobs <= cpus:
        return jobs
    if not quiet and tasks > cpus:
        many = "es" if cpus != 1 else ""
        click.echo(f"pcs: note: --jobs {jobs:,} is more than the {cpus} CPU{'s' if cpus != 1 else ''} this process "
                   f"may use; running {cpus} process{many} (a point is one CPU-bound replay: more would only share "
                   "the CPUs, each process holding its own copy of the traces)", err=True)
    return cpus


def _run_locked(plan: str, out: str, jobs: int | None, ray_address: str | None, force: bool, with_requests: bool,
                objective: str, fmt: str, quiet: bool) -> None:
    """``pcs sweep run`` under the folder's lock (:func:`pcs.sweep.lock.sweep_lock`)."""
    from pcs.cli.common import Terminated
    from pcs.outfile import WRITTEN
    from pcs.report.sweep import render_run
    from pcs.sweep.api import execute
    from pcs.sweep.store import done_ids
    from pcs.sweep.summary import summarize

    prep = _prepare_told(plan, out, force, quiet)
    jobs = _jobs_capped(jobs, len(prep.tasks), quiet) if ray_address is None else jobs
    if not quiet and fmt != "table":
        click.echo(f"pcs: note: {format_counted(len(prep.plan.points), 'point')}, {prep.skipped_points} already in "
                   f"{shown_path(out)}, "
                   f"{len(prep.tasks)} to run", err=True)
    try:
        with Progress(quiet, desc="sweep", unit=" point", total=len(prep.tasks)) as progress:
            result = execute(prep, jobs=jobs, ray=ray_address, requests=with_requests, progress=progress,
                             quiet=quiet)
    except (Terminated, KeyboardInterrupt):   # pcs's own handler then says why and exits 143 / 130
        ids = {p.point_id for p in prep.plan.points}
        click.echo(stopped_line(len(ids & done_ids(out)), len(ids), out), err=True)
        WRITTEN.clear()                       # the line above counts the point files; the stop line names none
        raise
    summary = summarize(out, objective)
    payload = {**result.to_dict(), "summary": summary.to_dict()}
    emit(payload, fmt, lambda: render_run(result, summary), rows_key=None)
    _fail(result)


def stopped_line(done: int, points: int, out: str) -> str:
    """The line a stopped sweep prints: how many of the plan's ``points`` are in ``out`` (``done``), and what running
    it again does -- the rest, or with every point in (the stop came after the last one's file), the summary."""
    then = "run it again to do the rest" if done < points else "run it again for the summary (nothing left to run)"
    return (f"pcs: sweep stopped: {done} of {format_counted(points, 'point')} {'is' if done == 1 else 'are'} in "
            f"{shown_path(out)}; {then}")


@sweep.command("summarize")
@click.argument("out", type=CheckedPath(exists=True, file_okay=False))
@_OBJECTIVE
@format_option
@quiet_option
def summarize_cmd(out: str, objective: str, fmt: str, quiet: bool) -> None:
    """Best replay points per metric (hit ratio, TTFT p50/p99, wait p99) and the
    Pareto front of the objective against each tier's capacity bytes.

    \b
    Example:
      pcs sweep summarize sweep-out
      pcs sweep summarize sweep-out --objective ttft-p99 --format csv
    CSV: one row per front point.
    """
    from pcs.report.sweep import render_summary
    from pcs.sweep.summary import summarize

    s = summarize(out, objective)
    payload = s.to_dict()
    if fmt == "csv":
        payload = {"front": [{"point_id": p.point_id, s.objective: p.objective,
                              **{f"{t}_bytes": p.capacity_bytes[t] for t in s.tiers}, **p.options}
                             for p in s.front]}
    emit(payload, fmt, lambda: render_summary(s), rows_key="front")
