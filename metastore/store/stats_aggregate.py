"""Partition statistics summed up by the database: Hive's direct-SQL path of get_aggr_stats_for.

When NDV sketches are not merged (Hive: metastore.stats.fetch.bitvector off, the default), Hive aggregates
partition statistics in SQL: min of lows, max of highs, sum of nulls, max and sum of NDVs, max lengths, sum of
true/false counts, and the average density (high - low) / NDV. Doing it here returns one row per column
instead of one per partition and column, which is what makes the call cheap for hundreds of partitions.
Merging sketches and extrapolating over partitions without statistics need the per-partition rows instead
(ColumnStatsRepository.rows_for_aggregation).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from metastore.stats.model import ColumnStatsEntry, DecimalStats, StatsKind, kind_for_type
from metastore.stats.sql_rows import row_reader, text_to_decimal
from metastore.store.schema import PART_COL_STATS, PARTITIONS


@dataclass(frozen=True)
class ColumnAggregate:
    """One column's statistics over the partitions that have them."""

    merged: ColumnStatsEntry  # low = min, high = max, nulls = sum, NDV = max (a lower bound), lengths = max,
    # true/false counts = sum; no bit vector or histogram
    partitions: int  # how many of the requested partitions have statistics for the column
    ndv_sum: int  # an upper bound of the NDV
    density: float | None  # average of (high - low) / NDV over partitions with NDV > 0 (range kinds only)


@dataclass(frozen=True)
class PartitionsAggregate:
    parts_found: int  # requested partitions having statistics for every requested column
    columns: list[ColumnAggregate]


def in_one_parameter(column: sa.ColumnElement, values: Sequence[str], dialect: str) -> sa.ColumnElement[bool]:
    """`column IN values` with the whole list bound as one parameter (a PostgreSQL array, an SQLite JSON
    array), so an aggregate over any number of values stays one statement without hitting bind limits."""
    if dialect == "postgresql":
        return column == sa.any_(sa.bindparam(None, list(values), type_=postgresql.ARRAY(sa.String)))
    elements = sa.func.json_each(sa.bindparam(None, json.dumps(list(values)))).table_valued("value")
    return column.in_(sa.select(elements.c.value))


def aggregate_partitions(
    conn: sa.Connection,
    table_id: sa.ColumnElement | int,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
) -> PartitionsAggregate:
    """Aggregate the statistics of `columns` (lower-case) over the named partitions of one table; two
    statements (three on SQLite when decimal columns are involved)."""
    if not partition_names or not columns:
        return PartitionsAggregate(parts_found=0, columns=[])
    dialect = conn.dialect.name
    s = PART_COL_STATS
    where = [
        PARTITIONS.c.TBL_ID == table_id,
        in_one_parameter(PARTITIONS.c.PART_NAME, partition_names, dialect),
        in_one_parameter(s.c.COLUMN_NAME, columns, dialect),
        s.c.ENGINE == engine,
    ]
    source = PARTITIONS.join(s, s.c.PART_ID == PARTITIONS.c.PART_ID)

    def as_double(col: sa.ColumnElement) -> sa.ColumnElement:
        return sa.cast(col, sa.Double)

    spread = sa.func.coalesce(
        as_double(s.c.LONG_HIGH_VALUE) - as_double(s.c.LONG_LOW_VALUE),
        s.c.DOUBLE_HIGH_VALUE - s.c.DOUBLE_LOW_VALUE,
        as_double(s.c.BIG_DECIMAL_HIGH_VALUE) - as_double(s.c.BIG_DECIMAL_LOW_VALUE),
    )
    density = sa.case((s.c.NUM_DISTINCTS > 0, spread / as_double(s.c.NUM_DISTINCTS)), else_=sa.null())
    if dialect == "postgresql":
        decimal_low = sa.cast(sa.func.min(sa.cast(s.c.BIG_DECIMAL_LOW_VALUE, sa.Numeric)), sa.String)
        decimal_high = sa.cast(sa.func.max(sa.cast(s.c.BIG_DECIMAL_HIGH_VALUE, sa.Numeric)), sa.String)
    else:  # SQLite has no exact decimal type: done in Python below
        decimal_low = decimal_high = sa.null()

    def total(col: sa.ColumnElement) -> sa.ColumnElement:
        return sa.cast(sa.func.sum(col), sa.BigInteger)

    # Labelled like the statistics columns, so the one row converter in sql_rows builds the merged entry.
    query = (
        sa.select(
            s.c.COLUMN_NAME,
            s.c.COLUMN_TYPE,
            sa.func.min(s.c.LONG_LOW_VALUE).label("LONG_LOW_VALUE"),
            sa.func.max(s.c.LONG_HIGH_VALUE).label("LONG_HIGH_VALUE"),
            sa.func.min(s.c.DOUBLE_LOW_VALUE).label("DOUBLE_LOW_VALUE"),
            sa.func.max(s.c.DOUBLE_HIGH_VALUE).label("DOUBLE_HIGH_VALUE"),
            decimal_low.label("BIG_DECIMAL_LOW_VALUE"),
            decimal_high.label("BIG_DECIMAL_HIGH_VALUE"),
            total(s.c.NUM_NULLS).label("NUM_NULLS"),
            sa.func.max(s.c.NUM_DISTINCTS).label("NUM_DISTINCTS"),
            sa.func.max(s.c.AVG_COL_LEN).label("AVG_COL_LEN"),
            sa.func.max(s.c.MAX_COL_LEN).label("MAX_COL_LEN"),
            total(s.c.NUM_TRUES).label("NUM_TRUES"),
            total(s.c.NUM_FALSES).label("NUM_FALSES"),
            sa.func.count().label("PARTITIONS"),
            total(s.c.NUM_DISTINCTS).label("NDV_SUM"),
            sa.func.avg(density).label("DENSITY"),
        )
        .select_from(source)
        .where(*where)
        .group_by(s.c.COLUMN_NAME, s.c.COLUMN_TYPE)
        .order_by(s.c.COLUMN_NAME, s.c.COLUMN_TYPE)
    )
    result = conn.execute(query)
    names = tuple(result.keys())
    read = row_reader(names)
    at = {n: i for i, n in enumerate(names)}
    aggregates = [
        ColumnAggregate(
            merged=read(row),
            partitions=row[at["PARTITIONS"]],
            ndv_sum=row[at["NDV_SUM"]] or 0,
            density=None if row[at["DENSITY"]] is None else float(row[at["DENSITY"]]),
        )
        for row in result
    ]
    if dialect != "postgresql" and any(
        kind_for_type(a.merged.column_type) is StatsKind.DECIMAL for a in aggregates
    ):
        aggregates = _with_decimal_bounds(conn, source, where, aggregates)

    return PartitionsAggregate(
        parts_found=_parts_found(
            conn, source, where, aggregates, len(set(partition_names)), len(set(columns))
        ),
        columns=aggregates,
    )


