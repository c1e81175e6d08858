"""Writes of statistics rows: INSERT ... ON CONFLICT DO UPDATE on (owner, COLUMN_NAME, ENGINE), and on
PostgreSQL the one-round-trip writes of a table's or a partition's statistics (the metastore_put_table_stats and
metastore_put_partition_stats functions)."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from metastore.catalog import FieldSchema
from metastore.store.chunking import chunks
from metastore.store.column_stats.lookup import PartitionTarget, TableTarget
from metastore.store.column_stats.statements import NAMES_OF, statements
from metastore.store.prepared import execute_prepared
from metastore.store.schema import PART_COL_STATS, STATS_WRITE_COLUMNS, TAB_COL_STATS
from metastore.store.upsert import upsert_statement, upsert_text


def _upsert(conn: sa.Connection, table: sa.Table, owner: str, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    if len(rows) == 1 and conn.dialect.name == "postgresql":
        # The common write of one statistic: a prepared statement, planned once per connection.
        spec, sql = _prepared_upsert(table, owner)
        execute_prepared(conn, f"metastore_upsert_{table.name.lower()}", sql, spec, rows[0], in_transaction=True)
        return
    stmts = statements(conn)
    keys = (owner, *NAMES_OF)
    ordered = sorted(rows, key=lambda r: (r[owner], r["COLUMN_NAME"], r["ENGINE"]))
    if stmts.dialect == "postgresql":
        # Many rows (set_aggr_stats_for of a thousand partitions is 30,000): as one JSON parameter per batch.
        # An executemany is one round trip per row (psycopg2), 0.7 ms each here; a multi-row VALUES needs a
        # bound parameter per value and its compilation.
        stmt = stmts.get(("upsert_json", table.name), lambda: sa.text(_json_upsert(table, owner)))
        for batch in chunks(ordered, JSON_UPSERT_ROWS):
            conn.execute(stmt, {"rows": rows_json(batch, owner)})
        return
    stmt = stmts.get(
        ("upsert", table.name),
        lambda: upsert_statement(stmts.dialect, table, keys, [c for c in STATS_WRITE_COLUMNS if c not in keys]),
    )
    conn.execute(stmt, ordered)


# Rows per JSON upsert statement: bounds the JSON text one statement carries (a few MB).
JSON_UPSERT_ROWS = 5000


@functools.cache
def _json_upsert(table: sa.Table, owner: str) -> str:
    """INSERT ... SELECT FROM json_populate_recordset(:rows) ON CONFLICT DO UPDATE: many statistics rows in one
    statement, in the order given (so concurrent writers take row locks in one order)."""
    columns = (owner, *STATS_WRITE_COLUMNS)
    quoted = ", ".join(f'"{c}"' for c in columns)
    selected = ", ".join(f'r."{c}"' for c in columns)
    return (
        f'INSERT INTO "{table.name}" ({quoted}) SELECT {selected} '
        f'FROM json_populate_recordset(NULL::"{table.name}", CAST(:rows AS json)) WITH ORDINALITY AS r '
        "ORDER BY r.ordinality "
        "ON CONFLICT (" + ", ".join(f'"{c}"' for c in (owner, *NAMES_OF)) + ") DO UPDATE SET "
        + ", ".join(f'"{c}" = excluded."{c}"' for c in STATS_WRITE_COLUMNS if c not in NAMES_OF)
    )


_PG_TYPES = {sa.BigInteger: "bigint", sa.Double: "float8", sa.String: "text", sa.LargeBinary: "bytea"}


def _pg_type(column: sa.Column[Any]) -> str:
    for cls, name in _PG_TYPES.items():
        if isinstance(column.type, cls):
            return name
    raise TypeError(f"no PostgreSQL parameter type for {column.name} ({column.type})")  # pragma: no cover


@functools.cache
def _prepared_upsert(table: sa.Table, owner: str) -> tuple[tuple[tuple[str, str], ...], str]:
    """(parameters with their types, SQL) of INSERT ... ON CONFLICT DO UPDATE of one statistics row."""
    columns = (owner, *STATS_WRITE_COLUMNS)
    spec = tuple((c, _pg_type(table.c[c])) for c in columns)
    return spec, upsert_text(table, (owner, *NAMES_OF), columns)


def upsert_table_rows(conn: sa.Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert or replace TAB_COL_STATS rows (each with TBL_ID and every value column); sorted by key so that
    concurrent writers take row locks in the same order."""
    _upsert(conn, TAB_COL_STATS, "TBL_ID", rows)


