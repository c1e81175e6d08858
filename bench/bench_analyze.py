"""ANALYZE benchmark: our statistics harvesting against Spark's own ANALYZE TABLE, on one Spark-written ORC table.

    python bench/bench_analyze.py [--rows 10000000] [--partitions 20] [--data DIR] [--runs 2] [--write-md]

The table (generated once with Spark, ORC zstd, into ``DIR``, by default the user cache directory) has ten
columns of the usual kinds (bigint ids, int customers with ~1M distinct values, decimal prices, small ints,
doubles with nulls, a 5-value status string, a high-cardinality comment string with nulls, timestamps, dates,
booleans), partitioned by ``ds`` into ``--partitions`` partitions.

Measured side by side in one run:

1. Spark ``ANALYZE TABLE t COMPUTE STATISTICS FOR ALL COLUMNS`` (local[2], in-memory catalog, the table created
   with ``CREATE TABLE ... USING orc PARTITIONED BY (ds) LOCATION``); the statement alone.
2. Our full run: ``analyze_files`` over every file (two worker processes; the table statistics merged from the
   per-file sketches) and per-partition results split out of it with ``results_by_partition`` — everything the
   SQL shell's ANALYZE FOR ALL COLUMNS computes; no cache.
3. Our re-ANALYZE after one partition changed: the same with a warm file cache after rewriting one partition's
   file (the same rows written again by pyarrow: a new size and mtime), so only that file is read.
4. Our footer-only run (``scan=False``: counts, nulls, min/max, true counts, average lengths; no NDV) and
   ``basic_stats`` (ANALYZE ... COMPUTE STATISTICS).

Steps 1–3 run in ``--runs`` interleaved rounds (so that both sides meet the same machine load) and each line keeps
its best time. Prints a table with seconds and ratios; ``--write-md`` replaces the "ANALYZE" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import platformdirs

HIVE_TYPES = {
    "id": "bigint",
    "customer": "int",
    "price": "decimal(14,6)",
    "qty": "int",
    "discount": "double",
    "status": "string",
    "note": "string",
    "ts": "timestamp",
    "day": "date",
    "flag": "boolean",
}

_GENERATE_SQL = """
select id,
  cast(id % 1000003 as int) as customer,
  cast((id * 7919) % 1000000 as decimal(10,2)) / 100 as price,
  cast(id % 50 as int) as qty,
  case when id % 17 = 0 then null else rand(1) end as discount,
  element_at(array('NEW','PAID','SHIPPED','DONE','RETURNED'), cast(id % 5 as int) + 1) as status,
  case when id % 23 = 0 then null else concat('comment for order ', cast(id * 31 % 5000011 as string)) end as note,
  timestamp_seconds(1600000000 + id * 3) as ts,
  date_add(date'2020-01-01', cast(id % 1500 as int)) as day,
  id % 3 = 0 as flag,
  concat('p', lpad(cast(id % {partitions} as string), 3, '0')) as ds
from range(0, {rows})
"""


def _spark(memory: str = "3g"):
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("bench-analyze")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "20")
        .config("spark.driver.memory", memory)
        .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="bench-analyze-wh-"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def ensure_table(spark, data: Path, rows: int, partitions: int) -> Path:
    """Write the table with Spark unless ``data`` already holds it (a marker file records the parameters)."""
    table = data / f"orders_{rows}_{partitions}"
    marker = table / "_GENERATED"
    if marker.exists():
        return table
    if table.exists():
        shutil.rmtree(table)
    started = time.perf_counter()
    (spark.sql(_GENERATE_SQL.format(rows=rows, partitions=partitions))
     .repartition(partitions, "ds").write.partitionBy("ds").option("compression", "zstd").orc(str(table)))
    marker.write_text(f"rows={rows} partitions={partitions}\n")
    print(f"generated {rows:,} rows in {time.perf_counter() - started:.0f} s into {table}", flush=True)
    return table


def data_files(table: Path) -> list[Path]:
    return sorted(p for p in table.glob("ds=*/*.orc"))


def create_spark_table(spark, table: Path) -> None:
    spark.sql("DROP TABLE IF EXISTS bench_orders")
    columns = ", ".join(f"{name} {_spark_type(t)}" for name, t in HIVE_TYPES.items())
    spark.sql(f"CREATE TABLE bench_orders ({columns}, ds string) USING orc PARTITIONED BY (ds) LOCATION '{table}'")
    spark.sql("ALTER TABLE bench_orders RECOVER PARTITIONS")


def spark_analyze(spark) -> tuple[float, str]:
    """One timed Spark ANALYZE ... FOR ALL COLUMNS; returns the seconds and Spark's NDV of ``customer``."""
    spark.sql("REFRESH TABLE bench_orders")  # our incremental step rewrites a file between rounds
    started = time.perf_counter()
    spark.sql("ANALYZE TABLE bench_orders COMPUTE STATISTICS FOR ALL COLUMNS")
    seconds = time.perf_counter() - started
    stats = spark.sql("DESCRIBE EXTENDED bench_orders customer").collect()
    distinct = next((r.info_value for r in stats if r.info_name == "distinct_count"), "?")
    print(f"spark ANALYZE: {seconds:.1f} s (customer distinct_count {distinct})", flush=True)
    return seconds, str(distinct)


