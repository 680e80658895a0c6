/* The C-level API of pcs.cache._lruhier: the compiled hierarchy's step-scheduler calls as C functions.
 *
 * The module exports a PyCapsule named PCS_LRUHIER_CAPSULE holding one PcsHierApi (the numpy / datetime
 * pattern): another extension (pcs/engine/_stepsched.c) gets it once with PyCapsule_Import and then calls
 * start / prefill_done / finish / grow / abort / extend directly, without a Python call, an object per request,
 * an int object per key or an attribute lookup per field. Each function is the C body of the Python method of
 * the same name (pcs/cache/_lruhier.c: hier_start_ids, hier_prefill_done, ...), so the two paths cannot differ;
 * the rules are those of pcs.cache.hierarchy.Hierarchy (docs/semantics.md §3-§7). `h` must be a
 * pcs.cache._lruhier.Hierarchy (check Py_TYPE(h) == hier_type).
 *
 * A request's admission is a plain C struct (PcsAdm) the caller owns: start fills it, the other calls update it,
 * adm_free releases its buffers. A PcsAdm zeroed once may be passed to start again after its finish or abort:
 * its buffers are reused (no allocation per request once they are large enough). Its buffers are raw memory
 * (PyMem_RawMalloc), so these calls may run without the GIL when nogil(h) says the hierarchy calls no Python
 * code (no tier hosts a Python policy): an error then takes the GIL to set its exception.
 * Errors: -1 with a Python exception set, as the methods raise.
 */
#ifndef PCS_LRUHIER_API_H
#define PCS_LRUHIER_API_H
#include <Python.h>
#include <stdint.h>

#define PCS_LRUHIER_CAPSULE "pcs.cache._lruhier._C_API"
#define PCS_LRUHIER_API_VERSION 3

/* One running request's hold on the cache: the fields of pcs.cache.hierarchy.Admission, in blocks. */
typedef struct PcsAdm {
    Py_ssize_t prefix_hit_blocks, hit_blocks, last_hit_tier, reserved_blocks, gpu_lead_blocks;
    char truncated;
    char live;              /* 1 from a start that looked keys up to the finish or abort that drops their pins:
                               every hint in ents that is not -1 names the key's entry, pinned by this admission;
                               2 when moreover no hint is -1 (set by this module, never by the caller; an empty
                               chain's start leaves it as is) */
    int ntiers;
    uint64_t *keys;         /* pinned hashes (nused), then computed hashes (nnew), chain order; kcap allocated */
    int32_t *ents;          /* per key, a hint: its GPU table entry once pinned (-1: not known); kcap allocated.
                               Checked before use (the entry holds the key, pinned; of a live admission only that
                               it is pinned: its entries cannot leave the table while it holds them), else the key
                               is looked up */
    Py_ssize_t nused, nnew, kcap;
    Py_ssize_t *counts;     /* hit blocks per tier (ntiers), then restored blocks per tier (ntiers); ccap allocated */
    Py_ssize_t ccap;
} PcsAdm;

typedef struct {
    int version;                    /* PCS_LRUHIER_API_VERSION */
    PyTypeObject *hier_type;
    /* start_ids(keys[0 .. len), n, cap, extra, wait_if_full) into *a: 1 admitted, 0 it waits (the hierarchy and
     * a's fields unchanged; a's buffers may have been grown and their contents written), -1 */
    int (*start)(PyObject *h, const uint64_t *keys, Py_ssize_t len, Py_ssize_t n, Py_ssize_t cap,
                 Py_ssize_t extra, int wait, PcsAdm *a);
    int (*prefill_done)(PyObject *h, PcsAdm *a);                          /* 0 or -1 */
    int (*finish)(PyObject *h, PcsAdm *a);                                /* 0 or -1 */
    int (*grow)(PyObject *h, PcsAdm *a, Py_ssize_t n);                    /* 1 granted, 0 not, -1 error */
    int (*abort)(PyObject *h, PcsAdm *a);                                 /* 0 or -1 */
    int (*extend)(PyObject *h, PcsAdm *a, const uint64_t *keys, Py_ssize_t m);   /* 0 or -1 */
    void (*adm_free)(PcsAdm *a);                                          /* its buffers released (zeroed) */
    Py_ssize_t (*gpu_held)(PyObject *h);                                  /* GPU slots held (pinned + reserved) */
    Py_ssize_t (*num_resident)(PyObject *h, int tier);                    /* resident blocks of a tier (valid j) */
    int (*ntiers)(PyObject *h);
    int (*nogil)(PyObject *h);      /* 1: the calls above run no Python code (may run without the GIL) */
} PcsHierApi;

#endif
