"""Digests of every router's fleet result on Mooncake, to show that a speed change moves no number.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces), default
deployment per instance, every router of ``pcs.fleet.routers`` (session is
refused on this trace: its error is recorded) at 4 and 8 instances, under the
step scheduler (default), ``--compute infinite`` and sequential timing. Per
run: the fleet summary (``to_dict()``, every number of ``pcs replay
--instances N --format json``), and SHA-256 digests of the assignment and of
the per-request table. Run it on two checkouts and compare the files
(``cmp``): identical files = identical routing, hits, TTFTs and loads.

    python benchmarks/fleet_digest.py OUT.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import common

MODES = (("step", {}), ("infinite", {"compute_mode": "infinite"}), ("sequential", {"timing": "sequential"}))


def _digest(res) -> dict:
    table = res.requests
    h = hashlib.sha256()
    for c in table.column_names:
        h.update(c.encode())
        h.update(repr(table.column(c).to_pylist()).encode())
    return {"summary": res.summary.to_dict(), "assignment": hashlib.sha256(res.assignment.tobytes()).hexdigest(),
            "requests": h.hexdigest()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the JSON file to write (temp file + rename)")
    a = ap.parse_args()
    common.check_out(a.out, [common.MOONCAKE_CONV], "fleet_digest")
    common.need_trace(common.MOONCAKE_CONV, "fleet_digest")
    from pcs.fleet import fleet_replay
    from pcs.fleet.routers import router_names
    from pcs.trace import open_trace

    out = {}
    for mode, kw in MODES:
        for n in (4, 8):
            for r in router_names():
                try:
                    out[f"{mode},{n},{r}"] = _digest(fleet_replay(open_trace(common.MOONCAKE_CONV), instances=n,
                                                                  router=r, **kw))
                except ValueError as e:
                    out[f"{mode},{n},{r}"] = f"error: {e}"
    common.write_out(a.out, json.dumps(out, indent=1, sort_keys=True, default=str))
    common.emit({"bench": "fleet_digest", "runs": len(out), "out": str(a.out)})


if __name__ == "__main__":
    common.run(main, "fleet_digest")
