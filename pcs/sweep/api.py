"""``run_sweep(plan, out)``: every point of a plan not yet in ``out``, run and written one by one.

Steps: expand the plan (:mod:`pcs.sweep.plan`); drop the points already in
``out`` (:func:`pcs.sweep.store.done_ids`; ``force`` keeps them); read every
remaining point's options as its command does (:mod:`pcs.sweep.kinds`: a bad
option stops here, before anything runs); read each distinct trace once
(:func:`pcs.sweep.worker.load_trace`); run the tasks
(:mod:`pcs.sweep.backends`) and write each finished point at once
(:func:`pcs.sweep.store.write_point`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pcs.errors import UserError
from pcs.sweep.backends import default_jobs, run_local, run_ray
from pcs.sweep.kinds import PlanError, Task, build_task, point_label
from pcs.sweep.plan import PAIR_FIELDS, Plan, Point, as_written_key, check_paths, load_plan, value_field
from pcs.sweep.result import SweepRun
from pcs.sweep.store import done_ids, write_point
from pcs.sweep.worker import LoadedTrace, Outcome, load_trace

__all__ = ["run_sweep", "prepare", "execute", "Prepared"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A plan ready to run.

    Attributes:
        plan: the expanded plan.
        out: the results directory.
        tasks: the points to run, in plan order.
        skipped_points: points already in ``out`` (not run again).
        traces: trace key -> :class:`pcs.sweep.worker.LoadedTrace`.
    """

    plan: Plan
    out: Path
    tasks: tuple[Task, ...]
    skipped_points: int
    traces: dict


def _at(plan: Plan, point: Point | None, option: str | None, refused: object = None) -> str:
    """``PLAN:LINE`` where ``point``'s value of ``option`` is written (:func:`pcs.sweep.plan.value_field`: a
    ``[fixed]`` key, an axis list's element, a range axis's key; for a NAME=VALUE option, the entry the refusal
    names, ``refused``: ``"cpu=pcie-gen9"``), or ``PLAN`` when that is not known."""
    value = point.options[option] if point is not None and option else None
    if isinstance(value, dict) and (option in PAIR_FIELDS or refused is not None):
        value = refused
    field = value_field(plan, option, value) if point is not None and option and value is not None else None
    line = plan.lines.line(field) if field is not None and plan.lines is not None else None
    return plan.source if line is None else f"{plan.source}:{line}"


def _built(task: Task, progress: Callable[[int], None] | None) -> Task:
    if progress is not None:
        progress(1)
    return task


def _check_threads_env() -> None:
    """Refuse a bad ``$PCS_THREADS`` once, naming the environment variable (pcs.beside.threads_wanted's rule,
    :func:`pcs.beside.check_threads_setting`): an API call checks it here; ``pcs sweep`` has checked it already,
    as every command does.

    Raises:
        UserError: ``PCS_THREADS`` is none of the modes and their aliases.
    """
    from pcs.beside import check_threads_setting

    check_threads_setting()


def prepare(plan: str | Path | Plan, out: str | Path, force: bool = False,
            progress: Callable[[int], None] | None = None) -> Prepared:
    """Expand the plan, drop the done points, build the tasks and load their traces; ``progress`` is called with
    1 as each point is checked (its options parsed as its command parses them, about 1 ms a point).

    Raises:
        PathError: ``plan`` (or a trace it names) is missing, a directory or not readable; ``plan`` or ``out``
            empty or blank.
        UserError / InputError: a bad plan, option or trace; a bad ``$PCS_THREADS`` (checked once, here, before
            any point: every point would refuse it).
    """
    _check_threads_env()
    if not isinstance(plan, Plan):
        from pcs.trace.pathcheck import check_input_file

        check_input_file(plan, "plan")
        plan = load_plan(plan)
    from pcs.trace.pathcheck import refuse_empty_path

    refuse_empty_path(out, "out", folder=True)     # Path('') is '.': the results went to the current folder
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"-o {out}: not a directory")
    done = set() if force else done_ids(out)
    traces: dict[tuple, LoadedTrace] = {}

    def load(key: tuple) -> LoadedTrace:
        if key not in traces:
            traces[key] = load_trace(key)
        return traces[key]

    check_paths(plan, (p for p in plan.points if p.point_id not in done))
    point, built = None, []
    try:
        for point in (p for p in plan.points if p.point_id not in done):
            built.append(_built(build_task(plan.kind, point, plan.base_dir, load), progress))
    except ValueError as exc:   # in the plan's words: a point's refusal is already (PlanError), an API one is made so
        from pcs.cli.common import option_names

        msg = str(exc) if isinstance(exc, PlanError) else option_names(str(exc).splitlines()[0], plan=True)
        option = getattr(exc, 'plan_option', None)
        at = _at(plan, point, option, getattr(exc, 'refused_value', None))
        raise PlanError(f"{at}: {as_written_key(plan, option, msg)}") from None
    tasks = tuple(built)
    for t in tasks:
        if t.trace_key is not None:
            load(t.trace_key)
    return Prepared(plan, out, tasks, len(plan.points) - len(tasks), traces)


