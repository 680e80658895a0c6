"""The command line that reruns a replay (``replay_command`` in ``pcs replay --format json``, the HTML page's
"replay command" row): every option given but the output ones, read back from click (pcs/cli/rerun.py).

The command printed before it was rebuilt from the JSON and left out every option the JSON does not record: a
hybrid run (``--hybrid-kv-cache-manager sglang``, ``--mamba-cache-mode align``, the pools' ratios, the
residency step), ``--compute``, the scheduler's options, ``--hardware-file``, ``--admit``, ``--gap-oracle`` ...
gave other numbers when run again. On the sample: qwen3-next-80b-a3b, sglang, align, mamba ratio 0.7,
best-effort restores, tiers 40 GB / 200 GB: hit ratio 0.1018 from the run, 0.0678 from its printed command;
gemma-3-27b, sglang, swa ratio 0.5, sequential: 0.30274 and 0.30253.
"""
from __future__ import annotations

import json
import shlex

import pytest

from helpers import ROOT, invoke

SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
#: meta-llama/Llama-3.1-8B config.json, the fields sizing reads (tests/model/test_model_hfconfig.py)
LLAMA_31_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
               "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
               "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
               "torch_dtype": "bfloat16", "tie_word_embeddings": False}
#: google/gemma-3-27b-it config.json, text_config trimmed to what sizing reads: 5 sliding layers to 1 full
GEMMA3 = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "torch_dtype": "bfloat16",
          "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
                          "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62,
                          "num_key_value_heads": 16, "sliding_window": 1024, "sliding_window_pattern": 6,
                          "vocab_size": 262208}}


def _inputs(folder):
    """The first 200 rows of the sample, a model config and a hardware file, in ``folder`` (relative names)."""
    folder.mkdir()
    (folder / "t.jsonl").write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:200]))
    (folder / "config.json").write_text(json.dumps(LLAMA_31_8B))
    (folder / "gemma.json").write_text(json.dumps(GEMMA3))
    (folder / "hw.toml").write_text("[gpu.h100-sxm]\nbf16_flops = 5e14\n")


def test_the_command_names_each_option_given_and_no_output_option(tmp_path, monkeypatch):
    """By the rule: options in ``--help`` order, a duration in seconds with its unit (5 ms = 0.005s), an off switch by
    its name, the trace absolute; ``-q``, ``--format`` and ``--requests-out`` print nothing that is a number."""
    _inputs(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    r = invoke("replay", "t.jsonl", "-q", "--format", "json", "--restore-policy", "best-effort",
               "--restore-timeout", "5ms", "--no-restore-fallback", "--max-num-seqs", "64", "--tier",
               "gpu=40blocks", "--timing", "modeled", "--requests-out", "r.csv")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["replay_command"] == (
        f"pcs replay {tmp_path / 'a' / 't.jsonl'} --tier gpu=40blocks --timing modeled --max-num-seqs 64 "
        "--restore-policy best-effort --restore-timeout 0.005s --no-restore-fallback")


RUNS = {
    "hybrid-sglang-align": ["--model", "qwen3-next-80b-a3b", "--hybrid-kv-cache-manager", "sglang",
                            "--mamba-cache-mode", "align", "--mamba-full-memory-ratio", "0.7", "--tier", "gpu=40GB",
                            "--tier", "cpu=200GB", "--residency-step", "30s"],
    "hybrid-vllm-window": ["--model", "gemma-3-27b", "--tier", "gpu=10GB", "--compute", "infinite",
                           "--timing", "modeled"],
    "hybrid-config-file": ["--model-config", "gemma.json", "--hybrid-kv-cache-manager", "sglang",
                           "--swa-full-tokens-ratio", "0.5", "--tier", "gpu=20GB", "--max-preemptions", "2",
                           "--no-cache-decode-blocks"],
    "hybrid-disabled": ["--model", "gemma-3-27b", "--hybrid-kv-cache-manager", "disabled", "--timing",
                        "sequential", "--tier", "gpu=30blocks"],
    "plain-files": ["--model", "config.json", "--hardware-file", "hw.toml", "--tier", "gpu=40blocks", "--tier",
                    "cpu=150blocks", "--admit", "cpu=reuse:2", "--gap-oracle", "--policy", "slru",
                    "--protected-share", "0.6", "--max-num-batched-tokens", "4096", "--ttft-slo", "2s",
                    "--engine", "reference", "--on-error", "skip"],
    "fleet": ["--instances", "2", "--router", "cache-aware", "--router-stale-s", "500ms", "--tier", "gpu=40blocks",
              "--tier", "cpu=100blocks", "--ttft-slo", "2s"],
}


@pytest.mark.parametrize("name", RUNS)
def test_the_printed_command_reproduces_the_json(tmp_path, monkeypatch, name):
    """Run in one folder with relative paths, rerun the printed command from another: the same JSON byte for
    byte once the paths typed relative read absolute, the same command printed again."""
    _inputs(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    first = invoke("replay", "t.jsonl", *RUNS[name], "-q", "--format", "json")
    assert first.exit_code == 0, first.output
    cmd = json.loads(first.stdout)["replay_command"]
    monkeypatch.chdir(tmp_path)
    words = shlex.split(cmd)
    assert words[:2] == ["pcs", "replay"]
    second = invoke(*words[1:], "-q", "--format", "json")
    assert second.exit_code == 0, second.output
    expected = first.stdout
    for rel in ("t.jsonl", "config.json", "gemma.json"):   # a fleet's instances: "t.jsonl [instance 0]"
        expected = expected.replace(f'"{rel}', json.dumps(str(tmp_path / "a" / rel))[:-1])
    assert second.stdout == expected


def test_the_page_prints_the_recorded_command_else_labels_a_rebuilt_one():
    from pcs.report.htmlpage import inputs_rows

    base = dict(trace="t.jsonl", model="gemma-3-27b", kv_dtype="bf16", gpu="h100-sxm", tp=8, block_size=16,
                timing="modeled", compute="infinite", policy="lru", write_policy="back",
                cache_partial_blocks=False, recompute_last_token=True, hybrid={"manager": "sglang"},
                hit_ratio=0.0, gap={}, tiers=[dict(name="gpu", policy="lru", capacity_blocks=5, capacity_bytes=5000,
                                                   blocks_unit="page", link=None)])
    recorded = dict(base, replay_command="pcs replay t.jsonl --model gemma-3-27b --hybrid-kv-cache-manager sglang")
    rows = dict(map(tuple, inputs_rows([recorded], None, None)))
    assert rows["replay command"] == recorded["replay_command"]
    rows = dict(map(tuple, inputs_rows([base], None, None)))
    rebuilt = rows["replay command (rebuilt from what the JSON records)"]
    assert rebuilt.endswith("--timing modeled --write-policy back --compute infinite "
                            "--hybrid-kv-cache-manager sglang")
