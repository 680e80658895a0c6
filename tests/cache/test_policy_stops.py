"""What a plug-in's call lets through, on both hosts (pcs.errors.STOPS,
pcs/cache/policyguard.py ``_call``, pcs/cache/_pol_py.c ``pyhost_fail``).

Any exception a policy raises is the policy's -- ``SystemExit(0)`` too: one line ``pcs: error: eviction policy
'...' raised SystemExit in ...``, exit 2 (on main, ``--engine reference`` ended with exit 0 and no output). Ctrl-C
(``KeyboardInterrupt``) and a signal (SIGTERM: ``pcs.cli.common.Terminated``) arriving during the call are not
the policy's: the CLI's own lines, ``pcs: interrupted`` / exit 130 and ``pcs: terminated by SIGTERM`` / exit 143
(128 + 15), on both hosts (on main the compiled one said ``raised KeyboardInterrupt in victims()``, exit 2).
"""
from __future__ import annotations

import signal

import pytest

from helpers import ROOT, assert_one_line_error, invoke
from pcs.cache.policies.array_lru import ArrayLRU

T = ROOT / "traces" / "sample_chat.jsonl"


class Stops(ArrayLRU):
    """ArrayLRU whose first ``victims`` call with ``n`` > 0 raises (or signals) as ``how`` says."""

    name, how = "stops_lru", "sysexit"

    def victims(self, n, runs):
        if n:
            if self.how == "sysexit":
                raise SystemExit(0)
            if self.how == "kbint":
                raise KeyboardInterrupt
            signal.raise_signal(signal.SIGTERM)     # the CLI's handler raises Terminated here
        return super().victims(n, runs)


def _run(monkeypatch, how, engine):
    from pcs.cache import policies as reg

    monkeypatch.setitem(reg._POLICIES, Stops.name, Stops)
    monkeypatch.setattr(Stops, "how", how)
    return invoke("replay", T, "--tier", "gpu=40blocks", "--policy", Stops.name, "--engine", engine, "-q")


@pytest.mark.parametrize("engine", ["reference", "auto"])
def test_system_exit_is_the_policys_error(monkeypatch, engine):
    out = _run(monkeypatch, "sysexit", engine)
    assert_one_line_error(out, "eviction policy 'stops_lru' raised SystemExit in ")


@pytest.mark.parametrize("engine", ["reference", "auto"])
@pytest.mark.parametrize("how,code,line", [("kbint", 130, "pcs: interrupted"),
                                           ("sigterm", 143, "pcs: terminated by SIGTERM")])
def test_ctrl_c_and_a_signal_are_not_blamed_on_the_policy(monkeypatch, engine, how, code, line):
    out = _run(monkeypatch, how, engine)
    assert out.exit_code == code, out.output
    assert out.stderr.strip() == line and "stops_lru" not in out.output
