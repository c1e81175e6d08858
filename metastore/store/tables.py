"""Tables (TBLS, TABLE_PARAMS, PARTITION_KEYS and the table's storage descriptor)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from metastore.catalog import DEFAULT_CATALOG, FieldSchema, Table
from metastore.errors import AlreadyExists, InvalidOperation, NoSuchObject
from metastore.stats.accurate import params_with_columns_removed
from metastore.store import column_stats
from metastore.store.child_rows import ChildKind, parameters_of
from metastore.store.chunking import chunks
from metastore.store.identifiers import (
    normalize,
    validate_columns,
    validate_database_name,
    validate_table_name,
)
from metastore.store.name_patterns import hive_name_matcher
from metastore.store.parameters import TABLE_PARAMETERS
from metastore.store.principals import principal_type_code, principal_type_name
from metastore.store.refs import TableRef, catalog_prefix, database_ref, table_ref
from metastore.store.schema import DBS, PARTITION_KEYS, PARTITIONS, SDS, TBLS
from metastore.store.storage import (
    StorageRef,
    delete_storage,
    delete_unused_column_descriptors,
    dropped_or_retyped,
    insert_column_descriptor,
    insert_storage,
    load_columns,
    load_storage_with,
    partition_storage_ids,
    replace_storage,
    same_columns,
    table_storage_ids,
)


def _table_row(table: Table, db_id: int, sd_id: int | None, name: str) -> dict[str, Any]:
    return {
        "DB_ID": db_id,
        "SD_ID": sd_id,
        "TBL_NAME": name,
        "TBL_TYPE": table.table_type,
        "OWNER": table.owner,
        "OWNER_TYPE": principal_type_name(table.owner_type),
        "CREATE_TIME": table.create_time or int(time.time()),
        "LAST_ACCESS_TIME": table.last_access_time,
        "RETENTION": table.retention,
        "VIEW_ORIGINAL_TEXT": table.view_original_text,
        "VIEW_EXPANDED_TEXT": table.view_expanded_text,
        "IS_REWRITE_ENABLED": bool(table.rewrite_enabled),
        "WRITE_ID": table.write_id,
    }


def _validated_schema(table: Table, where: str) -> tuple[list[FieldSchema], list[FieldSchema]]:
    """(data columns, partition keys), names lower-cased; InvalidObject for bad definitions. A partition key
    may also be a data column: Hive 2.3 accepts such tables (its own tests create them)."""
    cols = validate_columns(table.sd.cols, where)
    keys = validate_columns(table.partition_keys, where, what="partition key")
    return cols, keys


class TableRepository:
    """Create, read, list, alter and drop tables within one unit of work."""

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn

    # ------------------------------------------------------------------ create

    def create(self, table: Table) -> None:
        """Create a table. AlreadyExists if the name is taken, NoSuchObject for a missing database,
        InvalidObject for bad names, columns or partition keys."""
        db_name = validate_database_name(table.db_name)
        name = validate_table_name(table.table_name)
        where = f"table {db_name}.{name}"
        cols, keys = _validated_schema(table, where)
        db = database_ref(self._conn, table.catalog_name, db_name)
        if self._find(db.db_id, name) is not None:
            raise AlreadyExists(f"table {catalog_prefix(db.catalog)}{db_name}.{name} already exists")
        cd_id = insert_column_descriptor(self._conn, cols)
        (sd_id,) = insert_storage(self._conn, [table.sd], [cd_id])
        try:
            tbl_id = self._conn.execute(
                sa.insert(TBLS).values(_table_row(table, db.db_id, sd_id, name)).returning(TBLS.c.TBL_ID)
            ).scalar_one()
        except sa.exc.IntegrityError:  # a concurrent create won the race; this transaction rolls back
            raise AlreadyExists(
                f"table {catalog_prefix(db.catalog)}{db_name}.{name} already exists"
            ) from None
        TABLE_PARAMETERS.insert(self._conn, {tbl_id: table.parameters})
        self._insert_partition_keys(tbl_id, keys)

    def _insert_partition_keys(self, tbl_id: int, keys: Sequence[FieldSchema]) -> None:
        if keys:
            self._conn.execute(
                sa.insert(PARTITION_KEYS).values(
                    [
                        {
                            "TBL_ID": tbl_id,
                            "PKEY_NAME": k.name,
                            "PKEY_TYPE": k.type,
                            "PKEY_COMMENT": k.comment,
                            "INTEGER_IDX": i,
                        }
                        for i, k in enumerate(keys)
                    ]
                )
            )

    def _find(self, db_id: int, name: str) -> int | None:
        return self._conn.execute(
            sa.select(TBLS.c.TBL_ID).where(TBLS.c.DB_ID == db_id, TBLS.c.TBL_NAME == name)
        ).scalar()

    # ------------------------------------------------------------------ read

    def get(self, db_name: str, table_name: str, *, catalog: str = DEFAULT_CATALOG) -> Table:
        """The table; NoSuchObject if it or its database does not exist."""
        tables = self._load(
            (DBS.c.NAME == normalize(db_name))
            & (DBS.c.CTLG_NAME == normalize(catalog))
            & (TBLS.c.TBL_NAME == normalize(table_name))
        )
        if not tables:
            raise NoSuchObject(
                f"table {catalog_prefix(catalog)}{normalize(db_name)}.{normalize(table_name)} does not exist"
            )
        return tables[0]

    def get_many(
        self, db_name: str, table_names: Sequence[str], *, catalog: str = DEFAULT_CATALOG
    ) -> list[Table]:
        """The tables that exist among `table_names`, in the order asked (missing ones are left out)."""
        wanted = list(dict.fromkeys(normalize(n) for n in table_names))
        found: dict[str, Table] = {}
        for batch in chunks(wanted):
            for t in self._load(
                (DBS.c.NAME == normalize(db_name))
                & (DBS.c.CTLG_NAME == normalize(catalog))
                & TBLS.c.TBL_NAME.in_(batch)
            ):
                found[t.table_name] = t
        return [found[n] for n in wanted if n in found]

    def exists(self, db_name: str, table_name: str, *, catalog: str = DEFAULT_CATALOG) -> bool:
        """Whether the table exists."""
        try:
            table_ref(self._conn, catalog, db_name, table_name)
        except NoSuchObject:
            return False
        return True

    def list_names(
        self,
        db_name: str,
        pattern: str | None = None,
        *,
        table_type: str | None = None,
        catalog: str = DEFAULT_CATALOG,
    ) -> list[str]:
        """Table names of a database in order, optionally matching a Hive pattern and of one TBL_TYPE
        (MANAGED_TABLE, EXTERNAL_TABLE, VIRTUAL_VIEW...). Empty for a missing database, as in Hive."""
        query = (
            sa.select(TBLS.c.TBL_NAME)
            .join(DBS, DBS.c.DB_ID == TBLS.c.DB_ID)
            .where(DBS.c.NAME == normalize(db_name), DBS.c.CTLG_NAME == normalize(catalog))
            .order_by(TBLS.c.TBL_NAME)
        )
        if table_type is not None:
            query = query.where(TBLS.c.TBL_TYPE == table_type)
        matches = hive_name_matcher(pattern)
        return [r.TBL_NAME for r in self._conn.execute(query) if matches(r.TBL_NAME)]

    def _load(self, condition: sa.ColumnElement[bool]) -> list[Table]:
        rows = self._conn.execute(
            sa.select(TBLS, DBS.c.NAME.label("DB_NAME"), DBS.c.CTLG_NAME)
            .join(DBS, DBS.c.DB_ID == TBLS.c.DB_ID)
            .where(condition)
            .order_by(TBLS.c.TBL_NAME)
        ).all()
        if not rows:
            return []
        tbl_ids = [r.TBL_ID for r in rows]
        # the descriptors, then their child rows with the tables' parameters and partition keys: one statement
        table_params = TABLE_PARAMETERS.table
        sds, (param_rows, key_rows) = load_storage_with(self._conn, [r.SD_ID for r in rows if r.SD_ID is not None], [
            ChildKind(TABLE_PARAMETERS.owner_column, tbl_ids, (table_params.c.PARAM_KEY, table_params.c.PARAM_VALUE)),
            ChildKind(PARTITION_KEYS.c.TBL_ID, tbl_ids,
                      (PARTITION_KEYS.c.PKEY_NAME, PARTITION_KEYS.c.PKEY_TYPE, PARTITION_KEYS.c.PKEY_COMMENT),
                      position=PARTITION_KEYS.c.INTEGER_IDX),
        ])
        params = parameters_of(param_rows, tbl_ids)
        keys: dict[int, list[FieldSchema]] = {t: [] for t in tbl_ids}
        for tbl_id, name, type_name, comment, _ in key_rows:
            keys[tbl_id].append(FieldSchema(name=name, type=type_name, comment=comment))
        out = []
        for r in rows:
            kwargs: dict[str, Any] = {}
            if r.SD_ID in sds:
                kwargs["sd"] = sds[r.SD_ID]
            out.append(
                Table(
                    db_name=r.DB_NAME,
                    table_name=r.TBL_NAME,
                    owner=r.OWNER,
                    create_time=r.CREATE_TIME,
                    last_access_time=r.LAST_ACCESS_TIME,
                    retention=r.RETENTION,
                    partition_keys=keys[r.TBL_ID],
                    parameters=params[r.TBL_ID],
                    view_original_text=r.VIEW_ORIGINAL_TEXT,
                    view_expanded_text=r.VIEW_EXPANDED_TEXT,
                    table_type=r.TBL_TYPE,
                    rewrite_enabled=bool(r.IS_REWRITE_ENABLED),
                    catalog_name=r.CTLG_NAME,
                    owner_type=principal_type_code(r.OWNER_TYPE),
                    write_id=r.WRITE_ID,
                    **kwargs,
                )
            )
        return out

    # ------------------------------------------------------------------ alter

    def alter(
        self,
        db_name: str,
        table_name: str,
        new_table: Table,
        *,
        cascade: bool = False,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """Replace the table's definition with `new_table`, which may name another database and/or table
        (a rename; statistics follow). Statistics of columns dropped or retyped are deleted, for the table and
        every partition, and those columns leave COLUMN_STATS_ACCURATE. `cascade` also gives every partition
        the new column list (Hive's ALTER TABLE ... CASCADE). Partition keys cannot change
        (InvalidOperation); a taken target name is AlreadyExists."""
        ref = table_ref(self._conn, catalog, db_name, table_name, for_update=True)
        new_db = validate_database_name(new_table.db_name)
        new_name = validate_table_name(new_table.table_name)
        where = f"table {new_db}.{new_name}"
        cols, keys = _validated_schema(new_table, where)
        target_db_id = ref.db_id
        if (new_db, new_name) != (ref.db_name, ref.table_name):
            target_db_id = database_ref(self._conn, catalog, new_db).db_id
            if self._find(target_db_id, new_name) is not None:
                raise AlreadyExists(f"cannot rename {ref.qualified_name} to {new_db}.{new_name}: it exists")
        self._check_partition_keys(ref, keys)

        old_cols = load_columns(self._conn, [ref.cd_id]).get(ref.cd_id, []) if ref.cd_id is not None else []
        lost = dropped_or_retyped(old_cols, cols)
        # A changed column list gets a new descriptor: partitions keep pointing at the old one (their columns
        # do not change unless cascade), as in Hive.
        cd_id = (
            ref.cd_id
            if ref.cd_id is not None and same_columns(old_cols, cols)
            else insert_column_descriptor(self._conn, cols)
        )
        if ref.sd_id is None:
            (sd_id,) = insert_storage(self._conn, [new_table.sd], [cd_id])
        else:
            sd_id = ref.sd_id
            serde_id = self._conn.execute(sa.select(SDS.c.SERDE_ID).where(SDS.c.SD_ID == sd_id)).scalar()
            replace_storage(self._conn, [StorageRef(sd_id, serde_id, cd_id)], [new_table.sd], [cd_id])
        row = _table_row(new_table, target_db_id, sd_id, new_name)
        if not new_table.create_time:
            del row["CREATE_TIME"]
        try:
            self._conn.execute(sa.update(TBLS).where(TBLS.c.TBL_ID == ref.tbl_id).values(row))
        except sa.exc.IntegrityError:  # a concurrent create or rename took the name
            raise AlreadyExists(
                f"cannot rename {ref.qualified_name} to {new_db}.{new_name}: it exists"
            ) from None
        params = params_with_columns_removed(new_table.parameters, lost) if lost else new_table.parameters
        TABLE_PARAMETERS.replace(self._conn, {ref.tbl_id: params})
        self._conn.execute(sa.delete(PARTITION_KEYS).where(PARTITION_KEYS.c.TBL_ID == ref.tbl_id))
        self._insert_partition_keys(ref.tbl_id, keys)
        if lost:
            column_stats.forget_columns(self._conn, ref.tbl_id, lost)
        replaced_cds = [] if ref.cd_id is None or cd_id == ref.cd_id else [ref.cd_id]
        if cascade:
            part_sds = (
                sa.select(PARTITIONS.c.SD_ID).where(PARTITIONS.c.TBL_ID == ref.tbl_id).scalar_subquery()
            )
            replaced_cds += [
                r[0]
                for r in self._conn.execute(
                    sa.select(SDS.c.CD_ID).where(SDS.c.SD_ID.in_(part_sds), SDS.c.CD_ID != cd_id).distinct()
                )
            ]
            self._conn.execute(sa.update(SDS).where(SDS.c.SD_ID.in_(part_sds)).values(CD_ID=cd_id))
        delete_unused_column_descriptors(self._conn, replaced_cds)

    def _check_partition_keys(self, ref: TableRef, keys: Sequence[FieldSchema]) -> None:
        old = self._conn.execute(
            sa.select(PARTITION_KEYS.c.PKEY_NAME, PARTITION_KEYS.c.PKEY_TYPE)
            .where(PARTITION_KEYS.c.TBL_ID == ref.tbl_id)
            .order_by(PARTITION_KEYS.c.INTEGER_IDX)
        ).all()
        if [(n, t.strip().lower()) for n, t in old] != [(k.name, k.type.strip().lower()) for k in keys]:
            raise InvalidOperation(
                f"partition keys of {ref.qualified_name} cannot be changed "
                f"(from {[n for n, _ in old]} to {[k.name for k in keys]})"
            )

    def update_parameters(
        self,
        db_name: str,
        table_name: str,
        changes: Mapping[str, str | None],
        *,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """Set (value) or remove (None) some table parameters without replacing the whole table (e.g. numRows
        after ANALYZE). Locks the table against concurrent parameter writers."""
        ref = table_ref(self._conn, catalog, db_name, table_name, for_update=True)
        TABLE_PARAMETERS.update(self._conn, {ref.tbl_id: changes})

    # ------------------------------------------------------------------ drop

    def drop(self, db_name: str, table_name: str, *, catalog: str = DEFAULT_CATALOG) -> Table:
        """Drop a table with its partitions and statistics; returns what it was (for deleting its data)."""
        table = self.get(db_name, table_name, catalog=catalog)
        ref = table_ref(self._conn, catalog, db_name, table_name, for_update=True)
        drop_tables(self._conn, [ref.tbl_id])
        return table


def drop_tables(conn: sa.Connection, tbl_ids: Sequence[int]) -> None:
    """Delete tables by id with everything hanging off them. Statistics, parameters, partition keys,
    partitions and their key values go by ON DELETE CASCADE; storage descriptors are collected first because
    the tables and partitions refer to them, not the other way round."""
    if not tbl_ids:
        return
    sd_ids = partition_storage_ids(conn, tbl_ids) + table_storage_ids(conn, tbl_ids)
    for batch in chunks(list(tbl_ids)):
        conn.execute(sa.delete(TBLS).where(TBLS.c.TBL_ID.in_(batch)))
    delete_storage(conn, sd_ids)
