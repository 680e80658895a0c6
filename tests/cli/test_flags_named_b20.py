"""Refusals name the flag the user typed, and a link's IOPS figures are bounded like budget's: the alias
--setup of envelope's --overhead, pcs hardware's overrides, --link-iops / a hardware file's iops and
io_size_bytes, and pcs.footprint's tp (a bool is not an integer). Messages and bounds worked by hand."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import pcs
from pcs.cli.main import cli
from pcs.errors import ArgumentTypeError

ENV = ["envelope", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tokens", "1000", "--restore-tokens", "500",
       "--bandwidth", "10GB/s"]


def _line(args):
    r = CliRunner().invoke(cli, args)
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1, r.output
    return lines[0]


@pytest.mark.parametrize("extra, message", [
    (["--setup", "5ms", "--setup", "6ms"], "pcs: error: --setup was given more than once; it takes one value"),
    (["--overhead", "5ms", "--setup", "6ms"], "pcs: error: --overhead/--setup was given more than once"),
    (["--overhead", "5ms", "--overhead", "6ms"], "pcs: error: --overhead was given more than once"),
    (["--setup", "5"], "pcs: error: --setup '5' has no unit: give a unit: 5ms or 5s"),
    (["--overhead", "5"], "pcs: error: --overhead '5' has no unit: give a unit: 5ms or 5s"),
])
def test_envelope_names_the_overhead_flag_typed(extra, message):
    assert _line([*ENV, *extra]).startswith(message)


@pytest.mark.parametrize("args, message", [
    (["--gpu", "h100-sxm", "--hbm-capacity", "0GB"], "pcs: error: --hbm-capacity '0GB': h100-sxm: hbm_bytes must be"),
    # 1e30 x 4,096 B (nvme-gen4's I/O size) = 4.096e33 B/s > 2^63 - 1 = 9.22e18 B/s
    (["--link", "nvme-gen4", "--link-iops", "1e30"],
     "pcs: error: --link-iops '1e30': nvme-gen4: iops 1e+30 x io_size_bytes 4,096 = 4.096e+33 bytes/s, more than "
     "2^63 - 1 bytes/s"),
    (["--link", "nvme-gen4", "--link-iops", "0.5"], "pcs: error: --link-iops '0.5': nvme-gen4: iops must be at least 1"),
])
def test_hardware_overrides_are_refused_naming_the_flag(args, message):
    assert _line(["hardware", *args]).startswith(message)


def test_the_iops_product_at_the_bound_is_taken():
    """2^63 - 1 bytes/s is the bound, inclusive: 2,251,799,813,685,247 IOPS x 4,096 B = 9,223,372,036,854,771,712
    B/s (under 2^63 - 1 = ...775,807) is taken."""
    r = CliRunner().invoke(cli, ["hardware", "--link", "nvme-gen4", "--link-iops", "2251799813685247",
                                 "--format", "json", "--quiet"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("text, where, message", [     # each at the line of its field (2), the bounds too
    ("[link.nvme-gen4]\niops = 1e-300\n", "2: field 'link.nvme-gen4.iops'", "must be at least 1 operations/s"),
    ("[link.nvme-gen4]\nio_size_bytes = 4\n", "2: field 'link.nvme-gen4.io_size_bytes'",
     "4 (no unit) reads as 4 B: an I/O size under a 512 B sector"),
    ('[link.nvme-gen4]\nio_size_bytes = "4B"\n', "2: field 'link.nvme-gen4.io_size_bytes'", "must be at least 512 bytes"),
])
def test_a_hardware_file_link_iops_is_held_to_plausible_figures(tmp_path, text, where, message):
    p = tmp_path / "hw.toml"
    p.write_text(text)
    line = _line(["hardware", "--hardware-file", str(p)])
    assert line.startswith(f"pcs: error: {p}:{where}") and message in line, line


@pytest.mark.parametrize("tp", [True, False, 2.0, "2"])
def test_footprint_tp_refuses_a_non_integer(tp):
    with pytest.raises(ArgumentTypeError, match="^tp=.*: must be an integer, not "):
        pcs.footprint("llama-3.1-8b", 1000, tp=tp)


def test_envelope_text_names_the_link_preset_on_its_row_and_as_the_overhead_source():
    """--link pcie-gen5-x16 is 50 GB/s with a 10 us setup (pcs.hardware.LINKS); beside --bandwidth 50GB/s the
    two rows carry the same figures, the link's marked; the overhead is the link's setup, said so."""
    r = CliRunner().invoke(cli, [*ENV[:-2], "--link", "pcie-gen5-x16", "--bandwidth", "50GB/s"])
    assert r.exit_code == 0, r.output
    assert "overhead 10.00 us (--link pcie-gen5-x16's setup);" in r.output
    rows = [ln.strip() for ln in r.output.splitlines() if "GB/s" in ln and "us" in ln and "note" not in ln]
    assert [ln.split("  ")[0] for ln in rows] == ["50.00 GB/s", "50.00 GB/s (--link pcie-gen5-x16)"], rows
    r = CliRunner().invoke(cli, [*ENV[:-2], "--link", "pcie-gen5-x16", "--overhead", "1ms"])
    assert r.exit_code == 0 and "overhead 1.00 ms;" in r.output and "'s setup" not in r.output, r.output
