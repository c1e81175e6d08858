"""ANALYZE TABLE [db.]t [PARTITION (k='v'[, ...])] COMPUTE STATISTICS [NOSCAN | FOR COLUMNS [c, ...] | FOR ALL
COLUMNS], computed next to the data and persisted through the client API.

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
- A partition with a corrupt file gets nothing written; the others are written and the summary names the file
  (the statement then counts as failed: batch mode exits 1).
- The engine: this process (`local`), or Spark (`spark`, with `metastore sql --spark MASTER`; `auto` uses Spark
  when a master is configured and the data is larger than `metastore.analyze.spark.threshold`). Both share
  :mod:`metastore.sql.analysis`, so they write exactly the same statistics.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from metastore.catalog import FieldSchema, Table
from metastore.errors import InvalidInput, MetastoreError, NoSuchObject
from metastore.sql.analysis import (
    AnalyzeTarget,
    ColumnRequestError,
    FileProgress,
    TargetOutcome,
    failed_outcome,
    list_targets,
    outcome_of,
    persist_outcomes,
    settle_outcomes,
    statistics_columns,
    summarize,
)
from metastore.sql.errors import SqlError
from metastore.sql.output import Result
from metastore.sql.partition_specs import resolve_spec
from metastore.sql.statements import Analyze, AnalyzeMode
from metastore.sql.table_files import qualified, require_orc

if TYPE_CHECKING:
    from metastore.sql.session import Session


def _columns(table: Table, st: Analyze) -> list[FieldSchema]:
    """The data columns whose statistics are asked for (every column with a statistics kind by default)."""
    names = None if st.columns is None else [n.value for n in st.columns]
    try:
        return statistics_columns(table, names)
    except ColumnRequestError as exc:
        assert st.columns is not None
        raise SqlError(str(exc), st.columns[exc.index].position) from None


def _targets(ex: Session, table: Table, st: Analyze) -> tuple[list[AnalyzeTarget], int]:
    """The targets to analyse and how many partitions the table has in all (0 when unpartitioned)."""
    values = None
    if st.spec is not None:
        if not table.partition_keys:
            raise SqlError(f"{qualified(table)} is not partitioned; ANALYZE takes no PARTITION", st.spec.position)
        values = resolve_spec(table, st.spec, full=False, what="ANALYZE")
    try:
        return list_targets(ex.client, table, values, ex.options.storage)
    except NoSuchObject as exc:
        raise SqlError(str(exc), st.spec.position if st.spec is not None else st.table.position) from None
    except InvalidInput as exc:
        raise SqlError(str(exc), st.table.position) from None


#: ExecutorOptions.stats_cache value: per-file results live in the metastore's database (issue 10).
METASTORE_CACHE = "metastore"


def _open_cache(ex: Session, table: Table) -> Any:
    """The PartialStore this run keeps per-file results in: the metastore's database ("metastore", the default
    against a server: shared by every host), the local file cache ("default" or a path), or none."""
    option = ex.options.stats_cache
    if option is None:
        return None
    from metastore.stats.filecache import FileStatsCache

    if option == METASTORE_CACHE:
        from metastore.client.file_partials import MetastorePartialStore

        return MetastorePartialStore(ex.client, table.db_name, table.table_name, fallback=_LocalCacheOnDemand())
    return FileStatsCache.open_default() if option == "default" else FileStatsCache(option)


class _LocalCacheOnDemand:
    """The local file cache, opened only when first used: the metastore store falls back to it only against a
    server without the per-file calls (a Hive Metastore), and opening it costs a file and platformdirs."""

    def __init__(self) -> None:
        self._cache: Any = None

    def _open(self) -> Any:
        if self._cache is None:
            from metastore.stats.filecache import FileStatsCache

            self._cache = FileStatsCache.open_default()
        return self._cache

    def lookup(self, files: Any, partition: str | None = None) -> Any:
        return self._open().lookup(files, partition)

    def store(self, files: Any) -> None:
        self._open().store(files)

    def retain(self, files: Any, partition: str | None = None) -> None:
        self._open().retain(files, partition)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()


def _analyze_local(
    ex: Session, targets: list[AnalyzeTarget], table: Table, columns: list[FieldSchema], mode: AnalyzeMode,
    cache: Any, progress: FileProgress, kept: frozenset[str | None] = frozenset(),
) -> tuple[list[TargetOutcome], Any]:
    """Every target analysed in this process, with the harvest's run over all their files (FOR COLUMNS; None
    otherwise) for its phase accounting. A failing target fails alone. Targets in ``kept`` are unchanged: their
    statistics are not merged (they are not written), only the run's table-level merge takes their files."""
    imports_started = time.perf_counter()
    from metastore.stats.harvest import HarvestError, analyze_files, basic_stats, split_result
    from metastore.stats.harvest.partial import parsed_sketches

    imports = time.perf_counter() - imports_started

    hive_types = {c.name: c.type for c in columns}

    if columns:
        # One run over every target's files keeps the worker pool busy across partitions (one pool, not one
        # per partition); it is split per partition afterwards without reading again. A file that fails fails
        # its partition alone: the run goes on with the other files, each read once.
        with parsed_sketches():  # the table's merge and the partitions' parse each file's sketch once
            run = analyze_files(
                [f for t in targets for f in t.files], [c.name for c in columns], hive_types=hive_types,
                table_columns=[c.name for c in table.sd.cols], want_ndv=True, want_histograms=ex.options.histograms,
                cache=cache, progress=progress.callback, storage_options=ex.options.storage,
                partition=[t.name for t in targets for _ in t.files], partition_failures=True,
            )
            split_started = time.perf_counter()
            good = [t for t in targets if t.name not in run.failed]
            # unchanged targets are not written: only the table level needs their files (the run's merge)
            parts = iter(split_result(run, [len(t.files) for t in good], [t.name not in kept for t in good]))
        run.phases[PHASE_MERGE] = run.phases.get(PHASE_MERGE, 0.0) + time.perf_counter() - split_started
        run.phases[PHASE_IMPORTS] = imports
        return [failed_outcome(t, run.failed[t.name]) if t.name in run.failed else outcome_of(t, next(parts))
                for t in targets], run
    outcomes: list[TargetOutcome] = []
    for target in targets:
        try:
            stats = basic_stats(target.files, scan=mode is AnalyzeMode.BASIC, cache=cache,
                                storage_options=ex.options.storage, partition=target.name)
            outcomes.append(TargetOutcome(target, stats.num_rows, stats.num_files, stats.total_size,
                                          stats.raw_data_size, {}))
        except HarvestError as exc:
            outcomes.append(failed_outcome(target, str(exc)))
        progress.finish_target(len(target.files))
    return outcomes, None


