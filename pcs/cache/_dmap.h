/* pcs/cache/_lruhier.c, included once: the direct mode of a table two tiers share (Tier.dmap, _lruhier.h), one rule
 * for both shared tables -- two plain LRU tiers' (sh_open, sh_mode, sh_hashed) and two fifo / slru tiers'
 * (pcs/cache/_lruhier_polshare.h: ps_open, ps_mode, ps_hashed).
 *
 * Key k's entry is dmap[k] - 1 (int32, 0: absent) for every k below the limit dlim: a lookup is one load, an add
 * and a deletion (ddel, _lruhier.h) one store, no hash and no probe. The limit comes from the trace's block hashes
 * (dmap_limit). Before keys are added, dmap_below says whether every one is below the limit; when one is not, the
 * caller moves the table to its slots for good (dmap_hash, then its own sync of the tiers' views) before the adds.
 * Entries, queues, counts and the free list's order are the same in both modes, so no number depends on it.
 */

/* dmap's limit from the open's `expected` (the trace's block hashes, its accesses as the reader counts them; 0: not
 * known): twice that, at least DMAP_MIN and at most DMAP_MAX keys -- 4 bytes of address space a key below it, the
 * scan's rule (pcs/engine/_lruscan.c: 2 x expected, at least 2**20). Pages are backed when first touched: a trace
 * numbered 0 .. N (Mooncake's hash_ids, its replicas) takes 4 B per distinct block; ids spread over the range take
 * at most one page per id, and never more than 4 x the limit bytes (8 B per block hash of the trace, or 4 MB) */
#define DMAP_MIN ((uint64_t)1 << 20)
#define DMAP_MAX ((uint64_t)1 << 27)        /* 512 MB of address space at most */
/* a map below this many bytes is kept on 4 KiB pages (MADV_NOHUGEPAGE): with transparent huge pages on (this VM:
 * `always`) a small trace's first touch backed a whole 2 MiB page, 2 MiB for 0.73 MB of ids at 1x (about 7 B per
 * distinct block more, past the 100 B per distinct block of benchmarks/bench_memory.py at 1x from Parquet); from 16 MB on
 * (traces of 2 M block hashes and more: the 10x replica's map is 23 MB, measured with huge pages) a 2 MiB page is a
 * small share of the map and saves TLB misses */
#define DMAP_SMALL_BYTES ((size_t)16 << 20)
static inline uint64_t dmap_limit(Py_ssize_t expected) {
    uint64_t lim = expected > 0 ? 2 * (uint64_t)expected : 0;
    return lim < DMAP_MIN ? DMAP_MIN : lim > DMAP_MAX ? DMAP_MAX : lim;
}

/* One direct map kept between tables, process-wide (dmap_keep, dmap_take): a map of at most DMAP_KEEP_BYTES (16 M
 * keys: traces of up to 2**23 block hashes) is not unmapped when its table ends or goes hashed but kept for the next
 * table of its size, which clears the part its keys touched (below the old dtop) with one memset instead of
 * faulting in each page it touches (the 1x Mooncake call: 179 pages of 4 KiB, each faulted on the lookup's read
 * and again on the add's write, 358 of its 362 minor faults, on the step loop's path; docs/performance.md, "The
 * 1x call's fixed costs"; the 10x replica's 23 MB map, advised for huge pages, still took about 400 faults a call
 * where huge pages were not to be had: "The calling thread's page faults"). Kept: one map, at most 64 MB of address
 * space, the pages the last table touched resident (4 B a key below its dtop: 7.3 MB at 10x). The slot is guarded
 * by a spin flag (dmap_free runs in step loops without the GIL); its holder only copies three fields. */
#define DMAP_KEEP_BYTES ((size_t)64 << 20)
static struct { int32_t *p; size_t bytes; uint64_t dirty; } dmap_spare;   /* p NULL: none kept */
static char dmap_spare_busy;

static inline void dmap_spare_lock(void) {
    while (__atomic_test_and_set(&dmap_spare_busy, __ATOMIC_ACQUIRE)) {
    }   /* held for a few loads and stores */
}

