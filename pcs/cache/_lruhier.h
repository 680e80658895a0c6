/* Shared by pcs/cache/_lruhier.c (the tier hierarchy, the mechanism) and the compiled eviction policies
 * pcs/cache/_pol_*.c (one file per policy, as pcs/cache/policies/NAME.py): the tier structure (open-addressing
 * hash table + entries with intrusive list links: pcs/cache/_oatable.h), list helpers and the policy interface.
 *
 * The policy interface mirrors pcs.cache.policies.base.EvictionPolicy (docs/semantics.md §8): the mechanism
 * calls add (a resident block becomes evictable, in eviction order; add_end closes one add(keys, reused) batch),
 * remove (it is pinned), drop (it leaves the tier without being chosen), touch (unpinned access; touch_end
 * closes the batch), expect (a key about to be stored, before the evictions for it), evict_begin(n) then n
 * victims (each chosen and forgotten by the policy; the mechanism deletes its entry). LRU is not behind the
 * table: a tier whose ops is NULL keeps its inline LRU order (pcs/cache/_lruq.h; front = first victim).
 */
#ifndef PCS_LRUHIER_H
#define PCS_LRUHIER_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_nogil.h"          /* raw memory, GIL-safe errors: the C API may run without the GIL */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../_kernel_common.h"
#include "../_kept.h"              /* entry and order arrays kept between tables: kept_alloc, kept_free */

#define QNONE 0xff
#define NQ 4
/* Entry.flags */
#define F_KNOWN 1      /* the policy has seen the block since it became resident (Python: the key is in its dicts) */
#define F_VISITED 2    /* SIEVE's visited bit */
#define F_INHEAP 4     /* FIFO / LFU: the entry has a current item in the policy's heap */
#define F_PAM 8        /* 2Q: pinned block that left Am; ARC: pinned block (aux = list it left) */
#define F_OUT 16       /* taken out of the policy (Python: remove(), "pinned"): set by the mechanism */
#define OUT(x) ((x)->flags & F_OUT)
#define F_POOL 32      /* in the retention pool of retain (pcs/cache/_retain.c), not in the policy */
/* residency in a table shared by the GPU and CPU LRU tiers (pcs/cache/_lruhier.c, Hier.sh): the entry's block is
 * in the GPU tier (pin = its pin count there, prev = its GPU queue position) / in the CPU tier (next = its CPU
 * queue position; the CPU tier has no pins) */
#define F_GPU 64
#define F_CPU 128

/* a table slot (pcs/cache/_oatable.h, OA_HASH32): entry index (-1: free), the high 32 bits of key_hash(key) */
#ifndef PCS_OA_SLOT_DEFINED
#define PCS_OA_SLOT_DEFINED
typedef struct { int32_t e; uint32_t h; } OaSlot;
#endif

typedef struct {
    uint64_t key;
    int64_t aux;           /* policy data: FIFO sequence number, S3-FIFO frequency, ARC list, LFU uses; in a
                              table shared by two LRU tiers, the key's fingerprint (sh_home) */
    int32_t pin;
    int32_t prev, next;    /* list links (the policy's queue q, a ghost list); next also chains the free list; an
                              inline-LRU tier keeps the entry's position in its queue in prev (_lruq.h), the CPU
                              tier of a table shared with the GPU tier in next (Tier.lqoff) */
    uint8_t q;             /* policy queue holding the entry (QNONE: none) */
    uint8_t flags;
} Entry;

struct PolOps;

