"""What every metastore client offers: the MetastoreClient interface and the values it speaks.

Two implementations: `metastore.client.remote.ThriftMetastoreClient` (a server over Thrift; imports no store,
service or SQLAlchemy) and `metastore.client.embedded.EmbeddedMetastoreClient` (the metastore in this process).
Both speak the domain model (metastore.catalog, metastore.stats.model) and raise metastore.errors. Statistics are
written in batches with set_aggr_stats_for semantics (replace per column, or Hive's needMerge with merge=True),
so the SQL shell and Spark drivers compute statistics next to the data and persist them the same way against
either side.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from metastore.catalog import DEFAULT_ENGINE, Database, Partition, Table
from metastore.errors import MetastoreError
from metastore.index.model import FilterResult, IndexPart, IndexRecord, Split
from metastore.stats.exchange import AggregateResult, StatsWrite
from metastore.stats.model import ColumnStatsEntry
from metastore.stats.partial_store import FilePartials

__all__ = [
    "DEFAULT_STATS_BATCH",
    "AggregateResult",
    "ConnectionFailed",
    "MetastoreClient",
    "StatsWrite",
    "batches",
]


#: ColumnStatistics objects (one per table or partition) sent in one set_aggr_stats_for call.
DEFAULT_STATS_BATCH = 100

T = TypeVar("T")


class ConnectionFailed(MetastoreError):
    """The metastore server cannot be reached, or the connection broke and could not be re-established."""


def batches(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    """`items` in consecutive slices of at most `size`."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


