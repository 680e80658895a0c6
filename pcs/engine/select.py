"""The engine-selection table: the one place that decides how a replay runs.

Six engines give the same replay (``docs/semantics.md §15``); each row of
:data:`ENGINES` names one, the conditions under which it applies, the code
that runs it and the test that proves it equals the reference:

====================== ========================================== ==========================================
engine                 applies when                               implementation
====================== ========================================== ==========================================
``lru-scan``           sequential timing, ONE tier, policy        :func:`pcs.engine.fastpath.run` (one
                       ``lru`` (and, found while scanning,        O(1)-per-access LRU scan, C or Python
                       chained block hashes); also a modeled      kernel per ``native``; two tiers:
                       run's sequential baseline on TWO ``lru``   pcs/engine/_lruscan_tiers.h, C only)
                       tiers, write-back, ``auto``, C built
                       (set by the runner, below)
``compiled-step``      modeled timing with the step scheduler,    :class:`pcs.engine.stepnative.NativeStepEngine`
                       restore policy ``layerwise``, plain        (the step scheduler's loop in C) over
                       prefill attention, links ``LinkSpec``, and :class:`pcs.cache.native.NativeHierarchy`
                       everything ``compiled-hierarchy`` needs;
                       at most 8 tiers (the C loop's size,
                       stepnative.tiers_unsupported);
                       ``native`` not ``python``; blocks cached
                       at prefill done (``--cache-blocks-at``:
                       the other values run on ``reference``;
                       the hybrid rows refuse them)
``compiled-hierarchy`` every tier's policy registered: compiled  :class:`pcs.cache.native.NativeHierarchy`
                       (``lru``, ``fifo``, ``slru``, ``sieve``,   under the event loop (a sequential
                       ``2q``, ``s3fifo``, ``arc``, ``lfu``,      baseline: its C loop, pcs.engine.seqbase);
                       ``gdsf``, ``belady``) or hosted (any other a Python policy hosted by
                       -- a plug-in: pcs/cache/_pol_py.c calls    pcs/cache/_pol_py.c (equality test:
                       its batched methods); its admission        tests/cache/test_native_hosted.py)
                       policies compiled (``reuse``,
                       ``selective``, ``tinylfu``; one ``retain``
                       per tier, before a compiled one), at
                       most 64 tiers of at most 2**30 blocks
                       each (native.size_unsupported), the
                       compiled twin built, ``native`` not
                       ``python``
``reference``          one cache group of full attention (every   :class:`pcs.cache.Hierarchy` under the
                       model that is not hybrid)                  event loop
``compiled-hybrid``    one shared pool per tier (vLLM's hybrid    ``nativegroups.NativeGroupHierarchy``
                       KV cache manager, the default), every      (cache groups in C) under the event loop
                       tier's policy ``lru`` (no admission        or the step scheduler
                       policy), at most 8 tiers, 8 cache groups,  (:mod:`pcs.engine.hybridstep`)
                       a group block of at most 4096 pages, each  (a sequential baseline: its C loop,
                       tier's pages x the most pages of a group   pcs.engine.seqbase)
                       block rounded up to a power of two at
                       most 2**30 (nativegroups.size_unsupported,
                       which its set-up reads too), the compiled
                       twin built, ``native`` not ``python``
``hybrid``             no admission policy but ``retain``, which  :class:`pcs.cache.grouphier.GroupHierarchy`
                       runs on a one-full-group model only (a     (cache groups over pools of pages) under
                       hybrid model's admission is refused        the event loop
                       first, pcs.engine.api); the only row for
                       a hybrid model on split pools (``sglang``)
                       or other policies
====================== ========================================== ==========================================

Each compiled row's fixed sizes are stated once, by its compiled twin's module
(:func:`pcs.cache.native.size_unsupported`, :func:`pcs.engine.stepnative.tiers_unsupported`,
:func:`pcs.cache.nativegroups.size_unsupported`), and read both here and by the twin's set-up, so ``auto``
never picks a row that then refuses the run; a row named by request that cannot run is refused with that reason.

The first three rows need one full-attention cache group (a model whose
components all take the full rule, ``docs/semantics.md §3.1``); a hybrid
model (more than one cache group, or a window, chunk or state group) runs on
``compiled-hybrid`` when it applies, else on ``hybrid``, the Python reference
of its rules.

:func:`choose` takes the first row that applies (``requested="auto"``) or
the named row (an error when it does not apply). ``pcs.replay`` chooses
through it twice: for the run and for the sequential baseline of the gap
split (the same tiers in sequential timing). The one premise no row can
check before reading the trace -- chained ids for ``lru-scan`` -- is checked
by the scan itself; when it fails :func:`fall_back` gives the next row and
the reason says why. The summary JSON records the choices (``engine``,
``engine_reason``, ``baseline_engine``, ``baseline_engine_reason``).

The rules for the sequential baseline live here too: :func:`baseline_request`
(``compiled-step`` asked for by name runs its baseline on
``compiled-hierarchy``) and :func:`baseline_in_scan` (``auto`` moves a
baseline on two ``lru`` write-back tiers to ``lru-scan``, the one-pass scan).
A baseline left on ``compiled-hierarchy`` over two fifo / slru tiers that share
one table runs as a lean walk of the same rules (``pcs/engine/_seqpol.c``,
:func:`pcs.engine.seqbase.policy_walk`: the same hit blocks,
``tests/engine/test_seqpol.py``); the row's name stays.
What only set-up can see is checked by the runner (:mod:`pcs.engine.runner`)
and decided here, each written into the reason: ``_native_step_or_fallback``
asks :func:`pcs.engine.stepnative.unsupported` whether the C step loop takes
the links and tiers and, if not, takes :func:`fall_back`'s row ("found at
set-up"); ``_hybrid_step_loop`` asks
:func:`pcs.engine.hybridnative.hybrid_unsupported` whether a
``compiled-hybrid`` run's step loop runs in C or in Python (the same row,
recorded in ``_Plan.step_loop``; the no-cache twin runs the same loop).
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Sequence

from pcs import _native
from pcs.errors import UnknownNameError, UserError, shown_repr
from pcs._dataclass import dataclass

__all__ = ["EngineRow", "RunConfig", "ENGINES", "ENGINE_NAMES", "ALIASES", "REQUESTS", "SUMMARY_KEYS", "HYBRID_ROWS",
           "ENGINE_KEYS", "MAX_COMPILED_BLOCKS", "choose", "fall_back", "get_row", "canonical", "baseline_request",
           "baseline_in_scan", "baseline_scan_refusal", "baseline_reason", "TWO_TIER_SCAN", "PYTHON_KERNEL",
           "engine_label"]

@dataclass(frozen=True, slots=True)
class RunConfig:
    """What the choice depends on, for one run (or one sequential baseline).

    Attributes:
        timing: ``"sequential"`` or ``"modeled"``.
        tiers: ``(name, policy name, capacity_blocks)`` per tier, GPU first.
        native: ``auto``, ``c`` or ``python`` (:data:`pcs._native.MODES`;
            None = ``$PCS_NATIVE`` or ``auto``).
        groups: the cache groups' names (:mod:`pcs.engine.hybrid`); one name of the full rule for a
            model that is not hybrid.
        hybrid: the model is hybrid (more than one group, or one that is not full attention).
        scheduler: the step scheduler's restore policy when the run uses it (modeled timing, ``--compute
            step``), with ``+chunk-attention`` when the model's prefill attention is neither per pair nor
            terms the C loop sums (:func:`pcs.engine.chunkattn.chunk_terms`); else None.
        pools: a hybrid model's pools per tier (1: one shared pool, vLLM; one per group: SGLang).
        group_pages: pages one block of each cache group takes (:attr:`pcs.cache.groups.CacheGroup.pages`; the
            compiled hybrid hierarchy's fixed sizes read it, :func:`pcs.cache.nativegroups.size_unsupported`);
            empty: one page each (a model that is not hybrid).
        shared: a fleet's instances over one shared tier (``--shared-tier``): they run on one clock over
            Python hierarchies (docs/semantics.md §17.1), which only ``reference`` is.
    """

    timing: str
    tiers: tuple[tuple[str, str, int], ...]
    native: str | None = None
    groups: tuple[str, ...] = ("full_attention",)
    hybrid: bool = False
    scheduler: str | None = None
    pools: int = 1
    shared: bool = False
    group_pages: tuple[int, ...] = ()

    @classmethod
    def of(cls, tiers: Sequence[Any], timing: str, native: str | None = None,
           groups: Sequence[Any] | None = None, scheduler: str | None = None, pools: int = 1) -> "RunConfig":
        """From :class:`pcs.cache.Tier` objects (their name, policy name -- with ``+`` and its admission
        policies, if any -- and capacity); ``groups``: a hybrid model's :class:`pcs.cache.groups.CacheGroup`
        objects (their names and pages are read; None: not hybrid); ``scheduler``: as the attribute (kept for
        modeled timing only); ``pools``: as the attribute."""
        return cls(timing, tuple((t.name, _policy_label(t), int(t.capacity_blocks)) for t in tiers), native,
                   tuple(g.name for g in groups) if groups else ("full_attention",), bool(groups),
                   scheduler if timing == "modeled" else None, int(pools),
                   group_pages=tuple(int(g.pages) for g in groups) if groups else ())


def _policy_label(tier: Any) -> str:
    """``lru``, or ``lru+reuse:2`` for a tier with an admission policy (``+`` before each of its kinds)."""
    adm = getattr(tier, "admission", None)
    kinds = [adm.spec()] if adm is not None else []
    retention = getattr(tier.policy, "retention", None)     # retain wraps the policy (admission_retention.py)
    if retention is not None and retention.spec() not in kinds:
        kinds.append(retention.spec())
    return "+".join([tier.policy.name] + kinds)


def _tier_list(cfg: RunConfig) -> str:
    return ", ".join(f"{name}:{policy}" for name, policy, _ in cfg.tiers)


def _shared(cfg: RunConfig) -> str | None:
    """Why a row other than ``reference`` cannot run a fleet's shared tier (its instances' Python hierarchies
    on one clock), or None for any other run."""
    if cfg.shared:
        return "a fleet's shared tier runs the instances' Python hierarchies on one clock (docs/semantics.md §17.1)"
    return None


def _hybrid(cfg: RunConfig) -> str | None:
    if cfg.hybrid:
        return f"the model is hybrid (cache groups {', '.join(cfg.groups)}), it needs one full-attention group"
    return None


def _early_caching(cfg: RunConfig) -> str | None:
    """Why a compiled or hybrid row cannot run the step scheduler's ``cache_blocks_at`` other than
    ``prefill-done`` (``+cache-blocks-at=`` in :attr:`RunConfig.scheduler`): only the Python hierarchy
    (:meth:`pcs.cache.Hierarchy.cache_computed`) caches part of a request's computed blocks; else None."""
    tag = "+cache-blocks-at="
    if cfg.scheduler is None or tag not in cfg.scheduler:
        return None
    at = cfg.scheduler.split(tag)[1].split("+")[0]
    return f"blocks cached at {at} (--cache-blocks-at): only the Python hierarchy caches a prefill's blocks " \
           "before it is done"


