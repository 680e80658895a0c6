/* One open-addressing block table, the mechanism of a tier (pcs.cache.tier.Tier's resident dict with pin counts
 * and the LRU list of its unpinned blocks, pcs/cache/policies/lru.py): written once, included by
 * pcs/cache/_lruhier.h (keys: block hashes) and pcs/cache/_grouphier.h (keys: (block hash, page tag)).
 *
 * A table is a power-of-two array of slots (entry index or -1), linear probing from the key's home slot, at most
 * half full (grown x 2 before an add would pass half; OA_LOAD_SHIFT below); entries live in a growable array with a free list (chained
 * through next) and doubly linked prev/next links for the LRU list (head = first victim). Deletion moves later
 * entries of the probe run back (no tombstones). No include guard: the includer defines, then this file defines
 * the functions and undefines the parameters.
 *
 * Parameters (macros the includer defines first):
 *   OA_TABLE, OA_ENT, OA_KEY       the table struct (fields: ent, ent_cap, ent_len, free_head, slots, mask, bits,
 *                                  nres, held, head, tail), the entry struct (pin, prev, next), the key type;
 *   OA_HOME(t, k)                  the home slot of key k;
 *   OA_KEY_OF(x), OA_KEY_EQ(x, k)  an entry's key; whether entry x holds key k;
 *   OA_SET_KEY(x, k)               store key k in a new entry;
 *   OA_RESET(x)                    the includer's own fields of an entry, reset when it is added or deleted;
 *   OA_INIT, OA_FREE, OA_FIND, OA_GROW, OA_ADD, OA_DEL, OA_APPEND, OA_UNLINK   the functions' names here;
 *                                  three more take names made from them: <OA_FIND>_at (a lookup that also gives
 *                                  the free slot ending the key's probe run), <OA_ADD>_room (grow before an add)
 *                                  and <OA_ADD>_at (an add at that free slot): a lookup then an add, one probe;
 *                                  <OA_FIND>_fp, <OA_ADD>_fp and <OA_ADD>_atf take the key's OA_FP, worked out
 *                                  once by the caller for its prefetch, lookup and add; <OA_ADD>_take and
 *                                  <OA_ADD>_put are the two steps of an add (which entry, what it holds), on arrays
 *                                  and counters the caller may keep in locals (one add rule for every adder);
 *                                  <OA_DEL>_home deletes with the key's home slot given (a caller that keeps it);
 *                                  <OA_DEL>_shift is its slot step alone, on slots, mask and bits the caller
 *                                  passes (its locals: a loop of deletions reads none of them again per key);
 *                                  <OA_GROW>_for sizes an empty table's slots once for the keys it will hold.
 * Optional: OA_LOAD_SHIFT  the table is at most 1 / 2**OA_LOAD_SHIFT full (default 1: half); a sparser table has
 *                          shorter probe runs, so fewer entries are read by OA_FIND and by OA_DEL's backward shift.
 *           OA_SLOTS_ALLOC(bytes), OA_SLOTS_FREE(p)   the slot array's allocator (default PyMem_Malloc / PyMem_Free).
 *           OA_ENTS_REALLOC(p, used, bytes), OA_ENTS_FREE(p)   the entry array's (default PyMem_Realloc / PyMem_Free;
 *                          `used`: the bytes of p to keep). <OA_GROW>_ents grows it (doubling from 64 entries).
 *           OA_HASH32(k)   slots with a fingerprint: the table's slots are OaSlot {entry, h} (the includer's field
 *                          `OaSlot *slots`), h = OA_HASH32(k), a 32-bit hash whose top `bits` bits are the home slot
 *                          (OA_HOME(t, k) == OA_HASH32(k) >> (32 - bits), so at most 2**32 slots). A probe compares h
 *                          before it reads an entry (a lookup of an absent key reads no entry), and the backward
 *                          shift of OA_DEL and OA_GROW take each slot's home from h, not from its entry's key: fewer
 *                          random reads of the entry array, the same slots as without (tests/cache: the tables'
 *                          `check`). Without it the slots are int32_t (entry indices).
 */
