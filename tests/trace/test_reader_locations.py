"""Reader errors name the file and the line or row where the problem is (the
hostile-input kinds): the arrival-clock bound in the CSV readers, a non-UTF-8 first line at format detection, a gzip
CRC failure (found only at the stream's end), the Azure order advice of a command without --sort.
"""
from __future__ import annotations

import gzip
import struct

import pytest

from pcs.errors import InputError
from pcs.trace import open_trace
from pcs.trace.azure import read_azure_csv
from tests.helpers import assert_one_line_error, file_input_error, invoke

AZ = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _rows(path, **kw):
    return list(open_trace(path, **kw).iter_batches())


@pytest.mark.parametrize("first, second, sort", [("0001-01-01 00:00:00", "9999-12-31 23:59:59", False),
                                                  ("9999-12-31 23:59:59", "0001-01-01 00:00:00", True)])
def test_azure_span_beyond_the_clock_bound_names_the_row(tmp_path, first, second, sort):
    # arrivals count from the first row's TIMESTAMP: 0001-01-01 and 9999-12-31 lie 3.155e11 s (~9999 years)
    # apart, beyond +-2^32 s (136 years). Before: "request 0: ... subtract the first timestamp" with no file
    # or row, advice a calendar TIMESTAMP cannot follow.
    text = AZ + f"{first},374,44\n{second},1,1\n"
    e = file_input_error(tmp_path, "a.csv", text, lambda p: _rows(p, format="azure", sort=sort))
    assert (e.line, e.field) == (3, "TIMESTAMP") and "2**32" in e.problem and "subtract" not in e.problem


def test_azure_span_just_inside_the_bound_is_read(tmp_path):
    # 2^32 s = 49,710 days 6:28:16: 1970-01-01 00:00:00 + 2^32 s = 2106-02-07 06:28:16, exactly the bound
    text = AZ + "1970-01-01 00:00:00,10,1\n2106-02-07 06:28:16,10,1\n"
    p = tmp_path / "a.csv"
    p.write_text(text)
    assert [float(b.arrival_s[-1]) for b in _rows(p, format="azure")][-1] == 2.0**32


def test_burstgpt_timestamp_beyond_the_clock_bound_names_the_row(tmp_path):
    text = ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
            "5,ChatGPT,472,18,490,Conversation log\n1e12,ChatGPT,10,1,11,Conversation log\n")
    e = file_input_error(tmp_path, "b.csv", text, lambda p: _rows(p, format="burstgpt"))
    assert (e.line, e.field) == (3, "Timestamp") and "2**32" in e.problem


def test_synth_azure_order_advice_names_no_missing_option(tmp_path):
    # pcs trace synth has no --sort: the advice says what to do instead
    text = AZ + "2023-11-16 18:15:47,374,44\n2023-11-16 18:15:46,10,1\n"
    e = file_input_error(tmp_path, "a.csv", text, lambda p: list(read_azure_csv(p)))
    assert (e.line, e.field) == (3, "TIMESTAMP") and "--sort" not in e.problem and "sort the rows" in e.problem


def test_detection_reports_a_non_utf8_first_line(tmp_path):
    # a Latin-1 e-acute (0xE9) after the 13 bytes {"type": "caf -- byte 14 of the line, counted from 1; before,
    # "the first non-blank line is not JSON"
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"type": "caf\xe9", "timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n')
    with pytest.raises(InputError, match=r"not UTF-8 \(byte 0xe9 at byte 14 of the line\)"):
        open_trace(p)
    assert_one_line_error(invoke("trace", "stats", p), str(p), "not UTF-8")


def test_gzip_crc_failure_names_no_line(tmp_path):
    # 3000 valid rows, then the trailer's CRC-32 (RFC 1952: the 8 last bytes are CRC32, ISIZE) flipped: the
    # mismatch is found at the end of the stream, so no line can be named (before: "line 1")
    rows = "".join(f'{{"timestamp": {i}, "input_length": 1, "output_length": 1, "hash_ids": [{i}]}}\n'
                   for i in range(3000)).encode()
    data = bytearray(gzip.compress(rows))
    crc = struct.unpack("<I", data[-8:-4])[0]
    data[-8:-4] = struct.pack("<I", crc ^ 1)
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(bytes(data))
    with pytest.raises(InputError) as err:
        _rows(p, format="mooncake")
    assert err.value.line is None and "CRC" in err.value.problem and "any line" in err.value.problem
