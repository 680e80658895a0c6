"""Every number a reader refuses is named by file, line and field, and by its element in a list.

An integer past Python's digit limit (4,300 digits by default) inside a JSONL list said only "number too long
(5,000 digits)": no field, no element (and on a file's first line, read by format detection, "invalid JSON: ...").
The JSON locator (pcs.jsondepth) now names the key that holds the number and its index in the list; the CSV
readers and the integer options name the length instead of "not ASCII digits"; a Parquet id names its element
as the JSONL readers do. Every JSONL shortcut parser falls back to the line reader on a bad chunk: their
messages are the same, checked here for each.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import invoke
from pcs import jsondepth
from pcs.errors import InputError
from pcs.trace import open_trace
from pcs.trace.hashids import MOONCAKE, ReadState, read_hashid_jsonl

LONG = "9" * 5000       # 5,000 digits: past Python's 4,300


def _good(ts: int) -> str:
    return json.dumps({"timestamp": ts, "input_length": 1024, "output_length": 10, "hash_ids": [2 * ts, 2 * ts + 1]})


def _file(tmp_path, bad: str, at: int = 26, n: int = 50, name: str = "t.jsonl"):
    """``n`` good Mooncake lines (1024 tokens = 2 ids of 512) with ``bad`` as line ``at``."""
    lines = [_good(i) for i in range(n)]
    lines[at - 1] = bad
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _line(ids: str = "1, 2", input_length: str = "1024", ts: int = 25) -> str:
    return f'{{"timestamp": {ts}, "input_length": {input_length}, "output_length": 10, "hash_ids": [{ids}]}}'


@pytest.mark.parametrize("fast", [False, "native", "simdjson", "pyarrow"])
@pytest.mark.parametrize("bad,message", [
    (_line(ids=f"1, 2, {LONG}"), "t.jsonl:26: field 'hash_ids': element 2: number too long (5,000 digits)"),
    (_line(ids=f"{LONG}, 2"), "t.jsonl:26: field 'hash_ids': element 0: number too long (5,000 digits)"),
    (_line(input_length=LONG), "t.jsonl:26: field 'input_length': number too long (5,000 digits)"),
    (_line(ids="1, 18446744073709551616"),
     "t.jsonl:26: field 'hash_ids': element 1 = 18446744073709551616 does not fit an unsigned 64-bit id"),
    (_line(ids="1, -2"), "t.jsonl:26: field 'hash_ids': element 1 = -2 does not fit an unsigned 64-bit id"),
    (_line(ids="1, 2.0"), "t.jsonl:26: field 'hash_ids': element 1 must be an integer, got 2.0"),
    (_line(input_length="9223372036854775808"),
     "t.jsonl:26: field 'input_length': must be <= 9223372036854775807, got 9223372036854775808"),
], ids=["long-last", "long-first", "long-length", "u64+1", "negative", "float", "i64+1"])
def test_each_jsonl_parser_names_the_field_and_element(tmp_path, fast, bad, message):
    """Element indexes count from 0 (the index the message prints for "element 1 = -2" in [1, -2])."""
    if fast == "simdjson":
        pytest.importorskip("simdjson")
    p = _file(tmp_path, bad)
    with pytest.raises(InputError) as got:
        for _ in read_hashid_jsonl(p, "t.jsonl", MOONCAKE, None, ReadState(), fast=fast):
            pass
    assert str(got.value) == message


def test_a_long_number_on_the_first_line_is_named_as_the_readers_name_it(tmp_path):
    """Format detection parses line 1 before any reader: it gave "invalid JSON: number too long"."""
    p = _file(tmp_path, _line(ids=f"1, {LONG}", ts=0), at=1)
    r = invoke("replay", p, "-q", "--timing", "sequential", "--tier", "gpu=10blocks")
    assert r.exit_code == 2 and not r.stdout
    assert r.stderr.strip() == f"pcs: error: {p}:1: field 'hash_ids': element 1: number too long (5,000 digits)"


@pytest.mark.parametrize("fmt,lines,message", [
    ("tokens", ['{"timestamp": 1, "output_length": 8, "token_ids": [1, 2, 3]}',
                f'{{"timestamp": 2, "output_length": 8, "token_ids": [1, {LONG}]}}'],
     "field 'token_ids': element 1: number too long (5,000 digits)"),
    ("bailian", ['{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 40, "output_length": 1, '
                 '"type": "text", "turn": 1, "hash_ids": [1, 2, 3]}',
                 f'{{"chat_id": {LONG}, "parent_chat_id": -1, "timestamp": 1, "input_length": 40, '
                 '"output_length": 1, "type": "text", "turn": 1, "hash_ids": [1, 2, 3]}'],
     "field 'chat_id': number too long (5,000 digits)"),
])
def test_the_other_jsonl_formats_name_the_field(tmp_path, fmt, lines, message):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as got:
        list(open_trace(p, format=fmt))
    assert str(got.value) == f"{p}:2: {message}" or str(got.value) == f"t.jsonl:2: {message}"


@pytest.mark.parametrize("text,field,index", [
    ('{"a": "x,[y", "ids": [1, 2, N]}', "ids", 2),                 # a comma and a bracket inside a string
    ('{"a": [1, 2], "b": {"c": 1}, "d": N}', "d", None),          # after a closed array and object
    ('{"a": {"b": [[1], [2, 3, -N]]}}', "b", 2),                  # the innermost list, the key holding it
    ('[1, N]', None, 1),                                          # a top-level array: no key
    ('{"k\\"ey": [N]}', 'k"ey', 0),                              # an escaped quote in the key
])
def test_the_json_locator_names_key_and_element(text, field, index):
    with pytest.raises(jsondepth.NumberTooLongError) as got:
        jsondepth.loads(text.replace("N", LONG))
    assert (got.value.lineno, got.value.field, got.value.index, got.value.digits) == (1, field, index, 5000)


def test_a_pcs_report_json_names_the_element(tmp_path):
    p = tmp_path / "run.json"
    p.write_text('{\n  "hit_ratio": 0.5,\n  "tiers": [\n    1,\n    ' + LONG + "\n  ]\n}\n")
    r = invoke("report", p, "-o", tmp_path / "r.html")
    assert r.exit_code == 2
    assert r.stderr.strip() == f"pcs: error: {p}:5: field 'tiers': element 1: number too long (5,000 digits)"


@pytest.mark.parametrize("name,text,message", [
    ("a.csv", f"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
              f"2023-11-16 18:15:47.0,{LONG},44\n", "a.csv:3: field 'ContextTokens': number too long (5,000 digits)"),
    ("b.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
              "5,ChatGPT,472,18,490,Conversation log\n"
              f"6,ChatGPT,{LONG},18,490,Conversation log\n",
     "b.csv:3: field 'Request tokens': number too long (5,000 digits)"),
])
def test_a_csv_cell_past_the_digit_limit_says_so(tmp_path, name, text, message):
    """It said "must be an integer in ASCII digits 0-9" of a cell of ASCII digits."""
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InputError) as got:
        list(open_trace(p))
    assert str(got.value).endswith(message)


def test_a_parquet_id_names_its_element(tmp_path):
    """Row 2's ids [7, 8, -2]: element 2 (the JSONL readers' words)."""
    meta = {"pcs.schema": "pcs-trace/1", "pcs.block_size": "512", "pcs.source_format": "mooncake"}
    t = pa.table({"arrival_s": pa.array([0.0, 1.0]), "prompt_tokens": pa.array([1024, 1100]),
                  "output_tokens": pa.array([1, 1]), "block_hashes": pa.array([[1, 2], [7, 8, -2]],
                                                                              pa.list_(pa.int64()))})
    p = tmp_path / "t.parquet"
    pq.write_table(t.replace_schema_metadata(meta), p)
    with pytest.raises(InputError) as got:
        list(open_trace(p, format="parquet"))
    assert str(got.value).endswith("t.parquet:2: field 'block_hashes': element 2 = -2 does not fit an unsigned "
                                   "64-bit id")


def test_an_integer_option_past_the_digit_limit_says_so():
    r = invoke("replay", "--max-num-seqs", LONG)
    assert r.exit_code == 2
    # the value cut with its closing quote and length (pcs.errors.quoted)
    # review 45d: "(5,000 characters): number too long (5,000 digits)" said the count twice; the reason names
    # Python's limit instead (4,300 digits by default)
    assert f"'{LONG[:40]}...' (5,000 characters): number too long (more than 4,300 digits)" in r.stderr


def test_a_long_integer_cell_quoted_says_its_length_once():
    from pcs.errors import UserError
    from pcs.units import ascii_int

    with pytest.raises(UserError) as err:
        ascii_int(LONG, "count")
    assert str(err.value) == f"invalid count '{LONG[:40]}...' (5,000 characters): number too long (more than 4,300 digits)"
