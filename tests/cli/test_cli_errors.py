"""Error grades: a user error is one line and exit 2; a bug in pcs shows its traceback and says so, exit 1.

The grades are the house's (pcs/errors.py): UserError (with InputError and
UnknownNameError) and click usage errors are the user's; anything else that
escapes a command -- a plain ValueError (Python and numpy raise it for bugs),
AssertionError, TypeError, IndexError, KeyError -- is a bug. Bugs are injected with monkeypatch into the function a command calls.
"""
import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.errors import InputError, UnknownNameError, UserError

FOOTPRINT = ["footprint", "--model", "llama-3.1-8b", "--tokens", "100"]


def _run(args):
    return CliRunner().invoke(cli, args)


def _assert_one_line(result, needle):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pcs: error:") and needle in lines[0], result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("args,needle", [
    (["replay", "."], "TRACE .: Is a directory"),        # the readers' wording (was click's "File '.' is a directory.")
    (["footprint", "--model", "llama-3.1-8b", "--tokens", "-5"], "--tokens"),
    (["budget", "--format", "xml"], "'xml' is not one of"),
    (["no-such-command"], "No such command"),
    (["replay", "--tier", "cpu=2TB"], "the GPU tier comes first in --tier"),
    (["replay", "--tier", "gpu=100GB", "--tier", "cpu=auto"], "only the GPU tier (the first of --tier) can be sized 'auto'"),
    (["curve", "--capacities", "-5"], "--capacities '-5'"),
    (["footprint", "--model", "gpt-17", "--tokens", "5"], "unknown model 'gpt-17'"),   # registry lookups
    (["hardware", "--gpu", "h999"], "unknown GPU 'h999'"),
    (["budget", "--transfer-size", "1GB", "--link", "warp"], "unknown link 'warp'"),
    (["replay", "--policy", "mru"], "unknown eviction policy 'mru'"),
    (["trace", "stats", "/no/such/trace.jsonl"], "/no/such/trace.jsonl"),             # a missing file
])
def test_user_error_is_one_line_exit_2(args, needle):
    _assert_one_line(_run(args), needle)


@pytest.mark.parametrize("exc", [InputError("t.jsonl", 3, "prompt_tokens", "must be >= 0, got -3"),
                                 UnknownNameError("eviction policy", "mru", ["lru", "slru"]),
                                 UserError("bad value for --something")])
def test_user_error_types_raised_inside_a_command_stay_one_line(monkeypatch, exc):
    def user_mistake(*args, **kwargs):
        raise exc

    monkeypatch.setattr("pcs.cli.footprint.compute_footprint", user_mistake)
    _assert_one_line(_run(FOOTPRINT), str(exc))


@pytest.mark.parametrize("exc", [AssertionError("ledger out of balance"), TypeError("unsupported operand"),
                                 IndexError("list index out of range"), KeyError("hit_tokens"),
                                 ZeroDivisionError("division by zero"),
                                 ValueError("too many values to unpack (expected 2)")])
def test_internal_error_shows_traceback_and_says_it_is_a_bug(monkeypatch, exc):
    def bug(*args, **kwargs):
        raise exc

    monkeypatch.setattr("pcs.cli.footprint.compute_footprint", bug)
    result = _run(FOOTPRINT)
    assert result.exit_code == 1, result.output
    err = result.stderr.splitlines()
    assert err[0] == "Traceback (most recent call last):"
    assert any(ln.startswith(type(exc).__name__) for ln in err)          # the exception line of the traceback
    assert "in bug" in result.stderr                                       # the frame that raised it
    assert err[-1].startswith("pcs: internal error:") and "bug in pcs" in err[-1] and "report" in err[-1]
    assert result.stdout == ""


def test_internal_error_in_replay_is_graded_the_same(monkeypatch):
    def bug(*args, **kwargs):
        return {}["summary"]                       # a KeyError from a bug, not from the user's input

    monkeypatch.setattr("pcs.engine.api.replay", bug)
    result = _run(["replay", "-q"])
    assert result.exit_code == 1 and "KeyError: 'summary'" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("pcs: internal error:")


@pytest.mark.parametrize("kind,line", [("unpack", "ValueError: too many values to unpack (expected 2)"),
                                       ("numpy", "ValueError: operands could not be broadcast together")])
def test_a_value_error_from_a_bug_in_the_renderer_is_a_bug_not_a_user_error(monkeypatch, kind, line):
    """Python and numpy raise ValueError for bugs; only pcs.errors.UserError is graded as the user's (pcs/errors.py)."""
    import numpy as np

    def render_replay(payload):
        if kind == "unpack":
            x, y = [1, 2, 3]                       # a planted bug: three values into two names
        return str(np.zeros(3) + np.zeros(4))      # a planted bug: shapes (3,) and (4,) do not broadcast

    monkeypatch.setattr("pcs.report.replay.render_replay", render_replay)
    result = _run(["replay", "--timing", "sequential", "--tier", "gpu=200blocks"])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Traceback (most recent call last):")
    assert any(ln.startswith(line) for ln in result.stderr.splitlines())
    assert "in render_replay" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("pcs: internal error:") and "bug in pcs" in result.stderr
    assert "pcs: error:" not in result.stderr


def test_pcs_raises_no_plain_value_error():
    """Bad input raises pcs.errors.UserError (or a subclass), so the CLI can tell it from a ValueError that Python or
    numpy raise for a bug (pcs/errors.py); an internal invariant is an assert. A new ``raise ValueError(`` in pcs/
    would print a user's mistake with a traceback, or hide the grade."""
    from pathlib import Path

    import pcs

    root = Path(pcs.__file__).parent
    found = [f"{p.relative_to(root)}:{i}" for p in sorted(root.rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if "raise ValueError(" in line]
    assert found == []
