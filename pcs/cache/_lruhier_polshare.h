/* pcs/cache/_lruhier.c, included once: one table for the GPU and CPU tiers of a two-tier hierarchy whose tiers both
 * run fifo or slru (ps_open), as two plain LRU tiers share one (sh_open, Hier.sh).
 *
 * With a table per tier, each demoted GPU victim is deleted from the GPU table (its slot shifted back), hashed and
 * probed again in the CPU table and added there (tinsert), and a restore probes and adds in the GPU table. In one
 * table a block has one entry and one slot whichever tiers hold it: the flags F_GPU / F_CPU of the shared entry say
 * where (sh_lookup reads them, one probe per key for both tiers), a demotion sets F_CPU, a restore sets F_GPU, and the
 * slot is freed only when the block leaves both tiers. The two policies keep their own fields per entry: the GPU
 * tier's in the shared entries (Tier.ent is the table's), the CPU tier's in an array of its own with the same indices
 * (the CPU Tier's ent; its key kept equal to the table's, its flags F_CPU while the CPU tier holds it), so the
 * policies' code (PolOps, pcs/cache/_pol_fifo.c, _pol_slru.c) runs unchanged on each tier's array.
 *
 * The policy calls, their order and arguments are those of the two tables' path (tfill / own_fill, gpu_evict_ops,
 * tinsert with tcut and tadd_batch), so every victim and count is the same. Only the entry indices differ, which fifo
 * and slru never read for a choice (slru: lists; fifo: sequence numbers, unique within a tier, before the index in
 * its heap's order); so the layout is taken for these two only. No admission gate, retain pool, hosted policy,
 * write-through or third tier: those keep a table per tier. Equality: tests/cache/test_native_policy_share.py.
 *
 * The table starts in the direct mode of the LRU tiers' table (pcs/cache/_dmap.h, the same limit and the same
 * switch: key k's entry is dmap[k] - 1, no hash, no probe; ps_mode, ps_hashed) and is hashed for good once a key at
 * or past the limit is added: in both modes the same entries, free list and policy calls, so the same numbers.
 * Tests: tests/cache/test_native_direct_polshare.py.
 */

#define PS_ENT_ONCE ((Py_ssize_t)1 << 22)   /* ps_open: up to 4 M entries asked for at once (as sh_open) */

/* a CPU tier's own fields of entry y as a deletion leaves them: in no queue, not known to its policy, not in the tier.
 * The CPU tier's array holds them for every entry of the table it does not hold: ps_cpu_leave clears them when a
 * block leaves the tier, and an entry first taken past ent_len gets them then (ps_cent_take), so a block entering
 * the tier finds them so. Entries past the table's ent_len are never read (they are not cleared when the array is
 * allocated or grown: the clear of the whole array, 131,072 entries = 4 MB at 16,384 + 65,536 blocks, was a cost of
 * every replay, sized by the capacity) */
static inline void ps_cent_clear(Entry *y) {
    y->aux = -1;
    y->q = QNONE;
    y->flags = 0;
    y->prev = y->next = -1;
    y->pin = 0;
}

/* the CPU tier's entry y of an entry taken for key k: its key set, and its fields cleared when the entry was taken
 * past ent_len (`fresh`: they are whatever the allocation held); one from the free list has them clear already */
static inline void ps_cent_take(Entry *y, uint64_t k, int fresh) {
    if (fresh) ps_cent_clear(y);
    y->key = k;
}

/* the two tiers' views of the shared table (the GPU tier's entries are the table's; the CPU tier keeps its own
 * array, the same length) after the table's slots or entries moved */
static void ps_sync(Hier *h) {
    Entry *const cpu_ent = h->t[1].ent;     /* sh_sync's views, but the CPU tier keeps its own entry array */
    sh_sync(h);
    h->t[1].ent = cpu_ent;
}

/* room for n more blocks in the shared table (its slots -- none in direct mode -- and both entry arrays grown now,
 * so that no add of a fill moves them); 0 or -1 */
