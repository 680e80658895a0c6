"""docs/cluster.md's fleet tables are what ``python benchmarks/fleet_tables.py`` prints, row for row:
every row of the docs' router and shared-tier tables is rebuilt here from its own
numbers by the script's row formatter, labels included, and must come back character for character. The
numbers themselves are the script's output on the real trace (docs/cluster.md names the command); this test
checks that the script prints them the way the docs show them, so the two can be diffed."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = (ROOT / "docs" / "cluster.md").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def script():
    """benchmarks/fleet_tables.py, loaded from its path (it imports benchmarks/common.py as ``common``)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("pcs_fleet_tables", ROOT / "benchmarks" / "fleet_tables.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def _num(cell: str):
    """A docs cell as a number: '18.5 %' -> 0.185, '1,167' -> 1167.0, '-' -> None."""
    cell = cell.strip()
    if cell == "-":
        return None
    if cell.endswith("%"):
        return float(cell[:-1]) / 100
    return float(cell.replace(",", ""))


def _rows(header: str) -> list[tuple[str, list[str]]]:
    """Every data row of the docs tables whose header row starts with ``header``: (the line, its cells)."""
    out, inside = [], False
    for line in CLUSTER:
        if line.startswith(header):
            inside = True
        elif inside and line.startswith("|") and not line.startswith("|---"):
            out.append((line, [c.strip() for c in line.strip("|").split("|")]))
        elif inside and not line.startswith("|"):
            inside = False
    return out


ROUTER_ROWS = _rows("| router | delivered |")
SHARED_ROWS = _rows("| instances | router | shared tier |")


def test_the_docs_have_the_tables():
    # 4 instances: 7 routers; 8 instances: 7 + the two 10 s stale rows; shared tier: 12 rows each for the
    # step scheduler and --compute infinite
    assert len(ROUTER_ROWS) == 7 + 9 and len(SHARED_ROWS) == 24


@pytest.mark.parametrize("line,cells", ROUTER_ROWS, ids=lambda x: x[0] if isinstance(x, list) else "")
def test_router_rows_print_as_documented(script, line, cells):
    name = cells[0]
    if cells[1].startswith("n/a"):       # a refused router: the refusal's first clause, the rest empty
        exc = ValueError(f"{cells[1][len('n/a: '):]}; use --router something else")
        assert f"| {name} | {script.refusal(exc)} | | | | | | | |" == line
        return
    base = name.split(" (")[0].split(",")[0]
    if "stale" not in name:
        assert script.label(base, 4) == name
    v = [_num(c) for c in cells[1:]]
    d = dict(delivered=v[0], captured=v[1], ceiling=v[2], imbalance_requests=v[3], imbalance_tokens=v[4],
             imbalance_busy=v[5], ttft_p50_s=v[6], ttft_p99_s=v[7])
    assert f"| {name} {script.router_cells(d)}" == line


@pytest.mark.parametrize("line,cells", SHARED_ROWS, ids=lambda x: "/".join(x[:3]) if isinstance(x, list) else "")
def test_shared_rows_print_as_documented(script, line, cells):
    rw = None if cells[7] == "-" else [float(x) for x in cells[7].split(" / ")]
    p50, p99 = (float(x.replace(",", "")) for x in cells[8].split(" / "))
    d = dict(delivered=_num(cells[3]), captured=_num(cells[4]), shared_hit_ratio=_num(cells[5]),
             routing_captured=_num(cells[6]), read_tb=rw and rw[0], written_tb=rw and rw[1],
             ttft_p50_s=p50, ttft_p99_s=p99)
    assert f"| {cells[0]} | {cells[1]} | {cells[2]} {script.shared_cells(d)}" == line


@pytest.mark.parametrize("seconds,text", [(0.32, "0.320"), (0.6347, "0.635"), (6.1, "6.10"), (10.2749, "10.27"),
                                          (1166.98, "1,167"), (None, "-")])
def test_seconds_format(script, seconds, text):
    # docs/cluster.md's TTFT digits: under 1 s three decimals, under 100 s two, above whole seconds grouped
    assert script._s(seconds) == text
