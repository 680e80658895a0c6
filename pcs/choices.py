"""The names and limits the command line offers, in one module that imports nothing.

``pcs replay --help`` shows every choice below; importing the modules that
use them (the cache hierarchy, the engine, the trace readers, the fleet)
would load numpy first, about 0.1 s of the 0.25 s the help may take
(benchmarks/bench_startup.py). Each constant is defined here once and
re-exported by the module whose rule it is, under the name it had there.
``tests/cli/test_import_hygiene.py`` checks that ``pcs replay --help``
imports no numpy or pyarrow, and that the built-in policy names equal the
registry's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from pcs.errors import shown_repr

if TYPE_CHECKING:     # annotations only: this module imports nothing at run time
    from collections.abc import Iterable, Mapping
    from typing import Any

__all__ = ["WRITE_POLICIES", "TIMINGS", "TRACE_FORMATS", "LENGTH_ONLY_FORMATS", "ON_ERROR", "MAX_INSTANCES", "MAX_STALE_S",
           "BUILTIN_POLICIES", "POLICY_ALIASES", "DEFAULT_POLICY", "MAX_BLOCK_SIZE",
           "DEFAULT_TOKEN_BLOCK_SIZE", "CLOSE_CUTOFF", "did_you_mean", "close_tail", "option_elsewhere", "options_list", "no_such_option", "malformed_option",
           "name_after_comma", "not_among_tiers", "close_names", "meant"]

#: ``back``: evicted blocks move down one tier; ``through``: computed blocks are
#: copied to every lower tier at once and evictions drop (docs/semantics.md §7; :mod:`pcs.cache.hierarchy`).
WRITE_POLICIES: tuple[str, ...] = ("back", "through")

#: Replay timings (docs/semantics.md §9; :mod:`pcs.engine.engine`).
TIMINGS: tuple[str, ...] = ("modeled", "sequential")

#: Trace formats ``--trace-format`` takes (:mod:`pcs.trace.api`, docs/traces-formats.md).
TRACE_FORMATS: tuple[str, ...] = ("mooncake", "bailian", "tokens", "parquet", "azure", "burstgpt")
#: Formats that record lengths only: their block hashes are synthesised.
LENGTH_ONLY_FORMATS: tuple[str, ...] = ("azure", "burstgpt")
#: ``--on-error``: stop at the first bad trace line, or skip bad lines.
ON_ERROR: tuple[str, ...] = ("raise", "skip")
#: Tokens per block, the one bound of ``--block-size``, ``open_trace(block_size=)`` and a Parquet trace's
#: ``pcs.block_size`` (vLLM pages are 16-128, Mooncake's ids 512; 2^20 leaves room, and keeps
#: :meth:`pcs.compute.ComputeModel.step_cost`'s fit points 2^20 and 2^21 tokens whole, distinct blocks).
#: Re-exported by :mod:`pcs.trace.request` and :mod:`pcs.cli.params`.
MAX_BLOCK_SIZE: int = 1 << 20
#: vLLM's default ``--block-size`` (16 tokens): the block size of the formats that carry tokens or lengths
#: (:mod:`pcs.trace.tokens`; :mod:`pcs.trace.api` reads it here, without the token reader and its hashing).
DEFAULT_TOKEN_BLOCK_SIZE: int = 16

#: The routers of a fleet, in the registry's order (:data:`pcs.fleet.routers.ROUTERS`: name -> module).
ROUTER_NAMES: tuple[str, ...] = ("round-robin", "random", "least-loaded", "session", "consistent-hash", "prefix",
                                 "cache-aware")
#: Most instances a fleet may have (a bound on memory and run time, not a modelling limit; :mod:`pcs.fleet.fleet`).
MAX_INSTANCES = 4096
#: Seconds of --router-stale-s / router_stale_s= at most (10^9 s, about 32 years: finite, fits int64 ns).
MAX_STALE_S = 1e9

#: The built-in eviction policies, in the registry's order (:mod:`pcs.cache.policies` registers one class per
#: name; plug-ins come after them and are accepted by ``--policy`` though ``--help`` lists only these).
BUILTIN_POLICIES: tuple[str, ...] = ("lru", "slru", "fifo", "arc", "s3fifo", "sieve", "lfu", "2q", "gdsf", "belady")
#: Other names accepted for a registered policy: alias -> registered name.
POLICY_ALIASES: dict[str, str] = {"protected": "slru"}
#: The policy used when none is named (vLLM's prefix cache and offloading default to LRU).
DEFAULT_POLICY = "lru"

#: How close a mistyped name must be to a known one to be suggested: ``difflib``'s ratio (twice the matching
#: characters over both lengths, case ignored) at least 0.6, click's cutoff for a mistyped ``--option`` (and
#: difflib's default): ``fifox`` -> ``fifo`` (0.89), ``llama-2-70`` -> ``llama-2-70b`` (0.95), ``h200x`` ->
#: ``h200`` (0.89); ``around`` is near neither ``back`` nor ``through`` (0.4, 0.46). At most 3 names.
CLOSE_CUTOFF = 0.6


def did_you_mean(name: object, words: Iterable[str], aliases: Mapping[str, str] | None = None) -> str:
    """The one "did you mean" of every unknown name (models, GPUs, links, dtypes, policies, admissions, routers,
    engines, trace formats, a sweep plan's options ...): ``"did you mean 'fifo'? "``, ``"did you mean one of:
    'a', 'b'? "`` when several are close (the closest first, difflib's order), or ``""`` when none is within
    :data:`CLOSE_CUTOFF`. ``aliases`` (alias -> name) are candidates too, but one name is suggested once by one
    spelling: ``h100-sx`` gets ``h100-sxm`` and ``h200-sxm``, not ``h100`` (an alias of ``h100-sxm``) besides.

    >>> did_you_mean("fifox", ["lru", "fifo", "arc"])
    "did you mean 'fifo'? "
    """
    return meant(close_names(name, words, aliases))


def close_names(name: object, words: Iterable[str], aliases: Mapping[str, str] | None = None) -> list[str]:
    """The names :func:`did_you_mean` suggests for ``name``, closest first (at most 3; none: ``[]``).

    >>> close_names("fifox", ["lru", "fifo", "arc"])
    ['fifo']
    """
    import difflib

    aliases = dict(aliases or {})
    spelled = {str(w).lower(): str(w) for w in (*words, *aliases)}
    found = difflib.get_close_matches(str(name).strip().lower(), list(spelled), n=3 + len(aliases),
                                      cutoff=CLOSE_CUTOFF)
    close: list[str] = []
    for word in (spelled[c] for c in found):
        if len(close) < 3 and aliases.get(word, word) not in {aliases.get(c, c) for c in close}:
            close.append(word)
    return close


def meant(close: Iterable[str]) -> str:
    """How a refusal suggests the names ``close``: ``"did you mean 'a'? "``, ``"did you mean one of: 'a', 'b'? "``,
    or ``""`` for none (:func:`did_you_mean`'s wording).

    >>> meant(["a", "b"]), meant([])
    ("did you mean one of: 'a', 'b'? ", '')
    """
    close = list(close)
    if not close:
        return ""
    which = repr(close[0]) if len(close) == 1 else "one of: " + ", ".join(repr(c) for c in close)
    return f"did you mean {which}? "


def close_tail(name: object, words: Iterable[str], aliases: Mapping[str, str] | None = None) -> str:
    """:func:`did_you_mean` for the end of a message: ``"; did you mean 'fifo'?"``, or ``""`` when no name is
    close (a message that ends in its list of valid names: ``must be one of a, b, got 'x'; did you mean 'a'?``).

    >>> close_tail("tokns", ["requests", "tokens"])
    "; did you mean 'tokens'?"
    """
    close = did_you_mean(name, words, aliases).strip()
    return f"; {close}" if close else ""


def not_among_tiers(option: str, name: str, tiers: Iterable[str], shown: str | None = None) -> str:
    """The refusal of ``option`` naming tier ``name`` that is none of ``tiers`` (``admit=``, ``tier_policies``,
    ``links``: one wording, and the :func:`did_you_mean` a mistyped ``--tier`` name gets); ``option`` empty: the
    refusal alone, for the caller to lead with the entry (``admit='cpux=reuse:2': names tier 'cpux', ...``).
    ``shown``: how the message quotes ``name`` (default ``repr``; a long one cut by the caller).

    >>> not_among_tiers("admit=", "cpux", ["gpu", "cpu"])
    "admit= names tier 'cpux', which is not among the tiers: gpu, cpu; did you mean 'cpu'?"
    """
    tiers = list(tiers)
    lead = f"{option} " if option else ""
    return (f"{lead}names tier {shown if shown is not None else repr(name)}, which is not among the tiers: "
            f"{', '.join(tiers)}{close_tail(name, tiers)}")


def options_list(takes: Iterable[str]) -> str:
    """How a refusal lists the options an eviction policy, an admission kind or a router takes (one wording for
    all three, as a spec writes them): ``its options: NAME=, ...``, or ``it takes no options`` (not ``its
    options: none``, which reads as a value).

    >>> options_list(("small_share", "ghost_share")), options_list(())
    ('its options: small_share=, ghost_share=', 'it takes no options')
    """
    takes = ", ".join(f"{t}=" for t in takes)
    return f"its options: {takes}" if takes else "it takes no options"


def no_such_option(what: str, name: str, key: Any, options_of: Mapping[str, Iterable[str]]) -> str:
    """The one refusal of option ``key`` that ``name`` (an eviction policy, an admission kind, a router: ``what``)
    does not take, ``options_of`` (name -> its options, ``name``'s own among them) saying what each takes: the option
    refused, :func:`option_elsewhere`, then :func:`options_list`; a ``name`` that takes no options says so once.

    >>> no_such_option("eviction policy", "lfu", "foo", {"lfu": ["aging"]})
    "eviction policy 'lfu' takes no option 'foo'; its options: aging="
    >>> no_such_option("eviction policy", "lru", "foo", {"lru": []})
    "eviction policy 'lru' takes no options, got 'foo'"
    """
    from pcs.errors import quoted

    takes = list(options_of.get(name, ()))
    elsewhere = option_elsewhere(key, name, options_of)
    if takes:
        return f"{what} {shown_repr(name)} takes no option {quoted(key, show=repr)}; {elsewhere}{options_list(takes)}"
    return (f"{what} {shown_repr(name)} takes no options, got {quoted(key, show=repr)}"
            + (f"; {elsewhere.rstrip('; ')}" if elsewhere else ""))


def name_after_comma(spec: str, names: Iterable[str], options: Iterable[str]) -> tuple[str, str, str] | None:
    """Where ``spec`` (``NAME[:OPTION=VALUE,...]``, an admission kind or an eviction policy) goes on, after a comma,
    with a second name of ``names`` (``reuse:2,tinylfu``, ``slru,lru``, ``slru:protected=0.5,lru``): (the name found,
    the spec before its comma, the spec from it on); None when no piece after a comma names one (a piece's word is
    its text before ``=`` or ``:``, case-insensitive), when the spec's own name is not one of ``names``, or when the
    word is one of the spec's own ``options`` (an option is never a second name). A comma separates a name's
    options; two names are combined otherwise (admission kinds with ``+``), so the refusal says that instead of
    reading the second name as an option.

    >>> name_after_comma("reuse:2,tinylfu", ["reuse", "tinylfu"], ["n"])
    ('tinylfu', 'reuse:2', 'tinylfu')
    >>> name_after_comma("retain:tokens=0-4096,duration=60", ["retain", "reuse"], ["tokens", "duration"]) is None
    True
    """
    pieces = str(spec).strip().split(",")
    known = {str(n).lower() for n in names}
    own = {str(o).lower() for o in options}

    def word(piece: str) -> str:
        return piece.partition(":")[0].partition("=")[0].strip().lower()

    if word(pieces[0]) not in known:
        return None
    for i, piece in enumerate(pieces[1:], 1):
        if word(piece) in known and word(piece) not in own:
            return word(piece), ",".join(pieces[:i]).strip(), ",".join(pieces[i:]).strip()
    return None


def malformed_option(what: str, name: str, part: str, spec: str, takes: Iterable[str]) -> str:
    """The one refusal of a malformed option ``part`` (no ``=``, an empty option name or value) of ``spec``
    (``NAME:OPTION=VALUE,...``) of ``name``, an eviction policy, an admission kind or a router (``what``), which
    takes ``takes``: the option, the whole spec when it holds more than that one, ``expected OPTION=VALUE`` and
    :func:`options_list`; a ``name`` that takes no options says so as :func:`no_such_option` does.

    >>> malformed_option("router", "least-loaded", "x", "least-loaded:x", ["by"])
    "router 'least-loaded': bad option 'x'; expected OPTION=VALUE; its options: by="
    >>> malformed_option("eviction policy", "slru", "=3", "slru:protected_share=0.5,=3", ["protected_share"])
    "eviction policy 'slru': bad option '=3' in 'slru:protected_share=0.5,=3'; expected OPTION=VALUE; its options: protected_share="
    >>> malformed_option("eviction policy", "lru", "x", "lru:x", [])
    "eviction policy 'lru' takes no options, got 'x'"
    """
    from pcs.errors import quoted

    takes = list(takes)
    if not takes:
        return no_such_option(what, name, part, {name: takes})
    whole = "" if part.strip() == str(spec).partition(":")[2].strip() else f" in {quoted(str(spec), show=repr)}"
    return f"{what} {shown_repr(name)}: bad option {quoted(part, show=repr)}{whole}; expected OPTION=VALUE; {options_list(takes)}"


def option_elsewhere(key: str, name: str, options_of: Mapping[str, Iterable[str]]) -> str:
    """What a refusal of option ``key`` of ``name`` (an eviction policy, an admission kind, a router) says next:
    when another of ``options_of`` (name -> its options, ``name``'s own among them) takes ``key``, that one
    (``"'protected_share' is an option of slru, not of s3fifo; "``: a look-alike of s3fifo's own would mislead),
    else :func:`did_you_mean` among ``name``'s options.

    >>> option_elsewhere("protected_share", "s3fifo", {"slru": ["protected_share"], "s3fifo": ["ghost_share"]})
    "'protected_share' is an option of slru, not of s3fifo; "
    >>> option_elsewhere("ghost_shar", "s3fifo", {"slru": ["protected_share"], "s3fifo": ["ghost_share"]})
    "did you mean 'ghost_share'? "
    """
    owners = [other for other, opts in options_of.items() if other != name and key in opts]
    if owners:
        return f"{shown_repr(key)} is an option of {' / '.join(owners)}, not of {name}; "
    return did_you_mean(key, options_of.get(name, ()))
