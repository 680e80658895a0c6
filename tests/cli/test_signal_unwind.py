"""pcs.cli.common.unwind_on_signals: a SIGTERM received inside the block always ends it with Terminated.

Python runs a signal handler between bytecodes, also inside a finaliser (``__del__``), where an exception is
passed to ``sys.unraisablehook`` ("Exception ignored in ...") and dropped (Python docs, "object.__del__": exceptions
raised by __del__ are ignored). A SIGTERM that lands there must still stop the command (exit 143), not let it
run to its end and exit 0.
"""
import os
import signal
import sys

import pytest

from pcs.cli.common import Terminated, unwind_on_signals
from pcs.outfile import TEMPORARY, create_temporary


class _SignalOnDrop:
    """Sends this process SIGTERM from its finaliser: the handler runs there (raise_signal checks signals)."""

    def __del__(self):
        signal.raise_signal(signal.SIGTERM)


def test_a_sigterm_dropped_in_a_finaliser_still_stops_the_block(monkeypatch):
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: dropped.append(u.exc_type))
    reached_end = False
    with pytest.raises(Terminated) as err:
        with unwind_on_signals():
            _SignalOnDrop()          # created and dropped at once: __del__ runs here
            reached_end = True       # the block goes on: the Terminated raised in __del__ was dropped
    assert dropped == [Terminated] and reached_end
    assert err.value.signum == signal.SIGTERM


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
