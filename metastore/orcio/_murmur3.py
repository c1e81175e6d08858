"""The 64-bit Murmur3 variant of Hive and ORC (``Murmur3.hash64``, seed 104729), scalar and vectorised.

This is not a slice of MurmurHash3_x64_128: it is a single-lane hash over 8-byte little-endian blocks with
the x64_128 block mix (``k*=C1; k=rotl(k,31); k*=C2; h^=k; h=rotl(h,27)*5+0x52dce729``), a 1..7 byte tail mixed
into ``h`` without the rotation step, then ``h ^= len`` and the usual fmix64. Java's
``org.apache.orc.util.Murmur3.hash64(byte[])`` and ``org.apache.hive.common.util.Murmur3.hash64(byte[])`` agree,
and Hive's ``hash64(long)`` is the same hash over the value's 8 big-endian bytes (it byte-reverses the long and
mixes it as one block).

All results are Java ``long`` values: signed 64-bit integers (Python ``int`` or numpy ``int64``).

API:
    hash64(data, seed=DEFAULT_SEED) -> int          hash of a bytes-like value
    hash64_long(value) -> int                        Hive's hash64(long)
    hash64_array_long(values) -> np.ndarray[int64]   hash64_long over an integer array
    hash64_array_bytes(values) -> np.ndarray[int64]  hash64 over a sequence of bytes (``hash64_many`` alias)

The array functions run compiled loops (``metastore.orcio._murmur3_native``, built from _murmur3_native.c and
_murmur3.h by ``pip install -e .``) when that extension is importable; otherwise the numpy code here, their
reference (same results, only slower), with a warning once per process.

This module imports only numpy: ``metastore.orcio`` stays independent of the rest of the project.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

import numpy as np

from ._optional import OptionalExtension

_EXTENSION = OptionalExtension("metastore.orcio._murmur3_native", "Murmur3 hashing uses the slower numpy code")
_native = _EXTENSION.module
_missing = _EXTENSION.missing


def compiled() -> ModuleType | None:
    """The compiled hash loops, or None (with a warning the first time) when they are not built."""
    return _EXTENSION.get()

__all__ = [
    "DEFAULT_SEED",
    "hash64",
    "hash64_long",
    "hash64_array_long",
    "hash64_array_bytes",
    "hash64_many",
]

DEFAULT_SEED = 104729

_MASK64 = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F
_N1 = 0x52DCE729
_F1 = 0xFF51AFD7ED558CCD
_F2 = 0xC4CEB9FE1A85EC53


def _to_signed(x: int) -> int:
    return x - (1 << 64) if x >> 63 else x


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK64


def _mix_key(k: int) -> int:
    k = (k * _C1) & _MASK64
    k = _rotl(k, 31)
    return (k * _C2) & _MASK64


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * _F1) & _MASK64
    h ^= h >> 33
    h = (h * _F2) & _MASK64
    return h ^ (h >> 33)


def hash64(data: bytes | bytearray | memoryview, seed: int = DEFAULT_SEED) -> int:
    """Murmur3 hash64 of ``data`` as a signed 64-bit integer (Java ``long``)."""
    buf = bytes(data)
    length = len(buf)
    h = seed & _MASK64
    nblocks = length >> 3
    for i in range(nblocks):
        k = int.from_bytes(buf[i * 8 : i * 8 + 8], "little")
        h ^= _mix_key(k)
        h = (_rotl(h, 27) * 5 + _N1) & _MASK64
    tail = buf[nblocks * 8 :]
    if tail:
        h ^= _mix_key(int.from_bytes(tail, "little"))
    h ^= length
    return _to_signed(_fmix(h))


def hash64_long(value: int) -> int:
    """Hive's ``Murmur3.hash64(long)``: the hash of the value's 8 big-endian two's-complement bytes."""
    return hash64((value & _MASK64).to_bytes(8, "big"))


# ---------------------------------------------------------------------------------------------- vectorised

_U_C1 = np.uint64(_C1)
_U_C2 = np.uint64(_C2)
_U_N1 = np.uint64(_N1)
_U_F1 = np.uint64(_F1)
_U_F2 = np.uint64(_F2)
_U5 = np.uint64(5)
_U33 = np.uint64(33)


def _v_rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _v_mix_key(k: np.ndarray) -> np.ndarray:
    k = k * _U_C1
    k = _v_rotl(k, 31)
    return k * _U_C2


def _v_fmix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U33)
    h = h * _U_F1
    h = h ^ (h >> _U33)
    h = h * _U_F2
    return h ^ (h >> _U33)


#: Values hashed per block: the working arrays of a block (two of 512 KiB) stay in the CPU's cache across the
#: twenty-odd whole-array steps of the hash, instead of streaming every step through memory.
HASH_BLOCK = 1 << 16


def _mix_into(h: np.ndarray, k: np.ndarray, t: np.ndarray) -> None:
    """``h ^= mix_key(k)``, in place; ``k`` is overwritten and ``t`` is scratch (all the same length)."""
    k *= _U_C1
    np.right_shift(k, _U33, out=t)  # rotl(k, 31)
    k <<= np.uint64(31)
    k |= t
    k *= _U_C2
    h ^= k


