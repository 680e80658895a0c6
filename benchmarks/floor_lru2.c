/* The floor of a two-tier LRU replay on this machine (benchmarks/bench_floor.py builds and times it; not pcs).
 *
 * A minimal exclusive two-tier LRU: GPU tier of G blocks, CPU tier of C blocks. Per access of key k (one cacheable
 * block of a request, head to tail): in the GPU -> moved to the GPU's most recent end; in the CPU -> taken out of
 * the CPU and put at the GPU's most recent end (a restore); else put there (a miss). A block put into a full GPU
 * first demotes the GPU's least recent block to the CPU's most recent end; a full CPU first drops its least recent
 * block. No scheduler, no pins, no per-request columns: the hash probe and the list links alone, the least any loop
 * over this stream with this design does per access.
 *
 * Two variants, each one function over the whole stream:
 *   floor_hashed: an open-addressing table of the resident blocks only (as pcs/cache/_oatable.h with OA_HASH32:
 *     slots of {entry, 32-bit fingerprint}, linear probing, at most half full, backward-shift deletion; the key's
 *     hash as pcs/_kernel_common.h key_hash) over an array of G + C entries {key, prev, next, tier}, doubly linked
 *     lists per tier. `ahead` > 0: the table slot of the access `ahead` places later is prefetched, and the entry
 *     its slot names `ahead / 2` places later (software prefetch one request's worth ahead).
 *   floor_dense: the keys given as dense indices 0 .. D-1 (the caller remaps them, untimed): per-index prev, next
 *     and tier arrays, no hash table at all (the floor of the list links alone).
 * Both return the hits per tier in hits[0] (GPU) and hits[1] (CPU): the same numbers for the same stream (the
 * script checks they agree). Memory: hashed 2**ceil(log2(2 (G + C))) slots x 8 B + (G + C) x 24 B; dense D x 9 B.
 * Errors: -1 when memory cannot be had; the stream is not checked (keys are any uint64, indices must be < D).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int32_t e; uint32_t h; } Slot;
typedef struct { uint64_t key; int32_t prev, next; int32_t tier; } Ent;   /* tier: 0 GPU, 1 CPU */

static inline uint64_t key_hash(uint64_t k) {   /* pcs/_kernel_common.h key_hash: xor-shift, then multiply */
    k ^= k >> 33;
    return k * 0x9E3779B97F4A7C15ull;
}

typedef struct { int32_t head, tail; int64_t n; } List;   /* head: least recent */

/* doubly linked lists over separate prev / next arrays (dense) */
static inline void d_unlink(List *l, int32_t e, int32_t *prev, int32_t *next) {
    int32_t p = prev[e], n = next[e];
    if (p >= 0) next[p] = n; else l->head = n;
    if (n >= 0) prev[n] = p; else l->tail = p;
    l->n--;
}
static inline void d_append(List *l, int32_t e, int32_t *prev, int32_t *next) {
    prev[e] = l->tail;
    next[e] = -1;
    if (l->tail >= 0) next[l->tail] = e; else l->head = e;
    l->tail = e;
    l->n++;
}

/* the same over the entries' own links (hashed) */
static inline void e_unlink(List *l, Ent *ent, int32_t e) {
    int32_t p = ent[e].prev, n = ent[e].next;
    if (p >= 0) ent[p].next = n; else l->head = n;
    if (n >= 0) ent[n].prev = p; else l->tail = p;
    l->n--;
}
static inline void e_append(List *l, Ent *ent, int32_t e) {
    ent[e].prev = l->tail;
    ent[e].next = -1;
    if (l->tail >= 0) ent[l->tail].next = e; else l->head = e;
    l->tail = e;
    l->n++;
}

/* hits per tier of the stream idx[0 .. n) of dense indices < d; 0 or -1 (no memory) */
int floor_dense(const int64_t *idx, int64_t n, int64_t d, int64_t gcap, int64_t ccap, int64_t *hits) {
    int32_t *prev = malloc(sizeof(int32_t) * (size_t)d), *next = malloc(sizeof(int32_t) * (size_t)d);
    uint8_t *tier = malloc((size_t)d);
    if (!prev || !next || !tier) { free(prev); free(next); free(tier); return -1; }
    memset(tier, 2, (size_t)d);                         /* 2: in no tier */
    List g = {-1, -1, 0}, c = {-1, -1, 0};
    int64_t hg = 0, hc = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t e = (int32_t)idx[i];
        uint8_t t = tier[e];
        if (t == 0) { hg++; d_unlink(&g, e, prev, next); d_append(&g, e, prev, next); continue; }
        if (t == 1) { hc++; d_unlink(&c, e, prev, next); }
        if (g.n == gcap) {                              /* demote the GPU's least recent */
            int32_t v = g.head;
            d_unlink(&g, v, prev, next);
            if (c.n == ccap) { int32_t w = c.head; d_unlink(&c, w, prev, next); tier[w] = 2; }
            d_append(&c, v, prev, next);
            tier[v] = 1;
        }
        d_append(&g, e, prev, next);
        tier[e] = 0;
    }
    hits[0] = hg;
    hits[1] = hc;
    free(prev); free(next); free(tier);
    return 0;
}

