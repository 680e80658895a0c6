/* pcs.engine._stepsched's event heaps (its `fin` and `blk` queues): a 4-ary min-heap of (step, seq, epoch, slot).
 *
 * The Python reference (pcs/engine/scheduler.py, StepEngine) keeps each queue as a heapq of tuples
 * (step, seq, epoch, request) and pops the least tuple first; this heap pops in the same order. The (step, seq)
 * pairs of the entries in one heap are distinct, so they alone order it and the epoch never decides: seq numbers
 * an admission (one per admission, _stepsched.c admit), an admission pushes one `fin` entry (prefill_complete)
 * and its `blk` entries at strictly increasing steps (push_boundary from the step after the one popped). A
 * total order pops the same sequence from a heap of any arity. The step and the seq are packed into one
 * 128-bit key (each biased by 2^63 so that the unsigned order of the key is the signed order of the pair),
 * compared at once. Four children per node: half the levels of a binary heap (the fin heap holds the decoding
 * requests, up to max_num_seqs: 5 levels for 1024), the children in one or two
 * cache lines. Included after pcs/_nogil.h: its PyMem_Realloc and PyErr_NoMemory are safe without the GIL.
 */
#ifndef PCS_STEPHEAP_H
#define PCS_STEPHEAP_H
#include <Python.h>
#include <stdint.h>
#include "../_nogil.h"

#define HEAP_ARITY 4                    /* heap_pop unrolls a full node's children: 4 */
#define HEAP_BIAS ((uint64_t)1 << 63)   /* int64 -> uint64 preserving order */

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 HKey;
static inline HKey hkey(int64_t step, int64_t seq) {
    return ((HKey)((uint64_t)step ^ HEAP_BIAS) << 64) | ((uint64_t)seq ^ HEAP_BIAS);
}
static inline int hkey_lt(HKey a, HKey b) { return a < b; }
static inline int64_t hkey_step(HKey a) { return (int64_t)((uint64_t)(a >> 64) ^ HEAP_BIAS); }
#else
typedef struct { uint64_t hi, lo; } HKey;
static inline HKey hkey(int64_t step, int64_t seq) {
    HKey k = {(uint64_t)step ^ HEAP_BIAS, (uint64_t)seq ^ HEAP_BIAS};
    return k;
}
static inline int hkey_lt(HKey a, HKey b) { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); }
static inline int64_t hkey_step(HKey a) { return (int64_t)(a.hi ^ HEAP_BIAS); }
#endif

typedef struct { HKey ks; int64_t ep; int32_t r; } HEnt;     /* ks = (step, seq); r = the request's slot */
typedef struct { HEnt *a; Py_ssize_t n, cap; } Heap;

static inline int heap_less(const HEnt *x, const HEnt *y) { return hkey_lt(x->ks, y->ks); }

/* the least entry's step (the heap is not empty) */
static inline int64_t heap_top_step(const Heap *h) { return hkey_step(h->a[0].ks); }

/* push (step, seq, ep, r); 0, or -1 with MemoryError */
static int heap_push(Heap *h, int64_t step, int64_t seq, int64_t ep, int32_t r) {
    if (h->n == h->cap) {
        Py_ssize_t c = h->cap ? 2 * h->cap : 64;
        HEnt *a = PyMem_Realloc(h->a, sizeof(HEnt) * (size_t)c);
        if (!a) { PyErr_NoMemory(); return -1; }
        h->a = a; h->cap = c;
    }
    Py_ssize_t i = h->n++;
    HEnt e = {hkey(step, seq), ep, r};
    while (i > 0) {
        Py_ssize_t up = (i - 1) / HEAP_ARITY;
        if (!heap_less(&e, &h->a[up])) break;
        h->a[i] = h->a[up]; i = up;
    }
    h->a[i] = e;
    return 0;
}

/* the least child so far (bk, at best) against child j */
#define HEAP_MIN(j) do { HKey kj_ = h->a[(j)].ks; if (hkey_lt(kj_, bk)) { bk = kj_; best = (j); } } while (0)

/* remove the least entry (the heap is not empty) */
static void heap_pop(Heap *h) {
    HEnt last = h->a[--h->n];
    Py_ssize_t i = 0, n = h->n;
    for (;;) {
        Py_ssize_t c = HEAP_ARITY * i + 1, end = c + HEAP_ARITY < n ? c + HEAP_ARITY : n;
        if (c >= n) break;
        Py_ssize_t best = c;
        HKey bk = h->a[c].ks;
        if (end == c + 4) {             /* a full node (most): the three comparisons unrolled */
            HEAP_MIN(c + 1); HEAP_MIN(c + 2); HEAP_MIN(c + 3);
        } else for (Py_ssize_t j = c + 1; j < end; j++) HEAP_MIN(j);
        if (!hkey_lt(bk, last.ks)) break;
        h->a[i] = h->a[best]; i = best;
    }
    if (n) h->a[i] = last;
}

#endif
