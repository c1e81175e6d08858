"""Load benchmark: our Thrift server against the reference Hive Metastore 2.3.10, side by side, both on PostgreSQL.

Starts both servers on loopback ports, each on a fresh PostgreSQL database, sets up the same table on each
(20 bigint columns, 200 partitions, table and partition statistics for every column), then runs each call for a
fixed time from several clients and prints ops/s, p50 and p99 latency per call, the ratio ours/reference, and
the CPU each call cost the server, PostgreSQL and the clients. Every request goes to 127.0.0.1 only, and every
loop is bounded in time and count.

The clients are Python processes (the generated client, accelerated codec) or, with --client jvm, JVM processes
running Hive 2.3.10's generated Java client as Spark does. Everything shares this machine's cores, so for
large replies the clients' decoding takes CPU the servers would otherwise get; the JVM decodes several times
cheaper than Python.

    python bench/bench_hms.py                      # 4 Python clients, 3 rounds of 10 s per call per server
    python bench/bench_hms.py --client jvm         # 4 JVM clients
    python bench/bench_hms.py --clients 8 --seconds 5
    python bench/bench_hms.py --only ours --our-address 127.0.0.1:9083   # a server you started yourself
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the server launchers live with the interop tests

DB = "bench_db"
TABLE = "stats_wide"
MAX_OPS_PER_WORKER = 1_000_000  # a hard bound next to the time bound
LAST_ANALYZED = 1_700_000_000


@dataclass(frozen=True)
class Shape:
    columns: int
    partitions: int

    @property
    def column_names(self) -> list[str]:
        return [f"c{i:02d}" for i in range(self.columns)]

    @property
    def partition_names(self) -> list[str]:
        return [f"ds=p{i:04d}" for i in range(self.partitions)]


CALLS = [
    "get_table_column_statistics",
    "update_table_column_statistics",
    "get_table_statistics_req",
    "get_partitions_statistics_req",
    "get_aggr_stats_for",
]


CLIENT_KINDS = {
    "python": "Python client processes (generated client, accelerated binary codec)",
    "jvm": "JVM client processes (Hive 2.3.10's generated client over TSocket, as Spark)",
}


def describe_call(call: str, shape: Shape) -> str:
    return {
        "get_table_column_statistics": "get_table_column_statistics",
        "update_table_column_statistics": "update_table_column_statistics (1 column)",
        "get_table_statistics_req": f"get_table_statistics_req ({shape.columns} columns)",
        "get_partitions_statistics_req": f"get_partitions_statistics_req ({shape.partitions} partitions × {shape.columns} columns)",
        "get_aggr_stats_for": f"get_aggr_stats_for ({shape.partitions} partitions × {shape.columns} columns)",
    }[call]


# ---------------------------------------------------------------- client side (also runs in worker processes)


def connect(host: str, port: int, timeout_s: float = 120.0):
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    from metastore.api.hive_metastore import ThriftHiveMetastore

    sock = TSocket.TSocket(host, port)
    sock.setTimeout(timeout_s * 1000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    # The accelerated (C) codec on the client side, so the benchmark measures the servers, not Python decoding.
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(transport)), transport


def long_stats(T: Any, i: int, salt: int = 0) -> Any:
    return T.ColumnStatisticsData(
        longStats=T.LongColumnStatsData(
            lowValue=-i - salt, highValue=1000 * (i + 1) + salt, numNulls=i % 7, numDVs=100 + i
        )
    )


def column_statistics(T: Any, cols: list[str], part_name: str | None, salt: int = 0) -> Any:
    desc = T.ColumnStatisticsDesc(
        isTblLevel=part_name is None,
        dbName=DB,
        tableName=TABLE,
        partName=part_name,
        lastAnalyzed=LAST_ANALYZED,
    )
    objs = [
        T.ColumnStatisticsObj(colName=c, colType="bigint", statsData=long_stats(T, i, salt))
        for i, c in enumerate(cols)
    ]
    return T.ColumnStatistics(statsDesc=desc, statsObj=objs)


def set_up(host: str, port: int, shape: Shape) -> None:
    """Create the database, the table, its partitions and every statistic; idempotent on a fresh server only."""
    from metastore.api.hive_metastore import ttypes as T

    client, transport = connect(host, port)
    try:
        client.create_database(T.Database(name=DB, description="benchmark", parameters={}))
        cols = [T.FieldSchema(name=c, type="bigint") for c in shape.column_names]

        def sd(location: str | None) -> Any:
            return T.StorageDescriptor(
                cols=cols,
                location=location,
                inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
                outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
                compressed=False,
                numBuckets=-1,
                serdeInfo=T.SerDeInfo(
                    serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde", parameters={}
                ),
                bucketCols=[],
                sortCols=[],
                parameters={},
            )

        client.create_table(
            T.Table(
                tableName=TABLE,
                dbName=DB,
                owner="bench",
                sd=sd(None),
                partitionKeys=[T.FieldSchema(name="ds", type="string")],
                parameters={},
                tableType="MANAGED_TABLE",
                createTime=0,
                lastAccessTime=0,
                retention=0,
            )
        )
        table = client.get_table(DB, TABLE)
        names = shape.partition_names
        for start in range(0, len(names), 50):
            parts = [
                T.Partition(
                    values=[n.split("=", 1)[1]],
                    dbName=DB,
                    tableName=TABLE,
                    sd=sd(f"{table.sd.location}/{n}"),
                    parameters={},
                )
                for n in names[start : start + 50]
            ]
            client.add_partitions(parts)
        client.update_table_column_statistics(column_statistics(T, shape.column_names, None))
        for start in range(0, len(names), 20):
            batch = [
                column_statistics(T, shape.column_names, n, salt=j + start)
                for j, n in enumerate(names[start : start + 20])
            ]
            client.set_aggr_stats_for(T.SetPartitionsStatsRequest(colStats=batch, needMerge=False))
        # A check that the set-up really holds what the load reads.
        got = client.get_partitions_statistics_req(
            T.PartitionsStatsRequest(dbName=DB, tblName=TABLE, colNames=shape.column_names, partNames=names)
        )
        cells = sum(len(v) for v in got.partStats.values())
        if cells != shape.partitions * shape.columns:
            raise RuntimeError(
                f"set-up on {host}:{port} holds {cells} partition statistics, expected {shape.partitions * shape.columns}"
            )
    finally:
        transport.close()


def request_for(call: str, shape: Shape, worker: int) -> Callable[[Any], Any]:
    from metastore.api.hive_metastore import ttypes as T

    cols, parts = shape.column_names, shape.partition_names
    if call == "get_table_column_statistics":
        col = cols[worker % len(cols)]
        return lambda c: c.get_table_column_statistics(DB, TABLE, col)
    if call == "update_table_column_statistics":
        col = cols[worker % len(cols)]
        counter = iter(range(MAX_OPS_PER_WORKER + 1))
        return lambda c: c.update_table_column_statistics(
            column_statistics(T, [col], None, salt=next(counter))
        )
    if call == "get_table_statistics_req":
        req = T.TableStatsRequest(dbName=DB, tblName=TABLE, colNames=cols)
        return lambda c: c.get_table_statistics_req(req)
    if call == "get_partitions_statistics_req":
        req = T.PartitionsStatsRequest(dbName=DB, tblName=TABLE, colNames=cols, partNames=parts)
        return lambda c: c.get_partitions_statistics_req(req)
    if call == "get_aggr_stats_for":
        req = T.PartitionsStatsRequest(dbName=DB, tblName=TABLE, colNames=cols, partNames=parts)
        return lambda c: c.get_aggr_stats_for(req)
    raise ValueError(f"unknown call {call}")


def worker_loop(args: tuple[str, int, str, Shape, int, float, Any, Any]) -> None:
    host, port, call, shape, worker, seconds, barrier, results = args
    client, transport = connect(host, port)
    try:
        op = request_for(call, shape, worker)
        op(client)  # warm-up: connection, server-side caches of the first call
        barrier.wait(timeout=120)
        latencies = []
        errors = 0
        cpu0 = time.process_time()
        deadline = time.perf_counter() + seconds
        for _ in range(MAX_OPS_PER_WORKER):
            t0 = time.perf_counter()
            if t0 >= deadline:
                break
            try:
                op(client)
            except Exception:  # noqa: BLE001 - counted, the run goes on; a broken connection ends the worker
                errors += 1
                if not transport.isOpen():
                    break
            latencies.append(time.perf_counter() - t0)
        results.put((worker, latencies, errors, time.process_time() - cpu0))
    finally:
        transport.close()


@dataclass(frozen=True)
class CallResult:
    ops: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    # CPU milliseconds per call of the server (its process tree), of PostgreSQL and of the clients; nan when
    # the server was not started by the benchmark.
    server_cpu_ms: float = float("nan")
    db_cpu_ms: float = float("nan")
    client_cpu_ms: float = float("nan")

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds if self.seconds else 0.0


# ---------------------------------------------------------------- CPU accounting (Linux /proc)

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_table() -> dict[int, tuple[int, str, float]]:
    """{pid: (parent pid, command, CPU seconds used so far)} of every process we can read."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        comm = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), comm, (int(fields[11]) + int(fields[12])) / _TICK)
    return table


