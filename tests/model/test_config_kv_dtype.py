"""A config's non-object text_config is refused; a KV cache dtype asked for in a config gets a note.

tests/model/configs/llama.json (Llama-3.1-8B shapes: 32 layers, 8 KV heads, head_dim 4096 / 32 = 128, bfloat16):
bf16 KV is 32 x 2 (K, V) x 8 x 128 x 2 B = 131,072 B per token. vLLM does not take the KV dtype from the config
(its kv_cache_dtype setting, default auto = the model dtype), so neither does pcs: with kv_cache_dtype fp8 or an
fp8 kv_cache_scheme in the config the KV stays 131,072 B per token, and a note says the field was not read.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcs.errors import InputError
from pcs.model.hfconfig import load_hf_config

LLAMA = Path(__file__).resolve().parent / "configs" / "llama.json"


def _write(tmp_path, **extra) -> Path:
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**json.loads(LLAMA.read_text()), **extra}))
    return p


@pytest.mark.parametrize("bad", ["oops", 5, ["a"], True])
def test_a_text_config_that_is_not_an_object_is_refused(tmp_path, bad):
    p = _write(tmp_path, text_config=bad)
    with pytest.raises(InputError) as exc:
        load_hf_config(p)
    assert "field 'text_config': must be a JSON object" in str(exc.value) and str(p) in str(exc.value)


@pytest.mark.parametrize("extra, named", [
    ({"kv_cache_dtype": "fp8"}, "kv_cache_dtype 'fp8'"),
    ({"quantization_config": {"kv_cache_scheme": {"num_bits": 8, "type": "float"}}},
     "quantization_config.kv_cache_scheme {'num_bits': 8, 'type': 'float'}"),
])
def test_a_kv_dtype_in_the_config_is_noted_not_applied(tmp_path, extra, named):
    spec = load_hf_config(_write(tmp_path, **extra))
    assert spec.kv_dtype == "bf16"
    assert sum(c.payload_bytes_per_token() for c in spec.components) == 131_072
    (note,) = [a for a in spec.assumptions if "asks for a KV cache dtype" in a]
    assert named in note and "does not read it there" in note


def test_no_note_without_a_kv_dtype_field(tmp_path):
    spec = load_hf_config(_write(tmp_path))
    assert not [a for a in spec.assumptions if "KV cache dtype" in a]
