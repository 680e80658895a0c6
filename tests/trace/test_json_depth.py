"""pcs's one nesting rule for JSON input (pcs/jsondepth.py, docs/traces.md "Input is strict"): at most 512 levels
of arrays/objects, for every parser of the JSONL traces and every other JSON reader, with one message that says
"nested too deeply" (the pyarrow shortcut accepted a 100,000-deep value the authority refused,
and the authority's message read "invalid JSON")."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pcs import _native
from pcs.cli.main import cli
from pcs.configfile import read_json_object
from pcs.errors import InputError
from pcs.jsondepth import TooDeepError, loads
from pcs.trace.api import detect_format
from pcs.trace.hashids import MOONCAKE, ReadState, read_hashid_jsonl
from pcs.trace.jsonfast import available
from pcs.trace.kvevents import read_kv_events

GOOD = '{"timestamp": 10, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}'
PARSERS = [False, "pyarrow"] + (["simdjson"] if available("simdjson") else []) + \
          (["native"] if _native.built("jsonrows") else [])


def nested(levels: int) -> str:
    """A Mooncake line whose unknown key "x" holds ``levels - 1`` nested arrays: with the object itself,
    ``levels`` levels in all (the object is level 1, its first array level 2, ...)."""
    inner = levels - 1
    return GOOD[:-1] + ', "x": ' + "[" * inner + "]" * inner + "}"


def read(path, fast):
    try:
        return sum(len(b.arrival_s) for b in read_hashid_jsonl(path, "t.jsonl", MOONCAKE, None, ReadState(),
                                                                 "raise", fast=fast))
    except InputError as e:
        return str(e)


def test_512_levels_are_read_and_513_refused_by_loads():
    v = loads("[" * 512 + "]" * 512)
    for _ in range(511):   # 512 levels: 511 steps inward reach the innermost, empty array
        v = v[0]
    assert v == []
    with pytest.raises(TooDeepError, match="nested too deeply: more than 512 levels"):
        loads("[" * 513 + "]" * 513)
    with pytest.raises(TooDeepError):   # far past Python's own recursion limit: the same error, not RecursionError
        loads(b"[" * 100_000 + b"]" * 100_000)
    # many brackets side by side are not depth: 600 empty arrays in one array are 2 levels
    assert len(loads("[" + ",".join(["[]"] * 600) + "]")) == 600


@pytest.mark.parametrize("levels,where", [(100_000, "last"), (100_000, "middle"), (990, "last"), (513, "middle")])
def test_every_parser_refuses_a_too_deep_line_with_one_message(tmp_path, levels, where):
    p = tmp_path / "t.jsonl"
    lines = [GOOD, nested(levels)] + ([GOOD.replace("10", "40")] if where == "middle" else [])
    p.write_text("\n".join(lines) + "\n")
    for fast in PARSERS:
        assert read(p, fast) == "t.jsonl:2: " + TooDeepError().args[0], fast


def test_every_parser_reads_a_line_of_512_levels(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([GOOD, nested(512), GOOD.replace("10", "40")]) + "\n")
    for fast in PARSERS:
        assert read(p, fast) == 3, fast


def test_format_detection_events_settings_and_report_say_nested_too_deeply(tmp_path):
    deep = tmp_path / "deep.jsonl"
    deep.write_text(nested(2000) + "\n")
    with pytest.raises(InputError, match="deep.jsonl:1: nested too deeply"):
        detect_format(deep)
    ev = tmp_path / "ev.jsonl"
    ev.write_text(json.dumps({"ts": 1, "events": []})[:-1] + ', "x": ' + "[" * 2000 + "]" * 2000 + "}\n")
    with pytest.raises(InputError, match="ev.jsonl:1: nested too deeply"):
        list(read_kv_events(ev))
    cfg = tmp_path / "config.json"
    cfg.write_text('{"a": ' + "[" * 2000 + "]" * 2000 + "}")
    with pytest.raises(InputError, match="nested too deeply") as e:
        read_json_object(cfg)
    assert "invalid" not in str(e.value)
    rep = tmp_path / "r.json"
    rep.write_text("[" * 2000 + "]" * 2000)
    r = CliRunner().invoke(cli, ["report", str(rep), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "nested too deeply" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "r.html").exists()
