"""What a location is: Hive's qualified form of a data location, its local path, a child's name, its store.

Locations are stored as Hive stores them: qualified with the filesystem they live on (`file:/warehouse/db.db`,
`s3a://bucket/path`). A path without a scheme is on the default filesystem, which for this metastore is the local
one, so `/tmp/db.db` becomes `file:/tmp/db.db` (Hive 2.3's Warehouse.getDnsPath gives the same form).

This module only names places; it touches no file. Listing, reading, writing, and the directory work the catalog
does (make, move, delete) are :mod:`metastore.storage`, for local paths and every store fsspec serves alike.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from metastore.errors import InvalidObject

LOCAL_SCHEME = "file"
#: Schemes that name the same store as another (Hadoop's S3 connectors read the same objects as s3://).
SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}


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


# ---------------------------------------------------------------- local paths and stores


def local_path(location: str | None) -> Path | None:
    """The local filesystem path of a location (`file:/x`, `file:///x` or `/x`, taken literally as Hadoop
    does: `%2F` stays in the name); None for other schemes."""
    if not location:
        return None
    parts = _split(location)
    if parts.scheme in ("", LOCAL_SCHEME):
        return Path(parts.path)
    return None


def store_of(location: str) -> tuple[str, str]:
    """Which store a location is on: (scheme, authority), `file` and "" for local paths, aliases resolved
    (`s3a://b/x` and `s3://b/y` are on one store). Data moves only within one store."""
    parts = _split(location)
    scheme = parts.scheme or LOCAL_SCHEME
    if scheme == LOCAL_SCHEME:
        return LOCAL_SCHEME, ""
    return SCHEME_ALIASES.get(scheme, scheme), (parts.authority or "").lower()
