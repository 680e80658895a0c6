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
