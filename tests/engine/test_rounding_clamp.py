"""Times that are >= 0 by definition never come out below 0 from float rounding (docs/semantics.md §10).

``envelope.links[].queue_s`` = restore time - transfer time summed over a link's restores, each restore ending at
begin + transfer with begin >= now, so each term is >= 0; ``prefill_saved_s`` = prefill without hits - prefill
with them (hits never add prefill under pcs's compute model, §10). Summed in different orders the two sides
differed by -1e-15 .. -5e-11 s, printed as "-0.00 ns".
"""
from __future__ import annotations

from pathlib import Path

import pytest

import pcs
from tests.helpers import invoke

CHAT = str(Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl")


@pytest.mark.parametrize("mode", ["step", "infinite"])
def test_one_request_at_a_time_never_queues(mode):
    # A 2-block GPU tier holds one (truncated, §5) request at a time: no restore begins while another is on the
    # link, so by hand every restore's wait for the link is 0 and queue_s is exactly 0 (was -4.9e-11 s).
    s = pcs.replay(CHAT, tiers=["gpu=2blocks", "cpu=1000blocks"], compute_mode=mode).summary
    (link,) = s.envelope.links
    assert link.restores > 700            # the run does restore (740 / 741 on this sample)
    assert link.queue_s == 0.0


@pytest.mark.parametrize("mode", ["step", "infinite"])
def test_four_tiers_no_negative_times(mode):
    tiers = ["gpu=50blocks", "cpu=100blocks", "ssd=200blocks", "remote=1000blocks"]
    s = pcs.replay(CHAT, tiers=tiers, compute_mode=mode).summary
    for link in s.envelope.links:
        assert link.queue_s >= 0.0 and link.prefill_saved_s >= 0.0, link
    assert s.envelope.prefill_saved_s >= 0.0
    assert all(v >= 0.0 for v in s.distributions.restore_vs_recompute.prefill_saved_s)


def test_link_table_prints_no_negative_queueing():
    out = invoke("replay", CHAT, "--tier", "gpu=50blocks", "--tier", "cpu=100blocks", "--tier", "ssd=200blocks",
                 "--tier", "remote=1000blocks")
    assert out.exit_code == 0, out.output
    assert "-0.00" not in out.output
