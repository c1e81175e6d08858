"""Engines: SQLite setup (WAL, busy timeout, foreign keys, BEGIN IMMEDIATE), fork safety, bad URLs."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from metastore.errors import MetastoreError
from metastore.store.engine import SQLITE_BEGIN, autocommit_connection, create_engine


def test_sqlite_pragmas_and_parent_directory(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "metastore.db"
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
            # a file database is read memory-mapped (each embedded client starts with an empty page cache)
            assert conn.exec_driver_sql("PRAGMA mmap_size").scalar() == 256 << 20
        assert path.exists()
    finally:
        engine.dispose()


def _interleaved_writers(engine: sa.Engine, mode: str) -> list[BaseException]:
    """Two transactions that both read, then both write: the pattern that makes deferred SQLite
    transactions fail with "database is locked" (a reader cannot become a writer behind another writer)."""
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    both_read = threading.Barrier(2, timeout=5)
    errors: list[BaseException] = []

    def body() -> None:
        try:
            with engine.connect() as conn:
                conn.execution_options(**{SQLITE_BEGIN: mode})
                with conn.begin():
                    conn.exec_driver_sql("SELECT count(*) FROM t").scalar()
                    if mode == "DEFERRED":
                        both_read.wait()
                    conn.exec_driver_sql("INSERT INTO t VALUES (1)")
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=body) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return errors


def test_begin_immediate_makes_writers_queue(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'x.db'}", connect_args={"timeout": 2})
    try:
        assert _interleaved_writers(engine, "IMMEDIATE") == []
        # The control: the same work in deferred transactions fails, so the test above can fail.
        errors = _interleaved_writers(engine, "DEFERRED")
        assert any("locked" in str(e) for e in errors), errors
    finally:
        engine.dispose()


def _query_in_child(engine: sa.Engine, queue: multiprocessing.Queue) -> None:
    with engine.connect() as conn:
        queue.put((os.getpid(), conn.execute(sa.text("SELECT 41 + 1")).scalar()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_engine_used_across_fork(db_url: str) -> None:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:  # the parent has a pooled connection now
            conn.execute(sa.text("SELECT 1"))
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_query_in_child, args=(engine, queue))
        child.start()
        pid, value = queue.get(timeout=60)
        child.join(60)
        assert child.exitcode == 0 and value == 42 and pid != os.getpid()
        with engine.connect() as conn:  # the parent's connection still works
            assert conn.execute(sa.text("SELECT 2")).scalar() == 2
    finally:
        engine.dispose()


@pytest.mark.parametrize("url", ["mysql://x/y", "not a url"])
def test_unsupported_urls(url: str) -> None:
    with pytest.raises(MetastoreError, match="unsupported database|not a database URL"):
        create_engine(url)


def _autocommit_probe_engine(pg_url: str) -> sa.Engine:
    """One pooled connection, so every checkout below gets the same DB-API connection back."""
    engine = create_engine(pg_url, pool_size=1, max_overflow=0, pool_pre_ping=False)  # as the server's workers
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS autocommit_probe (x integer)")
        conn.exec_driver_sql("DELETE FROM autocommit_probe")
    return engine


def test_autocommit_connection_commits_each_statement_and_leaves_the_pool_transactional(pg_url: str) -> None:
    engine = _autocommit_probe_engine(pg_url)
    try:
        with autocommit_connection(engine) as conn:
            first = conn.connection.dbapi_connection
            conn.exec_driver_sql("INSERT INTO autocommit_probe VALUES (1)")
            # Committed already: another connection sees it while this one is still checked out.
            other = sa.create_engine(pg_url)
            try:
                with other.connect() as seen:
                    assert seen.exec_driver_sql("SELECT count(*) FROM autocommit_probe").scalar() == 1
            finally:
                other.dispose()
        # Back in the pool in transactional mode: a rolled-back insert on the same connection disappears.
        with engine.connect() as conn:
            assert conn.connection.dbapi_connection is first
            assert conn.connection.dbapi_connection.autocommit is False
            conn.exec_driver_sql("INSERT INTO autocommit_probe VALUES (2)")
            conn.rollback()
            assert conn.exec_driver_sql("SELECT array_agg(x) FROM autocommit_probe").scalar() == [1]
        # Also after the body failed.
        with pytest.raises(ZeroDivisionError), autocommit_connection(engine) as conn:
            conn.exec_driver_sql("SELECT 1")
            raise ZeroDivisionError
        with engine.connect() as conn:
            assert conn.connection.dbapi_connection.autocommit is False
    finally:
        engine.dispose()


def test_autocommit_connection_that_breaks_is_not_pooled(pg_url: str) -> None:
    engine = _autocommit_probe_engine(pg_url)
    try:
        with autocommit_connection(engine) as conn:
            broken = conn.connection.dbapi_connection
            broken.close()  # switching it back fails now
        with engine.connect() as conn:
            assert conn.connection.dbapi_connection is not broken
            assert conn.connection.dbapi_connection.autocommit is False
            assert conn.exec_driver_sql("SELECT 42").scalar() == 42
    finally:
        engine.dispose()


def test_autocommit_connection_sends_nothing_more_after_a_repeatable_read_transaction(pg_url: str) -> None:
    """A connection that once ran at REPEATABLE READ (the reply cache's fills do) comes back from SQLAlchemy with
    READ COMMITTED set explicitly; switching it out of autocommit must not cost a SET round trip afterwards."""
    engine = _autocommit_probe_engine(pg_url)
    watcher = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                assert conn.exec_driver_sql("SHOW transaction_isolation").scalar() == "repeatable read"
        with autocommit_connection(engine) as conn:
            pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
            conn.exec_driver_sql("SELECT 'last statement of the call'")
        with watcher.connect() as w:
            last = w.exec_driver_sql("SELECT query FROM pg_stat_activity WHERE pid = %(pid)s", {"pid": pid}).scalar()
        assert last == "SELECT 'last statement of the call'"
        # Transactions on it still run at the server's default level, and other levels still apply.
        with engine.connect() as conn, conn.begin():
            assert conn.exec_driver_sql("SHOW transaction_isolation").scalar() == "read committed"
        with engine.connect() as conn:
            conn.execution_options(isolation_level="SERIALIZABLE")
            with conn.begin():
                assert conn.exec_driver_sql("SHOW transaction_isolation").scalar() == "serializable"
    finally:
        watcher.dispose()
        engine.dispose()


def test_a_database_nobody_answers_is_store_unavailable_with_the_details_only_in_the_cause() -> None:
    """Connecting fails (nothing listens on the port): every kind of unit of work says StoreUnavailable with a
    message for clients; host, port and driver text stay in the cause, for the server log."""
    import socket

    from metastore.errors import StoreUnavailable
    from metastore.store import Store

    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = Store(f"postgresql+psycopg2://postgres@127.0.0.1:{port}/nowhere")
    try:
        for unit in (store.transaction, store.read, store.autocommit, store.snapshot):
            with pytest.raises(StoreUnavailable) as caught, unit():
                pass
            assert str(caught.value) == "the metastore database is unavailable; try again later"
            assert str(port) in str(caught.value.__cause__)
    finally:
        store.dispose()
