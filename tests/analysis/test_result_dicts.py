"""The envelope and budget results' dicts are strict JSON, named to_dict as every other result (docs/json.md;
pcs/analysis/envelope.py json_number)."""
from __future__ import annotations

import json

import pytest

import pcs
from pcs.analysis.budget import budget


def test_envelope_at_zero_bandwidth_is_refused_as_the_cli_refuses_it():
    # 0 B/s: a link that moves nothing never finishes (pcs envelope --bandwidth 0GB/s says the same, one check:
    # pcs.argcheck.check_bandwidth); 0.5 B/s is below the 1 B/s floor
    with pytest.raises(pcs.errors.UserError, match=r"^bandwidths_bps\[1\] = 0: a bandwidth must be > 0"):
        pcs.envelope(10**9, 0.1, 0.03, 0.005, [10e9, 0])
    with pytest.raises(pcs.errors.UserError, match=r"^bandwidths_bps\[0\] = 0.5: 0.5 B/s is less than 1 B/s"):
        pcs.envelope(10**9, 0.1, 0.03, 0.005, [0.5])
    # 1 GB at 1 B/s: read_s = 1e9 s, cached_s = 1e9 + 0.03 + 0.005 s, finite: strict JSON
    r = pcs.envelope(10**9, 0.1, 0.03, 0.005, [1])
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert d["rows"][0]["read_s"] == 1e9 and d["rows"][0]["verdict"] == "slower"
    assert abs(d["break_even_bps"] - 1e9 / 0.065) < 1e-3   # margin = 0.1 - 0.03 - 0.005 = 0.065 s
    assert r.as_dict() == r.to_dict()       # the former name is an alias


def test_budget_to_dict_is_the_as_dict_alias():
    # 40 GB needed of 80 GB: utilisation 0.5; 10 GB/s of 20 GB/s: 0.5
    b = budget(40 * 10**9, 80 * 10**9, 10e9, 20e9)
    assert b.to_dict() == b.as_dict()
    assert json.dumps(b.to_dict(), allow_nan=False)
