"""The deployment: how much HBM a model on a GPU and TP size leaves for the KV pool (the GPU tier).

One function, :func:`size_deployment`, sizes the GPU tier for both ``pcs replay``
(its default GPU tier) and ``pcs deploy``. It follows vLLM's
``Worker.determine_available_memory`` (``vllm/v1/worker/gpu_worker.py``):
KV memory = total GPU memory x ``gpu_memory_utilization`` - the memory the
profile run peaks at without KV (weights + activations + non-torch memory),
per GPU; the group's pool is that x the GPUs (docs/semantics.md §13):

    kv per GPU = floor(HBM x utilisation) - ceil(weights / tp) - reserve
    GPU tier   = kv per GPU x tp

- utilisation: vLLM ``CacheConfig.gpu_memory_utilization``, default 0.9;
- weights: total parameters x bytes per weight (FP8 checkpoints 1 B, MXFP4
  ~0.56 B), split evenly over the TP ranks (an approximation: vLLM replicates
  norms and some small projections);
- reserve: :data:`DEFAULT_RESERVE_BYTES_PER_GPU`, overridable.
"""
from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal
from typing import Any

from pcs.argcheck import MAX_TP, check_int, check_real
from pcs.errors import UserError
from pcs.model.spec import ModelSpec
from pcs._dataclass import dataclass

__all__ = ["Deployment", "size_deployment", "DEFAULT_GPU_MEMORY_UTILIZATION", "DEFAULT_RESERVE_BYTES_PER_GPU",
           "RESERVE_SOURCE"]

#: vLLM ``CacheConfig.gpu_memory_utilization`` default (``vllm/config/cache.py``).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
#: Activation and runtime memory per GPU besides weights and KV, bytes.
DEFAULT_RESERVE_BYTES_PER_GPU = 5 * 10**9
RESERVE_SOURCE = ("5 GB per GPU: vLLM's profiled non-KV, non-weight memory for Llama-3-8B on H100 at TP 2 is "
                  "PyTorch activation peak 1.26 GiB + non-torch memory (CUDA context, NCCL buffers) 3.58 GiB "
                  "= 4.84 GiB = 5.2 GB (vLLM PR #10511 memory-profiling log; 1.26 + 1.79 GiB at TP 1); "
                  "CUDA graphs add a little more. Override with --kv-reserve")


def _gb(n: float) -> str:
    return f"{n / 1e9:,.2f} GB"