def upsert_partition_rows(conn: sa.Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert or replace PART_COL_STATS rows (each with PART_ID and every value column)."""
    _upsert(conn, PART_COL_STATS, "PART_ID", rows)


# The arguments of metastore_put_table_stats (migration 0004) in order, with their types: the table as the caller
# validated against it, then the rows as JSON.
PUT_TABLE_STATS_PARAMS = (
    ("catalog", "text"), ("db", "text"), ("tbl", "text"), ("tbl_id", "bigint"), ("columns", "text[]"),
    ("types", "text[]"), ("num_rows", "text"), ("accurate", "text"), ("synchronous", "boolean"), ("rows", "json"),
)


def _json_value(value: Any) -> Any:
    """A row value as json_populate_recordset reads it into its column: bytea as \\x-hex text, floats as text
    (exact: repr round-trips, and infinities, which JSON numbers cannot carry, pass)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, float):
        return repr(value)
    return value


def rows_json(rows: Sequence[dict[str, Any]], owner: str | None = None) -> str:
    """Statistics rows (STATS_WRITE_COLUMNS, and the `owner` id column when given) as a JSON array of objects,
    as metastore_put_table_stats and json_populate_recordset take them."""
    columns = STATS_WRITE_COLUMNS if owner is None else (owner, *STATS_WRITE_COLUMNS)
    # Absent keys read as NULL.
    return json.dumps(
        [{c: _json_value(r[c]) for c in columns if r[c] is not None} for r in rows], allow_nan=False
    )


def _known_table(catalog: str, target: TableTarget, columns: Sequence[FieldSchema]) -> dict[str, Any]:
    """The arguments both one-round-trip functions check the table with: its names, its id and `columns` with
    their types as the caller validated against them."""
    return {
        "catalog": catalog.strip().lower(),
        "db": target.db_name,
        "tbl": target.table_name,
        "tbl_id": target.tbl_id,
        "columns": [c.name for c in columns],
        "types": [c.type for c in columns],
    }


def _call(conn: sa.Connection, function: str, spec: tuple[tuple[str, str], ...], params: dict[str, Any]) -> bool:
    """SELECT function(params in the order of spec) as a prepared statement of the same name: its boolean answer."""
    stmt = f"SELECT {function}(" + ", ".join(f":{p}" for p, _ in spec) + ")"
    found = execute_prepared(conn, function, stmt, spec, params)
    return bool(found and found[0][0])


def _ordered_json(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as JSON, sorted by key: concurrent writers take their row locks in one order."""
    return rows_json(sorted(rows, key=lambda r: (r["COLUMN_NAME"], r["ENGINE"])))


def put_table_stats(
    conn: sa.Connection,
    catalog: str,
    target: TableTarget,
    columns: Sequence[FieldSchema],
    rows: Sequence[dict[str, Any]],
    *,
    synchronous_commit: bool = True,
) -> bool:
    """Upsert the TAB_COL_STATS `rows` (without TBL_ID) of the table `target` in one round trip, provided the
    table still is as `target` describes it: the same id under its name, `columns` with their types, numRows
    and COLUMN_STATS_ACCURATE. False, with nothing written, when anything differs: the caller then takes the
    general path. PostgreSQL only (the function comes with migration 0004), on a connection in autocommit: the
    call is its own transaction."""
    params: dict[str, Any] = {
        **_known_table(catalog, target, columns),
        "num_rows": target.num_rows,
        "accurate": target.stats_accurate,
        "synchronous": synchronous_commit,
        "rows": _ordered_json(rows),
    }
    return _call(conn, "metastore_put_table_stats", PUT_TABLE_STATS_PARAMS, params)


# The arguments of metastore_put_partition_stats (migration 0010) in order, with their types: the table and the
# partition as the caller validated against them, then the rows as JSON.
PUT_PARTITION_STATS_PARAMS = (
    ("catalog", "text"), ("db", "text"), ("tbl", "text"), ("tbl_id", "bigint"), ("columns", "text[]"),
    ("types", "text[]"), ("part_name", "text"), ("part_id", "bigint"), ("accurate", "text"),
    ("synchronous", "boolean"), ("rows", "json"),
)


def put_partition_stats(
    conn: sa.Connection,
    catalog: str,
    target: TableTarget,
    columns: Sequence[FieldSchema],
    part: PartitionTarget,
    rows: Sequence[dict[str, Any]],
    *,
    synchronous_commit: bool = True,
) -> bool:
    """Upsert the PART_COL_STATS `rows` (without PART_ID) of the partition `part` of the table `target` in one
    round trip, provided both still are as described: the table's id under its name and `columns` with their
    types, the partition's id under its name and its COLUMN_STATS_ACCURATE. False, with nothing written, when
    anything differs: the caller then takes the general path. PostgreSQL only (migration 0010), on a connection
    in autocommit: the call is its own transaction."""
    params: dict[str, Any] = {
        **_known_table(catalog, target, columns),
        "part_name": part.name,
        "part_id": part.part_id,
        "accurate": part.stats_accurate,
        "synchronous": synchronous_commit,
        "rows": _ordered_json(rows),
    }
    return _call(conn, "metastore_put_partition_stats", PUT_PARTITION_STATS_PARAMS, params)
