"""Every pcs command takes -h, also when invoked on its own before the group (the order a test or a sweep
worker may use): click builds a command's help option once, from the first context that asks, and keeps it."""
from click.testing import CliRunner

from pcs.cli.main import cli


def _commands(group, words=()):
    for name in group.list_commands(None):
        cmd = group.get_command(None, name)
        if hasattr(cmd, "list_commands"):
            yield from _commands(cmd, (*words, name))
        else:
            yield (*words, name), cmd


def test_h_works_on_each_command_invoked_alone_first():
    for words, cmd in _commands(cli):
        alone = CliRunner().invoke(cmd, ["-h"], prog_name="pcs")
        assert alone.exit_code == 0, (words, alone.output)
        assert "-h, --help" in alone.output, words
        via_group = CliRunner().invoke(cli, [*words, "-h"], prog_name="pcs")
        assert "-h, --help" in via_group.output, words
