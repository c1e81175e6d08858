"""The SQL pieces every column-statistics statement shares, and the per-dialect cache of built statements.

Lists of names travel as one parameter (a PostgreSQL array, an SQLite JSON array), so the statements are the
same whatever the list length and the database can reuse their plans.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from metastore.store.chunking import bind_list, in_list
from metastore.store.schema import STATS_VALUE_COLUMNS

# The key of a statistics row besides its owner (TBL_ID or PART_ID).
NAMES_OF = ("COLUMN_NAME", "ENGINE")

TABLE_BY_NAME = (
    'FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl'
)

# The statistics rows (alias s) of one table, by database, catalog, table name and engine; with partitions
# (alias pt) for PART_COL_STATS. Statements append their AND conditions.
TABLE_STATS_ROWS = (
    'FROM "TAB_COL_STATS" s JOIN "TBLS" t ON t."TBL_ID" = s."TBL_ID" JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl AND s."ENGINE" = :engine '
)


def named_partition_stats(dialect: str) -> str:
    """FROM ... WHERE ...: the statistics rows (alias s) of the columns :columns, engine :engine, in the
    partitions (alias pt) named :parts (a JSON array, see partition_params) of the table :db.:tbl in :catalog.
    Statements add their SELECT list and GROUP BY.

    On PostgreSQL the plan is fixed by the statement's shape, whatever the planner's estimates: each name is
    looked up in the unique index (TBL_ID, PART_NAME), and each partition's statistics in the unique index
    (PART_ID, COLUMN_NAME, ENGINE); OFFSET 0 keeps the lateral subqueries from being flattened into joins the
    planner could reorder. Each partition's statistics are one range of that index (between the smallest and
    the largest column asked for, in the database's collation), the columns picked out of it after: with
    `COLUMN_NAME = ANY(...)` in the index condition, PostgreSQL 15 descends the index once per column (30
    columns: 0.15 ms a partition instead of 0.02 ms, measured at 100,000 partitions). A request for 100
    partitions then reads 100 partitions whatever the size of the
    table, and right after thousands of partitions were added (while the planner's statistics still describe
    the table as it was, until autovacuum analyses it) the plan stays the same: with joins, PostgreSQL chose a
    hash join over a sequential scan of PART_COL_STATS then (bench/bench_scale.py, BENCHMARKS.md)."""
    if dialect == "postgresql":
        return (
            'FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
            "CROSS JOIN LATERAL json_array_elements_text(CAST(:parts AS json)) AS n(name) "
            'CROSS JOIN LATERAL (SELECT p."PART_ID", p."PART_NAME" FROM "PARTITIONS" p '
            'WHERE p."TBL_ID" = t."TBL_ID" AND p."PART_NAME" = n.name OFFSET 0) pt '
            'CROSS JOIN LATERAL (SELECT * FROM "PART_COL_STATS" c WHERE c."PART_ID" = pt."PART_ID" '
            'AND c."COLUMN_NAME" BETWEEN (SELECT min(x) FROM unnest(CAST(:columns AS text[])) x) '
            'AND (SELECT max(x) FROM unnest(CAST(:columns AS text[])) x) AND c."ENGINE" = :engine OFFSET 0) s '
            'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl '
            'AND s."COLUMN_NAME" = ANY(:columns) '
        )
    return (
        'FROM "PART_COL_STATS" s JOIN "PARTITIONS" pt ON pt."PART_ID" = s."PART_ID" '
        'JOIN "TBLS" t ON t."TBL_ID" = pt."TBL_ID" JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
        'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl AND s."ENGINE" = :engine '
        + "AND " + in_list('pt."PART_NAME"', "parts", dialect)
        + " AND " + in_list('s."COLUMN_NAME"', "columns", dialect) + " "
    )


def lower_unique(names: Sequence[str]) -> list[str]:
    """Column names as stored (lower case), each once, in the order first given."""
    return list(dict.fromkeys(n.lower() for n in names))


def value_columns(*, bit_vectors: bool, histograms: bool) -> tuple[str, ...]:
    """The statistics value columns a read selects: sketches only when asked for."""
    return tuple(
        c
        for c in STATS_VALUE_COLUMNS
        if (bit_vectors or c != "BIT_VECTOR") and (histograms or c != "HISTOGRAM")
    )


def table_names(catalog: str, db_name: str, table_name: str) -> dict[str, str]:
    """The :db, :catalog and :tbl parameters of a statement naming one table (names compare trimmed, lower case)."""
    return {"db": db_name.strip().lower(), "catalog": catalog.strip().lower(), "tbl": table_name.strip().lower()}


def partition_params(
    dialect: str, catalog: str, db_name: str, table_name: str, engine: str, parts: list[str], cols: list[str]
) -> dict[str, Any]:
    """Parameters of the statements over named partitions and columns of one table."""
    return {
        **table_names(catalog, db_name, table_name),
        "engine": engine,
        # One JSON text on both databases: psycopg2 quotes a Python list element by element, several times
        # slower for thousands of names.
        "parts": json.dumps(parts),
        "columns": bind_list(cols, dialect),
    }


class Statements:
    """The statements of one dialect, built on first use."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self._cache: dict[tuple[object, ...], Any] = {}

    def get(self, key: tuple[object, ...], build: Callable[[], Any]) -> Any:
        """The statement cached under `key`, built by `build` the first time."""
        stmt = self._cache.get(key)
        if stmt is None:
            stmt = self._cache[key] = build()
        return stmt


_STATEMENTS: dict[str, Statements] = {}


def statements(conn: sa.Connection) -> Statements:
    """The statement cache of the connection's dialect."""
    name = conn.dialect.name
    found = _STATEMENTS.get(name)
    if found is None:
        found = _STATEMENTS[name] = Statements(name)
    return found