def _block_step(h: np.ndarray, t: np.ndarray) -> None:
    """``h = rotl(h, 27) * 5 + N1``, in place (``t`` is scratch)."""
    np.right_shift(h, np.uint64(37), out=t)
    h <<= np.uint64(27)
    h |= t
    h *= _U5
    h += _U_N1


def _fmix_in_place(h: np.ndarray, t: np.ndarray) -> None:
    """Murmur3's fmix64, in place (``t`` is scratch)."""
    np.right_shift(h, _U33, out=t)
    h ^= t
    h *= _U_F1
    np.right_shift(h, _U33, out=t)
    h ^= t
    h *= _U_F2
    np.right_shift(h, _U33, out=t)
    h ^= t


def hash64_array_long(values: np.ndarray | Sequence[int], native: bool = True) -> np.ndarray:
    """``hash64_long`` over an array of integers (taken as int64); returns an int64 array.

    ``native=False`` runs the numpy code even when the compiled loop is there (the tests' reference)."""
    arr = np.asarray(values)
    if arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    arr = arr.ravel()
    loops = compiled() if native else None
    if loops is not None:
        result = np.empty(arr.size, dtype=np.int64)
        loops.hash64_longs(np.ascontiguousarray(arr), result)
        return result
    # The big-endian bytes read back little-endian are the byte-swapped value: one full block.
    out = arr.byteswap().view(np.uint64)
    n = out.size
    scratch = np.empty(min(n, HASH_BLOCK), dtype=np.uint64)
    seed = np.uint64(DEFAULT_SEED)
    eight = np.uint64(8)
    with np.errstate(over="ignore"):
        for start in range(0, n, HASH_BLOCK):
            k = out[start : start + HASH_BLOCK]
            t = scratch[: k.size]
            # h = seed ^ mix_key(k), computed in k's own storage
            k *= _U_C1
            np.right_shift(k, _U33, out=t)
            k <<= np.uint64(31)
            k |= t
            k *= _U_C2
            k ^= seed
            _block_step(k, t)
            k ^= eight
            _fmix_in_place(k, t)
    return out.view(np.int64)


def _hash_equal_words(matrix: np.ndarray, lengths: np.ndarray, seed: int) -> np.ndarray:
    """Hash rows of a zero-padded uint8 matrix whose rows all span the same number of 8-byte words."""
    rows, width = matrix.shape
    words = np.ascontiguousarray(matrix).view("<u8").reshape(rows, width // 8).astype(np.uint64, copy=False)
    nwords = width // 8
    with np.errstate(over="ignore"):
        h = np.full(rows, seed & _MASK64, dtype=np.uint64)
        for j in range(nwords - 1):
            h ^= _v_mix_key(words[:, j])
            h = _v_rotl(h, 27) * _U5 + _U_N1
        if nwords:
            last = words[:, nwords - 1]
            full = (lengths & 7) == 0
            # A last word that is a whole block gets the rotation step; a 1..7 byte tail does not.
            mixed = h ^ _v_mix_key(last)
            h = np.where(full, _v_rotl(mixed, 27) * _U5 + _U_N1, mixed)
        h ^= lengths.astype(np.uint64)
        return _v_fmix(h)


def hash64_array_bytes(values: Sequence[bytes], seed: int = DEFAULT_SEED) -> np.ndarray:
    """``hash64`` over a sequence of bytes-like values; returns an int64 array.

    Values are grouped by their number of 8-byte words and each group is hashed as one zero-padded 2-D
    matrix, so the Python work per value is only the join of all values into one buffer.
    """
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    items = values if isinstance(values, list) else list(values)
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=n)
    flat = np.frombuffer(b"".join(items), dtype=np.uint8)
    offsets = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    nwords = (lengths + 7) >> 3
    widths = nwords * 8
    # Lay every group (rows with the same word count) out as one zero-padded matrix inside a single buffer:
    # stable-sort rows by word count, give each row a start in the buffer, scatter all bytes in one pass.
    order = np.argsort(nwords, kind="stable")
    starts_sorted = np.zeros(n, dtype=np.int64)
    np.cumsum(widths[order][:-1], out=starts_sorted[1:])
    starts = np.empty(n, dtype=np.int64)
    starts[order] = starts_sorted
    buffer = np.zeros(int(widths.sum()), dtype=np.uint8)
    if flat.size:
        shift = np.repeat(starts - offsets, lengths)
        shift += np.arange(flat.size, dtype=np.int64)
        buffer[shift] = flat
    out = np.empty(n, dtype=np.uint64)
    group_words, group_first = np.unique(nwords[order], return_index=True)
    group_end = np.append(group_first[1:], n)
    for w, lo, hi in zip(group_words.tolist(), group_first.tolist(), group_end.tolist(), strict=True):
        rows = order[lo:hi]
        width = w * 8
        base = int(starts[rows[0]])
        matrix = buffer[base : base + rows.size * width].reshape(rows.size, width)
        out[rows] = _hash_equal_words(matrix, lengths[rows], seed)
    return out.view(np.int64)


# The name ORC's bloom-filter module looks for.
hash64_many = hash64_array_bytes
