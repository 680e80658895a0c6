/* fifo, compiled: the twin of pcs/cache/policies/fifo.py (libCacheSim libCacheSim/cache/eviction/FIFO.c with
 * pinning; docs/semantics.md §8). A block keeps the sequence number it got when it entered the tier (Entry.aux),
 * also across pins; victims come from a min-heap of (sequence number, entry), cleaned lazily: an item is stale
 * when its entry no longer carries that number (dropped, evicted, reused), and a pinned block met at the top
 * leaves the heap until it is released. O(log n) per block, as the Python twin's SortedDict. */
#include "_lruhier.h"

static int fifo_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (!(x->flags & F_KNOWN)) {
        x->flags |= F_KNOWN;
        x->aux = t->next_seq++;
    }
    if (x->flags & F_INHEAP) return 0;
    x->flags |= F_INHEAP;
    return heap_push(t, x->aux, e);
}

static void fifo_remove(Tier *t, int32_t e) { (void)t; (void)e; }   /* keeps its number; skipped while pinned */

static void fifo_drop(Tier *t, int32_t e) { (void)t; (void)e; }     /* tdel clears the number: its item goes stale */

static void fifo_touch(Tier *t, int32_t e) { (void)t; (void)e; }

static int32_t fifo_victim(Tier *t) {
    for (;;) {
        int64_t s = t->heap[0];
        int32_t e = (int32_t)t->heap[1];
        heap_pop(t);
        Entry *x = &t->ent[e];
        if (!(x->flags & F_KNOWN) || x->aux != s) continue;   /* stale */
        x->flags &= ~F_INHEAP;
        if (OUT(x)) continue;                                  /* back in the heap when released */
        return e;
    }
}

static int cmp_seq(const void *a, const void *b) {
    int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
    return (x > y) - (x < y);
}

static Py_ssize_t fifo_order(Tier *t, int32_t *out) {
    int64_t *tmp = PyMem_Malloc(sizeof(int64_t) * 2 * (t->nres + 1));
    if (!tmp) { PyErr_NoMemory(); return -1; }
    Py_ssize_t n = 0;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if ((x->flags & F_KNOWN) && !OUT(x)) { tmp[2 * n] = x->aux; tmp[2 * n + 1] = e; n++; }
    }
    qsort(tmp, n, 2 * sizeof(int64_t), cmp_seq);
    for (Py_ssize_t i = 0; i < n; i++) out[i] = (int32_t)tmp[2 * i + 1];
    PyMem_Free(tmp);
    return n;
}

static const char *fifo_check(Tier *t) {
    Py_ssize_t held = 0;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if (!(x->flags & F_KNOWN)) continue;
        if (x->aux < 0 || x->aux >= t->next_seq) return "sequence number out of range";
        if (!OUT(x)) {
            held++;
            if (!(x->flags & F_INHEAP)) return "held block without a heap item";
        }
    }
    return held == t->held ? NULL : "held count differs from the known unpinned blocks";
}

const PolOps POL_FIFO = {
    .name = "fifo", .add = fifo_add, .remove = fifo_remove, .drop = fifo_drop, .touch = fifo_touch,
    .victim = fifo_victim, .order = fifo_order, .check = fifo_check,
};