#ifndef OA_LOAD_SHIFT
#define OA_LOAD_SHIFT 1
#endif
#define OA_CAT2(a, b) a##b
#define OA_CAT(a, b) OA_CAT2(a, b)
#define OA_FIND_AT OA_CAT(OA_FIND, _at)    /* derived names (OA_FIND tfind, OA_ADD tadd: tfind_at, tadd_at, tadd_room) */
#define OA_ADD_AT OA_CAT(OA_ADD, _at)
#define OA_ROOM OA_CAT(OA_ADD, _room)
#define OA_FIND_FP OA_CAT(OA_FIND, _fp)    /* tfind_fp, tadd_fp, tadd_atf: the same with the fingerprint given */
#define OA_ADD_FP OA_CAT(OA_ADD, _fp)
#define OA_ADD_ATF OA_CAT(OA_ADD, _atf)
#define OA_TAKE OA_CAT(OA_ADD, _take)     /* tadd_take, tadd_put: the steps of an add */
#define OA_PUT OA_CAT(OA_ADD, _put)
#ifndef OA_SLOTS_ALLOC
#define OA_SLOTS_ALLOC(bytes) PyMem_Malloc(bytes)
#define OA_SLOTS_FREE(p) PyMem_Free(p)
#endif
#ifndef OA_ENTS_REALLOC
#define OA_ENTS_REALLOC(p, used, bytes) PyMem_Realloc((p), (bytes))
#define OA_ENTS_FREE(p) PyMem_Free(p)
#endif
#define OA_ENTS_GROW OA_CAT(OA_GROW, _ents)   /* grow_table_ents: the entry array grown */
#define OA_DEL_HOME OA_CAT(OA_DEL, _home)     /* tdel_home: OA_DEL with the key's home slot given */
#define OA_SHIFT OA_CAT(OA_DEL, _shift)       /* tdel_shift: OA_DEL_HOME's slot step (the backward shift) */
#define OA_SIZE_FOR OA_CAT(OA_GROW, _for)     /* grow_table_for: an empty table's slots sized once */
#ifdef OA_HASH32
#ifndef PCS_OA_SLOT_DEFINED
#define PCS_OA_SLOT_DEFINED
typedef struct { int32_t e; uint32_t h; } OaSlot;   /* entry index (-1: free), OA_HASH32 of its key */
#endif
#define OA_SLOT OaSlot
#define OA_FP(k) OA_HASH32(k)
#define OA_FP_HOME(t, k, f) ((uint64_t)((f) >> (32 - (t)->bits)))
#define OA_S_E(s) ((s).e)
#define OA_S_HOME(t, s) ((uint64_t)((s).h >> (32 - (t)->bits)))
#define OA_S_HOME_B(t, s, b) ((uint64_t)((s).h >> (32 - (b))))      /* the same, bits given */
#define OA_S_MATCH(t, s, k, f) ((s).h == (f) && OA_KEY_EQ(&(t)->ent[(s).e], k))
#define OA_S_MAKE(e, f) ((OaSlot){(e), (f)})
#define OA_MAX_BITS 32
#else
#define OA_SLOT int32_t
#define OA_FP(k) 0u
#define OA_FP_HOME(t, k, f) OA_HOME(t, k)
#define OA_S_E(s) (s)
#define OA_S_HOME(t, s) OA_HOME(t, OA_KEY_OF(&(t)->ent[s]))
#define OA_S_HOME_B(t, s, b) OA_S_HOME(t, s)                        /* (b == t->bits) */
#define OA_S_MATCH(t, s, k, f) OA_KEY_EQ(&(t)->ent[s], k)
#define OA_S_MAKE(e, f) (e)
#define OA_MAX_BITS 62
#endif

