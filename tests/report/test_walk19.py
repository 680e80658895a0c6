"""The new-user walkthrough's findings (round 19): HTML tables that agree with their text twins, notes and labels
that say what the numbers are; each checked against values worked out by hand in the comments."""
from __future__ import annotations

import json
from pathlib import Path

from helpers import invoke, invoke_json

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"


def _gemma(*extra):
    return invoke_json("replay", str(SAMPLE), "--model", "gemma-3-27b", "--tier", "gpu=20GB", "--tier",
                       "cpu=100GB", "-q", *extra)


def _rows(table):
    return {r[0]["text"]: [c["text"] for c in r[1:]] for r in table["rows"]}


def test_html_all_components_is_the_whole_block():
    # gemma-3-27b on 8x h100 (TP 8), bf16: 62 layers (10 full attention, 52 sliding window), 8,192 B per token and
    # layer per TP group (2 x 16 KV heads x 128 x 2 B). Payload = 62 x 512 x 8,192 = 260,046,848 B = 260.05 MB;
    # full attention 10 x 512 x 8,192 = 41.94 MB, sliding window 52 x 512 x 8,192 = 218.10 MB. vLLM's page is 10
    # layers of 512 tokens = 41,943,040 B; a block is 1 + ceil(52 / 10) = 7 pages = 293,601,280 B = 293.60 MB,
    # so the padding is 293,601,280 - 260,046,848 = 33,554,432 B = 33.55 MB. It read "41.94 MB" (one page).
    from pcs.report.htmltables import footprint_tables
    (t,) = footprint_tables(_gemma())
    rows = _rows(t)
    assert rows["full_attention"] == ["41.94 MB", "41.94 MB"]
    assert rows["sliding_window"] == ["218.10 MB", "218.10 MB"]
    assert rows["page padding (up to whole pages)"] == ["33.55 MB", "33.55 MB"]
    assert rows["all components"] == ["293.60 MB", "293.60 MB"]
    assert rows["payload (Reference)"][0] == "260.05 MB"


def test_html_all_components_sglang_and_plain_models():
    # SGLang: one pool per kind of layer, a page per block in each: 41.94 + 218.10 = 260.05 MB, no padding row.
    # A plain model (llama-2-70b, 80 layers x 512 x 2 x 8 KV heads x 128 x 2 B = 167,772,160 B = 167.77 MB): the
    # tier's bytes per block, as before.
    from pcs.report.htmltables import footprint_tables
    (t,) = footprint_tables(_gemma("--hybrid-kv-cache-manager", "sglang"))
    rows = _rows(t)
    assert rows["all components"] == ["260.05 MB", "260.05 MB"] and "page padding (up to whole pages)" not in rows
    (t,) = footprint_tables(invoke_json("replay", str(SAMPLE), "--tier", "gpu=20GB", "--tier", "cpu=100GB", "-q"))
    assert _rows(t)["all components"] == ["167.77 MB", "167.77 MB"]


def test_html_tier_table_is_the_text_one():
    # The HTML tier table has the text table's title, headers (hybrid: "hit blocks (model)", the JSON hit_blocks counted in blocks of the model), rows and notes (the
    # pages note among them): both come from one function.
    from pcs.report.htmltables import tier_table
    from pcs.report.replay import tier_rows
    s = _gemma()
    t = tier_table(s)
    title, headers, rows, notes = tier_rows(s)
    assert t["title"] == title and t["headers"] == headers and t["notes"] == notes
    assert [[c["text"] for c in r] for r in t["rows"]] == rows
    assert "hit blocks (model)" in t["headers"] and "hit blocks" not in t["headers"]
    assert any("count pages of the shared pool" in n for n in t["notes"])
    text = invoke("replay", str(SAMPLE), "--model", "gemma-3-27b", "--tier", "gpu=20GB", "--tier", "cpu=100GB",
                  "-q").stdout
    assert "hit blocks (model)" in text and all(n.split(";")[0] in text for n in notes)


def _one_restore_trace(tmp_path, third_s):
    # A [1-4] at 0 s, B [5-8] at 60 s (a 4-block GPU tier: A's blocks go down to cpu), A again at third_s: one
    # restore of 3 blocks (the last token is recomputed) on an idle link, nothing ahead of it, so no queueing.
    t = tmp_path / "one.jsonl"
    t.write_text("".join(f'{{"timestamp": {ms}, "input_length": 2048, "output_length": 1, "hash_ids": {ids}}}\n'
                         for ms, ids in ((0, [1, 2, 3, 4]), (60000, [5, 6, 7, 8]), (third_s * 1000, [1, 2, 3, 4]))))
    return t


