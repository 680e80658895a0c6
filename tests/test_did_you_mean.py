"""Every unknown name gets the nearest names ("did you mean"), by one rule (pcs.choices.did_you_mean: difflib's
ratio >= 0.6, click's cutoff, the closest first, at most 3), before the full list. The expected names are
worked out by hand from the ratio 2 x M / (len(a) + len(b)), M the matching characters."""
from __future__ import annotations

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke
from pcs.errors import UserError


def _message(call, *args) -> str:
    with pytest.raises(UserError) as err:
        call(*args)
    return str(err.value)


def _get_model(name):
    from pcs.model import get_model
    return get_model(name)


def _get_gpu(name):
    from pcs.hardware import get_gpu
    return get_gpu(name)


def _get_link(name):
    from pcs.hardware import get_link
    return get_link(name)


def _get_policy(name):
    from pcs.cache.policies import get_policy
    return get_policy(name)


def _get_layout(name):
    from pcs.model.layouts import get_layout
    return get_layout(name)


def _admission(text):
    from pcs.cache.admission import parse_admission
    return parse_admission(text)


def _router(name):
    from pcs.fleet.routers import parse_router
    return parse_router(name, 2)


def _trace_format(fmt):
    from pcs.trace.api import open_trace
    return open_trace(SMALL_TRACE, format=fmt)


@pytest.mark.parametrize("call,name,expected", [
    # gpt-oss-120b: M = 11 of 11 + 12 -> 0.96; no other preset reaches 0.6
    (_get_model, "gpt-oss-12b", "unknown model 'gpt-oss-12b'; did you mean 'gpt-oss-120b'? valid: "),
    # h200 8/9 = 0.89, gh200 8/10 = 0.80 (h200-sxm, an alias of h200, is not said twice)
    (_get_gpu, "h200x", "unknown GPU 'h200x'; did you mean one of: 'h200', 'gh200', "),
    # pcie-gen5-x16: 18/22 = 0.82 first
    (_get_link, "pcie-gen5", "unknown link 'pcie-gen5'; did you mean one of: 'pcie-gen5-x16', "),
    # fifo 8/9 = 0.89, s3fifo 8/11 = 0.73
    (_get_policy, "fifox", "unknown eviction policy 'fifox'; did you mean one of: 'fifo', 's3fifo'? valid: "),
    # bf16: 'bf' + '1' = 3 -> 6/8 = 0.75; fp16 'f' + '1' -> 0.5
    (_get_layout, "bf61", "unknown dtype 'bf61'; did you mean 'bf16'? valid: bf16, "),
    # reuse 8/10 = 0.8
    (_admission, "reuze:2", "unknown admission 'reuze'; did you mean 'reuse'? valid: reuse, "),
    # prefix 10/11 = 0.91
    (_router, "prefx", "unknown router 'prefx'; did you mean 'prefix'? valid: "),
    # mooncake 14/15 = 0.93
    (_trace_format, "mooncak", "unknown trace format 'mooncak'; did you mean 'mooncake'? valid: "),
])
def test_an_unknown_name_says_the_nearest(call, name, expected):
    assert _message(call, name).startswith(expected)


def test_a_name_near_nothing_gets_the_list_alone():
    # zzz shares no character with a preset: no suggestion, the list as before
    assert _message(_get_model, "zzz").startswith("unknown model 'zzz'; valid: llama-3.1-8b")


@pytest.mark.parametrize("args,needle", [
    (["--timing", "modelled"], "'modelled' is not one of 'modeled', 'sequential'; did you mean 'modeled'?"),
    (["--write-policy", "bak"], "'bak' is not one of 'back', 'through'; did you mean 'back'?"),   # 6/7 = 0.86
    (["--engine", "refrence"], "did you mean 'reference'?"),                                       # 16/17
])
def test_an_enumerated_option_says_the_nearest(args, needle):
    assert_one_line_error(invoke("replay", SMALL_TRACE, "--tier", "gpu=100blocks", *args, "-q"), needle)


