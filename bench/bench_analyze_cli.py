"""ANALYZE end to end, as a user runs it: `metastore sql --connect ... -e "ANALYZE ..."` against Spark's ANALYZE.

    python bench/bench_analyze_cli.py [--sizes 4000000:8,20000000:40] [--runs 2] [--data DIR] [--write-md]

For each size (rows:partitions) a table written by Spark (ORC Java, zstd, two files per partition; ten columns:
bigint, int, decimal, int, double with nulls, low- and high-cardinality strings, timestamp, date, boolean,
partitioned by ``ds``) is measured side by side in one run, in ``--runs`` interleaved rounds:

1. Spark's own ``ANALYZE TABLE t COMPUTE STATISTICS FOR ALL COLUMNS`` (local[2]: the same two cores; a warm
   session, one untimed ANALYZE first; the statement alone);
2. ours, full: ``metastore sql --connect thrift://... -e "ANALYZE TABLE bench.orders PARTITION (ds) COMPUTE
   STATISTICS FOR ALL COLUMNS;"`` as a fresh process, against a ``metastore serve`` this script starts on a fresh
   SQLite database, with an empty per-file cache;
3. ours after one of every 8 partitions changed (Spark rewrote its files with the same rows: new files), the
   cache as the previous run left it;
4. ours after nothing changed.

Each of our runs is a whole command (interpreter start, imports, listing, harvest, persistence); ``--verbose``
output gives its per-phase accounting, printed for the best run. Also measured once per size: the physical floor
(reading the files' bytes, decompressing every stream, and decoding all columns with pyarrow, on the same cores).
The load average is printed with every round. ``--write-md`` replaces the "ANALYZE end to end" section of
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
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

import platformdirs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

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


def _spark():
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("bench-analyze-cli")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "3g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="bench-analyze-cli-wh-"))
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


def _env() -> dict[str, str]:
    """The environment of our commands: byte-code cached, as a user's install caches it."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
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
            [sys.executable, "-c", _MAIN, "serve", "--port", str(self.port),
             "--db", f"sqlite:///{workdir / 'ms.db'}", "--warehouse", str(workdir / "warehouse")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=workdir, env=_env(),
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
    result = subprocess.run([sys.executable, "-c", _MAIN, "sql", "--connect", uri, *extra, "-e", statements],
                            capture_output=True, text=True, cwd=cwd, timeout=3600, env=_env())
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"metastore sql failed ({result.returncode}): {result.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, result.stdout + result.stderr, cpu


def _table_ddl(location: Path) -> str:
    columns = ", ".join(f"{name} {hive_type}" for name, hive_type in HIVE_TYPES.items())
    return (f"CREATE DATABASE IF NOT EXISTS bench; CREATE EXTERNAL TABLE bench.orders ({columns}) "
            f"PARTITIONED BY (ds string) STORED AS ORC LOCATION '{location}'; MSCK REPAIR TABLE bench.orders;")


ANALYZE = "ANALYZE TABLE bench.orders PARTITION (ds) COMPUTE STATISTICS FOR ALL COLUMNS;"


@dataclass(frozen=True)
class OurRun:
    """One of our ANALYZE commands: wall seconds, its --verbose output, CPU seconds of the command (with its
    workers) and of the server."""

    seconds: float
    output: str
    cpu: float
    server_cpu: float


def ours(server: Server, cache: Path, cwd: Path) -> OurRun:
    server_before = tree_cpu(server.process.pid)
    seconds, output, cpu = sql(server.uri, ANALYZE, "--stats-cache", str(cache), "--verbose", cwd=cwd)
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


@dataclass
class SizeResult:
    rows: int
    partitions: int
    files: int
    mib: float
    changed: int = 0
    spark: list[tuple[float, float]] = field(default_factory=list)
    full: list[OurRun] = field(default_factory=list)
    changed_runs: list[OurRun] = field(default_factory=list)
    unchanged: list[OurRun] = field(default_factory=list)
    loads: list[str] = field(default_factory=list)
    floor: dict[str, tuple[float, float]] = field(default_factory=dict)


def _best(runs: list[OurRun]) -> OurRun:
    return min(runs, key=lambda r: r.seconds)


def _phases(output: str) -> str:
    """The --verbose phase lines of one run's output."""
    lines = [line.strip() for line in output.splitlines() if line.strip().startswith("phase ")]
    return "\n".join(lines)


def run_size(spark, data: Path, rows: int, partitions: int, runs: int) -> SizeResult:
    source = ensure_table(spark, data, rows, partitions)
    work = Path(tempfile.mkdtemp(prefix="bench-analyze-cli-"))
    server = None
    try:
        table = work / "orders"
        shutil.copytree(source, table)
        files = sorted(table.glob("ds=*/*.orc"))
        result = SizeResult(rows, partitions, len(files), sum(f.stat().st_size for f in files) / 2**20)
        print(f"{rows:,} rows, {partitions} partitions, {len(files)} files, {result.mib:.1f} MiB", flush=True)
        server = Server(work)
        sql(server.uri, _table_ddl(table), cwd=work)
        sql(server.uri, "SHOW DATABASES;", cwd=work)  # byte-code of the shell cached before timing
        create_spark_table(spark, table)
        spark_analyze(spark)  # warm-up: the session's first ANALYZE compiles and JITs
        for round_ in range(runs):
            result.loads.append(load_average())
            result.spark.append(spark_analyze(spark))
            cache = work / f"cache-{round_}.sqlite"
            result.full.append(ours(server, cache, work))
            changed = change_partitions(spark, table, -(-rows // partitions // 2))
            result.changed = len(changed)
            result.changed_runs.append(ours(server, cache, work))
            result.unchanged.append(ours(server, cache, work))
            print(f"round {round_ + 1}: load {result.loads[-1]}; Spark {result.spark[-1][0]:.2f} s "
                  f"({result.spark[-1][1]:.1f} s CPU), ours full {result.full[-1].seconds:.2f} s "
                  f"({result.full[-1].cpu:.1f} s CPU + server {result.full[-1].server_cpu:.1f}), after "
                  f"{len(changed)} of {partitions} changed {result.changed_runs[-1].seconds:.2f} s, unchanged "
                  f"{result.unchanged[-1].seconds:.2f} s", flush=True)
        result.floor = physical_floor(files)
        return result
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


def _pair(times: tuple[float, float]) -> str:
    return f"{times[0]:.3f} / {times[1]:.3f}"


def report(results: list[SizeResult], runs: int) -> str:
    lines = []
    for r in results:
        spark = min(w for w, _ in r.spark)
        spark_cpu = min(c for _, c in r.spark)
        best_full, best_changed, best_unchanged = _best(r.full), _best(r.changed_runs), _best(r.unchanged)
        full, full_out = best_full.seconds, best_full.output
        changed, changed_out = best_changed.seconds, best_changed.output
        unchanged = best_unchanged.seconds
        full_cpu = min(run.cpu + run.server_cpu for run in r.full)
        lines += [
            f"### {r.rows:,} rows, {r.partitions} partitions ({r.files} files, {r.mib:.0f} MiB)",
            "",
            f"Load average (1/5/15 min) at each round: {', '.join(r.loads)}.",
            "",
            "| run | seconds | Spark / run | of our full run |",
            "|---|---|---|---|",
            f"| Spark `ANALYZE TABLE ... FOR ALL COLUMNS` (warm session, statement alone) | {spark:.2f} | — | — |",
            f"| `metastore sql --connect ... -e \"ANALYZE ...\"`, full (empty cache) | {full:.2f} | "
            f"{spark / full:.2f}× | 100 % |",
            f"| the same after {r.changed} of {r.partitions} partitions changed | {changed:.2f} | "
            f"{spark / changed:.1f}× | {changed / full:.1%} |",
            f"| the same after nothing changed | {unchanged:.2f} | {spark / unchanged:.1f}× | "
            f"{unchanged / full:.1%} |",
            "",
            f"CPU seconds, least of the rounds (the machine's load inflates wall times, not these much): Spark's "
            f"JVM {spark_cpu:.2f}; our full run {full_cpu:.2f} (the command with its workers, plus the server); "
            f"Spark / ours {spark_cpu / full_cpu:.2f}×.",
            "",
            "Physical floor on two processes (page cache warm; wall s / CPU s summed over both): reading the bytes "
            f"{_pair(r.floor['read'])}, reading and decompressing every stream {_pair(r.floor['decompress'])}, "
            f"decoding every column with pyarrow {_pair(r.floor['pyarrow'])}.",
            "",
            "Phases of the best full run (`--verbose`):",
            "",
            "```",
            _phases(full_out),
            "```",
            "",
            "After the change:",
            "",
            "```",
            _phases(changed_out),
            "```",
            "",
        ]
    return "\n".join(lines)


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
    parser.add_argument("--runs", type=int, default=2, help="interleaved rounds (the best of each line is kept)")
    parser.add_argument("--data", type=Path,
                        default=Path(platformdirs.user_cache_dir("metastore", appauthor=False)) / "bench-analyze")
    parser.add_argument("--write-md", action="store_true", help="write the section of BENCHMARKS.md")
    args = parser.parse_args(argv)
    sizes = [tuple(int(x) for x in s.split(":")) for s in args.sizes.split(",")]
    args.data.mkdir(parents=True, exist_ok=True)
    spark = _spark()
    results = []
    try:
        for rows, partitions in sizes:
            results.append(run_size(spark, args.data, rows, partitions, args.runs))
    finally:
        spark.stop()
    body = report(results, args.runs)
    print()
    print(body)
    intro = (
        f"`python bench/bench_analyze_cli.py --sizes {args.sizes} --runs {args.runs}`: whole commands as a user "
        "types them. Spark's own `ANALYZE TABLE ... COMPUTE STATISTICS FOR ALL COLUMNS` (local[2], warm session, "
        "the statement alone) against `metastore sql --connect thrift://... -e \"ANALYZE TABLE bench.orders "
        "PARTITION (ds) COMPUTE STATISTICS FOR ALL COLUMNS;\"` as a fresh process (a `metastore serve` on SQLite "
        "started by the bench; an empty per-file cache for full runs), on the same Spark-written files (ORC Java, "
        "zstd, two files per partition, ten columns), in interleaved rounds; best of "
        f"{args.runs} rounds per line."
    )
    context = f"{dt.datetime.now().strftime('%Y-%m-%d %H:%M')}, {machine()}."
    section = ("## ANALYZE end to end\n\n" + textwrap.fill(intro, 110, break_on_hyphens=False) + "\n\n"
               + textwrap.fill(context, 110, break_on_hyphens=False) + "\n\n" + body)
    if args.write_md:
        write_markdown(section, REPO / "BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
