/*
 * pcs.trace._statscan: everything `pcs trace stats` asks of the block hashes, in one streaming pass.
 *
 * Fed request batches in order (stats_new / stats_feed / stats_result), it computes per block access,
 * with a 36 B record per distinct id found by its dense number: the id itself while every id is below
 * max(2**20, 2 x the trace's id count, 2 x (distinct ids so far + the batch's ids)) (direct mode: Mooncake's ids are 0, 1, 2, ... in first-appearance
 * order), else one hash probe (id -> dense number; 16 B open-addressing slots, linear probing,
 * splitmix64, load <= 0.75; the ids seen so far are moved into the table the first time a batch holds
 * a larger id):
 *   - the previous access (re-access or first access: distinct ids, reaccess share);
 *   - the reuse distance: distinct other ids since the previous access (Mattson et al. 1970), as
 *     (i - p - 1) - #{deleted positions in (p, i)}, a position being deleted once its id is accessed
 *     again; deletions live in a bitmap with a Fenwick tree over its 64-bit words (O(log(N / 64)),
 *     nothing at all for a first access); counted per distance (dist_counts);
 *   - the reuse time as runs (request, previous request, count) the caller turns into seconds;
 *   - the single-sequence walk of pcs.blocks.single_sequence_hits (k leading blocks below the hit cap
 *     cached by an earlier request; an id is cached once it is among a request's first n);
 *   - shared-prefix tokens (tokens of accesses of ids accessed twice or more);
 *   - the prefix tree of pcs.trace.tree.prefix_tree_stats: nodes (parent, id) with the parent the
 *     request's previous id (the root for block 0 or a parent id of 2**64 - 1), the first parent kept
 *     in the id's record and any other parent in a second set of (parent, id) pairs;
 *   - the inferred conversations of pcs.trace.tree.inferred_conversations_reference (rule 3).
 * The numpy / Python versions in pcs/trace/stats.py and pcs/trace/tree.py are the reference;
 * tests/trace/test_stats_kernel.py diffs this kernel against them.
 * ------------------------------------------------------------------------- */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_kernel_common.h"

typedef struct { uint64_t key; int32_t dense; int32_t pad; } kslot_t;  /* dense + 1; 0: empty */
typedef struct {
    int32_t last_pos, last_req, cached_req, kids, depth, reg_conv, first_tokens, first_parent, count;
} rec_t;  /* cached_req, reg_conv: 1 + value, 0: none; first_parent: dense parent, -1 the root */
typedef struct { uint64_t key; int32_t depth; int32_t used; } pslot_t;  /* key: (parent + 1) << 32 | id */

typedef struct {
    kslot_t *slots; uint64_t mask; int64_t count;  /* the id table (hashed mode), keys in it */
    rec_t *rec; int64_t rec_cap, next, distinct;   /* records by dense number (zeroed: count 0 = unused) */
    int direct; int64_t limit, expected;           /* direct mode: dense number = id, every id < limit */
    pslot_t *pairs; uint64_t pmask; int64_t pcount;
    uint64_t *del; int32_t *fen; int64_t words;   /* deleted positions: bitmap + Fenwick over words */
    int64_t dtot, pos, req;
    int64_t *dist; int64_t dist_cap;
    int64_t *turns; int64_t conv, turns_cap;
    int64_t nodes, roots, shared_tokens, reaccesses;
} st_t;

static void st_free(st_t *s) {
    if (!s) return;
    free(s->slots); free(s->rec); free(s->pairs); free(s->del); free(s->fen); free(s->dist); free(s->turns);
    free(s);
}

static void st_capsule_free(PyObject *cap) { st_free((st_t *)PyCapsule_GetPointer(cap, "pcs.trace._statscan")); }

static int grow64(int64_t **a, int64_t *cap, int64_t need) {
    if (need <= *cap) return 0;
    int64_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    int64_t *n = (int64_t *)realloc(*a, (size_t)nc * 8);
    if (!n) return -1;
    memset(n + *cap, 0, (size_t)(nc - *cap) * 8);
    *a = n; *cap = nc;
    return 0;
}

static int keys_alloc(st_t *s, uint64_t cap) {
    kslot_t *sl = (kslot_t *)calloc(cap, sizeof(kslot_t));  /* fresh zero pages: no memset of the whole table */
    if (!sl) return -1;
    PCS_REHASH(s->slots, s->mask, sl, cap - 1, dense);
    s->slots = sl; s->mask = cap - 1;
    return 0;
}

