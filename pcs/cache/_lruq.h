/* The inline LRU order of a pcs.cache._lruhier tier (ops == NULL, pcs/cache/policies/lru.py): a queue of entry
 * indices in the order they became evictable, read from the front, with lazy deletion.
 *
 * LRU keeps the unpinned blocks in the order of their last add (LRUPolicy: an OrderedDict, move_to_end on touch,
 * popitem(last=False) on evict; docs/semantics.md §8). A doubly linked list through the entries gives that order,
 * but its eviction walk is a chain of dependent reads of entries scattered over the table (each names the next),
 * one cache miss after another: at 10x Mooncake the compiled step loop spent more time there than anywhere else.
 * Here each add appends the entry's index to t->lq and stores its position in the entry (Entry.prev); a block taken
 * out of the order (pinned, dropped, evicted) gets prev = -1, and its item stays behind, stale. An item is live
 * when its entry's prev is its own position, so the live items are exactly each unpinned block's last add, in add
 * order: the same order, victims and evictions as the list (tests/cache: the hierarchy's `check` and the diffs
 * against pcs.cache.hierarchy). The front is a plain array, so the entries of the next victims are known in
 * advance and are prefetched (their misses overlap instead of following one another). A stale item is also
 * marked in the queue itself (its index set to -1 when its entry leaves the order: the entry is in hand then),
 * so that passing stale items (eviction, compaction) reads only the queue, never their entries: at 10x Mooncake
 * most items of the CPU tier's queue are stale (every restore or demotion of a resident block leaves one).
 *
 * Fields of Tier (pcs/cache/_lruhier.h): lq (lqcap + LQ_AHEAD allocated, kept_alloc: pcs/_kept.h), lqh (front), lqn (end);
 * held counts the live items. When the end reaches lqcap the live items move to the front (in order), into an array twice
 * as large when more than 1 / LQ_SPARE were live: O(1) amortised per add, at most 8 * LQ_SPARE B per block of the tier's peak
 * held. Entry.next is not used here (it chains the table's free list), except as the CPU tier's position in a
 * table shared by the GPU and CPU tiers (Tier.lqoff; a free entry is in no queue).
 */
#ifndef PCS_LRUQ_H
#define PCS_LRUQ_H
#include "_lruhier.h"

#define LQ_AHEAD 16     /* victims' entries prefetched this many items ahead */
/* after a compaction at most 1 / LQ_SPARE of the array is live: the next one comes after (LQ_SPARE - 1) / LQ_SPARE
 * of it is appended, and writes each live item's position into its entry (a random write): at most 1 / (LQ_SPARE
 * - 1) entry write per append (2: up to 1 per append; cachegrind, 10x Mooncake two-tier: 0.4 cache misses per block
 * access went to these writes) */
#define LQ_SPARE 4

/* a prefetch for writing of entry e's cache line, e any item of a queue (-1: stale or padding): a prefetch of an
 * address outside the array does not fault, so no test of e (the address made as an integer: no pointer out of the
 * array) -- a test and a branch less per victim in the walks below */
static inline void ent_prefetch(const Entry *ent, int32_t e) {
    __builtin_prefetch((const void *)((uintptr_t)ent + (uintptr_t)(intptr_t)e * sizeof(Entry)), 1, 1);
}

/* entry e's position in t's queue (-1: not in it): Entry.prev, or Entry.next for the CPU tier of a table shared
 * with the GPU tier (Tier.lqoff: one entry then carries both tiers' positions) */
static inline int32_t *lq_pos(const Tier *t, int32_t e) { return (int32_t *)((char *)&t->ent[e] + t->lqoff); }

/* the live items of t->lq moved to the front of an array of cap items (cap >= held); 0 or -1 (no memory). The
 * array has LQ_AHEAD more items past cap, and a new one is filled with -1 past its live items: every item lq_evict
 * reads ahead of the front for its prefetches (up to LQ_AHEAD past the end) is -1 or an entry index the table has
 * (entries are never given back: a stale index is still an entry), so it reads them with no bounds test */
