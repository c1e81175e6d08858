"""The index file format shared by BTREE, BLOOM and MINMAX: checksummed blocks, a JSON description, a trailer.

    offset 0   b"MSIDX\\x00\\x01\\n"                       magic (8 bytes)
               block, block, ...                            each: raw or zstd bytes, CRC-32 in its reference
               description                                  UTF-8 JSON (sorted keys): kind, column, files, block refs
    end - 32   trailer: description offset (u64), length (u32), CRC-32 (u32), format version (u16),
               reserved (u16 + u32), magic again (8 bytes)   little-endian

A reader checks the trailer, the description's CRC and every block's CRC as it reads it; anything wrong is an
IndexFileCorrupt naming the file (the split filter then keeps the splits the file would have decided). Only
the blocks a lookup needs are read (``pread``-style range reads), so a B+tree point lookup touches the trailer,
the description and one block per tree level; opening reads the file's last TAIL_BYTES in one read (trailer,
description and the blocks written last, such as a B+tree's root), so a cold lookup costs fewer reads. Writing goes to a temporary name in the same directory and is
renamed into place, so readers see either the old file or the whole new one. Files are deterministic: the
same content gives the same bytes.
"""

from __future__ import annotations

import json
import os
import struct
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import cramjam

from metastore.index.errors import IndexFileCorrupt

try:
    import zstandard

    HAVE_ZSTANDARD = True
except ImportError:  # pragma: no cover - a declared dependency; cramjam compresses the same frames without it
    HAVE_ZSTANDARD = False

MAGIC = b"MSIDX\x00\x01\n"
#: 2: B+tree leaves with delta-encoded int64 keys and 16-bit stripe ids where they fit (btree.py); files of
#: version 1 (plain leaves) are still read
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_TRAILER = struct.Struct("<QIIHHI8s")
TRAILER_SIZE = _TRAILER.size
#: A description larger than this is not one we wrote (guards allocations against corrupt lengths).
MAX_DESCRIPTION_BYTES = 256 * 1024 * 1024
MAX_BLOCK_BYTES = 1 << 30
_CODEC_NONE = 0
_CODEC_ZSTD = 1
_ZSTD_LEVEL = 3
#: bytes at the end of a file read at once when it is opened, and kept for the blocks inside them
TAIL_BYTES = 16 * 1024


@dataclass(frozen=True)
class BlockRef:
    """Where a block is: offset and stored length, CRC-32 of the stored bytes, length once decompressed and
    the codec (0 none, 1 zstd)."""

    offset: int
    length: int
    crc: int
    raw_length: int
    codec: int

    def to_list(self) -> list[int]:
        return [self.offset, self.length, self.crc, self.raw_length, self.codec]

    @classmethod
    def from_list(cls, obj: Any, path: str) -> BlockRef:
        """A reference from the description; IndexFileCorrupt when it is not five sane integers."""
        if (
            not isinstance(obj, list)
            or len(obj) != 5
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in obj)
        ):
            raise IndexFileCorrupt(path, f"bad block reference {str(obj)[:80]}")
        ref = cls(*obj)
        if ref.codec not in (_CODEC_NONE, _CODEC_ZSTD) or ref.raw_length > MAX_BLOCK_BYTES:
            raise IndexFileCorrupt(path, f"bad block reference {obj}")
        return ref


#: a block as stored (bytes), its raw length, the stored bytes' CRC-32 and its codec
PackedBlock = tuple[bytes, int, int, int]


#: per thread, its reused zstd compression context (zstandard.ZstdCompressor is not safe to share between threads)
_compressors = threading.local()


def zstd_compress(raw: bytes) -> bytes:
    """One zstd frame of ``raw`` at _ZSTD_LEVEL, through this thread's reused compression context: cramjam sets
    up a new context per call, about 14 of the 19 us a sorted column's 8 KB leaf took (a reused context: 4.4 us;
    the same frame bytes, content size in the header, which cramjam and zstandard both decompress). cramjam
    when zstandard is not installed."""
    if not HAVE_ZSTANDARD:
        return bytes(cramjam.zstd.compress(raw, level=_ZSTD_LEVEL))
    compressor = getattr(_compressors, "zstd", None)
    if compressor is None:
        compressor = _compressors.zstd = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
    return compressor.compress(raw)


def pack_block(data: bytes | bytearray | memoryview, *, compress: bool = True) -> PackedBlock:
    """A block as IndexFileWriter stores it: zstd-compressed when that is smaller (blocks over 64 bytes), with
    its CRC. Pure, and its compression and CRC release the GIL, so writers may pack blocks in threads."""
    raw = bytes(data)
    stored = raw
    codec = _CODEC_NONE
    if compress and len(raw) > 64:
        packed = zstd_compress(raw)
        if len(packed) < len(raw):
            stored, codec = packed, _CODEC_ZSTD
    return stored, len(raw), zlib.crc32(stored), codec


