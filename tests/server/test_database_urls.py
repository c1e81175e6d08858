"""`postgresql://` as users write it works end to end on the installed SQLAlchemy (whose default driver for it
is psycopg 3 since 2.1, while the project ships psycopg2), and an explicit `postgresql+psycopg2://` still does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from server.harness import fresh_pg_database, metastore_exe, start_server

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=180, cwd=cwd)


@pytest.mark.parametrize("driver", ["postgresql", "postgresql+psycopg2"])
def test_db_upgrade_current_serve_and_sql_on_a_postgresql_url(tmp_path: Path, pg_server: str, driver: str) -> None:
    with fresh_pg_database(pg_server) as created:
        url = sa.engine.make_url(created).set(drivername=driver).render_as_string(hide_password=False)
        assert url.startswith(f"{driver}://")

        upgraded = _run(metastore_exe(), "db", "upgrade", "--db", url)
        assert upgraded.returncode == 0, upgraded.stderr
        assert "(head)" in upgraded.stdout
        current = _run(metastore_exe(), "db", "current", "--db", url)
        assert current.returncode == 0, current.stdout + current.stderr

        server = start_server(tmp_path, url, workers=1)
        try:
            with server.client() as client:
                assert client.get_all_databases() == ["default"]
        finally:
            assert server.stop() == 0

        shell = _run(metastore_exe(), "sql", "--db", url, "--output", "csv", "-e",
                     "CREATE DATABASE d1; SHOW DATABASES;")
        assert shell.returncode == 0, shell.stderr
        assert shell.stdout.split() == ["database_name", "d1", "default"]


def test_alembic_command_line_on_a_plain_postgresql_url(pg_server: str) -> None:
    alembic = Path(sys.executable).with_name("alembic")
    with fresh_pg_database(pg_server) as created:
        url = sa.engine.make_url(created).set(drivername="postgresql").render_as_string(hide_password=False)
        upgraded = _run(str(alembic), "-x", f"db={url}", "upgrade", "head", cwd=REPO)
        assert upgraded.returncode == 0, upgraded.stderr
        shown = _run(str(alembic), "-x", f"db={url}", "current", cwd=REPO)
        assert shown.returncode == 0, shown.stderr
        assert "(head)" in shown.stdout
