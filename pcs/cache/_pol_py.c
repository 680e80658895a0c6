/* py: an eviction policy written in Python (a plug-in, a subclass, any EvictionPolicy without a compiled twin)
 * hosted by the compiled hierarchy: the mechanism (pcs/cache/_lruhier.c) and the step loop stay in C, only the
 * policy's own decisions are Python. pcs/cache/native.py policy_spec gives ("py", (), (policy, expects, clock,
 * error class)); docs/semantics.md §15.
 *
 * Batches. The mechanism's per-block calls are gathered into the calls pcs/cache/tier.py makes: one
 * add(keys, reused) per add ... add_end, one touch(keys) per touch ... touch_end, one expect(keys) per expect_begin
 * ... (only when the policy overrides expect, as Tier._expects), and adjacent removes (drops) into one
 * remove (drop) call -- per-key operations (EvictionPolicy contract, pcs/cache/policies/base.py); a reuse_blind
 * policy's consecutive adds are one call, as Tier._add_in_runs merges them. Keys keep the mechanism's order.
 *
 * When. The batches wait in a queue and are handed over in order when the policy must decide -- the first victim
 * after evict_begin(n) calls evict(n) --, when its order or check is read, when the queue holds more than QMAX
 * keys (at an add or an expect), and at sync (NativeHierarchy.sync: the end of a run). So every Python call
 * happens inside a mechanism call that reports errors (victim, order, add, expect return -1). Each batch carries
 * the request clock of its first call, written to the policy's PolicyContext clock (``now``) before the call
 * (policies that read the trace, pcs/cache/policies/context.py).
 *
 * Keys. The queue holds the key objects (Python ints) it will hand over; each entry keeps its key object from its
 * first hand-over until it leaves the tier (victim, drop), so the policy gets the same object for a block each
 * time (no new int per call; its dict lookups meet the stored object).
 *
 * Errors. An exception raised by the policy, or an answer that breaks the contract (evict(n) not n distinct
 * blocks the tier holds unpinned, order() a block it does not hold), is raised as the error class given at load
 * (pcs.errors.PolicyError, a ValueError: one line at the CLI) naming the policy and the method, the policy's
 * exception as its cause. The queue is then emptied: the hierarchy is unusable after an error, but memory-safe. */
#include <ctype.h>

#include "_lruhier.h"

enum { K_ADD, K_REMOVE, K_DROP, K_TOUCH, K_EXPECT, NKIND };
static const char *const METHOD[NKIND] = {"add", "remove", "drop", "touch", "expect"};
#define QMAX 65536         /* queued keys that make an add or an expect hand the closed batches over */

typedef struct {
    uint8_t kind, flag, open;
    int64_t clock;         /* the request clock at the batch's first call */
    Py_ssize_t start, len; /* items[start .. start + len) */
} Batch;

typedef struct PyPol {
    PyObject *obj, *meth[NKIND], *evict, *order, *check, *clock, *err, *name;
    int expects, blind;
    PyObject **items;      /* the queued key objects (new references) */
    Py_ssize_t nkeys, kcap;
    PyObject **kobj;       /* per entry: its key object (a reference) while it is in the tier, or NULL */
    Py_ssize_t ocap;
    Batch *q;
    Py_ssize_t nq, qcap;
    PyObject *vict;        /* evict's answer (a list) while its victims are handed out */
    Py_ssize_t vnext, want;
    char why[256];         /* check's message */
} PyPol;

static void py_fini(Tier *t) {
    PyPol *p = t->py;
    if (!p) return;
    Py_XDECREF(p->obj);
    for (int k = 0; k < NKIND; k++) Py_XDECREF(p->meth[k]);
    Py_XDECREF(p->evict); Py_XDECREF(p->order); Py_XDECREF(p->check);
    Py_XDECREF(p->clock); Py_XDECREF(p->err); Py_XDECREF(p->name);
    Py_XDECREF(p->vict);
    for (Py_ssize_t i = 0; i < p->nkeys; i++) Py_DECREF(p->items[i]);
    for (Py_ssize_t i = 0; i < p->ocap; i++) Py_XDECREF(p->kobj[i]);
    PyMem_Free(p->items);
    PyMem_Free(p->kobj);
    PyMem_Free(p->q);
    PyMem_Free(p);
    t->py = NULL;
}

