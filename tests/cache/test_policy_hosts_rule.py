"""One rule on every host for what a Python policy may answer (docs/policies.md "What a
policy may answer"; pcs/cache/policyguard.py ``as_index``, pcs/cache/_pol_py.c ``pyhost_index``).

Each block of ``evict(n)`` and each handle of ``victims(n, runs)`` is any object with ``__index__`` that is not a
bool: a numpy integer names the same block as the int, so a plug-in answering ``np.int64`` runs, on the compiled
host and on ``--engine reference``, exactly as the one answering ``int`` (the same JSON, policy names aside).
A float -- even ``38.0``, which equals the key 38 in a dict -- is refused on both hosts with one line that prints
the answer as given (``(answer 38.0, ...)``), never ``18446744073709551615`` or "block" for a non-int.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT, assert_one_line_error, invoke
from pcs.cache.policies.array_lru import ArrayLRU
from pcs.cache.policyguard import as_index

sys.path.insert(0, str(Path(__file__).parent / "plugin"))
from pcs_demo_policy import DemoMRU  # noqa: E402

T = ROOT / "traces" / "sample_chat.jsonl"
TIERS = ("--tier", "gpu=40blocks", "--tier", "cpu=150blocks")


def _cast(items, how):
    return [np.int64(x) if how == "numpy" else float(x) for x in items] if how in ("numpy", "float") else items


class KeyAnswers(DemoMRU):
    """DemoMRU (key contract) answering ``evict(n)`` with its right blocks as ``how`` says: ints, numpy ints, floats."""

    name, how = "rule_keys", "int"

    def evict(self, n):
        got = super().evict(n)
        return None if got is None else _cast(got, self.how)


class HandleAnswers(ArrayLRU):
    """ArrayLRU (handle contract) answering ``victims(n, runs)`` with its right handles as ``how`` says."""

    name, how = "rule_handles", "int"

    def victims(self, n, runs):
        got = super().victims(n, runs)
        return _cast(list(got), self.how) if n else got


def test_as_index_is_the_rule():
    assert as_index(5) == 5 and as_index(np.int64(5)) == 5 and as_index(np.uint8(7)) == 7
    assert type(as_index(np.int64(5))) is int
    for bad in (True, False, np.bool_(True), 5.0, np.float64(5.0), "5", None, b"\x05"):
        assert as_index(bad) is None, bad


@pytest.fixture
def registered(monkeypatch):
    from pcs.cache import policies as reg

    for cls in (KeyAnswers, HandleAnswers):
        monkeypatch.setitem(reg._POLICIES, cls.name, cls)


def _run(cls, how, engine, monkeypatch):
    monkeypatch.setattr(cls, "how", how)
    return invoke("replay", T, *TIERS, "--policy", cls.name, "--engine", engine, "-q", "--format", "json")


@pytest.mark.parametrize("engine", ["reference", "auto"])
@pytest.mark.parametrize("cls", [KeyAnswers, HandleAnswers])
def test_numpy_ints_are_the_same_blocks_on_both_hosts(registered, monkeypatch, cls, engine):
    runs = []
    for how in ("int", "numpy"):
        out = _run(cls, how, engine, monkeypatch)
        assert out.exit_code == 0, out.output
        runs.append(json.loads(out.stdout))
    assert runs[0]["tiers"][0]["evicted_blocks"] > 0        # the victims path ran (40 blocks overflow)
    assert runs[0] == runs[1]


@pytest.mark.parametrize("engine", ["reference", "auto"])
def test_a_float_block_is_refused_on_both_hosts_as_given(registered, monkeypatch, engine):
    out = _run(KeyAnswers, "float", engine, monkeypatch)
    assert_one_line_error(out, "eviction policy 'rule_keys' broke the contract of pcs/cache/policies/base.py",
                          "evict(n) returned a bool or a non-int, not a block (answer ")
    assert ".0, n = " in out.output and "18446744073709551615" not in out.output


@pytest.mark.parametrize("engine", ["reference", "auto"])
def test_a_float_handle_is_refused_on_both_hosts(registered, monkeypatch, engine):
    out = _run(HandleAnswers, "float", engine, monkeypatch)
    assert_one_line_error(out, "eviction policy 'rule_handles'", "a non-int", "0.0")
