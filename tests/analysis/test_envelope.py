"""Envelope (docs/semantics.md §10): worked example, exact break-even, overlap."""
import math

import pytest
from hypothesis import given, strategies as st

from pcs.analysis.envelope import break_even_bps, envelope, seconds_to_ns
from pcs.errors import UserError

GB = 10**9


def test_worked_example_rows_and_break_even():
    # T_full 100 ms, D 1 GB, T_remaining 30 ms, T_overhead 5 ms.
    r = envelope(1 * GB, 0.100, 0.030, 0.005, [10e9, 20e9])
    slow, fast = r.rows
    assert slow.read_s == pytest.approx(0.100)     # 1 GB / 10 GB/s
    assert slow.cached_s == pytest.approx(0.135)   # 100 + 30 + 5 ms
    assert slow.verdict == "slower"                # 135 ms > 100 ms
    assert fast.read_s == pytest.approx(0.050)     # 1 GB / 20 GB/s
    assert fast.cached_s == pytest.approx(0.085)   # 50 + 30 + 5 ms
    assert fast.verdict == "faster"
    assert fast.saved_s == pytest.approx(0.015)
    assert r.margin_s == pytest.approx(0.065)      # 100 - 30 - 5 ms
    # 1 GB / 65 ms = 15.3846... GB/s
    assert r.break_even_bps == pytest.approx(1e9 / 0.065, rel=1e-12)
    assert round(r.break_even_bps / 1e9, 2) == 15.38
    assert break_even_bps(1 * GB, 0.100, 0.030, 0.005) == r.break_even_bps
    assert slow.exposed_wait_s is None


def test_zero_denominator_is_exact_no_break_even():
    assert 0.05 - 0.02 - 0.03 != 0                  # float residue ~ -3.5e-18 s
    assert break_even_bps(1 * GB, 0.05, 0.02, 0.03) is None  # not 1e9 / 3.5e-18 = 3e26 B/s
    r = envelope(1 * GB, 0.05, 0.02, 0.03, [1e12])
    assert r.break_even_bps is None and r.margin_s == 0.0
    assert r.rows[0].verdict == "slower"            # any read time > 0 = margin
    assert break_even_bps(1 * GB, 0.05, 0.04, 0.03) is None  # negative margin


def test_equal_verdict_is_exact():
    # margin 300 - 100 - 100 = 100 ms; 1 GB at 10 GB/s reads in exactly 100 ms.
    # In floats 0.1 + 0.1 + 0.1 = 0.30000000000000004 > 0.3 would say "slower".
    r = envelope(1 * GB, 0.3, 0.1, 0.1, [10e9, 10e9 * (1 + 1e-15)])
    assert r.rows[0].verdict == "equal"
    assert r.rows[1].verdict == "faster"
    # margin 50 ms, 1 GB at 20 GB/s = 50 ms
    assert envelope(1 * GB, 0.1, 0.03, 0.02, [20e9]).rows[0].verdict == "equal"


def test_overlap_exposed_wait():
    r = envelope(1 * GB, 0.100, 0.030, 0.005, [10e9, 20e9], overlap_s=0.060)
    assert r.rows[0].exposed_wait_s == pytest.approx(0.040)  # max(0, 100 - 60) ms
    assert r.rows[1].exposed_wait_s == 0.0                   # max(0, 50 - 60) ms
    assert r.overlap_s == 0.060


def test_edge_bytes_and_bandwidths():
    r = envelope(0, 0.1, 0.03, 0.005, [1.0, 1e9])
    assert r.break_even_bps == 0.0
    assert [row.verdict for row in r.rows] == ["faster", "faster"]  # nothing to read, margin 65 ms > 0
    assert [row.read_s for row in r.rows] == [0.0, 0.0]
    r = envelope(1, 0.1, 0.0, 0.0, [1.0])           # 1 B at 1 B/s: 1 s > the 0.1 s margin
    assert r.rows[0].read_s == 1.0 and r.rows[0].verdict == "slower"
    with pytest.raises(UserError, match="a bandwidth must be > 0"):   # as --bandwidth 0GB/s
        envelope(1, 0.1, 0.0, 0.0, [0.0])
    assert envelope(0, 0.05, 0.02, 0.03, [1e9]).rows[0].verdict == "equal"  # 0 read vs 0 margin


