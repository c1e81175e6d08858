"""The embedded SQLite database and its -wal/-shm files are readable by their owner only."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from metastore.store import migrate
from metastore.store.engine import create_engine


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """The common 022 umask, under which SQLite alone would create 0644 files."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("permissive_umask")
def test_engine_creates_database_wal_and_shm_private(tmp_path: Path) -> None:
    db = tmp_path / "new" / "dir" / "metastore.db"
    engine = create_engine(f"sqlite:///{db}")
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE t (x INTEGER)"))
            conn.execute(sa.text("INSERT INTO t VALUES (1)"))
        # The connection is still open, so the WAL files exist now.
        files = [db, db.with_name("metastore.db-wal"), db.with_name("metastore.db-shm")]
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT x FROM t")).scalar() == 1
            for f in files:
                assert f.exists(), f
                assert _mode(f) == 0o600, f"{f.name} is {oct(_mode(f))}"
    finally:
        engine.dispose()
    assert _mode(db.parent) == 0o700
    # Only the directory holding the database is private; its parents are made as `mkdir -p` makes them.
    assert _mode(db.parent.parent) == 0o755


@pytest.mark.usefixtures("permissive_umask")
def test_db_upgrade_creates_the_embedded_database_private(tmp_path: Path) -> None:
    db = tmp_path / "data" / "metastore.db"
    migrate.upgrade(f"sqlite:///{db}")
    assert migrate.current_revision(f"sqlite:///{db}") == migrate.head_revision()
    assert _mode(db) == 0o600
    assert _mode(db.parent) == 0o700
    for suffix in ("-wal", "-shm"):
        wal = db.with_name(db.name + suffix)
        if wal.exists():  # removed again when the last connection closed cleanly
            assert _mode(wal) == 0o600


@pytest.mark.usefixtures("permissive_umask")
def test_existing_files_and_directories_keep_their_modes(tmp_path: Path) -> None:
    # A database the user made readable on purpose (or an old one) is not changed behind their back.
    db = tmp_path / "shared.db"
    engine = create_engine(f"sqlite:///{db}")
    engine.dispose()
    db.chmod(0o640)
    engine = create_engine(f"sqlite:///{db}")
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE t (x INTEGER)"))
    finally:
        engine.dispose()
    assert _mode(db) == 0o640


def test_memory_and_uri_databases_create_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url in ("sqlite://", "sqlite:///:memory:"):
        engine = create_engine(url)
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT 1")).scalar() == 1
        engine.dispose()
    assert list(tmp_path.iterdir()) == []
