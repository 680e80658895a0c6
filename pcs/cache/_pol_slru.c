/* slru (alias protected), compiled: the twin of pcs/cache/policies/slru.py (segmented LRU, Karedla, Love and
 * Wherry 1994; libCacheSim SLRU.c; docs/semantics.md §8). Queue 0 = probation, 1 = protected, each front = LRU.
 * opt[0] = the protected segment's size in blocks (floor(protected_share x capacity), from the Python policy).
 * A block released as reused (a hit) or touched goes to protected; protected overflow goes to probation's MRU
 * end at the end of the batch; victims from probation first. Pinned blocks leave their segment. */
#include "_lruhier.h"

enum { PROB = 0, PROT = 1 };

static void slru_rebalance(Tier *t) {
    while (t->qlen[PROT] > t->opt[0]) q_append(t, PROB, q_pop(t, PROT));
}

static int slru_add(Tier *t, int32_t e, int reused) {
    q_append(t, reused ? PROT : PROB, e);
    return 0;
}

static void slru_add_end(Tier *t, int reused) {
    if (reused) slru_rebalance(t);
}

static void slru_remove(Tier *t, int32_t e) { q_unlink(t, e); }

static void slru_touch(Tier *t, int32_t e) {
    q_unlink(t, e);
    q_append(t, PROT, e);
}

static int32_t slru_victim(Tier *t) { return q_pop(t, t->qlen[PROB] ? PROB : PROT); }

/* PolOps.add_run: slru_add of each (one segment, its tail in a local) */
static int slru_add_run(Tier *t, const int32_t *ents, Py_ssize_t n, int reused) {
    q_append_run(t, reused ? PROT : PROB, ents, n);
    return 0;
}

/* PolOps.victims: probation's first ones, then protected's (slru_victim n times: a victim's deletion changes
 * neither segment) */
static int slru_victims(Tier *t, Py_ssize_t n, int32_t *out) {
    Py_ssize_t a = n < t->qlen[PROB] ? n : t->qlen[PROB];
    if (a) q_pop_run(t, PROB, out, a);
    if (n > a) q_pop_run(t, PROT, out + a, n - a);
    return 0;
}

static Py_ssize_t slru_order(Tier *t, int32_t *out) {
    Py_ssize_t n = q_collect(t, PROB, 0, out);
    return n + q_collect(t, PROT, 0, out + n);
}

static const char *slru_check(Tier *t) {
    if (t->qlen[PROT] > t->opt[0]) return "protected segment over its size";
    if (t->qlen[PROB] + t->qlen[PROT] != t->held) return "segments do not hold the held blocks";
    return NULL;
}

const PolOps POL_SLRU = {
    .name = "slru", .add = slru_add, .add_end = slru_add_end, .remove = slru_remove, .drop = slru_remove,
    .touch = slru_touch, .touch_end = slru_rebalance, .victim = slru_victim, .order = slru_order,
    .check = slru_check, .add_run = slru_add_run, .victims = slru_victims,
};
