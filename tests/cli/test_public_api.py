"""The public Python API named in the README: one name per view."""
import pytest

import pcs


def test_budget_is_a_plain_function():
    # worked example, workload A: 30 GB / 80 GB, 1000 GB/s / 2000 GB/s -> u_C 0.375, u_B 0.5
    r = pcs.budget(30 * 10**9, 80 * 10**9, 1000e9, 2000e9)
    assert (r.u_C, r.u_B, r.binding) == (0.375, 0.5, "bandwidth")
    import pcs.analysis.budget as module  # the module is importable under its own name
    assert module.transfer_time_s(100 * 10**6, 20e9) == pytest.approx(0.005)


def test_views_are_plain_functions_with_signatures():
    import inspect
    import types

    for name in ("budget", "envelope", "replay", "curve", "footprint"):
        fn = getattr(pcs, name)
        assert isinstance(fn, types.FunctionType), name
        assert inspect.signature(fn).parameters, name
        assert fn.__doc__ and len(fn.__doc__) > 100, name
    assert "tiers" in inspect.signature(pcs.replay).parameters
    import pcs.engine.engine as loop  # submodules import as modules (no name is both)
    assert hasattr(loop, "ReplayEngine")


def test_replay_args_table_names_every_keyword_once_in_order():
    # pcs.engine.replaydoc.ARGS documents pcs.replay's keywords apart from the function (house limit of
    # ~60 lines per function); an entry is a line "name: text" at column 0, continuations indented.
    import inspect
    import re

    from pcs.engine import replaydoc

    documented = re.findall(r"^(\w+): ", replaydoc.ARGS, flags=re.M)
    assert documented == list(inspect.signature(pcs.replay).parameters)
    doc = inspect.getdoc(pcs.replay)
    assert doc.index("Args:") < doc.index("    residency_step_s: ") < doc.index("Raises:\n    UserError: ")


def test_envelope_is_callable():
    # worked example: 1 GB / (100 - 30 - 5) ms = 15.38 GB/s
    r = pcs.envelope(10**9, 0.100, 0.030, 0.005, [10e9, 20e9])
    assert r.break_even_bps == pytest.approx(1e9 / 0.065)


def test_footprint_function():
    # llama-3.1-8b BF16: 32 layers x 8 KV heads x 128 dims x 2 (K, V) x 2 B = 131,072 B/token
    m = pcs.get_model("llama-3.1-8b")
    assert m.kv_bytes_per_token("reference") == 32 * 8 * 128 * 2 * 2
    assert pcs.footprint(m, 1) is not None


def test_unknown_attribute():
    with pytest.raises(AttributeError):
        pcs.no_such_view


def test_submodules_after_plain_import():
    import importlib

    fresh = importlib.reload(pcs)
    for name in ("model", "trace", "hardware", "compute", "cache", "blocks", "units"):
        assert getattr(fresh, name).__name__ == f"pcs.{name}"


def test_names_accepted_where_the_cli_accepts_them():
    # llama-3.1-8b: 131,072 B/token (32 x 8 x 128 x 2 x 2); 32,768 tokens -> 4 GiB exactly
    assert pcs.footprint("llama-3.1-8b", 32768).totals["reference_bytes"] == 32768 * 131072
    assert pcs.model.block_bytes("llama-3.1-8b", 16, "reference").total_bytes == 16 * 131072
    by_name = pcs.compute.ComputeModel("llama-3.1-8b", "h100-sxm")
    by_spec = pcs.compute.ComputeModel(pcs.get_model("llama-3.1-8b"), pcs.hardware.get_gpu("h100-sxm"))
    assert by_name.prefill_s(1000) == by_spec.prefill_s(1000)
    with pytest.raises(ValueError):
        pcs.footprint("no-such-model", 1)