def _lru_scan_applies(cfg: RunConfig) -> str | None:
    if _hybrid(cfg) or _shared(cfg):
        return _hybrid(cfg) or _shared(cfg)
    if cfg.timing != "sequential":
        return f"timing is {cfg.timing}, it needs sequential"
    if len(cfg.tiers) != 1:
        return f"it needs exactly one tier, got {len(cfg.tiers)} ({_tier_list(cfg)})"
    return _plain_lru(cfg)


def _plain_lru(cfg: RunConfig, who: str = "it") -> str | None:
    """Why not every tier runs plain ``lru`` (the LRU scans' rule, pcs/engine/fastpath.py, _lruscan_tiers.h): a tier
    with an admission policy (its label has ``+``) is named as such, before a tier with another eviction policy."""
    admitted = [f"{name}:{policy}" for name, policy, _ in cfg.tiers if "+" in policy]
    if admitted:
        return f"{who} takes no admission policy, got {', '.join(admitted)}"
    other = [f"{name}:{policy}" for name, policy, _ in cfg.tiers if policy != "lru"]
    if other:
        return f"{who} needs policy lru, got {', '.join(other)}"
    return None


def _compiled_label(label: str) -> bool:
    """Whether a tier's policy label (``lru``, ``lru+reuse:2+tinylfu:sample=10``) can run on the compiled hierarchy:
    its eviction policy compiled or any other registered one (a plug-in: hosted, ``pcs/cache/_pol_py.c``) and only
    compiled admission kinds (at most one ``retain``, in front of a compiled policy of ``RETAIN_POLICIES``)."""
    from pcs.cache.native import COMPILED_ADMISSIONS, RETAIN_POLICIES

    policy, *admits = label.split("+")
    kinds = [a.partition(":")[0] for a in admits]
    retains = kinds.count("retain")
    return (_registered(policy) and all(k in COMPILED_ADMISSIONS for k in kinds)
            and (not retains or (retains == 1 and policy in RETAIN_POLICIES)))


