/* pcs.engine._stepsched: the step scheduler's event loop (pcs/engine/scheduler.py, StepEngine) in C.
 *
 * The compiled twin of the Python reference for the configuration `pcs replay` runs by default: the
 * ``layerwise`` restore policy, restore fallback on or off, decode-block caching on or off, any preemption
 * bound, event skipping on or off, plain prefill attention (StepCost.attn_pair_s set), no invariant checks.
 * The rules are those of scheduler.py's module docstring (docs/semantics.md §9, §10), statement for statement
 * and in the same floating-point order, so every column and counter is bit-identical; the wrapper is
 * pcs/engine/stepnative.py and tests/engine/test_stepsched_native.py diffs the two. The tiers are the compiled
 * hierarchy (pcs.cache._lruhier via pcs.cache.native.NativeHierarchy), driven through its C-level API
 * (pcs/cache/_lruhier_api.h: start, prefill_done, finish, grow, abort, extend, gpu_held as C functions, no
 * Python call); any other hierarchy (pcs.engine.stepclocked) through its Python methods of the same names.
 * This file does not touch the hierarchy's internals.
 * Time-series samples call back into Python (pcs.engine.series.Sampler), a few hundred times per run.
 * A fed request waits in its feed's buffers (held by the loop) until it reaches the queue's head and takes a slot
 * ("feeding" below); the per-request columns are buffers on kept mappings (_stepcols.h) the loop grows and hands
 * out (columns()).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_nogil.h"          /* raw memory, GIL-safe errors: the loop may run without the GIL */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "../_kernel_common.h"
#include "../cache/_lruhier_api.h"
#include "../cache/_grouphier_capi.h"
#include "_stepheap.h"              /* the event queues (fin, blk) */
#include "_stepsample.h"            /* the time-series sampler, in C when the loop runs without the GIL */
#include "_stepcols.h"              /* the per-request columns: buffers on kept mappings */

/* per-request int64 columns, then the tiers' hit_tokens_<tier>; double columns; order = stepnative.py's */
enum { Q_HIT, Q_MISSED, Q_HTOK, Q_RBYTES, Q_PREEMPT, Q_RECOMP, Q_DECODE, NQ0 };
enum { D_RESTORE, D_WLINK, D_PREFILL, D_WAIT, D_TTFT, D_FINISH, D_WCOMP, D_EXPOSED, D_PSTEPS, D_E2E, D_TPOT, ND };

#define MAX_SPAN_S (366.0 * 86400.0)
#define FINE_LIMIT_S 172800.0
#define COARSE_S 3600
#define MAX_TERMS 8                     /* prefill-attention terms (one per KV component) */


/* a request's slot; new_request sets every field (no memset: add a new field's start there) */
typedef struct {
    int64_t k, p0, p, o, out, seq, rem, ctx, kv0, g0, ep, preemptions, n0, cap0, ndh, dh_in, chain_dh;
    double arrival, land, kv_mark, ttft, prefill_s, exposed_s;
    int decoding, grows, first, live;
    PyObject *adm, *chain;          /* Python path: the hierarchy's Admission while admitted; start()'s chain list */
    int32_t ai;                     /* C API path: its admission's index in Sched.apool while admitted, else -1 */
    int32_t rprev, rnext;           /* links of the running list (Sched.rhead) while admitted, -1 at its ends */
    int64_t nslots;                 /* with Sched.slots: the GPU slots its admission holds (0 when not admitted) */
    uint64_t *hashes;               /* n0 prompt block ids (copied at the first admission: the chains of later ones),
                                       then ndh decode block ids (hcap allocated, kept for the slot's next request) */
    Py_ssize_t hcap;
    /* until the first admission, in its feed's buffers (held until then: Sched.kpend): */
    const uint64_t *ids0;           /* the n0 prompt block ids, the first admission's chain */
    const double *pre;              /* the prefill table row (cap0 + 1 entries), or NULL */
} Req;

typedef struct {
    int64_t restores, blocks, nbytes, slower, slower_blocks;
    double restore_s, transfer_s, overhead_s, full_s, remaining_s;
} Link;

/* feed()'s argument buffers (B_* order), held from that call until every one of its m rows (requests k0 ..
 * k0 + m - 1) has been taken into a request slot (materialize) */
enum { B_ARR, B_PROMPT, B_OUT, B_CACHE, B_CAP, B_OFF, B_HASH, B_PRE, B_PREOFF, B_DECOFF, B_DEC, NB };
typedef struct { Py_buffer b[NB]; int64_t k0, m; } Feed;

typedef struct {
    PyObject_HEAD
    /* settings */
    int T, fallback, last_token, no_cache, skip, layers;
    int64_t budget, max_seqs, max_preempt, bs;
    int bsh;                        /* log2(bs) when bs is a power of two (bdiv, bmod: a shift and a mask), else -1 */
    double tok_s, pair_s, kv_seq, kv_tok, attn_seq, attn_tok, w_act, w_tot;
    double *setup, *bw, *iops;      /* per tier; bw <= 0: no link (instant); iops <= 0: none */
    int64_t *bpb;
    PyObject *m_start, *m_done, *m_finish, *m_grow, *m_abort, *m_extend, *m_held, *take, *resident;
    int start_ids;                  /* m_start is the hierarchy's start_ids (keys as a uint64 buffer) */
    const PcsHierApi *api;          /* the compiled hierarchy's C API, or NULL: the Python methods above */
    PyObject *hobj;                 /* with api: the pcs.cache._lruhier.Hierarchy it is called on */
    PcsAdm *apool;                  /* with api: the admissions of running requests (max_seqs + 1), reused: their
                                       buffers are allocated once and stay in cache */
    int32_t *afree, nafree;         /* free entries of apool (a stack) */
    /* clock and batch */
    double now, next_sample, last_arrival, kv_acc, kv_since;
    double mat_arrival;             /* last_arrival as materialize reaches it (the arrivals clamped again there) */
    int64_t G, d, S, seq, fed, in_system, admitted, epochs;
    int blocked;
    /* requests */
    Req *rq; int32_t nrq, caprq, *freel; int32_t nfree;
    int32_t *wq; Py_ssize_t wh, wn, wcap;       /* waiting with a slot (preempted, or taken in): ring buffer */
    /* waiting behind them, in arrival order: requests kf .. fed - 1, never admitted, not yet in a slot: their rows
     * stay in the feeds' buffers (feeds[fh ..]) until they reach the queue's head, so the slots (and the memory
     * the loop touches) are those of the running requests and the queue's head, not of the whole backlog */
    Feed *feeds; Py_ssize_t f0, fh, nfeeds, capfeeds; int64_t kf;   /* held: feeds[f0 .. nfeeds); kf's: fh */
    int64_t kpend;                  /* the request taken into a slot and not yet admitted (its row is read then), or -1 */
    int32_t rhead, rtail; Py_ssize_t nrun;      /* running, admission order: a list through Req.rprev / rnext */
    int32_t *pf; Py_ssize_t npf;                /* prefilling, admission order: pf[0 .. npf), a window of pfbuf */
    int32_t *pfbuf;                             /* 2 (max_seqs + 1) entries: the head leaves in O(1) (pf_remove) */
    int32_t *cr; int64_t *cn;                   /* a step's chunks */
    EvQ fin, blk;
    /* counters */
    int64_t steps, prefill_steps, preemptions, recompute_tokens, considered, losing, skipped, decode_cached, peak;
    int64_t outgrown;                           /* StepEngine.stats.requests_outgrown */
    double busy_s, stall_s, origin_s, area_s;
    double *bins; Py_ssize_t nbins, capbins; int bin_s;
    double *link_free; int64_t *tier_hits; Link *links;
    /* columns: Column buffers (cols, in the order of columns()) this loop writes through q / dc / trunc, their buffers
     * (taken again each time init_columns grows them; nothing else resizes them before columns() hands them out,
     * which ends the loop: out) */
    int64_t *q[NQ0 + 8]; double *dc[ND]; char *trunc; Py_ssize_t ncol;
    Py_ssize_t capcol, expect;      /* rows the arrays hold (ncol rows fed, the rest set ahead); reserve()'s total */
    PyObject *cols[NQ0 + 8 + ND + 1]; int out;
    /* a fleet's one clock (StepEngine.clock_event / clock_advance): the step that began, its end due */
    int half; Py_ssize_t open_nch; double open_step;
    /* hybrid models: prefill attention as a sum of terms (set_chunk_attention), the compiled hybrid
     * hierarchy's hooks (set_hybrid); see "hybrid models" below */
    int nterms, term_kind[MAX_TERMS]; double term_coef[MAX_TERMS], term_param[MAX_TERMS], attn_f;
    PyObject *gh; const GHCApi *gh_api;
    int64_t gh_bytes[8];            /* the admission's restored_bytes_per_tier (a hybrid hierarchy's pages) */
    /* the GIL, released over feed / close when nothing in the loop calls Python (see "the GIL" below) */
    PyThreadState *ts;              /* this thread's state while the GIL is released, else NULL */
    Samp sp;                        /* the samples kept in C (sample_here), else sp.on 0: Sampler.take */
    int busy;                       /* feed / close is running (with the GIL released another thread could call) */
    /* the no-cache run's lean mode (lean(), see "the lean no-cache run" below): only the columns and counters its
     * summary reads are kept; fmax: the latest finish so far (finish_max without a finish_s column) */
    int lean; double fmax;
    /* the no-cache run's GPU slots counted here, without the hierarchy (count_slots(), see "the no-cache run's
     * slots" below): the GPU tier's capacity and the slots reserved; the last slot_start's truncation */
    int slots, slot_trunc; int64_t slot_cap, slot_res;
    /* iterations of run_until since the last signal check, kept across its calls (see SIGNAL_EVERY); its group's
     * stop count when this feed / close began (check_signals); the stop signals this loop's checks raised, counted
     * here when it leads its group (with NULL), else in `with`, the loop it stops with (stop_with(): the run's loop,
     * for its no-cache twin beside it; a strong reference) */
    unsigned int spins; long stops0, raised; PyObject *with; int followers;
} Sched;

static PyObject *s_rbytes, *s_hit, *s_hbpt, *s_rbpt, *s_lead, *s_last, *s_prefix, *s_trunc;

/* An admission's fields (pcs.cache.hierarchy.Admission) the loop reads, blocks; per-tier counts of the s->T tiers:
 * th (hit) and rb (restored), read in place from the C API's admission (PcsAdm.counts, no copy) or, on the Python
 * path, from own (th = own, rb = own + 8) */
typedef struct {
    Py_ssize_t prefix_hit_blocks, hit_blocks, last_hit_tier, gpu_lead_blocks;
    int truncated;
    const int64_t *th, *rb;
    int64_t own[16];
} AdmInfo;
_Static_assert(sizeof(Py_ssize_t) == sizeof(int64_t), "PcsAdm.counts (Py_ssize_t) are read as int64_t");

/* ---------------------------------------------------------------- small helpers */
static inline int64_t floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b && (a < 0) != (b < 0)) ? q - 1 : q; }
static inline int64_t pymod(int64_t a, int64_t b) { int64_t r = a % b; return (r && (r < 0) != (b < 0)) ? r + b : r; }
static inline int isnan_(double x) { return x != x; }
/* floordiv(a, s->bs) and pymod(a, s->bs): with a block size that is a power of two (the usual case: 16, 512
 * tokens) an arithmetic shift and a mask, the same values (two's complement: a >> k rounds toward -inf, a & (bs - 1)
 * is in [0, bs)), no 64-bit division per block boundary, admission and finish */
static inline int64_t bdiv(const Sched *s, int64_t a) { return s->bsh >= 0 ? a >> s->bsh : floordiv(a, s->bs); }
static inline int64_t bmod(const Sched *s, int64_t a) { return s->bsh >= 0 ? a & (s->bs - 1) : pymod(a, s->bs); }

static Py_ssize_t attr_n(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (!v) return -1;
    Py_ssize_t x = PyLong_AsSsize_t(v);      /* bools are ints */
    Py_DECREF(v);
    return x;
}

/* a per-tier list attribute of an Admission into out[T] */
static int attr_list(Sched *s, PyObject *adm, PyObject *name, int64_t *out) {
    PyObject *v = PyObject_GetAttr(adm, name);
    if (!v) return -1;
    PyObject *f = PySequence_Fast(v, "per-tier list expected");
    Py_DECREF(v);
    if (!f) return -1;
    for (int j = 0; j < s->T; j++) {
        out[j] = j < PySequence_Fast_GET_SIZE(f) ? PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, j)) : 0;
    }
    Py_DECREF(f);
    return PyErr_Occurred() ? -1 : 0;
}

/* call a hierarchy method with an Admission (and an optional second argument); the result (new ref) or NULL */
static PyObject *hcall(PyObject *m, PyObject *adm, PyObject *arg) {
    PyObject *args[2] = {adm, arg};
    return PyObject_Vectorcall(m, args, arg ? 2 : 1, NULL);
}

