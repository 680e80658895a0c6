"""``pcs envelope``: is restoring a cached prefix faster than recomputing it?"""
from __future__ import annotations

import math
from typing import Any

import click

from pcs.analysis.envelope import envelope as envelope_lib, restore_for_tokens, restored_tokens
from pcs.blocks import BlockRules
from pcs.cli.common import RegistryChoice, command, emit, format_option, quiet_option, typed_flag
from pcs.cli.params import CheckedPath, MAX_BLOCK_SIZE, MAX_TOKENS, MAX_TP, Aliased, Choice, Float, Int, option_bandwidth, option_duration, option_size
from pcs.cli.presets import gpu_options, hardware_file_option, hardware_table, refuse_unused, resolve_gpu
from pcs.errors import UserError, shown_name
from pcs.model import KV_DTYPES, get_layout
from pcs.report.envelope import envelope_notes, render_envelope
from pcs.units import format_bandwidth

__all__ = ["envelope"]


def _dtype(kw: dict[str, Any]) -> str | None:
    """``--dtype``, or its older spelling ``--kv-dtype`` (hidden; one spelling per thing across commands)."""
    old = kw.pop("kv_dtype")
    if old is not None and kw["dtype"] is not None:
        raise UserError("give --dtype once (--kv-dtype is its older name)")
    return kw["dtype"] if kw["dtype"] is not None else old


def _model(kw: dict[str, Any], quiet: bool) -> Any:
    """The ModelSpec from --model or --model-config (with --dtype), or None."""
    from pcs.cli.modelarg import load_model

    dtype = _dtype(kw)
    if kw["model"] is None and kw["model_config"] is None:
        if dtype is not None:
            raise UserError("--dtype needs --model or --model-config")
        return None
    model = load_model(kw["model"], kw["model_config"], quiet)
    return model.with_dtype(dtype) if dtype else model


def _default_gpu(kw: dict[str, Any], model: Any) -> None:
    """No --gpu: the GPU pcs replay assumes (its DEFAULTS), when a model needs one for the compute model."""
    if kw["gpu"] is None and model is not None and kw["prefill_csv"] is None:
        from pcs.engine.api import DEFAULTS

        kw["gpu"] = DEFAULTS["gpu"]


#: The options of the compute model (its GPU and how it runs), unused when it is not.
_COMPUTE_OPTIONS = ("gpu", "bf16_flops", "fp8_flops", "hbm_bandwidth", ("utilisation", "--mfu"))


def _refuse_unused(kw: dict[str, Any]) -> None:
    """Options envelope would read nowhere (:func:`pcs.cli.presets.refuse_unused`): ``--hbm-capacity`` always (the
    compute model reads the GPU's FLOP rates and HBM bandwidth, never its capacity), the compute model's options
    with ``--prefill-csv`` (the measured points replace it) or with both times given (nothing is computed)."""
    refuse_unused("envelope", kw, ["hbm_capacity"], "restore vs recompute reads the GPU's FLOP rates and HBM "
                  "bandwidth (the compute model), never its memory size")
    if kw["prefill_csv"] is not None:
        refuse_unused("envelope", kw, _COMPUTE_OPTIONS, "--prefill-csv gives the prefill times in place of the "
                      "compute model; give one or the other")
    if kw["full_prefill"] is not None and kw["remaining_compute"] is not None:
        refuse_unused("envelope", kw, _COMPUTE_OPTIONS + ("prefill_csv",), "--full-prefill and "
                      "--remaining-compute give both times, so no prefill time is computed")


def _prefill_source(kw: dict[str, Any], model: Any, gpu: Any, quiet: bool) -> tuple[Any, str] | None:
    """An object with prefill_s(n, c): measured points (the columns their CSV read past noted on stderr, unless
    ``quiet``), the compute model, or None."""
    if kw["prefill_csv"] is not None:
        from pcs.compute import MeasuredPrefill

        measured = MeasuredPrefill.from_csv(kw["prefill_csv"])
        for note in () if quiet else measured.notes:      # a column read past: said on stderr
            click.echo(f"pcs: note: {note}", err=True)
        return measured, f"measured points in {kw['prefill_csv']}"
    if model is not None and gpu is not None:
        from pcs.compute import DEFAULT_UTILISATION, ComputeModel

        util = DEFAULT_UTILISATION if kw["utilisation"] is None else kw["utilisation"]
        cm = ComputeModel(model, gpu, tp=kw["tp"], utilisation=util, dtype=kw["compute_dtype"])
        return cm, f"compute model: {shown_name(gpu.name)} x{kw['tp']}, {kw['compute_dtype']}, MFU {util:g}"
    return None


