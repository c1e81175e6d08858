"""What composing Spark's statistics properties costs get_table: our server with the composition on (the default)
against the same server with METASTORE_SPARK_STATISTICS=false, JVM clients (Hive 2.3.10's generated client, as
Spark's), side by side in one run.

Both servers share one fresh PostgreSQL database: bench_hms's table (20 bigint columns, table and partition
statistics). With --kll (the default) every table-level statistic also carries a KLL sketch of 10,000 values, so
get_table composes a Spark histogram for each of the 20 columns: the most a read composes. Rounds alternate which
server goes first. Prints ops/s, p50/p99, the ratio off/on and the server's CPU per call, and an in-process
timing of the composition alone (spark_view on an already read table). Every request goes to 127.0.0.1 only.

    python bench/bench_spark_view.py                 # 4 JVM clients, 3 rounds of 10 s per server
    python bench/bench_spark_view.py --no-kll --seconds 15
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_hms  # noqa: E402 - the shared load machinery (after the path set-up above)

MODES = ["on", "off"]


def add_kll(port: int, shape: bench_hms.Shape) -> None:
    """Table-level statistics of every column with a KLL sketch (what ANALYZE --histograms writes)."""
    import numpy as np

    from metastore.api.hive_metastore import ttypes as T  # noqa: N812 - as bench_hms names it
    from metastore.stats.kll import histogram_for
    from metastore.stats.model import StatsKind

    client, transport = bench_hms.connect("127.0.0.1", port)
    try:
        rng = np.random.default_rng(3)
        objs = []
        for i, name in enumerate(shape.column_names):
            values = rng.integers(-i, 1000 * (i + 1), 10_000)
            data = T.LongColumnStatsData(lowValue=int(values.min()), highValue=int(values.max()), numNulls=0,
                                         numDVs=len(np.unique(values)),
                                         histogram=histogram_for(StatsKind.LONG, values))
            objs.append(T.ColumnStatisticsObj(colName=name, colType="bigint",
                                              statsData=T.ColumnStatisticsData(longStats=data)))
        client.update_table_column_statistics(T.ColumnStatistics(
            statsDesc=T.ColumnStatisticsDesc(isTblLevel=True, dbName=bench_hms.DB, tableName=bench_hms.TABLE),
            statsObj=objs))
        table = client.get_table(bench_hms.DB, bench_hms.TABLE)
        histograms = [k for k in table.parameters if k.endswith(".histogram")]
        if len(histograms) != shape.columns:
            raise RuntimeError(f"get_table composed {len(histograms)} histograms, expected {shape.columns}")
    finally:
        transport.close()


def time_composition(db_url: str, rounds: int = 200) -> tuple[float, float]:
    """Microseconds per get_table in process, composition on and off (same store, interleaved)."""
    from metastore.service.catalog import CatalogService
    from metastore.store import Store

    store = Store(db_url)
    on = CatalogService(store, "/tmp/unused-warehouse", spark_statistics=True)
    off = CatalogService(store, "/tmp/unused-warehouse", spark_statistics=False)
    spent = {True: 0.0, False: 0.0}
    for i in range(rounds * 2):
        service = on if i % 2 == 0 else off
        t0 = time.perf_counter()
        service.get_table(bench_hms.DB, bench_hms.TABLE)
        spent[service.spark_statistics] += time.perf_counter() - t0
    return spent[True] / rounds * 1e6, spent[False] / rounds * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--clients", type=int, default=4, help="JVM clients (connections) per server (default 4)")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="load time per server, over all rounds (default 30, at most 120)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating the order (default 3)")
    parser.add_argument("--jvm-warmup", type=float, default=bench_hms.JVM_WARMUP_S,
                        help=f"seconds each JVM client calls before the timed part (default {bench_hms.JVM_WARMUP_S:g})")
    parser.add_argument("--columns", type=int, default=20, help="bigint columns of the table (default 20)")
    parser.add_argument("--partitions", type=int, default=20, help="partitions of the table (default 20)")
    parser.add_argument("--kll", action=argparse.BooleanOptionalAction, default=True,
                        help="KLL sketches on the table's statistics, so every read composes histograms (default on)")
    parser.add_argument("--workers", type=int, default=max(2, os.cpu_count() or 2),
                        help="worker processes per server (default: one per core, at least 2, as serve)")
    parser.add_argument("--pg-admin", default=os.environ.get(
        "METASTORE_BENCH_PG", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"),
        help="PostgreSQL admin URL used to create (and drop) the database the servers share")
    args = parser.parse_args(argv)
    if min(args.clients, args.rounds, args.columns, args.partitions, args.workers) < 1 or not 0 < args.seconds <= 120:
        parser.error("--clients, --rounds, --columns, --partitions, --workers must be positive; --seconds in (0, 120]")
    shape = bench_hms.Shape(args.columns, args.partitions)

    from interop.postgres_db import create_scratch_database, drop_scratch_database
    from server.harness import start_server

    db = create_scratch_database(args.pg_admin, "benchsview")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-spark-view-") as tmp:
            work = Path(tmp)
            subprocess.run([str(Path(sys.executable).with_name("metastore")), "db", "upgrade", "--db", db.url],
                           check=True, capture_output=True, timeout=120)
            servers = {
                "on": start_server(work / "on", db.url, workers=args.workers),
                "off": start_server(work / "off", db.url, workers=args.workers,
                                    env={"METASTORE_SPARK_STATISTICS": "false"}),
            }
            try:
                classpath = bench_hms.compile_jvm_client(work)
                bench_hms.set_up("127.0.0.1", servers["on"].port, shape)
                if args.kll:
                    add_kll(servers["on"].port, shape)
                samples: dict[str, list] = {m: [] for m in MODES}
                for rnd in range(args.rounds):
                    for mode in (MODES if rnd % 2 == 0 else MODES[::-1]):
                        samples[mode].append(bench_hms.run_call_jvm(
                            classpath, "127.0.0.1", servers[mode].port, "get_table", shape, args.clients,
                            args.seconds / args.rounds, servers[mode].process.pid, args.jvm_warmup,
                        ))
                results = {m: bench_hms.summarize(samples[m]) for m in MODES}
                on_us, off_us = time_composition(db.url)
            finally:
                for server in servers.values():
                    server.stop()
    finally:
        drop_scratch_database(db)

    load = os.getloadavg()
    print(f"\n{time.strftime('%Y-%m-%d %H:%M')}, {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}; get_table of a "
          f"{shape.columns}-column table with {'KLL sketches' if args.kll else 'statistics, no sketches'}, "
          f"{args.clients} JVM clients, {args.rounds} rounds of {args.seconds / args.rounds:g} s per server\n")
    print("| composition | ops/s | p50 ms | p99 ms | server CPU ms/call |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        r = results[mode]
        print(f"| {mode} | {r.ops_per_s:,.1f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | {r.server_cpu_ms:.2f} |")
    on, off = results["on"], results["off"]
    print(f"\nops/s off/on: {off.ops_per_s / on.ops_per_s:.2f}×; server CPU per call on/off: "
          f"{on.server_cpu_ms / off.server_cpu_ms:.2f}×; in process get_table: {on_us:.0f} µs on, {off_us:.0f} µs off")
    return 0


if __name__ == "__main__":
    sys.exit(main())