def _uncompiled_cause(labels: Sequence[str]) -> str:
    """The rule the first of ``labels`` (``tier:label`` the compiled hierarchy refuses, :func:`_compiled_label`)
    breaks: an eviction policy no registry holds, an admission kind without a compiled twin, or ``retain`` twice
    or in front of a hosted policy (pcs/cache/native.py: COMPILED_POLICIES, COMPILED_ADMISSIONS, RETAIN_POLICIES)."""
    from pcs.cache.native import COMPILED_ADMISSIONS, COMPILED_POLICIES

    policy, *admits = labels[0].partition(":")[2].split("+")
    kinds = [a.partition(":")[0] for a in admits]
    if not _registered(policy):
        return (f"it needs every tier's eviction policy registered (compiled: {', '.join(COMPILED_POLICIES)}; "
                "others hosted)")
    if any(k not in COMPILED_ADMISSIONS for k in kinds):
        return f"it needs admission policies with a compiled twin ({', '.join(COMPILED_ADMISSIONS)})"
    return "it takes one retain per tier, in front of a compiled eviction policy"


def _registered(policy: str) -> bool:
    """Whether ``policy`` names a registered eviction policy (built in or a plug-in)."""
    from pcs.cache.policies import get_policy

    try:
        get_policy(policy)
    except ValueError:
        return False
    return True


