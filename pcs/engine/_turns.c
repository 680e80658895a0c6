/*
 * pcs.engine._turns: the next-turn search of pcs.engine.turns (decode blocks), streamed batch by batch.
 *
 * The compiled twin of pcs.engine.turns._walk (the Python reference, decode_blocks_python; tests/engine/test_turns.py
 * diffs the two on hypothesis traces and on the Mooncake trace). The rule (docs/semantics.md §9): request A
 * (prompt p, output o, f = p // bs full prompt blocks, f >= 1, its chain holding all f) waits under the key
 * (its id at position f - 1, f); the first later request B holding that id at that position with
 * p_B >= p + o is A's next turn, and A's decode blocks are B's ids at positions f .. min((p + o - 1) // bs,
 * B's cacheable blocks) - 1. B first resolves, then registers (a request is never its own next turn).
 *
 * State: an open-addressing table (linear probing, splitmix64, load <= 0.5, made large enough for a key per request
 * before each batch, or at the first batch for a size hint, py_new; huge pages from 4 MB on, as the heaps) from key
 * (id, f) to a min-heap of waiting requests ordered on (p + o, request index); a resolved request leaves its
 * heap, emptied heaps stay (as the reference's dict). A 2^22-bit filter of the keys' hashes (512 KB, set on
 * registering, never cleared) skips the table probe for the positions that hold no key (most of them). Before
 * it, an id above the largest a key holds (max_key: in a trace numbered in order of appearance, every id new to the
 * trace, most positions) is skipped by one compare, and a bitmap indexed by the id itself (ids_bits: bit id set when a key holds id; grown while ids stay dense,
 * at most 64 bits per key or 2^23 bits) skips most positions without hashing: block ids numbered in order of
 * appearance (Mooncake's) are read nearly in order, so its words stay in cache; an id past the bitmap after an
 * id did not fit (ids_over) takes the hashed filter. Output: per resolved request with ids, its index, its ids
 * kept in blocks that are never moved (tn_keep: no realloc copies them), laid out by request index once, by
 * py_result, as pcs.engine.turns.DecodeBlocks's arrays; pairs = resolved requests.
 *
 * Threads: walk releases the GIL over a batch (the caller's worker thread runs it); queue hands a batch to the
 * process's one walk thread (a pthread started at the first queue and kept, idle on a condition variable between
 * batches; it never takes the GIL) that walks every state's batches in the order queued, and drain waits for a
 * state's batches (WQ: one mutex over the FIFO and the states' queues; a fork's child starts afresh, tn_after_fork).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include "../_kernel_common.h"

typedef struct { int64_t s, a; } entry_t;                 /* s = p + o, a = request index */
typedef struct { entry_t *e; int64_t n, cap; entry_t one; } heap_t;   /* cap 0: its one entry is `one` (no malloc) */
typedef struct { uint64_t id; int64_t f; int64_t heap; } slot_t;   /* heap < 0: empty slot */
typedef struct { void *p; int64_t n, cap; } vec_t;
typedef struct { int64_t a, len; const uint64_t *ids; } res_t;   /* request a's decode-block ids (len > 0) */

#define RES_BLOCK_IDS ((int64_t)1 << 16)                     /* ids per block of resolved runs (a longer run: its own) */

#define FILTER_BITS 22                                       /* 2^22-bit filter: 512 KB */

typedef struct {
    slot_t *slots; int64_t mask, used;
    uint64_t *filter;                                        /* bit (hash >> (64 - FILTER_BITS)) set per key */
    heap_t *heaps; int64_t nheaps, capheaps;
    vec_t res;                                               /* res_t per resolution with ids, in resolution order */
    uint64_t **blocks; int64_t nblocks, capblocks;           /* the resolutions' ids: runs in blocks never moved */
    uint64_t *block_next; int64_t block_left, res_ids;       /* the last block's free room; ids in all runs */
    int64_t pairs, requests;                                 /* requests: walked so far (first + m of the last walk) */
    uint64_t max_key;                                        /* the largest id a key holds (0 before the first) */
    int any_negative;                                        /* a request with output < 0 registered */
    uint64_t *ids_bits; uint64_t ids_cap;                    /* bit id: some key holds id (ids < ids_cap) */
    int ids_over;                                            /* some key's id did not fit the bitmap */
    int64_t hint;                                            /* requests to reserve for at the first walk (py_new) */
    struct tn_queue *q;                                      /* batches queued for the walk thread (py_queue) */
} turns_t;

