"""Format detection under ``--on-error skip`` passes over the lines the readers skip, and after blank lines it says
what the readers say first (review of 2026-12-04, fix34b findings 1 and 2).

Before: a first line with a key given twice (or cut short, or not UTF-8) made detection refuse the file under
``--on-error skip`` although the reader skips such a line (``--trace-format mooncake --on-error skip`` read the
rest); and blank lines before a duplicate-key line made detection name that line (``:4: ... appears twice``) while
the reader names the first blank one (``:1: blank line``). Each file here is written by hand: two Mooncake rows of
1,100 tokens (3 ids at 512-token blocks), the first of them bad.
"""
from __future__ import annotations

import pytest

from pcs.errors import InputError
from pcs.trace import api
from pcs.trace.api import _first_row_reuse, detect_format
from tests.helpers import assert_one_line_error, invoke, invoke_json

GOOD = '{"timestamp": 5, "input_length": 1100, "output_length": 10, "hash_ids": [1, 2, 3]}\n'
BAD_FIRST = {
    "duplicate key": '{"timestamp": 0, "timestamp": 1, "input_length": 1100, "output_length": 10, "hash_ids": [1, 2, 3]}\n',
    "cut short": '{"timestamp": 0, "input_length": 1100, "output_length": 10, "hash_ids": [1, 2, 3]\n',
    "not UTF-8": '{"timestamp": 0, "input_length": 1100, "output_length": 10, "hash_ids": [1, 2, 3], "x": "\xe9"}\n',
    "not JSON": 'timestamp,input_length\n',
    "no known key": '{"timestamp": 0, "input_length": 1100}\n',
}


def _file(tmp_path, text: str, name: str = "t.jsonl") -> str:
    f = tmp_path / name
    f.write_bytes(text.encode("latin-1"))       # "\xe9" as the one byte 0xE9: not UTF-8
    return str(f)


@pytest.mark.parametrize("kind", list(BAD_FIRST))
def test_under_skip_a_bad_first_line_is_passed_over_as_the_reader_skips_it(tmp_path, kind):
    f = _file(tmp_path, BAD_FIRST[kind] + GOOD)
    assert detect_format(f, on_error="skip") == "mooncake"
    named = invoke_json("trace", "stats", f, "--on-error", "skip", "--trace-format", "mooncake")
    detected = invoke_json("trace", "stats", f, "--on-error", "skip")
    assert detected["requests"] == named["requests"] == 1        # the second row; the first one skipped
    assert detected == named


def test_without_skip_the_message_stays_the_readers(tmp_path):
    f = _file(tmp_path, BAD_FIRST["duplicate key"] + GOOD)
    message = f"{f}:1: invalid JSON: key 'timestamp' appears twice in one object"
    with pytest.raises(InputError) as err:
        detect_format(f)
    assert str(err.value) == message
    for fmt in ((), ("--trace-format", "mooncake")):
        assert_one_line_error(invoke("trace", "stats", f, *fmt), message)


@pytest.mark.parametrize("text, blank_lines", [
    ("\n\n\n" + BAD_FIRST["duplicate key"] + GOOD, 3),
    ("\r\n  \n" + BAD_FIRST["cut short"] + GOOD, 2),
    ("\n" + BAD_FIRST["not UTF-8"] + GOOD, 1),          # JSON but not UTF-8: the readers refuse the blank first
])
def test_after_blank_lines_detection_says_what_the_reader_says_first(tmp_path, text, blank_lines):
    f = _file(tmp_path, text)
    message = f"{f}:1: blank line (use --on-error skip to skip blank lines)"     # not line blank_lines + 1's error
    for fmt in ((), ("--trace-format", "mooncake")):
        assert_one_line_error(invoke("trace", "stats", f, *fmt), message)
    assert invoke_json("trace", "stats", f, "--on-error", "skip")["requests"] == 1


def test_under_skip_no_format_in_the_lines_read_names_the_first_line(tmp_path, monkeypatch):
    f = _file(tmp_path, BAD_FIRST["duplicate key"] * 2 + BAD_FIRST["cut short"])
    with pytest.raises(InputError) as err:
        detect_format(f, on_error="skip")
    assert str(err.value).startswith(f"{f}:1: invalid JSON: key 'timestamp' appears twice in one object; with "
                                     "on_error='skip' no line names a format either (3 non-blank lines read; "
                                     "detection reads at most 1,000); pass format= (mooncake,")


def test_the_look_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(api, "SKIP_SNIFF_LINES", 3)
    f = _file(tmp_path, BAD_FIRST["cut short"] * 2 + GOOD)          # the good line is the 3rd: read
    assert detect_format(f, on_error="skip") == "mooncake"
    f = _file(tmp_path, BAD_FIRST["cut short"] * 3 + GOOD)          # the 4th: not read
    with pytest.raises(InputError, match=r"\(3 non-blank lines read; detection reads at most 3\)"):
        detect_format(f, on_error="skip")


def test_under_skip_what_the_file_is_still_speaks(tmp_path):
    f = _file(tmp_path, BAD_FIRST["cut short"] + '{"ts": 0, "events": []}\n')
    with pytest.raises(InputError, match="these are vLLM KV-cache events"):
        detect_format(f, on_error="skip")
    f = _file(tmp_path, "\ufeff".encode("utf-16-le").decode("latin-1") + "{\x00")   # UTF-16 text: the file's kind
    with pytest.raises(InputError, match="looks like UTF-16"):
        detect_format(f, on_error="skip")


def test_under_skip_the_synthetic_reuse_sniffer_reads_the_first_accepted_row(tmp_path):
    synth = GOOD.replace("}", ', "reuse": "synthetic"}')
    f = _file(tmp_path, BAD_FIRST["duplicate key"] + synth)
    assert _first_row_reuse(f, on_error="skip")
    assert not _first_row_reuse(f)               # without skip the reader refuses line 1 anyway


def test_a_re_blocked_replay_under_skip_passes_over_the_bad_first_line(tmp_path):
    from pcs.trace.reblock import _ids_fit

    # 1,100 tokens: 3 ids at 512-token blocks, 69 at 16; the bad line tells nothing, the next one fits 512
    f = _file(tmp_path, BAD_FIRST["duplicate key"] + GOOD)
    assert _ids_fit(f, 512, 16)
    d = invoke_json("replay", f, "--on-error", "skip", "--block-size", "16")
    assert [r["bound"] for r in d["rows"]] == ["lower", "upper"] and d["trace_block_size"] == 512
    assert_one_line_error(invoke("replay", f, "--block-size", "16"),
                          f"{f}:1: invalid JSON: key 'timestamp' appears twice in one object")
