"""Replay time per eviction policy, two tiers, modeled timing: the compiled hierarchy beside the Python reference.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces; 12,031
requests, 288,500 block ids), read once into memory, replayed by the whole
``pcs.replay(trace, policy=P)`` with its defaults (llama-2-70b, 8 x h100-sxm,
tiers gpu=auto -- derived from the deployment: 398.05 GB, whole blocks 2,372 x
167.77 MB = 397.96 GB, docs/models.md -- and cpu=2TB, write-back, modeled
timing: the modeled run plus its sequential baseline). Each policy runs twice:
``P`` with ``engine="auto"`` (the compiled hierarchy when the policy has a C
twin: pcs/cache/_pol_P.c) and ``P-reference`` with ``engine="reference"`` (the
Python :class:`pcs.cache.Hierarchy`). ``--compute infinite`` (instant compute:
the event loop, hits and links) or ``step`` (the default step scheduler, which
``pcs.replay`` runs as ``compiled-step``: its compiled loop,
pcs/engine/_stepsched.c, for a compiled policy and for a hosted plug-in; its
own time is the same for every policy); ``--compute both`` does both.

Measured: process CPU seconds (``time.process_time``: other jobs on the shared
machine do not count; every thread of the process: the step loop, the no-cache loop and the sequential baseline
on their worker threads) and, beside them, wall seconds of the same whole call (``time.perf_counter``: what a user
waits for, which the worker threads shorten on a machine with a free core, and which other jobs lengthen), after
one untimed warm-up call per run (so the first run, the lru
peer, is not charged with imports and first calls even at ``--repeat 1``), best of ``--repeat`` rounds for each
(taken apart), each round running every policy once (alternated), and block accesses per CPU second of the whole
call; ``ratio_to_lru`` = the policy's CPU time / compiled lru's in the same run, ``wall_ratio_to_lru`` the same
of wall times.
Prints one human line per run and round as it ends (flushed, so a redirected run shows its progress), one per run
with its best, then ONE JSON line last.

Run time: the default is the Summary's row (lru, slru, fifo on ``compiled-step``, no ``-reference`` runs,
``--compute step``, 3 rounds): 11 s wall, 1.2 CPU-s at load 14 (2026-12-03). ``--full`` is the whole grid (every policy
and plug-in below, ``--compute both``, each with its ``-reference`` run): its reference and key-contract plug-in
runs take seconds to minutes each, so budget tens of minutes (more than 600 s wall at load 14, 2026-12-03,
stopped there); ``--policy``, ``--compute`` and ``--no-reference`` narrow it.
``--policy NAME`` (repeatable) times those registered policies instead.
Plug-ins (:data:`PLUGINS`, timed by default after the built-in policies): ``demo_mru``, the example plug-in of
tests/cache/plugin/ (MRU, a Python loop per key), and ``py_lru``, the Python class of ``lru``
(pcs/cache/policies/lru.py) registered as a plug-in, both on the key contract; ``demo_mru_array`` and
``py_lru_array`` the same rules on the handle contract (``DemoMRUArray``; ``ArrayLRU``,
pcs/cache/policies/array_lru.py), and ``py_lfu_array`` ``lfu``'s rule on the handle contract with identity
(``ArrayLFU``, pcs/cache/policies/array_lfu.py; ``--policy py_lfu_array:aging=none`` for plain LFU) beside
``py_lfu``, lfu's Python class on the key contract; ``auto`` hosts them in the compiled hierarchy (pcs/cache/_pol_py.c,
_pol_pyarr.c), ``-reference`` runs them on the Python one.
``--admit TIER=KIND`` (repeatable) times each policy with each admission policy instead (``P+cpu=reuse:2``:
compiled, pcs/cache/_admission.c, beside ``P+cpu=reuse:2-reference``), plain ``lru`` kept as the peer.
``--no-reference`` leaves the ``-reference`` runs out (minutes each under load).
Usage: python benchmarks/bench_policies.py [--full] [--repeat 3] [--trace PATH] [--compute infinite|step|both]
       [--policy NAME ...] [--admit cpu=reuse:2 ...] [--reference | --no-reference]
"""
from __future__ import annotations

import argparse
import json
import time

import common

