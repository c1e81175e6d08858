"""The compiled integer decoding loops (metastore/orcio/_decode_native.c) against their numpy references in
metastore.orcio._rle: RLE v2 runs of every kind and varints give the same values and end offsets, streams the
compiled loop gives up on (truncated, malformed, over-long varints, patches that do not move forward) are decoded
or refused by the numpy code exactly as before, random bytes never make the two disagree, and a process where the
extension cannot be imported falls back to numpy with one warning.

`pip install -e .` builds the extension; a checkout used without it skips the comparisons here, except under CI,
where an unbuilt extension fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from compiled_ext import built_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metastore.orcio import OrcError
from metastore.orcio import _rle as rle
from metastore.orcio._rle_encode import encode_int_rle_v2

from .test_rle_decode import M64, ref_int_v2, run_length_v2, v2_run, varint_bytes, zigzag

REPO = Path(__file__).resolve().parents[2]

needs_native = built_or_skip(rle._native, "metastore.orcio._decode_native", rle._missing)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _outcome(decode, *args):
    """(values, end) of a decoder, or the OrcError message it raised."""
    try:
        values, end = decode(*args)
    except OrcError as exc:
        return ("error", str(exc))
    return (np.asarray(values).tolist(), end)


def _native_v2(stream: bytes, count: int, signed: bool, pos: int = 0) -> int | tuple[list[int], int]:
    out = np.full(max(count, 1), 12345, np.int64)
    end = rle._native.rle_v2(stream, pos, count, signed, out)
    return end if end < 0 else (out[:count].tolist(), end)


@needs_native
@SETTINGS
@given(runs=st.lists(v2_run(), min_size=1, max_size=12), signed=st.booleans(), data=st.data())
def test_rle_v2_compiled_matches_numpy(runs: list[bytes], signed: bool, data) -> None:
    """Every kind of run (short repeats, direct, patched base with gaps of 255, delta of every width) and values
    at the 64-bit edges: the compiled loop itself (not its fallback) gives the numpy decoder's values and end,
    for every count up to the total and from any run's start."""
    stream = b"".join(runs) + bytes(data.draw(st.integers(0, 3)))  # bytes after the runs stay unread
    total = sum(run_length_v2(r) for r in runs)
    want = ref_int_v2(b"".join(runs), total, signed)
    got = _native_v2(stream, total, signed)
    assert got == (want, len(b"".join(runs)))
    assert _outcome(rle._decode_int_rle_v2_numpy, stream, total, signed) == got
    k = data.draw(st.integers(1, total))
    assert _native_v2(stream, k, signed) == _outcome(rle._decode_int_rle_v2_numpy, stream, k, signed)
    skip = data.draw(st.integers(0, len(runs) - 1))
    offset = sum(len(r) for r in runs[:skip])
    rest = total - sum(run_length_v2(r) for r in runs[:skip])
    assert _native_v2(stream, rest, signed, offset) == _outcome(rle._decode_int_rle_v2_numpy, stream, rest, signed,
                                                                offset)


@needs_native
@SETTINGS
@given(runs=st.lists(v2_run(), min_size=1, max_size=6), signed=st.booleans(), data=st.data())
def test_rle_v2_cut_or_damaged_streams_decode_as_numpy_does(runs: list[bytes], signed: bool, data) -> None:
    """A stream cut anywhere, or with one byte changed: the public decoder (compiled first, numpy where it gives
    up) gives what the numpy decoder gives, values or the same error; the compiled loop never answers where the
    numpy decoder raises."""
    stream = bytearray(b"".join(runs))
    total = sum(run_length_v2(r) for r in runs)
    if data.draw(st.booleans()):
        stream = stream[: data.draw(st.integers(0, len(stream) - 1))]
    else:
        stream[data.draw(st.integers(0, len(stream) - 1))] = data.draw(st.integers(0, 255))
    count = data.draw(st.integers(1, total + 600))
    want = _outcome(rle._decode_int_rle_v2_numpy, bytes(stream), count, signed)
    assert _outcome(rle.decode_int_rle_v2, bytes(stream), count, signed) == want
    native = _native_v2(bytes(stream), count, signed)
    assert native == -1 or native == want


@needs_native
def test_rle_v2_random_bytes_never_disagree() -> None:
    """Random byte strings read as RLE v2 (most malformed somewhere): where the compiled loop answers, the numpy
    decoder answers the same; the public decoder always answers as the numpy decoder does."""
    rng = np.random.default_rng(20261127)
    answered = 0
    for _ in range(3000):
        stream = rng.integers(0, 256, int(rng.integers(1, 200)), dtype=np.uint8).tobytes()
        count = int(rng.integers(1, 80))
        signed = bool(rng.integers(0, 2))
        want = _outcome(rle._decode_int_rle_v2_numpy, stream, count, signed)
        native = _native_v2(stream, count, signed)
        if native != -1:
            answered += 1
            assert native == want
        assert _outcome(rle.decode_int_rle_v2, stream, count, signed) == want
    assert answered > 100  # the comparison is not vacuous