def _engine(ex: Session, mode: AnalyzeMode, targets: list[AnalyzeTarget]) -> str:
    """'local' or 'spark' for this statement (NOSCAN reads no file: always local)."""
    options = ex.options
    if mode is AnalyzeMode.NOSCAN:
        return "local"
    if options.analyze_engine == "spark":
        if not options.spark_master:
            raise SqlError("metastore.analyze.engine is spark but no Spark master is configured: start the shell "
                           "with --spark MASTER (local[4], spark://host:7077, sc://host:15002)")
        return "spark"
    if options.analyze_engine == "auto" and options.spark_master:
        size = sum(f.size for t in targets for f in t.files)
        if size > options.spark_threshold:
            return "spark"
    return "local"


def analyze(ex: Session, st: Analyze) -> Result:
    started = time.monotonic()
    # the process's start-up is reported with its first statement only: later ones would count earlier work
    before = _process_age() if ex.statements_started == 1 else None
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
    covers_table = not table.partition_keys or len(targets) == partitions_total
    unchanged: Any = None
    if columns and ex.options.stats_cache is not None:
        # Before anything heavy is loaded: targets whose files and stored statistics are those of an earlier
        # run need no work (metastore.sql.fingerprints). With no per-file store the user asked for a fresh run.
        from metastore.sql.fingerprints import find_unchanged

        check_started = time.monotonic()
        unchanged = find_unchanged(ex.client, table, targets, columns, histograms=ex.options.histograms,
                                   partitions_total=partitions_total)
        clock[PHASE_UNCHANGED] = time.monotonic() - check_started
        if unchanged.everything(targets, bool(table.partition_keys), covers_table):
            outcomes = [_kept_outcome(table, t) for t in targets]
            return _result(ex, table, columns, st, outcomes, started, clock, None, before, "local")
    kept = unchanged.targets if unchanged is not None else frozenset()
    table_kept = unchanged is not None and unchanged.table_level_kept(bool(table.partition_keys), covers_table)
    # Unchanged partitions are analysed (from the per-file store) only when the table level is to be merged here
    # from every partition; otherwise they are left alone.
    merge_all = covers_table and bool(table.partition_keys) and not table_kept
    work = targets if merge_all else [t for t in targets if t.name not in kept]
    engine = _engine(ex, st.mode, work)
    total_files = sum(len(t.files) for t in work)
    progress = FileProgress(ex.options.progress, ex.options.progress_stream, total_files,
                            f"analyze {qualified(table)}")
    cache = _open_cache(ex, table) if st.mode is not AnalyzeMode.NOSCAN else None
    run: Any = None  # the local harvest's run over every target's files, for its phases
    try:
        if engine == "spark":
            from metastore.spark.analyze import harvest_targets

            try:
                outcomes = harvest_targets(
                    ex.spark_session(), work, table, columns, histograms=ex.options.histograms, cache=cache,
                    progress=progress, storage_options=ex.options.storage,
                )
            except MetastoreError:
                raise
            except Exception as exc:  # noqa: BLE001 - Spark's errors (py4j, Connect) become one shell error line
                raise SqlError(f"Spark failed: {' '.join(str(exc).split())[:500]}", st.position) from None
        else:
            outcomes, run = _analyze_local(ex, work, table, columns, st.mode, cache, progress, kept)
        settle_outcomes(cache, outcomes, kept)
    finally:
        progress.close()
        if cache is not None:
            cache.close()
    worked = {id(t) for t in work}
    outcomes += [_kept_outcome(table, t) for t in targets if id(t) not in worked]
    order = {id(t): i for i, t in enumerate(targets)}
    outcomes.sort(key=lambda o: order[id(o.target)])

    persist_started = time.monotonic()
    persist_outcomes(ex.client, table, columns, outcomes, partitions_total, merged=run,
                     histograms=ex.options.histograms, unchanged=kept, table_unchanged=table_kept)
    clock[PHASE_PERSISTENCE] = time.monotonic() - persist_started
    return _result(ex, table, columns, st, outcomes, started, clock, run, before, engine)


