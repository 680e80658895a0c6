"""The expert fields of an HF config go through the bounded integer reader (Fields.int, 0..2^20) and top-k is at
most the expert count: a text, list, fraction, bool, negative or huge count is refused naming the field, never a
TypeError or an "unknown weights" verdict. Values worked by hand from pcs.model.params' documented shapes."""
from __future__ import annotations

import pytest

from pcs.errors import InputError
from pcs.model.hfconfig import build_spec
from pcs.model.params import estimate_params

#: h=8, 1 layer, 2 heads of 4 dims (2 KV heads), intermediate 16, vocab 10 (untied), 4 experts, top-2.
CFG = dict(model_type="mixtral", num_hidden_layers=1, hidden_size=8, num_attention_heads=2, num_key_value_heads=2,
           head_dim=4, intermediate_size=16, vocab_size=10, torch_dtype="bfloat16", num_local_experts=4,
           num_experts_per_tok=2)


def test_a_small_moe_by_hand():
    """embed+head 2*10*8 = 160; attention 8*2*4 + 2*8*2*4 + 2*4*8 = 256; one expert 3*8*16 = 384, router
    8*4 = 32: active 160 + 256 + 2*384 + 32 = 1,216, total 160 + 256 + 4*384 + 32 = 1,984."""
    assert estimate_params(CFG) == (1216, 1984)


@pytest.mark.parametrize("value", ["8", [8], 8.5, True, -8, 10**30, 2**20 + 1])
def test_a_malformed_expert_count_is_refused_naming_it(value):
    with pytest.raises(InputError) as exc:
        build_spec(dict(CFG, num_local_experts=value), name="x", source="t")
    assert exc.value.field == "num_local_experts"


def test_top_k_above_the_expert_count_is_refused():
    with pytest.raises(InputError) as exc:
        build_spec(dict(CFG, num_experts_per_tok=5), name="x", source="t")
    assert exc.value.field == "num_experts_per_tok"
    assert "routes each token to 5 experts but the model has 4" in str(exc.value)


def test_top_k_equal_to_the_count_and_2_to_the_20_experts_are_taken():
    """top-4 of 4: active = total = 160 + 256 + 4*384 + 32 = 1,984; 2^20 experts is the bound, inclusive."""
    assert estimate_params(dict(CFG, num_experts_per_tok=4)) == (1984, 1984)
    big = estimate_params(dict(CFG, num_local_experts=2**20))
    assert big[1] == 160 + 256 + 2**20 * 384 + 8 * 2**20


def test_a_missing_field_is_still_an_assumption_not_a_refusal():
    cfg = {k: v for k, v in CFG.items() if k != "intermediate_size"}
    spec = build_spec(cfg, name="x", source="t")
    assert any("intermediate_size missing" in a for a in spec.assumptions)


def test_get_model_and_footprint_load_a_config_path(tmp_path, monkeypatch):
    """get_model('./cfg.json') reads the file as the CLI's --model x.json does (it was an unknown preset). One
    layer, 2 KV heads of 4 dims in bf16: K and V are 2 x 2 x 4 x 2 B = 32 B per token."""
    import json
    from pathlib import Path

    import pcs

    (tmp_path / "cfg.json").write_text(json.dumps(CFG))
    monkeypatch.chdir(tmp_path)
    for name in ("./cfg.json", "cfg.json", Path("cfg.json"), str(tmp_path / "cfg.json")):
        spec = pcs.get_model(name)
        assert spec.num_layers == 1 and spec.kv_bytes_per_token() == 32
    assert pcs.footprint("cfg.json", 100).tokens == 100
    with pytest.raises(pcs.errors.PathError):
        pcs.get_model("missing.json")


@pytest.mark.parametrize("head_dim", [24, 17, 1, 8])
@pytest.mark.parametrize("dtype", ["nvfp4", "fp4", "int4"])
def test_a_per_group_4bit_layout_needs_head_dim_a_multiple_of_16(head_dim, dtype):
    """vLLM refuses NVFP4 for head_size % 16 != 0 (csrc/cache_kernels.cu); pcs refuses it too, naming head_dim."""
    spec = build_spec(dict(CFG, head_dim=head_dim), name="x", source="t")
    with pytest.raises(pcs_errors().UserError) as exc:
        spec.with_dtype(dtype)
    assert f"so head_dim must be a multiple of 16 (vLLM refuses NVFP4 otherwise), got {head_dim}" in str(exc.value)


def test_nvfp4_rows_by_hand_for_head_dim_32():
    """head_dim 32, nvfp4: 32 // 2 + 32 // 16 = 18 B per head row; K and V x 2 KV heads x 1 layer = 72 B/token
    (values 2 x 2 x 16 = 64 B, scales 2 x 2 x 2 = 8 B)."""
    spec = build_spec(dict(CFG, head_dim=32), name="x", source="t").with_dtype("nvfp4")
    assert spec.kv_bytes_per_token("serialized") == 72


def pcs_errors():
    import pcs.errors

    return pcs.errors


def test_top_k_zero_is_refused_not_read_as_top_1():
    """num_experts_per_tok 0 with 4 experts: refused naming the field (it was read as top-1: active 832)."""
    with pytest.raises(InputError) as exc:
        build_spec(dict(CFG, num_experts_per_tok=0), name="x", source="t")
    assert exc.value.field == "num_experts_per_tok" and "must be an integer >= 1, got 0" in str(exc.value)


def test_a_missing_top_k_is_not_guessed():
    """No num_experts_per_tok / experts_per_token with 4 experts: estimate_params refuses naming
    num_experts_per_tok; a config file gets no weights (0, 0) and an assumption naming the field, never top-1."""
    cfg = {k: v for k, v in CFG.items() if k != "num_experts_per_tok"}
    with pytest.raises(InputError) as exc:
        estimate_params(cfg)
    assert exc.value.field == "num_experts_per_tok"
    assert "the model has 4 routed experts (num_local_experts) but no top-k" in str(exc.value)
    spec = build_spec(cfg, name="x", source="t")
    assert any("num_experts_per_tok missing" in a for a in spec.assumptions), spec.assumptions


def test_zero_experts_with_a_top_k_is_refused():
    """num_local_experts 0 (read as dense) while num_experts_per_tok routes to 2: refused naming the count."""
    with pytest.raises(InputError) as exc:
        build_spec(dict(CFG, num_local_experts=0), name="x", source="t")
    assert exc.value.field == "num_local_experts"
    assert "is 0 but num_experts_per_tok routes each token to 2 experts" in str(exc.value)


def test_experts_per_token_is_read_when_num_experts_per_tok_is_absent():
    """gpt-oss spelling, top-3 of 4: active 160 + 256 + 3*384 + 32 = 1,600, total 1,984."""
    cfg = {k: v for k, v in CFG.items() if k != "num_experts_per_tok"}
    assert estimate_params(dict(cfg, experts_per_token=3)) == (1600, 1984)
