"""Snapshot every number pcs prints on a grid of runs, to diff before and after a change.

Runs ``pcs replay``, ``pcs compare`` and ``pcs curve`` (JSON output, in
process through click's runner) and, for replays, a digest of the
per-request table, on the bundled samples and, when ``../shared`` is beside
the repository, the Mooncake conversation trace: several capacities, both
timings, 1, 2 and 3 tiers, each policy, both write policies. Writes one JSON
file ``{run id: output}``; ``--diff OLD.json NEW.json`` lists the runs whose
output changed (keys may be added: only changed or removed values count).

``--extra-replay-args "ARGS"`` appends ARGS (split like a shell line) to
every ``pcs replay`` and ``pcs compare`` run, e.g. ``--compute infinite``
to compare the model before the step scheduler with an older snapshot (a
``--compute`` pair is left out of sequential runs, which refuse it).

Usage::

    python benchmarks/snapshot.py out.json [--quick] [--extra-replay-args "--compute infinite"]
    python benchmarks/snapshot.py --diff before.json after.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
import common  # noqa: E402
from common import MOONCAKE_CONV  # noqa: E402
MOONCAKE = MOONCAKE_CONV  # benchmarks/common.py: PCS_MOONCAKE_TRACE or ../shared

POLICIES = ("lru", "protected", "fifo")


def _traces() -> list[tuple[str, str]]:
    """The snapshot's input traces: (short name, path)."""
    traces = [("chat", str(ROOT / "traces" / "sample_chat.jsonl")),
              ("tok", str(ROOT / "traces" / "sample_tokens.jsonl"))]
    if MOONCAKE.exists():
        traces.append(("moon", str(MOONCAKE)))
    else:     # the snapshot is then the samples' runs only; a --diff against a full one lists the rest as missing
        print(f"snapshot: note: no Mooncake trace at {MOONCAKE} (set PCS_MOONCAKE_TRACE): its runs are left out",
              file=sys.stderr, flush=True)
    return traces


def _runs(quick: bool) -> list[tuple[str, list[str]]]:
    traces = _traces()
    runs: list[tuple[str, list[str]]] = [("replay-default", ["replay"])]
    for tname, path in traces:
        small = tname == "tok"
        caps = ["20blocks", "200blocks"] if small else ["1000blocks", "5000blocks", "20000blocks"]
        two = [["gpu=20blocks", "cpu=60blocks"]] if small else \
            [["gpu=400GB", "cpu=2TB"], ["gpu=1000blocks", "cpu=4000blocks"]]
        three = [["gpu=10blocks", "cpu=30blocks", "ssd=80blocks"]] if small else \
            [["gpu=800blocks", "cpu=3000blocks", "ssd=8000blocks"]]
        for pol in POLICIES:
            for timing in ("sequential", "modeled"):
                for cap in caps[: 1 if quick else None]:
                    runs.append((f"replay/{tname}/{pol}/{timing}/1t/{cap}",
                                 ["replay", path, "--policy", pol, "--timing", timing, "--tier", f"gpu={cap}"]))
                for tiers in two + three:
                    for wp in ("back", "through"):
                        if quick and wp == "through":
                            continue
                        args = ["replay", path, "--policy", pol, "--timing", timing, "--write-policy", wp]
                        for t in tiers:
                            args += ["--tier", t]
                        runs.append((f"replay/{tname}/{pol}/{timing}/{len(tiers)}t/{'+'.join(tiers)}/{wp}", args))
        runs.append((f"replay/{tname}/fp8-mixed", ["replay", path, "--dtype", "fp8", "--tier-policy",
                                                   "cpu=protected", "--link", "cpu=25GB/s"] +
                     (["--tier", "gpu=20blocks", "--tier", "cpu=60blocks"] if small else [])))
        runs.append((f"replay/{tname}/partial-nolast", ["replay", path, "--cache-partial-blocks",
                                                        "--no-recompute-last-token", "--timing", "sequential"] +
                     (["--tier", "gpu=20blocks"] if small else ["--tier", "gpu=3000blocks"])))
        runs.append((f"compare/{tname}", ["compare", path, "--policy", "lru", "--policy", "protected",
                                          "--policy", "fifo"] +
                     (["--tier", "gpu=20blocks", "--tier", "cpu=60blocks", "--curve-capacities", "5blocks,20blocks,100blocks"]
                      if small else ["--curve-capacities", "1000blocks,5000blocks,20000blocks"])))
        runs.append((f"curve/{tname}", ["curve", path] + (["--capacities", "5blocks,20blocks,100blocks"] if small
                                                          else ["--capacities", "1000blocks,5000blocks,20000blocks"])))
        runs.append((f"curve/{tname}/points", ["curve", path, "--points", "8", "--no-belady"]))
    return runs


def _digest_table(path: str) -> str:
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    h = hashlib.sha256()
    for name in t.column_names:
        h.update(name.encode())
        h.update(t.column(name).to_numpy(zero_copy_only=False).tobytes())
    return h.hexdigest()[:16]