def _compiled_hierarchy_applies(cfg: RunConfig) -> str | None:
    from pcs.cache.native import size_unsupported

    if _hybrid(cfg) or _shared(cfg) or _early_caching(cfg):
        return _hybrid(cfg) or _shared(cfg) or _early_caching(cfg)
    other = [f"{name}:{policy}" for name, policy, _ in cfg.tiers if not _compiled_label(policy)]
    if other:
        return f"{_uncompiled_cause(other)}; got {', '.join(other)}"
    why = size_unsupported([(name, cap) for name, _, cap in cfg.tiers])
    if why is not None:
        return why
    return _twin_missing(cfg, "lruhier")


def _twin_missing(cfg: RunConfig, twin: str) -> str | None:
    """Why the compiled ``twin`` (a :data:`pcs._native.TWINS` name) cannot run, or None: native python, or
    not built. Raises UserError for native ``c`` when it is not built (:func:`pcs._native.resolve`)."""
    mode = _native.default_mode() if cfg.native is None else cfg.native
    if mode == "python":
        return "native is python (no compiled code)"
    if _native.resolve(mode, twin) != "c":
        return f"the compiled {_native.TWINS[twin]} is not built"
    return None


def _compiled_step_applies(cfg: RunConfig) -> str | None:
    if cfg.timing != "modeled" or cfg.scheduler is None:
        return "it needs modeled timing with the step scheduler (compute_mode='step')"
    if _early_caching(cfg):
        return _early_caching(cfg)
    if cfg.scheduler.endswith("+chunk-attention"):
        return "the model's prefill attention is neither per pair of tokens nor windowed, chunked or linear " \
               "terms the C loop sums (pcs.engine.chunkattn.chunk_terms)"
    if cfg.scheduler != "layerwise":
        return f"restore policy {cfg.scheduler}, it needs layerwise restores"
    why = _compiled_hierarchy_applies(cfg)
    if why is not None:
        return why
    from pcs.engine.stepnative import tiers_unsupported

    why = tiers_unsupported(len(cfg.tiers))
    if why is not None:
        return why
    if _native.resolve(_native.default_mode() if cfg.native is None else cfg.native, "stepsched") != "c":
        return f"the compiled {_native.TWINS['stepsched']} is not built"
    return None