#: Databases of the servers this run started: PostgreSQL backends serving any other database (other work on a
#: shared machine) are not counted.
BENCH_DATABASES: set[str] = set()


def _other_database(pid: int) -> bool:
    """Whether a PostgreSQL process is a backend (or autovacuum worker) of a database this run did not make."""
    if not BENCH_DATABASES:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().replace(b"\0", b" ").decode("utf-8", "replace").split()
    except OSError:
        return False
    if not words or words[0] != "postgres:":
        return False
    words = words[1:]
    if words and words[0].endswith(":"):  # the cluster's name (Debian's "15/main:")
        words = words[1:]
    if len(words) >= 3 and words[:2] == ["autovacuum", "worker"]:
        return words[2] not in BENCH_DATABASES
    # a client backend's title: "<user> <database> <host>(<port>) <state>"
    if len(words) >= 3 and ("(" in words[2] or words[2] == "[local]"):
        return words[1] not in BENCH_DATABASES
    return False


def process_tree(table: dict[int, tuple[int, str, float]], root: int) -> set[int]:
    """`root` and every process descended from it, from a `_proc_table()` snapshot."""
    tree = {root}
    changed = True
    while changed:
        changed = False
        for pid, (ppid, _, _) in table.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                changed = True
    return tree


def cpu_seconds(server_pid: int | None) -> tuple[float, dict[int, float]]:
    """CPU seconds used so far by (the server's process tree, nan when the benchmark did not start the server;
    each PostgreSQL process but the backends of other databases, by pid)."""
    table = _proc_table()
    server = float("nan")
    if server_pid is not None:
        tree = process_tree(table, server_pid)
        server = sum(table[p][2] for p in tree if p in table)
    postgres = {
        pid: cpu for pid, (_, comm, cpu) in table.items() if comm.startswith("postgres") and not _other_database(pid)
    }
    return server, postgres


