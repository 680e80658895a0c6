/* pcs.cache._grouphier: the page tiers of the compiled hybrid hierarchy (pcs/cache/_grouphier.c).
 *
 * A page key is (block hash, tag) with tag = g << 16 | page (pcs.cache.grouphier.page_key: the Python key is
 * hash | tag << 64). A PTier is pcs.cache.tier.Tier with an LRU policy (pcs/cache/policies/lru.py): an
 * open-addressing table of entries with pin counts; the unpinned entries form the LRU list (head = first victim):
 * the table of pcs/cache/_oatable.h, as the compiled hierarchy's tiers (pcs/cache/_lruhier.h).
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

typedef struct { uint64_t h; uint32_t tag; int32_t pin, prev, next; } PEnt;

typedef struct {
    Py_ssize_t cap, reserved, nres, held;
    long long inserted, evicted, overflow, peak_res, peak_used;
    PEnt *ent;
    int32_t ent_cap, ent_len, free_head, head, tail;
    int32_t *slots;
    uint64_t mask;
    int bits;
} PTier;

#define GROUP_OF(k) ((int)((k).tag >> 16))
#define PAGE_OF(k) ((int)((k).tag & 0xffff))

static inline uint64_t pt_home(const PTier *t, Key k) {
    return key_hash(k.h ^ ((uint64_t)k.tag * 0xC2B2AE3D27D4EB4FULL)) >> (64 - t->bits);   /* key_hash: crafted ids spread */
}

static inline int kv_push(KV *v, Key k) {
    if (v->n == v->cap && PCS_GROW(v->a, &v->cap, v->n + 1, 16) < 0) return -1;
    v->a[v->n++] = k;
    return 0;
}

static inline void kv_free(KV *v) { PyMem_Free(v->a); v->a = NULL; v->n = v->cap = 0; }

/* a table's slot array: from 2 MB on aligned to 2 MB and marked for transparent huge pages (the CPU tier's table of
 * gemma-3-27b's Mooncake replay is 2 MB: one TLB entry instead of 512); NULL on failure (the caller raises) */
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

#define OA_TABLE PTier
#define OA_ENT PEnt
#define OA_KEY Key
#define OA_HOME(t, k) pt_home(t, k)
#define OA_KEY_OF(x) ((Key){(x)->h, (x)->tag})
#define OA_KEY_EQ(x, k) ((x)->h == (k).h && (x)->tag == (k).tag)
#define OA_SET_KEY(x, k) ((x)->h = (k).h, (x)->tag = (k).tag)
#define OA_RESET(x) ((void)(x))
#define OA_INIT pt_slots_init
#define OA_FREE pt_free
#define OA_FIND pt_find
#define OA_GROW pt_grow
#define OA_ADD pt_add
#define OA_DEL pt_del
#define OA_APPEND pt_append
#define OA_UNLINK pt_unlink
#define OA_SLOTS_ALLOC(bytes) pt_slots_alloc(bytes)
#define OA_SLOTS_FREE(p) free(p)
#define OA_LOAD_SHIFT 3     /* at most 1/8 full: gemma-3-27b's sequential Mooncake replay 0.18 -> 0.10 CPU-s */
#include "_oatable.h"

static inline int pt_init(PTier *t, Py_ssize_t capacity) {
    memset(t, 0, sizeof(*t));
    t->cap = capacity;
    return pt_slots_init(t);
}

static inline Py_ssize_t pt_free_slots(const PTier *t) { return t->cap - t->nres - t->reserved; }
static inline Py_ssize_t pt_available(const PTier *t) { return t->cap - t->nres - t->reserved + t->held; }

static inline void pt_peaks(PTier *t) {
    if (t->nres > t->peak_res) t->peak_res = t->nres;
    if (t->nres + t->reserved > t->peak_used) t->peak_used = t->nres + t->reserved;
}

#endif
