"""The ``pcs replay`` command line that reruns a replay: every option the user gave, read back from click.

Every option of ``pcs replay`` that the user gave (on the command line or through an environment variable) is
in it, except the ones that only say where and how the output goes (:data:`OUTPUT_ONLY`): a new option is in it
the day it is added, with no list to keep. Values are written back from their parsed form (a duration in
seconds with its unit, a flag by its on or off name), paths absolute, so the command runs from any folder and prints the
same command again. The process settings ``PCS_NATIVE`` and ``PCS_THREADS`` are not options and are not in it: they
choose which twin runs and where side work runs, never a number (the JSON's ``engine`` fields say which ran). ``pcs replay --format json`` records it as ``replay_command``; the HTML page's inputs table
prints it (docs/report.md).
"""
from __future__ import annotations

from pcs.errors import shown_repr

import os
import shlex
from typing import Any

import click

from pcs.cli.modelarg import is_config_path
from pcs.cli.params import Duration

__all__ = ["OUTPUT_ONLY", "replay_command", "command_trace"]

#: options of ``pcs replay`` that change no number of the run (where and how it prints, the progress bar)
OUTPUT_ONLY = frozenset({"fmt", "quiet", "html_path", "plot_dir", "requests_out"})
#: parameters naming an input file: written absolute (``-`` = stdin, a preset name: as given)
_PATHS = frozenset({"trace", "hardware_file", "model"})


def _given(ctx: click.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source not in (click.core.ParameterSource.DEFAULT,
                                                 click.core.ParameterSource.DEFAULT_MAP)


def _text(name: str, value: Any, duration: bool = False) -> str:
    """A parsed value as the option takes it back: a float by its repr (exact), a duration in seconds with its
    unit (``0.005s``: a duration option refuses a plain number, :class:`pcs.cli.params.Duration`), a path
    absolute."""
    if duration and isinstance(value, (int, float)):
        return f"{float(value)!r}s"
    if isinstance(value, float):
        return repr(value)
    text = str(value)
    if name in _PATHS and text != "-" and (name != "model" or is_config_path(text)):
        return os.path.abspath(text)
    return text


def _words(param: click.Parameter, value: Any) -> list[str]:
    """The command-line words that give ``param`` its parsed ``value``."""
    if isinstance(param, click.Argument):
        return [_text(param.name, value)]
    assert isinstance(param, click.Option)
    name = param.opts[0]
    if param.is_flag and param.secondary_opts:
        return [name if value else param.secondary_opts[0]]
    if param.is_flag:
        return [name] if value else []
    values = value if param.multiple else (value,)
    duration = isinstance(param.type, Duration)
    return [w for v in values for w in (name, _text(param.name or "", v, duration))]


def replay_command(ctx: click.Context) -> str:
    """``pcs replay ...`` with every option of ``ctx`` (the running ``pcs replay``) the user gave, less
    :data:`OUTPUT_ONLY`, in the order ``--help`` lists them; a shell line (:func:`shlex.join`)."""
    words = ["pcs", "replay"]
    for param in ctx.command.params:
        name = param.name or ""
        if name in OUTPUT_ONLY or not _given(ctx, name) or ctx.params.get(name) is None:
            continue
        words += _words(param, ctx.params[name])
    return shlex.join(words)


def command_trace(command: str) -> str:
    """The trace a :func:`replay_command` line reads: its trace argument as ``pcs replay`` parses the line (click's
    parser, values unchecked: :func:`replay_command` writes it first, its path absolute, ``-`` for stdin; a
    hand-written line may put it anywhere; when the parse finds none -- an option of another pcs version stops it --
    the first word when it is no option), else the bundled sample, which a line naming no trace reads
    (:func:`pcs.trace.api.trace_path`).

    Raises:
        UserError: ``command`` is no ``pcs replay`` shell line (an unclosed quote; another command); it names no
            trace and the bundled sample is missing.

    >>> command_trace("pcs replay /d/t.jsonl --retired-option 5"), command_trace("pcs replay /d/t.jsonl --tier")
    ('/d/t.jsonl', '/d/t.jsonl')

    >>> command_trace("pcs replay /data/t.jsonl --tier gpu=500blocks"), command_trace("pcs replay -")
    ('/data/t.jsonl', '-')
    >>> command_trace("pcs replay --policy lru /data/t.jsonl"), command_trace("pcs replay -- /data/t.jsonl")
    ('/data/t.jsonl', '/data/t.jsonl')
    """
    from pcs.errors import UserError

    try:
        words = shlex.split(command)
    except ValueError as exc:          # an unclosed quote
        raise UserError(f"not a shell line: {shown_repr(command)} ({exc})") from None
    if words[:2] != ["pcs", "replay"]:
        raise UserError(f"not a pcs replay command line: {shown_repr(command)}")
    from pcs.cli.replay import replay

    try:                # parsed as pcs replay parses it: the trace wherever the line puts it, after "--" too
        trace = replay.make_context("replay", words[2:], resilient_parsing=True).params.get("trace")
    except click.ClickException:
        trace = None
    if trace is None and len(words) > 2 and (words[2] == "-" or not words[2].startswith("-")):
        trace = words[2]    # an option this pcs does not know (a line of another version) stops click's parse
    if trace is not None:
        return str(trace)
    from pcs.trace.api import trace_path

    return str(trace_path(None))
