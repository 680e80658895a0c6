"""``pcs compare`` shows each tier's capacity in decimal bytes beside its whole blocks, as ``pcs replay``'s tier table
does (``199.98 GB = 1,192 blk``), one ``tier NAME`` row per tier; it printed ``gpu=1192blocks cpu=5960blocks`` only.

Worked by hand: llama-2-70b (80 layers, 8 KV heads of 128) in fp16 at 512-token blocks holds 2 (K and V) x 80 x 8 x
128 x 2 B x 512 = 167,772,160 B per block (per TP group: 8 ranks of 1/8 each). ``gpu=200GB`` holds floor(200e9 /
167,772,160) = 1,192 blocks = 199,984,414,720 B (199.98 GB); ``cpu=1TB`` 5,960 blocks = 999,922,073,600 B (999.92
GB); ``ssd=2TB`` 11,920 blocks = 1,999,844,147,200 B (2.00 TB); ``gpu=500blocks`` 83,886,080,000 B (83.89 GB).
"""
from __future__ import annotations

from tests.helpers import invoke


def _rows(*args: str) -> dict[str, list[str]]:
    r = invoke("compare", "-q", *args)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    widths = [len(c) for c in lines[2].split("  ")]           # the dashes under the headers give the columns
    rows = {}
    for line in lines[3:]:
        if not line.strip():
            break
        cells, at = [], 0
        for w in widths:
            cells.append(line[at:at + w].strip())
            at += w + 2
        rows[cells[0]] = cells[1:]
    return rows


def test_each_tier_shows_bytes_beside_blocks():
    rows = _rows("--policy", "lru", "--policy", "fifo", "--tier", "gpu=200GB", "--tier", "cpu=1TB")
    assert rows["tier gpu"] == ["199.98 GB = 1,192 blk"] * 2
    assert rows["tier cpu"] == ["999.92 GB = 5,960 blk"] * 2
    assert "tiers" not in rows


def test_a_tier_a_variant_does_not_have_is_a_dash():
    rows = _rows("--tiers", "gpu=200GB,cpu=1TB", "--tiers", "gpu=500blocks,ssd=2TB")
    assert rows["tier gpu"] == ["199.98 GB = 1,192 blk", "83.89 GB = 500 blk"]
    assert rows["tier cpu"] == ["999.92 GB = 5,960 blk", "-"]
    assert rows["tier ssd"] == ["-", "2.00 TB = 11,920 blk"]
