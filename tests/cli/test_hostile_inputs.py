"""Hostile inputs found by a tester: each is one line, exit 2 (the CLI) or a UserError (the API), naming the file,
line and field where there is one, and a point file that cannot be read is run again, never counted as done."""
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import pcs
from pcs.cli.main import cli
from pcs.errors import UserError
from pcs.sweep import read_results

HERE = Path(__file__).resolve().parent
DOZEN = HERE.parent / "sweep" / "dozen.toml"


def _one_line(args, *needles):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    lines = [ln for ln in result.output.splitlines() if ln.strip() and not ln.startswith("pcs: note:")]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("pcs: error:"), result.output
    assert "Traceback" not in result.output
    for n in needles:
        assert n in lines[0], result.output
    return lines[0]


def _unchained(tmp_path):
    p = tmp_path / "unchained.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}\n'
                 '{"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [3, 2]}\n')
    return p


@pytest.mark.parametrize("command", ["replay", "compare"])
@pytest.mark.parametrize("engine", ["lru-scan", "fast"])
def test_lru_scan_by_name_on_unchained_ids_is_one_line(tmp_path, command, engine):
    # request 2's second block (2) is cached after its first (3) missed: not chained
    _one_line([command, _unchained(tmp_path), "--tier", "gpu=4blocks", "--timing", "sequential", "--engine", engine],
              f"engine '{engine}' cannot run this replay", "not chained")


def test_lru_scan_by_name_on_unchained_ids_is_a_user_error_in_the_api(tmp_path):
    with pytest.raises(UserError, match="not chained"):
        pcs.replay(str(_unchained(tmp_path)), tiers=["gpu=4blocks"], timing="sequential", engine="lru-scan")


def _finished_sweep(tmp_path):
    plan = tmp_path / "plan.toml"
    text = DOZEN.read_text().replace('"../../traces/', f'"{HERE.parent.parent / "traces"}/')
    text = text.replace('policy = ["lru", "fifo", "slru"]', 'policy = ["lru"]').replace('to = "30GB"', 'to = "10GB"')
    plan.write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["sweep", "run", "--jobs", "1", str(plan), "-o", str(out)])
    assert result.exit_code == 0, result.output
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 2          # lru x {0 GB, 10 GB}
    return plan, out, files


def test_damaged_point_files_are_named_and_run_again(tmp_path):
    plan, out, files = _finished_sweep(tmp_path)
    good = files[0].read_bytes()
    files[0].write_bytes(good[:3000])                 # truncated: no footer
    _one_line(["sweep", "summarize", out], str(files[0]), "not a readable Parquet file (", "delete or move it")
    result = CliRunner().invoke(cli, ["sweep", "run", "--jobs", "1", str(plan), "-o", str(out)])
    assert result.exit_code == 0 and "2 points, 1 run (in-process), 1 already done" in result.output, result.output
    assert files[0].read_bytes()[:4] == b"PAR1" and len(files[0].read_bytes()) == len(good)
    (out / "deadbeef0000.parquet").write_bytes(b"\xde\xad\xbe\xef" * 8)   # garbage
    _one_line(["sweep", "summarize", out], str(out / "deadbeef0000.parquet"), "not a readable Parquet file (")
    with pytest.raises(UserError, match="deadbeef0000.parquet: not a readable Parquet file"):
        read_results(out)


