/* The C-level API of pcs.cache._lruhier: the compiled hierarchy's step-scheduler calls as C functions.
 *
 * The module exports a PyCapsule named PCS_LRUHIER_CAPSULE holding one PcsHierApi (the numpy / datetime
 * pattern): another extension (pcs/engine/_stepsched.c) gets it once with PyCapsule_Import and then calls
 * start / prefill_done / finish / grow / abort / extend directly, without a Python call, an int object per
 * key or an attribute lookup per field. Each function is the C body of the Python method of the same name
 * (pcs/cache/_lruhier.c: hier_start_ids, hier_prefill_done, ...), so the two paths cannot differ; the rules are
 * those of pcs.cache.hierarchy.Hierarchy (docs/semantics.md §3-§7). `h` must be a pcs.cache._lruhier.Hierarchy
 * and `adm` an Admission it returned (check with PyObject_TypeCheck against hier_type / adm_type).
 * Errors: -1 (or NULL) with a Python exception set, as the methods raise.
 */
#ifndef PCS_LRUHIER_API_H
#define PCS_LRUHIER_API_H
#include <Python.h>
#include <stdint.h>

#define PCS_LRUHIER_CAPSULE "pcs.cache._lruhier._C_API"
#define PCS_LRUHIER_API_VERSION 1
#define PCS_LRUHIER_API_TIERS 8    /* most tiers whose per-tier counts PcsAdmInfo carries */

/* An Admission's fields (pcs.cache.hierarchy.Admission), blocks; per-tier lists cut at PCS_LRUHIER_API_TIERS. */
typedef struct {
    Py_ssize_t prefix_hit_blocks, hit_blocks, last_hit_tier, gpu_lead_blocks;
    int truncated;
    int64_t hit_blocks_per_tier[PCS_LRUHIER_API_TIERS], restored_blocks_per_tier[PCS_LRUHIER_API_TIERS];
} PcsAdmInfo;

typedef struct {
    int version;                    /* PCS_LRUHIER_API_VERSION */
    PyTypeObject *hier_type, *adm_type;
    /* start_ids(keys[0 .. len), n, cap, extra, wait_if_full): a new Admission, Py_None (new reference: it waits)
     * or NULL */
    PyObject *(*start)(PyObject *h, const uint64_t *keys, Py_ssize_t len, Py_ssize_t n, Py_ssize_t cap,
                       Py_ssize_t extra, int wait);
    void (*info)(PyObject *adm, PcsAdmInfo *out);
    int (*prefill_done)(PyObject *h, PyObject *adm);                      /* 0 or -1 */
    int (*finish)(PyObject *h, PyObject *adm);                            /* 0 or -1 */
    int (*grow)(PyObject *h, PyObject *adm, Py_ssize_t n);                /* 1 granted, 0 not, -1 error */
    int (*abort)(PyObject *h, PyObject *adm);                             /* 0 or -1 */
    int (*extend)(PyObject *h, PyObject *adm, const uint64_t *keys, Py_ssize_t m);   /* 0 or -1 */
    Py_ssize_t (*gpu_held)(PyObject *h);                                  /* GPU slots held (pinned + reserved) */
    Py_ssize_t (*num_resident)(PyObject *h, int tier);                    /* resident blocks of a tier (valid j) */
    int (*ntiers)(PyObject *h);
} PcsHierApi;

#endif