typedef struct Tier {
    PyObject *name;
    Py_ssize_t capacity, reserved, nres, held;
    long long inserted, evicted, overflow, peak_res, peak_used;
    Entry *ent;
    int32_t ent_cap, ent_len, free_head;
    OaSlot *slots;         /* open addressing, fingerprinted slots (_oatable.h) */
    uint64_t mask;
    int bits;
    int32_t head, tail;    /* LRU list (ops == NULL), or the list of a key store (ghosts) */
    /* -- policy state (ops != NULL) -- */
    const struct PolOps *ops;
    long long opt[4];                  /* sizes and options, worked out by the Python policy (pcs/cache/native.py) */
    int32_t qhead[NQ], qtail[NQ];
    Py_ssize_t qlen[NQ];
    struct Tier *ghost, *ghost2, *seen;   /* ghost keys (list order = age), expected keys found in a ghost */
    int64_t next_seq, npin_q0, npin, inflation;
    int32_t hand;
    int has_evicted;
    double p;                          /* ARC's target size of T1 */
    int64_t *heap;                     /* FIFO / LFU: min-heap of (rank, entry) pairs */
    Py_ssize_t hlen, hcap;
    uint8_t *pending;                  /* ARC: ghost-lookup result per expected key */
    Py_ssize_t plen, pcap;
    struct IHeap *ih;                  /* GDSF, Belady: their indexed heaps (pcs/cache/_iheap.h; init allocates) */
    int nih;
    int64_t *ex;                       /* LFU, GDSF, Belady: per-entry policy data */
    Py_ssize_t excap;
    /* -- trace-reading policies (GDSF, Belady): the trace data's arrays (PolOps.load; pcs/cache/native.py) -- */
    Py_buffer *pbuf;                   /* the data's buffers, held while the tier reads them */
    int npbuf;
    const uint64_t *pkeys;             /* the known blocks (index j = place in the data's arrays) */
    const int32_t *pslots;             /* open addressing (linear probing, home = key_hash_seeded(hash, pseed) >>
                                          (64 - pbits)): slot -> j, -1 empty; shared by every tier reading the data */
    int pbits;
    uint64_t pseed;                    /* the seed the index was built with (pcs/cache/native.py key_index) */
    Py_ssize_t pn;                     /* the number of known blocks */
    Py_ssize_t plast;                  /* the j data_find found last (its neighbours are tried first) */
    const int32_t *pparent;            /* GDSF: j -> its parent's index or -1 */
    const double *pcost;               /* GDSF: j -> prefill seconds of the block */
    int32_t *pchild;                   /* GDSF: j -> its children held by this tier */
    double finfl, fcost0;              /* GDSF: the inflation L (seconds); the cost of a block not known */
    const int64_t *uoff, *ukeys;       /* Belady: uses of block j are ukeys[uoff[j] .. uoff[j + 1]) */
    int64_t *ucur;                     /* Belady: j -> the first of them the clock has not passed */
    const int64_t *clock;              /* Belady: the index of the request being admitted (the Hier's clock) */
    /* -- admission (pcs/cache/_admission.c; NULL gates: admit everything) -- */
    struct Gate *gates;                /* the tier's admission policies, all must admit */
    int ngates;
    long long refused;                 /* TierStats.refused_blocks */
    uint64_t *gbuf;                    /* scratch of an insert: admitted keys, then refused ones */
    Py_ssize_t gcap;
    struct Retain *ret;                /* retain: the pool in front of the policy (NULL: none) */
    struct PyPol *py;                  /* a policy written in Python, hosted (pcs/cache/_pol_py.c; NULL: none) */
    struct PyArr *pa;                  /* one on the handle contract, hosted (pcs/cache/_pol_pyarr.c; NULL: none) */
    /* -- the inline LRU order (ops == NULL): a queue of entries with lazy deletion (pcs/cache/_lruq.h) -- */
    int32_t *lq;                       /* entry indices, in the order they became evictable (lqcap + LQ_AHEAD) */
    Py_ssize_t lqh, lqn, lqcap;        /* the front (first item not yet passed), the end */
    size_t lqoff;                      /* where an entry keeps its queue position: offsetof(Entry, prev), or
                                          offsetof(Entry, next) for the CPU tier of a shared table */
    /* -- a tier of a table shared by two LRU tiers (pcs/cache/_lruhier.c, Hier.sh; NULL / 0: its own table) -- */
    struct Tier *shared;               /* the shared table (its ent and slots are this tier's, read-only here) */
    uint8_t inflag;                    /* F_GPU or F_CPU: the entry flag of this tier's residency */
    /* -- SLRU: its segments, arrays of entries with lazy deletion (pcs/cache/_pol_slru.c; last: no field above moves) */
    int32_t *sq[2];                    /* [sqh, sqn) read, sqcap + SQ_AHEAD allocated; live items in qlen */
    Py_ssize_t sqh[2], sqn[2], sqcap[2];
    /* -- direct mode of a table shared by two tiers (pcs/cache/_dmap.h; sh_open, ps_open; Hier.sh only: its two
     * tiers reach it through Tier.shared): key k's entry index + 1 at dmap[k] for every k < dlim (0: absent),
     * no slot read or written; NULL: hashed (the slots). A key at or above dlim to be added moves the resident
     * entries into the slots for good (sh_hashed, ps_hashed) -- */
    int32_t *dmap;                     /* dlim items, zeroed (mapped from the kernel: pages backed when touched) */
    uint64_t dlim;                     /* keys below it are direct */
    uint64_t dtop;                     /* 1 + the largest key added in direct mode (0: none; the check's scan) */
    size_t dmapped;                    /* dmap's mapped bytes (munmap), 0 when from calloc */
} Tier;

