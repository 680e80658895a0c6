"""What the cache groups' hierarchy does not model is refused, not run with other numbers: arc and 2q (their
ghost lists; on one full-attention group the `hybrid` engine differed from the reference: 34 against 33 block
misses on a 6-request trace) and admission policies other than retain (reuse, selective and tinylfu were listed
on the tier and silently not applied: 0 hit blocks where the reference has 2)."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl"


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _trace(tmp_path) -> Path:
    # requests 0 and 2 share blocks 1, 2; request 1 (blocks 3, 4) pushes them out of a 2-block GPU tier
    rows = [{"timestamp": t * 1000, "input_length": 1024, "output_length": 1, "hash_ids": ids}
            for t, ids in enumerate([[1, 2], [3, 4], [1, 2], [3, 4], [1, 2]])]
    p = tmp_path / "adm.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


@pytest.mark.parametrize("admit", ["cpu=reuse:2", "cpu=selective:1", "cpu=tinylfu"])
def test_the_hybrid_engine_refuses_admission_it_does_not_apply(tmp_path, admit):
    from helpers import assert_one_line_error

    args = ("replay", _trace(tmp_path), "--tier", "gpu=2blocks", "--tier", "cpu=4blocks", "--admit", admit,
            "--timing", "sequential", "-q")
    assert_one_line_error(_run(*args, "--engine", "hybrid"), "engine 'hybrid' cannot run", "admission")
    # the reference applies it: with reuse:2 the CPU tier refuses blocks 1, 2 when request 1 demotes them (first
    # use) and stores them when request 3 demotes them (second use), so only request 4 hits; its 1,024 tokens are
    # 2 blocks of 512 and the last token is recomputed, so 1 hit block, from the CPU tier
    if admit == "cpu=reuse:2":
        s = json.loads(_run(*args, "--format", "json").stdout)
        assert [t["hit_blocks"] for t in s["tiers"]] == [0, 1]


@pytest.mark.parametrize("policy", ["arc", "2q"])
def test_a_hybrid_model_on_arc_or_2q_is_refused(policy):
    from helpers import assert_one_line_error

    assert_one_line_error(_run("replay", SAMPLE, "--model", "gpt-oss-120b", "--policy", policy, "-q"),
                          "hybrid model", "arc and 2q")


def test_a_hybrid_model_on_lru_still_runs():
    r = _run("replay", SAMPLE, "--model", "gpt-oss-120b", "-q", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["engine"] in ("compiled-hybrid", "hybrid")
