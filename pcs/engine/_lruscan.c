/*
 * pcs.engine._lruscan: the one-capacity sequential LRU scan behind the replay fast path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <stdlib.h>
#include "../_kernel_common.h"
/* this module's pool (pcs/_kept.h): the zeroed arrays of a 10x Mooncake scan (39 MB; lru_zalloc), or a 50x one's
 * direct array (130 MB) */
#define KEPT_MAX_BYTES ((size_t)128 << 20)
#include "../_kept.h"
/* the zeroed arrays from this size on come from the pool once a scan has ended (lru_zalloc); below, calloc */
#define LRU_POOL_FROM KEPT_MIN_BYTES
/* set once a scan has ended in this process (lru_free): from then on the arrays below 4 MB come from the pool too */
static int lru_again;

/* ---------------------------------------------------------------------------
 * One-capacity sequential LRU scan, streamed batch by batch (lru_new / lru_feed).
 *
 * Plain LRU of C unit slots on the stream "per request: look up its first n ids
 * head to tail, then stamp them tail to head" (docs/semantics.md §6),
 * in O(1) per access: every stamp gets a logical time t; a time is
 * live while it is its key's last stamp; the cache is the C most recent live
 * times, i.e. the live times >= a pointer p, so a key is resident iff
 * last >= p. A stamp that makes more than C live times >= p advances p past
 * the oldest live time (the LRU victim). Live times are bits of a sliding
 * bitmap (1 bit per stamp, the part below p dropped); a key's state is 8 B
 * (last stamp, first request): in direct mode the state of id k is entry k
 * of an array (no key stored, no hashing) while every id is below
 * max(2**20, 2 x the trace's id count, 2 x (distinct ids so far + the
 * batch's ids)) (Mooncake's ids are 0, 1, 2, ... in first-appearance order),
 * else 16 B slots (key, state) of an open-addressing table (linear probing,
 * splitmix64, load <= 0.5, grown by doubling; the ids seen move into it the
 * first time a batch holds a larger id). Per request r it writes:
 *   lead[r]  = leading ids (of the first n) resident at capacity C;
 *   seen[r]  = leading ids (of the first n) stamped by an earlier request
 *              (the single-sequence, infinite-cache walk, pcs.blocks);
 *   ideal[r] = leading ids (of ALL the request's ids) looked up by an earlier
 *              request (the ideal walk: every id cacheable).
 * With decode ids (pcs.engine.decodescan: request r's cached output blocks, seen right after it) also
 *   seen_decode[r] = leading ids (of the first n) stamped, or given as a decode id, by an earlier request
 *              (the decode-aware single-sequence walk; a decode id is marked, never stamped or looked up).
 * With check=1 it returns 1 when an id repeats among a request's first n, 2
 * when a resident id follows a non-resident one (not a prefix chain): the
 * fast path then does not apply. Mirrors
 * pcs.engine.lruscan._PythonLru (differential tests in
 * tests/engine/test_replay_scan.py).
 * ------------------------------------------------------------------------- */
typedef struct {
    int32_t last;  /* last stamp; -1 never stamped; -2 never stamped, a decode id (lru_dmark);
                    * <= -3: visited in this request, old = -5 - last (LRU_VISIT) */
    int32_t first; /* 1 + the request that first looked it up; 0: no such id yet (zeroed memory);
                    * LRU_UNSEEN: only a decode id so far (never looked up) */
} lmeta_t;

typedef struct {
    uint64_t key;
    lmeta_t m;
} lslot_t;

#define LRU_VISIT(old) ((int32_t)(-5 - (int64_t)(old)))  /* a state's last while visited; its own inverse */
#define LRU_UNSEEN INT32_MAX                              /* first: no request looked the id up yet */

typedef struct t2_s t2_t;   /* two tiers: _lruscan_tiers.h */

typedef struct {
    lslot_t *slots;    /* hashed mode: the table (mask + 1 slots); NULL in direct mode */
    uint64_t mask;
    lmeta_t *dmeta;    /* direct mode: the state of id k is dmeta[k], k < dcap; NULL in hashed mode */
    uint64_t dcap;
    int64_t count;
    int64_t capacity;  /* C */
    int64_t resident;  /* live times >= p */
    int64_t t, p;      /* next stamp time, LRU pointer */
    int64_t base;      /* time of bit 0 of live (multiple of 64) */
    uint64_t *live;
    int64_t live_words;
    int64_t req;       /* requests fed so far */
    int direct;        /* direct mode: id k's state is dmeta[k], every id < limit; else hashed */
    int has_dec;       /* a decode id was marked (lru_dmark): lookups check for LRU_UNSEEN */
    int64_t limit, expected;
    uint64_t top;      /* direct mode: the largest last id of a request's ids so far (a prefetch hint, lru_run) */
    lmeta_t **tmp;     /* a request's looked-up states, for the stamping */
    int64_t tmp_len;
    t2_t *t2;          /* two tiers (lru_tiers), else NULL */
    int32_t *clast;    /* two tiers: per state index (lru_idx), the key's last lower-tier time (0: none;
                        * lower-tier times start at 64, so a zeroed array holds none: lru_zalloc, no fill) */
    size_t dmap, cmap; /* dmeta's and clast's mapped bytes (lru_zalloc), 0 when from calloc */
    uint64_t wtop;     /* direct mode: no id above it was written (the OR of every id fed, lru_mode; lru_written) */
} lru_t;

static void t2_free(t2_t *q);

static void lru_zfree(void *p, size_t mapped, size_t dirty);

/* The bytes of a direct-mode array of `size`-byte entries (dmeta, clast) that may have been written: the entries
 * of ids 0 .. wtop, at most dcap of them (lru_zfree's `dirty`). */
static size_t lru_written(const lru_t *s, size_t size) {
    return (size_t)(s->wtop < s->dcap ? s->wtop + 1 : s->dcap) * size;
}

static void lru_free(lru_t *s) {
    if (!s) return;
    __atomic_store_n(&lru_again, 1, __ATOMIC_RELAXED);
    free(s->slots); lru_zfree(s->dmeta, s->dmap, lru_written(s, sizeof(lmeta_t))); free(s->live); free(s->tmp);
    t2_free(s->t2);
    lru_zfree(s->clast, s->cmap, s->direct ? lru_written(s, sizeof(int32_t)) : s->cmap); free(s);
}

static void lru_capsule_free(PyObject *cap) {
    lru_free((lru_t *)PyCapsule_GetPointer(cap, "pcs.engine._lruscan.lru"));
}

/* A zeroed array the scan indexes at random (the direct array, clast): from 4 MB on -- and from LRU_POOL_FROM
 * (128 KiB) on once a scan has ended in this process (lru_again) -- a mapping from this module's pool of the mappings
 * dead scans left (pcs/_kept.h), whose pages are resident already: a new mapping's pages read as zero but each first
 * write costs a fault and the kernel's clearing of its page -- on this VM 3 to 300 ms of system time a 10x Mooncake
 * call (docs/performance.md, "Fresh pages a call"); a kept one is cleared here with one memset over the part its
 * last scan may have written (lru_zfree's `dirty`: lru_written). From 4 MB on the mapping is advised for
 * transparent huge pages (read at random, one id each, 4 KB pages cost a TLB miss and a page fault per 4 KB; the
 * machine's THP mode is often "madvise", where only advised memory gets huge pages); below, 4 KB pages, as calloc's
 * were. Else calloc. Why 128 KiB only after a first scan (since 2026-12-05): a 1x scan's calloc blocks (2.6 MB and
 * 1.3 MB, on the scan's worker thread) come from a thread's malloc arena, which glibc trims when such a block is
 * freed at its top, so most steady 1x Parquet calls faulted them in again; but a process's first scan's calloc
 * reuses heap memory its call's reader freed, where a new mapping would add its written pages (2.2 MB at 1x) to the
 * peak of a one-call process (docs/performance.md, "A steady 1x call's page faults"). *mapped: the mapping's bytes,
 * 0 when from calloc. Freed by lru_zfree. */
