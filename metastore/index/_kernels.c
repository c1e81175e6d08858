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
 *
 * bloom_add_blocked(words, keys, rounds, hashed) -> int
 *     The blocked scheme (bloom.blocked_positions): ``words`` is len(words) / 8 blocks of 8 words; a key's bits
 *     all go to block ((h >> 32) * blocks) >> 32, ``rounds`` rounds of 8 bits, round r setting bit
 *     (g >> 6w) & 63 of word w of the block, g = mix(h + (r + 1) * 0x9E3779B97F4A7C15). ``keys`` and
 *     ``hashed`` as for bloom_add; returns how many bits of the filter are set afterwards.
 *
 * merge_runs(keys, ids, bases, out_keys, out_ids) -> int
 *     Merges sorted runs of int64 keys (each non-decreasing) into out_keys, ordered by key and, for equal keys,
 *     by run (the order a stable sort of the runs' concatenation gives: btree._int_pairs_order), and writes each
 *     key's id to out_ids (uint16 or uint32): bases[r] plus the run's own id (ids[r], uint16 or uint32), or
 *     bases[r] alone where ids[r] is None. out_keys and out_ids hold exactly the runs' keys. Two loser trees of
 *     (key, run) pairs, one filling the output from the front and one from the end (log2(runs) comparisons per
 *     key; the two independent steps overlap in the processor); runs already in order are copied. Returns how
 *     many output keys equal the key before them (0: the keys are distinct, so no grouping into postings is
 *     needed).
 *
 * pack_runs(keys, ids, bases, packed, starts, bits, id_bits) -> (low, shift) | None
 * unpack_runs(packed, starts, low, shift, id_bits, out_keys, out_ids) -> int
 *     merge_runs's result in three steps (ranged.py): pack_runs cuts the runs' pairs into 2**bits buckets of
 *     their keys' top bits above the smallest key and packs each pair into one uint64 (the key's remaining bits
 *     above the id); the caller sorts each bucket's numbers (numpy's sort, vectorised); unpack_runs gives the
 *     keys and ids back, by key then id (merge_runs's order where ids ascend with the runs and, among a run's
 *     equal keys, along it), and the count of repeated keys.
 *
 * encode_int_leaf(keys, ids, offsets, start, end, lo, hi, ids16) -> bytes
 *     One BTREE leaf of format 2 over sorted distinct int64 keys[start:end] (btree._encode_leaf): u32 n, u8 flags
 *     (1: one id per key, hi - lo == n; 2: u16 ids), u8 width, i64 first key, n - 1 gaps in `width` bytes (the
 *     bytes of the largest gap), then unless every key has one id the n + 1 offsets[start..end] - lo as u32,
 *     then ids[lo:hi] (uint32 in) as u16 (ids16) or u32; all little-endian.
 *
 * encode_range(packed, starts, low, shift, id_bits, keys, ids, lead, leaves, step, last_size, all16, out, table,
 *              head_keys, head_ids, tail_keys, tail_ids) -> int
 *     unpack_runs, then encode_int_leaf and zlib's crc32 over each leaf of a key range, in one pass without the
 *     GIL (ranged.py): the pairs before the range's first leaf and after its last come back as arrays, the leaves
 *     (every key with one id) one after the other in one buffer with a table of their offsets, lengths, CRCs,
 *     first keys and key counts. Links zlib (its crc32, the CRC the index files store).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h> /* crc32: the CRC-32 of zlib.crc32, which the index files store */

#include "../orcio/_murmur3.h" /* hash64_long */

#define GOLDEN 0x9E3779B97F4A7C15ULL
#define MIX1 0xBF58476D1CE4E5B9ULL
#define MIX2 0x94D049BB133111EBULL

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

/* ------------------------------------------------------------------------------------------ bloom_add_blocked */

/* The blocked scheme: a key's bits all in one 512-bit block (8 words); rounds of 8 bits, one bit per word of the
 * block each, the 6-bit positions of round r from g = mix(h + (r + 1) * GOLDEN), word w taking bits 6w..6w+5.
 * Per slab of keys: their hashes and blocks, then round by round the position words (a vector loop) and the
 * bits: eight ORs into one cache line a key, as one 512-bit (or two 256-bit) vector OR where the processor has
 * AVX-512 or AVX2 (picked once at import; the same bits as the plain loop). */
static void set_blocked_plain(uint64_t *words, const uint64_t *at, const uint64_t *g, Py_ssize_t count) {
    for (Py_ssize_t j = 0; j < count; j++) {
        uint64_t *block = words + at[j];
        uint64_t x = g[j];
        for (int w = 0; w < 8; w++) block[w] |= 1ULL << ((x >> (6 * w)) & 63);
    }
}

typedef void (*set_blocked_fn)(uint64_t *, const uint64_t *, const uint64_t *, Py_ssize_t);
static set_blocked_fn set_blocked = set_blocked_plain;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_VECTOR_SETS 1

__attribute__((target("avx512f")))
static void set_blocked_avx512(uint64_t *words, const uint64_t *at, const uint64_t *g, Py_ssize_t count) {
    const __m512i shifts = _mm512_set_epi64(42, 36, 30, 24, 18, 12, 6, 0);
    const __m512i low6 = _mm512_set1_epi64(63), one = _mm512_set1_epi64(1);
    for (Py_ssize_t j = 0; j < count; j++) {
        __m512i x = _mm512_set1_epi64((long long)g[j]);
        __m512i bits = _mm512_sllv_epi64(one, _mm512_and_si512(_mm512_srlv_epi64(x, shifts), low6));
        void *block = words + at[j];
        _mm512_storeu_si512(block, _mm512_or_si512(_mm512_loadu_si512(block), bits));
    }
}

__attribute__((target("avx2")))
static void set_blocked_avx2(uint64_t *words, const uint64_t *at, const uint64_t *g, Py_ssize_t count) {
    const __m256i low_shifts = _mm256_set_epi64x(18, 12, 6, 0), high_shifts = _mm256_set_epi64x(42, 36, 30, 24);
    const __m256i low6 = _mm256_set1_epi64x(63), one = _mm256_set1_epi64x(1);
    for (Py_ssize_t j = 0; j < count; j++) {
        __m256i x = _mm256_set1_epi64x((long long)g[j]);
        __m256i low = _mm256_sllv_epi64(one, _mm256_and_si256(_mm256_srlv_epi64(x, low_shifts), low6));
        __m256i high = _mm256_sllv_epi64(one, _mm256_and_si256(_mm256_srlv_epi64(x, high_shifts), low6));
        __m256i *block = (__m256i *)(words + at[j]);
        _mm256_storeu_si256(block, _mm256_or_si256(_mm256_loadu_si256(block), low));
        _mm256_storeu_si256(block + 1, _mm256_or_si256(_mm256_loadu_si256(block + 1), high));
    }
}
#endif