static int hcall0(PyObject *m, PyObject *adm, PyObject *arg) {
    PyObject *r = hcall(m, adm, arg);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* ---------------------------------------------------------------- the hierarchy's calls: its C API or Python */
/* hybrid models: the compiled hybrid hierarchy follows the loop's clock (HybridStepEngine: hierarchy.follow); it
 * is called through its Python methods (never the compiled LRU hierarchy's C API: set_hybrid refuses a loop with
 * s->api), so the C API calls below skip this */
static int hy_tick(Sched *s) { return s->gh ? s->gh_api->tick(s->gh, s->now) : 0; }
/* the chain start() takes on the Python path, built once per admission attempt (cached in r->chain until it is
 * admitted): the first n ids as one uint64 buffer (start_ids) or a list of ints */
static inline const uint64_t *chain_ids(const Req *r) { return r->first ? r->ids0 : r->hashes; }

static int py_chain(Sched *s, Req *r, int64_t n) {
    if (r->chain) return 0;
    if (s->start_ids) {
        r->chain = PyBytes_FromStringAndSize((const char *)chain_ids(r), (Py_ssize_t)(n * 8));
        return r->chain ? 0 : -1;
    }
    r->chain = pcs_list_u64(chain_ids(r), n);
    return r->chain ? 0 : -1;
}

/* the admission of r (C API path) */
#define CA(s, r) (&(s)->apool[(r)->ai])

/* r's admission goes back to the pool (C API path) or is dropped (Python path) */
static void adm_release(Sched *s, Req *r) {
    Py_CLEAR(r->adm);
    if (r->ai >= 0) { s->afree[s->nafree++] = r->ai; r->ai = -1; }
}

/* ---------------------------------------------------------------- the no-cache run's slots
 * count_slots(capacity): in the lean no-cache run (lean()) on the compiled hierarchy's C API, its GPU tier empty and
 * no decode block fed, every admission is an empty chain (admission_args: n = 0) and nothing is ever cached, so all
 * the hierarchy does for the run is the GPU tier's slot accounting of an empty chain (pcs/cache/_lruhier.c
 * start_empty: start_budget and start_reserve with no lookup, pin, restore or resident block; c_grow, c_finish,
 * c_abort; docs/semantics.md §5): a request waits for its extra slots, is admitted truncated to the whole tier when
 * it needs more, grows one slot per block, gives its slots back at its finish or preemption. The loop counts them
 * itself (slot_cap, slot_res; Req.nslots) instead of calling the hierarchy ~5 times a request: the same rule with
 * no resident block (nres = held = evictable = 0, so no eviction), which tests/engine/test_stepsched_native.py
 * diffs against the hierarchy's on the same runs (count_slots or not). Only the lean instantiations test s->slots
 * (h_* with lean = 1): the full run's calls are as before. */
static int slot_start(Sched *s, Req *r, int64_t extra) {
    int64_t avail = s->slot_cap - s->slot_res, budget = extra;
    if (extra > avail) {                /* start_budget with wait_if_full: wait unless the whole tier is free */
        if (avail < (extra < s->slot_cap ? extra : s->slot_cap)) return 0;
        budget = avail;
    }
    s->slot_trunc = budget < extra;
    s->slot_res += budget;
    r->nslots = budget;
    return 1;
}

static const int64_t slot_zeros[16];    /* an empty chain's per-tier hit and restored blocks */

/* Hierarchy.start(chain, n, cap, extra, wait_if_full=True) for r: 1 admitted (r->ai or r->adm), 0 it waits, -1 */
static inline __attribute__((always_inline)) int h_start(Sched *s, Req *r, int64_t n, int64_t cap, int64_t extra,
                                                         const int lean) {
    if (lean && s->slots) return slot_start(s, r, extra);
    if (s->api) {
        if (!s->nafree) { PyErr_SetString(PyExc_AssertionError, "more admissions than max_num_seqs"); return -1; }
        r->ai = s->afree[--s->nafree];
        int got = s->api->start(s->hobj, chain_ids(r), n, n, cap, extra, 1, CA(s, r));
        if (got <= 0) adm_release(s, r);
        return got;
    }
    if (hy_tick(s) < 0 || py_chain(s, r, n) < 0) return -1;
    PyObject *a[5] = {r->chain, PyLong_FromLongLong(n), PyLong_FromLongLong(cap), PyLong_FromLongLong(extra), Py_True};
    PyObject *adm = (a[1] && a[2] && a[3]) ? PyObject_Vectorcall(s->m_start, a, 5, NULL) : NULL;
    Py_XDECREF(a[1]); Py_XDECREF(a[2]); Py_XDECREF(a[3]);
    if (!adm) return -1;
    if (adm == Py_None) { Py_DECREF(adm); return 0; }
    r->adm = adm;
    return 1;
}

/* r's admission's fields into ai (per-tier counts for the s->T tiers); 0 or -1 */
static inline __attribute__((always_inline)) int h_info(Sched *s, Req *r, AdmInfo *ai, const int lean) {
    if (lean && s->slots) {             /* start_empty's admission: nothing hit, restored or pinned */
        ai->prefix_hit_blocks = ai->hit_blocks = ai->gpu_lead_blocks = 0;
        ai->last_hit_tier = -1;
        ai->truncated = s->slot_trunc;
        ai->th = ai->rb = slot_zeros;
        return 0;
    }
    if (s->api) {
        const PcsAdm *a = CA(s, r);
        ai->prefix_hit_blocks = a->prefix_hit_blocks;
        ai->hit_blocks = a->hit_blocks;
        ai->last_hit_tier = a->last_hit_tier;
        ai->gpu_lead_blocks = a->gpu_lead_blocks;
        ai->truncated = a->truncated;
        ai->th = (const int64_t *)a->counts;
        ai->rb = (const int64_t *)a->counts + a->ntiers;
        return 0;
    }
    PyObject *adm = r->adm;
    ai->hit_blocks = attr_n(adm, s_hit);
    ai->gpu_lead_blocks = attr_n(adm, s_lead);
    ai->truncated = (int)attr_n(adm, s_trunc);
    ai->prefix_hit_blocks = attr_n(adm, s_prefix);
    ai->last_hit_tier = attr_n(adm, s_last);
    if (PyErr_Occurred()) return -1;
    ai->th = ai->own; ai->rb = ai->own + 8;
    return attr_list(s, adm, s_hbpt, ai->own) < 0 || attr_list(s, adm, s_rbpt, ai->own + 8) < 0 ? -1 : 0;
}

/* the Python path of h_done / h_finish / h_abort (out of line: the C API's call stays a jump, no frame) */
static __attribute__((noinline)) int h_pycall(Sched *s, Req *r, PyObject *m) {
    return hy_tick(s) < 0 ? -1 : hcall0(m, r->adm, NULL);
}

/* (an empty chain's prefill done caches nothing: c_prefill_done with nnew = 0) */
static inline __attribute__((always_inline)) int h_done(Sched *s, Req *r, const int lean) {
    if (lean && s->slots) return 0;
    return s->api ? s->api->prefill_done(s->hobj, CA(s, r)) : h_pycall(s, r, s->m_done);
}

/* r's slots given back (c_finish and c_abort of an admission holding no key) */
static inline void slot_release(Sched *s, Req *r) {
    s->slot_res -= r->nslots;
    r->nslots = 0;
}

static inline __attribute__((always_inline)) int h_finish(Sched *s, Req *r, const int lean) {
    if (lean && s->slots) { slot_release(s, r); return 0; }
    return s->api ? s->api->finish(s->hobj, CA(s, r)) : h_pycall(s, r, s->m_finish);
}

static inline __attribute__((always_inline)) int h_abort(Sched *s, Req *r, const int lean) {
    if (lean && s->slots) { slot_release(s, r); return 0; }
    return s->api ? s->api->abort(s->hobj, CA(s, r)) : h_pycall(s, r, s->m_abort);
}

/* Hierarchy.grow(adm, 1) through the Python method (out of line, as h_pycall) */
static __attribute__((noinline)) int h_grow1_py(Sched *s, Req *r) {
    static PyObject *one = NULL;
    if (hy_tick(s) < 0) return -1;
    if (!one && !(one = PyLong_FromLong(1))) return -1;
    PyObject *res = hcall(s->m_grow, r->adm, one);
    if (!res) return -1;
    int ok = PyObject_IsTrue(res);
    Py_DECREF(res);
    return ok;
}

/* Hierarchy.grow(adm, 1): 1 granted, 0 none obtainable, -1 error (counted: c_grow with no resident block, granted
 * while a slot is free) */
static inline __attribute__((always_inline)) int h_grow1(Sched *s, Req *r, const int lean) {
    if (lean && s->slots) {
        if (s->slot_res >= s->slot_cap) return 0;
        s->slot_res++;
        r->nslots++;
        return 1;
    }
    return s->api ? s->api->grow(s->hobj, CA(s, r), 1) : h_grow1_py(s, r);
}

/* Hierarchy.extend(adm, keys[0 .. m)); 0 or -1 */
static int h_extend(Sched *s, Req *r, const uint64_t *keys, int64_t m) {
    if (s->api) return s->api->extend(s->hobj, CA(s, r), keys, m);
    if (hy_tick(s) < 0) return -1;
    PyObject *l = pcs_list_u64(keys, m);
    if (!l) return -1;
    int rc = hcall0(s->m_extend, r->adm, l);
    Py_DECREF(l);
    return rc;
}

/* Hierarchy.held_blocks(): GPU slots held (pinned + reserved), or -1 */
static int64_t h_held(Sched *s) {
    if (s->api) return s->api->gpu_held(s->hobj);
    PyObject *r = PyObject_CallNoArgs(s->m_held);
    if (!r) return -1;
    int64_t held = PyLong_AsLongLong(r);
    Py_DECREF(r);
    return held == -1 && PyErr_Occurred() ? -1 : held;
}

/* resident blocks of tier j (the samples' state), as a new int or NULL */
static PyObject *h_resident(Sched *s, int j) {
    if (s->api) return PyLong_FromSsize_t(s->api->num_resident(s->hobj, j));
    PyObject *jj = PyLong_FromLong(j);
    PyObject *r = jj ? PyObject_CallOneArg(s->resident, jj) : NULL;
    Py_XDECREF(jj);
    return r;
}

/* ---------------------------------------------------------------- the compute model (pcs.compute.StepCost) */
/* pcs.compute._affine_sum: sum_{j=lo}^{hi-1} (a + b j). Python multiplies (lo + hi - 1) * m exactly (ints) and
 * rounds once in the true division; the product is kept exact here too (128 bits: decode runs of more than ~3e9
 * steps overflow int64 and gave negative times), and one rounding of an exact integer then /2 is Python's. */
static double affine_sum(double a, double b, int64_t lo, int64_t hi) {
    if (hi <= lo) return 0.0;
    int64_t m = hi - lo;
#ifdef __SIZEOF_INT128__
    double pairs = (double)(((__int128)lo + hi - 1) * (__int128)m);
#else
    double pairs = ((double)lo + (double)hi - 1.0) * (double)m;
#endif
    return (double)m * a + b * (pairs / 2.0);
}

typedef struct { double a1, b1, a2, b2; } Terms;

static Terms decode_terms(const Sched *s, int64_t d, int64_t S) {
    Terms t;
    double w = s->w_act * (double)d;
    t.a1 = (w < s->w_tot ? w : s->w_tot) + (double)d * s->kv_seq + s->kv_tok * (double)S;
    t.b1 = s->kv_tok * (double)d;
    t.a2 = (double)d * (s->tok_s + s->attn_seq) + s->attn_tok * (double)S;
    t.b2 = s->attn_tok * (double)d;
    return t;
}

static double decode_sum(Terms t, int64_t k) {
    if (t.b1 == t.b2) return t.a1 >= t.a2 ? affine_sum(t.a1, t.b1, 0, k) : affine_sum(t.a2, t.b2, 0, k);
    double x = (t.a2 - t.a1) / (t.b1 - t.b2);
    double c = t.b1 > t.b2 ? ceil(x) : floor(x) + 1.0;
    int64_t split = c <= 0.0 ? 0 : (c >= (double)k ? k : (int64_t)c);
    if (t.b1 > t.b2) return affine_sum(t.a2, t.b2, 0, split) + affine_sum(t.a1, t.b1, split, k);
    return affine_sum(t.a1, t.b1, 0, split) + affine_sum(t.a2, t.b2, split, k);
}

static double decode_run_s(const Sched *s, int64_t d, int64_t S, int64_t steps) {
    if (steps <= 0 || d <= 0) return 0.0;
    return decode_sum(decode_terms(s, d, S), steps);
}

static int64_t decode_steps_within(const Sched *s, int64_t d, int64_t S, double seconds, int64_t most) {
    if (most <= 0 || d <= 0) return 0.0 < seconds ? most : 1;
    Terms t = decode_terms(s, d, S);
    if (decode_sum(t, most) < seconds) return most;
    int64_t lo = 1, hi = most;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (decode_sum(t, mid) >= seconds) hi = mid; else lo = mid + 1;
    }
    return lo;
}

/* ---------------------------------------------------------------- hybrid models: prefill attention
 * StepCost.chunk_attn_s when attn_pair_s is None (windowed, chunked or linear attention): the model's
 * attention_flops(n, c) / flops_per_s, ModelSpec.attention_flops's sum over components in their order, each
 * coef x pairs (pcs/model/components.py causal_pairs, windowed_pairs, chunked_pairs; linear: n), in numpy's
 * floating-point order; the terms come from pcs/engine/chunkattn.py, which checks them against the model. */
enum { PK_CAUSAL, PK_WINDOW, PK_CHUNK, PK_LINEAR };

static double window_sum(double m, double w) {      /* windowed_pairs' S(m) */
    double a = m < w ? m : w;
    return a * (a + 1.0) / 2.0 + (m - a) * w;
}

static double chunk_sum(double m, double size) {    /* chunked_pairs' S(m), m >= 0 */
    double r = fmod(m, size), q = (m - r) / size;
    return q * size * (size + 1.0) / 2.0 + r * (r + 1.0) / 2.0;
}

static double term_pairs(int kind, double n, double c, double param) {
    switch (kind) {
    case PK_CAUSAL: return n * c + n * (n + 1.0) / 2.0;
    case PK_WINDOW: return window_sum(c + n, param) - window_sum(c, param);
    case PK_CHUNK: return chunk_sum(c + n, param) - chunk_sum(c, param);
    default: return n + 0.0 * c;
    }
}

/* chunk_attn_s with attention terms (hybrid models) */
static double terms_attn_s(const Sched *s, int64_t n, int64_t c) {
    double total = 0.0, dn = (double)n, dc = (double)c;
    for (int x = 0; x < s->nterms; x++) total = total + s->term_coef[x] * term_pairs(s->term_kind[x], dn, dc,
                                                                                      s->term_param[x]);
    return total / s->attn_f;
}

/* a prefill chunk's attention seconds: n new tokens after c cached (the plain case inline: once per chunk) */
static inline double chunk_attn_s(const Sched *s, int64_t n, int64_t c) {
    if (!s->nterms) return s->pair_s * ((double)(n * c) + (double)(n * (n + 1)) / 2.0);
    return terms_attn_s(s, n, c);
}

/* StepCost.prefill_s: a prefill alone in a step */
static double prefill_alone_s(const Sched *s, int64_t n, int64_t c) {
    if (n <= 0) return 0.0;
    double comp = s->tok_s * (double)n + chunk_attn_s(s, n, c);
    double mem = s->kv_seq + s->kv_tok * (double)c;
    double w = s->w_act * (double)(n + 0);
    double memory = (s->w_tot < w ? s->w_tot : w) + mem + 0.0 * s->kv_seq + s->kv_tok * 0.0;
    double compute = comp + 0.0 * (s->tok_s + s->attn_seq) + s->attn_tok * 0.0;
    return memory > compute ? memory : compute;
}

/* LinkSpec.transfer_s(nbytes, io_size_bytes) */
static double transfer_s(const Sched *s, int j, int64_t nbytes, int64_t io) {
    double data = (double)nbytes / s->bw[j];
    if (io > 0 && s->iops[j] > 0 && nbytes > 0) {
        double ops = ceil((double)nbytes / (double)io) / s->iops[j];
        if (ops > data) data = ops;
    }
    return s->setup[j] + data;
}

/* ---------------------------------------------------------------- busy bins (SchedulerCounters.add_busy) */
/* the bins past nbins, up to capbins, are kept at 0 (zeroed when allocated, and by bins_fold), so a clock entering
 * its next second grows nbins alone (no fill per new bin) */
