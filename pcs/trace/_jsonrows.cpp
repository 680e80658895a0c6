/*
 * pcs.trace._jsonrows: a chunk of block-id JSONL rows (Mooncake, Bailian) decoded into columns, or "fall back".
 *
 * The compiled twin of the shortcut parsers of pcs/trace/jsonfast.py; the authority that accepts, rejects
 * and names errors stays the line-by-line json.loads path of pcs/trace/hashids.py, and this decoder only
 * turns a chunk whose every line it can take into the reader's columns. Each line (LF-terminated, as
 * pcs.trace.source.iter_lines; the file's last line may lack the LF) is read on its own by one of two readers:
 * - the fast lane (lane_row): the common row read byte by byte, no simdjson -- the Mooncake writer's layout
 *   matched as literals, else keys matched whole against the format's, integers as plain digits, the ids 8 bytes
 *   at a time (SWAR: the digits and a leading zero found in one 64-bit word, the ", " after them in one 16-bit
 *   compare), strings of printable ASCII without escapes, so a taken line is ASCII
 *   (valid UTF-8, no control byte); it takes a subset of what simdjson takes, with the same values, and gives
 *   any other line (an escape, a non-ASCII byte, a long number, "-0", anything odd) to
 * - simdjson's On-Demand parser (simdjson 3.x, the copy pysimdjson ships: simdjson.h / simdjson.cpp, compiled
 *   in at build time), on a padded copy of that line: its stage 1 indexes the line and validates UTF-8, then
 *   every field is read as the row is walked -- each key unescaped, each value parsed and checked as it is
 *   reached (a missing comma or colon, a bad literal or number is an error there) -- and the document must end
 *   after the object (document::at_end),
 * so a line holds exactly one JSON value and trailing whitespace (' ', \t, \r) is
 * allowed, as json.loads does; a line must start with '{' (so no blank, indented or BOM-led line, which
 * simdjson and json.loads treat differently, is taken). A line is taken when it is an object whose keys are exactly the format's:
 * timestamp (any JSON number), input_length and output_length (int64), hash_ids (an array of integers in
 * [0, 2**64)), the spec's int64 extras, the optional "reuse" string ("recorded" | "synthetic") and, for typed
 * formats, the optional "type" string or null -- each key once. Anything else (blank line, bad JSON, a
 * repeated, unknown or missing key, another JSON type, an integer beyond its range, a bool, a float
 * negative-zero timestamp, an id written "-0") returns None for the whole chunk; the caller re-reads it with the authority. Value
 * checks that need no parse (lengths >= 0, ids per row, order, repeats) are the caller's (jsonfast._checked), on the
 * decoded columns, so they live in one place; its numpy passes have compiled twins here, which the Parquet reader
 * uses too (diffed against numpy in tests/trace/test_jsonrows_checks.py):
 *
 * row_checks(ts, il, ol, offsets, bs, per_s, arrival=None, out_below=2**63) -> (ok, ordered, ts_max, far): a chunk's
 *   scalar checks in one pass, four rows a step on AVX2 (row_facts_avx2); see its comment below.
 * rows_rise(ids, offsets) -> bool: every row's ids strictly increase (jsonfast.rows_distinct's shortcut), four
 *   pairs a step on AVX2 (rows_rise_avx2).
 *
 * decode(chunk: bytes, extras: tuple[bytes, ...], typed: bool, arena: Arena | None = None) -> None | tuple:
 *   (timestamps float64 (n,), input_length int64 (n,), output_length int64 (n,), offsets int64 (n+1,),
 *    ids uint64 (m,) -- or, with an arena whose room holds the most ids the chunk can (bytes / 2 + 2), the index
 *    of the first of them in the arena, after the ids of the chunks decoded into it before (Arena below) --,
 *    extras int64 (len(extras), n) row-major, types list[str | None] | None,
 *    synthetic rows int, increasing bool: every row's ids strictly increase, so none repeats within a row
 *    (jsonfast.rows_distinct's shortcut, read off the parse: no pass over the ids)) -- the arrays as Column
 *    objects (read-only buffers owning the decoder's own memory, native byte order) for numpy.frombuffer, so no
 *    copy into bytes (each buffer handed over at its capacity: see RawVec::release).
 * Every key and value of a taken line is read (an unknown key refuses the chunk before anything is skipped),
 * so no part of a taken line goes unvalidated. The On-Demand parser is the header's built-in kernel (no
 * -march flag: the portable one); on the Mooncake rows it took 0.63x the CPU of the DOM parser's per-line
 * parse and tape walk (docs/performance.md, "The JSONL decode On-Demand").
 * The fast lane took 0.62x the instructions of the On-Demand decode on the 10x Mooncake replica (docs/performance.md,
 * "The JSONL decode: a fast lane beside simdjson"); the writer's row layout matched as literals (lane_canonical) and
 * the ids read in runs (id_run) took 0.51x of that (docs/performance.md, "The JSONL read: id runs, the writer's
 * layout, no count or join pass"); the ids that continue the previous one (+ 1 in as many digits: most of
 * Mooncake's) compared as text (successors), short field values from one load (lane_short) and the ids of a
 * replay's chunks side by side in an Arena (no join copy) took 0.71x of that (docs/performance.md, "The JSONL
 * read: successors compared as text, the ids side by side"); the writer's row read in one pass (canon_row: no bounds
 * check per token, values of up to 8 digits from one load, the columns written in line), the successor runs
 * instantiated per digit count and a jump to an id of the same length read within the run took 0.71x of that
 * (docs/performance.md, "The JSONL read: the writer's row in one pass, jumps within a run").
 * The GIL is released over the parse (only C++ buffers are filled; the type strings are kept as UTF-8 and
 * turned into str once the GIL is back), so two threads can decode two chunks at once.
 * Errors raised: TypeError on bad arguments (an arena that is not an Arena), MemoryError.
 * ------------------------------------------------------------------------- */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <charconv>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "simdjson.h"

// this module's pool (pcs/_kept.h): the id arenas of a 50x Mooncake read (Parquet 115 MB, JSONL 4 x 32 MiB;
// arena_alloc)
#define KEPT_MAX_BYTES ((size_t)128 << 20)
#include "../_kept.h"

