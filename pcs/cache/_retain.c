/* retain:tokens=A-B,duration=S, compiled: the twin of pcs.cache.admission_retention.RetainingPolicy
 * (TensorRT-LLM KvCacheRetentionConfig / TokenRangeRetentionConfig; docs/semantics.md §8).
 *
 * A pool in front of the tier's eviction policy: an unpinned block holding a token of [A, B) (the set of such
 * block keys is worked out in Python from the trace pre-pass's depths, pcs/cache/native.py) is not given to
 * the policy but appended to the pool with an expiry = now + S, now being the arrival (s) of the request being
 * admitted (the hierarchy's request clock, as pcs.cache.policies.context.clocked keeps it; 0 before the first).
 * A touch moves a pooled block last with a new expiry; remove / drop take it out. The mechanism
 * (pcs/cache/_lruhier.c: pol_add ... tevict) asks the pool first; at an eviction it first gives the expired
 * pooled blocks (pool order) back to the policy as one add batch (not reused), then takes victims from the
 * policy and only when the policy holds too few, the oldest pooled blocks. Links and expiries live in arrays
 * indexed by entry beside the tier's entries (Entry.prev / next belong to the policy's queues). A pooled block
 * leaving the tier (the pool's victim, or dropped) is forgotten by the policy if the policy saw it pinned (F_OUT:
 * taken out by remove and not added back since): PolOps.forget unlinks it from the queues that keep pinned
 * blocks in place (fifo, sieve, s3fifo, 2q); what the others know of a pinned block lives in its entry, freed
 * with it (docs/semantics.md §8, as RetainingPolicy._forget: add then drop). Equality:
 * tests/cache/test_native_admission.py.
 */
#include "_lruhier.h"

static int buf_f64(PyObject *o, double **out, Py_ssize_t *n) {
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_C_CONTIGUOUS) < 0) return -1;
    *n = b.len / 8;
    *out = PyMem_Malloc(b.len + 8);
    if (!*out) { PyBuffer_Release(&b); PyErr_NoMemory(); return -1; }
    memcpy(*out, b.buf, b.len);
    PyBuffer_Release(&b);
    return 0;
}

int ret_set(Tier *t, PyObject *spec, const int64_t *now) {
    PyObject *keys, *arr;
    double dur;
    if (!PyArg_ParseTuple(spec, "OdO", &keys, &dur, &arr)) return -1;
    Retain *r = PyMem_Calloc(1, sizeof(Retain));
    if (!r) { PyErr_NoMemory(); return -1; }
    t->ret = r;
    r->duration_s = dur;
    r->now = now;
    r->head = r->tail = -1;
    r->mono = 1;
    if (!(r->keys = kstore_new()) || buf_f64(arr, &r->arrival_s, &r->narr) < 0) return -1;
    Py_buffer b;
    if (PyObject_GetBuffer(keys, &b, PyBUF_C_CONTIGUOUS) < 0) return -1;
    const uint64_t *k = b.buf;
    for (Py_ssize_t i = 0; i < b.len / 8; i++)
        if (kset_put(r->keys, k[i], 1) < 0) { PyBuffer_Release(&b); return -1; }
    PyBuffer_Release(&b);
    return 0;
}

void ret_free(Tier *t) {
    Retain *r = t->ret;
    if (!r) return;
    kstore_free(r->keys);
    PCS_FREE(&r->arrival_s, &r->prev, &r->next, &r->until, &r->gone);
    PyMem_Free(r);
    t->ret = NULL;
}

/* RetentionAdmission.now_s: the arrival of the request being admitted, 0 before the first */
static double now_s(const Retain *r) {
    int64_t now = *r->now;
    return now >= 0 && now < r->narr ? r->arrival_s[now] : 0.0;
}

static int grow_links(Retain *r, int32_t e) {
    if (e < r->cap) return 0;
    return pcs_grow_arrays(&r->cap, (Py_ssize_t)e + 1, 64, 3, (void *const[]){&r->prev, &r->next, &r->until},
                           (const size_t[]){sizeof *r->prev, sizeof *r->next, sizeof *r->until});
}

