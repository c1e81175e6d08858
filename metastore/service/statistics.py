"""Column statistics: validated writes (with optional merge), reads, aggregation and deletes.

Every call is one transaction: a request with one bad entry writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE, FieldSchema, Table
from metastore.errors import InvalidInput, InvalidObject, NoSuchObject
from metastore.partnames import make_part_name, values_from_part_name
from metastore.stats.aggregate import aggregate_partition_stats
from metastore.stats.merge import merge_stats
from metastore.stats.model import ColumnStatsEntry
from metastore.stats.validate import normalize_entry
from metastore.store import Store, UnitOfWork
from metastore.store.stats_accurate import COLUMN_STATS_ACCURATE


@dataclass(frozen=True)
class StatsWrite:
    """Statistics of one table (partition_name None) or one partition, as one ColumnStatistics carries them."""

    db_name: str
    table_name: str
    entries: Sequence[ColumnStatsEntry]
    partition_name: str | None = None
    last_analyzed: int | None = None
    catalog: str = DEFAULT_CATALOG


@dataclass(frozen=True)
class AggregateResult:
    entries: list[ColumnStatsEntry]
    parts_found: int


@dataclass
class _TableWrites:
    table: Table
    table_entries: dict[str, ColumnStatsEntry] = field(default_factory=dict)
    table_last_analyzed: int | None = None
    partition_entries: dict[str, dict[str, ColumnStatsEntry]] = field(default_factory=dict)
    partition_last_analyzed: dict[str, int | None] = field(default_factory=dict)


def _basic_row_count(params: Mapping[str, str]) -> int | None:
    """numRows when the table's basic statistics are marked accurate (then column counts may not exceed it)."""
    raw = params.get(COLUMN_STATS_ACCURATE)
    if not raw or "numRows" not in params:
        return None
    try:
        basic = str(json.loads(raw).get("BASIC_STATS", "false")).lower() == "true"
    except (ValueError, AttributeError):
        basic = raw.strip().lower() == "true"
    try:
        return int(params["numRows"]) if basic else None
    except ValueError:
        return None


def _data_column(table: Table, name: str) -> FieldSchema | None:
    low = name.lower()
    return next((c for c in table.sd.cols if c.name.lower() == low), None)


def canonical_partition_name(table: Table, name: str) -> str:
    """The stored form of a partition name a client sent (`DS=2024-01-01` → `ds=2024-01-01`)."""
    if not table.partition_keys:
        raise InvalidInput(f"{table.db_name}.{table.table_name} is not partitioned; it has no partition {name!r}")
    keys = [k.name.lower() for k in table.partition_keys]
    try:
        return make_part_name(keys, values_from_part_name(name, keys))
    except InvalidObject as exc:
        raise NoSuchObject(f"{table.db_name}.{table.table_name} partition ({name}) not found: {exc}") from None


