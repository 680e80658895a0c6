/*
 * Two LRU tiers in the one-pass scan (included by _lruscan.c after lru_stamp; t2_*): the sequential
 * baseline of a modeled two-tier run -- GPU tier of C slots (the scan's own times), a lower LRU tier of C1
 * slots, write-back -- from the same hash probe per id as the single-sequence walks.
 *
 * The rules are those of pcs.cache.Hierarchy step by step (pcs/cache/_lruhier.c, start_plan / finish_release;
 * docs/semantics.md §3, §5, §6, §7) for one request at a time, where chained ids make them simple: the GPU
 * lead is a prefix (a = its length), the lower tier's run follows (lead = a + that run); with m cacheable
 * ids and cap = max_hit_blocks:
 *   hits = min(cap, lead); restores = max(0, hits - a); budget = min(m - a, C - a) (§5: the request keeps
 *   the chain head ids[0 .. a + budget)); truncated with restores > budget: hits = a + budget;
 *   pin the a lead ids (their times die: never victims); evict the LRU times until the unpinned resident
 *   + a + budget <= C (the victims, oldest first, keys from a time -> key log);
 *   touch the restored ids' lower copies tail first (§7: restores before demotions);
 *   demote the victims as one batch (§7 overflow: those already below are set aside, then every victim is
 *   stamped in eviction order; the lower tier drops its oldest times past C1);
 *   release ids[0 .. a + budget) tail first (§6), new GPU times; ids cut by truncation are marked stamped
 *   (time 0, below every GPU pointer: GPU times start at 64) so the single-sequence walk still sees them.
 * A request whose ids repeat, or with a GPU-resident id after a non-resident one, breaks the premise (so do
 * more than 2**31 - 1 lower-tier times): the
 * state is then marked broken (lru_tiers_ok() -> False, the caller runs the compiled hierarchy instead) and
 * the scan goes on as one tier.
 */
#ifndef PCS_LRUSCAN_TIERS_H
#define PCS_LRUSCAN_TIERS_H

/* The victims' lower times are prefetched this many log entries ahead (t2_evict_demote); the log has as many
 * entries of padding past its ring (zero: a prefetch of clast[0]), so a word's entries are read past its 64 unmasked. */
#define T2_AHEAD 16

struct t2_s {
    lru_t low;          /* the lower tier's times (live bitmap, pointer, resident count); its table unused */
    uint64_t *log;      /* GPU time -> key, a ring: time x at log[x & (log_len - 1)], for the times [s->p, s->t);
                         * T2_AHEAD zero entries past the ring */
    int64_t log_len;    /* a power of two, >= s->t - s->p */
    int broken;
};

static void t2_free(t2_t *q) {
    if (!q) return;
    free(q->low.live); free(q->log); free(q);
}

/* Room in the GPU log (a ring) for the times s->p .. s->t + k - 1: doubled until they fit, the times [s->p, s->t)
 * copied to their places in the larger ring (the times below the pointer are not kept: no slide); -1 on no memory. */
static int t2_log_room(lru_t *s, int64_t k) {
    t2_t *q = s->t2;
    if (s->t + k - s->p <= q->log_len) return 0;
    int64_t len = q->log_len;
    while (s->t + k - s->p > len) len *= 2;
    uint64_t *nl = (uint64_t *)calloc((size_t)(len + T2_AHEAD), 8);   /* zeroed: a prefetch reads any entry */
    if (!nl) return -1;
    for (int64_t x = s->p; x < s->t; x++) nl[x & (len - 1)] = q->log[x & (q->log_len - 1)];
    free(q->log);
    q->log = nl;
    q->log_len = len;
    return 0;
}

/* lru_live_grow until the times s->t .. s->t + k - 1 fit; -1 on no memory. */
static int lru_live_grow_k(lru_t *s, int64_t k) {
    while (((s->t + k - 1 - s->base) >> 6) >= s->live_words)
        if (lru_live_grow(s) != 0) return -1;
    return 0;
}

/* Room in s's live bitmap for the times s->t .. s->t + k - 1: one compare inlined, lru_live_grow_k when they do not
 * fit; -1 on no memory. */
static inline int lru_live_room_k(lru_t *s, int64_t k) {
    return ((s->t + k - 1 - s->base) >> 6) < s->live_words ? 0 : lru_live_grow_k(s, k);
}

