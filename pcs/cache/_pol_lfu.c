/* lfu, compiled: the twin of pcs/cache/policies/lfu.py (LFU-DA, Arlitt et al. 2000 as Squid's heap_LFUDA;
 * aging=none: libCacheSim LFU.c; docs/semantics.md §8). O(1) frequency buckets as libCacheSim LFU.c: Entry.aux =
 * uses; t->ex[2e] = the block's key K = uses + L, t->ex[2e + 1] = its bucket. A bucket is an entry of the key
 * store t->ghost (key = K; prev / next = the first / last block of its FIFO list, linked through the blocks'
 * prev / next; aux = its length); the victim is the first block of the lowest non-empty bucket. t->heap is a
 * min-heap of (K, bucket) with one item per bucket of the store: a bucket is deleted only when it is empty at the
 * top of the heap, as lfu.py pops an empty key off its heap; O(log b) only when a new key appears (b distinct
 * keys). t->inflation = L. opt[0] = 1 for aging=dynamic (L = the victim's K), 0 for none. */
#include "_lruhier.h"

static int lfu_init(Tier *t) {
    t->ghost = kstore_new();
    return t->ghost ? 0 : -1;
}

static int lfu_ex(Tier *t, int32_t e) {
    if (e < t->excap / 2) return 0;
    Py_ssize_t c = t->excap ? t->excap : 128;
    while (c / 2 <= e) c *= 2;
    int64_t *x = PyMem_Realloc(t->ex, sizeof(int64_t) * c);
    if (!x) { PyErr_NoMemory(); return -1; }
    t->ex = x;
    t->excap = c;
    return 0;
}

/* append held block e to the bucket of key K (created, and pushed on the heap, when new) */
static int lfu_put(Tier *t, int32_t e, int64_t K) {
    if (lfu_ex(t, e) < 0) return -1;
    Tier *s = t->ghost;
    int32_t b = tfind(s, (uint64_t)K);
    if (b < 0) {
        b = tadd(s, (uint64_t)K, 0);
        if (b < 0 || heap_push(t, K, b) < 0) return -1;
        s->ent[b].aux = 0;
    }
    Entry *bk = &s->ent[b], *x = &t->ent[e];
    x->prev = bk->next;
    x->next = -1;
    if (bk->next >= 0) t->ent[bk->next].next = e; else bk->prev = e;
    bk->next = e;
    bk->aux++;
    t->ex[2 * e] = K;
    t->ex[2 * e + 1] = b;
    return 0;
}

/* take held block e out of its bucket (the bucket stays, maybe empty) */
static void lfu_take(Tier *t, int32_t e) {
    Entry *bk = &t->ghost->ent[t->ex[2 * e + 1]], *x = &t->ent[e];
    if (x->prev >= 0) t->ent[x->prev].next = x->next; else bk->prev = x->next;
    if (x->next >= 0) t->ent[x->next].prev = x->prev; else bk->next = x->prev;
    x->prev = x->next = -1;
    bk->aux--;
}

static int lfu_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (!(x->flags & F_KNOWN)) {
        x->flags |= F_KNOWN;
        x->aux = reused ? 2 : 1;
        return lfu_put(t, e, x->aux + t->inflation);
    }
    if (reused) return lfu_put(t, e, ++x->aux + t->inflation);
    return lfu_put(t, e, t->ex[2 * e]);
}

static void lfu_remove(Tier *t, int32_t e) { lfu_take(t, e); }

static void lfu_drop(Tier *t, int32_t e) { lfu_take(t, e); }

static void lfu_touch(Tier *t, int32_t e) {
    Entry *x = &t->ent[e];
    lfu_take(t, e);
    /* a touch cannot fail but for memory: the error stays set and the caller's next check reports it */
    lfu_put(t, e, ++x->aux + t->inflation);
}

static int32_t lfu_victim(Tier *t) {
    Tier *s = t->ghost;
    for (;;) {
        int64_t K = t->heap[0];
        int32_t b = (int32_t)t->heap[1];
        if (s->ent[b].aux) {
            int32_t e = s->ent[b].prev;
            lfu_take(t, e);
            if (t->opt[0]) t->inflation = K;
            return e;
        }
        heap_pop(t);
        tdel(s, b);
    }
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* held blocks: buckets by K, each oldest first (the exact eviction order) */
static Py_ssize_t lfu_order(Tier *t, int32_t *out) {
    Tier *s = t->ghost;
    int64_t *keys = PyMem_Malloc(sizeof(int64_t) * (s->nres + 1));
    if (!keys) { PyErr_NoMemory(); return -1; }
    Py_ssize_t nb = 0, n = 0;
    for (int32_t b = 0; b < s->ent_len; b++)
        if (tfind(s, s->ent[b].key) == b && s->ent[b].aux) keys[nb++] = (int64_t)s->ent[b].key;
    qsort(keys, nb, sizeof(int64_t), cmp_i64);
    for (Py_ssize_t i = 0; i < nb; i++)
        for (int32_t e = s->ent[tfind(s, (uint64_t)keys[i])].prev; e >= 0; e = t->ent[e].next) out[n++] = e;
    PyMem_Free(keys);
    return n;
}

static const char *lfu_check(Tier *t) {
    Tier *s = t->ghost;
    Py_ssize_t held = 0, listed = 0;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if (!(x->flags & F_KNOWN)) continue;
        if (x->aux < 1) return "uses < 1";
        held += !OUT(x);
    }
    if (t->hlen / 2 != s->nres) return "heap items differ from the buckets";
    for (Py_ssize_t i = 0; i < t->hlen / 2; i++) {
        int32_t b = (int32_t)t->heap[2 * i + 1];
        if (tfind(s, s->ent[b].key) != b || (int64_t)s->ent[b].key != t->heap[2 * i]) return "stale heap item";
        Py_ssize_t n = 0;
        for (int32_t e = s->ent[b].prev; e >= 0; e = t->ent[e].next) {
            if (OUT(&t->ent[e]) || t->ex[2 * e] != t->heap[2 * i] || t->ex[2 * e + 1] != b) return "bad bucket member";
            if (++n > s->ent[b].aux) return "bucket longer than its count";
        }
        if (n != s->ent[b].aux) return "bucket count differs from its list";
        listed += n;
    }
    if (listed != held) return "buckets differ from the held blocks";
    return held == t->held ? NULL : "held count differs from the known unpinned blocks";
}

const PolOps POL_LFU = {
    .name = "lfu", .init = lfu_init, .add = lfu_add, .remove = lfu_remove, .drop = lfu_drop, .touch = lfu_touch,
    .victim = lfu_victim, .order = lfu_order, .check = lfu_check,
};
