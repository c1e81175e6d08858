"""Partition statistics summed up by the database (Hive's direct-SQL get_aggr_stats_for): one row per column
whatever the number of partitions, where the aggregation rules reduce to sums, minima and maxima."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from metastore.stats.model import ColumnStatsEntry
from metastore.store.column_stats.reads import reader
from metastore.store.column_stats.statements import (
    lower_unique,
    named_partition_stats,
    partition_params,
    statements,
)


@dataclass(frozen=True)
class ColumnSums:
    """One column's statistics summed up by the database over the partitions that have them (one stored type)."""

    sums: ColumnStatsEntry  # lows = min, highs = max, nulls/trues/falses = sum, NDV and lengths = max; no
    # sketches; decimal bounds left out (SQLite cannot compare them exactly)
    partitions: int  # partitions with statistics of the column
    bit_vectors: int  # how many of them have a bitVector
    histograms: int  # how many of them have a histogram


def _sum_statement(dialect: str) -> tuple[sa.TextClause, tuple[str, ...]]:
    total = "CAST(sum({}) AS BIGINT)"
    select = {
        "COLUMN_NAME": 's."COLUMN_NAME"',
        "COLUMN_TYPE": 's."COLUMN_TYPE"',
        "LONG_LOW_VALUE": 'min(s."LONG_LOW_VALUE")',
        "LONG_HIGH_VALUE": 'max(s."LONG_HIGH_VALUE")',
        "DOUBLE_LOW_VALUE": 'min(s."DOUBLE_LOW_VALUE")',
        "DOUBLE_HIGH_VALUE": 'max(s."DOUBLE_HIGH_VALUE")',
        "BIG_DECIMAL_LOW_VALUE": "NULL",
        "BIG_DECIMAL_HIGH_VALUE": "NULL",
        "NUM_NULLS": total.format('s."NUM_NULLS"'),
        "NUM_DISTINCTS": 'max(s."NUM_DISTINCTS")',
        "AVG_COL_LEN": 'max(s."AVG_COL_LEN")',
        "MAX_COL_LEN": 'max(s."MAX_COL_LEN")',
        "NUM_TRUES": total.format('s."NUM_TRUES"'),
        "NUM_FALSES": total.format('s."NUM_FALSES"'),
        "PARTITIONS": "count(*)",
        "BIT_VECTORS": 'count(s."BIT_VECTOR")',
        "HISTOGRAMS": 'count(s."HISTOGRAM")',
    }
    sql = (
        "SELECT "
        + ", ".join(f'{expr} AS "{name}"' for name, expr in select.items())
        + " "
        + named_partition_stats(dialect)
        + 'GROUP BY s."COLUMN_NAME", s."COLUMN_TYPE"'
    )
    return sa.text(sql), tuple(select)


def column_sums(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
) -> list[ColumnSums]:
    """Per column (and stored type) of `columns`, its statistics over the named partitions summed up by the
    database, with how many partitions carry sketches: one statement, one row per column."""
    parts = list(dict.fromkeys(partition_names))
    cols = lower_unique(columns)
    if not parts or not cols:
        return []
    stmts = statements(conn)
    stmt, names = stmts.get(("column_sums",), lambda: _sum_statement(stmts.dialect))
    decode = reader(names)
    rows = conn.execute(stmt, partition_params(stmts.dialect, catalog, db_name, table_name, engine, parts, cols))
    return [ColumnSums(decode(row), int(row[-3]), int(row[-2]), int(row[-1])) for row in rows]


def partitions_with_every_column(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
) -> int:
    """How many of the named partitions have statistics of every one of `columns` (Hive's partsFound)."""
    parts = list(dict.fromkeys(partition_names))
    cols = lower_unique(columns)
    if not parts or not cols:
        return 0
    stmts = statements(conn)

    def build() -> sa.TextClause:
        return sa.text(
            'SELECT count(*) FROM (SELECT s."PART_ID" '
            + named_partition_stats(stmts.dialect)
            + 'GROUP BY s."PART_ID" HAVING count(*) = :ncols) found'
        )

    params = partition_params(stmts.dialect, catalog, db_name, table_name, engine, parts, cols)
    return int(conn.execute(stmts.get(("parts_found",), build), {**params, "ncols": len(cols)}).scalar_one())


def parts_found(
    conn: sa.Connection,
    sums: Mapping[str, Sequence[ColumnSums]],
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
) -> int:
    """Partitions (of the distinct `partition_names`) having statistics of every one of the distinct
    lower-case `columns`, given their column_sums by column: usually known from the sums alone, else one
    more statement."""
    if len(sums) < len(columns):
        return 0  # some column has statistics in no partition
    if all(sum(cs.partitions for cs in found) == len(partition_names) for found in sums.values()):
        return len(partition_names)  # every requested partition has every column
    return partitions_with_every_column(conn, catalog, db_name, table_name, partition_names, columns, engine)