/* A batch queued for the walk thread: its buffers held (released by py_drain, with the GIL) until drained. */
typedef struct { int64_t first, bs, m; Py_buffer h, off, p, o; } tn_job_t;

/* A state's queued batches (py_queue / py_drain): jobs[0 .. n) in order, their buffers held until the drain; last:
 * the ticket of its last batch handed to the walk thread (walked once WQ.completed reaches it); failed: 1 a walk ran
 * out of memory (the state's later batches skipped), 2 dropped (the same). Guarded by WQ.mu. */
typedef struct tn_queue {
    tn_job_t *jobs; int64_t n, cap;
    uint64_t last;
    int failed;
} tn_queue_t;

/* The process's one walk thread (started at the first py_queue, never ended: it keeps its malloc arena, whose pages
 * the walks' tables then reuse -- a thread per call took a cold arena about one call in two, 250-2,700 page faults a
 * 10x walk) and its FIFO of (state, job) over every state; tickets count the batches handed over and walked. */
typedef struct { turns_t *t; int64_t i; } tn_entry_t;
static struct {
    pthread_mutex_t mu; pthread_cond_t go, done;
    tn_entry_t *fifo; int64_t head, tail, cap;
    uint64_t issued, completed;
    int started;
} WQ = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0, 0, 0};

static int vec_push(vec_t *v, const void *src, int64_t k, size_t item) {   /* k items of item bytes */
    if (v->n + k > v->cap) {
        int64_t cap = v->cap ? v->cap : 1024;
        while (cap < v->n + k) cap *= 2;
        void *p = realloc(v->p, (size_t)cap * item);
        if (!p) return -1;
        v->p = p; v->cap = cap;
    }
    memcpy((char *)v->p + v->n * item, src, (size_t)k * item);
    v->n += k;
    return 0;
}

/* Request a's decode-block ids (len > 0) kept: copied once into the current block of runs (a new block when they
 * do not fit: the runs are never moved, so no realloc copies them), its entry appended. -1 on no memory. */
static int tn_keep(turns_t *t, int64_t a, const uint64_t *ids, int64_t len) {
    if (len > t->block_left) {
        if (t->nblocks == t->capblocks) {
            int64_t cap = t->capblocks ? t->capblocks * 2 : 16;
            uint64_t **bl = (uint64_t **)realloc(t->blocks, (size_t)cap * sizeof(uint64_t *));
            if (!bl) return -1;
            t->blocks = bl; t->capblocks = cap;
        }
        int64_t size = len > RES_BLOCK_IDS ? len : RES_BLOCK_IDS;
        uint64_t *b = (uint64_t *)malloc((size_t)size * 8);
        if (!b) return -1;
        t->blocks[t->nblocks++] = b;
        t->block_next = b;
        t->block_left = size;
    }
    uint64_t *dst = t->block_next;
    memcpy(dst, ids, (size_t)len * 8);
    t->block_next += len;
    t->block_left -= len;
    t->res_ids += len;
    res_t r = {a, len, dst};
    return vec_push(&t->res, &r, 1, sizeof(res_t));
}

static void tn_free(turns_t *t) {
    if (!t) return;
    for (int64_t i = 0; i < t->nheaps; i++) free(t->heaps[i].e);
    free(t->heaps); free(t->slots); free(t->filter); free(t->ids_bits);
    for (int64_t i = 0; i < t->nblocks; i++) free(t->blocks[i]);
    free(t->blocks); free(t->res.p);
    if (t->q) { free(t->q->jobs); free(t->q); }
    free(t);
}

/* One mix64 per key: the position is spread by a multiply first (one mix64 of it per id was a third of the walk's
 * instructions); the hash places keys in the table and the filter only, never decides a result. */
static inline uint64_t turn_hash(uint64_t id, int64_t f) { return mix64(id ^ ((uint64_t)f * PCS_HMUL)); }

/* The slot of key (id, f) (hash: turn_hash(id, f)): its own, or the empty one where it would go. */
static slot_t *tn_slot(turns_t *t, uint64_t id, int64_t f, uint64_t hash) {
    uint64_t i = hash & (uint64_t)t->mask;
    for (;; i = (i + 1) & (uint64_t)t->mask) {
        slot_t *s = &t->slots[i];
        if (s->heap < 0 || (s->id == id && s->f == f)) return s;
    }
}

