"""Reads of the pre-encoded statistics (the STATS_THRIFT bytes stored with each row): a batched read sends
them as they are instead of rebuilding thousands of objects per call."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from metastore.store.chunking import in_list
from metastore.store.column_stats.reads import table_stats_rows
from metastore.store.column_stats.statements import (
    TABLE_STATS_ROWS,
    lower_unique,
    named_partition_stats,
    partition_params,
    statements,
)

_IS_TIMESTAMP = "lower(s.\"COLUMN_TYPE\") LIKE 'timestamp%'"

# PostgreSQL: the shape of statements.named_partition_stats (each name looked up in UNIQUEPARTITION, each
# partition's statistics one range of PART_COL_STATS_UNIQUE), with each partition's statistics concatenated
# inside its own lateral subquery: rows leave in the order of the names, one per partition, with no sort of
# the whole batch by name before grouping (1,000 partitions × 30 columns: 38-50 ms instead of 72-85 ms, where
# the sort of 30,000 rows spilled to disk). A partition without any of the columns has count 0: left out.
_PG_PARTITION_STATS_ENCODED = (
    'SELECT pt."PART_NAME", s.found, s.encoded, s.has_timestamp, s.data '
    'FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
    "CROSS JOIN LATERAL json_array_elements_text(CAST(:parts AS json)) AS n(name) "
    'CROSS JOIN LATERAL (SELECT p."PART_ID", p."PART_NAME" FROM "PARTITIONS" p '
    'WHERE p."TBL_ID" = t."TBL_ID" AND p."PART_NAME" = n.name OFFSET 0) pt '
    'CROSS JOIN LATERAL (SELECT count(*) AS found, count(s."STATS_THRIFT") AS encoded, '
    f"bool_or({_IS_TIMESTAMP}) AS has_timestamp, "
    'string_agg(s."STATS_THRIFT", \'\'::bytea ORDER BY array_position(:columns, s."COLUMN_NAME")) AS data '
    'FROM "PART_COL_STATS" s WHERE s."PART_ID" = pt."PART_ID" '
    'AND s."COLUMN_NAME" BETWEEN (SELECT min(x) FROM unnest(CAST(:columns AS text[])) x) '
    'AND (SELECT max(x) FROM unnest(CAST(:columns AS text[])) x) AND s."ENGINE" = :engine '
    'AND s."COLUMN_NAME" = ANY(:columns)) s '
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl AND s.found > 0'
)


def table_stats_encoded(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    columns: Sequence[str],
    engine: str,
    *,
    timestamps: bool = True,
    prepared: bool = False,
) -> tuple[int, bytes] | None:
    """(number of statistics, their STATS_THRIFT bytes concatenated in the order of `columns`) of the
    table-level statistics of `columns` that exist: the pre-encoded form of reads.table_stats for a server
    with default settings; (0, b"") also for a missing table. None when the stored bytes cannot serve, as for
    partition_stats_encoded. prepared: as for reads.table_stats."""
    wanted = lower_unique(columns)
    if not wanted:
        return 0, b""
    stmts = statements(conn)
    dialect = stmts.dialect
    stmt = stmts.get(
        ("table_stats_encoded",),
        lambda: sa.text(
            f'SELECT s."COLUMN_NAME", {_IS_TIMESTAMP}, s."STATS_THRIFT" '
            + TABLE_STATS_ROWS
            + "AND "
            + in_list('s."COLUMN_NAME"', "columns", dialect)
        ),
    )
    rows = table_stats_rows(
        conn, "metastore_table_stats_encoded" if prepared else None, stmt, catalog, db_name, table_name, engine,
        wanted,
    )
    found = {}
    for column, is_timestamp, data in rows:
        if data is None or (is_timestamp and not timestamps):
            return None
        found[column] = bytes(data)
    objs = [found[c] for c in wanted if c in found]
    return len(objs), b"".join(objs)


def partition_stats_encoded(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
    *,
    timestamps: bool = True,
) -> list[tuple[str, int, bytes]] | None:
    """[(partition name, number of statistics, their STATS_THRIFT bytes concatenated in the order of
    `columns`)] for the named partitions that have statistics of any of `columns`: the pre-encoded form of
    reads.partition_stats for a server with default settings. On PostgreSQL the database concatenates, so one
    row per partition crosses the wire.

    None when the stored bytes cannot serve the request: a row without them (written by hand) or, with
    timestamps=False (timestamp statistics served as Hive 4's timestampStats, not the stored longStats), a
    timestamp column among those found. Callers then read through reads.partition_stats."""
    parts = list(dict.fromkeys(partition_names))
    cols = lower_unique(columns)
    if not parts or not cols:
        return []
    stmts = statements(conn)
    dialect = stmts.dialect
    params = partition_params(dialect, catalog, db_name, table_name, engine, parts, cols)
    where = named_partition_stats(dialect)
    is_timestamp = _IS_TIMESTAMP
    if dialect == "postgresql":
        stmt = stmts.get(("partition_stats_encoded",), lambda: sa.text(_PG_PARTITION_STATS_ENCODED))
        out = []
        for name, count, encoded, has_timestamp, data in conn.execute(stmt, params):
            if encoded != count or (has_timestamp and not timestamps):
                return None
            out.append((name, count, data))
        return out
    stmt = stmts.get(
        ("partition_stats_encoded",),
        lambda: sa.text(f'SELECT pt."PART_NAME", s."COLUMN_NAME", {is_timestamp}, s."STATS_THRIFT" {where}'),
    )
    order = {c: i for i, c in enumerate(cols)}
    grouped: dict[str, list[tuple[int, bytes]]] = {}
    for name, column, has_timestamp, data in conn.execute(stmt, params):
        if data is None or (has_timestamp and not timestamps):
            return None
        grouped.setdefault(name, []).append((order[column], data))
    return [
        (name, len(found), b"".join(data for _, data in sorted(found, key=lambda f: f[0])))
        for name, found in grouped.items()
    ]
