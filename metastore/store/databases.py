"""Databases (DBS, DATABASE_PARAMS)."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from metastore.catalog import DEFAULT_CATALOG, DEFAULT_DATABASE, Database
from metastore.errors import AlreadyExists, InvalidOperation, NoSuchObject
from metastore.locations import qualify_directory
from metastore.store.identifiers import normalize, validate_database_name
from metastore.store.name_patterns import hive_name_matcher
from metastore.store.parameters import DATABASE_PARAMETERS
from metastore.store.principals import principal_type_code, principal_type_name
from metastore.store.refs import catalog_prefix, database_ref
from metastore.store.schema import CTLGS, DBS, TBLS
from metastore.store.tables import drop_tables
from metastore.store.upsert import insert_ignoring_duplicates


def _row(db: Database, name: str, catalog: str) -> dict[str, Any]:
    return {
        "NAME": name,
        "CTLG_NAME": catalog,
        "DESC": db.description,
        "DB_LOCATION_URI": db.location_uri,
        "DB_MANAGED_LOCATION_URI": db.managed_location_uri,
        "OWNER_NAME": db.owner_name,
        "OWNER_TYPE": principal_type_name(db.owner_type),
        "CREATE_TIME": db.create_time or int(time.time()),
    }


class DatabaseRepository:
    """Create, read, list, alter and drop databases within one unit of work."""

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn

    def create(self, db: Database) -> None:
        """Create a database; AlreadyExists if the name is taken, NoSuchObject for an unknown catalog."""
        name = validate_database_name(db.name)
        catalog = normalize(db.catalog_name)
        self._require_catalog(catalog)
        inserted = insert_ignoring_duplicates(
            self._conn, DBS, _row(db, name, catalog), key=("NAME", "CTLG_NAME")
        )
        if not inserted:
            raise AlreadyExists(f"database {catalog_prefix(catalog)}{name} already exists")
        db_id = database_ref(self._conn, catalog, name).db_id
        DATABASE_PARAMETERS.insert(self._conn, {db_id: db.parameters})

    def _require_catalog(self, catalog: str) -> None:
        if self._conn.execute(sa.select(CTLGS.c.CTLG_ID).where(CTLGS.c.NAME == catalog)).first() is None:
            raise NoSuchObject(f"catalog {catalog} does not exist")

    def get(self, name: str, *, catalog: str = DEFAULT_CATALOG) -> Database:
        """The database called `name`; NoSuchObject if there is none."""
        db_name, cat = normalize(name), normalize(catalog)
        row = self._conn.execute(sa.select(DBS).where(DBS.c.NAME == db_name, DBS.c.CTLG_NAME == cat)).first()
        if row is None:
            raise NoSuchObject(f"database {catalog_prefix(cat)}{db_name} does not exist")
        params = DATABASE_PARAMETERS.load(self._conn, [row.DB_ID])[row.DB_ID]
        return Database(
            name=row.NAME,
            description=row.DESC,
            location_uri=row.DB_LOCATION_URI,
            parameters=params,
            owner_name=row.OWNER_NAME,
            owner_type=principal_type_code(row.OWNER_TYPE),
            catalog_name=row.CTLG_NAME,
            create_time=row.CREATE_TIME or 0,
            managed_location_uri=row.DB_MANAGED_LOCATION_URI,
        )

    def exists(self, name: str, *, catalog: str = DEFAULT_CATALOG) -> bool:
        """Whether the database exists."""
        try:
            database_ref(self._conn, catalog, name)
        except NoSuchObject:
            return False
        return True

    def list_names(self, pattern: str | None = None, *, catalog: str = DEFAULT_CATALOG) -> list[str]:
        """Database names in order, optionally matching a Hive name pattern (regular expressions after `*` ->
        `.*`, `|` between alternatives, case-insensitive; see store/name_patterns.py)."""
        matches = hive_name_matcher(pattern)
        rows = self._conn.execute(
            sa.select(DBS.c.NAME).where(DBS.c.CTLG_NAME == normalize(catalog)).order_by(DBS.c.NAME)
        )
        return [r.NAME for r in rows if matches(r.NAME)]

    def alter(self, name: str, db: Database, *, catalog: str = DEFAULT_CATALOG) -> None:
        """Replace a database's definition (description, locations, owner, parameters); it cannot be renamed."""
        ref = database_ref(self._conn, catalog, name)
        if normalize(db.name) != ref.name:
            raise InvalidOperation(f"database {ref.name} cannot be renamed (to {db.name!r})")
        row = _row(db, ref.name, ref.catalog)
        if not db.create_time:
            del row["CREATE_TIME"]
        self._conn.execute(sa.update(DBS).where(DBS.c.DB_ID == ref.db_id).values(row))
        DATABASE_PARAMETERS.replace(self._conn, {ref.db_id: db.parameters})

    def drop(self, name: str, *, cascade: bool = False, catalog: str = DEFAULT_CATALOG) -> Database:
        """Drop a database and return what it was. Without cascade it must hold no table (InvalidOperation);
        with cascade its tables, partitions and statistics go too. The default database cannot be dropped."""
        db = self.get(name, catalog=catalog)
        ref = database_ref(self._conn, catalog, name)
        if ref.name == DEFAULT_DATABASE and ref.catalog == DEFAULT_CATALOG:
            raise InvalidOperation("the default database cannot be dropped")
        tbl_ids = [
            r[0] for r in self._conn.execute(sa.select(TBLS.c.TBL_ID).where(TBLS.c.DB_ID == ref.db_id))
        ]
        if tbl_ids and not cascade:
            raise InvalidOperation(
                f"database {ref.name} is not empty ({len(tbl_ids)} table(s)); drop it with cascade"
            )
        drop_tables(self._conn, tbl_ids)
        self._conn.execute(sa.delete(DBS).where(DBS.c.DB_ID == ref.db_id))
        return db


