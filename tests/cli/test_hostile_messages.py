"""Errors that name the option, file or argument at fault.

Each case is one bad input; the expected words come from the option's documented
meaning (docs/cli.md, docs/traces-formats.md), not from the code's output.
"""
from __future__ import annotations

import gzip

import pytest
from click.testing import CliRunner

import pcs
from pcs.cli.main import cli
from pcs.fleet.summary import FleetSummary

T = "traces/sample_chat.jsonl"


def _err(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "bug in pcs" not in r.output, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pcs: error:"), lines
    return lines[0]


@pytest.mark.parametrize("link, reason", [
    ("cpu=0GB/s", "must be > 0"),              # a link that moves nothing
    ("cpu=-1GB/s", "negative"),
    ("cpu=1e300GB/s", "too large"),            # 1e309 B/s > 2**63 - 1
    ("cpu=nanGB/s", "finite"),
    ("cpu=infGB/s", "finite"),
    ("cpu=warp-drive", "neither a preset"),    # the old message stays for a non-number
])
def test_link_errors_name_the_option_and_the_reason(link, reason):
    msg = _err("replay", "-q", T, "--tier", "gpu=10GB", "--tier", "cpu=100GB", "--link", link)
    assert f"--link {link}" in msg and reason in msg, msg


def test_requests_out_write_failure_names_the_option():
    # /proc accepts no new files even for root: the write fails after the run
    msg = _err("replay", "-q", T, "--tier", "gpu=10GB", "--requests-out", "/proc/pcs_no_such.csv")
    assert "--requests-out /proc/pcs_no_such.csv" in msg, msg


@pytest.mark.parametrize("value, words, never", [
    ("-5", ">= 0", "-5GB"),                   # neither -5GB nor -5blocks is valid: no such hint
    ("1.5", "1.5GB", "1.5blocks"),            # a block count is whole
])
def test_capacity_hints_suggest_only_valid_values(value, words, never):
    msg = _err("curve", "-q", T, "--capacities", value)
    assert words in msg and never not in msg, msg


def test_stray_cr_in_csv_names_line_without_python_hint(tmp_path):
    p = tmp_path / "cr.csv"
    p.write_bytes(b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,10\r0,44\n")
    msg = _err("trace", "stats", str(p))
    assert f"{p}:2:" in msg and "carriage return" in msg and "universal-newline" not in msg, msg


def test_jsonl_null_line_says_null(tmp_path):
    p = tmp_path / "n.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\nnull\n')
    msg = _err("trace", "stats", str(p))
    assert f"{p}:2:" in msg and "got null" in msg and "NoneType" not in msg, msg


def test_zstd_input_says_unsupported_and_gzip_is(tmp_path):
    p = tmp_path / "t.jsonl.zst"
    p.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)  # the zstd frame magic (RFC 8878 3.1.1)
    msg = _err("trace", "stats", str(p))
    assert "zstd" in msg and "not supported" in msg and "gzip" in msg, msg


def test_gzip_still_read(tmp_path):
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n'))
    r = CliRunner().invoke(cli, ["trace", "stats", str(p), "--format", "json"])
    assert r.exit_code == 0, r.output


def test_corrupt_parquet_page_names_the_file(tmp_path):
    good = tmp_path / "t.parquet"
    r = CliRunner().invoke(cli, ["trace", "convert", "-q", T, str(good)])
    assert r.exit_code == 0, r.output
    data = bytearray(good.read_bytes())
    assert len(data) > 3000
    data[1000:len(data) - 2000] = bytes(len(data) - 3000)  # zero the data pages, keep the footer
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    msg = _err("trace", "stats", str(bad))
    assert f"{bad}" in msg, msg


@pytest.mark.parametrize("kw, exc, words", [
    ({"trace": 123}, TypeError, "trace must be a path"),
    ({"trace": [1, 2, 3]}, TypeError, "got an item of type int"),
    ({"tiers": {"gpu": "10GB"}}, TypeError, "tiers must be a sequence of 'NAME=SIZE' strings or TierSpec"),
    ({"tiers": ["gpu=10GB", 5]}, TypeError, "an item of type int"),
])
def test_api_wrong_types_name_the_argument(kw, exc, words):
    kw = {"trace": T, **kw}
    with pytest.raises(exc, match=words):
        pcs.replay(**kw)


def test_api_one_tier_string_is_one_tier():
    # docs: "one such string alone is one tier" -- the same run as tiers=["gpu=10GB"]
    one = pcs.replay(T, tiers="gpu=10GB")
    listed = pcs.replay(T, tiers=["gpu=10GB"])
    assert [t.name for t in one.summary.tiers] == ["gpu"]
    assert one.summary.hit_ratio == listed.summary.hit_ratio


def test_instance_summaries_doc_mentions_shared_tier():
    doc = FleetSummary.__dataclass_fields__["instance_summaries"].metadata
    assert "shared-tier" in str(doc), doc
