"""A file named as compressed (.gz, .zst, .xz, .bz2) whose bytes are not that compression is refused by name, on
every command reading a trace and in the Python API, before any reader or format detection sees its bytes (a .gz of
plain text was read on to "cannot detect the format: the first non-blank line is not JSON"); a text whose last line
is cut (a gzip of a file copied mid-write) says so at that line (docs/traces.md).

By hand: b"notgzip\\n" starts 6e 6f 74 67 ("notg"), gzip's magic is 1f 8b (RFC 1952 §2.3.1), zstd's 28 b5 2f fd
(RFC 8878 §3.1.1); a Parquet file starts "PAR1" (50 41 52 31).
"""
from __future__ import annotations

import gzip

import pytest

from tests.helpers import invoke

ROW = '{"timestamp": %d, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\n'


def _error(*args) -> str:
    r = invoke(*args)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    return r.output.strip().splitlines()[-1]


@pytest.mark.parametrize("cmd", [("trace", "stats"), ("replay",), ("curve",), ("compare", "--policy", "lru",
                                 "--policy", "fifo"), ("trace", "events"), ("trace", "convert", "{out}")])
def test_plain_text_named_gz_is_not_gzip_on_every_command(tmp_path, cmd):
    p = tmp_path / "fake.jsonl.gz"
    p.write_bytes(b"notgzip\n")
    args = [c.format(out=tmp_path / "o.parquet") for c in cmd]
    where = 2 if cmd[:2] == ("trace", "convert") else len(args)
    args.insert(where, str(p))
    assert _error(*args) == (f"pcs: error: {p}: is named .gz but is not gzip: its first bytes are 6e 6f 74 67, not "
                             "gzip's 1f 8b (it looks like plain text: another file renamed, or never compressed); "
                             "rename it to what it holds")


def test_other_suffixes_and_parquet_named_gz(tmp_path):
    p = tmp_path / "t.jsonl.zst"
    p.write_text(ROW % 1)
    assert _error("trace", "stats", p).endswith(
        "is named .zst but is not zstd: its first bytes are 7b 22 74 69, not zstd's 28 b5 2f fd (it looks like "
        "plain text: another file renamed, or never compressed); rename it to what it holds")
    src = tmp_path / "t.jsonl"
    src.write_text(ROW % 1)
    pq = tmp_path / "t.parquet"
    assert invoke("trace", "convert", src, pq).exit_code == 0
    gz = tmp_path / "t.parquet.gz"
    gz.write_bytes(pq.read_bytes())
    assert ("is named .gz but is not gzip: its first bytes are 50 41 52 31, not gzip's 1f 8b (it looks like a Parquet "
            "file: another file renamed)") in _error("trace", "stats", gz)
    empty = tmp_path / "e.jsonl.gz"
    empty.write_bytes(b"")
    assert _error("replay", empty) == f"pcs: error: {empty}: is named .gz but is empty: no gzip stream (not even its header)"


def test_python_api_refuses_it_too(tmp_path):
    import pcs
    from pcs.errors import InputError

    p = tmp_path / "fake.jsonl.gz"
    p.write_bytes(b"notgzip\n")
    with pytest.raises(InputError) as e:
        list(pcs.open_trace(str(p)))
    assert e.value.path == str(p) and e.value.problem.startswith("is named .gz but is not gzip")


