"""Re-blocking a hash-id trace: exact when coarser; when finer, the exact answer lies between the two bounds."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import lru_replay
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs.blocks import single_sequence_hits
from pcs.trace import open_trace
from pcs.trace.hashing import hash_request_blocks
from pcs.trace.reblock import check_chained, plan_engine_block_size, reblock, reblock_batch
from pcs.trace.request import RequestBatch, concat_batches

ROOT = Path(__file__).resolve().parents[2]
MOONCAKE8 = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"


def as_batch(token_lists, bs) -> RequestBatch:
    """Token prompts -> one batch of chained hash ids at ``bs`` (pcs.trace.hashing, as the token reader does)."""
    hs = [hash_request_blocks(np.asarray(t, dtype=np.uint32), bs) for t in token_lists]
    offs = np.concatenate(([0], np.cumsum([h.size for h in hs]))).astype(np.int64)
    n = len(token_lists)
    return RequestBatch(0, bs, np.arange(n, dtype=np.float64), np.array([len(t) for t in token_lists]),
                        np.ones(n, dtype=np.int64), offs, np.concatenate(hs) if hs else np.zeros(0, np.uint64))


@st.composite
def token_traces(draw):
    """Requests that share prefixes of any length (so 512-blocks differ where 16-blocks still agree):
    each is a cut of an earlier request or a root document, plus a new tail."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    docs = [rng.integers(0, 50_000, size=3000).tolist() for _ in range(3)]
    reqs: list[list[int]] = []
    for _ in range(draw(st.integers(2, 10))):
        base = draw(st.sampled_from(docs + reqs))
        cut = draw(st.integers(0, len(base)))
        tail = rng.integers(0, 50_000, size=draw(st.integers(1, 900))).tolist()
        reqs.append(base[:cut] + tail)
    return reqs


@settings(max_examples=40, deadline=None)
@given(token_traces())
def test_exact_ratio_at_16_lies_inside_the_interval_from_512(reqs):
    coarse = as_batch(reqs, 512)            # the hash-id trace a user has (Mooncake's block size)
    exact = as_batch(reqs, 16)              # what an engine with 16-token blocks really sees
    lo, up = reblock_batch(coarse, 16, "lower"), reblock_batch(coarse, 16, "upper")
    assert lo.num_blocks.tolist() == exact.num_blocks.tolist() == up.num_blocks.tolist()
    ss = [single_sequence_hits(x.requests()).hit_tokens for x in (lo, exact, up)]
    assert ss[0] <= ss[1] <= ss[2]
    for cap in (64, 256, 1024, 4096, 10**9):    # 16-token blocks held by one LRU tier
        h = [lru_replay(list(x.requests()), cap)[0] for x in (lo, exact, up)]
        assert h[0] <= h[1] <= h[2], (cap, h)


@settings(max_examples=25, deadline=None)
@given(token_traces(), st.sampled_from([2, 4]))
def test_coarser_is_exact(reqs, k):
    # 64-token ids re-blocked to 64k tokens give the same sharing as hashing the tokens at 64k directly
    got = reblock_batch(as_batch(reqs, 64), 64 * k)
    want = as_batch(reqs, 64 * k)
    assert got.num_blocks.tolist() == want.num_blocks.tolist()
    same = lambda h: (h[:, None] == h[None, :])  # noqa: E731 - equality pattern of the ids
    assert np.array_equal(same(got.block_hashes), same(want.block_hashes))


def test_bounds_by_hand():
    # B = 4, b = 2. r0 = 8 tokens [1, 2]; r1 = 6 tokens [1, 3]: block 1 shared, 2 and 3 are siblings (parent 1).
    # lower: r1's sub-blocks of 3 share nothing with 2's: r1 hits block 1's two halves (cap (6-1)//2 = 2) -> 4 tok.
    # upper: 3 (2 tokens, one full half) may equal 2's first half: r1 hits 3 halves -> cap 2 -> still 4 tok;
    # r2 = 8 tokens [1, 4] (4 full, sibling of 2): upper shares 4's first half with 2's: 3 halves, cap 3 -> 6 tok.
    b = RequestBatch(0, 4, np.zeros(3), np.array([8, 6, 8]), np.zeros(3, dtype=np.int64),
                     np.array([0, 2, 4, 6]), np.array([1, 2, 1, 3, 1, 4], dtype=np.uint64))
    lo, up = reblock_batch(b, 2, "lower"), reblock_batch(b, 2, "upper")
    assert single_sequence_hits(lo.requests()).hit_tokens == 4 + 4
    assert single_sequence_hits(up.requests()).hit_tokens == 4 + 6