def _compiled_hybrid_applies(cfg: RunConfig) -> str | None:
    """Why ``compiled-hybrid`` cannot run ``cfg``, or None; its fixed sizes are the twin's own statement of them
    (:func:`pcs.cache.nativegroups.size_unsupported`, which its set-up checks too), so ``auto`` never picks it
    for a replay it then refuses."""
    from pcs.cache.nativegroups import size_unsupported

    if cfg.shared or _early_caching(cfg):
        return _shared(cfg) or _early_caching(cfg)
    if cfg.pools != 1:
        return f"it needs one shared pool per tier (vLLM's hybrid KV cache manager), got {cfg.pools} pools per tier"
    why = _plain_lru(cfg)
    if why is not None:
        return why
    why = size_unsupported([(name, cap) for name, _, cap in cfg.tiers], cfg.group_pages or (1,) * len(cfg.groups))
    if why is not None:
        return why
    return _twin_missing(cfg, "grouphier")


def _hybrid_applies(cfg: RunConfig) -> str | None:
    """The cache groups' hierarchy (:class:`pcs.cache.grouphier.GroupHierarchy`) takes every eviction policy
    (arc and 2q too: their ghost lists are told the pages a GPU pool reserves slots for, as the reference tells
    them, ``GroupHierarchy._incoming``) and no admission policy but ``retain`` (it applied none: reuse,
    selective and tinylfu were listed on the tier and silently skipped). ``retain`` runs only on a model with one
    full-attention group run here by name (``--engine hybrid``, equal to the reference): a hybrid model's
    admission is refused before this table (:func:`pcs.engine.api._refuse_on_cache_groups`)."""
    if cfg.shared or _early_caching(cfg):
        return _shared(cfg) or _early_caching(cfg)
    bad = []
    for name, policy, _ in cfg.tiers:
        _, *kinds = policy.split("+")
        if any(k.split(":")[0] != "retain" for k in kinds):
            bad.append(f"{name}:{policy}")
    if bad:
        return f"cache groups take no admission policy but retain (not yet modelled there), got {', '.join(bad)}"
    return None


@dataclass(frozen=True, slots=True)
class EngineRow:
    """One row of the engine-selection table.

    Attributes:
        name: the engine's name (``replay(engine=...)``, ``--engine``, JSON ``engine``).
        kind: ``"scan"`` (one pass, no event loop) or ``"event-loop"``
            (:class:`pcs.engine.engine.ReplayEngine` over a hierarchy).
        summary: one line for help texts.
        applies: ``applies(RunConfig)`` -> None when the engine can run it,
            else the reason it cannot.
        implementation: dotted path of the code that runs it (a function for
            ``scan``, a hierarchy class for ``event-loop``).
        twin: the :data:`pcs._native.TWINS` key it runs (None: pure Python).
        equality_test: pytest node id of the test proving it equals the reference.
        unrelated: ``unrelated(RunConfig)`` -> True when the row cannot concern that kind of run at all (the
            compiled step loop for a run without the step scheduler): ``auto``'s reason does not list it then.
    """

    name: str
    kind: str
    summary: str
    applies: Callable[[RunConfig], str | None]
    implementation: str
    twin: str | None
    equality_test: str
    unrelated: Callable[[RunConfig], bool] | None = None

    def load(self) -> Any:
        """The object :attr:`implementation` names (imported on first use)."""
        module, _, attr = self.implementation.rpartition(".")
        return getattr(importlib.import_module(module), attr)


