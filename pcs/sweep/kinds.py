"""A point's options -> one public API call (:class:`Task`), read as the command itself reads them.

Each kind's options are the options of its command (``pcs replay``, ``pcs
compare``, ``pcs curve``, ``pcs footprint``): the point's options become that
command's argument list and the command's own click parser reads it (its
types, defaults, checks and messages), then the same helpers the command uses
turn the parsed values into the keyword arguments of ``pcs.replay``,
``pcs.compare``, ``pcs.curve`` or ``pcs.footprint``. So a point computes what the
command computes with the same options. This happens in the driver, for every
point before any runs: a bad option stops the sweep before it starts, and a
model config or hardware file is read once, on the driver's machine.

Options that only shape output (``format``, ``quiet``, ``requests-out``,
``plot``) have no place in a plan (``pcs sweep --requests`` keeps the
per-request tables). Relative paths (the trace, ``--hardware-file``, a model
config) are resolved against the plan's directory.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import click
from pcs.errors import UnknownNameError, UserError, quoted, shown_repr


class PlanError(UserError):
    """A sweep point's refusal already in the plan's words (``tier``, ``max-num-seqs``, ``tp=1``): the command line
    prints it as it is, not with its API names turned into ``--options`` (:func:`pcs.cli.common.option_names`)."""

    plan_words = True

__all__ = ["Task", "build_task", "pair_options", "option_names", "option_shape", "shape_problem", "value_wanted", "PAIR_OPTIONS",
           "COMMA_OPTIONS", "culprit", "point_label"]

#: per kind, the repeatable NAME=VALUE options (a table in a plan; an axis may set one entry)
PAIR_OPTIONS: dict[str, frozenset[str]] = {
    "replay": frozenset({"tier", "tier_policy", "link"}),
    "compare": frozenset({"tier", "tier_policy", "link"}),
    "curve": frozenset(), "footprint": frozenset(),
}
#: the options whose one value is a comma list (``--capacities 1GB,2GB``): a plan may give a list, joined by commas
COMMA_OPTIONS = frozenset({"capacities", "curve_capacities"})
#: what a plan gives an option of each shape (:func:`option_shape`), for the messages of :func:`shape_problem`
_EXPECTED = {
    "flag": "true or false (the option is a flag)",
    "one": "one value: a string or a number",
    "many": "a value or a list of values (strings or numbers)",
    "pairs": 'a table of NAME = value (strings or numbers), a list of "NAME=VALUE" strings or one such string',
}
#: parameters (click names) that shape output only; not options of a point
_OUTPUT_PARAMS = frozenset({"fmt", "quiet", "requests_out", "plot_path", "plot_dir", "html_path", "help"})
#: their names in a plan (long flags, underscores): refused with a message saying why
_OUTPUT_OPTIONS = frozenset({"format", "quiet", "requests_out", "plot", "html", "help"})
#: trace-opening options a command may have -> the keyword of pcs.trace.open_trace
_OPEN_KEYWORDS = {"trace_format": "format", "block_size": "block_size", "sort": "sort", "on_error": "on_error"}


@dataclass(frozen=True, slots=True)
class Task:
    """One point, ready to run anywhere (plain values and picklable specs only).

    Attributes:
        point_id: the point's id.
        kind: ``replay``, ``compare``, ``curve`` or ``footprint``.
        options: the point's options as written (the dataset's option columns).
        call: the ``pcs`` function to call (``replay`` ...).
        kwargs: its keyword arguments.
        trace_key: ``(path or None, ((open_trace keyword, value), ...), step)``: the
            trace to pass first, loaded once per key (``step``: read with the step scheduler's row
            bounds, :func:`_trace_key`); None for footprint.
        rerun: a replay point's ``pcs replay`` command line that reruns it (:func:`pcs.cli.rerun.replay_command`:
            its ``replay_command`` JSON key, as ``pcs replay --format json`` records it); None for other kinds.
    """

    point_id: str
    kind: str
    options: dict[str, Any]
    call: str
    kwargs: dict[str, Any]
    trace_key: tuple | None
    rerun: str | None = None


def pair_options(kind: str) -> frozenset[str]:
    """The NAME=VALUE options of ``kind`` (see :data:`PAIR_OPTIONS`)."""
    return PAIR_OPTIONS.get(kind, frozenset())


def _command(kind: str) -> click.Command:
    from pcs.cli.main import COMMANDS

    module, attr = COMMANDS[kind].split(":")
    return getattr(importlib.import_module(module), attr)


def _params(cmd: click.Command) -> dict[str, tuple[click.Parameter, str | None]]:
    """option name (long flag, underscores) -> (parameter, the flag to pass; None for an argument)."""
    out: dict[str, tuple[click.Parameter, str | None]] = {}
    for p in cmd.params:
        if p.name in _OUTPUT_PARAMS:
            continue
        if isinstance(p, click.Argument):
            out[p.name] = (p, None)
            continue
        for opt in [*p.opts, *p.secondary_opts]:
            if opt.startswith("--"):
                out[opt[2:].replace("-", "_")] = (p, opt)
    return out


def option_names(kind: str) -> list[str]:
    """The option names a point of ``kind`` takes."""
    return sorted(_params(_command(kind)))


def option_shape(kind: str, name: str) -> str | None:
    """The shape of value a plan gives option ``name`` (underscores) of ``kind``: ``"pairs"`` (a NAME=VALUE
    option, :data:`PAIR_OPTIONS`), ``"flag"``, ``"many"`` (repeatable, or a comma list: :data:`COMMA_OPTIONS`)
    or ``"one"``; None for a name the command does not have (its own message names it, :func:`build_task`)."""
    params = _params(_command(kind))
    if name not in params:
        return None
    p, _ = params[name]
    if name in pair_options(kind):
        return "pairs"
    if getattr(p, "is_flag", False):
        return "flag"
    return "many" if getattr(p, "multiple", False) or name in COMMA_OPTIONS else "one"


#: what the value of each NAME=VALUE option's entry is, as its --help says (:func:`value_wanted`)
_PAIR_VALUES = {
    "tier": 'a size with its unit, as text: "5GB" or "500blocks" (a plain number is refused)',
    "link": 'a link preset or a bandwidth per GPU, as text: "pcie-gen5-x16" or "25GB/s"',
    "tier_policy": 'an eviction policy name, as text: "lru"',
}


def value_wanted(kind: str, name: str) -> str:
    """What option ``name`` (underscores; ``tier.cpu`` an entry of ``tier``) of ``kind`` takes, for a refusal that
    says what to give (a plan's ``cpu = nan``: a tier size takes no number at all): ``a finite number`` for a
    numeric option (click ``INT`` / ``FLOAT``, their ranges), an entry's own kind of value for a NAME=VALUE
    option (:data:`_PAIR_VALUES`), else ``its value as text, as --NAME takes it``."""
    base = name.partition(".")[0]
    if base in pair_options(kind):
        return _PAIR_VALUES.get(base, f"its value as text, as --{base.replace('_', '-')} takes it")
    p = _params(_command(kind)).get(base, (None, None))[0]
    if isinstance(getattr(p, "type", None), (click.types.IntParamType, click.types.FloatParamType)):
        return "a finite number"
    return f"its value as text, as --{base.replace('_', '-')} takes it"


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def shape_problem(shape: str, value: Any) -> str | None:
    """What is wrong with ``value`` (as TOML/JSON gave it) for an option of ``shape`` (:func:`option_shape`):
    ``"expected ..., got ..."``, or None when it fits. A nested list, a table where one value goes, a bool for
    a non-flag, a number for a flag: each is refused, never read as something else (``[["lru"]]`` ran as lru).
    """
    if shape == "flag":
        fits = isinstance(value, bool)
    elif shape == "one":
        fits = _scalar(value)
    elif shape == "many":
        fits = _scalar(value) or (isinstance(value, list) and all(_scalar(v) for v in value))
    else:
        fits = (isinstance(value, str) or (isinstance(value, dict) and all(_scalar(v) for v in value.values()))
                or (isinstance(value, list) and all(isinstance(v, str) for v in value)))
    return None if fits else f"expected {_EXPECTED[shape]}, got {_shown(value)}"


def _shown(value: Any) -> str:
    """``value`` as a plan's reader sees it: its kind and JSON text (``a list ["lru"]``, ``a table {"a": 1}``)."""
    import json

    kind = ("" if isinstance(value, bool) else "a list" if isinstance(value, list)
            else "a table" if isinstance(value, dict) else "a number" if isinstance(value, (int, float)) else "")
    text = quoted(value, 80, show=lambda v: _as_written(json.dumps(v, ensure_ascii=False, default=_date_mark)))
    return f"{kind} {text}".strip()


#: Marks a TOML date/time in :func:`_shown`'s JSON text, where it is written bare, as the plan wrote it.
_DATE_MARK = "\ue000"


def _date_mark(value: Any) -> str:
    """A TOML date/time (``tomllib``'s datetime objects) in JSON text: its ISO text between marks, unquoted by
    :func:`_as_written` (``{"x": 1979-05-27}``, not the string ``"1979-05-27"`` the plan did not write)."""
    iso = getattr(value, "isoformat", None)
    return f"{_DATE_MARK}{iso()}{_DATE_MARK}" if iso else str(value)


def _as_written(text: str) -> str:
    """:func:`_shown`'s JSON text with each marked date/time bare (:func:`_date_mark`)."""
    return text.replace(f'"{_DATE_MARK}', "").replace(f'{_DATE_MARK}"', "")


def _text(name: str, value: Any) -> str:
    if isinstance(value, bool) or isinstance(value, (dict, list)):
        raise UserError(f"option {shown_repr(plan_word(name))} takes one value, got {shown_repr(value)}")
    return repr(value) if isinstance(value, float) else str(value)


def _resolve(name: str, p: click.Parameter, value: str, base: Path) -> str:
    """A relative path option, from the plan's directory (``model`` only when it names a file there); the
    options of :data:`pcs.sweep.plan.PATH_OPTIONS` whatever their click type (``replay --model-config`` is a
    plain string: it was read from the current directory)."""
    from pcs.sweep.plan import PATH_OPTIONS

    is_path = isinstance(p.type, click.Path) or name in PATH_OPTIONS
    if not is_path or value == "-" or Path(value).is_absolute():
        return value
    joined = base / value
    return str(joined) if name != "model" or joined.is_file() else value


def _argv(kind: str, options: dict[str, Any], base: Path) -> list[str]:
    params = _params(_command(kind))
    args: list[str] = []
    flags: list[str] = []
    for name, value in options.items():
        try:
            problem = key_problem(kind, name)
            if problem is not None:
                raise UserError(problem)
            p, opt = params[name]
            if opt is None:
                args.append(_resolve(name, p, _text(name, value), base))
            elif getattr(p, "is_flag", False):
                if not isinstance(value, bool):
                    raise UserError(f"option {shown_repr(plan_word(name))} is a flag: true or false, got {shown_repr(value)}")
                flags += [opt] if value else []
            elif p.multiple:
                items = ([f"{k}={v}" for k, v in value.items()] if isinstance(value, dict)
                         else value if isinstance(value, list) else [value])
                for item in items:
                    flags += [opt, _resolve(name, p, _text(name, item), base)]
            else:
                if isinstance(value, list):
                    if name not in COMMA_OPTIONS:      # make_plan refuses it first; an in-memory point too
                        raise UserError(f"option {shown_repr(plan_word(name))} takes one value, got {_shown(value)}")
                    value = ",".join(_text(name, v) for v in value)
                flags += [opt, _resolve(name, p, _text(name, value), base)]
        except UserError as exc:    # the option refused: its value's line in the plan (pcs.sweep.api)
            raise blamed(exc, name)
    if any(a.startswith("-") for a in args):
        raise UserError(f"pcs sweep reads no trace from stdin; name a file (got {shown_repr(args[0])})")
    return flags + (["--", *args] if args else [])


def blamed(exc: Exception, option: str | None) -> Exception:
    """``exc`` marked as the refusal of plan option ``option`` (``exc.plan_option``; a mark already made stays):
    :func:`pcs.sweep.api.prepare` puts the line where that option's value is written before the message."""
    if option is not None and getattr(exc, "plan_option", None) is None:
        exc.plan_option = option
    return exc


def _reworded(exc: Exception, message: str, option: str | None = None) -> PlanError:
    """``exc`` re-worded as a :class:`PlanError` saying ``message``, keeping what :func:`culprit` reads and the
    ``refused_value`` that names a NAME=VALUE option's entry (:func:`pcs.sweep.api.prepare` finds its line by it);
    marked as the refusal of ``option`` when given, else of ``exc``'s own mark."""
    err = PlanError(message)
    err.unknown_name = exc.name if isinstance(exc, UnknownNameError) else getattr(exc, "unknown_name", None)
    err.refused_value = getattr(exc, "refused_value", None)
    return blamed(err, option if option is not None else getattr(exc, "plan_option", None))


def culprit(exc: Exception, options: dict[str, Any]) -> str | None:
    """The plan option ``exc`` refuses: its mark (:func:`blamed`; click's parameter), else the one option whose
    value is the unknown name of an :class:`pcs.errors.UnknownNameError` (``model = "llama-3.1-8"``) or the value
    the refusal keeps as ``refused_value`` (a policy spec, ``policy = "lfu:aging=x"``; an admission
    ``"cpu=reuse:0"``, one of a list; a NAME=VALUE option's entry, ``"cpu=pcie-gen9"`` of ``link = {cpu = ...}``),
    else None (two options hold that value, or the refusal names no value: no line rather than a wrong one)."""
    option = getattr(exc, "plan_option", None)
    if option is None and isinstance(exc, click.BadParameter) and exc.param is not None:
        option = exc.param.name
    name = exc.name if isinstance(exc, UnknownNameError) else getattr(exc, "unknown_name", None)
    name = name if name is not None else getattr(exc, "refused_value", None)
    if option is None and name is not None:
        holders = [k for k, v in options.items() if _holds(v, name)]
        option = holders[0] if len(holders) == 1 else None
    return option if option in options else None


def _holds(value: Any, name: Any) -> bool:
    """Whether a point's option ``value`` is ``name``, holds it in its list, or holds it as an ``ENTRY=VALUE``
    entry of its table (a NAME=VALUE option, as :func:`pcs.sweep.plan.make_plan` keeps it: a dict)."""
    if isinstance(value, dict):
        return isinstance(name, str) and name in (f"{k}={v}" for k, v in value.items())
    return value == name or (isinstance(value, list) and name in value)


def plan_word(name: str) -> str:
    """An option as a plan writes it (docs/sweep.md "Options"): its long flag without the dashes, ``write-policy``
    for ``write_policy`` or ``--write-policy``."""
    return name.lstrip("-").replace("_", "-")


def key_problem(kind: str, name: str) -> str | None:
    """Why plan key ``name`` (underscores; ``tier`` of ``tier.cpu``) is no option of a ``kind`` point, else None:
    an output option (``format``: a sweep writes rows) or a name the command lacks (:func:`unknown_option`). The
    one check of a key's name, made for every key of a plan before any value is looked at
    (:func:`pcs.sweep.plan.make_plan`) and again as a point is built."""
    if name in _OUTPUT_OPTIONS:
        return (f"option {shown_repr(plan_word(name))} shapes a command's output only; a sweep writes one dataset row per "
                "point, which pcs sweep summarize reads")
    params = _params(_command(kind))
    if name not in params:
        return unknown_option(name, kind, [k for k in params if k not in FLEET_OPTIONS])
    return None


def unknown_option(name: str, kind: str, valid: list[str]) -> str:
    """The refusal of plan key ``name`` that ``kind``'s command lacks, in the plan's words (:func:`plan_word`):
    a "did you mean" by click's rule and wording for a mistyped ``--option`` (``difflib.get_close_matches``, its
    default cutoff 0.6 and at most 3 names, sorted; compared in the plan's spelling), then every valid name.

    >>> unknown_option("teir", "replay", ["tier", "tier_policy", "timing"])
    "unknown option 'teir' for pcs replay; did you mean 'tier'? (valid: tier, tier-policy, timing)"
    """
    from pcs.choices import did_you_mean

    words = sorted({plan_word(v) for v in valid})
    close = did_you_mean(plan_word(name), words)
    if not close:
        return f"unknown option {shown_repr(plan_word(name))} for pcs {kind}; valid: {', '.join(words)}"
    return f"unknown option {shown_repr(plan_word(name))} for pcs {kind}; {close}(valid: {', '.join(words)})"


def _parse(kind: str, options: dict[str, Any], base: Path) -> click.Context:
    """The command's context for these options: ``.params``, its parsed parameters (click's checks and
    defaults)."""
    from pcs.cli.common import RegistryRefusal

    cmd = _command(kind)
    try:
        return cmd.make_context(f"pcs {kind}", _argv(kind, options, base))
    except click.UsageError as exc:     # click's option names ('--policy') in the plan's words ('policy')
        message = re.sub(r"'(--[a-z0-9-]+)'", lambda m: repr(plan_word(m.group(1))), exc.format_message())
        if isinstance(exc, RegistryRefusal):        # policy = "bogus": ..., as a plan words every refused value
            import json

            from pcs.cli.common import option_names

            message = (f"{plan_word(exc.flag)} = {json.dumps(str(exc.value), ensure_ascii=False)}: "
                       f"{option_names(exc.message, plan=True)}")
        raise _reworded(exc, message, culprit(exc, options)) from None     # its refused value kept: the entry's line


def _trace_key(kind: str, kw: dict[str, Any]) -> tuple:
    """The shared read a point takes (:attr:`Task.trace_key`): its trace, how it is opened, and whether the read
    checks the step scheduler's row bounds -- as ``pcs replay`` and ``pcs compare`` read it for a run that scheduler
    times (:func:`pcs.engine.api.row_limits`: modeled timing, compute mode ``step``; a plan names no compute model),
    so a row past them is refused naming file, line and field, or skipped with ``on-error = "skip"``, where the
    scheduler could only say that some output length is too long."""
    from pcs.engine.api import row_limits
    from pcs.trace.rowlimits import STEP_LIMITS

    step = kind in ("replay", "compare") and row_limits(kw.get("timing"), kw.get("compute_mode"), None) is STEP_LIMITS
    return kw.get("trace"), tuple((_OPEN_KEYWORDS[k], kw[k]) for k in _OPEN_KEYWORDS if k in kw), step


def _no_reblock(kw: dict[str, Any]) -> None:
    """Refuse a point whose ``block-size`` would re-block its trace (a sweep replays a trace at its recorded block
    size), naming the road the other commands name (:func:`pcs.trace.api.reblock_road`) in the plan's words.

    Raises:
        UserError: ``block-size`` is not the size the trace (Parquet, or a Mooncake/Bailian file recorded at its
            format's default) was recorded at; blamed on ``block_size``.
    """
    from pcs.cli.common import option_names
    from pcs.trace.api import reblock_road
    from pcs.trace.reblock import plan_engine_block_size

    asked = kw["block_size"]
    stored = plan_engine_block_size(kw["trace"], kw["trace_format"], asked)
    if stored is not None:
        raise blamed(UserError(option_names(f"block_size={asked} is not the trace's recorded block size, {stored} "
                                            f"tokens; {reblock_road(stored, asked, True)}", plan=True)), "block_size")


#: the fleet options of pcs replay / compare, which a sweep point refuses (:func:`_no_fleet`)
FLEET_OPTIONS = ("instances", "router", "router_stale_s", "shared_tier")


def _no_fleet(kw: dict[str, Any]) -> None:
    """Refuse the fleet options: a sweep point replays one instance, so a point labelled ``instances=2`` or
    ``router=X`` would carry the single-instance numbers (run pcs replay/compare --instances for a fleet)."""
    from pcs.cli.fleet import wants_fleet

    if wants_fleet(kw):
        given = [k for k in FLEET_OPTIONS if kw.get(k) not in (None, (), "")]
        raise blamed(UserError(f"{', '.join(map(plan_word, given))}: pcs sweep replays one instance and does not run "
                               "fleets; remove the key (run pcs replay --instances N --router NAME for a fleet)"),
                     given[0])


_PLACEHOLDER = object()  # a trace that replay_call_kwargs leaves alone: the worker passes the loaded one
TraceOf = Callable[[], Any]   # the point's loaded trace (read once per trace by the driver, on first use)


def _replay(kw: dict[str, Any], trace_of: TraceOf) -> dict[str, Any]:
    from pcs.cli.replay import replay_call_kwargs

    _no_reblock(kw)
    _no_fleet(kw)
    _, kwargs = replay_call_kwargs(kw, _PLACEHOLDER)
    kwargs = dict(kwargs, tiers=list(kw["tiers"]) or None, policy=kw["policy"], admit=list(kw["admit"]) or None)
    _check_replay(kwargs)
    return kwargs


def _check_replay(kwargs: dict[str, Any]) -> None:
    """pcs.replay's own checks that need no trace (:func:`pcs.engine.api.check_replay`: tier order, names,
    model, hardware, policies, numbers), run on the driver before any point runs; its message in the plan's
    words (``tier``, ``max-num-seqs``), as a point that fails while running reports it."""
    from pcs.cli.common import option_names
    from pcs.engine.api import check_replay

    try:
        check_replay(**kwargs)
    except UserError as exc:
        raise _reworded(exc, option_names(str(exc).splitlines()[0], plan=True)) from None


def _compare(kw: dict[str, Any], trace_of: TraceOf) -> dict[str, Any]:
    from pcs.cli.compare import _parse_capacities
    from pcs.engine.compare import refuse_one_policy_twice
    from pcs.cli.replay import replay_call_kwargs

    _no_reblock(kw)
    _no_fleet(kw)
    if kw["tier_sets"] and kw["tiers"]:
        raise blamed(UserError("give either tier (one tier list) or tiers (several to compare), not both"), "tiers")
    refuse_one_policy_twice(kw["policy"], "--policy")
    caps = _parse_capacities(kw["curve_capacities"], kw, trace_of().block_size) if kw["curve_capacities"] else None
    _, kwargs = replay_call_kwargs(kw, _PLACEHOLDER)
    sets = [[t for t in ts.split(",") if t.strip()] for ts in kw["tier_sets"]] or None
    _check_tier_sets(sets or (), kw["link"])
    kwargs = dict(kwargs, policies=list(kw["policy"]) or None, tier_sets=sets, tiers=list(kw["tiers"]) or None,
                  curve_capacities=caps, admits=list(kw["admit"]) or None)
    _check_compare(kwargs)
    return kwargs


def _check_compare(kwargs: dict[str, Any]) -> None:
    """pcs.compare's own checks that need no trace (:func:`pcs.engine.compare.check_compare`: every variant's
    :func:`pcs.engine.api.check_replay`: policies, tier policies, links...), on the driver before any point runs,
    in the plan's words, as :func:`_check_replay` for a replay point."""
    from pcs.cli.common import option_names
    from pcs.engine.compare import check_compare

    try:
        check_compare(**kwargs)
    except UserError as exc:
        raise _reworded(exc, option_names(str(exc).splitlines()[0], plan=True)) from None


def _check_tier_sets(sets: Any, links: Any) -> None:
    """A compare plan's ``tiers`` lists under the tier-name rule ``pcs compare --tiers`` applies
    (:func:`pcs.cli.tiernames.check_tier_names`), on the driver before any point runs, in the plan's words."""
    from pcs.cli.common import option_names
    from pcs.cli.tiernames import check_tier_names

    try:
        for one in sets:
            check_tier_names(one, links, "tiers")
    except UserError as exc:
        raise _reworded(exc, option_names(str(exc).splitlines()[0], plan=True)) from None


def _curve(kw: dict[str, Any], trace_of: TraceOf) -> dict[str, Any]:
    from pcs.cli.params import parse_capacity_list

    if kw["capacities"] is not None and kw["points"] is not None:
        raise blamed(UserError("give capacities or points, not both"), "points")
    if kw["dtype"] is not None and kw["model_name"] is None:
        raise blamed(UserError("dtype sets the KV dtype of the model's bytes; give model too"), "dtype")
    spec = None
    if kw["model_name"] is not None:
        from pcs.cli.modelarg import load_model

        spec = load_model(kw["model_name"], None, quiet=True)
        spec = spec.with_dtype(kw["dtype"]) if kw["dtype"] else spec
    caps = None
    if kw["capacities"] is not None:
        bb = None
        if spec is not None:
            from pcs.model import block_bytes

            bb = block_bytes(spec, trace_of().block_size, "reserved").total_bytes
        caps = parse_capacity_list(kw["capacities"], "--capacities", bb)
    return dict(capacities=caps, points=kw["points"], model=spec, belady=not kw["no_belady"],
                sample_rate=kw["sample_rate"], seed=kw["seed"], exact_head_blocks=kw["exact_head_blocks"],
                native=kw.get("native"), kernel=kw.get("kernel"))


def _footprint(kw: dict[str, Any], trace_of: TraceOf) -> dict[str, Any]:
    from pcs.cli.modelarg import load_model

    spec = load_model(kw["model_name"], kw["model_config"], quiet=True)
    if kw["tp"] > 1:
        spec = spec.with_tp(kw["tp"])
    return dict(model=spec, tokens=kw["tokens"], block_size=kw["block_size"], dtype=kw["dtype"],
                sequences=kw["sequences"])


#: kind -> (builder of the call's keyword arguments, takes a trace)
_BUILDERS: dict[str, tuple[Callable[[dict[str, Any], TraceOf], dict[str, Any]], bool]] = {
    "replay": (_replay, True), "compare": (_compare, True), "curve": (_curve, True),
    "footprint": (_footprint, False),
}


def build_task(kind: str, point: Any, base_dir: Path | str = ".",
               load: Callable[[tuple], Any] | None = None) -> Task:
    """The :class:`Task` of one :class:`pcs.sweep.plan.Point`.

    Args:
        kind: the plan's kind.
        point: the point.
        base_dir: where relative paths point from.
        load: trace key -> the loaded trace (memoised by the caller); asked
            only for what the options need of it (the block size that turns
            capacities in bytes into blocks). Default:
            :func:`pcs.sweep.worker.load_trace`.
    Raises:
        UserError: an unknown option, a value the command refuses (its
            message, prefixed with the point's id and options).
    """
    from pcs.sweep.worker import load_trace

    builder, takes_trace = _BUILDERS[kind]
    try:
        ctx = _parse(kind, point.options, Path(base_dir))
        kw = dict(ctx.params)
        kwargs = builder(kw, lambda: (load or load_trace)(_trace_key(kind, kw)))
    except click.ClickException as exc:
        raise _reworded(exc, f"point {point.point_id} ({point_label(point.options)}): {exc.format_message()}",
                        culprit(exc, point.options)) from None
    except ValueError as exc:   # an API message (max_num_seqs, tiers=[...]) in the plan's words
        from pcs.cli.common import option_names

        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg = msg if isinstance(exc, PlanError) else option_names(msg, plan=True)
        raise _reworded(exc, f"point {point.point_id} ({point_label(point.options)}): {msg}",
                        culprit(exc, point.options)) from None
    rerun = None
    if kind == "replay":
        from pcs.cli.rerun import replay_command

        rerun = replay_command(ctx)
    return Task(point.point_id, kind, point.options, kind, kwargs, _trace_key(kind, kw) if takes_trace else None,
                rerun)


def point_label(options: dict[str, Any]) -> str:
    """A point's options as its messages describe it, in the plan's words: each key as the plan writes it
    (:func:`plan_word`: ``tier-policy.cpu=lfu``, ``write-policy=through``), a table by its entries
    (``tier.gpu=500blocks``), a list and a flag as TOML writes them (``policy=["lru", "fifo"]``, ``sort=true``),
    any other value as it is (``tier.cpu=10GB``, ``tp=1``)."""
    import json

    parts = []
    for k, v in options.items():
        word = plan_word(k)
        parts += ([f"{word}.{e}={x}" for e, x in v.items()] if isinstance(v, dict)
                  else [f"{word}={json.dumps(v, ensure_ascii=False)}"] if isinstance(v, (bool, list))
                  else [f"{word}={v}"])
    return " ".join(parts)
