/* lfu, compiled: the twin of pcs/cache/policies/lfu.py (LFU-DA, Arlitt et al. 2000 as Squid's heap_LFUDA;
 * aging=none: libCacheSim LFU.c; docs/semantics.md §8). Entry.aux = uses; t->ex[2e] = the block's key
 * K = uses + L, t->ex[2e + 1] = the number of its last put (its place in its bucket: a bucket is FIFO); the
 * victim is the held block with the smallest (K, put number). t->heap holds (K, put number, entry) triples,
 * cleaned lazily (an item is stale once its block is put again, pinned or gone) and rebuilt when mostly stale.
 * t->inflation = L. opt[0] = 1 for aging=dynamic (L = the victim's K), 0 for none. */
#include "_lruhier.h"

static int lfu_less(const int64_t *a, const int64_t *b) { return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]); }

static void lfu_sift_up(int64_t *h, Py_ssize_t i) {
    int64_t it[3] = {h[3 * i], h[3 * i + 1], h[3 * i + 2]};
    while (i > 0) {
        Py_ssize_t up = (i - 1) / 2;
        if (!lfu_less(it, h + 3 * up)) break;
        memcpy(h + 3 * i, h + 3 * up, 3 * sizeof(int64_t));
        i = up;
    }
    memcpy(h + 3 * i, it, 3 * sizeof(int64_t));
}

static void lfu_sift_down(int64_t *h, Py_ssize_t n, Py_ssize_t i) {
    int64_t it[3] = {h[3 * i], h[3 * i + 1], h[3 * i + 2]};
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && lfu_less(h + 3 * (c + 1), h + 3 * c)) c++;
        if (!lfu_less(h + 3 * c, it)) break;
        memcpy(h + 3 * i, h + 3 * c, 3 * sizeof(int64_t));
        i = c;
    }
    memcpy(h + 3 * i, it, 3 * sizeof(int64_t));
}

static int lfu_valid(const Tier *t, const int64_t *it) {
    const Entry *x = &t->ent[it[2]];
    return (x->flags & F_INHEAP) && !OUT(x) && t->ex[2 * it[2] + 1] == it[1];
}

/* drop the stale items when they are most of the heap (keeps memory O(held)) */
static void lfu_compact(Tier *t) {
    Py_ssize_t n = t->hlen / 3, m = 0;
    int64_t *h = t->heap;
    for (Py_ssize_t i = 0; i < n; i++)
        if (lfu_valid(t, h + 3 * i)) { memmove(h + 3 * m, h + 3 * i, 3 * sizeof(int64_t)); m++; }
    for (Py_ssize_t i = m / 2; i-- > 0;) lfu_sift_down(h, m, i);
    t->hlen = 3 * m;
}

/* put a held block in the bucket of key K (at its end) */
static int lfu_put(Tier *t, int32_t e, int64_t K) {
    if (e >= t->excap / 2) {
        Py_ssize_t c = t->excap ? t->excap : 128;
        while (c / 2 <= e) c *= 2;
        int64_t *x = PyMem_Realloc(t->ex, sizeof(int64_t) * c);
        if (!x) { PyErr_NoMemory(); return -1; }
        t->ex = x;
        t->excap = c;
    }
    if (t->hlen > 6 * (t->held + 512)) lfu_compact(t);
    if (t->hlen + 3 > t->hcap) {
        Py_ssize_t c = t->hcap ? t->hcap * 2 : 3 * 256;
        int64_t *h = PyMem_Realloc(t->heap, sizeof(int64_t) * c);
        if (!h) { PyErr_NoMemory(); return -1; }
        t->heap = h;
        t->hcap = c;
    }
    int64_t seq = t->next_seq++;
    t->ex[2 * e] = K;
    t->ex[2 * e + 1] = seq;
    t->ent[e].flags |= F_INHEAP;
    int64_t *it = t->heap + t->hlen;
    it[0] = K; it[1] = seq; it[2] = e;
    t->hlen += 3;
    lfu_sift_up(t->heap, t->hlen / 3 - 1);
    return 0;
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

static void lfu_remove(Tier *t, int32_t e) { t->ent[e].flags &= ~F_INHEAP; }   /* its item goes stale */

static void lfu_drop(Tier *t, int32_t e) { t->ent[e].flags &= ~F_INHEAP; }

static void lfu_touch(Tier *t, int32_t e) {
    Entry *x = &t->ent[e];
    /* a touch cannot fail but for memory: the error stays set and the caller's next check reports it */
    lfu_put(t, e, ++x->aux + t->inflation);
}

static int32_t lfu_victim(Tier *t) {
    int64_t *h = t->heap;
    for (;;) {
        int64_t it[3] = {h[0], h[1], h[2]};
        Py_ssize_t n = (t->hlen -= 3) / 3;
        if (n) { memcpy(h, h + 3 * n, 3 * sizeof(int64_t)); lfu_sift_down(h, n, 0); }
        if (!lfu_valid(t, it)) continue;
        t->ent[it[2]].flags &= ~F_INHEAP;
        if (t->opt[0]) t->inflation = it[0];
        return (int32_t)it[2];
    }
}

static int cmp_item(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return lfu_less(x, y) ? -1 : lfu_less(y, x);
}

static Py_ssize_t lfu_order(Tier *t, int32_t *out) {
    int64_t *tmp = PyMem_Malloc(sizeof(int64_t) * 3 * (t->nres + 1));
    if (!tmp) { PyErr_NoMemory(); return -1; }
    Py_ssize_t n = 0;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if ((x->flags & F_KNOWN) && !OUT(x)) { tmp[3 * n] = t->ex[2 * e]; tmp[3 * n + 1] = t->ex[2 * e + 1]; tmp[3 * n + 2] = e; n++; }
    }
    qsort(tmp, n, 3 * sizeof(int64_t), cmp_item);
    for (Py_ssize_t i = 0; i < n; i++) out[i] = (int32_t)tmp[3 * i + 2];
    PyMem_Free(tmp);
    return n;
}

static const char *lfu_check(Tier *t) {
    Py_ssize_t held = 0, valid = 0;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if (!(x->flags & F_KNOWN)) continue;
        if (x->aux < 1) return "uses < 1";
        if (!OUT(x)) { held++; if (!(x->flags & F_INHEAP)) return "held block without a heap item"; }
    }
    for (Py_ssize_t i = 0; i < t->hlen / 3; i++) valid += lfu_valid(t, t->heap + 3 * i);
    if (valid != held) return "heap items differ from the held blocks";
    return held == t->held ? NULL : "held count differs from the known unpinned blocks";
}

const PolOps POL_LFU = {
    .name = "lfu", .add = lfu_add, .remove = lfu_remove, .drop = lfu_drop, .touch = lfu_touch,
    .victim = lfu_victim, .order = lfu_order, .check = lfu_check,
};