def _parts_found(
    conn: sa.Connection,
    source: sa.FromClause,
    where: list,
    aggregates: list[ColumnAggregate],
    parts: int,
    cols: int,
) -> int:
    """How many partitions have statistics for every column; usually known from the aggregates alone."""
    per_column: dict[str, int] = {}
    for agg in aggregates:
        per_column[agg.merged.column] = per_column.get(agg.merged.column, 0) + agg.partitions
    if len(per_column) < cols:
        return 0  # some column has statistics in no partition
    if all(n == parts for n in per_column.values()):
        return parts  # every partition has every column
    per_partition = (
        sa.select(PARTITIONS.c.PART_ID)
        .select_from(source)
        .where(*where)
        .group_by(PARTITIONS.c.PART_ID)
        .having(sa.func.count() == cols)
        .subquery()
    )
    return conn.execute(sa.select(sa.func.count()).select_from(per_partition)).scalar_one()


def _with_decimal_bounds(
    conn: sa.Connection, source: sa.FromClause, where: list, aggregates: list[ColumnAggregate]
) -> list[ColumnAggregate]:
    """Exact decimal min/max computed in Python from the stored texts (SQLite would compare them as text)."""
    s = PART_COL_STATS
    bounds: dict[tuple[str, str], tuple[Decimal | None, Decimal | None]] = {}
    rows = conn.execute(
        sa.select(s.c.COLUMN_NAME, s.c.COLUMN_TYPE, s.c.BIG_DECIMAL_LOW_VALUE, s.c.BIG_DECIMAL_HIGH_VALUE)
        .select_from(source)
        .where(
            *where, sa.or_(s.c.BIG_DECIMAL_LOW_VALUE.is_not(None), s.c.BIG_DECIMAL_HIGH_VALUE.is_not(None))
        )
    )
    for name, type_, low_text, high_text in rows:
        low, high = bounds.get((name, type_), (None, None))
        if low_text is not None:
            value = text_to_decimal(low_text)
            low = value if low is None or value < low else low
        if high_text is not None:
            value = text_to_decimal(high_text)
            high = value if high is None or value > high else high
        bounds[(name, type_)] = (low, high)
    out = []
    for agg in aggregates:
        key = (agg.merged.column, agg.merged.column_type)
        if isinstance(agg.merged.stats, DecimalStats) and key in bounds:
            low, high = bounds[key]
            agg = replace(
                agg, merged=replace(agg.merged, stats=replace(agg.merged.stats, low=low, high=high))
            )
        out.append(agg)
    return out
