"""Column statistics the writer keeps, with ORC Java's update, merge and serialisation rules.

One accumulator per column and level (row group, stripe, file). Row-group statistics are computed from the
values (vectorised, in ``column_writers``); stripe statistics are the row groups merged in order and file
statistics the stripes merged in order, exactly as ``ColumnStatisticsImpl.merge`` does, including its quirks:

* integer sums are dropped once a running sum overflows a signed 64-bit long (``Math.addExact``);
* double min/max keep a NaN that came first, and the sum is a plain left-to-right double sum;
* strings compare as unsigned UTF-8 bytes; values over 1024 bytes give a lower/upper *bound* instead of a
  minimum/maximum (the cut at a character start, the upper bound's last character incremented);
* decimals with precision <= 18 are kept as longs at the column scale and drop the sum past 18 digits, and a
  merge into an empty accumulator copies the other's sum but not its "sum dropped" flag (Java does the same);
  wider decimals round sums to 38 digits as HiveDecimal does and drop them past 38 integer digits;
* timestamps keep UTC milliseconds plus the sub-millisecond nanos of the minimum and maximum.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Context, Decimal, localcontext
from typing import Self

from ._proto import orc_proto_pb2 as pb
from ._statistics import decimal_to_text
from ._types import Category, TypeDescription

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
MAX_DECIMAL64 = 999_999_999_999_999_999
MAX_STRING_BYTES_RECORDED = 1024
MAX_DECIMAL64_PRECISION = 18


class ColumnStats:
    """Counts every column has: non-null values, whether a null was seen, and bytes on disk (stripe/file)."""

    __slots__ = ("bytes_on_disk", "count", "has_null")

    def __init__(self) -> None:
        self.count = 0
        self.has_null = False
        self.bytes_on_disk = 0

    def merge(self, other: Self) -> None:
        """Fold ``other`` into this one (Java ``ColumnStatisticsImpl.merge``)."""
        self.count += other.count
        self.has_null |= other.has_null
        self.bytes_on_disk += other.bytes_on_disk

    def to_proto(self) -> pb.ColumnStatistics:
        """The ``ColumnStatistics`` message Java's ``serialize()`` would produce."""
        msg = pb.ColumnStatistics(number_of_values=self.count, has_null=self.has_null)
        if self.bytes_on_disk != 0:
            msg.bytes_on_disk = self.bytes_on_disk
        return msg


class BooleanStats(ColumnStats):
    """boolean: true count in ``bucket_statistics``."""

    __slots__ = ("true_count",)

    def __init__(self) -> None:
        super().__init__()
        self.true_count = 0

    def merge(self, other: Self) -> None:
        self.true_count += other.true_count
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        msg.bucket_statistics.count.append(self.true_count)
        return msg


class IntegerStats(ColumnStats):
    """tinyint..bigint: min, max, and a sum that is dropped once it overflows."""

    __slots__ = ("has_minimum", "maximum", "minimum", "overflow", "sum")

    def __init__(self) -> None:
        super().__init__()
        self.has_minimum = False
        self.minimum = INT64_MAX
        self.maximum = INT64_MIN
        self.sum = 0
        self.overflow = False

    def merge(self, other: Self) -> None:
        if not self.has_minimum:
            self.has_minimum = other.has_minimum
            self.minimum = other.minimum
            self.maximum = other.maximum
        elif other.has_minimum:
            self.minimum = min(self.minimum, other.minimum)
            self.maximum = max(self.maximum, other.maximum)
        self.overflow |= other.overflow
        if not self.overflow:
            total = self.sum + other.sum
            if INT64_MIN <= total <= INT64_MAX:
                self.sum = total
            else:
                self.overflow = True
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        sub = msg.int_statistics
        sub.SetInParent()
        if self.has_minimum:
            sub.minimum = self.minimum
            sub.maximum = self.maximum
        if not self.overflow:
            sub.sum = self.sum
        return msg


