"""Fixtures of the index tests: a metastore client embedded or over Thrift (`metastore serve`), on SQLite or
PostgreSQL, with its warehouse (and so the default index root) under the test's temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server.harness import ServerProcess, fresh_pg_database, start_server

from metastore.client import MetastoreClient, ThriftMetastoreClient
from metastore.client.embedded import EmbeddedMetastoreClient


@pytest.fixture(params=["embedded-sqlite", "thrift-sqlite", pytest.param("thrift-postgresql", marks=pytest.mark.pg)])
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetastoreClient]:
    warehouse = tmp_path / "warehouse"
    if request.param == "embedded-sqlite":
        with EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'ms.db'}", str(warehouse)) as c:
            yield c
        return
    if request.param == "thrift-sqlite":
        server = start_server(tmp_path / "serve", f"sqlite:///{tmp_path / 'ms.db'}", workers=1,
                              extra_args=["--warehouse", str(warehouse)])
        yield from _remote(server)
        return
    admin = request.getfixturevalue("pg_server")
    from metastore.store import migrate

    with fresh_pg_database(admin) as url:
        migrate.upgrade(url)
        server = start_server(tmp_path / "serve", url, workers=1, extra_args=["--warehouse", str(warehouse)])
        yield from _remote(server)


def _remote(server: ServerProcess) -> Iterator[MetastoreClient]:
    try:
        with ThriftMetastoreClient(f"thrift://127.0.0.1:{server.port}") as c:
            yield c
    finally:
        server.stop()
