"""The Store: one engine, and units of work that are each exactly one database transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from metastore.errors import InvalidInput, MetastoreError, StoreUnavailable
from metastore.store import migrate
from metastore.store.column_stats import ServedEncoding, StatsRepository
from metastore.store.databases import DatabaseRepository, default_database_exists, ensure_default_database
from metastore.store.engine import SQLITE_BEGIN, autocommit_connection, create_engine
from metastore.store.partitions import PartitionRepository
from metastore.store.split_indexes import SplitIndexRepository
from metastore.store.tables import TableRepository


@dataclass
class UnitOfWork:
    """The repositories of one transaction; they all share its connection."""

    connection: sa.Connection
    # The edge's encoding of a served statistic, kept with each statistics row (see StatsRepository).
    served_encoding: ServedEncoding | None = None
    databases: DatabaseRepository = field(init=False)
    tables: TableRepository = field(init=False)
    partitions: PartitionRepository = field(init=False)
    column_stats: StatsRepository = field(init=False)
    split_indexes: SplitIndexRepository = field(init=False)

    def __post_init__(self) -> None:
        self.databases = DatabaseRepository(self.connection)
        self.tables = TableRepository(self.connection)
        self.partitions = PartitionRepository(self.connection)
        self.column_stats = StatsRepository(self.connection, self.served_encoding)
        self.split_indexes = SplitIndexRepository(self.connection)


@dataclass(frozen=True)
class StoreFeatures:
    """What the database behind a store offers beyond plain transactions (PostgreSQL has all of it)."""

    # Statements may run in autocommit, each its own snapshot (see Store.autocommit).
    autocommit_reads: bool
    # PARTITIONS.STATS_VERSION renewed by triggers (migration 0003): the reply cache can validate against it.
    partition_stats_versions: bool
    # metastore_put_table_stats and metastore_put_partition_stats (migrations 0004, 0010): a table's or one
    # partition's statistics written in one round trip.
    one_round_trip_writes: bool
    # PART_NAMES_VERSIONS renewed by triggers (migration 0009): get_partition_names replies can be cached.
    partition_names_versions: bool


def _features(dialect: str) -> StoreFeatures:
    postgres = dialect == "postgresql"
    return StoreFeatures(
        autocommit_reads=postgres, partition_stats_versions=postgres, one_round_trip_writes=postgres,
        partition_names_versions=postgres,
    )


class Store:
    """Persistence of the metastore. Create one per process (after fork, in pre-forked servers); it is safe
    to share between the threads of that process."""

    def __init__(
        self, url: str, *, engine: Engine | None = None, served_encoding: ServedEncoding | None = None
    ) -> None:
        """served_encoding: how the server sends one statistic, stored with each statistics row written here
        so that reads can send those bytes (the edge passes metastore.wire.stats.encode_served; without it
        rows keep none and reads build every statistic from its values)."""
        self.url = url
        self.engine = engine if engine is not None else create_engine(url)
        self.features = _features(self.engine.dialect.name)
        self.served_encoding = served_encoding

    @classmethod
    def open(cls, url: str, *, auto_upgrade: bool = False) -> Store:
        """A store on `url` after checking its schema is current: SchemaOutOfDate (naming the command that
        fixes it) when it is older than this code, unless auto_upgrade, which upgrades it instead."""
        migrate.check_schema(url, auto_upgrade=auto_upgrade)
        return cls(url)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[UnitOfWork]:
        """One unit of work = one database transaction: committed when the block ends, rolled back if it
        raises (nothing is half-written). Read-only work may pass write=False: on SQLite it then does not
        take the write lock, so it never waits for writers. StoreUnavailable when the database cannot be
        reached."""
        with _domain_errors(), self.engine.connect() as conn:
            if not write:
                conn.execution_options(**{SQLITE_BEGIN: "DEFERRED"})
            with conn.begin():
                yield UnitOfWork(conn, self.served_encoding)

    @contextmanager
    def autocommit(self) -> Iterator[UnitOfWork]:
        """A unit of work whose statements each commit on their own where the database allows it
        (features.autocommit_reads: under READ COMMITTED every statement has its own snapshot anyway, so
        BEGIN/COMMIT would only add round trips); elsewhere a read-only transaction. For reads, and for writes
        that are one statement (StatsRepository.put_table_stats)."""
        if not self.features.autocommit_reads:
            with self.transaction(write=False) as uow:
                yield uow
            return
        with _domain_errors(), autocommit_connection(self.engine) as conn:
            yield UnitOfWork(conn, self.served_encoding)

    @contextmanager
    def snapshot(self) -> Iterator[UnitOfWork]:
        """A read-only unit of work whose statements all see one snapshot (REPEATABLE READ on PostgreSQL;
        an SQLite transaction is one anyway)."""
        with _domain_errors(), self.engine.connect() as conn:
            if self.features.autocommit_reads:
                conn.execution_options(isolation_level="REPEATABLE READ")
            else:
                conn.execution_options(**{SQLITE_BEGIN: "DEFERRED"})
            with conn.begin():
                yield UnitOfWork(conn, self.served_encoding)

    def read(self) -> AbstractContextManager[UnitOfWork]:
        """A read-only unit of work (shorthand for transaction(write=False))."""
        return self.transaction(write=False)

    def ensure_default_database(self, warehouse: str) -> bool:
        """Create catalog `hive` and database `default` at the warehouse directory unless they exist; True
        when this call created the database. Idempotent and safe when several workers start at once. When both
        exist (every open but the first) only a read checks it: no write lock is taken (an embedded client
        opens a store for each ANALYZE)."""
        with self.transaction(write=False) as uow:
            if default_database_exists(uow.connection):
                return False
        with self.transaction() as uow:
            return ensure_default_database(uow.connection, warehouse)

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


# Database errors that become domain errors (_domain_error); others pass as they are.
_DATABASE_ERRORS = (sa.exc.DataError, sa.exc.OperationalError, sa.exc.InterfaceError)


@contextmanager
def _domain_errors() -> Iterator[None]:
    """Database errors raised inside the block become domain errors (_domain_error); others pass as they are."""
    try:
        yield
    except _DATABASE_ERRORS as exc:
        error = _domain_error(exc)
        if error is None:
            raise
        raise error from exc


def _domain_error(exc: sa.exc.DBAPIError) -> MetastoreError | None:
    """A database error as a domain error: a refused value is InvalidInput (PostgreSQL enforces column sizes,
    e.g. a location over 4000 characters); a connection that cannot be opened or was lost is StoreUnavailable,
    whose message carries no database details (they stay in the exception's cause, for the server log).
    None for anything else (a deadlock, a statement timeout, SQLite's "database is locked"): not an outage."""
    if isinstance(exc, sa.exc.DataError):
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
        return InvalidInput(f"the database refused a value: {reason}")
    # statement None: the error came from opening a connection, no statement was running.
    if exc.connection_invalidated or exc.statement is None:
        return StoreUnavailable("the metastore database is unavailable; try again later")
    return None