@needs_native
def test_rle_v2_encoder_streams() -> None:
    """The project's own RLE v2 encoder's streams (ids, sorted timestamps, small codes, wide and negative values,
    patched outliers): the compiled and numpy decoders agree value for value, signed and unsigned."""
    rng = np.random.default_rng(11)
    columns = [
        np.arange(200_000, dtype=np.int64) * 3 + 1_600_000_000,
        rng.integers(0, 50, 200_000),
        rng.integers(-(1 << 62), 1 << 62, 20_000),
        np.where(rng.random(100_000) < 0.01, rng.integers(0, 1 << 40, 100_000), rng.integers(0, 100, 100_000)),
        np.repeat(rng.integers(-1000, 1000, 3000), rng.integers(1, 20, 3000)),
    ]
    for values in columns:
        values = values.astype(np.int64)
        for signed in (True, False):
            if not signed:
                values = np.abs(values)
            stream = bytes(encode_int_rle_v2(values, signed).data)
            got, end = rle.decode_int_rle_v2(stream, len(values), signed)
            assert _native_v2(stream, len(values), signed) != -1
            assert np.array_equal(got, values)
            ref, ref_end = rle._decode_int_rle_v2_numpy(stream, len(values), signed)
            assert np.array_equal(got, ref) and end == ref_end == len(stream)


@needs_native
@SETTINGS
@given(values=st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=1, max_size=60),
       raw=st.lists(st.integers(0, M64), min_size=1, max_size=30), lead=st.binary(max_size=4))
def test_varints_compiled_matches_numpy(values: list[int], raw: list[int], lead: bytes) -> None:
    """Signed and unsigned varints up to 10 bytes, from an offset: same values and end with and without the
    compiled loop; decimal varints (9 bytes at most in the compiled loop) too."""
    signed_stream = lead + b"".join(varint_bytes(zigzag(v)) for v in values) + b"\x05"
    unsigned_stream = lead + b"".join(varint_bytes(v) for v in raw)
    for stream, count, signed in ((signed_stream, len(values), True), (unsigned_stream, len(raw), False)):
        got = _outcome(rle.decode_varints, stream, count, signed, len(lead))
        assert got == _outcome(rle._decode_varints_numpy, stream, count, signed, len(lead))
        out = np.empty(count, np.int64)
        assert rle._native.varints(stream, len(lead), count, signed, 10, out) == got[1]
        assert out.tolist() == got[0]
    assert _outcome(rle.decode_big_varints_array, signed_stream, len(values), len(lead)) == _outcome(
        rle._decode_big_varints_numpy, signed_stream, len(values), len(lead))


@needs_native
def test_varints_the_compiled_loop_leaves_to_numpy() -> None:
    """Over-long varints (11 bytes; a decimal of 10+ bytes), truncated streams and counts past the data: the
    compiled loop gives up (-1) and the public decoders answer or raise as the numpy code does."""
    eleven = b"\xff" * 10 + b"\x01"
    out = np.empty(2, np.int64)
    assert rle._native.varints(eleven, 0, 1, True, 10, out) == -1
    with pytest.raises(OrcError, match="longer than 10 bytes"):
        rle.decode_varints(eleven, 1, True)
    big = 2 * (1 << 100) - 1  # -(2**100) zigzagged: a 15-byte varint
    huge = bytes(((big >> (7 * i)) & 0x7F) | (0x80 if big >> (7 * (i + 1)) else 0) for i in range(15))
    assert rle._native.varints(huge, 0, 1, True, 9, out) == -1
    assert rle.decode_big_varints_array(huge + b"\x02", 2)[0].tolist() == [-(1 << 100), 1]
    assert rle.decode_big_varints(huge + b"\x02", 2)[0] == [-(1 << 100), 1]
    with pytest.raises(OrcError, match="holds 1 of the 2 values"):
        rle.decode_varints(b"\x81\x01\x80", 2, False)
    assert rle._native.varints(b"\x81\x01\x80", 0, 2, False, 10, out) == -1
    with pytest.raises(OrcError):
        rle.decode_big_varints_array(b"\x02", 5)


_FALLBACK = textwrap.dedent("""
    import sys, warnings
    import numpy as np
    if sys.argv[1] == "numpy":
        sys.modules["metastore.orcio._decode_native"] = None  # import fails: the extension is "not built"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from metastore.orcio import _rle as rle
        from metastore.orcio._rle_encode import encode_int_rle_v2
        values = (np.arange(50_000, dtype=np.int64) * 7919) % 100_003 - 50_000
        stream = bytes(encode_int_rle_v2(values, True).data)
        a, end = rle.decode_int_rle_v2(stream, len(values), True)
        b, _ = rle.decode_big_varints_array(bytes([2, 3, 200, 1]), 3)
        c, _ = rle.decode_varints(bytes([2, 3, 200, 1]), 3, False)
    print(sum("is not built" in str(w.message) for w in caught), rle._native is not None, end == len(stream))
    print(",".join(map(str, np.concatenate([a, b, c]).tolist())))
""")


def test_without_the_extension_numpy_decodes_the_same() -> None:
    """A process where the extension cannot be imported decodes with numpy, warns once for the whole process, and
    gives the compiled loops' values."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    runs = {}
    for mode in ("numpy", "native"):
        done = subprocess.run([sys.executable, "-c", _FALLBACK, mode], capture_output=True, text=True, env=env,
                              timeout=120, check=True)
        runs[mode] = done.stdout.strip().splitlines()
    assert runs["numpy"][0] == "1 False True"
    if rle._native is None:
        pytest.skip("metastore.orcio._decode_native not built: only the fallback was checked")
    assert runs["native"][0] == "0 True True"
    assert runs["native"][1] == runs["numpy"][1]
