"""ANALYZE on Spark: Spark's own ANALYZE TABLE against metastore.spark.analyze_table on the same Spark session.

    python bench/bench_spark.py [--rows 20000000] [--partitions 40] [--runs 2] [--data DIR] [--write-md]
                                [--reanalyze-only]

The table is bench_analyze.py's (ten columns of mixed types, ORC zstd, written by Spark, partitioned by ``ds``),
generated once into ``DIR``. Measured side by side:

1. Spark ``ANALYZE TABLE t COMPUTE STATISTICS FOR ALL COLUMNS`` on a local[2] session (in-memory catalog,
   ``CREATE TABLE ... USING orc PARTITIONED BY (ds) LOCATION``), the statement alone;
2. ``analyze_table`` on the same session (two cores): per-partition and table statistics of every column, written
   to an embedded metastore; no file cache;
3. its re-ANALYZE after one partition's file was rewritten (the driver's file cache filled by an earlier run);
4. ``analyze_table`` on a local[1] session (scaling from one to two executor cores), twice: in this process, where
   local[1] gives Spark one task slot while its JVM (scheduler, GC, JIT) and the driver still use the second CPU,
   and in a fresh process whose whole tree (driver, JVM, Python workers) is pinned to one CPU with ``taskset``, so
   that "one core" is one CPU against the two of step 2;
5. driver memory: the Python heap's peak (tracemalloc, driver only; executors are other processes) of
   ``analyze_table`` over a table of ``--rows / 10`` rows in 40 files, and the same rows in 40 × 5 and 40 × 25
   files. Flat means the peak stops growing with the files: the driver holds each partition's merged result
   (O(partitions)) and one task's batch of results (at most _MAX_UNITS_PER_TASK files), so 1,000 files peak
   where 200 do.

Steps 1–3 run in ``--runs`` interleaved rounds and keep their best time; ``--reanalyze-only`` runs steps 2–3 alone
(no Spark ANALYZE) and prints their ratio. ``--write-md`` replaces the "ANALYZE on Spark" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import atexit
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path

import platformdirs

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_analyze import (  # the sibling benchmark's table and helpers
    _GENERATE_SQL,
    HIVE_TYPES,
    _ratio,
    _seconds,
    change_one_partition,
    create_spark_table,
    data_files,
    ensure_table,
    load_average,
    machine,
)

SECTION = "ANALYZE on Spark"


def session(master: str, memory: str = "3g"):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    warehouse = tempfile.mkdtemp(prefix="bench-spark-wh-")
    atexit.register(shutil.rmtree, warehouse, True)  # Spark writes nothing there, but the folder stayed behind
    spark = (
        SparkSession.builder.master(master)
        .appName("bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "20")
        .config("spark.driver.memory", memory)
        .config("spark.sql.warehouse.dir", warehouse)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def make_metastore(work: Path, name: str, table: Path) -> str:
    """An embedded metastore with the table registered (external, partitions repaired); returns its URL."""
    from metastore.client.embedded import EmbeddedMetastoreClient
    from metastore.sql.executor import Executor
    from metastore.sql.parser import parse_script
    from metastore.sql.session import ExecutorOptions

    url = f"sqlite:///{work / f'{name}.db'}"
    client = EmbeddedMetastoreClient(url, str(work / f"{name}-wh"))
    try:
        executor = Executor(client, options=ExecutorOptions(stats_cache=None))
        columns = ", ".join(f"{k} {v}" for k, v in HIVE_TYPES.items())
        for parsed in parse_script(
            f"CREATE EXTERNAL TABLE bench_orders ({columns}) PARTITIONED BY (ds string) STORED AS ORC "
            f"LOCATION '{table}'; MSCK REPAIR TABLE bench_orders;"
        ):
            executor.execute(parsed.statement)
    finally:
        client.close()
    return url


def spark_analyze(spark) -> float:
    spark.sql("REFRESH TABLE bench_orders")
    started = time.perf_counter()
    spark.sql("ANALYZE TABLE bench_orders COMPUTE STATISTICS FOR ALL COLUMNS")
    seconds = time.perf_counter() - started
    print(f"Spark ANALYZE: {seconds:.1f} s", flush=True)
    return seconds


def ours(spark, url: str, cache: str | None, what: str):
    from metastore.spark import analyze_table

    started = time.perf_counter()
    summary = analyze_table(spark, "default.bench_orders", metastore=url, cache=cache)
    seconds = time.perf_counter() - started
    assert not summary.failed, summary.message
    print(f"{what}: {seconds:.2f} s — {summary.message}", flush=True)
    return seconds, summary


def one_core_child(url: str, runs: int) -> int:
    """The pinned one-core run (in a child process started under taskset): its best time as the last line."""
    spark = session("local[1]")
    try:
        best = min(ours(spark, url, None, "ours on Spark, 1 core, one CPU")[0] for _ in range(runs))
    finally:
        spark.stop()
    print(f"best {best!r}", flush=True)
    return 0


def one_core_pinned(url: str, runs: int) -> float | None:
    """analyze_table on local[1] in a fresh process pinned to one CPU with everything it starts; None (with a line
    saying why) where taskset or a second CPU is missing."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) < 2 or shutil.which("taskset") is None:
        print("the pinned one-core run needs taskset and two CPUs: skipped", flush=True)
        return None
    done = subprocess.run(
        ["taskset", "-c", str(cpus[0]), sys.executable, str(Path(__file__).resolve()), "--one-core", url,
         "--runs", str(runs)],
        capture_output=True, text=True, check=False,
    )
    print(done.stdout.rstrip(), flush=True)
    last = done.stdout.strip().splitlines()[-1:] or [""]
    if done.returncode != 0 or not last[0].startswith("best "):
        raise SystemExit(f"the pinned one-core run failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return float(last[0].split()[1])


def _jvm_heap_pools(spark):
    jvm = spark.sparkContext._jvm
    heap = jvm.java.lang.management.MemoryType.HEAP
    return [pool for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
            if pool.getType().equals(heap)]


def driver_peak(spark, url: str) -> tuple[float, float, int]:
    """Peaks of the driver's Python heap (tracemalloc) and of its JVM's heap pools (MemoryPoolMXBean, reset before
    the run; in local mode the executors share that JVM) during one analyze_table, in MiB, and the files analysed."""
    pools = _jvm_heap_pools(spark)
    spark.sparkContext._jvm.java.lang.System.gc()
    for pool in pools:
        pool.resetPeakUsage()
    tracemalloc.start()
    try:
        _, summary = ours(spark, url, None, "memory run")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    jvm_peak = sum(pool.getPeakUsage().getUsed() for pool in pools)
    return peak / 2**20, jvm_peak / 2**20, sum(int(r[2]) for r in summary.rows)


def small_table(spark, data: Path, rows: int, partitions: int, files_per_partition: int) -> Path:
    """bench_analyze's table at ``rows`` rows written as ``files_per_partition`` files per partition (``ds`` is
    ``id % partitions``, so the files of a partition are cut by ``id div partitions``, which takes every value)."""
    from pyspark.sql import functions as F  # noqa: N812

    table = data / f"orders_{rows}_{partitions}_files{files_per_partition}"
    marker = table / "_GENERATED"
    if marker.exists():
        return table
    shutil.rmtree(table, ignore_errors=True)
    df = spark.sql(_GENERATE_SQL.format(rows=rows, partitions=partitions))
    (df.repartition(partitions * files_per_partition, "ds", F.expr(f"(id div {partitions}) % {files_per_partition}"))
     .write.partitionBy("ds").option("compression", "zstd").orc(str(table)))
    marker.write_text(f"rows={rows} partitions={partitions} files={files_per_partition}\n")
    return table


def write_markdown(section: str, path: Path) -> None:
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    # the generated text only, up to the next heading of any level: the dated ### records below it stay
    pattern = re.compile(rf"^## {re.escape(SECTION)}\n.*?(?=^##+ |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(section.rstrip("\n") + "\n\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--partitions", type=int, default=40)
    parser.add_argument("--runs", type=int, default=2, help="interleaved rounds (the best time is kept)")
    parser.add_argument("--data", type=Path,
                        default=Path(platformdirs.user_cache_dir("metastore", appauthor=False)) / "bench-analyze")
    parser.add_argument("--write-md", action="store_true", help=f"write the '{SECTION}' section of BENCHMARKS.md")
    parser.add_argument("--reanalyze-only", action="store_true",
                        help="steps 2-3 only (full run and re-ANALYZE after one partition changed; no Spark ANALYZE, "
                        "no one-core or memory runs): their ratio, quickly")
    parser.add_argument("--one-core", metavar="URL", help=argparse.SUPPRESS)  # the pinned run's child process
    args = parser.parse_args(argv)
    if args.one_core:
        return one_core_child(args.one_core, args.runs)
    args.data.mkdir(parents=True, exist_ok=True)
    load_before = load_average()
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))

    spark = session("local[2]")
    try:
        source = ensure_table(spark, args.data, args.rows, args.partitions)
        table = work / "orders"
        shutil.copytree(source, table)  # the incremental step rewrites one file
        files = data_files(table)
        total = sum(f.stat().st_size for f in files)
        print(f"{len(files)} files, {total / 2**20:.0f} MiB, {args.rows:,} rows", flush=True)
        create_spark_table(spark, table)
        url = make_metastore(work, "ms", table)
        cache = str(work / "driver-cache.sqlite")
        spark_best = full_best = inc_best = full_first = float("inf")
        for round_ in range(args.runs):
            print(f"round {round_ + 1}: load average {load_average()}", flush=True)
            if not args.reanalyze_only:
                spark_best = min(spark_best, spark_analyze(spark))
            seconds, full = ours(spark, url, None, "ours on Spark, 2 cores")
            full_best = min(full_best, seconds)
            if round_ == 0:
                full_first = seconds  # the process's first analyze_table: its Python workers start cold
            if round_ == 0:
                ours(spark, url, cache, "filling the driver's file cache")
            changed = change_one_partition(files)
            seconds, inc = ours(spark, url, cache, f"re-ANALYZE after {changed.parent.name} changed")
            read = [r for r in inc.rows if r[5]]
            assert len(read) == 1 and read[0][5] == 1, inc.rows
            inc_best = min(inc_best, seconds)
        spark.sql("DROP TABLE IF EXISTS bench_orders")
        if args.reanalyze_only:
            print(f"best full {full_best:.3f} s (first {full_first:.3f} s), best re-ANALYZE {inc_best:.3f} s = "
                  f"{inc_best / full_best:.1%} of the best full run; load average {load_average()}", flush=True)
            shutil.rmtree(work, ignore_errors=True)
            return 0
        small_rows = max(args.rows // 10, 100_000)
        few = small_table(spark, args.data, small_rows, 40, 1)
        many = small_table(spark, args.data, small_rows, 40, 5)
        most = small_table(spark, args.data, small_rows, 40, 25)
        few_url, many_url = make_metastore(work, "few", few), make_metastore(work, "many", many)
        most_url = make_metastore(work, "most", most)
        driver_peak(spark, few_url)  # the first run allocates what later ones reuse
        few_peak, few_jvm, few_files = driver_peak(spark, few_url)
        many_peak, many_jvm, many_files = driver_peak(spark, many_url)
        most_peak, most_jvm, most_files = driver_peak(spark, most_url)
    finally:
        spark.stop()

    # one executor core: a session of its own (one SparkContext per process at a time)
    spark = session("local[1]")
    try:
        one_core_best = min(ours(spark, url, None, "ours on Spark, 1 core")[0] for _ in range(args.runs))
    finally:
        spark.stop()
    pinned_best = one_core_pinned(url, args.runs)
    shutil.rmtree(work, ignore_errors=True)

    rows = [
        ("Spark ANALYZE TABLE ... FOR ALL COLUMNS (local[2])", spark_best, None),
        ("metastore.spark.analyze_table (local[2], no cache)", full_best, spark_best / full_best),
        ("analyze_table re-ANALYZE after 1 partition changed", inc_best, spark_best / inc_best),
        ("analyze_table on local[1]", one_core_best, spark_best / one_core_best),
    ]
    if pinned_best is not None:
        rows.append(("analyze_table on local[1], whole process tree on one CPU (taskset)", pinned_best,
                     spark_best / pinned_best))
    lines = ["| run | seconds | Spark / run |", "|---|---|---|"]
    for name, seconds, ratio in rows:
        lines.append(f"| {name} | {_seconds(seconds)} | {'—' if ratio is None else _ratio(ratio)} |")
    speedup = spark_best / full_best

    def verdict(ok: bool) -> str:
        return "met" if ok else "not met"

    scaling = one_core_best / full_best
    pinned = "" if pinned_best is None else (
        f"; with the whole local[1] process tree on one CPU (driver, JVM and Python workers; taskset): "
        f"{pinned_best / full_best:.2f}× ({verdict(pinned_best / full_best >= 1.7)})"
    )
    incremental = inc_best / full_best
    incremental_cold = inc_best / full_first

    summary = (
        f"Targets: ≥ 3× faster than Spark's ANALYZE: {speedup:.2f}× ({verdict(speedup >= 3)}); scaling 1 → 2 cores "
        f"≥ 1.7×: {scaling:.2f}× ({verdict(scaling >= 1.7)}) with local[1] in this process{pinned}; re-ANALYZE ≤ 5 % of full: {incremental:.1%} "
        f"of the best (warm) full run ({verdict(incremental <= 0.05)}), {incremental_cold:.1%} of the process's first "
        f"(cold) full run, {full_first:.2f} s ({verdict(incremental_cold <= 0.05)}); driver memory flat in the number of files: Python heap peak "
        f"{few_peak:.1f} MiB for {few_files} files, {many_peak:.1f} MiB for {many_files}, {most_peak:.1f} MiB for "
        f"{most_files} files of the same {small_rows:,} rows ({verdict(most_peak <= 1.25 * many_peak + 1)}: "
        f"{most_files / many_files:.0f}× the files, {most_peak / many_peak:.2f}× the peak; "
        f"{many_files / few_files:.0f}× from {few_files} files: {many_peak / few_peak:.2f}×, where each task's "
        f"batch of results grows to its cap of files); JVM heap peak {few_jvm:.0f}, {many_jvm:.0f} and "
        f"{most_jvm:.0f} MiB (local mode: the executors run in that JVM)."
    )
    print()
    print("\n".join(lines))
    print(summary)
    intro = (
        f"`python bench/bench_spark.py --rows {args.rows} --partitions {args.partitions} --runs {args.runs}`: "
        f"bench_analyze.py's table written by Spark (ORC zstd; {args.rows:,} rows, {args.partitions} partitions, "
        f"{len(files)} files, {total / 2**20:.0f} MiB; ten columns of mixed types). On one local[2] Spark session: "
        "Spark's own `ANALYZE TABLE ... COMPUTE STATISTICS FOR ALL COLUMNS` (in-memory catalog, the statement "
        "alone) and `metastore.spark.analyze_table` (every column, per partition and table, written to an embedded "
        "metastore; listing, planning, executors, merge and writes included). The re-ANALYZE rewrites one "
        "partition's file and reuses the driver's file cache. The one-core line runs on a local[1] session. "
        f"Best of {args.runs} interleaved rounds."
    )
    context = (
        f"{dt.date.today().isoformat()}, {machine()}. Load average (1/5/15 min) before {load_before}, after "
        f"{load_average()}: the machine is shared with other work, so absolute numbers are noisy."
    )
    section = (
        f"## {SECTION}\n\n"
        + textwrap.fill(intro, 110, break_on_hyphens=False) + "\n\n"
        + textwrap.fill(context, 110, break_on_hyphens=False) + "\n\n"
        + "\n".join(lines) + "\n\n"
        + textwrap.fill(summary, 110, break_on_hyphens=False) + "\n"
    )
    if args.write_md:
        write_markdown(section, Path(__file__).resolve().parents[1] / "BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
