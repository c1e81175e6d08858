"""Column statistics: validated writes (with optional merge), reads, aggregation and deletes.

Every call is one transaction: a request with one bad entry writes nothing. The hot paths use the direct-SQL
statements of metastore.store.stats_direct: a write of table statistics is a locking lookup of the table (columns
and parameters in one statement), one upsert and, only if it changes, the COLUMN_STATS_ACCURATE parameter; on
PostgreSQL, once this process has written to the table, it is one call of metastore_put_table_stats instead
(see _write_known_table).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import sqlalchemy as sa

from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE
from metastore.errors import InvalidInput, InvalidObject, MetastoreError, NoSuchObject
from metastore.partnames import make_part_name, values_from_part_name
from metastore.service.stats_cache import ReplyCache
from metastore.stats.aggregate import aggregate_partition_stats
from metastore.stats.exchange import AggregateResult, StatsWrite
from metastore.stats.merge import merge_stats
from metastore.stats.model import ColumnStatsEntry, StatsKind, kind_for_type
from metastore.stats.sql_rows import entry_to_row
from metastore.stats.validate import normalize_entry
from metastore.store import Store, UnitOfWork
from metastore.store import stats_direct as direct
from metastore.store.engine import autocommit_connection
from metastore.store.parameters import PARTITION_PARAMETERS
from metastore.store.refs import catalog_prefix
from metastore.store.stats_accurate import COLUMN_STATS_ACCURATE, with_columns_accurate
from metastore.store.stats_direct import TableTarget


@dataclass
class _TableWrites:
    target: TableTarget
    catalog: str
    table_entries: dict[str, ColumnStatsEntry] = field(default_factory=dict)
    table_last_analyzed: int | None = None
    partition_entries: dict[str, dict[str, ColumnStatsEntry]] = field(default_factory=dict)
    partition_last_analyzed: dict[str, int | None] = field(default_factory=dict)


def _basic_row_count(num_rows: str | None, stats_accurate: str | None) -> int | None:
    """numRows when the table's basic statistics are marked accurate (then column counts may not exceed it)."""
    if not stats_accurate or num_rows is None:
        return None
    try:
        basic = str(json.loads(stats_accurate).get("BASIC_STATS", "false")).lower() == "true"
    except (ValueError, AttributeError):
        basic = stats_accurate.strip().lower() == "true"
    try:
        return int(num_rows) if basic else None
    except ValueError:
        return None


def canonical_partition_name(target: TableTarget, name: str) -> str:
    """The stored form of a partition name a client sent (`DS=2024-01-01` → `ds=2024-01-01`)."""
    if not target.partition_keys:
        raise InvalidInput(f"{target.qualified_name} is not partitioned; it has no partition {name!r}")
    keys = [k.lower() for k in target.partition_keys]
    try:
        return make_part_name(keys, values_from_part_name(name, keys))
    except InvalidObject as exc:
        raise NoSuchObject(f"{target.qualified_name} partition ({name}) not found: {exc}") from None


def _table_key(w: StatsWrite) -> tuple[str, str, str]:
    """(catalog, database, table) of a write, as names are compared: trimmed, lower case."""
    return (w.catalog.strip().lower(), w.db_name.strip().lower(), w.table_name.strip().lower())


def _normalized_table_entries(target: TableTarget, entries: Sequence[ColumnStatsEntry]) -> dict[str, ColumnStatsEntry]:
    """Table-level entries checked against the table's columns (and numRows, when its basic statistics are
    accurate), by lower-case column name: the last entry of a column wins. Raises InvalidInput."""
    owner = target.qualified_name
    num_rows = _basic_row_count(target.num_rows, target.stats_accurate)
    normalized = {}
    for entry in entries:
        e = normalize_entry(entry, target.column(entry.column), owner=owner, num_rows=num_rows)
        normalized[e.column.lower()] = e
    return normalized


