"""Where a table's or partition's data lives and what files are there: one home for locations.

Locations are stored as Hive stores them: qualified with the filesystem they live on (`file:/warehouse/db.db`,
`s3a://bucket/path`). A path without a scheme is on the default filesystem, which for this metastore is the local
one, so `/tmp/db.db` becomes `file:/tmp/db.db` (Hive 2.3's Warehouse.getDnsPath gives the same form).

File access goes through `FileSystem`, a small interface (list files with size and modification time, open for
range reads, make a directory, delete, rename). `LocalFileSystem` serves `file:` locations; an fsspec-backed
implementation for `s3://`, `gs://`... can be registered with `register_filesystem` for the Spark pipeline without
touching the callers.
"""

from __future__ import annotations

import logging
import os
import posixpath
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from metastore.errors import InvalidObject, MetastoreError

log = logging.getLogger(__name__)

LOCAL_SCHEME = "file"


class LocationError(MetastoreError):
    """A data location cannot serve as a directory (it is a file, or it cannot be created); Hive answers
    MetaException, as the server does for this error."""


@dataclass(frozen=True)
class FileInfo:
    """One data file: its location (as a URI of its filesystem), size in bytes and modification time (seconds)."""

    location: str
    size: int
    mtime: float


class FileSystem(Protocol):
    """The file operations the metastore and the shell need from a filesystem, by location."""

    def list_files(self, location: str) -> list[FileInfo]:
        """Every file under a directory (recursively), in name order; empty if it does not exist."""
        ...

    def open(self, location: str) -> BinaryIO:
        """A binary file opened for reading, seekable for range reads."""
        ...

    def exists(self, location: str) -> bool:
        """Whether a file or directory exists there."""
        ...

    def make_dir(self, location: str) -> None:
        """Create a directory with its parents (no error if it exists)."""
        ...

    def delete(self, location: str) -> None:
        """Delete a file or a directory tree (no error if it is missing)."""
        ...

    def rename(self, source: str, target: str) -> None:
        """Move a file or directory, creating the target's parent directories."""
        ...


# ---------------------------------------------------------------- qualification


@dataclass(frozen=True)
class _Parts:
    scheme: str  # "" when the location has none
    authority: str | None  # None without `//`
    path: str


def _split(location: str) -> _Parts:
    """Scheme, authority and path of a location the way Hadoop's Path reads a string: the text is taken
    literally (no percent-decoding; `?` and `#` belong to the path), which is how Hive stores partition
    directories such as `ds=2024%2F02`."""
    colon, slash = location.find(":"), location.find("/")
    scheme, start = "", 0
    if colon != -1 and (slash == -1 or colon < slash):
        scheme, start = location[:colon], colon + 1
    authority = None
    if location.startswith("//", start) and len(location) - start > 2:
        end = location.find("/", start + 2)
        end = end if end > 0 else len(location)
        authority, start = location[start + 2 : end], end
    return _Parts(scheme.lower(), authority, location[start:])


def _normal_path(path: str, original: str) -> str:
    """A POSIX path as Hadoop's Path normalises it: repeated slashes collapsed, `.` and `..` resolved, no
    trailing slash (except the root)."""
    if not path.startswith("/"):
        raise InvalidObject(
            f"location {original!r} is a relative path; give an absolute path or a URI such as file:/data/t"
        )
    normal = posixpath.normpath(path)
    # normpath keeps a leading '//' (POSIX allows it to mean something else); Hadoop collapses it.
    return "/" + normal.lstrip("/")


def qualify(location: str | None) -> str | None:
    """A location as Hive stores it: without a scheme it is on the local filesystem (`/x/` -> `file:/x`);
    `file:` URIs take the short form `file:/x`; other schemes keep their text. None or empty stays as it is.
    InvalidObject for a relative path or a location with NUL characters."""
    if not location:
        return location
    if "\x00" in location:
        raise InvalidObject(f"location {location[:80]!r} contains a NUL character")
    parts = _split(location)
    if parts.scheme == "" and parts.authority is None:
        return f"{LOCAL_SCHEME}:{_normal_path(location, location)}"
    if parts.scheme == LOCAL_SCHEME and parts.authority in (None, "", "localhost"):
        return f"{LOCAL_SCHEME}:{_normal_path(parts.path or '/', location)}"
    return location


def qualify_directory(location: str) -> str:
    """A configured directory (the warehouse) qualified like `qualify`, a relative path taken from the current
    directory first (as Hadoop qualifies a path against its working directory)."""
    parts = _split(location)
    if parts.scheme == "" and parts.authority is None and not location.startswith("/"):
        location = os.path.abspath(location)
    return qualify(location.rstrip("/") or "/") or location


def child(parent: str, name: str) -> str:
    """The location of `name` (a file, directory or partition name such as `ds=2024-01-01`) inside `parent`."""
    return f"{parent.rstrip('/')}/{name}"


def same_location(a: str | None, b: str | None) -> bool:
    """Whether two locations name the same place once qualified (`/x/`, `file:/x` and `file:///x` do)."""
    if not a or not b:
        return a == b
    try:
        return qualify(a) == qualify(b)
    except InvalidObject:
        return a == b


# ---------------------------------------------------------------- the local filesystem


def local_path(location: str | None) -> Path | None:
    """The local filesystem path of a location (`file:/x`, `file:///x` or `/x`, taken literally as Hadoop
    does: `%2F` stays in the name); None for other schemes."""
    if not location:
        return None
    parts = _split(location)
    if parts.scheme in ("", LOCAL_SCHEME):
        return Path(parts.path)
    return None


