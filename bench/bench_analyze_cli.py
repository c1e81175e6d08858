"""ANALYZE end to end, as a user runs it: `metastore sql --connect ... -e "ANALYZE ..."` against Spark's ANALYZE.

    python bench/bench_analyze_cli.py [--sizes 4000000:8,20000000:40] [--runs 3] [--local-cache] [--data DIR]
                                      [--write-md]

For each size (rows:partitions) a table written by Spark (ORC Java, zstd, two files per partition; ten columns:
bigint, int, decimal, int, double with nulls, low- and high-cardinality strings, timestamp, date, boolean,
partitioned by ``ds``) is measured side by side in one run, in ``--runs`` interleaved rounds:

1. Spark's own ``ANALYZE TABLE t COMPUTE STATISTICS FOR ALL COLUMNS`` (local[2]: the same two cores; a warm
   session; the statement alone);
2. ours, full: ``metastore sql --connect thrift://... -e "ANALYZE TABLE bench.orders_N PARTITION (ds) COMPUTE
   STATISTICS FOR ALL COLUMNS;"``, the console script as a fresh process, with its default per-file store (the
   metastore's database, through a ``metastore serve`` on SQLite this script starts), on a table defined afresh
   for the round over the same files: nothing stored for it yet, as on a first ANALYZE;
3. ours after one of every 8 partitions changed (Spark rewrote their files with the same rows: new files);
4. ours after nothing changed.

With ``--local-cache`` the same three commands also run with ``--stats-cache FILE`` (a local cache file, the
default of ``--db``), on a table of their own. Both sides are warmed alike before the rounds: Spark runs one
untimed ANALYZE (class loading, JIT), ours one untimed full and one unchanged ANALYZE on a table of its own
(byte-code compiled and cached as a user's install caches it: PYTHONDONTWRITEBYTECODE is unset for our
commands; the files in the page cache, as for Spark).

Each of our runs is a whole command (interpreter start, imports, listing, harvest, persistence), timed wall and
CPU (the command with its workers, and the server); ``--verbose`` gives its per-phase accounting (it only reads
clocks). After round 1 every statistic our full, changed and unchanged runs left is read back and checked
against ground truth computed with pyarrow/numpy from the files (NDV within 2 % per partition and 4 % for the
table; every other statistic exact); Spark's own table-level NDV error is shown beside. Also measured once per
size: the physical floor (reading the files' bytes, decompressing every stream, decoding all columns with
pyarrow, on two processes) and each phase's distance from it. The load average is printed with every round.
``--write-md`` replaces the "ANALYZE end to end" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import platformdirs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from bench_analyze import HIVE_TYPES, machine  # noqa: E402

_MAIN = "import sys; from metastore.cli import main; sys.exit(main())"

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


def _spark(warehouse: str):
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("bench-analyze-cli")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "3g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", warehouse)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def ensure_table(spark, data: Path, rows: int, partitions: int) -> Path:
    """Write the table with Spark (two files per partition) unless ``data`` already holds it."""
    table = data / f"orders2_{rows}_{partitions}"
    marker = table / "_GENERATED"
    if marker.exists():
        return table
    if table.exists():
        shutil.rmtree(table)
    started = time.perf_counter()
    per_file = -(-rows // partitions // 2)
    (spark.sql(_GENERATE_SQL.format(rows=rows, partitions=partitions))
     .repartition(partitions, "ds").write.partitionBy("ds").option("compression", "zstd")
     .option("maxRecordsPerFile", per_file).orc(str(table)))
    marker.write_text(f"rows={rows} partitions={partitions}\n")
    print(f"generated {rows:,} rows in {time.perf_counter() - started:.0f} s into {table}", flush=True)
    return table


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and all its live descendants, from /proc."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += times.get(current, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == current)
    return total


def load_average() -> str:
    return "/".join(f"{v:.1f}" for v in os.getloadavg())


# --------------------------------------------------------------------------------------- our side


def _command() -> list[str]:
    """`metastore` as the user types it: the console script of this interpreter's environment."""
    script = Path(sys.executable).parent / "metastore"
    return [str(script)] if script.exists() else [sys.executable, "-c", _MAIN]