#: Policies timed by default (lru first: the peer every ratio is taken against).
POLICIES = ("lru", "fifo", "slru", "sieve", "2q", "s3fifo", "arc", "lfu", "gdsf", "belady")
#: Plug-ins timed by default (registered by :func:`register_plugins`): the example of tests/cache/plugin/ and
#: lru's Python class under another name, each on the key and on the handle contract.
PLUGINS = ("demo_mru", "py_lru", "demo_mru_array", "py_lru_array", "py_lfu", "py_lfu_array")
#: The default run (no --full): the Summary's row of docs/performance.md, slru and fifo against lru.
QUICK = ("lru", "slru", "fifo")
#: Older spellings tried when a name is refused (``protected``, engine ``general``).
FALLBACK = {"slru": "protected", "reference": "general"}


def _runs(policies, admits=(), reference: bool = True) -> list[tuple[str, dict]]:
    """(label, replay keyword arguments): each policy (with each admission, if any) on ``auto`` and, if
    ``reference``, on the reference; with admissions, plain compiled ``lru`` first (the peer)."""
    out = [("lru", {"policy": "lru"})] if admits else []
    for p in policies:
        for a in admits or (None,):
            kw, label = ({"policy": p}, p) if a is None else ({"policy": p, "admit": [a]}, f"{p}+{a}")
            out += [(label, kw)] + ([(f"{label}-reference", dict(kw, engine="reference"))] if reference else [])
    return out


def register_plugins() -> None:
    """Register :data:`PLUGINS` as the ``pcs.policies`` entry point would (``load_plugins``)."""
    import sys
    from importlib.metadata import EntryPoint

    from pcs.cache.policies import LFUPolicy, LRUPolicy, load_plugins
    from pcs.cache.policies.array_lfu import ArrayLFU
    from pcs.cache.policies.array_lru import ArrayLRU

    sys.path.insert(0, str(common.ROOT / "tests" / "cache" / "plugin"))
    PyLRU = type("PyLRU", (LRUPolicy,), {"name": "py_lru", "summary": "lru's Python class, as a plug-in"})
    PyLRUArray = type("PyLRUArray", (ArrayLRU,), {"name": "py_lru_array", "summary": "ArrayLRU, as a plug-in"})
    PyLFU = type("PyLFU", (LFUPolicy,), {"name": "py_lfu", "summary": "lfu's Python class, as a plug-in"})
    PyLFUArray = type("PyLFUArray", (ArrayLFU,), {"name": "py_lfu_array", "summary": "ArrayLFU, as a plug-in"})
    sys.modules[__name__].PyLRU = PyLRU
    sys.modules[__name__].PyLRUArray = PyLRUArray
    sys.modules[__name__].PyLFU = PyLFU
    sys.modules[__name__].PyLFUArray = PyLFUArray
    load_plugins([EntryPoint("demo_mru", "pcs_demo_policy:DemoMRU", "pcs.policies"),
                  EntryPoint("py_lru", f"{__name__}:PyLRU", "pcs.policies"),
                  EntryPoint("demo_mru_array", "pcs_demo_policy:DemoMRUArray", "pcs.policies"),
                  EntryPoint("py_lru_array", f"{__name__}:PyLRUArray", "pcs.policies"),
                  EntryPoint("py_lfu", f"{__name__}:PyLFU", "pcs.policies"),
                  EntryPoint("py_lfu_array", f"{__name__}:PyLFUArray", "pcs.policies")])


class InMemory:
    """The trace's RequestBatches held in memory (what ``pcs.replay`` reads via ``iter_batches``)."""

    def __init__(self, path) -> None:
        from pcs.trace import open_trace

        tr = open_trace(path)
        self.batches = list(tr.iter_batches())
        self.block_size = tr.block_size
        self.path = str(path)

    def iter_batches(self):
        return iter(self.batches)