/* The retention pool of a tier with retain (pcs/cache/_retain.c; pcs.cache.admission_retention.RetainingPolicy):
 * unpinned blocks of the retained token range, oldest retention first, each with its expiry. Counted in
 * Tier.held (the policy's len() in Python is inner + pool); the policy (ops or inline LRU) holds the rest. */
typedef struct Retain {
    Tier *keys;                        /* key store: the blocks holding a token of the range */
    double duration_s;
    double *arrival_s;                 /* per request in trace order (seconds) */
    Py_ssize_t narr;
    const int64_t *now;                /* the hierarchy's request clock (index of the request being admitted) */
    int32_t *prev, *next;              /* pool links per entry */
    double *until;                     /* expiry per entry (s) */
    Py_ssize_t cap, len;
    int32_t head, tail;
    int mono;                          /* expiries rise along the pool (an expiry scan may stop early) */
    Py_ssize_t adds, touches;          /* policy adds / touches since the batch began (add_end / touch_end only then) */
    int32_t *gone;                     /* scratch: expired entries */
    Py_ssize_t gcap;
} Retain;

typedef struct PolOps {
    const char *name;
    int (*init)(Tier *t);                          /* after opt[] is set; -1 + exception on error */
    void (*fini)(Tier *t);
    int (*add)(Tier *t, int32_t e, int reused);   /* -1 on memory error (exception set) */
    void (*add_end)(Tier *t, int reused);          /* NULL: nothing */
    void (*remove)(Tier *t, int32_t e);
    void (*drop)(Tier *t, int32_t e);
    void (*touch)(Tier *t, int32_t e);
    void (*touch_end)(Tier *t);                    /* NULL: nothing */
    int (*expect_begin)(Tier *t);                  /* NULL: nothing */
    int (*expect)(Tier *t, uint64_t key);          /* NULL: nothing; -1 on memory error */
    void (*evict_begin)(Tier *t, Py_ssize_t n);    /* NULL: nothing */
    int32_t (*victim)(Tier *t);                    /* choose and forget one victim (held > 0); -1 on memory error */
    Py_ssize_t (*order)(Tier *t, int32_t *out);    /* held entries, first victim first; -1 on memory error */
    const char *(*check)(Tier *t);                 /* NULL if the structure is sound, else what is wrong */
    int (*load)(Tier *t, PyObject *data);          /* NULL: takes no data; the trace data of a policy that reads
                                                      the trace (pcs/cache/native.py policy_spec); -1 on error */
    int (*sync)(Tier *t);                          /* NULL: nothing; a hosted Python policy's queued calls handed
                                                      over (pcs/cache/_pol_py.c); -1 on error */
    void (*forget)(Tier *t, int32_t e);            /* a block the policy saw pinned (remove, F_OUT) leaves the tier
                                                      from the retain pool (pcs/cache/_retain.c): unlink it as add
                                                      then drop would (RetainingPolicy._forget). NULL: nothing to do
                                                      (lru, slru, arc, lfu, gdsf, belady keep what they know of a
                                                      pinned block in its entry, freed with it) */
    /* -- batch forms (NULL: the mechanism calls add / victim once per block); the same calls' effects, in order -- */
    int (*add_run)(Tier *t, const int32_t *ents, Py_ssize_t n, int reused);
                                                   /* add(t, ents[i], reused) for i = 0..n-1 (one add batch's, before
                                                      its add_end; the mechanism has counted them held); -1 on
                                                      memory error (exception set) */
    int (*victims)(Tier *t, Py_ssize_t n, int32_t *out);
                                                   /* n victim calls at once (n <= held; after evict_begin): their
                                                      entries to out in order, each chosen as if the ones before it
                                                      were already deleted (so a policy offers this only when a
                                                      victim's deletion changes nothing the next choice reads);
                                                      -1 on memory error */
} PolOps;