def _spark_type(hive_type: str) -> str:
    return {"bigint": "bigint", "int": "int", "double": "double", "string": "string", "timestamp": "timestamp",
            "date": "date", "boolean": "boolean"}.get(hive_type, hive_type)


def ours_full(files: list[Path], cache=None):
    """Everything ANALYZE FOR ALL COLUMNS of the partitioned table computes: per-partition and table statistics.

    One run over all files (its merged columns are the table statistics, merged through the sketches), split
    into partitions afterwards without reading again."""
    from metastore.stats.harvest import analyze_files, results_by_partition

    result = analyze_files(files, list(HIVE_TYPES), hive_types=HIVE_TYPES, cache=cache, workers=2)
    partitions = results_by_partition(result, lambda path: Path(path).parent.name)
    return result, partitions, result


def timed(fn, *args, runs: int = 1, **kwargs):
    best = float("inf")
    value = None
    for _ in range(runs):
        started = time.perf_counter()
        value = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - started)
    return best, value


def change_one_partition(files: list[Path]) -> Path:
    """Rewrite the first partition's first file with the same rows (pyarrow, zstd): a new size and mtime."""
    import pyarrow.orc as po

    target = files[0]
    table = po.read_table(target)
    tmp = target.with_suffix(".rewrite")
    po.write_table(table, tmp, compression="zstd", stripe_size=16 * 1024 * 1024)
    os.replace(tmp, target)
    # Hadoop's local file system checks Spark's .crc side file: it no longer matches
    target.with_name(f".{target.name}.crc").unlink(missing_ok=True)
    return target


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = f"{len(names)} × {names[0]}" if names else cpu
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    return f"{cpu}{mem}; Python {platform.python_version()}; {java[0] if java else 'java ?'}"


def load_average() -> str:
    try:
        return "/".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "?"


def _seconds(value: float) -> str:
    return f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"


def _ratio(value: float) -> str:
    return f"{value:,.1f}×" if value < 100 else f"{value:,.0f}×"


