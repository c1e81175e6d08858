"""PostgreSQL server-side prepared statements run on the DB-API cursor: the hot statistics statements are
planned once per connection, and skip SQLAlchemy's execution context and result objects.

Why the cursor: on this machine `Connection.exec_driver_sql(...).all()` costs about 200 µs more per call than
the cursor (measured 2026-11-25, SQLAlchemy 2.1.9, psycopg2), more than PostgreSQL spends on these statements.
Listeners of the engine's before/after_cursor_execute events (statement counts, tracing) must still see every
statement, and SQLAlchemy has no public way to ask whether a connection has listeners or to fire them; this
module does both through `Connection._has_events` / `Connection.dispatch`, which is why pyproject.toml pins
SQLAlchemy below 2.2 and tests/store/test_driver_rows.py checks the assumption on the installed version. Those
private names are used in _cursor_events only.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from metastore.store.engine import dbapi_connection_of

_PREPARED = "metastore_prepared"
_PARAMETER = re.compile(r"(?<![:\w]):(\w+)")


def _cursor_events(conn: sa.Connection) -> Any:
    """The connection's event dispatcher when anyone listens to its (or its engine's) cursor events, else None."""
    if conn._has_events or conn.engine._has_events:  # see the module docstring
        return conn.dispatch
    return None


def driver_rows(conn: sa.Connection, sql: str, params: Mapping[str, Any] | None) -> Sequence[Any]:
    """Rows (tuples) of `sql` run on the connection's DB-API cursor, inside whatever transaction the
    connection is in. Errors arrive as SQLAlchemy's exceptions (sa.exc.DataError etc.; a lost connection is
    invalidated and flagged connection_invalidated, as conn.execute does), and listeners of the engine's
    before/after_cursor_execute events see every statement."""
    dbapi = dbapi_connection_of(conn)
    if not dbapi.autocommit and not conn.in_transaction():
        # What conn.execute's autobegin does: the transaction psycopg2 opens implicitly is then SQLAlchemy's to
        # end, and cannot go back to the pool still open.
        conn.begin()
    cursor = dbapi.cursor()
    events = _cursor_events(conn)
    try:
        if events is not None:
            events.before_cursor_execute(conn, cursor, sql, params, None, False)
        cursor.execute(sql, params)
        if events is not None:
            events.after_cursor_execute(conn, cursor, sql, params, None, False)
        return cursor.fetchall() if cursor.description is not None else []
    except conn.dialect.loaded_dbapi.Error as exc:
        lost = conn.dialect.is_disconnect(exc, dbapi, cursor)
        error = sa.exc.DBAPIError.instance(
            sql, params, exc, conn.dialect.loaded_dbapi.Error, dialect=conn.dialect, connection_invalidated=lost
        )
        if lost:
            conn.invalidate()  # never back to the pool
        raise error from exc
    finally:
        with contextlib.suppress(conn.dialect.loaded_dbapi.Error):  # the connection may be gone with it
            cursor.close()


def execute_prepared(
    conn: sa.Connection,
    name: str,
    stmt: sa.TextClause | str,
    params_spec: Sequence[tuple[str, str]],
    params: Mapping[str, Any],
    *,
    in_transaction: bool = False,
) -> Sequence[Any]:
    """Rows of `stmt` run as the prepared statement `name` of this database connection (PostgreSQL): planned
    once per connection instead of on every call, which is much of the cost of the hot statements.
    params_spec names the parameters in order with their PostgreSQL types (for PREPARE).

    Outside a transaction (autocommit) it is prepared on first use and prepared again if the connection lost it
    (a failed EXECUTE aborts nothing there). in_transaction: a failed statement would abort the caller's
    transaction, so on first use per connection it asks pg_prepared_statements instead of trying."""
    fairy = conn.connection
    known = fairy.info.setdefault(_PREPARED, {})
    dbapi = fairy.dbapi_connection
    # Each argument cast to its declared type: psycopg2 sends values as literals, and some have no type of
    # their own that PostgreSQL could coerce (ARRAY[NULL] is text[], which does not become bytea[]).
    execute = f"EXECUTE {name}(" + ", ".join(f"%({p})s::{t}" for p, t in params_spec) + ")"

    def run() -> Sequence[Any]:
        return driver_rows(conn, execute, params)

    def prepare() -> None:
        numbers = {p: f"${i}" for i, (p, _) in enumerate(params_spec, 1)}
        sql = _PARAMETER.sub(lambda m: numbers.get(m.group(1), m.group(0)), str(stmt))
        types = ", ".join(t for _, t in params_spec)
        driver_rows(conn, f"PREPARE {name}({types}) AS {sql}", None)

    if in_transaction:
        if known.get(name) != id(dbapi):
            exists = driver_rows(conn, "SELECT 1 FROM pg_prepared_statements WHERE name = %(name)s", {"name": name})
            if not exists:
                prepare()
            known[name] = id(dbapi)
        return run()
    for attempt in range(2):
        if known.get(name) != id(dbapi):
            try:
                prepare()
            except sa.exc.DBAPIError as exc:
                if getattr(exc.orig, "pgcode", None) != "42P05":  # duplicate_prepared_statement: already there
                    raise
            known[name] = id(dbapi)
        try:
            return run()
        except sa.exc.DBAPIError as exc:
            if attempt or getattr(exc.orig, "pgcode", None) != "26000":  # invalid_sql_statement_name
                raise
            known.pop(name, None)
    raise AssertionError("unreachable")  # pragma: no cover
