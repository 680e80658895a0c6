/* A buffer argument of 8-byte items, shared by the compiled kernels that take trace columns (included, not linked):
 * pcs/cache/_lruhier.c (run_sequential) and pcs/engine/_seqpol.c (run). */
#ifndef PCS_BUF8_H
#define PCS_BUF8_H
#include <Python.h>

/* `o` as a C-contiguous buffer of 8-byte items (uint64 / int64), writable when asked; 0, or -1 with a TypeError
 * naming `what` (the buffer released) */
static inline int get_buf8(PyObject *o, Py_buffer *b, int writable, const char *what) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (b->itemsize != 8) {
        PyErr_Format(PyExc_TypeError, "%s: need 8-byte items (uint64 / int64)", what);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}
#endif