class DoubleStats(ColumnStats):
    """float and double: min, max (NaN sticks when it came first) and a double sum."""

    __slots__ = ("has_minimum", "maximum", "minimum", "sum")

    def __init__(self) -> None:
        super().__init__()
        self.has_minimum = False
        self.minimum = 1.7976931348623157e308
        self.maximum = 5e-324
        self.sum = 0.0

    def merge(self, other: Self) -> None:
        if not self.has_minimum:
            self.has_minimum = other.has_minimum
            self.minimum = other.minimum
            self.maximum = other.maximum
        elif other.has_minimum:
            # plain comparisons, so a NaN on either side never replaces (or is replaced), as in Java
            if other.minimum < self.minimum:
                self.minimum = other.minimum
            if other.maximum > self.maximum:
                self.maximum = other.maximum
        self.sum += other.sum
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        sub = msg.double_statistics
        sub.SetInParent()
        if self.has_minimum:
            sub.minimum = self.minimum
            sub.maximum = self.maximum
        sub.sum = self.sum
        return msg


def _is_start_byte(b: int) -> bool:
    return (b & 0xC0) != 0x80


def _last_char_start(data: bytes, until: int) -> int:
    pos = until
    while pos >= 0:
        if _is_start_byte(data[pos]):
            return pos
        pos -= 1
    raise ValueError("no UTF-8 character start found")


def _java_code_point_bytes(cp: int) -> bytes:
    """UTF-8 bytes as Java's ``StringStatisticsImpl.appendCodePoint`` writes them (its bounds are < and <)."""
    if cp < 0x7F:
        return bytes([cp])
    if cp <= 0x7FF:
        return bytes([0xC0 | (cp >> 6), 0x80 | (cp & 0x3F)])
    if cp < 0xFFFF:
        return bytes([0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F)])
    return bytes([0xF0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3F), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F)])


def string_lower_bound(value: bytes) -> bytes:
    """Java ``truncateLowerBound``: the prefix before the character that holds byte 1024."""
    return value[: _last_char_start(value, MAX_STRING_BYTES_RECORDED)]


def string_upper_bound(value: bytes) -> bytes:
    """Java ``truncateUpperBound``: the prefix before the last whole character, then that character + 1."""
    following = _last_char_start(value, MAX_STRING_BYTES_RECORDED)
    last = _last_char_start(value, following - 1)
    cp = ord(value[last:following].decode("utf-8", "replace")[0])
    return value[:last] + _java_code_point_bytes(cp + 1)


def _text(value: bytes) -> str:
    # Hadoop Text.toString(): malformed UTF-8 becomes U+FFFD
    return value.decode("utf-8", "replace")


class StringStats(ColumnStats):
    """string, char, varchar: byte-wise min/max (or bounds for values over 1024 bytes) and total length."""

    __slots__ = ("lower_is_bound", "maximum", "minimum", "sum", "upper_is_bound")

    def __init__(self) -> None:
        super().__init__()
        self.minimum: bytes | None = None
        self.maximum: bytes | None = None
        self.lower_is_bound = False
        self.upper_is_bound = False
        self.sum = 0

    def set_extremes(self, minimum: bytes, maximum: bytes) -> None:
        """Record a group's smallest and largest value, applying the 1024-byte bound rule."""
        if len(minimum) > MAX_STRING_BYTES_RECORDED:
            self.minimum, self.lower_is_bound = string_lower_bound(minimum), True
        else:
            self.minimum, self.lower_is_bound = minimum, False
        if len(maximum) > MAX_STRING_BYTES_RECORDED:
            self.maximum, self.upper_is_bound = string_upper_bound(maximum), True
        else:
            self.maximum, self.upper_is_bound = maximum, False

    def merge(self, other: Self) -> None:
        if self.count == 0:
            if other.count != 0:
                self.minimum, self.lower_is_bound = other.minimum, other.lower_is_bound
                self.maximum, self.upper_is_bound = other.maximum, other.upper_is_bound
            else:
                self.minimum = self.maximum = None
                self.lower_is_bound = self.upper_is_bound = False
        elif other.count != 0:
            assert self.minimum is not None and other.minimum is not None
            assert self.maximum is not None and other.maximum is not None
            if self.minimum > other.minimum:
                self.minimum, self.lower_is_bound = other.minimum, other.lower_is_bound
            if self.maximum < other.maximum:
                self.maximum, self.upper_is_bound = other.maximum, other.upper_is_bound
        self.sum += other.sum
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        sub = msg.string_statistics
        sub.SetInParent()
        if self.count != 0 and self.minimum is not None and self.maximum is not None:
            if self.lower_is_bound:
                sub.lower_bound = _text(self.minimum)
            else:
                sub.minimum = _text(self.minimum)
            if self.upper_is_bound:
                sub.upper_bound = _text(self.maximum)
            else:
                sub.maximum = _text(self.maximum)
            sub.sum = self.sum
        return msg


