"""The version of a set of partitions' statistics (PostgreSQL): what the reply cache validates against."""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa

from metastore.store.column_stats.prepared import execute_prepared
from metastore.store.column_stats.statements import statements, table_names

_VERSION_PARAMS = (("db", "text"), ("catalog", "text"), ("tbl", "text"), ("parts", "json"))

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


def partitions_version(
    conn: sa.Connection, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str], *,
    prepared: bool = False,
) -> tuple[int, int, int] | None:
    """(TBL_ID, number of the named partitions that exist, sum of their STATS_VERSION) on PostgreSQL, where
    triggers renew a partition's STATS_VERSION whenever its statistics or its name change (migration 0003):
    the triple changes whenever the statistics of those names change. None for a missing table or on
    databases without the triggers.

    prepared (a connection in autocommit) runs it as a prepared statement, planned once per connection."""
    if conn.dialect.name != "postgresql":
        return None
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
    if not rows:
        return None
    tbl_id, count, total = rows[0]
    return int(tbl_id), int(count), int(total)
