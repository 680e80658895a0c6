"""Review 47a, F6: CSV detection takes a header as the readers take it -- quoted or not, the columns by name in any
order -- and both CSV readers (Azure, BurstGPT) read it by one rule: columns by name, token counts whole numbers
in ASCII digits (4808 or 4808.0). A CSV header of no known format is refused as a CSV header, naming the values
of --trace-format."""
from __future__ import annotations

import json

import pytest

from helpers import invoke

ROW_AZ = "2023-11-16 18:17:03.9799600"


def _stats(tmp_path, text, *args):
    p = tmp_path / "t.csv"
    p.write_text(text, encoding="utf-8")
    return p, invoke("trace", "stats", p, *args, "--format", "json")


@pytest.mark.parametrize("text, fmt, prompt", [
    (f'"TIMESTAMP","ContextTokens","GeneratedTokens"\n"{ROW_AZ}","4808","10"\n', "azure", 4808),       # quoted
    (f"GeneratedTokens,ContextTokens,TIMESTAMP\n10,4808,{ROW_AZ}\n", "azure", 4808),                    # reordered
    (f"TIMESTAMP,GeneratedTokens,NumImages,ContextTokens\n{ROW_AZ},10,2,4808\n", "azure", 4808),        # 2025, reordered
    ("Log Type,Total tokens,Response tokens,Request tokens,Model,Timestamp\nAPI log,25,5,20,ChatGPT,7\n", "burstgpt", 20),
    ('"Timestamp","Model","Request tokens","Response tokens","Total tokens","Log Type"\n'
     '"7","ChatGPT","20","5","25","API log"\n', "burstgpt", 20),
])
def test_detection_reads_the_header_as_the_reader_does(tmp_path, text, fmt, prompt):
    _, res = _stats(tmp_path, text)
    assert res.exit_code == 0, res.stderr
    st = json.loads(res.stdout)
    assert (st["format"], st["requests"], st["prompt_tokens_max"]) == (fmt, 1, prompt)


@pytest.mark.parametrize("text, prompt, output", [
    (f"TIMESTAMP,ContextTokens,GeneratedTokens\n{ROW_AZ},4808.0,10.0\n", 4808, 10),
    ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n7,ChatGPT,40.0,5,45,API log\n", 40, 5),
])
def test_both_readers_take_a_whole_count_written_with_a_zero_fraction(tmp_path, text, prompt, output):
    _, res = _stats(tmp_path, text)
    assert res.exit_code == 0, res.stderr
    st = json.loads(res.stdout)
    assert (st["prompt_tokens_max"], st["output_tokens_max"]) == (prompt, output)


@pytest.mark.parametrize("header, field", [("TIMESTAMP,ContextTokens,GeneratedTokens", "ContextTokens"),
                                           ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
                                            "Request tokens")])
def test_both_readers_refuse_a_fraction_in_one_words(tmp_path, header, field):
    row = f"{ROW_AZ},4808.5,10" if header.startswith("TIMESTAMP") else "7,ChatGPT,4808.5,5,45,API log"
    p, res = _stats(tmp_path, f"{header}\n{row}\n")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip() == (f"pcs: error: {p}:2: field '{field}': must be a whole number of tokens in ASCII "
                                  "digits 0-9, got '4808.5'")


def test_an_unknown_csv_header_is_named_as_csv(tmp_path):
    p, res = _stats(tmp_path, "time,in,out\n1,2,3\n")
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    assert "the first non-blank line looks like a CSV header (3 columns)" in res.stderr
    assert "pass --trace-format (mooncake, bailian, tokens, parquet, azure, burstgpt: azure or burstgpt for CSV)" \
        in res.stderr
    assert "is not JSON" not in res.stderr


def test_a_reordered_azure_header_missing_a_column_is_the_reader_s_refusal(tmp_path):
    p, res = _stats(tmp_path, f"GeneratedTokens,TIMESTAMP\n10,{ROW_AZ}\n")
    assert res.exit_code == 2
    assert res.stderr.startswith(f"pcs: error: {p}:1: Azure header lacks 'ContextTokens'; expected "
                                 "TIMESTAMP,ContextTokens,GeneratedTokens or ")
    assert res.stderr.rstrip().endswith("(the columns in any order)")


@pytest.mark.parametrize("cell", ["1e3", "1E3", ".5e3", "3.74e2", "374.", "1e-0", "0e5", "-0.0", "-0", "+5",
                                  "4808.0000000000001", "0x10", "1_000", "\u0664"])
@pytest.mark.parametrize("header", ["TIMESTAMP,ContextTokens,GeneratedTokens",
                                    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"])
def test_both_readers_refuse_a_count_not_written_as_its_digits(tmp_path, header, cell):
    """docs/traces-formats.md: a whole number in ASCII digits, 4808 or 4808.0. The first one-rule version read the
    cell as a float, so an exponent, a bare point, a sign or a fraction of 1e-13 passed (review 47k: Azure took
    1e3 as 1000 and 4808.0000000000001 as 4808)."""
    az = header.startswith("TIMESTAMP")
    row = f"{ROW_AZ},{cell},10" if az else f"7,ChatGPT,{cell},5,45,API log"
    p, res = _stats(tmp_path, f"{header}\n{row}\n")
    assert res.exit_code == 2 and res.stdout == "" and "Traceback" not in res.stderr
    assert "must be a whole number of tokens in ASCII digits 0-9" in res.stderr


def test_a_count_past_2_53_is_read_exactly(tmp_path):
    """9,007,199,254,740,993 = 2**53 + 1 has no float; the refusal quotes the count itself (it quoted ...992)."""
    p, res = _stats(tmp_path, f"TIMESTAMP,ContextTokens,GeneratedTokens\n{ROW_AZ},9007199254740993,10\n")
    assert res.exit_code == 2 and "9007199254740993" in res.stderr.replace(",", "")
