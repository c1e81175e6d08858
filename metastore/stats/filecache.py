"""A small local SQLite cache of per-file statistics results, so re-running ANALYZE reads only changed files.

Entries are keyed by a file's absolute path (or its URL on an object store) and are valid only for the size and modification time (ns) they
were computed from: a file that changed in either has its entries dropped on the next lookup. What an entry
holds is opaque here (bytes under a string key, e.g. one column's partial statistics and sketches; see
:mod:`metastore.stats.harvest`), next to a small ``info`` blob about the file itself.

The default location is ``<user cache dir>/metastore/analyze-cache.sqlite`` (platformdirs), or the path in the
``METASTORE_ANALYZE_CACHE`` environment variable. The database uses WAL mode so several processes (two shells,
a shell and a benchmark) can share it; a cache that cannot be opened or read is an error naming the path, a
cache written by another format version is emptied.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from metastore.errors import MetastoreError
from metastore.stats.partial_store import FilePartials
from metastore.storage import FileRef

__all__ = ["CACHE_ENV", "CachedFile", "FileStatsCache", "FileStatsCacheError", "default_cache_path"]

CACHE_ENV = "METASTORE_ANALYZE_CACHE"
#: Bumped whenever the meaning of stored entries changes; older caches are emptied on open.
FORMAT_VERSION = 2
#: Paths per statement of a lookup_many (SQLite's default limit of bound parameters is 999 before 3.32).
_LOOKUP_BATCH = 500

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS cached_file ("
    " path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, version TEXT NOT NULL,"
    " info BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cached_entry ("
    " path TEXT NOT NULL REFERENCES cached_file(path) ON DELETE CASCADE, key TEXT NOT NULL, value BLOB NOT NULL,"
    " PRIMARY KEY (path, key))",
)


class FileStatsCacheError(MetastoreError):
    """The statistics cache file cannot be opened, read or written."""


def default_cache_path() -> Path:
    """``$METASTORE_ANALYZE_CACHE`` or ``analyze-cache.sqlite`` in the user's cache directory."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_cache_dir("metastore", appauthor=False)) / "analyze-cache.sqlite"


@dataclass(frozen=True)
class CachedFile:
    """What the cache holds for one file version: its info blob and its entries by key."""

    path: str
    size: int
    mtime_ns: int
    info: bytes
    entries: dict[str, bytes] = field(default_factory=dict)
    version: str = ""


