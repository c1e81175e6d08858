"""Decimal columns: exact Python values for 38-digit decimals, per-value scales brought to the column scale, and
the vectorised varint decoding of every width (int64 when values fit, Python ints beyond)."""

from __future__ import annotations

import io
import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.orc as pa_orc
import pytest

from metastore.orcio import OrcReader
from metastore.orcio import _rle as rle
from metastore.orcio._column_readers import _rescale, _rescale_int64, _rescale_objects
from metastore.orcio._types import TypeDescription
from metastore.orcio._vectors import DecimalVector
from metastore.orcio._writer import OrcWriter

WIDE = [
    Decimal("12345678901234567890123456.789012345678"),
    Decimal("-99999999999999999999999999.999999999999"),
    None,
    Decimal("0.000000000001"),
    Decimal("99999999999999999999999999.999999999999"),
    Decimal("-0.000000000000"),
    Decimal("1"),
]


def _orc_bytes(schema: str, columns: dict) -> bytes:
    buf = io.BytesIO()
    with OrcWriter(buf, schema, {}) as w:
        w.write_batch(columns)
    return buf.getvalue()


def test_decimal_38_values_come_back_with_every_digit() -> None:
    data = _orc_bytes("struct<d:decimal(38,12)>", {"d": WIDE})
    got = OrcReader(data).read().column("d").to_pylist()
    assert got == WIDE
    # equal is not enough: every digit, at the column's scale
    assert [None if v is None else str(v) for v in got] == [
        "12345678901234567890123456.789012345678", "-99999999999999999999999999.999999999999", None, "1E-12",
        "99999999999999999999999999.999999999999", "0E-12", "1.000000000000"]
    # pyarrow (ORC C++) reads the same file the same way
    peer = pa_orc.ORCFile(pa.BufferReader(data)).read().column(0).to_pylist()
    assert peer == got


def test_decimal_vector_to_pylist_is_exact_without_nulls_too() -> None:
    node = TypeDescription.parse("decimal(38,10)")
    values = [10**37 + 1, -(10**38 - 1), 7]
    vec = DecimalVector(node, 3, None, np.asarray(values, dtype=object), 10)
    assert [str(v) for v in vec.to_pylist()] == [
        "1000000000000000000000000000.0000000001", "-9999999999999999999999999999.9999999999", "7E-10"]
    hive011 = DecimalVector(TypeDescription.parse("decimal(38,0)"), 2, None, np.asarray(values[:2], dtype=object), 0,
                            np.asarray([0, 38]))
    assert [str(v) for v in hive011.to_pylist()] == [str(10**37 + 1), "-0." + "9" * 38]


def test_wide_decimals_from_pyarrow_files() -> None:
    rng = random.Random(5)
    values = [Decimal(rng.randrange(-(10**38) + 1, 10**38)).scaleb(-20) for _ in range(3000)] + [None]
    table = pa.table({"d": pa.array(values, pa.decimal128(38, 20))})
    sink = io.BytesIO()
    pa_orc.write_table(table, sink)
    got = OrcReader(sink.getvalue()).read().column("d").to_pylist()
    assert got == values
    assert all(g is None or g.as_tuple().exponent == -20 for g in got)


def test_short_decimals_stay_int64_and_exact() -> None:
    rng = np.random.default_rng(9)
    cents = rng.integers(-(10**17), 10**17, 5000).tolist()
    values = [Decimal(c).scaleb(-2) for c in cents]
    # our writer stores each value with its own scale (trailing zeros stripped, as Java's HiveDecimal)
    values[:4] = [Decimal("1.00"), Decimal("-2.50"), Decimal("0.00"), Decimal("100")]
    data = _orc_bytes("struct<d:decimal(18,2)>", {"d": values})
    vec = OrcReader(data).read().column("d")
    assert vec.unscaled.dtype == np.int64
    assert vec.to_pylist() == values
    assert [str(v) for v in vec.to_pylist()[:4]] == ["1.00", "-2.50", "0.00", "100.00"]


def _zigzag_varints(values: list[int]) -> bytes:
    out = bytearray()
    for v in values:
        z = (v << 1) if v >= 0 else ((-v) << 1) - 1
        while z >= 0x80:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        out.append(z)
    return bytes(out)


@pytest.mark.parametrize("bits", [6, 27, 31, 55, 62, 63, 64, 100, 127])
def test_big_varints_of_every_width(bits: int) -> None:
    rng = random.Random(bits)
    values = [rng.randrange(-(1 << bits), 1 << bits) for _ in range(700)] + [0, -1, (1 << bits) - 1, -(1 << bits)]
    blob = _zigzag_varints(values)
    got, end = rle.decode_big_varints_array(blob + b"\x05", len(values), 0)
    assert end == len(blob)
    assert got.tolist() == values
    fits = all(-(2**62) <= v < 2**62 for v in values)
    assert (got.dtype == np.int64) == fits
    # from an offset, as a row-group read does
    first = len(_zigzag_varints(values[:10]))
    assert rle.decode_big_varints(blob, len(values) - 10, first)[0] == values[10:]


def test_rescaling_matches_the_scalar_rule() -> None:
    rng = random.Random(3)
    values = [rng.randrange(-(10**11), 10**11) for _ in range(2000)]
    scales = [rng.randrange(0, 8) for _ in values]
    for target in (0, 3, 7):
        want = [_rescale(v, s, target) for v, s in zip(values, scales, strict=True)]
        got = _rescale_int64(np.asarray(values, np.int64), np.asarray(scales, np.int64), target)
        assert got is not None and got.tolist() == want
        objects = _rescale_objects(np.asarray(values, dtype=object), np.asarray(scales, np.int64), target)
        assert objects.tolist() == want
    # scaling up past int64 gives up (the caller switches to Python ints)
    assert _rescale_int64(np.asarray([10**17], np.int64), np.asarray([0]), 5) is None
    assert _rescale_objects(np.asarray([10**17], dtype=object), np.asarray([0]), 5).tolist() == [10**22]


@pytest.mark.parametrize("stored", [0, 2, 6, 9])
def test_rescaling_one_scale_for_every_value(stored: int) -> None:
    # the path for a column whose values all share one scale (Spark's writer: a fixed scale per column)
    rng = random.Random(stored)
    values = [rng.randrange(-(10**9), 10**9) for _ in range(1000)] + [0, -1, 1]
    for target in (0, 2, 6, 9):
        want = [_rescale(v, stored, target) for v in values]
        got = _rescale_int64(np.asarray(values, np.int64), np.full(len(values), stored, np.int64), target)
        assert got is not None and got.tolist() == want
    # scaling every value up past int64 gives up; an empty column stays empty
    assert _rescale_int64(np.asarray([10**12, 5], np.int64), np.full(2, stored, np.int64), stored + 7) is None
    assert _rescale_int64(np.asarray([], np.int64), np.asarray([], np.int64), 4).tolist() == []
