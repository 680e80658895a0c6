"""Trace-format messages that name their line, the first skipped line's reason, and the file's kind under a named
format (docs/traces-formats.md).

- Every format-detection error names ``FILE:LINE`` (an object with none of the format keys, a line that is not
  UTF-8 or not JSON, KV-cache events, a chat log, UTF-16 text), as the readers' errors do; before, these named
  the file alone.
- ``--on-error skip`` with no line left: the first skipped line's ``FILE:LINE: reason``, then the count; before,
  ``FILE: no requests left: all 1 were skipped as bad``.
- A named format whose reader refuses the first non-blank line, when detection reads that line as another
  format or as no request trace (KV-cache events, a chat log): the message says so and names the value to pass;
  before, only the reader's ``field 'timestamp': missing``.

Every expected text below is written out from the rules above, not copied from a run."""
from __future__ import annotations

import pytest

from pcs.errors import InputError
from pcs.trace import open_trace
from pcs.trace.api import detect_format
from tests.helpers import assert_one_line_error, invoke

ROW = '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
FORMATS = "mooncake, bailian, tokens, parquet, azure, burstgpt"
EVENTS = '{"ts": 1.0, "events": [{"type": "BlockStored", "block_hashes": [1]}]}\n'
CHAT = '{"messages": [{"role": "user", "content": "hi"}]}\n'


def _file(tmp_path, data: bytes):
    f = tmp_path / "t.jsonl"
    f.write_bytes(data)
    return f


def _events_kind(f) -> str:
    return (f"these are vLLM KV-cache events, not a request trace: pcs trace events {f} summarises which blocks "
            "the engine held (docs/traces-formats.md)")


@pytest.mark.parametrize("data, line, problem", [
    (b"{}\n", 1, "cannot detect the format: the first object has none of 'hash_ids', 'chat_id', 'token_ids'; "
                 f"pass format= ({FORMATS})"),
    (b"\n\n{}\n", 3, "cannot detect the format: the first object has none of 'hash_ids', 'chat_id', 'token_ids'; "
                     f"pass format= ({FORMATS})"),
    (b"caf\xe9\n", 1, f"cannot detect the format: the first non-blank line is not JSON; pass format= ({FORMATS})"),
    # { " x " : space " c a f = bytes 1-10 of the line, counted from 1 as an editor counts columns: 0xe9 is byte 11
    (b'{"x": "caf\xe9"}\n', 1, "the first non-blank line is not UTF-8 (byte 0xe9 at byte 11 of the line); JSON traces "
                              "are UTF-8 (RFC 8259 section 8.1): re-encode the file"),
    # Review 45 (mend45b): the same JSON after two spaces (it said "not JSON"): byte 13 = 11 + the 2 spaces
    (b'  {"x": "caf\xe9"}\n', 1, "the first non-blank line is not UTF-8 (byte 0xe9 at byte 13 of the line); JSON "
                                "traces are UTF-8 (RFC 8259 section 8.1): re-encode the file"),
    (b"\xff\xfe{\x00\n", 1, "the file looks like UTF-16 text with a little-endian byte order mark; pcs reads text "
                            "traces (JSON Lines, CSV) as UTF-8: re-encode it (iconv -f UTF-16 -t UTF-8)"),
])
def test_every_detection_error_names_its_line(tmp_path, data, line, problem):
    f = _file(tmp_path, data)
    with pytest.raises(InputError) as err:
        detect_format(f)
    assert (err.value.path, err.value.line, err.value.field, err.value.problem) == (str(f), line, None, problem)
    assert str(err.value) == f"{f}:{line}: {problem}"


@pytest.mark.parametrize("data", [EVENTS, "\n" + EVENTS])
def test_kv_events_detected_name_their_line(tmp_path, data):
    f = _file(tmp_path, data.encode())
    with pytest.raises(InputError) as err:
        detect_format(f)
    assert str(err.value) == f"{f}:{data.count(chr(10))}: {_events_kind(f)}"


