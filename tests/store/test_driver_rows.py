"""The hot prepared statements run on the DB-API cursor: same errors and events as SQLAlchemy's execute, on the
SQLAlchemy version installed (the private attributes store.prepared relies on, see its docstring)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from metastore.store.engine import create_engine
from metastore.store.prepared import driver_rows, execute_prepared


@pytest.fixture
def pg_engine(pg_url: str):
    engine = create_engine(pg_url, pool_size=1, max_overflow=0)
    yield engine
    engine.dispose()


def test_rows_errors_and_events(pg_engine: sa.Engine) -> None:
    seen: list[tuple[str, str]] = []
    sa.event.listen(pg_engine, "before_cursor_execute", lambda *a: seen.append(("before", a[2])))
    sa.event.listen(pg_engine, "after_cursor_execute", lambda *a: seen.append(("after", a[2])))
    with pg_engine.connect() as conn:
        assert driver_rows(conn, "SELECT %(a)s::int + 1, 'x'", {"a": 41}) == [(42, "x")]
        assert driver_rows(conn, "SET LOCAL work_mem = '8MB'", None) == []
        with pytest.raises(sa.exc.DataError, match="division by zero"):
            driver_rows(conn, "SELECT 1 / %(z)s::int", {"z": 0})
        conn.rollback()  # SQLAlchemy knows the transaction psycopg2 opened, so this really ends it
        with pytest.raises(sa.exc.ProgrammingError, match="no_such_table"):
            driver_rows(conn, "SELECT * FROM no_such_table", None)
    assert [w for w, _ in seen] == ["before", "after", "before", "after", "before", "before"]
    assert seen[0][1] == "SELECT %(a)s::int + 1, 'x'"


def test_prepared_statement_inside_a_transaction_survives_a_lost_statement(pg_engine: sa.Engine) -> None:
    """in_transaction: the first use per connection asks pg_prepared_statements instead of failing (a failed
    EXECUTE would abort the caller's transaction); a statement lost outside one is prepared again."""
    stmt = "SELECT :x::int * 2"
    spec = (("x", "int"),)
    with pg_engine.connect() as conn:
        with conn.begin():
            assert execute_prepared(conn, "t_double", stmt, spec, {"x": 4}, in_transaction=True) == [(8,)]
            assert execute_prepared(conn, "t_double", stmt, spec, {"x": 5}, in_transaction=True) == [(10,)]
        conn.exec_driver_sql("DEALLOCATE t_double")
        conn.commit()
        dbapi = conn.connection.dbapi_connection
        dbapi.autocommit = True
        try:
            assert execute_prepared(conn, "t_double", stmt, spec, {"x": 6}) == [(12,)]
        finally:
            dbapi.autocommit = False



def test_the_sqlalchemy_internals_relied_on_are_there(pg_engine: sa.Engine) -> None:
    """store.prepared asks Connection._has_events / Engine._has_events whether anyone listens and fires
    Connection.dispatch.before/after_cursor_execute itself: SQLAlchemy has no public API for either. This
    fails first if an upgrade moves them (pyproject.toml pins SQLAlchemy below 2.2 for that reason)."""
    with pg_engine.connect() as conn:
        assert conn._has_events is False and pg_engine._has_events is False
        assert callable(conn.dispatch.before_cursor_execute) and callable(conn.dispatch.after_cursor_execute)
    sa.event.listen(pg_engine, "before_cursor_execute", lambda *a: None)
    with pg_engine.connect() as conn:
        assert pg_engine._has_events is True
        assert len(conn.dispatch.before_cursor_execute) == 1 and len(conn.dispatch.after_cursor_execute) == 0


def test_a_lost_connection_is_flagged_and_never_pooled_again(pg_engine: sa.Engine, pg_url: str) -> None:
    """A connection the server terminated: the error says so (connection_invalidated, which the store turns
    into StoreUnavailable), and the pool hands out a fresh connection next."""
    admin = sa.create_engine(pg_url, isolation_level="AUTOCOMMIT")
    try:
        with pg_engine.connect() as conn:
            pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
            conn.commit()
            with admin.connect() as other:
                other.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            with pytest.raises(sa.exc.OperationalError) as caught:
                driver_rows(conn, "SELECT 1", None)
            assert caught.value.connection_invalidated
        with pg_engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT pg_backend_pid()").scalar() != pid
    finally:
        admin.dispose()
