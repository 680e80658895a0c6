/*
 * pcs.fleet._route: the routing pass of the index and load routers (prefix, cache-aware, least-loaded)
 * with an exact view (stale_s = 0), compiled.
 *
 * Mirrors pcs.fleet.route._route_loop with pcs.fleet.index.CacheIndex (stale_s = 0),
 * pcs.fleet.index.LoadTracker and the routers' choose() (pcs/fleet/routers/prefix.py,
 * cache_aware.py, least_loaded.py); docs/semantics.md §17. Per request, in arrival order:
 *   1. retire the requests in flight whose estimated end is <= the arrival (LoadTracker.advance);
 *   2. match[i] = leading hittable ids held by instance i (the prefix rule, docs/semantics.md §3);
 *   3. the router's rule picks the instance (kind below);
 *   4. (index routers) the request's cacheable ids are stored in that instance's LRU set of cap[i]
 *      slots: a held id moves to the MRU end, a new one is appended and the LRU one dropped past cap[i]
 *      (CacheIndex.store; evicting before appending gives the same set and order);
 *   5. the request is in flight on it until ends[k] (LoadTracker.add).
 * Kinds: 0 prefix (max (match, -requests), lowest index on ties), 1 cache-aware (max w_o * match/hit -
 * w_l * requests/max requests, first strictly greater wins), 2 least-loaded by requests, 3 by prompt
 * tokens (min (count, index)). Differential tests: tests/fleet/test_route_twin.py.
 * Built with -ffp-contract=off: the cache-aware score is the Python expression, operation by operation.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_kernel_common.h"

/* One instance's LRU set: an open-addressing table (linear probing, splitmix64, load <= 0.5,
 * backward-shift deletion) of node numbers, and the nodes in a doubly linked list, LRU at head. */
typedef struct {
    int32_t *tab;        /* node or -1 */
    uint64_t mask;
    uint64_t *key;       /* per node */
    int32_t *prev, *next;
    int32_t head, tail, free_node, count, nodes;
} lruset_t;

typedef struct { double end; int64_t tokens; int32_t inst; } flight_t;

static void set_free(lruset_t *s) {
    free(s->tab); free(s->key); free(s->prev); free(s->next);
}

static int set_init(lruset_t *s) {
    memset(s, 0, sizeof(*s));
    s->tab = (int32_t *)malloc(64 * sizeof(int32_t));
    if (!s->tab) return -1;
    memset(s->tab, 0xff, 64 * sizeof(int32_t));
    s->mask = 63;
    s->head = s->tail = s->free_node = -1;
    return 0;
}

static inline uint64_t set_slot(const lruset_t *s, uint64_t key) {
    uint64_t h = mix64(key) & s->mask;
    while (s->tab[h] >= 0 && s->key[s->tab[h]] != key) h = (h + 1) & s->mask;
    return h;
}

/* Double the table and reinsert every node; -1 on no memory. */
static int set_grow_table(lruset_t *s) {
    uint64_t size = (s->mask + 1) * 2;
    int32_t *t = (int32_t *)malloc(size * sizeof(int32_t));
    if (!t) return -1;
    memset(t, 0xff, size * sizeof(int32_t));
    free(s->tab);
    s->tab = t;
    s->mask = size - 1;
    for (int32_t n = s->head; n >= 0; n = s->next[n]) t[set_slot(s, s->key[n])] = n;
    return 0;
}

/* A node for a new id (from the free list, else the pool doubled); -1 on no memory. */
static int32_t set_node(lruset_t *s) {
    if (s->free_node >= 0) {
        int32_t n = s->free_node;
        s->free_node = s->next[n];
        return n;
    }
    if (s->count == s->nodes) {
        int32_t want = s->nodes ? s->nodes * 2 : 64;
        uint64_t *k = (uint64_t *)realloc(s->key, (size_t)want * 8);
        if (k) s->key = k;
        int32_t *p = (int32_t *)realloc(s->prev, (size_t)want * 4);
        if (p) s->prev = p;
        int32_t *q = (int32_t *)realloc(s->next, (size_t)want * 4);
        if (q) s->next = q;
        if (!k || !p || !q) return -1;
        s->nodes = want;
    }
    return s->count;   /* nodes 0 .. count-1 are in use when the free list is empty */
}

static inline void set_unlink(lruset_t *s, int32_t n) {
    if (s->prev[n] >= 0) s->next[s->prev[n]] = s->next[n]; else s->head = s->next[n];
    if (s->next[n] >= 0) s->prev[s->next[n]] = s->prev[n]; else s->tail = s->prev[n];
}

static inline void set_append(lruset_t *s, int32_t n) {
    s->prev[n] = s->tail;
    s->next[n] = -1;
    if (s->tail >= 0) s->next[s->tail] = n; else s->head = n;
    s->tail = n;
}

