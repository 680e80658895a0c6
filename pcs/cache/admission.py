"""Admission policies: which blocks a tier stores at all (and how long some are retained).

Mechanism and policy again (docs/semantics.md §8): a :class:`pcs.cache.tier.Tier`
asks its admission policy before writing blocks offered to it -- a lower tier's
demoted or written-through blocks (``Tier.insert``); a block it refuses is not
written there (write-back: it goes on down, as an overflow; write-through: it is
not copied). The GPU tier stores every block it computes (a request needs
them), so refusal applies to lower tiers; retention (``retain``) changes eviction
order instead and applies to any tier. Any admission composes with any eviction
policy; several given for one tier must all admit.

Kinds (``--admit TIER=KIND[:ARGS]``, :func:`parse_admission`):

- ``reuse:N`` -- store a block on its N-th use: only blocks looked up by at least
  N requests (vLLM CPU offloading's store threshold, ``store_threshold``:
  ``pcs.cache.admission_reuse``);
- ``selective:K`` -- only blocks hit at least K times (SGLang HiCache
  ``write_through_selective``: ``pcs.cache.admission_selective``);
- ``tinylfu[:sample=S]`` -- TinyLFU (Einziger, Friedman and Manes, ACM ToS 2017):
  a block enters only if a count-min sketch estimates it more frequent than the
  block it would evict (``pcs.cache.admission_tinylfu``; Dynamo's frequency-based admission);
- ``retain:tokens=A-B,duration=S`` -- blocks holding prompt tokens in ``[A, B)``
  (a system-prompt head) are evicted only after every other evictable block, for
  S seconds after their last use (TensorRT-LLM ``KvCacheRetentionConfig`` /
  ``TokenRangeRetentionConfig``: ``pcs.cache.admission_retention``).

Every kind sees each request's lookup (:meth:`AdmissionPolicy.observe`: its
cacheable head and how many leading blocks hit), called by
:meth:`pcs.cache.Hierarchy.start`.
"""
from __future__ import annotations

from typing import Any, ClassVar, Sequence

from pcs.cache.policies import number_option, spec_value
from pcs.choices import malformed_option, name_after_comma, no_such_option, not_among_tiers
from pcs.errors import UnknownNameError, UserError, lead_with, quoted, shown_repr

__all__ = ["AdmissionPolicy", "CountingAdmission", "CombinedAdmission", "ADMISSION_KINDS", "parse_admission", "make_admission", "parse_admit_option",
           "admission_kinds", "NO_ADMISSION", "is_no_admission", "apply_admission", "check_admissions", "needs_context"]

#: the ``--admit`` value meaning "no admission policy": alone (``none``, a compared variant without one) or as a
#: tier's kind (``cpu=none``: that tier admits every block, the default; :func:`is_no_admission`).
NO_ADMISSION = "none"


def is_no_admission(kind: str) -> bool:
    """Whether ``kind`` (an ``--admit`` item, or the KIND of ``TIER=KIND``) is :data:`NO_ADMISSION`, any case."""
    return str(kind).strip().lower() == NO_ADMISSION


class AdmissionPolicy:
    """Decides which offered blocks a tier writes (base: admit everything).

    Subclasses set ``kind``, ``summary`` and ``source`` and override what they use.
    """

    kind: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    source: ClassVar[str] = ""

    def observe(self, head: Sequence[int], hit_blocks: int) -> None:
        """One request's lookup: its cacheable head (chain order) and its leading hit blocks."""
        return None

    def admit(self, keys: Sequence[int]) -> list[bool]:
        """Per offered block (not resident in the tier), whether the tier may write it."""
        return [True] * len(keys)

    def spec(self) -> str:
        """The ``KIND[:ARGS]`` text that rebuilds this policy."""
        return self.kind