static int bins_grow(Sched *s, Py_ssize_t n) {
    if (n > s->capbins) {
        Py_ssize_t c = s->capbins ? s->capbins : 1024;
        while (c < n) c *= 2;
        double *b = PyMem_Realloc(s->bins, sizeof(double) * c);
        if (!b) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = s->capbins; i < c; i++) b[i] = 0.0;
        s->bins = b; s->capbins = c;
    }
    if (n > s->nbins) s->nbins = n;
    return 0;
}

static void bins_fold(Sched *s) {
    Py_ssize_t n = (s->nbins + COARSE_S - 1) / COARSE_S;
    for (Py_ssize_t i = 0; i < n; i++) {
        double sum = 0.0;
        Py_ssize_t end = (i + 1) * COARSE_S < s->nbins ? (i + 1) * COARSE_S : s->nbins;
        for (Py_ssize_t j = i * COARSE_S; j < end; j++) sum += s->bins[j];
        s->bins[i] = sum;
    }
    for (Py_ssize_t i = n; i < s->nbins; i++) s->bins[i] = 0.0;    /* past nbins: 0 (bins_grow) */
    s->nbins = n;
    s->bin_s = COARSE_S;
}

/* seconds of GPU work over [t0, t1) (in bins of w seconds, t0 and t1 in bins) added to bins b0 = int(t0) ..
 * b1 = int(t1), allocated (SchedulerCounters.add_busy's split) */
static inline void bins_spread(Sched *s, double t0, double t1, double w, double seconds) {
    Py_ssize_t b0 = (Py_ssize_t)t0, b1 = (Py_ssize_t)t1;
    if (b1 >= s->nbins) s->nbins = b1 + 1;    /* the bins past nbins are 0 (bins_grow) */
    if (b0 == b1) { s->bins[b0] += seconds; return; }
    s->bins[b0] += ((double)(b0 + 1) - t0) * w;
    for (Py_ssize_t b = b0 + 1; b < b1; b++) s->bins[b] += w;
    s->bins[b1] += (t1 - (double)b1) * w;
}

/* add_busy's cold part (t0, t1: the step's start and end, seconds from origin_s): a step past the limit refused,
 * the bins folded to hours past FINE_LIMIT_S, grown, then the seconds spread; 0 or -1 */
static int busy_slow(Sched *s, double t0, double t1, double seconds) {
    if (!(t0 >= 0.0 && seconds >= 0.0)) {    /* never on a valid run: guards the bins[] index below */
        PyErr_Format(PyExc_RuntimeError, "internal: a step starts before the first arrival or lasts < 0 s");
        return -1;
    }
    if (!(t1 <= MAX_SPAN_S)) {     /* the cause named as pcs/engine/schedstats.py span_message names it */
        char buf[64], busy[64];
        snprintf(buf, sizeof buf, "%.4g", t1);
        snprintf(busy, sizeof busy, "%.4g", s->busy_s);
        if (s->busy_s >= 0.5 * t1)
            PyErr_Format(PyExc_ValueError, "the step scheduler's run reaches %s s after the first arrival, past "
                         "its limit of 31,622,400 s (366 days): the GPU computes for %s s of it, so its steps are "
                         "that slow: check the GPU's rates (bf16_flops, hbm_bps in --hardware-file) against the "
                         "model, or use --compute infinite / --timing sequential", buf, busy);
        else
            PyErr_Format(PyExc_ValueError, "the step scheduler's run reaches %s s after the first arrival, past "
                         "its limit of 31,622,400 s (366 days): check the trace's timestamps and output lengths, "
                         "and the links' bandwidths (a slow --link makes restores that long), or use "
                         "--compute infinite / --timing sequential", buf);
        return -1;
    }
    if (s->bin_s == 1 && t1 >= FINE_LIMIT_S) bins_fold(s);
    double w = (double)s->bin_s;
    t0 = t0 / w; t1 = t1 / w;
    if ((Py_ssize_t)t1 >= s->capbins && bins_grow(s, (Py_ssize_t)t1 + 1) < 0) return -1;
    bins_spread(s, t0, t1, w, seconds);
    return 0;
}

/* SchedulerCounters.add_busy: seconds of GPU work from start, spread over the bins (inline in elapse, once per
 * step: a step within the second-wide bins allocated calls nothing -- its split is busy_slow's with w = 1, where
 * t / w is t; busy_slow otherwise); lean (a constant: the loop is compiled for both, "the lean no-cache run"): the
 * busy seconds alone; 0 or -1 */
static inline __attribute__((always_inline)) int add_busy(Sched *s, double start, double seconds, const int lean) {
    s->busy_s += seconds;
    double t0 = start - s->origin_s, t1 = t0 + seconds;
    if (lean)                       /* no bins (lean()): busy_slow only for the errors it raises */
        return t0 >= 0.0 && seconds >= 0.0 && t1 <= MAX_SPAN_S ? 0 : busy_slow(s, t0, t1, seconds);
    if (!(t0 >= 0.0 && seconds >= 0.0 && s->bin_s == 1 && t1 < FINE_LIMIT_S && t1 < (double)s->capbins))
        return busy_slow(s, t0, t1, seconds);
    bins_spread(s, t0, t1, 1.0, seconds);
    return 0;
}

/* ---------------------------------------------------------------- the GIL
 * A run of the loop (feed, close) releases the GIL when it calls no Python code: the compiled hierarchy through
 * its C API, which says it hosts no Python policy (PcsHierApi.nogil), and no hybrid hooks. The loop's memory is
 * then raw memory and its errors take the GIL to be set (pcs/_nogil.h); the sampler's callback (a few hundred
 * times per run, unless the samples are kept here: sample_here, pcs/engine/_stepsample.h) and the signal check
 * take it back for their Python calls. Another thread (the no-cache
 * baseline's loop, pcs/engine/runner.py) then runs its own loop at the same time; each loop only touches its own
 * state and hierarchy, so the results are those of running them one after the other. */
static int nogil(Sched *s) { return s->api && !s->gh && s->api->nogil(s->hobj); }

static void gil_release(Sched *s) {
    if (nogil(s)) s->ts = PyEval_SaveThread();
}

static void gil_take(Sched *s) {
    if (s->ts) { PyEval_RestoreThread(s->ts); s->ts = NULL; }
}

/* the loop whose count of raised stop signals this loop's group keeps: the one it stops with, else itself (read and
 * written with the GIL held). A loop that stops with another measures from that loop's count when that loop's own
 * feed / close began (its stops0), not from the count when it began itself: a twin whose feed began after the run's
 * loop had taken a stop signal missed it and ran its whole chunk while the stopped call waited for it (1.7 s at 1x
 * Parquet, 14.5 s at 10x, a review's reproducer) */
static inline Sched *stop_group(Sched *s) { return s->with ? (Sched *)s->with : s; }

/* feed / close may run (1), or 0 with RuntimeError: the loop is running in another thread */
static int enter(Sched *s) {
    if (s->out) { PyErr_SetString(PyExc_RuntimeError, "the step loop has handed out its columns (columns())"); return 0; }
    if (!s->busy) { s->stops0 = s->with ? ((Sched *)s->with)->stops0 : s->raised; return s->busy = 1; }
    PyErr_SetString(PyExc_RuntimeError, "the step loop is already running (another thread)");
    return 0;
}

/* ---------------------------------------------------------------- the sampler (a Python callback, or in C) */
static inline Py_ssize_t waiting(const Sched *s);

/* Sampler.take's rule kept in C (pcs/engine/_stepsample.h; sample_here): the state as sched_state gives it, read
 * from the loop and the compiled hierarchy's C API (no Python, no GIL); the next boundary into next_sample. */
static int take_here(Sched *s, double t) {
    Samp *sp = &s->sp;
    int64_t last = samp_last(sp, t);
    if (last >= sp->n) {
        SampRow st;
        st.adm = s->admitted; st.wait = waiting(s); st.run = s->nrun;
        for (int j = 0; j < s->T; j++) {
            st.res[j] = s->api->num_resident(s->hobj, j);
            st.nb[j] = s->links[j].nbytes;
            st.lf[j] = s->link_free[j];
        }
        if (samp_record(sp, &st, last) < 0) { PyErr_NoMemory(); return -1; }
    }
    s->next_sample = samp_next(sp);
    return 0;
}

/* Sampler.take(t, self.state): record the boundaries passed, with this loop's state (with the GIL) */
static int take(Sched *s, double t) {
    if (s->sp.on) return take_here(s, t);
    int released = s->ts != NULL;
    gil_take(s);
    PyObject *a[2] = {PyFloat_FromDouble(t), PyObject_GetAttrString((PyObject *)s, "state")};
    PyObject *r = a[0] && a[1] ? PyObject_Vectorcall(s->take, a, 2, NULL) : NULL;
    Py_XDECREF(a[0]); Py_XDECREF(a[1]);
    if (r) {
        s->next_sample = PyFloat_AsDouble(r);
        Py_DECREF(r);
    }
    int rc = !r || PyErr_Occurred() ? -1 : 0;
    if (released) s->ts = PyEval_SaveThread();
    return rc;
}

/* Ctrl-C / SIGTERM (with the GIL); 0 or -1. run_until checks every SIGNAL_EVERY iterations, counted across its
 * calls (Sched.spins): feed runs it once per arrival, and with a small step budget (--max-num-batched-tokens 1) an
 * arrival's run is thousands of steps, so a count restarted per call never reached a check and a Ctrl-C waited for
 * the whole feed. An iteration is a few hundred to a few thousand instructions; a check (the GIL taken and given
 * back) ~1 us: every 4,096 iterations is well under 1 % and well under 0.2 s. (A worker thread's loop sees no
 * signal: Python runs its handlers on the main thread only. A loop on a worker -- the no-cache run beside -- stops
 * when a loop of its group (the run's loop it stops with, stop_with()) has raised one since this worker's feed /
 * close began: with RuntimeError, which pcs.beside's settle drops for the caller's own stop; the main thread's stop
 * waited for the worker's whole close before. Only its group's: a count kept for the whole process stopped the
 * replays other threads ran at the time, each with that RuntimeError, when the main thread's replay was stopped.) */
#define SIGNAL_EVERY 4096u
static __attribute__((noinline, cold)) int check_signals(Sched *s) {
    int released = s->ts != NULL;
    gil_take(s);
    int rc = PyErr_CheckSignals();
    if (rc < 0) stop_group(s)->raised++;
    else if (stop_group(s)->raised != s->stops0) {
        PyErr_SetString(PyExc_RuntimeError, "the step loop stopped: a stop signal ended the run it was part of");
        rc = -1;
    }
    if (released) s->ts = PyEval_SaveThread();
    return rc;
}

/* ---------------------------------------------------------------- queues of request slots */
/* the waiting ring's capacity is a power of 2 (256, doubled): positions wrap with a mask; its growth out of line, the
 * pushes inline (once a request taken in, once a preemption) */
static __attribute__((noinline)) int wq_grow(Sched *s) {
    Py_ssize_t c = s->wcap ? 2 * s->wcap : 256;
    int32_t *a = PyMem_Malloc(sizeof(int32_t) * c);
    if (!a) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < s->wn; i++) a[i] = s->wq[(s->wh + i) & (s->wcap - 1)];
    PyMem_Free(s->wq);
    s->wq = a; s->wcap = c; s->wh = 0;
    return 0;
}

static inline __attribute__((always_inline)) int wq_reserve(Sched *s) { return s->wn < s->wcap ? 0 : wq_grow(s); }

static inline __attribute__((always_inline)) int wq_push_back(Sched *s, int32_t r) {
    if (wq_reserve(s) < 0) return -1;
    s->wq[(s->wh + s->wn++) & (s->wcap - 1)] = r;
    return 0;
}

static inline __attribute__((always_inline)) int wq_push_front(Sched *s, int32_t r) {
    if (wq_reserve(s) < 0) return -1;
    s->wh = (s->wh + s->wcap - 1) & (s->wcap - 1);
    s->wq[s->wh] = r;
    s->wn++;
    return 0;
}

/* requests waiting: in slots, then not yet taken in */
static inline Py_ssize_t waiting(const Sched *s) { return s->wn + (Py_ssize_t)(s->fed - s->kf); }

/* a is followed by b in the running list (a = -1: b is first; b = -1: a is last) */
static void run_link(Sched *s, int32_t a, int32_t b) {
    if (a >= 0) s->rq[a].rnext = b; else s->rhead = b;
    if (b >= 0) s->rq[b].rprev = a; else s->rtail = a;
}

/* r joins the running requests, last (StepEngine.running.append) */
static void run_append(Sched *s, int32_t ri) {
    run_link(s, s->rtail, ri);
    run_link(s, ri, -1);
    s->nrun++;
}

/* r leaves the running requests (StepEngine.running.remove): O(1), the others keep their order */
static void run_remove(Sched *s, int32_t ri) {
    run_link(s, s->rq[ri].rprev, s->rq[ri].rnext);
    s->nrun--;
}

/* r out of the prefilling requests (the first, most often: its chunks come first, so its prefill completes first;
 * the window moves on) */
static void pf_remove(Sched *s, int32_t r) {
    int32_t *a = s->pf;
    Py_ssize_t i = 0, n = s->npf;
    if (n && a[0] == r) { s->pf++; s->npf--; return; }
    while (i < n && a[i] != r) i++;
    if (i == n) return;
    for (s->npf = --n; i < n; i++) a[i] = a[i + 1];
}

/* r joins the prefilling requests, last; the window back to pfbuf's start when it reaches the end (at most
 * max_seqs + 1 prefill, so once in max_seqs + 1 head removals at most) */
static void pf_append(Sched *s, int32_t r) {
    if (s->pf + s->npf == s->pfbuf + 2 * (s->max_seqs + 1)) {
        for (Py_ssize_t i = 0; i < s->npf; i++) s->pfbuf[i] = s->pf[i];
        s->pf = s->pfbuf;
    }
    s->pf[s->npf++] = r;
}

/* ---------------------------------------------------------------- columns */
static PyObject *array_type;        /* array.array, imported once (the busy bins, counters()) */

/* the columns' number: NQ0 + T int64 ('q'), ND float64 ('d'), truncated (int8, 'b') */
static int ncols(const Sched *s) { return NQ0 + s->T + ND + 1; }
static char col_code(const Sched *s, int j) { return j < NQ0 + s->T ? 'q' : j < NQ0 + s->T + ND ? 'd' : 'b'; }
static Py_ssize_t col_size(const Sched *s, int j) { return col_code(s, j) == 'b' ? 1 : 8; }