VECTOR_CLONES
static void add_blocked(uint64_t *words, uint64_t blocks, const uint64_t *keys, Py_ssize_t n, int rounds,
                        int hashed) {
    uint64_t h[BLOCK], g[BLOCK];
    uint64_t at[BLOCK];
    for (Py_ssize_t a = 0; a < n; a += BLOCK) {
        Py_ssize_t count = n - a < BLOCK ? n - a : BLOCK;
        for (Py_ssize_t j = 0; j < count; j++) {
            uint64_t v = hashed ? keys[a + j] : hash64_long(keys[a + j]);
            h[j] = v;
            at[j] = ((v >> 32) * blocks >> 32) * 8;
        }
        for (int r = 0; r < rounds; r++) {
            uint64_t salt = (uint64_t)(r + 1) * GOLDEN;
            for (Py_ssize_t j = 0; j < count; j++) g[j] = mix64(h[j] + salt);
            set_blocked(words, at, g, count);
        }
    }
}

/* bloom_add_blocked's bit setter by name ("plain", "avx2", "avx512"), for the tests; False when this processor
 * or build has no such one */
static PyObject *use_bloom_setter(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s:use_bloom_setter", &name)) return NULL;
    set_blocked_fn chosen = NULL;
    if (strcmp(name, "plain") == 0) chosen = set_blocked_plain;
#ifdef HAVE_VECTOR_SETS
    else if (strcmp(name, "avx2") == 0 && __builtin_cpu_supports("avx2")) chosen = set_blocked_avx2;
    else if (strcmp(name, "avx512") == 0 && __builtin_cpu_supports("avx512f")) chosen = set_blocked_avx512;
#endif
    if (chosen == NULL) Py_RETURN_FALSE;
    set_blocked = chosen;
    Py_RETURN_TRUE;
}

static void pick_bloom_setter(void) {
#ifdef HAVE_VECTOR_SETS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        set_blocked = set_blocked_avx512;
    else if (__builtin_cpu_supports("avx2"))
        set_blocked = set_blocked_avx2;
#endif
}

static PyObject *bloom_add_blocked(PyObject *self, PyObject *args) {
    PyObject *words_obj, *keys_obj;
    int rounds, hashed;
    if (!PyArg_ParseTuple(args, "OOip:bloom_add_blocked", &words_obj, &keys_obj, &rounds, &hashed)) return NULL;
    if (rounds < 1 || rounds > 8) {
        PyErr_Format(PyExc_ValueError, "bloom_add_blocked: %d rounds (1..8)", rounds);
        return NULL;
    }
    Py_buffer words, keys;
    if (get_array(words_obj, &words, 8, 1, "bloom_add_blocked words") < 0) return NULL;
    if (get_array(keys_obj, &keys, 8, 0, "bloom_add_blocked keys") < 0) {
        PyBuffer_Release(&words);
        return NULL;
    }
    Py_ssize_t nwords = words.len / 8, n = keys.len / 8;
    uint64_t blocks = (uint64_t)nwords / 8;
    if (nwords % 8 || (nwords == 0 && n > 0) || blocks > (1ULL << 32)) {
        PyBuffer_Release(&words);
        PyBuffer_Release(&keys);
        PyErr_SetString(PyExc_ValueError, "bloom_add_blocked: the filter must be 1 to 2**32 blocks of 8 words");
        return NULL;
    }
    uint64_t set_bits;
    Py_BEGIN_ALLOW_THREADS
    if (n > 0) add_blocked((uint64_t *)words.buf, blocks, (const uint64_t *)keys.buf, n, rounds, hashed);
    set_bits = popcount_words((const uint64_t *)words.buf, nwords);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&words);
    PyBuffer_Release(&keys);
    return PyLong_FromUnsignedLongLong(set_bits);
}

/* ------------------------------------------------------------------------------------------ merge_runs */

typedef struct {
    const int64_t *keys;
    const void *ids; /* NULL: every id is base */
    int id_size;     /* 2 or 4 */
    uint32_t base;
    Py_ssize_t len;
} Run;

#define DONE 0x80000000u

/* (key, run) as two unsigned words that compare in the merge's order: the key with its sign bit flipped, and
 * the run number with DONE set once the run is exhausted (after every real key, even INT64_MAX) */
static inline uint64_t order_key(int64_t k) { return (uint64_t)k ^ 0x8000000000000000ULL; }

static inline int before(uint64_t ak, uint32_t as, uint64_t bk, uint32_t bs) {
    return ak < bk || (ak == bk && as < bs);
}

static inline uint32_t run_id(const Run *run, Py_ssize_t at) {
    if (run->ids == NULL) return run->base;
    if (run->id_size == 2) return run->base + ((const uint16_t *)run->ids)[at];
    return run->base + ((const uint32_t *)run->ids)[at];
}

static inline void put_id(void *out, int size, Py_ssize_t at, uint32_t id) {
    if (size == 2)
        ((uint16_t *)out)[at] = (uint16_t)id;
    else
        ((uint32_t *)out)[at] = id;
}

/* A loser tree over the runs, merging from the front (smallest first) or, with `back`, from the end (largest
 * first). The back tree sees every key complemented and run r as leaf count - 1 - r, so "smallest (key, leaf)
 * first" is the stable order reversed: among equal keys the last run's, and in a run the last position's, come
 * out first. Leaf L holds run L (front) or run count - 1 - L (back). */
typedef struct {
    const Run *runs;
    Py_ssize_t count, leaves;
    int back;
    uint64_t *node_key; /* [1..leaves-1]: the loser of each match */
    uint32_t *node_run;
    Py_ssize_t *pos; /* per leaf: its run's next position (back: counting down; done when past the end) */
    uint64_t wk;     /* the current winner: key and leaf (DONE set once every run is exhausted) */
    uint32_t wr;
} Tree;

static inline uint64_t tree_key(int back, int64_t k) { return back ? ~order_key(k) : order_key(k); }

static void tree_free(Tree *t) {
    free(t->node_key); free(t->node_run); free(t->pos);
    t->node_key = NULL; t->node_run = NULL; t->pos = NULL;
}

