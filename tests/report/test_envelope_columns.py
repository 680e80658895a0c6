"""The envelope table's columns (docs/semantics.md §10): restore time shown as transfer
time + queueing, and the break-even per GPU beside the TP group's."""
from __future__ import annotations

import pytest

from pcs.report.htmltables import envelope_table
from pcs.report.replay import _envelope_table


def _summary() -> dict:
    # the walkthrough's run: restore_s 5.92 s = transfer 4.47 s + queueing 1.45 s; TP 8, group break-even
    # 6.92 GB/s, so 6.92 / 8 = 0.865 GB/s per GPU (by hand)
    link = {"tier": "cpu", "link": "pcie5", "bandwidth_bps": 8 * 64e9, "restores": 10, "restored_bytes": 10**9,
            "restore_s": 5.92, "transfer_s": 4.47, "queue_s": 1.45, "prefill_saved_s": 2.0,
            "restores_slower_than_recompute": 3, "share_slower": 0.3, "break_even_bps": 6.92e9,
            "break_even_bps_per_gpu": 0.865e9}
    env = {"links": [link], "ttft_p50_s": 1.0, "ttft_p99_s": 2.0, "ttft_no_cache_alone_p50_s": 1.5,
           "ttft_no_cache_alone_p99_s": 3.0, "wait_p50_s": 0.0, "wait_p99_s": 0.0, "prefill_saved_s": 2.0}
    return {"envelope": env}


def test_text_and_html_split_restore_time_and_give_break_even_per_gpu():
    text = _envelope_table(_summary())
    assert "transfer time" in text and "restore time" not in text.splitlines()[2]
    assert "4.47 s" in text and "5.92 s" not in text          # transfer, not the sum with queueing
    assert "6.92 GB/s" in text and "865.00 MB/s" in text and "break-even per GPU" in text
    html = envelope_table(_summary())
    assert html["headers"][5:7] == ["transfer time", "queueing"]
    assert html["headers"][-2:] == ["break-even (TP group)", "break-even per GPU"]
    cells = [c["text"] if isinstance(c, dict) else c for c in html["rows"][0]]
    assert "4.47 s" in str(cells) and "865.00 MB/s" in str(cells)


@pytest.fixture(scope="module")
def links():
    import pcs

    s = pcs.replay("traces/sample_chat.jsonl", tiers=["gpu=200blocks", "cpu=2000blocks"], tp=8).summary
    return s.envelope.links


def test_engine_break_even_per_gpu_is_the_groups_over_tp_and_restore_splits(links):
    # TP 8: each GPU's link carries an eighth of the group's bytes over the same time
    lk = links[0]
    assert lk.restores > 0
    assert lk.break_even_bps_per_gpu == pytest.approx(lk.break_even_bps / 8, rel=1e-12)
    assert lk.transfer_s + lk.queue_s == pytest.approx(lk.restore_s, rel=1e-12)