#: The table, in preference order (``auto`` takes the first row that applies).
ENGINES: tuple[EngineRow, ...] = (
    EngineRow("lru-scan", "scan", "one O(1)-per-access LRU scan of the trace (sequential, one lru tier)",
              _lru_scan_applies, "pcs.engine.fastpath.run", "lruscan",
              "tests/engine/test_replay_fastpath.py::test_chained_traces"),
    EngineRow("compiled-step", "event-loop", "the step scheduler's loop in C over the compiled hierarchy (compiled policies)",
              _compiled_step_applies, "pcs.cache.native.NativeHierarchy", "stepsched",
              "tests/engine/test_stepsched_native.py::test_native_equals_reference_on_random_traces",
              lambda cfg: cfg.scheduler is None),
    EngineRow("compiled-hierarchy", "event-loop", "the event loop over the compiled hierarchy (compiled policies)",
              _compiled_hierarchy_applies, "pcs.cache.native.NativeHierarchy", "lruhier",
              "tests/cache/test_replay_native.py::test_native_equals_python_on_random_traces"),
    EngineRow("reference", "event-loop", "the event loop over the Python hierarchy (the reference)",
              _hybrid, "pcs.cache.hierarchy.Hierarchy", None,
              "tests/cache/test_cache_properties.py::test_one_lru_tier_sequential_equals_flat_lru_and_is_monotone"),
    EngineRow("compiled-hybrid", "event-loop", "cache groups of pages in C (hybrid models, one shared lru pool "
              "per tier; §3.1)", _compiled_hybrid_applies, "pcs.cache.nativegroups.NativeGroupHierarchy",
              "grouphier", "tests/cache/test_grouphier_native.py::test_native_equals_reference_under_the_step_scheduler"),
    EngineRow("hybrid", "event-loop", "the event loop over cache groups of pages (hybrid models; §3.1)",
              _hybrid_applies, "pcs.cache.grouphier.GroupHierarchy", None,
              "tests/cache/test_hybrid_properties.py::test_one_full_group_equals_reference"),
)
#: Engine names in table order.
ENGINE_NAMES: tuple[str, ...] = tuple(r.name for r in ENGINES)
#: Older names still accepted: ``general`` (always the Python event loop), ``fast`` (the scan or an error).
ALIASES = {"general": "reference", "fast": "lru-scan"}
#: Every accepted ``engine=`` value: ``auto``, the table's names, then the aliases.
REQUESTS: tuple[str, ...] = ("auto",) + ENGINE_NAMES + tuple(ALIASES)
#: The rows that run cache groups (:mod:`pcs.engine.hybrid`'s plan; the step scheduler's
#: :class:`pcs.engine.hybridstep.HybridStepEngine`).
HYBRID_ROWS = ("compiled-hybrid", "hybrid")
#: The replay summary's keys that say which engine ran.
ENGINE_KEYS = ("engine", "engine_reason", "baseline_engine", "baseline_engine_reason")
#: The replay summary's keys that say what ran: the engines and whether the side work ran on worker threads
#: (``threads``, :func:`pcs.beside.threads_decision`) -- the only keys allowed to differ between engines, and
#: between two runs of the same inputs (``auto`` threads depend on the machine's load at the replay's start).
SUMMARY_KEYS = (*ENGINE_KEYS, "threads")


def canonical(requested: str) -> str:
    """``auto`` or a table name for an accepted ``engine=`` value (aliases resolved).

    Raises:
        UserError: not in :data:`REQUESTS` (the message lists them).
    """
    name = ALIASES.get(requested, requested)
    if name != "auto" and name not in ENGINE_NAMES:
        raise UnknownNameError("engine", requested, REQUESTS)
    return name


def get_row(name: str) -> EngineRow:
    """The row named ``name`` (an alias is accepted). Raises UserError for another name or ``auto``."""
    name = canonical(name)
    for row in ENGINES:
        if row.name == name:
            return row
    raise UserError("'auto' names no single engine; use choose()")


def _first(cfg: RunConfig, rows: Sequence[EngineRow], skipped: list[str]) -> tuple[EngineRow, str]:
    for row in rows:
        why = row.applies(cfg)
        if why is None:
            return row, "; ".join(skipped + [f"auto: {row.name} applies"])
        if row.unrelated is None or not row.unrelated(cfg):
            skipped.append(f"not {row.name}: {why}")
    raise UserError("no engine can run this replay: " + "; ".join(skipped))


