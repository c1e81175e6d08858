"""Hive's HyperLogLog NDV sketch, bit-compatible with ``org.apache.hadoop.hive.common.ndv.hll``.

Hive stores these bytes as a column's ``bitVectors``. The layout (``HyperLogLogUtils``):

- ``b"HLL"``, then one byte ``(p << 4) | enc``: enc 0 = SPARSE, 1..6 = DENSE packed at that bit width,
  7 = DENSE with one byte per register;
- an unsigned LEB128 ``varulong`` holding the sketch's estimate when it was written;
- SPARSE: a varulong entry count, then varulongs of ``(key << 6) | value`` (key = the 25 low hash bits), the
  first one as is and each later one as the 32-bit difference to the previous entry, sign-extended to 64 bits;
  entries come in Java ``HashMap`` iteration order;
- DENSE: the ``2**p`` registers, MSB-first bit-packed at the width of the largest register.

Adds follow HLL++: a hash's low p bits pick the register, its value is ``trailing zeros(hash >>> p) + 1``;
a sketch starts SPARSE (25-bit keys, linear counting over 2**25) and turns DENSE past ``(m*6/8)/5``
entries (``m/3`` without bit packing). DENSE estimates use Hive's float ``alphaMM``, the HLL++ k-NN bias
correction (k = 6, :mod:`metastore.stats.hll_constants`) below ``5m`` and linear counting below Hive's
thresholds. Merging a sketch with a larger p first squashes it down to the smaller p, reproducing Hive's
``squash`` including its 32-bit shift in the dense case, so merged bytes match Hive's too.

Everything runs over numpy arrays; the only per-item Python loops touch at most the sparse entries
(bounded by the switch threshold). Dense adds and register unpacking run compiled loops
(``metastore.stats._hll_native``, built from _hll_native.c by ``pip install -e .``) when that extension is
importable, else the numpy code here, their reference, with a warning once per process. Hashes are Java longs
from :mod:`metastore.orcio.murmur3`.

Known differences from Hive, all in degenerate corners: a DENSE sketch with no register set (only
reachable by squashing an empty sketch) is written as an empty SPARSE one, because Hive's own bytes for it
cannot be read back; and the sparse entry order may differ from Java's when 8 or more keys share a
``HashMap`` bucket (Java then re-orders the bucket as a tree). Decoding is order-independent either way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import numpy as np

from metastore.compiled import OptionalExtension
from metastore.stats.hll_constants import BIAS, K_NEAREST_NEIGHBOR, RAW_ESTIMATE, THRESHOLD
from metastore.stats.java_math import java_long, java_round

_EXTENSION = OptionalExtension("metastore.stats._hll_native",
                               "HyperLogLog registers are unpacked by the slower numpy code")
_native: Any = _EXTENSION.module
_missing = _EXTENSION.missing

__all__ = [
    "DEFAULT_P",
    "HIVE_STATS_P",
    "MAGIC",
    "HllFormatError",
    "HyperLogLog",
    "check_sketch_bytes",
    "merge_hlls",
    "merge_sketch_bytes",
]

MAGIC = b"HLL"
DEFAULT_P = 14  # our own sketches: ~0.8 % standard error
HIVE_STATS_P = 10  # what Hive writes for column statistics (HyperLogLogBuilder.setSizeOptimized)
MIN_P = 4
MAX_P = 16
P_PRIME = 25  # sparse key bits
Q_PRIME = 6  # sparse value bits

_P_PRIME_MASK = (1 << P_PRIME) - 1
_U64 = np.uint64
_INV_POW2 = np.array([2.0**-v for v in range(128)], dtype=np.float64)


class HllFormatError(ValueError):
    """Bytes that are not a readable Hive HyperLogLog sketch."""


def _alpha_mm(m: int) -> float:
    # Hive computes alpha * m * m in float (32-bit) arithmetic; the rounding shows in the estimates.
    f32 = np.float32
    alpha = f32(0.7213) / (f32(1.0) + f32(1.079) / f32(m))
    return float(alpha * f32(m) * f32(m))


#: Hashes per slice offered to a sparse sketch.
_SPARSE_CHUNK = 8192
#: Hashes per block of a dense update (its working arrays fit the CPU's cache).
_DENSE_BLOCK = 1 << 16


def _ntz64(w: np.ndarray) -> np.ndarray:
    """Trailing zeros of uint64 values, 64 for zero."""
    low = w & (~w + _U64(1))
    exp = np.frexp(low.astype(np.float64))[1].astype(np.int64) - 1
    return np.where(w == 0, 64, exp)


def _as_hash_array(hashes: Iterable[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(hashes)
    if arr.dtype == np.uint64:
        return arr.ravel()
    if arr.dtype != np.int64:
        if arr.size and arr.dtype == object:
            arr = np.array([int(v) & ((1 << 64) - 1) for v in arr.ravel()], dtype=np.uint64)
            return arr
        arr = arr.astype(np.int64)
    return arr.ravel().view(np.uint64)


def _hashmap_order(keys: np.ndarray) -> np.ndarray:
    """Positions of ``keys`` (in insertion order) in Java ``HashMap<Integer, ?>`` iteration order."""
    n = keys.size
    capacity = 16
    while n > capacity * 3 // 4:
        capacity *= 2
    bucket = (keys ^ (keys >> 16)) & (capacity - 1)
    return np.argsort(bucket, kind="stable")


# ------------------------------------------------------------------------------------------- varulong codec


def _read_vulong(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise HllFormatError("HLL sketch ends inside a varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & ((1 << 64) - 1), pos
        shift += 7
        if shift > 63:
            raise HllFormatError("HLL varint is longer than 10 bytes")


def _read_vulongs(data: bytes, pos: int, count: int) -> tuple[np.ndarray, int]:
    """``count`` consecutive varulongs from ``pos`` as uint64, and the position after them."""
    if count == 0:
        return np.empty(0, dtype=np.uint64), pos
    arr = np.frombuffer(data, dtype=np.uint8, offset=pos)
    ends = np.flatnonzero(arr < 0x80)
    if ends.size < count:
        raise HllFormatError(f"HLL sparse list is truncated: {count} entries announced, {ends.size} present")
    ends = ends[:count]
    starts = np.empty(count, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    if int(lengths.max()) > 10:
        raise HllFormatError("HLL varint is longer than 10 bytes")
    total = int(ends[-1]) + 1
    within = np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)
    shifted = (arr[:total] & 0x7F).astype(np.uint64) << (within * 7).astype(np.uint64)
    # The 7-bit groups of one varint never overlap, so a sum is their OR.
    return np.add.reduceat(shifted, starts), pos + total


def _write_vulongs(values: np.ndarray, *, native: bool = True) -> bytes:
    """Unsigned LEB128 of each uint64 value, concatenated: the compiled loop when it is built and ``native``,
    else numpy (the reference)."""
    v = values.astype(np.uint64, copy=False)
    if v.size == 0:
        return b""
    write = _native_function("write_vulongs") if native else None
    if write is not None:
        return cast(bytes, write(np.ascontiguousarray(v)))
    groups = np.stack([(v >> _U64(7 * j)) & _U64(0x7F) for j in range(10)], axis=1).astype(np.uint8)
    nbytes = np.ones(v.size, dtype=np.int64)
    for j in range(1, 10):
        nbytes += (v >> _U64(7 * j)) != 0
    col = np.arange(10)[None, :]
    groups[col < (nbytes - 1)[:, None]] |= 0x80
    return groups[col < nbytes[:, None]].tobytes()


def _vulong(value: int) -> bytes:
    # one value (a header field): plain integer steps, far cheaper than the array path for many values
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# --------------------------------------------------------------------------------------------- the sketch


class HyperLogLog:
    """A Hive-compatible HyperLogLog sketch of 64-bit hashes (mutable: add and merge in place)."""

    __slots__ = ("p", "m", "bit_packing", "_sparse", "_dense", "_max_register")

    def __init__(self, p: int = DEFAULT_P, *, bit_packing: bool = True, dense: bool = False) -> None:
        if not MIN_P <= p <= MAX_P:
            raise ValueError(f"HyperLogLog p must be between {MIN_P} and {MAX_P}, got {p}")
        self.p = p
        self.m = 1 << p
        self.bit_packing = bit_packing
        # SPARSE: key -> value in Java insertion order; DENSE: one uint8 per register.
        self._sparse: dict[int, int] | None = None if dense else {}
        self._dense: np.ndarray | None = np.zeros(self.m, dtype=np.uint8) if dense else None
        # Hive tracks the largest value ever set to choose the packing width; 0xff disables packing.
        self._max_register = 0 if bit_packing else 0xFF

    # ----------------------------------------------------------------------------------------- properties

    @property
    def encoding(self) -> str:
        """``"sparse"`` or ``"dense"``, the representation Hive would write."""
        return "sparse" if self._dense is None else "dense"

    @property
    def switch_threshold(self) -> int:
        """The sparse entry count past which the sketch turns dense."""
        return (self.m * 6 // 8) // 5 if self.bit_packing else self.m // 3

    def registers(self) -> np.ndarray:
        """The dense register values (a copy; a sparse sketch is converted on the fly)."""
        if self._dense is not None:
            return self._dense.copy()
        return self._sparse_to_registers(self._sparse or {}, self.p)

    def copy(self) -> HyperLogLog:
        """An independent copy."""
        other = HyperLogLog.__new__(HyperLogLog)
        other.p, other.m, other.bit_packing = self.p, self.m, self.bit_packing
        other._sparse = None if self._sparse is None else dict(self._sparse)
        other._dense = None if self._dense is None else self._dense.copy()
        other._max_register = self._max_register
        return other

    def __repr__(self) -> str:
        return f"HyperLogLog(p={self.p}, encoding={self.encoding}, estimate={self.estimate()})"

    # ---------------------------------------------------------------------------------------------- adds

    def add_hashes(self, hashes: Iterable[int] | np.ndarray) -> None:
        """Add 64-bit hashes (int64/uint64 arrays or ints), as Hive's ``add(long)`` does one by one."""
        h = _as_hash_array(hashes)
        if h.size == 0:
            return
        pos = 0
        # The sparse map holds at most switch_threshold + 1 keys: feed it bounded slices, so that a large batch of
        # mostly distinct hashes is not sorted whole only to find where the sketch turns dense.
        while self._sparse is not None and pos < h.size:
            chunk = h[pos : pos + _SPARSE_CHUNK]
            pos += chunk.size - self._add_sparse(chunk).size
        if pos < h.size:
            self._add_dense(h[pos:])

    def add_hash(self, hashcode: int) -> None:
        """Add one 64-bit hash."""
        self.add_hashes(np.array([hashcode & ((1 << 64) - 1)], dtype=np.uint64))

    def _add_sparse(self, h: np.ndarray) -> np.ndarray:
        """Add to the sparse map until it overflows; returns the hashes left for the dense registers."""
        sparse = self._sparse
        assert sparse is not None
        p = self.p
        keys = (h & _U64(_P_PRIME_MASK)).astype(np.int64)
        ranks = _ntz64(h >> _U64(p)) + 1
        # A hash whose bits above p are all zero ranks 65, which the 6-bit sparse field stores as 1.
        values = np.where(ranks == 65, 1, ranks)
        threshold = self.switch_threshold
        cut = h.size  # number of leading hashes that go to the sparse map
        if len(sparse) > threshold:
            cut = 1
        else:
            uniq, first = np.unique(keys, return_index=True)
            if sparse:
                known = np.fromiter(sparse.keys(), dtype=np.int64, count=len(sparse))
                first = first[~np.isin(uniq, known)]
            room = threshold - len(sparse)
            if first.size > room:
                cut = int(np.sort(first)[room]) + 1
                if not (ranks[:cut] == 65).any():
                    # The map overflows within this slice, so the sketch ends dense: every register is then the
                    # largest rank of its hashes, whichever way they came (a sparse entry's value is the rank of its
                    # hashes, its key's low p bits the register), so the whole slice goes to the registers at once
                    # instead of through the map first. Not when a hash before the overflow ranks 65: the map
                    # stores that rank as 1 (above), as Hive does, and the registers would not.
                    self._switch_to_dense()
                    return h
        self._sparse_update(keys[:cut], values[:cut])
        if cut < h.size or len(sparse) > threshold:
            self._switch_to_dense()
        return h[cut:]

    def _sparse_update(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Max-merge (key, value) pairs into the sparse map, new keys in order of first appearance."""
        if keys.size == 0:
            return
        sparse = self._sparse
        assert sparse is not None
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        best = np.zeros(uniq.size, dtype=np.int64)
        np.maximum.at(best, inverse, values)
        order = np.argsort(first, kind="stable")
        new_keys, new_values = uniq[order], best[order]
        if sparse:
            # keys already in the map keep their place and take the larger value; only those that grow are
            # touched one by one (few: a key's value is the largest rank seen, which rarely rises again)
            held = np.fromiter(sparse.keys(), dtype=np.int64, count=len(sparse))
            held_values = np.fromiter(sparse.values(), dtype=np.int64, count=len(sparse))
            by_key = np.argsort(held)
            where = np.searchsorted(held, new_keys, sorter=by_key)
            where = by_key[np.minimum(where, held.size - 1)]
            known = held[where] == new_keys
            grows = known & (new_values > held_values[where])
            for key, value in zip(new_keys[grows].tolist(), new_values[grows].tolist(), strict=True):
                sparse[key] = value
            new_keys, new_values = new_keys[~known], new_values[~known]
        sparse.update(zip(new_keys.tolist(), new_values.tolist(), strict=True))

    def _add_dense(self, h: np.ndarray, *, native: bool = True) -> None:
        dense = self._dense
        assert dense is not None
        if native and _compiled() is not None:
            # the compiled loop (metastore.stats._hll_native, GIL released); the numpy code below is its reference
            _native.add_dense(np.ascontiguousarray(h, dtype=np.uint64), self.p, dense)
            top = int(dense.max())
            if top > self._max_register:
                self._max_register = top
            return
        # In blocks, in place: the working arrays stay in the CPU's cache and nothing is allocated per block.
        size = min(h.size, _DENSE_BLOCK)
        index = np.empty(size, dtype=np.uint64)
        low = np.empty(size, dtype=np.uint64)
        rest = np.empty(size, dtype=np.uint64)
        exponent = np.empty(size, dtype=np.float64)
        ranks = np.empty(size, dtype=np.uint8)
        mask, p = _U64(self.m - 1), _U64(self.p)
        for start in range(0, h.size, _DENSE_BLOCK):
            block = h[start : start + _DENSE_BLOCK]
            n = block.size
            np.bitwise_and(block, mask, out=index[:n])
            # rank = trailing zeros of h >>> p, plus one: the lowest set bit, isolated, is a power of two whose
            # double's exponent field is its position (a zero word has none: Java's 64 trailing zeros)
            np.right_shift(block, p, out=rest[:n])
            np.negative(rest[:n], out=low[:n])
            low[:n] &= rest[:n]
            exponent[:n] = low[:n]
            bits = exponent[:n].view(np.int64)
            bits >>= 52
            bits -= 1022
            if not rest[:n].all():
                bits[rest[:n] == 0] = 65
            ranks[:n] = bits
            np.maximum.at(dense, index[:n].view(np.int64), ranks[:n])
        # registers only grow: the largest ever set is the largest now
        top = int(dense.max())
        if top > self._max_register:
            self._max_register = top

    @staticmethod
    def _sparse_to_registers(sparse: dict[int, int], p: int) -> np.ndarray:
        reg = np.zeros(1 << p, dtype=np.uint8)
        if sparse:
            keys = np.fromiter(sparse.keys(), dtype=np.int64, count=len(sparse))
            vals = np.fromiter(sparse.values(), dtype=np.int64, count=len(sparse))
            # Values above 127 are negative Java bytes, which never win a register.
            vals = np.where(vals > 127, 0, vals).astype(np.uint8)
            np.maximum.at(reg, (keys & ((1 << p) - 1)).astype(np.intp), vals)
        return reg

    def _switch_to_dense(self) -> None:
        sparse = self._sparse or {}
        self._dense = self._sparse_to_registers(sparse, self.p)
        if self.bit_packing:
            self._max_register = int(self._dense.max()) if self._dense.size else 0
        self._sparse = None

    # ----------------------------------------------------------------------------------------- estimate

    def count(self) -> int:
        """Hive's ``HyperLogLog.count()`` (0 for an empty sketch)."""
        if self._sparse is not None:
            m_prime = 1 << P_PRIME
            return self._linear_count(m_prime, m_prime - len(self._sparse))
        dense = self._dense
        assert dense is not None
        # Java sums left to right; add.accumulate keeps that order where np.sum would not.
        total = float(np.add.accumulate(_INV_POW2[dense])[-1])
        zeros = int(np.count_nonzero(dense == 0))
        estimate = java_long(_alpha_mm(self.m) * (1.0 / total))
        if estimate <= 5 * self.m:
            estimate -= self._estimate_bias(estimate)
        linear = estimate
        if zeros != 0:
            linear = self._linear_count(self.m, zeros)
        if linear < java_long(THRESHOLD[self.p - 4] + 0.5):
            estimate = linear
        return estimate

    def estimate(self) -> int:
        """Hive's ``estimateNumDistinctValues()``: the count, but at least 1."""
        c = self.count()
        return c if c > 0 else 1

    @staticmethod
    def _linear_count(m: int, zeros: int) -> int:
        return java_round(m * math.log(m / float(zeros)))

    def _estimate_bias(self, count: int) -> int:
        raw = np.asarray(RAW_ESTIMATE[self.p - 4])
        bias = BIAS[self.p - 4]
        diff = float(count) - raw
        distance = diff * diff
        # Hive keys a TreeMap by distance: equal distances keep only the last index.
        order = np.lexsort((-np.arange(raw.size), distance))
        dist_sorted = distance[order]
        keep = np.ones(order.size, dtype=bool)
        keep[1:] = dist_sorted[1:] != dist_sorted[:-1]
        total = 0.0
        for i in order[keep][:K_NEAREST_NEIGHBOR].tolist():
            total += bias[i]
        return java_long(total / K_NEAREST_NEIGHBOR + 0.5)

    # -------------------------------------------------------------------------------------------- merge

    def merge(self, other: HyperLogLog) -> None:
        """Merge ``other`` into this sketch; ``other`` may have a larger p (it is squashed), not a smaller one."""
        if other.p < self.p:
            raise ValueError(
                f"HyperLogLog cannot merge a smaller p into a larger one: p={other.p} into p={self.p}"
            )
        if other.p != self.p:
            other = other.squash(self.p)
        if self._sparse is not None and other._sparse is not None:
            sparse = self._sparse
            if other._sparse:
                # the other's entries in its Java order: new keys join in that order, known ones keep the larger
                keys = np.fromiter(other._sparse.keys(), dtype=np.int64, count=len(other._sparse))
                values = np.fromiter(other._sparse.values(), dtype=np.int64, count=len(other._sparse))
                order = _hashmap_order(keys)
                self._sparse_update(keys[order], values[order])
            if len(sparse) > self.switch_threshold:
                self._switch_to_dense()
            return
        if self._sparse is not None:
            self._switch_to_dense()
        dense = self._dense
        assert dense is not None
        if other._dense is not None:
            other_reg, other_max = other._dense, other._max_register
        else:
            other_reg = self._sparse_to_registers(other._sparse or {}, other.p)
            other_max = (int(other_reg.max()) if other_reg.size else 0) if self.bit_packing else 0xFF
        np.maximum(dense, other_reg, out=dense)
        if other_max > self._max_register:
            self._max_register = other_max

    def _sparse_items_java_order(self) -> list[tuple[int, int]]:
        sparse = self._sparse or {}
        if not sparse:
            return []
        keys = np.fromiter(sparse.keys(), dtype=np.int64, count=len(sparse))
        ordered = keys[_hashmap_order(keys)].tolist()
        return [(k, sparse[k]) for k in ordered]

    def squash(self, p0: int) -> HyperLogLog:
        """Hive's ``squash``: this sketch reduced to ``p0 <= p`` registers, as a dense bit-packed sketch."""
        if p0 > self.p:
            raise ValueError(f"HyperLogLog cannot be squashed to a larger p: {self.p} to {p0}")
        if p0 == self.p:
            return self
        result = HyperLogLog(p0, dense=True)
        if self._sparse is not None:
            if not self._sparse:
                return result
            keys = np.fromiter(self._sparse.keys(), dtype=np.int64, count=len(self._sparse)).astype(np.uint64)
            ranks = np.fromiter(self._sparse.values(), dtype=np.int64, count=len(self._sparse))
            keep = ranks != 0
            # A long shift, masked to 6 bits as Java does.
            shifts = ((self.p + ranks[keep] - 1) & 63).astype(np.uint64)
            hashes = (_U64(1) << shifts) | keys[keep]
        else:
            dense = self._dense
            assert dense is not None
            idx = np.flatnonzero(dense).astype(np.uint32)
            ranks = dense[idx].astype(np.int64)
            # Hive shifts an int here: the amount wraps at 32 and bit 31 sign-extends into the long.
            shifts = ((self.p + ranks - 1) & 31).astype(np.uint32)
            as_int = ((np.uint32(1) << shifts) | idx).view(np.int32)
            hashes = as_int.astype(np.int64).view(np.uint64)
        if hashes.size:
            result._add_dense(hashes)
        return result

    # ------------------------------------------------------------------------------------ serialization

    def to_bytes(self) -> bytes:
        """Hive's serialized form (``HyperLogLogUtils.serializeHLL``)."""
        if self.p > 15:
            raise ValueError("a p=16 HyperLogLog cannot be serialized: Hive's header keeps p in 4 bits")
        estimate = _vulong(self.estimate())
        if self._dense is not None and self._max_register != 0:
            width = self._max_register.bit_length() if self._max_register < 128 else 8
            if width > 6:
                return MAGIC + bytes([(self.p << 4) | 7]) + estimate + self._dense.tobytes()
            return MAGIC + bytes([(self.p << 4) | width]) + estimate + _pack_registers(self._dense, width)
        sparse = self._sparse or {}
        header = MAGIC + bytes([self.p << 4]) + estimate + _vulong(len(sparse))
        if not sparse:
            return header
        keys = np.fromiter(sparse.keys(), dtype=np.int64, count=len(sparse))
        vals = np.fromiter(sparse.values(), dtype=np.int64, count=len(sparse))
        order = _hashmap_order(keys)
        entries = ((keys[order] << Q_PRIME) | vals[order]).astype(np.int64)
        # Each entry after the first is its 32-bit difference to the previous one, sign-extended.
        deltas = entries.copy()
        deltas[1:] = entries[1:] - entries[:-1]
        deltas = ((deltas + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        return header + _write_vulongs(deltas.view(np.uint64))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> HyperLogLog:
        """Read Hive's serialized form; raises :class:`HllFormatError` on anything Hive could not read."""
        buf = bytes(data)
        p, enc, pos = _header(buf)
        if enc == 0:
            sketch = cls(p)
            if pos == len(buf):
                # What Hive writes for a dense sketch with no register set.
                return sketch
            count, pos = _read_vulong(buf, pos)
            if count > len(buf) - pos:
                raise HllFormatError(f"HLL sparse list announces {count} entries in {len(buf) - pos} bytes")
            read = _native_function("read_sparse")
            found = read(buf, pos, count, Q_PRIME) if read is not None and count else None
            if found is not None:
                # the compiled decoding of the entries below (None, for the numpy reference, when they are
                # malformed or repeat a key)
                sketch._sparse = found[0]
                return sketch
            raw, pos = _read_vulongs(buf, pos, count)
            if count:
                # Running sum in 32-bit int arithmetic, as Hive's int delta decoding.
                entries = (np.cumsum(raw & _U64(0xFFFFFFFF), dtype=np.uint64) & _U64(0xFFFFFFFF)).astype(
                    np.int64
                )
                keys = entries >> Q_PRIME
                values = entries & ((1 << Q_PRIME) - 1)
                # a serialised map has each key once: taken as it is, in its order (what _sparse_update gives
                # for distinct keys, without its sort); repeated keys (not Hive's output) go the general way
                sparse = dict(zip(keys.tolist(), values.tolist(), strict=True))
                if len(sparse) == count:
                    sketch._sparse = sparse
                else:
                    sketch._sparse_update(keys, values)
            return sketch
        width = 8 if enc == 7 else enc
        sketch = cls(p, bit_packing=enc != 7, dense=True)
        nbytes = _dense_body_bytes(buf, p, width, pos)
        body = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=pos)
        if width == 8:
            reg = body.copy()
        else:
            reg = np.zeros(sketch.m, dtype=np.uint8)
            _max_registers(body, width, reg)
        reg[reg > 127] = 0  # negative Java bytes never win a register
        sketch._dense = reg
        if sketch.bit_packing:
            sketch._max_register = int(reg.max())
        return sketch


def _header(buf: bytes) -> tuple[int, int, int]:
    """A serialised sketch's p, encoding (0 sparse, 1..7 dense) and the position after its stored estimate;
    HllFormatError when the header is not one Hive could read."""
    if len(buf) < 4 or buf[:3] != MAGIC:
        raise HllFormatError("not a HyperLogLog sketch (no 'HLL' magic)")
    p = buf[3] >> 4
    enc = buf[3] & 7
    if not MIN_P <= p <= MAX_P:
        raise HllFormatError(f"HLL sketch has p={p}, outside {MIN_P}..{MAX_P}")
    _stored_estimate, pos = _read_vulong(buf, 4)
    return p, enc, pos


def _dense_body_bytes(buf: bytes, p: int, width: int, pos: int) -> int:
    """Bytes of a dense sketch's registers (``2**p`` of ``width`` bits from ``pos``), checked present."""
    nbytes = ((1 << p) * width + 7) // 8
    if len(buf) - pos < nbytes:
        raise HllFormatError(f"HLL dense registers are truncated: {max(len(buf) - pos, 0)} of {nbytes} bytes")
    return nbytes


def check_sketch_bytes(data: bytes) -> bool:
    """Whether ``data`` is a bit-packed dense sketch (encodings 1..6), checked as far as
    :meth:`HyperLogLog.from_bytes` checks one (header and register bytes: raises HllFormatError where it does)
    without unpacking its registers; False for any other encoding (sparse, or dense of 8-bit registers), which
    this does not check: parse those."""
    buf = bytes(data)
    p, enc, pos = _header(buf)
    if not 1 <= enc <= 6:
        return False
    _dense_body_bytes(buf, p, enc, pos)
    return True


def merge_sketch_bytes(blobs: Sequence[bytes], parse: Callable[[bytes], HyperLogLog] | None = None) -> bytes:
    """``merge_hlls([HyperLogLog.from_bytes(b) for b in blobs]).to_bytes()``, byte for byte, without parsing
    each dense sketch on its own where that is not needed: when every sketch has one p and at least one is
    bit-packed dense (then so is the result, whatever the order: its registers are the maximum of every
    sketch's, sparse ones converted), the dense registers are unpacked together, a width at a time. Anything
    else (every sketch sparse, where Hive's merged entry order depends on the order of the merges; several p; 8-bit
    registers) is merged one by one. ``parse`` parses the sketches that are parsed (default from_bytes);
    HllFormatError as from_bytes for a sketch that is not one."""
    if not blobs:
        raise ValueError("merge_sketch_bytes needs at least one sketch")
    read = parse or HyperLogLog.from_bytes
    heads = []
    for blob in blobs:
        buf = bytes(blob)
        heads.append((buf, *_header(buf)))
    p = heads[0][1]
    encodings = {enc for _, _, enc, _ in heads}
    if any(head[1] != p for head in heads) or 7 in encodings:
        return merge_hlls([read(blob) for blob in blobs]).to_bytes()
    if encodings == {0}:
        merged = _merge_sparse([read(buf) for buf, *_ in heads], p)
        if merged is not None:
            return merged.to_bytes()
    m = 1 << p
    registers = np.zeros(m, dtype=np.uint8)
    by_width: dict[int, list[memoryview]] = {}
    for buf, _, enc, pos in heads:
        if enc == 0:
            sparse = read(buf)
            np.maximum(registers, sparse.registers(), out=registers)
        else:
            nbytes = _dense_body_bytes(buf, p, enc, pos)
            by_width.setdefault(enc, []).append(memoryview(buf)[pos : pos + nbytes])
    for width, bodies in by_width.items():
        _max_registers(bodies[0] if len(bodies) == 1 else b"".join(bodies), width, registers)
    merged = HyperLogLog(p, dense=True)
    merged._dense = registers
    merged._max_register = int(registers.max())
    return merged.to_bytes()


def _merge_sparse(sketches: Sequence[HyperLogLog], p: int, *, native: bool = True) -> HyperLogLog | None:
    """What merge_hlls gives for sparse ``sketches`` of one ``p`` when that stays sparse (None when it turns
    dense): merged one by one, each sketch's entries join in its Java order, a new key after every key already
    there, a known one keeping the larger value; so the merged map holds every key in the order of its first
    appearance in those sequences laid end to end, with its largest value."""
    merge = _native_function("merge_sparse") if native else None
    if merge is not None:
        # the compiled loop of the numpy code below (its reference)
        maps = []
        for sketch in sketches:
            assert sketch._sparse is not None and sketch.p == p
            maps.append(sketch._sparse)
        merged = HyperLogLog(p)
        found = merge(maps, merged.switch_threshold)
        if found is None:
            return None
        merged._sparse = found
        return merged
    key_parts, value_parts = [], []
    for sketch in sketches:
        sparse = sketch._sparse
        assert sparse is not None and sketch.p == p
        if sparse:
            keys = np.fromiter(sparse.keys(), dtype=np.int64, count=len(sparse))
            values = np.fromiter(sparse.values(), dtype=np.int64, count=len(sparse))
            order = _hashmap_order(keys)
            key_parts.append(keys[order])
            value_parts.append(values[order])
    merged = HyperLogLog(p)
    if not key_parts:
        return merged
    keys, values = np.concatenate(key_parts), np.concatenate(value_parts)
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if unique.size > merged.switch_threshold:
        return None  # the union turns dense at some merge: every register is the maximum then
    best = np.zeros(unique.size, dtype=np.int64)
    np.maximum.at(best, inverse, values)
    order = np.argsort(first, kind="stable")
    merged._sparse = dict(zip(unique[order].tolist(), best[order].tolist(), strict=True))
    return merged


def _max_registers(bodies: bytes | memoryview | np.ndarray, width: int, registers: np.ndarray, *,
                   native: bool = True) -> None:
    """``registers`` (uint8, m of them) raised to the registers of each of the whole dense bodies of ``width``
    bits (1..7) that ``bodies`` holds back to back: the compiled loop (metastore.stats._hll_native) when it is
    built and ``native``, else numpy's :func:`_unpack_registers` (the reference; a warning once a process)."""
    m = registers.size
    if native and _compiled() is not None:
        _native.max_packed_registers(bodies, width, registers)
        return
    body = np.frombuffer(bodies, dtype=np.uint8)
    count = body.size // (m // 8 * width)
    unpacked = _unpack_registers(body, m * count, width).reshape(count, m)
    np.maximum(registers, unpacked.max(axis=0), out=registers)


def _compiled() -> object | None:
    """The compiled register loops, or None (with a warning the first time) when they are not built."""
    return _EXTENSION.get()


def _native_function(name: str) -> Callable[..., Any] | None:
    """A function of the compiled extension, or None when it is not built (a warning the first time) or was
    built from an older source without it."""
    module = _EXTENSION.get()
    return getattr(module, name, None) if module is not None else None


def _pack_registers(registers: np.ndarray, width: int, *, native: bool = True) -> bytes:
    """Registers as ``width``-bit fields, most significant bit first (Hive's bit packing): each group of eight
    registers is one big-endian word of ``width`` bytes: the compiled loop when it is built and ``native``, else
    built with a few whole-array shifts (the reference)."""
    pack = _native_function("pack_registers") if native else None
    if pack is not None:
        return cast(bytes, pack(np.ascontiguousarray(registers, dtype=np.uint8), width))
    groups = registers.size // 8  # m is a power of two >= 16
    fields = registers.reshape(groups, 8).astype(np.uint64)
    word = np.zeros(groups, dtype=np.uint64)
    for i in range(8):
        word <<= np.uint64(width)
        word |= fields[:, i]
    word <<= np.uint64(64 - 8 * width)  # the 8 * width bits at the top, then big-endian bytes
    return word.astype(">u8").view(np.uint8).reshape(groups, 8)[:, :width].tobytes()


def _unpack_registers(body: np.ndarray, m: int, width: int) -> np.ndarray:
    """The inverse of :func:`_pack_registers` for ``m`` registers."""
    groups = m // 8
    padded = np.zeros((groups, 8), dtype=np.uint8)
    padded[:, :width] = body[: groups * width].reshape(groups, width)
    word = padded.view(">u8").ravel().astype(np.uint64)
    mask = np.uint64((1 << width) - 1)
    out = np.empty((groups, 8), dtype=np.uint8)
    for i in range(8):
        out[:, i] = (word >> np.uint64(64 - width * (i + 1))) & mask
    return out.ravel()


def merge_hlls(sketches: Sequence[HyperLogLog]) -> HyperLogLog:
    """A new sketch holding the union of ``sketches``, at the smallest p among them."""
    if not sketches:
        raise ValueError("merge_hlls needs at least one sketch")
    result = HyperLogLog(min(s.p for s in sketches))
    for s in sketches:
        result.merge(s)
    return result
