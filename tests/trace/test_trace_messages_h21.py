"""Messages of bad trace rows: format detection says what the readers say (file:line, the JSON reason, a NUL
byte named); JSON type names in "got X"; values in Parquet row errors; the rows the readers refuse."""
from __future__ import annotations

import pytest

from pcs.errors import InputError
from pcs.trace import open_trace

ROW = '{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [5]}'


def _err(path, **kw) -> str:
    with pytest.raises(InputError) as e:
        list(open_trace(path, **kw))
    return str(e.value).replace(str(path.parent) + "/", "")


@pytest.mark.parametrize("line,reason", [
    # ROW is 74 characters: its first 73, then NUL (character 74), then "}"
    (ROW[:-1] + "\x00}", "invalid JSON: a NUL byte (\\x00) at column 74"),
    (ROW + " x", "invalid JSON: Extra data at column 76"),                    # 74 characters, a space, then x
    (ROW + ROW, "invalid JSON: Extra data at column 75"),                     # the second object starts at 75
    ('{"timestamp": 0,', "invalid JSON: Expecting property name enclosed in double quotes at column 17"),
])
def test_detection_gives_the_readers_file_line_message(tmp_path, line, reason):
    p = tmp_path / "t.jsonl"
    p.write_text("\n\n" + line + "\n")                  # two blank lines: the row is line 3
    assert _err(p) == f"t.jsonl:3: {reason}"
    p.write_text(line + "\n")                           # the reader given the format (no blank lines there)
    assert _err(p) == _err(p, format="mooncake") == f"t.jsonl:1: {reason}"


def test_detection_of_text_that_is_not_json_keeps_its_hint(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("hello\n")
    assert "cannot detect the format: the first non-blank line is not JSON" in _err(p)


@pytest.mark.parametrize("field,value,got", [
    ("hash_ids", "null", "got null"), ("hash_ids", '{"a": 1}', "got an object"), ("hash_ids", '"x"', "got a string"),
    ("hash_ids", "true", "got a boolean"), ("hash_ids", "7", "got a number"),
])
def test_json_type_names_in_got(tmp_path, field, value, got):
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 512, "output_length": 1, "%s": %s}\n' % (field, value))
    assert _err(p) == f"t.jsonl:1: field '{field}': must be a list of integers, {got}"


def test_json_type_names_in_tokens_rows(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "output_length": 1, "token_ids": "abc"}\n')
    assert _err(p) == "t.jsonl:1: field 'token_ids': must be a list of integers, got a string"
