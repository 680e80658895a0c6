/* pcs.cache._lruhier: the tier hierarchy of pcs/cache/hierarchy.py when every tier's policy is LRU, in C.
 *
 * Same semantics, call for call, as pcs.cache.hierarchy.Hierarchy over pcs.cache.tier.Tier with
 * pcs.cache.policies.lru.LRUPolicy (lookup, pins, reserved slots, restores, wait_if_full,
 * truncation, write-back / write-through, and Tier.insert's batch rule: a batch larger than the
 * unpinned room pushes out its own oldest keys). Each tier is an open-addressing hash table
 * (linear probing, backward-shift deletion) from block hash (uint64) to an entry holding the pin
 * count; the unpinned entries are in LRU order in a queue with lazy deletion (pcs/cache/_lruq.h;
 * front = least recently used = first victim). Two plain LRU tiers share one table instead (Hier.sh, sh_open: an
 * entry per block with both tiers' queue positions and residency flags F_GPU / F_CPU; the tiers' Tier structs keep
 * their counters and queues and read the shared arrays); so do two fifo / slru tiers (pcs/cache/_lruhier_polshare.h:
 * the CPU policy's fields in an entry array of its own beside the shared entries). Either shared table starts in
 * direct mode (Tier.dmap, pcs/cache/_dmap.h: keys below twice the trace's block hashes index an array of entries, no
 * hash and no probe) and is hashed for good once a key past that is added (sh_hashed, ps_hashed). The Python wrapper is pcs/cache/native.py; the equality of the
 * two implementations is tested in tests/cache/test_replay_native.py. Field names are those of
 * pcs.cache.hierarchy.Admission (prefix_hit_blocks, hit_blocks, ...); rules: docs/semantics.md.
 */
#include "_lruhier.h"
#include "_lruq.h"
#include "_lruhier_api.h"
#include "structmember.h"

/* -- the policy calls of the mechanism (LRU inline: ops == NULL; a retain pool, pcs/cache/_retain.c, first) -- */
static inline int inner_add(Tier *t, int32_t e, int reused) {
    if (!t->ops) return lq_append(t, e);
    t->held++;
    t->ent[e].flags &= ~F_OUT;
    return t->ops->add(t, e, reused);
}

static inline int pol_add(Tier *t, int32_t e, int reused) {
    if (t->ret) {
        int r = ret_add(t, e);
        if (r) return r < 0 ? -1 : 0;
        t->ret->adds++;
    }
    return inner_add(t, e, reused);
}

static inline void pol_add_end(Tier *t, int reused) {
    if (t->ret) {                       /* RetainingPolicy.add: the policy's add only for the blocks not pooled */
        if (!t->ret->adds) return;
        t->ret->adds = 0;
    }
    if (t->ops && t->ops->add_end) t->ops->add_end(t, reused);
}

static inline void pol_remove(Tier *t, int32_t e) {
    if (t->ret && ret_take(t, e)) return;
    if (!t->ops) { lq_unlink(t, e); return; }
    t->held--;
    t->ent[e].flags |= F_OUT;
    t->ops->remove(t, e);
}

static inline void pol_drop(Tier *t, int32_t e) {
    if (t->ret && ret_drop(t, e)) return;
    if (!t->ops) { lq_unlink(t, e); return; }
    t->held--;
    t->ops->drop(t, e);
}

/* 0, or -1 on a memory error of the LRU order */
static inline int pol_touch(Tier *t, int32_t e) {
    if (t->ret) {
        if (ret_touch(t, e)) return 0;
        t->ret->touches++;
    }
    if (!t->ops) { lq_unlink(t, e); return lq_append(t, e); }
    t->ops->touch(t, e);
    return 0;
}

static inline void pol_touch_end(Tier *t) {
    if (t->ret) {
        if (!t->ret->touches) return;
        t->ret->touches = 0;
    }
    if (t->ops && t->ops->touch_end) t->ops->touch_end(t);
}

/* RetainingPolicy._expire: the expired pooled blocks go back to the policy as one add batch (not reused) */
static int ret_release(Tier *t) {
    int32_t *gone;
    Py_ssize_t n = ret_expire(t, &gone);
    if (n < 0) return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (inner_add(t, gone[i], 0) < 0) return -1;
    if (n && t->ops && t->ops->add_end) t->ops->add_end(t, 0);
    return 0;
}

static inline int pol_expects(const Tier *t) { return t->ops && t->ops->expect; }

/* Prefetch distance of the per-key loops below (lookups, fills, inserts, pin checks): the home slot of key
 * i + PF_AHEAD (or the entry of hint i + PF_AHEAD) is requested while key i is handled, so that the table's cache
 * misses overlap. */
#define PF_AHEAD 8

/* PcsAdm.live of an admission of a shared table (sh_open) once every hint is known: its pinned keys' at its start,
 * its computed keys' at its prefill_done (their fill writes them; an extend's fill too). 1: live, some hint may be
 * -1 (hint_ok's `trust`); 0: not live (every hint checked in full) */
#define ADM_KNOWN 2

/* Hash once per key: a key's 32-bit fingerprint (OA_HASH32, _lruhier.h) gives its home slot in every tier's table
 * (fp >> (32 - bits)) and is what its slot stores, so a loop works it out once for the prefetch, the lookups (all
 * tiers) and the add, instead of once for each. The loops over keys from a caller keep the fingerprints of the
 * next PF_AHEAD keys in a ring of FP_RING (key k at k & (FP_RING - 1): key i + PF_AHEAD's is written while key i's
 * is still read). */
#define FP_RING (2 * PF_AHEAD)
static inline uint32_t key_fp(uint64_t k) { return (uint32_t)(key_hash(k) >> 32); }
static inline uint64_t fp_home(const Tier *t, uint32_t f) { return f >> (32 - t->bits); }

/* the ring's first PF_AHEAD fingerprints worked out and their home slots prefetched (a loop over n keys) */
static inline __attribute__((always_inline)) void fp_ring_prime(uint32_t *ring, const uint64_t *keys, Py_ssize_t n,
                                                                const OaSlot *slots, int sh) {
    for (Py_ssize_t i = 0; i < PF_AHEAD && i < n; i++) {
        ring[i] = key_fp(keys[i]);
        __builtin_prefetch(&slots[ring[i] >> sh], 0, 1);
    }
}

/* key i's fingerprint from the ring, key i + PF_AHEAD's worked out into it and its home slot prefetched */
static inline __attribute__((always_inline)) uint32_t fp_ring_take(uint32_t *ring, const uint64_t *keys,
                                                                   Py_ssize_t i, Py_ssize_t n, const OaSlot *slots,
                                                                   int sh) {
    if (i + PF_AHEAD < n) {
        const uint32_t f2 = key_fp(keys[i + PF_AHEAD]);
        ring[(size_t)(i + PF_AHEAD) & (FP_RING - 1)] = f2;
        __builtin_prefetch(&slots[f2 >> sh], 0, 1);
    }
    return ring[(size_t)i & (FP_RING - 1)];
}

/* tfind_fp with the table's arrays in hand: key k (fingerprint f)'s entry, or -1 with *j left at the empty slot
 * ending its probe run (where tadd_atf puts it) */
static inline __attribute__((always_inline)) int32_t fp_find(const OaSlot *slots, const Entry *ent, uint64_t mask,
                                                             int sh, uint64_t k, uint32_t f, uint64_t *j) {
    for (uint64_t s = f >> sh;; s = (s + 1) & mask) {
        const OaSlot sl = slots[s];
        if (sl.e < 0) { *j = s; return -1; }
        if (sl.h == f && ent[sl.e].key == k) return sl.e;
    }
}

/* key k's fingerprint into ring (k < n), its home slots in t and, when u is not NULL, in u prefetched */
static inline void fp_ahead(uint32_t *ring, const uint64_t *keys, Py_ssize_t k, Py_ssize_t n, const Tier *t,
                            const Tier *u) {
    if (k >= n) return;
    uint32_t f = key_fp(keys[k]);
    ring[(size_t)k & (FP_RING - 1)] = f;
    __builtin_prefetch(&t->slots[fp_home(t, f)], 0, 1);
    if (u) __builtin_prefetch(&u->slots[fp_home(u, f)], 0, 1);
}

/* before a loop from key i0: fp_ahead of its first PF_AHEAD keys */
static inline void fp_first(uint32_t *ring, const uint64_t *keys, Py_ssize_t i0, Py_ssize_t n, const Tier *t,
                            const Tier *u) {
    for (Py_ssize_t k = i0; k < i0 + PF_AHEAD && k < n; k++) fp_ahead(ring, keys, k, n, t, u);
}

/* entry e's pin count in tier t (the CPU tier of a shared table has none: the entry's count is the GPU tier's) */
static inline int32_t tier_pin(const Tier *t, int32_t e) { return t->inflag == F_CPU ? 0 : t->ent[e].pin; }

/* the entry of key k in tier t, or -1 (in a shared table: found, and resident in t) */
static inline int32_t tier_find(const Tier *t, uint64_t k) {
    int32_t e = tab_find(t, k);
    return e >= 0 && t->inflag && !(t->ent[e].flags & t->inflag) ? -1 : e;
}


/* those of entries ents[0..n) in no tier any more leave the shared table s (direct or hashed) */
static inline void sh_free(Tier *s, const int32_t *ents, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(s->ent[ents[i]].flags & (F_GPU | F_CPU))) {
            if (s->dmap) ddel(s, ents[i]);
            else tdel(s, ents[i]);
        }
}

/* tevict's policy step (ops, n > 0): n victims chosen by the policy, their keys to out, each deleted from the table
 * (its entry reset and put on the free list, in victim order: tdel's steps). With the policy's batch form
 * (PolOps.victims) and scratch (room for n entries) the victims are chosen first, then deleted in order with the
 * table's slots, size, entries and free list in locals (no indirect call and no reload of the table per victim);
 * fps (NULL: not wanted) gets each victim's key_fp, the hash that gives its home slot here and the next tier's
 * probes (cascade). The same victims, slots and free list as a victim call then a deletion per block. 0 or -1 */
static __attribute__((noinline)) int ops_evict(Tier *t, Py_ssize_t n, uint64_t *out, int32_t *scratch,
                                                uint32_t *fps) {
    if (t->ops->evict_begin) t->ops->evict_begin(t, n);
    if (!scratch || !t->ops->victims) {
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t e = t->ops->victim(t);
            if (e < 0) return -1;
            t->held--;
            out[i] = t->ent[e].key;
            if (fps) {
                fps[i] = key_fp(out[i]);
                tdel_home(t, e, fp_home(t, fps[i]));
            } else tdel(t, e);
        }
        return 0;
    }
    if (t->ops->victims(t, n, scratch) < 0) return -1;
    Entry *const ent = t->ent;
    OaSlot *const slots = t->slots;
    const uint64_t mask = t->mask;
    const int bits = t->bits, sh = 32 - bits;
    int32_t free_head = t->free_head;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t e = scratch[i];
        Entry *const x = &ent[e];
        const uint64_t k = x->key;
        const uint32_t f = key_fp(k);
        out[i] = k;
        if (fps) fps[i] = f;
        tdel_shift(t, slots, mask, bits, e, f >> sh);
        ent_reset(x);
        x->next = free_head;
        free_head = e;
    }
    t->free_head = free_head;
    t->nres -= n;
    t->held -= n;
    return 0;
}

/* evict n unpinned blocks (n <= held) chosen by the tier's policy (LRU: the n least recently used),
 * writing their keys to out in eviction order (a tier of a shared table: not written, out not read -- its
 * hierarchy's callers count them, lq_walk); in a shared table (t->shared) with oute their entries go to oute and
 * stay in the table (the caller frees those in no tier: sh_free), with oute NULL those in no tier any more leave the
 * table (lq_evict); in a table of its own oute (NULL: none) is ops_evict's scratch. 0, or -1 on a memory error of a
 * policy's ghost list */
static int tevict(Tier *t, Py_ssize_t n, uint64_t *out, int32_t *oute) {
    Py_ssize_t all = n;
    if (t->ret) {                       /* RetainingPolicy.evict: expire, the policy's victims, then the pool's */
        if (ret_release(t) < 0) return -1;
        if (n > t->held - t->ret->len) n = t->held - t->ret->len;
    }
    if (t->ret && !n) {                 /* the policy's evict is not called for no victim (m == 0) */
    } else if (t->shared) {
        lq_evict(t, n, out, oute);      /* they leave the tier (the table: when in no tier, and no oute) */
        t->nres -= n;
    } else if (!t->ops) {
        lq_evict(t, n, out, NULL);
    } else if (ops_evict(t, n, out, oute, NULL) < 0) {
        return -1;
    }
    for (Py_ssize_t i = n; i < all; i++) {   /* the pool's oldest, forgotten by the policy (after its victims) */
        int32_t e = ret_pop(t);
        out[i] = t->ent[e].key;
        tdel(t, e);
    }
    t->evicted += all;
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
static PyTypeObject AdmType;

/* The Python Admission: a PcsAdm (_lruhier_api.h, the state the C API's caller holds as a plain struct) in an
 * object, with its per-tier lists built on first read. */
typedef struct {
    PyObject_HEAD
    PyObject *hit_blocks_per_tier, *restored_blocks_per_tier;   /* lists, built on first read from counts */
    PcsAdm c;
} Adm;

/* a PcsAdm's buffers released (raw memory: they may be grown without the GIL); its counts, keys and ents are one
 * block from counts (adm_grow) */
static void c_adm_free(PcsAdm *a) {
    PyMem_RawFree(a->counts);
    memset(a, 0, sizeof *a);
}

static void adm_dealloc(Adm *a) {
    Py_XDECREF(a->hit_blocks_per_tier);
    Py_XDECREF(a->restored_blocks_per_tier);
    c_adm_free(&a->c);
    Py_TYPE(a)->tp_free((PyObject *)a);
}

/* a new Python Admission holding no blocks yet, or NULL */
static Adm *adm_new(void) {
    Adm *a = PyObject_New(Adm, &AdmType);
    if (!a) return NULL;
    a->hit_blocks_per_tier = a->restored_blocks_per_tier = NULL;
    memset(&a->c, 0, sizeof a->c);
    return a;
}

static PyObject *adm_get_used(Adm *a, void *c) { return pcs_list_u64(a->c.keys, a->c.nused); }
static PyObject *adm_get_new(Adm *a, void *c) { return pcs_list_u64(a->c.keys + a->c.nused, a->c.nnew); }

/* a per-tier list (counts + off, ntiers items), built once and kept in *slot (the same list on every read) */
static PyObject *adm_list(Adm *a, PyObject **slot, Py_ssize_t off) {
    if (!*slot) {
        PyObject *l = PyList_New(a->c.ntiers);
        if (!l) return NULL;
        for (int j = 0; j < a->c.ntiers; j++) {
            PyObject *v = PyLong_FromSsize_t(a->c.counts[off + j]);
            if (!v) { Py_DECREF(l); return NULL; }
            PyList_SET_ITEM(l, j, v);
        }
        *slot = l;
    }
    Py_INCREF(*slot);
    return *slot;
}

static PyObject *adm_get_hits(Adm *a, void *c) { return adm_list(a, &a->hit_blocks_per_tier, 0); }
static PyObject *adm_get_restored(Adm *a, void *c) { return adm_list(a, &a->restored_blocks_per_tier, a->c.ntiers); }

static PyMemberDef adm_members[] = {
    {"prefix_hit_blocks", T_PYSSIZET, offsetof(Adm, c.prefix_hit_blocks), READONLY,
     "leading blocks resident in some tier"},
    {"hit_blocks", T_PYSSIZET, offsetof(Adm, c.hit_blocks), READONLY, "hit blocks"},
    {"last_hit_tier", T_PYSSIZET, offsetof(Adm, c.last_hit_tier), READONLY, "tier of the last hit (-1: none)"},
    {"reserved_blocks", T_PYSSIZET, offsetof(Adm, c.reserved_blocks), 0, "reserved slots held"},
    {"truncated", T_BOOL, offsetof(Adm, c.truncated), READONLY, "could not get all its slots"},
    {"gpu_lead_blocks", T_PYSSIZET, offsetof(Adm, c.gpu_lead_blocks), READONLY,
     "leading hit blocks served by the GPU tier, before the first lower-tier hit"},
    {NULL}
};

static PyGetSetDef adm_getset[] = {
    {"pinned_hashes", (getter)adm_get_used, NULL, "GPU blocks pinned at admission, chain order", NULL},
    {"computed_hashes", (getter)adm_get_new, NULL, "blocks to compute that got a slot, chain order", NULL},
    {"hit_blocks_per_tier", (getter)adm_get_hits, NULL, "hit blocks per tier", NULL},
    {"restored_blocks_per_tier", (getter)adm_get_restored, NULL, "restored blocks per tier", NULL},
    {NULL}
};

static PyTypeObject AdmType = {
    PCS_TYPE_RECORD("pcs.cache._lruhier.Admission", Adm, adm_dealloc,
                    "One running request's hold on the cache (see pcs.cache.hierarchy.Admission).", adm_members,
                    adm_getset)};

/* ---------------------------------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    int ntiers, write_through;
    Tier *t;
    long long *written;
    long long dropped;
    /* scratch, grown on demand */
    uint64_t *k, *buf_a, *buf_b;
    const uint64_t *req;                   /* the keys of the request being started: k, or a C caller's (req_keys) */
    int32_t *where, *eidx, *mark, *lidx;   /* lidx: per key of the lookup, its entry in tier where[i] (lower) */
    uint32_t *fps;                         /* fingerprints of an insert's keys (key_fp), bcap allocated */
    int32_t *vent;                         /* shared table: the GPU victims' entries (bcap); else scratch of
                                              ops_evict */
    Py_ssize_t fps_n;                      /* h->fps holds the key_fp of the fps_n GPU victims in buf_a (gpu_evict,
                                              a tier of its own with a policy; 0: not), for the cascade's first
                                              insert */
    Tier *sh;                              /* the table shared by the GPU and CPU tiers (NULL: one per tier) */
    Py_ssize_t sh_want;                    /* the blocks sh_open sized its slots for (sh_hashed sizes them so) */
    Py_ssize_t kcap, bcap;
    uint64_t *skey;
    uint32_t *sstamp;
    uint32_t stamp;
    uint64_t smask;
    int sbits;
    int64_t clock, admitted;   /* the request being (or last) admitted, -1 before the first; admissions made */
    PcsAdm seq_adm;            /* run_sequential's admission (its buffers reused request after request) */
} Hier;

#include "_dmap.h"   /* the direct mode of a shared table (Tier.dmap): dmap_limit, dmap_open, dmap_below, dmap_hash */

