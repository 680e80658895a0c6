"""A registry's refusal of a name typed on the command line names the option that gave it (mend46b item 1): the
option as typed, then the registry's own message (``--model: unknown model 'gpt-17'; valid: ...``), as ``--name:
...`` and the policy options' refusals name theirs. The Python API's message is the registry's alone. Expected
lines worked out from that rule: the option typed, ``: ``, ``unknown KIND 'NAME'``."""
from __future__ import annotations

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke


@pytest.mark.parametrize("args,start", [
    (("footprint", "--model", "gpt-17", "--tokens", "5"), "pcs: error: --model: unknown model 'gpt-17'; "),
    (("deploy", "--model", "gpt-17"), "pcs: error: --model: unknown model 'gpt-17'; "),
    (("envelope", "--model", "gpt-17", "--tokens", "100"), "pcs: error: --model: unknown model 'gpt-17'; "),
    (("replay", SMALL_TRACE, "--model", "gpt-17", "-q"), "pcs: error: --model: unknown model 'gpt-17'; "),
    # replay's older spelling of --model is named as typed
    (("replay", SMALL_TRACE, "--model-config", "gpt-17", "-q"), "pcs: error: --model-config: unknown model 'gpt-17'; "),
    (("deploy", "--model", "llama-3.1-8b", "--gpu", "h999"), "pcs: error: --gpu: unknown GPU 'h999'; "),
    (("replay", SMALL_TRACE, "--gpu", "h999", "-q"), "pcs: error: --gpu: unknown GPU 'h999'; "),
    (("hardware", "--gpu", "h999"), "pcs: error: --gpu: unknown GPU 'h999'; "),
    (("hardware", "--link", "warp"), "pcs: error: --link: unknown link 'warp'; "),
    (("budget", "--transfer-size", "1GB", "--link", "warp"), "pcs: error: --link: unknown link 'warp'; "),
    # an empty GPU name (it ran as the default before h22) is named too
    (("replay", SMALL_TRACE, "--tier", "gpu=40blocks", "--gpu", "", "-q"), "pcs: error: --gpu: unknown GPU ''; "),
])
def test_an_unknown_name_names_its_option(args, start):
    line = assert_one_line_error(invoke(*args))
    assert line.startswith(start), line


def test_the_command_line_names_the_option_and_the_api_the_registry_alone():
    import pcs
    from pcs.errors import UnknownNameError
    from pcs.hardware import get_gpu

    with pytest.raises(UnknownNameError) as err:
        pcs.get_model("gpt-17")
    line = assert_one_line_error(invoke("footprint", "--model", "gpt-17", "--tokens", "5"))
    # the same list of presets; the hint after it is each side's own (--model PATH, load_hf_config(path))
    assert line.startswith("pcs: error: --model: " + str(err.value).split(" (or ")[0] + " (or ")
    with pytest.raises(ValueError) as err:
        get_gpu("h999")
    assert str(err.value).startswith("unknown GPU 'h999'; ")
    assert assert_one_line_error(invoke("hardware", "--gpu", "h999")) == f"pcs: error: --gpu: {err.value}"
