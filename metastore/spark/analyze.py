"""The driver of distributed ANALYZE: plan tasks, run them on executors, merge results as they arrive, persist.

:func:`harvest_targets` is the engine (the shell's ANALYZE calls it with ``--spark``); :func:`analyze_table` is
the whole statement for Python callers and `metastore spark-analyze`.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

import cramjam

from metastore.catalog import FieldSchema, Table
from metastore.client import connect
from metastore.errors import InvalidInput
from metastore.spark.tasks import (
    RESULT_SCHEMA,
    TaskPlan,
    Unit,
    default_parallelism,
    failing_tasks,
    harvest_task,
    run_plans,
)
from metastore.sql.analysis import (
    AnalyzeSummary,
    AnalyzeTarget,
    FileProgress,
    TargetOutcome,
    failed_outcome,
    list_targets,
    outcome_of,
    persist_outcomes,
    settle_outcomes,
    spec_values,
    statistics_columns,
    summarize,
)
from metastore.sql.table_files import is_orc, qualified
from metastore.stats.harvest.allocator import keep_freed_memory
from metastore.stats.harvest.partial import ColumnPartial, FileAnalysis, PartialAccumulator, parsed_sketches
from metastore.stats.harvest.result import result_of
from metastore.stats.harvest.runner import cached_partials, column_groups, column_specs, stored_partials
from metastore.stats.harvest.scan import (
    ColumnSpec,
    FilePiece,
    HarvestError,
    ScanOptions,
    absent_partial,
    analyze_file_piece,
    join_column_groups,
    join_file_pieces,
    read_tail,
)
from metastore.stats.orc_convert import hive_kind
from metastore.stats.partial_store import FilePartials
from metastore.storage import StorageOptions

if TYPE_CHECKING:
    from metastore.orcio import OrcReader

__all__ = [
    "DEFAULT_DRIVER_BYTES", "DEFAULT_SPLIT_BYTES", "DEFAULT_TASK_BYTES", "analyze_table", "harvest_targets",
    "plan_tasks",
]

#: Files are grouped into tasks of about this many bytes (Spark's spark.sql.files.maxPartitionBytes).
DEFAULT_TASK_BYTES = 128 << 20
#: Files larger than this are split into pieces of stripes, one task each.
DEFAULT_SPLIT_BYTES = 256 << 20
#: A re-run (some files' results reused from the cache) whose remaining files hold at most this many bytes reads
#: them in the driver's process with the same per-file code instead of starting a Spark job: a job's fixed cost
#: (scheduling, a Python worker, results back through the JVM) is about 0.3 s even on an idle machine, about what
#: one core takes to harvest 8-16 MiB of ORC.
DEFAULT_DRIVER_BYTES = 16 << 20
#: Smallest task worth scheduling when tasks are made smaller to keep every core busy (openCostInBytes).
_MIN_TASK_BYTES = 4 << 20
#: Tasks per core a small table is cut into (a large one gets tasks of task_bytes, hence many more).
_TASKS_PER_CORE = 4
#: Units (files or pieces) in one task at most: a task's results reach the driver together, so this bounds them
#: (128 MB of 4 MB files, as Spark's openCostInBytes of 4 MB allows).
_MAX_UNITS_PER_TASK = 32
#: Pickled task plans in one Spark job at most; a larger table runs several jobs. Plans of up to
#: tasks.CLOSURE_PLAN_BYTES (1 MiB, ~100 tasks) reach the tasks in their function's closure, more as a broadcast
#: table (tasks.run_plans): a createDataFrame of at most 32 MiB, well inside Spark Connect's 128 MiB gRPC messages.
_JOB_PLAN_BYTES = 32 << 20
#: Fresh per-file results are sent to the cache (the metastore: one call) in batches of this many files or bytes.
_CACHE_BATCH_FILES = 64
_CACHE_BATCH_BYTES = 4 << 20
#: Parsed sketches a run keeps for reuse at most (a dense one is about 16 KiB parsed: 8 MiB at most).
_PARSED_SKETCHES_KEPT = 512
# Threads that read a re-run's few remaining files on the driver (_driver_rows), and the size from which one file's
# columns are split between them (one column a task): a 6 MiB file of ten columns (500,000 rows) reads in
# 0.066-0.072 s on two threads against 0.069-0.082 s in two fixed groups of columns and 0.088 s on one thread.
_DRIVER_THREADS = 4
_DRIVER_SPLIT_BYTES = 1 << 20

_log = logging.getLogger(__name__)


def analyze_table(
    spark: Any,
    table: str,
    columns: Sequence[str] | None = None,
    partition: Mapping[str, Any] | None = None,
    histograms: bool = False,
    metastore: str = "thrift://127.0.0.1:9083",
    *,
    cache: str | None = "auto",
    progress: bool = False,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    task_bytes: int = DEFAULT_TASK_BYTES,
    parallelism: int | None = None,
    storage_options: StorageOptions | Mapping[str, str] | None = None,
) -> AnalyzeSummary:
    """Hive's ``ANALYZE TABLE table [PARTITION (...)] COMPUTE STATISTICS FOR COLUMNS`` computed on Spark and
    written through the metastore at ``metastore`` (``thrift://host:9083``, or a database URL for embedded use).

    ``table`` is ``db.name`` (or ``name`` in ``default``); ``columns`` None means every column, ``[]`` basic
    statistics only; ``partition`` is a (possibly partial) spec such as ``{"ds": "2024-01-01"}``; ``histograms``
    adds KLL histograms. ``cache`` is where per-file results are kept for incremental re-runs: "auto" (the
    default) is "metastore" with a ``thrift://`` metastore and "default" otherwise, as for `metastore
    spark-analyze` and the shell; "metastore" is the metastore's database, shared with every shell and driver;
    "default" the driver's cache in the user's cache directory; a path a cache file; None keeps nothing. Returns
    the summary (rows per partition, the summary line, failed partitions with the file that failed them).
    ``storage_options`` reach object stores (``{"endpoint_url": ...}``, as ``--storage-option``). Raises
    MetastoreError subclasses for bad input, an unreachable metastore or object store. ``spark`` may also be a
    function returning the session: it is called only when some file has to be read.
    """
    started = time.monotonic()
    storage = (storage_options if isinstance(storage_options, StorageOptions)
               else StorageOptions(tuple((k, str(v)) for k, v in (storage_options or {}).items())))
    db_name, _, name = table.rpartition(".")
    db_name = (db_name or "default").lower()
    if not name:
        raise InvalidInput(f"table {table!r}: expected db.table")
    client = connect(metastore)
    try:
        tbl = client.get_table(db_name, name.lower())
        if not is_orc(tbl):
            raise InvalidInput(
                f"ANALYZE on Spark needs an ORC table; {qualified(tbl)} is stored as {tbl.sd.input_format or 'unknown'}"
            )
        wanted = statistics_columns(tbl, columns)
        if columns is None and not wanted:
            raise InvalidInput(f"{qualified(tbl)} has no column with statistics to compute")
        values = None if partition is None else spec_values(tbl, partition)
        targets, partitions_total = list_targets(client, tbl, values, storage)
        if not targets:
            return summarize(tbl, wanted, True, [], time.monotonic() - started, engine="Spark")
        bar = FileProgress(progress, _stderr(), sum(len(t.files) for t in targets), f"analyze {qualified(tbl)}")
        opened = _open_cache(cache_choice(cache, metastore), client, tbl)
        kept: frozenset[str | None] = frozenset()
        table_kept = False
        inputs = None
        if opened is not None and wanted:
            # as the shell does: targets whose files and stored statistics are those of an earlier run
            # (metastore.sql.fingerprints) are not written again. Every target is still harvested (from the cache,
            # which this fills where it lacks a file): the table level is merged from every file's sketches.
            from metastore.sql.fingerprints import find_unchanged

            unchanged = find_unchanged(client, tbl, targets, wanted, histograms=histograms,
                                       partitions_total=partitions_total)
            kept = unchanged.targets
            inputs = unchanged.inputs
            covers_table = not tbl.partition_keys or len(targets) == partitions_total
            table_kept = unchanged.table_level_kept(bool(tbl.partition_keys), covers_table)
        # each cached sketch is parsed once: to check it (cached_partials) and again for the table-level merge
        # of an unchanged partition, at most _PARSED_SKETCHES_KEPT of them (driver memory stays bounded)
        with parsed_sketches(_PARSED_SKETCHES_KEPT):
            try:
                outcomes = harvest_targets(
                    spark, targets, tbl, wanted, histograms=histograms, cache=opened, progress=bar,
                    split_bytes=split_bytes, task_bytes=task_bytes, parallelism=parallelism,
                    storage_options=storage,
                )
                settle_outcomes(opened, outcomes, kept)
            finally:
                bar.close()
                if opened is not None:
                    opened.close()
            persist_outcomes(client, tbl, wanted, outcomes, partitions_total, histograms=histograms,
                             unchanged=kept, table_unchanged=table_kept, inputs=inputs)
        return summarize(tbl, wanted, True, outcomes, time.monotonic() - started, engine="Spark")
    finally:
        client.close()


def _stderr() -> Any:
    import sys

    return sys.stderr


def cache_choice(option: str | None, metastore: str) -> str | None:
    """What ``cache="auto"`` means for ``metastore``: a server keeps per-file results for every host and driver
    ("metastore"); an embedded database's user keeps them in the local cache ("default")."""
    if option != "auto":
        return option
    return "metastore" if metastore.strip().lower().startswith(("thrift://", "thrifts://")) else "default"


def _open_cache(option: str | None, client: Any, table: Table) -> Any:
    """The PartialStore for ``cache``: "metastore" (the metastore's database, shared with every shell and
    driver), "default" (the local cache in the user's cache directory), a local cache path, or None."""
    if option is None:
        return None
    from metastore.stats.filecache import FileStatsCache

    if option == "metastore":
        from metastore.client.file_partials import MetastorePartialStore

        return MetastorePartialStore(client, table.db_name, table.table_name, fallback=FileStatsCache.open_default())
    return FileStatsCache.open_default() if option == "default" else FileStatsCache(option)


# ------------------------------------------------------------------------------------------- the engine


@dataclass
class _FileSlot:
    """A file of a target not merged yet: pieces received so far, the columns the cache had, the finished result
    while an earlier file of the target is still out (packed: see _pack)."""

    pieces: dict[int, FilePiece] = field(default_factory=dict)
    tasks: set[int] = field(default_factory=set)  # tasks its pieces came from (for the log)
    have: dict[str, ColumnPartial] = field(default_factory=dict)
    done: FileAnalysis | bytes | None = None


class _TargetMerge:
    """One target's files merged in listing order as they complete (what analyze_files' merge gives: Hive's
    sparse HyperLogLog bytes depend on the order sketches are merged in)."""

    def __init__(self, target: AnalyzeTarget, names: list[str]) -> None:
        self.target = target
        self.names = names
        self.next = 0  # files before this one are merged
        self.slots: dict[int, _FileSlot] = {}
        self.accumulators = {name: PartialAccumulator() for name in names}
        # each column's merged result, once the last file is in: the accumulators (a dense sketch's registers
        # each) are dropped then, so only partitions still arriving hold them
        self.results: dict[str, ColumnPartial] | None = None
        self.files: list[FileAnalysis] = []  # without their partials: memory stays flat in the number of files
        self.error: str | None = None

    def slot(self, index: int) -> _FileSlot | None:
        """The open slot of a file (None once the file is merged: a repeated result is dropped)."""
        if index < self.next:
            return None
        return self.slots.setdefault(index, _FileSlot())

    def complete(self, index: int, analysis: FileAnalysis) -> int:
        """Record a file's result and merge every file now next in order; returns how many were merged."""
        slot = self.slot(index)
        assert slot is not None, "a merged file completed again"  # callers drop results of merged files
        slot.done = analysis if index == self.next else _pack(analysis)
        merged = 0
        while self.next in self.slots and self.slots[self.next].done is not None:
            done = self.slots.pop(self.next).done
            ready = _unpack(done) if isinstance(done, bytes) else done
            assert ready is not None
            for name in self.names:
                self.accumulators[name].add(ready.columns[name])
            # without its partials and per-phase times (nothing reads a Spark file's phases): ~0.2 KB a file
            self.files.append(replace(ready, columns={}, phases={}))
            self.next += 1
            merged += 1
        if merged and self.finished:
            self.results = {name: acc.result() for name, acc in self.accumulators.items() if acc.count}
            self.accumulators = {}
        return merged

    def merged(self, hive_types: Mapping[str, str], options: ScanOptions) -> dict[str, ColumnPartial]:
        """Every column's result (a column no file had: its absent partial) of a finished target."""
        results = self.results
        if results is None:  # a target without files: nothing was merged
            results = {name: acc.result() for name, acc in self.accumulators.items() if acc.count}
        return {name: results[name] if name in results else absent_partial(hive_kind(hive_types[name]), 0, options)
                for name in self.names}

    @property
    def finished(self) -> bool:
        return self.next == len(self.target.files)


def _pack(analysis: FileAnalysis) -> bytes:
    """A finished file's result while it waits for an earlier file of its target, compressed: its sketches (Hive's
    sparse bytes, whose negative deltas take ten bytes each) shrink to ~60 % (82 KB to 50 KB for a file of 2,000
    rows), for ~0.75 ms; files of a partition that straddles two tasks wait for the earlier task (up to a task's
    32 files). Unpacked (~0.65 ms) when its turn comes: the same FileAnalysis."""
    return bytes(cramjam.zstd.compress(pickle.dumps(analysis, pickle.HIGHEST_PROTOCOL), level=1))


def _unpack(packed: bytes) -> FileAnalysis:
    return cast(FileAnalysis, pickle.loads(cramjam.zstd.decompress(packed)))


class _ResultMerge:
    """Every target's results merged on the driver as executors return them (one row per file or piece).

    The driver holds only what cannot be merged yet: pieces of a split file whose other pieces are still out, and
    files that finished before an earlier file of their partition. ``held`` counts them and ``peak_held`` is its
    maximum over the run. A (target, file, piece) seen before (a retried or speculative task's copy) is dropped,
    so nothing counts twice; ``duplicates`` counts the drops."""

    def __init__(self, targets: Sequence[AnalyzeTarget], names: list[str], cache: Any = None,
                 progress: FileProgress | None = None) -> None:
        self.merges = [_TargetMerge(t, names) for t in targets]
        self.cache = cache
        self.progress = progress
        self.versions: dict[str, str] = {}  # object versions of the files in flight, for the cache
        # fresh per-file results of targets still out: sent to the cache once their target succeeds, dropped if
        # it fails (as the local runner does: a failed partition leaves nothing behind)
        self.unfinished: dict[int, list[FilePartials]] = {}
        self.pending: list[FilePartials] = []  # fresh per-file results of finished targets not yet sent
        self.pending_bytes = 0
        self.files_done = 0
        self.held = 0
        self.peak_held = 0
        self.duplicates = 0

    def _hold(self, delta: int) -> None:
        self.held += delta
        self.peak_held = max(self.peak_held, self.held)

    def reuse(self, target: int, file: int, analysis: FileAnalysis) -> None:
        """A file whose every column came from the cache."""
        self._complete(target, file, analysis)

    def partly_cached(self, target: int, file: int, have: dict[str, ColumnPartial]) -> None:
        """Columns of a file the cache had (the others are computed)."""
        slot = self.merges[target].slot(file)
        assert slot is not None
        slot.have = have

    def _complete(self, target: int, file: int, analysis: FileAnalysis) -> None:
        merge = self.merges[target]
        self._hold(1)
        merged = merge.complete(file, analysis)
        self._hold(-merged)
        self.files_done += 1
        if merge.finished and target in self.unfinished:
            finished = self.unfinished.pop(target)
            self.pending.extend(finished)
            self.pending_bytes += sum(len(e) for f in finished for e in f.entries.values())

    def add(self, target: int, file: int, piece: int, pieces: int, task: int, result: bytes | FilePiece | None,
            error: str | None) -> None:
        """One result row: a FilePiece (pickled, as executors send it), or the error that fails its target."""
        merge = self.merges[target]
        if merge.error is not None:
            return
        if error is not None:
            merge.error = error
            self.unfinished.pop(target, None)
            # the target's held results are dropped: nothing of it is written
            self._hold(-sum(len(s.pieces) + (s.done is not None) for s in merge.slots.values()))
            merge.slots.clear()
            return
        slot = merge.slot(file)
        if slot is None or piece in slot.pieces or slot.done is not None:
            self.duplicates += 1
            return
        assert result is not None
        slot.pieces[piece] = pickle.loads(result) if isinstance(result, bytes) else result
        slot.tasks.add(task)
        self._hold(1)
        if len(slot.pieces) < pieces:
            return
        outcome = join_file_pieces(list(slot.pieces.values()))
        self._hold(-len(slot.pieces))
        slot.pieces.clear()
        if pieces > 1:
            _log.debug("%s: %d pieces from tasks %s", outcome.analysis.path, pieces, sorted(slot.tasks))
        analysis = outcome.analysis
        if slot.have:
            analysis = replace(analysis, columns={**slot.have, **analysis.columns})
        version = self.versions.pop(analysis.path, "")
        if self.cache is not None:
            self.unfinished.setdefault(target, []).append(stored_partials(outcome, version, merge.target.name))
        self._complete(target, file, analysis)
        if len(self.pending) >= _CACHE_BATCH_FILES or self.pending_bytes >= _CACHE_BATCH_BYTES:
            self.flush()
        elif self.progress is not None:
            self.progress.advance_to(self.files_done)

    def flush(self) -> None:
        """Send fresh per-file results to the cache and move the progress bar."""
        if self.cache is not None and self.pending:
            self.cache.store(self.pending)
        self.pending = []
        self.pending_bytes = 0
        if self.progress is not None:
            self.progress.advance_to(self.files_done)

    def outcomes(self, hive_types: Mapping[str, str], options: ScanOptions, seconds: float) -> list[TargetOutcome]:
        out: list[TargetOutcome] = []
        for merge in self.merges:
            if merge.error is not None:
                out.append(failed_outcome(merge.target, merge.error))
                continue
            if not merge.finished:  # pragma: no cover - every unit answers or fails its target
                raise RuntimeError(f"Spark returned no result for some files of {merge.target.name or 'the table'}")
            merged = merge.merged(hive_types, options)
            out.append(outcome_of(merge.target, result_of(tuple(merge.files), merged, options, seconds)))
        return out


def harvest_targets(
    spark: Any,
    targets: Sequence[AnalyzeTarget],
    table: Table,
    columns: Sequence[FieldSchema],
    *,
    histograms: bool = False,
    cache: Any = None,
    progress: FileProgress | None = None,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    task_bytes: int = DEFAULT_TASK_BYTES,
    parallelism: int | None = None,
    storage_options: StorageOptions | None = None,
    driver_bytes: int = DEFAULT_DRIVER_BYTES,
) -> list[TargetOutcome]:
    """Each target's outcome computed on Spark: column statistics of ``columns`` (none: basic statistics from the
    footers), equal to what the local runner gives. A target with an unreadable file fails alone, naming it.
    Executors read object stores with ``storage_options``. ``spark`` is a session, or a function returning one
    (called only when some file is not in the cache: a re-run with nothing changed starts no Spark). A re-run
    that reuses some files' results from the cache and has at most ``driver_bytes`` left to read reads them in
    this process (the same per-file code and merge, so the same results) and starts no Spark job either."""
    started = time.perf_counter()
    if split_bytes < 1 or task_bytes < 1:
        raise InvalidInput("split_bytes and task_bytes must be positive")
    hive_types = {c.name: c.type for c in columns}
    names = [c.name for c in columns]
    specs = tuple(column_specs(names, hive_types, [c.name for c in table.sd.cols]))
    options = ScanOptions(want_ndv=True, want_histograms=histograms, scan=True)
    merge = _ResultMerge(targets, names, cache, progress)
    units: list[Unit] = []
    reused_any = False
    # every target's stored results in one call where the store can (the metastore's: one round trip), else one
    # lookup per target
    lookup_many = getattr(cache, "lookup_many", None)
    every: dict[str, FilePartials] | None = None
    if lookup_many is not None and len(targets) > 1:
        every = lookup_many({t.name: t.files for t in targets if t.files})
    every_column = tuple(range(len(specs)))
    for ti, target in enumerate(targets):
        if every is not None:
            stored = every
        else:
            stored = cache.lookup(target.files, target.name) if cache is not None and target.files else {}
        for fi, ref in enumerate(target.files):
            reused = cached_partials(stored.get(ref.url), ref, list(specs), options)
            if reused is not None and len(reused[1]) == len(specs):
                info, partials = reused
                merge.reuse(ti, fi, FileAnalysis(ref.url, ref.size, ref.mtime_ns, info["rows"], info["raw"],
                                                 partials, "cache"))
                reused_any = True
                continue
            have = reused[1] if reused is not None else {}
            if have:
                merge.partly_cached(ti, fi, have)
            if ref.version:
                merge.versions[ref.url] = ref.version
            # one tuple shared by every file the cache has nothing of (~0.1 KB a file otherwise)
            todo = every_column if not have else tuple(i for i, s in enumerate(specs) if s.name not in have)
            # only a scan is worth splitting: basic statistics read each footer once
            pieces = math.ceil(ref.size / split_bytes) if specs and ref.size > split_bytes else 1
            units.extend(Unit(ti, fi, ref.url, ref.size, ref.mtime_ns, k, pieces, todo, ref.version)
                         for k in range(pieces))
    merge.flush()

    if units and reused_any and sum(u.size // u.pieces for u in units) <= driver_bytes:
        _log.info("%d file(s) left to read (%d bytes): read on the driver, no Spark job", len(units),
                  sum(u.size // u.pieces for u in units))
        for row in _driver_rows(units, specs, options, storage_options or StorageOptions()):
            merge.add(*row)
        merge.flush()
    elif units:
        session = spark() if callable(spark) else spark
        cores = parallelism or default_parallelism(session)
        tasks = plan_tasks(units, cores, task_bytes, specs, options, storage_options or StorageOptions())
        jobs = _jobs(tasks)
        _log.info("%d unit(s) of %d file(s) in %d task(s), %d job(s), for %d core(s); %d file(s) split into pieces",
                  len(units), len({(u.target, u.file) for u in units}), len(tasks), len(jobs), cores,
                  len({(u.target, u.file) for u in units if u.pieces > 1}))
        # the plans live on as the jobs' pickles only (the units and plans, ~0.3 KB a file, are let go), and each
        # job's pickles until it has run
        units.clear()
        del tasks
        jobs.reverse()
        while jobs:
            for row in _run_job(session, jobs.pop()):
                merge.add(*row)
        merge.flush()
    _log.info("at most %d result(s) held on the driver at once; %d repeated result(s) dropped", merge.peak_held,
              merge.duplicates)
    return merge.outcomes(hive_types, options, time.perf_counter() - started)


def _driver_rows(units: Sequence[Unit], specs: tuple[ColumnSpec, ...], options: ScanOptions,
                 storage: StorageOptions, threads: int | None = None) -> Iterator[tuple[Any, ...]]:
    """The result rows of ``units`` harvested in this process, as executors would return them (task -1; the
    FilePiece itself instead of its pickle): the same analyze_file_piece calls as tasks.harvest_task makes.
    ``threads`` (default: one per CPU, at most _DRIVER_THREADS) share the work: when fewer units than threads
    are left, each unit of at least _DRIVER_SPLIT_BYTES has its columns scanned one a task, costliest kind first,
    in parallel (decompression, decoding and hashing run mostly outside the GIL) and joined
    (scan.join_column_groups: the same piece as one scan of every column); such a unit's tail is parsed once
    (scan.read_tail) and shared by its tasks. From the first read on the process keeps freed memory for reuse
    (allocator.keep_freed_memory, as the harvest's workers do)."""
    workers = max(1, min(_DRIVER_THREADS, os.cpu_count() or 1) if threads is None else threads)
    split = bool(units) and len(units) < workers
    wanted = [tuple(specs[i] for i in unit.columns) for unit in units]
    # one column a task, the costliest first: threads take the next column as they finish, so a column costlier
    # than its kind's estimate does not leave a thread idle behind a fixed group (a file open is a few hundred µs)
    groups = [column_groups(w, len(w)) if split and unit.size >= _DRIVER_SPLIT_BYTES else [w]
              for unit, w in zip(units, wanted, strict=True)]

    # a split unit's tail (footer, statistics) is parsed once here and shared by its column tasks (scan.read_tail)
    tails: dict[int, tuple[OrcReader, int] | HarvestError] = {}
    for k, (unit, unit_groups) in enumerate(zip(units, groups, strict=True)):
        if len(unit_groups) > 1:
            try:
                tails[k] = read_tail(unit.path, unit.size, unit.mtime_ns, storage_options=storage,
                                     version=unit.version)
            except HarvestError as exc:
                tails[k] = exc
                groups[k] = []

    def scan(task: tuple[int, tuple[ColumnSpec, ...]]) -> FilePiece | HarvestError:
        unit = units[task[0]]
        tail = tails.get(task[0])
        try:
            return analyze_file_piece(unit.path, unit.size, unit.mtime_ns, task[1], options, unit.piece,
                                      unit.pieces, storage_options=storage, version=unit.version,
                                      tail_of=tail[0] if isinstance(tail, tuple) else None)
        except HarvestError as exc:
            return exc

    tasks = [(k, group) for k, unit_groups in enumerate(groups) for group in unit_groups]
    pool = ThreadPoolExecutor(min(workers, len(tasks))) if workers > 1 and len(tasks) > 1 else None
    if tasks:
        # the scans' numpy temporaries (a few MB each) reuse freed memory from one read to the next instead of
        # faulting in fresh pages: this process keeps freed memory from now on (allocator.keep_freed_memory)
        keep_freed_memory()
    try:
        found = pool.map(scan, tasks) if pool is not None else map(scan, tasks)
        for k, unit in enumerate(units):
            tail = tails.get(k)
            parts: list[FilePiece | HarvestError] = (
                [tail] if isinstance(tail, HarvestError) else [next(found) for _ in groups[k]])
            tails.pop(k, None)  # its tasks are done: the parsed tail is let go
            error = next((p for p in parts if isinstance(p, HarvestError)), None)
            if error is not None:
                yield unit.target, unit.file, unit.piece, unit.pieces, -1, None, str(error)
                continue
            pieces = cast(list[FilePiece], parts)
            piece = pieces[0] if len(pieces) == 1 else join_column_groups(pieces, wanted[k])
            if isinstance(tail, tuple):
                piece = replace(piece, bytes_read=piece.bytes_read + tail[1])
            yield unit.target, unit.file, unit.piece, unit.pieces, -1, piece, None
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def plan_tasks(units: Sequence[Unit], cores: int, task_bytes: int, specs: tuple[ColumnSpec, ...],
               options: ScanOptions, storage: StorageOptions | None = None) -> list[TaskPlan]:
    """Units in tasks of ``task_bytes`` at most, consecutive units together, at most 32 units a task (which bounds
    one task's results on the driver), each piece of a split file a task of its own. A table too small to give
    every core several full tasks gets smaller ones (``bytes / (4 × cores)``, not under 4 MiB), so that cores
    finishing early take more work instead of idling behind the last task: 4 tasks a core of about equal bytes."""
    total = sum(u.size // u.pieces for u in units)
    cores = max(cores, 1)
    per_task = min(task_bytes, max(_MIN_TASK_BYTES, math.ceil(total / (_TASKS_PER_CORE * cores))))
    failing = failing_tasks()
    balanced = None
    if _MIN_TASK_BYTES < per_task < task_bytes and all(u.pieces == 1 for u in units):
        # a small table: _TASKS_PER_CORE tasks a core, as even in bytes as whole consecutive files allow (a greedy
        # fill of per_task bytes leaves a short task over, e.g. 9 tasks for 2 cores, whose last wave runs on
        # one core while the other idles)
        count = _TASKS_PER_CORE * cores
        count = max(count, cores * math.ceil(math.ceil(len(units) / _MAX_UNITS_PER_TASK) / cores))
        if len(units) >= count:
            balanced = _even_tasks(list(units), count, total, specs, options)
    planned = balanced if balanced is not None else _group_units(list(units), per_task, specs, options)
    return [replace(t, storage=storage or StorageOptions(), fail_first_attempt=t.task in failing)
            for t in planned]


def _even_tasks(units: list[Unit], count: int, total: int, specs: tuple[ColumnSpec, ...], options: ScanOptions
                ) -> list[TaskPlan] | None:
    """``units`` cut into ``count`` tasks of consecutive units, each unit in the task its middle byte falls in
    (tasks then differ by about one unit's bytes); None when that leaves a task empty or over
    _MAX_UNITS_PER_TASK units (the caller then fills tasks greedily)."""
    groups: list[list[Unit]] = [[] for _ in range(count)]
    before = 0
    for unit in units:
        middle = before + unit.size / 2
        groups[min(count - 1, int(middle * count / max(total, 1)))].append(unit)
        before += unit.size
    if any(not g or len(g) > _MAX_UNITS_PER_TASK for g in groups):
        return None
    return [TaskPlan(i, specs, options, tuple(g)) for i, g in enumerate(groups)]


def _group_units(units: list[Unit], per_task: int, specs: tuple[ColumnSpec, ...], options: ScanOptions
                 ) -> list[TaskPlan]:
    tasks: list[TaskPlan] = []
    current: list[Unit] = []
    size = 0

    def close() -> None:
        nonlocal current, size
        if current:
            tasks.append(TaskPlan(len(tasks), specs, options, tuple(current)))
        current, size = [], 0

    for unit in units:
        share = unit.size // unit.pieces
        if unit.pieces > 1 or size + share > per_task or len(current) >= _MAX_UNITS_PER_TASK:
            close()
        current.append(unit)
        size += share
        if unit.pieces > 1:
            close()
    close()
    return tasks


def _jobs(tasks: list[TaskPlan]) -> list[list[tuple[int, bytes]]]:
    """Tasks (id, pickled plan) in Spark jobs of at most _JOB_PLAN_BYTES of plans (each job broadcasts its own)."""
    jobs: list[list[tuple[int, bytes]]] = [[]]
    size = 0
    for task in tasks:
        payload = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
        if jobs[-1] and size + len(payload) > _JOB_PLAN_BYTES:
            jobs.append([])
            size = 0
        jobs[-1].append((task.task, payload))
        size += len(payload)
    return [job for job in jobs if job]


#: The fields of a result row, in the order _ResultMerge.add takes them.
_RESULT_FIELDS = ("target", "file", "piece", "pieces", "task", "result", "error")


def _run_job(spark: Any, job: list[tuple[int, bytes]]) -> Iterator[tuple[Any, ...]]:
    """Run a job's tasks on executors, exactly one Spark task each, and yield their result rows as they reach
    the driver (in completion order, not after the whole job)."""
    results = run_plans(_results_session(spark), [payload for _, payload in job], harvest_task, RESULT_SCHEMA)
    if getattr(results, "_jdf", None) is None:
        # Spark Connect: the client iterates Arrow batches as the server streams them
        for row in results.toLocalIterator():
            yield tuple(row[name] for name in _RESULT_FIELDS)
        return
    for batch in _classic_arrow_batches(results):
        # row by row: only the row being merged becomes Python objects (its pickled piece); the batch is let go
        # before the next one is read, so that two are never held at once
        columns = [batch.column(name) for name in _RESULT_FIELDS]
        rows = batch.num_rows
        del batch
        for row in range(rows):
            yield tuple(column[row].as_py() for column in columns)
        del columns


#: Rows in one Arrow batch of results the driver receives (spark.sql.execution.arrow.maxRecordsPerBatch of the
#: results' session): Spark re-batches what tasks yield, and a batch is read whole (its body is one buffer read
#: into the driver's heap), so a batch of a task's 32 results (32 pickled FilePieces, ~80 KB each for a file of
#: a few thousand rows, MBs for a large one) would set the driver's peak. One row a batch costs a few hundred
#: bytes of framing per file.
_RESULT_ROWS_PER_BATCH = 1


def _results_session(spark: Any) -> Any:
    """The session a job's results are collected through: on a classic session a clone of ``spark`` (its SQL
    configuration, temporary views and functions as they are now; same SparkContext) whose Arrow batches hold
    _RESULT_ROWS_PER_BATCH rows. The setting is the clone's alone: setting it on ``spark`` for the job would reach
    every query other threads run on that session meanwhile (a toPandas of one row a batch), and where the
    collect reads it (in the JVM's serving thread, once Python connects) is not under our control. Spark
    Connect (no JVM session here; its server sends batches of at most 4 MiB) and a clone that cannot be made
    (the clone is a Spark-internal method) use ``spark`` itself, with its batches."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return spark
    try:
        clone = type(spark)(spark.sparkContext, jsession.cloneSession())
        clone.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(_RESULT_ROWS_PER_BATCH))
    except Exception as exc:  # noqa: BLE001 - a private API of Spark's: results arrive in larger batches
        _log.debug("no session of one-row result batches (%s): results arrive in Spark's batches", exc)
        return spark
    return clone


def _classic_arrow_batches(df: Any) -> Iterator[Any]:
    """A classic DataFrame's Arrow batches as its tasks finish. The JVM's ``collectAsArrowToPython`` (what
    ``toArrow`` uses) writes each task's batches to the socket as the task's result arrives; PySpark's own reader
    keeps them all to restore partition order, which keyed results do not need, so this reads them one by one.
    (``toLocalIterator`` would run the tasks one job at a time, ``collect`` holds every row at once.)"""
    import pyarrow as pa
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.serializers import UTF8Deserializer, read_int
    from pyspark.util import _create_local_socket

    port, secret, server = df._jdf.collectAsArrowToPython()
    sockfile, sock = _create_local_socket((port, secret))
    failure: str | None = None
    try:
        yield from pa.ipc.open_stream(sockfile)
        # then the batches' partition order (not needed), or -1 and the error that stopped the job
        if read_int(sockfile) == -1:
            failure = UTF8Deserializer().loads(sockfile)
    finally:
        sockfile.close()
        sock.close()
    with unwrap_spark_exception():
        server.getResult()  # raises the job's failure as PySpark's own collect does
    if failure is not None:
        raise RuntimeError(failure)
