/* fifo, compiled: the twin of pcs/cache/policies/fifo.py (libCacheSim libCacheSim/cache/eviction/FIFO.c with
 * pinning; docs/semantics.md §8). A block keeps the sequence number it got when it entered the tier (Entry.aux),
 * also across pins, and victims go in that order. Two places hold the known blocks, each in sequence order:
 * queue 0, where every block enters (numbers only grow, so appending keeps the order), and a min-heap of
 * (number, entry) for blocks that come back after a pin. A pinned block stays in queue 0 until a victim search
 * meets it at the front: it is parked (in neither) and, when released, goes to the heap with its old number.
 * The victim is the smaller of queue 0's front and the heap's top. Heap items are cleaned lazily (stale when the
 * entry no longer carries F_INHEAP and that number). O(1) per block but for blocks released after a search met
 * them pinned (O(log n)); the Python twin's heap (lazy removal) is O(log n) for all. */
#include "_lruhier.h"

static int fifo_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (!(x->flags & F_KNOWN)) {
        x->flags |= F_KNOWN;
        x->aux = t->next_seq++;
        q_append(t, 0, e);
        return 0;
    }
    if (x->q == 0 || (x->flags & F_INHEAP)) return 0;       /* still in place */
    x->flags |= F_INHEAP;                                     /* parked: back by its number */
    return heap_push(t, x->aux, e);
}

static void fifo_remove(Tier *t, int32_t e) { (void)t; (void)e; }   /* keeps its number and place */

static void fifo_drop(Tier *t, int32_t e) {
    if (t->ent[e].q == 0) q_unlink(t, e);      /* in the heap: tdel clears its flags, the item goes stale */
}

/* RetainingPolicy._forget (pcs/cache/_retain.c): a pinned block leaving from the retain pool loses its place
 * (fifo.py add then drop: its number is gone; stored again it enters at the back) */
static void fifo_forget(Tier *t, int32_t e) { fifo_drop(t, e); }

static void fifo_touch(Tier *t, int32_t e) { (void)t; (void)e; }

/* the heap's first live unpinned item (its entry), the stale items and the pinned ones (parked) before it popped;
 * -1 when none (fifo_victim's heap step) */
static inline int32_t fifo_heap_top(Tier *t) {
    while (t->hlen) {
        const int32_t e = (int32_t)t->heap[1];
        Entry *x = &t->ent[e];
        if ((x->flags & F_INHEAP) && x->aux == t->heap[0]) {
            if (!OUT(x)) return e;
            x->flags &= ~F_INHEAP;                /* pinned: parked until released */
        }
        heap_pop(t);
    }
    return -1;
}

static inline __attribute__((always_inline)) int32_t fifo_victim(Tier *t) {
    for (;;) {
        int32_t f = t->qhead[0];
        while (f >= 0 && OUT(&t->ent[f])) {          /* pinned at the front: park it */
            q_unlink(t, f);
            f = t->qhead[0];
        }
        int32_t g = fifo_heap_top(t);
        if (g >= 0 && (f < 0 || t->ent[g].aux < t->ent[f].aux)) {
            heap_pop(t);
            t->ent[g].flags &= ~F_INHEAP;
            return g;
        }
        if (f >= 0) {
            q_unlink(t, f);
            return f;
        }
    }
}

/* PolOps.add_run: fifo_add of each, queue 0's tail and length and the next number in locals */
static int fifo_add_run(Tier *t, const int32_t *ents, Py_ssize_t n, int reused) {
    (void)reused;
    Entry *const ent = t->ent;
    int32_t tail = t->qtail[0];
    int64_t seq = t->next_seq;
    Py_ssize_t k = 0;
    int rc = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t e = ents[i];
        Entry *x = &ent[e];
        if (!(x->flags & F_KNOWN)) {                          /* new: numbered, queue 0's last (q_append) */
            x->flags |= F_KNOWN;
            x->aux = seq++;
            x->q = 0;
            x->prev = tail;
            x->next = -1;
            if (tail >= 0) ent[tail].next = e; else t->qhead[0] = e;
            tail = e;
            k++;
        } else if (x->q != 0 && !(x->flags & F_INHEAP)) {     /* parked: back by its number */
            x->flags |= F_INHEAP;
            if ((rc = heap_push(t, x->aux, e)) < 0) break;
        }
    }
    t->qtail[0] = tail;
    t->qlen[0] += k;
    t->next_seq = seq;
    return rc;
}

/* PolOps.victims: fifo_victim n times (a victim's deletion changes neither queue 0 nor a live heap item). While the
 * heap is empty (no block parked and released: no push here) a victim is queue 0's first unpinned block and the
 * pinned ones before it are parked: the front popped with its head in a local, queue 0 mended once. Else (and for
 * the victims past queue 0's end there) fifo_victim's choice in one loop: the heap's top is cleaned once per heap pop
 * instead of once per victim (no victim changes a heap item's flags or the heap but by its own pop). */
static int fifo_victims(Tier *t, Py_ssize_t n, int32_t *out) {
    Py_ssize_t i = 0;
    if (!t->hlen) {
        Entry *const ent = t->ent;
        int32_t e = t->qhead[0];
        Py_ssize_t popped = 0;
        while (i < n && e >= 0) {
            Entry *const x = &ent[e];
            if (!OUT(x)) out[i++] = e;            /* else parked (in neither) */
            const int32_t nx = x->next;
            x->prev = x->next = -1;
            x->q = QNONE;
            popped++;
            e = nx;
        }
        t->qhead[0] = e;
        if (e >= 0) ent[e].prev = -1; else t->qtail[0] = -1;
        t->qlen[0] -= popped;
    }
    if (i == n) return 0;
    Entry *const ent = t->ent;
    int32_t g = fifo_heap_top(t);
    while (i < n) {                               /* fifo_victim's choice, the heap's top cleaned once per pop */
        const int32_t f = t->qhead[0];
        if (f >= 0 && OUT(&ent[f])) {            /* pinned at the front: parked */
            q_unlink(t, f);
        } else if (g >= 0 && (f < 0 || ent[g].aux < ent[f].aux)) {
            heap_pop(t);
            ent[g].flags &= ~F_INHEAP;
            out[i++] = g;
            g = fifo_heap_top(t);
        } else {                                  /* f >= 0: n <= held */
            q_unlink(t, f);
            out[i++] = f;
        }
    }
    return 0;
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
    int64_t last = -1;
    for (int32_t e = t->qhead[0]; e >= 0; e = t->ent[e].next) {
        if (t->ent[e].aux <= last) return "queue 0 out of sequence order";
        last = t->ent[e].aux;
    }
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if (!(x->flags & F_KNOWN)) continue;
        if (x->aux < 0 || x->aux >= t->next_seq) return "sequence number out of range";
        if (x->q == 0 && (x->flags & F_INHEAP)) return "a block both in queue 0 and in the heap";
        if (!OUT(x)) {
            held++;
            if (x->q != 0 && !(x->flags & F_INHEAP)) return "held block in neither queue 0 nor the heap";
        }
    }
    return held == t->held ? NULL : "held count differs from the known unpinned blocks";
}

const PolOps POL_FIFO = {
    .name = "fifo", .add = fifo_add, .remove = fifo_remove, .drop = fifo_drop, .touch = fifo_touch,
    .victim = fifo_victim, .order = fifo_order, .check = fifo_check, .forget = fifo_forget,
    .add_run = fifo_add_run, .victims = fifo_victims,
};
