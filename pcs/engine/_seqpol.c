/*
 * pcs.engine._seqpol: the sequential baseline of two fifo / slru tiers (write-back, no admission, no retain, no
 * hosted policy: the configurations whose two tiers share one table in pcs/cache/_lruhier_polshare.h) as one lean
 * walk, in place of a whole compiled hierarchy's run_sequential (pcs/cache/_lruhier.c seq_one).
 *
 * Requests in trace order, each started, prefilled and finished before the next, with the rules of the Python
 * reference pcs/cache/hierarchy.py (Hierarchy.start, prefill_done, finish) and pcs/cache/tier.py (pin, reserve,
 * fill, insert, touch, unpin) over pcs/cache/policies/fifo.py and slru.py, specialised to what one sequential
 * request can meet: only its own blocks are pinned, the CPU tier holds no pin, nothing is reserved between requests.
 * Only the hit blocks per request are counted (what pcs/engine/seqbase.py reads). Per request:
 *
 *   head = the first min(cacheable, len) keys cut at a repeated key; cap = min(max_hit, |head|);
 *   lookup: lead = the leading keys resident in a tier (GPU first); hits = min(cap, lead); restores = the lead keys
 *   held only by the CPU tier before cap; computed = those from cap on, then head[lead:];
 *   budget = min(need, GPU capacity - GPU lead keys); short: restores first, hits end at the first restore cut;
 *   pin the GPU lead keys; evict budget - free GPU victims; fill the kept restores (pinned), touch their CPU copies
 *   tail first; insert the GPU victims into the CPU tier as one batch (tier.py insert: a batch larger than the CPU
 *   tier loses its first blocks; its resident blocks set aside, the room for the new ones evicted from the others,
 *   then in batch order new ones stored, resident ones given back: slru in runs of one flag); fill the computed
 *   keys (one already in the GPU tier is pinned, keeps its FIFO number, is stored again as new by slru); finish:
 *   unpin computed[::-1] (not reused) then pinned[::-1] (reused).
 *
 * FIFO per tier: a number per block from its first add to the tier's policy (kept across pins and re-inserts); a
 * queue of (entry, number) in number order, an item stale when its entry left the tier or took another number.
 * Victims: the first items not excluded (pinned GPU blocks, the CPU batch's resident blocks); the excluded ones met
 * at the front are parked in a short array kept before the queue (older than every queued item, in number order),
 * looked at first by each later search. SLRU per tier: probation and protected
 * lists (front = LRU), protected capped at floor(share x capacity) (rebalance: protected's front to probation's end),
 * each an array of entries with lazy deletion (sl_append, sl_unlink, sl_pop: no link to follow or mend).
 *
 * Keys map to entries directly when the ids are dense (an entry per id up to the largest: w_init), else through an
 * open-addressing table (linear probing, key_hash with the process seed, load <= 0.5) sized once for the trace's
 * hashes (8-16 B of slots per hash) that keeps every key it met (no deletion). Per entry 15-21 B (5 + 8 per fifo tier,
 * 5 per slru tier), 8 B more with the table (its key), touched as keys come; an slru tier's two segment arrays 4 B an
 * item, at most 8 items per block of its capacity after a growth (sl_room).
 * Equality with the compiled hierarchy and the Python reference: tests/engine/test_seqpol.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_kernel_common.h"
#include "../_buf8.h"

enum { K_FIFO = 0, K_SLRU = 1 };
enum { F_G = 1, F_C = 2, F_PIN = 4, F_NEW = 8, F_AGAIN = 16 };   /* in GPU, in CPU, pinned, unnumbered, set aside */
enum { PROB = 0, PROT = 1 };

typedef struct { int32_t e; int64_t s; } Item;

