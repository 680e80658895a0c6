/* Raw memory and GIL-safe exception setters for C code that may run without the GIL.
 *
 * Included right after <Python.h> (before pcs/_kernel_common.h) by an extension whose loop releases the GIL
 * (pcs/engine/_stepsched.c, and pcs/cache/_lruhier.h for the hierarchy it calls: pcs/cache/_lruhier_api.h):
 * its PyMem_* calls become PyMem_Raw* (malloc-backed, callable without the GIL; the whole extension uses the one
 * allocator, so every block is freed by the family that allocated it), and PyErr_NoMemory / PyErr_SetString /
 * PyErr_Format take the GIL for the call (PyGILState_Ensure works whether this thread holds it or released it
 * with PyEval_SaveThread), so an error path deep in the hierarchy is safe either way. Nothing else of the C API
 * may be called where the GIL is released.
 */
#ifndef PCS_NOGIL_H
#define PCS_NOGIL_H
#include <Python.h>
#include <stdarg.h>

static inline PyObject *pcs_nogil_nomem(void) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyErr_NoMemory();
    PyGILState_Release(g);
    return NULL;
}

static inline void pcs_nogil_setstring(PyObject *type, const char *msg) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyErr_SetString(type, msg);
    PyGILState_Release(g);
}

static inline PyObject *pcs_nogil_format(PyObject *type, const char *fmt, ...) {
    va_list va;
    va_start(va, fmt);
    PyGILState_STATE g = PyGILState_Ensure();
    PyErr_FormatV(type, fmt, va);
    PyGILState_Release(g);
    va_end(va);
    return NULL;
}

#define PyMem_Malloc PyMem_RawMalloc
#define PyMem_Calloc PyMem_RawCalloc
#define PyMem_Realloc PyMem_RawRealloc
#define PyMem_Free PyMem_RawFree
#define PyErr_NoMemory pcs_nogil_nomem
#define PyErr_SetString pcs_nogil_setstring
#define PyErr_Format pcs_nogil_format

#endif
