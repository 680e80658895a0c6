/* pcs.cache._grouphier: the page tiers of the compiled hybrid hierarchy (pcs/cache/_grouphier.c).
 *
 * A page key is (block hash, tag) with tag = g << 16 | page (pcs.cache.grouphier.page_key: the Python key is
 * hash | tag << 64). A PTier is pcs.cache.tier.Tier with an LRU policy (pcs/cache/policies/lru.py): an
 * open-addressing table of entries with pin counts; the unpinned entries form the LRU list (head = first victim).
 */
#ifndef PCS_GROUPHIER_H
#define PCS_GROUPHIER_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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

#define GH_HMUL 0x9E3779B97F4A7C15ULL
#define GROUP_OF(k) ((int)((k).tag >> 16))
#define PAGE_OF(k) ((int)((k).tag & 0xffff))

static inline uint64_t pt_home(const PTier *t, Key k) {
    return ((k.h ^ ((uint64_t)k.tag * 0xC2B2AE3D27D4EB4FULL)) * GH_HMUL) >> (64 - t->bits);
}

static inline int kv_push(KV *v, Key k) {
    if (v->n == v->cap) {
        Py_ssize_t c = v->cap ? v->cap * 2 : 16;
        Key *a = PyMem_Realloc(v->a, sizeof(Key) * c);
        if (!a) { PyErr_NoMemory(); return -1; }
        v->a = a;
        v->cap = c;
    }
    v->a[v->n++] = k;
    return 0;
}

static inline void kv_free(KV *v) { PyMem_Free(v->a); v->a = NULL; v->n = v->cap = 0; }

static inline int pt_init(PTier *t, Py_ssize_t capacity) {
    memset(t, 0, sizeof(*t));
    t->cap = capacity;
    t->bits = 4;
    t->mask = 15;
    t->slots = PyMem_Malloc(sizeof(int32_t) * 16);
    if (!t->slots) { PyErr_NoMemory(); return -1; }
    memset(t->slots, 0xff, sizeof(int32_t) * 16);
    t->free_head = t->head = t->tail = -1;
    return 0;
}

static inline void pt_free(PTier *t) {
    PyMem_Free(t->ent);
    PyMem_Free(t->slots);
    t->ent = NULL;
    t->slots = NULL;
}

static inline int32_t pt_find(const PTier *t, Key k) {
    uint64_t i = pt_home(t, k);
    for (;;) {
        int32_t e = t->slots[i];
        if (e < 0) return -1;
        if (t->ent[e].h == k.h && t->ent[e].tag == k.tag) return e;
        i = (i + 1) & t->mask;
    }
}

static inline int pt_grow(PTier *t) {
    int bits = t->bits + 1;
    uint64_t size = (uint64_t)1 << bits, oldsize = t->mask + 1;
    int32_t *s = PyMem_Malloc(sizeof(int32_t) * size), *old = t->slots;
    if (!s) { PyErr_NoMemory(); return -1; }
    memset(s, 0xff, sizeof(int32_t) * size);
    t->slots = s;
    t->bits = bits;
    t->mask = size - 1;
    for (uint64_t i = 0; i < oldsize; i++) {
        int32_t e = old[i];
        if (e < 0) continue;
        Key k = {t->ent[e].h, t->ent[e].tag};
        uint64_t j = pt_home(t, k);
        while (s[j] >= 0) j = (j + 1) & t->mask;
        s[j] = e;
    }
    PyMem_Free(old);
    return 0;
}

/* add an absent key with a pin count; the entry index or -1 (memory error) */
static inline int32_t pt_add(PTier *t, Key k, int32_t pin) {
    if ((uint64_t)(t->nres + 1) * 2 > t->mask + 1 && pt_grow(t) < 0) return -1;
    int32_t e;
    if (t->free_head >= 0) {
        e = t->free_head;
        t->free_head = t->ent[e].next;
    } else {
        if (t->ent_len == t->ent_cap) {
            int32_t nc = t->ent_cap ? t->ent_cap * 2 : 64;
            PEnt *ne = PyMem_Realloc(t->ent, sizeof(PEnt) * nc);
            if (!ne) { PyErr_NoMemory(); return -1; }
            t->ent = ne;
            t->ent_cap = nc;
        }
        e = t->ent_len++;
    }
    PEnt *x = &t->ent[e];
    x->h = k.h;
    x->tag = k.tag;
    x->pin = pin;
    x->prev = x->next = -1;
    uint64_t i = pt_home(t, k);
    while (t->slots[i] >= 0) i = (i + 1) & t->mask;
    t->slots[i] = e;
    t->nres++;
    return e;
}

/* delete entry e (not in the LRU list) from the table */
static inline void pt_del(PTier *t, int32_t e) {
    Key k = {t->ent[e].h, t->ent[e].tag};
    uint64_t i = pt_home(t, k);
    while (t->slots[i] != e) i = (i + 1) & t->mask;
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        int32_t f = t->slots[j];
        if (f < 0) break;
        Key kf = {t->ent[f].h, t->ent[f].tag};
        uint64_t hm = pt_home(t, kf);
        int stays = (i <= j) ? (i < hm && hm <= j) : (i < hm || hm <= j);
        if (!stays) {
            t->slots[i] = f;
            i = j;
        }
    }
    t->slots[i] = -1;
    t->ent[e].next = t->free_head;
    t->free_head = e;
    t->nres--;
}

static inline void pt_append(PTier *t, int32_t e) {
    PEnt *x = &t->ent[e];
    x->prev = t->tail;
    x->next = -1;
    if (t->tail >= 0) t->ent[t->tail].next = e; else t->head = e;
    t->tail = e;
    t->held++;
}

static inline void pt_unlink(PTier *t, int32_t e) {
    PEnt *x = &t->ent[e];
    if (x->prev >= 0) t->ent[x->prev].next = x->next; else t->head = x->next;
    if (x->next >= 0) t->ent[x->next].prev = x->prev; else t->tail = x->prev;
    x->prev = x->next = -1;
    t->held--;
}

static inline Py_ssize_t pt_free_slots(const PTier *t) { return t->cap - t->nres - t->reserved; }
static inline Py_ssize_t pt_available(const PTier *t) { return t->cap - t->nres - t->reserved + t->held; }

static inline void pt_peaks(PTier *t) {
    if (t->nres > t->peak_res) t->peak_res = t->nres;
    if (t->nres + t->reserved > t->peak_used) t->peak_used = t->nres + t->reserved;
}

#endif