def _postgres_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """PostgreSQL CPU used between two snapshots: per process, so that a process of other work that exits in
    between (a shared machine) takes nothing away; a process started in between counts whole."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


@dataclass
class Sample:
    """One timed run of one call against one server: latencies in seconds, CPU seconds used meanwhile."""

    latencies: list[float]
    errors: int
    elapsed: float
    server_cpu: float
    db_cpu: float
    client_cpu: float


def _sample(
    latencies: list[float], errors: int, elapsed: float, before: tuple, after: tuple, client_cpu: float
) -> Sample:
    """A Sample from CPU snapshots (server, PostgreSQL) taken around the timed part."""
    return Sample(latencies, errors, elapsed, after[0] - before[0], _postgres_delta(before[1], after[1]), client_cpu)


def summarize(samples: list[Sample]) -> CallResult:
    """One result from the rounds of a call against one server: ops/s over their summed time, percentiles
    over all their latencies, CPU per call over all their calls."""
    latencies = sorted(x for s in samples for x in s.latencies)
    errors = sum(s.errors for s in samples)
    elapsed = sum(s.elapsed for s in samples)
    n = len(latencies)
    if not n:
        return CallResult(0, errors, elapsed, float("nan"), float("nan"))
    q = statistics.quantiles(latencies, n=100, method="inclusive") if n > 1 else [latencies[0]] * 99
    return CallResult(
        n,
        errors,
        elapsed,
        q[49] * 1000,
        q[98] * 1000,
        server_cpu_ms=sum(s.server_cpu for s in samples) * 1000 / n,  # nan when the server is not ours to watch
        db_cpu_ms=sum(s.db_cpu for s in samples) * 1000 / n,
        client_cpu_ms=sum(s.client_cpu for s in samples) * 1000 / n,
    )


def run_call(
    host: str, port: int, call: str, shape: Shape, clients: int, seconds: float, server_pid: int | None
) -> Sample:
    """Python clients: one process each, the generated client over the accelerated (C) binary codec."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(clients + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=worker_loop, args=((host, port, call, shape, w, seconds, barrier, results),), daemon=True
        )
        for w in range(clients)
    ]
    for p in procs:
        p.start()
    barrier.wait(timeout=180)
    before = cpu_seconds(server_pid)
    t0 = time.perf_counter()
    collected = [results.get(timeout=seconds + 300) for _ in procs]
    elapsed = time.perf_counter() - t0
    after = cpu_seconds(server_pid)
    for p in procs:
        p.join(timeout=30)
    latencies = [x for _, lat, _, _ in collected for x in lat]
    errors = sum(e for _, _, e, _ in collected)
    return _sample(latencies, errors, elapsed, before, after, sum(c for *_, c in collected))


