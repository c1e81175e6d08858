"""Test data of every Hive primitive type and the statistics it must give, computed independently of the project
(pyarrow compute and numpy over the values themselves, never our ORC reader or harvest code)."""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as pa_orc

#: (column, Hive type, Arrow type) of the test table, in table order.
COLUMNS: list[tuple[str, str, pa.DataType]] = [
    ("id", "bigint", pa.int64()),
    ("qty", "int", pa.int32()),
    ("small", "smallint", pa.int16()),
    ("tiny", "tinyint", pa.int8()),
    ("price", "decimal(12,2)", pa.decimal128(12, 2)),
    ("ratio", "double", pa.float64()),
    ("weight", "float", pa.float32()),
    ("flag", "boolean", pa.bool_()),
    ("name", "string", pa.string()),
    ("code", "varchar(8)", pa.string()),
    ("grade", "char(4)", pa.string()),
    ("day", "date", pa.date32()),
    ("ts", "timestamp", pa.timestamp("ns")),
    ("blob", "binary", pa.binary()),
]
CREATE_COLUMNS = ", ".join(f"{name} {hive}" for name, hive, _ in COLUMNS)

_EPOCH = dt.date(1970, 1, 1)


def _with_nulls(rng: np.random.Generator, values: list[Any], fraction: float) -> list[Any]:
    mask = rng.random(len(values)) < fraction
    return [None if m else v for v, m in zip(values, mask.tolist(), strict=True)]


def make_table(rng: np.random.Generator, rows: int, distinct: int) -> pa.Table:
    """Rows of every type with nulls in most columns; `distinct` bounds the NDV of the wide columns."""
    ids = rng.integers(-(2**40), 2**40, size=distinct)[rng.integers(0, distinct, size=rows)]
    words = ["alpha", "beta", "gämma", "δέλτα", "e", "", "with,comma", 'quote"d', "x" * 40]
    names = [f"{words[i % len(words)]}-{i}" for i in rng.integers(0, distinct, size=rows).tolist()]
    codes = [f"c{i}"[:8] for i in rng.integers(0, 500, size=rows).tolist()]
    grades = [f"g{i:03d}" for i in rng.integers(0, 50, size=rows).tolist()]
    cents = rng.integers(-10**9, 10**9, size=distinct)[rng.integers(0, distinct, size=rows)]
    days = rng.integers(-3000, 25000, size=rows)
    seconds = rng.integers(-10**9, 2 * 10**9, size=distinct)[rng.integers(0, distinct, size=rows)]
    micros = rng.integers(0, 10**6, size=rows)
    columns = {
        "id": pa.array(_with_nulls(rng, ids.tolist(), 0.05), pa.int64()),
        "qty": pa.array(_with_nulls(rng, rng.integers(-(2**31), 2**31 - 1, size=rows).tolist(), 0.0), pa.int32()),
        "small": pa.array(_with_nulls(rng, rng.integers(-32768, 32767, size=rows).tolist(), 0.1), pa.int16()),
        "tiny": pa.array(_with_nulls(rng, rng.integers(-128, 127, size=rows).tolist(), 0.1), pa.int8()),
        "price": pa.array(
            _with_nulls(rng, [Decimal(int(c)).scaleb(-2) for c in cents.tolist()], 0.02), pa.decimal128(12, 2)
        ),
        "ratio": pa.array(_with_nulls(rng, (rng.standard_normal(rows) * 1e6).tolist(), 0.2), pa.float64()),
        "weight": pa.array(
            _with_nulls(rng, np.round(rng.random(rows) * 100, 2).astype(np.float32).tolist(), 0.1), pa.float32()
        ),
        "flag": pa.array(_with_nulls(rng, (rng.random(rows) < 0.3).tolist(), 0.25), pa.bool_()),
        "name": pa.array(_with_nulls(rng, names, 0.1), pa.string()),
        "code": pa.array(_with_nulls(rng, codes, 0.0), pa.string()),
        "grade": pa.array(_with_nulls(rng, grades, 0.3), pa.string()),
        "day": pa.array(_with_nulls(rng, [_EPOCH + dt.timedelta(days=int(d)) for d in days], 0.05), pa.date32()),
        "ts": pa.array(
            _with_nulls(rng, (seconds * 10**9 + micros * 1000).tolist(), 0.05), pa.timestamp("ns")
        ),
        "blob": pa.array(
            _with_nulls(rng, [f"b{i}".encode() * (1 + i % 3) for i in rng.integers(0, 1000, size=rows)], 0.1),
            pa.binary(),
        ),
    }
    return pa.table(columns)


