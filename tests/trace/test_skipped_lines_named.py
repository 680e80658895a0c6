"""``--on-error skip`` names the lines (Parquet: rows) it skipped: the first 5 (``pcs.trace.hashids.SKIPPED_NAMED``),
each as ``--on-error raise`` would refuse it (file, line or row, field, problem), then how many more.

Before, a skipping read said only how many it skipped ("1 bad trace line was skipped (--on-error skip)"), so a user
who wanted to know which lines re-ran with ``--on-error raise`` once per bad line.

Every expected value is worked out by hand from the readers' documented rules (docs/traces.md, docs/semantics.md
§9 "Bounds") for files written here line by line:

- the mixed file ``m.jsonl`` (Mooncake, 512-token blocks, millisecond timestamps): line 1 fine (t 0); line 2
  ``"input_length": "x"`` -> ``field 'input_length': must be an integer, got "x"``; line 3 fine (t 2000); line 4
  timestamp -5 after 2000 -> ``field 'timestamp': decreases (-5 after 2000); use sort= to reorder`` (a negative
  arrival is taken, docs/semantics.md: it only must not go back); line 5 no ``hash_ids`` -> ``field 'hash_ids':
  missing``; line 6 output 2**62 = 4,611,686,018,427,387,904 under the step scheduler's bound -> ``field
  'output_length': 4,611,686,018,427,387,904 tokens is past what the step scheduler models ...``; line 7 the text
  ``{"timestamp": 7, "input_length": 1024`` (38 characters, the object never closed: json's "Expecting ','
  delimiter" at column 38) -> ``invalid JSON: Expecting ',' delimiter at column 38``, no field; then 60 fine lines
  (enough for the shortcut parsers to take a chunk, as tests/trace/test_row_limits.py writes them).
- more than 5: 8 lines with a negative input length (-1 .. -8) among fine ones -> the first 5 named, "... and 3
  more".
"""
from __future__ import annotations

import json

import pytest

from pcs import _native
from pcs.trace import open_trace
from pcs.trace.hashids import MOONCAKE, SKIPPED_NAMED, ReadState, SkippedLine, read_hashid_jsonl
from pcs.trace.rowlimits import STEP_LIMITS
from tests.helpers import invoke, pcs_parquet

PATHS = [False, "pyarrow", "simdjson"] + (["native"] if _native.built("jsonrows") else [])
LIMIT = 4611686018427387904          # 2**62, written out
STEP_WHY = ("4,611,686,018,427,387,904 tokens is past what the step scheduler models (an output length below 2**62 = "
            "4,611,686,018,427,387,904 tokens; docs/semantics.md §9): use compute_mode='infinite' or "
            "timing='sequential' for such a trace")


def _row(ts: int, i: int, **over) -> str:
    # 1024 tokens at 512-token blocks = 2 ids of its own, (2i, 2i + 1)
    row = {"timestamp": ts, "input_length": 1024, "output_length": 10, "hash_ids": [2 * i, 2 * i + 1]}
    row.update(over)
    return json.dumps({k: v for k, v in row.items() if v is not None})


def _mixed(tmp_path):
    lines = [_row(0, 0), _row(1000, 1, input_length="x"), _row(2000, 2), _row(-5, 3),
             _row(4000, 4, hash_ids=None), _row(5000, 5, output_length=LIMIT),
             '{"timestamp": 7, "input_length": 1024'] + [_row(7000 + 1000 * i, 10 + i) for i in range(60)]
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


MIXED = [SkippedLine("m.jsonl", 2, "input_length", 'must be an integer, got "x"'),
         SkippedLine("m.jsonl", 4, "timestamp", "decreases (-5 after 2000); use sort= to reorder"),
         SkippedLine("m.jsonl", 5, "hash_ids", "missing"),
         SkippedLine("m.jsonl", 6, "output_length", STEP_WHY),
         SkippedLine("m.jsonl", 7, None, "invalid JSON: Expecting ',' delimiter at column 38")]


@pytest.mark.parametrize("fast", PATHS)
@pytest.mark.parametrize("bs", [512, 600])    # 600: no power of two, the compiled checks' scalar loop (512: AVX2)
def test_every_read_path_names_the_same_lines_in_order(tmp_path, fast, bs):
    p = _mixed(tmp_path)
    state = ReadState(limits=STEP_LIMITS)
    n = sum(len(b) for b in read_hashid_jsonl(p, "m.jsonl", MOONCAKE, bs, state, "skip", fast=fast))
    assert (n, state.skipped) == (62, 5)
    assert list(state.named) == MIXED
    assert state.named[4].message == "m.jsonl:7: invalid JSON: Expecting ',' delimiter at column 38"


