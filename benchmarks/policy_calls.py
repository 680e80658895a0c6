"""What a key-contract policy hosted in the compiled hierarchy is asked, and what its own Python costs.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces), the whole
``pcs.replay(trace, policy=P)`` with its defaults (two tiers, modeled timing, the
step scheduler unless ``--compute infinite``) as ``bench_policies.py`` runs it, for
the plug-ins ``py_lru`` (lru's Python class, pcs/cache/policies/lru.py) and
``demo_mru`` (tests/cache/plugin/pcs_demo_policy.py), both on the key contract
(pcs/cache/policies/base.py) hosted by pcs/cache/_pol_py.c.

Counted (one recorded replay per policy, a subclass that logs each call the host
makes, docs/policies.md "Two contracts"): per policy object (a tier of the modeled
run, of its sequential baseline, of the no-cache run) the calls and keys of
``add`` / ``remove`` / ``drop`` / ``touch`` / ``expect`` / ``evict``, and per block
access; and the keys a policy with LRU's rules could do without (``remove``
forgets, ``add`` and ``touch`` move a key to the end): between two decisions
(``evict`` / ``order`` calls) a key counts once if it is held before or after,
not at all if it was added and removed there (the contract itself lets the host
skip none: ``remove`` may remember, FIFO; ``touch`` may count, LFU).

Timed (CPU seconds, ``time.process_time``, best of ``--repeat`` alternated rounds):
the hosted replay; the recorded calls replayed on fresh policy objects of the
plain class with no hierarchy ("bare": the policy's own Python), checked to give
the recorded victims; the same calls on a policy whose methods do nothing
("null": the cost of the calls alone); and the whole replay with the compiled
``--peer`` policy (default ``fifo``: like a hosted policy, its sequential baseline
runs the compiled hierarchy, not lru's one-pass scan), the mechanism's share; the
wall seconds of the two whole replays beside (under load, several times their CPU).
At 1 M block accesses/s the whole call may take accesses / 1e6 seconds; peer +
bare above it means no host can reach the line with that policy's code.
Prints one human line per policy, then ONE JSON line last.
Usage: python benchmarks/policy_calls.py [--repeat 3] [--trace PATH] [--compute step|infinite]
       [--policy py_lru --policy demo_mru] [--peer fifo]
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections import Counter

import common
from bench_policies import InMemory, _replay, register_plugins

#: the key-contract methods a recorder logs (drop and expect only where the class defines its own: the base drop
#: calls remove, logged as such; an expect the class does not override is never called, Tier._expects).
METHODS = ("add", "remove", "touch", "evict", "drop", "expect")


def recorder(cls: type, log: list, owners: list) -> type:
    """A subclass of the policy class ``cls`` that appends ``(owner, method, args, answer)`` to ``log`` per call.

    ``owner`` indexes ``owners``, which gets each object's capacity in blocks as it is made (the host makes the
    modeled run's tiers, then the sequential baseline's, then the no-cache run's).
    """
    from pcs.cache.policies.base import EvictionPolicy

    def wrap(name: str):
        base = getattr(cls, name)

        def method(self, *args):
            out = base(self, *args)
            log.append((self._rec_owner, name, args, out))
            return out
        return method

    def init(self, *args, **kwargs):
        cls.__init__(self, *args, **kwargs)
        self._rec_owner = len(owners)
        owners.append(self.capacity_blocks)

    body = {m: wrap(m) for m in METHODS if m in METHODS[:4] or getattr(cls, m) is not getattr(EvictionPolicy, m)}
    return type(f"Recording{cls.__name__}", (cls,), dict(body, __init__=init, name=f"rec_{cls.name}"))


def record(src, name: str, mode: str) -> tuple[list, list]:
    """The calls the host makes on policy ``name`` in one replay of ``src``: (log, owners), see :func:`recorder`."""
    from importlib.metadata import EntryPoint

    from pcs.cache.policies import get_policy, load_plugins

    log: list = []
    owners: list = []
    rec = recorder(get_policy(name), log, owners)
    setattr(sys.modules[__name__], rec.__name__, rec)
    load_plugins([EntryPoint(rec.name, f"{__name__}:{rec.__name__}", "pcs.policies")])
    _replay(src, {"policy": rec.name, "compute_mode": mode})
    return log, owners


def counts(log: list, owners: list) -> list[dict]:
    """Per policy object: its capacity, calls and keys per method (``evict``: the victims asked for)."""
    out = [{"capacity_blocks": c, "calls": Counter(), "keys": Counter()} for c in owners]
    for owner, name, args, _ in log:
        out[owner]["calls"][name] += 1
        out[owner]["keys"][name] += args[0] if name == "evict" else len(args[0])
    return [dict(o, calls=dict(o["calls"]), keys=dict(o["keys"])) for o in out]


def lru_needed(log: list, n_owners: int) -> int:
    """Keys a policy with LRU's rules needs for the calls of ``log`` (module docstring): victims asked for, plus per
    window between two decisions each key held before or after it."""
    held: list[set] = [set() for _ in range(n_owners)]
    window: list[dict] = [{} for _ in range(n_owners)]
    need = 0
    for owner, name, args, answer in log:
        was, h = window[owner], held[owner]
        if name in ("evict", "order"):
            need += sum(1 for k, before in was.items() if before or k in h) + (args[0] if name == "evict" else 0)
            was.clear()
            h.difference_update(answer or ())
            continue
        for k in args[0]:
            was.setdefault(k, k in h)
            if name == "add":
                h.add(k)
            elif name in ("remove", "drop"):
                h.discard(k)
    return need + sum(sum(1 for k, before in w.items() if before or k in h) for w, h in zip(window, held))


class NullPolicy:
    """The methods a host calls, each doing nothing: what the calls alone cost."""

    def __init__(self, capacity_blocks: int) -> None:
        self.capacity_blocks = capacity_blocks

    def add(self, keys, reused=False):
        return None

    def remove(self, keys):
        return None

    touch = drop = expect = remove

    def evict(self, n):
        return None


def program(log: list, owners: list, cls: type) -> list:
    """The recorded calls bound to fresh objects of ``cls`` (one per owner, same capacities): [(method, args)]."""
    objs = [cls(c) for c in owners]
    return [(getattr(objs[owner], name), args) for owner, name, args, _ in log]


def replay_bare(log: list, owners: list, cls: type, check: bool = False) -> float:
    """CPU seconds of the recorded calls on fresh ``cls`` objects; ``check``: each ``evict`` answers as recorded
    (else SystemExit: the bare run would not be the replay's workload)."""
    prog = program(log, owners, cls)
    if check:
        for (fn, args), (_, name, _, answer) in zip(prog, log):
            got = fn(*args)
            if name == "evict" and list(got or ()) != list(answer or ()):
                raise SystemExit(f"policy_calls: {cls.__name__} answered evict{args} otherwise than when hosted")
        return 0.0
    t = time.process_time()
    for fn, args in prog:
        fn(*args)
    return time.process_time() - t


def measure(src, names: list[str], peer: str, mode: str, repeat: int) -> dict:
    """Record each policy once, then ``repeat`` alternated rounds of: the peer's replay, and per policy its hosted
    replay, its bare calls and the null calls; the best CPU seconds of each (and the best wall seconds of the
    whole replays)."""
    from pcs.cache.policies import get_policy

    logs = {n: record(src, n, mode) for n in names}
    for n in names:
        replay_bare(*logs[n], get_policy(n), check=True)
    gc.collect()
    gc.freeze()                 # the logs' 2 M keys out of the collector's way: the timed replays as in bench_policies
    best: dict = {}

    def keep(label: str, seconds: float, table: dict = best) -> None:
        table[label] = min(table.get(label, float("inf")), seconds)

    def whole(label: str, policy: str) -> None:
        t, w = time.process_time(), time.perf_counter()
        _replay(src, {"policy": policy, "compute_mode": mode})
        keep(label, time.process_time() - t)
        keep(label, time.perf_counter() - w, wall)

    wall: dict = {}
    for _ in range(repeat):
        whole(peer, peer)
        for n in names:
            whole(f"{n} hosted", n)
            keep(f"{n} bare", replay_bare(*logs[n], get_policy(n)))
            keep(f"{n} null", replay_bare(*logs[n], NullPolicy))
    return {"cpu_s": best, "wall_s": wall, "objects": {n: counts(*logs[n]) for n in names},
            "lru_needed_keys": {n: lru_needed(logs[n][0], len(logs[n][1])) for n in names}}


def summary(n: str, res: dict, peer: str, accesses: int) -> dict:
    """One policy's figures: totals, per access, the CPU split and the ceiling peer + bare allows."""
    calls, keys = Counter(), Counter()
    for o in res["objects"][n]:
        calls.update(o["calls"])
        keys.update(o["keys"])
    s = res["cpu_s"]
    ceiling = accesses / (s[peer] + s[f"{n} bare"])
    return {"calls": dict(calls), "keys": dict(keys), "calls_total": sum(calls.values()),
            "keys_total": sum(keys.values()), "keys_per_access": sum(keys.values()) / accesses,
            "lru_needed_keys": res["lru_needed_keys"][n], "hosted_s": s[f"{n} hosted"], "bare_s": s[f"{n} bare"],
            "null_s": s[f"{n} null"], "peer_s": s[peer], "hosted_wall_s": res["wall_s"][f"{n} hosted"],
            "peer_wall_s": res["wall_s"][peer], "hosted_accesses_per_s": accesses / s[f"{n} hosted"],
            "ceiling_accesses_per_s": ceiling, "objects": res["objects"][n]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=common.count, default=3)
    ap.add_argument("--trace", default=str(common.MOONCAKE_CONV))
    ap.add_argument("--compute", choices=("step", "infinite"), default="step")
    ap.add_argument("--policy", action="append", default=[], help="key-contract policies (default py_lru, demo_mru)")
    ap.add_argument("--peer", default="fifo", help="the compiled policy whose replay is the mechanism's share")
    args = ap.parse_args()
    common.need_trace(args.trace, "policy_calls")
    register_plugins()
    names = args.policy or ["py_lru", "demo_mru"]
    src = InMemory(args.trace)
    accesses = sum(int(b.block_offsets[-1]) for b in src.batches)
    load = os.getloadavg()[0]
    res = measure(src, names, args.peer, args.compute, args.repeat)
    out = {"bench": "policy_calls", "trace": args.trace, "compute": args.compute, "block_accesses": accesses,
           "budget_s": accesses / 1e6, "loadavg": load}
    for n in names:
        out[n] = s = summary(n, res, args.peer, accesses)
        print(f"[{args.compute}] {n}: {s['calls_total']:,} calls, {s['keys_total']:,} keys "
              f"({s['keys_per_access']:.2f} per access; LRU's rules need {s['lru_needed_keys']:,}); CPU s: hosted "
              f"{s['hosted_s']:.3f}, bare {s['bare_s']:.3f}, null {s['null_s']:.3f}, {args.peer} {s['peer_s']:.3f} "
              f"(budget {accesses / 1e6:.3f}; wall hosted {s['hosted_wall_s']:.3f}, {args.peer} {s['peer_wall_s']:.3f}); "
              f"hosted {s['hosted_accesses_per_s'] / 1e6:.2f} M/s, "
              f"peer + bare allow {s['ceiling_accesses_per_s'] / 1e6:.2f}")
    out["loadavg_end"] = os.getloadavg()[0]
    common.emit(out)


if __name__ == "__main__":
    common.run(main, "policy_calls")