class _KnownTables:
    """The tables (TableTarget) this process last wrote statistics to, by _table_key: what the one-round-trip
    write validates against. Bounded; a stale entry costs one refused attempt, never a wrong write."""

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self._tables: dict[tuple[str, str, str], TableTarget] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> TableTarget | None:
        return self._tables.get(key)

    def remember(self, key: tuple[str, str, str], target: TableTarget) -> None:
        with self._lock:
            self._tables.pop(key, None)
            while len(self._tables) >= self.capacity:
                del self._tables[next(iter(self._tables))]
            self._tables[key] = target

    def forget(self, key: tuple[str, str, str]) -> None:
        with self._lock:
            self._tables.pop(key, None)


def _missing_table(catalog: str, db_name: str, table_name: str) -> NoSuchObject:
    db, tbl = db_name.strip().lower(), table_name.strip().lower()
    return NoSuchObject(f"table {catalog_prefix(catalog)}{db}.{tbl} does not exist")


def _target(
    conn: sa.Connection, catalog: str, db_name: str, table_name: str, *, lock: str | None = None,
    asynchronous_commit: bool = False,
) -> TableTarget:
    target = direct.table_target(
        conn, catalog, db_name, table_name, lock=lock, asynchronous_commit=asynchronous_commit
    )
    if target is None:
        raise _missing_table(catalog, db_name, table_name)
    return target