/* 0, or -1 when out of memory */
static int tree_init(Tree *t, const Run *runs, Py_ssize_t count, int back) {
    memset(t, 0, sizeof(*t));
    t->runs = runs;
    t->count = count;
    t->back = back;
    Py_ssize_t leaves = 1;
    while (leaves < count) leaves <<= 1;
    t->leaves = leaves;
    t->node_key = malloc(sizeof(uint64_t) * 2 * (size_t)leaves);
    t->node_run = malloc(sizeof(uint32_t) * 2 * (size_t)leaves);
    t->pos = calloc((size_t)leaves, sizeof(Py_ssize_t));
    uint64_t *win_key = malloc(sizeof(uint64_t) * 2 * (size_t)leaves);
    uint32_t *win_run = malloc(sizeof(uint32_t) * 2 * (size_t)leaves);
    if (!t->node_key || !t->node_run || !t->pos || !win_key || !win_run) {
        tree_free(t); free(win_key); free(win_run);
        return -1;
    }
    for (Py_ssize_t leaf = 0; leaf < leaves; leaf++) {
        const Run *run = leaf < count ? &runs[back ? count - 1 - leaf : leaf] : NULL;
        if (run && run->len > 0) {
            t->pos[leaf] = back ? run->len - 1 : 0;
            win_key[leaves + leaf] = tree_key(back, run->keys[t->pos[leaf]]);
            win_run[leaves + leaf] = (uint32_t)leaf;
        } else {
            win_key[leaves + leaf] = UINT64_MAX;
            win_run[leaves + leaf] = (uint32_t)leaf | DONE;
        }
    }
    for (Py_ssize_t node = leaves - 1; node >= 1; node--) {
        Py_ssize_t a = 2 * node, b = 2 * node + 1;
        if (before(win_key[a], win_run[a], win_key[b], win_run[b])) {
            win_key[node] = win_key[a]; win_run[node] = win_run[a];
            t->node_key[node] = win_key[b]; t->node_run[node] = win_run[b];
        } else {
            win_key[node] = win_key[b]; win_run[node] = win_run[b];
            t->node_key[node] = win_key[a]; t->node_run[node] = win_run[a];
        }
    }
    t->wk = win_key[1];
    t->wr = win_run[1];
    free(win_key); free(win_run);
    return 0;
}

/* One step of a tree whose winner (wk, wr) and counters the caller keeps in locals: the winner's key and id to
 * out_keys[o] / out_ids[o], its run's next key into the tree. `back` is a constant where it is inlined. */
static inline void tree_step(const Tree *t, const int back, uint64_t *wk_io, uint32_t *wr_io, Py_ssize_t *repeats,
                             int64_t *previous, int64_t *restrict out_keys, void *restrict out_ids, int out_size,
                             Py_ssize_t o) {
    uint32_t leaf = *wr_io & ~DONE;
    const Run *run = &t->runs[back ? t->count - 1 - (Py_ssize_t)leaf : (Py_ssize_t)leaf];
    Py_ssize_t at = t->pos[leaf];
    t->pos[leaf] = back ? at - 1 : at + 1;
    int64_t key = run->keys[at];
    *repeats += key == *previous;
    *previous = key;
    out_keys[o] = key;
    put_id(out_ids, out_size, o, run_id(run, at));
    uint64_t wk;
    uint32_t wr = *wr_io;
    /* a hundred runs are more streams than the hardware prefetcher follows */
    if (back) {
        if (at >= 64) {
            __builtin_prefetch(run->keys + at - 64);
            if (run->ids) __builtin_prefetch((const char *)run->ids + (size_t)(at - 64) * (size_t)run->id_size);
        }
        if (at > 0) {
            wk = tree_key(1, run->keys[at - 1]);
        } else {
            wk = UINT64_MAX;
            wr = leaf | DONE;
        }
    } else {
        __builtin_prefetch(run->keys + at + 64);
        if (run->ids) __builtin_prefetch((const char *)run->ids + (size_t)(at + 64) * (size_t)run->id_size);
        if (at + 1 < run->len) {
            wk = tree_key(0, run->keys[at + 1]);
        } else {
            wk = UINT64_MAX;
            wr = leaf | DONE;
        }
    }
    /* replay the winner's path to the root; the swaps by masks (no branch: the outcome is a coin toss) */
    uint64_t *restrict node_key = t->node_key;
    uint32_t *restrict node_run = t->node_run;
    for (Py_ssize_t node = ((Py_ssize_t)leaf + t->leaves) >> 1; node >= 1; node >>= 1) {
        uint64_t nk = node_key[node];
        uint32_t nr = node_run[node];
        uint64_t swap = (uint64_t)0 - (uint64_t)((nk < wk) | ((nk == wk) & (nr < wr)));
        uint64_t dk = (nk ^ wk) & swap;
        uint32_t dr = (nr ^ wr) & (uint32_t)swap;
        node_key[node] = nk ^ dk;
        node_run[node] = nr ^ dr;
        wk ^= dk;
        wr ^= dr;
    }
    *wk_io = wk;
    *wr_io = wr;
}

/* the number of output keys equal to the key before them (0: every key distinct), or -1 when out of memory */
static Py_ssize_t merge(const Run *runs, Py_ssize_t count, int64_t *out_keys, void *out_ids, int out_size) {
    /* runs in order already (each starts at or after the previous one's end): the concatenation */
    int ordered = 1;
    int64_t last = 0;
    int seen = 0;
    for (Py_ssize_t r = 0; r < count && ordered; r++) {
        if (runs[r].len == 0) continue;
        if (seen && runs[r].keys[0] < last) ordered = 0;
        last = runs[r].keys[runs[r].len - 1];
        seen = 1;
    }
    if (ordered) {
        Py_ssize_t o = 0, repeats = 0;
        for (Py_ssize_t r = 0; r < count; r++) {
            const Run *run = &runs[r];
            /* copied in pieces that stay in cache while their repeats are counted */
            for (Py_ssize_t j = 0; j < run->len; j += 8192) {
                Py_ssize_t piece = run->len - j < 8192 ? run->len - j : 8192;
                const int64_t *from = run->keys + j;
                memcpy(out_keys + o + j, from, (size_t)piece * sizeof(int64_t));
                if (o + j > 0) repeats += from[0] == out_keys[o + j - 1];
                for (Py_ssize_t q = 1; q < piece; q++) repeats += from[q] == from[q - 1];
            }
            if (run->ids == NULL && out_size == 4) {
                for (Py_ssize_t j = 0; j < run->len; j++) ((uint32_t *)out_ids)[o + j] = run->base;
            } else if (run->ids == NULL) {
                for (Py_ssize_t j = 0; j < run->len; j++) ((uint16_t *)out_ids)[o + j] = (uint16_t)run->base;
            } else {
                for (Py_ssize_t j = 0; j < run->len; j++) put_id(out_ids, out_size, o + j, run_id(run, j));
            }
            o += run->len;
        }
        return repeats;
    }
    /* not in order: two loser trees, one emitting the smallest keys from the front of the output and one the
     * largest from its end, until they meet in the middle; their steps are independent, so the processor
     * overlaps the two chains of dependent loads and comparisons that bound one tree (a key's step waits for
     * the previous key's whole replay) */
    Py_ssize_t total = 0;
    for (Py_ssize_t r = 0; r < count; r++) total += runs[r].len;
    Tree front, back;
    if (tree_init(&front, runs, count, 0) < 0) return -1;
    if (tree_init(&back, runs, count, 1) < 0) {
        tree_free(&front);
        return -1;
    }
    Py_ssize_t from_back = total / 2, from_front = total - from_back;
    uint64_t fk = front.wk, bk = back.wk;
    uint32_t fr = front.wr, br = back.wr;
    Py_ssize_t front_repeats = 0, back_repeats = 0;
    /* each side compares a key with the one it emitted before; its first key with a value it cannot be (its
     * own with the lowest bit flipped, from the tree's winner: key ^ sign bit, complemented on the back) */
    int64_t front_previous = (int64_t)((fk ^ 0x8000000000000000ULL) ^ 1);
    int64_t back_previous = (int64_t)((~bk ^ 0x8000000000000000ULL) ^ 1);
    for (Py_ssize_t o = 0; o < from_back; o++) {
        tree_step(&front, 0, &fk, &fr, &front_repeats, &front_previous, out_keys, out_ids, out_size, o);
        tree_step(&back, 1, &bk, &br, &back_repeats, &back_previous, out_keys, out_ids, out_size, total - 1 - o);
    }
    if (from_front > from_back)
        tree_step(&front, 0, &fk, &fr, &front_repeats, &front_previous, out_keys, out_ids, out_size, from_back);
    Py_ssize_t repeats = front_repeats + back_repeats;
    if (from_front > 0 && from_back > 0) repeats += out_keys[from_front - 1] == out_keys[from_front];
    tree_free(&front);
    tree_free(&back);
    return repeats;
}

