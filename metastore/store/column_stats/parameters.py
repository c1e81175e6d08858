"""COLUMN_STATS_ACCURATE of tables and partitions as statistics writers keep it: compare-and-set on the
table's parameter, so writers of different columns need no lock on the table."""

from __future__ import annotations

import sqlalchemy as sa

from metastore.errors import MetastoreError
from metastore.stats.accurate import COLUMN_STATS_ACCURATE, with_columns_accurate
from metastore.store.column_stats.statements import statements
from metastore.store.parameters import PARTITION_PARAMETERS

_PARAMETER_TABLES = {"TABLE_PARAMS": "TBL_ID", "PARTITION_PARAMS": "PART_ID"}


def replace_parameter(
    conn: sa.Connection, table: str, owner_id: int, key: str, expected: str | None, value: str
) -> bool:
    """Set parameter `key` of one table or partition (table "TABLE_PARAMS" or "PARTITION_PARAMS") to `value`
    if it still is `expected` (None: absent); True when it did. A compare-and-set: concurrent writers of the
    same parameter need no lock on its owner, the loser re-reads and tries again."""
    owner = _PARAMETER_TABLES[table]
    stmts = statements(conn)

    def build_update() -> sa.TextClause:
        return sa.text(
            f'UPDATE "{table}" SET "PARAM_VALUE" = :value WHERE "{owner}" = :owner AND "PARAM_KEY" = :key '
            'AND "PARAM_VALUE" = :expected'
        )

    def build_insert() -> sa.TextClause:
        return sa.text(
            f'INSERT INTO "{table}" ("{owner}", "PARAM_KEY", "PARAM_VALUE") VALUES (:owner, :key, :value) '
            f'ON CONFLICT ("{owner}", "PARAM_KEY") DO NOTHING'
        )

    params = {"owner": owner_id, "key": key, "value": value, "expected": expected}
    if expected is None:
        del params["expected"]
        return conn.execute(stmts.get(("param_insert", table), build_insert), params).rowcount == 1
    return conn.execute(stmts.get(("param_update", table), build_update), params).rowcount == 1


def read_parameter(conn: sa.Connection, table: str, owner_id: int, key: str) -> str | None:
    """The current value of one parameter of a table or partition (None when absent)."""
    owner = _PARAMETER_TABLES[table]
    stmts = statements(conn)
    stmt = stmts.get(
        ("param_read", table),
        lambda: sa.text(f'SELECT "PARAM_VALUE" FROM "{table}" WHERE "{owner}" = :owner AND "PARAM_KEY" = :key'),
    )
    return conn.execute(stmt, {"owner": owner_id, "key": key}).scalar()


def mark_table_accurate(conn: sa.Connection, tbl_id: int, current: str | None, columns: list[str]) -> str | None:
    """Add `columns` to the table's COLUMN_STATS_ACCURATE unless they are in it already (the usual case of
    statistics written again), by compare-and-set. Returns the value it leaves."""
    for _ in range(100):
        value = with_columns_accurate(current, columns)
        if value == current:
            return current
        if replace_parameter(conn, "TABLE_PARAMS", tbl_id, COLUMN_STATS_ACCURATE, current, value):
            return value
        current = read_parameter(conn, "TABLE_PARAMS", tbl_id, COLUMN_STATS_ACCURATE)
    raise MetastoreError(
        f"COLUMN_STATS_ACCURATE of TABLE_PARAMS row {tbl_id} keeps changing under concurrent writers; try again"
    )


def set_partitions_accurate(conn: sa.Connection, values: dict[int, str]) -> None:
    """Set COLUMN_STATS_ACCURATE of locked partitions ({PART_ID: value}): no compare-and-set needed."""
    if values:
        PARTITION_PARAMETERS.set_values(conn, COLUMN_STATS_ACCURATE, values)
