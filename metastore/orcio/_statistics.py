"""Typed ORC column statistics (file, stripe and row-group level) and their proto form.

:func:`statistics_from_proto` turns an ``orc.proto.ColumnStatistics`` into one of the frozen classes below, picked
by the column's type when it is known (else by whichever sub-message is present); ``_to_proto()`` on every class
gives the message back, so the writer can build the typed value and serialise it.

Conventions, all as ORC Java reads them:
- ``number_of_values`` counts non-null values; ``has_null`` defaults to True when a writer left it out.
- A statistic that the writer did not record (or that overflowed, e.g. an integer ``sum``) is ``None``.
- Strings: ``minimum``/``maximum`` are exact values; a writer that cut long values stores only
  ``lower_bound``/``upper_bound`` (a prefix at most the real min, a value at least the real max). ``lower``/
  ``upper`` give whichever is known. Strings that are not valid UTF-8 come back as ``bytes``.
- Decimals are :class:`decimal.Decimal`; dates are days since 1970-01-01; timestamps are UTC epoch milliseconds
  plus the sub-millisecond nanoseconds (0..999,999) of the minimum and maximum.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from ._errors import OrcError
from ._proto import orc_proto_pb2 as pb
from ._types import Category, TypeDescription

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class ColumnStatistics:
    """Statistics every column has (struct, union, and any column whose typed part is missing)."""

    number_of_values: int = 0
    has_null: bool = True
    bytes_on_disk: int | None = None
    #: False when the writer left ``numberOfValues`` out (``number_of_values`` is then 0 and means unknown).
    #: Keyword-only and left out of equality so it neither shifts the subclasses' positional fields nor makes
    #: two readings of the same counts differ.
    values_counted: bool = field(default=True, compare=False, kw_only=True)

    kind = "generic"

    def _base_proto(self) -> pb.ColumnStatistics:
        msg = pb.ColumnStatistics(number_of_values=self.number_of_values, has_null=self.has_null)
        if self.bytes_on_disk is not None:
            msg.bytes_on_disk = self.bytes_on_disk
        return msg

    def _to_proto(self) -> pb.ColumnStatistics:
        """The ``orc.proto.ColumnStatistics`` message (orcio-internal: proto types stay out of the public API)."""
        return self._base_proto()

    def _typed_proto(self, sub_message: str, **fields: object) -> pb.ColumnStatistics:
        """The base message with its ``sub_message`` present (even when empty, as Java writes it) and each of
        ``fields`` that is not None set on it."""
        msg = self._base_proto()
        sub = getattr(msg, sub_message)
        sub.SetInParent()
        for name, value in fields.items():
            if value is not None:
                setattr(sub, name, value)
        return msg


@dataclass(frozen=True)
class IntegerStatistics(ColumnStatistics):
    """tinyint, smallint, int, bigint. ``sum`` is None when it overflowed a signed 64-bit long."""

    minimum: int | None = None
    maximum: int | None = None
    sum: int | None = None

    kind = "integer"

    def _to_proto(self) -> pb.ColumnStatistics:
        return self._typed_proto("int_statistics", minimum=self.minimum, maximum=self.maximum, sum=self.sum)


@dataclass(frozen=True)
class DoubleStatistics(ColumnStatistics):
    """float and double (floats widened to double)."""

    minimum: float | None = None
    maximum: float | None = None
    sum: float | None = None

    kind = "double"

    def _to_proto(self) -> pb.ColumnStatistics:
        return self._typed_proto(
            "double_statistics", minimum=self.minimum, maximum=self.maximum, sum=self.sum
        )


@dataclass(frozen=True)
class StringStatistics(ColumnStatistics):
    """string, char, varchar. ``total_length`` is the sum of the values' UTF-8 byte lengths."""

    minimum: str | bytes | None = None
    maximum: str | bytes | None = None
    total_length: int | None = None
    lower_bound: str | bytes | None = None
    upper_bound: str | bytes | None = None

    kind = "string"

    @property
    def lower(self) -> str | bytes | None:
        """The exact minimum when known, else the lower bound."""
        return self.minimum if self.minimum is not None else self.lower_bound

    @property
    def upper(self) -> str | bytes | None:
        """The exact maximum when known, else the upper bound."""
        return self.maximum if self.maximum is not None else self.upper_bound

    def _to_proto(self) -> pb.ColumnStatistics:
        names = ("minimum", "maximum", "lower_bound", "upper_bound")
        texts = {name: _text(getattr(self, name)) for name in names}
        return self._typed_proto("string_statistics", sum=self.total_length, **texts)


