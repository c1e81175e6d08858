"""ANALYZE TABLE [db.]t [PARTITION (k='v'[, ...])] COMPUTE STATISTICS [NOSCAN | FOR COLUMNS [c, ...] | FOR ALL
COLUMNS], computed in this process next to the data and persisted through the client API.

- Basic statistics (numFiles, totalSize, numRows, rawDataSize, COLUMN_STATS_ACCURATE's BASIC_STATS) go into
  the table's or each partition's parameters (alter_table / alter_partitions in batches); NOSCAN reads only
  the file listing.
- FOR COLUMNS computes each partition's column statistics (footers where they suffice, a scan of only the
  columns and streams needed otherwise, sketches from our files' metadata, a per-file cache for files seen
  before) and writes them in set_aggr_stats_for batches, then the table-level statistics: merged locally from
  the partitions' sketches when every partition was analysed in this run, else by the metastore's
  aggregation over all partitions (get_aggr_stats_for), which merges the stored sketches.
- A partial partition spec (`PARTITION (ds='2024-01-01')` of a table partitioned by ds, hr, or a bare key
  `PARTITION (ds)`) means every matching partition.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from metastore.catalog import FieldSchema, Partition, Table
from metastore.client import StatsWrite
from metastore.errors import NoSuchObject
from metastore.sql.basic_stats import with_basic_stats
from metastore.sql.errors import SqlError
from metastore.sql.output import Result
from metastore.sql.partition_specs import partial_values, partition_name, resolve_spec, spec_text
from metastore.sql.statements import Analyze, AnalyzeMode
from metastore.sql.table_files import data_location, list_data_files, qualified, require_orc
from metastore.stats.model import ColumnStats, ColumnStatsEntry, kind_for_type
from metastore.storage import FileRef

if TYPE_CHECKING:
    from metastore.sql.session import Session

#: Partitions whose parameters are replaced per alter_partitions call.
ALTER_BATCH = 500


@dataclass
class _Target:
    """The table (partition None) or one partition, its location and data files."""

    partition: Partition | None
    name: str | None  # partition name
    location: str
    files: list[FileRef]


@dataclass
class _Outcome:
    target: _Target
    num_rows: int | None
    num_files: int
    total_size: int
    raw_data_size: int | None
    columns: dict[str, ColumnStats]
    files_read: int = 0
    bytes_read: int = 0
    files_reused: int = 0
    result: Any = None  # the harvest's AnalyzeResult (FOR COLUMNS), kept for merging into table statistics


def _columns(table: Table, st: Analyze) -> list[FieldSchema]:
    """The data columns whose statistics are asked for (every column with a statistics kind by default)."""
    if st.columns is None:
        return [c for c in table.sd.cols if kind_for_type(c.type) is not None]
    out: list[FieldSchema] = []
    keys = {k.name.lower() for k in table.partition_keys}
    for name in st.columns:
        if name.lower in keys:
            raise SqlError(
                f"'{name.value}' is a partition column of {qualified(table)}; its values are in the partition "
                "names, it has no column statistics",
                name.position,
            )
        col = next((c for c in table.sd.cols if c.name.lower() == name.lower), None)
        if col is None:
            raise SqlError(f"column '{name.value}' does not exist in {qualified(table)}", name.position)
        if kind_for_type(col.type) is None:
            raise SqlError(f"column '{name.value}' is {col.type}; Hive keeps no statistics of complex types",
                           name.position)
        if col not in out:
            out.append(col)
    return out


def _targets(ex: Session, table: Table, st: Analyze) -> tuple[list[_Target], int]:
    """The targets to analyse and how many partitions the table has in all (0 when unpartitioned)."""
    if not table.partition_keys:
        if st.spec is not None:
            raise SqlError(f"{qualified(table)} is not partitioned; ANALYZE takes no PARTITION", st.spec.position)
        location = data_location(table.sd.location, qualified(table), st.table.position)
        return [_Target(None, None, location, list_data_files(location, ex.options.storage))], 0
    all_names = ex.client.list_partition_names(table.db_name, table.table_name)
    if st.spec is None:
        partitions = ex.client.list_partitions(table.db_name, table.table_name)
    else:
        values = resolve_spec(table, st.spec, full=False, what="ANALYZE")
        if all(v is not None for v in values):
            try:
                partitions = [ex.client.get_partition(table.db_name, table.table_name, [v or "" for v in values])]
            except NoSuchObject:
                raise SqlError(
                    f"partition ({spec_text(table, values)}) of {qualified(table)} does not exist", st.spec.position
                ) from None
        else:
            partitions = ex.client.list_partitions(table.db_name, table.table_name, partial_values(values))
            if not partitions:
                raise SqlError(
                    f"no partition of {qualified(table)} matches ({spec_text(table, values)})", st.spec.position
                )
    targets = []
    for p in partitions:
        name = partition_name(table, p.values)
        location = data_location(p.sd.location, f"{qualified(table)} partition {name}", st.table.position)
        targets.append(_Target(p, name, location, list_data_files(location, ex.options.storage)))
    return targets, len(all_names)


def _open_cache(option: str | None) -> Any:
    if option is None:
        return None
    from metastore.stats.filecache import FileStatsCache

    return FileStatsCache.open_default() if option == "default" else FileStatsCache(option)


class _Progress:
    """One tqdm bar over all files of the statement (on stderr, only when asked)."""

    def __init__(self, ex: Session, total: int, description: str) -> None:
        self.bar = None
        if ex.options.progress and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="file", desc=description, file=ex.options.progress_stream,
                            leave=False, dynamic_ncols=True)
        self.done_before = 0
        self.current = 0

    def callback(self, done: int, _total: int) -> None:
        if self.bar is not None:
            new = self.done_before + done
            self.bar.update(new - self.current)
            self.current = new

    def finish_target(self, files: int) -> None:
        self.done_before += files
        if self.bar is not None and self.current < self.done_before:
            self.bar.update(self.done_before - self.current)
            self.current = self.done_before

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _basic(ex: Session, target: _Target, scan: bool, cache: Any) -> tuple[int | None, int, int, int | None]:
    """(numRows, numFiles, totalSize, rawDataSize) of a target's files (rows and raw size None for NOSCAN)."""
    from metastore.stats.harvest import basic_stats

    stats = basic_stats(target.files, scan=scan, cache=cache, storage_options=ex.options.storage)
    return stats.num_rows, stats.num_files, stats.total_size, stats.raw_data_size