def write_markdown(section: str, path: Path) -> None:
    """Replace (or append) the '## ANALYZE' section of BENCHMARKS.md, leaving the other sections alone."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(r"^## ANALYZE\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(section.rstrip("\n") + "\n\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--data", type=Path,
                        default=Path(platformdirs.user_cache_dir("metastore", appauthor=False)) / "bench-analyze")
    parser.add_argument("--runs", type=int, default=2, help="repetitions per measurement (best is kept)")
    parser.add_argument("--write-md", action="store_true", help="write the ANALYZE section of BENCHMARKS.md")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from metastore.stats.filecache import FileStatsCache
    from metastore.stats.harvest import analyze_files, basic_stats

    args.data.mkdir(parents=True, exist_ok=True)
    load_before = load_average()
    spark = _spark()
    try:
        source = ensure_table(spark, args.data, args.rows, args.partitions)
        # work on a copy: the incremental step rewrites one file
        work = Path(tempfile.mkdtemp(prefix="bench-analyze-"))
        table = work / "orders"
        shutil.copytree(source, table)
        files = data_files(table)
        total_bytes = sum(f.stat().st_size for f in files)
        print(f"{len(files)} files, {total_bytes / 2**20:.1f} MiB, {args.rows:,} rows", flush=True)
        create_spark_table(spark, table)
        cache = FileStatsCache(work / "cache.sqlite")
        spark_seconds = full_seconds = inc_seconds = float("inf")
        # interleaved rounds: Spark and ours see the same (shared, fluctuating) machine load
        for round_ in range(args.runs):
            seconds, spark_ndv = spark_analyze(spark)
            spark_seconds = min(spark_seconds, seconds)
            seconds, (full, partitions, table_stats) = timed(ours_full, files)
            full_seconds = min(full_seconds, seconds)
            print(f"ours full: {seconds:.1f} s ({full.bytes_read / 2**20:.0f} MiB read)", flush=True)
            if round_ == 0:
                ours_full(files, cache=cache)  # fill the cache
            changed = change_one_partition(files)
            seconds, (inc, _, _) = timed(ours_full, files, cache=cache)
            inc_seconds = min(inc_seconds, seconds)
            assert inc.files_read == 1 and inc.files_reused == len(files) - 1, (inc.files_read, inc.files_reused)
            print(f"ours re-ANALYZE after {changed.parent.name} changed: {seconds:.2f} s", flush=True)
        spark.sql("DROP TABLE IF EXISTS bench_orders")
    finally:
        spark.stop()

    footer_seconds, footer = timed(analyze_files, files, list(HIVE_TYPES), hive_types=HIVE_TYPES, scan=False,
                                   runs=args.runs)
    basic_seconds, basic = timed(basic_stats, files, runs=args.runs)
    cache.close()
    shutil.rmtree(work, ignore_errors=True)

    ndv = table_stats.columns["customer"].num_dvs
    rows = [
        ("Spark ANALYZE TABLE ... FOR ALL COLUMNS", spark_seconds, None),
        ("ours: full (partitions + table, NDV, no cache)", full_seconds, spark_seconds / full_seconds),
        ("ours: re-ANALYZE after 1 partition changed", inc_seconds, spark_seconds / inc_seconds),
        ("ours: footer-only (scan=False, no NDV)", footer_seconds, spark_seconds / footer_seconds),
        ("ours: basic statistics (numRows, rawDataSize)", basic_seconds, spark_seconds / basic_seconds),
    ]
    lines = ["| run | seconds | Spark / run |", "|---|---|---|"]
    for name, seconds, ratio in rows:
        lines.append(f"| {name} | {_seconds(seconds)} | {'—' if ratio is None else _ratio(ratio)} |")
    lines.append("")
    spark_error = f" ({(int(spark_ndv) - 1_000_003) / 1_000_003:+.2%})" if spark_ndv.isdigit() else ""
    spark_ndv_text = f"{int(spark_ndv):,}" if spark_ndv.isdigit() else spark_ndv
    lines.append(f"Incremental / full: {inc_seconds / full_seconds:.1%} (target ≤ 10 %). Table NDV of `customer` "
                 f"(1,000,003 distinct): ours {ndv:,} ({(ndv - 1_000_003) / 1_000_003:+.2%}), Spark "
                 f"{spark_ndv_text}"
                 f"{spark_error}; {len(partitions)} partitions, "
                 f"{full.num_rows:,} rows, basic rows {basic.num_rows:,}, footer-only read "
                 f"{footer.bytes_read / 2**10:.0f} KiB.")
    table_md = "\n".join(lines)
    print()
    print(table_md)
    intro = (
        f"`python bench/bench_analyze.py --rows {args.rows} --partitions {args.partitions} --runs {args.runs}`: "
        f"one ORC table written by Spark (ORC Java, zstd; {args.rows:,} rows, {args.partitions} partitions by `ds`, "
        f"{len(files)} files, {total_bytes / 2**20:.0f} MiB; ten columns: bigint, int, decimal, int, double with "
        "nulls, low- and high-cardinality strings, timestamp, date, boolean). Spark's own `ANALYZE TABLE ... COMPUTE "
        "STATISTICS FOR ALL COLUMNS` (local[2], in-memory catalog, `CREATE TABLE ... USING orc LOCATION`, the "
        "statement alone) against `metastore.stats.harvest.analyze_files` over the same files with two worker "
        "processes: table statistics merged from the per-file sketches (HLL p=14), per-partition results split out "
        "of the same run. The re-ANALYZE rewrites one partition's file (pyarrow, same rows) and uses the file cache "
        "filled by an earlier run. Best of "
        f"{args.runs} interleaved rounds (Spark, ours, ours incremental) for each line."
    )
    context = (
        f"{dt.date.today().isoformat()}, {machine()}. Load average (1/5/15 min) before {load_before}, after "
        f"{load_average()}: the machine is shared with other work, so absolute numbers are noisy; the rounds "
        "interleave both sides so that they meet the same load."
    )
    section = (
        "## ANALYZE\n\n"
        + textwrap.fill(intro, 110, break_on_hyphens=False) + "\n\n"
        + textwrap.fill(context, 110, break_on_hyphens=False) + "\n\n"
        + "\n".join(lines[:-2]) + "\n\n"
        + textwrap.fill(lines[-1], 110, break_on_hyphens=False) + "\n"
    )
    if args.write_md:
        write_markdown(section, Path(__file__).resolve().parents[1] / "BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
