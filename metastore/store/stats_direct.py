"""Column statistics in direct SQL: the hot paths of the Thrift statistics calls in one statement each.

The repositories (column_stats, tables) compose general queries; for the calls clients make thousands of times
a second this module has fixed statements, built once per dialect, that resolve names and fetch or write
everything a call needs in one round trip (cf. Hive's MetaStoreDirectSql):

- `table_target`: a table as a statistics writer needs it (id, data columns, partition keys, numRows and
  COLUMN_STATS_ACCURATE), optionally locking the table row, instead of loading the whole table object;
- `table_stats` / `partition_stats`: statistics with LAST_ANALYZED, selected by names;
- `partition_targets`: partition ids (locked, in id order) with their COLUMN_STATS_ACCURATE;
- `upsert_table_rows` / `upsert_partition_rows`: INSERT ... ON CONFLICT DO UPDATE, batched by the driver.

Lists of names travel as one parameter (a PostgreSQL array, an SQLite JSON array), so the statements are the
same whatever the list length and the database can reuse their plans.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from metastore.catalog import FieldSchema
from metastore.stats.model import ColumnStatsEntry
from metastore.stats.sql_rows import row_reader
from metastore.store.schema import PART_COL_STATS, STATS_VALUE_COLUMNS, STATS_WRITE_COLUMNS, TAB_COL_STATS
from metastore.store.stats_accurate import COLUMN_STATS_ACCURATE

_NAMES_OF = ("COLUMN_NAME", "ENGINE")


@dataclass(frozen=True)
class TableTarget:
    """What writing or reading one table's statistics needs to know about the table."""

    tbl_id: int
    db_name: str
    table_name: str
    columns: tuple[FieldSchema, ...]
    partition_keys: tuple[str, ...]
    num_rows: str | None
    stats_accurate: str | None
    _by_name: dict[str, FieldSchema] = field(default_factory=dict, compare=False, repr=False)

    @property
    def qualified_name(self) -> str:
        return f"{self.db_name}.{self.table_name}"

    def column(self, name: str) -> FieldSchema | None:
        """The data column called `name` (case-insensitive), or None."""
        if not self._by_name:
            self._by_name.update({c.name.lower(): c for c in self.columns})
        return self._by_name.get(name.lower())


@dataclass(frozen=True)
class PartitionTarget:
    part_id: int
    name: str
    stats_accurate: str | None


def _in_list(column: str, param: str, dialect: str) -> str:
    """`column IN (the list bound as :param)`: see bind_list."""
    if dialect == "postgresql":
        return f"{column} = ANY(:{param})"
    return f"{column} IN (SELECT value FROM json_each(:{param}))"


def bind_list(values: Sequence[str], dialect: str) -> Any:
    """A list parameter for _in_list."""
    return list(values) if dialect == "postgresql" else json.dumps(list(values))


def _partition_params(
    dialect: str, catalog: str, db_name: str, table_name: str, engine: str, parts: list[str], cols: list[str]
) -> dict[str, Any]:
    """Parameters of the statements over named partitions and columns of one table."""
    return {
        "db": db_name.strip().lower(),
        "catalog": catalog.strip().lower(),
        "tbl": table_name.strip().lower(),
        "engine": engine,
        "parts": bind_list(parts, dialect),
        "columns": bind_list(cols, dialect),
    }


def _value_columns(alias: str, *, bit_vectors: bool, histograms: bool) -> str:
    skip = set()
    if not bit_vectors:
        skip.add("BIT_VECTOR")
    if not histograms:
        skip.add("HISTOGRAM")
    return ", ".join(f'{alias}."{c}"' for c in STATS_VALUE_COLUMNS if c not in skip)


_TABLE_BY_NAME = (
    'FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl'
)


# The statistics rows (alias s) of one table, by database, catalog, table name and engine; with partitions
# (alias pt) for PART_COL_STATS. Statements append their AND conditions.
_TABLE_STATS_ROWS = (
    'FROM "TAB_COL_STATS" s JOIN "TBLS" t ON t."TBL_ID" = s."TBL_ID" JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl AND s."ENGINE" = :engine '
)
_PARTITION_STATS_ROWS = (
    'FROM "PART_COL_STATS" s JOIN "PARTITIONS" pt ON pt."PART_ID" = s."PART_ID" '
    'JOIN "TBLS" t ON t."TBL_ID" = pt."TBL_ID" JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
    'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl AND s."ENGINE" = :engine '
)


