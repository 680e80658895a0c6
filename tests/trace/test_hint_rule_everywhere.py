"""The "pass --trace-format X" hint under one rule (pcs.trace.api._suggestion), for ``--trace-format parquet`` on
a text file too: X is named only when X's reader accepts the first non-blank line, read at the block size the user
gave (--block-size), else at X's default; otherwise the message says the keys look like an X trace's and gives
X's reader's own reason (docs/traces-formats.md). The expected texts follow from the Mooncake reader's documented
check: a line of N input tokens holds ceil(N / block size) ids, and a blank line 1 is refused as one.
"""
from __future__ import annotations

from pathlib import Path

from tests.helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
B16 = ROOT / "traces" / "sample_tokens_b16.jsonl"               # Mooncake keys; line 1: 105 tokens, 7 ids (16/block)
MOONCAKE_8 = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"  # line 1: 7,322 tokens, 15 ids (512/block)
NOT_PARQUET = "not a Parquet file (it does not start with the Parquet magic bytes PAR1)"
PASS_MOONCAKE = "pass --trace-format mooncake (or no --trace-format, and pcs detects it)"


def _error(*args) -> str:
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1, r.output
    return r.output.strip()


def test_parquet_on_a_file_the_suggested_reader_refuses_gives_that_readers_reason():
    """At Mooncake's default 512 tokens, 105 tokens are ceil(105 / 512) = 1 block, not 7: no "pass mooncake"."""
    assert _error("trace", "stats", "--trace-format", "parquet", B16) == (
        f"pcs: error: {B16}: {NOT_PARQUET}; its keys look like a mooncake trace's, but that reader refuses the file "
        "too: line 1: field 'hash_ids': has 7 ids but ceil(105 / block size 512) = 1; was the trace recorded at "
        "another block size? (--block-size 16 fits)")


def test_parquet_on_a_file_with_a_blank_line_1_names_that_line(tmp_path):
    """Detection passes over the blank line; the Mooncake reader refuses it first (line 1: blank line)."""
    f = tmp_path / "blank_first.jsonl"
    f.write_bytes(b"\n" + MOONCAKE_8.read_bytes())
    assert _error("trace", "stats", "--trace-format", "parquet", f) == (
        f"pcs: error: {f}: {NOT_PARQUET}; its keys look like a mooncake trace's, but that reader refuses the file "
        "too: line 1: blank line (use --on-error skip to skip blank lines)")


def test_parquet_with_the_users_block_size_that_fits_names_mooncake():
    """At --block-size 16, ceil(105 / 16) = 7 ids: the Mooncake reader accepts line 1."""
    assert _error("trace", "stats", "--trace-format", "parquet", "--block-size", "16", B16) == (
        f"pcs: error: {B16}: {NOT_PARQUET}; format detection reads this file as a mooncake trace: {PASS_MOONCAKE}")


def test_a_named_format_hint_uses_the_users_block_size():
    """bailian --block-size 16 on B16: mooncake at 16 accepts it (was refused at 512); tokens --block-size 16 on
    MOONCAKE_8: mooncake at 16 wants ceil(7,322 / 16) = 458 ids, not 15 (was accepted at 512)."""
    assert _error("trace", "stats", "--trace-format", "bailian", "--block-size", "16", B16) == (
        f"pcs: error: {B16}:1: field 'chat_id': missing; format detection reads this line as a mooncake trace: "
        f"{PASS_MOONCAKE}")
    assert _error("trace", "stats", "--trace-format", "tokens", "--block-size", "16", MOONCAKE_8) == (
        f"pcs: error: {MOONCAKE_8}:1: field 'token_ids': missing; its keys look like a mooncake trace's, but that "
        "reader refuses the line too: field 'hash_ids': has 15 ids but ceil(7,322 / block size 16) = 458; was the "
        "trace recorded at another block size? (--block-size 512 fits)")
    assert _error("trace", "stats", "--trace-format", "tokens", MOONCAKE_8) == (      # no --block-size: 512
        f"pcs: error: {MOONCAKE_8}:1: field 'token_ids': missing; format detection reads this line as a mooncake "
        f"trace: {PASS_MOONCAKE}")
