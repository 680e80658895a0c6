"""Format detection parses a trace's first line as strictly as the readers: a key given twice is the readers' own
message (``FILE:LINE: invalid JSON: key 'K' appears twice in one object``), never a format (or "cannot detect")
picked from the value ``json.loads`` keeps, the last (hostile-input review of 2026-12-04, finding 5). Before, the
first line ``{"ts": 0, "events": [], "events": 5}`` read as events 5 (no list): "cannot detect the format", while
``--trace-format mooncake`` named the duplicate key. Same for the block-size sniffer of a re-blocked trace, the
synthetic-reuse sniffer and a KV-event array batch (its objects were read with the last key winning).
"""
from __future__ import annotations

import pytest

from helpers import assert_one_line_error, invoke
from pcs.errors import InputError
from pcs.trace.api import _first_row_reuse, detect_format

ROW = '"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]'


@pytest.mark.parametrize("text, line, key", [
    ('{"ts": 0, "events": [], "events": 5}\n', 1, "events"),          # last value: not a list (was "cannot detect")
    ('{"ts": 0, "events": 5, "events": []}\n', 1, "events"),          # last value: a list (was "KV-cache events")
    ('{' + ROW + ', "hash_ids": [3]}\n', 1, "hash_ids"),
    ('{"timestamp": 0, "token_ids": [1, 2], "token_ids": [3], "output_length": 1}\n', 1, "token_ids"),
])
def test_a_duplicate_key_on_the_first_line_is_the_readers_message_either_way(tmp_path, text, line, key):
    f = tmp_path / "t.jsonl"
    f.write_text(text)
    message = f"{f}:{line}: invalid JSON: key '{key}' appears twice in one object"
    with pytest.raises(InputError) as err:
        detect_format(str(f))
    assert str(err.value) == message
    for fmt in ((), ("--trace-format", "mooncake"), ("--trace-format", "tokens")):   # detected or named: one
        assert_one_line_error(invoke("trace", "stats", f, *fmt), message)           # message (after blank lines:
                                                                                    # tests/trace/test_sniffer_skip.py)


def test_a_duplicate_key_further_down_is_still_the_readers(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("{" + ROW + "}\n{" + ROW + ', "timestamp": 2}\n')
    assert detect_format(str(f)) == "mooncake"
    assert_one_line_error(invoke("trace", "stats", f), f"{f}:2: invalid JSON: key 'timestamp' appears twice")


def test_the_synthetic_reuse_sniffer_reads_no_duplicate(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("{" + ROW + ', "reuse": "synthetic"}\n')
    assert _first_row_reuse(str(f))
    f.write_text("{" + ROW + ', "reuse": "recorded", "reuse": "synthetic"}\n')
    assert not _first_row_reuse(str(f))           # no row of pcs trace synth (the readers refuse it)


def test_the_block_size_sniffer_fits_nothing_to_a_duplicate(tmp_path):
    from pcs.trace.reblock import _ids_fit

    # 1,024 tokens: 2 ids at 512-token blocks, 64 at 16; a line with both counts given says nothing
    f = tmp_path / "t.jsonl"
    f.write_text("{" + ROW + "}\n")
    assert _ids_fit(str(f), 512, 16)
    f.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [1], "hash_ids": [1, 2]}\n')
    assert not _ids_fit(str(f), 512, 16)


def test_a_kv_event_array_batch_refuses_a_duplicate_key(tmp_path):
    f = tmp_path / "events.jsonl"
    f.write_text('[0, [{"type": "BlockStored", "type": "BlockRemoved", "block_hashes": [1]}], 0]\n')
    assert_one_line_error(invoke("trace", "events", f),
                          f"{f}:1: invalid JSON: key 'type' appears twice in one object")
