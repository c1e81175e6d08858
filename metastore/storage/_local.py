"""Local files: listing, range reads and publishing with the standard library only (no fsspec import, so the
thin commands stay fast)."""

from __future__ import annotations

import logging
import os
import shutil
import stat as stat_mode
from pathlib import Path

from metastore.storage._errors import StorageError
from metastore.storage._files import FileRef, RangeFile

log = logging.getLogger("metastore.storage")


def is_hidden(name: str) -> bool:
    """Hive and Spark skip files and folders whose names start with '.' or '_' (_SUCCESS, .crc, staging)."""
    return name.startswith((".", "_"))


def list_files(root: Path) -> list[FileRef]:
    """The data files under a directory (recursively), hidden entries left out, in name order."""
    if not root.is_dir():
        return []
    out: list[FileRef] = []
    try:
        for directory, dirs, files in os.walk(root, onerror=_raise):
            dirs[:] = sorted(d for d in dirs if not is_hidden(d))
            for name in sorted(files):
                if is_hidden(name):
                    continue
                path = os.path.join(directory, name)
                st = os.stat(path)
                out.append(FileRef(path, st.st_size, st.st_mtime_ns))
    except OSError as exc:
        raise StorageError(f"cannot list {root}: {exc.strerror or exc}") from None
    return out


def _raise(exc: OSError) -> None:
    raise exc


def stat(path: Path) -> FileRef:
    """The FileRef of one file; StorageError when it is missing or unreadable."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return FileRef(str(path), st.st_size, st.st_mtime_ns)


def open_file(path: str, size: int | None = None) -> RangeFile:
    """The file opened for range reads (os.pread per read)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if size is None:
        size = os.fstat(fd).st_size

    def fetch(offset: int, length: int) -> bytes:
        chunks = []
        while length > 0:
            chunk = os.pread(fd, length, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            length -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    return RangeFile(path, size, fetch, lambda: os.close(fd))


def list_dirs(root: Path) -> list[str]:
    """Names of the directories directly inside `root`, in name order (none if it is missing)."""
    try:
        return sorted(e.name for e in os.scandir(root) if e.is_dir())
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        return []
    except OSError as exc:
        raise StorageError(f"cannot list {root}: {exc.strerror or exc}") from None


def publish(source: Path, target: Path) -> None:
    """Move a finished local file to its final place (an atomic rename within one filesystem)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(source, target)
    except OSError:
        shutil.move(source, target)  # another filesystem (the temporary directory): copy, then delete


def delete(path: Path) -> None:
    """Delete a file or directory tree; nothing if it is missing."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def make_dir(path: Path, shown: str) -> bool:
    """Create a directory with its parents; True when this call created it. New directories take the
    permission bits of the nearest existing ancestor, as Hive 2.3 does (hive.warehouse.subdir.inherit.perms, on
    by default), unless that ancestor is world-writable (a shared folder such as /tmp, whose mode no data
    directory should take). StorageError when the location is a file or cannot be created."""
    if path.is_dir():
        return False
    if path.exists():
        raise StorageError(f"{shown} is not a directory")
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"{shown} is not a directory or unable to create one: {exc.strerror or exc}") from None
    try:
        mode = stat_mode.S_IMODE(ancestor.stat().st_mode) & 0o777
    except OSError:
        return True
    if mode & stat_mode.S_IWOTH:
        return True
    created, p = [], path
    while p != ancestor and p != p.parent:
        created.append(p)
        p = p.parent
    for directory in created:
        try:
            os.chmod(directory, mode)
        except OSError as exc:  # the directory exists; its mode is a nicety
            log.warning("cannot set the permission of %s: %s", directory, exc)
    return True


def move_dir(source: Path, target: Path) -> None:
    """Move a directory tree to a place that does not exist yet, creating the target's parents. Across devices
    this copies and then deletes, as Hadoop's local filesystem does."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(source, target)