class BinaryStats(ColumnStats):
    """binary: total length."""

    __slots__ = ("sum",)

    def __init__(self) -> None:
        super().__init__()
        self.sum = 0

    def merge(self, other: Self) -> None:
        self.sum += other.sum
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        msg.binary_statistics.sum = self.sum
        return msg


#: wide enough that no 38-digit decimal is ever rounded by the context
WIDE_DECIMALS = Context(prec=200)


def unscaled_decimal(unscaled: int, scale: int) -> Decimal:
    """The decimal ``unscaled * 10**-scale``, exactly."""
    return Decimal(unscaled).scaleb(-scale, WIDE_DECIMALS)


def _decimal_text(unscaled: int, scale: int) -> str:
    return decimal_to_text(unscaled_decimal(unscaled, scale))


class Decimal64Stats(ColumnStats):
    """decimal with precision <= 18 (Java ``Decimal64StatisticsImpl``): longs at the column scale."""

    __slots__ = ("has_sum", "maximum", "minimum", "scale", "sum")

    def __init__(self, scale: int) -> None:
        super().__init__()
        self.scale = scale
        self.minimum = INT64_MAX
        self.maximum = INT64_MIN
        self.has_sum = True
        self.sum = 0

    def merge(self, other: Self) -> None:
        if self.count == 0:
            # Java copies min, max and sum but leaves has_sum as it was
            self.minimum, self.maximum, self.sum = other.minimum, other.maximum, other.sum
        else:
            self.minimum = min(self.minimum, other.minimum)
            self.maximum = max(self.maximum, other.maximum)
            if self.has_sum and other.has_sum:
                self.sum += other.sum
                self.has_sum = -MAX_DECIMAL64 <= self.sum <= MAX_DECIMAL64
            else:
                self.has_sum = False
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        sub = msg.decimal_statistics
        sub.SetInParent()
        if self.count != 0:
            sub.minimum = _decimal_text(self.minimum, self.scale)
            sub.maximum = _decimal_text(self.maximum, self.scale)
        if self.has_sum:
            sub.sum = _decimal_text(self.sum, self.scale)
        return msg


def hive_decimal_add(total: Decimal, value: Decimal) -> Decimal | None:
    """``HiveDecimalWritable.mutateAdd``: exact sum rounded (half up) to 38 digits; None past 38 integer digits."""
    with localcontext() as ctx:
        ctx.prec = 200
        exact = total + value
        if exact == 0:
            return Decimal(0)
        int_digits = max(0, exact.adjusted() + 1)
        if int_digits > 38:
            return None
        exponent = exact.as_tuple().exponent
        assert isinstance(exponent, int)  # "n"/"N"/"F" only for NaN and infinity; a sum of finite decimals is finite
        frac_digits = max(0, -exponent)
        if int_digits + frac_digits > 38:
            exact = exact.quantize(Decimal(1).scaleb(-(38 - int_digits)), rounding=ROUND_HALF_UP)
            if max(0, exact.adjusted() + 1) > 38:
                return None
        return exact


class DecimalStats(ColumnStats):
    """decimal with precision > 18 (Java ``DecimalStatisticsImpl`` over HiveDecimalWritable)."""

    __slots__ = ("maximum", "minimum", "sum")

    def __init__(self) -> None:
        super().__init__()
        self.minimum: Decimal | None = None
        self.maximum: Decimal | None = None
        self.sum: Decimal | None = Decimal(0)

    def merge(self, other: Self) -> None:
        if self.minimum is None:
            self.minimum, self.maximum, self.sum = other.minimum, other.maximum, other.sum
        elif other.minimum is not None:
            assert self.maximum is not None and other.maximum is not None
            self.minimum = min(self.minimum, other.minimum)
            self.maximum = max(self.maximum, other.maximum)
            if self.sum is None or other.sum is None:
                self.sum = None
            else:
                self.sum = hive_decimal_add(self.sum, other.sum)
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        sub = msg.decimal_statistics
        sub.SetInParent()
        if self.count != 0 and self.minimum is not None and self.maximum is not None:
            sub.minimum = decimal_to_text(self.minimum)
            sub.maximum = decimal_to_text(self.maximum)
        if self.sum is not None:
            sub.sum = decimal_to_text(self.sum)
        return msg


