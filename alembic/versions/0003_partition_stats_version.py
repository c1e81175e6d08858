"""PARTITIONS.STATS_VERSION: renewed by PostgreSQL triggers whenever a partition's statistics change.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21

Every partition holds a value from the sequence PART_STATS_VERSION_SEQ; a new value replaces it whenever rows
of its PART_COL_STATS are inserted, updated or deleted (statement-level triggers over the transition tables,
so a batch of thousands of statistics renews each partition once) and whenever the partition is renamed.
Values only grow and are never reused, so (table id, number of partitions found, sum of their versions) over
a list of partition names changes whenever the statistics those names stand for change: the server's reply
cache compares it on every call (metastore.service.stats_cache). Being triggers, they cover every writer,
including statements run by hand. SQLite gets the column only (0): its servers do not cache.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SEQ = '"PART_STATS_VERSION_SEQ"'
_NEXT = f"nextval('{_SEQ}')"

_PG_UP = [
    f"CREATE SEQUENCE {_SEQ}",
    f'ALTER TABLE "PARTITIONS" ALTER COLUMN "STATS_VERSION" SET DEFAULT {_NEXT}',
    f'UPDATE "PARTITIONS" SET "STATS_VERSION" = {_NEXT}',
    f"""CREATE FUNCTION metastore_part_stats_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE "PARTITIONS" p SET "STATS_VERSION" = {_NEXT}
    WHERE p."PART_ID" IN (SELECT c."PART_ID" FROM changed c);
    RETURN NULL;
END $$""",
    *(
        f'CREATE TRIGGER "PART_COL_STATS_{event}" AFTER {event} ON "PART_COL_STATS" '
        f"REFERENCING {'OLD' if event == 'DELETE' else 'NEW'} TABLE AS changed "
        "FOR EACH STATEMENT EXECUTE FUNCTION metastore_part_stats_changed()"
        for event in ("INSERT", "UPDATE", "DELETE")
    ),
    f"""CREATE FUNCTION metastore_partition_renamed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW."STATS_VERSION" := {_NEXT};
    RETURN NEW;
END $$""",
    'CREATE TRIGGER "PARTITIONS_RENAMED" BEFORE UPDATE OF "PART_NAME" ON "PARTITIONS" FOR EACH ROW '
    'WHEN (OLD."PART_NAME" IS DISTINCT FROM NEW."PART_NAME") EXECUTE FUNCTION metastore_partition_renamed()',
]

_PG_DOWN = [
    'DROP TRIGGER "PARTITIONS_RENAMED" ON "PARTITIONS"',
    "DROP FUNCTION metastore_partition_renamed()",
    *(f'DROP TRIGGER "PART_COL_STATS_{event}" ON "PART_COL_STATS"' for event in ("INSERT", "UPDATE", "DELETE")),
    "DROP FUNCTION metastore_part_stats_changed()",
    'ALTER TABLE "PARTITIONS" ALTER COLUMN "STATS_VERSION" SET DEFAULT 0',
    f"DROP SEQUENCE {_SEQ}",
]


def upgrade() -> None:
    with op.batch_alter_table("PARTITIONS") as batch:
        batch.add_column(sa.Column("STATS_VERSION", sa.BigInteger(), nullable=False, server_default="0"))
    if op.get_bind().dialect.name == "postgresql":
        for statement in _PG_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in _PG_DOWN:
            op.execute(statement)
    with op.batch_alter_table("PARTITIONS") as batch:
        batch.drop_column("STATS_VERSION")
