/* belady, compiled: the twin of pcs/cache/policies/belady.py (Belady's MIN in the event loop, an offline oracle;
 * docs/semantics.md §8, §12). The trace data (PolOps.load, built by pcs/cache/native.py from the policy's
 * TraceOracle): the blocks with hit-earning uses and each one's sorted use keys request << 24 | position, as CSR
 * arrays (pcs/cache/native.py): t->pkeys / t->pslots = their index (data_find: block hash -> j), their uses
 * t->ukeys[t->uoff[j] .. t->uoff[j + 1]), shared read-only by every tier reading the same data; t->ucur[j] = the
 * first use the clock has not passed (the clock only moves forward: TraceOracle.next_use's bisect becomes a
 * cursor, amortised O(1)). *t->clock = the request being admitted (the hierarchy counts admissions as
 * clocked() does).
 * t->ex[3e] = the block's key u (its next use, NEVER if none), t->ex[3e + 1] = its j or -1, t->ex[3e + 2] = its
 * place in its heap. Two indexed min-heaps (pcs/cache/_iheap.h) hold exactly the held blocks, ranked
 * (NEVER - u, block hash), as belady.py's one (-u, k) heap: t->ih[B_NEVER] those of key u = NEVER (rank 0, so by
 * hash alone), t->ih[B_USED] the others (rank > 0). Every rank-0 item precedes every other, so the top of the
 * union -- the block with the farthest next use, ties to the smallest hash -- is the top of B_NEVER if it has one,
 * else the top of B_USED: the same victim as one heap. Each heap holds about half the tier (on the Mooncake trace,
 * two tiers, 3.2 k and 3.5 k items on average at a victim; 91 % of the victims are never used again), so a
 * victim's delete and a block's insert walk a heap of half the size (-6 to -10 % of the whole replay's CPU:
 * docs/performance.md). A B_USED top whose use
 * has passed is re-keyed before it is chosen (in place if it has a later use; to NEVER: chosen, as it would
 * then top the one heap, B_NEVER being empty). */
#include "_iheap.h"

#define NEVER ((int64_t)1 << 62)
#define POS_BITS 24

#define BS 3                                       /* int64s per entry in t->ex */
#define BU(t, e) ((t)->ex[BS * (e)])
#define BINFO(t, e) ((t)->ex[BS * (e) + 1])
#define B_NEVER 0                                  /* t->ih[B_NEVER]: held blocks of key NEVER */
#define B_USED 1                                   /* t->ih[B_USED]: the others */

/* the heap of a block of key u */
static inline IHeap *b_heap(Tier *t, int64_t u) { return &t->ih[u == NEVER ? B_NEVER : B_USED]; }

static int belady_init(Tier *t) { return ih_alloc(t, 2); }

/* the heap's rank of next use u: larger u first */
static inline uint64_t b_rank(int64_t u) { return (uint64_t)(NEVER - u); }

/* data = (keys uint64 (n,), slots int32 (2**k >= 2n,), offsets int64 (n + 1,), uses int64 (m,), the index's seed
 * uint64 (1,)); None: no uses known (every key NEVER) */
