/* pyarr: an eviction policy written in Python on the handle contract (pcs/cache/policies/array.py, ArrayPolicy)
 * hosted by the compiled hierarchy: as pcs/cache/_pol_py.c, but no block key crosses into Python and the policy is
 * called once per decision. Each stay of a block in the policy is named by a handle (0, 1, 2, ... per tier, named
 * at add and at touch, in the mechanism's order); the host keeps entry -> handle and handle -> entry in C, and the
 * policy's flags (a bytearray: 1 while the handle is held) up to date. pcs/cache/native.py hosted_spec gives
 * ("pyarr", (), (policy, clock, error class)); docs/semantics.md §15.
 *
 * Runs. The handles named by one add ... add_end are one run (first, count, reused), those of one touch ...
 * touch_end one run (reused True), as pcs/cache/tier.py's add(keys, reused) / touch(keys) calls; a reuse_blind
 * policy's consecutive adds are one run, as Tier._add_in_runs merges them (the join rules of _pol_py.c's batches:
 * a remove or a drop between two adds ends the run). A remove, a drop, a touch's old handle only clear a flag.
 *
 * When. The runs are queued and handed over in one victims(n, runs) call: n victims at the first victim after
 * evict_begin(n); n = 0 before order_handles() (order, check), at sync (the end of a run) and when a new run begins
 * with more than QMAX runs queued. victims may answer a range: its bounds are read, no int per victim. The policy's
 * context clock (if any) is the request clock at the call.
 *
 * Identity. A policy whose class says identity = True also gets ident (a bytearray, a native int32 per handle):
 * the handle's block number, dense per tier (0, 1, 2, ... in the order blocks are first named), the same across
 * the block's stays (pins, touches, victims: ghost lists and counts index by it); a drop, or a pinned block leaving
 * from the retain pool (forget), ends the number (the key contract's drop forgets, policies/base.py), so the block
 * is numbered anew when it comes back. The numbers live in a key store (key -> number) in C.
 *
 * Errors as in _pol_py.c (pyhost_fail, pyhost_broke): the policy's exception, or an answer against the contract
 * (victims(n) not n distinct held handles; order_handles() not a list, tuple or range of every held handle once, or
 * a bool in it), raised as the error class naming the policy and the method; the queue is then emptied. The
 * Python host checks the same (ArrayPolicy._bad_handles). */
#include "_lruhier.h"

enum { A_NONE, A_ADD, A_TOUCH, A_GONE };
#define QMAX 65536         /* queued runs past which a new run first hands the queue over */

typedef struct PyArr {
    PyObject *obj, *victims, *order, *check, *held, *clock, *err, *name, *flags;
    PyObject *ident;       /* identity: the handles' block numbers (int32 each), else NULL */
    Tier *ids;             /* identity: key -> block number (pin field) */
    int32_t nid;           /* the next block number */
    PyObject *s_start, *s_step;
    int blind;
    int64_t *runs;         /* queued runs: (first, count, reused) triples */
    int64_t nruns, rcap;   /* int64s used / allocated */
    int last, open;        /* what was queued last (A_*), and whether its run is still open */
    int64_t *hd;           /* per entry: its handle while the policy holds it, else -1 */
    int64_t hdcap;
    int32_t *h2e;          /* per handle: its entry (current while hd[h2e[h]] == h) */
    int64_t nh, h2cap;
    PyObject *vict;        /* victims' answer (a sequence, NULL for a range) while its handles are handed out */
    int64_t v0, vstep;     /* a range's start and step */
    Py_ssize_t vnext, vlen, want;
    char why[256];
} PyArr;

static void pa_fini(Tier *t) {
    PyArr *p = t->pa;
    if (!p) return;
    PyObject *objs[] = {p->obj, p->victims, p->order, p->check, p->held, p->clock, p->err, p->name, p->flags,
                        p->s_start, p->s_step, p->vict, p->ident};
    for (size_t i = 0; i < sizeof(objs) / sizeof(*objs); i++) Py_XDECREF(objs[i]);
    PyMem_Free(p->runs); PyMem_Free(p->hd); PyMem_Free(p->h2e);
    kstore_free(p->ids);
    PyMem_Free(p);
    t->pa = NULL;
}

