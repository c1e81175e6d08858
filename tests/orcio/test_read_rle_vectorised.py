"""The vectorised run-header scan (metastore.orcio._run_headers) against the scalar reference decoders.

Normally only streams of many short runs take the vectorised path; here the thresholds are lowered so that
every stream does (after its first run), and long streams of short runs check the real thresholds and the
window logic (windows that end inside a run, runs after the values needed that are malformed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore.orcio import OrcError
from metastore.orcio import _rle as rle
from metastore.orcio import _run_headers as run_headers

from .test_rle_decode import (
    M64,
    WIDTHS,
    byte_run,
    closest_fixed,
    code_of,
    pack_bits,
    ref_byte_rle,
    ref_int_v2,
    run_length_byte,
    run_length_v2,
    v2_run,
    varint_bytes,
    zigzag,
)

# the fixtures only set module constants, the same for every example
SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def numpy_decoders(monkeypatch):
    """This module checks the numpy decoders' vectorised scan: the compiled RLE v2 loop (which otherwise decodes
    first, metastore/orcio/_decode_native.c; tests/orcio/test_decode_native.py compares the two) is set aside."""
    monkeypatch.setattr(rle, "compiled", lambda: None)


@pytest.fixture
def always_vectorised(monkeypatch):
    monkeypatch.setattr(rle, "PROBE_RUNS", 1)
    monkeypatch.setattr(rle, "SHORT_RUN_BYTES", 1 << 40)


@pytest.fixture
def tiny_windows(monkeypatch):
    monkeypatch.setattr(rle, "PROBE_RUNS", 1)
    monkeypatch.setattr(rle, "SHORT_RUN_BYTES", 1 << 40)
    monkeypatch.setattr(rle, "MAX_WINDOW", 7)


@SETTINGS
@given(runs=st.lists(v2_run(), min_size=1, max_size=16), signed=st.booleans(), data=st.data())
def test_v2_vectorised_matches_reference(always_vectorised, runs: list[bytes], signed: bool, data) -> None:
    stream = b"".join(runs)
    total = sum(run_length_v2(r) for r in runs)
    want = ref_int_v2(stream, total, signed)
    got, end = rle.decode_int_rle_v2(stream, total, signed)
    assert got.tolist() == want
    assert end == len(stream)
    k = data.draw(st.integers(0, total))
    assert rle.decode_int_rle_v2(stream, k, signed)[0].tolist() == want[:k]
    skip = data.draw(st.integers(0, len(runs) - 1))
    offset = sum(len(r) for r in runs[:skip])
    first_value = sum(run_length_v2(r) for r in runs[:skip])
    assert rle.decode_int_rle_v2(stream, total - first_value, signed, offset)[0].tolist() == want[first_value:]


@SETTINGS
@given(runs=st.lists(v2_run(), min_size=1, max_size=10), signed=st.booleans())
def test_v2_tiny_windows_match_reference(tiny_windows, runs: list[bytes], signed: bool) -> None:
    stream = b"".join(runs)
    total = sum(run_length_v2(r) for r in runs)
    got, end = rle.decode_int_rle_v2(stream, total, signed)
    assert got.tolist() == ref_int_v2(stream, total, signed)
    assert end == len(stream)


@SETTINGS
@given(runs=st.lists(v2_run(), min_size=1, max_size=8), signed=st.booleans(), data=st.data())
def test_v2_vectorised_truncated_streams_raise(always_vectorised, runs: list[bytes], signed: bool, data) -> None:
    stream = b"".join(runs)
    total = sum(run_length_v2(r) for r in runs)
    cut = data.draw(st.integers(0, len(stream) - 1))
    with pytest.raises(OrcError):
        rle.decode_int_rle_v2(stream[:cut], total, signed)


@SETTINGS
@given(runs=st.lists(v2_run(), min_size=2, max_size=8), signed=st.booleans(), junk=st.binary(min_size=1, max_size=40))
def test_v2_garbage_after_the_values_needed_is_not_read(always_vectorised, runs: list[bytes], signed: bool,
                                                       junk: bytes) -> None:
    stream = b"".join(runs)
    total = sum(run_length_v2(r) for r in runs)
    got, end = rle.decode_int_rle_v2(stream + junk, total, signed)
    assert got.tolist() == ref_int_v2(stream, total, signed)
    assert end == len(stream)


@SETTINGS
@given(runs=st.lists(byte_run(), min_size=1, max_size=30), data=st.data())
def test_byte_rle_vectorised_matches_reference(always_vectorised, runs: list[bytes], data) -> None:
    stream = b"".join(runs)
    total = sum(run_length_byte(r) for r in runs)
    got, end = rle.decode_byte_rle(stream, total)
    assert got.tolist() == ref_byte_rle(stream, total) and end == len(stream)
    k = data.draw(st.integers(0, total))
    assert rle.decode_byte_rle(stream, k)[0].tolist() == ref_byte_rle(stream, k)
    with pytest.raises(OrcError):
        rle.decode_byte_rle(stream[:-1], total)
    junk = data.draw(st.binary(min_size=1, max_size=20))
    assert rle.decode_byte_rle(stream + junk, total)[0].tolist() == ref_byte_rle(stream, total)


@SETTINGS
@given(runs=st.lists(byte_run(), min_size=1, max_size=20))
def test_byte_rle_tiny_windows_match_reference(tiny_windows, runs: list[bytes]) -> None:
    stream = b"".join(runs)
    total = sum(run_length_byte(r) for r in runs)
    got, end = rle.decode_byte_rle(stream, total)
    assert got.tolist() == ref_byte_rle(stream, total) and end == len(stream)


def _short_runs_v2(rng: np.random.Generator, runs: int) -> tuple[bytes, list[int], list[tuple[int, int]]]:
    """A stream of many short runs of every kind (what a noisy decimal scale stream looks like), its values and
    (byte offset, value index) of every run."""
    out = bytearray()
    values: list[int] = []
    starts: list[tuple[int, int]] = []
    for kind in rng.integers(0, 4, runs).tolist():
        starts.append((len(out), len(values)))
        if kind == 0:
            n = int(rng.integers(3, 11))
            v = int(rng.integers(-60, 60))
            out += bytes([n - 3, zigzag(v)])
            values += [v] * n
        elif kind == 1:
            n = int(rng.integers(1, 12))
            vs = rng.integers(-8, 8, n).tolist()
            out += bytes([0x40 | (3 << 1), n - 1]) + pack_bits([zigzag(v) for v in vs], 4)
            values += vs
        elif kind == 2:
            n = int(rng.integers(1, 6))
            base = int(rng.integers(-(10**6), 10**6))
            delta = int(rng.integers(-5, 6))
            out += bytes([0xC0, n - 1]) + varint_bytes(zigzag(base)) + varint_bytes(zigzag(delta))
            values += [base + i * delta for i in range(n)]
        else:
            n = int(rng.integers(3, 9))
            base = int(rng.integers(0, 1000))
            mags = rng.integers(0, 16, n - 2).tolist()
            out += (bytes([0xC0 | (3 << 1), n - 1]) + varint_bytes(zigzag(base)) + varint_bytes(zigzag(2))
                    + pack_bits(mags, 4))
            seq = [base, base + 2]
            for m in mags:
                seq.append(seq[-1] + m)
            values += seq
    return bytes(out), values, starts


def test_long_stream_of_short_runs_takes_the_vectorised_path(monkeypatch) -> None:
    stream, values, starts = _short_runs_v2(np.random.default_rng(7), 20000)
    calls = []
    real = run_headers.v2_window
    monkeypatch.setattr(run_headers, "v2_window", lambda *a: calls.append(a[1:3]) or real(*a))
    got, end = rle.decode_int_rle_v2(stream, len(values), True)
    assert calls, "the vectorised scan was not used"
    assert got.tolist() == values and end == len(stream)
    # only part of the values, and from a run in the middle (as a row-group read starts)
    assert rle.decode_int_rle_v2(stream, 1000, True)[0].tolist() == values[:1000]
    offset, first = starts[len(starts) // 2]
    got, _ = rle.decode_int_rle_v2(stream, 30000, True, offset)
    assert got.tolist() == values[first : first + 30000]
    # a truncated stream still fails with the scalar scanner's message
    with pytest.raises(OrcError, match="truncated|ended after"):
        rle.decode_int_rle_v2(stream[: len(stream) - 3], len(values), True)


def test_long_present_stream_of_short_runs(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    bits = rng.random(400_000) > 0.03
    raw = np.packbits(bits).tobytes()
    # byte RLE as ORC writers make it: repeats of 3+ equal bytes, literals of up to 128 otherwise
    out = bytearray()
    i = 0
    while i < len(raw):
        j = i
        while j < len(raw) and raw[j] == raw[i] and j - i < 130:
            j += 1
        if j - i >= 3:
            out += bytes([j - i - 3, raw[i]])
            i = j
            continue
        k = i
        while k < len(raw) and k - i < 128 and not (k + 2 < len(raw) and raw[k] == raw[k + 1] == raw[k + 2]):
            k += 1
        out += bytes([256 - (k - i)]) + raw[i:k]
        i = k
    stream = bytes(out)
    calls = []
    real = run_headers.byte_rle_window
    monkeypatch.setattr(run_headers, "byte_rle_window", lambda *a: calls.append(a[1:3]) or real(*a))
    got, end = rle.decode_boolean_rle(stream, len(bits))
    assert calls, "the vectorised scan was not used"
    assert np.array_equal(got, bits) and end == len(stream)
    with pytest.raises(OrcError, match="byte RLE"):
        rle.decode_byte_rle(stream[: len(stream) // 2], len(raw))


def test_follow_walks_the_chain() -> None:
    # 0 -> 3 -> 4 -> 9 (end); node 9 is the window end, 10 the bad node
    nxt = np.asarray([3, 2, 9, 4, 9, 9, 10, 9, 9, 9, 10], dtype=np.int32)
    heads, last = run_headers.follow(nxt, 9)
    assert heads.tolist() == [0, 3, 4] and last == 9
    nxt[4] = 10
    heads, last = run_headers.follow(nxt, 9)
    assert heads.tolist() == [0, 3, 4] and last == 10


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17, 24, 26, 28, 30, 32, 40, 48, 56, 64])
def test_unpack_contiguous_matches_bit_by_bit(width: int) -> None:
    rng = np.random.default_rng(width)
    for total in (1, 7, 8, 9, 100, 1001):
        values = [int(v) for v in rng.integers(0, 1 << min(width, 63), total, dtype=np.uint64)]
        if width == 64:
            values[0] = (1 << 64) - 1
        packed = pack_bits(values, width)
        assert rle.unpack_contiguous(packed, total, width).tolist() == values


def test_many_full_direct_runs_decode_as_one_bit_string() -> None:
    rng = np.random.default_rng(11)
    stream = bytearray()
    values: list[int] = []
    for _ in range(150):
        run = [int(v) for v in rng.integers(0, 1 << 13, 512)]
        stream += bytes([0x40 | (12 << 1) | 1, 0xFF]) + pack_bits(run, 13)  # width 13, 512 values
        values += run
    # a short repeat between them breaks the joined bit string; decoding stays right either way
    got, end = rle.decode_int_rle_v2(bytes(stream), len(values), False)
    assert got.tolist() == values and end == len(stream)
    mixed = bytes(stream[: 2 + 832]) + bytes([0x02, 0x05]) + bytes(stream[2 + 832 :])
    got, _ = rle.decode_int_rle_v2(mixed, len(values) + 5, False)
    assert got.tolist() == values[:512] + [5] * 5 + values[512:]


# ------------------------------------------------------------------------------------ streams of tiny runs
# What ORC Java writes for a decimal column's SECONDARY (scale) stream: tens of thousands of runs of 1-4 values,
# mostly short repeats and direct runs of one value, decoded by the windows' fast path (runs of one value read
# straight from their headers, the stream rebuilt with one np.repeat) or, where other runs are mixed in, by the
# general path. Both against the pure-Python reference decoder and against this module's scalar scan.

KINDS = ("short", "direct", "patched", "delta")


def _tiny_runs_v2(rng: np.random.Generator, runs: int, weights: list[float]) -> tuple[bytes, int]:
    """``runs`` random RLE v2 runs of the four kinds in proportions ``weights``, mostly holding few values;
    returns the stream and the number of values it holds."""
    out = bytearray()
    total = 0
    p = np.asarray(weights, dtype=float) / sum(weights)
    for kind in rng.choice(4, size=runs, p=p).tolist():
        start = len(out)
        if kind == 0:
            width = int(rng.choice([1, 1, 1, 2, 3, 8]))
            n = int(rng.integers(3, 11))
            value = int(rng.integers(0, 1 << min(8 * width, 63))) | (int(rng.integers(0, 2)) << (8 * width - 1))
            out += bytes([((width - 1) << 3) | (n - 3)]) + value.to_bytes(width, "big")
        elif kind == 1:
            n = 1 if rng.random() < 0.6 else int(rng.integers(2, 9))
            width = int(rng.choice(WIDTHS))
            values = [int(v) & ((1 << width) - 1) for v in rng.integers(0, 1 << 63, n, dtype=np.uint64)]
            if width == 64 and rng.random() < 0.5:
                values[0] = M64
            out += bytes([0x40 | (code_of(width) << 1) | ((n - 1) >> 8), (n - 1) & 0xFF]) + pack_bits(values, width)
        elif kind == 2:
            n = int(rng.integers(1, 20))
            width = int(rng.choice([1, 2, 3, 5, 8, 13, 24]))
            bw = int(rng.integers(1, 9))
            pgw = int(rng.integers(1, 9))
            pw = int(rng.choice([w for w in WIDTHS if w + pgw <= 64]))
            base = int(rng.integers(0, 1 << min(8 * bw, 63)))
            values = [int(v) for v in rng.integers(0, 1 << width, n)]
            entries = []
            index = 0
            for _ in range(int(rng.integers(0, 4))):
                gap = int(rng.integers(0, min(255, (1 << pgw) - 1) + 1))
                if index + gap >= n:
                    break
                index += gap
                entries.append((gap << pw) | int(rng.integers(1 if gap == 255 else 0, 1 << min(pw, 62))))
            header = bytes([0x80 | (code_of(width) << 1) | ((n - 1) >> 8), (n - 1) & 0xFF,
                            ((bw - 1) << 5) | code_of(pw), ((pgw - 1) << 5) | len(entries)])
            out += (header + base.to_bytes(bw, "big") + pack_bits(values, width)
                    + pack_bits(entries, closest_fixed(pw + pgw)))
        else:
            n = int(rng.integers(1, 13))
            code = int(rng.choice([0, 0, 1, 3, 7, 15]))
            width = 0 if code == 0 else WIDTHS[code]
            base = int(rng.integers(0, 1 << 63)) >> int(rng.integers(0, 63))
            delta = int(rng.integers(-1000, 1000))
            body = varint_bytes(base) + varint_bytes(zigzag(delta))
            if width:
                body += pack_bits([int(v) for v in rng.integers(0, 1 << width, max(n - 2, 0))], width)
            out += bytes([0xC0 | (code << 1) | ((n - 1) >> 8), (n - 1) & 0xFF]) + body
        total += run_length_v2(bytes(out[start:]))
    return bytes(out), total


def _scalar_only(stream: bytes, count: int, signed: bool, offset: int = 0) -> list[int]:
    saved = rle.SHORT_RUN_BYTES
    rle.SHORT_RUN_BYTES = 0  # every run scanned one by one
    try:
        return rle.decode_int_rle_v2(stream, count, signed, offset)[0].tolist()
    finally:
        rle.SHORT_RUN_BYTES = saved


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), runs=st.integers(100, 1500), signed=st.booleans(),
       weights=st.sampled_from([[1, 1, 0, 0], [4, 4, 1, 1], [1, 1, 1, 1], [0, 1, 0, 0], [1, 0, 0, 0],
                                [5, 5, 0, 1], [5, 5, 1, 0]]),
       data=st.data())
def test_tiny_runs_of_every_kind_match_the_reference(seed: int, runs: int, signed: bool, weights: list[float],
                                                     data) -> None:
    rng = np.random.default_rng(seed)
    stream, total = _tiny_runs_v2(rng, runs, weights)
    want = ref_int_v2(stream, total, signed)
    got, end = rle.decode_int_rle_v2(stream, total, signed)
    assert got.tolist() == want
    assert end == len(stream)
    assert _scalar_only(stream, total, signed) == want
    # fewer values than the stream holds, a small window, and a start at a run in the middle
    k = data.draw(st.integers(1, total))
    assert rle.decode_int_rle_v2(stream, k, signed)[0].tolist() == want[:k]
    saved = rle.MAX_WINDOW
    rle.MAX_WINDOW = data.draw(st.integers(7, 300))
    try:
        assert rle.decode_int_rle_v2(stream, total, signed)[0].tolist() == want
    finally:
        rle.MAX_WINDOW = saved


def test_a_scale_stream_of_tiny_runs_is_rebuilt_by_repeating_values(monkeypatch) -> None:
    # ORC Java's scales of trimmed decimals: a short repeat of a few values, a direct run of one, and so on
    rng = np.random.default_rng(5)
    stream = bytearray()
    values: list[int] = []
    boundaries: list[tuple[int, int]] = []  # (byte offset, value index) after each pair of runs
    for _ in range(30000):
        n = int(rng.integers(3, 7))
        scale = int(rng.integers(0, 7))
        stream += bytes([n - 3, zigzag(scale)])
        values += [scale] * n
        other = int(rng.integers(0, 7))
        width = 4 if zigzag(other) >= 4 else 2  # the width ORC Java picks for one value
        stream += bytes([0x40 | (code_of(width) << 1), 0]) + pack_bits([zigzag(other)], width)
        values.append(other)
        boundaries.append((len(stream), len(values)))
    calls = []
    real = run_headers.v2_window
    monkeypatch.setattr(run_headers, "v2_window", lambda *a: calls.append(a[1:3]) or real(*a))

    def no_table(*args):
        raise AssertionError("runs of one value each are decoded without the runs table")

    with monkeypatch.context() as m:
        m.setattr(rle, "_assemble", no_table)
        got, end = rle.decode_int_rle_v2(bytes(stream), len(values), True)
    assert calls, "the vectorised scan was not used"
    assert got.tolist() == values and end == len(stream)
    # a delta run in the middle sends its window through the full header scan; the values stay right
    pos, k = boundaries[len(boundaries) // 2]
    delta_run = (bytes([0xC0 | (code_of(4) << 1), 4]) + varint_bytes(zigzag(100)) + varint_bytes(zigzag(-3))
                 + pack_bits([1, 2, 3], 4))
    mixed = bytes(stream[:pos]) + delta_run + bytes(stream[pos:])
    want = values[:k] + [100, 97, 96, 94, 91] + values[k:]
    assert rle.decode_int_rle_v2(mixed, len(want), True)[0].tolist() == want
