"""Spark 4's built-in Hive 2.3.10 client (a real JVM HMS client) against our server.

The Spark script runs in a subprocess (a Hive-enabled session cannot share the JVM with the suite's plain Spark
fixture), through a recording proxy so a failure names the exact Thrift calls Spark made and what they answered.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from interop.thrift_recorder import ThriftRecorder

SCRIPT = Path(__file__).resolve().parent / "spark_hive_client.py"

pytestmark = [pytest.mark.spark, pytest.mark.slow]

EXPECTED_ROWS: dict[str, list[list[Any]]] = {
    "create_database": [],
    "create_table": [],
    "insert_partition": [],
    "count_partition": [[1000, 0, 999, 100]],
    "analyze_columns": [],
    # Spark computes these itself and keeps them in table parameters (spark.sql.statistics.colStats.*): the
    # server has to store and return them unchanged.
    "describe_extended_id": [
        ["col_name", "id"],
        ["data_type", "bigint"],
        ["comment", "NULL"],
        ["min", "0"],
        ["max", "999"],
        ["num_nulls", "0"],
        ["distinct_count", "1000"],
        ["avg_col_len", "8"],
        ["max_col_len", "8"],
        ["histogram", "NULL"],
    ],
    "describe_extended_name": [
        ["col_name", "name"],
        ["data_type", "string"],
        ["comment", "NULL"],
        ["min", "NULL"],
        ["max", "NULL"],
        ["num_nulls", "0"],
        ["distinct_count", "103"],
        ["avg_col_len", "6"],
        ["max_col_len", "6"],
        ["histogram", "NULL"],
    ],
    "show_partitions": [["ds=2024-01-01"]],
    "show_tables": [["spark_interop", "t", False]],
    "drop_table": [],
    "show_tables_after_drop": [],
    "drop_database": [],
}


def run_spark_client(address: tuple[str, int], warehouse: Path, timeout: float = 420.0) -> tuple[dict, list]:
    """Run the Spark script against address through a recorder; return (its JSON, the recorded calls)."""
    recorder = ThriftRecorder(address)
    try:
        host, port = recorder.address
        proc = subprocess.run(
            [sys.executable, str(SCRIPT), "--uri", f"thrift://{host}:{port}", "--warehouse", str(warehouse)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        recorder.close()
    calls = recorder.calls()
    if proc.returncode != 0 or not proc.stdout.strip():
        pytest.fail(f"Spark client script exited {proc.returncode}:\n{proc.stderr[-5000:]}", pytrace=False)
    return json.loads(proc.stdout), calls


def test_spark_hive_client_full_cycle(our_server_on_sqlite: tuple[str, int], tmp_path: Path) -> None:
    """CREATE DATABASE/TABLE ... STORED AS ORC, INSERT INTO a partition, ANALYZE ... FOR COLUMNS, DESCRIBE
    EXTENDED, SHOW PARTITIONS, DROP TABLE: every statement succeeds with the answers Spark gives on HMS 2.3.10."""
    doc, calls = run_spark_client(our_server_on_sqlite, tmp_path / "spark-warehouse")
    steps = {s["step"]: s for s in doc["steps"]}
    call_summary = "\n".join(
        f"  {m} -> {o}: {n}" for (m, o), n in Counter((c.method, c.outcome) for c in calls).items()
    )
    problems = []
    for step, want in EXPECTED_ROWS.items():
        got = steps[step]
        if "error" in got:
            problems.append(f"{step} ({got['sql']}) failed: {got['error']}")
        elif got["rows"] != want:
            problems.append(f"{step}: expected {want}, got {got['rows']}")
    if "error" in steps["show_databases"] or ["spark_interop"] not in steps["show_databases"]["rows"]:
        problems.append(f"show_databases: {steps['show_databases']}")
    assert not problems, (
        "\n".join(problems) + f"\nThrift calls Spark made (method -> outcome: count):\n{call_summary}"
    )
    # An application exception means an unknown method or a server fault, never a normal answer.
    assert [c for c in calls if c.outcome == "application-exception"] == [], call_summary
