"""Index records: what the metastore database keeps about an index (values only; no SQL, no Thrift).

An index is on one column of one table; its parts are index files, each covering some data files (one per
data file at STRIPE level, per partition at PARTITION level, one at TABLE level). Every covered data file is
recorded with its size and modification time: a file that differs now is not covered any more.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DataFile:
    """A data file as an index saw it; a file whose size or mtime differs now is a different file."""

    path: str
    size: int
    mtime_ns: int

    @property
    def identity(self) -> tuple[str, int, int]:
        return (self.path, self.size, self.mtime_ns)


class IndexKind(enum.Enum):
    BTREE = "btree"
    BLOOM = "bloom"
    MINMAX = "minmax"


class IndexLevel(enum.Enum):
    """How data files are grouped into index files."""

    STRIPE = "STRIPE"  # one index file per data file
    PARTITION = "PARTITION"  # one per partition
    TABLE = "TABLE"  # one for the table


class IndexState(enum.Enum):
    CREATING = "CREATING"  # records made, build running (or interrupted): never used for filtering
    READY = "READY"


@dataclass(frozen=True)
class IndexPart:
    """One index file: its key (partition name, data file path at STRIPE level, '' for the table), the
    partition it belongs to ('' when the table is unpartitioned), its location, size and covered files."""

    key: str
    partition: str
    location: str
    size: int
    files: tuple[DataFile, ...] = ()


@dataclass(frozen=True, kw_only=True)
class IndexRecord:
    """An index as the metastore records it."""

    name: str
    db_name: str
    table_name: str
    column: str
    column_type: str
    kind: IndexKind
    level: IndexLevel
    #: index options as given (`bloom.fpp`...), plus `level`
    properties: dict[str, str] = field(default_factory=dict)
    #: the partitions the index covers (names), None for every partition (and for unpartitioned tables)
    partitions: tuple[str, ...] | None = None
    #: the index directory (one per table/column/index under the index root)
    location: str = ""
    state: IndexState = IndexState.CREATING
    created: int = 0  # seconds since the epoch
    built: int = 0  # last build (CREATE or UPDATE INDEX)
    owner: str = ""
    #: False when the table the index was built on no longer exists (dropped without the index)
    table_exists: bool = True
    parts: tuple[IndexPart, ...] = ()

    @property
    def qualified_table(self) -> str:
        return f"{self.db_name}.{self.table_name}"

    @property
    def size(self) -> int:
        """Bytes of all index files."""
        return sum(p.size for p in self.parts)

    def files(self) -> dict[str, tuple[IndexPart, DataFile]]:
        """Covered data files by path, with their part."""
        return {f.path: (p, f) for p in self.parts for f in p.files}


# ---------------------------------------------------------------------------------------------- the split filter


@dataclass(frozen=True)
class Split:
    """A byte range of a data file a planner would read. ``file_size``/``file_mtime_ns`` are the file's as the
    planner listed it; without them the filter looks the file up itself."""

    path: str
    start: int
    length: int
    file_size: int | None = None
    file_mtime_ns: int | None = None


@dataclass(frozen=True)
class IndexCount:
    """One index's work: splits whose file it covers (considered) and, of those, the splits it alone keeps."""

    name: str
    kind: str
    column: str
    considered: int
    kept: int


@dataclass(frozen=True)
class FilterResult:
    """Positions of the kept splits (in input order), per-index counts and warnings."""

    kept: tuple[int, ...]
    counts: tuple[IndexCount, ...]
    warnings: tuple[str, ...] = ()
    #: per data file judged by an index (in-process calls only): its stripes (coverage.StripeSpan) and a bool
    #: array of those that may match, so a reader can skip the others
    stripes: dict[str, tuple[Any, Any]] = field(default_factory=dict, compare=False)
