"""``pcs envelope`` without ``--bandwidth`` or ``--link`` prints the break-even row (hostile-input review of
2026-12-04, finding 3: ``--full-prefill 100ms --restore-bytes 1GB`` printed an empty table, the break-even only in
a note). Asked for no bandwidth, a user asks which bandwidth is needed: the one row is B* = D / (T_full -
T_remaining - T_overhead), where the cached path takes T_full exactly (verdict equal, net saved 0). Where no such
row exists -- no break-even (margin <= 0) or D = 0 (the same at every bandwidth) -- pcs refuses, comparing the two
paths, saying why a D from tokens is 0, and naming --bandwidth and --link. The JSON and CSV rows say which one is the
break-even row (``break_even``); a rate below 1 B/s keeps 3 significant digits (fix34b findings 5 and 6). Values
worked by hand in each test.
"""
from __future__ import annotations

import pytest

from helpers import assert_one_line_error, invoke, invoke_json

D_100 = ("envelope", "--restore-bytes", "1GB", "--full-prefill", "100ms")


def test_the_break_even_row_without_a_bandwidth():
    # B* = 1e9 B / 0.1 s = 1e10 B/s; the read takes the whole 100 ms margin, cached = T_full
    out = invoke_json(*D_100)
    assert out["break_even_bps"] == 1e10
    assert out["rows"] == [{"bandwidth_bps": 1e10, "read_s": 0.1, "cached_s": 0.1, "saved_s": 0.0,
                            "verdict": "equal", "exposed_wait_s": None, "break_even": True}]
    assert any("no --bandwidth or --link given, so the one row is that bandwidth" in n for n in out["notes"])
    table = invoke(*D_100)
    assert table.exit_code == 0
    row = next(ln for ln in table.stdout.splitlines() if "(break-even)" in ln)
    assert row.split() == ["10.00", "GB/s", "(break-even)", "100.00", "ms", "100.00", "ms", "0", "ms", "equal"]


def test_the_break_even_row_with_the_other_times_and_an_overlap():
    # margin = 100 - 30 - 5 = 65 ms; B* = 1e9 / 0.065 = 15.38 GB/s; exposed wait = max(0, 65 - 60) = 5 ms
    out = invoke_json(*D_100, "--remaining-compute", "30ms", "--overhead", "5ms", "--overlap", "60ms")
    (row,) = out["rows"]
    assert row["bandwidth_bps"] == pytest.approx(1e9 / 0.065) == out["break_even_bps"]
    assert row["read_s"] == 0.065 and row["cached_s"] == 0.1 and row["saved_s"] == 0.0
    assert row["verdict"] == "equal" and row["exposed_wait_s"] == pytest.approx(0.005)


def test_given_bandwidths_are_the_rows_as_before():
    # 10 GB/s: read 100 ms + 30 ms remaining = 130 ms against 100 ms: slower; no break-even row added
    out = invoke_json(*D_100, "--remaining-compute", "30ms", "--bandwidth", "10GB/s")
    assert [r["bandwidth_bps"] for r in out["rows"]] == [1e10] and out["rows"][0]["verdict"] == "slower"
    assert [r["break_even"] for r in out["rows"]] == [False]
    assert not any("the one row is that bandwidth" in n for n in out["notes"])


@pytest.mark.parametrize("extra, why", [
    # 50 - 20 - 30 = 0 ms (exact, integer ns): no bandwidth makes the read fit
    (("--full-prefill", "50ms", "--remaining-compute", "20ms", "--overhead", "30ms"),
     "T_full - T_remaining - T_overhead = 0 ms <= 0, so no bandwidth makes the cached path faster (no break-even)"),
    (("--full-prefill", "50ms", "--remaining-compute", "60ms"),
     "T_full - T_remaining - T_overhead = -10.00 ms <= 0"),
])
def test_no_break_even_is_refused_naming_the_options(extra, why):
    assert_one_line_error(invoke("envelope", "--restore-bytes", "1GB", *extra), "no row without --bandwidth: ",
                          why, "give --bandwidth (e.g. 20GB/s) or --link")


@pytest.mark.parametrize("remaining, than", [
    # D = 0: cached = 0 + T_remaining against T_full = 50 ms at any bandwidth
    ("20ms", "T_remaining + T_overhead = 20.00 ms, is faster than the full prefill (50.00 ms)"),
    ("50ms", "T_remaining + T_overhead = 50.00 ms, is as fast as the full prefill (50.00 ms)"),
    ("70ms", "T_remaining + T_overhead = 70.00 ms, is slower than the full prefill (50.00 ms)"),
])
def test_nothing_to_read_is_refused_comparing_the_two_paths(remaining, than):
    assert_one_line_error(invoke("envelope", "--restore-bytes", "0GB", "--full-prefill", "50ms",
                                 "--remaining-compute", remaining),
                          "D is 0 bytes, so the read takes 0 s at every bandwidth: the cached path, " + than
                          + " at every bandwidth (no break-even bandwidth); give --bandwidth")


def test_a_d_of_0_from_tokens_says_why():
    # 16 tokens in 16-token blocks: the hit cap ((16 - 1) // 16) x 16 = 0 tokens; T_remaining = T_full (all 16
    # computed): as fast at every bandwidth
    line = assert_one_line_error(invoke("envelope", "--tokens", "16", "--model", "llama-3.1-8b"),
                                 "D is 0 bytes (the last-token cap: ((T - 1) // B) x B = ((16 - 1) // 16) x 16 = 0 "
                                 "tokens restorable of the 16-token prompt: its last token is recomputed), so the "
                                 "read takes 0 s at every bandwidth", ", is as fast as the full prefill (")
    assert "equal" not in line
    # 10 of 100 tokens asked: not one whole 16-token block
    assert_one_line_error(invoke("envelope", "--restore-tokens", "10", "--tokens", "100", "--model", "llama-3.1-8b"),
                          "D is 0 bytes (--restore-tokens 10 is less than one 16-token block: only whole blocks "
                          "are cached)")


def test_a_tiny_break_even_shows_its_digits_and_every_format_marks_its_row():
    # B* = 1 B / 1e9 s = 1e-9 B/s: 3 significant digits, not 0.00 B/s
    args = ("envelope", "--restore-bytes", "1B", "--full-prefill", "1000000000s")
    out = invoke_json(*args)
    assert out["break_even_bps"] == 1e-9 and out["rows"][0]["break_even"] is True
    table = invoke(*args).stdout
    assert "0.00000000100 B/s (break-even)" in table and "break-even bandwidth 0.00000000100 B/s = D" in table
    assert "0.00 B/s" not in table
    csv = invoke(*args, "--format", "csv").stdout.splitlines()
    assert csv[0].split(",")[-1] == "break_even" and csv[1].split(",")[-1] == "True"
    csv = invoke(*args, "--bandwidth", "1GB/s", "--format", "csv").stdout.splitlines()
    assert csv[1].split(",")[-1] == "False"


def test_docs_json_lists_the_row_keys_in_order():
    from pcs.report.jsondoc import CLI_OBJECTS

    documented = [k for k, *_ in CLI_OBJECTS["pcs envelope"][1]]
    assert list(invoke_json(*D_100)["rows"][0]) == documented
    assert list(invoke_json(*D_100, "--bandwidth", "1GB/s", "--overlap", "1ms")["rows"][0]) == documented
