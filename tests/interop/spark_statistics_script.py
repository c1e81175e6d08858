"""Spark with CBO on, reading and writing column statistics through a Hive-Metastore-compatible server (run as
a subprocess: a Hive-enabled session cannot share the test suite's JVM).

Usage: python spark_statistics_script.py --uri thrift://127.0.0.1:PORT --warehouse DIR --db DB
Table DB.t must exist (statistics written by a Thrift client): DESCRIBE EXTENDED of each of its columns. Then
DB.s is created, filled and analysed by Spark, and DESCRIBE EXTENDED of each of its columns. Prints one JSON
document: {"t": {col: {field: value}}, "s": {...}, "errors": [...]}.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

T_COLUMNS = ["l", "d", "m", "dt", "ts", "s", "b"]


def describe(spark: Any, table: str, column: str) -> dict[str, str]:
    return {r[0]: r[1] for r in spark.sql(f"DESCRIBE EXTENDED {table} {column}").collect()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--db", required=True)
    args = parser.parse_args(argv)

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
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out: dict[str, Any] = {"errors": []}
    try:
        out["t"] = {c: describe(spark, f"{args.db}.t", c) for c in T_COLUMNS}
        out["t_plan"] = spark.sql(f"EXPLAIN COST SELECT * FROM {args.db}.t").collect()[0][0]
        spark.sql(
            f"CREATE TABLE {args.db}.s (l bigint, d double, m decimal(10,2), dt date, ts timestamp, s string, "
            "b boolean) STORED AS ORC"
        )
        spark.sql(
            f"INSERT INTO {args.db}.s SELECT id * 3 - 7, id / 4.0, CAST(id * 1.25 AS decimal(10,2)), "
            "date_add(DATE'2021-03-01', CAST(id AS int)), "
            "TIMESTAMP'2022-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 1.5), "
            "IF(id % 7 = 0, NULL, repeat('x', CAST(id % 5 AS int))), id < 10 "
            "FROM range(40)"
        )
        spark.sql(f"ANALYZE TABLE {args.db}.s COMPUTE STATISTICS FOR ALL COLUMNS")
        out["s"] = {c: describe(spark, f"{args.db}.s", c) for c in T_COLUMNS}
    except Exception as exc:  # noqa: BLE001 - reported to the test, which fails with it
        out["errors"].append(f"{type(exc).__name__}: {exc}"[:4000])
    finally:
        spark.stop()
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
