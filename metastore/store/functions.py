"""Permanent functions (FUNCS, FUNC_RU): one row per function, one per resource, names in lower case as Hive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from metastore.functions import Function, FunctionResource
from metastore.store.identifiers import normalize
from metastore.store.principals import principal_type_code, principal_type_name
from metastore.store.refs import database_ref
from metastore.store.schema import DBS, FUNC_RU, FUNCS
from metastore.store.upsert import insert_ignoring_duplicates, insert_rows


class FunctionRepository:
    """Create, read, list, alter and drop functions within one unit of work (its connection)."""

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn

    def create(self, func: Function, catalog: str) -> bool:
        """Insert `func` in its database (NoSuchObject when the database does not exist); False, writing
        nothing, when the database already has a function of that name."""
        db = database_ref(self._conn, catalog, func.db_name)
        inserted = insert_ignoring_duplicates(
            self._conn, FUNCS, {"DB_ID": db.db_id, **self._row(func)}, key=("DB_ID", "FUNC_NAME")
        )
        if inserted:
            self._insert_resources(self._func_id(db.db_id, normalize(func.name)), func.resources)
        return inserted

    @staticmethod
    def _row(func: Function) -> dict[str, Any]:
        return {
            "FUNC_NAME": normalize(func.name),
            "CLASS_NAME": func.class_name,
            "CREATE_TIME": func.create_time,
            "FUNC_TYPE": func.function_type,
            "OWNER_NAME": func.owner_name,
            "OWNER_TYPE": principal_type_name(func.owner_type),
        }

    def _func_id(self, db_id: int, name: str) -> int | None:
        return self._conn.execute(
            sa.select(FUNCS.c.FUNC_ID).where(FUNCS.c.DB_ID == db_id, FUNCS.c.FUNC_NAME == name)
        ).scalar()

    def _insert_resources(self, func_id: int | None, resources: tuple[FunctionResource, ...]) -> None:
        insert_rows(self._conn, FUNC_RU, [
            {"FUNC_ID": func_id, "INTEGER_IDX": i, "RESOURCE_TYPE": r.resource_type, "RESOURCE_URI": r.uri}
            for i, r in enumerate(resources)
        ])

    def get(self, catalog: str, db_name: str, name: str) -> Function | None:
        """The function `db_name.name`, or None (also when the database does not exist)."""
        found = self._load(lambda q: q.where(
            DBS.c.CTLG_NAME == normalize(catalog), DBS.c.NAME == normalize(db_name), FUNCS.c.FUNC_NAME == normalize(name)
        ))
        return found[0] if found else None

    def list_all(self, catalog: str) -> list[Function]:
        """Every function of every database of the catalog, by database and name."""
        return self._load(lambda q: q.where(DBS.c.CTLG_NAME == normalize(catalog)))

    def names(self, catalog: str, db_name: str) -> list[str]:
        """The names of the database's functions, sorted (empty when the database does not exist)."""
        query = (
            sa.select(FUNCS.c.FUNC_NAME).join(DBS, DBS.c.DB_ID == FUNCS.c.DB_ID)
            .where(DBS.c.CTLG_NAME == normalize(catalog), DBS.c.NAME == normalize(db_name))
            .order_by(FUNCS.c.FUNC_NAME)
        )
        return list(self._conn.execute(query).scalars())

    def _load(self, where: Callable[[sa.Select[Any]], sa.Select[Any]]) -> list[Function]:
        query = where(
            sa.select(FUNCS, DBS.c.NAME.label("DB_NAME")).join(DBS, DBS.c.DB_ID == FUNCS.c.DB_ID)
        ).order_by(DBS.c.NAME, FUNCS.c.FUNC_NAME)
        rows = self._conn.execute(query).all()
        resources: dict[int, list[FunctionResource]] = {r.FUNC_ID: [] for r in rows}
        if rows:
            for ru in self._conn.execute(
                sa.select(FUNC_RU).where(FUNC_RU.c.FUNC_ID.in_(list(resources))).order_by(FUNC_RU.c.FUNC_ID, FUNC_RU.c.INTEGER_IDX)
            ):
                resources[ru.FUNC_ID].append(FunctionResource(resource_type=ru.RESOURCE_TYPE, uri=ru.RESOURCE_URI))
        return [
            Function(
                name=r.FUNC_NAME, db_name=r.DB_NAME, class_name=r.CLASS_NAME, owner_name=r.OWNER_NAME,
                owner_type=principal_type_code(r.OWNER_TYPE), create_time=r.CREATE_TIME, function_type=r.FUNC_TYPE,
                resources=tuple(resources[r.FUNC_ID]),
            )
            for r in rows
        ]

    def alter(self, catalog: str, db_name: str, name: str, new: Function) -> bool:
        """Replace name, database, owner, class and type of `db_name.name` with `new`'s (Hive 2.3 keeps the
        create time and the resources); False when there is no such function. NoSuchObject when `new`'s
        database does not exist; AlreadyExists (from the unique key) is the caller's to check beforehand."""
        old_db = database_ref(self._conn, catalog, db_name)
        func_id = self._func_id(old_db.db_id, normalize(name))
        if func_id is None:
            return False
        new_db = database_ref(self._conn, catalog, new.db_name)
        row = self._row(new)
        del row["CREATE_TIME"]
        self._conn.execute(sa.update(FUNCS).where(FUNCS.c.FUNC_ID == func_id).values(DB_ID=new_db.db_id, **row))
        return True

    def drop(self, catalog: str, db_name: str, name: str) -> bool:
        """Delete the function and its resources (ON DELETE CASCADE); False when there is none."""
        db_ids = sa.select(DBS.c.DB_ID).where(DBS.c.CTLG_NAME == normalize(catalog), DBS.c.NAME == normalize(db_name))
        result = self._conn.execute(
            sa.delete(FUNCS).where(FUNCS.c.DB_ID.in_(db_ids.scalar_subquery()), FUNCS.c.FUNC_NAME == normalize(name))
        )
        return result.rowcount > 0
