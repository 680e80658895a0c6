"""Format detection on a first line that is JSON but not an object: the readers' own message
(``FILE:1: expected a JSON object, got ...``, pcs.trace.hashids.not_an_object), the same whether the format is
detected or named; an array of request objects (a file written by ``json.dump(rows)``) says pcs reads JSON Lines;
an array of chat logs or KV-event batches is named as such (as one of them alone is). Under ``--on-error skip``
such a line is one the reader skips, so a later request line names the format."""
from __future__ import annotations

import pytest

from pcs.errors import InputError
from pcs.trace import open_trace
from pcs.trace.api import detect_format

ROW = '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}'
FIX = "pcs reads one request object per line (jq -c '.[]' TRACE > TRACE.jsonl writes them so)"
HINT = "; a JSON array of requests, not JSON Lines: " + FIX
SPREAD = "; this line opens a JSON array spread over several lines, not JSON Lines: " + FIX


@pytest.mark.parametrize("first, problem", [
    ("[" + ROW + "]", "expected a JSON object, got an array" + HINT),
    ("[{}]", "expected a JSON object, got an array" + HINT),
    ("5", "expected a JSON object, got a number"), ('"x"', "expected a JSON object, got a string"),
    ("null", "expected a JSON object, got null"), ("[]", "expected a JSON object, got an array"),
    ("true", "expected a JSON object, got a boolean"),
    ("[[1], [2]]", "expected a JSON object, got an array"),        # no timestamp first: not a KV-event batch
])
def test_detected_and_named_give_the_readers_message(tmp_path, first, problem):
    f = tmp_path / "t.jsonl"
    f.write_text(first + "\n" + ROW + "\n")
    with pytest.raises(InputError) as detected:
        detect_format(f)
    with pytest.raises(InputError) as named:
        list(open_trace(f, format="mooncake"))
    assert (detected.value.line, detected.value.problem) == (named.value.line, named.value.problem) == (1, problem)


@pytest.mark.parametrize("first, kind", [
    ('[{"messages": [{"role": "user", "content": "hi"}]}]', "this is a chat log"),
    ('[{"ts": 100.0, "events": []}]', "these are vLLM KV-cache events"),
    ('[100.0, [], 0]', "these are vLLM KV-cache events"),
])
def test_an_array_of_another_kind_is_named(tmp_path, first, kind):
    f = tmp_path / "t.jsonl"
    f.write_text(first + "\n")
    with pytest.raises(InputError) as detected:
        detect_format(f)
    assert detected.value.problem.startswith(kind)


def test_skip_detects_from_the_next_request_line(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("[" + ROW + "]\n" + "[[1], [2]]\n" + ROW + "\n")
    assert detect_format(f, on_error="skip") == "mooncake"


@pytest.mark.parametrize("body, problem", [
    ('[\n  ' + ROW + ',\n  ' + ROW + '\n]\n', "invalid JSON: Expecting value at column 2" + SPREAD),  # indent=2
    ('[' + ROW + ',\n' + ROW + ']\n', "invalid JSON: Expecting value at column 76" + SPREAD),  # after "[" + ROW (73) + ","
    ("[1,]\n", "invalid JSON: Expecting value at column 4"),      # closed on its line: no array spread over lines
])
def test_a_line_starting_as_an_array_gets_the_readers_line(tmp_path, body, problem):
    """A first line that starts as JSON with "[" but does not parse: the readers' FILE:1 message (Python's json
    column: "[" alone ends before a value at column 2; "[1,]" has none after its comma at column 4), detected or
    named; it was "the first non-blank line is not JSON" with no line when detected."""
    f = tmp_path / "t.json"
    f.write_text(body)
    with pytest.raises(InputError) as detected:
        detect_format(f)
    with pytest.raises(InputError) as named:
        list(open_trace(f, format="mooncake"))
    assert (detected.value.line, detected.value.problem) == (named.value.line, named.value.problem) == (1, problem)
