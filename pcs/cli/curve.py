"""``pcs curve``: hit ratio at every capacity (LRU in one pass, Belady, ceiling)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from pcs import _native
from pcs.cli.common import PcsUsageError, RegistryChoice, emit, format_option, quiet_option
from pcs.model import KV_DTYPES, get_layout
from pcs.report.curve import curve_figure, render_curve
from pcs.units import parse_bytes


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


def _plot(result, path: str, model_name: str | None) -> None:
    """Draw the curves (:func:`pcs.report.curve.curve_figure`) to ``path`` via a temp file and a rename."""
    target = Path(path)
    try:
        fig = curve_figure(result, model_name)
    except ImportError:
        raise PcsUsageError("--plot needs matplotlib: pip install 'pcs[plot]'") from None
    import matplotlib.pyplot as plt

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
@click.option("--dtype", type=RegistryChoice(KV_DTYPES, get_layout), default=None,
              help="KV dtype for the bytes; needs --model.")
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
@quiet_option
def curve(trace, capacities, points, model_name, dtype, block_size, no_belady, sample_rate, exact_head_blocks,
          seed, native, kernel, plot_path, fmt, quiet) -> None:
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
    emit(payload, fmt, lambda: render_curve(payload))