@pytest.mark.parametrize("args", [(-1, 0.1, 0.0, 0.0, [1e9]), (1, -0.1, 0.0, 0.0, [1e9]),
                                  (1, 0.1, float("nan"), 0.0, [1e9]), (1, 0.1, 0.0, 0.0, [-1e9]),
                                  (1.5, 0.1, 0.0, 0.0, [1e9])])
def test_bad_inputs_raise(args):
    with pytest.raises(ValueError):
        envelope(*args)


def test_seconds_to_ns():
    assert seconds_to_ns(0.1) == 100_000_000
    assert seconds_to_ns(2) == 2_000_000_000
    assert seconds_to_ns(1e-10) == 0           # below a nanosecond rounds away (documented tolerance)
    with pytest.raises(ValueError):
        seconds_to_ns(-1.0)


@given(st.integers(1, 10**12), st.integers(1, 10**6), st.integers(0, 10**6), st.integers(0, 10**6),
       st.integers(1, 10**6))
def test_verdict_against_integer_reference(d, full_us, rem_us, ovh_us, bw_mbps):
    # Whole microseconds and MB/s keep every quantity an exact integer:
    # cached faster  <=>  d / (bw_mbps * 1e6) < (full - rem - ovh) us * 1e-6
    #                <=>  d < bw_mbps * margin_us          (both sides integers)
    margin_us = full_us - rem_us - ovh_us
    r = envelope(d, full_us / 1e6, rem_us / 1e6, ovh_us / 1e6, [bw_mbps * 1e6])
    lhs, rhs = d, bw_mbps * margin_us
    assert r.rows[0].verdict == ("faster" if lhs < rhs else "equal" if lhs == rhs else "slower")
    if margin_us <= 0:
        assert r.break_even_bps is None
    else:
        assert r.break_even_bps == pytest.approx(d / (margin_us * 1e-6), rel=1e-12)


def test_verdict_and_the_figures_beside_it_agree():
    """Times in whole nanoseconds, then exact (docs/semantics.md §10): T_full 0.1000000003 s is 100,000,000 ns
    = 0.1 s, nothing remaining, no overhead; 1 GB at 9,999,999,980 B/s reads in 1e9 / 9,999,999,980 =
    0.1000000002000000004 s, so the cached path saves 0.1 - 0.1000000002000000004 = -2.000000004e-10 s: slower,
    and saved_s says so (saved_s from the unrounded T_full, +1e-10 s, stood beside slower)."""
    from pcs.cli.main import cli
    from click.testing import CliRunner
    import json

    r = envelope(1 * GB, 0.1000000003, 0, 0, [9_999_999_980.0])
    row, = r.rows
    assert r.margin_s == 0.1
    assert row.verdict == "slower" and row.saved_s == pytest.approx(-2.000000004e-10, rel=1e-6)
    assert row.cached_s == pytest.approx(0.1000000002000000004, abs=1e-18)    # read + 0 + 0
    # review 48a's row: llama-3.1-70b TP 4 at 1069250586.6060435 B/s (its break-even, D / margin in whole ns):
    # 'faster' beside saved_s -1.8e-10 s; the verdict has the sign of saved_s, margin_s T_full - T_rem - T_ovh in ns
    out = CliRunner().invoke(cli, ["envelope", "--restore-tokens", "8192", "--tokens", "8704", "--model",
                                   "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--overhead", "1ms",
                                   "--bandwidth", "1069250586.6060435B/s", "--format", "json"])
    d = json.loads(out.stdout)
    row = d["rows"][0]
    assert {"faster": 1, "slower": -1, "equal": 0}[row["verdict"]] == (row["saved_s"] > 0) - (row["saved_s"] < 0)
    assert d["margin_s"] == pytest.approx(d["full_prefill_s"] - d["remaining_s"] - d["overhead_s"], abs=1e-9)   # ns
