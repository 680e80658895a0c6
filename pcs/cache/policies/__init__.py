"""Eviction-policy registry: ``get_policy(name)``, ``make_policy(...)`` and ``POLICY_NAMES``.

A new built-in policy is five steps (docs/policies.md, "Adding a policy", as
the README says): its file with an :class:`EvictionPolicy` subclass, its entry
in ``_BUILTIN`` below (vLLM ``kv_offload/cpu/policies/factory.py`` does the
same; no if/elif chain anywhere else), its name in ``pcs/choices.py``, its C
twin ``pcs/cache/_pol_<name>.c``, and its row in docs/policies.md; the tests
fail until each is done. A plug-in is the file and an entry point (below). The CLI's ``--policy`` choices,
the ``--tier-policy`` check, ``pcs policies`` and the contract test
(``tests/cache/test_policies_contract.py``) all read this registry.

Built in: ``lru``, ``slru`` (segmented LRU, libCacheSim's name; alias
``protected``), ``fifo``, ``arc``, ``s3fifo``, ``sieve``, ``lfu``, ``2q``,
``gdsf`` and ``belady`` (an offline oracle). A policy object's ``.name`` is
always the registered name.

Plug-ins: a package registers more through the entry-point group
``pcs.policies`` (``[project.entry-points."pcs.policies"] mine =
"pkg.module:MyPolicy"``), read once on first need: a lookup of a name that
is not built in, or the full list (:data:`POLICY_NAMES`,
:data:`POLICY_CHOICES`, computed on access). Reading them costs ~0.04 s of
CPU (``importlib.metadata`` scans every installed distribution), which a
replay of built-in policies does not pay (benchmarks/bench_startup.py); a
plug-in cannot replace a built-in name, so the lookups of built-in names
are the same either way. The entry's name must equal the class's ``name``. A plug-in that fails to load,
or clashes with a registered name, is left out and listed in
:data:`PLUGIN_ERRORS` (``pcs policies`` prints them; complete once
:data:`POLICY_NAMES` was read).

Policy specs: ``NAME`` or ``NAME:OPTION=VALUE,...`` (``lfu:aging=none``,
``s3fifo:small_share=0.2``) wherever a policy name is taken; a value is read
as an int, else a float, else a string (:func:`parse_policy_spec`).
"""
from __future__ import annotations

import math
import re

import inspect
from typing import Any, Sequence

from pcs.cache.policies.arc import ARCPolicy
from pcs.cache.policies.base import EvictionPolicy
from pcs.cache.policies.belady import BeladyPolicy
from pcs.cache.policies.context import PolicyContext
from pcs.cache.policies.fifo import FIFOPolicy
from pcs.cache.policies.gdsf import GDSFPolicy
from pcs.cache.policies.lfu import LFUPolicy
from pcs.cache.policies.lru import LRUPolicy
from pcs.cache.policies.s3fifo import S3FIFOPolicy
from pcs.cache.policies.sieve import SievePolicy
from pcs.cache.policies.slru import DEFAULT_PROTECTED_SHARE, ProtectedPolicy, SLRUPolicy
from pcs.cache.policies.twoq import TwoQPolicy
from pcs.choices import DEFAULT_POLICY as _CHOICE_DEFAULT
from pcs.choices import malformed_option, name_after_comma, no_such_option
from pcs.choices import POLICY_ALIASES as _CHOICE_ALIASES
from pcs.errors import (OUT_OF_FLOAT_RANGE, OUT_OF_INT64_RANGE, UnknownNameError, UserError, as_typed, lead_with, quoted,
                        shown_repr)
from pcs.cache.policyguard import check_initialised, is_own, raised

__all__ = ["EvictionPolicy", "PolicyContext", "get_policy", "make_policy", "make_policies", "policy_options",
           "policy_defaults", "parse_policy_spec", "number_option", "check_policy", "check_policies", "needs_context", "registered_names", "POLICY_NAMES",
           "POLICY_ALIASES", "canonical_spec", "configuration_key", "POLICY_CHOICES", "POLICY_ORIGINS", "PLUGIN_ERRORS", "ENTRY_POINT_GROUP", "DEFAULT_POLICY",
           "is_builtin", "LRUPolicy", "SLRUPolicy", "ProtectedPolicy", "FIFOPolicy", "ARCPolicy", "S3FIFOPolicy",
           "SievePolicy", "LFUPolicy", "TwoQPolicy", "GDSFPolicy", "BeladyPolicy", "DEFAULT_PROTECTED_SHARE",
           "load_plugins"]