def _computed_s(source: tuple[Any, str], tokens: int, cached: int, what: str) -> float:
    """``source``'s prefill time of ``tokens`` after ``cached`` (seconds), refused when not finite (a GPU rate
    such as ``--bf16-flops 1e-300`` overflows it) with the source named, not numpy's overflow warning.

    Raises:
        UserError: the time is not a finite number of seconds.
    """
    import numpy as np

    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        seconds = float(source[0].prefill_s(tokens, cached))
    if not math.isfinite(seconds):
        raise UserError(f"{what} computed from the {source[1]} is {seconds} s, not a finite time: check the GPU's "
                         "rates (--bf16-flops ..., --hardware-file) and --mfu, or give it directly")
    return seconds


def _times(kw: dict[str, Any], source: tuple[Any, str] | None, split: dict[str, Any]) -> dict[str, Any]:
    """Resolve T_full and T_remaining (given, or from the prefill source) and say where each came from;
    ``split``: :func:`_split`'s tokens, copied into the result."""
    prompt_tokens, restore_tokens = split["prompt_tokens"], split["restore_tokens"]
    out: dict[str, Any] = dict(split)
    if kw["full_prefill"] is not None:
        out["full_prefill_s"], out["full_prefill_from"] = option_duration(kw["full_prefill"], "--full-prefill"), "given"
    elif source is not None and prompt_tokens is not None:
        out["full_prefill_s"] = _computed_s(source, prompt_tokens, 0, "T_full (--full-prefill)")
        out["full_prefill_from"] = source[1]
    else:
        raise UserError("give --full-prefill, or --tokens/--restore-tokens with --model and --gpu "
                         "(or --prefill-csv) to compute it")
    if kw["remaining_compute"] is not None:
        out["remaining_s"], out["remaining_from"] = option_duration(kw["remaining_compute"], "--remaining-compute"), "given"
    elif source is not None and prompt_tokens is not None and out["restored_tokens"] is not None:
        if restore_tokens is not None and prompt_tokens < restore_tokens:
            raise UserError(f"--tokens {prompt_tokens} is less than --restore-tokens {restore_tokens}")
        cached = out["restored_tokens"]    # the split D covers: whole blocks, the §4 cap (docs/semantics.md §2, §4)
        out["remaining_s"] = _computed_s(source, prompt_tokens - cached, cached, "T_remaining (--remaining-compute)")
        out["remaining_from"] = source[1]
    else:
        out["remaining_s"], out["remaining_from"] = 0.0, "default 0"
    return out


def _split(kw: dict[str, Any], model: Any) -> dict[str, Any]:
    """Where the prompt splits into restored and computed tokens (docs/semantics.md §2, §4).

    ``prompt_tokens``: ``--tokens`` (default ``--restore-tokens``). ``restore_tokens``: ``--restore-tokens`` as
    given, or None. ``hit_cap_tokens``: the most a prompt of ``prompt_tokens`` can hit,
    :meth:`pcs.blocks.BlockRules.best_hit_tokens` (((P - 1) // B) x B: its last token is recomputed), None
    without a prompt. ``restored_tokens``: the tokens D covers and T_remaining starts after -- ``--restore-tokens``
    (default: the whole prompt) in whole blocks (a hybrid model's hit as its cache groups accept it,
    :func:`pcs.analysis.envelope.restore_for_tokens`), never above ``hit_cap_tokens`` (an explicit
    ``--restore-tokens`` above it is capped, with a note); as given beside ``--restore-bytes`` (capped too).
    ``restore_bytes``: D per rank from those tokens, or None when ``--restore-bytes`` gives it or no model does.
    """
    asked, bs = kw["restore_tokens"], kw["block_size"]
    prompt = kw["prompt_tokens"] if kw["prompt_tokens"] is not None else asked
    cap = None if prompt is None else BlockRules().best_hit_tokens(prompt, bs)
    restore = asked if asked is not None else prompt        # default: the whole prompt, capped below
    out = {"prompt_tokens": prompt, "restore_tokens": asked, "hit_cap_tokens": cap, "restored_tokens": None,
           "restore_bytes": None}
    if restore is None:
        return out
    if kw["restore_bytes"] is not None:
        out["restored_tokens"] = restore if cap is None else min(restore, cap)
    elif model is not None:
        per_rank = model.with_tp(kw["tp"]) if kw["tp"] > 1 else model
        out["restored_tokens"], out["restore_bytes"] = restore_for_tokens(per_rank, restore, bs, prompt_tokens=prompt)
        if out["restored_tokens"] < restored_tokens(restore, bs, prompt):   # a hybrid hit ends at a checkpoint
            out["_checkpoint_tokens"] = _checkpoint_tokens(per_rank, bs)
    else:
        out["restored_tokens"] = restored_tokens(restore, bs, prompt)
    return out