static int ps_reserve(Hier *h, Py_ssize_t n) {
    Tier *s = h->sh;
    int moved = 0;
    for (; !s->dmap && (uint64_t)(s->nres + n) << TIER_LOAD_SHIFT > s->mask + 1; moved = 1)
        if (grow_table(s) < 0) return -1;
    Py_ssize_t need = s->nres + n > s->ent_len ? s->nres + n : s->ent_len;
    if (need > s->ent_cap) {
        moved = 1;
        if (grow_table_ents(s, need) < 0) return -1;
        Entry *c = ent_realloc(h->t[1].ent, sizeof(Entry) * (size_t)s->ent_len, sizeof(Entry) * (size_t)s->ent_cap);
        if (!c) { PyErr_NoMemory(); return -1; }
        h->t[1].ent = c;                                    /* (past ent_len: not read, ps_cent_take) */
    }
    if (moved) ps_sync(h);
    return 0;
}

/* the shared table out of direct mode for good (a key at or past its limit is to be added): dmap_hash (slots sized
 * as ps_open sized them, Hier.sh_want; aux left to the policies), the tiers' views synced. 0 or -1 */
static __attribute__((noinline)) int ps_hashed(Hier *h) {
    if (dmap_hash(h->sh, h->sh_want, 0) < 0) return -1;
    ps_sync(h);
    return 0;
}

/* before keys[0 .. n) are added to the shared table in direct mode: it stays direct when every key is below its
 * limit (dmap_below: sh_mode's rule), else ps_hashed. 0 or -1 */
static int ps_mode(Hier *h, const uint64_t *keys, Py_ssize_t n) {
    return dmap_below(h->sh, keys, n) ? 0 : ps_hashed(h);
}

/* entry e, in no tier now, leaves the shared table (direct: ddel, its dmap item; hashed: tdel, its slot) */
static inline void ps_del(Tier *s, int32_t e) {
    if (s->dmap) ddel(s, e);
    else tdel(s, e);
}

/* ps_fill's step for a resident entry x (e) of the shared table: a CPU block enters the GPU tier pinned once (0), a
 * GPU block gets one pin more, out of the GPU policy at its first (1: shared) */
static inline int ps_pin(Tier *g, Entry *x, int32_t e) {
    if (!(x->flags & F_GPU)) {
        x->pin = 1;
        x->flags |= F_GPU;
        return 0;
    }
    if (x->pin == 0) pol_remove(g, e);
    x->pin++;
    return 1;
}

/* ps_fill's keys in a table in direct mode (ps_mode: every key below its limit; ps_reserve: the room made): key k's
 * entry is dmap[k] - 1, no hash and no probe -- found, ps_pin (the shared count + its answer); absent, an entry taken
 * as tadd_take takes it (the free list, else past ent_len: the entries of the hashed table) and put as tadd_put puts
 * it, pinned once in the GPU tier, dmap[k] naming it, the CPU tier's entry taken (ps_cent_take). Key i +
 * PF_AHEAD's dmap item prefetched (for writing: an add stores there). ents (NULL: not wanted) gets each key's entry;
 * *made the new entries. Returns the keys found in the GPU tier (shared) */
static Py_ssize_t ps_fill_direct(Hier *h, const uint64_t *keys, Py_ssize_t n, int32_t *ents, Py_ssize_t *made) {
    Tier *const g = &h->t[0], *const s = h->sh;
    Entry *const ent = s->ent, *const cent = h->t[1].ent;     /* not moved below: ps_reserve made the room */
    int32_t *const dmap = s->dmap;
    int32_t free_head = s->free_head, ent_len = s->ent_len;
    Py_ssize_t shared = 0, nm = 0;
    for (Py_ssize_t i = 0; i < PF_AHEAD && i < n; i++) __builtin_prefetch(&dmap[keys[i]], 1, 1);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + PF_AHEAD < n) __builtin_prefetch(&dmap[keys[i + PF_AHEAD]], 1, 1);
        const uint64_t k = keys[i];
        int32_t e = dmap[k] - 1;
        if (e >= 0) {
            shared += ps_pin(g, &ent[e], e);
        } else {
            const int fresh = free_head < 0;                 /* (tadd_take: past ent_len) */
            e = tadd_take(ent, &free_head, &ent_len);
            Entry *const x = &ent[e];
            x->key = k;
            x->pin = 1;
            x->prev = x->next = -1;
            x->aux = -1;
            x->q = QNONE;
            x->flags = F_GPU;
            dmap[k] = e + 1;
            ps_cent_take(&cent[e], k, fresh);
            nm++;
        }
        if (ents) ents[i] = e;
    }
    s->free_head = free_head;
    s->ent_len = g->ent_len = h->t[1].ent_len = ent_len;
    *made = nm;
    return shared;
}

