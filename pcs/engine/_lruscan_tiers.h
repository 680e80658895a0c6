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

struct t2_s {
    lru_t low;          /* the lower tier's times (live bitmap, pointer, resident count); its table unused */
    uint64_t *log;      /* GPU time -> key, a ring: time x at log[x & (log_len - 1)], for the times [s->p, s->t) */
    int64_t log_len;    /* a power of two, >= s->t - s->p */
    uint64_t *vict;     /* one request's victims' state indices (lru_idx), eviction order */
    int64_t vict_len;
    int broken;
};

static void t2_free(t2_t *q) {
    if (!q) return;
    free(q->low.live); free(q->log); free(q->vict); free(q);
}

/* Room in the GPU log (a ring) for the times s->p .. s->t + k - 1: doubled until they fit, the times [s->p, s->t)
 * copied to their places in the larger ring (the times below the pointer are not kept: no slide); -1 on no memory. */
static int t2_log_room(lru_t *s, int64_t k) {
    t2_t *q = s->t2;
    if (s->t + k - s->p <= q->log_len) return 0;
    int64_t len = q->log_len;
    while (s->t + k - s->p > len) len *= 2;
    uint64_t *nl = (uint64_t *)malloc((size_t)len * 8);
    if (!nl) return -1;
    for (int64_t x = s->p; x < s->t; x++) nl[x & (len - 1)] = q->log[x & (q->log_len - 1)];
    free(q->log);
    q->log = nl;
    q->log_len = len;
    return 0;
}

/* Room in s's live bitmap for the times s->t .. s->t + k - 1 (lru_live_grow until they fit); -1 on no memory. */
static int lru_live_room_k(lru_t *s, int64_t k) {
    while (((s->t + k - 1 - s->base) >> 6) >= s->live_words)
        if (lru_live_grow(s) != 0) return -1;
    return 0;
}

/* Evict the k oldest live times at or after p (bitmap live, bit 0 at time base; at least k live there) -- k times
 * lru_evict on a pointer held in a local, one word read and written once for all its victims; returns the new
 * pointer. With vict (GPU victims): vict[i] = the id of the i-th victim's time, log[time & lm] (the log's ring);
 * NULL vict: no ids. */
static inline int64_t lru_evict_run(uint64_t *live, int64_t base, int64_t p, int64_t k, uint64_t *vict,
                                    const uint64_t *log, int64_t lm) {
    int64_t i0 = p - base, w = i0 >> 6;
    uint64_t bits = live[w] & (~0ULL << (i0 & 63));   /* the bits below p are all clear: the word is bits */
    for (int64_t i = 0; i < k; i++) {
        while (!bits) {
            live[w] = 0;
            bits = live[++w];
        }
        p = base + (w << 6) + __builtin_ctzll(bits) + 1;
        bits &= bits - 1;
        if (vict) vict[i] = log[(p - 1) & lm];
    }
    live[w] = bits;
    return p;
}

/* A new lower-tier time for the id of state index slot (lru_idx); evicts past C1; -1 on no memory. */
static int t2_low_stamp(lru_t *s, uint64_t slot) {
    int64_t t = lru_restamp(&s->t2->low, s->clast[slot]);
    if (t < 0) return -1;
    s->clast[slot] = (int32_t)t;
    return 0;
}

/* Demote the victims (state indices q->vict[0 .. nv)) as one batch; -1 on no memory. The lower tier's pointer,
 * clock and resident count held in locals (t2_low_stamp for each victim, as one loop). */
static int t2_demote(lru_t *s, int64_t nv) {
    t2_t *q = s->t2;
    lru_t *lo = &q->low;
    int32_t *cl = s->clast;
    const uint64_t *vict = q->vict;
    for (int64_t i = 0; i < nv; i++) {   /* set aside those already below */
        if (i + 16 < nv) __builtin_prefetch(&cl[vict[i + 16]], 1, 1);
        int64_t old = cl[vict[i]];
        if (old >= lo->p) {
            int64_t j = old - lo->base;
            lo->live[j >> 6] &= ~(1ULL << (j & 63));
            lo->resident--;
            cl[vict[i]] = 0;
        }
    }
    if (nv <= 0) return 0;
    if (lru_live_room_k(lo, nv) != 0) return -1;
    uint64_t *live = lo->live;
    const int64_t base = lo->base, c1 = lo->capacity;
    int64_t t = lo->t, res = lo->resident;
    /* lru_restamp on the lower tier, each victim in eviction order: after the set-aside no victim's old time is at
     * or after the pointer (each is 0 or below it), so every stamp takes a slot and the evictions past C1 -- the
     * oldest live times, never one of these newest stamps unless C1 is smaller than them all -- are those of
     * stamping and evicting in turn, made after the stamps (lru_evict_run) */
    for (int64_t i = 0; i < nv; i++) {
        int64_t j = t - base;
        live[j >> 6] |= 1ULL << (j & 63);
        cl[vict[i]] = (int32_t)t++;
    }
    res += nv;
    if (res > c1) {
        lo->p = lru_evict_run(live, base, lo->p, res - c1, NULL, NULL, 0);
        res = c1;
    }
    lo->t = t; lo->resident = res;
    return 0;
}

