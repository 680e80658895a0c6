"""One argument checker (pcs.argcheck) for the public API functions.

Members: pcs.budget, pcs.envelope, pcs.curve, pcs.replay, pcs.compare, pcs.footprint. The rule: an integer
parameter takes any numbers.Integral but bool (numpy ints too), a real any numbers.Real but bool, finite; the
CLI's ranges apply; a str where a list of numbers is expected is refused; a refusal is a UserError naming the
parameter, never another value silently.
"""
import numpy as np
import pytest

import pcs
from helpers import HAND_HITS, HAND_PROMPT, HAND_SPEC, SMALL_TRACE, make_requests
from pcs.argcheck import check_flag, check_int, check_number_list, check_real
from pcs.errors import UserError


# --- the checker itself -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [8, np.int64(8), np.int32(8), np.uint8(8)])
def test_check_int_takes_every_integral(value):
    out = check_int(value, "tp", lo=1)
    assert out == 8 and type(out) is int


@pytest.mark.parametrize("value", [True, np.bool_(True), 8.0, 8.5, "8", None, float("nan"), [8]])
def test_check_int_refuses_the_rest(value):
    with pytest.raises(UserError, match="^tp must be an integer"):
        check_int(value, "tp", lo=1)


def test_check_int_range_names_the_bound():
    with pytest.raises(UserError, match=r"^points must be in \[1, 1000\], got 1001$"):
        check_int(1001, "points", lo=1, hi=1000)
    with pytest.raises(UserError, match=r"^seed must be >= 0, got -1$"):     # the default int64 cap not shown
        check_int(-1, "seed", lo=0)
    with pytest.raises(UserError, match=r"^seed must be in \[0, 2\^63 - 1\], got 1208925819614629174706176$"):
        check_int(2**80, "seed", lo=0)                                        # 2^80 = 1208925819614629174706176


@pytest.mark.parametrize("value, expected", [(0.5, 0.5), (np.float32(0.5), 0.5), (np.float64(0.25), 0.25),
                                             (1, 1.0), (np.int64(1), 1.0)])
def test_check_real_takes_every_real(value, expected):
    out = check_real(value, "share", lo=0, hi=1)
    assert out == expected and type(out) is float


@pytest.mark.parametrize("value, needle", [(True, "a number"), ("0.5", "a number"), (1j, "a number"),
                                           (float("nan"), "a finite number"), (float("inf"), "a finite number"),
                                           (10**400, "a finite number"), (1.5, r"in \[0, 1\]")])
def test_check_real_refuses_the_rest(value, needle):
    with pytest.raises(UserError, match=f"^share must be {needle}"):
        check_real(value, "share", lo=0, hi=1)


def test_check_real_open_bounds():
    with pytest.raises(UserError, match=r"in \(0, 1\]"):
        check_real(0.0, "sample_rate", lo=0, lo_open=True, hi=1)
    assert check_real(1.0, "sample_rate", lo=0, lo_open=True, hi=1) == 1.0


def test_check_number_list_refuses_a_string_and_names_the_element():
    with pytest.raises(UserError, match="^capacities must be a list of numbers, got '10'$"):
        check_number_list("10", "capacities", check_int)
    with pytest.raises(UserError, match=r"^capacities\[1\] must be an integer, got 10.5"):
        check_number_list([1, 10.5], "capacities", check_int)
    assert check_number_list(np.array([3, 4]), "capacities", check_int) == [3, 4]


def test_check_flag():
    assert check_flag(np.bool_(True), "gap_oracle") is True and check_flag(False, "gap_oracle") is False
    for bad in ("yes", 1, None):
        with pytest.raises(UserError, match="^gap_oracle must be True or False"):
            check_flag(bad, "gap_oracle")


# --- F5: pcs.budget ---------------------------------------------------------------------------------------------

def test_budget_takes_numpy_scalars():
    # u_C = 10 / 20 = 0.5, u_B = 1 / 2 = 0.5: an exact tie, reported as capacity (docs/semantics.md §10)
    r = pcs.budget(np.int64(10), np.int64(20), np.float32(1.0), np.float64(2.0))
    assert (r.u_C, r.u_B, r.binding, r.binding_tie) == (0.5, 0.5, "capacity", True)
    assert type(r.capacity_need_bytes) is int and type(r.bandwidth_need_bps) is float