class StatisticsService:
    """Table and partition column statistics over the store."""

    def __init__(self, store: Store, *, fetch_bitvector: bool = False, fetch_kll: bool = False) -> None:
        self.store = store
        self.fetch_bitvector = fetch_bitvector
        self.fetch_kll = fetch_kll

    # ------------------------------------------------------------------ writes

    def write(self, writes: Sequence[StatsWrite], *, merge: bool = False, engine: str = DEFAULT_ENGINE) -> None:
        """Validate and store statistics of tables and partitions in one transaction.

        merge combines them with the stored statistics (Hive's needMerge); otherwise they replace them.
        """
        engine = engine or DEFAULT_ENGINE
        with self.store.transaction() as uow:
            grouped = self._validated(uow, writes)
            for (catalog, db_name, table_name), tw in grouped.items():
                if tw.table_entries:
                    entries = list(tw.table_entries.values())
                    if merge:
                        entries = self._merged_table(uow, tw, entries, engine, catalog)
                    uow.column_stats.upsert_table(
                        db_name, table_name, entries, engine=engine, last_analyzed=tw.table_last_analyzed,
                        catalog=catalog,
                    )
                if tw.partition_entries:
                    by_part = {name: list(e.values()) for name, e in tw.partition_entries.items()}
                    if merge:
                        by_part = self._merged_partitions(uow, tw, by_part, engine, catalog)
                    # One upsert per distinct lastAnalyzed (usually one for the whole request).
                    by_time: dict[int | None, dict[str, list[ColumnStatsEntry]]] = {}
                    for name, entries in by_part.items():
                        by_time.setdefault(tw.partition_last_analyzed.get(name), {})[name] = entries
                    for when, group in by_time.items():
                        uow.column_stats.upsert_partitions(
                            db_name, table_name, group, engine=engine, last_analyzed=when, catalog=catalog
                        )

    def _validated(self, uow: UnitOfWork, writes: Sequence[StatsWrite]) -> dict[tuple[str, str, str], _TableWrites]:
        grouped: dict[tuple[str, str, str], _TableWrites] = {}
        for w in writes:
            key = (w.catalog.lower(), w.db_name.lower(), w.table_name.lower())
            tw = grouped.get(key)
            if tw is None:
                tw = grouped[key] = _TableWrites(uow.tables.get(w.db_name, w.table_name, catalog=w.catalog))
            table = tw.table
            qualified = f"{table.db_name}.{table.table_name}"
            if w.partition_name is None:
                owner, num_rows, target = qualified, _basic_row_count(table.parameters), tw.table_entries
                if w.last_analyzed is not None:
                    tw.table_last_analyzed = w.last_analyzed
            else:
                name = canonical_partition_name(table, w.partition_name)
                owner, num_rows = f"{qualified} partition {name}", None
                target = tw.partition_entries.setdefault(name, {})
                tw.partition_last_analyzed[name] = w.last_analyzed
            for entry in w.entries:
                normalized = normalize_entry(entry, _data_column(table, entry.column), owner=owner, num_rows=num_rows)
                target[normalized.column.lower()] = normalized
        return grouped

    def _merged_table(
        self, uow: UnitOfWork, tw: _TableWrites, entries: list[ColumnStatsEntry], engine: str, catalog: str
    ) -> list[ColumnStatsEntry]:
        stored = {
            e.column.lower(): e
            for e in uow.column_stats.get_table(
                tw.table.db_name, tw.table.table_name, [e.column for e in entries], engine=engine,
                with_bit_vectors=True, with_histograms=True, for_update=True, catalog=catalog,
            )
        }
        return [self._merge_one(stored.get(e.column.lower()), e, f"{tw.table.db_name}.{tw.table.table_name}") for e in entries]

    def _merged_partitions(
        self, uow: UnitOfWork, tw: _TableWrites, by_part: dict[str, list[ColumnStatsEntry]], engine: str, catalog: str
    ) -> dict[str, list[ColumnStatsEntry]]:
        columns = sorted({e.column for entries in by_part.values() for e in entries})
        stored = uow.column_stats.get_partitions(
            tw.table.db_name, tw.table.table_name, list(by_part), columns, engine=engine,
            with_bit_vectors=True, with_histograms=True, for_update=True, catalog=catalog,
        )
        out: dict[str, list[ColumnStatsEntry]] = {}
        for name, entries in by_part.items():
            old = {e.column.lower(): e for e in stored.get(name, [])}
            owner = f"{tw.table.db_name}.{tw.table.table_name} partition {name}"
            out[name] = [self._merge_one(old.get(e.column.lower()), e, owner) for e in entries]
        return out

    @staticmethod
    def _merge_one(old: ColumnStatsEntry | None, new: ColumnStatsEntry, owner: str) -> ColumnStatsEntry:
        if old is None:
            return new
        merged = merge_stats(old.stats, new.stats, where=f"column '{new.column}' of {owner}")
        return ColumnStatsEntry(column=new.column, column_type=new.column_type, stats=merged)

    # ------------------------------------------------------------------ reads

    def _fetch_options(self) -> dict[str, bool]:
        return {"with_bit_vectors": self.fetch_bitvector, "with_histograms": self.fetch_kll}

    def table_stats(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> list[ColumnStatsEntry]:
        """Table-level statistics of the columns that have them; NoSuchObject for a missing table."""
        with self.store.read() as uow:
            return uow.column_stats.get_table(
                db_name, table_name, columns, engine=engine or DEFAULT_ENGINE, catalog=catalog, **self._fetch_options()
            )

    def table_column_stats(
        self, db_name: str, table_name: str, column: str, *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[ColumnStatsEntry, int | None]:
        """One column's table-level statistics and when they were analysed; NoSuchObject when absent."""
        engine = engine or DEFAULT_ENGINE
        with self.store.read() as uow:
            entries = uow.column_stats.get_table(
                db_name, table_name, [column], engine=engine, catalog=catalog, **self._fetch_options()
            )
            if not entries:
                table = uow.tables.get(db_name, table_name, catalog=catalog)
                if _data_column(table, column) is None:
                    raise NoSuchObject(f"column '{column}' does not exist in {table.db_name}.{table.table_name}")
                raise NoSuchObject(f"no statistics for column '{column}' of {table.db_name}.{table.table_name}")
            when = uow.column_stats.last_analyzed(db_name, table_name, [column], engine=engine, catalog=catalog)
            return entries[0], when

    def partition_column_stats(
        self, db_name: str, table_name: str, partition_name: str, column: str, *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[ColumnStatsEntry, str, int | None]:
        """One column's statistics in one partition (entry, canonical partition name, lastAnalyzed)."""
        engine = engine or DEFAULT_ENGINE
        with self.store.read() as uow:
            table = uow.tables.get(db_name, table_name, catalog=catalog)
            name = canonical_partition_name(table, partition_name)
            found = uow.column_stats.get_partitions(
                db_name, table_name, [name], [column], engine=engine, catalog=catalog, **self._fetch_options()
            ).get(name)
            if not found:
                uow.partitions.get_by_name(db_name, table_name, name, catalog=catalog)  # NoSuchObject if absent
                if _data_column(table, column) is None:
                    raise NoSuchObject(f"column '{column}' does not exist in {table.db_name}.{table.table_name}")
                raise NoSuchObject(
                    f"no statistics for column '{column}' of {table.db_name}.{table.table_name} partition {name}"
                )
            when = uow.column_stats.last_analyzed(
                db_name, table_name, [column], partition_name=name, engine=engine, catalog=catalog
            )
            return found[0], name, when

    def partitions_stats(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG,
    ) -> dict[str, list[ColumnStatsEntry]]:
        """{partition name: statistics} for the named partitions that have statistics of the columns."""
        if not partition_names or not columns:
            with self.store.read() as uow:
                uow.tables.get(db_name, table_name, catalog=catalog)
            return {}
        with self.store.read() as uow:
            return uow.column_stats.get_partitions(
                db_name, table_name, partition_names, columns, engine=engine or DEFAULT_ENGINE, catalog=catalog,
                **self._fetch_options(),
            )

    def aggregate(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG,
    ) -> AggregateResult:
        """Table-wide statistics of the columns over the named partitions, following Hive's get_aggr_stats_for."""
        names = list(dict.fromkeys(partition_names))
        cols = list(dict.fromkeys(c.lower() for c in columns))
        if not names or not cols:
            return AggregateResult([], 0)
        with self.store.read() as uow:
            rows = uow.column_stats.rows_for_aggregation(
                db_name, table_name, names, cols, engine=engine or DEFAULT_ENGINE, with_bit_vectors=True,
                with_histograms=True, catalog=catalog,
            )
        index = {n: i for i, n in enumerate(names)}
        per_column: dict[str, list[tuple[int, ColumnStatsEntry]]] = {}
        columns_per_partition: dict[str, int] = {}
        for part_name, entry in rows:
            per_column.setdefault(entry.column.lower(), []).append((index[part_name], entry))
            columns_per_partition[part_name] = columns_per_partition.get(part_name, 0) + 1
        parts_found = sum(1 for n in columns_per_partition.values() if n == len(cols))
        out: list[ColumnStatsEntry] = []
        for col in cols:
            found = per_column.get(col)
            if not found:
                continue
            column_type = found[0][1].column_type
            stats = aggregate_partition_stats(
                column_type, [(i, e.stats) for i, e in found], num_partitions=len(names)
            )
            out.append(ColumnStatsEntry(column=found[0][1].column, column_type=column_type, stats=stats))
        return AggregateResult(out, parts_found)

    # ------------------------------------------------------------------ deletes

    def delete_table_stats(
        self, db_name: str, table_name: str, columns: Sequence[str] | None, *, engine: str | None = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> int:
        """Delete table-level statistics of the columns (all when None); NoSuchObject when a named column has none."""
        with self.store.transaction() as uow:
            deleted = uow.column_stats.delete_table(db_name, table_name, columns, engine=engine, catalog=catalog)
            if columns is not None and deleted == 0:
                raise NoSuchObject(
                    f"no statistics for column(s) {', '.join(repr(c) for c in columns)} of {db_name}.{table_name}"
                )
            return deleted

    def delete_partition_stats(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None, columns: Sequence[str] | None,
        *, engine: str | None = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG,
    ) -> int:
        """Delete partition-level statistics (all partitions / all columns when None)."""
        with self.store.transaction() as uow:
            names = None
            if partition_names is not None:
                table = uow.tables.get(db_name, table_name, catalog=catalog)
                names = [canonical_partition_name(table, n) for n in partition_names]
            deleted = uow.column_stats.delete_partitions(
                db_name, table_name, names, columns, engine=engine, catalog=catalog
            )
            if columns is not None and names is not None and deleted == 0:
                raise NoSuchObject(
                    f"no statistics for column(s) {', '.join(repr(c) for c in columns)} of {db_name}.{table_name} "
                    f"partition(s) {', '.join(names)}"
                )
            return deleted

