"""Curves: analysis that reads a trace once and answers for every capacity (never the replay loop).

- :mod:`pcs.curves.stackdist`: prefix-aware LRU stack depths (C twin ``_stackdist.c``);
- :mod:`pcs.curves.shards`: SHARDS sampling with exact chain heads;
- :mod:`pcs.curves.belady`: the offline optimum (MIN) per capacity;
- :mod:`pcs.curves.api`: ``pcs.curve(...)``, the LRU curve and knees;
- :mod:`pcs.curves.result`: the typed ``CurveResult`` (rows, knees; JSON keys in ``docs/json.md``).
"""
