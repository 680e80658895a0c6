"""Capacity/bandwidth budgets and transfer arithmetic: docs/semantics.md §10 worked by hand."""
import json

import pytest
from hypothesis import given, strategies as st

from pcs.analysis.budget import (Workload, average_bandwidth_bps, budget, iops_bandwidth_bps, load_workloads,
                        parse_workload, total, transfer_time_s)
from helpers import assert_file_error_names, file_input_error
from pcs.errors import InputError

GB = 10**9
DEVICE = (80 * GB, 2000e9)  # docs/semantics.md §10: 80 GB for KV after weights, 2000 GB/s


def test_workload_a_fits_and_bandwidth_binds_first():
    r = budget(30 * GB, DEVICE[0], 1000e9, DEVICE[1])
    assert r.u_C == 0.375            # 30 / 80
    assert r.u_B == 0.5              # 1000 / 2000
    assert r.R_w_s == pytest.approx(0.03)  # 30 GB / 1000 GB/s
    assert r.R_d_s == pytest.approx(0.04)  # 80 GB / 2000 GB/s
    assert r.binding == "bandwidth"  # 0.5 > 0.375: bandwidth reaches 100 % first
    assert not r.binding_tie
    assert r.capacity_shortfall_bytes == 0 and r.bandwidth_shortfall_bps == 0
    assert r.growth_headroom == 2.0  # 1 / 0.5
    assert r.fits
    assert r.R_w_s / r.R_d_s == pytest.approx(r.u_C / r.u_B)  # R_w/R_d = u_C/u_B = 0.75


def test_workload_b_is_short_of_capacity():
    r = budget(200 * GB, DEVICE[0], 1000e9, DEVICE[1])
    assert r.u_C == 2.5                                 # 200 / 80
    assert r.capacity_shortfall_bytes == 120 * GB       # 200 - 80, exact int
    assert isinstance(r.capacity_shortfall_bytes, int)
    assert r.R_w_s == pytest.approx(0.2)                # 200 GB / 1000 GB/s
    assert r.binding == "capacity" and not r.fits


def test_a_times_three_keeps_ratio_but_exceeds_both():
    r = budget(90 * GB, DEVICE[0], 3000e9, DEVICE[1])
    assert r.R_w_s == pytest.approx(0.03)               # 90 GB / 3000 GB/s, same as A
    assert r.u_C == pytest.approx(1.125) and r.u_B == pytest.approx(1.5)
    assert r.capacity_shortfall_bytes == 10 * GB        # 90 - 80
    assert r.bandwidth_shortfall_bps == pytest.approx(1000e9)  # 3000 - 2000 GB/s
    assert not r.fits and r.binding == "bandwidth"


def test_binding_none_and_exact_tie():
    zero = budget(0, DEVICE[0], 0.0, DEVICE[1])
    assert zero.binding == "none" and zero.growth_headroom is None and zero.R_w_s is None and zero.fits
    tie = budget(40 * GB, DEVICE[0], 1000e9, DEVICE[1])  # 40/80 = 1000/2000 = 0.5
    assert tie.binding == "capacity" and tie.binding_tie
    only_capacity = budget(1, DEVICE[0], 0.0, DEVICE[1])
    assert only_capacity.binding == "capacity" and only_capacity.R_w_s is None


@given(st.integers(0, 10**15), st.integers(1, 10**15), st.integers(0, 10**15), st.integers(1, 10**15))
def test_binding_matches_integer_cross_multiplication(c_w, c_d, b_w, b_d):
    # Independent reference: u_C >= u_B  <=>  c_w * b_d >= b_w * c_d (exact integers).
    r = budget(c_w, c_d, float(b_w), float(b_d))
    if c_w == 0 and b_w == 0:
        expected = "none"
    elif c_w * b_d >= b_w * c_d:
        expected = "capacity"
    else:
        expected = "bandwidth"
    if b_w <= 2**53 and b_d <= 2**53:  # float(b) exact: the reference applies verbatim
        assert r.binding == expected
    assert r.capacity_shortfall_bytes == max(0, c_w - c_d)
    assert r.fits == (c_w <= c_d and b_w <= b_d)


