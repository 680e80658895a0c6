/* s3fifo, compiled: the twin of pcs/cache/policies/s3fifo.py (Yang et al., "FIFO queues are all you need for
 * cache eviction", SOSP'23; libCacheSim S3FIFO.c; docs/semantics.md §8). Queue 0 = small, 1 = main (FIFO, front =
 * oldest; pinned blocks keep their place and frequency, a scan that meets one moves it to the back). Entry.aux =
 * frequency. t->ghost = the ghost FIFO (keys evicted from small), t->seen = expected keys found in it.
 * opt[] = small size, main size (blocks), ghost size (keys), move-to-main threshold, as the Python policy
 * truncates them. t->npin_q0 = pinned blocks in small, t->npin = pinned blocks known to the policy. */
#include "_lruhier.h"

enum { SMALL = 0, MAIN = 1 };

/* init, expect: the ghost-list policies' shared ones (_lruhier.h) */
#define s3_init ghost_policy_init
#define s3_expect ghost_policy_expect

static int s3_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (x->flags & F_KNOWN) {                  /* pinned, released: keeps its place */
        t->npin--;
        if (x->q == SMALL) t->npin_q0--;
        if (reused) x->aux++;
        return 0;
    }
    int from_ghost = ghost_pop(t->ghost, x->key);     /* not announced by expect: look it up now */
    from_ghost |= kset_take(t->seen, x->key) != 0;
    int to_main = from_ghost || reused || (!t->has_evicted && t->qlen[SMALL] >= t->opt[0]);
    q_append(t, to_main ? MAIN : SMALL, e);
    x->aux = 0;
    x->flags |= F_KNOWN;
    return 0;
}

static void s3_remove(Tier *t, int32_t e) {
    t->npin++;
    if (t->ent[e].q == SMALL) t->npin_q0++;
}

static void s3_drop(Tier *t, int32_t e) { q_unlink(t, e); }

/* RetainingPolicy._forget (pcs/cache/_retain.c): a pinned block (in place in small or main) leaving from the retain
 * pool: unpinned then unlinked, no ghost key (s3fifo.py add then drop) */
static void s3_forget(Tier *t, int32_t e) {
    t->npin--;
    if (t->ent[e].q == SMALL) t->npin_q0--;
    q_unlink(t, e);
}

static void s3_touch(Tier *t, int32_t e) { t->ent[e].aux++; }

static int s3_to_ghost(Tier *t, uint64_t key) {
    return ghost_push(t->ghost, key, (Py_ssize_t)t->opt[2]);
}

/* one pass of libCacheSim S3FIFO_evict_fifo: the victim, -2 after moving blocks to main, -1 on memory error */
static int32_t s3_evict_small(Tier *t) {
    while (t->qlen[SMALL] > t->npin_q0) {
        int32_t e = q_pop(t, SMALL);
        Entry *x = &t->ent[e];
        if (OUT(x)) q_append(t, SMALL, e);
        else if (x->aux >= t->opt[3]) { q_append(t, MAIN, e); x->aux = 0; }
        else return s3_to_ghost(t, x->key) < 0 ? -1 : e;
    }
    return -2;
}

/* libCacheSim S3FIFO_evict_main: second chances until a block with frequency 0 goes; -2 if none can */
static int32_t s3_evict_main(Tier *t) {
    if (t->qlen[MAIN] <= t->npin - t->npin_q0) return -2;
    for (;;) {
        int32_t e = q_pop(t, MAIN);
        Entry *x = &t->ent[e];
        if (OUT(x)) q_append(t, MAIN, e);
        else if (x->aux >= 1) { q_append(t, MAIN, e); x->aux = (x->aux < 3 ? x->aux : 3) - 1; }
        else return e;
    }
}

static int32_t s3_victim(Tier *t) {
    t->has_evicted = 1;
    for (;;) {
        int32_t e;
        if (t->qlen[MAIN] > t->opt[1] || t->qlen[SMALL] - t->npin_q0 == 0) {
            e = s3_evict_main(t);
            if (e == -2) e = s3_evict_small(t);
        } else e = s3_evict_small(t);
        if (e != -2) return e;
    }
}

static Py_ssize_t s3_order(Tier *t, int32_t *out) {
    Py_ssize_t n = q_collect(t, SMALL, 1, out);
    return n + q_collect(t, MAIN, 1, out + n);
}

static const char *s3_check(Tier *t) {
    Py_ssize_t pin_small = 0, pin_main = 0;
    for (int32_t e = t->qhead[SMALL]; e >= 0; e = t->ent[e].next) pin_small += OUT(&t->ent[e]) != 0;
    for (int32_t e = t->qhead[MAIN]; e >= 0; e = t->ent[e].next) pin_main += OUT(&t->ent[e]) != 0;
    if (pin_small != t->npin_q0 || pin_small + pin_main != t->npin) return "pinned counts are off";
    if (t->qlen[SMALL] + t->qlen[MAIN] - t->npin != t->held) return "queues do not hold the held blocks";
    if (t->ghost->nres > (t->opt[2] > 0 ? t->opt[2] : 0)) return "ghost queue over its size";
    return NULL;
}

const PolOps POL_S3FIFO = {
    .name = "s3fifo", .init = s3_init, .add = s3_add, .remove = s3_remove, .drop = s3_drop, .touch = s3_touch,
    .expect = s3_expect, .victim = s3_victim, .order = s3_order, .check = s3_check, .forget = s3_forget,
};