namespace {

using simdjson::ondemand::value;
using simdjson::ondemand::number_type;

constexpr int kMaxExtras = 8;
enum Key { K_TS, K_IL, K_OL, K_IDS, K_REUSE, K_TYPE, K_EXTRA0 };

/* A growable column in a malloc'd buffer whose ownership passes to a Column object (no copy into bytes). */
template <typename T>
struct RawVec {
    T *p = nullptr;
    size_t n = 0, cap = 0;
    bool borrowed = false;   // p is an Arena's room (not ours to free or realloc): see borrow
    RawVec() = default;
    RawVec(const RawVec &) = delete;
    RawVec &operator=(const RawVec &) = delete;
    ~RawVec() {
        if (!borrowed) free(p);
    }
    /* Fill the room [q, q + room) of another's buffer (an Arena) instead of one of our own. */
    void borrow(T *q, size_t room) {
        p = q;
        cap = room;
        borrowed = true;
    }
    void reserve(size_t want) {
        if (want <= cap) return;
        if (borrowed) {   // the room is too small after all: what is in it moved to a buffer of our own
            T *q = (T *)malloc(want * sizeof(T));
            if (!q) throw std::bad_alloc();
            if (n) memcpy(q, p, n * sizeof(T));
            p = q;
            cap = want;
            borrowed = false;
            return;
        }
        T *q = (T *)realloc(p, want * sizeof(T));
        if (!q) throw std::bad_alloc();
        p = q;
        cap = want;
    }
    void push_back(T v) {
        if (n == cap) reserve(cap < 16 ? 16 : cap * 2);
        p[n++] = v;
    }
    size_t size() const { return n; }
    T back() const { return p[n - 1]; }
    void resize(size_t m) { n = m; }   // only ever shrinks (a line's ids undone)
    /* The buffer, the caller to free it; nullptr when out of memory (an empty column's 1-byte buffer). Its
     * capacity is kept unless under half of it is used: a shrinking realloc of an mmap'd block keeps it mmap'd,
     * and its free then lowers malloc's mmap threshold below the next chunk's reservation, so every chunk's
     * buffers were fresh pages (page faults); a Mooncake chunk uses about 70 % of its id buffer. */
    T *release() {
        if (p && n * 2 < cap) {
            T *q = (T *)realloc(p, (n ? n : 1) * sizeof(T));
            if (q) p = q;
        }
        T *q = p ? p : (T *)malloc(1);
        if (!q) return nullptr;
        p = nullptr;
        n = cap = 0;
        return q;
    }
};

/* The decoded columns, plain C++ (filled without the GIL); the type strings as one UTF-8 pool. */
struct Columns {
    RawVec<double> ts;
    RawVec<int64_t> il, ol, offsets, extras;
    RawVec<uint64_t> ids;
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
bool get_ids(value v, RawVec<uint64_t> &ids, bool &increasing) {
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

/* A taken row's scalar columns appended (its ids are in already). */
void push_row(Columns &c, const Spec &spec, double ts, const int64_t *ints, int64_t type_end) {
    c.ts.push_back(ts);
    c.il.push_back(ints[0]);
    c.ol.push_back(ints[1]);
    c.offsets.push_back((int64_t)c.ids.size());
    for (size_t i = 0; i < spec.extras.size(); i++) c.extras.push_back(ints[2 + i]);
    if (spec.typed) c.type_ends.push_back(type_end);
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
    push_row(c, spec, ts, ints, type_end);
    return true;
}

/* ---- The fast lane: a line of the common shape read byte by byte, no simdjson (no stage 1, no value objects).
 * It takes a subset of what take_row takes and yields the same columns: integers as plain digits ("0" or no
 * leading zero; ids up to 19 digits, int64 fields up to 18, a '-' before a non-zero integer field), a timestamp as
 * such an integer (up to 15 digits, exact as a double) or a JSON number with a fraction or exponent (the grammar
 * checked here, the value by std::from_chars: correctly rounded, as simdjson's), strings of printable ASCII with
 * no escape (so a taken line is ASCII: valid UTF-8, no control character), whitespace ' ', \t, \r between tokens.
 * Anything else -- an escape, a non-ASCII byte, a literal other than a type's null, a longer number, "-0", a
 * repeated, unknown or missing key, bad JSON -- returns false with nothing appended, and the line goes to
 * take_row (simdjson), which takes it or leaves the chunk to the authority, as before. */
struct Lane {
    const char *p, *e;   // the line's bytes (e: its LF, or the chunk's end)
    const char *limit;   // the chunk's end: bytes up to it may be read (8 at a time), whatever line they belong to
    void ws() {   // ' ', \t, \r (no LF inside a line); any other byte <= ' ' is no JSON anywhere
        if (p < e && *p > ' ') return;
        while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    }
    bool eat(char ch) {
        if (p >= e || *p != ch) return false;
        p++;
        return true;
    }
};

/* The 8 bytes at p as one little-endian word. */
inline uint64_t load8(const char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Per byte of the 8 at p (little-endian), 0x80 where it is not an ASCII digit; no carry crosses bytes. */
inline uint64_t non_digits(uint64_t v) {
    const uint64_t a = v ^ 0x3030303030303030ull;   // a digit: 0..9; anything else: >= 10
    return (((a & 0x7f7f7f7f7f7f7f7full) + 0x7676767676767676ull) | a) & 0x8080808080808080ull;
}

/* The value of 8 digit values (0..9, the first in the lowest byte): simdjson's parse_eight_digits_unrolled. */
inline uint64_t eight_digits(uint64_t val) {
    const uint64_t mask = 0x000000FF000000FFull, mul1 = 0x000F424000000064ull, mul2 = 0x0000271000000001ull;
    val = (val * 10) + (val >> 8);
    return (((val & mask) * mul1) + (((val >> 16) & mask) * mul2)) >> 32;
}

/* Decimal digits at L.p ("0", or [1-9] then up to max_digits - 1 more, max_digits <= 19) into *out; false
 * otherwise. Eight bytes at a time while 8 more are readable before the chunk's end (a run of digits stops at
 * the line's LF, a non-digit), else one at a time. */
inline bool lane_digits(Lane &L, size_t max_digits, uint64_t *out) {
    const char *s = L.p;
    uint64_t v = 0;
    while (L.limit - L.p >= 8) {
        uint64_t w;
        memcpy(&w, L.p, 8);
        const uint64_t nd = non_digits(w);
        const unsigned k = nd ? (unsigned)__builtin_ctzll(nd) >> 3 : 8;   // leading digits of the 8
        if (k == 0) break;
        const uint64_t d = (w ^ 0x3030303030303030ull) << (8 * (8 - k));   // the k digits, zeros before them
        static const uint64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
        v = v * kPow10[k] + eight_digits(d);
        L.p += k;
        if (k < 8 || (size_t)(L.p - s) > max_digits) break;
    }
    if (L.limit - L.p < 8)
        while (L.p < L.e && (unsigned char)(*L.p - '0') < 10) v = v * 10 + (uint64_t)(*L.p++ - '0');
    size_t n = (size_t)(L.p - s);
    if (n == 0 || n > max_digits || (n > 1 && *s == '0')) return false;
    *out = v;
    return true;
}

/* An int64 field: [-]digits, at most 18 of them, "-0" refused (simdjson's -0 is the slow lane's). */
inline bool lane_i64(Lane &L, int64_t *out) {
    bool neg = L.eat('-');
    uint64_t u;
    if (!lane_digits(L, 18, &u) || (neg && u == 0)) return false;
    *out = neg ? -(int64_t)u : (int64_t)u;
    return true;
}

/* The timestamp: a JSON number, finite, not a negative zero (get_time's rules). */
inline bool lane_time(Lane &L, double *out) {
    const char *s = L.p;
    bool neg = L.eat('-');
    uint64_t u;
    if (!lane_digits(L, 15, &u)) return false;
    if (L.p >= L.e || (*L.p != '.' && *L.p != 'e' && *L.p != 'E')) {
        if (neg && u == 0) return false;
        *out = neg ? -(double)u : (double)u;   // exact: below 2**53
        return true;
    }
    if (L.eat('.')) {
        const char *f = L.p;
        while (L.p < L.e && (unsigned char)(*L.p - '0') < 10) L.p++;
        if (L.p == f) return false;
    }
    if (L.eat('e') || L.eat('E')) {
        if (!L.eat('+')) L.eat('-');
        const char *x = L.p;
        while (L.p < L.e && (unsigned char)(*L.p - '0') < 10) L.p++;
        if (L.p == x) return false;
    }
    auto r = std::from_chars(s, L.p, *out);
    if (r.ec != std::errc() || r.ptr != L.p) return false;
    return std::isfinite(*out) && std::fpclassify(*out) != FP_SUBNORMAL && !(*out == 0.0 && std::signbit(*out));
}

/* A string of printable ASCII without escapes, its content into *out. */
inline bool lane_string(Lane &L, std::string_view *out) {
    if (!L.eat('"')) return false;
    const char *s = L.p;
    while (L.p < L.e && *L.p != '"') {
        unsigned char ch = (unsigned char)*L.p;
        if (ch < 0x20 || ch > 0x7e || ch == '\\') return false;
        L.p++;
    }
    if (L.p >= L.e) return false;
    *out = std::string_view(s, (size_t)(L.p - s));
    L.p++;
    return true;
}

/* ids doubled while the id loop writes through its own pointers: out (the next id) and room (the end). */
inline void grow_at(RawVec<uint64_t> &ids, uint64_t *&out, uint64_t *&room) {
    ids.n = (size_t)(out - ids.p);
    ids.reserve(ids.cap * 2 + 16);
    out = ids.p + ids.n;
    room = ids.p + ids.cap;
}

/* Where the id loop writes: the next id, the buffer's end; whether the row's ids strictly increase, each id
 * against the previous + 1 (a lane id is below 10**19, so the + 1 never wraps). */
struct IdOut {
    uint64_t *out, *room;
    uint64_t next_min = 0, down = 0;   // the previous id + 1 (0 before the first); set when an id is not above it
};

/* The ids that follow an id of D digits read the general way, each the one before it + 1 written in as many digits
 * (the common case: ids are assigned in first-appearance order along each chain) -- each taken by one compare of
 * its text against the expected text (the previous id's digits, the last one + 1, then ", "), without parsing it,
 * two at a time while two fit before `last`; the row's last id (its digits, then ']') too (*closed set).
 * The expected text is `succ` (the digits and ", "; 7 digits: the ", " ends past the 8 bytes, its ' ' compared on
 * its own); each taken id adds `inc` to its last digit. `left` ids until the last digit is 9; then the next decade
 * (the last digit back to 0, the one before it + 1), unless that one is a 9 too or there are fewer than 3 digits.
 * Where the expected id is not there (a jump) or a decade cannot carry, an id of the same D digits then ", " (no
 * leading zero) is read here as id_run reads it -- its value from one load, the order flag `down` set when it is
 * not above the previous -- and its successors taken in turn; any other id is left to id_run. Each id starts at
 * p <= stop. Returns where the first id not taken starts (nothing consumed of it), or after the ']'. */
template <unsigned D>
inline const char *successors(const char *p, const char *stop, uint64_t succ, unsigned left, uint64_t *&out,
                              uint64_t &next_min, uint64_t &down, bool *closed) {
    static_assert(D >= 1 && D <= 7, "ids of 1 to 7 digits");
    constexpr bool wide = D == 7;                 // the ", " ends past the 8 bytes: its ' ' compared on its own
    constexpr size_t step = D + 2;                // an id and its ", "
    constexpr uint64_t inc = 1ull << (8 * (D - 1));   // + 1 in the last digit
    constexpr uint64_t smask = wide ? ~0ull : ~0ull >> (64 - 8 * step);   // the digits and ", "
    constexpr uint64_t dmask = wide ? 0x00ffffffffffffffull : smask >> 16;   // the digits' bytes
    constexpr uint64_t nd_first = 0x80ull << (8 * D);                          // non_digits: the first non-digit at D
    constexpr uint64_t nd_mask = wide ? ~0ull : (nd_first << 1) - 1;
    uint64_t *o = out, id = next_min;
    for (;;) {
        const char *const decade_end = p + step * left;   // after the id whose last digit is 9
        const char *last = decade_end - step;
        if (last > stop) last = stop;
        const char *const pair_last = last - step;          // two ids while the second starts at or before last
        while (p <= pair_last) {
            uint64_t x = (load8(p) ^ succ) | (load8(p + step) ^ (succ + inc));
            if (!wide) x &= smask;
            if (x || (wide && (p[8] != ' ' || p[step + 8] != ' '))) break;
            o[0] = id;
            o[1] = id + 1;
            o += 2;
            id += 2;
            p += 2 * step;
            succ += 2 * inc;
        }
        while (p <= last) {
            const uint64_t w = load8(p);
            if ((w & smask) != succ || (wide && p[8] != ' ')) {
                if (((w ^ succ) & dmask) == 0 && p[D] == ']') {   // the row's last id
                    *o++ = id++;
                    p += D + 1;
                    *closed = true;
                    goto done;
                }
                break;
            }
            *o++ = id++;
            p += step;
            succ += inc;
        }
        // a whole decade taken: the next starts at the last digit 0, the digit before it + 1 (not past a '9')
        if (D >= 3 && p == decade_end && ((succ >> (D < 3 ? 0 : 8 * (D - 2))) & 0xff) != '9') {
            succ += (inc >> 8) - 10 * inc;
            left = 10;
            continue;
        }
        // a jump: the id at p read the general way when it has D digits, as id_run would
        for (;;) {
            if (p > stop) goto done;
            const uint64_t w = load8(p), a = w ^ 0x3030303030303030ull;
            if ((non_digits(w) & nd_mask) != nd_first || (D > 1 && (a & 0xff) == 0)) goto done;
            if (wide ? ((w >> 56) != ',' || p[8] != ' ') : ((w >> (8 * D)) & 0xffff) != (',' | (' ' << 8))) goto done;
            const uint64_t u = eight_digits(a << (64 - 8 * D));
            down |= (uint64_t)(u < id);
            id = u + 1;
            *o++ = u;
            p += step;
            const unsigned lastd = (unsigned)(a >> (8 * (D - 1))) & 0xff;
            if (lastd == 9) continue;   // its successor carries: the next id read this way too
            succ = (w & smask) + inc;
            left = 9 - lastd;
            break;
        }
    }
done:
    out = o;
    next_min = id;
    return p;
}

/* The run of common ids at p: 1 to 7 digits (no leading zero) then ", " -- or the row's last, then ']' (*closed
 * set) -- each read from one 8-byte load (its digits and a leading zero found by non_digits, the value by
 * eight_digits) and the separator compared whole, while p <= fast_end (16 bytes readable) and the buffer has
 * room (an id of the run takes 3 bytes or more, so no more than room / 3 ids are read past the room check made
 * here once); after each id so read, the ids that continue it one by one (successors: its + 1, + 2 ... in as
 * many digits, compared as text). Returns where the run stopped: at the start of an id it does not take (longer,
 * a leading zero, whitespace before it, another separator after it) or after the ']'. Not inlined: its own
 * registers. */
__attribute__((noinline)) const char *id_run(const char *p, const char *fast_end, IdOut &o, bool *closed) {
    uint64_t *out = o.out, next_min = o.next_min, down = o.down;
    const uintptr_t left = (uintptr_t)(o.room - out);   // ids the buffer still holds
    if (left == 0 || p > fast_end) return p;
    const char *const stop = (uintptr_t)(fast_end - p) / 3 < left ? fast_end : p + 3 * (left - 1);
    while (p <= stop) {
        uint64_t w;
        memcpy(&w, p, 8);
        const uint64_t a = w ^ 0x3030303030303030ull;   // digits as 0..9
        const uint64_t nd = (((a & 0x7f7f7f7f7f7f7f7full) + 0x7676767676767676ull) | a) & 0x8080808080808080ull;
        if (!nd) break;   // 8 digits or more
        const unsigned bits = (unsigned)__builtin_ctzll(nd) - 7;   // 8 * the leading digits
        if (bits == 0 || ((a & 0xff) == 0 && bits > 8)) break;   // no digit, or a leading zero
        const uint64_t u = eight_digits(a << (64 - bits));
        const char *q = p + (bits >> 3);
        uint16_t sep;
        memcpy(&sep, q, 2);
        if (sep == (uint16_t)(',' | (' ' << 8))) {
            down |= (uint64_t)(u < next_min);
            next_min = u + 1;
            *out++ = u;
            p = q + 2;
            // the successors of u: its digits with the last + 1, then ", " (u's digits and ", " are w's first bytes)
            const unsigned lastd = (unsigned)(a >> (bits - 8)) & 0xff;   // u's last digit, 0..9
            if (lastd == 9 || p > stop) continue;
            // u + 1's text and ", " (7 digits: the whole of w, its ',' the last byte)
            const uint64_t next = (bits == 56 ? w : w & (~0ull >> ((48 - bits) & 63))) + (1ull << (bits - 8));
            switch (bits >> 3) {   // the digits: 1 to 7
            case 1: p = successors<1>(p, stop, next, 9 - lastd, out, next_min, down, closed); break;
            case 2: p = successors<2>(p, stop, next, 9 - lastd, out, next_min, down, closed); break;
            case 3: p = successors<3>(p, stop, next, 9 - lastd, out, next_min, down, closed); break;
            case 4: p = successors<4>(p, stop, next, 9 - lastd, out, next_min, down, closed); break;
            case 5: p = successors<5>(p, stop, next, 9 - lastd, out, next_min, down, closed); break;
            case 6: p = successors<6>(p, stop, next, 9 - lastd, out, next_min, down, closed); break;
            default: p = successors<7>(p, stop, next, 9 - lastd, out, next_min, down, closed); break;
            }
            if (*closed) break;
            continue;
        }
        if (*q == ']') {
            down |= (uint64_t)(u < next_min);
            next_min = u + 1;
            *out++ = u;
            p = q + 1;
            *closed = true;
        }
        break;
    }
    o.out = out;
    o.next_min = next_min;
    o.down = down;
    return p;
}

/* The id array, appended to ids (the caller truncates them when the line fails): runs of common ids by id_run,
 * any other id and separator by the general steps (ws, lane_digits, eat), which accept the same JSON. */
inline bool lane_ids(Lane &L, RawVec<uint64_t> &ids, bool &increasing) {
    if (!L.eat('[')) return false;
    L.ws();
    if (L.eat(']')) return true;
    const char *const fast_end = L.limit - L.p >= 16 ? L.limit - 16 : L.p - 1;   // p <= fast_end: 16 bytes readable
    IdOut o{ids.p + ids.n, ids.p + ids.cap};
    for (;;) {
        bool closed = false;
        L.p = id_run(L.p, fast_end, o, &closed);
        if (closed) break;
        L.ws();   // one id and its separator, the general way
        uint64_t u;
        if (!lane_digits(L, 19, &u)) return false;
        if (o.out == o.room) grow_at(ids, o.out, o.room);   // a chunk denser than decode_nogil's reservation
        o.down |= (uint64_t)(u < o.next_min);
        o.next_min = u + 1;
        *o.out++ = u;
        L.ws();
        if (L.eat(',')) continue;
        if (!L.eat(']')) return false;
        break;
    }
    ids.n = (size_t)(o.out - ids.p);
    if (o.down) increasing = false;
    return true;
}

/* A key: its closing quote found by memchr, the bytes between matched against the format's keys (a known key's
 * bytes are plain ASCII, so an escape, control or non-ASCII byte never matches); -1 for the slow lane. */
inline int lane_key(Lane &L, const Spec &spec) {
    if (!L.eat('"')) return -1;
    const char *q = (const char *)memchr(L.p, '"', (size_t)(L.e - L.p));
    if (!q) return -1;
    int k = key_of(std::string_view(L.p, (size_t)(q - L.p)), spec);
    L.p = q + 1;
    return k;
}

/* A row's values outside the columns until the line is taken whole. */
struct LaneRow {
    double ts = 0;
    int64_t ints[2 + kMaxExtras] = {0};
    int64_t type_end = -1;
    int synthetic = 0;
};

bool lane_value(Lane &L, int k, Columns &c, LaneRow &r) {
    std::string_view s;
    switch (k) {
    case K_TS: return lane_time(L, &r.ts);
    case K_IL: return lane_i64(L, &r.ints[0]);
    case K_OL: return lane_i64(L, &r.ints[1]);
    case K_IDS: return lane_ids(L, c.ids, c.increasing);
    case K_REUSE:
        if (!lane_string(L, &s)) return false;
        r.synthetic = s == "synthetic";
        return r.synthetic || s == "recorded";
    case K_TYPE:
        if (L.e - L.p >= 4 && memcmp(L.p, "null", 4) == 0) {
            L.p += 4;
            r.type_end = -1;
            return true;
        }
        if (!lane_string(L, &s)) return false;
        c.type_pool.append(s.data(), s.size());
        r.type_end = (int64_t)c.type_pool.size();
        return true;
    default: return lane_i64(L, &r.ints[2 + k - K_EXTRA0]);
    }
}

/* The bytes s[0, n) at L.p, skipped; false when they are not there. */
inline bool lane_literal(Lane &L, const char *s, size_t n) {
    if ((size_t)(L.limit - L.p) < n || memcmp(L.p, s, n) != 0) return false;
    L.p += n;
    return true;
}

/* A field's common value at L.p: 1 to 7 digits (no leading zero) then ',', read from one 8-byte load as id_run
 * reads an id; true with *out set and L.p at the ','. False with nothing consumed for anything else (a sign, a
 * fraction, 8 digits or more, fewer than 8 bytes before the chunk's end): the field's own reader then reads it. */
inline bool lane_short(Lane &L, uint64_t *out) {
    if (L.limit - L.p < 8) return false;
    uint64_t w;
    memcpy(&w, L.p, 8);
    const uint64_t a = w ^ 0x3030303030303030ull;
    const uint64_t nd = (((a & 0x7f7f7f7f7f7f7f7full) + 0x7676767676767676ull) | a) & 0x8080808080808080ull;
    if (!nd) return false;
    const unsigned bits = (unsigned)__builtin_ctzll(nd) - 7;   // 8 * the leading digits
    if (bits == 0 || ((a & 0xff) == 0 && bits > 8) || ((w >> bits) & 0xff) != ',') return false;
    *out = eight_digits(a << (64 - bits));
    L.p += bits >> 3;
    return true;
}

/* The row as the Mooncake trace writes it -- {"timestamp": T, "input_length": I, "output_length": O,
 * "hash_ids": [...]} then the LF or the chunk's end, one space after each ':' and ',' -- its keys matched as
 * literals with the punctuation between them, its values by the lane's own readers (a short integer by
 * lane_short first: the value lane_time and lane_i64 give it; so the same values as lane_fields). False on any
 * other layout (nothing undone: the caller does). */
bool lane_canonical(const char *p, const char *limit, Columns &c, LaneRow &r, const char **end) {
    Lane L{p, limit, limit};
    uint64_t u;
    if (!lane_literal(L, "{\"timestamp\": ", 14)) return false;
    if (lane_short(L, &u)) r.ts = (double)u;   // exact: below 2**53
    else if (!lane_time(L, &r.ts)) return false;
    if (!lane_literal(L, ", \"input_length\": ", 18)) return false;
    if (lane_short(L, &u)) r.ints[0] = (int64_t)u;
    else if (!lane_i64(L, &r.ints[0])) return false;
    if (!lane_literal(L, ", \"output_length\": ", 19)) return false;
    if (lane_short(L, &u)) r.ints[1] = (int64_t)u;
    else if (!lane_i64(L, &r.ints[1])) return false;
    if (!lane_literal(L, ", \"hash_ids\": ", 14) || !lane_ids(L, c.ids, c.increasing) || !L.eat('}')) return false;
    *end = L.p;
    return L.p == limit || *L.p == '\n';
}

/* ---- The writer's row in one pass: canon_row. The row lane_canonical takes in its commonest form -- every value
 * an integer of 1 to 8 digits, every id one id_run takes -- read with no bounds check per token (the caller
 * guarantees kCanonReach bytes from the row's '{' to the chunk's end), each literal compared as whole 8-byte words,
 * each value from one load (canon_int), the row's columns written in line (no LaneRow, no push_row call). It takes
 * a subset of what lane_canonical takes, with the same values; anything else (a sign, a fraction or exponent, a
 * longer number, an id id_run does not take, the row's end within 16 bytes of the chunk's) returns nullptr with
 * nothing appended, and the line goes to lane_row as before. */

/* Bytes from a row's '{' canon_row may read before its ids: the four literals (14 + 18 + 19 + 15) and three values
 * of at most 8 digits, each read as 9 bytes. */
constexpr size_t kCanonReach = 96;

/* 1 to 8 digits at p ("0" or no leading zero) followed by a non-digit: their value into *out, p past them; false
 * with p unmoved otherwise. The byte after them is the caller's to check (the next literal's ','). */
inline bool canon_int(const char *&p, uint64_t *out) {
    const uint64_t w = load8(p), a = w ^ 0x3030303030303030ull;
    const uint64_t nd = non_digits(w);
    if (!nd) {   // 8 digits: the ninth byte must end them
        if ((unsigned char)(p[8] - '0') < 10 || (a & 0xff) == 0) return false;
        *out = eight_digits(a);
        p += 8;
        return true;
    }
    const unsigned bits = (unsigned)__builtin_ctzll(nd) - 7;   // 8 * the leading digits
    if (bits == 0 || ((a & 0xff) == 0 && bits > 8)) return false;
    *out = eight_digits(a << (64 - bits));
    p += bits >> 3;
    return true;
}

/* Whether the n bytes at p (8 <= n <= 24) are the literal s: as 8-byte words, the last one ending at n. */
template <size_t n>
inline bool canon_literal(const char *p, const char (&s)[n + 1]) {
    static_assert(n >= 8 && n <= 24, "a literal of 8 to 24 bytes");
    uint64_t x = load8(p) ^ load8(s);
    if (n > 16) x |= load8(p + 8) ^ load8(s + 8);
    x |= load8(p + n - 8) ^ load8(s + n - 8);
    return x == 0;
}

/* The row at p (its '{', with kCanonReach bytes readable) into the columns; where it ends (its LF or the chunk's
 * end), or nullptr with nothing appended. For a format without extra keys. */
inline const char *canon_row(const char *p, const char *limit, const Spec &spec, Columns &c) {
    uint64_t ts, il, ol;
    if (!canon_literal<14>(p, "{\"timestamp\": ")) return nullptr;
    p += 14;
    if (!canon_int(p, &ts) || !canon_literal<18>(p, ", \"input_length\": ")) return nullptr;
    p += 18;
    if (!canon_int(p, &il) || !canon_literal<19>(p, ", \"output_length\": ")) return nullptr;
    p += 19;
    if (!canon_int(p, &ol) || !canon_literal<15>(p, ", \"hash_ids\": [")) return nullptr;
    p += 15;
    IdOut o{c.ids.p + c.ids.n, c.ids.p + c.ids.cap};
    bool closed = false;
    p = id_run(p, limit - 16, o, &closed);   // limit - 16 >= p - 15: kCanonReach
    if (!closed || *p != '}' || (++p != limit && *p != '\n')) return nullptr;
    c.ids.n = (size_t)(o.out - c.ids.p);
    if (o.down) c.increasing = false;
    c.ts.push_back((double)ts);   // exact: below 2**53
    c.il.push_back((int64_t)il);
    c.ol.push_back((int64_t)ol);
    c.offsets.push_back((int64_t)c.ids.n);
    if (spec.typed) c.type_ends.push_back(-1);
    return p;
}

/* The object of the line at p (at its '{') field by field: keys in any order, whitespace the lane allows. Bounded
 * by the chunk's end: no byte of the lane's tokens is an LF, so the line's end is where the row and its trailing
 * whitespace stop, and must be an LF or the chunk's end (*end set to it); no memchr for the taken lines. */
bool lane_fields(const char *p, const char *limit, const Spec &spec, Columns &c, LaneRow &r, const char **end) {
    Lane L{p + 1, limit, limit};
    unsigned seen = 0;
    for (;;) {
        L.ws();
        int k = lane_key(L, spec);
        if (k < 0 || (seen & (1u << k))) return false;
        seen |= 1u << k;
        L.ws();
        if (!L.eat(':')) return false;
        L.ws();
        if (!lane_value(L, k, c, r)) return false;
        L.ws();
        if (L.eat(',')) continue;
        if (!L.eat('}')) return false;
        L.ws();
        if (!(L.p == limit || *L.p == '\n')) return false;
        *end = L.p;
        const size_t nx = spec.extras.size();
        const unsigned required = 0xFu | (((1u << nx) - 1) << K_EXTRA0);
        return (seen & required) == required;
    }
}

/* The line at p into the columns by the fast lane: the writer's layout first (lane_canonical, for a format
 * without extra keys), else field by field (lane_fields). False on anything the lane does not take (nothing left
 * appended). */
bool lane_row(const char *p, const char *limit, const Spec &spec, Columns &c, const char **end) {
    const size_t ids0 = c.ids.size(), pool0 = c.type_pool.size();
    const bool inc0 = c.increasing;
    LaneRow r;
    bool ok = spec.extras.empty() && lane_canonical(p, limit, c, r, end);
    if (!ok) {
        c.ids.resize(ids0);
        c.increasing = inc0;
        r = LaneRow();
        ok = lane_fields(p, limit, spec, c, r, end);
    }
    if (!ok) {
        c.ids.resize(ids0);
        c.type_pool.resize(pool0);
        c.increasing = inc0;
        return false;
    }
    c.synthetic += r.synthetic;
    push_row(c, spec, r.ts, r.ints, r.type_end);
    return true;
}

/* Every line of buf[0, len) into the columns, each by the fast lane (lane_row) or else simdjson (take_row, on a
 * padded copy of the line); false at the first line the authority must read. Runs without the GIL: no Python
 * object is touched. */
bool decode_lines(const char *buf, size_t len, const Spec &spec, Columns &c) {
    simdjson::ondemand::parser parser;
    std::vector<char> padded;   // the slow lane's line, followed by SIMDJSON_PADDING bytes
    c.offsets.push_back(0);
    const bool canon = spec.extras.empty();   // canon_row: the writer's layout of a format without extra keys
    size_t pos = 0;
    while (pos < len) {
        if (buf[pos] != '{') return false;  // blank, indented or BOM-led lines: the authority's
        const char *row_end;
        if (canon && len - pos >= kCanonReach && (row_end = canon_row(buf + pos, buf + len, spec, c))) {
            pos = (size_t)(row_end - buf) + 1;
            continue;
        }
        if (lane_row(buf + pos, buf + len, spec, c, &row_end)) {
            pos = (size_t)(row_end - buf) + 1;
            continue;
        }
        const char *nl = (const char *)memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        padded.assign(buf + pos, buf + end);
        padded.resize(end - pos + simdjson::SIMDJSON_PADDING, '\0');
        simdjson::ondemand::document doc;
        if (parser.iterate(padded.data(), end - pos, padded.size()).get(doc)) return false;
        if (!take_row(doc, spec, c)) return false;
        pos = end + 1;
    }
    return true;
}

/* Column: a read-only buffer (the buffer protocol, bytes "B") owning a decoded column's malloc'd memory, so
 * numpy.frombuffer views it where bytes would have been a copy. */
struct ColumnObject {
    PyObject_HEAD
    void *data;
    Py_ssize_t nbytes;
};

void column_dealloc(PyObject *self) {
    free(((ColumnObject *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

int column_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    ColumnObject *c = (ColumnObject *)self;
    return PyBuffer_FillInfo(view, self, c->data, c->nbytes, 1, flags);
}

PyBufferProcs column_buffer = {column_getbuffer, nullptr};

PyTypeObject ColumnType = {PyVarObject_HEAD_INIT(nullptr, 0) "pcs.trace._jsonrows.Column"};

/* Arena: one malloc'd uint64 buffer that the id columns of a reader's successive chunks fill one after the
 * other (decode's `arena`), so that the ids of consecutive chunks lie side by side and a join of their batches is
 * a view, not a copy (pcs.trace.request.concat_batches). Its bytes are a read-only buffer (numpy.frombuffer);
 * `used` ids are taken, the rest is room (address space: pages nobody writes are never touched, so never resident).
 * One reader fills it, chunk after chunk (a decode writes only past `used`, which views of earlier chunks do not
 * reach). Arena(capacity, huge_pages=False, take_larger=False): room for `capacity` ids; with take_larger, room for
 * as many as the buffer it got holds, which may be a larger mapping a dead arena left (arena_alloc): a JSONL reader's
 * arena (4 Mi ids asked) taking the 115 MB a 50x Parquet read's arena left, whose pages are resident, where four
 * new 32 MiB rooms took 27,000 page faults a call when the two formats alternate (docs/performance.md, "Page faults
 * of the 50x call"). */
/* Lease: what a pooled buffer (an Arena, a ReadBuffer) carries so that pcs.trace.pool hands it to one reader at a
 * time and never while anything views its bytes. `exports` counts the buffer exports alive (getbuffer adds one,
 * releasebuffer takes it back: a numpy.frombuffer array or a memoryview of it holds one, and so does every slice
 * of that memoryview, through the view they share), `leased` is set by take() and cleared by give_back() (a reader
 * holds it: a paused reader holds it without exporting it, so the export count alone is not enough). Exact, where
 * sys.getrefcount counted every reference (a pool's list, a local, a frame) alike. */
struct Lease {
    Py_ssize_t exports;
    int leased;
};

/* take(): leased when no reader holds it, no export is alive and no decode fills it (`busy`); else false. */
inline bool lease_take(Lease &l, bool busy) {
    if (l.leased || l.exports > 0 || busy) return false;
    l.leased = 1;
    return true;
}

struct ArenaObject {
    PyObject_HEAD
    uint64_t *data;
    size_t mapped;          // data's mapping (arena_alloc), 0: malloc's
    Py_ssize_t cap, used;   // in ids
    int busy;               // a Pending decode fills the room past `used`: nothing else may take it until its result
    Lease lease;
};

/* The most ids a chunk of n bytes can hold (an id takes a digit and a separator, but the row's last one: "[1,2]"):
 * the room a decode into an arena asks for, so that its ids never outgrow it. */
inline size_t ids_bound(size_t n) { return n / 2 + 2; }

/* An arena's buffer of `bytes`, freed with arena_free(p, *mapped). From KEPT_MIN_BYTES (128 KiB) on a mapping from
 * the pool of those dead arenas left (pcs/_kept.h), whose pages the last reader wrote are resident already: a new
 * mapping costs a page fault per page written and the kernel's clearing of it -- 5,600 faults a 10x Mooncake JSONL
 * call, and on this VM 3 to 300 ms of system time a 10x Parquet call, whose arena is on huge pages (docs/
 * performance.md, "Fresh pages a call"). The pool from 128 KiB rather than 4 MB since 2026-12-05: malloc's block of
 * a 1x Parquet read (2.3 MB, on the reader's worker thread) came from that thread's malloc arena, which glibc
 * trims when such a block is freed at its top, so most steady 1x Parquet calls faulted it in again (docs/
 * performance.md, "A steady 1x call's page faults"). `huge` (from 4 MB on): advised to use transparent huge pages
 * (a page fault per 2 MB written instead of per 4 KB), for an arena that its reader fills to the end (the Parquet
 * reader's, sized to the footer's ids: pcs/trace/parquet.py _IdRoom) -- never asked for one whose room may stay
 * mostly unwritten (a JSONL reader's, sized to a bound on its chunk's ids), where a touched huge page would make
 * resident 2 MB of room nobody writes (a mapping a Parquet arena left keeps its advice: at most one such page past
 * the ids). Below 128 KiB malloc's (*mapped 0). Contents undefined. `larger`: any kept mapping of `bytes` or more
 * may be taken, however large (Arena's take_larger). */
void *arena_alloc(size_t bytes, bool huge, size_t *mapped, bool larger = false) {
    *mapped = 0;
    if (bytes >= KEPT_MIN_BYTES) {
        size_t dirty;
        void *p = kept_take_upto(bytes, larger ? KEPT_MAX_BYTES : 0, mapped, &dirty);
#if defined(MADV_HUGEPAGE)
        if (p && huge && bytes >= ((size_t)4 << 20)) madvise(p, *mapped, MADV_HUGEPAGE);
#endif
        return p;
    }
    (void)huge;
    return malloc(bytes);
}

void arena_free(void *p, size_t mapped) {
    if (mapped) kept_give(p, mapped);
    else free(p);
}

PyObject *arena_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    Py_ssize_t cap;
    int huge = 0, larger = 0;
    static const char *kw[] = {"capacity", "huge_pages", "take_larger", nullptr};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n|pp", (char **)kw, &cap, &huge, &larger)) return nullptr;
    if (cap < 1 || (size_t)cap > PY_SSIZE_T_MAX / 8) {
        PyErr_SetString(PyExc_TypeError, "Arena: capacity must be a positive number of ids");
        return nullptr;
    }
    ArenaObject *a = (ArenaObject *)type->tp_alloc(type, 0);
    if (!a) return nullptr;
    a->data = (uint64_t *)arena_alloc((size_t)cap * sizeof(uint64_t), huge != 0, &a->mapped, larger != 0);
    if (!a->data) {
        Py_DECREF(a);
        return PyErr_NoMemory();
    }
    a->cap = larger && a->mapped ? (Py_ssize_t)(a->mapped / sizeof(uint64_t)) : cap;   // take_larger: all it took
    a->used = 0;
    a->busy = 0;
    a->lease = Lease{0, 0};
    return (PyObject *)a;
}

void arena_dealloc(PyObject *self) {
    arena_free(((ArenaObject *)self)->data, ((ArenaObject *)self)->mapped);
    Py_TYPE(self)->tp_free(self);
}

int arena_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    ArenaObject *a = (ArenaObject *)self;
    int rc = PyBuffer_FillInfo(view, self, a->data, a->cap * (Py_ssize_t)sizeof(uint64_t), 1, flags);
    if (rc == 0) a->lease.exports++;
    return rc;
}

void arena_releasebuffer(PyObject *self, Py_buffer *) { ((ArenaObject *)self)->lease.exports--; }

PyObject *arena_fits(PyObject *self, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0 && PyErr_Occurred()) return nullptr;
    ArenaObject *a = (ArenaObject *)self;
    return PyBool_FromLong(!a->busy && n >= 0 && ids_bound((size_t)n) <= (size_t)(a->cap - a->used));
}

/* append(ids) -> int: the ids of a 1-D C-contiguous buffer of unsigned 64-bit integers (a numpy uint64 array)
 * copied into the room past `used`, for a reader whose ids come decoded already (the Parquet reader,
 * pcs/trace/parquet.py): the index of the first returned and `used` advanced, or -1 when they do not fit (nothing
 * copied). The copy runs without the GIL (the buffer stays held). TypeError: not such a buffer (a strided numpy
 * array: numpy's ValueError). */
PyObject *arena_append(PyObject *self, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return nullptr;
    const char *f = b.format ? b.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (b.ndim != 1 || b.itemsize != 8 || (strcmp(f, "Q") != 0 && strcmp(f, "L") != 0)) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_TypeError, "Arena.append: ids must be a 1-D contiguous uint64 array");
        return nullptr;
    }
    ArenaObject *a = (ArenaObject *)self;
    Py_ssize_t n = b.len / 8, at = a->used;
    if (a->busy || n > a->cap - at) {
        PyBuffer_Release(&b);
        return PyLong_FromLong(-1);
    }
    a->used = at + n;   // taken before the GIL is let go: a second caller meanwhile writes past them
    Py_BEGIN_ALLOW_THREADS
    memcpy(a->data + at, b.buf, (size_t)n * sizeof(uint64_t));
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return PyLong_FromSsize_t(at);
}

/* take() -> bool: the arena leased to a reader and its room emptied (used = 0; its pages kept, written again
 * without page faults), when no reader holds it, no view of its ids is alive and no Pending decode fills it
 * (lease_take); else False, nothing changed (pcs.trace.jsonfast.arena, through pcs.trace.pool.Pool). */
PyObject *arena_take(PyObject *self, PyObject *) {
    ArenaObject *a = (ArenaObject *)self;
    if (!lease_take(a->lease, a->busy != 0)) Py_RETURN_FALSE;
    a->used = 0;
    Py_RETURN_TRUE;
}

/* give_back() -> None: the reader's lease ended (the views of its ids may outlive it: take() waits for them). */
PyObject *arena_give_back(PyObject *self, PyObject *) {
    ((ArenaObject *)self)->lease.leased = 0;
    Py_RETURN_NONE;
}

PyBufferProcs arena_buffer = {arena_getbuffer, arena_releasebuffer};
PyMethodDef arena_methods[] = {
    {"fits", arena_fits, METH_O, "fits(nbytes) -> bool: whether a chunk of nbytes bytes is decoded into the room left "
                                 "(False while a Pending decode fills it)."},
    {"take", arena_take, METH_NOARGS, "take() -> bool: leased to the caller and emptied, when no reader holds it, no "
                                      "view of it is alive and no decode fills it; else False."},
    {"give_back", arena_give_back, METH_NOARGS, "give_back() -> None: the caller's lease ended."},
    {"append", arena_append, METH_O, "append(ids) -> int: uint64 ids copied past `used`; their first index, or -1 "
                                     "when they do not fit."},
    {nullptr, nullptr, 0, nullptr}};
PyMemberDef arena_members[] = {
    {"used", T_PYSSIZET, offsetof(ArenaObject, used), READONLY, "ids taken (the decoded chunks' ids, in order)"},
    {"capacity", T_PYSSIZET, offsetof(ArenaObject, cap), READONLY, "ids the buffer holds"},
    {"exports", T_PYSSIZET, offsetof(ArenaObject, lease.exports), READONLY, "buffer exports alive (views of it)"},
    {"leased", T_INT, offsetof(ArenaObject, lease.leased), READONLY, "1 from take() to give_back(), else 0"},
    {nullptr, 0, 0, 0, nullptr}};

PyTypeObject ArenaType = {PyVarObject_HEAD_INIT(nullptr, 0) "pcs.trace._jsonrows.Arena"};

/* ReadBuffer(nbytes): a writable buffer of nbytes uninitialised bytes (malloc: no zero fill, so no page is touched
 * before a read writes it, where a bytearray's memset touched all of them), with the Lease of an Arena: the read
 * buffers pcs.trace.source keeps between readers (its chunks are memoryview slices of it, each an export). */
struct ReadBufferObject {
    PyObject_HEAD
    char *data;
    Py_ssize_t nbytes;
    Lease lease;
};

PyObject *readbuffer_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    Py_ssize_t n;
    static const char *kw[] = {"nbytes", nullptr};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n", (char **)kw, &n)) return nullptr;
    if (n < 1) {
        PyErr_SetString(PyExc_TypeError, "ReadBuffer: nbytes must be a positive number of bytes");
        return nullptr;
    }
    ReadBufferObject *b = (ReadBufferObject *)type->tp_alloc(type, 0);
    if (!b) return nullptr;
    b->data = (char *)malloc((size_t)n);
    if (!b->data) {
        Py_DECREF(b);
        return PyErr_NoMemory();
    }
    b->nbytes = n;
    b->lease = Lease{0, 0};
    return (PyObject *)b;
}

void readbuffer_dealloc(PyObject *self) {
    free(((ReadBufferObject *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

int readbuffer_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    ReadBufferObject *b = (ReadBufferObject *)self;
    int rc = PyBuffer_FillInfo(view, self, b->data, b->nbytes, 0, flags);
    if (rc == 0) b->lease.exports++;
    return rc;
}

void readbuffer_releasebuffer(PyObject *self, Py_buffer *) { ((ReadBufferObject *)self)->lease.exports--; }

PyObject *readbuffer_take(PyObject *self, PyObject *) {
    return PyBool_FromLong(lease_take(((ReadBufferObject *)self)->lease, false));
}

PyObject *readbuffer_give_back(PyObject *self, PyObject *) {
    ((ReadBufferObject *)self)->lease.leased = 0;
    Py_RETURN_NONE;
}

PyBufferProcs readbuffer_buffer = {readbuffer_getbuffer, readbuffer_releasebuffer};
PyMethodDef readbuffer_methods[] = {
    {"take", readbuffer_take, METH_NOARGS, "take() -> bool: leased to the caller when no reader holds it and no view "
                                           "of it is alive; else False."},
    {"give_back", readbuffer_give_back, METH_NOARGS, "give_back() -> None: the caller's lease ended."},
    {nullptr, nullptr, 0, nullptr}};
PyMemberDef readbuffer_members[] = {
    {"nbytes", T_PYSSIZET, offsetof(ReadBufferObject, nbytes), READONLY, "bytes the buffer holds"},
    {"exports", T_PYSSIZET, offsetof(ReadBufferObject, lease.exports), READONLY, "buffer exports alive (views of it)"},
    {"leased", T_INT, offsetof(ReadBufferObject, lease.leased), READONLY, "1 from take() to give_back(), else 0"},
    {nullptr, 0, 0, 0, nullptr}};

PyTypeObject ReadBufferType = {PyVarObject_HEAD_INIT(nullptr, 0) "pcs.trace._jsonrows.ReadBuffer"};

template <typename T>
PyObject *as_column(RawVec<T> &v) {
    ColumnObject *o = PyObject_New(ColumnObject, &ColumnType);
    if (!o) return nullptr;
    o->nbytes = (Py_ssize_t)(v.size() * sizeof(T));
    o->data = v.release();
    if (!o->data) {
        Py_DECREF(o);   // column_dealloc frees nullptr: nothing
        return PyErr_NoMemory();
    }
    return (PyObject *)o;
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

/* The decoded chunk's tuple; its ids a Column, or, when they filled the arena's room, the index of the first in
 * the arena (whose used count then takes them). */
PyObject *result(Columns &c, bool typed, ArenaObject *arena) {
    PyObject *types = Py_None;
    if (typed) {
        if (!(types = types_list(c))) { PyErr_Clear(); Py_RETURN_NONE; }
    } else {
        Py_INCREF(types);
    }
    PyObject *ids;
    if (c.ids.borrowed) {
        ids = PyLong_FromSsize_t(arena->used);
        if (ids) arena->used += (Py_ssize_t)c.ids.size();
    } else {
        ids = as_column(c.ids);
    }
    return Py_BuildValue("(NNNNNNNLN)", as_column(c.ts), as_column(c.il), as_column(c.ol), as_column(c.offsets),
                         ids, as_column(c.extras), types, (long long)c.synthetic, PyBool_FromLong(c.increasing));
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

/* c's buffers reserved for a chunk of len bytes (throws std::bad_alloc). Mooncake: about 10 bytes of JSON per id, 280
 * a row; denser chunks grow the buffers (doubling). Reserved below malloc's mmap threshold where it can be, so freed
 * buffers are reused without fresh page faults. */
void reserve_columns(Columns &c, size_t len) {
    if (!c.ids.borrowed) c.ids.reserve(len / 8 + 16);
    const size_t rows = len / 256 + 1;
    c.ts.reserve(rows);
    c.il.reserve(rows);
    c.ol.reserve(rows);
    c.offsets.reserve(rows + 1);
}

/* decode_lines into c, its buffers reserved first (a no-op when the caller did): 1 taken, 0 for the authority, -1 out
 * of memory. Touches no Python object (runs without the GIL: decode_nogil, and Pending's thread). */
int decode_plain(const char *buf, size_t len, const Spec &spec, Columns &c) {
    int rc;
    try {
        reserve_columns(c, len);
        rc = decode_lines(buf, len, spec, c) ? 1 : 0;
    } catch (const std::bad_alloc &) {
        rc = -1;
    }
    return rc;
}

/* decode_plain with the GIL released. */
int decode_nogil(const char *buf, size_t len, const Spec &spec, Columns &c) {
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = decode_plain(buf, len, spec, c);
    Py_END_ALLOW_THREADS
    return rc;
}

PyObject *decode(PyObject *, PyObject *args) {
    Py_buffer chunk;
    PyObject *extras;
    int typed;
    PyObject *arena_arg = Py_None;
    if (!PyArg_ParseTuple(args, "y*O!p|O", &chunk, &PyTuple_Type, &extras, &typed, &arena_arg)) return nullptr;
    ArenaObject *arena = nullptr;
    if (arena_arg != Py_None) {
        if (!PyObject_TypeCheck(arena_arg, &ArenaType)) {
            PyBuffer_Release(&chunk);
            PyErr_SetString(PyExc_TypeError, "decode: arena must be an Arena or None");
            return nullptr;
        }
        arena = (ArenaObject *)arena_arg;
    }
    Spec spec;   // its keys point into the extras tuple's bytes, alive for the call
    Columns c;
    if (arena && !arena->busy && ids_bound((size_t)chunk.len) <= (size_t)(arena->cap - arena->used))
        c.ids.borrow(arena->data + arena->used, (size_t)(arena->cap - arena->used));
    int rc = read_spec(extras, typed, &spec) ? decode_nogil((const char *)chunk.buf, (size_t)chunk.len, spec, c) : -2;
    PyBuffer_Release(&chunk);   // the bytes-like object stays locked (y*) while the GIL is released
    if (rc == -2) return nullptr;
    if (rc < 0) return PyErr_NoMemory();
    if (rc == 0) Py_RETURN_NONE;
    return result(c, spec.typed, arena);
}

/* ---- decode_start: a chunk decoded on a thread of its own, beside the caller's work.
 *
 * decode_start(chunk, extras, typed, arena=None) -> Pending: decode's arguments; the chunk is decoded on a new
 * std::thread that runs no Python and never takes the GIL (decode_plain into C++ buffers), so it begins as soon as
 * the OS runs it, whatever the calling thread does meanwhile (a Python worker thread first needs the GIL, which a
 * caller busy in Python holds until it blocks: docs/performance.md, "The 1x call's decode pass: the next chunk on a
 * thread without the GIL, the id arena kept"). Pending.result() waits for that thread (the GIL released) and returns what decode would
 * have returned for the same arguments (the tuple, or None for the authority; MemoryError), once. The chunk's
 * buffer is held (y*) until then, and the extras tuple and the arena referenced. An arena whose room the ids take
 * is busy until the result is taken: fits() is False, append() gives -1 and decode() does not borrow it, so only
 * this decode writes past `used`. When no thread can be started the chunk is decoded in decode_start itself (the
 * GIL released), the same result. A Pending dropped without result() joins its thread first. */
struct PendingState {
    Py_buffer chunk;
    Spec spec;
    Columns c;
    std::thread th;
    int rc = -1;
};

struct PendingObject {
    PyObject_HEAD
    PendingState *st;      // nullptr once the result is taken
    PyObject *extras;      // the spec's keys point into its bytes
    ArenaObject *arena;    // the arena whose room the ids borrow, or nullptr
};

/* Join the thread (if any) and free the state, the arena let go; the GIL held (the thread never takes it). */
void pending_release(PendingObject *p) {
    PendingState *st = p->st;
    if (!st) return;
    p->st = nullptr;
    if (st->th.joinable()) {
        Py_BEGIN_ALLOW_THREADS
        st->th.join();
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&st->chunk);
    delete st;
    if (p->arena) p->arena->busy = 0;
}

void pending_dealloc(PyObject *self) {
    PendingObject *p = (PendingObject *)self;
    pending_release(p);
    Py_XDECREF(p->extras);
    Py_XDECREF((PyObject *)p->arena);
    Py_TYPE(self)->tp_free(self);
}

PyObject *pending_result(PyObject *self, PyObject *) {
    PendingObject *p = (PendingObject *)self;
    PendingState *st = p->st;
    if (!st) {
        PyErr_SetString(PyExc_RuntimeError, "Pending.result: already taken");
        return nullptr;
    }
    if (st->th.joinable()) {
        Py_BEGIN_ALLOW_THREADS
        st->th.join();
        Py_END_ALLOW_THREADS
    }
    PyObject *out;
    if (st->rc < 0) {
        out = PyErr_NoMemory();
    } else if (st->rc == 0) {
        out = Py_NewRef(Py_None);
    } else {
        if (p->arena) p->arena->busy = 0;   // result() takes the ids' room (used advanced) when they filled it
        out = result(st->c, st->spec.typed, p->arena);
    }
    pending_release(p);
    return out;
}

PyMethodDef pending_methods[] = {
    {"result", pending_result, METH_NOARGS,
     "result() -> None | tuple: decode's result for decode_start's arguments, once its thread is done (once)."},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject PendingType = {PyVarObject_HEAD_INIT(nullptr, 0) "pcs.trace._jsonrows.Pending"};

PyObject *decode_start(PyObject *, PyObject *args) {
    PyObject *chunk_arg, *extras, *arena_arg = Py_None;
    int typed;
    if (!PyArg_ParseTuple(args, "OO!p|O", &chunk_arg, &PyTuple_Type, &extras, &typed, &arena_arg)) return nullptr;
    if (arena_arg != Py_None && !PyObject_TypeCheck(arena_arg, &ArenaType)) {
        PyErr_SetString(PyExc_TypeError, "decode_start: arena must be an Arena or None");
        return nullptr;
    }
    PendingObject *p = PyObject_New(PendingObject, &PendingType);
    if (!p) return nullptr;
    p->st = nullptr;
    p->extras = Py_NewRef(extras);
    p->arena = nullptr;
    PendingState *st = new (std::nothrow) PendingState();
    if (!st) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    if (PyObject_GetBuffer(chunk_arg, &st->chunk, PyBUF_SIMPLE) < 0) {
        delete st;
        Py_DECREF(p);
        return nullptr;
    }
    p->st = st;
    if (!read_spec(extras, typed, &st->spec)) {
        Py_DECREF(p);
        return nullptr;
    }
    ArenaObject *arena = arena_arg != Py_None ? (ArenaObject *)arena_arg : nullptr;
    if (arena && !arena->busy && ids_bound((size_t)st->chunk.len) <= (size_t)(arena->cap - arena->used)) {
        st->c.ids.borrow(arena->data + arena->used, (size_t)(arena->cap - arena->used));
        arena->busy = 1;
        p->arena = (ArenaObject *)Py_NewRef(arena_arg);
    }
    try {   // the buffers reserved here, from this thread's malloc arena (warm memory the columns freed before,
            // where a new thread's own arena would hand it fresh pages: page faults on every chunk)
        reserve_columns(st->c, (size_t)st->chunk.len);
    } catch (const std::bad_alloc &) {   // the thread's decode_plain tries again and reports it
    }
    try {
        st->th = std::thread([st] {
            st->rc = decode_plain((const char *)st->chunk.buf, (size_t)st->chunk.len, st->spec, st->c);
        });
    } catch (const std::system_error &) {   // no thread to be had: decoded here, the same result
        st->rc = decode_nogil((const char *)st->chunk.buf, (size_t)st->chunk.len, st->spec, st->c);
    }
    return (PyObject *)p;
}

/* ---- The reader's value checks over decoded columns (the numpy passes of pcs/trace/jsonfast.py's _checked and
 * rows_distinct, in one pass each; jsonfast keeps the numpy reference they are diffed against). */

/* Every row's ids strictly increase (the unsigned order), plain: one compare an id, no early exit. */
bool rows_rise_plain(const uint64_t *k, const int64_t *off, Py_ssize_t rows) {
    bool ok = true;
    for (Py_ssize_t r = 0; r < rows; r++)
        for (int64_t i = off[r] + 1; i < off[r + 1]; i++) ok &= k[i] > k[i - 1];
    return ok;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
bool rise_avx2 = false;   // the CPU has AVX2 (PyInit__jsonrows)

/* rows_rise_plain's answer, four pairs a step, as pcs/cache/_lruhier.c's keys_rise_avx2 (AVX2 compares signed
 * 64-bit ints): compared as signed, the ids or-ed together; when one has its top bit set (an id >= 2**63, where the
 * signed order is not the unsigned one) the rows are compared again with the sign bits flipped. A row of five ids or
 * more ends with a step over its last four pairs (overlapping the one before: the answers are and-ed), a shorter row
 * pair by pair; no early exit. */
template <bool kFlip>
__attribute__((target("avx2"))) bool rows_rise_avx2_as(const uint64_t *k, const int64_t *off, Py_ssize_t rows) {
    const __m256i flip = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
    __m256i ok = _mm256_set1_epi64x(-1), any = _mm256_setzero_si256();
    bool small_ok = true;
    for (Py_ssize_t r = 0; r < rows; r++) {
        const int64_t a = off[r], b = off[r + 1];
        if (b - a < 5) {
            for (int64_t i = a + 1; i < b; i++) small_ok &= k[i] > k[i - 1];
            continue;
        }
        int64_t i = a + 1;
        for (;; i += 4) {
            if (i + 4 > b) i = b - 4;   // the row's last four pairs
            __m256i cur = _mm256_loadu_si256((const __m256i *)(k + i));
            __m256i prev = _mm256_loadu_si256((const __m256i *)(k + i - 1));
            if (kFlip) {
                cur = _mm256_xor_si256(cur, flip);
                prev = _mm256_xor_si256(prev, flip);
            } else {
                any = _mm256_or_si256(any, cur);
            }
            ok = _mm256_and_si256(ok, _mm256_cmpgt_epi64(cur, prev));
            if (i + 4 >= b) break;
        }
        if (!kFlip) any = _mm256_or_si256(any, _mm256_set1_epi64x((long long)k[a]));   // the row's first id
    }
    if (!kFlip && _mm256_movemask_pd(_mm256_castsi256_pd(any))) return rows_rise_avx2_as<true>(k, off, rows);
    return small_ok && _mm256_movemask_epi8(ok) == -1;
}

bool rows_rise_avx2(const uint64_t *k, const int64_t *off, Py_ssize_t rows) {
    return rows_rise_avx2_as<false>(k, off, rows);
}

/* rows_rise's answer over the ids as one run, rows ignored: the rising adjacent pairs counted (four a step, compared
 * signed, the ids they read or-ed), then the pairs at a row's start (distinct starts inside the run) taken off both
 * counts: every row rises when every other pair does. An id >= 2**63 in the steps (the signed order is not the
 * unsigned one): rows_rise_avx2.
 * The offsets rise (checked by the caller). */
__attribute__((target("avx2"))) bool run_rise_avx2(const uint64_t *k, const int64_t *off, Py_ssize_t rows) {
    const int64_t s = off[0], e = off[rows];
    if (e - s < 2) return true;
    __m256i acc = _mm256_setzero_si256(), acc2 = _mm256_setzero_si256(), any = _mm256_setzero_si256();
    int64_t j = s + 1;
    for (; j + 8 <= e; j += 8) {   // pairs (j - 1, j) .. (j + 6, j + 7)
        const __m256i c0 = _mm256_loadu_si256((const __m256i *)(k + j));
        const __m256i c1 = _mm256_loadu_si256((const __m256i *)(k + j + 4));
        acc = _mm256_sub_epi64(acc, _mm256_cmpgt_epi64(c0, _mm256_loadu_si256((const __m256i *)(k + j - 1))));
        acc2 = _mm256_sub_epi64(acc2, _mm256_cmpgt_epi64(c1, _mm256_loadu_si256((const __m256i *)(k + j + 3))));
        any = _mm256_or_si256(any, _mm256_or_si256(c0, c1));
    }
    any = _mm256_or_si256(any, _mm256_set1_epi64x((long long)k[s]));
    if (_mm256_movemask_pd(_mm256_castsi256_pd(any))) return rows_rise_avx2(k, off, rows);
    acc = _mm256_add_epi64(acc, acc2);
    int64_t rising = _mm256_extract_epi64(acc, 0) + _mm256_extract_epi64(acc, 1) + _mm256_extract_epi64(acc, 2)
                     + _mm256_extract_epi64(acc, 3);
    for (; j < e; j++) rising += k[j] > k[j - 1];   // the last pairs, unsigned
    int64_t pairs = e - s - 1, prev = s;
    for (Py_ssize_t r = 1; r < rows; r++) {   // a row's start inside the run, once (an empty row repeats it)
        const int64_t b = off[r];
        if (b != prev && b < e) {
            pairs--;
            rising -= k[b] > k[b - 1];
        }
        prev = b;
    }
    return rising == pairs;
}
#endif

/* A buffer argument of n items of `size` bytes (n = -1: any count, returned in *n). */
bool view_of(PyObject *o, Py_buffer *v, Py_ssize_t size, Py_ssize_t *n, bool writable, const char *what) {
    if (PyObject_GetBuffer(o, v, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) return false;
    if (v->len % size || (*n >= 0 && v->len / size != *n)) {
        PyBuffer_Release(v);
        PyErr_Format(PyExc_ValueError, "%s: a buffer of %zd bytes does not hold the items it must", what, v->len);
        return false;
    }
    *n = v->len / size;
    return true;
}

/* rows_rise(ids, offsets) -> bool: every row's ids strictly increase (so no id repeats within a row). ids: uint64
 * (m,); offsets: int64 (n+1,), offsets[0] = 0, non-decreasing, offsets[n] <= m (not checked beyond the last). */
PyObject *rows_rise(PyObject *, PyObject *args) {
    PyObject *ids_o, *off_o;
    if (!PyArg_ParseTuple(args, "OO", &ids_o, &off_o)) return nullptr;
    Py_buffer iv, ov;
    Py_ssize_t m = -1, n1 = -1;
    if (!view_of(ids_o, &iv, 8, &m, false, "rows_rise")) return nullptr;
    if (!view_of(off_o, &ov, 8, &n1, false, "rows_rise")) { PyBuffer_Release(&iv); return nullptr; }
    const int64_t *off = (const int64_t *)ov.buf;
    bool good = n1 >= 1 && off[0] >= 0 && off[n1 - 1] <= m;
    for (Py_ssize_t r = 0; good && r + 1 < n1; r++) good = off[r] <= off[r + 1];
    bool ok = false;
    if (good) {
        Py_BEGIN_ALLOW_THREADS
#if defined(__x86_64__) && defined(__GNUC__)
        ok = rise_avx2 ? run_rise_avx2((const uint64_t *)iv.buf, off, n1 - 1)
                       : rows_rise_plain((const uint64_t *)iv.buf, off, n1 - 1);
#else
        ok = rows_rise_plain((const uint64_t *)iv.buf, off, n1 - 1);
#endif
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&iv);
    PyBuffer_Release(&ov);
    if (!good) {
        PyErr_SetString(PyExc_ValueError, "rows_rise: offsets must rise from >= 0 to at most the ids' count");
        return nullptr;
    }
    return PyBool_FromLong(ok);
}

/* The facts of row_checks, one pass over the rows. */
struct RowFacts {
    bool ok = true, ordered = true;
    double ts_max = -INFINITY, far = 0;
};

RowFacts row_facts(const double *ts, const int64_t *il, const int64_t *ol, const int64_t *off, Py_ssize_t n,
                   int64_t bs, double per_s, double *arrival, uint64_t out_below) {
    RowFacts f;
    const bool pow2 = (bs & (bs - 1)) == 0;
    const int shift = pow2 ? __builtin_ctzll((unsigned long long)bs) : 0;
    bool ok = true, ordered = true;
    double prev = n ? ts[0] : 0, ts_max = -INFINITY, far = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const double t = ts[i];
        const int64_t in = il[i];
        // ceil(in / bs) for in >= 0 (a negative in fails on its own): no overflow near INT64_MAX
        const int64_t want = pow2 ? (in >> shift) + ((in & (bs - 1)) != 0) : in / bs + (in % bs != 0);
        // 0 <= ol < out_below in one unsigned compare (a negative ol is 2**63 or more as unsigned)
        ok &= std::isfinite(t) & (in >= 0) & ((uint64_t)ol[i] < out_below) & (off[i + 1] - off[i] == want);
        ordered &= !(t < prev);
        prev = t;
        if (t > ts_max) ts_max = t;
        const double a = t / per_s;
        if (std::fabs(a) > far) far = std::fabs(a);
        if (arrival) arrival[i] = a + 0.0;   // + 0.0: no -0.0 arrival (as the Python readers)
    }
    f.ok = ok;
    f.ordered = ordered;
    f.ts_max = ts_max;
    f.far = far;
    return f;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* row_facts' ok and ordered for a power-of-two bs (1 << shift), four rows a step; the arrivals written when asked.
 * ts_max and far are left to the caller (row_checks: from the first and last rows when ok and ordered). Finite: |t|
 * <= DBL_MAX (false for NaN); the lengths' sign bits or-ed, with those of ol + (2**63 - out_below) (out_below in
 * 1 .. 2**63: for 0 <= ol, its sign is set exactly when ol >= out_below; 0 for no bound); the id counts xor-ed with
 * ceil(in / bs) = (in >> shift) + 1 - [in & (bs - 1) == 0] (a logical shift: a negative in fails on its sign). */
__attribute__((target("avx2"))) void row_facts_avx2(const double *ts, const int64_t *il, const int64_t *ol,
                                                    const int64_t *off, Py_ssize_t n, int64_t bs, double per_s,
                                                    double *arrival, uint64_t out_below, bool *ok_out,
                                                    bool *ordered_out) {
    const int shift = __builtin_ctzll((unsigned long long)bs);
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const __m256d dmax = _mm256_set1_pd(1.7976931348623157e308), k = _mm256_set1_pd(per_s), zero = _mm256_setzero_pd();
    const __m256i low = _mm256_set1_epi64x(bs - 1), one = _mm256_set1_epi64x(1), izero = _mm256_setzero_si256();
    const __m256i obias = _mm256_set1_epi64x((long long)((1ULL << 63) - out_below));
    __m256d fin = _mm256_castsi256_pd(_mm256_set1_epi64x(-1)), down = zero;
    __m256i sign = izero, diff = izero;
    // the pairs of the first step (rows 0-3) in order one by one; each later step's against the rows before them
    bool ordered = n < 4 || (!(ts[1] < ts[0]) & !(ts[2] < ts[1]) & !(ts[3] < ts[2]));
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256d t = _mm256_loadu_pd(ts + i);
        fin = _mm256_and_pd(fin, _mm256_cmp_pd(_mm256_and_pd(t, absmask), dmax, _CMP_LE_OQ));
        if (i) down = _mm256_or_pd(down, _mm256_cmp_pd(t, _mm256_loadu_pd(ts + i - 1), _CMP_LT_OQ));
        const __m256i in = _mm256_loadu_si256((const __m256i *)(il + i));
        const __m256i out = _mm256_loadu_si256((const __m256i *)(ol + i));
        sign = _mm256_or_si256(sign, _mm256_or_si256(in, _mm256_or_si256(out, _mm256_add_epi64(out, obias))));
        const __m256i want = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(in, shift), one),
                                              _mm256_cmpeq_epi64(_mm256_and_si256(in, low), izero));
        const __m256i cnt = _mm256_sub_epi64(_mm256_loadu_si256((const __m256i *)(off + i + 1)),
                                             _mm256_loadu_si256((const __m256i *)(off + i)));
        diff = _mm256_or_si256(diff, _mm256_xor_si256(cnt, want));
        if (arrival) _mm256_storeu_pd(arrival + i, _mm256_add_pd(_mm256_div_pd(t, k), zero));
    }
    bool ok = _mm256_movemask_pd(fin) == 0xF && _mm256_movemask_pd(_mm256_castsi256_pd(sign)) == 0
              && _mm256_testz_si256(diff, diff);
    ordered &= _mm256_movemask_pd(down) == 0;
    for (; i < n; i++) {   // the last n mod 4 rows as row_facts does (and their pairs with the row before)
        const double t = ts[i];
        const int64_t in = il[i];
        const int64_t want = (in >> shift) + ((in & (bs - 1)) != 0);
        ok &= std::isfinite(t) & (in >= 0) & ((uint64_t)ol[i] < out_below) & (off[i + 1] - off[i] == want);
        if (i) ordered &= !(t < ts[i - 1]);
        if (arrival) arrival[i] = t / per_s + 0.0;
    }
    *ok_out = ok;
    *ordered_out = ordered;
}
#endif

/* row_facts, four rows a step where the CPU has AVX2 and bs is a power of two: the same facts (ts_max and far from
 * the first and last rows when ok and ordered: |t / per_s| = |t| / per_s and a correctly rounded division keeps the
 * order, so the largest |arrival| is that of the row with the largest |t|, the first or the last; else row_facts). */
RowFacts row_facts_fast(const double *ts, const int64_t *il, const int64_t *ol, const int64_t *off, Py_ssize_t n,
                        int64_t bs, double per_s, double *arrival, uint64_t out_below) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (rise_avx2 && (bs & (bs - 1)) == 0 && n) {
        RowFacts f;
        row_facts_avx2(ts, il, ol, off, n, bs, per_s, arrival, out_below, &f.ok, &f.ordered);
        if (f.ok && f.ordered) {
            f.ts_max = ts[n - 1];
            f.far = std::fmax(std::fabs(ts[0]), std::fabs(ts[n - 1])) / per_s;
            return f;
        }
    }
#endif
    return row_facts(ts, il, ol, off, n, bs, per_s, arrival, out_below);
}

/* row_checks(ts, il, ol, offsets, bs, per_s, arrival=None, out_below=2**63) -> (ok, ordered, ts_max, far): the value
 * checks of jsonfast._checked over a chunk's n rows in one pass. ts float64 (n,), il, ol int64 (n,), offsets int64
 * (n+1,), bs > 0 tokens a block, per_s > 0 timestamp units a second (finite); arrival: a writable float64 (n,) buffer
 * filled with ts / per_s + 0.0 (the batch's arrival_s); out_below: 1 .. 2**63 tokens, the run's bound on an output
 * length (pcs/trace/rowlimits.py; 2**63: none). ok: every ts finite, il >= 0, 0 <= ol < out_below and each row's id
 * count (offsets[i+1] - offsets[i]) = ceil(il / bs); ordered: no ts below the one before it; ts_max: the largest ts
 * (-inf when n = 0); far: the largest |ts / per_s| (0 when n = 0; meaningful when ok). ValueError on buffers of
 * other sizes, bs <= 0 or per_s <= 0. */
PyObject *row_checks(PyObject *, PyObject *args) {
    PyObject *to, *io, *oo, *fo, *ao = Py_None;
    long long bs;
    double per_s;
    unsigned long long out_below = 1ULL << 63;
    if (!PyArg_ParseTuple(args, "OOOOLd|OK", &to, &io, &oo, &fo, &bs, &per_s, &ao, &out_below)) return nullptr;
    if (bs <= 0 || !(per_s > 0)) {
        PyErr_SetString(PyExc_ValueError, "row_checks: bs and per_s must be > 0");
        return nullptr;
    }
    if (out_below == 0 || out_below > (1ULL << 63)) {
        PyErr_SetString(PyExc_ValueError, "row_checks: out_below must be in 1..2**63");
        return nullptr;
    }
    Py_buffer v[5];
    Py_ssize_t n = -1, n1 = -1;
    int got = 0;
    bool fine = view_of(to, &v[got], 8, &n, false, "row_checks") && ++got
                && view_of(io, &v[got], 8, &n, false, "row_checks") && ++got
                && view_of(oo, &v[got], 8, &n, false, "row_checks") && ++got;
    if (fine) {
        n1 = n + 1;
        fine = view_of(fo, &v[got], 8, &n1, false, "row_checks") && ++got;
    }
    if (fine && ao != Py_None) fine = view_of(ao, &v[got], 8, &n, true, "row_checks") && ++got;
    RowFacts f;
    if (fine) {
        Py_BEGIN_ALLOW_THREADS
        f = row_facts_fast((const double *)v[0].buf, (const int64_t *)v[1].buf, (const int64_t *)v[2].buf,
                      (const int64_t *)v[3].buf, n, (int64_t)bs, per_s, ao != Py_None ? (double *)v[4].buf : nullptr,
                      (uint64_t)out_below);
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    if (!fine) return nullptr;
    return Py_BuildValue("(NNdd)", PyBool_FromLong(f.ok), PyBool_FromLong(f.ordered), f.ts_max, f.far);
}

/* count_lf(buffer) -> int: the b"\n" bytes of a contiguous buffer (pcs.trace.source.count_newlines): glibc's
 * vectorised memchr from one to the next, about 0.1 instructions a byte on Mooncake rows (numpy's compare and count,
 * a bool array made and counted, took 1.3: 3.8 M instructions for the 1x replica's 3 MB). */
PyObject *count_lf(PyObject *, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return nullptr;
    const char *p = (const char *)b.buf, *end = p + b.len;
    Py_ssize_t n = 0;
    while (p < end && (p = (const char *)memchr(p, '\n', (size_t)(end - p))) != nullptr) {
        n++;
        p++;
    }
    PyBuffer_Release(&b);
    return PyLong_FromSsize_t(n);
}

/* kept_bytes(): the bytes of dead arenas' mappings this module's pool keeps now (pcs/_kept.h, arena_alloc) */
PyObject *mod_kept_bytes(PyObject *, PyObject *) { return PyLong_FromSize_t(kept_held()); }
/* kept_clear(): every mapping that pool keeps unmapped; returns how many */
PyObject *mod_kept_clear(PyObject *, PyObject *) { return PyLong_FromLong(kept_clear()); }

PyMethodDef methods[] = {
    {"kept_bytes", mod_kept_bytes, METH_NOARGS, "bytes the pool of dead arenas' mappings keeps now (pcs/_kept.h)"},
    {"kept_clear", mod_kept_clear, METH_NOARGS, "unmap every mapping that pool keeps; returns how many"},
    {"decode", decode, METH_VARARGS,
     "decode(chunk, extras, typed, arena=None) -> None | (ts, il, ol, offsets, ids, extras, types, synthetic, "
     "increasing): see the C++ file's header (pcs/trace/_jsonrows.cpp)."},
    {"decode_start", decode_start, METH_VARARGS,
     "decode_start(chunk, extras, typed, arena=None) -> Pending: decode on a thread of its own, no GIL; "
     "Pending.result() gives decode's result (pcs/trace/_jsonrows.cpp)."},
    {"count_lf", count_lf, METH_O, "count_lf(buffer) -> int: the newlines of a contiguous buffer "
                                    "(pcs/trace/_jsonrows.cpp)."},
    {"rows_rise", rows_rise, METH_VARARGS,
     "rows_rise(ids, offsets) -> bool: every row's uint64 ids strictly increase (pcs/trace/_jsonrows.cpp)."},
    {"row_checks", row_checks, METH_VARARGS,
     "row_checks(ts, il, ol, offsets, bs, per_s, arrival=None, out_below=2**63) -> (ok, ordered, ts_max, far): the "
     "reader's value "
     "checks in one pass (pcs/trace/_jsonrows.cpp)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "pcs.trace._jsonrows",
                          "Block-id JSONL chunks decoded with simdjson (the compiled twin of pcs.trace.jsonfast).",
                          -1, methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__jsonrows(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    rise_avx2 = __builtin_cpu_supports("avx2") != 0;
#endif
    ColumnType.tp_basicsize = sizeof(ColumnObject);
    ColumnType.tp_flags = Py_TPFLAGS_DEFAULT;
    ColumnType.tp_dealloc = column_dealloc;
    ColumnType.tp_as_buffer = &column_buffer;
    ColumnType.tp_doc = "A decoded column's bytes (read-only buffer), for numpy.frombuffer.";
    if (PyType_Ready(&ColumnType) < 0) return nullptr;
    ArenaType.tp_basicsize = sizeof(ArenaObject);
    ArenaType.tp_flags = Py_TPFLAGS_DEFAULT;
    ArenaType.tp_new = arena_new;
    ArenaType.tp_dealloc = arena_dealloc;
    ArenaType.tp_as_buffer = &arena_buffer;
    ArenaType.tp_methods = arena_methods;
    ArenaType.tp_members = arena_members;
    ArenaType.tp_doc = "Arena(capacity, huge_pages=False, take_larger=False): one id buffer the chunks of a reader "
                       "fill in order (the C++ file's header).";
    if (PyType_Ready(&ArenaType) < 0) return nullptr;
    ReadBufferType.tp_basicsize = sizeof(ReadBufferObject);
    ReadBufferType.tp_flags = Py_TPFLAGS_DEFAULT;
    ReadBufferType.tp_new = readbuffer_new;
    ReadBufferType.tp_dealloc = readbuffer_dealloc;
    ReadBufferType.tp_as_buffer = &readbuffer_buffer;
    ReadBufferType.tp_methods = readbuffer_methods;
    ReadBufferType.tp_members = readbuffer_members;
    ReadBufferType.tp_doc = "ReadBuffer(nbytes): a writable buffer of uninitialised bytes with a lease (take / "
                            "give_back) and an export count, for the JSONL reader's kept read buffers.";
    if (PyType_Ready(&ReadBufferType) < 0) return nullptr;
    PendingType.tp_basicsize = sizeof(PendingObject);
    PendingType.tp_flags = Py_TPFLAGS_DEFAULT;
    PendingType.tp_dealloc = pending_dealloc;
    PendingType.tp_methods = pending_methods;
    PendingType.tp_doc = "A chunk being decoded on a thread of its own (decode_start); result() gives decode's result.";
    if (PyType_Ready(&PendingType) < 0) return nullptr;
    PyObject *m = PyModule_Create(&module_def);
    if (m && PyModule_AddObjectRef(m, "Arena", (PyObject *)&ArenaType) < 0) Py_CLEAR(m);
    if (m && PyModule_AddObjectRef(m, "ReadBuffer", (PyObject *)&ReadBufferType) < 0) Py_CLEAR(m);
    return m;
}