@pytest.mark.parametrize("args", [(-1, 1, 1.0, 1.0), (1, 0, 1.0, 1.0), (1, 1, -1.0, 1.0), (1, 1, 1.0, 0.0),
                                  (1, 1, float("nan"), 1.0), (1, 1, 1.0, float("inf"))])
def test_bad_budget_inputs_raise(args):
    with pytest.raises(ValueError):
        budget(*args)


def test_transfer_arithmetic_worked_numbers():
    assert average_bandwidth_bps(10, 100 * 10**6) == 1e9          # 10/s x 100 MB = 1 GB/s
    assert transfer_time_s(100 * 10**6, 20e9) == pytest.approx(0.005)  # 100 MB / 20 GB/s = 5 ms
    assert transfer_time_s(100 * 10**6, 20e9, setup_s=1e-3) == pytest.approx(0.006)
    assert iops_bandwidth_bps(1_000_000, 4096) == 4.096e9         # 1e6 x 4 KiB = 4.096 GB/s
    with pytest.raises(ValueError):
        transfer_time_s(1, 0.0)


def test_parse_workload_and_total():
    assert parse_workload("A:30GB:1000GB/s") == Workload("A", 30 * GB, 1000e9)
    assert parse_workload("node:a:4KiB:1MB/s") == Workload("node:a", 4096, 1e6)  # name may hold colons
    for bad in ("A:30GB", ":30GB:1GB/s", "A:30XB:1GB/s", "A:30GB:1GB"):
        with pytest.raises(ValueError):
            parse_workload(bad)
    t = total([Workload("a", 30 * GB, 1000e9), Workload("b", 200 * GB, 1000e9)])
    assert (t.capacity_need_bytes, t.bandwidth_need_bps) == (230 * GB, 2000e9)


def test_load_workloads_toml_and_json(tmp_path):
    toml = tmp_path / "w.toml"
    toml.write_text('[device]\ncapacity_have = "80GB"\nbandwidth_have = "2000GB/s"\n'
                    '[[workload]]\nname = "A"\ncapacity_need = "30GB"\nbandwidth_need = "1000GB/s"\n'
                    '[[workload]]\nname = "B"\ncapacity_need = "200GB"\nbandwidth_need = "1TB/s"\n')
    device, ws = load_workloads(toml)
    assert device == {"capacity_have_bytes": 80 * GB, "bandwidth_have_bps": 2000e9}
    assert ws == [Workload("A", 30 * GB, 1000e9), Workload("B", 200 * GB, 1e12)]
    js = tmp_path / "w.json"
    js.write_text(json.dumps({"workloads": [{"capacity_need": "1GiB", "bandwidth_need": "1GB/s"}]}))
    device, ws = load_workloads(js)
    assert device == {} and ws == [Workload("w1", 2**30, 1e9)]


@pytest.mark.parametrize("text,where", [
    ('[[workload]]\nname = "A"\ncapacity_need = "30XB"\nbandwidth_need = "1GB/s"\n', "workload[0].capacity_need"),
    ('[[workload]]\nname = "A"\ncapacity_need = "30GB"\n', "workload[0]"),
    ('[device]\ncapacity_have = "-1GB"\n[[workload]]\ncapacity_need = "1GB"\nbandwidth_need = "1GB/s"\n',
     "device.capacity_have"),
    ('[device]\ncapacity_have = "1GB"\n', "workload"),
    # an unknown key is an error, as in a hardware file (a typo is not silently ignored)
    ('title = "no workloads"\n', "title"),
    ('[device]\ncapacity = "1GB"\n[[workload]]\ncapacity_need = "1GB"\nbandwidth_need = "1GB/s"\n',
     "device.capacity"),
    ('[[workload]]\nname = "A"\ncapacity_need = "1GB"\nbandwidth_need = "1GB/s"\nbandwith_need = "2GB/s"\n',
     "workload[0].bandwith_need"),
])
def test_load_workloads_errors_name_file_and_field(tmp_path, text, where):
    assert_file_error_names(tmp_path, "bad.toml", text, load_workloads, where)


