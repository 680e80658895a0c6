"""Every TOML/JSON settings file's error names the file, the LINE and the field (docs/semantics.md: bad input
gets file, line and field): the line where the key is written, counted by hand in each text below."""
from __future__ import annotations

import pytest

from pcs.analysis.budget import load_workloads
from pcs.errors import InputError, UserError
from pcs.hardware import load_hardware_file
from pcs.keylines import json_lines, toml_lines
from pcs.model import load_hf_config
from pcs.sweep.plan import load_plan

W_TOML = """[device]
capacity_have = "80GB"
bandwidth_have = "2000GB/s"
[[workload]]
name = "A"
capacity_need = "30GB"
bandwidth_need = "1000GB/s"
[[workload]]
name = "B"
capacity_need = "-3GB"
bandwidth_need = "1000GB/s"
"""
W_JSON = """{
  "workloads": [
    {"name": "A", "capacity_need": "30GB", "bandwidth_need": "1TB/s"},
    {"name": "B",
     "capacity_need": "-1GB",
     "bandwidth_need": "1TB/s"},
    {"name": "C", "capacity_need": "1GB"}
  ]
}
"""
HW_TOML = """# my hardware
[gpu]
"h100-sxm".hbm_bps = "3TB/s"
mygpu = {hbm_bytes = "10GB", hbm_bps = "-1TB/s", bf16_flops = 1e15}
"""
HW_JSON = """{"gpus": {"h100-sxm": {"hbm_bps": "3TB/s"}},
 "link": {"pcie-gen5-x16": {
    "bandwidth_bps": "45GB/s",
    "setup_s": "-1us"}}}
"""
CFG = '{\n "num_hidden_layers": 2,\n "num_attention_heads": 8,\n "hidden_size": 1024,\n "head_dim": %s\n}\n'
PLAN = """kind = "replay"
[fixed]
trace = "t.jsonl"
tier = {gpu = "500blocks", cpu = "0GB"}

[axes]
policy = ["lru",
          "fifo"]
"tier.cpu" = {from = "0GB", to = "100GB", step = "-50GB"}
"""

CASES = [
    # (file name, text, loader, line, field)
    ("w.toml", W_TOML, load_workloads, 10, "workload[1].capacity_need"),
    ("w.toml", W_TOML.replace("bandwidth_have", "bandwith_have"), load_workloads, 3, "device.bandwith_have"),
    ("w.toml", W_TOML.replace('name = "B"\n', 'name = "B"\nlabel = 1\n'), load_workloads, 10, "workload[1].label"),
    ("w.json", W_JSON, load_workloads, 5, "workloads[1].capacity_need"),
    ("w.json", W_JSON.replace('"-1GB"', '"1GB"'), load_workloads, 7, "workloads[2]"),   # missing a key: its entry
    ("hw.toml", HW_TOML, load_hardware_file, 4, "gpu.mygpu.hbm_bps"),
    ("hw.toml", HW_TOML.replace('"h100-sxm".hbm_bps', '"h100-sxm".hbm_bpz'), load_hardware_file, 3,
     "gpu.h100-sxm.hbm_bpz"),
    ("hw.json", HW_JSON, load_hardware_file, 4, "link.pcie-gen5-x16.setup_s"),
    ("config.json", CFG % "NaN", load_hf_config, 5, "head_dim"),
    ("config.json", CFG.replace('"num_hidden_layers": 2', '"num_hidden_layers": 0') % "128", load_hf_config, 2,
     "num_hidden_layers"),
    ("config.json", CFG.replace('"hidden_size": 1024', '"hidden_size": 1e999') % "128", load_hf_config, 4,
     "hidden_size"),
    # a multimodal wrapper: text_config's fields override the top level's, so its line is the one read
    ("config.json", '{"num_hidden_layers": 2,\n "text_config": {\n  "num_hidden_layers": 0}}\n', load_hf_config, 3,
     "num_hidden_layers"),
]


@pytest.mark.parametrize("name,text,load,line,field", CASES)
def test_a_bad_value_is_named_by_file_line_and_field(tmp_path, name, text, load, line, field):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load(path)
    assert str(err.value).startswith(f"{path}:{line}: field '{field}': "), str(err.value)


@pytest.mark.parametrize("text,line,start", [
    (PLAN, 9, "axis 'tier.cpu' step: invalid size '-50GB'"),
    (PLAN.replace('"fifo"]', '["fifo"]]'), 8, "[axes] 'policy': value 2 of the axis"),
    (PLAN.replace('trace = "t.jsonl"', 'trace = ["t.jsonl"]'), 3, "[fixed] 'trace':"),
    (PLAN.replace('kind = "replay"\n', 'kind = "replay"\ntilte = 1\n'), 2, "unknown key 'tilte'"),
    (PLAN.replace('kind = "replay"', 'kind = "replai"'), 1, "unknown kind 'replai'"),
])
def test_a_sweep_plan_names_the_line_of_the_key(tmp_path, text, line, start):
    path = tmp_path / "p.toml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        load_plan(path)
    assert str(err.value).startswith(f"{path}:{line}: {start}"), str(err.value)