/* The key table moved to `size` slots (a power of two, larger than now), every key rehashed; -1 on no memory. */
static int tn_resize(turns_t *t, int64_t size) {
    int64_t old = t->mask + 1;
    slot_t *prev = t->slots;
    t->slots = (slot_t *)big_alloc((size_t)size * sizeof(slot_t), 0);   /* huge pages from 4 MB on */
    if (!t->slots) { t->slots = prev; return -1; }
    for (int64_t i = 0; i < size; i++) t->slots[i].heap = -1;
    t->mask = size - 1;
    for (int64_t i = 0; i < old; i++)
        if (prev[i].heap >= 0) *tn_slot(t, prev[i].id, prev[i].f, turn_hash(prev[i].id, prev[i].f)) = prev[i];
    free(prev);
    return 0;
}

static inline int entry_less(entry_t x, entry_t y) { return x.s < y.s || (x.s == y.s && x.a < y.a); }

/* A heap's entries: most keys have one waiting request at a time, held in the heap itself (no malloc each). */
static inline entry_t *heap_entries(heap_t *h) { return h->cap ? h->e : &h->one; }

static int heap_push(heap_t *h, entry_t x) {
    if (!h->cap && !h->n) { h->one = x; h->n = 1; return 0; }
    if (h->n == h->cap || !h->cap) {
        int64_t cap = h->cap ? h->cap * 2 : 4;
        entry_t *e = (entry_t *)realloc(h->e, (size_t)cap * sizeof(entry_t));
        if (!e) return -1;
        if (!h->cap && h->n) e[0] = h->one;
        h->e = e; h->cap = cap;
    }
    entry_t *he = h->e;
    int64_t i = h->n++;
    while (i > 0 && entry_less(x, he[(i - 1) / 2])) { he[i] = he[(i - 1) / 2]; i = (i - 1) / 2; }
    he[i] = x;
    return 0;
}

static entry_t heap_pop(heap_t *h) {
    entry_t *he = heap_entries(h);
    entry_t top = he[0], x = he[--h->n];
    int64_t i = 0, n = h->n;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && entry_less(he[c + 1], he[c])) c++;
        if (!entry_less(he[c], x)) break;
        he[i] = he[c]; i = c;
    }
    if (n) he[i] = x;
    return top;
}

/* Mark id in the id bitmap, growing it (zeroed) while ids stay dense (at most 64 bits per key, or 2^23) and no
 * id has overflowed; else note the overflow (ids past ids_cap then take the hashed filter). -1 on no memory. */
static int tn_mark_id(turns_t *t, uint64_t id) {
    if (id >= t->ids_cap && !t->ids_over) {
        uint64_t want = (id + 1) + (id + 1) / 2, most = 64 * (uint64_t)(t->used + 1);
        most = most > ((uint64_t)1 << 23) ? most : ((uint64_t)1 << 23);
        if (id < most) {
            uint64_t cap = ((want < most ? want : most) + 63) & ~(uint64_t)63;
            uint64_t *b = (uint64_t *)realloc(t->ids_bits, (size_t)(cap / 64) * 8);
            if (!b) return -1;
            memset(b + t->ids_cap / 64, 0, (size_t)((cap - t->ids_cap) / 64) * 8);
            t->ids_bits = b; t->ids_cap = cap;
        }
    }
    if (id < t->ids_cap) t->ids_bits[id >> 6] |= (uint64_t)1 << (id & 63);
    else t->ids_over = 1;
    return 0;
}

/* Whether some key may hold id: its bit below ids_cap; past it, only after an overflow (then the filter decides). */
static inline int tn_id_maybe(const turns_t *t, uint64_t id) {
    return id < t->ids_cap ? (int)(t->ids_bits[id >> 6] >> (id & 63) & 1) : t->ids_over;
}

/* Room for cap heaps (> capheaps): realloc'd below 4 MB (a large block is moved by remapping, not copied); from
 * 4 MB on a new array on huge pages (big_alloc: a page fault per 2 MB instead of per 4 KB) the heaps are copied
 * into. */
static int tn_heaps_room(turns_t *t, int64_t cap) {
    size_t bytes = (size_t)cap * sizeof(heap_t);
    heap_t *hs = (heap_t *)(bytes < ((size_t)4 << 20) ? realloc(t->heaps, bytes) : big_alloc(bytes, 0));
    if (!hs) return -1;
    if (bytes >= ((size_t)4 << 20)) {
        if (t->nheaps) memcpy(hs, t->heaps, (size_t)t->nheaps * sizeof(heap_t));
        free(t->heaps);
    }
    t->heaps = hs; t->capheaps = cap;
    return 0;
}