typedef struct {
    int kind;
    uint8_t in;                   /* F_G or F_C */
    int64_t cap, nres, pmax;
    /* fifo */
    int64_t *seq;                 /* per entry: its number here (from 1), 0 none */
    Item *q;                      /* the queue, number order, [qh, qt) */
    int64_t qh, qt, qcap, next_seq;
    Item *park;                   /* items passed over at the queue's front (all older than the queue's): [0, np) */
    int64_t np, pcap;
    /* slru: per segment an array of entries in list order with lazy deletion (sl_append, sl_unlink) */
    int32_t *pos;                 /* per entry: its item's index in its segment's array (read only while listed) */
    int8_t *seg;                  /* per entry: 1 + PROB or PROT, 0 in no list */
    int32_t *sq[2];               /* the segments' arrays: [sh, sn) items, -1 a stale one; sqcap allocated + SQ_AHEAD */
    int64_t sh[2], sn[2], sqcap[2];
    int64_t len[2];               /* live items */
} PT;

typedef struct {
    uint64_t *keys;               /* per entry (the table's; unused when direct) */
    uint8_t *flags;
    int32_t *stamp;               /* 1 + the last request that listed the key (repeat test), 0 none */
    int64_t nent;
    int32_t *slots;               /* 1 + entry, 0 empty */
    uint64_t mask;
    PT t[2];
    int32_t *ents, *vict, *buf;   /* per request: head entries; victims; scratch (computed, pinned lists) */
    int64_t bcap;
    int direct;                   /* every key is below the entries' count: its entry is the key itself (w_init) */
} W;

static void pt_free(PT *t) {
    free(t->seq); free(t->q); free(t->park); free(t->pos); free(t->seg); free(t->sq[0]); free(t->sq[1]);
}

static void w_free(W *w) {
    free(w->keys); free(w->flags); free(w->stamp); free(w->slots);
    pt_free(&w->t[0]); pt_free(&w->t[1]);
    free(w->ents); free(w->vict); free(w->buf);
}

/* every per-entry array for c entries, each entry in no tier and no list: the arrays read before written zeroed
 * (calloc: pages the C library maps zeroed, not written here); 0 or -1 */
static int w_alloc_ents(W *w, int64_t c, int keys) {
    const size_t m = (size_t)c;
    if (keys && !(w->keys = malloc(sizeof(uint64_t) * m))) return -1;
    if (!(w->flags = calloc(m, 1)) || !(w->stamp = calloc(m, sizeof(int32_t)))) return -1;
    for (int j = 0; j < 2; j++) {
        PT *t = &w->t[j];
        if (t->kind == K_FIFO) { if (!(t->seq = calloc(m, sizeof(int64_t)))) return -1; }
        else if (!(t->pos = malloc(sizeof(int32_t) * m)) || !(t->seg = calloc(m, 1))) return -1;
    }
    return 0;
}

/* the entry of key k, added (in no tier: its fields zero) when new; the table holds at most half its slots (w_init:
 * sized for every hash of the trace) */
static inline int32_t w_entry(W *w, uint64_t k) {
    uint64_t i = key_hash(k) & w->mask;
    int32_t e;
    while ((e = w->slots[i]) > 0) {
        if (w->keys[e - 1] == k) return e - 1;
        i = (i + 1) & w->mask;
    }
    e = (int32_t)w->nent++;
    w->keys[e] = k;
    w->slots[i] = e + 1;
    return e;
}

/* ---- slru lists ----
 * Each segment (probation, protected) is an array of entry indices in list order (front = LRU), read from the front,
 * with lazy deletion, as the inline LRU order of pcs/cache/_lruq.h: an append puts the entry at the end and keeps its
 * index (pos); an unlink writes -1 over its item (stale), so no neighbour is read or written; the front passes stale
 * items. The live items in array order are the list's entries in list order, so every victim and demotion is the
 * doubly linked list's. The victims' entries are prefetched SQ_AHEAD items ahead (the list's walk was a chain of
 * dependent reads of scattered entries). When an append meets the array's end the live items move to its front
 * (their pos rewritten), into an array twice as large when more than a quarter were live. */
#define SQ_AHEAD 8