static int pairs_alloc(st_t *s, uint64_t cap) {
    pslot_t *sl = (pslot_t *)calloc(cap, sizeof(pslot_t));
    if (!sl) return -1;
    PCS_REHASH(s->pairs, s->pmask, sl, cap - 1, used);
    s->pairs = sl; s->pmask = cap - 1;
    return 0;
}

/* Records for dense numbers below `need`, the new ones zeroed. -1: no memory. */
static int st_records(st_t *s, int64_t need) {
    if (need <= s->rec_cap) return 0;
    int64_t nc = need + need / 8;  /* realloc of a large block remaps pages: no copy; zero only the new part */
    rec_t *n = (rec_t *)realloc(s->rec, (size_t)nc * sizeof(rec_t));
    if (!n) return -1;
    memset(n + s->rec_cap, 0, (size_t)(nc - s->rec_cap) * sizeof(rec_t));
    s->rec = n; s->rec_cap = nc;
    return 0;
}

/* Leave direct mode: every id seen goes into the id table under its own number. -1: no memory. */
static int st_to_hashed(st_t *s, int64_t more) {
    uint64_t slots = 4096;
    while ((uint64_t)(s->distinct + more) * 4 > slots * 3 || (uint64_t)s->expected > slots) slots <<= 1;
    free(s->slots);
    s->slots = NULL;
    if (keys_alloc(s, slots) != 0) return -1;
    for (int64_t d = 0; d < s->next; d++) {
        if (!s->rec[d].count) continue;
        uint64_t h = mix64((uint64_t)d) & s->mask;
        while (s->slots[h].dense) h = (h + 1) & s->mask;
        s->slots[h].key = (uint64_t)d;
        s->slots[h].dense = (int32_t)(d + 1);
        s->count++;
    }
    s->direct = 0;
    return 0;
}

/* Direct mode while the batch's ids stay below the limit (records up to its largest id), else hashed. */
static int st_mode(st_t *s, const uint64_t *keys, int64_t m) {
    if (!s->direct) return 0;
    uint64_t top = 0;
    for (int64_t i = 0; i < m; i++) top = keys[i] > top ? keys[i] : top;
    if (m == 0 || top < (uint64_t)s->limit || top < (uint64_t)(2 * (s->distinct + m))) { /* ids at least half dense */
        if (m && (int64_t)top + 1 > s->next) {
            if (st_records(s, (int64_t)top + 1) != 0) return -1;
            s->next = (int64_t)top + 1;
        }
        return 0;
    }
    return st_to_hashed(s, m);
}

/* Room for `more` new ids (table load <= 0.75, records) and positions up to pos + more. -1: no memory. */
static int st_reserve(st_t *s, int64_t more) {
    while (!s->direct && (uint64_t)(s->count + more) * 4 > (s->mask + 1) * 3)
        if (keys_alloc(s, (s->mask + 1) * 2) != 0) return -1;
    if (!s->direct && st_records(s, s->next + more) != 0) return -1;
    while ((s->pos + more) >= s->words * 64) { /* double the bitmap; the Fenwick's new top covers all */
        int64_t nw = s->words * 2;
        uint64_t *d = (uint64_t *)realloc(s->del, (size_t)nw * 8);
        if (!d) return -1;
        s->del = d;
        memset(d + s->words, 0, (size_t)s->words * 8);
        int32_t *f = (int32_t *)realloc(s->fen, (size_t)(nw + 1) * 4);
        if (!f) return -1;
        s->fen = f;
        memset(f + s->words + 1, 0, (size_t)s->words * 4);
        f[nw] = (int32_t)s->dtot;
        s->words = nw;
    }
    return 0;
}

/* Dense number of key (a new one when unseen; *fresh set). Room reserved by st_reserve. */
static inline int32_t st_find(st_t *s, uint64_t key, int *fresh) {
    if (s->direct) {
        *fresh = !s->rec[key].count;
        s->distinct += *fresh;
        return (int32_t)key;
    }
    uint64_t h = mix64(key) & s->mask;
    for (;;) {
        kslot_t *x = &s->slots[h];
        if (!x->dense) {
            x->key = key;
            x->dense = (int32_t)(++s->next);
            s->count++;
            s->distinct++;
            *fresh = 1;
            return x->dense - 1;
        }
        if (x->key == key) { *fresh = 0; return x->dense - 1; }
        h = (h + 1) & s->mask;
    }
}