/* column j is kept: every column, or in the lean no-cache run (lean()) e2e_s, ttft_s and tpot_s alone */
static int col_kept(const Sched *s, int j) {
    int d = j - (NQ0 + s->T);
    return !s->lean || d == D_E2E || d == D_TTFT || d == D_TPOT;
}

/* rows the columns hold for m more (ncol + m): the rows already held (capcol) when enough, else the expected total
 * (reserve()) or 1.5x the rows held, whichever is larger, and at least ncol + m: a fleet feeding one request a
 * call grows them O(log n) times, not once per request */
static Py_ssize_t col_target(const Sched *s, Py_ssize_t m) {
    Py_ssize_t need = s->ncol + m, t = s->capcol + s->capcol / 2;
    if (need <= s->capcol) return s->capcol;
    if (t < s->expect) t = s->expect;
    return t > need ? t : need;
}

/* The columns are Columns (_stepcols.h: created at the first feed) of capcol rows, grown by col_target's rule with
 * col_resize: no byte of them is written when they are made or grown (array.array could only be grown by
 * copying values in: frombytes of the initial 0s and NaNs was one copy of every byte, counted one instruction a
 * byte by callgrind), and their pages are those a previous call's dead columns left resident (pcs/_kept.h). A row's values are all written by the loop itself, once each: the KV-wait mark (D_WAIT, at
 * the feed, scratch until the first admission), the zeros of the columns that only some admissions set or that
 * add up (row_start, at the first admission), the first
 * admission's (first_columns), the finish's (finish_columns); columns() hands them out once every fed request
 * has finished, so no unwritten row is ever read. With the GIL; 0 or -1 */
static int init_columns(Sched *s, Py_ssize_t m) {
    int n = ncols(s);
    for (int j = 0; j < n; j++)
        if (!s->cols[j] && col_kept(s, j) && !(s->cols[j] = col_new())) return -1;
    Py_ssize_t cap = col_target(s, m);
    if (cap == s->capcol) { s->ncol += m; return 0; }
    for (int j = 0; j < n; j++) {
        if (!s->cols[j]) continue;
        if (col_resize(s->cols[j], cap * col_size(s, j)) < 0) return -1;
        void *p = col_bytes(s->cols[j]);   /* valid until the next resize (here or columns()) */
        int d = j - (NQ0 + s->T);
        if (d < 0) s->q[j] = p; else if (d < ND) s->dc[d] = p; else s->trunc = p;
    }
    s->capcol = cap;
    s->ncol += m;
    return 0;
}

/* row k's cells that no admission or finish is sure to write, set at its first admission, before its restores
 * (full run; the lean run keeps no such column): the bytes restored and decode blocks cached (summed over its admissions), the restore and
 * link-wait seconds (its first admission's restores, when it has any), the tiers' hit tokens below the GPU
 * (first_columns writes the GPU's always, the others when a lower tier hit); 0 each, as the Python reference's
 * rows start (pcs.engine.scheduler.StepEngine) */
static inline void row_start(Sched *s, int64_t k) {
    int64_t *rbytes = s->q[Q_RBYTES], *dec = s->q[Q_DECODE];   /* (read before the stores: they may alias s) */
    double *rest = s->dc[D_RESTORE], *wlink = s->dc[D_WLINK];
    rbytes[k] = dec[k] = 0;
    rest[k] = wlink[k] = 0.0;
    for (int j = 1; j < s->T; j++) s->q[NQ0 + j][k] = 0;
}

/* the rows past ncol (held ahead by col_target) cut off the columns, before they are handed out; 0 or -1 */
static int cut_columns(Sched *s) {
    for (int j = 0; j < ncols(s) && s->capcol > s->ncol; j++)
        if (s->cols[j] && col_resize(s->cols[j], s->ncol * col_size(s, j)) < 0) return -1;
    s->capcol = s->ncol;
    return 0;
}

static void note_peak(Sched *s, int64_t held) { if (held > s->peak) s->peak = held; }

static inline __attribute__((always_inline)) int note_held(Sched *s, const int lean) {
    if (lean) return 0;             /* no peak (lean()) */
    int64_t held = h_held(s);
    if (held < 0) return -1;
    note_peak(s, held);
    return 0;
}

/* ---------------------------------------------------------------- requests */
static void req_free(Sched *s, int32_t i) {
    Req *r = &s->rq[i];
    adm_release(s, r);
    Py_CLEAR(r->chain);
    r->pre = NULL;
    r->live = 0;                    /* r->hashes keeps its buffer for the slot's next request */
    s->freel[s->nfree++] = i;
}

/* a new slot (none free: the array grown when full; out of line, req_new's cold part) */
static __attribute__((noinline)) int32_t req_grow(Sched *s) {
    if (s->nrq == s->caprq) {
        int32_t c = s->caprq ? 2 * s->caprq : 256;
        Req *a = PyMem_Realloc(s->rq, sizeof(Req) * c);
        int32_t *f = a ? PyMem_Realloc(s->freel, sizeof(int32_t) * c) : NULL;
        if (a) s->rq = a;
        if (!f) { PyErr_NoMemory(); return -1; }
        s->freel = f; s->caprq = c;
    }
    memset(&s->rq[s->nrq], 0, sizeof(Req));   /* a new slot: no buffers yet */
    return s->nrq++;
}

static inline __attribute__((always_inline)) int32_t req_new(Sched *s) {
    return s->nfree ? s->freel[--s->nfree] : req_grow(s);
}

/* StepEngine._admission: cacheable blocks (the chain: the first n of chain_ids(r)), hit cap, extra slots, fixed */
static inline __attribute__((always_inline)) int admission_args(Sched *s, Req *r, int64_t *n, int64_t *cap,
                                                                int64_t *extra, int *fixed) {
    int64_t p = r->p;
    if (s->no_cache) { *n = 0; *cap = 0; }
    else if (r->first) { *n = r->n0; *cap = r->cap0; }
    else {
        *n = r->n0 + r->chain_dh;
        int64_t c = bdiv(s, p - 1);
        c = c > 0 ? c : 0;
        *cap = s->last_token ? (*n < c ? *n : c) : *n;
    }
    *fixed = r->preemptions >= s->max_preempt;
    int64_t tokens = *fixed ? p + (r->o - r->out) - 1 : p;
    int64_t e = -bdiv(s, -tokens) - *n;
    *extra = e > 0 ? e : 0;
    return 0;
}

/* one admission's restores, as restores.plan gives them: per lower tier with blocks, begin and transfer */
typedef struct { int64_t blocks[8], nbytes[8]; double begin[8], xfer[8]; int j[8], n; } Plan;

static void plan_restores(const Sched *s, const int64_t *restored, Plan *pl) {
    pl->n = 0;
    for (int j = 1; j < s->T; j++) {
        int64_t blocks = restored[j];
        if (!blocks) continue;
        int64_t bpb = s->bpb[j], nbytes = blocks * bpb;
        if (s->gh) { nbytes = s->gh_bytes[j]; bpb = nbytes / blocks; }    /* restores.plan: bytes per pool */
        int x = pl->n++;
        pl->j[x] = j; pl->blocks[x] = blocks; pl->nbytes[x] = nbytes;
        pl->xfer[x] = s->bw[j] > 0 ? transfer_s(s, j, nbytes, bpb) : 0.0;
        pl->begin[x] = s->link_free[j] > s->now ? s->link_free[j] : s->now;
    }
}

/* restores.commit: occupy the links, count them; returns the restore seconds, *nbytes the bytes */
static double commit_restores(Sched *s, const Plan *pl, const int64_t *th, const double *pre, int64_t *nbytes) {
    double worst = 0.0;
    int64_t total = 0, above[8];
    above[0] = above[1] = th[0];
    for (int j = 2; j < s->T; j++) above[j] = above[j - 1] + th[j - 1];
    for (int x = 0; x < pl->n; x++) {
        int j = pl->j[x];
        double end = pl->begin[x] + pl->xfer[x];
        s->link_free[j] = end;
        double dur = end - s->now;
        if (dur > worst) worst = dur;
        total += pl->nbytes[x];
        Link *lk = &s->links[j];
        lk->restores += 1;
        lk->blocks += pl->blocks[x];
        lk->nbytes += pl->nbytes[x];
        lk->restore_s += dur;
        lk->transfer_s += pl->xfer[x];
        lk->overhead_s += s->bw[j] > 0 ? s->setup[j] : 0.0;
        if (pre) {
            double full = pre[above[j]], rem = pre[above[j] + th[j]];
            lk->full_s += full;
            lk->remaining_s += rem;
            if (dur > full - rem) { lk->slower += 1; lk->slower_blocks += pl->blocks[x]; }
        }
    }
    *nbytes = total;
    return worst;
}

/* StepEngine._restores with the layerwise policy: the hit blocks kept */
static inline __attribute__((always_inline)) int64_t restores(Sched *s, Req *r, int64_t hits, int64_t lead,
                                                              const int64_t *th, const int64_t *rb) {
    if (hits == th[0]) return hits;
    int64_t bs = s->bs, p = r->p;
    Plan pl;
    plan_restores(s, rb, &pl);
    double land = -INFINITY, begin = -INFINITY;
    for (int x = 0; x < pl.n; x++) {
        if (pl.begin[x] + pl.xfer[x] > land) land = pl.begin[x] + pl.xfer[x];
        if (pl.begin[x] > begin) begin = pl.begin[x];
    }
    int64_t t_lead = lead * bs < p ? lead * bs : p, t_hits = hits * bs < p ? hits * bs : p;
    double saved = prefill_alone_s(s, p - t_lead, t_lead) - prefill_alone_s(s, p - t_hits, t_hits);
    s->considered++;
    if (land - s->now > saved) {
        s->losing++;
        if (s->fallback) { s->skipped++; return lead; }
    }
    int64_t nbytes;
    double restore_s = commit_restores(s, &pl, th, r->first ? r->pre : NULL, &nbytes);
    s->q[Q_RBYTES][r->k] += nbytes;     /* every admission's restores: the link's bytes (semantics.md §8) */
    if (r->first) {
        s->dc[D_RESTORE][r->k] = restore_s;
        s->dc[D_WLINK][r->k] = begin - s->now;
    }
    r->land = s->now + restore_s;
    return hits;
}

/* StepEngine._first_columns (and _kept_tiers): hits, wait and tier columns of a first admission */
static int first_columns(Sched *s, Req *r, const AdmInfo *ai, int64_t kept, int64_t ht, int64_t hits,
                         const int64_t *th, const int64_t *rb, int64_t lead) {
    int64_t k = r->k, bs = s->bs, **tc = s->q + NQ0, blocks[8];
    if (kept == hits && kept == th[0]) { s->tier_hits[0] += kept; tc[0][k] = ht; }
    else {
        int64_t last = 0;
        if (kept == hits) {
            last = ai->last_hit_tier;
            for (int j = 0; j < s->T; j++) blocks[j] = th[j];
        } else {
            int64_t left = kept - lead;
            blocks[0] = lead;
            for (int j = 1; j < s->T; j++) {
                int64_t t = left < rb[j] ? left : rb[j];
                blocks[j] = t; left -= t;
                if (t) last = j;
            }
        }
        for (int j = 0; j < s->T; j++) {
            s->tier_hits[j] += blocks[j];
            tc[j][k] = blocks[j] * bs + (j == last ? ht - kept * bs : 0);
        }
    }
    Py_ssize_t prefix = ai->prefix_hit_blocks, trunc = ai->truncated;
    s->q[Q_HIT][k] = kept;
    s->q[Q_MISSED][k] = r->n0 - prefix;
    s->q[Q_HTOK][k] = ht;
    s->q[Q_RECOMP][k] = hits - kept;
    s->trunc[k] = (char)trunc;
    s->dc[D_WAIT][k] = s->kv_acc + (s->kv_since > -INFINITY ? s->now - s->kv_since : 0.0) - r->kv_mark;
    s->dc[D_PREFILL][k] = r->pre ? r->pre[kept] : 0.0;
    return note_held(s, 0);         /* lean runs skip first_columns */
}

/* StepEngine._truncated_again: a truncated re-admission counts r as truncated, once (docs/semantics.md §5) */
static void truncated_again(Sched *s, Req *r) {
    if (!s->trunc[r->k]) {
        s->trunc[r->k] = 1;
        s->outgrown++;
    }
}

/* StepEngine._admit: 1 admitted, 0 no KV space, -1 error (lean: a constant, as begin_) */
static inline __attribute__((always_inline)) int admit_(Sched *s, int32_t ri, const int lean) {
    Req *r = &s->rq[ri];
    int64_t n, cap, extra;
    int fixed;
    if (admission_args(s, r, &n, &cap, &extra, &fixed) < 0) return -1;
    int got = h_start(s, r, n, cap, extra, lean);
    if (got <= 0) return got;
    Py_CLEAR(r->chain);
    if (!lean && r->first) row_start(s, r->k);      /* before restores(): it adds to the row's restored bytes */
    AdmInfo ai;
    if (h_info(s, r, &ai, lean) < 0) return -1;
    const int64_t *th = ai.th, *rb = ai.rb;
    int64_t hits = ai.hit_blocks, lead = ai.gpu_lead_blocks;
    r->grows = !(fixed || ai.truncated);
    r->seq = s->seq++;
    if (s->gh && attr_list(s, r->adm, s_rbytes, s->gh_bytes) < 0) return -1;
    int64_t skipped = s->skipped, kept = restores(s, r, hits, lead, th, rb), bs = s->bs, p = r->p;
    if (s->gh && s->skipped != skipped && s->gh_api->restore_skipped(s->gh, r->adm) < 0) return -1;
    int64_t ht = kept * bs;
    r->ctx = ht < p ? ht : p - 1;
    r->rem = p - r->ctx;
    run_append(s, ri);
    pf_append(s, ri);
    if (r->first) {
        if (!lean && first_columns(s, r, &ai, kept, ht < p ? ht : p, hits, th, rb, lead) < 0) return -1;
        if (s->gh && s->gh_api->first_admission(s->gh) < 0) return -1;
        if (!s->no_cache) memcpy(r->hashes, r->ids0, sizeof(uint64_t) * r->n0);  /* in cache: start just read them */
        r->ids0 = NULL; r->pre = NULL;
        s->kpend = -1;                  /* its feed's row is read no more */
        r->first = 0;
        s->admitted++;
    } else {
        s->recompute_tokens += r->rem;
        if (ai.truncated && !lean) truncated_again(s, r);      /* lean: no truncated column to count once by */
    }
    return 1;
}

static __attribute__((noinline)) int admit_full(Sched *s, int32_t ri) { return admit_(s, ri, 0); }
static __attribute__((noinline)) int admit_lean(Sched *s, int32_t ri) { return admit_(s, ri, 1); }

static inline int materialize(Sched *s);

