"""The step scheduler's settings and their defaults (``--compute step``, ``docs/semantics.md §9``).

Defaults and where they come from:

- ``max_num_batched_tokens`` (the token budget of one step) and
  ``max_num_seqs`` (running requests at most): vLLM's
  ``EngineArgs.get_batch_defaults`` for its OpenAI server: 8192 and 1024 on
  GPUs with at least 70 GiB that are not an A100 (H100, H200, MI300X), else
  2048 and 256 (:func:`vllm_batch_defaults`). vLLM requires
  ``max_num_batched_tokens >= max_num_seqs`` (``SchedulerConfig``), so every
  running request gets its decode token in every step.
- ``restore_policy`` ``layerwise``: :mod:`pcs.engine.restores`.
- ``restore_timeout_s`` 0 and ``restore_timeout_per_token_s`` None = the
  step's matmul time per token (``StepCost.token_s``): ``best-effort`` waits
  at most about as long as recomputing the restored tokens would take.
- ``restore_fallback`` on: a restore the envelope says loses is recomputed.
- ``cache_decode_blocks`` None = on when the trace's next turns contain the
  previous turns (:attr:`pcs.engine.turns.DecodeBlocks.detected`).
- ``max_preemptions`` 8: vLLM has no bound; ours makes every request finish:
  a request preempted this many times is re-admitted holding every block it
  will need, so it is never preempted again.
- ``ttft_slo_s`` None: no goodput figure.
- ``cache_blocks_at`` ``prefill-done``: when a request's computed prompt
  blocks become hittable by other requests (:data:`CACHE_BLOCKS_AT`,
  ``docs/semantics.md §9``). The default keeps pcs's rule (all at once, in
  the step that runs the last prefill chunk); it departs from vLLM v1, whose
  rule is ``scheduled``.
"""
from __future__ import annotations

import dataclasses
import math

from pcs.argcheck import MAX_COUNT, MAX_TOKENS, check_flag, check_int
from pcs.engine.restores import RESTORE_POLICIES
from pcs.errors import UnknownNameError, UserError, shown_repr
from pcs._dataclass import dataclass

__all__ = ["SchedulerConfig", "COMPUTE_MODES", "CACHE_BLOCKS_AT", "vllm_batch_defaults", "DEFAULT_MAX_PREEMPTIONS"]

#: ``--compute``: ``step`` (the step scheduler, default) or ``infinite`` (every prefill and decode at full speed
#: at once: the model before the scheduler).
COMPUTE_MODES = ("step", "infinite")
DEFAULT_MAX_PREEMPTIONS = 8
#: ``--cache-blocks-at``: when the full blocks a request computes become hittable (docs/semantics.md §9), as
#: each engine's code does it:
#: ``prefill-done`` (default, pcs's rule before the option): all of them at the end of the step running the last
#: prefill chunk -- TensorRT-LLM's ``storeContextBlocks`` after the last context chunk
#: (``cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp``);
#: ``scheduled``: the full blocks of each chunk when the step that computes it is composed, before later requests
#: of the same step are looked up -- vLLM v1 ``KVCacheManager.allocate_slots`` ->
#: ``coordinator.cache_blocks(request, num_tokens_to_cache)`` (``vllm/v1/core/kv_cache_manager.py``);
#: ``chunk-done``: the full blocks computed so far at the end of each step that ran a chunk -- SGLang
#: ``tree_cache.cache_unfinished_req(chunked_req)`` before the next batch (``python/sglang/srt/managers/scheduler.py``).
CACHE_BLOCKS_AT = ("prefill-done", "scheduled", "chunk-done")
_GIB = 1 << 30


