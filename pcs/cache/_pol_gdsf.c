/* gdsf, compiled: the twin of pcs/cache/policies/gdsf.py (Greedy-Dual-Size-Frequency, Cherkasova HPL-98-69;
 * leaves of the cached prefix tree only; docs/semantics.md §8). The trace data (PolOps.load, built by
 * pcs/cache/native.py from the policy's PolicyContext): the known blocks (TraceOracle.depth, in its order), their
 * parents and the prefill seconds of each (pcs/cache/native.py): t->pkeys / t->pslots = the index of the known
 * blocks (data_find: block hash -> j), t->pparent[j] = its parent's j or -1, t->pcost[j] = its cost, shared
 * read-only by every tier reading the same data; t->pchild[j] = its children held by this tier; t->fcost0 =
 * the cost of a block not known (depth 0). Entry.aux = F (uses); t->ex[3e] = H (a double's bits), t->ex[3e + 1]
 * = the tie stamp of its last hold, t->ex[3e + 2] = its j or -1. t->heap = a lazy min-heap of (H, stamp,
 * entry) items as gdsf.py's, valid while the entry holds that stamp and has no held child; items that can
 * never be valid again are dropped when they are most of the heap. t->finfl = L (seconds). */
#include "_lruhier.h"

#define GH(t, e) (((double *)(t)->ex)[3 * (e)])
#define GSTAMP(t, e) ((t)->ex[3 * (e) + 1])
#define GINFO(t, e) ((t)->ex[3 * (e) + 2])

typedef struct { double h; int64_t stamp, e; } GItem;

static int g_less(const GItem *a, const GItem *b) { return a->h < b->h || (a->h == b->h && a->stamp < b->stamp); }

/* the heap is 4-ary (children of i: 4i + 1 .. 4i + 4): half the levels of a binary heap, the children of one
 * item read together; which item is on top does not depend on the shape (a strict order; equal items are
 * identical) */
static void g_sift_down(GItem *q, Py_ssize_t n, Py_ssize_t i) {
    GItem it = q[i];
    for (;;) {
        Py_ssize_t c = 4 * i + 1, best = c;
        if (c >= n) break;
        Py_ssize_t end = c + 4 < n ? c + 4 : n;
        for (Py_ssize_t d = c + 1; d < end; d++) if (g_less(&q[d], &q[best])) best = d;
        if (!g_less(&q[best], &it)) break;
        q[i] = q[best];
        i = best;
    }
    q[i] = it;
}

static int gdsf_init(Tier *t) {
    t->fcost0 = 1.0;
    return 0;
}

/* data = (keys uint64 (n,), slots int32 (2**k >= 2n,), parent int32 (n,), cost float64 (n,) seconds, cost0
 * float64 (1,)); None: no trace (every block a leaf costing 1 s) */
static int gdsf_load(Tier *t, PyObject *data) {
    if (data == Py_None) return 0;
    static const Py_ssize_t size[5] = {8, 4, 4, 8, 8};
    Py_ssize_t len[5];
    if (data_take(t, data, 5, size, len) < 0) return -1;
    Py_ssize_t n = len[0];
    if (len[2] != n || len[3] != n || len[4] != 1) {
        PyErr_SetString(PyExc_ValueError, "gdsf data: bad lengths");
        return -1;
    }
    if (data_index(t, t->pbuf[0].buf, n, t->pbuf[1].buf, len[1]) < 0) return -1;
    t->pparent = t->pbuf[2].buf;
    t->pcost = t->pbuf[3].buf;
    t->fcost0 = ((const double *)t->pbuf[4].buf)[0];
    for (Py_ssize_t j = 0; j < n; j++)
        if (t->pparent[j] < -1 || t->pparent[j] >= n) {
            PyErr_SetString(PyExc_ValueError, "gdsf data: a parent out of range");
            return -1;
        }
    t->pchild = PyMem_Calloc(n + 1, sizeof(int32_t));
    if (!t->pchild) { PyErr_NoMemory(); return -1; }
    return 0;
}

