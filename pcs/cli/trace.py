"""``pcs trace``: inspect, convert and synthesise request traces.

Subcommands: ``stats`` (what a trace asks of a prefix cache), ``convert``
(JSONL <-> Parquet, re-blocking of token traces) and ``synth`` (seeded
synthetic workloads). :func:`trace_input_options` and :func:`open_from_options`
(:mod:`pcs.cli.traceopts`, re-exported here) give every trace-taking command the same input options.
"""
from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import click

from pcs.cli.common import PcsGroup, Progress, counted, emit, format_option, quiet_option, \
    skipped_lines_in_words
from pcs.cli.iofiles import refuse_unwritten_format
from pcs.cli.params import MAX_BLOCK_SIZE, MAX_SEED, MAX_SYNTH_REQUESTS, MAX_TOKENS, CheckedPath, Choice, Duration, Float, Int
# the input options every trace-taking command shares (pcs.cli.traceopts), re-exported under their old home
from pcs.cli.traceopts import open_from_options, trace_input_options, written_block_size_note
from pcs.errors import OUT_OF_FLOAT_RANGE, quoted, shown_repr
from pcs.report.trace import render_convert, render_stats, render_synth
from pcs.trace.convert import OUT_FORMATS
from pcs.units import format_counted

__all__ = ["trace", "trace_input_options", "open_from_options"]


@click.group(cls=PcsGroup, context_settings={"help_option_names": ["-h", "--help"]})
def trace() -> None:
    """Inspect, convert and synthesise request traces.

    \b
    Formats: Mooncake JSONL (timestamp ms, 512-token blocks), Qwen-Bailian
    JSONL (timestamp s, 16-token blocks), token-id JSONL (pcs hashes the
    blocks), pcs Parquet, and the length-only Azure and BurstGPT CSVs (prefix
    reuse synthesised and flagged); gzip is read transparently; '-' is stdin.
    Without a TRACE argument the bundled sample traces/sample_chat.jsonl is read.
    """


@trace.command("stats")
@click.argument("trace_path", metavar="[TRACE]", required=False)
@trace_input_options
@format_option
@quiet_option
def stats(trace_path, trace_format, block_size, on_error, sort, fmt, quiet) -> None:
    """Request, token, block and reuse statistics of a trace.

    \b
    Token counts in tokens, times in seconds, reuse distance in distinct
    blocks. JSON keys (stable): requests, block_accesses, distinct_blocks,
    single_sequence_hit_ratio, time_span_s, arrival_rate_rps,
    prompt_tokens_{mean,p50,p99,max,total}, reuse_distance_histogram,
    prefix_tree_*, shared_prefix_token_share, conversations, reuse, ...
    (docs/traces.md, docs/traces-formats.md).

    \b
    Example:
      pcs trace stats conversation_trace.jsonl --format json
    """
    from pcs.trace.stats import trace_stats

    t = open_from_options(trace_path, trace_format, block_size, on_error, sort)
    with Progress(quiet, desc="stats", total=t.estimated_requests) as progress:
        st = trace_stats(counted(t, progress))
    st = skipped_lines_in_words(st)
    emit(st, fmt, lambda: render_stats(st), rows_key=None)


@trace.command("convert")
@click.argument("in_path", metavar="IN")
@click.argument("out_path", metavar="OUT", type=CheckedPath(dir_okay=False))
@click.option("--to", "out_format", type=Choice(OUT_FORMATS), default=None,
              help="Output format; default parquet for *.parquet, *.pq or *.parq (any case), else mooncake "
                   "(*.gz is gzipped); a *.csv or *.tsv name needs --to (pcs writes no CSV).")
@click.option("--remap-ids/--keep-ids", default=None,
              help="Renumber ids 0, 1, 2, ... in first-appearance order (default: only for token traces).")
