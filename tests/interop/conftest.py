"""Fixtures of the interop suite: the reference Hive Metastore 2.3.10 and our own server, each yielding (host, port).

Both are session-scoped (one JVM per run). Nothing here skips for a missing prerequisite: no Java, no pyspark
jars, no JDBC driver or a `metastore` command that does not start are test failures with the reason spelled out.

METASTORE_TEST_REFERENCE_DB=postgresql runs the reference on a fresh PostgreSQL database instead of Derby.
METASTORE_TEST_OUR_SERVER=reference points every `our_server` test at the reference instead (to see which of our
expectations the reference breaks); =host:port at a server started by hand. Unset, our server is started here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from interop.our_server import OurServer, OurServerUnavailable, start_our_server
from interop.postgres_db import DEFAULT_ADMIN_URL, create_scratch_database, drop_scratch_database
from interop.reference_hms import PostgresTarget, ReferenceHms, ReferenceHmsUnavailable, start_reference_hms

Address = tuple[str, int]


@pytest.fixture(scope="session")
def reference_hms_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceHms]:
    """The reference HMS 2.3.10 process (Derby in a tmp dir unless METASTORE_TEST_REFERENCE_DB=postgresql)."""
    backend = os.environ.get("METASTORE_TEST_REFERENCE_DB", "derby").lower()
    if backend not in ("derby", "postgresql"):
        pytest.fail(f"METASTORE_TEST_REFERENCE_DB={backend!r}: use derby or postgresql", pytrace=False)
    workdir = tmp_path_factory.mktemp("reference-hms")
    scratch = None
    target = None
    if backend == "postgresql":
        try:
            scratch = create_scratch_database(
                os.environ.get("METASTORE_TEST_PG_ADMIN", DEFAULT_ADMIN_URL), "hmsref"
            )
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        target = PostgresTarget(scratch.host, scratch.port, scratch.name, scratch.user, scratch.password)
    try:
        server = start_reference_hms(workdir, postgres=target)
    except ReferenceHmsUnavailable as exc:
        if scratch:
            drop_scratch_database(scratch)
        pytest.fail(f"reference Hive Metastore {backend}: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()
        if scratch:
            drop_scratch_database(scratch)


@pytest.fixture(scope="session")
def reference_hms(reference_hms_server: ReferenceHms) -> Address:
    """(host, port) of the reference Hive Metastore 2.3.10."""
    return reference_hms_server.address


def _start_ours(tmp_path_factory: pytest.TempPathFactory, db_url: str, label: str) -> OurServer:
    try:
        return start_our_server(tmp_path_factory.mktemp(f"our-server-{label}"), db_url)
    except OurServerUnavailable as exc:
        pytest.fail(f"our server ({label}) did not start: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def our_server_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OurServer]:
    """`metastore serve` on a fresh SQLite file."""
    db = tmp_path_factory.mktemp("our-sqlite") / "metastore.db"
    server = _start_ours(tmp_path_factory, f"sqlite:///{db}", "sqlite")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def our_server_pg(tmp_path_factory: pytest.TempPathFactory, pg_server: str) -> Iterator[OurServer]:
    """`metastore serve` on a fresh PostgreSQL database (needs METASTORE_TEST_PG, like every pg test)."""
    scratch = create_scratch_database(pg_server, "msinterop")
    try:
        server = _start_ours(tmp_path_factory, scratch.url, "postgresql")
    except BaseException:
        drop_scratch_database(scratch)
        raise
    try:
        yield server
    finally:
        server.stop()
        drop_scratch_database(scratch)


def _override(request: pytest.FixtureRequest) -> Address | None:
    target = os.environ.get("METASTORE_TEST_OUR_SERVER")
    if not target:
        return None
    if target == "reference":
        return request.getfixturevalue("reference_hms")
    host, _, port = target.rpartition(":")
    return (host or "127.0.0.1", int(port))


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)])
def our_server(request: pytest.FixtureRequest) -> Address:
    """(host, port) of our server, once on SQLite and once on PostgreSQL."""
    override = _override(request)
    if override is not None:
        return override
    server: OurServer = request.getfixturevalue(
        f"our_server_{'pg' if request.param == 'postgresql' else 'sqlite'}"
    )
    return server.address


@pytest.fixture(scope="session")
def our_server_on_sqlite(request: pytest.FixtureRequest) -> Address:
    """(host, port) of our server on SQLite only, for the expensive tests that run once (Spark)."""
    override = _override(request)
    if override is not None:
        return override
    return request.getfixturevalue("our_server_sqlite").address
