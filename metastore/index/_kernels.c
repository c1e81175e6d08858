/*
 * metastore.index._kernels: the per-key loops of index builds, compiled (built by setuptools at
 * `pip install -e .`; see pyproject.toml's [tool.setuptools] ext-modules).
 *
 * Every function here has a numpy reference in the Python modules that call it (bloom.py), and the tests build
 * the same structures both ways and compare their bytes. Arrays come in through the buffer protocol (numpy
 * arrays, C-contiguous, native byte order, the item sizes checked); the loops run without the GIL.
 *
 * bloom_add(words, keys, k, hashed, double_hashing) -> int
 *     Sets the k probe bits of every key in the filter ``words`` (uint64, the filter's 64 * len(words) bits,
 *     bit p = bit p & 63 of word p >> 6) and returns how many bits of the filter are set afterwards. ``keys`` are int64: the
 *     keys themselves (hashed = False: Murmur3 hash64 of the value's 8 big-endian bytes, Hive's hash64(long)),
 *     or their 64-bit hashes already (hashed = True). Probe positions, with m the filter's bits:
 *       double_hashing: h2 = mix(h) | 1; probe i (0..k-1): z = h + i * h2 (mod 2**64), position
 *                       ((z >> 32) * m) >> 32, or z % m when m > 2**32  (bloom.double_positions)
 *       else:           probe i (1..k): mix(h + i * 0x9E3779B97F4A7C15) % m  (bloom.probe_positions)
 *     where mix is SplitMix64's finalizer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MURMUR_SEED 104729ULL
#define C1 0x87C37B91114253D5ULL
#define C2 0x4CF5AD432745937FULL
#define N1 0x52DCE729ULL
#define F1 0xFF51AFD7ED558CCDULL
#define F2 0xC4CEB9FE1A85EC53ULL
#define GOLDEN 0x9E3779B97F4A7C15ULL
#define MIX1 0xBF58476D1CE4E5B9ULL
#define MIX2 0x94D049BB133111EBULL

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t bswap64(uint64_t x) { return __builtin_bswap64(x); }

/* Murmur3 hash64 (Hive/ORC's single-lane variant) of the 8 big-endian bytes of a long: one block, no tail. */
static inline uint64_t hash64_long(uint64_t value) {
    uint64_t k = bswap64(value);
    k *= C1;
    k = rotl64(k, 31);
    k *= C2;
    uint64_t h = MURMUR_SEED ^ k;
    h = rotl64(h, 27) * 5 + N1;
    h ^= 8;
    h ^= h >> 33;
    h *= F1;
    h ^= h >> 33;
    h *= F2;
    h ^= h >> 33;
    return h;
}

/* SplitMix64's finalizer */
static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * MIX1;
    z = (z ^ (z >> 27)) * MIX2;
    return z ^ (z >> 31);
}

/* a buffer of n items of `itemsize` bytes, C-contiguous; writable when asked */
static int get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (writable) flags |= PyBUF_WRITABLE;
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->itemsize != itemsize || view->len % itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected items of %zd bytes, got %zd", name, itemsize, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Compiled for x86-64-v4 (AVX-512) and v3 (AVX2) besides the baseline, the best one picked at load time (GCC's
 * function multiversioning): the hash and position loops below vectorise there. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef VECTOR_CLONES
#define VECTOR_CLONES
#endif

/* keys handled at a time: their hashes, steps and one probe's positions stay in L1 */
#define BLOCK 256

/* double hashing into a filter of at most 2**32 bits: per block, the keys' hashes and steps, then probe by probe
 * the positions (a vector loop: 32 x 32 -> 64-bit products), then their bits (the scattered writes) */
