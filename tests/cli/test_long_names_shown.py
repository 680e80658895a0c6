"""A long name pcs was given is cut in what a person reads and kept whole in what a script reads (mend46b item 2).

A 5,000-character workload name (or a model's name from its config, a GPU's from a hardware file) was printed
whole in the text outputs. The rule (pcs.errors.shown_name): a name of at most 100 characters is shown whole,
a longer one as its first 100 characters, ``...`` and its length with a thousands separator, ``(5,000
characters)`` (pcs.errors.quoted's cut); JSON keeps the name whole. Each expectation below is that rule applied
by hand to the name given."""
from __future__ import annotations

import json

from helpers import ROOT, invoke, invoke_json

W = "w" * 5000
CUT = "w" * 100 + "... (5,000 characters)"


def _budget(*extra):
    return ("budget", "--capacity-have", "80GB", "--bandwidth-have", "2000GB/s",
            "--workload", f"{W}:30GB:1000GB/s", "--workload", "B:200GB:1000GB/s", *extra)


def test_a_long_workload_name_is_cut_in_the_table_and_whole_in_json():
    r = invoke(*_budget())
    assert r.exit_code == 0, r.output
    rows = r.stdout.splitlines()
    assert rows[3].startswith(CUT + " ") and W[:101] not in r.stdout
    data = invoke_json(*_budget())
    assert [row["name"] for row in data["rows"]] == [W, "B"]


def test_a_name_of_100_characters_is_shown_whole():
    from pcs.errors import shown_name

    assert shown_name("x" * 100) == "x" * 100
    assert shown_name("x" * 101) == "x" * 100 + "... (101 characters)"
    assert shown_name("a\tb") == "a\\tb"          # a tab cannot break a row


def test_a_long_gpu_name_from_a_hardware_file_is_cut_in_the_table(tmp_path):
    name = "g" * 300
    hw = tmp_path / "hw.toml"
    hw.write_text(f'[gpu.{name}]\nhbm_bytes = "80GB"\nhbm_bps = "3TB/s"\nbf16_flops = 1e15\n')
    r = invoke("hardware", "--hardware-file", hw, "-q")
    assert r.exit_code == 0, r.output
    assert ("g" * 100 + "... (300 characters)") in r.stdout and "g" * 101 not in r.stdout
    data = invoke_json("hardware", "--hardware-file", hw)
    assert name in [g["name"] for g in data["gpus"]]


def test_a_long_model_name_from_a_config_is_cut_in_titles_and_notes(tmp_path):
    cfg = json.loads((ROOT / "tests" / "model" / "configs" / "llama.json").read_text())
    cfg["_name_or_path"] = "m" * 5000
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    cut = "m" * 100 + "... (5,000 characters)"
    for args in (("footprint", "--model", path, "--tokens", "1000"), ("deploy", "--model", path, "--gpu", "h100")):
        r = invoke(*args, "-q")
        assert r.exit_code == 0, r.output
        assert cut in r.stdout.splitlines()[0] and "m" * 101 not in r.stdout, args
    assert invoke_json("deploy", "--model", path, "--gpu", "h100")["model"] == "m" * 5000
