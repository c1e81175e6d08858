"""`metastore spark-analyze` and `metastore sql --spark`: help, one-line errors with exit 1, and the shell's ANALYZE
on Spark (SET metastore.analyze.engine / auto with the threshold) writing what the in-process engine writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest
from test_cli_imports import HEAVY, loaded_modules, present

from metastore.client.embedded import EmbeddedMetastoreClient

METASTORE = str(Path(sys.executable).with_name("metastore"))


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([METASTORE, *args], capture_output=True, text=True, timeout=600,
                          env=None if env is None else {**os.environ, **env})


def test_help_loads_no_spark(tmp_path: Path) -> None:
    modules = loaded_modules(tmp_path, "spark-analyze", "--help")
    assert present(modules, (*HEAVY, "metastore.spark.analyze", "metastore.stats.harvest")) == []
    top = run("--help")
    assert "spark-analyze" in top.stdout and top.returncode == 0


def test_unreachable_metastore_is_one_line_and_exit_1() -> None:
    result = run("spark-analyze", "sales.orders", "--master", "local[1]", "--metastore", "thrift://127.0.0.1:9")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("metastore spark-analyze: error: cannot connect to the metastore at "
                                    "thrift://127.0.0.1:9")


def test_unreachable_object_store_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """The driver lists the table's files before Spark starts: an object store that does not answer is one line
    naming the location and the endpoint, at once (no JVM is started for a run that cannot read anything)."""
    db = f"sqlite:///{tmp_path / 'm.db'}"
    client = EmbeddedMetastoreClient(db, str(tmp_path / "wh"))
    client.close()
    assert run("sql", "--db", db, "-e", "CREATE TABLE t (k string, n bigint) PARTITIONED BY (ds string) STORED AS ORC "
               "LOCATION 's3a://nowhere-bucket/t'; ALTER TABLE t ADD PARTITION (ds='a');").returncode == 0
    no_aws_files = {"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    result = run("spark-analyze", "t", "--metastore", db, "--master", "local[1]", "--no-stats-cache",
                 "--storage-option", "fs.s3a.endpoint=http://127.0.0.1:9", "--storage-option", "key=k",
                 "--storage-option", "secret=s", "--storage-option", "client_kwargs.region_name=us-east-1",
                 env=no_aws_files)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("metastore spark-analyze: error: cannot list s3a://nowhere-bucket/t/ds=a: ")
    assert "127.0.0.1:9" in result.stderr and "secret=s" not in result.stderr


def test_missing_master_and_bad_options_are_one_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    EmbeddedMetastoreClient(db, str(tmp_path / "wh")).close()
    result = subprocess.run([METASTORE, "spark-analyze", "default.t", "--metastore", db], capture_output=True,
                            text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr == ("metastore spark-analyze: error: no Spark master: give --master (local[4], "
                             "spark://host:7077, sc://host:15002) or set METASTORE_SPARK_MASTER, or run under "
                             "spark-submit\n")
    bad = run("spark-analyze", "t", "--partition", "nokey", "--master", "local[1]")
    assert bad.returncode == 2 and "expected KEY=VALUE, got 'nokey'" in bad.stderr
    both = run("spark-analyze", "t", "--basic-only", "--columns", "a", "--metastore", db, "--master", "local[1]")
    assert both.returncode == 1 and both.stderr == "metastore spark-analyze: error: --basic-only takes no --columns\n"


@pytest.mark.spark
@pytest.mark.slow
def test_shell_analyze_on_spark_equals_local(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rng = np.random.default_rng(3)
    for day in ("a", "b"):
        (data / f"ds={day}").mkdir(parents=True)
        for k in range(2):
            n = 20_000
            po.write_table(pa.table({
                "id": pa.array(rng.integers(0, 10**12, n), mask=rng.random(n) < 0.1),
                "name": pa.array([f"n{v}" for v in rng.integers(0, 3000, n)]),
            }), str(data / f"ds={day}" / f"part-{k}.orc"), compression="zstd")
    setup = (f"CREATE EXTERNAL TABLE t (id bigint, name string) PARTITIONED BY (ds string) STORED AS ORC "
             f"LOCATION '{data}'; MSCK REPAIR TABLE t;")
    local_db, spark_db = (f"sqlite:///{tmp_path / n}" for n in ("local.db", "spark.db"))
    analyze = "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS;"
    local = run("sql", "--db", local_db, "--warehouse", str(tmp_path / "wh"), "--no-stats-cache", "-e",
                setup + analyze)
    assert local.returncode == 0, local.stderr
    assert "on Spark" not in local.stderr
    # one Spark shell (one JVM) for the three choices: auto under the threshold (in process), auto over it, and
    # the engine set to spark
    spark = run("sql", "--db", spark_db, "--warehouse", str(tmp_path / "wh"), "--no-stats-cache", "--spark",
                "local[2]", "-e", setup + analyze + "SET metastore.analyze.spark.threshold = 1k;" + analyze
                + "SET metastore.analyze.spark.threshold = 1g; SET metastore.analyze.engine = spark;" + analyze)
    assert spark.returncode == 0, spark.stderr
    messages = [line for line in spark.stderr.splitlines() if line.startswith("analyzed")]
    assert len(messages) == 3, spark.stderr
    assert "on Spark" not in messages[0]
    for message in messages[1:]:
        assert "analyzed 2 partition(s) of default.t on Spark, 2 column(s): 4 file(s) read" in message
    def stats(url: str) -> tuple[dict, dict]:
        client = EmbeddedMetastoreClient(url, str(tmp_path / "wh"))
        try:
            parts = client.partition_statistics("default", "t", ["ds=a", "ds=b"], ["id", "name"])
            table = client.table_statistics("default", "t", ["id", "name"])
            return parts, {e.column: e.stats for e in table}
        finally:
            client.close()

    assert stats(spark_db) == stats(local_db)


@pytest.mark.spark
@pytest.mark.slow
def test_spark_submit_runs_the_command_as_the_readme_shows(tmp_path: Path) -> None:
    import os

    import pyspark

    from metastore.spark import cli

    data = tmp_path / "data" / "ds=a"
    data.mkdir(parents=True)
    po.write_table(pa.table({"id": np.arange(5000)}), str(data / "p.orc"))
    db = f"sqlite:///{tmp_path / 'm.db'}"
    assert run("sql", "--db", db, "--warehouse", str(tmp_path / "wh"), "-e",
               f"CREATE EXTERNAL TABLE t (id bigint) PARTITIONED BY (ds string) STORED AS ORC LOCATION "
               f"'{tmp_path / 'data'}'; MSCK REPAIR TABLE t;").returncode == 0
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    env = {**os.environ, "PYSPARK_DRIVER_PYTHON": sys.executable, "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run([str(submit), "--master", "local[2]", cli.__file__, "t", "--metastore", db,
                             "--no-stats-cache", "--output", "csv"], capture_output=True, text=True, timeout=600,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert any(line.startswith("ds=a,5000,1,") for line in result.stdout.splitlines()), result.stdout
    # spark-submit forwards the Python driver's stderr to its stdout
    assert "analyzed 1 partition(s) of default.t on Spark, 1 column(s)" in result.stdout + result.stderr
