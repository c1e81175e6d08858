"""Murmur3 hash64 against ORC's published vector and the real Java classes (Hive storage-api and ORC)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from metastore.orcio import (
    hash64,
    hash64_array_bytes,
    hash64_array_long,
    hash64_long,
    hash64_many,
)

# ORC's TestMurmur3 / TestMurmur3.cc paragraph and its hash.
ORC_TEXT = (
    "It was the best of times, it was the worst of times,"
    " it was the age of wisdom, it was the age of foolishness,"
    " it was the epoch of belief, it was the epoch of incredulity,"
    " it was the season of Light, it was the season of Darkness,"
    " it was the spring of hope, it was the winter of despair,"
    " we had everything before us, we had nothing before us,"
    " we were all going direct to Heaven,"
    " we were all going direct the other way."
)
ORC_HASH = 305830725663368540


def test_orc_test_vector() -> None:
    assert hash64(ORC_TEXT.encode("utf-8")) == ORC_HASH
    assert hash64_array_bytes([ORC_TEXT.encode("utf-8")]).tolist() == [ORC_HASH]


def test_results_are_signed_java_longs() -> None:
    values = [hash64(bytes([i])) for i in range(256)]
    assert all(-(2**63) <= v < 2**63 for v in values)
    assert any(v < 0 for v in values) and any(v > 0 for v in values)


def test_long_hash_is_hash_of_big_endian_bytes() -> None:
    for v in (0, 1, -1, 2**63 - 1, -(2**63), 123456789):
        assert hash64_long(v) == hash64(v.to_bytes(8, "big", signed=True))


def test_vectorised_bytes_match_scalar_for_every_length_mix() -> None:
    rng = random.Random(7)
    values = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 70))) for _ in range(2000)]
    values += [b"", b"", b"x" * 4096]
    got = hash64_array_bytes(values)
    assert got.dtype == np.int64
    assert got.tolist() == [hash64(v) for v in values]
    assert hash64_many(values).tolist() == got.tolist()
    assert hash64_array_bytes([]).tolist() == []


def test_vectorised_longs_match_scalar() -> None:
    rng = np.random.default_rng(3)
    arr = np.concatenate(
        [rng.integers(-(2**63), 2**63 - 1, 3000, dtype=np.int64), [0, -1, 2**63 - 1, -(2**63)]]
    )
    got = hash64_array_long(arr)
    assert got.dtype == np.int64
    assert got.tolist() == [hash64_long(int(v)) for v in arr]
    # more values than one hashing block, and a non-contiguous input
    many = rng.integers(-(2**63), 2**63 - 1, 150_001, dtype=np.int64)
    got_many = hash64_array_long(many[::-1])
    sample = rng.integers(0, many.size, 500)
    assert got_many[sample].tolist() == [hash64_long(int(v)) for v in many[::-1][sample]]
    assert got_many[-3:].tolist() == [hash64_long(int(v)) for v in many[2::-1]]
    assert hash64_array_long(many).tolist() == got_many[::-1].tolist()
    # Narrower integer arrays are widened to Java long first.
    assert hash64_array_long(np.array([5, -5], dtype=np.int8)).tolist() == [hash64_long(5), hash64_long(-5)]


def test_agrees_with_java_hive_and_orc(java_oracle) -> None:
    rng = random.Random(11)
    byte_inputs = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 40))) for _ in range(3000)]
    byte_inputs += [b"", ORC_TEXT.encode(), "héllo wörld ✓".encode()]
    long_inputs = [rng.randrange(-(2**63), 2**63) for _ in range(3000)] + [0, -1, 2**63 - 1, -(2**63)]
    text = "".join(f"B {b.hex()}\n" for b in byte_inputs) + "".join(f"L {v}\n" for v in long_inputs)
    lines = java_oracle("Murmur3Oracle", text)
    assert len(lines) == len(byte_inputs) + len(long_inputs)
    ours_bytes = hash64_array_bytes(byte_inputs).tolist()
    for line, data, vec in zip(lines[: len(byte_inputs)], byte_inputs, ours_bytes, strict=True):
        hive, orc = (int(x) for x in line.split())
        assert hive == orc == hash64(data) == vec, data.hex()
    ours_longs = hash64_array_long(np.array(long_inputs, dtype=np.int64)).tolist()
    for line, v, vec in zip(lines[len(byte_inputs) :], long_inputs, ours_longs, strict=True):
        assert int(line) == hash64_long(v) == vec, v


@pytest.mark.parametrize("seed", [0, 42])
def test_explicit_seed(seed: int) -> None:
    data = [b"abc", b"abcdefghij"]
    assert hash64_array_bytes(data, seed=seed).tolist() == [hash64(d, seed) for d in data]
