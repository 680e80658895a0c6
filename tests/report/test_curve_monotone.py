"""A curve JSON whose rows or knees go the wrong way as capacity rises is refused, the field named (review of
2026-12-04, fix34b finding 3): LRU hit ratio never falls and LRU block misses never rise down the rows (LRU is a
stack algorithm: a larger cache holds every block a smaller one holds), an exact curve's Belady hit ratio never falls
(MIN is the optimum at each capacity), and the knees' capacities go p50 <= p90 <= p99. Every curve pcs writes passes,
including one whose Belady block misses rise with capacity (MIN keeps only blocks that earn hit tokens: that count
is not ordered, so it is not checked).

The base file is worked by hand: 3 rows at 0, 10 and 100 blocks; 800 prompt tokens, 40 cacheable blocks of 16
tokens; LRU hits 0, 4 and 10 blocks (ratios 0, 64/800 = 0.08, 160/800 = 0.2; misses 40, 36, 30), Belady 0, 6 and
10 blocks (0, 0.12, 0.2; misses 40, 34, 30); the ceiling 0.2; knees at 10 (p50: 0.08 is not 50 % of 0.2 -- knees
are not checked against rows) then 100 and 100.
"""
from __future__ import annotations

import copy
import json

import pytest

from pcs.errors import UserError
from pcs.report.payloadcheck import check_payload
from tests.helpers import invoke


def _row(c: int, lru_blocks: int, belady_blocks: int) -> dict:
    return {"capacity_blocks": c, "lru_hit_ratio": lru_blocks * 16 / 800, "belady_hit_ratio": belady_blocks * 16 / 800,
            "ceiling_hit_ratio": 0.2, "lru_block_misses": 40 - lru_blocks, "belady_block_misses": 40 - belady_blocks}


BASE = {
    "trace": "t.jsonl", "block_size": 16, "requests": 5, "block_accesses": 50, "cacheable_blocks": 40,
    "distinct_cacheable_blocks": 30, "prompt_tokens": 800, "sample_rate": 1.0, "kernel": "c",
    "engine": "stack-distance", "engine_reason": "exact", "model": None, "block_bytes": None,
    "ceiling_hit_ratio": 0.2,
    "knee": {f"p{p}": {"percent_of_ceiling": p, "capacity_blocks": c, "lru_hit_ratio": r}
             for p, c, r in ((50, 10, 0.08), (90, 100, 0.2), (99, 100, 0.2))},
    "rows": [_row(0, 0, 0), _row(10, 4, 6), _row(100, 10, 10)],
    "dtype": None, "notes": [],
}


def test_the_hand_worked_file_passes():
    assert [r["lru_hit_ratio"] for r in BASE["rows"]] == [0.0, 0.08, 0.2]
    check_payload("curve", copy.deepcopy(BASE))


@pytest.mark.parametrize("row, key, value, message", [
    (2, "lru_hit_ratio", 0.05, "field 'rows[2].lru_hit_ratio': must be at least rows[1]'s (0.08): LRU at a larger "
                               "capacity holds every block it holds at a smaller one, got 0.05"),
    (2, "lru_block_misses", 37, "field 'rows[2].lru_block_misses': must be at most rows[1]'s (36): LRU at a larger "
                                "capacity holds every block it holds at a smaller one, got 37"),
    (2, "belady_hit_ratio", 0.1, "field 'rows[2].belady_hit_ratio': must be at least rows[1]'s (0.12): Belady's MIN "
                                 "is the optimum, and a larger cache can follow a smaller one's choices, got 0.1"),
])
def test_a_row_going_the_wrong_way_is_refused(row, key, value, message):
    d = copy.deepcopy(BASE)
    d["rows"][row][key] = value
    if key == "belady_hit_ratio":       # keep LRU <= Belady in the row (0.08 <= 0.1) so the order check speaks
        d["rows"][row]["lru_hit_ratio"] = 0.1
    with pytest.raises(UserError) as err:
        check_payload("curve", d)
    assert str(err.value) == message


def test_a_null_row_value_is_stepped_over():
    d = copy.deepcopy(BASE)
    d["rows"][1]["belady_hit_ratio"] = d["rows"][1]["belady_block_misses"] = None
    check_payload("curve", d)                           # rows 0 and 2: 0.0 then 0.2
    d["rows"][0]["belady_hit_ratio"] = 0.2
    check_payload("curve", d)                           # 0.2 then 0.2: equal is allowed
    d["rows"][0]["belady_hit_ratio"], d["rows"][2]["belady_hit_ratio"] = 0.16, 0.15
    d["rows"][2]["lru_hit_ratio"] = 0.1                 # at least row 1's 0.08, at most its own Belady 0.15
    with pytest.raises(UserError, match=r"rows\[2\].belady_hit_ratio': must be at least rows\[0\]'s \(0.16\)"):
        check_payload("curve", d)


