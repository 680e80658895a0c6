"""The saturation note is shared by pcs replay and pcs compare (each variant's notes); compare prints no Compute
section, so the note names the command whose section splits the wait (found 2026-12-04)."""
from pcs.engine.schedresult import saturation_note


def test_the_note_names_pcs_replays_compute_section():
    note = saturation_note([1.0, 0.995, 0.2], 15.0)       # 2 of 3 bins busy >= 99 %: saturated
    assert note.startswith("the instance was busy >= 99 % in 2 of 3 15-s bins")
    assert "(pcs replay's Compute section splits the wait)" in note
    assert saturation_note([1.0, 0.2, 0.2], 15.0) is None   # 1 of 3: below half


def test_the_note_writes_counts_and_the_bin_width_with_separators():
    # pcs writes counts with thousands separators (pcs.units.format_count): 1,000 of 1,001 bins of 1,800 s
    note = saturation_note([1.0] * 1000 + [0.2], 1800.0)
    assert note.startswith("the instance was busy >= 99 % in 1,000 of 1,001 1,800-s bins: ")
    assert saturation_note([1.0, 0.2], 7.5).startswith("the instance was busy >= 99 % in 1 of 2 7.5-s bins: ")