def execute(prep: Prepared, *, jobs: int | None = None, ray: str | None = None, requests: bool = False,
            progress: Callable[[int], None] | None = None, quiet: bool = False) -> SweepRun:
    """Run the prepared tasks and write each finished point.

    Args:
        jobs: processes of the local pool (default: the CPUs of this process); 1 = this process.
        ray: a Ray address or ``"local"`` to run on Ray instead (``jobs`` must then be None).
        requests: also write each replay point's per-request table.
        progress: called with 1 after each finished point.
        quiet: no Ray log lines on stderr.
    Raises:
        UserError: both ``jobs`` and ``ray``; Ray not installed.
    """
    if jobs is not None and ray is not None:
        raise UserError("give --jobs (a local pool) or --ray (Ray places the tasks), not both")
    prep.out.mkdir(parents=True, exist_ok=True)
    errors: list[Outcome] = []

    def on_done(o: Outcome) -> None:
        if o.error is None:
            write_point(prep.out, o.point_id, o.row, o.requests)
        else:
            errors.append(o)
        if progress is not None:
            progress(1)

    if ray is not None:
        backend = "ray"
        run_ray(prep.tasks, prep.traces, ray, requests, on_done, quiet)
    else:
        jobs = default_jobs() if jobs is None else jobs
        backend = "in-process" if jobs == 1 or len(prep.tasks) <= 1 else f"{min(jobs, len(prep.tasks))} processes"
        run_local(prep.tasks, prep.traces, jobs, requests, on_done)
    order = {t.point_id: i for i, t in enumerate(prep.tasks)}
    errors.sort(key=lambda o: order[o.point_id])
    return SweepRun(str(prep.plan.source), str(prep.out), backend, len(prep.plan.points), prep.skipped_points,
                    len(prep.tasks) - len(errors), len(errors), tuple(_failure(prep.plan, o) for o in errors),
                    tuple(o.traceback for o in errors if o.traceback))


def _failure(plan: Plan, outcome: Outcome) -> str:
    """A point that failed while the sweep ran, as a plan check names one (:func:`prepare`): ``PLAN:LINE: point ID
    (OPTIONS): MESSAGE``, the line where the value it refuses is written (:func:`_at`; the plan alone when the
    error does not tell which, never a guessed line)."""
    point = next(p for p in plan.points if p.point_id == outcome.point_id)
    return (f"{_at(plan, point, outcome.option)}: point {point.point_id} ({point_label(point.options)}): "
            f"{as_written_key(plan, outcome.option, outcome.error)}")


def run_sweep(plan: str | Path | Plan, out: str | Path, *, jobs: int | None = None, ray: str | None = None,
              force: bool = False, requests: bool = False, progress: Callable[[int], None] | None = None,
              quiet: bool = False) -> SweepRun:
    """Run every point of ``plan`` that ``out`` does not hold yet, writing each as it finishes.

    Args:
        plan: a plan file (TOML/JSON, :mod:`pcs.sweep.plan`) or a :class:`Plan`.
        out: the results directory (created): one Parquet file per point (:mod:`pcs.sweep.store`).
        jobs: local processes (default: this process's CPUs; 1 runs here).
        ray: run on Ray instead: an address, or ``"local"`` (the Ray this
            process is connected to, else a new local one).
        force: run the points already in ``out`` again (their files are replaced).
        requests: keep each replay point's per-request table in ``out/_requests/``.
        progress: called with 1 after each finished point.
        quiet: no Ray log lines on stderr.
    Returns:
        :class:`pcs.sweep.result.SweepRun`; failed points are listed there, not raised.
    Raises:
        PathError / UserError / InputError: a bad plan, option or
        trace (before any point runs); both ``jobs`` and ``ray``; ``out`` being run by another sweep
        (:func:`pcs.sweep.lock.sweep_lock`).
    """
    from pcs.sweep.lock import sweep_lock

    with sweep_lock(out):      # one sweep per folder: the done points read and the rest run under the lock
        return execute(prepare(plan, out, force), jobs=jobs, ray=ray, requests=requests, progress=progress,
                       quiet=quiet)
