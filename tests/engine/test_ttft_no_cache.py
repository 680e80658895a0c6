"""envelope.ttft_no_cache_* is each prefill alone, not scheduled; the scheduled no-cache TTFT is elsewhere.

The JSON once put a queued with-cache TTFT (``envelope.ttft_p50_s``) beside an unqueued
no-cache one (``envelope.ttft_no_cache_alone_p50_s``), and its description ("full prefill, no wait") did not say
that under the step scheduler the like-for-like figure is ``scheduler.no_cache.ttft_s``.
"""
from __future__ import annotations

import numpy as np

from helpers import ROOT

TINY = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"


def test_no_cache_envelope_is_each_prefill_alone_and_says_where_the_scheduled_one_is():
    import pcs
    from pcs.engine.result import EnvelopeSummary

    r = pcs.replay(TINY)            # default: modeled timing, the step scheduler
    s = r.summary.to_dict()
    alone = r.requests["prefill_no_cache_s"].to_numpy()
    # the median and 99th percentile of the per-request full prefills (numpy's linear percentile)
    assert s["envelope"]["ttft_no_cache_alone_p50_s"] == float(np.median(alone))
    assert s["envelope"]["ttft_no_cache_alone_p99_s"] == float(np.percentile(alone, 99))
    scheduled = s["scheduler"]["no_cache"]["ttft_s"]
    # scheduled on one instance, a request waits for steps and shares them: never faster than alone (the
    # median request here runs alone, equal up to the rounding of summing its step times)
    assert scheduled["p50"] >= s["envelope"]["ttft_no_cache_alone_p50_s"] * (1 - 1e-12)
    assert scheduled["p99"] > s["envelope"]["ttft_no_cache_alone_p99_s"]
    fields = EnvelopeSummary.__dataclass_fields__
    for key, pct in (("ttft_no_cache_alone_p50_s", "p50"), ("ttft_no_cache_alone_p99_s", "p99")):
        meaning = fields[key].metadata["doc"]
        assert "not scheduled" in meaning and f"scheduler.no_cache.ttft_s.{pct}" in meaning
