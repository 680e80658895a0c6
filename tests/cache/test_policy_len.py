"""No host trusts a plug-in's ``__len__``.

The compiled host (pcs/cache/_pol_py.c) never asks a Python policy how many blocks it holds; the reference host
(:class:`pcs.cache.policyguard.GuardedPolicy`) now counts them itself (add - remove - drop - evicted). So a
``__len__`` that answers -1, 0 or 1000 too many changes nothing on either engine: the run is the one of the same
policy with a right ``__len__`` (it was "bug in pcs" or a wrong blame of evict on the reference, a run on the other).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helpers import ROOT, invoke
from pcs.cache.policyguard import GuardedPolicy

sys.path.insert(0, str(Path(__file__).parent / "plugin"))
from pcs_demo_policy import DemoMRU  # noqa: E402

T = ROOT / "traces" / "sample_chat.jsonl"
TIERS = ("--tier", "gpu=40blocks", "--tier", "cpu=150blocks")


class LenLies(DemoMRU):
    """DemoMRU whose ``__len__`` answers as ``lie`` says: the truth, -1, 0, or the truth + 1000."""

    name, lie = "len_lies", "truth"

    def __len__(self):
        true = super().__len__()
        return {"truth": true, "negative": -1, "zero": 0, "big": true + 1000}[self.lie]


def test_the_guard_counts_what_the_host_did():
    g = GuardedPolicy(LenLies(10))
    LenLies.lie = "negative"
    try:
        keys = [1, 2, 3, 4]
        g.add(keys)                    # 4 held
        g.remove([2])                  # pinned: 3 held
        g.drop([4])                    # left the tier: 2 held
        assert len(g) == 2
        assert len(g.evict(1)) == 1    # 1 held
        assert len(g) == 1 and g.inner.__len__() == -1   # the policy still lies; len() of it would raise
    finally:
        LenLies.lie = "truth"


@pytest.mark.parametrize("engine", ["reference", "auto"])
def test_a_wrong_len_changes_nothing_on_either_host(monkeypatch, engine):
    from pcs.cache import policies as reg

    monkeypatch.setitem(reg._POLICIES, LenLies.name, LenLies)
    runs = {}
    for lie in ("truth", "negative", "zero", "big"):
        monkeypatch.setattr(LenLies, "lie", lie)
        out = invoke("replay", T, *TIERS, "--policy", LenLies.name, "--engine", engine, "-q", "--format", "json")
        assert out.exit_code == 0, out.output
        runs[lie] = json.loads(out.stdout)
    assert runs["truth"]["tiers"][0]["evicted_blocks"] > 0      # 40 GPU blocks overflow: evictions ran
    assert all(r == runs["truth"] for r in runs.values())
