"""Fixtures of the sweep tests: a dozen-point replay plan on the bundled sample and its rows run in-process.

The plan: 3 policies x 4 host-DRAM sizes (0, 10, 20, 30 GB) over a 300-block
GPU tier, llama-3.1-8b on one GPU, modeled timing, the 200-request sample
trace ``sample_azure_conv.jsonl``: about 0.04 s per point here.
"""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_azure_conv.jsonl"

DOZEN = f"""
kind = "replay"
[fixed]
trace = "{SAMPLE}"
model = "llama-3.1-8b"
tp = 1
tier = {{gpu = "300blocks"}}
[axes]
policy = ["lru", "fifo", "slru"]
"tier.cpu" = {{from = "0GB", to = "30GB", step = "10GB"}}
"""


@pytest.fixture(scope="session")
def dozen_plan(tmp_path_factory) -> Path:
    """The dozen-point plan file."""
    path = tmp_path_factory.mktemp("plan") / "dozen.toml"
    path.write_text(DOZEN, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def dozen_rows(dozen_plan, tmp_path_factory) -> list[dict]:
    """The plan's rows run in this process (--jobs 1), ordered by point id."""
    from pcs.sweep import read_results, run_sweep

    out = tmp_path_factory.mktemp("jobs1")
    run = run_sweep(dozen_plan, out, jobs=1)
    assert (run.points, run.ran, run.failed) == (12, 12, 0)
    return read_results(out).to_pylist()
