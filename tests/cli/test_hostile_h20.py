"""Hostile-input findings of round 20, each refused in one line naming the option or the file and field
(docs/semantics.md §16). Expected messages worked out from the rules, not copied from a run."""
from __future__ import annotations

import json

import pytest
from helpers import invoke

DEVICE = '[device]\ncapacity_have = "80GB"\nbandwidth_have = "2000GB/s"\n'
A = '[[workload]]\nname = "A"\ncapacity_need = "30GB"\nbandwidth_need = "100GB/s"\n'


def _err(r) -> str:
    assert r.exit_code != 0, r.output
    text = (r.stderr if r.stderr_bytes is not None else r.output).strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return text


def test_workload_and_workloads_together_are_refused(tmp_path):
    """B (300GB on an 80GB device) in [[workloads]] was dropped and the verdict read 'fits'."""
    p = tmp_path / "w.toml"
    p.write_text(DEVICE + A + '[[workloads]]\nname = "B"\ncapacity_need = "300GB"\nbandwidth_need = "1GB/s"\n')
    assert _err(invoke("budget", "--workloads", p)).endswith(
        f"{p}:8: field 'workloads': give workload or workloads, not both "    # line 8: [[workloads]]
        '([[workload]] in TOML, "workloads": [...] in JSON)')
    j = tmp_path / "w.json"
    j.write_text(json.dumps({"workload": [{"name": "A", "capacity_need": "1GB", "bandwidth_need": "1GB/s"}],
                             "workloads": [{"name": "B", "capacity_need": "1GB", "bandwidth_need": "1GB/s"}]}))
    assert "give workload or workloads, not both" in _err(invoke("budget", "--workloads", j))


@pytest.mark.parametrize("name,shown", [("5", "5"), ('""', "''"), ("true", "True")])
def test_a_workload_name_is_non_empty_text(tmp_path, name, shown):
    p = tmp_path / "w.toml"
    p.write_text(DEVICE + A.replace('"A"', name))
    assert _err(invoke("budget", "--workloads", p)).endswith(
        f"field 'workload[0].name': expected a non-empty text name, got {shown}")


@pytest.mark.parametrize("field,value,hint", [
    ("capacity_need", "30", "30GB"), ("bandwidth_need", "100", "100GB/s"),
])
def test_workload_file_fields_need_a_unit(tmp_path, field, value, hint):
    """The field names carry no unit, so 30 would be 30 bytes: refused naming the field and a spelling."""
    p = tmp_path / "w.toml"
    p.write_text(DEVICE + A.replace(f'{field} = "{value}GB', f"{field} = {value}#").replace("#/s\"", "").replace("#\"", ""))
    assert _err(invoke("budget", "--workloads", p)).endswith(
        f"field 'workload[0].{field}': {field} '{value}' has no unit: give a unit: {hint}")


