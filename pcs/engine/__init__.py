"""The replay engine: a request stream through a multi-tier prefix cache, with time.

- :mod:`pcs.engine.api`: ``pcs.replay(...)`` (options -> tiers -> engine -> result);
- :mod:`pcs.engine.chunks`: requests as per-chunk python columns for the loop;
- :mod:`pcs.engine.engine`: the event loop (sequential and modeled timing);
- :mod:`pcs.engine.timing`: prefill and decode seconds per request;
- :mod:`pcs.engine.ledger`: counters; :mod:`pcs.engine.summary`: builds the summary,
  :mod:`pcs.engine.result`: its typed form (``ReplaySummary``, JSON keys in ``docs/json.md``);
- :mod:`pcs.engine.compare`: ``pcs.compare(...)``, several replays side by side;
- :mod:`pcs.engine.fastpath` + :mod:`pcs.engine.lruscan` (C twin
  ``_lruscan.c``): one-tier sequential LRU from a single scan.

The rules are in ``docs/semantics.md``.
"""