def test_one_restore_without_queueing_prints_zero(tmp_path):
    # On an idle link the restore begins the moment it is asked for: queueing = 0 exactly. Its restore time is a
    # difference of absolute times (~3,600 s), so it came out 0.0012682912 + 1.76e-13 s and printed "0.00 ns".
    args = ["replay", _one_restore_trace(tmp_path, 3600.1), "--model", "llama-3.1-70b", "--tier", "gpu=4blocks",
            "--tier", "cpu=100blocks"]
    (lk,) = invoke_json(*args)["envelope"]["links"]
    assert (lk["restores"], lk["restored_blocks"], lk["queue_s"]) == (1, 3, 0.0)
    text = invoke(*args, "-q").stdout
    row = [line for line in text.splitlines() if line.startswith("cpu -> gpu")][0]
    assert " ns" not in row and row.endswith(" 0 ms")      # queueing: the last column of the envelope's first table


def test_tp_note_says_shares_not_copies():
    # llama-3.1-70b has 8 KV heads: on TP 8 each rank holds 1 head, a distinct eighth of every block (no
    # replicas, so no "replicated:" clause); on TP 1 one GPU holds every block whole.
    notes = invoke_json("replay", str(SAMPLE), "--model", "llama-3.1-70b")["notes"]
    (tp,) = [n for n in notes if "TP 8:" in n]
    assert "x 8 ranks, each holding its share of every block;" in tp and "copy" not in tp
    assert "replicated" not in tp
    notes = invoke_json("replay", str(SAMPLE), "--model", "llama-3.1-8b", "--tp", "1")["notes"]
    assert any("TP 1: one GPU holds every block whole" in n for n in notes)
    assert not any("x 1 ranks" in n for n in notes)


def test_fleet_names_its_deployment_and_prints_the_notes_once():
    # Two round-robin instances with the defaults (llama-2-70b fp16, 8x h100-sxm TP 8, 512-token blocks): the
    # header names them as a replay's does; the defaults note (alike on both instances) is a top-level note once,
    # the past-context notes (each instance counts its own 850 requests) once, summed, with each instance's count.
    s = invoke_json("replay", str(SAMPLE), "--instances", "2", "--router", "round-robin")
    assert (s["model"], s["kv_dtype"], s["gpu"], s["tp"], s["block_size"]) == ("llama-2-70b", "fp16", "h100-sxm", 8,
                                                                              512)
    assert sum(n.startswith("defaults: model llama-2-70b") for n in s["notes"]) == 1
    (past,) = [n for n in s["notes"] if "run past the model's context" in n]
    each = [int(past.split(f"instance {i} ")[1].split(" of 850")[0].replace(",", "")) for i in (0, 1)]
    assert past.startswith(f"{sum(each):,} requests run past the model's context") and "of 1,700)" in past
    text = invoke("replay", str(SAMPLE), "--instances", "2", "--router", "round-robin").stdout
    assert text.splitlines()[0].split(" | ")[1:3] == ["llama-2-70b, KV fp16 on 8x h100-sxm (TP=8)", "block 512 tokens"]
    assert sum(line.startswith("note: defaults: model llama-2-70b") for line in text.splitlines()) == 1


def test_azure_csv_without_reuse_points_to_trace_synth(tmp_path):
    # An Azure CSV records arrivals and lengths only: read as it is, every block is new (hit ratio 0); the note
    # names the command that gives it sessions with reuse (pcs trace synth --azure-csv, which exists and reads it).
    csv = tmp_path / "az.csv"
    csv.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,1024,10\n"
                   "2023-11-16 18:15:50.9951690,2048,20\n")
    s = invoke_json("replay", csv, "--model", "llama-3.1-8b", "--tp", "1")
    assert s["hit_ratio"] == 0.0
    (note,) = [n for n in s["notes"] if "records lengths only" in n]
    # (the CSV's path is left out: a sweep point reads it by another path, and prints what the command prints)
    assert note.endswith("pcs trace synth OUT.jsonl --azure-csv THIS.csv --requests all, then pcs replay OUT.jsonl")
    out = tmp_path / "out.jsonl"
    r = invoke("trace", "synth", out, "--azure-csv", csv, "--requests", "all")
    assert r.exit_code == 0, r.output
    assert len(out.read_text().splitlines()) == 2


