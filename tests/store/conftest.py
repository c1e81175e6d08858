"""Fixtures of the store tests: a migrated store on each database, and a small partitioned table."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from metastore.catalog import Database
from metastore.store import Store, migrate
from store.builders import partition, sales_table


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A Store on a freshly migrated database (SQLite file or PostgreSQL database), with `default`."""
    migrate.upgrade(db_url)
    st = Store(db_url)
    st.ensure_default_database("/warehouse")
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