class _Statements:
    """The statements of one dialect, built on first use."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self._cache: dict[tuple, Any] = {}

    def get(self, key: tuple, build: Callable[[], Any]) -> Any:
        stmt = self._cache.get(key)
        if stmt is None:
            stmt = self._cache[key] = build()
        return stmt


_STATEMENTS: dict[str, _Statements] = {}


def _statements(conn: sa.Connection) -> _Statements:
    name = conn.dialect.name
    found = _STATEMENTS.get(name)
    if found is None:
        found = _STATEMENTS[name] = _Statements(name)
    return found


def _param(key: str) -> str:
    return f'(SELECT p."PARAM_VALUE" FROM "TABLE_PARAMS" p WHERE p."TBL_ID" = t."TBL_ID" AND p."PARAM_KEY" = \'{key}\')'


# Row locks table_target may take on the table (PostgreSQL; SQLite write transactions are serialised anyway).
LOCK_CLAUSES = {
    None: "",
    # Blocks only FOR UPDATE: concurrent statistics writers proceed together, while alter/drop of the
    # table (which lock it FOR UPDATE) wait for them, so no statistics of a dropped column slip in.
    "share": " FOR KEY SHARE OF t",
    # Exclusive: read-merge-write of the table's statistics.
    "update": " FOR UPDATE OF t",
}


def _table_target_sql(dialect: str, by_id: bool) -> sa.TextClause:
    """The table's details by name, or by id (:tbl_id) after a separate locking statement."""
    agg, arr = ("json_agg", "json_build_array") if dialect == "postgresql" else ("json_group_array", "json_array")
    # As JSON text: the same text (a table's columns rarely change) is parsed once per process (_columns).
    text = "::text" if dialect == "postgresql" else ""
    cols = (
        f'SELECT {agg}({arr}(c."COLUMN_NAME", c."TYPE_NAME", c."COMMENT", c."INTEGER_IDX")){text} '
        'FROM "COLUMNS_V2" c JOIN "SDS" s ON s."CD_ID" = c."CD_ID" WHERE s."SD_ID" = t."SD_ID"'
    )
    keys = (
        f'SELECT {agg}({arr}(k."PKEY_NAME", k."INTEGER_IDX")){text} FROM "PARTITION_KEYS" k '
        'WHERE k."TBL_ID" = t."TBL_ID"'
    )
    source = (
        'FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" WHERE t."TBL_ID" = :tbl_id' if by_id else _TABLE_BY_NAME
    )
    return sa.text(
        f'SELECT t."TBL_ID", d."NAME", t."TBL_NAME", {_param("numRows")}, {_param(COLUMN_STATS_ACCURATE)}, '
        f"({cols}), ({keys}) {source}"
    )


def _json(value: Any) -> list:
    if value is None:
        return []
    return json.loads(value) if isinstance(value, str) else list(value)


@functools.lru_cache(maxsize=1024)
def _columns(text: str | None) -> tuple[FieldSchema, ...]:
    """A table's data columns from table_target's JSON text, in order."""
    return tuple(
        FieldSchema(name=name, type=type_, comment=comment)
        for name, type_, comment, _ in sorted(_json(text), key=lambda c: c[3])
    )


@functools.lru_cache(maxsize=1024)
def _keys(text: str | None) -> tuple[str, ...]:
    return tuple(name for name, _ in sorted(_json(text), key=lambda k: k[1]))


def table_target(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    *,
    lock: str | None = None,
    asynchronous_commit: bool = False,
) -> TableTarget | None:
    """The table `db_name.table_name` with its columns and statistics-related parameters, or None if it (or
    its database) does not exist. lock ("share" or "update", see LOCK_CLAUSES) holds the table's row until
    the transaction ends. asynchronous_commit (PostgreSQL, with a lock) also sets synchronous_commit off for
    the transaction, in the same round trip."""
    if lock not in LOCK_CLAUSES:
        raise ValueError(f"lock must be one of {sorted(k for k in LOCK_CLAUSES if k)} or None, got {lock!r}")
    stmts = _statements(conn)
    names = {"db": db_name.strip().lower(), "catalog": catalog.strip().lower(), "tbl": table_name.strip().lower()}
    if lock is None or stmts.dialect != "postgresql":
        stmt = stmts.get(("table_target", False), lambda: _table_target_sql(stmts.dialect, by_id=False))
        row = conn.execute(stmt, names).first()
    else:
        # Lock first, then read: a statement that waited for a lock still reads the other tables as they were
        # when it started (READ COMMITTED), so columns read in the locking statement could predate an ALTER
        # that committed meanwhile. The next statement sees it.
        # Both statements run prepared: planned once per connection (writes of one column are mostly this).
        if asynchronous_commit:
            conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
        locking = stmts.get(
            ("table_lock", lock), lambda: sa.text(f'SELECT t."TBL_ID" {_TABLE_BY_NAME}{LOCK_CLAUSES[lock]}')
        )
        found = _execute_prepared(
            conn, f"metastore_table_lock_{lock}", locking, _TABLE_NAME_PARAMS, names, in_transaction=True
        )
        if not found:
            return None
        stmt = stmts.get(("table_target", True), lambda: _table_target_sql(stmts.dialect, by_id=True))
        rows = _execute_prepared(
            conn, "metastore_table_target", stmt, (("tbl_id", "bigint"),), {"tbl_id": found[0][0]},
            in_transaction=True,
        )
        row = rows[0] if rows else None
    if row is None:
        return None
    tbl_id, db, tbl, num_rows, accurate, cols, keys = row
    columns, partition_keys = _columns(cols), _keys(keys)
    return TableTarget(
        tbl_id=tbl_id,
        db_name=db,
        table_name=tbl,
        columns=columns,
        partition_keys=partition_keys,
        num_rows=num_rows,
        stats_accurate=accurate,
    )


