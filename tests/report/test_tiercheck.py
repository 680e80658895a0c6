"""A tier configuration in which a lower tier never receives a block gets a note saying which tier and why
(pcs/report/tiercheck.py): size 0, a slower link above a faster one, or none written in the run.

Worked by hand on the bundled sample (llama-2-70b fp16, 8x h100-sxm, 167,772,160 B per 512-token block): it names
40,856 cacheable block accesses, so at most 40,856 distinct blocks. ``ssd=10TB`` holds floor(10e12 / 167,772,160)
= 59,604 blocks > 40,856: under write-back (a tier gets what the tier above evicts, docs/semantics.md §7) the ssd
tier can never evict, so a cpu tier below it can never receive a block. The default links (pcs hardware) are per
GPU, x 8 GPUs: cpu pcie-gen5-x16 50 GB/s -> 400 GB/s, ssd nvme-gen4 7 GB/s -> 56 GB/s. ``reuse:2000`` stores a
block on its 2,000th use, and a block is used at most once per request: 1,700 requests give at most 1,700 uses.
"""
from __future__ import annotations

import json

import pytest

from pcs.report.tiercheck import tier_config_notes
from tests.helpers import ROOT, invoke


def _notes(*tiers: str, extra: tuple[str, ...] = ()) -> list[str]:
    args = [a for t in tiers for a in ("--tier", t)]
    r = invoke("replay", "-q", "--format", "json", *args, *extra)
    assert r.exit_code == 0, r.output
    return [n for n in json.loads(r.stdout)["notes"] if n.startswith("tier ")]


def test_dram_below_a_larger_ssd_gets_the_order_and_the_empty_tier_notes():
    notes = _notes("gpu=200GB", "ssd=10TB", "cpu=1TB")
    assert len(notes) == 2, notes
    assert notes[0].startswith("tier order: ssd (56.00 GB/s link) sits above cpu (400.00 GB/s)")
    assert notes[0].endswith("give --tier gpu=1192blocks --tier cpu=5960blocks --tier ssd=59604blocks")
    assert notes[1].startswith("tier cpu received no block in this run (999.92 GB unused): under write-back")
    assert "ssd (10.00 TB = 59,604 blocks) evicted none" in notes[1]


def test_fastest_first_with_room_to_evict_gets_no_note():
    assert _notes("gpu=200GB", "cpu=1TB", "ssd=10TB") == []
    assert _notes("gpu=200GB", "cpu=1TB") == []


def test_a_zero_size_lower_tier_is_named():
    assert _notes("gpu=200GB", "cpu=0GB", "ssd=10TB") == [
        "tier cpu has size 0: it holds no block and passes every block it is given on to ssd"]
    assert _notes("gpu=200GB", "cpu=0") == [
        "tier cpu has size 0: it holds no block and passes every block it is given on (the last tier: they are "
        "dropped)"]


def test_an_admission_that_admits_nothing_is_named():
    notes = _notes("gpu=200GB", "cpu=1TB", extra=("--admit", "cpu=reuse:2000"))
    assert len(notes) == 1 and notes[0].startswith("tier cpu received no block in this run (999.92 GB unused): "
                                                   "its admission (reuse:2000) refused all ")


def _tier(name, blocks, written, evicted, bps=None):
    return dict(name=name, capacity_blocks=blocks, capacity_bytes=blocks * 1000, link_bandwidth_bps=bps,
                written_blocks=written, evicted_blocks=evicted, resident_blocks_peak=min(blocks, written))


def test_rules_on_hand_built_summaries():
    gpu = _tier("gpu", 10, 0, 0)
    assert tier_config_notes({"tiers": [gpu], "write_policy": "back"}) == []            # GPU only
    # write-through: the cpu tier was written at compute time although the GPU evicted nothing
    assert tier_config_notes({"tiers": [gpu, _tier("cpu", 20, 5, 0, 4e11)], "write_policy": "through"}) == []
    # write-through and still nothing written: no write-back reason to give
    assert tier_config_notes({"tiers": [gpu, _tier("cpu", 20, 0, 0, 4e11)], "write_policy": "through"}) == [
        "tier cpu received no block in this run (20.00 kB unused): no block reached it"]
    # equal links are no misorder
    assert tier_config_notes({"tiers": [_tier("gpu", 10, 0, 3), _tier("a", 20, 3, 1, 1e9),
                                        _tier("b", 20, 1, 0, 1e9)], "write_policy": "back"}) == []


def test_compare_names_the_variant_whose_tier_is_never_written():
    r = invoke("compare", "-q", "--format", "json", "--tiers", "gpu=200GB,ssd=10TB,cpu=1TB",
               "--tiers", "gpu=200GB,cpu=1TB,ssd=10TB")
    assert r.exit_code == 0, r.output
    notes = [n for n in json.loads(r.stdout)["notes"] if "tier " in n]
    first = "lru gpu=200GB ssd=10TB cpu=1TB: "                  # only the first variant: the second is in order
    assert [n[:len(first)] for n in notes] == [first, first]
    assert notes[0].startswith(first + "tier order: ssd (56.00 GB/s link) sits above cpu (400.00 GB/s)")
    assert notes[1].startswith(first + "tier cpu received no block in this run (999.92 GB unused)")