def write_csv(table: pa.Table, path: Path) -> None:
    """The rows as CSV the shell's LOAD DATA reads (NULL as \\N, timestamps with microseconds)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    data = {name: table.column(name) for name in table.column_names}
    ts = data["ts"].cast(pa.int64()).to_pylist()
    pylists = {name: col.to_pylist() for name, col in data.items() if name != "ts"}
    for i in range(table.num_rows):
        record = []
        for name in table.column_names:
            v = ts[i] if name == "ts" else pylists[name][i]
            if v is None:
                record.append("\\N")
            elif name == "ts":
                seconds, nanos = divmod(v, 10**9)
                when = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)
                record.append(f"{when:%Y-%m-%d %H:%M:%S}.{nanos:09d}")
            elif isinstance(v, bool):
                record.append("true" if v else "false")
            elif isinstance(v, bytes):
                record.append(v.decode())
            elif isinstance(v, float):
                record.append(repr(v))
            else:
                record.append(str(v))
        writer.writerow(record)
    path.write_text(buf.getvalue(), encoding="utf-8")


def write_pyarrow_orc(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pa_orc.write_table(table, str(path), compression="zstd")


@dataclass(frozen=True)
class Expected:
    """What ANALYZE must report for one column (None where the kind has no such field)."""

    num_nulls: int
    ndv: int | None = None
    low: Any = None
    high: Any = None
    num_trues: int | None = None
    num_falses: int | None = None
    avg_col_len: float | None = None
    max_col_len: int | None = None


def expected(column: pa.ChunkedArray | pa.Array, hive_type: str) -> Expected:
    """Ground truth of a column: counts over the values, min/max, exact NDV, byte lengths."""
    nulls = column.null_count
    valid = pc.drop_null(column)
    head = hive_type.split("(", maxsplit=1)[0]
    if head == "boolean":
        trues = int(pc.sum(valid.cast(pa.int64())).as_py() or 0)
        return Expected(nulls, num_trues=trues, num_falses=len(valid) - trues)
    if head in ("string", "varchar", "char", "binary"):
        lengths = pc.binary_length(valid.cast(pa.binary())).to_numpy(zero_copy_only=False)
        avg = float(lengths.sum()) / len(lengths) if len(lengths) else 0.0
        ndv = None if head == "binary" else len(pc.unique(valid))
        return Expected(nulls, ndv=ndv, avg_col_len=avg, max_col_len=int(lengths.max()) if len(lengths) else 0)
    ndv = len(pc.unique(valid))
    low, high = pc.min(valid).as_py(), pc.max(valid).as_py()
    if head == "date":
        low, high = (low - _EPOCH).days, (high - _EPOCH).days
    elif head == "timestamp":
        ints = valid.cast(pa.int64()).to_numpy()
        low, high = int(ints.min() // 10**9), int(ints.max() // 10**9)
        ndv = len(pc.unique(pa.array(ints // 10**9)))  # Hive sketches whole seconds (a hash set: no sort)
    elif head in ("float", "double"):
        low, high = float(low), float(high)
    return Expected(nulls, ndv=ndv, low=low, high=high)


def concat(tables: list[pa.Table]) -> pa.Table:
    return pa.concat_tables(tables)