/* the kept map when it has `bytes` mapped bytes, its first `dirty` keys zeroed (all of it zero then), else NULL */
static int32_t *dmap_take(size_t bytes) {
    dmap_spare_lock();
    int32_t *p = dmap_spare.bytes == bytes ? dmap_spare.p : NULL;
    uint64_t dirty = dmap_spare.dirty;
    if (p) dmap_spare.p = NULL, dmap_spare.bytes = 0, dmap_spare.dirty = 0;
    __atomic_clear(&dmap_spare_busy, __ATOMIC_RELEASE);
    if (p) memset(p, 0, (size_t)dirty * sizeof(int32_t));
    return p;
}

/* map p (`bytes` mapped bytes, keys below `dirty` possibly nonzero) kept for a later table: 1, or 0 (too large, or
 * one is kept already: the caller unmaps it) */
static int dmap_keep(int32_t *p, size_t bytes, uint64_t dirty) {
    if (bytes > DMAP_KEEP_BYTES) return 0;
    dmap_spare_lock();
    const int kept = dmap_spare.p == NULL;
    if (kept) dmap_spare.p = p, dmap_spare.bytes = bytes, dmap_spare.dirty = dirty;
    __atomic_clear(&dmap_spare_busy, __ATOMIC_RELEASE);
    return kept;
}

/* the kept direct map unmapped (pcs.release_memory); 1 when there was one, else 0 */
static int dmap_spare_clear(void) {
    dmap_spare_lock();
    int32_t *p = dmap_spare.p;
    size_t bytes = dmap_spare.bytes;
    dmap_spare.p = NULL, dmap_spare.bytes = 0, dmap_spare.dirty = 0;
    __atomic_clear(&dmap_spare_busy, __ATOMIC_RELEASE);
    if (p) munmap(p, bytes);
    return p != NULL;
}

/* the kept direct map's mapped bytes (0: none) */
static size_t dmap_spare_bytes(void) {
    dmap_spare_lock();
    size_t bytes = dmap_spare.p ? dmap_spare.bytes : 0;
    __atomic_clear(&dmap_spare_busy, __ATOMIC_RELEASE);
    return bytes;
}

/* table s in direct mode for keys below lim: dmap zeroed (from 4 MB on mapped from the kernel, advised for huge
 * pages from DMAP_SMALL_BYTES on and against them below: fresh pages read as zero, backed once touched; below 4 MB,
 * calloc). 0, or -1 when the memory is not there (s
 * stays hashed: no exception set) */
static int dmap_open(Tier *s, uint64_t lim) {
    size_t bytes = (size_t)lim * sizeof(int32_t);
    void *p;
    s->dmapped = 0;
    if (bytes < ((size_t)4 << 20)) {
        p = calloc(1, bytes ? bytes : 1);
    } else {
        bytes = (bytes + 4095) & ~(size_t)4095;
        if ((p = dmap_take(bytes)) == NULL) {   /* the map a previous table kept (dmap_keep), cleared; else a new one */
            p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (p == MAP_FAILED) p = NULL;
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
            else madvise(p, bytes, bytes < DMAP_SMALL_BYTES ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
#endif
        }
        if (p) s->dmapped = bytes;
    }
    if (!p) return -1;
    s->dmap = p;
    s->dlim = lim;
    s->dtop = 0;
    return 0;
}

/* a shared table's mode at its open (sh_open, ps_open), direct: -1 direct with its limit from expected (dmap_limit),
 * 0 hashed from the start, > 0 direct with that limit (tests: a worked boundary). 1 when s is direct (its slots are
 * then sized when it turns hashed, if ever), 0 when hashed (asked, or dmap's memory is not there) */
static int dmap_start(Tier *s, Py_ssize_t expected, Py_ssize_t direct) {
    return direct && dmap_open(s, direct < 0 ? dmap_limit(expected) : (uint64_t)direct) == 0;
}

/* dmap released (the table hashed from now on, or freed) */
static void dmap_free(Tier *s) {
    if (s->dmapped) {
        if (!dmap_keep(s->dmap, s->dmapped, s->dtop)) munmap(s->dmap, s->dmapped);
    }
    else free(s->dmap);
    s->dmap = NULL;
    s->dmapped = 0;
    s->dlim = s->dtop = 0;
}

/* before keys[0 .. n) are added to table s in direct mode: 1 when every key is below its limit (the OR of the keys
 * bounds the largest: one pass, vectorised; then the exact largest) and dtop raised past them -- the table stays
 * direct; 0 when one is at or past the limit -- the caller moves the table to its slots (dmap_hash) before the adds */
static int dmap_below(Tier *s, const uint64_t *keys, Py_ssize_t n) {
    uint64_t any = 0;
    for (Py_ssize_t i = 0; i < n; i++) any |= keys[i];
    if (any < s->dlim) {
        if (n && any >= s->dtop) s->dtop = any + 1;
        return 1;
    }
    uint64_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) top = keys[i] > top ? keys[i] : top;
    if (top < s->dlim) {
        if (top >= s->dtop) s->dtop = top + 1;
        return 1;
    }
    return 0;
}