# ---------------------------------------------------------------- reads


@dataclass(frozen=True)
class _Read:
    stmt: sa.TextClause
    columns: tuple[str, ...]


def _read_statement(conn: sa.Connection, level: str, bit_vectors: bool, histograms: bool) -> _Read:
    stmts = _statements(conn)

    def build() -> _Read:
        values = _value_columns("s", bit_vectors=bit_vectors, histograms=histograms)
        columns_in = _in_list('s."COLUMN_NAME"', "columns", stmts.dialect)
        if level == "table":
            sql = f'SELECT {values}, s."LAST_ANALYZED" ' + _TABLE_STATS_ROWS + f"AND {columns_in}"
        else:
            parts_in = _in_list('pt."PART_NAME"', "parts", stmts.dialect)
            sql = (
                f'SELECT pt."PART_NAME", {values}, s."LAST_ANALYZED" '
                + _PARTITION_STATS_ROWS
                + f"AND {parts_in} AND {columns_in}"
            )
        names = [
            c
            for c in STATS_VALUE_COLUMNS
            if (bit_vectors or c != "BIT_VECTOR") and (histograms or c != "HISTOGRAM")
        ]
        columns = (("PART_NAME",) if level == "partition" else ()) + tuple(names) + ("LAST_ANALYZED",)
        return _Read(sa.text(sql), columns)

    return stmts.get(("read", level, bit_vectors, histograms), build)


def _lower_unique(names: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(n.lower() for n in names))


def table_stats(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    columns: Sequence[str],
    engine: str,
    *,
    bit_vectors: bool = False,
    histograms: bool = False,
    prepared: bool = False,
) -> list[tuple[ColumnStatsEntry, int]]:
    """(entry, LAST_ANALYZED) of the table-level statistics of `columns` that exist, in the order asked. An
    empty list also for a missing table: callers that must tell the two apart ask table_target.

    prepared (PostgreSQL, a connection in autocommit) runs it as a server-side prepared statement: the
    lookup is planned once per connection instead of on every call, which is most of its cost."""
    wanted = _lower_unique(columns)
    if not wanted:
        return []
    read = _read_statement(conn, "table", bit_vectors, histograms)
    decode = _reader(read.columns)
    rows = _table_stats_rows(
        conn, f"metastore_table_stats_{int(bit_vectors)}{int(histograms)}" if prepared else None, read.stmt,
        catalog, db_name, table_name, engine, wanted,
    )
    found = {}
    for row in rows:
        entry = decode(row)
        found[entry.column] = (entry, row[-1])
    return [found[c] for c in wanted if c in found]


def _table_stats_rows(
    conn: sa.Connection, prepared_name: str | None, stmt: sa.TextClause, catalog: str, db_name: str,
    table_name: str, engine: str, columns: list[str],
) -> list:
    """Rows of a statement over one table's statistics (:db, :catalog, :tbl, :engine, :columns), run as the
    prepared statement `prepared_name` on PostgreSQL when one is given."""
    params = {
        "db": db_name.strip().lower(),
        "catalog": catalog.strip().lower(),
        "tbl": table_name.strip().lower(),
        "engine": engine,
        "columns": bind_list(columns, conn.dialect.name),
    }
    if prepared_name and conn.dialect.name == "postgresql":
        return _execute_prepared(conn, prepared_name, stmt, _TABLE_STATS_PARAMS, params)
    return conn.execute(stmt, params).all()


# Parameters of the prepared statements, in order, with their PostgreSQL types (for PREPARE).
_TABLE_NAME_PARAMS = (("db", "text"), ("catalog", "text"), ("tbl", "text"))
_TABLE_STATS_PARAMS = (*_TABLE_NAME_PARAMS, ("engine", "text"), ("columns", "text[]"))
_PREPARED = "metastore_prepared"


def _driver_rows(conn: sa.Connection, sql: str, params: dict | None) -> list:
    """Rows (tuples) of `sql` run on the connection's DB-API cursor, inside whatever transaction the
    connection is in. The hot prepared statements skip SQLAlchemy's execution context and result objects,
    which cost more Python time than PostgreSQL spends on them. Errors still arrive as SQLAlchemy's
    exceptions (sa.exc.DataError etc.), and listeners of the engine's before/after_cursor_execute events
    (tracing, statement counts) still see every statement, as with conn.execute."""
    dbapi = conn.connection.dbapi_connection
    if not dbapi.autocommit and not conn.in_transaction():
        # What conn.execute's autobegin does: the transaction psycopg2 opens implicitly is then SQLAlchemy's to
        # end, and cannot go back to the pool still open.
        conn.begin()
    cursor = dbapi.cursor()
    events = conn._has_events or conn.engine._has_events
    try:
        if events:
            conn.dispatch.before_cursor_execute(conn, cursor, sql, params, None, False)
        cursor.execute(sql, params)
        if events:
            conn.dispatch.after_cursor_execute(conn, cursor, sql, params, None, False)
        return cursor.fetchall() if cursor.description is not None else []
    except conn.dialect.loaded_dbapi.Error as exc:
        raise sa.exc.DBAPIError.instance(
            sql, params, exc, conn.dialect.loaded_dbapi.Error, dialect=conn.dialect
        ) from exc
    finally:
        cursor.close()