/* Room for `keys` keys before a batch: the table made large enough at once (load <= 0.5; one move instead of a
 * doubling each), and at the first walk with a size hint (py_new) the heaps reserved for it too. -1 on no memory. */
static int tn_reserve(turns_t *t, int64_t keys) {
    int64_t hint = t->hint, size = t->mask + 1;
    t->hint = 0;
    if (keys < hint) keys = hint;
    while (2 * keys > size) size *= 2;
    if (size > t->mask + 1 && tn_resize(t, size) < 0) return -1;
    return hint > t->capheaps ? tn_heaps_room(t, hint) : 0;
}

/* Request a waits under key (id, f) until a next turn holds p_B >= s. */
static int tn_register(turns_t *t, uint64_t id, int64_t f, entry_t x) {
    if (2 * (t->used + 1) > t->mask + 1 && tn_resize(t, 2 * (t->mask + 1)) < 0) return -1;
    if (tn_mark_id(t, id) < 0) return -1;
    if (id > t->max_key) t->max_key = id;
    uint64_t hash = turn_hash(id, f), bit = hash >> (64 - FILTER_BITS);
    t->filter[bit >> 6] |= (uint64_t)1 << (bit & 63);
    slot_t *s = tn_slot(t, id, f, hash);
    if (s->heap < 0) {
        if (t->nheaps == t->capheaps && tn_heaps_room(t, t->capheaps ? t->capheaps * 2 : 1024) < 0) return -1;
        t->heaps[t->nheaps] = (heap_t){NULL, 0, 0, {0, 0}};
        s->id = id; s->f = f; s->heap = t->nheaps++;
        t->used++;
    }
    return heap_push(&t->heaps[s->heap], x);
}

/* Request B's waiting requests on key (b[j], j + 1) whose p + o <= p_b resolve (hash: the key's turn_hash). */
/* a + b wrapped to 64 bits (GCC and Clang convert modulo 2^64), no signed overflow: the walk may run on a Parquet
 * read's pieces before their checks (pcs.engine.decoded._PiecesWalked), whose result is then dropped if a check
 * fails; checked values never wrap (tokens are checked non-negative and far below 2^62). */
static inline int64_t tn_wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

static int tn_resolve_at(turns_t *t, const uint64_t *b, int64_t j, uint64_t hash, int64_t p_b, int64_t cacheable,
                         int64_t bs) {
    slot_t *s = tn_slot(t, b[j], j + 1, hash);
    if (s->heap < 0) return 0;
    heap_t *h = &t->heaps[s->heap];
    while (h->n && heap_entries(h)[0].s <= p_b) {
        entry_t x = heap_pop(h);
        int64_t f = j + 1, end = tn_wrap_add(x.s, -1) / bs;
        if (end > cacheable) end = cacheable;
        t->pairs++;
        if (end > f && tn_keep(t, x.a, b + f, end - f) < 0) return -1;
    }
    return 0;
}

#define TN_AHEAD 32   /* positions hashed (and their filter words prefetched: 512 KB misses the L1 cache) at once */

/* Up to TN_AHEAD positions from j0 (< nh) whose id some key may hold (at most top, its bit set in the id bitmap, or
 * past the bitmap after an id did not fit it) into js, their count into *c; returns the position after the last one
 * looked at. The bitmap in a local (the search never writes it). fits: no key's id fell past the bitmap (a constant at each
 * call): every key's id is below ids_cap, so an id at most top needs no size check. */
static inline int64_t tn_candidates(const turns_t *t, const uint64_t *b, int64_t j0, int64_t nh, uint64_t top,
                                    int64_t *js, int64_t *c, const int fits) {
    const uint64_t *bits = t->ids_bits;
    int64_t j = j0, n = 0;
    for (; j < nh && n < TN_AHEAD; j++) {
        const uint64_t id = b[j];
        if (id > top) continue;   /* above every key's id (ids new to the trace when numbered in order of appearance) */
        if (fits ? !(bits[id >> 6] >> (id & 63) & 1) : !tn_id_maybe(t, id)) continue;   /* no key holds this id */
        js[n++] = j;
    }
    *c = n;
    return j;
}

/* Request B (ids b[0 .. nh), prompt p_b, cacheable blocks) resolves every request waiting on key (b[j], j + 1)
 * whose p + o <= p_b, position by position: the positions whose id a key may hold are gathered TN_AHEAD at a time
 * (tn_candidates), hashed with their filter words prefetched, then probed. */
