/*
 * pcs.trace._jsonrows: a chunk of block-id JSONL rows (Mooncake, Bailian) decoded into columns, or "fall back".
 *
 * The compiled twin of the shortcut parsers of pcs/trace/jsonfast.py; the authority that accepts, rejects
 * and names errors stays the line-by-line json.loads path of pcs/trace/hashids.py, and this decoder only
 * turns a chunk whose every line it can take into the reader's columns. Each line (LF-terminated, as
 * pcs.trace.source.iter_lines; the file's last line may lack the LF) is parsed on its own with simdjson's
 * On-Demand parser (simdjson 3.x, the copy pysimdjson ships: simdjson.h / simdjson.cpp, compiled in at build
 * time): its stage 1 indexes the line and validates UTF-8, then every field is read as the row is walked --
 * each key unescaped, each value parsed and checked as it is reached (a missing comma or colon, a bad
 * literal or number is an error there) -- and the document must end after the object (document::at_end),
 * so a line holds exactly one JSON value and trailing whitespace (' ', \t, \r) is
 * allowed, as json.loads does; a line must start with '{' (so no blank, indented or BOM-led line, which
 * simdjson and json.loads treat differently, is taken). A line is taken when it is an object whose keys are exactly the format's:
 * timestamp (any JSON number), input_length and output_length (int64), hash_ids (an array of integers in
 * [0, 2**64)), the spec's int64 extras, the optional "reuse" string ("recorded" | "synthetic") and, for typed
 * formats, the optional "type" string or null -- each key once. Anything else (blank line, bad JSON, a
 * repeated, unknown or missing key, another JSON type, an integer beyond its range, a bool, a float
 * negative-zero timestamp, an id written "-0") returns None for the whole chunk; the caller re-reads it with the authority. Value
 * checks that need no parse (lengths >= 0, ids per row, order, repeats) are the caller's vectorised
 * ones (jsonfast._checked), so they live in one place.
 *
 * decode(chunk: bytes, extras: tuple[bytes, ...], typed: bool) -> None | tuple:
 *   (timestamps float64 (n,), input_length int64 (n,), output_length int64 (n,), offsets int64 (n+1,),
 *    ids uint64 (m,), extras int64 (len(extras), n) row-major, types list[str | None] | None,
 *    synthetic rows int, increasing bool: every row's ids strictly increase, so none repeats within a row
 *    (jsonfast.rows_distinct's shortcut, read off the parse: no pass over the ids)) -- the arrays as bytes
 *    (native byte order) for numpy.frombuffer.
 * Every key and value of a taken line is read (an unknown key refuses the chunk before anything is skipped),
 * so no part of a taken line goes unvalidated. The On-Demand parser is the header's built-in kernel (no
 * -march flag: the portable one); on the Mooncake rows it took 0.63x the CPU of the DOM parser's per-line
 * parse and tape walk (docs/performance.md, "The JSONL decode On-Demand").
 * The GIL is released over the parse (only C++ vectors are filled; the type strings are kept as UTF-8 and
 * turned into str once the GIL is back), so two threads can decode two chunks at once.
 * Errors raised: TypeError on bad arguments, MemoryError.
 * ------------------------------------------------------------------------- */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "simdjson.h"

