"""The saturation note is shared by pcs replay and pcs compare (each variant's notes); compare prints no Compute
section, so the note names the command whose section splits the wait (found 2026-12-04)."""
from pcs.engine.schedresult import saturation_note


def test_the_note_names_pcs_replays_compute_section():
    note = saturation_note([1.0, 0.995, 0.2], 15.0)       # 2 of 3 bins busy >= 99 %: saturated
    assert note.startswith("the instance was busy >= 99 % in 2 of 3 15-s bins")
    assert "(pcs replay's Compute section splits the wait)" in note
    assert saturation_note([1.0, 0.2, 0.2], 15.0) is None   # 1 of 3: below half
