"""Databases: create, get, list by pattern, alter, drop (with and without cascade)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from metastore.catalog import Database
from metastore.errors import AlreadyExists, InvalidInput, InvalidObject, InvalidOperation, NoSuchObject
from metastore.store import Store
from store.builders import sales_table


def test_default_database_exists_once(store: Store) -> None:
    assert store.ensure_default_database("/elsewhere") is False  # idempotent: the first call created it
    with store.read() as uow:
        default = uow.databases.get("default")
        assert uow.databases.list_names() == ["default"]
    # Hive puts `default` at the warehouse directory itself, qualified with the local filesystem.
    assert default.location_uri == "file:/warehouse"
    assert (default.owner_name, default.owner_type) == ("public", 2)


def test_default_database_present_is_checked_without_writing(store: Store) -> None:
    """Every open of an embedded client ensures `default`: when it and its catalog exist a read finds so and
    nothing is written; a catalog that lost its location still gets it back (the write path)."""
    statements: list[str] = []

    def seen(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement.split()[0].upper())

    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        assert store.ensure_default_database("/elsewhere") is False
        assert "SELECT" in statements and set(statements) <= {"BEGIN", "SELECT"}, statements  # (SQLite: a deferred BEGIN)
        with store.transaction() as uow:
            uow.connection.execute(sa.text('UPDATE "CTLGS" SET "LOCATION_URI" = NULL'))
        statements.clear()
        assert store.ensure_default_database("/elsewhere") is False
        assert "UPDATE" in statements, statements
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    with store.read() as uow:
        location = uow.connection.execute(sa.text('SELECT "LOCATION_URI" FROM "CTLGS"')).scalar_one()
        assert uow.databases.get("default").location_uri == "file:/warehouse"
    assert location == "file:/elsewhere"


def test_create_get_round_trip(store: Store) -> None:
    db = Database(
        name="Sales",
        description="sales data",
        location_uri="/warehouse/sales.db",
        parameters={"owner.team": "bi", "k": "v"},
        owner_name="alice",
        owner_type=1,
        create_time=1700000000,
        managed_location_uri="/managed/sales.db",
    )
    with store.transaction() as uow:
        uow.databases.create(db)
    with store.read() as uow:
        got = uow.databases.get("SALES")
    assert got == Database(**{**db.__dict__, "name": "sales"})


def test_create_errors(store: Store) -> None:
    with store.transaction() as uow:
        uow.databases.create(Database(name="a"))
    with pytest.raises(AlreadyExists, match="database a already exists"), store.transaction() as uow:
        uow.databases.create(Database(name="A"))
    for bad in ("", "a-b", "a b", "x" * 129, "dé"):
        with pytest.raises(InvalidObject), store.transaction() as uow:
            uow.databases.create(Database(name=bad))
    with pytest.raises(NoSuchObject, match="catalog spark"), store.transaction() as uow:
        uow.databases.create(Database(name="b", catalog_name="spark"))


def test_get_missing_database(store: Store) -> None:
    with pytest.raises(NoSuchObject, match="database nope does not exist"), store.read() as uow:
        uow.databases.get("nope")
    with store.read() as uow:
        assert not uow.databases.exists("nope") and uow.databases.exists("DEFAULT")


def test_list_by_hive_pattern(store: Store) -> None:
    with store.transaction() as uow:
        for name in ("sales", "sales_eu", "hr", "s.x"[0] + "x"):
            uow.databases.create(Database(name=name))
        assert uow.databases.list_names() == ["default", "hr", "sales", "sales_eu", "sx"]
        assert uow.databases.list_names("sales*") == ["sales", "sales_eu"]
        assert uow.databases.list_names("SALES") == ["sales"]
        assert uow.databases.list_names("hr|*eu") == ["hr", "sales_eu"]
        assert uow.databases.list_names("*") == uow.databases.list_names()
        # Hive's patterns are regular expressions (after `*` -> `.*`) matching the whole name.
        assert uow.databases.list_names("s.x") == []
        assert uow.databases.list_names("s.") == ["sx"]
        assert uow.databases.list_names("sales_[a-z]+") == ["sales_eu"]
        with pytest.raises(InvalidInput, match="'\\(' is not a valid regular expression"):
            uow.databases.list_names("(")


def test_alter_database(store: Store) -> None:
    with store.transaction() as uow:
        uow.databases.create(Database(name="a", parameters={"x": "1"}, create_time=5))
        uow.databases.alter(
            "a", Database(name="a", description="new", location_uri="/new", parameters={"y": "2"})
        )
        got = uow.databases.get("a")
        assert (got.description, got.location_uri, got.parameters, got.create_time) == (
            "new",
            "/new",
            {"y": "2"},
            5,
        )
        with pytest.raises(InvalidOperation, match="renamed"):
            uow.databases.alter("a", Database(name="b"))
        with pytest.raises(NoSuchObject):
            uow.databases.alter("zz", Database(name="zz"))


def test_drop_database(store: Store) -> None:
    with store.transaction() as uow:
        uow.databases.create(Database(name="empty", parameters={"k": "v"}))
        uow.databases.create(Database(name="sales"))
        uow.tables.create(sales_table())
    with store.transaction() as uow:
        assert uow.databases.drop("empty").name == "empty"
        with pytest.raises(InvalidOperation, match="not empty"):
            uow.databases.drop("sales")
    with store.transaction() as uow:
        with pytest.raises(InvalidOperation, match="default"):
            uow.databases.drop("default", cascade=True)
        with pytest.raises(NoSuchObject):
            uow.databases.drop("empty")
    with store.transaction() as uow:
        uow.databases.drop("sales", cascade=True)
        assert uow.databases.list_names() == ["default"]


def test_default_database_creation_races_safely(store_url: str) -> None:
    """Several server workers start at once on a fresh database: exactly one creates `default`."""
    import threading

    from metastore.store import Store

    st = Store(store_url)
    try:
        with st.transaction() as uow:  # back to a database without `default`
            uow.connection.execute(sa.text('DELETE FROM "DBS"'))
        results: list[bool] = []
        barrier = threading.Barrier(4)

        def start_worker() -> None:
            barrier.wait()
            results.append(st.ensure_default_database("/warehouse"))

        threads = [threading.Thread(target=start_worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(results) == [False, False, False, True]
        with st.read() as uow:
            assert uow.databases.list_names() == ["default"]
    finally:
        st.dispose()


def test_default_database_check_answers_as_the_rows_say(store: Store) -> None:
    """The one-statement check of catalog `hive` (with a location) and database `default` each open makes."""
    from metastore.store.databases import default_database_exists

    def exists() -> bool:
        with store.read() as uow:
            return default_database_exists(uow.connection)

    store.ensure_default_database("/warehouse")
    assert exists()
    with store.transaction() as uow:
        uow.connection.execute(sa.text('UPDATE "CTLGS" SET "LOCATION_URI" = NULL'))
    assert not exists()
    store.ensure_default_database("/warehouse")
    assert exists()
    with store.transaction() as uow:
        uow.connection.execute(sa.text('UPDATE "DBS" SET "NAME" = \'other\' WHERE "NAME" = \'default\''))
    assert not exists()