/* table s out of direct mode for good: its slots sized for the blocks it holds or, when more, for `want` (what its
 * open sized them for), every entry in some tier (F_GPU or F_CPU; a free entry's flags are 0: ddel) placed in them
 * from its home slot, in entry order, with its fingerprint (fp_aux: in aux too -- two LRU tiers' deletions read
 * their home there, sh_home; a policy's tiers keep aux for the policy), dmap released. Entries, queues and counts
 * are not touched: the replay goes on as if hashed from the start (only where blocks lie in the slots may differ);
 * the caller syncs its tiers' views. 0 or -1 (no memory: still direct) */
static int dmap_hash(Tier *s, Py_ssize_t want, int fp_aux) {
    const Py_ssize_t nres = s->nres;
    s->nres = 0;                                   /* grow_table_for sizes the slots of an empty table */
    const int rc = grow_table_for(s, want > nres ? want : nres);
    s->nres = nres;
    if (rc < 0) return -1;
    OaSlot *const slots = s->slots;                /* all free: no slot was written in direct mode */
    const uint64_t mask = s->mask;
    const int sh = 32 - s->bits;
    for (int32_t e = 0; e < s->ent_len; e++) {
        Entry *const x = &s->ent[e];
        if (!(x->flags & (F_GPU | F_CPU))) continue;   /* a free entry (flags 0: ddel, lq_walk) */
        const uint32_t f = key_fp(x->key);
        uint64_t j = f >> sh;
        while (slots[j].e >= 0) j = (j + 1) & mask;
        slots[j] = (OaSlot){e, f};
        if (fp_aux) x->aux = f;
    }
    dmap_free(s);
    return 0;
}

/* the shared table's check in direct mode: every entry in some tier is named by dmap at its key (below dtop <=
 * dlim), no free entry is, only GPU blocks have pins, and dmap's items below dtop (none above: dtop bounds every key
 * added) name exactly the nres entries in some tier; NULL or what is wrong */
static const char *dmap_check(const Tier *s) {
    Py_ssize_t occ = 0, named = 0;
    if (s->dtop > s->dlim) return "direct table: dtop past the limit";
    for (int32_t e = 0; e < s->ent_len; e++) {
        const Entry *x = &s->ent[e];
        const uint8_t in = x->flags & (F_GPU | F_CPU);
        const int here = x->key < s->dtop && s->dmap[x->key] == e + 1;
        if (in && !here) return "direct table: an entry in a tier not named at its key";
        if (!in && here) return "direct table: a free entry named at its key";
        if (!(in & F_GPU) && x->pin) return "a pin count on a block not in the GPU tier";
        occ += in != 0;
    }
    for (uint64_t k = 0; k < s->dtop; k++) {
        const int32_t v = s->dmap[k];
        if (!v) continue;
        if (v < 0 || v > s->ent_len || s->ent[v - 1].key != k) return "direct table: an item names another key's entry";
        named++;
    }
    if (occ != s->nres || named != s->nres) return "direct table: entries in a tier, items and resident blocks differ";
    return NULL;
}
