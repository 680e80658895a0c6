/* pcs.cache._grouphier: the page tiers of the compiled hybrid hierarchy (pcs/cache/_grouphier.c).
 *
 * A page key is (block hash, tag) with tag = g << 16 | page (pcs.cache.grouphier.page_key: the Python key is
 * hash | tag << 64). A PTier is pcs.cache.tier.Tier with an LRU policy (pcs/cache/policies/lru.py): page entries
 * with pin counts, found through an open-addressing table of group blocks (the table of pcs/cache/_oatable.h, as
 * the compiled hierarchy's tiers, pcs/cache/_lruhier.h); the unpinned pages form the LRU list (head = first victim).
 */
#ifndef PCS_GROUPHIER_H
#define PCS_GROUPHIER_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#include "../_kernel_common.h"

typedef struct { uint64_t h; uint32_t tag; } Key;
typedef struct { Key *a; Py_ssize_t n, cap; } KV;          /* a growable list of page keys */

/* a page's pin count (PT_ABSENT: no such page) and LRU links (head = first victim) */
typedef struct { int32_t pin, prev, next; } PEnt;
#define PT_ABSENT INT32_MIN

/* a group block (hash, group) with at least one page resident; pin: how many (the open-addressing table of
 * pcs/cache/_oatable.h keyed by group block; prev/next unused but for the free list) */
typedef struct { uint64_t h; uint32_t g; } BKey;
typedef struct { uint64_t h; uint32_t g; int32_t pin, prev, next; } BRec;
typedef struct {
    BRec *ent;
    int32_t ent_cap, ent_len, free_head, head, tail;
    int32_t *slots;
    uint64_t mask;
    int bits;
    Py_ssize_t nres, held;
} BTab;

/* A tier's pages, found through their group block's record: one table entry for all the pages of a block
 * (gemma-3-27b's six window pages: one slot and one record, added and deleted once, not six). Page p of record r is
 * entry r << shift | p, so the pages of a block lie side by side (the LRU list walks a block's pages in one or two
 * cache lines); the LRU list of the unpinned pages is doubly linked page by page, as pcs/cache/_oatable.h's.
 * gemma-3-27b's Mooncake replay: the CPU tier's table a quarter of the slots (14 k blocks, not 48 k pages), a third
 * of the last-level cache misses of the sequential baseline (callgrind, 2 MB LL: 2.29 M -> 0.75 M reads). */
typedef struct {
    Py_ssize_t cap, reserved, nres, held;
    long long inserted, evicted, overflow, peak_res, peak_used;
    PEnt *ent;                  /* (records the block table has room for) << shift entries */
    int32_t ent_cap, head, tail;
    BTab blk;
    int shift;                  /* 2**shift >= the most pages a group block has */
} PTier;

#define GROUP_OF(k) ((int)((k).tag >> 16))
#define PAGE_OF(k) ((int)((k).tag & 0xffff))

static inline uint64_t bt_home(const BTab *t, BKey k) {
    return key_hash(k.h ^ ((uint64_t)k.g * 0xC2B2AE3D27D4EB4FULL)) >> (64 - t->bits);   /* crafted ids spread */
}

static inline int kv_push(KV *v, Key k) {
    if (v->n == v->cap && PCS_GROW(v->a, &v->cap, v->n + 1, 16) < 0) return -1;
    v->a[v->n++] = k;
    return 0;
}

/* room for `more` keys after the list's n (kv_push without the check per key); 0, or -1 + MemoryError */
static inline int kv_room(KV *v, Py_ssize_t more) {
    return v->n + more <= v->cap || PCS_GROW(v->a, &v->cap, v->n + more, 16) >= 0 ? 0 : -1;
}

static inline void kv_free(KV *v) { PyMem_Free(v->a); v->a = NULL; v->n = v->cap = 0; }

/* a table's slot array: from 2 MB on aligned to 2 MB and marked for transparent huge pages (one TLB entry
 * instead of 512); NULL on failure (the caller raises) */
static inline void *pt_slots_alloc(size_t bytes) {
    void *p = NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= ((size_t)1 << 21)) {
        if (posix_memalign(&p, (size_t)1 << 21, bytes) != 0) p = NULL;
        else madvise(p, bytes, MADV_HUGEPAGE);
    } else