static inline int lq_compact(Tier *t, Py_ssize_t cap) {
    int32_t *dst = cap == t->lqcap ? t->lq : kept_alloc(sizeof(int32_t) * (size_t)(cap + LQ_AHEAD));   /* _kept.h */
    if (!dst) { PyErr_NoMemory(); return -1; }
    Py_ssize_t j = 0;
    const int32_t *const q = t->lq;
    char *const pos = (char *)t->ent + t->lqoff;       /* entry e's position at pos + e * sizeof(Entry) (lq_pos), read */
    const Py_ssize_t end = t->lqn;                     /* once: a store to an entry may alias the Tier's fields */
    for (Py_ssize_t i = t->lqh; i < end; i++) {
        int32_t a = q[i + LQ_AHEAD];                  /* in the padding past lqcap: -1 or an entry (see above) */
        if (a >= 0) __builtin_prefetch(pos + (size_t)a * sizeof(Entry), 1, 1);   /* its position is written below */
        int32_t e = q[i];
        if (e < 0) continue;
        *(int32_t *)(pos + (size_t)e * sizeof(Entry)) = (int32_t)j;
        dst[j++] = e;
    }
    if (dst != t->lq) {
        memset(dst + j, 0xff, sizeof(int32_t) * (size_t)(cap + LQ_AHEAD - j));
        kept_free(t->lq);
        t->lq = dst;
        t->lqcap = cap;
    }
    t->lqh = 0;
    t->lqn = j;
    return 0;
}

/* entry e (not in the order) becomes the most recently used; 0 or -1 (no memory) */
static inline int lq_append(Tier *t, int32_t e) {
    if (t->lqn == t->lqcap) {
        Py_ssize_t cap = t->lqcap;
        if (!cap) cap = 64;
        while (LQ_SPARE * t->held >= cap) cap *= 2;
        if (cap > INT32_MAX) { PyErr_NoMemory(); return -1; }
        if (lq_compact(t, cap) < 0) return -1;
    }
    *lq_pos(t, e) = (int32_t)t->lqn;
    t->lq[t->lqn++] = e;
    t->held++;
    return 0;
}

/* room for n more items past the queue's end: when they do not fit, a compaction (into an array twice as large
 * until at most 1 / LQ_SPARE of it holds the live items and the n); 0 or -1 (no memory) */
static inline int lq_room(Tier *t, Py_ssize_t n) {
    if (t->lqn + n <= t->lqcap) return 0;
    Py_ssize_t cap = t->lqcap ? t->lqcap : 64;
    while (LQ_SPARE * (t->held + n) >= cap) cap *= 2;
    if (cap > INT32_MAX) { PyErr_NoMemory(); return -1; }
    return lq_compact(t, cap);
}

/* entries es[0 .. n) (none in the order, distinct) become the most recently used, in that order, each entry's flags
 * or-ed with flag (0: none): n lq_append calls with the room made once (a compaction, as lq_append's, when the n
 * items do not fit past the end) and the tier's fields read once; 0 or -1 (no memory) */
static inline __attribute__((always_inline)) int lq_append_n(Tier *t, const int32_t *es, Py_ssize_t n,
                                                              uint8_t flag) {   /* inlined: a flag 0 compiles to no store */
    if (lq_room(t, n) < 0) return -1;
    Entry *ent = t->ent;
    const size_t off = t->lqoff;
    int32_t *q = t->lq + t->lqn, pos = (int32_t)t->lqn;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t e = es[i];
        if (flag) ent[e].flags |= flag;
        *(int32_t *)((char *)&ent[e] + off) = pos + (int32_t)i;
        q[i] = e;
    }
    t->lqn += n;
    t->held += n;
    return 0;
}

/* entry e (in the order) leaves it: its item goes stale (marked -1) */
static inline void lq_unlink(Tier *t, int32_t e) {
    int32_t *p = lq_pos(t, e);
    t->lq[*p] = -1;
    *p = -1;
    t->held--;
}

