"""Column statistics written and read the way the statistics service does it, inside a test's unit of work:
through the one repository the server runs (UnitOfWork.column_stats), with its table lookup and locks."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE
from metastore.errors import NoSuchObject
from metastore.stats.model import ColumnStatsEntry
from metastore.store import UnitOfWork
from metastore.store.column_stats import TableTarget


def target(uow: UnitOfWork, db: str, table: str, *, lock: str | None = None) -> TableTarget:
    """The table as the statistics service looks it up; NoSuchObject when it does not exist."""
    found = uow.column_stats.table_target(DEFAULT_CATALOG, db, table, lock=lock)
    if found is None:
        raise NoSuchObject(f"table {db}.{table} does not exist")
    return found


def put_table(
    uow: UnitOfWork, db: str, table: str, entries: Sequence[ColumnStatsEntry], *, engine: str = DEFAULT_ENGINE,
    last_analyzed: int | None = None, lock: str = "share",
) -> TableTarget:
    """Write table-level statistics (one entry per column) as the service's general write path does."""
    when = int(time.time()) if last_analyzed is None else last_analyzed
    return uow.column_stats.write_table_stats(
        target(uow, db, table, lock=lock), entries, engine=engine, last_analyzed=when
    )


def put_partitions(
    uow: UnitOfWork, db: str, table: str, entries: Mapping[str, Sequence[ColumnStatsEntry]], *,
    engine: str = DEFAULT_ENGINE, last_analyzed: int | None = None,
) -> None:
    """Write statistics of partitions by name (locked first, as the service does); NoSuchObject naming the
    partitions that do not exist, before anything is written."""
    t = target(uow, db, table, lock="share")
    parts = uow.column_stats.partition_targets(t.tbl_id, list(entries), lock=True)
    missing = [n for n in entries if n not in parts]
    if missing:
        raise NoSuchObject(f"partition(s) of {t.qualified_name} do not exist: {', '.join(missing)}")
    when = int(time.time()) if last_analyzed is None else last_analyzed
    uow.column_stats.write_partition_stats(parts, entries, engine=engine, last_analyzed=dict.fromkeys(entries, when))


def table_stats(
    uow: UnitOfWork, db: str, table: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE,
    bit_vectors: bool = False, histograms: bool = False,
) -> list[ColumnStatsEntry]:
    """Table-level statistics of `columns` that exist, in the order asked."""
    found = uow.column_stats.read_table_stats(
        DEFAULT_CATALOG, db, table, columns, engine, bit_vectors=bit_vectors, histograms=histograms
    )
    return [e for e, _ in found]


def partition_stats(
    uow: UnitOfWork, db: str, table: str, names: Sequence[str], columns: Sequence[str], *,
    engine: str = DEFAULT_ENGINE, bit_vectors: bool = False, histograms: bool = False,
) -> dict[str, list[ColumnStatsEntry]]:
    """{partition name: statistics in the order of `columns`} for the named partitions that have any, in
    partition name order."""
    order = {c: i for i, c in enumerate(dict.fromkeys(c.lower() for c in columns))}
    out: dict[str, list[ColumnStatsEntry]] = {}
    for name, entry, _ in sorted(
        uow.column_stats.read_partition_stats(
            DEFAULT_CATALOG, db, table, names, columns, engine, bit_vectors=bit_vectors, histograms=histograms
        ),
        key=lambda r: (r[0], order[r[1].column]),
    ):
        out.setdefault(name, []).append(entry)
    return out


def last_analyzed(uow: UnitOfWork, db: str, table: str, columns: Sequence[str], *, partition: str | None = None) -> int:
    """The latest LAST_ANALYZED of the table's (or one partition's) statistics of `columns`."""
    if partition is None:
        found = uow.column_stats.read_table_stats(DEFAULT_CATALOG, db, table, columns, DEFAULT_ENGINE)
        return max(when for _, when in found)
    rows = uow.column_stats.read_partition_stats(DEFAULT_CATALOG, db, table, [partition], columns, DEFAULT_ENGINE)
    return max(when for _, _, when in rows)
