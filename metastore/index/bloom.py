"""BLOOM: one bloom filter per stripe, sized for the stripe's distinct values at the configured false-positive
rate, over the typed canonical keys (columns.py): int64 keys hash as their 8 bytes (Murmur3 64, Hive's
``hash64(long)``), bytes keys as themselves. Build and probe share these functions, so a value formatted
differently (``1`` vs ``1.0`` for a decimal, ``'a'`` vs ``'a  '`` for a char) can never miss.

The filters are ours, not ORC's: ORC's probes are ``h1 + i*h2`` over 32-bit halves, taken modulo the filter
size, which collapse to one or two bits whenever ``h2`` shares a large factor with the filter size. For stripes
of a few distinct values (64-bit filters) that put the real false-positive rate near 1 % at a configured 0.1 %.
Three probe schemes (the description's ``bloom_probes``, the BLOOM block format's version):

- ``splitmix64-block512`` (written now): blocked. A filter is a whole number of 512-bit blocks (8 words, one cache
  line); a key's bits all lie in one block, ``((h >> 32) * blocks) >> 32``, set in rounds of 8 bits, one bit in
  each word of the block: round r (0, 1, ...) takes ``g = mix(h + (r + 1) * golden)`` and word w of the block
  gets bit ``(g >> 6w) & 63``. Adding or testing a key touches one cache line (the other schemes: k). At equal
  size a blocked filter has more false positives (its blocks' loads vary), so it is sized for the rate itself:
  the expected rate at a mean of ``L`` keys per block, ``sum_j Poisson(j; L) * P(a key's bits all set | j keys in
  its block)`` (blocked_rate), is computed exactly, and a filter gets the fewest blocks, over 1..MAX_ROUNDS
  rounds, whose load keeps it within RATE_HEADROOM (0.9) of the configured rate (at 0.1 %: one round, 32 keys a
  block, 15.9 bits a key against the classic filter's 14.4);
- ``splitmix64-dh`` (files written before; still read, never written): k bits anywhere in the filter, sized
  until the textbook rate ``(1 - e^(-kn/m))^k`` is within the configured one. For filters of DOUBLE_MIN_BITS
  (16,384) bits or more, double hashing over 64-bit words, ``z_i = h + i * h2`` (i = 0..k-1, modulo 2**64)
  with ``h2 = mix(h) | 1``, and the bit position taken from the top 32 bits of ``z_i`` by a multiply and shift,
  ``((z_i >> 32) * m) >> 32`` (``z_i % m`` for filters of 2**32 bits or more). Smaller filters use the
  positions of ``splitmix64`` (below): in a small filter a progression's probes fall on few bits too often;
- ``splitmix64`` (files written before those; still read, never written): every probe an independent SplitMix64
  mix of the hash and the probe number, ``mix(h + i * golden) % m`` (i = 1..k), sized as ``splitmix64-dh``.

A filter is sized for the stripe's distinct values. A build from a stripe's raw int64 values (``values_filter``)
does not sort them to count those: it sets the bits of every value in a filter sized for the number of values
and keeps it when the share of bits set says the values are (almost) all distinct (the linear-counting estimate
at least ``1 - DISTINCT_SLACK`` of them), otherwise counts the distinct values exactly and builds the filter for
that count. On all-distinct values both give the filter of the distinct keys bit for bit; a stripe with at most
about 2 % repeated values may get a filter up to 2 % larger than its distinct count needs (never smaller, so the
configured rate holds).

The build's per-value loop (hash, probe positions, bits) runs in the compiled kernel (kernels.py,
``_kernels.bloom_add_blocked``; ``bloom_add`` for the older schemes) when it is built: the same bits as the
numpy code here, which runs otherwise and is the reference the kernel is tested against
(tests/index/test_kernels.py). The older schemes' builders stay, so tests can write files of them.

Answers equality and IN (``KeySet`` and point ``KeyRange`` leaves); everything else is undecided. A stripe
with no non-null value has an empty filter and matches nothing. Blocks: the filters' 64-bit words back to back,
and an index of (first word u64, words u32, hash functions u32) per stripe (blocked: words a multiple of 8, hash
functions 8 per round).
"""

from __future__ import annotations

import functools
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


