/* pcs.cache._grouphier: the hierarchy of a hybrid model (pcs/cache/grouphier.py, GroupHierarchy) in C.
 *
 * The compiled twin of the Python reference for vLLM's shared pool (one pool per tier level) with an LRU
 * policy on every level and no admission policy: cache groups with their own hit rules (pcs/cache/groups.py:
 * full, window, chunk, state; docs/semantics.md §3.1), the fixed point of the hit length, pins, reservations,
 * restores, demotion or write-through (§5-§7), the step scheduler's grow / abort / extend
 * (pcs/cache/groupstep.py) and the residency counters, peaks, series and per-request samples
 * (pcs/cache/residency.py, §11, §13). Statement for statement as the reference, in the same order, so every
 * admission, counter and end state is identical; pcs/cache/nativegroups.py wraps it and
 * tests/cache/test_grouphier_native.py diffs the two.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_nogil.h"          /* raw memory, GIL-safe errors: run_sequential may run without the GIL */
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "_grouphier_capi.h"
#include "_grouphier.h"

#define MAXL 8
#define MAXG 8
enum { R_FULL, R_WINDOW, R_CHUNK, R_STATE };

typedef struct { Key k; int32_t pos; int16_t g, lvl; } Rest;

typedef struct {
    PyObject_HEAD
    long long prefix_hit_blocks, hit_blocks, last_hit_tier, lost_blocks, gpu_lead_blocks, blocks;
    char truncated;
    PyObject *hbpt, *rbpt, *rbytes;
    Py_ssize_t reserved;
    int G;
    long long live[MAXG];
    KV hold[MAXG], release[MAXG], computed[MAXG], transient[MAXG];
    int32_t *rest;              /* (level, group) of each restored page, chain order */
    Py_ssize_t nrest, nrcap;
    PyObject *owner;            /* the hierarchy whose spare lists take this one's page lists back (or NULL) */
} GAdm;

typedef struct {
    PyObject_HEAD
    int L, G, wt, full0;
    PTier tier[MAXL];
    long long pb[MAXL];
    int rule[MAXG], align[MAXG];
    long long span[MAXG], pages[MAXG], B;
    long long written_blocks[MAXL], dropped_blocks;
    /* residency (pcs.cache.residency.Residency) */
    long long rp[MAXL][MAXG], gpeak[MAXL][MAXG], restored[MAXL][MAXG], written[MAXL][MAXG], dropped[MAXG];
    long long peak_bytes[MAXL], peak_pages[MAXL][MAXG], peak_held, last_pages[MAXG], last_lost;
    double peak_t[MAXL], step_s, clock, next;
    int has_next, auto_record;
    Py_ssize_t max_samples, ns, nscap, nr, nrcap;
    double *st;                 /* sample times */
    long long *sc;              /* per sample L x G pages */
    long long *req;             /* per admission sample G pages then the lost blocks */
    PyObject *clock_fn;
    /* one start()'s scratch (the reference's _Look and _Demand) */
    uint64_t *head;
    int32_t *t0, *where, *rcnt;  /* rcnt: rest_sort's counts per position */
    Py_ssize_t n, hcap, nt0, k;
    KV pin_now, hold[MAXG], release[MAXG], computed[MAXG], transient[MAXG], tmp, tmp2, tmp3;
    KV dem[2];                  /* evicted()'s pages pushed level to level (kept: no allocation per call) */
    Rest *rest, *rest2;         /* rest2: rest_sort's output, swapped with rest */
    Py_ssize_t nrest, rcap, rcap2, ecap;
    int32_t *eidx;              /* t_insert's entry per batch key (ecap), then its runs' ends (ecap) */
    long long extra, live[MAXG];
    uint64_t *rset;             /* first_repeat's set: hashes, the generation stamping each slot used */
    uint32_t *rgen, rstamp;
    Py_ssize_t rscap;
    KV *spare;                  /* page lists of finished admissions, kept for the next ones (kv_take, adm_dealloc) */
    Py_ssize_t nspare, spcap;
    /* the runs of the victims t_evict last listed (one length per run of one group block, in order), valid for the
     * list vr_of while it holds exactly vr_n keys and no t_evict ran since: the next level's insert of those victims
     * takes its runs from here instead of comparing the keys (ins_find) */
    int32_t *vr;
    Py_ssize_t vrcap, vr_n;
    const KV *vr_of;
} GH;

static PyTypeObject GAdmType, GHType;

/* ------------------------------------------------------------------ residency */
static void res_note(GH *s) {
    for (int j = 0; j < s->L; j++) {
        long long b = 0;
        for (int g = 0; g < s->G; g++) b += s->rp[j][g] * s->pb[j];
        if (b > s->peak_bytes[j]) {
            s->peak_bytes[j] = b;
            memcpy(s->peak_pages[j], s->rp[j], sizeof(long long) * MAXG);
            s->peak_t[j] = s->clock;
        }
        for (int g = 0; g < s->G; g++) if (s->rp[j][g] > s->gpeak[j][g]) s->gpeak[j][g] = s->rp[j][g];
    }
}

static int res_tick(GH *s, double t) {
    if (!s->has_next) { s->next = t; s->has_next = 1; }
    while (s->next <= t && s->ns < s->max_samples) {
        if (s->ns == s->nscap) {
            Py_ssize_t c = s->nscap ? s->nscap * 2 : 64;
            double *a = PyMem_Realloc(s->st, sizeof(double) * c);
            if (!a) { PyErr_NoMemory(); return -1; }
            s->st = a;
            long long *b = PyMem_Realloc(s->sc, sizeof(long long) * c * s->L * s->G);
            if (!b) { PyErr_NoMemory(); return -1; }
            s->sc = b;
            s->nscap = c;
        }
        s->st[s->ns] = s->next;
        for (int j = 0; j < s->L; j++)
            for (int g = 0; g < s->G; g++) s->sc[(s->ns * s->L + j) * s->G + g] = s->rp[j][g];
        s->ns++;
        s->next += s->step_s;
    }
    s->clock = t;
    return 0;
}

static int res_row(GH *s, const long long *pages, long long lost) {
    if (s->nr == s->nrcap) {
        Py_ssize_t c = s->nrcap ? s->nrcap * 2 : 1024;
        long long *a = PyMem_Realloc(s->req, sizeof(long long) * c * (s->G + 1));
        if (!a) { PyErr_NoMemory(); return -1; }
        s->req = a;
        s->nrcap = c;
    }
    memcpy(s->req + s->nr * (s->G + 1), pages, sizeof(long long) * s->G);
    s->req[s->nr * (s->G + 1) + s->G] = lost;
    s->nr++;
    return 0;
}

static int res_admitted(GH *s, long long lost, long long held) {
    if (s->auto_record) {
        if (res_row(s, s->rp[0], lost) < 0) return -1;
    } else {
        memcpy(s->last_pages, s->rp[0], sizeof(long long) * MAXG);
        s->last_lost = lost;
    }
    if (held > s->peak_held) s->peak_held = held;
    return 0;
}

/* the followed clock (GroupStepMixin._now) */
static int gh_now(GH *s) {
    if (!s->clock_fn) return 0;
    PyObject *r = PyObject_CallNoArgs(s->clock_fn);
    if (!r) return -1;
    double t = PyFloat_AsDouble(r);
    Py_DECREF(r);
    if (t == -1.0 && PyErr_Occurred()) return -1;
    return res_tick(s, t);
}

static long long held_bytes(GH *s) {
    PTier *t = &s->tier[0];
    return (long long)(t->nres - t->held + t->reserved) * s->pb[0];
}

/* ------------------------------------------------------------------ tier operations (pcs.cache.tier.Tier, LRU) */
static int lvl_of(GH *s, Key k) {
    for (int j = 0; j < s->L; j++) if (pt_find(&s->tier[j], k) >= 0) return j;
    return -1;
}

/* lvl_of through one memo per level (m[MAXL], PMEMO_INIT each): the pages of a block find its records once */
static int lvl_of_memo(GH *s, Key k, PMemo *m) {
    for (int j = 0; j < s->L; j++) if (pt_find_memo(&s->tier[j], k, &m[j]) >= 0) return j;
    return -1;
}
#define LEVEL_MEMOS(m) PMemo m[MAXL]; for (int j_ = 0; j_ < MAXL; j_++) m[j_] = (PMemo)PMEMO_INIT

/* Tier._evict: n victims, first victim first, appended to out (may be NULL), or with `drop` counted as pages
 * pushed out of the last level (GroupHierarchy._evicted's drop: only their groups are read); pages counted out. The
 * victims are the LRU list's first n entries, taken run by run: a run is the consecutive victims of one group block
 * (its pages lie side by side in the list when they were inserted, unpinned or touched together), so its record is
 * read once and deleted once, with its last page (a record's pin count reaches 0 only at the last page of its run:
 * the same deletions in the same order as page by page); then the list is cut once after the last victim */
static int t_evict(GH *s, int j, Py_ssize_t n, KV *out, int drop) {
    PTier *t = &s->tier[j];
    s->vr_of = NULL;            /* the last victims' runs: no longer trusted (their list may be written next) */
    if (n <= 0) return 0;
    if (drop) out = NULL;
    if (out && out->n + n > out->cap && PCS_GROW(out->a, &out->cap, out->n + n, 16) < 0) return -1;
    Key *o = out ? out->a + out->n : NULL;
    int32_t *vr = NULL;         /* the runs, when the victims start the list */
    if (o && !out->n) {
        if (n > s->vrcap && PCS_GROW(s->vr, &s->vrcap, n, 64) < 0) return -1;
        vr = s->vr;
    }
    Py_ssize_t nvr = 0;
    long long gone[MAXG] = {0};
    const int sh = t->shift;
    const uint32_t pm = (1u << sh) - 1;
    PEnt *ent = t->ent;
    int32_t e = t->head;
    for (Py_ssize_t i = 0; i < n;) {
        const int32_t r = e >> sh;
        BRec *rec = &t->blk.ent[r];
        const uint32_t g = rec->g;
        const Py_ssize_t i0 = i;
        if (o) {
            const uint64_t h = rec->h;
            const uint32_t tag = g << 16;
            do {                /* the list's end (-1) is no record's entry: (-1 >> sh) != r */
                o[i++] = (Key){h, tag | ((uint32_t)e & pm)};
                ent[e].pin = PT_ABSENT;
                e = ent[e].next;
            } while (i < n && (e >> sh) == r);
        } else {
            do {
                i++;
                ent[e].pin = PT_ABSENT;
                e = ent[e].next;
            } while (i < n && (e >> sh) == r);
        }
        const int32_t run = (int32_t)(i - i0);
        if (vr) vr[nvr++] = run;
        gone[g] += run;
        if ((rec->pin -= run) == 0) bt_del(&t->blk, r);
    }
    t->head = e;
    if (e >= 0) ent[e].prev = -1;
    else t->tail = -1;
    t->held -= n;
    t->nres -= n;
    for (int g = 0; g < s->G; g++) s->rp[j][g] -= gone[g];
    if (drop) {
        s->dropped_blocks += n;
        for (int g = 0; g < s->G; g++) s->dropped[g] += gone[g];
    }
    if (out) out->n += n;
    if (vr) { s->vr_of = out; s->vr_n = out->n; }
    t->evicted += n;
    return 0;
}

