"""The docs name an option only on a command that has it.

A new user read "override with --hbm-capacity" for replay and deploy, which have no such option (only ``pcs
hardware`` has it; replay, compare and deploy read ``hbm_bytes`` from ``--hardware-file``). Two forms are checked in
README.md and docs/*.md (docs/performance.md is a dated record of commands as they were run, left out):

- a command in one code span: ```pcs replay --tier gpu=1TB``` -- every ``--option`` in it;
- a command span followed by an option span: ```hardware` `--hbm-capacity/--hbm-bandwidth``` or ```pcs envelope`
  the GPU's `--hbm-bandwidth/--bf16-flops``` -- every option of the second span, on the command of the first.
"""
from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from pcs.cli.group import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "performance.md")]
_CTX = click.Context(cli)


def _options(path: list[str]) -> set[str] | None:
    """Every spelling of every option of ``pcs PATH...``, or None when PATH names no command (a group, a word)."""
    cmd: click.Command = cli
    for word in path:
        if not isinstance(cmd, click.Group):
            break
        cmd = cmd.get_command(_CTX, word)
        if cmd is None:
            return None
    if isinstance(cmd, click.Group):
        return None
    return {o for p in cmd.params for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))} | \
        {"--help"}


def _command(words: list[str]) -> tuple[list[str], set[str] | None]:
    """The longest prefix of ``words`` that names a command (``trace stats``), and its options."""
    for n in (2, 1):
        if len(words) >= n and (found := _options(words[:n])) is not None:
            return words[:n], found
    return [], None


def _claims(text: str):
    text = " ".join(text.split())
    for span in re.findall(r"`pcs ([a-z][^`]*)`", text):
        words = span.split()
        path, found = _command(words)
        if found is not None:
            for w in words[len(path):]:
                if w.startswith("--"):
                    yield " ".join(path), w.split("=")[0].rstrip(",;:)"), found
    for cmd, opts in re.findall(r"`(?:pcs )?([a-z]+)`(?: the [a-z]+'s)? `(--[a-z0-9/-]+(?: X --[a-z0-9/-]+)?)`", text):
        path, found = _command([cmd])
        if found is not None:
            for opt in re.findall(r"--[a-z0-9-]+", opts):
                yield cmd, opt, found


@pytest.mark.parametrize("doc", DOCS, ids=[p.name for p in DOCS])
def test_every_option_the_docs_give_a_command_is_one_of_its_options(doc):
    missing = sorted({f"pcs {cmd} {opt}" for cmd, opt, found in _claims(doc.read_text()) if opt not in found})
    assert missing == []


def test_the_check_finds_an_option_a_command_lacks():
    # the sentence semantics.md §16 had: replay has no --hbm-capacity
    claims = list(_claims("`hardware`/`budget`/`envelope`/`replay` `--hbm-capacity/--hbm-bandwidth`"))
    assert [(c, o) for c, o, found in claims if o not in found] == [("replay", "--hbm-capacity"),
                                                                    ("replay", "--hbm-bandwidth")]
