/*
 * pcs._stackdist: compiled kernel for prefix-aware LRU stack depths.
 *
 * stack_depths(keys, req_offsets, out, lead=False) -> int (distinct keys).
 *   keys:        C-contiguous uint64 buffer, shape (N,): the cacheable block ids
 *                of all requests, flattened in request order, head to tail.
 *   req_offsets: C-contiguous int64 buffer, shape (R + 1,): request r owns
 *                keys[req_offsets[r]:req_offsets[r + 1]]; req_offsets[0] == 0,
 *                req_offsets[R] == N, non-decreasing.
 *   out:         writable C-contiguous int64 buffer, shape (N,): receives, for
 *                every access, the LRU stack depth of its key at the START of its
 *                request (number of distinct keys used more recently than the
 *                key's last use), or -1 when the key was never used before;
 *                with lead=True the running max along the request instead,
 *                -1 from the first never-used key on (the lookup stops there).
 * After computing a request's depths the request's keys are stamped tail
 * first, head last (the head becomes the most recently used), the order in
 * which vLLM frees a finished request's blocks (kv_cache_manager/block_pool).
 *
 * Algorithm (Bennett & Kruskal 1975, "LRU stack processing"): every access
 * gets a logical time; a key's depth is the number of *live* times after its
 * last time (a time is live while it is still the last use of its key). We
 * count the dead times ("holes") instead, so a first use costs no tree work:
 *   depth = (t - 1 - last) - (holes_total - holes_in[0, last])
 * with one bit per time (set = hole) and a Fenwick tree (Fenwick 1994) of
 * hole counts per 64-time word: holes_in[0, last] = tree prefix of the words
 * before last's + popcount of its word below last (the tree, N / 16 bytes,
 * stays in cache). Keys are mapped to their last time by an open-addressing
 * hash table (linear probing, splitmix64 mixer, >= N slots, load <= 0.7,
 * grown by doubling); the slots of request r + 2 are prefetched while
 * request r is processed; tables of >= 4 MB ask for transparent huge pages.
 * Cost O(N log N) time; memory 16 B x 2^ceil(log2 N) table + N / 8 B of bits
 * + N / 16 B of tree; the GIL is released while it runs.
 *
 * histograms(lead, weights, hist_w, hist_b): the weighted and plain
 * histograms of lead depths, one pass.
 *
 * Gives exactly the depths of pcs.replay.stackdist._stack_depths_python (a
 * plain Fenwick tree over times; differential tests in tests/test_stackdist.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct {
    uint64_t key;
    int64_t last; /* -2: empty slot; -1: inserted in this request, no time yet */
} slot_t;

#define EMPTY (-2)