static int g_push(Tier *t, double h, int64_t stamp, int32_t e) {
    if (t->hlen + 3 > t->hcap) {
        Py_ssize_t c = t->hcap ? t->hcap * 2 : 3 * 256;
        int64_t *q = PyMem_Realloc(t->heap, sizeof(int64_t) * c);
        if (!q) { PyErr_NoMemory(); return -1; }
        t->heap = q;
        t->hcap = c;
    }
    GItem *q = (GItem *)t->heap, it = {h, stamp, e};
    Py_ssize_t i = t->hlen / 3;
    t->hlen += 3;
    while (i > 0) {
        Py_ssize_t up = (i - 1) / 4;
        if (!g_less(&it, &q[up])) break;
        q[i] = q[up];
        i = up;
    }
    q[i] = it;
    return 0;
}

/* an item of an entry held with that stamp (it is the victim candidate when the entry has no held child) */
static int g_alive(const Tier *t, const GItem *it) {
    const Entry *x = &t->ent[it->e];
    return it->e < t->ent_len && (x->flags & F_KNOWN) && !OUT(x) && GSTAMP(t, it->e) == it->stamp;
}

static int g_leaf(const Tier *t, int32_t e) {
    int64_t i = GINFO(t, e);
    return i < 0 || !t->pchild[i];
}

/* keep one item per held leaf: an item of a block with a held child, stale or repeated is never needed again
 * (a block's H only changes with a new stamp, which pushes an item; losing its last child pushes one too) */
static void g_compact(Tier *t) {
    GItem *q = (GItem *)t->heap;
    Py_ssize_t n = t->hlen / 3, m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t e = (int32_t)q[i].e;
        if (g_alive(t, &q[i]) && g_leaf(t, e) && !(t->ent[e].flags & F_INHEAP)) {
            t->ent[e].flags |= F_INHEAP;
            q[m++] = q[i];
        }
    }
    for (Py_ssize_t i = 0; i < m; i++) t->ent[q[i].e].flags &= ~F_INHEAP;
    for (Py_ssize_t i = (m + 2) / 4; i-- > 0;) g_sift_down(q, m, i);
    t->hlen = 3 * m;
}

/* gdsf.py _hold: a fresh H and stamp, one more held child for the parent, pushed if a leaf */
static int g_hold(Tier *t, int32_t e) {
    int64_t i = GINFO(t, e);
    double h = t->finfl + (double)t->ent[e].aux * (i >= 0 ? t->pcost[i] : t->fcost0);
    int64_t stamp = t->next_seq++;
    GH(t, e) = h;
    GSTAMP(t, e) = stamp;
    if (i < 0) return g_push(t, h, stamp, e);
    if (t->pparent[i] >= 0) t->pchild[t->pparent[i]]++;
    return t->pchild[i] ? 0 : g_push(t, h, stamp, e);
}

/* gdsf.py _unhold: one held child less for the parent, pushed when it is held and now a leaf */
static void g_unhold(Tier *t, int32_t e) {
    int64_t i = GINFO(t, e);
    if (i < 0) return;
    int32_t p = t->pparent[i];
    if (p < 0 || --t->pchild[p]) return;
    int32_t f = tfind(t, t->pkeys[p]);
    if (f >= 0 && (t->ent[f].flags & F_KNOWN) && !OUT(&t->ent[f]))
        g_push(t, GH(t, f), GSTAMP(t, f), f);    /* only a memory error fails: it stays set for the caller */
}

static int gdsf_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (!(x->flags & F_KNOWN)) {
        if (e >= t->excap / 3) {
            Py_ssize_t c = t->excap ? t->excap : 3 * 128;
            while (c / 3 <= e) c *= 2;
            int64_t *ex = PyMem_Realloc(t->ex, sizeof(int64_t) * c);
            if (!ex) { PyErr_NoMemory(); return -1; }
            t->ex = ex;
            t->excap = c;
        }
        x->flags |= F_KNOWN;
        x->aux = reused ? 2 : 1;
        GINFO(t, e) = data_find(t, x->key);
    } else x->aux += reused;
    if (t->hlen > 6 * (t->held + 512)) g_compact(t);
    return g_hold(t, e);
}