def test_skip_detection_names_the_first_bad_line(tmp_path):
    f = _file(tmp_path, b"\n{}\n{}\n")      # lines 2 and 3 name no format: the first is line 2
    with pytest.raises(InputError) as err:
        detect_format(f, on_error="skip")
    assert str(err.value) == (f"{f}:2: cannot detect the format: the first object has none of 'hash_ids', "
                              f"'chat_id', 'token_ids'; pass format= ({FORMATS}); with on_error='skip' no line "
                              "names a format either (2 non-blank lines read; detection reads at most 1,000)")


def test_skip_detection_one_line_is_singular(tmp_path):
    f = _file(tmp_path, b"{}\n")
    with pytest.raises(InputError) as err:
        detect_format(f, on_error="skip")
    assert str(err.value).endswith("(1 non-blank line read; detection reads at most 1,000)")


@pytest.mark.parametrize("fmt, data, first", [
    ("mooncake", b"{}\n", "1: field 'timestamp': missing"),
    ("tokens", b"{}\n", "1: field 'token_ids': missing"),
    ("mooncake", b"caf\xe9\n", "1: not UTF-8 (byte 0xe9 at byte 4 of the line)"),
])
def test_named_format_with_no_line_left_gives_the_first_reason(tmp_path, fmt, data, first):
    f = _file(tmp_path, data)
    with pytest.raises(InputError) as err:
        list(open_trace(f, format=fmt, on_error="skip"))
    assert str(err.value) == (f"{f}:{first}; no requests left: its only line was skipped as bad "
                              "(on_error='skip')")


def test_many_skipped_lines_name_the_first_and_count_all(tmp_path):
    f = _file(tmp_path, b'{"timestamp": 0}\n{}\n\n{"a": 1}\n')     # 4 bad lines (a blank one too)
    with pytest.raises(InputError) as err:
        list(open_trace(f, format="mooncake", on_error="skip"))
    assert str(err.value) == (f"{f}:1: field 'input_length': missing; no requests left: all 4 lines were "
                              "skipped as bad (1 of them blank), the first non-blank one for this reason "
                              "(on_error='skip')")


def test_detected_format_with_no_line_left_gives_the_first_reason(tmp_path):
    f = _file(tmp_path, b'{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1, 2]}\n')
    with pytest.raises(InputError) as err:      # detected as mooncake; 2 ids where ceil(10 / 512) = 1
        list(open_trace(f, on_error="skip"))
    assert err.value.line == 1 and err.value.field == "hash_ids"
    assert err.value.problem.endswith("; no requests left: its only line was skipped as bad (on_error='skip')")