namespace {

using simdjson::ondemand::value;
using simdjson::ondemand::number_type;

constexpr int kMaxExtras = 8;
enum Key { K_TS, K_IL, K_OL, K_IDS, K_REUSE, K_TYPE, K_EXTRA0 };

/* The decoded columns, plain C++ (filled without the GIL); the type strings as one UTF-8 pool. */
struct Columns {
    std::vector<double> ts;
    std::vector<int64_t> il, ol, offsets, extras;
    std::vector<uint64_t> ids;
    std::string type_pool;           // typed formats: every row's type string, one after the other
    std::vector<int64_t> type_ends;  // per row: the end of its type in type_pool, -1 for null / absent
    int64_t synthetic = 0;
    bool increasing = true;          // every row's ids strictly increase (so no id repeats within a row)
};

struct Spec {
    std::vector<std::string_view> extras;
    bool typed;
};

int key_of(std::string_view k, const Spec &spec) {
    if (k == "timestamp") return K_TS;
    if (k == "input_length") return K_IL;
    if (k == "output_length") return K_OL;
    if (k == "hash_ids") return K_IDS;
    if (k == "reuse") return K_REUSE;
    if (k == "type") return spec.typed ? K_TYPE : -1;
    for (size_t i = 0; i < spec.extras.size(); i++)
        if (k == spec.extras[i]) return K_EXTRA0 + (int)i;
    return -1;
}

/* A JSON integer in int64 ("1.0", "1e2", a string, a bool: refused, as the DOM's INT64 type test did). */
bool get_i64(value v, int64_t *out) {
    return !v.get_int64().get(*out);
}

bool get_time(value v, double *out) {
    simdjson::ondemand::number n;
    if (v.get_number().get(n)) return false;   // not a number, or beyond double / uint64 (big integer)
    switch (n.get_number_type()) {
    case number_type::signed_integer: *out = (double)n.get_int64(); return true;
    case number_type::unsigned_integer: *out = (double)n.get_uint64(); return true;
    case number_type::floating_point_number:
        *out = n.get_double();
        // a negative zero (e.g. "-0.0"; "-0" parses as int64 0, as json.loads's int 0): left to the authority
        return std::isfinite(*out) && !(*out == 0.0 && std::signbit(*out));
    default: return false;
    }
}

/* An array of integers in [0, 2**64) appended to ids ("-0", floats, anything else: the authority's). */
bool get_ids(value v, std::vector<uint64_t> &ids, bool &increasing) {
    simdjson::ondemand::array a;
    if (v.get_array().get(a)) return false;
    const size_t first = ids.size();
    for (auto e : a) {
        uint64_t u;
        if (e.get_uint64().get(u)) return false;
        if (ids.size() > first && u <= ids.back()) increasing = false;
        ids.push_back(u);
    }
    return true;
}

/* The optional strings: reuse counted, type added to the pool; false when the authority must decide. */
bool get_reuse(value v, Columns &c) {
    std::string_view s;
    if (v.get_string().get(s)) return false;  // null, number ...: the authority names or accepts it
    if (s == "synthetic") c.synthetic++;
    else if (s != "recorded") return false;
    return true;
}

bool get_type(value v, int64_t *end, std::string &pool) {
    bool null = false;
    if (v.is_null().get(null)) return false;
    if (null) { *end = -1; return true; }
    std::string_view s;
    if (v.get_string().get(s)) return false;   // lone surrogates too (allow_replacement false)
    pool.append(s.data(), s.size());
    *end = (int64_t)pool.size();
    return true;
}

/* One field of a row; false when its key or value is not this decoder's to take. */
bool take_field(simdjson::ondemand::field &field, const Spec &spec, Columns &c, unsigned *seen, double *ts,
                int64_t *ints, int64_t *type_end) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return false;
    int k = key_of(key, spec);
    if (k < 0 || (*seen & (1u << k))) return false;  // unknown or repeated key
    *seen |= 1u << k;
    value v = field.value();
    switch (k) {
    case K_TS: return get_time(v, ts);
    case K_IL: return get_i64(v, &ints[0]);
    case K_OL: return get_i64(v, &ints[1]);
    case K_IDS: return get_ids(v, c.ids, c.increasing);
    case K_REUSE: return get_reuse(v, c);
    case K_TYPE: return get_type(v, type_end, c.type_pool);
    default: return get_i64(v, &ints[2 + k - K_EXTRA0]);
    }
}

/* One line's document into the columns: an object holding each key once and nothing after it. */
bool take_row(simdjson::ondemand::document &doc, const Spec &spec, Columns &c) {
    simdjson::ondemand::object obj;
    if (doc.get_object().get(obj)) return false;
    const size_t nx = spec.extras.size();
    unsigned seen = 0;
    double ts = 0;
    int64_t ints[2 + kMaxExtras] = {0}, type_end = -1;
    for (auto f : obj) {
        simdjson::ondemand::field field;
        if (std::move(f).get(field) || !take_field(field, spec, c, &seen, &ts, ints, &type_end)) return false;
    }
    unsigned required = 0xFu | (((1u << nx) - 1) << K_EXTRA0);
    if ((seen & required) != required || !doc.at_end()) return false;  // a key missing, or a second value
    if (!(seen & (1u << K_TYPE))) type_end = -1;
    c.ts.push_back(ts);
    c.il.push_back(ints[0]);
    c.ol.push_back(ints[1]);
    c.offsets.push_back((int64_t)c.ids.size());
    for (size_t i = 0; i < nx; i++) c.extras.push_back(ints[2 + i]);
    if (spec.typed) c.type_ends.push_back(type_end);
    return true;
}

/* Every line of buf[0, len) (followed by SIMDJSON_PADDING readable bytes) into the columns; false at the
 * first line the authority must read. Runs without the GIL: no Python object is touched. */