static void *lru_zalloc(size_t bytes, size_t *mapped) {
    *mapped = 0;
    if (bytes < ((size_t)4 << 20) && (bytes < LRU_POOL_FROM || !__atomic_load_n(&lru_again, __ATOMIC_RELAXED)))
        return calloc(1, bytes ? bytes : 1);
    size_t dirty;
    void *p = kept_take_dirty(bytes, mapped, &dirty);
    if (!p) return NULL;
    memset(p, 0, dirty);
#ifdef MADV_HUGEPAGE
    /* the whole mapping: advising a part would split it, and mremap needs one */
    if (bytes >= ((size_t)4 << 20)) madvise(p, *mapped, MADV_HUGEPAGE);
#endif
    return p;
}

/* An lru_zalloc array freed: a mapping goes back to the pool with `dirty`, the bytes from its start that may be
 * nonzero (lru_written; the whole mapping when that is not known), which its next taker clears. */
static void lru_zfree(void *p, size_t mapped, size_t dirty) {
    if (mapped) kept_give_dirty(p, mapped, dirty);
    else free(p);
}

/* The lru_zalloc array p (*mapped) grown from have to bytes, the new part zero; NULL (p kept) on no memory. A
 * mapping is remapped (mremap: no copy) where the platform has it. */
static void *lru_zgrow(void *p, size_t have, size_t bytes, size_t *mapped) {
#ifdef MREMAP_MAYMOVE
    if (*mapped) {
        size_t len = (bytes + 4095) & ~(size_t)4095;
        if (len <= *mapped) return p;   /* a kept mapping larger than asked: zero past `have` already */
        void *n = mremap(p, *mapped, len, MREMAP_MAYMOVE);
        if (n == MAP_FAILED) return NULL;
        *mapped = len;                  /* the pages added keep the mapping's advice */
#ifdef MADV_HUGEPAGE
        if (len >= ((size_t)4 << 20)) madvise(n, len, MADV_HUGEPAGE);   /* grown past 4 MB: as lru_zalloc's */
#endif
        return n;
    }
#endif
    if (!*mapped && bytes < ((size_t)4 << 20)) {   /* a heap block stays one below 4 MB */
        char *n = (char *)realloc(p, bytes);
        if (n) memset(n + have, 0, bytes - have);
        return n;
    }
    size_t m;
    void *n = lru_zalloc(bytes, &m);
    if (!n) return NULL;
    memcpy(n, p, have);
    lru_zfree(p, *mapped, have);
    *mapped = m;
    return n;
}

/* Put key's state into the table sl (mask + 1 slots, key absent); returns its slot's position. */
static inline uint64_t lru_put(lslot_t *sl, uint64_t mask, uint64_t key, lmeta_t m) {
    uint64_t h = mix64(key) & mask;
    while (sl[h].m.first) h = (h + 1) & mask;
    sl[h].key = key;
    sl[h].m = m;
    return h;
}

/* The slot that holds the state x (hashed mode). */
static inline const lslot_t *lru_slot_of(const lmeta_t *x) {
    return (const lslot_t *)((const char *)x - offsetof(lslot_t, m));
}

/* The index of the state x: the id itself in direct mode, its slot's position in the hashed table
 * (the index of clast, moved with the states by lru_mode and lru_table_alloc). */
static inline uint64_t lru_idx(const lru_t *s, const lmeta_t *x) {
    return s->direct ? (uint64_t)(x - s->dmeta) : (uint64_t)(lru_slot_of(x) - s->slots);
}

/* The id whose state is x. */
static inline uint64_t lru_key(const lru_t *s, const lmeta_t *x) {
    return s->direct ? (uint64_t)(x - s->dmeta) : lru_slot_of(x)->key;
}

/* A hashed table of cap slots (a power of two) holding every id seen: those of the previous hashed
 * table, or of the direct array (which is then freed); two tiers: clast moves with them. -1 on no memory. */
static int lru_table_alloc(lru_t *s, uint64_t cap) {
    lslot_t *sl = (lslot_t *)big_alloc(cap * sizeof(lslot_t), 1);
    size_t cmap = 0;
    int32_t *cl = s->clast ? (int32_t *)lru_zalloc(cap * sizeof(int32_t), &cmap) : NULL;
    if (!sl || (s->clast && !cl)) { free(sl); if (cl) lru_zfree(cl, cmap, 0); return -1; }
    lslot_t *old = s->slots;
    uint64_t old_mask = s->mask;
    for (uint64_t i = 0; old && i <= old_mask; i++)
        if (old[i].m.first) {
            uint64_t h = lru_put(sl, cap - 1, old[i].key, old[i].m);
            if (cl) cl[h] = s->clast[i];
        }
    for (uint64_t k = 0; s->dmeta && k < s->dcap; k++)
        if (s->dmeta[k].first) {
            uint64_t h = lru_put(sl, cap - 1, k, s->dmeta[k]);
            if (cl) cl[h] = s->clast[k];
        }
    free(old);
    /* the old clast is indexed by id when it came with the direct array, else by the old table's slots */
    const size_t cl_dirty = s->dmeta ? lru_written(s, sizeof(int32_t)) : s->cmap;
    lru_zfree(s->dmeta, s->dmap, lru_written(s, sizeof(lmeta_t)));
    s->dmeta = NULL;
    s->dcap = s->dmap = 0;
    s->slots = sl;
    s->mask = cap - 1;
    if (cl) { lru_zfree(s->clast, s->cmap, cl_dirty); s->clast = cl; s->cmap = cmap; }
    return 0;
}

/* The state of key (zeroed when the id is new: first == 0). */
static inline lmeta_t *lru_slot(lru_t *s, uint64_t key) {
    if (s->direct) return &s->dmeta[key];
    uint64_t h = mix64(key) & s->mask;
    while (s->slots[h].m.first && s->slots[h].key != key) h = (h + 1) & s->mask;
    if (!s->slots[h].m.first) s->slots[h].key = key;
    return &s->slots[h].m;
}

/* The state of key, made (never stamped, first looked up by request req) when new; with_dec (a constant at
 * each call: decode ids were marked) a decode id's first lookup sets its first request too. */
static inline lmeta_t *lru_find(lru_t *s, uint64_t key, int32_t req, const int with_dec) {
    lmeta_t *x = lru_slot(s, key);
    if (!x->first) { x->last = -1; x->first = req + 1; s->count++; }
    else if (with_dec && x->first == LRU_UNSEEN) x->first = req + 1;
    return x;
}

/* Mark key a decode id (seen by the decode-aware walk; decodescan.py): a never-stamped id's last becomes -2; a
 * new id is made with first LRU_UNSEEN (the ideal walk has not seen it). */
static inline void lru_dmark(lru_t *s, uint64_t key) {
    lmeta_t *x = lru_slot(s, key);
    if (!x->first) { x->first = LRU_UNSEEN; x->last = -2; s->count++; }
    else if (x->last == -1) x->last = -2;
    s->has_dec = 1;
}

