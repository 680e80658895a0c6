/* slru (alias protected), compiled: the twin of pcs/cache/policies/slru.py (segmented LRU, Karedla, Love and
 * Wherry 1994; libCacheSim SLRU.c; docs/semantics.md §8). Segment 0 = probation, 1 = protected, each front = LRU.
 * opt[0] = the protected segment's size in blocks (floor(protected_share x capacity), from the Python policy).
 * A block released as reused (a hit) or touched goes to protected; protected overflow goes to probation's MRU
 * end at the end of the batch; victims from probation first. Pinned blocks leave their segment.
 *
 * Each segment is an array of entry indices in list order, read from the front, with lazy deletion (as the inline
 * LRU order of pcs/cache/_lruq.h): an append puts the entry at the end and keeps its index in the entry (Entry.prev;
 * Entry.q its segment, QNONE none); taking a block out writes -1 over its item, so no neighbour entry is read or
 * written (a doubly linked list mended two scattered entries per unlink, and its victims were a chain of dependent
 * reads); the front passes the stale items. The live items in array order are the list's blocks in list order, so
 * every victim and demotion is the list's. Tier fields: sq[s] (sqcap[s] + SQ_AHEAD items allocated, -1 past the
 * end), [sqh[s], sqn[s]) read, qlen[s] the live items. An array holds at least 2 x the blocks the policy holds
 * (slru_room, in the adds, which may fail: the blocks held grow only there), so an append at its end that moves the
 * live items to the front (sq_compact) always makes room and is paid by half the array's appends; touches and
 * demotions (which cannot fail) only compact. Entry.next is not used (it chains the table's free list). */
#include "_lruhier.h"

enum { PROB = 0, PROT = 1 };
#define SQ_AHEAD 16     /* victims' entries prefetched this many items ahead */

/* the live items of segment s moved to the front of its array (their entries' positions rewritten) */
static void sq_compact(Tier *t, int s) {
    int32_t *const q = t->sq[s];
    Entry *const ent = t->ent;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = t->sqh[s]; i < t->sqn[s]; i++) {
        const int32_t e = q[i];
        if (e < 0) continue;
        ent[e].prev = (int32_t)k;
        q[k++] = e;
    }
    for (Py_ssize_t i = k; i < t->sqn[s]; i++) q[i] = -1;     /* (read ahead by sq_pop: -1 past the end) */
    t->sqh[s] = 0;
    t->sqn[s] = k;
}

/* both arrays sized for `total` blocks held (2 x total items, at least 64), compacted into a larger one when not;
 * 0 or -1 (MemoryError) */
static int slru_room(Tier *t, Py_ssize_t total) {
    const Py_ssize_t want = 2 * total + 64;
    for (int s = 0; s < 2; s++) {
        if (t->sqcap[s] >= want) continue;
        Py_ssize_t c = t->sqcap[s] * 2 > want ? t->sqcap[s] * 2 : want;
        if (c >= INT32_MAX - SQ_AHEAD) { PyErr_NoMemory(); return -1; }
        if (t->sq[s]) sq_compact(t, s);
        const Py_ssize_t had = t->sq[s] ? t->sqcap[s] + SQ_AHEAD : 0;    /* (-1 from sqn to had already) */
        int32_t *q = realloc(t->sq[s], sizeof(int32_t) * (size_t)(c + SQ_AHEAD));
        if (!q) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = had > t->sqn[s] ? had : t->sqn[s]; i < c + SQ_AHEAD; i++) q[i] = -1;
        t->sq[s] = q;
        t->sqcap[s] = c;
    }
    return 0;
}

/* e (in no segment) at the end of segment s (its array sized by slru_room: a compaction makes room) */
static inline void sq_append(Tier *t, int s, int32_t e) {
    if (t->sqn[s] == t->sqcap[s]) sq_compact(t, s);
    Entry *x = &t->ent[e];
    x->q = (uint8_t)s;
    x->prev = (int32_t)t->sqn[s];
    t->sq[s][t->sqn[s]++] = e;
    t->qlen[s]++;
}

/* e out of its segment (its item stale) */
static inline void sq_unlink(Tier *t, int32_t e) {
    Entry *x = &t->ent[e];
    t->sq[x->q][x->prev] = -1;
    t->qlen[x->q]--;
    x->q = QNONE;
    x->prev = -1;
}

/* the front block of segment s (qlen[s] > 0) out of it; the entry SQ_AHEAD items on prefetched */
static inline int32_t sq_pop(Tier *t, int s) {
    int32_t *const q = t->sq[s];
    Py_ssize_t h = t->sqh[s];
    while (q[h] < 0) h++;
    const int32_t e = q[h], a = q[h + SQ_AHEAD];
    if (a >= 0) __builtin_prefetch(&t->ent[a], 1, 1);
    t->sqh[s] = h + 1;
    Entry *x = &t->ent[e];
    x->q = QNONE;
    x->prev = -1;
    t->qlen[s]--;
    return e;
}