/* ps_fill's keys in a hashed table (ps_reserve: the room made): each key's probe, ps_pin when found, else a new
 * entry at the end of its probe run (tadd_atf's steps), pinned once in the GPU tier, the CPU tier's entry taken
 * (ps_cent_take). ents (NULL: not wanted) gets each key's entry; *made the new entries. Returns the keys found in the
 * GPU tier (shared) */
static Py_ssize_t ps_fill_hashed(Hier *h, const uint64_t *keys, Py_ssize_t n, int32_t *ents, Py_ssize_t *made) {
    Tier *const g = &h->t[0], *const s = h->sh;
    Entry *const ent = s->ent, *const cent = h->t[1].ent;     /* not moved below: ps_reserve made the room */
    OaSlot *const slots = s->slots;
    const uint64_t mask = s->mask;
    const int sh = 32 - s->bits;
    int32_t free_head = s->free_head, ent_len = s->ent_len;
    Py_ssize_t shared = 0, nm = 0;
    uint32_t ring[FP_RING];
    fp_ring_prime(ring, keys, n, slots, sh);
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint32_t f = fp_ring_take(ring, keys, i, n, slots, sh);
        const uint64_t k = keys[i];
        uint64_t j;
        int32_t e = fp_find(slots, ent, mask, sh, k, f, &j);
        if (e >= 0) {
            shared += ps_pin(g, &ent[e], e);
        } else {                                              /* tadd_atf at the end of its probe run */
            const int fresh = free_head < 0;                 /* (tadd_take: past ent_len) */
            e = tadd_take(ent, &free_head, &ent_len);
            tadd_put(&ent[e], &slots[j], e, k, 1, f);
            ent[e].flags = F_GPU;
            ps_cent_take(&cent[e], k, fresh);
            nm++;
        }
        if (ents) ents[i] = e;
    }
    s->free_head = free_head;
    s->ent_len = g->ent_len = h->t[1].ent_len = ent_len;
    *made = nm;
    return shared;
}

/* Tier.fill of the GPU tier in the shared table (tfill's rules, own_fill's counts): each key's entry (known: a
 * restore's, from the lookup; else found by dmap, ps_fill_direct, or by its probe, ps_fill_hashed, the table moved to
 * its slots first when a key is at or past the direct limit: ps_mode) -- a block of the CPU tier only enters the GPU
 * tier pinned once (its GPU fields were reset when it left the GPU tier), a GPU block is pinned once more (out of
 * the GPU policy at its first pin: pol_remove), an absent key gets a new entry pinned once (its CPU tier's fields
 * cleared and its key set there: ps_cent_take). ents (NULL: not wanted) gets each key's entry. Returns the keys
 * found in the GPU tier (shared), -1 */
static Py_ssize_t ps_fill(Hier *h, const uint64_t *keys, Py_ssize_t n, int32_t *ents, const int32_t *known) {
    Tier *g = &h->t[0], *s = h->sh;
    Py_ssize_t made = 0, shared = 0;
    if (known) {                                              /* a restore: the entries the lookup found */
        for (Py_ssize_t i = 0; i < n; i++) {
            shared += ps_pin(g, &s->ent[known[i]], known[i]);
            if (ents) ents[i] = known[i];
        }
    } else {
        if ((s->dmap && ps_mode(h, keys, n) < 0) || ps_reserve(h, n) < 0) return -1;
        shared = s->dmap ? ps_fill_direct(h, keys, n, ents, &made) : ps_fill_hashed(h, keys, n, ents, &made);
        s->nres += made;
    }
    const Py_ssize_t added = n - shared;
    g->nres += added;
    g->reserved -= added;
    g->inserted += added;
    if (g->nres > g->peak_res) g->peak_res = g->nres;
    return shared;
}

