"""pcs.cli.common.unwind_on_signals: a SIGTERM received inside the block always ends it with Terminated.

Python runs a signal handler between bytecodes, also inside a finaliser (``__del__``), where an exception is
passed to ``sys.unraisablehook`` ("Exception ignored in ...") and dropped (Python docs, "object.__del__": exceptions
raised by __del__ are ignored). A SIGTERM that lands there must still stop the command (exit 143), not let it
run to its end and exit 0.
"""
import os
import signal
import sys
import time
import weakref

import pytest

from pcs.cli.common import Terminated, unwind_on_signals
from pcs.outfile import TEMPORARY, create_temporary


class _SignalOnDrop:
    """Sends this process SIGTERM from its finaliser: the handler runs there (raise_signal checks signals)."""

    def __del__(self):
        signal.raise_signal(signal.SIGTERM)


def _work_until_stopped(seconds: float = 5.0) -> str:
    """Busy Python work for up to ``seconds``: where a re-raised Terminated lands (it propagates from here)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(100))
    return "ran to the end"


@pytest.mark.parametrize("drop", ["finaliser", "weakref callback"])
def test_a_sigterm_dropped_where_it_landed_stops_the_block_soon_and_quietly(monkeypatch, drop):
    # The import system's module locks have weak-reference callbacks: a SIGTERM landing in one (CI, 2026-12-04)
    # printed "Exception ignored in: <function _get_module_lock.<locals>.cb>" with a traceback and let the replay
    # write its output before the end of the block raised. Now the drop is silent and the stop is raised again
    # while the block is still working (1 ms timer), long before the 5 s of work end.
    dropped, reached = [], []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: dropped.append(u.exc_type))
    with pytest.raises(Terminated) as err:
        with unwind_on_signals():
            if drop == "finaliser":
                _SignalOnDrop()          # created and dropped at once: __del__ runs here
            else:
                target = _Target()
                ref = weakref.ref(target, lambda r: signal.raise_signal(signal.SIGTERM))  # noqa: F841
                del target               # the callback runs here; its Terminated is dropped
            reached.append("after the drop")
            reached.append(_work_until_stopped())
    assert dropped == []                  # not passed on to the hook from before the block: nothing printed
    assert reached == ["after the drop"]  # stopped inside the work, not at the block's end
    assert err.value.signum == signal.SIGTERM
    assert sys.unraisablehook is not None and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_other_unraisable_errors_still_reach_the_previous_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type))

    class _Raises:
        def __del__(self):
            raise ValueError("a finaliser's own error")

    with unwind_on_signals():
        _Raises()
    assert seen == [ValueError]
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL   # restored (pytest leaves SIGALRM alone)


class _Target:
    """Anything a weak reference can point at."""


def test_a_sigterm_raised_where_it_lands_is_raised_there():
    before, after = signal.getsignal(signal.SIGTERM), []
    with pytest.raises(Terminated):
        with unwind_on_signals():
            signal.raise_signal(signal.SIGTERM)
            after.append("not reached")
    assert after == []
    assert signal.getsignal(signal.SIGTERM) is before   # the handler from before the block is back


def test_create_temporary_lists_the_name_before_the_file_exists(tmp_path, monkeypatch):
    seen, real_open = [], os.open

    def spy_open(path, flags, mode):   # the name must be listed by the time the file is created
        seen.append(path in TEMPORARY)
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", spy_open)
    fd, path = create_temporary(tmp_path, "pcs-stdin-")
    monkeypatch.undo()
    os.close(fd)
    assert seen == [True] and path in TEMPORARY
    assert os.path.basename(path).startswith("pcs-stdin-") and len(os.path.basename(path)) == len("pcs-stdin-") + 8
    assert (os.stat(path).st_mode & 0o777) == 0o600
    TEMPORARY.discard(path)


class _SignalOnSetName:
    """A class attribute whose ``__set_name__`` -- called as the class is made, as for every dataclass field --
    sends this process ``signum``: the handler runs there (raise_signal checks signals)."""

    def __init__(self, signum):
        self.signum = signum

    def __set_name__(self, owner, name):
        signal.raise_signal(self.signum)


@pytest.mark.parametrize("signum, stop", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)],
                         ids=["SIGINT", "SIGTERM"])
def test_a_stop_python_turns_into_runtimeerror_still_stops_the_block(signum, stop):
    # Python 3.11 wraps what a __set_name__ raises: "RuntimeError: Error calling __set_name__ on ...", the stop
    # its cause. A Ctrl-C that landed in a dataclass field's, while `pcs replay` imported its engine, ended the
    # command with that RuntimeError graded a bug (exit 1 and a traceback; CI, tests/cli/test_hostile_signals.py).
    with pytest.raises(stop) as err:
        with unwind_on_signals():
            type("Made", (), {"field": _SignalOnSetName(signum)})
    assert isinstance(err.value.__cause__, (RuntimeError, stop))   # RuntimeError on 3.11; Python 3.12 wraps no more


def test_a_stop_a_library_replaced_with_its_own_error_still_stops_the_block():
    # An `except` that turns whatever it caught into its own error (as numpy, pyarrow or a generator's close can)
    with pytest.raises(Terminated) as err:
        with unwind_on_signals():
            try:
                signal.raise_signal(signal.SIGTERM)
            except BaseException as exc:
                raise ValueError("the library's own error") from exc
    assert err.value.signum == signal.SIGTERM and isinstance(err.value.__cause__, ValueError)


def test_an_error_with_no_stop_signal_is_left_as_it_is():
    with pytest.raises(ValueError, match="a bug"):
        with unwind_on_signals():
            raise ValueError("a bug")


def test_stop_replaced_raises_the_first_stop_in_the_place_of_the_error():
    from pcs.cli.common import _stop_replaced

    bug = RuntimeError("in its place")
    assert _stop_replaced([], bug) is None                      # no signal came: the error is the error
    with pytest.raises(Terminated) as err:
        _stop_replaced([signal.SIGHUP, signal.SIGINT], bug)     # the first signal decides, as at the block's end
    assert err.value.signum == signal.SIGHUP and err.value.__cause__ is bug
    with pytest.raises(KeyboardInterrupt):
        _stop_replaced([signal.SIGINT, signal.SIGTERM], bug)



def test_an_output_replaced_is_named_even_when_a_stop_lands_in_its_cleanup(tmp_path, monkeypatch):
    # Ctrl-C in the temporary file's removal, after the rename: the output is whole (the new text) and must be in
    # WRITTEN, which the command's one line names ("complete before it: ..."); it was recorded only after.
    def stop_in_unlink(path):
        raise KeyboardInterrupt

    text, written, names = _output_stopped_in(tmp_path, monkeypatch, "unlink", stop_in_unlink)
    assert (text, written) == ("new\n", [str(tmp_path / "rows.csv")])
    assert names == ["rows.csv"]   # renamed: no temporary file left


def _output_stopped_in(tmp_path, monkeypatch, call: str, stand_in):
    """Write "new" through ``atomic_output`` over rows.csv holding "old", with ``os.<call>`` replaced by
    ``stand_in`` (which raises the stop) once the text is written; returns (rows.csv's text, the outputs recorded
    as written, the folder's file names)."""
    from pcs import outfile

    out, written = tmp_path / "rows.csv", []
    out.write_text("old\n")
    monkeypatch.setattr(outfile, "WRITTEN", written)
    real = getattr(os, call)
    with pytest.raises(KeyboardInterrupt):
        with outfile.atomic_output(out) as tmp:
            with open(tmp, "w") as f:
                f.write("new\n")
            monkeypatch.setattr(os, call, stand_in)
    monkeypatch.setattr(os, call, real)
    return out.read_text(), written, sorted(p.name for p in tmp_path.iterdir())


class _HashSendsSignal:
    """A key whose ``__hash__`` sends this process ``signum``: the handler runs inside ``dict``'s C code, where
    Python gives the stop back to the dict as the hash's exception (as a deferred ``__hash__`` compiled on first
    use by pcs._dataclass does)."""

    def __init__(self, signum):
        self.signum = signum

    def __hash__(self):
        signal.raise_signal(self.signum)
        return 0


@pytest.mark.parametrize("signum, stop", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)],
                         ids=["SIGINT", "SIGTERM"])