VECTOR_CLONES
static void add_double(uint64_t *words, uint64_t bits, const uint64_t *keys, Py_ssize_t n, int k, int hashed) {
    uint64_t z[BLOCK], step[BLOCK];
    uint32_t pos[BLOCK];
    const uint32_t m = (uint32_t)bits; /* bits <= 2**32 here: 0 for 2**32 itself, handled apart */
    for (Py_ssize_t a = 0; a < n; a += BLOCK) {
        Py_ssize_t count = n - a < BLOCK ? n - a : BLOCK;
        for (Py_ssize_t j = 0; j < count; j++) {
            uint64_t h = hashed ? keys[a + j] : hash64_long(keys[a + j]);
            z[j] = h;
            step[j] = mix64(h) | 1ULL;
        }
        for (int i = 0; i < k; i++) {
            if (m) {
                for (Py_ssize_t j = 0; j < count; j++) {
                    pos[j] = (uint32_t)(((uint64_t)(uint32_t)(z[j] >> 32) * m) >> 32);
                    z[j] += step[j];
                }
            } else { /* exactly 2**32 bits: ((z >> 32) * 2**32) >> 32 is z >> 32 */
                for (Py_ssize_t j = 0; j < count; j++) {
                    pos[j] = (uint32_t)(z[j] >> 32);
                    z[j] += step[j];
                }
            }
            for (Py_ssize_t j = 0; j < count; j++) {
                uint32_t p = pos[j];
                words[p >> 6] |= 1ULL << (p & 63);
            }
        }
    }
}

/* the other schemes, one key at a time: double hashing past 2**32 bits (z % m), and SplitMix64 positions */
static void add_other(uint64_t *words, uint64_t bits, const uint64_t *keys, Py_ssize_t n, int k, int hashed,
                      int double_hashing) {
    for (Py_ssize_t j = 0; j < n; j++) {
        uint64_t h = hashed ? keys[j] : hash64_long(keys[j]);
        if (double_hashing) {
            uint64_t step = mix64(h) | 1ULL, z = h;
            for (int i = 0; i < k; i++, z += step) {
                uint64_t p = z % bits;
                words[p >> 6] |= 1ULL << (p & 63);
            }
        } else {
            for (int i = 1; i <= k; i++) {
                uint64_t p = mix64(h + (uint64_t)i * GOLDEN) % bits;
                words[p >> 6] |= 1ULL << (p & 63);
            }
        }
    }
}

VECTOR_CLONES
static uint64_t popcount_words(const uint64_t *words, Py_ssize_t n) {
    uint64_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) total += (uint64_t)__builtin_popcountll(words[i]);
    return total;
}

static PyObject *bloom_add(PyObject *self, PyObject *args) {
    PyObject *words_obj, *keys_obj;
    int k, hashed, double_hashing;
    if (!PyArg_ParseTuple(args, "OOipp:bloom_add", &words_obj, &keys_obj, &k, &hashed, &double_hashing)) return NULL;
    if (k < 1 || k > 64) {
        PyErr_Format(PyExc_ValueError, "bloom_add: %d probes (1..64)", k);
        return NULL;
    }
    Py_buffer words, keys;
    if (get_array(words_obj, &words, 8, 1, "bloom_add words") < 0) return NULL;
    if (get_array(keys_obj, &keys, 8, 0, "bloom_add keys") < 0) {
        PyBuffer_Release(&words);
        return NULL;
    }
    Py_ssize_t nwords = words.len / 8, n = keys.len / 8;
    if (nwords == 0 && n > 0) {
        PyBuffer_Release(&words);
        PyBuffer_Release(&keys);
        PyErr_SetString(PyExc_ValueError, "bloom_add: a filter of no bits");
        return NULL;
    }
    uint64_t set_bits;
    uint64_t bits = 64 * (uint64_t)nwords;
    Py_BEGIN_ALLOW_THREADS
    if (n > 0) {
        if (double_hashing && bits <= (1ULL << 32))
            add_double((uint64_t *)words.buf, bits, (const uint64_t *)keys.buf, n, k, hashed);
        else
            add_other((uint64_t *)words.buf, bits, (const uint64_t *)keys.buf, n, k, hashed, double_hashing);
    }
    set_bits = popcount_words((const uint64_t *)words.buf, nwords);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&words);
    PyBuffer_Release(&keys);
    return PyLong_FromUnsignedLongLong(set_bits);
}

static PyMethodDef methods[] = {
    {"bloom_add", bloom_add, METH_VARARGS,
     "bloom_add(words, keys, k, hashed, double_hashing) -> bits set: sets the k probe bits of every key."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "metastore.index._kernels", "The per-key loops of index builds (numpy references in "
    "bloom.py and btree.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
