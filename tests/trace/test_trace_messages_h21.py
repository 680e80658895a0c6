"""Messages of bad trace rows: format detection says what the readers say (file:line, the JSON reason, a NUL
byte named); JSON type names in "got X"; values in Parquet row errors; the rows the readers refuse."""
from __future__ import annotations

import pytest

from pcs.errors import InputError
from pcs.trace import open_trace
from tests.helpers import pcs_parquet

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
    p.write_text("\n\n" + line + "\n")                  # two blank lines before it: the readers' first error is
    assert _err(p) == _err(p, format="mooncake") == "t.jsonl:1: blank line (use on_error='skip' to skip blank lines)"
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


_parquet = pcs_parquet     # (tmp_path, arrival, prompt, output, ids)


@pytest.mark.parametrize("arrival,prompt,output,ids,message", [
    # row 1: 1024 tokens need ceil(1024 / 512) = 2 ids, it has 1
    ([0.0], [1024], [1], [[5]], "t.parquet:1: field 'block_hashes': has 1 id but ceil(1,024 / block size 512) = 2"),
    ([0.0], [512], [-1], [[5]], "t.parquet:1: field 'output_tokens': must be >= 0, got -1"),
    ([0.0], [-3], [1], [[]], "t.parquet:1: field 'prompt_tokens': must be >= 0, got -3"),
    # row 2 arrives at 0.5 s after row 1 at 1.5 s; the advice in the API's words as every reader's (sort=; the
    # command line's --sort: pcs.cli.common.option_names)
    ([1.5, 0.5], [512, 512], [1, 1], [[5], [6]], "t.parquet:2: field 'arrival_s': decreases (0.5 after 1.5); "
                                                 "use sort= to reorder"),
    # row 1's ids 9, 4, 9: 9 at positions 0 and 2
    ([0.0], [1536], [1], [[9, 4, 9]], "t.parquet:1: field 'block_hashes': id 9 repeated at positions 0 and 2"),
])
def test_parquet_row_errors_quote_the_values(tmp_path, arrival, prompt, output, ids, message):
    assert _err(_parquet(tmp_path, arrival, prompt, output, ids)) == message


def _bailian(tmp_path, last: dict, n: int = 2000):
    # n good rows (chat i, no parent, turn 1, 16 tokens = one 16-token block), then the row ``last``
    rows = [{"chat_id": i, "parent_chat_id": -1, "timestamp": i, "input_length": 16, "output_length": 1,
             "type": "text", "turn": 1, "hash_ids": [i]} for i in range(n)]
    rows.append(dict(rows[-1], chat_id=n, timestamp=n, hash_ids=[n], **last))
    p = tmp_path / "b.jsonl"
    p.write_text("".join(__import__("json").dumps(r) + "\n" for r in rows))
    return p


@pytest.mark.parametrize("n", [1, 2000])       # 2000 rows: a fast lane reads the chunk, leaves the row to the authority
@pytest.mark.parametrize("last,field,problem", [
    ({"turn": -1}, "turn", "must be >= 0, got -1"),
    ({"parent_chat_id": "SELF"}, "parent_chat_id", "is the row's own chat_id ({n}): a request cannot continue itself"),
])
def test_bailian_rows_no_conversation_can_have(tmp_path, n, last, field, problem):
    last = {k: (n if v == "SELF" else v) for k, v in last.items()}
    assert _err(_bailian(tmp_path, last, n)) == f"b.jsonl:{n + 1}: field '{field}': {problem.format(n=n)}"


def test_bailian_turn_zero_and_no_parent_are_accepted(tmp_path):
    assert len(list(open_trace(_bailian(tmp_path, {"turn": 0, "parent_chat_id": -1}, 3)))) == 4


def test_tokens_input_length_must_match_token_ids(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 2, "output_length": 1, "token_ids": [1, 2]}\n'
                 '{"timestamp": 1, "input_length": 5, "output_length": 1, "token_ids": [1, 2]}\n')
    assert _err(p) == ("t.jsonl:2: field 'input_length': is 5 but token_ids holds 2 tokens (the prompt is "
                       "token_ids): drop input_length or make them agree")