/* segment s of t compacted (and grown when a quarter or more is live) so that one more item fits; 0 or -1 */
static __attribute__((noinline)) int sl_room(PT *t, int s) {
    int32_t *q = t->sq[s];
    int64_t k = 0;
    for (int64_t i = t->sh[s]; i < t->sn[s]; i++) {
        const int32_t e = q[i];
        if (e < 0) continue;
        t->pos[e] = (int32_t)k;
        q[k++] = e;
    }
    for (int64_t i = k; i < t->sn[s]; i++) q[i] = -1;    /* -1 past the end (read ahead by sl_pop's prefetches) */
    t->sh[s] = 0;
    t->sn[s] = k;
    if (k * 4 >= t->sqcap[s]) {
        const int64_t had = t->sq[s] ? t->sqcap[s] + SQ_AHEAD : 0, c = t->sqcap[s] ? t->sqcap[s] * 2 : 1024;
        if (c >= INT32_MAX) return -1;
        if (!(q = realloc(q, sizeof(int32_t) * (size_t)(c + SQ_AHEAD)))) return -1;
        for (int64_t i = had > k ? had : k; i < c + SQ_AHEAD; i++) q[i] = -1;
        t->sq[s] = q;
        t->sqcap[s] = c;
    }
    return 0;
}

/* e (in no list) at the end of segment s; 0 or -1 (no memory) */
static inline int sl_append(PT *t, int s, int32_t e) {
    if (t->sn[s] == t->sqcap[s] && sl_room(t, s) < 0) return -1;
    t->pos[e] = (int32_t)t->sn[s];
    t->sq[s][t->sn[s]++] = e;
    t->seg[e] = (int8_t)(s + 1);
    t->len[s]++;
    return 0;
}

static inline void sl_unlink(PT *t, int32_t e) {
    const int s = t->seg[e] - 1;
    t->sq[s][t->pos[e]] = -1;
    t->seg[e] = 0;
    t->len[s]--;
}

/* the front entry of segment s (len[s] > 0) taken out of it; the entries SQ_AHEAD items on prefetched */
static inline int32_t sl_pop(PT *t, int s, const uint8_t *fl) {
    int32_t *const q = t->sq[s];
    int64_t h = t->sh[s];
    while (q[h] < 0) h++;
    const int32_t e = q[h], a = q[h + SQ_AHEAD];
    if (a >= 0) { __builtin_prefetch(&t->seg[a], 1, 1); __builtin_prefetch(&fl[a], 1, 1); }
    t->sh[s] = h + 1;
    t->seg[e] = 0;
    t->len[s]--;
    return e;
}

/* m sl_pops of segment s (m <= len[s]) to out, each entry's flag `in` cleared, in order: the front and the array
 * in locals (one store of sh[s] for the run, not one per pop: the pops' loads of sh[s] waited for the last pop's
 * store, perf of Mooncake slru), the entries SQ_AHEAD items on prefetched as sl_pop does */
static void sl_pop_run(PT *t, int s, uint8_t *fl, uint8_t in, int32_t *out, int64_t m) {
    const int32_t *const q = t->sq[s];
    int8_t *const seg = t->seg;
    const uint8_t keep = (uint8_t)~in;
    int64_t h = t->sh[s];
    for (int64_t i = 0; i < m; i++) {
        while (q[h] < 0) h++;
        const int32_t e = q[h], a = q[h + SQ_AHEAD];
        if (a >= 0) { __builtin_prefetch(&seg[a], 1, 1); __builtin_prefetch(&fl[a], 1, 1); }
        h++;
        seg[e] = 0;
        fl[e] &= keep;
        out[i] = e;
    }
    t->sh[s] = h;
    t->len[s] -= m;
}

/* protected's front entries to probation's end while protected is over its size; 0 or -1 */
static int sl_rebalance(PT *t, const uint8_t *fl) {
    while (t->len[PROT] > t->pmax)
        if (sl_append(t, PROB, sl_pop(t, PROT, fl)) < 0) return -1;
    return 0;
}

/* ---- fifo queue ---- */