def test_report_of_two_runs_has_a_legend_and_labelled_notes():
    # Two replays side by side: the marked cells get the compare page's legend; a note only run 1 has (the
    # default model's) is labelled "run 1: ", one both have (the synthetic-reuse trace note) stays unlabelled, once.
    from pcs.report.htmlpage import build_page
    from pcs.report.htmltables import MARKED_NOTE
    a = invoke_json("replay", str(SAMPLE), "--tier", "gpu=200blocks")
    b = invoke_json("replay", str(SAMPLE), "--model", "llama-3.1-70b", "--tier", "gpu=200blocks")
    page = build_page([a, b])
    (runs,) = [t for sec in page["sections"] if sec["id"] == "runs" for t in sec["tables"]]
    assert runs["notes"] == [MARKED_NOTE] and "concurrency: nearest 0" in MARKED_NOTE
    assert any(n.startswith("run 1: defaults: model llama-2-70b") for n in page["notes"])
    trace_note = [n for n in a["notes"] if n.startswith("this trace was generated")]
    assert trace_note and sum(n == trace_note[0] for n in page["notes"]) == 1
    assert not any(n.startswith("run 2: this trace was generated") for n in page["notes"])


def test_pareto_note_says_ties_are_listed():
    # fifo and lru both at TTFT p99 7.729 s with the same bytes, a third point worse at 8 s with the same bytes:
    # neither tie dominates the other (not strictly better in anything), so both are on the front, and the
    # note's rule says so; the 8 s point is dominated.
    import numpy as np

    from pcs.report.sweep import FRONT_NOTE
    from pcs.sweep.summary import pareto_front
    keep = pareto_front(np.array([7.729, 7.729, 8.0]), np.array([[10, 20], [10, 20], [10, 20]]))
    assert keep.tolist() == [True, True, False]
    assert "strictly better in one of them" in FRONT_NOTE and "(a tie) are all listed" in FRONT_NOTE


def test_public_raises_name_what_is_raised():
    # tokens=-1 is outside footprint's [0, 1e9]: it raises pcs.errors.UserError (a ValueError), and its Raises
    # section names UserError, not a plain ValueError; replay, compare and fleet_replay name it too.
    import inspect

    import pytest

    import pcs
    from pcs.errors import UserError
    with pytest.raises(UserError):
        pcs.footprint("llama-3.1-8b", tokens=-1)
    with pytest.raises(UserError):
        pcs.fleet_replay(str(SAMPLE), instances=0)
    for f in (pcs.footprint, pcs.replay, pcs.compare, pcs.fleet_replay):
        raises = inspect.getdoc(f).split("Raises:")[1]
        assert raises.lstrip().startswith("UserError:"), f.__name__
        assert "\n    ValueError:" not in raises, f.__name__


def test_sweep_summary_marks_gpu_tiers_the_deployment_cannot_hold(tmp_path):
    # llama-3.1-8b on 1x l40s (48 GB): 48 x 0.9 - 16.06 GB weights - 5 GB reserve = 22.14 GB left for KV, so a
    # fixed gpu = "30GB" is more than that deployment leaves; on 1x h100-sxm (80 GB) 80 x 0.9 - 16.06 - 5 = 50.94 GB
    # holds it. Only the l40s point is over: marked (!) in the text and listed in the JSON.
    from pcs.report.sweep import render_summary
    from pcs.sweep.summary import summarize
    plan = tmp_path / "p.toml"
    plan.write_text(f'kind = "replay"\n[fixed]\ntrace = "{SAMPLE}"\nmodel = "llama-3.1-8b"\ntp = 1\n'
                    'timing = "sequential"\ntier = {gpu = "30GB"}\n[axes]\ngpu = ["h100-sxm", "l40s"]\n')
    r = invoke("sweep", plan, "-o", tmp_path / "out", "--jobs", "1", "-q")
    assert r.exit_code == 0, r.output
    s = summarize(tmp_path / "out")
    (over,) = s.over_deployment
    text = render_summary(s)
    (row,) = [line for line in text.splitlines() if over in line and "gpu=l40s" in line][:1]
    assert f"{over} (!)" in row
    assert "(!): 1 of 2 points gives a GPU tier larger than their deployment leaves for KV" in text
    assert 'tier.gpu = "auto"' in text


