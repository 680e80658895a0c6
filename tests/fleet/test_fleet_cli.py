"""pcs replay --instances / --router and pcs compare --router from the command line."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from helpers import invoke_json

from pcs.cli.main import cli


def _run(*args):
    return CliRunner().invoke(cli, list(args))


def test_replay_instances_one_json_holds_todays_summary():
    plain = json.loads(_run("replay", "--format", "json", "--quiet").stdout)
    plain.pop("trace_file")   # the trace's identity for pcs report: a one-instance replay's top level, not its summary
    plain.pop("replay_command")  # the command that reruns it: the same top level
    assert plain.pop("skipped") == 0   # the lines the read skipped (none): the top level too
    r = _run("replay", "--instances", "1", "--router", "cache-aware", "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    fleet = json.loads(r.stdout)
    # the instance's summary holds the replay's notes, which are plain pcs replay's notes before the trace's own
    # (its reuse is synthetic); the fleet's top level holds them all once (one instance: every note alike), in
    # plain pcs replay's order
    own = fleet["instance_summaries"][0]["notes"]
    assert own and len(own) < len(plain["notes"])
    assert fleet["instance_summaries"][0] == dict(plain, notes=plain["notes"][:len(own)])
    assert fleet["notes"] == plain["notes"]
    assert fleet["hit_ratio"] == plain["hit_ratio"] and fleet["requests"] == plain["requests"]


def test_replay_fleet_table_and_requests_out(tmp_path):
    out = tmp_path / "req.parquet"
    r = _run("replay", "--instances", "3", "--router", "least-loaded:by=tokens", "--timing", "sequential",
             "--requests-out", str(out), "--quiet")
    assert r.exit_code == 0, r.output
    assert "3 instances" in r.stdout and "captured by routing" in r.stdout and "least-loaded:by=tokens" in r.stdout
    t = pq.read_table(out)
    assert t.column("request_id").to_pylist() == list(range(t.num_rows))
    assert set(t.column("instance").to_pylist()) <= {0, 1, 2}


def test_compare_routers_one_column_each():
    rows = invoke_json("compare", "--instances", "2", "--router", "round-robin", "--router", "prefix", "--timing",
                       "sequential")["routers"]
    assert [x["router"] for x in rows] == ["round-robin", "prefix"]
    # same trace, same fleet: the same ceiling for both routers
    assert rows[0]["fleet_ceiling_hit_ratio"] == rows[1]["fleet_ceiling_hit_ratio"]
    t = _run("compare", "--instances", "2", "--router", "round-robin", "--router", "prefix", "--timing",
             "sequential", "--quiet")
    assert "round-robin" in t.stdout.splitlines()[1] and "prefix" in t.stdout.splitlines()[1]


def test_fleet_errors_are_one_line():
    for args, needle in ((["--instances", "2", "--router", "session"], "session ids"),
                         (["--router", "nope"], "unknown router"),
                         (["--router", "prefix:k=2"], "router 'prefix' takes no options, got 'k'; 'k' is an option of consistent-hash"),
                         (["--instances", "0"], "--instances")):
        r = _run("replay", *args)
        assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output
        assert r.output.strip().count("\n") == 0
    r = _run("compare", "--router", "prefix", "--router", "prefix")
    assert r.exit_code == 2 and "twice" in r.output


def test_fleet_csv_one_line_per_instance_and_reblocking_refused(mooncake_conv):
    r = _run("replay", "--instances", "2", "--timing", "sequential", "--format", "csv", "--quiet")
    lines = r.stdout.strip().splitlines()
    assert r.exit_code == 0 and lines[0].startswith("instance,requests") and len(lines) == 3
    r = _run("replay", str(mooncake_conv), "--block-size", "256", "--instances", "2")
    assert r.exit_code == 2 and "re-blocking" in r.output


def test_fleet_csv_has_the_shared_tier_columns(tmp_path):
    """The CSV of a fleet with --shared-tier had no shared-tier column. Worked by hand: three
    Mooncake requests of 1,124 tokens (blocks of 512: 2 full blocks + a partial one) sharing blocks 1, 2, 100 s
    apart, round-robin over 2 instances, write-through. Request 0 (instance 0) computes blocks 1, 2 and writes
    them through to the shared tier (2 blocks; the partial block is not cached, semantics §2); request 1
    (instance 1) finds them there: 2 x 512 = 1,024 hit tokens (prompt 1,124: the last-token cap leaves 2
    blocks), read 2 blocks x 167,772,160 B (llama-2-70b fp16: 2 (K, V) x 80 layers x 8 KV heads x 128 dims x
    2 B x 512 tokens = 167,772,160 B per block over the TP group, docs/semantics.md §13); request 2
    (instance 0) hits its own GPU tier, nothing from the shared tier."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(f'{{"timestamp": {t}, "input_length": 1124, "output_length": 4, '
                             f'"hash_ids": [1, 2, {3 + i}]}}\n' for i, t in enumerate((0, 100_000, 200_000))))
    r = _run("replay", str(trace), "--instances", "2", "--router", "round-robin", "--shared-tier", "remote=1TB",
             "--write-policy", "through", "--format", "csv", "--quiet")
    assert r.exit_code == 0, r.output
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    got = [(row["instance"], row["shared_tier"], row["shared_hit_tokens"], row["shared_read_bytes"],
            row["shared_written_blocks"]) for row in rows]
    assert got == [("0", "remote", "0", "0", "2"), ("1", "remote", "1024", str(2 * 167_772_160), "0")]
    r = _run("replay", str(trace), "--instances", "2", "--format", "csv", "--quiet")
    assert "shared_tier" not in r.stdout.splitlines()[0]       # no shared tier, no such columns


