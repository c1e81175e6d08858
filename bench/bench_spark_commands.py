"""ANALYZE on Spark as whole commands: `spark-sql -e "ANALYZE ..."` against `metastore spark-analyze`.

    python bench/bench_spark_commands.py [--rows 20000000] [--partitions 40] [--runs 2] [--data DIR]

What a user types, start-up included (a JVM, Python's imports, connecting to the metastore), on bench_spark.py's
table (bench_analyze.py's ten columns of mixed types, ORC zstd, written by Spark, partitioned by ``ds``), in
``--runs`` interleaved rounds:

1. ``spark-sql --master local[2] -e "ANALYZE TABLE bench_orders COMPUTE STATISTICS FOR ALL COLUMNS"``: Spark's
   own SQL shell on a catalog of its own (Derby, set up once before the rounds, untimed);
2. ``metastore spark-analyze default.bench_orders --master local[2] --no-stats-cache``: ours, every file read
   on Spark, statistics written to an embedded metastore (SQLite);
3. the same command with ``--stats-cache PATH`` after one partition's file was rewritten (the cache filled by a
   run before the rounds): a cron job's re-ANALYZE. It reads the one changed file on the driver and starts no
   JVM, so its start-up is Python's alone (byte-code cached as a user's install caches it: PYTHONDONTWRITEBYTECODE
   is unset for our commands, and the untimed run that fills the cache writes it).

Both Spark commands get the same driver memory and shuffle partitions as bench_spark.py's session. The wall
time of each command and the CPU time of its process tree (it and its children, JVM included) are printed;
the best of the rounds is compared (this process is the subreaper of the commands, so a JVM that
its Python parent leaves behind is waited for and counted). Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import platformdirs

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_analyze import (  # the sibling benchmarks' table and helpers
    HIVE_TYPES,
    _ratio,
    _seconds,
    _spark_type,
    change_one_partition,
    data_files,
    ensure_table,
    load_average,
    machine,
)
from bench_spark import make_metastore, session

SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "20", "spark.driver.memory": "3g"}


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def metastore_command() -> list[str]:
    script = Path(sys.executable).with_name("metastore")
    return [str(script)] if script.exists() else [sys.executable, "-m", "metastore.cli"]


def adopt_orphans() -> bool:
    """Make this process the subreaper of what it starts (Linux): a command's descendants that outlive their
    parent (PySpark's JVM is not waited for by the Python process that started it) come back to this process,
    which waits for them, so their CPU time is counted with the command's."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap(deadline: float = 120.0) -> None:
    """Wait for every adopted descendant to end (their CPU time then counts in RUSAGE_CHILDREN)."""
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, str, str]:
    """Run a whole command: (wall s until it exits, CPU s of it and all its descendants, stdout, stderr); a
    failure stops the bench."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    reap()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, cpu, done.stdout, done.stderr


class SparkSql:
    """Spark's SQL shell with a Derby catalog in ``home`` (the table created once, before anything is timed)."""

    def __init__(self, home: Path, table: Path) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable}
        columns = ", ".join(f"{name} {_spark_type(t)}" for name, t in HIVE_TYPES.items())
        self.run(f"CREATE TABLE bench_orders ({columns}, ds string) USING orc PARTITIONED BY (ds) "
                 f"LOCATION '{table}'; ALTER TABLE bench_orders RECOVER PARTITIONS;")

    def run(self, sql: str) -> tuple[float, float, str, str]:
        command = [str(spark_home() / "bin" / "spark-sql"), "--master", "local[2]",
                   "--conf", f"spark.sql.warehouse.dir={self.home / 'warehouse'}"]
        for key, value in SPARK_CONF.items():
            command += ["--conf", f"{key}={value}"]
        return timed([*command, "-e", sql], self.home, self.env)


