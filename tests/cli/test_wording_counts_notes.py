"""Wording of envelope / budget output: counts agree with their noun and verb, a note only about what the user gave,
one row per bandwidth (a repeat refused, as --capacities and --policy refuse theirs), and a value that rounds to zero
printed without a sign.

By hand (docs/semantics.md §4: a hit covers ((T - 1) // B) x B tokens, the last prompt token recomputed): a 1-token
prompt at 16-token blocks restores ((1 - 1) // 16) x 16 = 0 tokens, so its 1 token is computed; --restore-tokens 1
of a 17-token prompt is less than one 16-token block, so 0 of the 1 token are restored and 1 is computed; a 1,000-token
prompt restores 992, so 8 are computed. 1 GB at 999.999999999 GB/s reads in 1.000000000001 ms, 1e-12 s more than a
1 ms full prefill: net saved -0.000001 ns, which prints 0.00 ns.
"""
from __future__ import annotations

import pytest

from tests.helpers import invoke, invoke_json


def _out(*args) -> str:
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_envelope_counts_of_one_are_singular():
    out = _out("envelope", "--tokens", "1", "--model", "llama-2-70b", "--bandwidth", "10GB/s")
    assert "(the other 1 is computed)" in out and "so 1 token (from the last whole block on) is computed" in out
    assert "1 are computed" not in out and "1 tokens" not in out
    out = _out("envelope", "--tokens", "17", "--restore-tokens", "1", "--model", "llama-3.1-8b", "--bandwidth",
               "1GB/s")
    assert "= 0 of the 1 token (whole blocks: only full blocks are cached, the other 1 is computed)" in out
    out = _out("envelope", "--tokens", "1000", "--model", "llama-3.1-8b", "--bandwidth", "1GB/s")
    assert "(the other 8 are computed)" in out and "so 8 tokens (from the last whole block on) are computed" in out


def test_budget_notes_only_about_what_was_given():
    iops = "IOPS x I/O size is reachable only if queue depth and concurrency allow it"
    avg = "average bandwidth is not restore latency"
    out = _out("budget", "--restores-per-s", "0", "--restore-size", "0", "--transfer-size", "0", "--link",
               "pcie-gen5-x16")
    assert iops not in out and avg in out
    j = invoke_json("budget", "--transfer-size", "1MB", "--link", "pcie-gen5-x16")
    assert not any(iops in n or avg in n for n in j.get("notes", []))
    j = invoke_json("budget", "--iops", "1000", "--io-size", "4KiB")
    assert [n for n in j["notes"] if n.startswith(("IOPS", "average"))] == [iops]


@pytest.mark.parametrize("args,said", [
    (("--bandwidth", "10GB/s", "--bandwidth", "10GB/s"),
     "--bandwidth 10GB/s and --bandwidth 10GB/s are the same bandwidth (10.00 GB/s); give each bandwidth once"),
    (("--bandwidth", "10GB/s", "--bandwidth", "10000MB/s"),
     "--bandwidth 10GB/s and --bandwidth 10000MB/s are the same bandwidth (10.00 GB/s); give each bandwidth once"),
])
def test_envelope_refuses_a_bandwidth_twice(args, said):
    r = invoke("envelope", "--full-prefill", "1ms", "--restore-bytes", "1GB", *args)
    assert r.exit_code == 2 and r.output.strip() == f"pcs: error: {said}", r.output


def test_a_value_rounding_to_zero_has_no_sign():
    from pcs.units import format_bytes, format_duration, format_percent

    assert (format_duration(-1e-12), format_bytes(-0.001), format_percent(-1e-6)) == ("0.00 ns", "0.00 B", "0.0 %")
    assert (format_duration(-1e-9), format_percent(-0.01)) == ("-1.00 ns", "-1.0 %")    # not zero: the sign stays
    out = _out("envelope", "--full-prefill", "1ms", "--restore-bytes", "1GB", "--bandwidth", "999.999999999GB/s")
    row = next(line for line in out.splitlines() if line.startswith("1,000.00 GB/s"))
    # the envelope's net saved keeps the verdict's sign below the last digit (review 48k K3: "-<0.01 ns" slower)
    assert "-<0.01 ns" in row and "-0.00" not in row and row.split()[-1] == "slower"
