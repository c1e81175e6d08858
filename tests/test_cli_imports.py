"""The thin commands import only what they use (issue 12: `metastore --help`, `metastore sql --connect ...` and
`metastore orc meta f.orc` start at once). Each runs in a fresh interpreter that records sys.modules at exit."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from server.harness import ServerProcess, start_server

DATA = Path(__file__).resolve().parent / "data" / "orc"

# Runs `metastore ARGS...` as the console script does and writes the names of the modules loaded by then.
_RUNNER = """
import atexit, json, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
from metastore.cli import main
sys.exit(main(sys.argv[2:]))
"""

# Never needed by a command that neither serves nor opens a database.
SERVER_SIDE = ("sqlalchemy", "alembic", "psycopg2", "metastore.store", "metastore.service", "metastore.server")
# Heavy libraries the thin commands do not use.
HEAVY = ("pyarrow", "pyspark", "datasketches", "pandas", "fsspec", "s3fs", "botocore", "aiobotocore", "boto3")


def loaded_modules(tmp_path: Path, *args: str) -> set[str]:
    """The modules loaded by `metastore ARGS...` (which must succeed)."""
    return run_recording(tmp_path, *args)[0]


def run_recording(tmp_path: Path, *args: str) -> tuple[set[str], str]:
    """The modules loaded by `metastore ARGS...` (which must succeed), and its output (stdout, stderr)."""
    record = tmp_path / "modules.json"
    result = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(record), *args], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(record.read_text())), result.stdout + result.stderr


def present(modules: set[str], forbidden: tuple[str, ...]) -> list[str]:
    """The forbidden packages (or any of their submodules) that were loaded."""
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("thin-server")
    process = start_server(workdir, f"sqlite:///{workdir / 'ms.db'}", workers=1)
    try:
        yield process
    finally:
        process.stop()


def test_help_loads_no_subcommand(tmp_path: Path) -> None:
    modules = loaded_modules(tmp_path, "--help")
    forbidden = (*SERVER_SIDE, *HEAVY, "numpy", "thrift", "google.protobuf", "prompt_toolkit", "platformdirs",
                 "metastore.sql", "metastore.orcio", "metastore.stats", "metastore.client", "metastore.config")
    assert present(modules, forbidden) == []


@pytest.mark.parametrize("command", ["db", "sql", "orc", "serve"])
def test_a_subcommands_help_loads_no_other_subcommand(tmp_path: Path, command: str) -> None:
    modules = loaded_modules(tmp_path, command, "--help")
    others = {"db": "metastore.store.cli", "sql": "metastore.sql", "orc": "metastore.orc_tools"}
    assert present(modules, tuple(m for name, m in others.items() if name != command)) == []
    if command != "db":  # `db` lives in the store package, which loads the store
        assert present(modules, (*SERVER_SIDE, *HEAVY, "numpy")) == []


def test_sql_connect_loads_no_store_service_server_or_sqlalchemy(tmp_path: Path, server: ServerProcess) -> None:
    modules = loaded_modules(
        tmp_path, "sql", "--connect", f"thrift://127.0.0.1:{server.port}", "-e", "SHOW DATABASES; SHOW TABLES;"
    )
    assert "metastore.client.remote" in modules  # the command did run against the server
    forbidden = (*SERVER_SIDE, *HEAVY, "numpy", "prompt_toolkit", "metastore.orcio", "metastore.client.embedded",
                 "metastore.sql.loading", "metastore.sql.analyze", "metastore.stats.harvest", "platformdirs")
    assert present(modules, forbidden) == []


def test_orc_meta_loads_no_statistics_store_or_thrift(tmp_path: Path) -> None:
    modules = loaded_modules(tmp_path, "orc", "meta", str(DATA / "TestOrcFile.test1.orc"))
    assert "metastore.orcio._describe" in modules
    forbidden = (*SERVER_SIDE, *HEAVY, "metastore.stats", "metastore.sql", "metastore.client", "thrift",
                 "metastore.api", "prompt_toolkit")
    assert present(modules, forbidden) == []


def test_analyze_with_nothing_changed_loads_no_harvest(tmp_path: Path, server: ServerProcess) -> None:
    """Re-ANALYZE of a table where nothing changed lists files and checks fingerprints only: none of the harvest,
    numpy, the ORC reader, worker pools or the local cache is loaded."""
    uri = f"thrift://127.0.0.1:{server.port}"
    analyze = "ANALYZE TABLE guard.t PARTITION (ds) COMPUTE STATISTICS FOR ALL COLUMNS;"
    run_recording(tmp_path, "sql", "--connect", uri, "-e",
                  f"CREATE DATABASE guard LOCATION '{tmp_path / 'guard.db'}'; "
                  "CREATE TABLE guard.t (a int, s string) PARTITIONED BY (ds string) STORED AS ORC; "
                  "INSERT INTO guard.t PARTITION (ds='1') VALUES (1, 'x'), (2, 'y'); "
                  f"INSERT INTO guard.t PARTITION (ds='2') VALUES (3, NULL); {analyze}")
    modules, output = run_recording(tmp_path, "sql", "--connect", uri, "-e", analyze)
    assert "2 partition(s) unchanged since the last ANALYZE" in output
    assert "metastore.sql.fingerprints" in modules
    forbidden = (*SERVER_SIDE, *HEAVY, "numpy", "metastore.orcio", "metastore.stats.harvest", "metastore.stats.hll",
                 "metastore.stats.filecache", "sqlite3", "platformdirs", "multiprocessing", "concurrent.futures.process",
                 "google.protobuf", "prompt_toolkit", "tqdm")
    assert present(modules, forbidden) == []


def test_sql_on_an_embedded_database_loads_no_thrift_client_postgresql_or_alembic(tmp_path: Path) -> None:
    """`metastore sql --db sqlite:///...` opens the store in process: it needs SQLAlchemy's SQLite dialect, not the
    Thrift client (its service module and ssl), PostgreSQL's dialect or Alembic once the schema is current (the
    check reads the migration scripts' revision lines) — together ~0.05 s of every such command's start-up."""
    db = f"sqlite:///{tmp_path / 'ms.db'}"
    assert "alembic" in loaded_modules(tmp_path, "sql", "--db", db, "-e", "SHOW DATABASES;")  # creates the schema
    loaded = loaded_modules(tmp_path, "sql", "--db", db, "-e", "SHOW DATABASES;")
    assert "metastore.store" in loaded  # it did open the database
    assert present(loaded, ("metastore.client.remote", "sqlalchemy.dialects.postgresql", "alembic")) == []
