"""The Python tier's guard on an eviction policy that is not one of pcs's own (a plug-in, a subclass).

:class:`pcs.cache.tier.Tier` calls a policy on every state change and trusts its answers to keep the
tier's capacity and pin counts; a policy written outside pcs may raise, or answer against the contract of
``pcs/cache/policies/base.py``. :func:`guard` wraps such a policy so that every call that raises becomes one
:class:`pcs.errors.PolicyError` naming the policy and the method, and ``evict(n)`` answers a list (or None);
the tier checks each list itself (:meth:`pcs.cache.tier.Tier._claim`: exactly ``n`` distinct blocks it holds
unpinned). The messages are those of the compiled host, ``pcs/cache/_pol_py.c`` (``py_fail``, ``py_broke``), so
both engines stop a broken policy with the same line. pcs's own policies are not wrapped (no cost), and the tier
does not check the answers of its built-in ones (:func:`trusted`): ``tests/cache/test_policies_contract.py`` holds each
of them to the contract, so the check would only cost time on the reference's hot path (4-10 % of a replay).
"""
from __future__ import annotations

import operator
from typing import Any

from pcs.errors import STOPS, PolicyError, shown_repr
from pcs.units import a_or_an

__all__ = ["GuardedPolicy", "guard", "broke", "broke_count", "broke_handles", "raised", "BrokeContract",
           "is_own", "trusted", "check_initialised", "as_index"]


class BrokeContract(PolicyError):
    """A contract error the host itself worded (:func:`broke`, :func:`broke_count`, :func:`broke_handles`): it
    already names the policy, so the guard passes it on as it is (not as "raised ... in evict()")."""


def raised(name: str, method: str, err: BaseException) -> PolicyError:
    """The error for a policy ``name`` whose ``method`` raised ``err`` (chain it: ``raise ... from err``)."""
    return PolicyError(f"eviction policy {shown_repr(name)} raised {type(err).__name__} in {method}(): {err}")


def broke(name: str, what: str, key: Any, n: int, label: str = "block") -> PolicyError:
    """The error for a policy ``name`` whose answer broke the contract (``what``; ``key``: the block or count,
    printed as given after ``label``: "answer" for an item of the policy's answer, as pcs/cache/_pol_py.c
    ``pyhost_broke_ans``)."""
    return BrokeContract(f"eviction policy {shown_repr(name)} broke the contract of pcs/cache/policies/base.py: {what} "
                         f"({label} {shown_repr(key)}, n = {n})")


def broke_count(name: str, call: str, n: int, got: int | str | None, unit: str = "block",
                file: str = "base.py") -> PolicyError:
    """The error for a policy ``name`` whose whole answer to ``call(n)`` (``evict`` / ``victims``, contract
    ``pcs/cache/policies/{file}``) was None (``got`` None), ``got`` items (``unit``: their name, singular), not
    ``n``, or of a type not a sequence (``got``: the type's name, a str): it names what was asked and what came
    back, never a block (the answer holds none to name); the compiled hosts' ``pyhost_broke_count``
    (pcs/cache/_pol_py.c) word it alike."""
    if got is None:
        what = f"returned None though the tier holds at least {n} unpinned {unit}{'s' * (n != 1)}"
    elif isinstance(got, str):
        what = f"returned {a_or_an(got)}, not a list of {n} {unit}{'s' * (n != 1)} or None"
    else:
        what = f"returned {got} {unit}{'s' * (got != 1)}, not {n}"
    return BrokeContract(f"eviction policy {shown_repr(name)} broke the contract of pcs/cache/policies/{file}: {call}({n}) {what}")


def broke_handles(name: str, call: str, why: str) -> PolicyError:
    """The error for an :class:`pcs.cache.policies.array.ArrayPolicy` ``name`` whose answer to ``call``
    (``"victims(2)"``, ``"order_handles()"``) broke the handle contract (``why``), worded as the compiled host's
    (pcs/cache/_pol_pyarr.c ``pa_broke_type``)."""
    return BrokeContract(f"eviction policy {shown_repr(name)} broke the contract of pcs/cache/policies/array.py: {call} {why}")


def as_index(answer: Any) -> int | None:
    """``answer`` (one item of a policy's ``evict`` / ``order`` / ``victims`` / ``order_handles`` answer) as an
    int, or None if a policy may not answer it: the one rule of both hosts (docs/policies.md "What a policy may
    answer"; the compiled hosts' ``pyhost_index``, pcs/cache/_pol_py.c): any object with ``__index__`` (an int, a
    numpy int) but a bool; a float (even 5.0), a str, None are refused."""
    if type(answer) is int:
        return answer
    if isinstance(answer, bool) or not hasattr(type(answer), "__index__"):
        return None
    try:
        return operator.index(answer)
    except Exception:
        return None