def test_file_keys_say_the_nearest(tmp_path):
    from pcs.analysis.budget import load_workloads
    from pcs.hardware import load_hardware_file
    from pcs.sweep.plan import load_plan

    w = tmp_path / "w.toml"
    w.write_text('[[workload]]\ncapcity_need = "1GB"\n')          # capacity_need: 24/25 = 0.96, the closest
    assert "unknown key; did you mean one of: 'capacity_need', " in _message(load_workloads, w)
    hw = tmp_path / "hw.toml"
    hw.write_text('[gpu.h100-sxm]\nhbm_bpz = "3TB/s"\n')            # hbm_bps 12/14 = 0.86, hbm_bytes 10/16 = 0.63
    assert ("unknown GPUSpec field 'hbm_bpz'; did you mean one of: 'hbm_bps', 'hbm_bytes'? known: "
            in _message(load_hardware_file, hw))
    plan = tmp_path / "p.toml"
    plan.write_text('kind = "replai"\n')                            # replay 10/12 = 0.83
    assert "unknown kind 'replai'; did you mean 'replay'? valid: " in _message(load_plan, plan)


# Review 44c: the remaining refusals over a fixed set of names, each with the nearest names by the same rule.

def _policy_option(spec):
    from pcs.cache.policies import make_policy
    return make_policy(spec, 10)


def _admission_option(spec):
    from pcs.cache.admission import make_admission
    return make_admission(spec)


def _tenant_mode(mode):
    from pcs.trace.transform import TransformSpec
    return TransformSpec(tenants=2, tenant_mode=mode)


def _layer_type(name):
    from pcs.model.families import _from_layer_types
    return _from_layer_types([name], 1, "config.json")


def _compute_dtype(dtype):
    from pcs.hardware import get_gpu
    return get_gpu("h100-sxm").peak_flops(dtype)


def _override_field(key):
    from pcs.hardware import get_link, override
    return override(get_link("nvme-gen4"), **{key: "1GB/s"})


def _router_by(by):
    from pcs.fleet.routers import parse_router
    return parse_router(f"least-loaded:by={by}", 2)


def _chat_template(name):
    from pcs.trace.chat import load_template
    return load_template(name)


@pytest.mark.parametrize("call,name,expected", [
    # protected_share: M = 14 of 14 + 15 -> 0.97
    (_policy_option, "slru:protected_shar=0.5",
     "eviction policy 'slru' takes no option 'protected_shar'; did you mean 'protected_share'? its options: "),
    # n: M = 1 of 2 + 1 -> 0.67
    (_admission_option, "reuse:mn=2", "admission 'reuse' takes no option 'mn'; did you mean 'n'? its options: n"),
    # dynamic: 12/13 = 0.92; none: 'n' -> 2/10
    (_policy_option, "lfu:aging=dynamc", "got 'dynamc'; did you mean 'dynamic'?"),
    # split 8/9 = 0.89; copy 'p' -> 2/8
    (_tenant_mode, "splt", "tenant_mode must be one of copy, split, got 'splt'; did you mean 'split'?"),
    # sliding 'slidng': 12/13 = 0.92; sliding_window 12/20 = 0.6 (exactly the cutoff); sliding_attention 12/23
    (_layer_type, "slidng", "unknown layer type 'slidng'; did you mean one of: 'sliding', 'sliding_window'? known: "),
    # fp8 4/6 = 0.67; fp16 'fp' 4/7 = 0.57; bf16 'f' 2/7
    (_compute_dtype, "fp9", "unknown compute dtype 'fp9'; did you mean 'fp8'? expected one of "),
    # bandwidth_bps: 24/25 = 0.96
    (_override_field, "bandwith_bps", "unknown LinkSpec field 'bandwith_bps'; did you mean 'bandwidth_bps'? known: "),
    # tokens 10/11 = 0.91; requests 'k'? no: 'o' + 's' -> 4/13 = 0.31
    (_router_by, "tokns", "by='tokns'; did you mean 'tokens'? valid: requests, tokens"),
    # chatml 10/11 = 0.91; llama3 'a' + 'm' -> 4/11 = 0.36
    (_chat_template, "chatm", "chat template 'chatm' is neither a built-in (chatml, llama3) nor a file; "
                              "did you mean 'chatml'?"),
])
def test_an_unknown_option_or_value_says_the_nearest(call, name, expected):
    assert expected in _message(call, name)


