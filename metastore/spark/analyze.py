"""The driver of distributed ANALYZE: plan tasks, run them on executors, merge results as they arrive, persist.

:func:`harvest_targets` is the engine (the shell's ANALYZE calls it with ``--spark``); :func:`analyze_table` is
the whole statement for Python callers and `metastore spark-analyze`.
"""

from __future__ import annotations

import math
import pickle
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from metastore.catalog import FieldSchema, Table
from metastore.client import connect
from metastore.errors import InvalidInput
from metastore.spark.tasks import RESULT_SCHEMA, TaskPlan, Unit, failing_tasks, harvest_tasks
from metastore.sql.analysis import (
    AnalyzeSummary,
    AnalyzeTarget,
    FileProgress,
    TargetOutcome,
    failed_outcome,
    list_targets,
    outcome_of,
    persist_outcomes,
    spec_values,
    statistics_columns,
    summarize,
)
from metastore.sql.table_files import is_orc, qualified
from metastore.stats.harvest.partial import ColumnPartial, FileAnalysis, PartialAccumulator
from metastore.stats.harvest.result import result_of
from metastore.stats.harvest.runner import cached_partials, column_specs, stored_partials
from metastore.stats.harvest.scan import (
    ColumnSpec,
    FilePiece,
    ScanOptions,
    absent_partial,
    join_file_pieces,
)
from metastore.stats.orc_convert import hive_kind
from metastore.stats.partial_store import FilePartials
from metastore.storage import StorageOptions

__all__ = ["DEFAULT_SPLIT_BYTES", "DEFAULT_TASK_BYTES", "analyze_table", "harvest_targets"]

#: Files are grouped into tasks of about this many bytes (Spark's spark.sql.files.maxPartitionBytes).
DEFAULT_TASK_BYTES = 128 << 20
#: Files larger than this are split into pieces of stripes, one task each.
DEFAULT_SPLIT_BYTES = 256 << 20
#: Smallest task worth scheduling when tasks are made smaller to keep every core busy (openCostInBytes).
_MIN_TASK_BYTES = 4 << 20
#: Results held on the driver at once: tasks run in waves whose results are estimated to fit in this.
_WAVE_RESULT_BYTES = 256 << 20
#: Estimated size of one column's result of one unit (a dense p=14 HyperLogLog is 12 KiB).
_RESULT_BYTES_PER_COLUMN = 16 << 10


