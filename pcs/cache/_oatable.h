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
 *   OA_INIT, OA_FREE, OA_FIND, OA_GROW, OA_ADD, OA_DEL, OA_APPEND, OA_UNLINK   the functions' names here.
 * Optional: OA_LOAD_SHIFT  the table is at most 1 / 2**OA_LOAD_SHIFT full (default 1: half); a sparser table has
 *                          shorter probe runs, so fewer entries are read by OA_FIND and by OA_DEL's backward shift.
 *           OA_SLOTS_ALLOC(bytes), OA_SLOTS_FREE(p)   the slot array's allocator (default PyMem_Malloc / PyMem_Free).
 */
#ifndef OA_LOAD_SHIFT
#define OA_LOAD_SHIFT 1
#endif
#ifndef OA_SLOTS_ALLOC
#define OA_SLOTS_ALLOC(bytes) PyMem_Malloc(bytes)
#define OA_SLOTS_FREE(p) PyMem_Free(p)
#endif

/* the slots of an empty table (16, all free), empty entry and LRU lists; -1 + MemoryError on failure */
static inline int OA_INIT(OA_TABLE *t) {
    t->bits = 4;
    t->mask = 15;
    t->slots = OA_SLOTS_ALLOC(sizeof(int32_t) * 16);
    if (!t->slots) { PyErr_NoMemory(); return -1; }
    memset(t->slots, 0xff, sizeof(int32_t) * 16);
    t->free_head = t->head = t->tail = -1;
    return 0;
}

/* the table's memory released (the table may be freed again) */
static inline void OA_FREE(OA_TABLE *t) {
    PyMem_Free(t->ent);
    OA_SLOTS_FREE(t->slots);
    t->ent = NULL;
    t->slots = NULL;
}

/* the entry holding key k, or -1 */
static inline int32_t OA_FIND(const OA_TABLE *t, OA_KEY k) {
    uint64_t i = OA_HOME(t, k);
    for (;;) {
        int32_t e = t->slots[i];
        if (e < 0) return -1;
        if (OA_KEY_EQ(&t->ent[e], k)) return e;
        i = (i + 1) & t->mask;
    }
}

/* twice the slots, every entry placed again; -1 + MemoryError on failure */
static inline int OA_GROW(OA_TABLE *t) {
    int bits = t->bits + 1;
    uint64_t size = (uint64_t)1 << bits, oldsize = t->mask + 1;
    int32_t *s = OA_SLOTS_ALLOC(sizeof(int32_t) * size), *old = t->slots;
    if (!s) { PyErr_NoMemory(); return -1; }
    memset(s, 0xff, sizeof(int32_t) * size);
    t->slots = s;
    t->bits = bits;
    t->mask = size - 1;
    for (uint64_t i = 0; i < oldsize; i++) {
        int32_t e = old[i];
        if (e < 0) continue;
        uint64_t j = OA_HOME(t, OA_KEY_OF(&t->ent[e]));
        while (s[j] >= 0) j = (j + 1) & t->mask;
        s[j] = e;
    }
    OA_SLOTS_FREE(old);
    return 0;
}

/* add an absent key with a pin count, in no list; the entry index or -1 (memory error, exception set) */
static inline int32_t OA_ADD(OA_TABLE *t, OA_KEY k, int32_t pin) {
    if ((uint64_t)(t->nres + 1) << OA_LOAD_SHIFT > t->mask + 1 && OA_GROW(t) < 0) return -1;
    int32_t e;
    if (t->free_head >= 0) {
        e = t->free_head;
        t->free_head = t->ent[e].next;
    } else {
        if (t->ent_len == t->ent_cap) {
            Py_ssize_t cap = t->ent_cap;
            if (PCS_GROW(t->ent, &cap, cap + 1, 64) < 0) return -1;
            t->ent_cap = (int32_t)cap;
        }
        e = t->ent_len++;
    }
    OA_ENT *x = &t->ent[e];
    OA_SET_KEY(x, k);
    x->pin = pin;
    x->prev = x->next = -1;
    OA_RESET(x);
    uint64_t i = OA_HOME(t, k);
    while (t->slots[i] >= 0) i = (i + 1) & t->mask;
    t->slots[i] = e;
    t->nres++;
    return e;
}

/* delete entry e from the table (it must not be in a list); its slot in the entry array goes to the free list */
static inline void OA_DEL(OA_TABLE *t, int32_t e) {
    uint64_t i = OA_HOME(t, OA_KEY_OF(&t->ent[e]));
    while (t->slots[i] != e) i = (i + 1) & t->mask;
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        int32_t f = t->slots[j];
        if (f < 0) break;
        uint64_t hm = OA_HOME(t, OA_KEY_OF(&t->ent[f]));
        /* f may move to i unless its home hm lies cyclically in (i, j] */
        int stays = (i <= j) ? (i < hm && hm <= j) : (i < hm || hm <= j);
        if (!stays) {
            t->slots[i] = f;
            i = j;
        }
    }
    t->slots[i] = -1;
    OA_RESET(&t->ent[e]);
    t->ent[e].next = t->free_head;
    t->free_head = e;
    t->nres--;
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
