"""Column statistics (TAB_COL_STATS, PART_COL_STATS), set-based: every call is a fixed handful of statements,
whatever the number of partitions and columns (IN lists are chunked at a thousand items).

Writes are INSERT ... ON CONFLICT DO UPDATE on the (owner, COLUMN_NAME, ENGINE) unique key, so concurrent
writers never create duplicate rows, and they keep COLUMN_STATS_ACCURATE in the owner's parameters current.
Reads fetch only the columns needed; bit vectors and histograms only when asked for.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE
from metastore.errors import NoSuchObject
from metastore.stats.model import ColumnStatsEntry
from metastore.stats.sql_rows import entry_to_row, row_reader
from metastore.store.chunking import chunks
from metastore.store.parameters import PARTITION_PARAMETERS, TABLE_PARAMETERS, ParameterTable
from metastore.store.refs import TableRef, table_exists, table_id_query, table_ref
from metastore.store.schema import (
    PART_COL_STATS,
    PARTITIONS,
    STATS_VALUE_COLUMNS,
    TAB_COL_STATS,
)
from metastore.store.stats_accurate import (
    COLUMN_STATS_ACCURATE,
    listed_columns,
    with_columns_accurate,
    without_columns,
)
from metastore.store.stats_aggregate import PartitionsAggregate, aggregate_partitions
from metastore.store.upsert import upsert

_TABLE_KEY = ("TBL_ID", "COLUMN_NAME", "ENGINE")
_PARTITION_KEY = ("PART_ID", "COLUMN_NAME", "ENGINE")


def _value_columns(table: sa.Table, *, bit_vectors: bool, histograms: bool) -> list[sa.Column]:
    skip = set()
    if not bit_vectors:
        skip.add("BIT_VECTOR")
    if not histograms:
        skip.add("HISTOGRAM")
    return [table.c[n] for n in STATS_VALUE_COLUMNS if n not in skip]


def _lower_unique(names: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(n.lower() for n in names))


def _now() -> int:
    return int(time.time())


class ColumnStatsRepository:
    """Write, read and delete table- and partition-level column statistics within one unit of work."""

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn

    # ------------------------------------------------------------------ table level

    def upsert_table(
        self,
        db_name: str,
        table_name: str,
        entries: Sequence[ColumnStatsEntry],
        *,
        engine: str = DEFAULT_ENGINE,
        last_analyzed: int | None = None,
        mark_accurate: bool = True,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """Insert or replace table-level statistics of the entries' columns (one row per column and engine).
        With mark_accurate the columns are added to the table's COLUMN_STATS_ACCURATE. NoSuchObject for a
        missing table; InvalidInput when an entry's kind does not fit its type."""
        ref = table_ref(self._conn, catalog, db_name, table_name, for_update=True)
        when = _now() if last_analyzed is None else last_analyzed
        rows = {}
        for e in entries:
            row = entry_to_row(e, engine=engine, last_analyzed=when)
            row["TBL_ID"] = ref.tbl_id
            rows[row["COLUMN_NAME"]] = row
        upsert(self._conn, TAB_COL_STATS, list(rows.values()), key=_TABLE_KEY)
        if mark_accurate and rows:
            current = TABLE_PARAMETERS.values_of(self._conn, [ref.tbl_id], COLUMN_STATS_ACCURATE).get(
                ref.tbl_id
            )
            TABLE_PARAMETERS.set_values(
                self._conn, COLUMN_STATS_ACCURATE, {ref.tbl_id: with_columns_accurate(current, rows)}
            )

    def get_table(
        self,
        db_name: str,
        table_name: str,
        columns: Sequence[str] | None = None,
        *,
        engine: str = DEFAULT_ENGINE,
        with_bit_vectors: bool = False,
        with_histograms: bool = False,
        for_update: bool = False,
        catalog: str = DEFAULT_CATALOG,
    ) -> list[ColumnStatsEntry]:
        """Table-level statistics of `columns` (all columns when None) that exist, in the order asked (by
        name when None). NoSuchObject for a missing table. for_update locks the table's statistics against
        concurrent writers until the transaction ends (read-merge-write)."""
        if for_update:
            owner: Any = table_ref(self._conn, catalog, db_name, table_name, for_update=True).tbl_id
        else:
            owner = table_id_query(catalog, db_name, table_name)
        value_cols = _value_columns(TAB_COL_STATS, bit_vectors=with_bit_vectors, histograms=with_histograms)
        base = sa.select(*value_cols).where(TAB_COL_STATS.c.TBL_ID == owner, TAB_COL_STATS.c.ENGINE == engine)
        read = row_reader(tuple(c.name for c in value_cols))
        if columns is None:
            entries = [read(r) for r in self._conn.execute(base.order_by(TAB_COL_STATS.c.COLUMN_NAME))]
        else:
            wanted = _lower_unique(columns)
            by_name = {}
            for batch in chunks(wanted):
                for r in self._conn.execute(base.where(TAB_COL_STATS.c.COLUMN_NAME.in_(batch))):
                    entry = read(r)
                    by_name[entry.column] = entry
            entries = [by_name[c] for c in wanted if c in by_name]
        if not entries and not for_update:
            table_ref(self._conn, catalog, db_name, table_name)  # NoSuchObject for a missing table
        return entries

    def last_analyzed(
        self,
        db_name: str,
        table_name: str,
        columns: Sequence[str] | None = None,
        *,
        partition_name: str | None = None,
        engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> int | None:
        """The latest LAST_ANALYZED of the table's (or one partition's) statistics of `columns`; None if none."""
        if partition_name is None:
            stats = TAB_COL_STATS
            query = sa.select(sa.func.max(stats.c.LAST_ANALYZED)).where(
                stats.c.TBL_ID == table_id_query(catalog, db_name, table_name)
            )
        else:
            stats = PART_COL_STATS
            query = (
                sa.select(sa.func.max(stats.c.LAST_ANALYZED))
                .join(PARTITIONS, PARTITIONS.c.PART_ID == stats.c.PART_ID)
                .where(
                    PARTITIONS.c.TBL_ID == table_id_query(catalog, db_name, table_name),
                    PARTITIONS.c.PART_NAME == partition_name,
                )
            )
        query = query.where(stats.c.ENGINE == engine)
        if columns is not None:
            query = query.where(stats.c.COLUMN_NAME.in_(_lower_unique(columns)))
        return self._conn.execute(query).scalar()

    def delete_table(
        self,
        db_name: str,
        table_name: str,
        columns: Sequence[str] | None = None,
        *,
        engine: str | None = None,
        catalog: str = DEFAULT_CATALOG,
    ) -> int:
        """Delete table-level statistics of `columns` (all when None) for one engine (all when None); returns
        the number of rows deleted and drops the columns from COLUMN_STATS_ACCURATE. NoSuchObject for a
        missing table."""
        ref = table_ref(self._conn, catalog, db_name, table_name, for_update=True)
        query = sa.delete(TAB_COL_STATS).where(TAB_COL_STATS.c.TBL_ID == ref.tbl_id)
        if engine is not None:
            query = query.where(TAB_COL_STATS.c.ENGINE == engine)
        deleted = 0
        if columns is None:
            deleted = self._conn.execute(query).rowcount
        else:
            for batch in chunks(_lower_unique(columns)):
                deleted += self._conn.execute(query.where(TAB_COL_STATS.c.COLUMN_NAME.in_(batch))).rowcount
        if deleted:
            _forget_accuracy_without_rows(self._conn, _TABLE_LEVEL, [ref.tbl_id], columns)
        return deleted

    # ------------------------------------------------------------------ partition level

    def upsert_partitions(
        self,
        db_name: str,
        table_name: str,
        entries_by_partition: Mapping[str, Sequence[ColumnStatsEntry]],
        *,
        engine: str = DEFAULT_ENGINE,
        last_analyzed: int | None = None,
        mark_accurate: bool = True,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """Insert or replace statistics for many partitions (by name) at once. NoSuchObject naming the
        partitions that do not exist; nothing is written then."""
        ref = table_ref(self._conn, catalog, db_name, table_name)
        part_ids = self._partition_ids(ref, list(entries_by_partition), lock=True)
        when = _now() if last_analyzed is None else last_analyzed
        rows: dict[tuple[int, str], dict[str, Any]] = {}
        columns_by_part: dict[int, list[str]] = {}
        for name, entries in entries_by_partition.items():
            part_id = part_ids[name]
            for e in entries:
                row = entry_to_row(e, engine=engine, last_analyzed=when)
                row["PART_ID"] = part_id
                rows[(part_id, row["COLUMN_NAME"])] = row
                columns_by_part.setdefault(part_id, []).append(row["COLUMN_NAME"])
        upsert(self._conn, PART_COL_STATS, list(rows.values()), key=_PARTITION_KEY)
        if mark_accurate and columns_by_part:
            current = PARTITION_PARAMETERS.values_of(self._conn, list(columns_by_part), COLUMN_STATS_ACCURATE)
            PARTITION_PARAMETERS.set_values(
                self._conn,
                COLUMN_STATS_ACCURATE,
                {pid: with_columns_accurate(current.get(pid), cols) for pid, cols in columns_by_part.items()},
            )

    def _partition_ids(self, ref: TableRef, names: Sequence[str], *, lock: bool = False) -> dict[str, int]:
        """{partition name: PART_ID}; NoSuchObject naming missing ones. lock takes the partitions' row locks
        (in PART_ID order, so concurrent writers cannot deadlock)."""
        wanted = list(dict.fromkeys(names))
        found: dict[str, int] = {}
        for batch in chunks(wanted):
            query = (
                sa.select(PARTITIONS.c.PART_ID, PARTITIONS.c.PART_NAME)
                .where(PARTITIONS.c.TBL_ID == ref.tbl_id, PARTITIONS.c.PART_NAME.in_(batch))
                .order_by(PARTITIONS.c.PART_ID)
            )
            if lock:
                query = query.with_for_update()
            found.update({r.PART_NAME: r.PART_ID for r in self._conn.execute(query)})
        missing = [n for n in wanted if n not in found]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise NoSuchObject(f"partition(s) of {ref.qualified_name} do not exist: {shown}")
        return found

    def get_partitions(
        self,
        db_name: str,
        table_name: str,
        partition_names: Sequence[str],
        columns: Sequence[str],
        *,
        engine: str = DEFAULT_ENGINE,
        with_bit_vectors: bool = False,
        with_histograms: bool = False,
        for_update: bool = False,
        catalog: str = DEFAULT_CATALOG,
    ) -> dict[str, list[ColumnStatsEntry]]:
        """{partition name: statistics of `columns` in the order asked} for the named partitions that have
        any; one query per thousand names. NoSuchObject for a missing table. for_update locks the partitions
        (read-merge-write)."""
        result: dict[str, list[ColumnStatsEntry]] = {}
        for name, entry in self._partition_rows(
            db_name,
            table_name,
            partition_names,
            columns,
            engine,
            with_bit_vectors,
            with_histograms,
            for_update,
            catalog,
        ):
            result.setdefault(name, []).append(entry)
        order = {c: i for i, c in enumerate(_lower_unique(columns))}
        for entries in result.values():
            entries.sort(key=lambda e: order[e.column])
        return result

    def rows_for_aggregation(
        self,
        db_name: str,
        table_name: str,
        partition_names: Sequence[str],
        columns: Sequence[str],
        *,
        engine: str = DEFAULT_ENGINE,
        with_bit_vectors: bool = True,
        with_histograms: bool = False,
        catalog: str = DEFAULT_CATALOG,
    ) -> list[tuple[str, ColumnStatsEntry]]:
        """(partition name, entry) for every stored statistic of the partitions × columns asked, in one query
        (per thousand names): the input of get_aggr_stats_for. NoSuchObject for a missing table."""
        return self._partition_rows(
            db_name,
            table_name,
            partition_names,
            columns,
            engine,
            with_bit_vectors,
            with_histograms,
            False,
            catalog,
        )

    def aggregate_partitions(
        self,
        db_name: str,
        table_name: str,
        partition_names: Sequence[str],
        columns: Sequence[str],
        *,
        engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> PartitionsAggregate:
        """The statistics of `columns` summed up over the named partitions by the database (Hive's direct-SQL
        get_aggr_stats_for: min/max/sums, max NDV as lower and sum as upper bound, average density), plus how
        many partitions have every column: one row per column whatever the partition count. NoSuchObject
        for a missing table."""
        result = aggregate_partitions(
            self._conn,
            table_id_query(catalog, db_name, table_name),
            list(dict.fromkeys(partition_names)),
            _lower_unique(columns),
            engine,
        )
        if not result.columns:
            table_ref(self._conn, catalog, db_name, table_name)  # NoSuchObject for a missing table
        return result

    def _partition_rows(
        self,
        db_name: str,
        table_name: str,
        partition_names: Sequence[str],
        columns: Sequence[str],
        engine: str,
        bit_vectors: bool,
        histograms: bool,
        for_update: bool,
        catalog: str,
    ) -> list[tuple[str, ColumnStatsEntry]]:
        names = list(dict.fromkeys(partition_names))
        cols = _lower_unique(columns)
        if for_update:
            ref = table_ref(self._conn, catalog, db_name, table_name)
            self._lock_existing_partitions(ref, names)
            owner: Any = ref.tbl_id
        else:
            owner = table_id_query(catalog, db_name, table_name)
        out: list[tuple[str, ColumnStatsEntry]] = []
        if names and cols:
            value_cols = _value_columns(PART_COL_STATS, bit_vectors=bit_vectors, histograms=histograms)
            read = row_reader(("PART_NAME", *(c.name for c in value_cols)))
            for name_batch in chunks(names):
                for col_batch in chunks(cols):
                    query = (
                        sa.select(PARTITIONS.c.PART_NAME, *value_cols)
                        .join(PART_COL_STATS, PART_COL_STATS.c.PART_ID == PARTITIONS.c.PART_ID)
                        .where(
                            PARTITIONS.c.TBL_ID == owner,
                            PARTITIONS.c.PART_NAME.in_(name_batch),
                            PART_COL_STATS.c.COLUMN_NAME.in_(col_batch),
                            PART_COL_STATS.c.ENGINE == engine,
                        )
                        .order_by(PARTITIONS.c.PART_NAME)
                    )
                    out.extend((r[0], read(r)) for r in self._conn.execute(query))
        if not out and not for_update and not table_exists(self._conn, catalog, db_name, table_name):
            table_ref(self._conn, catalog, db_name, table_name)  # raises NoSuchObject with the usual message
        return out

    def _lock_existing_partitions(self, ref: TableRef, names: Sequence[str]) -> None:
        for batch in chunks(list(names)):
            self._conn.execute(
                sa.select(PARTITIONS.c.PART_ID)
                .where(PARTITIONS.c.TBL_ID == ref.tbl_id, PARTITIONS.c.PART_NAME.in_(batch))
                .order_by(PARTITIONS.c.PART_ID)
                .with_for_update()
            ).all()

    def delete_partitions(
        self,
        db_name: str,
        table_name: str,
        partition_names: Sequence[str] | None = None,
        columns: Sequence[str] | None = None,
        *,
        engine: str | None = None,
        catalog: str = DEFAULT_CATALOG,
    ) -> int:
        """Delete partition-level statistics of the named partitions (all partitions when None) and
        `columns` (all when None), for one engine (all when None); returns the number of rows deleted and
        updates the partitions' COLUMN_STATS_ACCURATE. NoSuchObject for a missing table or named partition."""
        ref = table_ref(self._conn, catalog, db_name, table_name)
        if partition_names is None:
            owners: list[Any] = [sa.select(PARTITIONS.c.PART_ID).where(PARTITIONS.c.TBL_ID == ref.tbl_id)]
            # Lock the partitions first, in PART_ID order like statistics writers: the deletes renew the
            # partitions' STATS_VERSION (a trigger updates their rows), which must not deadlock with a writer
            # that holds partition locks and waits for a statistics row deleted here.
            self._conn.execute(owners[0].order_by(PARTITIONS.c.PART_ID).with_for_update()).all()
        else:
            ids = list(self._partition_ids(ref, partition_names, lock=True).values())
            owners = [list(batch) for batch in chunks(ids)]
        cols = None if columns is None else _lower_unique(columns)
        deleted = 0
        for owner in owners:
            query = sa.delete(PART_COL_STATS).where(PART_COL_STATS.c.PART_ID.in_(owner))
            if engine is not None:
                query = query.where(PART_COL_STATS.c.ENGINE == engine)
            if cols is None:
                deleted += self._conn.execute(query).rowcount
            else:
                for batch in chunks(cols):
                    deleted += self._conn.execute(
                        query.where(PART_COL_STATS.c.COLUMN_NAME.in_(batch))
                    ).rowcount
        if deleted:
            for owner in owners:
                _forget_accuracy_without_rows(self._conn, _PARTITION_LEVEL, owner, columns)
        return deleted


@dataclass(frozen=True)
class _Level:
    """Table- or partition-level statistics with the parameters their owners carry."""

    stats: sa.Table
    params: ParameterTable
    owner: str


_TABLE_LEVEL = _Level(TAB_COL_STATS, TABLE_PARAMETERS, "TBL_ID")
_PARTITION_LEVEL = _Level(PART_COL_STATS, PARTITION_PARAMETERS, "PART_ID")


def _forget_accuracy_without_rows(
    conn: sa.Connection, level: _Level, owners: Any, columns: Sequence[str] | None
) -> None:
    """After statistics were deleted: drop from the owners' COLUMN_STATS_ACCURATE the columns (of `columns`,
    or any) that have no statistics row left in any engine. `owners` is a list of ids or an id subquery."""
    params = level.params.table
    owner_param = params.c[level.owner]
    values = conn.execute(
        sa.select(owner_param, params.c.PARAM_VALUE).where(
            owner_param.in_(owners), params.c.PARAM_KEY == COLUMN_STATS_ACCURATE
        )
    ).all()
    if not values:
        return
    owner_stats = level.stats.c[level.owner]
    remaining_query = (
        sa.select(owner_stats, level.stats.c.COLUMN_NAME).where(owner_stats.in_(owners)).distinct()
    )
    wanted = None if columns is None else set(_lower_unique(columns))
    remaining = {(o, c) for o, c in conn.execute(remaining_query)}
    changed = {}
    for owner_id, raw in values:
        gone = [
            c
            for c in listed_columns(raw)
            if (wanted is None or c in wanted) and (owner_id, c) not in remaining
        ]
        if gone:
            changed[owner_id] = without_columns(raw, gone)
    if changed:
        level.params.set_values(conn, COLUMN_STATS_ACCURATE, changed)


def forget_columns(conn: sa.Connection, tbl_id: int, columns: Sequence[str]) -> None:
    """Delete the statistics of `columns` for a table and all its partitions, and drop them from the
    partitions' COLUMN_STATS_ACCURATE (used when columns are dropped or change type). The table's own
    parameters are the caller's: alter replaces them anyway."""
    cols = _lower_unique(columns)
    part_ids = sa.select(PARTITIONS.c.PART_ID).where(PARTITIONS.c.TBL_ID == tbl_id)
    for batch in chunks(cols):
        conn.execute(
            sa.delete(TAB_COL_STATS).where(
                TAB_COL_STATS.c.TBL_ID == tbl_id, TAB_COL_STATS.c.COLUMN_NAME.in_(batch)
            )
        )
        conn.execute(
            sa.delete(PART_COL_STATS).where(
                PART_COL_STATS.c.PART_ID.in_(part_ids), PART_COL_STATS.c.COLUMN_NAME.in_(batch)
            )
        )
    _forget_accuracy_without_rows(conn, _PARTITION_LEVEL, part_ids, cols)


def forget_partition_columns(conn: sa.Connection, columns_by_part: Mapping[int, Sequence[str]]) -> None:
    """Delete the statistics of some columns of some partitions ({PART_ID: columns})."""
    pairs = [{"p_part": pid, "p_col": c.lower()} for pid, cols in columns_by_part.items() for c in cols]
    if pairs:
        conn.execute(
            sa.delete(PART_COL_STATS).where(
                PART_COL_STATS.c.PART_ID == sa.bindparam("p_part"),
                PART_COL_STATS.c.COLUMN_NAME == sa.bindparam("p_col"),
            ),
            pairs,
        )
