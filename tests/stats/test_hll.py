"""Hive-compatible HyperLogLog: golden bytes from Hive's classes, format facts, accuracy, merge properties."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metastore.orcio import hash64_array_bytes, hash64_array_long
from metastore.stats.hll import HllFormatError, HyperLogLog, merge_hlls

RESOURCES = Path(__file__).resolve().parent / "resources"


def _cases() -> list[tuple[str, list[str]]]:
    cases = []
    for line in (RESOURCES / "hll_cases.txt").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, *ops = line.split()
            cases.append((name, ops))
    return cases


def _golden() -> dict[str, tuple[int, str]]:
    out = {}
    for line in (RESOURCES / "hll_golden.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, estimate, encoded = line.split()
            out[name] = (int(estimate), encoded)
    return out


def _run_case(ops: list[str]) -> HyperLogLog:
    """The Python twin of HllGolden.java's little stack language."""
    stack: list[HyperLogLog] = []
    for token in ops:
        op = token.split(":")
        match op[0]:
            case "new":
                stack.append(HyperLogLog(int(op[1])))
            case "newnp":
                stack.append(HyperLogLog(int(op[1]), bit_packing=False))
            case "long":
                start, n, step = int(op[1]), int(op[2]), int(op[3])
                stack[-1].add_hashes(hash64_array_long(start + np.arange(n, dtype=np.int64) * step))
            case "str":
                start, n = int(op[2]), int(op[3])
                values = [f"{op[1]}{i}".encode() for i in range(start, start + n)]
                stack[-1].add_hashes(hash64_array_bytes(values))
            case "dbl":
                start, n, factor = int(op[1]), int(op[2]), float(op[3])
                doubles = (start + np.arange(n)).astype(np.float64) * factor
                stack[-1].add_hashes(hash64_array_long(doubles.view(np.int64)))
            case "merge":
                other = stack.pop()
                stack[-1].merge(other)
            case "squash":
                stack.append(stack.pop().squash(int(op[1])))
            case "ser":
                stack.append(HyperLogLog.from_bytes(stack.pop().to_bytes()))
            case _:
                raise AssertionError(f"unknown op {token}")
    return stack[-1]


def _encode(data: bytes) -> str:
    return data.hex() if len(data) <= 400 else f"sha256:{hashlib.sha256(data).hexdigest()}:{len(data)}"


GOLDEN = _golden()


@pytest.mark.parametrize(("name", "ops"), _cases(), ids=[c[0] for c in _cases()])
def test_hive_golden_vectors(name: str, ops: list[str]) -> None:
    sketch = _run_case(ops)
    estimate, encoded = GOLDEN[name]
    assert sketch.estimate() == estimate
    assert _encode(sketch.to_bytes()) == encoded
    # And the bytes read back to the same sketch.
    again = HyperLogLog.from_bytes(sketch.to_bytes())
    assert again.estimate() == estimate
    assert again.to_bytes() == sketch.to_bytes()


def test_every_case_has_a_golden_line() -> None:
    assert {name for name, _ in _cases()} == set(GOLDEN)


# ---------------------------------------------------------------------------------------------- format facts


def test_empty_sketch_bytes() -> None:
    # magic, p=10 sparse, estimate 1 (Hive never reports 0), zero entries
    assert HyperLogLog(10).to_bytes() == b"HLL\xa0\x01\x00"
    assert HyperLogLog(10).count() == 0
    assert HyperLogLog(10).estimate() == 1


def test_header_nibbles_and_dense_width() -> None:
    sketch = HyperLogLog(10)
    sketch.add_hashes(hash64_array_long(np.arange(5000)))
    data = sketch.to_bytes()
    assert data[:3] == b"HLL"
    assert data[3] >> 4 == 10
    width = data[3] & 7
    assert 1 <= width <= 6
    assert width == int(sketch.registers().max()).bit_length()
    # body = 2**10 registers at `width` bits after the header and the estimate varint
    estimate_len = len(_varint(sketch.estimate()))
    assert len(data) == 4 + estimate_len + (1024 * width) // 8


def test_unpacked_dense_is_encoding_7_one_byte_per_register() -> None:
    sketch = HyperLogLog(10, bit_packing=False)
    sketch.add_hashes(hash64_array_long(np.arange(20000)))
    data = sketch.to_bytes()
    assert data[3] == (10 << 4) | 7
    assert data[-1024:] == sketch.registers().tobytes()


