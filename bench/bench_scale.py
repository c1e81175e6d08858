"""Statistics at many partitions (issue 15 §3): our server against the reference Hive Metastore 2.3.10, both on
PostgreSQL, with Hive 2.3.10's generated JVM client (bench/jvm/HmsLoad.java), one client thread per call.

A table of N partitions × C bigint columns (default 30), every partition with statistics for every column. Calls:
get_aggr_stats_for over all N, over 10,000 and over 100 partitions; get_partitions_statistics_req over 10,000 and
over 100; get_partitions_by_filter and get_partition_names on the whole table; the client-decoding floor of
get_partitions_statistics_req (the same JVM client decoding the same reply bytes served from memory); and
update_partition_column_statistics / set_aggr_stats_for (1,000 partitions a batch) each with a reader
(get_aggr_stats_for over 100 partitions) running at the same time. Rounds alternate which server goes first.

Filling. Ours is filled through its Thrift API (add_partitions and set_aggr_stats_for, 1,000 partitions a call),
and that time is reported. The reference is filled through Thrift for its first partition only; the other N-1
partitions are copied from it by SQL in Hive's own schema (PARTITIONS, PARTITION_KEY_VALS, PARTITION_PARAMS, SDS,
SERDES, PART_COL_STATS, and SEQUENCE_TABLE moved past the new ids), with the same values ours gets. Filling the
reference through Thrift takes it about 18 minutes for 20,000 × 20; the SQL copy is only the fixture. The
reference's database also gets Hive's schema-script index PCS_STATS_IDX on PART_COL_STATS (DB_NAME, TABLE_NAME,
COLUMN_NAME, PARTITION_NAME), which `schematool` creates and DataNucleus' autoCreateAll does not.

Before any timing, the answers of both servers are compared (get_aggr_stats_for over all/10,000/100,
get_partitions_statistics_req over 100 and 10,000): the reference as a differential at these sizes.

Stale estimates (ours, --stale): the table is created with 100 partitions, PostgreSQL's ANALYZE runs, autovacuum
is switched off for the bulk add (so no ANALYZE happens behind the measurement's back), the remaining partitions
are added; get_aggr_stats_for over 100 partitions (2 client threads) is timed, then ANALYZE, then timed again.
Autovacuum is switched back on (RESET) before the other calls run.

    python bench/bench_scale.py --partitions 100 --seconds 2          # check the script
    python bench/bench_scale.py --partitions 10000                    # both servers
    python bench/bench_scale.py --partitions 100000 --only ours
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "tests"))

import bench_hms  # noqa: E402
from bench_hms import Sample, Shape, _sample, connect, cpu_seconds, summarize  # noqa: E402
from interop.many_partitions import (  # noqa: E402
    BATCH,
    add_partitions,
    analyze_state,
    create_table,
    differential,
    fill_reference_sql,
    pg_execute,
    set_autovacuum,
)


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# ---------------------------------------------------------------- RSS of a process tree


def tree_rss_mb(pid: int) -> float:
    """Resident memory (MiB) of a process and all its descendants."""
    tree = bench_hms.process_tree(bench_hms._proc_table(), pid)
    total = 0
    for p in tree:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


class RssWatch:
    """Samples a process tree's RSS every 0.25 s in a thread; `mark(label)` records the current value."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self.marks: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.peak = max(self.peak, tree_rss_mb(self.pid))

    def mark(self, label: str) -> float:
        v = tree_rss_mb(self.pid)
        self.peak = max(self.peak, v)
        self.marks[label] = v
        return v

    def reset_peak(self) -> None:
        self.peak = tree_rss_mb(self.pid)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


# ---------------------------------------------------------------- filling


# ---------------------------------------------------------------- JVM sessions


