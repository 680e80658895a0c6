"""The docs stay true: every command has help with an example and real output in the README;
generated parts (docs/cli.md, example outputs) are current; every rule in docs/semantics.md names
tests that exist; the README's Python lines run; links resolve; the package cites only its own docs."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SEMANTICS = (ROOT / "docs" / "semantics.md").read_text(encoding="utf-8")
TRACE_SUBCOMMANDS = ["stats", "convert", "synth"]
ALL = [[name] for name in COMMANDS if name != "trace"] + [["trace", sub] for sub in TRACE_SUBCOMMANDS]


def _generator():
    """docs/generate.py, loaded from its path (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("pcs_docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("words", ALL, ids=lambda w: " ".join(w))
def test_help_has_an_example(words):
    result = CliRunner().invoke(cli, [*words, "--help"])
    assert result.exit_code == 0, result.output
    assert "example" in result.output.lower(), f"pcs {' '.join(words)} --help shows no example"


@pytest.mark.parametrize("words", ALL, ids=lambda w: " ".join(w))
def test_command_in_readme_with_real_output(words):
    """Each command has a generated example block (command + its first output lines) in the README."""
    assert f"pcs {' '.join(words)}" in README
    assert re.search(rf"<!-- output: pcs {' '.join(words)}( [^|]*)? \| head -\d+ -->\n```text\n\$ pcs ", README), \
        f"no generated example of pcs {' '.join(words)} in README.md"


def test_readme_starts_with_the_two_commands():
    head = README.split("```", 2)[1]
    assert "pip install -e" in head and "pcs replay" in head
    assert "pytest" in head


def test_readme_is_a_front_door():
    assert len(README.splitlines()) <= 206
    for word in ("trace -> cache -> engine -> curves -> report -> cli", "pcs/cache/policies/__init__.py",
                 "pcs/cache/hierarchy.py", "pcs/engine/engine.py", "pcs/cache/_lruhier.c",
                 "tests/cache/test_replay_native.py", "pcs/engine/_stepsched.c"):
        assert word in README, word
    assert "../shared" not in README


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[test,plot]'" in README and "pip install -e '.[test,plot]'" in ci
    assert "python -m pytest" in README and "python -m pytest" in ci


def test_the_first_command_makes_a_venv_as_ci_does():
    """A fresh Debian's system pip refuses installs (PEP 668): the README's first command makes and activates a
    venv before pip, and .ci/run installs the same way, in that order."""
    first = README.split("```bash\n", 1)[1].splitlines()[0]
    steps = ("python3 -m venv .venv", ". .venv/bin/activate", "pip install -e '.[test,plot]'")
    assert all(s in first for s in steps) and [first.index(s) for s in steps] == sorted(first.index(s) for s in steps)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert [ci.index(s) for s in steps] == sorted(ci.index(s) for s in steps)


def test_the_replay_example_shows_hit_table_rows():
    """The ``pcs replay | head -N`` example reaches past the hit table's dashed header to its first row."""
    block = README.split("<!-- output: pcs replay | head", 1)[1].split("<!-- /output -->", 1)[0]
    after = block.split("-----", 1)[1].splitlines()[1:]
    assert any(ln.startswith("hit ratio (real") for ln in after)


def test_readme_python_api_runs():
    """The five-line API block runs as written; values from docs/semantics.md §10 worked examples."""
    block = README.split("```python\n", 1)[1].split("```", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.strip()]
    assert len(lines) <= 6 and lines[0] == "import pcs"
    assert "../" not in block
    ns: dict = {}
    results = []
    for ln in lines:                                    # each line as written: an expression's value is kept
        try:
            results.append(eval(compile(ln, "README.md", "eval"), ns))
        except SyntaxError:
            exec(compile(ln, "README.md", "exec"), ns)
            results.append(None)
    binding, totals, break_even, _, rows = results[1:]
    assert binding == "bandwidth"                       # u_B 0.5 > u_C 0.375
    assert break_even == pytest.approx(1e9 / 0.065)     # 1 GB / (100 - 30 - 5) ms
    assert totals["reference_bytes"] == 32768 * 32 * 8 * 128 * 2 * 1   # fp8: 1 B per value
    assert ns["r"].summary.requests == 1700 and [row.capacity_blocks for row in rows] == [1000, 5000]


def test_cli_md_is_current():
    gen = _generator()
    assert gen.stale(outputs=False) == [], "docs/cli.md is stale: run python docs/generate.py"


def test_example_outputs_are_current():
    from pcs import _native

    if _native.missing():   # the curve notes name the kernel that ran
        pytest.skip(f"compiled twins not built: {_native.missing()}")
    gen = _generator()
    stale = [str(p.relative_to(ROOT)) for p in gen.stale()]
    assert stale == [], f"stale generated docs {stale}: run python docs/generate.py"


def _sections() -> dict[int, str]:
    parts = re.split(r"^## §(\d+) ", SEMANTICS, flags=re.M)
    return {int(n): body for n, body in zip(parts[1::2], parts[2::2])}


def _checked_by(body: str) -> list[str]:
    return [i for para in re.findall(r"^Checked by:(.*?)(?:\n\n|\Z)", body, re.S | re.M)
            for i in re.findall(r"`(tests/[\w/]+\.py::\w+)`", para)]


def test_every_semantics_section_names_its_tests():
    sections = _sections()
    assert sorted(sections) == list(range(1, 18))
    for n, body in sections.items():
        assert _checked_by(body), f"§{n} has no 'Checked by:' node id"


def test_every_checked_by_node_id_is_collectable(request):
    """Checked against what this session collected (conftest.COLLECTED_IDS) where it collected the id's module; a
    child ``pytest --collect-only`` collects the modules the session did not (this file run alone)."""
    from conftest import not_collected_here

    ids = sorted({i for body in _sections().values() for i in _checked_by(body)})
    assert len(ids) > 40
    here, rest = not_collected_here(request.config, ids)
    assert sorted(set(ids) - set(rest) - {i.split("[", 1)[0] for i in here}) == []
    if not rest:
        return
    res = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *rest],
                         cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    collected = {line.split("[", 1)[0] for line in res.stdout.splitlines() if "::" in line}
    assert set(rest) <= collected, sorted(set(rest) - collected)


def test_doc_links_resolve():
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (path.parent / target).exists(), f"{path.relative_to(ROOT)} links to missing {target}"


def test_package_cites_only_repository_documents():
    """Rules are cited as docs/semantics.md §N, never from documents outside the repository."""
    pattern = re.compile(r"CONCEPTS|STYLE\.md|the brief|team brief|\.\./shared|issue [0-9]")
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "pcs").rglob("*")) if p.suffix in (".py", ".c")
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert bad == []
    for n in {int(m) for m in re.findall(r"docs/semantics\.md §(\d+)", "\n".join(
            p.read_text(encoding="utf-8") for p in (ROOT / "pcs").rglob("*.py")))}:
        assert n in _sections(), f"pcs cites docs/semantics.md §{n}, which does not exist"


