"""The fleet ceiling's label says when it counts the next turns' decode blocks (38.6 % and 37.7 % once stood
under one label). Under the step scheduler the instances cache decode blocks and the fleet ceiling counts each
request's output blocks as seen after it (docs/semantics.md §17); with --compute infinite it is prompt blocks only.
Adding blocks to an infinite cache's contents can only add hits, so the decode-aware ceiling is >= the other."""
from __future__ import annotations

from helpers import invoke, invoke_json
from pcs.trace import DEFAULT_TRACE

RUN = ("replay", DEFAULT_TRACE, "--instances", "2", "--tier", "gpu=2000blocks")


def test_the_label_names_decode_blocks_only_when_counted():
    step, inf = invoke_json(*RUN), invoke_json(*RUN, "--compute", "infinite")
    assert step["gap"]["ceiling_with_decode"] is True and inf["gap"]["ceiling_with_decode"] is False
    assert step["gap"]["fleet_ceiling_hit_ratio"] >= inf["gap"]["fleet_ceiling_hit_ratio"]
    text_step, text_inf = invoke(*RUN, "-q").stdout, invoke(*RUN, "--compute", "infinite", "-q").stdout
    assert "fleet ceiling (whole trace, one infinite cache, incl. next turns' decode blocks)" in text_step
    assert "fleet ceiling (whole trace, one infinite cache)" in text_inf and "decode blocks" not in text_inf
