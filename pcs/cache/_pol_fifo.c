/* fifo, compiled: the twin of pcs/cache/policies/fifo.py (libCacheSim libCacheSim/cache/eviction/FIFO.c with
 * pinning; docs/semantics.md §8). A block keeps the sequence number it got when it entered the tier (Entry.aux),
 * also across pins, and victims go in that order. Two places hold the known blocks, each in sequence order:
 * queue 0, where every block enters (numbers only grow, so appending keeps the order), and a min-heap of
 * (number, entry) for blocks that come back after a pin. A pinned block stays in queue 0 until a victim search
 * meets it at the front: it is parked (in neither) and, when released, goes to the heap with its old number.
 * The victim is the smaller of queue 0's front and the heap's top. Heap items are cleaned lazily (stale when the
 * entry no longer carries F_INHEAP and that number). O(1) per block but for blocks released after a search met
 * them pinned (O(log n)); the Python twin's heap (lazy removal) is O(log n) for all.
 *
 * Queue 0 is a ring of entry indices in number order, read from the front, with lazy deletion (kept in the Tier
 * fields of slru's segments, pcs/cache/_pol_slru.c -- sq[0], sqh[0], sqn[0], sqcap[0] -- which a fifo tier does not
 * use otherwise): sqh[0] and sqn[0] count the items read and written, item i at sq[0][i & (sqcap[0] - 1)], sqcap[0]
 * a power of two; an append puts the entry at the end and keeps its slot in the entry (Entry.prev; Entry.q 0, QNONE
 * when in no queue); taking a block out writes -1 over its item; the front passes stale items. The live items in
 * ring order are the linked list's in list order, so every victim is the list's. Why: the list's victims were a
 * chain of dependent reads of scattered entries (fifo_victims was a quarter of a 10x Mooncake replay's profile);
 * along the ring the victims' entries are known FQ_AHEAD items ahead and prefetched (a slot past the end holds an
 * old entry index or -1: a prefetch only). The ring is rebuilt (its live items copied to the front of a new one,
 * twice the live items and the appends or more) only when an append finds it full, so the items pass through it
 * once, not once per compaction (fq_room). Entry.next is not used (it chains the table's free list). */
#include "_lruhier.h"

#define FQ_AHEAD 16     /* victims' entries prefetched this many items ahead */

/* room for n more appends to queue 0's ring: when they do not fit, a new ring of at least twice the live items and
 * the n (a power of two, 64 or more) holding the live items from its first slot (their entries' slots rewritten);
 * 0 or -1 (MemoryError) */
static int fq_room(Tier *t, Py_ssize_t n) {
    if (t->sqn[0] - t->sqh[0] + n <= t->sqcap[0]) return 0;
    const Py_ssize_t live = t->qlen[0];
    Py_ssize_t c = 64;
    while (c < 2 * (live + n)) c *= 2;
    if (c >= INT32_MAX) { PyErr_NoMemory(); return -1; }
    int32_t *q = malloc(sizeof(int32_t) * (size_t)c);
    if (!q) { PyErr_NoMemory(); return -1; }
    Entry *const ent = t->ent;
    const int32_t *const old = t->sq[0];
    const Py_ssize_t m = t->sqcap[0] - 1;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = t->sqh[0]; i < t->sqn[0]; i++) {
        const int32_t e = old[i & m];
        if (e < 0) continue;
        ent[e].prev = (int32_t)k;
        q[k++] = e;
    }
    memset(q + k, 0xff, sizeof(int32_t) * (size_t)(c - k));     /* -1: no entry (read ahead by the pops) */
    free(t->sq[0]);
    t->sq[0] = q;
    t->sqcap[0] = c;
    t->sqh[0] = 0;
    t->sqn[0] = k;
    return 0;
}

/* e (in no queue) at the end of queue 0 (room made by fq_room) */
static inline void fq_append(Tier *t, Entry *x, int32_t e) {
    const int32_t slot = (int32_t)(t->sqn[0]++ & (t->sqcap[0] - 1));
    x->q = 0;
    x->prev = slot;
    t->sq[0][slot] = e;
    t->qlen[0]++;
}

/* e out of queue 0 (its item stale) */
static inline void fq_unlink(Tier *t, int32_t e) {
    Entry *x = &t->ent[e];
    t->sq[0][x->prev] = -1;
    t->qlen[0]--;
    x->q = QNONE;
    x->prev = -1;
}

/* queue 0's first live entry (the stale items before it passed), -1 when empty */
static inline int32_t fq_front(Tier *t) {
    if (!t->qlen[0]) return -1;
    const int32_t *const q = t->sq[0];
    const Py_ssize_t m = t->sqcap[0] - 1;
    Py_ssize_t h = t->sqh[0];
    while (q[h & m] < 0) h++;
    t->sqh[0] = h;
    const int32_t a = q[(h + FQ_AHEAD) & m];
    if (a >= 0) __builtin_prefetch(&t->ent[a], 1, 1);
    return q[h & m];
}

static int fifo_add(Tier *t, int32_t e, int reused) {
    (void)reused;
    Entry *x = &t->ent[e];
    if (!(x->flags & F_KNOWN)) {
        if (fq_room(t, 1) < 0) return -1;
        x->flags |= F_KNOWN;
        x->aux = t->next_seq++;
        fq_append(t, x, e);
        return 0;
    }
    if (x->q == 0 || (x->flags & F_INHEAP)) return 0;       /* still in place */
    x->flags |= F_INHEAP;                                     /* parked: back by its number */
    return heap_push(t, x->aux, e);
}

static void fifo_remove(Tier *t, int32_t e) { (void)t; (void)e; }   /* keeps its number and place */

