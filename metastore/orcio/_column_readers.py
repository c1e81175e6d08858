"""Per-type column decoding for one stripe (or one row group of it): streams in, :mod:`._vectors` out.

``decode_column(node, count, ctx)`` reads ``count`` slots of column ``node``: first the PRESENT stream (if the
stripe has one) to learn which slots hold values, then that many values from the type's streams. Children of a
struct have slots only where the struct is not null, children of a list/map one slot per element, children of
a union one slot per row carrying their tag. With ``ctx.cursors`` set (row-group reads) every stream starts at the
column's row-index position instead of at its beginning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _rle as rle
from . import _temporal as temporal
from ._compression import DecompressedStream
from ._errors import OrcError
from ._proto import orc_proto_pb2 as pb
from ._streams_in import ENCODING_NAMES, STREAM_KIND_NAMES, PositionCursor, StripeStreams
from ._types import Category, TypeDescription
from ._vectors import (
    BytesVector,
    ColumnVector,
    DecimalVector,
    DictionaryBytesVector,
    DoubleVector,
    ListVector,
    LongVector,
    MapVector,
    StructVector,
    TimestampVector,
    UnionVector,
)

PRESENT = pb.Stream.PRESENT
DATA = pb.Stream.DATA
LENGTH = pb.Stream.LENGTH
DICTIONARY_DATA = pb.Stream.DICTIONARY_DATA
SECONDARY = pb.Stream.SECONDARY

DIRECT = pb.ColumnEncoding.DIRECT
DICTIONARY = pb.ColumnEncoding.DICTIONARY
DIRECT_V2 = pb.ColumnEncoding.DIRECT_V2
DICTIONARY_V2 = pb.ColumnEncoding.DICTIONARY_V2

_INT_DTYPES = {
    Category.BYTE: np.int8,
    Category.SHORT: np.int16,
    Category.INT: np.int32,
    Category.LONG: np.int64,
}
_POW10 = [10**i for i in range(39)]
_POW10_I64 = np.asarray([10**i for i in range(19)], dtype=np.int64)
_MAX_NANOS = 999_999_999


@dataclass
class ReadContext:
    """Everything column decoding needs about the stripe being read."""

    streams: StripeStreams
    file_name: str
    stripe: int
    decimal64_version: bool = False
    hybrid_calendar: bool = False
    writer_timezone: str = "UTC"
    cursors: dict[int, PositionCursor] | None = None
    dictionaries: dict[int, BytesVector] = field(default_factory=dict)

    def error(self, message: str, column: int, stream: int | None = None) -> OrcError:
        """An OrcError located in this stripe."""
        return OrcError(
            message,
            file=self.file_name,
            stripe=self.stripe,
            column=column,
            stream=None if stream is None else STREAM_KIND_NAMES.get(stream, str(stream)),
        )

    def cursor(self, column: int) -> PositionCursor | None:
        """The column's row-index cursor when reading a row group."""
        if self.cursors is None:
            return None
        cur = self.cursors.get(column)
        if cur is None:
            raise self.error("no row index positions for the column", column)
        return cur


# ------------------------------------------------------------------------------------------------- streams


def _stream(ctx: ReadContext, column: int, kind: int, needed: bool) -> DecompressedStream | None:
    s = ctx.streams.stream(column, kind)
    if s is None and needed:
        raise ctx.error(f"{STREAM_KIND_NAMES.get(kind, kind)} stream not found", column, kind)
    return s


def _rle_version(ctx: ReadContext, node: TypeDescription) -> int:
    kind = ctx.streams.encoding(node.id).kind
    return 2 if kind in (DIRECT_V2, DICTIONARY_V2) else 1


def _check_encoding(ctx: ReadContext, node: TypeDescription, allowed: tuple[int, ...]) -> int:
    kind = int(ctx.streams.encoding(node.id).kind)
    if kind not in allowed:
        raise ctx.error(
            f"{node.category.type_name} column cannot use encoding {ENCODING_NAMES.get(kind, kind)}", node.id
        )
    return kind


def _int_stream(
    ctx: ReadContext, column: int, kind: int, count: int, signed: bool, version: int, *, positioned: bool = True
) -> np.ndarray:
    stream = _stream(ctx, column, kind, needed=count > 0)
    cur = ctx.cursor(column) if positioned else None
    offset = skip = 0
    if cur is not None:
        offset = cur.stream_offset(stream)
        skip = cur.next_value()
    if count == 0:
        return np.zeros(0, np.int64)
    assert stream is not None
    try:
        values, _ = rle.decode_int_rle(stream.data, count + skip, signed, version, offset)
    except OrcError as err:
        raise err.with_context(file=ctx.file_name, stripe=ctx.stripe, column=column,
                               stream=STREAM_KIND_NAMES.get(kind)) from None
    return values[skip:] if skip else values