/* free a tier and its policy's state */
static void tier_close(Tier *t) {
    if (t->ops && t->ops->fini) t->ops->fini(t);
    gates_free(t);
    ret_free(t);
    kstore_free(t->ghost);
    kstore_free(t->ghost2);
    kstore_free(t->seen);
    t->ghost = t->ghost2 = t->seen = NULL;
    data_release(t);
    PCS_FREE(&t->heap, &t->pending, &t->ex, &t->pchild, &t->ucur);
    kept_free(t->lq);                             /* lq_compact's kept_alloc */
    t->lq = NULL;
    tier_free(t);
}

static void hier_dealloc(Hier *h) {
    if (h->sh && h->t[0].ops) kept_free(h->t[1].ent);          /* the CPU tier's own entries (ps_open: ent_realloc) */
    for (int j = 0; h->t && j < h->ntiers; j++) {
        if (h->sh) h->t[j].ent = NULL, h->t[j].slots = NULL;    /* the shared table's, freed with it */
        tier_close(&h->t[j]);
    }
    PCS_FREE(&h->t, &h->written, &h->k, &h->buf_a, &h->buf_b, &h->where, &h->eidx, &h->mark, &h->skey, &h->sstamp,
             &h->lidx, &h->fps, &h->vent);
    if (h->sh) dmap_free(h->sh);
    kstore_free(h->sh);
    c_adm_free(&h->seq_adm);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static int ensure_k(Hier *h, Py_ssize_t n) {
    if (n <= h->kcap) return 0;
    return pcs_grow_arrays(&h->kcap, n, 64, 4, (void *const[]){&h->k, &h->where, &h->eidx, &h->lidx},
                           (const size_t[]){sizeof *h->k, sizeof *h->where, sizeof *h->eidx, sizeof *h->lidx});
}

/* buffers for victims / pushed keys of a cascade (a and b), per-key marks and fingerprints, victims' entries */
static int ensure_b(Hier *h, Py_ssize_t n) {
    if (n <= h->bcap) return 0;
    return pcs_grow_arrays(&h->bcap, n, 64, 5, (void *const[]){&h->buf_a, &h->buf_b, &h->mark, &h->fps, &h->vent},
                           (const size_t[]){sizeof *h->buf_a, sizeof *h->buf_b, sizeof *h->mark, sizeof *h->fps,
                                            sizeof *h->vent});
}

/* whether k[0..m) rise strictly (then no key repeats: the answer of first_repeat is m without a set). Block ids
 * given in order of first appearance (Mooncake's hash_ids, pcs's own chained ids) rise along every request: one
 * compare per key instead of a hash-set insert (callgrind, Mooncake 10x: the cut 20.5 -> 7.5 instructions per
 * block access) */
static inline int keys_rise_plain(const uint64_t *k, Py_ssize_t m) {
    Py_ssize_t i = 1;
    for (; i + 4 <= m; i += 4)          /* four compares, one branch */
        if ((k[i] <= k[i - 1]) | (k[i + 1] <= k[i]) | (k[i + 2] <= k[i + 1]) | (k[i + 3] <= k[i + 2])) return 0;
    for (; i < m; i++) if (k[i] <= k[i - 1]) return 0;
    return 1;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
static int rise_avx2;      /* the CPU has AVX2 (PyInit__lruhier): keys_rise compares four pairs per instruction */

/* keys_rise_plain's answer, four keys a step: each key and the one before it, both with the sign bit flipped (an
 * unsigned order as a signed one: AVX2 compares signed), compared at once; the answers and-ed over the keys (no early
 * exit: nearly every request rises), the last m - 1 mod 4 keys one by one */
__attribute__((target("avx2"))) static int keys_rise_avx2(const uint64_t *k, Py_ssize_t m) {
    const __m256i flip = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
    __m256i ok = _mm256_set1_epi64x(-1);
    Py_ssize_t i = 1;
    for (; i + 4 <= m; i += 4) {
        const __m256i cur = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(k + i)), flip);
        const __m256i prev = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(k + i - 1)), flip);
        ok = _mm256_and_si256(ok, _mm256_cmpgt_epi64(cur, prev));
    }
    if (_mm256_movemask_epi8(ok) != -1) return 0;
    for (; i < m; i++) if (k[i] <= k[i - 1]) return 0;
    return 1;
}

static inline int keys_rise(const uint64_t *k, Py_ssize_t m) {
    return rise_avx2 ? keys_rise_avx2(k, m) : keys_rise_plain(k, m);
}
#define RISE_INIT() (__builtin_cpu_init(), rise_avx2 = __builtin_cpu_supports("avx2") != 0)
#else
static inline int keys_rise(const uint64_t *k, Py_ssize_t m) { return keys_rise_plain(k, m); }
#define RISE_INIT() ((void)0)
#endif

/* first_repeat's answer for keys that do not rise (a set of the keys seen); out of line: first_repeat's test is
 * inlined into each start, this part runs for no request of the Mooncake trace */
static __attribute__((noinline)) Py_ssize_t repeat_scan(Hier *h, const uint64_t *k, Py_ssize_t m) {
    if ((uint64_t)m * 2 > h->smask + 1 || !h->skey) {
        int bits = 4;
        while (((uint64_t)1 << bits) < (uint64_t)m * 2) bits++;
        uint64_t size = (uint64_t)1 << bits;
        PyMem_Free(h->skey);
        PyMem_Free(h->sstamp);
        h->skey = PyMem_Malloc(sizeof(uint64_t) * size);
        h->sstamp = PyMem_Calloc(size, sizeof(uint32_t));
        if (!h->skey || !h->sstamp) { PyErr_NoMemory(); return -1; }
        h->smask = size - 1;
        h->sbits = bits;
        h->stamp = 0;
    }
    if (++h->stamp == 0) {
        memset(h->sstamp, 0, sizeof(uint32_t) * (h->smask + 1));
        h->stamp = 1;
    }
    uint32_t s = h->stamp;
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t j = key_hash(k[i]) >> (64 - h->sbits);
        for (;;) {
            if (h->sstamp[j] != s) { h->sstamp[j] = s; h->skey[j] = k[i]; break; }
            if (h->skey[j] == k[i]) return i;
            j = (j + 1) & h->smask;
        }
    }
    return m;
}

/* index of the first key repeating an earlier one (m if none) */
static inline Py_ssize_t first_repeat(Hier *h, const uint64_t *k, Py_ssize_t m) {
    return keys_rise(k, m) ? m : repeat_scan(h, k, m);
}

/* Tier._duel (an admission that duels, tinylfu): each of the first `need` new keys (mark -2) takes one victim's
 * slot if gates_duel says so (the victim is evicted: written to out, counted), else it is refused (mark -3,
 * counted in t->refused) and the victim goes back to the policy as reused (a new entry, as the Python policy
 * forgets a victim). Returns the victims evicted, *nlost the refused keys; -1 on memory error. */
static Py_ssize_t tduel(Tier *t, const uint64_t *keys, int32_t *mark, Py_ssize_t len, Py_ssize_t need,
                        uint64_t *out, Py_ssize_t *nlost) {
    Py_ssize_t won = 0, lost = 0;
    for (Py_ssize_t i = 0; i < len && need > 0; i++) {
        if (mark[i] != -2) continue;
        need--;
        if (!t->held) { mark[i] = -3; lost++; continue; }     /* policy.evict(1) is None */
        uint64_t vk;
        if (tevict(t, 1, &vk, NULL) < 0) return -1;           /* policy.evict(1) */
        if (gates_duel(t, keys[i], vk)) {
            out[won++] = vk;
            continue;
        }
        t->evicted--;                                         /* the victim stays: policy.add(v, True) */
        int32_t e = tadd(t, vk, 0);
        if (e < 0 || pol_add(t, e, 1) < 0) return -1;
        pol_add_end(t, 1);
        mark[i] = -3;
        lost++;
    }
    t->refused += lost;
    *nlost = lost;
    return won;
}

/* Tier._overflow: a batch larger than the unpinned room pushes out its first keys (those resident and unpinned
 * are evicted, the others overflow); returns how many */
static Py_ssize_t tcut(Tier *t, const uint64_t *keys, Py_ssize_t len) {
    Py_ssize_t room = t->capacity - t->nres - t->reserved + t->held;
    if (len <= room) return 0;
    Py_ssize_t cut = len - (room > 0 ? room : 0), gone = 0;
    for (Py_ssize_t i = 0; i < cut; i++) {
        int32_t e = tfind(t, keys[i]);
        if (e >= 0 && t->ent[e].pin == 0) {
            pol_drop(t, e);
            tdel(t, e);
            gone++;
        }
    }
    t->evicted += gone;
    t->overflow += cut - gone;
    return cut;
}

/* Tier._add_in_runs over keys[start..len) (fingerprints fps, key_fp) by their marks (-2 new: stored; >= 0
 * resident again: reused; -1 pinned, -3 refused: skipped): one add per run of one flag; 0 or -1 */
static int tadd_runs(Tier *t, const uint64_t *keys, const uint32_t *fps, const int32_t *mark, Py_ssize_t start,
                     Py_ssize_t len) {
    int run = 0, cur = 0;
    for (Py_ssize_t i = start; i < len; i++) {
        int32_t e = mark[i];
        int f = e >= 0;
        if (e == -2) {
            e = tadd_fp(t, keys[i], 0, fps[i]);
            if (e < 0) return -1;
        } else if (e < 0) continue;
        if (f != cur && run) { pol_add_end(t, cur); run = 0; }
        cur = f;
        if (pol_add(t, e, f) < 0) return -1;
        run++;
    }
    if (run) pol_add_end(t, cur);
    return 0;
}

/* one run of a batch add (tadd_batch): n entries counted held (inner_add), the policy's add_run, its add_end */
static inline int add_run_end(Tier *t, const int32_t *ents, Py_ssize_t n, int reused) {
    t->held += n;
    if (t->ops->add_run(t, ents, n, reused) < 0) return -1;
    if (t->ops->add_end) t->ops->add_end(t, reused);
    return 0;
}

/* tadd_runs for a policy with a batch add (PolOps.add_run) and no retain pool, when the batch's nfresh new keys fit
 * the table's slots without growth (the per-key adds would grow them none either, so the slots come out the same):
 * the new keys' entries taken and put (tadd_take, tadd_put: the free list in victim order, as tadd) with the table's
 * arrays, free list and count in locals, one slot probe each from its fingerprint; each run of one flag then handed
 * to the policy at once, after inner_add's steps (held counted, F_OUT cleared), then its add_end. The same entries,
 * slots and policy calls as tadd_runs (the policy's adds of a run after the run's table adds: add_run reads no slot
 * or free entry). mark[start..len) is overwritten (the runs' entries: no -3 mark to keep, the caller's nlost 0).
 * 1 done, 0 not taken (nothing changed), -1 */
static int tadd_batch(Tier *t, const uint64_t *keys, const uint32_t *fps, int32_t *mark, Py_ssize_t start,
                      Py_ssize_t len, Py_ssize_t nfresh) {
    if (t->ret || !t->ops || !t->ops->add_run || (uint64_t)(t->nres + nfresh) << TIER_LOAD_SHIFT > t->mask + 1)
        return 0;
    if (grow_table_ents(t, t->nres + nfresh > t->ent_len ? t->nres + nfresh : t->ent_len) < 0) return -1;
    Entry *const ent = t->ent;                     /* not moved below: its room is made */
    OaSlot *const slots = t->slots;
    const uint64_t mask = t->mask;
    const int sh = 32 - t->bits;
    int32_t free_head = t->free_head, ent_len = t->ent_len;
    Py_ssize_t w = start, run0 = start, made = 0;
    int cur = 0;
    for (Py_ssize_t i = start; i < len; i++) {
        int32_t e = mark[i];
        if (e == -1 || e == -3) continue;          /* pinned, refused: not stored */
        const int f = e >= 0;
        if (f != cur && w > run0) {                /* a run ends: its adds to the policy */
            t->free_head = free_head;
            t->ent_len = ent_len;
            t->nres += made;
            made = 0;
            if (add_run_end(t, mark + run0, w - run0, cur) < 0) return -1;
            run0 = w;
        }
        cur = f;
        if (!f) {                                  /* new: tadd_atf's steps at the end of its probe run */
            uint64_t j = fps[i] >> sh;
            while (slots[j].e >= 0) j = (j + 1) & mask;
            e = tadd_take(ent, &free_head, &ent_len);
            tadd_put(&ent[e], &slots[j], e, keys[i], 0, fps[i]);
            made++;
        } else {
            ent[e].flags &= (uint8_t)~F_OUT;
        }
        mark[w++] = e;
    }
    t->free_head = free_head;
    t->ent_len = ent_len;
    t->nres += made;
    return w > run0 && add_run_end(t, mark + run0, w - run0, cur) < 0 ? -1 : 1;
}

/* Tier.insert for a tier with no pins expected (pins handled anyway): keys (eviction order) are
 * stored unpinned; pushed keys (victims, then batch keys that did not fit) go to out; returns the
 * number pushed and sets *written; -1 on memory error. mark and fps (scratch: the keys' key_fp) must hold len
 * keys; fps_given: fps holds them already (the GPU victims', ops_evict; not read with gates, which make a batch of
 * their own); scratch (NULL: none) holds len entries for the tier's evictions (ops_evict). */
static Py_ssize_t tinsert(Tier *t, const uint64_t *keys, Py_ssize_t len, uint64_t *out, int32_t *mark,
                          uint32_t *fps, int fps_given, int32_t *scratch, Py_ssize_t *written) {
    Py_ssize_t nref = 0, nlost = 0, nwon = 0;
    const uint64_t *refused = NULL;
    if (t->gates) {                    /* Tier._admit: refused new blocks leave the batch (pushed out last) */
        Py_ssize_t len0 = len;
        if ((len = gates_filter(t, keys, len, &nref)) < 0) return -1;
        keys = t->gbuf;
        refused = t->gbuf + len0;
    }
    Py_ssize_t start = tcut(t, keys, len), nout = 0;
    Py_ssize_t free_ = t->capacity - t->nres - t->reserved;
    Py_ssize_t nfresh = 0;
    if (!fps_given || t->gates)
        for (Py_ssize_t i = start; i < len; i++) fps[i] = key_fp(keys[i]);
    for (Py_ssize_t i = start; i < len && i < start + PF_AHEAD; i++) __builtin_prefetch(&t->slots[fp_home(t, fps[i])], 0, 1);
    for (Py_ssize_t i = start; i < len; i++) {
        if (i + PF_AHEAD < len) __builtin_prefetch(&t->slots[fp_home(t, fps[i + PF_AHEAD])], 0, 1);
        uint64_t at;
        int32_t e = tfind_fp(t, keys[i], fps[i], &at);
        if (e < 0) { mark[i] = -2; nfresh++; }
        else if (t->ent[e].pin == 0) { mark[i] = e; pol_remove(t, e); }
        else mark[i] = -1;
    }
    if (nfresh && pol_expects(t)) {    /* Tier.insert: policy.expect(fresh) before the evictions */
        if (t->ops->expect_begin && t->ops->expect_begin(t) < 0) return -1;
        for (Py_ssize_t i = start; i < len; i++)
            if (mark[i] == -2 && t->ops->expect(t, keys[i]) < 0) return -1;
    }
    Py_ssize_t need = nfresh - free_;
    if (need > 0 && t->gates && gates_duels(t)) {    /* Tier._duel: marks the losers -3 */
        if ((nwon = tduel(t, keys + start, mark + start, len - start, need, out, &nlost)) < 0) return -1;
        nfresh -= nlost;
        need = nfresh - (t->capacity - t->nres - t->reserved);
    }
    nout = nwon;
    if (need > 0) {
        if (tevict(t, need, out + nwon, scratch) < 0) return -1;
        nout += need;
    }
    const int batched = nlost ? 0 : tadd_batch(t, keys, fps, mark, start, len, nfresh);
    if (batched < 0 || (!batched && tadd_runs(t, keys, fps, mark, start, len) < 0)) return -1;
    t->inserted += nfresh;
    if (t->nres > t->peak_res) t->peak_res = t->nres;
    if (t->nres + t->reserved > t->peak_used) t->peak_used = t->nres + t->reserved;
    memcpy(out + nout, keys, sizeof(uint64_t) * start);
    nout += start;
    if (nref) memcpy(out + nout, refused, sizeof(uint64_t) * nref);
    nout += nref;
    for (Py_ssize_t i = start; nlost && i < len; i++) if (mark[i] == -3) out[nout++] = keys[i];
    *written = nfresh;
    return nout;
}

/* the shared table's arrays and size, as its two tiers read them (after an add: it may have moved them) */
static void sh_sync(Hier *h) {
    const Tier *s = h->sh;
    for (int j = 0; j < 2; j++) {
        Tier *t = &h->t[j];
        t->ent = s->ent;
        t->ent_cap = s->ent_cap;
        t->ent_len = s->ent_len;
        t->slots = s->slots;
        t->mask = s->mask;
        t->bits = s->bits;
    }
}

/* room for n more blocks in the shared table: its slots and entries grown now, so that no add of a fill moves
 * them (the tiers' views of its arrays stay valid through the fill); 0 or -1 */
static int sh_reserve(Hier *h, Py_ssize_t n) {
    Tier *s = h->sh;
    int moved = 0;
    for (; !s->dmap && (uint64_t)(s->nres + n) << TIER_LOAD_SHIFT > s->mask + 1; moved = 1)   /* direct: no slots */
        if (grow_table(s) < 0) return -1;
    Py_ssize_t need = s->nres + n > s->ent_len ? s->nres + n : s->ent_len;   /* the free list's entries first */
    if (need > s->ent_cap) {
        if (grow_table_ents(s, need) < 0) return -1;
        moved = 1;
    }
    if (moved) sh_sync(h);
    return 0;
}

/* the shared table out of direct mode for good (a key at or above its limit is to be added): dmap_hash (its slots
 * sized for the blocks it holds or, when more, for those sh_open sized them for: Hier.sh_want; each entry's
 * fingerprint in aux, sh_enter's add), the tiers' views synced. 0 or -1 (no memory: still direct) */
static __attribute__((noinline)) int sh_hashed(Hier *h) {
    if (dmap_hash(h->sh, h->sh_want, 1) < 0) return -1;
    sh_sync(h);
    return 0;
}

/* before keys[0 .. n) are added to a shared table in direct mode: it stays direct when every key is below its limit
 * (dmap_below), else sh_hashed. 0 or -1 */
static int sh_mode(Hier *h, const uint64_t *keys, Py_ssize_t n) {
    return dmap_below(h->sh, keys, n) ? 0 : sh_hashed(h);
}