/* data = (policy, expects, clock or None, error class); 0 or -1 */
static int py_load(Tier *t, PyObject *data) {
    PyObject *obj, *clock, *err;
    int expects;
    if (!PyArg_ParseTuple(data, "OpOO", &obj, &expects, &clock, &err)) return -1;
    PyPol *p = t->py = PyMem_Calloc(1, sizeof(PyPol));
    if (!p) { PyErr_NoMemory(); return -1; }
    Py_INCREF(obj); p->obj = obj;
    Py_INCREF(err); p->err = err;
    if (clock != Py_None) { Py_INCREF(clock); p->clock = clock; }
    p->expects = expects;
    for (int k = 0; k < NKIND; k++)
        if (!(p->meth[k] = PyObject_GetAttrString(obj, METHOD[k]))) return -1;
    if (!(p->evict = PyObject_GetAttrString(obj, "evict")) || !(p->order = PyObject_GetAttrString(obj, "order"))
        || !(p->check = PyObject_GetAttrString(obj, "_check")) || !(p->name = PyObject_GetAttrString(obj, "name")))
        return -1;
    PyObject *blind = PyObject_GetAttrString(obj, "reuse_blind");
    p->blind = blind ? PyObject_IsTrue(blind) : -1;
    Py_XDECREF(blind);
    return p->blind < 0 ? -1 : 0;
}

/* whether exception val is one a policy's call lets through unnamed (pcs.errors.STOPS: Ctrl-C, a signal); looked
 * up at the failure only (no error left set) */
static int pyhost_stop(PyObject *val) {
    PyObject *m = PyImport_ImportModule("pcs.errors"), *stops = m ? PyObject_GetAttrString(m, "STOPS") : NULL;
    int r = stops ? PyObject_IsInstance(val, stops) : -1;
    Py_XDECREF(stops); Py_XDECREF(m);
    if (r < 0) {
        PyErr_Clear();
        r = PyErr_GivenExceptionMatches(val, PyExc_KeyboardInterrupt);
    }
    return r;
}

/* "a" or "an" before word, a type's name (never a number), as pcs.units.a_or_an: "a" before "uni", "use", "usu",
 * "uint", "one", "eu"; "an" before "hour", "honest", "nd" (read "en-dee"); else "an" before a vowel letter, any
 * case; "" for an empty word. Shared with pcs/cache/_pol_pyarr.c */
const char *pyhost_article(const char *word) {
    static const char *const a_before[] = {"uni", "use", "usu", "uint", "one", "eu"};
    static const char *const an_before[] = {"hour", "honest", "nd", "xml"};
    char low[8] = {0};
    size_t i;
    for (i = 0; i < sizeof low - 1 && word[i]; i++) low[i] = (char)tolower((unsigned char)word[i]);
    if (!low[0]) return "";
    for (i = 0; i < sizeof a_before / sizeof *a_before; i++)
        if (!strncmp(low, a_before[i], strlen(a_before[i]))) return "a";
    for (i = 0; i < sizeof an_before / sizeof *an_before; i++)
        if (!strncmp(low, an_before[i], strlen(an_before[i]))) return "an";
    return strchr("aeiou", low[0]) ? "an" : "a";
}

/* the error raised by the policy (set, any BaseException) -> the error class err naming the policy and the method,
 * chained to it; Ctrl-C and a signal's pcs.errors.Stopped are left as they are (pyhost_stop); shared with
 * pcs/cache/_pol_pyarr.c */
int pyhost_fail(PyObject *err, PyObject *name, const char *method) {
    PyObject *tp, *val, *tb;
    PyErr_Fetch(&tp, &val, &tb);
    PyErr_NormalizeException(&tp, &val, &tb);
    if (val && pyhost_stop(val)) {          /* not the policy's: raised on as it is (the CLI: 130 / 143) */
        PyErr_Restore(tp, val, tb);
        return -1;
    }
    if (tb) PyException_SetTraceback(val, tb);
    PyObject *e = PyObject_CallFunction(err, "N", PyUnicode_FromFormat(
        "eviction policy %R raised %s in %s(): %S", name, Py_TYPE(val)->tp_name, method, val));
    if (e) {
        PyException_SetCause(e, val);       /* steals val */
        PyErr_SetObject(err, e);
        Py_DECREF(e);
    } else Py_XDECREF(val);
    Py_XDECREF(tp);
    Py_XDECREF(tb);
    return -1;
}