def _byte_stream(ctx: ReadContext, column: int, kind: int, count: int) -> np.ndarray:
    stream = _stream(ctx, column, kind, needed=count > 0)
    cur = ctx.cursor(column)
    offset = skip = 0
    if cur is not None:
        offset = cur.stream_offset(stream)
        skip = cur.next_value()
    if count == 0:
        return np.zeros(0, np.uint8)
    assert stream is not None
    try:
        values, _ = rle.decode_byte_rle(stream.data, count + skip, offset)
    except OrcError as err:
        raise err.with_context(file=ctx.file_name, stripe=ctx.stripe, column=column,
                               stream=STREAM_KIND_NAMES.get(kind)) from None
    return values[skip:]


def _bool_stream(ctx: ReadContext, column: int, kind: int, count: int, stream: DecompressedStream | None) -> np.ndarray:
    cur = ctx.cursor(column)
    offset = skip = bit = 0
    if cur is not None:
        offset = cur.stream_offset(stream)
        skip = cur.next_value()
        bit = cur.next_value()
        if not 0 <= bit < 8:
            raise ctx.error(f"row index bit offset {bit} is not in 0..7", column, kind)
    if count == 0:
        return np.zeros(0, bool)
    if stream is None:
        raise ctx.error(f"{STREAM_KIND_NAMES.get(kind)} stream not found", column, kind)
    nbytes = (count + bit + 7) >> 3
    try:
        raw, _ = rle.decode_byte_rle(stream.data, nbytes + skip, offset)
    except OrcError as err:
        raise err.with_context(file=ctx.file_name, stripe=ctx.stripe, column=column,
                               stream=STREAM_KIND_NAMES.get(kind)) from None
    bits = np.unpackbits(raw[skip:])
    return bits[bit : bit + count].view(bool)


def _raw_stream(ctx: ReadContext, column: int, kind: int, needed: bool) -> tuple[bytes | memoryview, int]:
    stream = _stream(ctx, column, kind, needed=needed)
    cur = ctx.cursor(column)
    offset = 0
    if cur is not None:
        offset = cur.stream_offset(stream)
    return (b"" if stream is None else stream.data), offset


def _present(ctx: ReadContext, node: TypeDescription, count: int) -> np.ndarray | None:
    stream = ctx.streams.stream(node.id, PRESENT)
    if stream is None:
        return None
    present = _bool_stream(ctx, node.id, PRESENT, count, stream)
    if present.all():
        return None
    return present


# ------------------------------------------------------------------------------------------------- columns


def decode_column(node: TypeDescription, count: int, ctx: ReadContext) -> ColumnVector:
    """Decode ``count`` slots of column ``node`` (see the module docstring)."""
    if count < 0:
        raise ctx.error(f"negative value count {count}", node.id)
    present = _present(ctx, node, count)
    nonnull = count if present is None else int(np.count_nonzero(present))
    reader = _READERS.get(node.category)
    if reader is None:
        raise ctx.error(f"cannot read {node.category.type_name} columns", node.id)
    dense = reader(node, nonnull, ctx)
    if present is None:
        return dense
    return dense.spread(present)