JVM_SOURCE = Path(__file__).resolve().parent / "jvm" / "HmsLoad.java"
JVM_WARMUP_S = 6.0  # default warm-up per JVM: its JIT compiles the client here, not in the timed part


def compile_jvm_client(workdir: Path) -> str:
    """Compile bench/jvm/HmsLoad.java against pyspark's jars; returns the classpath to run it with."""
    import shutil
    import subprocess

    from interop.reference_hms import java_executable, pyspark_jars_dir

    jars = pyspark_jars_dir()
    javac = Path(java_executable()).with_name("javac")
    if not javac.exists():
        found = shutil.which("javac")
        if not found:
            raise SystemExit("--client jvm needs javac (a JDK 17: apt-get install openjdk-17-jdk-headless)")
        javac = Path(found)
    out = workdir / "jvm-classes"
    out.mkdir(parents=True, exist_ok=True)
    cp = f"{jars}/*"
    done = subprocess.run(
        [str(javac), "-nowarn", "-cp", cp, "-d", str(out), str(JVM_SOURCE)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"javac {JVM_SOURCE.name} failed:\n{done.stderr.strip()}")
    return os.pathsep.join([str(out), cp])


def _proc_cpu(pid: int) -> float:
    """CPU seconds (all threads) a live process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def run_call_jvm(
    classpath: str,
    host: str,
    port: int,
    call: str,
    shape: Shape,
    clients: int,
    seconds: float,
    server_pid: int | None,
    warmup: float = JVM_WARMUP_S,
    jvm_options: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Sample:
    """JVM clients: one JVM process per client, each with one connection and Hive 2.3.10's generated client
    (Spark's). All connect and warm up (JIT) first; the timed loops start together. `jvm_options` (system
    properties for TLS or SASL, see HmsLoad.java) and `env` go to every client JVM."""
    import subprocess

    from interop.reference_hms import java_executable

    procs = []
    for w in range(clients):
        cmd = [java_executable(), "-Xmx512m", *(jvm_options or []), "-cp", classpath, "HmsLoad", host, str(port),
               call, "1", str(w)]
        cmd += [str(warmup), str(seconds), str(shape.columns), str(shape.partitions), DB, TABLE]
        procs.append(
            subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                env=None if env is None else {**os.environ, **env},
            )
        )

    def expect(proc: subprocess.Popen, word: str) -> str:
        line = proc.stdout.readline()
        if not line.startswith(word):
            proc.kill()
            raise RuntimeError(f"JVM load generator ({call}): expected {word}, got {line!r}: {proc.stderr.read()}")
        return line

    def tell(word: str) -> None:
        for proc in procs:
            proc.stdin.write(word + "\n")
            proc.stdin.flush()

    try:
        for proc in procs:
            expect(proc, "READY")
        before = cpu_seconds(server_pid)
        cpu0 = sum(_proc_cpu(proc.pid) for proc in procs)
        tell("GO")
        for proc in procs:
            expect(proc, "DONE")
        after = cpu_seconds(server_pid)
        client_cpu = sum(_proc_cpu(proc.pid) for proc in procs) - cpu0
        tell("REPORT")
        ops = errors = 0
        elapsed = 0.0
        latencies: list[float] = []
        for proc in procs:
            _, n, e, elapsed_ns = expect(proc, "RESULT").split()
            lat = [int(x) / 1e6 for x in expect(proc, "LAT").split()[1:]]
            if len(lat) != int(n):
                raise RuntimeError(f"a JVM load generator reported {n} calls but {len(lat)} latencies")
            ops, errors, elapsed = ops + int(n), errors + int(e), max(elapsed, int(elapsed_ns) / 1e9)
            latencies += lat
        for proc in procs:
            proc.wait(timeout=60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return _sample(latencies, errors, elapsed, before, after, client_cpu)


class JvmSession:
    """Long-lived JVM clients (HmsLoad's session mode): `clients` JVM processes with one connection each, opened
    once and kept across timed runs of any call, as a Spark driver keeps its metastore connection. The JIT and
    the handshakes (TLS, SASL) are paid once, so timed runs measure the steady state rather than the compiler."""

    def __init__(self, classpath: str, host: str, port: int, shape: Shape, clients: int,
                 jvm_options: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        import subprocess

        from interop.reference_hms import java_executable

        self.procs: list[Any] = []
        try:
            for w in range(clients):
                cmd = [java_executable(), "-Xmx512m", *(jvm_options or []), "-cp", classpath, "HmsLoad", host,
                       str(port), "session", "1", str(w), "0", "0", str(shape.columns), str(shape.partitions), DB,
                       TABLE]
                self.procs.append(subprocess.Popen(
                    cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    bufsize=1, env=None if env is None else {**os.environ, **env},
                ))
            for proc in self.procs:
                self._expect(proc, "OPEN", "connect")
        except BaseException:
            self.close()
            raise

    def _expect(self, proc: Any, word: str, what: str) -> str:
        line = proc.stdout.readline()
        if not line.startswith(word):
            proc.kill()
            raise RuntimeError(f"JVM load generator ({what}): expected {word}, got {line!r}: {proc.stderr.read()}")
        return line

    def _tell(self, line: str) -> None:
        for proc in self.procs:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()

    def run(self, call: str, warmup: float, seconds: float, server_pid: int | None) -> Sample:
        """One timed run of `call` from every client at once (after `warmup` seconds of the same call)."""
        self._tell(f"RUN {call} {warmup:g} {seconds:g}")
        for proc in self.procs:
            self._expect(proc, "READY", call)
        before = cpu_seconds(server_pid)
        cpu0 = sum(_proc_cpu(proc.pid) for proc in self.procs)
        self._tell("GO")
        for proc in self.procs:
            self._expect(proc, "DONE", call)
        after = cpu_seconds(server_pid)
        client_cpu = sum(_proc_cpu(proc.pid) for proc in self.procs) - cpu0
        self._tell("REPORT")
        errors = 0
        elapsed = 0.0
        latencies: list[float] = []
        for proc in self.procs:
            _, n, e, elapsed_ns = self._expect(proc, "RESULT", call).split()
            lat = [int(x) / 1e6 for x in self._expect(proc, "LAT", call).split()[1:]]
            if len(lat) != int(n):
                raise RuntimeError(f"a JVM load generator reported {n} calls but {len(lat)} latencies")
            errors, elapsed = errors + int(e), max(elapsed, int(elapsed_ns) / 1e9)
            latencies += lat
        return _sample(latencies, errors, elapsed, before, after, client_cpu)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    proc.stdin.write("EXIT\n")
                    proc.stdin.flush()
                    proc.wait(timeout=30)
                except Exception:  # noqa: BLE001 - a client that will not exit is killed below
                    pass
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# ---------------------------------------------------------------- servers


def start_servers(
    which: list[str], workdir: Path, pg_admin: str, our_address: str | None, ref_address: str | None
):
    """Start (or point at) the servers; returns ({name: (host, port)}, {name: pid of servers started here},
    cleanup)."""
    from interop.our_server import start_our_server
    from interop.postgres_db import create_scratch_database, drop_scratch_database
    from interop.reference_hms import PostgresTarget, start_reference_hms

    addresses: dict[str, tuple[str, int]] = {}
    pids: dict[str, int] = {}
    cleanups: list[Callable[[], None]] = []

    def parse(addr: str) -> tuple[str, int]:
        host, _, port = addr.rpartition(":")
        host = host or "127.0.0.1"
        if not (host.startswith("127.") or host in ("localhost", "::1")):
            raise SystemExit(f"{addr}: the benchmark only sends load to loopback addresses")
        return host, int(port)

    try:
        if "reference" in which:
            if ref_address:
                addresses["reference"] = parse(ref_address)
            else:
                db = create_scratch_database(pg_admin, "benchref")
                cleanups.append(lambda db=db: drop_scratch_database(db))
                BENCH_DATABASES.add(db.name)
                print(f"starting the reference HMS 2.3.10 on PostgreSQL database {db.name} ...", flush=True)
                ref = start_reference_hms(
                    workdir / "reference",
                    postgres=PostgresTarget(db.host, db.port, db.name, db.user, db.password),
                )
                cleanups.append(ref.stop)
                addresses["reference"] = ref.address
                pids["reference"] = ref.process.pid
        if "ours" in which:
            if our_address:
                addresses["ours"] = parse(our_address)
            else:
                db = create_scratch_database(pg_admin, "benchours")
                cleanups.append(lambda db=db: drop_scratch_database(db))
                BENCH_DATABASES.add(db.name)
                print(f"starting metastore serve on PostgreSQL database {db.name} ...", flush=True)
                ours = start_our_server(workdir / "ours", db.url)
                cleanups.append(ours.stop)
                addresses["ours"] = ours.address
                pids["ours"] = ours.process.pid
    except BaseException:
        for c in reversed(cleanups):
            c()
        raise

    def cleanup() -> None:
        for c in reversed(cleanups):
            try:
                c()
            except Exception as exc:  # noqa: BLE001 - keep cleaning up the rest
                print(f"cleanup: {exc}", file=sys.stderr)

    return addresses, pids, cleanup


def fmt(x: float, digits: int = 1) -> str:
    return "–" if x != x else f"{x:,.{digits}f}"


def print_table(
    results: dict[str, dict[str, CallResult]], shape: Shape, clients: int, calls: list[str], client: str
) -> None:
    servers = [s for s in ("ours", "reference") if s in results]
    header = ["call"]
    for s in servers:
        header += [f"{s} ops/s", f"{s} p50 ms", f"{s} p99 ms"]
    if len(servers) == 2:
        header.append("ops/s ours/reference")
    rows = []
    for call in calls:
        row = [describe_call(call, shape)]
        for s in servers:
            r = results[s][call]
            row += [fmt(r.ops_per_s), fmt(r.p50_ms), fmt(r.p99_ms)]
            if r.errors:
                row[-3] += f" ({r.errors} errors)"
        if len(servers) == 2:
            ref = results["reference"][call].ops_per_s
            row.append(fmt(results["ours"][call].ops_per_s / ref, 2) + "×" if ref else "–")
        rows.append(row)
    print(
        f"\n{clients} {CLIENT_KINDS[client]}, {platform.node()} ({os.cpu_count()} cores, "
        f"Python {platform.python_version()})"
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if not any(results[s][c].server_cpu_ms == results[s][c].server_cpu_ms for s in servers for c in calls):
        return
    # Where the machine's CPU went, per call: the clients share the cores with the servers and PostgreSQL,
    # so for large replies their decoding bounds what any server can reach here.
    header = ["call"]
    for s in servers:
        header += [f"{s}: server", f"{s}: PostgreSQL", f"{s}: clients"]
    if len(servers) == 2:
        header.append("server + PostgreSQL CPU, reference/ours")
    print("\nCPU ms per call")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for call in calls:
        row = [describe_call(call, shape)]
        for s in servers:
            r = results[s][call]
            row += [fmt(r.server_cpu_ms, 2), fmt(r.db_cpu_ms, 2), fmt(r.client_cpu_ms, 2)]
        if len(servers) == 2:
            ours, ref = results["ours"][call], results["reference"][call]
            mine = ours.server_cpu_ms + ours.db_cpu_ms
            row.append(fmt((ref.server_cpu_ms + ref.db_cpu_ms) / mine, 2) + "×" if mine else "–")
        print("| " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--clients", type=int, default=4, help="clients (connections) per call (default 4)")
    parser.add_argument(
        "--client",
        choices=["python", "jvm"],
        default="python",
        help="python: one process per client, the generated Python client with the C codec (default); "
        "jvm: one JVM process per client, Hive 2.3.10's generated Java client as Spark uses it "
        "(compiled from bench/jvm/HmsLoad.java at run time; needs javac)",
    )
    parser.add_argument(
        "--seconds", type=float, default=30.0, help="load time per call per server, over all rounds (default 30)"
    )
    parser.add_argument(
        "--jvm-warmup",
        type=float,
        default=JVM_WARMUP_S,
        help=f"seconds each JVM client calls before the timed part, for its JIT (default {JVM_WARMUP_S:g})",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="split each call's time into this many rounds, alternating which server goes first (default 3)",
    )
    parser.add_argument("--columns", type=int, default=20, help="bigint columns of the table (default 20)")
    parser.add_argument("--partitions", type=int, default=200, help="partitions of the table (default 200)")
    parser.add_argument("--only", choices=["ours", "reference"], help="run one server only")
    parser.add_argument("--calls", nargs="+", choices=CALLS, default=CALLS, help="which calls to load")
    parser.add_argument(
        "--pg-admin",
        default=os.environ.get(
            "METASTORE_BENCH_PG", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
        ),
        help="PostgreSQL admin URL used to create (and drop) a fresh database per server",
    )
    parser.add_argument(
        "--our-address", help="host:port of a running server of ours (skips starting one; loopback only)"
    )
    parser.add_argument("--reference-address", help="host:port of a running reference HMS (loopback only)")
    args = parser.parse_args(argv)
    if min(args.clients, args.rounds, args.columns, args.partitions) < 1 or args.seconds <= 0:
        parser.error("--clients, --rounds, --seconds, --columns and --partitions must be positive")
    if args.jvm_warmup < 0:
        parser.error("--jvm-warmup cannot be negative")
    if args.seconds > 120:
        parser.error("--seconds is capped at 120 per call per server")
    shape = Shape(args.columns, args.partitions)
    which = [args.only] if args.only else ["ours", "reference"]
    calls = [c for c in CALLS if c in args.calls]

    with tempfile.TemporaryDirectory(prefix="bench-hms-") as tmp:
        addresses, pids, cleanup = start_servers(
            which, Path(tmp), args.pg_admin, args.our_address, args.reference_address
        )
        try:
            jvm_classpath = compile_jvm_client(Path(tmp)) if args.client == "jvm" else None
            results: dict[str, dict[str, CallResult]] = {}
            for server, (host, port) in addresses.items():
                t0 = time.perf_counter()
                set_up(host, port, shape)
                print(
                    f"{server}: set-up of {shape.partitions} partitions × {shape.columns} columns took {time.perf_counter() - t0:.1f} s",
                    flush=True,
                )
            servers = list(addresses)
            for call in calls:
                samples: dict[str, list[Sample]] = {server: [] for server in servers}
                for rnd in range(args.rounds):
                    # Rounds alternate which server goes first, so a slow stretch of this (shared, noisy)
                    # machine falls on both servers rather than on one.
                    for server in servers if rnd % 2 == 0 else servers[::-1]:
                        host, port = addresses[server]
                        pid = pids.get(server)
                        seconds = args.seconds / args.rounds
                        if jvm_classpath:
                            sample = run_call_jvm(
                                jvm_classpath, host, port, call, shape, args.clients, seconds, pid, args.jvm_warmup
                            )
                        else:
                            sample = run_call(host, port, call, shape, args.clients, seconds, pid)
                        samples[server].append(sample)
                for server in servers:
                    r = results.setdefault(server, {})[call] = summarize(samples[server])
                    print(
                        f"  {server:9s} {call:32s} {r.ops_per_s:9.1f} ops/s  p50 {r.p50_ms:8.1f} ms  p99 {r.p99_ms:8.1f} ms"
                        f"  CPU ms/call: server {r.server_cpu_ms:.2f} PostgreSQL {r.db_cpu_ms:.2f} clients {r.client_cpu_ms:.2f}"
                        + (f"  errors {r.errors}" if r.errors else ""),
                        flush=True,
                    )
            print_table(results, shape, args.clients, calls, args.client)
        finally:
            cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
