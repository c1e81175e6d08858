"""Each worker's database engine: pools that together fit PostgreSQL's default max_connections, and a
connection the database dropped while it was idle replaced before use (without a ping on every call)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from metastore.config import Settings
from metastore.store import worker_engine
from metastore.store.worker_engine import POSTGRES_CONNECTION_BUDGET, create_worker_engine, pool_options
from server.harness import fresh_pg_database

POSTGRES_DEFAULT_MAX_CONNECTIONS = 100


@pytest.mark.parametrize("workers", [1, 2, 3, 4, 8, 16, 32, 64])
def test_pools_of_all_workers_fit_the_connection_budget(workers):
    options = pool_options(workers)
    assert options["pool_size"] >= 1 and options["max_overflow"] >= 0
    total = workers * (options["pool_size"] + options["max_overflow"])
    assert total <= POSTGRES_CONNECTION_BUDGET < POSTGRES_DEFAULT_MAX_CONNECTIONS


def test_default_worker_count_fits():
    workers = Settings().workers
    options = pool_options(workers)
    assert workers * (options["pool_size"] + options["max_overflow"]) < POSTGRES_DEFAULT_MAX_CONNECTIONS


def test_connection_dropped_while_idle_is_replaced(pg_server, monkeypatch):
    with fresh_pg_database(pg_server) as url:
        engine = create_worker_engine(url, workers=2)
        admin = sa.create_engine(pg_server, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
            with admin.connect() as a:
                a.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            monkeypatch.setattr(worker_engine, "IDLE_PING_SECONDS", 0.0)
            with engine.connect() as conn:
                assert conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() != pid
        finally:
            engine.dispose()
            admin.dispose()


def test_recently_used_connection_is_not_pinged(pg_server, monkeypatch):
    # With a long idle threshold nothing checks a connection on checkout: a dropped one fails its first
    # statement (then the pool replaces it). That is the round trip per call pre-ping would have cost.
    with fresh_pg_database(pg_server) as url:
        engine = create_worker_engine(url, workers=2)
        admin = sa.create_engine(pg_server, isolation_level="AUTOCOMMIT")
        monkeypatch.setattr(worker_engine, "IDLE_PING_SECONDS", 1e9)
        try:
            with engine.connect() as conn:
                pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
            with admin.connect() as a:
                a.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            with pytest.raises(sa.exc.OperationalError), engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
            with engine.connect() as conn:
                assert conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() != pid
        finally:
            engine.dispose()
            admin.dispose()
