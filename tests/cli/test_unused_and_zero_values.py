"""Values that would silently do nothing: a value > 0 that rounds to 0 in pcs's units is refused
by the one parser of each kind (pcs/units.py; docs/semantics.md §16), and an option a command reads nowhere is
refused naming it (pcs.cli.presets.refuse_unused): ``pcs envelope --full-prefill 1e-300s`` used to be 0 s,
``--hbm-capacity 1B`` accepted and ignored."""
from __future__ import annotations

import pytest

from helpers import assert_one_line_error, invoke, invoke_json
from pcs.errors import UserError
from pcs.units import parse_bandwidth, parse_bytes, parse_duration_ns

ENV = ("envelope", "--restore-bytes", "1GB", "--bandwidth", "10GB/s")


@pytest.mark.parametrize("parse,text", [
    (parse_duration_ns, "1e-300s"),     # 1e-291 ns
    (parse_duration_ns, "0.5ns"),       # half a ns: rounds to the even 0
    (parse_bytes, "1e-300GB"),          # 1e-291 B
    (parse_bytes, "4e-4KB"),            # 0.4 B
    (parse_bandwidth, "1e-330B/s"),     # below the smallest float64 (4.9e-324): 0.0
])
def test_a_value_above_0_that_rounds_to_0_is_refused(parse, text):
    with pytest.raises(UserError, match="greater than 0 but rounds to 0"):
        parse(text)


@pytest.mark.parametrize("parse,text,want", [
    (parse_duration_ns, "0.6ns", 1), (parse_duration_ns, "1e-9s", 1), (parse_duration_ns, "0s", 0),
    (parse_bytes, "6e-4KB", 1), (parse_bytes, "0GB", 0), (parse_bandwidth, "0.4B/s", 0.4), (parse_bandwidth, "0", 0.0),
])
def test_the_smallest_values_and_zero_still_read(parse, text, want):
    assert parse(text) == want


def test_envelope_full_prefill_that_rounds_to_0_is_one_line():
    assert_one_line_error(invoke(*ENV, "--full-prefill", "1e-300s"), "invalid duration '1e-300s'",
                          "rounds to 0", "give at least 1ns, or 0")


@pytest.mark.parametrize("args,option", [
    (("--full-prefill", "100ms", "--gpu", "h100-sxm", "--hbm-capacity", "1B"), "--hbm-capacity"),
    (("--full-prefill", "100ms", "--remaining-compute", "30ms", "--gpu", "h100-sxm"), "--gpu"),
    (("--full-prefill", "100ms", "--remaining-compute", "30ms", "--mfu", "0.3"), "--mfu"),
    (("--tokens", "1000", "--restore-tokens", "500", "--prefill-csv", "p.csv", "--gpu", "h100-sxm",
      "--bf16-flops", "1e15"), "--gpu"),
])
def test_envelope_refuses_an_option_it_does_not_use(args, option):
    assert_one_line_error(invoke(*ENV, *args), f"pcs envelope does not use {option}")


@pytest.mark.parametrize("option,value", [("--link-iops", "5"), ("--link-io-size", "4KiB")])
def test_budget_refuses_link_iops_options_it_does_not_use(option, value):
    assert_one_line_error(invoke("budget", "--transfer-size", "1GB", "--link-bandwidth", "1GB/s", option, value),
                          f"pcs budget does not use {option}", "--iops with --io-size")


def test_envelope_and_budget_still_take_what_they_use():
    # D / B = 1 GB / 10 GB/s = 100 ms; cached = 100 + 30 = 130 ms against T_full 100 ms: 30 ms slower
    out = invoke_json(*ENV, "--full-prefill", "100ms", "--remaining-compute", "30ms")
    assert out["rows"][0]["verdict"] == "slower" and out["rows"][0]["saved_s"] == pytest.approx(-0.030)
    # 1 GB over 1 GB/s with a 1 ms setup: 1.001 s
    assert invoke_json("budget", "--transfer-size", "1GB", "--link-bandwidth", "1GB/s", "--link-setup", "1ms")[
        "transfers"]["transfer_s"] == pytest.approx(1.001)
