/* slru (alias protected), compiled: the twin of pcs/cache/policies/slru.py (segmented LRU, Karedla, Love and
 * Wherry 1994; libCacheSim SLRU.c; docs/semantics.md §8). Queue 0 = probation, 1 = protected, each front = LRU.
 * opt[0] = the protected segment's size in blocks (floor(protected_share x capacity), from the Python policy).
 * A block released as reused (a hit) or touched goes to protected; protected overflow goes to probation's MRU
 * end at the end of the batch; victims from probation first. Pinned blocks leave their segment.
 *
 * Each segment is an array of entry indices in the order they joined it, read from the front, with lazy deletion
 * (Tier.seg; the scheme of the inline LRU order, pcs/cache/_lruq.h): an entry keeps its position in Entry.prev and
 * its segment in Entry.q; a block leaving (pinned, dropped, moved) marks its item -1. The live items are the list
 * the segment was, in the same order: the same victims. A doubly linked list through the entries made every
 * unlink a write to both neighbours' entries (two random cache misses) and every pop a chain of dependent reads;
 * here an unlink writes one queue item, and the next victims' entries are prefetched from the array. */
#include "_lruhier.h"

enum { PROB = 0, PROT = 1 };
#define SEG_AHEAD 8     /* a victim's entry prefetched this many items ahead */
#define SEG_SPARE 4     /* a segment's array holds at least SEG_SPARE x held items (slru_add): a compaction when
                           the end reaches it leaves at least 3/4 free, so the appends of touch and rebalance (no
                           error return) compact in place and never allocate */

/* the live items of segment s moved to the front of an array of cap items (cap >= live); 0 or -1 (no memory) */
static int seg_pack(Tier *t, struct SegQ *s, Py_ssize_t cap) {
    int32_t *dst = cap == s->cap ? s->a : PyMem_RawMalloc(sizeof(int32_t) * (size_t)cap);
    if (!dst) { PyErr_NoMemory(); return -1; }
    Py_ssize_t j = 0;
    for (Py_ssize_t i = s->h; i < s->n; i++) {
        int32_t e = s->a[i];
        if (e < 0) continue;
        t->ent[e].prev = (int32_t)j;
        dst[j++] = e;
    }
    if (dst != s->a) {
        PyMem_RawFree(s->a);
        s->a = dst;
        s->cap = cap;
    }
    s->h = 0;
    s->n = j;
    return 0;
}

/* entry e (in no segment) joins segment q at its MRU end; its array has room once packed (SEG_SPARE) */
static void seg_append(Tier *t, int q, int32_t e) {
    struct SegQ *s = &t->seg[q];
    if (s->n == s->cap) seg_pack(t, s, s->cap);     /* in place: cannot fail */
    t->ent[e].q = (uint8_t)q;
    t->ent[e].prev = (int32_t)s->n;
    s->a[s->n++] = e;
    t->qlen[q]++;
}

/* entry e leaves its segment: its item goes stale */
static void seg_unlink(Tier *t, int32_t e) {
    Entry *x = &t->ent[e];
    struct SegQ *s = &t->seg[x->q];
    s->a[x->prev] = -1;
    if (!--t->qlen[x->q]) s->h = s->n = 0;          /* nothing live: start again at the front */
    x->prev = -1;
    x->q = QNONE;
}

/* the LRU entry of segment q (not empty), taken out of it */
static int32_t seg_pop(Tier *t, int q) {
    struct SegQ *s = &t->seg[q];
    Py_ssize_t i = s->h;
    while (s->a[i] < 0) i++;
    if (i + SEG_AHEAD < s->n && s->a[i + SEG_AHEAD] >= 0) __builtin_prefetch(&t->ent[s->a[i + SEG_AHEAD]], 1, 1);
    int32_t e = s->a[i];
    s->h = i + 1;                                    /* passed (seg_unlink: the segment emptied starts again) */
    seg_unlink(t, e);
    return e;
}

/* both segments' arrays at least SEG_SPARE x held (+ 64) items; 0 or -1 (no memory) */
static int seg_room(Tier *t) {
    for (int q = 0; q < 2; q++) {
        struct SegQ *s = &t->seg[q];
        if (s->cap >= SEG_SPARE * t->held) continue;
        Py_ssize_t cap = s->cap ? s->cap : 64;
        while (cap < SEG_SPARE * t->held) cap *= 2;
        if (cap > INT32_MAX) { PyErr_NoMemory(); return -1; }
        if (seg_pack(t, s, cap) < 0) return -1;
    }
    return 0;
}

static void slru_fini(Tier *t) {
    for (int q = 0; q < 2; q++) {
        PyMem_RawFree(t->seg[q].a);
        memset(&t->seg[q], 0, sizeof(t->seg[q]));
    }
}

static void slru_rebalance(Tier *t) {
    while (t->qlen[PROT] > t->opt[0]) seg_append(t, PROB, seg_pop(t, PROT));
}

static int slru_add(Tier *t, int32_t e, int reused) {
    if (seg_room(t) < 0) return -1;                 /* (held counts e already: inner_add) */
    seg_append(t, reused ? PROT : PROB, e);
    return 0;
}

static void slru_add_end(Tier *t, int reused) {
    if (reused) slru_rebalance(t);
}

static void slru_remove(Tier *t, int32_t e) { seg_unlink(t, e); }

static void slru_touch(Tier *t, int32_t e) {
    seg_unlink(t, e);
    seg_append(t, PROT, e);
}

static int32_t slru_victim(Tier *t) { return seg_pop(t, t->qlen[PROB] ? PROB : PROT); }

static Py_ssize_t seg_collect(const Tier *t, int q, int32_t *out) {
    Py_ssize_t n = 0;
    for (Py_ssize_t i = t->seg[q].h; i < t->seg[q].n; i++)
        if (t->seg[q].a[i] >= 0) out[n++] = t->seg[q].a[i];
    return n;
}

static Py_ssize_t slru_order(Tier *t, int32_t *out) {
    Py_ssize_t n = seg_collect(t, PROB, out);
    return n + seg_collect(t, PROT, out + n);
}

static const char *slru_check(Tier *t) {
    if (t->qlen[PROT] > t->opt[0]) return "protected segment over its size";
    if (t->qlen[PROB] + t->qlen[PROT] != t->held) return "segments do not hold the held blocks";
    for (int q = 0; q < 2; q++) {
        const struct SegQ *s = &t->seg[q];
        Py_ssize_t live = 0;
        if (s->h < 0 || s->h > s->n || s->n > s->cap) return "segment queue bounds";
        for (Py_ssize_t i = s->h; i < s->n; i++) {
            int32_t e = s->a[i];
            if (e < 0) continue;
            if (e >= t->ent_len || t->ent[e].q != q || t->ent[e].prev != i) return "segment item not its entry's";
            live++;
        }
        if (live != t->qlen[q]) return "segment's live items differ from its count";
    }
    return NULL;
}

const PolOps POL_SLRU = {
    .name = "slru", .fini = slru_fini, .add = slru_add, .add_end = slru_add_end, .remove = slru_remove,
    .drop = slru_remove, .touch = slru_touch, .touch_end = slru_rebalance, .victim = slru_victim,
    .order = slru_order, .check = slru_check,
};