/* gpu_evict_ops in the shared table: n GPU victims chosen by the GPU policy at once (PolOps.victims), their entries
 * to h->vent for the cascade (ps_insert); each leaves the GPU tier (F_GPU and the GPU policy's flags cleared: not
 * known to it, so its number or segment is not read again; fifo's and slru's victims are in no queue already, links
 * -1) and stays in the table, in no tier until the cascade when the CPU tier does not hold it. 0 or -1 */
static int ps_gpu_evict(Hier *h, Py_ssize_t n) {
    Tier *g = &h->t[0];
    if (ensure_b(h, n) < 0) return -1;
    if (g->ops->evict_begin) g->ops->evict_begin(g, n);
    if (g->ops->victims(g, n, h->vent) < 0) return -1;
    Entry *const ent = g->ent;
    for (Py_ssize_t i = 0; i < n; i++) ent[h->vent[i]].flags &= F_CPU;
    g->held -= n;
    g->nres -= n;
    g->evicted += n;
    h->fps_n = 0;
    return 0;
}

/* entry e leaves the CPU tier (its CPU fields cleared, F_CPU off) and, in no tier now, the table. Its links are -1
 * already (fifo's and slru's victims and drops leave no queue link) and the CPU tier has no pins */
static inline void ps_cpu_leave(Hier *h, int32_t e) {
    Entry *x = &h->sh->ent[e], *y = &h->t[1].ent[e];
    x->flags &= (uint8_t)~F_CPU;
    y->aux = -1;
    y->q = QNONE;
    y->flags = 0;
    h->t[1].nres--;
    if (!(x->flags & F_GPU)) ps_del(h->sh, e);
}

/* tcut in the shared table: of the batch's entries ents[0..len) the first ones past the CPU tier's unpinned room are
 * pushed out (those in the tier dropped by its policy and evicted, the others overflow), each entry in no tier then
 * freed; returns how many */
static Py_ssize_t ps_cut(Hier *h, const int32_t *ents, Py_ssize_t len) {
    Tier *c = &h->t[1];
    Py_ssize_t room = c->capacity - c->nres - c->reserved + c->held;
    if (len <= room) return 0;
    Py_ssize_t cut = len - (room > 0 ? room : 0), gone = 0;
    for (Py_ssize_t i = 0; i < cut; i++) {
        const int32_t e = ents[i];
        if (h->sh->ent[e].flags & F_CPU) {
            pol_drop(c, e);
            ps_cpu_leave(h, e);
            gone++;
        } else if (!(h->sh->ent[e].flags & F_GPU)) {
            ps_del(h->sh, e);
        }
    }
    c->evicted += gone;
    c->overflow += cut - gone;
    return cut;
}

/* where the deletion of the entry of key k starts in the shared table s: its dmap item (direct) or its home slot */
static inline const void *ps_del_at(const Tier *s, uint64_t k) {
    return s->dmap ? (const void *)&s->dmap[k] : (const void *)&s->slots[home(s, k)];
}

/* the CPU tier's evictions of an insert: n victims chosen by its policy at once (to scratch), each leaving the tier
 * (and the table when the GPU tier does not hold it); 0 or -1. The victims are known before they leave: their
 * entries (the table's, the CPU tier's) are prefetched 2 x PF_AHEAD victims ahead and where their deletion starts
 * (ps_del_at: the home slot, a hashed table's probe starts there; the dmap item, direct) PF_AHEAD ahead, so the
 * misses of a batch overlap instead of following one another (the home slot was most of the time of ps_insert,
 * perf, Mooncake slru) */