def _execute_prepared(
    conn: sa.Connection,
    name: str,
    stmt: sa.TextClause | str,
    params_spec: Sequence[tuple[str, str]],
    params: dict,
    *,
    in_transaction: bool = False,
) -> list:
    """Rows of `stmt` run as the prepared statement `name` of this database connection (PostgreSQL): planned
    once per connection instead of on every call, which is much of the cost of the hot statements.

    Outside a transaction (autocommit) it is prepared on first use and prepared again if the connection lost it
    (a failed EXECUTE aborts nothing there). in_transaction: a failed statement would abort the caller's
    transaction, so on first use per connection it asks pg_prepared_statements instead of trying."""
    fairy = conn.connection
    known = fairy.info.setdefault(_PREPARED, {})
    dbapi = fairy.dbapi_connection
    # Each argument cast to its declared type: psycopg2 sends values as literals, and some have no type of
    # their own that PostgreSQL could coerce (ARRAY[NULL] is text[], which does not become bytea[]).
    execute = f"EXECUTE {name}(" + ", ".join(f"%({p})s::{t}" for p, t in params_spec) + ")"

    def run() -> list:
        return _driver_rows(conn, execute, params)

    def prepare() -> None:
        numbers = {p: f"${i}" for i, (p, _) in enumerate(params_spec, 1)}
        sql = re.sub(r"(?<![:\w]):(\w+)", lambda m: numbers.get(m.group(1), m.group(0)), str(stmt))
        types = ", ".join(t for _, t in params_spec)
        _driver_rows(conn, f"PREPARE {name}({types}) AS {sql}", None)

    if in_transaction:
        if known.get(name) != id(dbapi):
            exists = _driver_rows(
                conn, "SELECT 1 FROM pg_prepared_statements WHERE name = %(name)s", {"name": name}
            )
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


def partition_stats(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
    *,
    bit_vectors: bool = False,
    histograms: bool = False,
) -> list[tuple[str, ColumnStatsEntry, int]]:
    """(partition name, entry, LAST_ANALYZED) of the statistics of `columns` in the named partitions, in no
    particular order; one statement whatever the number of names."""
    parts = list(dict.fromkeys(partition_names))
    cols = _lower_unique(columns)
    if not parts or not cols:
        return []
    read = _read_statement(conn, "partition", bit_vectors, histograms)
    decode = _reader(read.columns[1:])
    dialect = conn.dialect.name
    rows = conn.execute(
        read.stmt,
        _partition_params(dialect, catalog, db_name, table_name, engine, parts, cols),
    )
    return [(row[0], decode(row[1:]), row[-1]) for row in rows.all()]


_IS_TIMESTAMP = "lower(s.\"COLUMN_TYPE\") LIKE 'timestamp%'"


def table_stats_encoded(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    columns: Sequence[str],
    engine: str,
    *,
    timestamps: bool = True,
    prepared: bool = False,
) -> tuple[int, bytes] | None:
    """(number of statistics, their STATS_THRIFT bytes concatenated in the order of `columns`) of the
    table-level statistics of `columns` that exist: the pre-encoded form of table_stats for a server with
    default settings; (0, b"") also for a missing table. None when the stored bytes cannot serve, as for
    partition_stats_encoded. prepared: as for table_stats."""
    wanted = _lower_unique(columns)
    if not wanted:
        return 0, b""
    stmts = _statements(conn)
    dialect = stmts.dialect
    stmt = stmts.get(
        ("table_stats_encoded",),
        lambda: sa.text(
            f'SELECT s."COLUMN_NAME", {_IS_TIMESTAMP}, s."STATS_THRIFT" '
            + _TABLE_STATS_ROWS
            + "AND "
            + _in_list('s."COLUMN_NAME"', "columns", dialect)
        ),
    )
    rows = _table_stats_rows(
        conn, "metastore_table_stats_encoded" if prepared else None, stmt, catalog, db_name, table_name, engine,
        wanted,
    )
    found = {}
    for column, is_timestamp, data in rows:
        if data is None or (is_timestamp and not timestamps):
            return None
        found[column] = bytes(data)
    objs = [found[c] for c in wanted if c in found]
    return len(objs), b"".join(objs)


