"""The compiled Murmur3 loops (metastore/orcio/_murmur3_native.c) against their numpy references: hash64_packed
and hash64_array_long give the same int64 hashes (and the same errors) with and without them, and a process where
the extension cannot be imported falls back to numpy with one warning.

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

from metastore.orcio import _murmur3
from metastore.orcio._murmur3 import hash64, hash64_array_long, hash64_long
from metastore.orcio._murmur3_packed import hash64_packed

REPO = Path(__file__).resolve().parents[2]

_compiled = _murmur3._native
needs_native = built_or_skip(_compiled, "metastore.orcio._murmur3_native", _murmur3._missing)


def _packed(values: list[bytes], lead: bytes = b"") -> tuple[bytes, np.ndarray]:
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64) + len(lead)
    return lead + b"".join(values), offsets


@needs_native
def test_packed_every_length_and_tail() -> None:
    """Values of every length 0..40 (every tail length 0..7, up to five blocks), random bytes, empty strings among
    them: the compiled hashes are the numpy hashes and the scalar hash64's."""
    rng = np.random.default_rng(41)
    values = [rng.integers(0, 256, size=n, dtype=np.uint8).tobytes() for n in range(41) for _ in range(5)]
    values += [b""] * 7
    order = rng.permutation(len(values))
    values = [values[i] for i in order]
    buffer, offsets = _packed(values)
    got = hash64_packed(buffer, offsets)
    assert got.dtype == np.int64
    assert np.array_equal(got, hash64_packed(buffer, offsets, native=False))
    assert got.tolist() == [hash64(v) for v in values]
    for seed in (0, 1, -1, 1 << 63, 12345):
        assert np.array_equal(hash64_packed(buffer, offsets, seed), hash64_packed(buffer, offsets, seed, native=False))


@needs_native
def test_packed_non_ascii_offsets_not_at_zero_and_buffer_kinds() -> None:
    """Non-ASCII text, offsets starting past a prefix (which is not hashed), values ending before the buffer's
    end; bytes, bytearray, memoryview and uint8/other-dtype numpy buffers hash alike."""
    values = [s.encode() for s in ("héllo", "日本語テキスト", "", "ñ" * 17, "emoji 😀😀😀", "x")]
    buffer, offsets = _packed(values, lead=b"\xff" * 13)
    buffer += b"trailing bytes not hashed"
    expected = [hash64(v) for v in values]
    assert hash64_packed(buffer, offsets, native=False).tolist() == expected
    padded = buffer + b"\0" * (-len(buffer) % 8)
    for kind in (buffer, bytearray(buffer), memoryview(buffer), np.frombuffer(buffer, dtype=np.uint8),
                 np.frombuffer(padded, dtype=np.int64)):
        assert hash64_packed(kind, offsets).tolist() == expected
    assert hash64_packed(buffer, offsets.astype(np.int32)).tolist() == expected


@needs_native
def test_packed_large_buffer() -> None:
    """A few hundred thousand values of random lengths 0..60 in a multi-megabyte buffer (more than one numpy
    block): the same hashes both ways."""
    rng = np.random.default_rng(42)
    n = 300_000
    lengths = rng.integers(0, 61, size=n)
    offsets = np.concatenate([[5], 5 + np.cumsum(lengths)]).astype(np.int64)
    buffer = rng.integers(0, 256, size=int(offsets[-1]) + 9, dtype=np.uint8).tobytes()
    assert np.array_equal(hash64_packed(buffer, offsets), hash64_packed(buffer, offsets, native=False))


@needs_native
@pytest.mark.parametrize("offsets, message", [
    ([0, 3, 11], "offsets reach byte 11 of a 10-byte buffer"),
    ([-1, 3, 5], "offsets reach byte 5 of a 10-byte buffer"),
    ([0, 6, 4], "offsets must not decrease"),
    ([2, 30, 8], "offsets must not decrease"),
])
def test_packed_bad_offsets_raise_the_same_error(offsets: list[int], message: str) -> None:
    for native in (True, False):
        with pytest.raises(ValueError, match=f"^{message}$"):
            hash64_packed(b"0123456789", np.array(offsets, dtype=np.int64), native=native)


@needs_native
def test_packed_no_values() -> None:
    for offsets in ([], [0], [7]):
        for native in (True, False):
            got = hash64_packed(b"abc", np.array(offsets, dtype=np.int64), native=native)
            assert got.dtype == np.int64 and got.size == 0


@needs_native
def test_longs_extremes_and_random() -> None:
    """int64 extremes, small values and random ones (and other integer dtypes, taken as int64): the compiled
    hashes are the numpy hashes and the scalar hash64_long's."""
    rng = np.random.default_rng(43)
    edge = np.array([0, 1, -1, 2, -2, 255, 256, (1 << 31) - 1, -(1 << 31), (1 << 63) - 1, -(1 << 63)], dtype=np.int64)
    values = np.concatenate([edge, rng.integers(-(1 << 63), (1 << 63) - 1, size=200_003, dtype=np.int64)])
    got = hash64_array_long(values)
    assert got.dtype == np.int64
    assert np.array_equal(got, hash64_array_long(values, native=False))
    assert got[: edge.size].tolist() == [hash64_long(int(v)) for v in edge]
    assert hash64_array_long(values[::3]).tolist() == hash64_array_long(values[::3], native=False).tolist()
    small = np.array([[-5, 7], [1 << 20, 0]], dtype=np.int32)
    assert hash64_array_long(small).tolist() == [hash64_long(v) for v in (-5, 7, 1 << 20, 0)]
    assert hash64_array_long([]).size == 0 and hash64_array_long([], native=False).size == 0
    before = values.copy()
    hash64_array_long(values)
    assert np.array_equal(values, before)  # the input is not touched


_FALLBACK = textwrap.dedent("""
    import sys, warnings
    import numpy as np
    if sys.argv[1] == "numpy":
        sys.modules["metastore.orcio._murmur3_native"] = None  # import fails: the extension is "not built"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from metastore.orcio import _murmur3, hash64_array_long, hash64_packed
        buffer = "".join(f"value {i} é" * (i % 5) for i in range(3000)).encode()
        offsets = np.linspace(0, len(buffer), 3001).astype(np.int64)
        a = hash64_packed(buffer, offsets)
        b = hash64_array_long(np.arange(-1500, 1500, dtype=np.int64) * 7919)
        c = hash64_packed(buffer, offsets[:10])
    print(sum("is not built" in str(w.message) for w in caught), _murmur3._native is not None)
    print(",".join(map(str, np.concatenate([a, b, c]).tolist())))
""")


def test_without_the_extension_numpy_hashes_the_same() -> None:
    """A process where the extension cannot be imported hashes with numpy, warns once for the whole process, and
    gives the compiled loops' hashes."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    runs = {}
    for mode in ("numpy", "native"):
        done = subprocess.run([sys.executable, "-c", _FALLBACK, mode], capture_output=True, text=True, env=env,
                              timeout=120, check=True)
        runs[mode] = done.stdout.strip().splitlines()
    assert runs["numpy"][0] == "1 False"
    if _compiled is None:
        pytest.skip("metastore.orcio._murmur3_native not built: only the fallback was checked")
    assert runs["native"][0] == "0 True"
    assert runs["native"][1] == runs["numpy"][1]
