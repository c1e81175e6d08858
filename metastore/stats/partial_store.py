"""Where per-file analysis results are kept between ANALYZE runs: one interface, two homes.

A :class:`PartialStore` holds, per data file, what harvest computed (:class:`FilePartials`: the file's facts
and one serialised :class:`~metastore.stats.harvest.partial.ColumnPartial` per column), valid only for the size,
modification time and version the file had. Two implementations:

- :class:`~metastore.stats.filecache.FileStatsCache`, a local SQLite file (embedded ``--db`` use, one host);
- :class:`~metastore.client.file_partials.MetastorePartialStore`, the metastore's own database through the
  ``metastore_*_file_partials`` extension calls, so a re-ANALYZE from any host or a Spark driver reads only
  the files that changed since anyone analysed them.

What a partial holds (NDV sketch or not, histogram or not) is recorded in the partial itself (its ``missing``
facts): a run takes a stored partial only when it has every fact the run needs, and a richer result replaces
a poorer one of the same file version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from metastore.storage import FileRef

__all__ = ["FilePartials", "PartialStore"]


@dataclass(frozen=True)
class FilePartials:
    """One data file's stored analysis: the file version it is valid for, its partition (None for a file of an
    unpartitioned table), rows and rawDataSize, an opaque ``info`` blob (the file's fields) and the serialised
    partial statistics by entry key (column and type)."""

    path: str
    size: int
    mtime_ns: int
    version: str = ""
    partition: str | None = None
    num_rows: int | None = None
    raw_data_size: int | None = None
    info: bytes = b""
    entries: Mapping[str, bytes] = field(default_factory=dict)

    def matches(self, ref: FileRef) -> bool:
        """Whether this was computed from the file exactly as `ref` lists it (same size, mtime and version)."""
        return (self.path, self.size, self.mtime_ns, self.version) == (ref.url, ref.size, ref.mtime_ns, ref.version)


class PartialStore(Protocol):
    """Per-file results kept between runs, by file path, valid for one size, mtime and version."""

    def lookup(self, files: Sequence[FileRef], partition: str | None = None) -> dict[str, FilePartials]:
        """The stored results of those `files` (of one partition, or of the table when None) that are stored
        for exactly their listed size, mtime and version, by URL; a rewritten file's old results never come
        back."""
        ...

    def store(self, files: Sequence[FilePartials]) -> None:
        """Keep these results (each names its partition); a file's results stored for another version are
        replaced, results of the same version are added to by entry key."""
        ...

    def retain(self, files: Sequence[FileRef], partition: str | None = None) -> None:
        """`files` are every data file of the partition (or table) now: forget stored files that are not among
        them (deleted from storage). A store that cannot tell files of one partition from another may do nothing."""
        ...