bool decode_lines(const char *buf, size_t len, const Spec &spec, Columns &c) {
    simdjson::ondemand::parser parser;
    c.offsets.push_back(0);
    size_t pos = 0;
    while (pos < len) {
        const char *nl = (const char *)memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        if (buf[pos] != '{') return false;  // blank, indented or BOM-led lines: the authority's
        simdjson::ondemand::document doc;
        if (parser.iterate(buf + pos, end - pos, len - pos + simdjson::SIMDJSON_PADDING).get(doc)) return false;
        if (!take_row(doc, spec, c)) return false;
        pos = end + 1;
    }
    return true;
}

template <typename T>
PyObject *as_bytes(const std::vector<T> &v) {
    return PyBytes_FromStringAndSize((const char *)v.data(), (Py_ssize_t)(v.size() * sizeof(T)));
}

/* The type column as a list of str | None (with the GIL); None when a string is not UTF-8 after all. */
PyObject *types_list(const Columns &c) {
    PyObject *out = PyList_New((Py_ssize_t)c.type_ends.size());
    int64_t start = 0;
    for (size_t i = 0; out && i < c.type_ends.size(); i++) {
        int64_t end = c.type_ends[i];
        PyObject *s = Py_None;
        if (end < 0) {
            Py_INCREF(s);
        } else if (!(s = PyUnicode_DecodeUTF8(c.type_pool.data() + start, (Py_ssize_t)(end - start), "strict"))) {
            Py_CLEAR(out);
            break;
        }
        if (end >= 0) start = end;
        PyList_SET_ITEM(out, (Py_ssize_t)i, s);
    }
    return out;
}

PyObject *result(const Columns &c, bool typed) {
    PyObject *types = Py_None;
    if (typed) {
        if (!(types = types_list(c))) { PyErr_Clear(); Py_RETURN_NONE; }
    } else {
        Py_INCREF(types);
    }
    return Py_BuildValue("(NNNNNNNLN)", as_bytes(c.ts), as_bytes(c.il), as_bytes(c.ol), as_bytes(c.offsets),
                         as_bytes(c.ids), as_bytes(c.extras), types, (long long)c.synthetic,
                         PyBool_FromLong(c.increasing));
}

bool read_spec(PyObject *extras, int typed, Spec *spec) {
    Py_ssize_t n = PyTuple_Size(extras);
    if (n < 0 || n > kMaxExtras) {
        PyErr_SetString(PyExc_TypeError, "decode: extras must be a tuple of at most 8 bytes keys");
        return false;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(extras, i);
        if (!PyBytes_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "decode: extras must be bytes keys");
            return false;
        }
        spec->extras.emplace_back(PyBytes_AS_STRING(k), (size_t)PyBytes_GET_SIZE(k));
    }
    spec->typed = typed != 0;
    return true;
}

/* decode_lines with the GIL released: 1 taken, 0 for the authority, -1 out of memory. */
int decode_nogil(const char *buf, size_t len, const Spec &spec, Columns &c) {
    int rc;
    Py_BEGIN_ALLOW_THREADS
    try {
        simdjson::padded_string padded(buf, len);
        c.ids.reserve(len / 8);  // Mooncake: about 7 bytes of JSON per id
        rc = decode_lines(padded.data(), padded.size(), spec, c) ? 1 : 0;
    } catch (const std::bad_alloc &) {
        rc = -1;
    }
    Py_END_ALLOW_THREADS
    return rc;
}

PyObject *decode(PyObject *, PyObject *args) {
    Py_buffer chunk;
    PyObject *extras;
    int typed;
    if (!PyArg_ParseTuple(args, "y*O!p", &chunk, &PyTuple_Type, &extras, &typed)) return nullptr;
    Spec spec;   // its keys point into the extras tuple's bytes, alive for the call
    Columns c;
    int rc = read_spec(extras, typed, &spec) ? decode_nogil((const char *)chunk.buf, (size_t)chunk.len, spec, c) : -2;
    PyBuffer_Release(&chunk);   // the bytes-like object stays locked (y*) while the GIL is released
    if (rc == -2) return nullptr;
    if (rc < 0) return PyErr_NoMemory();
    if (rc == 0) Py_RETURN_NONE;
    return result(c, spec.typed);
}

PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS,
     "decode(chunk, extras, typed) -> None | (ts, il, ol, offsets, ids, extras, types, synthetic, increasing): "
     "see the C++ "
     "file's header (pcs/trace/_jsonrows.cpp)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "pcs.trace._jsonrows",
                          "Block-id JSONL chunks decoded with simdjson (the compiled twin of pcs.trace.jsonfast).",
                          -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__jsonrows(void) { return PyModule_Create(&module_def); }