/* key k (fingerprint f) in the GPU tier g's own table: its entry, *added = 1 when it was not resident there (now it
 * is, pinned once), 0 when it was (unchanged); -1 on a memory error. (A table shared with the CPU tier: sh_fill.) */
static int32_t gpu_enter(Tier *g, uint64_t k, uint32_t f, int *added) {
    uint64_t at = 0;
    *added = 0;
    if (tadd_room(g) < 0) return -1;              /* room before the lookup: its free slot is then the add's */
    int32_t e = tfind_fp(g, k, f, &at);
    if (e >= 0) return e;
    if ((e = tadd_atf(g, k, 1, at, f)) < 0) return -1;
    *added = 1;
    return e;
}

/* sh_fill's step for a resident entry x (e) of the shared table: a CPU block enters the GPU tier pinned once (0), a
 * GPU block gets one pin more, out of the GPU tier's order at its first (1: shared) */
static inline __attribute__((always_inline)) int sh_pin(Tier *t, Entry *x, int32_t e) {
    if (!(x->flags & F_GPU)) {                    /* a CPU block: now in the GPU tier too */
        x->pin = 1;
        x->flags |= F_GPU;
        return 0;
    }
    if (x->pin == 0) lq_unlink(t, e);             /* pol_remove of the inline LRU order (sh_open: no policy) */
    x->pin++;
    return 1;
}

/* sh_fill's step for key k (fingerprint f = key_fp(k)): its probe (tfind_fp) and, absent, its add (tadd_atf's
 * two steps tadd_take and tadd_put: an entry from the free list, else past ent_len; no growth), pinned once in the
 * GPU tier, else sh_pin (*found + 1, *shared + its answer: the new entries are the keys not found, counted by the
 * caller once, no count on the common path); the table's arrays, free list and entry count given (the caller's
 * locals); returns the key's entry */
static inline __attribute__((always_inline)) int32_t sh_enter(Tier *t, Entry *ent, OaSlot *slots, uint64_t mask,
                                                              int sh, uint64_t k, uint32_t f, int32_t *free_head,
                                                              int32_t *ent_len, Py_ssize_t *found, Py_ssize_t *shared) {
    uint64_t j = f >> sh;
    for (;;) {                                    /* tfind_fp */
        const OaSlot sl = slots[j];
        if (sl.e < 0) break;
        if (sl.h == f && ent[sl.e].key == k) {
            *shared += sh_pin(t, &ent[sl.e], sl.e);
            (*found)++;
            return sl.e;
        }
        j = (j + 1) & mask;
    }
    const int32_t e = tadd_take(ent, free_head, ent_len);
    tadd_put(&ent[e], &slots[j], e, k, 1, f);
    ent[e].flags = F_GPU;
    ent[e].aux = f;                               /* its fingerprint, for its deletion (sh_home) */
    return e;
}

/* sh_fill's keys in a table in direct mode (Tier.dmap; sh_mode: every key below its limit, sh_reserve: the
 * entries' room made): key k's entry is dmap[k] - 1, no probe and no hash -- found, sh_pin (*found + 1, *shared +
 * its answer); absent, an entry taken as tadd_take takes it (the free list, else past ent_len: the same entries as
 * hashed) and put as tadd_put then sh_enter put it (aux not set: a fingerprint only a hashed table reads; sh_hashed
 * sets it), dmap[k] naming it. Key i + PF_AHEAD's dmap item prefetched (for writing: an add stores there) */
static void sh_fill_direct(Hier *h, const uint64_t *keys, Py_ssize_t n, int32_t *ents, Py_ssize_t *found,
                           Py_ssize_t *shared) {
    Tier *const t = &h->t[0], *const s = h->sh;
    Entry *const ent = s->ent;
    int32_t *const dmap = s->dmap;
    int32_t free_head = s->free_head, ent_len = s->ent_len;
    Py_ssize_t nf = 0, ns = 0;
    for (Py_ssize_t i = 0; i < PF_AHEAD && i < n; i++) __builtin_prefetch(&dmap[keys[i]], 1, 1);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + PF_AHEAD < n) __builtin_prefetch(&dmap[keys[i + PF_AHEAD]], 1, 1);
        const uint64_t k = keys[i];
        int32_t e = dmap[k] - 1;
        if (e >= 0) {
            ns += sh_pin(t, &ent[e], e);
            nf++;
        } else {
            e = tadd_take(ent, &free_head, &ent_len);
            Entry *const x = &ent[e];
            x->key = k;
            x->pin = 1;
            x->prev = x->next = -1;
            x->aux = -1;
            x->q = QNONE;
            x->flags = F_GPU;
            dmap[k] = e + 1;
        }
        ents[i] = e;
    }
    s->free_head = free_head;
    s->ent_len = t->ent_len = h->t[1].ent_len = ent_len;
    s->nres += n - nf;                            /* the new entries */
    *found = nf;
    *shared = ns;
}

/* tfill in a table shared by the GPU and CPU tiers, the rules of gpu_enter and tfill, in two loops: keys with
 * their entries known (a restore: the lookup's, no probe; ents and keys not read or written: keys may be NULL), else each key's probe, add and pin
 * (sh_enter; ents required) after the table's room is made once (sh_reserve); the table's arrays and its free
 * list, entry count and size in locals (a flag store, a byte, may alias any field: read through the Tier they were
 * read again after each key). A key's home slot is prefetched PF_AHEAD keys before (its fingerprint worked out
 * then, kept in a ring of FP_RING for its probe and add). Every key is added to the GPU tier or shared there
 * (pinned once more): added = n - shared. Returns the shared count */
static Py_ssize_t sh_fill(Hier *h, const uint64_t *keys, Py_ssize_t n, int32_t *ents, const int32_t *known) {
    Tier *t = &h->t[0], *s = h->sh;
    Py_ssize_t shared = 0, found = 0;             /* found: keys resident (in the CPU tier only, or shared) */
    if (known) {
        Entry *const ent = s->ent;
        for (Py_ssize_t i = 0; i < PF_AHEAD && i < n; i++) __builtin_prefetch(&ent[known[i]], 1, 1);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i + PF_AHEAD < n) __builtin_prefetch(&ent[known[i + PF_AHEAD]], 1, 1);
            shared += sh_pin(t, &ent[known[i]], known[i]);
        }
    } else if (s->dmap && (sh_mode(h, keys, n) < 0 || sh_reserve(h, n) < 0)) {
        return -1;
    } else if (s->dmap) {
        sh_fill_direct(h, keys, n, ents, &found, &shared);
    } else {
        if (sh_reserve(h, n) < 0) return -1;
        Entry *const ent = s->ent;                /* not moved below: sh_reserve made the room */
        OaSlot *const slots = s->slots;
        const uint64_t mask = s->mask;
        const int sh = 32 - s->bits;
        int32_t free_head = s->free_head, ent_len = s->ent_len;
        const Py_ssize_t ahead = n > PF_AHEAD ? n - PF_AHEAD : 0;   /* keys with a key PF_AHEAD on */
        uint32_t ring[FP_RING];                   /* key i's fingerprint at i & (FP_RING - 1): hashed once */
        /* fp_ring_prime's steps written out: calling it here cost 2 M instructions more at 10x (callgrind) */
        for (Py_ssize_t i = 0; i < PF_AHEAD && i < n; i++) {
            ring[i] = key_fp(keys[i]);
            __builtin_prefetch(&slots[ring[i] >> sh], 0, 1);
        }
        Py_ssize_t i = 0;
        for (; i < ahead; i++) {
            const uint32_t f2 = key_fp(keys[i + PF_AHEAD]);
            ring[(size_t)(i + PF_AHEAD) & (FP_RING - 1)] = f2;
            __builtin_prefetch(&slots[f2 >> sh], 0, 1);
            ents[i] = sh_enter(t, ent, slots, mask, sh, keys[i], ring[(size_t)i & (FP_RING - 1)], &free_head,
                               &ent_len, &found, &shared);
        }
        for (; i < n; i++)
            ents[i] = sh_enter(t, ent, slots, mask, sh, keys[i], ring[(size_t)i & (FP_RING - 1)], &free_head,
                               &ent_len, &found, &shared);
        s->free_head = free_head;
        s->ent_len = t->ent_len = h->t[1].ent_len = ent_len;
        s->nres += n - found;                     /* the new entries */
    }
    const Py_ssize_t added = n - shared;
    t->nres += added;
    t->reserved -= added;
    t->inserted += added;
    if (t->nres > t->peak_res) t->peak_res = t->nres;
    return shared;
}

/* own_fill's step for a key found resident (entry e): pinned once more, out of the policy at its first pin
 * (pol_remove, with the table's free list and entry count the caller keeps in locals written back around it) */
static inline void own_pin(Tier *t, int32_t e, int32_t *free_head, int32_t *ent_len) {
    Entry *x = &t->ent[e];
    if (x->pin == 0) {
        t->free_head = *free_head;
        t->ent_len = *ent_len;
        pol_remove(t, e);
        *free_head = t->free_head;
        *ent_len = t->ent_len;
    }
    x->pin++;
}

/* tfill in a GPU tier with a policy (ops) and no retain pool in a table of its own, when the n keys fit its slots
 * without growth (so the per-key adds, tadd_room then tfind_fp then tadd_atf, would grow none either and the slots
 * come out the same): each key's probe and, absent, its add (tadd_take, tadd_put: the free list in the same order)
 * with the table's arrays, free list and entry count in locals, its fingerprint worked out PF_AHEAD keys before
 * with its home slot prefetched (a ring of FP_RING, as sh_fill). Counts as tfill: *shared the keys found resident
 * (pinned once more), the others added pinned once. 1 done, 0 not taken (nothing changed), -1 */
static int own_fill(Tier *t, const uint64_t *keys, Py_ssize_t n, int32_t *ents, Py_ssize_t *shared) {
    if (!t->ops || t->ret || (uint64_t)(t->nres + n) << TIER_LOAD_SHIFT > t->mask + 1) return 0;
    if (grow_table_ents(t, t->nres + n > t->ent_len ? t->nres + n : t->ent_len) < 0) return -1;
    Entry *const ent = t->ent;                     /* not moved below: its room is made */
    OaSlot *const slots = t->slots;
    const uint64_t mask = t->mask;
    const int sh = 32 - t->bits;
    int32_t free_head = t->free_head, ent_len = t->ent_len;
    Py_ssize_t made = 0, found = 0;
    uint32_t ring[FP_RING];
    fp_ring_prime(ring, keys, n, slots, sh);
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint32_t f = fp_ring_take(ring, keys, i, n, slots, sh);
        const uint64_t k = keys[i];
        uint64_t j;
        int32_t e = fp_find(slots, ent, mask, sh, k, f, &j);
        if (e >= 0) {
            own_pin(t, e, &free_head, &ent_len);
            found++;
        } else {                                   /* tadd_atf at the end of its probe run */
            e = tadd_take(ent, &free_head, &ent_len);
            tadd_put(&ent[e], &slots[j], e, k, 1, f);
            made++;
        }
        if (ents) ents[i] = e;
    }
    t->free_head = free_head;
    t->ent_len = ent_len;
    t->nres += made;
    t->reserved -= made;
    t->inserted += made;
    if (t->nres > t->peak_res) t->peak_res = t->nres;
    *shared = found;
    return 1;
}

#include "_lruhier_polshare.h"   /* one table for two fifo / slru tiers: ps_open, ps_fill, ps_gpu_evict, ps_insert */

/* Tier.fill: one reserved slot per key becomes a resident block pinned once; returns shared count. ents (NULL:
 * not wanted; required in a shared table without known) gets each key's entry; known (NULL: none) gives each key's
 * entry in a shared table (a restore: the lookup's, no probe, ents not written, keys not read: may be NULL; a
 * table of the GPU tier's own is given none). */
static Py_ssize_t tfill(Hier *h, const uint64_t *keys, Py_ssize_t n, int32_t *ents, const int32_t *known) {
    if (h->sh && h->t[0].ops) return ps_fill(h, keys, n, ents, known);
    if (h->sh) return sh_fill(h, keys, n, ents, known);
    Tier *t = &h->t[0];
    Py_ssize_t shared = 0, added = 0;
    const int batched = own_fill(t, keys, n, ents, &shared);
    if (batched) return batched < 0 ? -1 : shared;
    uint32_t ring[FP_RING] = {0};
    fp_first(ring, keys, 0, n, t, NULL);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t f = ring[(size_t)i & (FP_RING - 1)];
        fp_ahead(ring, keys, i + PF_AHEAD, n, t, NULL);
        int in;
        int32_t e = gpu_enter(t, keys[i], f, &in);
        if (e < 0) return -1;
        if (in) {
            added++;
        } else {
            if (t->ent[e].pin == 0) pol_remove(t, e);
            t->ent[e].pin++;
            shared++;
        }
        if (ents) ents[i] = e;
    }
    t->reserved -= added;
    t->inserted += added;
    if (t->nres > t->peak_res) t->peak_res = t->nres;
    return shared;
}

/* Tier._overflow for the CPU tier c of a shared table: of the entries ents[0..len) (a batch in eviction order)
 * the first ones past the tier's unpinned room are pushed out (those in the tier leave it: evicted; the others
 * overflow), their entries freed when in no tier any more; returns how many (tcut's rule) */
static Py_ssize_t sh_cut(Hier *h, const int32_t *ents, Py_ssize_t len) {
    Tier *c = &h->t[1];
    Py_ssize_t room = c->capacity - c->nres - c->reserved + c->held;
    if (len <= room) return 0;
    Py_ssize_t cut = len - (room > 0 ? room : 0), gone = 0;
    for (Py_ssize_t i = 0; i < cut; i++) {
        if (c->ent[ents[i]].flags & F_CPU) {
            lq_unlink(c, ents[i]);
            c->ent[ents[i]].flags &= (uint8_t)~F_CPU;
            c->nres--;
            gone++;
        }
        sh_free(h->sh, ents + i, 1);
    }
    c->evicted += gone;
    c->overflow += cut - gone;
    return cut;
}

/* Tier.insert into the CPU tier of a shared table (no gates, LRU): keys (eviction order) with their entries in the
 * table (ents; NULL: looked up, each key has one: a GPU block written through) are stored; pushed keys (victims,
 * then batch keys that did not fit) are counted, not written (the CPU tier is the last of two: its callers drop
 * them), entries left in no tier are freed. The same steps as tinsert, where
 * a key's entry is known: a demoted GPU victim enters the CPU tier by a flag, no lookup and no add. Returns the
 * number pushed, *written the keys stored; -1 on memory error */
static Py_ssize_t sh_insert(Hier *h, const uint64_t *keys, const int32_t *ents, Py_ssize_t len, Py_ssize_t *written) {
    Tier *c = &h->t[1];
    const int32_t *e = ents ? ents : h->mark;
    for (Py_ssize_t i = 0; !ents && i < len; i++) h->mark[i] = tab_find(c, keys[i]);
    Py_ssize_t start = sh_cut(h, e, len), nfresh = 0;
    Py_ssize_t free_ = c->capacity - c->nres - c->reserved;
    for (Py_ssize_t i = start; i < len; i++) {
        if (c->ent[e[i]].flags & F_CPU) lq_unlink(c, e[i]);     /* resident again: out of the order until re-added */
        else nfresh++;
    }
    Py_ssize_t need = nfresh - free_;
    if (need > 0) {
        if (tevict(c, need, NULL, NULL) < 0) return -1;       /* those in no tier leave the table */
    } else need = 0;
    if (lq_append_n(c, e + start, len - start, F_CPU) < 0) return -1;
    c->nres += nfresh;
    c->inserted += nfresh;
    if (c->nres > c->peak_res) c->peak_res = c->nres;
    if (c->nres + c->reserved > c->peak_used) c->peak_used = c->nres + c->reserved;
    *written = nfresh;
    return need + start;
}

/* the insert of n keys into lower tier j (ents: their entries in a shared table, NULL: not known), pushed keys to
 * out: tinsert (fps_given: h->fps holds the keys' key_fp; h->vent its scratch, ensure_b for 2 n + 1), or sh_insert
 * in a shared table (the last tier: its pushed keys counted, out not written) */
static Py_ssize_t lower_insert(Hier *h, int j, const uint64_t *keys, const int32_t *ents, Py_ssize_t n, uint64_t *out,
                               int fps_given, Py_ssize_t *written) {
    if (h->sh && h->t[j].ops) return ps_insert(h, ents, n, written);
    if (h->sh) return sh_insert(h, keys, ents, n, written);
    return tinsert(&h->t[j], keys, n, out, h->mark, h->fps, fps_given, h->vent, written);
}

/* demote GPU victims (in h->buf_a, n of them; in a shared table their entries in h->vent, buf_a not written) down
 * the tiers (write-back) */
static int cascade(Hier *h, Py_ssize_t n) {
    if (h->write_through) return 0;
    const int fps_given = h->fps_n == n;          /* gpu_evict kept the victims' fingerprints in h->fps */
    h->fps_n = 0;
    for (int j = 1; j < h->ntiers; j++) {
        if (ensure_b(h, 2 * n + 1) < 0) return -1;
        Py_ssize_t w;
        Py_ssize_t m = lower_insert(h, j, h->buf_a, h->vent, n, h->buf_b, j == 1 && fps_given, &w);
        if (m < 0) return -1;
        h->written[j] += w;
        uint64_t *x = h->buf_a; h->buf_a = h->buf_b; h->buf_b = x;
        n = m;
        if (!n) return 0;
    }
    h->dropped += n;
    return 0;
}

static int to_u64(PyObject *seq, Py_ssize_t m, uint64_t *out) {
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t v = PyLong_AsUnsignedLongLong(items[i]);
        if (v == (uint64_t)-1 && PyErr_Occurred()) return -1;
        out[i] = v;
    }
    return 0;
}

/* One request's placement, worked out step by step by hier_start (names as Hierarchy.start's). */
typedef struct {
    Py_ssize_t n;           /* cacheable blocks, cut before a repeated block hash */
    Py_ssize_t cap;         /* max hit blocks (<= n) */
    Py_ssize_t extra;       /* extra blocks held while running */
    Py_ssize_t lead;        /* prefix hit blocks: leading blocks resident in some tier */
    Py_ssize_t hits;        /* hit blocks */
    Py_ssize_t nused;       /* GPU-resident lead blocks (pinned) */
    Py_ssize_t evictable;   /* of those, unpinned before this request */
    Py_ssize_t n_restore;   /* restores kept: the first n_restore restore positions (chain order) */
    Py_ssize_t nnew;        /* computed blocks that get a slot */
    Py_ssize_t budget;      /* GPU slots reserved */
    Py_ssize_t first_low;   /* the first lead block held by a lower tier only (lead if none) */
    int truncated;
    int touched;            /* the kept restores' lower copies already touched (start_reserve: sh_touch_first) */
} Plan;