/* identity (the class attribute): the policy's ident bytearray (empty) and the key store of block numbers; 0 or -1 */
static int pa_load_ident(PyArr *p) {
    PyObject *want = PyObject_GetAttrString(p->obj, "identity");
    int on = want ? PyObject_IsTrue(want) : -1;
    Py_XDECREF(want);
    if (on <= 0) return on;
    if (!(p->ident = PyObject_GetAttrString(p->obj, "ident"))) return -1;
    if (!PyByteArray_CheckExact(p->ident) || PyByteArray_GET_SIZE(p->ident)) {
        PyErr_SetString(PyExc_TypeError, "an ArrayPolicy's ident must be an empty bytearray when it is hosted");
        return -1;
    }
    return (p->ids = kstore_new()) ? 0 : -1;
}

/* data = (policy, clock or None, error class); 0 or -1 */
static int pa_load(Tier *t, PyObject *data) {
    PyObject *obj, *clock, *err;
    if (!PyArg_ParseTuple(data, "OOO", &obj, &clock, &err)) return -1;
    PyArr *p = t->pa = PyMem_Calloc(1, sizeof(PyArr));
    if (!p) { PyErr_NoMemory(); return -1; }
    Py_INCREF(obj); p->obj = obj;
    Py_INCREF(err); p->err = err;
    if (clock != Py_None) { Py_INCREF(clock); p->clock = clock; }
    if (!(p->victims = PyObject_GetAttrString(obj, "victims")) || !(p->order = PyObject_GetAttrString(obj, "order_handles"))
        || !(p->check = PyObject_GetAttrString(obj, "_check")) || !(p->held = PyObject_GetAttrString(obj, "held"))
        || !(p->name = PyObject_GetAttrString(obj, "name")) || !(p->flags = PyObject_GetAttrString(obj, "flags"))
        || !(p->s_start = PyUnicode_InternFromString("start")) || !(p->s_step = PyUnicode_InternFromString("step")))
        return -1;
    if (!PyByteArray_CheckExact(p->flags) || PyByteArray_GET_SIZE(p->flags)) {
        PyErr_SetString(PyExc_TypeError, "an ArrayPolicy's flags must be an empty bytearray when it is hosted");
        return -1;
    }
    PyObject *blind = PyObject_GetAttrString(obj, "reuse_blind");
    p->blind = blind ? PyObject_IsTrue(blind) : -1;
    Py_XDECREF(blind);
    return p->blind < 0 ? -1 : pa_load_ident(p);
}

/* grow *buf (elements of size sz, capacity *cap) to hold at least need; 0 or -1 (memory error set) */
static int pa_grow(void **buf, size_t sz, int64_t *cap, int64_t need) {
    if (need <= *cap) return 0;
    int64_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *b = PyMem_Realloc(*buf, sz * (size_t)c);
    if (!b) { PyErr_NoMemory(); return -1; }
    *buf = b;
    *cap = c;
    return 0;
}

/* the answer broke the handle contract: the error class naming the policy (handle h printed signed); -1 */
static int pa_broke(PyArr *p, const char *what, int64_t h, Py_ssize_t n) {
    PyObject *msg = PyUnicode_FromFormat("eviction policy %R broke the contract of pcs/cache/policies/array.py: %s "
                                         "(handle %lld, n = %zd)", p->name, what, (long long)h, n);
    if (msg) { PyErr_SetObject(p->err, msg); Py_DECREF(msg); }
    return -1;
}

/* the answer r of call ("victims(13)", "order_handles()") is not a list, tuple or range: the error class naming the
 * policy and r's type, as the Python host (ArrayPolicy._bad_handles); -1 */
static int pa_broke_type(PyArr *p, const char *call, PyObject *r) {
    const char *type = Py_TYPE(r)->tp_name, *article = pyhost_article(type);
    PyObject *msg = PyUnicode_FromFormat("eviction policy %R broke the contract of pcs/cache/policies/array.py: %s must "
                                         "return a list, tuple or range of handles (got %s %s)", p->name, call,
                                         article, type);   /* the article as pcs.units.a_or_an's */
    if (msg) { PyErr_SetObject(p->err, msg); Py_DECREF(msg); }
    return -1;
}

