"""Deletes of statistics: by request, and when columns are dropped or change type; they keep the owners'
COLUMN_STATS_ACCURATE in step (a column without statistics rows in any engine is no longer listed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from metastore.errors import NoSuchObject
from metastore.stats.accurate import COLUMN_STATS_ACCURATE, listed_columns, without_columns
from metastore.store.chunking import chunks
from metastore.store.column_stats.statements import lower_unique
from metastore.store.parameters import PARTITION_PARAMETERS, TABLE_PARAMETERS, ParameterTable
from metastore.store.refs import TableRef, table_ref
from metastore.store.schema import PART_COL_STATS, PARTITIONS, TAB_COL_STATS


def delete_table_stats(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    columns: Sequence[str] | None = None,
    *,
    engine: str | None = None,
) -> int:
    """Delete table-level statistics of `columns` (all when None) for one engine (all when None); returns
    the number of rows deleted and drops the columns from COLUMN_STATS_ACCURATE. NoSuchObject for a
    missing table."""
    ref = table_ref(conn, catalog, db_name, table_name, for_update=True)
    query = sa.delete(TAB_COL_STATS).where(TAB_COL_STATS.c.TBL_ID == ref.tbl_id)
    if engine is not None:
        query = query.where(TAB_COL_STATS.c.ENGINE == engine)
    deleted = 0
    if columns is None:
        deleted = conn.execute(query).rowcount
    else:
        for batch in chunks(lower_unique(columns)):
            deleted += conn.execute(query.where(TAB_COL_STATS.c.COLUMN_NAME.in_(batch))).rowcount
    if deleted:
        _forget_accuracy_without_rows(conn, _TABLE_LEVEL, [ref.tbl_id], columns)
    return deleted


def _partition_ids(conn: sa.Connection, ref: TableRef, names: Sequence[str]) -> dict[str, int]:
    """{partition name: PART_ID}, the partitions locked in PART_ID order (as statistics writers lock them, so
    they cannot deadlock); NoSuchObject naming missing ones."""
    wanted = list(dict.fromkeys(names))
    found: dict[str, int] = {}
    for batch in chunks(wanted):
        query = (
            sa.select(PARTITIONS.c.PART_ID, PARTITIONS.c.PART_NAME)
            .where(PARTITIONS.c.TBL_ID == ref.tbl_id, PARTITIONS.c.PART_NAME.in_(batch))
            .order_by(PARTITIONS.c.PART_ID)
            .with_for_update()
        )
        found.update({r.PART_NAME: r.PART_ID for r in conn.execute(query)})
    missing = [n for n in wanted if n not in found]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise NoSuchObject(f"partition(s) of {ref.qualified_name} do not exist: {shown}")
    return found


def delete_partition_stats(
    conn: sa.Connection,
    catalog: str,
    db_name: str,
    table_name: str,
    partition_names: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    *,
    engine: str | None = None,
) -> int:
    """Delete partition-level statistics of the named partitions (all partitions when None) and
    `columns` (all when None), for one engine (all when None); returns the number of rows deleted and
    updates the partitions' COLUMN_STATS_ACCURATE. NoSuchObject for a missing table or named partition."""
    ref = table_ref(conn, catalog, db_name, table_name)
    if partition_names is None:
        owners: list[Any] = [sa.select(PARTITIONS.c.PART_ID).where(PARTITIONS.c.TBL_ID == ref.tbl_id)]
        # Lock the partitions first, in PART_ID order like statistics writers: the deletes renew the
        # partitions' STATS_VERSION (a trigger updates their rows), which must not deadlock with a writer
        # that holds partition locks and waits for a statistics row deleted here.
        conn.execute(owners[0].order_by(PARTITIONS.c.PART_ID).with_for_update()).all()
    else:
        ids = list(_partition_ids(conn, ref, partition_names).values())
        owners = [list(batch) for batch in chunks(ids)]
    cols = None if columns is None else lower_unique(columns)
    deleted = 0
    for owner in owners:
        query = sa.delete(PART_COL_STATS).where(PART_COL_STATS.c.PART_ID.in_(owner))
        if engine is not None:
            query = query.where(PART_COL_STATS.c.ENGINE == engine)
        if cols is None:
            deleted += conn.execute(query).rowcount
        else:
            for batch in chunks(cols):
                deleted += conn.execute(query.where(PART_COL_STATS.c.COLUMN_NAME.in_(batch))).rowcount
    if deleted:
        for owner in owners:
            _forget_accuracy_without_rows(conn, _PARTITION_LEVEL, owner, columns)
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
    remaining_query = sa.select(owner_stats, level.stats.c.COLUMN_NAME).where(owner_stats.in_(owners)).distinct()
    wanted = None if columns is None else set(lower_unique(columns))
    remaining = {(o, c) for o, c in conn.execute(remaining_query)}
    changed = {}
    for owner_id, raw in values:
        gone = [
            c for c in listed_columns(raw) if (wanted is None or c in wanted) and (owner_id, c) not in remaining
        ]
        if gone:
            changed[owner_id] = without_columns(raw, gone)
    if changed:
        level.params.set_values(conn, COLUMN_STATS_ACCURATE, changed)


def forget_columns(conn: sa.Connection, tbl_id: int, columns: Sequence[str]) -> None:
    """Delete the statistics of `columns` for a table and all its partitions, and drop them from the
    partitions' COLUMN_STATS_ACCURATE (used when columns are dropped or change type). The table's own
    parameters are the caller's: alter replaces them anyway."""
    cols = lower_unique(columns)
    part_ids = sa.select(PARTITIONS.c.PART_ID).where(PARTITIONS.c.TBL_ID == tbl_id)
    for batch in chunks(cols):
        conn.execute(
            sa.delete(TAB_COL_STATS).where(TAB_COL_STATS.c.TBL_ID == tbl_id, TAB_COL_STATS.c.COLUMN_NAME.in_(batch))
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