/* The runs of merge_runs's arguments (keys, ids, bases), their buffers held until runs_release */
typedef struct {
    PyObject *keys_seq, *ids_seq, *bases_seq;
    Py_ssize_t count, total;
    Run *runs;
    Py_buffer *views; /* 2 per run: keys, ids */
    char *held;       /* which views are held */
} Runs;

static void runs_release(Runs *rs) {
    if (rs->views) {
        for (Py_ssize_t i = 0; i < 2 * rs->count; i++)
            if (rs->held[i]) PyBuffer_Release(&rs->views[i]);
    }
    free(rs->runs); free(rs->views); free(rs->held);
    Py_XDECREF(rs->keys_seq); Py_XDECREF(rs->ids_seq); Py_XDECREF(rs->bases_seq);
    memset(rs, 0, sizeof(*rs));
}

static int runs_parse(Runs *rs, PyObject *keys_obj, PyObject *ids_obj, PyObject *bases_obj) {
    memset(rs, 0, sizeof(*rs));
    rs->keys_seq = PySequence_Fast(keys_obj, "merge_runs: keys must be a sequence");
    if (!rs->keys_seq) return -1;
    rs->ids_seq = PySequence_Fast(ids_obj, "merge_runs: ids must be a sequence");
    if (!rs->ids_seq) { runs_release(rs); return -1; }
    rs->bases_seq = PySequence_Fast(bases_obj, "merge_runs: bases must be a sequence");
    if (!rs->bases_seq) { runs_release(rs); return -1; }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(rs->keys_seq);
    if (PySequence_Fast_GET_SIZE(rs->ids_seq) != count || PySequence_Fast_GET_SIZE(rs->bases_seq) != count) {
        PyErr_SetString(PyExc_ValueError, "merge_runs: keys, ids and bases differ in length");
        runs_release(rs);
        return -1;
    }
    if (count >= (Py_ssize_t)DONE) {
        PyErr_SetString(PyExc_ValueError, "merge_runs: too many runs");
        runs_release(rs);
        return -1;
    }
    rs->count = count;
    rs->runs = calloc((size_t)count + 1, sizeof(Run));
    rs->views = calloc(2 * (size_t)count + 1, sizeof(Py_buffer));
    rs->held = calloc(2 * (size_t)count + 1, 1);
    if (!rs->runs || !rs->views || !rs->held) { PyErr_NoMemory(); runs_release(rs); return -1; }
    Run *runs = rs->runs;
    Py_buffer *views = rs->views;
    for (Py_ssize_t r = 0; r < count; r++) {
        if (get_array(PySequence_Fast_GET_ITEM(rs->keys_seq, r), &views[2 * r], 8, 0, "merge_runs keys") < 0) {
            runs_release(rs);
            return -1;
        }
        rs->held[2 * r] = 1;
        runs[r].keys = (const int64_t *)views[2 * r].buf;
        runs[r].len = views[2 * r].len / 8;
        PyObject *ids = PySequence_Fast_GET_ITEM(rs->ids_seq, r);
        if (ids != Py_None) {
            if (PyObject_GetBuffer(ids, &views[2 * r + 1], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
                runs_release(rs);
                return -1;
            }
            rs->held[2 * r + 1] = 1;
            Py_ssize_t size = views[2 * r + 1].itemsize;
            if ((size != 2 && size != 4) || views[2 * r + 1].len != size * runs[r].len) {
                PyErr_SetString(PyExc_ValueError, "merge_runs: a run's ids must be uint16 or uint32, one per key");
                runs_release(rs);
                return -1;
            }
            runs[r].ids = views[2 * r + 1].buf;
            runs[r].id_size = (int)size;
        }
        unsigned long long base = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(rs->bases_seq, r));
        if (PyErr_Occurred()) { runs_release(rs); return -1; }
        if (base > 0xFFFFFFFFULL) {
            PyErr_SetString(PyExc_ValueError, "merge_runs: a base id past 32 bits");
            runs_release(rs);
            return -1;
        }
        runs[r].base = (uint32_t)base;
        rs->total += runs[r].len;
    }
    return 0;
}