#: The entry-point group third-party policies register under.
ENTRY_POINT_GROUP = "pcs.policies"
_BUILTIN: tuple[type[EvictionPolicy], ...] = (LRUPolicy, SLRUPolicy, FIFOPolicy, ARCPolicy, S3FIFOPolicy,
                                              SievePolicy, LFUPolicy, TwoQPolicy, GDSFPolicy, BeladyPolicy)
_POLICIES: dict[str, type[EvictionPolicy]] = {cls.name: cls for cls in _BUILTIN}
#: registered name -> where it comes from: ``"pcs"`` or the plug-in's distribution name.
POLICY_ORIGINS: dict[str, str] = {name: "pcs" for name in _POLICIES}
#: plug-ins left out: ``"entry point: reason"`` lines.
PLUGIN_ERRORS: list[str] = []


def load_plugins(entry_points: Sequence[Any] | None = None) -> list[str]:
    """Register the policies of the ``pcs.policies`` entry points; returns the names added.

    Args:
        entry_points: entry points to load (default: ``importlib.metadata`` 's for the group).
    A failing entry (import error, not an :class:`EvictionPolicy` subclass,
    entry name != class ``name``, a name already registered) is skipped and
    described in :data:`PLUGIN_ERRORS`.
    """
    if entry_points is None:
        from importlib.metadata import entry_points as _eps

        entry_points = list(_eps(group=ENTRY_POINT_GROUP))
    added = []
    for ep in entry_points:
        try:
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, EvictionPolicy)):
                raise TypeError(f"{ep.value} is not an EvictionPolicy subclass")
            if cls.name != ep.name:
                raise UserError(f"entry point name {shown_repr(ep.name)} differs from the class's name {shown_repr(cls.name)}")
            if ep.name in _POLICIES or ep.name in POLICY_ALIASES:
                raise UserError(f"{shown_repr(ep.name)} is already registered (by {POLICY_ORIGINS.get(ep.name, 'an alias')})")
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not break pcs
            PLUGIN_ERRORS.append(f"{ep.name} = {ep.value}: {exc}")
            continue
        _POLICIES[ep.name] = cls
        dist = getattr(ep, "dist", None)
        POLICY_ORIGINS[ep.name] = getattr(dist, "name", None) or ep.value.split(":")[0]
        added.append(ep.name)
    return added


#: Other names accepted for a registered policy: alias -> registered name (:mod:`pcs.choices`).
POLICY_ALIASES: dict[str, str] = dict(_CHOICE_ALIASES)
#: Whether the ``pcs.policies`` entry points were read (:func:`_read_plugins`).
_PLUGINS_READ = False


def is_builtin(cls: type) -> bool:
    """Whether ``cls`` is one of pcs's built-in policy classes itself (``_BUILTIN``: not a plug-in, not a subclass)."""
    return cls in _BUILTIN


def _read_plugins() -> None:
    """Register the installed plug-ins, once (:func:`load_plugins` on the installed entry points)."""
    global _PLUGINS_READ
    if not _PLUGINS_READ:
        _PLUGINS_READ = True
        load_plugins()


def registered_names() -> tuple[str, ...]:
    """Registered policy names, in registration order (built-in, then plug-ins): :data:`POLICY_NAMES`."""
    _read_plugins()
    return tuple(_POLICIES)