@trace_input_options
@format_option
@quiet_option
def convert_cmd(in_path, out_path, out_format, remap_ids, trace_format, block_size, on_error, sort, fmt,
                quiet) -> None:
    """Convert a trace: JSONL <-> Parquet, or re-block a token trace.

    Streams in batches; writes a temporary file next to OUT and renames it
    into place (onto a symlink's target; a FIFO or /dev/null is written into,
    never replaced). A token trace read with --block-size B is written at B-token
    blocks (re-blocking); block-id traces keep their block size. pcs writes
    no CSV: an OUT named *.csv or *.tsv is refused unless --to names the format.

    Parquet is written uncompressed: a replay reads it with about 23 % fewer
    instructions than zstd pages (the 10x Mooncake read, 180.6 M against
    234.0 M). The price is the file: 3.4-3.5x the zstd size, still 3.8-4.6x
    smaller than the JSONL (Mooncake 1x: 798 KB, 232 KB zstd, JSONL 3.0 MB;
    10x: 7.36 MB, 2.09 MB, 34 MB). pcs reads compressed Parquet as well.

    \b
    Examples:
      pcs trace convert trace.jsonl trace.parquet
      pcs trace convert tokens.jsonl tokens_b64.jsonl --block-size 64
    """
    from pcs.outfile import check_outputs
    from pcs.trace.convert import convert

    check_outputs({"OUT": out_path}, {"IN": in_path})
    refuse_unwritten_format(out_path, out_format)
    t = open_from_options(in_path, trace_format, block_size, on_error, sort)
    with Progress(quiet, desc="convert", total=t.estimated_requests) as progress:
        info = convert(counted(t, progress), out_path, out_format, remap_ids=remap_ids)
    info = skipped_lines_in_words(info)
    written_block_size_note(info, quiet, converted=True)
    emit(info, fmt, lambda: render_convert(info), rows_key=None)


def _parse_mix(text: str) -> tuple[float, float, float]:
    """``--mix``: ``KIND=SHARE`` pairs, each kind at most once, each share a finite number >= 0 in ASCII digits
    (:func:`pcs.units.ascii_float`: no ``nan``, ``1_000`` or full-width digits; a NaN share passed every ``<``
    test and gave an empty trace), normalised to sum 1."""
    from pcs.trace.synth import KINDS
    from pcs.units import ascii_float

    shares: dict[str, float] = {}
    try:
        for part in text.split(","):
            k, v = part.split("=")
            if k.strip() not in KINDS:
                raise ValueError
            if k.strip() in shares:
                raise click.BadParameter(f"{shown_repr(text)}: {k.strip()} is given twice; give each kind once", param_hint="'--mix'")
            try:
                shares[k.strip()] = ascii_float(v, "share")
            except ValueError:
                raise click.BadParameter(f"{shown_repr(text)}: the share of {k.strip()} must be a finite number >= 0, got "
                                         f"{quoted(v.strip(), show=str)} (ASCII digits 0-9: no nan, inf, '_' or other scripts' "
                                         "digits)", param_hint="'--mix'") from None
            if math.isinf(shares[k.strip()]):      # 1e999: ASCII, but beyond a float (read as inf)
                raise click.BadParameter(f"{shown_repr(text)}: the share of {k.strip()}, {quoted(v.strip(), show=str)}, is "
                                         f"{OUT_OF_FLOAT_RANGE}", param_hint="'--mix'")
    except ValueError:
        raise click.BadParameter(f"{shown_repr(text)}: expected e.g. chat=0.6,agent=0.3,oneoff=0.1 (kinds: {', '.join(KINDS)})",
                                 param_hint="'--mix'")
    for k, v in shares.items():
        if not (math.isfinite(v) and v >= 0):
            raise click.BadParameter(f"{shown_repr(text)}: the share of {k} must be a finite number >= 0, got {v}", param_hint="'--mix'")
    total = sum(shares.values())
    if not (0 < total < math.inf):
        raise click.BadParameter(f"{shown_repr(text)}: shares must have a positive, finite sum", param_hint="'--mix'")
    return tuple(shares.get(k, 0.0) / total for k in KINDS)  # type: ignore[return-value]


def _token_tee(requests, f):
    """Yield requests unchanged while writing their token JSONL form to the open file ``f`` (timestamps as the
    main output writes them, :func:`pcs.trace.convert.ms_stamp`: --azure-csv arrivals are not whole ms)."""
    from pcs.trace.convert import ms_stamp

    for r in requests:
        f.write(json.dumps({"timestamp": ms_stamp(r.arrival_s), "output_length": r.output_tokens,
                            "reuse": "synthetic", "token_ids": r.token_ids.tolist()}) + "\n")
        yield r


def _nonempty(requests, source: str):
    """Yield ``requests``; none at all is an InputError naming ``source`` (raised before any output is published)."""
    from pcs.errors import InputError

    n = 0
    for r in requests:
        n += 1
        yield r
    if n == 0:
        raise InputError(source, None, None, "no requests (a CSV header alone?): nothing to synthesise")