def test_sparse_entries_are_delta_varints() -> None:
    sketch = HyperLogLog(14)
    sketch.add_hash(0x0000_0000_0123_4567)
    data = sketch.to_bytes()
    # key = low 25 bits, value = trailing zeros of (hash >>> 14) + 1
    key = 0x0123_4567 & ((1 << 25) - 1)
    rank = ((0x0123_4567 >> 14) & -(0x0123_4567 >> 14)).bit_length()
    assert data == b"HLL\xe0\x01\x01" + _varint((key << 6) | rank)


def test_a_sparse_list_with_a_repeated_key_keeps_its_largest_value() -> None:
    # Hive never writes a key twice; a list that does is read as adding each entry: the largest value, in the
    # order keys first appear
    entries = [(5 << 6) | 3, (9 << 6) | 2, (5 << 6) | 7]
    deltas = [entries[0], entries[1] - entries[0], (entries[2] - entries[1]) & 0xFFFFFFFF]
    data = b"HLL\xe0\x02" + _varint(3) + b"".join(_varint(d) for d in deltas)
    sketch = HyperLogLog.from_bytes(data)
    assert sketch._sparse == {5: 7, 9: 2} and list(sketch._sparse) == [5, 9]
    # distinct keys come back as they were written
    other = HyperLogLog(14)
    other.add_hashes(np.arange(1, 400, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    assert other.encoding == "sparse"
    again = HyperLogLog.from_bytes(other.to_bytes())
    assert list(again._sparse.items()) == other._sparse_items_java_order() and again.to_bytes() == other.to_bytes()


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        if value < 0x80:
            out.append(value)
            return bytes(out)
        out.append(0x80 | (value & 0x7F))
        value >>= 7


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "magic"),
        (b"HLX\xa0\x01\x00", "magic"),
        (b"FM\x01\x00\x00\x00\x00\x00", "magic"),
        (b"HLL\x30\x01\x00", "p=3"),
        (b"HLL\xa0\x81", "varint"),
        (b"HLL\xa0\x01\x05\x01", "announces 5 entries"),
        (b"HLL\xa0\x01\x02\x81\x01", "truncated"),
        (b"HLL\xa3\x01" + bytes(10), "truncated"),
        (b"HLL\xa0\x01\x01" + b"\xff" * 11 + b"\x01", "longer than 10 bytes"),
    ],
)
def test_unreadable_bytes_raise(data: bytes, message: str) -> None:
    with pytest.raises(HllFormatError, match=message):
        HyperLogLog.from_bytes(data)


def test_p16_cannot_be_serialized_and_p_range_is_checked() -> None:
    with pytest.raises(ValueError, match="4 bits"):
        HyperLogLog(16).to_bytes()
    with pytest.raises(ValueError, match="between 4 and 16"):
        HyperLogLog(3)
    with pytest.raises(ValueError, match="smaller p into a larger"):
        HyperLogLog(14).merge(HyperLogLog(10))


def test_any_p_4_to_15_round_trips() -> None:
    for p in range(4, 16):
        for n in (0, 3, 200, 20000):
            sketch = HyperLogLog(p)
            sketch.add_hashes(hash64_array_long(np.arange(n)))
            back = HyperLogLog.from_bytes(sketch.to_bytes())
            assert back.p == p
            assert back.encoding == sketch.encoding
            assert np.array_equal(back.registers(), sketch.registers())
            assert back.estimate() == sketch.estimate()


# -------------------------------------------------------------------------------------------------- accuracy


def test_one_million_distinct_within_two_percent() -> None:
    rng = np.random.default_rng(1234)
    values = rng.choice(np.iinfo(np.int64).max, size=1_000_000, replace=False)
    sketch = HyperLogLog()  # p = 14
    sketch.add_hashes(hash64_array_long(values))
    assert abs(sketch.estimate() - 1_000_000) / 1_000_000 < 0.02


def test_million_distinct_strings_within_two_percent() -> None:
    sketch = HyperLogLog()
    sketch.add_hashes(hash64_array_bytes([f"customer-{i:09d}".encode() for i in range(1_000_000)]))
    assert abs(sketch.estimate() - 1_000_000) / 1_000_000 < 0.02


def test_twenty_overlapping_sketches_merged_within_four_percent() -> None:
    sketches = []
    for i in range(20):
        s = HyperLogLog()
        s.add_hashes(hash64_array_long(np.arange(i * 50_000, i * 50_000 + 100_000)))
        sketches.append(s)
    true_union = 19 * 50_000 + 100_000
    merged = merge_hlls(sketches)
    assert merged.p == 14
    assert abs(merged.estimate() - true_union) / true_union < 0.04
    # via bytes, as the metastore does it
    merged_bytes = merge_hlls([HyperLogLog.from_bytes(s.to_bytes()) for s in sketches])
    assert merged_bytes.to_bytes() == merged.to_bytes()