/* the flags' byte of handle h if the bytearray still holds it (a policy may have shrunk it), else NULL */
static char *pa_byte(PyArr *p, int64_t h) {
    return h >= 0 && h < PyByteArray_GET_SIZE(p->flags) ? PyByteArray_AS_STRING(p->flags) + h : NULL;
}

/* the flags' byte of handle h (the bytearray grown, zeros, to hold it); NULL on error (a held export of flags:
 * the policy's error, docs/policies.md) */
static char *pa_flag(PyArr *p, int64_t h) {
    Py_ssize_t size = PyByteArray_GET_SIZE(p->flags);
    if (h >= size) {
        Py_ssize_t c = size ? size : 1024;
        while (c <= h) c *= 2;
        if (PyByteArray_Resize(p->flags, c) < 0) {
            if (PyErr_ExceptionMatches(PyExc_BufferError)) {
                PyErr_Clear();
                pa_broke(p, "flags could not be grown: do not hold a memoryview or np.frombuffer of flags across "
                         "calls", h, 0);
            }
            return NULL;
        }
        memset(PyByteArray_AS_STRING(p->flags) + size, 0, (size_t)(c - size));
    }
    return PyByteArray_AS_STRING(p->flags) + h;
}

/* entry e's handle slot, made on first use (-1: none); NULL on memory error */
static int64_t *pa_hd(PyArr *p, int32_t e) {
    int64_t cap = p->hdcap;
    if (e >= cap) {
        if (pa_grow((void **)&p->hd, sizeof(int64_t), &cap, (int64_t)e + 1) < 0) return NULL;
        for (int64_t i = p->hdcap; i < cap; i++) p->hd[i] = -1;
        p->hdcap = cap;
    }
    return &p->hd[e];
}

/* the queued runs as a list of (first, count, reused) tuples (emptied), or NULL */
static PyObject *pa_runs(PyArr *p) {
    PyObject *runs = PyList_New(p->nruns / 3);
    for (int64_t i = 0; runs && i < p->nruns / 3; i++) {
        const int64_t *r = p->runs + 3 * i;
        PyObject *tup = PyTuple_New(3), *a = PyLong_FromLongLong(r[0]), *b = PyLong_FromLongLong(r[1]);
        if (!tup || !a || !b) { Py_XDECREF(tup); Py_XDECREF(a); Py_XDECREF(b); Py_CLEAR(runs); break; }
        PyTuple_SET_ITEM(tup, 0, a);
        PyTuple_SET_ITEM(tup, 1, b);
        PyTuple_SET_ITEM(tup, 2, Py_NewRef(r[2] ? Py_True : Py_False));
        PyList_SET_ITEM(runs, i, tup);
    }
    p->nruns = 0;
    p->last = A_NONE;
    return runs;
}

/* whether obj.attr is still o (identity; an error reading it is cleared: not the same) */
static int pa_same(PyObject *obj, const char *attr, PyObject *o) {
    PyObject *f = PyObject_GetAttrString(obj, attr);
    int same = f == o;
    Py_XDECREF(f);
    PyErr_Clear();
    return same;
}

/* victims(n, queued runs): the policy's answer (a new reference), or NULL (the error class set; also when the
 * policy rebound or shrank its flags during the call) */
static PyObject *pa_call(Tier *t, Py_ssize_t n) {
    PyArr *p = t->pa;
    if (PyErr_Occurred()) return NULL;
    PyObject *runs = pa_runs(p), *nn = PyLong_FromSsize_t(n), *r = NULL;
    PyObject *args[2] = {nn, runs};
    if (runs && nn && pyhost_clock(p->clock, *t->clock) == 0) r = PyObject_Vectorcall(p->victims, args, 2, NULL);
    Py_XDECREF(nn); Py_XDECREF(runs);
    if (!r) return pyhost_fail(p->err, p->name, "victims"), NULL;
    if (!pa_same(p->obj, "flags", p->flags)) {          /* still the host's bytearray (identity)? */
        Py_CLEAR(r);
        pa_broke(p, "flags replaced by the policy (self.flags is the host's bytearray, written by the host only)",
                 p->nh, n);
    } else if (p->ident && !pa_same(p->obj, "ident", p->ident)) {
        Py_CLEAR(r);
        pa_broke(p, "ident replaced by the policy (self.ident is the host's bytearray, written by the host only)",
                 p->nh, n);
    } else if (PyByteArray_GET_SIZE(p->flags) < p->nh) {
        Py_CLEAR(r);
        pa_broke(p, "flags resized by the policy (they are written by the host only)", p->nh, n);
    } else if (p->ident && PyByteArray_GET_SIZE(p->ident) < 4 * p->nh) {
        Py_CLEAR(r);
        pa_broke(p, "ident resized by the policy (it is written by the host only)", p->nh, n);
    }
    return r;
}