class CountingAdmission(AdmissionPolicy):
    """Admit a block once a per-block count reaches a threshold (``reuse:N`` counts uses, ``selective:K`` hits).

    Subclasses set ``first_option`` (the threshold's option name) and :meth:`counted`, the blocks
    one lookup counts; counts are kept for every block counted (16-50 B each in a dict).

    Raises:
        UserError: a threshold below 1 or not an int.
    """

    first_option: ClassVar[str] = ""

    def __init__(self, threshold: int = 2) -> None:
        threshold = number_option(threshold, "int", f"admission {self.kind}: {self.first_option.upper()}: ")
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise UserError(f"admission {self.kind}: {self.first_option.upper()} must be an int >= 1, "
                             f"got {quoted(threshold, show=repr)}")
        self.threshold = threshold
        self._counts: dict[int, int] = {}

    def counted(self, head: Sequence[int], hit_blocks: int) -> Sequence[int]:
        """The blocks one lookup (its cacheable head, its leading hit blocks) adds one to."""
        raise NotImplementedError

    def observe(self, head: Sequence[int], hit_blocks: int) -> None:
        counts = self._counts
        for k in self.counted(head, hit_blocks):
            counts[k] = counts.get(k, 0) + 1

    def admit(self, keys: Sequence[int]) -> list[bool]:
        counts, threshold = self._counts, self.threshold
        return [counts.get(k, 0) >= threshold for k in keys]

    def spec(self) -> str:
        return f"{self.kind}:{self.threshold}"


class CombinedAdmission(AdmissionPolicy):
    """Several admission policies of one tier: a block is admitted only if every one admits it."""

    kind = "all"

    def __init__(self, parts: Sequence[AdmissionPolicy]) -> None:
        self.parts = list(parts)
        duels = [p.duel for p in self.parts if hasattr(p, "duel")]
        if duels:
            self.duel = lambda candidate, victim: all(d(candidate, victim) for d in duels)

    def bind(self, capacity_blocks: int) -> None:
        for p in self.parts:
            if hasattr(p, "bind"):
                p.bind(capacity_blocks)

    def observe(self, head: Sequence[int], hit_blocks: int) -> None:
        for p in self.parts:
            p.observe(head, hit_blocks)

    def admit(self, keys: Sequence[int]) -> list[bool]:
        out = [True] * len(keys)
        for p in self.parts:
            out = [a and b for a, b in zip(out, p.admit(keys))]
        return out

    def spec(self) -> str:
        return "+".join(p.spec() for p in self.parts)


def admission_kinds() -> dict[str, type]:
    """Kind -> class of every admission policy (imported on first use)."""
    from pcs.cache.admission_retention import RetentionAdmission
    from pcs.cache.admission_reuse import ReuseAdmission
    from pcs.cache.admission_selective import SelectiveAdmission
    from pcs.cache.admission_tinylfu import TinyLFUAdmission

    return {c.kind: c for c in (ReuseAdmission, SelectiveAdmission, TinyLFUAdmission, RetentionAdmission)}


#: the admission kinds, in listing order.
ADMISSION_KINDS = ("reuse", "selective", "tinylfu", "retain")


def parse_admission(text: str, tier: str = "") -> tuple[str, dict[str, Any]]:
    """``KIND[:ARG]`` or ``KIND:KEY=VALUE,...`` -> (kind, keyword arguments).

    A bare argument is the kind's first option (``reuse:2`` = ``reuse:n=2``). ``tier``: the tier the kind is
    given to, for the example of a refusal (``TIER`` when not given).

    >>> parse_admission("reuse:2"), parse_admission("retain:tokens=0-4096,duration=60")
    (('reuse', {'n': 2}), ('retain', {'tokens': '0-4096', 'duration': 60}))

    Raises:
        UserError: unknown kind (the message lists them), a malformed argument (an empty option name or value:
            :func:`pcs.choices.malformed_option`), an option given twice, options given to ``none``, or a second
            kind after a comma (``reuse:2,tinylfu``: :func:`_second_kind`).
    """
    _second_kind(text, tier)
    kind, colon, rest = str(text).strip().partition(":")
    kind = kind.strip().lower()
    if colon and kind == NO_ADMISSION:      # none:n=2, none: -- no admission has nothing to set
        raise UserError(f"bad admission {shown_repr(text)}: {NO_ADMISSION} (no admission) takes no options; give {NO_ADMISSION} "
                        "alone")
    if colon and not rest.strip():      # "reuse:" is not "reuse": an argument was meant and left out
        raise UserError(f"bad admission {shown_repr(text)}: nothing after ':'; give {kind} alone for its defaults")
    kinds = admission_kinds()
    if kind not in kinds:
        raise UnknownNameError("admission", kind, (*ADMISSION_KINDS, NO_ADMISSION), hint="e.g. cpu=reuse:2")
    opts: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            key, value = kinds[kind].first_option, part
        if not key.strip() or not value.strip():
            raise UserError(malformed_option("admission", kind, part, text, _options_of()[kind]))
        if key.strip() in opts:
            raise UserError(f"admission option {shown_repr(key.strip())} given twice in {shown_repr(text)}; give it once")
        opts[key.strip()] = spec_value(value.strip())
    return kind, opts