static void fifo_drop(Tier *t, int32_t e) {
    if (t->ent[e].q == 0) fq_unlink(t, e);     /* in the heap: tdel clears its flags, the item goes stale */
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
        int32_t f = fq_front(t);
        while (f >= 0 && OUT(&t->ent[f])) {          /* pinned at the front: park it */
            fq_unlink(t, f);
            f = fq_front(t);
        }
        int32_t g = fifo_heap_top(t);
        if (g >= 0 && (f < 0 || t->ent[g].aux < t->ent[f].aux)) {
            heap_pop(t);
            t->ent[g].flags &= ~F_INHEAP;
            return g;
        }
        if (f >= 0) {
            fq_unlink(t, f);
            return f;
        }
    }
}

/* PolOps.add_run: fifo_add of each, queue 0's end and length and the next number in locals */
static int fifo_add_run(Tier *t, const int32_t *ents, Py_ssize_t n, int reused) {
    (void)reused;
    if (fq_room(t, n) < 0) return -1;
    Entry *const ent = t->ent;
    int32_t *const q = t->sq[0];
    const Py_ssize_t m = t->sqcap[0] - 1;
    Py_ssize_t p = t->sqn[0];
    int64_t seq = t->next_seq;
    Py_ssize_t k = 0;
    int rc = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t e = ents[i];
        Entry *x = &ent[e];
        if (!(x->flags & F_KNOWN)) {                          /* new: numbered, queue 0's last (fq_append) */
            x->flags |= F_KNOWN;
            x->aux = seq++;
            x->q = 0;
            x->prev = (int32_t)(p & m);
            q[p++ & m] = e;
            k++;
        } else if (x->q != 0 && !(x->flags & F_INHEAP)) {     /* parked: back by its number */
            x->flags |= F_INHEAP;
            if ((rc = heap_push(t, x->aux, e)) < 0) break;
        }
    }
    t->sqn[0] = p;
    t->qlen[0] += k;
    t->next_seq = seq;
    return rc;
}

/* PolOps.victims: fifo_victim n times (a victim's deletion changes neither queue 0 nor a live heap item). While the
 * heap is empty (no block parked and released: no push here) a victim is queue 0's first unpinned block and the
 * pinned ones before it are parked: the ring read from its front, the entries FQ_AHEAD items on prefetched. Else
 * (and for the victims past queue 0's end there) fifo_victim's choice in one loop: the heap's top is cleaned once
 * per heap pop instead of once per victim (no victim changes a heap item's flags or the heap but by its own pop). */
static int fifo_victims(Tier *t, Py_ssize_t n, int32_t *out) {
    Py_ssize_t i = 0;
    Entry *const ent = t->ent;
    if (!t->hlen && t->qlen[0]) {
        const int32_t *const q = t->sq[0];
        const Py_ssize_t m = t->sqcap[0] - 1, end = t->sqn[0];
        Py_ssize_t h = t->sqh[0], popped = 0;
        while (i < n && h < end) {
            const int32_t e = q[h & m], a = q[(h + FQ_AHEAD) & m];
            if (a >= 0) __builtin_prefetch(&ent[a], 1, 1);
            h++;
            if (e < 0) continue;
            Entry *const x = &ent[e];
            if (!OUT(x)) out[i++] = e;            /* else parked (in neither) */
            x->prev = -1;
            x->q = QNONE;
            popped++;
        }
        t->sqh[0] = h;
        t->qlen[0] -= popped;
    }
    if (i == n) return 0;
    int32_t g = fifo_heap_top(t);
    while (i < n) {                               /* fifo_victim's choice, the heap's top cleaned once per pop */
        const int32_t f = fq_front(t);
        if (f >= 0 && OUT(&ent[f])) {            /* pinned at the front: parked */
            fq_unlink(t, f);
        } else if (g >= 0 && (f < 0 || ent[g].aux < ent[f].aux)) {
            heap_pop(t);
            ent[g].flags &= ~F_INHEAP;
            out[i++] = g;
            g = fifo_heap_top(t);
        } else {                                  /* f >= 0: n <= held */
            fq_unlink(t, f);
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

/* queue 0's ring in number order, each live item's entry pointing back at its slot; NULL or what is wrong */
static const char *fq_check(Tier *t) {
    Py_ssize_t live = 0;
    int64_t last = -1;
    if (t->sqn[0] - t->sqh[0] > t->sqcap[0]) return "queue 0's ring holds more items than its slots";
    for (Py_ssize_t i = t->sqh[0]; i < t->sqn[0]; i++) {
        const Py_ssize_t slot = i & (t->sqcap[0] - 1);
        const int32_t e = t->sq[0][slot];
        if (e < 0) continue;
        live++;
        if (t->ent[e].q != 0 || t->ent[e].prev != slot) return "queue 0's item and its entry disagree";
        if (t->ent[e].aux <= last) return "queue 0 out of sequence order";
        last = t->ent[e].aux;
    }
    return live == t->qlen[0] ? NULL : "queue 0's live items differ from its length";
}

static const char *fifo_check(Tier *t) {
    const char *bad = fq_check(t);
    if (bad) return bad;
    Py_ssize_t held = 0;
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

static void fifo_fini(Tier *t) {
    free(t->sq[0]);
    t->sq[0] = NULL;
    t->sqh[0] = t->sqn[0] = t->sqcap[0] = 0;
}

const PolOps POL_FIFO = {
    .name = "fifo", .fini = fifo_fini, .add = fifo_add, .remove = fifo_remove, .drop = fifo_drop,
    .touch = fifo_touch, .victim = fifo_victim, .order = fifo_order, .check = fifo_check, .forget = fifo_forget,
    .add_run = fifo_add_run, .victims = fifo_victims,
};
