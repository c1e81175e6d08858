"""Writing ORC files: :class:`OrcWriter`.

    with OrcWriter("out.orc", "struct<id:bigint,name:string>", {"orc.compress": "ZLIB"}) as w:
        w.write_batch({"id": np.arange(3), "name": ["a", None, "c"]})
        w.write_rows([(4, "d"), (5, "e")])

Files follow ORC Java (``WriterImpl``, ``PhysicalFsWriter``, ``TreeWriter*``) field by field: stripes cut by
size, a row index every ``orc.row.index.stride`` rows with Java's positions, index streams before data streams,
PRESENT dropped from stripes without nulls, statistics and bloom filters as Java computes them, dictionary or
direct strings decided after the first row group. What differs on purpose:

* ``Footer.writer`` is 0 with ``writerVersion`` 9 (ORC_14, Java's current version), the research's second
  option: the streams, indexes, statistics and bloom filters are byte-for-byte what ORC Java 2.3 writes, so
  readers may apply exactly the trust they give Java files. An unregistered writer id (with version 6) would be
  the other choice, but pyarrow's ``ORCFile.writer`` raises "Unsupported writer ID" on those files.
  ``softwareVersion`` tells the files apart from Java's: the caller's ``software_version`` (an application
  passes its name and release), ``orcio`` when none is given.
* Dates and timestamps are proleptic Gregorian (``calendar`` = 2), as Python's ``datetime`` is; every stripe
  footer says ``writerTimezone`` = "UTC" and ``timestamp`` values are wall-clock times stored as UTC.
* Collection statistics count children per list/map (Java records its batch capacity instead).

Kept as Java does, though odd: the compression block shrinks for wide schemas (``getEstimatedBufferSize``)
unless ``orc.buffer.size.enforce``; decimal(<=18) sums follow Java's merge quirk (a file can show a sum its
stripe dropped); instants in (-1 s, 0) with a fraction read back one second late in every reader (the format
cannot store them; Java and C++ write the same seconds).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

import numpy as np

from ._column_input import ColumnData, ColumnValueError, TimestampValues, concat_columns, shred
from ._column_writers import ColumnStripe, WriterSettings, create_writer
from ._compression import CompressionKind
from ._errors import OrcError
from ._out_streams import Codec, CompressedBytes, compress, map_positions
from ._proto import orc_proto_pb2 as pb
from ._stats_builder import ColumnStats, merged, new_stats
from ._types import Category, TypeDescription

MAGIC = b"ORC"
#: Footer.writer: 0 (the ORC Java format rules; see the module docstring for why not an unregistered id)
WRITER_ID = 0
#: PostScript.writerVersion 9 = ORC_14, every Java fix included (UTC timestamp stats, UTF-8 bloom filters...)
WRITER_VERSION = 9
FILE_VERSION = (0, 12)
MIN_ROW_INDEX_STRIDE = 1000
MAX_COMPRESSION_BLOCK = (1 << 23) - 1
_FIRST_CHUNK_ROWS = 1024


#: Footer.softwareVersion when the caller names no writer identity: the library's own name, no version,
#: because orcio does not know which application (and which release of it) embeds it.
DEFAULT_SOFTWARE_VERSION = "orcio"


# ------------------------------------------------------------------------------------------------ options


def _bool_option(key: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise OrcError(f"option {key} must be true or false, got {text!r}")


def _int_option(key: str, text: str, low: int, high: int | None = None) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise OrcError(f"option {key} must be an integer, got {text!r}") from None
    if value < low or (high is not None and value > high):
        limit = f">= {low}" if high is None else f"in {low}..{high}"
        raise OrcError(f"option {key} must be {limit}, got {value}")
    return value


def _float_option(key: str, text: str) -> float:
    try:
        return float(str(text).strip())
    except ValueError:
        raise OrcError(f"option {key} must be a number, got {text!r}") from None


def _closest_buffer_size(size: int) -> int:
    pow2 = 1 if size == 1 else 1 << max(0, (size - 1).bit_length())
    return min(256 * 1024, max(4 * 1024, pow2))


@dataclass(frozen=True)
class WriterOptions:
    """Parsed ``orc.*`` options (ORC's own names and defaults)."""

    compression: CompressionKind = CompressionKind.ZSTD
    compression_block_size: int = 256 * 1024
    stripe_size: int = 64 * 1024 * 1024
    row_index_stride: int = 10_000
    bloom_filter_columns: str = ""
    bloom_filter_fpp: float = 0.01
    dictionary_key_threshold: float = 0.8
    encoding_strategy: str = "SPEED"
    compression_strategy: str = "SPEED"
    enforce_buffer_size: bool = False

    KNOWN = (
        "orc.compress",
        "orc.compress.size",
        "orc.stripe.size",
        "orc.row.index.stride",
        "orc.create.index",
        "orc.bloom.filter.columns",
        "orc.bloom.filter.fpp",
        "orc.dictionary.key.threshold",
        "orc.encoding.strategy",
        "orc.compression.strategy",
        "orc.buffer.size.enforce",
    )

    @classmethod
    def parse(cls, options: Mapping[str, str] | None) -> WriterOptions:
        """Validate ``options``; unknown keys and bad values raise OrcError naming the key."""
        values: dict[str, Any] = {}
        create_index = True
        for key, raw in (options or {}).items():
            text = str(raw)
            if key not in cls.KNOWN:
                raise OrcError(f"unknown ORC writer option {key!r}; known options: {', '.join(cls.KNOWN)}")
            if key == "orc.compress":
                name = text.strip().upper()
                if name in ("UNCOMPRESSED",):
                    name = "NONE"
                if name not in ("NONE", "ZLIB", "SNAPPY", "LZ4", "ZSTD"):
                    raise OrcError(f"option orc.compress must be NONE, ZLIB, SNAPPY, LZ4 or ZSTD, got {text!r}")
                values["compression"] = CompressionKind[name]
            elif key == "orc.compress.size":
                values["compression_block_size"] = _int_option(key, text, 1, MAX_COMPRESSION_BLOCK)
            elif key == "orc.stripe.size":
                values["stripe_size"] = _int_option(key, text, 1)
            elif key == "orc.row.index.stride":
                stride = _int_option(key, text, 0)
                if 0 < stride < MIN_ROW_INDEX_STRIDE:
                    raise OrcError(f"option {key} must be 0 or at least {MIN_ROW_INDEX_STRIDE} (as ORC Java), got {stride}")
                values["row_index_stride"] = stride
            elif key == "orc.create.index":
                create_index = _bool_option(key, text)
            elif key == "orc.bloom.filter.columns":
                values["bloom_filter_columns"] = text
            elif key == "orc.bloom.filter.fpp":
                fpp = _float_option(key, text)
                if not 0.0 < fpp < 1.0:
                    raise OrcError(f"option {key} must be between 0 and 1, got {text!r}")
                values["bloom_filter_fpp"] = fpp
            elif key == "orc.dictionary.key.threshold":
                values["dictionary_key_threshold"] = _float_option(key, text)
            elif key in ("orc.encoding.strategy", "orc.compression.strategy"):
                strategy = text.strip().upper()
                if strategy not in ("SPEED", "COMPRESSION"):
                    raise OrcError(f"option {key} must be SPEED or COMPRESSION, got {text!r}")
                values["encoding_strategy" if key == "orc.encoding.strategy" else "compression_strategy"] = strategy
            elif key == "orc.buffer.size.enforce":
                values["enforce_buffer_size"] = _bool_option(key, text)
        if not create_index:
            values["row_index_stride"] = 0
        return cls(**values)


def _bloom_columns(spec: str, schema: TypeDescription) -> frozenset[int]:
    """Column ids named in ``orc.bloom.filter.columns`` (names, dotted paths or ids; each with its subtree)."""
    spec = spec.strip()
    if not spec:
        return frozenset()
    if spec == "*":
        return frozenset(range(schema.id, schema.max_id + 1))
    out: set[int] = set()
    for name in spec.split(","):
        name = name.strip()
        if not name:
            continue
        try:
            node = schema.find(name)
        except OrcError as exc:
            raise OrcError(f"orc.bloom.filter.columns names {name!r}, which is not a column of {schema}") from exc
        out.update(range(node.id, node.max_id + 1))
    return frozenset(out)


# ------------------------------------------------------------------------------------------------ writer


@dataclass
class _ColumnOut:
    """One column of a stripe after compression."""

    stripe: ColumnStripe
    data_streams: list[tuple[int, CompressedBytes]]
    index_streams: list[tuple[int, bytes]]
    stats: ColumnStats


class OrcWriter:
    """Writes one ORC file. Use as a context manager, or call :meth:`close` at the end."""

    def __init__(
        self,
        path_or_file: str | os.PathLike[str] | BinaryIO,
        schema: TypeDescription | str,
        options: Mapping[str, str] | None = None,
        user_metadata: Mapping[str, bytes] | None = None,
        *,
        software_version: str = DEFAULT_SOFTWARE_VERSION,
    ) -> None:
        if not isinstance(software_version, str) or not software_version.strip():
            raise OrcError(f"software_version must be a non-empty string, got {software_version!r}")
        self.software_version = software_version
        self.schema = TypeDescription.parse(schema) if isinstance(schema, str) else schema
        if self.schema.id != 0:
            self.schema = self.schema.with_ids()
        self.options = WriterOptions.parse(options)
        opts = self.options
        columns = self.schema.max_id + 1
        block = opts.compression_block_size
        if not opts.enforce_buffer_size:
            # WriterImpl.getEstimatedBufferSize: smaller chunks when many columns share a stripe
            block = min(_closest_buffer_size(int(opts.stripe_size // (20 * columns))), block)
        self.codec = Codec(opts.compression, block)
        self.settings = WriterSettings(
            row_index_stride=opts.row_index_stride,
            bloom_columns=_bloom_columns(opts.bloom_filter_columns, self.schema) if opts.row_index_stride else frozenset(),
            bloom_fpp=opts.bloom_filter_fpp,
            dictionary_threshold=opts.dictionary_key_threshold,
            aligned_bitpacking=opts.encoding_strategy == "SPEED",
        )
        self._root_writer = create_writer(self.schema, self.settings)
        self._columns = self.schema.flatten()
        self._user_metadata: dict[str, bytes] = {}
        for key, value in (user_metadata or {}).items():
            self.add_user_metadata(key, value)
        if isinstance(path_or_file, (str, os.PathLike)):
            self._file: BinaryIO = open(path_or_file, "wb")  # noqa: SIM115 - closed in close()
            self._owns_file = True
            self._name = os.fspath(path_or_file)
        elif hasattr(path_or_file, "write"):
            self._file = path_or_file
            self._owns_file = False
            self._name = getattr(path_or_file, "name", "<stream>")
        else:
            raise OrcError(f"OrcWriter needs a path or a binary file object, got {type(path_or_file).__name__}")
        self._file.write(MAGIC)
        self._offset = len(MAGIC)
        self._pieces: list[ColumnData] = []
        self._buffered_rows = 0
        self._buffered_bytes = 0
        self._row_bytes: float | None = None
        self._stripes: list[pb.StripeInformation] = []
        self._stripe_stats: list[list[ColumnStats]] = []
        self._rows = 0
        self._closed = False

    # ------------------------------------------------------------------ public API

    def add_user_metadata(self, key: str, value: bytes) -> None:
        """Attach a (key, bytes) pair to the file footer (a later value for the same key wins)."""
        if not isinstance(key, str):
            raise OrcError(f"user metadata keys must be str, got {type(key).__name__}")
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise OrcError(f"user metadata value for {key!r} must be bytes, got {type(value).__name__}")
        self._user_metadata[key] = bytes(value)

    def write_batch(self, columns: Mapping[str, Any] | Sequence[Any] | Any) -> None:
        """Append rows given column-wise: a dict field name -> values (or a list of columns in field order).

        Values may be numpy arrays (masked arrays for nulls), or lists with None for nulls; nested values are
        Python lists (array), dicts or lists of pairs (map), dicts or tuples (struct), (tag, value) (union).
        A schema whose root is not a struct takes the single column itself.
        """
        self._check_open()
        fields = self._normalise_columns(columns)
        lengths = {len(c) for c in fields}
        if len(lengths) > 1:
            raise OrcError(f"columns of one batch must have the same length, got lengths {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        if self._row_bytes is None and n > _FIRST_CHUNK_ROWS:
            self._row_bytes = self._estimate_row_bytes(fields)
        pos = 0
        while pos < n:
            if self._row_bytes is None:
                take = min(n - pos, _FIRST_CHUNK_ROWS)
            else:
                room = max(self.options.stripe_size - self._buffered_bytes, 1)
                take = int(min(n - pos, max(1, -(-room // max(self._row_bytes, 1e-9)))))
            try:
                self._append([c[pos : pos + take] for c in fields], take)
            except ColumnValueError as exc:
                raise exc.shifted(pos) from None
            pos += take
            if self._buffered_bytes >= self.options.stripe_size:
                self._flush_stripe()

    def write_rows(self, rows: Iterable[Any], chunk_rows: int = 10_000) -> None:
        """Append rows given one by one: tuples in field order or dicts by field name (bare values when the
        root type is not a struct)."""
        self._check_open()
        chunk: list[Any] = []
        for row in rows:
            chunk.append(row)
            if len(chunk) >= chunk_rows:
                self._write_row_chunk(chunk)
                chunk = []
        if chunk:
            self._write_row_chunk(chunk)

    def close(self) -> None:
        """Flush the last stripe and write the file tail. Idempotent."""
        if self._closed:
            return
        try:
            if self._buffered_rows:
                self._flush_stripe()
            self._write_tail()
        finally:
            self._closed = True
            if self._owns_file:
                self._file.close()
            else:
                self._file.flush()

    def __enter__(self) -> OrcWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            # do not write a tail after a failure; leave the (incomplete) file closed
            self._closed = True
            if self._owns_file:
                self._file.close()

    @property
    def rows_written(self) -> int:
        """Rows handed to the writer so far (including buffered ones)."""
        return self._rows + self._buffered_rows

    # ------------------------------------------------------------------ input

    def _check_open(self) -> None:
        if self._closed:
            raise OrcError(f"ORC writer for {self._name} is closed")

    def _normalise_columns(self, columns: Any) -> list[Any]:
        root = self.schema
        if root.category != Category.STRUCT:
            return [self._sliceable(columns, "<root>")]
        names = list(root.field_names)
        if isinstance(columns, Mapping):
            unknown = [k for k in columns if k not in names]
            if unknown:
                raise OrcError(f"write_batch got columns {unknown} that are not fields of {root}")
            missing = [n for n in names if n not in columns]
            if missing:
                raise OrcError(f"write_batch is missing columns {missing} of {root}")
            return [self._sliceable(columns[n], n) for n in names]
        if isinstance(columns, (list, tuple)):
            if len(columns) != len(names):
                raise OrcError(f"write_batch needs {len(names)} columns for {root}, got {len(columns)}")
            return [self._sliceable(c, n) for c, n in zip(columns, names, strict=True)]
        raise OrcError(f"write_batch needs a dict of columns or a list of columns, got {type(columns).__name__}")

    @staticmethod
    def _sliceable(column: Any, name: str) -> Any:
        if isinstance(column, (np.ndarray, list, TimestampValues)):
            return column
        if isinstance(column, (str, bytes)) or not isinstance(column, Iterable):
            raise OrcError(f"column {name!r} must be an array or a list of values, got {type(column).__name__}")
        return list(column)

    def _estimate_row_bytes(self, fields: list[Any]) -> float:
        """Rough bytes per row from the first rows of a batch (to cut it into stripe-sized pieces at once)."""
        sample = [f[:_FIRST_CHUNK_ROWS] for f in fields]
        root = self.schema
        if root.category == Category.STRUCT:
            parts = [shred(t, data, name) for t, data, name in zip(root.children, sample, root.field_names, strict=True)]
            size = sum(p.total_raw_bytes() for p in parts)
        else:
            size = shred(root, sample[0], "").total_raw_bytes()
        return size / _FIRST_CHUNK_ROWS + 1

    def _write_row_chunk(self, rows: list[Any]) -> None:
        root = self.schema
        if root.category != Category.STRUCT:
            self.write_batch(rows)
            return
        names = root.field_names
        width = len(names)
        columns: list[list[Any]] = [[] for _ in range(width)]
        for i, row in enumerate(rows):
            if isinstance(row, Mapping):
                unknown = [k for k in row if k not in names]
                if unknown:
                    raise OrcError(f"row {self.rows_written + i} has fields {unknown} that are not in {root}")
                for f, name in enumerate(names):
                    columns[f].append(row.get(name))
            elif isinstance(row, (tuple, list)):
                if len(row) != width:
                    raise OrcError(f"row {self.rows_written + i} has {len(row)} values, the schema {width} fields")
                for f in range(width):
                    columns[f].append(row[f])
            else:
                raise OrcError(f"row {self.rows_written + i} must be a tuple or a dict, got {type(row).__name__}")
        self.write_batch(columns)

    def _append(self, fields: list[Any], rows: int) -> None:
        root = self.schema
        if root.category == Category.STRUCT:
            children = [shred(t, data, name) for t, data, name in zip(root.children, fields, root.field_names, strict=True)]
            piece = ColumnData(root, rows, None, None, children)
        else:
            piece = shred(root, fields[0], "")
        size = piece.total_raw_bytes() + rows  # at least a byte per row so empty structs still cut stripes
        self._pieces.append(piece)
        self._buffered_rows += rows
        self._buffered_bytes += size
        if rows:
            self._row_bytes = self._buffered_bytes / self._buffered_rows

    # ------------------------------------------------------------------ stripes

    def _flush_stripe(self) -> None:
        data = concat_columns(self._pieces)
        self._pieces = []
        rows = data.rows
        self._buffered_rows = 0
        self._buffered_bytes = 0
        if rows == 0:
            return
        stride = self.settings.row_index_stride
        if stride > 0:
            row_bounds = np.append(np.arange(0, rows, stride, dtype=np.int64), rows)
        else:
            row_bounds = np.array([0, rows], dtype=np.int64)
        tree = self._root_writer.write_stripe(data, row_bounds)
        columns: list[ColumnStripe] = []
        stack = [tree]
        while stack:
            node = stack.pop()
            columns.append(node)
            stack.extend(reversed(node.children))
        outs = [self._compress_column(col) for col in columns]
        self._write_stripe(outs, rows)

    def _compress_column(self, col: ColumnStripe) -> _ColumnOut:
        codec = self.codec
        data_streams = []
        mapped: dict[int, np.ndarray] = {}
        for piece in col.streams:
            stored = compress(codec, piece.data, piece.kind)
            data_streams.append((piece.kind, stored))
            if piece.positions is not None:
                mapped[piece.kind] = map_positions(codec, stored, piece.positions)
        stats = merged(self._columns[col.column], col.group_stats)
        stats.bytes_on_disk = sum(len(stored.data) for _, stored in data_streams)
        index_streams: list[tuple[int, bytes]] = []
        if self.settings.row_index_stride > 0:
            index = pb.RowIndex()
            for g, group_stats in enumerate(col.group_stats):
                entry = index.entry.add()
                for kind in col.position_kinds:
                    entry.positions.extend(int(p) for p in mapped[kind][g])
                entry.statistics.CopyFrom(group_stats.to_proto())
            index_streams.append((pb.Stream.ROW_INDEX, index.SerializeToString()))
            if col.bloom_filters is not None:
                blooms = pb.BloomFilterIndex()
                for bf in col.bloom_filters:
                    blooms.bloom_filter.append(bf._to_proto())
                index_streams.append((pb.Stream.BLOOM_FILTER_UTF8, blooms.SerializeToString()))
        return _ColumnOut(col, data_streams, index_streams, stats)

    def _write_stripe(self, outs: list[_ColumnOut], rows: int) -> None:
        codec = self.codec
        footer = pb.StripeFooter()
        chunks: list[bytes] = []
        index_length = 0
        for out in outs:
            for kind, raw in out.index_streams:
                stored = compress(codec, raw, kind)
                footer.streams.add(kind=kind, column=out.stripe.column, length=len(stored.data))
                chunks.append(stored.data)
                index_length += len(stored.data)
        data_length = 0
        for out in outs:
            for kind, stored in out.data_streams:
                footer.streams.add(kind=kind, column=out.stripe.column, length=len(stored.data))
                chunks.append(stored.data)
                data_length += len(stored.data)
        for out in outs:
            footer.columns.append(out.stripe.encoding)
        footer.writer_timezone = "UTC"
        footer_bytes = compress(codec, footer.SerializeToString()).data
        info = pb.StripeInformation(
            offset=self._offset,
            index_length=index_length,
            data_length=data_length,
            footer_length=len(footer_bytes),
            number_of_rows=rows,
        )
        for chunk in chunks:
            self._file.write(chunk)
        self._file.write(footer_bytes)
        self._offset += index_length + data_length + len(footer_bytes)
        self._stripes.append(info)
        self._stripe_stats.append([out.stats for out in outs])
        self._rows += rows

    # ------------------------------------------------------------------ tail

    def _write_tail(self) -> None:
        codec = self.codec
        metadata = pb.Metadata()
        for stripe_stats in self._stripe_stats:
            entry = metadata.stripe_stats.add()
            for st in stripe_stats:
                entry.col_stats.append(st.to_proto())
        metadata_bytes = compress(codec, metadata.SerializeToString()).data
        footer = pb.Footer(
            header_length=len(MAGIC),
            content_length=self._offset,
            number_of_rows=self._rows,
            row_index_stride=self.settings.row_index_stride,
            writer=WRITER_ID,
            calendar=pb.CalendarKind.PROLEPTIC_GREGORIAN,
            software_version=self.software_version,
        )
        footer.stripes.extend(self._stripes)
        footer.types.extend(self.schema._to_proto_types())
        for key in sorted(self._user_metadata):
            footer.metadata.add(name=key, value=self._user_metadata[key])
        for column_id, column in enumerate(self._columns):
            parts = [stats[column_id] for stats in self._stripe_stats]
            footer.statistics.append(merged(column, parts).to_proto() if parts else new_stats(column).to_proto())
        footer_bytes = compress(codec, footer.SerializeToString()).data
        postscript = pb.PostScript(
            footer_length=len(footer_bytes),
            compression=cast("pb.CompressionKind", int(codec.kind)),  # an int at run time, see types.py
            compression_block_size=codec.block_size,
            metadata_length=len(metadata_bytes),
            writer_version=WRITER_VERSION,
            magic=MAGIC.decode(),
        )
        postscript.version.extend(FILE_VERSION)
        ps_bytes = postscript.SerializeToString()
        if len(ps_bytes) > 255:
            raise OrcError(f"PostScript of {len(ps_bytes)} bytes does not fit its 1-byte length")
        self._file.write(metadata_bytes)
        self._file.write(footer_bytes)
        self._file.write(ps_bytes)
        self._file.write(bytes([len(ps_bytes)]))


def write_orc(
    path_or_file: str | os.PathLike[str] | BinaryIO,
    schema: TypeDescription | str,
    columns: Mapping[str, Any] | Sequence[Any],
    options: Mapping[str, str] | None = None,
    user_metadata: Mapping[str, bytes] | None = None,
    *,
    software_version: str = DEFAULT_SOFTWARE_VERSION,
) -> None:
    """Write one batch of columns to a new ORC file (a convenience around :class:`OrcWriter`)."""
    with OrcWriter(path_or_file, schema, options, user_metadata, software_version=software_version) as writer:
        writer.write_batch(columns)


__all__ = ["DEFAULT_SOFTWARE_VERSION", "WRITER_ID", "WRITER_VERSION", "OrcWriter", "WriterOptions", "write_orc"]