def partition_stats_encoded(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
    *,
    timestamps: bool = True,
) -> list[tuple[str, int, bytes]] | None:
    """[(partition name, number of statistics, their STATS_THRIFT bytes concatenated in the order of
    `columns`)] for the named partitions that have statistics of any of `columns`: the pre-encoded form of
    partition_stats for a server with default settings. On PostgreSQL the database concatenates, so one row
    per partition crosses the wire.

    None when the stored bytes cannot serve the request: a row without them (written by hand) or, with
    timestamps=False (timestamp statistics served as Hive 4's timestampStats, not the stored longStats), a
    timestamp column among those found. Callers then read through partition_stats."""
    parts = list(dict.fromkeys(partition_names))
    cols = _lower_unique(columns)
    if not parts or not cols:
        return []
    stmts = _statements(conn)
    dialect = stmts.dialect
    params = _partition_params(dialect, catalog, db_name, table_name, engine, parts, cols)
    part_name, column_name = 'pt."PART_NAME"', 's."COLUMN_NAME"'
    where = (
        _PARTITION_STATS_ROWS
        + f"AND {_in_list(part_name, 'parts', dialect)} AND {_in_list(column_name, 'columns', dialect)}"
    )
    is_timestamp = _IS_TIMESTAMP
    if dialect == "postgresql":
        stmt = stmts.get(
            ("partition_stats_encoded",),
            lambda: sa.text(
                f'SELECT pt."PART_NAME", count(*), count(s."STATS_THRIFT"), bool_or({is_timestamp}), '
                f'string_agg(s."STATS_THRIFT", \'\'::bytea ORDER BY array_position(:columns, s."COLUMN_NAME")) '
                f'{where} GROUP BY pt."PART_NAME"'
            ),
        )
        out = []
        for name, count, encoded, has_timestamp, data in conn.execute(stmt, params):
            if encoded != count or (has_timestamp and not timestamps):
                return None
            out.append((name, count, data))
        return out
    stmt = stmts.get(
        ("partition_stats_encoded",),
        lambda: sa.text(
            f'SELECT pt."PART_NAME", s."COLUMN_NAME", {is_timestamp}, s."STATS_THRIFT" {where}'
        ),
    )
    order = {c: i for i, c in enumerate(cols)}
    grouped: dict[str, list[tuple[int, bytes]]] = {}
    for name, column, has_timestamp, data in conn.execute(stmt, params):
        if data is None or (has_timestamp and not timestamps):
            return None
        grouped.setdefault(name, []).append((order[column], data))
    return [
        (name, len(found), b"".join(data for _, data in sorted(found, key=lambda f: f[0])))
        for name, found in grouped.items()
    ]


def partitions_version(
    conn: sa.Connection, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str], *,
    prepared: bool = False,
) -> tuple[int, int, int] | None:
    """(TBL_ID, number of the named partitions that exist, sum of their STATS_VERSION) on PostgreSQL, where
    triggers renew a partition's STATS_VERSION whenever its statistics or its name change (migration 0003):
    the triple changes whenever the statistics of those names change. None for a missing table or on
    databases without the triggers.

    prepared (a connection in autocommit) runs it as a prepared statement, planned once per connection."""
    if conn.dialect.name != "postgresql":
        return None
    parts = list(dict.fromkeys(partition_names))
    if any("\x00" in name for name in parts):
        # JSON would carry it, but PostgreSQL text cannot: say so as for any other statement's parameters.
        raise ValueError("a partition name contains a NUL character")
    stmts = _statements(conn)
    stmt = stmts.get(
        ("partitions_version",),
        # The names are joined as a set rather than matched with PART_NAME = ANY(array), which compares every
        # partition of the table with every name (PostgreSQL CPU per check 0.78 -> 0.25 ms for 200 names).
        # They travel as one JSON array: psycopg2 quotes a Python list element by element, 5x slower.
        lambda: sa.text(
            'SELECT t."TBL_ID", v.found, v.total '
            'FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
            'CROSS JOIN LATERAL (SELECT count(pt."PART_ID") AS found, coalesce(sum(pt."STATS_VERSION"), 0) AS total '
            'FROM json_array_elements_text(CAST(:parts AS json)) AS n(name) '
            'JOIN "PARTITIONS" pt ON pt."TBL_ID" = t."TBL_ID" AND pt."PART_NAME" = n.name) AS v '
            'WHERE d."NAME" = :db AND d."CTLG_NAME" = :catalog AND t."TBL_NAME" = :tbl'
        ),
    )
    params = {
        "db": db_name.strip().lower(),
        "catalog": catalog.strip().lower(),
        "tbl": table_name.strip().lower(),
        "parts": json.dumps(parts),
    }
    if prepared:
        rows = _execute_prepared(conn, "metastore_partitions_version", stmt, _VERSION_PARAMS, params)
    else:
        rows = conn.execute(stmt, params).all()
    if not rows:
        return None
    tbl_id, count, total = rows[0]
    return int(tbl_id), int(count), int(total)


_VERSION_PARAMS = (("db", "text"), ("catalog", "text"), ("tbl", "text"), ("parts", "json"))


