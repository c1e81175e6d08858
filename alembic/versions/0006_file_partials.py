"""DATA_FILES / DATA_FILE_PARTIALS: per-file partial statistics (issue 10), not Hive's.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25

What ANALYZE computed for each data file, valid for the file's size, modification time and version, so that a
re-ANALYZE from any host reads only the files that changed. Rows go with their table or partition (ON DELETE
CASCADE), and a file's partials with the file.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite only auto-assigns INTEGER PRIMARY KEY (the rowid alias), not BIGINT.
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "DATA_FILES",
        sa.Column("FILE_ID", Id, autoincrement=True, nullable=False),
        sa.Column("TBL_ID", Id, nullable=False),
        sa.Column("PART_ID", Id),
        sa.Column("PATH", sa.String(4000), nullable=False),
        sa.Column("FILE_SIZE", sa.BigInteger(), nullable=False),
        sa.Column("MTIME_NS", sa.BigInteger(), nullable=False),
        sa.Column("FILE_VERSION", sa.String(256), nullable=False),
        sa.Column("NUM_ROWS", sa.BigInteger()),
        sa.Column("RAW_DATA_SIZE", sa.BigInteger()),
        sa.Column("INFO", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["TBL_ID"], ["TBLS.TBL_ID"], name=op.f("DATA_FILES_TBL_ID_FK"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["PART_ID"], ["PARTITIONS.PART_ID"], name=op.f("DATA_FILES_PART_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("FILE_ID", name=op.f("DATA_FILES_PK")),
        sa.UniqueConstraint("TBL_ID", "PATH", name="DATA_FILES_UNIQUE"),
    )
    op.create_index(op.f("DATA_FILES_PART_ID_IDX"), "DATA_FILES", ["PART_ID"])
    op.create_table(
        "DATA_FILE_PARTIALS",
        sa.Column("FILE_ID", Id, nullable=False),
        sa.Column("ENTRY_KEY", sa.String(767), nullable=False),
        sa.Column("PARTIAL", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["FILE_ID"], ["DATA_FILES.FILE_ID"], name=op.f("DATA_FILE_PARTIALS_FILE_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("FILE_ID", "ENTRY_KEY", name=op.f("DATA_FILE_PARTIALS_PK")),
    )


def downgrade() -> None:
    op.drop_table("DATA_FILE_PARTIALS")
    op.drop_index(op.f("DATA_FILES_PART_ID_IDX"), table_name="DATA_FILES")
    op.drop_table("DATA_FILES")
