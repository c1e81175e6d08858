"""Column statistics: validated writes (with optional merge), reads, aggregation and deletes.

Every call is one transaction: a request with one bad entry writes nothing. The service validates, merges,
decides what to cache and what errors say; the database work is the column statistics repository's
(metastore.store.column_stats): a write of table statistics is a locking lookup of the table (columns and
parameters in one statement), one upsert and, only if it changes, the COLUMN_STATS_ACCURATE parameter; where the
store can (features.one_round_trip_writes), once this process has written to the table (or the partition), a write
of one table's (or one partition's) statistics is one round trip instead (see _write_known_table and
_write_known_partition).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, cast

from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE
from metastore.errors import InvalidInput, InvalidObject, MetastoreError, NoSuchObject
from metastore.partnames import make_part_name, values_from_part_name
from metastore.service.stats_cache import ReplyCache
from metastore.service.streams import Stream, open_stream
from metastore.stats.accurate import basic_accurate
from metastore.stats.aggregate import PartitionStatsAggregator
from metastore.stats.exchange import AggregateResult, StatsWrite
from metastore.stats.merge import merge_stats
from metastore.stats.model import ColumnStatsEntry, StatsKind, kind_for_type
from metastore.stats.validate import normalize_entry
from metastore.store import Store, UnitOfWork
from metastore.store.chunking import IN_LIST_LIMIT, chunks
from metastore.store.column_stats import ColumnSums, PartitionTarget, StatsRepository, TableTarget
from metastore.store.column_stats.versions import Span
from metastore.store.refs import catalog_prefix


@dataclass(frozen=True)
class PartitionStatsPage:
    """A batch of partitions' statistics (partitions_stats_stream): those sent as their stored Thrift bytes
    (name, number of statistics, the bytes), and those read as entries (when the stored bytes cannot serve)."""

    encoded: list[tuple[str, int, bytes]]
    entries: dict[str, list[ColumnStatsEntry]]

    def __len__(self) -> int:
        return len(self.encoded) + len(self.entries)


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
        return int(num_rows) if basic_accurate(stats_accurate) else None
    except ValueError:
        return None


def _span(how: object) -> Span | None:
    """The span a reply-cache entry keeps (put by this service: a Span or None)."""
    return cast("Span | None", how)


def check_names(
    catalog: str, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str]
) -> None:
    """The one check of the names every statistics call carries: none may hold a NUL character (no object can
    be named so, and PostgreSQL text cannot carry one), refused alike on every database. InvalidInput."""
    for what, names in (
        ("catalog", (catalog,)), ("database", (db_name,)), ("table", (table_name,)), ("partition", partition_names),
        ("column", columns),
    ):
        if names and "\x00" in "".join(names):
            bad = next(n for n in names if "\x00" in n)
            raise InvalidInput(f"{what} name {bad!r} contains a NUL character")


def canonical_partition_name(target: TableTarget, name: str) -> str:
    """The stored form of a partition name a client sent (`DS=2024-01-01` → `ds=2024-01-01`)."""
    if not target.partition_keys:
        raise InvalidInput(f"{target.qualified_name} is not partitioned; it has no partition {name!r}")
    keys = [k.lower() for k in target.partition_keys]
    try:
        return make_part_name(keys, values_from_part_name(name, keys))
    except InvalidObject as exc:
        raise NoSuchObject(f"{target.qualified_name} partition ({name}) not found: {exc}") from None


#: What a statistics write leaves behind, for StatisticsService.remember: tables and partitions after it.
_Written = tuple[dict[tuple[str, str, str], TableTarget], dict[tuple[str, str, str, str], PartitionTarget]]


def _check_write_names(writes: Sequence[StatsWrite]) -> None:
    for w in writes:
        part = (w.partition_name,) if w.partition_name else ()
        check_names(w.catalog, w.db_name, w.table_name, part, [e.column for e in w.entries])


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


_K = TypeVar("_K")
_V = TypeVar("_V")


def _normalized_partition_entries(
    target: TableTarget, name: str, entries: Sequence[ColumnStatsEntry]
) -> dict[str, ColumnStatsEntry]:
    """Entries of the partition `name` checked against the table's columns, by lower-case column name: the last
    entry of a column wins. Raises InvalidInput."""
    owner = f"{target.qualified_name} partition {name}"
    normalized = {}
    for entry in entries:
        e = normalize_entry(entry, target.column(entry.column), owner=owner)
        normalized[e.column.lower()] = e
    return normalized


class _Known(Generic[_K, _V]):
    """What this process last wrote statistics to (tables as TableTarget by _table_key, partitions as
    PartitionTarget by _table_key + name): what the one-round-trip writes validate against. Bounded; a stale
    entry costs one refused attempt, never a wrong write."""

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self._entries: dict[_K, _V] = {}
        self._lock = threading.Lock()

    def get(self, key: _K) -> _V | None:
        return self._entries.get(key)

    def remember(self, key: _K, value: _V) -> None:
        with self._lock:
            self._entries.pop(key, None)
            while len(self._entries) >= self.capacity:
                del self._entries[next(iter(self._entries))]
            self._entries[key] = value

    def forget(self, key: _K) -> None:
        with self._lock:
            self._entries.pop(key, None)


def _missing_table(catalog: str, db_name: str, table_name: str) -> NoSuchObject:
    db, tbl = db_name.strip().lower(), table_name.strip().lower()
    return NoSuchObject(f"table {catalog_prefix(catalog)}{db}.{tbl} does not exist")


def _target(
    repo: StatsRepository, catalog: str, db_name: str, table_name: str, *, lock: str | None = None,
    asynchronous_commit: bool = False,
) -> TableTarget:
    target = repo.table_target(catalog, db_name, table_name, lock=lock, asynchronous_commit=asynchronous_commit)
    if target is None:
        raise _missing_table(catalog, db_name, table_name)
    return target


class StatisticsService:
    """Table and partition column statistics over the store."""

    def __init__(
        self, store: Store, *, fetch_bitvector: bool = False, fetch_kll: bool = False, aggregate_in_sql: bool = True,
        synchronous_commit: bool = True, reply_cache: ReplyCache | None = None, batch: int = IN_LIST_LIMIT,
    ) -> None:
        self.store = store
        # Encoded batched replies, validated against PARTITIONS.STATS_VERSION on every call (PostgreSQL only).
        self.reply_cache = reply_cache
        # The unit of work of a cache fill on this thread: reads join its snapshot (see cached_partition_reply).
        self._snapshot = threading.local()
        self.fetch_bitvector = fetch_bitvector
        self.fetch_kll = fetch_kll
        # False: on PostgreSQL, statistics writes do not wait for the WAL flush (Settings.stats_synchronous_commit).
        self.synchronous_commit = synchronous_commit
        # get_aggr_stats_for sums columns up in SQL where the rules allow (see aggregate); off, every column
        # goes through the Python aggregator (the two must agree: tests compare them).
        self.aggregate_in_sql = aggregate_in_sql
        # PostgreSQL: tables written to, for the one-round-trip write of their statistics (_write_known_table).
        self._known_tables: _Known[tuple[str, str, str], TableTarget] = _Known()
        # PostgreSQL: partitions written to, for the one-round-trip write of one partition's statistics.
        self._known_partitions: _Known[tuple[str, str, str, str], PartitionTarget] = _Known(capacity=8192)
        # Partition names per statement of a read of many partitions: requests up to this size are one
        # statement; larger ones are read (and streamed, see partitions_stats_stream) a batch at a time.
        self.batch = batch

    @contextmanager
    def _read(self, *, consistent: bool = False) -> Iterator[StatsRepository]:
        """The statistics repository for reading, in autocommit where the store offers it (Store.autocommit),
        or in one snapshot when `consistent` (several statements that must see the same data). Inside
        cached_partition_reply's fill, reads use its snapshot."""
        joined = getattr(self._snapshot, "uow", None)
        if joined is not None:
            yield joined.column_stats
            return
        with self.store.snapshot() if consistent else self.store.autocommit() as uow:
            yield uow.column_stats

    # ------------------------------------------------------------------ writes

    def write(self, writes: Sequence[StatsWrite], *, merge: bool = False, engine: str = DEFAULT_ENGINE) -> None:
        """Validate and store statistics of tables and partitions in one transaction.

        merge combines them with the stored statistics (Hive's needMerge); otherwise they replace them.
        """
        _check_write_names(writes)
        engine = engine or DEFAULT_ENGINE
        if not writes:
            return
        if self._write_known_table(writes, merge, engine) or self._write_known_partition(writes, merge, engine):
            return
        with self.store.transaction() as uow:
            written = self._write_in(uow, writes, merge, engine, asynchronous=not self.synchronous_commit)
        self.remember(written)

    def write_in(self, uow: UnitOfWork, writes: Sequence[StatsWrite], *, engine: str = DEFAULT_ENGINE) -> _Written:
        """:meth:`write` (not merged) as part of the caller's transaction ``uow``, with what else it writes: one
        commit for all (durable: the statistics' asynchronous commit is not used). Returns what to
        :meth:`remember` once the caller's transaction has committed."""
        _check_write_names(writes)
        if not writes:
            return {}, {}
        return self._write_in(uow, writes, False, engine or DEFAULT_ENGINE, asynchronous=False)

    def _write_in(
        self, uow: UnitOfWork, writes: Sequence[StatsWrite], merge: bool, engine: str, *, asynchronous: bool
    ) -> _Written:
        tables: dict[tuple[str, str, str], TableTarget] = {}
        parts: dict[tuple[str, str, str, str], PartitionTarget] = {}
        repo = uow.column_stats
        for key, tw in self._validated(repo, writes, merge, asynchronous=asynchronous).items():
            tables[key] = self._write_table(repo, tw, merge, engine) if tw.table_entries else tw.target
            if tw.partition_entries:
                for name, after in self._write_partitions(repo, tw, merge, engine).items():
                    parts[(*key, name)] = after
        return tables, parts

    def remember(self, written: _Written) -> None:
        """After a committed write: the tables and partitions as it left them, what the next write of their
        statistics validates against (the one-round-trip writes)."""
        tables, parts = written
        if self.store.features.one_round_trip_writes:
            # As they are after this write: what the next write of their statistics validates against.
            for key, target in tables.items():
                self._known_tables.remember(key, target)
            for part_key, after in parts.items():
                self._known_partitions.remember(part_key, after)

    def _write_known_table(self, writes: Sequence[StatsWrite], merge: bool, engine: str) -> bool:
        """The common write, statistics of one table (not merged), in one round trip: validated against the
        table as this process last wrote to it, then stored by StatsRepository.put_table_stats, which writes only
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
        except MetastoreError:
            return False
        when = _now() if w.last_analyzed is None else w.last_analyzed
        # False for any entry or value it refuses, or when COLUMN_STATS_ACCURATE must change: the general path
        # does that, and says why.
        with self.store.autocommit() as uow:
            done = uow.column_stats.put_table_stats(
                key[0], target, list(entries.values()), engine=engine, last_analyzed=when,
                synchronous_commit=self.synchronous_commit,
            )
        if not done:
            self._known_tables.forget(key)
        return done

    def _write_known_partition(self, writes: Sequence[StatsWrite], merge: bool, engine: str) -> bool:
        """The write of one partition's statistics (not merged) in one round trip, as _write_known_table: validated
        against the table and the partition as this process last wrote to them, then stored by
        StatsRepository.put_partition_stats, which writes only if both are still so. True when done; False sends
        the write down the general path (a table or partition not seen yet or changed since, a column new to the
        partition's COLUMN_STATS_ACCURATE, any rejected entry: errors always come from the general path)."""
        if merge or len(writes) != 1 or not writes[0].entries:
            return False
        w = writes[0]
        key = _table_key(w)
        target = self._known_tables.get(key)
        if w.partition_name is None or target is None:
            return False
        try:
            name = canonical_partition_name(target, w.partition_name)
            part = self._known_partitions.get((*key, name))
            if part is None:
                return False
            entries = _normalized_partition_entries(target, name, w.entries)
        except MetastoreError:
            return False
        when = _now() if w.last_analyzed is None else w.last_analyzed
        with self.store.autocommit() as uow:
            done = uow.column_stats.put_partition_stats(
                key[0], target, part, list(entries.values()), engine=engine, last_analyzed=when,
                synchronous_commit=self.synchronous_commit,
            )
        if not done:
            self._known_partitions.forget((*key, name))
        return done

    def _validated(
        self, repo: StatsRepository, writes: Sequence[StatsWrite], merge: bool, *, asynchronous: bool
    ) -> dict[tuple[str, str, str], _TableWrites]:
        keys = sorted({_table_key(w) for w in writes})
        merged_tables = {_table_key(w) for w in writes if w.partition_name is None and merge}
        # Tables are looked up and locked in name order: no deadlock between requests. A merge of table-level
        # statistics reads, merges and writes them: exclusive; other writes only keep alter/drop away.
        grouped: dict[tuple[str, str, str], _TableWrites] = {}
        for i, k in enumerate(keys):
            target = _target(
                repo, *k, lock="update" if k in merged_tables else "share",
                asynchronous_commit=i == 0 and asynchronous,
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
                tw.partition_entries.setdefault(name, {}).update(
                    _normalized_partition_entries(target, name, w.entries)
                )
                tw.partition_last_analyzed[name] = w.last_analyzed
        return grouped

    def _write_table(self, repo: StatsRepository, tw: _TableWrites, merge: bool, engine: str) -> TableTarget:
        """Write the table-level entries; the table as it is after the write (its COLUMN_STATS_ACCURATE)."""
        target = tw.target
        entries = list(tw.table_entries.values())
        if merge:
            stored = {
                e.column: e
                for e, _ in repo.read_table_stats(
                    tw.catalog, target.db_name, target.table_name, [e.column for e in entries], engine,
                    bit_vectors=True, histograms=True,
                )
            }
            entries = [_merge_one(stored.get(e.column.lower()), e, target.qualified_name) for e in entries]
        when = _now() if tw.table_last_analyzed is None else tw.table_last_analyzed
        return repo.write_table_stats(target, entries, engine=engine, last_analyzed=when)

    def _write_partitions(
        self, repo: StatsRepository, tw: _TableWrites, merge: bool, engine: str
    ) -> dict[str, PartitionTarget]:
        """Write the partitions' entries; the partitions as they are after the write (their COLUMN_STATS_ACCURATE)."""
        target = tw.target
        names = list(tw.partition_entries)
        parts = repo.partition_targets(target.tbl_id, names, lock=True)
        missing = [n for n in names if n not in parts]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise NoSuchObject(f"partition(s) of {target.qualified_name} do not exist: {shown}")
        by_part = {name: list(entries.values()) for name, entries in tw.partition_entries.items()}
        if merge:
            columns = sorted({e.column for entries in by_part.values() for e in entries})
            stored: dict[tuple[str, str], ColumnStatsEntry] = {
                (name, e.column): e
                for name, e, _ in repo.read_partition_stats(
                    tw.catalog, target.db_name, target.table_name, names, columns, engine,
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
        when = {name: now if (at := tw.partition_last_analyzed.get(name)) is None else at for name in by_part}
        return repo.write_partition_stats(parts, by_part, engine=engine, last_analyzed=when)

    # ------------------------------------------------------------------ reads

    def table_stats(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG, sketches: bool = True,
    ) -> list[ColumnStatsEntry]:
        """Table-level statistics of the columns that have them; NoSuchObject for a missing table. ``sketches``
        False leaves out bit vectors and histograms whatever this service is configured to send."""
        check_names(catalog, db_name, table_name, (), columns)
        with self._read() as repo:
            found = repo.read_table_stats(
                catalog, db_name, table_name, columns, engine or DEFAULT_ENGINE,
                bit_vectors=self.fetch_bitvector and sketches, histograms=self.fetch_kll and sketches, prepared=True,
            )
            if not found:
                _target(repo, catalog, db_name, table_name)
            return [e for e, _ in found]

    def table_stats_encoded(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG, timestamps_as_long: bool = True,
    ) -> tuple[int, bytes] | None:
        """table_stats as (number of statistics, their Thrift ColumnStatisticsObj bytes in the order of
        `columns`), from the bytes stored with each row; None when they cannot answer (this service returns
        sketches, or see column_stats.encoded.table_stats_encoded): read with table_stats. NoSuchObject for a
        missing table."""
        check_names(catalog, db_name, table_name, (), columns)
        if self.fetch_bitvector or self.fetch_kll:
            return None
        with self._read() as repo:
            found = repo.read_table_stats_encoded(
                catalog, db_name, table_name, columns, engine or DEFAULT_ENGINE, timestamps=timestamps_as_long,
                prepared=True,
            )
            if found is not None and found[0] == 0:
                _target(repo, catalog, db_name, table_name)
        return found

    def table_column_stats(
        self, db_name: str, table_name: str, column: str, *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[ColumnStatsEntry, int | None]:
        """One column's table-level statistics and when they were analysed; NoSuchObject when absent."""
        check_names(catalog, db_name, table_name, (), (column,))
        with self._read() as repo:
            found = repo.read_table_stats(
                catalog, db_name, table_name, [column], engine or DEFAULT_ENGINE,
                bit_vectors=self.fetch_bitvector, histograms=self.fetch_kll, prepared=True,
            )
            if not found:
                target = _target(repo, catalog, db_name, table_name)
                if target.column(column) is None:
                    raise NoSuchObject(f"column '{column}' does not exist in {target.qualified_name}")
                raise NoSuchObject(f"no statistics for column '{column}' of {target.qualified_name}")
            return found[0]

    def partition_column_stats(
        self, db_name: str, table_name: str, partition_name: str, column: str, *, engine: str = DEFAULT_ENGINE,
        catalog: str = DEFAULT_CATALOG,
    ) -> tuple[ColumnStatsEntry, str, int | None]:
        """One column's statistics in one partition (entry, canonical partition name, lastAnalyzed)."""
        check_names(catalog, db_name, table_name, (partition_name,), (column,))
        engine = engine or DEFAULT_ENGINE
        options = {"bit_vectors": self.fetch_bitvector, "histograms": self.fetch_kll}
        with self._read() as repo:
            # A stored name is canonical: try the name as sent first, canonicalise only when it is not found.
            found = repo.read_partition_stats(catalog, db_name, table_name, [partition_name], [column], engine, **options)
            if found:
                name, entry, when = found[0]
                return entry, name, when
            target = _target(repo, catalog, db_name, table_name)
            name = canonical_partition_name(target, partition_name)
            if name != partition_name:
                found = repo.read_partition_stats(catalog, db_name, table_name, [name], [column], engine, **options)
                if found:
                    return found[0][1], name, found[0][2]
            if not repo.partition_targets(target.tbl_id, [name], lock=False):
                raise NoSuchObject(f"{target.qualified_name} partition ({name}) not found")
            if target.column(column) is None:
                raise NoSuchObject(f"column '{column}' does not exist in {target.qualified_name}")
            raise NoSuchObject(f"no statistics for column '{column}' of {target.qualified_name} partition {name}")

    def partitions_stats(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG, sketches: bool = True,
    ) -> dict[str, list[ColumnStatsEntry]]:
        """{partition name: statistics in the order of `columns`} for the named partitions that have any
        (``sketches`` as for table_stats)."""
        check_names(catalog, db_name, table_name, partition_names, columns)
        with self._read() as repo:
            found = repo.read_partition_stats(
                catalog, db_name, table_name, partition_names, columns, engine or DEFAULT_ENGINE,
                bit_vectors=self.fetch_bitvector and sketches, histograms=self.fetch_kll and sketches,
            )
            if not found:
                _target(repo, catalog, db_name, table_name)
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
        service returns sketches, or see column_stats.encoded.partition_stats_encoded): read with
        partitions_stats."""
        check_names(catalog, db_name, table_name, partition_names, columns)
        if self.fetch_bitvector or self.fetch_kll:
            return None
        with self._read() as repo:
            found = repo.read_partition_stats_encoded(
                catalog, db_name, table_name, partition_names, columns, engine or DEFAULT_ENGINE,
                timestamps=timestamps_as_long,
            )
            if found == []:
                _target(repo, catalog, db_name, table_name)
        return found

    def _reply_key(
        self, kind: str, catalog: str, db_name: str, table_name: str, engine: str, parts: Sequence[str],
        columns: Sequence[str],
    ) -> tuple[object, ...]:
        """The reply cache's key of a request. The names (in order: an aggregate depends on it) go in as a
        digest: a key of 100,000 names would outweigh the reply it stands for."""
        names = "\x00".join(parts).encode("utf-8", "surrogatepass")  # check_names: no name holds a NUL
        return (
            kind, catalog.strip().lower(), db_name.strip().lower(), table_name.strip().lower(), engine or DEFAULT_ENGINE,
            len(parts), hashlib.blake2b(names, digest_size=16).digest(), tuple(c.lower() for c in columns),
        )

    def cached_reply(
        self, kind: str, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG,
    ) -> bytes | None:
        """The reply kept for this request (see cached_partition_reply) if the partitions' statistics are
        unchanged since it was computed; None otherwise, or without a cache."""
        check_names(catalog, db_name, table_name, partition_names, columns)
        cache = self.reply_cache
        if cache is None or not self.store.features.partition_stats_versions:
            return None
        parts = list(partition_names)
        key = self._reply_key(kind, catalog, db_name, table_name, engine, parts, columns)
        span = _span(cache.how(key))
        with self.store.autocommit() as uow:
            version = uow.column_stats.partitions_version(catalog, db_name, table_name, parts, prepared=True, span=span)
        if version is None:
            return None
        return cache.get(key, version, span)

    def cached_partition_reply(
        self, kind: str, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str],
        compute: Callable[[], bytes], *, engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG,
    ) -> bytes:
        """The encoded reply `compute` builds from reads of this service about the named partitions' statistics
        (`kind` tells replies of different calls apart), from the reply cache when the partitions' version is
        the one it was computed at. A miss computes it inside a repeatable-read transaction that also reads the
        version, so the stored reply and its version are one snapshot. Without a cache (or on SQLite) it is
        compute()."""
        check_names(catalog, db_name, table_name, partition_names, columns)
        cache = self.reply_cache
        if cache is None or not self.store.features.partition_stats_versions:
            return compute()
        parts = list(partition_names)
        where = (catalog, db_name, table_name, parts)
        key = self._reply_key(kind, catalog, db_name, table_name, engine, parts, columns)
        span = _span(cache.how(key))
        with self.store.autocommit() as uow:
            version = uow.column_stats.partitions_version(*where, prepared=True, span=span)
            if version is not None:
                hit = cache.get(key, version, span)
                if hit is not None:
                    return hit
        if version is None or version[1] == 0:
            return compute()  # a missing table (compute says so) or none of the partitions: nothing to keep
        with self.store.snapshot() as uow:
            version = uow.column_stats.partitions_version(*where)
            self._snapshot.uow = uow
            try:
                reply = compute()
            finally:
                self._snapshot.uow = None
            keep = version is not None and version[1] > 0
            span = uow.column_stats.partitions_span(*where) if keep and cache.keeps(key, len(reply)) else None
        if keep and version is not None:
            cache.put(key, version, reply, span)
        return reply

    def partitions_stats_stream(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG, timestamps_as_long: bool = True,
        cache_as: str | None = None,
    ) -> Stream[PartitionStatsPage]:
        """The statistics of partitions_stats, `batch` partitions a page, inside one snapshot: count = the
        partitions that have statistics of any of the columns (known before the first page), each page those
        of a batch of names, as their stored bytes where these can serve (see partitions_stats_encoded).
        NoSuchObject for a missing table, raised here. With the reply cache, `cache_as` names the kind of reply
        the caller builds from the pages: stream.keep then stores it, at the version read in the snapshot."""
        check_names(catalog, db_name, table_name, partition_names, columns)
        parts = list(dict.fromkeys(partition_names))
        cols = list(dict.fromkeys(c.lower() for c in columns))
        engine = engine or DEFAULT_ENGINE
        batch = self.batch
        version: list[tuple[int, int, int] | None] = []
        span: list[Span | None] = []  # of the partitions when they are a run (versions.partitions_span)
        cache = self.reply_cache if self.store.features.partition_stats_versions else None

        def start(uow: UnitOfWork) -> tuple[int, Iterator[PartitionStatsPage]]:
            repo = uow.column_stats
            _target(repo, catalog, db_name, table_name)
            if cache is not None and cache_as is not None:
                version.append(repo.partitions_version(catalog, db_name, table_name, list(partition_names)))
                if version[0] is not None and version[0][1] > 0:
                    span.append(repo.partitions_span(catalog, db_name, table_name, list(partition_names)))
            count = sum(
                repo.count_partitions_with_stats(catalog, db_name, table_name, names, cols, engine)
                for names in chunks(parts, batch)
            )
            pages = (
                self._stats_page(repo, catalog, db_name, table_name, names, cols, engine, timestamps_as_long)
                for names in chunks(parts, batch)
            )
            return count, pages

        stream = open_stream(self.store.snapshot(), start)
        if cache is not None and cache_as is not None and version and version[0] is not None and version[0][1] > 0:
            key = self._reply_key(cache_as, catalog, db_name, table_name, engine, list(partition_names), columns)
            at, how = version[0], (span or [None])[0]
            stream.keep = lambda reply: cache.put(key, at, reply, how)
            stream.keep_limit = cache.keep_limit(key)
        return stream

    def _stats_page(
        self, repo: StatsRepository, catalog: str, db_name: str, table_name: str, names: Sequence[str],
        cols: list[str], engine: str, timestamps_as_long: bool,
    ) -> PartitionStatsPage:
        """One batch of partitions' statistics: their stored bytes where these serve, else entries."""
        if not (self.fetch_bitvector or self.fetch_kll):
            encoded = repo.read_partition_stats_encoded(
                catalog, db_name, table_name, names, cols, engine, timestamps=timestamps_as_long
            )
            if encoded is not None:
                return PartitionStatsPage(encoded, {})
        found = repo.read_partition_stats(
            catalog, db_name, table_name, names, cols, engine, bit_vectors=self.fetch_bitvector,
            histograms=self.fetch_kll,
        )
        order = {c: i for i, c in enumerate(cols)}
        entries: dict[str, list[ColumnStatsEntry]] = {}
        for name, entry, _ in found:
            entries.setdefault(name, []).append(entry)
        for listed in entries.values():
            listed.sort(key=lambda e: order[e.column])
        return PartitionStatsPage([], entries)

    def aggregate(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, catalog: str = DEFAULT_CATALOG,
    ) -> AggregateResult:
        """Table-wide statistics of the columns over the named partitions, following Hive's get_aggr_stats_for
        (metastore.stats.aggregate holds the rules).

        Where the rules reduce to sums, minima and maxima over the partitions' stored values (every requested
        partition has the column, or only one has it, and the NDV is not merged from sketches; booleans and
        binaries always), the database sums the column up and returns one row for it; other columns fetch
        their per-partition rows and go through the Python aggregator. Either way `batch` names at a time
        (one snapshot for all), the aggregator fed in name order as the rows come: memory stays bounded for
        100,000 partitions, and the answer is the one of a single batch.
        """
        check_names(catalog, db_name, table_name, partition_names, columns)
        names = list(dict.fromkeys(partition_names))
        cols = list(dict.fromkeys(c.lower() for c in columns))
        if not names or not cols:
            return AggregateResult([], 0)
        engine = engine or DEFAULT_ENGINE
        batch = self.batch
        summed: dict[str, ColumnStatsEntry] = {}
        parts_found: int | None = None
        # Per column aggregated in Python: the aggregator, and (smallest partition name, entry) whose column
        # name and type the result carries (as when all rows were read at once and sorted by name).
        aggregators: dict[str, PartitionStatsAggregator] = {}
        first_rows: dict[str, tuple[str, ColumnStatsEntry]] = {}
        with self._read(consistent=len(names) > batch) as repo:
            slow = cols
            if self.aggregate_in_sql:
                by_column, parts_found = repo.sum_partition_stats(
                    catalog, db_name, table_name, names, cols, engine, batch=batch
                )
                for col, col_sums in by_column.items():
                    if len(col_sums) == 1 and self._summable(col_sums[0], len(names)):
                        summed[col] = col_sums[0].sums
                slow = [c for c in cols if c not in summed and c in by_column]
                if not by_column:
                    _target(repo, catalog, db_name, table_name)  # NoSuchObject for a missing table
            found_all = 0
            any_rows = False
            for start in range(0, len(names) if slow else 0, batch):
                names_batch = names[start : start + batch]
                rows = repo.read_partition_stats(
                    catalog, db_name, table_name, names_batch, slow, engine, bit_vectors=True,
                    histograms=self.fetch_kll,
                )
                any_rows = any_rows or bool(rows)
                index = {n: start + i for i, n in enumerate(names_batch)}
                per_partition: dict[str, int] = {}
                for part_name, entry, _ in sorted(rows, key=lambda r: index[r[0]]):
                    col = entry.column.lower()
                    aggregator = aggregators.get(col)
                    if aggregator is None:
                        aggregator = aggregators[col] = PartitionStatsAggregator(
                            entry.column_type, num_partitions=len(names)
                        )
                    aggregator.add(index[part_name], entry.stats)
                    first = first_rows.get(col)
                    if first is None or part_name < first[0]:
                        first_rows[col] = (part_name, entry)
                    per_partition[part_name] = per_partition.get(part_name, 0) + 1
                found_all += sum(1 for n in per_partition.values() if n == len(cols))
            if slow and not any_rows and not self.aggregate_in_sql:
                _target(repo, catalog, db_name, table_name)  # NoSuchObject for a missing table
        if parts_found is None:
            parts_found = found_all
        out: list[ColumnStatsEntry] = []
        for col in cols:
            if col in summed:
                out.append(self._visible(summed[col]))
                continue
            aggregator = aggregators.get(col)
            if aggregator is None:
                continue
            _, named = first_rows[col]
            aggregator.column_type = named.column_type  # as the entry of the smallest partition name says
            entry = ColumnStatsEntry(column=named.column, column_type=named.column_type, stats=aggregator.result())
            out.append(self._visible(entry))
        return AggregateResult(out, parts_found)

    def _summable(self, sums: ColumnSums, requested: int) -> bool:
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
        changes: dict[str, Any] = {}  # fields of stats' own dataclass, whichever kind it is
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
        check_names(catalog, db_name, table_name, (), columns or ())
        with self.store.transaction() as uow:
            deleted = uow.column_stats.delete_table_stats(catalog, db_name, table_name, columns, engine=engine)
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
        check_names(catalog, db_name, table_name, partition_names or (), columns or ())
        with self.store.transaction() as uow:
            names = None
            if partition_names is not None:
                target = _target(uow.column_stats, catalog, db_name, table_name)
                names = [canonical_partition_name(target, n) for n in partition_names]
            deleted = uow.column_stats.delete_partition_stats(catalog, db_name, table_name, names, columns, engine=engine)
            if columns is not None and names is not None and deleted == 0:
                raise NoSuchObject(
                    f"no statistics for column(s) {', '.join(repr(c) for c in columns)} of {db_name}.{table_name} "
                    f"partition(s) {', '.join(names)}"
                )
            return deleted


def _now() -> int:
    return int(time.time())


def _merge_one(old: ColumnStatsEntry | None, new: ColumnStatsEntry, owner: str) -> ColumnStatsEntry:
    if old is None:
        return new
    merged = merge_stats(old.stats, new.stats, where=f"column '{new.column}' of {owner}")
    return ColumnStatsEntry(column=new.column, column_type=new.column_type, stats=merged)


