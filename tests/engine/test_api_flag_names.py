"""API errors name the API's keywords (``tiers=``, ``admit=``, ``router_stale_s``, ``shared_tier`` ...), never a
command-line flag; the CLI shows the same errors with its flags through its one translator
(``pcs.cli.common.option_names``). Each case: the API call, a piece of its message, the CLI's words for it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import pcs
from pcs.cli.common import option_names
from pcs.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
TOKENS = str(ROOT / "traces" / "sample_tokens.jsonl")
EXACT = str(ROOT / "traces" / "sample_exact.jsonl")
TWO = ["gpu=10blocks", "cpu=10blocks"]
SEQ = dict(timing="sequential")


def _replay(**kw):
    return lambda: pcs.replay(TOKENS, **kw)


def _fleet(**kw):
    return lambda: pcs.fleet_replay(TOKENS, **kw)


CASES = [
    ("no tier", _replay(tiers=[]), "at least one tier is needed, e.g. tiers=['gpu=400GB']",
     "at least one tier is needed, e.g. --tier gpu=400GB"),
    ("GPU tier last", _replay(tiers=["cpu=10blocks", "gpu=10blocks"]),
     "the GPU tier comes first in tiers=, but the first is named 'cpu' (a lower tier); give the GPU tier first, "
     "e.g. tiers=['gpu=auto', 'cpu=...'] (auto: the size the deployment leaves for KV)",
     "the GPU tier comes first in --tier, but the first is named 'cpu' (a lower tier); give the GPU tier first, "
     "e.g. --tier gpu=auto --tier cpu=... (auto: the size the deployment leaves for KV)"),
    ("lower tier auto", _replay(tiers=["gpu=10blocks", "cpu=auto"]),
     "(the first of tiers=) can be sized 'auto' (from the deployment); give cpu a size, e.g. tiers=['cpu=2TB']",
     "(the first of --tier) can be sized 'auto' (from the deployment); give cpu a size, e.g. --tier cpu=2TB"),
    ("empty GPU tier", _replay(tiers=["gpu=0blocks"]),
     "or use compute_mode='infinite' / timing='sequential' to count hits alone",
     "or use --compute infinite / --timing sequential to count hits alone"),
    ("admit kind option", _replay(tiers=TWO, admit=["cpu=reuse:m=3"]), "admit='cpu=reuse:m=3': ",
     "--admit cpu=reuse:m=3: "),
    ("admit no =", _replay(tiers=TWO, admit=["reuse"]), "admit='reuse': expected TIER=KIND[:ARGS]",
     "--admit reuse: expected TIER=KIND[:ARGS]"),
    ("admit unknown tier", _replay(tiers=TWO, admit=["ssd=reuse"]), "admit='ssd=reuse': names tier 'ssd', which is not among",
     "--admit ssd=reuse: names tier 'ssd', which is not among"),
    ("admit on GPU", _replay(tiers=TWO, admit=["gpu=reuse"]), "admit='gpu=reuse': the GPU tier stores every block",
     "--admit gpu=reuse: the GPU tier stores every block"),
    ("admit twice", _replay(tiers=TWO, admit=["cpu=reuse", "cpu=reuse:3"]),
     "admit='cpu=reuse:3': tier 'cpu' is given admission 'reuse' twice",
     "--admit cpu=reuse:3: tier 'cpu' is given admission 'reuse' twice"),
    ("belady in a fleet", _fleet(instances=2, policy="belady"),
     "policy='belady' is the offline oracle of a single-instance replay (it reads the replayed trace's future); "
     "it is refused with instances=, router= or shared_tier=: replay one instance with policy='belady' or gap_oracle",
     "--policy belady is the offline oracle of a single-instance replay (it reads the replayed trace's future); "
     "it is refused with --instances, --router or --shared-tier: replay one instance with --policy belady or "
     "--gap-oracle"),
    ("negative stale view", _fleet(instances=2, router_stale_s=-1.0), "router_stale_s= must be >= 0 seconds",
     "--router-stale-s must be >= 0 seconds"),
    ("stale view nobody reads", _fleet(instances=2, router_stale_s=1.0),
     "router_stale_s=1 s delays the cache events a router reads, and no router in use reads them (round-robin; "
     "without router= the default",
     "--router-stale-s 1 s delays the cache events a router reads, and no router in use reads them (round-robin; "
     "without --router the default"),
    ("shared tier without size", _fleet(instances=2, shared_tier="remote=auto", **SEQ),
     "shared_tier='remote=auto': give the shared tier a size, e.g. shared_tier='remote=10TB' or "
     "shared_tier='remote=20000blocks'",
     "--shared-tier remote=auto: give the shared tier a size, e.g. --shared-tier remote=10TB or "
     "--shared-tier remote=20000blocks"),
    ("admit with a shared tier", _fleet(instances=2, shared_tier="remote=100blocks", admit=["cpu=reuse"],
                                        tiers=TWO, **SEQ),
     "admit= is for single-instance replays (not with instances=, router= or shared_tier=)",
     "--admit is for single-instance replays (not with --instances, --router or --shared-tier)"),
    # docs/cluster.md: admission is refused for every fleet, a shared tier or not (the API ran it before)
    ("admit in a fleet", _fleet(instances=2, admit=["cpu=reuse:2"], tiers=TWO, **SEQ),
     "admit= is for single-instance replays", "--admit is for single-instance replays"),
    ("gap oracle in a fleet", _fleet(instances=2, gap_oracle=True, **SEQ),
     "gap_oracle is for single-instance replays", "--gap-oracle is for single-instance replays"),
    ("session router without sessions", lambda: pcs.fleet_replay(EXACT, instances=2, router="session"),
     "use router='consistent-hash' (keyed on the first blocks)", "use --router consistent-hash (keyed on"),
    ("a compare of no router", lambda: __import__("pcs.fleet.compare").fleet.compare.compare_routers(
        TOKENS, [], instances=2), "give at least one router in routers=", "give at least one router in --router"),
]


@pytest.mark.parametrize("call, api, cli", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_api_names_keywords_and_the_cli_its_flags(call, api, cli):
    with pytest.raises(UserError) as exc:
        call()
    msg = str(exc.value)
    assert api in msg and not re.search(r"(?<![\w-])--[a-z]", msg), msg
    assert cli in option_names(msg)


@pytest.mark.parametrize("text, api, cli, plan", [
    ("blank", "blank line (use on_error='skip' to skip blank lines)", "(use --on-error skip to skip",
     'use on-error = "skip"'),
    ("order", "decreases (5 after 9); use sort= to reorder", "use --sort to reorder", "use sort = true to reorder"),
    ("ids", "was the trace recorded at another block size? (block_size=16 fits)", "(--block-size 16 fits)",
     "(block-size = 16 fits)"),
])
def test_trace_reader_words(tmp_path, text, api, cli, plan):
    rows = {"blank": '{"timestamp": 0, "input_length": 16, "output_length": 1, "hash_ids": [1]}\n\n',
            "order": '{"timestamp": 9, "input_length": 16, "output_length": 1, "hash_ids": [1]}\n'
                     '{"timestamp": 5, "input_length": 16, "output_length": 1, "hash_ids": [2]}\n',
            # 374 tokens in 24 ids: 512-token blocks would give 1; ceil(374 / 16) = 24, so 16 fits
            "ids": '{"timestamp": 0, "input_length": 374, "output_length": 1, "hash_ids": %s}\n' % list(range(24))}
    p = tmp_path / "t.jsonl"
    p.write_text(rows[text])
    with pytest.raises(UserError) as exc:
        list(pcs.open_trace(p))
    msg = str(exc.value)
    assert api in msg and "--" not in msg, msg
    assert cli in option_names(msg) and plan in option_names(msg, plan=True)


#: modules only the command line reaches (pcs sweep, pcs report, pcs trace synth / transform): flags are theirs
CLI_ONLY = ("cli", "sweep", "report", "trace/synth.py", "trace/transform.py")


def test_no_raise_outside_the_cli_names_a_flag():
    found = []
    for path in sorted((ROOT / "pcs").rglob("*.py")):
        rel = path.relative_to(ROOT / "pcs").as_posix()
        if rel.startswith(CLI_ONLY):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                text = "".join(c.value for c in ast.walk(node.exc) if isinstance(c, ast.Constant)
                               and isinstance(c.value, str))
                if re.search(r"(?<![\w-])--[a-z]", text):
                    found.append(f"{rel}:{node.lineno}")
    assert found == []
