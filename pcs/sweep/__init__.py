"""Sweeps: a plan of fixed options and axes, run point by point into one Parquet dataset.

- :func:`load_plan` / :func:`make_plan` (:mod:`pcs.sweep.plan`): a TOML/JSON
  plan -> points with stable ids (ranges with units: :mod:`pcs.sweep.axes`);
- :func:`run_sweep` (:mod:`pcs.sweep.api`): each point not yet done runs one
  public call (``pcs.replay``, ``pcs.compare``, ``pcs.curve``,
  ``pcs.footprint``; :mod:`pcs.sweep.kinds`) in this process, a local process
  pool or on Ray (:mod:`pcs.sweep.backends`), and is written at once
  (:mod:`pcs.sweep.store`);
- :func:`read_results`: the dataset as one pyarrow Table;
- :func:`summarize` (:mod:`pcs.sweep.summary`): best points per metric and
  the Pareto front against tier bytes.

``pcs sweep PLAN -o OUT`` and ``pcs sweep summarize OUT`` are the commands;
docs/sweep.md the guide (plan format, columns, Ray clusters).
"""
from __future__ import annotations

from pcs.sweep.api import run_sweep
from pcs.sweep.plan import Plan, Point, load_plan, make_plan
from pcs.sweep.store import read_results
from pcs.sweep.summary import summarize

__all__ = ["Plan", "Point", "load_plan", "make_plan", "read_results", "run_sweep", "summarize"]