static void t_pin(PTier *t, const KV *v) {
    PMemo m = PMEMO_INIT;
    for (Py_ssize_t i = 0; i < v->n; i++) {
        int32_t e = pt_find_memo(t, v->a[i], &m);
        if (t->ent[e].pin == 0) pt_unlink(t, e);
        t->ent[e].pin++;
    }
}

/* Tier.unpin of the keys in reverse order (the reference passes keys[::-1]; every key is resident and pinned):
 * a run of one block's keys finds its record once; the pages whose pin count reaches 0 are appended to the LRU
 * list in that order (pt_append, the tail kept in a local) */
static void t_unpin_rev(PTier *t, const KV *v) {
    const int sh = t->shift;
    PEnt *ent = t->ent;
    int32_t tail = t->tail, base = 0;
    Py_ssize_t appended = 0;
    BKey b = {0, UINT32_MAX};       /* no group is UINT32_MAX: the first key looks up */
    for (Py_ssize_t i = v->n - 1; i >= 0; i--) {
        const Key k = v->a[i];
        if (k.h != b.h || k.tag >> 16 != b.g) {
            b = bkey_of(k);
            base = bt_find(&t->blk, b) << sh;
        }
        const int32_t e = base | PAGE_OF(k);
        if (--ent[e].pin == 0) {
            ent[e].prev = tail;
            ent[e].next = -1;
            *(tail >= 0 ? &ent[tail].next : &t->head) = e;
            tail = e;
            appended++;
        }
    }
    t->tail = tail;
    t->held += appended;
}

static Py_ssize_t t_count_evictable(PTier *t, const KV *v) {
    Py_ssize_t c = 0;
    PMemo m = PMEMO_INIT;
    for (Py_ssize_t i = 0; i < v->n; i++) c += t->ent[pt_find_memo(t, v->a[i], &m)].pin == 0;
    return c;
}

/* Tier.reserve on the GPU level (the caller checked n <= available) */
static int t_reserve(GH *s, Py_ssize_t n, KV *victims) {
    PTier *t = &s->tier[0];
    if (t_evict(s, 0, n - pt_free_slots(t), victims, 0) < 0) return -1;
    t->reserved += n;
    pt_peaks(t);
    return 0;
}

/* Tier.fill on the GPU level; the number of keys newly resident (-1: memory error) */
static Py_ssize_t t_fill(GH *s, const KV *v) {
    PTier *t = &s->tier[0];
    Py_ssize_t added = 0;
    const int sh = t->shift;
    int32_t r = -1;
    BKey b = {0, UINT32_MAX};       /* no group is UINT32_MAX: the first key looks up */
    for (Py_ssize_t i = 0; i < v->n; i++) {
        const Key k = v->a[i];
        if (k.h != b.h || k.tag >> 16 != b.g) {     /* a run of one block's keys: its record found (added) once */
            int fresh_rec;
            b = bkey_of(k);
            if ((r = bt_find_or_add(&t->blk, b, &fresh_rec)) < 0 || (fresh_rec && pt_ent_room(t) < 0)) return -1;
        }
        const int32_t e = r << sh | PAGE_OF(k);
        PEnt *x = &t->ent[e];
        if (x->pin == PT_ABSENT) {
            *x = (PEnt){1, -1, -1};
            t->blk.ent[r].pin++;
            t->nres++;
            added++;
            s->rp[0][b.g]++;
        } else {
            if (x->pin == 0) pt_unlink(t, e);
            x->pin++;
        }
    }
    t->reserved -= added;
    t->inserted += added;
    pt_peaks(t);
    return added;
}

/* Tier.touch of the keys in reverse order: unpinned ones move to the LRU end */
static void t_touch_rev(PTier *t, const KV *v) {
    PMemo m = PMEMO_INIT;
    for (Py_ssize_t i = v->n - 1; i >= 0; i--) {
        int32_t e = pt_find_memo(t, v->a[i], &m);
        if (e >= 0 && t->ent[e].pin == 0) {
            pt_unlink(t, e);
            pt_append(t, e);
        }
    }
}

static void dropped(GH *s, const KV *v) {
    s->dropped_blocks += v->n;
    for (Py_ssize_t i = 0; i < v->n; i++) s->dropped[GROUP_OF(v->a[i])]++;
}

/* the end of the run of keys of v's group block at i: the first index after i of another block (the keys of one
 * block lie together in every batch the hierarchy inserts: a block's pages as the demand lists them, or an
 * eviction's runs) */
static inline Py_ssize_t run_end(const KV *v, Py_ssize_t i) {
    const uint64_t h = v->a[i].h;
    const uint32_t g = v->a[i].tag >> 16;
    Py_ssize_t x = i + 1;
    while (x < v->n && v->a[x].h == h && v->a[x].tag >> 16 == g) x++;
    return x;
}

/* t_insert's first pass over keys [a, n) of v: each key's entry into eidx (-1: absent), the resident unpinned
 * ones unlinked (they go to the LRU end after the evictions); its record looked up once per run of one block
 * (no record is deleted here); the runs' ends into rend (the second pass walks the same runs), ~end for a run
 * whose block has no record (its keys all absent, eidx not written); the number of absent keys. The runs: from
 * `runs` (t_evict's), else every `unit` keys from index 0 when unit > 0 (a list of whole blocks of distinct
 * hashes, unit pages each: run_end would find the same ends), else compared key by key (run_end) */
static Py_ssize_t ins_find(PTier *t, const KV *v, Py_ssize_t a, int32_t *eidx, int32_t *rend, const int32_t *runs,
                           Py_ssize_t unit) {
    Py_ssize_t fresh = 0, nr = 0;
    const int sh = t->shift;
    for (Py_ssize_t i = a, x; i < v->n; i = x) {
        if (runs) x = i + runs[nr];
        else if (unit > 0) { x = i == a ? a - a % unit + unit : i + unit; if (x > v->n) x = v->n; }  /* one division */
        else x = run_end(v, i);
        const int32_t r = bt_find(&t->blk, bkey_of(v->a[i]));
        if (r < 0) {            /* a block with no page here: its keys are all absent (no entries written) */
            rend[nr++] = ~(int32_t)x;
            fresh += x - i;
            continue;
        }
        rend[nr++] = (int32_t)x;
        for (Py_ssize_t y = i; y < x; y++) {
            const int32_t e = r << sh | PAGE_OF(v->a[y]);
            const int32_t pin = t->ent[e].pin;
            if (pin == PT_ABSENT) { eidx[y] = -1; fresh++; }
            else {
                eidx[y] = e;
                if (pin == 0) pt_unlink(t, e);
            }
        }
    }
    return fresh;
}

/* the m > 0 absent pages keys[0 .. m) of the record whose first entry is base, unpinned and linked one after another
 * after the LRU list's tail (ins_add's all-absent run); the new tail */
static inline int32_t link_absent_run(PTier *t, const Key *keys, Py_ssize_t m, int32_t base, int32_t tail) {
    PEnt *ent = t->ent;
    int32_t e = base | PAGE_OF(keys[0]);
    *(tail >= 0 ? &ent[tail].next : &t->head) = e;
    ent[e].pin = 0;
    ent[e].prev = tail;
    for (Py_ssize_t y = 1; y < m; y++) {
        const int32_t f = base | PAGE_OF(keys[y]);
        ent[e].next = f;
        ent[f].pin = 0;
        ent[f].prev = e;
        e = f;
    }
    ent[e].next = -1;
    return e;
}

/* t_insert's second pass over the runs ins_find found: keys [a, n) of v added unpinned where absent (their record
 * looked up again, once per run with an absent key: the evictions may have deleted it; added when absent) and
 * appended to the LRU list in order (pt_add_rec then pt_append, the links kept in locals); pages added per group
 * into added; 0, or -1 on a memory error */
static int ins_add(PTier *t, const KV *v, Py_ssize_t a, const int32_t *eidx, const int32_t *rend, long long *added) {
    const int sh = t->shift;
    PEnt *ent = t->ent;
    int32_t tail = t->tail;
    Py_ssize_t appended = 0, nres = 0;
    for (Py_ssize_t i = a, x, nr = 0; i < v->n; i = x) {
        x = rend[nr++];
        int32_t r = -1, got = 0;
        if (x < 0) {            /* all absent: one record, every key added and appended */
            x = ~x;
            int fresh_rec;
            if ((r = bt_find_or_add(&t->blk, bkey_of(v->a[i]), &fresh_rec)) < 0 || (fresh_rec && pt_ent_room(t) < 0)) {
                t->tail = tail; t->held += appended; t->nres += nres;
                return -1;
            }
            ent = t->ent;
            tail = link_absent_run(t, v->a + i, x - i, r << sh, tail);
            got = (int32_t)(x - i);
            appended += got;
        } else for (Py_ssize_t y = i; y < x; y++) {
            int32_t e = eidx[y];
            if (e < 0) {
                if (r < 0) {
                    int fresh_rec;
                    if ((r = bt_find_or_add(&t->blk, bkey_of(v->a[i]), &fresh_rec)) < 0
                        || (fresh_rec && pt_ent_room(t) < 0)) {
                        t->tail = tail; t->held += appended; t->nres += nres;
                        return -1;
                    }
                    ent = t->ent;
                }
                e = r << sh | PAGE_OF(v->a[y]);
                ent[e].pin = 0;
                got++;
            } else if (ent[e].pin) continue;
            ent[e].prev = tail;
            ent[e].next = -1;
            *(tail >= 0 ? &ent[tail].next : &t->head) = e;
            tail = e;
            appended++;
        }
        if (got) {
            t->blk.ent[r].pin += got;
            nres += got;
            added[v->a[i].tag >> 16] += got;
        }
    }
    t->tail = tail;
    t->held += appended;
    t->nres += nres;
    return 0;
}

/* Tier.insert (GroupHierarchy._insert) of v at level j: pushed (victims, then the cut keys) into out, or with
 * `drop` counted as pages pushed out of the last level; unit > 0: v is whole group blocks of distinct hashes, unit
 * keys each (ins_find's runs without comparing keys), else 0; returns the keys newly written, or -1 on a memory
 * error */
