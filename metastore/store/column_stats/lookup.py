"""Tables and partitions as a statistics writer or reader needs them: ids, columns and the parameters the
statistics depend on (numRows, COLUMN_STATS_ACCURATE), with the row locks writers take."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from metastore.catalog import FieldSchema
from metastore.stats.accurate import COLUMN_STATS_ACCURATE
from metastore.store.chunking import bind_list, in_list
from metastore.store.column_stats.statements import TABLE_BY_NAME, statements, table_names
from metastore.store.prepared import execute_prepared


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
        """`database.table`."""
        return f"{self.db_name}.{self.table_name}"

    def column(self, name: str) -> FieldSchema | None:
        """The data column called `name` (case-insensitive), or None."""
        if not self._by_name:
            self._by_name.update({c.name.lower(): c for c in self.columns})
        return self._by_name.get(name.lower())


@dataclass(frozen=True)
class PartitionTarget:
    """One partition as a statistics writer needs it."""

    part_id: int
    name: str
    stats_accurate: str | None


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

# Parameters of the prepared table lookups, in order, with their PostgreSQL types.
TABLE_NAME_PARAMS = (("db", "text"), ("catalog", "text"), ("tbl", "text"))


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
        'FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" WHERE t."TBL_ID" = :tbl_id' if by_id else TABLE_BY_NAME
    )
    return sa.text(
        f'SELECT t."TBL_ID", d."NAME", t."TBL_NAME", {_param("numRows")}, {_param(COLUMN_STATS_ACCURATE)}, '
        f"({cols}), ({keys}) {source}"
    )


def _json(value: Any) -> list[Any]:
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
    stmts = statements(conn)
    names = table_names(catalog, db_name, table_name)
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
            ("table_lock", lock), lambda: sa.text(f'SELECT t."TBL_ID" {TABLE_BY_NAME}{LOCK_CLAUSES[lock]}')
        )
        found = execute_prepared(
            conn, f"metastore_table_lock_{lock}", locking, TABLE_NAME_PARAMS, names, in_transaction=True
        )
        if not found:
            return None
        stmt = stmts.get(("table_target", True), lambda: _table_target_sql(stmts.dialect, by_id=True))
        rows = execute_prepared(
            conn, "metastore_table_target", stmt, (("tbl_id", "bigint"),), {"tbl_id": found[0][0]},
            in_transaction=True,
        )
        row = rows[0] if rows else None
    if row is None:
        return None
    tbl_id, db, tbl, num_rows, accurate, cols, keys = row
    return TableTarget(
        tbl_id=tbl_id,
        db_name=db,
        table_name=tbl,
        columns=_columns(cols),
        partition_keys=_keys(keys),
        num_rows=num_rows,
        stats_accurate=accurate,
    )


def partition_targets(
    conn: sa.Connection, tbl_id: int, partition_names: Sequence[str], *, lock: bool
) -> dict[str, PartitionTarget]:
    """{name: partition} for the named partitions of the table that exist. lock takes their row locks in
    PART_ID order (so concurrent writers of overlapping partitions cannot deadlock); their parameters are then
    read by a second statement, which sees what writers that held the locks before committed."""
    names = list(dict.fromkeys(partition_names))
    if not names:
        return {}
    stmts = statements(conn)
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
                + in_list('p."PART_NAME"', "names", dialect)
            ),
        )
        return {name: PartitionTarget(part_id, name, value) for part_id, name, value in conn.execute(stmt, params)}
    locking = stmts.get(
        ("partition_lock",),
        lambda: sa.text(
            'SELECT p."PART_ID", p."PART_NAME" FROM "PARTITIONS" p WHERE p."TBL_ID" = :tbl_id AND '
            + in_list('p."PART_NAME"', "names", dialect)
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
