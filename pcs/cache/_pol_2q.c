/* 2q, compiled: the twin of pcs/cache/policies/twoq.py (Johnson & Shasha, VLDB'94, full version; libCacheSim
 * TwoQ.c; docs/semantics.md §8). Queue 0 = A1in (FIFO, pinned blocks stay in place), 1 = Am (LRU; a pinned block
 * leaves it, flag F_PAM, and returns to its MRU end). t->ghost = A1out (ghost keys, oldest first), t->seen = the
 * expected keys found in A1out. opt[0] = A1in's size (Kin) in blocks, opt[1] = A1out's (Kout) in keys, as the
 * Python policy truncates them. t->npin_q0 = pinned blocks in A1in. */
#include "_lruhier.h"

enum { A1IN = 0, AM = 1 };

/* init, expect: the ghost-list policies' shared ones (_lruhier.h); a key expected from A1out will enter Am */
#define twoq_init ghost_policy_init
#define twoq_expect ghost_policy_expect

static int twoq_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (x->q == A1IN) { t->npin_q0--; return 0; }          /* pinned in place, released */
    if (x->flags & F_PAM) { x->flags &= ~F_PAM; q_append(t, AM, e); return 0; }
    int ghost = kset_take(t->seen, x->key) || ghost_pop(t->ghost, x->key);
    x->flags |= F_KNOWN;
    q_append(t, reused || ghost ? AM : A1IN, e);
    return 0;
}

static void twoq_remove(Tier *t, int32_t e) {
    Entry *x = &t->ent[e];
    if (x->q == AM) { q_unlink(t, e); x->flags |= F_PAM; }
    else t->npin_q0++;
}

static void twoq_drop(Tier *t, int32_t e) { q_unlink(t, e); }

/* RetainingPolicy._forget (pcs/cache/_retain.c): a pinned block leaving from the retain pool: one pinned in place in
 * A1in is unlinked (no A1out key); one that left Am (F_PAM) is in no queue (twoq.py add then drop) */
static void twoq_forget(Tier *t, int32_t e) {
    if (t->ent[e].q != A1IN) return;
    t->npin_q0--;
    q_unlink(t, e);
}

static void twoq_touch(Tier *t, int32_t e) {
    if (t->ent[e].q == AM) { q_unlink(t, e); q_append(t, AM, e); }
}

static int32_t twoq_victim(Tier *t) {
    Py_ssize_t in_free = t->qlen[A1IN] - t->npin_q0;
    if (!((t->qlen[A1IN] > t->opt[0] && in_free) || !t->qlen[AM])) return q_pop(t, AM);
    int32_t e;
    for (;;) {
        e = q_pop(t, A1IN);
        if (!OUT(&t->ent[e])) break;
        q_append(t, A1IN, e);                              /* in use: passed over, to the back */
    }
    if (t->opt[1] > 0) {
        if (t->ghost->nres >= t->opt[1]) ghost_pop_oldest(t->ghost);
        int32_t g = tadd(t->ghost, t->ent[e].key, 0);
        if (g < 0) return -1;
        lru_append(t->ghost, g);
    }
    return e;
}

static Py_ssize_t twoq_order(Tier *t, int32_t *out) {
    Py_ssize_t n = q_collect(t, A1IN, 1, out);
    return n + q_collect(t, AM, 0, out + n);
}

static const char *twoq_check(Tier *t) {
    Py_ssize_t pinned = 0;
    for (int32_t e = t->qhead[A1IN]; e >= 0; e = t->ent[e].next) pinned += OUT(&t->ent[e]) != 0;
    if (pinned != t->npin_q0) return "pinned count of A1in is off";
    if (t->qlen[A1IN] - pinned + t->qlen[AM] != t->held) return "queues do not hold the held blocks";
    if (t->ghost->nres > (t->opt[1] > 0 ? t->opt[1] : 0)) return "A1out over its size";
    for (int32_t g = t->ghost->head; g >= 0; g = t->ghost->ent[g].next) {
        int32_t e = tfind(t, t->ghost->ent[g].key);
        if (e >= 0 && (t->ent[e].flags & F_KNOWN)) return "a key both in A1out and known";
    }
    return NULL;
}

const PolOps POL_2Q = {
    .name = "2q", .init = twoq_init, .add = twoq_add, .remove = twoq_remove, .drop = twoq_drop,
    .touch = twoq_touch, .expect = twoq_expect, .victim = twoq_victim, .order = twoq_order, .check = twoq_check,
    .forget = twoq_forget,
};