static Py_ssize_t t_insert(GH *s, int j, const KV *v, KV *out, int drop, Py_ssize_t unit) {
    PTier *t = &s->tier[j];
    Py_ssize_t room = pt_free_slots(t) + t->held, ncut, gone = 0;
    if (room < 0) room = 0;
    ncut = v->n > room ? v->n - room : 0;
    for (Py_ssize_t i = 0; i < ncut; i++) {
        int32_t e = pt_find(t, v->a[i]);
        if (e >= 0 && t->ent[e].pin == 0) {
            pt_unlink(t, e);
            pt_del(t, e);
            s->rp[j][GROUP_OF(v->a[i])]--;
            gone++;
        }
    }
    t->evicted += gone;
    t->overflow += ncut - gone;
    if (v->n > s->ecap) {       /* the batch's entries, found once: evictions below never free them */
        int32_t *x = PyMem_Realloc(s->eidx, sizeof(int32_t) * 2 * v->n);
        if (!x) { PyErr_NoMemory(); return -1; }
        s->eidx = x;
        s->ecap = v->n;
    }
    int32_t *rend = s->eidx + s->ecap;      /* the runs' ends */
    const int32_t *runs = !ncut && s->vr_of == v && s->vr_n == v->n ? s->vr : NULL;   /* v: t_evict's victims */
    Py_ssize_t fresh = ins_find(t, v, ncut, s->eidx, rend, runs, unit);
    if (t_evict(s, j, fresh - pt_free_slots(t), out, drop) < 0) return -1;
    long long added[MAXG] = {0};
    if (ins_add(t, v, ncut, s->eidx, rend, added) < 0) return -1;
    for (int g = 0; g < s->G; g++) {
        s->rp[j][g] += added[g];
        if (j) s->written[j][g] += added[g];
    }
    t->inserted += fresh;
    pt_peaks(t);
    if (drop) {
        KV cut = {v->a, ncut, ncut};
        dropped(s, &cut);
    } else for (Py_ssize_t i = 0; i < ncut; i++) if (out && kv_push(out, v->a[i]) < 0) return -1;
    return fresh;
}

/* GroupHierarchy._evicted: GPU victims demoted level by level (write-back) or dropped (write-through) */
static int evicted(GH *s, const KV *victims) {
    if (s->wt || !victims->n) return 0;
    const KV *cur = victims;
    for (int j = 1; j < s->L; j++) {     /* the last level's victims are counted as dropped, not listed */
        KV *nx = (cur == &s->dem[0]) ? &s->dem[1] : &s->dem[0];
        nx->n = 0;
        Py_ssize_t w = t_insert(s, j, cur, nx, j == s->L - 1, 0);
        if (w < 0) return -1;
        s->written_blocks[j] += w;
        cur = nx;
        if (!cur->n) return 0;
    }
    dropped(s, cur);
    return 0;
}

/* write-through of pages (already in the order the reference inserts them) into every lower level */
static int write_down(GH *s, const KV *down) {
    KV pushed = {0};
    for (int j = 1; j < s->L; j++) {
        pushed.n = 0;
        Py_ssize_t w = t_insert(s, j, down, &pushed, j == s->L - 1, 0);
        if (w < 0) { kv_free(&pushed); return -1; }
        s->written_blocks[j] += w;
    }
    kv_free(&pushed);
    return 0;
}

static int kv_reversed(KV *dst, const KV *src) {
    dst->n = 0;
    if (kv_room(dst, src->n) < 0) return -1;
    const Key *a = src->a + src->n;
    Key *o = dst->a;
    for (Py_ssize_t i = 0; i < src->n; i++) o[i] = *--a;
    dst->n = src->n;
    return 0;
}

/* ------------------------------------------------------------------ the hit rules (pcs/cache/groups.py) */
static long long window_blocks(GH *s, int g) { return (s->span[g] - 1 + s->B - 1) / s->B; }
static long long chunk_start(GH *s, int g, long long k) { return k * s->B / s->span[g] * s->span[g] / s->B; }

static long long need_from(GH *s, int g, long long k) {
    switch (s->rule[g]) {
    case R_WINDOW: { long long m = k - window_blocks(s, g); return m > 0 ? m : 0; }
    case R_CHUNK: return chunk_start(s, g, k);
    case R_STATE: return k > 1 ? k - 1 : 0;
    default: return 0;
    }
}

static long long keep_from(GH *s, int g, long long n) { return s->rule[g] == R_STATE ? n : need_from(s, g, n); }

static long long hold_blocks(GH *s, int g) {
    switch (s->rule[g]) {
    case R_WINDOW: return window_blocks(s, g) + 1;
    case R_CHUNK: {   /* 1 + ceil((C - gcd(C, B)) / B): pcs.cache.groups.chunk_hold_blocks */
        long long a = s->span[g], b = s->B;
        while (b) { long long t = a % b; a = b; b = t; }
        return 1 + (s->span[g] - a + s->B - 1) / s->B;
    }
    case R_STATE: return 1;
    default: return -1;
    }
}

/* the slowest level holding a page of block i of group g, -1 when a page is missing (_Look.tier) */
static int tier_of(GH *s, int g, Py_ssize_t i) {
    if (g == 0 && i < s->nt0) return s->t0[i];
    int worst = 0;
    LEVEL_MEMOS(m);
    for (long long p = 0; p < s->pages[g]; p++) {
        Key k = {s->head[i], (uint32_t)(g << 16 | p)};
        int t = lvl_of_memo(s, k, m);
        if (t < 0) return -1;
        if (t > worst) worst = t;
    }
    return worst;
}

static int present(GH *s, int g, Py_ssize_t i, int gpu_only) {
    int t = tier_of(s, g, i);
    return gpu_only ? t == 0 : t >= 0;
}

/* CacheGroup.longest */
static long long longest(GH *s, int g, long long limit, int gpu) {
    long long k;
    switch (s->rule[g]) {
    case R_FULL:
        for (k = 0; k < limit && present(s, g, k, gpu); k++) {}
        return k;
    case R_WINDOW: {
        long long m = window_blocks(s, g), run = 0;
        if (m == 0) return limit;
        for (long long i = limit - 1; i >= 0; i--) {
            if (present(s, g, i, gpu)) { if (++run >= m) return i + m; }
            else run = 0;
        }
        return run;
    }
    case R_CHUNK:
        for (k = chunk_start(s, g, limit); k < limit && present(s, g, k, gpu); k++) {}
        return k;
    default: {
        long long u = s->span[g] / s->B;
        k = limit - limit % u;
        while (k > 0 && !present(s, g, k - 1, gpu)) k -= u;
        return k;
    }
    }
}

/* groups.fixed_point; full_lead < 0: None */
static long long fixed_point(GH *s, long long limit, int gpu, long long full_lead) {
    long long k = limit;
    for (;;) {
        long long before = k;
        for (int g = 0; g < s->G; g++) {
            if (s->rule[g] == R_FULL && g == 0 && full_lead >= 0) { if (full_lead < k) k = full_lead; }
            else k = longest(s, g, k, gpu);
        }
        if (k == before) return k;
    }
}

/* _Look.lead: group 0's leading blocks resident in some tier, their levels in t0 */
static Py_ssize_t look_lead(GH *s) {
    s->nt0 = 0;
    for (Py_ssize_t i = 0; i < s->n; i++) {
        int t;
        if (s->pages[0] == 1) { Key k = {s->head[i], 0}; t = lvl_of(s, k); }
        else t = tier_of(s, 0, i);
        if (t < 0) break;
        s->t0[s->nt0++] = t;
    }
    return s->nt0;
}

/* ------------------------------------------------------------------ the demand of one hit length (_Demand) */
static int push_rest(GH *s, Key k, Py_ssize_t pos, int g, int lvl) {
    if (s->nrest == s->rcap && PCS_GROW(s->rest, &s->rcap, s->nrest + 1, 64) < 0) return -1;
    Rest *r = &s->rest[s->nrest++];
    r->k = k;
    r->pos = (int32_t)pos;
    r->g = (int16_t)g;
    r->lvl = (int16_t)lvl;
    return 0;
}

static Key key_of(GH *s, Py_ssize_t i, int g, long long p) {
    Key k = {s->head[i], (uint32_t)(g << 16 | p)};
    return k;
}

/* GroupHierarchy._read: block i of group g is read: its GPU pages pinned, the others restored */
static int d_read(GH *s, int g, Py_ssize_t i, long long keep) {
    LEVEL_MEMOS(m);
    const long long np = s->pages[g];
    KV *h = i >= keep ? &s->hold[g] : &s->release[g];
    if (kv_room(h, np) < 0 || kv_room(&s->pin_now, np) < 0) return -1;
    for (long long p = 0; p < np; p++) {
        Key k = key_of(s, i, g, p);
        int t = lvl_of_memo(s, k, m);
        if (t > s->where[i]) s->where[i] = t;
        h->a[h->n++] = k;
        if (t == 0) s->pin_now.a[s->pin_now.n++] = k;
        else if (push_rest(s, k, i, g, t) < 0) return -1;
    }
    return 0;
}

/* GroupHierarchy._demand_full: group 0 of the full rule */
static int d_full(GH *s, Py_ssize_t k, Py_ssize_t lead) {
    long long np = s->pages[0];
    KV *cp = &s->computed[0];
    if (np == 1) {              /* k <= lead (admit): at most lead keys held and pinned, n - k computed */
        KV *hold = &s->hold[0], *pin = &s->pin_now;
        if (kv_room(hold, lead) < 0 || kv_room(pin, lead) < 0 || kv_room(cp, s->n - k) < 0) return -1;
        for (Py_ssize_t i = 0; i < lead; i++) {
            int t = s->t0[i];
            Key key = key_of(s, i, 0, 0);
            if (i < k) s->where[i] = t;
            else if (t) { cp->a[cp->n++] = key; continue; }
            hold->a[hold->n++] = key;
            if (t == 0) pin->a[pin->n++] = key;
            else if (push_rest(s, key, i, 0, t) < 0) return -1;
        }
    } else {
        for (Py_ssize_t i = 0; i < k; i++) if (d_read(s, 0, i, 0) < 0) return -1;
        for (Py_ssize_t i = k; i < lead; i++) {
            LEVEL_MEMOS(m);
            for (long long p = 0; p < np; p++) {
                Key key = key_of(s, i, 0, p);
                if (lvl_of_memo(s, key, m) == 0) {
                    if (kv_push(&s->pin_now, key) < 0 || kv_push(&s->hold[0], key) < 0) return -1;
                } else if (kv_push(&s->computed[0], key) < 0) return -1;
            }
        }
    }
    if (s->n > lead && kv_room(cp, (s->n - lead) * np) < 0) return -1;
    for (Py_ssize_t i = lead; i < s->n; i++)
        for (long long p = 0; p < np; p++) cp->a[cp->n++] = key_of(s, i, 0, p);
    return 0;
}

