"""Reads of stored statistics by table, partition and column names: one statement each, whatever the
number of names."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from metastore.stats.model import ColumnStatsEntry
from metastore.store.chunking import bind_list, in_list
from metastore.store.column_stats.lookup import TABLE_NAME_PARAMS
from metastore.store.column_stats.rows import row_reader
from metastore.store.column_stats.statements import (
    TABLE_STATS_ROWS,
    lower_unique,
    named_partition_stats,
    partition_params,
    statements,
    table_names,
    value_columns,
)
from metastore.store.prepared import execute_prepared

# Parameters of the prepared reads of one table's statistics, in order, with their PostgreSQL types.
TABLE_STATS_PARAMS = (*TABLE_NAME_PARAMS, ("engine", "text"), ("columns", "text[]"))


@dataclass(frozen=True)
class _Read:
    stmt: sa.TextClause
    columns: tuple[str, ...]


def _read_statement(conn: sa.Connection, level: str, bit_vectors: bool, histograms: bool) -> _Read:
    stmts = statements(conn)

    def build() -> _Read:
        names = value_columns(bit_vectors=bit_vectors, histograms=histograms)
        values = ", ".join(f's."{c}"' for c in names)
        columns_in = in_list('s."COLUMN_NAME"', "columns", stmts.dialect)
        if level == "table":
            sql = f'SELECT {values}, s."LAST_ANALYZED" ' + TABLE_STATS_ROWS + f"AND {columns_in}"
        else:
            sql = f'SELECT pt."PART_NAME", {values}, s."LAST_ANALYZED" ' + named_partition_stats(stmts.dialect)
        columns = (("PART_NAME",) if level == "partition" else ()) + names + ("LAST_ANALYZED",)
        return _Read(sa.text(sql), columns)

    return stmts.get(("read", level, bit_vectors, histograms), build)


_READERS: dict[tuple[str, ...], Callable[[Sequence[Any]], ColumnStatsEntry]] = {}


def reader(columns: tuple[str, ...]) -> Callable[[Sequence[Any]], ColumnStatsEntry]:
    """The row converter of a SELECT list, built once per list."""
    found = _READERS.get(columns)
    if found is None:
        found = _READERS[columns] = row_reader(columns)
    return found


def table_stats_rows(
    conn: sa.Connection, prepared_name: str | None, stmt: sa.TextClause, catalog: str, db_name: str,
    table_name: str, engine: str, columns: list[str],
) -> Sequence[Any]:
    """Rows of a statement over one table's statistics (:db, :catalog, :tbl, :engine, :columns), run as the
    prepared statement `prepared_name` on PostgreSQL when one is given."""
    params = {**table_names(catalog, db_name, table_name), "engine": engine, "columns": bind_list(columns, conn.dialect.name)}
    if prepared_name and conn.dialect.name == "postgresql":
        return execute_prepared(conn, prepared_name, stmt, TABLE_STATS_PARAMS, params)
    return conn.execute(stmt, params).all()


def table_stats(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    columns: Sequence[str],
    engine: str,
    *,
    bit_vectors: bool = False,
    histograms: bool = False,
    prepared: bool = False,
) -> list[tuple[ColumnStatsEntry, int]]:
    """(entry, LAST_ANALYZED) of the table-level statistics of `columns` that exist, in the order asked. An
    empty list also for a missing table: callers that must tell the two apart ask table_target.

    prepared (PostgreSQL, a connection in autocommit) runs it as a server-side prepared statement: the
    lookup is planned once per connection instead of on every call, which is most of its cost."""
    wanted = lower_unique(columns)
    if not wanted:
        return []
    read = _read_statement(conn, "table", bit_vectors, histograms)
    decode = reader(read.columns)
    rows = table_stats_rows(
        conn, f"metastore_table_stats_{int(bit_vectors)}{int(histograms)}" if prepared else None, read.stmt,
        catalog, db_name, table_name, engine, wanted,
    )
    found = {}
    for row in rows:
        entry = decode(row)
        found[entry.column] = (entry, row[-1])
    return [found[c] for c in wanted if c in found]


def partition_stats(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
    *,
    bit_vectors: bool = False,
    histograms: bool = False,
) -> list[tuple[str, ColumnStatsEntry, int]]:
    """(partition name, entry, LAST_ANALYZED) of the statistics of `columns` in the named partitions, in no
    particular order; one statement whatever the number of names."""
    parts = list(dict.fromkeys(partition_names))
    cols = lower_unique(columns)
    if not parts or not cols:
        return []
    read = _read_statement(conn, "partition", bit_vectors, histograms)
    decode = reader(read.columns[1:])
    rows = conn.execute(
        read.stmt, partition_params(conn.dialect.name, catalog, db_name, table_name, engine, parts, cols)
    )
    return [(row[0], decode(row[1:]), row[-1]) for row in rows.all()]


def _count_with_stats_statement(dialect: str) -> sa.TextClause:
    if dialect == "postgresql":
        # The fixed shape of statements.named_partition_stats; LIMIT 1 stops at a partition's first statistic.
        return sa.text(
            'SELECT count(*) FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
            "CROSS JOIN LATERAL json_array_elements_text(CAST(:parts AS json)) AS n(name) "
            'CROSS JOIN LATERAL (SELECT p."PART_ID" FROM "PARTITIONS" p '
            'WHERE p."TBL_ID" = t."TBL_ID" AND p."PART_NAME" = n.name OFFSET 0) pt '
            'CROSS JOIN LATERAL (SELECT 1 FROM "PART_COL_STATS" c WHERE c."PART_ID" = pt."PART_ID" '
            'AND c."ENGINE" = :engine AND c."COLUMN_NAME" = ANY(:columns) LIMIT 1) s '
            'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl'
        )
    return sa.text(
        'SELECT count(*) FROM "PARTITIONS" pt JOIN "TBLS" t ON t."TBL_ID" = pt."TBL_ID" '
        'JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
        'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl AND '
        + in_list('pt."PART_NAME"', "parts", dialect)
        + ' AND EXISTS (SELECT 1 FROM "PART_COL_STATS" s WHERE s."PART_ID" = pt."PART_ID" AND s."ENGINE" = :engine '
        "AND " + in_list('s."COLUMN_NAME"', "columns", dialect) + ")"
    )


def count_partitions_with_stats(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
) -> int:
    """How many of the named partitions have statistics of any of `columns`: the number of entries of their
    PartitionsStatsResult, known before the entries are read (a reply streamed a batch at a time)."""
    parts = list(dict.fromkeys(partition_names))
    cols = lower_unique(columns)
    if not parts or not cols:
        return 0
    stmts = statements(conn)
    stmt = stmts.get(("count_with_stats",), lambda: _count_with_stats_statement(stmts.dialect))
    params = partition_params(stmts.dialect, catalog, db_name, table_name, engine, parts, cols)
    return int(conn.execute(stmt, params).scalar_one())