def test_a_mistyped_link_preset_says_the_nearest():
    # pcie-gen5-x16: 12 of 12 + 13 -> 0.96; pcie-gen4-x16: 'pcie-gen' + 'x16' = 11 -> 0.88; the rest below 0.6
    assert_one_line_error(invoke("replay", SMALL_TRACE, "--tier", "gpu=100blocks", "--tier", "cpu=100blocks",
                                 "--link", "cpu=pcie-gen5x16", "-q"),
                          "nor a bandwidth like 25GB/s; did you mean one of: 'pcie-gen5-x16', 'pcie-gen4-x16'?")


def test_a_link_near_nothing_keeps_the_message():
    line = assert_one_line_error(invoke("replay", SMALL_TRACE, "--tier", "gpu=100blocks", "--tier", "cpu=100blocks",
                                        "--link", "cpu=zzz", "-q"), "nor a bandwidth like 25GB/s")
    assert line.endswith("25GB/s"), line


def test_an_enumerated_report_option_says_the_nearest(tmp_path):
    # warn 6/8 = 0.75; refuse: one 'r' -> 2/10
    assert_one_line_error(invoke("report", tmp_path / "a.json", "--changed-trace", "warm"), "did you mean 'warn'?")


@pytest.mark.parametrize("var,value,needle", [
    ("PCS_THREADS", "of", "; did you mean 'off'?"),     # off 4/5 = 0.8; on 'o' 2/4 = 0.5
    ("PCS_NATIVE", "pyton", "; did you mean 'python'?"),  # python 10/11 = 0.91
])
def test_an_environment_mode_says_the_nearest(monkeypatch, var, value, needle):
    from pcs import _native, beside

    monkeypatch.setenv(var, value)
    with pytest.raises(UserError) as err:
        (beside._mode if var == "PCS_THREADS" else _native.default_mode)()
    assert str(err.value).endswith(needle), str(err.value)


def test_file_values_say_the_nearest(tmp_path):
    from pcs.hardware import load_hardware_file
    from pcs.trace.api import open_trace
    from pcs.trace.kvevents import read_kv_events

    hw = tmp_path / "hw.toml"
    hw.write_text('[linkz.nvme-gen4]\nsetup_s = "10us"\n')           # link 8/9 = 0.89; gpu 0
    assert "unknown section; did you mean 'link'? expected gpu or link" in _message(load_hardware_file, hw)
    ev = tmp_path / "e.jsonl"
    # BlockStored 'BlockSt' + 'ord' = 10 -> 20/21 = 0.95; BlockRemoved 'Block' + 'o' + 'd' = 7 -> 14/22 = 0.64;
    # AllBlocksCleared 'Blocks' + 'r' + 'd' = 8 -> 16/26 = 0.62: all three, the closest first
    ev.write_text('{"ts": 1, "events": [{"type": "BlockStord", "block_hashes": [1]}]}\n')
    assert "unknown event type 'BlockStord'; did you mean one of: 'BlockStored', 'BlockRemoved', 'AllBlocksCleared'?" in \
        _message(lambda p: list(read_kv_events(p)), ev)
    tr = tmp_path / "t.jsonl"
    # synthetic 16/17 = 0.94; recorded 'e' + 'r'... 4/16 = 0.25
    tr.write_text('{"timestamp": 1, "input_length": 3, "output_length": 1, "hash_ids": [1], "reuse": "synthetc"}\n')
    assert "got \"synthetc\"; did you mean 'synthetic'?" in _message(lambda p: list(open_trace(p)), tr)


