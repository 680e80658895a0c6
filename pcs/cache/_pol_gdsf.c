/* gdsf, compiled: the twin of pcs/cache/policies/gdsf.py (Greedy-Dual-Size-Frequency, Cherkasova HPL-98-69;
 * leaves of the cached prefix tree only; docs/semantics.md §8). The trace data (PolOps.load, built by
 * pcs/cache/native.py from the policy's PolicyContext): the known blocks (TraceOracle.depth, in its order), their
 * parents and the prefill seconds of each (pcs/cache/native.py): t->pkeys / t->pslots = the index of the known
 * blocks (data_find: block hash -> j), t->pparent[j] = its parent's j or -1, t->pcost[j] = its cost, shared
 * read-only by every tier reading the same data; per tier, GKIDS(t, j) = its children held by this tier and
 * GENT(t, j) = the entry it last had in this tier (valid while that entry holds its key: g_held); t->fcost0 =
 * the cost of a block not known (depth 0). Entry.aux = F (uses); t->ex[4e] = H (a double's bits), t->ex[4e + 1]
 * = the tie stamp of its last hold, t->ex[4e + 2] = its j or -1, t->ex[4e + 3] = its place in t->ih[0].
 * t->ih[0] = an indexed min-heap (pcs/cache/_iheap.h) of exactly the held leaves, keyed (H, stamp): the victim is
 * its top, the held leaf with the smallest H, ties to the block that got its H first (stamps are unique), as
 * gdsf.py's lazy heap gives. t->finfl = L (seconds). */
#include "_iheap.h"

#define GS 4                                       /* int64s per entry in t->ex */
#define GH(t, e) (((double *)(t)->ex)[GS * (e)])
#define GSTAMP(t, e) ((t)->ex[GS * (e) + 1])
#define GINFO(t, e) ((t)->ex[GS * (e) + 2])
#define GKIDS(t, j) ((t)->pchild[2 * (j)])
#define GENT(t, j) ((t)->pchild[2 * (j) + 1])

static int gdsf_init(Tier *t) {
    t->fcost0 = 1.0;
    return ih_alloc(t, 1);
}

/* data = (keys uint64 (n,), slots int32 (2**k >= 2n,), parent int32 (n,), cost float64 (n,) seconds, cost0
 * float64 (1,), the index's seed uint64 (1,)); None: no trace (every block a leaf costing 1 s) */
static int gdsf_load(Tier *t, PyObject *data) {
    if (data == Py_None) return 0;
    static const Py_ssize_t size[6] = {8, 4, 4, 8, 8, 8};
    Py_ssize_t len[6];
    if (data_take(t, data, 6, size, len) < 0) return -1;
    Py_ssize_t n = len[0];
    if (len[2] != n || len[3] != n || len[4] != 1) {
        PyErr_SetString(PyExc_ValueError, "gdsf data: bad lengths");
        return -1;
    }
    if (data_index(t, t->pbuf[0].buf, n, t->pbuf[1].buf, len[1], t->pbuf[5].buf, len[5]) < 0) return -1;
    t->pparent = t->pbuf[2].buf;
    t->pcost = t->pbuf[3].buf;
    t->fcost0 = ((const double *)t->pbuf[4].buf)[0];
    for (Py_ssize_t j = 0; j < n; j++)
        if (t->pparent[j] < -1 || t->pparent[j] >= n) {
            PyErr_SetString(PyExc_ValueError, "gdsf data: a parent out of range");
            return -1;
        }
    t->pchild = PyMem_Calloc(2 * (n + 1), sizeof(int32_t));    /* GKIDS, GENT per known block */
    if (!t->pchild) { PyErr_NoMemory(); return -1; }
    return 0;
}

/* the entry holding known block j in this tier, held by the policy (not pinned), or -1: GENT(t, j) if that
 * entry still has j's key (a freed entry has no flags; a reused one another key or a new GENT) */
static int32_t g_held(const Tier *t, int32_t j) {
    int32_t f = GENT(t, j);
    if (f < 0 || f >= t->ent_len) return -1;
    const Entry *x = &t->ent[f];
    return x->key == t->pkeys[j] && (x->flags & F_KNOWN) && !OUT(x) ? f : -1;
}

static int g_insert(Tier *t, int32_t e) {
    return ih_insert(t, t->ih, ih_double_rank(GH(t, e)), (uint64_t)GSTAMP(t, e), e, GS);
}

/* H = L + F x the block's cost, and the next stamp, for entry e; its j */
static int64_t g_price(Tier *t, int32_t e) {
    int64_t i = GINFO(t, e);
    GH(t, e) = t->finfl + (double)t->ent[e].aux * (i >= 0 ? t->pcost[i] : t->fcost0);
    GSTAMP(t, e) = t->next_seq++;
    return i;
}

/* gdsf.py _hold (e not in the heap): a fresh H and stamp, one more held child for the parent (out of the heap
 * when it had none), in the heap if a leaf; 0 or -1 (MemoryError) */
