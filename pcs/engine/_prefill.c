/*
 * pcs.engine._prefill: the replay's prefill tables (pcs.engine.timing.TimeModel.tables) in one pass.
 *
 * The compiled twin of pcs.engine.timing._prefill_table_numpy (the plain numpy reference;
 * tests/engine/test_prefill_table.py diffs the two). Row i of the table holds, for h = 0 .. its length - 1
 * (hit blocks), prefill_s(n, c) with c = min(h x bs, P_i) cached and n = P_i - c new tokens, where
 * pcs.compute.ComputeModel gives prefill_s = (2 x active_params x n + attention_flops(n, c)) / flops_per_s and
 * attention_flops = 0 + k_1 x pairs + ... + k_K x pairs with pairs = n c + n (n + 1) / 2 (causal attention,
 * pcs.model.components.causal_pairs), one k per component, summed in the components' order
 * (pcs.model.spec.ModelSpec.attention_flops). The same float64 operations in the same order as that numpy code,
 * so the same values: built with -ffp-contract=off (no fused multiply-add).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define MAX_TERMS 16                                   /* components of a model (presets have at most 3) */

typedef struct { double a2, fps, k[MAX_TERMS]; int nk; int64_t bs; } terms_t;

/* Entries h0 .. h0 + len - 1 of one row of a one-term model (every preset but the hybrids), len < 2^31, with an
 * int32 counter: h0 + (double)h is the exact entry index (both whole, below 2^53), hence the same product as
 * (double)(h0 + h). Inlined into its two callers: pf_row1 (h0 = -0.0, which x + -0.0 = x lets the compiler drop)
 * and pf_row's runs past the first 2^31 - 1 entries. */
static inline __attribute__((always_inline)) void pf_run(double *restrict out, int32_t len, double h0, double pd,
                                                         double bsd, double a2, double fps, double k0) {
    for (int32_t h = 0; h < len; h++) {
        double hb = (h0 + (double)h) * bsd;
        double c = hb < pd ? hb : pd;
        double n = pd - c;
        double pairs = n * c + n * (n + 1.0) / 2.0;
        double attn = 0.0 + k0 * pairs;
        out[h] = (a2 * n + attn) / fps;
    }
}

/* One row of a one-term model from entry 0 (pf_run): the int32 counter's conversion to double has a packed form
 * (the int64 one has none before AVX-512), so the compiler vectorises the row: the same operations per entry,
 * each lane IEEE-rounded as the scalar one, so the same bits. Built twice on x86-64 Linux (GCC's target_clones:
 * AVX2, four entries a step, and the baseline, two; ifunc needs glibc), the loader picking the one the CPU runs. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void pf_row1(double *restrict out, int32_t len, double pd, double bsd, double a2, double fps, double k0) {
    pf_run(out, len, -0.0, pd, bsd, a2, fps, k0);
}

/* One row: out[h] for h = 0 .. len - 1 of prompt p (tokens). The terms in locals (a store into out may alias
 * them otherwise: reloaded each entry) and c in doubles: (double)min(h bs, p) = min((double)h (double)bs,
 * (double)p) -- the conversion rounds monotonically and the product of two exact doubles is the rounded exact
 * product -- so the entries are the same bits, and the loop has no int-to-float conversion (the compiler may
 * vectorise it; the operations per entry are those of the numpy code, in its order). One term (every preset
 * model but the hybrids) without the inner loop. */
