"""INSERT ... ON CONFLICT DO UPDATE / DO NOTHING for SQLite and PostgreSQL, batched."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from metastore.store.chunking import INSERT_BATCH_ROWS, chunks


def _insert(dialect: str, table: sa.Table) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql  # here: only PostgreSQL needs it (~18 ms of start-up)

        return postgresql.insert(table)
    if dialect == "sqlite":
        from sqlalchemy.dialects import sqlite

        return sqlite.insert(table)
    raise NotImplementedError(f"no upsert for {dialect}")


def upsert_statement(dialect: str, table: sa.Table, key: Sequence[str], update: Sequence[str]) -> Any:
    """INSERT INTO `table` ... ON CONFLICT (`key`) DO UPDATE SET each of `update` (DO NOTHING when empty) to the
    inserted value, without values: executed with rows (executemany) or given them with .values(). Callers may
    cache it per dialect."""
    insert = _insert(dialect, table)
    index = [table.c[k] for k in key]
    if not update:
        return insert.on_conflict_do_nothing(index_elements=index)
    return insert.on_conflict_do_update(index_elements=index, set_={c: insert.excluded[c] for c in update})


def upsert_text(table: sa.Table, key: Sequence[str], columns: Sequence[str]) -> str:
    """The same upsert of one row as SQL text with :name parameters (one per column of `columns`, which holds
    `key`), for a PostgreSQL PREPARE."""
    quoted = ", ".join(f'"{c}"' for c in columns)
    return (
        f'INSERT INTO "{table.name}" ({quoted}) VALUES (' + ", ".join(f":{c}" for c in columns) + ") "
        "ON CONFLICT (" + ", ".join(f'"{c}"' for c in key) + ") DO UPDATE SET "
        + ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c not in key)
    )


def upsert(
    conn: sa.Connection,
    table: sa.Table,
    rows: Sequence[dict[str, Any]],
    *,
    key: Sequence[str],
    update: Sequence[str] | None = None,
) -> None:
    """Insert `rows`; a row whose `key` columns match an existing row updates its `update` columns instead
    (all non-key columns when None). Atomic per row in both databases, so concurrent writers neither lose an
    update nor create a duplicate. Rows must have unique keys (callers deduplicate)."""
    if not rows:
        return
    columns = list(rows[0].keys())
    update_cols = [c for c in columns if c not in key] if update is None else list(update)
    # A stable order makes concurrent multi-row upserts take row locks in the same order (no deadlock).
    ordered = sorted(rows, key=lambda r: tuple(r[k] for k in key))
    if _same_keys(ordered):
        # the statement built once per dialect, table and columns, its rows executed as one executemany: a
        # statement given its rows with .values() has no cache key, so it was built and compiled on every call
        stmt = _cached_upsert(conn.dialect.name, table, tuple(key), tuple(update_cols))
        for batch in chunks(ordered, INSERT_BATCH_ROWS):
            conn.execute(stmt, list(batch))
        return
    stmt = upsert_statement(conn.dialect.name, table, key, update_cols)
    for batch in chunks(ordered, INSERT_BATCH_ROWS):
        conn.execute(stmt.values(list(batch)))


@functools.cache
def _cached_upsert(dialect: str, table: sa.Table, key: tuple[str, ...], update: tuple[str, ...]) -> Any:
    """upsert_statement built once per dialect, table and columns (executed with its rows: executemany)."""
    return upsert_statement(dialect, table, key, update)


@functools.cache
def _cached_insert(table: sa.Table) -> Any:
    """The table's INSERT built once (executed with its rows: executemany)."""
    return sa.insert(table)


def _same_keys(rows: Sequence[dict[str, Any]]) -> bool:
    """Whether every row names the same columns (an executemany binds each row to the first row's columns)."""
    first = rows[0].keys()
    return all(r.keys() == first for r in rows)


def insert_ignoring_duplicates(
    conn: sa.Connection, table: sa.Table, row: dict[str, Any], *, key: Sequence[str]
) -> bool:
    """Insert one row unless one with the same `key` exists; True when this call inserted it."""
    stmt = _insert(conn.dialect.name, table).values(row).on_conflict_do_nothing(index_elements=[table.c[k] for k in key])
    return conn.execute(stmt).rowcount == 1


def insert_rows(conn: sa.Connection, table: sa.Table, rows: Sequence[dict[str, Any]]) -> None:
    """Plain multi-row INSERTs in batches (one statement per batch, not one per row)."""
    if not rows:
        return
    if _same_keys(rows):
        # one statement per table, executemany (cached: see upsert)
        for batch in chunks(rows, INSERT_BATCH_ROWS):
            conn.execute(_cached_insert(table), list(batch))
        return
    for batch in chunks(rows, INSERT_BATCH_ROWS):
        conn.execute(sa.insert(table).values(list(batch)))