@dataclass(frozen=True)
class BooleanStatistics(ColumnStatistics):
    """boolean: how many non-null values are true."""

    true_count: int | None = None

    kind = "boolean"

    @property
    def false_count(self) -> int | None:
        """Non-null values that are false."""
        return None if self.true_count is None else self.number_of_values - self.true_count

    def _to_proto(self) -> pb.ColumnStatistics:
        msg = self._typed_proto("bucket_statistics")
        if self.true_count is not None:  # a repeated field: appended, not set
            msg.bucket_statistics.count.append(self.true_count)
        return msg


@dataclass(frozen=True)
class DecimalStatistics(ColumnStatistics):
    """decimal. ``sum`` is None when it overflowed 38 digits."""

    minimum: Decimal | None = None
    maximum: Decimal | None = None
    sum: Decimal | None = None

    kind = "decimal"

    def _to_proto(self) -> pb.ColumnStatistics:
        values = {"minimum": self.minimum, "maximum": self.maximum, "sum": self.sum}
        texts = {name: None if v is None else decimal_to_text(v) for name, v in values.items()}
        return self._typed_proto("decimal_statistics", **texts)


@dataclass(frozen=True)
class DateStatistics(ColumnStatistics):
    """date, as days since 1970-01-01 (in the file's calendar, see the reader)."""

    minimum: int | None = None
    maximum: int | None = None

    kind = "date"

    @property
    def minimum_date(self) -> dt.date | None:
        """The minimum as a (proleptic Gregorian) ``datetime.date``."""
        return None if self.minimum is None else _EPOCH_DATE + dt.timedelta(days=self.minimum)

    @property
    def maximum_date(self) -> dt.date | None:
        """The maximum as a (proleptic Gregorian) ``datetime.date``."""
        return None if self.maximum is None else _EPOCH_DATE + dt.timedelta(days=self.maximum)

    def _to_proto(self) -> pb.ColumnStatistics:
        return self._typed_proto("date_statistics", minimum=self.minimum, maximum=self.maximum)


