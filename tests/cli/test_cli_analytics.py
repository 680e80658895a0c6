"""CLI: pcs budget / envelope / hardware / models through click's CliRunner.

Expected numbers are the docs/semantics.md §10 worked examples, recomputed by hand in comments.
"""
import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

BUDGET_A = ["budget", "--capacity-need", "30GB", "--capacity-have", "80GB",
            "--bandwidth-need", "1000GB/s", "--bandwidth-have", "2000GB/s"]
ENVELOPE = ["envelope", "--restore-bytes", "1GB", "--full-prefill", "100ms", "--remaining-compute", "30ms",
            "--overhead", "5ms", "--bandwidth", "10GB/s", "--bandwidth", "20GB/s"]


def run(args):
    return CliRunner().invoke(cli, args)


def run_json(args):
    result = run(args + ["--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def assert_user_error(result, *needles):
    """Exit 2, exactly one line on stderr naming the problem, no traceback."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("pcs: error:")
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0]


def test_budget_required_keys_and_worked_values():
    out = run_json(BUDGET_A)
    for key in ("u_C", "u_B", "R_w_s", "R_d_s", "capacity_shortfall_bytes", "bandwidth_shortfall_bps", "binding"):
        assert key in out
    assert out["u_C"] == 0.375 and out["u_B"] == 0.5          # 30/80, 1000/2000
    assert out["R_w_s"] == pytest.approx(0.03) and out["R_d_s"] == pytest.approx(0.04)
    assert out["binding"] == "bandwidth"
    assert out["capacity_shortfall_bytes"] == 0 and out["bandwidth_shortfall_bps"] == 0


def test_budget_several_workloads_repeatable_and_file(tmp_path):
    args = ["budget", "--capacity-have", "80GB", "--bandwidth-have", "2000GB/s",
            "--workload", "A:30GB:1000GB/s", "--workload", "B:200GB:1000GB/s", "--workload", "A3:90GB:3000GB/s"]
    out = run_json(args)
    a, b, a3 = out["rows"]
    assert (a["name"], a["binding"]) == ("A", "bandwidth")
    assert b["u_C"] == 2.5 and b["capacity_shortfall_bytes"] == 120 * 10**9   # 200 - 80 GB
    assert a3["R_w_s"] == pytest.approx(0.03)                                 # 90 GB / 3000 GB/s
    assert a3["capacity_shortfall_bytes"] == 10 * 10**9 and a3["bandwidth_shortfall_bps"] == pytest.approx(1e12)
    # top level = all together: 320 GB of 80 GB = 4.0, 5000 of 2000 GB/s = 2.5
    assert out["name"] == "all together" and out["u_C"] == 4.0 and out["u_B"] == 2.5
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"device": {"capacity_have": "80GB", "bandwidth_have": "2000GB/s"},
                                "workloads": [{"name": "A", "capacity_need": "30GB", "bandwidth_need": "1000GB/s"}]}))
    out = run_json(["budget", "--workloads", str(path)])
    assert out["name"] == "A" and out["u_C"] == 0.375 and len(out["rows"]) == 1
    csv_out = run(args + ["--format", "csv"]).stdout.splitlines()
    assert csv_out[0].startswith("name,") and len(csv_out) == 1 + 3 + 1          # header, 3 rows, together


def test_budget_table_prints_the_ratio_note():
    result = run(BUDGET_A)
    assert result.exit_code == 0
    assert "not a verdict" in result.stdout and "absolute needs" in result.stdout
    assert "37.5 %" in result.stdout and "50.0 %" in result.stdout


def test_budget_transfer_arithmetic():
    out = run_json(["budget", "--restores-per-s", "10", "--restore-size", "100MB", "--transfer-size", "100MB",
                    "--link-bandwidth", "20GB/s", "--iops", "1,000,000", "--io-size", "4KiB"])
    t = out["transfers"]
    assert t["restore_avg_bps"] == 1e9                      # 10/s x 100 MB
    assert t["transfer_s"] == pytest.approx(0.005)          # 100 MB / 20 GB/s, no setup given
    assert t["iops_bps"] == 4.096e9                         # 1e6 x 4096 B
    out = run_json(["budget", "--transfer-size", "100MB", "--link", "pcie-gen5-x16"])
    # preset: 50 GB/s effective, 10 us setup -> 2 ms + 10 us
    assert out["transfers"]["transfer_s"] == pytest.approx(0.002 + 10e-6)
    table = run(["budget", "--restores-per-s", "10", "--restore-size", "100MB"]).stdout
    assert "1.00 GB/s" in table and "not restore latency" in table


@pytest.mark.parametrize("args,needles", [
    (["budget", "--capacity-need", "30XB", "--bandwidth-need", "1GB/s", "--capacity-have", "1GB",
      "--bandwidth-have", "1GB/s"], ["30XB", "unknown unit"]),
    (["budget", "--capacity-need", "-3GB", "--bandwidth-need", "1GB/s", "--capacity-have", "1GB",
      "--bandwidth-have", "1GB/s"], ["-3GB", "negative"]),
    (["budget", "--capacity-need", "3GB", "--bandwidth-need", "1GB/s"], ["--capacity-have"]),
    (["budget", "--capacity-need", "3GB"], ["--bandwidth-need"]),
    (["budget"], ["nothing to compute"]),
    (["budget", "--workload", "A:1GB"], ["NAME:CAPACITY:BANDWIDTH"]),
    (["budget", "--iops", "many", "--io-size", "4KiB"], ["many"]),
    (["budget", "--transfer-size", "1GB", "--link", "pigeon"], ["pigeon", "pcie-gen5-x16"]),
    (["envelope", "--restore-bytes", "1GB", "--full-prefill", "100 parsecs", "--bandwidth", "1GB/s"], ["parsecs"]),
    (["envelope", "--restore-bytes", "1GB", "--bandwidth", "1GB/s"], ["--full-prefill"]),
    (["envelope", "--restore-tokens", "100", "--model", "llama-3.1-8b", "--gpu", "h900", "--bandwidth", "1GB/s"],
     ["h900", "h100-sxm", "a100-80gb"]),
    (["hardware", "--link", "pigeon"], ["pigeon", "nvme-gen4"]),
    (["hardware", "--hbm-bandwidth", "3TB/s"], ["--gpu"]),
])
def test_bad_input_is_one_line_exit_2(args, needles):
    assert_user_error(run(args), *needles)


def test_envelope_required_keys_and_worked_values():
    out = run_json(ENVELOPE)
    assert out["break_even_bps"] == pytest.approx(1e9 / 0.065)   # 1 GB / 65 ms ~ 15.38 GB/s
    slow, fast = out["rows"]
    assert slow["bandwidth_bps"] == 10e9 and fast["bandwidth_bps"] == 20e9
    assert slow["read_s"] == pytest.approx(0.1) and slow["cached_s"] == pytest.approx(0.135)
    assert slow["verdict"] == "slower"
    assert fast["read_s"] == pytest.approx(0.05) and fast["cached_s"] == pytest.approx(0.085)
    assert fast["verdict"] == "faster"
    table = run(ENVELOPE).stdout
    assert "15.38 GB/s" in table and "135.00 ms" in table and "85.00 ms" in table


def test_envelope_zero_denominator_is_null_and_overlap():
    out = run_json(["envelope", "--restore-bytes", "1GB", "--full-prefill", "50ms", "--remaining-compute", "20ms",
                    "--overhead", "30ms", "--bandwidth", "1TB/s"])
    assert out["break_even_bps"] is None and out["margin_s"] == 0.0      # 50 - 20 - 30 ms exactly
    assert "no break-even" in run(["envelope", "--restore-bytes", "1GB", "--full-prefill", "50ms",
                                   "--remaining-compute", "20ms", "--overhead", "30ms", "--bandwidth",
                                   "1TB/s"]).stdout
    out = run_json(ENVELOPE + ["--overlap", "60ms"])
    assert [r["exposed_wait_s"] for r in out["rows"]] == pytest.approx([0.04, 0.0])  # max(0, 100-60), max(0, 50-60)
    eq = run_json(["envelope", "--restore-bytes", "1GB", "--full-prefill", "100ms", "--remaining-compute", "30ms",
                   "--overhead", "20ms", "--bandwidth", "20GB/s"])
    assert eq["rows"][0]["verdict"] == "equal"                            # 50 ms read = 100 - 30 - 20 ms


def test_envelope_measured_prefill_csv(tmp_path):
    path = tmp_path / "prefill.csv"
    path.write_text("tokens,seconds\n1000,100ms\n2000,300ms\n")
    out = run_json(["envelope", "--restore-bytes", "1GB", "--restore-tokens", "1000", "--prompt-tokens", "2000",
                    "--prefill-csv", str(path), "--bandwidth", "10GB/s"])
    assert out["full_prefill_s"] == pytest.approx(0.3)    # measured total at 2000 tokens
    assert out["remaining_s"] == pytest.approx(0.2)       # total(2000) - total(1000) = 0.3 - 0.1
    assert out["break_even_bps"] == pytest.approx(1e10)   # 1 GB / (300 - 200 ms)
    assert out["rows"][0]["verdict"] == "equal"           # 1 GB / 10 GB/s = 100 ms = margin


def test_envelope_with_model_presets():
    pytest.importorskip("pcs.model")
    out = run_json(["envelope", "--restore-tokens", "1024", "--model", "llama-3.1-8b", "--tp", "1",
                    "--full-prefill", "100ms", "--bandwidth", "10GB/s"])
    # the prompt defaults to --restore-tokens, 1,024 tokens: the last-token cap (1,024 - 1) // 16 = 63 blocks
    # (semantics §4; 64 before it) x 16 tokens x 131,072 B (BF16, no scales)
    assert out["restore_bytes"] == 63 * 16 * 131_072
    out = run_json(["envelope", "--restore-tokens", "1024", "--model", "llama-3.1-8b", "--full-prefill", "100ms",
                    "--bandwidth", "10GB/s"])              # no --tp: replay's default TP 8
    assert out["restore_bytes"] == 63 * 16 * 131_072 // 8  # 8 KV heads over 8 ranks: one head per rank
    out = run_json(["envelope", "--restore-tokens", "1000", "--model", "llama-3.1-8b", "--tp", "1",
                    "--full-prefill", "100ms", "--bandwidth", "10GB/s"])
    assert out["restore_bytes"] == 62 * 16 * 131_072       # floor(1000 / 16) = 62 full blocks (semantics §2) = cap 999 // 16
    out = run_json(["envelope", "--restore-tokens", "1024", "--model", "llama-3.1-8b", "--tp", "2",
                    "--full-prefill", "100ms", "--bandwidth", "10GB/s"])
    assert out["restore_bytes"] == 63 * 16 * 131_072 // 2  # 8 KV heads split over 2 ranks
    out = run_json(["envelope", "--restore-tokens", "1", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                    "--tp", "1", "--bandwidth", "10GB/s"])
    # 1-token prompt: 2 x 8,030,261,248 + 524,288 attention FLOPs = 16,061,046,784 FLOPs
    # over 989.4e12 x 0.5 FLOP/s = 3.2466e-5 s
    assert out["full_prefill_s"] == pytest.approx(16_061_046_784 / (989.4e12 * 0.5), rel=1e-9)
    out = run_json(["envelope", "--restore-tokens", "1", "--model", "llama-3.1-8b", "--bandwidth", "10GB/s",
                    "--mfu", "0.25"])
    # replay's defaults h100-sxm and TP 8: the same FLOPs over 8 x 989.4e12 x 0.25 FLOP/s
    assert out["full_prefill_s"] == pytest.approx(16_061_046_784 / (8 * 989.4e12 * 0.25), rel=1e-9)
    assert out["full_prefill_from"].startswith("compute model")
    assert_user_error(run(["envelope", "--restore-tokens", "1", "--model", "llama-9", "--full-prefill", "1ms",
                           "--bandwidth", "1GB/s"]), "llama-9", "llama-3.1-8b")


def test_hardware_lists_presets_and_overrides(tmp_path):
    out = run_json(["hardware"])
    names = {g["name"] for g in out["gpus"]}
    assert {"h100-sxm", "h200", "b200", "a100-80gb", "l40s", "gh200"} <= names
    a100 = next(g for g in out["gpus"] if g["name"] == "a100-80gb")
    assert a100["fp8_flops"] is None and "datasheet" in a100["source"]
    out = run_json(["hardware", "--gpu", "h100-sxm", "--hbm-bandwidth", "3TB/s"])
    assert [g["hbm_bps"] for g in out["gpus"]] == [3e12] and out["links"] == []
    path = tmp_path / "hw.toml"
    path.write_text('[link.pcie-gen5-x16]\nbandwidth_bps = "45GB/s"\n')
    out = run_json(["hardware", "--hardware-file", str(path), "--link", "pcie-gen5-x16"])
    assert out["gpus"] == [] and out["links"][0]["bandwidth_bps"] == 45e9
    csv_lines = run(["hardware", "--format", "csv"]).stdout.splitlines()
    assert csv_lines[0].startswith("kind,name") and sum(line.startswith("link,") for line in csv_lines) >= 6
    table = run(["hardware"]).stdout
    assert "989.4 TFLOP/s" in table and "pcie-gen5-x16" in table
    bad = tmp_path / "bad.toml"
    bad.write_text('[gpu.h100-sxm]\nhbm_bps = "fast"\n')
    assert_user_error(run(["hardware", "--hardware-file", str(bad)]), "bad.toml", "gpu.h100-sxm")


def test_models_lists_presets():
    pytest.importorskip("pcs.model")
    out = run_json(["models"])
    assert any(m["name"] == "llama-3.1-8b" for m in out["models"])
    assert "llama-3.1-8b" in run(["models"]).stdout


@pytest.mark.parametrize("command", ["budget", "envelope", "hardware", "models"])
def test_every_command_has_help_with_units_and_example(command):
    result = run([command, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.stdout
    assert "GB" in result.stdout or "bytes" in result.stdout
