"""A source of blank/whitespace lines only is an empty trace, one message for format detection and every text
``--trace-format`` (docs/traces.md "Input is strict"); a blank line before data stays a bad line."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.errors import InputError
from pcs.trace.api import open_trace

TEXT_FORMATS = [None, "mooncake", "bailian", "tokens", "azure", "burstgpt"]   # every format but parquet (binary)
BLANK = "\n  \n\t\r\n"                                                         # 3 lines, none holding a character


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_blank_lines_only_is_an_empty_trace_for_every_format(tmp_path, fmt, on_error):
    p = tmp_path / "blank.jsonl"
    p.write_text(BLANK)
    with pytest.raises(InputError) as e:
        list(open_trace(p, format=fmt, on_error=on_error))
    assert str(e.value) == f"{p}: empty trace (no requests)"


@pytest.mark.parametrize("fmt", ["mooncake", "azure"])
def test_blank_lines_on_stdin_with_a_format_are_an_empty_trace(fmt):
    r = CliRunner().invoke(cli, ["trace", "stats", "-", "--trace-format", fmt], input=BLANK)
    assert r.exit_code == 2 and r.output.strip().endswith("-: empty trace (no requests)")


@pytest.mark.parametrize("fmt", [None, "mooncake"])
def test_a_blank_line_before_data_is_line_1_with_or_without_a_format(tmp_path, fmt):
    p = tmp_path / "t.jsonl"
    p.write_text('\n{"timestamp": 10, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\n')
    with pytest.raises(InputError) as e:
        list(open_trace(p, format=fmt))
    assert (e.value.line, str(e.value)) == (1, f"{p}:1: blank line (use on_error='skip' to skip blank lines)")
