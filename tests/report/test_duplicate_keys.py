"""A key given twice in one JSON object is refused by every reader of pcs's own JSON, the key named (review finding
7 of 2026-12-04: pcs report drew the last of two "hit_ratio" values). One hook for all
(pcs.jsondepth.no_duplicate_keys): pcs report's replay, compare, curve and footprint files, an old sweep curve
point's result_json, the config files (workloads, plans, config.json) and the JSONL trace lines.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcs import jsondepth
from pcs.errors import UserError
from pcs.sweep import read_results
from tests.helpers import assert_one_line_error, invoke, invoke_json

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "traces" / "sample_chat.jsonl"


def test_the_hook_names_the_first_key_seen_twice():
    assert jsondepth.no_duplicate_keys([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}
    with pytest.raises(jsondepth.DuplicateKeyError, match=r"^key 'b' appears twice in one object$") as err:
        jsondepth.loads('{"a": 1, "b": 2, "c": {"b": 3}, "b": 4}', object_pairs_hook=jsondepth.no_duplicate_keys)
    assert err.value.key == "b"
    # the same key in two objects is no repeat
    assert jsondepth.loads('{"x": {"k": 1}, "y": {"k": 2}}', object_pairs_hook=jsondepth.no_duplicate_keys)


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    """The text of a JSON file of each kind pcs report reads, as pcs wrote it."""
    return {
        "replay": json.dumps(invoke_json("replay", TRACE)),
        "curve": json.dumps(invoke_json("curve", TRACE, "--capacities", "10blocks,100blocks")),
        "footprint": json.dumps(invoke_json("footprint", "--model", "llama-3.1-8b", "--tokens", "4096")),
        "compare": json.dumps(invoke_json("compare", TRACE, "--policy", "lru", "--policy", "fifo")),
    }


@pytest.mark.parametrize("kind, key", [("replay", "hit_ratio"), ("curve", "ceiling_hit_ratio"),
                                       ("footprint", "tokens"), ("compare", "trace")])
def test_pcs_report_refuses_a_top_level_key_given_twice(tmp_path, files, kind, key):
    text = files[kind]
    assert text.startswith("{") and f'"{key}": ' in text
    # the key again, with another value, right after the opening brace: json.loads would keep the file's own
    bad = tmp_path / f"{kind}.json"
    bad.write_text('{"' + key + '": 0, ' + text[1:])
    r = invoke("report", bad, "-o", tmp_path / "p.html", "--quiet")
    assert_one_line_error(r, f"{bad}:1: key '{key}' appears twice in one object")   # json.dumps: one line


def test_pcs_report_refuses_a_nested_key_given_twice(tmp_path, files):
    text = files["curve"]
    at = text.index('"lru_hit_ratio": ', text.index('"rows": ['))     # the first row's ratio, given twice
    bad = tmp_path / "c.json"
    bad.write_text(text[:at] + '"lru_hit_ratio": 1.0, ' + text[at:])
    r = invoke("report", bad, "-o", tmp_path / "p.html", "--quiet")
    assert_one_line_error(r, f"{bad}:1: field 'rows[0]': key 'lru_hit_ratio' appears twice in one object")


def test_the_line_and_the_object_of_an_indented_file(tmp_path, files):
    """pcs's own indented JSON (--format json): the line of the second occurrence and the object's path."""
    text = json.dumps(json.loads(files["replay"]), indent=2)
    at = text.index('"name": "cpu"')               # tiers[1]'s name: a second name before it
    bad = tmp_path / "r.json"
    bad.write_text(text[:at] + '"name": "gpu", ' + text[at:])
    line = text[:at].count("\n") + 1                # both names on the line where tiers[1]'s name was
    r = invoke("report", bad, "-o", tmp_path / "p.html", "--quiet")
    assert_one_line_error(r, f"{bad}:{line}: field 'tiers[1]': key 'name' appears twice in one object")


@pytest.mark.parametrize("text, key, place", [
    ('{"a": 1,\n "a": 2}', "a", (2, None)),
    ('[{"x": {"k": [1, {"q": 1,\n\n "q": 2}]}}]', "q", (3, "[0].x.k[1]")),
    ('{"s": "{\\"c\\": 1, \\"c\\": 2}", "b": {"c": "c", "c": 1}}', "c", (1, "b")),   # keys inside a string are text
    ('{"a": 1, "a": {"b": 1, "b": 2}}', "b", (1, "a")),    # the hook names the inner object's key: its place
])
def test_duplicate_place(text, key, place):
    assert jsondepth.duplicate_place(text, key) == place
    with pytest.raises(jsondepth.DuplicateKeyError) as err:
        jsondepth.loads(text, object_pairs_hook=jsondepth.no_duplicate_keys)
    assert (err.value.key, err.value.lineno, err.value.field) == (key, *place)


def test_a_workloads_file_refuses_a_key_given_twice(tmp_path):
    w = tmp_path / "w.json"
    w.write_text('{"workloads": [{"name": "A", "capacity_need": "30GB", "capacity_need": "1GB", '
                 '"bandwidth_need": "1GB/s"}]}')
    r = invoke("budget", "--workloads", w, "--capacity-have", "80GB", "--bandwidth-have", "2000GB/s")
    assert_one_line_error(r, f"{w}:1: field 'workloads[0]': key 'capacity_need' appears twice in one object")


def test_a_config_json_names_the_line_of_a_key_given_twice(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text('{\n  "model_type": "llama",\n  "num_hidden_layers": 32,\n  "num_hidden_layers": 16\n}\n')
    r = invoke("footprint", "--model", cfg, "--tokens", "100")
    assert_one_line_error(r, f"{cfg}:4: key 'num_hidden_layers' appears twice in one object")


def test_an_old_sweep_curve_point_with_a_key_twice_is_refused_naming_the_file(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(f'kind = "curve"\n[fixed]\ntrace = "{TRACE}"\n[axes]\npoints = [4]\n')
    out = tmp_path / "out"
    r = invoke("sweep", "run", plan, "-o", out, "--jobs", "1", "-q")
    assert r.exit_code == 0, r.output
    (point,) = sorted(out.glob("*.parquet"))
    t = pq.read_table(point)      # as a pcs before 2026-12-04 wrote it (an old point's result_json is read back)
    t = t.drop_columns(["block_accesses", "distinct_cacheable_blocks"])
    t = t.rename_columns(["block_accesses" if n == "cacheable_blocks" else n for n in t.column_names])
    t = t.append_column("distinct_blocks", pa.array([1], pa.int64()))
    i = t.column_names.index("result_json")
    text = t.column("result_json")[0].as_py()
    t = t.set_column(i, "result_json", pa.array(['{"requests": 0, ' + text[1:]], t.schema.field(i).type))
    pq.write_table(t, point)
    with pytest.raises(UserError, match=rf"^{point}: result_json is not the JSON pcs writes \(key 'requests' "
                                        r"appears twice in one object\)"):
        read_results(out)
