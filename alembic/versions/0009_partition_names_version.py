"""PART_NAMES_VERSIONS: the version of each table's set of partition names, renewed by PostgreSQL triggers.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26

One row per table (TBL_ID, VERSION); VERSION is a value from the sequence PART_NAMES_VERSION_SEQ, and a new one
replaces it, in the same transaction, whenever the table's partition names (what get_partition_names sends, in
name order) can change:
- rows inserted into or deleted from PARTITIONS (statement-level triggers over the transition table: one new
  version per table a statement touches, however many partitions it adds or drops);
- a PARTITIONS row whose PART_NAME or TBL_ID changes (a row-level AFTER UPDATE trigger whose WHEN compares the
  old and new values, so the frequent updates that change neither — the listing and statistics versions of
  migrations 0003 and 0008 — never run it), both the old and the new table renewed;
- TRUNCATE of PARTITIONS (every table renewed).
A table's row is created by its first such change (INSERT ... ON CONFLICT DO UPDATE) and goes with the table
(ON DELETE CASCADE from TBLS); a table without a row is not versioned and its names are never served from the
cache. Values are never reused, so one (TBL_ID, VERSION) stands for one set of names: the get_partition_names
reply cache (metastore.service.listing_cache.ListingCache, shared with the listing replies) keeps each reply
with the version read in the snapshot its names were read in, and serves it only while the database reports
that version, whichever worker or server sharing the database changed the partitions. The table's own name,
database and catalog are part of the cache key, read with the version in one statement (renaming or moving a
table needs no new version). Being triggers, they cover every writer, including statements run by hand.
Concurrent transactions adding or dropping partitions of the same table now wait for each other from their
first such statement until the first commits (the version row's lock). SQLite gets the table only (empty): its
servers do not cache name listings.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite only auto-assigns INTEGER PRIMARY KEY (the rowid alias), not BIGINT.
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

_SEQ = '"PART_NAMES_VERSION_SEQ"'
_NEXT = f"nextval('{_SEQ}')"


def _renew(ids: str) -> str:
    """A statement giving each existing table among `ids` (a query of TBL_IDs) a new version, in id order."""
    return f"""INSERT INTO "PART_NAMES_VERSIONS" ("TBL_ID", "VERSION")
    SELECT s."TBL_ID", {_NEXT} FROM (
        SELECT DISTINCT c."TBL_ID" FROM ({ids}) c JOIN "TBLS" t ON t."TBL_ID" = c."TBL_ID" ORDER BY 1
    ) s
    ON CONFLICT ("TBL_ID") DO UPDATE SET "VERSION" = EXCLUDED."VERSION\""""


def _pg_up() -> list[str]:
    return [
        f"CREATE SEQUENCE {_SEQ}",
        f'INSERT INTO "PART_NAMES_VERSIONS" ("TBL_ID", "VERSION") SELECT "TBL_ID", {_NEXT} FROM "TBLS" '
        'ORDER BY "TBL_ID"',
        f"""CREATE FUNCTION metastore_names_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_renew('SELECT "TBL_ID" FROM changed')};
    RETURN NULL;
END $$""",
        f"""CREATE FUNCTION metastore_name_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_renew('SELECT OLD."TBL_ID" AS "TBL_ID" UNION SELECT NEW."TBL_ID"')};
    RETURN NULL;
END $$""",
        f"""CREATE FUNCTION metastore_names_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE "PART_NAMES_VERSIONS" SET "VERSION" = {_NEXT};
    RETURN NULL;
END $$""",
        'CREATE TRIGGER "PARTITIONS_NAMES_INSERT" AFTER INSERT ON "PARTITIONS" REFERENCING NEW TABLE AS changed '
        "FOR EACH STATEMENT EXECUTE FUNCTION metastore_names_changed()",
        'CREATE TRIGGER "PARTITIONS_NAMES_DELETE" AFTER DELETE ON "PARTITIONS" REFERENCING OLD TABLE AS changed '
        "FOR EACH STATEMENT EXECUTE FUNCTION metastore_names_changed()",
        'CREATE TRIGGER "PARTITIONS_NAMES_UPDATE" AFTER UPDATE OF "PART_NAME", "TBL_ID" ON "PARTITIONS" '
        'FOR EACH ROW WHEN (OLD."PART_NAME" IS DISTINCT FROM NEW."PART_NAME" '
        'OR OLD."TBL_ID" IS DISTINCT FROM NEW."TBL_ID") EXECUTE FUNCTION metastore_name_changed()',
        'CREATE TRIGGER "PARTITIONS_NAMES_TRUNCATE" AFTER TRUNCATE ON "PARTITIONS" '
        "FOR EACH STATEMENT EXECUTE FUNCTION metastore_names_truncated()",
    ]


def _pg_down() -> list[str]:
    return [
        'DROP TRIGGER "PARTITIONS_NAMES_TRUNCATE" ON "PARTITIONS"',
        'DROP TRIGGER "PARTITIONS_NAMES_UPDATE" ON "PARTITIONS"',
        'DROP TRIGGER "PARTITIONS_NAMES_DELETE" ON "PARTITIONS"',
        'DROP TRIGGER "PARTITIONS_NAMES_INSERT" ON "PARTITIONS"',
        "DROP FUNCTION metastore_names_truncated()",
        "DROP FUNCTION metastore_name_changed()",
        "DROP FUNCTION metastore_names_changed()",
        f"DROP SEQUENCE {_SEQ}",
    ]


def upgrade() -> None:
    op.create_table(
        "PART_NAMES_VERSIONS",
        sa.Column("TBL_ID", Id, nullable=False),
        sa.Column("VERSION", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["TBL_ID"], ["TBLS.TBL_ID"], name=op.f("PART_NAMES_VERSIONS_TBL_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("TBL_ID", name=op.f("PART_NAMES_VERSIONS_PK")),
    )
    if op.get_bind().dialect.name == "postgresql":
        for statement in _pg_up():
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in _pg_down():
            op.execute(statement)
    op.drop_table("PART_NAMES_VERSIONS")