def test_no_output_is_published_after_a_stop_that_code_caught_as_another_error(tmp_path, signum, stop):
    # A stop that reaches code as another exception it catches (pcs/engine/api.py's cost cache catches TypeError
    # around a hash) let the run go on and replace rows.csv after the signal (1 in ~900 injected points,
    # flake43's driver): the block still ended with the stop, but the old output was gone. Now nothing is
    # published once a stop has arrived (pcs.errors.raise_if_stopped in pcs.outfile): rows.csv keeps its text and
    # no temporary file is left.
    from pcs.outfile import atomic_output

    out = tmp_path / "rows.csv"
    out.write_text("the old output\n")
    with pytest.raises(stop):
        with unwind_on_signals():
            try:
                {_HashSendsSignal(signum): 1}
            except BaseException:    # as `except TypeError` there: the stop is taken for another error
                pass
            with atomic_output(out) as tmp:
                with open(tmp, "w") as f:
                    f.write("written after the signal\n")
    assert out.read_text() == "the old output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


def test_outside_a_signal_block_outputs_are_published():
    from pcs.errors import STOP_CHECKS, raise_if_stopped

    assert STOP_CHECKS == []           # the block removes its check: a library caller after a command is unaffected
    raise_if_stopped()
    with unwind_on_signals():
        assert len(STOP_CHECKS) == 1
        raise_if_stopped()             # no signal came: nothing raised
    assert STOP_CHECKS == []


@pytest.mark.parametrize("after", [True, False], ids=["after the rename", "before the rename"])
def test_an_output_renamed_as_a_stop_lands_is_named(tmp_path, monkeypatch, after):
    # os.replace over an existing file took 2-17 ms on this machine's ext4 after the new file was in place; a
    # Ctrl-C sent then is raised as the call returns, before WRITTEN.append: the command said "pcs: interrupted"
    # with no "complete before it: rows.csv" while rows.csv held the new rows (review, 3 of 3 SIGINT at +0-2 ms).
    # A stop before the rename leaves the old file, not named.
    real_replace = os.replace

    def stopped_replace(src, dst):
        if after:
            real_replace(src, dst)
        raise KeyboardInterrupt

    text, written, names = _output_stopped_in(tmp_path, monkeypatch, "replace", stopped_replace)
    assert text == ("new\n" if after else "old\n")
    assert written == ([str(tmp_path / "rows.csv")] if after else [])
    assert names == ["rows.csv"]