@dataclass(frozen=True)
class ColumnSums:
    """One column's statistics summed up by the database over the partitions that have them (one stored type)."""

    sums: ColumnStatsEntry  # lows = min, highs = max, nulls/trues/falses = sum, NDV and lengths = max; no
    # sketches; decimal bounds left out (SQLite cannot compare them exactly)
    partitions: int  # partitions with statistics of the column
    bit_vectors: int  # how many of them have a bitVector
    histograms: int  # how many of them have a histogram


def _sum_statement(dialect: str) -> tuple[sa.TextClause, tuple[str, ...]]:
    total = "CAST(sum({}) AS BIGINT)"
    parts_in = _in_list('pt."PART_NAME"', "parts", dialect)
    columns_in = _in_list('s."COLUMN_NAME"', "columns", dialect)
    select = {
        "COLUMN_NAME": 's."COLUMN_NAME"',
        "COLUMN_TYPE": 's."COLUMN_TYPE"',
        "LONG_LOW_VALUE": 'min(s."LONG_LOW_VALUE")',
        "LONG_HIGH_VALUE": 'max(s."LONG_HIGH_VALUE")',
        "DOUBLE_LOW_VALUE": 'min(s."DOUBLE_LOW_VALUE")',
        "DOUBLE_HIGH_VALUE": 'max(s."DOUBLE_HIGH_VALUE")',
        "BIG_DECIMAL_LOW_VALUE": "NULL",
        "BIG_DECIMAL_HIGH_VALUE": "NULL",
        "NUM_NULLS": total.format('s."NUM_NULLS"'),
        "NUM_DISTINCTS": 'max(s."NUM_DISTINCTS")',
        "AVG_COL_LEN": 'max(s."AVG_COL_LEN")',
        "MAX_COL_LEN": 'max(s."MAX_COL_LEN")',
        "NUM_TRUES": total.format('s."NUM_TRUES"'),
        "NUM_FALSES": total.format('s."NUM_FALSES"'),
        "PARTITIONS": "count(*)",
        "BIT_VECTORS": 'count(s."BIT_VECTOR")',
        "HISTOGRAMS": 'count(s."HISTOGRAM")',
    }
    sql = (
        "SELECT "
        + ", ".join(f'{expr} AS "{name}"' for name, expr in select.items())
        + " "
        + _PARTITION_STATS_ROWS
        + f'AND {parts_in} AND {columns_in} GROUP BY s."COLUMN_NAME", s."COLUMN_TYPE"'
    )
    return sa.text(sql), tuple(select)


def column_sums(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
) -> list[ColumnSums]:
    """Per column (and stored type) of `columns`, its statistics over the named partitions summed up by the
    database, with how many partitions carry sketches: one statement, one row per column."""
    parts = list(dict.fromkeys(partition_names))
    cols = _lower_unique(columns)
    if not parts or not cols:
        return []
    stmts = _statements(conn)
    stmt, names = stmts.get(("column_sums",), lambda: _sum_statement(stmts.dialect))
    decode = _reader(names)
    dialect = conn.dialect.name
    rows = conn.execute(
        stmt,
        _partition_params(dialect, catalog, db_name, table_name, engine, parts, cols),
    )
    return [ColumnSums(decode(row), int(row[-3]), int(row[-2]), int(row[-1])) for row in rows]


def partitions_with_every_column(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str],
    columns: Sequence[str],
    engine: str,
) -> int:
    """How many of the named partitions have statistics of every one of `columns` (Hive's partsFound)."""
    parts = list(dict.fromkeys(partition_names))
    cols = _lower_unique(columns)
    if not parts or not cols:
        return 0
    stmts = _statements(conn)

    def build() -> sa.TextClause:
        parts_in = _in_list('pt."PART_NAME"', "parts", stmts.dialect)
        columns_in = _in_list('s."COLUMN_NAME"', "columns", stmts.dialect)
        return sa.text(
            'SELECT count(*) FROM (SELECT s."PART_ID" '
            + _PARTITION_STATS_ROWS
            + f'AND {parts_in} AND {columns_in} GROUP BY s."PART_ID" HAVING count(*) = :ncols) found'
        )

    dialect = conn.dialect.name
    return int(
        conn.execute(
            stmts.get(("parts_found",), build),
            {**_partition_params(dialect, catalog, db_name, table_name, engine, parts, cols), "ncols": len(cols)},
        ).scalar_one()
    )


_READERS: dict[tuple[str, ...], Callable[[Sequence[Any]], ColumnStatsEntry]] = {}


def _reader(columns: tuple[str, ...]) -> Callable[[Sequence[Any]], ColumnStatsEntry]:
    found = _READERS.get(columns)
    if found is None:
        found = _READERS[columns] = row_reader(columns)
    return found


# ---------------------------------------------------------------- writes


