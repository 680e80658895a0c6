"""Shared helpers of the benchmark scripts: inputs, timing, memory, the JSON line.

- :func:`replicate_mooncake`: the Mooncake FAST'25 conversation trace
  (../shared/traces) copied until it has a target number of block accesses,
  with remapped ids (copy k adds k x :func:`id_span` to every id, so copies share
  no block) and shifted timestamps (copy k adds k x (span + 3 s)), written as
  Mooncake JSONL into a directory the caller owns (a temporary one);
- :func:`id_span`: the one rule of every replica's id offset (the trace's real id
  span, max - min + 1; refused when the last copy would pass 2^64 - 1);
- argument checks shared by every script: :func:`count` / :func:`counts`
  (argparse types: integers >= 1), :func:`whole` (an integer >= 0), :func:`size` / :func:`sizes` (pcs's own unit
  parser), :func:`need_trace` (a missing trace: one line naming the path and
  PCS_MOONCAKE_TRACE, exit 2) and :func:`run` (a ``pcs.errors.UserError`` from
  the script printed as one line, exit 2; no traceback), :func:`need_tree`
  (a ``--tree``/``--peer`` source tree), :func:`choices` (comma-separated
  names from a fixed set), :func:`child_json` (a child process's JSON line,
  or its error as one line, exit 2); :func:`check_out`
  (a script's OUT file, checked before anything runs: not a directory, not
  one of its inputs, its folder present) and :func:`write_out` (OUT written
  through a temporary file renamed over it; no temporary file left);
- :func:`flat_lru_stream`: the block stream that makes a plain LRU follow
  pcs's prefix-cache rules (docs/semantics.md §6);
- :func:`median_time` and :func:`alternating_pairs`: warm-up, then repeated
  wall-clock timings (``time.perf_counter``), median;
- :func:`vm_hwm_bytes` (peak RSS, Linux ``VmHWM``) and :func:`run_child`
  (run a benchmark's child mode in a fresh process and read its JSON line);
- :func:`machine_info`, :func:`emit` (the one JSON summary line, printed
  last) and :func:`skip` (the JSON line of a benchmark that could not run).

Scripts import it as ``import common`` (``python benchmarks/X.py`` puts
benchmarks/ on ``sys.path``).
"""
from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
#: The real trace the figures are measured on (read-only; never copied into the repo): the environment
#: variable PCS_MOONCAKE_TRACE, else ../shared beside the repository.
MOONCAKE_CONV = Path(os.environ.get("PCS_MOONCAKE_TRACE")
                     or ROOT.parent / "shared" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl")
#: Gap between two copies of a replicated trace, milliseconds (as bench_ingest).
COPY_GAP_MS = 3000
#: The largest block id a trace may hold (ids are unsigned 64-bit).
U64_MAX = 2**64 - 1


# -- argument checks (one rule for every script) -----------------------------------------------
def count(text: str) -> int:
    """argparse ``type=``: a whole number >= 1 (copies, rounds, repeats, runs...).

    Raises:
        argparse.ArgumentTypeError: not an integer, or < 1 (argparse prints one line, exit 2).
    """
    return _at_least(text, 1)


def whole(text: str) -> int:
    """argparse ``type=``: a whole number >= 0 (warm-up calls...).

    Raises:
        argparse.ArgumentTypeError: not an integer, or < 0 (argparse prints one line, exit 2).
    """
    return _at_least(text, 0)


def _at_least(text: str, lo: int) -> int:
    """``text`` as an int >= ``lo`` (the rule of :func:`count` and :func:`whole`); argparse.ArgumentTypeError else."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= {lo}, got {text!r}") from None
    if n < lo:
        raise argparse.ArgumentTypeError(f"must be >= {lo}, got {n}")
    return n


def counts(text: str) -> list[int]:
    """argparse ``type=``: a comma-separated list of :func:`count` values (e.g. ``1,10,50``)."""
    return [count(t.strip()) for t in str(text).split(",")]


def size(text: str) -> str:
    """argparse ``type=``: a size pcs accepts (``pcs.units.parse_bytes``: ``40GB``, ``1.5TB``), > 0 bytes.

    Returns the text unchanged (the script passes it on to pcs).
    Raises:
        argparse.ArgumentTypeError: pcs's own message (unknown unit, malformed, negative) or 0 bytes.
    """
    import argparse

    from pcs.errors import UserError
    from pcs.units import parse_bytes

    try:
        n = parse_bytes(text)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be more than 0 bytes, got {text!r}")
    return text


def size_or_fail(text: str, what: str, bench: str) -> str:
    """:func:`size` outside argparse: ``text`` if pcs reads it as a size > 0, else exit 2 with one line naming
    ``what``."""
    import argparse

    try:
        return size(text)
    except argparse.ArgumentTypeError as e:
        fail(bench, f"{what}: {e}")
    return text


def sizes(text: str) -> list[str]:
    """argparse ``type=``: a comma-separated list of :func:`size` values."""
    return [size(t.strip()) for t in str(text).split(",")]


def fail(bench: str, message: str) -> None:
    """One line ``BENCH: error: MESSAGE`` on stderr, exit 2 (as argparse's own errors)."""
    print(f"{bench}: error: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def need_trace(path: str | Path | None, bench: str) -> Path:
    """The trace ``path`` (default :data:`MOONCAKE_CONV`), or exit 2 with one line naming it and PCS_MOONCAKE_TRACE."""
    p = Path(path) if path is not None else MOONCAKE_CONV
    if p.is_dir():
        fail(bench, f"trace {p} is a directory, not a trace file")
    if not p.is_file():
        fail(bench, f"trace not found: {p} (pass --trace where the script has it, or set PCS_MOONCAKE_TRACE "
                     "to the Mooncake conversation trace)")
    return p


def check_out(out: str | Path, inputs: list, bench: str) -> Path:
    """The output file ``out`` of script ``bench``, checked before the script runs anything: exit 2 with one
    line when it is a directory, when its folder does not exist, or when it is (the same file as) one of
    ``inputs`` (paths; those that do not exist are skipped) -- writing it would overwrite the input.

    Returns:
        ``out`` as a Path."""
    p = Path(out)
    if p.is_dir():
        fail(bench, f"OUT is a directory: {p} (give a file name)")
    if not p.resolve().parent.is_dir():
        fail(bench, f"OUT: no such directory: {p.parent}")
    for src in inputs:
        src = Path(src)
        if src.exists() and (p.resolve() == src.resolve() or (p.exists() and os.path.samefile(p, src))):
            fail(bench, f"OUT is one of the inputs: {p} (writing it would overwrite {src})")
    return p


def write_out(out: str | Path, text: str) -> None:
    """Write ``text`` to ``out`` through ``out``'s temporary sibling renamed over it (readers never see half a
    file); the temporary file is removed when the write or the rename fails (the error is raised)."""
    import tempfile

    p = Path(out)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.resolve().parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def need_tree(path: str | Path, bench: str, what: str = "--tree") -> str:
    """A source tree to import pcs from (a folder holding ``pcs/__init__.py``), resolved; else exit 2 with one
    line naming ``what`` and the path."""
    p = Path(path)
    if not (p / "pcs" / "__init__.py").is_file():
        fail(bench, f"{what}: {p} is not a pcs source tree (no pcs/__init__.py in it)")
    return str(p.resolve())


def choices(text: str, allowed: Any, what: str, bench: str) -> list[str]:
    """The comma-separated names of ``text``, each one of ``allowed`` (else exit 2 with one line naming
    ``what``, the bad name and the valid ones); an empty list is refused too."""
    names = [t.strip() for t in str(text).split(",") if t.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        fail(bench, f"{what}: {'unknown ' + repr(bad[0]) if bad else 'no name given'}; valid: {', '.join(allowed)}")
    return names


def child_json(cmd: list[str], bench: str, **kwargs: Any) -> dict:
    """Run ``cmd`` (a benchmark's child process; ``kwargs`` to ``subprocess.run``) and return its last stdout
    line as JSON; a child that fails (non-zero exit, no JSON line) -> exit 2 with one line: its last stderr
    line."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    lines = done.stdout.strip().splitlines()
    try:
        if done.returncode == 0 and lines:
            return json.loads(lines[-1])
    except json.JSONDecodeError:
        pass
    err = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
    fail(bench, f"the child process failed (exit {done.returncode}): {err[-1] if err else 'no output'}")
    raise AssertionError  # unreachable: fail exits


def run(main: Callable[[], Any], bench: str) -> None:
    """Call ``main()`` (exit with its return code when it returns a non-zero int); a ``pcs.errors.UserError``
    (bad option, bad trace content) -> one line on stderr, exit 2."""
    from pcs.errors import UserError

    try:
        rc = main()
    except UserError as e:
        fail(bench, str(e))
    if isinstance(rc, int) and rc:
        sys.exit(rc)


def id_span(lo: int, hi: int, copies: int) -> int:
    """What copy k of a trace adds, divided by k, to every id so copies share no block: ``hi - lo + 1``.

    Args:
        lo, hi: the trace's least and largest id (0, 0 for a trace without ids).
        copies: number of copies (>= 1).
    Raises:
        UserError: the last copy's largest id, ``hi + (copies - 1) x span``, passes 2^64 - 1.
    """
    from pcs.errors import UserError

    span = int(hi) - int(lo) + 1
    last = int(hi) + (int(copies) - 1) * span
    if last > U64_MAX:
        raise UserError(f"{copies} copies of a trace with ids {lo}..{hi} (span {span}) need ids up to {last}, "
                        f"past 2^64 - 1; use fewer copies")
    return span


# -- memory ------------------------------------------------------------------------------------
def _status_bytes(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def vm_hwm_bytes() -> int:
    """Peak resident set of this process, bytes (Linux ``VmHWM``).

    Not ``ru_maxrss``: it survives ``exec`` and would report a parent's peak.
    Falls back to ``ru_maxrss`` off Linux.
    """
    v = _status_bytes("VmHWM")
    if v is None:
        import resource

        v = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return v


def vm_rss_bytes() -> int:
    """Current resident set of this process, bytes (Linux ``VmRSS``; 0 if unknown)."""
    return _status_bytes("VmRSS") or 0


def run_child(script: str | Path, args: list[str], timeout_s: float = 3600.0) -> dict:
    """Run ``python script args`` in a fresh process (cwd = repo root); return its last line as JSON.

    Raises:
        subprocess.CalledProcessError: the child failed (its stderr is in the exception, and its last 20 lines are
            printed on this process's stderr first: the exception's text gives only the exit status, and a child
            that died once in a run of many left nothing to read otherwise).
    """
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout_s)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-20:]
        print(f"{Path(script).name} {' '.join(args)}: the child failed (exit {done.returncode}); its stderr's last "
              f"lines:", *tail, sep="\n", file=sys.stderr)
        raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- timing ------------------------------------------------------------------------------------
def best_of(fn: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.process_time) -> tuple[float, Any]:
    """Best of ``repeat`` timed calls of ``fn``: (least seconds, the last call's result).

    ``clock``: ``time.process_time`` (default: CPU seconds of this process, so other jobs on a
    shared machine do not count; one thread, so CPU time is the one-core cost) or
    ``time.perf_counter`` (wall clock, for work that is not all in this thread).
    """
    best, out = float("inf"), None
    for _ in range(repeat):
        t = clock()
        out = fn()
        best = min(best, clock() - t)
    return best, out


def median_time(fn: Callable[[], Any], repeat: int = 5, warmup: int = 1) -> tuple[float, list[float], Any]:
    """Call ``fn`` ``warmup`` times untimed, then ``repeat`` times timed.

    Returns:
        (median seconds, all timed seconds in order, the last call's result).
    """
    out = None
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, out


def alternating_pairs(fn_a: Callable[[], Any], fn_b: Callable[[], Any], pairs: int = 5,
                      warmup: int = 1) -> dict:
    """Time ``fn_a`` and ``fn_b`` in ``pairs`` back-to-back pairs after a warm-up of each.

    The order alternates (a b, b a, a b, ...) so drift (CPU frequency, page
    cache, allocator state) does not favour one side.

    Returns:
        dict with ``a_s`` / ``b_s`` (seconds per pair, in pair order),
        ``ratio_b_over_a`` (b time / a time per pair), their medians
        ``a_median_s``, ``b_median_s``, ``ratio_median``, and the last
        results ``a_out``, ``b_out``.
    """
    a_out = b_out = None
    for _ in range(warmup):
        a_out, b_out = fn_a(), fn_b()
    a_s, b_s = [], []
    for i in range(pairs):
        order = ((0, fn_a), (1, fn_b)) if i % 2 == 0 else ((1, fn_b), (0, fn_a))
        for which, fn in order:
            t0 = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t0
            if which == 0:
                a_s.append(dt)
                a_out = out
            else:
                b_s.append(dt)
                b_out = out
    ratios = [b / a for a, b in zip(a_s, b_s)]
    return {"a_s": a_s, "b_s": b_s, "ratio_b_over_a": ratios, "a_median_s": statistics.median(a_s),
            "b_median_s": statistics.median(b_s), "ratio_median": statistics.median(ratios),
            "a_out": a_out, "b_out": b_out}


# -- inputs ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Replica:
    """A replicated Mooncake trace on disk.

    Attributes:
        path: the JSONL file.
        copies: number of copies of the source.
        requests: requests in the file.
        block_ids: hash ids in the file (partial last blocks included).
        cacheable_accesses: full prompt blocks (``BlockRules().cacheable_blocks``).
        id_stride: what copy k adds to every id, divided by k (:func:`id_span`).
    """

    path: Path
    copies: int
    requests: int
    block_ids: int
    cacheable_accesses: int
    id_stride: int

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        d = asdict(self)
        d["path"] = str(self.path)
        return d


def replicate_mooncake(src: Path, out_dir: Path, min_accesses: int, count: str = "cacheable",
                       block_size: int = 512, name: str = "replicated.jsonl") -> Replica:
    """Write ``src`` (Mooncake JSONL) k times into ``out_dir / name`` until >= ``min_accesses``.

    The copies follow one another in time: copy k's ids are offset by k x the trace's id span (copies share no
    block) and its timestamps by k x (the trace's span + :data:`COPY_GAP_MS`), so a 10x replica is ten times the
    requests and the duration at the same load (arrival rate, requests in flight), not ten times the load.

    Args:
        src: Mooncake JSONL (``timestamp`` ms, ``input_length``, ``output_length``, ``hash_ids``).
        out_dir: an existing directory the caller owns (the file is written
            to a temporary name there, then renamed).
        min_accesses: target number of block accesses (at least one copy).
        count: what an access is: ``"cacheable"`` (full prompt blocks,
            :class:`pcs.blocks.BlockRules` defaults) or ``"ids"`` (every hash id).
        block_size: tokens per block of ``src`` (Mooncake: 512).
    Raises:
        ValueError: unknown ``count``; FileNotFoundError: no ``src``; UserError: the copies' ids pass
        2^64 - 1 (:func:`id_span`).
    """
    from pcs.blocks import BlockRules

    if count not in ("cacheable", "ids"):
        raise ValueError(f"count must be 'cacheable' or 'ids', got {count!r}")
    rules = BlockRules()
    rows = mooncake_rows(src)
    span_ms = rows[-1]["timestamp"] - rows[0]["timestamp"] + COPY_GAP_MS
    ids = sum(len(r["hash_ids"]) for r in rows)
    cacheable = sum(rules.cacheable_blocks(r["input_length"], len(r["hash_ids"]), block_size) for r in rows)
    per_copy = cacheable if count == "cacheable" else ids
    copies = max(1, -(-int(min_accesses) // max(per_copy, 1)))
    lo = min((min(r["hash_ids"]) for r in rows if r["hash_ids"]), default=0)
    hi = max((max(r["hash_ids"]) for r in rows if r["hash_ids"]), default=0)
    stride = id_span(lo, hi, copies)
    out = Path(out_dir) / name
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w") as f:
        for k in range(copies):
            off, dt = k * stride, k * span_ms
            for r in rows:
                hs = ", ".join(str(h + off) for h in r["hash_ids"])
                f.write(f'{{"timestamp": {r["timestamp"] + dt}, "input_length": {r["input_length"]}, '
                        f'"output_length": {r["output_length"]}, "hash_ids": [{hs}]}}\n')
    os.replace(tmp, out)
    return Replica(out, copies, copies * len(rows), copies * ids, copies * cacheable, stride)


#: The fields a Mooncake row needs here, and their kind (``hash_ids``: a list of ints >= 0).
_MOONCAKE_FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")


def mooncake_rows(src: str | Path) -> list[dict]:
    """The rows of Mooncake JSONL ``src`` as dicts, each checked: a JSON object with an integer ``timestamp``,
    ``input_length`` and ``output_length`` (>= 0 but the timestamp) and ``hash_ids`` a list of integers >= 0.

    Raises:
        pcs.errors.InputError: the first bad row, naming file, line and field (``common.run``: one line, exit 2).
    """
    from pcs.errors import InputError

    rows = []
    with open(src, encoding="utf-8", errors="replace") as f:
        for ln, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(str(src), ln, None, f"not a JSON object: {e.msg}") from None
            if not isinstance(r, dict):
                raise InputError(str(src), ln, None, "not a JSON object")
            for k in _MOONCAKE_FIELDS:
                v = r.get(k)
                ok = (isinstance(v, list) and all(type(h) is int and h >= 0 for h in v)) if k == "hash_ids" else \
                    (type(v) is int and (k == "timestamp" or v >= 0))
                if not ok:
                    raise InputError(str(src), ln, k, "missing or not " + ("a list of integers >= 0" if k == "hash_ids"
                                                                          else "an integer" + (" >= 0" if k != "timestamp" else "")))
            rows.append(r)
    if not rows:
        raise InputError(str(src), None, None, "no rows")
    return rows


@dataclass(frozen=True, slots=True)
class FlatStream:
    """The flat LRU stream of a trace (docs/semantics.md §6).

    Attributes:
        ids: np.ndarray[np.uint64], shape (2 x accesses,): per request, its
            cacheable blocks head to tail, then tail to head.
        clock_s: np.ndarray[np.uint32], same shape: the request's arrival,
            whole seconds (libCacheSim's clock; irrelevant to LRU).
        accesses: full prompt blocks looked up (sum of ``n`` over requests).
        requests: number of requests.
        distinct_blocks: distinct ids in the stream.
        max_request_blocks: the largest ``n`` of one request.
    """

    ids: np.ndarray
    clock_s: np.ndarray
    accesses: int
    requests: int
    distinct_blocks: int
    max_request_blocks: int


def flat_lru_stream(trace: Any) -> FlatStream:
    """Build the flat stream of a :class:`pcs.trace.Trace` with the default :class:`pcs.blocks.BlockRules`.

    ``n = BlockRules().cacheable_blocks(prompt_tokens, len(block_hashes),
    block_size)`` (full blocks only: ``input_length // 512`` for Mooncake).
    Head-to-tail touches the request's hits (protecting them) before its new
    blocks are inserted; tail-to-head then leaves the head most recent, as
    pcs's tail-first release does.
    """
    from pcs.blocks import BlockRules

    rules = BlockRules()
    ids, clocks, ns = [], [], []
    for b in trace.iter_batches():
        counts = np.diff(b.block_offsets)
        n = np.fromiter((rules.cacheable_blocks(int(p), int(c), b.block_size)
                         for p, c in zip(b.prompt_tokens, counts)), dtype=np.int64, count=len(counts))
        starts = b.block_offsets[:-1]
        # per request: positions start .. start+n-1, then start+n-1 .. start
        total = int(n.sum())
        base = np.repeat(starts, n)
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        fwd = base + within
        bwd = base + np.repeat(n, n) - 1 - within
        req_of = np.repeat(np.arange(len(n)), 2 * n)
        pos = np.empty(2 * total, dtype=np.int64)
        out_off = np.repeat(2 * (np.cumsum(n) - n), n) + within
        pos[out_off] = fwd
        pos[out_off + np.repeat(n, n)] = bwd
        ids.append(b.block_hashes[pos])
        clocks.append(np.asarray(b.arrival_s, dtype=np.float64)[req_of].astype(np.uint32))
        ns.append(n)
    all_ids = np.concatenate(ids) if ids else np.zeros(0, np.uint64)
    n_all = np.concatenate(ns) if ns else np.zeros(0, np.int64)
    return FlatStream(all_ids, np.concatenate(clocks) if clocks else np.zeros(0, np.uint32),
                      int(n_all.sum()), len(n_all), int(np.unique(all_ids).size),
                      int(n_all.max()) if len(n_all) else 0)


# -- reporting ---------------------------------------------------------------------------------
def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def machine_info() -> dict:
    """nproc, CPU model (/proc/cpuinfo), Python and library versions."""
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "cpu_model": cpu or platform.processor() or None, "python": platform.python_version(),
            "numpy": np.__version__, "pyarrow": _version("pyarrow"), "libcachesim": _version("libcachesim")}


def emit(summary: dict) -> None:
    """Print the ONE machine-readable JSON summary line (call it last)."""
    print(json.dumps(summary, default=_jsonable), flush=True)


def _jsonable(x: Any) -> Any:
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def skip(bench: str, reason: str) -> None:
    """Say why the benchmark cannot run (stderr) and print its JSON line with ``skipped``."""
    print(f"{bench}: skipped: {reason}", file=sys.stderr)
    emit({"bench": bench, "skipped": reason})
