"""Config shapes and dtypes: head_dim defaults and refusals, fp8_ds_mla off its shape, state/torch dtypes.

Rules: docs/models.md "head_dim"; pcs/model/configfields.py Fields.head_dim.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.errors import InputError
from pcs.model import load_hf_config

CONFIGS = Path(__file__).parent / "configs"


def _write(tmp_path: Path, family: str, **change) -> Path:
    cfg = json.loads((CONFIGS / f"{family}.json").read_text())
    for key, value in change.items():
        if value is ...:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    p = tmp_path / f"{family}.json"
    p.write_text(json.dumps(cfg))
    return p


def _per_token(path: Path) -> tuple[int, list]:
    r = CliRunner().invoke(cli, ["footprint", "--model", str(path), "--tokens", "1", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    return d["reference_bytes_per_token"], d["assumptions"]


# Bytes per token with the family default, by hand (bf16 = 2 B, K and V = x 2):
#  qwen3 (Qwen3Config head_dim=128): 64 full layers x 8 KV heads x 128 x 2 x 2 = 262,144
#    (hidden // heads would give 5120 // 64 = 80: 163,840)
#  qwen3_next (Qwen3NextConfig head_dim=256): 48 / 4 = 12 full layers x 2 KV heads x 256 x 2 x 2 = 24,576
#    (2048 // 16 = 128 would give 12,288)
#  gpt_oss (GptOssConfig head_dim=64): 36 layers (18 full, 18 sliding, both per token) x 8 x 64 x 2 x 2 = 73,728
#    (2880 // 64 = 45 would give 51,840)
@pytest.mark.parametrize("family, expect", [("qwen3", 262_144), ("qwen3_next", 24_576), ("gpt_oss", 73_728)])
def test_omitted_head_dim_takes_the_transformers_family_default(tmp_path, family, expect):
    assert _per_token(_write(tmp_path, family, head_dim=...)) == (expect, [])


def test_null_head_dim_without_a_documented_rule_is_an_assumption(tmp_path):
    # gpt_oss "head_dim": null: the config says "none", pcs falls back to 2880 // 64 = 45 and says so;
    # 36 x 8 x 45 x 2 x 2 = 51,840 B/token
    per_token, assumed = _per_token(_write(tmp_path, "gpt_oss", head_dim=None))
    assert per_token == 51_840
    assert assumed == ["head_dim missing: assumed hidden_size / num_attention_heads = 45"]


def test_llama_rule_derives_head_dim_without_a_note(tmp_path):
    # LlamaConfig: head_dim = hidden_size // num_attention_heads = 4096 // 32 = 128 (a documented rule, no note):
    # 32 x 8 x 128 x 2 x 2 = 131,072 B/token
    assert _per_token(CONFIGS / "llama.json") == (131_072, [])


def test_head_dim_zero_is_refused_with_file_and_field(tmp_path):
    p = _write(tmp_path, "gpt_oss", head_dim=0)
    with pytest.raises(InputError, match=r"gpt_oss\.json:1: field 'head_dim': must be an integer >= 1, got 0"):
        load_hf_config(p)


def test_derived_head_dim_zero_is_refused_naming_hidden_size(tmp_path):
    # 16 // 32 heads = 0: no KV bytes at all; refused (before: ZeroDivisionError / 0-byte blocks)
    p = _write(tmp_path, "llama", hidden_size=16)
    with pytest.raises(InputError, match=r"llama\.json:1: field 'hidden_size': 16 // 32 attention heads gives head_dim 0"):
        load_hf_config(p)
    for cmd in (["footprint", "--model", str(p), "--tokens", "100"], ["deploy", "--model", str(p)]):
        r = CliRunner().invoke(cli, cmd)
        assert r.exit_code == 2 and "field 'hidden_size'" in r.output and "Traceback" not in r.output


def test_fp8_ds_mla_is_refused_off_its_mla_shape(tmp_path):
    # fp8_ds_mla = 512 fp8 latent + 4 fp32 scales + 64 bf16 rope = 512 + 16 + 128 = 656 B per token per layer:
    # DeepSeek-V3 (kv_lora_rank 512, rope 64) takes it, 61 layers x 656 = 40,016 B/token serialized
    r = CliRunner().invoke(cli, ["footprint", "--model", str(CONFIGS / "deepseek_v3.json"), "--dtype", "fp8_ds_mla",
                                 "--tokens", "1", "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["serialized_bytes_per_token"] == 61 * 656
    for cfg, says in ((CONFIGS / "llama.json", "is FlashMLA's MLA layout"),
                      (_write(tmp_path, "deepseek_v3", kv_lora_rank=513), "this model's are 513 and 64")):
        r = CliRunner().invoke(cli, ["footprint", "--model", str(cfg), "--dtype", "fp8_ds_mla", "--tokens", "1"])
        assert r.exit_code == 2 and says in r.output, r.output


def test_state_and_torch_dtypes_name_file_and_field(tmp_path):
    with pytest.raises(InputError, match=r"qwen3_next\.json:1: field 'mamba_ssm_dtype': unknown dtype 'banana'"):
        load_hf_config(_write(tmp_path, "qwen3_next", mamba_ssm_dtype="banana"))
    with pytest.raises(InputError, match=r"llama\.json:1: field 'torch_dtype': 'int4' is not a torch dtype"):
        load_hf_config(_write(tmp_path, "llama", torch_dtype="int4"))
    # torch.float8_e4m3fn is fp8: llama 32 x 8 x 128 x 2 (K,V) x 1 B = 65,536 B/token of fp8 KV
    assert _per_token(_write(tmp_path, "llama", torch_dtype="float8_e4m3fn"))[0] == 65_536