/* the pages a group other than a full group 0 computes: kept (computed, chain order) or stored unpinned (transient,
 * kept last page first: the order the reference inserts them in, keys[::-1], so prefill_done inserts the list as it
 * is); the lists are empty on entry (demand) */
static int d_writes(GH *s, int g, Py_ssize_t a, long long keep) {
    Py_ssize_t n = s->n;
    KV *tr = &s->transient[g], *cp = &s->computed[g];
    const long long np = s->pages[g];
    const uint32_t tag = (uint32_t)g << 16;
    if (s->rule[g] != R_STATE) {
        const long long cut = keep < a ? a : keep > n ? n : keep;
        if (kv_room(tr, (cut - a) * np) < 0 || kv_room(cp, (n - cut) * np) < 0) return -1;
        Key *o = tr->a;
        for (Py_ssize_t i = cut - 1; i >= a; i--) {
            const uint64_t h = s->head[i];
            for (long long p = np - 1; p >= 0; p--) *o++ = (Key){h, tag | (uint32_t)p};
        }
        tr->n = (cut - a) * np;
        o = cp->a;
        for (Py_ssize_t i = cut; i < n; i++) {
            const uint64_t h = s->head[i];
            for (long long p = 0; p < np; p++) *o++ = (Key){h, tag | (uint32_t)p};
        }
        cp->n = (n - cut) * np;
        return 0;
    }
    long long u = s->span[g] / s->B, first, step = u;
    if (s->align[g]) { first = n - n % u - 1; step = n + 1; if (first < a) return 0; }
    else first = (a + 1 + u - 1) / u * u - 1;
    for (long long i = first; i < n; i += step)
        for (long long p = 0; p < np; p++)
            if (kv_push(i < keep ? tr : cp, key_of(s, i, g, p)) < 0) return -1;
    for (Py_ssize_t x = 0, y = tr->n - 1; x < y; x++, y--) { Key k = tr->a[x]; tr->a[x] = tr->a[y]; tr->a[y] = k; }
    return 0;
}

/* the restored pages in (position, group, page) order, the reference's sort: demand pushes them group by group
 * (groups ascending), each group's by position then page, so a stable counting sort by position gives that order
 * in O(pages + head) (no comparison sort); positions are head indices (< n). 0, or -1 + MemoryError */
static int rest_sort(GH *s) {
    Py_ssize_t m = s->nrest;
    if (m > s->rcap2 && PCS_GROW(s->rest2, &s->rcap2, m, 64) < 0) return -1;
    int32_t *c = s->rcnt;
    memset(c, 0, sizeof(int32_t) * (s->n + 1));
    for (Py_ssize_t x = 0; x < m; x++) c[s->rest[x].pos + 1]++;
    for (Py_ssize_t i = 1; i <= s->n; i++) c[i] += c[i - 1];
    for (Py_ssize_t x = 0; x < m; x++) s->rest2[c[s->rest[x].pos]++] = s->rest[x];
    Rest *r = s->rest; s->rest = s->rest2; s->rest2 = r;
    Py_ssize_t cap = s->rcap; s->rcap = s->rcap2; s->rcap2 = cap;
    return 0;
}

/* GroupHierarchy._demand: what a hit of k blocks needs */
static int demand(GH *s, Py_ssize_t k, Py_ssize_t lead, long long extra) {
    s->k = k;
    s->pin_now.n = 0;
    s->nrest = 0;
    s->extra = 0;
    memset(s->where, 0, sizeof(int32_t) * (k + 1));
    for (int g = 0; g < s->G; g++) s->hold[g].n = s->release[g].n = s->computed[g].n = s->transient[g].n = 0;
    for (int g = 0; g < s->G; g++) {
        long long keep = keep_from(s, g, s->n);
        if (g == 0 && s->full0) {
            if (d_full(s, k, lead) < 0) return -1;
        } else {
            for (long long i = need_from(s, g, k); i < k; i++) if (d_read(s, g, i, keep) < 0) return -1;
            if (d_writes(s, g, k, keep) < 0) return -1;
        }
        long long held = hold_blocks(s, g), kept = s->n - (keep < s->n ? keep : s->n), run = extra;
        if (held >= 0) {
            long long room = held - kept > 0 ? held - kept : 0;
            if (room < run) run = room;
        }
        if (s->rule[g] == R_STATE) run = held;   /* the running state: from admission, output or not (§3.1) */
        s->extra += run * s->pages[g];
        s->live[g] = kept + run;
    }
    if (s->G > 1 && s->nrest && rest_sort(s) < 0) return -1;
    return 0;
}

static Py_ssize_t need_of(GH *s) {
    Py_ssize_t need = s->extra + s->nrest;
    for (int g = 0; g < s->G; g++) need += s->computed[g].n + s->transient[g].n;   /* both take a slot */
    return need;
}

typedef struct { int32_t pos, g, kind; Key k; } Item;

static int item_cmp(const void *x, const void *y) {
    const Item *a = x, *b = y;
    if (a->pos != b->pos) return a->pos < b->pos ? -1 : 1;
    if (a->g != b->g) return a->g < b->g ? -1 : 1;
    if (a->k.tag != b->k.tag) return a->k.tag < b->k.tag ? -1 : 1;
    return a->kind < b->kind ? -1 : a->kind > b->kind;
}

/* GroupHierarchy._cut_computed: keep the computed pages, kept and transient alike (both take a slot while the
 * prefill writes them), in chain order while they fit; no extra pages */
static int cut_computed(GH *s, Py_ssize_t budget) {
    Py_ssize_t left = budget - s->nrest, total = 0, m = 0;
    for (int g = 0; g < s->G; g++) total += s->computed[g].n + s->transient[g].n;
    Item *it = PyMem_Malloc(sizeof(Item) * (total ? total : 1));
    if (!it) { PyErr_NoMemory(); return -1; }
    /* positions: a computed page's block is in head (distinct hashes) */
    for (int g = 0; g < s->G; g++) {
        for (Py_ssize_t x = 0, i = 0; x < s->computed[g].n; x++) {
            Key k = s->computed[g].a[x];
            while (s->head[i] != k.h) i++;       /* a group's computed pages are in chain order */
            it[m].pos = (int32_t)i; it[m].g = g; it[m].kind = 0; it[m].k = k; m++;
        }
        for (Py_ssize_t x = s->transient[g].n - 1, i = 0; x >= 0; x--) {   /* transient: kept last first */
            Key k = s->transient[g].a[x];
            while (s->head[i] != k.h) i++;
            it[m].pos = (int32_t)i; it[m].g = g; it[m].kind = 1; it[m].k = k; m++;
        }
    }
    qsort(it, m, sizeof(Item), item_cmp);
    for (int g = 0; g < s->G; g++) s->computed[g].n = s->transient[g].n = 0;
    for (Py_ssize_t x = 0; x < m && left > 0; x++, left--)
        if (kv_push(it[x].kind ? &s->transient[it[x].g] : &s->computed[it[x].g], it[x].k) < 0) {
            PyMem_Free(it); return -1;
        }
    PyMem_Free(it);
    for (int g = 0; g < s->G; g++) {      /* transient back to last page first */
        KV *tr = &s->transient[g];
        for (Py_ssize_t x = 0, y = tr->n - 1; x < y; x++, y--) { Key k = tr->a[x]; tr->a[x] = tr->a[y]; tr->a[y] = k; }
    }
    s->extra = 0;
    return 0;
}

/* ------------------------------------------------------------------ start (admission) */
/* GroupHierarchy._budgets with one pool: the GPU slots, or -1 to wait (nothing changes) */
static Py_ssize_t budget_of(GH *s, Py_ssize_t need, int wait) {
    PTier *t = &s->tier[0];
    Py_ssize_t avail = pt_available(t) - t_count_evictable(t, &s->pin_now);
    if (need <= avail) return need;
    Py_ssize_t lim = t->cap - s->pin_now.n;
    if (wait && avail < (need < lim ? need : lim)) return -1;
    return avail;
}

/* GroupHierarchy._restore: fill the GPU slots of restored pages, touch their lower copies (§7) */
static Py_ssize_t do_restores(GH *s, long long *restored, long long *nbytes) {
    Py_ssize_t filled = 0;
    for (Py_ssize_t x = 0; x < s->nrest; x++) s->restored[s->rest[x].lvl][s->rest[x].g]++;
    for (int t = 1; t < s->L; t++) {
        s->tmp.n = 0;
        for (Py_ssize_t x = 0; x < s->nrest; x++)
            if (s->rest[x].lvl == t && kv_push(&s->tmp, s->rest[x].k) < 0) return -1;
        if (!s->tmp.n) continue;
        restored[t] += s->tmp.n;
        nbytes[t] += s->tmp.n * s->pb[t];
        Py_ssize_t a = t_fill(s, &s->tmp);
        if (a < 0) return -1;
        filled += a;
        t_touch_rev(&s->tier[t], &s->tmp);
    }
    return filled;
}

/* Page lists recycled between admissions (the step loop's start makes a new admission per request and drops it at
 * finish): an admission started by gh_start hands its lists back to its hierarchy when it is freed (kv_give), and the
 * scratch lists a new admission took are replaced by spare ones (kv_take), so no list is grown from empty and freed
 * again per request. Only under the GIL (gh_start, adm_dealloc); run_sequential reuses one admission instead. */
#define SPARE_MAX 4096
static void kv_take(GH *s, KV *v) {
    if (v->a || !s->nspare) return;
    *v = s->spare[--s->nspare];
}

static void kv_give(GH *s, KV *v) {
    if (!v->a) return;
    if (s->nspare == s->spcap && s->spcap < SPARE_MAX) {
        Py_ssize_t c = s->spcap ? 2 * s->spcap : 64;
        KV *x = PyMem_Realloc(s->spare, sizeof(KV) * c);
        if (x) { s->spare = x; s->spcap = c; }
    }
    if (s->nspare < s->spcap) {
        v->n = 0;
        s->spare[s->nspare++] = *v;
        v->a = NULL;
        v->cap = 0;
    } else kv_free(v);
}

static PyObject *int_list(const long long *v, int n) {
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (int j = 0; j < n; j++) {
        PyObject *x = PyLong_FromLongLong(v[j]);
        if (!x) { Py_DECREF(l); return NULL; }
        PyList_SET_ITEM(l, j, x);
    }
    return l;
}

/* the admission's counters and page lists (GroupHierarchy._apply's second half); the lists are swapped with the
 * scratch ones (a fresh admission's are empty, a reused one's buffers are recycled); with_lists: the per-level
 * Python lists too (a reused admission of run_sequential has none) */