class Session(bench_hms.JvmSession):
    """A JVM client process (HmsLoad session mode) whose RUN takes its own partition count; `start`/`finish`
    split a timed run so two sessions (a writer and a reader) run at the same time."""

    def start(self, call: str, warmup: float, seconds: float, partitions: int) -> None:
        self._tell(f"RUN {call} {warmup:g} {seconds:g} {partitions}")
        self._call = call

    def ready(self) -> None:
        for proc in self.procs:
            self._expect(proc, "READY", self._call)

    def go(self) -> None:
        self._tell("GO")

    def done(self) -> None:
        for proc in self.procs:
            self._expect(proc, "DONE", self._call)

    def report(self) -> tuple[list[float], int, float]:
        self._tell("REPORT")
        errors, elapsed, latencies = 0, 0.0, []
        for proc in self.procs:
            _, n, e, elapsed_ns = self._expect(proc, "RESULT", self._call).split()
            lat = [int(x) / 1e6 for x in self._expect(proc, "LAT", self._call).split()[1:]]
            if len(lat) != int(n):
                raise RuntimeError(f"a JVM load generator reported {n} calls but {len(lat)} latencies")
            errors, elapsed = errors + int(e), max(elapsed, int(elapsed_ns) / 1e9)
            latencies += lat
        return latencies, errors, elapsed


def timed_group(runs: list[tuple[Session, str, int]], warmup: float, seconds: float,
                server_pid: int | None) -> list[Sample]:
    """Run every (session, call, partitions) at the same time; one Sample each (CPU: the whole window)."""
    for sess, call, k in runs:
        sess.start(call, warmup, seconds, k)
    for sess, _, _ in runs:
        sess.ready()
    before = cpu_seconds(server_pid)
    for sess, _, _ in runs:
        sess.go()
    for sess, _, _ in runs:
        sess.done()
    after = cpu_seconds(server_pid)
    out = []
    for sess, _, _ in runs:
        lat, err, elapsed = sess.report()
        out.append(_sample(lat, err, elapsed, before, after, 0.0))
    return out


@dataclass
class Row:
    key: str  # --calls name
    label: str
    call: str
    partitions: int
    reader: bool = False  # with a concurrent reader (writes)


def plan(shape: Shape) -> list[Row]:
    n = shape.partitions
    rows = [Row("aggr-all", f"get_aggr_stats_for, all {n:,} partitions", "get_aggr_stats_for", n)]
    if n > 10_000:
        rows.append(Row("aggr-10000", "get_aggr_stats_for, 10,000 partitions", "get_aggr_stats_for", 10_000))
    if n > 100:
        rows.append(Row("aggr-100", "get_aggr_stats_for, 100 partitions", "get_aggr_stats_for", 100))
    k = min(n, 10_000)
    rows.append(Row("stats-10000", f"get_partitions_statistics_req, {k:,} partitions", "get_partitions_statistics_req", k))
    rows.append(Row("floor", "  client-decoding floor of the above (same JVM client, reply bytes from memory)",
                    "floor:get_partitions_statistics_req", k))
    if n > 100:
        rows.append(Row("stats-100", "get_partitions_statistics_req, 100 partitions", "get_partitions_statistics_req", 100))
    rows.append(Row("names", f"get_partition_names, whole table ({n:,})", "get_partition_names", n))
    rows.append(Row("names-floor", "  client-decoding floor of get_partition_names", "floor:get_partition_names", n))
    rows.append(Row("filter", f"get_partitions_by_filter, whole table ({n:,})", "get_partitions_by_filter", n))
    rows.append(Row("filter-floor", "  client-decoding floor of get_partitions_by_filter",
                    "floor:get_partitions_by_filter", n))
    b = min(n, BATCH)
    rows.append(Row("update", "update_partition_column_statistics (1 partition × all columns), reader running",
                    "update_partition_column_statistics", b, True))
    rows.append(Row("set-aggr", f"set_aggr_stats_for ({b:,} partitions × all columns), reader running",
                    "set_aggr_stats_for", b, True))
    return rows


CALL_KEYS = ["aggr-all", "aggr-10000", "aggr-100", "stats-10000", "floor", "stats-100", "names", "names-floor",
             "filter", "filter-floor", "update", "set-aggr"]


