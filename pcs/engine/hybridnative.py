"""The compiled step loop over the compiled hybrid hierarchy (``docs/semantics.md §9``, §3.1, §15).

:class:`HybridNativeStepEngine` is :class:`pcs.engine.hybridstep.HybridStepEngine` (the Python reference: the
step scheduler over a hybrid model's cache groups) with its loop in C (``pcs/engine/_stepsched.c``, as
:class:`pcs.engine.stepnative.NativeStepEngine`) over :class:`pcs.cache.nativegroups.NativeGroupHierarchy`
(``pcs/cache/_grouphier.c``). The reference's three hooks run in C through the hierarchy's C-level API
(``pcs/cache/_grouphier_capi.h``): the hierarchy follows the loop's clock (ticked before each ``start``,
``prefill_done``, ``finish``, ``grow``, ``abort``, ``extend``), keeps a request's residency sample at its first
admission, and uncounts the restored pages of restores the loop skips (restore fallback). Windowed, chunked or
linear prefill attention is summed in C (:mod:`pcs.engine.chunkattn`). Its columns, counters, ledger and
residency equal the reference's (``tests/engine/test_hybridstep_native.py``). The ``compiled-hybrid`` row of
:mod:`pcs.engine.select` runs it under the step scheduler when :func:`hybrid_unsupported` gives no reason.
"""
from __future__ import annotations

from pcs import _native
from pcs.engine.scheduler import StepEngine
from pcs.engine.stepnative import NativeStepEngine, loop_unsupported, new_loop
from pcs.errors import UserError

__all__ = ["HybridNativeStepEngine", "hybrid_unsupported"]


def hybrid_unsupported(hierarchy, links, cost, config) -> str | None:
    """None when :class:`HybridNativeStepEngine` can run this replay, else the reason it cannot.

    Args:
        hierarchy: a hybrid hierarchy (it must be a :class:`pcs.cache.nativegroups.NativeGroupHierarchy`);
        links: per tier a LinkSpec or None; cost: :class:`pcs.compute.StepCost`; config: the resolved
        :class:`pcs.engine.schedconfig.SchedulerConfig`.
    """
    from pcs.cache.nativegroups import NativeGroupHierarchy

    if _native.module("stepsched") is None:
        return f"the compiled {_native.TWINS['stepsched']} is not built"
    if type(hierarchy) is not NativeGroupHierarchy:
        return "the cache groups are not on the compiled hybrid hierarchy"
    return loop_unsupported(len(hierarchy.tiers), links, cost, config)


class HybridNativeStepEngine(NativeStepEngine):
    """:class:`pcs.engine.hybridstep.HybridStepEngine` with its loop in C (module docstring); the same
    arguments, plus ``no_cache`` (the no-cache run over the GPU level: no hooks, as the reference runs a
    plain StepEngine there) and ``skip`` (event skipping).

    Raises:
        UserError: :func:`hybrid_unsupported` gives a reason (the message says it).
    """

    def __init__(self, hierarchy, links, block_bytes, cost, config, recompute_last_token: bool = True,
                 decode=None, no_cache: bool = False, skip: bool = True) -> None:
        StepEngine.__init__(self, hierarchy, links, block_bytes, cost, config, recompute_last_token, decode,
                            no_cache, False, skip)
        why = hybrid_unsupported(hierarchy, self.links, cost, config)
        if why is not None:
            raise UserError(f"the compiled step scheduler cannot run this hybrid replay: {why}")
        info = hierarchy._h.tier_info
        self._s = new_loop(self, lambda j: info(j)[0], recompute_last_token, no_cache, skip)
        if not no_cache:
            self._s.set_hybrid(hierarchy._h)
