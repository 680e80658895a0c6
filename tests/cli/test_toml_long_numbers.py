"""A TOML integer past Python's digit limit (4,300 digits) is named like the JSON reader names it -- file, line,
field, digits -- in one line with exit 2, not an internal error (pcs/configfile.py ``_toml_number_error``)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pcs.configfile import read_mapping
from pcs.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("body, line, field, digits", [
    ("[device]\nname = \"x\"\nhbm_gb = " + "9" * 5000 + "\n", 3, "device.hbm_gb", 5000),   # line 3: its whole path
    ("a = 1\nb = -" + "1" * 4400 + "\n", 2, "b", 4400),                            # a sign is not a digit
    ("x = [1, " + "2" * 4301 + "]\n", 1, "x[1]", 4301),                             # in an array: its element
])
def test_a_long_toml_integer_is_named(tmp_path, body, line, field, digits):
    p = tmp_path / "plan.toml"
    p.write_text(body)
    with pytest.raises(InputError) as err:
        read_mapping(p)
    e = err.value
    assert (e.line, e.field) == (line, field)
    assert f"number too long ({digits:,} digits)" in str(e)


def test_digits_at_the_limit_and_long_floats_are_read(tmp_path):
    p = tmp_path / "ok.toml"
    p.write_text("n = " + "7" * 4300 + "\nf = 1." + "5" * 5000 + "\n")    # 4,300 digits: Python's limit, allowed
    got = read_mapping(p)
    assert got["n"] == int("7" * 4300) and got["f"] == 1.5555555555555556


def test_the_cli_prints_one_line(tmp_path):
    hw = tmp_path / "hw.toml"
    hw.write_text("[device]\nname = \"x\"\nhbm_gb = " + "9" * 5000 + "\n")
    out = subprocess.run([sys.executable, "-m", "pcs", "replay", str(ROOT / "traces" / "sample_chat.jsonl"),
                          "--hardware-file", str(hw)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2
    assert out.stderr.strip() == f"pcs: error: {hw}:3: field 'device.hbm_gb': number too long (5,000 digits)"
    assert "Traceback" not in out.stderr
