"""Every command has --help text with an example, and every command is in the README."""
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import COMMANDS, cli

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
TRACE_SUBCOMMANDS = ["stats", "convert", "synth"]
ALL = [[name] for name in COMMANDS if name != "trace"] + [["trace", sub] for sub in TRACE_SUBCOMMANDS]


@pytest.mark.parametrize("words", ALL, ids=lambda w: " ".join(w))
def test_help_has_an_example(words):
    result = CliRunner().invoke(cli, [*words, "--help"])
    assert result.exit_code == 0, result.output
    assert "example" in result.output.lower(), f"pcs {' '.join(words)} --help shows no example"


@pytest.mark.parametrize("words", ALL, ids=lambda w: " ".join(w))
def test_command_in_readme(words):
    assert f"pcs {' '.join(words)}" in README


def test_readme_starts_with_the_two_commands():
    head = README.split("```", 2)[1]
    assert "pip install -e" in head and "pcs replay" in head
    assert "pytest" in head


def test_ci_runs_the_readme_test_command():
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[test,plot]'" in README and "pip install -e '.[test,plot]'" in ci
    assert "python -m pytest" in README and "python -m pytest" in ci


def test_unknown_command_exits_2():
    result = CliRunner().invoke(cli, ["no-such-command"])
    assert result.exit_code == 2
