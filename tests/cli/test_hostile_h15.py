"""Hostile input, round 15: each test is one kind of finding, with its members.

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

from helpers import assert_one_line_error, invoke
from pcs.outfile import TEMPORARY, atomic_output, check_outputs
from test_hostile_files import CHAT, T, TOKENIZER, work  # noqa: F401 - work: the fixture (cwd = tmp_path)


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
            try:    # non-blocking: a reader that ended since is_alive (no reader left: ENXIO) must not hang the test
                os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
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


# -- F2, F9: Parquet columns named twice; a null id inside a list names its row --------------------------

def _parquet(path, columns: dict, names=None):
    """A Parquet trace with pcs's metadata (16-token blocks) and the given columns (``names`` may repeat one)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pcs.trace.parquet import arrow_schema

    names = names or list(columns)
    table = pa.table([columns[n] for n in names], names=names)
    pq.write_table(table.replace_schema_metadata(arrow_schema(block_size=16).metadata), path)


def _columns(lists):
    import pyarrow as pa

    n = len(lists)
    return {"arrival_s": pa.array([float(i) for i in range(n)]), "prompt_tokens": pa.array([16 * len(x or [0]) for x in lists]),
            "output_tokens": pa.array([1] * n), "block_hashes": pa.array(lists, pa.list_(pa.uint64()))}


@pytest.mark.parametrize("twice", ["arrival_s", "block_hashes"])
def test_a_parquet_column_named_twice_is_one_line(work, twice):
    cols = _columns([[1], [1, 2]])
    names = ["arrival_s", "prompt_tokens", "output_tokens", "block_hashes", twice]
    _parquet("d.parquet", cols, names)
    for cmd in (["trace", "stats"], ["replay"]):   # was: KeyError, an internal error, in every command
        assert_one_line_error(invoke(*cmd, "d.parquet", "-q"), f"d.parquet: field '{twice}': column appears 2 times")


def test_a_null_id_inside_a_list_names_its_row(work):
    # rows 1..4 (1-based): the null id is the 2nd element of row 3's list (was reported at row 1)
    _parquet("n.parquet", _columns([[1], [1, 2], [3, None], [4]]))
    assert_one_line_error(invoke("trace", "stats", "n.parquet", "-q"), "n.parquet:3: field 'block_hashes': null value")
    _parquet("m.parquet", _columns([[1], [1, 2], [3, 5], None, [6, None]]))     # a null list at row 4 comes first
    assert_one_line_error(invoke("trace", "stats", "m.parquet", "-q"), "m.parquet:4: field 'block_hashes': null value")


# -- F3, F4: a lone-surrogate escape where pcs needs text ------------------------------------------------

def _jsonl_paths():
    from pcs import _native

    return [False, "pyarrow", "simdjson"] + (["native"] if _native.built("jsonrows") else [])


BAILIAN_ROW = ('{{"chat_id": {c}, "parent_chat_id": -1, "timestamp": {c}, "input_length": 32, "output_length": 5, '
               '"type": "{t}", "turn": 1, "hash_ids": [{a}, {b}]}}\n')


@pytest.mark.parametrize("fast", _jsonl_paths())
def test_a_lone_surrogate_bailian_type_is_refused_by_every_parser(tmp_path, fast):
    from pcs.errors import InputError
    from pcs.trace.hashids import BAILIAN, ReadState, read_hashid_jsonl

    p = tmp_path / "b.jsonl"
    rows = [BAILIAN_ROW.format(c=c, t="text", a=2 * c, b=2 * c + 1) for c in range(1, 6)]
    p.write_text("".join(rows) + BAILIAN_ROW.format(c=6, t="\\ud800", a=100, b=101))   # line 6, a JSON escape
    with pytest.raises(InputError) as err:
        list(read_hashid_jsonl(p, "b.jsonl", BAILIAN, 16, ReadState(), fast=fast))
    assert (err.value.line, err.value.field) == (6, "type")
    assert "lone surrogate \\ud800" in str(err.value)
    p.write_text("".join(rows) + BAILIAN_ROW.format(c=6, t="\\ud83d\\ude00", a=100, b=101))   # a pair: an emoji
    assert sum(len(b) for b in read_hashid_jsonl(p, "b.jsonl", BAILIAN, 16, ReadState(), fast=fast)) == 6


