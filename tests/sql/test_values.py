"""Literal and text conversion to column values: Hive's rounding, padding, ranges and partition value spelling."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# Python refuses int() of more than 4,300 digits and a 200-digit decimal context overflows: the shell's own
# message instead, naming the limit (the caller adds the column and the position).
_HUGE = "9" * 5000


@pytest.mark.parametrize(
    ("text", "hive_type", "message"),
    [
        (_HUGE, "bigint", f"{'9' * 57}... is outside the range of bigint (-9223372036854775808..9223372036854775807)"),
        ("-" + _HUGE, "int", f"-{'9' * 56}... is outside the range of int (-2147483648..2147483647)"),
        (_HUGE + ".0", "tinyint", f"{'9' * 57}... is outside the range of tinyint (-128..127)"),
        ("1e999999999", "bigint", "1e999999999 is outside the range of bigint"),
        ("9" * 10000, "decimal(38,4)", f"{'9' * 57}... does not fit decimal(38,4) (at most 34 digits before the point)"),
        ("9" * 10000 + ".5", "decimal(10,2)", f"{'9' * 57}... does not fit decimal(10,2) (at most 8 digits"),
        ("1e999999999", "decimal(38,0)", "1e999999999 does not fit decimal(38,0) (at most 38 digits before the point)"),
    ],
)
def test_numbers_of_thousands_of_digits_are_refused_with_the_limit(text: str, hive_type: str, message: str) -> None:
    with pytest.raises(ConversionError) as info:
        from_text(text, parse_hive_type(hive_type))
    assert str(info.value).startswith(message), str(info.value)
    assert len(str(info.value)) < 200


def test_long_but_fitting_numbers_still_convert() -> None:
    assert from_text("0" * 5000 + "42", parse_hive_type("int")) == 42
    assert from_text("1." + "0" * 10000, parse_hive_type("decimal(5,2)")) == Decimal("1.00")
    assert from_text("0." + "0" * 10000 + "1", parse_hive_type("decimal(5,2)")) == Decimal("0.00")


def test_partition_value_of_thousands_of_digits() -> None:
    with pytest.raises(ConversionError, match=r"is outside the range of int \(-2147483648\.\.2147483647\)"):
        partition_value_text(lit(LiteralKind.INTEGER, _HUGE), parse_hive_type("int"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("array<" * 101 + "int" + ">" * 101, "types nested more than 100 levels deep are not supported at character 607"),
        ("struct<a:" * 3000 + "int" + ">" * 3000, "types nested more than 100 levels deep are not supported"),
        ("decimal(" + "9" * 5000 + ")", "a 5000-digit number is too large (at most 18 digits) at character 9"),
    ],
)
def test_stored_type_strings_past_the_limits(text: str, message: str) -> None:
    with pytest.raises(HiveTypeError) as info:
        parse_hive_type(text)
    assert message in str(info.value)
    assert len(str(info.value)) < 200  # the type string is quoted by its start only


def test_stored_type_strings_nested_to_the_limit() -> None:
    text = "array<" * 100 + "int" + ">" * 100
    assert str(parse_hive_type(text)) == text


def test_stored_type_sizes_with_leading_zeros() -> None:
    assert str(parse_hive_type(f"decimal({'0' * 5000}12,{'0' * 5000}2)")) == "decimal(12,2)"


_DIGITS = st.integers(min_value=1, max_value=12_000).map(lambda n: "9" * n)


@settings(max_examples=60, deadline=None)
@given(
    sign=st.sampled_from(["", "-", "+"]),
    whole=_DIGITS,
    fraction=st.one_of(st.just(""), _DIGITS.map(lambda d: "." + d)),
    exponent=st.sampled_from(["", "e5", "e-5", "E999999999", "e-999999999"]),
    hive_type=st.sampled_from(["tinyint", "int", "bigint", "decimal(38,4)", "decimal(5,0)", "double", "float",
                               "date", "boolean"]),
)
def test_fuzz_numbers_of_any_length_convert_or_fail_in_one_short_line(
    sign: str, whole: str, fraction: str, exponent: str, hive_type: str
) -> None:
    """Numbers up to 12,000 digits with any exponent: a value, or a ConversionError of one short line."""
    text = sign + whole + fraction + exponent
    kind = LiteralKind.INTEGER if not fraction and not exponent else LiteralKind.DECIMAL
    try:
        from_text(text, parse_hive_type(hive_type))
        from_literal(lit(kind, text), parse_hive_type(hive_type))
    except ConversionError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 200, str(exc)
