"""One concept, one option name across commands; older spellings still run but are hidden from --help."""
from __future__ import annotations

import json
from pathlib import Path

from helpers import SMALL_TRACE, invoke

ROOT = Path(__file__).resolve().parents[2]
CFG = ROOT / "tests" / "model" / "configs" / "qwen2.json"


def _json(*args):
    r = invoke(*args, "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_model_config_works_wherever_a_model_is_taken(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(CFG.read_text())
    base = ["--tier", "gpu=50blocks", "--tp", "1"]
    a = _json("replay", SMALL_TRACE, "--model", cfg, *base)
    b = _json("replay", SMALL_TRACE, "--model-config", cfg, *base)
    assert a["tiers"] == b["tiers"] and a["model"] == b["model"]
    c = _json("compare", SMALL_TRACE, "--model-config", cfg, *base)
    assert c["variants"][0]["tiers"] == _json("compare", SMALL_TRACE, "--model", cfg, *base)["variants"][0]["tiers"]
    d = _json("curve", SMALL_TRACE, "--model-config", cfg, "--capacities", "2blocks")
    assert d["block_bytes"] == _json("curve", SMALL_TRACE, "--model", cfg, "--capacities", "2blocks")["block_bytes"]
    for cmd in (["footprint", "--tokens", "16"], ["deploy"], ["envelope", "--restore-tokens", "16",
                                                              "--full-prefill", "1ms", "--bandwidth", "1GB/s"]):
        assert invoke(*cmd, "--model-config", cfg, "--tp", "1", "-q").exit_code == 0, cmd
    # replay --help shows one name; the alias is named in the text
    help_text = invoke("replay", "--help").stdout
    assert "--model TEXT" in help_text and "--model, --model-config" not in help_text


def test_envelope_tokens_mfu_and_tp_default():
    args = ["envelope", "--restore-tokens", "1024", "--model", "llama-3.1-8b", "--bandwidth", "10GB/s"]
    new = _json(*args, "--tokens", "2048", "--mfu", "0.4")
    old = _json(*args, "--prompt-tokens", "2048", "--utilisation", "0.4")     # hidden older spellings
    assert new == old and new["prompt_tokens"] == 2048
    assert _json(*args, "--tokens", "2048", "--mfu", "0.4", "--tp", "8") == new     # default TP 8, as replay
    text = invoke("envelope", "--help").stdout
    assert "--tokens" in text and "--mfu" in text and "--prompt-tokens INTEGER" not in text
    assert "--utilisation FLOAT" not in text
    tp_help = " ".join(text.split("\n  --tp ", 1)[1].split("--mfu", 1)[0].split())
    assert "[default: 8;" in tp_help
    # replay's and deploy's memory share keeps vLLM's name
    assert "--gpu-memory-utilization" in invoke("replay", "--help").stdout
    assert "--gpu-memory-utilization" in invoke("deploy", "--help").stdout