/* fq_append's slow path: the queue at its end: stale items dropped, then its room doubled if still a quarter full
 * (so a compaction's scan is paid by at least 3/4 of the room's appends) */
static __attribute__((noinline)) int fq_room(PT *t) {
    int64_t k = 0;
    for (int64_t i = t->qh; i < t->qt; i++) {
        const Item it = t->q[i];
        if (t->seq[it.e] == it.s) t->q[k++] = it;
    }
    t->qh = 0;
    t->qt = k;
    if (k * 4 >= t->qcap) {
        const int64_t c = t->qcap ? t->qcap * 2 : 1024;
        Item *q = realloc(t->q, sizeof(Item) * (size_t)c);
        if (!q) return -1;
        t->q = q;
        t->qcap = c;
    }
    return 0;
}

/* e numbered (the next number) at the queue's end; 0 or -1 */
static inline int fq_append(PT *t, int32_t e) {
    if (t->qt == t->qcap && fq_room(t) < 0) return -1;
    t->seq[e] = t->next_seq;
    t->q[t->qt++] = (Item){e, t->next_seq++};
    return 0;
}

/* it parked at the end of the passed-over items; 0 or -1 */
static int fq_park(PT *t, Item it) {
    if (t->np == t->pcap) {
        const int64_t c = t->pcap ? t->pcap * 2 : 256;
        Item *p = realloc(t->park, sizeof(Item) * (size_t)c);
        if (!p) return -1;
        t->park = p;
        t->pcap = c;
    }
    t->park[t->np++] = it;
    return 0;
}

/* ---- a tier's policy (fifo.py / slru.py) on the entries of the walk ---- */

/* add(e, reused): fifo numbers a block new to it (kept: back in place); slru appends to a segment (the caller
 * rebalances after a reused batch). 0 or -1 */
static inline int pol_add(PT *t, int32_t e, int reused) {
    if (t->kind == K_FIFO) return t->seq[e] ? 0 : fq_append(t, e);
    return sl_append(t, reused ? PROT : PROB, e);
}

/* e's policy fields in t prefetched (for writing): fifo's number, slru's position and segment. Issued where a loop
 * first meets a key its tier's policy will read or write later in the request (pol_add, pol_remove): each was a miss
 * on an array of the trace's size, met one at a time (perf, Mooncake fifo: fifo's number read by pol_add, a third of
 * the walk's samples) */
static inline void pt_prefetch(const PT *t, int32_t e) {
    if (t->kind == K_FIFO) __builtin_prefetch(&t->seq[e], 1, 1);
    else { __builtin_prefetch(&t->pos[e], 1, 1); __builtin_prefetch(&t->seg[e], 1, 1); }
}

/* remove(e) (a pin, a batch's resident block set aside): fifo keeps number and place (the caller's flag excludes
 * it from victims) */
static inline void pol_remove(PT *t, int32_t e) { if (t->kind == K_SLRU) sl_unlink(t, e); }

/* drop(e) (an evicted or cut block): its number forgotten */
static inline void pol_drop(PT *t, int32_t e) {
    if (t->kind == K_FIFO) t->seq[e] = 0;
    else if (t->seg[e]) sl_unlink(t, e);
}

/* n victims (the tier holds at least n blocks not excluded) to out, each taken out of the tier (its flag and
 * number, nres); `excl`: the flag of blocks to pass over (fifo: parked, kept before the queue in number order;
 * slru's are out of its lists). 0 or -1 */