def test_a_real_gzip_still_reads_and_a_cut_stream_names_its_line(tmp_path):
    p = tmp_path / "ok.jsonl.gz"
    p.write_bytes(gzip.compress((ROW % 1 + ROW % 2).encode()))
    r = invoke("trace", "stats", p, "--format", "json")
    assert r.exit_code == 0 and '"requests": 2' in r.stdout, r.output
    body = gzip.compress("".join(ROW % i for i in range(1, 2001)).encode())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(body[:len(body) // 2])
    assert "truncated gzip stream" in _error("trace", "stats", cut)


@pytest.mark.parametrize("gz", [False, True])
def test_a_last_line_cut_short_says_so(tmp_path, gz):
    text = (ROW % 1 + ROW % 2)[:-30]          # line 2 cut inside its hash_ids, no newline after it
    p = tmp_path / ("cut.jsonl.gz" if gz else "cut.jsonl")
    p.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    out = _error("trace", "stats", p)
    assert out.startswith(f"pcs: error: {p}:2: invalid JSON") and out.endswith(
        "; it is the file's last line and ends without a newline: the file looks cut short (truncated)")
    mid = tmp_path / "mid.jsonl"                  # a broken line with lines after it is no cut file
    mid.write_text('{"timestamp": \n' + ROW % 2)
    assert "cut short" not in _error("trace", "stats", mid, "--trace-format", "mooncake")


@pytest.mark.parametrize("suffix, kind, magic", [
    # each format's magic bytes from its specification: gzip RFC 1952 §2.3.1 (1f 8b), zstd RFC 8878 §3.1.1
    # (28 b5 2f fd), xz ("The .xz File Format" §2.1.1.1: fd 37 7a 58 5a 00), bzip2 ("BZh" = 42 5a 68)
    (".gz", "gzip", "1f 8b"), (".gzip", "gzip", "1f 8b"), (".GZ", "gzip", "1f 8b"), (".zst", "zstd", "28 b5 2f fd"),
    (".zstd", "zstd", "28 b5 2f fd"), (".xz", "xz", "fd 37 7a 58 5a 00"), (".bz2", "bzip2", "42 5a 68"),
])
def test_every_compression_suffix_is_checked(tmp_path, suffix, kind, magic):
    p = tmp_path / f"t.jsonl{suffix}"
    p.write_text(ROW % 1)          # plain JSONL: its first bytes are '{"ti' = 7b 22 74 69
    assert _error("trace", "stats", p).endswith(
        f"is named {suffix.lower()} but is not {kind}: its first bytes are 7b 22 74 69, not {kind}'s {magic} "
        "(it looks like plain text: another file renamed, or never compressed); rename it to what it holds")


@pytest.mark.parametrize("head, why", [
    # '{' (7b): a JSON line; 't' (74): a CSV header's first letter; 00 and 8b: neither, so the bytes were cut or
    # another binary file renamed; 'PAR1': Parquet's magic (its file format spec)
    (b'{"timestamp": 1}\n', "it looks like plain text: another file renamed, or never compressed"),
    (b"timestamp,input_length\n", "it looks like plain text: another file renamed, or never compressed"),
    (bytes([0, 0x8b, 8, 0, 0, 0, 0, 0]), "cut short, or another file renamed"),
    (b"PAR1\x15\x04", "it looks like a Parquet file: another file renamed"),
    # Review 45 (mend45b): text the readers take that does not start with '{' or a letter (each said "cut short"):
    # a UTF-8 byte-order mark (ef bb bf) before '{', blank lines and spaces before '{', a JSON array's '[',
    # blank space alone
    (b'\xef\xbb\xbf{"timestamp": 1}\n', "it looks like plain text: another file renamed, or never compressed"),
    (b'\n\n   \n\n\n\n{"timestamp": 1}\n', "it looks like plain text: another file renamed, or never compressed"),
    (b'[{"timestamp": 1}]\n', "it looks like plain text: another file renamed, or never compressed"),
    (b"\n" * 100, "it looks like plain text: another file renamed, or never compressed"),
])
def test_the_refusal_says_what_the_bytes_look_like(tmp_path, head, why):
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(head)
    assert _error("trace", "stats", p).endswith(f"not gzip's 1f 8b ({why}); rename it to what it holds")


def test_a_zst_name_on_gzip_bytes_says_gzip(tmp_path):
    # gzip's magic 1f 8b 08 (deflate) in a file named .zst: another compression renamed, not "cut short"
    p = tmp_path / "t.jsonl.zst"
    p.write_bytes(bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0]))
    assert _error("trace", "stats", p).endswith(
        "not zstd's 28 b5 2f fd (it looks like gzip-compressed: another file renamed); rename it to what it holds")
