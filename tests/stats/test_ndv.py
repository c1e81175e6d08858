"""NDV facade: format detection, FM sketches against Hive's estimator, merging, typed hashing inputs."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

import numpy as np
import pytest

from metastore.orcio import hash64, hash64_long
from metastore.stats.fmsketch import FmFormatError, FMSketch
from metastore.stats.hll import HyperLogLog
from metastore.stats.model import StatsKind
from metastore.stats.ndv import (
    NdvFormatError,
    NdvSketch,
    hashes_for,
    merge_all,
    merge_sketches,
    sketch_format,
)


def _fm_bytes(vectors: list[int]) -> bytes:
    n = len(vectors)
    return b"FM" + bytes([n & 0xFF, n >> 8]) + b"".join(v.to_bytes(4, "little", signed=True) for v in vectors)


FM_CASES = [
    "16 0 1000 1",
    "16 0 5000 3 + 2000 5000 3",
    "1 5 1 1",
    "64 -50000 50000 7",
    "32 0 60000 1 + 30000 60000 1",
    "8 0 0 1",
]


def test_fm_estimates_and_merges_match_hive(java_oracle) -> None:
    lines = java_oracle("FmOracle", "".join(c + "\n" for c in FM_CASES))
    assert len(lines) == len(FM_CASES)
    for case, line in zip(FM_CASES, lines, strict=True):
        n = int(case.split()[0])
        numbers = [int(x) for x in line.split()]
        single, merged, vectors = numbers[0], numbers[1], numbers[2:]
        a = FMSketch.from_bytes(_fm_bytes(vectors[:n]))
        assert a.num_bit_vectors == n
        assert a.estimate() == single, case
        assert FMSketch.from_bytes(a.to_bytes()).estimate() == single
        if merged >= 0:
            b = FMSketch.from_bytes(_fm_bytes(vectors[n:]))
            a.merge(b)
            assert a.estimate() == merged, case
            assert merge_all([_fm_bytes(vectors[:n]), _fm_bytes(vectors[n:])]) == merged


def test_fm_format_and_errors() -> None:
    sketch = FMSketch.from_bytes(b"FM\x02\x00" + b"\x01\x00\x00\x00" + b"\x03\x00\x00\x80")
    assert sketch.vectors.tolist() == [1, 0x80000003]
    assert sketch.to_bytes() == b"FM\x02\x00\x01\x00\x00\x00\x03\x00\x00\x80"
    # lowest clear bits at 1 and 2: 2 ** (1.5 - log2(0.77351))
    assert sketch.estimate() == int(2 ** (1.5 - math.log(0.77351) / math.log(2)))
    with pytest.raises(FmFormatError, match="announces 3"):
        FMSketch.from_bytes(b"FM\x03\x00" + bytes(8))
    with pytest.raises(FmFormatError, match="magic"):
        FMSketch.from_bytes(b"FX\x01\x00" + bytes(4))
    with pytest.raises(ValueError, match="cannot be merged"):
        FMSketch(2).merge(FMSketch(3))


def test_format_detection_follows_hive() -> None:
    hll = HyperLogLog(10).to_bytes()
    fm = FMSketch(4).to_bytes()
    assert sketch_format(hll) == "hll" and sketch_format(fm) == "fm"
    assert sketch_format(b"XYZ") is None and sketch_format(None) is None
    assert NdvSketch.from_bytes(hll).format == "hll"
    assert NdvSketch.from_bytes(fm).format == "fm"
    for bad in (b"", b"H", b"XYZW", b"HLL", b"HLL\x30\x01\x00", b"FM\x05\x00"):
        with pytest.raises(NdvFormatError):
            NdvSketch.from_bytes(bad)


def _hll_of(values: np.ndarray, p: int = 14) -> bytes:
    s = NdvSketch(p=p)
    s.add_longs(values)
    return s.to_bytes()


def test_merge_all() -> None:
    a, b = _hll_of(np.arange(0, 6000)), _hll_of(np.arange(3000, 9000), p=10)
    estimate = merge_all([a, b])
    assert estimate is not None and abs(estimate - 9000) / 9000 < 0.1
    merged = merge_sketches([a, b])
    assert merged is not None and merged.sketch.p == 10
    assert merge_all([a]) == NdvSketch.from_bytes(a).estimate()
    assert merge_all([]) is None
    assert merge_all([a, FMSketch(4).to_bytes()]) is None  # HLL and FM never merge
    assert merge_all([FMSketch(4).to_bytes(), FMSketch(8).to_bytes()]) is None
    assert merge_all([a, b"garbage"]) is None
    assert NdvSketch.from_bytes(a).merged(NdvSketch.from_bytes(b)).estimate() == estimate


def test_typed_hashing_inputs() -> None:
    assert hashes_for(StatsKind.LONG, [1, -2]).tolist() == [hash64_long(1), hash64_long(-2)]
    assert hashes_for(StatsKind.LONG, np.array([7], dtype=np.int16)).tolist() == [hash64_long(7)]

    def double_bits(v: float) -> int:
        return struct.unpack(">q", struct.pack(">d", v))[0]

    doubles = [1.5, -0.0, 0.0, float("inf")]
    assert hashes_for(StatsKind.DOUBLE, doubles).tolist() == [hash64_long(double_bits(v)) for v in doubles]
    odd_nan = np.array([0x7FF0000000000123], dtype=np.int64).view(np.float64)
    assert hashes_for(StatsKind.DOUBLE, odd_nan).tolist() == [hash64_long(0x7FF8000000000000)]
    # floats widen to double first
    assert hashes_for(StatsKind.DOUBLE, np.array([0.1], dtype=np.float32)).tolist() == [
        hash64_long(double_bits(float(np.float32(0.1))))
    ]
    assert hashes_for(StatsKind.DECIMAL, [Decimal("12.50"), "0.1"]).tolist() == [
        hash64_long(double_bits(12.5)),
        hash64_long(double_bits(0.1)),
    ]
    assert hashes_for(StatsKind.STRING, ["héllo"]).tolist() == [hash64("héllo".encode())]
    assert hashes_for(StatsKind.BINARY, [b"\x00\xff"]).tolist() == [hash64(b"\x00\xff")]
    assert hashes_for(StatsKind.BOOLEAN, [True, False]).tolist() == [hash64(b"\x01"), hash64(b"\x00")]
    day = dt.date(2024, 1, 1)
    days = (day - dt.date(1970, 1, 1)).days
    expected = [hash64_long(days)]
    assert hashes_for(StatsKind.DATE, [day]).tolist() == expected
    assert hashes_for(StatsKind.DATE, [days]).tolist() == expected
    assert hashes_for(StatsKind.DATE, np.array(["2024-01-01"], dtype="datetime64[D]")).tolist() == expected
    # timestamps: whole epoch seconds, floored
    ts = [dt.datetime(1969, 12, 31, 23, 59, 59, 500000), dt.datetime(2024, 1, 1, 0, 0, 1, 999999)]
    secs = [-1, 1704067201]
    assert hashes_for(StatsKind.TIMESTAMP, ts).tolist() == [hash64_long(s) for s in secs]
    as64 = np.array(["1969-12-31T23:59:59.5", "2024-01-01T00:00:01.999999"], dtype="datetime64[us]")
    assert hashes_for(StatsKind.TIMESTAMP, as64).tolist() == [hash64_long(s) for s in secs]
    assert hashes_for(StatsKind.TIMESTAMP, secs).tolist() == [hash64_long(s) for s in secs]


def test_typed_adds_estimate_distinct_counts() -> None:
    cases = {
        "add_longs": np.arange(5000) % 1000,
        "add_doubles": (np.arange(5000) % 1000) / 8.0,
        "add_strings": [f"s{i % 1000}" for i in range(5000)],
        "add_binaries": [f"b{i % 1000}".encode() for i in range(5000)],
        "add_decimals": [Decimal(i % 1000) / 100 for i in range(5000)],
        "add_dates": np.arange(5000) % 1000,
        "add_timestamps": np.arange(5000) % 1000,
    }
    for method, values in cases.items():
        s = NdvSketch()
        getattr(s, method)(values)
        assert s.estimate() == 1000, method  # sparse mode counts small sets exactly
    b = NdvSketch()
    b.add_booleans([True, False, True])
    assert b.estimate() == 2
    v = NdvSketch()
    v.add_values(StatsKind.STRING, ["a", "b", "a"])
    assert v.estimate() == 2
    with pytest.raises(TypeError):
        NdvSketch(FMSketch(2)).add_longs([1])
