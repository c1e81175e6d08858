"""Literal and text conversion to column values: Hive's rounding, padding, ranges and partition value spelling."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pytest

from metastore.sql.errors import Position
from metastore.sql.hive_types import HiveTypeError, parse_hive_type
from metastore.sql.statements import Literal, LiteralKind
from metastore.sql.values import ConversionError, from_literal, from_text, partition_value_text

P = Position(1, 1)


def lit(kind: LiteralKind, text: str | None) -> Literal:
    return Literal(kind, text, P)


@pytest.mark.parametrize(
    ("text", "hive_type", "value"),
    [
        ("true", "boolean", True), (" FALSE ", "boolean", False),
        ("-128", "tinyint", -128), ("1e3", "int", 1000), ("12.0", "bigint", 12),
        ("1.005", "decimal(5,2)", Decimal("1.01")), ("-1.005", "decimal(5,2)", Decimal("-1.01")),
        ("999.994", "decimal(5,2)", Decimal("999.99")), ("7", "decimal(3,0)", Decimal("7")),
        ("NaN", "double", "nan"), ("-Infinity", "double", float("-inf")), ("1.5", "float", 1.5),
        ("abcdef", "varchar(3)", "abc"), ("ab", "char(4)", "ab  "), ("héllo", "string", "héllo"),
        ("2024-2-29", "date", dt.date(2024, 2, 29)), ("2024-02-29 10:00:00", "date", dt.date(2024, 2, 29)),
        ("2024-01-01T01:02:03.5", "timestamp", np.datetime64("2024-01-01T01:02:03.500000000", "ns")),
        ("1969-12-31", "timestamp", np.datetime64("1969-12-31T00:00:00", "ns")),
        ("bytes", "binary", b"bytes"),
    ],
)
def test_from_text(text: str, hive_type: str, value: object) -> None:
    got = from_text(text, parse_hive_type(hive_type))
    if value == "nan":
        assert got != got
    else:
        assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    ("text", "hive_type", "message"),
    [
        ("yes", "boolean", "'yes' is not a boolean value (expected true or false)"),
        ("128", "tinyint", "128 is outside the range of tinyint (-128..127)"),
        ("1.5", "int", "'1.5' is not a valid int value (not a whole number)"),
        ("1000", "decimal(5,2)", "1000 does not fit decimal(5,2) (at most 3 digits before the point)"),
        ("999.995", "decimal(5,2)", "999.995 does not fit decimal(5,2)"),
        ("1e39", "float", "1e39 is outside the range of float"),
        ("2024-02-30", "date", "'2024-02-30' is not a valid date: day is out of range for month"),
        ("noon", "timestamp", "'noon' is not a valid timestamp value (expected YYYY-MM-DD HH:MM:SS[.fffffffff])"),
        ("x", "array<int>", "values of type array<int> cannot be written by this shell"),
    ],
)
def test_from_text_refuses_what_does_not_fit(text: str, hive_type: str, message: str) -> None:
    with pytest.raises(ConversionError) as info:
        from_text(text, parse_hive_type(hive_type))
    assert str(info.value).startswith(message), str(info.value)


def test_literals_by_kind() -> None:
    assert from_literal(lit(LiteralKind.NULL, None), parse_hive_type("int")) is None
    assert from_literal(lit(LiteralKind.BOOLEAN, "true"), parse_hive_type("string")) == "true"
    assert from_literal(lit(LiteralKind.DECIMAL, "2.5"), parse_hive_type("double")) == 2.5
    assert from_literal(lit(LiteralKind.DATE, "2024-01-02"), parse_hive_type("timestamp")) == np.datetime64(
        "2024-01-02T00:00:00", "ns"
    )
    with pytest.raises(ConversionError, match="is a number, not a date value"):
        from_literal(lit(LiteralKind.INTEGER, "5"), parse_hive_type("date"))
    with pytest.raises(ConversionError, match="not a valid date"):
        from_literal(lit(LiteralKind.DATE, "2024-13-01"), parse_hive_type("string"))


@pytest.mark.parametrize(
    ("kind", "text", "hive_type", "stored"),
    [
        (LiteralKind.STRING, "05", "int", "5"), (LiteralKind.INTEGER, "7", "string", "7"),
        (LiteralKind.STRING, "2024-1-2", "date", "2024-01-02"), (LiteralKind.STRING, "a/b=c", "string", "a/b=c"),
        (LiteralKind.STRING, "2024-01-01 10:00:00.500", "timestamp", "2024-01-01 10:00:00.5"),
        (LiteralKind.STRING, "2024-01-01 10:00:00", "timestamp", "2024-01-01 10:00:00"),
        (LiteralKind.BOOLEAN, "true", "boolean", "true"), (LiteralKind.STRING, "1.50", "decimal(4,2)", "1.50"),
    ],
)
def test_partition_values_are_normalised(kind: LiteralKind, text: str, hive_type: str, stored: str) -> None:
    assert partition_value_text(lit(kind, text), parse_hive_type(hive_type)) == stored


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("INT", "int"), ("integer", "int"), ("decimal", "decimal(10,0)"), ("numeric(5, 2)", "decimal(5,2)"),
     ("double precision", "double"), ("map<string,array<struct<a:int,`b c`:string>>>",
                                      "map<string,array<struct<a:int,b c:string>>>"), ("VARCHAR(10)", "varchar(10)")],
)
def test_type_strings(text: str, canonical: str) -> None:
    assert str(parse_hive_type(text)) == canonical


@pytest.mark.parametrize(
    "text", ["varchar", "decimal(0)", "char(300)", "int(3)", "struct<>", "unknown", "map<int>", "decimal(²)"]
)
def test_bad_type_strings(text: str) -> None:
    with pytest.raises(HiveTypeError):
        parse_hive_type(text)
