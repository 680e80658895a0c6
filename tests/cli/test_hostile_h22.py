"""A hostile tester's findings on main 1e166e3, fixed: each kind's right values, worked out by hand."""
from __future__ import annotations

import os

import pytest

from helpers import assert_one_line_error, invoke
from test_hostile_files import CHAT, T, TOKENIZER, work  # noqa: F401 - work: the fixture (cwd = tmp_path)


# -- F1: a settings input that is a FIFO blocked open() until a writer came: refused as not a regular file --------

FIFO_INPUTS = [
    ["footprint", "--model-config", "fifo.json", "--tokens", "10"],
    ["footprint", "--model", "fifo.json", "--tokens", "10"],
    ["deploy", "--model-config", "fifo.json"],
    ["envelope", "--model-config", "fifo.json", "--tokens", "100", "--restore-tokens", "50", "--bandwidth", "50GB/s"],
    ["envelope", "--model", "llama-3.1-8b", "--tokens", "100", "--restore-tokens", "50", "--bandwidth", "50GB/s",
     "--prefill-csv", "fifo.json"],
    ["replay", str(T), "-q", "--hardware-file", "fifo.json"],
    ["budget", "--workloads", "fifo.json"],
    ["sweep", "run", "fifo.json", "--out", "o"],
    ["report", "fifo.json", "-o", "p.html"],
    ["trace", "from-chat", str(CHAT), "o.jsonl", "--tokenizer", "fifo.json"],
]


@pytest.mark.parametrize("args", FIFO_INPUTS, ids=lambda a: " ".join(a[:3]))
def test_a_fifo_settings_input_is_refused_not_waited_on(work, args):
    os.mkfifo("fifo.json")
    r = invoke(*args)
    if args[0] == "trace":   # the tokenizers extra may be missing: then that error comes first
        pytest.importorskip("tokenizers")
    assert_one_line_error(r, "fifo.json: not a regular file")


# -- F5: a reserve given names itself, not vLLM's profiled default ---------------------------------------------

def test_a_given_kv_reserve_is_the_reserve_source(work):
    """2.9GB = 2,900,000,000 B: "2.90 GB per GPU (--kv-reserve)" in the note and the JSON; without it, the
    5 GB default names vLLM's profiled memory."""
    import json

    r = invoke("deploy", "--model", "llama-3.1-8b", "--kv-reserve", "2.9GB", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["reserve_bytes_per_gpu"], d["reserve_source"]) == (2_900_000_000, "2.90 GB per GPU (--kv-reserve)")
    r = invoke("deploy", "--model", "llama-3.1-8b", "--kv-reserve", "2.9GB")
    assert "note: reserve: 2.90 GB per GPU (--kv-reserve)" in r.output and "profiled" not in r.output
    d = json.loads(invoke("deploy", "--model", "llama-3.1-8b", "--format", "json").stdout)
    assert d["reserve_source"].startswith("5 GB per GPU: vLLM's profiled")


# -- F10: the manager on a model without hybrid groups is the same run, with a note -----------------------------

@pytest.mark.parametrize("manager", ["vllm", "sglang", "disabled"])
def test_the_hybrid_manager_on_a_full_attention_model_is_a_noop_with_a_note(work, manager):
    """llama-2-70b has one full-attention group: every manager replays it alike, so a sweep may cross models with
    this axis. The JSON equals the run without the option but for one note saying so (vllm, sglang; disabled
    asks for what the model already is: no note, the very same JSON)."""
    import json

    args = ("replay", T, "--model", "llama-2-70b", "--timing", "sequential", "--format", "json", "-q")
    base = json.loads(invoke(*args).stdout)
    r = invoke(*args, "--hybrid-kv-cache-manager", manager)
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    # the command that reruns it names the option given (pcs/cli/rerun.py); the rest is the run without it
    assert got.pop("replay_command") == base.pop("replay_command") + f" --hybrid-kv-cache-manager {manager}"
    note = (f"hybrid KV cache manager '{manager}': no effect, llama-2-70b has no hybrid cache groups "
            "(one full-attention group, replayed alike by every manager)")
    if manager == "disabled":
        assert got == base
    else:
        notes = got.pop("notes")
        assert note in notes and [n for n in notes if n != note] == base.pop("notes")
        assert got == base
    # the manager's own options stay refused where they cannot apply
    r = invoke(*args, "--hybrid-kv-cache-manager", manager, "--mamba-cache-mode", "align")
    assert_one_line_error(r, "--mamba-cache-mode applies to hybrid models")


# -- F3: a hybrid restore that stops at a state checkpoint names the checkpoint rule --------------------------------