/* the slots of an empty table (16, all free), empty entry and LRU lists; -1 + MemoryError on failure */
static inline int OA_INIT(OA_TABLE *t) {
    t->bits = 4;
    t->mask = 15;
    t->slots = OA_SLOTS_ALLOC(sizeof(OA_SLOT) * 16);
    if (!t->slots) { PyErr_NoMemory(); return -1; }
    memset(t->slots, 0xff, sizeof(OA_SLOT) * 16);
    t->free_head = t->head = t->tail = -1;
    return 0;
}

/* the table's memory released (the table may be freed again) */
static inline void OA_FREE(OA_TABLE *t) {
    OA_ENTS_FREE(t->ent);
    OA_SLOTS_FREE(t->slots);
    t->ent = NULL;
    t->slots = NULL;
}

/* room for at least `need` entries in the entry array (its capacity doubled from 64 until it holds them; the
 * entries kept, their indices unchanged); 0 or -1 + MemoryError (the array unchanged) */
static inline int OA_ENTS_GROW(OA_TABLE *t, Py_ssize_t need) {
    if (need <= t->ent_cap) return 0;
    Py_ssize_t cap = t->ent_cap ? t->ent_cap : 64;
    while (cap < need) cap *= 2;
    if (cap > INT32_MAX) { PyErr_NoMemory(); return -1; }
    OA_ENT *p = OA_ENTS_REALLOC(t->ent, sizeof(OA_ENT) * (size_t)t->ent_len, sizeof(OA_ENT) * (size_t)cap);
    if (!p) { PyErr_NoMemory(); return -1; }
    t->ent = p;
    t->ent_cap = (int32_t)cap;
    return 0;
}

/* OA_FIND_AT with k's fingerprint f = OA_FP(k) already worked out (a loop over keys hashes each once, for its
 * prefetch, its lookup and its add; without OA_HASH32, f is not read) */
static inline int32_t OA_FIND_FP(const OA_TABLE *t, OA_KEY k, uint32_t f, uint64_t *at) {
    uint64_t i = OA_FP_HOME(t, k, f);
    (void)f;
    for (;;) {
        OA_SLOT s = t->slots[i];
        if (OA_S_E(s) < 0) { *at = i; return -1; }
        if (OA_S_MATCH(t, s, k, f)) return OA_S_E(s);
        i = (i + 1) & t->mask;
    }
}

/* the entry holding key k, or -1 with *at = the free slot ending k's probe run (where OA_ADD_AT stores k: a
 * lookup and an add in one probe) */
static inline int32_t OA_FIND_AT(const OA_TABLE *t, OA_KEY k, uint64_t *at) {
    return OA_FIND_FP(t, k, OA_FP(k), at);
}

/* the entry holding key k, or -1 */
static inline int32_t OA_FIND(const OA_TABLE *t, OA_KEY k) {
    uint64_t at;
    return OA_FIND_AT(t, k, &at);
}

/* twice the slots, every entry placed again; -1 + MemoryError on failure */
static inline int OA_GROW(OA_TABLE *t) {
    int bits = t->bits + 1;
    if (bits > OA_MAX_BITS) { PyErr_NoMemory(); return -1; }
    uint64_t size = (uint64_t)1 << bits, oldsize = t->mask + 1;
    OA_SLOT *s = OA_SLOTS_ALLOC(sizeof(OA_SLOT) * size), *old = t->slots;
    if (!s) { PyErr_NoMemory(); return -1; }
    memset(s, 0xff, sizeof(OA_SLOT) * size);
    t->slots = s;
    t->bits = bits;
    t->mask = size - 1;
    for (uint64_t i = 0; i < oldsize; i++) {
        if (OA_S_E(old[i]) < 0) continue;
        uint64_t j = OA_S_HOME(t, old[i]);
        while (OA_S_E(s[j]) >= 0) j = (j + 1) & t->mask;
        s[j] = old[i];
    }
    OA_SLOTS_FREE(old);
    return 0;
}

/* an empty table's slots sized once for `keys` keys: the fewest slots (a power of two, at least its own) that
 * OA_ROOM lets hold them, all free (OA_GROW's doublings from 16 skipped); 0 or -1 + MemoryError (unchanged) */
