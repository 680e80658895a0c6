"""``pcs trace events``, ``from-chat`` and ``transform``: engine events, chat logs and what-if copies of a trace.

Registered on the ``pcs trace`` group by :mod:`pcs.cli.trace`. Each command
parses its options, calls one API (:mod:`pcs.trace.kvevents`,
:mod:`pcs.trace.chat`, :mod:`pcs.trace.transform`), and emits the payload
with a renderer from :mod:`pcs.report.traceshape`.
"""
from __future__ import annotations

from pathlib import Path

import click

from pcs.cli.common import Progress, command, counted, emit, format_option, quiet_option, with_trace_notes
from pcs.cli.params import CheckedPath, MAX_SEED, MAX_TOKENS, Choice, Float, Int
from pcs.cli.traceopts import open_from_options, trace_input_options, written_block_size_note
from pcs.errors import UserError

__all__ = ["events_cmd", "from_chat", "transform_cmd"]




@command("events")
@click.argument("events_path", metavar="EVENTS")
@click.option("--at", "at_s", type=Float(-1e18, 1e18), default=None,
              help="Replay the events up to this engine time (seconds, the batches' ts) instead of to the end.")
@click.option("--list-held", is_flag=True, help="JSON: also list the ids held per (rank, medium).")
@format_option
@quiet_option
def events_cmd(events_path, at_s, list_held, fmt, quiet) -> None:
    """Which blocks a vLLM engine held, from its KV-cache events.

    \b
    Reads a capture of vLLM's KV events (BlockStored / BlockRemoved /
    AllBlocksCleared, vllm/distributed/kv_events.py): JSON Lines, one batch
    per line, or the raw msgpack payloads (the events extra: pip install -e '.[events]').
    Replays them per data-parallel rank and medium (GPU, CPU, ...) and
    reports what was held, the peak, evictions, re-stores and lifetimes.
    EVENTS '-' reads stdin.

    \b
    Example:
      pcs trace events traces/formats/vllm_kv_events_9.jsonl --at 103.2
    """
    from pcs.report.traceshape import render_events
    from pcs.trace.api import read_once
    from pcs.trace.kvevents import EMPTY_CAPTURE, held_blocks, read_kv_events, residency_summary
    from pcs.trace.source import check_source

    check_source(events_path, events_path, "events")    # '-' is stdin, as for every trace command
    with read_once(events_path, events_path, EMPTY_CAPTURE) as once:   # a FIFO: copied once, read twice
        st = residency_summary(read_kv_events(once, events_path), at_s)
        st = {"events_file": events_path, "at_s": at_s, **st}
        if list_held:
            for m in st["media"]:
                m["held"] = held_blocks(read_kv_events(once, events_path), at_s, m["rank"], m["medium"]).tolist()
    emit(st, fmt, lambda: render_events(st), rows_key="media")


@command("from-chat")
@click.argument("chat_path", metavar="CHAT")
@click.argument("out_path", metavar="OUT", type=CheckedPath(dir_okay=False))
@click.option("--tokenizer", "tokenizer_path", required=True, type=CheckedPath(dir_okay=False),
              help="The model's local tokenizer.json (read with the 'tokenizers' library; no network).")
@click.option("--chat-template", "template", default="chatml", show_default=True,
              help="Built-in chatml or llama3, a Jinja template file, or a tokenizer_config.json with chat_template.")
@click.option("--salt-per-tenant/--no-salt", default=True, show_default=True,
              help="Give each tenant ('user' field) its own cache_salt, as vLLM isolates tenants: no shared blocks.")