def _values_only(tmp_path, n_bad: int):
    # 60 fine lines; line 3k (k = 1 .. n_bad) has input length -k: JSON every shortcut parser reads, which the value
    # checks (numpy, or the compiled row_checks) flag
    lines = [_row(1000 * i, i, input_length=-(i // 3) if i % 3 == 0 and 0 < i // 3 <= n_bad else 1024)
             for i in range(1, 61)]
    p = tmp_path / "v.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("fast", PATHS)
@pytest.mark.parametrize("bs", [512, 600])
def test_more_than_five_names_five(tmp_path, fast, bs):
    p = _values_only(tmp_path, 8)
    state = ReadState()
    n = sum(len(b) for b in read_hashid_jsonl(p, "v.jsonl", MOONCAKE, bs, state, "skip", fast=fast))
    assert SKIPPED_NAMED == 5 and (n, state.skipped) == (52, 8)
    assert list(state.named) == [SkippedLine("v.jsonl", 3 * k, "input_length", f"must be >= 0, got {-k}")
                                 for k in range(1, 6)]


@pytest.mark.parametrize("native", ["python", "auto"])
def test_cli_notes_and_json_name_them(tmp_path, monkeypatch, native):
    monkeypatch.setenv("PCS_NATIVE", native)
    monkeypatch.chdir(tmp_path)
    _values_only(tmp_path, 8)
    r = invoke("trace", "stats", "v.jsonl", "--on-error", "skip")
    assert r.exit_code == 0, r.output
    notes = [ln for ln in r.stdout.splitlines() if ln.startswith("note: skipped")]
    assert notes == [f"note: skipped v.jsonl:{3 * k}: field 'input_length': must be >= 0, got {-k}"
                     for k in range(1, 6)] + ["note: skipped ... and 3 more"]
    r = invoke("trace", "stats", "v.jsonl", "--on-error", "skip", "--format", "json")
    st = json.loads(r.stdout)
    assert st["skipped"] == 8
    assert st["skipped_lines"] == [{"file": "v.jsonl", "line": 3 * k, "field": "input_length",
                                    "problem": f"must be >= 0, got {-k}",
                                    "message": f"v.jsonl:{3 * k}: field 'input_length': must be >= 0, got {-k}"}
                                   for k in range(1, 6)]
    _mixed(tmp_path)
    r = invoke("replay", "m.jsonl", "--tier", "gpu=100blocks", "--on-error", "skip", "--format", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [(s["line"], s["field"]) for s in out["skipped_lines"]] == [(2, "input_length"), (4, "timestamp"),
                                                                         (5, "hash_ids"), (6, "output_length"),
                                                                         (7, None)]
    assert "5 bad trace lines were skipped (--on-error skip)" in out["notes"]      # the count's note as before
    assert "pcs: note: skipped m.jsonl:5: field 'hash_ids': missing" in r.stderr
    assert "and" not in [n for n in out["notes"] if n.startswith("skipped")][-1]   # 5 skipped, 5 named: no "more"
    r = invoke("replay", "m.jsonl", "--tier", "gpu=100blocks", "--on-error", "skip")   # the table: notes alike
    assert "note: skipped m.jsonl:7: invalid JSON: Expecting ',' delimiter at column 38" in r.stdout.splitlines()


def test_api_trace_carries_them_and_a_clean_read_clears_them(tmp_path):
    p = _mixed(tmp_path)
    t = open_trace(p, on_error="skip")
    assert sum(len(b) for b in t.limited(STEP_LIMITS).iter_batches()) == 62
    assert t.skipped == 5 and [(s.line, s.field) for s in t.skipped_lines] == [(s.line, s.field) for s in MIXED]
    assert t.skipped_lines[0].path == str(p)
    assert sum(len(b) for b in t.iter_batches()) == 63    # no step bound: line 6 is read, 4 skipped
    assert [s.line for s in t.skipped_lines] == [2, 4, 5, 7]


def _parquet(tmp_path, prompt: list, output: list, ids: list, arrival: list):
    return pcs_parquet(tmp_path, arrival, prompt, output, ids)


@pytest.mark.parametrize("native", ["python", "auto"])   # numpy's checks, or the compiled row_checks
def test_parquet_names_rows_and_columns(tmp_path, monkeypatch, native):
    # rows (1-based), 512 tokens = 1 id each: 1 fine; 2 prompt -3; 3 two ids for 512 tokens (ceil(512 / 512) = 1);
    # 4 output 2**62 (the step bound); 5 fine (t 4); 6 arrival 1.0 after 4 -> decreases; 7 id 70 twice in a
    # 1,024-token row; 8 output -1; 9 fine. 6 bad rows (2, 3, 4, 6, 7, 8): 5 named, 1 more; 3 rows read.
    monkeypatch.setenv("PCS_NATIVE", native)
    p = _parquet(tmp_path, [512, -3, 512, 512, 512, 512, 1024, 512, 512], [1, 1, 1, LIMIT, 1, 1, 1, -1, 1],
                 [[10], [20], [30, 31], [40], [50], [60], [70, 70], [80], [90]],
                 [0.0, 1.0, 2.0, 3.0, 4.0, 1.0, 6.0, 7.0, 8.0])
    t = open_trace(p, on_error="skip")
    assert sum(len(b) for b in t.limited(STEP_LIMITS).iter_batches()) == 3
    assert t.skipped == 6
    assert list(t.skipped_lines) == [
        SkippedLine(str(p), 2, "prompt_tokens", "must be >= 0, got -3"),
        SkippedLine(str(p), 3, "block_hashes", "has 2 ids but ceil(512 / block size 512) = 1"),
        SkippedLine(str(p), 4, "output_tokens", STEP_WHY),
        SkippedLine(str(p), 6, "arrival_s", "decreases (1 after 4); use sort= to reorder"),
        SkippedLine(str(p), 7, "block_hashes", "id 70 repeated at positions 0 and 1")]
    monkeypatch.chdir(tmp_path)
    r = invoke("trace", "stats", "t.parquet", "--on-error", "skip", "--format", "json")
    st = json.loads(r.stdout)
    assert st["skipped"] == 5          # no step bound here: row 4 is read
    assert [(s["row"], s["field"]) for s in st["skipped_lines"]] == [(2, "prompt_tokens"), (3, "block_hashes"),
                                                                      (6, "arrival_s"), (7, "block_hashes"),
                                                                      (8, "output_tokens")]
    r = invoke("replay", "t.parquet", "--tier", "gpu=100blocks", "--on-error", "skip")
    notes = [ln for ln in r.stdout.splitlines() if ln.startswith("note: skipped")]
    assert notes[0] == "note: skipped t.parquet:2: field 'prompt_tokens': must be >= 0, got -3"
    assert notes[5:] == ["note: skipped ... and 1 more"] and len(notes) == 6


def test_token_and_azure_readers_name_theirs(tmp_path):
    # tokens (block size 2): line 2 without token_ids -> "missing"; line 3 blank (a bad line, counted and named
    # "blank line"); lines 1 and 4 fine
    p = tmp_path / "k.jsonl"
    p.write_text('{"timestamp": 0, "token_ids": [1, 2, 3], "output_length": 1}\n{"timestamp": 1, "output_length": 1}\n'
                 '\n{"timestamp": 2, "token_ids": [1, 2, 4], "output_length": 1}\n')
    t = open_trace(p, block_size=2, on_error="skip")
    assert sum(len(b) for b in t.iter_batches()) == 2 and t.skipped == 2
    assert list(t.skipped_lines) == [SkippedLine(str(p), 2, "token_ids", "missing"),
                                     SkippedLine(str(p), 3, None, "blank line")]
    # Azure CSV: line 3's ContextTokens is no integer; lines 2 and 4 fine
    c = tmp_path / "a.csv"
    c.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
                 "2023-11-16 18:15:47.0000000,abc,44\n2023-11-16 18:15:48.0000000,100,4\n")
    t = open_trace(c, on_error="skip")
    assert sum(len(b) for b in t.iter_batches()) == 2 and t.skipped == 1
    assert [(s.line, s.field) for s in t.skipped_lines] == [(3, "ContextTokens")]
    assert t.skipped_lines[0].message.startswith(f"{c}:3: field 'ContextTokens': ")


BAD_AT = [2, 3, 15000, 15001, 28000, 29000]     # 1-based; 6 bad: the first 5 named, "... and 1 more"


@pytest.mark.parametrize("ahead", [False, True])
def test_names_span_jsonl_chunks_in_order(tmp_path, ahead):
    # 30,000 lines of ~90 bytes: 3 chunks of 1 MiB (pcs.trace.source.CHUNK_BYTES), bad lines (input length -1) in
    # each; ahead: the compiled twin's decode on threads of their own (Trace.iter_batches side_by_side/decode_ahead)
    p = tmp_path / "c.jsonl"
    p.write_text("".join(_row(i, i, input_length=-1 if i in BAD_AT else 1024) + "\n" for i in range(1, 30001)))
    assert p.stat().st_size > 2 * (1 << 20)
    t = open_trace(p, on_error="skip")
    assert sum(len(b) for b in t.iter_batches(side_by_side=ahead, decode_ahead=ahead)) == 30000 - 6
    assert t.skipped == 6 and [s.line for s in t.skipped_lines] == BAD_AT[:5]
    assert t.skipped_lines[-1].message == f"{p}:28000: field 'input_length': must be >= 0, got -1"


@pytest.mark.parametrize("side_by_side", [False, True])
def test_names_span_parquet_batches_in_order(tmp_path, side_by_side):
    # 30,000 rows: streamed in batches of 4,096 (parquet.STREAM_ROWS), side by side in pieces joined to 16,384
    # (READ_ROWS); prompt -1 at BAD_AT
    n = 30000
    p = _parquet(tmp_path, [-1 if i in BAD_AT else 512 for i in range(1, n + 1)], [1] * n,
                 [[i] for i in range(1, n + 1)], [float(i) for i in range(1, n + 1)])
    t = open_trace(p, on_error="skip")
    assert sum(len(b) for b in t.iter_batches(side_by_side=side_by_side)) == n - 6
    assert t.skipped == 6
    assert list(t.skipped_lines) == [SkippedLine(str(p), r, "prompt_tokens", "must be >= 0, got -1")
                                     for r in BAD_AT[:5]]


def test_named_lines_use_the_interfaces_words_and_a_blank_line_says_so(tmp_path, monkeypatch):
    # b.jsonl: line 1 t 5000; line 2 blank; line 3 t 1000 after 5000 (decreasing); line 4 t 6000. A blank line's
    # raise-mode advice ("use on_error='skip' to skip blank lines") is what skip did: named "blank line" alone. The
    # decreasing timestamp's advice names the API's keyword (sort=) to an API caller, the option (--sort) on the
    # command line (as the raise mode's error does there: pcs.cli.common.option_names), the plan's key in a sweep.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.jsonl").write_text("\n".join([_row(5000, 0), "", _row(1000, 1), _row(6000, 2)]) + "\n")
    t = open_trace(tmp_path / "b.jsonl", on_error="skip")
    assert sum(len(b) for b in t.iter_batches()) == 2
    assert [(s.line, s.field, s.problem) for s in t.skipped_lines] == [
        (2, None, "blank line"), (3, "timestamp", "decreases (1000 after 5000); use sort= to reorder")]
    cli = ["note: skipped b.jsonl:2: blank line",
           "note: skipped b.jsonl:3: field 'timestamp': decreases (1000 after 5000); use --sort to reorder"]
    for args in (["replay", "b.jsonl", "--tier", "gpu=100blocks"], ["trace", "stats", "b.jsonl"],
                 ["compare", "b.jsonl", "--policy", "lru", "--policy", "fifo"]):
        r = invoke(*args, "--on-error", "skip")
        assert r.exit_code == 0, r.output
        assert [ln for ln in r.stdout.splitlines() if ln.startswith("note: skipped")] == cli, args
    for args in (["replay", "b.jsonl", "--tier", "gpu=100blocks"], ["trace", "stats", "b.jsonl"]):
        r = invoke(*args, "--on-error", "skip", "--format", "json")
        assert [s["message"] for s in json.loads(r.stdout)["skipped_lines"]] == [c[len("note: skipped "):]
                                                                                 for c in cli], args


def test_the_path_is_never_reworded(tmp_path, monkeypatch):
    # A folder named like an API keyword (block_size=16, timing='x'): the command-line wording (--block-size 16,
    # --timing x) is for the advice alone; a review found the notes and the JSON message naming
    # "runs/--block-size 16/--timing x.jsonl" while "file" held the real path.
    folder = tmp_path / "runs" / "block_size=16" / "timing='x'"
    folder.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    (folder / "b.jsonl").write_text("\n".join([_row(5000, 0), _row(1000, 1), _row(6000, 2)]) + "\n")
    rel = "runs/block_size=16/timing='x'/b.jsonl"
    want = f"{rel}:2: field 'timestamp': decreases (1000 after 5000); use --sort to reorder"
    for args in (["replay", rel, "--tier", "gpu=100blocks"], ["trace", "stats", rel]):
        r = invoke(*args, "--on-error", "skip")
        assert f"note: skipped {want}" in r.stdout.splitlines(), args
        r = invoke(*args, "--on-error", "skip", "--format", "json")
        named = json.loads(r.stdout)["skipped_lines"]
        assert [(s["file"], s["message"]) for s in named] == [(rel, want)], args


def test_a_sweep_rows_and_a_reblocked_trace_name_them(tmp_path):
    # A sweep point's notes name the skipped lines in the plan's words ("use sort = true to reorder": the plan's key,
    # pcs.sweep.worker._plan_words); a re-blocked token trace (pcs.trace.reblock) carries its source's named
    # lines. Found untested by a review's mutations (either could be () or the API's words unnoticed).
    from pcs.sweep import read_results, run_sweep
    from pcs.trace.reblock import reblock

    (tmp_path / "b.jsonl").write_text("\n".join([_row(5000, 0), _row(1000, 1), _row(6000, 2)]) + "\n")
    (tmp_path / "plan.toml").write_text('kind = "replay"\n[fixed]\ntrace = "b.jsonl"\non-error = "skip"\n'
                                        'tier = {gpu = "100blocks"}\n[axes]\npolicy = ["lru", "fifo"]\n')
    run = run_sweep(tmp_path / "plan.toml", tmp_path / "out", jobs=1)
    assert (run.points, run.failed) == (2, 0)
    for row in read_results(run.out).to_pylist():
        assert (f"skipped {tmp_path / 'b.jsonl'}:2: field 'timestamp': decreases (1000 after 5000); use sort = true to "
                "reorder" in json.loads(row["notes"])), row["notes"]      # the plan's path, resolved
    t = reblock(open_trace(tmp_path / "b.jsonl", on_error="skip"), 1024, check=False)["exact"]   # 512 -> 1024
    assert sum(len(b) for b in t.iter_batches()) == 2
    assert [(s.line, s.field) for s in t.skipped_lines] == [(2, "timestamp")]


def test_raise_mode_keeps_the_path_and_every_reader_advises_in_the_callers_words(tmp_path, monkeypatch):
    # The raise mode's one line re-worded the path too ("runs/--block-size 16/b.jsonl:2: ..."); the advice alone
    # is the command's (--sort). In Python every reader says sort= (the Azure reader said --sort).
    folder = tmp_path / "runs" / "block_size=16"
    folder.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    (folder / "b.jsonl").write_text("\n".join([_row(5000, 0), _row(1000, 1)]) + "\n")
    r = invoke("trace", "stats", "runs/block_size=16/b.jsonl")
    assert r.exit_code == 2
    assert r.stderr.strip() == ("pcs: error: runs/block_size=16/b.jsonl:2: field 'timestamp': decreases (1000 after "
                                "5000); use --sort to reorder")
    c = tmp_path / "a.csv"        # Azure: line 3 before line 2
    c.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:47.0000000,374,44\n"
                 "2023-11-16 18:15:46.0000000,100,4\n")
    with pytest.raises(Exception, match=r"a\.csv:3: field 'TIMESTAMP': decreases \(use sort= to reorder\)"):
        list(open_trace(c).iter_batches())


_CLEAN = ('{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]}\n'
          '{"timestamp": 1, "input_length": 1024, "output_length": 5, "hash_ids": [1, 3]}\n')


@pytest.mark.parametrize("command", [
    ("replay", "--tier", "gpu=100blocks"),
    ("replay", "--tier", "gpu=100blocks", "--instances", "2"),
    ("compare", "--tier", "gpu=100blocks", "--policy", "lru", "--policy", "fifo"),
    ("compare", "--tier", "gpu=100blocks", "--instances", "2", "--router", "round-robin", "--router", "random"),
    ("curve", "--capacities", "1blocks,2blocks"),
    ("trace", "stats"),
    ("trace", "convert", "OUT"),
])
def test_skipped_lines_is_left_out_of_a_clean_read_by_every_command(tmp_path, command):
    """docs/json.md: skipped_lines is omitted unless a bad line was skipped; skipped is 0 (review 45: pcs trace
    stats and convert printed skipped_lines: [])."""
    from helpers import invoke

    def run(text: str, name: str) -> dict:
        trace = tmp_path / f"{name}.jsonl"
        trace.write_text(text)
        args = [str(tmp_path / f"{name}.parquet") if a == "OUT" else a for a in command]
        where = 2 if command[0] == "trace" else 1          # pcs trace SUB TRACE ..., pcs CMD TRACE ...
        r = invoke(*args[:where], trace, *args[where:], "--on-error", "skip", "--format", "json", "-q")
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    doc = run(_CLEAN, "clean")
    assert doc["skipped"] == 0 and "skipped_lines" not in doc, doc.get("skipped_lines")
    # a skipped line (line 2 has no timestamp) is named, beside the count
    doc = run(_CLEAN.splitlines(keepends=True)[0] + '{"input_length": 5, "hash_ids": [1]}\n' + _CLEAN, "dirty")
    assert doc["skipped"] == 1 and [e["line"] for e in doc["skipped_lines"]] == [2], doc