@dataclass(frozen=True)
class TimestampStatistics(ColumnStatistics):
    """timestamp and timestamp with local time zone.

    ``minimum``/``maximum`` are UTC epoch milliseconds (floor), ``minimum_nanos``/``maximum_nanos`` the
    nanoseconds inside that millisecond (0 and 999,999 when the writer did not record them).
    ``minimum_local``/``maximum_local`` are the pre-ORC-135 writer-local milliseconds, kept as found.
    """

    minimum: int | None = None
    maximum: int | None = None
    minimum_nanos: int = 0
    maximum_nanos: int = 999_999
    minimum_local: int | None = None
    maximum_local: int | None = None

    kind = "timestamp"

    @property
    def minimum_epoch_nanos(self) -> int | None:
        """The minimum as nanoseconds since the UTC epoch."""
        return None if self.minimum is None else self.minimum * 1_000_000 + self.minimum_nanos

    @property
    def maximum_epoch_nanos(self) -> int | None:
        """The maximum as nanoseconds since the UTC epoch."""
        return None if self.maximum is None else self.maximum * 1_000_000 + self.maximum_nanos

    @property
    def minimum_datetime(self) -> dt.datetime | None:
        """The minimum as an aware UTC ``datetime`` (microsecond precision, truncated)."""
        n = self.minimum_epoch_nanos
        return None if n is None else _EPOCH + dt.timedelta(microseconds=n // 1000)

    @property
    def maximum_datetime(self) -> dt.datetime | None:
        """The maximum as an aware UTC ``datetime`` (microsecond precision, truncated)."""
        n = self.maximum_epoch_nanos
        return None if n is None else _EPOCH + dt.timedelta(microseconds=n // 1000)

    def _to_proto(self) -> pb.ColumnStatistics:
        # nanos are stored plus one, and only when not the default (so files stay byte-identical to Java's)
        min_nanos = self.minimum_nanos + 1 if self.minimum is not None and self.minimum_nanos != 0 else None
        max_nanos = self.maximum_nanos + 1 if self.maximum is not None and self.maximum_nanos != 999_999 else None
        return self._typed_proto(
            "timestamp_statistics",
            minimum_utc=self.minimum,
            maximum_utc=self.maximum,
            minimum=self.minimum_local,
            maximum=self.maximum_local,
            minimum_nanos=min_nanos,
            maximum_nanos=max_nanos,
        )


@dataclass(frozen=True)
class BinaryStatistics(ColumnStatistics):
    """binary: the total length in bytes."""

    total_length: int | None = None

    kind = "binary"

    def _to_proto(self) -> pb.ColumnStatistics:
        return self._typed_proto("binary_statistics", sum=self.total_length)


@dataclass(frozen=True)
class CollectionStatistics(ColumnStatistics):
    """array and map: child counts per non-null value."""

    min_children: int | None = None
    max_children: int | None = None
    total_children: int | None = None

    kind = "collection"

    def _to_proto(self) -> pb.ColumnStatistics:
        return self._typed_proto(
            "collection_statistics",
            min_children=self.min_children,
            max_children=self.max_children,
            total_children=self.total_children,
        )


# ---------------------------------------------------------------------------------------------------------


def _text(value: str | bytes | None) -> str | None:
    """A string statistic for the proto's string fields (bytes that are not UTF-8 replaced, as Java would)."""
    return value if value is None or isinstance(value, str) else value.decode("utf-8", "replace")


def decimal_to_text(value: Decimal) -> str:
    """ORC's decimal statistics text: plain notation, trailing fraction zeros trimmed (``5.5``, ``0``)."""
    if not value.is_finite():
        raise OrcError(f"decimal statistic {value} is not finite")
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text


def _decimal(text: str | bytes, what: str) -> Decimal:
    try:
        value = Decimal(text.decode("ascii") if isinstance(text, bytes) else text)
    except (InvalidOperation, UnicodeDecodeError, ValueError):
        raise OrcError(f"decimal statistic {what} is not a number: {text!r}") from None
    if not value.is_finite():
        raise OrcError(f"decimal statistic {what} is not finite: {text!r}")
    return value


def _opt(sub: Any, name: str) -> Any:  # Any: one helper reads fields of every statistics sub-message
    return getattr(sub, name) if sub.HasField(name) else None


_CATEGORY_KIND = {
    Category.BOOLEAN: "boolean",
    Category.BYTE: "integer",
    Category.SHORT: "integer",
    Category.INT: "integer",
    Category.LONG: "integer",
    Category.FLOAT: "double",
    Category.DOUBLE: "double",
    Category.STRING: "string",
    Category.CHAR: "string",
    Category.VARCHAR: "string",
    Category.BINARY: "binary",
    Category.DECIMAL: "decimal",
    Category.DATE: "date",
    Category.TIMESTAMP: "timestamp",
    Category.TIMESTAMP_INSTANT: "timestamp",
    Category.LIST: "collection",
    Category.MAP: "collection",
    Category.STRUCT: "generic",
    Category.UNION: "generic",
}

_FIELD_KIND = (
    ("int_statistics", "integer"),
    ("double_statistics", "double"),
    ("string_statistics", "string"),
    ("bucket_statistics", "boolean"),
    ("decimal_statistics", "decimal"),
    ("date_statistics", "date"),
    ("timestamp_statistics", "timestamp"),
    ("binary_statistics", "binary"),
    ("collection_statistics", "collection"),
)
_KIND_FIELD = {kind: name for name, kind in _FIELD_KIND}


def statistics_kind(column_type: TypeDescription | Category) -> str:
    """The statistics kind (``integer``, ``string``...) a column of this type has."""
    category = column_type.category if isinstance(column_type, TypeDescription) else column_type
    return _CATEGORY_KIND[category]


def statistics_from_proto(
    msg: pb.ColumnStatistics, column_type: TypeDescription | Category | None = None
) -> ColumnStatistics:
    """Typed statistics from an ``orc.proto.ColumnStatistics`` (by column type if given, else by content)."""
    if column_type is not None:
        kind = statistics_kind(column_type)
    else:
        kind = next((k for name, k in _FIELD_KIND if msg.HasField(name)), "generic")
    base: dict[str, Any] = {
        "number_of_values": int(msg.number_of_values),
        "values_counted": msg.HasField("number_of_values"),
        "has_null": bool(msg.has_null) if msg.HasField("has_null") else True,
        "bytes_on_disk": int(msg.bytes_on_disk) if msg.HasField("bytes_on_disk") else None,
    }
    if kind == "generic":
        return ColumnStatistics(**base)
    field_name = _KIND_FIELD[kind]
    if not msg.HasField(field_name):
        # a type-specific part the writer left out: nothing but counts is known
        return _EMPTY_CLASS[kind](**base)
    sub: Any = getattr(msg, field_name)  # Any: the sub-message type depends on the kind
    if kind == "integer":
        return IntegerStatistics(**base, minimum=_opt(sub, "minimum"), maximum=_opt(sub, "maximum"), sum=_opt(sub, "sum"))
    if kind == "double":
        return DoubleStatistics(**base, minimum=_opt(sub, "minimum"), maximum=_opt(sub, "maximum"), sum=_opt(sub, "sum"))
    if kind == "string":
        return StringStatistics(
            **base,
            minimum=_opt(sub, "minimum"),
            maximum=_opt(sub, "maximum"),
            total_length=_opt(sub, "sum"),
            lower_bound=_opt(sub, "lower_bound"),
            upper_bound=_opt(sub, "upper_bound"),
        )
    if kind == "boolean":
        return BooleanStatistics(**base, true_count=int(sub.count[0]) if len(sub.count) else None)
    if kind == "decimal":
        values = [_decimal(getattr(sub, name), name) if sub.HasField(name) else None for name in ("minimum", "maximum", "sum")]
        return DecimalStatistics(**base, minimum=values[0], maximum=values[1], sum=values[2])
    if kind == "date":
        return DateStatistics(**base, minimum=_opt(sub, "minimum"), maximum=_opt(sub, "maximum"))
    if kind == "timestamp":
        min_nanos = int(sub.minimum_nanos) - 1 if sub.HasField("minimum_nanos") else 0
        max_nanos = int(sub.maximum_nanos) - 1 if sub.HasField("maximum_nanos") else 999_999
        if not -999_999 <= min_nanos <= 999_999 or not -999_999 <= max_nanos <= 999_999:
            raise OrcError(f"timestamp statistics nanos out of range: {min_nanos + 1}, {max_nanos + 1}")
        minimum = _opt(sub, "minimum_utc")
        maximum = _opt(sub, "maximum_utc")
        # ORC C++ truncates toward zero, so instants before 1970 can carry negative sub-millisecond nanos
        if min_nanos < 0 and minimum is not None:
            minimum, min_nanos = minimum - 1, min_nanos + 1_000_000
        if max_nanos < 0 and maximum is not None:
            maximum, max_nanos = maximum - 1, max_nanos + 1_000_000
        min_nanos, max_nanos = max(min_nanos, 0), max(max_nanos, 0)
        return TimestampStatistics(
            **base,
            minimum=minimum,
            maximum=maximum,
            minimum_nanos=min_nanos,
            maximum_nanos=max_nanos,
            minimum_local=_opt(sub, "minimum"),
            maximum_local=_opt(sub, "maximum"),
        )
    if kind == "binary":
        return BinaryStatistics(**base, total_length=_opt(sub, "sum"))
    return CollectionStatistics(
        **base,
        min_children=_opt(sub, "min_children"),
        max_children=_opt(sub, "max_children"),
        total_children=_opt(sub, "total_children"),
    )


_EMPTY_CLASS: dict[str, type[ColumnStatistics]] = {
    "integer": IntegerStatistics,
    "double": DoubleStatistics,
    "string": StringStatistics,
    "boolean": BooleanStatistics,
    "decimal": DecimalStatistics,
    "date": DateStatistics,
    "timestamp": TimestampStatistics,
    "binary": BinaryStatistics,
    "collection": CollectionStatistics,
}
