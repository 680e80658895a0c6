"""A fleet's shared lower tier (docs/semantics.md §17.1): hand-traced runs, the one clock, and its invariants."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pcs.cache.policies import make_policy
from pcs.cache.tier import Tier
from pcs.fleet import fleet_replay
from tests.helpers import (FLEET_TIERS, assert_empty_shared_tier_is_plain, assert_one_instance_is_single_replay,
                           DyadicCompute, HandTrace, stress_trace)

BS = 4
SMALL = dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1, compute=DyadicCompute())


def _Trace(rows):
    """9-token prompts (2 full blocks + 1), no output tokens."""
    return HandTrace(rows, BS)


def test_write_back_hand_traced_instance_b_hits_what_instance_a_evicted():
    # round-robin: requests 0, 2, 4 -> instance 0; 1, 3 -> instance 1. Each instance: a GPU tier of 2
    # blocks and no other private tier, so what its GPU evicts is written back into the shared tier (§7).
    rows = [(0, [1, 2, 90]),   # i0: misses; GPU0 = {1, 2}
            (1, [3, 4, 91]),   # i1: misses; GPU1 = {3, 4}
            (2, [5, 6, 92]),   # i0: misses; GPU0 evicts 2 then 1 (tail first, §6) -> shared {2, 1}
            (3, [1, 2, 93]),   # i1: 1, 2 are in the shared tier (written by i0 at t=2): 2 shared hits,
                               #     restored over i1's link; GPU1 evicts 4, 3 -> shared {2, 1, 4, 3}
            (4, [3, 4, 94])]   # i0: 3, 4 in the shared tier (written by i1 at t=3): 2 shared hits;
                               #     GPU0 evicts 6, 5 -> shared {2, 1, 4, 3, 6, 5}
    f = fleet_replay(_Trace(rows), instances=2, router="round-robin", tiers=["gpu=2blocks"],
                     shared_tier="remote=8blocks", timing="sequential", **SMALL)
    s, sh = f.summary, f.summary.shared_tier
    assert f.assignment.tolist() == [0, 1, 0, 1, 0]
    assert f.requests.column("hit_tokens_remote").to_pylist() == [0, 0, 0, 8, 8]
    assert f.requests.column("hit_tokens_gpu").to_pylist() == [0] * 5
    assert [p.hit_tokens for p in sh.per_instance] == [(0, 8), (0, 8)]
    assert [p.shared_written_blocks for p in sh.per_instance] == [4, 2]   # i0: {2, 1} then {6, 5}; i1: {4, 3}
    assert sh.written_blocks == 6 and sh.peak_resident_blocks == 6 and sh.evicted_blocks == 0
    assert sh.read_blocks == 4 and sh.read_bytes == 4 * sh.bytes_per_block
    assert [p.shared_read_bytes for p in sh.per_instance] == [2 * sh.bytes_per_block] * 2
    assert sh.hit_tokens == 16 and s.hit_tokens == 16
    # without the shared tier neither instance ever saw the other's blocks: no hit at all
    plain = fleet_replay(_Trace(rows), instances=2, router="round-robin", tiers=["gpu=2blocks"], timing="sequential",
                         **SMALL)
    assert plain.summary.hit_tokens == 0
    # the gap split with a shared tier: captured is the fleet ceiling (r3 and r4 repeat r0 and r1: 16 of 45
    # prompt tokens); what routing alone captured is each instance's own ceiling: i0 sees 1,2 / 5,6 / 3,4
    # and i1 sees 3,4 / 1,2: no repeat, 0
    assert s.gap.fleet_ceiling_hit_ratio == s.gap.captured_hit_ratio == 16 / 45
    assert sh.routing_captured_hit_ratio == 0.0
    assert s.gap.delivered_hit_ratio == 16 / 45


def test_one_clock_a_block_is_shared_only_after_it_was_written():
    # modeled timing, instant compute, write-through: a computed block is written to every lower tier when
    # its prefill ends (§7). DyadicCompute: 8 new tokens take 8 x 2^-14 s = 0.00048828125 s.
    rows = [(0.0, [1, 2, 90]),      # i0: computes 1, 2; written to the shared tier at t = 0.00048828125
            (0.0001, [1, 2, 91]),   # i1: arrives before that write: misses (and computes them itself)
            (1.0, [1, 2, 92])]      # i2: after both writes: 2 hits in the shared tier
    f = fleet_replay(_Trace(rows), instances=3, router="round-robin", tiers=["gpu=2blocks"],
                     shared_tier="remote=8blocks", timing="modeled", write_policy="through", compute_mode="infinite",
                     **SMALL)
    assert f.requests.column("hit_tokens_remote").to_pylist() == [0, 0, 8]
    sh = f.summary.shared_tier
    # i0 writes 1, 2 new; i1's copies are already there (touched, not written again, §7); i2 computes nothing
    assert [p.shared_written_blocks for p in sh.per_instance] == [2, 0, 0]
    assert sh.read_blocks == 2


def test_a_leased_block_is_passed_over():
    # LRU tier of 2 holding 1 (oldest) and 2; 1 leased: storing 3 evicts 2, not 1, and gives 1 back as used
    t = Tier("remote", 2, make_policy("lru", 2))
    t.insert([1, 2])
    t.lease([1])
    pushed, written = t.insert([3])
    assert pushed == [2] and written == 1 and t.lease_spared_blocks == 1
    assert t.policy.order() == [1, 3]
    # a batch larger than the unleased room keeps the leased block: room = 2 - 1 leased = 1
    pushed, _ = t.insert([4, 5])
    assert 1 in t.resident and pushed[-1] == 4
    t.release_lease([1])
    t._check()
    assert not t.leases


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 40), instances=st.integers(1, 4), tiers=FLEET_TIERS,
       timing=st.sampled_from(["sequential", "modeled"]), wp=st.sampled_from(["back", "through"]),
       router=st.sampled_from(["round-robin", "random", "cache-aware"]))
def test_a_shared_tier_of_size_zero_is_the_fleet_without_it(seed, n, instances, tiers, timing, wp, router):
    reqs = stress_trace(seed, n, bs=16)
    kw = dict(instances=instances, router=router, tiers=tiers, timing=timing, write_policy=wp, **SMALL)
    assert_empty_shared_tier_is_plain(reqs, **kw)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 50), instances=st.integers(1, 4), tiers=FLEET_TIERS,
       shared=st.integers(0, 60), timing=st.sampled_from(["sequential", "modeled"]),
       wp=st.sampled_from(["back", "through"]), policy=st.sampled_from(["lru", "fifo", "slru"]))
def test_shared_tier_invariants(seed, n, instances, tiers, shared, timing, wp, policy):
    reqs = stress_trace(seed, n, bs=16)
    f = fleet_replay(reqs, instances=instances, router="round-robin", tiers=tiers, shared_tier=f"remote={shared}blocks",
                     timing=timing, write_policy=wp, policy=policy, **SMALL)
    s, sh = f.summary, f.summary.shared_tier
    assert sh.peak_resident_blocks <= sh.capacity_blocks == shared          # capacity never exceeded
    assert sum(x.requests for x in s.per_instance) == s.requests == n
    g = s.gap                                                               # ceiling >= captured >= delivered
    # a shared tier of 0 blocks shares nothing: captured stays the routed sub-traces' ceilings (§17.1)
    assert (g.fleet_ceiling_hit_ratio == g.captured_hit_ratio) if shared else \
        (g.fleet_ceiling_hit_ratio >= g.captured_hit_ratio == sh.routing_captured_hit_ratio)
    assert g.captured_hit_ratio >= g.delivered_hit_ratio - 1e-12
    assert g.captured_hit_ratio >= sh.routing_captured_hit_ratio - 1e-12
    assert sh.hit_tokens == sum(f.requests.column("hit_tokens_remote").to_pylist())
    assert sh.read_blocks * 16 >= sh.hit_tokens                             # a shared hit block is read once


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 50), tiers=FLEET_TIERS, shared=st.integers(0, 60),
       timing=st.sampled_from(["sequential", "modeled"]), wp=st.sampled_from(["back", "through"]))
def test_one_instance_is_a_single_replay_whose_lowest_tier_is_the_shared_one(seed, n, tiers, shared, timing, wp):
    # the single replay has no leases: equal whenever no lease had to spare a block (counted)
    reqs = stress_trace(seed, n, bs=16)
    assert_one_instance_is_single_replay(reqs, tiers, shared, timing=timing, write_policy=wp, **SMALL)


def test_refusals():
    with pytest.raises(ValueError, match="give the shared tier a size"):
        fleet_replay(stress_trace(1, 4, bs=16), instances=2, shared_tier="remote=auto", timing="sequential", **SMALL)
    with pytest.raises(ValueError, match="distinct"):
        fleet_replay(stress_trace(1, 4, bs=16), instances=2, shared_tier="cpu=10blocks", timing="sequential",
                     tiers=["gpu=24blocks", "cpu=10blocks"], **SMALL)


def test_cli_shared_tier_json_table_and_errors():
    import json

    from click.testing import CliRunner

    from pcs.cli.main import cli

    def run(*args):
        return CliRunner().invoke(cli, ["replay", "--quiet", *args])

    r = run("--instances", "2", "--shared-tier", "remote=10TB", "--compute", "infinite", "--format", "json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    sh = s["shared_tier"]
    assert sh["name"] == "remote" and sh["capacity_bytes"] <= 10 * 10 ** 12
    assert sum(p["hit_tokens"][-1] for p in sh["per_instance"]) == sh["hit_tokens"]
    assert s["gap"]["captured_hit_ratio"] == s["gap"]["fleet_ceiling_hit_ratio"]
    r = run("--instances", "2", "--shared-tier", "remote=10TB", "--timing", "sequential")
    assert r.exit_code == 0 and "shared tier remote" in r.stdout and "hit tokens remote" in r.stdout
    plain = json.loads(run("--instances", "2", "--timing", "sequential", "--format", "json").stdout)
    assert "shared_tier" not in plain                         # no key without a shared tier
    for args, msg in ((("--shared-tier", "remote", "--timing", "sequential"), "expected NAME=VALUE"),
                      (("--shared-tier", "cpu=1TB", "--timing", "sequential"), "distinct")):
        r = run("--instances", "2", *args)
        assert r.exit_code == 2 and "pcs: error:" in r.output and msg in r.output, r.output
        assert "Traceback" not in r.output


STEPPED = {k: v for k, v in SMALL.items() if k != "compute"}


@pytest.mark.parametrize("native, loop", [("python", "step loop: Python"), (None, "step loop:")])
def test_a_shared_tier_fleet_names_its_engine(native, loop):
    # the selection table (pcs/engine/select.py) places a shared-tier fleet on the reference hierarchies: the
    # compiled rows say why not, and the reason says where the step loop ran (modeled timing with the
    # analytic compute of h100-sxm: the step scheduler)
    kw = dict(STEPPED, native=native) if native else STEPPED
    sh = fleet_replay(stress_trace(1, 4, bs=16), instances=2, shared_tier="remote=10blocks", **kw).summary.shared_tier
    assert sh.engine == "reference"
    assert "not compiled-hierarchy: a fleet's shared tier runs the instances' Python hierarchies" in sh.engine_reason
    assert "auto: reference applies" in sh.engine_reason and loop in sh.engine_reason
    seq = fleet_replay(stress_trace(1, 4, bs=16), instances=2, shared_tier="remote=10blocks", timing="sequential",
                       engine="general", **SMALL).summary.shared_tier
    assert (seq.engine, seq.engine_reason) == ("reference", "requested: general (alias of reference)")


@pytest.mark.parametrize("kw, msg", [
    # native c asks for compiled code, but the hierarchies are Python: refused as for --engine reference
    (dict(native="c"), "native 'c' asks for compiled code, but this modeled replay runs on the Python reference"),
    (dict(compute=None, engine="compiled-step"), "engine 'compiled-step' cannot run this replay: a fleet's shared tier"),
    (dict(engine="compiled-hierarchy", timing="sequential"), "engine 'compiled-hierarchy' cannot run this replay"),
])
def test_a_shared_tier_fleet_refuses_compiled_engines_through_the_table(kw, msg):
    with pytest.raises(ValueError, match=msg):
        fleet_replay(stress_trace(1, 4, bs=16), instances=2, shared_tier="remote=10blocks", **{**SMALL, **kw})


def test_each_instance_restores_over_its_own_link():
    # 3 instances, round-robin, GPU tiers of 2 blocks, write-through into the shared tier. At t = 2, instances
    # 1 and 2 both restore blocks 1, 2 (written by instance 0 at its prefill end): each over its own link, so
    # neither waits for the other -- both take one transfer of 2 blocks on rdma-400g (the default link of a
    # tier named remote, TP = 1), setup + bytes / bandwidth (pcs.hardware.LinkSpec.transfer_s, §9)
    from pcs.hardware import get_link

    rows = [(0.0, [1, 2, 90]), (0.5, [9, 10, 91]), (0.5, [11, 12, 92]),
            (2.0, [13, 14, 93]), (2.0, [1, 2, 94]), (2.0, [1, 2, 95])]
    f = fleet_replay(_Trace(rows), instances=3, router="round-robin", tiers=["gpu=2blocks"],
                     shared_tier="remote=16blocks", timing="modeled", write_policy="through",
                     compute_mode="infinite", **SMALL)
    assert f.assignment.tolist() == [0, 1, 2, 0, 1, 2]
    assert f.requests.column("hit_tokens_remote").to_pylist() == [0, 0, 0, 0, 8, 8]
    bpb = f.summary.shared_tier.bytes_per_block
    want = get_link("rdma-400g").transfer_s(2 * bpb, bpb)
    restore = f.requests.column("restore_s").to_pylist()
    # restore_s is (2.0 + transfer) - 2.0 in floats: equal to the transfer to ~1e-12 relative; a shared link
    # would make the second twice the first
    assert restore[4] == restore[5] == pytest.approx(want, rel=1e-9) and want > 0
    assert f.requests.column("restored_bytes").to_pylist()[4:] == [2 * bpb, 2 * bpb]