/* Set the bits [from, to) of the bitmap live (bit 0 at time base; all clear there before): a run of new consecutive
 * times, a word at a time. */
static inline void lru_set_run(uint64_t *live, int64_t from, int64_t to) {
    if (from >= to) return;
    int64_t w0 = from >> 6, w1 = (to - 1) >> 6;
    uint64_t m0 = ~0ULL << (from & 63), m1 = ~0ULL >> (63 - ((to - 1) & 63));
    if (w0 == w1) { live[w0] |= m0 & m1; return; }
    live[w0] |= m0;
    for (int64_t w = w0 + 1; w < w1; w++) live[w] = ~0ULL;
    live[w1] |= m1;
}

/* Evict the k >= 1 oldest live times at or after p (bitmap live, bit 0 at time base; at least k live there), no ids
 * wanted: whole words skipped by their bit counts, the last word's lowest bits cleared; returns the new pointer
 * (past the k-th live time). */
__attribute__((always_inline)) static inline int64_t lru_evict_count(uint64_t *live, int64_t base, int64_t p, int64_t k) {
    int64_t i0 = p - base, w = i0 >> 6, c;
    uint64_t bits = live[w] & (~0ULL << (i0 & 63));   /* the bits below p are all clear: the word is bits */
    while ((c = __builtin_popcountll(bits)) < k) {
        k -= c;
        live[w] = 0;
        bits = live[++w];
    }
    for (; k > 1; k--) bits &= bits - 1;
    p = base + (w << 6) + __builtin_ctzll(bits) + 1;
    live[w] = bits & (bits - 1);
    return p;
}

/* A new lower-tier time for the id of state index slot (lru_idx); evicts past C1; -1 on no memory. */
static int t2_low_stamp(lru_t *s, uint64_t slot) {
    int64_t t = lru_restamp(&s->t2->low, s->clast[slot]);
    if (t < 0) return -1;
    s->clast[slot] = (int32_t)t;
    return 0;
}

/* Pin the lead (states tmp[0 .. a)): their GPU times die, never victims. Returns the victims wanted for a + budget
 * free slots (0 when there is room). */
static int64_t t2_pin(lru_t *s, int64_t a, int64_t budget) {
    uint64_t *live = s->live;
    lmeta_t *const *tmp = s->tmp;   /* a local: the stores into live would reload s->tmp each id */
    const int64_t base = s->base;
    for (int64_t i = 0; i < a; i++) {
        int64_t old = LRU_VISIT(tmp[i]->last), j = old - base;
        live[j >> 6] &= ~(1ULL << (j & 63));
    }
    s->resident -= a;
    int64_t nv = s->resident + a + budget - s->capacity;
    return nv > 0 ? nv : 0;
}

/* Evict the nv >= 1 oldest unpinned GPU times and demote their ids as one batch (§7 overflow), in one pass over the
 * GPU bitmap's words: each victim's id from the log (time -> key), its state index (the id in direct mode, its slot
 * found in the hashed table), its lower copy set aside when it has one (old time >= the lower pointer: that time
 * dies), then a new lower time each, in eviction order; the lower tier drops its oldest times past C1 after. The
 * same as evicting every victim, setting aside those below, then stamping each: the lower pointer moves only at the
 * end, a victim's old time is below the new ones, and each id is one victim. The new lower times are consecutive:
 * their bits set as one run. direct: s->direct (a constant at each call). -1 on no memory. */
