"""Hostile inputs, round 19: units on every run size and bandwidth, pcs report on mistyped JSON fields, API
arguments of the wrong type, and API and CLI refusing the same inputs. Expected messages are worked out from the
rules (docs/semantics.md §16, docs/cluster.md), not copied from output."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import pcs
from pcs.errors import ArgumentTypeError, PathError, UserError
from tests.helpers import ROOT, assert_one_line_error, invoke

SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
TWO = ["--tier", "gpu=10blocks", "--tier", "cpu=100blocks"]


# --- F1, F2: a plain number for a bandwidth or a size of a run is refused, naming the option (§16) -------------

@pytest.mark.parametrize("args, needle", [
    # 25 would be 25 B/s (x tp): "give a unit: 25GB/s", the spelling require_unit suggests for a bandwidth
    (["replay", SAMPLE, *TWO, "--link", "cpu=25"], "--link 'cpu=25' has no unit: give a unit: 25GB/s"),
    (["compare", SAMPLE, "--policy", "lru", "--policy", "fifo", *TWO, "--link", "cpu=2.5"],
     "--link 'cpu=2.5' has no unit: give a unit: 2.5GB/s"),
    (["replay", SAMPLE, "--instances", "2", "--shared-tier", "remote=1GB", "--link", "remote=3"],
     "--link 'remote=3' has no unit: give a unit: 3GB/s"),
    # 5 would be 5 bytes of reserve: "give a unit: 5GB", the size spelling
    (["replay", SAMPLE, "--kv-reserve", "5"], "--kv-reserve '5' has no unit: give a unit: 5GB"),
    (["deploy", "--model", "llama-3.1-8b", "--tp", "1", "--kv-reserve", "5"],
     "--kv-reserve '5' has no unit: give a unit: 5GB"),
])
def test_a_run_size_or_bandwidth_without_a_unit_is_refused(args, needle):
    assert_one_line_error(invoke(*args, "--quiet"), needle)


def test_a_link_with_a_unit_and_a_zero_reserve_still_run():
    # 25GB/s at tp 1 is 25e9 B/s on the cpu tier's link; --kv-reserve 0 needs no unit (0 is 0 in any unit)
    r = invoke("replay", SAMPLE, *TWO, "--link", "cpu=25GB/s", "--model", "llama-3.1-8b", "--tp", "1",
               "--timing", "sequential", "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    tiers = json.loads(r.stdout)["tiers"]
    assert [t["link_bandwidth_bps"] for t in tiers] == [None, 25e9]      # the GPU tier has no link
    r = invoke("deploy", "--model", "llama-3.1-8b", "--tp", "1", "--kv-reserve", "0", "--format", "json")
    assert r.exit_code == 0, r.output


# --- F3: pcs report checks every field of every kind of JSON it reads ------------------------------------------

def _jsons(tmp: Path) -> dict[str, dict]:
    runs = {"replay": ["replay", SAMPLE, "--timing", "sequential", "--tier", "gpu=200blocks"],
            "compare": ["compare", SAMPLE, "--policy", "lru", "--policy", "fifo", "--timing", "sequential",
                        "--tier", "gpu=200blocks"],
            "curve": ["curve", SAMPLE, "--points", "4"],
            "footprint": ["footprint", "--model", "llama-3.1-8b", "--tokens", "1000"]}
    out = {}
    for kind, args in runs.items():
        r = invoke(*args, "--format", "json", "--quiet")
        assert r.exit_code == 0, r.output
        out[kind] = json.loads(r.stdout)
    return out


@pytest.fixture(scope="module")
def real_jsons(tmp_path_factory):
    return _jsons(tmp_path_factory.mktemp("h19"))


#: the wrong values put in each top-level field in turn: another type of each JSON kind
MUTATIONS = {"int": 12345, "null": None, "str": "x", "list": [1], "obj": {"a": 1}}


@pytest.mark.parametrize("kind", ["replay", "compare", "curve", "footprint"])
def test_every_mistyped_field_is_one_line_or_a_page_never_a_bug(tmp_path, real_jsons, kind):
    """Each top-level field of a real JSON of each kind, replaced by an int, null, a string, a list and an
    object: exit 0 (a page: the field is not read, or the value is one it takes) or exit 2 with one line naming
    the file and the field -- never exit 1 (an internal error)."""
    good = real_jsons[kind]
    page = tmp_path / "p.html"
    refused = 0
    for key in good:
        for name, value in MUTATIONS.items():
            if value == good[key] or (isinstance(good[key], type(value)) and not isinstance(value, (dict, list))
                                      and value is not None):
                continue                    # the same type as the real value: not a mistype
            bad = tmp_path / f"{kind}_{key}_{name}.json"
            bad.write_text(json.dumps(dict(good, **{key: value})))
            r = invoke("report", bad, "-o", page, "--no-curve", "--quiet")
            assert r.exit_code in (0, 2), (key, name, r.exit_code, r.output[-600:])
            if r.exit_code == 2 and f"field '{key}" in r.stderr:
                assert_one_line_error(r, f"{bad}: field '{key}")
                refused += 1
            elif r.exit_code == 2:      # no longer this kind of JSON (a key payload_kind reads): one line too
                assert_one_line_error(r, "pcs: error:")
    assert refused > 0


@pytest.mark.parametrize("kind, key, value, needle", [
    # the hostile tester's crashes, one of each kind, with the message worked out from the declared type and, for a
    # number, its range rule (pcs.report.payloadcheck.must_be: one wording for every kind)
    ("replay", "model", 5, "field 'model': must be a string, got 5"),
    ("replay", "reference_bytes_per_block", None, "field 'reference_bytes_per_block': must be a count >= 0 below 2^63, got null"),
    ("replay", "single_sequence_with_decode_hit_ratio", "x",
     "field 'single_sequence_with_decode_hit_ratio': must be a ratio in [0, 1] or null, got \"x\""),
    # ideal null while hit_ratio is a number: the waterfall's levels are null together (no prompt tokens) or not
    ("replay", "ideal_hit_ratio", None, "field 'ideal_hit_ratio': must be a ratio in [0, 1] when hit_ratio is one"),
    ("replay", "sequential_hit_ratio", None, "field 'sequential_hit_ratio': must be a ratio in [0, 1] when"),
    ("curve", "knee", None, "field 'knee': must be an object, got null"),
    # null only for 0/0 (no prompt tokens, docs/semantics.md §12): the file's prompt_tokens are above 0
    ("curve", "ceiling_hit_ratio", None, "field 'ceiling_hit_ratio': must be a ratio in [0, 1] when prompt_tokens is"),
    ("curve", "rows", "x", "field 'rows': must be a list, got \"x\""),
    ("compare", "variants", {"a": 1}, "field 'variants': must be a list, got {\"a\": 1}"),
    ("footprint", "components", 12345, "field 'components': must be a list, got 12345"),
    ("footprint", "tokens", "x", "field 'tokens': must be a count >= 0 below 2^63, got \"x\""),
    ("footprint", "reference_bytes", None, "field 'reference_bytes': must be a count >= 0 below 2^63, got null"),
])
def test_the_reported_crashes_are_one_line(tmp_path, real_jsons, kind, key, value, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(real_jsons[kind], **{key: value})))
    assert_one_line_error(invoke("report", bad, "-o", tmp_path / "p.html", "--no-curve"), f"{bad}: {needle}")


def test_a_nested_field_is_named_by_its_path(tmp_path, real_jsons):
    run = json.loads(json.dumps(real_jsons["replay"]))
    run["tiers"][0]["hit_blocks"] = "many"     # TierSummary.hit_blocks: int
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(run))
    assert_one_line_error(invoke("report", bad, "-o", tmp_path / "p.html", "--no-curve"),
                          "field 'tiers[0].hit_blocks': must be a count >= 0 below 2^63, got \"many\"")


def test_a_gap_that_does_not_sum_is_refused_not_an_assertion(tmp_path, real_jsons):
    # ideal - block_rounding - capacity_eviction - concurrency must be the real hit ratio (§12); +0.25 breaks it
    run = json.loads(json.dumps(real_jsons["replay"]))
    run["gap"]["concurrency"] = (run["gap"]["concurrency"] or 0.0) + 0.25
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(run))
    assert_one_line_error(invoke("report", bad, "-o", tmp_path / "p.html", "--no-curve"),
                          "field 'gap': its terms must sum to ideal_hit_ratio - hit_ratio")


def test_the_real_jsons_still_draw(tmp_path, real_jsons):
    files = []
    for kind, payload in real_jsons.items():
        files.append(tmp_path / f"{kind}.json")
        files[-1].write_text(json.dumps(payload))
    r = invoke("report", *files, "-o", tmp_path / "all.html", "--no-curve", "--quiet")
    assert r.exit_code == 0, r.output


# --- F5, F11: API arguments of the wrong type are UserErrors naming the argument ---------------------------------

@pytest.mark.parametrize("call, needle", [
    (lambda: pcs.replay(5), "trace must be a path, a Trace"),
    (lambda: pcs.replay([1, 2, 3]), "got an item of type int (no 'arrival_s')"),
    (lambda: pcs.replay(SAMPLE, tiers=[None]), "got an item of type NoneType: None"),
    (lambda: pcs.replay(SAMPLE, policy=["lru"]), "policy= must be a name or a value, not a collection, got list"),
    (lambda: pcs.replay(SAMPLE, timing=["sequential"]), "timing= must be a string, got list: ['sequential']"),
    (lambda: pcs.replay(SAMPLE, engine=["auto"]), "engine= must be a string, got list: ['auto']"),
    (lambda: pcs.replay(SAMPLE, admit=5), "admit= must be 'TIER=KIND' strings or a mapping of tier to kinds, got int"),
    (lambda: pcs.fleet_replay(SAMPLE, instances=2, shared_tier=["remote=1TB"]),
     "shared_tier= must be a 'NAME=SIZE' string (or a TierSpec), got list: ['remote=1TB']"),
    (lambda: pcs.fleet_replay(SAMPLE, instances=2, router=["prefix"]),
     "router= must be a router name (or a Router), got list: ['prefix']"),
])
def test_api_wrong_types_are_user_errors(call, needle):
    with pytest.raises(ArgumentTypeError) as exc:     # a UserError and a TypeError
        call()
    assert needle in str(exc.value) and isinstance(exc.value, UserError) and isinstance(exc.value, TypeError)


@pytest.mark.parametrize("stale, needle", [
    ("1s", "router_stale_s= must be a number, got '1s' (str)"),
    (math.inf, "router_stale_s= must be a finite number, got inf"),
    (1e300, "router_stale_s= must be <= 1e+09, got 1e+300"),   # --router-stale-s takes at most 1e9 s
])
def test_router_stale_s_is_held_to_the_cli_range(stale, needle):
    with pytest.raises(UserError, match="^" + needle.replace("+", r"\+").replace("(", r"\(").replace(")", r"\)")):
        pcs.fleet_replay(SAMPLE, instances=2, router="prefix", router_stale_s=stale)


# --- F8: the API refuses what the CLI refuses ----------------------------------------------------------------------

@pytest.mark.parametrize("call, needle", [
    (lambda: pcs.compare(SAMPLE, policies=["lru", "lru"]),
     "policies 'lru' and policies 'lru' name the same policy with the same options; give each configuration once"),
    (lambda: pcs.compare(SAMPLE, policies=["lru", None]), "policies 'lru' and policies None name the same policy"),
    (lambda: pcs.compare(SAMPLE, tier_sets=[[]]), "tier_sets[0] is empty: at least one tier is needed"),
    (lambda: pcs.envelope(10**9, 0.1, 0.03, 0.005, [0, 10e9]), "bandwidths_bps[0] = 0: a bandwidth must be > 0"),
    (lambda: pcs.fleet_replay(SAMPLE, instances=2, admit=["cpu=reuse:2"], tiers=["gpu=10blocks", "cpu=100blocks"]),
     "admit= is for single-instance replays (not with instances=, router= or shared_tier=)"),
    (lambda: pcs.open_trace(SAMPLE, sort="no"), "sort='no': must be True or False"),
])
def test_the_api_refuses_what_the_cli_refuses(call, needle):
    with pytest.raises(UserError) as exc:
        call()
    assert needle in str(exc.value), str(exc.value)


def test_the_cli_refuses_one_policy_twice_with_its_flag():
    assert_one_line_error(invoke("compare", SAMPLE, "--policy", "lru", "--policy", "lru", "--quiet"),
                          "--policy lru and --policy lru name the same policy with the same options")


# --- F9: a model named by a missing path ---------------------------------------------------------------------------

def test_a_missing_model_file_is_a_path_error(tmp_path):
    nope = tmp_path / "nope.json"
    with pytest.raises(PathError, match=f"model='{nope}': No such file or directory"):
        pcs.footprint(str(nope), 100)
    with pytest.raises(PathError, match=f"model='{nope}': No such file or directory"):
        pcs.get_model(nope)
    with pytest.raises(PathError, match="Is a directory"):
        pcs.footprint(str(tmp_path) + "/", 100)
    assert pcs.get_model("meta-llama/Llama-3.1-8B").kv_bytes_per_token() == 131072   # an HF id is a name


# --- F12: an interrupted --plot leaves no empty folder ---------------------------------------------------------------

def test_an_interrupted_plot_leaves_no_empty_folder(tmp_path, monkeypatch):
    from pcs.report import htmlplot

    class Interrupting:
        def vegalite_to_svg(self, spec, **kw):
            raise KeyboardInterrupt

        vegalite_to_png = vegalite_to_svg

    monkeypatch.setattr(htmlplot, "require_vl_convert", lambda: Interrupting())
    chart = type("C", (), {"id": "c1", "spec": {}})()
    out = tmp_path / "figs"
    with pytest.raises(KeyboardInterrupt):
        htmlplot.write_plots([chart], out)
    assert not out.exists()
    out.mkdir()                                 # a folder the user made is left as it was
    with pytest.raises(KeyboardInterrupt):
        htmlplot.write_plots([chart], out)
    assert out.is_dir()