static inline __attribute__((always_inline)) int start_head(Hier *h, Plan *p, Py_ssize_t n, Py_ssize_t cap,
                                                            Py_ssize_t m);

/* arguments -> h->k = h->req (the cacheable head) and p->n, p->cap, p->extra; *wait set; -1 on error */
static int start_args(Hier *h, PyObject *const *args, Py_ssize_t nargs, Plan *p, int *wait) {
    if (nargs < 3 || nargs > 5) {
        PyErr_SetString(PyExc_TypeError, "start(block_hashes, cacheable_blocks, max_hit_blocks, extra_blocks=0, "
                        "wait_if_full=False)");
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    Py_ssize_t cap = PyLong_AsSsize_t(args[2]);
    p->extra = nargs > 3 ? PyLong_AsSsize_t(args[3]) : 0;
    if (PyErr_Occurred()) return -1;
    *wait = nargs > 4 ? PyObject_IsTrue(args[4]) : 0;
    if (*wait < 0) return -1;
    PyObject *seq = PySequence_Fast(args[0], "block_hashes must be a sequence");
    if (!seq) return -1;
    Py_ssize_t L = PySequence_Fast_GET_SIZE(seq);
    Py_ssize_t m = n < L ? n : L;
    if (m < 0) m = 0;
    if (ensure_k(h, m + 1) < 0 || to_u64(seq, m, h->k) < 0) { Py_DECREF(seq); return -1; }
    Py_DECREF(seq);
    h->req = h->k;
    return start_head(h, p, n, cap, m);
}

/* h->req holds the first m keys of the request: cut n (and cap) at a repeated key; p->n, p->cap set. Inlined into
 * each start (with first_repeat's rising-keys test): a call less per request (callgrind, 10x: start_head and its
 * call were about 40 instructions a request) */
static inline __attribute__((always_inline)) int start_head(Hier *h, Plan *p, Py_ssize_t n, Py_ssize_t cap,
                                                            Py_ssize_t m) {
    if (n > 1) {
        Py_ssize_t r = first_repeat(h, h->req, m);
        if (r < 0) return -1;
        if (r < m || m < n) { n = r; if (cap > n) cap = n; }
    } else if (n > m) n = m;
    p->n = n < 0 ? 0 : n;
    p->cap = cap;
    return 0;
}

/* sh_lookup's probe of key i (fingerprint in ring, key i + PF_AHEAD's worked out and its home slot prefetched):
 * its entry in the shared table, or -1 */
static inline __attribute__((always_inline)) int32_t sh_probe(const uint64_t *k, Py_ssize_t i, Py_ssize_t n,
                                                              uint32_t *ring, const Entry *ent, const OaSlot *slots,
                                                              uint64_t mask, int sh) {
    const uint32_t f = fp_ring_take(ring, k, i, n, slots, sh);
    uint64_t j;
    return fp_find(slots, ent, mask, sh, k[i], f, &j);
}

/* sh_probe in a table in direct mode (Tier.dmap, limit lim): key i's entry or -1, key i + PF_AHEAD's dmap item
 * prefetched (the address made as an integer, as ent_prefetch: a key past the limit prefetches no item of it) */
static inline __attribute__((always_inline)) int32_t sh_dprobe(const uint64_t *k, Py_ssize_t i, Py_ssize_t n,
                                                               const int32_t *dmap, uint64_t lim) {
    if (i + PF_AHEAD < n)
        __builtin_prefetch((const void *)((uintptr_t)dmap + (uintptr_t)k[i + PF_AHEAD] * sizeof(int32_t)), 0, 1);
    return k[i] < lim ? dmap[k[i]] - 1 : -1;
}

/* sh_lookup's pin of a GPU lead block x (pin_lead's step, made in the lookup: the entry is in hand): one pin more
 * and, at its first, its item in the GPU tier's order q goes stale (lq_unlink's steps; the tier's held count is
 * moved by the caller once the request is admitted: start_plan) and its old position goes to *pos (sh_unpin's undo
 * when the request waits). Returns 1 when the block had no pin (an evictable lead block), else 0 */
static inline __attribute__((always_inline)) int sh_pin_lead(Entry *x, int32_t *q, int32_t *pos) {
    const int32_t pin = x->pin;
    x->pin = pin + 1;
    if (pin) return 0;
    const int32_t at = x->prev;
    q[at] = -1;
    x->prev = -1;
    *pos = at;
    return 1;
}

/* the shared table's LRU path (sh_lookup's pins, sh_unpin, sh_fill): two plain LRU tiers share the table (sh_open),
 * not two fifo / slru tiers (ps_open: their GPU order is the policy's, pinned through it -- ps_pin_lead) */
static inline int lru_shared(const Hier *h) { return h->sh && !h->t[0].ops; }

/* start_lookup in a table shared by the GPU and CPU tiers: one probe per key serves both tiers; the table's arrays,
 * its size and the plan's counts in locals (a store to where / eidx / lidx, int32_t, may alias the Tier's int fields:
 * read through the Tier they were read again after each key). Two loops: the GPU blocks before the first block of
 * the CPU tier only (most hits: no count of them to keep), then the rest from there (the same steps per key, one
 * probe each). Key i's entry goes to ae[i] for every lead key (the admission's own hints, PcsAdm.ents, in chain
 * order: start_admission keeps them in place or compacts them; a CPU block's entry is also its GPU entry once
 * restored, and goes to lidx[i] too, and the CPU blocks' entries to h->eidx in chain order: the first n_restore are the
 * kept restores', start_restore's). Each GPU lead block is pinned as it is found (sh_pin_lead: pin_lead's steps,
 * its old queue position to lidx[i]); the GPU tier's held count is not moved here: start_plan moves it once the
 * request is admitted, sh_unpin undoes the pins when it waits. pins 0 (a compile-time constant: ps_lookup, two
 * fifo / slru tiers): no pin and no queue touched, the unpinned blocks of the lead counted (start_admission pins them
 * through the policy: ps_pin_lead) */
static inline __attribute__((always_inline)) void sh_lookup_as(Hier *h, Plan *p, int32_t *const ae, const int pins,
                                                              const int direct) {
    const uint64_t *const k = h->req;
    const Tier *const g = &h->t[0];
    Entry *const ent = g->ent;
    int32_t *const q = pins ? g->lq : NULL;                        /* the GPU tier's order (positions in prev) */
    const OaSlot *const slots = g->slots;
    const uint64_t mask = g->mask;
    const int sh = 32 - g->bits;
    const int32_t *const dmap = direct ? h->sh->dmap : NULL;      /* direct mode: sh_dprobe, no slot, no hash */
    const uint64_t lim = direct ? h->sh->dlim : 0;
    int32_t *const where = h->where, *const lidx = h->lidx, *const low = h->eidx;
    const Py_ssize_t n = p->n, cap = p->cap;
    Py_ssize_t nlow = 0;
    Py_ssize_t lead = n, first_low = n, evictable = 0, n_restore = 0, i = 0;
    uint32_t ring[FP_RING];
    for (Py_ssize_t j = 0; j < PF_AHEAD && j < n; j++) {          /* fp_first */
        if (direct) {
            __builtin_prefetch((const void *)((uintptr_t)dmap + (uintptr_t)k[j] * sizeof(int32_t)), 0, 1);
            continue;
        }
        uint32_t f = key_fp(k[j]);
        ring[j] = f;
        __builtin_prefetch(&slots[f >> sh], 0, 1);
    }
    int32_t e = -1;
    for (; i < n; i++) {                                           /* the GPU lead before any CPU block */
        e = direct ? sh_dprobe(k, i, n, dmap, lim) : sh_probe(k, i, n, ring, ent, slots, mask, sh);
        if (e < 0 || !(ent[e].flags & F_GPU)) break;
        ae[i] = e;                                                 /* (where[i] = 0 not written: start_lookup) */
        evictable += pins ? sh_pin_lead(&ent[e], q, lidx + i) : !ent[e].pin;
    }
    Py_ssize_t nused = i;
    if (i < n && e < 0) lead = i;                                  /* not resident: the lead ends */
    else if (i < n) {                                              /* key i (entry e) is a CPU block: the rest */
        first_low = i;
        for (;;) {
            const uint8_t in = e >= 0 ? ent[e].flags : 0;         /* the tiers holding it */
            if (in & F_GPU) {
                where[i] = 0;
                ae[i] = e;
                nused++;
                evictable += pins ? sh_pin_lead(&ent[e], q, lidx + i) : !ent[e].pin;
            } else if (!(in & F_CPU)) {
                lead = i;
                break;
            } else {
                where[i] = 1;
                lidx[i] = ae[i] = e;                               /* (a restore's GPU entry: its entry) */
                low[nlow++] = e;                                   /* the CPU blocks in chain order */
                n_restore += i < cap;                              /* a restore of the hits (i < min(cap, lead)) */
            }
            if (++i == n) break;
            e = direct ? sh_dprobe(k, i, n, dmap, lim) : sh_probe(k, i, n, ring, ent, slots, mask, sh);
        }
    }
    p->lead = lead;
    p->first_low = first_low;
    p->nused = nused;
    p->evictable = evictable;
    p->n_restore = n_restore;
}

/* sh_lookup_as for two plain LRU tiers (the lead pinned; the table direct, Tier.dmap, or hashed: out of line, the
 * lookup of each mode compiled on its own) and for two fifo / slru tiers (none pinned; direct or hashed, each out of
 * line: the LRU lookup compiles as without them) */
static __attribute__((noinline)) void sh_dlookup(Hier *h, Plan *p, int32_t *ae) { sh_lookup_as(h, p, ae, 1, 1); }
static void sh_lookup(Hier *h, Plan *p, int32_t *ae) {
    if (h->sh->dmap) sh_dlookup(h, p, ae);
    else sh_lookup_as(h, p, ae, 1, 0);
}
static __attribute__((noinline)) void ps_hlookup(Hier *h, Plan *p, int32_t *ae) { sh_lookup_as(h, p, ae, 0, 0); }
static __attribute__((noinline)) void ps_dlookup(Hier *h, Plan *p, int32_t *ae) { sh_lookup_as(h, p, ae, 0, 1); }
static void ps_lookup(Hier *h, Plan *p, int32_t *ae) {
    if (h->sh->dmap) ps_dlookup(h, p, ae);
    else ps_hlookup(h, p, ae);
}

/* start_lookup with one table per tier: the GPU tier's, then each lower tier's in turn (one fingerprint per key) */
static void own_lookup(Hier *h, Plan *p) {
    const uint64_t *k = h->req;
    Tier *g = &h->t[0];
    p->lead = p->first_low = p->n;
    p->nused = p->evictable = p->n_restore = 0;
    Tier *c = h->ntiers > 1 ? &h->t[1] : NULL;   /* the next tier's slots too: a GPU miss looks there */
    uint32_t ring[FP_RING];
    fp_first(ring, k, 0, p->n, g, c);
    for (Py_ssize_t i = 0; i < p->n; i++) {
        uint32_t f = ring[(size_t)i & (FP_RING - 1)];
        fp_ahead(ring, k, i + PF_AHEAD, p->n, g, c);
        uint64_t at;
        int32_t e = tfind_fp(g, k[i], f, &at);
        if (e >= 0) {
            h->where[i] = 0;
            h->eidx[p->nused++] = e;
            if (!g->ent[e].pin) p->evictable++;
            continue;
        }
        int j = 1;
        for (; j < h->ntiers; j++) if ((e = tfind_fp(&h->t[j], k[i], f, &at)) >= 0) break;
        if (j == h->ntiers) { p->lead = i; break; }
        h->where[i] = j;
        h->lidx[i] = e;
        if (p->first_low > i) p->first_low = i;
        p->n_restore += i < p->cap;                               /* a restore of the hits (i < min(cap, lead)) */
    }
}

/* the prefix rule: h->where[i] = highest tier holding block i, the GPU entries of the lead (one table per tier:
 * h->eidx, compacted; a shared table: ae[i], every lead key's entry, with the GPU lead pinned when both tiers are
 * plain LRU -- sh_lookup; not pinned yet for fifo / slru -- ps_lookup), h->lidx[i]
 * = block i's entry in tier where[i] when that is a lower tier; the plan's lead, hits, restores and computed blocks.
 * Blocks before p->first_low are GPU blocks (where 0), which sh_lookup does not write: every reader of where[]
 * starts at first_low or takes 0 before it */
static void start_lookup(Hier *h, Plan *p, int32_t *ae) {
    if (lru_shared(h)) sh_lookup(h, p, ae);
    else if (h->sh) ps_lookup(h, p, ae);
    else own_lookup(h, p);
    if (p->first_low > p->lead) p->first_low = p->lead;
    p->hits = p->cap < p->lead ? p->cap : p->lead;
    if (p->hits < 0) p->hits = 0;
    p->nnew = (p->lead - p->nused - p->n_restore) + (p->n - p->lead);
}

/* sh_lookup's pins undone (the request waits: the hierarchy as before the start): each GPU lead block (key i < lead
 * before first_low or with where[i] 0, its entry ae[i]) one pin less and, back at 0, its item in the GPU tier's
 * order live again at its old position (lidx[i]: nothing touched the order since the lookup) */
static __attribute__((noinline)) void sh_unpin(Hier *h, const Plan *p, const int32_t *ae) {
    Tier *g = &h->t[0];
    for (Py_ssize_t i = 0; i < p->lead; i++) {
        if (i >= p->first_low && h->where[i]) continue;
        const int32_t e = ae[i];
        Entry *x = &g->ent[e];
        if (!--x->pin) {
            x->prev = h->lidx[i];
            g->lq[x->prev] = e;
        }
    }
}

/* GPU slots the request gets, and truncation (restores first, hits end at the first restore cut);
 * returns 1 when it must wait (wait_if_full), else 0 */
static int start_budget(Hier *h, Plan *p, int wait) {
    Tier *g = &h->t[0];
    Py_ssize_t need = p->n_restore + p->nnew + p->extra;
    Py_ssize_t avail = g->capacity - g->nres - g->reserved + g->held - p->evictable;
    p->budget = need;
    if (need > avail) {
        Py_ssize_t limit = g->capacity - p->nused;
        if (wait && avail < (need < limit ? need : limit)) return 1;
        p->budget = avail;
    }
    p->truncated = p->budget < need;
    if (!p->truncated) return 0;
    if (p->n_restore > p->budget) {
        Py_ssize_t seen = 0;
        for (Py_ssize_t i = p->first_low; i < p->hits; i++) {   /* (where 0 before first_low: start_lookup) */
            if (!h->where[i]) continue;
            if (seen == p->budget) { p->hits = i; break; }
            seen++;
        }
        p->n_restore = p->budget;
        p->nnew = 0;
    } else if (p->nnew > p->budget - p->n_restore) {
        p->nnew = p->budget - p->n_restore;
    }
    return 0;
}

/* an admission's first buffers hold this many keys (12 B each): a request of the Mooncake trace has 23 blocks on
 * average, so from 16 most admissions of the step loop's pool grew two or three times (callgrind, 10x: 1,471
 * growths a call, each two reallocs) */
#define ADM_MIN_KEYS 64

/* adm_reserve's growth of a's buffers (raw memory): one block, counts (2 * ntiers, ccap) then keys (kcap) then ents
 * (kcap), so a growth is one allocation and one free, and a pooled admission's first start one allocation, not three
 * (callgrind, 1x Mooncake: 853 growths a call, each two reallocs). The first `keep` keys and hints are copied over
 * (a start's reserve keeps none: its buffers hold nothing of it yet; extend keeps the admission's keys), and the
 * counts (at most 2 * 64). 0 or -1 (a unchanged) */
static int adm_grow(PcsAdm *a, Py_ssize_t m, int ntiers, Py_ssize_t keep) {
    Py_ssize_t c = a->kcap, cc = 2 * (Py_ssize_t)ntiers > a->ccap ? 2 * (Py_ssize_t)ntiers : a->ccap;
    if (m > c) {
        c = c ? c : ADM_MIN_KEYS;
        while (c < m) c *= 2;
    }
    char *b = PyMem_RawMalloc((sizeof(Py_ssize_t) * (size_t)cc) + (sizeof(uint64_t) + sizeof(int32_t)) * (size_t)c);
    if (!b) { PyErr_NoMemory(); return -1; }
    uint64_t *k = (uint64_t *)(b + sizeof(Py_ssize_t) * (size_t)cc);
    int32_t *x = (int32_t *)(k + c);
    if (keep > 0) {
        memcpy(k, a->keys, sizeof(uint64_t) * (size_t)keep);
        memcpy(x, a->ents, sizeof(int32_t) * (size_t)keep);
    }
    if (a->counts) memcpy(b, a->counts, sizeof(Py_ssize_t) * (size_t)a->ccap);   /* (an extend's: its start's) */
    PyMem_RawFree(a->counts);
    a->counts = (Py_ssize_t *)b;
    a->ccap = cc;
    a->keys = k;
    a->ents = x;
    a->kcap = c;
    return 0;
}

/* room for m keys and the per-tier counts of ntiers tiers in a (its buffers kept from an earlier admission when
 * large enough: no call then), its first `keep` keys and hints kept; 0 or -1 */
static inline int adm_reserve(PcsAdm *a, Py_ssize_t m, int ntiers, Py_ssize_t keep) {
    return m <= a->kcap && 2 * (Py_ssize_t)ntiers <= a->ccap ? 0 : adm_grow(a, m, ntiers, keep);
}

/* the n GPU entries eidx[0 .. n) pinned once more each, those that had no pin taken out of the policy (pol_remove);
 * an inline LRU order (no policy, no retain) with the entries, queue and position offset in locals and held moved
 * once (lq_unlink's steps: through the Tier, its fields were read again after each store) */
static void pin_lead(Tier *g, const int32_t *eidx, Py_ssize_t n) {
    if (g->ops || g->ret) {
        for (Py_ssize_t i = 0; i < n; i++) {
            Entry *x = &g->ent[eidx[i]];
            if (!x->pin) pol_remove(g, eidx[i]);
            x->pin++;
        }
        return;
    }
    Entry *const ent = g->ent;
    int32_t *const q = g->lq;
    const size_t off = g->lqoff;
    Py_ssize_t out = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Entry *x = &ent[eidx[i]];
        if (!x->pin++) {                                  /* lq_unlink */
            int32_t *pos = (int32_t *)((char *)x + off);
            q[*pos] = -1;
            *pos = -1;
            out++;
        }
    }
    g->held -= out;
}

/* pin_lead in a table shared by two fifo / slru tiers (its lookup pins nothing: ps_lookup): each GPU lead block --
 * key i < lead before first_low or with where[i] 0, its entry ae[i] -- in chain order, as pin_lead of the
 * compacted GPU entries */