def _replay(src, kwargs: dict):
    from pcs.engine.api import replay

    try:
        return replay(src, **kwargs)
    except ValueError:
        old = {k: FALLBACK.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
        return replay(src, **old)


def _check_runs(runs: list[tuple[str, dict]], modes: tuple) -> None:
    """Every run once on the bundled sample_tokens trace (25 requests) before anything is timed: a bad policy or admission is
    refused (a UserError: one line, exit 2, by ``common.run``) before the trace is read."""
    tiny = InMemory(common.ROOT / "traces" / "sample_tokens.jsonl")
    for mode in modes:
        for _, kwargs in runs:
            _replay(tiny, dict(kwargs, compute_mode=mode))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="Run time: the default (lru, slru, fifo, --compute step, no -reference runs) "
                                        "11 s wall at load 14; --full (every policy and plug-in, both computes, "
                                        "-reference runs) tens of minutes (over 600 s at load 14).")
    ap.add_argument("--full", action="store_true", help="the whole grid: every policy and plug-in, --compute both, "
                                                        "with -reference runs (tens of minutes)")
    ap.add_argument("--repeat", type=common.count, default=3)
    ap.add_argument("--trace", default=str(common.MOONCAKE_CONV))
    ap.add_argument("--compute", choices=("infinite", "step", "both"), default=None,
                    help="default: step (both with --full)")
    ap.add_argument("--policy", action="append", default=[], help="time these policies instead (repeatable)")
    ap.add_argument("--admit", action="append", default=[], help="time with these admissions (repeatable)")
    ref = ap.add_mutually_exclusive_group()
    ref.add_argument("--reference", action="store_true", help="add the Python-hierarchy runs (-reference; on with "
                                                              "--full)")
    ref.add_argument("--no-reference", action="store_true", help="skip the -reference runs (with --full)")
    args = ap.parse_args()
    common.need_trace(args.trace, "bench_policies")
    register_plugins()
    default = POLICIES + PLUGINS if args.full else QUICK
    reference = args.reference or (args.full and not args.no_reference)
    runs = _runs(args.policy or (("lru",) if args.admit else default), args.admit, reference)
    compute = args.compute or ("both" if args.full else "step")
    modes = ("infinite", "step") if compute == "both" else (compute,)
    _check_runs(runs, modes)
    import os

    import pcs

    src = InMemory(args.trace)
    accesses = sum(int(b.block_offsets[-1]) for b in src.batches)
    out = {"bench": "policies", "trace": args.trace, "block_accesses": accesses, "pcs": pcs.__file__,
           "loadavg": os.getloadavg()[0]}
    for mode in modes:
        best: dict = {label: float("inf") for label, _ in runs}
        best_wall: dict = dict(best)
        info: dict = {}
        for label, kwargs in runs:                        # warm-up (imports, compiled twins, caches): untimed,
            _replay(src, dict(kwargs, compute_mode=mode))  # so the first policy (the lru peer) is not charged
            print(f"[{mode}] warm-up {label}", flush=True)
        for r in range(args.repeat):                      # rounds: every run once per round (alternated)
            for label, kwargs in runs:
                t, w = time.process_time(), time.perf_counter()
                res = _replay(src, dict(kwargs, compute_mode=mode))
                took, wall = time.process_time() - t, time.perf_counter() - w
                best[label], best_wall[label] = min(best[label], took), min(best_wall[label], wall)
                info[label] = (res.summary.hit_ratio, res.summary.engine)
                print(f"[{mode}] round {r + 1}/{args.repeat} {label}: {took:.4f} s CPU, {wall:.4f} s wall",
                      flush=True)
        peer, peer_wall = best.get("lru"), best_wall.get("lru")
        res_mode = {}
        for label, _ in runs:
            hit, engine = info[label]
            res_mode[label] = {"replay_s": best[label], "accesses_per_s": accesses / best[label], "hit_ratio": hit,
                               "engine": engine, "ratio_to_lru": best[label] / peer if peer else None,
                               "wall_s": best_wall[label],
                               "wall_ratio_to_lru": best_wall[label] / peer_wall if peer_wall else None}
            print(f"[{mode}] {label}: {best[label]:.4f} s CPU, {best_wall[label]:.4f} s wall, "
                  f"{accesses / best[label] / 1e6:.3f} M accesses/s, hit ratio {hit:.6f}, {engine}"
                  + (f", {best[label] / peer:.2f}x lru CPU, {best_wall[label] / peer_wall:.2f}x lru wall"
                     if peer else ""), flush=True)
        out[mode] = res_mode
    out["loadavg_end"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    common.run(main, "bench_policies")