def test_length_only_no_row_left_names_the_first(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,x,1\n")
    with pytest.raises(InputError) as err:
        list(open_trace(f, on_error="skip"))
    assert err.value.line == 2
    assert err.value.problem.endswith("; no requests left: its only line was skipped as bad (on_error='skip')")


def test_parquet_no_row_left_names_the_first_row(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from pcs.trace.parquet import arrow_schema

    rows = {"arrival_s": [0.0, 1.0], "prompt_tokens": [8, 8], "output_tokens": [1, -1],
            "block_hashes": pa.array([[1], [2, 3]], pa.list_(pa.uint64()))}     # row 1: 1 id, row 2: below 0
    out = tmp_path / "t.parquet"
    pq.write_table(pa.table(rows).cast(arrow_schema(block_size=4)), out)
    with pytest.raises(InputError) as err:
        list(open_trace(out, on_error="skip"))
    assert str(err.value) == (f"{out}:1: field 'block_hashes': has 1 id but ceil(8 / block size 4) = 2; no requests "
                              "left: all 2 rows were skipped as bad, the first for this reason (on_error='skip')")


@pytest.mark.parametrize("fmt", ["mooncake", "bailian", "tokens"])
def test_kv_events_under_a_named_format_are_named(tmp_path, fmt):
    f = _file(tmp_path, EVENTS.encode())
    field = "token_ids" if fmt == "tokens" else "timestamp"
    with pytest.raises(InputError) as err:
        list(open_trace(f, format=fmt))
    assert str(err.value) == (f"{f}:1: field '{field}': missing; {_events_kind(f)}; no format= value reads such "
                              "a file")


def test_kv_events_named_on_the_command_line(tmp_path):
    f = _file(tmp_path, EVENTS.encode())
    line = assert_one_line_error(invoke("trace", "stats", f, "--trace-format", "mooncake", "-q"))
    assert line == (f"pcs: error: {f}:1: field 'timestamp': missing; {_events_kind(f)}; no --trace-format value "
                    "reads such a file")


def test_kv_events_skipped_under_a_named_format(tmp_path):
    f = _file(tmp_path, EVENTS.encode())
    with pytest.raises(InputError) as err:
        list(open_trace(f, format="mooncake", on_error="skip"))
    assert str(err.value) == (f"{f}:1: field 'timestamp': missing; {_events_kind(f)}; no format= value reads such "
                              "a file; no requests left: its only line was skipped as bad (on_error='skip')")


def test_chat_log_under_a_named_format_is_named(tmp_path):
    f = _file(tmp_path, CHAT.encode())
    with pytest.raises(InputError) as err:
        list(open_trace(f, format="mooncake"))
    assert str(err.value) == (f"{f}:1: field 'timestamp': missing; this is a chat log (OpenAI 'messages'), not a "
                              f"trace: turn it into a token trace with pcs trace from-chat {f} OUT.jsonl --tokenizer "
                              "tokenizer.json, then read OUT.jsonl; no format= value reads such a file")


@pytest.mark.parametrize("fmt, data, first, other", [
    ("tokens", ROW, "field 'token_ids': missing", "mooncake"),
    ("bailian", ROW, "field 'chat_id': missing", "mooncake"),
    ("mooncake", '{"timestamp": 0, "token_ids": [1, 2], "output_length": 1}\n', "field 'input_length': missing",
     "tokens"),
])
def test_another_request_format_names_the_value_to_pass(tmp_path, fmt, data, first, other):
    f = _file(tmp_path, data.encode())
    with pytest.raises(InputError) as err:
        list(open_trace(f, format=fmt))
    assert str(err.value) == (f"{f}:1: {first}; format detection reads this line as a {other} trace: pass "
                              f"format='{other}' (or no format=, and pcs detects it)")


def test_a_later_bad_line_gets_no_kind_hint(tmp_path):
    f = _file(tmp_path, (ROW + EVENTS).encode())     # line 1 is a request: line 2 is a bad line, not a wrong format
    with pytest.raises(InputError) as err:
        list(open_trace(f, format="mooncake"))
    assert str(err.value) == f"{f}:2: field 'timestamp': missing"


def test_the_right_format_gets_no_hint(tmp_path):
    f = _file(tmp_path, b'{"timestamp": "x", "input_length": 10, "output_length": 1, "hash_ids": [1]}\n')
    with pytest.raises(InputError) as err:
        list(open_trace(f, format="mooncake"))
    assert "format detection" not in str(err.value) and err.value.line == 1


@pytest.mark.parametrize("text, line", [
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,x,1\n",
     "-:2: field 'ContextTokens': must be a whole number of tokens in ASCII digits 0-9, got 'x'"),
    ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\nx,a,1,1,2,c\n",
     "-:2: field 'Timestamp': must be a number of seconds, got 'x'"),
])
def test_length_only_from_stdin_is_named_as_stdin(text, line):
    """A length-only CSV on stdin: its errors name ``-``, as the JSON readers' do; before, the spool file's path
    (``/tmp/pcs-stdin-...``)."""
    assert assert_one_line_error(invoke("trace", "stats", "-", "-q", input=text)) == f"pcs: error: {line}"
