"""One committed sample per published format (traces/formats/, sources in traces/README.md), read with
exact statistics worked out by hand in the comments."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import file_input_error
from pcs.cli.main import cli
from pcs.errors import InputError
from pcs.trace import open_trace, trace_stats
from pcs.trace.azure import parse_stamp
from pcs.trace.lengthonly import ReuseModel

FORMATS_DIR = Path(__file__).resolve().parents[2] / "traces" / "formats"


@pytest.fixture()
def run():
    def _run(*args, code=0):
        res = CliRunner().invoke(cli, [str(a) for a in args])
        assert res.exit_code == code, res.output
        return res
    return _run


def stats(name, **kw):
    return trace_stats(open_trace(FORMATS_DIR / name, **kw))


def test_mooncake_real_excerpt_by_hand():
    # Lines 2, 31, 41, 67, 134, 138, 192, 262 of FAST25-release/traces/conversation_trace.jsonl, 512-token blocks.
    # Single-sequence walk (full blocks only, hits capped at (p - 1) // 512 blocks):
    #  7322 tok, 15 ids, nothing seen: 0      | 1477 [0,820,821]: block 0 seen: 512
    #  1902 [0,975..977]: 512                  | 2651 [0,1541..1545]: 512
    #  3024 [0,1541..1544,3753]: 5 seen: 2560  | 7833 [0,14..26,3868,3869]: 14 seen: 7168
    #  2103 [0,820,5023..5025]: 2 seen: 1024   | 1902 [0,975,976,977] again: cap 3 blocks: 1536
    st = stats("mooncake_conv_8.jsonl")
    assert (st["format"], st["block_size"], st["requests"], st["reuse"]) == ("mooncake", 512, 8, "recorded")
    assert st["prompt_tokens_total"] == 7322 + 1477 + 1902 + 2651 + 3024 + 7833 + 2103 + 1902 == 28214
    assert st["block_accesses"] == 15 + 3 + 4 + 6 + 6 + 16 + 5 + 4 == 59
    assert st["distinct_blocks"] == 15 + 2 + 3 + 5 + 1 + 2 + 3 == 31
    assert st["single_sequence_hit_tokens"] == 512 * 3 + 2560 + 7168 + 1024 + 1536 == 13824
    assert st["single_sequence_hit_ratio"] == 13824 / 28214
    assert st["requests_with_hit_share"] == 7 / 8
    assert st["time_span_s"] == 90.0


def test_bailian_recreated_sample_by_hand():
    # 16-token blocks; chat 3 continues chat 1, chat 5 continues chat 3; 4 and 6 send the same 16-token image prompt.
    # Walk: 40 tok [1,2,3]: 0 | 20 [4,5]: 0 | 70 [1,2,6,7,8], cap 4: 1,2 seen -> 32 | 16 [9]: cap 0 -> 0
    #       100 [1,2,6,7,10,11,12], cap 6: 1,2,6,7 seen (70 // 16 = 4 cached) -> 64 | 16 [9]: cap 15 // 16 = 0 -> 0
    st = stats("bailian_6.jsonl")
    assert (st["format"], st["block_size"], st["requests"]) == ("bailian", 16, 6)
    assert st["prompt_tokens_total"] == 262 and st["block_accesses"] == 19 and st["distinct_blocks"] == 12
    assert st["single_sequence_hit_tokens"] == 96 and st["single_sequence_hit_ratio"] == 96 / 262
    assert st["conversations"] == 4  # {1, 3, 5}, {2}, {4}, {6} through parent_chat_id
    assert st["time_span_s"] == 9.0 - 0.5
    types = [r.type for r in open_trace(FORMATS_DIR / "bailian_6.jsonl")]
    assert types == ["text", "search", "text", "image", "text", "image"]


@pytest.mark.parametrize("name, n, tokens, blocks16, span_s", [
    # 2023 (real first 8 rows, CRLF line ends): 4808+3180+110+7433+34+374+6985+34; ceil(/16) = 301+199+7+465+3+24+437+3;
    # span 18:17:04.9960010 - 18:17:03.9799600
    ("azure2023_code_8.csv", 8, 22958, 1439, 1.0160410),
    # 374+396+879+91+91+381+1313+388; 24+25+55+6+6+24+83+25; 18:15:54.9320210 - 18:15:46.6805900
    ("azure2023_conv_8.csv", 8, 3913, 248, 8.2514310),
    # 2024 (+00:00 stamps): 2162+2399+76+2376+7670; 136+150+5+149+480; .083890 - .009930
    ("azure2024_code_5.csv", 5, 14683, 920, 0.073960),
    ("azure2024_conv_5.csv", 5, 5084, 320, 0.247116),     # .248279 - .001163
    # 2025 multimodal (ISO 'T...Z' stamps, NumImages column): 770+949+964+78+1724; 12:00:07.566 - 12:00:00.269
    ("azure2025_multimodal_5.csv", 5, 4485, 283, 7.297),
])
def test_azure_every_year_by_hand(name, n, tokens, blocks16, span_s):
    st = stats(name)
    assert (st["format"], st["block_size"], st["requests"]) == ("azure", 16, n)
    assert st["prompt_tokens_total"] == tokens and st["block_accesses"] == blocks16
    assert st["time_span_s"] == pytest.approx(span_s, abs=1e-6)
    # lengths only: no reuse unless one is assumed, and the report says so
    assert st["single_sequence_hit_ratio"] == 0.0 and st["distinct_blocks"] == blocks16
    assert st["reuse"].startswith("synthesised: none")


def test_azure_stamp_spellings_agree():
    # the notebook of 2024 notes both '...00:00:00.001163+00:00' and '...00:00:00+00:00'
    assert parse_stamp("2024-05-12 00:00:00+00:00", "f", 2) == parse_stamp("2024-05-12T00:00:00Z", "f", 2)
    assert parse_stamp("2024-05-12 02:00:00+02:00", "f", 2) == parse_stamp("2024-05-12 00:00:00", "f", 2)
    assert parse_stamp("2024-05-12 00:00:00.5", "f", 2) - parse_stamp("2024-05-12 00:00:00", "f", 2) == 0.5
    with pytest.raises(InputError, match="TIMESTAMP"):
        parse_stamp("12/05/2024 00:00", "f", 2)


def test_azure_system_prompt_what_if_by_hand():
    # a 512-token system prompt shared by all: 32 full 16-token blocks; each of the 7 later requests hits
    # min(32, its cap) blocks. Prompts of the 2023 code sample: 4808, 3180, 110, 7433, 34, 374, 6985, 34.
    # 110 tok: 110 <= 512, its 6 full blocks (96 tok) lie in the prompt -> cap (109 // 16 = 6) -> 96;
    # 34 tok: 2 full blocks -> cap 33 // 16 = 2 -> 32; 374: 23 full, cap 23 -> 368; the others 512 each.
    st = stats("azure2023_code_8.csv", reuse=ReuseModel(system_prompt_tokens=512))
    assert st["single_sequence_hit_tokens"] == 512 + 96 + 512 + 32 + 368 + 512 + 32
    assert st["reuse"] == "synthesised: every request of a model starts with one 512-token system prompt"


def test_burstgpt_release1_schema():
    st = stats("burstgpt1_4.csv")  # 472 + 1087 + 417 + 300 tokens; 5 s .. 120 s; no Session ID column
    assert (st["format"], st["requests"], st["prompt_tokens_total"], st["time_span_s"]) == ("burstgpt", 4, 2276, 115.0)
    assert st["single_sequence_hit_ratio"] == 0.0
    assert [r.output_tokens for r in open_trace(FORMATS_DIR / "burstgpt1_4.csv")] == [18, 230, 276, 0]


def test_burstgpt_release3_sessions_by_hand():
    # 16-token blocks, ids dense from 0. ChatGPT session A: 40 tok -> [0,1,2]; its conversation 40 + 10 = 50
    # tokens keeps [0,1] and a new id 3 for tokens 32-47. API row (no session): 20 tok -> [4,5].
    # A again, 60 tok: shares min(60, 50) // 16 = 3 blocks [0,1,3] + new [6]; its conversation (72 tokens)
    # takes new id 7 for tokens 48-63. GPT-4 session B: 33 -> [8,9,10]; its conversation (33 + 0 tokens)
    # keeps [8,9]; B again, 40 tok: [8,9] + [11].
    # Walk (cap (p-1)//16): A2: 0,1 seen, 3 never a prompt block -> 32; B2: 8,9 -> 32. 64 of 193 tokens.
    t = open_trace(FORMATS_DIR / "burstgpt3_5.csv")
    assert [r.block_hashes.tolist() for r in t] == [[0, 1, 2], [4, 5], [0, 1, 3, 6], [8, 9, 10], [8, 9, 11]]
    assert [r.session_id for r in t] == [0, -1, 0, 1, 1] and [r.type for r in t][1] == "API log"
    st = trace_stats(t)
    assert st["single_sequence_hit_tokens"] == 64 and st["prompt_tokens_total"] == 193
    assert st["conversations"] == 3 and "resends its conversation" in st["reuse"]
    # without the session rule, nothing is shared
    assert stats("burstgpt3_5.csv", reuse=ReuseModel(sessions=False))["single_sequence_hit_tokens"] == 0


def test_burstgpt_system_prompt_is_per_model_by_hand():
    # + a 16-token system prompt per model: ChatGPT's id 0, GPT-4's id 7 (allocated on first use, after
    # A2's conversation took 6). A1 [0,1,2]; API [0,4] hits block 0 (cap 19 // 16 = 1): 16; A2 [0,1,3,5]: 0,1 -> 32;
    # B1 [7,8,9]: GPT-4 never saw a prompt before: 0; B2 [7,8,10]: 32. 80 tokens.
    t = open_trace(FORMATS_DIR / "burstgpt3_5.csv", reuse=ReuseModel(system_prompt_tokens=16))
    assert [r.block_hashes.tolist() for r in t] == [[0, 1, 2], [0, 4], [0, 1, 3, 5], [7, 8, 9], [7, 8, 10]]
    assert trace_stats(t)["single_sequence_hit_tokens"] == 80


def test_length_only_detection_errors_and_skip(tmp_path):
    text = ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
            "5,ChatGPT,472,18,490,Conversation log\n6,ChatGPT,x,1,1,API log\n4,GPT-4,1,1,2,API log\n")
    e = file_input_error(tmp_path, "b.csv", text, lambda p: list(open_trace(p)))
    assert (e.line, e.field) == (3, "Request tokens")
    bad = tmp_path / "b.csv"
    t = open_trace(bad, on_error="skip")  # line 3 is bad, line 4 goes back in time
    assert [r.prompt_tokens for r in t] == [472] and t.skipped == 2
    t = open_trace(bad, on_error="skip", sort=True)
    assert [r.prompt_tokens for r in t] == [1, 472] and t.skipped == 1
    hdr = tmp_path / "h.csv"
    hdr.write_text("TIMESTAMP,Tokens\n2023-11-16 18:15:46.6805900,3\n")
    with pytest.raises(InputError, match="Azure header lacks 'ContextTokens', 'GeneratedTokens'; expected"):
        list(open_trace(hdr))


def test_cli_reads_every_sample(run):
    for p in sorted(FORMATS_DIR.iterdir()):
        if p.suffix in (".csv",) or p.name in ("mooncake_conv_8.jsonl", "bailian_6.jsonl"):
            out = run("trace", "stats", str(p), "--format", "json").output
            assert '"requests"' in out, p.name
    out = run("trace", "stats", str(FORMATS_DIR / "burstgpt3_5.csv")).output
    assert "prefix reuse synthesised" in out


def test_synthesised_reuse_survives_parquet_and_is_noted(tmp_path, run):
    out = tmp_path / "b.parquet"
    res = run("trace", "convert", str(FORMATS_DIR / "burstgpt3_5.csv"), str(out))
    assert "note: prefix reuse synthesised" in res.output
    back = open_trace(out)
    assert back.reuse.startswith("synthesised: a session's request resends")
    assert trace_stats(back)["single_sequence_hit_tokens"] == 64   # the same ids as read from the CSV
    assert open_trace(FORMATS_DIR / "mooncake_conv_8.jsonl").reuse == "recorded"