/* Where key's state lies: its home slot in the hashed table, entry key in direct mode. */
static inline const void *lru_home(const lru_t *s, uint64_t key) {
    return s->direct ? (const void *)&s->dmeta[key] : (const void *)&s->slots[mix64(key) & s->mask];
}

/* Direct mode while the batch's ids (keys[0 .. m), decode ids dkeys[0 .. dm - m)) stay below the limit (entries
 * up to its largest id, the new ones zeroed), else every id seen moves into a hashed table (load <= 0.5).
 * -1 on no memory. */
static int lru_mode(lru_t *s, const uint64_t *keys, const uint64_t *dkeys, int64_t m, int64_t dm) {
    if (!s->direct) return 0;
    /* the OR of the ids bounds the largest (top <= any): one vectorised pass answers the common case, an array
     * that holds every id of the batch and a limit above them (the same outcome as the exact top's) */
    uint64_t any = 0, o1 = 0, o2 = 0, o3 = 0;
    int64_t i4 = 0;
    for (; i4 + 4 <= m; i4 += 4) { any |= keys[i4]; o1 |= keys[i4 + 1]; o2 |= keys[i4 + 2]; o3 |= keys[i4 + 3]; }
    for (; i4 < m; i4++) any |= keys[i4];
    for (int64_t i = 0; i < dm; i++) any |= dkeys[i];
    any |= o1 | o2 | o3;
    s->wtop = any > s->wtop ? any : s->wtop;   /* every entry this feed writes is of an id <= any */
    if (m + dm == 0 || (any < s->dcap && any < (uint64_t)s->limit)) return 0;
    uint64_t top = 0;
    for (int64_t i = 0; i < m; i++) top = keys[i] > top ? keys[i] : top;
    for (int64_t i = 0; i < dm; i++) top = dkeys[i] > top ? dkeys[i] : top;
    m += dm;
    if (top < (uint64_t)s->limit || top < (uint64_t)(2 * (s->count + m))) { /* ids at least half dense */
        uint64_t need = top + 1, have = s->dcap;
        if (need <= have) return 0;
        uint64_t cap = need + need / 8; /* a mapping grows by mremap: no copy */
        lmeta_t *n = (lmeta_t *)lru_zgrow(s->dmeta, have * sizeof(lmeta_t), cap * sizeof(lmeta_t), &s->dmap);
        if (!n) return -1;
        s->dmeta = n;
        if (s->clast) {
            int32_t *cl = (int32_t *)lru_zgrow(s->clast, have * sizeof(int32_t), cap * sizeof(int32_t), &s->cmap);
            if (!cl) return -1;   /* dmeta grown, dcap not: the entries past have are zero and unused */
            s->clast = cl;
        }
        s->dcap = cap;
        return 0;
    }
    uint64_t slots = 4096;
    while ((uint64_t)(s->count + m) * 2 > slots || (uint64_t)s->expected * 4 > slots * 3) slots <<= 1;
    s->direct = 0;  /* lru_table_alloc moves dmeta[0 .. dcap - 1] into the table */
    return lru_table_alloc(s, slots);
}

/* lru_live_room past the bitmap's end: slide it or double it; returns -1 on no memory. */
static int lru_live_grow(lru_t *s) {
    int64_t drop = ((s->p - s->base) >> 6);
    if (drop * 2 >= s->live_words) { /* slide: words below p are all dead */
        memmove(s->live, s->live + drop, (size_t)(s->live_words - drop) * 8);
        memset(s->live + (s->live_words - drop), 0, (size_t)drop * 8);
        s->base += drop * 64;
        return 0;
    }
    int64_t nw = s->live_words * 2;
    uint64_t *nl = (uint64_t *)realloc(s->live, (size_t)nw * 8);
    if (!nl) return -1;
    memset(nl + s->live_words, 0, (size_t)(nw - s->live_words) * 8);
    s->live = nl;
    s->live_words = nw;
    return 0;
}

/* Make room for the bit of time s->t (one compare per stamp, inlined); returns -1 on no memory. */
static inline int lru_live_room(lru_t *s) {
    return ((s->t - s->base) >> 6) < s->live_words ? 0 : lru_live_grow(s);
}

/* Evict the LRU live time: advance p past the first set bit at or after p. */
static inline void lru_evict(lru_t *s) {
    int64_t i = s->p - s->base;
    int64_t w = i >> 6;
    uint64_t bits = s->live[w] & (~0ULL << (i & 63));
    while (!bits) bits = s->live[++w];
    int64_t b = (w << 6) + __builtin_ctzll(bits);
    s->live[w] &= ~(1ULL << (b & 63));
    s->p = s->base + b + 1;
    s->resident--;
}

/* Check every request's bounds (-2 when bad) and size the scratch buffer (-1 on no memory). */
static int lru_prepare(lru_t *s, const int64_t *offs, const int64_t *n, int64_t num_req) {
    for (int64_t r = 0; r < num_req; r++) {
        int64_t len = offs[r + 1] - offs[r];
        if (len < 0 || n[r] < 0 || n[r] > len) return -2;
        if (len > s->tmp_len) {
            lmeta_t **nt = (lmeta_t **)realloc(s->tmp, (size_t)len * sizeof(lmeta_t *));
            if (!nt) return -1;
            s->tmp = nt;
            s->tmp_len = len;
        }
    }
    return 0;
}

/* A new time for a key whose last time is old: a resident key's old time dies (no slot added), another
 * takes a slot; evicts past the capacity. Returns the new time, or -1 on no memory. */
static inline int64_t lru_restamp(lru_t *s, int64_t old) {
    if (old >= s->p) {
        int64_t j = old - s->base;
        s->live[j >> 6] &= ~(1ULL << (j & 63));
    } else {
        s->resident++;
    }
    if (lru_live_room(s) != 0) return -1;
    int64_t j = s->t - s->base;
    s->live[j >> 6] |= 1ULL << (j & 63);
    int64_t t = s->t++;
    while (s->resident > s->capacity) lru_evict(s);
    return t;
}

/* Stamp a request's looked-up ids tail first (their states are s->tmp[0 .. m - a - 1]): a
 * resident id's old time dies, a new one takes a slot; evict past the capacity. -1 on no memory. */
static inline int lru_stamp(lru_t *s, int64_t a, int64_t m) {
    for (int64_t i = m - 1; i >= a; i--) {
        lmeta_t *x = s->tmp[i - a];
        int64_t t = lru_restamp(s, x->last <= -3 ? LRU_VISIT(x->last) : x->last);
        if (t < 0) return -1;
        x->last = (int32_t)t;
    }
    return 0;
}

/* lru_stamp at capacity 0 without tiers (the single-sequence walks' scan, pcs/engine/runner.py: fastpath.scan at 0
 * slots): nothing stays resident, so a stamp only marks its id stamped (last 0) and the times only count the stamps
 * (p = t: every mark 0 < p, not resident, once a stamp was made); no live bit set and cleared, no eviction walk. The
 * same lead (0), seen, ideal and decode runs as lru_stamp's (each looks at last >= p, >= 0, != -1 only), and the same
 * stamp count (lru_stats, the 2**31 check). */
static inline void lru_mark(lru_t *s, int64_t a, int64_t m) {
    lmeta_t **tmp = s->tmp;
    for (int64_t i = m - 1; i >= a; i--) tmp[i - a]->last = 0;
    s->t += m > a ? m - a : 0;
    s->p = s->t;
}

#include "_lruscan_tiers.h"

