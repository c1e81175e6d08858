"""The ORC file reader: tail (PostScript, Footer, Metadata), statistics, row indexes, bloom filters and rows.

Behaviour that differs between ORC implementations, and what this reader does:
- A 0-byte file is an empty ORC file with schema ``struct<>`` and no rows (as ORC Java; C++ refuses it).
- Files of an unknown format version (anything but none, 0.11, 0.12 and the UNSTABLE-PRE-2.0 1.9999) are
  refused like ORC Java does ("written by a future ORC version"); ORC C++ only warns.
- Timestamps are returned as the writer's wall clock (what ORC's own tools print). A stripe without a writer
  time zone (Hive 0.11/0.12 files) is read as if written in ``default_timezone`` (ORC Java/C++ use the reader's
  local zone there; this reader is deterministic instead).
- Dates and timestamps in files written by ORC Java in the hybrid Julian/Gregorian calendar (Footer.calendar
  JULIAN_GREGORIAN, or unset with writer ORC Java) are converted to proleptic Gregorian so that values before
  1582-10-15 keep the year-month-day the writer meant (Java with ``orc.proleptic.gregorian=true`` does the same).
  Pass ``convert_calendar=False`` to get the stored day numbers.
- Decimal values stored with a per-value scale are brought to the column scale (truncating when a value has
  more digits, as ORC C++). Hive 0.11 ``decimal`` columns (precision 0) keep each value's own scale.
- Bloom filters are not returned (None) for files with the known bad-filter bug (ORC C++ 1.6.0-1.6.11/1.7.0),
  for legacy BLOOM_FILTER streams ORC Java also distrusts, and for entries that do not have a sane shape.
- Columns encrypted with a key we do not have (ORC column encryption) read as all null, like ORC Java's
  default "nullify" mask.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

import numpy as np
from google.protobuf.message import DecodeError, Message

from . import _bloom as bloom_mod
from . import _vectors as vectors_mod
from ._bloom import BloomFilter
from ._column_readers import ReadContext, _present, decode_column
from ._compression import DEFAULT_BLOCK_SIZE, DEFAULT_MAX_STREAM_BYTES, CompressionKind, decompress_stream
from ._errors import OrcError, UnsupportedOrcFeature
from ._proto import orc_proto_pb2 as pb
from ._statistics import ColumnStatistics, statistics_from_proto
from ._streams_in import (
    ENCODING_NAMES,
    STREAM_KIND_NAMES,
    FileSource,
    PositionCursor,
    SeekableInput,
    StripeStreams,
)
from ._types import Category, TypeDescription
from ._vectors import Batch, ColumnVector, StructVector, concat

#: how much of the file end is read at first; enough for the whole tail of most files
TAIL_GUESS = 16 * 1024
KNOWN_VERSIONS: dict[tuple[int, ...], str] = {(0, 11): "0.11", (0, 12): "0.12", (1, 9999): "UNSTABLE-PRE-2.0"}
WRITER_NAMES = {0: "ORC Java", 1: "ORC C++", 2: "Presto", 3: "Scritchley Go", 4: "Trino", 5: "CUDF"}
WRITER_VERSION_NAMES = {
    0: "ORIGINAL", 1: "HIVE_8732", 2: "HIVE_4243", 3: "HIVE_12055", 4: "HIVE_13083", 5: "ORC_101",
    6: "ORC_135", 7: "ORC_517", 8: "ORC_203", 9: "ORC_14",
}
#: the stream kinds that hold column values (what reading rows needs)
DATA_AREA_KINDS = frozenset({pb.Stream.PRESENT, pb.Stream.DATA, pb.Stream.LENGTH, pb.Stream.DICTIONARY_DATA,
                             pb.Stream.SECONDARY})
#: sanity bound on rows per stripe (guards loops and allocations against corrupt counts)
MAX_STRIPE_ROWS = 1 << 32
DEFAULT_BATCH_SIZE = 65536


@dataclass(frozen=True)
class StripeInformation:
    """Where a stripe is and how many rows it holds."""

    index: int
    offset: int
    index_length: int
    data_length: int
    footer_length: int
    number_of_rows: int
    first_row: int

    @property
    def length(self) -> int:
        """Total bytes of the stripe (index + data + footer)."""
        return self.index_length + self.data_length + self.footer_length


@dataclass(frozen=True)
class RowGroupIndexEntry:
    """One row group of a column's row index: stream positions and statistics."""

    positions: tuple[int, ...]
    statistics: ColumnStatistics | None


_Message = TypeVar("_Message", bound=Message)


