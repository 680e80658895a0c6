"""``compare(trace, ...)``: one trace under several policies or tier lists, side by side.

Each variant is a full :func:`pcs.engine.api.replay`; :class:`CompareVariant`
keeps the few figures ``pcs compare`` puts side by side (and the whole
:class:`pcs.engine.result.ReplaySummary`, outside the JSON). With
``curve_capacities``, :class:`CompareCurveRow` gives the hit ratio per
capacity of one tier in sequential timing for each compared policy -- LRU
from the exact one-pass curve (:func:`pcs.curves.api.curve`, equal to the
sequential one-tier LRU replay, ``docs/semantics.md`` §14), the others
replayed once per capacity -- beside Belady and the single-sequence ceiling.
A new side-by-side figure is one entry of ``_VARIANT_COLUMNS`` -- ``take`` for
a figure of the summary (its type, unit and meaning come from
:class:`ReplaySummary`, :func:`pcs.schema.projection`), ``own`` plus a value in
:meth:`CompareVariant.from_summary` for a computed one -- and one row of the
table in :mod:`pcs.report.compare`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from pcs.argcheck import check_int, check_number_list
from pcs.blocks import BlockRules
from pcs.cache.policies import DEFAULT_POLICY, canonical_spec, policy_options
from pcs.engine.result import PayloadLens, ReplaySummary
from pcs.errors import UserError, shown_repr, keyword_refusal, keyword_refusals
from pcs.schema import common, field, own, projection, renamed, result, take, to_dict
from pcs.units import tier_arg

__all__ = ["compare", "CompareResult", "CompareVariant", "CompareCurveRow"]


def _takes_share(policy: str | None, tier_policies: dict[str, str] | None) -> bool:
    """Whether a run of ``policy`` (and per-tier policies) takes ``protected_share`` (slru)."""
    run = [policy or DEFAULT_POLICY, *(tier_policies or {}).values()]
    return any("protected_share" in policy_options(p) for p in run)


def _run_kwargs(policy: str | None, replay_kwargs: dict[str, Any], policies: list) -> dict[str, Any]:
    """One run's keywords: ``protected_share`` left out of the runs whose policies do not take it.

    When no compared run takes it, it is passed on as given, so
    :func:`pcs.replay` raises the registry's error
    (:func:`pcs.cache.policies.make_policies`).
    """
    tier_policies = replay_kwargs.get("tier_policies")
    if replay_kwargs.get("protected_share") is None or _takes_share(policy, tier_policies) or \
            not any(_takes_share(p, tier_policies) for p in policies):
        return replay_kwargs
    return dict(replay_kwargs, protected_share=None)


def _link_sum(s: ReplaySummary, key: str) -> float:
    return sum(getattr(lk, key) for lk in s.envelope.links)


def _slower_share(s: ReplaySummary) -> float | None:
    n = _link_sum(s, "restores")
    return _link_sum(s, "restores_slower_than_recompute") / n if n else None


#: The fields of :class:`CompareVariant`, in JSON order: most read from the variant's
#: :class:`ReplaySummary` (type, unit and meaning declared there), a few computed here.
_VARIANT_COLUMNS = (
    own("variant", "str", field("-", "label: the policy, and the tier list when several are compared")),
    own("policy", "str", field("-", "eviction policy of the variant")),
    own("tiers", "str", field("-", "the tiers as NAME=Nblocks, space-separated, GPU first; a hybrid model: the "
                                   "tiers as given (NAME=SIZE: passed back, the same pages; pages are not a "
                                   "capacity unit), the default tiers as they resolved (the deployment's GPU "
                                   "bytes, cpu=2TB)")),
    *take("hit_ratio", "single_sequence_hit_ratio"),
    *(renamed(f"gap.{term}", f"gap_{term}") for term in ("block_rounding", "capacity_eviction", "concurrency")),
    own("lower_tier_hit_ratio", "float | None",
        field("ratio", "hit ratio served by the tiers below the GPU (0 with one tier; null with no prompt "
                       "tokens, 0/0)")),
    *take("hit_ratio_per_tier"),
    *take("bytes.restored_bytes"),
    own("written_bytes", "int", field("bytes", "bytes written into the lower tiers")),
    own("share_slower", "float | None",
        field("ratio", "share of restores slower than recomputing; null without restores")),
    *take("envelope.ttft_p50_s", "envelope.ttft_p99_s", "envelope.wait_p99_s", "requests_truncated",
          "single_sequence_with_decode_hit_ratio"),
    own("admission", "str | None", field("-", "the variant's admission policies, TIER=KIND[:ARGS] joined by + "
                                              "(with --admit)", omit_none=True, default=None)),
    *take("oracle_hit_ratio"),
    *(renamed(f"gap.{term}", f"gap_{term}") for term in ("capacity", "policy", "hybrid_rules")),
    *take("engine", "engine_reason"),
    own("payload_lens", "PayloadLens | None",
        field("-", "the variant's KV dtype beside another, hits held fixed: pcs replay's payload_lens (lesson 2)",
              omit_none=True, default=None)),
    own("summary", "ReplaySummary | None", field("-", "the variant's whole replay summary", json=False,
                                                 default=None)),
)


@projection(ReplaySummary, _VARIANT_COLUMNS)
class CompareVariant:
    """One compared variant (a policy and a tier list): the figures shown side by side."""

    @classmethod
    def from_summary(cls, label: str, policy: str | None, s: ReplaySummary,
                     admission: str | None = None, given: Sequence[str] | None = None) -> CompareVariant:
        """The row of one replay summary (``policy`` None = the default policy; ``given``: the tiers as the
        caller wrote them, None for the defaults).

        ``tiers`` is what a user can pass back for the same run: whole blocks (``--tier gpu=953blocks``); a hybrid
        model's tiers as given, since its pages are no capacity unit and their bytes do not give the same pages
        back under the sglang manager's per-pool split (pcs/engine/hybrid.py ``_sglang_split``); without given
        tiers, the defaults they resolved to (the deployment's GPU bytes), else their pages' bytes
        (:func:`pcs.units.tier_arg`)."""
        given = given or (_default_hybrid_tiers(s) if s.hybrid else None)
        if s.hybrid and given:
            tiers = " ".join(given)
        else:
            tiers = " ".join(tier_arg(t.name, t.capacity_blocks, t.capacity_bytes, bool(s.hybrid)) for t in s.tiers)
        return cls.from_source(
            s, variant=label, policy=policy or DEFAULT_POLICY, tiers=tiers,
            lower_tier_hit_ratio=(None if s.hit_ratio is None else sum(list(s.hit_ratio_per_tier.values())[1:])),
            written_bytes=sum(s.bytes.written_per_tier.values()), share_slower=_slower_share(s),
            admission=admission, payload_lens=s.payload_lens, summary=s)


def _default_hybrid_tiers(s: ReplaySummary) -> list[str] | None:
    """The default tiers a hybrid replay ran on, as ``--tier`` values (the GPU tier's bytes from the
    deployment, the others :data:`pcs.engine.api.DEFAULT_TIERS`'); None when the GPU tier was not sized so."""
    from pcs.engine.api import DEFAULT_TIERS

    d = s.deployment or {}
    if d.get("gpu_tier_from") != "deployment" or len(s.tiers) != len(DEFAULT_TIERS):
        return None
    gpu = d["gpu_tier_bytes"]
    return [tier_arg(s.tiers[0].name, gpu, gpu, True)] + [str(t) for t in DEFAULT_TIERS[1:]]


@result
class CompareCurveRow:
    """Hit ratios at one capacity (one tier, sequential timing) for each compared policy, Belady, the ceiling."""

    capacity_blocks: int = field("blocks", "cache size")
    policy_hit_ratios: dict[str, float] = field(
        "ratio", "hit ratio per compared policy, in the JSON as one key <policy>_hit_ratio each (lru from the "
                 "one-pass curve, others replayed; a hybrid model: all replayed under its rules)",
        key="<policy>_hit_ratio")
    belady_hit_ratio: float | None = field("ratio", "offline optimum (Belady's MIN); null for a hybrid model")
    ceiling_hit_ratio: float | None = field("ratio", "single-sequence hit ratio (infinite cache); null for a "
                                                     "hybrid model (one-pass, it ignores the hybrid rules)")
    capacity_bytes: int = field("bytes", "the GPU tier's bytes the row ran at, as pcs replay --tier gpu=C reports "
                                         "them (tiers[0].capacity_bytes): capacity_blocks x bytes per block; a "
                                         "hybrid model: its whole pages")

    def to_dict(self) -> dict[str, Any]:
        """``{capacity_blocks, <policy>_hit_ratio ..., belady_hit_ratio, ceiling_hit_ratio, capacity_bytes}``."""
        out: dict[str, Any] = {"capacity_blocks": self.capacity_blocks}
        out.update({f"{pol}_hit_ratio": v for pol, v in self.policy_hit_ratios.items()})
        out["belady_hit_ratio"] = self.belady_hit_ratio
        out["ceiling_hit_ratio"] = self.ceiling_hit_ratio
        out["capacity_bytes"] = self.capacity_bytes
        return out


@result
class CompareResult:
    """Several replays of one trace side by side (``pcs.compare``; ``pcs compare --format json``)."""

    trace: str = common()
    model: str = common()
    timing: str = field("-", "modeled or sequential")
    variants: tuple[CompareVariant, ...] = field("-", "one entry per variant: tier lists outer, policies inner")
    curve: tuple[CompareCurveRow, ...] | None = field("-", "hit ratio by capacity, with curve_capacities only",
                                                      omit_none=True, default=None)
    curve_note: str | None = field("-", "how the curve rows were made when not as usual (a hybrid model: every "
                                        "column replayed under its rules, the one-pass columns left out)",
                                   omit_none=True, default=None)
    notes: tuple[str, ...] = field("-", "the trace's caveats, in the API's words (synthetic prefix reuse, bad lines "
                                        "skipped: pcs.trace.api.trace_notes of the trace read), as pcs.replay's "
                                        "summary.notes end with them; the command prints them in its own words",
                                   json=False, default=())

    def to_dict(self) -> dict[str, Any]:
        """The JSON payload of ``pcs compare --format json`` (keys in ``docs/json.md``) less the keys the command
        adds (docs/json.md, "pcs compare"): each variant's ``tier_capacities``, ``notes`` -- the trace's caveats
        (synthetic prefix reuse, bad lines skipped: :func:`pcs.trace.api.trace_notes` of the trace read), then
        the variants' lower tiers that never received a block (:func:`pcs.cli.compare.tier_notes` of this
        result) --, ``skipped`` and ``skipped_lines`` (the trace's ``Trace.skipped``, ``Trace.skipped_lines``)."""
        return to_dict(self)


#: :attr:`CompareResult.curve_note` of a hybrid model (docs/hybrid.md "Not on hybrid models").
HYBRID_CURVE_NOTE = ("hybrid model: every policy column replayed per capacity (blocks as pcs deploy counts them: "
                     "a block's pages x page bytes, padding included) under its "
                     "cache-group rules; belady and the ceiling left out (one-pass curves ignore the hybrid rules)")


def _curve_rows(trace: Any, policies: list[str | None], caps: Sequence[Any], replay_kwargs: dict[str, Any],
                first: ReplaySummary) -> tuple[CompareCurveRow, ...]:
    """Hit ratio per capacity (one tier, sequential) for each compared policy, Belady and the ceiling.

    ``caps``: :class:`pcs.units.Capacity` items, each replayed as ``--tier gpu=C`` as written (a size stays a
    size: a hybrid model cuts its bytes into pages, not whole-model blocks, so ``gpu=40GB`` here is the run
    ``pcs replay --tier gpu=40GB`` makes); ``first``: the first variant's summary, whose GPU tier gives the bytes
    per block a size is counted in (:func:`_block_bytes`). A hybrid model (docs/semantics.md §3.1): every column is replayed
    under the cache-group rules, lru too, and belady and the ceiling are None: the one-pass curves (§14) know
    nothing of those rules, so a table would mix two rule sets."""
    from pcs.curves.api import curve
    from pcs.engine.api import replay

    hybrid = first.hybrid is not None
    bpb = _block_bytes(first)
    by_blocks = {c.to_blocks(bpb, f"curve_capacities {shown_repr(c.text)}"): c for c in reversed(caps)}  # first one kept
    blocks = sorted(by_blocks)      # the order of the curve's rows, so row i is replay i
    tiers = [f"gpu={c.text if c.size_bytes is not None else f'{c.blocks}blocks'}" for c in map(by_blocks.get, blocks)]
    res = curve(trace, capacities=blocks, rules=replay_kwargs.get("rules", BlockRules()),
                native=replay_kwargs.get("native"), belady=not hybrid)
    per_policy: dict[str, list[float]] = {}
    cap_bytes = [b * bpb for b in blocks]
    for pol in dict.fromkeys(p or DEFAULT_POLICY for p in policies):
        if pol == "lru" and not hybrid:
            per_policy[pol] = [r.lru_hit_ratio for r in res.rows]
            continue
        seq = _run_kwargs(pol, dict(replay_kwargs, timing="sequential", tier_policies=None, links=None,
                                    engine="auto", progress=None, gap_oracle=False), policies)
        runs = [replay(trace, policy=pol, tiers=[t], **seq).summary for t in tiers]
        per_policy[pol] = [s.hit_ratio for s in runs]
        cap_bytes = [s.tiers[0].capacity_bytes for s in runs]   # a hybrid model's pages: the replay's own bytes
    return tuple(CompareCurveRow(r.capacity_blocks, {pol: v[i] for pol, v in per_policy.items()},
                                 None if hybrid else r.belady_hit_ratio, None if hybrid else r.ceiling_hit_ratio,
                                 cap_bytes[i])
                 for i, r in enumerate(res.rows))


def _block_bytes(first: ReplaySummary) -> int:
    """Bytes of one block of the model in the first variant's GPU tier, the unit of a curve row's
    ``capacity_blocks``: the TP group's Reserved block, or for a hybrid model the pages one block takes x the page
    bytes, padding included (the payload lens' GPU bytes per block, ``HybridPlan.block_layout``), so that
    ``Nblocks`` is the block ``pcs deploy`` and ``pcs replay --tier gpu=Nblocks`` count (docs/semantics.md §13.1)."""
    if first.hybrid is not None and first.payload_lens is not None:
        return first.payload_lens.gpu_bytes_per_block[0]
    return sum(first.tiers[0].bytes_per_block_by_component.values())


def _curve_capacity(value: Any, name: str) -> Any:
    """One curve capacity: an int block count >= 0, or a str as ``--tier`` sizes are written (``"40GB"``,
    ``"5000blocks"``, :func:`pcs.units.parse_capacity`) -> :class:`pcs.units.Capacity`.

    Raises:
        UserError: anything else, naming ``name``.
    """
    from pcs import units

    if isinstance(value, str):
        try:
            return units.parse_capacity(value)
        except ValueError as exc:
            raise UserError(f"{name} = {shown_repr(value)}: {str(exc).splitlines()[0]}") from None
    n = check_int(value, name, lo=0)
    return units.Capacity(f"{n}blocks", blocks=n)


def refuse_one_policy_twice(policies: Sequence[Any], option: str = "policies") -> None:
    """``--policy slru --policy protected`` names one configuration twice (an alias; or an option given at its
    default, ``slru:protected_share=0.8``): two equal columns, refused. ``slru:protected_share=0.2`` and
    ``slru:protected_share=0.8`` are two configurations and both run (:func:`pcs.cache.policies.configuration_key`)."""
    from pcs.cache.policies import configuration_key

    _refuse_twice(option, policies, lambda p: configuration_key(p or DEFAULT_POLICY), "policy")


def refuse_one_admit_twice(admits: Sequence[Any], option: str = "admits") -> None:
    """``--admit cpu=reuse:2 --admit CPU=reuse:n=2`` names one admission configuration twice (the same rule as
    :func:`refuse_one_policy_twice`: tier names case-folded, options at their defaults filled in)."""
    import inspect

    from pcs.cache.admission import NO_ADMISSION, admission_kinds, is_no_admission, parse_admission

    def kind_key(item: str) -> Any:
        tier, sep, spec = item.partition("=")
        if is_no_admission(item) or (sep and is_no_admission(spec)):    # none, cpu=none: no admission
            return NO_ADMISSION
        if not sep or not spec.strip():
            return item                                         # malformed: the replay's parser names it
        kind, opts = parse_admission(spec, tier.strip().lower())
        defaults = {n: p.default for n, p in inspect.signature(admission_kinds()[kind].__init__).parameters.items()
                    if p.default is not inspect.Parameter.empty and n != "context"}
        return tier.strip().lower(), kind, _options_key({**defaults, **opts})

    _refuse_twice(option, admits, lambda a: NO_ADMISSION if a is None else frozenset(kind_key(i) for i in a.split("+") if i.strip()) - {NO_ADMISSION},
                  "admission")


def _options_key(options: dict[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in options.items()))


def _refuse_twice(option: str, values: Sequence[Any], key, what: str) -> None:
    """UserError when two ``values`` of ``option`` have the same ``key``: two equal columns of one configuration."""
    seen: dict[Any, str] = {}
    for i, v in enumerate(values or ()):
        if not isinstance(v, str) and v is not None:
            return                              # a policy object, a bad item: the replay's own check names it
        if option.startswith("--"):             # the command line's reader: its option leads its refusals
            k = key(v)
        else:
            with keyword_refusal(f"{option}[{i}]", v):    # policies[1]='arcc': unknown eviction policy 'arcc' ...
                k = key(v)
        if k in seen:
            raise UserError(f"{option} {_shown(option, seen[k])} and {option} {_shown(option, v)} name the same {what} with the same options; "
                             "give each configuration once")
        seen[k] = v


def _shown(option: str, value: Any) -> str:
    """A value as the message shows it: as typed on the command line (``--policy slru``), quoted in the API."""
    return str(value) if option.startswith("--") else shown_repr(value)


def _check_compare_args(tier_sets: Any, curve_capacities: Sequence[int] | None, replay_kwargs: dict[str, Any],
                        policies: Any = None, admits: Any = None) -> list[int] | None:
    """The checks of :func:`compare`'s arguments (:mod:`pcs.argcheck`); the curve capacities as ints (None: no
    curve rows). A str given for a list (``policies="slru"``) is refused, not iterated per character."""
    if tier_sets and replay_kwargs.get("tiers"):
        raise UserError("give either tiers (one tier list) or tier_sets (several to compare), not both")
    if "policy" in replay_kwargs:
        raise UserError("compare takes policies=[...] (several), not policy=")
    caps = None if curve_capacities is None else check_number_list(curve_capacities, "curve_capacities",
                                                                    _curve_capacity)
    if caps is not None and not caps:
        raise UserError(f"curve_capacities must be one or more block counts >= 0 or sizes, got {shown_repr(curve_capacities)}")
    for key, value in (("policies", policies), ("tier_sets", tier_sets), ("admits", admits)):
        if isinstance(value, (str, bytes)):
            raise UserError(f"{key} must be a list (several to compare), got the single string {shown_repr(value)}")
    for i, ts in enumerate(tier_sets or ()):
        if isinstance(ts, (list, tuple)) and not ts:   # as pcs.replay(tiers=[]): not the default tiers
            raise UserError(f"tier_sets[{i}] is empty: at least one tier is needed, e.g. ['gpu=400GB']")
    _refuse_one_tier_list_twice(tier_sets)
    refuse_one_policy_twice(policies)
    refuse_one_admit_twice(admits)
    return caps


def _tier_list_text(tiers: Sequence[str] | None) -> str:
    return ",".join(str(t) for t in tiers) if tiers else "(the default tiers)"


def _refuse_one_tier_list_twice(tier_sets: Any) -> None:
    """UserError when two of ``tier_sets`` name the same tiers at the same sizes in other spellings
    (``gpu=200GB`` and ``gpu=200000MB``: one run twice, as sweep refuses ``"10GB"`` beside ``"10000MB"``,
    docs/sweep.md "Axes"): tier names case-folded, sizes compared in bytes or in blocks as given."""
    from pcs.engine.api import parse_tier

    seen: dict[tuple, Any] = {}
    for ts in tier_sets or ():
        if isinstance(ts, (str, bytes)):
            return                          # the replay's own check names the bad item
        with keyword_refusal("tier_sets", list(ts)):    # tier_sets=['gpu=x']: bad tier size ...
            key = tuple((s.name.lower(), s.capacity_bytes, s.capacity_blocks) for s in map(parse_tier, ts))
        if key in seen:
            raise UserError(f"tier lists {_tier_list_text(seen[key])} and {_tier_list_text(ts)} are the same tiers "
                             "at the same sizes; give each configuration once")
        seen[key] = ts


def _refuse_same_blocks(resolved: dict[str, Sequence[str] | None], tiers: str,
                        given: Sequence[str] | None) -> None:
    """UserError when tier list ``given`` came out at the blocks ``tiers`` of an earlier list (``gpu=1192blocks``
    beside ``gpu=200GB`` at 167,772,160 B per block: the bytes per block are known only once the run has resolved
    the model, so this check follows the list's first run); else records it in ``resolved``."""
    if tiers in resolved:
        raise UserError(f"tier lists {_tier_list_text(resolved[tiers])} and {_tier_list_text(given)} come to "
                         f"the same tiers ({tiers}); give each configuration once")
    resolved[tiers] = given


def _variant_runs(sets: list, pols: list, adms: list, replay_kwargs: dict[str, Any]) -> list[tuple]:
    """(tiers, policy index, policy, admission index, admission, replay keywords) per variant: tier list by
    tier list, then policy by policy, then admission by admission."""
    return [(tiers, i, pol, j, adm, dict(policy=pol, tiers=tiers or None, admit=[adm] if adm else None,
                                         **_run_kwargs(pol, replay_kwargs, pols)))
            for tiers in sets for i, pol in enumerate(pols) for j, adm in enumerate(adms)]


def _checked_runs(policies: Any, tier_sets: Any, curve_capacities: Any, admits: Any,
                  replay_kwargs: dict[str, Any]) -> tuple:
    """:func:`compare`'s arguments checked and its variants laid out, the trace not read: (curve capacities or
    None, policies, tier lists, admission settings, :func:`_variant_runs`), after every variant's trace-free
    checks (:func:`pcs.engine.api.check_replay`). ``replay_kwargs`` is not changed.

    Raises:
        UserError: as :func:`compare` raises before it reads the trace.
    """
    from pcs.engine.api import check_replay

    caps = _check_compare_args(tier_sets, curve_capacities, replay_kwargs, policies, admits)
    pols = [canonical_spec(p) if p else p for p in policies or ()] or [None]   # slru, never its alias protected
    rest = {k: v for k, v in replay_kwargs.items() if k != "tiers"}
    sets = [list(ts) for ts in tier_sets or ()] or [replay_kwargs.get("tiers")]
    adms = list(admits or ()) or [None]
    runs = _variant_runs(sets, pols, adms, rest)
    for run in runs:        # every variant's trace-free checks before the trace is read, as a sweep's plan
        check_replay(**run[-1])
    return caps, pols, sets, adms, runs


def check_compare(*, policies: Sequence[str | None] | None = None, tier_sets: Sequence[Sequence[str]] | None = None,
                  curve_capacities: Sequence[int] | None = None, admits: Sequence[str] | None = None,
                  **replay_kwargs: Any) -> None:
    """The checks :func:`compare` makes before it reads the trace (every variant's, :func:`_checked_runs`),
    running nothing: a sweep's compare point is refused before any point runs, as a replay point is.

    Raises:
        UserError: as :func:`compare` raises for those arguments before it reads the trace.
    """
    _checked_runs(policies, tier_sets, curve_capacities, admits, replay_kwargs)


@keyword_refusals
def compare(trace: Any = None, *, policies: Sequence[str | None] | None = None,
            tier_sets: Sequence[Sequence[str]] | None = None, curve_capacities: Sequence[int] | None = None,
            admits: Sequence[str] | None = None, progress: Callable[[int], None] | None = None,
            **replay_kwargs: Any) -> CompareResult:
    """Replay one trace under several policies and/or tier lists; optionally add hit-ratio curve rows.

    Args:
        trace: as for :func:`pcs.replay` (a path, a Trace, Requests, or None
            for the bundled sample); opened once and reused by every variant.
        policies: eviction policies to compare (default: the default policy
            only); ``None`` in the list means the default. An alias is input only: labels, ``policy``
            and curve keys name the registered policy (``protected`` -> ``slru``), as ``pcs replay`` does.
        tier_sets: tier lists to compare, each as :func:`pcs.replay`'s
            ``tiers`` (e.g. ``[["gpu=390GB", "cpu=2TB"], ["gpu=390GB", "cpu=4TB"]]``);
            default: one tier list, ``replay_kwargs["tiers"]`` or the default tiers.
        curve_capacities: one-tier capacities of :attr:`CompareResult.curve` (sequential, the run's block rules):
            block counts (int >= 0) or tier sizes (``"40GB"``: the row is ``tiers=["gpu=40GB"]``'s sequential run).
        admits: admission settings to compare, each ``TIER=KIND[:ARGS]`` items joined by
            ``+`` or ``"none"`` (:func:`pcs.cache.admission.parse_admit_option`); every
            policy runs with every setting (policy x admission); default: none.
        progress: called with the requests replayed since its previous call, across variants (as :func:`pcs.replay`).
        **replay_kwargs: any other keyword of :func:`pcs.replay` (model,
            hardware, tp, dtype, tiers, tier_policies, links, protected_share,
            timing, write_policy, rules, compute, hardware_table, engine, native),
            the same for every variant; ``protected_share`` goes to the
            variants whose policies take it (slru).
    Returns:
        :class:`CompareResult`: variants ordered tier list by tier list, then
        policy by policy, each with every admission setting in the given order.
    Raises:
        UserError: (:class:`pcs.errors.UserError`, a ValueError) both ``tier_sets`` and ``tiers``; ``policy`` in
            ``replay_kwargs`` (use ``policies``); bad curve capacities; and
            anything :func:`pcs.replay` raises, every variant's trace-free checks
            (:func:`pcs.engine.api.check_replay`) before the trace is read.
    """
    from pcs.engine.api import limited_source, replay
    from pcs.report.replay import tier_policies_text
    from pcs.report.tiercheck import without_trace_notes
    from pcs.trace.api import trace_notes

    caps, pols, sets, adms, runs = _checked_runs(policies, tier_sets, curve_capacities, admits, replay_kwargs)
    replay_kwargs.pop("tiers", None)
    source = limited_source(trace, runs[0][-1])   # the variants' one timing's row bounds (the curve reads them too)
    variants, resolved = [], {}
    for tiers, i, pol, j, adm, kwargs in runs:
        # the trace's caveats (pcs.replay's last notes) are the command's, never a variant's
        s = without_trace_notes(replay(source, progress=progress, **kwargs).summary, source)
        per_tier = len({t.policy for t in s.tiers}) > 1     # --tier-policy: gpu=slru/cpu=lru, in tier order
        shown = tier_policies_text([{"name": t.name, "policy": t.policy} for t in s.tiers]) if per_tier else None
        label = " ".join(x for x in (shown or pol or DEFAULT_POLICY,
                                     adm if len(adms) > 1 else "",
                                     " ".join(tiers) if tiers and len(sets) > 1 else "") if x)
        variants.append(CompareVariant.from_summary(label, pol, s, adm, tiers))
        if i == j == 0 and len(sets) > 1:
            _refuse_same_blocks(resolved, variants[-1].tiers, tiers)
    first = variants[0].summary
    curve = None if caps is None else _curve_rows(source, pols, caps, replay_kwargs, first)
    return CompareResult(first.trace, first.model, first.timing, tuple(variants), curve,
                         HYBRID_CURVE_NOTE if curve is not None and first.hybrid is not None else None,
                         trace_notes(source))
