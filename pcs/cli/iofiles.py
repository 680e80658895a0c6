"""What a command reads and writes, from its parameters: one place, so no output of a run names one of its inputs.

A command's parameters fall in two: its outputs (:data:`OUTPUTS`, by command) and everything else. Its inputs are
read off the parsed command line (:func:`command_inputs`), never listed by hand per command, so an option added
later is covered without being named here:

- every ``click.Path`` parameter that is not an output (TRACE, ``--hardware-file``, ``--workloads``,
  ``--prefill-csv``, ``--tokenizer``, ``--azure-csv``, ``--model-config``, report's FILES, a sweep's PLAN ...);
- ``--model`` / ``--model-config`` when it names a config file, or a folder holding ``config.json``
  (:func:`pcs.cli.modelarg.config_file`);
- any other text value that names an existing file (IN, CHAT, EVENTS, ``--chat-template`` ...);
- the files a sweep plan's points read (its trace, model config, hardware file:
  :func:`pcs.sweep.plan.input_files`), which the ``-o`` folder may not hold either (a sweep reads and writes
  every Parquet file of that folder).

:func:`refuse_outputs_on_inputs` runs in :meth:`pcs.cli.common.PcsCommand.invoke`, before the command's own code:
an output naming an input (the same path, a symbolic or a hard link) is one line, exit 2, nothing read or written.
An input known only once the run has read a file (the trace a replay JSON names, for ``pcs report``) is checked
by that command with :func:`pcs.outfile.refuse_inputs` as soon as it is known, before anything is written.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from pcs.errors import shown_path, shown_repr

__all__ = ["OUTPUTS", "DATASET", "check_command_files", "command_inputs", "command_outputs", "refuse_empty_paths",
           "empty_path_refusal", "refuse_outputs_on_inputs"]

#: command name -> the parameters (click names) that name what it writes. Every other parameter is read.
OUTPUTS: dict[str, tuple[str, ...]] = {
    "replay": ("requests_out", "html_path", "plot_dir"),
    "compare": ("html_path", "plot_dir"),
    "curve": ("plot_path", "html_path"),
    "footprint": ("html_path", "plot_dir"),
    "report": ("html_path", "plot_dir"),
    "run": ("out",),                      # pcs sweep run -o
    "convert": ("out_path",),
    "synth": ("out_path", "tokens_out"),
    "from-chat": ("out_path",),
    "transform": ("out_path",),
}
#: (command, parameter) of an output folder a command also reads every Parquet file of (pcs sweep run -o)
DATASET = {("run", "out")}
#: parameters that name a model: a preset, or a config file / folder (:func:`pcs.cli.modelarg.config_file`)
_MODEL_PARAMS = ("model", "model_name", "model_config")
#: text parameters (not ``click.Path``: their readers word their own refusals) that name a file to read: the
#: traces of ``pcs trace`` (TRACE, IN, EVENTS, CHAT) and ``--chat-template`` (a built-in name or a file)
_TEXT_PATH_PARAMS = ("trace_path", "in_path", "events_path", "chat_path", "template")


def _label(p: click.Parameter, ctx: click.Context) -> str:
    """The parameter as the user wrote it: ``--model-config`` when typed so, ``-o``, or an argument's ``OUT``."""
    if isinstance(p, click.Argument):
        return p.metavar or p.name.upper()
    typed = ctx.meta.get("pcs.typed", [])
    return next((o for o in p.opts if o in typed), p.opts[0])


def param_label(p: click.Parameter, ctx: click.Context | None) -> str:
    """How a refusal names parameter ``p``: as typed (:func:`_label`), an optional argument without its brackets
    (``TRACE``, not ``[TRACE]``: one name for the empty path, the missing file and click's own refusals)."""
    return (_label(p, ctx) if ctx is not None else p.opts[0] if p.opts else p.name.upper()).strip("[]")


def label_of_value(ctx: click.Context, path: str) -> str | None:
    """The parameter of ``ctx``'s command whose value is ``path`` (:func:`param_label`), or None when none or two
    hold it: a :class:`pcs.errors.PathError` the command raised is named by it (``--model x.json: No such file``)."""
    holders = [p for p in ctx.command.params if path in _values(ctx.params.get(p.name))]
    return param_label(holders[0], ctx) if len(holders) == 1 else None


def _values(value: Any) -> list[str]:
    if isinstance(value, (tuple, list)):
        return [str(v) for v in value if isinstance(v, (str, os.PathLike))]
    return [str(value)] if isinstance(value, (str, os.PathLike)) else []