/* the position of the first live item at or after i (one exists) */
static inline Py_ssize_t lq_live(const Tier *t, Py_ssize_t i) {
    while (t->lq[i] < 0) i++;
    return i;
}

/* lq_evict's walks, each compiled on its own (lq_walk's `kind` a constant): no test of the kind per victim */
enum { LQ_OWN, LQ_SH_KEEP, LQ_SH_DEL, LQ_SH_CPU };   /* LQ_SH_CPU: LQ_SH_DEL of the CPU tier (constants below) */

/* lq_evict's walk over n victims from the front i (returned: the position past the last victim); kind LQ_OWN: a
 * tier of its own table, every victim deleted from it, its key to out; LQ_SH_KEEP: a tier of a shared table, its
 * victims' entries to oute, kept in the table; LQ_SH_DEL: a tier of a shared table, victims in no tier any more
 * deleted from it (direct, a constant: the shared table in direct mode, Tier.dmap -- a deletion is one store to
 * dmap[key], its home the victim's key, prefetched as a hashed table's home slot is; else the slots' backward
 * shift). A shared table's victims' keys are not written (out not read): its hierarchy has two tiers, so
 * its callers only count them (pcs/cache/_lruhier.c: the cascade and write-through's drops).
 * The tier's arrays are read into locals once: a victim's flag store (a byte) may alias any field of the Tier; so
 * are LQ_SH_DEL's free list and count of deletions (the table's fields written once, after the walk) */
static inline __attribute__((always_inline)) Py_ssize_t lq_walk(Tier *t, Py_ssize_t i, Py_ssize_t n, uint64_t *out,
                                                                int32_t *oute, const int kind, const int direct) {
    const int32_t *const q = t->lq;
    Entry *const ent = t->ent;
    OaSlot *const slots = t->slots;                    /* the table's arrays, not moved by a deletion */
    const uint64_t mask = t->mask;
    /* the CPU tier of a shared table keeps its positions in Entry.next, its flag F_CPU (sh_open): constants, two
     * registers fewer in its walk */
    const size_t off = kind == LQ_SH_CPU ? offsetof(Entry, next) : t->lqoff;
    const int bits = t->bits;
    const uint8_t keep = kind == LQ_SH_CPU ? (uint8_t)~F_CPU : (uint8_t)~t->inflag;   /* own table: no flag, 0xff */
    Tier *const tab = t->shared ? t->shared : t;
    int32_t *const dmap = direct ? tab->dmap : NULL;   /* direct mode: key -> entry + 1 (LQ_SH_DEL, LQ_SH_CPU) */
    int32_t free_head = tab->free_head;               /* LQ_SH_DEL's deletions: tdel_home's steps in locals */
    Py_ssize_t kept = 0;                               /* LQ_SH_DEL's victims still in the other tier (not deleted) */
    for (Py_ssize_t v = 0; v < n; v++) {
        while (q[i] < 0) i++;                          /* lq_live */
        ent_prefetch(ent, q[i + LQ_AHEAD]);           /* in the array's padding past the end: -1 */
        if (kind != LQ_SH_KEEP) {                      /* the home slot of an entry that may be deleted */
            int32_t b = q[i + LQ_AHEAD / 2];
            if (b >= 0 && direct) __builtin_prefetch(&dmap[ent[b].key], 1, 1);
            else if (b >= 0) __builtin_prefetch(&slots[kind == LQ_OWN ? key_hash(ent[b].key) >> (64 - bits)
                                                                      : sh_home(&ent[b], bits)], 1, 1);
        }
        int32_t e = q[i++];                            /* (home(): its entry came before) */
        *(int32_t *)((char *)&ent[e] + off) = -1;      /* *lq_pos(t, e) */
        if (kind == LQ_OWN) { out[v] = ent[e].key; tdel(tab, e); }
        else if (kind == LQ_SH_KEEP) { ent[e].flags &= keep; oute[v] = e; }
        else if (!((ent[e].flags &= keep) & (F_GPU | F_CPU))) {   /* in no tier any more: deleted (home from aux) */
            if (direct) dmap[ent[e].key] = 0;
            else tdel_shift(tab, slots, mask, bits, e, sh_home(&ent[e], bits));
            ent[e].next = free_head;                   /* to the free list; its flags are 0 (no tier) and its aux */
            free_head = e;                             /* and q are set again by the add that takes it (sh_fill) */
        } else kept++;                                 /* (counted here, the rare case: one live value less per victim) */
    }
    if (kind == LQ_SH_DEL || kind == LQ_SH_CPU) {
        tab->free_head = free_head;
        tab->nres -= n - kept;
    }
    return i;
}