/* Insert the node (parent, id) into the second set; 1 when it is new, -1 on no memory. */
static int st_pair(st_t *s, int32_t parent, int32_t id, int32_t depth) {
    if ((uint64_t)(s->pcount + 1) * 2 > s->pmask + 1 && pairs_alloc(s, (s->pmask + 1) * 2) != 0) return -1;
    uint64_t key = ((uint64_t)(uint32_t)(parent + 1) << 32) | (uint32_t)id;
    uint64_t h = mix64(key) & s->pmask;
    for (;;) {
        pslot_t *x = &s->pairs[h];
        if (!x->used) { x->key = key; x->depth = depth; x->used = 1; s->pcount++; return 1; }
        if (x->key == key) return 0;
        h = (h + 1) & s->pmask;
    }
}

/* Deleted positions <= p (words before p's word from the Fenwick, the rest by popcount). */
static inline int64_t st_deleted_upto(const st_t *s, int64_t p) {
    int64_t w = p >> 6, sum = 0;
    for (int64_t i = w; i > 0; i -= i & -i) sum += s->fen[i];
    uint64_t mask = (p & 63) == 63 ? ~0ULL : ((1ULL << ((p & 63) + 1)) - 1);
    return sum + __builtin_popcountll(s->del[w] & mask);
}

static inline void st_delete(st_t *s, int64_t p) {
    s->del[p >> 6] |= 1ULL << (p & 63);
    for (int64_t i = (p >> 6) + 1; i <= s->words; i += i & -i) s->fen[i]++;
    s->dtot++;
}

/* A new node under `parent` (-1: the root). */
static inline void st_node(st_t *s, int32_t parent) {
    s->nodes++;
    if (parent < 0) s->roots++; else s->rec[parent].kids++;
}

/* The re-access of record x at position pos: distance, reuse-time run, shared tokens, node. -1: no memory. */
static int st_reaccess(st_t *s, rec_t *x, int32_t d, int64_t tok, int32_t parent, int32_t depth,
                       int64_t *run_cur, int64_t *run_prev, int64_t *run_n, int64_t *nruns) {
    int64_t p = x->last_pos;
    int64_t dist = (s->pos - p - 1) - (s->dtot - st_deleted_upto(s, p));
    st_delete(s, p);
    if (grow64(&s->dist, &s->dist_cap, dist + 1) != 0) return -1;
    s->dist[dist]++;
    s->reaccesses++;
    int64_t k = *nruns;
    if (k && run_cur[k - 1] == s->req && run_prev[k - 1] == x->last_req) run_n[k - 1]++;
    else { run_cur[k] = s->req; run_prev[k] = x->last_req; run_n[k] = 1; *nruns = k + 1; }
    if (x->count == 1) { s->shared_tokens += x->first_tokens; x->count = 2; }
    s->shared_tokens += tok;
    x->last_pos = (int32_t)s->pos; x->last_req = (int32_t)s->req;
    if (parent != x->first_parent) {
        int rc = st_pair(s, parent, d, depth);
        if (rc < 0) return -1;
        if (rc) st_node(s, parent);
    }
    return 0;
}

typedef struct { const uint64_t *keys; const int64_t *offs, *prompt, *n, *cap, *full; int64_t bs, m; } batch_t;
#define PF_SLOT 24
#define PF_REC 12

/* One request: its accesses, then its conversation. Writes k[r]; -1 on no memory. */
static int st_request(st_t *s, const batch_t *B, int64_t r, int64_t *k_out, int64_t *run_cur, int64_t *run_prev,
                      int64_t *run_n, int64_t *nruns) {
    const int64_t a = B->offs[r], b = B->offs[r + 1], num = b - a;
    const int64_t n = B->n[r], cap = B->cap[r], full = B->full[r], rq = s->req;
    int walking = 1, last_full_new = 0;
    int64_t k = 0, match = -1;
    int32_t prev = -1, last_full = -1;
    for (int64_t i = a; i < b; i++) {
        const int64_t j = i - a;
        if (s->direct) { /* the record PF_SLOT accesses ahead */
            if (i + PF_SLOT < B->m) __builtin_prefetch(&s->rec[B->keys[i + PF_SLOT]], 1, 1);
        } else if (i + PF_SLOT < B->m) /* rolling prefetch: the slot PF_SLOT accesses ahead, the record PF_REC ahead */
            __builtin_prefetch(&s->slots[mix64(B->keys[i + PF_SLOT]) & s->mask], 0, 1);
        if (!s->direct && i + PF_REC < B->m) {
            const kslot_t *y = &s->slots[mix64(B->keys[i + PF_REC]) & s->mask];
            if (y->dense && y->key == B->keys[i + PF_REC]) __builtin_prefetch(&s->rec[y->dense - 1], 1, 1);
        }
        int fresh;
        int32_t d = st_find(s, B->keys[i], &fresh);
        rec_t *x = &s->rec[d];
        int32_t parent = j == 0 ? -1 : prev;   /* the root by position: any uint64 is a real id (docs/semantics.md) */
        int64_t tok = i == b - 1 ? B->prompt[r] - (num - 1) * B->bs : B->bs;
        if (fresh) {
            *x = (rec_t){(int32_t)s->pos, (int32_t)rq, 0, 0, (int32_t)(j + 1), 0, (int32_t)tok, parent, 1};
            st_node(s, parent);
        } else if (st_reaccess(s, x, d, tok, parent, (int32_t)(j + 1), run_cur, run_prev, run_n, nruns) != 0) {
            return -1;
        }
        if (walking && j < cap) {
            if (x->cached_req && x->cached_req <= rq) k++;
            else walking = 0;
        }
        if (j < n && !x->cached_req) x->cached_req = (int32_t)(rq + 1);
        if (j < full) {
            if (x->reg_conv) match = x->reg_conv - 1;
            if (j == full - 1) { last_full = d; last_full_new = fresh; }
        }
        prev = d;
        s->pos++;
    }
    k_out[r] = k;
    int64_t conv = match;
    if (conv < 0) {
        conv = s->conv++;
        if (grow64(&s->turns, &s->turns_cap, s->conv) != 0) return -1;
    }
    s->turns[conv]++;
    if (last_full >= 0 && last_full_new) s->rec[last_full].reg_conv = (int32_t)(conv + 1);
    s->req++;
    return 0;
}

