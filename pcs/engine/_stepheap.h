/* pcs.engine._stepsched's event queues (its `fin` and `blk` queues) of (step, seq, epoch, slot) entries, least first.
 *
 * The Python reference (pcs/engine/scheduler.py, StepEngine) keeps each queue as a heapq of tuples
 * (step, seq, epoch, request) and pops the least tuple first; these queues pop in the same order. The (step, seq)
 * pairs of the entries in one queue are distinct, so they alone order it and the epoch never decides: seq numbers
 * an admission (one per admission, _stepsched.c admit), an admission pushes one `fin` entry (prefill_complete)
 * and its `blk` entries at strictly increasing steps (push_boundary from the step after the one popped). Any
 * structure that pops that total order pops the same sequence.
 *
 * A queue (EvQ) is a ring of EVQ_W buckets, one per step of a window [base, base + EVQ_W), each bucket a list
 * sorted by seq (a few entries: the requests due at that step), with a bit per non-empty bucket; an entry pushed
 * outside the window goes to a 4-ary min-heap beside it (Heap below: a decode longer than the window, or a step
 * below base, which the loop never pushes). The least entry is the ring's first bucket's head or the heap's top,
 * whichever key is less. base follows the steps popped (the loop pushes at steps >= the last popped, its clock
 * only goes on), so the ring's entries are always within one window of its least step. A push or a pop is a few
 * dozen instructions (the next bucket found by a bit scan over 64 buckets a word), against ~250 a pop of the
 * heap over a few hundred decoding requests. The heap's step and seq are packed into one 128-bit key (each biased
 * by 2^63 so that the unsigned order of the key is the signed order of the pair), compared at once. Included
 * after pcs/_nogil.h: its PyMem_Realloc and PyErr_NoMemory are safe without the GIL.
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

/* ---------------------------------------------------------------- the ring of steps (EvQ) */
#define EVQ_W 4096                      /* steps in the ring's window (a power of 2) */
#define EVQ_WORDS (EVQ_W / 64)

typedef struct { int64_t seq, ep; int32_t r, next; } EvNode;     /* next: the bucket's next node, 0 at its end */
typedef struct {
    Heap far;                       /* entries pushed outside the window */
    EvNode *node;                   /* the pool: node ids 1 .. used (0 = none), free ones listed from free_ */
    int32_t cap, used, free_;
    int32_t head[EVQ_W];            /* per bucket (step & (EVQ_W - 1)): its first node, by seq; 0 empty */
    uint64_t bits[EVQ_WORDS];       /* the non-empty buckets */
    int64_t base, rmin;             /* the window's first step; the ring's least step (with rn) */
    Py_ssize_t rn, n;               /* entries in the ring; in the queue */
} EvQ;

static inline int evq_bucket(int64_t step) { return (int)(step & (EVQ_W - 1)); }

/* a new node's id (the pool grown when full: cold); > 0, or -1 with MemoryError */
static int32_t evq_node_new(EvQ *q) {
    if (q->used + 1 >= q->cap) {
        int32_t c = q->cap ? 2 * q->cap : 256;
        EvNode *a = PyMem_Realloc(q->node, sizeof(EvNode) * (size_t)c);
        if (!a) { PyErr_NoMemory(); return -1; }
        q->node = a; q->cap = c;
    }
    return ++q->used;
}

/* push (step, seq, ep, r); 0, or -1 with MemoryError. Inline at its call sites (once or twice per request), with
 * the far heap and the pool's growth out of line. */
static inline __attribute__((always_inline)) int evq_push(EvQ *q, int64_t step, int64_t seq, int64_t ep, int32_t r) {
    if (step < q->base || step - q->base >= EVQ_W) {
        if (heap_push(&q->far, step, seq, ep, r) < 0) return -1;
        q->n++;
        return 0;
    }
    int32_t id = q->free_;
    if (id) q->free_ = q->node[id].next;
    else if ((id = evq_node_new(q)) < 0) return -1;
    EvNode *x = &q->node[id];
    x->seq = seq; x->ep = ep; x->r = r;
    int b = evq_bucket(step);
    int32_t *at = &q->head[b];
    while (*at && q->node[*at].seq < seq) at = &q->node[*at].next;
    x->next = *at;
    *at = id;
    q->bits[b >> 6] |= (uint64_t)1 << (b & 63);
    if (!q->rn || step < q->rmin) q->rmin = step;
    q->rn++; q->n++;
    return 0;
}

/* the least entry is the ring's (the queue is not empty) */
static inline int evq_ring_first(const EvQ *q) {
    if (!q->rn) return 0;
    if (!q->far.n) return 1;
    return hkey_lt(hkey(q->rmin, q->node[q->head[evq_bucket(q->rmin)]].seq), q->far.a[0].ks);
}

/* the least entry (the queue is not empty) */
static inline HEnt evq_top(const EvQ *q) {
    if (!evq_ring_first(q)) return q->far.a[0];
    const EvNode *x = &q->node[q->head[evq_bucket(q->rmin)]];
    HEnt e = {hkey(q->rmin, x->seq), x->ep, x->r};
    return e;
}

/* the least entry's step (the queue is not empty) */
static inline int64_t evq_top_step(const EvQ *q) {
    if (!q->far.n) return q->rmin;
    int64_t f = heap_top_step(&q->far);
    return q->rn && q->rmin < f ? q->rmin : f;
}

/* steps from bucket b to the next non-empty one after it, circularly (one is) */
static int64_t evq_gap(const EvQ *q, int b) {
    int w = b >> 6;
    uint64_t m = q->bits[w] & ((~(uint64_t)0 << (b & 63)) << 1);
    for (int i = 0; i <= EVQ_WORDS; i++) {
        if (m) return (((w << 6) | __builtin_ctzll(m)) - b) & (EVQ_W - 1);
        w = (w + 1) & (EVQ_WORDS - 1);
        m = q->bits[w];
    }
    return 0;                       /* never: the ring is not empty */
}

/* remove the least entry (the queue is not empty); inline at its call sites, as evq_push */
static inline __attribute__((always_inline)) void evq_pop(EvQ *q) {
    int64_t step;
    if (evq_ring_first(q)) {
        int b = evq_bucket(q->rmin);
        int32_t id = q->head[b];
        q->head[b] = q->node[id].next;
        q->node[id].next = q->free_;
        q->free_ = id;
        step = q->rmin;
        q->rn--;
        if (!q->head[b]) {
            q->bits[b >> 6] &= ~((uint64_t)1 << (b & 63));
            if (q->rn) q->rmin += evq_gap(q, b);
        }
    } else {
        step = heap_top_step(&q->far);
        heap_pop(&q->far);
    }
    q->n--;
    if (step > q->base) q->base = step;     /* every entry left is at >= step: the window may start there */
}

static void evq_free(EvQ *q) {
    PyMem_Free(q->far.a);
    PyMem_Free(q->node);
}

#endif