/* The decode-aware walk (decodescan.py): request r's decode ids ids[off[r] .. off[r + 1]) are marked after it;
 * seen[r] = its leading cacheable ids stamped or marked by an earlier request. */
typedef struct {
    const int64_t *off;
    const uint64_t *ids;
    int64_t *seen;
} lru_dec_t;

/* Direct mode: the ids k[0 ..) up to the first not new (or ke) made visited and looked up by this request (fresh),
 * their states into tp; returns how many. Out of line: inlined in lru_lookup its loop kept the array and the end on
 * the stack (most ids new to the trace take this loop, at 120 K requests a call at 10x Mooncake). */
__attribute__((noinline)) static int64_t lru_new_run(lmeta_t *dmeta, const uint64_t *k, const uint64_t *ke,
                                                     lmeta_t **tp, lmeta_t fresh) {
    const uint64_t *k0 = k;
    for (; k < ke; k++, tp++) {
        lmeta_t *x = &dmeta[*k];
        if (x->first) break;
        *tp = x;
        *x = fresh;
    }
    return k - k0;
}

/* Look up request ids keys[a .. b) (the first m - a cacheable; their states into tmp, visited): the leading
 * runs k[0] resident, k[1] stamped, k[2] looked up (all b - a ids), k[3] (with_dec) stamped or a decode id. The
 * leading resident ids take a loop of their own (a resident id was stamped, and looked up, by an earlier request: it
 * extends every run); once every run has ended (at the first id new to the trace, mostly) the rest of the cacheable
 * ids take a loop without them.
 * Returns 0, or with check 1 (an id repeats) / 2 (a resident id after a non-resident one); *dup: an id repeats;
 * without check *late: a resident id after a non-resident one (the two-tier baseline's premise broken).
 * check, with_dec and direct (s->direct) are constants at each call (lru_lookup_any); the pointer, the counts and
 * the tables are held in locals over the loop (the stores into the states would make the compiler reload the
 * lru_t fields each id). */
__attribute__((always_inline)) static inline int lru_lookup(lru_t *s, const uint64_t *keys, int64_t a, int64_t b, int64_t m, int64_t *k, int *dup,
                             int *late, const int check, const int with_dec, const int direct) {
    const int32_t rq = (int32_t)s->req;
    const int64_t p = s->p;
    lmeta_t **tmp = s->tmp;
    lmeta_t *dmeta = s->dmeta;
    int64_t count = s->count, k0 = 0, k1 = 0, k2 = 0, k3 = 0;
    int run_res = 1, run_seen = 1, run_ideal = 1, run_dec = 1, rc = 0;
    int64_t i = a;
    for (; i < m; i++) {   /* the leading resident ids: every run goes on (resident: stamped, looked up before) */
        lmeta_t *x = direct ? &dmeta[keys[i]] : lru_slot(s, keys[i]);
        const int32_t enc = x->last;
        if (!x->first || enc < p) break;   /* new, not resident, or visited (enc <= -3): the loop below */
        tmp[i - a] = x;
        x->last = LRU_VISIT(enc);
    }
    k0 = k1 = k2 = k3 = i - a;
    int64_t brk = k0;
    for (; i < m; i++) {
        lmeta_t *x = direct ? &dmeta[keys[i]] : lru_slot(s, keys[i]);
        int32_t enc = x->last, first = x->first;
        if (!first) { enc = x->last = -1; first = x->first = rq + 1; count++; }
        else if (with_dec && first == LRU_UNSEEN) first = x->first = rq + 1;
        run_ideal &= first <= rq;
        k2 += run_ideal;
        tmp[i - a] = x;
        int64_t old = enc;
        if (enc <= -3) { /* looked up earlier in this request */
            if (check) { rc = 1; goto out; }
            old = LRU_VISIT(enc);
            *dup = 1;
        } else {
            x->last = LRU_VISIT(enc);
        }
        int res = old >= p;
        if (check && res && !run_res) { rc = 2; goto out; }
        brk += res;   /* resident ids: more than the leading run's when one follows a miss */
        run_res &= res;
        k0 += run_res;
        run_seen &= old >= 0;
        k1 += run_seen;
        if (with_dec) {
            run_dec &= old != -1;
            k3 += run_dec;
        }
        if (!(run_ideal | run_res | run_seen | (with_dec && run_dec))) { i++; break; }   /* every run ended */
    }
    const lmeta_t fresh = {LRU_VISIT(-1), rq + 1};   /* a new id's state: visited, never stamped */
    for (lmeta_t **tp = tmp + (i - a); i < m; i++, tp++) {   /* every run ended (most ids: those new to the trace):
                                                              * the states, visits and checks only */
        if (direct) {   /* a run of new ids in a function of its own (its loop in registers) */
            const int64_t fed = lru_new_run(dmeta, keys + i, keys + m, tp, fresh);
            i += fed; tp += fed; count += fed;
            if (i == m) break;
        }
        lmeta_t *x = direct ? &dmeta[keys[i]] : lru_slot(s, keys[i]);
        *tp = x;
        if (!x->first) {   /* new: never visited, not resident */
            *x = fresh;
            count++;
            continue;
        }
        if (with_dec && x->first == LRU_UNSEEN) x->first = rq + 1;
        int32_t enc = x->last;
        int64_t old = enc;
        if (enc <= -3) {
            if (check) { rc = 1; goto out; }
            old = LRU_VISIT(enc);
            *dup = 1;
        } else {
            x->last = LRU_VISIT(enc);
        }
        if (old >= p) {   /* a resident id after a non-resident one */
            if (check) { rc = 2; goto out; }
            brk++;
        }
    }
    for (; i < b && run_ideal; i++) {   /* past the cacheable ids: the ideal walk's run only (states still made) */
        lmeta_t *x = direct ? &dmeta[keys[i]] : lru_slot(s, keys[i]);
        int32_t first = x->first;
        if (!first) { x->last = -1; first = x->first = rq + 1; count++; }
        else if (with_dec && first == LRU_UNSEEN) first = x->first = rq + 1;
        run_ideal &= first <= rq;
        k2 += run_ideal;
    }
    for (; i < b; i++) {
        lmeta_t *x = direct ? &dmeta[keys[i]] : lru_slot(s, keys[i]);
        if (!x->first) { x->last = -1; x->first = rq + 1; count++; }
        else if (with_dec && x->first == LRU_UNSEEN) x->first = rq + 1;
    }
out:
    s->count = count;
    *late = !check && brk != k0;
    k[0] += k0; k[1] += k1; k[2] += k2; k[3] += k3;
    return rc;
}

/* lru_lookup with its constants chosen (check, with_dec, direct): one specialised loop each. */
static int lru_lookup_any(lru_t *s, const uint64_t *keys, int64_t a, int64_t b, int64_t m, int check, int with_dec,
                          int64_t *k, int *dup, int *late) {
#define LRU_LOOKUP(c, w, d) lru_lookup(s, keys, a, b, m, k, dup, late, c, w, d)
    if (s->direct) {
        if (check) return with_dec ? LRU_LOOKUP(1, 1, 1) : LRU_LOOKUP(1, 0, 1);
        return with_dec ? LRU_LOOKUP(0, 1, 1) : LRU_LOOKUP(0, 0, 1);
    }
    if (check) return with_dec ? LRU_LOOKUP(1, 1, 0) : LRU_LOOKUP(1, 0, 0);
    return with_dec ? LRU_LOOKUP(0, 1, 0) : LRU_LOOKUP(0, 0, 0);
#undef LRU_LOOKUP
}

