"""The database engine of one pre-forked server worker.

Connection budget: every worker has its own pool, so the pools of all workers together must fit the
database's connection limit. PostgreSQL allows 100 connections by default; the workers of one server share
POSTGRES_CONNECTION_BUDGET of them, leaving room for `metastore db`, psql and a second server.

Liveness: SQLAlchemy's pool_pre_ping costs a round trip on every checkout, i.e. on every call. A connection
used a moment ago is alive; only one that sat idle longer than IDLE_PING_SECONDS is pinged before use (a
connection the server dropped meanwhile is replaced transparently, as with pre-ping).
"""

from __future__ import annotations

import logging
import time

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from metastore.store.engine import create_engine

log = logging.getLogger(__name__)

POSTGRES_CONNECTION_BUDGET = 64
IDLE_PING_SECONDS = 10.0
# Connections a worker keeps open between bursts; more are opened (up to its share) under load.
_KEPT_PER_WORKER = 8


def pool_options(workers: int) -> dict[str, int]:
    """pool_size/max_overflow for one of `workers` workers, together within POSTGRES_CONNECTION_BUDGET
    (at least one connection each)."""
    share = max(1, POSTGRES_CONNECTION_BUDGET // max(1, workers))
    kept = min(_KEPT_PER_WORKER, share)
    return {"pool_size": kept, "max_overflow": share - kept}


def create_worker_engine(url: str, *, workers: int) -> Engine:
    """An engine for one worker: on PostgreSQL with its share of the connection budget and an idle-time ping
    instead of a ping per checkout; SQLite as the store configures it."""
    backend = sa.engine.make_url(url).get_backend_name()
    if backend != "postgresql":
        return create_engine(url)
    options = pool_options(workers)
    if workers * options["pool_size"] + workers * options["max_overflow"] > POSTGRES_CONNECTION_BUDGET:
        log.warning(
            "%d workers with at least one database connection each exceed the budget of %d connections",
            workers,
            POSTGRES_CONNECTION_BUDGET,
        )
    engine = create_engine(url, pool_pre_ping=False, **options)
    _ping_when_idle(engine)
    return engine


def _ping_when_idle(engine: Engine) -> None:
    @event.listens_for(engine, "checkin")
    def _idle_from(_dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(
        dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry, _proxy: PoolProxiedConnection
    ) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < IDLE_PING_SECONDS:
            return
        try:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("SELECT 1")
            finally:
                cursor.close()
            dbapi_connection.rollback()
        except Exception as exc:  # any failure means: not usable, take another connection
            raise sa.exc.DisconnectionError(f"idle connection is gone: {exc}") from exc
