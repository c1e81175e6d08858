"""One writer per ORC column: turns a stripe's :class:`ColumnData` into streams, row-index positions, row-group
statistics and bloom filters, the way ORC Java's ``*TreeWriter`` classes do.

Everything happens once per stripe on whole arrays: the RLE encoders take all the stripe's values and report
the position of each row-group start, statistics are reduced per row group with numpy, bloom filters hash the
values in bulk. Positions are returned against the *uncompressed* stream; ``writer`` maps them into compressed
chunks once the streams are compressed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np

from . import _murmur3 as murmur3
from ._bloom import BloomFilter, doubles_to_long_bits, long_hashes
from ._column_input import ColumnData, TimestampValues, Utf8Values, segment_sums
from ._proto import orc_proto_pb2 as pb
from ._rle_encode import (
    encode_bool_rle,
    encode_byte_rle,
    encode_int_rle_v2,
    encode_varints,
    zigzag64,
)
from ._statistics import decimal_to_text
from ._stats_builder import (
    MAX_DECIMAL64,
    BinaryStats,
    BooleanStats,
    CollectionStats,
    ColumnStats,
    DateStats,
    Decimal64Stats,
    DecimalStats,
    DoubleStats,
    IntegerStats,
    StringStats,
    TimestampStats,
    hive_decimal_add,
    new_stats,
    unscaled_decimal,
)
from ._types import Category, TypeDescription

Kind = pb.Stream
#: 2015-01-01 00:00:00 UTC: timestamp seconds are stored relative to it
TIMESTAMP_BASE_SECONDS = 1_420_070_400
#: ORC 2.3's ``orc.dictionary.max.size.bytes``: the first row group's dictionary must stay below it. Java
#: measures its tree's memory; we count the distinct bytes plus 16 per entry, which is close.
DICTIONARY_MAX_BYTES = 16 * 1024 * 1024


@dataclass
class StreamPiece:
    """An uncompressed stream of one column in one stripe; ``positions[g]`` = (byte offset, extra values...)."""

    kind: int
    data: bytes
    positions: np.ndarray | None = None  # (groups, k) int64, or None for streams without positions


@dataclass
class ColumnStripe:
    """What one column contributes to a stripe."""

    column: int
    encoding: pb.ColumnEncoding
    streams: list[StreamPiece]  # in the order they are laid out (by stream kind)
    position_kinds: list[int]  # streams whose positions go into the row index, in order
    group_stats: list[ColumnStats]
    bloom_filters: list[BloomFilter] | None = None
    children: list[ColumnStripe] = field(default_factory=list)


#: what ``ColumnWriter.write_values`` gives back: value streams, the stream kinds whose positions go into the
#: row index, bloom filter hashes per value (or None), and each child's value bounds per row group
ValueStreams = tuple[list["StreamPiece"], list[int], "np.ndarray | None", list[np.ndarray]]


@dataclass(frozen=True)
class WriterSettings:
    """The options that shape how columns are encoded."""

    row_index_stride: int
    bloom_columns: frozenset[int]
    bloom_fpp: float
    dictionary_threshold: float
    aligned_bitpacking: bool = True


# ---------------------------------------------------------------------------------------------------- helpers


def _value_bounds(data: ColumnData, row_bounds: np.ndarray) -> np.ndarray:
    if data.present is None:
        return row_bounds
    running = np.zeros(len(data.present) + 1, dtype=np.int64)
    np.cumsum(data.present, out=running[1:])
    return running[row_bounds]


def _group_minmax(values: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group (min, max) over ``values[bounds[g]:bounds[g+1]]`` for groups with values; also the mask."""
    counts = np.diff(bounds)
    nonempty = counts > 0
    starts = bounds[:-1][nonempty]
    if len(starts) == 0:
        return nonempty, np.zeros(0, values.dtype), np.zeros(0, values.dtype)
    return nonempty, np.minimum.reduceat(values, starts), np.maximum.reduceat(values, starts)


