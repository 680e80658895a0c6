/* belady, compiled: the twin of pcs/cache/policies/belady.py (Belady's MIN in the event loop, an offline oracle;
 * docs/semantics.md §8, §12). The trace data (PolOps.load, built by pcs/cache/native.py from the policy's
 * TraceOracle): the blocks with hit-earning uses and each one's sorted use keys request << 24 | position, as CSR
 * arrays (pcs/cache/native.py): t->pkeys / t->pslots = their index (data_find: block hash -> j), their uses
 * t->ukeys[t->uoff[j] .. t->uoff[j + 1]), shared read-only by every tier reading the same data; t->ucur[j] = the
 * first use the clock has not passed (the clock only moves forward: TraceOracle.next_use's bisect becomes a
 * cursor, amortised O(1)). *t->clock = the request being admitted (the hierarchy counts admissions as
 * clocked() does).
 * t->ex[2e] = the block's key u (its next use, NEVER if none), t->ex[2e + 1] = its j or -1.
 * t->heap = a lazy max-heap of (u, block hash) items
 * (ties: smallest hash first), valid while the block is held with that u, as belady.py's (-u, k) min-heap; a
 * victim whose use has passed is re-keyed. Items that are not valid are dropped when they are most of the heap:
 * each new value of u pushes its own item, so an invalid item is never needed again. */
#include "_lruhier.h"

#define NEVER ((int64_t)1 << 62)
#define POS_BITS 24

typedef struct { int64_t u; uint64_t k; } BItem;

/* the victim order: larger u first, then the smaller hash */
static int b_first(const BItem *a, const BItem *b) { return a->u > b->u || (a->u == b->u && a->k < b->k); }

/* the heap is 4-ary (children of i: 4i + 1 .. 4i + 4): half the levels of a binary heap, the children of one
 * item read together; which item is on top does not depend on the shape (a strict order; equal items are
 * identical) */
static void b_sift_down(BItem *q, Py_ssize_t n, Py_ssize_t i) {
    BItem it = q[i];
    for (;;) {
        Py_ssize_t c = 4 * i + 1, best = c;
        if (c >= n) break;
        Py_ssize_t end = c + 4 < n ? c + 4 : n;
        for (Py_ssize_t d = c + 1; d < end; d++) if (b_first(&q[d], &q[best])) best = d;
        if (!b_first(&q[best], &it)) break;
        q[i] = q[best];
        i = best;
    }
    q[i] = it;
}

/* data = (keys uint64 (n,), slots int32 (2**k >= 2n,), offsets int64 (n + 1,), uses int64 (m,)); None: no uses
 * known (every key NEVER) */
static int belady_load(Tier *t, PyObject *data) {
    if (data == Py_None) return 0;
    static const Py_ssize_t size[4] = {8, 4, 8, 8};
    Py_ssize_t len[4];
    if (data_take(t, data, 4, size, len) < 0) return -1;
    Py_ssize_t n = len[0];
    const int64_t *off = t->pbuf[2].buf;
    if (len[2] != n + 1 || off[0] != 0 || off[n] != len[3]) {
        PyErr_SetString(PyExc_ValueError, "belady data: bad lengths");
        return -1;
    }
    for (Py_ssize_t j = 0; j < n; j++)
        if (off[j] > off[j + 1]) { PyErr_SetString(PyExc_ValueError, "belady data: offsets must rise"); return -1; }
    if (data_index(t, t->pbuf[0].buf, n, t->pbuf[1].buf, len[1]) < 0) return -1;
    t->uoff = off;
    t->ukeys = t->pbuf[3].buf;
    t->ucur = PyMem_Malloc(sizeof(int64_t) * (n + 1));
    if (!t->ucur) { PyErr_NoMemory(); return -1; }
    memcpy(t->ucur, off, sizeof(int64_t) * (n + 1));
    return 0;
}

/* TraceOracle.next_use of known block i (-1: not known): the first use key of a request after now, NEVER if
 * none. The clock only moves forward, so the first use not passed is a cursor that only advances (the bisect of
 * TraceOracle.next_use, amortised O(1)). */
static int64_t b_next_use(const Tier *t, int64_t i) {
    if (i < 0) return NEVER;
    int64_t bound = (*t->clock << POS_BITS) | (((int64_t)1 << POS_BITS) - 1);
    int64_t c = t->ucur[i], end = t->uoff[i + 1];
    while (c < end && t->ukeys[c] <= bound) c++;
    t->ucur[i] = c;
    return c < end ? t->ukeys[c] : NEVER;
}

static int b_valid(const Tier *t, const BItem *it) {
    int32_t e = tfind(t, it->k);
    return e >= 0 && (t->ent[e].flags & F_KNOWN) && !OUT(&t->ent[e]) && t->ex[2 * e] == it->u;
}