/* n sq_pops of segment s (n <= qlen[s]) to out, in order: the front, end and count in locals (one store each) */
static void sq_pop_run(Tier *t, int s, int32_t *out, Py_ssize_t n) {
    int32_t *const q = t->sq[s];
    Entry *const ent = t->ent;
    Py_ssize_t h = t->sqh[s];
    for (Py_ssize_t i = 0; i < n; i++) {
        while (q[h] < 0) h++;
        const int32_t e = q[h], a = q[h + SQ_AHEAD];
        if (a >= 0) __builtin_prefetch(&ent[a], 1, 1);
        h++;
        ent[e].q = QNONE;
        ent[e].prev = -1;
        out[i] = e;
    }
    t->sqh[s] = h;
    t->qlen[s] -= n;
}

static void slru_rebalance(Tier *t) {
    while (t->qlen[PROT] > t->opt[0]) sq_append(t, PROB, sq_pop(t, PROT));
}

static int slru_add(Tier *t, int32_t e, int reused) {
    if (slru_room(t, t->qlen[PROB] + t->qlen[PROT] + 1) < 0) return -1;
    sq_append(t, reused ? PROT : PROB, e);
    return 0;
}

static void slru_add_end(Tier *t, int reused) {
    if (reused) slru_rebalance(t);
}

static void slru_remove(Tier *t, int32_t e) { sq_unlink(t, e); }

static void slru_touch(Tier *t, int32_t e) {
    sq_unlink(t, e);
    sq_append(t, PROT, e);
}

static int32_t slru_victim(Tier *t) { return sq_pop(t, t->qlen[PROB] ? PROB : PROT); }

/* PolOps.add_run: slru_add of each (one segment) */
static int slru_add_run(Tier *t, const int32_t *ents, Py_ssize_t n, int reused) {
    if (slru_room(t, t->qlen[PROB] + t->qlen[PROT] + n) < 0) return -1;
    const int s = reused ? PROT : PROB;
    if (t->sqn[s] + n > t->sqcap[s]) sq_compact(t, s);     /* (room for all n now: 2 x held >= n + live) */
    Entry *const ent = t->ent;
    int32_t *const q = t->sq[s];
    Py_ssize_t p = t->sqn[s];
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t e = ents[i];
        ent[e].q = (uint8_t)s;
        ent[e].prev = (int32_t)p;
        q[p++] = e;
    }
    t->sqn[s] = p;
    t->qlen[s] += n;
    return 0;
}

/* PolOps.victims: probation's first ones, then protected's (slru_victim n times: a victim's deletion changes
 * neither segment) */
static int slru_victims(Tier *t, Py_ssize_t n, int32_t *out) {
    Py_ssize_t a = n < t->qlen[PROB] ? n : t->qlen[PROB];
    if (a) sq_pop_run(t, PROB, out, a);
    if (n > a) sq_pop_run(t, PROT, out + a, n - a);
    return 0;
}

static Py_ssize_t slru_order(Tier *t, int32_t *out) {
    Py_ssize_t n = 0;
    for (int s = 0; s < 2; s++)
        for (Py_ssize_t i = t->sqh[s]; i < t->sqn[s]; i++)
            if (t->sq[s][i] >= 0) out[n++] = t->sq[s][i];
    return n;
}

static const char *slru_check(Tier *t) {
    if (t->qlen[PROT] > t->opt[0]) return "protected segment over its size";
    if (t->qlen[PROB] + t->qlen[PROT] != t->held) return "segments do not hold the held blocks";
    for (int s = 0; s < 2; s++) {
        Py_ssize_t live = 0;
        for (Py_ssize_t i = t->sqh[s]; i < t->sqn[s]; i++) {
            const int32_t e = t->sq[s][i];
            if (e < 0) continue;
            live++;
            if (t->ent[e].q != s || t->ent[e].prev != i) return "a segment's item and its entry disagree";
        }
        if (live != t->qlen[s]) return "a segment's live items differ from its length";
        for (Py_ssize_t i = t->sqn[s]; t->sq[s] && i < t->sqcap[s] + SQ_AHEAD; i++)
            if (t->sq[s][i] != -1) return "a segment's array holds an item past its end";
    }
    return NULL;
}

static void slru_fini(Tier *t) {
    for (int s = 0; s < 2; s++) {
        free(t->sq[s]);
        t->sq[s] = NULL;
        t->sqh[s] = t->sqn[s] = t->sqcap[s] = 0;
    }
}

const PolOps POL_SLRU = {
    .name = "slru", .fini = slru_fini, .add = slru_add, .add_end = slru_add_end, .remove = slru_remove,
    .drop = slru_remove, .touch = slru_touch, .touch_end = slru_rebalance, .victim = slru_victim,
    .order = slru_order, .check = slru_check, .add_run = slru_add_run, .victims = slru_victims,
};
