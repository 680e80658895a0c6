"""Token-id JSONL outputs (pcs trace from-chat OUT, pcs trace synth --tokens-out) follow the trace outputs' name rule
(docs/traces.md): a .gz name is gzipped (pcs reads a .gz name only as gzip), and a name of a format pcs does not write
for them (CSV, TSV, Parquet) is refused rather than holding JSONL. A gzipped output's bytes depend on the data and the
output's name alone (mtime 0, the header naming the output as gzip(1) does, never the temporary file's random name).
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
CHAT = ROOT / "traces" / "formats" / "openai_chat_4.jsonl"
TOK = ROOT / "traces" / "formats" / "tiny_wordlevel_tokenizer.json"


def _chat(out):
    return invoke("trace", "from-chat", CHAT, out, "--tokenizer", TOK)


def _synth(out, tokens_out):
    return invoke("trace", "synth", out, "--requests", "3", "--tokens-out", tokens_out)


@pytest.mark.parametrize("run", [_chat, lambda out: _synth(out.with_name("m.jsonl"), out)])
def test_a_gz_token_output_is_gzip_and_reads_back(tmp_path, run):
    out = tmp_path / "t.jsonl.gz"
    r = run(out)
    assert r.exit_code == 0, r.output
    data = out.read_bytes()
    assert data[:2] == b"\x1f\x8b" and gzip.decompress(data).startswith(b'{"timestamp": ')
    assert data[3] & 0x08 and data[10:18] == b"t.jsonl\x00"     # FNAME (RFC 1952): the output's name, no .gz
    r = invoke("trace", "stats", out, "--block-size", "4", "--format", "json")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("name", ["t.csv", "t.tsv.gz", "t.parquet", "t.PQ"])
def test_a_token_output_named_as_another_format_is_refused(tmp_path, name):
    out = tmp_path / name
    for r, option in ((_chat(out), "OUT"), (_synth(tmp_path / "m.jsonl", out), "--tokens-out")):
        assert r.exit_code == 2 and r.output.strip() == (
            f"pcs: error: {option} {out}: the token-id trace is JSONL (pcs writes no CSV and no token-id Parquet): "
            "name it .jsonl, or .jsonl.gz for gzip"), r.output
        assert not out.exists()


def test_a_gzipped_trace_output_is_the_same_bytes_each_time(tmp_path):
    src = ROOT / "traces" / "sample_chat.jsonl"
    out = tmp_path / "c.jsonl.gz"
    assert invoke("trace", "convert", src, out).exit_code == 0
    first = out.read_bytes()
    out.unlink()
    assert invoke("trace", "convert", src, out).exit_code == 0
    assert out.read_bytes() == first and first[10:18] == b"c.jsonl\x00"