def _applicable(extra: list[str], args: list[str]) -> list[str]:
    """``extra`` without a ``--compute MODE`` pair for a sequential run: sequential timing has no compute
    queue, and pcs refuses the option there (the run's output is the same without it)."""
    if "sequential" not in args or "--compute" not in extra:
        return extra
    i = extra.index("--compute")
    return extra[:i] + extra[i + 2:]


def snapshot(out: str, quick: bool, extra: list[str] | None = None) -> None:
    from click.testing import CliRunner

    from pcs.cli.main import cli

    runner = CliRunner()
    result: dict[str, object] = {}
    runs = _runs(quick)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (rid, args) in enumerate(runs):
            args = list(args) + ["--format", "json"] + (["--quiet"] if args[0] != "curve" else [])
            if extra and args[0] in ("replay", "compare"):
                args += _applicable(extra, args)
            rows = None
            if args[0] == "replay":
                rows = os.path.join(tmp, f"r{i}.parquet")
                args += ["--requests-out", rows]
            r = runner.invoke(cli, args, catch_exceptions=False)
            if r.exit_code != 0:
                result[rid] = {"exit_code": r.exit_code, "output": r.output[-400:]}
                continue
            data = json.loads(r.stdout)
            if rows:
                data = {"summary": data, "requests_digest": _digest_table(rows)}
            result[rid] = data
            print(f"[{i + 1}/{len(runs)}] {rid}", file=sys.stderr)
    common.write_out(out, json.dumps(result, indent=1, sort_keys=True))
    print(json.dumps({"snapshot": out, "runs": len(runs), "extra_replay_args": extra or []}))


def _norm(path: str, value):
    """Trace paths compare by what follows the checkout or shared folder (worktrees differ in prefix); the trace
    file's modification time (``trace_file.mtime_ns``, a property of the checkout, not of the run) is left out; the
    paths inside ``replay_command`` compare the same way."""
    if path.endswith("trace_file.mtime_ns"):
        return None
    if path.endswith(".replay_command") and isinstance(value, str):   # absolute paths inside the command
        return re.sub(r"\S*(/traces/|/shared/|/tests/)", r"\1", value)
    if (path.endswith(".trace") or path.endswith("trace_file.path")) and isinstance(value, str):
        for marker in ("/traces/", "/shared/"):
            if marker in value:
                return marker + value.split(marker, 1)[1]
    return value


def _walk(a, b, path: str, out: list[str]) -> None:
    a, b = _norm(path, a), _norm(path, b)
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                out.append(f"{path}.{k}: removed")
            else:
                _walk(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {a!r} -> {b!r}")


def _load(path: str) -> dict:
    """A snapshot file's runs; exit 2 with one line when it is not a snapshot (not JSON, or not an object)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        common.fail("snapshot", f"--diff: {path} is not a snapshot file: {str(e).splitlines()[0]}")
    if not isinstance(data, dict):
        common.fail("snapshot", f"--diff: {path} is not a snapshot file (not a JSON object)")
    return data


def diff(old: str, new: str) -> int:
    a, b = _load(old), _load(new)
    out: list[str] = []
    for rid in a:
        if rid not in b:
            out.append(f"{rid}: run missing")
            continue
        _walk(a[rid], b[rid], rid, out)
    for line in out[:200]:
        print(line)
    print(json.dumps({"runs": len(a), "differences": len(out)}))
    return 1 if out else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--quick", action="store_true", help="fewer capacities and no write-through runs")
    ap.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"))
    ap.add_argument("--extra-replay-args", default="", metavar="ARGS",
                    help="flags appended to every replay and compare run, e.g. \"--compute infinite\"")
    ns = ap.parse_args()
    if ns.diff:
        for f in ns.diff:
            if not Path(f).is_file():
                ap.error(f"--diff: no such file: {f}")
        sys.exit(diff(*ns.diff))
    if not ns.out:
        ap.error("give OUT.json or --diff OLD NEW")
    common.check_out(ns.out, [p for _, p in _traces()], "snapshot")
    extra = shlex.split(ns.extra_replay_args)
    _check_extra(extra)
    snapshot(ns.out, ns.quick, extra)


def _check_extra(extra: list[str]) -> None:
    """Refuse (one line, exit 2, before any run) ``--extra-replay-args`` that ``pcs replay`` itself refuses when it
    parses its options (an unknown option, a bad value): otherwise every run would record the same error."""
    if not extra:
        return
    import click

    from pcs.cli.main import cli

    with click.Context(cli) as ctx:
        replay = cli.get_command(ctx, "replay")
        try:
            replay.make_context("replay", [str(_traces()[0][1]), *extra], parent=ctx)
        except click.ClickException as e:
            common.fail("snapshot", f"--extra-replay-args {shlex.join(extra)!r}: {e.format_message()}")


if __name__ == "__main__":
    common.run(main, "snapshot")
