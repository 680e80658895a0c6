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


def test_budget_help_lists_no_option_it_refuses():
    # budget's transfer time uses a link's bandwidth and setup only; --link-iops / --link-io-size are refused
    help_text = invoke("budget", "--help").stdout
    assert "--link-bandwidth" in help_text and "--link-iops" not in help_text and "--link-io-size" not in help_text
    assert_one_line_error(invoke("budget", "--link-iops", "1.5e6", "--link", "pcie-gen5-x16", "--transfer-size",
                                 "100MB"), "pcs budget does not use --link-iops")


def test_deploy_hints_only_its_own_options():
    # 80 GB reserve on an 80 GB GPU: nothing fits; pcs deploy has no --tier, so its hint names none
    line = assert_one_line_error(invoke("deploy", "--model", "llama-3.1-70b", "--kv-reserve", "80GB"),
                                 "does not fit", "use more or larger GPUs (--tp, --gpu)")
    assert "--tier" not in line and "tiers" not in line


def test_a_replay_json_without_a_level_says_missing_not_null(tmp_path):
    import json

    r = invoke("replay", SMALL_TRACE, "--tier", "gpu=500blocks", "--tp", "1", "-q", "--format", "json")
    run = json.loads(r.stdout)
    for key in ("ideal_hit_ratio", "sequential_hit_ratio"):
        old = dict(run)
        old.pop(key)
        (tmp_path / "old.json").write_text(json.dumps(old))
        line = assert_one_line_error(invoke("report", tmp_path / "old.json", "-o", tmp_path / "o.html"),
                                     f"field '{key}' is missing")
        assert "null" not in line
        old[key] = None
        (tmp_path / "old.json").write_text(json.dumps(old))
        assert_one_line_error(invoke("report", tmp_path / "old.json", "-o", tmp_path / "o.html"), "got null")
    assert not (tmp_path / "o.html").exists()


def test_a_prefill_csv_row_with_another_field_count_is_refused(tmp_path):
    # header tokens,seconds: 2 fields; "1024,0.1,5" has 3 (a value in a column the header does not have)
    for row, n in (("1024,0.1,5", 3), ("1024", 1)):
        (tmp_path / "p.csv").write_text(f"tokens,seconds\n512,0.05\n{row}\n")
        assert_one_line_error(invoke("envelope", "--prefill-csv", tmp_path / "p.csv", "--restore-bytes", "1GB",
                                     "--bandwidth", "10GB/s", "--tokens", "1024"),
                              f"p.csv:3: expected 2 fields (tokens,seconds), got {n}")
