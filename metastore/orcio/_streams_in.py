"""Reading side of the ORC stream layer: file access, a stripe's stream directory, and row-index positions.

:class:`FileSource` reads byte ranges of the file (validated against its size). :class:`StripeStreams` locates
every stream of a stripe from the stripe footer (streams follow each other in footer order from the stripe's
offset), reads only the streams of the columns asked for (adjacent ranges merged into one read) and
decompresses each on first use. :class:`PositionCursor` walks one column's row-index positions.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol

import numpy as np

from ._compression import CompressionKind, DecompressedStream, decompress_stream_indexed
from ._errors import OrcError
from ._proto import orc_proto_pb2 as pb

STREAM_KIND_NAMES = {v.number: v.name for v in pb.Stream.Kind.DESCRIPTOR.values}
ENCODING_NAMES = {v.number: v.name for v in pb.ColumnEncoding.Kind.DESCRIPTOR.values}
INDEX_STREAM_KINDS = frozenset({pb.Stream.ROW_INDEX, pb.Stream.BLOOM_FILTER, pb.Stream.BLOOM_FILTER_UTF8})
#: streams at least this long are read on their own, smaller neighbours share one read
SHARED_READ_LIMIT = 1 << 16


class SeekableInput(Protocol):
    """What the reader needs of a file object it is given: ``seek`` (to find the size and each range) and
    ``read``. An optional ``name`` attribute names the file in errors."""

    def seek(self, offset: int, whence: int = ..., /) -> int:
        """Move to ``offset`` (relative to ``whence``); returns the new position."""
        ...

    def read(self, size: int = ..., /) -> bytes:
        """Up to ``size`` bytes from the current position."""
        ...


class FileSource:
    """Random access to the bytes of an ORC file (a path, an open binary file or a bytes object)."""

    def __init__(self, source: str | os.PathLike[str] | SeekableInput | bytes | bytearray | memoryview) -> None:
        self._owned: BinaryIO | None = None
        self._buffer: bytes | None = None
        self._file: SeekableInput | None
        if isinstance(source, bytes | bytearray | memoryview):
            self._buffer = bytes(source)
            self.name = "<bytes>"
            self.size = len(self._buffer)
            self._file = None
        elif isinstance(source, str | os.PathLike):
            self.name = os.fspath(source)
            try:
                self._owned = open(self.name, "rb")  # noqa: SIM115 - closed by close()
            except OSError as exc:
                raise OrcError(f"cannot open ORC file: {exc.strerror or exc}", file=str(self.name)) from None
            self._file = self._owned
            self.size = os.fstat(self._owned.fileno()).st_size
        else:
            self._file = source
            self.name = str(getattr(source, "name", "<stream>"))
            try:
                self.size = source.seek(0, io.SEEK_END)
            except (OSError, AttributeError, ValueError) as exc:
                raise OrcError(f"ORC input must be seekable: {exc}") from None

    def _check_range(self, offset: int, length: int, what: str) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise OrcError(
                f"{what} at bytes {offset}..{offset + length} lies outside the file of {self.size} bytes",
                file=self.name,
            )

    def read(self, offset: int, length: int, what: str = "data") -> bytes:
        """Exactly ``length`` bytes at ``offset``; OrcError when the range is outside the file."""
        self._check_range(offset, length, what)
        if self._buffer is not None:
            return self._buffer[offset : offset + length]
        assert self._file is not None
        if self._owned is not None:
            data = os.pread(self._owned.fileno(), length, offset)
        else:
            self._file.seek(offset)
            data = self._file.read(length)
        if len(data) != length:
            raise OrcError(f"short read of {what}: {len(data)} of {length} bytes at {offset}", file=self.name)
        return data

    def read_view(self, offset: int, length: int, what: str = "data") -> memoryview:
        """Like :meth:`read` but as a memoryview: of the source itself for a bytes source (no copy); for a file
        opened by path, of a fresh numpy buffer read straight into (large ones are backed by huge pages, so few
        page faults); of :meth:`read`'s bytes for other file objects."""
        if self._owned is None and self._buffer is None:
            return memoryview(self.read(offset, length, what))
        self._check_range(offset, length, what)
        if self._buffer is not None:
            return memoryview(self._buffer)[offset : offset + length]
        out = np.empty(length, dtype=np.uint8).data
        assert self._owned is not None  # neither a buffer nor a borrowed file (handled above)
        got = 0
        while got < length:
            n = os.preadv(self._owned.fileno(), [out[got:]], offset + got)
            if n <= 0:
                break
            got += n
        if got != length:
            raise OrcError(f"short read of {what}: {got} of {length} bytes at {offset}", file=self.name)
        return out

    def close(self) -> None:
        """Close the file if this object opened it."""
        if self._owned is not None:
            self._owned.close()
            self._owned = None


@dataclass(frozen=True)
class StreamLocation:
    """One stream of a stripe: its kind, column, absolute file offset and length."""

    kind: int
    column: int
    offset: int
    length: int

    @property
    def kind_name(self) -> str:
        """The stream kind's name (``DATA``, ``PRESENT``...)."""
        return STREAM_KIND_NAMES.get(self.kind, str(self.kind))


