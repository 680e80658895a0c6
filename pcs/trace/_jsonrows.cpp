/*
 * pcs.trace._jsonrows: a chunk of block-id JSONL rows (Mooncake, Bailian) decoded into columns, or "fall back".
 *
 * The compiled twin of the shortcut parsers of pcs/trace/jsonfast.py; the authority that accepts, rejects
 * and names errors stays the line-by-line json.loads path of pcs/trace/hashids.py, and this decoder only
 * turns a chunk whose every line it can take into the reader's columns. Each line (LF-terminated, as
 * pcs.trace.source.iter_lines; the file's last line may lack the LF) is parsed on its own with simdjson's
 * DOM parser (simdjson 3.x, the copy pysimdjson ships: simdjson.h / simdjson.cpp, compiled in at build time),
 * so a line holds exactly one JSON value, UTF-8 is validated and trailing whitespace (' ', \t, \r) is
 * allowed, as json.loads does; a line must start with '{' (so no blank, indented or BOM-led line, which
 * simdjson and json.loads treat differently, is taken). A line is taken when it is an object whose keys are exactly the format's:
 * timestamp (any JSON number), input_length and output_length (int64), hash_ids (an array of integers in
 * [0, 2**64)), the spec's int64 extras, the optional "reuse" string ("recorded" | "synthetic") and, for typed
 * formats, the optional "type" string or null -- each key once. Anything else (blank line, bad JSON, a
 * repeated, unknown or missing key, another JSON type, an integer beyond its range, a bool, a float
 * negative-zero timestamp) returns None for the whole chunk; the caller re-reads it with the authority. Value
 * checks that need no parse (lengths >= 0, ids per row, order, repeats) are the caller's vectorised
 * ones (jsonfast._checked), so they live in one place.
 *
 * decode(chunk: bytes, extras: tuple[bytes, ...], typed: bool) -> None | tuple:
 *   (timestamps float64 (n,), input_length int64 (n,), output_length int64 (n,), offsets int64 (n+1,),
 *    ids uint64 (m,), extras int64 (len(extras), n) row-major, types list[str | None] | None,
 *    synthetic rows int, increasing bool: every row's ids strictly increase, so none repeats within a row
 *    (jsonfast.rows_distinct's shortcut, read off the parse: no pass over the ids)) -- the arrays as bytes
 *    (native byte order) for numpy.frombuffer.
 * Errors raised: TypeError on bad arguments, MemoryError.
 * ------------------------------------------------------------------------- */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "simdjson.h"

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr int kMaxExtras = 8;
enum Key { K_TS, K_IL, K_OL, K_IDS, K_REUSE, K_TYPE, K_EXTRA0 };

