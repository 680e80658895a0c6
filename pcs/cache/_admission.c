/* The admission policies of a tier, compiled: the twins of pcs/cache/admission_reuse.py (reuse:N),
 * admission_selective.py (selective:K) and admission_tinylfu.py (tinylfu; docs/semantics.md §8).
 *
 * A tier's gates (Tier.gates, all must admit, as pcs.cache.admission.CombinedAdmission) see every request's
 * lookup (gates_observe, called by the hierarchy's start as Hierarchy.start calls AdmissionPolicy.observe),
 * filter the new blocks offered to the tier (gates_filter, Tier._admit) and, for tinylfu, duel a candidate
 * against a victim (gates_duel, Tier._duel). The mechanism (pcs/cache/_lruhier.c, tinsert) applies them.
 *
 * reuse / selective keep a count per block counted (a key store: the count is the entry's pin field) and admit
 * a block whose count reached the threshold. tinylfu keeps the count-min sketch of
 * pcs.cache.admission_tinylfu.CountMinSketch exactly: depth 4, one byte per 4-bit counter saturating at 15,
 * width 2**bits, cell = (key x seed mod 2**64) >> (64 - bits) with the same four seeds, every counter halved
 * (and the addition count halved, rounded down) when `sample` additions that grew a counter are reached. The
 * Python side (pcs/cache/native.py, gate_specs) works out bits and sample from the bound Python policy, so the
 * two round alike. Equality: tests/cache/test_native_admission.py.
 */
#include "_lruhier.h"

#define GATE_REUSE 1
#define GATE_SELECTIVE 2
#define GATE_TINYLFU 3

/* the odd multipliers of the sketch rows (pcs.cache.admission_tinylfu._SEEDS) */
static const uint64_t SEEDS[4] = {0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL,
                                  0xD6E8FEB86659FD93ULL};

typedef struct Gate {
    int kind;
    int64_t threshold;      /* reuse: uses, selective: hits needed */
    Tier *counts;           /* reuse / selective: key -> count (pin field) */
    uint8_t *rows;          /* tinylfu: 4 rows of 2**bits counters */
    int bits;
    int64_t sample, additions;
} Gate;

static int gate_init(Gate *g, const char *kind, long long a, long long b) {
    memset(g, 0, sizeof(*g));
    if (!strcmp(kind, "reuse") || !strcmp(kind, "selective")) {
        g->kind = kind[0] == 'r' ? GATE_REUSE : GATE_SELECTIVE;
        g->threshold = a;
        g->counts = kstore_new();
        return g->counts ? 0 : -1;
    }
    if (!strcmp(kind, "tinylfu")) {
        if (a < 4 || a > 40 || b < 1) {
            PyErr_Format(PyExc_ValueError, "tinylfu gate: bits %lld (4..40), sample %lld (>= 1)", a, b);
            return -1;
        }
        g->kind = GATE_TINYLFU;
        g->bits = (int)a;
        g->sample = b;
        g->rows = PyMem_Calloc((size_t)4 << g->bits, 1);
        if (!g->rows) { PyErr_NoMemory(); return -1; }
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "no compiled admission policy %s", kind);
    return -1;
}

void gates_free(Tier *t) {
    for (int i = 0; i < t->ngates; i++) {
        kstore_free(t->gates[i].counts);
        PyMem_Free(t->gates[i].rows);
    }
    PyMem_Free(t->gates);
    PyMem_Free(t->gbuf);
    t->gates = NULL;
    t->gbuf = NULL;
    t->ngates = 0;
}

int gates_set(Tier *t, PyObject *specs) {
    PyObject *s = PySequence_Fast(specs, "admission gates must be a sequence");
    if (!s) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(s);
    if (n) {
        t->gates = PyMem_Calloc(n, sizeof(Gate));
        if (!t->gates) { Py_DECREF(s); PyErr_NoMemory(); return -1; }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *kind;
        long long a, b;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(s, i), "sLL", &kind, &a, &b)
            || gate_init(&t->gates[i], kind, a, b) < 0) { Py_DECREF(s); return -1; }
        t->ngates = (int)i + 1;
    }
    Py_DECREF(s);
    return 0;
}