def test_a_parquet_that_is_not_a_point_is_refused_not_counted(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, out, _ = _finished_sweep(tmp_path)
    pq.write_table(pa.table({"timestamp": [0.0, 1.0, 2.0], "input_length": [1, 2, 3]}), out / "abc.parquet")
    _one_line(["sweep", "summarize", out], str(out / "abc.parquet"), "not a sweep point file", "3 rows")


ROOT = HERE.parent.parent


@pytest.mark.parametrize("body,words", [
    ("{% for x in range(10**9) %}a{% endfor %}", "a call given 1,000,000,000"),      # before jinja2's MAX_RANGE
    ("{% for x in range(200000) %}a{% endfor %}", "Range too big"),                   # jinja2's own MAX_RANGE
    ("{{ 'a' * 10**9 }}", "'*' would build 1,000,000,000 characters/items"),       # 1 x 10**9 > 10**8
    ("{{ 10 ** 1000000000 }}", "'**' would compute a number of about 4,000,000,000 bits"),  # 10 is 4 bits
    ("{{ 1/0 }}", "division by zero"),
    ("{{ 'a'|center(1000000000) }}", "a filter given 1,000,000,000 (more than 100,000,000)"),
    ("{{ 'a'.ljust(1000000000) }}", "a call given 1,000,000,000 (more than 100,000,000)"),
    ("{{ '%1000000000s' % 'a' }}", "'%' with a width or precision of 9 digits or more"),
])
def test_runaway_or_failing_chat_templates_are_one_line(tmp_path, body, words):
    t = tmp_path / "t.jinja"
    t.write_text(body + "\n")
    _one_line(["trace", "from-chat", ROOT / "traces/formats/openai_chat_4.jsonl", tmp_path / "out.jsonl",
               "--tokenizer", ROOT / "traces/formats/tiny_wordlevel_tokenizer.json", "--chat-template", t],
              f"{t}: the chat template failed (", words)
    assert not (tmp_path / "out.jsonl").exists()


def test_bounded_operators_still_compute_small_values(tmp_path):
    from pcs.trace.chat import load_template

    t = tmp_path / "ok.jinja"
    t.write_text("{{ 'ab' * 3 }}|{{ 2 ** 10 }}|{{ 'x' + 'y' }}|{{ [1] + [2] }}|{{ 3 * 4 }}|{{ 2 * 'c' }}|"
                 "{{ 'ab'|center(6) }}|{{ '%5s' % 'x' }}|{{ 'a'.ljust(3) }}.|{{ 7 % 3 }}")
    assert load_template(str(t))([]) == "ababab|1024|xy|[1, 2]|12|cc|  ab  |    x|a  .|1"


def test_memory_exhaustion_is_one_line(monkeypatch):
    def exhausted(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr("pcs.cli.footprint.compute_footprint", exhausted)
    _one_line(["footprint", "--model", "llama-3.1-8b", "--tokens", "100"], "out of memory", "--block-size")


@pytest.mark.parametrize("native", ["auto", "python"])
def test_a_run_past_366_days_names_the_longest_output(tmp_path, native):
    p = tmp_path / "out1e9.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 1000000000, "hash_ids": [1, 2]}\n'
                 '{"timestamp": 1, "input_length": 1024, "output_length": 10, "hash_ids": [1, 3]}\n')
    # 10**9 decode steps of >= 6 ms each (8B weights read at 3.35 TB/s) are far past 366 days
    _one_line(["replay", p, "--tier", "gpu=100blocks", "--native", native], "ran past 366 days (31,622,400 s)",
              f"{p}'s longest output_length is 1,000,000,000 tokens (its request 1 of 2, in the trace's order)")


@pytest.mark.parametrize("cell,shown", [("４８０８", "'４８０８'"), ("4_808", "'4_808'"), ("4808.5", "'4808.5'")])
def test_azure_counts_take_ascii_digits_only(tmp_path, cell, shown):
    # review 47a: one rule for both CSV readers' token counts (pcs.trace.lengthonly.token_count): a whole number in
    # ASCII digits; 4808.0 is read as 4,808, as BurstGPT's reader always did
    p = tmp_path / "az.csv"
    p.write_text(f"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,{cell},10\n",
                 encoding="utf-8")
    _one_line(["trace", "stats", p], f"{p}:2: field 'ContextTokens': must be a whole number of tokens in ASCII "
              "digits 0-9, got", shown)


def test_azure_timestamp_takes_ascii_digits_only(tmp_path):
    p = tmp_path / "az.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n２０２3-11-16 18:17:03.9799600,4808,10\n", encoding="utf-8")
    _one_line(["trace", "stats", p], f"{p}:2: field 'TIMESTAMP'", "expected 'YYYY-MM-DD")