static void ps_pin_lead(Hier *h, const Plan *p, const int32_t *ae) {
    Tier *g = &h->t[0];
    pin_lead(g, ae, p->first_low);
    for (Py_ssize_t i = p->first_low; i < p->lead; i++)
        if (!h->where[i]) pin_lead(g, ae + i, 1);
}

/* pin the GPU lead blocks (two plain LRU tiers' shared table: its lookup has, sh_lookup; the GPU tier's held count
 * moved here); the admission a holds the pinned hashes (GPU lead + kept restores) then the computed hashes, chain
 * order, with their hints (PcsAdm.ents: the GPU entries of the lead -- a shared table's lookup wrote those in place
 * --, -1 for the computed keys). A lead
 * with no lower-tier block (most requests) is the request's first keys: one copy. 0 or -1 (no memory: nothing
 * pinned) */
static int start_admission(Hier *h, const Plan *p, PcsAdm *a) {
    Tier *g = &h->t[0];
    const uint64_t *k = h->req;
    /* (a shared table's lookup wrote the hints: kept; start_plan's reserve made the room, so no growth here then) */
    if (adm_reserve(a, p->nused + p->n_restore + p->nnew + 1, h->ntiers, h->sh ? p->n : 0) < 0) return -1;
    if (!h->sh) pin_lead(g, h->eidx, p->nused);
    else if (g->ops) ps_pin_lead(h, p, a->ents);  /* two fifo / slru tiers (not lru_shared) */
    else g->held -= p->evictable;   /* two LRU tiers: sh_lookup pinned them; their items out of the order now */
    a->ntiers = h->ntiers;          /* (its per-tier counts: start_restore writes every one) */
    uint64_t *used = a->keys, *newk = a->keys + p->nused + p->n_restore;
    int32_t *ue = a->ents;          /* GPU entries: known for the lead (h->eidx, chain order), later for the rest */
    const int32_t *re = h->sh ? h->lidx : NULL;   /* a shared table: a restore's GPU entry is its entry there */
    Py_ssize_t nu = p->first_low, nn = 0, seen = 0, ng = p->first_low;
    if (!h->sh) memcpy(ue, h->eidx, sizeof(int32_t) * (size_t)nu);   /* (a shared table's lookup wrote them there) */
    /* every lead block pinned (no lower-tier block in the lead; in a shared table, whose lookup wrote every lead
     * key's entry in chain order, every lower-tier block of the lead restored): the pinned keys then the computed
     * ones are the first lead + nn keys, one copy */
    if (nu == p->lead || (h->sh && p->nused + p->n_restore == p->lead)) {
        nu = p->lead;
        nn = p->n - p->lead < p->nnew ? p->n - p->lead : p->nnew;
        memcpy(used, k, sizeof(uint64_t) * (size_t)(nu + nn));
        memset(ue + nu, 0xff, sizeof(int32_t) * (size_t)nn);  /* -1: their GPU entries not known yet */
        a->nused = nu;
        a->nnew = nn;
        return 0;
    }
    memcpy(used, k, sizeof(uint64_t) * (size_t)nu);             /* the GPU blocks before the first lower-tier one */
    const int32_t *ge = h->sh ? ue : NULL;   /* a shared table: key i's entry at ue[i] (compacted in place: nu <= i) */
    for (Py_ssize_t i = nu; i < p->lead; i++) {
        if (!h->where[i]) { ue[nu] = ge ? ge[i] : h->eidx[ng++]; used[nu++] = k[i]; }
        else if (i < p->cap) { if (seen < p->n_restore) { ue[nu] = re ? re[i] : -1; used[nu++] = k[i]; seen++; } }
        else if (nn < p->nnew) newk[nn++] = k[i];
    }
    Py_ssize_t tail = p->n - p->lead < p->nnew - nn ? p->n - p->lead : p->nnew - nn;   /* the blocks past the lead */
    if (tail > 0) {
        memcpy(newk + nn, k + p->lead, sizeof(uint64_t) * (size_t)tail);
        nn += tail;
    }
    memset(ue + nu, 0xff, sizeof(int32_t) * (size_t)nn);      /* -1: their GPU entries not known yet */
    a->nused = nu;
    a->nnew = nn;
    return 0;
}

/* Tier.reserve's policy.expect(incoming): the kept restores tier by tier (chain order in each), then the
 * computed keys; 0 or -1 */
static int start_expect(Hier *h, const Plan *p, const PcsAdm *a) {
    Tier *g = &h->t[0];
    if (!pol_expects(g) || !(p->n_restore + a->nnew)) return 0;
    if (g->ops->expect_begin && g->ops->expect_begin(g) < 0) return -1;
    for (int j = 1; j < h->ntiers && p->n_restore; j++) {
        Py_ssize_t seen = 0;
        for (Py_ssize_t i = 0; i < p->hits && seen < p->n_restore; i++) {
            if (!h->where[i]) continue;
            seen++;
            if (h->where[i] == j && g->ops->expect(g, h->req[i]) < 0) return -1;
        }
    }
    for (Py_ssize_t i = 0; i < a->nnew; i++)
        if (g->ops->expect(g, a->keys[a->nused + i]) < 0) return -1;
    return 0;
}

/* write-back on a shared table: the n GPU victims (n > 0) demoted in their eviction walk (lq_demote) when they fit
 * the CPU tier's unpinned room (else sh_cut pushes some out: gpu_evict's two steps), then the CPU tier's evictions
 * for them (sh_insert's, from its front: the victims are appended behind its live items, at least as many as those
 * evictions), its counters and the cascade's drops. The same victims, orders and counts as the GPU eviction then
 * the cascade (sh_insert) when nothing touches the CPU tier between the two (gpu_evict's `now`). 1 done, 0 not
 * done (nothing changed), -1 */
static int sh_demote(Hier *h, Py_ssize_t n) {
    Tier *g = &h->t[0], *c = &h->t[1];
    const Py_ssize_t free_ = c->capacity - c->nres - c->reserved;
    if (n > free_ + c->held || g->lqoff != offsetof(Entry, prev) || c->lqoff != offsetof(Entry, next)) return 0;
    if (lq_room(c, n) < 0) return -1;
    const Py_ssize_t fresh = lq_demote(g, c, n);
    g->nres -= n;                                  /* tevict's counts of the GPU tier */
    g->evicted += n;
    const Py_ssize_t need = fresh - free_;
    if (need > 0) {                                /* tevict's steps for a shared table's tier (no retain: sh_open) */
        lq_evict(c, need, NULL, NULL);             /* those in no tier leave the table */
        c->nres -= need;
        c->evicted += need;
        h->dropped += need;
    }
    c->nres += fresh;
    c->inserted += fresh;
    if (c->nres > c->peak_res) c->peak_res = c->nres;
    if (c->nres + c->reserved > c->peak_used) c->peak_used = c->nres + c->reserved;
    h->written[1] += fresh;
    return 1;
}

/* before the GPU victims of a request with kept restores are chosen (two plain LRU tiers' shared table, write-back,
 * n > 0 victims): the restores' CPU copies touched now (start_restore's touches, tail first: h->eidx holds the kept
 * restores' entries in chain order, sh_lookup) so that the victims may be demoted in their eviction walk (sh_demote)
 * as for a request without restores. The CPU tier's order comes out the same: its touches precede the cascade's
 * inserts in both, and the GPU eviction and the fill do not touch it. Made only when the CPU tier's evictions for
 * the victims (at most n - free of them) stop short of the touched copies (the last n_restore live items of its
 * order): the two steps fill the restores into the GPU tier before the cascade, so a touched copy evicted from the
 * CPU tier stays in the table; here it is filled after. p->touched set when made (start_restore then skips its
 * touches). 1: touched (the demotion may follow), 0: nothing done (the two steps follow), -1 (no memory) */
static __attribute__((noinline)) int sh_touch_first(Hier *h, Plan *p, Py_ssize_t n) {
    Tier *c = &h->t[1];
    const Py_ssize_t free_ = c->capacity - c->nres - c->reserved;
    if (n - free_ > c->held - p->n_restore || c->lqoff != offsetof(Entry, next)) return 0;
    const int32_t *const re = h->eidx;
    const Py_ssize_t nr = p->n_restore;
    if (lq_room(c, nr) < 0) return -1;                     /* (a compaction moves the positions: made first) */
    Entry *const ent = c->ent;
    int32_t *const q = c->lq;
    int32_t pos = (int32_t)c->lqn;
    for (Py_ssize_t i = nr - 1; i >= 0; i--) {     /* pol_touch of the inline LRU order (sh_open: no policy): */
        int32_t *const at = &ent[re[i]].next;      /* lq_unlink then lq_append, the room made once, held unchanged */
        q[*at] = -1;                               /* (the CPU tier's positions in Entry.next: sh_open) */
        *at = pos;
        q[pos++] = re[i];
    }
    c->lqn = pos;
    p->touched = 1;
    return 1;
}

/* gpu_evict under write-back for a GPU tier with a policy and no retain pool (so a table of its own, sh_open): tevict's
 * steps (ops_evict, the evicted count), the victims' key_fp kept in h->fps for the cascade's first insert (fps_n).
 * Out of line: the LRU tiers' gpu_evict compiles as without it. 0 or -1 */
static __attribute__((noinline)) int gpu_evict_ops(Hier *h, Py_ssize_t n) {
    Tier *g = &h->t[0];
    if (h->sh) return ps_gpu_evict(h, n);
    if (ensure_b(h, n) < 0 || ops_evict(g, n, h->buf_a, h->vent, h->fps) < 0) return -1;
    g->evicted += n;
    h->fps_n = n;
    return 0;
}

/* n GPU victims (n > 0) to h->buf_a (in a shared table their entries to h->vent instead, kept for the cascade under
 * write-back, freed now when in no tier under write-through). `now`: nothing touches a lower tier before the
 * cascade, so under write-back a shared table may demote them in the same walk (sh_demote). 1: demoted too (no
 * cascade follows), 0 (the cascade follows), -1 */
static int gpu_evict(Hier *h, Py_ssize_t n, int now) {
    if (h->t[0].ops && !h->t[0].ret && !h->write_through) return gpu_evict_ops(h, n);
    if (now && h->sh && !h->write_through) {
        int r = sh_demote(h, n);
        if (r) return r;
    }
    if (ensure_b(h, n) < 0 || tevict(&h->t[0], n, h->buf_a, h->vent) < 0) return -1;
    if (h->sh && h->write_through) sh_free(h->sh, h->vent, n);
    return 0;
}

/* reserve the budget in the GPU tier; the victims go to h->buf_a (*demoted: already demoted, gpu_evict, when no
 * restore touches the CPU tier before the cascade, or its touches were made first: sh_touch_first); returns their
 * number or -1 */
static Py_ssize_t start_reserve(Hier *h, Plan *p, const PcsAdm *a, int *demoted) {
    Tier *g = &h->t[0];
    if (start_expect(h, p, a) < 0) return -1;
    Py_ssize_t nvict = p->budget - (g->capacity - g->nres - g->reserved);
    p->touched = 0;
    if (nvict > 0) {
        int now = !p->n_restore;
        if (!now && lru_shared(h) && !h->write_through && (now = sh_touch_first(h, p, nvict)) < 0) return -1;
        if ((*demoted = gpu_evict(h, nvict, now)) < 0) return -1;
    } else nvict = 0;
    g->reserved += p->budget;
    if (g->nres + g->reserved > g->peak_used) g->peak_used = g->nres + g->reserved;
    return nvict;
}

/* per lower tier j: fill the GPU slots of its kept restores, touch the lower copies (tail first; p->touched: made
 * already, sh_touch_first); sets the Admission's per-tier counts; returns the slots filled or -1 */
static Py_ssize_t start_restore(Hier *h, const Plan *p, PcsAdm *a, Py_ssize_t nvict) {
    int T = h->ntiers;
    Py_ssize_t filled = 0;
    if (T <= 2) {                       /* hit blocks per tier: with two tiers the lower tier's are the kept restores */
        a->counts[0] = p->hits - p->n_restore;        /* (every where 1 before hits is one: start_lookup, start_budget) */
        if (T == 2) a->counts[1] = p->n_restore;
    } else {
        memset(a->counts, 0, sizeof(Py_ssize_t) * (size_t)T);
        a->counts[0] = p->first_low < p->hits ? p->first_low : p->hits;   /* where 0 before first_low (start_lookup) */
        for (Py_ssize_t i = a->counts[0]; i < p->hits; i++) a->counts[h->where[i]]++;
    }
    for (int j = 0; j < T; j++) {
        Py_ssize_t cnt = 0;
        if (j && p->n_restore) {
            if (ensure_b(h, nvict + p->n_restore) < 0) return -1;
            uint64_t *rk = h->buf_b;     /* buf_a holds the victims */
            int32_t *re = h->mark;       /* their entries in tier j (the lookup's: no change of tier j since) */
            if (h->sh) {                 /* (two tiers) the lookup listed the CPU blocks' entries in chain order, */
                re = h->eidx;            /* the kept restores first (sh_lookup); the fill of known entries reads no */
                cnt = p->n_restore;      /* key (sh_fill, ps_fill) */
                rk = NULL;
            } else {
                Py_ssize_t s2 = 0;
                for (Py_ssize_t i = p->first_low; i < p->hits && s2 < p->n_restore; i++) {   /* GPU blocks before */
                    if (!h->where[i]) continue;
                    s2++;
                    if (h->where[i] == j) { re[cnt] = h->lidx[i]; rk[cnt++] = h->req[i]; }
                }
            }
            if (cnt) {
                Py_ssize_t sh = tfill(h, rk, cnt, NULL, h->sh ? re : NULL);
                if (sh < 0) return -1;
                filled += cnt - sh;
                Tier *tj = &h->t[j];
                int any = 0;
                for (Py_ssize_t i = p->touched ? -1 : cnt - 1; i >= 0; i--) {   /* (touched: sh_touch_first) */
                    int32_t e = re[i];
                    if (!tier_pin(tj, e)) {
                        if (pol_touch(tj, e) < 0) return -1;
                        any = 1;
                    }
                }
                if (any) pol_touch_end(tj);
            }
        }
        a->counts[T + j] = cnt;
    }
    return filled;
}

/* Hierarchy.start: lookup, budget, pin, reserve, restore, demote the victims (write-back) */
static int start_plan(Hier *h, Plan *p, int wait, PcsAdm *a);

/* cascade called out of line from start_empty (flatten stops at a noinline callee): the victims' way down is rare
 * in the no-cache run, and inlined its code (tinsert, tduel) only grows start_empty */
static __attribute__((noinline)) int empty_cascade(Hier *h, Py_ssize_t n) { return cascade(h, n); }

/* start_plan for an empty chain (n = 0: a request that looks up and caches no block, as each request of the
 * no-cache baseline run, holds GPU slots only): start_lookup's plan for n = 0 (no lead, hit, restore or computed
 * block) set directly -- no lookup, gate (it would count nothing), pin or restore -- then the same budget
 * (start_budget: wait_if_full, truncation) and the same reservation (start_reserve: evictions, write-back) as any
 * request, for `extra` slots; docs/semantics.md §5. flatten: start_budget and start_reserve inlined here, so each
 * keeps one call site for gcc's inliner and start_plan compiles as without this function (callgrind, 10x trace:
 * start_reserve out of line cost start_plan ~55 instructions an admission, forced inline ~26). 1 admitted, 0 it
 * waits (a unchanged), -1 error */
static __attribute__((flatten)) int start_empty(Hier *h, Py_ssize_t extra, int wait, PcsAdm *a) {
    Plan p = {.extra = extra};         /* n, cap, lead, hits, nused, evictable, n_restore, nnew, first_low: 0 */
    h->clock = h->admitted;            /* pcs.cache.policies.context.clocked: the k-th admission is request k */
    if (start_budget(h, &p, wait)) return 0;
    const int T = h->ntiers;
    if (adm_reserve(a, 1, T, 0) < 0) return -1;
    a->ntiers = T;
    for (int j = 0; j < T; j++) a->counts[j] = a->counts[T + j] = 0;   /* no hit or restore in any tier */
    a->nused = a->nnew = 0;
    h->admitted++;
    int demoted = 0;
    Py_ssize_t nvict = start_reserve(h, &p, a, &demoted);
    if (nvict < 0 || (nvict && !demoted && empty_cascade(h, nvict) < 0)) return -1;
    a->prefix_hit_blocks = a->hit_blocks = a->gpu_lead_blocks = 0;
    a->last_hit_tier = -1;
    a->truncated = (char)p.truncated;
    a->reserved_blocks = p.budget;     /* live unchanged: no hint to trust (an extend's keys are its fill's) */
    return 1;
}

/* an Admission from start_plan's answer: the admission (rc 1), None (0: it waits) or NULL */
static PyObject *adm_result(Adm *a, int rc) {
    if (rc > 0) return (PyObject *)a;
    Py_DECREF(a);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *hier_start(Hier *h, PyObject *const *args, Py_ssize_t nargs) {
    Plan p;
    int wait;
    if (start_args(h, args, nargs, &p, &wait) < 0) return NULL;
    Adm *a = adm_new();
    return a ? adm_result(a, p.n ? start_plan(h, &p, wait, &a->c) : start_empty(h, p.extra, wait, &a->c)) : NULL;
}

static int c_nogil(PyObject *hh);

/* h->req: the m keys at keys of a C caller, read in place (start only reads them); copied to h->k (ensure_k before)
 * when a tier hosts a Python policy, whose code could change the caller's buffer during the start */
static void req_keys(Hier *h, const uint64_t *keys, Py_ssize_t m) {
    if (h->sh || c_nogil((PyObject *)h)) { h->req = keys; return; }   /* a shared table hosts no policy (sh_open) */
    memcpy(h->k, keys, sizeof(uint64_t) * (size_t)m);
    h->req = h->k;
}

/* start() on the first len keys at keys into a (the C API's start, _lruhier_api.h): 1 admitted, 0 it waits, -1 */
static int c_start(PyObject *hh, const uint64_t *keys, Py_ssize_t len, Py_ssize_t n, Py_ssize_t cap,
                   Py_ssize_t extra, int wait, PcsAdm *a) {
    Hier *h = (Hier *)hh;
    Plan p;
    p.extra = extra;
    Py_ssize_t m = n < len ? n : len;
    if (m <= 0) return start_empty(h, extra, wait, a);     /* start_head's n = 0 without a key read */
    if (ensure_k(h, m + 1) < 0) return -1;
    req_keys(h, keys, m);
    if (start_head(h, &p, n, cap, m) < 0) return -1;
    return start_plan(h, &p, wait, a);
}

/* start_ids(ids, n, cap, extra_blocks, wait_if_full): start() with the keys as a buffer of uint64 (bytes) instead
 * of a sequence of ints -- the compiled step loop's call (pcs/engine/_stepsched.c), no int object per key */
static PyObject *hier_start_ids(Hier *h, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "start_ids(ids, cacheable_blocks, max_hit_blocks, extra_blocks, wait_if_full)");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[1]), cap = PyLong_AsSsize_t(args[2]), extra = PyLong_AsSsize_t(args[3]);
    int wait = PyObject_IsTrue(args[4]);
    if (PyErr_Occurred() || wait < 0) return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(args[0], &b, PyBUF_SIMPLE) < 0) return NULL;
    Adm *a = adm_new();
    int rc = a ? c_start((PyObject *)h, b.buf, b.len / 8, n, cap, extra, wait, &a->c) : -1;
    PyBuffer_Release(&b);
    return a ? adm_result(a, rc) : NULL;
}

