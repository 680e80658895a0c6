"""A user's compute model: its answers are checked at the boundary (docs/semantics.md §10;
pcs/engine/computecheck.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import pcs
from pcs.compute import ComputeModel
from pcs.engine.computecheck import CheckedCompute, checked_compute
from pcs.errors import UserError

TIERS = ["gpu=50blocks", "cpu=100blocks"]


class Fixed:
    """prefill_s and decode_s_per_token return the given constants."""

    def __init__(self, prefill, decode):
        self.prefill, self.decode = prefill, decode

    def prefill_s(self, new_tokens, cached_tokens):
        return self.prefill

    def decode_s_per_token(self, context_tokens):
        return self.decode


@pytest.mark.parametrize("timing", ["modeled", "sequential"])
@pytest.mark.parametrize("value, says", [
    (math.nan, "returned nan seconds"), (math.inf, "returned inf seconds"), (-1.0, "returned -1.0 seconds"),
    (None, "returned None (NoneType)"), ("0.1", "returned '0.1' (str)"),
])
def test_bad_prefill_answer_is_a_user_error_in_both_timings(timing, value, says):
    with pytest.raises(UserError, match=r"compute\.prefill_s\(.*" + says.replace("(", r"\(").replace(")", r"\)")):
        pcs.replay(None, tiers=TIERS, compute=Fixed(value, 0.01), timing=timing)


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
def test_bad_decode_answer_is_a_user_error_under_modeled_timing(value):
    # modeled timing asks decode_s_per_token for every request's context (sequential timing never does)
    with pytest.raises(UserError, match=rf"compute\.decode_s_per_token\(context_tokens=\d+\) returned {value!r}"):
        pcs.replay(None, tiers=TIERS, compute=Fixed(0.1, value), timing="modeled")
    with pytest.raises(UserError, match=r"compute\.decode_s_per_token"):
        pcs.fleet_replay(None, instances=2, tiers=TIERS, compute=Fixed(0.1, value), timing="modeled")


def test_the_failing_element_of_an_array_answer_is_named():
    class Arr(Fixed):
        def prefill_s(self, new_tokens, cached_tokens):   # second element NaN
            return np.where(np.asarray(new_tokens) == 7, np.nan, 0.5)

    c = checked_compute(Arr(0, 0))
    assert isinstance(c, CheckedCompute)
    assert c.prefill_s(np.array([5, 6]), np.array([0, 0])).tolist() == [0.5, 0.5]
    with pytest.raises(UserError, match=r"prefill_s\(new_tokens=7, cached_tokens=3\) returned nan seconds"):
        c.prefill_s(np.array([5, 7]), np.array([0, 3]))


def test_pcs_own_model_and_none_are_not_wrapped_and_a_method_is_required():
    assert checked_compute(None) is None
    own = ComputeModel.__new__(ComputeModel)
    assert checked_compute(own) is own
    with pytest.raises(UserError, match=r"compute= must have a prefill_s\(\) method"):
        checked_compute(object())


def test_good_answers_pass_through_unchanged():
    # 0.1 s per prefill (hits or not), one GPU tier (no restore time): every TTFT is 0.1 s under sequential timing
    r = pcs.replay(None, tiers=["gpu=50blocks"], compute=Fixed(0.1, 0.01), timing="sequential")
    assert set(r.requests.column("ttft_s").to_pylist()) == {0.1}
