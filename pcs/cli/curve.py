"""``pcs curve``: hit ratio at every capacity (LRU in one pass, Belady, ceiling)."""
from __future__ import annotations

from pathlib import Path

import click

from pcs._heldimport import held_import
from pcs import _native
from pcs.extras import missing_extra
from pcs.cli.common import (PcsUsageError, Progress, RegistryChoice, command, counted, emit, format_option,
                             quiet_option, with_trace_notes)
from pcs.cli.params import CheckedPath, MAX_COUNT, MAX_POINTS, MAX_SEED, Aliased, Choice, Float, Int, parse_capacity_list
from pcs.cli.report import check_outputs, write_outputs
from pcs.cli.traceopts import open_from_options, trace_input_options
from pcs.model import KV_DTYPES, get_layout
from pcs.report.curve import curve_figure, render_curve, with_sampled_note
from pcs.errors import shown_repr


def _plot(result, path: str, model_name: str | None, trace: str) -> None:
    """Draw the curves (:func:`pcs.report.curve.curve_figure`) to ``path`` via a temp file and a rename."""
    from pcs.outfile import atomic_output

    try:
        fig = curve_figure(result, model_name, trace)
    except ImportError:
        raise PcsUsageError(missing_extra("--plot", "matplotlib", "plot")) from None
    plt = held_import("matplotlib.pyplot")

    import logging

    # PostScript (.eps, .ps) has no transparency: matplotlib logs a raw warning and draws the figure's translucent
    # parts (the grid at alpha 0.3, the legend's frame) opaque, which reads the same on white paper: kept quiet here
    ps_log = logging.getLogger("matplotlib.backends.backend_ps")
    level = ps_log.level
    ps_log.setLevel(logging.ERROR)
    try:
        with atomic_output(path) as tmp:
            fig.savefig(tmp, dpi=120, format=(Path(path).suffix.lstrip(".").lower() or "png"))
    finally:
        ps_log.setLevel(level)
        plt.close(fig)


#: The image types ``--plot FILE`` takes, by suffix (case ignored): formats matplotlib's ``savefig`` writes with
#: its default backends and no other program (not pgf: LaTeX). The one list of the check, its refusal and the
#: option's help (tests/cli/test_curve_cli.py checks them against matplotlib's own list).
PLOT_TYPES = ("png", "svg", "pdf", "jpg", "jpeg", "tif", "tiff", "webp", "eps", "ps")


def _plot_format_ok(path: str) -> None:
    """``--plot`` names a format of :data:`PLOT_TYPES` (refused before the work, not after it).

    Raises:
        PcsUsageError: another suffix, naming every type taken.
    """
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix and suffix not in PLOT_TYPES:
        from pcs.choices import did_you_mean

        raise PcsUsageError(f"--plot {path}: unknown image type {shown_repr(suffix)}; {did_you_mean(suffix, PLOT_TYPES)}"
                            f"use {', '.join('.' + t for t in PLOT_TYPES[:-1])} or .{PLOT_TYPES[-1]}")


@command("curve", twins=True)
@click.argument("trace", required=False, type=CheckedPath(dir_okay=False, allow_dash=True))
@click.option("--capacities", metavar="LIST",
              help="Comma-separated cache sizes in blocks (1000blocks,5000blocks) or, with --model, in bytes "
                   "(40GB,80GB); a plain number other than 0 is refused.")
@click.option("--points", type=Int(1, MAX_POINTS), default=None,
              help="Instead of --capacities: this many sizes spaced geometrically from the last size of the "
                   "curve's flat start (where LRU still hits what 1 block does) up to where LRU reaches the "
                   "ceiling. [default: 12]")
@click.option("--model", "--model-config", "model_name", cls=Aliased, metavar="NAME", default=None,
              help="Model preset (see `pcs models`) or a config.json path (also spelled --model-config): adds "
                   "capacity in bytes (blocks x reserved bytes per block).")
@click.option("--dtype", type=RegistryChoice(KV_DTYPES, get_layout), default=None,
              help="KV dtype for the bytes; needs --model.")
@click.option("--no-belady", is_flag=True, help="Skip the offline optimum (pure Python, ~1 M accesses/s per capacity; "
              "always skipped when sampling).")
@click.option("--sample-rate", type=Float(0, 1, min_open=True), default=1.0, show_default=True,
              help="SHARDS spatial sampling rate for huge traces (1 = exact).")
@click.option("--exact-head-blocks", type=Int(0, MAX_COUNT), default=1, show_default=True,
              help="With sampling: blocks seen this close to a request's head are kept exactly.")
@click.option("--seed", type=Int(0, MAX_SEED), default=0, show_default=True, help="Sampling hash seed.")
@click.option("--native", type=Choice(_native.MODES), default=None, help=_native.HELP)
@click.option("--kernel", type=Choice(_native.MODES), default=None, hidden=True,
              help="Deprecated alias of --native (its older name).")
@click.option("--plot", "plot_path", type=CheckedPath(), default=None,
              help="Also draw the curves to this image, its type by the suffix: "
                   f"{', '.join('.' + t for t in PLOT_TYPES)} (needs the plot extra: pip install -e '.[plot]'); "
                   "with --model a second axis gives the capacity in bytes. A path without a suffix is a folder "
                   "for every figure of the HTML page (<figure>.png, .svg).")
@click.option("--html", "html_path", type=CheckedPath(dir_okay=False), default=None,
              help="Also write a self-contained HTML report to FILE (pip install -e '.[report]').")
