"""What runs on executors: a task's units of work (a file, or a piece of a large file) harvested one by one.

Tasks reach executors as pickled plans (:func:`run_plans`, shared with the index builds of metastore.spark.indexes:
one Spark task per plan) and leave as one Arrow row per unit:
(target, file, piece, pieces, task, the pickled :class:`~metastore.stats.harvest.scan.FilePiece`, error). A file that
cannot be read gives an error row naming it (its partition then fails alone); anything else fails the task, which
Spark retries.
"""

from __future__ import annotations

import os
import pickle
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from metastore.stats.harvest.scan import ColumnSpec, ScanOptions
from metastore.storage import StorageOptions

__all__ = [
    "CLOSURE_PLAN_BYTES", "FAIL_FIRST_ATTEMPT_ENV", "RESULT_SCHEMA", "TaskPlan", "Unit", "default_parallelism",
    "failing_tasks", "harvest_task", "run_plans",
]

#: The schema of the rows executors return (a DDL string, as mapInArrow takes it).
RESULT_SCHEMA = "target int, file long, piece int, pieces int, task int, result binary, error string"

#: Testing hook, read on the driver: comma-separated task ids whose first attempt fails after its first unit (proves
#: that Spark's retries do not double count). Unset in normal use.
FAIL_FIRST_ATTEMPT_ENV = "METASTORE_SPARK_FAIL_FIRST_ATTEMPT"

#: Pickled plans of one job at most that travel in the task function's closure (run_plans). The closure goes to
#: every task (Spark Connect: in the plan over gRPC, then in each task's binary; classic: broadcast above 1 MiB),
#: so each task pays for every plan of its job: 1 MiB (about 100 tasks of 32 files) keeps that to milliseconds.
#: Spark Connect's server runs out of its 1 GiB default heap with a 64 MiB closure over 8 tasks (measured).
#: More plans go as a broadcast table joined to the task ids, which costs one small Spark job more.
CLOSURE_PLAN_BYTES = 1 << 20


@dataclass(frozen=True)
class Unit:
    """One file of a target, or piece ``piece`` of ``pieces`` of it, and the columns to compute."""

    target: int
    file: int
    path: str
    size: int
    mtime_ns: int
    piece: int
    pieces: int
    columns: tuple[int, ...]  # indexes into TaskPlan.specs
    version: str = ""  # an object's version tag (ETag) as listed


@dataclass(frozen=True)
class TaskPlan:
    """One task's units with the column specs and options they share."""

    task: int
    specs: tuple[ColumnSpec, ...]
    options: ScanOptions
    units: tuple[Unit, ...]
    storage: StorageOptions = StorageOptions()
    fail_first_attempt: bool = False  # the FAIL_FIRST_ATTEMPT_ENV testing hook


def run_plans(spark: Any, payloads: Sequence[bytes], task: Callable[[bytes], Iterator[Any]], schema: str) -> Any:
    """A DataFrame of what ``task`` yields (Arrow record batches of ``schema``) for each pickled plan of
    ``payloads``, exactly one Spark task per plan: ``spark.range(n)`` in ``n`` partitions puts one task id in
    each, and the task runs the plan of that id. Plans of at most CLOSURE_PLAN_BYTES travel in the function's
    closure (no Spark job besides the one that runs the tasks); more go as a broadcast table joined to the ids
    (each executor receives them once; the broadcast costs one small job). Classic sessions and Spark Connect
    alike (only DataFrame APIs)."""
    n = len(payloads)
    ids = spark.range(0, n, 1, n)
    if sum(len(p) for p in payloads) <= CLOSURE_PLAN_BYTES:
        return ids.mapInArrow(_by_id(tuple(payloads), task), schema)
    from pyspark.sql import functions as F  # noqa: N812

    plans = spark.createDataFrame(list(enumerate(payloads)), "task long, payload binary")
    joined = ids.join(F.broadcast(plans), ids["id"] == plans["task"]).select("payload")
    return joined.mapInArrow(_by_payload(task), schema)


def default_parallelism(spark: Any) -> int:
    """The cores Spark gives a job by default (classic: the context's; Connect: as many partitions as a range
    gets, which is the same number: read from the range's physical plan, one analysis call, or else counted by a
    job)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        pass
    splits = _range_splits(spark)
    if splits is not None:
        return splits
    from pyspark.sql import functions as F  # noqa: N812

    last = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p")).agg(F.max("p")).first()[0]
    return int(last) + 1


def _range_splits(spark: Any) -> int | None:
    """The partitions ``spark.range(n)`` gets, from its physical plan (``Range (0, n, step=1, splits=k)``, which
    Spark explains without running a job); None when the plan does not say."""
    try:
        text = spark.range(0, 1 << 16)._explain_string(mode="simple")
    except Exception:  # noqa: BLE001 - a private API: the caller then counts with a job
        return None
    found = re.findall(r"\bRange \(0, 65536, step=1, splits=(?:Some\()?(\d+)\)?\)", str(text))
    return int(found[0]) if len(found) == 1 and int(found[0]) > 0 else None


def _by_id(payloads: tuple[bytes, ...], task: Callable[[bytes], Iterator[Any]]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """mapInArrow function over task ids: runs each id's plan from the closure."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for k in batch.column("id").to_pylist():
                yield from task(payloads[k])

    return run


def _by_payload(task: Callable[[bytes], Iterator[Any]]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """mapInArrow function over (payload) rows: runs each row's plan."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for payload in batch.column("payload").to_pylist():
                yield from task(payload)

    return run


def harvest_task(payload: bytes) -> Iterator[Any]:
    """A task's function (run_plans): harvest the units of one pickled TaskPlan, one Arrow row per unit."""
    import pyarrow as pa

    from metastore.stats.harvest.allocator import keep_freed_memory
    from metastore.stats.harvest.scan import HarvestError, analyze_file_piece

    keep_freed_memory()  # a Python worker of Spark's: freed numpy temporaries are reused (allocator's doc)

    schema = pa.schema([
        ("target", pa.int32()), ("file", pa.int64()), ("piece", pa.int32()), ("pieces", pa.int32()),
        ("task", pa.int32()), ("result", pa.binary()), ("error", pa.string()),
    ])
    plan: TaskPlan = pickle.loads(payload)
    for n, unit in enumerate(plan.units):
        if n == 1 and plan.fail_first_attempt and _first_attempt():
            raise RuntimeError(f"injected failure of task {plan.task} ({FAIL_FIRST_ATTEMPT_ENV})")
        wanted = tuple(plan.specs[i] for i in unit.columns)
        result: bytes | None = None
        error: str | None = None
        try:
            piece = analyze_file_piece(unit.path, unit.size, unit.mtime_ns, wanted, plan.options,
                                       unit.piece, unit.pieces, storage_options=plan.storage,
                                       version=unit.version)
            result = pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL)
        except HarvestError as exc:
            error = str(exc)
        # one row per unit: results stream out instead of piling up in the task
        yield pa.RecordBatch.from_pylist(
            [{"target": unit.target, "file": unit.file, "piece": unit.piece, "pieces": unit.pieces,
              "task": plan.task, "result": result, "error": error}],
            schema=schema,
        )


def failing_tasks() -> frozenset[int]:
    """The task ids of the FAIL_FIRST_ATTEMPT_ENV testing hook."""
    text = os.environ.get(FAIL_FIRST_ATTEMPT_ENV, "")
    return frozenset(int(t) for t in text.split(",") if t.strip())


def _first_attempt() -> bool:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context is not None and context.attemptNumber() == 0