/* StepEngine._compose: the prefill chunks of the step at now into s->cr / s->cn; their number or -1 */
static inline __attribute__((always_inline)) Py_ssize_t compose(Sched *s, const int lean) {
    int64_t left = s->budget - s->d;
    Py_ssize_t nch = 0;
    for (Py_ssize_t i = 0; i < s->npf; i++) {
        if (left <= 0) return nch;
        Req *r = &s->rq[s->pf[i]];
        int64_t n = r->rem < left ? r->rem : left;
        s->cr[nch] = s->pf[i]; s->cn[nch++] = n;
        left -= n;
    }
    if (!waiting(s) || left <= 0 || s->blocked) return nch;
    while (waiting(s) && left > 0 && s->nrun < s->max_seqs) {
        if (!s->wn && materialize(s) < 0) return -1;
        int32_t ri = s->wq[s->wh];
        int ok = lean ? admit_lean(s, ri) : admit_full(s, ri);
        if (ok < 0) return -1;
        if (!ok) {
            s->blocked = 1;
            if (s->kv_since == -INFINITY) s->kv_since = s->now;
            break;
        }
        s->wh = (s->wh + 1) & (s->wcap - 1); s->wn--;
        Req *r = &s->rq[ri];
        int64_t n = r->rem < left ? r->rem : left;
        s->cr[nch] = ri; s->cn[nch++] = n;
        left -= n;
    }
    return nch;
}

/* StepEngine._elapse: steps taking seconds (stall included) ran from now (inline in its two callers, once per
 * step; busy_slow, the bins' slow path, out of line) */
static inline __attribute__((always_inline)) int elapse(Sched *s, double seconds, double stall, int64_t steps,
                                                       const int lean) {
    double now = s->now;
    if (now + seconds >= s->next_sample && take(s, now + seconds) < 0) return -1;
    if (add_busy(s, now, seconds, lean) < 0) return -1;
    if (stall != 0.0) s->stall_s += stall;
    s->steps += steps;
    if (!lean) s->area_s += (double)s->in_system * seconds;
    s->now = now + seconds;
    s->G += steps;
    s->S += s->d * steps;
    return 0;
}

static int idle(Sched *s, double until) {
    if (until >= s->next_sample && take(s, until) < 0) return -1;
    if (!s->lean) s->area_s += (double)s->in_system * (until - s->now);
    s->now = until;
    return 0;
}

/* r's next block boundary from step g on, when it comes before its last step, into the blk queue (inline: once per
 * block a request grows by) */
static inline __attribute__((always_inline)) int push_boundary(Sched *s, Req *r, int32_t ri, int64_t g) {
    int64_t kv = r->kv0 + (g - r->g0);
    int64_t nxt = g + bmod(s, -kv);
    if (nxt < r->g0 + (r->o - r->out)) return evq_push(&s->blk, nxt, r->seq, r->ep, ri);
    return 0;
}

static void release(Sched *s) {
    s->blocked = 0;
    if (s->kv_since > -INFINITY) { s->kv_acc += s->now - s->kv_since; s->kv_since = -INFINITY; }
}

/* StepEngine._cache_decode: cache r's first m decode blocks */
static int cache_decode(Sched *s, Req *r, int64_t m) {
    if (m <= r->dh_in) return 0;
    if (h_extend(s, r, r->hashes + r->n0 + r->dh_in, m - r->dh_in) < 0) return -1;
    s->q[Q_DECODE][r->k] += m - r->dh_in;
    s->decode_cached += m - r->dh_in;
    r->dh_in = m;
    return 0;
}

static inline __attribute__((always_inline)) int finish_columns(Sched *s, Req *r, const int lean) {
    int64_t k = r->k;
    double now = s->now, ttft = r->ttft - r->arrival;
    s->dc[D_TTFT][k] = ttft;
    if (lean) {                  /* lean(): the three columns kept, the latest finish */
        s->dc[D_E2E][k] = now - r->arrival;
        s->dc[D_TPOT][k] = r->o > 1 ? (now - r->ttft) / (double)(r->o - 1) : NAN;
        if (now > s->fmax) s->fmax = now;
        return 0;
    }
    s->dc[D_PSTEPS][k] = r->prefill_s;
    s->dc[D_EXPOSED][k] = r->exposed_s;
    double rest = ttft - s->dc[D_WAIT][k] - r->exposed_s - r->prefill_s;
    s->dc[D_WCOMP][k] = rest > 1e-9 ? rest : 0.0;
    s->dc[D_FINISH][k] = now;
    s->dc[D_E2E][k] = now - r->arrival;
    s->dc[D_TPOT][k] = r->o > 1 ? (now - r->ttft) / (double)(r->o - 1) : NAN;
    s->q[Q_PREEMPT][k] = r->preemptions;
    return 0;
}

/* StepEngine._finish: r is done at now (lean: a constant, as begin_) */
static inline __attribute__((always_inline)) int finish_(Sched *s, int32_t ri, const int lean) {
    Req *r = &s->rq[ri];
    if (r->ndh && r->grows) {
        int64_t m = bdiv(s, r->p0 + r->o - 1) - bdiv(s, r->p0);
        m = m > 0 ? m : 0;
        if (cache_decode(s, r, r->ndh < m ? r->ndh : m) < 0) return -1;
    }
    if (h_finish(s, r, lean) < 0) return -1;
    r->ep = ++s->epochs;
    run_remove(s, ri);
    s->in_system--;
    release(s);
    finish_columns(s, r, lean);
    req_free(s, ri);
    return 0;
}

static __attribute__((noinline)) int finish_full(Sched *s, int32_t ri) { return finish_(s, ri, 0); }
static __attribute__((noinline)) int finish_lean(Sched *s, int32_t ri) { return finish_(s, ri, 1); }
static inline __attribute__((always_inline)) int finish(Sched *s, int32_t ri, const int lean) {
    return lean ? finish_lean(s, ri) : finish_full(s, ri);
}

/* StepEngine._prefill_complete */
static inline __attribute__((always_inline)) int prefill_complete(Sched *s, int32_t ri, const int lean) {
    Req *r = &s->rq[ri];
    pf_remove(s, ri);
    if (h_done(s, r, lean) < 0) return -1;
    if (isnan_(r->ttft)) r->ttft = s->now;
    r->out += 1;
    if (r->out >= r->o) return finish(s, ri, lean);
    r->decoding = 1;
    r->kv0 = r->p; r->g0 = s->G;
    s->d += 1;
    s->S += r->p;
    if (evq_push(&s->fin, s->G + r->o - r->out, r->seq, r->ep, ri) < 0) return -1;
    return r->grows ? push_boundary(s, r, ri, s->G) : 0;
}

/* StepEngine._prefill_step: one step with prefill chunks and the decode batch */
static inline __attribute__((always_inline)) int prefill_step(Sched *s, Py_ssize_t nch, const int lean) {
    int64_t d = s->d, tokens = d;
    double now = s->now, comp = 0.0, mem = 0.0;
    int late = 0;
    for (Py_ssize_t x = 0; x < nch; x++) {
        Req *r = &s->rq[s->cr[x]];
        int64_t c = r->ctx, n = s->cn[x];
        comp += s->tok_s * (double)n + chunk_attn_s(s, n, c);
        mem += s->kv_seq + s->kv_tok * (double)c;
        tokens += n;
        if (r->land > now) late = 1;
    }
    int64_t S = s->S;
    double weights = s->w_act * (double)tokens;
    double memory = (weights < s->w_tot ? weights : s->w_tot) + mem + (double)d * s->kv_seq + s->kv_tok * (double)S;
    double step = comp + (double)d * (s->tok_s + s->attn_seq) + s->attn_tok * (double)S;
    if (memory > step) step = memory;
    double stall = 0.0;
    if (late) {
        for (Py_ssize_t x = 0; x < nch; x++) {
            Req *r = &s->rq[s->cr[x]];
            if (!(r->land > now)) continue;
            double window = step * (double)(s->layers - 1) / (double)s->layers;
            double e = r->land - now - window;
            e = e > 0 ? e : 0.0;
            if (isnan_(r->ttft)) r->exposed_s += e;
            if (e > stall) stall = e;
            r->land = -INFINITY;
        }
    }
    s->prefill_steps++;
    s->open_nch = nch;                  /* StepEngine._prefill_step returns the step: _end applies the chunks */
    s->open_step = step;
    return elapse(s, step + stall, stall, 1, lean);
}

/* StepEngine._chunks_ran: the step's chunks (s->cr, s->cn) ran; finished prefills complete */
static inline __attribute__((always_inline)) int chunks_ran(Sched *s, Py_ssize_t nch, double step, const int lean) {
    for (Py_ssize_t x = 0; x < nch; x++) {
        int32_t ri = s->cr[x];
        Req *r = &s->rq[ri];
        r->ctx += s->cn[x];
        if (!lean && isnan_(r->ttft)) r->prefill_s += step;      /* lean: no prefill_steps_s column */
        r->rem -= s->cn[x];
        if (!r->rem && prefill_complete(s, ri, lean) < 0) return -1;
    }
    return 0;
}

/* StepEngine._preempt: free v's blocks, back to the head of the queue */
static inline __attribute__((always_inline)) int preempt(Sched *s, int32_t vi, const int lean) {
    Req *v = &s->rq[vi];
    v->ep = ++s->epochs;
    run_remove(s, vi);
    if (v->decoding) {
        int64_t kv = v->kv0 + (s->G - v->g0);
        s->d -= 1;
        s->S -= kv;
        v->decoding = 0;
        v->out += s->G - v->g0;
        int64_t m = bdiv(s, kv) - bdiv(s, v->p0);
        m = m > 0 ? m : 0;
        m = v->ndh < m ? v->ndh : m;
        if (cache_decode(s, v, m) < 0 || h_finish(s, v, lean) < 0) return -1;
        v->p = v->p0 + v->out;
        v->chain_dh = m;
        v->dh_in = m;
    } else {
        pf_remove(s, vi);
        if (h_abort(s, v, lean) < 0) return -1;
    }
    adm_release(s, v);
    v->land = -INFINITY;
    v->preemptions += 1;
    s->preemptions += 1;
    if (wq_push_front(s, vi) < 0) return -1;
    release(s);
    return 0;
}

/* StepEngine._victim: the youngest running request that grows */
static int32_t victim(Sched *s) {
    for (int32_t i = s->rtail; i >= 0; i = s->rq[i].rprev) if (s->rq[i].grows) return i;
    PyErr_SetString(PyExc_AssertionError, "no request to preempt");
    return -1;
}

/* one more GPU slot for r: 1 granted, 0 none obtainable, -1 error */
static inline __attribute__((always_inline)) int grow1(Sched *s, Req *r, const int lean) { return h_grow1(s, r, lean); }

/* StepEngine._grow_now: the block boundaries of step G */
static inline __attribute__((always_inline)) int grow_now(Sched *s, const int lean) {
    EvQ *blk = &s->blk;
    while (blk->n && evq_top_step(blk) <= s->G) {
        HEnt top = evq_top(blk);
        Req *r = &s->rq[top.r];
        if (top.ep != r->ep || !r->live) { evq_pop(blk); continue; }
        int ok = grow1(s, r, lean);
        if (ok < 0) return -1;
        if (ok) {
            evq_pop(blk);
            if (push_boundary(s, r, top.r, s->G + 1) < 0) return -1;
        } else {
            int32_t v = victim(s);
            if (v < 0 || preempt(s, v, lean) < 0) return -1;
        }
    }
    return note_held(s, lean);
}

/* StepEngine._grow_ahead: serve the boundaries of steps G+1 .. G+k-1; the steps that can run, or -1 */
static inline __attribute__((always_inline)) int64_t grow_ahead(Sched *s, int64_t k, const int lean) {
    EvQ *blk = &s->blk;
    int64_t limit = s->G + k;
    while (blk->n && evq_top_step(blk) < limit) {
        HEnt top = evq_top(blk);
        Req *r = &s->rq[top.r];
        if (top.ep != r->ep || !r->live) { evq_pop(blk); continue; }
        int ok = grow1(s, r, lean);
        if (ok < 0) return -1;
        if (!ok) return note_held(s, lean) < 0 ? -1 : hkey_step(top.ks) - s->G;
        evq_pop(blk);
        if (push_boundary(s, r, top.r, hkey_step(top.ks) + 1) < 0) return -1;
    }
    return note_held(s, lean) < 0 ? -1 : k;
}

/* StepEngine._decode_skip: pure decode steps until the first finish, block shortage or a step at >= t */
static inline __attribute__((always_inline)) int decode_skip(Sched *s, double t, const int lean) {
    EvQ *fin = &s->fin;
    while (fin->n) {                    /* stale entries (a preempted or finished request's) off the top */
        HEnt top = evq_top(fin);        /* then its slot (in one expression, unsequenced) */
        if (top.ep == s->rq[top.r].ep && s->rq[top.r].live) break;
        evq_pop(fin);
    }
    if (!fin->n) { PyErr_SetString(PyExc_AssertionError, "decoding requests without a finish"); return -1; }
    int64_t most = evq_top_step(fin) - s->G;
    int64_t k = t == INFINITY ? most : decode_steps_within(s, s->d, s->S, t - s->now, most);
    if (!s->skip) k = 1;
    if (s->blk.n && evq_top_step(&s->blk) < s->G + k) {
        k = grow_ahead(s, k, lean);
        if (k < 0) return -1;
    }
    return elapse(s, decode_run_s(s, s->d, s->S, k), 0.0, k, lean);
}

/* StepEngine._finish_due */
static inline __attribute__((always_inline)) int finish_due(Sched *s, const int lean) {
    EvQ *fin = &s->fin;
    while (fin->n && evq_top_step(fin) <= s->G) {
        HEnt top = evq_top(fin);
        evq_pop(fin);
        Req *r = &s->rq[top.r];
        if (top.ep != r->ep || !r->live) continue;
        int64_t kv = r->kv0 + (s->G - r->g0);
        s->d -= 1;
        s->S -= kv;
        r->decoding = 0;
        r->out = r->o;
        if (finish(s, top.r, lean) < 0) return -1;
    }
    return 0;
}

/* StepEngine._begin: the first half of an iteration (1: began, 0: nothing to run before t, -1: error); lean: a
 * constant (begin_full, begin_lean: the per-step work of the lean no-cache run compiled apart, so the full run
 * tests nothing for it) */
static inline __attribute__((always_inline)) int begin_(Sched *s, double t, const int lean) {
    s->open_nch = 0;
    if (s->blk.n && evq_top_step(&s->blk) <= s->G && grow_now(s, lean) < 0) return -1;
    Py_ssize_t nch = compose(s, lean);
    if (nch < 0) return -1;
    if (nch) { if (prefill_step(s, nch, lean) < 0) return -1; }
    else if (s->d) { if (decode_skip(s, t, lean) < 0) return -1; }
    else {
        if (t == INFINITY) return 0;
        if (idle(s, t) < 0) return -1;
    }
    return 1;
}