def test_test_paths_named_in_the_package_exist():
    """A docstring or comment in pcs/ that names a test module (``tests/<area>/test_x.py``) names one that exists
    (tests moved into tests/<area>/ and some docstrings kept the old paths)."""
    named = {(f"{p.relative_to(ROOT)}:{i}", path) for p in sorted((ROOT / "pcs").rglob("*"))
             if p.suffix in (".py", ".c", ".h")
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             for path in re.findall(r"\btests/[\w/]+\.py", line)}
    assert len(named) > 20
    assert sorted(f"{where} {path}" for where, path in named if not (ROOT / path).is_file()) == []


def test_docs_name_only_files_that_exist():
    """Every repository file a doc names (``pcs/...``, ``tests/...``, ``benchmarks/...``) exists: the "where to change
    what" lists of docs/semantics.md and docs/policies.md stay true when files move. ``NAME`` is a placeholder."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
    pattern = re.compile(r"\b(?:pcs|tests|benchmarks)/[\w/.]+\.(?:py|c|h|cpp)\b")
    named = {(str(doc.relative_to(ROOT)), path) for doc in docs
             for path in pattern.findall(doc.read_text(encoding="utf-8")) if "NAME" not in path}
    assert len(named) > 100
    assert sorted(f"{doc}: {path}" for doc, path in named if not (ROOT / path).is_file()) == []


def test_policies_table_lists_every_built_in_policy():
    """docs/policies.md's eviction table has one row per built-in policy, in the registry's order (pcs.choices)."""
    from pcs.choices import BUILTIN_POLICIES

    table = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8").split("## Eviction policies", 1)[1]
    rows = re.findall(r"^\| `([\w-]+)`", table.split("\n\n", 2)[1], re.M)
    assert rows == list(BUILTIN_POLICIES), f"docs/policies.md's table lists {rows}"


#: What points outside the repository: a path of the machine the project was built on, an issue number, the name of
#: a working branch (a word ending in the number of the issue it served, as ``e2e9``, ``hyb11``, ``fix9b``; not a
#: dtype such as ``bf16`` or ``int64``, a hash function such as ``splitmix64``, a commit id or a colour), or words
#: that only mean something beside a branch ("this branch"; "branch fixh2").
# an issue reference "#12" / "(#12)" counts too, but not a colour ("#000" in quotes, #d9d9d9), an anchor
# (semantics.md#4) or an engine citation ("vLLM PR #10511")
NOTES = (r"/work/|\b[Ii]ssues?[- ]#?[0-9]|\b(?i:walkthrough|hostile)[- ]?[0-9]+\b"
         r"|(?<!PR )(?<![\w&/.\"'-])#[0-9]{1,4}\b(?![0-9a-fA-F])")
#: Working branches ending in ONE digit (the pattern below takes 9 and 10-99 after any word): the stems such branches
#: were named with (``fixh2``, ``fixw1``, ``dedupe9``, ``hier2``, ``nc3``); a plain word with one digit (``scan2``,
#: ``qwen3``, ``log2``) is left alone.
BRANCH_STEMS = r"fix[a-z0-9]*?|hier|nc|noc|e2e|dedupe|hyb|hyseq|pyvec|pyplug|routeb|refspeed|dem|gil|pq|peer|walkfix"
OUTSIDE = re.compile(NOTES + r"|\bgolden snapshots?\b|\bthe lead's\b"      # files and people outside the repo
                     + r"|\b(?i:this branch)\b|\bbranch [a-z]+[0-9]+[a-z]?\b"
                     + r"|(?<![#\w-])(?:" + BRANCH_STEMS + r")[1-9][a-z]?\b"
                     + r"|(?<![#\w-])(?![0-9a-f]{7,40}\b)(?!(?:u?int|b?float|bf|fp|mix|splitmix|grow|base)\d+s?\b)"
                     r"[a-z][a-z0-9]*[a-z](?:9|[1-9]\d)[a-z]?\b")


def test_docs_and_package_point_nowhere_outside_the_repository():
    """docs/, benchmarks/README.md and pcs/ name no machine path, issue number or working-branch name: a reader
    of a fresh clone has none of them. Commands use paths relative to the repository or ../shared/..."""
    files = [*sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "benchmarks").glob("*.md")),
             *(p for p in sorted((ROOT / "pcs").rglob("*")) if p.suffix in (".py", ".c", ".h", ".cpp"))]
    bad = [f"{p.relative_to(ROOT)}:{i}: {m.group(0)!r}" for p in files
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) for m in OUTSIDE.finditer(line)]
    assert bad == []
    assert [m.group(0) for m in OUTSIDE.finditer("see issue 19, branch e2e9 at /work/main; bf16 int64 #d9d9d9")] \
        == ["issue 1", "e2e9", "/work/"]
    assert [m.group(0) for m in OUTSIDE.finditer('nvfp4 (#12), see #7; "#000", #123456, x.md#4, vLLM PR #10511')] \
        == ["#12", "#7"]
    assert [m.group(0) for m in OUTSIDE.finditer("diff 0 against the golden snapshots; the lead's rerun")] \
        == ["golden snapshots", "the lead's"]
    assert [m.group(0) for m in OUTSIDE.finditer("since fixh2, fixw1 and nc3 (this branch); hier21, branch x1, "
                                                  "This branch")] \
        == ["fixh2", "fixw1", "nc3", "this branch", "hier21", "branch x1", "This branch"]
    assert [m.group(0) for m in OUTSIDE.finditer("scan2, qwen3-next, log2, blake2b, tiers0, pcie-gen5, h100")] == []


def test_tests_and_benchmarks_cite_nothing_outside_the_repository():
    """tests/ and benchmarks/ cite no machine path, issue number or session note (a walkthrough or hostile-input
    report): a test says what it checks and why in its own words. (Their names may look like branch names,
    ``ttft99``, ``blocks16``, so only the narrower pattern applies.)"""
    notes = re.compile(NOTES)
    files = [p for d in ("tests", "benchmarks") for p in sorted((ROOT / d).rglob("*.py"))
             if p != Path(__file__).resolve()]
    bad = [f"{p.relative_to(ROOT)}:{i}: {m.group(0)!r}" for p in files
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) for m in notes.finditer(line)]
    assert bad == []
    assert [m.group(0) for m in notes.finditer("hostile-22 #1, Walkthrough 20, issue 9, /work/x, ttft99")] \
        == ["hostile-22", "#1", "Walkthrough 20", "issue 9", "/work/"]


def test_unknown_command_exits_2():
    result = CliRunner().invoke(cli, ["no-such-command"])
    assert result.exit_code == 2


@pytest.mark.parametrize("model, count", [(None, 26), ("gemma-3-27b", 30)])
def test_replay_md_lists_every_request_column(model, count):
    # docs/replay.md's per-request table names every column a run writes. The
    # default run (two tiers, step scheduler): 17 modeled columns (hit_tokens_gpu, _cpu) + 9 of the scheduler
    # = 26; gemma-3-27b adds gpu_resident_bytes_ for its 2 components and its page padding, and hybrid_lost_tokens = 30
    from pcs import replay

    kw = {"model": model} if model else {}
    names = replay(str(ROOT / "traces" / "sample_chat.jsonl"), **kw).requests.column_names
    assert len(names) == count
    text = (ROOT / "docs" / "replay.md").read_text()
    section = text[text.index("## Per-request table"):text.index("## `pcs compare`")]
    for name in names:
        generic = re.sub(r"^(hit_tokens|gpu_resident_bytes)_\w+$", r"\1_<tier>" if name.startswith("hit_")
                         else r"\1_<component>", name)
        assert f"`{generic}`" in section, name


def test_benchmarks_readme_lists_every_script():
    """benchmarks/README.md's table named 20 of the scripts; every .py in benchmarks/ has a row."""
    table = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([\w.]+\.py)` \|", table, flags=re.M))
    assert rows == {p.name for p in (ROOT / "benchmarks").glob("*.py")}


def test_real_trace_skips_are_counted_for_the_end_of_run_line():
    """conftest's terminal summary counts the skips whose reason names ../shared/traces
    (two here: the fixture's and a skipif's), not others (a compiled kernel not built)."""
    import types

    import conftest

    def rep(reason):
        return types.SimpleNamespace(longrepr=("f.py", 1, f"Skipped: {reason}"))

    fixture = "real Mooncake trace not found at /x (it lives in ../shared/traces or $PCS_SHARED_TRACES)"
    stats = {"skipped": [rep(fixture),
                         rep("no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES"),
                         rep("compiled pcs.trace._statscan not built")]}
    assert conftest._trace_skips(types.SimpleNamespace(stats=stats)) == 2