def test_load_workloads_bad_suffix_and_json(tmp_path):
    with pytest.raises(ValueError, match=r"w.yaml: a YAML file \(.yaml\), which pcs does not read: it reads settings as "
                       r"TOML \(.toml\) or JSON \(.json\), by the suffix; convert the file to TOML"):
        (tmp_path / "w.yaml").write_text("x")
        load_workloads(tmp_path / "w.yaml")
    (tmp_path / "w.json").write_text("{not json")
    with pytest.raises(InputError, match="w.json:1"):
        load_workloads(tmp_path / "w.json")


@pytest.mark.parametrize("text,where,message", [
    # a device bandwidth of 0 is refused naming the file and the field, as capacity_have is
    ('[device]\ncapacity_have = "1GB"\nbandwidth_have = "0GB/s"\n[[workload]]\ncapacity_need = "1GB"\n'
     'bandwidth_need = "1GB/s"\n', "device.bandwidth_have", "must be > 0"),
    ('[[workload]]\nname = "a\\nb"\ncapacity_need = "1GB"\nbandwidth_need = "1GB/s"\n', "workload[0].name",
     "on one line"),
])
def test_load_workloads_device_bandwidth_and_name_rules(tmp_path, text, where, message):
    err = file_input_error(tmp_path, "bad.toml", text, load_workloads)
    assert str(tmp_path / "bad.toml") in str(err) and f"field '{where}'" in str(err) and message in str(err)


@pytest.mark.parametrize("doc,where", [({"workloads": []}, "workloads"), ({"workloads": {"a": 1}}, "workloads"),
                                       ({"workloads": [{"capacity_need": "1GB"}]}, "workloads[0]")])
def test_load_workloads_json_errors_name_the_key_written(tmp_path, doc, where):
    err = file_input_error(tmp_path, "bad.json", json.dumps(doc), load_workloads)
    assert f"field '{where}'" in str(err), str(err)


def _budget(*args):
    from click.testing import CliRunner

    from pcs.cli.main import cli
    return CliRunner().invoke(cli, ["budget", "--capacity-have", "80GB", "--bandwidth-have", "2000GB/s", *args])


@pytest.mark.parametrize("name, message", [("", "--name: expected a non-empty text name, got ''"),
                                           ("a\nb", "--name: expected a name on one line")])
def test_budget_name_flag_follows_the_file_rule(name, message):
    r = _budget("--capacity-need", "1GB", "--bandwidth-need", "1GB/s", "--name", name)
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("args, message", [
    # bytes ff fe reach Python as the lone surrogates \udcff \udcfe (surrogateescape): refused as a newline is
    (["--capacity-need", "1GB", "--bandwidth-need", "1GB/s", "--name", "\udcff\udcfe"],
     "pcs: error: --name: expected a name of UTF-8 text, got '\\xff\\xfe' (bytes that are not UTF-8)"),
    (["--workload", "\udcff:1GB:1GB/s"],     # each byte shown as \xff, as every message shows it (pcs.errors.shown_repr)
     "pcs: error: --workload '\\xff:1GB:1GB/s': expected a name of UTF-8 text, got '\\xff'"),   # the option named
])
def test_a_name_that_is_not_utf8_is_refused(args, message):
    r = _budget(*args)
    assert r.exit_code == 2 and r.stderr.strip().startswith(message), r.output


def test_a_name_in_utf8_beyond_ascii_is_taken():
    # guard: the rule refuses bytes that are not UTF-8, not text beyond ASCII
    r = _budget("--capacity-need", "1GB", "--bandwidth-need", "1GB/s", "--name", "débit", "--format", "json", "-q")
    assert r.exit_code == 0 and json.loads(r.stdout)["name"] == "débit", r.output      # one workload: its dict


def test_a_workload_name_with_a_newline_is_refused():
    r = _budget("--workload", "a\nb:1GB:1GB/s")
    assert r.exit_code == 2 and "on one line" in r.output, r.output


def test_an_auto_name_colliding_with_a_typed_one_says_where_it_came_from(tmp_path):
    f = tmp_path / "w.toml"
    f.write_text('[[workload]]\ncapacity_need = "1GB"\nbandwidth_need = "1GB/s"\n')
    r = _budget("--workloads", str(f), "--workload", "w1:2GB:2GB/s")
    assert r.exit_code == 2, r.output
    assert ("workload name 'w1' given more than once (--name, --workload, --workloads) (the name w1 was given by "
            "default to the --workloads file's unnamed workload)") in r.output, r.output