/* StepEngine._end: the second half, at the end of the step (lean as begin_) */
static inline __attribute__((always_inline)) int end_(Sched *s, const int lean) {
    Py_ssize_t nch = s->open_nch;
    s->open_nch = 0;
    if (nch && chunks_ran(s, nch, s->open_step, lean) < 0) return -1;
    if (s->fin.n && evq_top_step(&s->fin) <= s->G && finish_due(s, lean) < 0) return -1;
    return 0;
}

static __attribute__((noinline)) int begin_full(Sched *s, double t) { return begin_(s, t, 0); }
static __attribute__((noinline)) int begin_lean(Sched *s, double t) { return begin_(s, t, 1); }
static __attribute__((noinline)) int end_full(Sched *s) { return end_(s, 0); }
static __attribute__((noinline)) int end_lean(Sched *s) { return end_(s, 1); }
static int begin(Sched *s, double t) { return s->lean ? begin_lean(s, t) : begin_full(s, t); }
static int end(Sched *s) { return s->lean ? end_lean(s) : end_full(s); }

/* StepEngine._run_until (lean as begin_): begin_ and end_ inline, so an iteration is one call's body (run_until_full,
 * run_until_lean; the halves apart, begin_full ... end_lean, are a fleet's clock's: clock_advance) */
static inline __attribute__((always_inline)) int run_until_(Sched *s, double t, const int lean) {
    unsigned int spins = s->spins;
    int rc = 0;
    while (s->now < t) {
        if (!(++spins % SIGNAL_EVERY) && (rc = check_signals(s)) < 0) break;    /* Ctrl-C (check_signals) */
        int b = begin_(s, t, lean);
        if (b <= 0) { rc = b; break; }
        if ((rc = end_(s, lean)) < 0) break;
    }
    s->spins = spins;
    return rc;
}

static __attribute__((noinline)) int run_until_full(Sched *s, double t) { return run_until_(s, t, 0); }
static __attribute__((noinline)) int run_until_lean(Sched *s, double t) { return run_until_(s, t, 1); }
static int run_until(Sched *s, double t) { return s->lean ? run_until_lean(s, t) : run_until_full(s, t); }

/* ---------------------------------------------------------------- feeding */
/* request k in a slot, last in the queue: arrival taken a, KV-wait mark kv_mark (both as at its feed) */
static inline __attribute__((always_inline)) int new_request(Sched *s, int64_t k, double a, double kv_mark, int64_t p, int64_t o, int64_t n0,
                       int64_t cap0, const uint64_t *ids, const uint64_t *dh, int64_t ndh, const double *pre) {
    int32_t ri = req_new(s);
    if (ri < 0) return -1;
    Req *r = &s->rq[ri];
    /* every field but hashes / hcap (the slot's buffer, reused) set here, one store each (a memset of the whole
     * record and the stores over it were ~40 instructions more a request): a field added to Req is set here too */
    r->out = r->seq = r->rem = r->ctx = r->kv0 = r->g0 = r->preemptions = r->dh_in = r->chain_dh = r->nslots = 0;
    r->prefill_s = r->exposed_s = 0.0;
    r->decoding = 0;
    r->adm = r->chain = NULL;
    r->rprev = r->rnext = -1;
    r->ai = -1; r->ids0 = ids; r->pre = pre;
    r->k = k; r->arrival = a; r->p0 = r->p = p; r->o = o; r->n0 = n0; r->cap0 = cap0; r->ndh = ndh;
    r->land = -INFINITY; r->ttft = NAN; r->first = 1; r->grows = 1; r->live = 1;
    r->ep = ++s->epochs;
    r->kv_mark = kv_mark;
    int64_t nid = s->no_cache && !ndh ? 0 : n0;   /* the no-cache run looks up no block (admission_args: n = 0) */
    if (nid + ndh + 1 > r->hcap) {
        PyMem_Free(r->hashes);
        r->hcap = nid + ndh + 1;
        if (!(r->hashes = PyMem_Malloc(sizeof(uint64_t) * r->hcap))) { r->hcap = 0; PyErr_NoMemory(); return -1; }
    }
    if (ndh) memcpy(r->hashes + n0, dh, sizeof(uint64_t) * ndh);   /* read up to its finish: kept */
    s->kpend = k;
    return wq_push_back(s, ri);
}

/* the first request not yet in a slot (kf) into one, last in the queue, from its feed's row; its KV-wait mark was
 * kept in its D_WAIT cell (scratch until first_columns), its arrival taken is its feed's arrival clamped again here
 * (mat_arrival: the same running maximum feed_rows took over the same arrivals in the same order, so the same
 * value). Nothing else of the row is written before its first admission (row_start there): a 10x Mooncake call
 * holds ~12,500 requests fed and not admitted on average, so cells written at the feed were out of the caches
 * again by the admission -- each of those lines brought in twice, where now once. */
static inline __attribute__((always_inline)) int materialize(Sched *s) {
    int64_t k = s->kf;
    if (s->kpend >= 0) { PyErr_SetString(PyExc_AssertionError, "a request taken in and not admitted"); return -1; }
    while (k >= s->feeds[s->fh].k0 + s->feeds[s->fh].m) s->fh++;
    const Feed *f = &s->feeds[s->fh];
    const Py_buffer *b = f->b;
    Py_ssize_t i = k - f->k0;
    const int64_t *prompt = b[B_PROMPT].buf, *cache = b[B_CACHE].buf, *off = b[B_OFF].buf;
    const int64_t *doff = b[B_DECOFF].buf, *poff = b[B_PREOFF].buf;
    const uint64_t *hash = b[B_HASH].buf;
    int64_t p = prompt[i], ndh = 0;
    const uint64_t *dh = NULL;
    if (b[B_DECOFF].len && cache[i] == bdiv(s, p)) {
        dh = (const uint64_t *)b[B_DEC].buf + doff[i];
        ndh = doff[i + 1] - doff[i];
    }
    const double *pre = b[B_PRE].len ? (const double *)b[B_PRE].buf + poff[i] : NULL;
    double a = ((const double *)b[B_ARR].buf)[i];
    if (a < s->mat_arrival) a = s->mat_arrival;
    s->mat_arrival = a;
    s->kf++;
    return new_request(s, k, a, s->lean ? 0.0 : s->dc[D_WAIT][k], p, ((const int64_t *)b[B_OUT].buf)[i], cache[i],
                       ((const int64_t *)b[B_CAP].buf)[i], hash + off[i], dh, ndh, pre);
}

/* the feeds whose rows are all in slots: buffers released (with the GIL); the held ones move to the front once
 * half the array is released ones (a fleet feeds one request a call: amortised O(1) per feed) */
static void feeds_release(Sched *s) {
    int64_t done = s->kpend >= 0 ? s->kpend : s->kf;      /* rows before it are read no more */
    while (s->f0 < s->nfeeds && done >= s->feeds[s->f0].k0 + s->feeds[s->f0].m) {
        for (int j = 0; j < NB; j++) PyBuffer_Release(&s->feeds[s->f0].b[j]);
        s->f0++;
    }
    if (s->fh < s->f0) s->fh = s->f0;
    if (!s->f0 || s->f0 < s->nfeeds - s->f0) return;
    memmove(s->feeds, s->feeds + s->f0, sizeof(Feed) * (size_t)(s->nfeeds - s->f0));
    s->nfeeds -= s->f0;
    s->fh -= s->f0;
    s->f0 = 0;
}

/* feed()'s buffers b (m rows) held as the next feed (the call's references move there); 0 or -1 */
static int feeds_push(Sched *s, Py_buffer *b, Py_ssize_t m) {
    if (s->nfeeds == s->capfeeds) {
        Py_ssize_t c = s->capfeeds ? 2 * s->capfeeds : 8;
        Feed *a = PyMem_Realloc(s->feeds, sizeof(Feed) * (size_t)c);
        if (!a) { PyErr_NoMemory(); return -1; }
        s->feeds = a; s->capfeeds = c;
    }
    Feed *f = &s->feeds[s->nfeeds++];
    memcpy(f->b, b, sizeof(Py_buffer) * NB);
    f->k0 = s->fed; f->m = m;
    return 0;
}

/* the m rows of the last feed arrive in order: the clock runs to each arrival, then it waits, not yet in a slot */
static int feed_rows(Sched *s, const Py_buffer *b, Py_ssize_t m) {
    const double *arr = b[B_ARR].buf;
    if (!s->fed && m) {   /* every clock starts at the first arrival (docs/semantics.md §9, clock start) */
        s->origin_s = s->now = arr[0];
        for (int j = 0; j < s->T; j++) s->link_free[j] = arr[0];
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        double a = arr[i];
        if (a < s->last_arrival) a = s->last_arrival;
        s->last_arrival = a;
        if (s->now < a) {
            if (run_until(s, a) < 0) return -1;
            if (s->now < a && idle(s, a) < 0) return -1;
        }
        if (a >= s->next_sample && take(s, a) < 0) return -1;
        if (!s->lean) {                 /* lean: no wait_s column, no in-system area */
            s->dc[D_WAIT][s->fed] = s->kv_acc + (s->kv_since > -INFINITY ? s->now - s->kv_since : 0.0);
            s->area_s += s->now - a;
        }
        s->fed++;
        s->in_system++;
    }
    return 0;
}

/* The row checks of check_buffers, as one flag over all rows: every condition of every row evaluated (no branch a
 * row, so the compiler vectorizes each loop; with AVX2 four rows an instruction, where the short-circuit loop was
 * ~28 instructions a row, ~6.7 M a 10x Mooncake call's two runs). Differences taken modulo 2^64 (no signed
 * overflow on hostile offsets): a row whose offsets are out of range is bad by another term anyway, and in range
 * the difference is exact. off: m + 1 entries; nh: the hash buffer's entries. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__)
#define ROWS_CLONES __attribute__((noinline, target_clones("avx2", "default")))
#else
#define ROWS_CLONES __attribute__((noinline))
#endif
ROWS_CLONES static int rows_bad(const int64_t *restrict off, const int64_t *restrict cache,
                                const int64_t *restrict cap, Py_ssize_t m, int64_t nh) {
    int64_t bad = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t span = (int64_t)((uint64_t)off[i + 1] - (uint64_t)off[i]);
        bad |= (int64_t)(off[i] < 0) | (int64_t)(off[i + 1] > nh) | (int64_t)(cache[i] < 0)
            | (int64_t)(cache[i] > span) | (int64_t)(cap[i] < 0) | (int64_t)(cap[i] > cache[i]);
    }
    return bad != 0;
}

/* a prefill row (preoff[i] .. preoff[i] + cap[i], cap[i] + 1 entries) past the table's npre entries, or before it
 * (cap[i] in [0, the hash buffer's length] by rows_bad, so npre - 1 - cap[i] does not overflow); decode offsets
 * past nd */
ROWS_CLONES static int pre_bad(const int64_t *restrict preoff, const int64_t *restrict cap, Py_ssize_t m,
                               int64_t npre) {
    int64_t bad = 0;
    for (Py_ssize_t i = 0; i < m; i++) bad |= (int64_t)(preoff[i] < 0) | (int64_t)(preoff[i] > npre - 1 - cap[i]);
    return bad != 0;
}

ROWS_CLONES static int dec_bad(const int64_t *restrict decoff, Py_ssize_t m, int64_t nd) {
    int64_t bad = 0;
    for (Py_ssize_t i = 0; i < m; i++) bad |= (int64_t)(decoff[i + 1] > nd);
    return bad != 0;
}

static int check_buffers(Py_buffer *b, Py_ssize_t m) {
    Py_ssize_t n8[NB];
    for (int j = 0; j < NB; j++) {
        if (b[j].len % 8) { PyErr_SetString(PyExc_ValueError, "feed: need 8-byte items"); return -1; }
        n8[j] = b[j].len / 8;
    }
    int bad = n8[B_PROMPT] != m || n8[B_OUT] != m || n8[B_CACHE] != m || n8[B_CAP] != m || n8[B_OFF] != m + 1
        || (n8[B_PRE] && n8[B_PREOFF] != m + 1) || (n8[B_DECOFF] && n8[B_DECOFF] != m + 1);
    const int64_t *off = b[B_OFF].buf, *cache = b[B_CACHE].buf, *cap = b[B_CAP].buf;
    bad = bad || rows_bad(off, cache, cap, m, n8[B_HASH])     /* cap[i] in [0, cache[i]] when not bad: pre_bad's */
        || (n8[B_PRE] && pre_bad(b[B_PREOFF].buf, cap, m, n8[B_PRE]))
        || (n8[B_DECOFF] && dec_bad(b[B_DECOFF].buf, m, n8[B_DEC]));
    if (bad) { PyErr_SetString(PyExc_ValueError, "feed: inconsistent column lengths or offsets"); return -1; }
    return 0;
}

static PyObject *sched_feed(Sched *s, PyObject *args) {
    Py_buffer b[NB];
    long long bs;
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "Ly*y*y*y*y*y*y*y*y*y*y*", &bs, &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6],
                          &b[7], &b[8], &b[9], &b[10])) {
        for (int j = 0; j < NB; j++) if (b[j].obj) PyBuffer_Release(&b[j]);
        return NULL;
    }
    Py_ssize_t m = b[B_ARR].len / 8;
    int rc = -1;
    if (bs < 1 || (s->bs && bs != s->bs)) PyErr_SetString(PyExc_ValueError, "feed: block sizes differ or < 1");
    else if (s->slots && b[B_DECOFF].len)
        PyErr_SetString(PyExc_ValueError, "feed: decode blocks for a loop counting its GPU slots (count_slots())");
    else if (check_buffers(b, m) == 0 && enter(s)) {
        s->bs = bs;
        s->bsh = (bs & (bs - 1)) ? -1 : __builtin_ctzll((unsigned long long)bs);
        feeds_release(s);
        if (init_columns(s, m) == 0 && feeds_push(s, b, m) == 0) {
            memset(b, 0, sizeof b);         /* held by the feed now */
            gil_release(s);
            rc = feed_rows(s, s->feeds[s->nfeeds - 1].b, m);
            gil_take(s);
            feeds_release(s);
        }
        s->busy = 0;
    }
    for (int j = 0; j < NB; j++) if (b[j].obj) PyBuffer_Release(&b[j]);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- a fleet's one clock */
/* StepEngine.clock_event: (now, 0) = the end of the step that began is due; (now, 1) = the next step begins;
   None = nothing to do until a request arrives (no restore is pending here: layerwise only) */
