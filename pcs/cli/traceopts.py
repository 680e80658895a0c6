"""The trace input options every trace-taking command shares (``pcs trace stats/convert``, ``pcs trace events /
from-chat / transform``, ``pcs curve``) and the note after writing a trace.

Apart from :mod:`pcs.cli.trace` so :mod:`pcs.cli.tracetools`, whose commands that group adds, imports them without
importing the group: ``import pcs.cli.tracetools`` alone was a circular import (the group registers the tools'
commands when it loads; the tools imported the group first).
"""
from __future__ import annotations

from typing import Callable

import click

from pcs.cli.common import apply_options
from pcs.cli.params import MAX_BLOCK_SIZE, Choice, Int
from pcs.trace.api import FORMATS, ON_ERROR

__all__ = ["trace_input_options", "open_from_options", "written_block_size_note"]


def trace_input_options(f: Callable) -> Callable:
    """Add ``--trace-format``, ``--block-size``, ``--on-error`` and ``--sort``."""
    opts = [
        click.option("--trace-format", type=Choice(list(FORMATS)),
                     default=None, help="Input format; default: detected from the content. azure and burstgpt "
                     "record lengths only: their prefix reuse is synthesised and flagged (docs/traces-formats.md)."),
        click.option("--block-size", type=Int(1, MAX_BLOCK_SIZE), default=None,
                     help="Tokens per block. Default: Mooncake 512, Bailian 16, token JSONL 16, Azure and "
                          "BurstGPT 16, Parquet as stored. A block-id trace recorded at another size is rejected."),
        click.option("--on-error", type=Choice(ON_ERROR), default="raise", show_default=True,
                     help="raise: stop at the first bad line (exit 2); skip: skip bad lines (counted, the first 5 "
                          "named)."),
        click.option("--sort", is_flag=True, help="Reorder by arrival time instead of rejecting a decreasing "
                     "timestamp (holds the trace in memory)."),
    ]
    return apply_options(opts, f)


def open_from_options(path, trace_format, block_size, on_error, sort):
    """:func:`pcs.trace.open_trace` from the values of :func:`trace_input_options`."""
    from pcs.trace import open_trace

    return open_trace(path, format=trace_format, block_size=block_size, on_error=on_error, sort=sort)


def written_block_size_note(info: dict, quiet: bool, converted: bool = False) -> None:
    """On stderr: the trace just written is JSONL at blocks its readers do not assume
    (:func:`pcs.trace.convert.block_size_note`; convert, synth and transform); with ``converted`` (convert,
    transform: a trace read, not made) also that its session ids were dropped (:func:`pcs.trace.convert.
    session_note`)."""
    from pcs.trace.convert import block_size_note, session_note

    notes = (block_size_note(info["format"], info["block_size"], info["path"]),
             session_note(info) if converted else None)
    for note in notes:
        if note and not quiet:
            click.echo(f"pcs: note: {note}", err=True)