def fmt_ms(x: float) -> str:
    if x != x:
        return "–"
    return f"{x:,.2f}" if x < 10 else f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--partitions", type=int, default=100, help="partitions of the table (default 100)")
    parser.add_argument("--columns", type=int, default=30, help="bigint columns (default 30)")
    parser.add_argument("--seconds", type=float, default=6.0,
                        help="timed seconds per call per server per round (default 6; a call started before the "
                             "end finishes)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per call, alternating the first server (2)")
    parser.add_argument("--warmup", type=float, default=3.0,
                        help="seconds of the same call before each timed read run (JIT, caches; default 3)")
    parser.add_argument("--only", choices=["ours", "reference"], help="run one server only")
    parser.add_argument("--no-stale", dest="stale", action="store_false",
                        help="skip the stale-estimates measurement (ours; needs --partitions > 1,000)")
    parser.add_argument("--no-differential", dest="differential", action="store_false",
                        help="skip comparing both servers' answers")
    parser.add_argument("--pg-admin", default=os.environ.get(
        "METASTORE_BENCH_PG", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"),
        help="PostgreSQL admin URL used to create (and drop) a fresh database per server")
    parser.add_argument("--calls", nargs="+", choices=CALL_KEYS, default=CALL_KEYS,
                        help="which calls to time (default all): " + ", ".join(CALL_KEYS))
    parser.add_argument("--client-heap", default="3g",
                        help="each JVM client's -Xmx (default 3g: a whole-table get_partitions_by_filter reply of "
                             "100,000 partitions decodes to more than 512 MiB of Java objects)")
    parser.add_argument("--reference-heap", default="2g", help="the reference JVM's -Xmx (default 2g)")
    args = parser.parse_args(argv)
    if min(args.partitions, args.columns, args.rounds) < 1 or args.seconds <= 0 or args.warmup < 0:
        parser.error("--partitions, --columns, --rounds and --seconds must be positive")
    if args.columns > 100 or args.partitions > 200_000 or args.seconds > 60:
        parser.error("bounded: --columns ≤ 100, --partitions ≤ 200,000, --seconds ≤ 60")
    shape = Shape(args.columns, args.partitions)
    which = [args.only] if args.only else ["ours", "reference"]

    from interop.our_server import start_our_server
    from interop.postgres_db import create_scratch_database, drop_scratch_database
    from interop.reference_hms import PostgresTarget, start_reference_hms

    from metastore.api.hive_metastore import ttypes as T  # noqa: N812

    print(f"bench_scale: {shape.partitions:,} partitions × {shape.columns} columns, servers {which}; "
          f"load {loadavg()}", flush=True)
    cleanups: list[Callable[[], None]] = []
    results: dict[str, dict[str, Any]] = {s: {} for s in which}
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        try:
            addresses: dict[str, tuple[str, int]] = {}
            pids: dict[str, int] = {}
            urls: dict[str, str] = {}
            for server in which:
                db = create_scratch_database(args.pg_admin, "benchscale" + server[:3])
                cleanups.append(lambda db=db: drop_scratch_database(db))
                urls[server] = db.url
                if server == "reference":
                    print(f"starting the reference HMS 2.3.10 on {db.name} ...", flush=True)
                    ref = start_reference_hms(Path(tmp) / "reference", heap=args.reference_heap,
                                              postgres=PostgresTarget(db.host, db.port, db.name, db.user, db.password))
                    cleanups.append(ref.stop)
                    addresses[server], pids[server] = ref.address, ref.process.pid
                else:
                    print(f"starting metastore serve on {db.name} ...", flush=True)
                    ours = start_our_server(Path(tmp) / "ours", db.url)
                    cleanups.append(ours.stop)
                    addresses[server], pids[server] = ours.address, ours.process.pid
            classpath = bench_hms.compile_jvm_client(Path(tmp))
            rss = RssWatch(pids["ours"]) if "ours" in pids else None
            if rss:
                cleanups.append(rss.stop)
                print(f"ours: RSS after start {rss.mark('start'):.0f} MiB", flush=True)

            # ---- fill
            stale_wanted = "ours" in which and args.stale and shape.partitions > 1_000
            for server in which:
                client, transport = connect(*addresses[server], timeout_s=900)
                try:
                    t0 = time.perf_counter()
                    table = create_table(client, T, shape.columns)
                    if server == "reference":
                        add_partitions(client, T, table, shape.columns, 0, 1)
                        fill_reference_sql(urls[server], shape.partitions, shape.columns)
                        took = time.perf_counter() - t0
                        results[server]["fill"] = f"{took:.1f} s (partition 0 through Thrift, the rest by SQL)"
                    elif stale_wanted:
                        add_partitions(client, T, table, shape.columns, 0, 100)
                        pg_execute(urls[server], ["ANALYZE"])
                        set_autovacuum(urls[server], False)
                        t1 = time.perf_counter()
                        add_partitions(client, T, table, shape.columns, 100, shape.partitions)
                        took = time.perf_counter() - t1
                        results[server]["fill"] = (f"{took:.1f} s for {shape.partitions - 100:,} partitions "
                                                   f"through Thrift (add_partitions + set_aggr_stats_for, "
                                                   f"{BATCH:,} a call)")
                    else:
                        add_partitions(client, T, table, shape.columns, 0, shape.partitions)
                        took = time.perf_counter() - t0
                        results[server]["fill"] = (f"{took:.1f} s through Thrift (add_partitions + "
                                                   f"set_aggr_stats_for, {BATCH:,} a call)")
                finally:
                    transport.close()
                print(f"{server}: filled in {results[server]['fill']}; load {loadavg()}", flush=True)
            if rss:
                print(f"ours: RSS after fill {rss.mark('filled'):.0f} MiB (peak so far {rss.peak:.0f})", flush=True)

            # ---- stale estimates (ours)
            if stale_wanted:
                sess = Session(classpath, *addresses["ours"], shape, 2)
                try:
                    state = analyze_state(urls["ours"])
                    s_before = summarize(timed_group([(sess, "get_aggr_stats_for", 100)], args.warmup,
                                                     args.seconds, pids["ours"]))
                    load_before = loadavg()
                    pg_execute(urls["ours"], ["ANALYZE"])
                    s_after = summarize(timed_group([(sess, "get_aggr_stats_for", 100)], args.warmup,
                                                    args.seconds, pids["ours"]))
                    results["ours"]["stale"] = (s_before, s_after, state, load_before, loadavg())
                    print(f"stale: get_aggr_stats_for over 100, 2 threads: p50 {s_before.p50_ms:.2f} ms before "
                          f"ANALYZE ({state}; load {load_before}), {s_after.p50_ms:.2f} ms after (load {loadavg()})",
                          flush=True)
                finally:
                    sess.close()
                    set_autovacuum(urls["ours"], True)
            else:
                for server in which:
                    if server == "ours":
                        pg_execute(urls[server], ["ANALYZE"])

            # ---- differential
            if args.differential and len(which) == 2:
                results["differential"] = [
                    line for line, _ in differential(addresses, shape.partitions, shape.columns, connect)]
                for line in results["differential"]:
                    print("  differential: " + line, flush=True)

            # ---- timed calls
            heap = [f"-Xmx{args.client_heap}"]  # after HmsLoad's -Xmx512m: the last one counts
            readers = {s: Session(classpath, *addresses[s], shape, 1, jvm_options=heap) for s in which}
            writers = {s: Session(classpath, *addresses[s], shape, 1, jvm_options=heap) for s in which}

            def close_sessions() -> None:
                for x in [*readers.values(), *writers.values()]:
                    x.close()

            cleanups.append(close_sessions)
            rows = [r for r in plan(shape) if r.key in args.calls]
            if rss:
                rss.reset_peak()
                rss.mark("before calls")
            def measure(row: Row, samples: dict[str, list[Sample]], reader_samples: dict[str, list[Sample]],
                        loads: list[str]) -> None:
                # Writes run one round: a reference set_aggr_stats_for of 1,000 partitions takes minutes.
                for rnd in range(1 if row.reader else args.rounds):
                    for server in which if rnd % 2 == 0 else which[::-1]:
                        if row.reader:
                            w, r = timed_group(
                                [(writers[server], row.call, row.partitions),
                                 (readers[server], "get_aggr_stats_for", min(100, shape.partitions))],
                                0.0, args.seconds, pids.get(server))
                            samples[server].append(w)
                            reader_samples[server].append(r)
                        else:
                            (smp,) = timed_group([(readers[server], row.call, row.partitions)], args.warmup,
                                                 args.seconds, pids.get(server))
                            samples[server].append(smp)
                    loads.append(loadavg())

            for row in rows:
                samples: dict[str, list[Sample]] = {s: [] for s in which}
                reader_samples: dict[str, list[Sample]] = {s: [] for s in which}
                loads = [loadavg()]
                try:
                    measure(row, samples, reader_samples, loads)
                except Exception as exc:  # noqa: BLE001 - the row is reported failed, the sessions restarted
                    print(f"  {row.label}: failed: {exc}", flush=True)
                    results.setdefault("failed", {})[row.label] = str(exc).splitlines()[0][:200]
                    close_sessions()
                    readers.update({s: Session(classpath, *addresses[s], shape, 1, jvm_options=heap) for s in which})
                    writers.update({s: Session(classpath, *addresses[s], shape, 1, jvm_options=heap) for s in which})
                    continue
                for server in which:
                    res = summarize(samples[server])
                    rd = summarize(reader_samples[server]) if row.reader else None
                    results[server][row.label] = (res, rd, loads)
                    print(f"  {server:9s} {row.label}: p50 {fmt_ms(res.p50_ms)} ms  p99 {fmt_ms(res.p99_ms)} ms  "
                          f"n={res.ops}" + (f"  errors {res.errors}" if res.errors else "")
                          + (f"  | reader get_aggr_stats_for(100) p50 {fmt_ms(rd.p50_ms)} ms n={rd.ops}"
                             if rd else "") + f"  load {loads[-1]}", flush=True)
            if rss:
                rss.mark("end")
                results["ours"]["rss"] = dict(rss.marks, peak=rss.peak)

            # ---- report
            print(f"\n{shape.partitions:,} partitions × {shape.columns} bigint columns, PostgreSQL, one JVM client "
                  f"thread per call (Hive 2.3.10's generated client); {args.rounds} rounds × {args.seconds:g} s; "
                  f"{os.cpu_count()} cores; load at the end {loadavg()}")
            for server in which:
                print(f"fill, {server}: {results[server]['fill']}")
            header = ["call"] + [f"{s} p50 ms" for s in which]
            if len(which) == 2:
                header.append("reference/ours")
            print("| " + " | ".join(header) + " | load |")
            print("|" + "---|" * (len(header) + 1))
            floors: dict[str, float] = {}
            for row in rows:
                cells = [row.label]
                if any(row.label not in results[s] for s in which):
                    print("| " + row.label + " | failed: " + results["failed"][row.label] + " |")
                    continue
                for s in which:
                    res, rd, loads = results[s][row.label]
                    cells.append(fmt_ms(res.p50_ms) + (f" (reader {fmt_ms(rd.p50_ms)})" if rd else "")
                                 + (f" ({res.errors} errors)" if res.errors else ""))
                    if row.call.startswith("floor:"):
                        floors[s] = res.p50_ms
                if len(which) == 2:
                    o, r = results["ours"][row.label][0].p50_ms, results["reference"][row.label][0].p50_ms
                    cells.append(f"{r / o:.2f}×" if o else "–")
                print("| " + " | ".join(cells) + f" | {loads[0]} → {loads[-1]} |")
            if "ours" in results and "rss" in results["ours"]:
                m = results["ours"]["rss"]
                print(f"ours RSS (MiB, server process tree): start {m['start']:.0f}, after fill {m['filled']:.0f}, "
                      f"before calls {m['before calls']:.0f}, end {m['end']:.0f}, peak during calls {m['peak']:.0f}; "
                      f"growth start→peak {m['peak'] - m['start']:.0f}")
            if "stale" in results.get("ours", {}):
                b, a, state, lb, la = results["ours"]["stale"]
                print(f"stale estimates: get_aggr_stats_for over 100 partitions, 2 threads, p50 {b.p50_ms:.2f} ms "
                      f"right after the bulk add (load {lb}; {state}), {a.p50_ms:.2f} ms after ANALYZE (load {la})")
            for line in results.get("differential", []):
                print("differential: " + line)
            del floors, notes
        finally:
            for c in reversed(cleanups):
                try:
                    c()
                except Exception as exc:  # noqa: BLE001 - keep cleaning up the rest
                    print(f"cleanup: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