def __getattr__(name: str) -> Any:
    """``POLICY_NAMES`` (:func:`registered_names`) and ``POLICY_CHOICES`` (every name a lookup accepts:
    registered names, then aliases; the ``--policy`` choices), computed on access with the plug-ins read."""
    if name == "POLICY_NAMES":
        return registered_names()
    if name == "POLICY_CHOICES":
        return registered_names() + tuple(POLICY_ALIASES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
#: The policy used when none is named (vLLM's prefix cache and offloading default to LRU; :mod:`pcs.choices`).
DEFAULT_POLICY = _CHOICE_DEFAULT


class OutOfRangeText(str):
    """A spec value that reads as a number no option can hold (``1e999``, ``2**63`` or more): kept as its text,
    so an option of another type refuses it with that type's message (``aging=1e999``: "must be one of dynamic,
    none"; ``reuse:1e999``: "N must be an int >= 1"), and an option of its type by :func:`refuse_out_of_range`.

    Attributes:
        kind: ``"int"`` (an integer outside the signed 64-bit range) or ``"float"`` (beyond a float's range).
        problem: why a number option refuses it (``option value "1e999" is out of range: a float holds ...``).
    """

    kind: str
    problem: str


def refuse_out_of_range(value: Any, wanted: str, lead: str = "") -> None:
    """Refuse ``value`` when it is an :class:`OutOfRangeText` an option of type ``wanted`` reads (``"float"``: any
    number, :data:`pcs.errors.OUT_OF_FLOAT_RANGE` for a float; ``"int"``: an integer past 64 bits -- a float
    such as ``1e999`` gets the option's own "an integer" message); anything else passes.

    Raises:
        UserError: ``lead`` then the value's :attr:`OutOfRangeText.problem`.
    """
    if isinstance(value, OutOfRangeText) and (wanted == "float" or value.kind == wanted):
        raise UserError(f"{lead}{value.problem}")


def _out_of_range(text: str, kind: str, problem: str) -> OutOfRangeText:
    value = OutOfRangeText(text)
    value.kind, value.problem = kind, f"option value {quoted(text)} is {problem}"
    return value


def spec_value(text: str) -> Any:
    """An option value of a policy or admission spec: an int, else a float, else the text as given. Numbers are
    written in ASCII (:func:`pcs.units.ascii_int` / :func:`pcs.units.ascii_float`, docs/semantics.md §16):
    ``1_000``, full-width ``１２``, ``nan`` and ``inf``, which ``int()`` / ``float()`` read, stay text, which an
    option typed as a number refuses (:func:`typed_option`, the admission kinds' checks). A number no option can
    hold -- an integer outside the signed 64-bit range (the compiled policies hold options as ``int64``), one past
    Python's 4,300 digits among them; a float beyond its range (``1e999``, never read as inf) -- is an
    :class:`OutOfRangeText`: the option's type check comes first (:func:`refuse_out_of_range`).
    """
    from pcs.units import ascii_float, ascii_int, number_shape

    shape = number_shape(text)
    if shape is None:
        return text
    if shape == "float":
        value = ascii_float(text)
        if not math.isfinite(value):    # 1e999, 309 digits or more: float() reads inf
            return _out_of_range(text, "float", OUT_OF_FLOAT_RANGE)
        return value
    try:
        value = ascii_int(text)
    except ValueError:      # more digits than int() converts (4,300)
        value = None
    if value is None or not -(2**63) <= value < 2**63:
        return _out_of_range(text, "int", OUT_OF_INT64_RANGE)
    return value


def parse_policy_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"NAME"`` or ``"NAME:KEY=VALUE,..."`` -> (name as given, options).

    >>> parse_policy_spec("s3fifo:small_share=0.2,move_to_main_threshold=3")
    ('s3fifo', {'small_share': 0.2, 'move_to_main_threshold': 3})

    Raises:
        UserError: an option without ``=`` or with an empty key or value (:func:`pcs.choices.malformed_option`:
            the one wording of policies, admission kinds and routers), an option given twice, or a second policy
            after a comma (:func:`_second_policy`); :class:`pcs.errors.UnknownNameError` for an unknown name with
            such an option.
    """
    _second_policy(spec)
    name, _, rest = str(spec).partition(":")
    opts: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():     # an unknown name is the first thing wrong
            raise UserError(malformed_option("eviction policy", get_policy(name).name, part, spec, policy_options(name)))
        if key.strip() in opts:      # as an admission option (pcs.cache.admission): the last one would win unseen
            raise UserError(f"policy option {quoted(key.strip(), show=repr)} given twice in "
                            f"{quoted(str(spec), show=repr)}; give it once")
        opts[key.strip()] = spec_value(value.strip())
    return name.strip(), opts


def _second_policy(spec: str) -> None:
    """Refuse a second eviction policy written after a comma, as an option of the first (``slru,lru``,
    ``slru:protected=0.5,lru``: :func:`pcs.choices.name_after_comma`): a value names one policy. Before, the
    second was read as part of the name (``unknown eviction policy 'slru,lru'``) or as a bad option.

    Raises:
        UserError: ``'lru' is an eviction policy, not an option of slru: a value names one policy (a tier's own:
            tier_policies['TIER'] = 'lru'; several: compare them, one policy= each)`` (the command line reads
            ``--tier-policy TIER=lru`` and ``one --policy each``: pcs.cli.common's phrasings)."""
    first = str(spec).strip().partition(",")[0].partition(":")[0].strip().lower()
    first = POLICY_ALIASES.get(first, first)
    if _POLICIES.get(first) is None:
        return
    if "," not in str(spec):
        return
    # the names registered so far (built-ins, plug-ins once read): listing them all would read the entry points
    found = name_after_comma(spec, (*_POLICIES, *POLICY_ALIASES), policy_options(first))
    if found is not None:
        word, _, after = found
        raise UserError(f"{shown_repr(word)} is an eviction policy, not an option of {first}: a value names one policy (a "
                        f"tier's own: tier_policies['TIER'] = {shown_repr(after)}; several: compare them, one policy= each)")


def get_policy(name: str) -> type[EvictionPolicy]:
    """The policy class registered as ``name`` or an alias of it (case-insensitive; options after ``:`` ignored).

    Raises:
        UnknownNameError: (a ValueError) unknown name; the message lists the
            registered names and the aliases.

    >>> get_policy("LRU").name
    'lru'
    >>> get_policy("protected").name
    'slru'
    """
    key = str(name).partition(":")[0].strip().lower()
    cls = _POLICIES.get(POLICY_ALIASES.get(key, key))
    if cls is None and not _PLUGINS_READ:
        _read_plugins()
        cls = _POLICIES.get(POLICY_ALIASES.get(key, key))
    if cls is None:
        _second_policy(name)         # slru,lru: two policies, not one unknown name
        left = [e for e in PLUGIN_ERRORS if e.partition(" = ")[0].lower() == key]   # a plug-in of that name left out
        raise UnknownNameError("eviction policy", str(name).partition(":")[0], registered_names(), POLICY_ALIASES,
                               hint=f"plug-in {left[0]}; see pcs policies" if left else "")
    return cls


def canonical_spec(spec: str) -> str:
    """``spec`` with its name part written as the registered name (an alias or another case is input only;
    options after ``:`` kept as given): one concept, one name in every output.

    >>> canonical_spec("protected"), canonical_spec("LRU:x=1")
    ('slru', 'lru:x=1')

    Raises:
        UnknownNameError: unknown name (as :func:`get_policy`).
    """
    name, sep, rest = str(spec).partition(":")
    return get_policy(name).name + sep + rest


def configuration_key(spec: str) -> tuple:
    """What two policy specs must differ in to name two configurations: the registered class and every option
    with the defaults filled in, so ``"LRU"``, ``" lru"`` and ``"lru"`` are one, ``"protected"`` and
    ``"slru:protected_share=0.8"`` are one, ``slru:protected_share=0.2`` is another (compare and sweep refuse
    one configuration given twice, docs/sweep.md "Axes").

    >>> configuration_key("LRU") == configuration_key(" lru")
    True

    Raises:
        UnknownNameError: unknown name (as :func:`get_policy`); UserError: a malformed option.
    """
    options = {**policy_defaults(spec), **parse_policy_spec(spec)[1]}
    return get_policy(spec), tuple(sorted((k, repr(v)) for k, v in options.items()))


def needs_context(name: str) -> tuple[str, ...]:
    """The trace knowledge policy ``name`` reads (``EvictionPolicy.needs``), e.g. ``("future",)`` for belady."""
    return tuple(get_policy(name).needs)


#: a policy constructor -> its options (:func:`_params`), read once: ``inspect.signature`` costs ~0.3 ms a call and
#: a replay asks ~12 times (docs/performance.md "A replay's fixed costs"). Keyed by the ``__init__`` function
#: itself, not the class, so a class whose ``__init__`` is replaced is read again.
_PARAMS: dict[Any, tuple[inspect.Parameter, ...]] = {}


def _params(name: str) -> tuple[inspect.Parameter, ...]:
    init = get_policy(name).__init__
    params = _PARAMS.get(init)
    if params is None:
        params = _PARAMS[init] = tuple(p for p in inspect.signature(init).parameters.values()
                                       if p.name not in ("self", "capacity_blocks", "context")
                                       and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
    return params


def policy_options(name: str) -> tuple[str, ...]:
    """The keyword options policy ``name`` takes besides ``capacity_blocks``, e.g. ``("protected_share",)``.

    Raises:
        UnknownNameError: unknown name.

    >>> policy_options("slru"), policy_options("lru")
    (('protected_share',), ())
    """
    return tuple(p.name for p in _params(name))


def policy_defaults(name: str) -> dict[str, Any]:
    """Option -> default value of policy ``name`` (``pcs policies``)."""
    return {p.name: (None if p.default is p.empty else p.default) for p in _params(name)}


_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def _float_of(value: OutOfRangeText) -> Any:
    """An integer past 64 bits (ASCII digits, :func:`spec_value`) as the float a float option takes, or, past a
    float's range too (309 digits or more), an :class:`OutOfRangeText` of kind ``"float"``."""
    number = float(str(value))      # float() reads any count of digits (inf past the range), never raising
    return number if math.isfinite(number) else _out_of_range(str(value), "float", OUT_OF_FLOAT_RANGE)


def number_option(value: Any, wanted: str, lead: str = "") -> Any:
    """``value`` (as :func:`spec_value` read it) as an option of type ``wanted`` reads it: the one rule of the
    number options of eviction policies (:func:`typed_option`), admission kinds and routers (docs/policies.md
    "Option values"). ``"float"``: an integer past 64 bits is the float it is (``-99999999999999999999`` is
    -1e20, which the option then bounds), one past a float's range too (309 digits or more) and a float beyond
    it (``1e999``) are out of range; ``"int"``: an integer past 64 bits is out of range (a float such as
    ``1e999`` is left for the option's own "an integer" message). Anything else is returned as it is.

    >>> number_option(spec_value("-99999999999999999999"), "float"), number_option("x", "int")
    (-1e+20, 'x')

    Raises:
        UserError: ``lead`` then why the number is out of range (:func:`refuse_out_of_range`).
    """
    if wanted == "float" and isinstance(value, OutOfRangeText) and value.kind == "int":
        value = _float_of(value)    # a number all the same (-1e20): the option bounds it
    refuse_out_of_range(value, wanted, lead)
    return value


def typed_option(policy: str, key: str, value: Any, default: Any) -> Any:
    """Option ``key`` of a policy spec (``value`` as :func:`spec_value` read it) typed by its ``__init__`` default
    (docs/policies.md "Option values"): a bool default takes true/false/1/0 (any case), an int default an integer,
    a float default a number (as float); a str default takes a number no option holds (an
    :class:`OutOfRangeText`) as plain text; any other default (None, none) leaves the value as read (a number no
    option holds is refused by :func:`_arguments`).

    >>> typed_option("lifo", "keep_reused", "False", False), typed_option("slru", "protected_share", 1, 0.8)
    (False, 1.0)

    Raises:
        UserError: (a ValueError) a value that does not convert; one line naming the policy and the option; a
            number out of the option's type's range (:func:`refuse_out_of_range`).
    """
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        value = number_option(value, "float" if isinstance(default, float) else "int")
    if isinstance(default, bool):
        typed = _BOOLS.get(str(value).lower())
        want = "true or false"
    elif isinstance(default, int):
        typed, want = (value if isinstance(value, int) else None), "an integer"
    elif isinstance(default, float):
        typed, want = (float(value) if isinstance(value, (int, float)) else None), "a number"
    elif isinstance(default, str) and isinstance(value, OutOfRangeText):
        return str(value)       # a text option takes the number as its text: the policy checks it (lfu:aging=1e999)
    else:
        return value
    if typed is None:
        shown = as_typed(str(value))    # as written; in quotes when it holds a hidden character (one line)
        raise UserError(f"eviction policy {shown_repr(policy)} option {key}={shown}: expected {want} "
                        f"(its default is {shown_repr(default)})")
    return typed


def _arguments(name: str, options: dict[str, Any]) -> tuple[type[EvictionPolicy], dict[str, Any]]:
    """The class of policy ``name`` (a spec ``NAME:OPTION=VALUE,...``) and the keyword arguments its constructor
    gets: the spec's options typed by their defaults (:func:`typed_option`), then ``options`` (None: not given),
    each checked to be one the policy takes -- the one place :func:`make_policy` and :func:`check_policy` read them.

    Raises:
        UserError: unknown name (:class:`pcs.errors.UnknownNameError`), a malformed spec, an option the policy
            does not take (the message names it and the options the policy takes), a value of the wrong type.
    """
    cls = get_policy(name)
    _, spec_opts = parse_policy_spec(name)
    takes = policy_options(name)
    defaults = policy_defaults(name)
    spec_opts = {k: typed_option(cls.name, k, v, defaults[k]) if k in defaults else v for k, v in spec_opts.items()}
    # an option of None is not given: it must not hide the spec's value (slru:protected_share=0 with no
    # --protected-share flag passes protected_share=None here)
    given = {k: v for k, v in {**spec_opts, **{k: v for k, v in options.items() if v is not None}}.items()
             if v is not None}
    for key in given:
        if key not in takes:
            # each option written NAME=, as a spec takes it (slru:protected_share=0.2): the command line's message
            # rewriting (pcs/cli/common.py) leaves a name followed by '=' as it is
            options_of = {n: policy_options(n) for n in registered_names()}
            raise UserError(no_such_option("eviction policy", cls.name, key, {**options_of, cls.name: takes}))
    for key, value in given.items():    # a number no option holds reaches no policy as text (a None default)
        refuse_out_of_range(value, "float", f"eviction policy {shown_repr(cls.name)} option {key}: ")
    return cls, given


def make_policy(name: str, capacity_blocks: int, context: PolicyContext | None = None,
                **options: Any) -> EvictionPolicy:
    """Instantiate policy ``name`` (or a spec ``NAME:OPTION=VALUE,...``) for a tier of ``capacity_blocks``.

    ``options`` go to the policy's constructor (e.g. ``protected_share`` for
    ``slru``) after those of the spec (whose values are typed by the defaults, :func:`typed_option`); an option whose value is None counts
    as not given (the policy's default applies). ``context`` goes to the
    policies that read the trace (:attr:`EvictionPolicy.needs`).

    Raises:
        UserError: unknown name (:class:`pcs.errors.UnknownNameError`), an
            option the policy does not take (the message names it and the
            options the policy takes), a bad option value, or a policy that
            needs a trace context without one; :class:`pcs.errors.PolicyError` (a ValueError) naming the
            policy when the constructor of a policy that is not pcs's own raises or skips the base class's
            (:func:`pcs.cache.policyguard.check_initialised`).
    """
    cls, given = _arguments(name, options)
    try:
        policy = cls(capacity_blocks, context=context, **given) if cls.needs else cls(capacity_blocks, **given)
    except Exception as err:
        if is_own(cls):
            raise
        raise raised(cls.name, "__init__", err) from err       # a plug-in's fault: named (a PolicyError)
    if not is_own(cls):
        check_initialised(policy)
    return policy


def check_policy(name: str, **options: Any) -> None:
    """The refusals :func:`make_policy` would make of ``name`` and ``options`` that do not depend on a tier's size
    or the trace, made before a run (:func:`pcs.engine.api.check_replay`, a sweep's plan): the name, each option's
    name and type (:func:`_arguments`, the same code) and, for pcs's own policies that read no trace, the values
    their constructors refuse (the constructor itself, on a tier of 0 blocks: a value's check never reads the size).
    A plug-in's constructor is not run before the run (it may do anything); a policy that reads the trace takes
    no option but the context.

    Raises:
        UserError: as :func:`make_policy`.
    """
    cls, given = _arguments(name, options)
    if is_own(cls) and not cls.needs:
        cls(0, **given)


def _per_policy(names: Sequence[str], options: dict[str, Any]) -> list[dict[str, Any]]:
    """Each policy's share of the shared ``options`` (those it takes).

    Raises:
        UserError: an option (not None) that none of ``names`` takes, naming the policies that take it.
    """
    for key, value in options.items():
        if value is not None and not any(key in policy_options(n) for n in names):
            owners = [p for p in registered_names() if key in policy_options(p)]
            raise UserError(f"option {key} belongs to eviction policy {' / '.join(owners) or '(none)'}, which no "
                             f"tier uses here (policies: {', '.join(dict.fromkeys(names))})")
    return [{k: v for k, v in options.items() if k in policy_options(n)} for n in names]


def _labelled(label: str | None, spec: str, run: Any) -> Any:
    """``run()``; a plain :class:`UserError` it raises (a bad option or value, whose message names neither the
    argument nor the spec) led by ``label`` (``policy='lfu:aging=x'``), with ``spec`` kept as the error's
    ``refused_value`` (a sweep plan names the line it is written on); an unknown name's error (an
    :class:`UnknownNameError`) is led by ``label`` too, as every keyword's refusal is (:func:`pcs.errors.lead_with`),
    and keeps its type. A plug-in's own error (:class:`PolicyError`) is left as it is."""
    try:
        return run()
    except UserError as exc:
        if label is None or type(exc) not in (UserError, UnknownNameError):
            raise
        if type(exc) is UnknownNameError:
            raise lead_with(exc, label)
        err = UserError(f"{label}: {exc}")
        err.refused_value = _refused_value(label, spec)
        raise err from None


def _refused_value(label: str, spec: str) -> str | None:
    """The value a sweep plan holds for the argument ``label`` names (:func:`pcs.sweep.kinds.culprit` finds its
    line by it): ``policy``'s spec; ``TIER=SPEC`` for ``tier_policies['TIER']`` (a plan's list form,
    ``tier-policy = ["cpu=lfu:aging=x"]``); None for any other (a tier's own policy): no line rather than the line
    of another option that holds the same spec (``policy = "lfu:aging=x"`` beside a tier-policy table)."""
    if label.startswith("policy="):
        return spec
    m = re.match(r"""tier_policies\[(['"])(.*?)\1\]""", label)
    return f"{m.group(2)}={spec}" if m else None


def make_policies(names: Sequence[str], capacities_blocks: Sequence[int], context: PolicyContext | None = None,
                  labels: Sequence[str] | None = None, **options: Any) -> list[EvictionPolicy]:
    """One policy per tier; each given option goes to the tiers whose policy takes it.

    Args:
        names: policy name or spec (or alias) per tier.
        capacities_blocks: capacity per tier, blocks (same length as ``names``).
        context: the trace context of this hierarchy (one clock for all its tiers), for the policies that need it.
        labels: per tier, the argument that gave its policy (``policy='lfu'``), which leads a refusal of its
            options or values (:func:`_labelled`); None: none.
        options: shared options, e.g. ``protected_share``; None = not given.
    Raises:
        UserError: unknown name, or an option none of ``names`` takes (the
            message names the option and the policies that take it), or as :func:`make_policy`.
    """
    labels = list(labels) if labels is not None else [None] * len(names)
    return [_labelled(lab, n, lambda: make_policy(n, c, context, **o))
            for n, c, o, lab in zip(names, capacities_blocks, _per_policy(names, options), labels)]


def check_policies(names: Sequence[str], labels: Sequence[str] | None = None, **options: Any) -> None:
    """What :func:`make_policies` refuses of ``names`` and ``options`` before any tier is sized or the trace is
    read (:func:`check_policy` per tier, the same labels and shared-option rule).

    Raises:
        UserError: as :func:`make_policies`.
    """
    labels = list(labels) if labels is not None else [None] * len(names)
    for n, lab in zip(names, labels):       # an unknown name led by the argument that gave it
        _labelled(lab, n, lambda: policy_options(n))
    for n, o, lab in zip(names, _per_policy(names, options), labels):
        _labelled(lab, n, lambda: check_policy(n, **o))