def test_the_envelope_names_the_state_checkpoint_that_ends_the_hit(work):
    """qwen3-next-80b-a3b at TP 8 checkpoints its state every 144 tokens (its hybrid block size at TP 8,
    docs/hybrid.md), B = 16. --restore-tokens 96 of a 200-token prompt: 96 is 6 whole blocks, but no checkpoint
    is at or below 96, so 0 tokens are restored and 96 computed -- the checkpoint's doing, not whole blocks'.
    The default restore of the 200-token prompt: the last-token cap gives ((200 - 1) // 16) x 16 = 192, the last
    checkpoint at or below it is 144: 144 restored, 56 computed. At TP 1 the hit of 200 tokens is 0: a reason."""
    base = ("envelope", "--model", "qwen3-next-80b-a3b", "--tokens", "200", "--bandwidth", "50GB/s")
    r = invoke(*base, "--restore-tokens", "96")
    assert r.exit_code == 0, r.output
    assert ("= 0 of the 96 tokens (a hit ends at a state checkpoint, every 144 tokens, the other 96 are computed)"
            in r.output) and "whole blocks" not in r.output
    r = invoke(*base)
    assert "= 144 tokens, the best-case hit of the 200-token prompt at the state checkpoints, every 144 tokens " \
           "(the other 56 are computed)" in r.output
    assert ("= ((200 - 1) // 16) x 16 = 192 tokens, and the state checkpoint every 144 tokens ends the hit at 144 "
            "tokens restored: the other 56 are computed") in r.output
    r = invoke(*base, "--tp", "1")
    assert r.exit_code == 0, r.output
    assert "= 0 tokens, the best-case hit of the 200-token prompt at the state checkpoints, every" in r.output
    assert "ends the hit at 0 tokens restored: the other 200 are computed" in r.output
    # a full-attention model's rounding is still whole blocks': 100 tokens -> 6 blocks = 96
    r = invoke("envelope", "--model", "llama-3.1-8b", "--tokens", "200", "--restore-tokens", "100",
               "--bandwidth", "50GB/s", "--block-size", "16")
    assert "= 96 of the 100 tokens (whole blocks: only full blocks are cached, the other 4 are computed)" in r.output


# -- F4: envelope notes a prompt past the model's context, as footprint and deploy do -----------------------------

def test_the_envelope_notes_a_prompt_past_the_models_context(work):
    """llama-2-70b: max_position_embeddings 4,096. --tokens 5000 is past it (a note, text and JSON); 4096 is not."""
    import json

    note = ("5,000 tokens is past the model's context, 4,096 tokens (config.json max_position_embeddings): "
            "no one sequence that long runs on it")
    args = ("envelope", "--model", "llama-2-70b", "--bandwidth", "50GB/s", "--tokens")
    r = invoke(*args, "5000")
    assert r.exit_code == 0 and f"note: {note}" in r.output
    assert note in json.loads(invoke(*args, "5000", "--format", "json").stdout)["notes"]
    assert "past the model's context" not in invoke(*args, "4096").output


# -- F7: Mamba2's n_groups must divide mamba_num_heads --------------------------------------------------------------

def test_mamba2_n_groups_not_dividing_the_heads_is_refused(work):
    """nemotron_h.json has mamba_num_heads 128, n_groups 8 (128 / 8 = 16 heads a group: accepted). n_groups 7
    does not divide 128: refused at --tp 1 too, naming the file and the field."""
    import json

    from helpers import ROOT

    cfg = json.loads((ROOT / "tests" / "model" / "configs" / "nemotron_h.json").read_text())
    assert (cfg["mamba_num_heads"], cfg["n_groups"]) == (128, 8)
    for groups, ok in ((8, True), (16, True), (7, False), (3, False)):
        with open("c.json", "w") as f:
            json.dump(dict(cfg, n_groups=groups), f)
        r = invoke("footprint", "--model-config", "c.json", "--tokens", "1000", "--tp", "1")
        if ok:
            assert r.exit_code == 0, r.output
        else:
            assert_one_line_error(r, "c.json:1: field 'n_groups':", f"{groups} does not divide mamba_num_heads 128")


# -- F8: an integer past Python's 4,300-digit limit: FILE:LINE: field: number too long -----------------------------

def test_a_number_too_long_names_file_line_and_field(work):
    """A 5,000-digit integer in a model config (line 3), a hardware JSON (line 2), a JSONL trace (line 2): each
    says where it is and how long, not Python's sys.set_int_max_str_digits advice."""
    big = "7" * 5000
    with open("cfg.json", "w") as f:
        f.write('{\n "model_type": "llama",\n "num_hidden_layers": ' + big + "\n}\n")
    with open("hw.json", "w") as f:
        f.write('{"gpus":\n {"x": {"hbm_bytes": ' + big + "}}}\n")
    with open("t.jsonl", "w") as f:
        f.write('{"timestamp": 0, "hash_ids": [1, 2], "input_length": 1024, "output_length": 3}\n'
                '{"timestamp": 1, "hash_ids": [1, 2], "input_length": ' + big + ', "output_length": 3}\n')
    for args, where in ((("footprint", "--model-config", "cfg.json", "--tokens", "10"), "cfg.json:3: field "
                         "'num_hidden_layers'"),
                        (("replay", T, "-q", "--hardware-file", "hw.json"), "hw.json:2: field 'gpus.x.hbm_bytes'"),
                        (("replay", "t.jsonl", "-q"), "t.jsonl:2: field 'input_length'")):
        line = assert_one_line_error(invoke(*args), f"{where}: number too long (5,000 digits)")
        assert "set_int_max_str_digits" not in line