/* the rest of Hierarchy.start once h->req and p->n, cap, extra are set (the plan completed in place), into a: 1
 * admitted, 0 it waits (the hierarchy and a's fields unchanged; a's buffers may have been grown and written), -1
 * error */
static int start_plan(Hier *h, Plan *p, int wait, PcsAdm *a) {
    h->clock = h->admitted;            /* pcs.cache.policies.context.clocked: the k-th admission is request k */
    /* a shared table's lookup writes the entries of the lead into a's hints (two LRU tiers': pinned, sh_lookup): a's
     * buffers sized first for every key (more than start_admission asks for: it then finds them large enough) */
    if (h->sh && adm_reserve(a, p->n + 1, 2, 0) < 0) return -1;
    start_lookup(h, p, a->ents);
    if (start_budget(h, p, wait)) {
        if (lru_shared(h)) sh_unpin(h, p, a->ents);
        return 0;
    }
    for (int j = 0; !h->sh && j < h->ntiers; j++)   /* admission policies count uses and hits (§8; sh_open: none) */
        if (h->t[j].gates && gates_observe(&h->t[j], h->req, p->n, p->hits) < 0) return -1;
    if (start_admission(h, p, a) < 0) return -1;
    h->admitted++;
    int demoted = 0;
    Py_ssize_t nvict = start_reserve(h, p, a, &demoted);
    Py_ssize_t filled = nvict < 0 ? -1 : start_restore(h, p, a, nvict);
    if (filled < 0 || (nvict && !demoted && cascade(h, nvict) < 0)) return -1;
    a->prefix_hit_blocks = p->lead;
    a->hit_blocks = p->hits;
    a->last_hit_tier = !p->hits ? -1 : p->hits > p->first_low ? h->where[p->hits - 1] : 0;   /* (start_lookup) */
    a->gpu_lead_blocks = p->first_low < p->hits ? p->first_low : p->hits;   /* GPU hits before the first restore */
    a->truncated = (char)p->truncated;
    a->reserved_blocks = p->budget - filled;
    /* its hints name its pinned entries until its finish (hint_ok); in a shared table every pinned key's hint is
     * known from the lookup (a restore's entry is its GPU entry), the computed keys' from their fill */
    a->live = h->sh && !a->nnew ? ADM_KNOWN : 1;
    return 1;
}

/* write-through: the nn keys at k copied to every lower tier (tail first) */
static int write_down(Hier *h, const uint64_t *k, Py_ssize_t nn) {
    if (!h->write_through || h->ntiers < 2) return 0;
    if (ensure_b(h, 2 * nn + 1) < 0) return -1;
    uint64_t *down = h->buf_a;
    for (Py_ssize_t i = 0; i < nn; i++) down[i] = k[nn - 1 - i];
    for (int j = 1; j < h->ntiers; j++) {
        Py_ssize_t w;
        Py_ssize_t m = lower_insert(h, j, down, NULL, nn, h->buf_b, 0, &w);
        if (m < 0) return -1;
        h->written[j] += w;
        if (j == h->ntiers - 1) h->dropped += m;
    }
    return 0;
}

/* Hierarchy.prefill_done(adm): 0 or -1 */
static int c_prefill_done(PyObject *hh, PcsAdm *a) {
    Hier *h = (Hier *)hh;
    Py_ssize_t nn = a->nnew;
    if (!nn) return 0;
    const uint64_t *nk = a->keys + a->nused;
    Py_ssize_t sh = tfill(h, nk, nn, a->ents + a->nused, NULL);
    if (sh < 0) return -1;
    a->reserved_blocks -= nn - sh;
    if (h->sh && a->live == 1) a->live = ADM_KNOWN;   /* sh_fill wrote every computed key's entry (start_plan) */
    return write_down(h, nk, nn);
}

static PyObject *hier_prefill_done(Hier *h, PyObject *arg) {
    if (!PyObject_TypeCheck(arg, &AdmType)) { PyErr_SetString(PyExc_TypeError, "need an Admission"); return NULL; }
    if (c_prefill_done((PyObject *)h, &((Adm *)arg)->c) < 0) return NULL;
    Py_RETURN_NONE;
}

/* Tier.unpin(keys[::-1], reused) of the n pinned keys whose entries are ents: one pin less each, tail first;
 * blocks reaching 0 go to the policy as one add(keys, reused) batch; 0 or -1 */
static int unpin(Tier *g, const int32_t *ents, Py_ssize_t n, int reused) {
    Py_ssize_t added = 0;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        int32_t e = ents[i];
        if (!--g->ent[e].pin) {
            if (pol_add(g, e, reused) < 0) return -1;
            added++;
        }
    }
    if (added) pol_add_end(g, reused);
    return 0;
}

/* whether the first n keys of a are pinned in the GPU tier g, each a->ents set to its entry; else a KeyError
 * naming the first that is not. A hint a->ents[i] is taken when its entry holds the key pinned: an entry with
 * a pin is resident (only unpinned entries are deleted), and a resident key has one entry, so the answer is
 * tfind's; other keys are looked up. */
static int pinned_ents(Tier *g, PcsAdm *a, Py_ssize_t n) {
    const uint32_t len = (uint32_t)g->ent_len;             /* (uint32_t)e < len: a hint within the entries */
    for (Py_ssize_t i = 0; i < PF_AHEAD && i < n; i++)      /* the first hints' entries (as fp_first) */
        if ((uint32_t)a->ents[i] < len) __builtin_prefetch(&g->ent[a->ents[i]], 1, 1);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + PF_AHEAD < n && (uint32_t)a->ents[i + PF_AHEAD] < len)
            __builtin_prefetch(&g->ent[a->ents[i + PF_AHEAD]], 1, 1);
        int32_t e = a->ents[i];
        if ((uint32_t)e >= len || g->ent[e].key != a->keys[i] || g->ent[e].pin <= 0) {
            e = tab_find(g, a->keys[i]);
            if (e < 0 || g->ent[e].pin <= 0) {
                PyErr_Format(PyExc_KeyError, "block %llu is not pinned in the GPU tier",
                             (unsigned long long)a->keys[i]);
                return -1;
            }
            a->ents[i] = e;
        }
    }
    return 0;
}

/* a prefetch of hint h's entry, h any int32 (a hint not yet known is -1): a prefetch of an address outside the
 * array does not fault, so no bounds test (the address made as an integer: no pointer out of the array) */
static inline void hint_prefetch(const Entry *ent, int32_t h) {
    __builtin_prefetch((const void *)((uintptr_t)ent + (uintptr_t)(intptr_t)h * sizeof(Entry)), 1, 1);
}

/* pinned_ent's lookup: the entry of a->keys[i], pinned in the GPU tier g (the hint a->ents[i] set to it), or -1 */
static int32_t pinned_find(const Tier *g, PcsAdm *a, Py_ssize_t i) {
    int32_t e = tab_find(g, a->keys[i]);
    if (e < 0 || g->ent[e].pin <= 0) return -1;
    return a->ents[i] = e;
}

/* whether hint e (any int32) of a->keys[i] is taken: it names an entry pinned that holds the key (the rule of
 * pinned_ents); with `trust` (a live admission, PcsAdm.live, released by its own finish) only that it names an entry
 * pinned -- a hint set while the admission is live names the key's entry, which cannot leave the table while the
 * admission pins it, so the key compare of every key would only repeat what its start and fill found */
static inline __attribute__((always_inline)) int hint_ok(const Entry *ent, uint32_t len, const PcsAdm *a,
                                                         Py_ssize_t i, int32_t e, const int trust) {
    return (uint32_t)e < len && (trust || ent[e].key == a->keys[i]) && ent[e].pin > 0;
}

/* entry of a->keys[i] in the GPU tier g (entries ent, n of them), pinned: the hint a->ents[i] when hint_ok takes it,
 * else looked up (the hint set); -1 when the key is not pinned there */
static inline __attribute__((always_inline)) int32_t pinned_ent(const Tier *g, const Entry *ent, uint32_t len,
                                                                PcsAdm *a, Py_ssize_t i, const int trust) {
    int32_t e = a->ents[i];
    if (hint_ok(ent, len, a, i, e, trust)) return e;
    return pinned_find(g, a, i);
}

/* Hierarchy.finish's release in one pass over the admission's keys, tail first (its computed keys reversed, just
 * computed, then its pinned keys reversed, reused: docs/semantics.md §6), each key's check (pinned_ents' rule) and
 * its pin dropped together; a key not pinned gives back the pins dropped before it (no change on a bad call: the
 * policy has not been called yet) and raises KeyError. The blocks reaching 0 (scratch h->eidx, in that order) then
 * go to the policy as Tier.unpin's two add batches (computed, then pinned); an inline LRU order takes them in one
 * lq_append_n (it ignores the batches and `reused`). 0 or -1 */
/* finish_pass's walk over keys hi - 1 down to lo: each key's entry checked (pinned_ent) and its pin dropped, the
 * entries reaching 0 to zero[*nz ..); the hint PF_AHEAD keys on prefetched. -1, or the index of a key not pinned */
static inline __attribute__((always_inline)) Py_ssize_t release_keys(const Tier *g, Entry *ent, uint32_t len,
                                                                     PcsAdm *a, Py_ssize_t hi, Py_ssize_t lo,
                                                                     int32_t *zero, Py_ssize_t *nz, const int trust) {
    const int32_t *hint = a->ents;
    Py_ssize_t z = *nz;
    for (Py_ssize_t i = hi - 1; i >= lo; i--) {
        int32_t ahead = i >= PF_AHEAD ? hint[i - PF_AHEAD] : -1;
        if ((uint32_t)ahead < len) __builtin_prefetch(&ent[ahead], 1, 1);
        int32_t e = pinned_ent(g, ent, len, a, i, trust);
        if (e < 0) { *nz = z; return i; }
        if (!--ent[e].pin) zero[z++] = e;
    }
    *nz = z;
    return -1;
}

/* finish_lru's step for key i: its entry checked (pinned_ent), its pin dropped and, at 0 pins, the entry put at
 * q[*p], the queue's next position (its position kept in Entry.prev: the GPU tier's Tier.lqoff); -1 when the key is
 * not pinned (nothing changed) */
static inline __attribute__((always_inline)) int lru_release(const Tier *g, Entry *ent, uint32_t len, PcsAdm *a,
                                                             Py_ssize_t i, int32_t *q, Py_ssize_t *p, const int trust) {
    int32_t e = a->ents[i];                             /* pinned_ent, its lookup apart (no sign test of a hint taken) */
    if (!hint_ok(ent, len, a, i, e, trust) && (e = pinned_find(g, a, i)) < 0) return -1;
    Entry *x = &ent[e];
    const int32_t pin = x->pin - 1;                     /* > 0 before: pinned_ent */
    x->pin = pin;
    if (!pin) {
        x->prev = (int32_t)*p;                          /* *lq_pos(g, e) */
        q[(*p)++] = e;
    }
    return 0;
}

/* finish_pass for a GPU tier with the inline LRU order (no policy, no retain) when the queue has room for every key
 * past its end: each block reaching 0 pins takes the queue's next item in the pass itself (lq_append_n's writes,
 * in the same order: tail first), no list of them and no second pass; the queue's end and held move only once every
 * key is checked. A key not pinned gives back the pins dropped before it, and the blocks that had reached 0 leave
 * the queue again (their position -1; the items past the end are not the queue's: lq_evict may read them ahead,
 * and they name entries of the table). The tier keeps its queue positions in Entry.prev (Tier.lqoff: every tier but
 * a shared table's CPU tier), the queue's next position is one counter. Returns 0, -1 (KeyError set), or 1: no
 * room (or not such a tier), nothing done (finish_pass) */
/* finish_lru's pass over keys n - 1 down to 0 (hint_ok's `trust` a constant: two loops compiled); the queue's next
 * position to *pp; -1, or the index of a key not pinned */
static inline __attribute__((always_inline)) Py_ssize_t lru_pass(const Tier *g, Entry *ent, uint32_t len, PcsAdm *a,
                                                                 Py_ssize_t n, int32_t *q, Py_ssize_t *pp,
                                                                 const int trust) {
    const int32_t *const hint = a->ents;
    Py_ssize_t p = *pp, i = n - 1;
    for (Py_ssize_t k = n - 1; k >= n - PF_AHEAD && k >= 0; k--)   /* the first hints' entries (as fp_first) */
        hint_prefetch(ent, hint[k]);
    for (; i >= PF_AHEAD; i--) {                       /* the read-ahead PF_AHEAD keys on, then the last keys without */
        hint_prefetch(ent, hint[i - PF_AHEAD]);
        if (lru_release(g, ent, len, a, i, q, &p, trust) < 0) return i;
    }
    for (; i >= 0; i--)
        if (lru_release(g, ent, len, a, i, q, &p, trust) < 0) return i;
    *pp = p;
    return -1;
}

/* lru_pass of an admission whose every hint is known (PcsAdm.live == ADM_KNOWN): hint i is key i's entry, pinned by
 * this admission (it cannot leave the table while pinned), so no check and no lookup -- each key's step is its pin
 * dropped and, at 0, the entry put at q[p]; returns the queue's next position */
static Py_ssize_t known_pass(Entry *ent, const int32_t *hint, Py_ssize_t n, int32_t *q, Py_ssize_t p) {
    Py_ssize_t i = n - 1;
    for (Py_ssize_t k = n - 1; k >= n - PF_AHEAD && k >= 0; k--) hint_prefetch(ent, hint[k]);
    for (; i >= PF_AHEAD; i--) {                       /* the read-ahead PF_AHEAD keys on, then the last keys without */
        hint_prefetch(ent, hint[i - PF_AHEAD]);
        const int32_t e = hint[i];
        if (!--ent[e].pin) { ent[e].prev = (int32_t)p; q[p++] = e; }
    }
    for (; i >= 0; i--) {
        const int32_t e = hint[i];
        if (!--ent[e].pin) { ent[e].prev = (int32_t)p; q[p++] = e; }
    }
    return p;
}

static int finish_lru(Tier *g, PcsAdm *a, Py_ssize_t n) {
    if (g->lqn + n > g->lqcap || g->lqoff != offsetof(Entry, prev)) return 1;
    Entry *const ent = g->ent;                         /* not moved: no add below */
    const uint32_t len = (uint32_t)g->ent_len;
    int32_t *const q = g->lq;
    const Py_ssize_t lqn = g->lqn;
    Py_ssize_t p = lqn, i = -1;
    if (a->live == ADM_KNOWN) p = known_pass(ent, a->ents, n, q, p);
    else i = a->live ? lru_pass(g, ent, len, a, n, q, &p, 1) : lru_pass(g, ent, len, a, n, q, &p, 0);
    if (i >= 0) goto bad;
    g->lqn = p;
    g->held += p - lqn;
    g->reserved -= a->reserved_blocks;
    a->reserved_blocks = 0;
    a->live = 0;
    return 0;
bad:
    for (Py_ssize_t j = i + 1; j < n; j++)             /* ascending: an entry's first give-back undoes its append */
        if (!ent[a->ents[j]].pin++) ent[a->ents[j]].prev = -1;
    PyErr_Format(PyExc_KeyError, "block %llu is not pinned in the GPU tier", (unsigned long long)a->keys[i]);
    return -1;
}

/* finish_pass's adds for a GPU tier whose policy has the batch add (PolOps.add_run) and no retain pool: the nz
 * entries at zero (the first nc computed, the rest reused) as Tier.unpin's two add batches, each one add_run_end
 * after inner_add's F_OUT cleared on the batch's entries: the same policy calls as one pol_add per block then its
 * add_end per batch. 0 or -1 */
static int finish_runs(Tier *g, const int32_t *zero, Py_ssize_t nz, Py_ssize_t nc) {
    Entry *const ent = g->ent;
    for (Py_ssize_t i = 0; i < nc; i++) ent[zero[i]].flags &= (uint8_t)~F_OUT;
    if (nc && add_run_end(g, zero, nc, 0) < 0) return -1;
    for (Py_ssize_t i = nc; i < nz; i++) ent[zero[i]].flags &= (uint8_t)~F_OUT;
    return nz > nc ? add_run_end(g, zero + nc, nz - nc, 1) : 0;
}

static int finish_pass(Hier *h, PcsAdm *a) {
    Tier *g = &h->t[0];
    const Py_ssize_t n = a->nused + a->nnew;
    if (!g->ops && !g->ret) {
        int rc = finish_lru(g, a, n);
        if (rc <= 0) return rc;
    }
    if (ensure_k(h, n + 1) < 0) return -1;
    int32_t *zero = h->eidx;
    Py_ssize_t nz = 0, nc;                            /* zero[0 .. nc): the computed keys' */
    Entry *ent = g->ent;                               /* not moved: no add below */
    const uint32_t len = (uint32_t)g->ent_len;
    const int32_t *hint = a->ents;
    for (Py_ssize_t i = n - 1; i >= n - PF_AHEAD && i >= 0; i--)   /* the first hints' entries (as fp_first) */
        if ((uint32_t)hint[i] < len) __builtin_prefetch(&ent[hint[i]], 1, 1);
    const int trust = a->live;                         /* (a runtime test here: policies' tiers, or no queue room) */
    Py_ssize_t bad = release_keys(g, ent, len, a, n, a->nused, zero, &nz, trust);     /* the computed keys */
    nc = nz;
    if (bad < 0) bad = release_keys(g, ent, len, a, a->nused, 0, zero, &nz, trust);  /* then the pinned keys */
    if (bad >= 0) {
        for (Py_ssize_t j = bad + 1; j < n; j++) ent[a->ents[j]].pin++;
        PyErr_Format(PyExc_KeyError, "block %llu is not pinned in the GPU tier", (unsigned long long)a->keys[bad]);
        return -1;
    }
    if (!g->ops && !g->ret) {
        if (lq_append_n(g, zero, nz, 0) < 0) return -1;
    } else if (!g->ret && g->ops->add_run) {
        if (finish_runs(g, zero, nz, nc) < 0) return -1;
    } else {
        for (Py_ssize_t i = 0; i < nz; i++) {
            if (i == nc && nc) pol_add_end(g, 0);
            if (pol_add(g, zero[i], i >= nc) < 0) return -1;
        }
        if (nz) pol_add_end(g, nz > nc);
    }
    g->reserved -= a->reserved_blocks;
    a->reserved_blocks = 0;
    a->live = 0;
    return 0;
}

