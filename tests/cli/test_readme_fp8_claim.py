"""The README's fp8 claim states the regime it was measured in: the sample saturates one instance (TTFT is mostly
queueing), so the README gives the ``--compute infinite`` figures beside it. Each figure the README and
docs/replay.md print is checked against the four runs (rounded as printed); a percentage is
(fp16 - fp8) / fp16 of the TTFT p50s."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import invoke_json

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run(*args: str) -> tuple[float, float]:
    """(hit ratio in percent, TTFT p50 in seconds) of ``pcs replay ARGS`` on the sample."""
    d = invoke_json("replay", *args)
    return d["hit_ratio"] * 100, d["envelope"]["ttft_p50_s"]


def _cut(fp16: float, fp8: float) -> float:
    return 100 * (fp16 - fp8) / fp16


def test_the_readme_fp8_figures_are_what_the_runs_give():
    (h16, t16), (h8, t8) = _run(), _run("--dtype", "fp8")
    (i16, u16), (i8, u8) = _run("--compute", "infinite"), _run("--compute", "infinite", "--dtype", "fp8")
    readme = " ".join(ROOT.joinpath("README.md").read_text().split())
    m = re.search(r"sample: ([\d.]+) -> ([\d.]+) %, TTFT p50 -(\d+) %, ([\d.]+) -> ([\d.]+) s, measured on an "
                  r"instance the sample's load saturates.*?with `--compute infinite`, no compute queue: ([\d.]+) -> "
                  r"([\d.]+) %, TTFT p50 -(\d+) %, ([\d.]+) -> ([\d.]+) ms", readme)
    assert m, "the README's fp8 sentence moved or changed its form"
    assert m.groups() == (f"{h16:.1f}", f"{h8:.1f}", f"{_cut(t16, t8):.0f}", f"{t16:.2f}", f"{t8:.2f}",
                          f"{i16:.1f}", f"{i8:.1f}", f"{_cut(u16, u8):.0f}", f"{u16 * 1e3:.2f}", f"{u8 * 1e3:.2f}")
    table = ROOT.joinpath("docs", "replay.md").read_text()
    for cmd, (h, t, unit) in {"pcs replay": (h16, t16, "s"), "pcs replay --dtype fp8": (h8, t8, "s"),
                              "pcs replay --compute infinite": (i16, u16, "ms"),
                              "pcs replay --dtype fp8 --compute infinite": (i8, u8, "ms")}.items():
        shown = f"{t:.2f} s" if unit == "s" else f"{t * 1e3:.2f} ms"
        assert f"| `{cmd}` | {h:.2f} % | {shown}" in table, cmd
    assert f"(-{_cut(t16, t8):.1f} %)" in table and f"(-{_cut(u16, u8):.1f} %)" in table