extern const PolOps POL_FIFO, POL_SLRU, POL_SIEVE, POL_2Q, POL_S3FIFO, POL_ARC, POL_LFU, POL_GDSF, POL_BELADY;
extern const PolOps POL_PY;    /* a Python policy object, hosted (pcs/cache/_pol_py.c) */
extern const PolOps POL_PYARR; /* a Python policy on handles, hosted (pcs/cache/_pol_pyarr.c) */
/* helpers of both hosts (pcs/cache/_pol_py.c): errors naming the policy, its clock, its check */
int pyhost_fail(PyObject *err, PyObject *name, const char *method);
const char *pyhost_article(const char *word);
int pyhost_broke(PyObject *err, PyObject *name, const char *what, unsigned long long key, Py_ssize_t n);
int pyhost_broke_count(PyObject *err, PyObject *name, const char *file, const char *call, Py_ssize_t n,
                       Py_ssize_t got, const char *unit);
int pyhost_broke_ans(PyObject *err, PyObject *name, const char *file, const char *what, const char *label,
                     PyObject *ans, Py_ssize_t n);
PyObject *pyhost_index(PyObject *o);
int pyhost_clock(PyObject *clock, int64_t c);
const char *pyhost_why(char *why, const char *prefix);
const char *pyhost_check(Tier *t, Py_ssize_t (*order)(Tier *, int32_t *), PyObject *count, PyObject *check,
                         char *why);

/* Home slots and fingerprints come from key_hash(key) (pcs/_kernel_common.h, xor-shift then multiply), not from the
 * raw id: ids chosen to share the top bits of one multiply would otherwise all share one slot. */
static inline uint64_t home(const Tier *t, uint64_t key) { return key_hash(key) >> (64 - t->bits); }

#define OA_TABLE Tier
#define OA_ENT Entry
#define OA_KEY uint64_t
#define OA_HOME(t, k) home(t, k)
#define OA_KEY_OF(x) ((x)->key)
#define OA_KEY_EQ(x, k) ((x)->key == (k))
#define OA_SET_KEY(x, k) ((x)->key = (k))
/* an entry's own fields reset when it is added or deleted (OA_RESET; ops_evict's deletions, pcs/cache/_lruhier.c) */
static inline void ent_reset(Entry *x) {
    x->aux = -1;
    x->q = QNONE;
    x->flags = 0;
}
#define OA_RESET(x) ent_reset(x)
#define OA_INIT tier_slots_init
#define OA_FREE tier_slots_free
#define OA_FIND tfind
#define OA_GROW grow_table
#define OA_ADD tadd
#define OA_DEL tdel
#define OA_APPEND lru_append
#define OA_UNLINK lru_unlink
#define OA_HASH32(k) ((uint32_t)(key_hash(k) >> 32))     /* home(t, k) == OA_HASH32(k) >> (32 - bits) */
#define TIER_LOAD_SHIFT 2   /* at most 1/4 full: shorter probe runs for the lookups and backward shifts per access */
#define OA_LOAD_SHIFT TIER_LOAD_SHIFT
/* slot arrays from big_alloc (pcs/_kernel_common.h: from 4 MB on 2 MB aligned, advised for transparent huge pages):
 * a two-tier shared table's slots reach 4 MB at 16,384 + 65,536 blocks, and its randomly probed pages were faulted
 * in 4 KB at a time by every replay (the memory goes back to the system when the hierarchy is freed) */