def test_a_zero_need_takes_no_unit(tmp_path):
    """0 needs no unit: u_C = 0 / 80e9 = 0; fits."""
    p = tmp_path / "w.toml"
    p.write_text(DEVICE + A.replace('"30GB"', "0"))
    r = invoke("budget", "--workloads", p, "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["rows"][0]["capacity_need_bytes"] == 0


def test_a_device_of_zero_capacity_in_a_file_names_file_and_field(tmp_path):
    p = tmp_path / "w.toml"
    p.write_text(DEVICE.replace('"80GB"', '"0GB"') + A)
    assert _err(invoke("budget", "--workloads", p)).endswith(
        f"{p}:2: field 'device.capacity_have': must be at least 1 B (a device with no room holds nothing), got '0GB'")


@pytest.mark.parametrize("args,message", [
    (["budget", "--link-bandwidth", "20", "--transfer-size", "1GB"], "--link-bandwidth '20' has no unit: give a unit: 20GB/s"),
    (["budget", "--link-bandwidth", "20GB/s", "--link-setup", "10", "--transfer-size", "1GB"],
     "--link-setup '10' has no unit: give a unit: 10us or 10ms"),
    (["hardware", "--gpu", "h100-sxm", "--hbm-capacity", "80"], "--hbm-capacity '80' has no unit: give a unit: 80GB"),
    (["hardware", "--gpu", "h100-sxm", "--hbm-bandwidth", "3"], "--hbm-bandwidth '3' has no unit: give a unit: 3GB/s"),
    (["hardware", "--link", "pcie-gen5-x16", "--link-bandwidth", "7"], "--link-bandwidth '7' has no unit: give a unit: 7GB/s"),
    (["hardware", "--link", "pcie-gen5-x16", "--link-io-size", "4096"],
     "--link-io-size '4096' has no unit: give a unit: 4096B or 4096KiB"),
    (["budget", "--iops", "1000", "--io-size", "4096"], "--io-size '4096' has no unit: give a unit: 4096B or 4096KiB"),
    (["budget", "--capacity-have", "80GB", "--bandwidth-have", "1GB/s", "--workload", "A:30:1GB/s"],
     "--workload 'A:30:1GB/s': capacity '30' has no unit: give a unit: 30GB"),   # mend45c: the option named
])
def test_size_bandwidth_and_time_options_need_a_unit(args, message):
    assert _err(invoke(*args)).endswith(message)


def test_zero_and_units_are_taken():
    """--link-setup 0 needs no unit; 1GB over 20GB/s = 0.05 s."""
    r = invoke("budget", "--link-bandwidth", "20GB/s", "--link-setup", "0", "--transfer-size", "1GB",
               "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["transfers"]["transfer_s"] == pytest.approx(0.05)


@pytest.mark.parametrize("section,field,value,message", [
    ("gpu.h100-sxm", "hbm_bytes", "80", '80 (no unit) reads as 80 B: a GPU HBM under 1 MB; write the unit, e.g. "80GB"'),
    ("gpu.h100-sxm", "hbm_bps", "3", '3 (no unit) reads as 3 B/s: an HBM bandwidth under 1 MB/s; write the unit, '
                                     'e.g. "3GB/s"'),
    ("link.pcie-gen5-x16", "bandwidth_bps", "20", '20 (no unit) reads as 20 B/s: a link under 1 MB/s; write the unit, '
                                                  'e.g. "20GB/s"'),
    ("link.pcie-gen5-x16", "setup_s", "10", '10 (no unit) reads as 10 s: a setup over 1 s per transfer; write the '
                                            'unit, e.g. "10us" or "10ms"'),
])
def test_hardware_file_plain_numbers_no_device_has_are_refused(tmp_path, section, field, value, message):
    p = tmp_path / "hw.toml"
    p.write_text(f"[{section}]\n{field} = {value}\n")
    text = _err(invoke("hardware", "--hardware-file", p))
    assert f"{p}:2: field '{section}.{field}': " in text and text.endswith(message)     # the value's own line


def test_hardware_file_plausible_plain_numbers_and_units_are_taken(tmp_path):
    """80e9 plain bytes is 80 GB; "80B" with its unit is taken as written; setup 0.5 s plain is plausible."""
    p = tmp_path / "hw.toml"
    p.write_text('[gpu.h100-sxm]\nhbm_bytes = 80e9\n[link.pcie-gen5-x16]\nsetup_s = 0.5\n[gpu.a100-80gb]\nhbm_bytes = "80B"\n')
    r = invoke("hardware", "--hardware-file", p, "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    gpus = {g["name"]: g["hbm_bytes"] for g in out["gpus"]}
    assert gpus["h100-sxm"] == 80_000_000_000 and gpus["a100-80gb"] == 80
    assert {x["name"]: x["setup_s"] for x in out["links"]}["pcie-gen5-x16"] == 0.5


@pytest.mark.parametrize("args,message", [
    (["envelope", "--overhead", "-5ms", "--full-prefill", "10ms", "--restore-bytes", "1GB", "--bandwidth", "1GB/s"],
     "--overhead '-5ms': invalid duration '-5ms': must not be negative"),
    (["envelope", "--full-prefill", "-5ms", "--restore-bytes", "1GB", "--bandwidth", "1GB/s"],
     "--full-prefill '-5ms': invalid duration '-5ms': must not be negative"),
    (["envelope", "--overlap", "-1ms", "--full-prefill", "10ms", "--restore-bytes", "1GB", "--bandwidth", "1GB/s"],
     "--overlap '-1ms': invalid duration '-1ms': must not be negative"),
    (["envelope", "--full-prefill", "10ms", "--restore-bytes", "-1GB", "--bandwidth", "1GB/s"],
     "--restore-bytes '-1GB': invalid size '-1GB': must not be negative"),
    (["hardware", "--link", "pcie-gen5-x16", "--link-setup", "-1ms"],
     "--link-setup '-1ms': invalid duration '-1ms': must not be negative"),
    (["budget", "--restores-per-s", "1", "--restore-size", "-1MB"],
     "--restore-size '-1MB': invalid size '-1MB': must not be negative"),
])
def test_a_bad_size_or_duration_names_its_option(args, message):
    assert _err(invoke(*args)).endswith(message)