static int g_hold(Tier *t, int32_t e) {
    int64_t i = g_price(t, e);
    if (i >= 0) {
        int32_t p = t->pparent[i];
        if (p >= 0 && !GKIDS(t, p)++) {
            int32_t f = g_held(t, p);
            if (f >= 0) ih_delete(t, t->ih, f, GS);
        }
        if (GKIDS(t, i)) return 0;
    }
    return g_insert(t, e);
}

/* gdsf.py _unhold: out of the heap, one held child less for the parent, which enters the heap when it is held
 * and now a leaf; 0 or -1 (MemoryError) */
static int g_unhold(Tier *t, int32_t e) {
    ih_delete(t, t->ih, e, GS);
    int64_t i = GINFO(t, e);
    if (i < 0) return 0;
    int32_t p = t->pparent[i];
    if (p < 0 || --GKIDS(t, p)) return 0;
    int32_t f = g_held(t, p);
    return f >= 0 ? g_insert(t, f) : 0;
}

static int gdsf_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (!(x->flags & F_KNOWN)) {
        if (ih_reserve_ex(t, e, GS) < 0) return -1;
        x->flags |= F_KNOWN;
        x->aux = reused ? 2 : 1;
        int32_t j = data_find(t, x->key);
        GINFO(t, e) = j;
        IH_POS(t, e, GS) = -1;
        if (j >= 0) GENT(t, j) = e;
    } else x->aux += reused;
    return g_hold(t, e);
}

static void gdsf_unhold(Tier *t, int32_t e) { g_unhold(t, e); }   /* a memory error stays set for the caller */

/* gdsf.py touch (_unhold, F + 1, _hold): a new H and stamp; the parent's count is unchanged, so e stays a leaf
 * (re-keyed in place) or not (out of the heap) */
static void gdsf_touch(Tier *t, int32_t e) {
    t->ent[e].aux++;
    g_price(t, e);
    if (IH_POS(t, e, GS) >= 0) ih_rekey(t, t->ih, e, ih_double_rank(GH(t, e)), (uint64_t)GSTAMP(t, e), GS);
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
    int32_t e = t->ih->len ? ih_top(t->ih) : g_min_held(t);
    t->finfl = GH(t, e);
    return g_unhold(t, e) < 0 ? -1 : e;
}

/* entry e's item for gdsf_order: its heap key, (H, stamp) */
static IHItem gdsf_key(Tier *t, int32_t e) { return (IHItem){ih_double_rank(GH(t, e)), (uint64_t)GSTAMP(t, e), e}; }

/* held entries by (H, stamp) (gdsf.py order(): leaves or not) */
static Py_ssize_t gdsf_order(Tier *t, int32_t *out) { return ih_order(t, out, gdsf_key); }

/* a held entry's place in the heap: a leaf is in it with its (H, stamp), a parent is not */
static const char *g_check_entry(const Tier *t, int32_t e) {
    int64_t i = GINFO(t, e), at = IH_POS(t, e, GS);
    if (i >= 0 && GKIDS(t, i)) return at >= 0 ? "a held parent in the heap" : NULL;
    if (at < 0 || at >= t->ih->len) return "a held leaf not in the heap";
    const IHItem *it = &t->ih->q[at];
    return it->a == ih_double_rank(GH(t, e)) && it->b == (uint64_t)GSTAMP(t, e) ? NULL : "a heap key not the entry's";
}

/* gdsf.py _check: the held-children counts; the heap holds exactly the held leaves */
static const char *gdsf_check(Tier *t) {
    Py_ssize_t n = t->npbuf ? t->pbuf[0].len / 8 : 0, held = 0, leaves = 0;
    int32_t *cnt = PyMem_Calloc(n + 1, sizeof(int32_t));
    if (!cnt) return "out of memory";
    const char *why = ih_check(t, t->ih, GS);
    for (int32_t e = 0; !why && e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if (!(x->flags & F_KNOWN) || OUT(x)) continue;
        held++;
        int64_t i = GINFO(t, e);
        if (i != data_find(t, x->key) || (i >= 0 && g_held(t, (int32_t)i) != e)) { why = "wrong index"; break; }
        if (i >= 0 && t->pparent[i] >= 0) cnt[t->pparent[i]]++;
        leaves += IH_POS(t, e, GS) >= 0;
        why = g_check_entry(t, e);
    }
    for (Py_ssize_t i = 0; !why && i < n; i++) if (cnt[i] != GKIDS(t, i)) why = "held-children counts";
    PyMem_Free(cnt);
    if (!why && leaves != t->ih->len) why = "a heap item not of a held entry";
    if (!why && held != t->held) why = "held count differs from the known unpinned blocks";
    return why;
}

const PolOps POL_GDSF = {
    .name = "gdsf", .init = gdsf_init, .fini = ih_free, .add = gdsf_add, .remove = gdsf_unhold, .drop = gdsf_unhold,
    .touch = gdsf_touch, .victim = gdsf_victim, .order = gdsf_order, .check = gdsf_check, .load = gdsf_load,
};
