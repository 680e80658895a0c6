/* Helpers shared by the compiled kernels (included, not linked). */
#ifndef PCS_KERNEL_COMMON_H
#define PCS_KERNEL_COMMON_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__linux__)
#include <sys/auxv.h>
#endif

static inline uint64_t mix64(uint64_t x) {
    /* splitmix64 finalizer (Steele, Lea & Flood 2014). */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* The 64-bit hash whose top bits are the home slot (and, in pcs/cache/_oatable.h's OA_HASH32, the fingerprint) of
 * the block tables of pcs/cache/_lruhier.h and _grouphier.h: the key xored with a per-process seed, xor-shift, then
 * Fibonacci multiply. The xor-shift folds the high word in, so ids chosen to share the top bits of key x HMUL
 * spread like random keys. The seed (pcs_hash_seed, the same in every module of a process, new in each process:
 * see pcs_hash_seed_init) makes the hash unknown in advance: ids crafted to invert an unseeded
 * (k ^ k >> 32) x HMUL -- every id at home slot 0, fingerprint 0, a quadratic table -- spread like random keys.
 * No output depends on where a key sits (lookups return the same entries; nothing iterates the slots to print),
 * so runs stay deterministic. The cheaper choice against mix64: mix64 cost 15-24 % CPU on bench_user two-tier
 * (docs/performance.md). key_hash_seeded is the same hash under a given seed: the read-only index built in numpy
 * (pcs/cache/native.py key_index, its twin; data_find in pcs/cache/_lruhier.h) carries the seed it was built with
 * (drawn once per process there), so an index made in one process reads right in another. */
#define PCS_HMUL 0x9E3779B97F4A7C15ULL
static uint64_t pcs_hash_seed;
__attribute__((constructor)) static void pcs_hash_seed_init(void) {
    /* Every translation unit of every module computes the same seed in one process (each has its own copy of this
     * static): from the kernel's per-exec random bytes (AT_RANDOM; fixed for the process's life, kept across
     * fork), else from where libc's data sits (address-space randomisation). */
    uint64_t s = 0, r[2] = {0, 0};
#if defined(__linux__) && defined(AT_RANDOM)
    const void *p = (const void *)getauxval(AT_RANDOM);
    if (p) memcpy(r, p, sizeof r);
#endif
    if (r[0] == 0 && r[1] == 0) {
        extern char **environ;
        r[0] = (uint64_t)(uintptr_t)&environ;
    }
    s = mix64(mix64(r[0]) ^ r[1]);
    pcs_hash_seed = s;
}
static inline uint64_t key_hash_seeded(uint64_t k, uint64_t seed) { k ^= seed; return (k ^ (k >> 32)) * PCS_HMUL; }
static inline uint64_t key_hash(uint64_t k) { return key_hash_seeded(k, pcs_hash_seed); }

/* Memory of >= 4 MB is 2 MB aligned and advised to use transparent huge
 * pages (fewer page faults and TLB misses on randomly probed tables); zeroed
 * when `zero`. Freed with free(). */
static inline void *big_alloc(size_t bytes, int zero) {
    void *p = NULL;
    if (bytes < ((size_t)4 << 20)) return zero ? calloc(1, bytes) : malloc(bytes);
    if (posix_memalign(&p, (size_t)2 << 20, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    if (zero) memset(p, 0, bytes);
    return p;
}

/* Move every occupied slot of the open-addressing table `old` (mask `old_mask`; a slot is occupied when its
 * field `used` is non-zero) into the zeroed table `slots` (mask `mask`): linear probing from mix64(key), the
 * probe every kernel's lookup uses. `old` is freed (NULL: nothing to move). A macro: the slot types differ. */
#define PCS_REHASH(old, old_mask, slots, mask, used)                                   \
    do {                                                                               \
        for (uint64_t pcs_i_ = 0; (old) && pcs_i_ <= (old_mask); pcs_i_++) {          \
            if (!(old)[pcs_i_].used) continue;                                         \
            uint64_t pcs_h_ = mix64((old)[pcs_i_].key) & (mask);                       \
            while ((slots)[pcs_h_].used) pcs_h_ = (pcs_h_ + 1) & (mask);               \
            (slots)[pcs_h_] = (old)[pcs_i_];                                           \
        }                                                                              \
        free(old);                                                                     \
    } while (0)

#ifdef Py_PYTHON_H
/* Release the buffers a PyArg_ParseTuple "y*"/"w*" filled: PCS_RELEASE(&a, &b, ...) at a function's exit. */
static inline void pcs_release_buffers(Py_buffer *const *bufs, size_t n) {
    for (size_t i = 0; i < n; i++) PyBuffer_Release(bufs[i]);
}
#define PCS_RELEASE(...) \
    pcs_release_buffers((Py_buffer *const[]){__VA_ARGS__}, sizeof((Py_buffer *const[]){__VA_ARGS__}) / sizeof(Py_buffer *))

/* Room for `need` elements in `n` parallel PyMem arrays of capacity *cap: arrs[i] is the address of an array
 * pointer, sizes[i] its element size; the capacity doubles from `first` until it holds `need`. 0, or -1 with
 * MemoryError set (arrays already grown keep their contents and new size; *cap is unchanged). Growth only:
 * callers on a hot path test the capacity first and call this on the cold branch. */
static inline int pcs_grow_arrays(Py_ssize_t *cap, Py_ssize_t need, Py_ssize_t first, int n, void *const arrs[],
                                  const size_t sizes[]) {
    if (need <= *cap) return 0;
    Py_ssize_t c = *cap ? *cap : first;
    while (c < need) c *= 2;
    for (int i = 0; i < n; i++) {
        void *old, *p;
        memcpy(&old, arrs[i], sizeof old);    /* the array pointer, whatever its element type */
        p = PyMem_Realloc(old, sizes[i] * (size_t)c);
        if (!p) { PyErr_NoMemory(); return -1; }
        memcpy(arrs[i], &p, sizeof p);
    }
    *cap = c;
    return 0;
}

/* Free `n` PyMem arrays and clear their pointers: arrs[i] is the address of an array pointer (any element type;
 * NULL pointers are fine). The teardown twin of pcs_grow_arrays; PCS_FREE(&t->a, &t->b, ...) names them. */
static inline void pcs_free_arrays(void *const arrs[], size_t n) {
    for (size_t i = 0; i < n; i++) {
        void *p;
        memcpy(&p, arrs[i], sizeof p);    /* the array pointer, whatever its element type */
        PyMem_Free(p);
        p = NULL;
        memcpy(arrs[i], &p, sizeof p);
    }
}
#define PCS_FREE(...) \
    pcs_free_arrays((void *const[]){__VA_ARGS__}, sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/* pcs_grow_arrays for one array: PCS_GROW(arr, &cap, need, first) with `arr` an lvalue array pointer. */
#define PCS_GROW(arr, cap, need, first) \
    pcs_grow_arrays((cap), (need), (first), 1, (void *const[]){&(arr)}, (const size_t[]){sizeof *(arr)})

/* A new list of Python ints from n uint64 values (block hashes); NULL with an exception set. */
static inline PyObject *pcs_list_u64(const uint64_t *v, Py_ssize_t n) {
    PyObject *l = PyList_New(n);
    for (Py_ssize_t i = 0; l && i < n; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
        if (!x) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, x);
    }
    return l;
}

/* The state behind a function's only argument, a capsule named `name`; NULL with an exception set. */
static inline void *pcs_state_arg(PyObject *args, const char *name) {
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    return PyCapsule_GetPointer(cap, name);
}
#endif

/* The slots every compiled type of pcs sets, opening a static PyTypeObject's initializer (the type's own slots
 * follow): PCS_TYPE_HEAD("pcs.cache._lruhier.Hierarchy", Hier, hier_dealloc, "doc"). Include after <Python.h>. */
#define PCS_TYPE_HEAD(full_name, c_type, dealloc, doc)                                             \
    PyVarObject_HEAD_INIT(NULL, 0) .tp_name = full_name, .tp_basicsize = sizeof(c_type),          \
    .tp_dealloc = (destructor)(dealloc), .tp_flags = Py_TPFLAGS_DEFAULT, .tp_doc = doc

/* The whole initializer of a compiled record made only by C code (no constructor from Python), read through its
 * members and getters: static PyTypeObject AdmType = {PCS_TYPE_RECORD("pcs.cache._lruhier.Admission", Adm,
 * adm_dealloc, "doc", adm_members, adm_getset)}. Include after <Python.h>. */
#define PCS_TYPE_RECORD(full_name, c_type, dealloc, doc, members, getset)                          \
    PCS_TYPE_HEAD(full_name, c_type, dealloc, doc), .tp_members = members, .tp_getset = getset

/* The whole initializer of a compiled class made from Python (PyType_GenericNew, then its __init__), with its
 * methods and getters: static PyTypeObject HierType = {PCS_TYPE_CLASS("pcs.cache._lruhier.Hierarchy", Hier,
 * hier_dealloc, "doc", hier_methods, hier_getset, hier_init)}. Include after <Python.h>. */
#define PCS_TYPE_CLASS(full_name, c_type, dealloc, doc, methods, getset, init)                     \
    PCS_TYPE_HEAD(full_name, c_type, dealloc, doc), .tp_methods = methods, .tp_getset = getset,   \
    .tp_init = (initproc)(init), .tp_new = PyType_GenericNew

/* The module definition and init function of a kernel with only module-level functions:
 * PCS_KERNEL_MODULE(_lruscan, "pcs.engine._lruscan", "doc", methods) defines PyInit__lruscan.
 * Include after <Python.h>. */
#define PCS_KERNEL_MODULE(short_name, full_name, doc, method_table)                               \
    static struct PyModuleDef pcs_module_def = {PyModuleDef_HEAD_INIT, full_name, doc, -1, method_table}; \
    PyMODINIT_FUNC PyInit_##short_name(void) { return PyModule_Create(&pcs_module_def); }

#endif
