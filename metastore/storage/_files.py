"""What the storage layer hands out: a file's description (FileRef) and a file opened for range reads."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


@dataclass(frozen=True)
class FileRef:
    """One data file as a listing saw it: where it is, its size, its modification time in nanoseconds and, on
    object stores, its version tag (ETag), which changes whenever the object is rewritten. Picklable: the
    Spark pipeline ships these to executors and opens them there with :func:`metastore.storage.open_file`.

    ``url`` is an absolute local path for local files and ``scheme://bucket/key`` for object stores (``s3a://``
    and ``s3n://`` become ``s3://``)."""

    url: str
    size: int
    mtime_ns: int
    version: str = ""

    @property
    def name(self) -> str:
        """The file's name (the last part of its path)."""
        return self.url.rstrip("/").rsplit("/", 1)[-1]


class RangeFile(io.RawIOBase):
    """A read-only, seekable file whose every read is one ranged read of the underlying storage (a pread, an
    HTTP range request): nothing is read ahead or cached, so what a reader asks for is all that is transferred.
    Counts the bytes and requests it served."""

    def __init__(self, name: str, size: int, fetch: Callable[[int, int], bytes],
                 release: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.name = name
        self.size = size
        self._fetch = fetch
        self._release = release
        self._pos = 0
        self.bytes_read = 0
        self.requests = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        if self.closed:
            raise ValueError(f"read of closed file {self.name}")
        end = self.size if size is None or size < 0 else min(self.size, self._pos + size)
        if end <= self._pos:
            return b""
        data = self._fetch(self._pos, end - self._pos)
        self.requests += 1
        self.bytes_read += len(data)
        self._pos += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed and self._release is not None:
            self._release()
        super().close()
