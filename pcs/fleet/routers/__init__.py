"""Routers behind a registry: one module per router, each citing its source (docs/semantics.md §17).

A router picks the instance of each request in arrival order from what a
real router sees (:class:`Request`): the request, the router's cache index
and the load in flight (:mod:`pcs.fleet.index`). It holds no cache state of
its own (mechanism apart from policy).

``parse_router("cache-aware:overlap=2,load=1")`` -> a router instance; the
options of each router are its ``OPTIONS`` (name -> (type, default, meaning)).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Sequence
from pcs.choices import MAX_STALE_S
from pcs.choices import malformed_option, no_such_option
from pcs.errors import UnknownNameError, UserError, shown_repr

__all__ = ["ROUTERS", "Request", "Router", "parse_router", "router_names", "stale_view_applies"]

#: Router name -> module under pcs.fleet.routers.
ROUTERS = {
    "round-robin": "round_robin",
    "random": "random_choice",
    "least-loaded": "least_loaded",
    "session": "session",
    "consistent-hash": "consistent_hash",
    "prefix": "prefix",
    "cache-aware": "cache_aware",
}


def router_names() -> tuple[str, ...]:
    """The registered router names, in registry order."""
    return tuple(ROUTERS)


@dataclass(slots=True)
class Request:
    """What a router sees of one request (reused from request to request).

    Attributes:
        position: 0-based position in the trace.
        arrival_s: arrival time, seconds.
        prompt_tokens: prompt length, tokens.
        blocks: the ids that may hit (``BlockRules.max_hit_blocks`` leading ids), list of int.
        session_id: the trace's session/conversation id, or None.
    """

    position: int = 0
    arrival_s: float = 0.0
    prompt_tokens: int = 0
    blocks: Sequence[int] = ()
    session_id: int | None = None


class Router:
    """Base of the routers: options checked and stored; ``choose`` is each router's rule.

    Class attributes:
        name: registry name; source: where the rule comes from;
        OPTIONS: option name -> (type, default, meaning); uses_index: reads the cache index;
        uses_blocks: reads ``Request.blocks`` (the routing pass lists the ids only for such a router).
        BOUNDS: numeric option name -> (lo, hi), both included (default: >= 0, finite).
    """

    name = ""
    source = ""
    OPTIONS: dict[str, tuple[type, Any, str]] = {}
    BOUNDS: dict[str, tuple[float, float]] = {}
    uses_index = False
    uses_blocks = False

    def __init__(self, instances: int, **options: Any) -> None:
        self.instances = int(instances)
        for k, v in options.items():
            if k not in self.OPTIONS:
                raise UserError(no_such_option("router", self.name, k, {**_options_of(), self.name: self.OPTIONS}))
        self.options = {k: options.get(k, d) for k, (_, d, _) in self.OPTIONS.items()}

    def choose(self, req: Request, index: Any, load: Any) -> int:
        """The instance (0-based) of ``req``; ``index``: CacheIndex, ``load``: LoadTracker."""
        raise NotImplementedError

    def assign_all(self, batch: Any, hittable_blocks: Any) -> Any:
        """Every request's instance at once (int64 array, shape (n,)) when the choice depends on the request
        alone -- the same as :meth:`choose` request by request --, else None (the routing pass asks
        :meth:`choose` per request).

        Args:
            batch: the whole trace (:class:`pcs.trace.request.RequestBatch`, arrival order).
            hittable_blocks: int64 (n,), each request's hittable leading blocks (``Request.blocks``' length).
        """
        return None

    def native_rule(self) -> tuple[int, float, float] | None:
        """``(kind, overlap weight, load weight)`` of this router's rule in the compiled routing pass
        (``pcs/fleet/_route.c``: 0 prefix, 1 cache-aware, 2 least-loaded by requests, 3 by tokens), or None
        when the pass has no twin of :meth:`choose` (the Python loop runs). A subclass that overrides
        :meth:`choose` gets None (``_native_if``)."""
        return None

    def _native_if(self, owner: type, rule: tuple[int, float, float]) -> tuple[int, float, float] | None:
        """``rule`` when ``choose`` is still ``owner.choose`` (the rule the twin mirrors), else None."""
        return rule if type(self).choose is owner.choose else None

    def describe(self) -> str:
        """``name`` and its options, e.g. ``cache-aware:overlap=2.0,load=1.0``."""
        opts = ",".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.name}:{opts}" if opts else self.name


_KIND = {int: "an integer", float: "a finite number"}


def _convert(router: str, key: str, typ: type, text: str, bounds: tuple | None) -> Any:
    """``text`` as ``typ``, inside ``bounds`` (lo, hi) both included; UserError naming the router and option.

    One message per option whatever is wrong (not a number, nan/inf, out of range), e.g.
    ``router 'cache-aware': option overlap must be a finite number in [0, 1e+06], got nan``, the value as read
    (``-1.50`` -> ``got -1.5``, ``1e7`` -> ``got 10000000.0``, as a policy's and an admission's out-of-range value
    is shown), a text that is no number in quotes (``got 'abc'``); a float option's
    value is read as a policy's or an admission's is (:func:`pcs.cache.policies.number_option`: an integer past
    64 bits is the float it is, a number past a float's range says so)."""
    if typ is str:
        return text
    lo, hi = bounds if bounds is not None else (0, None)
    fmt = (lambda v: f"{v:,}") if typ is int else (lambda v: f"{v:g}")
    what = f"{_KIND[typ]} in [{fmt(lo)}, {fmt(hi)}]" if hi is not None else f"{_KIND[typ]} >= {fmt(lo)}"
    if typ is float:
        from pcs.cache.policies import number_option, spec_value

        value = number_option(spec_value(text), "float", f"router {shown_repr(router)}: option {key}: ")
        value = float(value) if isinstance(value, (int, float)) else None     # 1 and -0 as floats: 1.0, 0.0
    else:       # an int option holds up to its bound, 2^64 - 1 for a seed: past 64 bits signed (spec_value's) too
        from pcs.units import ascii_int

        try:        # ASCII digits only (docs/semantics.md §16): int('１２') would read full-width digits
            value = ascii_int(text)
        except ValueError:
            value = None
    if value is None or value != value or not lo <= value <= (hi if hi is not None else float("inf")) \
            or value in (float("inf"), float("-inf")):     # a number as read (-1.5, 10000000.0), as a policy's is
        got = shown_repr(text) if value is None else value
        raise UserError(f"router {shown_repr(router)}: option {key} must be {what}, got {got}")
    return value + 0 if typ is float else value    # -0.0 -> 0.0: one name for one router (pcs compare)


def _options_of() -> dict[str, tuple[str, ...]]:
    """Router name -> its options (every router module imported: for a refused option's message only)."""
    return {n: tuple(importlib.import_module(f"pcs.fleet.routers.{m}").ROUTER.OPTIONS) for n, m in ROUTERS.items()}


def _parse_options(name: str, cls: type, rest: str) -> dict[str, Any]:
    """``opt=v,opt=v`` (exact: no spaces, no empty item, no trailing comma) -> {option: value}; UserError."""
    options: dict[str, Any] = {}
    for part in rest.split(","):
        key, sep, text = part.partition("=")
        if not sep or not key or not text:      # the one wording of a malformed option (pcs.choices)
            raise UserError(malformed_option("router", name, part, f"{name}:{rest}", cls.OPTIONS))
        if key not in cls.OPTIONS:      # the one refusal of an option a name does not take (pcs.choices)
            raise UserError(no_such_option("router", name, key, _options_of()))
        if key in options:
            raise UserError(f"router {shown_repr(name)}: option {key} given twice")
        if text != text.strip() or "_" in text:      # exact values: ' 1' and '1_000' are refused
            raise UserError(f"router {shown_repr(name)}: option {key} has spaces or '_' separators, got {shown_repr(text)}")
        options[key] = _convert(name, key, cls.OPTIONS[key][0], text, cls.BOUNDS.get(key))
    return options


def parse_router(spec: str | Router, instances: int) -> Router:
    """``NAME`` or ``NAME:opt=v,opt=v`` -> a router for ``instances`` instances.

    Raises:
        UserError: unknown router (names are exact: ``ROUND-ROBIN``, `` random`` and ``''`` are unknown) or
            option, an empty option list (``random:``, ``random:seed=1,``), an option given twice, a value
            with spaces or ``_`` separators, of the wrong type, not finite or out of its bounds.
    """
    if isinstance(spec, Router):
        return spec
    from pcs.argcheck import check_text

    name, colon, rest = check_text(spec, "router", "a router name (or a Router)").partition(":")
    if name not in ROUTERS:     # exact names, as every other choice of pcs (--compute, --restore-policy)
        raise UnknownNameError("router", name, ROUTERS)
    cls = importlib.import_module(f"pcs.fleet.routers.{ROUTERS[name]}").ROUTER
    options = _parse_options(name, cls, rest) if colon else {}
    return cls(instances, **options)


def stale_view_applies(routers: Sequence[Router], stale_s: float | None) -> tuple[bool, ...]:
    """Which of ``routers`` a delay of ``stale_s`` seconds on the cache index changes: those that read the
    index (``uses_index``: prefix, cache-aware). The delay is a property of the index (docs/semantics.md §17,
    ``--router-stale-s``); a router that reads only the requests and the load in flight sees nothing late.

    One rule for the API and the CLI (:func:`pcs.fleet.fleet_replay`, :func:`pcs.fleet.compare.compare_routers`,
    ``pcs replay``/``pcs compare``): None or 0 (an exact view) applies to no router and is accepted with any; a
    delay > 0 that no router given reads is refused rather than recorded as a setting that changed nothing.

    Returns:
        one bool per router: the delay is passed to it (False for every router when ``stale_s`` is None or 0).
    Raises:
        UserError: ``stale_s`` negative or NaN, or > 0 and no router of ``routers`` reads the index.
    """
    if stale_s is not None:     # the CLI's --router-stale-s range (Duration(0, 1e9)): finite, at most 10^9 s
        from pcs.argcheck import check_real

        stale_s = check_real(stale_s, "router_stale_s=", finite=False)
        if not stale_s >= 0:
            raise UserError(f"router_stale_s= must be >= 0 seconds, got {shown_repr(stale_s)}")
        check_real(stale_s, "router_stale_s=", hi=MAX_STALE_S)
    applies = tuple(bool(stale_s) and r.uses_index for r in routers)
    if stale_s and not any(applies):
        raise UserError(f"router_stale_s={stale_s:g} s delays the cache events a router reads, "
                         f"and no router in use reads them ({', '.join(r.name for r in routers)}; without router= "
                         "the default is round-robin; prefix and cache-aware do): drop it or route with one of those")
    return applies