def _read_boolean(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    stream = _stream(ctx, node.id, DATA, needed=n > 0)
    values = _bool_stream(ctx, node.id, DATA, n, stream)
    return LongVector(node, n, None, values)


def _read_byte(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    values = _byte_stream(ctx, node.id, DATA, n).view(np.int8)
    return LongVector(node, n, None, values)


def _read_integer(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    values = _int_stream(ctx, node.id, DATA, n, True, _rle_version(ctx, node))
    dtype = _INT_DTYPES[node.category]
    if dtype is not np.int64:
        values = values.astype(dtype)
    return LongVector(node, n, None, values)


def _read_date(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    values = _int_stream(ctx, node.id, DATA, n, True, _rle_version(ctx, node))
    if ctx.hybrid_calendar:
        values = temporal.hybrid_to_proleptic_days(values)
    return LongVector(node, n, None, values)


def _read_floating(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    width = 4 if node.category == Category.FLOAT else 8
    data, offset = _raw_stream(ctx, node.id, DATA, needed=n > 0)
    end = offset + n * width
    if end > len(data):
        raise ctx.error(f"DATA stream holds {(len(data) - offset) // width} of the {n} values needed", node.id, DATA)
    values = np.frombuffer(data, dtype="<f4" if width == 4 else "<f8", count=n, offset=offset)
    return DoubleVector(node, n, None, values)


def _lengths(ctx: ReadContext, column: int, count: int, version: int, *, positioned: bool = True) -> np.ndarray:
    lengths = _int_stream(ctx, column, LENGTH, count, False, version, positioned=positioned)
    if len(lengths):
        if int(lengths.min()) < 0:
            raise ctx.error("negative length (a value of 2**63 or more) in LENGTH stream", column, LENGTH)
        # the sum must not wrap around int64 (a corrupt length would otherwise pass the size checks)
        if int(lengths.max()) * len(lengths) >= 1 << 62:
            raise ctx.error(f"implausible length {int(lengths.max())} in LENGTH stream", column, LENGTH)
    return lengths


def _offsets_from(lengths: np.ndarray, start: int) -> np.ndarray:
    offsets = np.empty(len(lengths) + 1, dtype=np.int64)
    offsets[0] = start
    np.cumsum(lengths, out=offsets[1:])
    if start:
        offsets[1:] += start
    return offsets


def _read_bytes(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    allowed = (DIRECT, DIRECT_V2) if node.category == Category.BINARY else (DIRECT, DIRECT_V2, DICTIONARY, DICTIONARY_V2)
    kind = _check_encoding(ctx, node, allowed)
    version = 2 if kind in (DIRECT_V2, DICTIONARY_V2) else 1
    if kind in (DICTIONARY, DICTIONARY_V2):
        return _read_dictionary_strings(node, n, ctx, version)
    data, offset = _raw_stream(ctx, node.id, DATA, needed=False)
    lengths = _lengths(ctx, node.id, n, version)
    total = int(lengths.sum()) if n else 0
    if offset + total > len(data):
        raise ctx.error(f"DATA stream holds {len(data) - offset} bytes but the lengths need {total}", node.id, DATA)
    return BytesVector(node, n, None, _offsets_from(lengths, offset), data)


def _dictionary(node: TypeDescription, ctx: ReadContext, version: int) -> BytesVector:
    cached = ctx.dictionaries.get(node.id)
    if cached is not None:
        return cached
    size = int(ctx.streams.encoding(node.id).dictionary_size)
    if size and not ctx.streams.has(node.id, LENGTH):
        raise ctx.error("LENGTH stream not found for the string dictionary", node.id, LENGTH)
    lengths = _lengths(ctx, node.id, size, version, positioned=False)
    blob_stream = _stream(ctx, node.id, DICTIONARY_DATA, needed=False)
    blob = b"" if blob_stream is None else blob_stream.data
    total = int(lengths.sum()) if size else 0
    if total and blob_stream is None:
        raise ctx.error("DICTIONARY_DATA stream not found for the string dictionary", node.id, DICTIONARY_DATA)
    if total > len(blob):
        raise ctx.error(
            f"DICTIONARY_DATA stream holds {len(blob)} bytes but the dictionary lengths need {total}",
            node.id, DICTIONARY_DATA,
        )
    vec = BytesVector(node, size, None, _offsets_from(lengths, 0), blob)
    ctx.dictionaries[node.id] = vec
    return vec


def _read_dictionary_strings(node: TypeDescription, n: int, ctx: ReadContext, version: int) -> ColumnVector:
    # positions exist only for DATA (the ids); the dictionary is read whole from the start of its streams
    ids = _int_stream(ctx, node.id, DATA, n, False, version)
    dictionary = _dictionary(node, ctx, version)
    if n and (int(ids.min()) < 0 or int(ids.max()) >= dictionary.length):
        bad = int(ids.max()) if int(ids.max()) >= dictionary.length else int(ids.min())
        raise ctx.error(f"dictionary id {bad} is outside the dictionary of {dictionary.length} entries", node.id, DATA)
    return DictionaryBytesVector(node, n, None, ids, dictionary)


def _read_decimal(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    version = _rle_version(ctx, node)
    precision = node.precision or 0
    scale = node.scale or 0
    if ctx.decimal64_version and 0 < precision <= 18:
        # ORC UNSTABLE-PRE-2.0 files: unscaled values as signed RLE at the column scale, no SECONDARY
        values = _int_stream(ctx, node.id, DATA, n, True, version)
        return DecimalVector(node, n, None, values, scale)
    data, offset = _raw_stream(ctx, node.id, DATA, needed=n > 0)
    # read the scales first in position order: DATA's position was consumed above, SECONDARY's comes next
    scales = _int_stream(ctx, node.id, SECONDARY, n, True, version)
    ints = _big_varints(ctx, node, data, n, offset)
    if precision == 0:
        return DecimalVector(node, n, None, ints.astype(object), 0, scales)
    if ints.dtype != object:
        fitted = _rescale_int64(ints, scales, scale)
        if fitted is not None:
            return DecimalVector(node, n, None, fitted if precision <= 18 else fitted.astype(object), scale)
        ints = ints.astype(object)
    rescaled = _rescale_objects(ints, scales, scale)
    if precision <= 18 and n and -(2**63) <= min(rescaled) and max(rescaled) < 2**63:
        return DecimalVector(node, n, None, rescaled.astype(np.int64), scale)
    return DecimalVector(node, n, None, rescaled, scale)


def _big_varints(ctx: ReadContext, node: TypeDescription, data: bytes | bytearray | memoryview, n: int, offset: int) -> np.ndarray:
    try:
        return rle.decode_big_varints_array(data, n, offset)[0]
    except OrcError as err:
        raise err.with_context(file=ctx.file_name, stripe=ctx.stripe, column=node.id, stream="DATA") from None


def _rescale(value: int, from_scale: int, to_scale: int) -> int:
    """Bring an unscaled value to another scale; going down truncates toward zero (as ORC C++ does)."""
    if from_scale == to_scale:
        return value
    if to_scale > from_scale:
        diff = to_scale - from_scale
        return value * (_POW10[diff] if diff < len(_POW10) else 10**diff)
    diff = from_scale - to_scale
    if diff >= len(_POW10):
        return 0
    q = abs(value) // _POW10[diff]
    return -q if value < 0 else q


def _rescale_objects(values: np.ndarray, scales: np.ndarray, scale: int) -> np.ndarray:
    """:func:`_rescale` of an object array of Python ints, one numpy operation per distinct scale."""
    diff = scale - scales
    if not diff.any():
        return values
    out = values.copy()
    order = np.argsort(diff, kind="stable")
    sorted_diff = diff[order]
    bounds = np.flatnonzero(np.diff(sorted_diff)) + 1
    for group in np.split(order, bounds):
        d = int(diff[group[0]])
        if d == 0:
            continue
        v = values[group]
        if d > 0:
            out[group] = v * (_POW10[d] if d < len(_POW10) else 10**d)
        elif -d >= len(_POW10):
            out[group] = 0
        else:
            q = np.abs(v) // _POW10[-d]
            out[group] = np.where(v < 0, -q, q)
    return out


def _rescale_int64(values: np.ndarray, scales: np.ndarray, scale: int) -> np.ndarray | None:
    """:func:`_rescale` of int64 values; None when a result would not fit in int64."""
    if not len(scales):
        return values
    fewest, most = int(scales.min()), int(scales.max())
    if fewest == most:
        # one scale for every value (the common case: writers keep the column scale, or Spark's a fixed one)
        shift = scale - fewest
        if shift == 0:
            return values
        if 0 < shift <= 18:
            biggest = max(int(values.max()), -int(values.min())) if len(values) else 0
            if biggest <= np.iinfo(np.int64).max // int(_POW10_I64[shift]):
                return values * _POW10_I64[shift]
    diff = scale - scales
    low, high = scale - most, scale - fewest
    if max(high, -low) > 18:
        return None
    if low >= 0:
        # only scaling up (writers that strip trailing zeros, as Java's HiveDecimal does): one multiply
        biggest = max(int(values.max()), -int(values.min())) if len(values) else 0
        if biggest <= np.iinfo(np.int64).max // int(_POW10_I64[high]):
            return values * _POW10_I64[diff]
    out = values.copy()
    up = diff > 0
    if up.any():
        factor = _POW10_I64[diff[up]]
        limit = np.iinfo(np.int64).max // factor
        if (np.abs(values[up]) > limit).any():
            return None
        out[up] = values[up] * factor
    down = diff < 0
    if down.any():
        factor = _POW10_I64[-diff[down]]
        v = values[down]
        q = np.abs(v) // factor
        out[down] = np.where(v < 0, -q, q)
    return out


#: SECONDARY nanosecond scale from the 3-bit trailing-zeros code (code z > 0 means z + 1 zeros were cut)
_NANO_SCALE = np.asarray([1] + [10 ** (z + 1) for z in range(1, 8)], dtype=np.int64)


def _read_timestamp(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    version = _rle_version(ctx, node)
    seconds = _int_stream(ctx, node.id, DATA, n, True, version)
    encoded = _int_stream(ctx, node.id, SECONDARY, n, False, version)
    if n and not encoded.any():
        # whole seconds only (a common case: no fraction anywhere): the decoded zeros are the nanoseconds
        nanos = encoded
        low_nanos = high_nanos = 0
    else:
        nanos = encoded >> 3
        if n:
            scale = np.take(_NANO_SCALE, encoded & 7)
            nanos *= scale
        # ORC C++ (and so pyarrow) writes the nanoseconds of negative instants negative, truncating toward zero
        low_nanos, high_nanos = (int(nanos.min()), int(nanos.max())) if n else (0, 0)
    if low_nanos < -_MAX_NANOS or high_nanos > _MAX_NANOS:
        raise ctx.error("timestamp nanoseconds out of range in SECONDARY stream", node.id, SECONDARY)
    instant = node.category == Category.TIMESTAMP_INSTANT
    zone = "UTC" if instant else ctx.writer_timezone
    # the decoded arrays are ours: shift them in place
    with np.errstate(over="ignore"):
        seconds += np.int64(temporal.epoch_2015(zone))
    # ORC writers store floor+1 seconds for negative instants with a fraction of a millisecond or more
    if n and int(seconds.min()) < 0 and high_nanos > 999_999:
        seconds -= (seconds < 0) & (nanos > 999_999)
    if low_nanos < 0:
        negative = nanos < 0
        seconds -= negative
        nanos += negative * np.int64(1_000_000_000)
    if not instant and not temporal.is_utc(zone):
        seconds = temporal.wall_clock_seconds(zone, seconds)
    if ctx.hybrid_calendar:
        seconds = temporal.hybrid_to_proleptic_seconds(seconds)
    return TimestampVector(node, n, None, seconds, nanos)


def _read_list(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    lengths = _lengths(ctx, node.id, n, _rle_version(ctx, node))
    total = int(lengths.sum()) if n else 0
    child = decode_column(node.children[0], total, ctx)
    return ListVector(node, n, None, _offsets_from(lengths, 0), child)


def _read_map(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    lengths = _lengths(ctx, node.id, n, _rle_version(ctx, node))
    total = int(lengths.sum()) if n else 0
    keys = decode_column(node.children[0], total, ctx)
    items = decode_column(node.children[1], total, ctx)
    return MapVector(node, n, None, _offsets_from(lengths, 0), keys, items)


def _read_struct(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    children = [decode_column(child, n, ctx) for child in node.children]
    return StructVector(node, n, None, children)


def _read_union(node: TypeDescription, n: int, ctx: ReadContext) -> ColumnVector:
    _check_encoding(ctx, node, (DIRECT, DIRECT_V2))
    tags = _byte_stream(ctx, node.id, DATA, n)
    k = len(node.children)
    if n and int(tags.max()) >= k:
        raise ctx.error(f"union tag {int(tags.max())} for a union of {k} alternatives", node.id, DATA)
    offsets = np.zeros(n, dtype=np.int64)
    children = []
    for t, child in enumerate(node.children):
        where = np.flatnonzero(tags == t)
        offsets[where] = np.arange(len(where))
        children.append(decode_column(child, len(where), ctx))
    return UnionVector(node, n, None, tags.astype(np.int8), offsets, children)


_READERS = {
    Category.BOOLEAN: _read_boolean,
    Category.BYTE: _read_byte,
    Category.SHORT: _read_integer,
    Category.INT: _read_integer,
    Category.LONG: _read_integer,
    Category.DATE: _read_date,
    Category.FLOAT: _read_floating,
    Category.DOUBLE: _read_floating,
    Category.STRING: _read_bytes,
    Category.CHAR: _read_bytes,
    Category.VARCHAR: _read_bytes,
    Category.BINARY: _read_bytes,
    Category.DECIMAL: _read_decimal,
    Category.TIMESTAMP: _read_timestamp,
    Category.TIMESTAMP_INSTANT: _read_timestamp,
    Category.LIST: _read_list,
    Category.MAP: _read_map,
    Category.STRUCT: _read_struct,
    Category.UNION: _read_union,
}

__all__ = ["ReadContext", "decode_column"]
