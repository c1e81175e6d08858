"""BLOOM: one bloom filter per stripe, sized for the stripe's distinct values at the configured false-positive
rate, over the typed canonical keys (columns.py): int64 keys hash as their 8 bytes (Murmur3 64, Hive's
``hash64(long)``), bytes keys as themselves. Build and probe share these functions, so a value formatted
differently (``1`` vs ``1.0`` for a decimal, ``'a'`` vs ``'a  '`` for a char) can never miss.

The filters are ours, not ORC's: ORC's probes are ``h1 + i*h2`` over 32-bit halves, which collapse to one or
two bits whenever ``h2`` shares a large factor with the filter size. For stripes of a few distinct values
(64-bit filters) that put the real false-positive rate near 1 % at a configured 0.1 %. Here every probe is an
independent SplitMix64 mix of the hash and the probe number, and a filter grows until the textbook rate
``(1 - e^(-kn/m))^k`` is within the configured one, which then holds for any number of values.

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


#: the probe scheme written in the description; files of another scheme are not read
PROBES = "splitmix64"
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
    """Bit positions (int64, shape (len(hashes), k)) of every probe of every hash: probe i (1..k) of hash h is
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
    """One stripe's bloom filter: ``words`` (uint64) and ``k`` independent probes per value."""

    def __init__(self, words: np.ndarray, k: int) -> None:
        self.words = words
        self.num_hash_functions = k
        self.num_bits = 64 * len(words)

    @classmethod
    def for_entries(cls, entries: int, fpp: float) -> StripeBloom:
        bits, k = filter_size(entries, fpp)
        return cls(np.zeros(bits // 64, dtype=np.uint64), k)

    def _positions(self, hashes: np.ndarray) -> np.ndarray:
        """(values, probes) bit positions: probe i of a hash h is ``mix(h + i * golden) % bits``."""
        return probe_positions(np.asarray(hashes, dtype=np.int64).ravel(), self.num_hash_functions, self.num_bits)

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Add values by their 64-bit key hashes."""
        if len(hashes) == 0:
            return
        pos = self._positions(hashes).ravel()
        # set the bits in a bitmap and pack it: bit p is bit p & 63 of word p >> 6 in little-endian words, the
        # same bits a per-position OR sets (several times faster than np.bitwise_or.at)
        bitmap = np.zeros(len(self.words) * 64, dtype=bool)
        bitmap[pos] = True
        packed = np.packbits(bitmap, bitorder="little").view("<u8")
        self.words |= packed.astype(np.uint64, copy=False)

    def test_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash, whether every probe bit is set (the value may be in the stripe)."""
        pos = self._positions(hashes)
        bits = (self.words[pos >> 6] >> (pos & 63).astype(np.uint64)) & np.uint64(1)
        return np.all(bits == 1, axis=1)


def stripe_filter(domain: Domain, distinct: np.ndarray, fpp: float) -> StripeBloom | None:
    """The filter of one stripe's distinct keys (None when the stripe has no non-null value)."""
    if len(distinct) == 0:
        return None
    bloom = StripeBloom.for_entries(len(distinct), fpp)
    bloom.add_hashes(key_hashes(domain, distinct))
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
        if d.get("bloom_probes") != PROBES:
            raise IndexFileCorrupt(self.path, f"its bloom filters use probes {d.get('bloom_probes')!r}, this code "
                                   f"reads {PROBES!r} (UPDATE INDEX rebuilds it)")
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
            self.filters.append(StripeBloom(self._words[first : first + count], k))
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
        # StripeBloom.test_hashes for every stripe at once: probe i of a value is mix(hash + i * golden) modulo
        # the stripe's bits; probes beyond a stripe's own count hold trivially
        k_max = int(self._k.max())
        probe = np.arange(1, k_max + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            seeds = np.asarray(hashes, dtype=np.int64).view(np.uint64)[:, None] + probe[None, :] * _GOLDEN
        mixed = _mix(seeds)  # (values, probes)
        positions = (mixed[None, :, :] % self._bits[:, None, None]).astype(np.int64)  # (stripes, values, probes)
        words = self._words[self._first[:, None, None] + (positions >> 6)]
        bits = (words >> (positions & 63).astype(np.uint64)) & np.uint64(1)
        unused = np.arange(1, k_max + 1)[None, None, :] > self._k[:, None, None]
        out[self._present] = np.any(np.all((bits == 1) | unused, axis=2), axis=1)
        return out
