"""pcs report on a footprint or compare JSON damaged at any key path (deleted, or a value of the wrong type):
one line naming the file, exit 2, never a traceback (KeyError, ValueError, IndexError from inside the page), as
the fuzzer found. The undamaged files make a page."""
from __future__ import annotations

import json
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli


def _json(*args: str) -> dict:
    r = CliRunner().invoke(cli, [*args, "--format", "json", "--quiet"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def payloads() -> dict[str, dict]:
    return {"footprint": _json("footprint", "--model", "llama-3.1-8b", "--tokens", "1000"),
            "compare": _json("compare", "--timing", "sequential", "--policy", "lru", "--policy", "fifo",
                             "--tier", "gpu=300blocks")}


def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """Every key path (dict keys and list indexes), depth first; lists only their first two items."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield path + (k,)
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:2]):
            yield path + (i,)
            yield from _paths(v, path + (i,))


def _mutated(doc: Any, path: tuple, how: str) -> Any:
    doc = json.loads(json.dumps(doc))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    last = path[-1]
    if how == "delete":
        del parent[last]
    else:    # a value of another type: text for a number/list/object, a list for text
        parent[last] = [1, "a"] if isinstance(parent[last], str) else "x"
    return doc


def _report(tmp_path, doc: Any):
    src, page = tmp_path / "in.json", tmp_path / "page.html"
    src.write_text(json.dumps(doc))
    return CliRunner().invoke(cli, ["report", str(src), "-o", str(page), "--no-curve"]), src, page


@pytest.mark.parametrize("kind", ["footprint", "compare"])
def test_every_key_path_damaged_is_one_line_or_a_page(tmp_path, payloads, kind):
    """Deleting an optional key or retyping free text may still make a page; anything else is exit 2 with one
    line 'pcs: error: FILE: ...'. Never an exception from the page's code."""
    paths = list(_paths(payloads[kind]))
    assert len(paths) > 40
    for path in paths:
        for how in ("delete", "retype"):
            r, src, page = _report(tmp_path, _mutated(payloads[kind], path, how))
            where = f"{kind} {how} {'.'.join(map(str, path))}"
            assert r.exception is None or isinstance(r.exception, SystemExit), (where, repr(r.exception))
            if r.exit_code != 0:
                lines = [ln for ln in r.output.splitlines() if ln.strip()]
                assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith(f"pcs: error: {src}: "), \
                    (where, r.output)
            page.unlink(missing_ok=True)


@pytest.mark.parametrize("path,how,needle", [
    (("tokens",), "delete", "field 'the file': must be an object with 'tokens'"),
    (("by_dtype", 0, "serialized_bytes"), "delete", "field 'by_dtype[0]': must be an object with 'serialized_bytes'"),
    (("by_dtype", 0, "dtype"), "delete", "field 'by_dtype[0]': must be an object with 'dtype'"),
    (("components", 0, "prefix_store_bytes"), "delete",
     "field 'components[0]': must be an object with 'prefix_store_bytes'"),
    (("by_dtype", 0, "reference_ratio_vs_bf16"), "retype", "field 'by_dtype[0].reference_ratio_vs_bf16': must be a number"),
])
def test_footprint_findings_name_the_field(tmp_path, payloads, path, how, needle):
    r, src, page = _report(tmp_path, _mutated(payloads["footprint"], path, how))
    assert r.exit_code == 2 and needle in r.output, r.output
    assert not page.exists()


def test_a_ratio_list_and_a_short_lens_pair_name_the_field(tmp_path, payloads):
    fp = json.loads(json.dumps(payloads["footprint"]))
    fp["by_dtype"][0]["serialized_ratio_vs_bf16"] = [1, "a"]
    r, _, _ = _report(tmp_path, fp)
    assert r.exit_code == 2 and "field 'by_dtype[0].serialized_ratio_vs_bf16': must be a number" in r.output
    cmp = json.loads(json.dumps(payloads["compare"]))
    if cmp["variants"][0].get("payload_lens"):
        cmp["variants"][0]["payload_lens"]["restore_transfer_s"] = []
        r, _, _ = _report(tmp_path, cmp)
        assert r.exit_code == 2 and ("field 'variants[0].payload_lens.restore_transfer_s': must be a list of 2 "
                                     "items, got []") in r.output, r.output


@pytest.mark.parametrize("kind", ["footprint", "compare"])
def test_the_undamaged_json_makes_a_page(tmp_path, payloads, kind):
    r, _, page = _report(tmp_path, payloads[kind])
    assert r.exit_code == 0, r.output
    assert page.stat().st_size > 10_000


@pytest.mark.parametrize("value, shown", [(float("nan"), "NaN"), (float("inf"), "Infinity")])
def test_a_non_finite_footprint_ratio_is_one_line_naming_the_field(tmp_path, payloads, value, shown):
    fp = json.loads(json.dumps(payloads["footprint"]))
    fp["by_dtype"][0]["serialized_ratio_vs_bf16"] = value      # json.dumps writes NaN / Infinity
    r, src, page = _report(tmp_path, fp)
    assert r.exit_code == 2, r.output
    assert [ln for ln in r.output.splitlines() if ln.strip()] == [
        f"pcs: error: {src}: field 'by_dtype[0].serialized_ratio_vs_bf16': must be a finite number, got {shown} "
        "(pcs writes a non-finite number as null)"], r.output
    assert not page.exists()


@pytest.mark.parametrize("key, value, needle", [
    ("restore_transfer_s", None, "field 'variants[1].payload_lens.restore_transfer_s[1]': must be a number, got null"),
    ("prefill_s", float("nan"), "field 'variants[1].payload_lens.prefill_s[1]': must be a finite number, got NaN"),
])
def test_a_null_or_nan_lens_pair_item_is_one_line_naming_it(tmp_path, payloads, key, value, needle):
    cmp = json.loads(json.dumps(payloads["compare"]))
    assert cmp["variants"][1].get("payload_lens"), "the compare run has a payload lens"
    cmp["variants"][1]["payload_lens"][key][1] = value
    r, src, page = _report(tmp_path, cmp)
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith(f"pcs: error: {src}: {needle}"), r.output
    assert not page.exists()