__attribute__((always_inline)) static inline int t2_evict_demote(lru_t *s, int64_t nv, int32_t rq, const int direct) {
    t2_t *q = s->t2;
    lru_t *lo = &q->low;
    if (lru_live_room_k(lo, nv) != 0) return -1;
    uint64_t *live = s->live, *llive = lo->live;
    const uint64_t *log = q->log;
    int32_t *cl = s->clast;
    const int64_t base = s->base, lm = q->log_len - 1, lbase = lo->base, lp = lo->p, t0 = lo->t, t1 = t0 + nv;
    int64_t i0 = s->p - base, w = i0 >> 6, x = 0, res = lo->resident + nv, t = t0;
    uint64_t bits = live[w] & (~0ULL << (i0 & 63));   /* the bits below p are all clear: the word is bits */
    if (direct) {   /* word by word: a word's 64 times are 64 consecutive log entries (no wrap), the id is the index */
        for (;;) {
            while (!bits) {
                live[w] = 0;
                bits = live[++w];
            }
            const uint64_t *lw = log + ((base + (w << 6)) & lm);
            do {
                const int b = __builtin_ctzll(bits);
                bits &= bits - 1;
                __builtin_prefetch(&cl[lw[b + T2_AHEAD]], 1, 1);   /* a later victim's lower time (log padding) */
                const uint64_t k = lw[b];
                const int64_t old = cl[k];
                if (old >= lp) {   /* set aside: its lower copy's time dies */
                    const int64_t j = old - lbase;
                    llive[j >> 6] &= ~(1ULL << (j & 63));
                    res--;
                }
                cl[k] = (int32_t)t;
                if (++t == t1) { x = base + (w << 6) + b; goto done; }
            } while (bits);
        }
    }
    for (; t < t1; t++) {
        while (!bits) {
            live[w] = 0;
            bits = live[++w];
        }
        x = base + (w << 6) + __builtin_ctzll(bits);
        bits &= bits - 1;
        const uint64_t k = lru_idx(s, lru_find(s, log[x & lm], rq, 0));
        const int64_t old = cl[k];
        if (old >= lp) {   /* set aside: its lower copy's time dies */
            const int64_t j = old - lbase;
            llive[j >> 6] &= ~(1ULL << (j & 63));
            res--;
        }
        cl[k] = (int32_t)t;
    }
done:
    live[w] = bits;
    s->p = x + 1;
    s->resident -= nv;
    lru_set_run(llive, t0 - lbase, t - lbase);
    if (res > lo->capacity) {
        lo->p = lru_evict_count(llive, lbase, lp, res - lo->capacity);
        res = lo->capacity;
    }
    lo->t = t; lo->resident = res;
    return 0;
}

/* Times t, t + 1, ... to n ids taken tail first: log[j] = key[-j], state[-j]->last = t + j (j < n). Four at a time,
 * each four's loads before its stores (the build does not assume strict aliasing: a store to a state would reload
 * the next key and state). */
static inline void t2_log_stamp(uint64_t *log, const uint64_t *key, lmeta_t *const *state, int64_t n, int32_t t) {
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const uint64_t k0 = key[-j], k1 = key[-j - 1], k2 = key[-j - 2], k3 = key[-j - 3];
        lmeta_t *x0 = state[-j], *x1 = state[-j - 1], *x2 = state[-j - 2], *x3 = state[-j - 3];
        log[j] = k0; log[j + 1] = k1; log[j + 2] = k2; log[j + 3] = k3;
        const int32_t tj = t + (int32_t)j;
        x0->last = tj; x1->last = tj + 1; x2->last = tj + 2; x3->last = tj + 3;
    }
    for (; j < n; j++) {
        const uint64_t k = key[-j];
        lmeta_t *x = state[-j];
        log[j] = k;
        x->last = t + (int32_t)j;
    }
}

/* t2_evict_demote out of line, built twice where the compiler and the platform can choose at load time (GCC's
 * target_clones, an ELF ifunc on x86-64 Linux): with the POPCNT instruction when the CPU has it (lru_evict_count's
 * bit counts; the portable build calls libgcc's __popcountdi2 for each), else for any x86-64. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define T2_POPCNT __attribute__((noinline, target_clones("popcnt", "default")))
#else
#define T2_POPCNT __attribute__((noinline))
#endif

T2_POPCNT static int t2_demote_direct(lru_t *s, int64_t nv, int32_t rq) { return t2_evict_demote(s, nv, rq, 1); }

T2_POPCNT static int t2_demote_hashed(lru_t *s, int64_t nv, int32_t rq) { return t2_evict_demote(s, nv, rq, 0); }

/* Release the kept chain head (tmp[0 .. kept), ids keys[0 .. kept)) tail first with new GPU times; the ids cut
 * (tmp[kept .. m)) are marked stamped, not resident; -1 on no memory. Room for the kept times made first; the log's
 * entries are the ids reversed (one copy, in at most two runs of the ring), then the states' times; the new times are
 * consecutive: their bits set as one run. */