class StatisticsService:
    """Table and partition column statistics over the store."""

    def __init__(
        self, store: Store, *, fetch_bitvector: bool = False, fetch_kll: bool = False, aggregate_in_sql: bool = True,
        synchronous_commit: bool = True, reply_cache: ReplyCache | None = None,
    ) -> None:
        self.store = store
        # Encoded batched replies, validated against PARTITIONS.STATS_VERSION on every call (PostgreSQL only).
        self.reply_cache = reply_cache
        # The connection of a cache fill on this thread: reads join its snapshot (see cached_partition_reply).
        self._snapshot = threading.local()
        self.fetch_bitvector = fetch_bitvector
        self.fetch_kll = fetch_kll
        # False: on PostgreSQL, statistics writes do not wait for the WAL flush (Settings.stats_synchronous_commit).
        self.synchronous_commit = synchronous_commit
        # get_aggr_stats_for sums columns up in SQL where the rules allow (see aggregate); off, every column
        # goes through the Python aggregator (the two must agree: tests compare them).
        self.aggregate_in_sql = aggregate_in_sql
        # PostgreSQL: tables written to, for the one-round-trip write of their statistics (_write_known_table).
        self._known_tables = _KnownTables()

    @contextmanager
    def _read(self) -> Iterator[UnitOfWork]:
        """A unit of work for reading. On PostgreSQL it runs in autocommit: under READ COMMITTED every
        statement sees its own snapshot inside a transaction too, so BEGIN/COMMIT would only add a round trip.
        Inside cached_partition_reply's fill, reads use its repeatable-read transaction."""
        joined = getattr(self._snapshot, "conn", None)
        if joined is not None:
            yield UnitOfWork(joined)
            return
        if self.store.engine.dialect.name != "postgresql":
            with self.store.read() as uow:
                yield uow
            return
        with autocommit_connection(self.store.engine) as conn:
            yield UnitOfWork(conn)

    # ------------------------------------------------------------------ writes

    def write(self, writes: Sequence[StatsWrite], *, merge: bool = False, engine: str = DEFAULT_ENGINE) -> None:
        """Validate and store statistics of tables and partitions in one transaction.

        merge combines them with the stored statistics (Hive's needMerge); otherwise they replace them.
        """
        engine = engine or DEFAULT_ENGINE
        if not writes:
            return
        if self._write_known_table(writes, merge, engine):
            return
        written = {}
        with self.store.transaction() as uow:
            conn = uow.connection
            for key, tw in self._validated(conn, writes, merge).items():
                if tw.table_entries:
                    written[key] = self._write_table(conn, tw, merge, engine)
                if tw.partition_entries:
                    self._write_partitions(conn, tw, merge, engine)
        if self.store.engine.dialect.name == "postgresql":
            for key, target in written.items():
                self._known_tables.remember(key, target)

    def _write_known_table(self, writes: Sequence[StatsWrite], merge: bool, engine: str) -> bool:
        """The common write, statistics of one table (not merged), in one round trip: validated against the
        table as this process last wrote to it, then stored by stats_direct.put_table_stats, which writes only
        if the table is still as it was. True when done; False sends the write down the general path, which
        reads the table afresh (a table not seen yet or changed since, any rejected entry, so that errors always
        come from the general path and describe the table as it is)."""
        if merge or len(writes) != 1 or writes[0].partition_name is not None or not writes[0].entries:
            return False
        w = writes[0]
        key = _table_key(w)
        target = self._known_tables.get(key)
        if target is None:
            return False
        try:
            entries = _normalized_table_entries(target, w.entries)
            when = _now() if w.last_analyzed is None else w.last_analyzed
            rows = [entry_to_row(e, engine=engine, last_analyzed=when) for e in entries.values()]
        except MetastoreError:
            return False
        names = [r["COLUMN_NAME"] for r in rows]
        if with_columns_accurate(target.stats_accurate, names) != target.stats_accurate:
            return False  # COLUMN_STATS_ACCURATE must change: the general path does that
        columns = [target.column(n) for n in names]
        try:
            with autocommit_connection(self.store.engine) as conn:
                done = direct.put_table_stats(
                    conn, key[0], target, columns, rows, synchronous_commit=self.synchronous_commit
                )
        except sa.exc.DataError:
            return False  # a value the database refuses: the general path says which
        if not done:
            self._known_tables.forget(key)
        return done

    def _validated(
        self, conn: sa.Connection, writes: Sequence[StatsWrite], merge: bool
    ) -> dict[tuple[str, str, str], _TableWrites]:
        keys = sorted({_table_key(w) for w in writes})
        merged_tables = {_table_key(w) for w in writes if w.partition_name is None and merge}
        # Tables are looked up and locked in name order: no deadlock between requests. A merge of table-level
        # statistics reads, merges and writes them: exclusive; other writes only keep alter/drop away.
        grouped: dict[tuple[str, str, str], _TableWrites] = {}
        for i, k in enumerate(keys):
            target = _target(
                conn, *k, lock="update" if k in merged_tables else "share",
                asynchronous_commit=i == 0 and not self.synchronous_commit,
            )
            grouped[k] = _TableWrites(target, k[0])
        for w in writes:
            tw = grouped[_table_key(w)]
            target = tw.target
            if w.partition_name is None:
                tw.table_entries.update(_normalized_table_entries(target, w.entries))
                if w.last_analyzed is not None:
                    tw.table_last_analyzed = w.last_analyzed
            else:
                name = canonical_partition_name(target, w.partition_name)
                owner = f"{target.qualified_name} partition {name}"
                entries = tw.partition_entries.setdefault(name, {})
                tw.partition_last_analyzed[name] = w.last_analyzed
                for entry in w.entries:
                    normalized = normalize_entry(entry, target.column(entry.column), owner=owner)
                    entries[normalized.column.lower()] = normalized
        return grouped

    def _write_table(self, conn: sa.Connection, tw: _TableWrites, merge: bool, engine: str) -> TableTarget:
        """Write the table-level entries; the table as it is after the write (its COLUMN_STATS_ACCURATE)."""
        target = tw.target
        entries = list(tw.table_entries.values())
        if merge:
            stored = {
                e.column: e
                for e, _ in direct.table_stats(
                    conn, tw.catalog, target.db_name, target.table_name, [e.column for e in entries], engine,
                    bit_vectors=True, histograms=True,
                )
            }
            entries = [_merge_one(stored.get(e.column.lower()), e, target.qualified_name) for e in entries]
        when = _now() if tw.table_last_analyzed is None else tw.table_last_analyzed
        rows = []
        for e in entries:
            row = entry_to_row(e, engine=engine, last_analyzed=when)
            row["TBL_ID"] = target.tbl_id
            rows.append(row)
        direct.upsert_table_rows(conn, rows)
        accurate = _mark_accurate(
            conn, "TABLE_PARAMS", target.tbl_id, target.stats_accurate, [r["COLUMN_NAME"] for r in rows]
        )
        return replace(target, stats_accurate=accurate)

    def _write_partitions(self, conn: sa.Connection, tw: _TableWrites, merge: bool, engine: str) -> None:
        target = tw.target
        names = list(tw.partition_entries)
        parts = direct.partition_targets(conn, target.tbl_id, names, lock=True)
        missing = [n for n in names if n not in parts]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise NoSuchObject(f"partition(s) of {target.qualified_name} do not exist: {shown}")
        by_part = {name: list(entries.values()) for name, entries in tw.partition_entries.items()}
        if merge:
            columns = sorted({e.column for entries in by_part.values() for e in entries})
            stored: dict[tuple[str, str], ColumnStatsEntry] = {
                (name, e.column): e
                for name, e, _ in direct.partition_stats(
                    conn, tw.catalog, target.db_name, target.table_name, names, columns, engine,
                    bit_vectors=True, histograms=True,
                )
            }
            by_part = {
                name: [
                    _merge_one(stored.get((name, e.column.lower())), e, f"{target.qualified_name} partition {name}")
                    for e in entries
                ]
                for name, entries in by_part.items()
            }
        now = _now()
        rows = []
        accurate: dict[int, str] = {}
        for name, entries in by_part.items():
            part = parts[name]
            when = tw.partition_last_analyzed.get(name)
            for e in entries:
                row = entry_to_row(e, engine=engine, last_analyzed=now if when is None else when)
                row["PART_ID"] = part.part_id
                rows.append(row)
            # The partitions are locked: their parameters can be rewritten without compare-and-set.
            value = with_columns_accurate(part.stats_accurate, [e.column.lower() for e in entries])
            if value != part.stats_accurate:
                accurate[part.part_id] = value
        direct.upsert_partition_rows(conn, rows)
        if accurate:
            PARTITION_PARAMETERS.set_values(conn, COLUMN_STATS_ACCURATE, accurate)

    # ------------------------------------------------------------------ reads

    def table_stats(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> list[ColumnStatsEntry]:
        """Table-level statistics of the columns that have them; NoSuchObject for a missing table."""
        with self._read() as uow:
            found = direct.table_stats(
                uow.connection, catalog, db_name, table_name, columns, engine or DEFAULT_ENGINE,
                bit_vectors=self.fetch_bitvector, histograms=self.fetch_kll, prepared=True,
            )
            if not found:
                _target(uow.connection, catalog, db_name, table_name)
            return [e for e, _ in found]

    def table_stats_encoded(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG, timestamps_as_long: bool = True,
    ) -> tuple[int, bytes] | None:
        """table_stats as (number of statistics, their Thrift ColumnStatisticsObj bytes in the order of
        `columns`), from the bytes stored with each row; None when they cannot answer (this service returns
        sketches, or see stats_direct.table_stats_encoded): read with table_stats. NoSuchObject for a missing
        table."""
        if self.fetch_bitvector or self.fetch_kll:
            return None
        with self._read() as uow:
            found = direct.table_stats_encoded(
                uow.connection, catalog, db_name, table_name, columns, engine or DEFAULT_ENGINE,
                timestamps=timestamps_as_long, prepared=True,
            )
            if found is not None and found[0] == 0:
                _target(uow.connection, catalog, db_name, table_name)
        return found

    def table_column_stats(
        self, db_name: str, table_name: str, column: str, *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[ColumnStatsEntry, int | None]:
        """One column's table-level statistics and when they were analysed; NoSuchObject when absent."""
        with self._read() as uow:
            found = direct.table_stats(
                uow.connection, catalog, db_name, table_name, [column], engine or DEFAULT_ENGINE,
                bit_vectors=self.fetch_bitvector, histograms=self.fetch_kll, prepared=True,
            )
            if not found:
                target = _target(uow.connection, catalog, db_name, table_name)
                if target.column(column) is None:
                    raise NoSuchObject(f"column '{column}' does not exist in {target.qualified_name}")
                raise NoSuchObject(f"no statistics for column '{column}' of {target.qualified_name}")
            return found[0]

    def partition_column_stats(
        self, db_name: str, table_name: str, partition_name: str, column: str, *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[ColumnStatsEntry, str, int | None]:
        """One column's statistics in one partition (entry, canonical partition name, lastAnalyzed)."""
        engine = engine or DEFAULT_ENGINE
        options = {"bit_vectors": self.fetch_bitvector, "histograms": self.fetch_kll}
        with self._read() as uow:
            conn = uow.connection
            # A stored name is canonical: try the name as sent first, canonicalise only when it is not found.
            found = direct.partition_stats(conn, catalog, db_name, table_name, [partition_name], [column], engine, **options)
            if found:
                name, entry, when = found[0]
                return entry, name, when
            target = _target(conn, catalog, db_name, table_name)
            name = canonical_partition_name(target, partition_name)
            if name != partition_name:
                found = direct.partition_stats(conn, catalog, db_name, table_name, [name], [column], engine, **options)
                if found:
                    return found[0][1], name, found[0][2]
            if not direct.partition_targets(conn, target.tbl_id, [name], lock=False):
                raise NoSuchObject(f"{target.qualified_name} partition ({name}) not found")
            if target.column(column) is None:
                raise NoSuchObject(f"column '{column}' does not exist in {target.qualified_name}")
            raise NoSuchObject(f"no statistics for column '{column}' of {target.qualified_name} partition {name}")

    def partitions_stats(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG,
    ) -> dict[str, list[ColumnStatsEntry]]:
        """{partition name: statistics in the order of `columns`} for the named partitions that have any."""
        with self._read() as uow:
            found = direct.partition_stats(
                uow.connection, catalog, db_name, table_name, partition_names, columns, engine or DEFAULT_ENGINE,
                bit_vectors=self.fetch_bitvector, histograms=self.fetch_kll,
            )
            if not found:
                _target(uow.connection, catalog, db_name, table_name)
        order = {c: i for i, c in enumerate(dict.fromkeys(c.lower() for c in columns))}
        result: dict[str, list[ColumnStatsEntry]] = {}
        for name, entry, _ in found:
            result.setdefault(name, []).append(entry)
        for entries in result.values():
            entries.sort(key=lambda e: order[e.column])
        return result

    def partitions_stats_encoded(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG, timestamps_as_long: bool = True,
    ) -> list[tuple[str, int, bytes]] | None:
        """partitions_stats as [(partition name, number of statistics, their Thrift ColumnStatisticsObj bytes
        in the order of `columns`)], from the bytes stored with each row; None when they cannot answer (this
        service returns sketches, or see stats_direct.partition_stats_encoded): read with partitions_stats."""
        if self.fetch_bitvector or self.fetch_kll:
            return None
        with self._read() as uow:
            found = direct.partition_stats_encoded(
                uow.connection, catalog, db_name, table_name, partition_names, columns, engine or DEFAULT_ENGINE,
                timestamps=timestamps_as_long,
            )
            if found == []:
                _target(uow.connection, catalog, db_name, table_name)
        return found

    def cached_partition_reply(
        self, kind: str, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str],
        compute: Callable[[], bytes], *, engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG,
    ) -> bytes:
        """The encoded reply `compute` builds from reads of this service about the named partitions' statistics
        (`kind` tells replies of different calls apart), from the reply cache when the partitions' version is
        the one it was computed at. A miss computes it inside a repeatable-read transaction that also reads the
        version, so the stored reply and its version are one snapshot. Without a cache (or on SQLite) it is
        compute()."""
        cache = self.reply_cache
        if cache is None or self.store.engine.dialect.name != "postgresql":
            return compute()
        parts = list(partition_names)
        where = (catalog, db_name, table_name, parts)
        key = (
            kind, catalog.strip().lower(), db_name.strip().lower(), table_name.strip().lower(), engine or DEFAULT_ENGINE,
            tuple(parts), tuple(c.lower() for c in columns),
        )
        with autocommit_connection(self.store.engine) as conn:
            version = direct.partitions_version(conn, *where, prepared=True)
            if version is not None:
                hit = cache.get(key, version)
                if hit is not None:
                    return hit
        if version is None or version[1] == 0:
            return compute()  # a missing table (compute says so) or none of the partitions: nothing to keep
        with self.store.engine.connect() as conn:
            conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                version = direct.partitions_version(conn, *where)
                self._snapshot.conn = conn
                try:
                    reply = compute()
                finally:
                    self._snapshot.conn = None
        if version is not None and version[1] > 0:
            cache.put(key, version, reply)
        return reply

    def aggregate(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG,
    ) -> AggregateResult:
        """Table-wide statistics of the columns over the named partitions, following Hive's get_aggr_stats_for
        (metastore.stats.aggregate holds the rules).

        Where the rules reduce to sums, minima and maxima over the partitions' stored values (every requested
        partition has the column, or only one has it, and the NDV is not merged from sketches; booleans and
        binaries always), the database sums the column up and returns one row for it; other columns fetch
        their per-partition rows and go through the Python aggregator.
        """
        names = list(dict.fromkeys(partition_names))
        cols = list(dict.fromkeys(c.lower() for c in columns))
        if not names or not cols:
            return AggregateResult([], 0)
        engine = engine or DEFAULT_ENGINE
        summed: dict[str, ColumnStatsEntry] = {}
        parts_found: int | None = None
        with self._read() as uow:
            conn = uow.connection
            slow = cols
            if self.aggregate_in_sql:
                sums = direct.column_sums(conn, catalog, db_name, table_name, names, cols, engine)
                by_column: dict[str, list[direct.ColumnSums]] = {}
                for cs in sums:
                    by_column.setdefault(cs.sums.column, []).append(cs)
                parts_found = self._parts_found(conn, by_column, names, cols, (catalog, db_name, table_name, engine))
                for col, found in by_column.items():
                    if len(found) == 1 and self._summable(found[0], len(names)):
                        summed[col] = found[0].sums
                slow = [c for c in cols if c not in summed and c in by_column]
                if not by_column:
                    _target(conn, catalog, db_name, table_name)  # NoSuchObject for a missing table
            rows = []
            if slow:
                rows = uow.column_stats.rows_for_aggregation(
                    db_name, table_name, names, slow, engine=engine, with_bit_vectors=True,
                    with_histograms=self.fetch_kll, catalog=catalog,
                )
        index = {n: i for i, n in enumerate(names)}
        per_column: dict[str, list[tuple[int, ColumnStatsEntry]]] = {}
        columns_per_partition: dict[str, int] = {}
        for part_name, entry in rows:
            per_column.setdefault(entry.column.lower(), []).append((index[part_name], entry))
            columns_per_partition[part_name] = columns_per_partition.get(part_name, 0) + 1
        if parts_found is None:
            parts_found = sum(1 for n in columns_per_partition.values() if n == len(cols))
        out: list[ColumnStatsEntry] = []
        for col in cols:
            if col in summed:
                out.append(self._visible(summed[col]))
                continue
            found = per_column.get(col)
            if not found:
                continue
            column_type = found[0][1].column_type
            stats = aggregate_partition_stats(column_type, [(i, e.stats) for i, e in found], num_partitions=len(names))
            out.append(self._visible(ColumnStatsEntry(column=found[0][1].column, column_type=column_type, stats=stats)))
        return AggregateResult(out, parts_found)

    @staticmethod
    def _parts_found(
        conn: sa.Connection, by_column: dict[str, list[direct.ColumnSums]], names: list[str], cols: list[str],
        where: tuple[str, str, str, str],
    ) -> int:
        """Partitions having statistics of every requested column; usually known from the sums alone."""
        if len(by_column) < len(cols):
            return 0  # some column has statistics in no partition
        if all(sum(cs.partitions for cs in found) == len(names) for found in by_column.values()):
            return len(names)  # every requested partition has every column
        catalog, db_name, table_name, engine = where
        return direct.partitions_with_every_column(conn, catalog, db_name, table_name, names, cols, engine)

    def _summable(self, sums: direct.ColumnSums, requested: int) -> bool:
        """Whether the aggregator would give this column the database's plain sums, minima and maxima."""
        kind = kind_for_type(sums.sums.column_type)
        if kind in (StatsKind.BOOLEAN, StatsKind.BINARY):
            return True  # summed up the same way whatever is missing, never an NDV
        if kind is None or kind is StatsKind.DECIMAL:
            return False  # decimal bounds keep their stored scale exactly only in Python
        if sums.partitions != requested and sums.partitions != 1:
            return False  # partitions without statistics: extrapolation
        if sums.bit_vectors == sums.partitions:
            return False  # every partition has a sketch: the NDV is the estimate of their union
        return not (self.fetch_kll and sums.histograms == sums.partitions)  # a merged histogram is returned

    def _visible(self, entry: ColumnStatsEntry) -> ColumnStatsEntry:
        """The entry with sketches only where the configuration returns them (as every read)."""
        stats = entry.stats
        changes = {}
        if stats.bit_vector is not None and not self.fetch_bitvector:
            changes["bit_vector"] = None
        if getattr(stats, "histogram", None) is not None and not self.fetch_kll:
            changes["histogram"] = None
        if not changes:
            return entry
        return ColumnStatsEntry(column=entry.column, column_type=entry.column_type, stats=replace(stats, **changes))

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
                target = _target(uow.connection, catalog, db_name, table_name)
                names = [canonical_partition_name(target, n) for n in partition_names]
            deleted = uow.column_stats.delete_partitions(
                db_name, table_name, names, columns, engine=engine, catalog=catalog
            )
            if columns is not None and names is not None and deleted == 0:
                raise NoSuchObject(
                    f"no statistics for column(s) {', '.join(repr(c) for c in columns)} of {db_name}.{table_name} "
                    f"partition(s) {', '.join(names)}"
                )
            return deleted


def _mark_accurate(
    conn: sa.Connection, table: str, owner_id: int, current: str | None, columns: list[str]
) -> str | None:
    """Add `columns` to the owner's COLUMN_STATS_ACCURATE unless they are in it already (the usual case of
    statistics written again): compare-and-set, so writers of different columns need no lock on the owner.
    Returns the value it leaves."""
    for _ in range(100):
        value = with_columns_accurate(current, columns)
        if value == current:
            return current
        if direct.replace_parameter(conn, table, owner_id, COLUMN_STATS_ACCURATE, current, value):
            return value
        current = direct.read_parameter(conn, table, owner_id, COLUMN_STATS_ACCURATE)
    raise MetastoreError(f"COLUMN_STATS_ACCURATE of {table} row {owner_id} keeps changing under concurrent writers; try again")


def _now() -> int:
    return int(time.time())


def _merge_one(old: ColumnStatsEntry | None, new: ColumnStatsEntry, owner: str) -> ColumnStatsEntry:
    if old is None:
        return new
    merged = merge_stats(old.stats, new.stats, where=f"column '{new.column}' of {owner}")
    return ColumnStatsEntry(column=new.column, column_type=new.column_type, stats=merged)