/* lq_walk's walk for the CPU tier of a shared table (LQ_SH_CPU) out of line: inlined into its callers (the
 * demotion of GPU victims), its loop's values did not fit the registers (callgrind: spills per victim); one walk
 * compiled per mode of the table (direct: Tier.dmap) */
static __attribute__((noinline)) Py_ssize_t lq_walk_cpu(Tier *t, Py_ssize_t i, Py_ssize_t n) {
    return t->shared->dmap ? lq_walk(t, i, n, NULL, NULL, LQ_SH_CPU, 1) : lq_walk(t, i, n, NULL, NULL, LQ_SH_CPU, 0);
}

/* the n least recently used entries (n <= held) leave the order, their keys to out in eviction order (a tier of its
 * own table; a shared table's: not written, lq_walk), the tier's
 * residency flag (Tier.inflag) cleared; with oute NULL they leave the tier (the deletions of n times: unlink the
 * first, tdel; a tier of a table shared by two tiers, t->shared, deletes from that table those now in no tier),
 * else their entries go to oute and stay in the table (the caller frees those in no tier, pcs/cache/_lruhier.c
 * sh_free). Each victim's entry is prefetched LQ_AHEAD items before,
 * its home slot LQ_AHEAD / 2 items before when it may be deleted (not with oute: its victims
 * move to the CPU tier or are freed later; stale items: nothing). The items past the last victim are prefetched
 * too: they are the next eviction's first victims (no burst at the start of each eviction) */
static inline void lq_evict(Tier *t, Py_ssize_t n, uint64_t *out, int32_t *oute) {
    const int32_t *q = t->lq;
    if (t->lqh == 0)         /* a fresh front (start, compaction): no eviction before prefetched it */
        for (Py_ssize_t k = 0; k < LQ_AHEAD; k++) if (q[k] >= 0) __builtin_prefetch(&t->ent[q[k]], 1, 1);
    Py_ssize_t i;
    if (!t->shared) i = lq_walk(t, t->lqh, n, out, NULL, LQ_OWN, 0);
    else if (oute) i = lq_walk(t, t->lqh, n, out, oute, LQ_SH_KEEP, 0);
    else if (t->inflag == F_CPU && t->lqoff == offsetof(Entry, next)) i = lq_walk_cpu(t, t->lqh, n);
    else if (t->shared->dmap) i = lq_walk(t, t->lqh, n, out, NULL, LQ_SH_DEL, 1);
    else i = lq_walk(t, t->lqh, n, out, NULL, LQ_SH_DEL, 0);
    t->held -= n;
    if (!t->held) i = t->lqn = 0;   /* nothing live behind: start again at the front */
    t->lqh = i;
}

/* the demotion of n GPU victims (n <= g->held) in their eviction walk, for a table shared by the GPU tier g and the
 * CPU tier c (write-back; pcs/cache/_lruhier.c sh_demote, which has made room for n items past c's queue end and
 * checked that they fit c's unpinned room): each victim leaves g's order (lq_walk, LQ_SH_KEEP: its flag F_GPU
 * cleared) and is appended to c's (lq_append_n with F_CPU: sh_insert's last step), a CPU copy it had taken out of
 * c's order first (sh_insert's first step: the block moves to the end). The GPU tier keeps its queue positions in
 * Entry.prev, the CPU tier in Entry.next (sh_open). Returns the victims that had no CPU copy (sh_insert's fresh).
 * Out of line, as lq_walk_cpu (callgrind, 10x: fewer instructions than inlined into sh_demote) */