#endif
    p = malloc(bytes);
    return p;
}

#define OA_TABLE BTab
#define OA_ENT BRec
#define OA_KEY BKey
#define OA_HOME(t, k) bt_home(t, k)
#define OA_KEY_OF(x) ((BKey){(x)->h, (x)->g})
#define OA_KEY_EQ(x, k) ((x)->h == (k).h && (x)->g == (k).g)
#define OA_SET_KEY(x, k) ((x)->h = (k).h, (x)->g = (k).g)
#define OA_RESET(x) ((void)(x))
#define OA_INIT bt_init
#define OA_FREE bt_free
#define OA_FIND bt_find
#define OA_GROW bt_grow
#define OA_ADD bt_add
#define OA_DEL bt_del
#define OA_APPEND bt_append_unused
#define OA_UNLINK bt_unlink_unused
#define OA_SLOTS_ALLOC(bytes) pt_slots_alloc(bytes)
#define OA_SLOTS_FREE(p) free(p)
#define OA_LOAD_SHIFT 3     /* at most 1/8 full: short probe runs (gemma-3-27b's sequential replay 0.18 -> 0.10 CPU-s) */
#include "_oatable.h"

static inline BKey bkey_of(Key k) { return (BKey){k.h, k.tag >> 16}; }

/* the record of group block b, added (pin count 0) when absent, with one probe: the add takes the free slot the
 * lookup ended at unless making room grew the table (then bt_add probes again: the slots bt_find then bt_add give);
 * *added = 1 when it was absent; -1 + MemoryError on failure (the caller makes room for its pages) */
static inline int32_t bt_find_or_add(BTab *t, BKey b, int *added) {
    uint64_t at, mask = t->mask;
    int32_t r = bt_find_at(t, b, &at);
    *added = r < 0;
    if (r >= 0) return r;
    if (bt_add_room(t) < 0) return -1;
    return t->mask == mask ? bt_add_at(t, b, 0, at) : bt_add(t, b, 0);
}

/* the key of page entry e */
static inline Key pt_key(const PTier *t, int32_t e) {
    const BRec *r = &t->blk.ent[e >> t->shift];
    return (Key){r->h, r->g << 16 | (uint32_t)(e & ((1 << t->shift) - 1))};
}

/* the entry of page k, or -1 */
static inline int32_t pt_find(const PTier *t, Key k) {
    int32_t r = bt_find(&t->blk, bkey_of(k));
    if (r < 0) return -1;
    int32_t e = r << t->shift | PAGE_OF(k);
    return t->ent[e].pin == PT_ABSENT ? -1 : e;
}

/* A lookup memo over a run of page keys: consecutive keys of one group block (a block's pages, as the hierarchy
 * lists them) find its record once. Valid while no record is deleted (the caller's loop deletes none; an add
 * through pt_block_memo keeps it current). */
typedef struct { BKey b; int32_t r; } PMemo;
#define PMEMO_INIT {{0, UINT32_MAX}, -1}     /* no group is UINT32_MAX: the first key always looks up */

/* the record of k's group block or -1, through the memo m */
static inline __attribute__((always_inline)) int32_t pt_rec_memo(const PTier *t, Key k, PMemo *m) {
    BKey b = bkey_of(k);
    if (m->b.h != b.h || m->b.g != b.g) {
        m->b = b;
        m->r = bt_find(&t->blk, b);
    }
    return m->r;
}

/* the entry of page k, or -1, through the memo m */
static inline int32_t pt_find_memo(const PTier *t, Key k, PMemo *m) {
    int32_t r = pt_rec_memo(t, k, m);
    if (r < 0) return -1;
    int32_t e = r << t->shift | PAGE_OF(k);
    return t->ent[e].pin == PT_ABSENT ? -1 : e;
}

/* the page entries of records the block table may hold: grown with it, the new ones absent (a record's entries
 * are all absent whenever it is not in the table: pt_del marks a page absent before its record goes, so a
 * record reused from the free list needs no clearing); 0, or -1 + MemoryError */