static void gdsf_unhold(Tier *t, int32_t e) { g_unhold(t, e); }

static void gdsf_touch(Tier *t, int32_t e) {
    g_unhold(t, e);
    t->ent[e].aux++;
    g_hold(t, e);
}

/* the held entry with the smallest (H, stamp), leaves or not (unreachable fallback of gdsf.py _pop_leaf) */
static int32_t g_min_held(Tier *t) {
    int32_t best = -1;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if (!(x->flags & F_KNOWN) || OUT(x)) continue;
        if (best < 0 || GH(t, e) < GH(t, best) || (GH(t, e) == GH(t, best) && GSTAMP(t, e) < GSTAMP(t, best)))
            best = e;
    }
    return best;
}

static int32_t gdsf_victim(Tier *t) {
    GItem *q = (GItem *)t->heap;
    int32_t e = -1;
    while (t->hlen) {
        GItem it = q[0];
        Py_ssize_t n = (t->hlen -= 3) / 3;
        if (n) { q[0] = q[n]; g_sift_down(q, n, 0); }
        if (!g_alive(t, &it) || GH(t, it.e) != it.h || !g_leaf(t, (int32_t)it.e)) continue;
        e = (int32_t)it.e;
        break;
    }
    if (e < 0) e = g_min_held(t);
    t->finfl = GH(t, e);
    g_unhold(t, e);
    return e;
}

static int cmp_hs(const void *a, const void *b) {
    const GItem *x = a, *y = b;
    return g_less(x, y) ? -1 : g_less(y, x);
}

/* held entries by (H, stamp) (gdsf.py order(): leaves or not) */
static Py_ssize_t gdsf_order(Tier *t, int32_t *out) {
    GItem *tmp = PyMem_Malloc(sizeof(GItem) * (t->nres + 1));
    if (!tmp) { PyErr_NoMemory(); return -1; }
    Py_ssize_t n = 0;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if ((x->flags & F_KNOWN) && !OUT(x)) { tmp[n].h = GH(t, e); tmp[n].stamp = GSTAMP(t, e); tmp[n].e = e; n++; }
    }
    qsort(tmp, n, sizeof(GItem), cmp_hs);
    for (Py_ssize_t i = 0; i < n; i++) out[i] = (int32_t)tmp[i].e;
    PyMem_Free(tmp);
    return n;
}

/* gdsf.py _check: the held-children counts */
static const char *gdsf_check(Tier *t) {
    Py_ssize_t n = t->npbuf ? t->pbuf[0].len / 8 : 0, held = 0;
    int32_t *cnt = PyMem_Calloc(n + 1, sizeof(int32_t));
    if (!cnt) return "out of memory";
    const char *why = NULL;
    for (int32_t e = 0; e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if (!(x->flags & F_KNOWN) || OUT(x)) continue;
        held++;
        int64_t i = GINFO(t, e);
        if (i != data_find(t, x->key)) { why = "wrong index"; break; }
        if (i >= 0 && t->pparent[i] >= 0) cnt[t->pparent[i]]++;
    }
    for (Py_ssize_t i = 0; !why && i < n; i++) if (cnt[i] != t->pchild[i]) why = "held-children counts";
    PyMem_Free(cnt);
    if (!why && held != t->held) why = "held count differs from the known unpinned blocks";
    return why;
}

const PolOps POL_GDSF = {
    .name = "gdsf", .init = gdsf_init, .add = gdsf_add, .remove = gdsf_unhold, .drop = gdsf_unhold,
    .touch = gdsf_touch, .victim = gdsf_victim, .order = gdsf_order, .check = gdsf_check, .load = gdsf_load,
};
