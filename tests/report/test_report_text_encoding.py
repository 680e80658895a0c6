"""pcs report reads a JSON file as UTF-8 text: a leading byte-order mark is skipped (as the trace readers and config
files skip it), and bytes that are not UTF-8 are refused in pcs's words, naming the line."""
from __future__ import annotations

import json

import pytest

from tests.helpers import assert_one_line_error, invoke, invoke_json

pytest.importorskip("jinja2")


@pytest.fixture(scope="module")
def text() -> str:
    return json.dumps(invoke_json("footprint", "--model", "llama-3.1-8b", "--tokens", "4096"), indent=2)


def test_a_utf8_bom_is_skipped(tmp_path, text):
    src = tmp_path / "bom.json"
    src.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    plain = tmp_path / "plain.json"
    plain.write_text(text, encoding="utf-8")
    for f, page in ((src, "a.html"), (plain, "b.html")):
        r = invoke("report", f, "-o", tmp_path / page, "-q")
        assert r.exit_code == 0, r.output
    strip = lambda t: "\n".join(ln for ln in t.splitlines() if "page written by" not in ln)  # noqa: E731
    assert strip((tmp_path / "a.html").read_text()) == strip((tmp_path / "b.html").read_text())


def test_bytes_not_utf8_name_the_line(tmp_path, text):
    lines = text.encode("utf-8").split(b"\n")
    lines[3] += b" \xff"                                   # a Latin-1 byte at the end of line 4
    src = tmp_path / "bad.json"
    src.write_bytes(b"\n".join(lines))
    at = len(lines[3])                  # the 0xff byte ends line 4: its place in the line, counted from 1
    assert_one_line_error(invoke("report", src, "-o", tmp_path / "p.html", "-q"),
                          f"pcs: error: {src}:4: not UTF-8 text (byte 0xff at byte {at} of the line); save the file "
                          "as UTF-8")