static int tn_resolve(turns_t *t, const uint64_t *b, int64_t nh, int64_t p_b, int64_t cacheable, int64_t bs) {
    uint64_t hs[TN_AHEAD];
    int64_t js[TN_AHEAD];
    const uint64_t top = t->max_key;
    while (nh > 0 && b[nh - 1] > top) nh--;   /* the row's last ids above every key's (new to the trace): none match */
    const int fits = !t->ids_over;
    for (int64_t j = 0, c; j < nh;) {
        j = fits ? tn_candidates(t, b, j, nh, top, js, &c, 1) : tn_candidates(t, b, j, nh, top, js, &c, 0);
        for (int64_t i = 0; i < c; i++) {
            hs[i] = turn_hash(b[js[i]], js[i] + 1);
            __builtin_prefetch(&t->filter[(hs[i] >> (64 - FILTER_BITS)) >> 6], 0, 1);
        }
        for (int64_t i = 0; i < c; i++) {
            uint64_t bit = hs[i] >> (64 - FILTER_BITS);
            if (!(t->filter[bit >> 6] >> (bit & 63) & 1)) continue;     /* no key of this hash */
            if (tn_resolve_at(t, b, js[i], hs[i], p_b, cacheable, bs) < 0) return -1;
        }
    }
    return 0;
}

static void tn_drain(turns_t *t, int drop);

/* The state freed once the batches it still has queued are dropped (a walk under way waited for; buffers let go). */
static void tn_capsule_free(PyObject *cap) {
    turns_t *t = (turns_t *)PyCapsule_GetPointer(cap, "pcs.engine._turns.state");
    if (t) tn_drain(t, 1);
    tn_free(t);
}

#define TN_HINT_MAX ((int64_t)1 << 20)   /* the most requests a size hint reserves a key for (a footer's count) */

/* new(requests=0): the empty state; ``requests``: a size hint (the trace's requests, from a Parquet footer; at most
 * TN_HINT_MAX taken): the first walk (on the walk's thread, not the caller's) makes the key table for that many keys
 * and reserves their heaps at once (tn_reserve), instead of doubling from 1024 slots batch after batch. A hint only:
 * the table still grows past it, and a wrong count changes no result. */
static PyObject *py_new(PyObject *self, PyObject *args) {
    long long hint = 0;
    if (!PyArg_ParseTuple(args, "|L", &hint)) return NULL;
    turns_t *t = (turns_t *)calloc(1, sizeof(turns_t));
    if (!t) return PyErr_NoMemory();
    t->hint = hint < 0 ? 0 : hint > TN_HINT_MAX ? TN_HINT_MAX : hint;
    t->mask = 1023;
    t->slots = (slot_t *)malloc(1024 * sizeof(slot_t));
    t->filter = (uint64_t *)calloc((size_t)1 << (FILTER_BITS - 6), sizeof(uint64_t));
    t->q = (tn_queue_t *)calloc(1, sizeof(tn_queue_t));
    if (!t->slots || !t->filter || !t->q) {
        free(t->slots); free(t->filter); free(t->q); free(t);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < 1024; i++) t->slots[i].heap = -1;
    PyObject *cap = PyCapsule_New(t, "pcs.engine._turns.state", tn_capsule_free);
    if (!cap) tn_free(t);
    return cap;
}

static int tn_batch(turns_t *t, int64_t first, int64_t bs, const uint64_t *h, const int64_t *off, const int64_t *p,
                    const int64_t *o, int64_t m) {
    if (first + m > t->requests) t->requests = first + m;
    if (tn_reserve(t, t->used + m) < 0) return -1;   /* room for a key per request: grown while it is emptier */
    for (int64_t r = 0; r < m; r++) {
        int64_t nh = off[r + 1] - off[r], f = p[r] / bs, cacheable = f < nh ? f : nh;
        const uint64_t *b = h + off[r];
        /* A waiting request A (key position f_A - 1, f_A = p_A // bs) resolves on B only if p_A + o_A <= p_B, so
         * with o_A >= 0 only if f_A <= p_B // bs: B's positions from its cacheable blocks on match nothing */
        int64_t scan = t->any_negative ? nh : cacheable;
        if (t->used && tn_resolve(t, b, scan, p[r], cacheable, bs) < 0) return -1;
        if (f >= 1 && nh >= f) {
            t->any_negative |= o[r] < 0;
            if (tn_register(t, b[f - 1], f, (entry_t){tn_wrap_add(p[r], o[r]), first + r}) < 0) return -1;
        }
    }
    return 0;
}