def test_a_mistyped_file_type_says_the_nearest(tmp_path):
    from pcs.analysis.budget import load_workloads

    w = tmp_path / "w.tml"       # .toml: '.t' + 'ml' = 4 of 4 + 5 -> 0.89; .json: '.' -> 2/9
    w.write_text("")
    assert ("unknown file type '.tml'; did you mean '.toml'? pcs reads TOML (.toml) or JSON (.json), by the "
            "suffix") in _message(load_workloads, w)
    # png 'p' + 'n' = 2 of 3 + 3 -> 0.67, jpg 'p' + 'g' -> 0.67 too (a tie: difflib puts the larger string
    # first, 'png'); jpeg 'p', 'g' -> 4/7 = 0.57; the rest lower
    r = invoke("curve", SMALL_TRACE, "--plot", tmp_path / "c.pgn")
    assert_one_line_error(r, "unknown image type 'pgn'; did you mean one of: 'png', 'jpg'? use .png, .svg, "
                          ".pdf, .jpg, .jpeg, .tif, .tiff, .webp, .eps or .ps")


@pytest.mark.parametrize("tag, shown", [('["BlockStored"]', '["BlockStored"]'), ('{"a": 1}', '{"a": 1}'),
                                        ("7", "7"), ("null", "null")])
def test_an_event_type_that_is_no_string_is_refused_by_line(tmp_path, tag, shown):
    # a list or an object as the type cannot be looked up among the names (unhashable: an internal error, exit 1,
    # before); it is refused by file, line and field as any unknown type, without a suggestion
    ev = tmp_path / "e.jsonl"
    ev.write_text('{"ts": 0, "events": []}\n{"ts": 1, "events": [{"type": %s, "block_hashes": [1]}]}\n' % tag)
    r = invoke("trace", "events", ev, "--at", "1")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert f"{ev}:2: field 'events': unknown event type {shown}; expected one of BlockStored, BlockRemoved, " \
           "AllBlocksCleared" in r.output


@pytest.mark.parametrize("args, needle", [
    # 'gibb': gib 3 -> 6/7 = 0.86, gb 2 -> 4/6 = 0.67; kib, mib ... 'ib' -> 4/7 = 0.57; b 2/5
    (("--tier", "gpu=16GiBB"), "unknown unit 'GiBB'; did you mean one of: 'GiB', 'GB'? expected a size"),
    # 'blcks' against 'blocks': 5 -> 10/11 = 0.91; the size units at most 'b' -> 2/7
    (("--tier", "gpu=16blcks"), "unknown unit 'blcks'; did you mean 'blocks'? expected a size"),
    # a bandwidth's unit for a size: no look-alike (GB for Gbps is 8x off)
    (("--tier", "gpu=16Gbps"), "invalid size '16Gbps': 'Gbps' is a unit of bandwidth, not of size; expected"),
    # bits per second: bytes, GB/s, or divide by 8 (not the look-alike GB/s alone)
    (("--tier", "gpu=100blocks", "--tier", "cpu=100blocks", "--link", "cpu=10Gbps"), "--link cpu=10Gbps: invalid bandwidth '10Gbps': 'Gbps' reads as bits per second; "
                               "pcs takes bytes: write GB/s (bytes) or divide bits by 8"),
    # 'gbs': gb/s 3 -> 6/7 = 0.86, gib/s 'g','b','s' -> 6/8 = 0.75; b/s ('bs' -> 4/6 = 0.67) and kb/s (4/7) name
    # another scale than G: not suggested (review 45d: B/s is 10^9x off)
    (("--tier", "gpu=100blocks", "--tier", "cpu=100blocks", "--link", "cpu=10GBs"), "--link cpu=10GBs: invalid bandwidth '10GBs': unit must end in /s; did you mean one "
                              "of: 'GB/s', 'GiB/s'? expected a bandwidth"),
])
def test_a_mistyped_unit_says_the_nearest(args, needle):
    assert_one_line_error(invoke("replay", SMALL_TRACE, *args, "-q"), needle)


