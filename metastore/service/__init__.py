"""The metastore's domain API: catalog and statistics operations, one transaction per call.

The Thrift handler is a thin adapter over it; the embedded SQL shell uses it directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from metastore.catalog import DEFAULT_ENGINE, Partition
from metastore.config import Settings
from metastore.service.catalog import CatalogService
from metastore.service.file_partials import FilePartialsService
from metastore.service.functions import FunctionService
from metastore.service.indexes import IndexService, default_index_root
from metastore.service.listing_cache import ListingCache
from metastore.service.statistics import AggregateResult, StatisticsService, StatsWrite
from metastore.service.stats_cache import ReplyCache
from metastore.service.user_types import TypeService
from metastore.store import Store, migrate
from metastore.store.column_stats import ServedEncoding
from metastore.store.worker_engine import create_worker_engine

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = [
    "AggregateResult", "CatalogService", "FilePartialsService", "FunctionService", "IndexService", "Metastore",
    "StatisticsService", "StatsWrite", "TypeService",
]


@dataclass
class Metastore:
    """Everything a request may do, over one store."""

    store: Store
    catalog: CatalogService
    stats: StatisticsService
    functions: FunctionService
    types: TypeService
    file_partials: FilePartialsService
    indexes: IndexService

    @classmethod
    def open(
        cls, settings: Settings, *, served_encoding: ServedEncoding | None, auto_upgrade: bool = False,
        workers: int | None = None, check_schema: bool = True, engine: Engine | None = None,
    ) -> Metastore:
        """Open the store of `settings.db` and build the services over it.

        served_encoding is how the edge sends one statistic (metastore.wire.stats.encode_served), kept with each
        statistics row written: the server and the embedded client pass it, so rows any of them writes serve
        as bytes; it is a required choice because a writer that leaves it out makes every read of its rows slower.

        check_schema refuses (or with auto_upgrade, upgrades) an out-of-date schema; a server's workers skip it,
        their parent checked. workers sizes the connection pool as one of that many server workers. engine is
        one the caller keeps (an embedded client's engine reused between clients); None opens one."""
        if check_schema:
            migrate.check_schema(settings.db, auto_upgrade=auto_upgrade, engine=engine)
        if engine is None:
            engine = create_worker_engine(settings.db, workers=workers or 1)
        store = Store(settings.db, engine=engine, served_encoding=served_encoding)
        index_root = settings.index_root or default_index_root(settings.warehouse)
        return cls(
            store=store,
            catalog=CatalogService(
                store, settings.warehouse, index_root, spark_statistics=settings.spark_statistics,
                listing_cache=ListingCache(settings.listing_cache_mb * 1024 * 1024)
                if settings.listing_cache_mb > 0 else None,
            ),
            stats=StatisticsService(
                store, fetch_bitvector=settings.fetch_bitvector, fetch_kll=settings.fetch_kll,
                synchronous_commit=settings.stats_synchronous_commit,
                reply_cache=ReplyCache(settings.stats_cache_mb * 1024 * 1024) if settings.stats_cache_mb > 0 else None,
            ),
            functions=FunctionService(store),
            types=TypeService(store),
            file_partials=FilePartialsService(store),
            indexes=IndexService(store, index_root),
        )

    def write_analysis(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], statistics: Sequence[StatsWrite],
        table_parameters: Mapping[str, str | None] | None = None, *, engine: str = DEFAULT_ENGINE,
        parameters_only: bool = False,
    ) -> None:
        """What an ANALYZE writes, in one transaction: the table's parameters changed as update_table_parameters
        does (first: the table's row is locked before its partitions', the order every statistics write takes,
        so two such writers queue instead of deadlocking), the partitions' definitions as alter_partitions
        replaces them, then ``statistics`` as write_statistics stores them (not merged). Either all of it is
        stored or, when any part fails, none. ``parameters_only``: the partitions are their stored definitions
        with new parameters (as the caller listed them), so only their parameters are written
        (CatalogService.alter_partition_parameters_in: what alter_partitions stores, without rewriting the rest)."""
        with self.store.transaction() as uow:
            if table_parameters:
                self.catalog.update_table_parameters_in(uow, db_name, table_name, table_parameters)
            if partitions and parameters_only:
                self.catalog.alter_partition_parameters_in(uow, db_name, table_name, partitions)
            elif partitions:
                self.catalog.alter_partitions_in(uow, db_name, table_name, partitions)
            written = self.stats.write_in(uow, statistics, engine=engine)
        self.stats.remember(written)

    def close(self) -> None:
        self.store.dispose()
