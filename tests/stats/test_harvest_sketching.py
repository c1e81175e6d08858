"""The sketching inside harvesting: packed-buffer Murmur3 equals Hive's hash64, a scan's sketch holds exactly the
registers of Hive's hashing of the same values (through metastore.stats.ndv), partials serialise and merge."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from metastore.errors import InvalidInput
from metastore.orcio import hash64, hash64_array_bytes, hash64_packed
from metastore.stats import harvest
from metastore.stats.harvest import ColumnPartial, ColumnSketcher, analyze_files
from metastore.stats.hll import HyperLogLog
from metastore.stats.model import StatsKind
from metastore.stats.ndv import NdvSketch


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.binary(max_size=70), max_size=40), hs.integers(0, 9))
def test_packed_hash_equals_hash64_of_each_value(values: list[bytes], lead: int):
    # values packed after some leading bytes, as a stripe's buffer may start mid-stream
    buffer = b"\xaa" * lead + b"".join(values)
    offsets = np.cumsum([lead] + [len(v) for v in values], dtype=np.int64)
    got = hash64_packed(buffer, offsets)
    assert got.tolist() == [hash64(v) for v in values]
    assert got.tolist() == hash64_array_bytes(values).tolist()


def test_packed_hash_over_several_blocks_of_mixed_lengths():
    # more values than one hashing block (HASH_BLOCK), lengths from empty to beyond eight words, varying per block
    rng = np.random.default_rng(11)
    lengths = np.concatenate([rng.integers(0, 80, 70_000), np.full(5_000, 24), rng.integers(17, 26, 70_000)])
    data = rng.integers(0, 256, int(lengths.sum()), dtype=np.uint8).tobytes()
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    got = hash64_packed(data, offsets)
    values = [data[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]
    assert got.tolist() == hash64_array_bytes(values).tolist()
    sample = rng.integers(0, len(values), 300).tolist()
    assert [got[i] for i in sample] == [hash64(values[i]) for i in sample]


def test_packed_hash_rejects_offsets_outside_the_buffer():
    with pytest.raises(ValueError, match="offsets"):
        hash64_packed(b"abc", np.array([0, 5]))
    assert hash64_packed(b"", np.array([0])).size == 0


def _registers(sketch: bytes) -> np.ndarray:
    return HyperLogLog.from_bytes(sketch).registers()


def _hive_registers(kind: StatsKind, values) -> np.ndarray:
    sketch = NdvSketch(HyperLogLog(14))
    sketch.add_values(kind, values)
    return sketch.sketch.registers()


def test_scanned_sketches_hash_values_exactly_as_hive(tmp_path: Path):
    rng = np.random.default_rng(1)
    n = 20_000
    longs = rng.integers(-(10**12), 10**12, n)
    doubles = rng.normal(0, 100, n)
    doubles[:50] = np.nan
    doubles[50:60] = -0.0
    floats = rng.random(n).astype(np.float32)
    decimals = [Decimal(int(k)).scaleb(-4) for k in rng.integers(-10**14, 10**14, n)]
    strings = [f"ключ-{int(k)}" for k in rng.integers(0, 5000, n)]
    days = rng.integers(-50_000, 50_000, n)
    micros = rng.integers(-(10**15), 10**15, n)
    table = pa.table({
        "l": longs,
        "d": doubles,
        "f": floats,
        "dec": pa.array(decimals, pa.decimal128(20, 4)),
        "s": strings,
        "dt": days.astype("datetime64[D]"),
        "ts": micros.astype("datetime64[us]"),
    })
    types = {"l": "bigint", "d": "double", "f": "float", "dec": "decimal(20,4)", "s": "string", "dt": "date",
             "ts": "timestamp"}
    for threshold in (0.0, 1.0):  # direct and dictionary strings
        path = tmp_path / f"v{threshold}.orc"
        po.write_table(table, path, dictionary_key_size_threshold=threshold, stripe_size=150_000)
        result = analyze_files([path], list(types), hive_types=types)
        expected = {
            "l": _hive_registers(StatsKind.LONG, longs),
            "d": _hive_registers(StatsKind.DOUBLE, doubles),
            "f": _hive_registers(StatsKind.DOUBLE, floats.astype(np.float64)),
            "dec": _hive_registers(StatsKind.DECIMAL, decimals),
            "s": _hive_registers(StatsKind.STRING, strings),
            "dt": _hive_registers(StatsKind.DATE, [dt.date(1970, 1, 1) + dt.timedelta(days=int(d)) for d in days]),
            "ts": _hive_registers(StatsKind.TIMESTAMP, micros.astype("datetime64[us]")),
        }
        for name, registers in expected.items():
            assert (_registers(result.columns[name].bit_vector) == registers).all(), name


def test_decimal_doubles_are_correctly_rounded_beyond_two_to_the_53():
    sketcher = ColumnSketcher(StatsKind.DECIMAL)
    unscaled = np.array([2**53 + 1, -(2**62) + 7, 123456789012345678, 5], dtype=np.int64)
    sketcher.add_decimals(unscaled, 3)
    expected = _hive_registers(StatsKind.DECIMAL, [Decimal(int(u)).scaleb(-3) for u in unscaled])
    assert (sketcher.hll.registers() == expected).all()
    assert sketcher.low == Decimal(-(2**62) + 7).scaleb(-3) and sketcher.high == Decimal(123456789012345678).scaleb(-3)


def test_partials_round_trip_and_merge_exactly():
    a = ColumnSketcher(StatsKind.STRING)
    b = ColumnSketcher(StatsKind.STRING)
    words = [w.encode() for w in ("alpha", "beta", "gamma", "delta", "é")]
    offsets = np.cumsum([0] + [len(w) for w in words])
    a.add_packed(b"".join(words), offsets)
    b.add_packed(b"".join(words[:2]), offsets[:3])
    pa_ = ColumnPartial(kind=StatsKind.STRING, rows=7, num_nulls=2, total_length=a.total_length,
                        max_length=a.max_length, sketch=a.sketch_bytes())
    pb = ColumnPartial(kind=StatsKind.STRING, rows=3, num_nulls=1, total_length=b.total_length,
                       max_length=b.max_length, sketch=b.sketch_bytes(), missing=frozenset({"x"}))
    for p in (pa_, pb):
        assert ColumnPartial.from_bytes(p.to_bytes()) == p
    merged = pa_.merged(pb)
    assert (merged.rows, merged.num_nulls, merged.total_length, merged.max_length) == (10, 3, 30, 5)
    assert merged.missing == {"x"} and merged.ndv() == 5
    stats = merged.to_stats()
    assert stats.avg_col_len == 30 / 7 and stats.num_dvs == 5 and stats.max_col_len == 5
    decimal = ColumnPartial(kind=StatsKind.DECIMAL, rows=1, num_nulls=0, low=Decimal("-1.50"), high=Decimal("2"))
    double = ColumnPartial(kind=StatsKind.DOUBLE, rows=1, num_nulls=0, low=float("-inf"), high=0.1)
    for p in (decimal, double):
        back = ColumnPartial.from_bytes(p.to_bytes())
        assert back == p and type(back.low) is type(p.low)
    with pytest.raises(InvalidInput, match="cannot merge"):
        decimal.merged(double)
    with pytest.raises(ValueError, match="not a serialised column partial"):
        ColumnPartial.from_bytes(b"\x05\x00\x00\x00{bad}")


def test_ndv_is_capped_by_the_non_null_values():
    sketcher = ColumnSketcher(StatsKind.LONG)
    sketcher.add_integers(np.arange(3))
    partial = ColumnPartial(kind=StatsKind.LONG, rows=5, num_nulls=3, sketch=sketcher.sketch_bytes())
    assert partial.ndv() == 2
    empty = ColumnPartial(kind=StatsKind.LONG, rows=5, num_nulls=5, sketch=HyperLogLog(14).to_bytes())
    assert empty.ndv() == 0 and empty.to_stats().num_dvs == 0


@pytest.mark.parametrize("count", [0, 1, 100, 3000, 50_000])
def test_ndv_uses_the_estimate_stored_in_the_sketch_header(count: int):
    sketch = HyperLogLog(14)
    sketch.add_hashes(np.random.default_rng(count).integers(-(2**63), 2**63 - 1, count, dtype=np.int64))
    blob = sketch.to_bytes()
    partial = ColumnPartial(kind=StatsKind.LONG, rows=10**6, num_nulls=0, sketch=blob)
    assert partial.ndv() == max(1, HyperLogLog.from_bytes(blob).estimate())


def test_a_single_file_split_over_workers_by_columns_gives_the_same_result(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(harvest.runner, "SPLIT_MIN_BYTES", 0)
    rng = np.random.default_rng(4)
    n = 50_000
    table = pa.table({"a": rng.integers(0, 1000, n), "b": [f"s{k}" for k in rng.integers(0, 9999, n)],
                      "c": pa.array([Decimal(int(k)).scaleb(-2) for k in rng.integers(0, 10**6, n)], pa.decimal128(9, 2)),
                      "d": rng.random(n)})
    path = tmp_path / "one.orc"
    po.write_table(table, path)
    types = {"a": "bigint", "b": "string", "c": "decimal(9,2)", "d": "double"}
    split = analyze_files([path], list(types), hive_types=types, workers=2)
    serial = analyze_files([path], list(types), hive_types=types, workers=1)
    assert split.columns == serial.columns and list(split.columns) == list(types)
    assert split.files_read == 1 and split.files[0].source == "scan"
    # two workers each opened the file for their columns
    assert split.bytes_read > serial.bytes_read


@pytest.mark.parametrize("kind", [StatsKind.LONG, StatsKind.DATE])
@pytest.mark.parametrize("span", [1, 50, 1_500, 99_999, 400_000])
def test_sketches_of_narrow_ranges_equal_hashing_every_row(kind: StatsKind, span: int):
    # values spanning fewer integers than there are rows are reduced to their distinct values before hashing;
    # the sketch (registers, estimate, sparse or dense) and the range must be those of hashing every row
    rng = np.random.default_rng(span)
    values = rng.integers(-7, span - 7, 100_000)
    sketcher = ColumnSketcher(kind, range_=True)
    if kind is StatsKind.DATE:
        sketcher.add_dates(values)
    else:
        sketcher.add_integers(values)
    hive = NdvSketch(HyperLogLog(14))
    hive.add_values(kind, values)
    ours = HyperLogLog.from_bytes(sketcher.sketch_bytes() or b"")
    assert ours.encoding == hive.sketch.encoding
    assert np.array_equal(ours.registers(), hive.sketch.registers())
    assert ours.estimate() == hive.estimate()
    assert (sketcher.low, sketcher.high, sketcher.non_null) == (int(values.min()), int(values.max()), 100_000)