def choose(run_config: RunConfig, requested: str = "auto") -> tuple[EngineRow, str]:
    """The engine that runs ``run_config`` and why.

    Args:
        run_config: the run (or the sequential baseline) to place.
        requested: ``auto`` (the first row that applies), a table name or an alias.
    Returns:
        ``(row, reason)``; the reason names each earlier row and why it did
        not apply (``auto``), or says the engine was requested.
    Raises:
        UserError: unknown name; a requested engine that does not apply
            (the message says why); ``native="c"`` when a needed compiled
            twin is not built, or when the engine runs none (:func:`_compiled_if_c`).
    """
    name = canonical(requested)
    if name == "auto":
        return _compiled_if_c(run_config, *_first(run_config, ENGINES, []))
    row = get_row(name)
    why = row.applies(run_config)
    alias = f" (alias of {name})" if requested != name else ""
    if why is not None:
        raise UserError(f"engine {shown_repr(requested)}{alias} cannot run this replay: {why}; use engine='auto'")
    return _compiled_if_c(run_config, row, f"requested: {requested}{alias}")


def _compiled_if_c(run_config: RunConfig, row: EngineRow, reason: str) -> tuple[EngineRow, str]:
    """``(row, reason)`` unchanged, unless native is ``c`` (``native="c"``, ``--native c`` or ``PCS_NATIVE=c``)
    and the row runs no compiled code (``twin`` None: ``reference``, ``hybrid``). ``c`` asks for the compiled
    code, so that is refused with the table's reason; ``auto`` runs the row (docs/semantics.md §15).

    Raises:
        UserError: native ``c`` and a row without a compiled twin.
    """
    mode = _native.default_mode() if run_config.native is None else run_config.native
    if mode == "c" and row.twin is None:
        asked = "PCS_NATIVE=c" if run_config.native is None else "native 'c'"
        raise UserError(f"{asked} asks for compiled code, but this {run_config.timing} replay runs on the Python "
                         f"{row.name} engine ({reason}); use native 'auto' to run it there")
    return row, reason + _python_kernel(run_config, row)


def _python_kernel(run_config: RunConfig, row: EngineRow) -> str:
    """What the reason adds when a row whose name does not say which code runs (``lru-scan``: a C or a Python
    kernel) runs its Python kernel: ``" (its Python kernel: native is python)"`` or ``" (its Python kernel: the
    compiled ... is not built)"``; ``""`` when the compiled kernel runs or the row has no such choice. The other
    rows name the Python code by name (``reference``, ``hybrid``) with the reason the compiled rows were passed."""
    if row.kind != "scan" or row.twin is None:
        return ""
    why = _twin_missing(run_config, row.twin)
    return "" if why is None else f"{PYTHON_KERNEL}{why.removesuffix(' (no compiled code)')})"


#: how a reason marks a scan row run on its Python kernel (:func:`_python_kernel`; the text report's engine note)
PYTHON_KERNEL = " (its Python kernel: "


def engine_label(engine: str, reason: str | None) -> str:
    """An engine's name as a report prints it: ``lru-scan``, or ``lru-scan (its Python kernel: native is python)``
    when its reason says the Python kernel ran (:data:`PYTHON_KERNEL`); the other rows' names say it already."""
    i = (reason or "").find(PYTHON_KERNEL)
    return engine if i < 0 else engine + reason[i:]


def fall_back(run_config: RunConfig, failed: EngineRow, why: str, reason: str,
              found: str = "found while scanning") -> tuple[EngineRow, str]:
    """The row after ``failed`` that applies, when ``failed`` found at run time that it cannot run.

    Args:
        run_config: as given to :func:`choose`.
        failed: the row chosen by ``auto`` that gave up (e.g. ``lru-scan`` on
            ids that are not chained).
        why: its message.
        reason: the reason :func:`choose` gave for it.
        found: when ``failed`` found it (the reason says so in parentheses).
    Returns:
        ``(row, reason)``: the reason keeps the earlier one and adds why ``failed`` gave up.
    Raises:
        UserError: no later row applies; native ``c`` and the next row runs no compiled code.
    """
    rows = ENGINES[ENGINES.index(failed) + 1:]
    prior = [p for p in reason.split("; ") if not p.startswith("auto:")]
    return _compiled_if_c(run_config, *_first(run_config, rows, prior + [f"not {failed.name}: {why} ({found})"]))