def _input_path(p: click.Parameter, value: str) -> str | None:
    """The file ``value`` of parameter ``p`` makes the run read, or None (a preset, a number, ``-``)."""
    if value == "-":            # stdin: the file behind it when redirected from one (`pcs curve - < t.jsonl`)
        return "/dev/stdin" if os.path.exists("/dev/stdin") else None
    if not value.strip():
        return None
    if p.name in _MODEL_PARAMS:
        from pcs.cli.modelarg import config_file

        return config_file(value)
    if isinstance(p.type, click.Path) or os.path.isfile(value):
        return value
    return None


def command_outputs(ctx: click.Context) -> list[tuple[click.Parameter, str, str]]:
    """``(parameter, label, path)`` of every output the command line gives."""
    names = OUTPUTS.get(ctx.command.name, ())
    return [(p, _label(p, ctx), v) for p in ctx.command.params if p.name in names
            for v in _values(ctx.params.get(p.name))]


def command_inputs(ctx: click.Context) -> list[tuple[str, str]]:
    """``(label, path)`` of every file the command line makes the run read (module docstring)."""
    outs = OUTPUTS.get(ctx.command.name, ())
    found = []
    for p in ctx.command.params:
        if p.name in outs:
            continue
        for v in _values(ctx.params.get(p.name)):
            path = _input_path(p, v)
            if path is not None:
                found.append((_label(p, ctx), path))
    return found


def _plan_inputs(ctx: click.Context) -> list[tuple[str, str]]:
    """The files a sweep plan's points read (``pcs sweep run PLAN``); [] for another command or a plan that
    cannot be read (the command then says why, in its own words)."""
    plan = ctx.params.get("plan") if ctx.command.name == "run" else None
    if not plan:
        return []
    from pcs.errors import UserError
    from pcs.sweep.plan import input_files

    try:
        return [(f"{plan}: {name}", path) for name, path in input_files(plan)]
    except (UserError, OSError, ValueError):
        return []


def _inside(path: str, folder: str) -> bool:
    try:
        return Path(path).resolve().is_relative_to(Path(folder).resolve())
    except (OSError, RuntimeError):      # a link that loops
        return False


def _read_as_result(path: str, folder: str) -> bool:
    """Whether a results folder's reading takes ``path`` for a point file: a ``.parquet`` file right in the folder
    or in its per-request folder (pcs.sweep.store: ``*.parquet``, ``_requests/*.parquet``, not recursive)."""
    from pcs.sweep.store import REQUESTS_DIR

    if Path(path).suffix != ".parquet":
        return False
    try:
        parent, top = Path(path).resolve().parent, Path(folder).resolve()
    except (OSError, RuntimeError):      # a link that loops
        return False
    return parent in (top, top / REQUESTS_DIR)


def _refuse_in_dataset(label: str, folder: str, inputs: list[tuple[str, str]]) -> None:
    from pcs.errors import UserError

    for what, path in inputs:
        if os.path.exists(path) and _read_as_result(path, folder):
            raise UserError(f"{label} {shown_path(folder)} holds {shown_path(path)}, an input of the run ({what}); "
                            "the results folder is "
                             "read and written whole (every Parquet file in it): give a folder apart from the inputs")


def _refuse_stdout_file(outputs: list[tuple[click.Parameter, str, str]]) -> None:
    """Refuse an output that is the regular file standard output is redirected to (``--html /dev/stdout >
    out``, or ``--html out > out``): the output is written to a temporary file and renamed over it, so what the
    command prints would go to the replaced file and be lost."""
    import stat

    from pcs.errors import UserError

    try:
        out = os.fstat(1)
    except OSError:
        return
    if not stat.S_ISREG(out.st_mode):
        return
    for _, label, path in outputs:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            raise UserError(f"{label} {shown_path(path)} is the file standard output is redirected to; "
                            "the command's printed "
                             "output would be lost: give the output its own file")


def refuse_outputs_on_inputs(ctx: click.Context) -> None:
    """Refuse, before the command runs, an output of ``ctx``'s command line that names one of its inputs, and a
    results folder (:data:`DATASET`) that holds a file the run's points read.

    Raises:
        UserError: one line naming the output's option, the path and the input it would overwrite.
    """
    outputs = command_outputs(ctx)
    if not outputs:
        return
    from pcs.outfile import refuse_inputs

    inputs, extra = command_inputs(ctx), _plan_inputs(ctx)
    refuse_inputs([(label, path) for _, label, path in outputs], inputs + extra)
    _refuse_stdout_file(outputs)
    for p, label, path in outputs:
        if (ctx.command.name, p.name) in DATASET:
            _refuse_in_dataset(label, path, extra)


def _wanted(p: click.Parameter) -> str:
    """What parameter ``p`` takes instead of an empty path, for :func:`empty_path_refusal`."""
    from pcs.trace.pathcheck import FILE_WANTED, FOLDER_WANTED

    if p.name == "template":
        return "a built-in template name or a file"
    if isinstance(p.type, click.Path) and not p.type.file_okay:
        return FOLDER_WANTED
    if isinstance(p.type, click.Path) and p.type.dir_okay:
        return "a file or folder name"
    return FILE_WANTED