def vllm_batch_defaults(gpu) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM's OpenAI server uses on ``gpu`` (a GPUSpec).

    vLLM ``EngineArgs.get_batch_defaults``: device memory >= 70 GiB and not an
    A100 -> (8192, 1024); otherwise (2048, 256).
    """
    big = gpu.hbm_bytes >= 70 * _GIB and "a100" not in gpu.name.lower()
    return (8192, 1024) if big else (2048, 256)



def _seconds(value, what: str, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise UserError(f"{what} must be a finite number of seconds >= 0, got {shown_repr(value)}")
    return float(value)


#: (field, lowest, highest) of the integer settings: the CLI's ranges.
_INT_FIELDS = (("max_num_batched_tokens", 1, MAX_TOKENS), ("max_num_seqs", 1, MAX_COUNT),
               ("max_preemptions", 0, MAX_COUNT))


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Settings of the step scheduler (defaults and sources in the module docstring).

    Attributes:
        max_num_batched_tokens: tokens one step may compute (decode tokens
            included); None = :func:`vllm_batch_defaults`.
        max_num_seqs: running requests at most; None = :func:`vllm_batch_defaults`.
        restore_policy: one of :data:`pcs.engine.restores.RESTORE_POLICIES`.
        restore_timeout_s: ``best-effort``: fixed part of the wait, seconds.
        restore_timeout_per_token_s: ``best-effort``: seconds per restored
            token; None = ``StepCost.token_s``.
        restore_fallback: recompute instead of a restore that would lose.
        cache_decode_blocks: cache output blocks under the next turn's ids;
            None = detect (:mod:`pcs.engine.turns`).
        max_preemptions: preemptions after which a request holds all its blocks.
        ttft_slo_s: TTFT target for the goodput figures, seconds; None = none.
        cache_blocks_at: when computed blocks become hittable, one of :data:`CACHE_BLOCKS_AT`.
    Raises:
        UserError: a value out of range (the message names it): the integers in the CLI's ranges
            (1..10^9 tokens, 1..10^9 sequences, 0..10^9 preemptions), the flags True or False.
    """

    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    restore_policy: str = RESTORE_POLICIES[0]
    restore_timeout_s: float = 0.0
    restore_timeout_per_token_s: float | None = None
    restore_fallback: bool = True
    cache_decode_blocks: bool | None = None
    max_preemptions: int = DEFAULT_MAX_PREEMPTIONS
    ttft_slo_s: float | None = None
    cache_blocks_at: str = CACHE_BLOCKS_AT[0]

    def __post_init__(self) -> None:
        # the CLI's ranges (pcs/cli/replay.py: --max-num-batched-tokens 1..MAX_TOKENS, --max-num-seqs 1..MAX_COUNT,
        # --max-preemptions 0..MAX_COUNT); numpy ints are stored as ints; the flags are bools (check_flag)
        for name, lo, hi in _INT_FIELDS:
            if getattr(self, name) is not None:
                object.__setattr__(self, name, check_int(getattr(self, name), name, lo, hi))
        object.__setattr__(self, "restore_fallback", check_flag(self.restore_fallback, "restore_fallback"))
        if self.cache_decode_blocks is not None:
            object.__setattr__(self, "cache_decode_blocks", check_flag(self.cache_decode_blocks, "cache_decode_blocks"))
        if self.restore_policy not in RESTORE_POLICIES:
            raise UnknownNameError("restore policy", self.restore_policy, RESTORE_POLICIES)
        if self.cache_blocks_at not in CACHE_BLOCKS_AT:
            raise UnknownNameError("cache_blocks_at", self.cache_blocks_at, CACHE_BLOCKS_AT)
        _seconds(self.restore_timeout_s, "restore_timeout_s")
        _seconds(self.restore_timeout_per_token_s, "restore_timeout_per_token_s", allow_none=True)
        if self.max_preemptions is None:
            raise UserError("max_preemptions must be an integer, got None")
        if self.ttft_slo_s is not None and not (_seconds(self.ttft_slo_s, "ttft_slo_s") > 0):
            raise UserError(f"ttft_slo_s must be > 0, got {shown_repr(self.ttft_slo_s)}")
        if self.max_num_batched_tokens is not None and self.max_num_seqs is not None \
                and self.max_num_batched_tokens < self.max_num_seqs:
            raise UserError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= max_num_seqs "
                             f"({self.max_num_seqs}), as vLLM requires")

    def resolved(self, gpu, token_s: float, decode_detected: bool) -> "SchedulerConfig":
        """Every None filled in: batch limits from ``gpu``, the per-token timeout from ``token_s``, decode
        blocks from the trace's detection.

        Raises:
            UserError: only one of the batch limits given and the other default smaller than it; a
                ``token_s`` (the GPU's time per token, the timeout's default) not finite or < 0 while the
                timeout is not given: the message names the GPU's rates, not the option the user did not give.
        """
        if self.restore_timeout_per_token_s is None and not (math.isfinite(token_s) and token_s >= 0):
            raise UserError(f"the GPU's time per token is {shown_repr(token_s)} s (the default of "
                             "restore_timeout_per_token_s): the GPU's rates (bf16_flops, hbm_bps in the hardware "
                             "file) are too small for the model")
        tokens, seqs = vllm_batch_defaults(gpu)
        b = self.max_num_batched_tokens if self.max_num_batched_tokens is not None else tokens
        s = self.max_num_seqs if self.max_num_seqs is not None else min(seqs, b)
        return dataclasses.replace(
            self, max_num_batched_tokens=b, max_num_seqs=s,
            restore_timeout_per_token_s=(token_s if self.restore_timeout_per_token_s is None
                                         else self.restore_timeout_per_token_s),
            cache_decode_blocks=decode_detected if self.cache_decode_blocks is None else self.cache_decode_blocks)