def _parse(
    message_type: type[_Message], data: bytes | bytearray | memoryview, what: str, file: str, **where: Any
) -> _Message:
    msg = message_type()
    try:
        # ParseFromString reads any buffer; the stubs ask for bytes, and a copy would cost a stream's size
        msg.ParseFromString(cast(bytes, data))
    except (DecodeError, RecursionError, ValueError) as exc:
        raise OrcError(f"cannot parse the {what} (truncated or corrupt): {exc}", file=file, **where) from None
    return msg


#: what :class:`OrcReader` reads from: a path, an open binary file, or the file's bytes
OrcSource = str | os.PathLike[str] | SeekableInput | bytes


#: what a reader built with ``tail_of`` keeps of its own rather than taking from the other reader
_OWN_ATTRIBUTES = frozenset({"_source", "path", "default_timezone", "convert_calendar", "max_stream_bytes"})


class OrcReader:
    """Read an ORC file: metadata on construction, data on demand (only the streams of the columns asked for)."""

    def __init__(
        self,
        source: OrcSource,
        *,
        default_timezone: str = "UTC",
        convert_calendar: bool = True,
        max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES,
        tail_of: OrcReader | None = None,
    ) -> None:
        """``tail_of``: another reader of the same file (same bytes; it may be closed) whose parsed tail (PostScript,
        footer, schema, statistics, stripe footers read so far) this one takes instead of reading and parsing
        the tail again, as threads that each scan some columns of one file do. Only the size is checked."""
        self._source = FileSource(source)
        self.path = self._source.name
        self.default_timezone = default_timezone
        self.convert_calendar = convert_calendar
        self.max_stream_bytes = max_stream_bytes
        self._metadata: pb.Metadata | None = None
        self._stripe_footers: dict[int, pb.StripeFooter] = {}
        self._file_statistics: list[ColumnStatistics] | None = None
        try:
            if tail_of is None:
                self._read_tail()
            else:
                self._share_tail(tail_of)
        except BaseException:
            self._source.close()
            raise

    # ------------------------------------------------------------------------------------------------ tail

    def _error(self, message: str, **where: Any) -> OrcError:
        return OrcError(message, file=self.path, **where)

    def _read_tail(self) -> None:
        size = self._source.size
        self.file_length = size
        if size == 0:
            # ORC Java treats a 0-byte file as an empty ORC file (Hive creates them)
            self._postscript = pb.PostScript(compression=pb.NONE)
            self._footer = pb.Footer()
            self.postscript_length = 0
            self._tail_start = 0
            self._finish_tail()
            return
        if size <= 3:
            raise self._error(f"not a valid ORC file ({size} bytes)")
        read_size = min(size, TAIL_GUESS)
        tail = self._source.read(size - read_size, read_size, "file tail")
        ps_len = tail[-1]
        if ps_len < 4 or ps_len + 1 > size:
            raise self._error(f"malformed ORC file: invalid PostScript length {ps_len}")
        ps_bytes = tail[-1 - ps_len : -1]
        self._postscript = ps = _parse(pb.PostScript, ps_bytes, "PostScript", self.path)
        self.postscript_length = ps_len
        # 0.11-era files have no magic in the PostScript; then the header must say ORC
        if not (ps.HasField("magic") and ps.magic == "ORC") and self._source.read(0, 3, "file header") != b"ORC":
            raise self._error("not an ORC file: no 'ORC' magic in the PostScript or the header")
        version = tuple(int(v) for v in ps.version)
        if version and (len(version) < 2 or version[:2] not in KNOWN_VERSIONS):
            text = ".".join(str(v) for v in version)
            raise UnsupportedOrcFeature(
                f"{self.path} was written by a future ORC version {text}. This file is not readable by this version "
                "of ORC.",
                file=self.path,
            )
        if ps.HasField("compression_block_size"):
            bs = int(ps.compression_block_size)
            if bs <= 0 or bs >= (1 << 23):
                raise self._error(f"malformed ORC file: invalid compression block size {bs}")
        self._set_compression(ps)
        footer_len = int(ps.footer_length)
        metadata_len = int(ps.metadata_length)
        if footer_len == 0:
            # every writer stores a footer (at least the schema); this is a truncated or foreign file
            raise self._error("malformed ORC file: the PostScript has no footer length")
        tail_size = 1 + ps_len + footer_len + metadata_len
        if tail_size > size:
            raise self._error(
                f"malformed ORC file: tail of {tail_size} bytes (footer {footer_len}, metadata {metadata_len}) "
                f"is larger than the file of {size} bytes"
            )
        if tail_size > read_size:
            tail = self._source.read(size - tail_size, tail_size, "file tail")
        tail_view = memoryview(tail)[len(tail) - tail_size :]
        self._metadata_bytes = bytes(tail_view[:metadata_len])
        footer_bytes = bytes(tail_view[metadata_len : metadata_len + footer_len])
        self._tail_start = size - tail_size
        self._footer = _parse(
            pb.Footer, self._decompress(footer_bytes, "file footer"), "file footer", self.path
        )
        if not self._footer.types:
            raise self._error("malformed ORC file: the footer has no schema types")
        self._finish_tail()

    def _decompress(self, data: bytes, what: str) -> bytes:
        try:
            return decompress_stream(self.compression, self.compression_block_size, data,
                                     max_output=self.max_stream_bytes)
        except OrcError as err:
            raise OrcError(f"{what}: {err.reason}", file=self.path) from None

    def _set_compression(self, ps: pb.PostScript) -> None:
        """The compression kind and block size the PostScript declares (the footer is read with them)."""
        try:
            self.compression = CompressionKind(int(ps.compression))
        except ValueError:
            raise self._error(f"unknown compression kind {int(ps.compression)}") from None
        self.compression_block_size = (
            int(ps.compression_block_size) if ps.HasField("compression_block_size") else DEFAULT_BLOCK_SIZE
        )

    def _finish_tail(self) -> None:
        footer = self._footer
        ps = self._postscript
        self._set_compression(ps)
        try:
            self.schema: TypeDescription = TypeDescription._from_proto_types(footer.types)
        except OrcError as err:
            raise err.with_context(file=self.path) from None
        self._columns = self.schema.flatten()
        self.file_version: tuple[int, ...] = tuple(int(v) for v in ps.version)
        self.writer_version: int = int(ps.writer_version) if ps.HasField("writer_version") else 0
        self.writer_id: int = int(footer.writer) if footer.HasField("writer") else 0
        sv = footer.software_version if footer.HasField("software_version") else None
        self.software_version: str | None = sv if isinstance(sv, str) or sv is None else sv.decode("utf-8", "replace")
        self.row_index_stride: int = int(footer.row_index_stride)
        self.content_length: int = int(footer.content_length)
        self.calendar: int = int(footer.calendar) if footer.HasField("calendar") else 0
        self.user_metadata: dict[str, bytes] = {
            (m.name if isinstance(m.name, str) else m.name.decode("utf-8", "replace")): bytes(m.value)
            for m in footer.metadata
        }
        stripes = []
        first = 0
        for i, s in enumerate(footer.stripes):
            rows = int(s.number_of_rows)
            stripes.append(
                StripeInformation(i, int(s.offset), int(s.index_length), int(s.data_length), int(s.footer_length),
                                  rows, first)
            )
            first += rows
        self.stripes: list[StripeInformation] = stripes
        self.num_rows: int = int(footer.number_of_rows) if footer.HasField("number_of_rows") else first
        self._encrypted_columns = self._find_encrypted_columns()

    def _find_encrypted_columns(self) -> set[int]:
        if not self._footer.HasField("encryption"):
            return set()
        out: set[int] = set()
        for variant in self._footer.encryption.variants:
            root = int(variant.root)
            if root < len(self._columns):
                node = self._columns[root]
                out.update(range(node.id, node.max_id + 1))
        return out

    def _share_tail(self, other: OrcReader) -> None:
        if self._source.size != other.file_length:
            raise self._error(f"the file has {self._source.size} bytes, not the {other.file_length} of the reader "
                              "whose tail it was to share")
        for name, value in vars(other).items():
            if name not in _OWN_ATTRIBUTES:
                setattr(self, name, value)
        # the containers this reader may fill or hand out: its own (their parsed contents are read-only)
        self._stripe_footers = dict(other._stripe_footers)
        self.stripes = list(other.stripes)
        self.user_metadata = dict(other.user_metadata)

    # ------------------------------------------------------------------------------------------------ properties

    @property
    def writer_name(self) -> str:
        """Which implementation wrote the file (``ORC Java``, ``ORC C++``...)."""
        return WRITER_NAMES.get(self.writer_id, f"unknown writer {self.writer_id}")

    @property
    def software_description(self) -> str:
        """Writer and software version as ORC C++ prints them (``ORC Java 1.8.0``, ``ORC C++ 2.3.1``)."""
        return self.writer_name + (f" {self.software_version}" if self.software_version else "")

    @property
    def file_version_name(self) -> str:
        """The format version as ORC prints it (``0.12``; ``0.11`` when the PostScript has none)."""
        return KNOWN_VERSIONS.get(self.file_version[:2], "0.11") if self.file_version else "0.11"

    @property
    def writer_version_name(self) -> str:
        """Name of the writer version (``ORC_135``...)."""
        return WRITER_VERSION_NAMES.get(self.writer_version, f"FUTURE({self.writer_version})")

    @property
    def hybrid_calendar(self) -> bool:
        """Whether dates/timestamps in the file count days in the hybrid Julian/Gregorian calendar."""
        if self.calendar == pb.JULIAN_GREGORIAN:
            return True
        return self.calendar == pb.UNKNOWN_CALENDAR and self.writer_id == 0

    @property
    def has_bad_bloom_filters(self) -> bool:
        """True when the file's bloom filters are known to be wrong (ORC-1024) and must be ignored."""
        return bloom_mod.has_bad_bloom_filters(self.writer_id, self.software_version)

    @property
    def file_statistics(self) -> list[ColumnStatistics]:
        """File-level statistics, one per column id (converted from the footer once per reader; a new list each
        time, of the same immutable statistics)."""
        if self._file_statistics is None:
            self._file_statistics = [self._typed_stats(st, i) for i, st in enumerate(self._footer.statistics)]
        return list(self._file_statistics)

    def _typed_stats(self, msg: pb.ColumnStatistics, column: int) -> ColumnStatistics:
        node = self._columns[column] if column < len(self._columns) else None
        try:
            return statistics_from_proto(msg, node)
        except OrcError as err:
            raise err.with_context(file=self.path, column=column) from None

    @property
    def _metadata_section(self) -> pb.Metadata:
        """The Metadata section (stripe statistics), parsed on first use."""
        if self._metadata is None:
            raw = self._metadata_bytes if self.file_length else b""
            self._metadata = _parse(pb.Metadata, self._decompress(raw, "metadata"), "metadata section", self.path)
        return self._metadata

    @property
    def stripe_statistics(self) -> list[list[ColumnStatistics]]:
        """Per stripe, the statistics of every column (empty when the file has none)."""
        return [
            [self._typed_stats(st, i) for i, st in enumerate(ss.col_stats)] for ss in self._metadata_section.stripe_stats
        ]

    def column_statistics(self, column: int | str) -> ColumnStatistics:
        """File statistics of one column (by id or dotted name)."""
        cid = self._column_id(column)
        if cid >= len(self._footer.statistics):
            raise self._error(f"the file has no statistics for column {cid}")
        return self._typed_stats(self._footer.statistics[cid], cid)

    def _column_id(self, column: int | str) -> int:
        if isinstance(column, int):
            if not 0 <= column < len(self._columns):
                raise self._error(f"column id {column} is not in the schema {self.schema}")
            return column
        return self.schema.find(column).id

    def close(self) -> None:
        """Release the file."""
        self._source.close()

    def __enter__(self) -> OrcReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OrcReader({self.path!r}, rows={self.num_rows}, schema={self.schema})"

    # ------------------------------------------------------------------------------------------------ stripes

    def _stripe(self, index: int) -> StripeInformation:
        if not 0 <= index < len(self.stripes):
            raise self._error(f"stripe {index} does not exist; the file has {len(self.stripes)} stripes")
        return self.stripes[index]

    def _stripe_footer(self, index: int) -> pb.StripeFooter:
        """The parsed (and validated) footer of stripe ``index``."""
        cached = self._stripe_footers.get(index)
        if cached is not None:
            return cached
        info = self._stripe(index)
        end = info.offset + info.index_length + info.data_length
        limit = self._tail_start
        if info.offset < 0 or info.offset >= max(limit, 1) or end + info.footer_length > limit:
            raise self._error(
                f"stripe at bytes {info.offset}..{end + info.footer_length} does not fit before the file tail at "
                f"{limit}", stripe=index,
            )
        if info.number_of_rows > MAX_STRIPE_ROWS:
            raise self._error(f"stripe claims {info.number_of_rows} rows", stripe=index)
        raw = self._source.read(end, info.footer_length, "stripe footer")
        try:
            data = decompress_stream(self.compression, self.compression_block_size, raw,
                                     max_output=self.max_stream_bytes)
        except OrcError as err:
            raise err.with_context(file=self.path, stripe=index, stream="stripe footer") from None
        footer = _parse(pb.StripeFooter, data, f"footer of stripe {index}", self.path, stripe=index)
        n = len(self._columns)
        if len(footer.columns) < n:
            raise self._error(
                f"bad number of ColumnEncodings in StripeFooter: expected={n}, actual={len(footer.columns)}",
                stripe=index,
            )
        self._stripe_footers[index] = footer
        return footer

    def _stripe_streams(self, index: int) -> StripeStreams:
        info = self._stripe(index)
        footer = self._stripe_footer(index)
        return StripeStreams(
            self._source, index, info.offset, info.index_length, info.data_length, footer, self.compression,
            self.compression_block_size, len(self._columns), self.max_stream_bytes,
        )

    def stream_lengths(self, stripe: int) -> list[tuple[int, str, int]]:
        """(column id, stream kind as ORC names it: ``ROW_INDEX``, ``PRESENT``, ``DATA``, ``LENGTH``...,
        length in bytes) of each stream of a stripe, in file order."""
        return [
            (int(s.column), STREAM_KIND_NAMES.get(int(s.kind), str(int(s.kind))), int(s.length))
            for s in self._stripe_footer(stripe).streams
        ]

    def column_encoding(self, stripe: int, column: int | str) -> str:
        """The encoding name (``DIRECT_V2``, ``DICTIONARY``...) of a column in a stripe."""
        cid = self._column_id(column)
        kind = int(self._stripe_footer(stripe).columns[cid].kind)
        return ENCODING_NAMES.get(kind, str(kind))

    def writer_timezone(self, stripe: int) -> str | None:
        """The writer time zone recorded in a stripe footer (None when absent)."""
        footer = self._stripe_footer(stripe)
        if not footer.HasField("writer_timezone"):
            return None
        tz = footer.writer_timezone
        return tz if isinstance(tz, str) else tz.decode("utf-8", "replace")

    # ------------------------------------------------------------------------------------------------ indexes

    def row_index(self, stripe: int, column: int | str, _streams: StripeStreams | None = None
                  ) -> list[RowGroupIndexEntry]:
        """The row index of a column in a stripe: positions and statistics of each row group ([] if none)."""
        cid = self._column_id(column)
        streams = _streams or self._stripe_streams(stripe)
        s = streams.stream(cid, pb.Stream.ROW_INDEX)
        if s is None:
            return []
        index = _parse(pb.RowIndex, s.data, "row index", self.path, stripe=stripe, column=cid, stream="ROW_INDEX")
        node = self._columns[cid]
        out = []
        for entry in index.entry:
            stats = None
            if entry.HasField("statistics"):
                try:
                    stats = statistics_from_proto(entry.statistics, node)
                except OrcError as err:
                    raise err.with_context(file=self.path, stripe=stripe, column=cid, stream="ROW_INDEX") from None
            out.append(RowGroupIndexEntry(tuple(int(p) for p in entry.positions), stats))
        return out

    def bloom_filter_columns(self, stripe: int) -> list[int]:
        """Column ids that have a bloom filter stream (of either kind) in the stripe."""
        footer = self._stripe_footer(stripe)
        kinds = (pb.Stream.BLOOM_FILTER, pb.Stream.BLOOM_FILTER_UTF8)
        return sorted({int(s.column) for s in footer.streams if s.kind in kinds})

    def bloom_filters(self, stripe: int, column: int | str) -> list[BloomFilter] | None:
        """The column's bloom filters in a stripe, one per row group; None when there are none or they must not be
        trusted (see the module docstring)."""
        cid = self._column_id(column)
        if self.has_bad_bloom_filters:
            return None
        streams = self._stripe_streams(stripe)
        node = self._columns[cid]
        encoding = streams.encoding(cid)
        bloom_encoding = int(encoding.bloom_encoding) if encoding.HasField("bloom_encoding") else 0
        utf8 = streams.stream(cid, pb.Stream.BLOOM_FILTER_UTF8)
        if utf8 is not None:
            if bloom_encoding > bloom_mod.BLOOM_ENCODING_UTF8_UTC:
                return None
            if node.category in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT) and bloom_encoding == 0:
                return None
            return self._parse_blooms(utf8.data, stripe, cid)
        legacy = streams.stream(cid, pb.Stream.BLOOM_FILTER)
        if legacy is None:
            return None
        # ORC Java distrusts legacy filters of decimals, of strings before HIVE-12055 and of timestamps before ORC-135
        if node.category == Category.DECIMAL:
            return None
        if node.category in (Category.STRING, Category.CHAR, Category.VARCHAR) and self.writer_version < 3:
            return None
        if node.category in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT) and self.writer_version < 6:
            return None
        return self._parse_blooms(legacy.data, stripe, cid)

    def _parse_blooms(self, data: bytes | bytearray | memoryview, stripe: int, column: int) -> list[BloomFilter] | None:
        index = _parse(pb.BloomFilterIndex, data, "bloom filter index", self.path, stripe=stripe, column=column)
        out = []
        for entry in index.bloom_filter:
            words = len(entry.utf8bitset) // 8 if entry.HasField("utf8bitset") else len(entry.bitset)
            k = int(entry.num_hash_functions)
            # a pre-release layout (e.g. Hive 0.14's over1k_bloom.orc) parses into nonsense shapes: not usable
            if words == 0 or k == 0 or k > 64 or k > words * 64:
                return None
            try:
                out.append(BloomFilter._from_proto(entry))
            except OrcError as err:
                raise err.with_context(file=self.path, stripe=stripe, column=column) from None
        return out

    # ------------------------------------------------------------------------------------------------ data

    def _projection(self, columns: Sequence[str | int] | None) -> tuple[TypeDescription, set[int]]:
        """The projected schema (nodes keep their file column ids) and the column ids to read."""
        if columns is None:
            return self.schema, set(range(len(self._columns)))
        selected: set[int] = set()
        for c in columns:
            node = self._columns[self._column_id(c)] if isinstance(c, int) else self.schema.find(c)
            selected.update(range(node.id, node.max_id + 1))

        def ancestors_of(node: TypeDescription) -> bool:
            return any(node.id <= s <= node.max_id for s in selected)

        def project(node: TypeDescription) -> TypeDescription:
            if node.id in selected or not node.children:
                return node
            if node.category == Category.STRUCT:
                pairs = [(n, project(c)) for n, c in zip(node.field_names, node.children, strict=True) if ancestors_of(c)]
                return _replace_children(node, [c for _, c in pairs], [n for n, _ in pairs])
            # lists, maps and unions are read whole
            selected.update(range(node.id, node.max_id + 1))
            return node

        if not ancestors_of(self.schema):
            raise self._error("no columns selected")
        projected = project(self.schema)
        include = {n.id for n in _walk(projected)}
        return projected, include

    def _context(self, stripe: int, streams: StripeStreams) -> ReadContext:
        tz = self.writer_timezone(stripe) or self.default_timezone
        return ReadContext(
            streams=streams,
            file_name=self.path,
            stripe=stripe,
            decimal64_version=self.file_version[:2] == (1, 9999),
            hybrid_calendar=self.convert_calendar and self.hybrid_calendar,
            writer_timezone=tz,
        )

    def _decode(self, schema: TypeDescription, include: set[int], stripe: int, count: int,
                streams: StripeStreams, ctx: ReadContext) -> ColumnVector:
        readable = include - self._encrypted_columns
        streams.prefetch(readable, DATA_AREA_KINDS)
        try:
            return _decode_projected(schema, count, ctx, self._encrypted_columns)
        except OrcError as err:
            raise err.with_context(file=self.path, stripe=stripe) from None
        except (MemoryError, OverflowError, IndexError, ValueError) as exc:
            # a corrupt file can still drive numpy into an impossible request; report it as the file's fault
            raise self._error(f"corrupt column data: {type(exc).__name__}: {exc}", stripe=stripe) from None

    def read_stripe(self, stripe: int, columns: Sequence[str | int] | None = None) -> Batch:
        """All rows of one stripe."""
        info = self._stripe(stripe)
        schema, include = self._projection(columns)
        streams = self._stripe_streams(stripe)
        ctx = self._context(stripe, streams)
        root = self._decode(schema, include, stripe, info.number_of_rows, streams, ctx)
        return Batch(root, stripe, info.first_row)

    def read(self, columns: Sequence[str | int] | None = None, stripe: int | None = None) -> Batch:
        """All rows (of one stripe when ``stripe`` is given) as one batch."""
        if stripe is not None:
            return self.read_stripe(stripe, columns)
        if len(self.stripes) > 1 and self.schema.category == Category.STRUCT and not self._encrypted_columns:
            joined = self._read_by_column(columns)
            if joined is not None:
                return joined
        parts = [self.read_stripe(i, columns) for i in range(len(self.stripes))]
        if not parts:
            schema, _ = self._projection(columns)
            return Batch(_empty_vector(schema), None, 0)
        if len(parts) == 1:
            return parts[0]
        return Batch(concat([p.root for p in parts]), None, 0)

    def _read_by_column(self, columns: Sequence[str | int] | None) -> Batch | None:
        """Every stripe of a file whose root struct has no nulls, one top-level field at a time: each field's
        stripes are joined right after they are decoded, while their arrays are still in cache (joining all
        fields at the end costs several times more). None when the root struct has nulls somewhere."""
        schema, include = self._projection(columns)
        stripes = [self._stripe_streams(i) for i in range(len(self.stripes))]
        if any(streams.has(schema.id, pb.Stream.PRESENT) for streams in stripes):
            return None
        contexts = [self._context(i, streams) for i, streams in enumerate(stripes)]
        children = []
        for child in schema.children:
            ids = {node.id for node in _walk(child)} & include
            parts = []
            for i, (streams, ctx) in enumerate(zip(stripes, contexts, strict=True)):
                parts.append(self._decode(child, ids, i, self.stripes[i].number_of_rows, streams, ctx))
                for key in [key for key in streams.locations if key[0] in ids]:
                    streams.drop(*key)
            children.append(concat(parts))
        total = sum(info.number_of_rows for info in self.stripes)
        return Batch(StructVector(schema, total, None, children), None, 0)

    def iter_batches(self, batch_size: int = DEFAULT_BATCH_SIZE, columns: Sequence[str | int] | None = None
                     ) -> Iterator[Batch]:
        """Batches of at most ``batch_size`` rows, stripe by stripe (a batch never spans two stripes)."""
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        for i in range(len(self.stripes)):
            whole = self.read_stripe(i, columns)
            for start in range(0, whole.num_rows, batch_size):
                yield whole.slice(start, min(start + batch_size, whole.num_rows))

    def rows(self, columns: Sequence[str | int] | None = None) -> Iterator[Any]:
        """Every row as Python values (a dict per row for a struct schema)."""
        for batch in self.iter_batches(columns=columns):
            yield from batch.to_pylist()

    # ------------------------------------------------------------------------------------------------ seeking

    def row_group_count(self, stripe: int) -> int:
        """Number of row groups in a stripe (0 when the file has no row index)."""
        info = self._stripe(stripe)
        if self.row_index_stride <= 0:
            return 0
        return -(-info.number_of_rows // self.row_index_stride)

    def read_row_group(self, stripe: int, group: int, columns: Sequence[str | int] | None = None,
                       num_groups: int = 1) -> Batch:
        """Rows of ``num_groups`` row groups from ``group`` on, decoded from the row-index positions (only the
        streams from those positions onwards are decoded)."""
        info = self._stripe(stripe)
        stride = self.row_index_stride
        groups = self.row_group_count(stripe)
        if stride <= 0 or groups == 0:
            raise self._error("the file has no row index (rowIndexStride is 0)", stripe=stripe)
        if not 0 <= group < groups or num_groups < 1:
            raise self._error(f"row group {group} does not exist; stripe {stripe} has {groups}", stripe=stripe)
        first = group * stride
        count = min(info.number_of_rows, (group + num_groups) * stride) - first
        schema, include = self._projection(columns)
        streams = self._stripe_streams(stripe)
        ctx = self._context(stripe, streams)
        if group > 0:
            # the first row group starts where the streams start (some Java writers leave its positions out)
            compressed = self.compression != CompressionKind.NONE
            cursors: dict[int, PositionCursor] = {}
            readable = include - self._encrypted_columns
            streams.prefetch(readable, frozenset({pb.Stream.ROW_INDEX}))
            for cid in readable:
                entries = self.row_index(stripe, cid, streams)
                streams.drop(cid, pb.Stream.ROW_INDEX)
                if group >= len(entries):
                    raise self._error(f"row index has {len(entries)} entries, row group {group} is missing",
                                      stripe=stripe, column=cid, stream="ROW_INDEX")
                cursors[cid] = PositionCursor(list(entries[group].positions), compressed, cid)
            ctx.cursors = cursors
        root = self._decode(schema, include, stripe, count, streams, ctx)
        return Batch(root, stripe, info.first_row + first)

    def seek_row_group(self, stripe: int, group: int, columns: Sequence[str | int] | None = None,
                       batch_size: int = DEFAULT_BATCH_SIZE) -> Iterator[Batch]:
        """Batches from the start of a row group to the end of the file (the rest of that stripe through the row
        index positions, then whole stripes)."""
        groups = self.row_group_count(stripe)
        rest = self.read_row_group(stripe, group, columns, num_groups=groups - group)
        for start in range(0, rest.num_rows, batch_size):
            yield rest.slice(start, min(start + batch_size, rest.num_rows))
        for i in range(stripe + 1, len(self.stripes)):
            whole = self.read_stripe(i, columns)
            for start in range(0, whole.num_rows, batch_size):
                yield whole.slice(start, min(start + batch_size, whole.num_rows))

    def read_rows(self, start: int, stop: int, columns: Sequence[str | int] | None = None) -> Batch:
        """Rows ``start..stop`` of the file, seeking through the row index where there is one."""
        if not 0 <= start <= stop:
            raise ValueError("need 0 <= start <= stop")
        stop = min(stop, sum(s.number_of_rows for s in self.stripes))
        parts: list[Batch] = []
        for info in self.stripes:
            lo, hi = info.first_row, info.first_row + info.number_of_rows
            if hi <= start or lo >= stop:
                continue
            a, b = max(start, lo) - lo, min(stop, hi) - lo
            stride = self.row_index_stride
            if stride > 0 and self.row_group_count(info.index) and self._has_row_index(info.index):
                g0, g1 = a // stride, (b - 1) // stride
                part = self.read_row_group(info.index, g0, columns, num_groups=g1 - g0 + 1)
                parts.append(part.slice(a - g0 * stride, b - g0 * stride))
            else:
                parts.append(self.read_stripe(info.index, columns).slice(a, b))
        if not parts:
            schema, _ = self._projection(columns)
            return Batch(_empty_vector(schema), None, start)
        return Batch(concat([p.root for p in parts]), None, start)

    def _has_row_index(self, stripe: int) -> bool:
        return any(s.kind == pb.Stream.ROW_INDEX for s in self._stripe_footer(stripe).streams)


def _walk(node: TypeDescription) -> Iterator[TypeDescription]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _replace_children(node: TypeDescription, children: list[TypeDescription], names: list[str]) -> TypeDescription:
    return replace(node, children=tuple(children), field_names=tuple(names))


def _decode_projected(node: TypeDescription, count: int, ctx: ReadContext, encrypted: set[int]) -> ColumnVector:
    if node.id in encrypted:
        return _all_null_vector(node, count)
    if node.category == Category.STRUCT and any(c.id in encrypted for c in _walk(node)):
        # decode the struct itself, then its fields one by one so that encrypted ones come back null

        present = _present(ctx, node, count)
        n = count if present is None else int(np.count_nonzero(present))
        kids = [_decode_projected(c, n, ctx, encrypted) for c in node.children]
        vec = StructVector(node, n, None, kids)
        return vec if present is None else vec.spread(present)
    return decode_column(node, count, ctx)


def _all_null_vector(node: TypeDescription, count: int) -> ColumnVector:
    vec = _empty_vector(node)
    mask = np.zeros(count, dtype=bool)
    return vec.spread(mask)


def _empty_vector(node: TypeDescription) -> ColumnVector:
    """A vector of the type with no slots."""
    c = node.category
    if c in (Category.BOOLEAN,):
        return vectors_mod.LongVector(node, 0, None, np.zeros(0, bool))
    if c in (Category.BYTE, Category.SHORT, Category.INT, Category.LONG, Category.DATE):
        dtype = {Category.BYTE: np.int8, Category.SHORT: np.int16, Category.INT: np.int32}.get(c, np.int64)
        return vectors_mod.LongVector(node, 0, None, np.zeros(0, dtype))
    if c in (Category.FLOAT, Category.DOUBLE):
        return vectors_mod.DoubleVector(node, 0, None, np.zeros(0, np.float32 if c == Category.FLOAT else np.float64))
    if c in (Category.STRING, Category.CHAR, Category.VARCHAR, Category.BINARY):
        return vectors_mod.BytesVector(node, 0, None, np.zeros(1, np.int64), b"")
    if c == Category.DECIMAL:
        return vectors_mod.DecimalVector(node, 0, None, np.zeros(0, np.int64), node.scale or 0,
                               np.zeros(0, np.int64) if not node.precision else None)
    if c in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
        return vectors_mod.TimestampVector(node, 0, None, np.zeros(0, np.int64), np.zeros(0, np.int64))
    if c == Category.LIST:
        return vectors_mod.ListVector(node, 0, None, np.zeros(1, np.int64), _empty_vector(node.children[0]))
    if c == Category.MAP:
        return vectors_mod.MapVector(node, 0, None, np.zeros(1, np.int64), _empty_vector(node.children[0]),
                           _empty_vector(node.children[1]))
    if c == Category.STRUCT:
        return vectors_mod.StructVector(node, 0, None, [_empty_vector(ch) for ch in node.children])
    return vectors_mod.UnionVector(node, 0, None, np.zeros(0, np.int8), np.zeros(0, np.int64),
                         [_empty_vector(ch) for ch in node.children])

