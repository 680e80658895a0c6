/* pcs.cache._grouphier's C-level API: what the compiled step loop (pcs/engine/_stepsched.c) calls on a compiled
 * hybrid hierarchy without a Python call (HybridStepEngine's hooks, pcs/engine/hybridstep.py).
 *
 * Hierarchy.c_api() returns a PyCapsule named GH_CAPI_NAME holding a const GHCApi *; each function takes the
 * Hierarchy object itself (the caller holds a reference) and returns 0, or -1 with a Python exception set.
 */
#ifndef PCS_GROUPHIER_CAPI_H
#define PCS_GROUPHIER_CAPI_H
#include <Python.h>

#define GH_CAPI_NAME "pcs.cache._grouphier.CAPI"

typedef struct {
    /* follow the caller's clock: no clock() callable, per-request samples only on first_admission
     * (GroupStepMixin.follow; the caller ticks before each start/prefill_done/finish/grow/abort/extend) */
    int (*follow)(PyObject *h);
    /* residency samples up to simulated time t, seconds (Hierarchy.tick; GroupStepMixin._now) */
    int (*tick)(PyObject *h, double t);
    /* keep the last admission's residency sample (GroupStepMixin.first_admission) */
    int (*first_admission)(PyObject *h);
    /* uncount an admission's restored pages (GroupStepMixin.restore_skipped) */
    int (*restore_skipped)(PyObject *h, PyObject *adm);
} GHCApi;

#endif
