"""Review 48a's wording and naming findings on the views, each value worked by hand.

- F4 (as review 48k's K2 settled it): one meaning per key in every command -- ``dtype`` the value type, ``layout``
  the layout's one name: llama-3.1-8b ``--dtype fp4`` runs as ``nvfp4`` (fp4 values, one 8-bit scale per 16
  values): JSON and CSV ``dtype`` fp4 and ``layout`` nvfp4 (as a replay's ``payload_lens``), the text's column
  showing nvfp4 headed ``layout``.
- F6: 1,000,000 IOPS x 4 KiB = 4,096,000,000 B/s prints as 4.096 GB/s, not 4.10 GB/s (4,100,000,000 B/s);
  footprint's fp8 note says per ratio what halves: llama-2-70b (no state) x0.500 in every mode, exactly half, the
  block count the same; qwen3-next-80b-a3b at TP 8, B = 16 keeps its 4,939,776 B state (36 layers x 137,216 B),
  so Reference = (122,880,000 / 2 + 4,939,776) / (122,880,000 + 4,939,776) = 66,379,776 / 127,819,776 = x0.519.
"""
from __future__ import annotations

import csv
import io
import json

from click.testing import CliRunner

from pcs.cli.main import cli


def _run(*args: str) -> str:
    out = CliRunner().invoke(cli, list(args))
    assert out.exit_code == 0, out.output
    return out.stdout


def test_component_dtype_is_the_value_type_and_layout_the_name_in_every_format():
    args = ("footprint", "--model", "llama-3.1-8b", "--tokens", "1000", "--dtype", "fp4")
    d = json.loads(_run(*args, "--format", "json"))
    comp = d["components"][0]
    assert (comp["dtype"], comp["layout"]) == ("fp4", "nvfp4") and "value_dtype" not in comp
    assert (d["dtype"], d["layout"]["name"]) == ("fp4", "nvfp4")
    assert [(r["dtype"], r["layout"]) for r in d["by_dtype"]][-1] == ("fp4", "nvfp4")
    row = next(csv.DictReader(io.StringIO(_run(*args, "--format", "csv"))))
    assert (row["dtype"], row["layout"]) == ("fp4", "nvfp4") and "value_dtype" not in row
    lines = _run(*args).splitlines()
    assert lines[1].split()[:3] == ["component", "layers", "layout"]
    line = next(ln for ln in lines if ln.startswith("full_attention"))
    assert line.split()[2] == "nvfp4"
    head = next(ln for ln in lines if ln.startswith("layout ") or ln.startswith("dtype "))
    assert head.split()[0] == "layout"                    # the by-dtype table's first column shows nvfp4


def test_iops_bandwidth_shows_the_digits_that_tell_it_apart():
    out = _run("budget", "--iops", "1000000", "--io-size", "4KiB")
    row = next(ln for ln in out.splitlines() if ln.startswith("IOPS bandwidth"))
    assert row.split()[-2:] == ["4.096", "GB/s"]


def test_fp8_note_says_what_halves_per_ratio():
    plain = " ".join(_run("footprint", "--model", "llama-2-70b", "--tokens", "10000", "--block-size", "512").split())
    assert ("vs bf16: Reference x0.500, Serialized x0.500, Reserved x0.500, Prefix store x0.500 (exactly half); "
            "as many blocks, each of fewer bytes") in plain
    assert "whole blocks" not in plain
    state = " ".join(_run("footprint", "--model", "qwen3-next-80b-a3b", "--tokens", "10000", "--block-size", "16",
                          "--tp", "8").split())
    assert "Reference x0.519" in state and "(the recurrent state, 4,939,776 B a sequence, does not shrink)" in state
