"""A trace the driver refuses before any point runs is named in the plan's words, not the command line's
(Review 44c): a plan is written ``timing = "sequential"``, ``on-error = "skip"``, ``block-size = 16``
(docs/sweep.md "Options"), so its advice says so -- never ``--timing sequential``."""
from __future__ import annotations

import pytest

from helpers import assert_one_line_error, invoke


def _sweep(tmp_path, trace_text: str):
    (tmp_path / "t.jsonl").write_text(trace_text)
    (tmp_path / "p.toml").write_text('kind = "replay"\n[fixed]\ntrace = "t.jsonl"\ntier = {gpu = "50blocks"}\n'
                                     '[axes]\npolicy = ["lru", "fifo"]\n')
    return invoke("sweep", tmp_path / "p.toml", "-o", tmp_path / "out")


_ROW = '{{"timestamp": {t}, "input_length": 1024, "output_length": {out}, "hash_ids": [1, 2]}}\n'


@pytest.mark.parametrize("rows,needles", [
    # output_length 2**62 = 4611686018427387904 on line 2, past the step scheduler (modeled timing, the default)
    ([_ROW.format(t=0, out=5), _ROW.format(t=1, out=2 ** 62)],
     ["t.jsonl:2: field 'output_length'", 'use compute = "infinite" or timing = "sequential" for such a trace']),
    # a blank line 2
    ([_ROW.format(t=0, out=5), "\n", _ROW.format(t=1, out=5)],
     ["t.jsonl:2: blank line", 'use on-error = "skip" to skip blank lines']),
    # 1024 tokens in 64 ids: 16 tokens an id, not Mooncake's 512 (1024 / 512 = 2 ids)
    (['{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [%s]}\n'
      % ", ".join(map(str, range(64)))],
     ["t.jsonl:1: field 'hash_ids'", "(block-size = 16 fits)"]),
    # a timestamp going down on line 2: the plan's sort is a flag, written sort = true (not a bare 'sort')
    ([_ROW.format(t=5, out=5), _ROW.format(t=1, out=5)],
     ["t.jsonl:2: field 'timestamp'", "decreases (1 after 5); use sort = true to reorder"]),
])
def test_a_refused_trace_is_named_in_the_plans_words(tmp_path, rows, needles):
    line = assert_one_line_error(_sweep(tmp_path, "".join(rows)), *needles)
    assert "--" not in line.split("t.jsonl", 1)[1], line


def test_format_detection_advice_is_a_plans_key(tmp_path):
    # a plan has no flags to pass (review 45, 4a): the advice is its key, trace-format = "...", not 'pass trace-format'
    line = assert_one_line_error(_sweep(tmp_path, '{"foo": 1}\n'),
                                 "t.jsonl:1: cannot detect the format: the first object has none of 'hash_ids', "
                                 "'chat_id', 'token_ids'; set trace-format = \"...\" (mooncake, bailian, tokens, "
                                 "parquet, azure, burstgpt)")
    assert "pass" not in line, line
