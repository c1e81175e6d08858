"""Hive's Murmur3 ``hash64`` over byte values packed in one buffer (ORC's DATA/DICTIONARY_DATA layout).

:func:`metastore.orcio._murmur3.hash64_array_bytes` takes a list of ``bytes`` objects; a decoded string column
already has every value in one buffer with offsets, so building Python objects only to join them again is
waste. :func:`hash64_packed` hashes straight from ``(buffer, offsets)``: for the j-th 8-byte word of every value
it gathers the (unaligned) little-endian word through a byte-strided uint64 view of the zero-padded buffer,
masks off bytes past the value's end, and applies the block or tail step of the hash to all values that
have a j-th word at once. The results equal ``hash64`` of each value (seed 104729 unless given).
"""

from __future__ import annotations

import numpy as np

from ._murmur3 import DEFAULT_SEED, _v_fmix, _v_mix_key, _v_rotl

_U64 = np.uint64
_N1 = _U64(0x52DCE729)
_FIVE = _U64(5)
_ALL_ONES = _U64(0xFFFFFFFFFFFFFFFF)
# Mask keeping the low r bytes of a word, for r = 0..7 (0 means a whole word).
_TAIL_MASKS = np.array([0xFFFFFFFFFFFFFFFF] + [(1 << (8 * r)) - 1 for r in range(1, 8)], dtype=np.uint64)


def hash64_packed(
    buffer: bytes | bytearray | memoryview | np.ndarray, offsets: np.ndarray, seed: int = DEFAULT_SEED
) -> np.ndarray:
    """``hash64`` of each value ``buffer[offsets[i]:offsets[i+1]]``; returns an int64 array of ``len(offsets)-1``."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    raw = np.frombuffer(buffer, dtype=np.uint8) if not isinstance(buffer, np.ndarray) else buffer.view(np.uint8)
    end = int(offsets[-1])
    if end > raw.size or int(offsets[0]) < 0:
        raise ValueError(f"offsets reach byte {end} of a {raw.size}-byte buffer")
    lengths = np.diff(offsets)
    if lengths.size and int(lengths.min()) < 0:
        raise ValueError("offsets must not decrease")
    # Eight zero bytes past the end let every word gather read 8 bytes without leaving the array.
    padded = np.zeros(end + 8, dtype=np.uint8)
    padded[:end] = raw[:end]
    words = np.ndarray(shape=(end + 1,), dtype="<u8", buffer=padded, strides=(1,))
    nwords = (lengths + 7) >> 3
    # Sorted by word count, the values with a j-th word are a suffix: slices (views) instead of gathers.
    order = np.argsort(nwords, kind="stable")
    sorted_words = nwords[order]
    sorted_lengths = lengths[order]
    starts = offsets[:-1][order]
    full_blocks = sorted_lengths >> 3
    tail_mask = _TAIL_MASKS[(sorted_lengths & 7).astype(np.intp)]
    h = np.full(n, seed & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(int(sorted_words[-1])):
            first = int(np.searchsorted(sorted_words, j + 1, side="left"))
            word = words[starts[first:] + 8 * j]
            # the last word of a value keeps only the value's bytes
            last = sorted_words[first:] == j + 1
            if last.any():
                word = np.where(last, word & tail_mask[first:], word)
            mixed = h[first:] ^ _v_mix_key(word)
            block = full_blocks[first:] > j
            if block.all():
                h[first:] = _v_rotl(mixed, 27) * _FIVE + _N1
            else:
                h[first:] = np.where(block, _v_rotl(mixed, 27) * _FIVE + _N1, mixed)
        h ^= sorted_lengths.astype(np.uint64)
        out = np.empty(n, dtype=np.uint64)
        out[order] = _v_fmix(h)
        return out.view(np.int64)


__all__ = ["hash64_packed"]
