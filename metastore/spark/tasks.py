"""What runs on executors: a task's units of work (a file, or a piece of a large file) harvested one by one.

Tasks reach executors as rows (task id, pickled :class:`TaskPlan`) and leave as one Arrow row per unit:
(target, file, piece, pieces, task, the pickled :class:`~metastore.stats.harvest.scan.FilePiece`, error). A file that
cannot be read gives an error row naming it (its partition then fails alone); anything else fails the task, which
Spark retries.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from metastore.stats.harvest.scan import ColumnSpec, ScanOptions
from metastore.storage import StorageOptions

__all__ = ["FAIL_FIRST_ATTEMPT_ENV", "RESULT_SCHEMA", "TaskPlan", "Unit", "failing_tasks", "harvest_tasks"]

#: The schema of the rows executors return (a DDL string, as mapInArrow takes it).
RESULT_SCHEMA = "target int, file long, piece int, pieces int, task int, result binary, error string"

#: Testing hook, read on the driver: comma-separated task ids whose first attempt fails after its first unit (proves
#: that Spark's retries do not double count). Unset in normal use.
FAIL_FIRST_ATTEMPT_ENV = "METASTORE_SPARK_FAIL_FIRST_ATTEMPT"


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


def harvest_tasks(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow function: for each (task, payload) row, harvest its units and yield one row per unit."""
    import pyarrow as pa

    from metastore.stats.harvest.allocator import keep_freed_memory
    from metastore.stats.harvest.scan import HarvestError, analyze_file_piece

    keep_freed_memory()  # a Python worker of Spark's: freed numpy temporaries are reused (allocator's doc)

    schema = pa.schema([
        ("target", pa.int32()), ("file", pa.int64()), ("piece", pa.int32()), ("pieces", pa.int32()),
        ("task", pa.int32()), ("result", pa.binary()), ("error", pa.string()),
    ])
    for batch in batches:
        for payload in batch.column("payload").to_pylist():
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
