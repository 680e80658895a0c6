"""The lead's mends of session 48's new-user review: the compute model's bias said where its times are used.

Values worked by hand from docs/semantics.md §10 (llama-3.1-8b: 8,030,261,248 parameters, 32 layers of 32 heads of
128; H100 SXM dense bf16 989.4 TFLOP/s, MFU 0.5)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from pcs.cli.main import cli

_BIAS = "the compute model's prefill is an upper bound"


def _envelope(*args: str) -> dict:
    res = CliRunner().invoke(cli, ["envelope", "--format", "json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_the_compute_models_times_carry_its_bias():
    out = _envelope("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tokens", "8192", "--tp", "1",
                    "--bandwidth", "10GB/s")
    # 2 x N x n + attention 4 x d_head x heads x layers x n (n + 1) / 2, over 0.5 x 989.4e12 FLOP/s
    flops = 2 * 8_030_261_248 * 8192 + 4 * 128 * 32 * 32 * 8192 * 8193 / 2
    assert abs(out["full_prefill_s"] - flops / (0.5 * 989.4e12)) < 1e-9
    assert round(out["full_prefill_s"] * 1e3, 1) == 301.5          # the figure the note quotes
    assert sum(_BIAS in n for n in out["notes"]) == 1


def test_given_and_measured_times_carry_no_compute_model_note(tmp_path):
    given = _envelope("--restore-bytes", "1GB", "--full-prefill", "100ms", "--bandwidth", "10GB/s")
    assert not any(_BIAS in n for n in given["notes"])
    csv = tmp_path / "prefill.csv"
    csv.write_text("tokens,seconds\n1024,0.05\n8192,0.4\n")
    measured = _envelope("--restore-bytes", "1GB", "--tokens", "8192", "--prefill-csv", str(csv),
                         "--bandwidth", "10GB/s")
    assert measured["full_prefill_s"] == 0.4
    assert not any(_BIAS in n for n in measured["notes"])


def test_a_settings_file_not_utf8_names_the_byte_in_its_line(tmp_path):
    """One form for every text pcs reads (trace lines, CSV cells, settings files, report JSON): the byte's value and
    its place in its line counted from 1, as an editor counts columns."""
    for text, line, at in ((b'title = "caf\xe9"\n', 1, 13),                            # 12 bytes before it
                           (b'[device]\ncapacity_have = "1GB"\n# caf\xe9\n', 3, 6)):    # "# caf": 5 before it
        p = tmp_path / "w.toml"
        p.write_bytes(text)
        res = CliRunner().invoke(cli, ["budget", "--workloads", str(p)])
        assert res.exit_code == 2
        assert res.output.strip().endswith(f"{p}:{line}: not UTF-8 text (byte 0xe9 at byte {at} of the line); save the "
                                           "file as UTF-8")