static PyObject *merge_runs(PyObject *self, PyObject *args) {
    PyObject *keys_obj, *ids_obj, *bases_obj, *out_keys_obj, *out_ids_obj;
    if (!PyArg_ParseTuple(args, "OOOOO:merge_runs", &keys_obj, &ids_obj, &bases_obj, &out_keys_obj, &out_ids_obj))
        return NULL;
    Runs rs;
    if (runs_parse(&rs, keys_obj, ids_obj, bases_obj) < 0) return NULL;
    PyObject *result = NULL;
    Py_buffer out_keys = {0}, out_ids = {0};
    int have_out_keys = 0, have_out_ids = 0;
    Py_ssize_t total = rs.total;
    if (get_array(out_keys_obj, &out_keys, 8, 1, "merge_runs out_keys") < 0) goto done;
    have_out_keys = 1;
    if (PyObject_GetBuffer(out_ids_obj, &out_ids, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) goto done;
    have_out_ids = 1;
    if ((out_ids.itemsize != 2 && out_ids.itemsize != 4) || out_keys.len / 8 != total ||
        out_ids.len / out_ids.itemsize != total) {
        PyErr_SetString(PyExc_ValueError, "merge_runs: the outputs must hold every key (int64) and id (uint16/32)");
        goto done;
    }
    Py_ssize_t repeats;
    Py_BEGIN_ALLOW_THREADS
    repeats = merge(rs.runs, rs.count, (int64_t *)out_keys.buf, out_ids.buf, (int)out_ids.itemsize);
    Py_END_ALLOW_THREADS
    if (repeats < 0) { PyErr_NoMemory(); goto done; }
    result = PyLong_FromSsize_t(repeats);
done:
    if (have_out_keys) PyBuffer_Release(&out_keys);
    if (have_out_ids) PyBuffer_Release(&out_ids);
    runs_release(&rs);
    return result;
}

/* ------------------------------------------------------------------------------------------ pack_runs */

/* pack_runs(keys, ids, bases, packed, starts, bits, id_bits) -> (low, shift) or None
 * The runs' (key, id) pairs (merge_runs's arguments) cut into 2**bits buckets of their keys' top bits above the
 * smallest key (low), each pair packed into one uint64 of its bucket: the key's bits below the bucket's (shift
 * bits) above the id's id_bits bits; starts[b] is where bucket b begins in packed (starts[2**bits] the end).
 * Sorting each bucket's packed numbers orders its pairs by key, then id; unpack_runs turns them back. None when
 * the keys' bits below the buckets' and the id bits do not fit 64 bits together (then nothing is written), a
 * ValueError when an id does not fit id_bits. */
static PyObject *pack_runs(PyObject *self, PyObject *args) {
    PyObject *keys_obj, *ids_obj, *bases_obj, *packed_obj, *starts_obj;
    int bits, id_bits;
    if (!PyArg_ParseTuple(args, "OOOOOii:pack_runs", &keys_obj, &ids_obj, &bases_obj, &packed_obj, &starts_obj,
                          &bits, &id_bits))
        return NULL;
    if (bits < 0 || bits > 24 || id_bits < 0 || id_bits > 32) {
        PyErr_SetString(PyExc_ValueError, "pack_runs: bits must be 0..24 and id_bits 0..32");
        return NULL;
    }
    Runs rs;
    if (runs_parse(&rs, keys_obj, ids_obj, bases_obj) < 0) return NULL;
    PyObject *result = NULL;
    Py_buffer packed = {0}, starts = {0};
    int have_packed = 0, have_starts = 0;
    Py_ssize_t buckets = (Py_ssize_t)1 << bits;
    if (get_array(packed_obj, &packed, 8, 1, "pack_runs packed") < 0) goto done;
    have_packed = 1;
    if (get_array(starts_obj, &starts, 8, 1, "pack_runs starts") < 0) goto done;
    have_starts = 1;
    if (packed.len / 8 != rs.total || starts.len / 8 != buckets + 1) {
        PyErr_SetString(PyExc_ValueError, "pack_runs: packed must hold every pair and starts 2**bits + 1 entries");
        goto done;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (Py_ssize_t r = 0; r < rs.count; r++) {
        const Run *run = &rs.runs[r];
        if (run->len == 0) continue;
        uint64_t first = order_key(run->keys[0]), last = order_key(run->keys[run->len - 1]);
        lo = first < lo ? first : lo;
        hi = last > hi ? last : hi;
    }
    if (rs.total == 0) lo = hi = 0;
    uint64_t span = hi - lo;
    int top = span ? 64 - __builtin_clzll(span) : 0;
    int shift = top > bits ? top - bits : 0;
    if (shift >= 64 || shift + id_bits > 64) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    int64_t *next = (int64_t *)starts.buf;
    uint64_t *out = (uint64_t *)packed.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(next, 0, (size_t)(buckets + 1) * sizeof(int64_t));
    for (Py_ssize_t r = 0; r < rs.count; r++) {
        const Run *run = &rs.runs[r];
        for (Py_ssize_t j = 0; j < run->len; j++) next[((order_key(run->keys[j]) - lo) >> shift) + 1]++;
    }
    for (Py_ssize_t b = 0; b < buckets; b++) next[b + 1] += next[b];
    uint64_t low_mask = ((uint64_t)1 << shift) - 1;
    uint64_t id_limit = id_bits >= 32 ? 0x100000000ULL : ((uint64_t)1 << id_bits);
    for (Py_ssize_t r = 0; r < rs.count; r++) {
        const Run *run = &rs.runs[r];
        for (Py_ssize_t j = 0; j < run->len; j++) {
            uint64_t u = order_key(run->keys[j]) - lo;
            uint64_t id = run_id(run, j);
            bad |= id >= id_limit;
            /* next[b]: bucket b's next place (it starts at the count of the buckets below it) */
            int64_t at = next[u >> shift]++;
            out[at] = ((u & low_mask) << id_bits) | id;
        }
    }
    /* next[b] is now the end of bucket b: shifted up one, the starts */
    for (Py_ssize_t b = buckets; b > 0; b--) next[b] = next[b - 1];
    next[0] = 0;
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "pack_runs: an id does not fit id_bits");
        goto done;
    }
    result = Py_BuildValue("KK", (unsigned long long)lo, (unsigned long long)shift);
done:
    if (have_packed) PyBuffer_Release(&packed);
    if (have_starts) PyBuffer_Release(&starts);
    runs_release(&rs);
    return result;
}

/* Whether `buckets` starts (st[0..buckets]) span n packed numbers without decreasing; else a ValueError naming
 * `what` is set and -1 returned. Shared by unpack_runs and encode_range, which both read pack_runs's buckets. */
static int check_starts(const int64_t *st, Py_ssize_t buckets, Py_ssize_t n, const char *what) {
    if (buckets < 1 || st[0] != 0 || st[buckets] != n) {
        PyErr_Format(PyExc_ValueError, "%s: starts must span packed", what);
        return -1;
    }
    for (Py_ssize_t b = 0; b < buckets; b++)
        if (st[b + 1] < st[b]) {
            PyErr_Format(PyExc_ValueError, "%s: starts must not decrease", what);
            return -1;
        }
    return 0;
}

/* The ids' mask for id_bits bits (ids are uint32). */
static inline uint64_t id_mask_of(int id_bits) {
    return id_bits >= 32 ? 0xFFFFFFFFULL : (((uint64_t)1 << id_bits) - 1);
}

/* One packed number of bucket b back to its pair: the key's order_key bits (low + the bucket's top bits + the bits
 * above the id) and the id (its low id_bits bits), as pack_runs packed them. */
static inline uint64_t packed_key(uint64_t x, Py_ssize_t b, uint64_t lo, int shift, int id_bits) {
    return lo + (shift >= 64 ? 0 : ((uint64_t)b << shift)) + (id_bits >= 64 ? 0 : (x >> id_bits));
}