/* a contract error naming the policy (the error class err); -1; shared with pcs/cache/_pol_pyarr.c */
int pyhost_broke(PyObject *err, PyObject *name, const char *what, unsigned long long key, Py_ssize_t n) {
    PyObject *msg = PyUnicode_FromFormat("eviction policy %R broke the contract of pcs/cache/policies/base.py: %s "
                                         "(block %llu, n = %zd)", name, what, key, n);
    if (msg) { PyErr_SetObject(err, msg); Py_DECREF(msg); }
    return -1;
}

/* a contract error for the whole answer of call(n) (evict, victims): None (got < 0) or got items, not n (unit: the
 * item's name, singular); it names what was asked and what came back, never a block (the answer holds none to
 * name); -1; the Python hosts' broke_count (pcs/cache/policyguard.py) words it alike; shared with _pol_pyarr.c */
int pyhost_broke_count(PyObject *err, PyObject *name, const char *file, const char *call, Py_ssize_t n,
                       Py_ssize_t got, const char *unit) {
    PyObject *msg = got < 0
        ? PyUnicode_FromFormat("eviction policy %R broke the contract of pcs/cache/policies/%s: %s(%zd) returned None "
                               "though the tier holds at least %zd unpinned %s%s", name, file, call, n, n, unit,
                               n == 1 ? "" : "s")
        : PyUnicode_FromFormat("eviction policy %R broke the contract of pcs/cache/policies/%s: %s(%zd) returned %zd "
                               "%s%s, not %zd", name, file, call, n, got, unit, got == 1 ? "" : "s", n);
    if (msg) { PyErr_SetObject(err, msg); Py_DECREF(msg); }
    return -1;
}

/* a contract error naming the policy and printing the item of its answer as given (ans, %R, after label: "block",
 * "handle", or "answer" for one that is neither); -1; shared with pcs/cache/_pol_pyarr.c (file: the contract's
 * module under pcs/cache/policies/) */
int pyhost_broke_ans(PyObject *err, PyObject *name, const char *file, const char *what, const char *label,
                     PyObject *ans, Py_ssize_t n) {
    PyObject *msg = PyUnicode_FromFormat("eviction policy %R broke the contract of pcs/cache/policies/%s: %s "
                                         "(%s %R, n = %zd)", name, file, what, label, ans, n);
    if (msg) { PyErr_SetObject(err, msg); Py_DECREF(msg); }
    return -1;
}

/* item o of an answer as an int (a new reference), or NULL (no error set): the one rule of both hosts for what
 * a policy may answer (docs/policies.md; pcs/cache/policyguard.py as_index): any object with __index__ (an int,
 * a numpy int) but a bool; a float, a str, None are refused. Shared with pcs/cache/_pol_pyarr.c */
PyObject *pyhost_index(PyObject *o) {
    if (PyBool_Check(o) || !PyIndex_Check(o)) return NULL;
    PyObject *i = PyNumber_Index(o);
    if (!i) PyErr_Clear();
    return i;
}

static int py_fail(PyPol *p, const char *method) { return pyhost_fail(p->err, p->name, method); }

static int py_broke(PyPol *p, const char *what, unsigned long long key, Py_ssize_t n) {
    return pyhost_broke(p->err, p->name, what, key, n);
}

/* the policy's clock object (if any) set to the request clock c; 0 or -1; shared with pcs/cache/_pol_pyarr.c */
int pyhost_clock(PyObject *clock, int64_t c) {
    if (!clock) return 0;
    PyObject *v = PyLong_FromLongLong(c);
    int rc = v ? PyObject_SetAttrString(clock, "now", v) : -1;
    Py_XDECREF(v);
    return rc;
}

/* entry e's key object (borrowed; made on first use, kept while e is in the tier), or NULL (error set) */
static PyObject *py_kobj(Tier *t, int32_t e) {
    PyPol *p = t->py;
    if (e >= p->ocap) {
        Py_ssize_t c = p->ocap ? p->ocap : 1024;
        while (c <= e) c *= 2;
        PyObject **o = PyMem_Realloc(p->kobj, sizeof(PyObject *) * c);
        if (!o) { PyErr_NoMemory(); return NULL; }
        memset(o + p->ocap, 0, sizeof(PyObject *) * (c - p->ocap));
        p->kobj = o;
        p->ocap = c;
    }
    if (!p->kobj[e]) p->kobj[e] = PyLong_FromUnsignedLongLong(t->ent[e].key);
    return p->kobj[e];
}

