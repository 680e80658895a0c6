/* pcs/engine/_stepcols.h, included once by pcs/engine/_stepsched.c: the step loop's per-request column, a buffer
 * object (pcs.engine._stepsched.Column) whose bytes are a kept mapping (pcs/_kept.h).
 *
 * The loop writes a column's rows through a raw pointer and hands the column out after the run (columns());
 * numpy reads it without a copy (np.frombuffer), so the column lives as long as the result that holds it. When it
 * dies, its mapping goes back to the pool and the next call's columns take it with its pages resident: no page
 * fault and no page clear a row, where bytearray columns (malloc'd, given back to the kernel when freed) faulted in
 * every 4 KiB page of every column each call. The bytes are as a bytearray's were: len(column) bytes, writable,
 * one-dimensional, unsigned bytes (format "B"); np.frombuffer(column, "q") reads them as int64.
 *
 * A column below KEPT_MIN_BYTES is malloc'd (PyMem) as a bytearray's bytes were: small columns come from the heap
 * and stay resident there (a 1x Mooncake call's, 96 KB each, faulted about 6 pages a call), and many of them -- a
 * fleet's engines, results held by a sweep -- take no mapping each (the kernel's vm.max_map_count, 65,530 by
 * default, bounds a process's mappings).
 *
 * col_resize changes the length: within the capacity at no cost; past it, new memory with the first min(old, new)
 * bytes copied (contents past them undefined: the loop writes every row it hands out, init_columns).
 * A column with buffers exported (a numpy array over it alive) is not resized (BufferError): the loop resizes only
 * before it hands its columns out.
 */
#include "../_kept.h"

typedef struct {
    PyObject_HEAD
    char *p;            /* the bytes (NULL: none yet, len 0) */
    Py_ssize_t len;     /* bytes in the column */
    size_t cap;         /* bytes at p: kept_take's size when mapped, else PyMem_Realloc's */
    int mapped;         /* 1: p is a kept mapping (pcs/_kept.h), 0: PyMem memory or NULL */
    Py_ssize_t exports; /* buffers handed out and not released */
} Column;

static PyTypeObject ColumnType;

/* a new empty column, or NULL with an exception */
static PyObject *col_new(void) {
    Column *c = PyObject_New(Column, &ColumnType);
    if (c) c->p = NULL, c->len = 0, c->cap = 0, c->mapped = 0, c->exports = 0;
    return (PyObject *)c;
}

/* column o's bytes (valid until its next resize) */
static inline char *col_bytes(PyObject *o) { return ((Column *)o)->p; }

/* column c's memory given back (to the pool when mapped) */
static void col_free(Column *c) {
    if (c->mapped) kept_give(c->p, c->cap);
    else PyMem_Free(c->p);
}

/* column o (a Column) holding `bytes` bytes: 0, or -1 with MemoryError or BufferError */
static int col_resize(PyObject *o, Py_ssize_t bytes) {
    Column *c = (Column *)o;
    if ((size_t)bytes <= c->cap) { c->len = bytes; return 0; }
    if (c->exports) { PyErr_SetString(PyExc_BufferError, "a column with buffers exported cannot grow"); return -1; }
    if ((size_t)bytes < KEPT_MIN_BYTES) {           /* not mapped: a mapping's cap is at least KEPT_MIN_BYTES */
        char *p = PyMem_Realloc(c->p, (size_t)bytes);
        if (!p) { PyErr_NoMemory(); return -1; }
        c->p = p, c->cap = (size_t)bytes, c->len = bytes;
        return 0;
    }
    size_t got = 0;
    char *p = kept_take((size_t)bytes, &got);
    if (!p) { PyErr_NoMemory(); return -1; }
    if (c->len) memcpy(p, c->p, (size_t)c->len);
    col_free(c);
    c->p = p, c->cap = got, c->mapped = 1, c->len = bytes;
    return 0;
}

static int col_getbuffer(Column *c, Py_buffer *view, int flags) {
    static char empty[1];
    if (PyBuffer_FillInfo(view, (PyObject *)c, c->p ? c->p : empty, c->len, 0, flags) < 0) return -1;
    c->exports++;
    return 0;
}

static void col_releasebuffer(Column *c, Py_buffer *view) { c->exports--; }

static Py_ssize_t col_length(Column *c) { return c->len; }

static void col_dealloc(Column *c) {
    col_free(c);
    PyObject_Free(c);
}

/* kept_bytes(): the bytes the column pool keeps now (tests: a dead column's mapping is kept, bounded) */
static PyObject *col_kept_bytes(PyObject *mod, PyObject *unused) { return PyLong_FromSize_t(kept_held()); }

/* kept_clear(): every mapping the column pool keeps unmapped (tests: an empty pool to start from;
 * pcs.release_memory); returns how many */
static PyObject *col_kept_clear(PyObject *mod, PyObject *unused) { return PyLong_FromLong(kept_clear()); }

static PyBufferProcs col_as_buffer = {(getbufferproc)col_getbuffer, (releasebufferproc)col_releasebuffer};
static PySequenceMethods col_as_sequence = {.sq_length = (lenfunc)col_length};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pcs.engine._stepsched.Column",
    .tp_basicsize = sizeof(Column),
    .tp_dealloc = (destructor)col_dealloc,
    .tp_as_buffer = &col_as_buffer,
    .tp_as_sequence = &col_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A step loop's per-request column: len() bytes, a writable buffer (np.frombuffer reads it without a "
              "copy); its memory is kept for the next call's columns when it dies (pcs/_kept.h).",
};