def past_context(tokens: int | None, max_context: int | None) -> str | None:
    """:func:`pcs.model.footprint.past_context` (imported when called: the model package is lazy here)."""
    from pcs.model.footprint import past_context as note

    return note(tokens, max_context)


def _checkpoint_tokens(model: Any, block_size: int) -> int | None:
    """N, the tokens between a hybrid model's state checkpoints (docs/semantics.md §3.1: a state group's hit
    rounds down to the last checkpoint), or None without a state group."""
    from pcs.model.footprint import hybrid_pages

    plan = hybrid_pages(model, block_size)
    return next((g.span_tokens for g in plan.groups if g.rule == "state"), None) if plan is not None else None


def _restore_bytes(kw: dict[str, Any], from_tokens: int | None) -> int:
    """D: ``--restore-bytes``, else the bytes of the restored tokens (:func:`_split`)."""
    if kw["restore_bytes"] is not None:
        return option_size(kw["restore_bytes"], "--restore-bytes")
    if from_tokens is None:
        raise UserError("give --restore-bytes, or --restore-tokens (or --tokens) with --model (or --model-config)")
    return from_tokens


@command("envelope")
@click.option("--restore-bytes", help="D: bytes restored, e.g. 1GB (GB decimal, GiB binary).")
@click.option("--restore-tokens", type=Int(0, MAX_TOKENS),
              help="Cached tokens restored (default: the whole --tokens prompt); with --model gives D (serialized "
                   "blocks, rounded down to whole blocks: only full blocks are cached) and T_remaining the rest "
                   "of --tokens. Capped, with a note, at the prompt's hit cap ((T - 1) // block) x block: its "
                   "last token is recomputed, as in pcs replay.")
@click.option("--tokens", "--prompt-tokens", "prompt_tokens", cls=Aliased, type=Int(0, MAX_TOKENS),
              help="Prompt tokens T for the computed T_full (default: --restore-tokens); alone, D restores its "
                   "best case, ((T - 1) // block) x block tokens; as pcs footprint's --tokens (older name "
                   "--prompt-tokens).")
@click.option("--model", help="Model preset (list: pcs models) or a config.json path, for D and the compute model.")
@click.option("--model-config", type=CheckedPath(dir_okay=False), help="Local Hugging Face config.json instead of --model.")
@click.option("--dtype", type=RegistryChoice(KV_DTYPES, get_layout),
              help="KV cache layout for D, as in pcs replay and pcs footprint (default: the model's).")
@click.option("--kv-dtype", type=RegistryChoice(KV_DTYPES, get_layout), hidden=True, help="Older name of --dtype.")
@click.option("--block-size", type=Int(1, MAX_BLOCK_SIZE), default=16, show_default=True, help="Tokens per KV block.")
@click.option("--full-prefill", help="T_full: prefill time without cache, e.g. 100ms. Default: computed from --model/--gpu.")
@click.option("--remaining-compute", help="T_remaining: prefill still needed after the restore, e.g. 30ms. "
                                          "Default: computed when a model/GPU or --prefill-csv is given, else 0.")
@click.option("--overhead", "--setup", "overhead", cls=Aliased,
              help="T_overhead: setup + convert + sync per restore, e.g. 5ms (pcs replay's link setup is its "
                   "setup part; --setup is accepted). Default: --link's setup, else 0.")
