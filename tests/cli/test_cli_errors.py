"""click's own parse errors come out as one line with exit code 2, like pcs's."""
import pytest
from click.testing import CliRunner

from pcs.cli.main import cli


@pytest.mark.parametrize("args,needle", [
    (["replay", "."], "is a directory"),
    (["footprint", "--model", "llama-3.1-8b", "--tokens", "-5"], "--tokens"),
    (["budget", "--format", "xml"], "'xml' is not one of"),
    (["no-such-command"], "No such command"),
    (["replay", "--tier", "cpu=2TB"], "first --tier is the GPU tier"),
    (["curve", "--capacities", "-5"], "--capacities '-5'"),
])
def test_one_line_exit_2(args, needle):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pcs: error:") and needle in lines[0], result.output