def _second_kind(text: str, tier: str) -> None:
    """Refuse a second admission kind written after a comma, as an option of the first (``reuse:2,tinylfu``,
    ``tinylfu,reuse:2``: :func:`pcs.choices.name_after_comma`); kinds are stacked with ``+``, each with its tier
    (docs/policies.md). Before, the second kind was read as the first's option (``admission option 'n' given
    twice``) or as part of its name (``unknown admission 'tinylfu,reuse'``).

    Raises:
        UserError: ``'tinylfu' is an admission kind, not an option of reuse: stack kinds with '+', each with
            its tier: cpu=reuse:2+cpu=tinylfu``."""
    first = str(text).strip().partition(",")[0].partition(":")[0].strip().lower()
    found = name_after_comma(text, (*ADMISSION_KINDS, NO_ADMISSION), _options_of().get(first, ()))
    if found is not None:
        word, before, after = found
        t = tier or "TIER"
        raise UserError(f"{shown_repr(word)} is an admission kind, not an option of {first}: stack kinds with '+', each with "
                        f"its tier: {t}={before}+{t}={after}")


def _options_of() -> dict[str, list[str]]:
    """Admission kind -> the options it takes (its ``__init__``'s keywords but the trace context), in order."""
    import inspect

    return {k: [p for p in inspect.signature(c.__init__).parameters if p not in ("self", "context")]
            for k, c in admission_kinds().items()}


def make_admission(text: str, context: Any = None, tier: str = "") -> AdmissionPolicy:
    """An admission policy from ``KIND[:ARGS]`` (``context``: the trace context, for ``retain``; ``tier``: the
    tier it is given to, for a refusal's example, :func:`parse_admission`).

    Raises:
        UserError: unknown kind, unknown or bad option (the message names the kind's options).
    """
    kind, opts = parse_admission(text, tier)
    cls = admission_kinds()[kind]
    import inspect

    options_of = _options_of()
    takes = options_of[kind]
    for key in opts:
        if key not in takes:
            raise UserError(no_such_option("admission", kind, key, options_of))
    return cls(**opts, context=context) if "context" in inspect.signature(cls.__init__).parameters else cls(**opts)


def apply_admission(specs: Sequence[str], policy: Any, context: Any = None,
                    tier: str = "") -> tuple[Any, AdmissionPolicy | None]:
    """One tier's ``--admit`` kinds -> (its eviction policy, wrapped by ``retain`` kinds; its admission or None).

    Raises:
        UserError: as :func:`make_admission`, the message led by the option that gave the kind
            (``admit='cpu=reuse:0': ...``, the command line's ``--admit cpu=reuse:0: ...``; ``tier``: the
            tier's name).
    """
    parts = []
    for spec in specs:
        adm = _made(spec, context, tier)
        if hasattr(adm, "wrap"):
            policy = adm.wrap(policy)
        parts.append(adm)
    filters = [p for p in parts if not hasattr(p, "wrap")] or parts
    if not parts:
        return policy, None
    return policy, (filters[0] if len(filters) == 1 else CombinedAdmission(filters))


def _made(spec: str, context: Any, tier: str) -> AdmissionPolicy:
    """:func:`make_admission` of one tier's kind, a refusal led by the option that gave it (``admit='cpu=...'``, cut
    by :func:`pcs.errors.quoted`; the whole ``TIER=KIND`` kept as the error's ``refused_value``: a sweep plan names the line it is written on)."""
    try:
        return make_admission(spec, context, tier)
    except UserError as exc:
        if not tier:
            raise
        raise admit_refusal(f"{tier}={spec}", str(exc)) from None


def admit_refusal(item: str, problem: "str | UserError") -> UserError:
    """The refusal of one ``admit=`` item ``TIER=KIND[:ARGS]`` (``admit='cpu=reuse:0': PROBLEM``, cut by
    :func:`pcs.errors.quoted`; the command line's ``--admit cpu=reuse:0: ...``, a plan's ``admit = "..."``), the
    item kept as its ``refused_value``: a sweep plan names the line it is written on. One wording for the
    option's reader (``pcs replay --admit``), :func:`parse_admit_option` and the run (:func:`apply_admission`).
    ``problem`` a UserError (an unknown kind's :class:`UnknownNameError`): that error, led by the item
    (:func:`pcs.errors.lead_with`), its type kept; one that names ``admit=`` already is not led again."""
    err = UserError(problem) if isinstance(problem, str) else problem
    if not str(err).startswith("admit="):
        lead_with(err, f"admit={quoted(item, show=repr)}")
    err.refused_value = item
    return err