static inline int pt_ent_room(PTier *t) {
    if (t->blk.ent_cap <= t->ent_cap) return 0;
    if ((Py_ssize_t)t->blk.ent_cap << t->shift > INT32_MAX) { PyErr_NoMemory(); return -1; }
    PEnt *a = PyMem_Realloc(t->ent, sizeof(PEnt) * ((size_t)t->blk.ent_cap << t->shift));
    if (!a) { PyErr_NoMemory(); return -1; }
    for (size_t e = (size_t)t->ent_cap << t->shift; e < (size_t)t->blk.ent_cap << t->shift; e++) a[e].pin = PT_ABSENT;
    t->ent = a;
    t->ent_cap = t->blk.ent_cap;
    return 0;
}

/* the record of k's group block, added (no page present) when absent, through the memo m (kept current);
 * -1 + MemoryError on failure */
static inline int32_t pt_block_memo(PTier *t, Key k, PMemo *m) {
    BKey b = bkey_of(k);
    if (m->b.h == b.h && m->b.g == b.g && m->r >= 0) return m->r;
    int added;
    int32_t r = bt_find_or_add(&t->blk, b, &added);
    if (r < 0 || (added && pt_ent_room(t) < 0)) return -1;
    m->b = b;
    m->r = r;
    return r;
}

/* add the absent page k with a pin count, in no list, to its block's record r (present); the entry index */
static inline int32_t pt_add_rec(PTier *t, int32_t r, Key k, int32_t pin) {
    int32_t e = r << t->shift | PAGE_OF(k);
    t->ent[e] = (PEnt){pin, -1, -1};
    t->blk.ent[r].pin++;
    t->nres++;
    return e;
}

/* add the absent page k with a pin count, in no list, through the memo m; the entry index or -1 (memory error,
 * exception set) */
static inline __attribute__((always_inline)) int32_t pt_add_memo(PTier *t, Key k, int32_t pin, PMemo *m) {
    int32_t r = pt_block_memo(t, k, m);
    return r < 0 ? -1 : pt_add_rec(t, r, k, pin);
}

/* delete page entry e (it must not be in the LRU list); its block record goes with its last page */
static inline void pt_del(PTier *t, int32_t e) {
    int32_t r = e >> t->shift;
    t->ent[e].pin = PT_ABSENT;
    if (--t->blk.ent[r].pin == 0) bt_del(&t->blk, r);
    t->nres--;
}

/* the LRU list's links (pcs/cache/_oatable.h's list, over page entries without keys): the next field of entry i,
 * the head when i < 0; the prev field of entry i, the tail when i < 0 */
static inline int32_t *pt_next_of(PTier *t, int32_t i) { return i >= 0 ? &t->ent[i].next : &t->head; }
static inline int32_t *pt_prev_of(PTier *t, int32_t i) { return i >= 0 ? &t->ent[i].prev : &t->tail; }

/* entry e becomes the LRU list's last (most recent) unpinned page */
static inline void pt_append(PTier *t, int32_t e) {
    t->ent[e] = (PEnt){t->ent[e].pin, t->tail, -1};
    *pt_next_of(t, t->tail) = e;
    t->tail = e;
    t->held++;
}

/* entry e leaves the LRU list */
static inline void pt_unlink(PTier *t, int32_t e) {
    PEnt *x = &t->ent[e];
    *pt_next_of(t, x->prev) = x->next;
    *pt_prev_of(t, x->next) = x->prev;
    x->prev = x->next = -1;
    t->held--;
}

/* an empty tier of `capacity` pages whose group blocks have at most P pages; -1 + MemoryError on failure */
static inline int pt_init(PTier *t, Py_ssize_t capacity, int P) {
    memset(t, 0, sizeof(*t));
    t->cap = capacity;
    while (1 << t->shift < P) t->shift++;
    t->head = t->tail = -1;
    return bt_init(&t->blk);
}

static inline void pt_free(PTier *t) {
    PyMem_Free(t->ent);
    t->ent = NULL;
    bt_free(&t->blk);
}

static inline Py_ssize_t pt_free_slots(const PTier *t) { return t->cap - t->nres - t->reserved; }
static inline Py_ssize_t pt_available(const PTier *t) { return t->cap - t->nres - t->reserved + t->held; }

static inline void pt_peaks(PTier *t) {
    if (t->nres > t->peak_res) t->peak_res = t->nres;
    if (t->nres + t->reserved > t->peak_used) t->peak_used = t->nres + t->reserved;
}

#endif
