"""Fixtures of the store tests: a migrated store on each database, and a small partitioned table.

Every test that needs a store gets an empty, migrated one on SQLite and on PostgreSQL (`store_url`). The
schema is built once per session by the real Alembic migrations and then reused: SQLite tests get a copy of
the migrated file, PostgreSQL tests a database emptied back to its post-migration state. Creating and
migrating a PostgreSQL database per test (as the suite-wide `db_url` fixture does, which the migration tests
use) costs about a second each and would blow the time budget of this area.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from metastore.catalog import Database
from metastore.store import Store, migrate
from metastore.store.schema import metadata
from store.builders import partition, sales_table

WAREHOUSE = "/warehouse"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite file migrated to head, with catalog `hive` and database `default`."""
    path = tmp_path_factory.mktemp("store-template") / "metastore.db"
    url = f"sqlite:///{path}"
    migrate.upgrade(url)
    st = Store(url)
    st.ensure_default_database(WAREHOUSE)
    st.dispose()
    return path


@pytest.fixture(scope="session")
def pg_store_database(pg_server: str) -> Iterator[str]:
    """One PostgreSQL database for the session, migrated to head."""
    name = f"mstest_store_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(pg_server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(pg_server).set(database=name).render_as_string(hide_password=False)
    try:
        migrate.upgrade(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
                {"n": name},
            )
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


def _reset_postgresql(url: str) -> None:
    """Back to the state right after `metastore db upgrade` plus `default`: every metastore table empty."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            # DELETE, not TRUNCATE: TRUNCATE makes new files for every table and index, ten times slower here.
            for table in reversed(metadata.sorted_tables):
                conn.execute(table.delete())
    finally:
        engine.dispose()
    st = Store(url)
    st.ensure_default_database(WAREHOUSE)
    st.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of an empty metastore (schema at head, `default` only) on SQLite, then on PostgreSQL."""
    if request.param == "sqlite":
        path = tmp_path / "metastore.db"
        src = sqlite3.connect(request.getfixturevalue("sqlite_template"))
        dst = sqlite3.connect(path)
        with dst:
            src.backup(dst)
        src.close()
        dst.close()
        return f"sqlite:///{path}"
    url = request.getfixturevalue("pg_store_database")
    _reset_postgresql(url)
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """A Store on an empty metastore database (SQLite, then PostgreSQL)."""
    st = Store(store_url)
    try:
        yield st
    finally:
        st.dispose()


@pytest.fixture
def sales(store: Store) -> Store:
    """The store with database `sales`, table sales.orders (keys ds string, hr int) and 3×4 partitions."""
    with store.transaction() as uow:
        uow.databases.create(Database(name="sales", location_uri="/warehouse/sales.db"))
        uow.tables.create(sales_table())
        uow.partitions.add([partition([f"2024-01-0{d}", str(h)]) for d in (1, 2, 3) for h in (0, 5, 10, 23)])
    return store