class DateStats(ColumnStats):
    """date: min and max days."""

    __slots__ = ("maximum", "minimum")

    def __init__(self) -> None:
        super().__init__()
        self.minimum = 2**31 - 1
        self.maximum = -(2**31)

    def merge(self, other: Self) -> None:
        self.minimum = min(self.minimum, other.minimum)
        self.maximum = max(self.maximum, other.maximum)
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        sub = msg.date_statistics
        sub.SetInParent()
        if self.count != 0:
            sub.minimum = self.minimum
            sub.maximum = self.maximum
        return msg


class TimestampStats(ColumnStats):
    """timestamp and timestamp with local time zone: UTC millis of min/max plus their sub-millisecond nanos."""

    __slots__ = ("max_nanos", "maximum", "min_nanos", "minimum")

    def __init__(self) -> None:
        super().__init__()
        self.minimum = INT64_MAX
        self.maximum = INT64_MIN
        self.min_nanos = 0
        self.max_nanos = 999_999

    def merge(self, other: Self) -> None:
        if self.count == 0:
            if other.count != 0:
                self.minimum, self.maximum = other.minimum, other.maximum
                self.min_nanos, self.max_nanos = other.min_nanos, other.max_nanos
        elif other.count != 0:
            if self.minimum >= other.minimum:
                if self.minimum > other.minimum or self.min_nanos > other.min_nanos:
                    self.min_nanos = other.min_nanos
                self.minimum = other.minimum
            if self.maximum <= other.maximum:
                if self.maximum < other.maximum or self.max_nanos < other.max_nanos:
                    self.max_nanos = other.max_nanos
                self.maximum = other.maximum
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        sub = msg.timestamp_statistics
        sub.SetInParent()
        if self.count != 0:
            sub.minimum_utc = self.minimum
            sub.maximum_utc = self.maximum
            if self.min_nanos != 0:
                sub.minimum_nanos = self.min_nanos + 1
            if self.max_nanos != 999_999:
                sub.maximum_nanos = self.max_nanos + 1
        return msg


class CollectionStats(ColumnStats):
    """array and map: min, max and total number of children per non-null value."""

    __slots__ = ("maximum", "minimum", "sum")

    def __init__(self) -> None:
        super().__init__()
        self.minimum = INT64_MAX
        self.maximum = 0
        self.sum = 0

    def merge(self, other: Self) -> None:
        if self.count == 0:
            self.minimum, self.maximum = other.minimum, other.maximum
        else:
            self.minimum = min(self.minimum, other.minimum)
            self.maximum = max(self.maximum, other.maximum)
        self.sum += other.sum
        super().merge(other)

    def to_proto(self) -> pb.ColumnStatistics:
        msg = super().to_proto()
        sub = msg.collection_statistics
        sub.SetInParent()
        if self.count != 0:
            sub.min_children = self.minimum
            sub.max_children = self.maximum
        if self.sum != 0:
            sub.total_children = self.sum
        return msg


def new_stats(column_type: TypeDescription) -> ColumnStats:
    """An empty accumulator of the kind ORC Java uses for this column type."""
    c = column_type.category
    if c == Category.BOOLEAN:
        return BooleanStats()
    if c in (Category.BYTE, Category.SHORT, Category.INT, Category.LONG):
        return IntegerStats()
    if c in (Category.FLOAT, Category.DOUBLE):
        return DoubleStats()
    if c in (Category.STRING, Category.CHAR, Category.VARCHAR):
        return StringStats()
    if c == Category.BINARY:
        return BinaryStats()
    if c == Category.DECIMAL:
        if (column_type.precision or 0) <= MAX_DECIMAL64_PRECISION:
            return Decimal64Stats(column_type.scale or 0)
        return DecimalStats()
    if c == Category.DATE:
        return DateStats()
    if c in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
        return TimestampStats()
    if c in (Category.LIST, Category.MAP):
        return CollectionStats()
    return ColumnStats()


def merged(column_type: TypeDescription, parts: list[ColumnStats]) -> ColumnStats:
    """A fresh accumulator with ``parts`` merged into it in order (stripe from row groups, file from stripes)."""
    total = new_stats(column_type)
    for part in parts:
        total.merge(part)
    return total