def _raises_names(doc: str) -> set[str]:
    """The exception classes a docstring's Raises section names at the head of an entry (``UserError:``,
    ``PathError, InputError:``, ``InputError / UserError:``, ``json.JSONDecodeError (a ValueError):``; what a
    parenthesis says about the class is not an entry)."""
    import re

    sec = re.split(r"\n\s*(?:Returns|Yields|Args|Attributes|Examples?|Note):", doc.split("Raises:", 1)[1])[0]
    kind = r"(?:Error|Exception|Exit|Interrupt|Stopped|Warning)"
    heads = re.finditer(rf"^\s*((?:[A-Za-z_][\w.]*{kind}\b[\s,/]*(?:\([^)]*\))?[\s,/]*)+)(?:\(|:)", sec, re.M)
    return {n for h in heads for n in re.findall(r"[A-Za-z_][\w.]*", re.sub(r"\([^)]*\)", "", h.group(1)))
            if re.search(rf"{kind}$", n)}


def _module_facts(tree) -> tuple[set[str], set[str], set[str]]:
    """(classes the module raises, imports by name or defines; the pcs modules it imports; plain modules it imports
    by ``import X``)."""
    import ast

    names, pcs_mods, plain = set(), set(), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Raise) and n.exc is not None:
            e = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
            names.add(e.attr if isinstance(e, ast.Attribute) else getattr(e, "id", ""))
        elif isinstance(n, ast.ImportFrom) and n.module:
            names |= {a.asname or a.name for a in n.names}
            if n.module.startswith("pcs"):
                pcs_mods |= {n.module} | {f"{n.module}.{a.name}" for a in n.names}
        elif isinstance(n, ast.Import):
            plain |= {a.asname or a.name for a in n.names}
            pcs_mods |= {a.name for a in n.names if a.name.startswith("pcs")}
        elif isinstance(n, ast.ClassDef):
            names.add(n.name)
    return names, pcs_mods, plain


def test_public_raises_name_classes_the_module_raises_or_imports():
    # A public function's Raises may name: a class its module raises, imports or defines, or one that a pcs module
    # it imports (and those modules' pcs imports, two levels: the callee that raises it) raises or imports; a
    # builtin exception other than ValueError / TypeError / KeyError (Python's own: OSError, MemoryError...); a
    # dotted name of a module it imports (json.JSONDecodeError). pcs raises no plain ValueError for user input
    # (pcs.errors.UserError is one), so "ValueError:" where the code raises UserError fails here: 174 did.
    import ast
    import builtins

    trees = {}
    for f in sorted((ROOT / "pcs").rglob("*.py")):
        mod = ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        trees[mod] = ast.parse(f.read_text(encoding="utf-8"))
    facts = {m: _module_facts(t) for m, t in trees.items()}
    strict = {"ValueError", "TypeError", "KeyError"}
    python = {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)
              and issubclass(getattr(builtins, n), BaseException)} - strict
    wrong = []
    for mod, tree in trees.items():
        if any(part.startswith("_") for part in mod.split(".")[1:]):
            continue
        near = {m for m in facts[mod][1] if m in trees}
        near |= {m2 for m in list(near) for m2 in facts[m][1] if m2 in trees}
        ok = facts[mod][0].union(*(facts[m][0] for m in near)) | python
        public = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        public += [m for c in public if isinstance(c, ast.ClassDef) and not c.name.startswith("_")
                   for m in c.body if isinstance(m, ast.FunctionDef)]
        for node in public:
            doc = ast.get_docstring(node)
            if node.name.startswith("_") or not doc or "Raises:" not in doc:
                continue
            for name in _raises_names(doc):
                head, _, last = name.rpartition(".")
                if last not in ok and not (head and head.split(".")[0] in facts[mod][2]):
                    wrong.append(f"{mod}.{node.name}: {name}")
    assert not wrong, wrong


def test_raises_names_reads_entry_heads():
    # the entry heads, not what a parenthesis or the text says of them
    doc = ("Summary.\n\nRaises:\n    UserError (a ValueError): bad.\n    PathError, InputError: as open_trace.\n"
           "    json.JSONDecodeError (a ValueError), UnicodeDecodeError: as json.loads; a TypeError is a bug.\n"
           "Returns:\n    ValueError: not a Raises entry.\n")
    assert _raises_names(doc) == {"UserError", "PathError", "InputError", "json.JSONDecodeError",
                                  "UnicodeDecodeError"}