def test_a_lone_surrogate_bailian_type_never_reaches_the_parquet_writer(work):
    rows = [BAILIAN_ROW.format(c=c, t="text", a=2 * c, b=2 * c + 1) for c in range(1, 6)]
    (work / "b.jsonl").write_text("".join(rows) + BAILIAN_ROW.format(c=6, t="\\ud800", a=100, b=101))
    assert_one_line_error(invoke("trace", "convert", "b.jsonl", "o.parquet", "--block-size", "16", "-q"),
                          "b.jsonl:6: field 'type': a lone surrogate \\ud800")   # was: UnicodeEncodeError
    assert not (work / "o.parquet").exists()


@pytest.mark.parametrize("line, field, what", [
    ('{"messages": [{"role": "user", "content": "a \\ud800 b"}]}', "messages", "element 0's content"),
    ('{"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": [{"type": "text", '
     '"text": "\\udfff"}]}]}', "messages", "element 1's content"),
    ('{"messages": [{"role": "\\udc00", "content": "hi"}]}', "messages", "element 0's role"),
    ('{"messages": [{"role": "user", "content": "hi"}], "user": "t\\ud800"}', "user", "the tenant id"),
])
def test_a_lone_surrogate_in_a_chat_log_is_one_line(work, line, field, what):
    (work / "c.jsonl").write_text('{"messages": [{"role": "user", "content": "fine"}]}\n' + line + "\n")
    bad = line[line.index("\\u"):][:6]
    assert_one_line_error(invoke("trace", "from-chat", "c.jsonl", "o.jsonl", "--tokenizer", TOKENIZER, "-q"),
                          f"c.jsonl:2: field '{field}': {what} is not valid Unicode (lone surrogate {bad})")
    assert not (work / "o.jsonl").exists()


@pytest.mark.parametrize("extra, field", [('"cache_salt": "s\\ud800"', "cache_salt"), ('"lora_id": "\\udbff"', "lora_id"),
                                          ('"mm_hashes": ["img\\udc01"]', "mm_hashes")])
def test_a_lone_surrogate_in_a_token_trace_is_one_line(work, extra, field):
    (work / "t.jsonl").write_text('{"timestamp": 0, "output_length": 1, "token_ids": [1, 2, 3, 4]}\n'
                                  '{"timestamp": 1, "output_length": 1, "token_ids": [1, 2, 3, 4], ' + extra + "}\n")
    assert_one_line_error(invoke("trace", "stats", "t.jsonl", "--block-size", "2", "-q"),
                          f"t.jsonl:2: field '{field}': a lone surrogate")   # was: UnicodeEncodeError in hashing


# -- F5: stdin closed ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", [["trace", "stats", "-"], ["replay", "-", "-q"], ["trace", "convert", "-", "o.jsonl"]],
                         ids=" ".join)
def test_a_closed_stdin_is_one_line(tmp_path, cmd):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "pcs", *cmd], cwd=tmp_path, capture_output=True, text=True,
                       preexec_fn=lambda: os.close(0), timeout=120)   # as `pcs ... <&-`: sys.stdin is None
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "pcs: error: -: stdin is closed: pipe or redirect a file into pcs (pcs replay - < trace.jsonl)"
    assert not (tmp_path / "o.jsonl").exists()


# -- F6, F7: never write a trace pcs refuses to read ----------------------------------------------------