static inline int OA_SIZE_FOR(OA_TABLE *t, Py_ssize_t keys) {
    int bits = t->bits;
    while (bits < OA_MAX_BITS && (uint64_t)keys << OA_LOAD_SHIFT > (uint64_t)1 << bits) bits++;
    if (t->nres || bits == t->bits) return 0;
    uint64_t size = (uint64_t)1 << bits;
    OA_SLOT *s = OA_SLOTS_ALLOC(sizeof(OA_SLOT) * size);
    if (!s) { PyErr_NoMemory(); return -1; }
    memset(s, 0xff, sizeof(OA_SLOT) * size);
    OA_SLOTS_FREE(t->slots);
    t->slots = s;
    t->bits = bits;
    t->mask = size - 1;
    return 0;
}

/* room for one more key: the slots grown first when an add would pass the load; 0 or -1 (MemoryError) */
static inline int OA_ROOM(OA_TABLE *t) {
    return (uint64_t)(t->nres + 1) << OA_LOAD_SHIFT > t->mask + 1 ? OA_GROW(t) : 0;
}

/* the entry a new key takes: the free list's first (*free_head, chained through next), else the one at *ent_len
 * (the caller has made room: *ent_len < the array's capacity); the table's free_head and ent_len, or the caller's
 * copies of them */
static inline int32_t OA_TAKE(const OA_ENT *ent, int32_t *free_head, int32_t *ent_len) {
    int32_t e = *free_head;
    if (e >= 0) *free_head = ent[e].next;
    else e = (*ent_len)++;
    return e;
}

/* key k (f = OA_FP(k)) stored in entry e (x = its address, from OA_TAKE) with a pin count, in no list, and the
 * free slot *slot (the end of k's probe run) naming it */
static inline void OA_PUT(OA_ENT *x, OA_SLOT *slot, int32_t e, OA_KEY k, int32_t pin, uint32_t f) {
    OA_SET_KEY(x, k);
    x->pin = pin;
    x->prev = x->next = -1;
    OA_RESET(x);
    *slot = OA_S_MAKE(e, f);
    (void)f;
}

/* add absent key k with a pin count, in no list, at slot `at` (OA_FIND_AT's answer for k, the table unchanged
 * since, after OA_ROOM), f = OA_FP(k); the entry index or -1 (memory error, exception set) */
static inline int32_t OA_ADD_ATF(OA_TABLE *t, OA_KEY k, int32_t pin, uint64_t at, uint32_t f) {
    if (t->free_head < 0 && t->ent_len == t->ent_cap && OA_ENTS_GROW(t, (Py_ssize_t)t->ent_cap + 1) < 0) return -1;
    int32_t e = OA_TAKE(t->ent, &t->free_head, &t->ent_len);
    OA_PUT(&t->ent[e], &t->slots[at], e, k, pin, f);
    t->nres++;
    return e;
}

/* OA_ADD_ATF, the fingerprint worked out here */
static inline int32_t OA_ADD_AT(OA_TABLE *t, OA_KEY k, int32_t pin, uint64_t at) {
    return OA_ADD_ATF(t, k, pin, at, OA_FP(k));
}

/* add absent key k (fingerprint f = OA_FP(k)) with a pin count, in no list; the entry index or -1 */
static inline int32_t OA_ADD_FP(OA_TABLE *t, OA_KEY k, int32_t pin, uint32_t f) {
    if (OA_ROOM(t) < 0) return -1;
    uint64_t i = OA_FP_HOME(t, k, f);
    while (OA_S_E(t->slots[i]) >= 0) i = (i + 1) & t->mask;
    return OA_ADD_ATF(t, k, pin, i, f);
}

/* add an absent key with a pin count, in no list; the entry index or -1 (memory error, exception set) */
static inline int32_t OA_ADD(OA_TABLE *t, OA_KEY k, int32_t pin) {
    return OA_ADD_FP(t, k, pin, OA_FP(k));
}

