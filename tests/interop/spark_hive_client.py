"""Spark's built-in Hive 2.3.10 metastore client driving a Hive-Metastore-compatible server (run as a subprocess).

Usage: python spark_hive_client.py --uri thrift://127.0.0.1:PORT --warehouse DIR
Prints one JSON document: each SQL statement with its rows or its error. It runs in a process of its own because a
Hive-enabled SparkSession cannot live next to the test suite's plain one in the same JVM.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

DB = "spark_interop"
STATEMENTS: list[tuple[str, str]] = [
    ("create_database", f"CREATE DATABASE {DB}"),
    ("show_databases", "SHOW DATABASES"),
    (
        "create_table",
        f"CREATE TABLE {DB}.t (id bigint, name string, price double) PARTITIONED BY (ds string) STORED AS ORC "
        "TBLPROPERTIES ('orc.bloom.filter.columns'='name')",
    ),
    (
        "insert_partition",
        f"INSERT INTO {DB}.t PARTITION (ds='2024-01-01') "
        "SELECT id, concat('name', CAST(id % 100 AS string)), id * 1.5 FROM range(1000)",
    ),
    (
        "count_partition",
        f"SELECT count(*), min(id), max(id), count(DISTINCT name) FROM {DB}.t WHERE ds='2024-01-01'",
    ),
    ("analyze_columns", f"ANALYZE TABLE {DB}.t COMPUTE STATISTICS FOR COLUMNS id, name, price"),
    ("describe_extended_id", f"DESCRIBE EXTENDED {DB}.t id"),
    ("describe_extended_name", f"DESCRIBE EXTENDED {DB}.t name"),
    ("show_partitions", f"SHOW PARTITIONS {DB}.t"),
    ("show_tables", f"SHOW TABLES IN {DB}"),
    ("drop_table", f"DROP TABLE {DB}.t"),
    ("show_tables_after_drop", f"SHOW TABLES IN {DB}"),
    ("drop_database", f"DROP DATABASE {DB}"),
]


def plain(value: Any) -> Any:
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", required=True, help="thrift://host:port of the metastore")
    parser.add_argument("--warehouse", required=True, help="Spark's warehouse folder (new databases go here)")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("metastore-interop-spark-client")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.catalogImplementation", "hive")
        .config("spark.hadoop.hive.metastore.uris", args.uri)
        .config("spark.sql.warehouse.dir", args.warehouse)
        .config("spark.driver.memory", "1g")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    results = []
    try:
        for name, sql in STATEMENTS:
            record: dict[str, Any] = {"step": name, "sql": sql}
            try:
                rows = spark.sql(sql).collect()
                record["rows"] = [[plain(v) for v in row] for row in rows]
            except Exception as exc:  # noqa: BLE001 - each failure is reported, the next statement still runs
                record["error"] = f"{type(exc).__name__}: {exc}"[:4000]
                record["traceback"] = traceback.format_exc(limit=4)[-3000:]
            results.append(record)
    finally:
        spark.stop()
    json.dump({"spark_version": spark.version, "steps": results}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