static PyObject *sched_clock_event(Sched *s, PyObject *unused) {
    if (s->half) return Py_BuildValue("(di)", s->now, 0);
    if (waiting(s) || s->nrun) return Py_BuildValue("(di)", s->now, 1);
    Py_RETURN_NONE;
}

/* StepEngine.clock_advance(until_s): run the next event (the two halves in turn are run_until's loop) */
static PyObject *sched_clock_advance(Sched *s, PyObject *arg) {
    double until = PyFloat_AsDouble(arg);
    if (until == -1.0 && PyErr_Occurred()) return NULL;
    if (!enter(s)) return NULL;
    s->busy = 0;                        /* with the GIL held throughout: only another thread's feed is excluded */
    if (s->half) {
        s->half = 0;
        if (end(s) < 0) return NULL;
    } else {
        int b = begin(s, until);
        if (b < 0) return NULL;
        s->half = b;
    }
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- results */
static PyObject *sched_close(Sched *s, PyObject *unused) {
    if (!enter(s)) return NULL;
    gil_release(s);
    int rc = run_until(s, INFINITY);
    gil_take(s);
    s->busy = 0;
    feeds_release(s);
    if (rc < 0) return NULL;
    if (waiting(s) || s->nrun) { PyErr_SetString(PyExc_AssertionError, "a request could never finish"); return NULL; }
    return PyFloat_FromDouble(s->now);
}

/* reserve(n): about n requests will be fed in all (a hint: any number may be fed); the columns are grown to hold
 * them at once (init_columns, col_target) instead of feed by feed */
static PyObject *sched_reserve(Sched *s, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    s->expect = n > 0 ? n : 0;
    Py_RETURN_NONE;
}

/* (admitted, waiting, [resident blocks per tier], [restored bytes per link], [link free per tier], running): a
 * time-series sample's state (StepEngine._snapshot) */
static PyObject *sched_state(Sched *s, PyObject *unused) {
    PyObject *res = PyList_New(s->T), *rb = PyList_New(s->T), *lf = PyList_New(s->T);
    if (!res || !rb || !lf) { Py_XDECREF(res); Py_XDECREF(rb); Py_XDECREF(lf); return NULL; }
    for (int j = 0; j < s->T; j++) {
        PyList_SET_ITEM(res, j, h_resident(s, j));
        PyList_SET_ITEM(rb, j, PyLong_FromLongLong(s->links[j].nbytes));
        PyList_SET_ITEM(lf, j, PyFloat_FromDouble(s->link_free[j]));
        if (!PyList_GET_ITEM(res, j)) { Py_DECREF(res); Py_DECREF(rb); Py_DECREF(lf); return NULL; }
    }
    return Py_BuildValue("(LnNNNn)", (long long)s->admitted, waiting(s), res, rb, lf, s->nrun);
}

/* (codes, columns): the per-request columns' bytes, handed out without a copy -- Columns (_stepcols.h) of int64 ones, then one
 * per tier, float64 ones, truncated int8 (codes: their array typecodes, "q", "d", "b"; order = stepnative.py's),
 * None for a column the lean run does not keep; once every fed request has finished (close(): before it a row may
 * hold values not written yet, init_columns), RuntimeError before; the loop then takes no more requests (out) */
static PyObject *sched_columns(Sched *s, PyObject *unused) {
    if (s->busy || waiting(s) || s->nrun) {
        PyErr_SetString(PyExc_RuntimeError, "columns() before every fed request has finished (close())");
        return NULL;
    }
    if (!s->cols[0] && !s->cols[NQ0 + s->T + D_TTFT] && init_columns(s, 0) < 0) return NULL;
    if (cut_columns(s) < 0) return NULL;
    int n = ncols(s);
    char codes[NQ0 + 8 + ND + 1];
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (int j = 0; j < n; j++) {
        PyObject *c = s->cols[j] ? s->cols[j] : Py_None;
        Py_INCREF(c);
        PyList_SET_ITEM(l, j, c);
        codes[j] = col_code(s, j);
    }
    s->out = 1;
    return Py_BuildValue("(s#N)", codes, (Py_ssize_t)n, l);
}

/* the latest finish_s, as Python's max() over the column finds it (the first of equal values; every row is
 * finished after close), or None without rows: the end state's sample time (ReplayEngine.close) */
static PyObject *finish_max(const Sched *s) {
    if (!s->ncol) Py_RETURN_NONE;
    if (s->lean) return PyFloat_FromDouble(s->fmax);      /* every row finished: the same maximum */
    const double *f = s->dc[D_FINISH];
    double m = f[0];
    for (Py_ssize_t i = 1; i < s->ncol; i++) if (f[i] > m) m = f[i];
    return PyFloat_FromDouble(m);
}

/* the SchedulerCounters fields, the ledger's peak and tier hits, per tier its link's counters, the latest finish;
 * busy_per_s an array('d') of the bins (one copy of the doubles: no float object per bin to make, read back by
 * numpy and free; pcs.engine.schedstats.SchedulerCounters holds the same type) */
static PyObject *sched_counters(Sched *s, PyObject *unused) {
    PyObject *bins = PyObject_CallFunction(array_type, "sy#", "d", s->bins ? (const char *)s->bins : "",
                                           (Py_ssize_t)sizeof(double) * s->nbins);
    PyObject *th = PyList_New(s->T), *lk = PyList_New(s->T);
    if (!bins || !th || !lk) { Py_XDECREF(bins); Py_XDECREF(th); Py_XDECREF(lk); return NULL; }
    for (int j = 0; j < s->T; j++) {
        Link *k = &s->links[j];
        PyList_SET_ITEM(th, j, PyLong_FromLongLong(s->tier_hits[j]));
        PyList_SET_ITEM(lk, j, Py_BuildValue("(LLLdddddLL)", (long long)k->restores, (long long)k->blocks,
                        (long long)k->nbytes, k->restore_s, k->transfer_s, k->overhead_s, k->full_s,
                        k->remaining_s, (long long)k->slower, (long long)k->slower_blocks));
    }
    return Py_BuildValue("{sLsLsdsdsNsdsLsLsLsLsLsLsLsdsisLsNsNsN}", "steps", (long long)s->steps,
                         "prefill_steps", (long long)s->prefill_steps, "busy_s", s->busy_s, "stall_s", s->stall_s,
                         "busy_per_s", bins, "origin_s", s->origin_s, "preemptions", (long long)s->preemptions,
                         "recompute_tokens", (long long)s->recompute_tokens,
                         "restores_considered", (long long)s->considered, "restores_losing", (long long)s->losing,
                         "restores_skipped", (long long)s->skipped, "decode_blocks_cached", (long long)s->decode_cached,
                         "requests_outgrown", (long long)s->outgrown,
                         "in_system_area_s", s->area_s, "bin_s", s->bin_s, "peak_reserved_blocks", (long long)s->peak,
                         "tier_hit_blocks", th, "links", lk, "finish_max_s", finish_max(s));
}

/* ---------------------------------------------------------------- the type */
static int seq_doubles(PyObject *o, int T, double *out) {
    PyObject *f = PySequence_Fast(o, "need a sequence");
    if (!f) return -1;
    if (PySequence_Fast_GET_SIZE(f) != T) { Py_DECREF(f); PyErr_SetString(PyExc_ValueError, "need one per tier"); return -1; }
    for (int j = 0; j < T; j++) out[j] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(f, j));
    Py_DECREF(f);
    return PyErr_Occurred() ? -1 : 0;
}

static int sched_alloc(Sched *s) {
    int T = s->T;
    s->setup = PyMem_Calloc(T, sizeof(double)); s->bw = PyMem_Calloc(T, sizeof(double));
    s->iops = PyMem_Calloc(T, sizeof(double)); s->link_free = PyMem_Calloc(T, sizeof(double));
    s->bpb = PyMem_Calloc(T, sizeof(int64_t)); s->tier_hits = PyMem_Calloc(T, sizeof(int64_t));
    s->links = PyMem_Calloc(T, sizeof(Link));
    s->rhead = s->rtail = -1; s->pf = s->pfbuf = PyMem_Calloc(2 * (s->max_seqs + 1), sizeof(int32_t));
    s->cr = PyMem_Calloc(s->max_seqs + 1, sizeof(int32_t)); s->cn = PyMem_Calloc(s->max_seqs + 1, sizeof(int64_t));
    if (!s->setup || !s->bw || !s->iops || !s->link_free || !s->bpb || !s->tier_hits || !s->links
        || !s->pfbuf || !s->cr || !s->cn) { PyErr_NoMemory(); return -1; }
    return 0;
}

/* the bound method m of the compiled hierarchy `self` (a builtin method whose __self__ is it) */
static int bound_to(PyObject *m, PyObject *self) {
    return m && PyCFunction_Check(m) && PyCFunction_GET_SELF(m) == self;
}

/* use the compiled hierarchy's C API (pcs/cache/_lruhier_api.h) when every method the loop calls, and the
 * resident callback, is that hierarchy's own bound C method: the C functions are those methods' bodies, so
 * the replay is the same; anything else (a wrapper, a Python hierarchy) keeps the Python calls */
static void hier_api(Sched *s) {
    PyObject *self = PyCFunction_Check(s->m_start) ? PyCFunction_GET_SELF(s->m_start) : NULL;
    PyObject *ms[] = {s->m_done, s->m_finish, s->m_grow, s->m_abort, s->m_extend, s->m_held, s->resident};
    if (!self) return;
    for (int j = 0; j < 7; j++) if (!bound_to(ms[j], self)) return;
    const PcsHierApi *api = PyCapsule_Import(PCS_LRUHIER_CAPSULE, 0);
    if (!api) { PyErr_Clear(); return; }
    if (api->version != PCS_LRUHIER_API_VERSION || Py_TYPE(self) != api->hier_type || api->ntiers(self) != s->T)
        return;
    s->apool = PyMem_Calloc(s->max_seqs + 1, sizeof(PcsAdm));
    s->afree = PyMem_Calloc(s->max_seqs + 1, sizeof(int32_t));
    if (!s->apool || !s->afree) { PyMem_Free(s->apool); PyMem_Free(s->afree); s->apool = NULL; s->afree = NULL; return; }
    for (int64_t i = 0; i <= s->max_seqs; i++) s->afree[i] = (int32_t)(s->max_seqs - i);   /* entry 0 first */
    s->nafree = (int32_t)(s->max_seqs + 1);
    Py_INCREF(self);
    s->hobj = self;
    s->api = api;
}

static int hier_methods(Sched *s, PyObject *h) {
    const char *names[] = {"start", "prefill_done", "finish", "grow", "abort", "extend", "held_blocks"};
    PyObject **slots[] = {&s->m_start, &s->m_done, &s->m_finish, &s->m_grow, &s->m_abort, &s->m_extend, &s->m_held};
    for (int j = 0; j < 7; j++) if (!(*slots[j] = PyObject_GetAttrString(h, names[j]))) return -1;
    PyObject *ids = PyObject_GetAttrString(h, "start_ids");     /* the same start, keys as a buffer: preferred */
    if (!ids) { PyErr_Clear(); return 0; }
    Py_SETREF(s->m_start, ids);
    s->start_ids = 1;
    hier_api(s);
    return 0;
}

static int sched_init(Sched *s, PyObject *args, PyObject *kw) {
    PyObject *h, *take, *resident, *setup, *bw, *iops, *bpb;
    long long budget, seqs, maxp;
    int layers, fallback, last_token, no_cache, skip;
    if (s->T) { PyErr_SetString(PyExc_TypeError, "already initialised"); return -1; }
    if (!PyArg_ParseTuple(args, "OOOOOOO(dddddddd)iLLLpppp", &h, &take, &resident, &setup, &bw, &iops, &bpb, &s->tok_s,
                          &s->pair_s, &s->kv_seq, &s->kv_tok, &s->attn_seq, &s->attn_tok, &s->w_act, &s->w_tot,
                          &layers, &budget, &seqs, &maxp, &fallback, &last_token, &no_cache, &skip)) return -1;
    Py_ssize_t T = PySequence_Size(setup);
    if (T < 1 || T > 8 || budget < 1 || seqs < 1 || seqs > budget || layers < 1) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "1..8 tiers, budget >= max_seqs >= 1, layers >= 1");
        return -1;
    }
    s->T = (int)T; s->budget = budget; s->max_seqs = seqs; s->max_preempt = maxp; s->layers = layers;
    s->fallback = fallback; s->last_token = last_token; s->no_cache = no_cache; s->skip = skip;
    s->now = 0.0; s->next_sample = s->last_arrival = s->mat_arrival = -INFINITY; s->kv_since = -INFINITY; s->bin_s = 1; s->kpend = -1;
    s->fmax = -INFINITY;
    Py_INCREF(take); s->take = take;
    Py_INCREF(resident); s->resident = resident;     /* before hier_methods: it checks the callback too */
    if (sched_alloc(s) < 0 || hier_methods(s, h) < 0 || seq_doubles(setup, s->T, s->setup) < 0
        || seq_doubles(bw, s->T, s->bw) < 0 || seq_doubles(iops, s->T, s->iops) < 0) return -1;
    double tmp[8];
    if (seq_doubles(bpb, s->T, tmp) < 0) return -1;
    for (int j = 0; j < s->T; j++) s->bpb[j] = (int64_t)tmp[j];
    return 0;
}

/* ---------------------------------------------------------------- hybrid models: set-up (pcs/engine/hybridnative.py) */
/* set_chunk_attention(terms, flops_per_s): prefill attention as [(kind, coef, param)] (chunk_attn_s above) */
static PyObject *sched_set_chunk_attention(Sched *s, PyObject *args) {
    PyObject *terms;
    double f;
    if (!PyArg_ParseTuple(args, "Od", &terms, &f)) return NULL;
    PyObject *seq = PySequence_Fast(terms, "terms: a sequence of (kind, coef, param)");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > MAX_TERMS || !(f > 0)) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "1..8 attention terms and flops_per_s > 0");
        return NULL;
    }
    for (Py_ssize_t x = 0; x < n; x++) {
        int kind;
        double coef, param;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, x), "idd", &kind, &coef, &param)) { Py_DECREF(seq); return NULL; }
        if (kind < PK_CAUSAL || kind > PK_LINEAR || ((kind == PK_WINDOW || kind == PK_CHUNK) && !(param >= 1))) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "attention term kind 0..3 (window and chunk: param >= 1)");
            return NULL;
        }
        s->term_kind[x] = kind; s->term_coef[x] = coef; s->term_param[x] = param;
    }
    Py_DECREF(seq);
    s->nterms = (int)n;
    s->attn_f = f;
    Py_RETURN_NONE;
}

/* set_hybrid(h): h a pcs.cache._grouphier.Hierarchy (the one whose methods the loop calls): it follows the loop's
 * clock, keeps first admissions' samples and uncounts skipped restores, through its C-level API */