def partition_targets(
    conn: sa.Connection, tbl_id: int, partition_names: Sequence[str], *, lock: bool
) -> dict[str, PartitionTarget]:
    """{name: partition} for the named partitions of the table that exist. lock takes their row locks in
    PART_ID order (so concurrent writers of overlapping partitions cannot deadlock); their parameters are then
    read by a second statement, which sees what writers that held the locks before committed."""
    names = list(dict.fromkeys(partition_names))
    if not names:
        return {}
    stmts = _statements(conn)
    dialect = stmts.dialect
    accurate = (
        '(SELECT pp."PARAM_VALUE" FROM "PARTITION_PARAMS" pp '
        f'WHERE pp."PART_ID" = p."PART_ID" AND pp."PARAM_KEY" = \'{COLUMN_STATS_ACCURATE}\')'
    )
    params = {"tbl_id": tbl_id, "names": bind_list(names, dialect)}
    if not lock or dialect != "postgresql":
        stmt = stmts.get(
            ("partition_targets",),
            lambda: sa.text(
                f'SELECT p."PART_ID", p."PART_NAME", {accurate} FROM "PARTITIONS" p WHERE p."TBL_ID" = :tbl_id AND '
                + _in_list('p."PART_NAME"', "names", dialect)
            ),
        )
        return {name: PartitionTarget(part_id, name, value) for part_id, name, value in conn.execute(stmt, params)}
    locking = stmts.get(
        ("partition_lock",),
        lambda: sa.text(
            'SELECT p."PART_ID", p."PART_NAME" FROM "PARTITIONS" p WHERE p."TBL_ID" = :tbl_id AND '
            + _in_list('p."PART_NAME"', "names", dialect)
            + ' ORDER BY p."PART_ID" FOR UPDATE OF p'
        ),
    )
    ids = {part_id: name for part_id, name in conn.execute(locking, params)}
    if not ids:
        return {}
    values = stmts.get(
        ("partition_accurate",),
        lambda: sa.text(
            'SELECT pp."PART_ID", pp."PARAM_VALUE" FROM "PARTITION_PARAMS" pp WHERE pp."PART_ID" = ANY(:ids) '
            f'AND pp."PARAM_KEY" = \'{COLUMN_STATS_ACCURATE}\''
        ),
    )
    found = dict(conn.execute(values, {"ids": list(ids)}).all())
    return {name: PartitionTarget(part_id, name, found.get(part_id)) for part_id, name in ids.items()}


_PARAMETER_TABLES = {"TABLE_PARAMS": "TBL_ID", "PARTITION_PARAMS": "PART_ID"}


def replace_parameter(
    conn: sa.Connection, table: str, owner_id: int, key: str, expected: str | None, value: str
) -> bool:
    """Set parameter `key` of one table or partition (table "TABLE_PARAMS" or "PARTITION_PARAMS") to `value`
    if it still is `expected` (None: absent); True when it did. A compare-and-set: concurrent writers of the
    same parameter need no lock on its owner, the loser re-reads and tries again."""
    owner = _PARAMETER_TABLES[table]
    stmts = _statements(conn)

    def build_update() -> sa.TextClause:
        return sa.text(
            f'UPDATE "{table}" SET "PARAM_VALUE" = :value WHERE "{owner}" = :owner AND "PARAM_KEY" = :key '
            'AND "PARAM_VALUE" = :expected'
        )

    def build_insert() -> sa.TextClause:
        return sa.text(
            f'INSERT INTO "{table}" ("{owner}", "PARAM_KEY", "PARAM_VALUE") VALUES (:owner, :key, :value) '
            f'ON CONFLICT ("{owner}", "PARAM_KEY") DO NOTHING'
        )

    params = {"owner": owner_id, "key": key, "value": value, "expected": expected}
    if expected is None:
        del params["expected"]
        return conn.execute(stmts.get(("param_insert", table), build_insert), params).rowcount == 1
    return conn.execute(stmts.get(("param_update", table), build_update), params).rowcount == 1


def read_parameter(conn: sa.Connection, table: str, owner_id: int, key: str) -> str | None:
    """The current value of one parameter of a table or partition (None when absent)."""
    owner = _PARAMETER_TABLES[table]
    stmts = _statements(conn)
    stmt = stmts.get(
        ("param_read", table),
        lambda: sa.text(f'SELECT "PARAM_VALUE" FROM "{table}" WHERE "{owner}" = :owner AND "PARAM_KEY" = :key'),
    )
    return conn.execute(stmt, {"owner": owner_id, "key": key}).scalar()


def _upsert_statement(conn: sa.Connection, table: sa.Table, owner: str) -> Any:
    stmts = _statements(conn)

    def build() -> Any:
        insert = postgresql.insert(table) if stmts.dialect == "postgresql" else sqlite.insert(table)
        keys = (owner, *_NAMES_OF)
        return insert.on_conflict_do_update(
            index_elements=[table.c[k] for k in keys],
            set_={c: insert.excluded[c] for c in STATS_WRITE_COLUMNS if c not in keys},
        )

    return stmts.get(("upsert", table.name), build)


