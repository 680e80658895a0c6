/* An indexed 4-ary min-heap of a tier's entries, shared by the compiled policies that rank blocks by a key:
 * pcs/cache/_pol_gdsf.c (smallest (H, stamp) first) and pcs/cache/_pol_belady.c (farthest next use first).
 *
 * Each item is (a, b, entry), ordered by (a, b) as unsigned 64-bit integers; each entry in a heap knows its
 * place, the last int64 of its record of `stride` int64s in t->ex (-1: in no heap), so a key changes and an
 * entry leaves in place, O(log n), and the heap holds exactly the entries its policy ranks: no stale items, no
 * table probe to validate one. A tier's heaps are t->ih[0 .. n) (IHeap: the items, their count, the room),
 * allocated by the policy's init (ih_alloc) and freed by its fini (ih_free); belady keeps two.
 * The policies' keys are unique per entry (a strict order), so which entry is on top depends only on the keys,
 * never on the heap's shape or the order of the operations: the same victim as the lazy heaps of the Python
 * references (pcs/cache/policies/gdsf.py, belady.py: heapq with stale items skipped when popped).
 * 4-ary (children of i: 4i + 1 .. 4i + 4): half the levels of a binary heap, the children of one item read
 * together. Errors: ih_insert raises MemoryError (returns -1); nothing else allocates. */
#ifndef PCS_IHEAP_H
#define PCS_IHEAP_H
#include "_lruhier.h"

typedef struct { uint64_t a, b; int64_t e; } IHItem;
typedef struct IHeap { IHItem *q; Py_ssize_t len, cap; } IHeap;

/* the place in the heap of entry e whose t->ex record is `stride` int64s long (its last one) */
#define IH_POS(t, e, stride) ((t)->ex[(Py_ssize_t)(stride) * (e) + (stride) - 1])

static inline int ih_less(const IHItem *x, const IHItem *y) { return x->a < y->a || (x->a == y->a && x->b < y->b); }

/* a double (not NaN) as an unsigned integer of the same order; -0.0 as 0.0 (they compare equal) */
static inline uint64_t ih_double_rank(double d) {
    uint64_t u;
    d += 0.0;
    memcpy(&u, &d, sizeof u);
    return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
}

/* room for the t->ex record (`stride` int64s) of entry e; 0 or -1 (MemoryError) */
static inline int ih_reserve_ex(Tier *t, int32_t e, int stride) {
    Py_ssize_t need = (Py_ssize_t)stride * ((Py_ssize_t)e + 1);
    return need <= t->excap ? 0 : PCS_GROW(t->ex, &t->excap, need, (Py_ssize_t)stride * 128);
}

/* n empty heaps as t->ih (a policy's init); 0 or -1 (MemoryError) */
static inline int ih_alloc(Tier *t, int n) {
    t->ih = PyMem_Calloc(n, sizeof(IHeap));
    if (!t->ih) { PyErr_NoMemory(); return -1; }
    t->nih = n;
    return 0;
}

/* t->ih and its items freed (a policy's fini) */
static inline void ih_free(Tier *t) {
    for (int k = 0; k < t->nih; k++) PyMem_Free(t->ih[k].q);
    PyMem_Free(t->ih);
    t->ih = NULL;
    t->nih = 0;
}

/* item it at place i of heap h */
static inline void ih_put(Tier *t, IHeap *h, Py_ssize_t i, IHItem it, int stride) {
    h->q[i] = it;
    IH_POS(t, it.e, stride) = i;
}

/* the smallest child of place i among the first n places, or -1 (a leaf) */
static inline Py_ssize_t ih_least_child(const IHItem *q, Py_ssize_t i, Py_ssize_t n) {
    Py_ssize_t c = 4 * i + 1, best = c;
    if (c >= n) return -1;
    Py_ssize_t end = c + 4 < n ? c + 4 : n;
    for (Py_ssize_t d = c + 1; d < end; d++) if (ih_less(&q[d], &q[best])) best = d;
    return best;
}

/* item it into vacant place i, moved up past every ancestor it precedes */
static inline void ih_up(Tier *t, IHeap *h, Py_ssize_t i, IHItem it, int stride) {
    IHItem *q = h->q;
    for (Py_ssize_t up; i > 0 && ih_less(&it, &q[up = (i - 1) / 4]); i = up) ih_put(t, h, i, q[up], stride);
    ih_put(t, h, i, it, stride);
}