static int st_run(st_t *s, const batch_t *B, int64_t num_req, int64_t *k_out, int64_t *run_cur, int64_t *run_prev,
                  int64_t *run_n, int64_t *nruns) {
    int64_t m = B->offs[num_req] - B->offs[0];
    for (int64_t r = 0; r < num_req; r++) {
        int64_t len = B->offs[r + 1] - B->offs[r];
        if (len < 0 || B->n[r] < 0 || B->n[r] > len || B->full[r] < 0 || B->full[r] > len) return -2;
    }
    if (s->req + num_req >= INT32_MAX || s->pos + m >= INT32_MAX) return 3;
    if (st_mode(s, B->keys + B->offs[0], m) != 0 || st_reserve(s, m) != 0) return -1;
    for (int64_t i = 0; i < PF_SLOT && i < m; i++)
        __builtin_prefetch(s->direct ? (const void *)&s->rec[B->keys[i]] : (const void *)&s->slots[mix64(B->keys[i]) & s->mask], 0, 1);
    for (int64_t r = 0; r < num_req; r++) {
        if (st_request(s, B, r, k_out, run_cur, run_prev, run_n, nruns) != 0) return -1;
    }
    return 0;
}

static PyObject *py_new(PyObject *self, PyObject *args) {
    long long expected = 0;
    if (!PyArg_ParseTuple(args, "|L", &expected)) return NULL;
    st_t *s = (st_t *)calloc(1, sizeof(st_t));
    if (!s || keys_alloc(s, 4096) != 0 || pairs_alloc(s, 1024) != 0 ||
        !(s->rec = (rec_t *)calloc(4096, sizeof(rec_t))) || !(s->del = (uint64_t *)calloc(1024, 8)) ||
        !(s->fen = (int32_t *)calloc(1025, 4))) {
        st_free(s);
        return PyErr_NoMemory();
    }
    s->rec_cap = 4096; s->words = 1024;
    s->direct = 1;
    s->expected = expected > 0 ? expected : 0;
    s->limit = s->expected * 2 > ((int64_t)1 << 20) ? s->expected * 2 : ((int64_t)1 << 20);
    if (s->limit > INT32_MAX - 1) s->limit = INT32_MAX - 1;
    PyObject *cap = PyCapsule_New(s, "pcs.trace._statscan", st_capsule_free);
    if (!cap) st_free(s);
    return cap;
}