/* entry e leaves the tier: its key object goes */
static void py_forget(Tier *t, int32_t e) {
    PyPol *p = t->py;
    if (e < p->ocap) Py_CLEAR(p->kobj[e]);
}

/* append key object k (a new reference, stolen) to the batch of kind (joining the last one when the rules above
 * say so); 0 or -1 */
static int py_push(Tier *t, int kind, int flag, PyObject *k) {
    PyPol *p = t->py;
    if (!k) return -1;
    Batch *b = p->nq ? &p->q[p->nq - 1] : NULL;
    int join = b && b->kind == kind && (kind == K_REMOVE || kind == K_DROP || (kind == K_ADD && p->blind)
                                        || (b->open && b->flag == flag));
    if (p->nkeys == p->kcap) {
        Py_ssize_t c = p->kcap ? 2 * p->kcap : 1024;
        PyObject **it = PyMem_Realloc(p->items, sizeof(PyObject *) * c);
        if (!it) { Py_DECREF(k); PyErr_NoMemory(); return -1; }
        p->items = it;
        p->kcap = c;
    }
    if (!join) {
        if (p->nq == p->qcap) {
            Py_ssize_t c = p->qcap ? 2 * p->qcap : 64;
            Batch *q = PyMem_Realloc(p->q, sizeof(Batch) * c);
            if (!q) { Py_DECREF(k); PyErr_NoMemory(); return -1; }
            p->q = q;
            p->qcap = c;
        }
        b = &p->q[p->nq++];
        *b = (Batch){(uint8_t)kind, (uint8_t)flag, 1, *t->clock, p->nkeys, 0};
    }
    p->items[p->nkeys++] = k;
    b->len++;
    return 0;
}

/* push entry e's key object */
static int py_push_e(Tier *t, int kind, int flag, int32_t e) {
    PyObject *k = py_kobj(t, e);
    Py_XINCREF(k);
    return py_push(t, kind, flag, k);
}

/* one batch handed to the policy (its items' references move to the list); 0 or -1 (the error class set) */
static int py_call(PyPol *p, const Batch *b) {
    PyObject *l = PyList_New(b->len);
    if (!l) return -1;
    memcpy(((PyListObject *)l)->ob_item, p->items + b->start, sizeof(PyObject *) * b->len);
    PyObject *args[2] = {l, b->flag ? Py_True : Py_False};
    PyObject *r = pyhost_clock(p->clock, b->clock) < 0 ? NULL
                  : PyObject_Vectorcall(p->meth[b->kind], args, b->kind == K_ADD ? 2 : 1, NULL);
    Py_DECREF(l);
    if (!r) return py_fail(p, METHOD[b->kind]);
    Py_DECREF(r);
    return 0;
}

/* hand the queued batches to the policy, in order, all but the last `keep`; 0 or -1 (the queue emptied) */
static int py_flush(Tier *t, Py_ssize_t keep) {
    PyPol *p = t->py;
    Py_ssize_t n = p->nq - keep, i = 0;
    if (n <= 0) return 0;
    for (; i < n; i++) {
        const Batch *b = &p->q[i];
        if (b->len ? py_call(p, b) < 0 : 0) break;
    }
    Py_ssize_t from = keep ? p->q[n].start : p->nkeys;
    if (i < n) {                          /* the batches not handed over: their references go */
        for (Py_ssize_t j = p->q[i].start + p->q[i].len; j < p->nkeys; j++) Py_DECREF(p->items[j]);
        p->nq = p->nkeys = 0;
        return -1;
    }
    memmove(p->items, p->items + from, sizeof(PyObject *) * (p->nkeys - from));
    p->nkeys -= from;
    for (Py_ssize_t j = 0; j < keep; j++) {
        p->q[j] = p->q[n + j];
        p->q[j].start -= from;
    }
    p->nq = keep;
    return 0;
}

static int py_add(Tier *t, int32_t e, int reused) {
    if (py_push_e(t, K_ADD, reused, e) < 0) return -1;
    return t->py->nkeys > QMAX ? py_flush(t, 1) : 0;
}

static void py_close(Tier *t, int kind) {
    PyPol *p = t->py;
    if (p->nq && p->q[p->nq - 1].kind == kind) p->q[p->nq - 1].open = 0;
}

