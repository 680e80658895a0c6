"""Benchmark: which JSON parser reads Mooncake JSONL fastest into pcs's columns (block ids/s).

Replicates the Mooncake FAST'25 conversation trace 1x, 10x and 50x
(:func:`common.replicate_mooncake`, ids remapped per copy), cuts each file into
the reader's chunks once, then times, in alternated rounds (the order reverses
every round), the whole chunk -> checked :class:`RequestBatch` step of:

- ``native``: :func:`pcs.trace.jsonfast.native_chunk` (the compiled twin
  ``pcs.trace._jsonrows``, C++ on simdjson's On-Demand parser), when built;
- ``simdjson``: :func:`pcs.trace.jsonfast.simdjson_chunk` (pysimdjson, ``pcs[fast]``);
- ``pyarrow``: :func:`pcs.trace.jsonfast.pyarrow_chunk` (``pyarrow.json``, one thread);
- ``orjson``: orjson on each line, ids gathered with ``np.fromiter`` -- a lower
  bound of an orjson reader (no validation at all), to show why it is not used;
- ``json_loads``: the line-by-line authority (``fast=False``), 1x only.

Figures: block ids per second of wall time and of CPU time (``time.process_time``;
the machine is shared, so CPU time is the steadier one), median of the rounds.
Also the whole reader (:func:`pcs.trace.open_trace` ... ``iter_batches``,
chunking and file reads included) with the default parser (``reader``: the
compiled twin when built) and with ``PCS_NATIVE=python`` (``reader_python``: pysimdjson when installed). The last
line printed is one JSON object.

Usage: python benchmarks/bench_jsonl_parsers.py [--copies 1,10,50] [--rounds 3]
"""
from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import MOONCAKE_CONV, machine_info, replicate_mooncake  # noqa: E402


def _orjson_chunk(chunk: bytes) -> int:
    import numpy as np
    import orjson

    rows = [orjson.loads(line) for line in chunk.split(b"\n") if line]
    ids = [r["hash_ids"] for r in rows]
    lens = np.fromiter(map(len, ids), np.int64, len(ids))
    h = np.fromiter(itertools.chain.from_iterable(ids), np.uint64, int(lens.sum()))
    np.array([r["timestamp"] for r in rows], dtype=np.float64)
    np.array([r["input_length"] for r in rows], dtype=np.int64)
    np.array([r["output_length"] for r in rows], dtype=np.int64)
    return int(h.size)


def _parsers(available: list[str]):
    from pcs.trace.hashids import MOONCAKE, ReadState
    from pcs.trace.jsonfast import parse_chunk

    def shortcut(name):
        def run(chunks):
            state, n = ReadState(), 0
            for c in chunks:
                b = parse_chunk(name, MOONCAKE, c, 512, state)
                assert b is not None, f"{name} refused a clean chunk"
                n += b.block_hashes.size
            return n
        return run

    out = {p: shortcut(p) for p in ("native", "simdjson", "pyarrow") if p in available}
    if "orjson" in available:
        out["orjson"] = lambda chunks: sum(_orjson_chunk(c) for c in chunks)
    return out


def _time(fn, *args) -> tuple[float, float, int]:
    w, c = time.perf_counter(), time.process_time()
    n = fn(*args)
    return time.perf_counter() - w, time.process_time() - c, n


def _authority(path: Path) -> int:
    from pcs.trace.hashids import MOONCAKE, ReadState, read_hashid_jsonl

    return sum(b.block_hashes.size for b in read_hashid_jsonl(path, "x", MOONCAKE, None, ReadState(), fast=False))


def _reader(path: Path) -> int:
    from pcs.trace import open_trace

    return sum(b.block_hashes.size for b in open_trace(path, format="mooncake").iter_batches())


def _reader_python(path: Path) -> int:
    import os

    old = os.environ.get("PCS_NATIVE")
    os.environ["PCS_NATIVE"] = "python"
    try:
        return _reader(path)
    finally:
        os.environ.pop("PCS_NATIVE") if old is None else os.environ.__setitem__("PCS_NATIVE", old)


def _measure(path: Path, rounds: int, parsers: dict, with_authority: bool) -> dict:
    from pcs.trace.source import iter_chunks

    chunks = [c for _, c in iter_chunks(path)]
    cases = {**{k: (f, chunks) for k, f in parsers.items()}, "reader": (_reader, path),
             "reader_python": (_reader_python, path)}
    if with_authority:
        cases["json_loads"] = (_authority, path)
    times: dict[str, list] = {k: [] for k in cases}
    names = list(cases)
    for r in range(rounds):
        for k in (names if r % 2 == 0 else names[::-1]):
            times[k].append(_time(*cases[k]))
    res = {}
    for k, ts in times.items():
        n = ts[0][2]
        wall, cpu = statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts)
        res[k] = {"ids": n, "ids_per_s": round(n / wall), "ids_per_cpu_s": round(n / cpu)}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=common.counts, default="1,10,50", help="replica sizes, comma-separated")
    ap.add_argument("--rounds", type=common.count, default=3)
    a = ap.parse_args()
    common.need_trace(MOONCAKE_CONV, "bench_jsonl_parsers")
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    from pcs import _native

    available = ["pyarrow"] + (["native"] if _native.built("jsonrows") else [])
    for mod, name in (("simdjson", "simdjson"), ("orjson", "orjson")):
        try:
            __import__(mod)
            available.append(name)
        except ImportError:
            pass
    parsers = _parsers(available)
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="pcs-bench-") as tmp:
        one = replicate_mooncake(MOONCAKE_CONV, Path(tmp), 1, count="ids", name="x1.jsonl").block_ids
        for k in a.copies:
            rep = replicate_mooncake(MOONCAKE_CONV, Path(tmp), k * one, count="ids", name=f"x{k}.jsonl")
            res = _measure(rep.path, a.rounds, parsers, with_authority=(k == 1))
            for name, r in res.items():
                print(f"x{k:<3d} {name:11s} {r['ids']:>11,} ids  {r['ids_per_s'] / 1e6:6.2f} M ids/s wall  "
                      f"{r['ids_per_cpu_s'] / 1e6:6.2f} M ids/cpu-s")
            out[f"x{k}"] = {name: {"ids_per_s": r["ids_per_s"], "ids_per_cpu_s": r["ids_per_cpu_s"]}
                            for name, r in res.items()}
            rep.path.unlink()
    print(json.dumps({"bench": "jsonl_parsers", "available": available, "rounds": a.rounds,
                      "ids_per_copy": one, **out, "machine": machine_info()}))


if __name__ == "__main__":
    common.run(main, "bench_jsonl_parsers")