@click.option("--bandwidth", "bandwidths", multiple=True,
              help="B_eff: effective restore bandwidth, e.g. 20GB/s, of one GPU's link when D comes from "
                   "--restore-tokens (D is then per GPU: pcs replay's link figures are tp links together). "
                   "Repeatable: a row each; one bandwidth given twice is refused.")
@click.option("--overlap", help="W: independent compute overlapping the load, e.g. 20ms; adds exposed_wait_s.")
@click.option("--link", help="Link preset of one GPU, as pcs replay and pcs budget take it (list: pcs hardware): "
                              "its bandwidth is a --bandwidth row and its setup the default --overhead.")
@gpu_options
@click.option("--tp", type=Int(1, MAX_TP), default=8, show_default=True,
              help="Tensor-parallel size: compute splits over tp GPUs; D becomes bytes per GPU.")
@click.option("--mfu", "--utilisation", "utilisation", cls=Aliased, type=Float(0, 1, min_open=True),
              help="Prefill model FLOPs utilisation (MFU) of the compute model (default 0.5, see pcs.compute); "
                   "not HBM use, which is --gpu-memory-utilization in replay/deploy (older name --utilisation).")
@click.option("--compute-dtype", type=Choice(["bf16", "fp16", "fp8"]), default="bf16", show_default=True,
              help="Precision of the prefill matmuls (selects the GPU's dense peak).")
@click.option("--prefill-csv", type=CheckedPath(dir_okay=False),
              help="CSV of measured prefill points (header tokens,seconds), interpolated; replaces the compute model.")
@hardware_file_option
@format_option
@quiet_option
def envelope(fmt: str, quiet: bool, **kw: Any) -> None:
    """Restore or recompute? Cached path D/B + T_remaining + T_overhead against T_full.

    Sizes in bytes with units (1GB decimal, 1GiB binary), bandwidths in bytes/s
    (20GB/s), times with units (100ms, 5us, 1.5s); a plain number other than 0
    is refused (100 could mean ms or s). With a model and
    no --gpu the compute model runs on pcs replay's default deployment (h100-sxm, --tp 8). Verdicts and the
    break-even bandwidth D / (T_full - T_remaining - T_overhead) are decided
    exactly (times in integer nanoseconds, then exact fractions; net saved has the
    verdict's sign): no break-even when that is <= 0.

    \b
    Examples:
      pcs envelope --restore-bytes 1GB --full-prefill 100ms --remaining-compute 30ms \\
                   --overhead 5ms --bandwidth 10GB/s --bandwidth 20GB/s
      pcs envelope --restore-tokens 8192 --tokens 8704 --model llama-3.1-70b \\
                   --gpu h100-sxm --tp 4 --overhead 1ms --bandwidth 50GB/s --overlap 2ms

    JSON keys: restore_bytes, full_prefill_s, remaining_s, overhead_s, overlap_s,
    margin_s, break_even_bps (null when none), full_prefill_from, remaining_from,
    prompt_tokens, restore_tokens (null when defaulted), hit_cap_tokens (((T - 1) // block) x block:
    the last token is recomputed), restored_tokens (restore_tokens in whole blocks when D
    comes from them, at most hit_cap_tokens; a hybrid model's hit as its cache groups accept it), tp (null when
    nothing read it), layout, restore_bytes_scope (per_rank | given),
    restore_bytes_all_ranks, break_even_bps_all_ranks (the TP group's, as pcs replay's
    links; null for given bytes), link, rows (bandwidth_bps, read_s, cached_s, saved_s
    (net), verdict faster|slower|equal, exposed_wait_s, break_even (true for the row at the
    break-even bandwidth); one per --bandwidth and --link, or
    without either one row at the break-even bandwidth, verdict equal: refused when there is
    no break-even or D is 0, saying why D is 0), notes (every note the text prints).
    """
    _refuse_unused(kw)
    table = hardware_table(kw.pop("hardware_file"))
    model = _model(kw, quiet)
    _default_gpu(kw, model)
    gpu = resolve_gpu(kw, table)
    split = _split(kw, model)
    checkpoint = split.pop("_checkpoint_tokens", None)   # why D's tokens stop short (text and notes only)
    times = _times(kw, _prefill_source(kw, model, gpu, quiet), split)
    d = _restore_bytes(kw, times.pop("restore_bytes"))
    kw["layout"] = None if model is None else model.kv_layout.name
    overlap = option_duration(kw["overlap"], "--overlap") if kw["overlap"] is not None else None
    link, bandwidths, overhead = _bandwidths(kw, table)
    result = envelope_lib(d, times["full_prefill_s"], times["remaining_s"], overhead, bandwidths, overlap_s=overlap)
    result = result if bandwidths else _break_even_row(result, {**times, "block_size": kw["block_size"]})
    payload = result.to_dict()
    for row in payload["rows"]:     # which row is pcs's own, at the break-even bandwidth (the text's "(break-even)")
        row["break_even"] = not bandwidths
    payload["link"] = None if link is None else link.name
    payload.update({k: v for k, v in times.items() if k not in ("full_prefill_s", "remaining_s")})
    scope = _scope(kw, result, times)
    payload.update(scope)
    why = {"block_size": kw["block_size"], "checkpoint_tokens": checkpoint,
           "past_context": None if model is None else past_context(times["prompt_tokens"], model.max_context_tokens)}
    why["break_even_row"] = not bandwidths
    payload["notes"] = envelope_notes(result, {**times, **scope, **why})   # as the text
    named = {} if link is None else {"link": link.name, "overhead_from": None if kw["overhead"] is not None
                                     else f"--link {link.name}'s setup"}
    emit(payload, fmt, lambda: render_envelope(result, {**times, **scope, **why, **named}))