def test_a_mistyped_duration_unit_says_the_nearest():
    from pcs.units import parse_duration

    # 'mss': ms 2 -> 4/5 = 0.8, msecs 'ms' + 's' -> 6/8 = 0.75, msec 4/7 = 0.57, mins 4/7, s 2/4
    assert "unknown unit 'mss'; did you mean one of: 'ms', 'msecs'? expected a duration" in \
        _message(parse_duration, "5mss")


@pytest.mark.parametrize("key", ["torch_dtype", "dtype"])
def test_a_mistyped_config_dtype_says_the_nearest(tmp_path, key):
    import json

    from pcs.model.hfconfig import load_hf_config

    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
           "num_key_value_heads": 8, "vocab_size": 32000, "intermediate_size": 11008, key: "bfloat61"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    # bfloat16: 'bfloat' + '1' = 7 -> 14/16 = 0.88; float16: 'float' + '1' = 6 -> 12/15 = 0.8; float32 'float' ->
    # 10/15 = 0.67; float8_e4m3fn 10/21; int8 below; the field named is the one the value came from
    assert (f"field '{key}': unknown dtype 'bfloat61'; did you mean one of: 'bfloat16', 'float16', 'float32'? "
            "valid: float32, float16, bfloat16, float8_e4m3fn, float8_e5m2, int8") in _message(load_hf_config, p)


@pytest.mark.parametrize("value, shown", [(["bfloat16"], "['bfloat16'] (list)"), (16, "16 (int)")])
def test_a_config_dtype_that_is_no_string_says_it_must_be_one(tmp_path, value, shown):
    import json

    from pcs.model.hfconfig import load_hf_config

    # review 45d: ["bfloat16"] was "unknown dtype ['bfloat16']; did you mean one of: 'bfloat16', ..." (a list is
    # no name: the fix is to write the string)
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
           "num_key_value_heads": 8, "vocab_size": 32000, "intermediate_size": 11008, "torch_dtype": value}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    msg = _message(load_hf_config, p)
    assert f"field 'torch_dtype': must be a string, a torch dtype name such as 'bfloat16', got {shown}" in msg
    assert "did you mean" not in msg


def _router_option(spec):
    from pcs.fleet.routers import parse_router
    return parse_router(spec, 2)


@pytest.mark.parametrize("call, spec, expected", [
    # s3fifo's ghost_share is a look-alike of protected_share (difflib 0.67), but protected_share is slru's
    (_policy_option, "s3fifo:protected_share=0.5",
     "eviction policy 's3fifo' takes no option 'protected_share'; 'protected_share' is an option of slru, not of "
     "s3fifo; its options: small_share=, ghost_share=, move_to_main_threshold="),
    # n is reuse's (selective takes k)
    (_admission_option, "selective:n=2",
     "admission 'selective' takes no option 'n'; 'n' is an option of reuse, not of selective; its options: k"),
    # k is consistent-hash's (random takes seed)
    (_router_option, "random:k=3",
     "router 'random' takes no option 'k'; 'k' is an option of consistent-hash, not of random; its options: seed="),
    # an option of no other: the look-alike among its own, as before
    (_policy_option, "s3fifo:ghost_shar=0.5", "takes no option 'ghost_shar'; did you mean 'ghost_share'? its options"),
])
def test_an_option_of_another_policy_says_whose_it_is(call, spec, expected):
    assert expected in _message(call, spec)


def test_an_option_of_another_policy_on_the_command_line():
    # the option's name stays as the spec wrote it (quoted: not rewritten to --protected-share)
    assert_one_line_error(invoke("replay", SMALL_TRACE, "--tier", "gpu=100blocks", "--policy",
                                 "s3fifo:protected_share=0.5", "-q"),
                          "'protected_share' is an option of slru, not of s3fifo; its options: small_share=")