static int adm_fields(GH *s, GAdm *a, const long long *restored, const long long *nbytes, int with_lists) {
    a->last_hit_tier = s->k ? s->where[s->k - 1] : -1;
    if (with_lists) {
        long long hb[MAXL] = {0};
        for (Py_ssize_t i = 0; i < s->k; i++) hb[s->where[i]]++;
        a->hbpt = int_list(hb, s->L);
        a->rbpt = int_list(restored, s->L);
        a->rbytes = int_list(nbytes, s->L);
        if (!a->hbpt || !a->rbpt || !a->rbytes) return -1;
    }
    a->G = s->G;
    for (int g = 0; g < s->G; g++) {
        KV x;
        x = a->hold[g]; a->hold[g] = s->hold[g]; s->hold[g] = x;
        x = a->release[g]; a->release[g] = s->release[g]; s->release[g] = x;
        x = a->computed[g]; a->computed[g] = s->computed[g]; s->computed[g] = x;
        x = a->transient[g]; a->transient[g] = s->transient[g]; s->transient[g] = x;
        a->live[g] = s->live[g];
        if (with_lists) {       /* a new admission's empty lists: the scratch takes spare ones instead (GIL held) */
            kv_take(s, &s->hold[g]); kv_take(s, &s->release[g]);
            kv_take(s, &s->computed[g]); kv_take(s, &s->transient[g]);
        }
    }
    if (s->nrest > a->nrcap || !a->rest) {
        Py_ssize_t c = s->nrest > 16 ? s->nrest : 16;
        int32_t *r = PyMem_Realloc(a->rest, sizeof(int32_t) * 2 * c);
        if (!r) { PyErr_NoMemory(); return -1; }
        a->rest = r;
        a->nrcap = c;
    }
    a->nrest = s->nrest;
    for (Py_ssize_t x = 0; x < s->nrest; x++) { a->rest[2 * x] = s->rest[x].lvl; a->rest[2 * x + 1] = s->rest[x].g; }
    return 0;
}

/* GroupHierarchy._apply: pin, reserve, restore, demote the victims; the admission's fields into a (a new
 * admission, or run_sequential's reused one: with_lists 0) */
static int apply(GH *s, GAdm *a, Py_ssize_t budget, Py_ssize_t usable, int truncated, int with_lists) {
    long long restored[MAXL] = {0}, nbytes[MAXL] = {0};
    t_pin(&s->tier[0], &s->pin_now);
    s->tmp2.n = 0;
    if (t_reserve(s, budget, &s->tmp2) < 0) return -1;
    Py_ssize_t filled = do_restores(s, restored, nbytes);
    if (filled < 0 || evicted(s, &s->tmp2) < 0) return -1;
    a->prefix_hit_blocks = usable;
    a->hit_blocks = s->k;
    a->truncated = (char)truncated;
    a->reserved = budget - filled;
    return adm_fields(s, a, restored, nbytes, with_lists);
}

static GAdm *new_adm(void) {
    GAdm *a = PyObject_New(GAdm, &GAdmType);
    if (a) memset((char *)a + sizeof(PyObject), 0, sizeof(GAdm) - sizeof(PyObject));
    return a;
}

/* room for a head of n blocks in the scratch arrays */
static int head_room(GH *s, Py_ssize_t n) {
    if (n + 1 <= s->hcap) return 0;
    Py_ssize_t c = (n + 1) * 2;
    uint64_t *h = PyMem_Realloc(s->head, sizeof(uint64_t) * c);
    int32_t *t0 = h ? PyMem_Realloc(s->t0, sizeof(int32_t) * c) : NULL;
    int32_t *w = t0 ? PyMem_Realloc(s->where, sizeof(int32_t) * c) : NULL;
    int32_t *rc = w ? PyMem_Realloc(s->rcnt, sizeof(int32_t) * c) : NULL;
    if (h) s->head = h;
    if (t0) s->t0 = t0;
    if (w) s->where = w;
    if (rc) s->rcnt = rc;
    if (!rc) { PyErr_NoMemory(); return -1; }
    s->hcap = c;
    return 0;
}

/* the head cut at its first repeated hash (hierarchy._first_repeat): a scratch open-addressing set whose
 * slots count as used when stamped with this call's generation (no clearing per request) */
static int first_repeat(GH *s) {
    Py_ssize_t n = s->n, sz = 16;
    if (n < 2) return 0;
    while (sz < 2 * n) sz *= 2;
    if (sz > s->rscap) {
        uint64_t *set = PyMem_Realloc(s->rset, sizeof(uint64_t) * sz);
        uint32_t *gen = set ? PyMem_Realloc(s->rgen, sizeof(uint32_t) * sz) : NULL;
        if (set) s->rset = set;
        if (gen) s->rgen = gen;
        if (!gen) { PyErr_NoMemory(); return -1; }
        memset(s->rgen, 0, sizeof(uint32_t) * sz);
        s->rscap = sz;
        s->rstamp = 0;
    }
    if (++s->rstamp == 0) { memset(s->rgen, 0, sizeof(uint32_t) * s->rscap); s->rstamp = 1; }
    uint64_t m = (uint64_t)sz - 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t x = s->head[i], j = key_hash(x) & m;
        while (s->rgen[j] == s->rstamp && s->rset[j] != x) j = (j + 1) & m;
        if (s->rgen[j] == s->rstamp) { s->n = i; break; }
        s->rgen[j] = s->rstamp;
        s->rset[j] = x;
    }
    return 0;
}

/* the request's cacheable head from a sequence of ints, up to the first repeated hash */
static int load_head(GH *s, PyObject *seq, Py_ssize_t cacheable) {
    PyObject *f = PySequence_Fast(seq, "block hashes must be a sequence");
    if (!f) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (cacheable < n) n = cacheable;
    if (n < 0) n = 0;
    if (head_room(s, n) < 0) { Py_DECREF(f); return -1; }
    PyObject **items = PySequence_Fast_ITEMS(f);
    for (Py_ssize_t i = 0; i < n; i++) {
        s->head[i] = PyLong_AsUnsignedLongLong(items[i]);
        if (s->head[i] == (uint64_t)-1 && PyErr_Occurred()) { Py_DECREF(f); return -1; }
    }
    Py_DECREF(f);
    s->n = n;
    return first_repeat(s);
}

/* GroupHierarchy._gpu_lead */
static long long gpu_lead(GH *s, long long full_lead) {
    Py_ssize_t first = s->k;
    for (Py_ssize_t i = 0; i < s->k; i++) if (s->where[i]) { first = i; break; }
    return fixed_point(s, first, 1, full_lead >= 0 ? first : -1);
}

/* start's admission of the loaded head (cap: the hit cap; wait: wait_if_full) into a (with_lists: a new
 * admission's Python lists too); 1 admitted, 0 waits (nothing changed), -1 error */
static int admit(GH *s, GAdm *a, long long cap, long long extra, int wait, int with_lists) {
    if (cap > s->n) cap = s->n;
    if (cap < 0) cap = 0;
    Py_ssize_t lead = look_lead(s);
    long long full_lead = s->full0 ? lead : -1;
    long long k = fixed_point(s, cap, 0, full_lead);
    long long lost = s->full0 ? (cap < lead ? cap : lead) - k : 0;
    long long usable = k + (lead > cap ? lead - cap : 0);   /* GroupHierarchy.start's usable */
    if (k > lead) lead = k;
    int truncated = 0;
    Py_ssize_t budget;
    for (;;) {
        if (demand(s, k, lead, extra) < 0) return -1;
        Py_ssize_t need = need_of(s);
        budget = budget_of(s, need, wait && !truncated);
        if (budget < 0) return 0;
        if (budget == need) break;
        truncated = 1;
        if (s->nrest > budget) {
            k = fixed_point(s, s->rest[budget].pos, 0, full_lead);
            continue;
        }
        if (cut_computed(s, budget) < 0) return -1;
        break;
    }
    long long gl = s->nrest ? gpu_lead(s, full_lead) : s->k;
    if (apply(s, a, budget, usable, truncated, with_lists) < 0) return -1;
    a->lost_blocks = lost;
    a->gpu_lead_blocks = gl;
    a->blocks = s->n;
    if (res_admitted(s, lost, held_bytes(s)) < 0) return -1;
    res_note(s);
    return 1;
}

/* start(block_hashes, cacheable_blocks, max_hit_blocks, extra_blocks=0, wait_if_full=False) */
static PyObject *gh_start(GH *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 3 || nargs > 5) { PyErr_SetString(PyExc_TypeError, "start takes 3 to 5 arguments"); return NULL; }
    Py_ssize_t cacheable = PyLong_AsSsize_t(args[1]);
    long long cap = PyLong_AsLongLong(args[2]), extra = nargs > 3 ? PyLong_AsLongLong(args[3]) : 0;
    int wait = nargs > 4 ? PyObject_IsTrue(args[4]) : 0;
    if (PyErr_Occurred() || wait < 0) return NULL;
    if (gh_now(s) < 0 || load_head(s, args[0], cacheable) < 0) return NULL;
    GAdm *a = new_adm();
    if (!a) return NULL;
    a->owner = (PyObject *)s;
    Py_INCREF(s);
    int rc = admit(s, a, cap, extra, wait, 1);
    if (rc <= 0) { Py_DECREF(a); if (rc < 0) return NULL; Py_RETURN_NONE; }
    return (PyObject *)a;
}

static GAdm *as_adm(PyObject *o) {
    if (!PyObject_TypeCheck(o, &GAdmType)) {
        PyErr_SetString(PyExc_TypeError, "expected an admission of this compiled hierarchy");
        return NULL;
    }
    return (GAdm *)o;
}

/* prefill_done of admission a (the C core): computed pages become cached, kept ones pinned, the others unpinned
 * at once; 0, or -1 on a memory error */
static int c_prefill_done(GH *s, GAdm *a) {
    for (int g = 0; g < s->G; g++) {
        if (!a->computed[g].n) continue;
        Py_ssize_t added = t_fill(s, &a->computed[g]);
        if (added < 0) return -1;
        a->reserved -= added;
    }
    if (s->wt) {
        s->tmp.n = 0;
        for (int g = 0; g < s->G; g++) {
            for (Py_ssize_t x = 0; x < a->computed[g].n; x++) if (kv_push(&s->tmp, a->computed[g].a[x]) < 0) return -1;
            for (Py_ssize_t x = a->transient[g].n - 1; x >= 0; x--)     /* transient: kept last first */
                if (kv_push(&s->tmp, a->transient[g].a[x]) < 0) return -1;
        }
        if (s->tmp.n && (kv_reversed(&s->tmp3, &s->tmp) < 0 || write_down(s, &s->tmp3) < 0)) return -1;
    }
    for (int g = 0; g < s->G; g++) if (a->release[g].n) t_unpin_rev(&s->tier[0], &a->release[g]);
    for (int g = 0; g < s->G; g++) {
        if (!a->transient[g].n) continue;
        s->tier[0].reserved -= a->transient[g].n;     /* their slots, reserved at start, take them now */
        a->reserved -= a->transient[g].n;
        s->tmp2.n = 0;
        const long long np = s->pages[g];      /* whole blocks, unless a truncation kept part of one */
        if (t_insert(s, 0, &a->transient[g], &s->tmp2, 0, np > 1 && a->transient[g].n % np == 0 ? np : 0) < 0
            || evicted(s, &s->tmp2) < 0) return -1;
    }
    res_note(s);
    return 0;
}

