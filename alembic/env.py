"""Alembic environment of the metastore schema.

The database URL comes from `-x db=URL`, else the config's sqlalchemy.url (set by metastore.store.migrate),
else the server's own setting (METASTORE_DB or the embedded SQLite default), so migrations always target the
database the server uses.
"""

from __future__ import annotations

import logging
from logging.config import fileConfig

import sqlalchemy as sa

from alembic import context
from metastore.config import Settings
from metastore.store.engine import create_engine
from metastore.store.schema import metadata
from metastore.store.urls import database_url_text

config = context.config

# Only the alembic command line (cmd_opts set) gets alembic.ini's logging: a server migrating at start
# must keep its own, and a root handler added here would turn its later logging.basicConfig into a no-op.
if config.config_file_name and config.cmd_opts is not None and not logging.getLogger().handlers:
    fileConfig(config.config_file_name, disable_existing_loggers=False)

# Serialises concurrent migrators on PostgreSQL (several servers starting at once); SQLite's BEGIN IMMEDIATE
# does the same there.
_PG_MIGRATION_LOCK = 0x6D657461_73746F72


def _database_url() -> str:
    """The target URL as the server would read it (a plain postgresql:// gets the psycopg2 driver we ship)."""
    url = context.get_x_argument(as_dictionary=True).get("db")
    if not url:
        url = config.get_main_option("sqlalchemy.url")
    if not url:
        url = Settings.from_env().db
    return database_url_text(url)


def run_migrations_offline() -> None:
    """Print the SQL instead of running it (alembic upgrade --sql)."""
    url = _database_url()
    context.configure(
        url=url,
        target_metadata=metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run every pending migration in one transaction, holding the migration lock."""
    engine = create_engine(_database_url())
    try:
        with engine.connect() as conn:
            sqlite = conn.dialect.name == "sqlite"
            if sqlite:
                # Batch migrations rebuild tables; with foreign keys on, dropping the old copy would cascade
                # deletes into child tables. The pragma only takes effect outside a transaction.
                conn.connection.driver_connection.execute("PRAGMA foreign_keys = OFF")
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
                context.configure(
                    connection=conn,
                    target_metadata=metadata,
                    render_as_batch=sqlite,
                    transactional_ddl=True,
                    compare_type=True,
                )
                with context.begin_transaction():
                    context.run_migrations()
                if sqlite:
                    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise RuntimeError(f"migration left rows breaking foreign keys: {broken[:5]}")
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