static inline uint64_t mix64(uint64_t x) {
    /* splitmix64 finalizer (Steele, Lea & Flood 2014). */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Memory of >= 4 MB is 2 MB aligned and advised to use transparent huge
 * pages (fewer page faults and TLB misses on randomly probed tables); zeroed
 * when `zero`. Freed with free(). */
static void *big_alloc(size_t bytes, int zero) {
    void *p = NULL;
    if (bytes < ((size_t)4 << 20)) return zero ? calloc(1, bytes) : malloc(bytes);
    if (posix_memalign(&p, (size_t)2 << 20, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    if (zero) memset(p, 0, bytes);
    return p;
}

typedef struct {
    slot_t *slots;
    uint64_t mask;
    int64_t count;
} table_t;

static int table_init(table_t *t, uint64_t cap) {
    t->slots = (slot_t *)big_alloc(cap * sizeof(slot_t), 0);
    if (!t->slots) return -1;
    for (uint64_t i = 0; i < cap; i++) t->slots[i].last = EMPTY;
    t->mask = cap - 1;
    t->count = 0;
    return 0;
}

static int table_grow(table_t *t) {
    table_t nt;
    uint64_t cap = (t->mask + 1) * 2;
    if (table_init(&nt, cap) != 0) return -1;
    for (uint64_t i = 0; i <= t->mask; i++) {
        slot_t s = t->slots[i];
        if (s.last == EMPTY) continue;
        uint64_t h = mix64(s.key) & nt.mask;
        while (nt.slots[h].last != EMPTY) h = (h + 1) & nt.mask;
        nt.slots[h] = s;
    }
    nt.count = t->count;
    free(t->slots);
    *t = nt;
    return 0;
}

/* Slot of key, inserting it (last = -1) when absent. */
static inline uint64_t table_find(table_t *t, uint64_t key, uint64_t h) {
    for (;;) {
        slot_t *s = &t->slots[h];
        if (s->last == EMPTY) {
            s->key = key;
            s->last = -1;
            t->count++;
            return h;
        }
        if (s->key == key) return h;
        h = (h + 1) & t->mask;
    }
}

static int run(const uint64_t *keys, int64_t n, const int64_t *offs, int64_t num_req,
               int64_t *out, int lead, int64_t *num_distinct) {
    int64_t max_len = 0;
    for (int64_t r = 0; r < num_req; r++) {
        int64_t len = offs[r + 1] - offs[r];
        if (len < 0 || offs[r] < 0 || offs[r + 1] > n) return -2;
        if (len > max_len) max_len = len;
    }
    /* Start at >= N slots (distinct <= N) and keep the load <= 0.7, so
     * chained traces (distinct ~ 0.6 N) rarely grow; a growth only wastes
     * the prefetches already issued. */
    uint64_t cap0 = 4096;
    while (cap0 < (uint64_t)n) cap0 <<= 1;
    table_t tab;
    if (table_init(&tab, cap0) != 0) return -1;
    /* holes: one bit per time; fen: Fenwick tree of hole counts per 64-time word
     * (N / 64 entries: small enough to stay in cache). */
    const int64_t words = (n >> 6) + 1;
    uint64_t *holes = (uint64_t *)big_alloc((size_t)words * 8, 1);
    int32_t *fen = (int32_t *)big_alloc(((size_t)words + 1) * sizeof(int32_t), 1);
    uint64_t *tmp = (uint64_t *)malloc(((size_t)max_len + 1) * sizeof(uint64_t));
    if (!fen || !tmp || !holes) {
        free(tab.slots); free(fen); free(tmp); free(holes);
        return -1;
    }
    int64_t t = 0, holes_total = 0;
    /* Software pipeline: the slots of request r + 2 are prefetched while
     * request r is processed. */
    for (int64_t i = 0; i < offs[num_req > 1 ? 2 : num_req]; i++)
        __builtin_prefetch(&tab.slots[mix64(keys[i]) & tab.mask], 1, 1);
    for (int64_t r = 0; r < num_req; r++) {
        const int64_t a = offs[r], b = offs[r + 1];
        while ((uint64_t)(tab.count + (b - a)) * 10 > (tab.mask + 1) * 7) {
            if (table_grow(&tab) != 0) {
                free(tab.slots); free(fen); free(tmp); free(holes);
                return -1;
            }
        }
        int64_t run_max = 0; /* lead: running max of depths; -1 once a block is cold */
        for (int64_t i = a; i < b; i++) {
            uint64_t s = table_find(&tab, keys[i], mix64(keys[i]) & tab.mask);
            tmp[i - a] = s;
            int64_t last = tab.slots[s].last, d = -1;
            if (last >= 0) {
                int64_t before, w = last >> 6; /* holes at times 0..last */
                uint64_t below = (last & 63) == 63 ? ~0ULL : ((1ULL << ((last & 63) + 1)) - 1);
                before = __builtin_popcountll(holes[w] & below);
                for (int64_t j = w; j > 0; j -= j & (-j)) before += fen[j];
                d = (t - 1 - last) - (holes_total - before);
            }
            if (lead) {
                run_max = (d < 0 || run_max < 0) ? -1 : (d > run_max ? d : run_max);
                d = run_max;
            }
            out[i] = d;
        }
        if (r + 2 < num_req)
            for (int64_t i = offs[r + 2]; i < offs[r + 3]; i++)
                __builtin_prefetch(&tab.slots[mix64(keys[i]) & tab.mask], 1, 1);
        for (int64_t i = b - 1; i >= a; i--) {
            slot_t *s = &tab.slots[tmp[i - a]];
            if (s->last >= 0) {
                holes[s->last >> 6] |= 1ULL << (s->last & 63);
                for (int64_t j = (s->last >> 6) + 1; j <= words; j += j & (-j)) fen[j] += 1;
                holes_total++;
            }
            s->last = t++;
        }
    }
    *num_distinct = tab.count;
    free(tab.slots); free(fen); free(tmp); free(holes);
    return 0;
}

static PyObject *py_stack_depths(PyObject *self, PyObject *args) {
    Py_buffer keys, offs, out;
    int lead = 0;
    if (!PyArg_ParseTuple(args, "y*y*w*|p", &keys, &offs, &out, &lead)) return NULL;
    PyObject *result = NULL;
    if (keys.len % 8 != 0 || keys.len / 8 >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "keys must be a uint64 buffer of fewer than 2**31 items");
        goto done;
    }
    int64_t n = keys.len / 8;
    int64_t num_req = offs.len / 8 - 1;
    if (offs.len % 8 != 0 || num_req < 0 || out.len != keys.len) {
        PyErr_SetString(PyExc_ValueError, "req_offsets must be int64 (R+1,), out int64 like keys");
        goto done;
    }
    const int64_t *o = (const int64_t *)offs.buf;
    if (o[0] != 0 || o[num_req] != n) {
        PyErr_SetString(PyExc_ValueError, "req_offsets must start at 0 and end at len(keys)");
        goto done;
    }
    int64_t distinct = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = run((const uint64_t *)keys.buf, n, o, num_req, (int64_t *)out.buf, lead, &distinct);
    Py_END_ALLOW_THREADS
    if (rc == -1) {
        PyErr_NoMemory();
    } else if (rc == -2) {
        PyErr_SetString(PyExc_ValueError, "req_offsets must be non-decreasing within [0, len(keys)]");
    } else {
        result = PyLong_FromLongLong(distinct);
    }
done:
    PyBuffer_Release(&keys);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&out);
    return result;
}

static PyObject *py_histograms(PyObject *self, PyObject *args) {
    Py_buffer lead, w, hw, hb;
    if (!PyArg_ParseTuple(args, "y*y*w*w*", &lead, &w, &hw, &hb)) return NULL;
    PyObject *result = NULL;
    int64_t n = lead.len / 8, k = hw.len / 8;
    if (lead.len % 8 || w.len != lead.len || hw.len % 8 || hb.len != hw.len) {
        PyErr_SetString(PyExc_ValueError, "lead, weights: int64 (N,); hist_w, hist_b: int64 (K,)");
        goto done;
    }
    const int64_t *l = (const int64_t *)lead.buf, *wt = (const int64_t *)w.buf;
    int64_t *ow = (int64_t *)hw.buf, *ob = (int64_t *)hb.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(ow, 0, (size_t)k * 8);
    memset(ob, 0, (size_t)k * 8);
    for (int64_t i = 0; i < n; i++) {
        int64_t d = l[i];
        if (d < 0) continue;
        if (d >= k) { bad = 1; break; }
        ow[d] += wt[i];
        ob[d] += 1;
    }
    Py_END_ALLOW_THREADS
    if (bad) PyErr_SetString(PyExc_ValueError, "a lead depth is >= len(hist)");
    else {
        Py_INCREF(Py_None);
        result = Py_None;
    }
done:
    PyBuffer_Release(&lead);
    PyBuffer_Release(&w);
    PyBuffer_Release(&hw);
    PyBuffer_Release(&hb);
    return result;
}

/* ---------------------------------------------------------------------------
 * One-capacity sequential LRU scan, streamed batch by batch (lru_new / lru_feed).
 *
 * Plain LRU of C unit slots on the stream "per request: look up its first n ids
 * head to tail, then stamp them tail to head" (brief, "Shared replay semantics",
 * rule 4), in O(1) per access: every stamp gets a logical time t; a time is
 * live while it is its key's last stamp; the cache is the C most recent live
 * times, i.e. the live times >= a pointer p, so a key is resident iff
 * last >= p. A stamp that makes more than C live times >= p advances p past
 * the oldest live time (the LRU victim). Live times are bits of a sliding
 * bitmap (1 bit per stamp, the part below p dropped); keys live in an
 * open-addressing table (16 B slots: key, last stamp, first request; linear
 * probing, splitmix64, load <= 0.8, grown by doubling). Per request r it
 * writes:
 *   lead[r]  = leading ids (of the first n) resident at capacity C;
 *   seen[r]  = leading ids (of the first n) stamped by an earlier request
 *              (the single-sequence, infinite-cache walk, pcs.blocks);
 *   ideal[r] = leading ids (of ALL the request's ids) looked up by an earlier
 *              request (the ideal walk: every id cacheable).
 * With check=1 it returns 1 when an id repeats among a request's first n, 2
 * when a resident id follows a non-resident one (not a prefix chain): the
 * fast path then does not apply. Mirrors
 * pcs.replay.fastpath._lru_feed_python (differential tests in
 * tests/test_replay_scan.py).
 * ------------------------------------------------------------------------- */
typedef struct {
    uint64_t key;
    int32_t last;  /* last stamp; -1 never stamped; <= -2: visited in this request, old = -3 - last */
    int32_t first; /* 1 + the request that first looked it up; 0: empty slot (calloc) */
} lslot_t;

typedef struct {
    lslot_t *slots;
    uint64_t mask;
    int64_t count;
    int64_t capacity;  /* C */
    int64_t resident;  /* live times >= p */
    int64_t t, p;      /* next stamp time, LRU pointer */
    int64_t base;      /* time of bit 0 of live (multiple of 64) */
    uint64_t *live;
    int64_t live_words;
    int64_t req;       /* requests fed so far */
    uint64_t *tmp;
    int64_t tmp_len;
} lru_t;

static void lru_free(lru_t *s) {
    if (!s) return;
    free(s->slots); free(s->live); free(s->tmp); free(s);
}

static void lru_capsule_free(PyObject *cap) {
    lru_free((lru_t *)PyCapsule_GetPointer(cap, "pcs._stackdist.lru"));
}

static int lru_table_alloc(lru_t *s, uint64_t cap) {
    lslot_t *sl = (lslot_t *)big_alloc(cap * sizeof(lslot_t), 1);
    if (!sl) return -1;
    lslot_t *old = s->slots;
    uint64_t old_mask = s->mask;
    s->slots = sl;
    s->mask = cap - 1;
    if (old) {
        for (uint64_t i = 0; i <= old_mask; i++) {
            if (!old[i].first) continue;
            uint64_t h = mix64(old[i].key) & s->mask;
            while (sl[h].first) h = (h + 1) & s->mask;
            sl[h] = old[i];
        }
        free(old);
    }
    return 0;
}

static inline uint64_t lru_find(lru_t *s, uint64_t key, int32_t req) {
    uint64_t h = mix64(key) & s->mask;
    for (;;) {
        lslot_t *x = &s->slots[h];
        if (!x->first) {
            x->key = key; x->last = -1; x->first = req + 1;
            s->count++;
            return h;
        }
        if (x->key == key) return h;
        h = (h + 1) & s->mask;
    }
}

/* Make room for the bit of time s->t; returns -1 on no memory. */
static int lru_live_room(lru_t *s) {
    int64_t word = (s->t - s->base) >> 6;
    if (word < s->live_words) return 0;
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

static int lru_run(lru_t *s, const uint64_t *keys, const int64_t *offs, const int64_t *n, int64_t num_req,
                   int64_t *lead, int64_t *seen, int64_t *ideal, int check) {
    for (int64_t r = 0; r < num_req; r++) {
        int64_t len = offs[r + 1] - offs[r];
        if (len < 0 || n[r] < 0 || n[r] > len) return -2;
        if (len > s->tmp_len) {
            uint64_t *nt = (uint64_t *)realloc(s->tmp, (size_t)len * 8);
            if (!nt) return -1;
            s->tmp = nt;
            s->tmp_len = len;
        }
    }
    if (s->req + num_req >= INT32_MAX || s->t + (offs[num_req] - offs[0]) >= INT32_MAX) return 3;
    for (int64_t i = offs[0]; i < offs[num_req > 1 ? 2 : num_req]; i++)
        __builtin_prefetch(&s->slots[mix64(keys[i]) & s->mask], 1, 1);
    for (int64_t r = 0; r < num_req; r++) {
        const int64_t a = offs[r], b = offs[r + 1], m = a + n[r];
        const int32_t rq = (int32_t)s->req;
        while ((uint64_t)(s->count + (b - a)) * 2 > (s->mask + 1))
            if (lru_table_alloc(s, (s->mask + 1) * 2) != 0) return -1;
        int run_res = 1, run_seen = 1, run_ideal = 1;
        int64_t k_res = 0, k_seen = 0, k_ideal = 0;
        for (int64_t i = a; i < b; i++) {
            uint64_t h = lru_find(s, keys[i], rq);
            lslot_t *x = &s->slots[h];
            run_ideal &= x->first <= rq;
            k_ideal += run_ideal;
            if (i >= m) continue;
            s->tmp[i - a] = h;
            int32_t enc = x->last;
            int64_t old = enc;
            if (enc <= -2) { /* looked up earlier in this request */
                if (check) return 1;
                old = -3 - (int64_t)enc;
            } else {
                x->last = (int32_t)(-3 - (int64_t)enc);
            }
            int res = old >= s->p;
            if (check && res && !run_res) return 2;
            run_res &= res;
            k_res += run_res;
            run_seen &= old >= 0;
            k_seen += run_seen;
        }
        lead[r] = k_res; seen[r] = k_seen; ideal[r] = k_ideal;
        if (r + 2 < num_req)
            for (int64_t i = offs[r + 2]; i < offs[r + 3]; i++)
                __builtin_prefetch(&s->slots[mix64(keys[i]) & s->mask], 1, 1);
        for (int64_t i = m - 1; i >= a; i--) {
            lslot_t *x = &s->slots[s->tmp[i - a]];
            int64_t old = x->last <= -2 ? -3 - (int64_t)x->last : x->last;
            if (old >= s->p) { /* resident: its old time dies, no slot added */
                int64_t j = old - s->base;
                s->live[j >> 6] &= ~(1ULL << (j & 63));
            } else {
                s->resident++;
            }
            if (lru_live_room(s) != 0) return -1;
            int64_t j = s->t - s->base;
            s->live[j >> 6] |= 1ULL << (j & 63);
            x->last = (int32_t)s->t++;
            while (s->resident > s->capacity) lru_evict(s);
        }
        s->req++;
    }
    return 0;
}

static PyObject *py_lru_new(PyObject *self, PyObject *args) {
    long long capacity, expected = 0;
    if (!PyArg_ParseTuple(args, "L|L", &capacity, &expected)) return NULL;
    if (capacity < 0) {
        PyErr_SetString(PyExc_ValueError, "capacity must be >= 0");
        return NULL;
    }
    lru_t *s = (lru_t *)calloc(1, sizeof(lru_t));
    uint64_t slots = 4096;
    while (expected > 0 && (uint64_t)expected * 4 > slots * 3) slots <<= 1;
    if (!s || lru_table_alloc(s, slots) != 0 || !(s->live = (uint64_t *)calloc(1024, 8))) {
        lru_free(s);
        return PyErr_NoMemory();
    }
    s->live_words = 1024;
    s->capacity = capacity;
    PyObject *cap = PyCapsule_New(s, "pcs._stackdist.lru", lru_capsule_free);
    if (!cap) lru_free(s);
    return cap;
}

static PyObject *py_lru_feed(PyObject *self, PyObject *args) {
    PyObject *cap;
    Py_buffer keys, offs, n, lead, seen, ideal;
    int check = 1;
    if (!PyArg_ParseTuple(args, "Oy*y*y*w*w*w*|p", &cap, &keys, &offs, &n, &lead, &seen, &ideal, &check))
        return NULL;
    PyObject *result = NULL;
    lru_t *s = (lru_t *)PyCapsule_GetPointer(cap, "pcs._stackdist.lru");
    if (!s) goto done;
    int64_t num_req = offs.len / 8 - 1;
    if (keys.len % 8 || offs.len % 8 || num_req < 0 || n.len != num_req * 8 || lead.len != n.len ||
        seen.len != n.len || ideal.len != n.len) {
        PyErr_SetString(PyExc_ValueError, "keys uint64 (M,), offsets int64 (R+1,), n and outputs int64 (R,)");
        goto done;
    }
    const int64_t *o = (const int64_t *)offs.buf;
    if (o[0] != 0 || o[num_req] != keys.len / 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must start at 0 and end at len(keys)");
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = lru_run(s, (const uint64_t *)keys.buf, o, (const int64_t *)n.buf, num_req, (int64_t *)lead.buf,
                 (int64_t *)seen.buf, (int64_t *)ideal.buf, check);
    Py_END_ALLOW_THREADS
    if (rc == -1) PyErr_NoMemory();
    else if (rc == -2) PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing and 0 <= n <= ids");
    else result = PyLong_FromLong(rc);
done:
    PyBuffer_Release(&keys); PyBuffer_Release(&offs); PyBuffer_Release(&n);
    PyBuffer_Release(&lead); PyBuffer_Release(&seen); PyBuffer_Release(&ideal);
    return result;
}

static PyObject *py_lru_stats(PyObject *self, PyObject *args) {
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    lru_t *s = (lru_t *)PyCapsule_GetPointer(cap, "pcs._stackdist.lru");
    if (!s) return NULL;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L}", "distinct", (long long)s->count, "resident",
                         (long long)s->resident, "stamps", (long long)s->t, "table_bytes",
                         (long long)((s->mask + 1) * sizeof(lslot_t)), "bitmap_bytes", (long long)s->live_words * 8);
}

static PyMethodDef methods[] = {
    {"lru_new", py_lru_new, METH_VARARGS,
     "lru_new(capacity_blocks: int) -> state capsule of a one-capacity sequential LRU scan."},
    {"lru_feed", py_lru_feed, METH_VARARGS,
     "lru_feed(state, keys: uint64 (M,), offsets: int64 (R+1,), n: int64 (R,), lead, seen, ideal: "
     "writable int64 (R,), check=True) -> 0, or 1 (an id repeats among a request's first n) / "
     "2 (a resident id after a non-resident one) when check, 3 (over 2**31 stamps or requests)."},
    {"lru_stats", py_lru_stats, METH_VARARGS,
     "lru_stats(state) -> dict(distinct, resident, stamps, table_bytes, bitmap_bytes)."},

    {"stack_depths", py_stack_depths, METH_VARARGS,
     "stack_depths(keys: uint64 buffer (N,), req_offsets: int64 buffer (R+1,), "
     "out: writable int64 buffer (N,)) -> number of distinct keys.\n\n"
     "Writes each access's LRU stack depth at the start of its request (-1 if never used "
     "before); a request's keys are then stamped tail first, head last. With lead=True "
     "writes the running max along each request instead (-1 from the first cold block on)."},
    {"histograms", py_histograms, METH_VARARGS,
     "histograms(lead: int64 (N,), weights: int64 (N,), hist_w: int64 (K,), hist_b: int64 (K,)) -> None.\n\n"
     "hist_w[d] = sum of weights with lead == d, hist_b[d] = their count (lead < 0 skipped)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pcs._stackdist",
    "Compiled kernel for prefix-aware LRU stack depths (see pcs.replay.stackdist).", -1, methods,
};

PyMODINIT_FUNC PyInit__stackdist(void) { return PyModule_Create(&module); }