def _persist_parameters(ex: Session, table: Table, outcomes: Sequence[_Outcome]) -> None:
    """Basic statistics into the table's or the partitions' parameters (alter_partitions in batches)."""
    def params_of(current: dict[str, str], o: _Outcome) -> dict[str, str]:
        return with_basic_stats(
            current, num_files=o.num_files, total_size=o.total_size, num_rows=o.num_rows,
            raw_data_size=o.raw_data_size,
        )

    if not table.partition_keys:
        (o,) = outcomes
        current = ex.client.get_table(table.db_name, table.table_name)
        ex.client.alter_table(table.db_name, table.table_name, replace(current, parameters=params_of(current.parameters, o)))
        return
    for start in range(0, len(outcomes), ALTER_BATCH):
        chunk = outcomes[start : start + ALTER_BATCH]
        parts = []
        for o in chunk:
            assert o.target.partition is not None
            parts.append(replace(o.target.partition, parameters=params_of(o.target.partition.parameters, o)))
        ex.client.alter_partitions(table.db_name, table.table_name, parts)


def _table_level(
    ex: Session, table: Table, columns: list[FieldSchema], merged: Any, analysed: int, partitions_total: int
) -> list[ColumnStatsEntry]:
    """Table-level statistics of a partitioned table: ``merged`` (the run over every partition's files, its
    sketches merged) when every partition was analysed, else the metastore's aggregation over all partitions."""
    if analysed == partitions_total:
        return [
            ColumnStatsEntry(column=c.name, column_type=c.type, stats=merged.columns[c.name])
            for c in columns if c.name in merged.columns
        ]
    names = ex.client.list_partition_names(table.db_name, table.table_name)
    result = ex.client.aggregate_statistics(table.db_name, table.table_name, names, [c.name for c in columns])
    return list(result.entries)