@format_option
@quiet_option
def from_chat(chat_path, out_path, tokenizer_path, template, salt_per_tenant, fmt, quiet) -> None:
    """Turn an OpenAI-style chat log into a token-id trace.

    \b
    CHAT: JSON Lines of chat-completions requests ('messages', optional
    'timestamp' ms or 'created' s, 'user', usage.completion_tokens), or
    {"request": ..., "response": ...} pairs ('-': stdin). Each request is rendered with the
    chat template (generation prompt added) and tokenized locally, so a later
    turn starts with the earlier turn's tokens: multi-turn reuse is measured,
    not guessed. OUT is token JSONL, read by every command at any --block-size.

    \b
    Example:
      pcs trace from-chat traces/formats/openai_chat_4.jsonl chat_tokens.jsonl \\
          --tokenizer traces/formats/tiny_wordlevel_tokenizer.json
      pcs trace stats chat_tokens.jsonl --block-size 4
    """
    from pcs.report.traceshape import render_from_chat
    from pcs.trace.chat import chat_to_token_rows, load_template, load_tokenizer, read_chat_jsonl, write_token_rows
    from pcs.trace.source import check_source

    from pcs.outfile import check_outputs

    check_source(chat_path, chat_path, "chat")     # '-' is stdin, as for every trace command
    check_outputs({"OUT": out_path}, {"CHAT": chat_path, "--tokenizer": tokenizer_path,
                                      "--chat-template": template if Path(template).is_file() else None})
    tok, tpl = load_tokenizer(tokenizer_path), load_template(template)
    _refuse_fixed_template(tpl, template)
    info = write_token_rows(chat_to_token_rows(read_chat_jsonl(chat_path), tok, tpl, salt_per_tenant), out_path)
    info.update(template=template, tokenizer=str(tokenizer_path), salt_per_tenant=salt_per_tenant)
    emit(info, fmt, lambda: render_from_chat(info), rows_key=None)


#: two chats that differ in every message: a chat template renders them as two different texts
_PROBES = ([{"role": "user", "content": "first probe"}],
           [{"role": "user", "content": "second"}, {"role": "assistant", "content": "probe"},
            {"role": "user", "content": "turn"}])


def _refuse_fixed_template(tpl, template: str) -> None:
    """Refuse a ``--chat-template`` whose text does not depend on the messages (a file that is no template, a
    template that never reads ``messages``): every request would be the same tokens, and the reuse measured
    would be fake. A template that fails on the two probe chats (:data:`_PROBES`) is left to the real ones.

    Raises:
        UserError: naming the template.
    """
    try:
        texts = {tpl(m, add_generation_prompt=True) for m in _PROBES}
    except UserError:
        return
    if len(texts) == 1:
        raise UserError(f"--chat-template {template}: renders two different chats as one text (it does not use "
                         "the messages: not a chat template?); give chatml, llama3, a Jinja template that loops "
                         "over messages, or a tokenizer_config.json with chat_template")


#: output requests above which pcs trace transform says up front that it will take a while
LARGE_OUTPUT_REQUESTS = 1_000_000


def _large_output_note(requests: int, spec) -> None:
    """A note on stderr, even with ``-q``, when ``--tenants N --tenant-mode copy`` writes more than
    :data:`LARGE_OUTPUT_REQUESTS` requests (N x the input; ~1.7 million took minutes)."""
    out = requests * spec.tenants if spec.tenant_mode == "copy" else requests
    if out > LARGE_OUTPUT_REQUESTS:
        click.echo(f"pcs: note: --tenants {spec.tenants} copies {requests:,} requests into {out:,}: this may take "
                   "minutes and the output is that many rows", err=True)


@command("transform")
@click.argument("in_path", metavar="IN")
@click.argument("out_path", metavar="OUT", type=CheckedPath(dir_okay=False))
@click.option("--speed", type=Float(1e-6, 1e6), default=1.0, show_default=True,
              help="Arrival-rate multiplier: arrival times are divided by it (2 = twice the traffic rate).")
@click.option("--tenants", type=Int(1, 1000), default=1, show_default=True,
              help="Number of tenants, each with its own block hashes (no sharing across tenants).")
@click.option("--tenant-mode", type=Choice(["copy", "split"]), default="copy", show_default=True,
              help="copy: N independent copies of the whole trace (N x the traffic); split: deal the "
                   "conversations to N tenants (same traffic, shared prefixes copied per tenant).")
@click.option("--prefix-scale", type=Float(0, 100, min_open=True), default=1.0, show_default=True,
              help="Multiply the length of shared prefixes (blocks two or more conversations contain).")