def test_small_counts_are_exact_in_sparse_mode() -> None:
    for n in (1, 2, 10, 100, 1000):
        s = HyperLogLog()
        s.add_hashes(hash64_array_long(np.arange(n)))
        s.add_hashes(hash64_array_long(np.arange(n)))  # duplicates do not count
        assert s.encoding == "sparse"
        assert s.estimate() == n


def test_mixed_p_merge_squashes_to_smallest() -> None:
    a, b = HyperLogLog(10), HyperLogLog(14)
    a.add_hashes(hash64_array_long(np.arange(0, 60_000)))
    b.add_hashes(hash64_array_long(np.arange(30_000, 90_000)))
    merged = merge_hlls([b, a])
    assert merged.p == 10
    assert abs(merged.estimate() - 90_000) / 90_000 < 0.1


# ------------------------------------------------------------------------------------------------ properties

longs = st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=400)


@settings(max_examples=40, deadline=None)
@given(a=longs, b=longs, p=st.integers(min_value=4, max_value=12))
def test_merge_equals_sketch_of_union_and_is_commutative(a: list[int], b: list[int], p: int) -> None:
    sa, sb, union = HyperLogLog(p), HyperLogLog(p), HyperLogLog(p)
    sa.add_hashes(hash64_array_long(np.array(a, dtype=np.int64)))
    sb.add_hashes(hash64_array_long(np.array(b, dtype=np.int64)))
    union.add_hashes(hash64_array_long(np.array(a + b, dtype=np.int64)))
    ab, ba = sa.copy(), sb.copy()
    ab.merge(sb)
    ba.merge(sa)
    assert np.array_equal(ab.registers(), union.registers())
    assert np.array_equal(ba.registers(), union.registers())
    assert ab.estimate() == ba.estimate()


@settings(max_examples=40, deadline=None)
@given(values=longs, split=st.integers(min_value=0, max_value=400), p=st.integers(min_value=4, max_value=14))
def test_adding_in_batches_equals_adding_at_once(values: list[int], split: int, p: int) -> None:
    hashes = hash64_array_long(np.array(values, dtype=np.int64))
    once, batched = HyperLogLog(p), HyperLogLog(p)
    once.add_hashes(hashes)
    batched.add_hashes(hashes[:split])
    for h in hashes[split:].tolist():
        batched.add_hash(h)
    assert batched.encoding == once.encoding
    assert batched.to_bytes() == once.to_bytes()


@pytest.mark.parametrize("distinct", [1, 300, 2_400, 2_500, 3_000, 9_000, 70_000, 200_000])
def test_state_depends_only_on_the_set_of_hashes(distinct: int) -> None:
    # The scan's sketcher offers hashes in slices, drops duplicates of sparse sketches and updates dense
    # registers in blocks; none of that may change a sketch's registers, estimate or encoding (nor, once dense,
    # its bytes; a sparse sketch lists colliding keys in insertion order, as Java's HashMap iterates).
    from metastore.stats.sketcher import _add_hashes

    rng = np.random.default_rng(distinct)
    values = rng.integers(-(2**62), 2**62, distinct)
    hashes = hash64_array_long(values)
    reference = HyperLogLog(14)
    for h in hashes[:2_000].tolist():  # one by one, in order, as Hive's add(long) does, then the rest at once
        reference.add_hash(h)
    reference.add_hashes(hashes[2_000:])
    repeated = np.concatenate([hashes, hashes[rng.integers(0, distinct, 3 * distinct)]])
    rng.shuffle(repeated)
    whole, sliced = HyperLogLog(14), HyperLogLog(14)
    whole.add_hashes(repeated)
    for start in range(0, repeated.size, 50_000):
        _add_hashes(sliced, repeated[start : start + 50_000])
    for sketch in (whole, sliced):
        assert sketch.encoding == reference.encoding
        assert np.array_equal(sketch.registers(), reference.registers())
        assert sketch.estimate() == reference.estimate()
        if reference.encoding == "dense":
            assert sketch.to_bytes() == reference.to_bytes()
        else:
            again = HyperLogLog.from_bytes(sketch.to_bytes())
            assert np.array_equal(again.registers(), reference.registers())


