"""PARTITIONS.LISTING_VERSION: renewed by PostgreSQL triggers whenever anything a partition listing sends changes.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26

Every partition holds a value from the sequence PART_LISTING_VERSION_SEQ; a new value replaces it whenever
- its PARTITIONS row is updated (any column: name, times, write id, storage descriptor id; a BEFORE UPDATE row
  trigger), or
- rows are inserted, updated or deleted in what its Partition struct is built from: PARTITION_KEY_VALS and
  PARTITION_PARAMS (by PART_ID); SDS, SD_PARAMS, BUCKETING_COLS, SORT_COLS (by SD_ID); SERDES and SERDE_PARAMS
  (by SERDE_ID, through SDS); COLUMNS_V2 (by CD_ID, through SDS). Statement-level triggers over the transition
  tables (for UPDATE both the old and the new rows), so a batch renews each partition once per statement.
  A partition whose row this transaction already wrote after its first listing trigger ran is left as it is:
  no other snapshot has seen the version it got here, and every later snapshot sees the transaction's end
  state with it, so one row version is enough (adding 1,000 partitions or writing their statistics does not
  rewrite their rows once per child table). "Written here" is: its xmin is this transaction's id and its
  version is above the transaction's floor (a value drawn from the sequence by the transaction's first listing
  trigger, kept in the transaction-local setting metastore.listing_floor). The floor rules out a row whose
  32-bit xmin only equals this id after wraparound: such a row got its version 2^31 transactions earlier,
  long before the floor was drawn.
A new partition gets a fresh value (the column's default); a dropped one takes its value with it. Values are
never reused, so the list of a table's partitions' versions in name order is the same in two snapshots only if
every partition's listing data is: the server's listing reply cache (metastore.service.listing_cache) compares
it (as a digest) on every call. Being triggers, they cover every writer, including statements run by hand
(not TRUNCATE, which the metastore never runs). The table's own names, partition keys and the request are part
of the cache key, read in the same snapshot. SQLite gets the column only (0): its servers do not cache listings.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SEQ = '"PART_LISTING_VERSION_SEQ"'
_NEXT = f"nextval('{_SEQ}')"

# (child table, the column naming its owner, how that owner's partitions are found from a set of ids)
_CHILDREN = [
    ("PARTITION_KEY_VALS", "PART_ID", 'p."PART_ID" IN ({ids})'),
    ("PARTITION_PARAMS", "PART_ID", 'p."PART_ID" IN ({ids})'),
    ("SDS", "SD_ID", 'p."SD_ID" IN ({ids})'),
    ("SD_PARAMS", "SD_ID", 'p."SD_ID" IN ({ids})'),
    ("BUCKETING_COLS", "SD_ID", 'p."SD_ID" IN ({ids})'),
    ("SORT_COLS", "SD_ID", 'p."SD_ID" IN ({ids})'),
    ("SERDES", "SERDE_ID", 'p."SD_ID" IN (SELECT s."SD_ID" FROM "SDS" s WHERE s."SERDE_ID" IN ({ids}))'),
    ("SERDE_PARAMS", "SERDE_ID", 'p."SD_ID" IN (SELECT s."SD_ID" FROM "SDS" s WHERE s."SERDE_ID" IN ({ids}))'),
    ("COLUMNS_V2", "CD_ID", 'p."SD_ID" IN (SELECT s."SD_ID" FROM "SDS" s WHERE s."CD_ID" IN ({ids}))'),
]
_EVENTS = ("INSERT", "UPDATE", "DELETE")


def _function(table: str, event: str) -> str:
    return f"metastore_listing_{table.lower()}_{event.lower()}"


def _pg_up() -> list[str]:
    out = [
        f"CREATE SEQUENCE {_SEQ}",
        f'ALTER TABLE "PARTITIONS" ALTER COLUMN "LISTING_VERSION" SET DEFAULT {_NEXT}',
        f'UPDATE "PARTITIONS" SET "LISTING_VERSION" = {_NEXT}',
        f"""CREATE FUNCTION metastore_listing_floor() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    f text := current_setting('metastore.listing_floor', true);
BEGIN
    IF f IS NULL OR f = '' THEN
        f := {_NEXT}::text;
        PERFORM set_config('metastore.listing_floor', f, true);
    END IF;
    RETURN f::bigint;
END $$""",
        f"""CREATE FUNCTION metastore_partition_listing_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM metastore_listing_floor();
    NEW."LISTING_VERSION" := {_NEXT};
    RETURN NEW;
END $$""",
        'CREATE TRIGGER "PARTITIONS_LISTING_VERSION" BEFORE UPDATE ON "PARTITIONS" FOR EACH ROW '
        "EXECUTE FUNCTION metastore_partition_listing_changed()",
    ]
    for table, column, where in _CHILDREN:
        for event in _EVENTS:
            if event == "UPDATE":
                ids = f'SELECT c."{column}" FROM changed c UNION SELECT o."{column}" FROM changed_old o'
                referencing = "REFERENCING OLD TABLE AS changed_old NEW TABLE AS changed"
            else:
                ids = f'SELECT c."{column}" FROM changed c'
                referencing = f"REFERENCING {'OLD' if event == 'DELETE' else 'NEW'} TABLE AS changed"
            out.append(
                f"""CREATE FUNCTION {_function(table, event)}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    floor bigint := metastore_listing_floor();
BEGIN
    UPDATE "PARTITIONS" p SET "LISTING_VERSION" = {_NEXT} WHERE {where.format(ids=ids)}
        AND NOT (p."LISTING_VERSION" > floor AND p.xmin::text::bigint = txid_current() % 4294967296);
    RETURN NULL;
END $$"""
            )
            out.append(
                f'CREATE TRIGGER "{table}_LISTING_{event}" AFTER {event} ON "{table}" {referencing} '
                f"FOR EACH STATEMENT EXECUTE FUNCTION {_function(table, event)}()"
            )
    return out


def _pg_down() -> list[str]:
    out = []
    for table, _, _ in _CHILDREN:
        for event in _EVENTS:
            out.append(f'DROP TRIGGER "{table}_LISTING_{event}" ON "{table}"')
            out.append(f"DROP FUNCTION {_function(table, event)}()")
    out += [
        'DROP TRIGGER "PARTITIONS_LISTING_VERSION" ON "PARTITIONS"',
        "DROP FUNCTION metastore_partition_listing_changed()",
        "DROP FUNCTION metastore_listing_floor()",
        'ALTER TABLE "PARTITIONS" ALTER COLUMN "LISTING_VERSION" SET DEFAULT 0',
        f"DROP SEQUENCE {_SEQ}",
    ]
    return out


def upgrade() -> None:
    with op.batch_alter_table("PARTITIONS") as batch:
        batch.add_column(sa.Column("LISTING_VERSION", sa.BigInteger(), nullable=False, server_default="0"))
    if op.get_bind().dialect.name == "postgresql":
        for statement in _pg_up():
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in _pg_down():
            op.execute(statement)
    with op.batch_alter_table("PARTITIONS") as batch:
        batch.drop_column("LISTING_VERSION")
