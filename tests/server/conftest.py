"""Fixtures of the server tests: `metastore serve` subprocesses (2 workers) on a fresh SQLite file and on a fresh
PostgreSQL database, one per test module and backend, and clients of our generated ThriftHiveMetastore."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from metastore.api.hive_metastore import ThriftHiveMetastore
from server.harness import ServerProcess, connect, fresh_pg_database, start_server


@pytest.fixture(scope="session")
def pg_schema_template(pg_server: str) -> Iterator[str]:
    """A PostgreSQL database upgraded with the migrations once (as `metastore db upgrade` would), copied by
    each module's database (CREATE DATABASE ... TEMPLATE is much faster than migrating again)."""
    from metastore.store import migrate

    with fresh_pg_database(pg_server) as url:
        migrate.upgrade(url)
        yield sa.engine.make_url(url).database


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh database for one test module: an SQLite file (the server upgrades it itself) or a PostgreSQL
    database at the current schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'metastore.db'}"
        return
    admin = request.getfixturevalue("pg_server")
    template = request.getfixturevalue("pg_schema_template")
    with fresh_pg_database(admin, template=template) as url:
        yield url


@pytest.fixture(scope="module")
def server_factory(
    backend_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., ServerProcess]]:
    """Start more servers on the module's database (stopped at the end of the module)."""
    started: list[ServerProcess] = []

    def start(*extra_args: str, workers: int = 2, env: dict[str, str] | None = None) -> ServerProcess:
        server = start_server(
            tmp_path_factory.mktemp("serve"), backend_url, workers=workers, extra_args=list(extra_args), env=env
        )
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def server(server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    """The module's server: 2 workers, buffered transport, bitVectors and histograms not returned."""
    return server_factory()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[ThriftHiveMetastore.Client]:
    """A connected client of the module's server."""
    with server.client() as c:
        yield c


@pytest.fixture
def new_client(server: ServerProcess) -> Iterator[Callable[[], ThriftHiveMetastore.Client]]:
    """Open more clients of the module's server (closed after the test)."""
    opened: list[ThriftHiveMetastore.Client] = []

    def make() -> ThriftHiveMetastore.Client:
        c = connect(server.port)
        opened.append(c)
        return c

    yield make
    for c in opened:
        c._iprot.trans.close()


@pytest.fixture
def dbname() -> str:
    """A database name no other test uses."""
    return f"db_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