#define OA_SLOTS_ALLOC(bytes) big_alloc((bytes), 0)
#define OA_SLOTS_FREE(p) free(p)
/* entry arrays on 64-byte boundaries: an Entry (32 B) then lies in one cache line. From malloc (16-byte aligned; a
 * large block 16 bytes past a page) every other entry straddled two lines, its key in one and its pin, queue
 * position and flags in the next: two misses where one will do (cachegrind, 10x Mooncake two-tier) */
#define OA_ENTS_REALLOC(p, used, bytes) ent_realloc((p), (used), (bytes))
#define OA_ENTS_FREE(p) kept_free(p)
static inline void *ent_realloc(void *p, size_t used, size_t bytes) {
    void *q = kept_alloc(bytes);                  /* pcs/_kept.h: from 128 KiB on a mapping a dead table left */
    if (!q) return NULL;
    if (used) memcpy(q, p, used);
    kept_free(p);
    return q;
}
#include "_oatable.h"

/* An entry of a table shared by the GPU and CPU LRU tiers (pcs/cache/_lruhier.c, Hier.sh; no policy, so aux is free)
 * keeps its key's fingerprint OA_HASH32(key) in aux from its add (sh_fill) to its deletion: a deletion (the CPU
 * tier's victims in no tier, lq_walk) and the prefetch of its home slot take the home from it, no hash of the key.
 * The home slot of entry x in a table of 2**bits slots: */
static inline uint64_t sh_home(const Entry *x, int bits) { return (uint64_t)((uint32_t)x->aux >> (32 - bits)); }

/* The direct mode of a shared table s (Tier.dmap): key k's entry, or -1 (a key at or above the limit is not in
 * the table: none was added in direct mode) */
static inline int32_t dfind(const Tier *s, uint64_t k) { return k < s->dlim ? s->dmap[k] - 1 : -1; }

/* the entry of key k in tier t's table (that of a shared table, t->shared, in direct mode: dfind), or -1 */
static inline int32_t tab_find(const Tier *t, uint64_t k) {
    const Tier *s = t->shared;
    return s && s->dmap ? dfind(s, k) : tfind(t, k);
}

/* tdel's steps in a direct table s: entry e (in no list) out of dmap, reset and to the free list */
static inline void ddel(Tier *s, int32_t e) {
    s->dmap[s->ent[e].key] = 0;
    ent_reset(&s->ent[e]);
    s->ent[e].next = s->free_head;
    s->free_head = e;
    s->nres--;
}

static inline int tier_init(Tier *t, PyObject *name, Py_ssize_t capacity) {
    memset(t, 0, sizeof(*t));
    Py_INCREF(name);
    t->name = name;
    t->capacity = capacity;
    t->lqoff = offsetof(Entry, prev);
    if (tier_slots_init(t) < 0) return -1;
    t->hand = -1;
    for (int q = 0; q < NQ; q++) t->qhead[q] = t->qtail[q] = -1;
    return 0;
}

static inline void tier_free(Tier *t) {
    Py_CLEAR(t->name);
    tier_slots_free(t);
}

/* -- the policies' queues: one list per queue id, front = oldest / first victim ----------------------------- */
static inline void q_append(Tier *t, int q, int32_t e) {
    Entry *x = &t->ent[e];
    x->q = (uint8_t)q;
    x->prev = t->qtail[q];
    x->next = -1;
    if (t->qtail[q] >= 0) t->ent[t->qtail[q]].next = e; else t->qhead[q] = e;
    t->qtail[q] = e;
    t->qlen[q]++;
}

static inline void q_unlink(Tier *t, int32_t e) {
    Entry *x = &t->ent[e];
    int q = x->q;
    if (x->prev >= 0) t->ent[x->prev].next = x->next; else t->qhead[q] = x->next;
    if (x->next >= 0) t->ent[x->next].prev = x->prev; else t->qtail[q] = x->prev;
    x->prev = x->next = -1;
    x->q = QNONE;
    t->qlen[q]--;
}

