/* pcs/_kept.h: page-backed buffers kept between calls, process-wide (per module: each extension that includes this
 * header has its own pool).
 *
 * A replay's big per-call arrays (the step loop's per-request columns, pcs/engine/_stepsched.c) were malloc'd,
 * freed when the call's result died, and given back to the kernel by glibc (munmap above its mmap threshold, the
 * heap's top trimmed below it); the next call faulted every 4 KiB page in afresh, each fault clearing its page: about
 * 4,300 minor faults a steady 10x Mooncake call on the calling thread, in the step loop's first writes to each row
 * (docs/performance.md, "The calling thread's page faults"); likewise the compiled hierarchy's entry and order
 * arrays (pcs/cache/_lruhier.h, _lruq.h: kept_alloc / kept_free). kept_take / kept_give keep such mappings instead: a
 * mapping given back is held for the next taker of about its size (at least the bytes asked, at most twice; with
 * kept_take_upto, up to a larger bound: a JSONL reader's id arena, whose room is then the whole mapping), whose
 * pages are then resident already. Contents of a taken mapping are undefined (a fresh one reads as zeros): takers
 * write every byte they read -- or, for a taker that needs zeros (the one-pass scan's arrays, pcs/engine/_lruscan.c),
 * kept_take_dirty tells how many of its first bytes its giver may have written (kept_give_dirty), to clear those.
 * Since 2026-12-05 the scan's arrays and the id arenas (pcs/trace/_jsonrows.cpp) have pools of their own too
 * (docs/performance.md, "Fresh pages a call").
 *
 * Bounds: KEPT_SLOTS mappings and KEPT_MAX_BYTES of them at most (64 MiB unless the module defines its own before
 * including this header); a mapping that does not fit is unmapped, after the kept ones smaller than it (the larger
 * buffers are the ones whose faults cost). Sizes are rounded up to 4 KiB pages; memory is mapped MAP_PRIVATE |
 * MAP_ANONYMOUS, from 4 MiB on 2 MiB aligned (kept_map), with no huge-page advice of the pool's own (with THP
 * "madvise", 4 KiB pages: a fault on a 2 MiB page clears all of it, and the columns are written once,
 * sequentially; a taker that reads at random advises its mapping itself, and the advice stays with the mapping).
 * The pool's lock is a spin flag held for a scan of KEPT_SLOTS entries: kept_give may run where the GIL is not held.
 */
#ifndef PCS_KEPT_H
#define PCS_KEPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KEPT_SLOTS 48                          /* a 2-tier 10x call's columns: 19 of the run, 3 of the no-cache run */
#ifndef KEPT_MAX_BYTES                         /* a module may set its own bound before including this header */
#define KEPT_MAX_BYTES ((size_t)64 << 20)      /* kept at most: the columns of a call of about 400,000 requests */
#endif
#define KEPT_PAGE ((size_t)4096)
#define KEPT_MIN_BYTES ((size_t)128 << 10)     /* takers malloc below this (glibc's default mmap threshold) */
#define KEPT_ALIGN ((size_t)2 << 20)           /* a transparent huge page */
#define KEPT_ALIGN_FROM ((size_t)4 << 20)      /* new mappings this large are KEPT_ALIGN aligned (kept_map) */

/* p NULL: a free slot; dirty: the bytes from p's start that may be nonzero (kept_give_dirty) */
static struct { void *p; size_t bytes, dirty; } kept_slot[KEPT_SLOTS];
static size_t kept_total;                                         /* bytes held in kept_slot */
static char kept_busy;

static inline void kept_lock(void) {
    while (__atomic_test_and_set(&kept_busy, __ATOMIC_ACQUIRE)) {
    }   /* held for a scan of the slots */
}
static inline void kept_unlock(void) { __atomic_clear(&kept_busy, __ATOMIC_RELEASE); }

/* `bytes` rounded up to whole pages (at least one) */
static inline size_t kept_round(size_t bytes) { return bytes ? (bytes + KEPT_PAGE - 1) & ~(KEPT_PAGE - 1) : KEPT_PAGE; }

/* A new mapping of `want` bytes (whole pages), from KEPT_ALIGN_FROM bytes on aligned to KEPT_ALIGN (2 MiB: a
 * taker that advises transparent huge pages gets them over the whole mapping, not only over its aligned middle);
 * NULL when the kernel gives no memory. */
static inline void *kept_map(size_t want) {
    const size_t extra = want >= KEPT_ALIGN_FROM ? KEPT_ALIGN : 0;
    char *p = (char *)mmap(NULL, want + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == (char *)MAP_FAILED) return NULL;
    if (!extra) return p;
    const size_t head = (KEPT_ALIGN - ((uintptr_t)p & (KEPT_ALIGN - 1))) & (KEPT_ALIGN - 1);
    if (head) munmap(p, head);                              /* the parts before and after the aligned span */
    if (extra - head) munmap(p + head + want, extra - head);
    return p + head;
}

/* A mapping of at least `need` bytes: the smallest kept one of need .. max(2 x need, `most`) bytes (rounded to
 * pages), else a new one of need bytes. Its mapped size in *got (what kept_give wants back); in *dirty how many of
 * its first bytes may be nonzero (what its giver said, kept_give_dirty; 0 for a new mapping, whose pages read as
 * zero and none is resident yet). NULL when the kernel gives no memory (no exception set). */