/* unpack_runs(packed, starts, low, shift, id_bits, out_keys, out_ids) -> int
 * The pairs of pack_runs's buckets, each bucket's packed numbers sorted, as keys (int64) and ids (uint32): by
 * key, then id. Returns how many keys equal the key before them. */
static PyObject *unpack_runs(PyObject *self, PyObject *args) {
    PyObject *packed_obj, *starts_obj, *out_keys_obj, *out_ids_obj;
    unsigned long long lo, shift_arg;
    int id_bits;
    if (!PyArg_ParseTuple(args, "OOKKiOO:unpack_runs", &packed_obj, &starts_obj, &lo, &shift_arg, &id_bits,
                          &out_keys_obj, &out_ids_obj))
        return NULL;
    if (shift_arg > 64 || id_bits < 0 || id_bits > 32 || shift_arg + (unsigned long long)id_bits > 64) {
        PyErr_SetString(PyExc_ValueError, "unpack_runs: shift and id_bits must fit 64 bits");
        return NULL;
    }
    int shift = (int)shift_arg;
    Py_buffer packed, starts, out_keys, out_ids;
    if (get_array(packed_obj, &packed, 8, 0, "unpack_runs packed") < 0) return NULL;
    if (get_array(starts_obj, &starts, 8, 0, "unpack_runs starts") < 0) { PyBuffer_Release(&packed); return NULL; }
    if (get_array(out_keys_obj, &out_keys, 8, 1, "unpack_runs out_keys") < 0) {
        PyBuffer_Release(&packed); PyBuffer_Release(&starts); return NULL;
    }
    if (get_array(out_ids_obj, &out_ids, 4, 1, "unpack_runs out_ids") < 0) {
        PyBuffer_Release(&packed); PyBuffer_Release(&starts); PyBuffer_Release(&out_keys); return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = packed.len / 8, buckets = starts.len / 8 - 1;
    const int64_t *st = (const int64_t *)starts.buf;
    if (out_keys.len / 8 != n || out_ids.len / 4 != n) {
        PyErr_SetString(PyExc_ValueError, "unpack_runs: the outputs must hold every pair");
        goto done;
    }
    if (check_starts(st, buckets, n, "unpack_runs") < 0) goto done;
    Py_ssize_t repeats = 0;
    const uint64_t *p = (const uint64_t *)packed.buf;
    int64_t *k = (int64_t *)out_keys.buf;
    uint32_t *ids = (uint32_t *)out_ids.buf;
    Py_BEGIN_ALLOW_THREADS
    uint64_t id_mask = id_mask_of(id_bits);
    for (Py_ssize_t b = 0; b < buckets; b++)
        for (int64_t j = st[b]; j < st[b + 1]; j++) {
            k[j] = (int64_t)(packed_key(p[j], b, lo, shift, id_bits) ^ 0x8000000000000000ULL);
            ids[j] = (uint32_t)(p[j] & id_mask);
        }
    for (Py_ssize_t j = 1; j < n; j++) repeats += k[j] == k[j - 1];
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(repeats);
done:
    PyBuffer_Release(&packed);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&out_keys);
    PyBuffer_Release(&out_ids);
    return result;
}

/* ------------------------------------------------------------------------------------------ encode_int_leaf */

static inline void put_le(unsigned char *out, uint64_t v, int bytes) {
    for (int b = 0; b < bytes; b++) out[b] = (unsigned char)(v >> (8 * b));
}

/* The bytes of a leaf's largest gap between its n sorted distinct keys (as uint64 bits; gaps modulo 2**64). */
static int gap_width(const uint64_t *k, Py_ssize_t n) {
    uint64_t largest = 0;
    for (Py_ssize_t j = 1; j < n; j++) {
        uint64_t gap = k[j] - k[j - 1]; /* modulo 2**64: the true gap between sorted distinct keys */
        largest = gap > largest ? gap : largest;
    }
    int width = 0;
    while (width < 8 && (largest >> (8 * width)) != 0) width++;
    return width;
}

/* A format-2 leaf's head (u32 n, u8 flags, u8 width), first key and n - 1 gaps of `width` bytes at out; returns
 * where the offsets or ids go. A gap's low `width` bytes are put by one 8-byte store, the next gap overwriting the
 * rest; only up to the third-last key, so a store ends within the last gaps or the offsets and ids the caller
 * writes after them (for n >= 3 at least 2n bytes follow the gaps, and a store passes the gaps' end by at most
 * 8 - 2 * width). */
static unsigned char *put_keys(unsigned char *out, const uint64_t *k, Py_ssize_t n, int flags, int width) {
    put_le(out, (uint64_t)n, 4);
    out[4] = (unsigned char)flags;
    out[5] = (unsigned char)width;
    out += 6;
    if (n > 0) {
        put_le(out, k[0], 8);
        out += 8;
        Py_ssize_t j = 1;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (width > 0)
            for (; j < n - 1; j++, out += width) {
                uint64_t gap = k[j] - k[j - 1];
                memcpy(out, &gap, 8);
            }
#endif
        for (; j < n; j++, out += width) put_le(out, k[j] - k[j - 1], width);
    }
    return out;
}

/* count ids as u16 (ids16) or u32 little-endian at out; returns the end. */
static unsigned char *put_ids(unsigned char *out, const uint32_t *id, Py_ssize_t count, int ids16) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (ids16) {
        for (Py_ssize_t j = 0; j < count; j++) {
            uint16_t v = (uint16_t)id[j];
            memcpy(out + 2 * j, &v, 2);
        }
    } else {
        memcpy(out, id, 4 * (size_t)count);
    }
    return out + (ids16 ? 2 : 4) * count;
#else
    if (ids16)
        for (Py_ssize_t j = 0; j < count; j++, out += 2) put_le(out, id[j], 2);
    else
        for (Py_ssize_t j = 0; j < count; j++, out += 4) put_le(out, id[j], 4);
    return out;
#endif
}