/* prefill_done(adm) */
static PyObject *gh_prefill_done(GH *s, PyObject *o) {
    GAdm *a = as_adm(o);
    if (!a || gh_now(s) < 0 || c_prefill_done(s, a) < 0) return NULL;
    Py_RETURN_NONE;
}

/* finish of admission a (the C core): the request's pins dropped, group by group, tail first; its reserved slots
 * given back */
static void c_finish(GH *s, GAdm *a) {
    for (int g = 0; g < s->G; g++) {
        t_unpin_rev(&s->tier[0], &a->computed[g]);
        t_unpin_rev(&s->tier[0], &a->hold[g]);
    }
    s->tier[0].reserved -= a->reserved;
    a->reserved = 0;
}

/* finish(adm) */
static PyObject *gh_finish(GH *s, PyObject *o) {
    GAdm *a = as_adm(o);
    if (!a || gh_now(s) < 0) return NULL;
    c_finish(s, a);
    Py_RETURN_NONE;
}

/* an array argument of run_sequential: C-contiguous, 8-byte items */
static int seq_buf(PyObject *o, Py_buffer *b, int writable) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (b->itemsize == 8) return 0;
    PyBuffer_Release(b);
    PyErr_SetString(PyExc_TypeError, "run_sequential takes arrays of 8-byte items (uint64, int64, float64)");
    return -1;
}

/* one sequential request (the sequential event loop's start, prefill_done, finish) through the reused admission a:
 * its head is keys[0 .. min(len, cacheable)); 0, or -1 on error */
static int seq_one(GH *s, GAdm *a, const uint64_t *keys, Py_ssize_t len, Py_ssize_t cacheable, long long cap) {
    Py_ssize_t n = cacheable < len ? cacheable : len;
    if (n < 0) n = 0;
    if (gh_now(s) < 0 || head_room(s, n) < 0) return -1;
    memcpy(s->head, keys, sizeof(uint64_t) * n);
    s->n = n;
    if (first_repeat(s) < 0 || admit(s, a, cap, 0, 0, 0) < 0) return -1;   /* never waits (wait_if_full False) */
    if (gh_now(s) < 0 || c_prefill_done(s, a) < 0 || gh_now(s) < 0) return -1;
    c_finish(s, a);
    return 0;
}

/* the requests of run_sequential's buffers b (hashes, offsets, cacheable, max_hit, hits, lost[, arrival]) through
 * the reused admission a; may run without the GIL (no Python call: the hierarchy follows no clock) */
static int seq_run(GH *s, GAdm *a, Py_buffer *b, int with_arrival) {
    Py_ssize_t R = b[2].len / 8, H = b[0].len / 8;
    if (b[1].len / 8 != R + 1 || b[3].len / 8 != R || b[4].len / 8 != R || b[5].len / 8 != R
        || (with_arrival && b[6].len / 8 != R)) {
        PyErr_SetString(PyExc_ValueError, "run_sequential needs len(offsets) = R + 1 and R entries in cacheable, "
                                          "max_hit, hits, lost (and arrival)");
        return -1;
    }
    const uint64_t *keys = b[0].buf;
    const int64_t *off = b[1].buf, *n = b[2].buf, *cap = b[3].buf;
    int64_t *hits = b[4].buf, *lost = b[5].buf;
    int rc = 0;
    for (Py_ssize_t i = 0; i < R && rc == 0; i++) {
        if (off[i] < 0 || off[i] > off[i + 1] || off[i + 1] > H) {
            PyErr_SetString(PyExc_ValueError, "run_sequential: offsets must rise within the hashes");
            rc = -1;
        } else if ((with_arrival && res_tick(s, ((const double *)b[6].buf)[i]) < 0)
                   || seq_one(s, a, keys + off[i], (Py_ssize_t)(off[i + 1] - off[i]), n[i], cap[i]) < 0) rc = -1;
        else { hits[i] = a->hit_blocks; lost[i] = a->lost_blocks; }
    }
    return rc;
}

/* run_sequential(hashes u64, offsets i64 (R+1,), cacheable i64 (R,), max_hit i64 (R,), hits i64 (R,),
 * lost i64 (R,), arrival f64 (R,) or None): R requests one after another as the sequential event loop runs them
 * (pcs/engine/engine.py, ReplayEngine._feed_sequential: tick(arrival), start(head, cacheable, max_hit, 0, False),
 * prefill_done, finish); hits[i], lost[i] = request i's hit blocks and hit blocks the hybrid rules refused.
 * The GIL is released over the requests when the hierarchy follows no clock (a followed clock is a Python
 * call): the extension's memory is raw memory and its errors take the GIL (pcs/_nogil.h), so another thread runs
 * Python meanwhile (pcs/engine/seqbase.py runs a replay's sequential baseline beside its step loop). The caller
 * must not touch this hierarchy or the arrays from another thread until the call returns. */
static PyObject *gh_run_sequential(GH *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 6 || nargs > 7) {
        PyErr_SetString(PyExc_TypeError, "run_sequential(hashes, offsets, cacheable, max_hit, hits, lost, arrival=None)");
        return NULL;
    }
    int m = nargs == 7 && args[6] != Py_None ? 7 : 6, got = 0, rc = -1;
    Py_buffer b[7];
    for (; got < m; got++) if (seq_buf(args[got], &b[got], got == 4 || got == 5) < 0) break;
    GAdm *a = got == m ? new_adm() : NULL;
    if (a) {
        PyThreadState *ts = s->clock_fn ? NULL : PyEval_SaveThread();
        rc = seq_run(s, a, b, m == 7);
        if (ts) PyEval_RestoreThread(ts);
        Py_DECREF(a);
    }
    while (got-- > 0) PyBuffer_Release(&b[got]);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* grow(adm, n): the pages of n more blocks reserved (GroupStepMixin.grow); False changes nothing */
static PyObject *gh_grow(GH *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "grow takes 2 arguments"); return NULL; }
    GAdm *a = as_adm(args[0]);
    long long n = PyLong_AsLongLong(args[1]);
    if (!a || (n == -1 && PyErr_Occurred()) || gh_now(s) < 0) return NULL;
    long long add[MAXG], need = 0;
    for (int g = 0; g < s->G; g++) {
        long long hold = hold_blocks(s, g), x = n;
        if (hold >= 0) { x = hold - a->live[g]; if (x > n) x = n; if (x < 0) x = 0; }
        add[g] = x;
        need += x * s->pages[g];
    }
    if (need > pt_available(&s->tier[0])) Py_RETURN_FALSE;
    if (need) {
        s->tmp2.n = 0;
        if (t_reserve(s, need, &s->tmp2) < 0) return NULL;
        a->reserved += need;
        if (evicted(s, &s->tmp2) < 0) return NULL;
    }
    for (int g = 0; g < s->G; g++) a->live[g] += add[g];
    long long hb = held_bytes(s);
    if (hb > s->peak_held) s->peak_held = hb;
    res_note(s);
    Py_RETURN_TRUE;
}

/* abort(adm): a request preempted before prefill_done: pins dropped tail first, slots given back */
static PyObject *gh_abort(GH *s, PyObject *o) {
    GAdm *a = as_adm(o);
    if (!a || gh_now(s) < 0) return NULL;
    for (int g = 0; g < s->G; g++) {
        t_unpin_rev(&s->tier[0], &a->hold[g]);
        t_unpin_rev(&s->tier[0], &a->release[g]);
    }
    s->tier[0].reserved -= a->reserved;
    a->reserved = 0;
    for (int g = 0; g < s->G; g++) a->hold[g].n = a->release[g].n = a->computed[g].n = a->transient[g].n = 0;
    Py_RETURN_NONE;
}

/* extend(adm, block_hashes): full output blocks cached while decoding (GroupStepMixin.extend) */
static PyObject *gh_extend(GH *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "extend takes 2 arguments"); return NULL; }
    GAdm *a = as_adm(args[0]);
    if (!a) return NULL;
    PyObject *f = PySequence_Fast(args[1], "block hashes must be a sequence");
    if (!f) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(f);
    if (!m) { Py_DECREF(f); Py_RETURN_NONE; }
    uint64_t *bh = PyMem_Malloc(sizeof(uint64_t) * m);
    if (!bh) { Py_DECREF(f); return PyErr_NoMemory(); }
    for (Py_ssize_t i = 0; i < m; i++) {
        bh[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(f, i));
        if (bh[i] == (uint64_t)-1 && PyErr_Occurred()) { Py_DECREF(f); PyMem_Free(bh); return NULL; }
    }
    Py_DECREF(f);
    PyObject *ret = NULL;
    if (gh_now(s) < 0) goto done;
    long long first = a->blocks;
    a->blocks += m;
    for (int g = 0; g < s->G; g++) {
        KV *keys = &s->tmp;
        keys->n = 0;
        if (s->rule[g] == R_FULL) {
            for (Py_ssize_t i = 0; i < m; i++)
                for (long long p = 0; p < s->pages[g]; p++) {
                    Key k = {bh[i], (uint32_t)(g << 16 | p)};
                    if (kv_push(keys, k) < 0) goto done;
                }
            Py_ssize_t added = t_fill(s, keys);
            if (added < 0) goto done;
            a->reserved -= added;
            for (Py_ssize_t x = 0; x < keys->n; x++) if (kv_push(&a->computed[g], keys->a[x]) < 0) goto done;
        } else {
            long long u = s->rule[g] == R_STATE ? s->span[g] / s->B : 1, st = u, i0 = first;
            if (s->rule[g] == R_STATE) {
                if (s->align[g]) { i0 = a->blocks - a->blocks % u - 1; st = a->blocks + 1; if (i0 < first) i0 = a->blocks; }
                else i0 = (first + 1 + u - 1) / u * u - 1;
            }
            for (long long i = i0; i < a->blocks; i += st)
                for (long long p = 0; p < s->pages[g]; p++) {
                    Key k = {bh[i - first], (uint32_t)(g << 16 | p)};
                    if (kv_push(keys, k) < 0) goto done;
                }
            if (keys->n) {
                s->tmp2.n = 0;
                if (kv_reversed(&s->tmp3, keys) < 0 || t_insert(s, 0, &s->tmp3, &s->tmp2, 0, 0) < 0
                    || evicted(s, &s->tmp2) < 0) goto done;
            }
        }
        if (s->wt && keys->n && (kv_reversed(&s->tmp3, keys) < 0 || write_down(s, &s->tmp3) < 0)) goto done;
    }
    res_note(s);
    ret = Py_None;
    Py_INCREF(ret);