static int ps_cpu_evict(Hier *h, Py_ssize_t n, int32_t *scratch) {
    Tier *c = &h->t[1], *s = h->sh;
    if (c->ops->evict_begin) c->ops->evict_begin(c, n);
    if (c->ops->victims(c, n, scratch) < 0) return -1;
    const Entry *const ent = s->ent, *const cent = c->ent;
    for (Py_ssize_t i = 0; i < n && i < 2 * PF_AHEAD; i++) {
        __builtin_prefetch(&ent[scratch[i]], 1, 1);
        __builtin_prefetch(&cent[scratch[i]], 1, 1);
    }
    for (Py_ssize_t i = 0; i < n && i < PF_AHEAD; i++)          /* (independent reads: their misses overlap) */
        __builtin_prefetch(ps_del_at(s, ent[scratch[i]].key), 1, 1);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + 2 * PF_AHEAD < n) {
            __builtin_prefetch(&ent[scratch[i + 2 * PF_AHEAD]], 1, 1);
            __builtin_prefetch(&cent[scratch[i + 2 * PF_AHEAD]], 1, 1);
        }
        if (i + PF_AHEAD < n) __builtin_prefetch(ps_del_at(s, ent[scratch[i + PF_AHEAD]].key), 1, 1);
        ps_cpu_leave(h, scratch[i]);
    }
    c->held -= n;
    c->evicted += n;
    return 0;
}

/* Tier.insert into the CPU tier of the shared table of the GPU victims whose entries are ents[0..len) (eviction
 * order; ps_gpu_evict), tinsert's steps: ps_cut, the batch's blocks the tier holds taken out of its policy
 * (pol_remove: resident again, re-added as reused; F_OUT kept through the evictions, which pass them), the new ones
 * flagged in the tier, the evictions for them, then the stored blocks -- every one of ents[start..len), in order -- in
 * runs of one flag (new, reused), each run one add_run and its add_end (tadd_batch's calls; a policy chooses its
 * victims from its own lists, never from the flags, so the new blocks' flags set before the evictions change no
 * choice). The pushed keys are counted, not written (the CPU tier is the last of two: the cascade drops them).
 * Returns their number, *written the new blocks stored; -1 on memory error. Scratch: h->mark (len marks) and
 * h->buf_a (the victims' entries; in the shared table the cascade's keys there are not read) */
static Py_ssize_t ps_insert(Hier *h, const int32_t *ents, Py_ssize_t len, Py_ssize_t *written) {
    Tier *c = &h->t[1];
    Entry *const ent = h->sh->ent, *const cent = c->ent;
    const Py_ssize_t start = ps_cut(h, ents, len);
    const Py_ssize_t free_ = c->capacity - c->nres - c->reserved;
    int32_t *const mark = h->mark;
    Py_ssize_t nfresh = 0;
    for (Py_ssize_t i = start; i < len; i++) {
        const int32_t e = ents[i];
        const int in = (ent[e].flags & F_CPU) != 0;
        mark[i] = in;
        if (in) {
            pol_remove(c, e);
        } else {                                      /* new in the tier: a flag (its CPU fields are clear) */
            ent[e].flags |= F_CPU;
            cent[e].flags = F_CPU;
            nfresh++;
        }
    }
    Py_ssize_t need = nfresh - free_;
    if (need > 0) {
        if (ps_cpu_evict(h, need, (int32_t *)h->buf_a) < 0) return -1;
    } else need = 0;
    c->nres += nfresh;
    Py_ssize_t run0 = start;
    for (Py_ssize_t i = start; i < len; i++) {
        if (mark[i] != mark[run0]) {
            if (add_run_end(c, ents + run0, i - run0, mark[run0]) < 0) return -1;
            run0 = i;
        }
        if (mark[i]) cent[ents[i]].flags &= (uint8_t)~F_OUT;
    }
    if (len > run0 && add_run_end(c, ents + run0, len - run0, mark[run0]) < 0) return -1;
    c->inserted += nfresh;
    if (c->nres > c->peak_res) c->peak_res = c->nres;
    if (c->nres + c->reserved > c->peak_used) c->peak_used = c->nres + c->reserved;
    *written = nfresh;
    return need + start;
}