/* Hierarchy.finish(adm): 0 or -1 */
static int c_finish(PyObject *hh, PcsAdm *a) {
    Hier *h = (Hier *)hh;
    Tier *g = &h->t[0];
    if (a->reserved_blocks < 0 || a->reserved_blocks > g->reserved) {
        if (pinned_ents(g, a, a->nused + a->nnew) < 0) return -1;   /* a key not pinned is named first */
        PyErr_SetString(PyExc_AssertionError, "release of more slots than reserved");
        return -1;
    }
    if (!(a->nused + a->nnew)) {       /* no key held (an empty chain's admission): only its slots given back */
        g->reserved -= a->reserved_blocks;
        a->reserved_blocks = 0;        /* live unchanged: no pin dropped, so no hint goes stale */
        return 0;
    }
    return finish_pass(h, a);
}

/* Hierarchy.finish(adm) from Python: every hint checked in full (live cleared first: an Admission of another
 * hierarchy may be passed here, its hints naming entries of that one) */
static PyObject *hier_finish(Hier *h, PyObject *arg) {
    if (!PyObject_TypeCheck(arg, &AdmType)) { PyErr_SetString(PyExc_TypeError, "need an Admission"); return NULL; }
    ((Adm *)arg)->c.live = 0;
    if (c_finish((PyObject *)h, &((Adm *)arg)->c) < 0) return NULL;
    Py_RETURN_NONE;
}

#include "../_buf8.h"   /* get_buf8: run_sequential's buffer arguments */

/* one sequential request: start, prefill_done, finish; its hit blocks, or -1 on error */
static Py_ssize_t seq_one(Hier *h, const uint64_t *keys, Py_ssize_t len, Py_ssize_t n, Py_ssize_t cap) {
    Plan p;
    Py_ssize_t m = n < len ? n : len;
    if (m < 0) m = 0;
    if (ensure_k(h, m + 1) < 0) return -1;
    req_keys(h, keys, m);
    p.extra = 0;
    if (start_head(h, &p, n, cap, m) < 0) return -1;
    PcsAdm *a = &h->seq_adm;          /* its buffers serve every request of the run */
    if (start_plan(h, &p, 0, a) < 0) return -1;
    /* finish without its slot check (this admission was just made, its slots reserved); its keys are pinned, and
     * finish_pass finds the entries of the restored ones in a table of the GPU tier's own (the others come from the
     * lookup and the fill; in a shared table the restored ones' too: start_admission) */
    if (c_prefill_done((PyObject *)h, a) < 0) return -1;
    return finish_pass(h, a) < 0 ? -1 : a->hit_blocks;
}

/* run_sequential's requests over its buffers b[0 .. 5) (hashes, offsets, cacheable, max_hit, out; R requests, H
 * hashes): out[i] = request i's hit blocks; 0, or -1 with an exception set (the GIL taken for it: pcs/_nogil.h) */
static int seq_run(Hier *h, const Py_buffer *b, Py_ssize_t R, Py_ssize_t H) {
    const uint64_t *keys = b[0].buf;
    const int64_t *off = b[1].buf, *n = b[2].buf, *cap = b[3].buf;
    int64_t *out = b[4].buf;
    for (Py_ssize_t i = 0; i < R; i++) {
        if (off[i] < 0 || off[i] > off[i + 1] || off[i + 1] > H) {
            PyErr_SetString(PyExc_ValueError, "offsets must rise within the hashes");
            return -1;
        }
        Py_ssize_t hits = seq_one(h, keys + off[i], (Py_ssize_t)(off[i + 1] - off[i]), n[i], cap[i]);
        if (hits < 0) return -1;
        out[i] = hits;
    }
    return 0;
}

/* Hierarchy.run_sequential(hashes, offsets, cacheable, max_hit, out): requests one after another, as the
 * sequential event loop calls start / prefill_done / finish; out[i] = request i's hit blocks. The GIL is released
 * over the requests when no tier hosts a Python policy (c_nogil: seq_one then runs only the calls the compiled step
 * loop makes without the GIL -- start_head, start_plan, c_prefill_done, finish_pass -- on this hierarchy's own
 * memory, raw memory, and its errors take the GIL: pcs/_nogil.h), so another thread runs Python meanwhile
 * (pcs/engine/seqbase.py runs a replay's sequential baseline beside its step loop). The caller must not touch this
 * hierarchy or the buffers from another thread until the call returns. */
static PyObject *hier_run_sequential(Hier *h, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "run_sequential(hashes, offsets, cacheable, max_hit, out)");
        return NULL;
    }
    static const char *what[] = {"hashes", "offsets", "cacheable", "max_hit", "out"};
    Py_buffer b[5];
    int got = 0, rc = -1;
    for (; got < 5; got++) if (get_buf8(args[got], &b[got], got == 4, what[got]) < 0) break;
    Py_ssize_t R = got == 5 ? b[2].len / 8 : 0, H = got == 5 ? b[0].len / 8 : 0;
    if (got == 5 && (b[1].len / 8 != R + 1 || b[3].len / 8 != R || b[4].len / 8 != R))
        PyErr_SetString(PyExc_ValueError, "need len(offsets) = R + 1 and R entries in cacheable, max_hit, out");
    else if (got == 5) {
        PyThreadState *ts = c_nogil((PyObject *)h) ? PyEval_SaveThread() : NULL;
        rc = seq_run(h, b, R, H);
        if (ts) PyEval_RestoreThread(ts);
    }
    while (got-- > 0) PyBuffer_Release(&b[got]);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* Hierarchy.grow(adm, n >= 0): n more reserved GPU slots for a running request, evicting (and demoting) as start
 * does; 1, or 0 and no change when fewer than n are obtainable; -1 on error */
static int c_grow(PyObject *hh, PcsAdm *adm, Py_ssize_t n) {
    Hier *h = (Hier *)hh;
    Tier *g = &h->t[0];
    Py_ssize_t free_now = g->capacity - g->nres - g->reserved;
    if (n > free_now + g->held) return 0;
    Py_ssize_t nvict = n - free_now;
    int demoted = 0;
    if (nvict > 0) {
        if ((demoted = gpu_evict(h, nvict, 1)) < 0) return -1;
    } else nvict = 0;
    g->reserved += n;
    if (g->nres + g->reserved > g->peak_used) g->peak_used = g->nres + g->reserved;
    if (nvict && !demoted && cascade(h, nvict) < 0) return -1;
    adm->reserved_blocks += n;
    return 1;
}

/* Hierarchy.grow(adm, n): the Python method (False: fewer than n obtainable, no change) */
static PyObject *hier_grow(Hier *h, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyObject_TypeCheck(args[0], &AdmType)) {
        PyErr_SetString(PyExc_TypeError, "grow(admission, n)");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0) { PyErr_SetString(PyExc_ValueError, "grow: n must be >= 0"); return NULL; }
    int ok = c_grow((PyObject *)h, &((Adm *)args[0])->c, n);
    return ok < 0 ? NULL : PyBool_FromLong(ok);
}

/* Hierarchy.abort(adm): release a request preempted before prefill_done: drop the pins of its pinned keys tail
 * first, give back every reserved slot; its computed keys are not cached */
static int c_abort(PyObject *hh, PcsAdm *a) {
    Hier *h = (Hier *)hh;
    Tier *g = &h->t[0];
    if (pinned_ents(g, a, a->nused) < 0) return -1;
    if (a->reserved_blocks < 0 || a->reserved_blocks > g->reserved) {
        PyErr_SetString(PyExc_AssertionError, "release of more slots than reserved");
        return -1;
    }
    if (unpin(g, a->ents, a->nused, 1) < 0) return -1;
    g->reserved -= a->reserved_blocks;
    a->reserved_blocks = 0;
    a->nnew = 0;
    a->live = 0;
    return 0;
}

static PyObject *hier_abort(Hier *h, PyObject *arg) {
    if (!PyObject_TypeCheck(arg, &AdmType)) { PyErr_SetString(PyExc_TypeError, "need an Admission"); return NULL; }
    if (c_abort((PyObject *)h, &((Adm *)arg)->c) < 0) return NULL;
    Py_RETURN_NONE;
}

/* Hierarchy.extend(adm, keys): blocks filled while decoding take reserved slots of the request (a resident key is
 * pinned instead) and join its computed keys (released first by finish); 0 or -1 */
static int c_extend(PyObject *hh, PcsAdm *a, const uint64_t *k, Py_ssize_t m) {
    Hier *h = (Hier *)hh;
    if (!m) return 0;
    Py_ssize_t tot = a->nused + a->nnew;
    if (adm_reserve(a, tot + m + 1, a->ntiers, tot) < 0) return -1;
    uint64_t *keys = a->keys;
    memcpy(keys + tot, k, sizeof(uint64_t) * (size_t)m);
    Py_ssize_t sh = tfill(h, keys + tot, m, a->ents + tot, NULL);
    if (sh < 0) return -1;
    a->reserved_blocks -= m - sh;
    a->nnew += m;
    return write_down(h, keys + tot, m);
}

static PyObject *hier_extend(Hier *h, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyObject_TypeCheck(args[0], &AdmType)) {
        PyErr_SetString(PyExc_TypeError, "extend(admission, block_hashes)");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(args[1], "block_hashes must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    if (!m) { Py_DECREF(seq); Py_RETURN_NONE; }
    if (ensure_k(h, m + 1) < 0 || to_u64(seq, m, h->k) < 0) { Py_DECREF(seq); return NULL; }
    Py_DECREF(seq);
    if (c_extend((PyObject *)h, &((Adm *)args[0])->c, h->k, m) < 0) return NULL;
    Py_RETURN_NONE;
}

static int tier_index(Hier *h, PyObject *arg) {
    long j = PyLong_AsLong(arg);
    if (j == -1 && PyErr_Occurred()) return -1;
    if (j < 0 || j >= h->ntiers) { PyErr_SetString(PyExc_IndexError, "tier index out of range"); return -1; }
    return (int)j;
}

static PyObject *hier_tier_info(Hier *h, PyObject *arg) {
    int j = tier_index(h, arg);
    if (j < 0) return NULL;
    Tier *t = &h->t[j];
    return Py_BuildValue("(nnnLLLLLL)", t->nres, t->held, t->reserved, t->inserted, t->evicted, t->overflow,
                         t->peak_res, t->peak_used, t->refused);
}

static PyObject *hier_num_resident(Hier *h, PyObject *arg) {
    int j = tier_index(h, arg);
    return j < 0 ? NULL : PyLong_FromSsize_t(h->t[j].nres);
}

static PyObject *hier_num_held(Hier *h, PyObject *arg) {
    int j = tier_index(h, arg);
    return j < 0 ? NULL : PyLong_FromSsize_t(h->t[j].held);
}

/* GPU slots held by running requests: pinned + reserved */
static Py_ssize_t c_gpu_held(PyObject *hh) {
    Tier *g = &((Hier *)hh)->t[0];
    return g->nres - g->held + g->reserved;
}

static PyObject *hier_gpu_held(Hier *h, PyObject *unused) { return PyLong_FromSsize_t(c_gpu_held((PyObject *)h)); }

static PyObject *hier_pin_count(Hier *h, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "pin_count(tier, key)"); return NULL; }
    int j = tier_index(h, args[0]);
    if (j < 0) return NULL;
    uint64_t key = PyLong_AsUnsignedLongLong(args[1]);
    if (key == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;    /* not a block hash: not resident */
    }
    int32_t e = tier_find(&h->t[j], key);
    if (e < 0) Py_RETURN_NONE;
    return PyLong_FromLong(tier_pin(&h->t[j], e));
}

/* a walk over tier t's table (hier_resident, hier_check): tab_len(t) positions, tab_at(t, i) the entry at position
 * i or -1 -- slot i's entry (hashed), or entry i when it is in some tier (a shared table in direct mode: no slots;
 * an entry in no tier is free). The order is the slots' (hashed, new in each process: the hash seed) or the
 * entries' (direct); readers are order-free (pcs.cache.native._Resident: a Mapping) */
static inline uint64_t tab_len(const Tier *t) {
    return t->shared && t->shared->dmap ? (uint64_t)t->ent_len : t->mask + 1;
}
static inline int32_t tab_at(const Tier *t, uint64_t i) {
    if (t->shared && t->shared->dmap) return t->ent[i].flags & (F_GPU | F_CPU) ? (int32_t)i : -1;
    return t->slots[i].e;
}

static PyObject *hier_resident(Hier *h, PyObject *arg) {
    int j = tier_index(h, arg);
    if (j < 0) return NULL;
    Tier *t = &h->t[j];
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (uint64_t i = 0; i < tab_len(t); i++) {
        int32_t e = tab_at(t, i);
        if (e < 0 || (t->inflag && !(t->ent[e].flags & t->inflag))) continue;
        PyObject *k = PyLong_FromUnsignedLongLong(t->ent[e].key);
        PyObject *v = PyLong_FromLong(tier_pin(t, e));
        if (!k || !v || PyDict_SetItem(d, k, v) < 0) { Py_XDECREF(k); Py_XDECREF(v); Py_DECREF(d); return NULL; }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    return d;
}

/* the held keys of a tier with a compiled policy, first victim first (its order hook) */
static PyObject *policy_order(Tier *t) {
    int32_t *buf = PyMem_Malloc(sizeof(int32_t) * (t->nres + 1));
    if (!buf) return PyErr_NoMemory();
    Py_ssize_t n = t->ops ? t->ops->order(t, buf) : lq_order(t, buf);
    PyObject *l = n < 0 ? NULL : PyList_New(n);
    for (Py_ssize_t i = 0; l && i < n; i++) {
        PyObject *k = PyLong_FromUnsignedLongLong(t->ent[buf[i]].key);
        if (!k) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, k);
    }
    PyMem_Free(buf);
    return l;
}

/* append the keys of entries e[0..n) to list l; 0 or -1 */
static int append_keys(const Tier *t, PyObject *l, const int32_t *e, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyLong_FromUnsignedLongLong(t->ent[e[i]].key);
        if (!k || PyList_Append(l, k) < 0) { Py_XDECREF(k); return -1; }
        Py_DECREF(k);
    }
    return 0;
}

/* the policy's order then, with retain, the pool's (RetainingPolicy.order) */
static PyObject *hier_order(Hier *h, PyObject *arg) {
    int j = tier_index(h, arg);
    if (j < 0) return NULL;
    Tier *t = &h->t[j];
    PyObject *l = policy_order(t);
    if (!l) return NULL;
    if (t->ret && t->ret->len) {
        int32_t *buf = PyMem_Malloc(sizeof(int32_t) * t->ret->len);
        Py_ssize_t n = buf ? ret_order(t, buf) : 0;
        int bad = !buf || append_keys(t, l, buf, n) < 0;
        PyMem_Free(buf);
        if (bad) { Py_DECREF(l); return buf ? NULL : PyErr_NoMemory(); }
    }
    return l;
}

