"""The column statistics repository: what the statistics service asks of the database, by intent.

Each method is one or a few fixed statements (see the modules of this package); the service keeps
validation, merging, caching decisions and error semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from metastore.catalog import FieldSchema
from metastore.errors import MetastoreError
from metastore.stats.accurate import with_columns_accurate
from metastore.stats.model import ColumnStatsEntry
from metastore.store.chunking import IN_LIST_LIMIT
from metastore.store.column_stats import deletes, encoded, lookup, parameters, reads, sums, versions, writes
from metastore.store.column_stats.lookup import PartitionTarget, TableTarget
from metastore.store.column_stats.rows import entry_to_row, row_to_entry
from metastore.store.column_stats.sums import ColumnSums

#: How a server sends one statistic (the edge's ColumnStatisticsObj bytes, metastore.wire.stats.encode_served),
#: kept with each row in STATS_THRIFT so batched reads send the bytes as they are. The store speaks no Thrift:
#: the edge that opens it hands this function in (Metastore.open), and rows written without one keep
#: STATS_THRIFT NULL, which reads then build from the row's values instead.
ServedEncoding = Callable[[ColumnStatsEntry], bytes]


def _rows(
    entries: Sequence[ColumnStatsEntry], owner: str | None, owner_id: int | None, engine: str, last_analyzed: int,
    encode: ServedEncoding | None,
) -> list[dict[str, Any]]:
    out = []
    for e in entries:
        row = entry_to_row(e, engine=engine, last_analyzed=last_analyzed)
        # Encoded from the row as it will be read back, so the stored bytes always equal what a read of the row
        # would build (defaults for absent counts included).
        row["STATS_THRIFT"] = None if encode is None else encode(row_to_entry(row))
        if owner is not None:
            row[owner] = owner_id
        out.append(row)
    return out


class StatsRepository:
    """Table- and partition-level column statistics (TAB_COL_STATS, PART_COL_STATS) over one connection: in a
    unit of work's transaction, or in autocommit for reads (see Store.autocommit)."""

    __slots__ = ("conn", "served_encoding")

    def __init__(self, conn: sa.Connection, served_encoding: ServedEncoding | None = None) -> None:
        self.conn = conn
        self.served_encoding = served_encoding

    # ------------------------------------------------------------------ tables and partitions

    def table_target(
        self, catalog: str, db_name: str, table_name: str, *, lock: str | None = None,
        asynchronous_commit: bool = False,
    ) -> TableTarget | None:
        """The table as statistics need it, or None when it does not exist; lock "share" keeps ALTER/DROP away
        until the transaction ends, "update" also other read-merge-writes (lookup.table_target)."""
        return lookup.table_target(
            self.conn, catalog, db_name, table_name, lock=lock, asynchronous_commit=asynchronous_commit
        )

    def partition_targets(self, tbl_id: int, names: Sequence[str], *, lock: bool) -> dict[str, PartitionTarget]:
        """{name: partition} of the named partitions that exist; lock takes their row locks in PART_ID order."""
        return lookup.partition_targets(self.conn, tbl_id, names, lock=lock)

    # ------------------------------------------------------------------ reads

    def read_table_stats(
        self, catalog: str, db_name: str, table_name: str, columns: Sequence[str], engine: str, *,
        bit_vectors: bool = False, histograms: bool = False, prepared: bool = False,
    ) -> list[tuple[ColumnStatsEntry, int]]:
        """(entry, LAST_ANALYZED) of the table-level statistics of `columns` that exist, in the order asked;
        prepared: a PostgreSQL prepared statement (autocommit connections only)."""
        return reads.table_stats(
            self.conn, catalog, db_name, table_name, columns, engine, bit_vectors=bit_vectors,
            histograms=histograms, prepared=prepared,
        )

    def read_partition_stats(
        self, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str],
        engine: str, *, bit_vectors: bool = False, histograms: bool = False,
    ) -> list[tuple[str, ColumnStatsEntry, int]]:
        """(partition name, entry, LAST_ANALYZED) of the statistics of `columns` in the named partitions."""
        return reads.partition_stats(
            self.conn, catalog, db_name, table_name, partition_names, columns, engine, bit_vectors=bit_vectors,
            histograms=histograms,
        )

    def count_partitions_with_stats(
        self, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str],
        engine: str,
    ) -> int:
        """How many of the named partitions have statistics of any of `columns` (reads.count_partitions_with_stats)."""
        return reads.count_partitions_with_stats(self.conn, catalog, db_name, table_name, partition_names, columns, engine)

    def read_table_stats_encoded(
        self, catalog: str, db_name: str, table_name: str, columns: Sequence[str], engine: str, *,
        timestamps: bool = True, prepared: bool = False,
    ) -> tuple[int, bytes] | None:
        """The table's statistics as their stored Thrift bytes (encoded.table_stats_encoded)."""
        return encoded.table_stats_encoded(
            self.conn, catalog, db_name, table_name, columns, engine, timestamps=timestamps, prepared=prepared
        )

    def read_partition_stats_encoded(
        self, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str],
        engine: str, *, timestamps: bool = True,
    ) -> list[tuple[str, int, bytes]] | None:
        """The partitions' statistics as their stored Thrift bytes (encoded.partition_stats_encoded)."""
        return encoded.partition_stats_encoded(
            self.conn, catalog, db_name, table_name, partition_names, columns, engine, timestamps=timestamps
        )

    def partitions_version(
        self, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str], *, prepared: bool = False,
        span: versions.Span | None = None,
    ) -> tuple[int, int, int] | None:
        """A version of the named partitions' statistics (PostgreSQL; None elsewhere or for a missing table);
        with their span (partitions_span), read over that range of names (versions.partitions_version)."""
        return versions.partitions_version(
            self.conn, catalog, db_name, table_name, partition_names, prepared=prepared, span=span
        )

    def partitions_span(
        self, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str]
    ) -> versions.Span | None:
        """The range of names the named partitions fill when they are every partition in it (versions.partitions_span)."""
        return versions.partitions_span(self.conn, catalog, db_name, table_name, partition_names)

    def sum_partition_stats(
        self, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str],
        engine: str, *, batch: int = IN_LIST_LIMIT,
    ) -> tuple[dict[str, list[ColumnSums]], int]:
        """({column: its sums per stored type}, partitions having every column) over the named (distinct)
        partitions and (distinct, lower-case) columns, summed up by the database, `batch` names a statement."""
        return sums.summed(self.conn, catalog, db_name, table_name, partition_names, columns, engine, batch=batch)

    # ------------------------------------------------------------------ writes

    def write_table_stats(
        self, target: TableTarget, entries: Sequence[ColumnStatsEntry], *, engine: str, last_analyzed: int
    ) -> TableTarget:
        """Insert or replace the table's statistics of the entries (validated) and add their columns to its
        COLUMN_STATS_ACCURATE; the table as it is after the write."""
        rows = _rows(entries, "TBL_ID", target.tbl_id, engine, last_analyzed, self.served_encoding)
        writes.upsert_table_rows(self.conn, rows)
        accurate = parameters.mark_table_accurate(
            self.conn, target.tbl_id, target.stats_accurate, [r["COLUMN_NAME"] for r in rows]
        )
        return target if accurate == target.stats_accurate else _with_accurate(target, accurate)

    def write_partition_stats(
        self, parts: Mapping[str, PartitionTarget], entries: Mapping[str, Sequence[ColumnStatsEntry]], *,
        engine: str, last_analyzed: Mapping[str, int],
    ) -> dict[str, PartitionTarget]:
        """Insert or replace the statistics of locked partitions ({name: entries}, validated), and add their
        columns to each partition's COLUMN_STATS_ACCURATE; the partitions as they are after the write."""
        rows = []
        accurate: dict[int, str] = {}
        after: dict[str, PartitionTarget] = {}
        for name, part_entries in entries.items():
            part = parts[name]
            rows += _rows(part_entries, "PART_ID", part.part_id, engine, last_analyzed[name], self.served_encoding)
            # The partitions are locked: their parameters can be rewritten without compare-and-set.
            value = with_columns_accurate(part.stats_accurate, [e.column.lower() for e in part_entries])
            if value != part.stats_accurate:
                accurate[part.part_id] = value
            after[name] = PartitionTarget(part.part_id, part.name, value)
        writes.upsert_partition_rows(self.conn, rows)
        parameters.set_partitions_accurate(self.conn, accurate)
        return after

    def put_table_stats(
        self, catalog: str, target: TableTarget, entries: Sequence[ColumnStatsEntry], *, engine: str,
        last_analyzed: int, synchronous_commit: bool = True,
    ) -> bool:
        """The table's statistics written in one round trip (PostgreSQL, autocommit) provided the table still
        is as `target` describes it and the write leaves its COLUMN_STATS_ACCURATE as it is. False, with
        nothing written, otherwise, or when an entry or a value is refused (the general write then says why)."""
        known = self._known_rows(target, target.stats_accurate, entries, engine, last_analyzed)
        if known is None:
            return False
        rows, columns = known
        try:
            return writes.put_table_stats(
                self.conn, catalog, target, columns, rows, synchronous_commit=synchronous_commit
            )
        except sa.exc.DataError:
            return False

    def put_partition_stats(
        self, catalog: str, target: TableTarget, part: PartitionTarget, entries: Sequence[ColumnStatsEntry], *,
        engine: str, last_analyzed: int, synchronous_commit: bool = True,
    ) -> bool:
        """The partition's statistics written in one round trip (PostgreSQL, autocommit) provided the table and
        the partition still are as `target` and `part` describe them and the write leaves the partition's
        COLUMN_STATS_ACCURATE as it is. False, with nothing written, otherwise, or when an entry or a value is
        refused (the general write then says why)."""
        known = self._known_rows(target, part.stats_accurate, entries, engine, last_analyzed)
        if known is None:
            return False
        rows, columns = known
        try:
            return writes.put_partition_stats(
                self.conn, catalog, target, columns, part, rows, synchronous_commit=synchronous_commit
            )
        except sa.exc.DataError:
            return False

    def _known_rows(
        self, target: TableTarget, accurate: str | None, entries: Sequence[ColumnStatsEntry], engine: str,
        last_analyzed: int,
    ) -> tuple[list[dict[str, Any]], list[FieldSchema]] | None:
        """The rows of a one-round-trip write and the table's columns they are for; None when an entry or a
        value is refused, a column is not the table's, or the write would change COLUMN_STATS_ACCURATE (the
        owner's value `accurate`): the general path does that, and says why."""
        try:
            rows = _rows(entries, None, None, engine, last_analyzed, self.served_encoding)
        except MetastoreError:
            return None
        names = [r["COLUMN_NAME"] for r in rows]
        if with_columns_accurate(accurate, names) != accurate:
            return None
        columns: list[FieldSchema] = []
        for name in names:
            column = target.column(name)
            if column is None:
                return None
            columns.append(column)
        return rows, columns

    # ------------------------------------------------------------------ deletes

    def delete_table_stats(
        self, catalog: str, db_name: str, table_name: str, columns: Sequence[str] | None, *, engine: str | None,
    ) -> int:
        """Delete table-level statistics (deletes.delete_table_stats); the number of rows deleted."""
        return deletes.delete_table_stats(self.conn, catalog, db_name, table_name, columns, engine=engine)

    def delete_partition_stats(
        self, catalog: str, db_name: str, table_name: str, partition_names: Sequence[str] | None,
        columns: Sequence[str] | None, *, engine: str | None,
    ) -> int:
        """Delete partition-level statistics (deletes.delete_partition_stats); the number of rows deleted."""
        return deletes.delete_partition_stats(
            self.conn, catalog, db_name, table_name, partition_names, columns, engine=engine
        )


def _with_accurate(target: TableTarget, accurate: str | None) -> TableTarget:
    return TableTarget(
        tbl_id=target.tbl_id, db_name=target.db_name, table_name=target.table_name, columns=target.columns,
        partition_keys=target.partition_keys, num_rows=target.num_rows, stats_accurate=accurate,
    )
