"""The arguments of :func:`pcs.replay` documented once, apart from the function.

``pcs.replay`` takes 29 keywords; their descriptions would make the function
longer than the house limit (functions under ~60 lines). :data:`ARGS` holds its
``Args:`` section (one entry per keyword, in signature order, Google style:
``name: text``, continuation lines indented 4 spaces) and :data:`RAISES` its
``Raises:``; :func:`document` appends both, with ``Returns:``, to the
function's docstring, so ``help(pcs.replay)`` shows them.
``tests/cli/test_public_api.py`` checks that the entries name exactly the
signature's keywords, in order.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["ARGS", "RAISES", "document"]

#: The ``Args:`` section of :func:`pcs.replay`.
ARGS = """\
trace: a path, a :class:`pcs.trace.Trace`, an iterable of Requests, or
    None for the bundled sample.
model: preset name or ModelSpec (default ``llama-2-70b``).
hardware: GPU preset name or GPUSpec (default ``h100-sxm``).
tp: tensor-parallel size (default 8); tiers are per TP group.
dtype: KV layout (``fp8``, ``fp8_per_token_head``, ``bf16`` ..., :mod:`pcs.model.layouts`),
    None = the model's.
tiers: tier specs, GPU first: a list or tuple of ``"NAME=SIZE"`` strings or
    TierSpec; one such string or TierSpec alone is one tier (default: the GPU tier
    sized from the deployment, :func:`pcs.model.deploy.size_deployment`, and ``cpu=2TB``).
policy: eviction policy of every tier (default ``lru``).
tier_policies: tier name (case-folded, as in ``tiers``) -> policy, overriding ``policy``.
links: tier name (case-folded) -> link preset name, bandwidth or LinkSpec.
protected_share: protected segment share of the ``slru`` tiers (alias ``protected``); an
    error when no tier uses ``slru``.
timing: ``modeled`` (default) or ``sequential``.
write_policy: ``back`` (default) or ``through``.
rules: block rules (full blocks only, last-token cap by default).
compute: object with ``prefill_s``/``decode_s_per_token`` replacing the
    analytic :class:`pcs.compute.ComputeModel`.
hardware_table: presets with overrides (:func:`pcs.hardware.load_hardware_file`).
progress: called with the number of requests replayed since its previous call (increments
    that sum to the requests of the run), at least once, after each chunk of requests an engine
    replays: every timing (sequential, modeled step or infinite) and twin (C or Python) alike;
    how many chunks depends on the engine (one for an engine that takes the whole trace).
    Not a callable: UserError before the run.
engine: ``auto`` (default): the first row of the engine-selection
    table (:mod:`pcs.engine.select`) that applies, for the run and for
    its sequential baseline; or a row by name: ``lru-scan``,
    ``compiled-step``, ``compiled-hierarchy``, ``reference`` (aliases ``fast`` =
    lru-scan, ``general`` = reference). Every engine gives the same
    numbers (docs/semantics.md §15); the summary's ``engine`` and
    ``engine_reason`` say which ran and why.
native: ``auto``, ``c`` or ``python``: the compiled twins or their
    Python references (:mod:`pcs._native`); None = ``$PCS_NATIVE`` or ``auto``.
gpu_memory_utilization: share of HBM for the engine when the GPU tier is
    sized from the deployment (default 0.9, vLLM's).
kv_reserve: activation/runtime reserve per GPU (bytes or a size like
    ``"8GB"``; default 5 GB, :data:`pcs.model.deploy.DEFAULT_RESERVE_BYTES_PER_GPU`).
admit: admission policies, ``TIER=KIND[:ARGS]`` strings (``cpu=reuse:2``,
    ``cpu=tinylfu``, ``gpu=retain:tokens=0-4096,duration=60``; :mod:`pcs.cache.admission`)
    or a mapping tier -> kinds; several for one tier must all admit.
gap_oracle: also replay the same tiers and timing with every policy the Belady
    oracle (no admission) and split the gap into capacity and policy
    (``oracle_hit_ratio``, ``gap.capacity``, ``gap.policy``; docs/semantics.md §12).
compute_mode: modeled timing's compute: ``step`` (the step
    scheduler, :mod:`pcs.engine.scheduler`) or ``infinite`` (every
    prefill and decode at full speed at once, the model before it);
    None = ``step``, or ``infinite`` (with a note) when ``compute``
    has no ``step_cost()``; a hybrid model runs either (the step
    scheduler over its cache groups: :mod:`pcs.engine.hybridstep`).