#: the probe scheme written in the description (the BLOOM block format's version): blocked
PROBES = "splitmix64-block512"
BLOCKED_PROBES = "splitmix64-block512"
#: the scheme of BLOOM files written before PROBES (double hashing); still read, never written
DOUBLE_PROBES = "splitmix64-dh"
#: the scheme of BLOOM files written before DOUBLE_PROBES; still read, never written
LEGACY_PROBES = "splitmix64"
READABLE_PROBES = (BLOCKED_PROBES, DOUBLE_PROBES, LEGACY_PROBES)
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
    (a reader tests all its stripes at once): probe_positions' for a LEGACY_PROBES file and for DOUBLE_PROBES
    filters under DOUBLE_MIN_BITS, double_positions' for the others; each filter's positions made by its scheme
    only."""
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
    """(bits, hash functions) of a DOUBLE_PROBES / LEGACY_PROBES filter for ``entries`` values: bits a multiple
    of 64, grown until the textbook false-positive rate with that many hash functions is at most ``fpp``."""
    n = max(entries, 1)
    bits = max(64, 64 * math.ceil(-n * math.log(fpp) / (math.log(2) ** 2) / 64))
    while True:
        k = max(1, min(MAX_HASH_FUNCTIONS, round(bits / n * math.log(2))))
        if (1.0 - math.exp(-k * n / bits)) ** k <= fpp:
            return bits, k
        bits += 64


# ------------------------------------------------------------------------------------------ the blocked scheme

#: words of a block (512 bits, one cache line); a round sets one bit in each
BLOCK_WORDS = 8
#: rounds of 8 bits a key at most (64 hash functions)
MAX_ROUNDS = 8
_LANE_SHIFTS = np.arange(BLOCK_WORDS, dtype=np.uint64) * np.uint64(6)
_LANE_BITS = np.uint64(63)


def _round_mix(h: np.ndarray, r: int) -> np.ndarray:
    """Round r's position word of every hash: mix(h + (r + 1) * golden)."""
    with np.errstate(over="ignore"):
        return _mix(h + np.uint64(r + 1) * _GOLDEN)


def _blocks_of(h: np.ndarray, blocks: int | np.ndarray) -> np.ndarray:
    """The block of every hash: ``((h >> 32) * blocks) >> 32`` (blocks at most 2**32: the product fits 64 bits)."""
    with np.errstate(over="ignore"):
        return ((h >> _HIGH) * np.asarray(blocks, dtype=np.uint64)) >> _HIGH


def blocked_positions(hashes: np.ndarray, rounds: int, blocks: int) -> np.ndarray:
    """BLOCKED_PROBES: bit positions (int64, shape (8 * rounds, len(hashes)): probe-major) of every probe of
    every hash in a filter of ``blocks`` blocks: probe 8r + w is bit ``(mix(h + (r + 1) * golden) >> 6w) & 63``
    of word w of block ``((h >> 32) * blocks) >> 32``."""
    h = np.asarray(hashes, dtype=np.int64).view(np.uint64)
    out = np.empty((BLOCK_WORDS * rounds, len(h)), dtype=np.uint64)
    base = _blocks_of(h, blocks) * np.uint64(64 * BLOCK_WORDS)
    for r in range(rounds):
        g = _round_mix(h, r)
        lanes = (g[None, :] >> _LANE_SHIFTS[:, None]) & _LANE_BITS
        lanes += base[None, :]
        lanes += (np.arange(BLOCK_WORDS, dtype=np.uint64) * np.uint64(64))[:, None]
        out[BLOCK_WORDS * r : BLOCK_WORDS * (r + 1)] = lanes
    return out.view(np.int64)