/* one table for two tiers that both run fifo or slru (no gate, retain, hosted policy; write-back): the table sized
 * as sh_open sizes it (Hier.sh_want; direct: dmap_start, sh_open's rule), the CPU tier's entry array beside it.
 * 0 (shared or not) or -1 */
static int ps_open(Hier *h, Py_ssize_t expected, Py_ssize_t direct) {
    if (h->ntiers != 2 || h->write_through || h->sh) return 0;
    for (int j = 0; j < 2; j++) {
        const Tier *t = &h->t[j];
        if ((t->ops != &POL_FIFO && t->ops != &POL_SLRU) || t->gates || t->ret || t->py || t->pa) return 0;
    }
    Tier *s = kstore_new();
    if (!s) return -1;
    Py_ssize_t most = h->t[0].capacity + h->t[1].capacity + 1;
    Py_ssize_t want = expected < most ? expected : most;
    h->sh_want = want > 0 ? want : 0;
    Entry *cent = NULL;
    if ((most <= PS_ENT_ONCE && grow_table_ents(s, most) < 0) ||
        !(cent = ent_realloc(NULL, 0, sizeof(Entry) * (size_t)(s->ent_cap > 0 ? s->ent_cap : 1))) ||
        (!dmap_start(s, expected, direct) && want > 0 && grow_table_for(s, want) < 0)) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        kept_free(cent);
        kstore_free(s);
        return -1;
    }
    for (int j = 0; j < 2; j++) {
        tier_slots_free(&h->t[j]);
        h->t[j].shared = s;
        h->t[j].inflag = j ? F_CPU : F_GPU;
    }
    h->t[1].ent = cent;
    h->sh = s;
    ps_sync(h);
    return 0;
}

/* ps_check's steps for entry e of the shared table, in some tier: pins only on GPU blocks, no GPU policy field on
 * a block not in the GPU tier, the CPU tier's array agreeing with the table (its key, F_CPU); NULL or what is wrong */
static const char *ps_check_entry(const Hier *h, int32_t e) {
    const Entry *x = &h->sh->ent[e], *y = &h->t[1].ent[e];
    const uint8_t in = x->flags & (F_GPU | F_CPU);
    if (!in) return "an entry of the shared table in no tier";
    if (!(in & F_GPU) && x->pin) return "a pin count on a block not in the GPU tier";
    if (!(in & F_GPU) && (x->flags & ~F_CPU)) return "GPU policy fields on a block not in the GPU tier";
    if (((y->flags & F_CPU) != 0) != ((in & F_CPU) != 0)) return "the CPU tier's flag differs from the table's";
    if (y->key != x->key) return "the CPU tier's key differs from the table's";
    return NULL;
}

/* the shared table's own invariants with policy tiers: the tiers' views, every entry named by a slot (hashed) or
 * by dmap (direct: dmap_check; no free entry has the CPU tier's flag) in some tier, ps_check_entry's; NULL or what
 * is wrong */
static const char *ps_check(const Hier *h) {
    const Tier *s = h->sh;
    const char *why = NULL;
    for (int j = 0; j < 2; j++)
        if (h->t[j].slots != s->slots || h->t[j].mask != s->mask || h->t[j].ent_len != s->ent_len)
            return "a tier's view of the shared table is stale";
    if (h->t[0].ent != s->ent) return "the GPU tier does not read the shared entries";
    if (s->dmap) {
        if ((why = dmap_check(s))) return why;
        for (int32_t e = 0; e < s->ent_len; e++) {
            if (s->ent[e].flags & (F_GPU | F_CPU)) why = ps_check_entry(h, e);
            else if (h->t[1].ent[e].flags & F_CPU) why = "a free entry with the CPU tier's flag";
            if (why) return why;
        }
        return NULL;
    }
    Py_ssize_t occ = 0;
    for (uint64_t i = 0; i <= s->mask; i++) {
        int32_t e = s->slots[i].e;
        if (e < 0) continue;
        occ++;
        if ((why = ps_check_entry(h, e))) return why;
    }
    return occ == s->nres ? NULL : "shared table: slots used differ from its entries";
}