static PyObject *py_feed(PyObject *self, PyObject *args) {
    PyObject *cap;
    Py_buffer keys, offs, prompt, n, hc, full, k, rc_, rp, rn;
    long long bs;
    if (!PyArg_ParseTuple(args, "Oy*y*y*y*y*y*Lw*w*w*w*", &cap, &keys, &offs, &prompt, &n, &hc, &full, &bs, &k,
                          &rc_, &rp, &rn))
        return NULL;
    PyObject *result = NULL;
    st_t *s = (st_t *)PyCapsule_GetPointer(cap, "pcs.trace._statscan");
    if (!s) goto done;
    int64_t num_req = offs.len / 8 - 1, m = keys.len / 8;
    if (keys.len % 8 || offs.len % 8 || num_req < 0 || prompt.len != num_req * 8 || n.len != prompt.len ||
        hc.len != prompt.len || full.len != prompt.len || k.len != prompt.len || rc_.len < m * 8 ||
        rp.len < m * 8 || rn.len < m * 8) {
        PyErr_SetString(PyExc_ValueError, "block_hashes uint64 (M,), offsets int64 (R+1,), columns int64 (R,), "
                        "run buffers int64 (>= M,)");
        goto done;
    }
    const int64_t *o = (const int64_t *)offs.buf;
    if (o[0] != 0 || o[num_req] != m) {
        PyErr_SetString(PyExc_ValueError, "offsets must start at 0 and end at len(block_hashes)");
        goto done;
    }
    batch_t B = {(const uint64_t *)keys.buf, o, (const int64_t *)prompt.buf, (const int64_t *)n.buf,
                 (const int64_t *)hc.buf, (const int64_t *)full.buf, bs, m};
    int64_t nruns = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = st_run(s, &B, num_req, (int64_t *)k.buf, (int64_t *)rc_.buf, (int64_t *)rp.buf, (int64_t *)rn.buf, &nruns);
    Py_END_ALLOW_THREADS
    if (rc == -1) PyErr_NoMemory();
    else if (rc == -2) PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing and 0 <= n, full <= ids");
    else result = Py_BuildValue("iL", rc, (long long)nruns);
done:
    PCS_RELEASE(&keys, &offs, &prompt, &n, &hc, &full, &k, &rc_, &rp, &rn);
    return result;
}

/* Leaves, inner nodes and fan-out from the records and the second pair set. */
static PyObject *st_tree(const st_t *s) {
    long long leaves = 0, leaf_depth = 0, inner = 0, kids = 0, kids_max = 0, branching = 0;
    for (int64_t d = 0; d < s->next; d++) {
        const rec_t *x = &s->rec[d];
        if (!x->count) continue;
        if (!x->kids) { leaves++; leaf_depth += x->depth; continue; }
        inner++; kids += x->kids; branching += x->kids >= 2;
        if (x->kids > kids_max) kids_max = x->kids;
    }
    for (uint64_t h = 0; h <= s->pmask; h++) {
        const pslot_t *p = &s->pairs[h];
        if (p->used && !s->rec[(uint32_t)p->key].kids) { leaves++; leaf_depth += p->depth; }
    }
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "nodes", (long long)s->nodes, "roots",
                         (long long)s->roots, "leaves", leaves, "leaf_depth_sum", leaf_depth, "inner", inner,
                         "kids_sum", kids, "kids_max", kids_max, "branching", branching);
}

static PyObject *py_result(PyObject *self, PyObject *args) {
    st_t *s = (st_t *)pcs_state_arg(args, "pcs.trace._statscan");
    if (!s) return NULL;
    int64_t top = s->dist_cap;
    while (top > 0 && !s->dist[top - 1]) top--;
    PyObject *tree = st_tree(s);
    if (!tree) return NULL;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:y#,s:y#,s:N}", "accesses", (long long)s->pos, "distinct",
                         (long long)s->distinct, "reaccesses", (long long)s->reaccesses, "shared_tokens",
                         (long long)s->shared_tokens, "dist_counts", s->dist ? (const char *)s->dist : "", (Py_ssize_t)(top * 8),
                         "turns", s->turns ? (const char *)s->turns : "", (Py_ssize_t)(s->conv * 8), "tree", tree);
}

static PyMethodDef methods[] = {
    {"stats_new", py_new, METH_VARARGS, "stats_new(expected_ids=0) -> state capsule of the one-pass stats scan."},
    {"stats_feed", py_feed, METH_VARARGS,
     "stats_feed(state, block_hashes: uint64 (M,), offsets: int64 (R+1,), prompt, n, cap, full: int64 (R,), "
     "block_size, k: writable int64 (R,), run_cur, run_prev, run_n: writable int64 (>= M,)) -> (rc, runs): "
     "rc 0, or 3 (over 2**31 - 1 block accesses or requests: the caller falls back)."},
    {"stats_result", py_result, METH_VARARGS,
     "stats_result(state) -> dict(accesses, distinct, reaccesses, shared_tokens, dist_counts: bytes of int64, "
     "turns: bytes of int64, tree: dict)."},
    {NULL, NULL, 0, NULL},
};

PCS_KERNEL_MODULE(_statscan, "pcs.trace._statscan", "Compiled one-pass trace statistics (see pcs.trace.statscan).",
                  methods)
