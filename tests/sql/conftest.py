"""Fixtures of the SQL shell tests: an embedded metastore on a fresh SQLite file with its own warehouse and
statistics cache, and a session running SQL over it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from metastore.client.embedded import EmbeddedMetastoreClient
from sql.session import SqlSession


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


@pytest.fixture
def embedded(tmp_path: Path, warehouse: Path) -> Iterator[EmbeddedMetastoreClient]:
    """An embedded client on a fresh SQLite database."""
    client = EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'metastore.db'}", str(warehouse))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def stats_cache(tmp_path: Path) -> Path:
    return tmp_path / "analyze-cache.sqlite"


@pytest.fixture
def session(embedded: EmbeddedMetastoreClient, stats_cache: Path) -> SqlSession:
    return SqlSession(embedded, stats_cache)