static inline void *kept_take_upto(size_t need, size_t most, size_t *got, size_t *dirty) {
    const size_t want = kept_round(need);
    int best = -1;
    kept_lock();
    for (int i = 0; i < KEPT_SLOTS; i++) {
        const size_t b = kept_slot[i].bytes;
        if (kept_slot[i].p && b >= want && (b / 2 <= want || b <= most) && (best < 0 || b < kept_slot[best].bytes))
            best = i;
    }
    void *p = NULL;
    if (best >= 0) {
        p = kept_slot[best].p;
        *got = kept_slot[best].bytes;
        *dirty = kept_slot[best].dirty;
        kept_total -= *got;
        kept_slot[best].p = NULL, kept_slot[best].bytes = kept_slot[best].dirty = 0;
    }
    kept_unlock();
    if (p) return p;
    p = kept_map(want);
    if (p) *got = want, *dirty = 0;
    return p;
}

/* kept_take_upto of a mapping of need .. 2 x need bytes */
static inline void *kept_take_dirty(size_t need, size_t *got, size_t *dirty) {
    return kept_take_upto(need, 0, got, dirty);
}

/* kept_take_dirty for a taker that writes every byte it reads (contents undefined) */
static inline void *kept_take(size_t need, size_t *got) {
    size_t dirty;
    return kept_take_dirty(need, got, &dirty);
}

/* the kept slot to drop for a mapping of `bytes` when the pool is full (the smallest kept one, if smaller), or -1 */
static inline int kept_victim(size_t bytes) {
    int v = -1;
    for (int i = 0; i < KEPT_SLOTS; i++)
        if (kept_slot[i].p && kept_slot[i].bytes < bytes && (v < 0 || kept_slot[i].bytes < kept_slot[v].bytes)) v = i;
    return v;
}

/* mapping p of `bytes` mapped bytes (kept_take's *got) given back, nothing past its first `dirty` bytes nonzero
 * (for kept_take_dirty): kept for a later kept_take when the bounds allow (dropping smaller kept ones to make
 * room), else unmapped. p NULL: nothing. */
static inline void kept_give_dirty(void *p, size_t bytes, size_t dirty) {
    if (!p) return;
    void *drop[KEPT_SLOTS + 1];
    size_t drop_bytes[KEPT_SLOTS + 1];
    int nd = 0, slot = -1;
    kept_lock();
    if (bytes <= KEPT_MAX_BYTES) {
        for (;;) {
            slot = -1;
            for (int i = 0; i < KEPT_SLOTS && slot < 0; i++) if (!kept_slot[i].p) slot = i;
            if (slot >= 0 && kept_total + bytes <= KEPT_MAX_BYTES) break;
            const int v = kept_victim(bytes);
            if (v < 0) { slot = -1; break; }
            drop[nd] = kept_slot[v].p, drop_bytes[nd++] = kept_slot[v].bytes;
            kept_total -= kept_slot[v].bytes;
            kept_slot[v].p = NULL, kept_slot[v].bytes = kept_slot[v].dirty = 0;
        }
    }
    if (slot >= 0) {
        kept_slot[slot].p = p, kept_slot[slot].bytes = bytes, kept_total += bytes;
        kept_slot[slot].dirty = dirty < bytes ? dirty : bytes;
    }
    kept_unlock();
    if (slot < 0) drop[nd] = p, drop_bytes[nd++] = bytes;
    for (int i = 0; i < nd; i++) munmap(drop[i], drop_bytes[i]);
}

/* mapping p of `bytes` mapped bytes given back, any of it possibly nonzero */
static inline void kept_give(void *p, size_t bytes) { kept_give_dirty(p, bytes, bytes); }

/* kept_alloc / kept_free: malloc-like arrays on the pool for C code that frees without a size (a table's entry
 * and order arrays, pcs/cache/_lruhier.h ent_realloc, pcs/cache/_lruq.h): a 64-byte header before the array holds
 * the mapping's size (0: the block is posix_memalign's, below KEPT_MIN_BYTES). 64-byte aligned, contents
 * undefined; NULL when no memory (no exception set). */
#define KEPT_HEAD ((size_t)64)
static inline void *kept_alloc(size_t bytes) {
    char *p = NULL;
    size_t got = 0;
    if (bytes + KEPT_HEAD < KEPT_MIN_BYTES) {
        if (posix_memalign((void **)&p, KEPT_HEAD, bytes + KEPT_HEAD) != 0) return NULL;
    } else if (!(p = (char *)kept_take(bytes + KEPT_HEAD, &got))) {
        return NULL;
    }
    memcpy(p, &got, sizeof got);
    return p + KEPT_HEAD;
}

/* an array of kept_alloc given back (NULL: nothing) */
static inline void kept_free(void *q) {
    if (!q) return;
    char *p = (char *)q - KEPT_HEAD;
    size_t got;
    memcpy(&got, p, sizeof got);
    if (got) kept_give(p, got);
    else free(p);
}

/* every kept mapping unmapped (tests: a pool of known contents, whatever earlier tables and columns left; a
 * caller's release of the memory kept); returns how many */
static inline int kept_clear(void) {
    for (int n = 0;; n++) {
        void *p = NULL;
        size_t bytes = 0;
        kept_lock();
        for (int i = 0; i < KEPT_SLOTS && !p; i++)
            if (kept_slot[i].p) {
                p = kept_slot[i].p, bytes = kept_slot[i].bytes;
                kept_slot[i].p = NULL, kept_slot[i].bytes = kept_slot[i].dirty = 0;
            }
        kept_total -= bytes;
        kept_unlock();
        if (!p) return n;
        munmap(p, bytes);
    }
}

/* the bytes kept now (tests, docs) */
static inline size_t kept_held(void) {
    kept_lock();
    const size_t b = kept_total;
    kept_unlock();
    return b;
}

#endif