class StripeStreams:
    """The streams of one stripe for a set of columns, decompressed on first use."""

    def __init__(
        self,
        source: FileSource,
        stripe_index: int,
        offset: int,
        index_length: int,
        data_length: int,
        footer: pb.StripeFooter,
        compression: CompressionKind,
        block_size: int,
        num_columns: int,
        max_stream_bytes: int,
    ) -> None:
        self.source = source
        self.stripe_index = stripe_index
        self.footer = footer
        self.compression = compression
        self.block_size = block_size
        self.max_stream_bytes = max_stream_bytes
        self.locations: dict[tuple[int, int], StreamLocation] = {}
        end = offset + index_length + data_length
        pos = offset
        for s in footer.streams:
            length = int(s.length)
            kind = int(s.kind)
            column = int(s.column)
            if pos + length > end:
                raise OrcError(
                    f"stream {STREAM_KIND_NAMES.get(kind, kind)} of column {column} ({length} bytes) runs past the "
                    f"end of the stripe's index and data ({end - offset} bytes)",
                    file=source.name, stripe=stripe_index, column=column,
                )
            if column < num_columns:
                # the first stream of a kind wins, as in ORC Java; encrypted variants have their own lists
                self.locations.setdefault((column, kind), StreamLocation(kind, column, pos, length))
            pos += length
        self._raw: dict[tuple[int, int], bytes | memoryview] = {}
        self._decoded: dict[tuple[int, int], DecompressedStream] = {}

    def has(self, column: int, kind: int) -> bool:
        """Whether the stripe has a stream of this kind for the column."""
        return (column, kind) in self.locations

    def prefetch(self, columns: set[int], kinds: frozenset[int] | None = None) -> None:
        """Read the raw bytes of the streams of ``columns`` (only ``kinds`` if given), nothing else.

        Runs of small back-to-back streams are fetched with one read; a large stream is read on its own (cutting
        it out of a shared read would copy it twice). Streams are never merged across a gap, so a projection
        never reads the bytes of columns it did not ask for.
        """
        wanted = sorted(
            (loc for key, loc in self.locations.items()
             if key[0] in columns and (kinds is None or key[1] in kinds) and key not in self._raw and loc.length),
            key=lambda loc: loc.offset,
        )
        group: list[StreamLocation] = []
        for loc in [*wanted, None]:
            alone = loc is not None and loc.length >= SHARED_READ_LIMIT
            if group and (loc is None or alone or loc.offset != group[-1].offset + group[-1].length):
                self._read_group(group)
                group = []
            if loc is None:
                break
            if alone:
                self._read_group([loc])
            else:
                group.append(loc)

    def _read_group(self, group: list[StreamLocation]) -> None:
        if len(group) == 1:
            g = group[0]
            self._raw[(g.column, g.kind)] = self.source.read_view(g.offset, g.length, f"stream {g.kind_name}")
            return
        start = group[0].offset
        blob = self.source.read(start, group[-1].offset + group[-1].length - start,
                                f"stripe {self.stripe_index} streams")
        for g in group:
            self._raw[(g.column, g.kind)] = blob[g.offset - start : g.offset - start + g.length]

    def stream(self, column: int, kind: int) -> DecompressedStream | None:
        """The decompressed stream, or None when the stripe has none of that kind for the column."""
        key = (column, kind)
        found = self._decoded.get(key)
        if found is not None:
            return found
        loc = self.locations.get(key)
        if loc is None:
            return None
        raw = self._raw.pop(key, None)
        if raw is None:
            raw = self.source.read(loc.offset, loc.length, f"stream {loc.kind_name} of column {column}")
        try:
            decoded = decompress_stream_indexed(self.compression, self.block_size, raw, max_output=self.max_stream_bytes)
        except OrcError as err:
            raise err.with_context(file=self.source.name, stripe=self.stripe_index, column=column,
                                   stream=loc.kind_name) from None
        self._decoded[key] = decoded
        return decoded

    def drop(self, column: int, kind: int) -> None:
        """Forget a decoded stream (frees memory once a column is done)."""
        self._decoded.pop((column, kind), None)

    def encoding(self, column: int) -> pb.ColumnEncoding:
        """The column's encoding from the stripe footer."""
        return self.footer.columns[column]


class PositionCursor:
    """Consumes one column's row-index positions stream by stream (see ORC's RowIndexEntry.positions)."""

    def __init__(self, positions: list[int], compressed: bool, column: int) -> None:
        self.positions = positions
        self.compressed = compressed
        self.column = column
        self.i = 0

    def next_value(self) -> int:
        """The next raw position number."""
        if self.i >= len(self.positions):
            raise OrcError(f"row index entry has too few positions ({len(self.positions)})", column=self.column)
        v = self.positions[self.i]
        self.i += 1
        return v

    def stream_offset(self, stream: DecompressedStream | None) -> int:
        """Consume a byte position (1 number uncompressed, 2 compressed) and map it into the decoded stream."""
        if self.compressed:
            chunk = self.next_value()
            inside = self.next_value()
            if stream is None:
                return 0
            return stream.offset_of(chunk, inside)
        offset = self.next_value()
        if stream is not None and offset > len(stream.data):
            raise OrcError(f"row index position {offset} is past the end of a {len(stream.data)}-byte stream",
                           column=self.column)
        return offset


def as_int_array(values: Sequence[int]) -> np.ndarray:
    """A repeated proto integer field as an int64 array."""
    return np.fromiter(values, dtype=np.int64, count=len(values))
