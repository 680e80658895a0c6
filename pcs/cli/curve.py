"""``pcs curve``: hit ratio at every capacity (LRU in one pass, Belady, ceiling)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import click

from pcs import _native
from pcs.cli.common import PcsUsageError, emit, format_option
from pcs.report.table import render_table
from pcs.units import format_bytes, format_count, format_percent, parse_bytes


def _parse_capacities(text: str, block_bytes: int | None) -> list[int]:
    """"1000,5000" -> blocks; "40GB,80GB" -> floor(bytes / block bytes) (needs --model)."""
    out = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        if item.isdigit():
            out.append(int(item))
            continue
        if not item[0].isdigit():
            raise PcsUsageError(f"--capacities {item!r}: expected a block count >= 0 (e.g. 5000) or, with --model,"
                                " a size (e.g. 40GB)")
        if block_bytes is None:
            parse_bytes(item)  # a malformed size says so first
            raise PcsUsageError(f"--capacities {item!r}: sizes in bytes need --model (plain numbers are blocks)")
        out.append(parse_bytes(item) // block_bytes)
    if not out:
        raise PcsUsageError(f"--capacities {text!r}: give comma-separated blocks, e.g. 1000,5000,20000")
    return out


def _table(payload: dict[str, Any]) -> str:
    has_bytes = payload.get("block_bytes") is not None
    headers = ["capacity (blocks)"] + (["capacity"] if has_bytes else []) + \
        ["LRU", "Belady", "ceiling", "LRU block misses", "Belady block misses"]
    rows = []
    for r in payload["rows"]:
        rows.append([format_count(r["capacity_blocks"])]
                    + ([format_bytes(r["capacity_bytes"])] if has_bytes else [])
                    + [format_percent(r["lru_hit_ratio"]), format_percent(r["belady_hit_ratio"]),
                       format_percent(r["ceiling_hit_ratio"]), format_count(r["lru_block_misses"]),
                       None if r["belady_block_misses"] is None else format_count(r["belady_block_misses"])])
    title = (f"Hit ratio by capacity: {payload['trace']} ({format_count(payload['requests'])} requests, "
             f"{format_count(payload['block_accesses'])} cacheable block accesses, block {payload['block_size']} tokens"
             + (f", {payload['model']} {format_bytes(payload['block_bytes'])}/block reserved" if has_bytes else "")
             + ")")
    knees = []
    for entry in payload["knee"].values():
        c = entry["capacity_blocks"]
        where = "-" if c is None else format_count(c) + " blocks" + \
            (f" ({format_bytes(entry['capacity_bytes'])})" if has_bytes else "")
        knees.append(f"{entry['percent_of_ceiling']} % -> {where}")
    notes = ["token-weighted; LRU = `pcs replay --timing sequential --policy lru` with one tier of that size,"
             f" exact for every capacity from one pass of stack depths (kernel {payload['kernel']})",
             "Belady = offline optimum (evicts the unpinned leaf used farthest in the future); ceiling ="
             " infinite cache (single-sequence)",
             "LRU knee (smallest capacity reaching this share of the ceiling): " + "; ".join(knees),
             "capacity in bytes uses stored (Reserved) bytes per block: a narrower KV dtype adds fewer blocks than"
             " its payload ratio suggests (scales), see pcs footprint"]
    if payload["sample_rate"] < 1.0:
        notes.append(f"SHARDS sample rate {payload['sample_rate']:g}: LRU values are estimates (README gives the"
                     " measured error); Belady is not computed when sampling")
    return render_table(headers, rows, title=title, notes=notes)


def _plot(result, path: str, model_name: str | None) -> None:
    target = Path(path)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PcsUsageError("--plot needs matplotlib: pip install 'pcs[plot]'") from None
    import numpy as np

    lru = result.lru
    top = max(lru.max_useful_capacity_blocks, max(r["capacity_blocks"] for r in result.rows), 1)
    xs = np.unique(np.rint(np.geomspace(1, top * 1.5, 400)).astype(np.int64))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(xs, lru.hit_ratio(xs) * 100, label="LRU (every capacity)")
    bel = [(r["capacity_blocks"], r["belady_hit_ratio"]) for r in result.rows if r["belady_hit_ratio"] is not None]
    if bel:
        ax.plot([c for c, _ in bel], [b * 100 for _, b in bel], "o--", label="Belady (offline optimum)")
    ax.axhline(result.ceiling_hit_ratio * 100, color="grey", ls=":", label="ceiling (infinite cache)")
    ax.set_xscale("log")
    ax.set_xlabel("capacity (blocks)" + (f"; {model_name}" if model_name else ""))
    ax.set_ylabel("token hit ratio (%)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(dir=target.resolve().parent, suffix=target.suffix or ".png")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=120)
        os.replace(tmp, target)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)


@click.command("curve")
@click.argument("trace", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--capacities", metavar="LIST",
              help="Comma-separated cache sizes in blocks (1000,5000,20000), or in bytes with --model (40GB,80GB).")
@click.option("--points", type=click.IntRange(min=1), default=None,
              help="Instead of --capacities: this many sizes spaced geometrically up to where LRU reaches the "
                   "ceiling. [default: 12]")
@click.option("--model", "model_name", metavar="NAME", default=None,
              help="Model preset (see `pcs models`): adds capacity in bytes (blocks x reserved bytes per block).")
@click.option("--dtype", default=None, help="KV dtype for the bytes (e.g. fp8, bf16); needs --model.")
@click.option("--block-size", type=click.IntRange(min=1), default=None,
              help="Tokens per block for token-id traces (hash-id traces fix their own).")
@click.option("--no-belady", is_flag=True, help="Skip the offline optimum (pure Python, ~1 M accesses/s per capacity; "
              "always skipped when sampling).")
@click.option("--sample-rate", type=click.FloatRange(0, 1, min_open=True), default=1.0, show_default=True,
              help="SHARDS spatial sampling rate for huge traces (1 = exact).")
@click.option("--exact-head-blocks", type=click.IntRange(min=0), default=1, show_default=True,
              help="With sampling: blocks seen this close to a request's head are kept exactly.")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling hash seed.")
@click.option("--native", type=click.Choice(_native.MODES), default=None, help=_native.HELP)
@click.option("--kernel", type=click.Choice(_native.MODES), default=None, hidden=True,
              help="Older name of --native.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Also draw the curves to this PNG (needs the plot extra: pip install 'pcs[plot]').")
@format_option
def curve(trace, capacities, points, model_name, dtype, block_size, no_belady, sample_rate, exact_head_blocks,
          seed, native, kernel, plot_path, fmt) -> None:
    """Hit ratio at every cache capacity: LRU, Belady and the ceiling.

    TRACE is a trace file (default: the bundled sample). Capacities are in
    blocks of the trace's block size; ratios are token-weighted hits over
    prompt tokens with vLLM's block rules (full blocks only, last prompt
    token recomputed). The LRU curve is exact for every capacity from one
    pass (stack depths); the knee is the smallest capacity reaching 50, 90
    and 99 % of the ceiling.

    \b
    Example:
      pcs curve trace.jsonl --capacities 1000,5000,20000 --model llama-3.1-8b
      pcs curve trace.jsonl --points 20 --format json --plot curve.png
    """
    from pcs.curves.api import curve as compute_curve, load_accesses

    if capacities is not None and points is not None:
        raise PcsUsageError("give --capacities or --points, not both")
    if plot_path and not Path(plot_path).resolve().parent.is_dir():
        raise PcsUsageError(f"--plot {plot_path}: directory {str(Path(plot_path).parent)!r} does not exist")
    if dtype is not None and model_name is None:
        raise PcsUsageError("--dtype sets the KV dtype of --model's bytes; give --model too")
    spec = None
    if model_name is not None:
        from pcs.model import get_model

        spec = get_model(model_name)
        spec = spec.with_dtype(dtype) if dtype else spec
    flat, name = load_accesses(trace, block_size)
    caps = None
    if capacities is not None:
        bb = None
        if spec is not None:
            from pcs.model import block_bytes

            bb = block_bytes(spec, flat.block_size, "reserved").total_bytes
        caps = _parse_capacities(capacities, bb)
    result = compute_curve(flat, caps, points, spec, belady=not no_belady, sample_rate=sample_rate, seed=seed,
                           exact_head_blocks=exact_head_blocks, native=native, kernel=kernel)
    payload = {**result.to_dict(), "trace": "-" if trace == "-" else name, "dtype": dtype}
    if plot_path:
        _plot(result, plot_path, spec.name if spec is not None else None)
    emit(payload, fmt, lambda: _table(payload))
