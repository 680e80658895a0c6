"""Review 47a, F5: a Mooncake JSONL recorded at 16-token blocks, asked for another block size, is refused with the
way to re-block it (docs/traces-formats.md): convert to Parquet at the size that fits, then replay that -- and that
road gives the numbers of hashing the tokens at the asked size."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
B16 = ROOT / "traces" / "sample_tokens_b16.jsonl"        # sample_tokens.jsonl's ids at 16-token blocks
TOKENS = ROOT / "traces" / "sample_tokens.jsonl"
RUN = ["--tier", "gpu=30blocks", "--timing", "sequential", "--format", "json"]


def test_the_refusal_says_how_to_re_block(tmp_path):
    res = invoke("replay", B16, "--block-size", "64", *RUN)
    assert res.exit_code == 2 and res.stdout == "" and "Traceback" not in res.stderr
    # line 1: 105 tokens in 7 ids: ceil(105 / 16) = 7, ceil(105 / 64) = 2
    assert "(--block-size 16 fits); to replay it re-blocked to 64-token blocks, convert it to Parquet at " \
           "--block-size 16" in res.stderr
    assert res.stderr.rstrip().endswith("then pcs replay that with --block-size 64; elsewhere give --block-size 16")


def test_the_way_it_names_works_and_equals_hashing_the_tokens(tmp_path):
    out = tmp_path / "t.parquet"
    assert invoke("trace", "convert", B16, out, "--block-size", "16", "-q").exit_code == 0
    via = json.loads(invoke("replay", out, "--block-size", "64", *RUN).stdout)
    tokens = json.loads(invoke("replay", TOKENS, "--block-size", "64", *RUN).stdout)
    assert via["hit_ratio"] == tokens["hit_ratio"]


@pytest.mark.parametrize("args", [[], ["--block-size", "16"]])
def test_no_re_block_hint_without_another_size_asked(args):
    res = invoke("replay", B16, *args, *RUN)
    if args:
        assert res.exit_code == 0
    else:       # read at Mooncake's 512: the size that fits is the whole answer
        assert res.exit_code == 2 and res.stderr.rstrip().endswith("(--block-size 16 fits)")


def test_the_api_says_it_in_its_words():
    import pcs
    from pcs.errors import InputError

    # the API's own road (mend47e): pcs.replay has no block_size, so the way is open at 16, re-block to 64
    with pytest.raises(InputError, match=r"open it with pcs\.open_trace\(path, block_size=16\) .* "
                                         r"pcs\.trace\.reblock\.reblock\(trace, block_size=64\)"):
        pcs.replay(pcs.open_trace(str(B16), block_size=64), tiers=["gpu=30blocks"])


@pytest.mark.parametrize("command", [["trace", "stats"], ["curve"], ["compare"], ["trace", "convert"]])
def test_commands_that_do_not_re_block_say_which_does(tmp_path, command):
    """Only pcs replay re-blocks a block-hash trace (docs/traces-formats.md); the other commands asked another size
    of a 16-token Parquet said "convert the token trace instead", as if nothing re-blocked it (review 47c)."""
    parquet = tmp_path / "t.parquet"
    assert invoke("trace", "convert", B16, parquet, "--block-size", "16", "-q").exit_code == 0
    extra = [tmp_path / "o.parquet"] if command == ["trace", "convert"] else []
    res = invoke(*command, parquet, *extra, "--block-size", "64")
    assert res.exit_code == 2 and res.stdout == "" and "Traceback" not in res.stderr
    assert "written at block size 16; --block-size 64 cannot re-block its hashed ids here: pcs replay re-blocks " \
           "a block-hash trace" in res.stderr
    assert "give --block-size 16 or leave it out" in res.stderr
    assert not (tmp_path / "o.parquet").exists()


def test_a_size_replay_refuses_too_names_no_replay_road(tmp_path):
    """24 is neither a multiple nor a divisor of 16: pcs replay refuses it as well, so the refusal does not send the
    user there (review 47k)."""
    parquet = tmp_path / "t.parquet"
    assert invoke("trace", "convert", B16, parquet, "--block-size", "16", "-q").exit_code == 0
    res = invoke("trace", "stats", parquet, "--block-size", "24")
    assert res.exit_code == 2 and "re-blocked only by a whole factor of 16 (pcs replay); give --block-size 16" \
        in res.stderr and "exact at a multiple" not in res.stderr
    assert invoke("replay", parquet, "--block-size", "24").exit_code == 2     # the road it no longer names