@pytest.mark.parametrize("args, name", [
    ((10, 0.7, 1.0, 2.0), "capacity_have_bytes"),       # was ZeroDivisionError (int(0.7) = 0)
    ((10.9, 20, 1.0, 2.0), "capacity_need_bytes"),      # was silently 10 bytes
    ((True, 20, 1.0, 2.0), "capacity_need_bytes"),
    ((10, 0, 1.0, 2.0), "capacity_have_bytes"),
    ((10, 20, float("nan"), 2.0), "bandwidth_need_bps"),
    ((10, 20, 1.0, 0.0), "bandwidth_have_bps"),
])
def test_budget_refusals_name_the_parameter(args, name):
    with pytest.raises(UserError, match=f"^{name}=.*: must be"):
        pcs.budget(*args)


# --- pcs.envelope -------------------------------------------------------------------------------------------------

def test_envelope_takes_numpy_values():
    # D = 1 GB, margin = 100 - 30 - 5 = 65 ms: B* = 1e9 / 0.065 = 15.38 GB/s; at 10 GB/s the cached path is
    # 100 + 30 + 5 = 135 ms (slower than 100 ms), at 20 GB/s 50 + 35 = 85 ms (faster)
    r = pcs.envelope(np.int64(10**9), np.float64(0.1), 0.03, 0.005, np.array([10e9, 20e9]))
    assert r.break_even_bps == pytest.approx(1e9 / 0.065)
    assert [row.verdict for row in r.rows] == ["slower", "faster"]
    assert type(r.restore_bytes) is int and all(type(row.bandwidth_bps) is float for row in r.rows)


@pytest.mark.parametrize("kw, needle", [
    (dict(restore_bytes=1.5), "^restore_bytes=.*: must be an integer"),
    (dict(bandwidths_bps="1e9"), "^bandwidths_bps=.*: must be a list of numbers"),      # was 'got 1'
    (dict(bandwidths_bps=1e9), "^bandwidths_bps=.*: must be a list of numbers"),        # was a TypeError
    (dict(bandwidths_bps=[True]), r"^bandwidths_bps\[0\]=.*: must be a number"),
    (dict(full_prefill_s=float("nan")), "^full_prefill_s=.*: must be a finite number"),
    (dict(overlap_s=-1), "^overlap_s=.*: must be >= 0"),
])
def test_envelope_refusals_name_the_parameter(kw, needle):
    args = dict(restore_bytes=10**9, full_prefill_s=0.1, remaining_s=0.03, overhead_s=0.005, bandwidths_bps=[1e9])
    with pytest.raises(UserError, match=needle):
        pcs.envelope(**{**args, **kw})


# --- F6: pcs.curve ------------------------------------------------------------------------------------------------

def test_curve_numpy_capacities_are_the_hand_values():
    rows = pcs.curve(make_requests(HAND_SPEC), np.array([1, 4], dtype=np.int64), belady=False).rows
    # hand trace (tests/helpers.py): 12 hit tokens at 1 block, 24 at 4, of 43 prompt tokens
    assert [r.capacity_blocks for r in rows] == [1, 4]
    assert [r.lru_hit_ratio for r in rows] == pytest.approx([HAND_HITS[1] / HAND_PROMPT, HAND_HITS[4] / HAND_PROMPT])
    assert all(type(r.capacity_blocks) is int for r in rows)


@pytest.mark.parametrize("kw, needle", [
    (dict(capacities="10"), "^capacities=.*: must be a list of numbers"),            # was capacities [1, 0]
    (dict(capacities=[10.5]), r"^capacities\[0\]=.*: must be an integer"),           # was 10 blocks
    (dict(capacities=[True]), r"^capacities\[0\]=.*: must be an integer"),
    (dict(capacities=["10"]), r"^capacities\[0\]=.*: must be an integer"),
    (dict(capacities=[float("nan")]), r"^capacities\[0\]=.*: must be an integer"),   # was a plain ValueError
    (dict(capacities=[10**30]), r"^capacities\[0\]=.*: must be in \[0, 2\^63 - 1\]"),  # was OverflowError
    (dict(capacities=[-1]), r"^capacities\[0\]=.*: must be >= 0"),
    (dict(points=10**9), r"^points=.*: must be in \[1, 1000\]"),                     # the CLI's --points range
    (dict(points=2.5), "^points=.*: must be an integer"),
    (dict(sample_rate="0.5"), "^sample_rate=.*: must be a number"),
    (dict(sample_rate=0.5, seed="x"), "^seed=.*: must be an integer"),
    (dict(sample_rate=0.5, seed=1.5), "^seed=.*: must be an integer"),
    (dict(sample_rate=0.5, seed=-1), "^seed=.*: must be >= 0"),
    (dict(sample_rate=0.5, seed=2**80), r"^seed=.*: must be in \[0, 2\^63 - 1\]"),
    (dict(sample_rate=0.5, exact_head_blocks=-1), r"^exact_head_blocks=.*: must be in \[0, 1000000000\]"),
    (dict(sample_rate=0.5, exact_head_blocks="1"), "^exact_head_blocks=.*: must be an integer"),
    (dict(belady="no"), "^belady=.*: must be True or False"),
])
def test_curve_refusals_name_the_parameter(kw, needle):
    with pytest.raises(UserError, match=needle):
        pcs.curve(make_requests(HAND_SPEC), **kw)