def test_a_tier_below_a_size_0_tier_is_fed_by_the_tier_above_that():
    # gpu holds every block (evicts none), cpu has size 0 (passes on what it is given: nothing), ssd receives
    # nothing: the tier that evicted none is gpu, the one whose evictions reach ssd through cpu (§7)
    s = {"tiers": [_tier("gpu", 100, 40, 0), _tier("cpu", 0, 0, 0, 4e11), _tier("ssd", 50, 0, 0, 5.6e10)],
         "write_policy": "back"}
    notes = tier_config_notes(s)
    assert notes[0] == "tier cpu has size 0: it holds no block and passes every block it is given on to ssd"
    assert notes[-1].startswith("tier ssd received no block in this run (50.00 kB unused): under write-back")
    assert "gpu (100.00 kB = 100 blocks) evicted none: it held every block it was given (at most 40 at once)" \
        in notes[-1]


def test_counts_of_one_take_the_singular():
    # a 1-block GPU tier that held its one block and evicted none, above an empty cpu tier: "1 block", not
    # "1 blocks"; an admission that refused the one block offered: "all 1 block"; a hybrid model's page tiers
    # say "page" throughout
    gpu, cpu = _tier("gpu", 1, 1, 0), _tier("cpu", 1, 0, 0, 4e11)
    note = tier_config_notes({"tiers": [gpu, cpu], "write_policy": "back"})[-1]
    assert note == ("tier cpu received no block in this run (1.00 kB unused): under write-back a tier gets only what "
                    "the tier above evicts, and gpu (1.00 kB = 1 block) evicted none: it held every block it was given "
                    "(at most 1 at once)")
    refused = dict(cpu, admission="reuse:2", refused_blocks=1)
    note = tier_config_notes({"tiers": [dict(gpu, evicted_blocks=1), refused], "write_policy": "back"})[-1]
    assert note == ("tier cpu received no block in this run (1.00 kB unused): its admission (reuse:2) refused all "
                    "1 block offered to it")
    pages = [dict(t, blocks_unit="page") for t in (dict(gpu, capacity_blocks=2), cpu)]
    note = tier_config_notes({"tiers": pages, "write_policy": "through"})[-1]
    assert note == "tier cpu received no page in this run (1.00 kB unused): no page reached it"


@pytest.mark.parametrize("native", ["python", "c"])
def test_a_one_block_gpu_tier_of_truncated_requests_says_why_it_evicted_none(native):
    """By hand (docs/semantics.md §5, §7), traces/formats/mooncake_conv_8.jsonl: 8 requests whose hash ids all
    start with block 0, on a 1-block GPU tier under write-back. The first caches its head, block 0 (its 14 other
    blocks do not fit: truncated); each of the 7 others hits block 0 (7 x 512 = 3,584 hit tokens), pins it and has
    no slot left for a new block: it caches nothing and is truncated. So the GPU tier holds block 0 from the first
    request on, evicts nothing and the cpu tier receives nothing -- the count is right, and the note says why
    (the truncated requests' other blocks were cached in no tier), not that the tier "held every block it was
    given". The Python reference and the compiled path give the same."""
    r = invoke("replay", str(ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"), "--tier", "gpu=1blocks",
               "--tier", "cpu=2TB", "--native", native, "-q", "--format", "json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    gpu, cpu = s["tiers"]
    assert (s["requests_truncated"], s["requests"], s["hit_tokens"]) == (8, 8, 3584)
    assert (gpu["evicted_blocks"], gpu["hit_blocks"], gpu["resident_blocks_peak"], cpu["written_blocks"]) == \
        (0, 7, 1, 0)
    note = next(n for n in s["notes"] if n.startswith("tier cpu received no block"))
    assert note.endswith("gpu (167.77 MB = 1 block) evicted none: it kept every block it cached (at most 1 at "
                         "once); 8 of 8 requests were truncated (larger than the gpu tier, docs/semantics.md §5): "
                         "their blocks past what fit were cached in no tier, so none of those passed through gpu")
    assert "it held every block it was given" not in note


@pytest.mark.parametrize("model,unit", [((), "block"), (("--model", "qwen3-next-80b-a3b", "--tp", "2"), "page"),
                                        (("--model", "gemma-3-27b"), "page")])
def test_a_gpu_tier_of_size_0_says_it_holds_none(model, unit):
    """By hand (docs/semantics.md §5, §7): a GPU tier of 0 blocks holds no block, so all 8 requests of
    traces/formats/mooncake_conv_8.jsonl are truncated at admission, it caches and evicts none, and under
    write-back the cpu tier below receives none. The note says the GPU tier has size 0 -- not that it "kept
    every block it cached (at most 0 at once)". A hybrid model's tiers count pages: the same in pages."""
    r = invoke("replay", str(ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"), "--tier", "gpu=0blocks",
               "--tier", "cpu=100blocks", "--timing", "sequential", *model, "-q", "--format", "json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert (s["requests_truncated"], s["requests"], s["tiers"][1]["written_blocks"]) == (8, 8, 0)
    note = next(n for n in s["notes"] if n.startswith(f"tier cpu received no {unit}"))
    assert note.endswith(f"(0 B = 0 {unit}s) evicted none; it has size 0: it holds no {unit}, so it cached none "
                         f"to evict; 8 of 8 requests were truncated (larger than the gpu tier, docs/semantics.md "
                         f"§5): their {unit}s were cached in no tier"), note
    assert "kept every" not in note and "at most 0" not in note