done:
    PyMem_Free(bh);
    return ret;
}

static PyObject *gh_held_blocks(GH *s, PyObject *unused) {
    PTier *t = &s->tier[0];
    return PyLong_FromSsize_t(t->nres - t->held + t->reserved);
}

static PyObject *gh_tick(GH *s, PyObject *o) {
    double t = PyFloat_AsDouble(o);
    if ((t == -1.0 && PyErr_Occurred()) || res_tick(s, t) < 0) return NULL;
    Py_RETURN_NONE;
}

/* follow(clock): read simulated time from clock() before each call; per-request samples on request */
static PyObject *gh_follow(GH *s, PyObject *clock) {
    Py_INCREF(clock);
    Py_XSETREF(s->clock_fn, clock);
    s->auto_record = 0;
    Py_RETURN_NONE;
}

static PyObject *gh_first_admission(GH *s, PyObject *unused) {
    if (res_row(s, s->last_pages, s->last_lost) < 0) return NULL;
    Py_RETURN_NONE;
}

/* restore_skipped(adm): the scheduler recomputed instead of restoring: not counted as restored pages */
static PyObject *gh_restore_skipped(GH *s, PyObject *o) {
    GAdm *a = as_adm(o);
    if (!a) return NULL;
    for (Py_ssize_t x = 0; x < a->nrest; x++) s->restored[a->rest[2 * x]][a->rest[2 * x + 1]]--;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ the C-level API (_grouphier_capi.h) */
static int capi_follow(PyObject *h) {
    GH *s = (GH *)h;
    Py_CLEAR(s->clock_fn);
    s->auto_record = 0;
    return 0;
}

static int capi_tick(PyObject *h, double t) { return res_tick((GH *)h, t); }

static int capi_first_admission(PyObject *h) {
    GH *s = (GH *)h;
    return res_row(s, s->last_pages, s->last_lost);
}

static int capi_restore_skipped(PyObject *h, PyObject *adm) {
    PyObject *r = gh_restore_skipped((GH *)h, adm);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static const GHCApi capi = {capi_follow, capi_tick, capi_first_admission, capi_restore_skipped};

static PyObject *gh_c_api(GH *s, PyObject *unused) {
    return PyCapsule_New((void *)&capi, GH_CAPI_NAME, NULL);
}

/* ------------------------------------------------------------------ read side */
static PyObject *ll_rows(long long (*v)[MAXG], int rows, int cols, int as_tuple) {
    PyObject *l = PyList_New(rows);
    if (!l) return NULL;
    for (int j = 0; j < rows; j++) {
        PyObject *r = int_list(v[j], cols);
        if (r && as_tuple) Py_SETREF(r, PyList_AsTuple(r));
        if (!r) { Py_DECREF(l); return NULL; }
        PyList_SET_ITEM(l, j, r);
    }
    return l;
}

static PyObject *samples_list(GH *s) {
    PyObject *l = PyList_New(s->ns);
    if (!l) return NULL;
    for (Py_ssize_t x = 0; x < s->ns; x++) {
        PyObject *lv = PyTuple_New(s->L);
        if (!lv) { Py_DECREF(l); return NULL; }
        for (int j = 0; j < s->L; j++) {
            PyObject *r = PyList_New(s->G);
            for (int g = 0; r && g < s->G; g++) PyList_SET_ITEM(r, g, PyLong_FromLongLong(s->sc[(x * s->L + j) * s->G + g]));
            if (r) Py_SETREF(r, PyList_AsTuple(r));
            if (!r) { Py_DECREF(lv); Py_DECREF(l); return NULL; }
            PyTuple_SET_ITEM(lv, j, r);
        }
        PyObject *item = Py_BuildValue("(dN)", s->st[x], lv);
        if (!item) { Py_DECREF(l); return NULL; }
        PyList_SET_ITEM(l, x, item);
    }
    return l;
}

/* request samples: per group the bytes of an int64 column, then the lost blocks' column */
static PyObject *request_cols(GH *s) {
    PyObject *l = PyList_New(s->G + 1);
    if (!l) return NULL;
    long long *col = PyMem_Malloc(sizeof(long long) * (s->nr ? s->nr : 1));
    if (!col) { Py_DECREF(l); return PyErr_NoMemory(); }
    for (int g = 0; g <= s->G; g++) {
        for (Py_ssize_t r = 0; r < s->nr; r++) col[r] = s->req[r * (s->G + 1) + g];
        PyObject *b = PyBytes_FromStringAndSize((const char *)col, sizeof(long long) * s->nr);
        if (!b) { PyMem_Free(col); Py_DECREF(l); return NULL; }
        PyList_SET_ITEM(l, g, b);
    }
    PyMem_Free(col);
    return l;
}

/* residency_state(): the Residency fields (pcs/cache/nativegroups.py builds the object) */
static PyObject *gh_residency_state(GH *s, PyObject *unused) {
    PyObject *pt = PyList_New(s->L);
    if (!pt) return NULL;
    for (int j = 0; j < s->L; j++) PyList_SET_ITEM(pt, j, PyFloat_FromDouble(s->peak_t[j]));
    PyObject *nx = s->has_next ? PyFloat_FromDouble(s->next) : (Py_INCREF(Py_None), Py_None);
    return Py_BuildValue("{sNsNsNsNsNsNsNsNsNsNsLsdsNsisNsL}",
        "pages", ll_rows(s->rp, s->L, s->G, 0), "group_peak_pages", ll_rows(s->gpeak, s->L, s->G, 0),
        "restored", ll_rows(s->restored, s->L, s->G, 0), "written", ll_rows(s->written, s->L, s->G, 0),
        "dropped", int_list(s->dropped, s->G), "peak_bytes", int_list(s->peak_bytes, s->L),
        "peak_pages", ll_rows(s->peak_pages, s->L, s->G, 1), "peak_t", pt, "samples", samples_list(s),
        "request", request_cols(s), "peak_held_bytes", s->peak_held, "clock", s->clock, "next", nx,
        "auto_record", s->auto_record, "last_pages", int_list(s->last_pages, s->G), "last_lost", s->last_lost);
}

static PyObject *gh_tier_info(GH *s, PyObject *o) {
    long j = PyLong_AsLong(o);
    if (j < 0 || j >= s->L) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "tier index"); return NULL; }
    PTier *t = &s->tier[j];
    return Py_BuildValue("(nnnLLLLL)", t->nres, t->held, t->reserved, t->inserted, t->evicted, t->overflow,
                         (long long)t->peak_res, (long long)t->peak_used);
}

/* the page entry after `e` (-1: from the start) in table order (block records by slot, pages in order); -1 at the end */
static int32_t pt_next(const PTier *t, int32_t e) {
    uint64_t i = 0;
    int p = 0;
    if (e >= 0) {
        int32_t r = e >> t->shift;
        BKey b = {t->blk.ent[r].h, t->blk.ent[r].g};
        i = bt_home(&t->blk, b);
        while (t->blk.slots[i] != r) i = (i + 1) & t->blk.mask;
        p = (e & ((1 << t->shift) - 1)) + 1;
    }
    for (; i <= t->blk.mask; i++, p = 0) {
        int32_t r = t->blk.slots[i];
        if (r < 0) continue;
        for (; p < 1 << t->shift; p++) if (t->ent[r << t->shift | p].pin != PT_ABSENT) return r << t->shift | p;
    }
    return -1;
}

/* resident(j): [(hash, tag, pin count)] of level j, table order */
static PyObject *gh_resident(GH *s, PyObject *o) {
    long j = PyLong_AsLong(o);
    if (j < 0 || j >= s->L) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "tier index"); return NULL; }
    PTier *t = &s->tier[j];
    PyObject *l = PyList_New(0);
    for (int32_t e = pt_next(t, -1); l && e >= 0; e = pt_next(t, e)) {
        Key k = pt_key(t, e);
        PyObject *x = Py_BuildValue("(KIi)", (unsigned long long)k.h, (unsigned)k.tag, t->ent[e].pin);
        if (!x || PyList_Append(l, x) < 0) { Py_XDECREF(x); Py_CLEAR(l); break; }
        Py_DECREF(x);
    }
    return l;
}

/* order(j): [(hash, tag)] of level j's unpinned pages, first victim first */
static PyObject *gh_order(GH *s, PyObject *o) {
    long j = PyLong_AsLong(o);
    if (j < 0 || j >= s->L) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "tier index"); return NULL; }
    PTier *t = &s->tier[j];
    PyObject *l = PyList_New(0);
    for (int32_t e = t->head; l && e >= 0; e = t->ent[e].next) {
        Key k = pt_key(t, e);
        PyObject *x = Py_BuildValue("(KI)", (unsigned long long)k.h, (unsigned)k.tag);
        if (!x || PyList_Append(l, x) < 0) { Py_XDECREF(x); Py_CLEAR(l); break; }
        Py_DECREF(x);
    }
    return l;
}

static PyObject *gh_written_blocks(GH *s, void *unused) { return int_list(s->written_blocks, s->L); }
static PyObject *gh_dropped_blocks(GH *s, void *unused) { return PyLong_FromLongLong(s->dropped_blocks); }
static PyObject *gh_releases_gil(GH *s, void *unused) { return PyBool_FromLong(!s->clock_fn); }

/* check(): every level's invariants (capacity, pins, the LRU list holds exactly the unpinned pages, none pinned or
 * reserved below the GPU) and the residency page counters */