/* the slot naming entry e (home slot i) freed, later slots of its probe run moved back (no tombstones) */
static inline void slot_del(Slot *s, uint64_t mask, int bits, int32_t e, uint64_t i) {
    while (s[i].e != e) i = (i + 1) & mask;
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        Slot f = s[j];
        if (f.e < 0) break;
        uint64_t hm = f.h >> (32 - bits);
        if (!(((j - hm) & mask) < ((j - i) & mask))) { s[i] = f; i = j; }
    }
    s[i].e = -1;
}

/* hits per tier of the stream keys[0 .. n); `ahead`: prefetch distance (0: none); 0 or -1 (no memory) */
int floor_hashed(const uint64_t *keys, int64_t n, int64_t gcap, int64_t ccap, int64_t ahead, int64_t *hits) {
    int64_t most = gcap + ccap;
    int bits = 4;
    while (((uint64_t)1 << bits) < (uint64_t)(2 * most)) bits++;
    uint64_t size = (uint64_t)1 << bits, mask = size - 1;
    Slot *s = malloc(sizeof(Slot) * size);
    Ent *ent = malloc(sizeof(Ent) * (size_t)(most + 1));
    if (!s || !ent) { free(s); free(ent); return -1; }
    memset(s, 0xff, sizeof(Slot) * size);
    int32_t free_head = -1, ent_len = 0;
    List g = {-1, -1, 0}, c = {-1, -1, 0};
    int64_t hg = 0, hc = 0, half = ahead / 2;
    for (int64_t i = 0; i < n; i++) {
        if (ahead) {
            if (i + ahead < n)
                __builtin_prefetch(&s[(uint32_t)(key_hash(keys[i + ahead]) >> 32) >> (32 - bits)], 0, 1);
            if (half && i + half < n) {                 /* the slot is in cache by now: its entry's line */
                uint32_t f2 = (uint32_t)(key_hash(keys[i + half]) >> 32);
                int32_t e2 = s[f2 >> (32 - bits)].e;
                if (e2 >= 0) __builtin_prefetch(&ent[e2], 1, 1);
            }
        }
        uint64_t k = keys[i];
        uint32_t f = (uint32_t)(key_hash(k) >> 32);
        uint64_t at = f >> (32 - bits);
        int32_t e;
        for (;;) {
            Slot x = s[at];
            if (x.e < 0) { e = -1; break; }
            if (x.h == f && ent[x.e].key == k) { e = x.e; break; }
            at = (at + 1) & mask;
        }
        if (e >= 0 && ent[e].tier == 0) { hg++; e_unlink(&g, ent, e); e_append(&g, ent, e); continue; }
        if (e >= 0) { hc++; e_unlink(&c, ent, e); }
        if (g.n == gcap) {                              /* demote the GPU's least recent */
            int32_t v = g.head;
            e_unlink(&g, ent, v);
            if (c.n == ccap) {                          /* drop the CPU's least recent: out of the table */
                int32_t w = c.head;
                e_unlink(&c, ent, w);
                slot_del(s, mask, bits, w, (uint32_t)(key_hash(ent[w].key) >> 32) >> (32 - bits));
                ent[w].next = free_head;
                free_head = w;
                if (e < 0) {                            /* the deletion may have moved k's free slot */
                    at = f >> (32 - bits);
                    while (s[at].e >= 0) at = (at + 1) & mask;
                }
            }
            e_append(&c, ent, v);
            ent[v].tier = 1;
        }
        if (e < 0) {                                    /* a miss: a new entry at the free slot */
            if (free_head >= 0) { e = free_head; free_head = ent[e].next; } else e = ent_len++;
            ent[e].key = k;
            s[at] = (Slot){e, f};
        }
        e_append(&g, ent, e);
        ent[e].tier = 0;
    }
    hits[0] = hg;
    hits[1] = hc;
    free(s); free(ent);
    return 0;
}