/* q_append of entries ents[0..n) in order, the queue's tail and length in locals (one store of each) */
static inline void q_append_run(Tier *t, int q, const int32_t *ents, Py_ssize_t n) {
    Entry *const ent = t->ent;
    int32_t tail = t->qtail[q];
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t e = ents[i];
        Entry *x = &ent[e];
        x->q = (uint8_t)q;
        x->prev = tail;
        x->next = -1;
        if (tail >= 0) ent[tail].next = e; else t->qhead[q] = e;
        tail = e;
    }
    t->qtail[q] = tail;
    t->qlen[q] += n;
}

static inline int32_t q_pop(Tier *t, int q) {
    int32_t e = t->qhead[q];
    q_unlink(t, e);
    return e;
}

/* n q_pops of queue q (n <= its length): its first n entries, in order, to out (each in no queue) */
static inline void q_pop_run(Tier *t, int q, int32_t *out, Py_ssize_t n) {
    Entry *const ent = t->ent;
    int32_t e = t->qhead[q];
    for (Py_ssize_t i = 0; i < n; i++) {
        Entry *x = &ent[e];
        out[i] = e;
        e = x->next;
        x->prev = x->next = -1;
        x->q = QNONE;
    }
    t->qhead[q] = e;
    if (e >= 0) ent[e].prev = -1; else t->qtail[q] = -1;
    t->qlen[q] -= n;
}

/* entries of queue q from the front, those held by the policy only if held_only; returns the count written */
static inline Py_ssize_t q_collect(const Tier *t, int q, int held_only, int32_t *out) {
    Py_ssize_t n = 0;
    for (int32_t e = t->qhead[q]; e >= 0; e = t->ent[e].next)
        if (!held_only || !OUT(&t->ent[e])) out[n++] = e;
    return n;
}

/* -- key stores (ghost lists, sets of expected keys): a Tier used only for its table and list ------------- */
static inline Tier *kstore_new(void) {
    Tier *s = PyMem_Malloc(sizeof(Tier));
    if (!s) { PyErr_NoMemory(); return NULL; }
    if (tier_init(s, Py_None, 0) < 0) { PyMem_Free(s); PyErr_NoMemory(); return NULL; }
    return s;
}

static inline void kstore_free(Tier *s) {
    if (!s) return;
    tier_free(s);
    PyMem_Free(s);
}

/* append key to a ghost list holding at most cap keys (its oldest leaves when full); 0 or -1 */
static inline int ghost_push(Tier *g, uint64_t key, Py_ssize_t cap) {
    if (cap <= 0) return 0;
    if (g->nres >= cap) {
        int32_t o = g->head;
        lru_unlink(g, o);
        tdel(g, o);
    }
    int32_t e = tadd(g, key, 0);
    if (e < 0) return -1;
    lru_append(g, e);
    return 0;
}

/* take key out of a ghost list; 1 if it was there */
static inline int ghost_pop(Tier *g, uint64_t key) {
    int32_t e = tfind(g, key);
    if (e < 0) return 0;
    lru_unlink(g, e);
    tdel(g, e);
    return 1;
}

/* drop the oldest key of a ghost list (it must not be empty) */
static inline void ghost_pop_oldest(Tier *g) {
    int32_t o = g->head;
    lru_unlink(g, o);
    tdel(g, o);
}

/* PolOps.init of a policy with a ghost list and the set of expected keys found in it (t->ghost, t->seen: 2Q's
 * A1out, S3-FIFO's ghost FIFO); 0 or -1 */
static inline int ghost_policy_init(Tier *t) {
    t->ghost = kstore_new();
    t->seen = t->ghost ? kstore_new() : NULL;
    return t->seen ? 0 : -1;
}

/* add key to a set with a value (pin field); 0 or -1 */
static inline int kset_put(Tier *s, uint64_t key, int32_t value) {
    int32_t e = tfind(s, key);
    if (e >= 0) { s->ent[e].pin = value; return 0; }
    return tadd(s, key, value) < 0 ? -1 : 0;
}

