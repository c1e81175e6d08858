"""ORC bloom filters, bit-compatible with ORC Java (``org.apache.orc.util.BloomFilter``) and ORC C++.

A value is reduced to a signed 64-bit hash: integers, dates, timestamps (UTC millis), floats and doubles (the
IEEE bits of the value widened to double) go through Thomas Wang's 64-bit integer hash; strings, binary and
decimals (their trimmed plain-text form) go through the ORC flavour of Murmur3 ``hash64`` (seed 104729). The hash
then sets ``k`` bit positions ``(h1 + i * h2)`` for i in 1..k, with h1/h2 the low/high 32 bits (int32 wrap,
negative results bit-inverted).

Serialised forms: the BLOOM_FILTER_UTF8 stream stores the 64-bit words little-endian in ``utf8bitset``; the
legacy BLOOM_FILTER stream stores them as ``repeated fixed64 bitset``.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from ._errors import OrcError
from ._murmur3 import hash64, hash64_array_bytes
from ._proto import orc_proto_pb2 as pb

#: Java's default false-positive probability for the writer (``orc.bloom.filter.fpp``).
DEFAULT_FPP = 0.01
#: ColumnEncoding.bloom_encoding written with BLOOM_FILTER_UTF8 (UTF-8 strings, UTC timestamps).
BLOOM_ENCODING_UTF8_UTC = 1
#: Largest filter a reader accepts (Java caps at the same order); stops corrupt sizes allocating gigabytes.
MAX_BLOOM_WORDS = 1 << 24

_MASK64 = (1 << 64) - 1
_CANONICAL_NAN_BITS = 0x7FF8000000000000


def optimal_num_bits(expected_entries: int, fpp: float) -> int:
    """Bits Java allocates: ``-n ln p / (ln 2)^2`` truncated, then rounded up past the next multiple of 64."""
    n = max(int(expected_entries), 1)
    if not 0.0 < fpp < 1.0:
        raise OrcError(f"bloom filter false-positive probability must be in (0, 1), got {fpp}")
    nb = int(-n * math.log(fpp) / (math.log(2) ** 2))
    # Java adds (64 - nb % 64) even when nb is already a multiple of 64
    return nb + (64 - nb % 64)


def optimal_num_hash_functions(expected_entries: int, num_bits: int) -> int:
    """Hash functions Java uses: ``round(m / n * ln 2)``, at least 1 (Java ``Math.round`` = floor(x + 0.5))."""
    n = max(int(expected_entries), 1)
    return max(1, int(math.floor(num_bits / n * math.log(2) + 0.5)))


def long_hash(value: int) -> int:
    """Thomas Wang's 64-bit hash on a signed long, as Java ``BloomFilter.getLongHash`` (wrapping, arithmetic >>)."""
    key = value & _MASK64

    def sar(x: int, n: int) -> int:
        # arithmetic shift right of a 64-bit two's-complement value held unsigned
        if x >> 63:
            return ((x >> n) | (_MASK64 << (64 - n))) & _MASK64
        return x >> n

    key = ((~key) + (key << 21)) & _MASK64
    key ^= sar(key, 24)
    key = (key + (key << 3) + (key << 8)) & _MASK64
    key ^= sar(key, 14)
    key = (key + (key << 2) + (key << 4)) & _MASK64
    key ^= sar(key, 28)
    key = (key + (key << 31)) & _MASK64
    return key - (1 << 64) if key >> 63 else key


def long_hashes(values: np.ndarray) -> np.ndarray:
    """Vectorised :func:`long_hash` over an int64 array (returns int64)."""
    key = np.asarray(values, dtype=np.int64).copy()
    with np.errstate(over="ignore"):
        key = ~key + (key << np.int64(21))
        key ^= key >> np.int64(24)
        key = key + (key << np.int64(3)) + (key << np.int64(8))
        key ^= key >> np.int64(14)
        key = key + (key << np.int64(2)) + (key << np.int64(4))
        key ^= key >> np.int64(28)
        key = key + (key << np.int64(31))
    return key


def double_to_long_bits(value: float) -> int:
    """Java ``Double.doubleToLongBits`` (every NaN becomes the canonical 0x7ff8000000000000), signed."""
    bits = _CANONICAL_NAN_BITS if value != value else struct.unpack("<Q", struct.pack("<d", value))[0]
    return bits - (1 << 64) if bits >> 63 else bits


def doubles_to_long_bits(values: np.ndarray) -> np.ndarray:
    """Vectorised :func:`double_to_long_bits` (float32 input is widened to double first, as Java does)."""
    arr = np.asarray(values, dtype=np.float64)
    bits = arr.view(np.int64).copy()
    bits[np.isnan(arr)] = _CANONICAL_NAN_BITS
    return bits


def _signed64(x: int) -> int:
    x &= _MASK64
    return x - (1 << 64) if x >> 63 else x


def bytes_hash(data: bytes) -> int:
    """ORC Murmur3 ``hash64`` of bytes, as a signed long."""
    return _signed64(hash64(bytes(data)))