static PyObject *encode_int_leaf(PyObject *self, PyObject *args) {
    PyObject *keys_obj, *ids_obj, *offsets_obj;
    Py_ssize_t start, end, lo, hi;
    int ids16;
    if (!PyArg_ParseTuple(args, "OOOnnnnp:encode_int_leaf", &keys_obj, &ids_obj, &offsets_obj, &start, &end, &lo, &hi,
                          &ids16))
        return NULL;
    Py_buffer keys, ids, offsets;
    int have_offsets = 0;
    PyObject *result = NULL;
    if (get_array(keys_obj, &keys, 8, 0, "encode_int_leaf keys") < 0) return NULL;
    if (get_array(ids_obj, &ids, 4, 0, "encode_int_leaf ids") < 0) {
        PyBuffer_Release(&keys);
        return NULL;
    }
    Py_ssize_t n = end - start, count = hi - lo;
    int single = count == n;
    if (start < 0 || end < start || end > keys.len / 8 || lo < 0 || hi < lo || hi > ids.len / 4 || count < n) {
        PyErr_SetString(PyExc_ValueError, "encode_int_leaf: the leaf's range lies outside the keys or ids");
        goto done;
    }
    if (!single) {
        if (offsets_obj == Py_None) {
            PyErr_SetString(PyExc_ValueError, "encode_int_leaf: keys with several ids need offsets");
            goto done;
        }
        if (get_array(offsets_obj, &offsets, 8, 0, "encode_int_leaf offsets") < 0) goto done;
        have_offsets = 1;
        if (end + 1 > offsets.len / 8) {
            PyErr_SetString(PyExc_ValueError, "encode_int_leaf: the offsets end before the leaf");
            goto done;
        }
    }
    const uint64_t *k = (const uint64_t *)keys.buf + start;
    int width = gap_width(k, n);
    int id_size = ids16 ? 2 : 4;
    Py_ssize_t size = 5 + 1 + (n > 0 ? 8 + (Py_ssize_t)width * (n - 1) : 0) + (single ? 0 : 4 * (n + 1)) +
                      (Py_ssize_t)id_size * count;
    result = PyBytes_FromStringAndSize(NULL, size);
    if (!result) goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    const int64_t *off = have_offsets ? (const int64_t *)offsets.buf : NULL;
    const uint32_t *id = (const uint32_t *)ids.buf + lo;
    Py_BEGIN_ALLOW_THREADS
    out = put_keys(out, k, n, (single ? 1 : 0) | (ids16 ? 2 : 0), width);
    if (!single)
        for (Py_ssize_t j = start; j <= end; j++, out += 4) put_le(out, (uint64_t)(off[j] - lo), 4);
    put_ids(out, id, count, ids16);
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&keys);
    PyBuffer_Release(&ids);
    if (have_offsets) PyBuffer_Release(&offsets);
    return result;
}

/* ------------------------------------------------------------------------------------------ encode_range */

/* One format-2 leaf of n sorted distinct keys k (as uint64 bits), one id each (single), written at out; its size.
 * encode_int_leaf's bytes for a leaf whose every key has one id. */
static Py_ssize_t put_single_leaf(unsigned char *out, const uint64_t *k, const uint32_t *id, Py_ssize_t n,
                                  int ids16) {
    unsigned char *at = put_keys(out, k, n, 1 | (ids16 ? 2 : 0), gap_width(k, n));
    return put_ids(at, id, n, ids16) - out;
}

/* encode_range(packed, starts, low, shift, id_bits, keys, ids, lead, leaves, step, last_size, all16, out, table,
 *              head_keys, head_ids, tail_keys, tail_ids) -> repeats
 * A key range's pairs straight to its leaves (ranged.py), in one pass: the pairs come from pack_runs's buckets,
 * each bucket's numbers sorted (packed, starts, low, shift, id_bits as unpack_runs takes them), or, when packed
 * is None, from keys (int64) and ids (uint32) already in order. The first ``lead`` pairs go to head_keys and
 * head_ids; then ``leaves`` leaves of ``step`` pairs each (the last of them ``last_size``), every key with one
 * id, each encoded as encode_int_leaf encodes it (u16 ids when all16 or the leaf's ids all fit 16 bits) one
 * after the other into ``out`` (uint8), per leaf in ``table`` (int64, leaves x 5): its offset in out, its
 * length, the CRC-32 of its bytes (zlib's), its first key and its key count; the pairs after the leaves go to
 * tail_keys and tail_ids (which hold exactly them). Returns how many keys equal the key before them (any: the
 * leaves are not what write_tree writes, and the caller drops them). ValueError when out is too small. */
