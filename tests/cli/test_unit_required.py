"""The "no unit" rule on the command line (docs/semantics.md §16).

replay and curve refuse a bare tier capacity; envelope and budget used to take
a bare number as seconds, bytes/s or bytes (``--full-prefill 100`` = 100 s,
``--capacity-have 80`` = 80 B). Every CLI size, bandwidth and time now refuses
a plain non-zero number with one line naming the option and a spelling that
works; ``0`` needs no unit.
"""
import json

import pytest
from click.testing import CliRunner

from pcs import units
from pcs.cli.main import cli

ENV = ["envelope", "--restore-bytes", "1GB", "--full-prefill", "100ms", "--remaining-compute", "30ms",
       "--overhead", "5ms", "--bandwidth", "10GB/s"]
BUDGET = ["budget", "--capacity-need", "30GB", "--capacity-have", "80GB",
          "--bandwidth-need", "1000GB/s", "--bandwidth-have", "2000GB/s"]
XFER = ["budget", "--restores-per-s", "10", "--restore-size", "100MB", "--transfer-size", "100MB",
        "--link-bandwidth", "20GB/s", "--iops", "1000000", "--io-size", "4KiB"]


def _with(base, option, value):
    args = list(base)
    args[args.index(option) + 1] = value
    return args


@pytest.mark.parametrize("base,option,value,hint", [
    (ENV, "--full-prefill", "100", "100ms or 100s"),
    (ENV, "--remaining-compute", "30", "30ms or 30s"),
    (ENV, "--overhead", "5", "5ms or 5s"),
    (ENV, "--bandwidth", "10", "10GB/s"),
    (ENV, "--restore-bytes", "1", "1GB"),
    (ENV + ["--overlap", "20ms"], "--overlap", "20", "20ms or 20s"),
    (BUDGET, "--capacity-have", "80", "80GB"),
    (BUDGET, "--capacity-need", "30", "30GB"),
    (BUDGET, "--bandwidth-need", "1e3", "1e3GB/s"),
    (BUDGET, "--bandwidth-have", "2000", "2000GB/s"),
    (XFER, "--restore-size", "100", "100GB"),
    (XFER, "--transfer-size", "100", "100GB"),
    (XFER, "--io-size", "4096", "4096B or 4096KiB"),
])
def test_a_bare_number_is_refused_naming_the_option(base, option, value, hint):
    result = CliRunner().invoke(cli, _with(base, option, value))
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert lines == [f"pcs: error: {option} '{value}' has no unit: give a unit: {hint}"], result.output


def test_the_same_values_with_units_still_run():
    # T_full 100 ms, T_remaining 30 ms, T_overhead 5 ms: margin 65 ms; D/B = 1e9 B / 1e10 B/s = 100 ms,
    # so the cached path is 100 + 30 + 5 = 135 ms against 100 ms: slower, break-even 1e9 / 0.065 B/s.
    out = json.loads(CliRunner().invoke(cli, ENV + ["--format", "json"]).output)
    assert out["full_prefill_s"] == pytest.approx(0.1) and out["overhead_s"] == pytest.approx(0.005)
    assert out["rows"][0]["verdict"] == "slower"
    assert out["break_even_bps"] == pytest.approx(1e9 / 0.065)
    # u_C = 30/80 = 0.375, u_B = 1000/2000 = 0.5
    out = json.loads(CliRunner().invoke(cli, BUDGET + ["--format", "json"]).output)
    assert out["u_C"] == pytest.approx(0.375) and out["u_B"] == pytest.approx(0.5)


def test_zero_needs_no_unit():
    # --overhead's default is the bare "0"; an explicit 0 bandwidth need is "nothing moved": u_B = 0.
    result = CliRunner().invoke(cli, _with(BUDGET, "--bandwidth-need", "0") + ["--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["u_B"] == 0


@pytest.mark.parametrize("text", ["0", "0.0", "100ms", "10GB/s", "80GB", None])
def test_require_unit_passes_zero_units_and_none(text):
    assert units.require_unit(text, "--x", "size") == text