/* PolOps.expect of such a policy: a key not known to the policy that is in the ghost list leaves it and is marked
 * seen (its add then takes the ghost path); 0 or -1 */
static inline int ghost_policy_expect(Tier *t, uint64_t key) {
    int32_t e = tfind(t, key);
    if (e >= 0 && (t->ent[e].flags & F_KNOWN)) return 0;
    return ghost_pop(t->ghost, key) ? kset_put(t->seen, key, 1) : 0;
}

/* remove key from a set: its value, or 0 if absent */
static inline int32_t kset_take(Tier *s, uint64_t key) {
    int32_t e = tfind(s, key);
    if (e < 0) return 0;
    int32_t v = s->ent[e].pin;
    tdel(s, e);
    return v;
}

/* -- a min-heap of (rank, entry) items, lazily cleaned (FIFO, LFU) ------------------------------------------ */
static inline int heap_push(Tier *t, int64_t rank, int32_t e) {
    if (t->hlen + 2 > t->hcap) {
        Py_ssize_t c = t->hcap ? t->hcap * 2 : 128;
        int64_t *h = PyMem_Realloc(t->heap, sizeof(int64_t) * c);
        if (!h) { PyErr_NoMemory(); return -1; }
        t->heap = h;
        t->hcap = c;
    }
    int64_t *h = t->heap;
    Py_ssize_t i = t->hlen / 2;
    t->hlen += 2;
    while (i > 0) {
        Py_ssize_t up = (i - 1) / 2;
        if (h[2 * up] < rank || (h[2 * up] == rank && h[2 * up + 1] <= e)) break;
        h[2 * i] = h[2 * up];
        h[2 * i + 1] = h[2 * up + 1];
        i = up;
    }
    h[2 * i] = rank;
    h[2 * i + 1] = e;
    return 0;
}

static inline void heap_pop(Tier *t) {
    int64_t *h = t->heap;
    Py_ssize_t n = (t->hlen -= 2) / 2;
    if (!n) return;
    int64_t r = h[2 * n], e = h[2 * n + 1];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && (h[2 * c + 2] < h[2 * c] || (h[2 * c + 2] == h[2 * c] && h[2 * c + 3] < h[2 * c + 1]))) c++;
        if (r < h[2 * c] || (r == h[2 * c] && e <= h[2 * c + 1])) break;
        h[2 * i] = h[2 * c];
        h[2 * i + 1] = h[2 * c + 1];
        i = c;
    }
    h[2 * i] = r;
    h[2 * i + 1] = e;
}

/* a key store sized for n keys (no growth while they are added); 0 or -1 */
static inline int kstore_reserve(Tier *s, Py_ssize_t n) {
    while ((uint64_t)(n + 1) * 2 > s->mask + 1) if (grow_table(s) < 0) return -1;
    return grow_table_ents(s, n + 1);
}

/* -- trace data handed to PolOps.load: a tuple of C-contiguous arrays, held by the tier ------------------- */
/* take the n buffers of tuple data (item sizes size[i], lengths in items to len[i]); 0 or -1 */
static inline int data_take(Tier *t, PyObject *data, int n, const Py_ssize_t *size, Py_ssize_t *len) {
    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != n) {
        PyErr_Format(PyExc_TypeError, "policy data: need a tuple of %d arrays", n);
        return -1;
    }
    t->pbuf = PyMem_Calloc(n, sizeof(Py_buffer));
    if (!t->pbuf) { PyErr_NoMemory(); return -1; }
    for (int i = 0; i < n; i++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(data, i), &t->pbuf[i], PyBUF_C_CONTIGUOUS) < 0) return -1;
        t->npbuf = i + 1;
        if (t->pbuf[i].itemsize != size[i]) {
            PyErr_Format(PyExc_TypeError, "policy data %d: need %zd-byte items", i, size[i]);
            return -1;
        }
        len[i] = t->pbuf[i].len / size[i];
    }
    return 0;
}

static inline void data_release(Tier *t) {
    for (int i = 0; i < t->npbuf; i++) PyBuffer_Release(&t->pbuf[i]);
    PyMem_Free(t->pbuf);
    t->pbuf = NULL;
    t->npbuf = 0;
}