static int pol_evict(W *w, PT *t, int64_t n, uint8_t excl, int32_t *out) {
    uint8_t *const fl = w->flags;
    if (t->kind == K_SLRU) {                               /* probation's front first, then protected's */
        const int64_t a = n < t->len[PROB] ? n : t->len[PROB];
        sl_pop_run(t, PROB, fl, t->in, out, a);
        sl_pop_run(t, PROT, fl, t->in, out + a, n - a);
    } else {
        int64_t i = 0, k = 0;
        Item *const pk = t->park;
        for (int64_t j = 0; j < t->np; j++) {              /* the parked items first (older than the queue's) */
            const Item it = pk[j];
            if (t->seq[it.e] != it.s) continue;            /* stale: gone */
            if (i == n || (fl[it.e] & excl)) { pk[k++] = it; continue; }
            t->seq[it.e] = 0;
            fl[it.e] &= (uint8_t)~t->in;
            out[i++] = it.e;
        }
        t->np = k;
        const Item *const q = t->q;
        int64_t *const seq = t->seq;
        const uint8_t keep = (uint8_t)~t->in;
        int64_t qh = t->qh;                                /* (in a local, stored once: fq_park leaves q) */
        const int64_t qt = t->qt;
        while (i < n) {
            if (qh + SQ_AHEAD < qt) {                      /* the entry read SQ_AHEAD items on, prefetched */
                const int32_t a = q[qh + SQ_AHEAD].e;
                __builtin_prefetch(&seq[a], 1, 1);
                __builtin_prefetch(&fl[a], 1, 1);
            }
            const Item it = q[qh++];
            if (seq[it.e] != it.s) continue;               /* stale */
            if (fl[it.e] & excl) { if (fq_park(t, it) < 0) return -1; continue; }   /* passed over */
            seq[it.e] = 0;
            fl[it.e] &= keep;
            out[i++] = it.e;
        }
        t->qh = qh;
    }
    t->nres -= n;
    return 0;
}

/* ---- one request ---- */

/* entry e's items a request reads first (its stamp, its flags, the GPU policy's fields) prefetched: the next
 * request's first key, while this one runs (a request's keys are mostly consecutive ids, which the hardware fetches
 * in turn once the first is met; the first was a miss on each of the arrays, met one after the other) */
static inline void w_prefetch(const W *w, int32_t e) {
    __builtin_prefetch(&w->stamp[e], 1, 1);
    __builtin_prefetch(&w->flags[e], 1, 1);
    pt_prefetch(&w->t[0], e);
}

static int w_reserve(W *w, int64_t m) {
    if (m <= w->bcap) return 0;
    int64_t c = w->bcap ? w->bcap : 64;
    while (c < m) c *= 2;
    void *a = realloc(w->ents, sizeof(int32_t) * (size_t)c), *b, *d;
    if (!a) return -1;
    w->ents = a;
    if (!(b = realloc(w->vict, sizeof(int32_t) * (size_t)c))) return -1;
    w->vict = b;
    if (!(d = realloc(w->buf, sizeof(int32_t) * (size_t)c))) return -1;
    w->buf = d;
    w->bcap = c;
    return 0;
}

/* the CPU tier's insert of the GPU victims v[0..nv) (eviction order; tier.py insert with no admission, no lease,
 * no pin); 0 or -1 */
static int cpu_insert(W *w, const int32_t *v, int64_t nv, int32_t *scratch) {
    PT *c = &w->t[1];
    uint8_t *const fl = w->flags;
    int64_t cut = nv > c->cap ? nv - c->cap : 0;
    for (int64_t i = 0; i < cut; i++)                      /* _overflow: the first ones pushed out */
        if (fl[v[i]] & F_C) { pol_drop(c, v[i]); fl[v[i]] &= (uint8_t)~F_C; c->nres--; }
    v += cut;
    nv -= cut;
    int64_t fresh = 0, again = 0;
    for (int64_t i = 0; i < nv; i++) {
        const int32_t e = v[i];
        pt_prefetch(c, e);                                 /* (added below) */
        if (fl[e] & F_C) { fl[e] |= F_AGAIN; pol_remove(c, e); again++; }
        else fresh++;
    }
    const int64_t need = fresh - (c->cap - c->nres);
    if (need > 0 && pol_evict(w, c, need, F_AGAIN, scratch) < 0) return -1;
    for (int64_t i = 0; i < nv; i++) {
        const int32_t e = v[i];
        if (fl[e] & F_AGAIN) continue;
        fl[e] |= F_C;
        c->nres++;
    }
    if (c->kind == K_FIFO || !again) {       /* fifo ignores the flag: one run (its resident ones keep their place) */
        for (int64_t i = 0; i < nv; i++) {
            fl[v[i]] &= (uint8_t)~F_AGAIN;
            if (pol_add(c, v[i], 0) < 0) return -1;
        }
        return 0;
    }
    for (int64_t i = 0; i < nv;) {           /* slru: runs of one flag, stored (probation) or touched (protected) */
        const int touched = (fl[v[i]] & F_AGAIN) != 0;
        int64_t j = i;
        for (; j < nv && ((fl[v[j]] & F_AGAIN) != 0) == touched; j++) {
            fl[v[j]] &= (uint8_t)~F_AGAIN;
            if (sl_append(c, touched ? PROT : PROB, v[j]) < 0) return -1;
        }
        if (touched && sl_rebalance(c, fl) < 0) return -1;
        i = j;
    }
    return 0;
}

