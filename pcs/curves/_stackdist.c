/*
 * pcs.curves._stackdist: compiled kernel for prefix-aware LRU stack depths.
 *
 * stack_depths(block_hashes, req_offsets, out, lead=False) -> int (distinct block hashes).
 *   block_hashes: C-contiguous uint64 buffer, shape (N,): the cacheable block hashes
 *                of all requests, flattened in request order, head to tail (the
 *                hash table's keys below).
 *   req_offsets: C-contiguous int64 buffer, shape (R + 1,): request r owns
 *                block_hashes[req_offsets[r]:req_offsets[r + 1]]; req_offsets[0] == 0,
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
 * Gives exactly the depths of pcs.curves.stackdist._stack_depths_python (a
 * plain Fenwick tree over times; differential tests in tests/curves/test_stackdist.py).
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

#include "../_kernel_common.h"

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

/* The LRU stack between requests: times are stamped in order; a time whose block was used again
 * later is a hole; the depth of a block last used at `last` is the number of live times after it. */
typedef struct {
    uint64_t *holes;        /* one bit per time */
    int32_t *fen;           /* Fenwick tree of hole counts per 64-time word (N / 64 entries: in cache) */
    int64_t words, t, holes_total;
} stack_t;

/* Distinct blocks used after time `last` (before the current request's stamps). */
static inline int64_t stack_depth(const stack_t *st, int64_t last) {
    int64_t w = last >> 6; /* holes at times 0..last */
    uint64_t below = (last & 63) == 63 ? ~0ULL : ((1ULL << ((last & 63) + 1)) - 1);
    int64_t before = __builtin_popcountll(st->holes[w] & below);
    for (int64_t j = w; j > 0; j -= j & (-j)) before += st->fen[j];
    return (st->t - 1 - last) - (st->holes_total - before);
}

/* Stamp a request's blocks (their slots in `slots`, head first) tail first, head last. */
static inline void stack_stamp(stack_t *st, table_t *tab, const uint64_t *slots, int64_t len) {
    for (int64_t i = len - 1; i >= 0; i--) {
        slot_t *s = &tab->slots[slots[i]];
        if (s->last >= 0) {
            st->holes[s->last >> 6] |= 1ULL << (s->last & 63);
            for (int64_t j = (s->last >> 6) + 1; j <= st->words; j += j & (-j)) st->fen[j] += 1;
            st->holes_total++;
        }
        s->last = st->t++;
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
    stack_t st = {NULL, NULL, (n >> 6) + 1, 0, 0};
    st.holes = (uint64_t *)big_alloc((size_t)st.words * 8, 1);
    st.fen = (int32_t *)big_alloc(((size_t)st.words + 1) * sizeof(int32_t), 1);
    uint64_t *tmp = (uint64_t *)malloc(((size_t)max_len + 1) * sizeof(uint64_t));
    int rc = (st.fen && tmp && st.holes) ? 0 : -1;
    /* Software pipeline: the slots of request r + 2 are prefetched while
     * request r is processed. */
    for (int64_t i = 0; !rc && i < offs[num_req > 1 ? 2 : num_req]; i++)
        __builtin_prefetch(&tab.slots[mix64(keys[i]) & tab.mask], 1, 1);
    for (int64_t r = 0; !rc && r < num_req; r++) {
        const int64_t a = offs[r], b = offs[r + 1];
        while (!rc && (uint64_t)(tab.count + (b - a)) * 10 > (tab.mask + 1) * 7) rc = table_grow(&tab);
        if (rc) break;
        int64_t run_max = 0; /* lead: running max of depths; -1 once a block is cold */
        for (int64_t i = a; i < b; i++) {
            uint64_t s = table_find(&tab, keys[i], mix64(keys[i]) & tab.mask);
            tmp[i - a] = s;
            int64_t last = tab.slots[s].last, d = last >= 0 ? stack_depth(&st, last) : -1;
            if (lead) {
                run_max = (d < 0 || run_max < 0) ? -1 : (d > run_max ? d : run_max);
                d = run_max;
            }
            out[i] = d;
        }
        if (r + 2 < num_req)
            for (int64_t i = offs[r + 2]; i < offs[r + 3]; i++)
                __builtin_prefetch(&tab.slots[mix64(keys[i]) & tab.mask], 1, 1);
        stack_stamp(&st, &tab, tmp, b - a);
    }
    *num_distinct = tab.count;
    free(tab.slots); free(st.fen); free(tmp); free(st.holes);
    return rc;
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
    PCS_RELEASE(&keys, &offs, &out);
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
    PCS_RELEASE(&lead, &w, &hw, &hb);
    return result;
}

static PyMethodDef methods[] = {
    {"stack_depths", py_stack_depths, METH_VARARGS,
     "stack_depths(block_hashes: uint64 buffer (N,), req_offsets: int64 buffer (R+1,), "
     "out: writable int64 buffer (N,)) -> number of distinct block hashes.\n\n"
     "Writes each access's LRU stack depth at the start of its request (-1 if never used "
     "before); a request's keys are then stamped tail first, head last. With lead=True "
     "writes the running max along each request instead (-1 from the first cold block on)."},
    {"histograms", py_histograms, METH_VARARGS,
     "histograms(lead: int64 (N,), weights: int64 (N,), hist_w: int64 (K,), hist_b: int64 (K,)) -> None.\n\n"
     "hist_w[d] = sum of weights with lead == d, hist_b[d] = their count (lead < 0 skipped)."},
    {NULL, NULL, 0, NULL},
};

PCS_KERNEL_MODULE(_stackdist, "pcs.curves._stackdist",
                  "Compiled kernel for prefix-aware LRU stack depths (see pcs.curves.stackdist).", methods)