static int t2_release(lru_t *s, const uint64_t *keys, int64_t kept, int64_t m) {
    lmeta_t **tmp = s->tmp;
    for (int64_t i = m - 1; i >= kept; i--) tmp[i]->last = 0;
    if (kept <= 0) return 0;
    if (lru_live_room_k(s, kept) != 0 || t2_log_room(s, kept) != 0) return -1;
    uint64_t *log = s->t2->log;
    const int64_t len = s->t2->log_len, t0 = s->t, t = t0 + kept, at = t0 & (len - 1);
    const int64_t run = kept < len - at ? kept : len - at;   /* the log's entries up to the ring's end, then from 0 */
    t2_log_stamp(log + at, keys + kept - 1, tmp + kept - 1, run, (int32_t)t0);
    t2_log_stamp(log, keys + kept - 1 - run, tmp + kept - 1 - run, kept - run, (int32_t)(t0 + run));
    lru_set_run(s->live, t0 - s->base, t - s->base);
    s->t = t;
    s->resident += kept;
    return 0;
}

/* One request after the scan's lookup (ids keys[0 .. m), their states tmp[0 .. m), a GPU lead of a, dup: an id
 * repeated or a GPU-resident id after a non-resident one, found by the lookup): its baseline hit blocks in *hits (-1
 * once broken); returns 0, or -1 on no memory. The restores touch the lower tier before the victims are evicted
 * (their lower times only: the GPU's eviction reads none of them, the victims are GPU-resident, the restored not). */
static int t2_request(lru_t *s, const uint64_t *keys, int64_t m, int64_t a, int64_t cap, int dup, int32_t rq,
                      int64_t *hits) {
    t2_t *q = s->t2;
    int64_t lead = a;
    if (!dup) {   /* the lower tier's run after the GPU lead: up to its first id not below */
        lmeta_t *const *tmp = s->tmp;
        const int32_t *cl = s->clast;
        const int64_t lp = q->low.p;
        while (lead < m && cl[lru_idx(s, tmp[lead])] >= lp) lead++;
    }
    dup |= q->low.t + 2 * m >= INT32_MAX;                      /* lower-tier times are int32 too */
    if (dup || q->broken) {
        q->broken = 1;
        *hits = -1;
        return lru_stamp(s, 0, m);
    }
    int64_t h = cap < lead ? cap : lead, budget = m - a < s->capacity - a ? m - a : s->capacity - a;
    h = h < 0 ? 0 : h;
    int64_t restores = h > a ? h - a : 0;
    if (budget < m - a && restores > budget) { h = a + budget; restores = budget; }
    *hits = h;
    int64_t nv = t2_pin(s, a, budget);
    for (int64_t i = a + restores - 1; i >= a; i--)
        if (t2_low_stamp(s, lru_idx(s, s->tmp[i])) != 0) return -1;
    if (nv > 0 && (s->direct ? t2_demote_direct(s, nv, rq) : t2_demote_hashed(s, nv, rq)) != 0) return -1;
    return t2_release(s, keys, a + budget, m);
}

/* Turn a fresh scan (no stamp yet) into the two-tier one with a lower tier of c1 slots; -1 on no memory. */
static int t2_enable(lru_t *s, int64_t c1) {
    t2_t *q = (t2_t *)calloc(1, sizeof(t2_t));
    if (!q) return -1;
    s->t2 = q;
    q->low.capacity = c1;
    q->low.live_words = 1024;
    q->log_len = 4096;
    q->low.live = (uint64_t *)calloc(1024, 8);
    q->log = (uint64_t *)calloc(4096 + T2_AHEAD, 8);
    uint64_t n = s->direct ? s->dcap : s->mask + 1;   /* one per state index (lru_idx) */
    s->clast = (int32_t *)lru_zalloc(n * sizeof(int32_t), &s->cmap);   /* 0: never below (times start at 64) */
    if (!q->low.live || !q->log || !s->clast) return -1;
    s->t = s->p = s->base = 64;     /* time 0 < every pointer: "stamped, not resident" */
    q->low.t = q->low.p = q->low.base = 64;    /* time 0 < the lower pointer: a zeroed clast entry is "none" */
    return 0;
}

#endif
