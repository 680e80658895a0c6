"""Hostile input: no hang and no superlinear time on any input.

Members: /dev/zero (ran forever) and other devices as a trace or a settings
file, a terminal or a device on stdin, a FIFO with no writer, a file with no
newline, a line past the bound (pcs.trace.source.MAX_LINE_BYTES, 64 MiB,
documented in docs/traces.md), deep JSON nesting. Process tests run with a
timeout so a regression fails instead of hanging the suite.
"""
import os
import subprocess
import sys
import time

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke
from pcs.errors import InputError
from pcs.trace import source

DEVICE_ARGS = [
    ["replay", "/dev/zero"], ["curve", "/dev/zero"], ["compare", "/dev/zero"], ["trace", "stats", "/dev/zero"],
    ["trace", "convert", "/dev/zero", "o.jsonl"], ["trace", "synth", "o.jsonl", "--azure-csv", "/dev/zero"],
    ["trace", "events", "/dev/zero"], ["footprint", "--tokens", "1", "--model-config", "/dev/zero"],
    ["replay", SMALL_TRACE, "--model", "zero.json"], ["hardware", "--hardware-file", "zero.json"],
    ["budget", "--workloads", "zero.json"], ["envelope", "--restore-bytes", "1GB", "--bandwidth", "1GB/s",
                                                      "--prefill-csv", "/dev/zero"],
    ["trace", "from-chat", "/dev/zero", "o.jsonl", "--tokenizer", "/dev/zero"],
    ["replay", "/dev/null"], ["trace", "stats", "/dev/tty"],
]


@pytest.mark.parametrize("args", DEVICE_ARGS, ids=[" ".join(map(str, a)) for a in DEVICE_ARGS])
def test_a_device_is_refused_at_once(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    if "/dev/tty" in args and not os.path.exists("/dev/tty"):
        pytest.skip("no /dev/tty")
    os.symlink("/dev/zero", "zero.json")            # a settings file that is a device under a .json name
    t0 = time.monotonic()
    r = invoke(*args, "-q")
    assert time.monotonic() - t0 < 10
    assert_one_line_error(r, "device")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zero.json"]


def _pcs(args, timeout=60, **kw):
    return subprocess.run([sys.executable, "-m", "pcs", *map(str, args)], capture_output=True, timeout=timeout, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("stdin_path", ["/dev/zero", "/dev/null"])
def test_a_device_on_stdin_is_refused(stdin_path, tmp_path):
    with open(stdin_path, "rb") as stdin:
        r = _pcs(["replay", "-", "-q"], stdin=stdin, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 2 and r.stderr.decode().strip() == (
        "pcs: error: -: stdin is a device, not a file or a pipe (pcs reads files, pipes and redirected stdin)")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_fifo_without_a_writer_reads_as_empty(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = _pcs(["replay", fifo, "-q"])
    assert r.returncode == 2 and "empty trace" in r.stderr.decode()


@pytest.mark.slow
def test_a_fifo_with_data_is_read_once_like_stdin(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "pcs", "replay", str(fifo), "-q", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(fifo, "wb") as w:
        w.write(SMALL_TRACE.read_bytes())
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert b'"hit_ratio"' in out


@pytest.mark.slow
def test_a_pipe_of_zeros_stops_at_the_line_bound(tmp_path):
    # cat /dev/zero | pcs replay - : bounded by MAX_LINE_BYTES, not by the disk
    zeros = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE)
    try:
        r = _pcs(["replay", "-", "-q"], stdin=zeros.stdout, env=dict(os.environ, TMPDIR=str(tmp_path)))
    finally:
        zeros.kill()
        zeros.wait()
    assert r.returncode == 2 and "longer than 64 MiB" in r.stderr.decode()
    assert list(tmp_path.iterdir()) == []


def test_a_line_past_the_bound_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(source, "MAX_LINE_BYTES", 1 << 16)
    f = tmp_path / "t.jsonl"
    f.write_bytes(b'{"a": 1}\n' + b"x" * (1 << 17) + b"\n{}\n")
    with pytest.raises(InputError) as err:
        list(source.iter_chunks(f, chunk_bytes=4096))
    assert err.value.line == 2 and "longer than" in str(err.value)
    f.write_bytes(b"y" * (1 << 17))                                      # no newline at all
    with pytest.raises(InputError, match="longer than"):
        list(source.iter_chunks(f, chunk_bytes=4096))
    f.write_bytes(b"z" * ((1 << 16) - 1))                                # just under the bound: one line
    assert [len(c) for _, c in source.iter_chunks(f, chunk_bytes=4096)] == [(1 << 16) - 1]


def test_reading_a_file_without_newlines_is_linear(tmp_path, monkeypatch):
    # 2,048 chunks of 1 kB without a newline: the old reader joined and searched the growing line at every
    # chunk (2,048 x 1 MB scanned); the reader now searches only new bytes. A quadratic reader takes seconds.
    monkeypatch.setattr(source, "MAX_LINE_BYTES", 1 << 22)
    f = tmp_path / "t.txt"
    f.write_bytes(b"q" * (2 << 20) + b"\n")
    t0 = time.monotonic()
    chunks = list(source.iter_chunks(f, chunk_bytes=1024))
    assert [len(c) for _, c in chunks] == [(2 << 20) + 1]
    assert time.monotonic() - t0 < 2.0


def test_deep_json_nesting_is_one_line(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    for args in (["replay", f], ["trace", "stats", f], ["replay", f, "--trace-format", "mooncake"]):
        assert_one_line_error(invoke(*args, "-q"), str(f))


def test_stdin_names_the_long_line_as_a_file_does(tmp_path, monkeypatch):
    # two short lines, then 2**17 bytes with no newline past a bound of 2**16: the third line, by hand; stdin is
    # spooled to a file first, and the spool's error is the file reader's text (pcs.trace.source.long_line)
    monkeypatch.setattr(source, "MAX_LINE_BYTES", 1 << 16)
    row = b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n'
    data = row + row + b"x" * (1 << 17)
    f = tmp_path / "t.jsonl"
    f.write_bytes(data)
    from_file = invoke("replay", f, "-q", "--trace-format", "mooncake")
    from_stdin = invoke("replay", "-", "-q", "--trace-format", "mooncake", input=data)
    assert from_file.exit_code == from_stdin.exit_code == 2
    assert f"{f}:3: line longer than 0 MiB (the longest line pcs reads; is this a trace file?)" in from_file.output
    assert "-:3: line longer than 0 MiB (the longest line pcs reads; is this a trace file?)" in from_stdin.output
