/*
 * pcs.trace._jsonscan: a strict shortcut parser for clean chunks of Mooncake JSONL.
 *
 * Accepts a chunk only when every line is exactly one object with the four keys "timestamp",
 * "input_length", "output_length" and "hash_ids", each once, in any order, and nothing else:
 *   timestamp     a JSON number (an integer of at most 18 digits is converted from int64, any other
 *                 number by strtod after checking the JSON number grammar: both correctly rounded,
 *                 as Python's int -> float and float(str) are);
 *   input_length, output_length   JSON integers of at most 18 digits;
 *   hash_ids      an array of JSON non-negative integers below 2**64.
 * Whitespace: space, tab, CR (JSON's, LF ending the line). Anything else -- another key, a duplicate,
 * a string escape, a non-ASCII byte, a leading zero, a bool/null/string value, a number out of range --
 * makes the whole chunk fall back (return -1) to the next parser and finally the json.loads authority
 * of pcs/trace/hashids.py, which names errors; tests/trace/test_jsonl_fast.py diffs this path against it.
 * ------------------------------------------------------------------------- */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p, *end;
} cur_t;

static inline void ws(cur_t *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r')) c->p++;
}

static inline int isdig(char ch) { return ch >= '0' && ch <= '9'; }

/* A JSON integer (optional minus, no leading zero) of at most 18 digits into *out; 0 ok, -1 not one. */
static int json_int(cur_t *c, int64_t *out) {
    const char *p = c->p;
    int neg = p < c->end && *p == '-';
    p += neg;
    if (p >= c->end || !isdig(*p)) return -1;
    if (*p == '0' && p + 1 < c->end && isdig(p[1])) return -1;
    int64_t v = 0;
    const char *start = p;
    while (p < c->end && isdig(*p)) v = v * 10 + (*p++ - '0');
    if (p - start > 18) return -1;
    if (p < c->end && (*p == '.' || *p == 'e' || *p == 'E')) return -1;
    *out = neg ? -v : v;
    c->p = p;
    return 0;
}

/* A JSON number into *out (see the header); 0 ok, -1 not one. */
static int json_number(cur_t *c, double *out) {
    int64_t iv;
    cur_t save = *c;
    if (json_int(c, &iv) == 0) { *out = (double)iv; return 0; }
    *c = save;
    const char *p = c->p;
    if (p < c->end && *p == '-') p++;
    if (p >= c->end || !isdig(*p)) return -1;
    if (*p == '0' && p + 1 < c->end && isdig(p[1])) return -1;
    while (p < c->end && isdig(*p)) p++;
    if (p < c->end && *p == '.') {
        p++;
        if (p >= c->end || !isdig(*p)) return -1;
        while (p < c->end && isdig(*p)) p++;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < c->end && (*p == '+' || *p == '-')) p++;
        if (p >= c->end || !isdig(*p)) return -1;
        while (p < c->end && isdig(*p)) p++;
    }
    if (!memchr(c->p, '.', (size_t)(p - c->p)) && !memchr(c->p, 'e', (size_t)(p - c->p)) &&
        !memchr(c->p, 'E', (size_t)(p - c->p)))
        return -1; /* an integer of more than 18 digits: the authority decides */
    if (p - c->p > 400) return -1;
    char buf[512];
    memcpy(buf, c->p, (size_t)(p - c->p));
    buf[p - c->p] = 0;
    char *e;
    *out = strtod(buf, &e);
    if (e != buf + (p - c->p)) return -1;
    c->p = p;
    return 0;
}

/* "hash_ids": [u64, ...] appended to ids[*n ..] (capacity cap); 0 ok, -1 not clean. */
static int json_ids(cur_t *c, uint64_t *ids, int64_t *n, int64_t cap) {
    if (c->p >= c->end || *c->p != '[') return -1;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == ']') { c->p++; return 0; }
    for (;;) {
        const char *p = c->p;
        if (p >= c->end || !isdig(*p)) return -1;
        if (*p == '0' && p + 1 < c->end && isdig(p[1])) return -1;
        uint64_t v = 0;
        while (p < c->end && isdig(*p)) {
            uint64_t d = (uint64_t)(*p++ - '0');
            if (v > (UINT64_MAX - d) / 10) return -1;
            v = v * 10 + d;
        }
        if (p < c->end && (*p == '.' || *p == 'e' || *p == 'E')) return -1;
        if (*n >= cap) return -1;
        ids[(*n)++] = v;
        c->p = p;
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ']') { c->p++; return 0; }
        if (*c->p != ',') return -1;
        c->p++;
        ws(c);
    }
}

