"""A misspelt process setting is reported by every command (F8, hostile-input review 2026-12-04): PCS_THREADS=bogus
was refused by pcs replay but silently ignored by pcs curve, pcs report and every command that runs no replay, and
PCS_NATIVE=bogus by the commands that run no compiled twin (pcs footprint, pcs models). Every command now checks
both before it runs (pcs.cli.common.check_settings, run by PcsCommand.invoke; the rules are
pcs.beside.threads_wanted's and pcs._native.default_mode's): one line, exit 2; --help is answered all the same.
"""
from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from helpers import ROOT
from pcs.cli.common import PcsCommand
from pcs.cli.group import COMMANDS, cli

SAMPLE = str(ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl")
WORDS = {"PCS_THREADS": "auto, on, off (or 1, yes, true, 0, no, false)", "PCS_NATIVE": "auto, c, python"}
#: commands that read neither setting, and two that read one of them (curve: PCS_NATIVE only; replay: both)
LINES = [["models"], ["policies"], ["footprint", "--model", "llama-3.1-8b", "--tokens", "1000"],
         ["trace", "stats", SAMPLE], ["curve", SAMPLE], ["replay", SAMPLE]]


def _leaves(name: str, command: click.Command):
    ctx = click.Context(cli)
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            yield from _leaves(f"{name} {sub}", command.get_command(ctx, sub))
    else:
        yield name, command


def test_every_command_checks_the_settings():
    # the check runs in PcsCommand.invoke: every command, sub-commands of pcs trace and pcs sweep included, is one
    ctx = click.Context(cli)
    leaves = [leaf for name in COMMANDS for leaf in _leaves(name, cli.get_command(ctx, name))]
    assert len(leaves) >= len(COMMANDS)
    assert [name for name, command in leaves if not isinstance(command, PcsCommand)] == []


@pytest.mark.parametrize("variable", sorted(WORDS))
@pytest.mark.parametrize("line", LINES, ids=lambda line: line[0] if line[0] != "trace" else "trace stats")
def test_a_bad_value_is_refused_by_each_command(variable, line):
    r = CliRunner().invoke(cli, [*line, "-q"], env={variable: "Bogus"})
    assert r.exit_code == 2, r.output
    assert [ln for ln in r.output.splitlines() if ln.strip()] == [
        f"pcs: error: environment variable {variable}='Bogus' is not one of {WORDS[variable]}: unset it or set one "
        "of those"]


@pytest.mark.parametrize("variable, value", [("PCS_THREADS", " OFF "), ("PCS_THREADS", "1"), ("PCS_THREADS", ""),
                                             ("PCS_NATIVE", "Python"), ("PCS_NATIVE", "")])
def test_a_good_value_in_any_case_is_taken(variable, value):
    r = CliRunner().invoke(cli, ["models", "-q"], env={variable: value})
    assert r.exit_code == 0, r.output


def test_help_is_answered_under_a_bad_value():
    r = CliRunner().invoke(cli, ["replay", "--help"], env={"PCS_THREADS": "bogus", "PCS_NATIVE": "bogus"})
    assert r.exit_code == 0 and "replay [OPTIONS] [TRACE]" in r.output.split("\n")[0], r.output