/* request r over keys k[0..len): its hit blocks, or -1 (no memory) */
static int64_t w_one(W *w, int64_t r, const uint64_t *k, int64_t len, int64_t n, int64_t cap) {
    PT *g = &w->t[0], *c = &w->t[1];
    if (n > len) n = len;
    if (n < 0) n = 0;
    if (w_reserve(w, n + 1) < 0) return -1;
    int32_t *const ents = w->ents;
    for (int64_t i = 0; i < n; i++) {                      /* head: cut at a repeated key */
        const int32_t e = w->direct ? (int32_t)k[i] : w_entry(w, k[i]);
        if (w->stamp[e] == (int32_t)(r + 1)) { n = i; break; }
        w->stamp[e] = (int32_t)(r + 1);
        ents[i] = e;
        pt_prefetch(g, e);                                 /* (pinned or filled below, added back at the finish) */
    }
    if (cap > n) cap = n;
    int64_t lead = 0, npin = 0, nres_ = 0;
    for (; lead < n; lead++) {                             /* lookup (flags read after w_entry's growths) */
        const uint8_t f = w->flags[ents[lead]];
        if (f & F_G) npin++;
        else if (f & F_C) { if (lead < cap) nres_++; }
        else break;
    }
    uint8_t *const f8 = w->flags;
    int64_t hits = cap < lead ? cap : lead;
    if (hits < 0) hits = 0;
    int64_t ncomp = (lead - npin - nres_) + (n - lead);    /* beyond (CPU keys from cap on) + head[lead:] */
    const int64_t need = nres_ + ncomp, avail = g->cap - npin;
    const int64_t budget = need <= avail ? need : avail;
    if (budget < need) {                                   /* _truncate */
        if (nres_ <= budget) ncomp = budget - nres_;
        else {
            int64_t seen = 0;
            for (int64_t i = 0; i < hits; i++) {
                if (f8[ents[i]] & F_G) continue;
                if (seen == budget) { hits = i; break; }
                seen++;
            }
            nres_ = budget;
            ncomp = 0;
        }
    }
    for (int64_t i = 0; i < lead; i++) {                   /* pin the GPU lead */
        const int32_t e = ents[i];
        if (f8[e] & F_G) { f8[e] |= F_PIN; pol_remove(g, e); }
    }
    int64_t nv = budget - (g->cap - g->nres);
    if (nv > 0) { if (pol_evict(w, g, nv, F_PIN, w->vict) < 0) return -1; } else nv = 0;
    if (nres_) {                                           /* restores: filled pinned, CPU copies touched tail first */
        for (int64_t i = 0; i < hits; i++) {
            const int32_t e = ents[i];
            if (f8[e] & F_PIN) continue;                   /* (every key before hits is GPU-pinned or a restore) */
            f8[e] |= F_G | F_PIN | F_NEW;
            g->nres++;
        }
        if (c->kind == K_SLRU) {
            for (int64_t i = hits - 1; i >= 0; i--) {
                const int32_t e = ents[i];
                if (!(f8[e] & F_NEW)) continue;
                sl_unlink(c, e);
                if (sl_append(c, PROT, e) < 0) return -1;
            }
            if (sl_rebalance(c, f8) < 0) return -1;
        }
    }
    if (nv && cpu_insert(w, w->vict, nv, w->buf) < 0) return -1;
    /* computed: the CPU-only lead keys from cap on, then head[lead:], ncomp of them (buf) */
    int32_t *const comp = w->buf;
    int64_t nc = 0;
    for (int64_t i = cap > 0 ? cap : 0; i < lead && nc < ncomp; i++)
        if (!(f8[ents[i]] & F_PIN)) comp[nc++] = ents[i];   /* (every lead key there: pinned GPU, or CPU) */
    for (int64_t i = lead; i < n && nc < ncomp; i++) comp[nc++] = ents[i];
    for (int64_t i = 0; i < nc; i++) {                     /* prefill_done: fill (a GPU-resident one pinned) */
        const int32_t e = comp[i];
        if (f8[e] & F_G) { f8[e] |= F_PIN; pol_remove(g, e); }
        else { f8[e] |= F_G | F_PIN | F_NEW; g->nres++; }
    }
    /* finish: computed[::-1] (not reused), then pinned[::-1] (reused): the GPU lead keys in [hits, lead) and every
     * key before hits */
    for (int64_t i = nc - 1; i >= 0; i--) {
        const int32_t e = comp[i];
        f8[e] &= (uint8_t)~(F_PIN | F_NEW);
        if (pol_add(g, e, 0) < 0) return -1;
    }
    for (int64_t i = lead - 1; i >= 0; i--) {
        const int32_t e = ents[i];
        if (!(f8[e] & F_PIN)) continue;                    /* a CPU key past the kept hits, or computed */
        f8[e] &= (uint8_t)~(F_PIN | F_NEW);
        if (pol_add(g, e, 1) < 0) return -1;
    }
    if (g->kind == K_SLRU && sl_rebalance(g, f8) < 0) return -1;
    return hits;
}