/* Pin the lead (states tmp[0 .. a)) and evict until a + budget slots are free; returns the victims or -1. The
 * victims found in one pass over the bitmap's words (lru_evict_run). */
static int64_t t2_reserve(lru_t *s, int64_t a, int64_t budget, int32_t rq) {
    t2_t *q = s->t2;
    uint64_t *live = s->live;
    const int64_t base = s->base;
    for (int64_t i = 0; i < a; i++) {
        int64_t old = LRU_VISIT(s->tmp[i]->last), j = old - base;
        live[j >> 6] &= ~(1ULL << (j & 63));
    }
    s->resident -= a;
    int64_t nv = s->resident + a + budget - s->capacity;
    if (nv <= 0) return 0;
    if (nv > q->vict_len) {
        uint64_t *nb = (uint64_t *)realloc(q->vict, (size_t)nv * 8);
        if (!nb) return -1;
        q->vict = nb;
        q->vict_len = nv;
    }
    const uint64_t *log = q->log;
    uint64_t *vict = q->vict;
    const int64_t lm = q->log_len - 1;
    int64_t p = s->p;
    p = lru_evict_run(live, base, p, nv, vict, log, lm);   /* the victims' ids, eviction order */
    if (s->direct) {   /* the state index is the id (no read of its state); t2_demote reads their lower times */
        const int32_t *cl = s->clast;
        for (int64_t i = 0; i < nv && i < 16; i++) __builtin_prefetch(&cl[vict[i]], 1, 1);
    } else {           /* hashed: the state index of each id, found (looked up before) */
        for (int64_t i = 0; i < nv; i++) vict[i] = lru_idx(s, lru_find(s, vict[i], rq, 0));
    }
    s->p = p;
    s->resident -= nv;
    return nv;
}

/* Release the kept chain head (tmp[0 .. kept)) tail first with new GPU times; the ids cut (tmp[kept .. m))
 * are marked stamped, not resident; -1 on no memory. Room for the kept times made first, then one loop on locals. */
static int t2_release(lru_t *s, int64_t kept, int64_t m) {
    lmeta_t **tmp = s->tmp;
    for (int64_t i = m - 1; i >= kept; i--) tmp[i]->last = 0;
    if (kept <= 0) return 0;
    if (lru_live_room_k(s, kept) != 0 || t2_log_room(s, kept) != 0) return -1;
    uint64_t *live = s->live, *log = s->t2->log;
    const int64_t base = s->base, lm = s->t2->log_len - 1;
    int64_t t = s->t;
    if (s->direct) {
        const lmeta_t *dmeta = s->dmeta;
        for (int64_t i = kept - 1; i >= 0; i--, t++) {
            lmeta_t *x = tmp[i];
            int64_t j = t - base;
            live[j >> 6] |= 1ULL << (j & 63);
            log[t & lm] = (uint64_t)(x - dmeta);
            x->last = (int32_t)t;
        }
    } else {
        for (int64_t i = kept - 1; i >= 0; i--, t++) {
            lmeta_t *x = tmp[i];
            int64_t j = t - base;
            live[j >> 6] |= 1ULL << (j & 63);
            log[t & lm] = lru_slot_of(x)->key;
            x->last = (int32_t)t;
        }
    }
    s->t = t;
    s->resident += kept;
    return 0;
}

/* One request after the scan's lookup (states tmp[0 .. m), a GPU lead of a, dup: an id repeated or a GPU-resident
 * id after a non-resident one, found by the lookup): its baseline hit blocks in *hits (-1 once broken); returns 0,
 * or -1 on no memory. */
static int t2_request(lru_t *s, int64_t m, int64_t a, int64_t cap, int dup, int32_t rq, int64_t *hits) {
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
    int64_t nv = t2_reserve(s, a, budget, rq);
    if (nv < 0) return -1;
    for (int64_t i = a + restores - 1; i >= a; i--)
        if (t2_low_stamp(s, lru_idx(s, s->tmp[i])) != 0) return -1;
    if (t2_demote(s, nv) != 0) return -1;
    return t2_release(s, a + budget, m);
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
    q->log = (uint64_t *)malloc(4096 * 8);
    uint64_t n = s->direct ? s->dcap : s->mask + 1;   /* one per state index (lru_idx) */
    s->clast = (int32_t *)lru_zalloc(n * sizeof(int32_t), &s->cmap);   /* 0: never below (times start at 64) */
    if (!q->low.live || !q->log || !s->clast) return -1;
    s->t = s->p = s->base = 64;     /* time 0 < every pointer: "stamped, not resident" */
    q->low.t = q->low.p = q->low.base = 64;    /* time 0 < the lower pointer: a zeroed clast entry is "none" */
    return 0;
}

#endif
