"""Resolving database and table names to their row ids, the first step of almost every store operation."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from metastore.catalog import DEFAULT_CATALOG, FieldSchema
from metastore.errors import NoSuchObject
from metastore.store.identifiers import normalize
from metastore.store.prepared import execute_prepared
from metastore.store.schema import DBS, PART_NAMES_VERSIONS, PARTITION_KEYS, SDS, TBLS


@dataclass(frozen=True)
class DatabaseRef:
    db_id: int
    name: str
    catalog: str


@dataclass(frozen=True)
class TableRef:
    tbl_id: int
    db_id: int
    sd_id: int | None
    cd_id: int | None
    db_name: str
    table_name: str
    catalog: str

    @property
    def qualified_name(self) -> str:
        return f"{self.db_name}.{self.table_name}"


def database_ref(conn: sa.Connection, catalog: str, name: str) -> DatabaseRef:
    """The database called `name`; NoSuchObject if there is none."""
    db_name = normalize(name)
    row = conn.execute(
        sa.select(DBS.c.DB_ID).where(DBS.c.NAME == db_name, DBS.c.CTLG_NAME == normalize(catalog))
    ).first()
    if row is None:
        raise NoSuchObject(f"database {catalog_prefix(catalog)}{db_name} does not exist")
    return DatabaseRef(db_id=row.DB_ID, name=db_name, catalog=normalize(catalog))


def table_id_query(catalog: str, db_name: str, table_name: str) -> sa.ScalarSelect[int]:
    """A scalar subquery giving the table's TBL_ID, to resolve and query in one statement."""
    return (
        sa.select(TBLS.c.TBL_ID)
        .join(DBS, DBS.c.DB_ID == TBLS.c.DB_ID)
        .where(
            DBS.c.NAME == normalize(db_name),
            DBS.c.CTLG_NAME == normalize(catalog),
            TBLS.c.TBL_NAME == normalize(table_name),
        )
        .scalar_subquery()
    )


def table_ref(
    conn: sa.Connection, catalog: str, db_name: str, table_name: str, *, for_update: bool = False
) -> TableRef:
    """The table `db_name.table_name`; NoSuchObject if it (or its database) does not exist.

    for_update locks the table's row until the transaction ends (PostgreSQL; SQLite write transactions are
    serialised anyway), so read-modify-write sequences on the table and its statistics do not interleave.
    """
    ref, _ = _table_ref(conn, catalog, db_name, table_name, for_update=for_update)
    return ref


def table_ref_and_names_version(
    conn: sa.Connection, catalog: str, db_name: str, table_name: str
) -> tuple[TableRef, int | None]:
    """table_ref and, in the same statement, the version of the table's set of partition names
    (PART_NAMES_VERSIONS, migration 0009; None when the table has no row there, as on SQLite). On PostgreSQL
    it runs as a server-side prepared statement on the DB-API cursor (the get_partition_names cache hit is this
    one statement: PostgreSQL plans it once per connection, and SQLAlchemy builds no statement or result)."""
    if conn.dialect.name != "postgresql":
        return _table_ref(conn, catalog, db_name, table_name, names_version=True)
    db, tbl, cat = normalize(db_name), normalize(table_name), normalize(catalog)
    rows = execute_prepared(
        conn, "metastore_names_version", _NAMES_VERSION_LOOKUP, _NAMES_VERSION_PARAMS,
        {"db": db, "catalog": cat, "tbl": tbl}, in_transaction=conn.in_transaction(),
    )
    if not rows:
        raise NoSuchObject(f"table {catalog_prefix(catalog)}{db}.{tbl} does not exist")
    tbl_id, db_id, sd_id, cd_id, version = rows[0]
    return TableRef(
        tbl_id=tbl_id, db_id=db_id, sd_id=sd_id, cd_id=cd_id, db_name=db, table_name=tbl, catalog=cat
    ), version


# _table_ref(names_version=True) as text for PREPARE (execute_prepared numbers the :parameters).
_NAMES_VERSION_LOOKUP = (
    'SELECT t."TBL_ID", t."DB_ID", t."SD_ID", s."CD_ID", v."VERSION" FROM "TBLS" t '
    'JOIN "DBS" d ON d."DB_ID" = t."DB_ID" LEFT JOIN "SDS" s ON s."SD_ID" = t."SD_ID" '
    'LEFT JOIN "PART_NAMES_VERSIONS" v ON v."TBL_ID" = t."TBL_ID" '
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl'
)
_NAMES_VERSION_PARAMS = (("db", "text"), ("catalog", "text"), ("tbl", "text"))