static void pf_row(double *out, int64_t len, int64_t p, const terms_t *t) {
    const double pd = (double)p, bsd = (double)t->bs, a2 = t->a2, fps = t->fps;
    if (t->nk == 1 && len <= INT32_MAX) {
        pf_row1(out, (int32_t)len, pd, bsd, a2, fps, t->k[0]);
        return;
    }
    if (t->nk == 1) {   /* a row of 2^31 entries or more: runs of at most 2^31 - 1, not vectorised */
        for (int64_t h0 = 0; h0 < len; h0 += INT32_MAX) {
            int64_t run = len - h0 < INT32_MAX ? len - h0 : INT32_MAX;
            pf_run(out + h0, (int32_t)run, (double)h0, pd, bsd, a2, fps, t->k[0]);
        }
        return;
    }
    double k[MAX_TERMS];
    const int nk = t->nk;
    for (int j = 0; j < nk; j++) k[j] = t->k[j];
    for (int64_t h = 0; h < len; h++) {
        double hb = (double)h * bsd;
        double c = hb < pd ? hb : pd;
        double n = pd - c;
        double pairs = n * c + n * (n + 1.0) / 2.0;
        double attn = 0.0;
        for (int j = 0; j < nk; j++) attn = attn + k[j] * pairs;
        out[h] = (a2 * n + attn) / fps;
    }
}

/* Parse the terms tuple (a2, fps, (k_1, ..., k_K)) and the block size; 0 on success, -1 with an exception set. */
static int pf_terms(PyObject *ks, double a2, double fps, long long bs, terms_t *t) {
    PyObject *seq = PySequence_Fast(ks, "prefill_table: ks must be a sequence of floats");
    if (!seq) return -1;
    Py_ssize_t nk = PySequence_Fast_GET_SIZE(seq);
    if (nk > MAX_TERMS || bs < 1) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "prefill_table: at most %d terms and block size >= 1", MAX_TERMS);
        return -1;
    }
    for (Py_ssize_t j = 0; j < nk; j++) {
        t->k[j] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, j));
        if (t->k[j] == -1.0 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
    }
    Py_DECREF(seq);
    t->nk = (int)nk; t->a2 = a2; t->fps = fps; t->bs = (int64_t)bs;
    return 0;
}

/* prefill_table(out, prompt, offsets, block_size, a2, fps, ks) -> None.
 * out: writable float64 buffer of offsets[m] entries; prompt: int64 (m,), tokens >= 0; offsets: int64 (m + 1,),
 * ascending from 0 (row i is out[offsets[i] .. offsets[i + 1])). Raises ValueError on sizes that do not fit. */
static PyObject *py_prefill_table(PyObject *self, PyObject *args) {
    Py_buffer out, pr, off;
    long long bs;
    double a2, fps;
    PyObject *ks;
    if (!PyArg_ParseTuple(args, "w*y*y*LddO", &out, &pr, &off, &bs, &a2, &fps, &ks)) return NULL;
    terms_t t;
    PyObject *ret = NULL;
    int64_t m = pr.len / 8, total = out.len / 8;
    const int64_t *p = (const int64_t *)pr.buf, *o = (const int64_t *)off.buf;
    if (pf_terms(ks, a2, fps, bs, &t) < 0) goto done;
    if (off.len != (m + 1) * 8 || o[0] != 0 || o[m] != total) {
        PyErr_SetString(PyExc_ValueError, "prefill_table: offsets must have len(prompt) + 1 entries from 0 to len(out)");
        goto done;
    }
    for (int64_t i = 0; i < m; i++)
        if (o[i + 1] < o[i] || p[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "prefill_table: offsets must ascend and prompts be >= 0");
            goto done;
        }
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < m; i++) pf_row((double *)out.buf + o[i], o[i + 1] - o[i], p[i], &t);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    ret = Py_None;
done:
    PyBuffer_Release(&out); PyBuffer_Release(&pr); PyBuffer_Release(&off);
    return ret;
}

static PyMethodDef methods[] = {
    {"prefill_table", py_prefill_table, METH_VARARGS,
     "prefill_table(out, prompt, offsets, block_size, a2, fps, ks): fill out (float64) with the rows of "
     "pcs.engine.timing.TimeModel's prefill table: (a2 n + sum_j ks[j] (n c + n (n + 1) / 2)) / fps per entry."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_prefill", NULL, -1, methods};

PyMODINIT_FUNC PyInit__prefill(void) { return PyModule_Create(&moddef); }
