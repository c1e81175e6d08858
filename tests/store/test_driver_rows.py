"""The hot prepared statements run on the DB-API cursor: same errors and events as SQLAlchemy's execute."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from metastore.store.engine import create_engine
from metastore.store.stats_direct import _driver_rows, _execute_prepared


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
        assert _driver_rows(conn, "SELECT %(a)s::int + 1, 'x'", {"a": 41}) == [(42, "x")]
        assert _driver_rows(conn, "SET LOCAL work_mem = '8MB'", None) == []
        with pytest.raises(sa.exc.DataError, match="division by zero"):
            _driver_rows(conn, "SELECT 1 / %(z)s::int", {"z": 0})
        conn.rollback()  # SQLAlchemy knows the transaction psycopg2 opened, so this really ends it
        with pytest.raises(sa.exc.ProgrammingError, match="no_such_table"):
            _driver_rows(conn, "SELECT * FROM no_such_table", None)
    assert [w for w, _ in seen] == ["before", "after", "before", "after", "before", "before"]
    assert seen[0][1] == "SELECT %(a)s::int + 1, 'x'"


def test_prepared_statement_inside_a_transaction_survives_a_lost_statement(pg_engine: sa.Engine) -> None:
    """in_transaction: the first use per connection asks pg_prepared_statements instead of failing (a failed
    EXECUTE would abort the caller's transaction); a statement lost outside one is prepared again."""
    stmt = "SELECT :x::int * 2"
    spec = (("x", "int"),)
    with pg_engine.connect() as conn:
        with conn.begin():
            assert _execute_prepared(conn, "t_double", stmt, spec, {"x": 4}, in_transaction=True) == [(8,)]
            assert _execute_prepared(conn, "t_double", stmt, spec, {"x": 5}, in_transaction=True) == [(10,)]
        conn.exec_driver_sql("DEALLOCATE t_double")
        conn.commit()
        dbapi = conn.connection.dbapi_connection
        dbapi.autocommit = True
        try:
            assert _execute_prepared(conn, "t_double", stmt, spec, {"x": 6}) == [(12,)]
        finally:
            dbapi.autocommit = False