@click.option("--prompt-scale", type=Float(0, 100, min_open=True), default=1.0, show_default=True,
              help="Multiply the length of every prompt (the same text, stretched: sharing is kept).")
@click.option("--max-input-tokens", type=Int(1, MAX_TOKENS), default=None, help="Cut prompts to this many tokens.")
@click.option("--max-output-tokens", type=Int(1, MAX_TOKENS), default=None, help="Cut answers to this many tokens.")
@click.option("--sample-conversations", type=Float(0, 1, min_open=True), default=1.0,
              show_default=True, help="Keep this fraction of the conversations, with all their turns.")
@click.option("--seed", type=Int(0, MAX_SEED), default=0, show_default=True,
              help="Seed of sampling and of --tenant-mode split.")
@click.option("--to", "out_format", type=Choice(["mooncake", "bailian", "parquet"]), default=None,
              help="Output format; default parquet for *.parquet, *.pq or *.parq (any case), else mooncake; "
                   "a *.csv or *.tsv name needs "
                   "--to (pcs writes no CSV).")
@trace_input_options
@format_option
@quiet_option
def transform_cmd(in_path, out_path, speed, tenants, tenant_mode, prefix_scale, prompt_scale, max_input_tokens,
                  max_output_tokens, sample_conversations, seed, out_format, trace_format, block_size, on_error,
                  sort, fmt, quiet) -> None:
    """What-if copies of a trace that keep its prefix tree.

    \b
    Applied in this order: sample conversations; stretch shared prefixes and
    prompts; truncate; make tenants; speed up. New block hashes are derived from
    the old ones, so requests share a new block exactly when the text they
    stand for is equal (rules: docs/traces-formats.md). Prints the shape
    before and after (requests, conversations, single-sequence hit ratio, ...);
    writes OUT atomically with ids renumbered 0, 1, 2, ...

    \b
    Examples:
      pcs trace transform trace.jsonl fast.jsonl --speed 2
      pcs trace transform trace.jsonl fleet.jsonl --tenants 4 --tenant-mode split
      pcs trace transform trace.jsonl long.jsonl --prefix-scale 3 --max-input-tokens 32768
    """
    from pcs.report.traceshape import render_transform
    from pcs.trace.convert import out_format_for, refuse_bailian_without_sessions, write_trace
    from pcs.trace.parquet import session_columns
    from pcs.trace.request import concat_batches
    from pcs.trace.transform import TransformSpec, summary, transform

    spec = TransformSpec(speed=speed, tenants=tenants, tenant_mode=tenant_mode, prefix_scale=prefix_scale,
                         prompt_scale=prompt_scale, max_input_tokens=max_input_tokens,
                         max_output_tokens=max_output_tokens, sample_conversations=sample_conversations, seed=seed)
    from pcs.outfile import check_outputs

    check_outputs({"OUT": out_path}, {"IN": in_path})
    from pcs.cli.iofiles import refuse_unwritten_format

    refuse_unwritten_format(out_path, out_format)
    t = open_from_options(in_path, trace_format, block_size, on_error, sort)
    with Progress(quiet, desc="reading", total=t.estimated_requests) as progress:
        before = concat_batches(list(counted(t, progress).iter_batches()), t.block_size)
    _large_output_note(len(before), spec)
    after = transform(before, spec).batch
    ofmt = out_format_for(out_path, out_format)
    refuse_bailian_without_sessions(ofmt, session_columns(after), t.format, t.name)
    synthesised = t.reuse.startswith("synthesised")  # the synthetic-reuse note follows the trace
    info = write_trace([after], out_path, ofmt, block_size=t.block_size, remap_ids=True, source_format=t.format,
                       reuse=t.reuse if synthesised else None)
    info.update(source=t.name, block_size=t.block_size, reuse=t.reuse, applied=spec.applied(),
                before=summary(before), after=summary(after))
    with_trace_notes(info, t, fmt, quiet)    # skipped, skipped_lines and their notes: as pcs trace stats, replay
    written_block_size_note(info, quiet, converted=True)
    emit(info, fmt, lambda: render_transform(info), rows_key=None)
