"""Review of mend47a/mend47b (mend47d): five findings, each expectation worked out by hand from the rules the
messages follow: pcs.errors (``printable``: a control, a line or paragraph separator, a surrogate, a private or
unassigned character, a bidirectional control or an invisible format character of no script is escaped; every other
character -- emoji joined by ZWJ, ZWNJ, a space separator -- is shown as typed), pcs.cli.common (``pcs: error:
...``, one line, exit 2), pcs.trace.pathcheck (``PathError``: ``KEYWORD='PATH': PROBLEM``, the problem in
``os.strerror``'s words) and docs/sweep.md (a plan's messages)."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from helpers import PLAN_HEAD, SMALL_TRACE, assert_one_line_error, invoke, plan_refusal
from pcs.errors import PathError

ZWJ, ZWNJ = "\u200d", "\u200c"                      # joiners: part of an emoji, of Persian text
FAMILY = f"\U0001f468{ZWJ}\U0001f469{ZWJ}\U0001f467"  # man ZWJ woman ZWJ girl: one emoji on screen
ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"   # black flag, tags g b e n g, cancel
IS_A_DIRECTORY = os.strerror(errno.EISDIR)


# 1. A name is shown as typed but for the characters that hide or reorder text; the tables' headers by the same rule.

@pytest.mark.parametrize("name, shown", [
    (f"fam{FAMILY}.jsonl", f"fam{FAMILY}.jsonl"),                       # ZWJ kept: the emoji stays one
    ("\u65e5\u672c\u3000\u8a9e.jsonl", "\u65e5\u672c\u3000\u8a9e.jsonl"),    # U+3000 ideographic space (Zs) kept
    ("a\u00a0b.jsonl", "a\u00a0b.jsonl"),                                  # no-break space (Zs) kept
    (f"\u0645\u06cc{ZWNJ}\u062e\u0648\u0627\u0647\u0645.jsonl", f"\u0645\u06cc{ZWNJ}\u062e\u0648\u0627\u0647\u0645.jsonl"),
    (f"{ENGLAND}.jsonl", f"{ENGLAND}.jsonl"),                           # a tag sequence: one flag
    # kept and hidden in one name: the RLO (bidi, Cf), ZWSP U+200B, word joiner U+2060, BOM U+FEFF, a lone tag
    # character U+E0041 and a private-use U+E000 escaped; the ZWJ of the emoji kept
    (f"{FAMILY}\u202e\u200b\u2060\ufeff\U000e0041\ue000.jsonl", f"{FAMILY}\\u202e\\u200b\\u2060\\ufeff\\U000e0041\\ue000.jsonl"),
    # a line separator (Zl), ALM U+061C, LRI U+2066, LRM U+200E, a tab (Cc), a soft hyphen U+00AD: escaped
    (f"{FAMILY}\u2028\u061c\u2066\u200e\t\u00ad.jsonl", f"{FAMILY}\\u2028\\u061c\\u2066\\u200e\\t\\xad.jsonl"),
])
def test_a_missing_trace_is_named_as_typed_but_for_hidden_characters(tmp_path, monkeypatch, name, shown):
    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(invoke("replay", name))
    assert line == f"pcs: error: TRACE {shown}: No such file or directory", line


def test_the_tables_headers_show_names_by_the_same_rule():
    from pcs.report.table import shown_name, shown_relative_path

    # a relative path is shown as given (pcs.report.table.shown_relative_path); the RLO escaped, the emoji and U+3000 kept
    assert shown_relative_path(f"runs/{FAMILY}\u3000x\u202e.jsonl") == f"runs/{FAMILY}\u3000x\\u202e.jsonl"
    assert shown_name(f"gpu{ZWJ}{FAMILY}\u00a0b") == f"gpu{ZWJ}{FAMILY}\u00a0b"


# 2. A word holding a dot or a path separator is a plan's file name, never a mistyped subcommand.

@pytest.mark.parametrize("word", ["run.tom", "summarize.json", f"sub{os.sep}run"])   # each close to a subcommand
def test_a_plan_name_close_to_a_subcommand_is_a_missing_plan(tmp_path, monkeypatch, word):
    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(invoke("sweep", word, "-o", "x"))
    assert line == f"pcs: error: PLAN {word}: No such file or directory", line


# 3. An output path that is an existing folder is refused by every public writer, naming its parameter.

def _batches():
    from pcs.trace import open_trace

    return open_trace(SMALL_TRACE).iter_batches()


@pytest.mark.parametrize("writer", ["convert", "write_trace", "write_token_rows", "write_file", "write_report"])
@pytest.mark.parametrize("folder", ["", "tmp"])
def test_an_output_path_that_is_a_folder_is_refused(tmp_path, monkeypatch, writer, folder):
    from pcs.report.html import write_file, write_report
    from pcs.trace.chat import write_token_rows
    from pcs.trace.convert import convert, write_trace

    monkeypatch.chdir(tmp_path)
    out = Path("") if folder == "" else tmp_path      # Path("") is Path("."): the current folder
    shown = "." if folder == "" else str(tmp_path)
    calls = {"convert": (lambda: convert(str(SMALL_TRACE), out), "out_path"),
             "write_trace": (lambda: write_trace(_batches(), out, "parquet", block_size=16), "out_path"),
             "write_token_rows": (lambda: write_token_rows(iter([{"token_ids": [1]}]), out), "out_path"),
             "write_file": (lambda: write_file(out, "x"), "path"),
             "write_report": (lambda: write_report(out, []), "path")}
    call, keyword = calls[writer]
    with pytest.raises(PathError) as err:
        call()
    assert str(err.value) == f"{keyword}='{shown}': {IS_A_DIRECTORY}"
    assert os.listdir(tmp_path) == []           # nothing written, no temporary file left


# 4-5. A plan's messages. PLAN_HEAD is 6 lines: a key written after it is on line 7.

_AXIS = '[axes]\npolicy = ["lru", "fifo"]\n'


def _refusal(tmp_path, extra: str) -> str:
    return plan_refusal(tmp_path, PLAN_HEAD + extra).replace(str(tmp_path / "p.toml"), "P")


@pytest.mark.parametrize("extra, key", [("x = {y = +inf}\n", "x"), ("bogus = nan\n", "bogus"),
                                        ("teir = [1, -inf]\n", "teir")])
def test_an_unknown_option_is_named_before_its_value_is_checked(tmp_path, extra, key):
    message = _refusal(tmp_path, extra + _AXIS)
    # every key's name is checked before any value, before any point is built: the table's refusal at the key's line
    assert message.startswith(f"P:7: [fixed]: unknown option {key!r} for pcs replay; "), message
    assert "not finite" not in message, message


@pytest.mark.parametrize("extra, words", [
    ("max-num-seqs = +inf\n", "P:7: [fixed]: option 'max-num-seqs': +inf is not finite; give a finite number"),
    ("tier-policy = {cpu = +nan}\n", "P:7: [fixed]: option 'tier-policy.cpu': +nan is not finite; give an eviction "
                                      'policy name, as text: "lru"'),
    ("[axes]\ntp = [1, -nan]\n", "P:8: [axes]: option 'tp[1]': -nan is not finite; give a finite number"),
])
def test_a_value_not_finite_is_shown_as_written(tmp_path, extra, words):
    assert _refusal(tmp_path, extra) == words


@pytest.mark.parametrize("extra, words", [
    ('requests_out = "x.csv"\n' + _AXIS, "[fixed]: option 'requests_out' shapes a command's output only"),
    ("gap_orcle = true\n" + _AXIS, "[fixed]: unknown option 'gap_orcle' for pcs replay; did you mean 'gap-oracle'?"),
    ('write_policy = "bogus"\n' + _AXIS, "): Invalid value for 'write_policy': 'bogus' is not one of"),
    ('[axes]\nrequests_out = ["a.csv", "b.csv"]\n', "[axes]: option 'requests_out' shapes a command's output only"),
])
def test_a_refused_key_is_quoted_as_the_plan_writes_it(tmp_path, extra, words):
    message = _refusal(tmp_path, extra)
    assert words in message, message
