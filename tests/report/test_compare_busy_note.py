"""``pcs compare``'s notes: a saturation note is about one replay's instance, so when every variant has the same
one it says it describes each variant's run (found 2026-12-05: it read as if one run were meant)."""
from __future__ import annotations

from types import SimpleNamespace

from pcs.engine.schedresult import saturation_note
from pcs.report.compare import variant_notes


def _res(*variants):
    return SimpleNamespace(variants=[SimpleNamespace(variant=label, summary=SimpleNamespace(notes=list(notes)))
                                     for label, notes in variants])


def test_a_busy_note_every_variant_has_names_each_variant():
    busy = saturation_note([1.0, 1.0, 0.2], 15.0)
    out = variant_notes(_res(("lru", ["defaults: x", busy]), ("fifo", ["defaults: x", busy])))
    assert out == ("defaults: x", "each variant (lru, fifo): " + busy)


def test_a_busy_note_of_some_variants_leads_with_its_variant_and_one_variant_stands_alone():
    busy, other = saturation_note([1.0, 1.0, 0.2], 15.0), saturation_note([1.0, 0.2], 15.0)
    assert variant_notes(_res(("lru", [busy]), ("fifo", [other]))) == ("lru: " + busy, "fifo: " + other)
    assert variant_notes(_res(("lru", [busy]),)) == (busy,)
