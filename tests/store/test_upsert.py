"""Upserts and plain inserts of many rows: one statement built once, executed for every row."""

from __future__ import annotations

import sqlalchemy as sa

from metastore.store import Store
from metastore.store.schema import DATABASE_PARAMS
from metastore.store.upsert import insert_rows, upsert


def _params(store: Store, db_id: int) -> dict[str, str | None]:
    with store.read() as uow:
        rows = uow.connection.execute(
            sa.select(DATABASE_PARAMS.c.PARAM_KEY, DATABASE_PARAMS.c.PARAM_VALUE).where(DATABASE_PARAMS.c.DB_ID == db_id)
        )
        return {key: value for key, value in rows}


def test_upsert_and_insert_rows_store_the_same_rows_on_both_paths(store: Store) -> None:
    store.ensure_default_database("/warehouse")
    with store.read() as uow:
        db_id = uow.connection.execute(sa.text('SELECT "DB_ID" FROM "DBS" WHERE "NAME" = \'default\'')).scalar_one()

    def row(key: str, value: str | None = None, *, with_value: bool = True) -> dict[str, object]:
        out: dict[str, object] = {"DB_ID": db_id, "PARAM_KEY": key}
        if with_value:
            out["PARAM_VALUE"] = value
        return out

    for _ in range(2):  # the second time through the statements cached by the first
        with store.transaction() as uow:
            uow.connection.execute(sa.delete(DATABASE_PARAMS))
            insert_rows(uow.connection, DATABASE_PARAMS, [row("a", "1"), row("b", "2"), row("c", "3")])
            insert_rows(uow.connection, DATABASE_PARAMS, [row("d", with_value=False)])  # the value left out
        assert _params(store, db_id) == {"a": "1", "b": "2", "c": "3", "d": None}
        with store.transaction() as uow:
            # same columns: inserted or updated, in key order
            upsert(uow.connection, DATABASE_PARAMS, [row("b", "20"), row("e", "5"), row("a", "10")],
                   key=("DB_ID", "PARAM_KEY"))
        assert _params(store, db_id) == {"a": "10", "b": "20", "c": "3", "d": None, "e": "5"}
        with store.transaction() as uow:
            # only some columns updated on conflict
            upsert(uow.connection, DATABASE_PARAMS, [row("c", "30"), row("f", "6")], key=("DB_ID", "PARAM_KEY"),
                   update=())
        assert _params(store, db_id) == {"a": "10", "b": "20", "c": "3", "d": None, "e": "5", "f": "6"}
