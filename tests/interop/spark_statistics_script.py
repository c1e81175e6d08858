"""One Hive-enabled Spark session with CBO on, serving a test module's requests over stdin/stdout (a subprocess: a
Hive-enabled session cannot share the test suite's JVM, and one session per module bounds the suite's time).

Usage: python spark_statistics_script.py --uri thrift://127.0.0.1:PORT --warehouse DIR
Reads one JSON request a line, answers one JSON line each:
  {"sql": [statement, ...]}                  -> {"results": [{"rows": [[...], ...]} | {"error": "..."}, ...]}
  {"analyze": "db.t", "histograms": bool}     -> {"summary": "..."} | {"error": "..."}  (metastore.spark.analyze_table)
  {"describe": "db.t", "columns": [...]}      -> {"columns": {col: {field: value}}} (REFRESH TABLE first)
Ends at end of input. Spark's own output goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def plain(value: Any) -> Any:
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    if isinstance(value, bytes | bytearray):
        return value.hex()
    return str(value)


def answer(spark: Any, request: dict[str, Any], uri: str) -> dict[str, Any]:
    if "sql" in request:
        results: list[dict[str, Any]] = []
        for statement in request["sql"]:
            try:
                rows = spark.sql(statement).collect()
                results.append({"rows": [[plain(v) for v in row] for row in rows]})
            except Exception as exc:  # noqa: BLE001 - each failure is reported to the test, which decides
                results.append({"error": f"{type(exc).__name__}: {exc}"[:4000]})
        return {"results": results}
    if "describe" in request:
        table = request["describe"]
        spark.sql(f"REFRESH TABLE {table}")
        return {"columns": {
            c: {r[0]: r[1] for r in spark.sql(f"DESCRIBE EXTENDED {table} {c}").collect()}
            for c in request["columns"]
        }}
    if "analyze" in request:
        from metastore.spark import analyze_table

        summary = analyze_table(spark, request["analyze"], histograms=bool(request.get("histograms")),
                                metastore=uri, cache=None)
        return {"summary": str(summary)}
    return {"error": f"unknown request {sorted(request)}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", required=True)
    parser.add_argument("--warehouse", required=True)
    args = parser.parse_args(argv)

    # Replies go to the original stdout; everything else written to fd 1 (the JVM inherits it) goes to stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    # Python workers (metastore.spark's tasks) run this interpreter: the project's virtualenv.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("metastore-interop-spark-statistics")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.catalogImplementation", "hive")
        .config("spark.hadoop.hive.metastore.uris", args.uri)
        .config("spark.sql.warehouse.dir", args.warehouse)
        .config("spark.sql.cbo.enabled", "true")
        .config("spark.sql.cbo.joinReorder.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out.write(json.dumps({"ready": spark.version}) + "\n")
    out.flush()
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                reply = answer(spark, json.loads(line), args.uri)
            except Exception as exc:  # noqa: BLE001 - reported to the test, which fails with it
                reply = {"error": f"{type(exc).__name__}: {exc}"[:4000]}
            out.write(json.dumps(reply) + "\n")
            out.flush()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