static void b_compact(Tier *t) {
    BItem *q = (BItem *)t->heap;
    Py_ssize_t n = t->hlen / 2, m = 0;
    for (Py_ssize_t i = 0; i < n; i++) if (b_valid(t, &q[i])) q[m++] = q[i];
    for (Py_ssize_t i = (m + 2) / 4; i-- > 0;) b_sift_down(q, m, i);
    t->hlen = 2 * m;
}

static int b_push(Tier *t, int64_t u, uint64_t k) {
    if (t->hlen + 2 > t->hcap) {
        Py_ssize_t c = t->hcap ? t->hcap * 2 : 2 * 256;
        int64_t *h = PyMem_Realloc(t->heap, sizeof(int64_t) * c);
        if (!h) { PyErr_NoMemory(); return -1; }
        t->heap = h;
        t->hcap = c;
    }
    BItem *q = (BItem *)t->heap, it = {u, k};
    Py_ssize_t i = t->hlen / 2;
    t->hlen += 2;
    while (i > 0) {
        Py_ssize_t up = (i - 1) / 4;
        if (!b_first(&it, &q[up])) break;
        q[i] = q[up];
        i = up;
    }
    q[i] = it;
    return 0;
}

/* belady.py add / touch: the block's key is its next use after now */
static int belady_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (!(x->flags & F_KNOWN) && 2 * e + 1 >= t->excap) {
        Py_ssize_t c = t->excap ? t->excap : 256;
        while (c <= 2 * e + 1) c *= 2;
        int64_t *ex = PyMem_Realloc(t->ex, sizeof(int64_t) * c);
        if (!ex) { PyErr_NoMemory(); return -1; }
        t->ex = ex;
        t->excap = c;
    }
    if (t->hlen > 4 * (t->held + 512)) b_compact(t);
    if (!(x->flags & F_KNOWN)) {
        x->flags |= F_KNOWN;
        t->ex[2 * e + 1] = data_find(t, x->key);
    }
    int64_t u = t->ex[2 * e] = b_next_use(t, t->ex[2 * e + 1]);
    return b_push(t, u, x->key);
}

static void belady_touch(Tier *t, int32_t e) { belady_add(t, e, 1); }   /* a memory error stays set */

static void belady_remove(Tier *t, int32_t e) {}                       /* OUT or deleted: its items go stale */

static int32_t belady_victim(Tier *t) {
    BItem *q = (BItem *)t->heap;
    for (;;) {
        BItem it = q[0];
        Py_ssize_t n = (t->hlen -= 2) / 2;
        if (n) { q[0] = q[n]; b_sift_down(q, n, 0); }
        int32_t e = tfind(t, it.k);
        if (e < 0 || !(t->ent[e].flags & F_KNOWN) || OUT(&t->ent[e]) || t->ex[2 * e] != it.u) continue;
        if (it.u != NEVER && (it.u >> POS_BITS) <= *t->clock) {     /* that use has passed: re-key */
            int64_t v = t->ex[2 * e] = b_next_use(t, t->ex[2 * e + 1]);
            if (b_push(t, v, it.k) < 0) return -1;
            q = (BItem *)t->heap;
            continue;
        }
        return e;
    }
}

static int cmp_b(const void *a, const void *b) {
    const BItem *x = a, *y = b;
    return b_first(x, y) ? -1 : b_first(y, x);
}

/* held entries, farthest next use first (keys as last computed; ties: smaller hash) */
static Py_ssize_t belady_order(Tier *t, int32_t *out) {
    BItem *tmp = PyMem_Malloc(sizeof(BItem) * (t->nres + 1));
    if (!tmp) { PyErr_NoMemory(); return -1; }
    Py_ssize_t n = 0;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if ((x->flags & F_KNOWN) && !OUT(x)) { tmp[n].u = t->ex[2 * e]; tmp[n].k = x->key; n++; }
    }
    qsort(tmp, n, sizeof(BItem), cmp_b);
    for (Py_ssize_t i = 0; i < n; i++) out[i] = tfind(t, tmp[i].k);
    PyMem_Free(tmp);
    return n;
}

/* belady.py _check: every held block has an item with its key */
static const char *belady_check(Tier *t) {
    Py_ssize_t held = 0, valid = 0;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        held += (x->flags & F_KNOWN) && !OUT(x) && tfind(t, x->key) == e;
    }
    BItem *q = (BItem *)t->heap;
    int32_t *mark = PyMem_Calloc(t->ent_len + 1, sizeof(int32_t));
    if (!mark) return "out of memory";
    for (Py_ssize_t i = 0; i < t->hlen / 2; i++)
        if (b_valid(t, &q[i])) { int32_t e = tfind(t, q[i].k); valid += !mark[e]; mark[e] = 1; }
    PyMem_Free(mark);
    if (valid != held) return "a held block without an item of its key";
    return held == t->held ? NULL : "held count differs from the known unpinned blocks";
}

const PolOps POL_BELADY = {
    .name = "belady", .add = belady_add, .remove = belady_remove, .drop = belady_remove,
    .touch = belady_touch, .victim = belady_victim, .order = belady_order, .check = belady_check,
    .load = belady_load,
};