static PyObject *gh_check(GH *s, PyObject *unused) {
    for (int j = 0; j < s->L; j++) {
        PTier *t = &s->tier[j];
        long long cnt[MAXG] = {0};
        Py_ssize_t unpinned = 0, listed = 0;
        const char *bad = NULL;
        if (t->reserved < 0 || t->nres + t->reserved > t->cap) bad = "capacity";
        if (j && (t->reserved || t->nres != t->held)) bad = "pinned or reserved below the GPU";
        Py_ssize_t pages = 0;
        for (int32_t e = pt_next(t, -1); e >= 0; e = pt_next(t, e), pages++) {
            if (t->ent[e].pin < 0) bad = "negative pin count";
            unpinned += t->ent[e].pin == 0;
            cnt[pt_key(t, e).tag >> 16]++;
        }
        for (int32_t e = t->head; e >= 0; e = t->ent[e].next, listed++) if (t->ent[e].pin) bad = "pinned page in LRU";
        if (listed != unpinned || listed != t->held) bad = "LRU list";
        if (pages != t->nres) bad = "page table";
        for (int g = 0; g < s->G; g++) if (cnt[g] != s->rp[j][g]) bad = "residency page counters";
        if (bad) { PyErr_Format(PyExc_AssertionError, "level %d: %s", j, bad); return NULL; }
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ types and module */
static int ll_seq(PyObject *o, long long *out, int max, const char *what) {
    PyObject *f = PySequence_Fast(o, what);
    if (!f) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n < 1 || n > max) { Py_DECREF(f); PyErr_Format(PyExc_ValueError, "%s: 1 to %d values", what, max); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
    Py_DECREF(f);
    return PyErr_Occurred() ? -1 : (int)n;
}

/* Hierarchy(capacities, page_bytes, write_through, rules, spans, pages, aligns, block_size, step_s, max_samples) */
static int gh_init(GH *s, PyObject *args, PyObject *kw) {
    PyObject *caps, *pbs, *rules, *spans, *pages, *aligns;
    int wt;
    long long B, maxs;
    double step;
    if (!PyArg_ParseTuple(args, "OOpOOOOLdL", &caps, &pbs, &wt, &rules, &spans, &pages, &aligns, &B, &step, &maxs))
        return -1;
    long long c[MAXL], r[MAXG], al[MAXG];
    int L = ll_seq(caps, c, MAXL, "capacities"), L2 = L < 0 ? -1 : ll_seq(pbs, s->pb, MAXL, "page bytes");
    int G = L2 < 0 ? -1 : ll_seq(rules, r, MAXG, "rules");
    if (G < 0 || ll_seq(spans, s->span, MAXG, "spans") != G || ll_seq(pages, s->pages, MAXG, "pages") != G
        || ll_seq(aligns, al, MAXG, "aligns") != G || L2 != L) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "inconsistent hierarchy arguments");
        return -1;
    }
    if (B < 1 || !(step > 0)) { PyErr_SetString(PyExc_ValueError, "block size and step must be > 0"); return -1; }
    for (int g = 0; g < G; g++) {
        if (r[g] < R_FULL || r[g] > R_STATE || s->pages[g] < 1 || s->pages[g] > 0xffff
            || (r[g] != R_FULL && s->span[g] < 1) || (r[g] == R_STATE && s->span[g] % B)) {
            PyErr_Format(PyExc_ValueError, "group %d: bad rule, span or pages", g);
            return -1;
        }
        s->rule[g] = (int)r[g];
        s->align[g] = (int)al[g];
    }
    s->L = L;
    s->G = G;
    s->wt = wt;
    s->B = B;
    s->full0 = s->rule[0] == R_FULL;
    s->step_s = step;
    s->max_samples = maxs;
    s->auto_record = 1;
    int P = 1;
    for (int g = 0; g < G; g++) if (s->pages[g] > P) P = (int)s->pages[g];
    if (P > 1 << 12) { PyErr_SetString(PyExc_ValueError, "more than 4096 pages a group block"); return -1; }
    for (int j = 0; j < L; j++) if (pt_init(&s->tier[j], c[j], P) < 0) { s->L = j; return -1; }
    return 0;
}

static void gh_dealloc(GH *s) {
    for (int j = 0; j < s->L; j++) pt_free(&s->tier[j]);
    for (int g = 0; g < MAXG; g++) {
        kv_free(&s->hold[g]); kv_free(&s->release[g]); kv_free(&s->computed[g]); kv_free(&s->transient[g]);
    }
    kv_free(&s->pin_now); kv_free(&s->dem[0]); kv_free(&s->dem[1]); kv_free(&s->tmp); kv_free(&s->tmp2); kv_free(&s->tmp3);
    PyMem_Free(s->rest); PyMem_Free(s->rest2); PyMem_Free(s->rcnt); PyMem_Free(s->eidx); PyMem_Free(s->head); PyMem_Free(s->t0); PyMem_Free(s->where);
    PyMem_Free(s->st); PyMem_Free(s->sc); PyMem_Free(s->req); PyMem_Free(s->rset); PyMem_Free(s->rgen);
    for (Py_ssize_t x = 0; x < s->nspare; x++) PyMem_Free(s->spare[x].a);
    PyMem_Free(s->spare);
    PyMem_Free(s->vr);
    Py_XDECREF(s->clock_fn);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static void adm_dealloc(GAdm *a) {
    GH *s = (GH *)a->owner;
    for (int g = 0; g < a->G; g++) {
        if (s) { kv_give(s, &a->hold[g]); kv_give(s, &a->release[g]); kv_give(s, &a->computed[g]); kv_give(s, &a->transient[g]); }
        kv_free(&a->hold[g]); kv_free(&a->release[g]); kv_free(&a->computed[g]); kv_free(&a->transient[g]);
    }
    Py_XDECREF(a->owner);
    PyMem_Free(a->rest);
    Py_XDECREF(a->hbpt); Py_XDECREF(a->rbpt); Py_XDECREF(a->rbytes);
    PyObject_Free(a);
}

static PyObject *adm_live(GAdm *a, void *unused) { return int_list(a->live, a->G); }
static PyObject *adm_reserved(GAdm *a, void *unused) { return Py_BuildValue("[n]", a->reserved); }

static PyGetSetDef adm_getset[] = {
    {"live", (getter)adm_live, NULL, "per group, blocks the running request holds slots for", NULL},
    {"reserved", (getter)adm_reserved, NULL, "reserved GPU slots held (one pool)", NULL},
    {NULL}};

static PyMemberDef adm_members[] = {
    {"prefix_hit_blocks", T_LONGLONG, offsetof(GAdm, prefix_hit_blocks), READONLY, "leading blocks every group accepts, capped ones included"},
    {"hit_blocks", T_LONGLONG, offsetof(GAdm, hit_blocks), READONLY, "blocks every group accepts"},
    {"last_hit_tier", T_LONGLONG, offsetof(GAdm, last_hit_tier), READONLY, "level of the last hit block, -1"},
    {"lost_blocks", T_LONGLONG, offsetof(GAdm, lost_blocks), READONLY, "hit blocks the hybrid rules refused"},
    {"gpu_lead_blocks", T_LONGLONG, offsetof(GAdm, gpu_lead_blocks), READONLY, "hit from GPU pages alone"},
    {"blocks", T_LONGLONG, offsetof(GAdm, blocks), READONLY, "the request's blocks so far"},
    {"truncated", T_BOOL, offsetof(GAdm, truncated), READONLY, "the request could not get all its slots"},
    {"hit_blocks_per_tier", T_OBJECT, offsetof(GAdm, hbpt), READONLY, "per level"},
    {"restored_blocks_per_tier", T_OBJECT, offsetof(GAdm, rbpt), READONLY, "pages restored per level"},
    {"restored_bytes_per_tier", T_OBJECT, offsetof(GAdm, rbytes), READONLY, "bytes restored per level"},
    {NULL}};

static PyTypeObject GAdmType = {
    PCS_TYPE_RECORD("pcs.cache._grouphier.Admission", GAdm, adm_dealloc,
                    "One running request's hold on a compiled hybrid hierarchy (pcs.cache.grouphier.GroupAdmission).",
                    adm_members, adm_getset)};

static PyMethodDef gh_methods[] = {
    {"start", (PyCFunction)(void (*)(void))gh_start, METH_FASTCALL, "GroupHierarchy.start"},
    {"prefill_done", (PyCFunction)gh_prefill_done, METH_O, "GroupHierarchy.prefill_done"},
    {"finish", (PyCFunction)gh_finish, METH_O, "GroupHierarchy.finish"},
    {"grow", (PyCFunction)(void (*)(void))gh_grow, METH_FASTCALL, "GroupStepMixin.grow"},
    {"abort", (PyCFunction)gh_abort, METH_O, "GroupStepMixin.abort"},
    {"extend", (PyCFunction)(void (*)(void))gh_extend, METH_FASTCALL, "GroupStepMixin.extend"},
    {"held_blocks", (PyCFunction)gh_held_blocks, METH_NOARGS, "GPU pages pinned or reserved"},
    {"tick", (PyCFunction)gh_tick, METH_O, "residency samples up to simulated time t (s)"},
    {"follow", (PyCFunction)gh_follow, METH_O, "read simulated time from clock() before each call"},
    {"first_admission", (PyCFunction)gh_first_admission, METH_NOARGS, "keep the last admission's sample"},
    {"restore_skipped", (PyCFunction)gh_restore_skipped, METH_O, "uncount an admission's restored pages"},
    {"residency_state", (PyCFunction)gh_residency_state, METH_NOARGS, "the Residency fields"},
    {"tier_info", (PyCFunction)gh_tier_info, METH_O, "(resident, held, reserved, inserted, evicted, overflow, peaks)"},
    {"resident", (PyCFunction)gh_resident, METH_O, "[(hash, tag, pin)] of a level"},
    {"order", (PyCFunction)gh_order, METH_O, "[(hash, tag)] unpinned, first victim first"},
    {"check", (PyCFunction)gh_check, METH_NOARGS, "assert the invariants"},
    {"c_api", (PyCFunction)gh_c_api, METH_NOARGS, "a PyCapsule of the C-level API (_grouphier_capi.h)"},
    {"run_sequential", (PyCFunction)(void (*)(void))gh_run_sequential, METH_FASTCALL,
     "run_sequential(hashes, offsets, cacheable, max_hit, hits, lost, arrival=None): sequential requests"},
    {NULL}};

static PyGetSetDef gh_getset[] = {
    {"written_blocks", (getter)gh_written_blocks, NULL, "pages written into each level", NULL},
    {"dropped_blocks", (getter)gh_dropped_blocks, NULL, "pages pushed out of the last level", NULL},
    {"releases_gil", (getter)gh_releases_gil, NULL, "run_sequential runs without the GIL (no followed clock)", NULL},
    {NULL}};

static PyTypeObject GHType = {
    PCS_TYPE_CLASS("pcs.cache._grouphier.Hierarchy", GH, gh_dealloc,
                   "GroupHierarchy (one shared LRU pool per level) in C; pcs/cache/nativegroups.py wraps it.",
                   gh_methods, gh_getset, gh_init)};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_grouphier",
                                    "The compiled hybrid-model hierarchy (pcs/cache/nativegroups.py).", -1, NULL};

PyMODINIT_FUNC PyInit__grouphier(void) {
    if (PyType_Ready(&GAdmType) < 0 || PyType_Ready(&GHType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&GHType);
    if (PyModule_AddObject(m, "Hierarchy", (PyObject *)&GHType) < 0) { Py_DECREF(&GHType); Py_DECREF(m); return NULL; }
    return m;
}