static int pt_init(PT *t, int kind, uint8_t in, int64_t cap, int64_t pmax) {
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->in = in;
    t->cap = cap;
    t->pmax = pmax;
    t->next_seq = 1;
    return 0;
}

/* the walk's state for the trace's H hashes, the largest `top`: direct (an entry per id, no table) when the ids are
 * dense -- top below 2 H + 1024, as in a trace numbered in order of appearance (Mooncake's) --, else a table of at
 * least 2 H slots (at most H distinct keys: no growth). 0 or -1 (no memory) */
static int w_init(W *w, const int *kind, const int64_t *cap, const int64_t *pmax, int64_t keys, uint64_t top) {
    memset(w, 0, sizeof *w);
    pt_init(&w->t[0], kind[0], F_G, cap[0], pmax[0]);
    pt_init(&w->t[1], kind[1], F_C, cap[1], pmax[1]);
    if (top < (uint64_t)keys * 2 + 1024 && top < INT32_MAX - 1) {
        w->direct = 1;
        return w_alloc_ents(w, (int64_t)top + 1, 0);
    }
    uint64_t slots = 4096;
    while (slots < (uint64_t)(keys + 1) * 2) slots *= 2;
    if (!(w->slots = calloc(slots, sizeof(int32_t)))) return -1;
    w->mask = slots - 1;
    return w_alloc_ents(w, keys + 1, 1);
}


/* run(hashes, offsets, cacheable, max_hit, out, policies, capacities, protected):
 *   hashes uint64 (H,), offsets int64 (R+1,) rising within [0, H], cacheable and max_hit int64 (R,), out int64 (R,)
 *   written with each request's hit blocks; policies (GPU, CPU) each "fifo" or "slru"; capacities (GPU, CPU) blocks
 *   >= 0; protected (GPU, CPU) slru's protected segment size in blocks (floor(share x capacity); read for slru).
 * The GIL is released over the requests (the walk touches only its own memory and the buffers).
 * Raises TypeError (arguments), ValueError (offsets, lengths, a policy name, a negative capacity), MemoryError. */
