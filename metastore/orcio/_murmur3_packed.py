"""Hive's Murmur3 ``hash64`` over byte values packed in one buffer (ORC's DATA/DICTIONARY_DATA layout).

:func:`metastore.orcio._murmur3.hash64_array_bytes` takes a list of ``bytes`` objects; a decoded string column
already has every value in one buffer with offsets, so building Python objects only to join them again is
waste. :func:`hash64_packed` hashes straight from ``(buffer, offsets)``: for the j-th 8-byte word of every value
it gathers the (unaligned) little-endian word through a byte-strided uint64 view of the zero-padded buffer,
masks off bytes past the value's end, and applies the block or tail step of the hash to all values that
have a j-th word at once. The results equal ``hash64`` of each value (seed 104729 unless given).

When ``metastore.orcio._murmur3_native`` is built, a compiled loop (releasing the GIL) does the hashing instead;
this numpy code is its reference and the fallback.
"""

from __future__ import annotations

import numpy as np

from ._murmur3 import DEFAULT_SEED, HASH_BLOCK, _block_step, _fmix_in_place, _mix_into, compiled

# Mask keeping the low r bytes of a word, for r = 0..8 bytes of the value left in it.
_MASKS = np.array([0] + [(1 << (8 * r)) - 1 for r in range(1, 8)] + [0xFFFFFFFFFFFFFFFF], dtype=np.uint64)


def hash64_packed(
    buffer: bytes | bytearray | memoryview | np.ndarray, offsets: np.ndarray, seed: int = DEFAULT_SEED,
    native: bool = True,
) -> np.ndarray:
    """``hash64`` of each value ``buffer[offsets[i]:offsets[i+1]]``; returns an int64 array of ``len(offsets)-1``.

    ``native=False`` runs the numpy code even when the compiled loop is there (the tests' reference)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    loops = compiled() if native else None
    # (an array buffer that is not C-contiguous, or 2-D offsets, take the numpy code)
    if loops is not None and offsets.ndim == 1 and (not isinstance(buffer, np.ndarray) or buffer.flags.c_contiguous):
        out = np.empty(n, dtype=np.int64)
        loops.hash64_packed(buffer, np.ascontiguousarray(offsets), seed & 0xFFFFFFFFFFFFFFFF, out)
        return out
    raw = np.frombuffer(buffer, dtype=np.uint8) if not isinstance(buffer, np.ndarray) else buffer.view(np.uint8)
    end = int(offsets[-1])
    if end > raw.size or int(offsets[0]) < 0:
        raise ValueError(f"offsets reach byte {end} of a {raw.size}-byte buffer")
    lengths = np.diff(offsets)
    if lengths.size and int(lengths.min()) < 0:
        raise ValueError("offsets must not decrease")
    # Eight zero bytes past the end let every word gather read 8 bytes without leaving the array.
    padded = np.empty(end + 8, dtype=np.uint8)
    padded[:end] = raw[:end]
    padded[end:] = 0
    words = np.ndarray(shape=(end + 1,), dtype="<u8", buffer=padded, strides=(1,))
    out = np.empty(n, dtype=np.uint64)
    scratch = np.empty((3, min(n, HASH_BLOCK)), dtype=np.uint64)
    seed_word = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore"):
        # Blocks of values whose working arrays stay in the CPU's cache; within a block, word j of every value
        # at once: a value with fewer words gets a zero word there (mix_key(0) = 0 leaves its hash alone) and
        # no block step.
        for first in range(0, n, HASH_BLOCK):
            last = min(n, first + HASH_BLOCK)
            size = last - first
            block_lengths = lengths[first:last]
            at = offsets[first:last].copy()
            h = out[first:last]
            h[:] = seed_word
            k, t, kept = scratch[0, :size], scratch[1, :size], scratch[2, :size]
            shortest, longest = int(block_lengths.min()), int(block_lengths.max())
            full_blocks = block_lengths >> 3
            for j in range((longest + 7) >> 3):
                np.minimum(at, end, out=at)
                k[:] = words[at]  # (np.take would copy the whole strided view first)
                if 8 * (j + 1) > shortest:
                    # bytes past a value's end (or a whole word past it) are masked off
                    k &= _MASKS[np.clip(block_lengths - 8 * j, 0, 8)]
                _mix_into(h, k, t)
                if 8 * (j + 1) <= shortest:
                    _block_step(h, t)
                else:
                    # only values with a whole j-th block take the step; a 1..7 byte tail does not
                    kept[:] = h
                    _block_step(kept, t)
                    np.copyto(h, kept, where=full_blocks > j)
                at += 8
            h ^= block_lengths.view(np.uint64)
            _fmix_in_place(h, t)
    return out.view(np.int64)


__all__ = ["hash64_packed"]