def default_database_exists(conn: sa.Connection) -> bool:
    """Whether catalog `hive` (with its location) and database `default` exist: what ensure_default_database
    would then leave as it is."""
    # one statement built once (an embedded client asks on every open: two Core selects cost ~0.5 ms to build)
    found = conn.execute(_DEFAULT_DATABASE_EXISTS, _DEFAULT_DATABASE_NAMES).scalar()
    return bool(found)


_DEFAULT_DATABASE_EXISTS = sa.text(
    'SELECT CASE WHEN EXISTS (SELECT 1 FROM "CTLGS" WHERE "NAME" = :catalog AND "LOCATION_URI" IS NOT NULL) '
    'AND EXISTS (SELECT 1 FROM "DBS" WHERE "NAME" = :database AND "CTLG_NAME" = :catalog) THEN 1 ELSE 0 END'
)
_DEFAULT_DATABASE_NAMES = {"catalog": DEFAULT_CATALOG, "database": DEFAULT_DATABASE}


def ensure_default_database(conn: sa.Connection, warehouse: str) -> bool:
    """Create catalog `hive` and database `default` (located at the warehouse directory itself, qualified as
    `file:/...` for a local path, as Hive does) unless they exist; True when this call created the database.
    Safe when several processes race."""
    now = int(time.time())
    warehouse = qualify_directory(warehouse)
    insert_ignoring_duplicates(
        conn,
        CTLGS,
        {
            "NAME": DEFAULT_CATALOG,
            "DESC": "Default catalog for Hive",
            "LOCATION_URI": warehouse,
            "CREATE_TIME": now,
        },
        key=("NAME",),
    )
    conn.execute(
        sa.update(CTLGS)
        .where(CTLGS.c.NAME == DEFAULT_CATALOG, CTLGS.c.LOCATION_URI.is_(None))
        .values(LOCATION_URI=warehouse)
    )
    default = Database(
        name=DEFAULT_DATABASE,
        description="Default Hive database",
        location_uri=warehouse,
        owner_name="public",
        owner_type=2,
        create_time=now,
    )
    return insert_ignoring_duplicates(
        conn, DBS, _row(default, DEFAULT_DATABASE, DEFAULT_CATALOG), key=("NAME", "CTLG_NAME")
    )