#: bytes a writer appends between data syncs started in a thread (the blocks written so far go to disk while
#: the next ones are made, so finish()'s fsync has only the tail left: 0.40 -> 0.27 s for a 400 MB tree here)
SYNC_EVERY = 64 << 20
_datasync: Callable[[int], None] = getattr(os, "fdatasync", os.fsync)

#: buffers per os.writev (Linux's IOV_MAX)
_IOV_MAX = 1024


def write_all(fd: int, buffers: Sequence[bytes | memoryview], offset: int | None = None) -> None:
    """Write the buffers one after the other, resumed after partial writes: at the file's position (os.writev),
    or from ``offset`` on (os.pwritev; the descriptor's own position is neither used nor moved)."""
    pending = [memoryview(b) for b in buffers if len(b)]
    while pending:
        batch = pending[:_IOV_MAX]
        written = os.writev(fd, batch) if offset is None else os.pwritev(fd, batch, offset)
        if written <= 0:
            raise OSError(f"no bytes written to file descriptor {fd}")
        if offset is not None:
            offset += written
        while written and pending:
            if written >= len(pending[0]):
                written -= len(pending[0])
                pending.pop(0)
            else:
                pending[0] = pending[0][written:]
                written = 0


@dataclass(frozen=True)
class StagedFile:
    """An index file of ``size`` bytes written in full under the name ``temporary`` beside ``path``
    (IndexFileWriter.stage), to be published: synced to disk, then renamed into place, so a reader sees the
    whole file or none, as finish() does. ``temporary`` None: the file is in place already (nothing to do)."""

    temporary: str | None
    path: str
    size: int

    def publish(self) -> None:
        if self.temporary is None:
            return
        fd = os.open(self.temporary, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(self.temporary, self.path)

    def discard(self) -> None:
        """Remove an unpublished file (a build that failed)."""
        if self.temporary is not None:
            try:
                os.unlink(self.temporary)
            except FileNotFoundError:
                pass


class IndexFileWriter:
    """Writes one index file: blocks first, then ``finish(description)``. Use as a context manager; the file
    appears at ``path`` only when finish() succeeded."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self._file: BinaryIO = self._tmp.open("wb")
        self._file.write(MAGIC)
        self._offset = len(MAGIC)
        self._done = False
        self._unsynced = 0
        self._syncer: ThreadPoolExecutor | None = None
        self._sync: Future[None] | None = None
        #: the format version written in the trailer (what the kinds' block layouts follow)
        self.version = FORMAT_VERSION

    def add_block(self, data: bytes | bytearray | memoryview, *, compress: bool = True) -> BlockRef:
        """Append a block; returns its reference (for the description or a parent block)."""
        return self.add_packed(pack_block(data, compress=compress))

    def add_packed(self, packed: PackedBlock) -> BlockRef:
        """Append a block packed by pack_block (which may run in another thread); returns its reference."""
        stored, raw_length, crc, codec = packed
        ref = BlockRef(self._offset, len(stored), crc, raw_length, codec)
        self._file.write(stored)
        self._offset += len(stored)
        self._wrote(len(stored))
        return ref

    def add_packed_run(self, packed: Sequence[PackedBlock]) -> list[BlockRef]:
        """Append several packed blocks in order (what add_packed does for each, the same bytes) with one
        system call: a tree's leaves come in runs of a hundred or more, and a write per leaf is a GIL hand-over
        per leaf while other threads pack the next ones."""
        refs = []
        for stored, raw_length, crc, codec in packed:
            refs.append(BlockRef(self._offset, len(stored), crc, raw_length, codec))
            self._offset += len(stored)
        self._file.flush()
        write_all(self._file.fileno(), [p[0] for p in packed])
        self._wrote(sum(len(p[0]) for p in packed))
        return refs

    def add_stored(self, data: bytes) -> int:
        """Append blocks packed elsewhere (pack_block, in another process, say) kept one after the other in
        ``data``, with one write; returns the offset of the first (the caller knows their lengths and makes
        their references)."""
        offset = self._offset
        self._file.flush()
        write_all(self._file.fileno(), [data])
        self._offset += len(data)
        self._wrote(len(data))
        return offset

    @property
    def offset(self) -> int:
        """Where the next block goes (the bytes written so far)."""
        return self._offset

    def add_file_range(self, fd: int, offset: int, length: int) -> int:
        """add_stored with the blocks' bytes taken from ``length`` bytes of the open file ``fd`` at ``offset``
        (os.sendfile: copied in the kernel, never through this process's memory); returns the offset of the
        first block here. OSError when the source has fewer bytes."""
        start = self._offset
        self._file.flush()
        out = self._file.fileno()
        done = 0
        while done < length:
            sent = os.sendfile(out, fd, offset + done, length - done)
            if sent == 0:
                raise OSError(f"the source of {length} bytes ended after {done}")
            done += sent
        self._offset += length
        self._wrote(length)
        return start

    def hand_over(self) -> tuple[str, int]:
        """Where other processes may write the next blocks themselves (os.pwrite into the file under this
        temporary name, which is published only by finish): the name and the offset of the next block. adopt()
        then takes what they wrote; truncate() drops it."""
        self._file.flush()
        return str(self._tmp), self._offset

    def adopt(self, end: int) -> None:
        """Take the bytes up to ``end`` as written (by other processes, after hand_over): the next block goes
        there."""
        if end < self._offset:
            raise ValueError(f"cannot adopt the bytes of {self.path} up to {end}: {self._offset} written already")
        self._file.flush()
        self._file.seek(end)
        size = end - self._offset
        self._offset = end
        self._wrote(size)

    def truncate(self, offset: int) -> None:
        """Drop every byte written from ``offset`` on (a writer that started blocks it will write otherwise)."""
        if not len(MAGIC) <= offset <= self._offset:
            raise ValueError(f"cannot truncate {self.path} to byte {offset} of {self._offset}")
        self._file.flush()
        self._file.truncate(offset)
        self._file.seek(offset)
        self._offset = offset

    def _wrote(self, size: int) -> None:
        """Count appended bytes; from SYNC_EVERY on, start a data sync of what is written in a thread (one at a
        time; an error it raised surfaces here or in finish)."""
        self._unsynced += size
        if self._unsynced < SYNC_EVERY or (self._sync is not None and not self._sync.done()):
            return
        if self._sync is not None:
            self._sync.result()
        self._file.flush()
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(1, thread_name_prefix="index-sync")
        self._sync = self._syncer.submit(_datasync, self._file.fileno())
        self._unsynced = 0

    def _end_sync(self) -> None:
        """Wait for a data sync in flight (its error raised) and stop its thread."""
        try:
            if self._sync is not None:
                self._sync.result()
        finally:
            self._sync = None
            if self._syncer is not None:
                self._syncer.shutdown(wait=True)
                self._syncer = None

    def _write_end(self, description: dict[str, Any]) -> int:
        """Write the description and trailer and wait for a data sync in flight; the file's size."""
        text = json.dumps(description, sort_keys=True, separators=(",", ":")).encode("utf-8")
        offset = self._offset
        self._file.write(text)
        self._file.write(_TRAILER.pack(offset, len(text), zlib.crc32(text), self.version, 0, 0, MAGIC))
        self._file.flush()
        self._end_sync()
        return offset + len(text) + TRAILER_SIZE

    def finish(self, description: dict[str, Any]) -> int:
        """Write the description and trailer, then move the file into place; returns its size in bytes."""
        size = self._write_end(description)
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self._tmp, self.path)
        self._done = True
        return size

    def stage(self, description: dict[str, Any]) -> StagedFile:
        """finish() without its last steps: the whole file written under its temporary name, not yet synced to
        disk nor moved into place; StagedFile.publish() does both (another thread or process may: a build
        syncs many files at once instead of one after the other), discard() drops it."""
        size = self._write_end(description)
        self._file.close()
        self._done = True
        return StagedFile(str(self._tmp), str(self.path), size)

    def abort(self) -> None:
        """Drop what was written."""
        try:
            self._end_sync()
        except OSError:
            pass  # the file is dropped anyway
        if not self._file.closed:
            self._file.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> IndexFileWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._done:
            self.abort()


class IndexFileReader:
    """Reads an index file lazily: the trailer and description when opened, blocks on demand. Every read opens
    the file, reads the range and closes it again, so thousands of cached readers hold no file handles."""

    def __init__(self, path: str, size: int, fetch: Callable[[int, int], bytes] | None = None) -> None:
        self.path = path
        self.size = size
        self.bytes_read = 0
        #: reads ``length`` bytes at ``offset`` (a ranged read of an object store); local preads without it
        self._fetch = fetch
        #: the file's last bytes, read when it is opened (offset of the first, the bytes)
        self._tail_start = size
        self._tail = b""
        #: the format version from the trailer (READABLE_VERSIONS)
        self.version = FORMAT_VERSION
        self.description = self._read_description()

    @classmethod
    def open_path(cls, path: str) -> IndexFileReader:
        """Open a local index file; IndexFileCorrupt when it is missing or malformed."""
        try:
            size = os.stat(path).st_size
        except OSError as exc:
            raise IndexFileCorrupt(path, f"cannot be opened: {exc.strerror or exc}") from None
        return cls(path, size)

    def _pread(self, offset: int, length: int, what: str) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise IndexFileCorrupt(self.path, f"{what} at bytes {offset}..{offset + length} lies outside the file "
                                   f"of {self.size} bytes (truncated?)")
        if offset >= self._tail_start:  # inside the tail read when the file was opened
            start = offset - self._tail_start
            return self._tail[start : start + length]
        try:
            if self._fetch is not None:
                data = self._fetch(offset, length)
            else:
                fd = os.open(self.path, os.O_RDONLY)
                try:
                    data = os.pread(fd, length, offset)
                finally:
                    os.close(fd)
        except OSError as exc:
            raise IndexFileCorrupt(self.path, f"cannot read {what}: {exc.strerror or exc}") from None
        except Exception as exc:  # noqa: BLE001 - a store's own errors (StorageError, botocore's) name the cause
            raise IndexFileCorrupt(self.path, f"cannot read {what}: {exc}") from None
        if len(data) != length:
            raise IndexFileCorrupt(self.path, f"{what} is cut short (truncated file)")
        self.bytes_read += length
        return data

    def _read_description(self) -> dict[str, Any]:
        if self.size < len(MAGIC) + TRAILER_SIZE:
            raise IndexFileCorrupt(self.path, f"{self.size} bytes is too small for an index file (truncated?)")
        tail_start = max(self.size - TAIL_BYTES, 0)
        self._tail = self._pread(tail_start, self.size - tail_start, "the trailer")
        self._tail_start = tail_start
        trailer = self._pread(self.size - TRAILER_SIZE, TRAILER_SIZE, "the trailer")
        offset, length, crc, version, _, _, magic = _TRAILER.unpack(trailer)
        if magic != MAGIC:
            raise IndexFileCorrupt(self.path, "not an index file (no trailer magic; truncated or overwritten?)")
        if version not in READABLE_VERSIONS:
            raise IndexFileCorrupt(self.path, f"format version {version} is not known (this code reads "
                                   f"{', '.join(map(str, READABLE_VERSIONS))})")
        self.version = version
        if length > MAX_DESCRIPTION_BYTES or offset + length != self.size - TRAILER_SIZE:
            raise IndexFileCorrupt(self.path, "the trailer points outside the file")
        text = self._pread(offset, length, "the description")
        if zlib.crc32(text) != crc:
            raise IndexFileCorrupt(self.path, "checksum mismatch in the description")
        try:
            description = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise IndexFileCorrupt(self.path, f"the description is not JSON: {exc}") from None
        if not isinstance(description, dict):
            raise IndexFileCorrupt(self.path, "the description is not a JSON object")
        return description

    def ref(self, name: str) -> BlockRef:
        """The block reference the description holds under ``name``."""
        return BlockRef.from_list(self.description.get(name), self.path)

    def block(self, ref: BlockRef, what: str = "a block") -> bytes:
        """A block's bytes after its CRC check and decompression."""
        stored = self._pread(ref.offset, ref.length, what)
        if zlib.crc32(stored) != ref.crc:
            raise IndexFileCorrupt(self.path, f"checksum mismatch in {what} at byte {ref.offset}")
        if ref.codec == _CODEC_NONE:
            raw = stored
        else:
            try:
                raw = bytes(cramjam.zstd.decompress(stored, output_len=ref.raw_length))
            except Exception as exc:  # noqa: BLE001 - cramjam raises its own DecompressionError
                raise IndexFileCorrupt(self.path, f"cannot decompress {what}: {exc}") from None
        if len(raw) != ref.raw_length:
            raise IndexFileCorrupt(self.path, f"{what} decompressed to {len(raw)} bytes, expected {ref.raw_length}")
        return raw

    def verify(self) -> None:
        """Read and check every block the description names (SHOW INDEX's full check)."""
        for ref in iter_refs(self.description, self.path):
            self.block(ref)


def iter_refs(obj: Any, path: str) -> Iterator[BlockRef]:
    """Every block reference in a description (keys ending in ``_block``/``_blocks``)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key.endswith("_block"):
                yield BlockRef.from_list(value, path)
            elif key.endswith("_blocks"):
                if not isinstance(value, list):
                    raise IndexFileCorrupt(path, f"{key} is not a list")
                for item in value:
                    yield BlockRef.from_list(item, path)
            else:
                yield from iter_refs(value, path)