def _upsert(conn: sa.Connection, table: sa.Table, owner: str, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    if len(rows) == 1 and conn.dialect.name == "postgresql":
        # The common write of one statistic: a prepared statement, planned once per connection.
        spec, sql = _prepared_upsert(table, owner)
        _execute_prepared(conn, f"metastore_upsert_{table.name.lower()}", sql, spec, rows[0], in_transaction=True)
        return
    ordered = sorted(rows, key=lambda r: (r[owner], r["COLUMN_NAME"], r["ENGINE"]))
    conn.execute(_upsert_statement(conn, table, owner), ordered)


_PG_TYPES = {sa.BigInteger: "bigint", sa.Double: "float8", sa.String: "text", sa.LargeBinary: "bytea"}


def _pg_type(column: sa.Column) -> str:
    for cls, name in _PG_TYPES.items():
        if isinstance(column.type, cls):
            return name
    raise TypeError(f"no PostgreSQL parameter type for {column.name} ({column.type})")  # pragma: no cover


@functools.cache
def _prepared_upsert(table: sa.Table, owner: str) -> tuple[tuple[tuple[str, str], ...], str]:
    """(parameters with their types, SQL) of INSERT ... ON CONFLICT DO UPDATE of one statistics row."""
    columns = (owner, *STATS_WRITE_COLUMNS)
    spec = tuple((c, _pg_type(table.c[c])) for c in columns)
    keys = (owner, *_NAMES_OF)
    sql = (
        f'INSERT INTO "{table.name}" (' + ", ".join(f'"{c}"' for c in columns) + ") VALUES ("
        + ", ".join(f":{c}" for c in columns) + ") ON CONFLICT (" + ", ".join(f'"{c}"' for c in keys)
        + ") DO UPDATE SET " + ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c not in keys)
    )
    return spec, sql


def upsert_table_rows(conn: sa.Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert or replace TAB_COL_STATS rows (each with TBL_ID and every value column); sorted by key so that
    concurrent writers take row locks in the same order."""
    _upsert(conn, TAB_COL_STATS, "TBL_ID", rows)


def upsert_partition_rows(conn: sa.Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert or replace PART_COL_STATS rows (each with PART_ID and every value column)."""
    _upsert(conn, PART_COL_STATS, "PART_ID", rows)


# ---------------------------------------------------------------- one-round-trip writes


# The arguments of metastore_put_table_stats (migration 0004) in order, with their types: the table as the caller
# validated against it, then the rows as JSON.
_PUT_TABLE_STATS_PARAMS = (
    ("catalog", "text"), ("db", "text"), ("tbl", "text"), ("tbl_id", "bigint"), ("columns", "text[]"),
    ("types", "text[]"), ("num_rows", "text"), ("accurate", "text"), ("synchronous", "boolean"), ("rows", "json"),
)


def _json_value(value: Any) -> Any:
    """A row value as json_populate_recordset reads it into its column: bytea as \\x-hex text, floats as text
    (exact: repr round-trips, and infinities, which JSON numbers cannot carry, pass)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, float):
        return repr(value)
    return value


def rows_json(rows: Sequence[dict[str, Any]]) -> str:
    """Statistics rows (STATS_WRITE_COLUMNS) as the JSON array metastore_put_table_stats takes."""
    # Absent keys read as NULL.
    return json.dumps(
        [{c: _json_value(r[c]) for c in STATS_WRITE_COLUMNS if r[c] is not None} for r in rows], allow_nan=False
    )


def put_table_stats(
    conn: sa.Connection,
    catalog: str,
    target: TableTarget,
    columns: Sequence[FieldSchema],
    rows: Sequence[dict[str, Any]],
    *,
    synchronous_commit: bool = True,
) -> bool:
    """Upsert the TAB_COL_STATS `rows` (without TBL_ID) of the table `target` in one round trip, provided the
    table still is as `target` describes it: the same id under its name, `columns` with their types, numRows
    and COLUMN_STATS_ACCURATE. False, with nothing written, when anything differs: the caller then takes the
    general path. PostgreSQL only (the function comes with migration 0004), on a connection in autocommit: the
    call is its own transaction."""
    ordered = sorted(rows, key=lambda r: (r["COLUMN_NAME"], r["ENGINE"]))  # row locks in one order
    params: dict[str, Any] = {
        "catalog": catalog.strip().lower(),
        "db": target.db_name,
        "tbl": target.table_name,
        "tbl_id": target.tbl_id,
        "columns": [c.name for c in columns],
        "types": [c.type for c in columns],
        "num_rows": target.num_rows,
        "accurate": target.stats_accurate,
        "synchronous": synchronous_commit,
        "rows": rows_json(ordered),
    }
    stmt = "SELECT metastore_put_table_stats(" + ", ".join(f":{p}" for p, _ in _PUT_TABLE_STATS_PARAMS) + ")"
    found = _execute_prepared(conn, "metastore_put_table_stats", stmt, _PUT_TABLE_STATS_PARAMS, params)
    return bool(found and found[0][0])
