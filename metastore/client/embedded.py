"""The metastore in this process, over its database: a MetastoreClient without a server.

Imports the service and store layers (and so SQLAlchemy); `metastore.client.connect` loads this module only for
database URLs.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from metastore.catalog import DEFAULT_ENGINE, Database, Partition, Table
from metastore.client.base import AggregateResult, MetastoreClient, StatsWrite
from metastore.config import Settings
from metastore.errors import InvalidInput, MetastoreError
from metastore.index.model import FilterResult, IndexPart, IndexRecord, Split
from metastore.service import Metastore
from metastore.stats.model import ColumnStatsEntry
from metastore.stats.partial_store import FilePartials
from metastore.store.worker_engine import create_worker_engine
from metastore.wire.stats import encode_served

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["EmbeddedMetastoreClient"]

T = TypeVar("T")

#: Engines of databases no client of this process has open, kept for the next client (at most this many).
_IDLE_ENGINES_KEPT = 4


class _Engines:
    """One engine per database URL for this process's embedded clients, kept between them: SQLAlchemy caches
    each statement's compiled SQL in its engine, so a client opened for one call (`analyze_table`, a shell
    statement) would otherwise compile every statement again (a re-ANALYZE's 83 statements: 45 compiled, about
    a tenth of its time). When a URL's last client closes, its connections are closed (nothing stays open on a
    file that may be deleted or replaced) and the engine, with its compiled statements, is kept; the least
    recently used of more than _IDLE_ENGINES_KEPT such engines are dropped. A forked child opens its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engines: OrderedDict[tuple[int, str], list[Any]] = OrderedDict()  # -> [engine, clients]

    def acquire(self, url: str) -> Engine:
        key = (os.getpid(), url)
        with self._lock:
            entry = self._engines.get(key)
            if entry is None:
                entry = self._engines[key] = [create_worker_engine(url, workers=1), 0]
            entry[1] += 1
            self._engines.move_to_end(key)
            return cast("Engine", entry[0])

    def release(self, url: str) -> None:
        key = (os.getpid(), url)
        with self._lock:
            entry = self._engines.get(key)
            if entry is None:  # pragma: no cover - every release follows its acquire
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            entry[0].dispose()  # a new pool: the engine (its dialect and compiled statements) stays usable
            idle = [k for k, (_, clients) in self._engines.items() if clients == 0]
            for stale in idle[:-_IDLE_ENGINES_KEPT]:
                del self._engines[stale]


_engines = _Engines()


