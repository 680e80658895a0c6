"""The block-size hint of a hash-id line whose ids do not cover its prompt names a size that fits every line read so
far, this one included, or the two lines no single size fits (pcs.trace.bshint; docs/traces.md).

By hand, from the documented rule len(hash_ids) == ceil(input_length / B): n ids for t tokens fit B iff
t / n <= B < t / (n - 1), so 2 ids for 1,024 tokens fit 512..1,023; 1 id for 5,000 tokens 5,000 and up; 3 ids for
100 tokens 34..49; 2 ids for 1,000 tokens 500..999; 1 id for 700 tokens 700 and up. Lines 1,000/2, 1,024/2 and 700/1
together fit 700..999 (no power of two in it, so the smallest, 700: ceil(1,000/700) = 2, ceil(1,024/700) = 2,
ceil(700/700) = 1); each line alone reads at the default 512 but the third (ceil(700/512) = 2, not 1), where the
third line alone would have suggested 1,024 (16 and the smaller powers of two are below 700), which breaks line 1
(ceil(1,000/1,024) = 1).
"""
from __future__ import annotations

import gzip

import pytest

from tests.helpers import invoke

MC = '{{"timestamp": {ts}, "input_length": {t}, "output_length": 5, "hash_ids": {ids}}}\n'
BL = ('{{"chat_id": {ts}, "parent_chat_id": -1, "timestamp": {ts}, "input_length": {t}, "output_length": 5, '
      '"type": "text", "turn": 1, "hash_ids": {ids}}}\n')


def _lines(template: str, rows) -> str:
    return "".join(template.format(ts=i + 1, t=t, ids=list(range(1, n + 1))) for i, (t, n) in enumerate(rows))


def _error(*args) -> str:
    r = invoke(*args)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    return r.output.strip()


BAD7 = [(1024, 2), (5000, 1)]
BAD8 = [(1024, 2), (100, 3)]
NARROW = [(1000, 2), (1024, 2), (700, 1)]


def test_a_later_line_no_size_fits_with_line_1(tmp_path):
    p = tmp_path / "bad7.jsonl"
    p.write_text(_lines(MC, BAD7))
    assert _error("trace", "stats", p).endswith(
        "no single block size fits both line 1 (2 ids for 1,024 tokens: block size 512..1,023) and line 2 (1 id for 5,000 tokens: block size 5,000..1,048,576)")
    # the size line 1 alone suggests (512) then fails line 2 with the same two lines named, never a size that breaks
    # line 1 (the hint before: --block-size 8192, which line 1 refuses)
    assert _error("trace", "stats", p, "--block-size", "8192").endswith(
        "(--block-size 512 fits); pcs replay re-blocks a block-hash trace (exact at a multiple, an interval at a "
        "divisor); elsewhere give --block-size 512 or leave it out")
    assert "no single block size fits both line 1" in _error("trace", "stats", p, "--block-size", "512")
    q = tmp_path / "bad8.jsonl"
    q.write_text(_lines(MC, BAD8))
    assert _error("replay", q).endswith("and line 2 (3 ids for 100 tokens: block size 34..49)")


@pytest.mark.parametrize("fmt", ["mooncake", "bailian"])
def test_the_size_named_fits_every_line_so_far(tmp_path, fmt):
    p = tmp_path / "narrow.jsonl"
    p.write_text(_lines(MC if fmt == "mooncake" else BL, NARROW))
    bs = [] if fmt == "mooncake" else ["--block-size", "512"]       # Bailian's default is 16
    assert _error("trace", "stats", p, *bs).endswith(
        "was the trace recorded at another block size? (--block-size 700 fits lines 1 to 3)")
    r = invoke("trace", "stats", p, "--block-size", "700")
    assert r.exit_code == 0, r.output


def test_gzip_and_python_api_say_the_same(tmp_path):
    import pcs
    from pcs.errors import InputError

    p = tmp_path / "narrow.jsonl.gz"
    p.write_bytes(gzip.compress(_lines(MC, NARROW).encode()))
    assert _error("trace", "stats", p).endswith("(--block-size 700 fits lines 1 to 3)")
    with pytest.raises(InputError) as e:
        list(pcs.open_trace(str(p)))
    assert e.value.line == 3 and e.value.problem.endswith("(block_size=700 fits lines 1 to 3)")



def test_past_the_cap_nothing_is_re_read(tmp_path, monkeypatch):
    # line 3 fails with the cap at 2 lines: the hint is line 3's own (700 tokens in 1 id: the powers of two from
    # 700 up fit, 1,024 the first) and says the lines before were not re-read; no line is read to be thrown away
    from pcs.trace import bshint

    reads = []
    real = bshint._id_counts
    monkeypatch.setattr(bshint, "REREAD_LINES", 2)
    monkeypatch.setattr(bshint, "_id_counts", lambda *a: reads.append(a) or real(*a))
    p = tmp_path / "narrow.jsonl"
    p.write_text(_lines(MC, NARROW))
    assert _error("trace", "stats", p).endswith(
        "(--block-size 1024 fits this line; the lines before it, more than 2, not re-read)")
    assert reads == []
