"""Database engines for the store: SQLite (embedded default) and PostgreSQL, each set up for concurrent use."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from metastore.errors import MetastoreError
from metastore.store.sqlite_files import create_private_database_file, is_file_database
from metastore.store.urls import database_url

# How long an SQLite writer waits for another writer's lock before failing with "database is locked".
SQLITE_BUSY_TIMEOUT_S = 30.0

# Bytes of an SQLite database file its connections read memory-mapped (PRAGMA mmap_size) instead of with a read
# call per page: each embedded client opens a fresh connection (an empty page cache), and a statistics row's
# values after its bit vector (several KB: overflow pages) cost a page read each. A re-ANALYZE's read-back of 390
# partition statistics: 1.9 vs 2.8 ms on a fresh connection. Pages still in the WAL are read from it as before.
_SQLITE_MMAP_BYTES = 256 << 20

# Execution option naming how an SQLite transaction begins. IMMEDIATE takes the write lock up front, so two
# writers queue on busy_timeout instead of both starting as readers and one failing when it upgrades to a
# writer (SQLite cannot wait in that case: it would deadlock). Read-only units of work pass DEFERRED.
SQLITE_BEGIN = "sqlite_begin"


def create_engine(url: str, **kwargs: object) -> Engine:
    """An engine for `url`: SQLite gets WAL, busy_timeout, foreign keys and BEGIN IMMEDIATE; PostgreSQL a
    pre-pinged pool. Safe to call in a forked worker; engines inherited across fork() are invalidated."""
    parsed = database_url(url)  # a plain postgresql:// gets the psycopg2 driver we ship
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        engine = _sqlite_engine(parsed, **kwargs)
    elif backend == "postgresql":
        options: dict[str, object] = {
            "pool_pre_ping": True,
            "pool_size": 5,
            "max_overflow": 10,
            "pool_recycle": 1800,
        }
        options.update(kwargs)
        engine = sa.create_engine(parsed, **options)
    else:
        raise MetastoreError(f"unsupported database {backend!r} in {url!r}: use sqlite:/// or postgresql://")
    _invalidate_connections_from_parent_process(engine)
    return engine


def _sqlite_engine(parsed: sa.engine.URL, **kwargs: object) -> Engine:
    database = parsed.database
    if is_file_database(database):
        create_private_database_file(database)  # 0600 before SQLite creates it world-readable
    given = kwargs.pop("connect_args", None) or {}
    if not isinstance(given, Mapping):
        raise TypeError(f"connect_args must be a mapping, got {type(given).__name__}")
    connect_args = dict(given)
    connect_args.setdefault("timeout", SQLITE_BUSY_TIMEOUT_S)
    # Connections move between the server's threads through the pool, never used by two at once.
    connect_args.setdefault("check_same_thread", False)
    engine = sa.create_engine(parsed, connect_args=connect_args, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # Let SQLAlchemy's "begin" event below issue BEGIN itself; pysqlite's own implicit BEGIN is deferred
        # and would not be emitted before SELECTs.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
            cursor.execute("PRAGMA foreign_keys = ON")
            if database and database != ":memory:":
                cursor.execute("PRAGMA journal_mode = WAL")
                # With WAL, NORMAL cannot corrupt the database; it only may lose the last commits on power loss.
                cursor.execute("PRAGMA synchronous = NORMAL")
                cursor.execute(f"PRAGMA mmap_size = {_SQLITE_MMAP_BYTES}")
            # Hive's LIKE in partition filters is case-sensitive, as PostgreSQL's is.
            cursor.execute("PRAGMA case_sensitive_like = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN, "IMMEDIATE")
        if mode not in ("DEFERRED", "IMMEDIATE", "EXCLUSIVE"):
            raise ValueError(f"{SQLITE_BEGIN} must be DEFERRED, IMMEDIATE or EXCLUSIVE, got {mode!r}")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


def _invalidate_connections_from_parent_process(engine: Engine) -> None:
    """Never hand a forked child a connection its parent opened (SQLAlchemy's documented multiprocessing recipe)."""

    @event.listens_for(engine, "connect")
    def _remember_pid(_dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry) -> None:
        record.info["pid"] = os.getpid()

    @event.listens_for(engine, "checkout")
    def _check_pid(
        _dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry, proxy: PoolProxiedConnection
    ) -> None:
        pid = os.getpid()
        if record.info.get("pid", pid) != pid:
            # The recipe's own assignment. The public interfaces SQLAlchemy types these events with declare empty
            # __slots__, while the objects passed (its _ConnectionRecord and _ConnectionFairy) have the attribute.
            record.dbapi_connection = proxy.dbapi_connection = None  # type: ignore[misc]
            raise sa.exc.DisconnectionError(
                f"connection opened in process {record.info['pid']} used in child process {pid}"
            )


@contextmanager
def autocommit_connection(engine: Engine) -> Iterator[sa.Connection]:
    """A pooled PostgreSQL connection whose statements each commit on their own (for reads: under READ
    COMMITTED every statement has its own snapshot anyway, so BEGIN/COMMIT would only add round trips).

    The psycopg2 connection is switched to autocommit directly. SQLAlchemy's isolation_level="AUTOCOMMIT"
    would do the same but, at check-in, reset the level with a SET default_transaction_isolation round trip on
    every call. The connection is switched back before it returns to the pool; one that cannot be is
    discarded, so no pooled connection is ever left in autocommit."""
    with engine.connect() as conn:
        dbapi = dbapi_connection_of(conn)
        if dbapi.isolation_level is not None:
            # A connection that once ran at another level (the reply cache's REPEATABLE READ fills) comes back
            # from SQLAlchemy's reset with READ COMMITTED set explicitly, and psycopg2 would then send
            # SET default_transaction_isolation TO DEFAULT every time it leaves autocommit: one more round trip
            # per call. The server's default is what SQLAlchemy's reset restored (it is the level it found on
            # connecting); outside autocommit, setting it sends nothing.
            dbapi.isolation_level = None
        dbapi.autocommit = True
        try:
            yield conn
        finally:
            try:
                dbapi.autocommit = False
            except Exception:  # noqa: BLE001 - a broken connection: it must not go back to the pool
                conn.invalidate()


def dbapi_connection_of(conn: sa.Connection) -> DBAPIConnection:
    """The DB-API connection under `conn` (checked out from the pool, so present unless `conn` was closed)."""
    dbapi = conn.connection.dbapi_connection
    if dbapi is None:
        raise sa.exc.ResourceClosedError("the connection was closed: it has no DB-API connection")
    return dbapi


def is_sqlite(engine_or_conn: Engine | sa.Connection) -> bool:
    """Whether the engine or connection talks to SQLite."""
    return engine_or_conn.dialect.name == "sqlite"