/* base, cap: two tiers only (t2_request: the baseline's hit blocks per request, from max_hit_blocks);
 * dec: the decode-aware walk, or NULL */
static int lru_run(lru_t *s, const uint64_t *keys, const int64_t *offs, const int64_t *n, int64_t num_req,
                   int64_t *lead, int64_t *seen, int64_t *ideal, int check, const int64_t *cap, int64_t *base,
                   const lru_dec_t *dec) {
    int rc = lru_prepare(s, offs, n, num_req);
    if (rc) return rc;
    if (s->req + num_req >= INT32_MAX - 8 || s->t + (offs[num_req] - offs[0]) >= INT32_MAX - 8) return 3;
    int64_t d0 = dec ? dec->off[0] : 0, dn = dec ? dec->off[num_req] - d0 : 0;
    if (lru_mode(s, keys + offs[0], dec ? dec->ids + d0 : NULL, offs[num_req] - offs[0], dn) != 0) return -1;
    for (int64_t i = offs[0]; i < offs[num_req > 1 ? 2 : num_req]; i++) __builtin_prefetch(lru_home(s, keys[i]), 1, 1);
    for (int64_t r = 0; r < num_req; r++) {
        const int64_t a = offs[r], b = offs[r + 1], m = a + n[r];
        const int64_t dc = dec ? dec->off[r + 1] - dec->off[r] : 0;
        while (!s->direct && (uint64_t)(s->count + (b - a) + dc) * 2 > (s->mask + 1))
            if (lru_table_alloc(s, (s->mask + 1) * 2) != 0) return -1;
        int64_t k[4] = {0, 0, 0, 0};
        int dup = 0, late = 0;
        rc = lru_lookup_any(s, keys, a, b, m, check, dec || s->has_dec, k, &dup, &late);
        if (rc != 0) return rc;
        lead[r] = k[0]; seen[r] = k[1]; ideal[r] = k[2];
        if (r + 2 < num_req) {
            if (!s->direct)
                for (int64_t i = offs[r + 2]; i < offs[r + 3]; i++) __builtin_prefetch(lru_home(s, keys[i]), 1, 1);
            /* direct mode: up to the first id above every request's last id so far (in a trace numbered in order
             * of appearance, ids rising in each request, as Mooncake's: the first id new to the trace, whose state
             * and the next ones' are fresh memory read in order; the ids after it are new too) */
            else {
                const uint64_t top = s->top, *kp = keys + offs[r + 2], *ke = keys + offs[r + 3];
                const lmeta_t *dm = s->dmeta;
                const int32_t *cl = s->clast;
                if (cl)
                    for (; kp < ke && *kp <= top; kp++) {
                        __builtin_prefetch(&dm[*kp], 1, 1);
                        __builtin_prefetch(&cl[*kp], 1, 1);   /* t2_request reads it */
                    }
                else
                    for (; kp < ke && *kp <= top; kp++) __builtin_prefetch(&dm[*kp], 1, 1);
            }
        }
        if (b > a && keys[b - 1] > s->top) s->top = keys[b - 1];
        if (s->t2) {
            if (t2_request(s, keys + a, n[r], k[0], cap[r], dup | late, (int32_t)s->req, &base[r]) != 0) return -1;
        } else if (s->capacity == 0) {
            lru_mark(s, a, m);
        } else if (lru_stamp(s, a, m) != 0) {
            return -1;
        }
        if (dec) {
            dec->seen[r] = k[3];
            for (int64_t i = dec->off[r]; i < dec->off[r + 1]; i++) lru_dmark(s, dec->ids[i]);
        }
        s->req++;
    }
    return 0;
}

/* Whether the decode offsets run from 0 to nd, non-decreasing. */
static int lru_dec_ok(const lru_dec_t *d, int64_t num_req, int64_t nd) {
    if (d->off[0] != 0 || d->off[num_req] != nd) return 0;
    for (int64_t r = 0; r < num_req; r++)
        if (d->off[r + 1] < d->off[r]) return 0;
    return 1;
}

static PyObject *py_lru_new(PyObject *self, PyObject *args) {
    long long capacity, expected = 0;
    if (!PyArg_ParseTuple(args, "L|L", &capacity, &expected)) return NULL;
    if (capacity < 0) {
        PyErr_SetString(PyExc_ValueError, "capacity must be >= 0");
        return NULL;
    }
    /* direct entries for the expected ids up front: calloc's fresh pages are zero (no memset pass, lru_mode
     * grows the array only past them) */
    uint64_t dcap = expected > 4096 ? (uint64_t)expected + (uint64_t)expected / 8 : 4096;
    dcap = dcap < ((uint64_t)1 << 26) ? dcap : ((uint64_t)1 << 26);   /* 512 MB of address space at most */
    /* the GIL released while the memory is mapped (lru_zalloc): the caller's thread, which started this scan on
     * a worker, builds the step loops meanwhile */
    lru_t *s;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    s = (lru_t *)calloc(1, sizeof(lru_t));
    ok = s && (s->dmeta = (lmeta_t *)lru_zalloc(dcap * sizeof(lmeta_t), &s->dmap)) &&
         (s->live = (uint64_t *)calloc(1024, 8));
    Py_END_ALLOW_THREADS
    if (!ok) {
        lru_free(s);
        return PyErr_NoMemory();
    }
    s->dcap = dcap;
    s->live_words = 1024;
    s->capacity = capacity;
    s->direct = 1;
    s->expected = expected > 0 ? expected : 0;
    s->limit = s->expected * 2 > ((int64_t)1 << 20) ? s->expected * 2 : ((int64_t)1 << 20);
    PyObject *cap = PyCapsule_New(s, "pcs.engine._lruscan.lru", lru_capsule_free);
    if (!cap) lru_free(s);
    return cap;
}