class MetastoreClient(abc.ABC):
    """Catalog and statistics operations of a metastore, in domain objects."""

    #: Where the client talks to, for banners and messages (`thrift://host:port`, `sqlite:///...`).
    target: str = ""

    # ------------------------------------------------------------------ databases

    @abc.abstractmethod
    def create_database(self, db: Database) -> None:
        """Create a database (its location defaults to <warehouse>/<name>.db)."""

    @abc.abstractmethod
    def get_database(self, name: str) -> Database: ...

    @abc.abstractmethod
    def list_databases(self, pattern: str | None = None) -> list[str]:
        """Database names, optionally matching a Hive pattern (`*` wildcards, `|` alternatives)."""

    @abc.abstractmethod
    def drop_database(self, name: str, *, delete_data: bool = True, cascade: bool = False) -> None: ...

    # ------------------------------------------------------------------ tables

    @abc.abstractmethod
    def create_table(self, table: Table) -> Table:
        """Create a table and return it as stored (with its location filled in)."""

    @abc.abstractmethod
    def get_table(self, db_name: str, table_name: str) -> Table: ...

    @abc.abstractmethod
    def list_tables(self, db_name: str, pattern: str | None = None) -> list[str]: ...

    @abc.abstractmethod
    def alter_table(self, db_name: str, table_name: str, table: Table) -> None: ...

    def update_table_parameters(self, db_name: str, table_name: str, changes: Mapping[str, str]) -> None:
        """Set some of a table's parameters, the rest of its definition as it is (what a statistics writer
        records beside its statistics). Here get_table and, when a value differs, alter_table; a client that
        can writes the parameters alone."""
        current = self.get_table(db_name, table_name)
        if any(current.parameters.get(k) != v for k, v in changes.items()):
            self.alter_table(db_name, table_name, replace(current, parameters={**current.parameters, **changes}))

    @abc.abstractmethod
    def drop_table(self, db_name: str, table_name: str, *, delete_data: bool = True) -> None: ...

    # ------------------------------------------------------------------ partitions

    @abc.abstractmethod
    def add_partitions(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], *, if_not_exists: bool = False
    ) -> list[Partition]:
        """Add partitions in one call (storage defaults to the table's); returns those added."""

    @abc.abstractmethod
    def get_partition(self, db_name: str, table_name: str, values: Sequence[str]) -> Partition: ...

    @abc.abstractmethod
    def list_partitions(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[Partition]:
        """Partitions of a table, or those whose leading values match `partial_values` ('' matches any)."""

    @abc.abstractmethod
    def list_partition_names(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[str]: ...

    @abc.abstractmethod
    def get_partitions_by_names(self, db_name: str, table_name: str, names: Sequence[str]) -> list[Partition]: ...

    @abc.abstractmethod
    def alter_partitions(self, db_name: str, table_name: str, partitions: Sequence[Partition]) -> None:
        """Replace the definitions (storage, parameters) of existing partitions in one call."""

    @abc.abstractmethod
    def drop_partitions(
        self, db_name: str, table_name: str, names: Sequence[str], *, delete_data: bool = True,
        if_exists: bool = False,
    ) -> list[Partition]:
        """Drop partitions by name with their statistics; returns those dropped."""

    # ------------------------------------------------------------------ statistics

    def write_analysis(
        self, db_name: str, table_name: str, partitions: Sequence[Partition],
        partition_statistics: Sequence[StatsWrite], table_statistics: Sequence[StatsWrite] = (),
        table_parameters: Mapping[str, str] | None = None, *, parameters_only: bool = False,
    ) -> None:
        """What an ANALYZE of a partitioned table writes: the partitions' new definitions (alter_partitions),
        their column statistics, the table level's, and some table parameters (update_table_parameters). Here
        the metastore's calls in that order, each its own transaction (a failure leaves the earlier calls'
        writes stored); a client that can (the embedded one) writes everything in one transaction.
        ``parameters_only`` says the partitions are as the caller listed them but for their parameters: a client
        that can (the embedded one) then writes their parameters alone; here they go to alter_partitions, as
        Hive's clients send them."""
        if partitions:
            self.alter_partitions(db_name, table_name, partitions)
        self.write_statistics(partition_statistics)
        self.write_statistics(table_statistics)
        if table_parameters:
            self.update_table_parameters(db_name, table_name, table_parameters)

    def write_statistics(
        self, writes: Sequence[StatsWrite], *, merge: bool = False, batch_size: int = DEFAULT_STATS_BATCH,
        engine: str = DEFAULT_ENGINE,
    ) -> int:
        """Store column statistics of tables/partitions, `batch_size` owners per call (set_aggr_stats_for).

        Each call is one transaction on the server; merge=True combines with stored statistics (Hive's
        needMerge), otherwise the given columns' statistics are replaced. Returns the number of calls made."""
        writes = [w for w in writes if w.entries]
        calls = 0
        for chunk in batches(writes, batch_size):
            self._write_batch(chunk, merge=merge, engine=engine)
            calls += 1
        return calls

    @abc.abstractmethod
    def _write_batch(self, writes: Sequence[StatsWrite], *, merge: bool, engine: str) -> None: ...

    @abc.abstractmethod
    def table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE,
        sketches: bool = True,
    ) -> list[ColumnStatsEntry]:
        """Table-level statistics of those columns that have them. ``sketches`` False: the caller does not need
        their bit vectors and histograms, which a client that can leaves out (a server sends what it is
        configured to)."""

    @abc.abstractmethod
    def partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, sketches: bool = True,
    ) -> dict[str, list[ColumnStatsEntry]]:
        """{partition name: statistics} of the named partitions that have statistics of the columns (``sketches``
        as for table_statistics)."""

    @abc.abstractmethod
    def aggregate_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE,
    ) -> AggregateResult:
        """Table-wide statistics merged over the named partitions (get_aggr_stats_for)."""

    @abc.abstractmethod
    def delete_table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE
    ) -> None: ...

    @abc.abstractmethod
    def delete_partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE,
    ) -> None: ...

    # ------------------------------------------------------------------ per-file partials (issue 10)

    @abc.abstractmethod
    def get_file_partials(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        paths: Sequence[str] | None = None,
    ) -> list[FilePartials]:
        """Stored per-file results of the table (of the named partitions and/or paths only, when given)."""

    @abc.abstractmethod
    def put_file_partials(self, db_name: str, table_name: str, files: Sequence[FilePartials]) -> None:
        """Store per-file results in one call (one transaction); a file stored for another version is replaced."""

    @abc.abstractmethod
    def delete_file_partials(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        paths: Sequence[str] | None = None,
    ) -> None:
        """Forget stored per-file results of the table (of the named partitions and/or paths; all when neither)."""

    # ------------------------------------------------------------------ split-filtering indexes (issue 11)

    @abc.abstractmethod
    def create_index(self, record: IndexRecord) -> IndexRecord:
        """Record a new index (state CREATING); the answer has its directory under the index root."""

    @abc.abstractmethod
    def get_index(self, db_name: str, table_name: str, name: str) -> IndexRecord:
        """An index of a table by name (NoSuchObject when the table has none of that name)."""

    @abc.abstractmethod
    def list_indexes(self, db_name: str | None = None, table_name: str | None = None) -> list[IndexRecord]:
        """Every index, a database's, or a table's."""

    @abc.abstractmethod
    def finish_index_build(
        self, db_name: str, table_name: str, name: str, parts: Sequence[IndexPart], *, built: int,
        partitions: tuple[str, ...] | None = None,
    ) -> IndexRecord:
        """Record the parts of a finished build (the index becomes READY; part files it replaced are deleted)."""

    @abc.abstractmethod
    def drop_index(self, db_name: str, table_name: str, name: str, partitions: Sequence[str] | None = None) -> None:
        """Drop an index with its files (with partitions: only its parts for those partitions)."""

    @abc.abstractmethod
    def filter_splits(self, db_name: str, table_name: str, predicate: str, splits: Sequence[Split]) -> FilterResult:
        """The splits of a table that may match a predicate (its JSON form, metastore.index.predicate)."""

    # ------------------------------------------------------------------ lifecycle

    @property
    def returns_sketches(self) -> bool:
        """Whether statistics read back carry their NDV bitVectors (a server returns them only if configured)."""
        return False

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> MetastoreClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