/* Whether a batch's arrays agree (walk's and queue's check): block size >= 1, m >= 0 rows, prompt and output m int64
 * each, and the last offset within the hashes. */
static int tn_batch_ok(long long bs, int64_t m, const Py_buffer *h, const Py_buffer *off, const Py_buffer *p,
                       const Py_buffer *o) {
    return bs >= 1 && m >= 0 && p->len == m * 8 && o->len == m * 8 && ((const int64_t *)off->buf)[m] * 8 <= h->len;
}

/* walk(state, first, block_size, hashes uint64, offsets int64 (m + 1), prompt int64 (m), output int64 (m)).
 * The GIL is released over the walk (tn_batch calls no Python and allocates with malloc): the search may run on
 * a worker thread while the caller decodes the next batch (pcs.engine.turns.TurnWalk). One state is walked by one
 * thread at a time (the caller joins each walk before starting the next). */
static PyObject *py_walk(PyObject *self, PyObject *args) {
    PyObject *cap;
    long long first, bs;
    Py_buffer h, off, p, o;
    if (!PyArg_ParseTuple(args, "OLLy*y*y*y*", &cap, &first, &bs, &h, &off, &p, &o)) return NULL;
    turns_t *t = (turns_t *)PyCapsule_GetPointer(cap, "pcs.engine._turns.state");
    int64_t m = off.len / 8 - 1;
    PyObject *ret = NULL;
    if (!t) goto done;
    if (!tn_batch_ok(bs, m, &h, &off, &p, &o)) {
        PyErr_SetString(PyExc_ValueError, "walk: inconsistent batch arrays");
        goto done;
    }
    if (t->q->n) {
        PyErr_SetString(PyExc_RuntimeError, "walk: batches are queued (drain first)");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS       /* plain C over held buffers and malloc'd state: another thread may decode meanwhile */
    rc = tn_batch(t, first, bs, (const uint64_t *)h.buf, (const int64_t *)off.buf, (const int64_t *)p.buf,
                  (const int64_t *)o.buf, m);
    Py_END_ALLOW_THREADS
    if (rc < 0) { PyErr_NoMemory(); goto done; }
    ret = Py_None; Py_INCREF(ret);
done:
    PCS_RELEASE(&h, &off, &p, &o);
    return ret;
}

/* The walk thread: the FIFO's batches walked in order (tn_batch, no GIL, WQ.mu released over each walk), then
 * idle on WQ.go; a batch of a state that failed or was dropped is skipped. Never ends (no Python object touched). */
static void *tn_worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "pcs-turns");
    pthread_mutex_lock(&WQ.mu);
    for (;;) {
        while (WQ.head == WQ.tail) pthread_cond_wait(&WQ.go, &WQ.mu);
        tn_entry_t e = WQ.fifo[WQ.head++];
        if (WQ.head == WQ.tail) WQ.head = WQ.tail = 0;
        tn_queue_t *q = e.t->q;
        tn_job_t j = q->jobs[e.i];   /* a copy: py_queue may move the array while this walks */
        int skip = q->failed;
        pthread_mutex_unlock(&WQ.mu);
        int rc = skip ? 0 : tn_batch(e.t, j.first, j.bs, (const uint64_t *)j.h.buf, (const int64_t *)j.off.buf,
                                     (const int64_t *)j.p.buf, (const int64_t *)j.o.buf, j.m);
        pthread_mutex_lock(&WQ.mu);
        if (rc < 0) q->failed |= 1;
        WQ.completed++;
        pthread_cond_broadcast(&WQ.done);
    }
    return NULL;
}

/* In a child made by fork the walk thread is not there: none started, nothing queued (a batch queued before the fork
 * counts as walked, so no drain waits for it). */
static void tn_after_fork(void) {
    pthread_mutex_init(&WQ.mu, NULL);
    pthread_cond_init(&WQ.go, NULL);
    pthread_cond_init(&WQ.done, NULL);
    WQ.head = WQ.tail = 0;
    WQ.completed = WQ.issued;
    WQ.started = 0;
}