@pytest.mark.parametrize("distinct", [1, 5, 16, 17, 40])
def test_few_distinct_values_dropped_before_the_sort_give_the_same_bytes(distinct: int, monkeypatch) -> None:
    # A sparse sketch fed many rows of a few values (a status column): the rows whose hash the first slice already
    # added are dropped by comparison before the sort (up to _FEW_DISTINCT values). The bytes (a sparse sketch's
    # entry order included) are those of the sort alone, and the registers those of Hive's one-by-one adds.
    from metastore.stats import sketcher

    rng = np.random.default_rng(distinct)
    values = rng.integers(-(2**62), 2**62, distinct)
    hashes = hash64_array_long(values[rng.integers(0, distinct, 300_000)])
    late = hash64_array_long(rng.integers(-(2**62), 2**62, 7))  # values first seen after the probe
    hashes = np.concatenate([hashes, late, hashes[:1000]])
    reference = HyperLogLog(14)
    for h in hashes.tolist()[:5000]:
        reference.add_hash(h)
    reference.add_hashes(hashes[5000:])
    default = sketcher._FEW_DISTINCT
    assert default >= 16
    sketches = {}
    for few in (default, 0):
        monkeypatch.setattr(sketcher, "_FEW_DISTINCT", few)
        sketch = HyperLogLog(14)
        for start in range(0, hashes.size, 100_000):
            sketcher._add_hashes(sketch, hashes[start : start + 100_000])
        sketches[few] = sketch
    fast, sorted_only = sketches[default], sketches[0]
    assert fast.to_bytes() == sorted_only.to_bytes()
    assert fast.encoding == reference.encoding == "sparse"
    assert np.array_equal(fast.registers(), reference.registers())
    assert fast.estimate() == reference.estimate()


def _hive_registers(hashes: list[int], p: int) -> np.ndarray:
    """Hive's HyperLogLog.add(hash) one hash at a time, registers only: a sparse map of 25-bit keys (a rank of 65
    stored as 1) until it holds more than the switch threshold of a bit-packed sketch, then the registers."""
    m = 1 << p
    threshold = (m * 6 // 8) // 5
    sparse: dict[int, int] | None = {}
    registers = [0] * m

    def rank(h: int) -> int:
        rest = h >> p
        return 65 if rest == 0 else (rest & -rest).bit_length()

    for h in hashes:
        if sparse is not None:
            key, value = h & ((1 << 25) - 1), rank(h)
            value = 1 if value == 65 else value
            sparse[key] = max(sparse.get(key, 0), value)
            if len(sparse) > threshold:
                for k, v in sparse.items():
                    registers[k & (m - 1)] = max(registers[k & (m - 1)], v)
                sparse = None
            continue
        registers[h & (m - 1)] = max(registers[h & (m - 1)], rank(h))
    assert sparse is None, "the hashes must turn the sketch dense"
    return np.array(registers, dtype=np.uint8)


@pytest.mark.parametrize("rank_65", [None, 0, 2_000, 2_457, 2_458, 2_600])
@pytest.mark.parametrize("distinct", [2_458, 2_500, 9_000])
def test_a_slice_that_overflows_the_sparse_map_gives_hives_registers(distinct: int, rank_65: int | None) -> None:
    # A slice in which the sparse map overflows goes to the registers whole (not through the map first) unless a
    # hash before the overflow ranks 65 (its bits above p all zero), which the map stores as 1: either way the
    # registers are those of Hive's adds one by one (an independent model here), and the bytes those of dense.
    p = 14
    rng = np.random.default_rng(distinct)
    hashes = [int(h) for h in rng.integers(1 << p, 1 << 63, distinct, dtype=np.int64)]
    if rank_65 is not None:
        hashes.insert(rank_65, 1 << 13 | 5)  # register 8197, rank 65 (stored as 1 while sparse)
    expected = _hive_registers(hashes, p)
    whole = HyperLogLog(p)
    whole.add_hashes(np.array(hashes, dtype=np.uint64))
    assert whole.encoding == "dense"
    assert np.array_equal(whole.registers(), expected)
    late = HyperLogLog(p)  # the map already holds entries when the overflowing slice arrives
    late.add_hashes(np.array(hashes[:1_000], dtype=np.uint64))
    late.add_hashes(np.array(hashes[1_000:], dtype=np.uint64))
    assert np.array_equal(late.registers(), expected)
    dense = HyperLogLog(p, dense=True)
    dense._dense = expected.copy()
    dense._max_register = int(expected.max())
    assert late.to_bytes() == dense.to_bytes()
