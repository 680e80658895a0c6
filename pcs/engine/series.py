"""Bounded views of a replay for plots: per-request distributions (and, below, the time series).

A replay's per-request table grows with the trace; the summary carries
these fixed-size views instead (docs/semantics.md §11), so the JSON and the
HTML report stay small whatever the trace length:

- ``ttft_cdf``: TTFT with the cache and without it (``prefill_no_cache_s``,
  the full prefill with no wait) at :data:`CDF_LEVELS` quantile levels
  (0, 0.5 %, ..., 100 %; ``inverted_cdf``: each value is a request's own);
- ``restore_vs_recompute``: for requests that restored blocks, the restore
  time (queueing included) and the prefill the request's hits save
  (``prefill_no_cache_s - prefill_s``), at most :data:`MAX_POINTS` of them,
  evenly spaced in trace order.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CDF_LEVELS", "MAX_POINTS", "request_distributions"]

#: Quantile levels of the TTFT CDFs: 201 levels, 0 to 1 in steps of 0.005.
CDF_LEVELS = np.linspace(0.0, 1.0, 201)
#: Most requests in the restore-vs-recompute scatter.
MAX_POINTS = 2000


def _quantiles(values: np.ndarray) -> list[float]:
    values = values[np.isfinite(values)]
    if not len(values):
        return []
    return [float(v) for v in np.quantile(values, CDF_LEVELS, method="inverted_cdf")]


def request_distributions(requests: Any) -> dict:
    """The bounded distributions of a replay's per-request table.

    Args:
        requests: pyarrow Table of :data:`pcs.engine.summary.REQUEST_COLUMNS`
            (``ttft_s``, ``prefill_no_cache_s``, ``prefill_s``, ``restore_s``,
            ``restored_bytes``; float64 seconds, int64 bytes), one row per request.
    Returns:
        ``{"ttft_cdf": {"quantiles", "with_cache_s", "without_cache_s"},
        "restore_vs_recompute": {"requests", "sampled", "prefill_saved_s", "restore_s"}}``;
        lists of floats (seconds); ``quantiles`` empty when no request has a TTFT.
    """
    col = lambda name: requests.column(name).to_numpy(zero_copy_only=False).astype(np.float64)  # noqa: E731
    with_cache, without = _quantiles(col("ttft_s")), _quantiles(col("prefill_no_cache_s"))
    restored = np.flatnonzero(col("restored_bytes") > 0)
    pick = restored
    if len(restored) > MAX_POINTS:
        pick = restored[np.unique(np.rint(np.linspace(0, len(restored) - 1, MAX_POINTS)).astype(np.int64))]
    saved = col("prefill_no_cache_s")[pick] - col("prefill_s")[pick]
    return {"ttft_cdf": {"quantiles": [float(q) for q in CDF_LEVELS] if with_cache else [],
                         "with_cache_s": with_cache, "without_cache_s": without},
            "restore_vs_recompute": {"requests": int(len(restored)), "sampled": int(len(pick)),
                                     "prefill_saved_s": [float(v) for v in saved],
                                     "restore_s": [float(v) for v in col("restore_s")[pick]]}}