/* The walk thread started (WQ.mu held); 0 when the system cannot start one. */
static int tn_start_worker(void) {
    static int forks;
    if (WQ.started) return 1;
    if (!forks) forks = pthread_atfork(NULL, NULL, tn_after_fork) == 0 ? 1 : -1;
    pthread_attr_t at;
    pthread_t th;
    if (pthread_attr_init(&at)) return 0;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, (size_t)256 << 10);
    WQ.started = pthread_create(&th, &at, tn_worker, NULL) == 0;
    pthread_attr_destroy(&at);
    return WQ.started;
}

/* Every batch the state queued walked (drop: the ones not begun skipped), then their buffers let go (the GIL held:
 * released while waiting when gil_released, the waiter's case; the walk thread never takes it) and the state's queue
 * emptied for reuse. Returns failed (1: a walk ran out of memory). */
static int tn_drain_q(turns_t *t, int drop, int gil_released) {
    tn_queue_t *q = t->q;
    if (!q || !q->n) return 0;
    PyThreadState *ts = gil_released ? PyEval_SaveThread() : NULL;
    pthread_mutex_lock(&WQ.mu);
    if (drop) q->failed |= 2;
    while (WQ.completed < q->last) pthread_cond_wait(&WQ.done, &WQ.mu);
    int failed = q->failed & 1;
    pthread_mutex_unlock(&WQ.mu);
    if (ts) PyEval_RestoreThread(ts);
    for (int64_t i = 0; i < q->n; i++) PCS_RELEASE(&q->jobs[i].h, &q->jobs[i].off, &q->jobs[i].p, &q->jobs[i].o);
    q->n = 0; q->failed = 0;
    return failed;
}

static void tn_drain(turns_t *t, int drop) { (void)tn_drain_q(t, drop, 0); }

/* Room for one more job in the state's queue and one more entry in the FIFO (WQ.mu held); 0 on no memory. */
static int tn_queue_room(tn_queue_t *q) {
    if (q->n == q->cap) {
        int64_t cap = q->cap ? 2 * q->cap : 16;
        tn_job_t *js = (tn_job_t *)realloc(q->jobs, (size_t)cap * sizeof(tn_job_t));
        if (!js) return 0;
        q->jobs = js; q->cap = cap;
    }
    if (WQ.tail == WQ.cap) {
        int64_t cap = WQ.cap ? 2 * WQ.cap : 64;
        tn_entry_t *f = (tn_entry_t *)realloc(WQ.fifo, (size_t)cap * sizeof(tn_entry_t));
        if (!f) return 0;
        WQ.fifo = f; WQ.cap = cap;
    }
    return 1;
}

/* queue(state, first, block_size, hashes, offsets, prompt, output): walk's arguments, the batch walked on the
 * process's walk thread (a pthread that never takes the GIL, started at the first batch) after every batch queued
 * before it, while the caller goes on; its buffers are held until drain. No Python thread is woken to begin or to
 * end a walk, and none waits for the GIL between two walks (a Python worker did, between each walk's end and the
 * next: docs/performance.md, "The 1x JSONL decode pass's fill and drain" (2026-12-05)). When no thread can be
 * started the batch is walked here (the GIL released). MemoryError: an earlier walk of this state ran out of
 * memory, or no room to queue. */
static PyObject *py_queue(PyObject *self, PyObject *args) {
    PyObject *cap;
    long long first, bs;
    tn_job_t j;
    if (!PyArg_ParseTuple(args, "OLLy*y*y*y*", &cap, &first, &bs, &j.h, &j.off, &j.p, &j.o)) return NULL;
    turns_t *t = (turns_t *)PyCapsule_GetPointer(cap, "pcs.engine._turns.state");
    j.first = first; j.bs = bs; j.m = j.off.len / 8 - 1;
    const char *why = NULL;
    if (!t) why = "";
    else if (!tn_batch_ok(bs, j.m, &j.h, &j.off, &j.p, &j.o))
        why = "queue: inconsistent batch arrays";
    if (why) {
        if (*why) PyErr_SetString(PyExc_ValueError, why);
        PCS_RELEASE(&j.h, &j.off, &j.p, &j.o);
        return NULL;
    }
    tn_queue_t *q = t->q;
    pthread_mutex_lock(&WQ.mu);
    if ((q->failed & 1) || !tn_queue_room(q)) {
        pthread_mutex_unlock(&WQ.mu);
        PCS_RELEASE(&j.h, &j.off, &j.p, &j.o);
        return PyErr_NoMemory();
    }
    q->jobs[q->n++] = j;
    int threaded = tn_start_worker();
    if (threaded) {
        WQ.fifo[WQ.tail++] = (tn_entry_t){t, q->n - 1};
        q->last = ++WQ.issued;
        pthread_cond_signal(&WQ.go);
    }
    pthread_mutex_unlock(&WQ.mu);
    if (!threaded) {   /* no thread: walked here (none was ever started, so nothing is queued before it) */
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = tn_batch(t, j.first, j.bs, (const uint64_t *)j.h.buf, (const int64_t *)j.off.buf,
                      (const int64_t *)j.p.buf, (const int64_t *)j.o.buf, j.m);
        Py_END_ALLOW_THREADS
        if (rc < 0) {
            q->failed |= 1;
            return PyErr_NoMemory();
        }
    }
    Py_RETURN_NONE;
}