/* set the index (keys (n,), slots (2**bits,), built with seed (1,)) of the known blocks; 0 or -1 (bad sizes) */
static inline int data_index(Tier *t, const uint64_t *keys, Py_ssize_t n, const int32_t *slots, Py_ssize_t nslots,
                             const uint64_t *seed, Py_ssize_t nseed) {
    int bits = 0;
    while (((Py_ssize_t)1 << bits) < nslots) bits++;
    if (((Py_ssize_t)1 << bits) != nslots || nslots < 2 * n || bits < 1 || bits > 40 || nseed != 1) {
        PyErr_SetString(PyExc_ValueError, "policy data: the index needs 2**k >= 2n slots and its seed");
        return -1;
    }
    t->pseed = seed[0];
    t->pkeys = keys;
    t->pslots = slots;
    t->pbits = bits;
    t->pn = n;
    t->plast = 0;
    return 0;
}

/* the index of a known block, or -1. The known blocks are in trace order (first appearance, or first
 * hit-earning use) and a tier stores a request's new blocks together, tail first (or head first), so the
 * neighbours of the last block found are tried first: a read of the cache line just read, where the index is
 * a random read (keys are distinct: the answer is the same). */
static inline int32_t data_find(Tier *t, uint64_t key) {
    if (!t->pslots) return -1;
    Py_ssize_t g = t->plast;
    if (g > 0 && t->pkeys[g - 1] == key) return (int32_t)(t->plast = g - 1);
    if (g + 1 < t->pn && t->pkeys[g + 1] == key) return (int32_t)(t->plast = g + 1);
    uint64_t mask = ((uint64_t)1 << t->pbits) - 1, i = key_hash_seeded(key, t->pseed) >> (64 - t->pbits);
    for (;;) {
        int32_t j = t->pslots[i];
        if (j < 0) return -1;
        if (t->pkeys[j] == key) return (int32_t)(t->plast = j);
        i = (i + 1) & mask;
    }
}
/* -- admission policies (pcs/cache/_admission.c; docs/semantics.md §8) ------------------------------------ */
int gates_set(Tier *t, PyObject *specs);           /* ((kind, a, b), ...) -> t->gates; 0 or -1 + exception */
void gates_free(Tier *t);
int gates_observe(Tier *t, const uint64_t *head, Py_ssize_t n, Py_ssize_t hits);   /* one lookup; 0 or -1 */
Py_ssize_t gates_filter(Tier *t, const uint64_t *keys, Py_ssize_t len, Py_ssize_t *nref);  /* -1: no memory */
int gates_duels(const Tier *t);                    /* whether a gate duels (tinylfu) */
int gates_duel(const Tier *t, uint64_t candidate, uint64_t victim);   /* candidate takes the slot */

/* -- retain (pcs/cache/_retain.c; docs/semantics.md §8) ------------------------------------------------------ */
int ret_set(Tier *t, PyObject *spec, const int64_t *now);   /* (keys u64 buffer, duration s, arrivals f64 buffer) */
void ret_free(Tier *t);
int ret_add(Tier *t, int32_t e);                   /* 1: retained, pooled (held + 1); 0: not retained; -1 */
int ret_take(Tier *t, int32_t e);                  /* 1: it was pooled, taken out (held - 1); 0: not pooled */
int ret_touch(Tier *t, int32_t e);                 /* 1: pooled, moved last with a new expiry; 0: not pooled */
Py_ssize_t ret_expire(Tier *t, int32_t **gone);    /* expired entries taken out, pool order (held - each); -1 */
int32_t ret_pop(Tier *t);                          /* the oldest pooled entry, taken out (held - 1), forgotten */
int ret_drop(Tier *t, int32_t e);                  /* 1: it was pooled, taken out and forgotten; 0: not pooled */
Py_ssize_t ret_order(const Tier *t, int32_t *out); /* pooled entries, oldest first */
const char *ret_check(const Tier *t);              /* NULL if the pool is sound */

#endif