def test_a_sampled_curve_s_belady_values_are_not_ordered_but_its_lru_ones_are():
    d = copy.deepcopy(BASE)
    d.update(sample_rate=0.5, engine="shards", distinct_cacheable_blocks=None)
    d["rows"][2]["belady_hit_ratio"] = 0.1             # pcs writes none when sampled: refused before any order
    with pytest.raises(UserError, match=r"^field 'rows\[0\].belady_hit_ratio': must be null when sample_rate is "
                                        r"below 1"):
        check_payload("curve", d)
    for row in d["rows"]:
        row["belady_hit_ratio"] = row["belady_block_misses"] = None
    check_payload("curve", d)
    d["rows"][2]["lru_hit_ratio"] = 0.07
    with pytest.raises(UserError, match=r"rows\[2\].lru_hit_ratio': must be at least rows\[1\]'s \(0.08\)"):
        check_payload("curve", d)


def test_belady_block_misses_may_rise():
    d = copy.deepcopy(BASE)
    d["rows"][2]["belady_block_misses"] = 35            # above row 1's 34: allowed (see the module docstring)
    check_payload("curve", d)


@pytest.mark.parametrize("caps, message", [
    ((100, 10, 100), "field 'knee.p90.capacity_blocks': must be at least knee.p50's (100): a larger share of the "
                     "ceiling needs at least as many blocks, got 10"),
    ((10, 100, 50), "field 'knee.p99.capacity_blocks': must be at least knee.p90's (100): a larger share of the "
                    "ceiling needs at least as many blocks, got 50"),
    ((100, None, 10), "field 'knee.p99.capacity_blocks': must be at least knee.p50's (100): a larger share of the "
                      "ceiling needs at least as many blocks, got 10"),
])
def test_knees_out_of_order_are_refused(caps, message):
    d = copy.deepcopy(BASE)
    d["ceiling_hit_ratio"] = 0.2
    for p, c in zip(("p50", "p90", "p99"), caps):
        d["knee"][p]["capacity_blocks"] = c
    if None in caps:                                    # a null knee is pcs's only when the ceiling is 0
        d["ceiling_hit_ratio"] = 0.0
        for r in d["rows"]:
            r.update(ceiling_hit_ratio=0.0, lru_hit_ratio=0.0, belady_hit_ratio=0.0)
        for k in d["knee"].values():
            k["lru_hit_ratio"] = None if k["capacity_blocks"] is None else 0.0
    with pytest.raises(UserError) as err:
        check_payload("curve", d)
    assert str(err.value) == message


#: a tiny trace (Mooncake, 512-token blocks) on which MIN's block misses rise from 8 to 9 blocks while its hit ratio
#: stays at the ceiling: a count the check must not order
RISING_BELADY_MISSES = [(1256, [1, 2, 3]), (2514, [4, 5, 6, 7, 8]), (402, [4]), (1536, [9, 10, 11]),
                        (1959, [4, 5, 12, 13]), (2611, [1, 2, 3, 14, 15, 16]), (726, [1, 17]),
                        (2048, [9, 10, 18, 19]), (1895, [9, 10, 11, 20]), (1917, [21, 22, 23, 24]),
                        (1536, [9, 10, 11]), (2048, [25, 26, 27, 28]), (2560, [9, 29, 30, 31, 32]), (512, [33])]


def _write(path, rows) -> str:
    path.write_text("".join(json.dumps({"timestamp": i, "input_length": p, "output_length": 5, "hash_ids": ids}) + "\n"
                            for i, (p, ids) in enumerate(rows)))
    return str(path)


@pytest.mark.parametrize("args", [
    ("--capacities", ",".join(f"{c}blocks" for c in range(0, 36))),
    ("--capacities", ",".join(f"{c}blocks" for c in range(0, 36)), "--model", "llama-3.1-8b"),
    ("--sample-rate", "0.5", "--points", "20"),
    ("--sample-rate", "0.5", "--points", "20", "--model", "llama-3.1-8b"),
    ("--points", "3"),
])
def test_pcs_s_own_curves_pass(tmp_path, args):
    trace = _write(tmp_path / "t.jsonl", RISING_BELADY_MISSES)
    r = invoke("curve", trace, *args, "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    check_payload("curve", d)
    misses = [row["belady_block_misses"] for row in d["rows"]]
    if "--capacities" in args and "--model" not in args:     # the count that may rise does rise here
        assert any(b > a for a, b in zip(misses, misses[1:]))
    out = tmp_path / "c.json"
    out.write_text(r.stdout)
    assert invoke("report", str(out), "-o", str(tmp_path / "c.html")).exit_code == 0


def test_a_one_request_curve_passes(tmp_path):
    trace = _write(tmp_path / "t.jsonl", [(1024, [1, 2])])
    for extra in ((), ("--sample-rate", "0.5")):
        r = invoke("curve", trace, "--format", "json", "-q", *extra)
        assert r.exit_code == 0, r.output
        check_payload("curve", json.loads(r.stdout))