/* Hierarchy.sync(): every tier's policy hands over what it queued (PolOps.sync: a hosted Python policy) */
static PyObject *hier_sync(Hier *h, PyObject *unused) {
    for (int j = 0; j < h->ntiers; j++)
        if (h->t[j].ops && h->t[j].ops->sync && h->t[j].ops->sync(&h->t[j]) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *hier_written(Hier *h, void *c) {
    PyObject *l = PyList_New(h->ntiers);
    if (!l) return NULL;
    for (int j = 0; j < h->ntiers; j++) PyList_SET_ITEM(l, j, PyLong_FromLongLong(h->written[j]));
    return l;
}

static PyObject *hier_dropped(Hier *h, void *c) { return PyLong_FromLongLong(h->dropped); }

static PyObject *hier_shared(Hier *h, PyObject *unused) { return PyBool_FromLong(h->sh != NULL); }

/* direct_limit(): the limit of the shared table's direct mode (LRU or fifo / slru tiers: keys below it are direct,
 * Tier.dmap, pcs/cache/_dmap.h), 0 when the table is hashed (or there is none) */
static PyObject *hier_direct_limit(Hier *h, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(h->sh && h->sh->dmap ? h->sh->dlim : 0);
}

#define CHECK(cond, ...) do { if (!(cond)) { PyErr_Format(PyExc_AssertionError, __VA_ARGS__); return NULL; } } while (0)

/* a shared table's own invariants: its tiers read its arrays, every entry in it is in some tier, and only GPU
 * blocks have pins; NULL or what is wrong (the tiers' own checks follow in hier_check) */
static const char *sh_check(const Hier *h) {
    const Tier *s = h->sh;
    Py_ssize_t occ = 0;
    for (int j = 0; j < 2; j++)
        if (h->t[j].ent != s->ent || h->t[j].slots != s->slots || h->t[j].mask != s->mask ||
            h->t[j].ent_len != s->ent_len) return "a tier's view of the shared table is stale";
    if (s->dmap) return dmap_check(s);
    for (uint64_t i = 0; i <= s->mask; i++) {
        int32_t e = s->slots[i].e;
        if (e < 0) continue;
        occ++;
        uint8_t in = s->ent[e].flags & (F_GPU | F_CPU);
        if (!in) return "an entry of the shared table in no tier";
        if (!(in & F_GPU) && s->ent[e].pin) return "a pin count on a block not in the GPU tier";
        if (s->ent[e].aux != (int64_t)key_fp(s->ent[e].key)) return "a shared entry's aux is not its key's fingerprint";
        if (sh_home(&s->ent[e], s->bits) != home(s, s->ent[e].key)) return "a shared entry's home slot differs";
    }
    return occ == s->nres ? NULL : "shared table: slots used differ from its entries";
}

static PyObject *hier_check(Hier *h, PyObject *unused) {
    const char *shwhy = !h->sh ? NULL : h->t[0].ops ? ps_check(h) : sh_check(h);
    CHECK(!shwhy, "%s", shwhy ? shwhy : "");
    for (int j = 0; j < h->ntiers; j++) {
        Tier *t = &h->t[j];
        CHECK(t->reserved >= 0, "tier %d: reserved %zd < 0", j, t->reserved);
        CHECK(!((uintptr_t)t->ent & 63), "tier %d: entry array not on a 64-byte boundary (ent_realloc)", j);
        CHECK(t->nres + t->reserved <= t->capacity, "tier %d: resident %zd + reserved %zd > capacity %zd", j,
              t->nres, t->reserved, t->capacity);
        Py_ssize_t occ = 0, unpinned = 0;
        for (uint64_t i = 0; i < tab_len(t); i++) {
            int32_t e = tab_at(t, i);
            if (e < 0 || (t->inflag && !(t->ent[e].flags & t->inflag))) continue;   /* shared: another tier's */
            occ++;
            CHECK(e < t->ent_len, "tier %d: bad entry index", j);
            CHECK(tab_find(t, t->ent[e].key) == e, "tier %d: key %llu not found from its home", j,
                  (unsigned long long)t->ent[e].key);
            CHECK(tier_pin(t, e) >= 0, "tier %d: negative pin count", j);
            unpinned += tier_pin(t, e) == 0;
        }
        CHECK(occ == t->nres, "tier %d: %zd slots used, %zd resident", j, occ, t->nres);
        CHECK((t->shared && t->shared->dmap) || (uint64_t)t->nres * 2 <= t->mask + 1,
              "tier %d: table over half full", j);                  /* (direct: no slots) */
        if (j) CHECK(t->nres == t->held && t->reserved == 0, "tier %d: lower tier with pins or reserved slots", j);
        Py_ssize_t pooled = t->ret ? t->ret->len : 0;
        if (t->ret) {
            const char *why = ret_check(t);
            CHECK(!why, "tier %d (retain): %s", j, why ? why : "");
        }
        if (t->ops) {
            CHECK(t->held == unpinned, "tier %d: %zd held, %zd unpinned", j, t->held, unpinned);
            t->held -= pooled;           /* the policy's own check sees the blocks it holds */
            const char *why = t->ops->check(t);
            t->held += pooled;
            CHECK(!why, "tier %d (%s): %s", j, t->ops->name, why ? why : "");
            continue;
        }
        const char *why = lq_check(t);
        CHECK(!why, "tier %d: %s", j, why ? why : "");
        CHECK(t->held == unpinned, "tier %d: LRU holds %zd, unpinned %zd", j, t->held, unpinned);
        if (j) CHECK(t->nres == t->held && t->reserved == 0, "tier %d: lower tier with pins or reserved slots", j);
    }
    Py_RETURN_NONE;
}

/* the compiled policies: registered name -> ops (pcs/cache/_pol_*.c); lru has none (inline) */
static const PolOps *const POLICIES[] = {&POL_FIFO, &POL_SLRU, &POL_SIEVE, &POL_2Q, &POL_S3FIFO, &POL_ARC, &POL_LFU,
                                         &POL_GDSF, &POL_BELADY, &POL_PY, &POL_PYARR};

/* One tier's setting from its item of a per-tier sequence (hier_init's policies, gates, retains): 0, or -1
 * with an exception set */
typedef int (*TierSetter)(Hier *h, Tier *t, PyObject *item);

/* set(h, tier j, seq[j]) for every tier; `not_seq` / `wrong_len`: the messages of a non-sequence and of a
 * sequence without one item per tier (ValueError) */
static int set_per_tier(Hier *h, PyObject *seq, const char *not_seq, const char *wrong_len, TierSetter set) {
    PyObject *items = PySequence_Fast(seq, not_seq);
    if (!items) return -1;
    int ok = PySequence_Fast_GET_SIZE(items) == h->ntiers;
    for (int j = 0; ok && j < h->ntiers; j++)
        if (set(h, &h->t[j], PySequence_Fast_GET_ITEM(items, j)) < 0) { Py_DECREF(items); return -1; }
    Py_DECREF(items);
    if (!ok) PyErr_SetString(PyExc_ValueError, wrong_len);
    return ok ? 0 : -1;
}

/* a tier's policy: (name, (int option, ...)[, data]); the options are the sizes the Python policy worked
 * out, data the trace data of a policy that reads the trace (PolOps.load) */
static int set_policy(Hier *h, Tier *t, PyObject *item) {
    const char *name;
    PyObject *opts, *data = Py_None;
    t->clock = &h->clock;
    if (!PyArg_ParseTuple(item, "sO|O", &name, &opts, &data)) return -1;
    PyObject *os = PySequence_Fast(opts, "policy options must be a sequence");
    if (!os) return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(os) && i < 4; i++)
        t->opt[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(os, i));
    Py_DECREF(os);
    if (PyErr_Occurred()) return -1;
    if (!strcmp(name, "lru")) return 0;
    for (size_t i = 0; i < sizeof(POLICIES) / sizeof(*POLICIES); i++)
        if (!strcmp(name, POLICIES[i]->name)) t->ops = POLICIES[i];
    if (!t->ops) {
        PyErr_Format(PyExc_ValueError, "no compiled eviction policy %s", name);
        return -1;
    }
    if (t->ops->init && t->ops->init(t) < 0) return -1;
    return t->ops->load && t->ops->load(t, data) < 0 ? -1 : 0;
}

/* a tier's retain: None or (retained keys u64, duration s, arrivals f64) (pcs/cache/_retain.c) */
static int set_retain(Hier *h, Tier *t, PyObject *item) {
    return item == Py_None ? 0 : ret_set(t, item, &h->clock);
}

/* a tier's gates: a sequence of admission specs (kind, a, b) (pcs/cache/_admission.c; empty: none) */
static int set_gates(Hier *h, Tier *t, PyObject *item) {
    (void)h;
    return gates_set(t, item);
}

/* one table for the two tiers when both are plain LRU (no admission gates, no retain, no hosted policy): each
 * block has one entry (key, GPU pin count, GPU and CPU queue positions, which tiers hold it), so a demotion or a
 * restore is a flag and a queue append, and a lookup one probe. Two fifo / slru tiers share one table too
 * (pcs/cache/_lruhier_polshare.h); other configurations keep one table per tier.
 * expected: the trace's distinct block ids when known (0: not known). 0 (shared or not) or -1 */
#define SH_ENT_ONCE ((Py_ssize_t)1 << 22)    /* sh_open: up to 4 M entries (128 MB asked for) in one allocation */
/* direct: the table's direct mode (Tier.dmap, dmap_start): -1 its limit from expected (dmap_limit), 0 hashed from
 * the start, > 0 that limit (tests: a worked boundary) */
static int sh_open(Hier *h, Py_ssize_t expected, Py_ssize_t direct) {
    if (h->ntiers != 2) return 0;
    for (int j = 0; j < 2; j++) {
        const Tier *t = &h->t[j];
        if (t->ops || t->gates || t->ret || t->py || t->pa) return 0;
    }
    if (!(h->sh = kstore_new())) return -1;
    /* the entries' array allocated once for the most the table can hold, one entry per resident block (GPU + CPU
     * capacity: sh_reserve never grows it then), unless that is more than SH_ENT_ONCE: memory asked for, not touched
     * (no memset; a page is faulted in when an entry on it is first used), so no copy of the array as it doubles */
    Py_ssize_t most = h->t[0].capacity + h->t[1].capacity + 1;
    if (most <= SH_ENT_ONCE && grow_table_ents(h->sh, most) < 0) return -1;
    /* the slots sized once for the blocks the table will hold, when the caller knows how many distinct blocks the
     * trace has (expected > 0): at most `most` are resident at once, so min(expected, most); the doublings from 16
     * slots and their rehashes (15 at 16,384 + 65,536 blocks) are skipped. Unknown (0): grown as blocks come */
    Py_ssize_t want = expected < most ? expected : most;
    h->sh_want = want > 0 ? want : 0;
    /* direct mode when its memory is there (else hashed): the slots are then sized by sh_hashed, if ever */
    if (dmap_start(h->sh, expected, direct)) want = 0;
    if (want > 0 && grow_table_for(h->sh, want) < 0) return -1;
    for (int j = 0; j < 2; j++) {
        tier_slots_free(&h->t[j]);
        h->t[j].shared = h->sh;
        h->t[j].inflag = j ? F_CPU : F_GPU;
    }
    h->t[1].lqoff = offsetof(Entry, next);
    sh_sync(h);
    return 0;
}

static int hier_init(Hier *h, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"names", "capacities_blocks", "write_through", "policies", "gates", "retains",
                             "shared_table", "expected_blocks", "direct_limit", NULL};
    PyObject *names, *caps, *pols = Py_None, *gates = Py_None, *retains = Py_None;
    int wt, share = 1;
    Py_ssize_t expected = 0, direct = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOp|OOOpnn", kwlist, &names, &caps, &wt, &pols, &gates, &retains,
                                     &share, &expected, &direct)) return -1;
    PyObject *ns = PySequence_Fast(names, "names must be a sequence");
    if (!ns) return -1;
    PyObject *cs = PySequence_Fast(caps, "capacities must be a sequence");
    if (!cs) { Py_DECREF(ns); return -1; }
    Py_ssize_t T = PySequence_Fast_GET_SIZE(ns);
    if (T < 1 || T != PySequence_Fast_GET_SIZE(cs) || T > 64 || h->t) {
        PyErr_SetString(PyExc_ValueError, "need 1..64 tiers, one capacity per name, once");
        goto fail;
    }
    h->t = PyMem_Calloc(T, sizeof(Tier));
    h->written = PyMem_Calloc(T, sizeof(long long));
    if (!h->t || !h->written) { PyErr_NoMemory(); goto fail; }
    for (Py_ssize_t j = 0; j < T; j++) {
        Py_ssize_t c = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(cs, j));
        if (c == -1 && PyErr_Occurred()) goto fail;
        if (c < 0 || c > ((Py_ssize_t)1 << 30)) {
            PyErr_Format(PyExc_ValueError, "tier capacity must be 0 .. 2^30 blocks, got %zd", c);
            goto fail;
        }
        if (tier_init(&h->t[j], PySequence_Fast_GET_ITEM(ns, j), c) < 0) { PyErr_NoMemory(); goto fail; }
        h->ntiers = (int)j + 1;
    }
    h->clock = -1;
    if (pols != Py_None && set_per_tier(h, pols, "policies must be a sequence", "need one policy per tier",
                                        set_policy) < 0) goto fail;
    if (gates != Py_None && set_per_tier(h, gates, "gates must be a sequence",
                                         "need one list of admission gates per tier", set_gates) < 0) goto fail;
    if (retains != Py_None && set_per_tier(h, retains, "retains must be a sequence",
                                           "need one retain spec (or None) per tier", set_retain) < 0) goto fail;
    h->write_through = wt;
    if (direct < -1 || direct > (Py_ssize_t)DMAP_MAX) {
        PyErr_Format(PyExc_ValueError, "direct_limit must be -1 (from expected_blocks), 0 (hashed) or 1 .. %llu",
                     (unsigned long long)DMAP_MAX);
        goto fail;
    }
    if (share && (sh_open(h, expected, direct) < 0 || ps_open(h, expected, direct) < 0)) goto fail;
    Py_DECREF(ns);
    Py_DECREF(cs);
    return 0;
fail:
    Py_DECREF(ns);
    Py_DECREF(cs);
    return -1;
}

static PyMethodDef hier_methods[] = {
    {"start", (PyCFunction)(void (*)(void))hier_start, METH_FASTCALL,
     "start(keys, n, cap, extra_blocks=0, wait_if_full=False) -> Admission | None"},
    {"start_ids", (PyCFunction)(void (*)(void))hier_start_ids, METH_FASTCALL,
     "start_ids(ids: uint64 bytes, n, cap, extra_blocks, wait_if_full) -> Admission | None: start() on a buffer"},
    {"prefill_done", (PyCFunction)hier_prefill_done, METH_O, "computed blocks become cached (pinned)"},
    {"finish", (PyCFunction)hier_finish, METH_O, "drop the pins tail first, give back reserved slots"},
    {"grow", (PyCFunction)(void (*)(void))hier_grow, METH_FASTCALL,
     "grow(adm, n) -> bool: n more reserved GPU slots for a running request"},
    {"abort", (PyCFunction)hier_abort, METH_O, "release a request before prefill_done: its computed keys uncached"},
    {"extend", (PyCFunction)(void (*)(void))hier_extend, METH_FASTCALL,
     "extend(adm, keys): blocks filled while decoding become cached (pinned until finish)"},
    {"tier_info", (PyCFunction)hier_tier_info, METH_O,
     "(resident, unpinned, reserved, inserted, evicted, overflow, peak_resident, peak_used, refused) of tier j"},
    {"num_resident", (PyCFunction)hier_num_resident, METH_O, "resident blocks of tier j"},
    {"num_held", (PyCFunction)hier_num_held, METH_O, "unpinned (evictable) blocks of tier j"},
    {"gpu_held", (PyCFunction)hier_gpu_held, METH_NOARGS, "GPU slots held by running requests"},
    {"pin_count", (PyCFunction)(void (*)(void))hier_pin_count, METH_FASTCALL, "pin count of key in tier j or None"},
    {"resident", (PyCFunction)hier_resident, METH_O, "dict key -> pin count of tier j"},
    {"order", (PyCFunction)hier_order, METH_O, "unpinned keys of tier j, first victim first"},
    {"check", (PyCFunction)hier_check, METH_NOARGS, "assert every invariant"},
    {"sync", (PyCFunction)hier_sync, METH_NOARGS, "hand a hosted Python policy its queued calls (pcs/cache/_pol_py.c)"},
    {"shared_table", (PyCFunction)hier_shared, METH_NOARGS,
     "whether one table serves both tiers (sh_open: plain LRU; ps_open: fifo / slru)"},
    {"direct_limit", (PyCFunction)hier_direct_limit, METH_NOARGS,
     "keys below it index the shared table directly (0: hashed, or no shared table)"},
    {"run_sequential", (PyCFunction)(void (*)(void))hier_run_sequential, METH_FASTCALL,
     "run_sequential(hashes, offsets, cacheable, max_hit, out): sequential requests; out[i] = hit blocks"},
    {NULL}
};

/* releases_gil: whether run_sequential releases the GIL (c_nogil) */
static PyObject *hier_releases_gil(Hier *h, void *unused) { return PyBool_FromLong(c_nogil((PyObject *)h)); }

static PyGetSetDef hier_getset[] = {
    {"written_blocks", (getter)hier_written, NULL, "blocks written into each tier", NULL},
    {"dropped_blocks", (getter)hier_dropped, NULL, "blocks pushed out of the last tier", NULL},
    {"releases_gil", (getter)hier_releases_gil, NULL, "run_sequential runs without the GIL (no hosted Python policy)",
     NULL},
    {NULL}
};

static PyTypeObject HierType = {
    PCS_TYPE_CLASS("pcs.cache._lruhier.Hierarchy", Hier, hier_dealloc,
                   "Hierarchy(names, capacities_blocks, write_through, policies=None, gates=None, retains=None, "
                   "shared_table=True, expected_blocks=0): tiers, GPU first; shared_table: one table for two plain LRU "
                   "tiers or two fifo / slru tiers (write-back); expected_blocks: the trace's distinct block ids "
                   "when known (the shared table sized once)",
                   hier_methods, hier_getset, hier_init)};

/* ---------------------------------------------------------------------------------------------- */
/* the C-level API (_lruhier_api.h): the step-scheduler calls above, for pcs/engine/_stepsched.c */
static Py_ssize_t c_num_resident(PyObject *hh, int j) { return ((Hier *)hh)->t[j].nres; }
static int c_ntiers(PyObject *hh) { return ((Hier *)hh)->ntiers; }

/* whether the calls run no Python code: no tier hosts a Python policy (pcs/cache/_pol_py.c, or on handles:
 * pcs/cache/_pol_pyarr.c) */
static int c_nogil(PyObject *hh) {
    Hier *h = (Hier *)hh;
    for (int j = 0; j < h->ntiers; j++)
        if (h->t[j].ops == &POL_PY || h->t[j].ops == &POL_PYARR || h->t[j].py || h->t[j].pa) return 0;
    return 1;
}

static PcsHierApi C_API = {
    PCS_LRUHIER_API_VERSION, &HierType, c_start, c_prefill_done, c_finish, c_grow, c_abort, c_extend, c_adm_free,
    c_gpu_held, c_num_resident, c_ntiers, c_nogil,
};

/* kept_bytes(): the bytes this module's pool of dead tables' entry and order arrays keeps now (pcs/_kept.h; tests) */
static PyObject *mod_kept_bytes(PyObject *mod, PyObject *unused) { return PyLong_FromSize_t(kept_held()); }
/* kept_clear(): every mapping that pool keeps unmapped (tests: an empty pool to start from; pcs.release_memory);
 * returns how many */
static PyObject *mod_kept_clear(PyObject *mod, PyObject *unused) { return PyLong_FromLong(kept_clear()); }
/* spare_bytes(): the mapped bytes of the direct map kept for the next table (_dmap.h), 0 when none */
static PyObject *mod_spare_bytes(PyObject *mod, PyObject *unused) { return PyLong_FromSize_t(dmap_spare_bytes()); }
/* spare_clear(): that map unmapped (pcs.release_memory); returns 1 when there was one, else 0 */
static PyObject *mod_spare_clear(PyObject *mod, PyObject *unused) { return PyLong_FromLong(dmap_spare_clear()); }

static PyMethodDef mod_methods[] = {
    {"kept_bytes", mod_kept_bytes, METH_NOARGS, "bytes the pool of dead tables' arrays keeps now (pcs/_kept.h)"},
    {"kept_clear", mod_kept_clear, METH_NOARGS, "unmap every mapping the pool of dead tables' arrays keeps; returns how many"},
    {"spare_bytes", mod_spare_bytes, METH_NOARGS, "mapped bytes of the direct map kept for the next table (0: none)"},
    {"spare_clear", mod_spare_clear, METH_NOARGS, "unmap the direct map kept for the next table; returns 1 or 0"},
    {NULL}
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "pcs.cache._lruhier",
    "All-LRU tier hierarchy in C (drop-in for pcs.cache.hierarchy.Hierarchy; see pcs/cache/native.py).",
    -1, mod_methods,
};

PyMODINIT_FUNC PyInit__lruhier(void) {
    RISE_INIT();
    if (PyType_Ready(&AdmType) < 0 || PyType_Ready(&HierType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&HierType);
    Py_INCREF(&AdmType);
    if (PyModule_AddObject(m, "Hierarchy", (PyObject *)&HierType) < 0 ||
        PyModule_AddObject(m, "Admission", (PyObject *)&AdmType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *cap = PyCapsule_New(&C_API, PCS_LRUHIER_CAPSULE, NULL);
    if (!cap || PyModule_AddObject(m, "_C_API", cap) < 0) {
        Py_XDECREF(cap);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