@trace_input_options
@format_option
@quiet_option
def curve(trace, capacities, points, model_name, dtype, no_belady, sample_rate, exact_head_blocks, seed, native,
          kernel, plot_path, html_path, trace_format, block_size, on_error, sort, fmt, quiet) -> None:
    """Hit ratio at every cache capacity: LRU, Belady and the ceiling.

    TRACE is a trace file (default: the bundled sample). Capacities are in
    blocks of the trace's block size; ratios are token-weighted hits over
    prompt tokens with vLLM's block rules (full blocks only, last prompt
    token recomputed). The LRU curve is exact for every capacity from one
    pass (stack depths; estimated with --sample-rate below 1); the knee is the smallest capacity reaching 50, 90
    and 99 % of the ceiling.

    \b
    Example:
      pcs curve trace.jsonl --capacities 1000blocks,5000blocks,20000blocks --model llama-3.1-8b
      pcs curve trace.jsonl --points 20 --format json --plot curve.png
      pcs curve trace.jsonl --model llama-3.1-8b --html curve.html
    """
    from pcs.curves.api import DEFAULT_POINTS, curve as compute_curve
    from pcs.outfile import check_outputs as check_files

    if capacities is not None and points is not None:
        raise PcsUsageError("give --capacities or --points, not both")
    figures = plot_path if plot_path and not Path(plot_path).suffix else None  # a folder of the page's figures
    plot_path = None if figures else plot_path
    if plot_path:
        _plot_format_ok(plot_path)
    inputs = {"TRACE": trace, "--model": model_name}
    check_files({"--plot": plot_path}, inputs)
    check_outputs(html_path, figures, inputs)
    spec = _curve_model(model_name, dtype, block_size, quiet)
    (flat, name), opened = _load(trace, (trace_format, block_size, on_error, sort), quiet)
    caps = None if capacities is None else _capacities(capacities, spec, flat.block_size)
    with Progress(quiet, desc="belady", unit=" capacities",
                  total=len(caps) if caps else (points or DEFAULT_POINTS)) as progress:
        result = compute_curve(flat, caps, points, spec, belady=not no_belady, sample_rate=sample_rate, seed=seed,
                               exact_head_blocks=exact_head_blocks, native=native, kernel=kernel, progress=progress)
    given = dtype and spec is not None     # dtype: the value type (fp4), layout: the layout's one name (nvfp4)
    payload = {**result.to_dict(), "trace": "-" if trace == "-" else name,
               "dtype": spec.kv_dtype if given else None, "layout": spec.kv_layout.name if given else None}
    with_trace_notes(payload, opened, fmt, quiet)
    notes = with_sampled_note(payload)      # a sampled curve's LRU values are estimates: JSON, HTML and table say so
    if notes:
        payload["notes"] = notes
    _warn_small_sample(payload, result, quiet)
    if plot_path:
        _plot(result, plot_path, spec.name if spec is not None else None, payload["trace"])
    if (html_path or figures) and result.lru is not None:     # the page's LRU line: the matplotlib figure's
        from pcs.report.htmlcurve import curve_line

        write_outputs(html_path, figures, [{**payload, "lru_dense": curve_line(result)}])
    else:
        write_outputs(html_path, figures, [payload])
    emit(payload, fmt, lambda: render_curve(payload))


def _warn_small_sample(payload: dict, result, quiet: bool) -> None:
    """A sampled curve whose sample is too small to trust (:func:`pcs.curves.api.small_sample_note`): the warning
    on stderr (``pcs: warning: ...``, in every format, none with ``-q``) and in the JSON's ``notes`` (the table
    prints them as ``note:`` lines)."""
    from pcs.curves.api import small_sample_note

    warning = small_sample_note(result.lru) if result.lru is not None else None
    if warning is None:
        return
    payload["notes"] = [*(payload.get("notes") or []), warning]
    if not quiet:
        click.echo(f"pcs: warning: {warning}", err=True)


def _curve_model(model_name: str | None, dtype: str | None, block_size: int | None, quiet: bool):
    """``--model`` (with ``--dtype``) as a model spec, or None; a hybrid model refused before the trace is read.

    Raises:
        PcsUsageError: ``--dtype`` without ``--model``; UserError: an unknown or hybrid model."""
    if dtype is not None and model_name is None:
        raise PcsUsageError("--dtype sets the KV dtype of --model's bytes; give --model too")
    if model_name is None:
        return None
    from pcs.cli.modelarg import load_model
    from pcs.curves.api import refuse_hybrid_model

    spec = load_model(model_name, None, quiet)
    spec = spec.with_dtype(dtype) if dtype else spec
    refuse_hybrid_model(spec, block_size or 512)      # before the trace is read (the rule needs no B)
    return spec


def _capacities(capacities: str, spec, block_size: int) -> list[int]:
    """``--capacities`` in blocks of ``block_size`` tokens; sizes in bytes need ``spec`` (a block's reserved
    bytes, :func:`pcs.model.block_bytes`).

    Raises:
        UserError: as :func:`parse_capacity_list`."""
    bb = None
    if spec is not None:
        from pcs.model import block_bytes

        bb = block_bytes(spec, block_size, "reserved").total_bytes
    return parse_capacity_list(capacities, "--capacities", bb)


def _load(trace, options: tuple, quiet: bool):
    """The trace's accesses (:func:`pcs.curves.api.load_accesses`, read with a progress bar over its
    requests) and the opened :class:`pcs.trace.Trace` (for its notes)."""
    from pcs.curves.api import load_accesses

    t = open_from_options(trace, *options)
    with Progress(quiet, desc="reading", total=t.estimated_requests) as progress:
        return load_accesses(counted(t, progress)), t