/* Drop the LRU node: unlink it, empty its table slot (backward shift), free the node. */
static void set_evict(lruset_t *s) {
    int32_t n = s->head;
    uint64_t i = set_slot(s, s->key[n]), j = i;
    set_unlink(s, n);
    for (;;) {
        j = (j + 1) & s->mask;
        if (s->tab[j] < 0) break;
        uint64_t k = mix64(s->key[s->tab[j]]) & s->mask;
        if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
            s->tab[i] = s->tab[j];
            i = j;
        }
    }
    s->tab[i] = -1;
    s->next[n] = s->free_node;
    s->free_node = n;
    s->count--;
}

/* CacheIndex.store of ids[0 .. m-1] into an instance of cap slots; -1 on no memory. */
static int set_store(lruset_t *s, const uint64_t *ids, int64_t m, int64_t cap) {
    for (int64_t a = 0; a < m; a++) {
        uint64_t h = set_slot(s, ids[a]);
        int32_t n = s->tab[h];
        if (n >= 0) {
            if (n != s->tail) { set_unlink(s, n); set_append(s, n); }
            continue;
        }
        if (cap == 0) return 0;
        if (s->count >= cap) set_evict(s);
        if ((uint64_t)(s->count + 1) * 2 > s->mask + 1) {
            if (set_grow_table(s) != 0) return -1;
        }
        n = set_node(s);
        if (n < 0) return -1;
        s->key[n] = ids[a];
        s->tab[set_slot(s, ids[a])] = n;
        set_append(s, n);
        s->count++;
    }
    return 0;
}

/* CacheIndex.match: leading ids of ids[0 .. m-1] held. */
static inline int64_t set_match(const lruset_t *s, const uint64_t *ids, int64_t m) {
    int64_t k = 0;
    while (k < m && s->tab[set_slot(s, ids[k])] >= 0) k++;
    return k;
}

/* Min-heap of requests in flight by estimated end (LoadTracker). */
static void heap_push(flight_t *h, int64_t *len, flight_t x) {
    int64_t i = (*len)++;
    while (i > 0 && h[(i - 1) / 2].end > x.end) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
    h[i] = x;
}

static flight_t heap_pop(flight_t *h, int64_t *len) {
    flight_t top = h[0], x = h[--(*len)];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= *len) break;
        if (c + 1 < *len && h[c + 1].end < h[c].end) c++;
        if (h[c].end >= x.end) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
    return top;
}

typedef struct {
    int kind;
    double w_o, w_l;
    int32_t inst;
    int64_t *reqs, *tokens, *match;
} rule_t;

/* The router's choice from match[] and the load (the choose() of the router's module). */
static int32_t choose(const rule_t *r, int64_t hit) {
    int32_t best = 0;
    if (r->kind == 0) {
        for (int32_t i = 1; i < r->inst; i++)
            if (r->match[i] > r->match[best] || (r->match[i] == r->match[best] && r->reqs[i] < r->reqs[best]))
                best = i;
    } else if (r->kind == 1) {
        int64_t top = 0;
        for (int32_t i = 0; i < r->inst; i++) top = r->reqs[i] > top ? r->reqs[i] : top;
        double best_score = 0.0;
        for (int32_t i = 0; i < r->inst; i++) {
            double frac = hit ? (double)r->match[i] / (double)hit : 0.0;
            double score = r->w_o * frac - (top ? r->w_l * (double)r->reqs[i] / (double)top : 0.0);
            if (i == 0 || score > best_score) { best = i; best_score = score; }
        }
    } else {
        const int64_t *c = r->kind == 2 ? r->reqs : r->tokens;
        for (int32_t i = 1; i < r->inst; i++)
            if (c[i] < c[best]) best = i;
    }
    return best;
}

typedef struct {
    int64_t n;
    const double *arrival, *ends;
    const int64_t *prompt, *offs, *hit, *keep, *cap;
    const uint64_t *ids;
    int64_t *out;
} pass_t;

/* The routing pass (module comment); 0, or -1 on no memory. */
static int route_run(const pass_t *p, rule_t *r, lruset_t *sets) {
    flight_t *heap = (flight_t *)malloc((size_t)(p->n ? p->n : 1) * sizeof(flight_t));
    if (!heap) return -1;
    int64_t len = 0;
    int track = r->kind <= 1, rc = 0;
    for (int64_t k = 0; k < p->n && rc == 0; k++) {
        double t = p->arrival[k];
        while (len && heap[0].end <= t) {
            flight_t f = heap_pop(heap, &len);
            r->reqs[f.inst]--;
            r->tokens[f.inst] -= f.tokens;
        }
        const uint64_t *ids = p->ids + p->offs[k];
        if (track)
            for (int32_t i = 0; i < r->inst; i++) r->match[i] = set_match(&sets[i], ids, p->hit[k]);
        int32_t i = choose(r, p->hit[k]);
        p->out[k] = i;
        if (track) rc = set_store(&sets[i], ids, p->keep[k], p->cap[i]);
        r->reqs[i]++;
        r->tokens[i] += p->prompt[k];
        heap_push(heap, &len, (flight_t){p->ends[k], p->prompt[k], i});
    }
    free(heap);
    return rc;
}