@dataclass(frozen=True, slots=True)
class Deployment:
    """HBM of a TP group split into weights, reserve and KV pool (bytes; per GPU unless named).

    Attributes:
        model, gpu: names.
        tp: GPUs in the group.
        hbm_bytes: HBM of one GPU (the preset's datasheet figure).
        gpu_memory_utilization: share of HBM the engine may use.
        usable_bytes: floor(hbm_bytes x utilisation).
        weights_bytes: all weights of the model (total params x bytes per weight).
        weights_bytes_per_gpu: ceil(weights_bytes / tp).
        reserve_bytes: activation/runtime reserve per GPU.
        kv_bytes_per_gpu: usable - weights per GPU - reserve (<= 0: does not fit).
        kv_bytes: the GPU tier of the group, kv_bytes_per_gpu x tp (0 when it does not fit).
        reserve_source: where the reserve comes from (:data:`RESERVE_SOURCE` by default; the value given and
            ``--kv-reserve`` when given).
    """

    model: str
    gpu: str
    tp: int
    hbm_bytes: int
    gpu_memory_utilization: float
    usable_bytes: int
    weights_bytes: int
    weights_bytes_per_gpu: int
    reserve_bytes: int
    kv_bytes_per_gpu: int
    kv_bytes: int
    reserve_source: str = RESERVE_SOURCE

    @property
    def fits(self) -> bool:
        """True when weights and reserve leave room for KV."""
        return self.kv_bytes_per_gpu > 0

    def derivation(self) -> str:
        """One line: how the GPU tier follows from HBM, utilisation, weights and reserve."""
        from pcs.errors import shown_name   # a config's long name cut in the text (the model key keeps it whole)

        t = self.tp
        return (f"gpu tier {_gb(self.kv_bytes)} = {t} x ({_gb(self.hbm_bytes)} HBM x {self.gpu_memory_utilization:g}"
                f" - {_gb(self.weights_bytes_per_gpu)} weights - {_gb(self.reserve_bytes)} reserve) per GPU"
                f" ({shown_name(self.model)}: {_gb(self.weights_bytes)} of weights over {t} x {shown_name(self.gpu)})")

    def check_fits(self) -> None:
        """Raise when the weights and reserve leave no KV memory.

        Raises:
            UserError: one line naming the model, the GPUs, the weights and the HBM.
        """
        if not self.fits:
            raise UserError(
                f"{self.model} does not fit on {self.tp} x {self.gpu}: weights {_gb(self.weights_bytes)} "
                f"({_gb(self.weights_bytes_per_gpu)} per GPU) + {_gb(self.reserve_bytes)} reserve per GPU "
                f">= {_gb(self.hbm_bytes)} HBM x {self.gpu_memory_utilization:g} = {_gb(self.usable_bytes)} per GPU;"
                " use more or larger GPUs (tp=, hardware=), or give the GPU tier a size: tiers=['gpu=SIZE']")

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``deployment`` in ``pcs replay`` and ``pcs deploy``)."""
        return {"model": self.model, "gpu": self.gpu, "tp": self.tp, "hbm_bytes_per_gpu": self.hbm_bytes,
                "gpu_memory_utilization": self.gpu_memory_utilization, "usable_bytes_per_gpu": self.usable_bytes,
                "weights_bytes": self.weights_bytes, "weights_bytes_per_gpu": self.weights_bytes_per_gpu,
                "reserve_bytes_per_gpu": self.reserve_bytes, "kv_bytes_per_gpu": self.kv_bytes_per_gpu,
                "gpu_tier_bytes": self.kv_bytes, "fits": self.fits, "derivation": self.derivation(),
                "reserve_source": self.reserve_source}


def size_deployment(spec: ModelSpec, gpu: Any, tp: int, gpu_memory_utilization: float | None = None,
                    reserve_bytes: int | None = None) -> Deployment:
    """Split ``tp`` GPUs' HBM into weights, reserve and the KV pool (formula in the module docstring).

    Args:
        spec: the model (its ``total_params`` and ``weight_dtype_bytes``).
        gpu: a :class:`pcs.hardware.GPUSpec` (``name``, ``hbm_bytes``).
        tp: GPUs in the tensor-parallel group, an integer in [1, 1024] (``--tp``'s range, pcs.argcheck.MAX_TP).
        gpu_memory_utilization: a real number in (0, 1]; None = 0.9 (vLLM's default).
        reserve_bytes: per GPU, an integer >= 0; None = :data:`DEFAULT_RESERVE_BYTES_PER_GPU`.
    Returns:
        :class:`Deployment` (``fits`` False when nothing is left; see ``check_fits``).
    Raises:
        UserError (a ValueError): no parameter count; an argument of the wrong type or out of range, the message
            naming the parameter as every API function's does (:mod:`pcs.argcheck`, docs/semantics.md §16).

    >>> from pcs.hardware import get_gpu
    >>> from pcs.model import get_model
    >>> size_deployment(get_model("llama-2-70b"), get_gpu("h100-sxm"), 8).kv_bytes  # 8 x (72 - 17.24 - 5) GB
    398046703616
    """
    if spec.total_params <= 0:
        raise UserError(f"{spec.name}: the weights are unknown (no parameter count), so the GPU tier cannot be "
                         "sized from the deployment (give the GPU tier a size: tiers=['gpu=SIZE'])")
    tp = check_int(tp, "tp", lo=1, hi=MAX_TP)
    util = (DEFAULT_GPU_MEMORY_UTILIZATION if gpu_memory_utilization is None else
            check_real(gpu_memory_utilization, "gpu_memory_utilization", lo=0, lo_open=True, hi=1))
    reserve = (DEFAULT_RESERVE_BYTES_PER_GPU if reserve_bytes is None else
               check_int(reserve_bytes, "reserve_bytes", lo=0))
    usable = int((Decimal(gpu.hbm_bytes) * Decimal(str(util))).to_integral_value(ROUND_FLOOR))
    weights = int(round(spec.total_params * spec.weight_dtype_bytes))
    per_gpu = -(-weights // tp)
    kv = usable - per_gpu - reserve
    source = RESERVE_SOURCE if reserve_bytes is None else f"{_gb(reserve)} per GPU (--kv-reserve)"
    return Deployment(spec.name, gpu.name, tp, gpu.hbm_bytes, util, usable, weights, per_gpu, reserve, kv,
                      kv * tp if kv > 0 else 0, source)