def analyze(ex: Session, st: Analyze) -> Result:
    started = time.monotonic()
    before = _process_age()
    clock: dict[str, float] = {}  # wall seconds per phase, for --verbose
    table = ex.table(st.table)
    columns: list[FieldSchema] = []
    if st.mode is AnalyzeMode.COLUMNS:
        require_orc(table, "ANALYZE ... FOR COLUMNS", st.table.position)
        columns = _columns(table, st)
        if not columns:
            raise SqlError(f"{qualified(table)} has no column with statistics to compute", st.table.position)
    elif st.mode is AnalyzeMode.BASIC:
        require_orc(table, "ANALYZE ... COMPUTE STATISTICS (use NOSCAN for other formats)", st.table.position)
    targets, partitions_total = _targets(ex, table, st)
    clock[PHASE_LISTING] = time.monotonic() - started
    if not targets:
        return Result(message=f"{qualified(table)} has no partitions to analyze")
    hive_types = {c.name: c.type for c in columns}
    total_files = sum(len(t.files) for t in targets)
    progress = _Progress(ex, total_files, f"analyze {qualified(table)}")
    cache = _open_cache(ex.options.stats_cache) if st.mode is not AnalyzeMode.NOSCAN else None
    outcomes: list[_Outcome] = []
    run: Any = None  # the harvest over every target's files (FOR COLUMNS)
    try:
        if columns:
            from metastore.stats.harvest import analyze_files, split_result

            # One run over all targets' files: the workers stay busy across partitions (one pool, not one per
            # partition), and the run's merged partials are the table statistics when every partition is in it.
            run = analyze_files(
                [f for t in targets for f in t.files], [c.name for c in columns], hive_types=hive_types,
                table_columns=[c.name for c in table.sd.cols], want_ndv=True,
                want_histograms=ex.options.histograms, cache=cache, progress=progress.callback,
                storage_options=ex.options.storage,
            )
            split_started = time.monotonic()
            for target, result in zip(targets, split_result(run, [len(t.files) for t in targets]), strict=True):
                outcomes.append(_Outcome(
                    target, result.num_rows, result.num_files, result.total_size, result.raw_data_size,
                    dict(result.columns), result.files_read, result.bytes_read, result.files_reused, result,
                ))
            clock.update(run.phases)
            clock[PHASE_MERGE] = clock.get(PHASE_MERGE, 0.0) + time.monotonic() - split_started
        else:
            for target in targets:
                scan = st.mode is AnalyzeMode.BASIC
                num_rows, num_files, total_size, raw = _basic(ex, target, scan, cache)
                outcomes.append(_Outcome(target, num_rows, num_files, total_size, raw, {}))
                progress.finish_target(len(target.files))
    finally:
        progress.close()
        if cache is not None:
            cache.close()

    persist_started = time.monotonic()
    _persist_parameters(ex, table, outcomes)
    writes: list[StatsWrite] = []
    if columns:
        now = int(time.time())
        for o in outcomes:
            entries = [
                ColumnStatsEntry(column=c.name, column_type=c.type, stats=o.columns[c.name])
                for c in columns if c.name in o.columns
            ]
            writes.append(StatsWrite(table.db_name, table.table_name, entries, partition_name=o.target.name,
                                     last_analyzed=now))
        ex.client.write_statistics(writes)
        if table.partition_keys:
            table_entries = _table_level(ex, table, columns, run, len(outcomes), partitions_total)
            if table_entries:
                ex.client.write_statistics([StatsWrite(table.db_name, table.table_name, table_entries,
                                                       last_analyzed=now)])
    clock[PHASE_PERSISTENCE] = time.monotonic() - persist_started

    rows = [
        [o.target.name or qualified(table), o.num_rows, o.num_files, o.total_size, o.raw_data_size, o.files_read,
         o.files_reused]
        for o in outcomes
    ]
    header = ["partition" if table.partition_keys else "table", "num_rows", "num_files", "total_size",
              "raw_data_size", "files_read", "files_reused"]
    files_read = sum(o.files_read for o in outcomes)
    bytes_read = sum(o.bytes_read for o in outcomes)
    reused = sum(o.files_reused for o in outcomes)
    what = f"{len(outcomes)} partition(s)" if table.partition_keys else "the table"
    seconds = f"{time.monotonic() - started:.2f} s"
    if columns:
        work = (
            f"{len(columns)} column(s): {files_read} file(s) read ({_human_bytes(bytes_read)}), {reused} reused "
            f"from the cache"
        )
    elif st.mode is AnalyzeMode.BASIC:
        work = f"footers of {sum(o.num_files for o in outcomes)} file(s) read"
    else:
        work = f"sizes of {sum(o.num_files for o in outcomes)} file(s) listed"
    summary = f"analyzed {what} of {qualified(table)}, {work}, {seconds}"
    if ex.options.verbose:
        summary += "\n" + _phase_report(clock, before, time.monotonic() - started, run)
    return Result(header, rows, message=summary)


#: Phases of ANALYZE measured in the shell's process (wall seconds); the harvest's own are in the run's phases
#: (metastore.stats.harvest: FILE_PHASES, PHASE_CACHE, PHASE_HARVEST, PHASE_MERGE, whose name this one shares).
PHASE_LISTING = "listing"
PHASE_MERGE = "merge"
PHASE_PERSISTENCE = "persistence"


def _process_age() -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere): the start-up before a statement."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def _phase_report(clock: dict[str, float], before: float | None, total: float, run: Any) -> str:
    """The --verbose lines: where the statement's time went, phase by phase."""
    from metastore.stats.harvest import FILE_PHASES, PHASE_CACHE, PHASE_HARVEST

    lines = []
    if before is not None:
        lines.append(("start-up before the statement (interpreter, imports, connecting)", before, "wall"))
    lines.append((PHASE_LISTING + " (partitions and files)", clock.get(PHASE_LISTING, 0.0), "wall"))
    if run is not None:
        lines.append(("per-file cache (lookups, writes)", clock.get(PHASE_CACHE, 0.0), "wall"))
        lines.append((f"harvest ({run.files_read} file(s) analysed)", clock.get(PHASE_HARVEST, 0.0), "wall"))
        for phase in FILE_PHASES:
            lines.append(("  " + phase, clock.get(phase, 0.0), "CPU, summed over the workers"))
    lines.append(("merge (files into partitions and table)", clock.get(PHASE_MERGE, 0.0), "wall"))
    lines.append((PHASE_PERSISTENCE + " (parameters and statistics through the client)",
                  clock.get(PHASE_PERSISTENCE, 0.0), "wall"))
    lines.append(("statement total", total, "wall"))
    width = max(len(name) for name, _, _ in lines)
    return "\n".join(f"phase {name:<{width}}  {seconds:8.3f} s {how}" for name, seconds, how in lines)
