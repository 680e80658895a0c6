"""A tier or link name with a tab, newline or space is refused (found 2026-12-04: ``--tier $'x\\ty'=5blocks`` was
accepted and printed a raw tab inside the text tables); a plain name of one's own still runs."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.engine.api import parse_assignment
from pcs.errors import UserError


@pytest.mark.parametrize("text", ["x\ty=10blocks", "x\ny=10blocks", "x y=10blocks", "x\x1by=10blocks"])
def test_names_that_would_break_a_table_are_refused(text):
    with pytest.raises(UserError, match=r"which a message shows as its escape|it holds a space, ' ' \(U\+0020\)"):
        parse_assignment(text, "tier")


def test_surrounding_spaces_are_trimmed_not_refused():
    assert parse_assignment(" cpu =2TB", "tier") == ("cpu", "2TB")


def test_the_cli_refuses_a_tab_in_a_link_name_and_runs_a_plain_one():
    # the tier's name meets the name rule first (mend48d: the name rule first on every road), then the link's
    bad = CliRunner().invoke(cli, ["replay", "--tier", "gpu=5blocks", "--tier", "x\ty=10blocks",
                                   "--link", "x\ty=10GB/s", "-q"])
    assert bad.exit_code == 2 and "bad tier name 'x\\ty'" in bad.output and "Traceback" not in bad.output
    bad = CliRunner().invoke(cli, ["replay", "--tier", "gpu=5blocks", "--tier", "xy=10blocks",
                                   "--link", "x\ty=10GB/s", "-q"])
    assert bad.exit_code == 2 and "bad link name 'x\\ty'" in bad.output and "Traceback" not in bad.output
    good = CliRunner().invoke(cli, ["replay", "--tier", "gpu=5blocks", "--tier", "xy=10blocks", "--link",
                                    "xy=10GB/s", "-q"])
    assert good.exit_code == 0, good.output
    assert "hits served by xy" in good.output
