/* Helpers shared by the compiled kernels (included, not linked). */
#ifndef PCS_KERNEL_COMMON_H
#define PCS_KERNEL_COMMON_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static inline uint64_t mix64(uint64_t x) {
    /* splitmix64 finalizer (Steele, Lea & Flood 2014). */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Memory of >= 4 MB is 2 MB aligned and advised to use transparent huge
 * pages (fewer page faults and TLB misses on randomly probed tables); zeroed
 * when `zero`. Freed with free(). */
static void *big_alloc(size_t bytes, int zero) {
    void *p = NULL;
    if (bytes < ((size_t)4 << 20)) return zero ? calloc(1, bytes) : malloc(bytes);
    if (posix_memalign(&p, (size_t)2 << 20, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    if (zero) memset(p, 0, bytes);
    return p;
}

/* The module definition and init function of a kernel with only module-level functions:
 * PCS_KERNEL_MODULE(_lruscan, "pcs.engine._lruscan", "doc", methods) defines PyInit__lruscan.
 * Include after <Python.h>. */
#define PCS_KERNEL_MODULE(short_name, full_name, doc, method_table)                               \
    static struct PyModuleDef pcs_module_def = {PyModuleDef_HEAD_INIT, full_name, doc, -1, method_table}; \
    PyMODINIT_FUNC PyInit_##short_name(void) { return PyModule_Create(&pcs_module_def); }

#endif
