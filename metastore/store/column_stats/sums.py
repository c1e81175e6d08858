"""Partition statistics summed up by the database (Hive's direct-SQL get_aggr_stats_for): one row per column
whatever the number of partitions, where the aggregation rules reduce to sums, minima and maxima."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from metastore.stats.model import ColumnStatsEntry
from metastore.store.chunking import chunks
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


def _least(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _greatest(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


def _total(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else a + b


def _keep(a: Any, b: Any) -> Any:
    return a


# How one batch's value of each summed field combines with the others': what the statement's aggregate does
# over the union of the batches' rows (SQL's min, max and sum ignore NULLs).
_COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "COLUMN_NAME": _keep, "COLUMN_TYPE": _keep,
    "LONG_LOW_VALUE": _least, "LONG_HIGH_VALUE": _greatest, "DOUBLE_LOW_VALUE": _least, "DOUBLE_HIGH_VALUE": _greatest,
    "BIG_DECIMAL_LOW_VALUE": _keep, "BIG_DECIMAL_HIGH_VALUE": _keep,
    "NUM_NULLS": _total, "NUM_DISTINCTS": _greatest, "AVG_COL_LEN": _greatest, "MAX_COL_LEN": _greatest,
    "NUM_TRUES": _total, "NUM_FALSES": _total, "PARTITIONS": _total, "BIT_VECTORS": _total, "HISTOGRAMS": _total,
}


def summed(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
    *,
    batch: int,
) -> tuple[dict[str, list[ColumnSums]], int]:
    """({column: its sums per stored type}, partitions having every column) over the named partitions, `batch`
    names per statement: the sums of each batch are combined as the statement combines rows, so the answer is
    the one statement's over all names, with memory and statement size bounded whatever their number."""
    parts = list(dict.fromkeys(partition_names))
    cols = lower_unique(columns)
    if not parts or not cols:
        return {}, 0
    stmts = statements(conn)
    stmt, names = stmts.get(("column_sums",), lambda: _sum_statement(stmts.dialect))
    combine = [_COMBINE[n] for n in names]
    totals: dict[tuple[str, str], list[Any]] = {}
    found = 0
    for names_batch in chunks(parts, batch):
        params = partition_params(stmts.dialect, catalog, db_name, table_name, engine, list(names_batch), cols)
        rows = conn.execute(stmt, params).all()
        per_column: dict[str, int] = {}
        for row in rows:
            key = (row[0], row[1])
            total = totals.get(key)
            totals[key] = list(row) if total is None else [f(a, b) for f, a, b in zip(combine, total, row, strict=True)]
            per_column[row[0]] = per_column.get(row[0], 0) + int(row[-3])
        if len(per_column) < len(cols):
            continue  # some column has statistics in no partition of this batch
        if all(n == len(names_batch) for n in per_column.values()):
            found += len(names_batch)
        else:
            found += partitions_with_every_column(conn, catalog, db_name, table_name, names_batch, cols, engine)
    decode = reader(names)
    by_column: dict[str, list[ColumnSums]] = {}
    for total in totals.values():
        cs = ColumnSums(decode(total), int(total[-3]), int(total[-2]), int(total[-1]))
        by_column.setdefault(cs.sums.column, []).append(cs)
    return by_column, found
