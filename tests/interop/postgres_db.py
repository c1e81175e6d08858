"""Fresh, throw-away PostgreSQL databases for servers under test (ours and the reference HMS)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import sqlalchemy as sa

DEFAULT_ADMIN_URL = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"


@dataclass(frozen=True)
class ScratchDatabase:
    """A database created for one server; `url` is its SQLAlchemy URL."""

    admin_url: str
    name: str

    @property
    def url(self) -> str:
        return (
            sa.engine.make_url(self.admin_url).set(database=self.name).render_as_string(hide_password=False)
        )

    @property
    def host(self) -> str:
        return sa.engine.make_url(self.admin_url).host or "127.0.0.1"

    @property
    def port(self) -> int:
        return sa.engine.make_url(self.admin_url).port or 5432

    @property
    def user(self) -> str:
        return sa.engine.make_url(self.admin_url).username or "postgres"

    @property
    def password(self) -> str:
        return sa.engine.make_url(self.admin_url).password or ""


def create_scratch_database(admin_url: str = DEFAULT_ADMIN_URL, prefix: str = "mstest") -> ScratchDatabase:
    """Create an empty database named `<prefix>_<random>`; raises RuntimeError naming the server if unreachable."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:
        raise RuntimeError(f"cannot create a database on PostgreSQL at {admin_url}: {exc}") from exc
    finally:
        engine.dispose()
    return ScratchDatabase(admin_url=admin_url, name=name)


def drop_scratch_database(db: ScratchDatabase) -> None:
    """Drop the database, first ending any session still connected to it."""
    engine = sa.create_engine(db.admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
                {"n": db.name},
            )
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{db.name}"'))
    finally:
        engine.dispose()