def test_a_toml_syntax_error_puts_its_line_after_the_file(tmp_path):
    path = tmp_path / "w.toml"
    path.write_text('[device]\ncapacity_have = "80GB"\nbandwidth_have = \n')
    with pytest.raises(InputError) as err:
        load_workloads(path)
    assert str(err.value) == f"{path}:3: invalid TOML: Invalid value at column 18"


def test_a_field_not_written_in_the_file_has_no_line(tmp_path):
    path = tmp_path / "config.json"                      # required, and absent: no line to give (never a wrong one)
    path.write_text('{\n "num_attention_heads": 8,\n "hidden_size": 1024\n}\n')
    with pytest.raises(InputError) as err:
        load_hf_config(path)
    assert str(err.value).startswith(f"{path}: field 'num_hidden_layers': missing")


def test_toml_locator_follows_headers_dotted_quoted_inline_and_multiline_text():
    text = ('# c\na.b = """x\ny"""""\n"q.k" = [1,\n  2, # c\n  {x = 1, y = [3,\n  4]}]\n[t1]\nz = \'lit\'\n'
            '[[arr]]\nv = 1\n[[arr]]\nv = 2\n[[arr.sub]]\nw = 3\n[arr.tab]\nu = 4\n')
    got = toml_lines(text)
    assert {k: got[k] for k in ("a.b", "q.k[1]", "q.k[2].y[1]", "t1.z", "arr", "arr[0].v", "arr[1].v",
                                 "arr[1].sub[0].w", "arr[1].tab.u")} == {
        "a.b": 2, "q.k[1]": 5, "q.k[2].y[1]": 7, "t1.z": 9, "arr": 10, "arr[0].v": 11, "arr[1].v": 13,
        "arr[1].sub[0].w": 15, "arr[1].tab.u": 17}


@pytest.mark.parametrize("first, lines", [
    # an escaped backslash ends the string at its first three quotes: e's string (lines 3-5) holds 'f = 2'
    ('a = """x\\\\"""', {"a": 1, "d": 2, "e": 3, "f": 6}),
    # an escaped quote: the string is x" and ends at the next three quotes, on the same line
    ('a = """x\\""""', {"a": 1, "d": 2, "e": 3, "f": 6}),
    # three backslashes: an escaped backslash, then an escaped quote; the string ends two quotes later
    ('a = """x\\\\\\""""', {"a": 1, "d": 2, "e": 3, "f": 6}),
])
def test_toml_locator_counts_the_backslashes_before_a_closing_quote(first, lines):
    import tomllib

    text = first + '\nd = 1\ne = """\nf = 2\n"""\nf = 9\n'
    assert tomllib.loads(text)["f"] == 9          # the text is TOML, and f is the one on line 6
    assert toml_lines(text) == lines


def test_json_locator_names_nested_keys_and_array_elements():
    got = json_lines('{"a": [1,\n {"b\\"c": {"d":\n 2}}],\n "e": null}')
    assert got == {"a": 1, "a[0]": 1, "a[1]": 2, 'a[1].b"c': 2, 'a[1].b"c.d': 2, "e": 4}


# Review 45 (mend45b): a file of a suffix pcs does not read is refused naming the suffixes it reads (TOML, JSON);
# a YAML one says it is YAML and the way out (it suggested '.toml', as if the name were mistyped).

_READS = "pcs reads TOML (.toml) or JSON (.json), by the suffix"
_YAML = ("a YAML file ({}), which pcs does not read: it reads settings as TOML (.toml) or JSON (.json), by the "
         "suffix; convert the file to TOML (the same tables and keys)")
_OTHER = ("{} file ({}), which pcs does not read: it reads settings as TOML (.toml) or JSON (.json), by the "
          "suffix; write its settings as TOML")


@pytest.mark.parametrize("load", [load_hardware_file, load_workloads, load_plan])
@pytest.mark.parametrize("name, message", [
    ("x.yaml", _YAML.format(".yaml")),
    ("x.YML", _YAML.format(".YML")),
    # review 45d: 'a INI', 'a XML' (an: both are read from a vowel sound), and INI/XML are not tables of keys as
    # they stand: written anew, not converted "with the same tables and keys"
    ("x.ini", _OTHER.format("an INI", ".ini")),
    ("x.xml", _OTHER.format("an XML", ".xml")),
    ("x.conf", _OTHER.format("an INI", ".conf")),
    ("x.tml", f"unknown file type '.tml'; did you mean '.toml'? {_READS}"),
    ("x", f"no suffix; {_READS}"),
])
def test_an_unread_suffix_names_what_pcs_reads(tmp_path, load, name, message):
    p = tmp_path / name
    p.write_text("gpu:\n  x: 1\n")
    with pytest.raises(UserError) as err:
        load(p)
    assert str(err.value) == f"{p}: {message}"


def test_a_yaml_model_config_says_it_is_read_as_json(tmp_path):
    p = tmp_path / "config.yaml"
    p.write_text("hidden_size: 4096\n")
    with pytest.raises(InputError) as err:
        load_hf_config(p)
    assert str(err.value) == (f"{p}:1: invalid JSON: Expecting value at column 1 (a YAML file? this file is read as "
                              "JSON, whatever its suffix; YAML is not read: convert it to JSON)")
