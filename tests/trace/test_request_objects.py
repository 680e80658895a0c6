"""Request-like objects from the Python API: each field checked as the file readers check theirs, naming the
request index and the field (pcs/trace/reqcheck.py; docs/semantics.md §1)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

import pcs
from pcs.errors import UserError

GOOD = dict(request_id=0, arrival_s=0.0, prompt_tokens=1024, output_tokens=5,
            block_hashes=np.array([1, 2], dtype=np.uint64), block_size=512)


def _req(**change):
    return SimpleNamespace(**{**GOOD, **change})


@pytest.mark.parametrize("field, value, says", [
    ("arrival_s", math.nan, "must be finite, got nan"),
    ("arrival_s", math.inf, "must be finite, got inf"),
    ("arrival_s", None, "must be a number of seconds, got None"),
    ("arrival_s", "0", "must be a number of seconds, got '0'"),
    ("prompt_tokens", math.nan, "must be an integer, got nan"),
    ("prompt_tokens", 1024.9, "must be an integer, got 1024.9"),
    ("prompt_tokens", 2**70, "must be in 0..9,223,372,036,854,775,807, got 1180591620717411303424"),
    ("output_tokens", True, "must be an integer, got True"),
    ("output_tokens", -5, "must be in 0..9,223,372,036,854,775,807, got -5"),
    ("block_size", 512.7, "must be an integer, got 512.7"),
    ("block_size", "512", "must be an integer, got '512'"),
    ("block_size", 0, "must be in 1..1,048,576, got 0"),
    ("block_hashes", [-1, 2], "element 0 must be an integer in 0..2\\^64 - 1, got -1"),
    ("block_hashes", np.array([5, -1]), "element 1 must be an integer in 0..2\\^64 - 1, got -1"),
    ("block_hashes", [2**70, 2], "element 0 must be an integer in 0..2\\^64 - 1, got 1180591620717411303424"),
    ("block_hashes", ["a", "b"], "element 0 must be an integer in 0..2\\^64 - 1, got 'a'"),
    ("block_hashes", [1.5, 2.0], "element 0 must be an integer in 0..2\\^64 - 1, got 1.5"),
    ("block_hashes", np.array([[1, 2]], dtype=np.uint64), r"must be 1-D, got shape \(1, 2\)"),
    ("block_hashes", None, "must be a sequence of integers, got NoneType"),
    ("block_hashes", (h for h in [1, 2]), "must be a sequence of integers, got generator"),
    # ceil(100000 / 512) = 196 ids needed (195 full blocks of 512 = 99,840 tokens + one partial of 160)
    ("block_hashes", [1, 2], r"has 2 ids but ceil\(100,000 / block size 512\) = 196 \(or 195, the full blocks only\)"),
])
@pytest.mark.parametrize("call", ["replay", "curve", "fleet_replay"])
def test_bad_request_field_names_request_and_field(call, field, value, says):
    change = {field: value}
    if says.startswith("has 2 ids"):
        change["prompt_tokens"] = 100_000
    bad = _req(**change)
    run = {"replay": lambda t: pcs.replay(t, tiers=["gpu=400blocks"]),
           "curve": lambda t: pcs.curve(t, capacities=[1, 10]),
           "fleet_replay": lambda t: pcs.fleet_replay(t, instances=2, tiers=["gpu=400blocks"])}[call]
    with pytest.raises(UserError, match=rf"request 1: field '{field}': {says}"):
        run([_req(), bad])


def test_out_of_order_requests_are_refused_as_files_are():
    # files refuse a decreasing timestamp ("decreases; use --sort"); a list does the same, naming request 1
    with pytest.raises(UserError, match=r"request 1: field 'arrival_s': 1 s decreases \(the request before arrives "
                                        r"at 5 s\); give the requests in arrival order"):
        pcs.replay([_req(arrival_s=5.0), _req(arrival_s=1.0)], tiers=["gpu=400blocks"])


def test_in_order_requests_replay_with_the_hand_counted_hit():
    # request 1 shares block 1 (512 of its 1024 prompt tokens; the last block holds the recomputed last token):
    # hits 512 of 2 x 1024 prompt tokens = 0.25 (request 0's prefill is done long before 1 s)
    r = pcs.replay([_req(arrival_s=0.0), _req(arrival_s=1.0)], tiers=["gpu=400blocks"])
    assert r.summary.hit_ratio == 0.25
    # equal arrivals are in order (not refused)
    assert pcs.replay([_req(arrival_s=1.0), _req(arrival_s=1.0)], tiers=["gpu=400blocks"]).summary.requests == 2


def test_order_is_checked_across_batches():
    # 3 requests grouped 2 at a time: the decrease sits at the start of the second batch (request 2)
    from pcs.trace.batches import as_batches

    reqs = [_req(arrival_s=0.0), _req(arrival_s=2.0), _req(arrival_s=1.0)]
    with pytest.raises(UserError, match=r"request 2: field 'arrival_s': 1 s decreases"):
        list(as_batches(reqs, rows=2))
