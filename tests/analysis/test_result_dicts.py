"""The envelope and budget results' dicts are strict JSON, named to_dict as every other result (docs/json.md;
pcs/analysis/envelope.py json_number)."""
from __future__ import annotations

import json

import pcs
from pcs.analysis.budget import budget


def test_envelope_at_zero_bandwidth_is_strict_json_with_nulls():
    # D = 1 GB over 0 B/s: read_s = D / 0 = inf, cached_s = inf, saved_s = T_full - inf = -inf -> null (the CLI's
    # spelling); margin = 0.1 - 0.03 - 0.005 = 0.065 s, break-even 1e9 / 0.065 = 15,384,615,384.6 B/s
    r = pcs.envelope(10**9, 0.1, 0.03, 0.005, [0])
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert d["rows"][0]["read_s"] is None and d["rows"][0]["cached_s"] is None and d["rows"][0]["saved_s"] is None
    assert d["rows"][0]["verdict"] == "slower"
    assert abs(d["break_even_bps"] - 1e9 / 0.065) < 1e-3
    assert r.as_dict() == r.to_dict()       # the former name is an alias


def test_budget_to_dict_is_the_as_dict_alias():
    # 40 GB needed of 80 GB: utilisation 0.5; 10 GB/s of 20 GB/s: 0.5
    b = budget(40 * 10**9, 80 * 10**9, 10e9, 20e9)
    assert b.to_dict() == b.as_dict()
    assert json.dumps(b.to_dict(), allow_nan=False)
