"""``pcs footprint``: KV bytes per component in every accounting mode."""
from __future__ import annotations

import click

from pcs.cli.common import RegistryChoice, command, emit, format_option, quiet_option
from pcs.cli.params import MAX_BLOCK_SIZE, MAX_COUNT, MAX_TOKENS, MAX_TP, Int
from pcs.cli.modelarg import load_model, model_options
from pcs.cli.report import check_outputs, html_options, write_outputs
from pcs.errors import keyword_refusal
from pcs.model import KV_DTYPES, footprint as compute_footprint, get_layout
from pcs.model.footprint import hybrid_block_size
from pcs.report.footprint import footprint_payload, render_footprint


@command("footprint")
@model_options
@click.option("--tokens", type=Int(0, MAX_TOKENS), required=True, help="Tokens per sequence, T.")
@click.option("--dtype", type=RegistryChoice(KV_DTYPES, get_layout), default=None,
              help="KV cache layout, short or as vLLM names it (default: the model's, usually bf16; fp8 = vLLM's "
                   "per-tensor fp8, int8 = int8_per_token_head, fp4 = nvfp4).")
@click.option("--block-size", type=Int(1, MAX_BLOCK_SIZE), default=16, show_default=True,
              help="Tokens per KV block (page), B.")
@click.option("--sequences", type=Int(1, MAX_COUNT), default=1, show_default=True,
              help="Independent sequences of T tokens each (totals are multiplied; nothing shared).")
@click.option("--tp", type=Int(1, MAX_TP), default=1, show_default=True,
              help="Tensor-parallel ranks; bytes are reported per rank (a replay tier holds the whole group).")
@html_options
@format_option
@quiet_option
def footprint(model_name: str | None, model_config: str | None, tokens: int, dtype: str | None,
              block_size: int, sequences: int, tp: int, html_path: str | None, plot_dir: str | None, fmt: str,
              quiet: bool) -> None:
    """KV bytes per component and in total: per token, per block and for T tokens.

    \b
    Modes: Reference (payload), Serialized (payload + scales + padding),
    Reserved (whole blocks, window + 1 block, fixed state slots) and
    Prefix store (floor(T/B) full blocks kept as cache objects). Bytes are
    integers, per tensor-parallel rank; GB in tables is decimal (10^9 B).

    \b
    Example:
      pcs footprint --model llama-3.1-8b --tokens 32768 --dtype fp8
      pcs footprint --model-config ./config.json --tokens 4096 --format json
    """
    check_outputs(html_path, plot_dir, {"--model-config": model_config})
    spec = load_model(model_name, model_config, quiet)
    if tp > 1:
        with keyword_refusal("tp", tp):     # --tp 3: tensor-parallel size 3 does not divide ... (as pcs replay's)
            spec = spec.with_tp(tp)
    res = compute_footprint(spec, tokens, block_size=block_size, dtype=dtype, sequences=sequences)
    hybrid_block = hybrid_block_size(spec.with_dtype(dtype) if dtype else spec)
    payload = footprint_payload(res, spec, dtype)    # every note the text prints
    write_outputs(html_path, plot_dir, [payload])
    emit(payload, fmt, lambda: render_footprint(res, hybrid_block), rows_key="components")