@functools.cache
def _word_match(rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """A word's share of a probe: the distribution of how many distinct bits (1..rounds) a key's ``rounds``
    uniform draws among a word's 64 bits are (as (counts, probabilities)), from Stirling numbers of the second
    kind: P(d) = C(64, d) * S(rounds, d) * d! / 64**rounds."""
    stirling = [[0] * (rounds + 1) for _ in range(rounds + 1)]
    stirling[0][0] = 1
    for i in range(1, rounds + 1):
        for d in range(1, i + 1):
            stirling[i][d] = d * stirling[i - 1][d] + stirling[i - 1][d - 1]
    counts = np.arange(1, rounds + 1)
    weights = [math.comb(64, d) * stirling[rounds][d] * math.factorial(d) for d in counts.tolist()]
    return counts, np.asarray(weights, dtype=np.float64) / float(64**rounds)


def blocked_rate(load: float, rounds: int) -> float:
    """The expected false-positive rate of a blocked filter with a mean of ``load`` keys a block (the number in
    one block Poisson, as the filter grows: for a filter of few blocks the exact, binomial, count gives a lower
    rate, tests/index/test_bloom_schemes.py), ``rounds`` rounds a key: with j other keys in its block, each of
    the block's words has each bit set with chance ``q = 1 - (63/64)^(j * rounds)``, and a key not in the
    filter passes a word when its ``d`` distinct bits there are set, about ``q^d`` (the bits of one word, given
    j, are negatively associated, so the product is an upper bound), so a block passes with chance
    ``E_d[q^d]^8``."""
    if load <= 0:
        return 0.0
    top = int(math.ceil(load + 12.0 * math.sqrt(load) + 40.0))
    j = np.arange(top + 1, dtype=np.float64)
    log_factorial = np.concatenate([[0.0], np.cumsum(np.log(j[1:]))])
    weights = np.exp(-load + j * math.log(load) - log_factorial)
    q = 1.0 - (63.0 / 64.0) ** (j * rounds)
    counts, chances = _word_match(rounds)
    word = (q[:, None] ** counts[None, :]) @ chances
    return float(np.dot(weights, word**BLOCK_WORDS))


#: the fewest keys a block may hold on average before a rate is said to be out of reach (about 512 K bits a key)
_MIN_LOAD = 1e-3
#: blocked filters are sized for this share of the configured rate: the rate of one filter varies with how its
#: keys fell into blocks, so the measured rate stays within the configured one, not only its expectation
#: (about 1 % more bits at 0.1 %)
RATE_HEADROOM = 0.9


@functools.cache
def _max_load(fpp: float, rounds: int) -> float:
    """The largest mean load (keys a block) at which blocked_rate stays within ``fpp`` (by bisection; the rate
    grows with the load)."""
    low, high = _MIN_LOAD, float(64 * BLOCK_WORDS * 8)
    if blocked_rate(high, rounds) <= fpp:
        return high
    if blocked_rate(low, rounds) > fpp:
        return 0.0
    for _ in range(60):
        middle = (low + high) / 2
        if blocked_rate(middle, rounds) <= fpp:
            low = middle
        else:
            high = middle
    return low


def blocked_size(entries: int, fpp: float) -> tuple[int, int]:
    """(blocks, rounds) of a blocked filter for ``entries`` keys at the rate ``fpp``: the fewest blocks over
    1..MAX_ROUNDS rounds (the fewer rounds on a tie) at which the mean load keeps blocked_rate within
    ``RATE_HEADROOM * fpp``. ValueError for a rate no filter reaches (below about 1e-100)."""
    n = max(entries, 1)
    best: tuple[int, int] | None = None
    for rounds in range(1, MAX_ROUNDS + 1):
        load = _max_load(RATE_HEADROOM * fpp, rounds)
        if load <= 0:
            continue
        blocks = max(1, math.ceil(n / load))
        if best is None or blocks < best[0]:
            best = (blocks, rounds)
        elif blocks > best[0]:
            break  # past the best number of rounds: more only cost bits
    if best is None or best[0] > 1 << 32:
        raise ValueError(f"no bloom filter of {entries} keys reaches a false-positive rate of {fpp}")
    return best


# ------------------------------------------------------------------------------------------ filters


def _scheme(probes: str | None) -> str:
    return PROBES if probes is None else probes


class StripeBloom:
    """One stripe's bloom filter: ``words`` (uint64) and ``k`` probes per value of the scheme ``probes``
    (BLOCKED_PROBES: ``k // 8`` rounds over ``len(words) // 8`` blocks)."""

    def __init__(self, words: np.ndarray, k: int, probes: str = BLOCKED_PROBES) -> None:
        if probes not in READABLE_PROBES:
            raise ValueError(f"unknown bloom probe scheme {probes!r}")
        if probes == BLOCKED_PROBES and (len(words) % BLOCK_WORDS or k % BLOCK_WORDS or not 0 < k <= 8 * MAX_ROUNDS):
            raise ValueError(f"a blocked bloom filter of {len(words)} words and {k} probes")
        self.words = words
        self.num_hash_functions = k
        self.num_bits = 64 * len(words)
        self.probes = probes

    @classmethod
    def for_entries(cls, entries: int, fpp: float, probes: str | None = None) -> StripeBloom:
        """An empty filter for ``entries`` keys at the rate ``fpp`` in the scheme ``probes`` (default PROBES)."""
        probes = _scheme(probes)
        if probes == BLOCKED_PROBES:
            blocks, rounds = blocked_size(entries, fpp)
            return cls(np.zeros(blocks * BLOCK_WORDS, dtype=np.uint64), BLOCK_WORDS * rounds, probes)
        bits, k = filter_size(entries, fpp)
        return cls(np.zeros(bits // 64, dtype=np.uint64), k, probes)

    @property
    def blocked(self) -> bool:
        return self.probes == BLOCKED_PROBES

    def _probe_major(self, hashes: np.ndarray) -> np.ndarray:
        """(probes, values) bit positions of the filter's scheme (PROBES' are made probe-major: no copy)."""
        h = np.asarray(hashes, dtype=np.int64).ravel()
        if self.blocked:
            return blocked_positions(h, self.num_hash_functions // BLOCK_WORDS, len(self.words) // BLOCK_WORDS)
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
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        if self.blocked:
            return compiled.bloom_add_blocked(self.words, keys, self.num_hash_functions // BLOCK_WORDS, hashed)
        double = self.probes != LEGACY_PROBES and self.num_bits >= DOUBLE_MIN_BITS
        return compiled.bloom_add(self.words, keys, self.num_hash_functions, hashed, double)

    def expected_set_bits(self, keys: float) -> float:
        """The bits of this filter that ``keys`` distinct keys set, expected (the linear-counting estimate's
        curve): blocked, each word gets ``rounds`` draws a key of its block, a block's keys binomial."""
        m = self.num_bits
        if self.blocked:
            blocks = len(self.words) // BLOCK_WORDS
            unset = (63.0 / 64.0) ** (self.num_hash_functions // BLOCK_WORDS)
            return m * (1.0 - (1.0 - (1.0 - unset) / blocks) ** keys)
        return m * (1.0 - math.exp(-self.num_hash_functions * keys / m))

    def test_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash, whether every probe bit is set (the value may be in the stripe); blocked: each hash's block
        read as one row of 8 words, round by round its 8 bits tested there."""
        if self.blocked:
            h = np.asarray(hashes, dtype=np.int64).ravel().view(np.uint64)
            rows = self.words.reshape(-1, BLOCK_WORDS)[_blocks_of(h, len(self.words) // BLOCK_WORDS).astype(np.intp)]
            passed = np.ones(len(h), dtype=bool)
            for r in range(self.num_hash_functions // BLOCK_WORDS):
                lanes = (_round_mix(h, r)[:, None] >> _LANE_SHIFTS[None, :]) & _LANE_BITS
                passed &= np.all((rows >> lanes) & np.uint64(1) == 1, axis=1)
            return passed
        pos = self._probe_major(hashes)
        bits = (self.words[pos >> 6] >> (pos & 63).astype(np.uint64)) & np.uint64(1)
        return np.all(bits == 1, axis=0)


def stripe_filter(
    domain: Domain, distinct: np.ndarray, fpp: float, *, native: bool = True, probes: str | None = None,
) -> StripeBloom | None:
    """The filter (scheme ``probes``, default PROBES) of one stripe's distinct keys (None when the stripe has no
    non-null value); int64 keys are hashed by the compiled kernel when it is built (and ``native``)."""
    if len(distinct) == 0:
        return None
    bloom = StripeBloom.for_entries(len(distinct), fpp, probes)
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


def values_filter(
    values: np.ndarray, fpp: float, *, native: bool = True, probes: str | None = None,
) -> StripeBloom | None:
    """The filter (scheme ``probes``, default PROBES) of one stripe from its non-null int64 keys as read (any
    order, repeats allowed), without sorting them when they are (almost) all distinct: the bits of every value
    are set in a filter sized for the number of values, kept when the bits set say at least ``1 -
    DISTINCT_SLACK`` of the values are distinct (more bits set than that many distinct keys set, expected:
    StripeBloom.expected_set_bits, the linear-counting estimate's curve); otherwise the distinct values are
    counted (a sort) and the filter built for that count. On distinct values the result is stripe_filter's bit
    for bit; it depends on the values only, not on where they were read. With the compiled kernel built (and
    ``native``) the values are hashed and their bits set in one pass, in the filter itself (the same bits as
    this numpy code)."""
    n = len(values)
    if n == 0:
        return None
    keys = np.asarray(values, dtype=np.int64)
    if native and kernels.native() is not None:
        return _native_values_filter(keys, fpp, probes)
    hashes = key_hashes(Domain.INT64, keys)
    if n >= EXACT_BELOW:
        bloom = StripeBloom.for_entries(n, fpp, probes)
        bitmap = bloom._bitmap(hashes)
        if np.count_nonzero(bitmap) >= bloom.expected_set_bits((1.0 - DISTINCT_SLACK) * n):
            bloom._or_bitmap(bitmap)
            return bloom
    bloom = StripeBloom.for_entries(_distinct_count(keys), fpp, probes)
    bloom.add_hashes(hashes, native=False)
    return bloom


def _native_values_filter(keys: np.ndarray, fpp: float, probes: str | None) -> StripeBloom:
    """values_filter by the compiled kernel: hashes and bits in one pass; the bits set in the fresh filter are
    the count the numpy code takes from its bitmap of the values' bits."""
    n = len(keys)
    keys = np.ascontiguousarray(keys)
    if n >= EXACT_BELOW:
        bloom = StripeBloom.for_entries(n, fpp, probes)
        set_bits = bloom._native_add(keys, hashed=False)
        assert set_bits is not None
        if set_bits >= bloom.expected_set_bits((1.0 - DISTINCT_SLACK) * n):
            return bloom
    bloom = StripeBloom.for_entries(_distinct_count(keys), fpp, probes)
    bloom._native_add(keys, hashed=False)
    return bloom


def write_filters(writer: IndexFileWriter, domain: Domain, files: Sequence[FileValues], fpp: float) -> dict[str, Any]:
    """Blocks of every stripe's filter, in the scheme PROBES; ``StripeValues.bloom`` (a filter kept from the
    previous build) is reused as it is."""
    words: list[memoryview] = []
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
            # little-endian words (no copy where that is the machine's order), joined into the block at once
            words.append(np.ascontiguousarray(bloom.words, dtype="<u8").data.cast("B"))
            position += len(bloom.words)
    data = b"".join(words)
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
        #: the file's probe scheme (PROBES, or DOUBLE_PROBES / LEGACY_PROBES for files written before it)
        self.probes: str = str(probes)
        blocked = self.probes == BLOCKED_PROBES
        most_probes = BLOCK_WORDS * MAX_ROUNDS if blocked else MAX_HASH_FUNCTIONS
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
            if first + count > len(self._words) or not 1 <= k <= most_probes:
                raise IndexFileCorrupt(self.path, f"bloom filter {i} lies outside the filter block")
            if blocked and (count % BLOCK_WORDS or k % BLOCK_WORDS):
                raise IndexFileCorrupt(self.path, f"bloom filter {i} is not whole blocks and rounds")
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
        if self.probes == BLOCKED_PROBES:
            words, shifts = self._blocked_words(h, k_max // BLOCK_WORDS)
        else:
            positions = _filters_positions(h, k_max, self._bits, legacy=self.probes == LEGACY_PROBES)
            words = self._words[self._first[:, None, None] + (positions >> 6)]
            shifts = (positions & 63).astype(np.uint64)
        bits = (words >> shifts) & np.uint64(1)
        unused = np.arange(1, k_max + 1)[None, None, :] > self._k[:, None, None]
        out[self._present] = np.any(np.all((bits == 1) | unused, axis=2), axis=1)
        return out

    def _blocked_words(self, h: np.ndarray, rounds: int) -> tuple[np.ndarray, np.ndarray]:
        """For every filter, hash and probe (filters, values, 8 * rounds): the word a BLOCKED_PROBES probe tests
        and the bit's shift in it (blocked_positions, for all the file's filters at once)."""
        blocks = self._bits // np.uint64(64 * BLOCK_WORDS)
        block = _blocks_of(h[None, :], blocks[:, None]).astype(np.int64)  # (filters, values)
        lane = np.arange(BLOCK_WORDS * rounds, dtype=np.int64) % BLOCK_WORDS
        index = self._first[:, None, None] + block[:, :, None] * BLOCK_WORDS + lane[None, None, :]
        g = np.stack([_round_mix(h, r) for r in range(rounds)], axis=1)  # (values, rounds)
        shifts = ((g[:, :, None] >> _LANE_SHIFTS[None, None, :]) & _LANE_BITS).reshape(len(h), -1)
        return self._words[index], shifts[None, :, :]