@functools.cache
def _table_query(*, for_update: bool, names_version: bool = False, keys: bool = False) -> sa.Select[Any]:
    """The table's TBL_ID, DB_ID, SD_ID and CD_ID, with its names version (names_version) or one row per
    partition key in order with the key's name, type and comment (keys; one row with NULLs when unpartitioned),
    for the names bound as :ref_db, :ref_catalog and :ref_tbl (_table_names). Built once per variant: nearly
    every request looks its table up, and building the statement cost more than running it."""
    source: sa.FromClause = TBLS.join(DBS, DBS.c.DB_ID == TBLS.c.DB_ID).outerjoin(SDS, SDS.c.SD_ID == TBLS.c.SD_ID)
    columns: list[sa.ColumnElement[Any]] = [TBLS.c.TBL_ID, TBLS.c.DB_ID, TBLS.c.SD_ID, SDS.c.CD_ID]
    if names_version:
        source = source.outerjoin(PART_NAMES_VERSIONS, PART_NAMES_VERSIONS.c.TBL_ID == TBLS.c.TBL_ID)
        columns.append(PART_NAMES_VERSIONS.c.VERSION)
    if keys:
        source = source.outerjoin(PARTITION_KEYS, PARTITION_KEYS.c.TBL_ID == TBLS.c.TBL_ID)
        columns += [PARTITION_KEYS.c.PKEY_NAME, PARTITION_KEYS.c.PKEY_TYPE, PARTITION_KEYS.c.PKEY_COMMENT]
    query = (
        sa.select(*columns)
        .select_from(source)
        .where(
            DBS.c.NAME == sa.bindparam("ref_db", type_=sa.String()),
            DBS.c.CTLG_NAME == sa.bindparam("ref_catalog", type_=sa.String()),
            TBLS.c.TBL_NAME == sa.bindparam("ref_tbl", type_=sa.String()),
        )
    )
    if keys:
        query = query.order_by(PARTITION_KEYS.c.INTEGER_IDX)
    if for_update:
        query = query.with_for_update(of=TBLS)
    return query


def _table_names(catalog: str, db: str, tbl: str) -> dict[str, str]:
    """The parameters of _table_query (db and tbl normalised already)."""
    return {"ref_db": db, "ref_catalog": normalize(catalog), "ref_tbl": tbl}


def _ref_of(row: Any, catalog: str, db: str, tbl: str) -> TableRef:
    return TableRef(tbl_id=row.TBL_ID, db_id=row.DB_ID, sd_id=row.SD_ID, cd_id=row.CD_ID, db_name=db, table_name=tbl,
                    catalog=normalize(catalog))


def _table_ref(
    conn: sa.Connection, catalog: str, db_name: str, table_name: str, *, for_update: bool = False,
    names_version: bool = False,
) -> tuple[TableRef, int | None]:
    db, tbl = normalize(db_name), normalize(table_name)
    row = conn.execute(_table_query(for_update=for_update, names_version=names_version),
                       _table_names(catalog, db, tbl)).first()
    if row is None:
        raise NoSuchObject(f"table {catalog_prefix(catalog)}{db}.{tbl} does not exist")
    return _ref_of(row, catalog, db, tbl), row[4] if names_version else None


def table_ref_and_keys(
    conn: sa.Connection, catalog: str, db_name: str, table_name: str, *, for_update: bool = False
) -> tuple[TableRef, list[FieldSchema]]:
    """table_ref and partition_keys in one statement (a row per key, one row for an unpartitioned table)."""
    db, tbl = normalize(db_name), normalize(table_name)
    rows = conn.execute(_table_query(for_update=for_update, keys=True), _table_names(catalog, db, tbl)).all()
    if not rows:
        raise NoSuchObject(f"table {catalog_prefix(catalog)}{db}.{tbl} does not exist")
    keys = [FieldSchema(name=r.PKEY_NAME, type=r.PKEY_TYPE, comment=r.PKEY_COMMENT) for r in rows
            if r.PKEY_NAME is not None]
    return _ref_of(rows[0], catalog, db, tbl), keys


def table_exists(conn: sa.Connection, catalog: str, db_name: str, table_name: str) -> bool:
    """Whether the table exists (no error either way)."""
    return conn.execute(sa.select(table_id_query(catalog, db_name, table_name))).scalar() is not None


def partition_keys(conn: sa.Connection, tbl_id: int) -> list[FieldSchema]:
    """The table's partition keys in order."""
    rows = conn.execute(
        sa.select(PARTITION_KEYS.c.PKEY_NAME, PARTITION_KEYS.c.PKEY_TYPE, PARTITION_KEYS.c.PKEY_COMMENT)
        .where(PARTITION_KEYS.c.TBL_ID == tbl_id)
        .order_by(PARTITION_KEYS.c.INTEGER_IDX)
    )
    return [FieldSchema(name=r.PKEY_NAME, type=r.PKEY_TYPE, comment=r.PKEY_COMMENT) for r in rows]


def catalog_prefix(catalog: str) -> str:
    """'' for Hive's default catalog, else 'catalog.' so messages name non-default catalogs."""
    return "" if normalize(catalog) == DEFAULT_CATALOG else f"{normalize(catalog)}."