def test_ascii_numbers_by_hand():
    from pcs.units import ascii_float, ascii_int

    assert ascii_int(" 4808 ") == 4808 and ascii_int("-3") == -3
    assert ascii_float("472.0") == 472.0 and ascii_float("1.5e3") == 1500.0 and ascii_float(".5") == 0.5
    for bad in ("４８０８", "4_808", "", "1e3", "٣"):
        with pytest.raises(UserError, match="ASCII"):
            ascii_int(bad)
    for bad in ("nan", "inf", "4_7.2", "４７２", "1e"):
        with pytest.raises(UserError, match="ASCII"):
            ascii_float(bad)


def test_burstgpt_counts_take_ascii_digits_only(tmp_path):
    src = (ROOT / "traces/formats/burstgpt1_4.csv").read_text().splitlines()
    head, row = src[0], src[1].split(",")
    col = [c.strip() for c in head.split(",")].index("Request tokens")
    row[col] = "４７２"
    p = tmp_path / "b.csv"
    p.write_text(head + "\n" + ",".join(row) + "\n", encoding="utf-8")
    _one_line(["trace", "stats", p], f"{p}:2: field 'Request tokens'", "in ASCII digits 0-9, got '４７２'")


@pytest.mark.parametrize("prompt,tail", [
    # ceil(374 / B) == 24 for B in 16..16 (374/24 = 15.6 -> 16; 373/23 = 16.2 -> 16)
    (374, "was the trace recorded at another block size? (--block-size 16 fits)"),
    # B >= 10**18 / 2 is past --block-size's 1,048,576
    (10**18, "no block size in 1..1,048,576 gives 2 ids for 1,000,000,000,000,000,000 tokens"),
    (0, "an empty prompt has no blocks at any block size"),
])
def test_block_size_hint_is_in_range_or_absent(tmp_path, prompt, tail):
    n = 24 if prompt == 374 else 2
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": %d, "output_length": 1, "hash_ids": %s}\n'
                 % (prompt, list(range(1, n + 1))))
    line = _one_line(["replay", p], f"{p}:1: field 'hash_ids': has {n} ids but ceil({prompt:,} / block size 512)")
    assert line.endswith(tail), line


@pytest.mark.parametrize("value,hint", [("5", "give a unit: 5GB or 5blocks"), ("5.5", "give a unit: 5.5GB"),
                                        ("99999999999999999999", "too large with any unit (GB or blocks)")])
def test_capacity_unit_hint_names_only_what_fits(value, hint):
    _one_line(["curve", "--capacities", value], f"capacity '{value}' has no unit: {hint}")


def test_sweep_plan_with_a_bom_reads_and_an_empty_plan_is_refused(tmp_path):
    from pcs.sweep import load_plan

    plan = tmp_path / "bom.toml"
    plan.write_bytes(b"\xef\xbb\xbf" + b'kind = "replay"\n[axes]\npolicy = ["lru", "fifo"]\n')
    assert [p.options["policy"] for p in load_plan(plan).points] == ["lru", "fifo"]
    js = tmp_path / "bom.json"
    js.write_bytes(b"\xef\xbb\xbf" + b'{"kind": "replay", "axes": {"policy": ["lru"]}}')
    assert len(load_plan(js).points) == 1
    for name, body in (("empty.toml", b""), ("blank.toml", b"\n# nothing\n"), ("empty.json", b"{}")):
        (tmp_path / name).write_bytes(body)
        _one_line(["sweep", "run", tmp_path / name, "-o", tmp_path / "out"], f"{tmp_path / name}: the plan is empty")
    assert not (tmp_path / "out").exists()


def test_a_whole_float_of_bytes_is_taken_a_fraction_refused():
    # docs/semantics.md §10 worked example: D = 1 GB, T_full 100 ms, remaining 30 ms, overhead 5 ms:
    # B* = 1e9 B / 65 ms = 15,384,615,384.6 B/s; at 10 GB/s the read takes 100 ms, cached 135 ms (slower)
    r = pcs.envelope(1e9, 0.1, 0.03, 0.005, [1e10])
    assert r.restore_bytes == 10**9 and isinstance(r.restore_bytes, int)
    assert r.break_even_bps == pytest.approx(1e9 / 0.065, rel=1e-12)
    assert r.rows[0].cached_s == pytest.approx(0.135, rel=1e-12) and r.rows[0].verdict == "slower"
    for bad in (1.5, float("nan"), float("inf")):
        with pytest.raises(UserError, match=r"^restore_bytes=.*: must be an integer \(a whole number of bytes\)"):
            pcs.envelope(bad, 0.1, 0.03, 0.005, [1e10])


