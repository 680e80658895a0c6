"""``progress=`` is called with increments: the requests replayed since its previous call, at least once, summing to
the requests of the run, in every timing and twin (docs of :func:`pcs.replay`).

traces/sample_chat.jsonl holds 1,700 requests (one JSON line each: ``wc -l`` gives 1,700), so the calls must sum to
1,700 whatever engine runs; a wrong type is refused before the run.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import pcs
from pcs.errors import UserError

CHAT = str(Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl")
TWO = ["gpu=1000blocks", "cpu=4000blocks"]


@pytest.mark.parametrize("native", ["c", "python"])
@pytest.mark.parametrize("kw", [dict(timing="sequential"), dict(timing="sequential", tiers=["gpu=1000blocks"]),
                                dict(compute_mode="infinite"), dict(compute_mode="step")],
                         ids=["sequential", "sequential-one-tier", "infinite", "step"])
def test_increments_sum_to_the_requests_in_every_timing(native, kw):
    calls: list = []
    pcs.replay(CHAT, **({"tiers": TWO} | kw), native=native, progress=calls.append)
    assert calls and all(type(n) is int and n > 0 for n in calls)
    assert sum(calls) == 1_700


@pytest.mark.parametrize("kw, named", [(dict(progress=5), "progress="), (dict(rules=None), "rules="),
                                       (dict(hardware_table={"gpu": {}}), "hardware_table="),
                                       (dict(hardware_table=5), "hardware_table=")])
def test_a_wrong_object_is_refused_naming_the_keyword(kw, named):
    calls: list = []
    with pytest.raises(UserError, match=named):
        pcs.replay(CHAT, tiers=TWO, compute=None, **kw) if "progress" in kw else \
            pcs.replay(CHAT, tiers=TWO, progress=calls.append, **kw)
    assert calls == []          # refused up front: no chunk ran
