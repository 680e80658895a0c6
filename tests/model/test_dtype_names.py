"""One concept, one name: a KV layout is shown by its one name (docs/models.md "KV layouts") in replay, footprint
and curve, text and JSON (under ``layout``; ``dtype`` is the value type in every command), whatever spelling
--dtype was given; the bytes are the spelling's layout's bytes."""
from __future__ import annotations

import json

import pytest

import pcs
from pcs.trace import DEFAULT_TRACE
from tests.helpers import invoke

TOKENS = str(DEFAULT_TRACE.parent / "sample_tokens.jsonl")

# spelling -> the layout's one name (docs/models.md table: name, then the short name in parentheses; aliases)
NAMES = {"fp4": "nvfp4", "nvfp4": "nvfp4", "NVFP4": "nvfp4", "int8": "int8_per_token_head",
         "int8_per_token_head": "int8_per_token_head", "fp8_per_token_head": "fp8_per_token_head",
         "fp8": "fp8", "fp8_e4m3fn": "fp8_e4m3", "float8": "fp8", "bfloat16": "bf16", "half": "fp16",
         "float": "fp32", "int4": "int4"}


@pytest.mark.parametrize("given,shown", sorted(NAMES.items()))
def test_footprint_names_the_layout(given, shown):
    res = pcs.footprint("llama-3.1-8b", 1_000, dtype=given)
    d = res.to_dict()
    assert d["layout"]["name"] == shown and [c["layout"] for c in d["components"]] == [shown]
    assert d["dtype"] == res.dtype == d["layout"]["value_dtype"] == d["components"][0]["dtype"]   # the value type


def test_fp4_and_nvfp4_are_one_layout_with_one_set_of_bytes():
    # Llama-3.1-8B: 32 layers x 8 KV heads x 2 (K, V) x head 128. nvfp4 row = 128/2 values + 128/16 fp8 scales
    # = 72 B -> 32 x 8 x 2 x 72 = 36,864 B/token serialized; values only 32 x 8 x 2 x 64 = 32,768 B/token
    for given in ("fp4", "nvfp4"):
        res = pcs.footprint("llama-3.1-8b", 1_000, dtype=given)
        assert res.per_token == {"reference": 32_768, "serialized": 36_864}
        assert [c["layout"] for c in res.components] == ["nvfp4"]


def test_footprint_text_shows_the_one_name():
    out = invoke("footprint", "--model", "llama-3.1-8b", "--tokens", "1000", "--dtype", "fp4").stdout
    lines = out.splitlines()
    assert lines[0] == "KV footprint: llama-3.1-8b, nvfp4, 1,000 tokens x 1 sequence, block 16, tp 1 (bytes per rank)"
    assert lines[3].split()[:3] == ["full_attention", "32", "nvfp4"]
    assert lines[4].split()[:3] == ["total", "32", "nvfp4"]
    assert " fp4," not in out and "  fp4 " not in out


@pytest.mark.parametrize("given,shown", [("fp4", "nvfp4"), ("int8", "int8_per_token_head"),
                                         ("fp8_per_token_head", "fp8_per_token_head"), ("half", "fp16")])
def test_replay_names_the_layout(given, shown):
    s = pcs.replay(TOKENS, model="llama-3.1-8b", dtype=given, tiers=["gpu=20blocks"], timing="sequential").summary
    assert s.kv_dtype == shown and s.to_dict()["kv_dtype"] == shown
    r = invoke("replay", TOKENS, "--model", "llama-3.1-8b", "--dtype", given, "--tier", "gpu=20blocks",
               "--timing", "sequential")
    assert r.exit_code == 0, r.output
    assert f"llama-3.1-8b, KV {shown} on " in r.stdout.splitlines()[0]


def test_curve_json_names_the_layout():
    r = invoke("curve", TOKENS, "--model", "llama-3.1-8b", "--dtype", "fp4", "--points", "2", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["dtype"], d["layout"]) == ("fp4", "nvfp4")