static PyObject *encode_range(PyObject *self, PyObject *args) {
    PyObject *packed_obj, *starts_obj, *keys_obj, *ids_obj, *out_obj, *table_obj, *hk_obj, *hi_obj, *tk_obj, *ti_obj;
    unsigned long long lo, shift_arg;
    int id_bits, all16;
    Py_ssize_t lead, leaves, step, last_size;
    if (!PyArg_ParseTuple(args, "OOKKiOOnnnnpOOOOOO:encode_range", &packed_obj, &starts_obj, &lo, &shift_arg,
                          &id_bits, &keys_obj, &ids_obj, &lead, &leaves, &step, &last_size, &all16, &out_obj,
                          &table_obj, &hk_obj, &hi_obj, &tk_obj, &ti_obj))
        return NULL;
    if (shift_arg > 64 || id_bits < 0 || id_bits > 32 || shift_arg + (unsigned long long)id_bits > 64 || lead < 0 ||
        leaves < 0 || step < 1 || last_size < 1 || last_size > step) {
        PyErr_SetString(PyExc_ValueError, "encode_range: bad shift, id_bits, lead, leaves or leaf sizes");
        return NULL;
    }
    int shift = (int)shift_arg, from_packed = packed_obj != Py_None;
    Py_buffer views[10];
    int held = 0;
    PyObject *result = NULL;
    uint64_t *kbuf = NULL;
    uint32_t *ibuf = NULL;
    PyObject *objs[10] = {packed_obj, starts_obj, keys_obj, ids_obj, out_obj, table_obj, hk_obj, hi_obj, tk_obj,
                          ti_obj};
    static const Py_ssize_t sizes[10] = {8, 8, 8, 4, 1, 8, 8, 4, 8, 4};
    static const int writable[10] = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
    static const char *names[10] = {"encode_range packed", "encode_range starts", "encode_range keys",
                                    "encode_range ids", "encode_range out", "encode_range table",
                                    "encode_range head_keys", "encode_range head_ids", "encode_range tail_keys",
                                    "encode_range tail_ids"};
    for (int v = 0; v < 10; v++) {
        if ((v < 2 && !from_packed) || (v >= 2 && v < 4 && from_packed)) {
            memset(&views[v], 0, sizeof(Py_buffer));
            held++;
            continue;
        }
        if (get_array(objs[v], &views[v], sizes[v], writable[v], names[v]) < 0) goto done;
        held++;
    }
    Py_ssize_t n, buckets = 0;
    const int64_t *st = NULL;
    if (from_packed) {
        n = views[0].len / 8;
        buckets = views[1].len / 8 - 1;
        st = (const int64_t *)views[1].buf;
        if (check_starts(st, buckets, n, "encode_range") < 0) goto done;
    } else {
        n = views[2].len / 8;
        if (views[3].len / 4 != n) {
            PyErr_SetString(PyExc_ValueError, "encode_range: keys and ids differ in length");
            goto done;
        }
    }
    Py_ssize_t in_leaves = leaves ? (leaves - 1) * step + last_size : 0;
    Py_ssize_t tail = n - lead - in_leaves;
    if (tail < 0 || views[6].len / 8 != lead || views[7].len / 4 != lead || views[8].len / 8 != tail ||
        views[9].len / 4 != tail || views[5].len / 8 != 5 * leaves) {
        PyErr_SetString(PyExc_ValueError, "encode_range: the head, leaves and tail do not hold the pairs exactly");
        goto done;
    }
    kbuf = malloc((size_t)step * 8 + 8);
    ibuf = malloc((size_t)step * 4 + 4);
    if (!kbuf || !ibuf) { PyErr_NoMemory(); goto done; }
    unsigned char *out = (unsigned char *)views[4].buf;
    Py_ssize_t capacity = views[4].len;
    int64_t *table = (int64_t *)views[5].buf;
    int64_t *hk = (int64_t *)views[6].buf, *tk = (int64_t *)views[8].buf;
    uint32_t *hid = (uint32_t *)views[7].buf, *tid = (uint32_t *)views[9].buf;
    const uint64_t *p = from_packed ? (const uint64_t *)views[0].buf : NULL;
    const int64_t *in_keys = from_packed ? NULL : (const int64_t *)views[2].buf;
    const uint32_t *in_ids = from_packed ? NULL : (const uint32_t *)views[3].buf;
    Py_ssize_t repeats = 0, used = 0;
    int short_out = 0;
    Py_BEGIN_ALLOW_THREADS
    uint64_t id_mask = id_mask_of(id_bits);
    Py_ssize_t b = 0, j = 0;
    uint64_t previous = 0;
    /* the next pair in order: its key (order_key bits, so unsigned order is the keys' order) and id */
#define NEXT_PAIR(KEY, ID)                                                                         \
    do {                                                                                           \
        if (from_packed) {                                                                         \
            while (j >= st[b + 1]) b++;                                                            \
            uint64_t x = p[j];                                                                     \
            KEY = packed_key(x, b, lo, shift, id_bits);                                            \
            ID = (uint32_t)(x & id_mask);                                                          \
        } else {                                                                                   \
            KEY = order_key(in_keys[j]);                                                           \
            ID = in_ids[j];                                                                        \
        }                                                                                          \
        repeats += j > 0 && KEY == previous;                                                       \
        previous = KEY;                                                                            \
        j++;                                                                                       \
    } while (0)
    for (Py_ssize_t h = 0; h < lead; h++) {
        uint64_t key;
        uint32_t id;
        NEXT_PAIR(key, id);
        hk[h] = (int64_t)(key ^ 0x8000000000000000ULL);
        hid[h] = id;
    }
    for (Py_ssize_t leaf = 0; leaf < leaves && !short_out; leaf++) {
        Py_ssize_t count = leaf == leaves - 1 ? last_size : step;
        uint32_t top = 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            uint64_t key;
            uint32_t id;
            NEXT_PAIR(key, id);
            kbuf[i] = key ^ 0x8000000000000000ULL; /* the int64's own bits: gaps modulo 2**64 as the leaf takes them */
            ibuf[i] = id;
            top = id > top ? id : top;
        }
        int small = all16 || top <= 0xFFFF;
        Py_ssize_t bound = 6 + 8 + 8 * count + (small ? 2 : 4) * count;
        if (capacity - used < bound) { short_out = 1; break; }
        Py_ssize_t size = put_single_leaf(out + used, kbuf, ibuf, count, small);
        Py_ssize_t done_at = 0;
        uLong crc = crc32(0L, Z_NULL, 0);
        while (done_at < size) { /* zlib's crc32 takes at most 4 GiB a call */
            Py_ssize_t chunk = size - done_at > 0x40000000 ? 0x40000000 : size - done_at;
            crc = crc32(crc, out + used + done_at, (uInt)chunk);
            done_at += chunk;
        }
        int64_t *row = table + 5 * leaf;
        row[0] = used;
        row[1] = size;
        row[2] = (int64_t)crc;
        row[3] = (int64_t)kbuf[0];
        row[4] = count;
        used += size;
    }
    if (!short_out)
        for (Py_ssize_t t = 0; t < tail; t++) {
            uint64_t key;
            uint32_t id;
            NEXT_PAIR(key, id);
            tk[t] = (int64_t)(key ^ 0x8000000000000000ULL);
            tid[t] = id;
        }
#undef NEXT_PAIR
    Py_END_ALLOW_THREADS
    if (short_out) {
        PyErr_SetString(PyExc_ValueError, "encode_range: out is too small for the leaves");
        goto done;
    }
    result = PyLong_FromSsize_t(repeats);
done:
    for (int v = 0; v < held; v++)
        if (views[v].obj != NULL) PyBuffer_Release(&views[v]);
    free(kbuf);
    free(ibuf);
    return result;
}

static PyMethodDef methods[] = {
    {"bloom_add", bloom_add, METH_VARARGS,
     "bloom_add(words, keys, k, hashed, double_hashing) -> bits set: sets the k probe bits of every key."},
    {"bloom_add_blocked", bloom_add_blocked, METH_VARARGS,
     "bloom_add_blocked(words, keys, rounds, hashed) -> bits set: sets 8 bits a round of every key in its block."},
    {"use_bloom_setter", use_bloom_setter, METH_VARARGS,
     "use_bloom_setter(name) -> bool: bloom_add_blocked's bit setter (plain, avx2, avx512), for tests."},
    {"merge_runs", merge_runs, METH_VARARGS,
     "merge_runs(keys, ids, bases, out_keys, out_ids): merges sorted int64 runs by (key, run) with their ids."},
    {"pack_runs", pack_runs, METH_VARARGS,
     "pack_runs(keys, ids, bases, packed, starts, bits, id_bits) -> (low, shift) or None: pairs bucketed, packed."},
    {"unpack_runs", unpack_runs, METH_VARARGS,
     "unpack_runs(packed, starts, low, shift, id_bits, out_keys, out_ids) -> repeats: sorted buckets unpacked."},
    {"encode_int_leaf", encode_int_leaf, METH_VARARGS,
     "encode_int_leaf(keys, ids, offsets, start, end, lo, hi, ids16) -> bytes: one format-2 BTREE leaf."},
    {"encode_range", encode_range, METH_VARARGS,
     "encode_range(packed, starts, low, shift, id_bits, keys, ids, lead, leaves, step, last_size, all16, out, "
     "table, head_keys, head_ids, tail_keys, tail_ids) -> repeats: a key range's pairs to its leaves."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "metastore.index._kernels", "The per-key loops of index builds (numpy references in "
    "bloom.py and btree.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__kernels(void) {
    pick_bloom_setter();
    return PyModule_Create(&module);
}