/* the slot naming entry e, whose key's home slot is i, freed from table t's slots (t's own `slots`, `mask` and
 * `bits`, passed: a caller's copies in locals): the later slots of its probe run moved back (no tombstone); the
 * entry itself is not touched (OA_DEL_HOME's next step) */
static inline void OA_SHIFT(const OA_TABLE *t, OA_SLOT *slots, uint64_t mask, int bits, int32_t e, uint64_t i) {
    (void)t;
    (void)bits;
    while (OA_S_E(slots[i]) != e) i = (i + 1) & mask;
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        OA_SLOT f = slots[j];
        if (OA_S_E(f) < 0) break;
        uint64_t hm = OA_S_HOME_B(t, f, bits);
        /* f may move to i unless its home hm lies cyclically in (i, j], that is, unless hm is fewer steps back from j
         * than i is: ((j - hm) & mask) < ((j - i) & mask) (j != i) */
        int stays = ((j - hm) & mask) < ((j - i) & mask);
        if (!stays) {
            slots[i] = f;
            i = j;
        }
    }
    OA_S_E(slots[i]) = -1;
}

/* delete entry e, whose key's home slot is i (OA_HOME, or a caller's own copy of it), from the table (e must not be
 * in a list); its slot in the entry array goes to the free list */
static inline void OA_DEL_HOME(OA_TABLE *t, int32_t e, uint64_t i) {
    OA_SHIFT(t, t->slots, t->mask, t->bits, e, i);
    OA_RESET(&t->ent[e]);
    t->ent[e].next = t->free_head;
    t->free_head = e;
    t->nres--;
}

/* delete entry e from the table (it must not be in a list); its slot in the entry array goes to the free list */
static inline void OA_DEL(OA_TABLE *t, int32_t e) {
    OA_DEL_HOME(t, e, OA_HOME(t, OA_KEY_OF(&t->ent[e])));
}

/* entry e becomes the LRU list's last (most recent) unpinned entry */
static inline void OA_APPEND(OA_TABLE *t, int32_t e) {
    OA_ENT *x = &t->ent[e];
    x->prev = t->tail;
    x->next = -1;
    if (t->tail >= 0) t->ent[t->tail].next = e; else t->head = e;
    t->tail = e;
    t->held++;
}

/* entry e leaves the LRU list */
static inline void OA_UNLINK(OA_TABLE *t, int32_t e) {
    OA_ENT *x = &t->ent[e];
    if (x->prev >= 0) t->ent[x->prev].next = x->next; else t->head = x->next;
    if (x->next >= 0) t->ent[x->next].prev = x->prev; else t->tail = x->prev;
    x->prev = x->next = -1;
    t->held--;
}

#undef OA_TABLE
#undef OA_ENT
#undef OA_KEY
#undef OA_HOME
#undef OA_KEY_OF
#undef OA_KEY_EQ
#undef OA_SET_KEY
#undef OA_RESET
#undef OA_INIT
#undef OA_FREE
#undef OA_FIND
#undef OA_GROW
#undef OA_ADD
#undef OA_DEL
#undef OA_APPEND
#undef OA_UNLINK
#undef OA_LOAD_SHIFT
#undef OA_SLOTS_ALLOC
#undef OA_SLOTS_FREE
#undef OA_ENTS_REALLOC
#undef OA_ENTS_FREE
#undef OA_ENTS_GROW
#undef OA_HASH32
#undef OA_SLOT
#undef OA_FP
#undef OA_FP_HOME
#undef OA_S_E
#undef OA_S_HOME
#undef OA_S_HOME_B
#undef OA_S_MATCH
#undef OA_S_MAKE
#undef OA_MAX_BITS
#undef OA_CAT2
#undef OA_CAT
#undef OA_FIND_AT
#undef OA_ADD_AT
#undef OA_ROOM
#undef OA_FIND_FP
#undef OA_ADD_FP
#undef OA_ADD_ATF
#undef OA_TAKE
#undef OA_PUT
#undef OA_DEL_HOME
#undef OA_SHIFT
#undef OA_SIZE_FOR
