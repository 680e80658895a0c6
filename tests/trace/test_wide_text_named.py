"""UTF-32 and UTF-16 traces, with and without a byte order mark, and with a blank first line: the error names the
encoding and its byte order, with an iconv command that decodes the file (found 2026-12-05: a big-endian file
whose first line was blank gave "cannot detect the format", or with --trace-format "a NUL byte"; a little-endian
one "FILE:1: blank line" with --trace-format; "iconv -f UTF-32" of a little-endian file without a mark, which
iconv reads as big-endian, gives garbage).

Bytes by hand: "\\n" is 00 00 00 0A in UTF-32BE, so its line 1, split at 0A, is three NULs (not blank); in
UTF-32LE it is 0A 00 00 00, so line 1 is the lone 0A (blank) and line 2 starts 00 00 00 7B ("{" and the NULs
left of the newline): the first request line is line 2.
"""
from __future__ import annotations

import pytest

from pcs.errors import InputError
from pcs.trace import open_trace
from pcs.trace.api import detect_format

ROW = '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
TAIL = "; pcs reads text traces (JSON Lines, CSV) as UTF-8: re-encode it (iconv -f {} -t UTF-8)"


@pytest.mark.parametrize("codec, bom, blank, line, what, iconv", [
    ("utf-32-be", b"", False, 1, "UTF-32BE text (big-endian, no byte order mark)", "UTF-32BE"),
    ("utf-32-be", b"", True, 1, "UTF-32BE text (big-endian, no byte order mark)", "UTF-32BE"),
    ("utf-32-le", b"", False, 1, "UTF-32LE text (little-endian, no byte order mark)", "UTF-32LE"),
    ("utf-32-le", b"", True, 2, "UTF-32LE text (little-endian, no byte order mark)", "UTF-32LE"),
    ("utf-32-be", b"\x00\x00\xfe\xff", False, 1, "UTF-32 text with a big-endian byte order mark", "UTF-32"),
    ("utf-32-be", b"\x00\x00\xfe\xff", True, 1, "UTF-32 text with a big-endian byte order mark", "UTF-32"),
    ("utf-32-le", b"\xff\xfe\x00\x00", False, 1, "UTF-32 text with a little-endian byte order mark", "UTF-32"),
    ("utf-32-le", b"\xff\xfe\x00\x00", True, 1, "UTF-32 text with a little-endian byte order mark", "UTF-32"),
    ("utf-16-be", b"", True, 1, "UTF-16BE text (big-endian, no byte order mark)", "UTF-16BE"),
    ("utf-16-le", b"", True, 2, "UTF-16LE text (little-endian, no byte order mark)", "UTF-16LE"),
])
def test_detected_named_and_skipping_name_the_encoding(tmp_path, codec, bom, blank, line, what, iconv):
    f = tmp_path / "t.jsonl"
    f.write_bytes(bom + (("\n" if blank else "") + ROW + ROW).encode(codec))
    problem = "the file looks like " + what + TAIL.format(iconv)
    for read in (lambda: detect_format(f), lambda: detect_format(f, on_error="skip"),
                 lambda: list(open_trace(f, format="mooncake")), lambda: list(open_trace(f))):
        with pytest.raises(InputError) as err:
            read()
        assert (err.value.line, err.value.problem) == (line, problem)


def test_a_utf8_trace_with_a_blank_first_line_is_the_blank_line(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("\n" + ROW)
    with pytest.raises(InputError) as err:
        list(open_trace(f))
    assert (err.value.line, err.value.problem.split(" (")[0]) == (1, "blank line")