static void py_add_end(Tier *t, int reused) { (void)reused; py_close(t, K_ADD); }
static void py_touch_end(Tier *t) { py_close(t, K_TOUCH); }

/* void calls: a memory error is left set for the next reporting call (tier.c never sees it otherwise) */
static void py_remove(Tier *t, int32_t e) { (void)py_push_e(t, K_REMOVE, 0, e); }
static void py_touch(Tier *t, int32_t e) { (void)py_push_e(t, K_TOUCH, 0, e); }

static void py_drop(Tier *t, int32_t e) {
    (void)py_push_e(t, K_DROP, 0, e);
    py_forget(t, e);                        /* the mechanism deletes the entry next */
}

static int py_expect_begin(Tier *t) {
    py_close(t, K_EXPECT);                  /* the keys that follow are a new expect(keys) call */
    return 0;
}

static int py_expect(Tier *t, uint64_t key) {
    if (!t->py->expects) return 0;
    if (py_push(t, K_EXPECT, 0, PyLong_FromUnsignedLongLong(key)) < 0) return -1;
    return t->py->nkeys > QMAX ? py_flush(t, 1) : 0;
}

static void py_evict_begin(Tier *t, Py_ssize_t n) { t->py->want = n; }

/* evict(want) once the queue is handed over: its answer kept as a list of want keys; 0 or -1 */
static int py_ask(Tier *t) {
    PyPol *p = t->py;
    if (PyErr_Occurred() || py_flush(t, 0) < 0 || pyhost_clock(p->clock, *t->clock) < 0) return -1;
    PyObject *r = PyObject_CallFunction(p->evict, "n", p->want);
    if (!r) return py_fail(p, "evict");
    if (r == Py_None) {
        Py_DECREF(r);
        return pyhost_broke_count(p->err, p->name, "base.py", "evict", p->want, -1, "block");
    }
    if (PyUnicode_Check(r) || PyBytes_Check(r)) {      /* iterable, but no list of keys: as GuardedPolicy.evict */
        PyObject *msg = PyUnicode_FromFormat("eviction policy %R broke the contract of pcs/cache/policies/base.py: "
                                             "evict(%zd) returned %s %s, not a list of %zd block%s or None", p->name,
                                             p->want, pyhost_article(Py_TYPE(r)->tp_name), Py_TYPE(r)->tp_name,
                                             p->want, p->want == 1 ? "" : "s");
        if (msg) { PyErr_SetObject(p->err, msg); Py_DECREF(msg); }
        Py_DECREF(r);
        return -1;
    }
    PyObject *l = PyList_CheckExact(r) ? r : PySequence_List(r);
    if (l != r) Py_DECREF(r);
    if (!l) return py_fail(p, "evict");
    if (PyList_GET_SIZE(l) != p->want) {
        Py_ssize_t got = PyList_GET_SIZE(l);
        Py_DECREF(l);
        return pyhost_broke_count(p->err, p->name, "base.py", "evict", p->want, got, "block");
    }
    p->vict = l;
    p->vnext = 0;
    return 0;
}

/* the next victim of evict(want): an entry the tier holds unpinned, or -1 (error set) */
static int32_t py_victim(Tier *t) {
    PyPol *p = t->py;
    if (!p->vict && py_ask(t) < 0) return -1;
    PyObject *k = PyList_GET_ITEM(p->vict, p->vnext), *i = pyhost_index(k);
    uint64_t key = i ? PyLong_AsUnsignedLongLong(i) : 0;
    int32_t e = !i || (key == (uint64_t)-1 && PyErr_Occurred()) ? -1 : tfind(t, key);
    int ix = i != NULL;                     /* an index (pyhost_index) */
    Py_XDECREF(i);
    Py_INCREF(k);
    if (++p->vnext == PyList_GET_SIZE(p->vict)) Py_CLEAR(p->vict);
    if (e < 0 || t->ent[e].pin || OUT(&t->ent[e])) {
        PyErr_Clear();
        Py_CLEAR(p->vict);
        if (!ix) pyhost_broke_ans(p->err, p->name, "base.py", "evict(n) returned a bool or a non-int, not a block",
                                 "answer", k, p->want);
        else pyhost_broke_ans(p->err, p->name, "base.py", "evict(n) returned a block the tier does not hold "
                              "unpinned (or twice)", "block", k, p->want);
        Py_DECREF(k);
        return -1;
    }
    Py_DECREF(k);
    py_forget(t, e);                        /* the mechanism deletes the entry next */
    return e;
}

