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


def test_shared_tier_text_shows_the_routing_split(tmp_path):
    # fleetcheck-21 finding 1. Two Mooncake requests [1,2,3] (3 blocks of 512 tokens = 1,536 tokens) at 0 s and 1 s,
    # 2 instances round-robin: one request each. Fleet ceiling: r1 hits blocks 1, 2 (the last block is computed)
    # = 1,024 / 3,072 = 33.3 %. Each instance's own sub-trace holds one request: 0 hits -> routing loses 33.3 pts.
    # A 1-block shared tier with write-back never gets a write (nothing is evicted): it serves 0.0 % of prompt tokens.
    from pcs.report.fleet import render_fleet
    t = tmp_path / "two.jsonl"
    t.write_text('{"timestamp": 0, "input_length": 1536, "output_length": 1, "hash_ids": [1, 2, 3]}\n'
                 '{"timestamp": 1000, "input_length": 1536, "output_length": 1, "hash_ids": [1, 2, 3]}\n')
    s = fleet_replay(str(t), instances=2, router="round-robin", timing="sequential",
                     shared_tier="remote=1blocks").summary.to_dict()
    text = render_fleet(s)
    row = next(line for line in text.splitlines() if line.startswith("captured by routing (each instance's sub-trace ceiling, summed)"))
    assert "0.0 %" in row and "-33.3 pts split across instances" in row and "serves 0.0 % of prompt tokens" in row
    assert s["gap"]["lost_to_routing"] == 0.0          # the JSON keeps §17.1's definition