def test_curve_points_upper_bound_runs():
    # 1000 points over capacities 1..4 (the hand trace's LRU ceiling): the grid deduplicates to 1, 2, 3, 4
    rows = pcs.curve(make_requests(HAND_SPEC), points=1000, belady=False).rows
    assert [r.capacity_blocks for r in rows] == [1, 2, 3, 4]


# --- F9: pcs.replay, pcs.compare, pcs.footprint -------------------------------------------------------------------

def test_replay_takes_numpy_scalars_as_their_values():
    base = pcs.replay(SMALL_TRACE, tp=8, protected_share=0.5, policy="slru", timing="sequential").summary
    same = pcs.replay(SMALL_TRACE, tp=np.int64(8), protected_share=np.float32(0.5), policy="slru",
                      timing="sequential").summary
    assert same.hit_ratio == base.hit_ratio and same.tp == 8
    util = pcs.replay(SMALL_TRACE, gpu_memory_utilization=np.float64(0.9), timing="sequential").summary
    assert util.deployment["gpu_memory_utilization"] == 0.9


@pytest.mark.parametrize("kw, needle", [
    (dict(tp=8.0), "^tp=.*: must be an integer"),
    (dict(tp=True), "^tp=.*: must be an integer"),
    (dict(tp=1025), r"^tp=.*: must be in \[1, 1024\]"),
    (dict(protected_share=True, policy="slru"), "^protected_share=.*: must be a number"),   # was 1.0
    (dict(protected_share=float("nan"), policy="slru"), "^protected_share=.*: must be a finite number"),
    (dict(gap_oracle="yes"), "^gap_oracle=.*: must be True or False"),                      # was truthy
    (dict(gpu_memory_utilization=np.float32(1.5)), r"^gpu_memory_utilization=.*: must be in \(0, 1\]"),
    (dict(tier_policies=[("cpu", "lru")]), "^tier_policies=.*: must be a mapping"),
    (dict(tier_policies="cpu=lru"), "^tier_policies=.*: must be a mapping"),                # was "names tier 'c'"
    (dict(residency_step_s=0), r"^residency_step_s=.*: must be in \(0, 1e\+09\]"),
])
def test_replay_refusals_name_the_parameter(kw, needle):
    with pytest.raises(UserError, match=needle):
        pcs.replay(SMALL_TRACE, timing="sequential", **kw)


@pytest.mark.parametrize("kw, needle", [
    (dict(policies="slru"), "^policies=.*: must be a list"),
    (dict(curve_capacities="10"), "^curve_capacities=.*: must be a list of numbers"),
    (dict(curve_capacities=[1.5]), r"^curve_capacities\[0\]=.*: must be an integer"),
])
def test_compare_refusals_name_the_parameter(kw, needle):
    with pytest.raises(UserError, match=needle):
        pcs.compare(SMALL_TRACE, timing="sequential", **kw)


def test_footprint_takes_numpy_ints_and_the_cli_ranges():
    a = pcs.footprint("llama-3.1-8b", 32768, block_size=16)
    b = pcs.footprint("llama-3.1-8b", np.int64(32768), block_size=np.int32(16), sequences=np.int64(1))
    assert a.to_dict() == b.to_dict()
    for kw, needle in ((dict(tokens=10**9 + 1), r"^tokens=.*: must be in \[0, 1000000000\]"),
                       (dict(tokens=1.0), "^tokens=.*: must be an integer"),
                       (dict(tokens=8, block_size=2**20 + 1), r"^block_size=.*: must be in \[1, 1048576\]"),
                       (dict(tokens=8, sequences=0), r"^sequences=.*: must be in \[1, 1000000000\]")):
        with pytest.raises(UserError, match=needle):
            pcs.footprint("llama-3.1-8b", **kw)


def test_envelope_seconds_stay_exact():
    # 50 ms - 20 ms - 30 ms is 0 exactly in integer ns, from numpy floats as from Python floats
    from pcs.analysis.envelope import seconds_to_ns

    assert seconds_to_ns(np.float64(0.05)) - seconds_to_ns(0.02) - seconds_to_ns(np.float64(0.03)) == 0
    assert seconds_to_ns(np.int64(2)) == 2_000_000_000
