/* sieve, compiled: the twin of pcs/cache/policies/sieve.py (Zhang et al., "SIEVE is Simpler than LRU",
 * NSDI'24; libCacheSim Sieve.c; docs/semantics.md §8). Queue 0 holds every block the policy knows, pinned
 * ones included, front = oldest (the Python twin's tail), back = newest (its head); Entry.next points to the
 * newer block. The hand (t->hand, -1 = none) sweeps from old to new, clearing visited bits, passing over pinned
 * blocks without clearing theirs, and evicts the first unvisited unpinned block; it stays at the newer one. */
#include "_lruhier.h"

static int sieve_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (!(x->flags & F_KNOWN)) {
        x->flags |= F_KNOWN;
        q_append(t, 0, e);
    }
    if (reused) x->flags |= F_VISITED;
    return 0;
}

static void sieve_remove(Tier *t, int32_t e) { (void)t; (void)e; }   /* keeps its place and bit */

static void sieve_drop(Tier *t, int32_t e) {
    if (e == t->hand) t->hand = t->ent[e].next;
    q_unlink(t, e);
}

/* RetainingPolicy._forget (pcs/cache/_retain.c): a pinned block (still in the queue) leaving from the retain pool
 * is unlinked as sieve.py's add then drop do (the hand moves on if it was there) */
static void sieve_forget(Tier *t, int32_t e) { sieve_drop(t, e); }

static void sieve_touch(Tier *t, int32_t e) { t->ent[e].flags |= F_VISITED; }

static int32_t sieve_victim(Tier *t) {
    int32_t e = t->hand >= 0 ? t->hand : t->qhead[0];
    for (;;) {
        Entry *x = &t->ent[e];
        if (!OUT(x) && !(x->flags & F_VISITED)) break;
        if (!OUT(x)) x->flags &= ~F_VISITED;
        e = x->next >= 0 ? x->next : t->qhead[0];
    }
    t->hand = t->ent[e].next;
    q_unlink(t, e);
    return e;
}

static Py_ssize_t sieve_order(Tier *t, int32_t *out) {
    Py_ssize_t n = 0;
    int32_t start = t->hand >= 0 ? t->hand : t->qhead[0];
    for (int32_t e = start; e >= 0; e = t->ent[e].next) if (!OUT(&t->ent[e])) out[n++] = e;
    for (int32_t e = t->qhead[0]; e >= 0 && e != start; e = t->ent[e].next) if (!OUT(&t->ent[e])) out[n++] = e;
    return n;
}

static const char *sieve_check(Tier *t) {
    Py_ssize_t held = 0;
    int hand_seen = t->hand < 0;
    for (int32_t e = t->qhead[0]; e >= 0; e = t->ent[e].next) {
        if (!(t->ent[e].flags & F_KNOWN)) return "unknown block in the queue";
        held += !OUT(&t->ent[e]);
        hand_seen |= e == t->hand;
    }
    if (!hand_seen) return "the hand is not in the queue";
    return held == t->held ? NULL : "held count differs from the unpinned blocks of the queue";
}

const PolOps POL_SIEVE = {
    .name = "sieve", .add = sieve_add, .remove = sieve_remove, .drop = sieve_drop, .touch = sieve_touch,
    .victim = sieve_victim, .order = sieve_order, .check = sieve_check, .forget = sieve_forget,
};
