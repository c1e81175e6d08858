"""RLE decoders against the spec's examples and against a scalar, obviously-correct reference decoder written
here (bit by bit, value by value) over streams built from random run descriptions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore.orcio import OrcError
from metastore.orcio import _rle as rle
from metastore.orcio import _rle_widths as rle_widths

M64 = (1 << 64) - 1
WIDTHS = list(range(1, 25)) + [26, 28, 30, 32, 40, 48, 56, 64]


def signed64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def zigzag(v: int) -> int:
    return ((v << 1) ^ (v >> 63)) & M64


def unzigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


def closest_fixed(n: int) -> int:
    for w in WIDTHS:
        if n <= w:
            return w
    raise AssertionError(n)


# ------------------------------------------------------------------------------------ scalar reference decoders


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]  # IndexError at the end: the reference's "truncated"
        self.pos += 1
        return b

    def varint(self) -> int:
        result, shift = 0, 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return result & M64

    def bits(self, count: int, width: int) -> list[int]:
        """``count`` big-endian fields of ``width`` bits, starting at a byte boundary, then skip the padding."""
        out = []
        bitpos = 0
        for _ in range(count):
            v = 0
            for _ in range(width):
                byte = self.data[self.pos + (bitpos >> 3)]
                v = (v << 1) | ((byte >> (7 - (bitpos & 7))) & 1)
                bitpos += 1
            out.append(v)
        self.pos += (bitpos + 7) >> 3
        return out


def ref_byte_rle(data: bytes, count: int) -> list[int]:
    r = Reader(data)
    out: list[int] = []
    while len(out) < count:
        c = r.byte()
        if c < 128:
            out += [r.byte()] * (c + 3)
        else:
            out += [r.byte() for _ in range(256 - c)]
    return out[:count]


def ref_bool_rle(data: bytes, count: int) -> list[bool]:
    raw = ref_byte_rle(data, (count + 7) // 8)
    return [bool((raw[i // 8] >> (7 - i % 8)) & 1) for i in range(count)]


def ref_int_v1(data: bytes, count: int, signed: bool) -> list[int]:
    r = Reader(data)
    out: list[int] = []
    while len(out) < count:
        c = r.byte()
        if c < 128:
            delta = r.byte()
            delta = delta - 256 if delta > 127 else delta
            base = r.varint()
            base = unzigzag(base) if signed else base
            out += [signed64(base + i * delta) for i in range(c + 3)]
        else:
            for _ in range(256 - c):
                v = r.varint()
                out.append(signed64(unzigzag(v) if signed else v))
    return out[:count]


def ref_next_patch(entries: list[int], entry: int, pw: int, start: int) -> tuple[int, int | None]:
    """ORC Java's patch walk: the next patch's entry and the value index it lands on (``start`` + fillers + gap).
    The decoder visits each index once, so a patch landing on ``start`` again is never applied (nor any later)."""
    acc = 0
    while entry < len(entries):
        gap, patch = entries[entry] >> pw, entries[entry] & ((1 << pw) - 1)
        if gap == 255 and patch == 0:
            acc += 255
            entry += 1
            continue
        return entry, start + acc + gap
    return entry, None


def ref_int_v2(data: bytes, count: int, signed: bool) -> list[int]:
    r = Reader(data)
    out: list[int] = []
    while len(out) < count:
        first = r.byte()
        kind = first >> 6
        if kind == 0:
            width = ((first >> 3) & 7) + 1
            n = (first & 7) + 3
            v = int.from_bytes(bytes(r.byte() for _ in range(width)), "big")
            out += [signed64(unzigzag(v) if signed else v)] * n
            continue
        n = ((first & 1) << 8 | r.byte()) + 1
        code = (first >> 1) & 31
        if kind == 1:
            for v in r.bits(n, WIDTHS[code]):
                out.append(signed64(unzigzag(v) if signed else v))
        elif kind == 2:
            width = WIDTHS[code]
            third, fourth = r.byte(), r.byte()
            bw = (third >> 5) + 1
            pw = WIDTHS[third & 31]
            pgw = (fourth >> 5) + 1
            pll = fourth & 31
            base = int.from_bytes(bytes(r.byte() for _ in range(bw)), "big")
            if base >> (bw * 8 - 1):
                base = -(base & ((1 << (bw * 8 - 1)) - 1))
            values = r.bits(n, width)
            entries = r.bits(pll, closest_fixed(pw + pgw))
            # ORC Java's loop: walk the values, patching the one the running gap points at; a patch that
            # does not point past the previous one is never reached, and neither is anything after it
            entry, target = ref_next_patch(entries, 0, pw, 0)
            for i in range(n):
                if target is not None and i == target:
                    values[i] |= (entries[entry] & ((1 << pw) - 1)) << width
                    entry, target = ref_next_patch(entries, entry + 1, pw, i)
            out += [signed64(base + v) for v in values]
        else:
            code_w = 0 if code == 0 else WIDTHS[code]
            base = r.varint()
            base = unzigzag(base) if signed else base
            delta = unzigzag(r.varint())
            vals = [base]
            if n > 1:
                vals.append(base + delta)
            if code_w == 0:
                vals = [base + i * delta for i in range(n)]
            else:
                for m in r.bits(max(n - 2, 0), code_w):
                    vals.append(vals[-1] + (m if delta >= 0 else -m))
            out += [signed64(v) for v in vals[:n]]
    return out[:count]


# ------------------------------------------------------------------------------------ stream builders


def varint_bytes(v: int) -> bytes:
    v &= M64
    out = bytearray()
    while True:
        if v < 0x80:
            out.append(v)
            return bytes(out)
        out.append((v & 0x7F) | 0x80)
        v >>= 7


def pack_bits(values: list[int], width: int) -> bytes:
    bits = "".join(format(v, f"0{width}b") for v in values)
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))


def code_of(width: int) -> int:
    return WIDTHS.index(width)


def fields(draw, n: int, width: int) -> list[int]:
    """``n`` values of ``width`` bits: drawn as one byte string (one Hypothesis choice instead of ``n``, which made
    drawing most of these tests' time), then a few of them set to 0 or to all ones, the edges the per-value draws
    used to favour."""
    size = (width + 7) // 8
    mask = (1 << width) - 1
    blob = draw(st.binary(min_size=n * size, max_size=n * size))
    values = [int.from_bytes(blob[i * size : (i + 1) * size], "big") & mask for i in range(n)]
    for _ in range(draw(st.integers(0, min(n, 3)))):
        values[draw(st.integers(0, n - 1))] = draw(st.sampled_from([0, mask]))
    return values


@st.composite
def v2_run(draw) -> bytes:
    kind = draw(st.sampled_from(["short", "direct", "patched", "delta"]))
    if kind == "short":
        width = draw(st.integers(1, 8))
        n = draw(st.integers(3, 10))
        value = draw(st.integers(0, (1 << (8 * width)) - 1))
        return bytes([((width - 1) << 3) | (n - 3)]) + value.to_bytes(width, "big")
    n = draw(st.integers(1, 80) | st.just(512))
    if kind == "direct":
        width = draw(st.sampled_from(WIDTHS))
        values = fields(draw, n, width)
        header = bytes([0x40 | (code_of(width) << 1) | ((n - 1) >> 8), (n - 1) & 0xFF])
        return header + pack_bits(values, width)
    if kind == "patched":
        width = draw(st.sampled_from(WIDTHS))
        bw = draw(st.integers(1, 8))
        pgw = draw(st.integers(1, 8))
        pw = draw(st.sampled_from([w for w in WIDTHS if w + pgw <= 64]))
        base = draw(st.integers(0, (1 << (8 * bw)) - 1))
        values = fields(draw, n, width)
        entries = []
        index = 0
        for _ in range(draw(st.integers(0, 31))):
            gap = draw(st.integers(0, min(255, (1 << pgw) - 1)))
            if index + gap >= n:
                break
            index += gap
            entries.append((gap << pw) | draw(st.integers(1 if gap == 255 else 0, (1 << pw) - 1)))
        header = bytes([
            0x80 | (code_of(width) << 1) | ((n - 1) >> 8), (n - 1) & 0xFF,
            ((bw - 1) << 5) | code_of(pw), ((pgw - 1) << 5) | len(entries),
        ])
        return (header + base.to_bytes(bw, "big") + pack_bits(values, width)
                + pack_bits(entries, closest_fixed(pw + pgw)))
    code = draw(st.integers(0, 31))
    width = 0 if code == 0 else WIDTHS[code]
    base = draw(st.integers(0, M64))
    delta = draw(st.integers(-(1 << 63), (1 << 63) - 1))
    header = bytes([0xC0 | (code << 1) | ((n - 1) >> 8), (n - 1) & 0xFF])
    body = varint_bytes(base) + varint_bytes(zigzag(delta))
    if width:
        body += pack_bits(fields(draw, max(n - 2, 0), width), width)
    return header + body


@st.composite
def v1_run(draw) -> bytes:
    if draw(st.booleans()):
        n = draw(st.integers(3, 130))
        delta = draw(st.integers(-128, 127))
        base = draw(st.integers(0, M64))
        return bytes([n - 3, delta & 0xFF]) + varint_bytes(base)
    values = draw(st.lists(st.integers(0, M64), min_size=1, max_size=128))
    return bytes([256 - len(values)]) + b"".join(varint_bytes(v) for v in values)


@st.composite
def byte_run(draw) -> bytes:
    if draw(st.booleans()):
        return bytes([draw(st.integers(0, 127)), draw(st.integers(0, 255))])
    values = draw(st.lists(st.integers(0, 255), min_size=1, max_size=128))
    return bytes([256 - len(values)]) + bytes(values)


def run_length_v2(run: bytes) -> int:
    first = run[0]
    return (first & 7) + 3 if first >> 6 == 0 else ((first & 1) << 8 | run[1]) + 1


def run_length_v1(run: bytes) -> int:
    return run[0] + 3 if run[0] < 128 else 256 - run[0]


def run_length_byte(run: bytes) -> int:
    return run[0] + 3 if run[0] < 128 else 256 - run[0]


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------ properties


@SETTINGS
@given(runs=st.lists(v2_run(), min_size=1, max_size=12), signed=st.booleans(), data=st.data())
def test_rle_v2_matches_reference(runs: list[bytes], signed: bool, data) -> None:
    stream = b"".join(runs)
    total = sum(run_length_v2(r) for r in runs)
    want = ref_int_v2(stream, total, signed)
    got, end = rle.decode_int_rle_v2(stream, total, signed)
    assert got.tolist() == want
    assert end == len(stream)
    # a prefix of the values, and decoding from the start of a later run
    k = data.draw(st.integers(0, total))
    assert rle.decode_int_rle_v2(stream, k, signed)[0].tolist() == want[:k]
    skip = data.draw(st.integers(0, len(runs) - 1))
    offset = sum(len(r) for r in runs[:skip])
    first_value = sum(run_length_v2(r) for r in runs[:skip])
    assert rle.decode_int_rle_v2(stream, total - first_value, signed, offset)[0].tolist() == want[first_value:]


@SETTINGS
@given(runs=st.lists(v2_run(), min_size=1, max_size=6), signed=st.booleans(), data=st.data())
def test_rle_v2_truncated_streams_raise(runs: list[bytes], signed: bool, data) -> None:
    stream = b"".join(runs)
    total = sum(run_length_v2(r) for r in runs)
    cut = data.draw(st.integers(0, len(stream) - 1))
    with pytest.raises(OrcError):
        rle.decode_int_rle_v2(stream[:cut], total, signed)


@SETTINGS
@given(runs=st.lists(v1_run(), min_size=1, max_size=12), signed=st.booleans())
def test_rle_v1_matches_reference(runs: list[bytes], signed: bool) -> None:
    stream = b"".join(runs)
    total = sum(run_length_v1(r) for r in runs)
    want = ref_int_v1(stream, total, signed)
    got, end = rle.decode_int_rle_v1(stream, total, signed)
    assert got.tolist() == want
    assert end == len(stream)
    with pytest.raises(OrcError):
        rle.decode_int_rle_v1(stream[:-1], total, signed)


@SETTINGS
@given(runs=st.lists(byte_run(), min_size=1, max_size=20), data=st.data())
def test_byte_and_boolean_rle_match_reference(runs: list[bytes], data) -> None:
    stream = b"".join(runs)
    total = sum(run_length_byte(r) for r in runs)
    got, end = rle.decode_byte_rle(stream, total)
    assert got.tolist() == ref_byte_rle(stream, total) and end == len(stream)
    bits = data.draw(st.integers(0, total * 8))
    assert rle.decode_boolean_rle(stream, bits)[0].tolist() == ref_bool_rle(stream, bits)
    with pytest.raises(OrcError):
        rle.decode_byte_rle(stream[:-1], total)


@SETTINGS
@given(values=st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=200),
       big=st.lists(st.integers(-(10**38), 10**38), max_size=50))
def test_varints(values: list[int], big: list[int]) -> None:
    stream = b"".join(varint_bytes(zigzag(v)) for v in values)
    got, end = rle.decode_varints(stream, len(values), True)
    assert got.tolist() == values and end == len(stream)
    unsigned = b"".join(varint_bytes(v & M64) for v in values)
    assert rle.decode_varints(unsigned, len(values), False)[0].tolist() == values
    # unbounded zigzag varints (decimal DATA)
    blob = bytearray()
    for v in big:
        z = (v << 1) if v >= 0 else ((-v) << 1) - 1
        while True:
            if z < 0x80:
                blob.append(z)
                break
            blob.append((z & 0x7F) | 0x80)
            z >>= 7
    assert rle.decode_big_varints(bytes(blob), len(big))[0] == big
    if values:
        with pytest.raises(OrcError):
            rle.decode_varints(stream[:-1], len(values), True)


# ------------------------------------------------------------------------------------ spec examples (§4)


@pytest.mark.parametrize(
    ("hex_stream", "signed", "expected"),
    [
        ("0a2710", False, [10000] * 5),
        ("5e035ca1ab1edeadbeef", False, [23713, 43806, 57005, 48879]),
        ("8e132b2107d01e00147028323c46505a646e78828c96a0aab4befce8", False,
         [2030, 2000, 2020, 1000000, 2040, 2050, 2060, 2070, 2080, 2090, 2100, 2110, 2120, 2130, 2140, 2150, 2160,
          2170, 2180, 2190]),
        ("c609020222424246", False, [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]),
    ],
)
def test_rle_v2_spec_examples(hex_stream: str, signed: bool, expected: list[int]) -> None:
    data = bytes.fromhex(hex_stream)
    assert rle.decode_int_rle_v2(data, len(expected), signed)[0].tolist() == expected
    assert ref_int_v2(data, len(expected), signed) == expected


@pytest.mark.parametrize(
    ("hex_stream", "expected"),
    [("610007", [7] * 100), ("61ff64", list(range(100, 0, -1))), ("fb020306070b", [2, 3, 6, 7, 11])],
)
def test_rle_v1_spec_examples(hex_stream: str, expected: list[int]) -> None:
    data = bytes.fromhex(hex_stream)
    assert rle.decode_int_rle_v1(data, len(expected), False)[0].tolist() == expected
    assert ref_int_v1(data, len(expected), False) == expected


def test_byte_and_boolean_spec_examples() -> None:
    assert rle.decode_byte_rle(bytes.fromhex("6100"), 100)[0].tolist() == [0] * 100
    assert rle.decode_byte_rle(bytes.fromhex("fe4445"), 2)[0].tolist() == [0x44, 0x45]
    assert rle.decode_boolean_rle(bytes.fromhex("ff80"), 8)[0].tolist() == [True] + [False] * 7


def test_64_bit_edges() -> None:
    # zigzag of INT64_MIN needs all 64 bits (width code 31); unsigned values >= 2**63 keep their bits
    low = -(1 << 63)
    stream = bytes([0x40 | (31 << 1), 1]) + pack_bits([zigzag(low), zigzag((1 << 63) - 1)], 64)
    assert rle.decode_int_rle_v2(stream, 2, True)[0].tolist() == [low, (1 << 63) - 1]
    assert rle.decode_int_rle_v2(stream, 2, False)[0].view(np.uint64).tolist() == [M64, M64 - 1]
    # a delta run that wraps around 2**64 like a Java long
    run = bytes([0xC0, 2]) + varint_bytes(zigzag((1 << 63) - 1)) + varint_bytes(zigzag(1))
    assert rle.decode_int_rle_v2(run, 3, True)[0].tolist() == [(1 << 63) - 1, low, low + 1]
    # every width code decodes, deprecated ones included
    for width in WIDTHS:
        values = [(1 << width) - 1, 0, 1 << (width - 1)]
        direct = bytes([0x40 | (code_of(width) << 1), 2]) + pack_bits(values, width)
        assert rle.decode_int_rle_v2(direct, 3, False)[0].view(np.uint64).tolist() == values


def test_width_table_matches_the_spec() -> None:
    # rle_widths is the one table the decoders and the encoder share; checked against the spec's list above
    assert list(rle_widths.WIDTH_FROM_CODE) == WIDTHS
    assert rle_widths.WIDTHS.tolist() == WIDTHS
    assert [rle_widths.closest_fixed_bits(n) for n in range(1, 65)] == [closest_fixed(n) for n in range(1, 65)]
    assert rle_widths.closest_fixed_bits(0) == 1
    assert rle_widths.CLOSEST_FIXED.tolist() == [1] + [closest_fixed(min(n, 64)) for n in range(1, 129)]
    assert [WIDTHS[c] for c in rle_widths.WIDTH_CODE.tolist()] == [closest_fixed(max(n, 1)) for n in range(65)]
    aligned = [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    assert rle_widths.CLOSEST_ALIGNED.tolist() == [next(w for w in aligned if n <= w) for n in range(65)]
    with pytest.raises(OrcError, match="bit width 65 is more than 64"):
        rle_widths.closest_fixed_bits(65)


def test_errors_name_the_problem() -> None:
    with pytest.raises(OrcError, match="ended after 5 of 6 values"):
        rle.decode_int_rle_v2(bytes.fromhex("0a2710"), 6, False)
    with pytest.raises(OrcError, match="longer than 10 bytes"):
        rle.decode_int_rle_v1(bytes([0]) + bytes([0]) + b"\xff" * 11 + b"\x01", 3, False)
    bad_patch = bytes([0x80, 0, 0x1F, 0xE1]) + b"\x01"  # patch width 64 + gap width 8
    with pytest.raises(OrcError, match="> 64"):
        rle.decode_int_rle_v2(bad_patch + bytes(20), 1, False)
