"""The step scheduler over a hybrid model's cache groups (``docs/semantics.md §9``, §3.1, §15).

:class:`HybridStepEngine` is :class:`pcs.engine.scheduler.StepEngine` over a
:class:`pcs.cache.grouphier.GroupHierarchy` (whose step calls -- ``grow``,
``abort``, ``extend``, ``held_blocks`` -- are :mod:`pcs.cache.groupstep`'s):
the hierarchy follows the scheduler's clock (its residency series samples
simulated time) and keeps one residency sample per request, at the request's
first admission (a preempted request is admitted again; its columns are its
first admission's, as the scheduler's own columns); restores the scheduler
skips (``restore_fallback``) are not counted as restored pages per component,
as the links moved no bytes for them.
"""
from __future__ import annotations

from pcs.engine.scheduler import StepEngine

__all__ = ["HybridStepEngine"]


class HybridStepEngine(StepEngine):
    """:class:`StepEngine` (same arguments) over a GroupHierarchy; see the module docstring."""

    def __init__(self, hierarchy, *args, **kwargs) -> None:
        super().__init__(hierarchy, *args, **kwargs)
        hierarchy.follow(lambda: self.now)

    def _first_columns(self, r, adm, kept: int, ht: int) -> None:
        super()._first_columns(r, adm, kept, ht)
        self.h.first_admission()

    def _restores(self, r, adm) -> int:
        skipped = self.stats.restores_skipped
        kept = super()._restores(r, adm)
        if self.stats.restores_skipped != skipped:
            self.h.restore_skipped(adm)
        return kept