def ours(url: str, cache: Path | None, cwd: Path) -> tuple[float, float, int]:
    """`metastore spark-analyze` of the whole table: (wall s, CPU s, files read)."""
    command = [*metastore_command(), "spark-analyze", "default.bench_orders", "--master", "local[2]",
               "--metastore", url, "--output", "json"]
    command += ["--no-stats-cache"] if cache is None else ["--stats-cache", str(cache)]
    for key, value in SPARK_CONF.items():
        command += ["--conf", f"{key}={value}"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's install has its byte-code cached (the first run writes it)
    wall, cpu, _, err = timed(command, cwd, env)
    found = re.search(r"(\d+) file\(s\) read", err)
    if found is None:
        raise SystemExit(f"no summary line from spark-analyze:\n{err[-2000:]}")
    return wall, cpu, int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--partitions", type=int, default=40)
    parser.add_argument("--runs", type=int, default=2, help="interleaved rounds (the best time is kept)")
    parser.add_argument("--data", type=Path,
                        default=Path(platformdirs.user_cache_dir("metastore", appauthor=False)) / "bench-analyze")
    args = parser.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    if not adopt_orphans():
        print("note: not a subreaper (not Linux?): CPU times miss descendants their parents do not wait for")
    load_before = load_average()
    work = Path(tempfile.mkdtemp(prefix="bench-spark-commands-"))
    try:
        source = args.data / f"orders_{args.rows}_{args.partitions}"
        if not (source / "_GENERATED").exists():
            spark = session("local[2]")
            try:
                source = ensure_table(spark, args.data, args.rows, args.partitions)
            finally:
                spark.stop()
        table = work / "orders"
        shutil.copytree(source, table)  # the re-ANALYZE rewrites one file
        files = data_files(table)
        total = sum(f.stat().st_size for f in files)
        print(f"{len(files)} files, {total / 2**20:.0f} MiB, {args.rows:,} rows", flush=True)
        url = make_metastore(work, "ms", table)
        spark_sql = SparkSql(work / "spark-sql", table)
        cache = work / "driver-cache.sqlite"
        wall, cpu, read = ours(url, cache, work)
        print(f"filling the stats cache: {wall:.2f} s ({cpu:.1f} s CPU), {read} file(s) read", flush=True)
        results: dict[str, list[tuple[float, float]]] = {"spark": [], "full": [], "again": []}
        for round_ in range(args.runs):
            print(f"round {round_ + 1}: load average {load_average()}", flush=True)
            order = ("spark", "full") if round_ % 2 == 0 else ("full", "spark")
            for what in order:
                if what == "spark":
                    wall, cpu, _, _ = spark_sql.run("ANALYZE TABLE bench_orders COMPUTE STATISTICS FOR ALL COLUMNS")
                    print(f"  spark-sql ANALYZE: {wall:.2f} s ({cpu:.1f} s CPU)", flush=True)
                else:
                    wall, cpu, read = ours(url, None, work)
                    assert read == len(files), read
                    print(f"  metastore spark-analyze: {wall:.2f} s ({cpu:.1f} s CPU)", flush=True)
                results[what].append((wall, cpu))
            changed = change_one_partition(files)
            wall, cpu, read = ours(url, cache, work)
            assert read == 1, f"the re-ANALYZE read {read} files, expected 1"
            print(f"  re-ANALYZE after {changed.parent.name} changed: {wall:.2f} s ({cpu:.1f} s CPU)", flush=True)
            results["again"].append((wall, cpu))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def best(what: str) -> tuple[float, float, float]:
        walls = [w for w, _ in results[what]]
        return min(walls), statistics.median(walls), min(c for _, c in results[what])

    spark_wall, spark_median, spark_cpu = best("spark")
    full_wall, full_median, full_cpu = best("full")
    again_wall, again_median, again_cpu = best("again")
    print()
    print(f"{args.rows:,} rows, {args.partitions} partitions, {len(files)} files, {total / 2**20:.0f} MiB; "
          f"{machine()}; load before {load_before}, after {load_average()}; best of {args.runs} rounds")
    print("| whole command | wall s best (median) | CPU s best | Spark / command |")
    print("|---|---|---|---|")
    for name, (wall, median, cpu) in (
        ("`spark-sql -e \"ANALYZE TABLE ... FOR ALL COLUMNS\"` (local[2])", (spark_wall, spark_median, spark_cpu)),
        ("`metastore spark-analyze` (local[2], --no-stats-cache)", (full_wall, full_median, full_cpu)),
        ("`metastore spark-analyze` re-run after 1 partition changed", (again_wall, again_median, again_cpu)),
    ):
        print(f"| {name} | {_seconds(wall)} ({_seconds(median)}) | {cpu:.1f} | {_ratio(spark_wall / wall)} |")
    print(f"Spark's command / ours: {spark_wall / full_wall:.2f}x; re-run / full run (whole commands): "
          f"{again_wall / full_wall:.1%} wall, {again_cpu / full_cpu:.1%} CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
