"""docs/json.md's threads.reason names the auto rule's thresholds as pcs.beside holds them (they moved on
2026-12-04: 5,000,000 -> 2,000,000 bytes, 600,000 -> 200,000 block hashes), and the cases that always take threads."""
from pathlib import Path

from pcs import beside

DOC = Path(__file__).resolve().parents[2] / "docs" / "json.md"


def test_reason_row_names_the_thresholds_and_the_threaded_cases():
    row = next(ln for ln in DOC.read_text(encoding="utf-8").splitlines() if ln.startswith("| `reason` |")
               and "auto: inline for a small trace file" in ln)
    assert f"{beside.INLINE_BELOW_BYTES:,} bytes" in row
    assert f"{beside.INLINE_BELOW_PARQUET_IDS:,} block hashes" in row
    assert "gzip" in row and "in memory" in row