class EmbeddedMetastoreClient(MetastoreClient):
    """The metastore in this process, over its database (SQLite files upgrade their schema themselves)."""

    def __init__(self, db_url: str, warehouse: str | None = None, index_root: str | None = None) -> None:
        settings = Settings.from_env(db=db_url, warehouse=warehouse, fetch_bitvector=True, fetch_kll=True,
                                     index_root=index_root)
        # SQLite is embedded and upgrades itself, as `metastore serve` does; a shared PostgreSQL database is
        # upgraded on purpose with `metastore db upgrade`.
        auto_upgrade = settings.db.startswith("sqlite")
        engine = _engines.acquire(settings.db)
        try:
            self._ms = Metastore.open(settings, served_encoding=encode_served, auto_upgrade=auto_upgrade,
                                      engine=engine)
            self._ms.store.ensure_default_database(settings.warehouse)
        except BaseException:
            _engines.release(settings.db)
            raise
        self._closed = False
        self.warehouse = settings.warehouse
        self.target = settings.db

    @property
    def returns_sketches(self) -> bool:
        return True

    @staticmethod
    def _run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except MetastoreError:
            raise
        except ValueError as exc:  # a malformed value deep inside a request, as the server maps it
            raise InvalidInput(str(exc)) from None

    def create_database(self, db: Database) -> None:
        self._run(self._ms.catalog.create_database, db)

    def get_database(self, name: str) -> Database:
        return self._run(self._ms.catalog.get_database, name)

    def list_databases(self, pattern: str | None = None) -> list[str]:
        return self._run(self._ms.catalog.list_databases, pattern)

    def drop_database(self, name: str, *, delete_data: bool = True, cascade: bool = False) -> None:
        self._run(self._ms.catalog.drop_database, name, delete_data=delete_data, cascade=cascade)

    def create_table(self, table: Table) -> Table:
        self._run(self._ms.catalog.create_table, table)
        return self.get_table(table.db_name, table.table_name)

    def get_table(self, db_name: str, table_name: str) -> Table:
        return self._run(self._ms.catalog.get_table, db_name, table_name)

    def list_tables(self, db_name: str, pattern: str | None = None) -> list[str]:
        return self._run(self._ms.catalog.list_tables, db_name, pattern)

    def alter_table(self, db_name: str, table_name: str, table: Table) -> None:
        self._run(self._ms.catalog.alter_table, db_name, table_name, table)

    def update_table_parameters(self, db_name: str, table_name: str, changes: Mapping[str, str]) -> None:
        self._run(self._ms.catalog.update_table_parameters, db_name, table_name, dict(changes))

    def drop_table(self, db_name: str, table_name: str, *, delete_data: bool = True) -> None:
        self._run(self._ms.catalog.drop_table, db_name, table_name, delete_data=delete_data)

    def add_partitions(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], *, if_not_exists: bool = False
    ) -> list[Partition]:
        return self._run(
            self._ms.catalog.add_partitions, db_name, table_name, list(partitions), if_not_exists=if_not_exists
        )

    def get_partition(self, db_name: str, table_name: str, values: Sequence[str]) -> Partition:
        return self._run(self._ms.catalog.get_partition, db_name, table_name, list(values))

    def list_partitions(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[Partition]:
        if partial_values is None:
            return self._run(self._ms.catalog.list_partitions, db_name, table_name)
        return self._run(self._ms.catalog.list_partitions_ps, db_name, table_name, list(partial_values))

    def list_partition_names(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[str]:
        if partial_values is None:
            return self._run(self._ms.catalog.list_partition_names, db_name, table_name)
        return self._run(self._ms.catalog.list_partition_names_ps, db_name, table_name, list(partial_values))

    def get_partitions_by_names(self, db_name: str, table_name: str, names: Sequence[str]) -> list[Partition]:
        return self._run(self._ms.catalog.get_partitions_by_names, db_name, table_name, list(names))

    def alter_partitions(self, db_name: str, table_name: str, partitions: Sequence[Partition]) -> None:
        self._run(self._ms.catalog.alter_partitions, db_name, table_name, list(partitions))

    def drop_partitions(
        self, db_name: str, table_name: str, names: Sequence[str], *, delete_data: bool = True,
        if_exists: bool = False,
    ) -> list[Partition]:
        return self._run(
            self._ms.catalog.drop_partitions, db_name, table_name, names=list(names), delete_data=delete_data,
            if_exists=if_exists,
        )

    def write_analysis(
        self, db_name: str, table_name: str, partitions: Sequence[Partition],
        partition_statistics: Sequence[StatsWrite], table_statistics: Sequence[StatsWrite] = (),
        table_parameters: Mapping[str, str] | None = None, *, parameters_only: bool = False,
    ) -> None:
        """Everything in one transaction (Metastore.write_analysis): all of it stored, or nothing."""
        writes = [w for w in (*partition_statistics, *table_statistics) if w.entries]
        self._run(self._ms.write_analysis, db_name, table_name, list(partitions), writes,
                  None if table_parameters is None else dict(table_parameters), parameters_only=parameters_only)

    def _write_batch(self, writes: Sequence[StatsWrite], *, merge: bool, engine: str) -> None:
        self._run(self._ms.stats.write, list(writes), merge=merge, engine=engine)

    def table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE,
        sketches: bool = True,
    ) -> list[ColumnStatsEntry]:
        return self._run(self._ms.stats.table_stats, db_name, table_name, list(columns), engine=engine,
                         sketches=sketches)

    def partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, sketches: bool = True,
    ) -> dict[str, list[ColumnStatsEntry]]:
        return self._run(
            self._ms.stats.partitions_stats, db_name, table_name, list(partition_names), list(columns), engine=engine,
            sketches=sketches,
        )

    def aggregate_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE,
    ) -> AggregateResult:
        return self._run(
            self._ms.stats.aggregate, db_name, table_name, list(partition_names), list(columns), engine=engine
        )

    def delete_table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE
    ) -> None:
        self._run(
            self._ms.stats.delete_table_stats, db_name, table_name, None if columns is None else list(columns),
            engine=engine,
        )

    def delete_partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE,
    ) -> None:
        self._run(
            self._ms.stats.delete_partition_stats, db_name, table_name,
            None if partition_names is None else list(partition_names),
            None if columns is None else list(columns), engine=engine,
        )

    def get_file_partials(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        paths: Sequence[str] | None = None,
    ) -> list[FilePartials]:
        return self._run(self._ms.file_partials.get, db_name, table_name, partition_names, paths)

    def put_file_partials(self, db_name: str, table_name: str, files: Sequence[FilePartials]) -> None:
        self._run(self._ms.file_partials.put, db_name, table_name, files)

    def delete_file_partials(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        paths: Sequence[str] | None = None,
    ) -> None:
        self._run(self._ms.file_partials.delete, db_name, table_name, partition_names, paths)

    def create_index(self, record: IndexRecord) -> IndexRecord:
        return self._run(self._ms.indexes.create, record)

    def get_index(self, db_name: str, table_name: str, name: str) -> IndexRecord:
        return self._run(self._ms.indexes.get, name, db_name, table_name)

    def list_indexes(self, db_name: str | None = None, table_name: str | None = None) -> list[IndexRecord]:
        return self._run(self._ms.indexes.list, db_name, table_name)

    def finish_index_build(
        self, db_name: str, table_name: str, name: str, parts: Sequence[IndexPart], *, built: int,
        partitions: tuple[str, ...] | None = None,
    ) -> IndexRecord:
        return self._run(
            self._ms.indexes.finish_build, name, list(parts), built=built, partitions=partitions, db_name=db_name,
            table_name=table_name,
        )

    def drop_index(self, db_name: str, table_name: str, name: str, partitions: Sequence[str] | None = None) -> None:
        self._run(self._ms.indexes.drop, name, None if partitions is None else list(partitions), db_name, table_name)

    def filter_splits(self, db_name: str, table_name: str, predicate: str, splits: Sequence[Split]) -> FilterResult:
        return self._run(self._ms.indexes.filter_splits, db_name, table_name, predicate, list(splits))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _engines.release(self.target)
