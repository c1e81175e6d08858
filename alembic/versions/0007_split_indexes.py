"""SPLIT_INDEXES, SPLIT_INDEX_PARTS, SPLIT_INDEX_FILES: the records of split-filtering indexes (issue 11).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26

One row per index (name, table, column, type, level, options, covered partitions, directory, state, times),
one per index file (part), one per data file a part covers with its size and modification time (ns).
Dropping an index removes its parts and files (ON DELETE CASCADE); dropping its table's row sets TBL_ID to
NULL, which SHOW INDEX reports as "Table dropped".
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite only auto-assigns INTEGER PRIMARY KEY (the rowid alias), not BIGINT.
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "SPLIT_INDEXES",
        sa.Column("INDEX_ID", Id, autoincrement=True, nullable=False),
        sa.Column("INDEX_NAME", sa.String(128), nullable=False),
        sa.Column("TBL_ID", Id),
        sa.Column("DB_NAME", sa.String(128), nullable=False),
        sa.Column("TBL_NAME", sa.String(256), nullable=False),
        sa.Column("COLUMN_NAME", sa.String(767), nullable=False),
        sa.Column("COLUMN_TYPE", sa.String(4000), nullable=False),
        sa.Column("INDEX_TYPE", sa.String(16), nullable=False),
        sa.Column("INDEX_LEVEL", sa.String(16), nullable=False),
        sa.Column("PROPERTIES", sa.Text(), nullable=False),
        sa.Column("PARTITIONS", sa.Text()),
        sa.Column("LOCATION", sa.String(4000), nullable=False),
        sa.Column("STATE", sa.String(16), nullable=False),
        sa.Column("CREATE_TIME", sa.BigInteger(), nullable=False),
        sa.Column("BUILD_TIME", sa.BigInteger(), nullable=False),
        sa.Column("OWNER_NAME", sa.String(128)),
        sa.ForeignKeyConstraint(["TBL_ID"], ["TBLS.TBL_ID"], name=op.f("SPLIT_INDEXES_TBL_ID_FK"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("INDEX_ID", name=op.f("SPLIT_INDEXES_PK")),
        sa.UniqueConstraint("INDEX_NAME", name=op.f("SPLIT_INDEXES_INDEX_NAME_UNIQUE")),
    )
    op.create_index(op.f("SPLIT_INDEXES_TBL_ID_IDX"), "SPLIT_INDEXES", ["TBL_ID"])
    op.create_table(
        "SPLIT_INDEX_PARTS",
        sa.Column("PART_ID", Id, autoincrement=True, nullable=False),
        sa.Column("INDEX_ID", Id, nullable=False),
        sa.Column("PART_KEY", sa.String(4000), nullable=False),
        sa.Column("PART_NAME", sa.String(767), nullable=False),
        sa.Column("LOCATION", sa.String(4000), nullable=False),
        sa.Column("FILE_SIZE", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["INDEX_ID"], ["SPLIT_INDEXES.INDEX_ID"], name=op.f("SPLIT_INDEX_PARTS_INDEX_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("PART_ID", name=op.f("SPLIT_INDEX_PARTS_PK")),
    )
    op.create_index(op.f("SPLIT_INDEX_PARTS_INDEX_ID_IDX"), "SPLIT_INDEX_PARTS", ["INDEX_ID"])
    op.create_table(
        "SPLIT_INDEX_FILES",
        sa.Column("PART_ID", Id, nullable=False),
        sa.Column("INTEGER_IDX", sa.Integer(), nullable=False),
        sa.Column("FILE_PATH", sa.String(4000), nullable=False),
        sa.Column("FILE_SIZE", sa.BigInteger(), nullable=False),
        sa.Column("FILE_MTIME_NS", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["PART_ID"], ["SPLIT_INDEX_PARTS.PART_ID"], name=op.f("SPLIT_INDEX_FILES_PART_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("PART_ID", "INTEGER_IDX", name=op.f("SPLIT_INDEX_FILES_PK")),
    )


def downgrade() -> None:
    for table in ("SPLIT_INDEX_FILES", "SPLIT_INDEX_PARTS", "SPLIT_INDEXES"):
        op.drop_table(table)
