"""Where data files are and how to read them: local paths, `file:` URIs and anything fsspec serves (`s3://`,
`s3a://`, `gs://`, `abfs://`...), behind one small set of functions.

    files = list_files("s3a://bucket/warehouse/sales.db/orders/ds=2024-01-01", options)   # [FileRef, ...]
    with open_file(files[0], options) as f:       # seekable; each read is one ranged request
        reader = OrcReader(f)

- Listing (:func:`list_files`) is recursive, in name order, and skips names starting with `.` or `_` at any
  depth, as Hive and Spark do (`_SUCCESS`, `.crc` files, staging directories). Each file is a :class:`FileRef`
  (URL, size, modification time in ns, object version), a picklable value the Spark pipeline ships to executors.
- Reads (:func:`open_file`) are range reads of exactly what the reader asks for (`bytes_read` and `requests` are
  counted), so an ORC reader fetches the tail and then only the streams it needs; nothing downloads whole files.
- Local locations use the standard library only; fsspec and its store package (s3fs for S3) are imported the
  first time a remote location is used. Options for remote stores: :class:`StorageOptions`.
- Directories, as the catalog needs them when it records, renames or drops a database, table or partition
  (Hive's warehouse work): :func:`make_dir`, :func:`exists`, :func:`move_dir`, :func:`delete`. Object stores have
  no directories, so making one there does nothing and costs no request; moving one moves every object under
  the prefix.
- Every failure is a :class:`StorageError` whose one-line message names the location.

What a location *is* (qualified as Hive stores it, its local path, a child's name) is
:mod:`metastore.locations`; everything that touches the files is here.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import uuid
from pathlib import Path

from metastore.locations import child, local_path, store_of
from metastore.storage import _local
from metastore.storage._errors import StorageError
from metastore.storage._files import FileRef, RangeFile
from metastore.storage._local import is_hidden
from metastore.storage._options import StorageOptions, is_secret

__all__ = [
    "FileRef",
    "RangeFile",
    "StorageError",
    "StorageOptions",
    "add_storage_option_argument",
    "canonical_url",
    "child",
    "delete",
    "exists",
    "is_dir",
    "is_hidden",
    "is_local",
    "is_secret",
    "list_dirs",
    "list_files",
    "make_dir",
    "move_dir",
    "open_file",
    "publish",
    "stat",
    "temporary_file",
]

_NO_OPTIONS = StorageOptions()


def is_local(location: str) -> bool:
    """Whether a location is on the local filesystem (a path, or a `file:` URI)."""
    return local_path(location) is not None


def canonical_url(location: str) -> str:
    """The location as FileRefs name it: an absolute local path, or `scheme://path` with `s3a`/`s3n` as `s3`."""
    path = local_path(location)
    if path is not None:
        return os.path.abspath(path)
    from metastore.storage import _remote

    return _remote.canonical(location)


def list_files(location: str, options: StorageOptions | None = None) -> list[FileRef]:
    """Every data file under a directory (recursively), hidden names skipped, in name order; [] when the
    directory does not exist. StorageError when the store cannot be listed."""
    path = local_path(location)
    if path is not None:
        return _local.list_files(path)
    from metastore.storage import _remote

    return _remote.list_files(location, options or _NO_OPTIONS)


def stat(location: str, options: StorageOptions | None = None) -> FileRef:
    """The FileRef of one file; StorageError when it is missing or unreadable."""
    path = local_path(location)
    if path is not None:
        return _local.stat(Path(os.path.abspath(path)))
    from metastore.storage import _remote

    return _remote.stat(location, options or _NO_OPTIONS)


def open_file(file: FileRef | str, options: StorageOptions | None = None) -> RangeFile:
    """A file opened for range reads (seekable; each read is one pread or one ranged request). Give the
    FileRef from a listing to spare a stat of the file."""
    url, size = (file.url, file.size) if isinstance(file, FileRef) else (file, None)
    path = local_path(url)
    if path is not None:
        return _local.open_file(str(path), size)
    from metastore.storage import _remote

    return _remote.open_file(url, size, options or _NO_OPTIONS)


def list_dirs(location: str, options: StorageOptions | None = None) -> list[str]:
    """Names of the directories directly inside a location, in name order ([] when it does not exist)."""
    path = local_path(location)
    if path is not None:
        return _local.list_dirs(path)
    from metastore.storage import _remote

    return _remote.list_dirs(location, options or _NO_OPTIONS)


def is_dir(location: str, options: StorageOptions | None = None) -> bool:
    """Whether a directory exists at the location (on object stores: whether any object is under it)."""
    path = local_path(location)
    if path is not None:
        return path.is_dir()
    from metastore.storage import _remote

    return _remote.is_dir(location, options or _NO_OPTIONS)


def temporary_file(target: str) -> Path:
    """Where to write a file that will become `target` (see :func:`publish`): a hidden name next to it for
    local targets (so the final rename is atomic), a file in the temporary directory for remote ones."""
    path = local_path(target)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.parent / f".{path.name}.inprogress"
    handle, name = tempfile.mkstemp(prefix=f"metastore-{uuid.uuid4().hex[:8]}-", suffix=".inprogress")
    os.close(handle)
    return Path(name)


def publish(written: Path, target: str, options: StorageOptions | None = None) -> None:
    """Make a finished local file the file at `target`: a rename for local targets, an upload (then the local
    copy is removed) for remote ones. On failure the target is unchanged and the local file is removed."""
    path = local_path(target)
    try:
        if path is not None:
            _local.publish(written, path)
            return
        from metastore.storage import _remote

        _remote.upload(str(written), target, options or _NO_OPTIONS)
    finally:
        written.unlink(missing_ok=True)


def delete(location: str, options: StorageOptions | None = None) -> None:
    """Delete a file or a directory tree; nothing if it is missing."""
    path = local_path(location)
    if path is not None:
        try:
            _local.delete(path)
        except OSError as exc:
            raise StorageError(f"cannot delete {location}: {exc.strerror or exc}") from None
        return
    from metastore.storage import _remote

    _remote.delete(location, options or _NO_OPTIONS)


def make_dir(location: str, options: StorageOptions | None = None) -> bool:
    """Make sure a data directory exists, as Hive does before it records a database, table or partition; True
    when this call created it (so a failed catalog change can remove it again). New local directories take the
    permission bits of their nearest existing ancestor (see `_local.make_dir`). Object stores have no
    directories: nothing to do, no request made. StorageError when the location is a file or cannot be created."""
    path = local_path(location)
    if path is None:
        return False
    return _local.make_dir(path, location)


def exists(location: str, options: StorageOptions | None = None) -> bool:
    """Whether a file or directory exists at the location (on object stores: an object at it or under it)."""
    path = local_path(location)
    if path is not None:
        return path.exists()
    from metastore.storage import _remote

    return _remote.exists(location, options or _NO_OPTIONS)


def move_dir(source: str, target: str, options: StorageOptions | None = None) -> bool:
    """Move a data directory with everything in it to `target`, as Hive moves a renamed managed table or
    partition; False, with nothing done, when the source does not exist. StorageError when the target exists,
    the two are on different stores (a file system, or a bucket of one scheme and account), or the move fails."""
    if store_of(source) != store_of(target):
        raise StorageError(f"cannot move {source} to {target}: they are on different file systems")
    if not exists(source, options):
        return False
    if exists(target, options):
        raise StorageError(f"cannot move {source} to {target}: the target exists")
    src, dst = local_path(source), local_path(target)
    if src is not None and dst is not None:
        try:
            _local.move_dir(src, dst)
        except OSError as exc:
            raise StorageError(f"cannot move {source} to {target}: {exc.strerror or exc}") from None
        return True
    from metastore.storage import _remote

    _remote.move_dir(source, target, options or _NO_OPTIONS)
    return True


def add_storage_option_argument(parser: argparse.ArgumentParser) -> None:
    """Add the repeatable `--storage-option KEY=VALUE` to a command that reads or writes data files."""
    parser.add_argument(
        "--storage-option", dest="storage_options", action="append", default=[], metavar="KEY=VALUE",
        help="option for object stores (s3://, s3a://, gs://...), repeatable: fsspec's names (endpoint_url, key, "
        "secret, anon, client_kwargs.region_name) or Hadoop's fs.s3a.* names; credentials otherwise come from "
        "the environment (AWS_*) and ~/.aws",
    )
