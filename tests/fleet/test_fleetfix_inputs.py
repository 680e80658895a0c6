"""fleetcheck-21 findings 6, 7, 9: exact router option parsing, the session refusal, compute= vs compute_mode=."""
from pathlib import Path

import pytest

import pcs
from pcs.fleet import fleet_replay
from pcs.fleet.routers import parse_router

TRACES = Path(__file__).resolve().parents[2] / "traces" / "formats"


@pytest.mark.parametrize("spec", [" random", "random ", "random: seed=1", "random:seed= 1", "random:",
                                  "round-robin:", "random:seed=1,", "cache-aware:overlap=1_000"])
def test_router_specs_are_exact(spec):
    # docs/cluster.md: "Router names and option names are exact" -- spaces, empty lists, a trailing comma
    # and Python's '_' digit separators are refused instead of silently stripped or read
    with pytest.raises(ValueError):
        parse_router(spec, 2)


def test_minus_zero_is_named_as_zero():
    # -0 and 0 are one weight: one name, so pcs compare's duplicate check sees them as one router
    assert parse_router("cache-aware:overlap=-0", 2).describe() == "cache-aware:overlap=0.0,load=1.0"
    assert parse_router("random:seed=7", 2).describe() == "random:seed=7"


def test_session_refusal_does_not_blame_mooncake():
    # an Azure 2023 trace has no session ids: the refusal must not name Mooncake's trace
    with pytest.raises(ValueError, match="session ids") as err:
        fleet_replay(str(TRACES / "azure2023_conv_8.csv"), instances=2, router="session")
    assert "Mooncake" not in str(err.value)


@pytest.mark.parametrize("call", [lambda: pcs.replay(None, compute="step"),
                                  lambda: fleet_replay(None, instances=2, compute="step")])
def test_compute_str_points_to_compute_mode(call):
    with pytest.raises(ValueError, match="compute_mode="):
        call()