class _Requests(click.ParamType):
    """``--requests``: a count in [1, MAX_SYNTH_REQUESTS], or ``all`` (every row of ``--azure-csv``)."""

    name = "N|all"

    def convert(self, value: Any, param, ctx) -> int | None:
        if isinstance(value, int) or value is None:
            return value
        if str(value).strip().lower() == "all":
            return None
        return Int(1, MAX_SYNTH_REQUESTS).convert(value, param, ctx)


@trace.command("synth")
@click.argument("out_path", metavar="OUT", type=CheckedPath(dir_okay=False))
@click.option("--requests", "num_requests", type=_Requests(), default=1700, show_default=True,
              help="Requests to generate (with --azure-csv: at most its rows; all = every row).")
@click.option("--seed", type=Int(0, MAX_SEED), default=0, show_default=True, help="RNG seed; same seed, same bytes.")
@click.option("--rate", "rate_rps", type=Float(1e-6, 1e9), default=6.0, show_default=True,
              help="Steady-state arrival rate, requests per second (sessions start as Poisson processes). "
                   "A trace starts with no session under way, so a short one measures less (6 -> ~3.4 over "
                   "1,700 requests).")
@click.option("--mix", default="chat=0.92,agent=0.03,oneoff=0.05", show_default=True,
              help="Shares of requests per kind: chat sessions, agent/tool loops, one-off requests.")
@click.option("--think-s", "think_s", type=Duration(0, 1e9, min_open=True, plain_seconds=True), default=150.0,
              show_default=True,
              help="Median time (e.g. 150s, 2.5min; a plain number is seconds) between two turns of a chat session (lognormal, sigma 1). Longer: later "
                   "reuse, longer reuse distances, more pressure on the cache.")
@click.option("--turns", "turns_mean", type=Float(1, 1e6), default=3.0, show_default=True,
              help="Mean requests per chat session (geometric). More turns: more prefix reuse.")
@click.option("--first-tokens", "first_tokens", type=Int(1, MAX_TOKENS), default=5500, show_default=True,
              help="Median tokens of a chat session's first message (documents pasted in; lognormal, sigma 1.3).")
@click.option("--block-size", type=Int(1, MAX_BLOCK_SIZE), default=512, show_default=True, help="Tokens per block.")
@click.option("--length-scale", type=Float(0, 1e6, min_open=True), default=1.0, show_default=True,
              help="Multiply every median length (prompts, answers, prefixes) by this; Poisson mode.")
@click.option("--azure-csv", type=CheckedPath(exists=True, dir_okay=False), default=None,
              help="Take arrival times and token counts from an Azure LLM inference CSV instead of Poisson.")
@click.option("--to", "out_format", type=Choice(OUT_FORMATS), default=None,
              help="Output format; default parquet for *.parquet, *.pq or *.parq (any case), else mooncake; "
                   "a *.csv or *.tsv name needs "
                   "--to (pcs writes no CSV).")
@click.option("--tokens-out", type=CheckedPath(dir_okay=False), default=None,
              help="Also write the token-id JSONL form (same requests; pcs hashes it to the same blocks).")
