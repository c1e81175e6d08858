"""Initial schema: Hive 4.1's metastore tables for databases, tables, partitions and column statistics.

Revision ID: 0001
Revises:
Create Date: 2026-11-21

A frozen snapshot: later schema changes get their own revision, never an edit here.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite only auto-assigns INTEGER PRIMARY KEY (the rowid alias), not BIGINT.
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _id(name: str) -> sa.Column:
    return sa.Column(name, Id, autoincrement=True, nullable=False)


def _owner(name: str) -> sa.Column:
    return sa.Column(name, Id, nullable=False)


def _params_table(table: str, owner: str, parent: str) -> None:
    op.create_table(
        table,
        _owner(owner),
        sa.Column("PARAM_KEY", sa.String(256), nullable=False),
        sa.Column("PARAM_VALUE", sa.Text()),
        sa.ForeignKeyConstraint(
            [owner], [f"{parent}.{owner}"], name=op.f(f"{table}_{owner}_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint(owner, "PARAM_KEY", name=op.f(f"{table}_PK")),
    )


def _stats_table(table: str, owner: str, parent: str) -> None:
    op.create_table(
        table,
        _id("CS_ID"),
        _owner(owner),
        sa.Column("COLUMN_NAME", sa.String(767), nullable=False),
        sa.Column("COLUMN_TYPE", sa.String(128), nullable=False),
        sa.Column("LONG_LOW_VALUE", sa.BigInteger()),
        sa.Column("LONG_HIGH_VALUE", sa.BigInteger()),
        sa.Column("DOUBLE_LOW_VALUE", sa.Double()),
        sa.Column("DOUBLE_HIGH_VALUE", sa.Double()),
        sa.Column("BIG_DECIMAL_LOW_VALUE", sa.String(4000)),
        sa.Column("BIG_DECIMAL_HIGH_VALUE", sa.String(4000)),
        sa.Column("NUM_NULLS", sa.BigInteger(), nullable=False),
        sa.Column("NUM_DISTINCTS", sa.BigInteger()),
        sa.Column("BIT_VECTOR", sa.LargeBinary()),
        sa.Column("AVG_COL_LEN", sa.Double()),
        sa.Column("MAX_COL_LEN", sa.BigInteger()),
        sa.Column("NUM_TRUES", sa.BigInteger()),
        sa.Column("NUM_FALSES", sa.BigInteger()),
        sa.Column("LAST_ANALYZED", sa.BigInteger(), nullable=False),
        sa.Column("ENGINE", sa.String(128), nullable=False),
        sa.Column("HISTOGRAM", sa.LargeBinary()),
        sa.ForeignKeyConstraint(
            [owner], [f"{parent}.{owner}"], name=op.f(f"{table}_{owner}_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("CS_ID", name=op.f(f"{table}_PK")),
        # Unlike Hive: one row per (owner, column, engine), enforced by the database (trino#13787).
        sa.UniqueConstraint(owner, "COLUMN_NAME", "ENGINE", name=f"{table}_UNIQUE"),
    )


def upgrade() -> None:
    op.create_table(
        "CTLGS",
        _id("CTLG_ID"),
        sa.Column("NAME", sa.String(256), nullable=False),
        sa.Column("DESC", sa.String(4000)),
        sa.Column("LOCATION_URI", sa.String(4000)),
        sa.Column("CREATE_TIME", sa.Integer()),
        sa.PrimaryKeyConstraint("CTLG_ID", name=op.f("CTLGS_PK")),
        sa.UniqueConstraint("NAME", name=op.f("CTLGS_NAME_UNIQUE")),
    )
    op.create_table(
        "DBS",
        _id("DB_ID"),
        sa.Column("NAME", sa.String(128), nullable=False),
        sa.Column("CTLG_NAME", sa.String(256), nullable=False),
        sa.Column("DESC", sa.String(4000)),
        sa.Column("DB_LOCATION_URI", sa.String(4000)),
        sa.Column("DB_MANAGED_LOCATION_URI", sa.String(4000)),
        sa.Column("OWNER_NAME", sa.String(128)),
        sa.Column("OWNER_TYPE", sa.String(10)),
        sa.Column("CREATE_TIME", sa.Integer()),
        sa.ForeignKeyConstraint(["CTLG_NAME"], ["CTLGS.NAME"], name=op.f("DBS_CTLG_NAME_FK")),
        sa.PrimaryKeyConstraint("DB_ID", name=op.f("DBS_PK")),
        sa.UniqueConstraint("NAME", "CTLG_NAME", name="UNIQUE_DATABASE"),
    )
    _params_table("DATABASE_PARAMS", "DB_ID", "DBS")

    op.create_table(
        "SERDES",
        _id("SERDE_ID"),
        sa.Column("NAME", sa.String(128)),
        sa.Column("SLIB", sa.String(4000)),
        sa.PrimaryKeyConstraint("SERDE_ID", name=op.f("SERDES_PK")),
    )
    _params_table("SERDE_PARAMS", "SERDE_ID", "SERDES")
    op.create_table("CDS", _id("CD_ID"), sa.PrimaryKeyConstraint("CD_ID", name=op.f("CDS_PK")))
    op.create_table(
        "COLUMNS_V2",
        _owner("CD_ID"),
        sa.Column("COLUMN_NAME", sa.String(767), nullable=False),
        sa.Column("TYPE_NAME", sa.Text(), nullable=False),
        sa.Column("COMMENT", sa.String(4000)),
        sa.Column("INTEGER_IDX", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["CD_ID"], ["CDS.CD_ID"], name=op.f("COLUMNS_V2_CD_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("CD_ID", "COLUMN_NAME", name=op.f("COLUMNS_V2_PK")),
    )
    op.create_table(
        "SDS",
        _id("SD_ID"),
        sa.Column("CD_ID", Id),
        sa.Column("SERDE_ID", Id),
        sa.Column("INPUT_FORMAT", sa.String(4000)),
        sa.Column("OUTPUT_FORMAT", sa.String(4000)),
        sa.Column("LOCATION", sa.String(4000)),
        sa.Column("IS_COMPRESSED", sa.Boolean(), nullable=False),
        sa.Column("IS_STOREDASSUBDIRECTORIES", sa.Boolean(), nullable=False),
        sa.Column("NUM_BUCKETS", sa.Integer(), nullable=False),
        sa.Column("SKEWED_INFO", sa.Text()),
        sa.ForeignKeyConstraint(["CD_ID"], ["CDS.CD_ID"], name=op.f("SDS_CD_ID_FK")),
        sa.ForeignKeyConstraint(["SERDE_ID"], ["SERDES.SERDE_ID"], name=op.f("SDS_SERDE_ID_FK")),
        sa.PrimaryKeyConstraint("SD_ID", name=op.f("SDS_PK")),
    )
    # Foreign-key checks on deleting column descriptors and SerDes look these up.
    op.create_index(op.f("SDS_CD_ID_IDX"), "SDS", ["CD_ID"])
    op.create_index(op.f("SDS_SERDE_ID_IDX"), "SDS", ["SERDE_ID"])
    _params_table("SD_PARAMS", "SD_ID", "SDS")
    op.create_table(
        "BUCKETING_COLS",
        _owner("SD_ID"),
        sa.Column("INTEGER_IDX", sa.Integer(), nullable=False),
        sa.Column("BUCKET_COL_NAME", sa.String(767), nullable=False),
        sa.ForeignKeyConstraint(
            ["SD_ID"], ["SDS.SD_ID"], name=op.f("BUCKETING_COLS_SD_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("SD_ID", "INTEGER_IDX", name=op.f("BUCKETING_COLS_PK")),
    )
    op.create_table(
        "SORT_COLS",
        _owner("SD_ID"),
        sa.Column("INTEGER_IDX", sa.Integer(), nullable=False),
        sa.Column("COLUMN_NAME", sa.String(767), nullable=False),
        sa.Column("ORDER", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["SD_ID"], ["SDS.SD_ID"], name=op.f("SORT_COLS_SD_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("SD_ID", "INTEGER_IDX", name=op.f("SORT_COLS_PK")),
    )

    op.create_table(
        "TBLS",
        _id("TBL_ID"),
        _owner("DB_ID"),
        sa.Column("SD_ID", Id),
        sa.Column("TBL_NAME", sa.String(256), nullable=False),
        sa.Column("TBL_TYPE", sa.String(128)),
        sa.Column("OWNER", sa.String(767)),
        sa.Column("OWNER_TYPE", sa.String(10)),
        sa.Column("CREATE_TIME", sa.Integer(), nullable=False),
        sa.Column("LAST_ACCESS_TIME", sa.Integer(), nullable=False),
        sa.Column("RETENTION", sa.Integer(), nullable=False),
        sa.Column("VIEW_ORIGINAL_TEXT", sa.Text()),
        sa.Column("VIEW_EXPANDED_TEXT", sa.Text()),
        sa.Column("IS_REWRITE_ENABLED", sa.Boolean(), nullable=False),
        sa.Column("WRITE_ID", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["DB_ID"], ["DBS.DB_ID"], name=op.f("TBLS_DB_ID_FK"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["SD_ID"], ["SDS.SD_ID"], name=op.f("TBLS_SD_ID_FK")),
        sa.PrimaryKeyConstraint("TBL_ID", name=op.f("TBLS_PK")),
        sa.UniqueConstraint("DB_ID", "TBL_NAME", name="UNIQUETABLE"),
    )
    op.create_index(op.f("TBLS_SD_ID_IDX"), "TBLS", ["SD_ID"])
    _params_table("TABLE_PARAMS", "TBL_ID", "TBLS")
    op.create_table(
        "PARTITION_KEYS",
        _owner("TBL_ID"),
        sa.Column("PKEY_NAME", sa.String(128), nullable=False),
        sa.Column("PKEY_TYPE", sa.String(767), nullable=False),
        sa.Column("PKEY_COMMENT", sa.String(4000)),
        sa.Column("INTEGER_IDX", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["TBL_ID"], ["TBLS.TBL_ID"], name=op.f("PARTITION_KEYS_TBL_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("TBL_ID", "PKEY_NAME", name=op.f("PARTITION_KEYS_PK")),
    )

    op.create_table(
        "PARTITIONS",
        _id("PART_ID"),
        _owner("TBL_ID"),
        sa.Column("SD_ID", Id),
        sa.Column("PART_NAME", sa.String(767), nullable=False),
        sa.Column("CREATE_TIME", sa.Integer(), nullable=False),
        sa.Column("LAST_ACCESS_TIME", sa.Integer(), nullable=False),
        sa.Column("WRITE_ID", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["SD_ID"], ["SDS.SD_ID"], name=op.f("PARTITIONS_SD_ID_FK")),
        sa.ForeignKeyConstraint(
            ["TBL_ID"], ["TBLS.TBL_ID"], name=op.f("PARTITIONS_TBL_ID_FK"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("PART_ID", name=op.f("PARTITIONS_PK")),
        sa.UniqueConstraint("TBL_ID", "PART_NAME", name="UNIQUEPARTITION"),
    )
    op.create_index(op.f("PARTITIONS_SD_ID_IDX"), "PARTITIONS", ["SD_ID"])
    op.create_table(
        "PARTITION_KEY_VALS",
        _owner("PART_ID"),
        sa.Column("INTEGER_IDX", sa.Integer(), nullable=False),
        sa.Column("PART_KEY_VAL", sa.String(256), nullable=False),
        sa.ForeignKeyConstraint(
            ["PART_ID"],
            ["PARTITIONS.PART_ID"],
            name=op.f("PARTITION_KEY_VALS_PART_ID_FK"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("PART_ID", "INTEGER_IDX", name=op.f("PARTITION_KEY_VALS_PK")),
    )
    _params_table("PARTITION_PARAMS", "PART_ID", "PARTITIONS")

    _stats_table("TAB_COL_STATS", "TBL_ID", "TBLS")
    _stats_table("PART_COL_STATS", "PART_ID", "PARTITIONS")

    # Hive's schema scripts create catalog `hive` too; its location is filled in by the server at start
    # (Store.ensure_default_database), which also creates database `default`.
    op.bulk_insert(
        sa.table("CTLGS", sa.column("NAME"), sa.column("DESC")),
        [{"NAME": "hive", "DESC": "Default catalog for Hive"}],
    )


def downgrade() -> None:
    for table in (
        "PART_COL_STATS",
        "TAB_COL_STATS",
        "PARTITION_PARAMS",
        "PARTITION_KEY_VALS",
        "PARTITIONS",
        "PARTITION_KEYS",
        "TABLE_PARAMS",
        "TBLS",
        "SORT_COLS",
        "BUCKETING_COLS",
        "SD_PARAMS",
        "SDS",
        "COLUMNS_V2",
        "CDS",
        "SERDE_PARAMS",
        "SERDES",
        "DATABASE_PARAMS",
        "DBS",
        "CTLGS",
    ):
        op.drop_table(table)