/* one more count for key; 0 or -1 */
static int count_up(Tier *c, uint64_t key) {
    int32_t e = tfind(c, key);
    if (e >= 0) { c->ent[e].pin++; return 0; }
    return tadd(c, key, 1) < 0 ? -1 : 0;
}

static inline uint64_t cell(const Gate *g, int r, uint64_t key) {
    return ((uint64_t)r << g->bits) + ((key * SEEDS[r]) >> (64 - g->bits));
}

/* CountMinSketch.add: each row's counter +1 (up to 15); halve every counter after `sample` growing additions */
static void sketch_add(Gate *g, uint64_t key) {
    int grew = 0;
    for (int r = 0; r < 4; r++) {
        uint8_t *c = &g->rows[cell(g, r, key)];
        if (*c < 15) { (*c)++; grew = 1; }
    }
    if (grew && ++g->additions >= g->sample) {
        size_t size = (size_t)4 << g->bits;
        for (size_t i = 0; i < size; i++) g->rows[i] >>= 1;
        g->additions /= 2;
    }
}

/* CountMinSketch.estimate: the smallest of the key's counters */
static int sketch_estimate(const Gate *g, uint64_t key) {
    int m = 15;
    for (int r = 0; r < 4; r++) {
        int v = g->rows[cell(g, r, key)];
        if (v < m) m = v;
    }
    return m;
}

int gates_observe(Tier *t, const uint64_t *head, Py_ssize_t n, Py_ssize_t hits) {
    for (int i = 0; i < t->ngates; i++) {
        Gate *g = &t->gates[i];
        if (g->kind == GATE_TINYLFU) {
            for (Py_ssize_t k = 0; k < n; k++) sketch_add(g, head[k]);
            continue;
        }
        Py_ssize_t m = g->kind == GATE_REUSE ? n : hits;    /* a use: the whole head; a hit: the hit blocks */
        for (Py_ssize_t k = 0; k < m; k++)
            if (count_up(g->counts, head[k]) < 0) return -1;
    }
    return 0;
}

/* whether every counting gate admits key (tinylfu admits all; it duels) */
static int admits(const Tier *t, uint64_t key) {
    for (int i = 0; i < t->ngates; i++) {
        const Gate *g = &t->gates[i];
        if (g->kind == GATE_TINYLFU) continue;
        int32_t e = tfind(g->counts, key);
        if (e < 0 || g->counts->ent[e].pin < g->threshold) return 0;
    }
    return 1;
}

/* Tier._admit: t->gbuf = the batch's resident or admitted keys (batch order), then at gbuf + len its refused
 * new keys (*nref of them, batch order; counted in t->refused); returns the number kept, -1 on memory error */
Py_ssize_t gates_filter(Tier *t, const uint64_t *keys, Py_ssize_t len, Py_ssize_t *nref) {
    if (2 * len + 1 > t->gcap) {
        Py_ssize_t c = t->gcap ? t->gcap : 64;
        while (c < 2 * len + 1) c *= 2;
        uint64_t *b = PyMem_Realloc(t->gbuf, sizeof(uint64_t) * c);
        if (!b) { PyErr_NoMemory(); return -1; }
        t->gbuf = b;
        t->gcap = c;
    }
    Py_ssize_t kept = 0, r = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        if (tfind(t, keys[i]) >= 0 || admits(t, keys[i])) t->gbuf[kept++] = keys[i];
        else t->gbuf[len + r++] = keys[i];
    }
    t->refused += r;
    *nref = r;
    return kept;
}

int gates_duels(const Tier *t) {
    for (int i = 0; i < t->ngates; i++) if (t->gates[i].kind == GATE_TINYLFU) return 1;
    return 0;
}

int gates_duel(const Tier *t, uint64_t candidate, uint64_t victim) {
    for (int i = 0; i < t->ngates; i++) {
        const Gate *g = &t->gates[i];
        if (g->kind == GATE_TINYLFU && sketch_estimate(g, candidate) <= sketch_estimate(g, victim)) return 0;
    }
    return 1;
}