/* Each instance's held ids, LRU first, as bytes of uint64 (a list of `inst` bytes objects). */
static PyObject *held_lists(const lruset_t *sets, int32_t inst) {
    PyObject *list = PyList_New(inst);
    for (int32_t i = 0; list && i < inst; i++) {
        PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sets[i].count * 8);
        if (!b) { Py_DECREF(list); return NULL; }
        uint64_t *dst = (uint64_t *)PyBytes_AS_STRING(b);
        for (int32_t n = sets[i].head; n >= 0; n = sets[i].next[n]) *dst++ = sets[i].key[n];
        PyList_SET_ITEM(list, i, b);
    }
    return list;
}

/* Bounds of every request (0 <= hit, keep <= its ids; offsets from 0 to len(ids), non-decreasing). */
static int check_pass(const pass_t *p, int64_t m) {
    if (p->offs[0] != 0 || p->offs[p->n] != m) return -1;
    for (int64_t k = 0; k < p->n; k++) {
        int64_t len = p->offs[k + 1] - p->offs[k];
        if (len < 0 || p->hit[k] < 0 || p->hit[k] > len || p->keep[k] < 0 || p->keep[k] > len) return -1;
    }
    return 0;
}

static PyObject *route_pass(const pass_t *p, int kind, double w_o, double w_l, int32_t inst) {
    int64_t *work = (int64_t *)calloc((size_t)inst * 3, 8);
    lruset_t *sets = (lruset_t *)calloc((size_t)inst, sizeof(lruset_t));
    int rc = (!work || !sets) ? -1 : 0;
    for (int32_t i = 0; rc == 0 && i < inst; i++) rc = set_init(&sets[i]);
    rule_t r = {kind, w_o, w_l, inst, work, work + inst, work + 2 * inst};
    if (rc == 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = route_run(p, &r, sets);
        Py_END_ALLOW_THREADS
    }
    PyObject *result = rc == 0 ? held_lists(sets, inst) : PyErr_NoMemory();
    for (int32_t i = 0; sets && i < inst; i++) set_free(&sets[i]);
    free(sets);
    free(work);
    return result;
}

static PyObject *py_route(PyObject *self, PyObject *args) {
    int kind;
    double w_o, w_l;
    Py_buffer cap, arr, prompt, offs, ids, hit, keep, ends, out;
    if (!PyArg_ParseTuple(args, "iddy*y*y*y*y*y*y*y*w*", &kind, &w_o, &w_l, &cap, &arr, &prompt, &offs, &ids,
                          &hit, &keep, &ends, &out))
        return NULL;
    PyObject *result = NULL;
    int64_t n = arr.len / 8, inst = cap.len / 8;
    pass_t p = {n, arr.buf, ends.buf, prompt.buf, offs.buf, hit.buf, keep.buf, cap.buf, ids.buf, out.buf};
    if (kind < 0 || kind > 3 || inst < 1 || inst > INT32_MAX || prompt.len != arr.len || offs.len != arr.len + 8 ||
        hit.len != arr.len || keep.len != arr.len || ends.len != arr.len || out.len != arr.len || ids.len % 8 ||
        ids.len / 8 >= INT32_MAX ||
        check_pass(&p, ids.len / 8) != 0)
        PyErr_SetString(PyExc_ValueError, "route: caps int64 (N,); arrival, prompt, hit, keep, ends, out (R,); "
                                          "offsets int64 (R+1,) from 0 to len(ids); 0 <= hit, keep <= ids per request");
    else
        result = route_pass(&p, kind, w_o, w_l, (int32_t)inst);
    PCS_RELEASE(&cap, &arr, &prompt, &offs, &ids, &hit, &keep, &ends, &out);
    return result;
}

static PyMethodDef methods[] = {
    {"route", py_route, METH_VARARGS,
     "route(kind, w_overlap, w_load, caps: int64 (N,), arrival_s: float64 (R,), prompt_tokens: int64 (R,), "
     "offsets: int64 (R+1,), ids: uint64 (M,), hit: int64 (R,), keep: int64 (R,), end_s: float64 (R,), "
     "out: writable int64 (R,)) -> list of N bytes (each instance's held ids, uint64, LRU first). kind: 0 prefix, "
     "1 cache-aware, 2 least-loaded by requests, 3 by tokens (no index kept: empty lists)."},
    {NULL, NULL, 0, NULL},
};

PCS_KERNEL_MODULE(_route, "pcs.fleet._route", "Compiled routing pass of the fleet (see pcs.fleet.route).", methods)
