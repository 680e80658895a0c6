"""Benchmark: what a user waits for -- the whole ``pcs.replay`` call and the CLI -- beside libCacheSim and a dict LRU.

The trace: the Mooncake FAST'25 conversation trace replicated 1x, 10x and 50x
(:func:`common.replicate_mooncake`: ids remapped per copy, timestamps shifted),
written as Mooncake JSONL and converted once to pcs Parquet (untimed, as is
libCacheSim's oracleGeneral file of the same stream). Cases, per replica size,
all timed in the same process in alternated rounds (the order reverses every
round; medians reported), after one untimed warm-up call of each in-process
case per size (``--warmup``, as compare_libcachesim.py warms each side): the
first ``pcs.replay`` of a process pays one-time start-up (lazy imports, memos:
the default ``pcs.replay`` of the 1x trace took 0.35 CPU s, the next two 0.10 s,
2026-12-01), which would otherwise land in whichever case runs first, and with
``--rounds 1`` be its only sample. The CLI case is a fresh process every call,
start-up included by design, so it gets no warm-up:

- ``two_tier_modeled_{jsonl,parquet}``: ``pcs.replay(path, tiers=["gpu=<C>blocks",
  "cpu=<4C>blocks"], policy="lru")`` with the default timing (modeled) -- the main job;
- ``one_tier_sequential_{jsonl,parquet}``: ``pcs.replay(path, tiers=["gpu=<C>blocks"],
  policy="lru", timing="sequential")``;
- ``one_tier_sequential_jsonl_pyparser``: the same from JSONL with the compiled
  JSONL decoder (``pcs.trace._jsonrows``) hidden, so the reader runs its Python
  shortcut (pysimdjson when installed): the before/after peer of that twin;
- ``cli_two_tier_jsonl``: ``pcs replay <jsonl> --tier gpu=<C>blocks --tier cpu=<4C>blocks
  --policy lru --format json`` as a fresh process (start-up included);
- ``libcachesim``: libCacheSim's ``LRU(C).process_trace`` on the flat LRU stream
  of the trace (:func:`common.flat_lru_stream`: per request its full prompt
  blocks head to tail then tail to head -- the stream on which a plain LRU of
  C blocks misses exactly what pcs's one-tier sequential replay misses,
  docs/semantics.md §6), written once as oracleGeneral;
- ``ordereddict``: the same stream through a plain ``collections.OrderedDict`` LRU of C.

Times: wall (``s``) and CPU seconds of this process (``cpu_s``, ``time.process_time``; the CLI
case's child process is not in it, so it has none); ``x_libcachesim_cpu`` is the
ratio of CPU seconds, the steadier one on a shared machine.
Throughput counts *logical* block accesses (full prompt blocks looked up, the
same number for every side); ``x_libcachesim`` is a case's throughput over
libCacheSim's. The one-tier sequential misses are checked equal to the dict
LRU's and libCacheSim's (a benchmark of a wrong answer is no benchmark). The JSON line's ``engine_only`` key
(ONE JSON line, last, as every script): the engine alone (``ReplayEngine.feed`` over pre-built chunks,
one LRU tier in the compiled hierarchy, sequential; best of 3), the figure ``bench_replay.py`` reports, so the gap
between the engine and the user's call stays visible.

Usage: python benchmarks/bench_user.py [--copies 1,10,50] [--rounds 3] [--warmup 1] [--capacity 16384] [--cases NAMES]
Prints human lines, then the summary JSON line, then the engine-only JSON line last.
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from compare_libcachesim import hashpower_for, write_oracle_general  # noqa: E402

PCS = [sys.executable, "-c", "import sys; from pcs.cli.main import main; sys.argv[0] = 'pcs'; main()"]


def _replay(path: Path, tiers: list[str], timing: str | None) -> int:
    import pcs

    kw = {"timing": timing} if timing else {}
    return pcs.replay(str(path), tiers=tiers, policy="lru", **kw).summary.block_misses


def _replay_pyparser(path: Path, tiers: list[str], timing: str | None) -> int:
    from pcs import _native

    _native.module("jsonrows")
    saved = _native._loaded["jsonrows"]
    _native._loaded["jsonrows"] = None  # as if the C++ decoder were not built
    try:
        return _replay(path, tiers, timing)
    finally:
        _native._loaded["jsonrows"] = saved


def _cli(path: Path, tiers: list[str]) -> int:
    cmd = [*PCS, "replay", str(path), "--policy", "lru", "--format", "json"]
    for t in tiers:
        cmd += ["--tier", t]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=common.ROOT).stdout
    return int(json.loads(out)["block_misses"])


def _libcachesim(oracle: Path, c: int, gets: int) -> int:
    import libcachesim as lcs

    cache = lcs.LRU(c, hashpower=hashpower_for(c))
    miss_ratio, _ = cache.process_trace(lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE))
    return round(miss_ratio * gets)


def _ordereddict(ids: list, c: int) -> int:
    od: collections.OrderedDict = collections.OrderedDict()
    misses = 0
    move, pop = od.move_to_end, od.popitem
    for k in ids:
        if k in od:
            move(k)
        else:
            misses += 1
            od[k] = None
            if len(od) > c:
                pop(last=False)
    return misses


def _engine_only(parquet: Path, c: int) -> tuple[float, int]:
    from pcs.blocks import BlockRules
    from pcs.cache import Tier, make_policy
    from pcs.engine import select
    from pcs.engine.chunks import iter_chunks
    from pcs.engine.engine import ReplayEngine
    from pcs.trace import open_trace

    chunks = list(iter_chunks(open_trace(parquet), BlockRules()))
    build = select.get_row("compiled-hierarchy").load()  # what pcs replay runs for all-LRU tiers (bench_replay.py)
    best = None
    for _ in range(3):
        e = ReplayEngine(build([Tier("gpu", c, make_policy("lru", c))], "back"), "sequential")
        t0 = time.perf_counter()
        for ch in chunks:
            e.feed(ch)
        misses = e.close().ledger.block_misses
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, misses


#: The case names (``--cases``), in the order :func:`_cases` builds them.
CASE_NAMES = ("two_tier_modeled_jsonl", "two_tier_modeled_parquet", "one_tier_sequential_jsonl",
              "one_tier_sequential_parquet", "one_tier_sequential_jsonl_pyparser", "cli_two_tier_jsonl",
              "libcachesim", "ordereddict")


def _cases(jsonl: Path, parquet: Path, oracle: Path, fs: common.FlatStream, c: int) -> dict:
    two, one = [f"gpu={c}blocks", f"cpu={4 * c}blocks"], [f"gpu={c}blocks"]
    ids = fs.ids.tolist()
    gets = int(fs.ids.shape[0])
    cases = {
        "two_tier_modeled_jsonl": lambda: _replay(jsonl, two, None),
        "two_tier_modeled_parquet": lambda: _replay(parquet, two, None),
        "one_tier_sequential_jsonl": lambda: _replay(jsonl, one, "sequential"),
        "one_tier_sequential_parquet": lambda: _replay(parquet, one, "sequential"),
        "one_tier_sequential_jsonl_pyparser": lambda: _replay_pyparser(jsonl, one, "sequential"),
        "cli_two_tier_jsonl": lambda: _cli(jsonl, two),
        "libcachesim": lambda: _libcachesim(oracle, c, gets),
        "ordereddict": lambda: _ordereddict(ids, c),
    }
    assert tuple(cases) == CASE_NAMES, tuple(cases)
    return cases


def _measure(cases: dict, rounds: int, warmup: int = 1) -> tuple[dict, dict, dict]:
    """Median wall and CPU seconds and the misses of each case: ``warmup`` untimed calls of each in-process case
    (the CLI case starts a fresh process every call), then ``rounds`` alternated timed rounds."""
    times: dict[str, list] = {k: [] for k in cases}
    cpu: dict[str, list] = {k: [] for k in cases}
    misses: dict[str, int] = {}
    names = list(cases)
    for _ in range(warmup):
        for k in names:
            if not k.startswith("cli_"):
                cases[k]()
    for r in range(rounds):
        for k in (names if r % 2 == 0 else names[::-1]):
            t0, c0 = time.perf_counter(), time.process_time()
            misses[k] = cases[k]()
            times[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return med, {k: statistics.median(v) for k, v in cpu.items()}, misses


def _one_size(k: int, tmp: Path, one: int, c: int, rounds: int, only: str = "", warmup: int = 1) -> tuple[dict, dict]:
    from pcs.trace import open_trace
    from pcs.trace.convert import convert

    rep = common.replicate_mooncake(common.MOONCAKE_CONV, tmp, k * one, name=f"x{k}.jsonl")
    parquet, oracle = tmp / f"x{k}.parquet", tmp / f"x{k}.oracleGeneral.bin"
    convert(open_trace(rep.path), parquet)
    fs = common.flat_lru_stream(open_trace(parquet))
    write_oracle_general(fs, oracle)
    cases = _cases(rep.path, parquet, oracle, fs, c)
    if only:
        keep = set(only.split(",")) | {"libcachesim", "ordereddict", "one_tier_sequential_jsonl",
                                       "one_tier_sequential_parquet"}
        cases = {name: f for name, f in cases.items() if name in keep}
    med, cpu, misses = _measure(cases, rounds, warmup)
    acc = rep.cacheable_accesses
    if not misses["one_tier_sequential_parquet"] == misses["one_tier_sequential_jsonl"] == misses["ordereddict"] \
            == misses["libcachesim"] == misses.get("one_tier_sequential_jsonl_pyparser", misses["libcachesim"]):
        raise SystemExit(f"x{k}: one-tier misses differ: {misses}")
    lcs_rate = acc / med["libcachesim"]
    row = {"copies": k, "accesses": acc, "requests": rep.requests, "capacity_blocks": c}
    for name, s in med.items():
        row[name] = {"s": round(s, 4), "accesses_per_s": round(acc / s), "x_libcachesim": round(acc / s / lcs_rate, 3),
                     "us_per_access": round(s / acc * 1e6, 3)}
        if not name.startswith("cli_"):
            row[name].update(cpu_s=round(cpu[name], 4), x_libcachesim_cpu=round(cpu["libcachesim"] / cpu[name], 3))
        print(f"x{k:<3d} {name:36s} {s:8.3f} s  {acc / s / 1e6:6.2f} M accesses/s  "
              f"{acc / s / lcs_rate:6.3f}x libCacheSim"
              + ("" if name.startswith("cli_") else f"  cpu {cpu[name]:7.3f} s {cpu['libcachesim'] / cpu[name]:6.3f}x"))
    t_eng, m_eng = _engine_only(parquet, c)
    if m_eng != misses["one_tier_sequential_parquet"]:
        raise SystemExit(f"x{k}: engine-only misses {m_eng} != replay {misses['one_tier_sequential_parquet']}")
    eng = {"copies": k, "s": round(t_eng, 4), "accesses_per_s": round(acc / t_eng),
           "x_libcachesim": round(acc / t_eng / lcs_rate, 3)}
    for p in (rep.path, parquet, oracle):
        p.unlink()
    return row, eng


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=common.counts, default="1,10,50", help="replica sizes, comma-separated")
    ap.add_argument("--rounds", type=common.count, default=3)
    ap.add_argument("--warmup", type=common.whole, default=1, help="untimed calls of each in-process case before the "
                    "timed rounds, per size (0: none, the first case then pays the process's start-up)")
    ap.add_argument("--capacity", type=common.count, default=16384, help="GPU tier (and libCacheSim LRU) size, blocks")
    ap.add_argument("--cases", default="", help="comma-separated case names to run (default: all); libcachesim, "
                    "ordereddict and the one-tier cases always run (the miss check and the ratios need them)")
    a = ap.parse_args()
    if a.cases:
        common.choices(a.cases, CASE_NAMES, "--cases", "bench_user")
    common.need_trace(common.MOONCAKE_CONV, "bench_user")
    try:
        import libcachesim  # noqa: F401
    except ImportError:
        common.skip("user", "libcachesim not installed (pip install -e '.[bench]')")
        return
    rows, engine = [], []
    with tempfile.TemporaryDirectory(prefix="pcs-bench-") as tmp:
        one = common.replicate_mooncake(common.MOONCAKE_CONV, Path(tmp), 1, name="one.jsonl").cacheable_accesses
        for k in a.copies:
            row, eng = _one_size(k, Path(tmp), one, a.capacity, a.rounds, a.cases, a.warmup)
            rows.append(row)
            engine.append(eng)
    per_access = {name: [r[name]["us_per_access"] for r in rows] for name in rows[0] if isinstance(rows[0][name], dict)}
    flat = {name: round(max(v) / min(v), 3) for name, v in per_access.items()}
    print(json.dumps({"bench": "user", "rounds": a.rounds, "warmup": a.warmup, "capacity_blocks": a.capacity,
                      "sizes": rows,
                      "us_per_access_max_over_min": flat,
                      "engine_only": {"what": "ReplayEngine.feed over pre-built chunks, one LRU tier (compiled "
                                              "hierarchy), sequential, best of 3", "sizes": engine},
                      "machine": common.machine_info()}))


if __name__ == "__main__":
    common.run(main, "bench_user")
