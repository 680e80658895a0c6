"""``pcs deploy``: a model on GPUs -- weights, the KV pool, GPU-tier blocks, the longest request, concurrency."""
from __future__ import annotations

import click

from pcs.cli.common import RegistryChoice, command, emit, format_option, quiet_option
from pcs.cli.modelarg import load_model, model_options
from pcs.cli.params import CheckedPath, MAX_BLOCK_SIZE, MAX_TOKENS, MAX_TP, Float, Int
from pcs.errors import UserError
from pcs.model import KV_DTYPES, get_layout

__all__ = ["deploy"]


@command("deploy")
@model_options
@click.option("--gpu", default="h100-sxm", show_default=True, help="GPU preset (pcs hardware).")
@click.option("--tp", type=Int(1, MAX_TP), default=8, show_default=True,
              help="Tensor-parallel size = GPUs holding the model.")
@click.option("--dtype", type=RegistryChoice(KV_DTYPES, get_layout), default=None,
              help="KV cache layout (default: the model's).")
@click.option("--block-size", type=Int(1, MAX_BLOCK_SIZE), default=16, show_default=True,
              help="Tokens per KV block (vLLM's default 16; Mooncake traces use 512).")
@click.option("--request-tokens", type=Int(1, MAX_TOKENS), default=8192, show_default=True,
              help="Tokens per request for the concurrency figure.")
@click.option("--gpu-memory-utilization", type=Float(0, 1, min_open=True), default=None,
              help="Share of HBM the engine may use (vLLM's gpu_memory_utilization; default 0.9).")
@click.option("--kv-reserve", default=None, help="Activation/runtime memory per GPU (default 5GB).")
@click.option("--hardware-file", type=CheckedPath(dir_okay=False), help="TOML/JSON overrides of GPU presets.")
@format_option
@quiet_option
def deploy(model_name: str | None, model_config: str | None, gpu: str, tp: int, dtype: str | None,
           block_size: int, request_tokens: int, gpu_memory_utilization: float | None, kv_reserve: str | None,
           hardware_file: str | None, fmt: str, quiet: bool) -> None:
    """How a model fills TP GPUs: weights, the KV pool, blocks, the longest request, concurrency.

    \b
    KV pool = GPUs x (HBM x 0.9 - weights / GPUs - reserve), as vLLM sizes it
    (gpu_worker.determine_available_memory); the same function sizes pcs
    replay's default GPU tier, so both agree. Exit 2 when the weights do not fit.
    Example:
      pcs deploy --model llama-3.1-70b --gpu h100-sxm --tp 8 --request-tokens 32768
      pcs deploy --model deepseek-v3 --gpu h200 --tp 8 --dtype fp8 --format json
    """
    from pcs.cli.presets import hardware_table
    from pcs.hardware import get_gpu
    from pcs.model.capacity import plan_deployment
    from pcs.model.deploy import size_deployment
    from pcs.report.deploy import render_deploy
    from pcs.cli.params import kv_reserve_option
    from pcs.units import parse_bytes

    spec = load_model(model_name, model_config, quiet)
    spec = (spec.with_dtype(dtype) if dtype else spec).with_tp(tp)
    table = hardware_table(hardware_file)
    reserve = None if kv_reserve is None else parse_bytes(kv_reserve_option(kv_reserve))
    dep = size_deployment(spec, get_gpu(gpu, table), tp, gpu_memory_utilization, reserve)
    try:
        dep.check_fits()
    except UserError as exc:     # pcs deploy has no tiers: the API's hint of a GPU tier size is a replay's
        raise UserError(str(exc).replace(", or give the GPU tier a size: tiers=['gpu=SIZE']", "")) from None
    payload = plan_deployment(spec, dep, block_size, request_tokens).to_dict()
    emit(payload, fmt, lambda: render_deploy(payload), rows_key=None)