@pytest.mark.parametrize("args, needle", [
    # hostile F12: a blank name is not the default router; the same router twice once its defaults are spelled out
    (["replay", "--router", ""], "a router name is empty"),
    (["compare", "--router", "prefix", "--router", " "], "a router name is empty"),
    (["compare", "--instances", "2", "--router", "random", "--router", "random:seed=0"],
     "'random' and 'random:seed=0' are both random:seed=0"),
    (["compare", "--instances", "2", "--router", "round-robin", "--router", "ROUND-ROBIN"], "unknown router"),
])
def test_router_spellings_refused(args, needle):
    r = _run(*args)
    assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output, r.output
    assert r.output.strip().count("\n") == 0


def test_compare_routers_on_one_instance_notes_routing_cannot_matter():
    # one instance: every router sends all requests to instance 0 -> equal columns; the note says so
    r = _run("compare", "--router", "prefix", "--router", "round-robin", "--timing", "sequential", "--quiet")
    assert r.exit_code == 0, r.output
    assert "routing cannot change these columns" in r.stdout
    r = _run("compare", "--instances", "2", "--router", "prefix", "--router", "round-robin", "--timing",
             "sequential", "--quiet")
    assert r.exit_code == 0 and "routing cannot change" not in r.stdout


@pytest.mark.parametrize("cmd,out", [(("replay", "--instances", "2"), ("--html", "f.html")),
                                     (("replay", "--router", "prefix"), ("--plot", "figs")),
                                     (("compare", "--router", "round-robin", "--router", "prefix"), ("--html", "f.html"))])
def test_html_and_plots_with_fleet_options_are_refused_not_silently_skipped(tmp_path, cmd, out):
    # they draw one instance's run; a fleet run used to exit 0 and write nothing
    from helpers import assert_one_line_error

    target = tmp_path / out[1]
    assert_one_line_error(_run(*cmd, out[0], str(target), "--quiet"), "--html/--plot", "--instances")
    assert not target.exists()


def test_belady_in_a_fleet_is_refused_naming_the_option():
    # belady reads the replayed trace's future: the offline bound of one replay, not of routed sub-traces
    from helpers import assert_one_line_error

    assert_one_line_error(_run("replay", "--instances", "2", "--policy", "belady", "--quiet"),
                          "--policy belady", "single-instance")


def test_a_zero_shared_tier_keeps_the_routing_loss():
    # a shared tier of 0 blocks holds nothing any instance could read, so routing still splits the reuse:
    # the gap split equals the fleet's without a shared tier (it reported lost_to_routing 0 and the whole
    # loss as "finite tiers")
    base = ("replay", "--instances", "4", "--format", "json", "--quiet", "--compute", "infinite")
    plain = json.loads(_run(*base).stdout)
    zero = json.loads(_run(*base, "--shared-tier", "remote=0GB").stdout)
    assert plain["gap"]["lost_to_routing"] > 0
    assert zero["gap"] == plain["gap"] and zero["hit_ratio"] == plain["hit_ratio"]


def test_link_names_the_shared_tier():
    # --link NAME=... sets the shared tier's link (one per instance), as docs/cluster.md says; it was refused
    # as naming no private tier. The default model runs TP 8, so each rank's share moves over its own link.
    base = ("replay", "--instances", "2", "--shared-tier", "remote=10blocks", "--format", "json", "--quiet")
    default = json.loads(_run(*base).stdout)["shared_tier"]["link"]
    r = _run(*base, "--link", "remote=1GB/s")
    assert r.exit_code == 0, r.output
    assert (default, json.loads(r.stdout)["shared_tier"]["link"]) == ("8x rdma-400g", "8x 1.00 GB/s")


def test_router_and_tier_policy_are_registry_choices():
    """--router and --tier-policy list their registries' names in --help as --policy does (a click.Choice), and
    still take options: NAME:opt=v, TIER=POLICY:opt=v (the seven routers of docs/cluster.md; the policies of
    pcs/cache/policies)."""
    import click

    from pcs.cli.replay import replay

    params = {p.name: p for p in replay.params}
    assert isinstance(params["router"].type, click.Choice) and isinstance(params["tier_policy"].type, click.Choice)
    help_text = " ".join(CliRunner().invoke(cli, ["replay", "--help"], terminal_width=400).output.split())
    assert "--router [round-robin|random|least-loaded|session|consistent-hash|prefix|cache-aware]" in help_text
    assert "--tier-policy TIER=[lru|slru|fifo|arc|s3fifo|sieve|lfu|2q|gdsf|belady|protected]" in help_text
    ok = CliRunner().invoke(cli, ["replay", "-q", "--format", "json", "--timing", "sequential", "--instances", "2",
                                  "--router", "random:seed=1"])
    assert ok.exit_code == 0 and json.loads(ok.output)["router"] == "random:seed=1", ok.output
    ok = CliRunner().invoke(cli, ["replay", "-q", "--format", "json", "--timing", "sequential",
                                  "--tier-policy", "cpu=lfu:aging=none"])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(cli, ["replay", "--router", "random:colour=1"])
    assert bad.exit_code == 2 and "--router" in bad.output and "colour" in bad.output, bad.output
