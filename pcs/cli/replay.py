"""``pcs replay``: a trace through a multi-tier prefix cache -- the real hit rate, bytes and envelope."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import click

from pcs import _native
from pcs.blocks import BlockRules
from pcs.cli.common import emit, format_option
from pcs.engine import select

__all__ = ["replay", "replay_options", "run_replay_kwargs", "write_requests"]


def _apply(options: list, f: Callable) -> Callable:
    for opt in reversed(options):
        f = opt(f)
    return f


def replay_options(f: Callable, policy_multiple: bool = False) -> Callable:
    """The options ``pcs replay`` and ``pcs compare`` share (trace, model, hardware, tiers, rules)."""
    policy_help = ("Eviction policy of every tier: lru, protected, fifo" +
                   (" (repeat to compare)." if policy_multiple else " (default lru)."))
    return _apply([
        click.argument("trace", required=False, type=click.Path(dir_okay=False)),
        click.option("--trace-format", help="Trace format (default: detected): mooncake, bailian, tokens, parquet."),
        click.option("--block-size", type=int, help="Tokens per block: re-blocks a token trace; for a hash-id trace (Mooncake 512, "
                                                     "Bailian 16 by default) it states the size it was recorded "
                                                     "at, and a mismatch is an error naming the line."),
        click.option("--model", help="Model preset (pcs models) or an HF config.json path; default llama-2-70b."),
        click.option("--dtype", help="KV cache dtype, e.g. fp8 or bf16 (default: the model's)."),
        click.option("--gpu", help="GPU preset (pcs hardware); default h100-sxm."),
        click.option("--tp", type=int, help="Tensor-parallel size = GPUs per instance; default 8."),
        click.option("--hardware-file", type=click.Path(dir_okay=False),
                     help="TOML/JSON overrides of GPU and link presets."),
        click.option("--tier", "tiers", multiple=True,
                     help="A tier NAME=SIZE, GPU first, repeatable: gpu=400GB, cpu=2TB, ssd=30TB or "
                          "gpu=5000blocks (0 allowed). Default: gpu=400GB cpu=2TB."),
        click.option("--policy", "policy", multiple=policy_multiple, help=policy_help),
        click.option("--tier-policy", "tier_policy", multiple=True,
                     help="Per-tier policy NAME=POLICY, e.g. cpu=protected (repeatable)."),
        click.option("--protected-share", type=float,
                     help="Protected segment share of a tier for 'protected' (default 0.8, Caffeine's)."),
        click.option("--link", "link", multiple=True,
                     help="Restore link of a lower tier, NAME=PRESET or NAME=BANDWIDTH per GPU: "
                          "cpu=pcie-gen5-x16, cpu=25GB/s (default per tier name: pcs hardware)."),
        click.option("--write-policy", default="back", show_default=True,
                     help="back: evicted blocks move down a tier; through: computed blocks are copied down at once."),
        click.option("--timing", default="modeled", show_default=True,
                     help="modeled: trace arrivals, FIFO admission, restore and prefill times; "
                          "sequential: one request at a time (the classic trace replay)."),
        click.option("--engine", type=click.Choice(select.REQUESTS), default="auto", show_default=True,
                     help="Which engine runs the replay (all give the same numbers): auto = the first that "
                          "applies of " + "; ".join(f"{r.name}: {r.summary}" for r in select.ENGINES) +
                          ". Old names: " + ", ".join(f"{a} = {n}" for a, n in select.ALIASES.items()) + "."),
        click.option("--native", type=click.Choice(_native.MODES), default=None, help=_native.HELP),
        click.option("--cache-partial-blocks", is_flag=True, help="Cache every hash id, the partial last block too."),
        click.option("--no-recompute-last-token", is_flag=True,
                     help="Lift the cap of prompt_len - 1 hit tokens (vLLM, SGLang recompute the last token)."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar and no notes on stderr."),
    ], f)


def _pairs(values, what: str) -> dict[str, str]:
    from pcs.engine.api import parse_assignment

    out: dict[str, str] = {}
    for v in values:
        k, val = parse_assignment(v, what)
        out[k] = val
    return out


class _Progress:
    """tqdm on stderr after ~2 s; off with --quiet or when stderr is not a terminal."""

    def __init__(self, quiet: bool) -> None:
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=None, unit=" req", delay=2.0, file=sys.stderr, leave=False, desc="replay")

    def __call__(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_replay_kwargs(kw: dict[str, Any], policy: str | None, tiers: list[str] | None,
                      progress: Callable[[int], None] | None = None):
    """Run :func:`pcs.engine.api.replay` from the parsed shared options."""
    from pcs.engine.api import replay as run

    trace = None
    if kw["trace"] or kw["trace_format"] or kw["block_size"]:
        from pcs.trace import open_trace

        trace = open_trace(kw["trace"], format=kw["trace_format"], block_size=kw["block_size"])
    model = kw["model"]
    if model and Path(model).is_file():
        from pcs.model import load_hf_config

        model = load_hf_config(model)
    table = None
    if kw["hardware_file"]:
        from pcs.hardware import load_hardware_file

        table = load_hardware_file(kw["hardware_file"])
    return run(trace, model=model, hardware=kw["gpu"], tp=kw["tp"], dtype=kw["dtype"], tiers=tiers or None,
               policy=policy, tier_policies=_pairs(kw["tier_policy"], "tier policy"),
               links=_pairs(kw["link"], "link"), protected_share=kw["protected_share"], timing=kw["timing"],
               write_policy=kw["write_policy"], hardware_table=table, progress=progress, engine=kw["engine"],
               native=kw["native"],
               rules=BlockRules(cache_partial_blocks=kw["cache_partial_blocks"],
                                recompute_last_token=not kw["no_recompute_last_token"]))


def write_requests(table: Any, path: str) -> None:
    """Write the per-request table to ``path`` (.parquet or .csv) via a temp file and a rename.

    Raises:
        ValueError: another extension.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise ValueError(f"--requests-out {path!r}: the name must end in .parquet or .csv")
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    os.close(fd)
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        else:
            import pyarrow.csv as pcsv

            pcsv.write_csv(table, tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@click.command("replay")
@replay_options
@click.option("--requests-out", type=click.Path(dir_okay=False),
              help="Write one row per request to FILE.parquet or FILE.csv.")
@format_option
def replay(fmt: str, requests_out: str | None, **kw: Any) -> None:
    """Replay TRACE through a multi-tier prefix cache: real vs single-sequence hit rate,
    bytes per tier and link, and the bandwidth envelope (restore vs recompute).

    \b
    Sizes are decimal (400GB = 4e11 B) or blocks (5000blocks); bandwidths per GPU.
    With no arguments: the bundled sample trace, llama-2-70b, 8x h100-sxm TP=8,
    --tier gpu=400GB --tier cpu=2TB (the reason is printed).
    Example:
      pcs replay trace.jsonl --model llama-3.1-70b --tier gpu=400GB --tier cpu=2TB --policy protected
      pcs replay trace.jsonl --tier gpu=5000blocks --timing sequential --format json
    JSON keys: see README, section replay (hit_ratio, hit_ratio_per_tier,
    single_sequence_hit_ratio, gap, tiers, bytes, envelope).
    """
    from pcs.report.replay import render_replay

    progress = _Progress(kw["quiet"])
    try:
        result = run_replay_kwargs(kw, kw["policy"], list(kw["tiers"]), progress)
    finally:
        progress.close()
    s = result.summary
    if not kw["quiet"] and fmt != "table":
        for note in s.get("notes", ()):
            click.echo(f"pcs: note: {note}", err=True)
    if requests_out:
        write_requests(result.requests, requests_out)
    emit(s, fmt, lambda: render_replay(s), rows_key=None)
