"""Distributed ANALYZE on Spark: the driver plans, executors harvest ORC files, the driver merges and persists.

    from metastore.spark import analyze_table
    summary = analyze_table(spark, "sales.orders", partition={"ds": "2024-01-01"},
                            metastore="thrift://metastore:9083")

:func:`analyze_table` runs Hive's ``ANALYZE TABLE ... COMPUTE STATISTICS FOR COLUMNS`` semantics with the same
statistics model, sketches and persistence as the shell's ANALYZE (:mod:`metastore.sql.analysis`):

- the **driver** lists the partitions' files, reuses unchanged files' results from the per-file cache, and plans
  tasks: small files grouped (~128 MB a task, fewer bytes when that leaves cores idle), files larger than
  ``split_bytes`` split into pieces by stripe ranges (:func:`~metastore.stats.harvest.scan.stripes_of_piece`);
- **executors** run the per-file harvest (:func:`~metastore.stats.harvest.scan.analyze_file_piece`: footers
  first, a stream-selective scan only for what footers lack) through ``mapInArrow`` and return each piece pickled;
- each task's results reach the driver as the task finishes (a classic session's Arrow stream read batch by
  batch; ``toLocalIterator`` over Spark Connect); the driver joins pieces, merges files in listing order (one
  running sketch per column and partition: memory does not grow with the number of files) and writes through
  the metastore client.

Only DataFrame APIs are used (``spark.range``, a broadcast join, ``mapInArrow``), so the same code runs on a local
session, a standalone or YARN/Kubernetes cluster, and over Spark Connect (``sc://``). Retried tasks cannot double
count: every result is keyed by (partition, file, piece) and a key seen twice is merged once.

:func:`read_table` gives Spark a table's rows reading only the files its split-filtering indexes keep, and index
builds (CREATE / UPDATE INDEX with the Spark engine) scan files on executors (:mod:`metastore.spark.indexes`).

pyspark is the optional extra ``spark``; nothing outside this package imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metastore.spark.analyze import analyze_table
    from metastore.spark.read import read_table

__all__ = ["analyze_table", "read_table"]


def __getattr__(name: str) -> Any:
    # loaded on first use: `import metastore.spark` stays cheap and pyspark-free
    if name == "analyze_table":
        from metastore.spark.analyze import analyze_table

        return analyze_table
    if name == "read_table":
        from metastore.spark.read import read_table

        return read_table
    raise AttributeError(name)
