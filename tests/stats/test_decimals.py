"""Hive decimal types and the (unscaled bytes, scale) form of decimal statistics."""

from __future__ import annotations

from decimal import Decimal

import pytest

from metastore.errors import InvalidInput
from metastore.stats.decimals import DecimalType, decimal_from_unscaled, decimal_type_of, fit_decimal


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("decimal(38,4)", DecimalType(38, 4)),
        ("DECIMAL( 12 , 3 )", DecimalType(12, 3)),
        ("decimal", DecimalType(10, 0)),
        ("decimal(7)", DecimalType(7, 0)),
        ("numeric(5,5)", DecimalType(5, 5)),
        ("decimal(3,4)", None),
        ("double", None),
        ("decimal(10,2", None),
    ],
)
def test_decimal_type_of(text: str, expected: DecimalType | None) -> None:
    assert decimal_type_of(text) == expected


def test_unscaled_bytes_and_scale() -> None:
    assert decimal_from_unscaled(b"\x30\x39", 2, where="column 'd'", name="lowValue") == Decimal("123.45")
    assert decimal_from_unscaled(b"\xff", 0, where="column 'd'", name="lowValue") == Decimal(-1)
    value = decimal_from_unscaled((10**40).to_bytes(17, "big", signed=True), 3, where="c", name="v")
    assert value == Decimal(10**37) and len(value.as_tuple().digits) == 41  # exact beyond 28 digits


def test_empty_unscaled_and_negative_scale_are_refused() -> None:
    with pytest.raises(InvalidInput, match=r"^column 'd': lowValue has an empty unscaled value \(scale 2\)$"):
        decimal_from_unscaled(b"", 2, where="column 'd'", name="lowValue")
    with pytest.raises(InvalidInput, match=r"^column 'd': highValue has a negative scale -3; Hive decimal scales"):
        decimal_from_unscaled(b"\x01", -3, where="column 'd'", name="highValue")
    with pytest.raises(InvalidInput, match=r"highValue needs both 'unscaled' and 'scale'"):
        decimal_from_unscaled(b"\x01", None, where="column 'd'", name="highValue")


def test_fit_keeps_fitting_values_and_refuses_others() -> None:
    t = DecimalType(6, 2)
    assert fit_decimal(Decimal("1234.5600"), t, where="w", name="n").as_tuple() == Decimal("1234.56").as_tuple()
    assert fit_decimal(Decimal("-0.0000"), t, where="w", name="n").as_tuple() == Decimal("0.00").as_tuple()
    # past the declared precision but a Hive decimal at the column's scale: kept, as Hive keeps it
    assert fit_decimal(Decimal("12345.6"), t, where="w", name="n") == Decimal("12345.6")
    with pytest.raises(InvalidInput, match=r"^w: n 1E\+36 has 37 digits before the decimal point; .* at most 36$"):
        fit_decimal(Decimal("1E+36"), t, where="w", name="n")
    with pytest.raises(InvalidInput, match="must be a finite decimal"):
        fit_decimal(Decimal("Infinity"), t, where="w", name="n")