static PyObject *py_lru_feed(PyObject *self, PyObject *args) {
    PyObject *cap;
    Py_buffer keys, offs, n, lead, seen, ideal, mh = {0}, base = {0}, doff = {0}, dids = {0}, dseen = {0};
    int check = 1;
    if (!PyArg_ParseTuple(args, "Oy*y*y*w*w*w*|py*w*y*y*w*", &cap, &keys, &offs, &n, &lead, &seen, &ideal, &check,
                          &mh, &base, &doff, &dids, &dseen))
        return NULL;
    PyObject *result = NULL;
    lru_t *s = (lru_t *)PyCapsule_GetPointer(cap, "pcs.engine._lruscan.lru");
    if (!s) goto done;
    int64_t num_req = offs.len / 8 - 1;
    if (keys.len % 8 || offs.len % 8 || num_req < 0 || n.len != num_req * 8 || lead.len != n.len ||
        seen.len != n.len || ideal.len != n.len || (s->t2 && (mh.len != n.len || base.len != n.len))) {
        PyErr_SetString(PyExc_ValueError, "block_hashes uint64 (M,), offsets int64 (R+1,), n and outputs int64 (R,)");
        goto done;
    }
    const int64_t *o = (const int64_t *)offs.buf;
    if (o[0] != 0 || o[num_req] != keys.len / 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must start at 0 and end at len(block_hashes)");
        goto done;
    }
    lru_dec_t dec = {(const int64_t *)doff.buf, (const uint64_t *)dids.buf, (int64_t *)dseen.buf};
    if (doff.obj && (doff.len != offs.len || dseen.len != n.len || dids.len % 8 || !lru_dec_ok(&dec, num_req,
                                                                                               dids.len / 8))) {
        PyErr_SetString(PyExc_ValueError, "decode offsets int64 (R+1,) non-decreasing from 0 to len(decode ids), "
                        "decode ids uint64, seen_decode int64 (R,)");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = lru_run(s, (const uint64_t *)keys.buf, o, (const int64_t *)n.buf, num_req, (int64_t *)lead.buf,
                 (int64_t *)seen.buf, (int64_t *)ideal.buf, check, (const int64_t *)mh.buf, (int64_t *)base.buf,
                 doff.obj ? &dec : NULL);
    Py_END_ALLOW_THREADS
    if (rc == -1) PyErr_NoMemory();
    else if (rc == -2) PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing and 0 <= n <= ids");
    else result = PyLong_FromLong(rc);
done:
    PyBuffer_Release(&keys); PyBuffer_Release(&offs); PyBuffer_Release(&n);
    PyBuffer_Release(&lead); PyBuffer_Release(&seen); PyBuffer_Release(&ideal);
    if (mh.obj) PyBuffer_Release(&mh);
    if (base.obj) PyBuffer_Release(&base);
    if (doff.obj) PyBuffer_Release(&doff);
    if (dids.obj) PyBuffer_Release(&dids);
    if (dseen.obj) PyBuffer_Release(&dseen);
    return result;
}

static PyObject *py_lru_tiers(PyObject *self, PyObject *args) {
    PyObject *cap;
    long long c1 = -1;
    if (!PyArg_ParseTuple(args, "O|L", &cap, &c1)) return NULL;
    lru_t *s = (lru_t *)PyCapsule_GetPointer(cap, "pcs.engine._lruscan.lru");
    if (!s) return NULL;
    if (c1 < 0) return PyBool_FromLong(s->t2 && !s->t2->broken);
    if (s->t2 || s->t) {
        PyErr_SetString(PyExc_ValueError, "lru_tiers: a lower tier is given once, before the first feed");
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS   /* its calloc may zero a heap block (py_lru_new) */
    rc = t2_enable(s, c1);
    Py_END_ALLOW_THREADS
    if (rc != 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *py_lru_stats(PyObject *self, PyObject *args) {
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    lru_t *s = (lru_t *)PyCapsule_GetPointer(cap, "pcs.engine._lruscan.lru");
    if (!s) return NULL;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L}", "distinct", (long long)s->count, "resident",
                         (long long)s->resident, "stamps", (long long)s->t, "table_bytes",
                         (long long)(s->direct ? s->dcap * sizeof(lmeta_t) : (s->mask + 1) * sizeof(lslot_t)),
                         "bitmap_bytes", (long long)s->live_words * 8);
}

/* ---------------------------------------------------------------------------
 * sort_f64: float64 values sorted ascending in place, by an LSD radix sort of their bits (6 passes of 11-bit
 * digits, a pass skipped when every key has the same digit there), for pcs.percentiles.sorted_finite -- the
 * summary's sorts of its TTFT columns: 12,031 values in ~0.11 ms where numpy's introsort took ~0.32 ms on the
 * 2-core VM, 120,310 in ~1.1 ms against ~4.8 ms (docs/performance.md, "The one-tier sequential call's fixed costs").
 *
 * Key: the IEEE bits with the sign bit set for a value >= +0.0 and every bit flipped for a negative one, so the
 * keys order as the values do (-inf lowest, +inf highest). Two values that compare equal have one bit pattern,
 * save -0.0 and +0.0 (whose order numpy's sort leaves to the algorithm) and NaN: with either present nothing is
 * moved and 0 is returned (the caller sorts with numpy, the reference); so when 1 is returned the values are
 * those numpy.sort gives, bit for bit (tests/test_percentiles.py diffs the two).
 *
 * The caller's array is read once (into a private key buffer, each pass's digit counted from those keys) and
 * written once (the sorted values, at the end); every pass moves keys between two private buffers. So another
 * thread writing the same array meanwhile can only make the values written back wrong, as it would with numpy's
 * sort, never send a key past the end of a buffer (a first version used the caller's array as the second buffer:
 * a concurrent writer changed the digits read after the counts were made, and the pass wrote out of bounds).
 * Returns 1 (sorted), 0 (refused: NaN or -0.0, values untouched), -1 (no memory, values untouched).
 */
#define SORT_SIGN ((uint64_t)1 << 63)
#define SORT_BITS 11                                   /* digits of 11 bits: 6 passes (the last of 9 bits) */
#define SORT_PASSES 6
#define SORT_BUCKETS (1 << SORT_BITS)

/* -0.0, or a NaN: the values sort_f64 refuses. */
static inline int sort_refused(uint64_t u) {
    return u == SORT_SIGN || (u & ~SORT_SIGN) > 0x7FF0000000000000ULL;
}

/* The keys of v[0..n) into a, each pass's digits counted in hist; 0 when a value is refused. */
static int sort_keys(const double *v, int64_t n, uint64_t *a, int64_t (*hist)[SORT_BUCKETS]) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, v + i, 8);
        if (sort_refused(u)) return 0;
        uint64_t k = (u & SORT_SIGN) ? ~u : (u | SORT_SIGN);
        a[i] = k;
        for (int b = 0; b < SORT_PASSES; b++) hist[b][(k >> (SORT_BITS * b)) & (SORT_BUCKETS - 1)]++;
    }
    return 1;
}