static PyObject *sched_set_hybrid(Sched *s, PyObject *h) {
    if (s->api) {           /* the C API calls skip hy_tick: a loop over the compiled LRU hierarchy has no hooks */
        PyErr_SetString(PyExc_ValueError, "set_hybrid: the loop's hierarchy is the compiled LRU hierarchy");
        return NULL;
    }
    PyObject *cap = PyObject_CallMethod(h, "c_api", NULL);
    if (!cap) return NULL;
    const GHCApi *api = PyCapsule_GetPointer(cap, GH_CAPI_NAME);
    Py_DECREF(cap);          /* the capsule points at a static table of the loaded module */
    if (!api || api->follow(h) < 0) return NULL;
    Py_INCREF(h);
    Py_XSETREF(s->gh, h);
    s->gh_api = api;
    Py_RETURN_NONE;
}

static void sched_dealloc(Sched *s) {
    if (s->with) ((Sched *)s->with)->followers--;
    Py_CLEAR(s->with);
    for (int32_t i = 0; i < s->nrq; i++) {
        Req *r = &s->rq[i];
        if (r->live) { Py_CLEAR(r->adm); Py_CLEAR(r->chain); }
        PyMem_Free(r->hashes);
    }
    for (int64_t i = 0; s->apool && s->api && i <= s->max_seqs; i++) s->api->adm_free(&s->apool[i]);
    PyMem_Free(s->apool); PyMem_Free(s->afree);
    for (Py_ssize_t x = s->f0; x < s->nfeeds; x++) for (int j = 0; j < NB; j++) PyBuffer_Release(&s->feeds[x].b[j]);
    PyMem_Free(s->feeds);
    PyMem_Free(s->rq); PyMem_Free(s->freel); PyMem_Free(s->wq); PyMem_Free(s->pfbuf);
    PyMem_Free(s->cr); PyMem_Free(s->cn); evq_free(&s->fin); evq_free(&s->blk); PyMem_Free(s->bins);
    PyMem_Free(s->setup); PyMem_Free(s->bw); PyMem_Free(s->iops); PyMem_Free(s->bpb); PyMem_Free(s->link_free);
    PyMem_Free(s->tier_hits); PyMem_Free(s->links); PyMem_Free(s->sp.rows);
    for (int j = 0; j < NQ0 + 8 + ND + 1; j++) Py_XDECREF(s->cols[j]);
    Py_XDECREF(s->m_start); Py_XDECREF(s->m_done); Py_XDECREF(s->m_finish); Py_XDECREF(s->m_grow);
    Py_XDECREF(s->m_abort); Py_XDECREF(s->m_extend); Py_XDECREF(s->m_held); Py_XDECREF(s->take);
    Py_XDECREF(s->resident); Py_XDECREF(s->hobj); Py_XDECREF(s->gh);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

/* ---------------------------------------------------------------- the lean no-cache run
 * lean(): the no-cache run (no_cache, before its first feed) keeps only what the replay's summary reads of it
 * (pcs/engine/runner.py _close_beside, pcs/engine/schedstats.py _latency and latency_parts): the columns e2e_s,
 * ttft_s and tpot_s and the counters busy_s, origin_s, preemptions and the end time. The loop -- its steps,
 * admissions, preemptions and clock, so those values -- is the same; what it no longer makes: the other
 * columns (columns() gives None for them; 17 columns of 8 B a request and one of 1 B, grown at the feeds,
 * written at each feed, first admission and finish), the busy bins (busy_per_s empty), in_system_area_s (0),
 * peak_reserved_blocks (no held-slot count after each admission and grow), requests_outgrown (counted once a
 * request by its truncated column) and the per-request prefill seconds. The other counters are made as before.
 * The per-step part of the loop (begin_, end_) is compiled twice, lean a constant, so the full run pays no test
 * for it. tests/engine/test_stepsched_native.py diffs the kept values against the full run's. */
static PyObject *sched_lean(Sched *s, PyObject *unused) {
    if (!s->no_cache || s->fed || s->cols[0] || s->busy) {
        PyErr_SetString(PyExc_ValueError, "lean(): a no-cache loop, before its first feed");
        return NULL;
    }
    s->lean = 1;
    Py_RETURN_NONE;
}

/* count_slots(capacity): the lean no-cache run's GPU slots counted in the loop ("the no-cache run's slots" above),
 * capacity the GPU tier's slots (its capacity_blocks, >= 0: ValueError else); True when it does -- a lean loop on
 * the compiled hierarchy's C API (no hybrid hierarchy) whose GPU tier holds nothing (no resident block, no slot
 * held), before its first feed -- else False (the hierarchy is called as before). Its feeds then take no decode
 * blocks (ValueError). */
static PyObject *sched_count_slots(Sched *s, PyObject *arg) {
    Py_ssize_t cap = PyLong_AsSsize_t(arg);
    if (cap == -1 && PyErr_Occurred()) return NULL;
    if (cap < 0) { PyErr_SetString(PyExc_ValueError, "count_slots(capacity): capacity >= 0"); return NULL; }
    if (!s->lean || !s->api || s->gh || s->fed || s->busy || s->api->gpu_held(s->hobj)
        || s->api->num_resident(s->hobj, 0)) Py_RETURN_FALSE;
    s->slots = 1;
    s->slot_cap = cap;
    s->slot_res = 0;
    Py_RETURN_TRUE;
}

/* sample_here(step_s, max_samples): keep the time series in C from the first sample on (the loop must run without
 * the GIL: the compiled hierarchy's C API, no hybrid hooks; before any sample); True when it does, else False (the
 * loop goes on calling Sampler.take). */
static PyObject *sched_sample_here(Sched *s, PyObject *args) {
    double step;
    long long most;
    if (!PyArg_ParseTuple(args, "dL", &step, &most)) return NULL;
    if (!nogil(s) || s->sp.has_t0 || s->next_sample != -INFINITY || !(step > 0) || most < 2) Py_RETURN_FALSE;
    s->sp.on = 1; s->sp.step = step; s->sp.max = most;
    Py_RETURN_TRUE;
}

/* sample_block() -> (t0 or None, step_s, next_s, rows, T): the time series kept in C, as Sampler's attributes,
 * its rows as one bytes object of the C rows (SampRow: f8 boundary, i8 admitted, waiting, running, i8 x 8 resident
 * blocks, i8 x 8 restored bytes, f8 x 8 link free; 224 bytes a row, T tiers used), read as a numpy record array
 * (pcs.engine.series.SAMPLE_ROW): one copy, no Python object a value (a list of tuples made ~14 a row). */
static PyObject *sched_sample_block(Sched *s, PyObject *unused) {
    PyObject *rows = PyBytes_FromStringAndSize((const char *)s->sp.rows, (Py_ssize_t)sizeof(SampRow) * s->sp.n);
    if (!rows) return NULL;
    if (!s->sp.has_t0) return Py_BuildValue("(OddNi)", Py_None, s->sp.step, -INFINITY, rows, s->T);
    return Py_BuildValue("(dddNi)", s->sp.t0, s->sp.step, samp_next(&s->sp), rows, s->T);
}

/* sample_end(end_s) -> bool: ReplayEngine.close's end-state samples taken here when the loop keeps its series
 * (sample_here): Sampler.take at max(end_s, t0) (Python's max: t0 only when greater), then at the boundary that
 * returns, each with the loop's state as state() gives it; False (nothing taken) when the series is not kept here
 * or has no first boundary. end_s: the latest finish (s). After close(). */
static PyObject *sched_sample_end(Sched *s, PyObject *arg) {
    double end = PyFloat_AsDouble(arg);
    if (end == -1.0 && PyErr_Occurred()) return NULL;
    if (!s->sp.on || !s->sp.has_t0 || !s->api) Py_RETURN_FALSE;
    if (take_here(s, s->sp.t0 > end ? s->sp.t0 : end) < 0 || take_here(s, s->next_sample) < 0) return NULL;
    Py_RETURN_TRUE;
}

/* stop_with(loop): this loop stops (RuntimeError at its next signal check) when `loop` -- or any loop that stops
 * with it -- raises a stop signal while this one runs, and a stop this loop raises stops them (check_signals);
 * loop: another StepScheduler that stops with none itself (a group is one loop and those that stop with it) */
static PyObject *sched_stop_with(Sched *s, PyObject *o) {
    if (Py_TYPE(o) != Py_TYPE(s) || o == (PyObject *)s || ((Sched *)o)->with) {
        PyErr_SetString(PyExc_TypeError, "stop_with: another StepScheduler, one that stops with no other");
        return NULL;
    }
    if (s->with || s->followers) {     /* one level: a group is one loop and those that stop with it, set once */
        PyErr_SetString(PyExc_ValueError, "stop_with: this loop already stops with another, or others with it");
        return NULL;
    }
    if (s->busy) { PyErr_SetString(PyExc_RuntimeError, "stop_with: the step loop is running"); return NULL; }
    Py_INCREF(o);
    s->with = o;
    ((Sched *)o)->followers++;
    Py_RETURN_NONE;
}

static PyMethodDef sched_methods[] = {
    {"stop_with", (PyCFunction)sched_stop_with, METH_O,
     "stop_with(loop): stop (RuntimeError) when loop raises a stop signal while this one runs (check_signals)"},
    {"sample_end", (PyCFunction)sched_sample_end, METH_O,
     "sample_end(end_s) -> bool: the end state's two samples (ReplayEngine.close) taken in C, when kept here"},
    {"sample_block", (PyCFunction)sched_sample_block, METH_NOARGS,
     "(t0 or None, step_s, next_s, rows as bytes of the C rows, tiers) of the series kept in C"},
    {"sample_here", (PyCFunction)sched_sample_here, METH_VARARGS,
     "sample_here(step_s, max_samples) -> bool: keep the time series in C (Sampler.take's rule)"},
    {"lean", (PyCFunction)sched_lean, METH_NOARGS,
     "lean(): a no-cache loop keeps only e2e_s, ttft_s, tpot_s and the counters its summary reads (before any feed)"},
    {"feed", (PyCFunction)sched_feed, METH_VARARGS,
     "feed(block_size, arrival f8, prompt i8, output i8, cacheable i8, max_hit i8, offsets i8 (m+1), hashes u8, "
     "prefill table f8, its offsets i8 (m+1 or empty), decode offsets i8 (m+1 or empty), decode ids u8)"},
    {"reserve", (PyCFunction)sched_reserve, METH_O,
     "reserve(n): about n requests will be fed in all; the columns are sized for them at the next feed"},
    {"close", (PyCFunction)sched_close, METH_NOARGS, "run until every request has finished; returns the end time"},
    {"state", (PyCFunction)sched_state, METH_NOARGS,
     "(admitted, waiting, resident blocks per tier, restored bytes per link, link free per tier, running)"},
    {"count_slots", (PyCFunction)sched_count_slots, METH_O, "count_slots(capacity): the lean no-cache run's GPU slots counted in the loop, no hierarchy call"},
    {"columns", (PyCFunction)sched_columns, METH_NOARGS, "(codes, columns): per-request columns as Column buffers after close (order: pcs.engine.stepnative; None: not kept, lean())"},
    {"counters", (PyCFunction)sched_counters, METH_NOARGS, "counters (dict)"},
    {"clock_event", (PyCFunction)sched_clock_event, METH_NOARGS,
     "a fleet's one clock: (time, 0) the step's end is due, (time, 1) the next step begins, None: idle"},
    {"clock_advance", (PyCFunction)sched_clock_advance, METH_O, "clock_advance(until_s): run the next event"},
    {"set_chunk_attention", (PyCFunction)sched_set_chunk_attention, METH_VARARGS,
     "set_chunk_attention([(kind 0 causal 1 window 2 chunk 3 linear, coef flops/pair, window or chunk tokens)], "
     "flops_per_s): prefill attention as the model's attention_flops / flops_per_s"},
    {"set_hybrid", (PyCFunction)sched_set_hybrid, METH_O,
     "set_hybrid(h): the compiled hybrid hierarchy h (pcs.cache._grouphier.Hierarchy) follows the loop's clock"},
    {NULL}
};

static PyObject *sched_get_c_api(Sched *s, void *unused) { return PyBool_FromLong(s->api != NULL); }
static PyObject *sched_get_nogil(Sched *s, void *unused) {
    return PyBool_FromLong(nogil(s));
}

static PyGetSetDef sched_getset[] = {
    {"c_api", (getter)sched_get_c_api, NULL,
     "True: the hierarchy is called through its C API (pcs/cache/_lruhier_api.h), False: its Python methods", NULL},
    {"nogil", (getter)sched_get_nogil, NULL,
     "True: feed and close release the GIL (C API, no hosted Python policy, no hybrid hooks)", NULL},
    {NULL}
};

static PyTypeObject SchedType = {
    PCS_TYPE_CLASS("pcs.engine._stepsched.StepScheduler", Sched, sched_dealloc,
                   "The step scheduler's event loop (pcs.engine.scheduler.StepEngine, layerwise) over a compiled "
                   "hierarchy.", sched_methods, sched_getset, sched_init)};

static PyMethodDef mod_methods[] = {
    {"kept_bytes", col_kept_bytes, METH_NOARGS, "bytes the pool of dead columns' mappings keeps now (pcs/_kept.h)"},
    {"kept_clear", col_kept_clear, METH_NOARGS, "unmap every mapping the pool of dead columns keeps (tests)"},
    {NULL}
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_stepsched",
                                    "The step scheduler's event loop in C (pcs.engine.stepnative).", -1, mod_methods};

PyMODINIT_FUNC PyInit__stepsched(void) {
    if (PyType_Ready(&SchedType) < 0 || PyType_Ready(&ColumnType) < 0) return NULL;
    s_hit = PyUnicode_InternFromString("hit_blocks");
    s_hbpt = PyUnicode_InternFromString("hit_blocks_per_tier");
    s_rbpt = PyUnicode_InternFromString("restored_blocks_per_tier");
    s_lead = PyUnicode_InternFromString("gpu_lead_blocks");
    s_last = PyUnicode_InternFromString("last_hit_tier");
    s_prefix = PyUnicode_InternFromString("prefix_hit_blocks");
    s_trunc = PyUnicode_InternFromString("truncated");
    s_rbytes = PyUnicode_InternFromString("restored_bytes_per_tier");
    PyObject *arr = PyImport_ImportModule("array");
    array_type = arr ? PyObject_GetAttrString(arr, "array") : NULL;
    Py_XDECREF(arr);
    if (!array_type) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&SchedType);
    if (PyModule_AddObject(m, "StepScheduler", (PyObject *)&SchedType) < 0) { Py_DECREF(m); return NULL; }
    Py_INCREF(&ColumnType);
    if (PyModule_AddObject(m, "Column", (PyObject *)&ColumnType) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
