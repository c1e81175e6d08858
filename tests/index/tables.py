"""Random ORC tables and predicates for the index tests, and SQL's semantics in plain Python as ground truth."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from metastore.index.coverage import DataFile
from metastore.index.predicate import (
    And,
    Between,
    Compare,
    Const,
    Expr,
    In,
    IsNull,
    Not,
    Or,
    Value,
    ValueKind,
)
from metastore.index.scan import data_file
from metastore.orcio import OrcReader, OrcWriter

#: the test table: name -> Hive type
COLUMNS = {
    "seq": "bigint",  # sorted across the table
    "i": "int",
    "ti": "tinyint",
    "s": "string",
    "c": "char(3)",
    "d": "decimal(10,2)",
    "f": "double",
    "r": "float",
    "dt": "date",
    "si": "smallint",
    "vc": "varchar(4)",
    "wd": "decimal(30,4)",  # wider than 18 digits: keys in the bytes domain
}
SCHEMA = "struct<" + ",".join(f"{k}:{v}" for k, v in COLUMNS.items()) + ">"
EPOCH = dt.date(1970, 1, 1)

ints = st.integers(-40, 40)
strings = st.sampled_from(["", "a", "ab", "b", "ba", "é", "zz", "a b"])
chars = st.sampled_from(["", "a", "ab", "abc", "b", " a"])
decimals = st.integers(-500, 500).map(lambda v: Decimal(v).scaleb(-2))
doubles = st.sampled_from([0.0, -0.0, 1.5, -1.5, 2.0, float("nan"), float("inf"), -float("inf"), 1e-3, 100.25])
floats = st.sampled_from([0.0, 0.5, -0.5, 1.25, 3.0, float("nan")])
dates = st.integers(-5, 5).map(lambda d: EPOCH + dt.timedelta(days=d))
smallints = ints | st.sampled_from([-32768, -300, 255, 300, 32767])
wide = (st.integers(-500, 500) | st.sampled_from([10**25, -(10**25), 10**26 - 1, -(10**26) + 1, 123456789012345678901])
        ).map(lambda v: Decimal(v).scaleb(-4))


def nullable(strategy: st.SearchStrategy, p_null: bool = True) -> st.SearchStrategy:
    return st.none() | strategy if p_null else strategy


row_values = st.fixed_dictionaries(
    {
        "i": nullable(ints), "ti": nullable(ints), "s": nullable(strings), "c": nullable(chars),
        "d": nullable(decimals), "f": nullable(doubles), "r": nullable(floats), "dt": nullable(dates),
        "si": nullable(smallints), "vc": nullable(strings), "wd": nullable(wide),
    }
)
#: a table: files of stripes of rows
tables = st.lists(st.lists(st.lists(row_values, min_size=0, max_size=12), min_size=1, max_size=4), min_size=1, max_size=3)


@dataclass
class WrittenTable:
    files: list[DataFile]
    rows: list[dict[str, Any]]  # every row, in file and stripe order, with its file
    stripe_rows: list[list[list[dict[str, Any]]]]  # [file][stripe] -> rows


def write_table(directory: Path, table: list[list[list[dict[str, Any]]]]) -> WrittenTable:
    """Write each file with one stripe per group of rows (stripe size 1 flushes after every batch)."""
    directory.mkdir(parents=True, exist_ok=True)
    seq = 0
    files: list[DataFile] = []
    rows: list[dict[str, Any]] = []
    stripe_rows: list[list[list[dict[str, Any]]]] = []
    for fi, stripes in enumerate(table):
        path = directory / f"part-{fi:03d}.orc"
        per_stripe = []
        with OrcWriter(str(path), SCHEMA, {"orc.stripe.size": "1", "orc.row.index.stride": "1000"}) as writer:
            for stripe in stripes:
                if not stripe:
                    continue
                batch_rows = []
                for r in stripe:
                    row = dict(r, seq=seq)
                    if row["c"] is not None:
                        row["c"] = row["c"].ljust(3)
                    seq += 1
                    batch_rows.append(row)
                writer.write_batch({name: [row[name] for row in batch_rows] for name in COLUMNS})
                per_stripe.append(batch_rows)
        f = data_file(str(path))
        files.append(f)
        by_seq = {row["seq"]: row for s in per_stripe for row in s}
        for r in by_seq.values():
            rows.append(dict(r, _file=f.path))
        # the writer decides where stripes end: read them back
        with OrcReader(str(path)) as reader:
            stripe_rows.append(
                [[by_seq[v] for v in reader.read_stripe(i, columns=["seq"]).column("seq").to_pylist()]
                 for i in range(len(reader.stripes))]
            )
    return WrittenTable(files, rows, stripe_rows)


# ---------------------------------------------------------------------------------------------- predicates


def _literal_for(column: str) -> st.SearchStrategy:
    kind = COLUMNS[column]
    if kind in ("bigint", "int", "tinyint", "smallint"):
        return (st.integers(-300, 300).map(lambda v: Value(ValueKind.INTEGER, str(v)))
                | st.sampled_from(["2.5", "-0.5", "1000", "-1e3", "7.0", "32767", "-32769", "40000"]).map(
                    lambda t: Value(ValueKind.DECIMAL, t)))
    if kind == "string" or kind.startswith("varchar"):
        return (strings | st.sampled_from(["abcde", "zzzzz"])).map(lambda v: Value(ValueKind.STRING, v))
    if kind == "decimal(30,4)":
        return (wide.map(lambda v: Value(ValueKind.DECIMAL, str(v)))
                | st.sampled_from(["1.00005", "-2.5", "3", "1e25", "-99999999999999999999999999.9999"]).map(
                    lambda t: Value(ValueKind.DECIMAL, t)))
    if kind.startswith("char"):
        return st.sampled_from(["a", "a ", "ab", "abc", "", "b  "]).map(lambda v: Value(ValueKind.STRING, v))
    if kind.startswith("decimal"):
        return (decimals.map(lambda v: Value(ValueKind.DECIMAL, str(v)))
                | st.sampled_from(["1.005", "-2.5", "3"]).map(lambda t: Value(ValueKind.DECIMAL, t)))
    if kind in ("double", "float"):
        return st.sampled_from(["0", "-0.0", "1.5", "2", "0.5", "NaN", "inf", "-inf", "1e-3", "100.25"]).map(
            lambda t: Value(ValueKind.DOUBLE, t))
    if kind == "date":
        return dates.map(lambda d: Value(ValueKind.DATE, d.isoformat()))
    raise AssertionError(kind)


def leaf_for(column: str) -> st.SearchStrategy[Expr]:
    lit = _literal_for(column)
    null = st.just(Value(ValueKind.NULL))
    return st.one_of(
        st.builds(Compare, st.just(column), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), lit),
        st.builds(Between, st.just(column), lit, lit),
        st.builds(In, st.just(column), st.lists(lit | null, min_size=1, max_size=4).map(tuple)),
        st.builds(IsNull, st.just(column)),
        st.builds(Compare, st.just(column), st.just("="), null),
    )


def predicates(columns: list[str]) -> st.SearchStrategy[Expr]:
    base = st.one_of(*[leaf_for(c) for c in columns])
    return st.recursive(
        base,
        lambda inner: st.one_of(
            st.builds(lambda a, b: And((a, b)), inner, inner),
            st.builds(lambda a, b: Or((a, b)), inner, inner),
            st.builds(Not, inner),
        ),
        max_leaves=5,
    ) | st.builds(Const, st.booleans())


# ---------------------------------------------------------------------------------------------- ground truth


def _norm(column: str, value: Any) -> Any:
    """A row value as the comparison sees it (Python semantics written independently of the index code)."""
    kind = COLUMNS[column]
    if value is None:
        return None
    if kind.startswith("char"):
        return value.rstrip(" ").encode()
    if kind == "string" or kind.startswith("varchar"):
        return value.encode()
    if kind in ("double", "float"):
        return float(value)
    if kind.startswith("decimal") or kind in ("bigint", "int", "tinyint", "smallint"):
        return Decimal(value)
    return value


def _lit(column: str, value: Value) -> Any:
    kind = COLUMNS[column]
    if value.kind is ValueKind.NULL:
        return None
    text = value.text or ""
    if kind in ("double", "float"):
        return float(text)
    if kind.startswith("decimal") or kind in ("bigint", "int", "tinyint", "smallint"):
        return Decimal(text)
    if kind.startswith("char"):
        return text.rstrip(" ").encode()
    if kind == "string" or kind.startswith("varchar"):
        return text.encode()
    return dt.date.fromisoformat(text)


def _cmp(a: Any, b: Any) -> int:
    """Total order of the tests' values: doubles as Spark orders them (NaN = NaN, NaN largest, -0.0 = 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        an, bn = math.isnan(a), math.isnan(b)
        if an or bn:
            return 0 if an and bn else (1 if an else -1)
    return (a > b) - (a < b)


def truth(expr: Expr, row: dict[str, Any]) -> bool | None:
    """SQL's three-valued answer of a predicate for one row (None is unknown)."""
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Not):
        inner = truth(expr.arg, row)
        return None if inner is None else not inner
    if isinstance(expr, And | Or):
        values = [truth(a, row) for a in expr.args]
        if isinstance(expr, And):
            return False if False in values else (None if None in values else True)
        return True if True in values else (None if None in values else False)
    column = expr.column
    value = _norm(column, row[column])
    if isinstance(expr, IsNull):
        return value is None
    if isinstance(expr, Compare):
        lit = _lit(column, expr.value)
        if value is None or lit is None:
            return None
        c = _cmp(value, lit)
        return {"=": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[expr.op]
    if isinstance(expr, Between):
        return truth(And((Compare(column, ">=", expr.low), Compare(column, "<=", expr.high))), row)
    if isinstance(expr, In):
        return truth(Or(tuple(Compare(column, "=", v) for v in expr.values)), row)
    raise AssertionError(expr)
