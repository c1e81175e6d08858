"""The version of a set of partitions' statistics (PostgreSQL): what the reply cache validates against."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from metastore.store.column_stats.statements import statements, table_names
from metastore.store.prepared import execute_prepared

_VERSION_PARAMS = (("db", "text"), ("catalog", "text"), ("tbl", "text"), ("parts", "json"))
_RANGE_PARAMS = (("db", "text"), ("catalog", "text"), ("tbl", "text"), ("lo", "text"), ("hi", "text"), ("cap", "bigint"))

# (smallest name, largest name, number of partitions from one to the other), names in the database's collation.
Span = tuple[str, str, int]

# Up to this many names, each is looked up in the index; more are hash-joined with the table's partitions.
LOOKUP_NAMES = 1000

_VERSION = (
    'SELECT t."TBL_ID", v.found, v.total FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
    'CROSS JOIN LATERAL (SELECT count(pt."PART_ID") AS found, coalesce(sum(pt."STATS_VERSION"), 0) AS total '
    "FROM {names} {partition}) AS v "
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl'
)
_FEW = "json_array_elements_text(CAST(:parts AS json)) AS n(name)"
_LOOKED_UP = (
    'CROSS JOIN LATERAL (SELECT p."PART_ID", p."STATS_VERSION" FROM "PARTITIONS" p '
    'WHERE p."TBL_ID" = t."TBL_ID" AND p."PART_NAME" = n.name OFFSET 0) pt'
)
_MANY = "unnest(string_to_array(:parts, E'\\n')) AS n(name)"
_JOINED = 'JOIN "PARTITIONS" pt ON pt."TBL_ID" = t."TBL_ID" AND pt."PART_NAME" = n.name'
# The partitions of one range of names, in index order: one range of UNIQUEPARTITION (TBL_ID, PART_NAME). The
# bounds are scalar subqueries, values the planner cannot look at: it estimates a range of unknown bounds (a
# few rows) whatever the names and its statistics say, and reads the index (with the bounds as literals, a
# range over most of a table it believed small was a sequential scan of PARTITIONS). The LIMIT (one more than
# the span held) bounds the read should partitions have been added in between.
_IN_RANGE = (
    '(SELECT p."PART_ID", p."STATS_VERSION" FROM "PARTITIONS" p WHERE p."TBL_ID" = t."TBL_ID" '
    'AND p."PART_NAME" >= (SELECT CAST(:lo AS text)) AND p."PART_NAME" <= (SELECT CAST(:hi AS text)) '
    'ORDER BY p."PART_NAME" LIMIT :cap) pt'
)
_LOOKED_UP_NAMED = (
    'CROSS JOIN LATERAL (SELECT p."PART_NAME" FROM "PARTITIONS" p '
    'WHERE p."TBL_ID" = t."TBL_ID" AND p."PART_NAME" = n.name OFFSET 0) pt'
)
_SPAN = (
    "SELECT s.lo, s.hi, s.found, (SELECT count(*) FROM (SELECT 1 FROM \"PARTITIONS\" r "
    'WHERE r."TBL_ID" = t."TBL_ID" AND r."PART_NAME" >= s.lo AND r."PART_NAME" <= s.hi '
    'ORDER BY r."PART_NAME" LIMIT s.found + 1) x) AS within '
    'FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
    'CROSS JOIN LATERAL (SELECT min(pt."PART_NAME") AS lo, max(pt."PART_NAME") AS hi, count(*) AS found '
    "FROM {names} {partition}) AS s "
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl'
)


def partitions_version(
    conn: sa.Connection, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str], *,
    prepared: bool = False, span: Span | None = None,
) -> tuple[int, int, int] | None:
    """(TBL_ID, number of the named partitions that exist, sum of their STATS_VERSION) on PostgreSQL, where
    triggers renew a partition's STATS_VERSION whenever its statistics or its name change (migration 0003):
    the triple changes whenever the statistics of those names change. None for a missing table or on
    databases without the triggers.

    span (what partitions_span said of these names earlier): the same triple over the partitions from the
    span's first name to its last, at most one more than it held, read as one index range with no names to
    match (200 of 200 names through the repository: 0.07 ms instead of 0.27 to 0.32 ms). While that range still holds just the named
    partitions, it is their version; once it holds other partitions too (or fewer), the count differs and
    the caller's cached reply misses.

    prepared (a connection in autocommit) runs it as a prepared statement, planned once per connection."""
    if conn.dialect.name != "postgresql":
        return None
    if span is not None:
        lo, hi, count = span
        stmt = statements(conn).get(
            ("partitions_version", "range"), lambda: sa.text(_VERSION.format(names="", partition=_IN_RANGE))
        )
        params = {**table_names(catalog, db_name, table_name), "lo": lo, "hi": hi, "cap": count + 1}
        if prepared:
            rows = execute_prepared(conn, "metastore_partitions_version_in_range", stmt, _RANGE_PARAMS, params)
        else:
            rows = conn.execute(stmt, params).all()
        return _triple(rows)
    parts = list(dict.fromkeys(partition_names))
    if any("\x00" in name for name in parts):
        # JSON would carry it, but PostgreSQL text cannot: say so as for any other statement's parameters.
        raise ValueError("a partition name contains a NUL character")
    stmts = statements(conn)
    if len(parts) > LOOKUP_NAMES:
        # Many names: one hash join of the names with the table's partitions. The names go in as one text
        # literal split in the statement (not prepared), so the planner knows how many there are and picks
        # the join for that number, whatever it believes of PARTITIONS. A name holding a newline cannot name
        # a partition (stored names are escaped) and is left out.
        text = "\n".join(n for n in parts if "\n" not in n)
        stmt = stmts.get(("partitions_version", "many"), lambda: sa.text(_VERSION.format(names=_MANY, partition=_JOINED)))
        rows = conn.execute(stmt, {**table_names(catalog, db_name, table_name), "parts": text}).all()
    else:
        # The fixed shape of statements.named_partition_stats: each name looked up in UNIQUEPARTITION. The
        # names travel as one JSON array: psycopg2 quotes a Python list element by element, 5x slower.
        stmt = stmts.get(("partitions_version",), lambda: sa.text(_VERSION.format(names=_FEW, partition=_LOOKED_UP)))
        params = {**table_names(catalog, db_name, table_name), "parts": json.dumps(parts)}
        if prepared:
            rows = execute_prepared(conn, "metastore_partitions_version", stmt, _VERSION_PARAMS, params)
        else:
            rows = conn.execute(stmt, params).all()
    return _triple(rows)


def _triple(rows: Sequence[Any]) -> tuple[int, int, int] | None:
    if not rows:
        return None
    tbl_id, count, total = rows[0]
    return int(tbl_id), int(count), int(total)


def partitions_span(
    conn: sa.Connection, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str]
) -> Span | None:
    """The span of the named partitions when every name is a partition of the table and they are all the
    table's partitions from the smallest name to the largest (in the database's collation, as its index orders
    them): a request for a run of partitions, as planners make. Then partitions_version(span=...) reads their
    version as one index range. None otherwise (some name missing, other partitions in between), for a
    missing table, or off PostgreSQL. Besides the lookup of the names (up to LOOKUP_NAMES, each in the index;
    more, hash-joined as in partitions_version), reads at most one partition more than named."""
    if conn.dialect.name != "postgresql":
        return None
    parts = list(dict.fromkeys(partition_names))
    if not parts or any("\x00" in name for name in parts):
        return None
    stmts = statements(conn)
    if len(parts) > LOOKUP_NAMES:
        if any("\n" in n for n in parts):
            return None  # cannot name a partition (see partitions_version): not every name is one
        stmt = stmts.get(("partitions_span", "many"), lambda: sa.text(_SPAN.format(names=_MANY, partition=_JOINED)))
        params: dict[str, Any] = {**table_names(catalog, db_name, table_name), "parts": "\n".join(parts)}
    else:
        stmt = stmts.get(("partitions_span",), lambda: sa.text(_SPAN.format(names=_FEW, partition=_LOOKED_UP_NAMED)))
        params = {**table_names(catalog, db_name, table_name), "parts": json.dumps(parts)}
    rows = conn.execute(stmt, params).all()
    if not rows:
        return None
    lo, hi, found, within = rows[0]
    if found != len(parts) or within != found:
        return None
    return str(lo), str(hi), int(found)