static __attribute__((noinline)) Py_ssize_t lq_demote(Tier *g, Tier *c, Py_ssize_t n) {
    const int32_t *const q = g->lq;
    Entry *const ent = g->ent;
    if (g->lqh == 0)         /* a fresh front (start, compaction): no eviction before prefetched it (lq_evict) */
        for (Py_ssize_t k = 0; k < LQ_AHEAD; k++) if (q[k] >= 0) __builtin_prefetch(&ent[q[k]], 1, 1);
    int32_t *const cq = c->lq;
    const int32_t base = (int32_t)c->lqn, end = base + (int32_t)n;   /* c's positions of the n appends (< lqcap) */
    Py_ssize_t i = g->lqh, copies = 0;                 /* copies: victims that had a CPU copy (the rarer case, */
    for (int32_t pos = base; pos < end; pos++) {       /* counted there: one live value less per victim) */
        while (q[i] < 0) i++;                          /* lq_live */
        ent_prefetch(ent, q[i + LQ_AHEAD]);           /* in the array's padding past the end: -1 */
        const int32_t e = q[i++];
        Entry *const x = &ent[e];
        const uint8_t f = x->flags;
        x->prev = -1;                                  /* out of g's order */
        if (f & F_CPU) { cq[x->next] = -1; copies++; }  /* its CPU copy's item goes stale (lq_unlink) */
        x->flags = (uint8_t)((f & ~F_GPU) | F_CPU);
        x->next = pos;                                 /* appended to c's order */
        cq[pos] = e;
    }
    g->held -= n;
    if (!g->held) i = g->lqn = 0;                      /* nothing live behind: start again at the front */
    g->lqh = i;
    c->lqn = end;
    c->held += n - copies;                             /* n appended, `copies` copies unlinked */
    return n - copies;
}

/* the entries in the order, first victim first, to out (room for nres); returns their number */
static inline Py_ssize_t lq_order(const Tier *t, int32_t *out) {
    Py_ssize_t n = 0;
    for (Py_ssize_t i = t->lqh; i < t->lqn; i++)
        if (t->lq[i] >= 0) out[n++] = t->lq[i];
    return n;
}

/* NULL if the order is sound (live items = held, within the queue, unpinned, resident), else what is wrong */
static inline const char *lq_check(const Tier *t) {
    Py_ssize_t live = 0;
    if (t->lqh < 0 || t->lqh > t->lqn || t->lqn > t->lqcap) return "LRU queue bounds";
    for (Py_ssize_t i = t->lqh; i < t->lqn; i++) {
        int32_t e = t->lq[i];
        if (e < 0) continue;                                  /* stale */
        if (e >= t->ent_len) return "LRU queue item out of the entries";
        if (*lq_pos(t, e) != i) return "live LRU queue item whose entry names another position";
        if (t->ent[e].pin && t->inflag != F_CPU) return "pinned block in the LRU order";   /* F_CPU: GPU's pins */
        if (tab_find(t, t->ent[e].key) != e) return "LRU entry not resident";
        live++;
    }
    for (int32_t e = 0; e < t->ent_len; e++) {
        if (t->inflag && !(t->ent[e].flags & t->inflag)) continue;   /* shared table: not in this tier */
        int32_t p = *lq_pos(t, e);
        if (p >= 0 && (p < t->lqh || p >= t->lqn || t->lq[p] != e)) return "entry names a position not its own";
    }
    return live == t->held - (t->ret ? t->ret->len : 0) ? NULL : "LRU queue's live items differ from held";
}

#endif
