"""A sweep point's failure is graded as the CLI grades a command's (pcs/errors.py): a UserError (or OSError) is the
input's, one line; any other exception -- a plain ValueError from a bug too -- is a bug, its traceback kept."""
from types import SimpleNamespace

import pytest

import pcs
from pcs.errors import UserError
from pcs.sweep.worker import run_task


@pytest.mark.parametrize("exc,user", [(UserError("--tokens must be >= 0"), True), (OSError("no such file"), True),
                                      (ValueError("too many values to unpack (expected 2)"), False),
                                      (KeyError("hit_tokens"), False)])
def test_failure_grades(monkeypatch, exc, user):
    def planted(**kwargs):
        raise exc

    monkeypatch.setattr(pcs, "footprint", planted, raising=False)
    out = run_task(SimpleNamespace(point_id=7, call="footprint", kwargs={}, trace_key=None, options={}))
    assert out.row is None and out.user_error is user
    assert (out.traceback is None) is user
    if not user:
        assert "planted" in out.traceback and type(exc).__name__ in out.traceback
