"""Hostile input, round 15 (hostile-15 findings F1-F11): each test is one kind, with its members.

F1: an output that already exists and is not a regular file is never replaced by one -- a symbolic link
is followed (its target replaced), a FIFO or character device is streamed into, a block device, a socket
or a looping link is refused (pcs/outfile.py). No test touches a system device: the FIFOs, links and
sockets are made under tmp_path, and the character/block-device branches are reached by classifying a
FIFO as one (monkeypatched ``stat.S_IS*``), never with /dev/null itself.
"""
import os
import socket
import stat
import threading

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke
from pcs.outfile import TEMPORARY, atomic_output, check_outputs

T = SMALL_TRACE
FORMATS = T.parent
TOKENIZER = FORMATS / "tiny_wordlevel_tokenizer.json"
CHAT = FORMATS / "openai_chat_4.jsonl"


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


class FifoReader:
    """Reads everything written into a FIFO on a thread (a writer opening it blocks until a reader does)."""

    def __init__(self, path):
        self.path, self.data = path, None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "rb") as f:
            self.data = f.read()

    def finish(self) -> bytes:
        """The bytes read; a pcs run that never opened the FIFO is released by an empty writer."""
        if self.thread.is_alive() and self.data is None:
            self.thread.join(0.2)
        if self.thread.is_alive():
            open(self.path, "wb").close()
        self.thread.join(10)
        return self.data


#: Every output option of every command that writes a file (sweep -o is a folder whose files go
#: through the same atomic_output), with the name's extension the format is chosen by, and what the
#: output starts with (the format's magic: Parquet "PAR1", PNG "\x89PNG", a JSONL object, HTML, CSV header).
OUTPUTS = [
    (["trace", "convert", T, "{}"], "o.parquet", b"PAR1"),
    (["trace", "convert", T, "{}"], "o.jsonl", b'{"'),
    (["trace", "synth", "{}", "--requests", "20"], "s.jsonl", b'{"'),
    (["trace", "synth", "s.jsonl", "--requests", "20", "--tokens-out", "{}"], "tok.jsonl", b'{"'),
    (["trace", "transform", T, "{}", "--speed", "2"], "x.jsonl", b'{"'),
    (["trace", "from-chat", CHAT, "{}", "--tokenizer", TOKENIZER], "c.jsonl", b'{"'),
    (["replay", T, "--requests-out", "{}"], "r.parquet", b"PAR1"),
    (["replay", T, "--requests-out", "{}"], "r.csv", b'"'),
    (["replay", T, "--html", "{}"], "p.html", b"<!"),
    (["curve", T, "--points", "2", "--plot", "{}"], "c.png", b"\x89PNG"),
    (["compare", T, "--html", "{}"], "cmp.html", b"<!"),
]
IDS = [f"{a[0]}-{a[1]}-{o}" for a, o, _ in OUTPUTS]


def _run(args, out):
    return invoke(*[out if a == "{}" else a for a in args], "-q")


@pytest.mark.parametrize("args, out, magic", OUTPUTS, ids=IDS)
def test_a_fifo_output_is_streamed_into_never_replaced(work, args, out, magic):
    os.mkfifo(out)
    reader = FifoReader(work / out)
    r = _run(args, out)
    data = reader.finish()
    assert r.exit_code == 0, r.output
    assert stat.S_ISFIFO(os.lstat(out).st_mode)          # was: replaced by a regular file
    assert data.startswith(magic), data[:20]
    assert not TEMPORARY


@pytest.mark.parametrize("args, out, magic", OUTPUTS, ids=IDS)
def test_a_symlinked_output_writes_its_target_and_keeps_the_link(work, args, out, magic):
    (work / "real").mkdir()
    (work / "real" / out).write_bytes(b"old")
    os.symlink(f"real/{out}", out)
    r = _run(args, out)
    assert r.exit_code == 0, r.output
    assert os.readlink(out) == f"real/{out}"             # was: the link replaced, its target untouched
    assert (work / "real" / out).read_bytes().startswith(magic)
    assert sorted(p.name for p in (work / "real").iterdir()) == [out]   # no temp file beside the target


def test_a_dangling_symlink_creates_its_target_and_a_missing_target_folder_is_named(work):
    os.symlink("new.jsonl", "d.jsonl")
    assert invoke("trace", "convert", T, "d.jsonl", "-q").exit_code == 0
    assert os.path.islink("d.jsonl") and (work / "new.jsonl").read_bytes().startswith(b'{"')
    os.symlink("nodir/x.jsonl", "e.jsonl")
    assert_one_line_error(invoke("trace", "convert", T, "e.jsonl", "-q"), "e.jsonl", f"{work}/nodir", "does not exist")


def _as_kind(monkeypatch, kind):
    """Make pcs.outfile see every FIFO as ``kind`` (S_ISCHR or S_ISBLK), never touching a real device."""
    import pcs.outfile as outfile

    is_fifo = stat.S_ISFIFO
    monkeypatch.setattr(outfile.stat, "S_ISFIFO", lambda mode: False)
    monkeypatch.setattr(outfile.stat, kind, is_fifo)


def test_a_character_device_is_streamed_into_and_may_be_named_twice(work, monkeypatch):
    os.mkfifo("null")
    _as_kind(monkeypatch, "S_ISCHR")
    check_outputs({"--html": "null", "--requests-out": "null"})    # /dev/null for two outputs: allowed
    with pytest.raises(ValueError, match="name one file"):
        check_outputs({"OUT": "a.jsonl", "--tokens-out": "./a.jsonl"})
    reader = FifoReader(work / "null")
    with atomic_output("null") as tmp:
        assert os.path.dirname(tmp) != str(work)               # finished under TMPDIR, not beside the device
        open(tmp, "w").write("whole")
    assert reader.finish() == b"whole" and stat.S_IFMT(os.lstat("null").st_mode) == stat.S_IFIFO and not TEMPORARY


def test_a_failed_write_into_a_fifo_sends_nothing(work):
    os.mkfifo("f")
    with pytest.raises(RuntimeError):
        with atomic_output("f") as tmp:
            open(tmp, "w").write("half")
            raise RuntimeError("disk on fire")
    assert not TEMPORARY and not os.path.exists(tmp) and stat.S_ISFIFO(os.lstat("f").st_mode)


def test_a_block_device_a_socket_and_a_looping_link_are_refused(work, monkeypatch):
    os.symlink("loop2", "loop1")
    os.symlink("loop1", "loop2")
    assert_one_line_error(invoke("trace", "convert", T, "loop1", "-q"), "OUT loop1", "loops")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind("s.jsonl")
    try:
        assert_one_line_error(invoke("trace", "synth", "s.jsonl", "--requests", "5", "-q"), "OUT s.jsonl is a socket")
    finally:
        sock.close()
    assert stat.S_ISSOCK(os.lstat("s.jsonl").st_mode)
    os.mkfifo("disk.csv")
    _as_kind(monkeypatch, "S_ISBLK")
    assert_one_line_error(invoke("replay", T, "--requests-out", "disk.csv", "-q"),
                          "--requests-out disk.csv is a block device")
    with pytest.raises(ValueError, match="is a block device"):
        with atomic_output("disk.csv"):
            pass
    assert stat.S_IFMT(os.lstat("disk.csv").st_mode) == stat.S_IFIFO