/* Which of the four keys the quoted key at c is (0-3), -1 for anything else. */
static int json_key(cur_t *c) {
    static const char *names[4] = {"timestamp", "input_length", "output_length", "hash_ids"};
    if (c->p >= c->end || *c->p != '"') return -1;
    const char *q = memchr(c->p + 1, '"', (size_t)(c->end - c->p - 1));
    if (!q) return -1;
    size_t len = (size_t)(q - c->p - 1);
    for (int k = 0; k < 4; k++)
        if (strlen(names[k]) == len && memcmp(c->p + 1, names[k], len) == 0) { c->p = q + 1; return k; }
    return -1;
}

typedef struct { double *ts; int64_t *il, *ol, *lens; uint64_t *ids; int64_t nids, cap; } out_t;

/* One line [c->p, c->end) as row r; 0 ok, -1 not clean. */
static int json_line(cur_t *c, out_t *o, int64_t r) {
    int seen = 0;
    ws(c);
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    for (int m = 0; m < 4; m++) {
        ws(c);
        int k = json_key(c);
        if (k < 0 || (seen >> k) & 1) return -1;
        seen |= 1 << k;
        ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        ws(c);
        int64_t before = o->nids;
        int rc = k == 0 ? json_number(c, &o->ts[r]) : k == 1 ? json_int(c, &o->il[r])
               : k == 2 ? json_int(c, &o->ol[r]) : json_ids(c, o->ids, &o->nids, o->cap);
        if (rc != 0) return -1;
        if (k == 3) o->lens[r] = o->nids - before;
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p != (m == 3 ? '}' : ',')) return -1;
        c->p++;
    }
    ws(c);
    return c->p == c->end ? 0 : -1;
}

/* Every line of the chunk; the number of ids, or -1 (not clean) / -2 (more lines than rows). */
static int64_t json_chunk(const char *buf, int64_t len, out_t *o, int64_t rows) {
    const char *p = buf, *end = buf + len;
    int64_t r = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (r >= rows) return -2;
        cur_t c = {p, le};
        if (json_line(&c, o, r) != 0) return -1;
        r++;
        p = nl ? nl + 1 : end;
    }
    return r == rows ? o->nids : -2;
}

static PyObject *py_parse(PyObject *self, PyObject *args) {
    Py_buffer chunk, ts, il, ol, lens, ids;
    if (!PyArg_ParseTuple(args, "y*w*w*w*w*w*", &chunk, &ts, &il, &ol, &lens, &ids)) return NULL;
    PyObject *result = NULL;
    int64_t rows = ts.len / 8;
    if (il.len != ts.len || ol.len != ts.len || lens.len != ts.len || ids.len % 8) {
        PyErr_SetString(PyExc_ValueError, "ts, il, ol, lens: 8-byte buffers of one length per line; ids: uint64");
        goto done;
    }
    out_t o = {(double *)ts.buf, (int64_t *)il.buf, (int64_t *)ol.buf, (int64_t *)lens.buf, (uint64_t *)ids.buf,
               0, ids.len / 8};
    int64_t n;
    Py_BEGIN_ALLOW_THREADS
    n = json_chunk((const char *)chunk.buf, chunk.len, &o, rows);
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(n);
done:
    PyBuffer_Release(&chunk); PyBuffer_Release(&ts); PyBuffer_Release(&il); PyBuffer_Release(&ol);
    PyBuffer_Release(&lens); PyBuffer_Release(&ids);
    return result;
}

static PyMethodDef methods[] = {
    {"parse_mooncake", py_parse, METH_VARARGS,
     "parse_mooncake(chunk: bytes, ts: float64 (R,), il, ol, lens: int64 (R,), ids: uint64 (cap,), all writable) "
     "-> ids written, or -1 (a line is not clean: fall back), -2 (the chunk has another number of lines than R)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "pcs.trace._jsonscan",
                                        "Strict compiled shortcut parser for clean Mooncake JSONL chunks.", -1, methods};

PyMODINIT_FUNC PyInit__jsonscan(void) { return PyModule_Create(&module_def); }
