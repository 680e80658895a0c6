"""A footprint JSON's counts are checked with the one type/range wording of every JSON ``pcs report`` reads
(pcs.report.payloadcheck.must_be and RANGES; review finding 3 of 2026-12-04: they had no range check and said
"must be an integer").

Ranges worked from what ``pcs footprint`` takes and writes: T (``tokens``) may be 0 (``--tokens 0``), and so may a
component's ``tokens_held`` and ``layers`` (the page-padding row of a hybrid model holds no layer); ``tp``
(``--tp`` 1..1024), ``sequences`` (``--sequences`` 1..10^9), ``num_layers`` (a model none of whose layers holds KV is
refused) and each ``layer_pattern`` count (a kind is listed only for a layer of it) are at least 1.
"""
from __future__ import annotations

import copy
import json

import pytest

from pcs.errors import UserError
from pcs.report.payloadcheck import check_range
from tests.helpers import assert_one_line_error, invoke, invoke_json

COUNT, POSITIVE = "a count >= 0 below 2^63", "a count >= 1 below 2^63"


@pytest.fixture(scope="module")
def gemma() -> dict:
    # gemma-3-27b at T = 16 (one block): 10 full-attention layers, 52 sliding-window ones, a page-padding row of
    # 0 layers
    return invoke_json("footprint", "--model", "gemma-3-27b", "--tokens", "16")


def _report(tmp_path, payload: dict):
    f = tmp_path / "fp.json"
    f.write_text(json.dumps(payload))
    return invoke("report", f, "-o", tmp_path / "fp.html", "--quiet"), f


def test_the_zeros_pcs_writes_draw(tmp_path, gemma):
    assert [c["layers"] for c in gemma["components"]] == [10, 52, 0]
    assert gemma["layer_pattern"] == {"sliding": 52, "full": 10}
    r, _ = _report(tmp_path, gemma)
    assert r.exit_code == 0, r.output
    for key in ("tokens", "components[2].tokens_held", "components[2].layers", "prefix_store_blocks"):
        check_range(0, key)                 # 0 is in range (T = 0: every count 0)
    with pytest.raises(UserError, match="must be a count >= 1 below 2\\^63, got 0"):
        check_range(0, "layer_pattern.sliding")


@pytest.mark.parametrize("keys, value, rule", [
    (("tokens",), -1, COUNT),
    (("tokens",), "x", COUNT),
    (("prefix_store_blocks",), -1, COUNT),
    (("components", 0, "layers"), -1, COUNT),
    (("components", 1, "tokens_held"), -5, COUNT),
    (("tp",), 0, POSITIVE),
    (("sequences",), 0, POSITIVE),
    (("num_layers",), 0, POSITIVE),
    (("num_layers",), 1.5, POSITIVE),
    (("layer_pattern", "full"), 0, POSITIVE),
])
def test_each_count_out_of_its_range_is_refused_in_the_one_wording(tmp_path, gemma, keys, value, rule):
    bad = copy.deepcopy(gemma)
    obj = bad
    for k in keys[:-1]:
        obj = obj[k]
    obj[keys[-1]] = value
    name = "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else k) for i, k in enumerate(keys))
    r, f = _report(tmp_path, bad)
    assert_one_line_error(r, f"{f}: field '{name}': must be {rule}, got {json.dumps(value)}")


def test_a_footprint_below_one_block_draws_its_null_ratios(tmp_path):
    # T = 1 token, block 16: floor(1 / 16) = 0 prefix-store blocks, so every dtype's prefix store is 0 bytes and its
    # ratio to bf16 is 0 / 0, written null; the other modes hold a block (ratio numbers). pcs report refused its
    # own file ("must be a number, got null"); a null beside a bf16 mode of more than 0 bytes is still refused.
    fp = invoke_json("footprint", "--model", "llama-3.1-8b", "--tokens", "1")
    base = fp["by_dtype"][0]
    assert base["dtype"] == "bf16" and base["prefix_store_bytes"] == 0 and base["prefix_store_ratio_vs_bf16"] is None
    assert base["reserved_bytes"] > 0 and base["reserved_ratio_vs_bf16"] == 1.0
    r, _ = _report(tmp_path, fp)
    assert r.exit_code == 0, r.output
    bad = copy.deepcopy(fp)
    bad["by_dtype"][1]["reserved_ratio_vs_bf16"] = None
    r, f = _report(tmp_path, bad)
    assert_one_line_error(r, f"{f}: field 'by_dtype[1].reserved_ratio_vs_bf16': must be a number >= 0, got null")