class _CheckOnly:
    """The trace context a kind that reads it (``retain``) is built with by :func:`check_admissions`: its values
    are checked, and the policy is dropped unused (nothing reads this stand-in's ``oracle``)."""

    oracle = clock = object()


def check_admissions(admit: dict[str, list[str]]) -> None:
    """The refusals :func:`apply_admission` would make of each tier's kinds (``admit``: tier -> kinds, as
    :func:`parse_admit_option` returns them), made before a run (:func:`pcs.engine.api.check_replay`, a sweep's
    plan): each kind built as the run builds it (:func:`_made`, the same code), with a stand-in trace context.

    Raises:
        UserError: as :func:`apply_admission`.
    """
    for tier, specs in admit.items():
        for spec in specs:
            _made(spec, _CheckOnly(), tier)


def needs_context(specs: Sequence[str]) -> bool:
    """Whether any of the admission kinds reads the trace context (``retain``)."""
    return any(parse_admission(s)[0] == "retain" for s in specs)


def parse_admit_option(values: Sequence[str], tier_names: Sequence[str]) -> dict[str, list[str]]:
    """``--admit TIER=KIND[:ARGS]`` values (``+`` joins several in one value) -> tier -> kinds. ``none`` alone, or
    as a tier's kind (``cpu=none``), gives no kind: that tier admits every block, as without ``--admit``.

    Raises:
        UserError: no ``=``, a tier not among ``tier_names``, admission refusal on the GPU
            tier (only ``retain`` applies there), one kind given twice for a tier, ``none`` and a kind for one
            tier (``cpu=none+cpu=reuse:2``), or a bad kind.
    """
    out: dict[str, list[str]] = {}
    nones: dict[str, str] = {}
    for value in values:
        for item in filter(None, (v.strip() for v in str(value).split("+"))):
            if is_no_admission(item):
                continue
            try:
                _add_item(item, tier_names, out, nones)
            except UserError as exc:        # every refusal of an item led by it: admit='ITEM': ...
                raise admit_refusal(item, exc) from None
    _refuse_none_beside_kinds(nones, out)
    return out


def _add_item(item: str, tier_names: Sequence[str], out: dict[str, list[str]], nones: dict[str, str]) -> None:
    """One ``TIER=KIND[:ARGS]`` item of :func:`parse_admit_option` added to ``out`` (tier -> kinds) or, for
    ``none``, to ``nones`` (tier -> item); the refusals its caller leads with the item (:func:`admit_refusal`)."""
    from pcs.engine.tiercheck import one_entry_each, run_on_entries

    entries = run_on_entries(item, tier_names)
    if entries:
        raise UserError(one_entry_each("admit=", "admit", entries))
    tier, sep, spec = item.partition("=")
    tier = tier.strip().lower()
    if not sep or not tier or not spec.strip():
        raise UserError("expected TIER=KIND[:ARGS], e.g. cpu=reuse:2")
    if tier not in tier_names:
        raise UserError(not_among_tiers("", tier, tier_names, quoted(tier, show=repr)))   # led by the item, as links['x']
    if is_no_admission(spec):
        nones[tier] = item
        return
    kind, _ = parse_admission(spec, tier)
    if tier == tier_names[0] and kind != "retain":
        raise UserError(f"the GPU tier stores every block it computes; admission {shown_repr(kind)} applies to lower "
                        "tiers (retain applies to any tier)")
    same = [k for k in out.get(tier, []) if parse_admission(k)[0] == kind]
    if same:
        raise UserError(f"tier {shown_repr(tier)} is given admission {shown_repr(kind)} twice ({same[0]}, "
                        f"{spec.strip()}); give it once (different kinds for one tier combine: a block must pass each)")
    out.setdefault(tier, []).append(spec.strip())


def _refuse_none_beside_kinds(nones: dict[str, str], kinds: dict[str, list[str]]) -> None:
    """UserError when a tier is given ``none`` (``nones``: tier -> the item, ``cpu=none``) and a kind (``kinds``):
    no admission and an admission on one tier contradict each other; neither may win unseen."""
    for tier, item in nones.items():
        if tier in kinds:
            raise admit_refusal(item, f"tier {shown_repr(tier)} is given no admission ({item.strip()}) and admission "
                                      f"{shown_repr(kinds[tier][0])}; give one")
