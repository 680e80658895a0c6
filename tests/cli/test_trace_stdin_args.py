"""``-`` is stdin for every trace command, as ``pcs trace --help`` says (mend46b item 7): ``pcs trace events -``
and ``pcs trace from-chat -`` were refused by a ``Path.exists()`` check before their reader (``EVENTS -: No
such file or directory``). Each now reads stdin and prints what it prints for the file; a missing file is still
named by its argument, with the system's reason."""
from __future__ import annotations

import json

from helpers import ROOT, assert_one_line_error, invoke

FORMATS = ROOT / "traces" / "formats"


def test_trace_events_reads_stdin():
    capture = FORMATS / "vllm_kv_events_9.jsonl"
    piped = invoke("trace", "events", "-", "--format", "json", "-q", input=capture.read_bytes())
    assert piped.exit_code == 0, piped.output
    from_file = invoke("trace", "events", capture, "--format", "json", "-q")
    got, want = json.loads(piped.stdout), json.loads(from_file.stdout)
    assert got.pop("events_file") == "-" and want.pop("events_file") == str(capture)
    assert got == want and got["events"] == 9        # the capture's 9 lines, one event each
    missing = capture.parent / "nope.jsonl"          # a missing file is still named by its argument
    assert_one_line_error(invoke("trace", "events", missing), f"EVENTS {missing}: No such file or directory")


def test_trace_from_chat_reads_stdin(tmp_path):
    chat, tok = FORMATS / "openai_chat_4.jsonl", FORMATS / "tiny_wordlevel_tokenizer.json"
    piped = invoke("trace", "from-chat", "-", tmp_path / "a.jsonl", "--tokenizer", tok, "-q", input=chat.read_bytes())
    assert piped.exit_code == 0, piped.output
    assert invoke("trace", "from-chat", chat, tmp_path / "b.jsonl", "--tokenizer", tok, "-q").exit_code == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert_one_line_error(invoke("trace", "from-chat", tmp_path / "nope", tmp_path / "o.jsonl", "--tokenizer", tok),
                          f"CHAT {tmp_path / 'nope'}: No such file or directory")