/* hand the queued runs over: victims(0, runs); 0 or -1 */
static int pa_flush(Tier *t) {
    PyArr *p = t->pa;
    if (!p->nruns) return PyErr_Occurred() ? -1 : 0;
    PyObject *r = pa_call(t, 0);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* identity: write entry e's block number (made on first sight) as handle h's in ident (grown, zeros); 0 or -1 */
static int pa_number(Tier *t, int64_t h, int32_t e) {
    PyArr *p = t->pa;
    uint64_t key = t->ent[e].key;
    int32_t s = tfind(p->ids, key), id = s >= 0 ? p->ids->ent[s].pin : p->nid;
    if (s < 0 && (tadd(p->ids, key, id) < 0 || ++p->nid < 0)) return PyErr_Occurred() ? -1 : (PyErr_NoMemory(), -1);
    Py_ssize_t size = PyByteArray_GET_SIZE(p->ident), need = (Py_ssize_t)(4 * (h + 1));
    if (need > size) {
        Py_ssize_t c = size ? size : 4096;
        while (c < need) c *= 2;
        if (PyByteArray_Resize(p->ident, c) < 0) {
            if (PyErr_ExceptionMatches(PyExc_BufferError)) {
                PyErr_Clear();
                pa_broke(p, "ident could not be grown: do not hold a memoryview or np.frombuffer of ident across "
                         "calls", h, 0);
            }
            return -1;
        }
        memset(PyByteArray_AS_STRING(p->ident) + size, 0, (size_t)(c - size));
    }
    memcpy(PyByteArray_AS_STRING(p->ident) + 4 * h, &id, 4);
    return 0;
}

/* identity: entry e's block number ends (a drop, a pinned block leaving): the block is numbered anew */
static void pa_unnumber(Tier *t, int32_t e) {
    PyArr *p = t->pa;
    if (p->ids) (void)kset_take(p->ids, t->ent[e].key);
}

/* name the next handle for entry e, in the run of kind (joining the last run as the rules above say); 0 or -1 */
static int pa_name(Tier *t, int kind, int flag, int32_t e) {
    PyArr *p = t->pa;
    int join = p->last == kind && (kind == A_ADD ? p->blind || (p->open && p->runs[p->nruns - 1] == flag) : p->open);
    if (!join && p->nruns / 3 > QMAX && pa_flush(t) < 0) return -1;
    int64_t *h = pa_hd(p, e);
    char *f = pa_flag(p, p->nh);
    if (!h || !f || pa_grow((void **)&p->runs, sizeof(int64_t), &p->rcap, p->nruns + 3) < 0
        || pa_grow((void **)&p->h2e, sizeof(int32_t), &p->h2cap, p->nh + 1) < 0
        || (p->ids && pa_number(t, p->nh, e) < 0)) return -1;
    if (join) p->runs[p->nruns - 2]++;
    else {
        p->runs[p->nruns++] = p->nh; p->runs[p->nruns++] = 1; p->runs[p->nruns++] = flag;
    }
    p->last = kind;
    p->open = 1;
    *f = 1;
    *h = p->nh;
    p->h2e[p->nh++] = e;
    return 0;
}

/* entry e's handle goes (if it has one): its flag cleared; a remove or drop (mark; not a touch's rename) ends the
 * runs' joining */
static void pa_gone(Tier *t, int32_t e, int mark) {
    PyArr *p = t->pa;
    if (mark) p->last = A_GONE;
    if (e >= p->hdcap || p->hd[e] < 0) return;
    char *f = pa_byte(p, p->hd[e]);
    if (f) *f = 0;                          /* a shrunk flags is reported at the next call (pa_call) */
    p->hd[e] = -1;
}

static int pa_add(Tier *t, int32_t e, int reused) { return pa_name(t, A_ADD, reused, e); }

static void pa_close(Tier *t, int kind) {
    PyArr *p = t->pa;
    if (p->last == kind) p->open = 0;
}

static void pa_add_end(Tier *t, int reused) { (void)reused; pa_close(t, A_ADD); }
static void pa_touch_end(Tier *t) { pa_close(t, A_TOUCH); }

static void pa_forget(Tier *t, int32_t e) { pa_gone(t, e, 1); }
static void pa_drop(Tier *t, int32_t e) { pa_gone(t, e, 1); pa_unnumber(t, e); }

/* void: a memory error is left set for the next reporting call (tier.c never sees it otherwise) */
static void pa_touch(Tier *t, int32_t e) {
    pa_gone(t, e, 0);
    (void)pa_name(t, A_TOUCH, 1, e);
}

static void pa_evict_begin(Tier *t, Py_ssize_t n) { t->pa->want = n; }

/* victims(want) once the queue is handed over: a range's bounds or a sequence of want handles kept; 0 or -1 */
static int pa_ask(Tier *t) {
    PyArr *p = t->pa;
    PyObject *r = pa_call(t, p->want);
    if (!r) return -1;
    if (r == Py_None) {
        Py_DECREF(r);
        return pyhost_broke_count(p->err, p->name, "array.py", "victims", p->want, -1, "handle");
    }
    if (PyObject_TypeCheck(r, &PyRange_Type)) {
        PyObject *a = PyObject_GetAttr(r, p->s_start), *s = PyObject_GetAttr(r, p->s_step);
        p->v0 = a ? PyLong_AsLongLong(a) : -1;
        p->vstep = s ? PyLong_AsLongLong(s) : -1;
        p->vlen = PyObject_Length(r);
        Py_XDECREF(a); Py_XDECREF(s); Py_DECREF(r);
        if (PyErr_Occurred()) return pyhost_fail(p->err, p->name, "victims");
    } else if (PyList_Check(r) || PyTuple_Check(r)) {
        p->vict = PySequence_Fast(r, "victims(n) must return a list, tuple or range");
        Py_DECREF(r);
        if (!p->vict) return pyhost_fail(p->err, p->name, "victims");
        p->vlen = PySequence_Fast_GET_SIZE(p->vict);
    } else {
        char call[48];
        snprintf(call, sizeof call, "victims(%zd)", p->want);
        int rc = pa_broke_type(p, call, r);
        Py_DECREF(r);
        return rc;
    }
    p->vnext = 0;
    if (p->vlen != p->want) {
        Py_CLEAR(p->vict);
        return pyhost_broke_count(p->err, p->name, "array.py", "victims", p->want, p->vlen, "handle");
    }
    return 0;
}

/* handle h's entry if the tier holds it unpinned under that handle, else -1 */
static int32_t pa_entry(Tier *t, int64_t h) {
    PyArr *p = t->pa;
    if (h < 0 || h >= p->nh) return -1;
    int32_t e = p->h2e[h];
    const char *f = pa_byte(p, h);
    return e < p->hdcap && p->hd[e] == h && f && *f && !t->ent[e].pin
           && !OUT(&t->ent[e]) ? e : -1;
}

/* the next victim of victims(want): an entry the tier holds unpinned, or -1 (error set) */
static int32_t pa_victim(Tier *t) {
    PyArr *p = t->pa;
    if (p->vnext == 0 && pa_ask(t) < 0) return -1;
    PyObject *o = p->vict ? PySequence_Fast_GET_ITEM(p->vict, p->vnext) : NULL, *i = o ? pyhost_index(o) : NULL;
    int64_t h = !o ? p->v0 + p->vstep * p->vnext : i ? PyLong_AsLongLong(i) : -1;
    int32_t e = (o && !i) || (h == -1 && PyErr_Occurred()) ? -1 : pa_entry(t, h);
    int ix = i != NULL;                     /* an index (pyhost_index) */
    Py_XDECREF(i);
    Py_XINCREF(o);
    if (++p->vnext == p->vlen) { Py_CLEAR(p->vict); p->vnext = 0; }
    if (e < 0) {
        PyErr_Clear();
        Py_CLEAR(p->vict);
        p->vnext = 0;
        const char *what = "victims(n) returned a handle the tier does not hold unpinned (or twice)";
        if (!o) return pa_broke(p, what, h, p->want);
        if (!ix) pyhost_broke_ans(p->err, p->name, "array.py", "victims(n) returned a bool or a non-int, not a "
                                 "handle", "answer", o, p->want);
        else pyhost_broke_ans(p->err, p->name, "array.py", what, "handle", o, p->want);
        Py_DECREF(o);
        return -1;
    }
    Py_XDECREF(o);
    p->hd[e] = -1;                          /* the mechanism deletes the entry next */
    *pa_byte(p, h) = 0;                     /* pa_entry found the byte */
    return e;
}

/* what is wrong with item o of order_handles()'s answer (its entry into *e, its handle into *h), or NULL: an int
 * (not a bool) naming a handle held unpinned (an int beyond int64 names none), not named before in the answer
 * (F_VISITED marks the entries named; the caller clears them) */
static const char *pa_order_item(Tier *t, PyObject *o, int64_t *h, int32_t *e) {
    *e = -1;
    *h = -1;
    if (PyBool_Check(o)) return "order_handles() returned a bool, not an int handle";
    PyObject *i = pyhost_index(o);                      /* the rule of both hosts: anything with __index__ */
    if (!i) return "order_handles() returned a non-int, not a handle";
    *h = PyLong_AsLongLong(i);
    Py_DECREF(i);
    PyErr_Clear();                                      /* overflow: -1, a handle never named */
    if ((*e = pa_entry(t, *h)) < 0) return "order_handles() returned a handle the tier does not hold unpinned";
    if (t->ent[*e].flags & F_VISITED) return "order_handles() returned a handle twice";
    t->ent[*e].flags |= F_VISITED;
    return NULL;
}

/* order_handles(): the held entries, first victim first: a list, tuple or range of every handle the policy holds,
 * each once (pa_order_item); their count, or -1 (the error class set) */
static Py_ssize_t pa_order(Tier *t, int32_t *out) {
    PyArr *p = t->pa;
    if (pa_flush(t) < 0) return -1;
    PyObject *r = PyObject_CallNoArgs(p->order);
    if (!r) return pyhost_fail(p->err, p->name, "order_handles");
    if (!(PyList_Check(r) || PyTuple_Check(r) || PyObject_TypeCheck(r, &PyRange_Type))) {
        int rc = pa_broke_type(p, "order_handles()", r);
        Py_DECREF(r);
        return rc;
    }
    PyObject *l = PySequence_Fast(r, "");
    Py_DECREF(r);
    if (!l) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(l), held = t->held - (t->ret ? t->ret->len : 0), i = 0;
    const char *why = n > held ? "order_handles() returned more handles than the policy holds" : NULL;
    int64_t h = 0;
    for (; i < n && !why; i++) why = pa_order_item(t, PySequence_Fast_GET_ITEM(l, i), &h, &out[i]);
    for (Py_ssize_t k = 0; k < i; k++) if (out[k] >= 0) t->ent[out[k]].flags &= ~F_VISITED;
    Py_DECREF(l);
    if (!why && n < held) why = "order_handles() returned fewer handles than the policy holds";
    return why ? pa_broke(p, why, h, n) : n;
}

static const char *pa_check(Tier *t) { return pyhost_check(t, pa_order, t->pa->held, t->pa->check, t->pa->why); }

static int pa_sync(Tier *t) { return pa_flush(t); }

const PolOps POL_PYARR = {
    .name = "pyarr", .fini = pa_fini, .add = pa_add, .add_end = pa_add_end, .remove = pa_forget, .drop = pa_drop,
    .touch = pa_touch, .touch_end = pa_touch_end, .evict_begin = pa_evict_begin, .victim = pa_victim,
    .order = pa_order, .check = pa_check, .load = pa_load, .sync = pa_sync,
    .forget = pa_unnumber,
};