/* order(): the held entries, first victim first; every one held unpinned, at most t->held of them; -1 on error */
static Py_ssize_t py_order(Tier *t, int32_t *out) {
    PyPol *p = t->py;
    if (PyErr_Occurred() || py_flush(t, 0) < 0) return -1;
    PyObject *r = PyObject_CallNoArgs(p->order);
    PyObject *l = r ? PySequence_Fast(r, "order() must return a sequence") : NULL;
    Py_XDECREF(r);
    if (!l) return py_fail(p, "order");
    Py_ssize_t n = PySequence_Fast_GET_SIZE(l), bad = n > t->held;
    uint64_t key = 0;
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        PyObject *ix = pyhost_index(PySequence_Fast_GET_ITEM(l, i));
        key = ix ? PyLong_AsUnsignedLongLong(ix) : (uint64_t)-1;
        Py_XDECREF(ix);
        int32_t e = !ix || (key == (uint64_t)-1 && PyErr_Occurred()) ? -1 : tfind(t, key);
        bad = e < 0 || t->ent[e].pin || OUT(&t->ent[e]);
        out[i] = e;
    }
    Py_DECREF(l);
    PyErr_Clear();
    if (bad) return py_broke(p, "order() holds a block the tier does not hold unpinned, or too many", key, n);
    return n;
}

/* the message of the error set (cleared) in why[256], prefixed; shared with pcs/cache/_pol_pyarr.c */
const char *pyhost_why(char *why, const char *prefix) {
    PyObject *tp, *val, *tb;
    PyErr_Fetch(&tp, &val, &tb);
    PyObject *s = val ? PyObject_Str(val) : NULL;
    PyOS_snprintf(why, 256, "%s: %s", prefix, s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "?");
    Py_XDECREF(s); Py_XDECREF(tp); Py_XDECREF(val); Py_XDECREF(tb);
    PyErr_Clear();
    return why;
}

/* a hosted policy's _check() (check), its count == held (count: the policy, whose len() it is, or a method that
 * returns it: ArrayPolicy.held), and its order (the order op) = the held blocks, each once; NULL if sound, else what
 * is wrong (why: 256 chars); shared with pcs/cache/_pol_pyarr.c */
const char *pyhost_check(Tier *t, Py_ssize_t (*order)(Tier *, int32_t *), PyObject *count, PyObject *check,
                         char *why) {
    int32_t *buf = PyMem_Malloc(sizeof(int32_t) * (t->nres + 1));
    if (!buf) return "no memory";
    Py_ssize_t n = order(t, buf), distinct = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        distinct += !(t->ent[buf[i]].flags & F_VISITED);
        t->ent[buf[i]].flags |= F_VISITED;
    }
    for (Py_ssize_t i = 0; i < n; i++) t->ent[buf[i]].flags &= ~F_VISITED;
    PyMem_Free(buf);
    if (n < 0) return pyhost_why(why, "order() failed");
    PyObject *r = PyObject_CallNoArgs(check);
    if (!r) return pyhost_why(why, "_check() failed");
    Py_DECREF(r);
    Py_ssize_t held = -1;
    if (PyMethod_Check(count)) {
        PyObject *c = PyObject_CallNoArgs(count);
        held = c ? PyLong_AsSsize_t(c) : -1;
        Py_XDECREF(c);
    } else held = PyObject_Length(count);
    if (held < 0) return pyhost_why(why, "len() failed");
    if (held != t->held) return "len(policy) differs from the held blocks";
    return n == t->held && distinct == n ? NULL : "order() differs from the held blocks";
}

static const char *py_check(Tier *t) { return pyhost_check(t, py_order, t->py->obj, t->py->check, t->py->why); }

static int py_sync(Tier *t) { return PyErr_Occurred() ? -1 : py_flush(t, 0); }

const PolOps POL_PY = {
    .name = "py", .fini = py_fini, .add = py_add, .add_end = py_add_end, .remove = py_remove, .drop = py_drop,
    .touch = py_touch, .touch_end = py_touch_end, .expect_begin = py_expect_begin, .expect = py_expect,
    .evict_begin = py_evict_begin, .victim = py_victim, .order = py_order, .check = py_check, .load = py_load,
    .sync = py_sync,
};
