"""A fleet run's saturation note is one line for the fleet, and its header names an index only where the router
reads one. The instances' notes are built by hand in the words of
:func:`pcs.engine.schedresult.saturation_note`; the advice follows from what the run already did: it has N
instances (so "more than N"), and a router that reads the cache index (prefix, cache-aware) is not told to use one.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pcs.engine.schedresult import saturation_note
from pcs.fleet.fleet import fleet_notes
from pcs.fleet.routers import parse_router
from tests.helpers import invoke


def _runs(*busy_bins):
    """One instance summary per entry: its utilisation bins (1.0 = busy) of 10 s each, and a note all share."""
    return [None if b is None else SimpleNamespace(notes=tuple(
        n for n in (saturation_note(b, 10.0), "alike") if n is not None)) for b in busy_bins]


def test_saturated_instances_give_one_note_with_each_ones_bins():
    # instance 0: 3 of 4 bins busy; instance 1: 2 of 2; instance 2: 1 of 4 (below half: no note); 3 idle
    runs = _runs([1.0, 1.0, 1.0, 0.1], [1.0, 0.995], [1.0, 0.5, 0.5, 0.5], None)
    out = fleet_notes((), runs, parse_router("round-robin", 4))
    assert len(out) == 2 and out[1] == "alike"
    assert out[0].startswith("2 of 4 instances were busy >= 99 % in at least half of their 10-s bins "
                             "(0: 3 of 4, 1: 2 of 2): ")
    assert "more instances than 4, --router cache-aware (round-robin splits the shared prefixes)" in out[0]
    assert "--instances N" not in out[0]


@pytest.mark.parametrize("router", ["cache-aware", "prefix"])
def test_a_router_that_reads_the_index_is_not_advised_one(router):
    out = fleet_notes((), _runs([1.0, 1.0], [0.0, 0.2]), parse_router(router, 2))
    assert out[0].startswith("instance 0 of 2 was busy >= 99 % in at least half of its 10-s bins (0: 2 of 2)")
    assert "--router" not in out[0] and "more instances than 2" in out[0]


def _header(*args):
    r = invoke("replay", "--tier", "gpu=100blocks", "--tier", "cpu=200blocks", "--timing", "sequential",
               "--instances", "2", *args)
    assert r.exit_code == 0, r.output
    return r.output.splitlines()[0]


def test_the_header_names_an_index_only_for_a_router_that_reads_it():
    assert _header().endswith("| router round-robin, reads no cache index")
    assert _header("--router", "random").endswith("| router random:seed=0, reads no cache index")
    # the index covers every tier of an instance: 100 + 200 blocks
    assert _header("--router", "prefix").endswith("| router prefix, exact view | index 300 blocks per instance")