struct Columns {
    std::vector<double> ts;
    std::vector<int64_t> il, ol, offsets, extras;
    std::vector<uint64_t> ids;
    PyObject *types = nullptr;  // list, typed formats only
    int64_t synthetic = 0;
    bool increasing = true;     // every row's ids strictly increase (so no id repeats within a row)
    ~Columns() { Py_XDECREF(types); }
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

bool get_i64(element v, int64_t *out) {
    return v.type() == element_type::INT64 && !v.get_int64().get(*out);
}

bool get_time(element v, double *out) {
    switch (v.type()) {
    case element_type::INT64: { int64_t i; if (v.get_int64().get(i)) return false; *out = (double)i; return true; }
    case element_type::UINT64: { uint64_t u; if (v.get_uint64().get(u)) return false; *out = (double)u; return true; }
    case element_type::DOUBLE: {
        // a negative zero (e.g. "-0.0"; "-0" parses as int64 0, as json.loads's int 0): left to the authority
        if (v.get_double().get(*out) || (*out == 0.0 && std::signbit(*out))) return false;
        return std::isfinite(*out);
    }
    default: return false;
    }
}

bool get_ids(element v, std::vector<uint64_t> &ids, bool &increasing) {
    simdjson::dom::array a;
    if (v.get_array().get(a)) return false;
    const size_t first = ids.size();
    for (element e : a) {
        element_type t = e.type();
        if (t == element_type::INT64) {
            int64_t i;
            if (e.get_int64().get(i) || i < 0) return false;
            ids.push_back((uint64_t)i);
        } else if (t == element_type::UINT64) {
            uint64_t u;
            if (e.get_uint64().get(u)) return false;
            ids.push_back(u);
        } else {
            return false;
        }
        if (ids.size() > first + 1 && ids[ids.size() - 1] <= ids[ids.size() - 2]) increasing = false;
    }
    return true;
}

/* The optional strings: reuse counted, type appended to the list; false when the authority must decide. */
bool get_reuse(element v, Columns &c) {
    std::string_view s;
    if (v.get_string().get(s)) return false;  // null, number ...: the authority names or accepts it
    if (s == "synthetic") c.synthetic++;
    else if (s != "recorded") return false;
    return true;
}

bool get_type(element v, PyObject **out) {
    if (v.is_null()) { Py_INCREF(Py_None); *out = Py_None; return true; }
    std::string_view s;
    if (v.get_string().get(s)) return false;
    *out = PyUnicode_DecodeUTF8(s.data(), (Py_ssize_t)s.size(), "strict");
    if (!*out) { PyErr_Clear(); return false; }
    return true;
}

/* One parsed line into the columns; false when any key or value is not this decoder's to take. */
bool take_row(element doc, const Spec &spec, Columns &c) {
    simdjson::dom::object obj;
    if (doc.get_object().get(obj)) return false;
    const size_t nx = spec.extras.size();
    unsigned seen = 0;
    double ts = 0;
    int64_t il = 0, ol = 0, ex[kMaxExtras] = {0};
    PyObject *typ = nullptr;
    bool ok = true;
    for (auto field : obj) {
        int k = key_of(field.key, spec);
        if (k < 0 || (seen & (1u << k))) { ok = false; break; }  // unknown or repeated key
        seen |= 1u << k;
        switch (k) {
        case K_TS: ok = get_time(field.value, &ts); break;
        case K_IL: ok = get_i64(field.value, &il); break;
        case K_OL: ok = get_i64(field.value, &ol); break;
        case K_IDS: ok = get_ids(field.value, c.ids, c.increasing); break;
        case K_REUSE: ok = get_reuse(field.value, c); break;
        case K_TYPE: ok = get_type(field.value, &typ); break;
        default: ok = get_i64(field.value, &ex[k - K_EXTRA0]); break;
        }
        if (!ok) break;
    }
    unsigned required = 0xFu | (((1u << nx) - 1) << K_EXTRA0);
    if (!ok || (seen & required) != required) { Py_XDECREF(typ); return false; }
    c.ts.push_back(ts);
    c.il.push_back(il);
    c.ol.push_back(ol);
    c.offsets.push_back((int64_t)c.ids.size());
    for (size_t i = 0; i < nx; i++) c.extras.push_back(ex[i]);
    if (c.types) {
        if (!typ) { Py_INCREF(Py_None); typ = Py_None; }
        int rc = PyList_Append(c.types, typ);
        Py_DECREF(typ);
        if (rc) { PyErr_Clear(); return false; }
    }
    return true;
}

/* Every line of buf[0, len) (padded) into the columns; false at the first line the authority must read. */
bool decode_lines(const char *buf, size_t len, const Spec &spec, Columns &c) {
    simdjson::dom::parser parser;
    c.offsets.push_back(0);
    size_t pos = 0;
    while (pos < len) {
        const char *nl = (const char *)memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        element doc;
        if (buf[pos] != '{') return false;  // blank, indented or BOM-led lines: the authority's
        if (parser.parse(buf + pos, end - pos, false).get(doc)) return false;
        if (!take_row(doc, spec, c)) return false;
        pos = end + 1;
    }
    return true;
}

template <typename T>
PyObject *as_bytes(const std::vector<T> &v) {
    return PyBytes_FromStringAndSize((const char *)v.data(), (Py_ssize_t)(v.size() * sizeof(T)));
}

PyObject *result(Columns &c) {
    PyObject *types = c.types ? c.types : Py_None;
    Py_INCREF(types);
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

PyObject *decode(PyObject *, PyObject *args) {
    Py_buffer chunk;
    PyObject *extras;
    int typed;
    if (!PyArg_ParseTuple(args, "y*O!p", &chunk, &PyTuple_Type, &extras, &typed)) return nullptr;
    Spec spec;
    if (!read_spec(extras, typed, &spec)) { PyBuffer_Release(&chunk); return nullptr; }
    simdjson::padded_string padded((const char *)chunk.buf, (size_t)chunk.len);
    PyBuffer_Release(&chunk);
    Columns c;
    if (spec.typed && !(c.types = PyList_New(0))) return nullptr;
    size_t guess = padded.size() / 8;  // Mooncake: about 7 bytes of JSON per id
    c.ids.reserve(guess);
    if (!decode_lines(padded.data(), padded.size(), spec, c)) Py_RETURN_NONE;
    return result(c);
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