scheduler: the step scheduler's settings (:class:`pcs.engine.schedconfig.SchedulerConfig`;
    None = its defaults).
hybrid_kv_cache_manager: for a hybrid model (sliding window, chunked local attention or SSM
    state beside full attention): ``vllm`` (default: cache groups in one shared pool per tier,
    uniform page size), ``sglang`` (one pool per group) or ``disabled`` (every layer as full
    attention, as before); :mod:`pcs.engine.hybrid`, docs/hybrid.md. On a model without hybrid groups each
    is the same run (``vllm`` / ``sglang`` noted as having no effect).
swa_full_tokens_ratio: sglang: SWA pool tokens / full pool tokens (default 0.8).
mamba_full_memory_ratio: sglang: state pool bytes / full pool bytes (default 0.9).
mamba_cache_mode: ``all`` (default: a state at every checkpoint) or ``align`` (a request's last
    checkpoint only), vLLM's names.
residency_step_s: step of the replay-resident bytes series (simulated seconds, default 60); hybrid models only.
"""

#: The ``Raises:`` section of :func:`pcs.replay`.
RAISES = """\
UserError: (:class:`pcs.errors.UserError`, a ValueError; an unknown name as its
    :class:`pcs.errors.UnknownNameError`, bad trace content as :class:`pcs.errors.InputError`)
    unknown model, GPU, policy, link, timing, write policy,
    engine or native; malformed tier; a tier name given twice; an
    empty trace; a named engine that cannot run the replay; a default
    GPU tier when the weights do not fit the GPUs; an unknown compute
    mode; ``compute_mode="step"`` with a ``compute`` lacking ``step_cost()``;
    (:class:`pcs.errors.UserError`, naming the keyword, :mod:`pcs.argcheck`) a number that is
    not one (``tp=8.0``, ``protected_share=True``; numpy scalars are accepted) or is outside the
    command line's range, ``gap_oracle`` not a bool, ``tier_policies``/``links`` not a mapping;
    ``protected_share`` unlike an inline ``slru:protected_share=``; a hybrid option that cannot
    change the run (``mamba_cache_mode`` on a model without a state, ...).
    The checks that need no trace come first, in this order, the first failing one raised: the
    arguments' types, the numbers, timing / policy / write policy / tp / engine / native / compute
    mode, the tier list and its per-tier options, two protected shares, model / dtype / hardware
    (:func:`pcs.engine.api.check_replay` makes the same, as do fleet_replay and compare).
ArgumentTypeError: (a UserError and a TypeError) ``trace`` is not a path, Trace or iterable of request-like
    objects; ``tiers`` is a dict or another non-list, or holds an item
    that is neither str nor TierSpec.
"""


def _indent(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" if line else "\n" for line in text.splitlines())


def document(fn: Callable) -> Callable:
    """Append ``Args:`` (:data:`ARGS`), ``Returns:`` (a :class:`pcs.engine.api.ReplayResult`) and ``Raises:``
    (:data:`RAISES`) to ``fn.__doc__``, indented as a method-level docstring; returns ``fn`` itself."""
    head = (fn.__doc__ or "").rstrip() + "\n\n"
    fn.__doc__ = (head + "    Args:\n" + _indent(ARGS, 8) + "    Returns:\n        :class:`ReplayResult`.\n"
                  + "    Raises:\n" + _indent(RAISES, 8) + "    ")
    return fn
