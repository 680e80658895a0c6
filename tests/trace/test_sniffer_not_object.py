"""Format detection on a first line that is JSON but not an object: the readers' own message
(``FILE:1: expected a JSON object, got ...``, pcs.trace.hashids.json_type's words), whether the format is detected
or named; an array of request objects (a JSON file, not JSON Lines) says so. Under ``--on-error skip`` such a line
is one the reader skips, so a later request line names the format."""
from __future__ import annotations

import pytest

from pcs.errors import InputError
from pcs.trace import open_trace
from pcs.trace.api import detect_format

ROW = '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}'


@pytest.mark.parametrize("first, got", [("[" + ROW + "]", "an array"), ("5", "a number"), ('"x"', "a string"),
                                        ("null", "null"), ("[]", "an array"), ("true", "a boolean")])
def test_detected_and_named_give_the_readers_message(tmp_path, first, got):
    f = tmp_path / "t.jsonl"
    f.write_text(first + "\n" + ROW + "\n")
    with pytest.raises(InputError) as detected:
        detect_format(f)
    with pytest.raises(InputError) as named:
        list(open_trace(f, format="mooncake"))
    assert (detected.value.line, named.value.line) == (1, 1)
    assert named.value.problem == f"expected a JSON object, got {got}"
    assert detected.value.problem.startswith(named.value.problem)
    rows = first.startswith("[{")
    assert ("one request object per line, not an array of them" in detected.value.problem) == rows


def test_skip_detects_from_the_next_request_line(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("[" + ROW + "]\n" + ROW + "\n")
    assert detect_format(f, on_error="skip") == "mooncake"
