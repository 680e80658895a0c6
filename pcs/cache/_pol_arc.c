/* arc, compiled: the twin of pcs/cache/policies/arc.py (Megiddo & Modha, FAST'03, Figure 4, in the order of
 * libCacheSim ARC.c; docs/semantics.md §8). Queue 0 = T1, 1 = T2 (LRU, front = LRU; a pinned block leaves its
 * list: flag F_PAM, aux = the list it left). t->ghost = B1, t->ghost2 = B2 (oldest first), t->seen = expected keys
 * found in a ghost list (value 1 or 2), t->pending = per expected key of the last expect batch, where it was
 * found (0, 1, 2); the k-th of n evictions pairs with the k-th of the last n. t->p = the target size of T1 (a
 * double, as the Python float). opt[0] = the capacity C in blocks. */
#include "_lruhier.h"

enum { T1 = 0, T2 = 1 };
/* the current eviction batch (evict_begin): index, size, first pending flag used, leading zero flags */
#define EV_I npin_q0
#define EV_FROM inflation
#define EV_ZEROS next_seq

static int arc_init(Tier *t) {
    t->ghost = kstore_new();
    t->ghost2 = t->ghost ? kstore_new() : NULL;
    t->seen = t->ghost2 ? kstore_new() : NULL;
    return t->seen ? 0 : -1;
}

/* libCacheSim ARC_find on a ghost: adapt p, drop the ghost key; 1 (B1), 2 (B2) or 0 */
static int arc_ghost_lookup(Tier *t, uint64_t key) {
    double b1 = (double)t->ghost->nres, b2 = (double)t->ghost2->nres, c = (double)t->opt[0];
    if (tfind(t->ghost, key) >= 0) {
        double d = b2 / b1 > 1.0 ? b2 / b1 : 1.0;
        t->p = t->p + d < c ? t->p + d : c;
        ghost_pop(t->ghost, key);
        return 1;
    }
    if (tfind(t->ghost2, key) >= 0) {
        double d = b1 / b2 > 1.0 ? b1 / b2 : 1.0;
        t->p = t->p - d > 0.0 ? t->p - d : 0.0;
        ghost_pop(t->ghost2, key);
        return 2;
    }
    return 0;
}

static int arc_expect_begin(Tier *t) {
    t->plen = 0;
    return 0;
}

static int arc_expect(Tier *t, uint64_t key) {
    int32_t e = tfind(t, key);
    if (e >= 0 && (t->ent[e].flags & F_KNOWN)) return 0;
    int where = arc_ghost_lookup(t, key);
    if (where && kset_put(t->seen, key, where) < 0) return -1;
    if (t->plen == t->pcap) {
        Py_ssize_t c = t->pcap ? 2 * t->pcap : 64;
        uint8_t *p = PyMem_Realloc(t->pending, c);
        if (!p) { PyErr_NoMemory(); return -1; }
        t->pending = p;
        t->pcap = c;
    }
    t->pending[t->plen++] = (uint8_t)where;
    return 0;
}

static int arc_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    int was = 0;
    if (x->flags & F_PAM) {
        was = (int)x->aux;
        x->flags &= ~F_PAM;
    } else if (kset_take(t->seen, x->key) || arc_ghost_lookup(t, x->key)) {
        was = 2;
    }
    x->flags |= F_KNOWN;
    q_append(t, reused || was == 2 ? T2 : T1, e);
    return 0;
}

static void arc_remove(Tier *t, int32_t e) {
    Entry *x = &t->ent[e];
    x->aux = x->q == T1 ? 1 : 2;
    q_unlink(t, e);
    x->flags |= F_PAM;
}

static void arc_drop(Tier *t, int32_t e) { q_unlink(t, e); }

static void arc_touch(Tier *t, int32_t e) {
    q_unlink(t, e);
    q_append(t, T2, e);
}

static void arc_evict_begin(Tier *t, Py_ssize_t n) {
    Py_ssize_t m = n < t->plen ? n : t->plen;
    t->EV_I = 0;
    t->EV_ZEROS = n - m;
    t->EV_FROM = t->plen - m;
    t->plen = 0;                       /* the Python twin's self._pending = [] */
}

/* REPLACE: T1's LRU block to B1 or T2's to B2; -1 on memory error */
static int32_t arc_replace(Tier *t, int in_b2) {
    Py_ssize_t n1 = t->qlen[T1];
    int from_t1 = (n1 && ((double)n1 > t->p || ((double)n1 == t->p && in_b2))) || !t->qlen[T2];
    int32_t e = q_pop(t, from_t1 ? T1 : T2);
    Tier *g = from_t1 ? t->ghost : t->ghost2;
    int32_t k = tadd(g, t->ent[e].key, 0);
    if (k < 0) return -1;
    lru_append(g, k);
    return e;
}

static int32_t arc_case_iv(Tier *t) {
    Py_ssize_t c = (Py_ssize_t)t->opt[0], t1 = t->qlen[T1], b1 = t->ghost->nres;
    if (t1 + b1 + 1 > c) {
        if (b1) {
            ghost_pop_oldest(t->ghost);
            return arc_replace(t, 0);
        }
        return q_pop(t, T1);
    }
    if (t1 + b1 + t->qlen[T2] + t->ghost2->nres >= 2 * c && t->ghost2->nres) ghost_pop_oldest(t->ghost2);
    return arc_replace(t, 0);
}

static int32_t arc_victim(Tier *t) {
    int64_t i = t->EV_I++;
    int f = i < t->EV_ZEROS ? 0 : t->pending[t->EV_FROM + (i - t->EV_ZEROS)];
    return f ? arc_replace(t, f == 2) : arc_case_iv(t);
}

static Py_ssize_t arc_order(Tier *t, int32_t *out) {
    Py_ssize_t n = q_collect(t, T1, 0, out);
    return n + q_collect(t, T2, 0, out + n);
}

static const char *arc_check(Tier *t) {
    if (t->qlen[T1] + t->qlen[T2] != t->held) return "T1 and T2 do not hold the held blocks";
    if (!(t->p >= 0.0 && t->p <= (double)t->opt[0])) return "p outside [0, C]";
    return NULL;
}

const PolOps POL_ARC = {
    .name = "arc", .init = arc_init, .add = arc_add, .remove = arc_remove, .drop = arc_drop, .touch = arc_touch,
    .expect_begin = arc_expect_begin, .expect = arc_expect, .evict_begin = arc_evict_begin, .victim = arc_victim,
    .order = arc_order, .check = arc_check,
};
