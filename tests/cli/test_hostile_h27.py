"""Hostile input, round 27: a chat template that ignores the messages, and the one-line fixes.

Each test names the finding's kind; the expected values come from the rule stated in its comment.
"""
from __future__ import annotations

import shutil

from helpers import SMALL_TRACE, assert_one_line_error, invoke

FORMATS = SMALL_TRACE.parent


def test_a_chat_template_that_ignores_the_messages_is_refused(tmp_path, monkeypatch):
    # a token trace given as the template renders every chat as its own fixed text: 4 identical requests, fake
    # reuse. A template that loops over the messages renders two different chats differently: it runs.
    monkeypatch.chdir(tmp_path)
    shutil.copy(SMALL_TRACE, "not_a_template.jsonl")
    (tmp_path / "fixed.jinja").write_text("<s>system prompt</s>")
    (tmp_path / "loop.jinja").write_text("{% for m in messages %}{{ m.content }} {% endfor %}")
    args = ["trace", "from-chat", FORMATS / "openai_chat_4.jsonl", "out.jsonl",
            "--tokenizer", FORMATS / "tiny_wordlevel_tokenizer.json", "-q", "--chat-template"]
    for bad in ("not_a_template.jsonl", "fixed.jinja"):
        assert_one_line_error(invoke(*args, bad), f"--chat-template {bad}: renders two different chats as one text")
        assert not (tmp_path / "out.jsonl").exists()
    assert invoke(*args, "loop.jinja").exit_code == 0
    assert invoke(*args, "chatml").exit_code == 0
