"""Token counts of length-only traces (Azure, BurstGPT) are bounded (docs/traces-formats.md).

pcs materialises one synthesised id per block of these counts, so a count past
``MAX_LENGTH_TOKENS`` (2**24 = 16,777,216, chosen in that doc) must be one
``FILE:LINE: field 'X'`` error with exit 2 -- never a MemoryError -- on every
path that reads them: replay, trace stats, trace convert, trace synth --azure-csv.
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.trace.azure import read_azure_csv
from pcs.trace.burstgpt import read_burstgpt_rows

AZ_HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
BG_HEAD = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
HUGE = ["16777217", "10000000000000", "9223372036854775808", "99999999999999999999"]  # 2**24 + 1 and beyond


def azure(tmp_path, ctx: str, gen: str = "44"):
    p = tmp_path / "big.csv"
    p.write_text(AZ_HEAD + "2023-11-16 18:15:46.6805900,100,5\n" + f"2023-11-16 18:15:47.0000000,{ctx},{gen}\n")
    return p


def burstgpt(tmp_path, req: str, resp: str = "18"):
    p = tmp_path / "bg.csv"
    p.write_text(BG_HEAD + f"5,ChatGPT,{req},{resp},490,Conversation log\n")
    return p


def _one_error(res, path, line: int, field: str):
    assert res.exit_code == 2, res.output
    msg = res.output.strip()
    assert "Traceback" not in msg and "MemoryError" not in msg, msg
    assert f"{path}:{line}: field '{field}': " in msg, msg
    assert "16,777,216" in msg, msg


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("cmd", [["replay", "-q", "--tier", "gpu=10GB"], ["trace", "stats"]])
def test_azure_context_past_bound_is_one_error(tmp_path, value, cmd):
    p = azure(tmp_path, value)
    _one_error(CliRunner().invoke(cli, cmd + [str(p)]), p, 3, "ContextTokens")


def test_azure_generated_past_bound_and_convert(tmp_path):
    p = azure(tmp_path, "100", "16777217")
    out = tmp_path / "x.parquet"
    _one_error(CliRunner().invoke(cli, ["trace", "convert", "-q", str(p), str(out)]), p, 3, "GeneratedTokens")
    assert not out.exists()


def test_synth_from_azure_csv_past_bound(tmp_path):
    p = azure(tmp_path, "10000000000000")
    res = CliRunner().invoke(cli, ["trace", "synth", str(tmp_path / "s.jsonl"), "--azure-csv", str(p)])
    _one_error(res, p, 3, "ContextTokens")


@pytest.mark.parametrize("field,req,resp", [("Request tokens", "9223372036854775808", "18"),
                                            ("Response tokens", "5", "16777217")])
def test_burstgpt_past_bound(tmp_path, field, req, resp):
    p = burstgpt(tmp_path, req, resp)
    _one_error(CliRunner().invoke(cli, ["replay", "-q", "--tier", "gpu=10GB", str(p)]), p, 2, field)
    out = tmp_path / "x.parquet"
    _one_error(CliRunner().invoke(cli, ["trace", "convert", "-q", str(p), str(out)]), p, 2, field)


def test_bound_itself_is_accepted(tmp_path):
    # 2**24 exactly is inside the bound: the readers return it unchanged.
    assert [r[1] for r in read_azure_csv(azure(tmp_path, "16777216"))] == [100, 16777216]
    assert [r.prompt_tokens for r in read_burstgpt_rows(burstgpt(tmp_path, "16777216"))] == [16777216]


def test_synth_length_scale_past_bound_is_one_error(tmp_path):
    # 700-token system prompt median (SynthSpec default) x 1e6 = 7e8 tokens > 2**24: refused
    # before any draw, instead of allocating 7e8 uint32 tokens.
    res = CliRunner().invoke(cli, ["trace", "synth", str(tmp_path / "s.jsonl"), "--length-scale", "1000000",
                                   "--requests", "3"])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "--length-scale" in res.output and "16,777,216" in res.output
    assert not (tmp_path / "s.jsonl").exists()


def test_synth_draws_stop_at_the_bound():
    # median 2**24 / 2 with sigma 3: P(draw > 2**24) = P(z > ln 2 / 3) ~ 0.41, so 200 draws exceed it
    # unless clipped; every length must be <= 2**24.
    import numpy as np

    from pcs.trace.synth import SynthSpec, _Gen
    g = _Gen(SynthSpec(seed=3, length_scale=1.0, sigma=3.0))
    lens = [g.length(2 ** 23) for _ in range(200)]
    assert max(lens) == 2 ** 24 and min(lens) >= 1
    assert np.mean([n == 2 ** 24 for n in lens]) > 0.2