def test_mooncake_excerpt_and_plan(tmp_path):
    t = open_trace(MOONCAKE8)
    check_chained(concat_batches(list(t.iter_batches())))
    assert set(reblock(t, 16)) == {"lower", "upper"} and set(reblock(t, 1024)) == {"exact"}
    r = reblock(t, 16)
    lo, up = (single_sequence_hits(r[k]).hit_ratio for k in ("lower", "upper"))
    exact512 = single_sequence_hits(t).hit_ratio
    assert lo <= up and lo >= exact512 - 1e-12    # finer blocks never lose the shared 512-token blocks
    # a Mooncake file's ids fit 512 -> --block-size 16 asks for re-blocking; a file recorded at 16 keeps 16
    assert plan_engine_block_size(MOONCAKE8, None, 16) == 512
    assert plan_engine_block_size(ROOT / "traces" / "sample_tokens_b16.jsonl", None, 16) is None
    assert plan_engine_block_size(MOONCAKE8, None, 512) is None
    with pytest.raises(ValueError, match="whole factor"):
        reblock(t, 48)
    bad = RequestBatch(0, 4, np.zeros(2), np.array([8, 8]), np.zeros(2, dtype=np.int64),
                       np.array([0, 2, 4]), np.array([1, 2, 3, 2], dtype=np.uint64))
    with pytest.raises(ValueError, match="not chained"):
        check_chained(bad)


def test_replay_block_size_reports_the_interval():
    import json

    from click.testing import CliRunner

    from pcs.cli.main import cli

    args = ["replay", str(MOONCAKE8), "--tier", "gpu=2000blocks", "--timing", "sequential", "-q"]
    res = CliRunner().invoke(cli, args + ["--block-size", "16", "--format", "json"])
    assert res.exit_code == 0, res.output
    p = json.loads(res.output)
    assert (p["trace_block_size"], p["block_size"]) == (512, 16) and [r["bound"] for r in p["rows"]] == ["lower", "upper"]
    lo, up = p["hit_ratio_interval"]
    assert lo <= up and p["lower"]["hit_ratio"] == lo and "between the two" in p["meaning"]
    # the 8 requests fit the 2,000-block tier: the replay equals the single-sequence ratio at both ends
    assert p["single_sequence_hit_ratio_interval"] == [pytest.approx(lo), pytest.approx(up)]
    table = CliRunner().invoke(cli, args + ["--block-size", "16"]).output
    assert "lower" in table and "upper" in table and "recorded at 512-token blocks" in table
    exact = json.loads(CliRunner().invoke(cli, args + ["--block-size", "1024", "--format", "json"]).output)
    assert exact["block_size"] == 1024 and any("re-blocked to 1024" in n for n in exact["notes"])
    res = CliRunner().invoke(cli, args + ["--block-size", "48"])
    assert res.exit_code == 2 and "whole factor" in res.output


@pytest.mark.parametrize("sub", ["events", "from-chat", "transform"])
def test_new_trace_commands_have_help_examples_and_readme_entries(sub):
    from click.testing import CliRunner

    from pcs.cli.main import cli

    res = CliRunner().invoke(cli, ["trace", sub, "--help"])
    assert res.exit_code == 0 and "Example" in res.output
    assert f"pcs trace {sub}" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("out", [["--requests-out", "r.csv"], ["--html", "r.html"]])
def test_an_interval_refuses_per_run_outputs_instead_of_skipping_them(tmp_path, out):
    # an interval is two bound replays, not one run: --requests-out exited 0 and wrote no file
    from click.testing import CliRunner

    from pcs.cli.main import cli

    target = tmp_path / out[1]
    res = CliRunner().invoke(cli, ["replay", str(MOONCAKE8), "--tier", "gpu=4blocks", "--block-size", "256", "-q",
                                   out[0], str(target)])
    assert res.exit_code == 2 and "gives an interval" in res.stderr and not target.exists()
