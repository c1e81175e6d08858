"""BLOOM: one bloom filter per stripe, sized for the stripe's distinct values at the configured false-positive
rate, over the typed canonical keys (columns.py): int64 keys hash as their 8 bytes (Murmur3 64, Hive's
``hash64(long)``), bytes keys as themselves. Build and probe share these functions, so a value formatted
differently (``1`` vs ``1.0`` for a decimal, ``'a'`` vs ``'a  '`` for a char) can never miss.

The filters are ours, not ORC's: ORC's probes are ``h1 + i*h2`` over 32-bit halves, taken modulo the filter
size, which collapse to one or two bits whenever ``h2`` shares a large factor with the filter size. For stripes
of a few distinct values (64-bit filters) that put the real false-positive rate near 1 % at a configured 0.1 %.
A filter grows until the textbook rate ``(1 - e^(-kn/m))^k`` is within the configured one. Two probe schemes
(the description's ``bloom_probes``, the BLOOM block format's version):

- ``splitmix64-dh`` (written now): for filters of DOUBLE_MIN_BITS (16,384) bits or more, double hashing over
  64-bit words, ``z_i = h + i * h2`` (i = 0..k-1, modulo 2**64) with ``h2 = mix(h) | 1``, and the bit position
  taken from the top 32 bits of ``z_i`` by a multiply and shift, ``((z_i >> 32) * m) >> 32`` (``z_i % m`` for
  filters of 2**32 bits or more): four vector operations a probe instead of twelve. Smaller filters use the
  positions of ``splitmix64`` (below): in a small filter a progression's probes fall on few bits too often;
- ``splitmix64`` (files written before; still read, never written): every probe an independent SplitMix64 mix
  of the hash and the probe number, ``mix(h + i * golden) % m`` (i = 1..k).

A filter is sized for the stripe's distinct values. A build from a stripe's raw int64 values (``values_filter``)
does not sort them to count those: it sets the bits of every value in a filter sized for the number of values
and keeps it when the share of bits set says the values are (almost) all distinct (the linear-counting estimate
at least ``1 - DISTINCT_SLACK`` of them), otherwise counts the distinct values exactly and builds the filter for
that count. On all-distinct values both give the filter of the distinct keys bit for bit; a stripe with at most
about 2 % repeated values may get a filter up to 2 % larger than its distinct count needs (never smaller, so the
configured rate holds).

The build's per-value loop (hash, probe positions, bits) runs in the compiled kernel (kernels.py,
``_kernels.bloom_add``) when it is built: the same bits as the numpy code here, which runs otherwise and is the
reference the kernel is tested against (tests/index/test_kernels.py).

Answers equality and IN (``KeySet`` and point ``KeyRange`` leaves); everything else is undecided. A stripe
with no non-null value has an empty filter and matches nothing. Blocks: the filters' 64-bit words back to back,
and an index of (first word u64, words u32, hash functions u32) per stripe.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from metastore.index import kernels
from metastore.index.bind import KeyRange, KeySet, Leaf
from metastore.index.columns import Domain, Key
from metastore.index.container import BlockRef, IndexFileReader, IndexFileWriter
from metastore.index.coverage import FileValues
from metastore.index.errors import IndexFileCorrupt
from metastore.orcio import hash64_array_bytes, hash64_array_long

KIND = "bloom"
DEFAULT_FPP = 0.001
_ENTRY = struct.Struct("<QII")


def key_hashes(domain: Domain, keys: np.ndarray | Sequence[Key]) -> np.ndarray:
    """The 64-bit hashes of canonical keys (int64 array)."""
    if domain is Domain.INT64:
        return hash64_array_long(np.asarray(keys, dtype=np.int64))
    items: list[bytes] = [bytes(k) for k in (keys.tolist() if isinstance(keys, np.ndarray) else keys)]  # type: ignore[arg-type]  # outside the INT64 domain every key is bytes
    if not items:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(hash64_array_bytes(items), dtype=np.int64)


#: the probe scheme written in the description (the BLOOM block format's version)
PROBES = "splitmix64-dh"
#: the scheme of BLOOM files written before PROBES; still read, never written
LEGACY_PROBES = "splitmix64"
READABLE_PROBES = (PROBES, LEGACY_PROBES)
MAX_HASH_FUNCTIONS = 30
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer (a bijection of 64-bit words that spreads every input bit)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


#: hashes mixed at a time by probe_positions: its (hashes x probes) words stay in the CPU's cache
_POSITION_CHUNK = 4096


def probe_positions(hashes: np.ndarray, k: int, bits: int) -> np.ndarray:
    """LEGACY_PROBES: bit positions (int64, shape (len(hashes), k)) of every probe of every hash: probe i (1..k) of hash h is
    ``_mix(h + i * golden) % bits``, computed in place a cache-sized chunk at a time, with the remainder taken
    as ``z - (z // bits) * bits`` (numpy divides by one number with a multiplication; its ``%`` divides)."""
    h = np.asarray(hashes, dtype=np.int64).view(np.uint64)
    out = np.empty((len(h), k), dtype=np.uint64)
    steps = np.arange(1, k + 1, dtype=np.uint64)
    modulus = np.uint64(bits)
    with np.errstate(over="ignore"):
        steps *= _GOLDEN
        scratch = np.empty((min(len(h), _POSITION_CHUNK), k), dtype=np.uint64)
        for start in range(0, len(h), _POSITION_CHUNK):
            z = out[start : start + _POSITION_CHUNK]
            t = scratch[: len(z)]
            np.add(h[start : start + _POSITION_CHUNK, None], steps[None, :], out=z)
            for shift, multiplier in ((30, _MIX1), (27, _MIX2)):
                np.right_shift(z, np.uint64(shift), out=t)
                z ^= t
                z *= multiplier
            np.right_shift(z, np.uint64(31), out=t)
            z ^= t
            np.floor_divide(z, modulus, out=t)
            t *= modulus
            z -= t
    return out.view(np.int64)


_HIGH = np.uint64(32)
#: PROBES uses double hashing from this filter size on; smaller filters (under about 1,100 values) take the
#: LEGACY_PROBES positions: there k probes of a progression ``h + i * h2`` fall on a few bits too often (a 64-bit
#: filter of 2 values at 22 probes measured 0.29 % false positives at a configured 0.1 %)
DOUBLE_MIN_BITS = 1 << 14


def double_positions(hashes: np.ndarray, k: int, bits: int) -> np.ndarray:
    """PROBES: bit positions (int64, shape (k, len(hashes)): probe-major) of every probe of every hash: from
    DOUBLE_MIN_BITS on, probe i (0..k-1) of hash h is ``z = h + i * (mix(h) | 1)`` modulo 2**64, then
    ``((z >> 32) * bits) >> 32`` (the top 32 bits of z scaled to the filter), or ``z % bits`` when ``bits`` is
    2**32 or more; below it, the LEGACY_PROBES positions (probe_positions, transposed)."""
    h = np.asarray(hashes, dtype=np.int64).view(np.uint64)
    if bits < DOUBLE_MIN_BITS:
        return probe_positions(h.view(np.int64), k, bits).T.copy()
    out = np.empty((k, len(h)), dtype=np.uint64)
    if len(h) == 0:
        return out.view(np.int64)
    modulus = np.uint64(bits)
    wide = bits > (1 << 32)
    with np.errstate(over="ignore"):
        step = _mix(h)
        step |= np.uint64(1)
        z = h.copy()
        for i in range(k):
            row = out[i]
            if wide:
                np.remainder(z, modulus, out=row)
            else:
                np.right_shift(z, _HIGH, out=row)
                row *= modulus
                row >>= _HIGH
            if i + 1 < k:
                z += step
    return out.view(np.int64)


def _filters_positions(h: np.ndarray, k: int, bits: np.ndarray, *, legacy: bool) -> np.ndarray:
    """int64 bit positions (filters, values, probes) of k probes of every hash in filters of ``bits`` bits each
    (a reader tests all its stripes at once): probe_positions' for a LEGACY_PROBES file and for PROBES filters
    under DOUBLE_MIN_BITS, double_positions' for the others; each filter's positions made by its scheme only."""
    out = np.empty((len(bits), len(h), k), dtype=np.uint64)
    small = np.ones(len(bits), dtype=bool) if legacy else bits < np.uint64(DOUBLE_MIN_BITS)
    wide = ~small & (bits > np.uint64(1 << 32))
    scaled = ~small & ~wide
    probe = np.arange(k, dtype=np.uint64)
    with np.errstate(over="ignore"):
        if small.any():
            # probe i (1..k) of a hash h: mix(h + i * golden) % bits
            mixed = _mix(h[:, None] + (probe[None, :] + np.uint64(1)) * _GOLDEN)
            out[small] = mixed[None, :, :] % bits[small, None, None]
        if not small.all():
            # probe i (0..k-1): z = h + i * (mix(h) | 1), then ((z >> 32) * bits) >> 32, or z % bits past 2**32 bits
            z = h[:, None] + probe[None, :] * (_mix(h) | np.uint64(1))[:, None]
            if scaled.any():
                out[scaled] = ((z >> _HIGH)[None, :, :] * bits[scaled, None, None]) >> _HIGH
            if wide.any():
                out[wide] = z[None, :, :] % bits[wide, None, None]
    return out.view(np.int64)


def filter_size(entries: int, fpp: float) -> tuple[int, int]:
    """(bits, hash functions) of a filter for ``entries`` values: bits a multiple of 64, grown until the
    textbook false-positive rate with that many hash functions is at most ``fpp``."""
    n = max(entries, 1)
    bits = max(64, 64 * math.ceil(-n * math.log(fpp) / (math.log(2) ** 2) / 64))
    while True:
        k = max(1, min(MAX_HASH_FUNCTIONS, round(bits / n * math.log(2))))
        if (1.0 - math.exp(-k * n / bits)) ** k <= fpp:
            return bits, k
        bits += 64


class StripeBloom:
    """One stripe's bloom filter: ``words`` (uint64) and ``k`` probes per value of the scheme ``probes``."""

    def __init__(self, words: np.ndarray, k: int, probes: str = PROBES) -> None:
        if probes not in READABLE_PROBES:
            raise ValueError(f"unknown bloom probe scheme {probes!r}")
        self.words = words
        self.num_hash_functions = k
        self.num_bits = 64 * len(words)
        self.probes = probes

    @classmethod
    def for_entries(cls, entries: int, fpp: float) -> StripeBloom:
        bits, k = filter_size(entries, fpp)
        return cls(np.zeros(bits // 64, dtype=np.uint64), k)

    def _probe_major(self, hashes: np.ndarray) -> np.ndarray:
        """(probes, values) bit positions of the filter's scheme (PROBES' are made probe-major: no copy)."""
        h = np.asarray(hashes, dtype=np.int64).ravel()
        if self.probes == LEGACY_PROBES:
            return probe_positions(h, self.num_hash_functions, self.num_bits).T
        return double_positions(h, self.num_hash_functions, self.num_bits)

    def _bitmap(self, hashes: np.ndarray) -> np.ndarray:
        """A bool per bit of the filter: the bits of the hashes set (the filter's own bits not included)."""
        bitmap = np.zeros(self.num_bits, dtype=bool)
        bitmap[self._probe_major(hashes)] = True
        return bitmap

    def _or_bitmap(self, bitmap: np.ndarray) -> None:
        # bit p is bit p & 63 of word p >> 6 in little-endian words: the same bits a per-position OR sets
        # (several times faster than np.bitwise_or.at)
        packed = np.packbits(bitmap, bitorder="little").view("<u8")
        self.words |= packed.astype(np.uint64, copy=False)

    def add_hashes(self, hashes: np.ndarray, *, native: bool = True) -> None:
        """Add values by their 64-bit key hashes (by the compiled kernel when built and ``native``, else by
        numpy: the same bits)."""
        if len(hashes) == 0:
            return
        if native and self._native_add(hashes, hashed=True) is not None:
            return
        self._or_bitmap(self._bitmap(hashes))

    def _native_add(self, keys: np.ndarray, *, hashed: bool) -> int | None:
        """Set the probe bits of int64 keys (``hashed``: their hashes already) with the compiled kernel; the
        number of bits of the filter set afterwards, or None when the kernel is not built (nothing done)."""
        compiled = kernels.native()
        if compiled is None:
            return None
        double = self.probes != LEGACY_PROBES and self.num_bits >= DOUBLE_MIN_BITS
        return compiled.bloom_add(self.words, np.ascontiguousarray(keys, dtype=np.int64), self.num_hash_functions,
                                  hashed, double)

    def test_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash, whether every probe bit is set (the value may be in the stripe)."""
        pos = self._probe_major(hashes)
        bits = (self.words[pos >> 6] >> (pos & 63).astype(np.uint64)) & np.uint64(1)
        return np.all(bits == 1, axis=0)


def stripe_filter(domain: Domain, distinct: np.ndarray, fpp: float, *, native: bool = True) -> StripeBloom | None:
    """The filter of one stripe's distinct keys (None when the stripe has no non-null value); int64 keys are
    hashed by the compiled kernel when it is built (and ``native``)."""
    if len(distinct) == 0:
        return None
    bloom = StripeBloom.for_entries(len(distinct), fpp)
    if native and domain is Domain.INT64 and bloom._native_add(distinct, hashed=False) is not None:
        return bloom
    bloom.add_hashes(key_hashes(domain, distinct), native=native)
    return bloom


#: values_filter counts distinct values exactly (a sort) below this many values a stripe
EXACT_BELOW = 4096
#: values_filter keeps the filter sized for all the values when the estimated distinct count is at least
#: (1 - DISTINCT_SLACK) of them (the estimate's standard error is under 0.4 % from EXACT_BELOW values on)
DISTINCT_SLACK = 0.02


def _distinct_count(values: np.ndarray) -> int:
    ordered = np.sort(values)
    return int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1 if len(ordered) else 0


def values_filter(values: np.ndarray, fpp: float, *, native: bool = True) -> StripeBloom | None:
    """The filter of one stripe from its non-null int64 keys as read (any order, repeats allowed), without
    sorting them when they are (almost) all distinct: the bits of every value are set in a filter sized for
    the number of values, kept when the linear-counting estimate of the distinct count from the bits set,
    ``-(m / k) ln(1 - set / m)``, is at least ``1 - DISTINCT_SLACK`` of the values; otherwise the distinct
    values are counted (a sort) and the filter built for that count. On distinct values the result is
    stripe_filter's bit for bit; it depends on the values only, not on where they were read. With the compiled
    kernel built (and ``native``) the values are hashed and their bits set in one pass, in the filter itself
    (the same bits as this numpy code)."""
    n = len(values)
    if n == 0:
        return None
    keys = np.asarray(values, dtype=np.int64)
    if native and kernels.native() is not None:
        return _native_values_filter(keys, fpp)
    hashes = key_hashes(Domain.INT64, keys)
    if n >= EXACT_BELOW:
        bloom = StripeBloom.for_entries(n, fpp)
        bitmap = bloom._bitmap(hashes)
        m, k = bloom.num_bits, bloom.num_hash_functions
        # the bits set by (1 - slack) * n distinct values, expected; more set bits: keep this filter
        wanted = m * (1.0 - math.exp(-k * (1.0 - DISTINCT_SLACK) * n / m))
        if np.count_nonzero(bitmap) >= wanted:
            bloom._or_bitmap(bitmap)
            return bloom
    bloom = StripeBloom.for_entries(_distinct_count(keys), fpp)
    bloom.add_hashes(hashes)
    return bloom


def _native_values_filter(keys: np.ndarray, fpp: float) -> StripeBloom:
    """values_filter by the compiled kernel: hashes and bits in one pass; the bits set in the fresh filter are
    the count the numpy code takes from its bitmap of the values' bits."""
    n = len(keys)
    keys = np.ascontiguousarray(keys)
    if n >= EXACT_BELOW:
        bloom = StripeBloom.for_entries(n, fpp)
        m, k = bloom.num_bits, bloom.num_hash_functions
        wanted = m * (1.0 - math.exp(-k * (1.0 - DISTINCT_SLACK) * n / m))
        set_bits = bloom._native_add(keys, hashed=False)
        assert set_bits is not None
        if set_bits >= wanted:
            return bloom
    bloom = StripeBloom.for_entries(_distinct_count(keys), fpp)
    bloom._native_add(keys, hashed=False)
    return bloom


def write_filters(writer: IndexFileWriter, domain: Domain, files: Sequence[FileValues], fpp: float) -> dict[str, Any]:
    """Blocks of every stripe's filter; ``StripeValues.bloom`` (a filter kept from the previous build) is reused
    as it is."""
    words: list[np.ndarray] = []
    entries: list[bytes] = []
    position = 0
    for f in files:
        for s in f.stripes:
            bloom = s.bloom if s.bloom is not None else stripe_filter(domain, s.distinct, fpp)
            if bloom is not None and bloom.probes != PROBES:
                raise ValueError(f"a kept bloom filter of scheme {bloom.probes!r} cannot go into a {PROBES!r} file")
            if bloom is None:
                entries.append(_ENTRY.pack(position, 0, 0))
                continue
            entries.append(_ENTRY.pack(position, len(bloom.words), bloom.num_hash_functions))
            words.append(bloom.words.astype("<u8"))
            position += len(bloom.words)
    data = np.concatenate(words).tobytes() if words else b""
    return {
        "fpp": fpp,
        "bloom_probes": PROBES,
        "bloom_words_block": writer.add_block(data, compress=False).to_list(),
        "bloom_index_block": writer.add_block(b"".join(entries)).to_list(),
    }


class BloomReader:
    """Per-stripe membership tests of one BLOOM index file."""

    def __init__(self, reader: IndexFileReader, domain: Domain, stripes: int) -> None:
        self.path = reader.path
        self.domain = domain
        d = reader.description
        probes = d.get("bloom_probes")
        if probes not in READABLE_PROBES:
            raise IndexFileCorrupt(self.path, f"its bloom filters use probes {probes!r}, this code reads "
                                   f"{' or '.join(map(repr, READABLE_PROBES))} (UPDATE INDEX rebuilds it)")
        #: the file's probe scheme (PROBES, or LEGACY_PROBES for files written before it)
        self.probes: str = str(probes)
        index = reader.block(BlockRef.from_list(d.get("bloom_index_block"), self.path), "the bloom filter index")
        words = reader.block(BlockRef.from_list(d.get("bloom_words_block"), self.path), "the bloom filters")
        if len(index) != stripes * _ENTRY.size or len(words) % 8:
            raise IndexFileCorrupt(self.path, "the bloom filter index does not match the stripe table")
        self._words = np.frombuffer(words, dtype="<u8").astype(np.uint64)
        self.filters: list[StripeBloom | None] = []
        for i in range(stripes):
            first, count, k = _ENTRY.unpack_from(index, i * _ENTRY.size)
            if count == 0:
                self.filters.append(None)
                continue
            if first + count > len(self._words) or not 1 <= k <= MAX_HASH_FUNCTIONS:
                raise IndexFileCorrupt(self.path, f"bloom filter {i} lies outside the filter block")
            self.filters.append(StripeBloom(self._words[first : first + count], k, self.probes))
        # the same filters as arrays, so one answer tests every stripe at once
        present = [i for i, f in enumerate(self.filters) if f is not None]
        self._present = np.asarray(present, dtype=np.int64)
        entries = [_ENTRY.unpack_from(index, i * _ENTRY.size) for i in present]
        self._first = np.asarray([e[0] for e in entries], dtype=np.int64)
        self._bits = np.asarray([64 * e[1] for e in entries], dtype=np.uint64)
        self._k = np.asarray([e[2] for e in entries], dtype=np.int64)

    def answer(self, leaf: Leaf) -> np.ndarray | None:
        """Per stripe, whether it may hold a value of an equality/IN leaf; None for other leaves."""
        if isinstance(leaf, KeyRange) and leaf.is_point:
            assert leaf.low is not None
            keys: tuple[Key, ...] = (leaf.low,)
        elif isinstance(leaf, KeySet) and not leaf.negated:
            keys = leaf.keys
        else:
            return None
        hashes = key_hashes(self.domain, list(keys))
        out = np.zeros(len(self.filters), dtype=bool)
        if len(self._present) == 0 or len(hashes) == 0:
            return out
        # StripeBloom.test_hashes for every stripe at once; probes beyond a stripe's own count hold trivially
        k_max = int(self._k.max())
        h = np.asarray(hashes, dtype=np.int64).view(np.uint64)
        positions = _filters_positions(h, k_max, self._bits, legacy=self.probes == LEGACY_PROBES)
        words = self._words[self._first[:, None, None] + (positions >> 6)]
        bits = (words >> (positions & 63).astype(np.uint64)) & np.uint64(1)
        unused = np.arange(1, k_max + 1)[None, None, :] > self._k[:, None, None]
        out[self._present] = np.any(np.all((bits == 1) | unused, axis=2), axis=1)
        return out
