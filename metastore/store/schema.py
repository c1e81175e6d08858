"""SQLAlchemy Core tables modelled on Hive 4.1's metastore schema, with Hive's (upper-case) names.

Deliberate differences from Hive, each for a reason:
- Identity columns instead of Hive's SEQUENCE_TABLE: the database hands out ids race-free.
- TAB_COL_STATS / PART_COL_STATS are keyed by TBL_ID / PART_ID only (Hive 4.1, HIVE-27725), so a table or
  partition rename needs no statistics rewrite, and carry a UNIQUE (owner, COLUMN_NAME, ENGINE): Hive enforces
  uniqueness in code only and concurrent writers produced duplicate rows that broke Trino (trino#13787).
  The unique index also serves the hot lookups and lets writes be INSERT ... ON CONFLICT DO UPDATE.
- Child rows are removed by ON DELETE CASCADE foreign keys (statistics, parameters, key values), so dropping a
  table, partition or database can never leave orphans behind, whatever code path deletes it.
- Skewed-column information is one JSON text column SDS.SKEWED_INFO instead of Hive's five SKEWED_* tables: it
  is only ever round-tripped whole, never queried, and five more queries per table load buy nothing.
- TAB_COL_STATS / PART_COL_STATS carry STATS_THRIFT, the statistic pre-encoded as Thrift (see below), and
  PARTITIONS carries STATS_VERSION, renewed by triggers on PostgreSQL whenever a partition's statistics change.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "%(table_name)s_%(column_0_N_name)s_IDX",
        "uq": "%(table_name)s_%(column_0_N_name)s_UNIQUE",
        "fk": "%(table_name)s_%(column_0_name)s_FK",
        "pk": "%(table_name)s_PK",
    }
)

# SQLite only auto-assigns INTEGER PRIMARY KEY (the rowid alias), not BIGINT.
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

NAME_LEN = 128
TABLE_NAME_LEN = 256
COLUMN_NAME_LEN = 767
PART_NAME_LEN = 767
PART_KEY_VAL_LEN = 256
PARAM_KEY_LEN = 256
URI_LEN = 4000


def _id_column(name: str) -> sa.Column[int]:
    return sa.Column(name, Id, primary_key=True, autoincrement=True)


def _fk(name: str, target: str, *, nullable: bool = False, cascade: bool = True) -> sa.Column[int]:
    return sa.Column(
        name, Id, sa.ForeignKey(target, ondelete="CASCADE" if cascade else None), nullable=nullable
    )


CTLGS = sa.Table(
    "CTLGS",
    metadata,
    _id_column("CTLG_ID"),
    sa.Column("NAME", sa.String(256), nullable=False, unique=True),
    sa.Column("DESC", sa.String(4000)),
    sa.Column("LOCATION_URI", sa.String(URI_LEN)),
    sa.Column("CREATE_TIME", sa.Integer),
)

DBS = sa.Table(
    "DBS",
    metadata,
    _id_column("DB_ID"),
    sa.Column("NAME", sa.String(NAME_LEN), nullable=False),
    sa.Column("CTLG_NAME", sa.String(256), sa.ForeignKey("CTLGS.NAME"), nullable=False),
    sa.Column("DESC", sa.String(4000)),
    sa.Column("DB_LOCATION_URI", sa.String(URI_LEN)),
    sa.Column("DB_MANAGED_LOCATION_URI", sa.String(URI_LEN)),
    sa.Column("OWNER_NAME", sa.String(NAME_LEN)),
    sa.Column("OWNER_TYPE", sa.String(10)),
    sa.Column("CREATE_TIME", sa.Integer),
    sa.UniqueConstraint("NAME", "CTLG_NAME", name="UNIQUE_DATABASE"),
)

DATABASE_PARAMS = sa.Table(
    "DATABASE_PARAMS",
    metadata,
    sa.Column("DB_ID", Id, sa.ForeignKey("DBS.DB_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("PARAM_KEY", sa.String(PARAM_KEY_LEN), primary_key=True),
    sa.Column("PARAM_VALUE", sa.Text),
)

SERDES = sa.Table(
    "SERDES",
    metadata,
    _id_column("SERDE_ID"),
    sa.Column("NAME", sa.String(128)),
    sa.Column("SLIB", sa.String(4000)),
)

SERDE_PARAMS = sa.Table(
    "SERDE_PARAMS",
    metadata,
    sa.Column("SERDE_ID", Id, sa.ForeignKey("SERDES.SERDE_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("PARAM_KEY", sa.String(PARAM_KEY_LEN), primary_key=True),
    sa.Column("PARAM_VALUE", sa.Text),
)

CDS = sa.Table("CDS", metadata, _id_column("CD_ID"))

COLUMNS_V2 = sa.Table(
    "COLUMNS_V2",
    metadata,
    sa.Column("CD_ID", Id, sa.ForeignKey("CDS.CD_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("COLUMN_NAME", sa.String(COLUMN_NAME_LEN), primary_key=True),
    sa.Column("TYPE_NAME", sa.Text, nullable=False),
    sa.Column("COMMENT", sa.String(4000)),
    sa.Column("INTEGER_IDX", sa.Integer, nullable=False),
)

SDS = sa.Table(
    "SDS",
    metadata,
    _id_column("SD_ID"),
    sa.Column("CD_ID", Id, sa.ForeignKey("CDS.CD_ID"), index=True),
    sa.Column("SERDE_ID", Id, sa.ForeignKey("SERDES.SERDE_ID"), index=True),
    sa.Column("INPUT_FORMAT", sa.String(4000)),
    sa.Column("OUTPUT_FORMAT", sa.String(4000)),
    sa.Column("LOCATION", sa.String(URI_LEN)),
    sa.Column("IS_COMPRESSED", sa.Boolean, nullable=False),
    sa.Column("IS_STOREDASSUBDIRECTORIES", sa.Boolean, nullable=False),
    sa.Column("NUM_BUCKETS", sa.Integer, nullable=False),
    sa.Column("SKEWED_INFO", sa.Text),
)

SD_PARAMS = sa.Table(
    "SD_PARAMS",
    metadata,
    sa.Column("SD_ID", Id, sa.ForeignKey("SDS.SD_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("PARAM_KEY", sa.String(PARAM_KEY_LEN), primary_key=True),
    sa.Column("PARAM_VALUE", sa.Text),
)

BUCKETING_COLS = sa.Table(
    "BUCKETING_COLS",
    metadata,
    sa.Column("SD_ID", Id, sa.ForeignKey("SDS.SD_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("INTEGER_IDX", sa.Integer, primary_key=True),
    sa.Column("BUCKET_COL_NAME", sa.String(COLUMN_NAME_LEN), nullable=False),
)

SORT_COLS = sa.Table(
    "SORT_COLS",
    metadata,
    sa.Column("SD_ID", Id, sa.ForeignKey("SDS.SD_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("INTEGER_IDX", sa.Integer, primary_key=True),
    sa.Column("COLUMN_NAME", sa.String(COLUMN_NAME_LEN), nullable=False),
    sa.Column("ORDER", sa.Integer, nullable=False),
)

TBLS = sa.Table(
    "TBLS",
    metadata,
    _id_column("TBL_ID"),
    sa.Column("DB_ID", Id, sa.ForeignKey("DBS.DB_ID", ondelete="CASCADE"), nullable=False),
    sa.Column("SD_ID", Id, sa.ForeignKey("SDS.SD_ID"), index=True),
    sa.Column("TBL_NAME", sa.String(TABLE_NAME_LEN), nullable=False),
    sa.Column("TBL_TYPE", sa.String(128)),
    sa.Column("OWNER", sa.String(767)),
    sa.Column("OWNER_TYPE", sa.String(10)),
    sa.Column("CREATE_TIME", sa.Integer, nullable=False),
    sa.Column("LAST_ACCESS_TIME", sa.Integer, nullable=False),
    sa.Column("RETENTION", sa.Integer, nullable=False),
    sa.Column("VIEW_ORIGINAL_TEXT", sa.Text),
    sa.Column("VIEW_EXPANDED_TEXT", sa.Text),
    sa.Column("IS_REWRITE_ENABLED", sa.Boolean, nullable=False),
    sa.Column("WRITE_ID", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("DB_ID", "TBL_NAME", name="UNIQUETABLE"),
)

TABLE_PARAMS = sa.Table(
    "TABLE_PARAMS",
    metadata,
    sa.Column("TBL_ID", Id, sa.ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("PARAM_KEY", sa.String(PARAM_KEY_LEN), primary_key=True),
    sa.Column("PARAM_VALUE", sa.Text),
)

PARTITION_KEYS = sa.Table(
    "PARTITION_KEYS",
    metadata,
    sa.Column("TBL_ID", Id, sa.ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("PKEY_NAME", sa.String(NAME_LEN), primary_key=True),
    sa.Column("PKEY_TYPE", sa.String(767), nullable=False),
    sa.Column("PKEY_COMMENT", sa.String(4000)),
    sa.Column("INTEGER_IDX", sa.Integer, nullable=False),
)

PARTITIONS = sa.Table(
    "PARTITIONS",
    metadata,
    _id_column("PART_ID"),
    sa.Column("TBL_ID", Id, sa.ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), nullable=False),
    sa.Column("SD_ID", Id, sa.ForeignKey("SDS.SD_ID"), index=True),
    sa.Column("PART_NAME", sa.String(PART_NAME_LEN), nullable=False),
    sa.Column("CREATE_TIME", sa.Integer, nullable=False),
    sa.Column("LAST_ACCESS_TIME", sa.Integer, nullable=False),
    sa.Column("WRITE_ID", sa.BigInteger, nullable=False),
    # Not Hive's: on PostgreSQL, a value from PART_STATS_VERSION_SEQ that triggers renew whenever the
    # partition's statistics rows or its name change (migration 0003); the statistics reply cache validates
    # its entries against it. Unused (0) on SQLite.
    sa.Column("STATS_VERSION", sa.BigInteger, nullable=False, server_default="0"),
    # Not Hive's: on PostgreSQL, a value from PART_LISTING_VERSION_SEQ that triggers renew whenever anything a
    # partition listing sends of the partition changes (migration 0008); the listing reply cache validates its
    # entries against it. Unused (0) on SQLite.
    sa.Column("LISTING_VERSION", sa.BigInteger, nullable=False, server_default="0"),
    # (TBL_ID, PART_NAME) rather than Hive's (PART_NAME, TBL_ID): every query starts from one table and
    # listings come back ordered by name straight from this index.
    sa.UniqueConstraint("TBL_ID", "PART_NAME", name="UNIQUEPARTITION"),
)

# Not Hive's: on PostgreSQL, the version of each table's set of partition names (migration 0009): a value from
# PART_NAMES_VERSION_SEQ that triggers renew whenever a partition of the table is added, dropped, renamed or
# moved; the get_partition_names reply cache validates its entries against it. No row: not versioned (not
# cached). Unused (no rows) on SQLite.
PART_NAMES_VERSIONS = sa.Table(
    "PART_NAMES_VERSIONS",
    metadata,
    sa.Column("TBL_ID", Id, sa.ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("VERSION", sa.BigInteger, nullable=False),
)

PARTITION_KEY_VALS = sa.Table(
    "PARTITION_KEY_VALS",
    metadata,
    sa.Column("PART_ID", Id, sa.ForeignKey("PARTITIONS.PART_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("INTEGER_IDX", sa.Integer, primary_key=True),
    sa.Column("PART_KEY_VAL", sa.String(PART_KEY_VAL_LEN), nullable=False),
)

PARTITION_PARAMS = sa.Table(
    "PARTITION_PARAMS",
    metadata,
    sa.Column("PART_ID", Id, sa.ForeignKey("PARTITIONS.PART_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("PARAM_KEY", sa.String(PARAM_KEY_LEN), primary_key=True),
    sa.Column("PARAM_VALUE", sa.Text),
)


def _stats_value_columns() -> list[sa.Column[Any]]:
    """The typed statistics columns shared by TAB_COL_STATS and PART_COL_STATS (Hive 4 names and types)."""
    return [
        sa.Column("COLUMN_NAME", sa.String(COLUMN_NAME_LEN), nullable=False),
        sa.Column("COLUMN_TYPE", sa.String(128), nullable=False),
        sa.Column("LONG_LOW_VALUE", sa.BigInteger),
        sa.Column("LONG_HIGH_VALUE", sa.BigInteger),
        sa.Column("DOUBLE_LOW_VALUE", sa.Double()),
        sa.Column("DOUBLE_HIGH_VALUE", sa.Double()),
        sa.Column("BIG_DECIMAL_LOW_VALUE", sa.String(4000)),
        sa.Column("BIG_DECIMAL_HIGH_VALUE", sa.String(4000)),
        sa.Column("NUM_NULLS", sa.BigInteger, nullable=False),
        sa.Column("NUM_DISTINCTS", sa.BigInteger),
        sa.Column("BIT_VECTOR", sa.LargeBinary),
        sa.Column("AVG_COL_LEN", sa.Double()),
        sa.Column("MAX_COL_LEN", sa.BigInteger),
        sa.Column("NUM_TRUES", sa.BigInteger),
        sa.Column("NUM_FALSES", sa.BigInteger),
        sa.Column("LAST_ANALYZED", sa.BigInteger, nullable=False),
        sa.Column("ENGINE", sa.String(128), nullable=False),
        sa.Column("HISTOGRAM", sa.LargeBinary),
    ]


TAB_COL_STATS = sa.Table(
    "TAB_COL_STATS",
    metadata,
    _id_column("CS_ID"),
    sa.Column("TBL_ID", Id, sa.ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), nullable=False),
    *_stats_value_columns(),
    sa.Column("STATS_THRIFT", sa.LargeBinary),
    sa.UniqueConstraint("TBL_ID", "COLUMN_NAME", "ENGINE", name="TAB_COL_STATS_UNIQUE"),
)

PART_COL_STATS = sa.Table(
    "PART_COL_STATS",
    metadata,
    _id_column("CS_ID"),
    sa.Column("PART_ID", Id, sa.ForeignKey("PARTITIONS.PART_ID", ondelete="CASCADE"), nullable=False),
    *_stats_value_columns(),
    sa.Column("STATS_THRIFT", sa.LargeBinary),
    sa.UniqueConstraint("PART_ID", "COLUMN_NAME", "ENGINE", name="PART_COL_STATS_UNIQUE"),
)

# Columns of the statistics tables that carry values (everything but the surrogate key and the owner id).
STATS_VALUE_COLUMNS: tuple[str, ...] = tuple(c.name for c in _stats_value_columns())
# Not Hive's: each statistic as the Thrift ColumnStatisticsObj a default-configured server returns (no sketches,
# timestamps as longStats), written with the row (column_stats.rows.entry_to_row) so that batched reads can send the
# stored bytes instead of rebuilding thousands of objects per call (column_stats.encoded.partition_stats_encoded).
STATS_THRIFT = "STATS_THRIFT"
STATS_WRITE_COLUMNS: tuple[str, ...] = (*STATS_VALUE_COLUMNS, STATS_THRIFT)

# Legacy user-defined types (Hive 2.3's create_type/get_type; Hive 4 dropped the calls, not the tables).
# TYPE_FIELDS.TYPE_NAME holds the TYPES_ID, as in Hive.
TYPES = sa.Table(
    "TYPES",
    metadata,
    _id_column("TYPES_ID"),
    sa.Column("TYPE_NAME", sa.String(NAME_LEN), nullable=False, unique=True),
    sa.Column("TYPE1", sa.String(COLUMN_NAME_LEN)),
    sa.Column("TYPE2", sa.String(COLUMN_NAME_LEN)),
)

TYPE_FIELDS = sa.Table(
    "TYPE_FIELDS",
    metadata,
    sa.Column("TYPE_NAME", Id, sa.ForeignKey("TYPES.TYPES_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("FIELD_NAME", sa.String(NAME_LEN), primary_key=True),
    sa.Column("FIELD_TYPE", sa.String(COLUMN_NAME_LEN), nullable=False),
    sa.Column("COMMENT", sa.String(256)),
    sa.Column("INTEGER_IDX", sa.Integer, nullable=False),
)

# Permanent functions and their resources (jar, file, archive URIs), with Hive's names.
FUNCS = sa.Table(
    "FUNCS",
    metadata,
    _id_column("FUNC_ID"),
    sa.Column("DB_ID", Id, sa.ForeignKey("DBS.DB_ID", ondelete="CASCADE"), nullable=False),
    sa.Column("FUNC_NAME", sa.String(NAME_LEN), nullable=False),
    sa.Column("CLASS_NAME", sa.String(4000)),
    sa.Column("CREATE_TIME", sa.Integer, nullable=False),
    sa.Column("FUNC_TYPE", sa.Integer, nullable=False),
    sa.Column("OWNER_NAME", sa.String(NAME_LEN)),
    sa.Column("OWNER_TYPE", sa.String(10)),
    sa.UniqueConstraint("DB_ID", "FUNC_NAME", name="UNIQUEFUNCTION"),
)

FUNC_RU = sa.Table(
    "FUNC_RU",
    metadata,
    sa.Column("FUNC_ID", Id, sa.ForeignKey("FUNCS.FUNC_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("INTEGER_IDX", sa.Integer, primary_key=True),
    sa.Column("RESOURCE_TYPE", sa.Integer, nullable=False),
    sa.Column("RESOURCE_URI", sa.String(URI_LEN)),
)

# Not Hive's (issue 10): per-file partial statistics, so a re-ANALYZE from any host reads only changed files.
# A data file of a table (PART_ID NULL: of the unpartitioned table itself) or of a partition, valid for one size,
# modification time and version (an object store's ETag); its rows go with the table or partition (ON DELETE
# CASCADE). One row per file path within a table: a rewritten file replaces its row and partials.
DATA_FILES = sa.Table(
    "DATA_FILES",
    metadata,
    _id_column("FILE_ID"),
    sa.Column("TBL_ID", Id, sa.ForeignKey("TBLS.TBL_ID", ondelete="CASCADE"), nullable=False),
    sa.Column("PART_ID", Id, sa.ForeignKey("PARTITIONS.PART_ID", ondelete="CASCADE"), index=True),
    sa.Column("PATH", sa.String(URI_LEN), nullable=False),
    sa.Column("FILE_SIZE", sa.BigInteger, nullable=False),
    sa.Column("MTIME_NS", sa.BigInteger, nullable=False),
    sa.Column("FILE_VERSION", sa.String(256), nullable=False),
    sa.Column("NUM_ROWS", sa.BigInteger),
    sa.Column("RAW_DATA_SIZE", sa.BigInteger),
    # the client's facts about the file (its fields), opaque here
    sa.Column("INFO", sa.LargeBinary, nullable=False),
    sa.UniqueConstraint("TBL_ID", "PATH", name="DATA_FILES_UNIQUE"),
)

# One serialised ColumnPartial (counts, low/high, HLL and KLL sketches) per file and entry key (the column's
# field and types); what it holds (NDV, histogram) is recorded inside it.
DATA_FILE_PARTIALS = sa.Table(
    "DATA_FILE_PARTIALS",
    metadata,
    sa.Column("FILE_ID", Id, sa.ForeignKey("DATA_FILES.FILE_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("ENTRY_KEY", sa.String(COLUMN_NAME_LEN), primary_key=True),
    sa.Column("PARTIAL", sa.LargeBinary, nullable=False),
)

# ---------------------------------------------------------------------------------------------- issue 11
# Split-filtering indexes (metastore/index): not Hive's IDXS (Hive's own, removed in Hive 3). TBL_ID is set to
# NULL when the table row goes without the index (SHOW INDEX then says "Table dropped"); the service deletes
# the indexes of tables and partitions it drops. Part keys and file paths can be 4000 characters, more than a
# PostgreSQL B-tree entry may hold, so nothing unique is declared on them; the code keeps them unique.

SPLIT_INDEXES = sa.Table(
    "SPLIT_INDEXES",
    metadata,
    _id_column("INDEX_ID"),
    sa.Column("INDEX_NAME", sa.String(NAME_LEN), nullable=False, unique=True),
    sa.Column("TBL_ID", Id, sa.ForeignKey("TBLS.TBL_ID", ondelete="SET NULL"), index=True),
    sa.Column("DB_NAME", sa.String(NAME_LEN), nullable=False),
    sa.Column("TBL_NAME", sa.String(TABLE_NAME_LEN), nullable=False),
    sa.Column("COLUMN_NAME", sa.String(COLUMN_NAME_LEN), nullable=False),
    sa.Column("COLUMN_TYPE", sa.String(4000), nullable=False),
    sa.Column("INDEX_TYPE", sa.String(16), nullable=False),
    sa.Column("INDEX_LEVEL", sa.String(16), nullable=False),
    sa.Column("PROPERTIES", sa.Text, nullable=False),  # JSON object of the WITH (...) options
    sa.Column("PARTITIONS", sa.Text),  # JSON list of covered partition names; NULL: every partition
    sa.Column("LOCATION", sa.String(URI_LEN), nullable=False),
    sa.Column("STATE", sa.String(16), nullable=False),
    sa.Column("CREATE_TIME", sa.BigInteger, nullable=False),
    sa.Column("BUILD_TIME", sa.BigInteger, nullable=False),
    sa.Column("OWNER_NAME", sa.String(NAME_LEN)),
)

SPLIT_INDEX_PARTS = sa.Table(
    "SPLIT_INDEX_PARTS",
    metadata,
    _id_column("PART_ID"),
    sa.Column("INDEX_ID", Id, sa.ForeignKey("SPLIT_INDEXES.INDEX_ID", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("PART_KEY", sa.String(URI_LEN), nullable=False),
    sa.Column("PART_NAME", sa.String(PART_NAME_LEN), nullable=False),
    sa.Column("LOCATION", sa.String(URI_LEN), nullable=False),
    sa.Column("FILE_SIZE", sa.BigInteger, nullable=False),
)

SPLIT_INDEX_FILES = sa.Table(
    "SPLIT_INDEX_FILES",
    metadata,
    sa.Column("PART_ID", Id, sa.ForeignKey("SPLIT_INDEX_PARTS.PART_ID", ondelete="CASCADE"), primary_key=True),
    sa.Column("INTEGER_IDX", sa.Integer, primary_key=True),
    sa.Column("FILE_PATH", sa.String(URI_LEN), nullable=False),
    sa.Column("FILE_SIZE", sa.BigInteger, nullable=False),
    sa.Column("FILE_MTIME_NS", sa.BigInteger, nullable=False),
)