ENV = ["envelope", "--restore-bytes", "1GB", "--full-prefill", "100ms", "--remaining-compute", "30ms",
       "--overhead", "5ms", "--bandwidth"]
BUDGET_BW = ["--bandwidth-need", "1000GB/s"]


@pytest.mark.parametrize("args,words", [
    (ENV + ["1e-300GB/s"], "--bandwidth '1e-300GB/s': 1e-291 B/s is less than 1 B/s"),   # 1e-300 x 1e9 B/s
    (ENV + ["0GB/s"], "--bandwidth '0GB/s': a bandwidth must be > 0"),
    (["budget", "--capacity-need", "30GB", "--capacity-have", "0GB", *BUDGET_BW, "--bandwidth-have", "2000GB/s"],
     "--capacity-have '0GB': must be at least 1 B"),
    (["budget", "--capacity-need", "-30GB", "--capacity-have", "80GB", *BUDGET_BW, "--bandwidth-have", "2000GB/s"],
     "--capacity-need '-30GB': invalid size '-30GB': must not be negative"),
    (["budget", "--capacity-need", "30GB", "--capacity-have", "80GB", *BUDGET_BW, "--bandwidth-have", "0GB/s"],
     "--bandwidth-have '0GB/s': a bandwidth must be > 0"),
])
def test_envelope_and_budget_refusals_name_their_option(args, words):
    _one_line(args, words)


def test_cosmetic_messages_close_their_brackets_and_give_positions(tmp_path):
    g = tmp_path / "g.parquet"
    g.write_bytes(b"garbagegarbage")
    line = _one_line(["trace", "stats", g, "--trace-format", "parquet"],
                     f"{g}:1: not a Parquet file (it does not start with the Parquet magic bytes PAR1); format "
                     "detection: cannot detect the format: the first non-blank line is not JSON; pass --trace-format (")
    assert line.endswith(")") and line.count("(") == line.count(")"), line
    t = tmp_path / "t.json"
    t.write_text('{"a": 1, "b": "abc')               # the string opens at column 15 (1-based)
    _one_line(["report", t, "-o", tmp_path / "r.html"], f"{t}: line 1: not JSON (Unterminated string starting "
                                                         "at column 15)")


def test_hf_config_bound_prints_an_int_as_an_int(tmp_path):
    import json

    cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 10**9,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    _one_line(["footprint", "--model", p, "--tokens", "100"], "num_hidden_layers",
              "(pcs's bound), got 1,000,000,000")


def test_a_newline_in_a_trace_name_does_not_break_the_header(tmp_path):
    from pcs.report.table import shown_relative_path

    assert shown_relative_path("a\nb\t.jsonl") == "a\\nb\\t.jsonl" and shown_relative_path("traces/x.jsonl") == "traces/x.jsonl"
    p = tmp_path / "a\nb.jsonl"
    p.write_text((ROOT / "traces/sample_tokens.jsonl").read_text())
    result = CliRunner().invoke(cli, ["trace", "stats", str(p)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"{str(tmp_path)}/a\\nb.jsonl (tokens, 16-token blocks)", result.output


def test_ctrl_c_names_the_outputs_already_complete(tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("pcs.cli.replay.write_replay_outputs", interrupted)
    req, html = tmp_path / "req.parquet", tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["replay", "--tier", "gpu=200blocks", "--timing", "sequential", "-q",
                                      "--requests-out", str(req), "--html", str(html)])
    assert result.exit_code == 130, result.output
    assert result.output.strip().splitlines()[-1] == (f"pcs: interrupted; complete before it: {req} "
                                                      "(no other output was written)"), result.output
    assert req.exists() and not html.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]     # no temporary file left