def check_initialised(policy: Any) -> None:
    """Raise :class:`PolicyError` if ``policy``'s ``__init__`` skipped the base class's (``super().__init__``): the
    attributes :class:`pcs.cache.policies.base.EvictionPolicy` sets (``capacity_blocks``) and, for a policy on
    the handle contract, those of :class:`pcs.cache.policies.array.ArrayPolicy` (``flags``, a bytearray, and its
    key map) must be there, or the hosts would fail later with an error that does not say why."""
    from pcs.cache.policies.array import ArrayPolicy      # the registry imports this module: import on use

    need = ("capacity_blocks", "flags", "_handle", "_key", "_next", "_runs") if isinstance(policy, ArrayPolicy) \
        else ("capacity_blocks",)
    missing = [a for a in need if not hasattr(policy, a)]
    if not missing and isinstance(policy, ArrayPolicy) and not isinstance(policy.flags, bytearray):
        missing = ["flags (a bytearray)"]
    if missing:
        base = "ArrayPolicy" if isinstance(policy, ArrayPolicy) else "EvictionPolicy"
        name = getattr(policy, "name", "") or type(policy).__name__
        raise PolicyError(f"eviction policy {shown_repr(name)}: its __init__ did not call super().__init__(capacity_blocks) "
                          f"({base}, pcs/cache/policies/{'array' if base == 'ArrayPolicy' else 'base'}.py): no "
                          f"attribute {missing[0]}")


def is_own(cls: type) -> bool:
    """Whether policy class ``cls`` is one of pcs's own (defined in the ``pcs`` package: the registered policies,
    checked by tests/cache/test_policies_contract.py, and wrappers such as ``RetainingPolicy``)."""
    return cls.__module__.startswith("pcs.")


def trusted(policy: Any) -> bool:
    """Whether a tier may take ``policy``'s ``evict`` answers unchecked: it is an instance of one of pcs's built-in
    classes itself (:func:`pcs.cache.policies.is_builtin`), each held to the contract by
    ``tests/cache/test_policies_contract.py``. A plug-in, a subclass of a built-in, a :class:`GuardedPolicy` and a
    wrapper such as ``RetainingPolicy`` are not: their answers are checked (:meth:`pcs.cache.tier.Tier._claim`)."""
    from pcs.cache.policies import is_builtin      # the registry imports this module: import on use

    return is_builtin(type(policy))


def guard(policy: Any) -> Any:
    """``policy`` (an :class:`pcs.cache.policies.EvictionPolicy`) itself if it is one of pcs's own
    (:func:`is_own`), else a :class:`GuardedPolicy` around it. A wrapper of pcs's own around another policy
    (``inner``: ``RetainingPolicy``, docs/semantics.md §8) has that one guarded in place."""
    if isinstance(policy, GuardedPolicy):
        return policy
    if not is_own(type(policy)):
        return GuardedPolicy(policy)
    inner = getattr(policy, "inner", None)
    if inner is not None and not isinstance(inner, GuardedPolicy) and not is_own(type(inner)):
        policy.inner = GuardedPolicy(inner)
    return policy


def _call(self: "GuardedPolicy", method: str, *args: Any) -> Any:
    """``self.inner.method(*args)``; an exception it raises becomes :func:`raised` (chained)."""
    try:
        return getattr(self.inner, method)(*args)
    except (*STOPS, BrokeContract):  # Ctrl-C, a signal: not the policy's doing (the CLI's own line, 130 / 143);
        raise                        # a host check's error already names the policy
    except BaseException as err:     # the policy's own fault, SystemExit too: named, one line at the CLI
        raise raised(self.name, method, err) from err


class GuardedPolicy:
    """A policy seen through :func:`_call`: the same methods, each raising only :class:`PolicyError`.

    ``evict(n)`` returns None or a list (any other iterable is listed; a non-iterable or a str is refused).
    Other attributes (``name``, ``reuse_blind``, options) are the policy's own.
    """

    __slots__ = ("inner", "name", "held")

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "") or type(inner).__name__
        self.held = 0       # blocks the host has made evictable and not taken back (a tier starts empty)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def __len__(self) -> int:
        """The host's own count (add - remove - drop - evicted), never the policy's ``__len__``: the compiled
        host (pcs/cache/_pol_py.c) does not ask the policy either, so a wrong ``__len__`` changes neither engine's
        decisions (before, -1 or 0 here broke the tier's slot arithmetic with an internal error)."""
        return self.held

    def __contains__(self, key: int) -> bool:
        return _call(self, "__contains__", key)

    def add(self, keys, reused: bool = False) -> None:
        n = len(keys)           # counted first: a policy may change the list it is handed
        _call(self, "add", keys, reused)
        self.held += n

    def remove(self, keys) -> None:
        keys = keys if isinstance(keys, (list, tuple)) else list(keys)
        n = len(keys)
        _call(self, "remove", keys)
        self.held -= n

    def drop(self, keys) -> None:
        n = len(keys)
        _call(self, "drop", keys)
        self.held -= n

    def expect(self, keys) -> None:
        _call(self, "expect", keys)

    def touch(self, keys) -> None:
        _call(self, "touch", keys)

    def order(self) -> list:
        return _call(self, "order")

    def _check(self) -> None:
        _call(self, "_check")

    def evict(self, n: int) -> list | None:
        got = _call(self, "evict", n)
        if got is None:
            return got
        if type(got) is not list:
            if isinstance(got, (str, bytes)) or not hasattr(got, "__iter__"):
                raise broke_count(self.name, "evict", n, type(got).__name__)
            try:
                got = list(got)
            except Exception as err:
                raise raised(self.name, "evict", err) from err
        self.held -= len(got)   # a wrong answer stops the run (Tier._claim), so the count only matters for a right one
        return got
