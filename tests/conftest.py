"""Fixtures shared by the whole suite: database URLs (SQLite and PostgreSQL) and one Spark session."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
DATA_DIR = TESTS_DIR / "data"


def pg_admin_url() -> str | None:
    """The PostgreSQL server the suite may use, from METASTORE_TEST_PG (a SQLAlchemy URL or 1/true)."""
    raw = os.environ.get("METASTORE_TEST_PG")
    if not raw:
        return None
    if raw.lower() in ("1", "true", "yes"):
        return "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
    return raw


@pytest.fixture(scope="session")
def pg_server() -> str:
    """Admin URL of the test PostgreSQL; skips with a reason when METASTORE_TEST_PG is unset, fails if down."""
    url = pg_admin_url()
    if url is None:
        pytest.skip("PostgreSQL tests need METASTORE_TEST_PG (e.g. METASTORE_TEST_PG=1 for 127.0.0.1:5432)")
    import sqlalchemy as sa

    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("select 1"))
    except Exception as exc:  # noqa: BLE001 - any failure here means the database is unusable
        pytest.fail(f"METASTORE_TEST_PG is set but PostgreSQL at {url} is unreachable: {exc}", pytrace=False)
    finally:
        engine.dispose()
    return url


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    import sqlalchemy as sa

    name = f"mstest_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(pg_server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(pg_server).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"), {"n": name}
            )
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite database file for one test."""
    return f"sqlite:///{tmp_path / 'metastore.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_url")
    return request.getfixturevalue("pg_url")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):
    """One local-mode Spark session (no Hive catalog) for ORC interop; stopped at the end of the run."""
    pyspark_sql = pytest.importorskip("pyspark.sql", reason="pyspark is a test dependency")
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    # Python workers run this interpreter (the project's virtualenv: metastore.spark's tasks import the package);
    # PySpark reads it from the environment when the context starts
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("metastore-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[object]:
    """A real S3-compatible server (moto_server) on 127.0.0.1 for the whole run."""
    from s3server import start_s3_server

    server = start_s3_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: object, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on the test S3 server, with the environment (AWS_*) pointing boto/s3fs at it."""
    from s3server import S3Server

    assert isinstance(s3_server, S3Server)
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    return s3_server.new_bucket()