static int sort_f64_radix(double *v, int64_t n) {
    if (n < 2) {
        if (n == 1) {
            uint64_t u;
            memcpy(&u, v, 8);
            if (sort_refused(u)) return 0;
        }
        return 1;
    }
    uint64_t *a = (uint64_t *)malloc((size_t)n * 16);          /* two private key buffers, n each */
    int64_t (*hist)[SORT_BUCKETS] = (int64_t (*)[SORT_BUCKETS])calloc(SORT_PASSES * SORT_BUCKETS, sizeof(int64_t));
    if (!a || !hist) {
        free(a);
        free(hist);
        return -1;
    }
    if (!sort_keys(v, n, a, hist)) {
        free(a);
        free(hist);
        return 0;
    }
    uint64_t *src = a, *dst = a + n;
    for (int b = 0; b < SORT_PASSES; b++) {
        int64_t *h = hist[b];
        if (h[(src[0] >> (SORT_BITS * b)) & (SORT_BUCKETS - 1)] == n) continue;   /* one digit here: nothing moves */
        int64_t pos = 0;
        for (int c = 0; c < SORT_BUCKETS; c++) {
            int64_t cnt = h[c];
            h[c] = pos;
            pos += cnt;
        }
        for (int64_t i = 0; i < n; i++) {
            uint64_t k = src[i];
            dst[h[(k >> (SORT_BITS * b)) & (SORT_BUCKETS - 1)]++] = k;
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    for (int64_t i = 0; i < n; i++) {                /* src holds the sorted keys; v may be unaligned: memcpy */
        uint64_t k = src[i];
        uint64_t u = (k & SORT_SIGN) ? (k ^ SORT_SIGN) : ~k;
        memcpy(v + i, &u, 8);
    }
    free(a);
    free(hist);
    return 1;
}

/* The buffer's items are native float64: format "d" (or "@d" / "=d", or "<d" on a little-endian machine), 8 bytes. */
static int sort_is_f64(const Py_buffer *buf) {
    const char *f = buf->format ? buf->format : "B";
    if (buf->itemsize != 8) return 0;
    if (f[0] == '@' || f[0] == '=') f++;
#if PY_LITTLE_ENDIAN
    else if (f[0] == '<') f++;
#else
    else if (f[0] == '>' || f[0] == '!') f++;
#endif
    return f[0] == 'd' && f[1] == '\0';
}

static PyObject *py_sort_f64(PyObject *self, PyObject *args) {
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O", &obj)) return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(obj, &buf, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    PyObject *result = NULL;
    if (!sort_is_f64(&buf)) {
        PyErr_Format(PyExc_TypeError, "sort_f64: a writable C-contiguous array of native float64 (format 'd'), "
                     "not format '%s' of %zd-byte items", buf.format ? buf.format : "B", buf.itemsize);
    } else {
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = sort_f64_radix((double *)buf.buf, (int64_t)(buf.len / 8));
        Py_END_ALLOW_THREADS
        if (rc < 0) PyErr_NoMemory();
        else result = PyBool_FromLong(rc);
    }
    PyBuffer_Release(&buf);
    return result;
}

/* ---------------------------------------------------------------------------
 * order_stats_f64: the order statistics numpy's linear percentiles read (pcs.percentiles._read) of a column's
 * finite values, for pcs.percentiles.finite_percentiles -- the replay summary's TPOT, end-to-end and wait
 * percentiles, five columns a run, each a mask, a copy, a zero count, a partition and a few reductions in numpy
 * (~40-70 us a 12,031-value column, ~10 numpy calls) before this.
 *
 * The finite values other than +0.0 are copied into a private buffer (the caller's array is read once, never
 * written) and the +0.0s counted: with no negative value they are the smallest, so a rank below their count is
 * +0.0 and the others are selected among the rest (a wait column is mostly zeros); with a negative value they
 * are put back among the rest. The ranks are then selected by a multi-rank quickselect (sel_ranks), handed to
 * qsort past 2 log2(n) + 8 levels (so no input costs more than O(n log n)) and to an insertion sort below
 * SEL_SMALL values. The value at each rank is the rank-th smallest: an element of the column. Two finite values
 * that compare equal have one bit pattern save -0.0 and +0.0, whose places among the zeros numpy's partition
 * leaves to its algorithm: with a -0.0 among the finite values nothing is returned (the caller takes numpy's
 * path, the reference), so what is returned are the values numpy's partition puts at those ranks, bit for bit
 * (tests/test_finite_percentiles.py diffs the two). Returned as a dict, the rank -> value; the arithmetic
 * between two ranks stays pcs.percentiles._read's, in Python.
 */
#define SEL_SMALL 16
/* from this many finite values the selection runs with the GIL released (~1 ms at 120,000 values); below it
 * it keeps the GIL: a thread that gave it up waits to take it back, up to the interpreter's switch interval
 * (5 ms) when another thread runs Python meanwhile. pcs.percentiles calls it only below 32,768 values
 * (WINDOW_FROM: 0.02-0.35 ms there; past it numpy's windowed path is faster) */
#define SEL_NOGIL_FROM ((int64_t)1 << 16)

static int sel_cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static inline void sel_swap(double *a, int64_t i, int64_t j) {
    double t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* a[lo..hi] (inclusive) reordered so that a[k] is the k-th smallest of a for every k of ks[0..m) (ascending,
 * distinct, in [lo, hi]): quickselect, the median of a[lo], the middle and a[hi] as pivot (moved to lo + 1, the
 * three ordered so a[lo] <= pivot <= a[hi] stop both scans), Hoare's scans, which stop on values equal to the
 * pivot (a stretch of equal values is halved, not peeled one at a time); the ranks left of the pivot's place by
 * recursion, those right of it by the loop. depth: the partition levels left before qsort takes the stretch.
 * (Floyd and Rivest's sampled pivots, ranks taken in turn, the least or greatest of the rest by a scan, were
 * tried: no faster on the replay's columns.) */
static void sel_ranks(double *a, int64_t lo, int64_t hi, const int64_t *ks, int64_t m, int depth) {
    while (m > 0 && hi - lo >= SEL_SMALL) {
        if (depth-- <= 0) {
            qsort(a + lo, (size_t)(hi - lo + 1), sizeof(double), sel_cmp);
            return;
        }
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < a[lo]) sel_swap(a, mid, lo);
        if (a[hi] < a[mid]) {
            sel_swap(a, hi, mid);
            if (a[mid] < a[lo]) sel_swap(a, mid, lo);
        }
        sel_swap(a, mid, lo + 1);
        double p = a[lo + 1];
        int64_t i = lo + 1, j = hi;
        for (;;) {
            do i++; while (a[i] < p);
            do j--; while (a[j] > p);
            if (j < i) break;
            sel_swap(a, i, j);
        }
        a[lo + 1] = a[j];                            /* the pivot at its place j: [lo, j) <= p <= (j, hi] */
        a[j] = p;
        int64_t below = 0, upto;
        while (below < m && ks[below] < j) below++;
        upto = below < m && ks[below] == j ? below + 1 : below;
        sel_ranks(a, lo, j - 1, ks, below, depth);
        ks += upto;
        m -= upto;
        lo = j + 1;
    }
    if (m > 0) {                                     /* a short stretch: insertion sort */
        for (int64_t i = lo + 1; i <= hi; i++) {
            double x = a[i];
            int64_t j = i;
            while (j > lo && a[j - 1] > x) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
    }
}

/* The finite values of v[0..n) other than +0.0 into out, then, when one of them is negative, the +0.0s after
 * them; *zeros: the +0.0s left out (the smallest of the finite values when none is negative), else 0. Returns
 * the values written, or -1 when a -0.0 is among them (refused). (Branches, not a branch-free pass: a column's
 * values are mostly of one kind, so they are predicted; the branch-free pass cost ~3x on a column of zeros.) */
static int64_t sel_finite(const double *v, int64_t n, double *out, int64_t *zeros) {
    int64_t m = 0, z = 0;
    uint64_t neg = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, v + i, 8);
        if ((u & 0x7FF0000000000000ULL) == 0x7FF0000000000000ULL) continue;    /* NaN or +-inf */
        if (u == SORT_SIGN) return -1;
        if (u == 0) {
            z++;
            continue;
        }
        neg |= u;
        memcpy(out + m++, &u, 8);
    }
    if (neg & SORT_SIGN) {
        for (int64_t i = 0; i < z; i++) out[m++] = 0.0;
        z = 0;
    }
    *zeros = z;
    return m;
}

/* The ranks (ascending, distinct) percentiles read of n values: for each level q, floor((n - 1) * (q / 100))
 * (at most n - 1; pcs.percentiles._indexes' arithmetic, IEEE double as Python's) and the next index below n;
 * and n - 1. Returns their count (at most 2 * nq + 1). */
static int64_t sel_rank_list(int64_t n, const double *q, int64_t nq, int64_t *ks) {
    int64_t m = 0;
    for (int64_t i = 0; i < nq; i++) {
        double v = (double)(n - 1) * (q[i] / 100.0);
        int64_t k = (int64_t)floor(v);
        if (k > n - 1) k = n - 1;
        ks[m++] = k;
        if (k + 1 < n) ks[m++] = k + 1;
    }
    ks[m++] = n - 1;
    for (int64_t i = 1; i < m; i++) {                /* sort (a few values), then drop repeats */
        int64_t x = ks[i], j = i;
        while (j > 0 && ks[j - 1] > x) {
            ks[j] = ks[j - 1];
            j--;
        }
        ks[j] = x;
    }
    int64_t w = 0;
    for (int64_t i = 0; i < m; i++)
        if (w == 0 || ks[w - 1] != ks[i]) ks[w++] = ks[i];
    return w;
}

/* The levels: a sequence of at most ORDER_MAX_LEVELS numbers in [0, 100] into q; their count, or -1 (error set). */
#define ORDER_MAX_LEVELS 32
static int64_t sel_levels(PyObject *levels, double *q) {
    /* a tuple of its own (not PySequence_Fast, which hands a list back as it is): a level's __float__ that
     * empties the caller's list cannot free the items read here */
    PyObject *seq = PySequence_Tuple(levels);
    if (!seq) return -1;
    Py_ssize_t nq = PyTuple_GET_SIZE(seq);
    if (nq < 1 || nq > ORDER_MAX_LEVELS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "order_stats_f64: 1 to %d levels, got %zd", ORDER_MAX_LEVELS, nq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nq; i++) {
        q[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(seq, i));
        if (q[i] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (!(q[i] >= 0.0 && q[i] <= 100.0)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "order_stats_f64: a level outside [0, 100]: %R",
                         PyTuple_GET_ITEM(seq, i));
            return -1;
        }
    }
    Py_DECREF(seq);
    return (int64_t)nq;
}

/* (m, {rank: value}) of the m finite values selected: the ranks below zeros are +0.0, rank k past them is
 * a[k - zeros]; (0, {}) when there are none. */
static PyObject *sel_result(const double *a, int64_t zeros, const int64_t *ks, int64_t nk, int64_t m) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int64_t i = 0; i < nk; i++) {
        PyObject *k = PyLong_FromLongLong((long long)ks[i]);
        PyObject *x = PyFloat_FromDouble(ks[i] < zeros ? 0.0 : a[ks[i] - zeros]);
        int bad = !k || !x || PyDict_SetItem(d, k, x) < 0;
        Py_XDECREF(k);
        Py_XDECREF(x);
        if (bad) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return Py_BuildValue("(LN)", (long long)m, d);
}

static PyObject *py_order_stats_f64(PyObject *self, PyObject *args) {
    PyObject *obj, *levels;
    if (!PyArg_ParseTuple(args, "OO", &obj, &levels)) return NULL;
    double q[ORDER_MAX_LEVELS];
    int64_t nq = sel_levels(levels, q);
    if (nq < 0) return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(obj, &buf, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (!sort_is_f64(&buf)) {
        PyErr_Format(PyExc_TypeError, "order_stats_f64: a C-contiguous array of native float64 (format 'd'), "
                     "not format '%s' of %zd-byte items", buf.format ? buf.format : "B", buf.itemsize);
        PyBuffer_Release(&buf);
        return NULL;
    }
    int64_t n = (int64_t)(buf.len / 8), m = 0, nk = 0, ks[2 * ORDER_MAX_LEVELS + 1];
    double *a = (double *)malloc((size_t)(n ? n : 1) * sizeof(double));
    if (!a) {
        PyBuffer_Release(&buf);
        return PyErr_NoMemory();
    }
    int nogil = n >= SEL_NOGIL_FROM;
    PyThreadState *ts = nogil ? PyEval_SaveThread() : NULL;
    int64_t zeros = 0, rest = sel_finite((const double *)buf.buf, n, a, &zeros);
    m = rest < 0 ? -1 : rest + zeros;
    if (m > 0) {
        nk = sel_rank_list(m, q, nq, ks);
        int64_t first = 0, local[2 * ORDER_MAX_LEVELS + 1];   /* the ranks past the +0.0s, among the rest */
        while (first < nk && ks[first] < zeros) first++;
        for (int64_t i = first; i < nk; i++) local[i - first] = ks[i] - zeros;
        int depth = 8;
        for (int64_t s = rest; s > 1; s >>= 1) depth += 2;
        if (rest > 0) sel_ranks(a, 0, rest - 1, local, nk - first, depth);
    }
    if (nogil) PyEval_RestoreThread(ts);
    PyBuffer_Release(&buf);
    PyObject *result = m < 0 ? Py_NewRef(Py_None) : sel_result(a, zeros, ks, nk, m);
    free(a);
    return result;
}

/* kept_bytes(): the bytes of dead scans' zeroed arrays this module's pool keeps now (pcs/_kept.h, lru_zalloc) */
static PyObject *mod_kept_bytes(PyObject *mod, PyObject *unused) { return PyLong_FromSize_t(kept_held()); }
/* kept_clear(): every mapping that pool keeps unmapped; returns how many */
static PyObject *mod_kept_clear(PyObject *mod, PyObject *unused) { return PyLong_FromLong(kept_clear()); }

static PyMethodDef methods[] = {
    {"kept_bytes", mod_kept_bytes, METH_NOARGS, "bytes the pool of dead scans' zeroed arrays keeps now (pcs/_kept.h)"},
    {"kept_clear", mod_kept_clear, METH_NOARGS, "unmap every mapping that pool keeps; returns how many"},
    {"lru_new", py_lru_new, METH_VARARGS,
     "lru_new(capacity_blocks: int) -> state capsule of a one-capacity sequential LRU scan."},
    {"lru_feed", py_lru_feed, METH_VARARGS,
     "lru_feed(state, block_hashes: uint64 (M,), offsets: int64 (R+1,), n: int64 (R,), lead, seen, ideal: "
     "writable int64 (R,), check=True) -> 0, or 1 (an id repeats among a request's first n) / "
     "2 (a resident id after a non-resident one) when check, 3 (over 2**31 stamps or requests). Optional after "
     "check: max_hit, base (two tiers, else empty), decode_offsets int64 (R+1,), decode_ids uint64, seen_decode "
     "writable int64 (R,): the decode-aware walk (request r's decode ids seen after it)."},
    {"lru_tiers", py_lru_tiers, METH_VARARGS,
     "lru_tiers(state, lower_capacity_blocks) -> None: before the first feed, add a lower LRU tier (write-back): "
     "lru_feed then also takes max_hit (int64 (R,)) and writes the two-tier sequential baseline's hit blocks "
     "(int64 (R,), -1 once the ids break its premise); lru_tiers(state) -> True while that baseline holds."},
    {"lru_stats", py_lru_stats, METH_VARARGS,
     "lru_stats(state) -> dict(distinct, resident, stamps, table_bytes, bitmap_bytes)."},
    {"sort_f64", py_sort_f64, METH_VARARGS,
     "sort_f64(values: writable C-contiguous float64) -> True: sorted ascending in place (numpy.sort's values, bit "
     "for bit); False: a NaN or a -0.0 is among them, nothing moved (sort with numpy). TypeError: a buffer of "
     "other items than native float64; a read-only or strided one is refused by its owner (numpy: ValueError; "
     "bytes: BufferError). MemoryError: no room for the keys, nothing moved."},
    {"order_stats_f64", py_order_stats_f64, METH_VARARGS,
     "order_stats_f64(values: C-contiguous float64, levels: 1-32 numbers in [0, 100]) -> (m, {rank: value}): m the "
     "finite values' count, and their rank-th smallest (0-based) at floor((m - 1) * (q / 100)) and the rank after "
     "it for each level q, and at m - 1 (numpy.partition's values, bit for bit); (0, {}) with no finite value; "
     "None when a -0.0 is among them (use numpy). values is not modified. TypeError: a buffer of other items "
     "than native float64; ValueError: levels out of range. MemoryError: no room for the copy."},
    {NULL, NULL, 0, NULL},
};

PCS_KERNEL_MODULE(_lruscan, "pcs.engine._lruscan", "Compiled one-capacity sequential LRU scan (see pcs.engine.lruscan).",
                  methods)