class LocalFileSystem:
    """`FileSystem` over local paths and `file:` URIs."""

    @staticmethod
    def _path(location: str) -> Path:
        path = local_path(location)
        if path is None:
            raise ValueError(f"{location!r} is not a local location")
        return path

    def list_files(self, location: str) -> list[FileInfo]:
        """Every file under a directory (recursively), in name order; empty if it does not exist."""
        root = self._path(location)
        if not root.is_dir():
            return []
        out = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                st = path.stat()
                out.append(FileInfo(location=str(path), size=st.st_size, mtime=st.st_mtime))
        return out

    def open(self, location: str) -> BinaryIO:
        """The file opened for binary reading (seekable)."""
        return self._path(location).open("rb")

    def exists(self, location: str) -> bool:
        """Whether a file or directory exists there."""
        return self._path(location).exists()

    def make_dir(self, location: str) -> None:
        """Create the directory with its parents. New directories take the permission bits of the nearest
        existing ancestor, as Hive 2.3 does (hive.warehouse.subdir.inherit.perms, on by default), unless that
        ancestor is world-writable (a shared folder such as /tmp, whose mode no data directory should take)."""
        path = self._path(location)
        if path.is_dir():
            return
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        path.mkdir(parents=True, exist_ok=True)
        try:
            parent = ancestor.stat()
        except OSError:
            return
        mode = stat.S_IMODE(parent.st_mode) & 0o777
        if mode & stat.S_IWOTH:
            return
        created, p = [], path
        while p != ancestor and p != p.parent:
            created.append(p)
            p = p.parent
        for directory in created:
            try:
                os.chmod(directory, mode)
            except OSError as exc:  # the directory exists; its mode is a nicety
                log.warning("cannot set the permission of %s: %s", directory, exc)

    def delete(self, location: str) -> None:
        """Delete a file or directory tree; nothing if it is missing."""
        path = self._path(location)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists() or path.is_symlink():
            path.unlink(missing_ok=True)

    def rename(self, source: str, target: str) -> None:
        """Move a file or directory, creating the target's parent directories."""
        dst = self._path(target)
        dst.parent.mkdir(parents=True, exist_ok=True)
        self._path(source).rename(dst)


# ---------------------------------------------------------------- filesystems by scheme

_LOCAL = LocalFileSystem()
_FACTORIES: dict[str, Callable[[str], FileSystem]] = {}


def register_filesystem(scheme: str, factory: Callable[[str], FileSystem]) -> None:
    """Serve locations of `scheme` (e.g. "s3a") with the filesystem `factory(location)` returns."""
    _FACTORIES[scheme.lower()] = factory


def filesystem_for(location: str | None) -> FileSystem | None:
    """The filesystem a location is on; None when the location is empty or its scheme has no filesystem here
    (the metastore then leaves the data alone, as it has no access to it)."""
    if not location:
        return None
    scheme = _split(location).scheme
    if scheme in ("", LOCAL_SCHEME):
        return _LOCAL
    factory = _FACTORIES.get(scheme)
    return factory(location) if factory is not None else None


def _filesystem_key(location: str) -> tuple[str, str]:
    parts = _split(location)
    scheme = parts.scheme or LOCAL_SCHEME
    return scheme, "" if scheme == LOCAL_SCHEME else (parts.authority or "").lower()


def ensure_dir(location: str | None) -> bool:
    """Make sure a data directory exists, as Hive does before it records a database, table or partition; True
    when this call created it (so a failed catalog change can remove it again). Nothing for an unreachable
    filesystem. LocationError when the location is a file or the directory cannot be created."""
    fs = filesystem_for(location)
    if fs is None or location is None:
        return False
    path = local_path(location) if isinstance(fs, LocalFileSystem) else None
    if path is not None and path.is_dir():
        return False
    if path is not None and path.exists():
        raise LocationError(f"{location} is not a directory")
    try:
        fs.make_dir(location)
    except OSError as exc:
        raise LocationError(f"{location} is not a directory or unable to create one: {exc.strerror or exc}") from None
    return True


def make_dir(location: str | None) -> None:
    """Create a data directory if its filesystem is reachable; a failure is logged, not raised."""
    fs = filesystem_for(location)
    if fs is None or location is None:
        return
    try:
        fs.make_dir(location)
    except OSError as exc:
        log.warning("cannot create directory %s: %s", location, exc)


def delete_dir(location: str | None) -> None:
    """Delete a data directory tree if its filesystem is reachable and it exists."""
    fs = filesystem_for(location)
    if fs is None or location is None:
        return
    try:
        fs.delete(location)
    except OSError as exc:
        log.warning("cannot delete %s: %s", location, exc)


def exists(location: str | None) -> bool:
    """Whether something exists at a location on a reachable filesystem (False when unreachable)."""
    fs = filesystem_for(location)
    return fs is not None and location is not None and fs.exists(location)


def move_dir(source: str | None, target: str | None) -> bool:
    """Move a data directory when both ends are on the same reachable filesystem, the source exists and the
    target does not; True when it moved."""
    if not source or not target:
        return False
    if _filesystem_key(source) != _filesystem_key(target):
        return False
    src_fs = filesystem_for(source)
    if src_fs is None or not src_fs.exists(source) or src_fs.exists(target):
        return False
    src_fs.rename(source, target)
    return True