static void pool_append(Tier *t, int32_t e, double until) {
    Retain *r = t->ret;
    if (r->tail >= 0 && r->until[r->tail] > until) r->mono = 0;
    r->prev[e] = r->tail;
    r->next[e] = -1;
    if (r->tail >= 0) r->next[r->tail] = e; else r->head = e;
    r->tail = e;
    r->until[e] = until;
    r->len++;
    t->ent[e].flags |= F_POOL;
}

static void pool_unlink(Tier *t, int32_t e) {
    Retain *r = t->ret;
    if (r->prev[e] >= 0) r->next[r->prev[e]] = r->next[e]; else r->head = r->next[e];
    if (r->next[e] >= 0) r->prev[r->next[e]] = r->prev[e]; else r->tail = r->prev[e];
    r->len--;
    if (!r->len) r->mono = 1;
    t->ent[e].flags &= ~F_POOL;
}

int ret_add(Tier *t, int32_t e) {
    Retain *r = t->ret;
    if (tfind(r->keys, t->ent[e].key) < 0) return 0;
    if (grow_links(r, e) < 0) return -1;
    pool_append(t, e, now_s(r) + r->duration_s);
    t->held++;
    return 1;
}

int ret_take(Tier *t, int32_t e) {
    if (!(t->ent[e].flags & F_POOL)) return 0;
    pool_unlink(t, e);
    t->held--;
    return 1;
}

int ret_touch(Tier *t, int32_t e) {
    if (!(t->ent[e].flags & F_POOL)) return 0;
    pool_unlink(t, e);
    pool_append(t, e, now_s(t->ret) + t->ret->duration_s);
    return 1;
}

Py_ssize_t ret_expire(Tier *t, int32_t **gone) {
    Retain *r = t->ret;
    if (r->len + 1 > r->gcap) {
        Py_ssize_t c = r->gcap ? r->gcap : 64;
        while (c < r->len + 1) c *= 2;
        int32_t *g = PyMem_Realloc(r->gone, sizeof(int32_t) * c);
        if (!g) { PyErr_NoMemory(); return -1; }
        r->gone = g;
        r->gcap = c;
    }
    double now = now_s(r);
    Py_ssize_t n = 0;
    for (int32_t e = r->head; e >= 0; e = r->next[e]) {
        if (r->until[e] <= now) r->gone[n++] = e;
        else if (r->mono) break;              /* the rest expire later */
    }
    for (Py_ssize_t i = 0; i < n; i++) pool_unlink(t, r->gone[i]);
    t->held -= n;
    *gone = r->gone;
    return n;
}

/* RetainingPolicy._forget of one pooled entry taken out of the pool, about to leave the tier */
static void ret_forget(Tier *t, int32_t e) {
    if ((t->ent[e].flags & F_OUT) && t->ops && t->ops->forget) t->ops->forget(t, e);
}

int32_t ret_pop(Tier *t) {
    int32_t e = t->ret->head;
    pool_unlink(t, e);
    t->held--;
    ret_forget(t, e);
    return e;
}

int ret_drop(Tier *t, int32_t e) {
    if (!ret_take(t, e)) return 0;
    ret_forget(t, e);
    return 1;
}

Py_ssize_t ret_order(const Tier *t, int32_t *out) {
    Py_ssize_t n = 0;
    for (int32_t e = t->ret->head; e >= 0; e = t->ret->next[e]) out[n++] = e;
    return n;
}

const char *ret_check(const Tier *t) {
    const Retain *r = t->ret;
    Py_ssize_t n = 0;
    int32_t prev = -1;
    for (int32_t e = r->head; e >= 0; e = r->next[e]) {
        if (r->prev[e] != prev) return "broken pool links";
        if (!(t->ent[e].flags & F_POOL) || t->ent[e].pin) return "a pooled block not flagged or pinned";
        if (tfind(t, t->ent[e].key) != e) return "a pooled block not resident";
        if (tfind(r->keys, t->ent[e].key) < 0) return "a pooled block outside the retained range";
        if (++n > t->nres) return "pool cycle";
        prev = e;
    }
    if (prev != r->tail || n != r->len) return "bad pool tail or length";
    Py_ssize_t flagged = 0;
    for (uint64_t i = 0; i <= t->mask; i++)
        if (t->slots[i].e >= 0 && (t->ent[t->slots[i].e].flags & F_POOL)) flagged++;
    return flagged == n ? NULL : "flagged blocks differ from the pool";
}