def empty_path_refusal(p: click.Parameter, ctx: click.Context | None, value: str) -> Exception:
    """The refusal of ``value``, an empty or blank value of path parameter ``p``: one line naming the parameter
    as typed (:func:`param_label`), ``FILES '': an empty path; give a file name``
    (:func:`pcs.trace.pathcheck.empty_path_problem`, the API's reason too); an empty model, the model's own
    (``--model '': empty; give a preset name ...``). :func:`refuse_empty_paths` and :class:`pcs.cli.params.CheckedPath`
    raise it.

    Returns:
        the :class:`pcs.errors.UserError` to raise.
    """
    from pcs.errors import UserError
    from pcs.trace.pathcheck import empty_path_problem

    label = param_label(p, ctx)      # trace stats' [TRACE]: optional, but given
    if p.name in _MODEL_PARAMS and not isinstance(p.type, click.Path):
        from pcs.cli.modelarg import EMPTY_MODEL

        return UserError(f"{label} {shown_repr(value)}: {EMPTY_MODEL}")
    return UserError(f"{label} {shown_repr(value)}: {empty_path_problem(_wanted(p))}")


def refuse_empty_paths(ctx: click.Context) -> None:
    """Refuse an empty or blank value of a parameter that names a file or folder (every ``click.Path``, the
    model parameters, :data:`_TEXT_PATH_PARAMS`), before the command reads ``''`` as the current folder
    (``pathlib.Path('')`` is ``.``: ``.: Is a directory``, a sweep's ``-o ''`` wrote its results there) or as the
    option left out (``--hardware-file ''`` changed nothing, silently).

    Raises:
        UserError: one line naming the parameter as typed, ``--chat-template '': an empty path; give a built-in
            template name or a file``.
    """
    for p in ctx.command.params:
        if not (isinstance(p.type, click.Path) or p.name in _MODEL_PARAMS or p.name in _TEXT_PATH_PARAMS):
            continue
        for v in _values(ctx.params.get(p.name)):
            if not v.strip():
                raise empty_path_refusal(p, ctx, v)


def check_command_files(ctx: click.Context) -> None:
    """:func:`refuse_empty_paths`, :func:`refuse_outputs_on_inputs`, then the note of a ``--model`` name that is both a preset and a file here
    (:func:`pcs.cli.modelarg.preset_clash_note`; none with ``-q``): called by
    :meth:`pcs.cli.common.PcsCommand.invoke` before every command.

    Raises:
        UserError: as :func:`refuse_empty_paths` and :func:`refuse_outputs_on_inputs`.
    """
    refuse_empty_paths(ctx)
    refuse_outputs_on_inputs(ctx)
    if ctx.params.get("quiet"):
        return
    for p in ctx.command.params:
        if p.name in _MODEL_PARAMS and isinstance(ctx.params.get(p.name), str):
            from pcs.cli.modelarg import preset_clash_note

            note = preset_clash_note(ctx.params[p.name])
            if note:
                click.echo(f"pcs: note: {note}", err=True)


#: Suffixes of trace formats pcs reads but never writes (``pcs.trace.convert.OUT_FORMATS`` has no CSV).
_UNWRITTEN_SUFFIXES = (".csv", ".tsv")


def refuse_unwritten_format(out_path: Any, out_format: str | None, option: str = "OUT") -> None:
    """Refuse a trace output named ``*.csv`` or ``*.tsv`` (``.gz`` aside) with no ``--to``.

    The suffix picks the format only for Parquet (``*.parquet``, ``*.pq``, ``*.parq``, any case; ``--to``'s
    default, :func:`pcs.trace.convert.out_format_for`; else mooncake), so ``out.csv`` would be Mooncake JSONL
    under a CSV name; pcs writes no CSV trace, so the name is refused rather than written in another format.
    ``--to mooncake`` (or bailian, parquet) writes that format under any name, as asked.

    Args:
        out_path: the output path as given; out_format: ``--to``, or None; option: the argument for messages.
    Raises:
        UserError: naming the output, the formats pcs writes and the two ways on.
    """
    from pcs.errors import UserError

    name = str(out_path).lower().removesuffix(".gz")
    suffix = next((s for s in _UNWRITTEN_SUFFIXES if name.endswith(s)), None)
    if out_format is None and suffix is not None:
        raise UserError(f"{option} {shown_path(out_path)}: pcs writes no {suffix[1:].upper()} trace "
                        "(it writes Mooncake or "
                        f"Bailian JSONL, or Parquet): name it .jsonl or .parquet, or give --to mooncake to write "
                        f"JSONL under this name")
