"""Counts printed with a noun say "1 line", not "1 lines" (pcs.units.plural / format_counted, the one rule); before,
"1 bad trace lines were skipped", "wrote 1 requests, 1 block accesses", "has 1 ids", "1 charts"."""
from __future__ import annotations

import pytest

from pcs.errors import InputError
from pcs.report.trace import render_convert, render_synth
from pcs.trace import open_trace
from pcs.trace.api import skipped_note
from pcs.units import format_counted, plural
from tests.helpers import invoke

ROW = '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'


@pytest.mark.parametrize("n, noun, many, want", [
    (0, "line", None, "0 lines"), (1, "line", None, "1 line"), (2, "line", None, "2 lines"),
    (1, "block access", "block accesses", "1 block access"), (3, "block access", "block accesses", "3 block accesses"),
    (1234, "request", None, "1,234 requests"), (1.5, "token", None, "1.50 tokens"),
])
def test_format_counted(n, noun, many, want):
    assert format_counted(n, noun, many) == want
    assert plural(n, noun, many) == want.split(" ", 1)[1]


class _T:
    def __init__(self, skipped):
        self.skipped = skipped


def test_skipped_note_singular_and_plural():
    assert skipped_note(_T(1)) == "1 bad trace line was skipped (on_error='skip')"     # the API's words
    assert skipped_note(_T(2)) == "2 bad trace lines were skipped (on_error='skip')"
    assert skipped_note(_T(0)) is None


def test_replay_note_of_one_skipped_line(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(ROW + "{}\n")
    r = invoke("replay", f, "--on-error", "skip", "--format", "json")
    assert r.exit_code == 0, r.output
    assert "pcs: note: 1 bad trace line was skipped (--on-error skip)" in r.stderr and "lines were" not in r.stderr


def test_convert_and_synth_lines():
    info = {"requests": 1, "block_accesses": 1, "format": "mooncake", "block_size": 16, "path": "o.jsonl",
            "skipped": 1, "seed": 0}
    assert render_convert(info) == "wrote 1 request, 1 block access (mooncake, 16-token blocks) to o.jsonl; skipped 1 bad line"
    assert render_synth(info) == "wrote 1 request, 1 block access (mooncake, 16-token blocks, seed 0) to o.jsonl"


def test_one_id_where_two_are_due(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [1]}\n')
    with pytest.raises(InputError) as err:
        list(open_trace(f, format="mooncake"))
    assert err.value.problem.startswith("has 1 id but ceil(1,000 / block size 512) = 2")


def test_report_of_one_chart(tmp_path):
    from pcs.trace.api import DEFAULT_TRACE

    src = tmp_path / "c.json"
    r = invoke("curve", DEFAULT_TRACE, "--points", "3", "--format", "json", "-q")
    src.write_text(r.stdout)
    r = invoke("report", src, "-o", tmp_path / "r.html")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"wrote {tmp_path / 'r.html'}: 1 chart, ") and " 1 charts" not in r.stdout


def test_one_request_past_the_context_and_the_fleet_sum():
    """One request of one past a 4,096-token context (5,000 + 10 tokens): "1 of 1 request runs past"; a fleet of two
    such instances sums them as "2 requests run past", its regex reading the singular form too."""
    from types import SimpleNamespace

    from pcs.engine.api import _past_context_note
    from pcs.fleet.fleet import fleet_notes

    note = _past_context_note(SimpleNamespace(max_context_tokens=4096),
                              {"prompt_tokens": [5000], "output_tokens": [10]}, False)
    assert note == ["1 of 1 request runs past the model's context, 4,096 tokens (config.json max_position_embeddings), "
                    "prompt + output (1 by the prompt alone, longest prompt 5,000): replayed anyway, as if the model "
                    "took them"]
    runs = [SimpleNamespace(notes=(note[0],)), SimpleNamespace(notes=(note[0],))]
    assert fleet_notes((), runs) == ("2 requests run past the model's context, 4,096 tokens (config.json "
                                     "max_position_embeddings), prompt + output (2 by the prompt alone, longest prompt "
                                     "5,000); per instance: instance 0 1 of 1, instance 1 1 of 1 (2 of 2): replayed "
                                     "anyway, as if the model took them",)
