"""metastore_put_table_stats: a table's column statistics written in one round trip, if the table is as expected.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

A write of table-level statistics needs the table's columns (to validate the statistics against their types),
its numRows and COLUMN_STATS_ACCURATE parameters, a lock that keeps ALTER/DROP away, and an upsert. The server
validates against what it last saw of the table and then calls this function once, in autocommit. The function
locks the table row (FOR KEY SHARE, as the general path does), then, in statements that see everything
committed before the lock was granted, checks that the table still has that id, those columns with those types,
and those two parameter values; only then does it upsert the rows. It returns false, writing nothing, when
anything differs: the server then takes its general path, which reads the table afresh.

The rows come as one JSON array of objects keyed by column name (bytea as \\x-hex strings, floats as strings so
that infinities pass): PostgreSQL reads one such parameter much faster than one array parameter per column.
PostgreSQL only; a later migration that adds a statistics column must replace the function
(tests/server/test_known_table_writes.py checks that it writes every column the server writes).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The written columns of TAB_COL_STATS as of this revision.
_COLUMNS = (
    "COLUMN_NAME",
    "COLUMN_TYPE",
    "LONG_LOW_VALUE",
    "LONG_HIGH_VALUE",
    "DOUBLE_LOW_VALUE",
    "DOUBLE_HIGH_VALUE",
    "BIG_DECIMAL_LOW_VALUE",
    "BIG_DECIMAL_HIGH_VALUE",
    "NUM_NULLS",
    "NUM_DISTINCTS",
    "BIT_VECTOR",
    "AVG_COL_LEN",
    "MAX_COL_LEN",
    "NUM_TRUES",
    "NUM_FALSES",
    "LAST_ANALYZED",
    "ENGINE",
    "HISTOGRAM",
    "STATS_THRIFT",
)
_KEY = ("TBL_ID", "COLUMN_NAME", "ENGINE")

_ARGUMENTS = (
    ("p_catalog", "text"), ("p_db", "text"), ("p_tbl", "text"), ("p_tbl_id", "bigint"), ("p_columns", "text[]"),
    ("p_types", "text[]"), ("p_num_rows", "text"), ("p_accurate", "text"), ("p_synchronous", "boolean"),
    ("p_rows", "json"),
)
_SIGNATURE = ", ".join(f"{name} {type_}" for name, type_ in _ARGUMENTS)
_TYPES = ", ".join(type_ for _, type_ in _ARGUMENTS)


def _param(key: str) -> str:
    return (
        f'(SELECT p."PARAM_VALUE" FROM "TABLE_PARAMS" p WHERE p."TBL_ID" = locked_id AND p."PARAM_KEY" = \'{key}\')'
    )


_INSERT_COLUMNS = ", ".join(f'"{name}"' for name in _COLUMNS)
_SELECTED = ", ".join(f'r."{name}"' for name in _COLUMNS)
_UPDATES = ", ".join(f'"{name}" = excluded."{name}"' for name in _COLUMNS if name not in _KEY)

_FUNCTION = f"""CREATE FUNCTION metastore_put_table_stats({_SIGNATURE}) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    locked_id bigint;
BEGIN
    IF NOT p_synchronous THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    -- Each statement below takes its own snapshot (READ COMMITTED): after waiting for this lock, the checks
    -- see what an ALTER TABLE that held the row committed.
    SELECT t."TBL_ID" INTO locked_id FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID"
    WHERE d."NAME" = p_db AND d."CTLG_NAME" = p_catalog AND t."TBL_NAME" = p_tbl
    FOR KEY SHARE OF t;
    IF locked_id IS DISTINCT FROM p_tbl_id THEN
        RETURN false;
    END IF;
    -- The columns by the primary key (CD_ID, COLUMN_NAME); p_columns holds each name once.
    IF {_param("numRows")} IS DISTINCT FROM p_num_rows
        OR {_param("COLUMN_STATS_ACCURATE")} IS DISTINCT FROM p_accurate
        OR (SELECT count(*) FROM "COLUMNS_V2" c
            WHERE c."CD_ID" = (
                SELECT s."CD_ID" FROM "TBLS" t JOIN "SDS" s ON s."SD_ID" = t."SD_ID" WHERE t."TBL_ID" = locked_id
            )
            AND c."COLUMN_NAME" = ANY(p_columns)
            AND c."TYPE_NAME" = p_types[array_position(p_columns, c."COLUMN_NAME"::text)]
        ) <> cardinality(p_columns)
    THEN
        RETURN false;
    END IF;
    INSERT INTO "TAB_COL_STATS" ("TBL_ID", {_INSERT_COLUMNS})
    SELECT locked_id, {_SELECTED} FROM json_populate_recordset(NULL::"TAB_COL_STATS", p_rows) AS r
    ON CONFLICT ("TBL_ID", "COLUMN_NAME", "ENGINE") DO UPDATE SET {_UPDATES};
    RETURN true;
END $$"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_FUNCTION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP FUNCTION metastore_put_table_stats({_TYPES})")