def _env(work: Path) -> dict[str, str]:
    """The environment of our commands: byte-code cached, as a user's install caches it; the local cache file
    (the metastore store's fallback, unused against this server) kept in the bench's directory."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["METASTORE_ANALYZE_CACHE"] = str(work / "fallback-cache.sqlite")
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`metastore serve` on a fresh SQLite database in ``workdir``."""

    def __init__(self, workdir: Path) -> None:
        self.port = _free_port()
        self.process = subprocess.Popen(
            [*_command(), "serve", "--port", str(self.port),
             "--db", f"sqlite:///{workdir / 'ms.db'}", "--warehouse", str(workdir / "warehouse")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=workdir, env=_env(workdir),
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if "listening on" in line:
                break
        else:
            raise RuntimeError(f"metastore serve exited with {self.process.wait()}")

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def sql(uri: str, statements: str, *extra: str, cwd: Path) -> tuple[float, str, float]:
    """Run `metastore sql --connect uri -e statements` as a fresh process; (wall seconds, stdout + stderr, CPU
    seconds of the command and its worker processes)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run([*_command(), "sql", "--connect", uri, *extra, "-e", statements],
                            capture_output=True, text=True, cwd=cwd, timeout=3600, env=_env(cwd))
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"metastore sql failed ({result.returncode}): {result.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, result.stdout + result.stderr, cpu


def define_table(server: Server, name: str, location: Path, work: Path) -> None:
    """bench.<name> over the files at ``location`` (untimed: a user's table exists before ANALYZE)."""
    columns = ", ".join(f"{n} {hive_type}" for n, hive_type in HIVE_TYPES.items())
    sql(server.uri, f"CREATE DATABASE IF NOT EXISTS bench; CREATE EXTERNAL TABLE bench.{name} ({columns}) "
        f"PARTITIONED BY (ds string) STORED AS ORC LOCATION '{location}'; MSCK REPAIR TABLE bench.{name};", cwd=work)


def analyze_statement(name: str) -> str:
    return f"ANALYZE TABLE bench.{name} PARTITION (ds) COMPUTE STATISTICS FOR ALL COLUMNS;"


@dataclass(frozen=True)
class OurRun:
    """One of our ANALYZE commands: wall seconds, its --verbose output, CPU seconds of the command (with its
    workers) and of the server."""

    seconds: float
    output: str
    cpu: float
    server_cpu: float

    def phases(self) -> dict[str, tuple[float, str]]:
        """{phase: (seconds, 'wall' or 'CPU')} from the --verbose lines."""
        out = {}
        for line in self.output.splitlines():
            match = re.fullmatch(r"phase (.+?) +(\d+\.\d{3}) s (wall|CPU.*)", line.strip())
            if match:
                out[match[1].strip()] = (float(match[2]), "wall" if match[3] == "wall" else "CPU")
        return out

    def summary(self) -> str:
        return next((line for line in self.output.splitlines() if line.startswith("analyzed ")), "")


def ours(server: Server, name: str, work: Path, *extra: str) -> OurRun:
    server_before = tree_cpu(server.process.pid)
    seconds, output, cpu = sql(server.uri, analyze_statement(name), *extra, "--verbose", cwd=work)
    return OurRun(seconds, output, cpu, tree_cpu(server.process.pid) - server_before)


# ------------------------------------------------------------------------------------- Spark side


def create_spark_table(spark, table: Path) -> None:
    spark.sql("DROP TABLE IF EXISTS bench_orders")
    columns = ", ".join(f"{name} {hive_type}" for name, hive_type in HIVE_TYPES.items())
    spark.sql(f"CREATE TABLE bench_orders ({columns}, ds string) USING orc PARTITIONED BY (ds) LOCATION '{table}'")
    spark.sql("ALTER TABLE bench_orders RECOVER PARTITIONS")


def spark_analyze(spark) -> tuple[float, float]:
    """(wall seconds, CPU seconds of Spark's JVM) of one ANALYZE ... FOR ALL COLUMNS."""
    spark.sql("REFRESH TABLE bench_orders")  # files were rewritten between rounds
    jvm = spark.sparkContext._gateway.proc.pid
    cpu_before = tree_cpu(jvm)
    started = time.perf_counter()
    spark.sql("ANALYZE TABLE bench_orders COMPUTE STATISTICS FOR ALL COLUMNS")
    return time.perf_counter() - started, tree_cpu(jvm) - cpu_before


def spark_ndv(spark) -> dict[str, int]:
    """Spark's table-level distinct_count per column, as its ANALYZE stored it."""
    out = {}
    for name in HIVE_TYPES:
        rows = {r[0]: r[1] for r in spark.sql(f"DESCRIBE EXTENDED bench_orders {name}").collect()}
        if rows.get("distinct_count") not in (None, "NULL"):
            out[name] = int(rows["distinct_count"])
    return out


# ---------------------------------------------------------------------------------------- changes


def change_partitions(spark, table: Path, rows_per_file: int, every: int = 8) -> list[str]:
    """Spark rewrites one partition in ``every`` (the same rows, ORC zstd, new files replacing the old ones), as
    a job that refreshes partitions would."""
    partitions = sorted(p for p in table.iterdir() if p.name.startswith("ds="))
    changed = partitions[::every]
    for partition in changed:
        staging = table / f".rewrite-{partition.name}"  # hidden from both listings
        (spark.read.orc(str(partition)).write.option("compression", "zstd")
         .option("maxRecordsPerFile", rows_per_file).orc(str(staging)))
        for old in partition.iterdir():
            old.unlink()
        for new in staging.glob("*.orc"):
            os.replace(new, partition / new.name)
        shutil.rmtree(staging)
    return [p.name for p in changed]


# --------------------------------------------------------------------------------------- accuracy


def ground_truth(table: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Exact statistics per partition and for the table, computed with pyarrow/numpy from the files (column by
    column, so that the whole table is never in memory at once)."""
    import pyarrow as pa
    import pyarrow.orc as po
    from sql.ground_truth import expected

    partitions = sorted(p for p in table.iterdir() if p.name.startswith("ds="))
    per_partition: dict[str, dict[str, Any]] = {p.name: {} for p in partitions}
    whole: dict[str, Any] = {}
    for name, hive_type in HIVE_TYPES.items():
        chunks = []
        for p in partitions:
            column = pa.chunked_array([po.ORCFile(str(f)).read(columns=[name]).column(0)
                                       for f in sorted(p.glob("*.orc"))])
            per_partition[p.name][name] = expected(column, hive_type)
            chunks.extend(column.chunks)
        whole[name] = expected(pa.chunked_array(chunks), hive_type)
    return per_partition, whole


@dataclass
class Accuracy:
    """How the statistics a run left compare with ground truth."""

    worst_partition_ndv: float = 0.0  # largest relative NDV error over partitions and columns
    worst_table_ndv: float = 0.0
    partition_estimates: int = 0
    mismatches: list[str] = field(default_factory=list)  # exact statistics that differ
    ndv_outside: list[str] = field(default_factory=list)  # NDV estimates outside their bound

    def line(self) -> str:
        # HLL p=14 (Hive's sketches): relative standard error 1.04 / sqrt(16384) = 0.81 %, so about 1.35 % of
        # estimates fall outside ±2 % by chance; over hundreds of partition estimates a few are expected to
        expected = self.partition_estimates * 0.0135
        outside = (f"{len(self.ndv_outside)} of {self.partition_estimates} partition estimates outside 2 % (HLL "
                   f"p=14 would put about {expected:.1f} there by chance)"
                   + (": " + "; ".join(self.ndv_outside[:3]) if self.ndv_outside else ""))
        exact = "every other statistic exact" if not self.mismatches else \
            f"{len(self.mismatches)} other statistic(s) not exact: " + "; ".join(self.mismatches[:5])
        return (f"NDV error at most {self.worst_partition_ndv:.2%} per partition, {self.worst_table_ndv:.2%} for the "
                f"table; {outside}; {exact}")


def _compare(stats: Any, want: Any, ndv_bound: float, where: str, acc: Accuracy, table_level: bool) -> None:
    from metastore.stats.model import BinaryStats, BooleanStats, StringStats

    def differs(what: str, got: Any, expected: Any) -> None:
        acc.mismatches.append(f"{where} {what} {got!r} != {expected!r}")

    if stats.num_nulls != want.num_nulls:
        differs("numNulls", stats.num_nulls, want.num_nulls)
    if isinstance(stats, BooleanStats):
        if (stats.num_trues, stats.num_falses) != (want.num_trues, want.num_falses):
            differs("trues/falses", (stats.num_trues, stats.num_falses), (want.num_trues, want.num_falses))
        return
    if isinstance(stats, StringStats | BinaryStats):
        if stats.max_col_len != want.max_col_len:
            differs("maxColLen", stats.max_col_len, want.max_col_len)
        if not math.isclose(stats.avg_col_len, want.avg_col_len, rel_tol=1e-12):
            differs("avgColLen", stats.avg_col_len, want.avg_col_len)
    elif (stats.low, stats.high) != (want.low, want.high):
        differs("low/high", (stats.low, stats.high), (want.low, want.high))
    if want.ndv is None:
        return
    error = abs(stats.num_dvs - want.ndv) / max(want.ndv, 1)
    if table_level:
        acc.worst_table_ndv = max(acc.worst_table_ndv, error)
    else:
        acc.worst_partition_ndv = max(acc.worst_partition_ndv, error)
        acc.partition_estimates += 1
    if abs(stats.num_dvs - want.ndv) > max(1.0, ndv_bound * want.ndv):
        acc.ndv_outside.append(f"{where} {stats.num_dvs} for {want.ndv} ({(stats.num_dvs - want.ndv) / want.ndv:+.2%})")


def check_accuracy(uri: str, name: str, truth: tuple[dict[str, dict[str, Any]], dict[str, Any]]) -> Accuracy:
    """Read back what ANALYZE left for bench.<name> and compare it with ground truth."""
    from metastore.client import ThriftMetastoreClient

    per_partition, whole = truth
    acc = Accuracy()
    columns = list(HIVE_TYPES)
    with ThriftMetastoreClient(uri) as client:
        names = client.list_partition_names("bench", name)
        stored = client.partition_statistics("bench", name, names, columns)
        for part in names:
            got = {e.column: e.stats for e in stored.get(part, [])}
            for column in columns:
                if column not in got:
                    acc.mismatches.append(f"{part} {column}: no statistics")
                    continue
                _compare(got[column], per_partition[part][column], 0.02, f"{part} {column}", acc, False)
        table_level = {e.column: e.stats for e in client.table_statistics("bench", name, columns)}
        for column in columns:
            if column not in table_level:
                acc.mismatches.append(f"table {column}: no statistics")
                continue
            _compare(table_level[column], whole[column], 0.04, f"table {column}", acc, True)
    return acc


def spark_ndv_error(ndv: dict[str, int], whole: dict[str, Any]) -> float:
    errors = [abs(v - whole[c].ndv) / max(whole[c].ndv, 1) for c, v in ndv.items() if whole[c].ndv is not None]
    return max(errors, default=0.0)


# ------------------------------------------------------------------------------------------ floor


def _cpu_of(fn, path: str) -> float:
    """CPU seconds of this worker process spent on ``fn(path)`` (all its threads)."""
    started = time.process_time()
    fn(path)
    return time.process_time() - started


def _read_bytes(path: str) -> int:
    with open(path, "rb") as f:
        return len(f.read())


def _decompress_all(path: str) -> int:
    """Every stream of every stripe read and decompressed (what any reader must at least do)."""
    from metastore.orcio import OrcReader, decompress_stream

    with open(path, "rb") as f:
        reader = OrcReader(f)
        total = 0
        for stripe in reader.stripes:
            # streams lie back to back, each a sequence of compression chunks: the stripe's index and data
            # areas together are one chunk sequence
            f.seek(stripe.offset)
            data = f.read(stripe.index_length + stripe.data_length)
            total += len(decompress_stream(reader.compression, reader.compression_block_size, data,
                                           max_output=1 << 31))
    return total


def _pyarrow_decode(path: str) -> int:
    import pyarrow.orc as po

    return po.ORCFile(path).read().num_rows


def _pool_time(fn, paths: list[str]) -> tuple[float, float]:
    """(wall seconds on two processes, CPU seconds summed over them) of ``fn`` over every path."""
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(fn, paths[:2]))  # workers started and warm before timing
        started = time.perf_counter()
        cpu = sum(pool.map(partial(_cpu_of, fn), paths))
        return time.perf_counter() - started, cpu


def physical_floor(files: list[Path]) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds on two processes, best of 3: the bytes read (page cache), read and decompressed,
    decoded by pyarrow."""
    paths = [str(p) for p in files]

    def best(fn) -> tuple[float, float]:
        runs = [_pool_time(fn, paths) for _ in range(3)]
        return min(r[0] for r in runs), min(r[1] for r in runs)

    return {"read": best(_read_bytes), "decompress": best(_decompress_all), "pyarrow": best(_pyarrow_decode)}


# ---------------------------------------------------------------------------------------- results


#: Our three runs per store: full, after the change, after nothing changed.
KINDS = ("full", "changed", "unchanged")


@dataclass
class SizeResult:
    rows: int
    partitions: int
    files: int
    mib: float
    changed: int = 0
    spark: list[tuple[float, float]] = field(default_factory=list)
    runs: dict[tuple[str, str], list[OurRun]] = field(default_factory=dict)  # (store, kind) -> runs
    loads: list[str] = field(default_factory=list)
    floor: dict[str, tuple[float, float]] = field(default_factory=dict)
    accuracy: dict[tuple[str, str], Accuracy] = field(default_factory=dict)
    spark_ndv_error: float = 0.0
    #: `metastore sql --connect ... -e "SHOW DATABASES;"` per round: (wall, CPU), the floor of any shell command
    thin: list[tuple[float, float]] = field(default_factory=list)


def _best(runs: list[OurRun]) -> OurRun:
    return min(runs, key=lambda r: r.seconds)


def run_size(spark, data: Path, rows: int, partitions: int, runs: int, stores: list[str]) -> SizeResult:
    source = ensure_table(spark, data, rows, partitions)
    work = Path(tempfile.mkdtemp(prefix="bench-analyze-cli-"))
    server = None
    try:
        table = work / "orders"
        shutil.copytree(source, table)
        files = sorted(table.glob("ds=*/*.orc"))
        result = SizeResult(rows, partitions, len(files), sum(f.stat().st_size for f in files) / 2**20)
        print(f"{rows:,} rows, {partitions} partitions, {len(files)} files, {result.mib:.1f} MiB", flush=True)
        truth = ground_truth(table)
        server = Server(work)
        create_spark_table(spark, table)
        # warm-up, alike for both sides and untimed: Spark's first ANALYZE loads classes and JITs; ours compiles
        # and caches the byte-code of the whole ANALYZE path (full and unchanged) and reads the files once
        spark_analyze(spark)
        define_table(server, "warmup", table, work)
        ours(server, "warmup", work)
        ours(server, "warmup", work)
        extra = {"metastore": (), "local": ("--stats-cache", str(work / "local-cache.sqlite"))}
        for round_ in range(runs):
            result.loads.append(load_average())
            thin_wall, _, thin_cpu = sql(server.uri, "SHOW DATABASES;", cwd=work)
            result.thin.append((thin_wall, thin_cpu))
            result.spark.append(spark_analyze(spark))
            if round_ == 0:
                result.spark_ndv_error = spark_ndv_error(spark_ndv(spark), truth[1])
            names = {store: f"orders_{store}_{round_}" for store in stores}
            for store in stores:
                define_table(server, names[store], table, work)
                if store == "local":
                    (work / "local-cache.sqlite").unlink(missing_ok=True)
                result.runs.setdefault((store, "full"), []).append(ours(server, names[store], work, *extra[store]))
                if round_ == 0:
                    result.accuracy[(store, "full")] = check_accuracy(server.uri, names[store], truth)
            changed = change_partitions(spark, table, -(-rows // partitions // 2))
            result.changed = len(changed)
            for kind in ("changed", "unchanged"):
                for store in stores:
                    result.runs.setdefault((store, kind), []).append(ours(server, names[store], work, *extra[store]))
                    if round_ == 0:
                        result.accuracy[(store, kind)] = check_accuracy(server.uri, names[store], truth)
            got = {key: runs_[-1] for key, runs_ in result.runs.items()}
            print(f"round {round_ + 1}: load {result.loads[-1]}; Spark {result.spark[-1][0]:.2f} s "
                  f"({result.spark[-1][1]:.1f} s CPU); "
                  + "; ".join(f"{store} {kind} {got[(store, kind)].seconds:.2f} s ({got[(store, kind)].cpu:.1f} s "
                              f"CPU + server {got[(store, kind)].server_cpu:.1f})"
                              for store in stores for kind in KINDS), flush=True)
        result.floor = physical_floor(sorted(table.glob("ds=*/*.orc")))  # the files as they are now
        return result
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


def _pair(times: tuple[float, float]) -> str:
    return f"{times[0]:.2f} / {times[1]:.2f}"


_STORE_TEXT = {"metastore": "default store (the metastore's database)", "local": "`--stats-cache FILE` (local cache)"}


def _distance(best_full: OurRun, floor: dict[str, tuple[float, float]]) -> list[str]:
    """Each phase of the best full run, and how far it is from the floor."""
    ph = best_full.phases()

    def get(prefix: str) -> float:
        return next((v[0] for k, v in ph.items() if k.startswith(prefix)), 0.0)

    decompress_wall, decompress_cpu = floor["decompress"]
    arrow_wall, arrow_cpu = floor["pyarrow"]
    read_wall, read_cpu = floor["read"]
    harvest = get("harvest (")
    footers, decode, hashing, sketches = get("footers"), get("scan and decode"), get("hashing"), get("sketch updates")
    file_cpu = footers + decode + hashing + sketches
    rows = [
        ("start-up before the first statement", get("start-up"), "wall", "0.02 s (`python -c pass`)"),
        ("listing (partitions and files)", get("listing"), "wall", "—"),
        ("loading the harvest (imports)", get("loading the harvest"), "wall", "—"),
        ("per-file store (lookups, writes)", get("per-file"), "wall", "—"),
        ("harvest, wall on 2 processes", harvest, "wall",
         f"pyarrow decodes every column in {arrow_wall:.2f} s wall: {harvest / arrow_wall:.1f}×; decompressing alone "
         f"{decompress_wall:.2f} s: {harvest / decompress_wall:.1f}×"),
        ("  footers", footers, "CPU", f"reading the bytes {read_cpu:.2f} s CPU"),
        ("  scan and decode", decode, "CPU",
         f"decompressing every stream {decompress_cpu:.2f} s CPU: {decode / decompress_cpu:.1f}×; pyarrow's full "
         f"decode {arrow_cpu:.2f} s: {decode / arrow_cpu:.2f}×"),
        ("  hashing", hashing, "CPU", "no floor (work pyarrow does not do)"),
        ("  sketch updates", sketches, "CPU", "no floor (work pyarrow does not do)"),
        ("  all file work", file_cpu, "CPU", f"pyarrow's decode {arrow_cpu:.2f} s CPU: {file_cpu / arrow_cpu:.2f}×"),
        ("merge (files into partitions and table)", get("merge"), "wall", "—"),
        ("persistence", get("persistence"), "wall", "—"),
        ("statement total", get("statement total"), "wall", "—"),
        ("whole command", best_full.seconds, "wall", f"{best_full.cpu:.2f} s CPU with its workers, server "
                                                     f"{best_full.server_cpu:.2f} s"),
    ]
    out = ["| phase (best full run, `--verbose`) | seconds | | floor on this machine, and the distance |",
           "|---|---|---|---|"]
    out += [f"| {name} | {seconds:.3f} | {how} | {floor_text} |" for name, seconds, how, floor_text in rows]
    return out


def report(results: list[SizeResult], stores: list[str]) -> str:
    lines = []
    for r in results:
        spark = min(w for w, _ in r.spark)
        spark_cpu = min(c for _, c in r.spark)
        lines += [
            f"### {r.rows:,} rows, {r.partitions} partitions ({r.files} files, {r.mib:.0f} MiB)",
            "",
            f"Load average (1/5/15 min) at each round: {', '.join(r.loads)}.",
            "",
            "| run | best s | median s | Spark / run (best) | of our full run | CPU s (command + server) |",
            "|---|---|---|---|---|---|",
            f"| Spark `ANALYZE TABLE ... FOR ALL COLUMNS` (warm session, statement alone) | {spark:.2f} | "
            f"{_median([w for w, _ in r.spark]):.2f} | — | — | {spark_cpu:.2f} (JVM) |",
        ]
        for store in stores:
            full = _best(r.runs[(store, "full")]).seconds
            for kind in KINDS:
                runs_ = r.runs[(store, kind)]
                best = _best(runs_)
                what = {"full": "full (nothing stored yet)",
                        "changed": f"after {r.changed} of {r.partitions} partitions changed",
                        "unchanged": "after nothing changed"}[kind]
                lines.append(
                    f"| ours, {_STORE_TEXT[store]}: {what} | {best.seconds:.2f} | "
                    f"{_median([x.seconds for x in runs_]):.2f} | {spark / best.seconds:.2f}× | "
                    f"{best.seconds / full:.1%} | {min(x.cpu + x.server_cpu for x in runs_):.2f} |")
        thin_wall, thin_cpu = min(w for w, _ in r.thin), min(c for _, c in r.thin)
        first = stores[0]
        full_best = _best(r.runs[(first, "full")]).seconds
        full_cpu = min(x.cpu + x.server_cpu for x in r.runs[(first, "full")])
        ratios = sorted(w / run.seconds for (w, _), run in zip(r.spark, r.runs[(first, "full")], strict=True))
        changed_best = _best(r.runs[(first, "changed")]).seconds
        unchanged_best = _best(r.runs[(first, "unchanged")]).seconds
        accurate = all(not a.mismatches and not a.ndv_outside for a in r.accuracy.values())

        def verdict(ok: bool) -> str:
            return "**met**" if ok else "**not met**"

        lines += [
            "",
            f"Targets ({_STORE_TEXT[first]}; best rounds, and the per-round ratios for the full run):",
            "",
            "| target | measured | |",
            "|---|---|---|",
            f"| full run ≥ 3× faster than Spark | {spark / full_best:.2f}× (rounds: "
            f"{', '.join(f'{x:.2f}×' for x in ratios)}; CPU {spark_cpu / full_cpu:.2f}×) | "
            f"{verdict(spark / full_best >= 3)} |",
            f"| after {r.changed} of {r.partitions} partitions changed ≤ 15 % of the full run | "
            f"{changed_best / full_best:.1%} | {verdict(changed_best / full_best <= 0.15)} |",
            f"| after nothing changed ≤ 5 % of the full run | {unchanged_best / full_best:.1%} | "
            f"{verdict(unchanged_best / full_best <= 0.05)} |",
            f"| NDV within 2 % per partition, 4 % merged; other statistics exact | see below | {verdict(accurate)} |",
            "",
            f"The floor of any command of this shell, `metastore sql --connect ... -e \"SHOW DATABASES;\"` timed in "
            f"the same rounds: {thin_wall:.2f} s wall ({thin_cpu:.2f} s CPU), {thin_wall / full_best:.1%} of the full "
            f"run; the changed run also re-reads {r.changed}/{r.partitions} of the data, "
            f"{r.changed / r.partitions:.1%} of it.",
        ]
        lines += ["", "Accuracy, read back after round 1 (ground truth from pyarrow/numpy over the files; Spark's own "
                  f"table-level NDV error, for comparison: {r.spark_ndv_error:.2%}):", ""]
        for (store, kind), acc in r.accuracy.items():
            lines.append(f"- {_STORE_TEXT[store]}, {kind}: {acc.line()}")
        lines += ["", "Physical floor on two processes (page cache warm; wall s / CPU s summed over both): reading the "
                  f"bytes {_pair(r.floor['read'])}, reading and decompressing every stream "
                  f"{_pair(r.floor['decompress'])}, decoding every column with pyarrow {_pair(r.floor['pyarrow'])}.",
                  ""]
        lines += _distance(_best(r.runs[(stores[0], "full")]), r.floor)
        for kind in ("changed", "unchanged"):
            best = _best(r.runs[(stores[0], kind)])
            lines += ["", f"Phases of the best {kind} run ({_STORE_TEXT[stores[0]]}): `{best.summary()}`", "", "```"]
            lines += [f"{name:<60} {secs:8.3f} s {how}" for name, (secs, how) in best.phases().items()]
            lines += ["```"]
        lines.append("")
    return "\n".join(lines)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def write_markdown(section: str, path: Path) -> None:
    """Replace (or append) the '## ANALYZE end to end' section of BENCHMARKS.md."""
    text = path.read_text()
    pattern = re.compile(r"^## ANALYZE end to end\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip("\n") + "\n\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="4000000:8,20000000:40", help="rows:partitions, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="interleaved rounds (best and median are reported)")
    parser.add_argument("--local-cache", action="store_true",
                        help="also time our commands with a local cache file (--stats-cache FILE)")
    parser.add_argument("--data", type=Path,
                        default=Path(platformdirs.user_cache_dir("metastore", appauthor=False)) / "bench-analyze")
    parser.add_argument("--write-md", action="store_true", help="write the section of BENCHMARKS.md")
    args = parser.parse_args(argv)
    sizes = [tuple(int(x) for x in s.split(":")) for s in args.sizes.split(",")]
    stores = ["metastore", "local"] if args.local_cache else ["metastore"]
    args.data.mkdir(parents=True, exist_ok=True)
    warehouse = tempfile.mkdtemp(prefix="bench-analyze-cli-wh-")
    spark = _spark(warehouse)
    results = []
    started = dt.datetime.now()
    try:
        for rows, partitions in sizes:
            results.append(run_size(spark, args.data, rows, partitions, args.runs, stores))
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
    body = report(results, stores)
    print()
    print(body)
    intro = (
        f"`python bench/bench_analyze_cli.py --sizes {args.sizes} --runs {args.runs}"
        f"{' --local-cache' if args.local_cache else ''}`: whole commands as a user types them. Spark's own "
        "`ANALYZE TABLE ... COMPUTE STATISTICS FOR ALL COLUMNS` (local[2], warm session, the statement alone) "
        "against `metastore sql --connect thrift://... -e \"ANALYZE TABLE bench.orders PARTITION (ds) COMPUTE "
        "STATISTICS FOR ALL COLUMNS;\"` (the console script, a fresh process each time, its default per-file store "
        "in the metastore's database; a `metastore serve` on SQLite started by the bench; for full runs a table "
        "defined afresh over the same files, so nothing is stored for it), on the same Spark-written files (ORC "
        "Java, zstd, two files per partition, ten columns), in interleaved rounds. Both sides warmed alike before "
        "timing (one untimed ANALYZE each; our byte-code cached as an installed package's is). Ratios use the best "
        "round of each line."
    )
    context = (f"{started.strftime('%Y-%m-%d %H:%M')}, {machine()}; the machine is shared with other work, so "
               "wall times carry its load (CPU seconds are steadier).")
    section = ("## ANALYZE end to end\n\n" + textwrap.fill(intro, 110, break_on_hyphens=False) + "\n\n"
               + textwrap.fill(context, 110, break_on_hyphens=False) + "\n\n" + body)
    if args.write_md:
        write_markdown(section, REPO / "BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
