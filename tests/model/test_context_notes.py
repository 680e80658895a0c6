"""The model's context (its config.json ``max_position_embeddings``) feeds a note, never an error: ``pcs footprint``
past it, ``pcs deploy`` whose pool holds a longer request than the model takes (docs/models.md)."""
from __future__ import annotations


import pytest

from helpers import invoke, invoke_json
from pcs.model import get_model
from pcs.errors import InputError
from pcs.model.hfconfig import build_spec

# the values in each model's config.json on Hugging Face (the presets' sources)
CONTEXT = {"llama-3.1-8b": 131072, "llama-3.1-70b": 131072, "llama-2-70b": 4096, "qwen3-32b": 40960,
           "deepseek-v3": 163840, "deepseek-v3.2": 163840, "gpt-oss-120b": 131072, "gemma-3-27b": 131072,
           "qwen3-next-80b-a3b": 262144}


@pytest.mark.parametrize("name", sorted(CONTEXT))
def test_each_preset_knows_its_context(name):
    assert get_model(name).max_context_tokens == CONTEXT[name]
    assert get_model(name).with_tp(2).with_dtype("fp8").max_context_tokens == CONTEXT[name]


def test_a_config_without_it_is_unknown_and_junk_is_refused_naming_the_field():
    """Absent or null: unknown (None). Given: an integer in 1..2^40 like every config integer (2^40 =
    1,099,511,627,776); -5, "4096", 1e30, 10**40 and true are refused naming max_position_embeddings."""
    cfg = dict(model_type="llama", num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
               hidden_size=256, intermediate_size=512, vocab_size=1000, torch_dtype="bfloat16")
    assert build_spec(cfg, name="x", source="t").max_context_tokens is None
    assert build_spec(dict(cfg, max_position_embeddings=None), name="x", source="t").max_context_tokens is None
    assert build_spec(dict(cfg, max_position_embeddings=2048), name="x", source="t").max_context_tokens == 2048
    assert build_spec(dict(cfg, max_position_embeddings=10_485_760), name="x",   # Llama 4 Scout's, above 2^20
                      source="t").max_context_tokens == 10_485_760
    assert build_spec(dict(cfg, max_position_embeddings=2**40), name="x", source="t").max_context_tokens == 2**40
    for junk in ("4k", "4096", -5, 0, 1e30, 10**40, 2**40 + 1, True):
        with pytest.raises(InputError) as exc:
            build_spec(dict(cfg, max_position_embeddings=junk), name="x", source="t")
        assert exc.value.field == "max_position_embeddings"


@pytest.mark.parametrize("tokens,noted", [(131072, False), (131073, True)])   # llama-3.1-8b's context: 131,072
def test_footprint_notes_tokens_past_the_context(tokens, noted):
    r = invoke("footprint", "--model", "llama-3.1-8b", "--tokens", str(tokens))
    assert r.exit_code == 0, r.output
    assert ("is past the model's context, 131,072 tokens" in r.output) is noted
    assert invoke_json("footprint", "--model", "llama-3.1-8b", "--tokens", str(tokens))["max_context_tokens"] == 131072


def test_deploy_notes_a_longest_request_past_the_context():
    """llama-2-70b (context 4,096) on 8 H100s: its pool holds requests far longer than 4,096 tokens; the default
    --request-tokens fits the context or not, the note names which."""
    out = invoke_json("deploy", "--model", "llama-2-70b", "--tp", "8")
    assert out["max_context_tokens"] == 4096 and out["longest_request_tokens"] > 4096
    r = invoke("deploy", "--model", "llama-2-70b", "--tp", "8")
    assert r.exit_code == 0 and "the longest request the pool holds: " in r.output
    assert f"{out['longest_request_tokens']:,} tokens is past the model's context, 4,096 tokens" in r.output
    assert ("--request-tokens: " in r.output) is (out["request_tokens"] > 4096)