def test_from_chat_applies_the_readers_arrival_bound(work):
    # 2**32 s = 4,294,967,296 s is the last arrival a reader takes (pcs.trace.batches.MAX_ARRIVAL_S):
    # created 4.2e9 s reads back; created 4.3e9 s and 1e300 s are refused naming the line and the field.
    (work / "ok.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}], "created": 4.2e9}\n')
    assert invoke("trace", "from-chat", "ok.jsonl", "o.jsonl", "--tokenizer", TOKENIZER, "-q").exit_code == 0
    assert invoke("trace", "stats", "o.jsonl", "-q").exit_code == 0
    for value, shown in (("4.3e9", "4.3e+09"), ("1e300", "1e+300")):
        (work / "c.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n'
                                      '{"messages": [{"role": "user", "content": "hi"}], "created": ' + value + "}\n")
        assert_one_line_error(invoke("trace", "from-chat", "c.jsonl", "x.jsonl", "--tokenizer", TOKENIZER, "-q"),
                              f"c.jsonl:2: field 'created': arrival {shown} s is beyond +-2**32 s")
    (work / "c.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}], "timestamp": 4.3e12}\n')
    assert_one_line_error(invoke("trace", "from-chat", "c.jsonl", "x.jsonl", "--tokenizer", TOKENIZER, "-q"),
                          "c.jsonl:1: field 'timestamp': arrival 4.3e+09 s")   # ms: 4.3e12 ms = 4.3e9 s
    assert not (work / "x.jsonl").exists()


@pytest.mark.parametrize("out", ["t.jsonl", "t.parquet"])
def test_transform_never_writes_an_empty_trace(work, out):
    # mooncake_conv_8.jsonl by hand: block 0 is every request's shared first block; past it, rows 1+6 share
    # 14..26, 2+7 share 820, 3+8 are 975..977, 4+5 share 1541..1544: 4 conversations. A fraction of 1e-300
    # keeps none of them for any seed (numpy's random() is a multiple of 2**-53: only 0.0 would be kept)
    r = invoke("trace", "transform", T, out, "--sample-conversations", "1e-300", "-q")
    assert_one_line_error(r, "--sample-conversations 1e-300 keeps none of the 4 conversations (seed 0)")
    assert not (work / out).exists() and not TEMPORARY


def test_from_chat_and_write_trace_refuse_an_empty_output(work):
    (work / "e.jsonl").write_text("")    # was: "wrote 0 requests", a 0-byte file the token reader refuses
    assert_one_line_error(invoke("trace", "from-chat", "e.jsonl", "o.jsonl", "--tokenizer", TOKENIZER, "-q"),
                          "e.jsonl: empty chat log (no requests)")
    from pcs.trace.convert import write_trace

    for name, fmt in (("w.jsonl", "mooncake"), ("w.parquet", "parquet")):
        with pytest.raises(ValueError, match="no requests to write"):
            write_trace([], work / name, fmt, block_size=16)
    assert sorted(p.name for p in work.iterdir()) == ["e.jsonl"]


# -- F8: KV event batches going back in time ----------------------------------------------------------

def _events(*batches):
    import json

    def event(kind):
        if kind == "BlockRemoved":
            return {"type": kind, "block_hashes": [1], "medium": "GPU"}
        return {"type": kind, "block_hashes": [1], "parent_block_hash": None, "token_ids": list(range(16)),
                "block_size": 16, "lora_id": None, "medium": "GPU", "lora_name": None}

    return "".join(json.dumps({"ts": ts, "events": [event(kind)], "data_parallel_rank": 0}) + "\n"
                   for ts, kind in batches)


def test_kv_event_batches_must_not_go_back_in_time(work):
    (work / "d.jsonl").write_text(_events((5, "BlockStored"), (5, "BlockRemoved"), (1, "BlockStored")))
    assert_one_line_error(invoke("trace", "events", "d.jsonl"),   # was: time span -4.00 s, lifetimes -4.00 s
                          "d.jsonl:3: field 'ts': decreases (1 s after 5 s)")
    (work / "h.jsonl").write_text(_events((1e300, "BlockStored")))
    assert_one_line_error(invoke("trace", "events", "h.jsonl"), "h.jsonl:1: field 'ts': arrival 1e+300 s is beyond")
    (work / "ok.jsonl").write_text(_events((5, "BlockStored"), (5, "BlockRemoved")))   # equal ts: one step
    r = invoke("trace", "events", "ok.jsonl", "--format", "json")
    assert r.exit_code == 0, r.output
    import json

    d = json.loads(r.stdout)
    assert d["time_span_s"] == 0 and d["removed_lifetime_s_p50"] == 0


# -- F10: pcs report says why a replay's trace cannot be read ---------------------------------------

def test_report_names_why_the_trace_cannot_be_read(work):
    import json

    r = invoke("replay", T, "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    run = json.loads(r.stdout)
    os.mkfifo("fifo.jsonl")
    (work / "d").mkdir()
    for trace, why in (("fifo.jsonl", "trace fifo.jsonl is a FIFO, not a file"), ("d", "trace d is a directory, not a file"),
                       ("gone.jsonl", "trace gone.jsonl not found"), ("-", "trace - was stdin, read once by the run")):
        # trace_file null: what a run of a FIFO or stdin records (not a regular file), or a JSON from before the key
        (work / "run.json").write_text(json.dumps(dict(run, trace=trace, trace_file=None)))
        r = invoke("report", "run.json", "-o", "p.html")
        assert r.exit_code == 0, r.output
        assert f"pcs: note: {why}: no hit-rate curve" in r.stderr


# -- F11 polish: a message that says why --------------------------------------------------------------

def test_gzip_parquet_and_utf16_say_why_they_are_not_read(work):
    import gzip

    assert invoke("trace", "convert", T, "t.parquet", "-q").exit_code == 0
    for name in ("t.parquet.gz", "renamed.parquet"):   # was: "the first non-blank line is not JSON"
        (work / name).write_bytes(gzip.compress((work / "t.parquet").read_bytes()))
        assert_one_line_error(invoke("trace", "stats", name, "-q"), f"{name}:1: a gzip-compressed Parquet file")
    text = T.read_text(encoding="utf-8")
    for codec in ("utf-16", "utf-16-le", "utf-16-be"):   # with a BOM, then without one (either byte order)
        (work / "u.jsonl").write_bytes(text.encode(codec))
        assert_one_line_error(invoke("trace", "stats", "u.jsonl", "-q"), "u.jsonl:1: the file looks like UTF-16")
    (work / "z.jsonl").write_bytes(b"\0" * 100)         # NULs alone are not taken for UTF-16
    assert_one_line_error(invoke("trace", "stats", "z.jsonl", "-q"), "cannot detect the format")


def test_size_bound_is_shown_in_a_unit_pcs_accepts_and_budget_sums_are_bounded():
    from pcs.units import parse_bytes

    # 2^63 - 1 B = 9,223,372,036,854,775,807 B = 9,223.37 PB (1 PB = 10**15 B); EB is not a unit pcs reads
    with pytest.raises(ValueError, match=r"about 9,223 PB\)"):
        parse_bytes("10000PB")
    assert parse_bytes("9223PB") == 9223 * 10**15
    # 5000 PB + 5000 PB = 1e19 B > 2^63 - 1 (9.22e18): was "capacity_need_bytes must be in [0, 2^63 - 1]"
    r = invoke("budget", "--workload", "A:5000PB:1GB/s", "--workload", "B:5000PB:1GB/s", "--capacity-have", "80GB",
               "--bandwidth-have", "1TB/s")
    assert_one_line_error(r, "the workloads A, B together need 1e+19 bytes of capacity, more than 2^63 - 1 bytes")
    # 9000 PB/s twice = 1.8e19 B/s: was accepted (no bound on the bandwidth sum)
    r = invoke("budget", "--workload", "A:1GB:9000PB/s", "--workload", "B:1GB:9000PB/s", "--capacity-have", "80GB",
               "--bandwidth-have", "1TB/s")
    assert_one_line_error(r, "together need 1.8e+19 bytes/s of bandwidth, more than 2^63 - 1 bytes/s")


def test_budget_transfer_products_are_bounded():
    # 1e308 restores/s x 1 MB = 1e314 B/s (inf in float64): was a 309-digit table cell and "inf"/null
    assert_one_line_error(invoke("budget", "--restores-per-s", "1e308", "--restore-size", "1MB"),
                          "rate 1e+308 x size 1,000,000 bytes", "more than 2^63 - 1 bytes/s")
    # 1e15 IOPS x 4,096 B = 4.096e18 B/s <= 2^63 - 1 (9.22e18): computed; 1e16 IOPS: 4.096e19, refused
    assert invoke("budget", "--iops", "1e15", "--io-size", "4KiB").exit_code == 0
    assert_one_line_error(invoke("budget", "--iops", "1e16", "--io-size", "4KiB"), "= 4.096e+19 bytes/s")
