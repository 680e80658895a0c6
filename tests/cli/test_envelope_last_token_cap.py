"""pcs envelope restores no more than replay hits: the last-token cap (docs/semantics.md §4).

A prompt of P tokens hits at most ((P - 1) // B) x B tokens, its last token being computed for the first
output's logits (vLLM ``get_computed_blocks``). Hand-worked, P = 8,192:
- B = 512: 8,191 // 512 = 15 blocks = 7,680 tokens restored, 512 computed;
- B = 16: 8,191 // 16 = 511 blocks = 8,176 tokens restored, 16 computed.
llama-3.1-70b KV: 80 layers x 8 KV heads x 128 dims x K and V x 2 B (bf16) = 327,680 B per token, one
TP-8 rank's share 40,960 B: D = 7,680 x 40,960 = 314,572,800 B; 8,176 x 40,960 = 334,888,960 B.
Prefill times from a linear measured CSV (0 -> 0 s, 16,384 tokens -> 16.384 s: 1 ms per token, whatever the
context): T_full = 8.192 s; T_remaining = 512 ms (B = 512) or 16 ms (B = 16).
"""
import json

import pytest
from click.testing import CliRunner

import pcs
from pcs.analysis.envelope import restore_for_tokens, restored_tokens
from pcs.blocks import BlockRules
from pcs.cli.main import cli
from pcs.model import get_model
from helpers import req


@pytest.fixture
def linear_csv(tmp_path):
    path = tmp_path / "linear.csv"
    path.write_text("tokens,seconds\n0,0\n16384,16.384\n")
    return str(path)


def _env(args, fmt="json"):
    out = CliRunner().invoke(cli, ["envelope", *args, "--bandwidth", "50GB/s", "--format", fmt])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout) if fmt == "json" else out.stdout


@pytest.mark.parametrize("bs, restored, computed", [(512, 7_680, 512), (16, 8_176, 16)])
def test_the_default_restore_of_a_prompt_is_its_best_case_hit(linear_csv, bs, restored, computed):
    args = ["--tokens", "8192", "--model", "llama-3.1-70b", "--block-size", str(bs), "--prefill-csv", linear_csv]
    d = _env(args)
    assert (d["prompt_tokens"], d["restore_tokens"], d["hit_cap_tokens"], d["restored_tokens"]) == \
        (8_192, None, restored, restored)
    assert d["restore_bytes"] == restored * 40_960
    assert d["full_prefill_s"] == pytest.approx(8.192, abs=1e-12)
    assert d["remaining_s"] == pytest.approx(computed / 1000, abs=1e-12)
    note, = [n for n in d["notes"] if n.startswith("restore: a full hit")]
    assert f"= {restored:,} tokens restored" in note and f"{computed:,} tokens (from the last whole block on)" in note
    assert "docs/semantics.md §4" in note
    text = _env(args, "table")
    assert f"= {restored:,} tokens, the best-case hit of the 8,192-token prompt (the other {computed:,} are computed)" \
        in text
    assert note in text


def test_an_explicit_restore_above_the_cap_is_capped_with_a_note(linear_csv):
    """--restore-tokens 8192 alone: the prompt defaults to 8,192 tokens, whose cap is 7,680 at B = 512."""
    d = _env(["--restore-tokens", "8192", "--model", "llama-3.1-70b", "--block-size", "512",
              "--prefill-csv", linear_csv])
    assert (d["restore_tokens"], d["restored_tokens"], d["restore_bytes"]) == (8_192, 7_680, 314_572_800)
    assert d["remaining_s"] == pytest.approx(0.512, abs=1e-12)
    assert any(n.startswith("--restore-tokens 8,192 capped at the 8,192-token prompt's hit cap") for n in d["notes"])


def test_a_restore_under_the_cap_is_untouched(linear_csv):
    """--tokens 8704: cap 8,703 // 512 = 16 blocks = 8,192 tokens (8,704 = 17 blocks would take the last token), so
    all 8,192 asked are restored, 512 computed, no note."""
    d = _env(["--restore-tokens", "8192", "--tokens", "8704", "--model", "llama-3.1-70b", "--block-size", "512",
              "--prefill-csv", linear_csv])
    assert (d["hit_cap_tokens"], d["restored_tokens"], d["restore_bytes"]) == (8_192, 8_192, 8_192 * 40_960)
    assert d["remaining_s"] == pytest.approx(0.512, abs=1e-12)
    assert not any("hit cap" in n or "full hit" in n for n in d["notes"])


def test_given_bytes_keep_d_and_cap_the_split(linear_csv):
    """--restore-bytes 1GB --tokens 8192: D as given; T_remaining after the capped 7,680 tokens (was 0)."""
    d = _env(["--restore-bytes", "1GB", "--tokens", "8192", "--block-size", "512", "--prefill-csv", linear_csv])
    assert (d["restore_bytes"], d["restored_tokens"], d["restore_bytes_scope"]) == (10**9, 7_680, "given")
    assert d["remaining_s"] == pytest.approx(0.512, abs=1e-12)


def test_python_api_takes_the_prompt_and_caps():
    assert [restored_tokens(8192, b, prompt_tokens=8192) for b in (512, 16)] == [7_680, 8_176]
    assert restored_tokens(8192, 512) == 8_192                       # no prompt: whole blocks only, as before
    llama = get_model("llama-3.1-8b")                                 # 32 x 8 x 128 x 2 x 2 B = 131,072 B per token
    assert restore_for_tokens(llama, 8192, 512, prompt_tokens=8192) == (7_680, 7_680 * 131_072)
    # gemma-3-27b TP 8 at B = 512, 15 blocks (semantics §13.1): full attention 15 x 5,242,880 B; the sliding
    # window's last 1,024 tokens, 2 blocks x 27,262,976 B; its page padding 2 x 4,194,304 B
    gemma = get_model("gemma-3-27b").with_tp(8)
    assert restore_for_tokens(gemma, 8192, 512, prompt_tokens=8192) == \
        (7_680, 15 * 5_242_880 + 2 * 27_262_976 + 2 * 4_194_304)


@pytest.mark.parametrize("bs", [512, 16])
def test_best_hit_tokens_is_what_a_replay_hits(bs):
    """The one rule: a prompt of 8,192 tokens sent twice through an ample cache hits best_hit_tokens the second time."""
    ids = list(range(1, 8192 // bs + 1))
    res = pcs.replay([req(ids, t=0, bs=bs), req(ids, t=1, bs=bs)], tiers=["gpu=2000blocks"], timing="sequential")
    assert res.summary.hit_tokens == BlockRules().best_hit_tokens(8192, bs) == {512: 7_680, 16: 8_176}[bs]