class FileStatsCache:
    """Per-file results keyed by (absolute path, size, mtime_ns) in one SQLite file. Thread-safe."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser().absolute()
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False,
                                         isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            # a cache may lose its last write on power loss (it is recomputed), never its consistency
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if version != FORMAT_VERSION:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.execute("DROP TABLE IF EXISTS cached_entry")
                self._conn.execute("DROP TABLE IF EXISTS cached_file")
                for stmt in _SCHEMA:
                    self._conn.execute(stmt)
                self._conn.execute(f"PRAGMA user_version={FORMAT_VERSION}")
                self._conn.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            raise FileStatsCacheError(f"cannot open the statistics cache {self.path}: {exc}") from None

    @classmethod
    def open_default(cls) -> FileStatsCache:
        """The cache at :func:`default_cache_path`."""
        return cls(default_cache_path())

    # ------------------------------------------------------------------------------------------- reading

    def get(self, path: str | os.PathLike[str], size: int, mtime_ns: int, version: str = "") -> CachedFile | None:
        """The cached version of ``path`` if it was stored for exactly this size, mtime and object version
        (an object store's ETag; "" for local files), else None (and any stale version is forgotten)."""
        key = _key(path)
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT size, mtime_ns, info, version FROM cached_file WHERE path = ?", (key,)
                ).fetchone()
                if row is None:
                    return None
                if row[0] != size or row[1] != mtime_ns or row[3] != version:
                    self._conn.execute("DELETE FROM cached_file WHERE path = ?", (key,))
                    return None
                entries = dict(
                    self._conn.execute("SELECT key, value FROM cached_entry WHERE path = ?", (key,)).fetchall()
                )
            except sqlite3.Error as exc:
                raise FileStatsCacheError(f"cannot read the statistics cache {self.path}: {exc}") from None
        return CachedFile(key, size, mtime_ns, bytes(row[2]), {k: bytes(v) for k, v in entries.items()}, version)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM cached_file").fetchone()[0])

    # ------------------------------------------------------------------------------------------- writing

    def put(self, path: str | os.PathLike[str], size: int, mtime_ns: int, info: bytes,
            entries: Mapping[str, bytes], version: str = "") -> None:
        """Store (or add to) the entries of one file version; a different stored version is replaced."""
        self.put_many([(path, size, mtime_ns, info, entries, version)])

    def put_many(
        self,
        items: Iterable[tuple[str | os.PathLike[str], int, int, bytes, Mapping[str, bytes]]
                        | tuple[str | os.PathLike[str], int, int, bytes, Mapping[str, bytes], str]],
    ) -> None:
        """:meth:`put` for several files in one transaction; an item may end with the object version."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    for item in items:
                        path, size, mtime_ns, info, entries = item[:5]
                        version = item[5] if len(item) > 5 else ""
                        key = _key(path)
                        row = self._conn.execute(
                            "SELECT size, mtime_ns, version FROM cached_file WHERE path = ?", (key,)
                        ).fetchone()
                        if row is not None and (row[0] != size or row[1] != mtime_ns or row[2] != version):
                            self._conn.execute("DELETE FROM cached_file WHERE path = ?", (key,))
                            row = None
                        if row is None:
                            self._conn.execute(
                                "INSERT INTO cached_file (path, size, mtime_ns, version, info) VALUES (?, ?, ?, ?, ?)",
                                (key, size, mtime_ns, version, info),
                            )
                        else:
                            self._conn.execute("UPDATE cached_file SET info = ? WHERE path = ?", (info, key))
                        self._conn.executemany(
                            "INSERT OR REPLACE INTO cached_entry (path, key, value) VALUES (?, ?, ?)",
                            [(key, k, v) for k, v in entries.items()],
                        )
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise FileStatsCacheError(f"cannot write the statistics cache {self.path}: {exc}") from None

    # --------------------------------------------------------------------------- the PartialStore interface

    def lookup(self, files: Sequence[FileRef], partition: str | None = None) -> dict[str, FilePartials]:
        """Stored results of `files` valid for their listed size, mtime and version, by URL (PartialStore)."""
        return self.lookup_many({partition: files})

    def lookup_many(self, groups: Mapping[str | None, Sequence[FileRef]]) -> dict[str, FilePartials]:
        """:meth:`lookup` for several partitions' files (partition name -> files), read with a few statements
        (files and their entries by path, _LOOKUP_BATCH paths a statement) instead of two per file; stale
        versions are forgotten as :meth:`get` does."""
        refs = [(partition, ref) for partition, files in groups.items() for ref in files]
        keys = [_key(ref.url) for _, ref in refs]
        unique = list(dict.fromkeys(keys))
        rows: dict[str, tuple[Any, ...]] = {}
        entries: dict[str, dict[str, bytes]] = {}
        with self._lock:
            try:
                for start in range(0, len(unique), _LOOKUP_BATCH):
                    chunk = unique[start : start + _LOOKUP_BATCH]
                    marks = ", ".join("?" * len(chunk))
                    for row in self._conn.execute(
                        f"SELECT path, size, mtime_ns, info, version FROM cached_file WHERE path IN ({marks})", chunk
                    ):
                        rows[row[0]] = row
                stale: set[str] = set()
                for (_, ref), key in zip(refs, keys, strict=True):
                    row = rows.get(key)
                    if row is not None and (row[1] != ref.size or row[2] != ref.mtime_ns or row[4] != ref.version):
                        stale.add(key)
                for key in stale:
                    self._conn.execute("DELETE FROM cached_file WHERE path = ?", (key,))
                    del rows[key]
                wanted = list(rows)
                for start in range(0, len(wanted), _LOOKUP_BATCH):
                    chunk = wanted[start : start + _LOOKUP_BATCH]
                    marks = ", ".join("?" * len(chunk))
                    for path, k, v in self._conn.execute(
                        f"SELECT path, key, value FROM cached_entry WHERE path IN ({marks})", chunk
                    ):
                        entries.setdefault(path, {})[k] = bytes(v)
            except sqlite3.Error as exc:
                raise FileStatsCacheError(f"cannot read the statistics cache {self.path}: {exc}") from None
        out = {}
        for (partition, ref), key in zip(refs, keys, strict=True):
            row = rows.get(key)
            if row is not None:
                out[ref.url] = FilePartials(ref.url, ref.size, ref.mtime_ns, ref.version, partition,
                                            info=bytes(row[3]), entries=dict(entries.get(key, {})))
        return out

    def store(self, files: Sequence[FilePartials]) -> None:
        """Keep these files' results (PartialStore); the partition is not recorded, paths identify files."""
        self.put_many((f.path, f.size, f.mtime_ns, f.info, f.entries, f.version) for f in files)

    def retain(self, files: Sequence[FileRef], partition: str | None = None) -> None:
        """Nothing: the cache does not know which directory a stored file belonged to (PartialStore)."""

    def forget(self, path: str | os.PathLike[str]) -> None:
        """Drop everything stored for ``path``."""
        with self._lock:
            self._conn.execute("DELETE FROM cached_file WHERE path = ?", (_key(path),))

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._conn.execute("DELETE FROM cached_file")

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> FileStatsCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FileStatsCache({str(self.path)!r})"


def _key(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    # object-store URLs (s3://bucket/key) are keys as they are; local paths are made absolute
    return text if "://" in text else os.path.abspath(text)