/* drain(state, drop=False): wait until every batch the state queued is walked (drop: the ones not begun skipped);
 * their buffers let go. MemoryError (unless drop): one of its walks ran out of memory. */
static PyObject *py_drain(PyObject *self, PyObject *args) {
    PyObject *cap;
    int drop = 0;
    if (!PyArg_ParseTuple(args, "O|p", &cap, &drop)) return NULL;
    turns_t *t = (turns_t *)PyCapsule_GetPointer(cap, "pcs.engine._turns.state");
    if (!t) return NULL;
    if (tn_drain_q(t, drop, 1) && !drop) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* result(state) -> (index bytes int64 (k,), starts bytes int64 (k + 1,), ids bytes uint64, pairs): the requests that
 * got decode-block ids, ascending (each resolves once), where each one's ids begin in ids (starts[k] = all of them),
 * the ids in that order -- pcs.engine.turns.DecodeBlocks's arrays -- made by a counting pass over the requests walked
 * (a slot per request, 8 bytes each, freed on return) and written straight into the bytes (no sort, no gather). */
static PyObject *py_result(PyObject *self, PyObject *args) {
    turns_t *t = (turns_t *)pcs_state_arg(args, "pcs.engine._turns.state");
    if (!t) return NULL;
    if (t->q->n) {
        PyErr_SetString(PyExc_RuntimeError, "result: batches are queued (drain first)");
        return NULL;
    }
    const res_t *res = (const res_t *)t->res.p;
    int64_t k = t->res.n, n = t->requests;
    int64_t *slot = (int64_t *)calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));   /* 1 + its entry, 0: none */
    if (!slot) return PyErr_NoMemory();
    for (int64_t i = 0; i < k; i++) slot[res[i].a] = i + 1;
    PyObject *index = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(k * 8));
    PyObject *starts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((k + 1) * 8));
    PyObject *ids = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(t->res_ids * 8));
    PyObject *ret = NULL;
    if (index && starts && ids) {
        int64_t *ix = (int64_t *)PyBytes_AS_STRING(index), *st = (int64_t *)PyBytes_AS_STRING(starts), j = 0, at = 0;
        uint64_t *out = (uint64_t *)PyBytes_AS_STRING(ids);
        for (int64_t a = 0; a < n; a++) {
            if (!slot[a]) continue;
            const res_t *r = &res[slot[a] - 1];
            ix[j] = a;
            st[j++] = at;
            memcpy(out + at, r->ids, (size_t)r->len * 8);
            at += r->len;
        }
        st[j] = at;
        ret = Py_BuildValue("NNNL", index, starts, ids, (long long)t->pairs);
        index = starts = ids = NULL;
    }
    free(slot);
    Py_XDECREF(index); Py_XDECREF(starts); Py_XDECREF(ids);
    return ret;
}

static PyMethodDef methods[] = {
    {"new", py_new, METH_VARARGS, "new(requests=0) -> the empty state of a next-turn search (requests: a size hint)"},
    {"walk", py_walk, METH_VARARGS, "walk(state, first, block_size, hashes, offsets, prompt, output): one batch"},
    {"queue", py_queue, METH_VARARGS, "queue(state, first, block_size, hashes, offsets, prompt, output): one batch "
     "walked on the process's walk thread (no GIL) after those queued before"},
    {"drain", py_drain, METH_VARARGS, "drain(state, drop=False): every batch the state queued walked (drop: skipped)"},
    {"result", py_result, METH_VARARGS, "result(state) -> (index, starts, ids, pairs): the resolutions so far, by request"},
    {NULL, NULL, 0, NULL}};

PCS_KERNEL_MODULE(_turns, "pcs.engine._turns", "The next-turn search of pcs.engine.turns in C.", methods)