/* item it into vacant place i, moved down past every smallest child that precedes it */
static inline void ih_down(Tier *t, IHeap *h, Py_ssize_t i, IHItem it, int stride) {
    IHItem *q = h->q;
    for (Py_ssize_t c; (c = ih_least_child(q, i, h->len)) >= 0 && ih_less(&q[c], &it); i = c)
        ih_put(t, h, i, q[c], stride);
    ih_put(t, h, i, it, stride);
}

/* item it into vacant place i, up or down to where it belongs */
static inline void ih_fix(Tier *t, IHeap *h, Py_ssize_t i, IHItem it, int stride) {
    if (i > 0 && ih_less(&it, &h->q[(i - 1) / 4])) ih_up(t, h, i, it, stride);
    else ih_down(t, h, i, it, stride);
}

/* entry e (in no heap) into h with key (a, b); 0 or -1 (MemoryError) */
static inline int ih_insert(Tier *t, IHeap *h, uint64_t a, uint64_t b, int32_t e, int stride) {
    if (h->len == h->cap && PCS_GROW(h->q, &h->cap, h->len + 1, 256) < 0) return -1;
    IHItem it = {a, b, e};
    ih_up(t, h, h->len++, it, stride);
    return 0;
}

/* entry e out of heap h (nothing if it is in no heap; else h must be its heap). Its place, a hole, goes down to a leaf by the smallest child (3
 * comparisons a level, not 4), then the last item fills it and goes up (Wegener's bottom-up heapsort step: the
 * last item is a leaf's, it seldom goes far up) */
static inline void ih_delete(Tier *t, IHeap *h, int32_t e, int stride) {
    Py_ssize_t i = IH_POS(t, e, stride);
    if (i < 0) return;
    IH_POS(t, e, stride) = -1;
    IHItem *q = h->q;
    Py_ssize_t n = --h->len;
    if (i == n) return;
    for (Py_ssize_t c; (c = ih_least_child(q, i, n)) >= 0; i = c) ih_put(t, h, i, q[c], stride);
    ih_up(t, h, i, q[n], stride);
}

/* entry e, in heap h, gets key (a, b) */
static inline void ih_rekey(Tier *t, IHeap *h, int32_t e, uint64_t a, uint64_t b, int stride) {
    IHItem it = {a, b, e};
    ih_fix(t, h, IH_POS(t, e, stride), it, stride);
}

/* the entry on top of h (h must not be empty) */
static inline int32_t ih_top(const IHeap *h) { return (int32_t)h->q[0].e; }

/* NULL if heap h is sound: every item after its parent, every entry's place its item's */
static inline const char *ih_check(const Tier *t, const IHeap *h, int stride) {
    const IHItem *q = h->q;
    for (Py_ssize_t i = 0; i < h->len; i++) {
        if (q[i].e < 0 || q[i].e >= t->ent_len || IH_POS(t, q[i].e, stride) != i) return "heap places";
        if (i > 0 && ih_less(&q[i], &q[(i - 1) / 4])) return "heap order";
    }
    return NULL;
}

static int ih_cmp(const void *x, const void *y) {
    return ih_less(x, y) ? -1 : ih_less(y, x);
}

/* PolOps.order of a keyed policy: the entries its policy holds (seen, not taken out), smallest key(t, e) first,
 * into out (room for t->nres); their count, or -1 (MemoryError). Held entries outside the heap (GDSF's) count
 * too: the order reads the policy's keys, not the heap. */
static inline Py_ssize_t ih_order(Tier *t, int32_t *out, IHItem (*key)(Tier *t, int32_t e)) {
    IHItem *tmp = PyMem_Malloc(sizeof(IHItem) * (t->nres + 1));
    if (!tmp) { PyErr_NoMemory(); return -1; }
    Py_ssize_t n = 0;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if ((x->flags & F_KNOWN) && !OUT(x)) tmp[n++] = key(t, e);
    }
    qsort(tmp, n, sizeof(IHItem), ih_cmp);
    for (Py_ssize_t i = 0; i < n; i++) out[i] = (int32_t)tmp[i].e;
    PyMem_Free(tmp);
    return n;
}

#endif
