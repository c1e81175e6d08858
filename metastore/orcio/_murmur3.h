/* Hive/ORC's Murmur3 hash64 (a single-lane hash over 8-byte little-endian blocks with the x64_128 block mix, a
 * 1..7 byte tail mixed without the rotation step, then h ^= len and fmix64; see metastore/orcio/_murmur3.py, the
 * numpy reference). Shared by metastore/orcio/_murmur3_native.c and metastore/index/_kernels.c. */
#ifndef METASTORE_ORCIO_MURMUR3_H
#define METASTORE_ORCIO_MURMUR3_H

#include <stdint.h>
#include <string.h>

#define MURMUR_SEED 104729ULL
#define MURMUR_C1 0x87C37B91114253D5ULL
#define MURMUR_C2 0x4CF5AD432745937FULL
#define MURMUR_N1 0x52DCE729ULL
#define MURMUR_F1 0xFF51AFD7ED558CCDULL
#define MURMUR_F2 0xC4CEB9FE1A85EC53ULL

static inline uint64_t murmur_rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t murmur_mix_key(uint64_t k) {
    k *= MURMUR_C1;
    k = murmur_rotl64(k, 31);
    return k * MURMUR_C2;
}

static inline uint64_t murmur_fmix64(uint64_t h) {
    h ^= h >> 33;
    h *= MURMUR_F1;
    h ^= h >> 33;
    h *= MURMUR_F2;
    return h ^ (h >> 33);
}

/* little-endian 8-byte load from any address */
static inline uint64_t murmur_load64(const uint8_t *p) {
    uint64_t k;
    memcpy(&k, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    k = __builtin_bswap64(k);
#endif
    return k;
}

/* hash64 of len bytes at data */
static inline uint64_t hash64_bytes(const uint8_t *data, uint64_t len, uint64_t seed) {
    uint64_t h = seed;
    uint64_t nblocks = len >> 3;
    for (uint64_t i = 0; i < nblocks; i++) {
        h ^= murmur_mix_key(murmur_load64(data + 8 * i));
        h = murmur_rotl64(h, 27) * 5 + MURMUR_N1;
    }
    uint64_t rest = len & 7;
    if (rest) {
        const uint8_t *tail = data + 8 * nblocks;
        uint64_t k = 0;
        for (uint64_t i = 0; i < rest; i++) k |= (uint64_t)tail[i] << (8 * i);
        h ^= murmur_mix_key(k);
    }
    h ^= len;
    return murmur_fmix64(h);
}

/* Hive's hash64(long): the hash of the value's 8 big-endian bytes (one block, no tail). */
static inline uint64_t hash64_long(uint64_t value) {
    uint64_t h = MURMUR_SEED ^ murmur_mix_key(__builtin_bswap64(value));
    h = murmur_rotl64(h, 27) * 5 + MURMUR_N1;
    h ^= 8;
    return murmur_fmix64(h);
}

#endif
