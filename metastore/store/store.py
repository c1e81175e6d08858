"""The Store: one engine, and units of work that are each exactly one database transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from metastore.errors import InvalidInput
from metastore.store import migrate
from metastore.store.column_stats import ColumnStatsRepository
from metastore.store.databases import DatabaseRepository, ensure_default_database
from metastore.store.engine import SQLITE_BEGIN, create_engine
from metastore.store.partitions import PartitionRepository
from metastore.store.tables import TableRepository


@dataclass
class UnitOfWork:
    """The repositories of one transaction; they all share its connection."""

    connection: sa.Connection
    databases: DatabaseRepository = field(init=False)
    tables: TableRepository = field(init=False)
    partitions: PartitionRepository = field(init=False)
    column_stats: ColumnStatsRepository = field(init=False)

    def __post_init__(self) -> None:
        self.databases = DatabaseRepository(self.connection)
        self.tables = TableRepository(self.connection)
        self.partitions = PartitionRepository(self.connection)
        self.column_stats = ColumnStatsRepository(self.connection)


class Store:
    """Persistence of the metastore. Create one per process (after fork, in pre-forked servers); it is safe
    to share between the threads of that process."""

    def __init__(self, url: str, *, engine: Engine | None = None) -> None:
        self.url = url
        self.engine = engine if engine is not None else create_engine(url)

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
        take the write lock, so it never waits for writers."""
        try:
            with self.engine.connect() as conn:
                if not write:
                    conn.execution_options(**{SQLITE_BEGIN: "DEFERRED"})
                with conn.begin():
                    yield UnitOfWork(conn)
        except sa.exc.DataError as exc:
            # PostgreSQL enforces column sizes (e.g. a location over 4000 characters); say what it refused.
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
            raise InvalidInput(f"the database refused a value: {reason}") from exc

    def read(self) -> AbstractContextManager[UnitOfWork]:
        """A read-only unit of work (shorthand for transaction(write=False))."""
        return self.transaction(write=False)

    def ensure_default_database(self, warehouse: str) -> bool:
        """Create catalog `hive` and database `default` at the warehouse directory unless they exist; True
        when this call created the database. Idempotent and safe when several workers start at once."""
        with self.transaction() as uow:
            return ensure_default_database(uow.connection, warehouse)

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()
