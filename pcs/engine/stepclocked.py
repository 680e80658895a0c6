"""The compiled step loop on a fleet's one clock, over a hierarchy with a shared tier (docs/semantics.md §17.2).

:class:`ClockedNativeStepEngine` is :class:`pcs.engine.stepnative.NativeStepEngine` -- the step
scheduler's loop in C -- over any hierarchy with the methods of :class:`pcs.cache.Hierarchy` (the C loop
calls ``start``, ``prefill_done``, ``finish``, ``grow``, ``abort``, ``extend``, ``held_blocks``): a
fleet's :class:`pcs.cache.shared.SharedTierHierarchy`, whose lowest tier every instance shares. It adds
the one-clock interface of :class:`pcs.engine.scheduler.StepEngine` (``clock_event``, ``clock_advance``:
the C loop's iteration in its two halves, ``_stepsched.c`` ``begin`` / ``end``). Its per-request columns,
counters and ledger equal the Python reference's on the same fleet
(``tests/fleet/test_shared_step.py::test_compiled_step_loops_equal_the_reference``).
"""
from __future__ import annotations

from pcs import _native
from pcs.engine.scheduler import StepEngine
from pcs.engine.stepnative import NativeStepEngine, loop_unsupported, new_loop, span_limit
from pcs.errors import UserError

__all__ = ["ClockedNativeStepEngine", "clocked_unsupported"]


def clocked_unsupported(hierarchy, links, cost, config, native: str | None = None) -> str | None:
    """None when :class:`ClockedNativeStepEngine` can run these instances, else the reason it cannot.

    Args:
        hierarchy: the instance's tiers (the shared one last); links: per tier a LinkSpec or None;
        cost: :class:`pcs.compute.StepCost`; config: the resolved SchedulerConfig;
        native: ``auto``, ``c``, ``python`` or None (the run's ``native``; :mod:`pcs._native`).
    """
    if _native.resolve(_native.default_mode() if native is None else native, "stepsched") != "c":
        return "native is python, or the compiled step loop is not built"
    return loop_unsupported(len(hierarchy.tiers), links, cost, config)


class ClockedNativeStepEngine(NativeStepEngine):
    """The C step loop over a Python hierarchy, on a fleet's clock (module docstring); arguments as
    :class:`pcs.engine.scheduler.StepEngine` (event skipping on, no checks, no step log).

    Raises:
        UserError: :func:`clocked_unsupported` gives a reason (the message says it).
    """

    def __init__(self, hierarchy, links, block_bytes, cost, config, recompute_last_token: bool = True,
                 decode=None) -> None:
        StepEngine.__init__(self, hierarchy, links, block_bytes, cost, config, recompute_last_token, decode)
        why = clocked_unsupported(hierarchy, self.links, cost, config, "c")
        if why is not None:
            raise UserError(f"the compiled step scheduler cannot run this instance: {why}")
        tiers = hierarchy.tiers
        self._s = new_loop(self, lambda j: len(tiers[j].resident), recompute_last_token, False, True)

    def clock_event(self) -> tuple | None:
        """As :meth:`StepEngine.clock_event`, from the C loop."""
        with span_limit():
            return self._s.clock_event()

    def clock_advance(self, until_s: float) -> None:
        """As :meth:`StepEngine.clock_advance`, in the C loop."""
        with span_limit():
            self._s.clock_advance(until_s)