def analyze_table(
    spark: Any,
    table: str,
    columns: Sequence[str] | None = None,
    partition: Mapping[str, Any] | None = None,
    histograms: bool = False,
    metastore: str = "thrift://127.0.0.1:9083",
    *,
    cache: str | None = "default",
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
    adds KLL histograms. ``cache`` keeps per-file results on the driver for incremental re-runs ("default": the
    user's cache directory, a path, "metastore": the metastore's database, shared with every shell and driver,
    or None). Returns the summary (rows per partition, the summary line, failed
    partitions with the file that failed them). ``storage_options`` reach object stores (``{"endpoint_url":
    ...}``, as ``--storage-option``). Raises MetastoreError subclasses for bad input, an unreachable metastore or
    object store.
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
        opened = _open_cache(cache, client, tbl)
        try:
            outcomes = harvest_targets(
                spark, targets, tbl, wanted, histograms=histograms, cache=opened, progress=bar,
                split_bytes=split_bytes, task_bytes=task_bytes, parallelism=parallelism, storage_options=storage,
            )
            if opened is not None:  # results of files deleted from storage are forgotten
                for outcome in outcomes:
                    if not outcome.failed:
                        opened.retain(outcome.target.files, outcome.target.name)
        finally:
            bar.close()
            if opened is not None:
                opened.close()
        persist_outcomes(client, tbl, wanted, outcomes, partitions_total)
        return summarize(tbl, wanted, True, outcomes, time.monotonic() - started, engine="Spark")
    finally:
        client.close()


def _stderr() -> Any:
    import sys

    return sys.stderr


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
    """A file of a target still to be merged: pieces received so far and the columns the cache had."""

    pieces: dict[int, FilePiece] = field(default_factory=dict)
    have: dict[str, ColumnPartial] = field(default_factory=dict)
    done: FileAnalysis | None = None


class _TargetMerge:
    """One target's files merged in listing order as they complete (what analyze_files' merge gives)."""

    def __init__(self, target: AnalyzeTarget, names: list[str]) -> None:
        self.target = target
        self.names = names
        self.next = 0  # files before this one are merged
        self.slots: dict[int, _FileSlot] = {}
        self.accumulators = {name: PartialAccumulator() for name in names}
        self.files: list[FileAnalysis] = []  # without their partials: memory stays flat in the number of files
        self.error: str | None = None

    def slot(self, index: int) -> _FileSlot | None:
        """The open slot of a file (None once the file is merged: a repeated result is dropped)."""
        if index < self.next:
            return None
        return self.slots.setdefault(index, _FileSlot())

    def complete(self, index: int, analysis: FileAnalysis) -> None:
        slot = self.slots[index]
        slot.done = analysis
        while self.next in self.slots and self.slots[self.next].done is not None:
            ready = self.slots.pop(self.next).done
            assert ready is not None
            for name in self.names:
                self.accumulators[name].add(ready.columns[name])
            self.files.append(replace(ready, columns={}))
            self.next += 1

    @property
    def finished(self) -> bool:
        return self.next == len(self.target.files)


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
) -> list[TargetOutcome]:
    """Each target's outcome computed on Spark: column statistics of ``columns`` (none: basic statistics from the
    footers), equal to what the local runner gives. A target with an unreadable file fails alone, naming it.
    Executors read object stores with ``storage_options``."""
    started = time.perf_counter()
    if split_bytes < 1 or task_bytes < 1:
        raise InvalidInput("split_bytes and task_bytes must be positive")
    hive_types = {c.name: c.type for c in columns}
    names = [c.name for c in columns]
    specs = tuple(column_specs(names, hive_types, [c.name for c in table.sd.cols]))
    options = ScanOptions(want_ndv=True, want_histograms=histograms, scan=True)
    merges = [_TargetMerge(t, names) for t in targets]
    units: list[Unit] = []
    files_done = 0
    versions: dict[str, str] = {}  # object versions of the files in flight, for the cache
    outcomes_pending: list[FilePartials] = []
    for ti, target in enumerate(targets):
        merge = merges[ti]
        # one lookup per target: a PartialStore in the metastore answers it in one call
        stored = cache.lookup(target.files, target.name) if cache is not None and target.files else {}
        for fi, ref in enumerate(target.files):
            path, size, mtime_ns = ref.url, ref.size, ref.mtime_ns
            reused = cached_partials(stored.get(ref.url), ref, list(specs), options)
            slot = merge.slot(fi)
            assert slot is not None
            if reused is not None and len(reused[1]) == len(specs):
                info, partials = reused
                merge.complete(fi, FileAnalysis(path, size, mtime_ns, info["rows"], info["raw"], partials, "cache"))
                files_done += 1
                continue
            if reused is not None:
                slot.have = reused[1]
            if ref.version:
                versions[path] = ref.version
            todo = tuple(i for i, s in enumerate(specs) if s.name not in slot.have)
            # only a scan is worth splitting: basic statistics read each footer once
            pieces = math.ceil(size / split_bytes) if specs and size > split_bytes else 1
            units.extend(Unit(ti, fi, path, size, mtime_ns, k, pieces, todo, ref.version) for k in range(pieces))
    if progress is not None:
        progress.advance_to(files_done)

    if units:
        cores = parallelism or _default_parallelism(spark)
        total = sum(u.size // u.pieces for u in units)
        per_task = min(task_bytes, max(_MIN_TASK_BYTES, total // max(cores, 1)))
        tasks = _group(units, per_task, specs, options, storage_options or StorageOptions())
        per_wave = max(2 * cores, _WAVE_RESULT_BYTES // max(1, _RESULT_BYTES_PER_COLUMN * max(1, len(specs))
                                                          * max(1, len(units) // len(tasks))))
        for start in range(0, len(tasks), per_wave):
            wave = tasks[start : start + per_wave]
            for row in _run_wave(spark, wave):
                merge = merges[row["target"]]
                if merge.error is not None:
                    continue
                if row["error"] is not None:
                    merge.error = row["error"]
                    continue
                slot = merge.slot(row["file"])
                if slot is None or row["piece"] in slot.pieces or slot.done is not None:
                    continue  # a result seen before (a retried or speculative task): merged once
                slot.pieces[row["piece"]] = pickle.loads(row["result"])
                if len(slot.pieces) < row["pieces"]:
                    continue
                outcome = join_file_pieces(list(slot.pieces.values()))
                slot.pieces.clear()
                analysis = outcome.analysis
                if slot.have:
                    analysis = replace(analysis, columns={**slot.have, **analysis.columns})
                outcomes_pending.append(stored_partials(outcome, versions.pop(analysis.path, ""), merge.target.name))
                merge.complete(row["file"], analysis)
                files_done += 1
            if cache is not None and outcomes_pending:
                cache.store(outcomes_pending)
            outcomes_pending = []
            if progress is not None:
                progress.advance_to(files_done)

    seconds = time.perf_counter() - started
    out: list[TargetOutcome] = []
    for merge in merges:
        if merge.error is not None:
            out.append(failed_outcome(merge.target, merge.error))
            continue
        if not merge.finished:  # pragma: no cover - every unit answers or fails its target
            raise RuntimeError(f"Spark returned no result for some files of {merge.target.name or 'the table'}")
        merged = {
            name: acc.result() if acc.count else absent_partial(hive_kind(hive_types[name]), 0, options)
            for name, acc in merge.accumulators.items()
        }
        result = result_of(tuple(merge.files), merged, options, seconds)
        out.append(outcome_of(merge.target, result))
    return out


def _group(units: list[Unit], per_task: int, specs: tuple[ColumnSpec, ...], options: ScanOptions,
           storage: StorageOptions) -> list[TaskPlan]:
    """Consecutive units in tasks of about ``per_task`` bytes (a piece of a large file is a task of its own)."""
    tasks = _group_units(units, per_task, specs, options)
    failing = failing_tasks()
    return [replace(t, storage=storage, fail_first_attempt=t.task in failing) for t in tasks]


def _group_units(units: list[Unit], per_task: int, specs: tuple[ColumnSpec, ...], options: ScanOptions
                 ) -> list[TaskPlan]:
    tasks: list[TaskPlan] = []
    current: list[Unit] = []
    size = 0
    for unit in units:
        share = unit.size // unit.pieces
        if current and (size + share > per_task or unit.pieces > 1):
            tasks.append(TaskPlan(len(tasks), specs, options, tuple(current)))
            current, size = [], 0
        current.append(unit)
        size += share
        if unit.pieces > 1:
            tasks.append(TaskPlan(len(tasks), specs, options, tuple(current)))
            current, size = [], 0
    if current:
        tasks.append(TaskPlan(len(tasks), specs, options, tuple(current)))
    return tasks


def _default_parallelism(spark: Any) -> int:
    """The cores Spark gives a job by default (classic: the context's; Connect: as many partitions as a range
    gets, which is the same number)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        from pyspark.sql import functions as F  # noqa: N812

        return int(spark.range(0, 1 << 20).select(F.spark_partition_id().alias("p")).distinct().count())


def _run_wave(spark: Any, tasks: list[TaskPlan]) -> Iterator[dict[str, Any]]:
    """Run tasks on executors, exactly one Spark task each, and yield their result rows in task order."""
    from pyspark.sql import functions as F  # noqa: N812

    n = len(tasks)
    # range(n) in n partitions puts exactly one task id in each; the broadcast side carries the plans, so each
    # executor receives them once and every task finds its own
    ids = spark.range(0, n, 1, n)
    plans = spark.createDataFrame(
        [(t.task - tasks[0].task, pickle.dumps(t, protocol=pickle.HIGHEST_PROTOCOL)) for t in tasks],
        "task long, payload binary",
    )
    joined = ids.join(F.broadcast(plans), ids["id"] == plans["task"]).select("payload")
    results = joined.mapInArrow(harvest_tasks, RESULT_SCHEMA)
    for row in results.collect():
        yield row.asDict()