def bytes_hashes(values: Sequence[bytes]) -> np.ndarray:
    """:func:`bytes_hash` over many values (int64 array)."""
    return np.asarray(hash64_array_bytes(values), dtype=np.int64)


def decimal_bloom_text(value: Decimal) -> str:
    """The text ORC hashes for a decimal: plain notation, trailing fraction zeros trimmed (``5.5``, ``0``)."""
    if not value.is_finite():
        raise OrcError(f"decimal value {value} is not finite")
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text


@dataclass
class BloomFilter:
    """A bloom filter of ``num_bits`` bits (a multiple of 64) using ``num_hash_functions`` probes."""

    num_bits: int
    num_hash_functions: int
    words: np.ndarray  # uint64, num_bits / 64 of them

    # ------------------------------------------------------------------ construction

    @classmethod
    def for_entries(cls, expected_entries: int, fpp: float = DEFAULT_FPP) -> BloomFilter:
        """An empty filter sized for ``expected_entries`` distinct values at false-positive rate ``fpp`` (Java rules)."""
        num_bits = optimal_num_bits(expected_entries, fpp)
        k = optimal_num_hash_functions(expected_entries, num_bits)
        return cls(num_bits, k, np.zeros(num_bits // 64, dtype=np.uint64))

    @classmethod
    def from_words(cls, words: Iterable[int] | np.ndarray, num_hash_functions: int) -> BloomFilter:
        """A filter from its 64-bit words (legacy ``bitset`` field)."""
        arr = np.asarray(words if isinstance(words, np.ndarray) else list(words), dtype=np.uint64)
        if len(arr) == 0:
            raise OrcError("bloom filter has no bits")
        if len(arr) > MAX_BLOOM_WORDS:
            raise OrcError(f"bloom filter of {len(arr)} words is larger than the {MAX_BLOOM_WORDS} allowed")
        if not 1 <= num_hash_functions <= 1024:
            raise OrcError(f"bloom filter claims {num_hash_functions} hash functions")
        return cls(len(arr) * 64, int(num_hash_functions), arr.copy())

    @classmethod
    def from_utf8_bytes(cls, data: bytes, num_hash_functions: int) -> BloomFilter:
        """A filter from the little-endian words of a BLOOM_FILTER_UTF8 entry."""
        if len(data) % 8:
            raise OrcError(f"bloom filter bitset of {len(data)} bytes is not a whole number of 64-bit words")
        return cls.from_words(np.frombuffer(data, dtype="<u8").astype(np.uint64), num_hash_functions)

    @classmethod
    def _from_proto(cls, message: pb.BloomFilter) -> BloomFilter:
        """A filter from an ``orc.proto.BloomFilter`` of either stream kind (utf8bitset wins when present)."""
        if not message.HasField("num_hash_functions"):
            raise OrcError("bloom filter entry has no num_hash_functions")
        if message.HasField("utf8bitset"):
            return cls.from_utf8_bytes(message.utf8bitset, message.num_hash_functions)
        return cls.from_words(np.asarray(message.bitset, dtype=np.uint64), message.num_hash_functions)

    # ------------------------------------------------------------------ serialisation

    def to_utf8_bytes(self) -> bytes:
        """The words as little-endian bytes (the ``utf8bitset`` of BLOOM_FILTER_UTF8)."""
        return self.words.astype("<u8").tobytes()

    def _to_proto(self, *, legacy: bool = False) -> pb.BloomFilter:
        """An ``orc.proto.BloomFilter``: ``utf8bitset`` form, or the ``bitset`` words form when ``legacy``."""
        msg = pb.BloomFilter(num_hash_functions=self.num_hash_functions)
        if legacy:
            msg.bitset.extend(int(w) for w in self.words)
        else:
            msg.utf8bitset = self.to_utf8_bytes()
        return msg

    # ------------------------------------------------------------------ hashing core

    def _positions(self, hashes: np.ndarray) -> np.ndarray:
        h = np.asarray(hashes, dtype=np.int64)
        hash1 = h.astype(np.int32)  # low 32 bits, wrapping
        hash2 = (h.view(np.uint64) >> np.uint64(32)).astype(np.uint32).view(np.int32)
        i = np.arange(1, self.num_hash_functions + 1, dtype=np.int32)
        with np.errstate(over="ignore"):
            combined = hash1[:, None] + i[None, :] * hash2[:, None]
        combined = np.where(combined < 0, ~combined, combined).astype(np.int64)
        return combined % self.num_bits

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Add values by their 64-bit hashes (vectorised)."""
        h = np.asarray(hashes, dtype=np.int64).ravel()
        if len(h) == 0:
            return
        pos = self._positions(h).ravel()
        if len(pos) * 8 < len(self.words):
            # few probes: scatter straight into the words instead of building a whole bit array
            np.bitwise_or.at(self.words, pos >> 6, np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)))
            return
        bits = np.zeros(self.num_bits, dtype=np.uint8)
        bits[pos] = 1
        self.words |= np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)

    def test_hash(self, h: int) -> bool:
        """True when every probe bit of hash ``h`` is set (the value may be present)."""
        pos = self._positions(np.asarray([_signed64(h)], dtype=np.int64))[0]
        word = self.words[pos >> 6]
        return bool(np.all((word >> (pos & 63).astype(np.uint64)) & np.uint64(1)))

    def test_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`test_hash` (bool array)."""
        pos = self._positions(np.asarray(hashes, dtype=np.int64).ravel())
        bits = (self.words[pos >> 6] >> (pos & 63).astype(np.uint64)) & np.uint64(1)
        return np.all(bits == 1, axis=1)

    # ------------------------------------------------------------------ typed helpers

    def add_long(self, value: int) -> None:
        """Add a tinyint..bigint, date (days) or timestamp (UTC millis)."""
        self.add_hashes(np.asarray([long_hash(value)], dtype=np.int64))

    def add_longs(self, values: np.ndarray) -> None:
        """Vectorised :meth:`add_long`."""
        self.add_hashes(long_hashes(np.asarray(values, dtype=np.int64)))

    def add_double(self, value: float) -> None:
        """Add a float or double (floats widened to double first)."""
        self.add_long(double_to_long_bits(float(value)))

    def add_doubles(self, values: np.ndarray) -> None:
        """Vectorised :meth:`add_double`."""
        self.add_hashes(long_hashes(doubles_to_long_bits(values)))

    def add_bytes(self, value: bytes) -> None:
        """Add a binary value, or a string's UTF-8 bytes."""
        self.add_hashes(np.asarray([bytes_hash(value)], dtype=np.int64))

    def add_string(self, value: str) -> None:
        """Add a string (hashed as UTF-8)."""
        self.add_bytes(value.encode("utf-8"))

    def test_long(self, value: int) -> bool:
        """Might ``value`` (integer, date days, timestamp UTC millis) have been added?"""
        return self.test_hash(long_hash(value))

    def test_double(self, value: float) -> bool:
        """Might the float/double ``value`` have been added?"""
        return self.test_hash(long_hash(double_to_long_bits(float(value))))

    def test_bytes(self, value: bytes) -> bool:
        """Might the binary ``value`` (or UTF-8 string bytes) have been added?"""
        return self.test_hash(bytes_hash(value))

    def test_string(self, value: str) -> bool:
        """Might the string ``value`` have been added?"""
        return self.test_bytes(value.encode("utf-8"))

    def merge(self, other: BloomFilter) -> None:
        """OR another filter of the same shape into this one."""
        if other.num_bits != self.num_bits or other.num_hash_functions != self.num_hash_functions:
            raise OrcError(
                f"cannot merge bloom filters of {other.num_bits} bits/{other.num_hash_functions} hashes into "
                f"{self.num_bits} bits/{self.num_hash_functions} hashes"
            )
        self.words |= other.words

    @property
    def bit_count(self) -> int:
        """Number of set bits."""
        return int(np.unpackbits(self.words.astype("<u8").view(np.uint8)).sum())


# ------------------------------------------------------------------------------------ type-specific hashing

_LONG_CATEGORIES = {"tinyint", "smallint", "int", "bigint", "date"}
_BYTES_CATEGORIES = {"string", "varchar", "char", "binary"}


def value_hash(type_name: str, value: Any) -> int | None:
    """The 64-bit hash ORC Java feeds its bloom filter for one value of a column (by schema category name:
    ``int``, ``string``, ``decimal``, ``timestamp``...), or None when the type keeps no bloom filter data.

    Timestamps are given as UTC epoch milliseconds (int) or a timezone-aware ``datetime``; dates as epoch days
    or ``datetime.date``; decimals as ``Decimal``; char values must already be padded to the column length.
    ``value`` is Any: probes come from literals of any Python type, converted as ``int()``/``float()``/``bytes()``
    would (their errors name the value).
    """
    name = type_name.split("(", 1)[0].strip().lower()
    if name in _LONG_CATEGORIES:
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            value = (value - dt.date(1970, 1, 1)).days
        return long_hash(int(value))
    if name in ("float", "double"):
        return long_hash(double_to_long_bits(float(value)))
    if name in _BYTES_CATEGORIES:
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return bytes_hash(data)
    if name == "decimal":
        return bytes_hash(decimal_bloom_text(Decimal(value)).encode("utf-8"))
    if name.startswith("timestamp"):
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                raise OrcError("timestamp bloom filter probes need a timezone-aware datetime or UTC millis")
            delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
            value = delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000
        return long_hash(int(value))
    return None


def has_bad_bloom_filters(writer_id: int | None, software_version: str | None) -> bool:
    """True for files whose bloom filters must be ignored: ORC C++ (writer 1) 1.6.0-1.6.11 and 1.7.0 hashed
    numbers wrongly (ORC-1024), and a C++ file without a software version predates the fix."""
    if writer_id != 1:
        return False
    if not software_version:
        return True
    base = software_version.split("-", 1)[0].strip()
    bad = {f"1.6.{i}" for i in range(12)} | {"1.7.0"}
    return base in bad
