"""``replay(trace, ...)``: build the tiers from a model and hardware, run, summarise.

Defaults (``pcs replay`` with no arguments) and why:

- trace: :data:`pcs.trace.DEFAULT_TRACE`, the bundled sample;
- model ``llama-2-70b``: the Mooncake paper (FAST'25) served its trace with a
  LLaMA2-70B-like model;
- hardware: 8 x ``h100-sxm``, TP = 8; the GPU tier is sized from the
  deployment (:func:`pcs.model.deploy.size_deployment`, the function ``pcs
  deploy`` uses): per GPU, HBM x 0.9 (vLLM ``gpu_memory_utilization``) minus
  the weights' share minus an activation/runtime reserve (5 GB), x the GPUs --
  for llama-2-70b on 8 x 80 GB: 8 x (72 - 17.24 - 5) GB = 398.05 GB; the
  derivation is printed in the notes; CPU tier ``2TB``: host DRAM of a typical
  8-GPU server;
- links: :func:`pcs.hardware.default_link_for_tier` per lower tier, one per
  GPU: each TP rank restores its own share of a block over its own link
  (vLLM's offloading connector runs per worker), so a restore of a block takes
  per-rank bytes / bandwidth (:mod:`pcs.model.parallel`);
- policy ``lru`` (vLLM, SGLang); write-back; modeled timing with the step
  scheduler (``compute_mode="step"``, :mod:`pcs.engine.scheduler`; its
  settings and their sources: :mod:`pcs.engine.schedconfig`);
  ``compute_mode="infinite"`` is the model before it (every prefill and
  decode at full speed at once).

Tier capacities are per TP group and in bytes become blocks with the group's
bytes per block in the tier's layout -- per-rank bytes x the ranks holding a
copy (:func:`pcs.model.group_block_bytes`): the GPU tier holds the Reserved
layout, lower tiers the Serialized layout, floor division.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pcs import units
from pcs.blocks import BlockRules
from pcs.cache import Tier
from pcs.cache.hierarchy import check_write_policy
from pcs.cache.policies import DEFAULT_POLICY, canonical_spec, check_policies, make_policies
from pcs.engine import select
from pcs.engine.computecheck import checked_compute
from pcs.engine.keptsetup import kept_group_block_bytes, kept_tier, kept_with_tp
from pcs.engine.apiobjects import check_api_objects
from pcs.engine.engine import check_timing
from pcs.engine.replaydoc import document
from pcs.engine.result import ReplaySummary
from pcs.engine.passes import SharedPasses
from pcs.engine.runner import StepSetup, run_oracle, run_replay
from pcs.engine.schedconfig import COMPUTE_MODES, SchedulerConfig
from pcs.engine.tiercheck import check_tier_spec, one_entry_each, run_on_entries, tier_name_problem
from pcs.engine.timing import TimeModel
from pcs.beside import Beside
from pcs.argcheck import MAX_TP, check_flag, check_int, check_real, check_text
from pcs.choices import not_among_tiers
from pcs.errors import (ArgumentTypeError, UnknownNameError, UserError, ending_with, keyword_refusal, keyword_refusals,
                        lead_with, quoted, shown_repr)
from pcs.trace.api import trace_notes
from pcs.trace.batches import as_batches, reiterable, with_limits
from pcs.trace.rowlimits import NO_LIMITS, STEP_LIMITS, RowLimits
from pcs._dataclass import dataclass
from pcs import _native
from pcs.cache import admission
from pcs.cache.admission import apply_admission, check_admissions, parse_admit_option
from pcs.cache.policies import needs_context, parse_policy_spec
from pcs.cache.policies.context import PolicyContext, TraceOracle, block_cost_from
from pcs.compute import ComputeModel
from pcs.engine.chunks import iter_chunks
from pcs.engine.deployment import resolve_gpu_tier
from pcs.engine import hybrid as _hybrid, summary as _summary
from pcs.engine.runparts import LatencyParts, latency_parts
from pcs.engine.schedresult import saturation_note
from pcs.engine.schedstats import SpanError, scheduler_summary
from pcs.engine.truncation import truncated_timing_note, truncation_note
from pcs.hardware import TIER_LINKS, GPUSpec, LinkSpec, default_link_for_tier, get_gpu, get_link
from pcs.model import get_model, group_bytes_per_token

__all__ = ["replay", "check_replay", "ReplayResult", "TierSpec", "parse_tier", "parse_assignment", "DEFAULTS", "DEFAULT_TIERS"]

#: Defaults of :func:`replay` and ``pcs replay`` (reasons in the module docstring).
DEFAULTS = {"model": "llama-2-70b", "gpu": "h100-sxm", "tp": 8, "policy": DEFAULT_POLICY,
            "timing": "modeled", "write_policy": "back", "compute_mode": COMPUTE_MODES[0]}
DEFAULTS_REASON = {
    "model": "model llama-2-70b (the Mooncake paper served its trace with a LLaMA2-70B-like model)",
    "hardware": "8x h100-sxm, TP=8",
    "tiers": "tiers: gpu sized from the deployment (derivation below) and cpu=2TB (host DRAM of an 8-GPU server)",
}


def _default_notes(model: bool, hardware: bool, tiers: bool) -> list[str]:
    used = [DEFAULTS_REASON[k] for k, v in (("model", model), ("hardware", hardware), ("tiers", tiers)) if v]
    return [f"defaults: {'; '.join(used)}"] if used else []



@dataclass(frozen=True, slots=True)
class TierSpec:
    """One tier as the user names it.

    Attributes:
        name: tier name; the first tier is the GPU tier.
        capacity_bytes: size in bytes, or None when given in blocks.
        capacity_blocks: size in blocks, or None when given in bytes.
        policy: eviction policy name, None = the run's ``policy``.
        link: restore link of a lower tier: a preset name, a bandwidth
            ("25GB/s"), a LinkSpec, or None = ``default_link_for_tier(name)``.
    """

    name: str
    capacity_bytes: int | None = None
    capacity_blocks: int | None = None
    policy: str | None = None
    link: Any = None


#: Default tiers: a GPU tier with no size is sized from the deployment (see the module docstring).
DEFAULT_TIERS = (TierSpec("gpu"), "cpu=2TB")


def parse_assignment(text: str, what: str, option: str | None = None,
                     tiers: Sequence[str] | None = None) -> tuple[str, str]:
    """Split ``NAME=VALUE`` (as ``--tier gpu=400GB``); ``option`` names the repeating option (``--tier-policy``) or
    API keyword (``tiers=``) a refusal of a list in one entry names (None: ``what``'s); ``tiers``: the tier names
    such a list may name past a ``:`` (:func:`pcs.engine.tiercheck.run_on_entries`).

    Raises:
        UserError: no ``=`` or an empty side; a name :func:`pcs.engine.tiercheck.tier_name_problem` refuses (a
            tab, a right-to-left mark, a ``,`` or ``+``); the message shows the expected form.
    """
    check_text(text, what, f"a 'NAME=VALUE' string, e.g. {_EXAMPLES[what]}")
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise UserError(f"bad {what} {quoted(text, show=repr)}; expected NAME=VALUE, e.g. {_EXAMPLES[what]}")
    entries = run_on_entries(text, tiers)
    if entries:
        raise UserError(one_entry_each(option or _OPTION_OF_FORM[what], what, entries))
    name = name.strip()
    refusal = name_refusal(what, name, text)
    if refusal:
        raise UserError(refusal)
    return name.lower(), value.strip()


def name_refusal(what: str, name: str, text: str) -> str | None:
    """The refusal of ``name`` (stripped), the name of ``text``, a ``NAME=VALUE`` entry of form ``what`` (``tier``,
    ``link``, ``tier policy``), by the one rule of tier names (:func:`pcs.engine.tiercheck.tier_name_problem`), or
    None: one wording for the API, the command line and a sweep plan, checked before any other rule of the name."""
    problem = tier_name_problem(name)
    if not problem:
        return None
    return f"bad {what} name {quoted(name, show=repr)} in {quoted(text, show=repr)}: {problem}; e.g. {_EXAMPLES[what]}"


#: The API keyword each form's entries are items of, when no option is named (:func:`parse_assignment`).
_OPTION_OF_FORM = {"tier": "tiers=", "link": "links=", "tier policy": "tier_policies="}

_EXAMPLES = {"tier": "gpu=400GB, gpu=5000blocks or gpu=auto", "link": "cpu=pcie-gen5-x16 or cpu=25GB/s",
             "tier policy": "cpu=protected"}


def parse_tier(text: str | TierSpec) -> TierSpec:
    """``"gpu=400GB"``, ``"gpu=5000blocks"`` or ``"gpu=auto"`` -> :class:`TierSpec` (sizes >= 0; 0 allowed).

    ``auto`` leaves the size open: the GPU tier (the first) is then sized from the
    deployment (module docstring); a lower tier cannot be ``auto`` (:func:`replay` refuses it).

    >>> parse_tier("gpu=5000blocks").capacity_blocks
    5000
    >>> parse_tier("gpu=auto").capacity_bytes is None
    True
    >>> parse_tier("cpu=2TB").capacity_bytes
    2000000000000

    Raises:
        UserError: malformed text or size.
    """
    if isinstance(text, TierSpec):
        return text
    if type(text) is str:       # kept per text for the next call (frozen: the spec this text always gives)
        return kept_tier(text, _parsed_tier)
    return _parsed_tier(text)


def _parsed_tier(text: str) -> TierSpec:
    """:func:`parse_tier` of a tier's text, made afresh. Raises as :func:`parse_tier`."""
    name, value = parse_assignment(text, "tier")
    if value.lower() == "auto":
        return TierSpec(name)
    try:
        cap = units.parse_capacity(value)  # the one capacity parser (docs/semantics.md §16)
    except ValueError as exc:
        raise UserError(f"bad tier size {quoted(value, show=repr)} for tier {quoted(name, show=repr)}: "
                        f"{str(exc).splitlines()[0]}") from None
    return TierSpec(name, capacity_bytes=cap.size_bytes, capacity_blocks=cap.blocks)


class ReplayResult:
    """The outcome of :func:`replay`.

    Attributes:
        summary: :class:`pcs.engine.result.ReplaySummary`; its ``to_dict()`` is the JSON of ``pcs replay --format
            json`` (keys in ``docs/json.md``), its ``notes`` with the trace's caveats (synthetic prefix reuse, bad
            lines skipped: :func:`pcs.trace.api.trace_notes`, in the API's words) -- less the keys the command adds
            (docs/json.md, "pcs replay": ``trace_file``, ``replay_command``, ``skipped`` and ``skipped_lines``, which
            are ``Trace.skipped`` and ``Trace.skipped_lines`` here) and the command's note on a lower tier that
            never received a block (:func:`pcs.report.tiercheck.tier_config_notes` of ``summary.to_dict()``).
        requests: pyarrow Table, one row per request in trace order (columns
            in :data:`pcs.engine.summary.REQUEST_COLUMNS`); built on first
            access from the engine's columns, so a replay that never reads it
            does not import pyarrow (start-up, benchmarks/bench_startup.py).
        ceilings: the run's single-sequence results, for a caller that reuses them (:mod:`pcs.fleet`): (prompt-only
            :class:`pcs.blocks.SingleSequenceResult`, the decode-aware one or None, the
            :class:`pcs.engine.turns.DecodeBlocks` it counted or None; docs/semantics.md §12), or None.
    """

    __slots__ = ("summary", "_requests", "_columns", "ceilings")

    def __init__(self, summary: ReplaySummary, requests: Any = None, *, columns: dict | None = None,
                 ceilings: tuple | None = None):
        if requests is None and columns is None:
            raise UserError("ReplayResult needs a requests table or the columns to build it from")
        self.summary = summary
        self._requests = requests
        self._columns = columns
        self.ceilings = ceilings

    @property
    def requests(self) -> Any:
        if self._requests is None:
            from pcs.engine.summary import requests_table

            self._requests, self._columns = requests_table(self._columns), None
        return self._requests

    def __repr__(self) -> str:
        return f"ReplayResult(summary={self.summary!r}, requests=<{len(self.requests)} rows>)"


def _block_size(source: Any) -> int:
    """Tokens per block of a source: its ``block_size`` attribute, else its first batch's."""
    bs = getattr(source, "block_size", None)
    if bs is None:
        first = next(as_batches(source), None)
        if first is None:
            raise UserError("the trace has no requests")
        bs = first.block_size
    return int(bs)


def _link_bandwidth(tier: str, link: str, table: Any = None) -> float:
    """Bytes/s of a ``--link TIER=BANDWIDTH`` that names no preset of ``table`` (a HardwareTable, None: the
    built-in presets).

    Raises:
        UserError: naming ``--link TIER=...`` and the real reason: bits, negative, not finite,
            too large, zero (a link that moves nothing), a mistyped unit (with the close ones), or neither a
            preset nor a bandwidth (with the nearest preset names, :func:`pcs.choices.did_you_mean`).
    """
    from pcs.choices import did_you_mean
    from pcs.hardware import LINKS, aliases_of

    where = f"links[{shown_repr(tier)}] = {quoted(link, show=repr)}"     # the CLI: --link TIER=VALUE (pcs.cli.common.option_names)
    try:
        bps = units.parse_bandwidth(link)
    except ValueError as exc:
        msg = str(exc).splitlines()[0]
        # bits or GBps: the same hint as envelope's --bandwidth (the unit to write); a mistyped unit: the close ones
        # (pcs.units._close_unit)
        if any(w in msg for w in ("bits", "negative", "too large", "did you mean", ": write ")):
            raise UserError(f"{where}: {msg}") from None
        if re.match(r"\s*[+-]?(nan|inf)", link, re.IGNORECASE):
            raise UserError(f"{where}: a bandwidth must be a finite number of bytes/s") from None
        presets = LINKS if table is None else table.links
        raise UserError(f"{where}: neither a preset ({', '.join(presets)}) nor a bandwidth like 25GB/s; "
                        f"{did_you_mean(link, presets, aliases_of(presets))}".rstrip("; ")) from None
    if bps <= 0:
        raise UserError(f"{where}: a bandwidth must be > 0 (a link that moves nothing never finishes a transfer)")
    return bps


def _resolve_link(tier: str, link: Any, tp: int, table: Any = None):
    """The effective link of a lower tier for a TP group (bandwidth x tp)."""
    if isinstance(link, LinkSpec):
        base = link
    elif link is None:
        try:
            base = default_link_for_tier(tier, table)
        except ValueError as exc:
            advice = (f"links[{shown_repr(tier)}] = 'pcie-gen5-x16' or links[{shown_repr(tier)}] = '25GB/s'" if len(tier) <= 40
                      else "links= names it, a preset or a bandwidth")  # a long name cut once, not in the advice
            raise UserError(f"{exc}; or name its link: {advice}") from None
    else:
        try:
            base = get_link(str(link), table)
        except ValueError:
            bps = _link_bandwidth(tier, str(link), table)
            try:
                setup = default_link_for_tier(tier, table).setup_s
            except ValueError:
                setup = 0.0
            base = LinkSpec(f"{units.format_bandwidth(bps)}", bps, setup, None, None,
                            f"--link {tier}={link}; setup {setup} s from the tier's default link")
    if tp == 1:
        return base
    # the tier's bytes per block are per-rank bytes x tp; each rank moves its own share (replicas
    # included) over its own link at once, so the group's link is tp links side by side
    iops = base.iops * tp if base.iops is not None else None
    return dataclasses.replace(base, name=f"{tp}x {base.name}", bandwidth_bps=base.bandwidth_bps * tp, iops=iops,
                               source=f"{tp} parallel links, one per TP rank, each moving its rank's share "
                                      f"(pcs.model.parallel) of: {base.source}")


def _build_tiers(specs: Sequence[TierSpec], bpb: Sequence[int], policy: str, tier_policies: Mapping[str, str],
                 protected_share: float | None, context: Any = None,
                 admit: Mapping[str, Sequence[str]] | None = None) -> list[Tier]:
    caps = [units.capacity_to_blocks(s.capacity_bytes, s.capacity_blocks, b, f"tier {shown_repr(s.name)}")
            for s, b in zip(specs, bpb)]
    names = _policy_names(specs, policy, tier_policies)
    ctx = context.fresh() if context is not None else None       # one clock per hierarchy
    policies = make_policies(names, caps, ctx, _policy_labels(specs, policy, tier_policies),
                             protected_share=protected_share)
    tiers = []
    for s, c, p in zip(specs, caps, policies):
        p, adm = apply_admission((admit or {}).get(s.name, ()), p, ctx, s.name)
        tiers.append(Tier(s.name, c, p, adm))
    return tiers


def _admit_map(admit: Any, specs: Sequence[TierSpec]) -> dict[str, list[str]]:
    """``admit`` of :func:`replay` (strings ``TIER=KIND`` or a mapping) -> tier name -> kinds, checked."""
    if not admit:
        return {}
    if not isinstance(admit, (str, Mapping, list, tuple)):
        raise ArgumentTypeError(ending_with(f"admit= must be 'TIER=KIND' strings or a mapping of tier to kinds, got "
                                            f"{type(admit).__name__}: ", admit))
    if isinstance(admit, Mapping):
        admit = [f"{tier}={kind}" for tier, kinds in admit.items() for kind in
                 ([kinds] if isinstance(kinds, str) else kinds)]
    return parse_admit_option([admit] if isinstance(admit, str) else list(admit), [s.name for s in specs])


def _policy_names(specs: Sequence[TierSpec], policy: str, tier_policies: Mapping[str, str]) -> list[str]:
    """The policy (name or spec) of each tier."""
    return [tier_policies.get(s.name, s.policy or policy) for s in specs]


def _policy_labels(specs: Sequence[TierSpec], policy: str, tier_policies: Mapping[str, str]) -> list[str]:
    """The argument that gave each tier its policy, as a refusal of its options names it (``policy='lfu:x=1'``,
    ``tier_policies['cpu'] = 'lfu:x=1'``: the command line's ``--policy`` and ``--tier-policy cpu=...``,
    :func:`pcs.cli.common.option_names`), the spec cut by :func:`pcs.errors.quoted`."""
    def label(s: TierSpec) -> str:
        if s.name in tier_policies:
            return f"tier_policies[{shown_repr(s.name)}] = {quoted(tier_policies[s.name], show=repr)}"
        if s.policy:
            return f"tier {shown_repr(s.name)}'s policy {quoted(s.policy, show=repr)}"
        return f"policy={quoted(policy, show=repr)}"

    return [label(s) for s in specs]


def _check_policies(specs: Sequence[TierSpec], policy: str, tier_policies: Mapping[str, str] | None,
                    protected_share: float | None, admit: Any) -> None:
    """The refusals the run's tiers would make of their eviction policies (names, options, values) and admission
    kinds, made before the trace is read: the registry's checks of the specs the run builds
    (:func:`pcs.cache.policies.check_policies`, :func:`pcs.cache.admission.check_admissions`), labelled as the run
    labels them (:func:`_policy_labels`).

    Raises:
        UserError: the first refusal, naming the argument that gave the spec.
    """
    tier_policies = dict(tier_policies or {})
    check_policies(_policy_names(specs, policy, tier_policies), _policy_labels(specs, policy, tier_policies),
                   protected_share=protected_share)
    check_admissions(_admit_map(admit, specs))


def _policy_context(names: Sequence[str], source: Any, rules: BlockRules, compute: Any, bs: int,
                    admit: Mapping[str, Sequence[str]] | None = None, oracle: bool = False):
    """The trace pre-pass for policies that read the trace (gdsf, belady; admission retain; the gap
    split's oracle run), or None when nothing needs it."""
    needs = {n for name in names for n in needs_context(name)}
    if oracle:
        needs.add("future")
    if admission.needs_context([s for specs in (admit or {}).values() for s in specs]):
        needs.add("chain")
    if not needs:
        return None
    oracle = TraceOracle.build(iter_chunks(source, rules), future="future" in needs, chain="chain" in needs)
    return PolicyContext(oracle, block_cost_from(compute, bs))


def _build_pools(plan, specs: Sequence[TierSpec], policy: str, tier_policies: Mapping[str, str],
                 protected_share: float | None) -> list[Tier]:
    """A hybrid plan's pools, level-major (:class:`pcs.engine.hybrid.HybridPlan`), each with its level's policy."""
    names, caps, pols = [], [], []
    for j, s in enumerate(specs):
        for p, cap in enumerate(plan.capacity_pages[j]):
            names.append(plan.pool_name(s.name, p))
            caps.append(cap)
            pols.append(tier_policies.get(s.name, s.policy or policy))
    return [Tier(n, c, pol) for n, c, pol in zip(names, caps, make_policies(pols, caps,
                                                                             protected_share=protected_share))]


def _tier_list(tiers: Any) -> Sequence[str | TierSpec]:
    """``tiers`` as a sequence of tier texts / TierSpecs; one str or TierSpec is one tier.

    Raises:
        ArgumentTypeError: (a UserError and a TypeError) a mapping, a non-sequence, or an item that is neither
            str nor TierSpec.
    """
    if tiers is None:
        return DEFAULT_TIERS
    if isinstance(tiers, (str, TierSpec)):
        return [tiers]  # tiers="gpu=10GB": one tier, as one --tier
    accepts = "a sequence of 'NAME=SIZE' strings or TierSpec, GPU first, e.g. ['gpu=10GB', 'cpu=100GB']"
    if isinstance(tiers, Mapping) or not isinstance(tiers, (list, tuple)):
        raise ArgumentTypeError(f"tiers must be {accepts}; got {type(tiers).__name__}")
    for t in tiers:
        if not isinstance(t, (str, TierSpec)):
            raise ArgumentTypeError(ending_with(f"tiers must be {accepts}; got an item of type {type(t).__name__}: ", t))
    return tiers


def _named_tier(item: Any) -> TierSpec:
    """:func:`parse_tier` of one item of ``tiers=``, its refusal led by the item (``tiers='gpu=-5GB': bad tier size
    ...``; the command line's ``--tier gpu=-5GB: ...``).

    Raises:
        UserError: as :func:`parse_tier`."""
    try:
        return parse_tier(item)
    except UserError as exc:
        raise UserError(f"tiers={quoted(str(item), show=repr)}: {exc}") from None


def _tier_specs(tiers, tier_policies, links) -> list[TierSpec]:
    """Parse and check the tier list and the per-tier option names. A refusal names ``tiers=`` (the command line's
    ``--tier``, :func:`pcs.cli.common.option_names`): the tier's text refused, or the name given twice."""
    items = _tier_list(tiers)
    specs = [_named_tier(t) for t in items]
    for s in specs:
        check_tier_spec(s, links if isinstance(links, Mapping) else None)
    if not specs:
        raise UserError("at least one tier is needed, e.g. tiers=['gpu=400GB']")
    names = [t.name for t in specs]

    if names[0].lower() in TIER_LINKS:
        raise UserError(f"the GPU tier comes first in tiers=, but the first is named {shown_repr(names[0])} (a lower tier); "
                         f"give the GPU tier first, e.g. tiers=['gpu=auto', '{names[0]}=...'] (auto: the size the "
                         "deployment leaves for KV)")
    for s in specs[1:]:
        if s.capacity_bytes is None and s.capacity_blocks is None:
            raise UserError(f"tier {shown_repr(s.name)}: only the GPU tier (the first of tiers=) can be sized 'auto' "
                             f"(from the deployment); give {s.name} a size, e.g. tiers=['{s.name}=2TB']")
    twice = next((i for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        first = names.index(names[twice])
        if not all(isinstance(items[i], str) for i in (first, twice)):    # a spec made in code, a fleet's shared tier
            raise UserError(f"tier names must be distinct, got {', '.join(names)}")
        raise UserError(f"tiers= gives tier {quoted(names[twice], show=repr)} twice ({items[first]}, {items[twice]}): "
                        "tier names must be distinct; give each tier once")
    for what, mapping in (("tier_policies", tier_policies), ("links", links)):
        if mapping is not None and not isinstance(mapping, Mapping):
            raise UserError(f"{what} must be a mapping of tier name to value, e.g. {{'cpu': ...}}, got {shown_repr(mapping)}")
        for k in mapping or {}:
            if k not in names:
                exc = lead_with(UserError(not_among_tiers("", k, names, quoted(k, show=repr))),   # as the entry's
                                f"{what}[{shown_repr(k)}] = {quoted(mapping[k], show=repr)}")    # other refusals
                raise _entry_refused(exc, k, mapping[k])
            entries = run_on_entries(f"{k}={mapping[k]}", names) if isinstance(mapping[k], str) else None
            if entries:     # another tier's entry run into this one's value (lru,gpu=slru)
                form = one_entry_each(f"{what}=", {"links": "link", "tier_policies": "tier policy"}[what], entries)
                raise _entry_refused(UserError(f"{what}[{shown_repr(k)}] = {quoted(mapping[k], show=repr)}: {form}"),
                                     k, mapping[k])
    if links and names[0] in links:
        raise UserError(f"links= is for lower tiers; {shown_repr(names[0])} is the GPU tier")
    return specs


def _entry_refused(exc: UserError, name: str, value: Any) -> UserError:
    """``exc`` keeping the refused entry of a NAME=VALUE mapping (``links``, ``tier_policies``) as its
    ``refused_value`` ``NAME=VALUE`` (a value given as text or a number: a sweep plan names the line the entry is
    written on by it), unless ``exc`` already names the value it refuses. :func:`_tier_specs` and
    :func:`_check_links` both mark their refusals by it."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) \
            and getattr(exc, "refused_value", None) is None:
        exc.refused_value = f"{name}={value}"
    return exc


def _model_and_gpu(model, dtype, hardware, table, tp: int = 1):
    """The model split over ``tp`` ranks (``with_tp``: byte figures per rank) and the GPU."""
    with keyword_refusal("model", model):
        spec = model if hasattr(model, "components") else get_model(model or DEFAULTS["model"])
    if dtype:
        with keyword_refusal("dtype", dtype):
            spec = spec.with_dtype(dtype)
    with keyword_refusal("hardware", hardware):
        gpu = hardware if isinstance(hardware, GPUSpec) else get_gpu(DEFAULTS["gpu"] if hardware is None else hardware,
                                                                     table)
    with keyword_refusal("tp", tp):        # tp=3: tensor-parallel size 3 does not divide the 32 attention heads
        return kept_with_tp(spec, tp), gpu     # kept per (spec object, tp): pcs.engine.keptsetup


def _tier_bytes_and_links(spec, gpu, bs: int, tier_specs, links, tp: int, table, util=None, reserve=None):
    """The tiers with the GPU tier sized, the group's bytes per block per tier (GPU Reserved, lower
    Serialized), each lower tier's link, and the deployment summary (:mod:`pcs.engine.deployment`)."""
    layouts = ["reserved"] + ["serialized"] * (len(tier_specs) - 1)
    bb = [kept_group_block_bytes(spec, bs, lay) for lay in layouts]
    tier_specs, deployment = resolve_gpu_tier(spec, gpu, tp, tier_specs, bb[0].total_bytes, util, reserve)
    link_specs = [None] + [_resolve_link(t.name, (links or {}).get(t.name, t.link), tp, table)
                           for t in tier_specs[1:]]
    return tier_specs, bb, [b.total_bytes for b in bb], link_specs, deployment


def _block_bytes(spec, bs: int, layout: str):
    """The TP group's bytes per block (``spec`` is the ``with_tp`` spec; kept per spec object, block size and
    layout: :func:`pcs.engine.keptsetup.kept_group_block_bytes`)."""
    return kept_group_block_bytes(spec, bs, layout)


def _bytes_per_token(spec) -> int:
    """The TP group's Reference bytes per token (``spec`` is the ``with_tp`` spec)."""
    return group_bytes_per_token(spec, "reference")


def _compute_model(spec, gpu, tp: int, bs: int):
    """pcs.compute.ComputeModel with its default KV-read bytes (reserved_bytes of the TP spec), memoised; the
    model itself kept per (spec, gpu, tp, block size) for the next replay in the process (all frozen: a call
    with equal arguments gets an equal model; its construction was ~0.3 M instructions a replay). A spec or GPU
    that cannot be hashed (a caller's own object) gets a model of its own."""
    try:
        return _kept_compute_model(spec, gpu, tp, bs)
    except TypeError:
        return _kept_compute_model.__wrapped__(spec, gpu, tp, bs)


@functools.lru_cache(maxsize=16)
def _kept_compute_model(spec, gpu, tp: int, bs: int):
    """:func:`_compute_model`'s model, kept per (spec, gpu, tp, block size)."""
    from pcs.compute import ComputeModel
    from pcs.model.footprint import reserved_bytes_of

    kv_read = functools.lru_cache(maxsize=None)(reserved_bytes_of(spec.with_tp(tp), bs))
    return ComputeModel(spec, gpu, tp=tp, block_size=bs, kv_read_bytes=kv_read)


@functools.lru_cache(maxsize=16)
def _kept_step_cost(compute):
    """``compute.step_cost()`` of a :class:`pcs.compute.ComputeModel` (frozen, so equal models give equal
    costs), kept for the next replay in the process (~0.5 M instructions a replay)."""
    return compute.step_cost()


def _scheduler_summary(out, ordered: dict, no_cache_parts, run):
    """The summary's ``scheduler`` object of a step-scheduler run, else None; ``ordered``: the sorted TTFT
    columns (:func:`pcs.engine.summary.ordered_columns`), their percentiles read off them; ``no_cache_parts``:
    the no-cache run's :class:`pcs.engine.runparts.LatencyParts`; ``run``: the run's own
    :class:`pcs.engine.runparts.RunParts` made on a worker (:func:`_run_parts`), or None."""
    if out.scheduler is None:
        return None

    cfg, stats, no_cache, no_cache_stats = out.scheduler
    return scheduler_summary(out.result.columns, stats, cfg, (no_cache.columns, no_cache_stats),
                             (LatencyParts(ordered["ttft_s"]) if run is None else run.latency, no_cache_parts),
                             None if run is None else run.waits)


def _run_parts(out):
    """The step-scheduler run's own :class:`pcs.engine.runparts.RunParts`, made on a worker as its loop closed
    (``EngineResult.latency``: a :class:`pcs.engine.runparts.PendingParts`, waited for here), or None (made by
    the summary itself: no scheduler, the Python loop, threads off)."""
    pending = out.result.latency if out.scheduler is not None else None
    return None if pending is None else pending.get()


def _no_cache_parts(out):
    """The step scheduler's no-cache run's :class:`pcs.engine.runparts.LatencyParts`: made on the worker that
    closed it (``EngineResult.latency``), else here; None without that run."""
    if out.scheduler is None:
        return None

    no_cache = out.scheduler[2]
    return no_cache.latency if no_cache.latency is not None else latency_parts(no_cache.columns)


@dataclass(frozen=True, slots=True)
class _Options:
    """The run-wide options of :func:`replay` after defaults and checks."""

    timing: str
    policy: str
    write_policy: str
    tp: int
    engine: str
    native: str | None
    compute_mode: str | None = None


def refuse_str_compute(compute: Any) -> None:
    """UserError when ``compute`` is a str: the compute model goes in ``compute=``, the mode
    ("step", "sequential", "infinite") in ``compute_mode=`` (the CLI's --compute)."""
    if isinstance(compute, str):
        raise UserError(f"compute= takes a compute model (pcs.compute.ComputeModel), got {shown_repr(compute)}; "
                         f"the scheduler mode goes in compute_mode= (valid: {', '.join(COMPUTE_MODES)})")


#: :func:`replay`'s one-value text arguments: None or a str
_TEXT_ARGS = ("timing", "write_policy", "engine", "native", "dtype", "compute_mode", "hybrid_kv_cache_manager",
              "mamba_cache_mode")
#: :func:`replay`'s arguments that take a name or an object (a ModelSpec, a policy, bytes), never a collection
_NAME_ARGS = ("model", "hardware", "policy", "kv_reserve")


def _check_api_args(args: dict[str, Any]) -> None:
    """The types of :func:`replay`'s arguments (``args``: its keywords as given): a str ``compute``, the API
    objects (:func:`check_api_objects`), and (pcs.argcheck.check_text) each of :data:`_TEXT_ARGS` None or a str,
    each of :data:`_NAME_ARGS` and each value of ``links`` / ``tier_policies`` never a list, tuple, set or dict
    (``str(['lru'])`` is not a policy name).

    Raises:
        UserError; ArgumentTypeError naming the argument, e.g. ``timing= must be a string, got list: [...]``.
    """
    refuse_str_compute(args["compute"])
    check_api_objects(args["rules"], args["hardware_table"], args["progress"])
    for name in _TEXT_ARGS:
        check_text(args[name], name)
    names = {name: args[name] for name in _NAME_ARGS}
    for label in ("links", "tier_policies"):
        if isinstance(args[label], Mapping):
            names.update({f"{label}[{shown_repr(k)}]": v for k, v in args[label].items()})
    for name, value in names.items():
        check_text(value, name, "a name or a value, not a collection", others=(object,))


def _options(timing, policy, write_policy, tp, engine, native, compute_mode=None) -> _Options:
    """Fill in :data:`DEFAULTS` and check each option (UserError naming the option and its valid values)."""
    timing = timing or DEFAULTS["timing"]
    with keyword_refusal("timing", timing):
        check_timing(timing)
    tp = check_int(DEFAULTS["tp"] if tp is None else tp, "tp", lo=1, hi=MAX_TP)
    write_policy = write_policy or DEFAULTS["write_policy"]
    with keyword_refusal("write_policy", write_policy):
        check_write_policy(write_policy)
    with keyword_refusal("engine", engine):
        select.canonical(engine)
    if native is not None and native not in _native.MODES:
        with keyword_refusal("native", native):
            raise UnknownNameError("native", native, _native.MODES)
    if compute_mode is not None and compute_mode not in COMPUTE_MODES:
        with keyword_refusal("compute_mode", compute_mode):
            raise UnknownNameError("compute mode", compute_mode, COMPUTE_MODES)
    with keyword_refusal("policy", policy or DEFAULTS["policy"]):
        policy = canonical_spec(policy or DEFAULTS["policy"])      # an alias is input only (the JSON names slru)
    return _Options(timing, policy, write_policy, tp, engine, native, compute_mode)


def _compute_mode(opts: _Options, time_model, notes: list) -> _Options:
    """The compute mode filled in: ``step`` unless a ``compute`` without ``step_cost()`` was given (a note)."""
    if opts.compute_mode is not None:
        return opts
    if hasattr(time_model.compute, "step_cost"):
        return dataclasses.replace(opts, compute_mode=DEFAULTS["compute_mode"])
    if opts.timing == "modeled":
        notes.append("compute infinite: the given compute model has no step_cost(), which the step scheduler needs")
    return dataclasses.replace(opts, compute_mode="infinite")


def row_limits(timing: str | None, compute_mode: str | None, compute: Any) -> RowLimits:
    """The bounds a run's trace reader checks beyond its own (:mod:`pcs.trace.rowlimits`), known before the trace
    is read, so that every pass of the run reads the same rows: the step scheduler's
    (:data:`~pcs.trace.rowlimits.STEP_LIMITS`) when it times the run -- modeled timing (``timing`` None: the
    default), compute mode ``step`` given or by default, as :func:`_compute_mode` fills it in (``compute``: the
    checked compute model, None: the preset's, which has ``step_cost()``) --, else none (:func:`_step_setup`)."""
    mode = compute_mode or ("step" if compute is None or hasattr(compute, "step_cost") else "infinite")
    return STEP_LIMITS if (timing or DEFAULTS["timing"]) == "modeled" and mode == "step" else NO_LIMITS


def limited_source(trace: Any, replay_kwargs: dict) -> Any:
    """``trace`` made re-readable (:func:`pcs.trace.batches.reiterable`) and read with the row bounds
    (:func:`row_limits`) of a run with ``replay_kwargs`` (``pcs.replay``'s keywords: ``timing``, ``compute_mode``,
    ``compute``), for callers that read one trace for several runs of one timing (``pcs.compare``'s variants,
    ``pcs.fleet_replay``'s instances) before any read.

    Raises:
        UserError: a ``compute`` that is not a compute model (:func:`pcs.engine.computecheck.checked_compute`)."""
    from pcs.engine.computecheck import checked_compute

    kw = replay_kwargs
    return with_limits(reiterable(trace), row_limits(kw.get("timing"), kw.get("compute_mode"),
                                                     checked_compute(kw.get("compute"))))


def _step_setup(opts: _Options, scheduler, time_model, gpu) -> StepSetup | None:
    """The step scheduler's setup for modeled timing with ``compute_mode="step"``, else None.

    Raises:
        UserError: a ``scheduler`` that is not a SchedulerConfig; a compute model without ``step_cost()``.
    """
    if scheduler is not None and not isinstance(scheduler, SchedulerConfig):
        raise UserError(f"scheduler must be a pcs.engine.schedconfig.SchedulerConfig, got {shown_repr(scheduler)}")
    if opts.timing != "modeled" or opts.compute_mode != "step":
        return None
    step_cost = getattr(time_model.compute, "step_cost", None)
    if step_cost is None:
        raise UserError("compute_mode 'step' needs a compute model with step_cost() (pcs.compute.ComputeModel); "
                         "use compute_mode='infinite' with measured prefill times")

    try:
        cost = _kept_step_cost(time_model.compute) if type(time_model.compute) is ComputeModel else step_cost()
    except TypeError:    # a field that cannot be hashed: its own cost
        cost = step_cost()
    return StepSetup(scheduler or SchedulerConfig(), gpu, cost)


def _checked_step(opts, scheduler, time_model, gpu, gpu_tier, block_bytes: int):
    """:func:`_step_setup` (None without the step scheduler), then, with it, :func:`_refuse_empty_gpu`."""
    step = _step_setup(opts, scheduler, time_model, gpu)
    if step is not None:
        _refuse_empty_gpu(gpu_tier, block_bytes)
    return step


def _refuse_empty_gpu(gpu_tier, block_bytes: int) -> None:
    """A GPU tier of 0 blocks cannot run a request: refused under the step scheduler, as vLLM refuses to start
    with no KV cache blocks ("No available memory for the cache blocks", vllm/v1/core/kv_cache_utils.py).

    Raises:
        UserError: the GPU tier holds no block.
    """
    blocks = units.capacity_to_blocks(gpu_tier.capacity_bytes, gpu_tier.capacity_blocks, block_bytes,
                                      f"tier {shown_repr(gpu_tier.name)}")
    if blocks < 1:
        raise UserError(f"the {gpu_tier.name} tier holds 0 blocks, and the step scheduler cannot run a request "
                         "without KV space (vLLM refuses to start with no cache blocks); give the GPU tier at "
                         "least one block, or use compute_mode='infinite' / timing='sequential' to count hits alone")


def _context(source, spec, gpu, opts: _Options, dtype, bs: int, rules, tier_specs, bb, link_specs,
             protected_share) -> dict:
    """The run context :func:`pcs.engine.summary.build_summary` reads."""
    return dict(trace=getattr(source, "name", None) or str(getattr(source, "path", "<requests>")), model=spec,
                gpu=gpu, tp=opts.tp, dtype=dtype,
                block_size=bs, timing=opts.timing, policy=opts.policy, write_policy=opts.write_policy, rules=rules,
                tier_specs=tier_specs, block_bytes=bb, links=link_specs, protected_share=protected_share,
                reference_block=_block_bytes(spec, bs, "reference"),
                reference_bytes_per_token=_bytes_per_token(spec))


def _optional(check, value, name: str, **bounds):
    return None if value is None else check(value, name, **bounds)


def _checked_numbers(protected_share, gpu_memory_utilization, gap_oracle, swa_ratio, mamba_ratio,
                     residency_step_s) -> tuple:
    """:func:`replay`'s numeric and flag keywords, in this order, checked by :mod:`pcs.argcheck` with the CLI's
    ranges (``--protected-share`` [0, 1], ``--gpu-memory-utilization`` (0, 1], the hybrid ratios (0, 1e6],
    ``--residency-step`` (0, 1e9] s) and returned as Python float/bool (numpy scalars accepted; None kept).

    Raises:
        UserError: naming the keyword (``gap_oracle="yes"``, ``protected_share=True`` are refused).
    """
    return (_optional(check_real, protected_share, "protected_share", lo=0, hi=1),
            _optional(check_real, gpu_memory_utilization, "gpu_memory_utilization", lo=0, lo_open=True, hi=1),
            check_flag(gap_oracle, "gap_oracle"),
            _optional(check_real, swa_ratio, "swa_full_tokens_ratio", lo=0, lo_open=True, hi=1e6),
            _optional(check_real, mamba_ratio, "mamba_full_memory_ratio", lo=0, lo_open=True, hi=1e6),
            _optional(check_real, residency_step_s, "residency_step_s", lo=0, lo_open=True, hi=1e9))


def refuse_two_shares(policy: str, tier_policies: Mapping[str, str] | None, protected_share: float | None) -> None:
    """A protected share given inline (``slru:protected_share=0.2`` in ``policy`` or a per-tier policy) and by
    ``protected_share`` (``--protected-share``) with a different value is refused: neither silently wins.

    Raises:
        UserError: naming both places and both values.
    """
    if protected_share is None:
        return
    specs = [("policy", policy)] + [(f"tier_policies entry {shown_repr(t)}:", p) for t, p in (tier_policies or {}).items()]
    for where, spec in specs:
        inline = parse_policy_spec(spec)[1].get("protected_share")
        if inline is not None and inline != protected_share:
            raise UserError(f"protected share given twice: {shown_repr(inline)} in {where} {shown_repr(spec)} and {shown_repr(protected_share)} in "
                             "protected_share; give it once")


@keyword_refusals
@document
def replay(trace: Any = None, *, model: Any = None, hardware: Any = None, tp: int | None = None,
           dtype: str | None = None, tiers: Sequence[str | TierSpec] | None = None, policy: str | None = None,
           tier_policies: Mapping[str, str] | None = None, links: Mapping[str, Any] | None = None,
           protected_share: float | None = None, timing: str | None = None, write_policy: str | None = None,
           rules: BlockRules = BlockRules(), compute: Any = None, hardware_table: Any = None,
           progress: Callable[[int], None] | None = None, engine: str = "auto",
           native: str | None = None, gpu_memory_utilization: float | None = None,
           kv_reserve: Any = None, admit: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
           gap_oracle: bool = False, compute_mode: str | None = None,
           scheduler: SchedulerConfig | None = None, hybrid_kv_cache_manager: str | None = None,
           swa_full_tokens_ratio: float | None = None, mamba_full_memory_ratio: float | None = None,
           mamba_cache_mode: str | None = None, residency_step_s: float | None = None) -> ReplayResult:
    """Replay a trace through a multi-tier prefix cache.

    Every keyword, the result and the errors: :data:`pcs.engine.replaydoc.ARGS` and ``RAISES``,
    appended here by :func:`pcs.engine.replaydoc.document` (``help(pcs.replay)`` shows them).
    """
    links, tier_policies = folded_keys(links, "links"), folded_keys(tier_policies, "tier_policies")
    numbers, opts, tier_specs, spec, gpu = _checked_args(locals())     # first: every check that needs no trace
    (protected_share, gpu_memory_utilization, gap_oracle, swa_full_tokens_ratio, mamba_full_memory_ratio,
     residency_step_s) = numbers
    notes = _default_notes(model is None, hardware is None and tp is None, tiers is None)
    notes += list(getattr(hardware_table, "notes", ()))     # a hardware file's (pcs.hardware.HardwareTable)
    source = reiterable(trace)
    bs = _block_size(source)
    tier_specs, bb, bpb, link_specs, deployment = _tier_bytes_and_links(
        spec, gpu, bs, tier_specs, links, opts.tp, hardware_table, gpu_memory_utilization, kv_reserve)
    tier_policies = dict(tier_policies or {})
    compute = checked_compute(compute)
    time_model = TimeModel(compute if compute is not None else _compute_model(spec, gpu, opts.tp, bs), opts.native)
    source = with_limits(source, row_limits(opts.timing, opts.compute_mode, time_model.compute))   # before any read
    admit = _admit_map(admit, tier_specs)
    ctx = _policy_context(_policy_names(tier_specs, opts.policy, tier_policies), source, rules, time_model.compute, bs,
                          admit, gap_oracle)
    make = lambda: _build_tiers(tier_specs, bpb, opts.policy, tier_policies, protected_share, ctx, admit)  # noqa: E731
    opts = _compute_mode(opts, time_model, notes)
    hyb = (hybrid_kv_cache_manager, swa_full_tokens_ratio, mamba_full_memory_ratio, mamba_cache_mode)
    plan, sizes, hopts = _hybrid_plan(spec, bs, tier_specs, bb, *hyb)
    _check_groups(plan, ctx, admit, gap_oracle)
    no_effect = refuse_inapplicable_hybrid(spec, bs, dict(zip(HYBRID_OPTIONS, (*hyb, residency_step_s))))
    notes.extend(no_effect)
    step = _checked_step(opts, scheduler, time_model, gpu, tier_specs[0], bpb[0])
    context = _context(source, spec, gpu, opts, dtype, bs, rules, tier_specs, bb, link_specs, protected_share)
    passes, line = None, None
    if plan is not None:   # the comparison line (run first, inline); both share the trace's tier-independent passes
        frozen = functools.partial(_build_tiers, _line_tiers(tier_specs, sizes, bb), bpb, opts.policy,
                                   tier_policies, protected_share, ctx, admit)   # fixed before bpb is the pages'
        passes, line = _full_attention_line(source, rules, time_model, frozen, opts, link_specs, bpb, step, context)
        make, bpb = _hybrid_run(plan, spec, bs, tier_specs, bb, (sizes, hopts), opts, tier_policies,
                                protected_share, context, notes)
    out = _blame_longest_output(source, lambda: _run_beside_line(line, context, lambda: run_replay(
        source if passes is None else passes.source, rules, time_model, make, opts.timing, opts.write_policy,
        link_specs, bpb, opts.engine, opts.native, progress, step, plan,
        60.0 if residency_step_s is None else residency_step_s, passes)))
    if gap_oracle:
        context["oracle_hit_ratio"] = _oracle_hit_ratio(source, rules, time_model, tier_specs, bpb, ctx, opts,
                                                        link_specs, step)
    return _result(out, _summarise(out, context, opts), notes, deployment, spec, model is None, source)


def _checked_args(k: Mapping[str, Any]) -> tuple:
    """The checks :func:`replay` makes before it reads the trace, in this order, the one place they live
    (:func:`replay`, :func:`check_replay` and through it a sweep's plan and :func:`pcs.fleet.fleet_replay` call
    it): the arguments' types (:func:`_check_api_args`), the numbers and flags (:func:`_checked_numbers`),
    timing / policy / write policy / tp / engine / native / compute mode, the tier list (GPU tier first, only
    it ``auto``, distinct names, per-tier option names), two protected shares, each tier's eviction policy and
    admission kinds (names, options and values, as the run builds them: :func:`_check_policies`), model, dtype,
    hardware and each lower tier's link (:func:`_check_links`).

    Args:
        k: every keyword of :func:`replay` by name (its ``locals()`` on entry, or bound with defaults).
    Returns:
        (the numbers as :func:`_checked_numbers` returns them, :class:`_Options`, the tier specs, the model's
        spec, the GPU).
    Raises:
        UserError: (ArgumentTypeError, UnknownNameError, PolicyError...) the first check that fails, its message.
    """
    _check_api_args(k)
    numbers = _checked_numbers(k["protected_share"], k["gpu_memory_utilization"], k["gap_oracle"],
                               k["swa_full_tokens_ratio"], k["mamba_full_memory_ratio"], k["residency_step_s"])
    opts = _options(k["timing"], k["policy"], k["write_policy"], k["tp"], k["engine"], k["native"],
                    k["compute_mode"])
    tier_specs = _tier_specs(k["tiers"], k["tier_policies"], k["links"])
    refuse_two_shares(opts.policy, k["tier_policies"], numbers[0])
    _check_policies(tier_specs, opts.policy, k["tier_policies"], numbers[0], k["admit"])
    spec, gpu = _model_and_gpu(k["model"], k["dtype"], k["hardware"], k["hardware_table"], opts.tp)
    _check_links(tier_specs, k["links"], k["hardware_table"], _tier_list(k["tiers"]))
    return numbers, opts, tier_specs, spec, gpu


def _check_links(tier_specs: Sequence[TierSpec], links: Mapping[str, Any] | None, table: Any,
                 items: Sequence[Any] = ()) -> None:
    """Each lower tier's link resolved as the run resolves it (:func:`_resolve_link`, one GPU), so a bad preset
    name or bandwidth (``links={'cpu': 'pcie-gen9'}``) is refused before the trace is read and before a sweep's
    first point runs.

    Raises:
        UserError: :func:`_resolve_link`'s refusal (its ``refused_value`` ``TIER=VALUE``, by which a sweep plan
            names the line the link is written on); a tier with no link named and none by default is led by its
            item of ``tiers=`` (``items``), ``tiers[1]='hôte=1GB': no default link for tier 'hôte'; ...``.
    """
    for i, t in enumerate(tier_specs[1:], 1):
        link = (links or {}).get(t.name, t.link)
        try:
            _resolve_link(t.name, link, 1, table)
        except UserError as exc:
            if link is None and i < len(items) and isinstance(items[i], str):
                lead_with(exc, f"tiers[{i}]={quoted(items[i], show=repr)}")
                exc.refused_value = items[i]          # a plan's line: the tier's entry
            raise _entry_refused(exc, t.name, link) from None


@keyword_refusals
def check_replay(**kwargs: Any) -> None:
    """The checks :func:`replay` makes before it reads the trace, in its order (the same function,
    :func:`_checked_args`), without running anything: the same first error for the same arguments.

    Args:
        **kwargs: :func:`replay`'s keywords (``trace`` is not read).
    Raises:
        UserError: as :func:`replay` raises for those (its message); TypeError: an unknown keyword.
    """
    a = inspect.signature(replay).bind(None, **kwargs)
    a.apply_defaults()
    for what in ("links", "tier_policies"):
        a.arguments[what] = folded_keys(a.arguments[what], what)
    _checked_args(a.arguments)


def folded_keys(mapping: Any, what: str) -> Any:
    """``mapping`` (``links=``, ``tier_policies=``) with each str key stripped and case-folded, as a tier's name is
    in ``tiers=``, ``admit=`` and on the command line (:func:`parse_assignment`): ``{'CPU': 'fifo'}`` names tier
    ``cpu``; anything else as given (its type is :func:`_check_api_args`'s to refuse).

    Raises:
        UserError: two keys that name one tier (``'CPU'`` and ``'cpu'``), as a tier given twice is refused.
    """
    if not isinstance(mapping, Mapping):
        return mapping
    out: dict[Any, Any] = {}
    given: dict[Any, Any] = {}
    for k, v in mapping.items():
        key = k.strip().lower() if isinstance(k, str) else k
        if key in out:
            raise UserError(f"{what}= names tier {shown_repr(key)} twice ({shown_repr(given[key])} and "
                            f"{shown_repr(k)}: tier names are case-folded); give each tier once")
        out[key], given[key] = v, k
    return out


def _past_context_note(spec, columns, default_model: bool) -> list[str]:
    """A note when requests' prompt + output run past the model's context (``max_position_embeddings``, as
    :func:`pcs.model.footprint.past_context` says for one sequence): how many, how many by the prompt alone,
    the longest prompt; pcs replays them anyway (bytes and times are what such a sequence would take)."""
    ctx = getattr(spec, "max_context_tokens", None)
    if not ctx or not len(columns["prompt_tokens"]):
        return []

    prompt = np.asarray(columns["prompt_tokens"], dtype=np.int64)
    total = prompt + np.asarray(columns["output_tokens"], dtype=np.int64)
    over = int(np.count_nonzero(total > ctx))
    if not over:
        return []
    stand_in = ("; the default model stands in for a long-context one: give --model for the served one"
                if default_model else "")
    return [f"{over:,} of {units.format_counted(len(prompt), 'request')} {'runs' if over == 1 else 'run'} past the "
            f"model's context, {ctx:,} tokens (config.json "
            f"max_position_embeddings), prompt + output ({int(np.count_nonzero(prompt > ctx)):,} by the prompt "
            f"alone, longest prompt {int(prompt.max()):,}): replayed anyway, as if the model took them"
            f"{stand_in}"]


def _blame_longest_output(source: Any, run: Callable[[], Any]) -> Any:
    """``run()``; a :class:`pcs.engine.schedstats.SpanError` (the run past 366 days) gets the trace's longest
    ``output_length`` added: its request (1-based, in the trace's order) and its tokens -- one huge output is the
    usual cause, decode steps at a context that long being that slow."""
    try:
        return run()
    except SpanError as exc:
        top, where, first = -1, 0, 0
        for b in as_batches(source):
            if len(b.output_tokens) and int(b.output_tokens.max()) > top:
                top, where = int(b.output_tokens.max()), first + int(b.output_tokens.argmax()) + 1
            first += len(b.output_tokens)
        name = getattr(source, "name", None) or "the trace"
        raise SpanError(f"{exc}; {name}'s longest output_length is {top:,} tokens (its request {where:,} of "
                        f"{first:,}, in the trace's order)") from None


def _hybrid_run(plan, spec, bs: int, tier_specs, bb, sized: tuple, opts, tier_policies, protected_share,
                context: dict, notes: list) -> tuple[Callable[[], list], list[int]]:
    """The hybrid run's pool factory and bytes per page of each tier (``plan``'s pools, :func:`_build_pools`);
    ``context`` gains the plan and the other dtype's plan (``hybrid``, ``hybrid_alt``), ``notes`` the plan's;
    ``sized``: the tiers' bytes and the checked options, as :func:`_hybrid_plan` returned them."""
    context.update(hybrid=plan, hybrid_alt=_alt_plan(spec, bs, tier_specs, bb, *sized))
    notes += list(plan.notes)
    return (lambda: _build_pools(plan, tier_specs, opts.policy, tier_policies, protected_share),
            [pb[0] for pb in plan.page_bytes])


def _run_beside_line(line: "_Line | None", context: dict, run: Callable[[], Any]) -> Any:
    """``run()``'s outcome; with a comparison ``line``, its summary stored as ``context["full_attention"]``, and
    when ``run`` raises, the line's own error first (as when it ran before the run), else ``run``'s."""
    try:
        out = run()
    except BaseException:
        if line is not None:
            line.close_first()
        raise
    if line is not None:
        context["full_attention"] = line.join()
    return out


def _result(out, summary, notes: list, deployment: dict, spec, default_model: bool, source: Any = None) -> ReplayResult:
    """The replay's result: ``summary`` with every note (the set-up's, the requests past ``spec``'s context, the
    deployment's, the load's, a hybrid residency series cut at its point limit, then the caveats of the trace read,
    ``source``: its synthetic prefix reuse, the bad lines it skipped -- :func:`pcs.trace.api.trace_notes`, in the
    API's words, appended last; ``pcs replay`` and a sweep put them in their own words,
    :func:`pcs.report.tiercheck.without_trace_notes`) and the deployment, beside the per-request columns and
    ceilings."""
    notes = (notes + _past_context_note(spec, out.result.columns, default_model) + deployment.pop("notes")
             + _load_notes(summary, out))
    cut = out.state.hybrid.cut_note() if getattr(out.state, "hybrid", None) is not None else None
    notes += [cut] if cut else []
    notes += list(trace_notes(source)) if source is not None else []
    summary = dataclasses.replace(summary, notes=tuple(notes), deployment=deployment)
    return ReplayResult(summary, columns=out.result.columns, ceilings=(out.single, out.single_with_decode, out.decode))


def _full_attention_line(source, rules, time_model, make, opts, link_specs, bpb, step,
                         context: dict) -> tuple[SharedPasses, "_Line"]:
    """Begin a hybrid model's comparison line (every layer full attention, docs/semantics.md §13.1): its replay
    and summary, run first and inline (``Beside(False)``). On a worker beside the hybrid replay it made the whole
    call slower on a 2-core machine (three threads on two cores: gemma-3-27b 0.86-0.98 against 1.08-1.19 M block
    accesses per wall-s, benchmarks/bench_hybrid.py, docs/performance.md); the thread-safe passes and the
    frozen inputs below keep a worker possible. Returns the trace's shared passes (each made once, by whichever run asks first:
    :mod:`pcs.engine.passes`) and the :class:`_Line` whose ``join`` gives the line's summary.

    Threads: the line reads the decoded trace, the frozen rules, options and time model (its chunks come from the
    passes, made under their lock), a copy of ``context`` taken now, and builds its own tiers (``make``: fresh
    ``lru`` tiers; a policy that reads the trace is refused on hybrid models, ``_check_groups``); its compiled
    step loop releases the GIL. So its summary is the one of running it first (the JSON of a hybrid replay is
    unchanged: tests/engine/test_passes.py)."""
    passes = SharedPasses(source)
    ctx = dict(context)
    line = _Line(Beside(False))
    line.side.start(lambda: _summarise(run_replay(passes.source, rules, time_model, make, opts.timing,
                                                  opts.write_policy, link_specs, bpb, "auto", opts.native, None,
                                                  step, passes=passes, comparison=True), ctx, opts))
    return passes, line


class _Line:
    """The comparison line running beside the hybrid replay (:func:`_full_attention_line`)."""

    def __init__(self, side: Beside) -> None:
        self.side = side

    def join(self) -> Any:
        """The line's summary (its exception raised here); the worker thread ends."""
        try:
            return self.side.join()
        finally:
            self.side.close()

    def close_first(self) -> None:
        """The hybrid run failed: wait for the line and raise its exception if it has one (inline the line ran
        first, so its error is the one the user saw), else drop its outcome; the worker thread ends."""
        self.join()


def _check_groups(plan, ctx, admit, gap_oracle: bool) -> None:
    """Refusals that depend on the model's cache groups: with several (``plan``, a hybrid model) those of
    :func:`_refuse_on_cache_groups` (hybrid options that cannot apply: :func:`refuse_inapplicable_hybrid`).

    Raises:
        UserError: that refusal.
    """
    if plan is not None:
        _refuse_on_cache_groups(ctx, admit, gap_oracle)


#: Each hybrid option: the managers it is an option of and the cache-group rules it sizes (None: any hybrid
#: model), from the engines' docs in :mod:`pcs.engine.hybrid` (vLLM CacheConfig, SGLang ServerArgs).
_HYBRID_OPTIONS = {
    "hybrid_kv_cache_manager": (None, None),
    "swa_full_tokens_ratio": (("sglang",), ("window", "chunk")),
    "mamba_full_memory_ratio": (("sglang",), ("state",)),
    "mamba_cache_mode": (("vllm", "sglang"), ("state",)),   # the checkpoints of both managers
    "residency_step_s": (("vllm", "sglang"), None),          # the step of the per-component resident-bytes series
}


#: The keyword names of :func:`replay`'s hybrid-model options, in the order ``replay`` passes them on.
HYBRID_OPTIONS = ("hybrid_kv_cache_manager", "swa_full_tokens_ratio", "mamba_full_memory_ratio", "mamba_cache_mode",
                  "residency_step_s")


def refuse_inapplicable_hybrid(spec, block_size: int, given: Mapping[str, Any]) -> list[str]:
    """A hybrid option that cannot change the run is refused, in this one place: any of them but the manager
    on a model with one full-attention cache group (no per-component series either: ``residency_step_s``); an
    SGLang ratio under another manager or on a model without the layers it sizes; ``mamba_cache_mode`` without a
    state group; any but the manager itself with the manager ``disabled`` (the replay of a non-hybrid model).
    The manager itself (``vllm``, ``sglang`` or ``disabled``) on a model without hybrid groups is the same run
    (every manager replays one full-attention group alike), so a sweep may cross models with that axis: a note
    says ``vllm`` or ``sglang`` has no effect (``disabled`` asks for the full-attention replay such a model
    already is: no note).

    Args:
        spec: the model; block_size: the replay's B; given: keyword -> value as passed (None = not given).
    Returns:
        the notes of options given that have no effect (``vllm`` / ``sglang`` on a non-hybrid model), else [].
    Raises:
        UserError: naming the keyword (and its flag) and why it does not apply.
    """
    groups = _hybrid.cache_groups(spec, block_size, block_size, False)
    rules = {g.rule for g in groups}
    manager = given.get("hybrid_kv_cache_manager") or _hybrid.DEFAULT_MANAGER
    notes = []
    if given.get("hybrid_kv_cache_manager") not in (None, "disabled") and not _hybrid.is_hybrid(groups):
        notes.append(f"hybrid KV cache manager {shown_repr(manager)}: no effect, {spec.name} has no hybrid cache groups "
                     "(one full-attention group, replayed alike by every manager)")
    for key, (managers, needs) in _HYBRID_OPTIONS.items():
        if given.get(key) is None or key == "hybrid_kv_cache_manager":
            continue   # the manager alone never changes a non-hybrid model's run (the note above)
        what = key   # the CLI names the flag (pcs.cli.common.option_names)
        if not _hybrid.is_hybrid(groups):
            raise UserError(f"{what} applies to hybrid models, and {spec.name} replays as one full-attention "
                             "cache group")
        if managers is not None and manager not in managers:
            raise UserError(f"{what} is an option of the {'/'.join(managers)} hybrid KV cache manager, and this "
                             f"run uses {shown_repr(manager)}")
        if needs is not None and not rules & set(needs):
            raise UserError(f"{what} sizes the {'/'.join(needs)} cache group, which {spec.name} does not have "
                             f"(its groups: {', '.join(sorted(rules))})")
    return notes


def _oracle_hit_ratio(source, rules, time_model, tier_specs, bpb, ctx, opts, link_specs, step) -> float:
    """The same tiers and timing with the Belady oracle on every tier (``--gap-oracle``,
    docs/semantics.md §12): its real hit ratio (token-weighted, 0-1)."""
    make_oracle = lambda: _build_tiers(tier_specs, bpb, "belady", {}, None, ctx)  # noqa: E731
    return run_oracle(source, rules, time_model, make_oracle, opts.timing, opts.write_policy, link_specs, bpb,
                      step, opts.native).ledger.hit_ratio


def _refuse_on_cache_groups(ctx: Any, admit: Any, gap_oracle: bool) -> None:
    """A hybrid model's cache groups (docs/semantics.md §3.1, §15) run lru, slru, fifo, s3fifo, sieve, lfu, arc,
    2q or a plug-in that does not read the trace (arc and 2q since GroupHierarchy tells their ghost lists the
    incoming pages, as the reference); no admission policy, ``retain`` included (its retained keys come from the
    trace pre-pass over whole-model blocks, not pages), and no ``gap_oracle``.

    Raises:
        UserError: a policy that reads the trace (``ctx`` is its pre-pass), an admission policy, or
            ``gap_oracle``.
    """
    if ctx is not None or admit or gap_oracle:
        raise UserError("a hybrid model's cache groups run lru, slru, fifo, s3fifo, sieve, lfu, arc, 2q or a "
                         "plug-in policy (pcs policies) without admission policies (retain included) or "
                         "gap_oracle (policies that read the trace, gdsf and belady, and admission do not run "
                         "on cache groups yet)")


def _load_notes(summary, out) -> list[str]:
    """The notes of the run's load: every truncated request by cause (:func:`pcs.engine.truncation.truncation_note`,
    docs/semantics.md §5, every timing) and, under the step scheduler, the timing comparison's caveat when most
    requests were truncated (:func:`pcs.engine.truncation.truncated_timing_note`) and saturation
    (:func:`pcs.engine.schedresult.saturation_note`)."""
    sc = summary.scheduler
    outgrown = out.scheduler[1].requests_outgrown if sc is not None else 0
    unit, capacity = "pages" if summary.hybrid is not None else "blocks", summary.tiers[0].capacity_blocks
    note = truncation_note(summary.requests_truncated, summary.requests, outgrown, capacity, unit)
    notes = [note] if note else []
    if sc is None:
        return notes
    note = truncated_timing_note(summary.requests_truncated, summary.requests, capacity, unit)
    notes += [note] if note else []

    note = saturation_note(sc.utilisation_over_time, sc.utilisation_bin_s)
    return notes + [note] if note else notes


def _hybrid_sizes(spec, bs: int, tier_specs, bb, opts: tuple) -> list[tuple[int | None, None]]:
    """Each tier's bytes for :func:`pcs.engine.hybrid.plan_hybrid`: as given, or a tier given in blocks (``N``
    blocks) N x the bytes one block of the model takes in that tier's pages, page padding included
    (``HybridPlan.block_layout``, docs/semantics.md §13.1) -- the block ``pcs deploy`` counts its GPU-tier blocks
    in (:func:`pcs.model.capacity.gpu_block_bytes`), so ``--tier gpu=<deploy's blocks>blocks`` is deploy's GPU."""
    return _sizes_and_empty_plan(spec, bs, tier_specs, bb, opts)[0]


def _sizes_and_empty_plan(spec, bs: int, tier_specs, bb, opts: tuple) -> tuple[list, bool]:
    """(:func:`_hybrid_sizes`, whether the plan it made of empty tiers was None): ``plan_hybrid`` returns None
    for a model that is not hybrid, or with the manager ``disabled``, whatever the tiers' names and sizes, so
    :func:`_hybrid_plan` then skips its second plan (False when no plan was made: every tier in bytes)."""
    if all(t.capacity_bytes is not None for t in tier_specs):
        return [(t.capacity_bytes, None) for t in tier_specs], False
    empty = _hybrid.plan_hybrid(spec, bs, [t.name for t in tier_specs], bb, [(0, None)] * len(tier_specs), *opts)
    if empty is None:           # not hybrid: the plan is None whatever the sizes
        return [(t.capacity_bytes, t.capacity_blocks) for t in tier_specs], True
    from pcs.units import capacity_to_blocks

    out = []
    for j, t in enumerate(tier_specs):
        if t.capacity_bytes is not None:
            out.append((t.capacity_bytes, None))
            continue
        per = empty.block_layout(j)[0]
        capacity_to_blocks(None, t.capacity_blocks, per, f"tier {shown_repr(t.name)}")   # N x padded bytes within int64
        out.append((t.capacity_blocks * per, None))
    return out, False


def _line_tiers(tier_specs, sizes: list, bb) -> list[TierSpec]:
    """The tiers of a hybrid run's all-full-attention comparison line: the same hardware, so each tier the hybrid
    run's bytes (:func:`_hybrid_sizes`: a tier given in N blocks holds N x the hybrid run's padded block bytes)
    in whole blocks of the all-full model, floor(bytes / its bytes per block) (docs/hybrid.md; a tier in bytes
    is the same bytes for both runs already). gemma-3-27b TP 8, 512-token blocks, ``gpu=1641blocks``: 1,641 x
    293,601,280 B = 481,799,700,480 B, 1,852 all-full blocks of 260,046,848 B (not 1,641). A tier whose bytes
    hold a hybrid page but no all-full block (a state spread over several blocks makes the padded block the
    smaller) holds 0 blocks in the line instead of refusing the hybrid run ("smaller than one block").
    ``sizes``: :func:`_hybrid_sizes` of the run, as :func:`_hybrid_plan` returned them."""
    return [dataclasses.replace(t, capacity_bytes=None, capacity_blocks=b // whole.total_bytes)
            for t, (b, _), whole in zip(tier_specs, sizes, bb)]


def _hybrid_plan(spec, bs: int, tier_specs, bb, manager, swa, mamba, mode) -> tuple:
    """(plan, sizes, options): the hybrid plan of the run (:func:`pcs.engine.hybrid.plan_hybrid`), None for a
    model that is not hybrid; the tiers' bytes it was sized with (:func:`_hybrid_sizes`: a tier given in blocks
    holds that many padded blocks of the model), made once for the comparison line's tiers and the other dtype's
    plan too; the options as :func:`pcs.engine.hybrid.check_hybrid_options` filled them in."""
    opts = _hybrid.check_hybrid_options(manager, swa, mamba, mode)
    sizes, not_hybrid = _sizes_and_empty_plan(spec, bs, tier_specs, bb, opts)
    if not_hybrid:      # the plan of empty tiers was None: so is this one (made once, not twice)
        return None, sizes, opts
    return _hybrid.plan_hybrid(spec, bs, [t.name for t in tier_specs], bb, sizes, *opts), sizes, opts


def _alt_plan(spec, bs: int, tier_specs, bb, sizes: list, opts: tuple):
    """The hybrid plan of the payload lens' other dtype (:func:`pcs.engine.lens.alternative_dtype`): the
    run's tier bytes (``sizes``, :func:`_hybrid_sizes`: a tier given in blocks holds the run's padded blocks) in
    that dtype's pages (docs/semantics.md §13); ``opts``: the checked hybrid options."""
    from pcs.engine.hybrid import plan_hybrid
    from pcs.engine.lens import alternative_dtype
    from pcs.model import group_block_bytes

    alt = spec.with_dtype(alternative_dtype(spec.kv_dtype))
    abb = [group_block_bytes(alt, bs, "reserved" if j == 0 else "serialized") for j in range(len(bb))]
    return plan_hybrid(alt, bs, [t.name for t in tier_specs], abb, sizes, *opts)


def _summarise(out, context: dict, opts: _Options):
    """The typed summary of one run (:func:`pcs.engine.summary.build_summary`), engines named; the TTFT columns
    sorted once for the CDFs and every percentile of them (:func:`pcs.engine.summary.ordered_columns`)."""
    if out.result.ledger.num_requests == 0:
        raise UserError("the trace has no requests")
    no_cache = _no_cache_parts(out)
    context.update(out.engines,
                   compute=opts.compute_mode if opts.timing == "modeled" else None,
                   single_with_decode=out.single_with_decode,
                   no_cache_ttft_s=out.scheduler[2].columns["ttft_s"] if out.scheduler is not None else None)
    if "hybrid_lost_tokens" in out.baseline.columns and context.get("hybrid") is not None:
        from pcs.engine.summary import _values

        context["hybrid_baseline_lost_tokens"] = int(_values(out.baseline.columns["hybrid_lost_tokens"]).sum())

    def ordered_and_scheduler() -> None:
        # the run's sorts (made on a worker as its loop closed) waited for here, after the summary's parts that
        # need none of them are made (build_summary's ``then``)
        run = _run_parts(out)
        ordered = _summary.ordered_columns(out.result.columns,
                                           None if no_cache is None else no_cache.ttft_ordered, run)
        context.update(scheduler=_scheduler_summary(out, ordered, no_cache, run), ordered=ordered)

    return _summary.build_summary(out.result, out.state, out.baseline.ledger, out.single, out.ideal, context,
                         then=ordered_and_scheduler)
