"""vLLM KV-cache events: residency replayed from the committed sample and both encodings, by hand."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.errors import InputError
from pcs.trace.kvevents import Residency, held_blocks, read_kv_events, residency_summary

SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "formats" / "vllm_kv_events_9.jsonl"


def test_sample_by_hand():
    # 100.0 store 11,12,13 | 100.5 store 21,22 (parent 12): GPU holds 5, the peak | 101.0 remove 13 (lived 1.0 s)
    # 102.0 store 12 on CPU | 103.0 remove 22, 21 (2.5 s each) | 103.5 store 13 again: a re-store
    # 104.0 clear: drops GPU 11, 12, 13 and CPU 12 (4 blocks) | 105.0 store 41, 42 | 106.0 remove 99: never held
    st = residency_summary(read_kv_events(SAMPLE))
    assert (st["events"], st["time_span_s"]) == (9, 6.0)
    assert (st["stored_events"], st["removed_events"], st["cleared_events"]) == (5, 3, 1)
    assert (st["blocks_stored"], st["blocks_removed"], st["blocks_cleared"]) == (3 + 2 + 1 + 1 + 2, 3, 4)
    assert (st["restores"], st["duplicate_stores"], st["unknown_removals"]) == (1, 0, 1)
    assert st["removed_lifetime_s_p50"] == 2.5  # median of 1.0, 2.5, 2.5
    media = {m["medium"]: m for m in st["media"]}
    assert (media["GPU"]["held_blocks"], media["GPU"]["peak_held_blocks"], media["GPU"]["peak_at_s"]) == (2, 5, 100.5)
    assert media["GPU"]["distinct_blocks_stored"] == 7 and media["CPU"]["peak_held_blocks"] == 1
    assert held_blocks(read_kv_events(SAMPLE), at_s=103.2).tolist() == [11, 12]
    assert held_blocks(read_kv_events(SAMPLE), at_s=103.2, medium="CPU").tolist() == [12]
    assert held_blocks(read_kv_events(SAMPLE)).tolist() == [41, 42]


def test_array_like_encoding_and_bytes_hashes(tmp_path):
    # earlier vLLM: msgspec array_like structs: [ts, [[tag, fields...]], rank]; a bytes hash is base64 in JSON
    # and becomes its big-endian integer's low 64 bits (vLLM maybe_convert_block_hash)
    h = bytes(range(1, 33))  # a 32-byte sha256-sized hash
    want = int.from_bytes(h, "big") & ((1 << 64) - 1)
    import base64
    b64 = base64.b64encode(h).decode()
    p = tmp_path / "e.jsonl"
    p.write_text(json.dumps([1.0, [["BlockStored", [b64, 7], None, list(range(32)), 16, None, "GPU"]], 1]) + "\n"
                 + json.dumps([2.0, [["BlockRemoved", [7], "GPU"]], 1]) + "\n"
                 + json.dumps([3.0, [["AllBlocksCleared"]]]) + "\n")
    evs = list(read_kv_events(p))
    assert [e.kind for e in evs] == ["stored", "removed", "cleared"]
    assert evs[0].block_hashes.tolist() == [want, 7] and evs[0].rank == 1 and evs[0].block_size == 16
    assert held_blocks(read_kv_events(p), at_s=2.0, rank=1).tolist() == [want]
    assert evs[2].rank == 0  # absent rank: 0


def test_msgpack_capture_reads_like_jsonl(tmp_path):
    msgpack = pytest.importorskip("msgpack")
    p = tmp_path / "e.msgpack"
    with open(p, "wb") as f:
        for line in SAMPLE.read_text().splitlines():
            f.write(msgpack.packb(json.loads(line)))
    assert residency_summary(read_kv_events(p)) == residency_summary(read_kv_events(SAMPLE))


def test_residency_check_holds_after_every_event():
    res = Residency()
    for ev in read_kv_events(SAMPLE):
        res.apply(ev)
        res._check()


def test_errors_name_line_and_field(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"ts": 1.0, "events": []}\n{"ts": 2.0, "events": [{"type": "BlockMoved"}]}\n')
    with pytest.raises(InputError) as e:
        list(read_kv_events(p))
    assert (e.value.line, e.value.field) == (2, "events") and "BlockMoved" in str(e.value)
    p.write_text('{"ts": "x", "events": []}\n')
    with pytest.raises(InputError, match="ts"):
        list(read_kv_events(p))


def test_cli_events(tmp_path):
    res = CliRunner().invoke(cli, ["trace", "events", str(SAMPLE), "--at", "103.2", "--list-held", "--format", "json"])
    assert res.exit_code == 0, res.output
    st = json.loads(res.output)
    assert {m["medium"]: m["held"] for m in st["media"]} == {"CPU": [12], "GPU": [11, 12]}
    res = CliRunner().invoke(cli, ["trace", "events", str(SAMPLE), "-q"])
    assert res.exit_code == 0 and "re-stores" in res.output
    res = CliRunner().invoke(cli, ["trace", "events", str(tmp_path / "none.jsonl")])
    assert res.exit_code == 2 and res.output.startswith("pcs: error:")
    assert np.array_equal(held_blocks([]), np.zeros(0, dtype=np.uint64))


@pytest.mark.parametrize("batch, needle", [
    # review 45d: a bytes value was passed to json.dumps (TypeError: an internal error, exit 1); now Python's repr
    ([b"\x00\x01", [], 0], "e.msgpack:1: field 'ts': must be a finite number of seconds, got b'\\x00\\x01'"),
    ([0.0, [[b"Block", [b"\x01"]]], 0],
     "e.msgpack:1: field 'events': an event must be an object or a tagged array, got [b'Block', [b'\\x01']]"),
    ([0.0, [], {"r": [b"\xff"]}], "e.msgpack:1: field 'data_parallel_rank': must be an integer, got "
                                  "{'r': [b'\\xff']}"),       # nested: a map holding bytes
])
def test_msgpack_values_json_cannot_write_are_shown(tmp_path, batch, needle):
    from tests.helpers import assert_one_line_error, invoke

    msgpack = pytest.importorskip("msgpack")
    p = tmp_path / "e.msgpack"
    p.write_bytes(msgpack.packb(batch))
    assert_one_line_error(invoke("trace", "events", p), needle)


def test_a_fifo_without_a_writer_is_refused_as_the_trace_readers_refuse_it(tmp_path):
    # review 45d: exit 0 with 0 events; the trace readers refuse it (pcs.trace.api.read_once, one rule)
    import os

    from tests.helpers import assert_one_line_error, invoke

    fifo = tmp_path / "ev"
    os.mkfifo(fifo)
    assert_one_line_error(invoke("trace", "events", fifo),
                          f"{fifo}: empty capture (no events): a named pipe (FIFO) with no data written into it when "
                          "pcs opened it; pcs reads a FIFO once and waits for no writer")
    with pytest.raises(InputError, match="empty capture"):
        list(read_kv_events(fifo))