static PyObject *seqpol_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError,
                        "run(hashes, offsets, cacheable, max_hit, out, policies, capacities, protected)");
        return NULL;
    }
    int kind[2];
    int64_t cap[2], pmax[2];
    for (int j = 0; j < 2; j++) {
        PyObject *p = PySequence_GetItem(args[5], j);
        if (!p) return NULL;
        const char *s = PyUnicode_Check(p) ? PyUnicode_AsUTF8(p) : NULL;
        kind[j] = s && !strcmp(s, "fifo") ? K_FIFO : s && !strcmp(s, "slru") ? K_SLRU : -1;
        Py_DECREF(p);
        PyObject *a = PySequence_GetItem(args[6], j), *b = a ? PySequence_GetItem(args[7], j) : NULL;
        cap[j] = a ? PyLong_AsLongLong(a) : -1;
        pmax[j] = b ? PyLong_AsLongLong(b) : -1;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (PyErr_Occurred()) return NULL;
        if (kind[j] < 0 || cap[j] < 0 || cap[j] > ((int64_t)1 << 30)) {
            PyErr_SetString(PyExc_ValueError, "policies must be 'fifo' or 'slru', capacities within [0, 2**30]");
            return NULL;
        }
    }
    static const char *what[] = {"hashes", "offsets", "cacheable", "max_hit", "out"};
    Py_buffer b[5];
    int got = 0, rc = -1;
    for (; got < 5; got++) if (get_buf8(args[got], &b[got], got == 4, what[got]) < 0) break;
    const Py_ssize_t R = got == 5 ? b[2].len / 8 : 0, H = got == 5 ? b[0].len / 8 : 0;
    if (got == 5 && (b[1].len / 8 != R + 1 || b[3].len / 8 != R || b[4].len / 8 != R))
        PyErr_SetString(PyExc_ValueError, "need len(offsets) = R + 1 and R entries in cacheable, max_hit, out");
    else if (got == 5) {
        const uint64_t *keys = b[0].buf;
        const int64_t *off = b[1].buf, *n = b[2].buf, *mh = b[3].buf;
        int64_t *out = b[4].buf;
        int bad = 0;
        for (Py_ssize_t i = 0; i < R && !bad; i++) bad = off[i] < 0 || off[i] > off[i + 1] || off[i + 1] > H;
        if (bad) PyErr_SetString(PyExc_ValueError, "offsets must rise within the hashes");
        else if (R >= INT32_MAX || H >= INT32_MAX)
            PyErr_SetString(PyExc_ValueError, "at most 2**31 - 2 requests and hashes");
        else {
            W w;
            int mem = 0;
            Py_BEGIN_ALLOW_THREADS
            uint64_t top = 0;
            for (Py_ssize_t i = 0; i < H; i++) top = keys[i] > top ? keys[i] : top;
            if (w_init(&w, kind, cap, pmax, (int64_t)H, top) < 0) mem = 1;
            for (Py_ssize_t i = 0; i < R && !mem; i++) {
                if (w.direct && i + 1 < R && off[i + 1] < off[i + 2]) w_prefetch(&w, (int32_t)keys[off[i + 1]]);
                const int64_t h = w_one(&w, i, keys + off[i], off[i + 1] - off[i], n[i], mh[i]);
                if (h < 0) mem = 1; else out[i] = h;
            }
            w_free(&w);
            Py_END_ALLOW_THREADS
            if (mem) PyErr_NoMemory(); else rc = 0;
        }
    }
    while (got-- > 0) PyBuffer_Release(&b[got]);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"run", (PyCFunction)(void (*)(void))seqpol_run, METH_FASTCALL,
     "run(hashes, offsets, cacheable, max_hit, out, policies, capacities, protected): the sequential baseline of two "
     "fifo / slru tiers; out[i] = request i's hit blocks"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_seqpol", NULL, -1, methods};

PyMODINIT_FUNC PyInit__seqpol(void) { return PyModule_Create(&moddef); }
