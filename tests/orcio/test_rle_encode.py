"""RLE encoders: spec examples byte for byte, ORC Java's own encoders as the oracle, round trips."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metastore.orcio._rle_encode import (
    bit_lengths,
    encode_bool_rle,
    encode_byte_rle,
    encode_int_rle_v1,
    encode_int_rle_v2,
    encode_varints,
    zigzag64,
)
from orcio.java_oracle import ask_java, compiled_oracle

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


# ----------------------------------------------------------------------------------------------------------
# a tiny scalar reference decoder (independent of the reader's), used for round trips


def _wrap(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _unzigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return result

    def bits(self, count: int, width: int) -> list[int]:
        nbytes = (count * width + 7) // 8
        chunk = int.from_bytes(self.data[self.pos : self.pos + nbytes], "big")
        self.pos += nbytes
        total = nbytes * 8
        return [(chunk >> (total - (i + 1) * width)) & ((1 << width) - 1) for i in range(count)]


_WIDTHS = list(range(1, 25)) + [26, 28, 30, 32, 40, 48, 56, 64]


def decode_v2(data: bytes, signed: bool, kinds: list[str] | None = None) -> list[int]:
    src = _Bytes(data)
    out: list[int] = []
    names = ["SHORT_REPEAT", "DIRECT", "PATCHED_BASE", "DELTA"]
    fix = _unzigzag if signed else (lambda v: v)
    while src.pos < len(data):
        first = src.byte()
        kind = first >> 6
        if kinds is not None:
            kinds.append(names[kind])
        if kind == 0:
            width = ((first >> 3) & 7) + 1
            count = (first & 7) + 3
            value = fix(int.from_bytes(src.data[src.pos : src.pos + width], "big"))
            src.pos += width
            out += [_wrap(value)] * count
            continue
        second = src.byte()
        width = _WIDTHS[(first >> 1) & 31]
        count = ((first & 1) << 8 | second) + 1
        if kind == 1:
            out += [_wrap(fix(v)) for v in src.bits(count, width)]
        elif kind == 2:
            third, fourth = src.byte(), src.byte()
            base_bytes = (third >> 5) + 1
            patch_width = _WIDTHS[third & 31]
            gap_width = (fourth >> 5) + 1
            patch_count = fourth & 31
            raw = int.from_bytes(src.data[src.pos : src.pos + base_bytes], "big")
            src.pos += base_bytes
            sign = 1 << (base_bytes * 8 - 1)
            base = -(raw & ~sign) if raw & sign else raw
            values = src.bits(count, width)
            entry_width = next(w for w in _WIDTHS if w >= patch_width + gap_width)
            entries = src.bits(patch_count, entry_width)
            at = 0
            for entry in entries:
                gap, patch = entry >> patch_width, entry & ((1 << patch_width) - 1)
                at += gap
                if patch:
                    values[at] |= patch << width
            out += [_wrap(base + v) for v in values]
        else:
            width = 0 if (first >> 1) & 31 == 0 else width
            start = fix(src.varint())
            delta = _unzigzag(src.varint())
            values = [start, start + delta]
            if width == 0:
                for _ in range(count - 2):
                    values.append(values[-1] + delta)
            else:
                for magnitude in src.bits(count - 2, width):
                    values.append(values[-1] + (magnitude if delta >= 0 else -magnitude))
            out += [_wrap(v) for v in values[:count]]
    return out


def decode_v1(data: bytes, signed: bool) -> list[int]:
    src = _Bytes(data)
    out: list[int] = []
    fix = _unzigzag if signed else (lambda v: v)
    while src.pos < len(data):
        control = src.byte()
        if control < 128:
            delta = src.byte()
            delta = delta - 256 if delta > 127 else delta
            base = fix(src.varint())
            out += [_wrap(base + i * delta) for i in range(control + 3)]
        else:
            out += [_wrap(fix(src.varint())) for _ in range(256 - control)]
    return out


def decode_byte_rle(data: bytes) -> list[int]:
    src = _Bytes(data)
    out: list[int] = []
    while src.pos < len(data):
        control = src.byte()
        if control < 128:
            out += [src.byte()] * (control + 3)
        else:
            out += [src.byte() for _ in range(256 - control)]
    return out


# ----------------------------------------------------------------------------------------------------------
# spec examples (orc-format specification/ORCv1.md)


def test_spec_examples_byte_for_byte() -> None:
    assert encode_int_rle_v2([10000] * 5, False).data.hex() == "0a2710"
    assert encode_int_rle_v2([23713, 43806, 57005, 48879], False).data.hex() == "5e035ca1ab1edeadbeef"
    assert encode_int_rle_v2([2, 3, 5, 7, 11, 13, 17, 19, 23, 29], False).data.hex() == "c609020222424246"
    patched = [2030, 2000, 2020, 1000000, 2040, 2050, 2060, 2070, 2080, 2090]
    patched += [2100, 2110, 2120, 2130, 2140, 2150, 2160, 2170, 2180, 2190]
    assert encode_int_rle_v2(patched, False).data.hex() == (
        "8e132b2107d01e00147028323c46505a646e78828c96a0aab4befce8"
    )
    assert encode_byte_rle([0] * 100).data.hex() == "6100"
    assert encode_byte_rle([0x44, 0x45]).data.hex() == "fe4445"
    assert encode_bool_rle([True] + [False] * 7).data.hex() == "ff80"
    assert encode_int_rle_v1([7] * 100, False).data.hex() == "610007"
    assert encode_int_rle_v1(list(range(100, 0, -1)), False).data.hex() == "61ff64"
    assert encode_int_rle_v1([2, 3, 6, 7, 11], False).data.hex() == "fb020306070b"


def test_varints_and_zigzag() -> None:
    data, lengths = encode_varints(np.array([0, 1, 127, 128, 300, (1 << 64) - 1], dtype=np.uint64))
    assert data.tobytes().hex() == "00017f8001ac02" + "ff" * 9 + "01"
    assert lengths.tolist() == [1, 1, 1, 2, 2, 10]
    assert zigzag64(np.array([0, -1, 1, -2, INT64_MAX, INT64_MIN])).tolist() == [
        0, 1, 2, 3, (1 << 64) - 2, (1 << 64) - 1,
    ]
    values = np.array([0, 1, 2, 3, 255, 256, (1 << 53) + 1, (1 << 63), (1 << 64) - 1], dtype=np.uint64)
    assert bit_lengths(values).tolist() == [int(v).bit_length() for v in values.tolist()]


# ----------------------------------------------------------------------------------------------------------
# which sub-encoding Java picks


def _kinds(data: bytes) -> list[str]:
    kinds: list[str] = []
    decode_v2(data, False, kinds)
    return kinds


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([7] * 3, ["SHORT_REPEAT"]),
        ([7] * 10, ["SHORT_REPEAT"]),
        ([7] * 11, ["DELTA"]),  # longer repeats are a DELTA with delta 0
        ([1, 2], ["DIRECT"]),  # 3 values or fewer are always DIRECT
        ([5, 1, 9], ["DIRECT"]),
        (list(range(0, 1000, 7))[:100], ["DELTA"]),  # arithmetic progression
        ([1, 3, 4, 8, 20, 21, 40], ["DELTA"]),  # monotone
        ([9, 3, 7, 1, 5, 2, 8], ["DIRECT"]),
        ([1, 5, 7, 7, 7, 9], ["DIRECT", "SHORT_REPEAT", "DIRECT"]),  # repeats split out of a variable run
        (list(range(600)), ["DELTA", "DELTA"]),  # runs hold at most 512 values
        ([5] * 600, ["DELTA", "DELTA"]),
    ],
)
def test_encoding_choice(values: list[int], expected: list[str]) -> None:
    data = encode_int_rle_v2(values, False).data
    assert _kinds(data) == expected
    assert decode_v2(data, False) == values


def test_patched_base_chosen_for_outliers() -> None:
    rng = random.Random(5)
    values = [rng.randrange(100) for _ in range(200)]
    values[17] = 1 << 40
    values[150] = 1 << 41
    data = encode_int_rle_v2(values, True).data
    assert data[0] >> 6 == 2
    assert decode_v2(data, True) == values


def test_delta_with_one_bit_deltas_uses_two_bits() -> None:
    values = [0, 1, 2, 4, 5, 6, 7, 8, 10, 11]  # deltas 1,1,2,... -> 2 bits; then 1-bit case below
    data = encode_int_rle_v2(values, False).data
    assert decode_v2(data, False) == values
    ones = [0, 1, 1, 2, 3, 3, 4, 5, 5, 6]  # deltas of 0 and 1 need 1 bit, written as 2
    data = encode_int_rle_v2(ones, False).data
    assert data[0] >> 6 == 3 and ((data[0] >> 1) & 31) == 1  # width code 1 = 2 bits
    assert decode_v2(data, False) == ones


def test_overflowing_range_falls_back_to_direct() -> None:
    values = [INT64_MIN, INT64_MAX, 0, 5, INT64_MIN]
    data = encode_int_rle_v2(values, True).data
    assert data[0] >> 6 == 1 and ((data[0] >> 1) & 31) == 31
    assert decode_v2(data, True) == values


# ----------------------------------------------------------------------------------------------------------
# ORC Java's encoders as the oracle


def _random_case(rng: random.Random, signed: bool, byte_values: bool = False) -> list[int]:
    """Values mixing the shapes that steer run splitting: repeats, progressions, noise, outliers, extremes."""
    out: list[int] = []
    target = rng.choice([1, 2, 3, 5, 20, 100, 600, 1500, 3000])
    while len(out) < target:
        shape = rng.randrange(9)
        n = rng.choice([1, 2, 3, 4, 9, 10, 11, 12, 50, 127, 128, 129, 130, 131, 300, 511, 512, 513])
        if byte_values:
            if shape < 4:
                out += [rng.randrange(256)] * n
            else:
                out += [rng.choice([0, 1, 2, 255, rng.randrange(256)]) for _ in range(n)]
            continue
        lo = INT64_MIN if signed else 0
        if shape == 0:
            out += [rng.randrange(lo, INT64_MAX)] * n
        elif shape == 1:
            start, step = rng.randrange(-(10**6) if signed else 0, 10**6), rng.choice([1, -1, 3, 127, -128, 129, 0])
            out += [start + i * step for i in range(n)]
        elif shape == 2:
            out += [rng.randrange(lo if rng.random() < 0.2 else 0, rng.choice([2, 16, 1000, 1 << 20, 1 << 40])) for _ in range(n)]
        elif shape == 3:  # small values with a few big outliers (PATCHED_BASE)
            vals = [rng.randrange(0, 1 << rng.choice([3, 7, 12])) for _ in range(n)]
            for _ in range(max(1, n // 40)):
                vals[rng.randrange(n)] = rng.randrange(1 << rng.choice([20, 33, 50, 55, 62]))
            if signed and rng.random() < 0.5:
                shift = rng.choice([-(1 << 55), -1000, -(1 << 20), 1 << 54])
                vals = [v + shift for v in vals]
            out += vals
        elif shape == 4:  # outlier at the very end or start of a 512 block (patch gaps > 255)
            vals = [rng.randrange(0, 64) for _ in range(512)]
            vals[rng.choice([0, 255, 256, 257, 510, 511])] = 1 << 45
            out += vals
        elif shape == 5:
            out += [rng.choice([INT64_MIN, INT64_MAX, 0, -1, 1]) if signed else rng.choice([0, INT64_MAX, 1]) for _ in range(n)]
        elif shape == 6:  # monotone with varying steps
            cur = rng.randrange(-1000, 1000) if signed else rng.randrange(1000)
            for _ in range(n):
                out.append(cur)
                cur += rng.choice([0, 1, 1, 2, 1000, 1 << 30]) * (-1 if signed and rng.random() < 0.1 else 1)
        elif shape == 7:  # pairs of equal values (no triple)
            for _ in range(n):
                v = rng.randrange(lo // 2, 1 << 30)
                out += [v, v]
        else:  # runs of length 3 alternating
            for _ in range(n):
                out += [rng.randrange(0, 5)] * rng.choice([1, 2, 3, 4])
    out = out[:target] if rng.random() < 0.5 else out
    clamp = (lambda v: max(INT64_MIN, min(INT64_MAX, v))) if signed else (lambda v: max(0, min(INT64_MAX, v)))
    return [clamp(v) for v in out]


def _random_marks(rng: random.Random, n: int) -> list[int]:
    if n == 0:
        return [0]
    marks = sorted(set([0] + [rng.randrange(n + 1) for _ in range(rng.randrange(12))]))
    return marks


requires_java = pytest.mark.skipif(compiled_oracle() is None, reason="needs javac and pyspark's orc-core jar")


def _ours(kind: str, values: list[int], signed: bool, aligned: bool, marks: list[int]):
    if kind == "v2":
        return encode_int_rle_v2(values, signed, marks, aligned=aligned)
    if kind == "v1":
        return encode_int_rle_v1(values, signed, marks)
    if kind == "byte":
        return encode_byte_rle(np.array(values, dtype=np.int64).astype(np.uint8), marks)
    return encode_bool_rle(np.array(values, dtype=bool), marks)


@requires_java
def test_bytes_and_positions_equal_orc_java() -> None:
    rng = random.Random(20240611)
    cases = []
    for i in range(1600):
        kind = ["v2", "v2", "v2", "v1", "byte", "bool"][i % 6]
        signed = rng.random() < 0.6
        aligned = rng.random() < 0.8
        if kind == "bool":
            n = rng.choice([0, 1, 7, 8, 9, 100, 1000, 5000])
            p = rng.choice([0.0, 0.01, 0.5, 0.99, 1.0])
            values = [1 if rng.random() < p else 0 for _ in range(n)]
        else:
            values = _random_case(rng, signed, byte_values=kind == "byte")
            if kind == "byte":
                values = [v & 0xFF for v in values]
        marks = _random_marks(rng, len(values))
        cases.append((kind, signed, aligned, marks, values))
    requests = []
    for kind, signed, aligned, marks, values in cases:
        java_values = [v - 256 if kind == "byte" and v > 127 else v for v in values]
        requests.append(
            f"RLE {kind} {int(signed)} {int(aligned)} {','.join(map(str, marks)) or '-'} "
            f"{','.join(map(str, java_values)) or '-'}"
        )
    answers = ask_java(requests)
    for (kind, signed, aligned, marks, values), answer in zip(cases, answers, strict=True):
        hex_bytes, positions = answer.split(" ")
        ours = _ours(kind, values, signed, aligned, marks)
        expected = "" if hex_bytes == "-" else hex_bytes
        assert ours.data.hex() == expected, (kind, signed, aligned, values[:50])
        java_positions = [[int(x) for x in p.split(",")] for p in positions.split(";")]
        assert ours.positions.tolist() == java_positions, (kind, signed, marks)


# ----------------------------------------------------------------------------------------------------------
# round trips (hypothesis)

int64s = st.integers(min_value=INT64_MIN, max_value=INT64_MAX)
small = st.integers(min_value=-3, max_value=3)
values_strategy = st.one_of(
    st.lists(int64s, max_size=700),
    st.lists(small, max_size=1200),
    st.lists(st.tuples(st.integers(-(1 << 40), 1 << 40), st.integers(1, 40)), max_size=60).map(
        lambda runs: [v for v, n in runs for _ in range(n)]
    ),
)


@settings(max_examples=120, deadline=None)
@given(values_strategy, st.booleans())
def test_v2_round_trip(values: list[int], aligned: bool) -> None:
    assert decode_v2(encode_int_rle_v2(values, True, aligned=aligned).data, True) == values
    unsigned = [v & INT64_MAX for v in values]
    assert decode_v2(encode_int_rle_v2(unsigned, False, aligned=aligned).data, False) == unsigned


@settings(max_examples=80, deadline=None)
@given(values_strategy)
def test_v1_round_trip(values: list[int]) -> None:
    assert decode_v1(encode_int_rle_v1(values, True).data, True) == values


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 255), max_size=1000) | st.lists(st.sampled_from([0, 1, 255]), max_size=1000))
def test_byte_rle_round_trip(values: list[int]) -> None:
    assert decode_byte_rle(encode_byte_rle(np.array(values, dtype=np.uint8)).data) == values


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), max_size=3000))
def test_bool_rle_round_trip(values: list[bool]) -> None:
    raw = decode_byte_rle(encode_bool_rle(np.array(values, dtype=bool)).data)
    bits = np.unpackbits(np.array(raw, dtype=np.uint8)).astype(bool).tolist()
    assert bits[: len(values)] == values


# ----------------------------------------------------------------------------------------------------------
# round trips through the reader's decoders (metastore.orcio._rle)


@settings(max_examples=100, deadline=None)
@given(values_strategy, st.booleans(), st.booleans())
def test_reader_decodes_what_we_encode(values: list[int], aligned: bool, signed: bool) -> None:
    from metastore.orcio import _rle as rle

    if not signed:
        values = [v & INT64_MAX for v in values]
    data = encode_int_rle_v2(values, signed, aligned=aligned).data
    decoded, end = rle.decode_int_rle_v2(data, len(values), signed)
    assert decoded.astype(np.int64).tolist() == values and end == len(data)
    data = encode_int_rle_v1(values, signed).data
    decoded, end = rle.decode_int_rle_v1(data, len(values), signed)
    assert decoded.astype(np.int64).tolist() == values and end == len(data)
    small = [v & 0xFF for v in values]
    data = encode_byte_rle(np.array(small, dtype=np.uint8)).data
    decoded, end = rle.decode_byte_rle(data, len(small))
    assert decoded.astype(np.uint8).tolist() == small and end == len(data)
    bits = [bool(v & 1) for v in values]
    data = encode_bool_rle(np.array(bits, dtype=bool)).data
    decoded, end = rle.decode_boolean_rle(data, len(bits))
    assert decoded.astype(bool).tolist() == bits and end == len(data)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 1 << 20), min_size=1, max_size=3000), st.data())
def test_reader_seeks_to_our_positions(values: list[int], data) -> None:
    """Decoding from a recorded position (byte offset, values to skip) yields the values from that mark on."""
    from metastore.orcio import _rle as rle

    marks = sorted(set(data.draw(st.lists(st.integers(0, len(values) - 1), max_size=6))))
    encoded = encode_int_rle_v2(values, False, marks)
    for mark, (offset, skip) in zip(marks, encoded.positions.tolist(), strict=True):
        decoded, _ = rle.decode_int_rle_v2(encoded.data, skip + len(values) - mark, False, pos=offset)
        assert decoded[skip:].tolist() == values[mark:]
