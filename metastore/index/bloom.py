"""BLOOM: one bloom filter per stripe, sized for the stripe's distinct values at the configured false-positive
rate, over the typed canonical keys (columns.py): int64 keys hash as their 8 bytes (Murmur3 64, Hive's
``hash64(long)``), bytes keys as themselves. Build and probe share these functions, so a value formatted
differently (``1`` vs ``1.0`` for a decimal, ``'a'`` vs ``'a  '`` for a char) can never miss.

Answers equality and IN (``KeySet`` and point ``KeyRange`` leaves); everything else is undecided. A stripe
with no non-null value has an empty filter and matches nothing. Blocks: the filters' 64-bit words back to back,
and an index of (first word u64, words u32, hash functions u32) per stripe.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from metastore.index.bind import KeyRange, KeySet, Leaf
from metastore.index.columns import Domain, Key
from metastore.index.container import BlockRef, IndexFileReader, IndexFileWriter
from metastore.index.coverage import FileValues
from metastore.index.errors import IndexFileCorrupt
from metastore.orcio import BloomFilter, hash64_array_bytes, hash64_array_long

KIND = "bloom"
DEFAULT_FPP = 0.001
_ENTRY = struct.Struct("<QII")


def key_hashes(domain: Domain, keys: np.ndarray | Sequence[Key]) -> np.ndarray:
    """The 64-bit hashes of canonical keys (int64 array)."""
    if domain is Domain.INT64:
        return hash64_array_long(np.asarray(keys, dtype=np.int64))
    items: list[bytes] = [bytes(k) for k in (keys.tolist() if isinstance(keys, np.ndarray) else keys)]  # type: ignore[arg-type]
    if not items:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(hash64_array_bytes(items), dtype=np.int64)


def stripe_filter(domain: Domain, distinct: np.ndarray, fpp: float) -> BloomFilter | None:
    """The filter of one stripe's distinct keys (None when the stripe has no non-null value)."""
    if len(distinct) == 0:
        return None
    bloom = BloomFilter.for_entries(len(distinct), fpp)
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
        "bloom_words_block": writer.add_block(data, compress=False).to_list(),
        "bloom_index_block": writer.add_block(b"".join(entries)).to_list(),
    }


class BloomReader:
    """Per-stripe membership tests of one BLOOM index file."""

    def __init__(self, reader: IndexFileReader, domain: Domain, stripes: int) -> None:
        self.path = reader.path
        self.domain = domain
        d = reader.description
        index = reader.block(BlockRef.from_list(d.get("bloom_index_block"), self.path), "the bloom filter index")
        words = reader.block(BlockRef.from_list(d.get("bloom_words_block"), self.path), "the bloom filters")
        if len(index) != stripes * _ENTRY.size or len(words) % 8:
            raise IndexFileCorrupt(self.path, "the bloom filter index does not match the stripe table")
        self._words = np.frombuffer(words, dtype="<u8").astype(np.uint64)
        self.filters: list[BloomFilter | None] = []
        for i in range(stripes):
            first, count, k = _ENTRY.unpack_from(index, i * _ENTRY.size)
            if count == 0:
                self.filters.append(None)
                continue
            if first + count > len(self._words) or not 1 <= k <= 64:
                raise IndexFileCorrupt(self.path, f"bloom filter {i} lies outside the filter block")
            self.filters.append(BloomFilter(count * 64, k, self._words[first : first + count]))

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
        for i, bloom in enumerate(self.filters):
            if bloom is not None:
                out[i] = bool(np.any(bloom.test_hashes(hashes)))
        return out