def _once(bandwidths: list[float], given: list[str]) -> None:
    """Each ``--bandwidth`` once: a row per bandwidth, a repeat refused as ``--capacities`` and ``--policy`` refuse
    theirs (not a second row alike). ``given``: how each was given, in the order of ``bandwidths``. (A ``--link``
    row beside an equal ``--bandwidth`` stays: it is marked with the link's name and sets the overhead.)

    Raises:
        UserError: ``--bandwidth 10GB/s and --bandwidth 10000MB/s are the same bandwidth (10.00 GB/s); give each
            bandwidth once``.
    """
    first: dict[float, str] = {}
    for bps, how in zip(bandwidths, given):
        if bps in first:
            raise UserError(f"{first[bps]} and {how} are the same bandwidth ({format_bandwidth(bps)}); give each "
                            "bandwidth once")
        first[bps] = how


def _bandwidths(kw: dict[str, Any], table: Any) -> tuple[Any, list[float], float]:
    """(the --link preset or None, the bandwidths in bytes/s: each --bandwidth then the link's, T_overhead in s:
    --overhead, else the link's setup time, else 0).

    Raises:
        UserError: a bandwidth or duration that does not parse, an unknown link (naming the option); one bandwidth
            given twice (:func:`_once`)."""
    link = _link(kw, table)
    bandwidths = [option_bandwidth(b, "--bandwidth") for b in kw["bandwidths"]]
    _once(bandwidths, [f"--bandwidth {b}" for b in kw["bandwidths"]])
    bandwidths += [link.bandwidth_bps] if link is not None else []
    overhead = option_duration(kw["overhead"], typed_flag("--overhead", "--setup")) \
        if kw["overhead"] is not None else (link.setup_s if link is not None else 0.0)
    return link, bandwidths, overhead


def _why_no_bytes(tokens: dict[str, Any]) -> str:
    """Why D is 0 bytes when it comes from tokens (`` (the last-token cap: ((T - 1) // B) x B = ((16 - 1) // 16) x
    16 = 0 tokens restorable)``, as the cap note words it, docs/semantics.md §4; or fewer tokens than one whole
    block), else ``""`` (given bytes, or another cause the notes give)."""
    from pcs import units

    n = units.format_count
    kept, cap, prompt, asked, bs = (tokens.get(k) for k in ("restored_tokens", "hit_cap_tokens", "prompt_tokens",
                                                            "restore_tokens", "block_size"))
    if kept != 0 or prompt is None or bs is None:
        return ""
    if cap == 0 and (asked is None or asked > 0):
        return (f" (the last-token cap: ((T - 1) // B) x B = (({n(prompt)} - 1) // {n(bs)}) x {n(bs)} = 0 tokens "
                f"restorable of the {n(prompt)}-token prompt: its last token is recomputed)")
    if asked is not None and asked < bs:
        return f" (--restore-tokens {n(asked)} is less than one {n(bs)}-token block: only whole blocks are cached)"
    return ""