def baseline_request(requested: str) -> str:
    """What the sequential baseline of a modeled run asks the table for, given the run's ``requested`` engine.

    ``compiled-step`` is a modeled engine: asked for by name, its baseline runs on the same compiled hierarchy
    without the step loop (``compiled-hierarchy``); any other request is passed on as it is.
    """
    return "compiled-hierarchy" if canonical(requested) == "compiled-step" else requested


#: why the sequential baseline of a modeled run on two lru tiers runs in the one-pass scan (summary JSON)
TWO_TIER_SCAN = ("auto: lru-scan applies to the sequential baseline: two lru tiers, write-back, in the one-pass "
                 "scan beside the single-sequence walks (pcs/engine/_lruscan_tiers.h)")


def baseline_in_scan(baseline: EngineRow, run_config: RunConfig, requested: str, write_policy: str) -> bool:
    """Whether ``auto`` moves a modeled run's sequential baseline from ``compiled-hierarchy`` to ``lru-scan``.

    It does when the baseline was placed on ``compiled-hierarchy`` over exactly two ``lru`` tiers with
    write-back and the compiled scan is built: the one-pass scan then gives the baseline beside the
    single-sequence walks (docs/semantics.md §15; equality: tests/engine/test_seqbase.py). Whether the ids are
    chained (the scan's premise) is found while scanning; the runner then keeps ``compiled-hierarchy``.
    """
    return (canonical(requested) == "auto"
            and baseline_scan_refusal(baseline, run_config, write_policy) is None)


def baseline_scan_refusal(baseline: EngineRow, run_config: RunConfig, write_policy: str) -> str | None:
    """Why the one-pass scan does not give a modeled run's sequential baseline on TWO tiers (its rule, as
    :func:`baseline_in_scan`: two ``lru`` tiers, no admission, write-back, the compiled scan, the baseline placed
    on ``compiled-hierarchy``), or None when it does. The first broken condition is named, in that order."""
    if len(run_config.tiers) != 2:
        return (f"it needs one tier with policy lru, or two for a modeled run's sequential baseline, "
                f"got {len(run_config.tiers)} ({_tier_list(run_config)})")
    why = _plain_lru(run_config, "the sequential baseline's two-tier scan")
    if why is not None:
        return why
    if write_policy != "back":
        return f"the sequential baseline's two-tier scan needs write-back, got write-{write_policy}"
    if (run_config.native or _native.default_mode()) == "python":
        return "native is python (no compiled code)"
    if not _native.built("lruscan"):
        return f"the compiled {_native.TWINS['lruscan']} is not built"
    if baseline.name != "compiled-hierarchy":
        return f"the two-tier scan stands in for compiled-hierarchy only, the baseline runs on {baseline.name}"
    return None


def baseline_reason(reason: str, baseline: EngineRow, run_config: RunConfig, write_policy: str) -> str:
    """``reason`` (:func:`choose`'s for a modeled run's sequential baseline on two or more tiers) with its
    ``not lru-scan: ...`` part -- the one-tier rule -- replaced by why the two-tier scan does not take it
    (:func:`baseline_scan_refusal`); unchanged for a hybrid model, a fleet's shared tier, one tier, or a reason
    without that part (an engine requested by name)."""
    why = baseline_scan_refusal(baseline, run_config, write_policy)
    if why is None or len(run_config.tiers) < 2 or run_config.hybrid or run_config.shared:
        return reason
    parts = [f"not lru-scan: {why}" if p.startswith("not lru-scan: ") else p for p in reason.split("; ")]
    return "; ".join(parts)


def __getattr__(name: str) -> Any:
    """``MAX_COMPILED_BLOCKS`` (:data:`pcs.cache.native.MAX_BLOCKS`), read from the compiled hierarchy's module on
    first use: importing this table (``pcs replay --help`` shows it) loads no numpy."""
    if name == "MAX_COMPILED_BLOCKS":
        from pcs.cache.native import MAX_BLOCKS

        return MAX_BLOCKS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
