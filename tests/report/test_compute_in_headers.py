"""The headers of ``pcs compare``, ``pcs replay`` and a fleet run say
when the figures are unlimited-compute ones (``--compute infinite``: no compute queue, docs/semantics.md §9);
a default (step scheduler) run's header is unchanged."""
from __future__ import annotations

from click.testing import CliRunner

from pcs.cli.main import cli

SMALL = ["--tier", "gpu=1000blocks", "--tier", "cpu=4000blocks", "--quiet"]


def _first_line(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output
    return res.output.splitlines()[0]


def test_compare_header_names_unlimited_compute():
    line = _first_line("compare", "--admit", "none", "--admit", "cpu=reuse:2", "--compute", "infinite", *SMALL)
    assert line.endswith("| llama-2-70b | modeled timing, unlimited compute, no queueing (--compute infinite)")
    assert _first_line("compare", "--policy", "lru", "--policy", "fifo", *SMALL).endswith(
        "| llama-2-70b | modeled timing")
    assert _first_line("compare", "--policy", "lru", "--policy", "fifo", "--timing", "sequential", *SMALL).endswith(
        "| llama-2-70b | sequential timing")


def test_replay_header_names_unlimited_compute():
    assert "| modeled timing, unlimited compute, no queueing (--compute infinite) | lru, write-back" in _first_line(
        "replay", "--compute", "infinite", *SMALL)
    assert "| modeled timing | lru, write-back" in _first_line("replay", *SMALL)


def test_fleet_header_names_unlimited_compute():
    # a fleet run with --compute infinite said nothing; its header now ends with the marker,
    # and the default (step scheduler) fleet header does not
    args = ["replay", "--instances", "2", "--router", "prefix", *SMALL]
    assert _first_line(*args, "--compute", "infinite").endswith(
        "blocks per instance | unlimited compute, no queueing (--compute infinite)")
    assert _first_line(*args).endswith("blocks per instance")
