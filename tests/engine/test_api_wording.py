"""The API's errors name its keywords (``links=``, ``kv_reserve``, ``instances``, ``load_hf_config``); the CLI
shows the same errors with its flags, translated in one place (``pcs.cli.common.option_names``)."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import pcs
from pcs.cli.common import option_names
from pcs.errors import UserError
from tests.helpers import invoke

TOKENS = str(Path(__file__).resolve().parents[2] / "traces" / "sample_tokens.jsonl")
TWO = ["gpu=10blocks", "cpu=10blocks"]


@pytest.mark.parametrize("kw, api, cli", [
    (dict(tiers=TWO, links={"cpu": True}), "links['cpu'] = 'True': neither a preset", "--link cpu=True: neither a preset"),
    (dict(tiers=["gpu=10blocks", "weird=10blocks"]), "or name its link: links['weird'] = 'pcie-gen5-x16' or "
     "links['weird'] = '25GB/s'", "or name its link: --link weird=pcie-gen5-x16 or --link weird=25GB/s"),
    (dict(tiers=["gpu=10blocks"], links={"gpu": "1GB/s"}), "links= is for lower tiers; 'gpu' is the GPU tier",
     "--link is for lower tiers; 'gpu' is the GPU tier"),
    (dict(kv_reserve="5XB"), "kv_reserve='5XB': invalid size '5XB'", "--kv-reserve 5XB: invalid size '5XB'"),
    # a missing config path is a missing file (PathError), an unknown name lists the presets and the hint
    (dict(model="/no/such/config.json"), "model='/no/such/config.json': No such file or directory",
     "--model /no/such/config.json: No such file or directory"),
    (dict(model="no-such-model"), "(or load a Hugging Face config.json: "
     "model=pcs.model.hfconfig.load_hf_config(path))", "(or give a Hugging Face config.json path: "
     "--model path/to/config.json)"),
])
def test_api_names_its_keyword_and_the_cli_its_flag(kw, api, cli):
    with pytest.raises(UserError) as exc:
        pcs.replay(TOKENS, **kw)
    assert api in str(exc.value) and "--" not in str(exc.value)
    assert cli in option_names(str(exc.value))


def test_the_cli_run_shows_its_flags():
    r = invoke("replay", TOKENS, "--tier", "gpu=10blocks", "--tier", "cpu=10blocks", "--link", "cpu=True")
    assert r.exit_code == 2 and "pcs: error: --link cpu=True: neither a preset" in r.output
    r = invoke("replay", TOKENS, "--kv-reserve", "5XB")
    assert r.exit_code == 2 and "pcs: error: --kv-reserve 5XB: invalid size '5XB'" in r.output


def test_a_sweep_plan_error_names_the_plan_option():
    assert option_names("links['cpu'] = '1XB/s': bad", plan=True) == 'link = {cpu = "1XB/s"}: bad'


def test_numpy_ints_are_ints_for_instances():
    # instances = 2 as np.int64 is the same fleet as the Python int 2 (as tp=np.int64(4) is for replay)
    a = pcs.fleet_replay(TOKENS, instances=np.int64(2)).summary.to_dict()
    b = pcs.fleet_replay(TOKENS, instances=2).summary.to_dict()
    assert a["instances"] == 2 and a == b
    with pytest.raises(UserError, match=r"^instances=2.0: must be an integer, not float"):
        pcs.fleet_replay(TOKENS, instances=2.0)


@pytest.mark.parametrize("call", [pcs.replay, pcs.curve, pcs.open_trace, lambda t: pcs.fleet_replay(t, instances=2)],
                         ids=["replay", "curve", "open_trace", "fleet_replay"])
def test_file_objects_and_bytes_paths_get_one_message(call):
    with pytest.raises(UserError, match=r"^a trace path must be a str or pathlib.Path, got bytes .*os.fsdecode"):
        call(TOKENS.encode())
    with open(TOKENS) as f, pytest.raises(UserError, match=r"^a trace is read from its path, not a file object "
                                                          r"\(TextIOWrapper\)"):
        call(f)
    with pytest.raises(UserError, match=r"not a file object \(StringIO\)"):
        call(io.StringIO("{}"))


def test_plan_deployment_takes_numpy_ints_and_names_request_tokens():
    # llama-3.1-8b on one H100, blocks of 16, a request of 8,192 tokens: the np.int64 count is the same plan
    from pcs.hardware import get_gpu
    from pcs.model import get_model
    from pcs.model.capacity import plan_deployment
    from pcs.model.deploy import size_deployment

    spec = get_model("llama-3.1-8b")
    dep = size_deployment(spec, get_gpu("h100-sxm"), 1)
    assert plan_deployment(spec, dep, 16, np.int64(8192)) == plan_deployment(spec, dep, 16, 8192)
    with pytest.raises(UserError, match=r"^request_tokens must be >= 1, got 0"):
        plan_deployment(spec, dep, 16, 0)
