"""OpenAI-style chat logs -> token rows with a chat template and a local tokenizer.json, counted by hand."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.trace import open_trace, trace_stats

pytest.importorskip("tokenizers")
from pcs.trace.chat import chat_to_token_rows, load_template, load_tokenizer, read_chat_jsonl  # noqa: E402

FORMATS = Path(__file__).resolve().parents[2] / "traces" / "formats"
CHAT, TOK = FORMATS / "openai_chat_4.jsonl", FORMATS / "tiny_wordlevel_tokenizer.json"


def rows(template="chatml", salt=True):
    return list(chat_to_token_rows(read_chat_jsonl(CHAT), load_tokenizer(TOK), load_template(template), salt))


def test_token_counts_by_hand():
    # The word-level tokenizer splits on \w+ | [^\w\s]+ and knows <|im_start|>, <|im_end|> as single tokens.
    # ChatML: <|im_start|> role \n content <|im_end|> \n per message, then <|im_start|> assistant \n.
    # system "You are terse."           -> im_start system You are terse . im_end          = 7
    # user "What is a prefix cache?"     -> im_start user What is a prefix cache ? im_end   = 9
    # user "Name a cache policy."        -> im_start user Name a cache policy . im_end      = 8
    # assistant "It keeps KV blocks of shared prefixes." -> 2 + 7 words + "." = 11
    # user "And eviction?" -> 6; assistant "LRU." -> 5; user "Another?" -> 5; generation prompt -> 2
    r = rows()
    assert [len(x["token_ids"]) for x in r] == [7 + 9 + 2, 7 + 8 + 2, 7 + 9 + 11 + 6 + 2, 7 + 8 + 5 + 5 + 2]
    assert [x["timestamp"] for x in r] == [0, 1500, 4000, 6000]  # the last from response.created = 6 s
    assert [x["output_length"] for x in r] == [6, 4, 5, 2]     # usage, max_tokens, usage, response.usage
    assert [x["cache_salt"] for x in r] == ["alice", "bob", "alice", "bob"]
    # a later turn starts with the earlier turn's whole prompt (its generation prompt opens the answer)
    assert r[2]["token_ids"][:18] == r[0]["token_ids"] and r[3]["token_ids"][:17] == r[1]["token_ids"]


def test_reuse_at_4_token_blocks_by_hand(tmp_path):
    # 4-token blocks. Salted per tenant: alice's turn 2 (35 tok, cap 34 // 4 = 8) hits the 18 // 4 = 4 full blocks
    # of turn 1 -> 16 tokens; bob's turn 2 likewise 16; nothing crosses tenants: 32 of 97 tokens.
    # Unsalted: bob's first request also hits alice's blocks 0-1 (im_start system You are | terse . im_end
    # im_start), then differs ("user Name" vs "user What"): + 8 -> 40.
    from pcs.trace.chat import write_token_rows

    for salt, hits in ((True, 32), (False, 40)):
        out = tmp_path / f"t{salt}.jsonl"
        write_token_rows(rows(salt=salt), out)
        st = trace_stats(open_trace(out, block_size=4))
        assert (st["single_sequence_hit_tokens"], st["prompt_tokens_total"]) == (hits, 97)
    assert st["conversations"] == 2


def test_jinja_template_renders_like_the_builtin(tmp_path):
    pytest.importorskip("jinja2")
    # the ChatML template as Qwen2's tokenizer_config.json spells it (generation prompt included)
    cfg = {"chat_template": "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
                            "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
                            "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
           "eos_token": "<|im_end|>"}
    p = tmp_path / "tokenizer_config.json"
    p.write_text(json.dumps(cfg))
    assert [x["token_ids"] for x in rows(str(p))] == [x["token_ids"] for x in rows("chatml")]


def test_cli_from_chat_and_errors(tmp_path):
    out = tmp_path / "c.jsonl"
    res = CliRunner().invoke(cli, ["trace", "from-chat", str(CHAT), str(out), "--tokenizer", str(TOK), "-q"])
    assert res.exit_code == 0, res.output
    assert [json.loads(x)["token_ids"] for x in out.read_text().splitlines()] == [x["token_ids"] for x in rows()]
    res = CliRunner().invoke(cli, ["trace", "from-chat", str(CHAT), str(out), "--tokenizer", str(TOK),
                                   "--chat-template", "nosuch"])
    assert res.exit_code == 2 and "neither a built-in" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n')
    res = CliRunner().invoke(cli, ["trace", "from-chat", str(bad), str(out), "--tokenizer", str(TOK)])
    assert res.exit_code == 2 and "bad.jsonl:1: field 'messages'" in res.output
