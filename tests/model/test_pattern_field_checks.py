"""Layer-pattern fields of a Hugging Face config are checked for type AND range, as the config classes define
them: a wrong type never crashes (TypeError) and a wrong value never silently builds a
different model. Each member of the kind -- every pattern field pcs/model/families.py reads -- has its case.

Sources of the rules: transformers ``layer_type_validation`` (layer_types entries are known strings),
Llama4TextConfig (``no_rope_layers``: list[int], 1 = RoPE layer, 0 = NoPE; empty = the interval default),
Qwen2Config (``use_sliding_window`` bool; layer i slides when i >= ``max_window_layers``, an int),
JambaConfig ``_check_supported_offset`` (``attn_layer_offset`` < ``attn_layer_period``).
The base configs are the committed excerpts in tests/model/configs/.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcs.errors import InputError
from pcs.model import footprint, load_hf_config
from tests.helpers import assert_one_line_error, invoke

CONFIGS = Path(__file__).parent / "configs"


def _config(tmp_path, family: str, text_level: bool = False, **fields) -> Path:
    """The committed excerpt of ``family`` with ``fields`` set (inside ``text_config`` with ``text_level``)."""
    cfg = json.loads((CONFIGS / f"{family}.json").read_text())
    (cfg["text_config"] if text_level else cfg).update(fields)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return p


def _refused(path: Path, field: str, *needles: str) -> str:
    with pytest.raises(InputError) as err:
        load_hf_config(path)
    e = err.value
    assert e.path == str(path) and e.field == field, str(e)
    for n in needles:
        assert n in e.problem, (n, e.problem)
    return e.problem


# --- layer_types: a list of num_hidden_layers known layer-type strings ---------------------------------

@pytest.mark.parametrize("bad", [["sliding_attention"], {"a": 1}, None, 1, True])
def test_layer_types_entry_of_another_type_is_refused(tmp_path, bad):
    # gpt_oss.json states 36 layer_types; entry 0 replaced: before the fix a list/dict entry raised
    # TypeError (unhashable) and an int/None one the "unknown layer type" error only by luck of hashing
    cfg = json.loads((CONFIGS / "gpt_oss.json").read_text())
    cfg["layer_types"][0] = bad
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    _refused(p, "layer_types", "unknown layer type")


# --- Llama 4: no_rope_layers, a list of num_hidden_layers 0/1 integers ---------------------------------

@pytest.mark.parametrize("bad", [
    5,                      # an int (before: TypeError, len() of an int)
    "1" * 48,               # a string of 48 characters: each truthy, so every layer chunked (before: accepted)
    ["0"] * 48,             # strings, all truthy (before: 48 chunked layers)
    [{}] * 48,              # dicts, all falsy (before: 48 full layers)
    [2] * 48,               # not a flag
    [True] * 48,            # JSON true is not the integer the config class documents
    [1] * 47,               # one entry short of num_hidden_layers 48
])
def test_llama4_no_rope_layers_must_be_48_flags(tmp_path, bad):
    _refused(_config(tmp_path, "llama4", text_level=True, no_rope_layers=bad), "no_rope_layers", "48 0/1 integers")


def test_llama4_explicit_no_rope_layers_are_read(tmp_path):
    # every layer uses RoPE -> 48 chunked layers; 10,000 tokens: the current chunk holds 10,000 - 8,192 = 1,808
    #   tokens of 8 KV heads x 128 x 2 x 2 B = 4,096 B: 48 x 4,096 x 1,808 = 355,467,264 B
    spec = load_hf_config(_config(tmp_path, "llama4", text_level=True, no_rope_layers=[1] * 48))
    assert spec.layer_types == ("chunked",) * 48
    assert footprint(spec, 10_000).totals["reference_bytes"] == 355_467_264
    # the committed excerpt's empty list means the interval default: NoPE (full) on every 4th layer
    assert load_hf_config(CONFIGS / "llama4.json").layer_types[:4] == ("chunked", "chunked", "chunked", "full")


# --- Qwen2/Qwen3: use_sliding_window (bool), max_window_layers (int >= 0) ------------------------------

@pytest.mark.parametrize("bad", ["4", -3, 2.5, True, [4]])
def test_qwen_max_window_layers_must_be_an_integer_ge_0(tmp_path, bad):
    # before: "4" -> TypeError; -3 -> all 28 layers sliding; 2.5 -> 3 full layers; all accepted silently
    p = _config(tmp_path, "qwen2", use_sliding_window=True, sliding_window=4096, max_window_layers=bad)
    _refused(p, "max_window_layers", "integer >= 0")


@pytest.mark.parametrize("first, full", [
    (0, 0),      # i >= 0 for every layer: all 28 slide
    (28, 28),    # i >= 28 for no layer of 28: all full
    (70, 28),    # above num_hidden_layers (the published Qwen2.5-14B/32B configs carry 70): all full, as in HF
])
def test_qwen_max_window_layers_boundaries(tmp_path, first, full):
    p = _config(tmp_path, "qwen2", use_sliding_window=True, sliding_window=4096, max_window_layers=first)
    kinds = load_hf_config(p).layer_types
    assert kinds.count("full") == full and kinds.count("sliding") == 28 - full


@pytest.mark.parametrize("family, extra", [("qwen2", {"sliding_window": 4096}), ("mistral", {})])
@pytest.mark.parametrize("bad", ["false", 0, 1, "true"])
def test_use_sliding_window_must_be_a_bool(tmp_path, family, extra, bad):
    # before: qwen2 "false" is truthy -> the window turned ON; mistral 0 is not `is False` -> window kept
    _refused(_config(tmp_path, family, use_sliding_window=bad, **extra), "use_sliding_window", "true or false")


# --- Jamba: 0 <= attn_layer_offset < attn_layer_period ---------------------------------------------------

@pytest.mark.parametrize("bad, says", [
    ("4", "integer >= 0"),      # before: "4" never equals i % 8 -> 0 attention layers, accepted
    (4.0, "integer >= 0"),
    (-1, "integer >= 0"),       # never equals i % 8 (>= 0)
    (True, "integer >= 0"),
    (8, "smaller than attn_layer_period (8)"),    # JambaConfig: offset must be < period
    (99, "smaller than attn_layer_period (8)"),
])
def test_jamba_attn_layer_offset_range(tmp_path, bad, says):
    _refused(_config(tmp_path, "jamba", attn_layer_offset=bad), "attn_layer_offset", says)


@pytest.mark.parametrize("bad", ["8", 0, 2.0])
def test_jamba_attn_layer_period_must_be_an_integer_ge_1(tmp_path, bad):
    _refused(_config(tmp_path, "jamba", attn_layer_period=bad), "attn_layer_period", "integer >= 1")


@pytest.mark.parametrize("offset, attention_at", [(0, (0, 8, 16, 24)), (7, (7, 15, 23, 31))])
def test_jamba_offset_boundaries_place_attention(tmp_path, offset, attention_at):
    # 32 layers, period 8: attention where i % 8 == offset -> 4 layers at offset, offset + 8, ...
    kinds = load_hf_config(_config(tmp_path, "jamba", attn_layer_offset=offset)).layer_types
    assert tuple(i for i, k in enumerate(kinds) if k == "full") == attention_at


# --- the CLI: exit 2, one line naming file and field, for every command that loads a model -------------

@pytest.mark.parametrize("family, text_level, fields, field", [
    ("gpt_oss", False, {"layer_types": [["sliding_attention"]] + ["full_attention"] * 35}, "layer_types"),
    ("llama4", True, {"no_rope_layers": 5}, "no_rope_layers"),
    ("qwen2", False, {"use_sliding_window": True, "max_window_layers": "4"}, "max_window_layers"),
    ("jamba", False, {"attn_layer_offset": 99}, "attn_layer_offset"),
])
def test_cli_names_file_and_field(tmp_path, family, text_level, fields, field):
    p = _config(tmp_path, family, text_level=text_level, **fields)
    assert_one_line_error(invoke("footprint", "--model-config", p, "--tokens", "8192"), str(p), f"field '{field}'")
