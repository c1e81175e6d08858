"""metastore_put_partition_stats: one partition's column statistics written in one round trip, if as expected.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27

The partition-level counterpart of metastore_put_table_stats (0004). The general write of one partition's
statistics is seven round trips on PostgreSQL (BEGIN, the table's lock, the table, the partition's lock, its
COLUMN_STATS_ACCURATE, the upsert, COMMIT). The server validates against what it last saw of the table and of
the partition (its id under its name and its COLUMN_STATS_ACCURATE as the last write left it) and calls this
function once, in autocommit. The function locks the table row (FOR KEY SHARE, as the general path does), checks
in later statements (which see what an ALTER that held the lock committed) that the table still has that id and
those columns with those types, locks the partition row (FOR UPDATE, as the general path does), checks that the
partition still has that id under that name and that COLUMN_STATS_ACCURATE value, and only then upserts the rows
in the order given (the caller sorts them: row locks in one order). It returns false, writing nothing, when
anything differs: the server then takes its general path, which reads the table and the partition afresh. The
write never changes COLUMN_STATS_ACCURATE (the caller uses the general path when a column must be added to it),
so the partition's parameters and listing version stay as they are; its statistics version is renewed by 0003's
triggers as for any write.

PostgreSQL only; a later migration that adds a statistics column must replace the function
(tests/server/test_known_partition_writes.py checks that it writes every column the server writes).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The written columns of PART_COL_STATS as of this revision.
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
_KEY = ("PART_ID", "COLUMN_NAME", "ENGINE")

_ARGUMENTS = (
    ("p_catalog", "text"), ("p_db", "text"), ("p_tbl", "text"), ("p_tbl_id", "bigint"), ("p_columns", "text[]"),
    ("p_types", "text[]"), ("p_part_name", "text"), ("p_part_id", "bigint"), ("p_accurate", "text"),
    ("p_synchronous", "boolean"), ("p_rows", "json"),
)
_SIGNATURE = ", ".join(f"{name} {type_}" for name, type_ in _ARGUMENTS)
_TYPES = ", ".join(type_ for _, type_ in _ARGUMENTS)

_INSERT_COLUMNS = ", ".join(f'"{name}"' for name in _COLUMNS)
_SELECTED = ", ".join(f'r."{name}"' for name in _COLUMNS)
_UPDATES = ", ".join(f'"{name}" = excluded."{name}"' for name in _COLUMNS if name not in _KEY)

_FUNCTION = f"""CREATE FUNCTION metastore_put_partition_stats({_SIGNATURE}) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    locked_id bigint;
    locked_part bigint;
BEGIN
    IF NOT p_synchronous THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    -- Each statement below takes its own snapshot (READ COMMITTED): after waiting for a lock, the checks see
    -- what the transaction that held it committed.
    SELECT t."TBL_ID" INTO locked_id FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID"
    WHERE d."NAME" = p_db AND d."CTLG_NAME" = p_catalog AND t."TBL_NAME" = p_tbl
    FOR KEY SHARE OF t;
    IF locked_id IS DISTINCT FROM p_tbl_id THEN
        RETURN false;
    END IF;
    -- The columns by the primary key (CD_ID, COLUMN_NAME); p_columns holds each name once.
    IF (SELECT count(*) FROM "COLUMNS_V2" c
        WHERE c."CD_ID" = (
            SELECT s."CD_ID" FROM "TBLS" t JOIN "SDS" s ON s."SD_ID" = t."SD_ID" WHERE t."TBL_ID" = locked_id
        )
        AND c."COLUMN_NAME" = ANY(p_columns)
        AND c."TYPE_NAME" = p_types[array_position(p_columns, c."COLUMN_NAME"::text)]
    ) <> cardinality(p_columns)
    THEN
        RETURN false;
    END IF;
    SELECT p."PART_ID" INTO locked_part FROM "PARTITIONS" p
    WHERE p."TBL_ID" = locked_id AND p."PART_NAME" = p_part_name
    FOR UPDATE OF p;
    IF locked_part IS DISTINCT FROM p_part_id
        OR (SELECT pp."PARAM_VALUE" FROM "PARTITION_PARAMS" pp
            WHERE pp."PART_ID" = locked_part AND pp."PARAM_KEY" = 'COLUMN_STATS_ACCURATE') IS DISTINCT FROM p_accurate
    THEN
        RETURN false;
    END IF;
    INSERT INTO "PART_COL_STATS" ("PART_ID", {_INSERT_COLUMNS})
    SELECT locked_part, {_SELECTED}
    FROM json_populate_recordset(NULL::"PART_COL_STATS", p_rows) WITH ORDINALITY AS r
    ORDER BY r.ordinality
    ON CONFLICT ("PART_ID", "COLUMN_NAME", "ENGINE") DO UPDATE SET {_UPDATES};
    RETURN true;
END $$"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_FUNCTION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP FUNCTION metastore_put_partition_stats({_TYPES})")