def _sum_overflows(values: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group: the wrapped int64 sum, and whether a running sum (Java ``Math.addExact``) overflowed."""
    running = np.zeros(len(values) + 1, dtype=np.int64)
    with np.errstate(over="ignore"):
        np.cumsum(values, out=running[1:])
        group_start = np.repeat(running[bounds[:-1]], np.diff(bounds))
        after = running[1:] - group_start
        before = running[:-1] - group_start
        flags = ((before ^ after) & (values ^ after)) < 0
        sums = running[bounds[1:]] - running[bounds[:-1]]
    return sums, segment_sums(flags.astype(np.int64), bounds) > 0


def _bloom_per_group(hashes: np.ndarray, bounds: np.ndarray, settings: WriterSettings) -> list[BloomFilter]:
    filters = []
    for g in range(len(bounds) - 1):
        bf = BloomFilter.for_entries(settings.row_index_stride, settings.bloom_fpp)
        bf.add_hashes(hashes[bounds[g] : bounds[g + 1]])
        filters.append(bf)
    return filters


def _empty_blooms(groups: int, settings: WriterSettings) -> list[BloomFilter]:
    return [BloomFilter.for_entries(settings.row_index_stride, settings.bloom_fpp) for _ in range(groups)]


def _bytes_hashes(values: Utf8Values) -> np.ndarray:
    return np.asarray(murmur3.hash64_array_bytes(values.to_list()), dtype=np.int64)


def _byte_positions(offsets: np.ndarray) -> np.ndarray:
    return np.asarray(offsets, dtype=np.int64).reshape(-1, 1)


# the top k bytes of a big-endian word, k = 0..8
_TOP_BYTES = np.array([0] + [((1 << (8 * k)) - 1) << (64 - 8 * k) for k in range(1, 9)], dtype=np.uint64)


class _ByteKeys:
    """8-byte big-endian slices of variable-length values, for comparing them a word at a time."""

    def __init__(self, values: Utf8Values, offsets: np.ndarray) -> None:
        self.lengths = values.lengths
        self.offsets = offsets
        self.size = len(values.data)
        self.padded = np.concatenate([values.data, np.zeros(8, dtype=np.uint8)])
        # every byte offset seen as the start of an (unaligned) 8-byte word, without copying
        self.words = np.ndarray((len(self.padded) - 7,), dtype=">u8", buffer=self.padded, strides=(1,))

    def keys(self, rows: np.ndarray, word: int) -> np.ndarray:
        """Bytes ``8*word .. 8*word+7`` of each chosen value as a uint64 (zero-padded past its end)."""
        starts = np.minimum(self.offsets[rows] + word * 8, self.size)
        take = np.clip(self.lengths[rows] - word * 8, 0, 8)
        return self.words[starts].astype(np.uint64) & _TOP_BYTES[take]

    def extreme(self, candidates: np.ndarray, want_max: bool) -> int:
        """Index of the byte-wise smallest or largest of ``candidates``, narrowing 8 bytes at a time."""
        word = 0
        while len(candidates) > 1:
            if (self.lengths[candidates] <= word * 8).all():
                break
            key = self.keys(candidates, word)
            candidates = candidates[key == (key.max() if want_max else key.min())]
            word += 1
        if len(candidates) > 1:
            # equal as zero-padded words: a longer value has trailing NULs, and is the larger one
            cand_len = self.lengths[candidates]
            candidates = candidates[cand_len == (cand_len.max() if want_max else cand_len.min())]
        return int(candidates[0])


def _group_extremes(values: Utf8Values, offsets: np.ndarray, bounds: np.ndarray, want_max: bool) -> list[int]:
    """Index of the byte-wise smallest (or largest) value of every non-empty row group.

    The first 8 bytes of all values decide most groups at once; ties are narrowed per group.
    """
    counts = np.diff(bounds)
    nonempty = np.flatnonzero(counts > 0)
    if len(nonempty) == 0:
        return []
    everything = np.arange(len(values.lengths), dtype=np.int64)
    byte_keys = _ByteKeys(values, offsets)
    keys = byte_keys.keys(everything, 0)
    starts = bounds[:-1][nonempty]
    best = (np.maximum if want_max else np.minimum).reduceat(keys, starts)
    group_of = np.repeat(np.arange(len(nonempty)), counts[nonempty])
    hits = np.flatnonzero(keys[bounds[nonempty[0]] : bounds[nonempty[-1] + 1]] == best[group_of]) + bounds[
        nonempty[0]
    ]
    hit_groups = group_of[hits - bounds[nonempty[0]]]
    first_hit = np.searchsorted(hit_groups, np.arange(len(nonempty)))
    last_hit = np.searchsorted(hit_groups, np.arange(len(nonempty)), side="right")
    out = []
    for g in range(len(nonempty)):
        lo, hi = int(first_hit[g]), int(last_hit[g])
        if hi - lo == 1:
            out.append(int(hits[lo]))
        else:
            out.append(byte_keys.extreme(hits[lo:hi], want_max))
    return out


def _string_group_stats(
    stats: list[ColumnStats], values: Utf8Values, bounds: np.ndarray, sorted_rank: np.ndarray | None
) -> None:
    """Fill min/max/sum of each row group's StringStats (by dictionary rank when given, else by bytes)."""
    offsets = values.offsets
    sums = segment_sums(values.lengths, bounds)
    raw = values.data.tobytes()
    nonempty = np.flatnonzero(np.diff(bounds) > 0)
    if sorted_rank is not None:
        mins: list[int] = []
        maxs: list[int] = []
        for g in nonempty.tolist():
            ranks = sorted_rank[bounds[g] : bounds[g + 1]]
            mins.append(int(bounds[g]) + int(np.argmin(ranks)))
            maxs.append(int(bounds[g]) + int(np.argmax(ranks)))
    else:
        mins = _group_extremes(values, offsets, bounds, want_max=False)
        maxs = _group_extremes(values, offsets, bounds, want_max=True)
    for g, st in enumerate(stats):
        assert isinstance(st, StringStats)
        st.sum = int(sums[g])
    for g, i_min, i_max in zip(nonempty.tolist(), mins, maxs, strict=True):
        st = stats[g]
        assert isinstance(st, StringStats)
        st.set_extremes(raw[offsets[i_min] : offsets[i_min + 1]], raw[offsets[i_max] : offsets[i_max + 1]])


def _unique_sorted(values: Utf8Values) -> tuple[list[bytes], np.ndarray]:
    """Distinct values in unsigned-byte order and each value's index among them."""
    n = len(values.lengths)
    if n == 0:
        return [], np.zeros(0, dtype=np.int64)
    width = int(values.lengths.max()) if n else 0
    offsets = values.offsets
    trailing_nul = bool(np.any((values.lengths > 0) & (values.data[np.maximum(offsets[1:] - 1, 0)] == 0))) if len(
        values.data
    ) else False
    if width > 0 and not trailing_nul and n * width <= (1 << 28):
        matrix = np.zeros((n, width), dtype=np.uint8)
        if len(values.data):
            rows = np.repeat(np.arange(n, dtype=np.int64), values.lengths)
            cols = np.arange(len(values.data), dtype=np.int64) - np.repeat(offsets[:-1], values.lengths)
            matrix[rows, cols] = values.data
        fixed = matrix.view(f"S{width}").ravel()
        uniq, inverse = np.unique(fixed, return_inverse=True)
        return [bytes(u) for u in uniq.tolist()], inverse.astype(np.int64).ravel()
    items = values.to_list()
    uniq_list = sorted(set(items))
    index = {v: i for i, v in enumerate(uniq_list)}
    return uniq_list, np.fromiter((index[v] for v in items), dtype=np.int64, count=n)


def _sorted_dictionary(values: Utf8Values) -> tuple[list[bytes], np.ndarray]:
    """The dictionary in byte order and each value's index in it (from the input's codes when it has them)."""
    if values.codes is None or values.code_values is None:
        return _unique_sorted(values)
    present = np.zeros(len(values.code_values), dtype=bool)
    present[values.codes] = True  # a stripe may use only some of the codes
    used = np.flatnonzero(present).tolist()
    order = sorted(used, key=values.code_values.__getitem__)
    rank = np.zeros(len(values.code_values), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return [values.code_values[i] for i in order], rank[values.codes]


def _format_nanos(nanos: np.ndarray) -> np.ndarray:
    """Java ``TimestampTreeWriter.formatNanos``: trailing decimal zeros moved into the low 3 bits."""
    out = nanos << 3
    hundreds = (nanos != 0) & (nanos % 100 == 0)
    if hundreds.any():
        n = nanos[hundreds] // 100
        zeros = np.ones(len(n), dtype=np.int64)
        for _ in range(6):
            more = (n % 10 == 0) & (zeros < 7)
            if not more.any():
                break
            n = np.where(more, n // 10, n)
            zeros = zeros + more
        out[hundreds] = (n << 3) | zeros
    return out


def _java_timestamp_parts(ts: TimestampValues) -> tuple[np.ndarray, np.ndarray]:
    """(seconds as Java writes them, UTC millis Java uses for statistics and bloom filters)."""
    seconds, nanos = ts.seconds, ts.nanos
    time_ms = seconds * 1000 + nanos // 1_000_000  # java.sql.Timestamp.getTime(): floor millis
    java_secs = np.where(time_ms >= 0, time_ms // 1000, -((-time_ms) // 1000))  # Java long division truncates
    millis = java_secs * 1000 + nanos // 1_000_000
    millis = np.where((millis < 0) & (nanos > 999_999), millis - 1000, millis)
    return java_secs, millis


def _trim_decimal_scales(unscaled: np.ndarray, scale: int) -> tuple[np.ndarray, np.ndarray]:
    """HiveDecimal's normalised form: trailing zeros removed from the unscaled value, scale lowered to match."""
    values = unscaled.copy()
    scales = np.where(values == 0, 0, scale).astype(np.int64)
    for _ in range(scale):
        more = (scales > 0) & (values % 10 == 0)
        if not more.any():
            break
        values = np.where(more, values // 10, values)
        scales = scales - more
    return values, scales


def _big_varint(value: int) -> bytes:
    """Java ``SerializationUtils.writeBigInteger``: zigzag then 7-bit groups, low first."""
    z = value * 2 if value >= 0 else -value * 2 - 1
    out = bytearray()
    while True:
        if z < 0x80:
            out.append(z)
            return bytes(out)
        out.append(0x80 | (z & 0x7F))
        z >>= 7


# ---------------------------------------------------------------------------------------------------- writers


class ColumnWriter:
    """Base: PRESENT stream, counts, and the walk into children. Subclasses add their value streams."""

    def __init__(self, column: TypeDescription, settings: WriterSettings, children: list[ColumnWriter]) -> None:
        self.type = column
        self.id = column.id
        self.settings = settings
        self.children = children
        self.bloom = column.id in settings.bloom_columns and settings.row_index_stride > 0

    # -- to override
    def encoding(self) -> pb.ColumnEncoding:
        return pb.ColumnEncoding(kind=pb.ColumnEncoding.DIRECT)

    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        """Value streams (list), position kinds, bloom hashes or None, child row bounds per child."""
        return [], [], None, []

    # -- common
    def write_stripe(self, data: ColumnData, row_bounds: np.ndarray) -> ColumnStripe:
        """Encode this column (and its children) for one stripe; ``row_bounds`` are row-group starts + end."""
        groups = len(row_bounds) - 1
        bounds = _value_bounds(data, row_bounds)
        counts = np.diff(bounds)
        row_counts = np.diff(row_bounds)
        stats = [new_stats(self.type) for _ in range(groups)]
        for g, st in enumerate(stats):
            st.count = int(counts[g])
            st.has_null = bool(row_counts[g] != counts[g])
        streams, position_kinds, hashes, child_bounds = self.write_values(data, bounds, stats)
        has_nulls = data.present is not None and not bool(data.present.all())
        if has_nulls:
            assert data.present is not None  # has_nulls says so
            present = encode_bool_rle(data.present, row_bounds[:-1])
            streams.insert(0, StreamPiece(Kind.PRESENT, present.data, present.positions))
            position_kinds = [Kind.PRESENT, *position_kinds]
        blooms = None
        if self.bloom:
            blooms = _bloom_per_group(hashes, bounds, self.settings) if hashes is not None else _empty_blooms(
                groups, self.settings
            )
        encoding = self.encoding()
        if self.bloom:
            encoding.bloom_encoding = 1
        children = [
            writer.write_stripe(child, cb)
            for writer, child, cb in zip(self.children, data.children, child_bounds, strict=True)
        ]
        return ColumnStripe(self.id, encoding, streams, position_kinds, stats, blooms, children)


class BooleanWriter(ColumnWriter):
    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        values = np.asarray(data.values, dtype=bool)
        encoded = encode_bool_rle(values, bounds[:-1])
        trues = segment_sums(values.astype(np.int64), bounds)
        for g, st in enumerate(stats):
            assert isinstance(st, BooleanStats)
            st.true_count = int(trues[g])
        return [StreamPiece(Kind.DATA, encoded.data, encoded.positions)], [Kind.DATA], None, []


def _fill_integer_stats(stats: list[ColumnStats], values: np.ndarray, bounds: np.ndarray) -> None:
    nonempty, mins, maxs = _group_minmax(values, bounds)
    sums, overflow = _sum_overflows(values, bounds)
    k = 0
    for g, st in enumerate(stats):
        assert isinstance(st, IntegerStats)
        if nonempty[g]:
            st.has_minimum = True
            st.minimum, st.maximum = int(mins[k]), int(maxs[k])
            k += 1
        st.overflow = bool(overflow[g])
        st.sum = int(sums[g]) if not st.overflow else 0


class IntegerWriter(ColumnWriter):
    """smallint, int, bigint: signed RLE v2; tinyint: byte RLE."""

    def encoding(self) -> pb.ColumnEncoding:
        if self.type.category == Category.BYTE:
            return pb.ColumnEncoding(kind=pb.ColumnEncoding.DIRECT)
        return pb.ColumnEncoding(kind=pb.ColumnEncoding.DIRECT_V2)

    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        values = np.asarray(data.values, dtype=np.int64)
        if self.type.category == Category.BYTE:
            encoded = encode_byte_rle(values.astype(np.int8).view(np.uint8), bounds[:-1])
        else:
            encoded = encode_int_rle_v2(values, True, bounds[:-1], self.settings.aligned_bitpacking)
        _fill_integer_stats(stats, values, bounds)
        hashes = long_hashes(values) if self.bloom else None
        return [StreamPiece(Kind.DATA, encoded.data, encoded.positions)], [Kind.DATA], hashes, []


class DateWriter(ColumnWriter):
    def encoding(self) -> pb.ColumnEncoding:
        return pb.ColumnEncoding(kind=pb.ColumnEncoding.DIRECT_V2)

    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        values = np.asarray(data.values, dtype=np.int64)
        encoded = encode_int_rle_v2(values, True, bounds[:-1], self.settings.aligned_bitpacking)
        nonempty, mins, maxs = _group_minmax(values, bounds)
        k = 0
        for g, st in enumerate(stats):
            assert isinstance(st, DateStats)
            if nonempty[g]:
                st.minimum, st.maximum = int(mins[k]), int(maxs[k])
                k += 1
        hashes = long_hashes(values) if self.bloom else None
        return [StreamPiece(Kind.DATA, encoded.data, encoded.positions)], [Kind.DATA], hashes, []


def _first_index_of(values: np.ndarray, target: float, lo: int, hi: int) -> int:
    return lo + int(np.argmax(values[lo:hi] == target))


class FloatingWriter(ColumnWriter):
    """float and double: raw little-endian IEEE values."""

    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        values = data.values
        itemsize = values.dtype.itemsize
        raw = values.astype("<f4" if itemsize == 4 else "<f8").tobytes()
        wide = values.astype(np.float64)
        for g, st in enumerate(stats):
            assert isinstance(st, DoubleStats)
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            if lo == hi:
                continue
            group = wide[lo:hi]
            st.has_minimum = True
            # Java: the first value sets min and max; later values replace them only by < or >, so a leading
            # NaN sticks and later NaNs are ignored; among equal values (0.0 and -0.0) the first one wins
            if np.isnan(group[0]):
                st.minimum = st.maximum = float(group[0])
            else:
                finite = group[~np.isnan(group)]
                lo_value, hi_value = float(finite.min()), float(finite.max())
                st.minimum = float(group[_first_index_of(group, lo_value, 0, len(group))]) if lo_value == 0 else lo_value
                st.maximum = float(group[_first_index_of(group, hi_value, 0, len(group))]) if hi_value == 0 else hi_value
            with np.errstate(invalid="ignore", over="ignore"):
                st.sum = float(np.cumsum(group)[-1]) + 0.0  # left to right, as Java adds
        hashes = long_hashes(doubles_to_long_bits(wide)) if self.bloom else None
        return (
            [StreamPiece(Kind.DATA, raw, _byte_positions(bounds[:-1] * itemsize))],
            [Kind.DATA],
            hashes,
            [],
        )


class StringWriter(ColumnWriter):
    """string, char, varchar: DICTIONARY_V2 or DIRECT_V2, decided once from the first row group (Java's rule)."""

    def __init__(self, column: TypeDescription, settings: WriterSettings, children: list[ColumnWriter]) -> None:
        super().__init__(column, settings, children)
        self.use_dictionary: bool | None = None if settings.dictionary_threshold > 0 else False
        self.dictionary_size = 0

    def encoding(self) -> pb.ColumnEncoding:
        if self.use_dictionary:
            return pb.ColumnEncoding(kind=pb.ColumnEncoding.DICTIONARY_V2, dictionary_size=self.dictionary_size)
        return pb.ColumnEncoding(kind=pb.ColumnEncoding.DIRECT_V2)

    def _decide(self, values: Utf8Values, bounds: np.ndarray) -> None:
        # Java checks after the first row group (or at the first stripe's end when there is no index)
        stop = int(bounds[1]) if self.settings.row_index_stride > 0 else int(bounds[-1])
        if stop == 0:
            self.use_dictionary = True
            return
        if values.codes is not None and values.code_values is not None:
            distinct_codes = np.unique(values.codes[:stop])
            distinct = len(distinct_codes)
            size = sum(len(values.code_values[c]) for c in distinct_codes.tolist()) + 16 * distinct
        else:
            first = Utf8Values(values.data[: int(values.offsets[stop])], values.lengths[:stop])
            uniq, _ = _unique_sorted(first)
            distinct = len(uniq)
            size = sum(len(u) for u in uniq) + 16 * distinct
        ratio = np.float32(distinct) / np.float32(stop)  # Java computes this ratio in float
        self.use_dictionary = bool(float(ratio) <= self.settings.dictionary_threshold) and size <= DICTIONARY_MAX_BYTES

    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        values: Utf8Values = data.values
        if self.use_dictionary is None:
            self._decide(values, bounds)
        offsets = values.offsets
        if self.use_dictionary:
            uniq, ids = _sorted_dictionary(values)
            self.dictionary_size = len(uniq)
            encoded = encode_int_rle_v2(ids, False, bounds[:-1], self.settings.aligned_bitpacking)
            dict_lengths = np.fromiter(map(len, uniq), dtype=np.int64, count=len(uniq))
            lengths = encode_int_rle_v2(dict_lengths, False, None, self.settings.aligned_bitpacking)
            _string_group_stats(stats, values, bounds, ids)
            hashes = None
            if self.bloom:
                dict_hashes = np.asarray(murmur3.hash64_array_bytes(uniq), dtype=np.int64)
                hashes = dict_hashes[ids]
            streams = [
                StreamPiece(Kind.DATA, encoded.data, encoded.positions),
                StreamPiece(Kind.LENGTH, lengths.data),
                StreamPiece(Kind.DICTIONARY_DATA, b"".join(uniq)),
            ]
            return streams, [Kind.DATA], hashes, []
        lengths = encode_int_rle_v2(values.lengths, False, bounds[:-1], self.settings.aligned_bitpacking)
        _string_group_stats(stats, values, bounds, None)
        hashes = _bytes_hashes(values) if self.bloom else None
        streams = [
            StreamPiece(Kind.DATA, values.data.tobytes(), _byte_positions(offsets[bounds[:-1]])),
            StreamPiece(Kind.LENGTH, lengths.data, lengths.positions),
        ]
        return streams, [Kind.DATA, Kind.LENGTH], hashes, []


class BinaryWriter(ColumnWriter):
    def encoding(self) -> pb.ColumnEncoding:
        return pb.ColumnEncoding(kind=pb.ColumnEncoding.DIRECT_V2)

    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        values: Utf8Values = data.values
        offsets = values.offsets
        lengths = encode_int_rle_v2(values.lengths, False, bounds[:-1], self.settings.aligned_bitpacking)
        sums = segment_sums(values.lengths, bounds)
        for g, st in enumerate(stats):
            assert isinstance(st, BinaryStats)
            st.sum = int(sums[g])
        hashes = _bytes_hashes(values) if self.bloom else None
        streams = [
            StreamPiece(Kind.DATA, values.data.tobytes(), _byte_positions(offsets[bounds[:-1]])),
            StreamPiece(Kind.LENGTH, lengths.data, lengths.positions),
        ]
        return streams, [Kind.DATA, Kind.LENGTH], hashes, []


class DecimalWriter(ColumnWriter):
    """Unbounded zigzag varints of the trimmed unscaled values in DATA, each value's scale in SECONDARY."""

    def encoding(self) -> pb.ColumnEncoding:
        return pb.ColumnEncoding(kind=pb.ColumnEncoding.DIRECT_V2)

    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        scale = self.type.scale or 0
        values = data.values
        if values.dtype != object:
            trimmed, scales = _trim_decimal_scales(values, scale)
            raw, value_lengths = encode_varints(zigzag64(trimmed))
            raw_bytes = raw.tobytes()
            self._decimal64_stats(stats, values, bounds, scale)
            texts = (
                [decimal_to_text(unscaled_decimal(int(u), int(s))) for u, s in zip(trimmed.tolist(), scales.tolist(), strict=True)]
                if self.bloom else None
            )
        else:
            ints = values.tolist()
            trimmed_list, scale_list = [], []
            for u in ints:
                s = scale if u != 0 else 0
                while s > 0 and u % 10 == 0:
                    u //= 10
                    s -= 1
                trimmed_list.append(u)
                scale_list.append(s)
            pieces = [_big_varint(u) for u in trimmed_list]
            value_lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
            raw_bytes = b"".join(pieces)
            scales = np.array(scale_list, dtype=np.int64)
            self._wide_stats(stats, ints, bounds, scale)
            texts = (
                [decimal_to_text(unscaled_decimal(u, s)) for u, s in zip(trimmed_list, scale_list, strict=True)]
                if self.bloom else None
            )
        byte_offsets = np.zeros(len(value_lengths) + 1, dtype=np.int64)
        np.cumsum(value_lengths, out=byte_offsets[1:])
        secondary = encode_int_rle_v2(scales, True, bounds[:-1], self.settings.aligned_bitpacking)
        hashes = None
        if texts is not None:
            hashes = np.asarray(murmur3.hash64_array_bytes([t.encode() for t in texts]), dtype=np.int64)
        streams = [
            StreamPiece(Kind.DATA, raw_bytes, _byte_positions(byte_offsets[bounds[:-1]])),
            StreamPiece(Kind.SECONDARY, secondary.data, secondary.positions),
        ]
        return streams, [Kind.DATA, Kind.SECONDARY], hashes, []

    @staticmethod
    def _decimal64_stats(stats: list[ColumnStats], values: np.ndarray, bounds: np.ndarray, scale: int) -> None:
        nonempty, mins, maxs = _group_minmax(values, bounds)
        running = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum(values, out=running[1:])  # |partial sums| < 2e18 until the first one out of range
        k = 0
        for g, st in enumerate(stats):
            assert isinstance(st, Decimal64Stats)
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            if nonempty[g]:
                st.minimum, st.maximum = int(mins[k]), int(maxs[k])
                k += 1
                partial = running[lo + 1 : hi + 1] - running[lo]
                outside = np.flatnonzero((partial > MAX_DECIMAL64) | (partial < -MAX_DECIMAL64))
                if len(outside):
                    # Java stops adding once the sum leaves the range, keeping that last partial sum
                    st.has_sum = False
                    st.sum = int(partial[outside[0]])
                else:
                    st.sum = int(partial[-1])

    @staticmethod
    def _wide_stats(stats: list[ColumnStats], ints: list[int], bounds: np.ndarray, scale: int) -> None:
        for g, st in enumerate(stats):
            assert isinstance(st, DecimalStats)
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            if lo == hi:
                continue
            group = ints[lo:hi]
            st.minimum = unscaled_decimal(min(group), scale)
            st.maximum = unscaled_decimal(max(group), scale)
            total: Decimal | None = Decimal(0)
            for u in group:
                assert total is not None  # the loop stops at the first None
                total = hive_decimal_add(total, unscaled_decimal(u, scale))
                if total is None:
                    break
            st.sum = total


class TimestampWriter(ColumnWriter):
    """Seconds since 2015-01-01 in DATA (signed), encoded nanoseconds in SECONDARY (unsigned)."""

    def encoding(self) -> pb.ColumnEncoding:
        return pb.ColumnEncoding(kind=pb.ColumnEncoding.DIRECT_V2)

    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        ts: TimestampValues = data.values
        java_secs, millis = _java_timestamp_parts(ts)
        seconds = encode_int_rle_v2(java_secs - TIMESTAMP_BASE_SECONDS, True, bounds[:-1], self.settings.aligned_bitpacking)
        nanos = encode_int_rle_v2(_format_nanos(ts.nanos), False, bounds[:-1], self.settings.aligned_bitpacking)
        sub_milli = ts.nanos % 1_000_000
        nonempty, mins, maxs = _group_minmax(millis, bounds)
        k = 0
        for g, st in enumerate(stats):
            assert isinstance(st, TimestampStats)
            if not nonempty[g]:
                continue
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            group_millis, group_nanos = millis[lo:hi], sub_milli[lo:hi]
            st.minimum, st.maximum = int(mins[k]), int(maxs[k])
            st.min_nanos = int(group_nanos[group_millis == st.minimum].min())
            st.max_nanos = int(group_nanos[group_millis == st.maximum].max())
            k += 1
        hashes = long_hashes(millis) if self.bloom else None
        streams = [
            StreamPiece(Kind.DATA, seconds.data, seconds.positions),
            StreamPiece(Kind.SECONDARY, nanos.data, nanos.positions),
        ]
        return streams, [Kind.DATA, Kind.SECONDARY], hashes, []


class CollectionWriter(ColumnWriter):
    """array and map: element counts in LENGTH, elements in the child column(s)."""

    def encoding(self) -> pb.ColumnEncoding:
        return pb.ColumnEncoding(kind=pb.ColumnEncoding.DIRECT_V2)

    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        lengths = np.asarray(data.values, dtype=np.int64)
        encoded = encode_int_rle_v2(lengths, False, bounds[:-1], self.settings.aligned_bitpacking)
        nonempty, mins, maxs = _group_minmax(lengths, bounds)
        sums = segment_sums(lengths, bounds)
        k = 0
        for g, st in enumerate(stats):
            assert isinstance(st, CollectionStats)
            if nonempty[g]:
                st.minimum, st.maximum = int(mins[k]), int(maxs[k])
                k += 1
            st.sum = int(sums[g])
        element_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=element_offsets[1:])
        child_bounds = element_offsets[bounds]
        hashes = long_hashes(lengths) if self.bloom else None
        return (
            [StreamPiece(Kind.LENGTH, encoded.data, encoded.positions)],
            [Kind.LENGTH],
            hashes,
            [child_bounds] * len(self.children),
        )


class StructWriter(ColumnWriter):
    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        return [], [], None, [bounds] * len(self.children)


class UnionWriter(ColumnWriter):
    def write_values(self, data: ColumnData, bounds: np.ndarray, stats: list[ColumnStats]) -> ValueStreams:
        tags = np.asarray(data.values, dtype=np.uint8)
        encoded = encode_byte_rle(tags, bounds[:-1])
        child_bounds = []
        for k in range(len(self.children)):
            running = np.zeros(len(tags) + 1, dtype=np.int64)
            np.cumsum(tags == k, out=running[1:])
            child_bounds.append(running[bounds])
        hashes = long_hashes(tags.astype(np.int64)) if self.bloom else None
        return [StreamPiece(Kind.DATA, encoded.data, encoded.positions)], [Kind.DATA], hashes, child_bounds


_WRITERS = {
    Category.BOOLEAN: BooleanWriter,
    Category.BYTE: IntegerWriter,
    Category.SHORT: IntegerWriter,
    Category.INT: IntegerWriter,
    Category.LONG: IntegerWriter,
    Category.FLOAT: FloatingWriter,
    Category.DOUBLE: FloatingWriter,
    Category.STRING: StringWriter,
    Category.CHAR: StringWriter,
    Category.VARCHAR: StringWriter,
    Category.BINARY: BinaryWriter,
    Category.DECIMAL: DecimalWriter,
    Category.DATE: DateWriter,
    Category.TIMESTAMP: TimestampWriter,
    Category.TIMESTAMP_INSTANT: TimestampWriter,
    Category.LIST: CollectionWriter,
    Category.MAP: CollectionWriter,
    Category.STRUCT: StructWriter,
    Category.UNION: UnionWriter,
}


def create_writer(column: TypeDescription, settings: WriterSettings) -> ColumnWriter:
    """The writer tree for a (numbered) schema tree."""
    children = [create_writer(child, settings) for child in column.children]
    return _WRITERS[column.category](column, settings, children)


__all__ = [
    "ColumnStripe",
    "ColumnWriter",
    "StreamPiece",
    "WriterSettings",
    "create_writer",
]
