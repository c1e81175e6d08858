"""TYPES / TYPE_FIELDS (Hive 2.3's legacy type calls) and FUNCS / FUNC_RU (permanent functions).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25

Hive's table and column names. Deleting a database removes its functions, and deleting a type or function its
fields or resources, through ON DELETE CASCADE as everywhere else in this schema.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite only auto-assigns INTEGER PRIMARY KEY (the rowid alias), not BIGINT.
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "TYPES",
        sa.Column("TYPES_ID", Id, autoincrement=True, nullable=False),
        sa.Column("TYPE_NAME", sa.String(128), nullable=False),
        sa.Column("TYPE1", sa.String(767)),
        sa.Column("TYPE2", sa.String(767)),
        sa.PrimaryKeyConstraint("TYPES_ID", name=op.f("TYPES_PK")),
        sa.UniqueConstraint("TYPE_NAME", name=op.f("TYPES_TYPE_NAME_UNIQUE")),
    )
    op.create_table(
        "TYPE_FIELDS",
        sa.Column("TYPE_NAME", Id, nullable=False),
        sa.Column("FIELD_NAME", sa.String(128), nullable=False),
        sa.Column("FIELD_TYPE", sa.String(767), nullable=False),
        sa.Column("COMMENT", sa.String(256)),
        sa.Column("INTEGER_IDX", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["TYPE_NAME"], ["TYPES.TYPES_ID"], name=op.f("TYPE_FIELDS_TYPE_NAME_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("TYPE_NAME", "FIELD_NAME", name=op.f("TYPE_FIELDS_PK")),
    )
    op.create_table(
        "FUNCS",
        sa.Column("FUNC_ID", Id, autoincrement=True, nullable=False),
        sa.Column("DB_ID", Id, nullable=False),
        sa.Column("FUNC_NAME", sa.String(128), nullable=False),
        sa.Column("CLASS_NAME", sa.String(4000)),
        sa.Column("CREATE_TIME", sa.Integer(), nullable=False),
        sa.Column("FUNC_TYPE", sa.Integer(), nullable=False),
        sa.Column("OWNER_NAME", sa.String(128)),
        sa.Column("OWNER_TYPE", sa.String(10)),
        sa.ForeignKeyConstraint(["DB_ID"], ["DBS.DB_ID"], name=op.f("FUNCS_DB_ID_FK"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("FUNC_ID", name=op.f("FUNCS_PK")),
        sa.UniqueConstraint("DB_ID", "FUNC_NAME", name="UNIQUEFUNCTION"),
    )
    op.create_table(
        "FUNC_RU",
        sa.Column("FUNC_ID", Id, nullable=False),
        sa.Column("INTEGER_IDX", sa.Integer(), nullable=False),
        sa.Column("RESOURCE_TYPE", sa.Integer(), nullable=False),
        sa.Column("RESOURCE_URI", sa.String(4000)),
        sa.ForeignKeyConstraint(["FUNC_ID"], ["FUNCS.FUNC_ID"], name=op.f("FUNC_RU_FUNC_ID_FK"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("FUNC_ID", "INTEGER_IDX", name=op.f("FUNC_RU_PK")),
    )


def downgrade() -> None:
    for table in ("FUNC_RU", "FUNCS", "TYPE_FIELDS", "TYPES"):
        op.drop_table(table)
