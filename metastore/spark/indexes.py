"""Index builds on Spark (issue 11): executors scan the indexed column of data files, the driver writes the index.

The driver plans tasks over the files a build must scan (small files grouped into ~128 MB tasks, at least as many
tasks as cores when there are enough files); each task runs :func:`metastore.index.scan.scan_column` on its files
through ``mapInArrow`` (metastore.spark.tasks.run_plans) and returns one row per file (the pickled per-stripe
values, or an error naming the file).
Rows stream back with ``toLocalIterator``, so the driver writes each index part as soon as its files have arrived
(metastore.index.build). Only DataFrame APIs are used: local sessions, clusters and Spark Connect alike.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from metastore.catalog import Table
from metastore.index.build import Scanner, bounds_only, fpp_of
from metastore.index.columns import column_type
from metastore.index.coverage import FileValues
from metastore.index.errors import IndexBuildError
from metastore.index.maintain import column_position
from metastore.index.model import DataFile, IndexKind, IndexRecord
from metastore.spark.tasks import default_parallelism, run_plans
from metastore.storage import StorageOptions

__all__ = ["SCAN_SCHEMA", "ScanTask", "scan_task", "spark_scanner"]

#: rows executors return (DDL, as mapInArrow takes it)
SCAN_SCHEMA = "path string, result binary, error string"
#: bytes of data files per task (Spark's spark.sql.files.maxPartitionBytes)
TASK_BYTES = 128 << 20


@dataclass(frozen=True)
class ScanTask:
    """Files for one executor task, with what scanning them needs."""

    column: str
    column_type: str
    position: int | None
    files: tuple[DataFile, ...]
    storage: StorageOptions = StorageOptions()
    bounds_only: bool = False  # MINMAX: per stripe only the smallest and largest key
    bloom_fpp: float | None = None  # BLOOM: per stripe its filter at this rate, made on the executor


def scan_task(payload: bytes) -> Iterator[Any]:
    """A task's function (tasks.run_plans): scan the files of one pickled ScanTask, one result row per file
    (errors name the file)."""
    import pyarrow as pa

    from metastore.index.scan import scan_column

    schema = pa.schema([("path", pa.string()), ("result", pa.binary()), ("error", pa.string())])
    task: ScanTask = pickle.loads(payload)
    ctype = column_type(task.column_type, task.column)
    for f in task.files:
        result: bytes | None = None
        error: str | None = None
        try:
            values = scan_column(f, task.column, ctype, task.position, task.storage,
                                 bounds_only=task.bounds_only, bloom_fpp=task.bloom_fpp)
            result = pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL)
        except IndexBuildError as exc:
            error = str(exc)
        yield pa.RecordBatch.from_pylist([{"path": f.path, "result": result, "error": error}], schema=schema)


def plan_tasks(files: Sequence[DataFile], per_task: int, cores: int) -> list[tuple[DataFile, ...]]:
    """Consecutive files in groups of about ``per_task`` bytes, smaller when that leaves cores idle."""
    if not files:
        return []
    total = sum(max(f.size, 1) for f in files)
    per_task = max(1, min(per_task, total // max(1, min(cores, len(files))) + 1))
    tasks: list[tuple[DataFile, ...]] = []
    current: list[DataFile] = []
    size = 0
    for f in files:
        if current and size + f.size > per_task:
            tasks.append(tuple(current))
            current, size = [], 0
        current.append(f)
        size += f.size
    if current:
        tasks.append(tuple(current))
    return tasks


def spark_scanner(spark: Any, record: IndexRecord, table: Table, storage: StorageOptions | None = None) -> Scanner:
    """A build scanner (metastore.index.build) that scans files on Spark's executors."""
    position = column_position(table, record.column)

    def scan(files: Sequence[DataFile]) -> Iterable[FileValues]:
        if not files:
            return
        groups = plan_tasks(files, TASK_BYTES, max(1, default_parallelism(spark)))
        fpp = fpp_of(record) if record.kind is IndexKind.BLOOM else None
        tasks = [ScanTask(record.column, record.column_type, position, g, storage or StorageOptions(),
                          bounds_only(record), fpp) for g in groups]
        # one Spark task per ScanTask (tasks.run_plans: the plans in the function's closure, or broadcast)
        frame = run_plans(spark, [pickle.dumps(t, protocol=pickle.HIGHEST_PROTOCOL) for t in tasks], scan_task,
                          SCAN_SCHEMA)
        wanted = {f.path: f for f in files}
        seen: set[str] = set()
        for row in frame.toLocalIterator():
            path = row["path"]
            if row["error"]:
                raise IndexBuildError(row["error"])
            if path in seen or path not in wanted:
                continue  # a retried task's duplicate (results are keyed by file)
            seen.add(path)
            values: FileValues = pickle.loads(row["result"])
            yield values

    return scan