@format_option
@quiet_option
def synth(out_path, num_requests, seed, rate_rps, mix, think_s, turns_mean, first_tokens, block_size, length_scale,
          azure_csv, out_format, tokens_out, fmt, quiet) -> None:
    """Write a seeded synthetic workload with real prefix reuse.

    Multi-turn chat under one shared system prompt, agent/tool loops over
    long shared prefixes, and one-off requests. Ids are renumbered 0, 1, 2,
    ... in first-appearance order, as in the Mooncake release. The defaults
    give a Mooncake-conversation-like stream (traces/README.md compares them):
    prompt lengths, blocks per request and arrival rate as in the real trace,
    reuse times shortened by the shorter span. Every row says
    "reuse": "synthetic" (Parquet: the pcs.reuse metadata), so replay, compare,
    curve and trace stats note that the reuse is synthetic.

    \b
    Examples:
      pcs trace synth my.jsonl --requests 5000 --rate 4 --seed 7
      pcs trace synth slow.jsonl --think-s 600 --turns 5     # later, more frequent reuse
      pcs trace synth az.jsonl --azure-csv AzureLLMInferenceTrace_conv.csv
    """
    from pcs.outfile import atomic_output, check_outputs
    from pcs.trace.convert import open_jsonl_text, out_format_for, refuse_token_output_name, write_trace
    from pcs.trace.hashids import SYNTH_REUSE
    from pcs.trace.synth import SynthSpec, synth_batches, synth_requests

    if num_requests is None and azure_csv is None:
        raise click.BadParameter("'all' takes every row of --azure-csv; without it give a number",
                                 param_hint="'--requests'")
    check_outputs({"OUT": out_path, "--tokens-out": tokens_out}, {"--azure-csv": azure_csv})
    refuse_unwritten_format(out_path, out_format)
    if tokens_out:
        refuse_token_output_name(tokens_out, "--tokens-out")
    ofmt = out_format_for(out_path, out_format)
    spec = SynthSpec(num_requests=MAX_SYNTH_REQUESTS if num_requests is None else num_requests, seed=seed,
                     rate_rps=rate_rps, mix=_parse_mix(mix), chat_think_s=think_s, chat_turns_mean=turns_mean,
                     chat_first_median_tokens=first_tokens, block_size=block_size, length_scale=length_scale)
    reqs = synth_requests(spec, azure_csv)
    if azure_csv is not None:
        reqs = _nonempty(reqs, azure_csv)
    total = num_requests if azure_csv is None else None
    with contextlib.ExitStack() as outputs, Progress(quiet, desc="synth", total=total) as progress:
        if tokens_out:  # published after OUT is written, removed if anything fails
            tmp = outputs.enter_context(atomic_output(tokens_out))
            reqs = _token_tee(reqs, outputs.enter_context(open_jsonl_text(tmp, tokens_out)))
        info = write_trace(_progressed(synth_batches(reqs, block_size), progress), out_path, ofmt,
                           block_size=block_size, remap_ids=True, source_format="synth", with_session=True,
                           reuse=SYNTH_REUSE)
    info.update(block_size=block_size, seed=seed, tokens_out=tokens_out, header_note=_azure_header_note(azure_csv))
    _azure_rows_note(azure_csv, num_requests, quiet)
    written_block_size_note(info, quiet)
    emit(info, fmt, lambda: render_synth(info), rows_key=None)


def _azure_header_note(azure_csv) -> str | None:
    """The columns ``--azure-csv``'s header holds that its reader read past (:func:`pcs.trace.api.csv_header_note`),
    for the summary's ``header_note`` (the table prints it as a note, as convert's); None without ``--azure-csv``."""
    from pcs.trace.api import csv_header_note
    from pcs.trace.source import display_name

    return None if azure_csv is None else csv_header_note(azure_csv, display_name(azure_csv), "azure")


def _azure_rows_note(azure_csv, num_requests, quiet) -> None:
    """With ``--azure-csv`` a count takes the CSV's first rows: say so (on stderr), most of all when the count is
    the default, which a user asking for the Azure trace may not expect (the default 1,700 requests are 1,700 of
    the Azure 2023 conversation trace's 19,365 rows). Only when rows were left out: an 8-row file gets none."""
    if azure_csv is None or num_requests is None or quiet or not _rows_beyond(azure_csv, num_requests):
        return
    source = click.get_current_context().get_parameter_source("num_requests")
    given = "the default" if source == click.core.ParameterSource.DEFAULT else "as given"
    click.echo(f"pcs: note: --azure-csv: at most the first {format_counted(num_requests, 'row')} {'was' if num_requests == 1 else 'were'} taken (--requests "
               f"{num_requests}, {given}); --requests all takes every row", err=True)


def _rows_beyond(azure_csv, n: int) -> bool:
    """True iff the CSV has a row after its first ``n`` (reads at most n + 1 rows; the run already checked them)."""
    import itertools

    from pcs.trace.azure import read_azure_csv

    return next(itertools.islice(read_azure_csv(azure_csv), n, None), None) is not None


def _progressed(batches, progress):
    for b in batches:
        yield b
        progress(len(b))


def _register_tools() -> None:
    """Add ``events``, ``from-chat`` and ``transform`` (pcs/cli/tracetools.py) to the group."""
    from pcs.cli import tracetools

    for cmd in (tracetools.events_cmd, tracetools.from_chat, tracetools.transform_cmd):
        trace.add_command(cmd)


_register_tools()