def test_json_loads_locates_the_long_number():
    """jsondepth.loads: line 2, key "b", 4,301 digits (one past the limit); inside an array no key."""
    from pcs import jsondepth

    with pytest.raises(jsondepth.NumberTooLongError) as e:
        jsondepth.loads('{"a": 1,\n "b": -' + "1" * 4301 + "}")
    assert (e.value.lineno, e.value.field, e.value.digits) == (2, "b", 4301)
    with pytest.raises(jsondepth.NumberTooLongError) as e:
        jsondepth.loads('[1, ' + "2" * 4400 + "]")
    assert (e.value.lineno, e.value.field, e.value.digits) == (1, None, 4400)
    assert jsondepth.loads('{"b": ' + "1" * 4300 + "}")["b"] == int("1" * 4300)


# -- F9: the fleet ceiling of prompt blocks is the trace's; decode blocks make it follow the routing (documented) --

def test_the_prompt_only_fleet_ceiling_is_the_traces_whatever_the_fleet(work):
    """With prompt blocks only (--no-cache-decode-blocks) the fleet ceiling is one walk of the whole trace: the
    same for 1, 2 and 3 instances and any router. docs/json.md says when it is not (decode blocks counted)."""
    import json

    from helpers import ROOT

    got = set()
    for fleet in (("--instances", "1"), ("--instances", "2", "--router", "round-robin"),
                  ("--instances", "3", "--router", "prefix")):
        r = invoke("replay", ROOT / "traces" / "sample_chat.jsonl", "--model", "llama-3.1-8b", "--tier", "gpu=5GB",
                   "--no-cache-decode-blocks", *fleet, "--format", "json", "-q")
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        got.add(d["fleet"]["gap"]["fleet_ceiling_hit_ratio"] if "fleet" in d else d["gap"]["fleet_ceiling_hit_ratio"])
    assert len(got) == 1
    doc = (ROOT / "docs" / "json.md").read_text()
    assert "it can differ slightly with the instance count and router" in doc


def test_an_empty_fifo_trace_says_it_is_a_pipe_nothing_was_written_into(work):
    """A trace may be a pipe (spooled, read once); a FIFO with no writer reads as empty: the message says why."""
    os.mkfifo("fifo.jsonl")
    assert_one_line_error(invoke("replay", "fifo.jsonl", "-q"), "fifo.jsonl: empty trace (no requests): a named "
                          "pipe (FIFO) with no data written into it when pcs opened it")
    assert sorted(os.listdir(".")) == ["fifo.jsonl"]


# -- F2: a running SSM state takes its pages of the GPU pool ------------------------------------------------------

def test_a_pool_smaller_than_one_running_state_truncates_every_request(work):
    """qwen3-next-80b-a3b, TP 4, B = 16, gpu=2blocks: 2 x 3,145,728 B = 8 pages of 786,432 B (12 layers a page);
    one state is 39,518,208 B = 50.25 -> 51 pages. Three requests of 64, 80 and 80 tokens: each reserves its
    running state at admission (whatever its output), 51 > 8 pages: all 3 truncated under the step scheduler
    (before, prompts ending on a block boundary reserved no state and all 3 ran untruncated) and with
    --compute infinite alike, with a note naming the state."""
    import json

    rows = [(0, list(range(1000, 1064))), (10, list(range(1000, 1064)) + list(range(2000, 2016))),
            (20, list(range(1000, 1048)) + list(range(3000, 3032)))]
    with open("three.jsonl", "w") as f:
        for t, ids in rows:
            f.write(json.dumps({"timestamp": t, "token_ids": ids, "output_length": 1}) + "\n")
    for compute in ("step", "infinite"):
        r = invoke("replay", "three.jsonl", "--model", "qwen3-next-80b-a3b", "--tp", "4", "--block-size", "16",
                   "--tier", "gpu=2blocks", "--compute", compute, "--format", "json")
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout)
        assert (d["tiers"][0]["capacity_blocks"], d["requests_truncated"]) == (8, 3)
        assert ("gpu holds 8 pages of ssm_state's pool, fewer than one running state (51 pages)"
                in " ".join(d["notes"]))