def _break_even_row(result: Any, tokens: dict[str, Any]) -> Any:
    """Without ``--bandwidth`` or ``--link``: ``result`` with its one row at the break-even bandwidth B* = D /
    (T_full - T_remaining - T_overhead), where the cached path takes T_full exactly (read D/B* = the margin, net
    saved 0, verdict ``equal``; the exposed wait max(0, margin - W) with ``--overlap``): the bandwidth a user
    asks for when naming none (docs/views.md). The row is set by that definition, not recomputed from the float
    B* (whose rounding would make the verdict ``faster`` or ``slower`` by a hair). ``tokens``: where D's tokens
    came from (``prompt_tokens``, ``restore_tokens``, ``hit_cap_tokens``, ``restored_tokens``, ``block_size``;
    the JSON's keys), for saying why D is 0 (:func:`_why_no_bytes`).

    Raises:
        UserError: no such row: no break-even (margin <= 0: the cached path is slower at every bandwidth, or
            as fast with no read) or no bytes to read (D = 0, and why: the read takes 0 s at every bandwidth); the
            message compares the two paths and names ``--bandwidth`` and ``--link``.
    """
    from dataclasses import replace

    from pcs import units
    from pcs.analysis.envelope import EnvelopeRow

    be, margin = result.break_even_bps, result.margin_s
    if be is None or result.restore_bytes == 0:
        d = units.format_duration
        cached, full = d(result.remaining_s + result.overhead_s), d(result.full_prefill_s)
        than = ("as fast as" if margin == 0 else "faster than" if margin > 0 else "slower than")
        why = (f"D is 0 bytes{_why_no_bytes(tokens)}, so the read takes 0 s at every bandwidth: the cached path, "
               f"T_remaining + T_overhead = {cached}, is {than} the full prefill ({full}) at every bandwidth (no "
               "break-even bandwidth)" if result.restore_bytes == 0
               else f"T_full - T_remaining - T_overhead = {d(margin)} <= 0, so no bandwidth "
                    "makes the cached path faster (no break-even)")
        raise UserError(f"no row without --bandwidth: {why}; give --bandwidth (e.g. 20GB/s) or --link for the "
                        "cached path at that bandwidth")
    exposed = None if result.overlap_s is None else max(0.0, margin - result.overlap_s)
    row = EnvelopeRow(be, margin, result.full_prefill_s, 0.0, "equal", exposed)
    return replace(result, rows=(row,))


def _link(kw: dict[str, Any], table: Any) -> Any:
    """``--link NAME`` (:func:`pcs.cli.presets.resolve_link`, as pcs budget), or None; one GPU's link, as D is."""
    from pcs.cli.presets import resolve_link

    return resolve_link({"link": kw.pop("link")}, table)


def _scope(kw: dict[str, Any], result: Any, times: dict[str, Any]) -> dict[str, Any]:
    """What D and B cover: from ``--restore-tokens`` D is one GPU's share (one TP rank's: ``per_rank``), read over
    that GPU's own link (each rank moves its share at once, pcs.engine.api: a TP group's link is tp links side by side),
    so B is per GPU link; ``pcs replay``'s link figures are the TP group's (tp x). ``*_all_ranks`` give the group's
    figures to set beside them (null when D was given in bytes: its scope is the user's; ``tp`` too unless the compute
    model, which reads it, gave a time). ``layout``: the KV layout D is in (the one that runs), null for given bytes."""
    tp = kw["tp"]
    if kw["restore_bytes"] is not None:     # tp is read only by the compute model then (null when it did not run)
        computed = any(str(times[k]).startswith("compute model") for k in ("full_prefill_from", "remaining_from"))
        return {"tp": tp if computed else None, "layout": None, "restore_bytes_scope": "given",
                "restore_bytes_all_ranks": None, "break_even_bps_all_ranks": None}
    be = result.break_even_bps
    return {"tp": tp, "layout": kw["layout"], "restore_bytes_scope": "per_rank",
            "restore_bytes_all_ranks": result.restore_bytes * tp,
            "break_even_bps_all_ranks": None if be is None else be * tp}


# --hbm-capacity comes with the GPU options but envelope never reads it (_refuse_unused says so when given):
# not in --help
next(p for p in envelope.params if p.name == "hbm_capacity").hidden = True
