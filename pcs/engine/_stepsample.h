/*
 * The step loop's time-series sampler in C: the rule of pcs.engine.series.Sampler.take (the Python reference,
 * docs/semantics.md §11) over rows of plain numbers, so the compiled loop records a sample without calling Python
 * (no GIL round trip per sample: a few hundred per run).
 *
 * The rule, with Sampler.take's float operations in its order (pcs/engine/_stepsched.c is built with
 * -ffp-contract=off): the first call's time is t0; a call at `now` records every boundary t0 + k x step <= now not
 * yet recorded (k = the number of rows so far, up to the last such k), each with the state at `now`; past
 * `max` boundaries <= now (counted by that same test t0 + k x step <= now, not by the quotient) the step doubles
 * and every other row is kept (Sampler._coarsen); the next boundary is t0 + rows x step. Rows: the boundary, then
 * the state as Sampler's snapshot (admitted, waiting, per tier resident blocks, restored bytes and link-free time,
 * running). Included after pcs/_nogil.h (raw memory: the loop may run without the GIL). The equality with the
 * reference: tests/engine/test_stepsched_native.py (the series of the C loop against
 * pcs.engine.scheduler.StepEngine's) and tests/engine/test_stepsample.py.
 */
#ifndef PCS_STEPSAMPLE_H
#define PCS_STEPSAMPLE_H
#include <stdint.h>

#define SAMP_TIERS 8                 /* the loop's most tiers (stepnative.MAX_TIERS) */

typedef struct {                     /* a row: the boundary, then the state (Sampler's snapshot) */
    double t; int64_t adm, wait, run;
    int64_t res[SAMP_TIERS], nb[SAMP_TIERS]; double lf[SAMP_TIERS];
} SampRow;
/* sample_block() hands the rows over as these bytes, read by pcs.engine.series.SAMPLE_ROW (the same fields, in order) */
_Static_assert(sizeof(SampRow) == 8 * (4 + 3 * SAMP_TIERS), "SampRow: 8-byte fields, no padding (SAMPLE_ROW)");
typedef struct {
    int on, has_t0;                  /* on: the loop samples here (samp_start), else through Sampler.take */
    int64_t max;                     /* Sampler.max_samples */
    double t0, step;                 /* the first boundary (with has_t0), the current step, s */
    SampRow *rows; Py_ssize_t n, cap;
} Samp;

/* Sampler._coarsen: double the step, keep every other row (rows 0, 2, 4, ...). */
static void samp_coarsen(Samp *sp) {
    sp->step *= 2;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < sp->n; i += 2) sp->rows[k++] = sp->rows[i];
    sp->n = k;
}

/* The largest k with t0 + k x step <= now (that double expression, the rows' times; Sampler's _last_boundary): the
 * quotient, walked up or down by float error (t0 + k x step never decreases with k). The quotient must fit int64
 * (samp_last makes sure). */
static int64_t samp_lastk(double t0, double step, double now) {
    int64_t k = (int64_t)((now - t0) / step);
    while (t0 + (double)(k + 1) * step <= now) k++;   /* a quotient rounded down by float error */
    while (t0 + (double)k * step > now) k--;          /* or up */
    return k;
}

/* The last boundary <= now (its index from t0) after coarsening as Sampler.take does: while more than max
 * boundaries are <= now (counted by samp_lastk, as Sampler counts them), the step doubles (Sampler's _fit); the
 * first call sets t0. now >= t0 always (the loop calls at its clock, which never goes back). A quotient of at least 2 max (as a
 * double: one past int64, a clock far from t0 at a small step, never reaches a C cast) coarsens first without
 * the count: it means boundary max is <= now however the quotient rounded (fl(max x step) < now - t0), so
 * Sampler's count would coarsen too. */
static int64_t samp_last(Samp *sp, double now) {
    if (!sp->has_t0) { sp->t0 = now; sp->has_t0 = 1; }
    double t0 = sp->t0;
    while ((now - t0) / sp->step >= 2.0 * (double)sp->max) samp_coarsen(sp);
    int64_t last = samp_lastk(t0, sp->step, now);
    while (last + 1 > sp->max) {
        samp_coarsen(sp);
        last = samp_lastk(t0, sp->step, now);
    }
    return last;
}

/* Rows n .. last, each boundary t0 + k x step with the state `st`; 0, or -1 without memory (no error set). */
static int samp_record(Samp *sp, const SampRow *st, int64_t last) {
    if (last + 1 > sp->cap) {
        Py_ssize_t cap = sp->cap ? sp->cap : 64;
        while (cap < last + 1) cap *= 2;
        SampRow *r = (SampRow *)PyMem_Realloc(sp->rows, sizeof(SampRow) * (size_t)cap);
        if (!r) return -1;
        sp->rows = r; sp->cap = cap;
    }
    for (int64_t k = sp->n; k <= last; k++) {
        sp->rows[k] = *st;
        sp->rows[k].t = sp->t0 + (double)k * sp->step;
    }
    sp->n = last + 1;
    return 0;
}

/* The next boundary (Sampler.next_s after a call). */
static double samp_next(const Samp *sp) { return sp->t0 + (double)sp->n * sp->step; }

#endif