def _kept_outcome(table: Table, target: AnalyzeTarget) -> TargetOutcome:
    """The outcome of a target left as it is: its basic statistics as stored, every file's results reused."""
    params = target.partition.parameters if target.partition is not None else table.parameters

    def number(key: str) -> int | None:
        try:
            return int(params[key])
        except (KeyError, ValueError):
            return None

    return TargetOutcome(target, number("numRows"), len(target.files), sum(f.size for f in target.files),
                         number("rawDataSize"), {}, files_reused=len(target.files), unchanged=True)


def _result(
    ex: Session, table: Table, columns: list[FieldSchema], st: Analyze, outcomes: list[TargetOutcome],
    started: float, clock: dict[str, float], run: Any, before: float | None, engine: str,
) -> Result:
    summary = summarize(table, columns, st.mode is not AnalyzeMode.NOSCAN, outcomes, time.monotonic() - started,
                        engine="Spark" if engine == "spark" else None)
    message = summary.message
    if ex.options.verbose:
        message += "\n" + _phase_report(clock, run, before, time.monotonic() - started)
    return Result(summary.columns, summary.rows, message=message, failed=bool(summary.failed))


#: Phases of ANALYZE measured in the shell's process (wall seconds); the harvest's own are in its run's phases
#: (metastore.stats.harvest: FILE_PHASES, PHASE_CACHE, PHASE_HARVEST, PHASE_MERGE, whose name this one shares).
PHASE_LISTING = "listing"
PHASE_UNCHANGED = "unchanged check"
PHASE_IMPORTS = "imports"
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


def _phase_report(clock: dict[str, float], run: Any, before: float | None, total: float) -> str:
    """The --verbose lines: where the statement's time went, phase by phase (the harvest's file phases in CPU
    seconds summed over its worker processes, everything else wall seconds of this process)."""
    lines = []
    if before is not None:
        lines.append(("start-up before the first statement (interpreter, imports, connecting)", before, "wall"))
    lines.append((PHASE_LISTING + " (partitions and files)", clock.get(PHASE_LISTING, 0.0), "wall"))
    if PHASE_UNCHANGED in clock:
        lines.append(("unchanged check (fingerprints, statistics read back)", clock[PHASE_UNCHANGED], "wall"))
    if run is not None:
        from metastore.stats.harvest import FILE_PHASES, PHASE_CACHE, PHASE_HARVEST

        phases = run.phases
        lines.append(("loading the harvest (imports)", phases.get(PHASE_IMPORTS, 0.0), "wall"))
        lines.append(("per-file store (lookups, writes)", phases.get(PHASE_CACHE, 0.0), "wall"))
        lines.append((f"harvest ({run.files_read} file(s) analysed)", phases.get(PHASE_HARVEST, 0.0), "wall"))
        lines.extend(("  " + phase, phases.get(phase, 0.0), "CPU, summed over the workers") for phase in FILE_PHASES)
        lines.append(("merge (files into partitions and table)", phases.get(PHASE_MERGE, 0.0), "wall"))
    if PHASE_PERSISTENCE in clock:
        lines.append((PHASE_PERSISTENCE + " (parameters and statistics through the client)",
                      clock[PHASE_PERSISTENCE], "wall"))
    lines.append(("statement total", total, "wall"))
    width = max(len(name) for name, _, _ in lines)
    return "\n".join(f"phase {name:<{width}}  {seconds:8.3f} s {how}" for name, seconds, how in lines)