static int belady_load(Tier *t, PyObject *data) {
    if (data == Py_None) return 0;
    static const Py_ssize_t size[5] = {8, 4, 8, 8, 8};
    Py_ssize_t len[5];
    if (data_take(t, data, 5, size, len) < 0) return -1;
    Py_ssize_t n = len[0];
    const int64_t *off = t->pbuf[2].buf;
    if (len[2] != n + 1 || off[0] != 0 || off[n] != len[3]) {
        PyErr_SetString(PyExc_ValueError, "belady data: bad lengths");
        return -1;
    }
    for (Py_ssize_t j = 0; j < n; j++)
        if (off[j] > off[j + 1]) { PyErr_SetString(PyExc_ValueError, "belady data: offsets must rise"); return -1; }
    if (data_index(t, t->pbuf[0].buf, n, t->pbuf[1].buf, len[1], t->pbuf[4].buf, len[4]) < 0) return -1;
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

/* belady.py add / touch: the block's key is its next use after now (re-keyed in place if it is held and stays in
 * its heap; moved if its key moves to or from NEVER) */
static int belady_add(Tier *t, int32_t e, int reused) {
    Entry *x = &t->ent[e];
    if (!(x->flags & F_KNOWN)) {
        if (ih_reserve_ex(t, e, BS) < 0) return -1;
        x->flags |= F_KNOWN;
        BINFO(t, e) = data_find(t, x->key);
        BU(t, e) = NEVER;
        IH_POS(t, e, BS) = -1;
    }
    IHeap *was = b_heap(t, BU(t, e));
    int64_t u = BU(t, e) = b_next_use(t, BINFO(t, e));
    IHeap *h = b_heap(t, u);
    if (IH_POS(t, e, BS) >= 0 && h == was) {
        ih_rekey(t, h, e, b_rank(u), x->key, BS);
        return 0;
    }
    ih_delete(t, was, e, BS);
    return ih_insert(t, h, b_rank(u), x->key, e, BS);
}

/* held: in a heap; a move between them may need room (a memory error stays set for the caller) */
static void belady_touch(Tier *t, int32_t e) { belady_add(t, e, 1); }

static void belady_remove(Tier *t, int32_t e) { ih_delete(t, b_heap(t, BU(t, e)), e, BS); }

static int32_t belady_victim(Tier *t) {
    IHeap *never = &t->ih[B_NEVER], *used = &t->ih[B_USED];
    int32_t e = never->len ? ih_top(never) : -1;
    while (e < 0) {
        int32_t f = ih_top(used);
        int64_t u = BU(t, f);
        if ((u >> POS_BITS) > *t->clock) e = f;             /* its use is still ahead: the farthest */
        else if ((BU(t, f) = b_next_use(t, BINFO(t, f))) == NEVER) {   /* passed, none after: it tops the union */
            BU(t, f) = u;
            e = f;
        } else ih_rekey(t, used, f, b_rank(BU(t, f)), t->ent[f].key, BS);  /* passed: re-keyed to its next */
    }
    belady_remove(t, e);
    return e;
}

/* entry e's item for belady_order: its heap key */
static IHItem belady_key(Tier *t, int32_t e) { return (IHItem){b_rank(BU(t, e)), t->ent[e].key, e}; }

/* held entries, farthest next use first (keys as last computed; ties: smaller hash) */
static Py_ssize_t belady_order(Tier *t, int32_t *out) { return ih_order(t, out, belady_key); }

/* belady.py _check: every held block is in the heap of its key with its key, and nothing else is */
static const char *belady_check(Tier *t) {
    Py_ssize_t held = 0;
    const char *why = ih_check(t, &t->ih[B_NEVER], BS);
    if (!why) why = ih_check(t, &t->ih[B_USED], BS);
    for (int32_t e = 0; !why && e < t->ent_len; e++) {
        Entry *x = &t->ent[e];
        if (!(x->flags & F_KNOWN) || OUT(x)) continue;
        held++;
        const IHeap *h = b_heap(t, BU(t, e));
        int64_t at = IH_POS(t, e, BS);
        if (at < 0 || at >= h->len || h->q[at].e != e || h->q[at].a != b_rank(BU(t, e)) || h->q[at].b != x->key)
            why = "a held block without an item of its key in the heap of its key";
    }
    if (!why && held != t->ih[B_NEVER].len + t->ih[B_USED].len) why = "a heap item not of a held block";
    if (!why && held != t->held) why = "held count differs from the known unpinned blocks";
    return why;
}

const PolOps POL_BELADY = {
    .name = "belady", .init = belady_init, .fini = ih_free, .add = belady_add, .remove = belady_remove, .drop = belady_remove,
    .touch = belady_touch, .victim = belady_victim, .order = belady_order, .check = belady_check,
    .load = belady_load,
};
