"""What security costs: our server's throughput over TLS and over Kerberos (SASL GSSAPI) against plaintext, and
against the reference Hive Metastore 2.3.10 in plaintext, with JVM clients (Hive 2.3.10's generated client, as
Spark), side by side in one run.

Three `metastore serve` processes share one fresh PostgreSQL database (same data, set up once): one plaintext, one
TLS-only (a test CA made with openssl, trusted through a keytool JKS truststore, as hive.metastore.use.SSL), one
Kerberos-only (an MIT KDC of this run on 127.0.0.1, a keytab made with kadmin.local, the clients' ticket from
kinit; QOP auth, Hadoop's default). The reference HMS 2.3.10 (pyspark's jars) runs plaintext on a second fresh
PostgreSQL database with the same data, so "our secured server against the reference" is measured in the same
run rather than inferred from another day's numbers.

Each mode gets its own long-lived JVM clients (one process and one connection each), connected once, as Spark's
driver keeps its metastore connection: handshakes and the clients' JIT compilation happen before any timing
(every call runs untimed first, --jit-warmup). Each call then runs for a fixed time from all clients of a mode,
in rounds that rotate which mode goes first. Prints how each of our servers spread the clients' connections over
its worker processes (an uneven split, e.g. 3 and 1, serves the cheap calls markedly slower), then ops/s, p50/p99,
the ratio of each mode to our plaintext server (over all rounds, and round by round) and to the reference per
call, and the server's and clients' CPU per call. Every request goes to 127.0.0.1 only; every loop is bounded in
time and count.

    python bench/bench_security.py                    # 4 JVM clients, 3 rounds of 10 s per call per mode
    python bench/bench_security.py --modes plain tls kerberos      # without the reference
    python bench/bench_security.py --seconds 15 --calls get_table_statistics_req
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_hms  # noqa: E402 - the shared load machinery (after the path set-up above)

MODES = ["plain", "tls", "kerberos", "reference"]
OURS = ["plain", "tls", "kerberos"]
TRUSTSTORE_PASSWORD = "bench-truststore"  # protects only a CA certificate made by this run


def start_modes(workdir: Path, db_url: str, modes: list[str], workers: int,
                reference_db: object = None) -> tuple[dict, dict, list]:
    """Start one server per mode on `db_url` (the reference on `reference_db`, a scratch PostgreSQL database);
    returns ({mode: server with .port and .process}, {mode: (jvm options, env)}, cleanups)."""
    from interop.reference_hms import PostgresTarget, start_reference_hms
    from server.harness import start_server
    from server.kdc import start_kdc
    from server.test_tls import make_pki

    servers: dict = {}
    clients: dict = {}
    cleanups: list = []
    try:
        if "plain" in modes:
            servers["plain"] = start_server(workdir / "plain", db_url, workers=workers)
            cleanups.append(servers["plain"].stop)
            clients["plain"] = ([], {})
        if "tls" in modes:
            pki = make_pki(workdir / "pki")
            truststore = workdir / "truststore.jks"
            subprocess.run(
                ["keytool", "-importcert", "-noprompt", "-alias", "bench-ca", "-file", str(pki.ca), "-keystore",
                 str(truststore), "-storetype", "JKS", "-storepass", TRUSTSTORE_PASSWORD],
                check=True, capture_output=True, timeout=60,
            )
            servers["tls"] = start_server(
                workdir / "tls", db_url, workers=workers,
                extra_args=["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)],
            )
            cleanups.append(servers["tls"].stop)
            clients["tls"] = ([f"-Dhms.truststore={truststore}", f"-Dhms.truststore.password={TRUSTSTORE_PASSWORD}"],
                              {})
        if "kerberos" in modes:
            kdc = start_kdc(workdir / "kdc")
            cleanups.append(kdc.stop)
            kdc.add_principal("metastore/localhost")
            kdc.add_principal("bench")
            keytab = kdc.keytab("metastore/localhost", workdir / "metastore.keytab")
            user_env = kdc.kinit("bench", kdc.keytab("bench", workdir / "bench.keytab"), workdir / "bench.cc")
            servers["kerberos"] = start_server(
                workdir / "kerberos", db_url, workers=workers,
                extra_args=["--authentication", "kerberos", "--kerberos-keytab", str(keytab),
                            "--kerberos-principal", f"metastore/_HOST@{kdc.realm}"],
                env={"KRB5_CONFIG": str(kdc.krb5_conf)},
            )
            cleanups.append(servers["kerberos"].stop)
            clients["kerberos"] = (
                [f"-Djava.security.krb5.conf={kdc.krb5_conf}", "-Djavax.security.auth.useSubjectCredsOnly=false",
                 "-Dhms.sasl.service=metastore", "-Dhms.sasl.host=localhost"],
                user_env,
            )
        if "reference" in modes:
            assert reference_db is not None
            db = reference_db
            print(f"starting the reference HMS 2.3.10 on PostgreSQL database {db.name} ...", flush=True)
            ref = start_reference_hms(workdir / "reference",
                                      postgres=PostgresTarget(db.host, db.port, db.name, db.user, db.password))
            cleanups.append(ref.stop)
            servers["reference"] = _Started(ref.address[1], ref.process)
            clients["reference"] = ([], {})
    except BaseException:
        for c in reversed(cleanups):
            c()
        raise
    return servers, clients, cleanups


@dataclass(frozen=True)
class _Started:
    """A server as the load loop needs it: its port and its process (for CPU accounting)."""

    port: int
    process: subprocess.Popen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--clients", type=int, default=4, help="JVM clients (connections) per call (default 4)")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="load time per call per mode, over all rounds (default 30, at most 120)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per call, rotating the order (default 3)")
    parser.add_argument("--jit-warmup", type=float, default=10.0,
                        help="seconds each call runs on every mode's clients once, untimed, before the first timed "
                        "run: the clients' JIT compiles here (default 10)")
    parser.add_argument("--jvm-warmup", type=float, default=2.0,
                        help="seconds each client calls before each timed run of a call (default 2)")
    parser.add_argument("--columns", type=int, default=20, help="bigint columns of the table (default 20)")
    parser.add_argument("--partitions", type=int, default=200, help="partitions of the table (default 200)")
    parser.add_argument("--workers", type=int, default=max(2, os.cpu_count() or 2),
                        help="worker processes per server (default: one per core, at least 2, as serve)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=MODES, help="which servers to load")
    parser.add_argument("--calls", nargs="+", choices=bench_hms.CALLS, default=bench_hms.CALLS)
    parser.add_argument("--pg-admin", default=os.environ.get(
        "METASTORE_BENCH_PG", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"),
        help="PostgreSQL admin URL used to create (and drop) the database the servers share")
    args = parser.parse_args(argv)
    if min(args.jit_warmup, args.jvm_warmup) < 0:
        parser.error("--jit-warmup and --jvm-warmup cannot be negative")
    if min(args.clients, args.rounds, args.columns, args.partitions, args.workers) < 1 or not 0 < args.seconds <= 120:
        parser.error("--clients, --rounds, --columns, --partitions, --workers must be positive; --seconds in (0, 120]")
    if "plain" not in args.modes:
        parser.error("--modes must include plain: the other modes are compared with it")
    shape = bench_hms.Shape(args.columns, args.partitions)
    calls = [c for c in bench_hms.CALLS if c in args.calls]
    modes = [m for m in MODES if m in args.modes]

    from interop.postgres_db import create_scratch_database, drop_scratch_database

    db = create_scratch_database(args.pg_admin, "benchsec")
    ref_db = create_scratch_database(args.pg_admin, "benchsecref") if "reference" in modes else None
    try:
        with tempfile.TemporaryDirectory(prefix="bench-security-") as tmp:
            work = Path(tmp)
            subprocess.run([str(Path(sys.executable).with_name("metastore")), "db", "upgrade", "--db", db.url],
                           check=True, capture_output=True, timeout=120)
            servers, client_opts, cleanups = start_modes(work, db.url, modes, args.workers, ref_db)
            sessions: dict[str, bench_hms.JvmSession] = {}
            try:
                classpath = bench_hms.compile_jvm_client(work)
                for name in ("plain", "reference"):
                    if name not in servers:
                        continue
                    t0 = time.perf_counter()
                    bench_hms.set_up("127.0.0.1", servers[name].port, shape)
                    shared = f" (one database for our {len([m for m in modes if m in OURS])} servers)" \
                        if name == "plain" else ""
                    print(f"{name}: set-up of {shape.partitions} partitions x {shape.columns} columns took "
                          f"{time.perf_counter() - t0:.1f} s{shared}", flush=True)
                # Long-lived clients per mode, connected once (handshakes included), then every call once
                # untimed so the clients' JIT has compiled what the timed runs execute.
                for mode in modes:
                    options, env = client_opts[mode]
                    sessions[mode] = bench_hms.JvmSession(classpath, "127.0.0.1", servers[mode].port, shape,
                                                          args.clients, jvm_options=options, env=env)
                for mode in modes:
                    if mode in OURS:
                        split = connections_per_worker(servers[mode].process.pid, servers[mode].port)
                        print(f"{mode}: connections per worker process {split}", flush=True)
                t0 = time.perf_counter()
                for call in calls:
                    for mode in modes:
                        sessions[mode].run(call, args.jit_warmup, 0.5, None)
                print(f"JIT warm-up of the clients: {time.perf_counter() - t0:.0f} s", flush=True)
                results: dict[str, dict[str, bench_hms.CallResult]] = {m: {} for m in modes}
                loads: list[float] = [os.getloadavg()[0]]
                for call in calls:
                    samples: dict[str, list] = {m: [] for m in modes}
                    for rnd in range(args.rounds):
                        # Rotate which mode goes first, so a slow stretch of this shared machine falls on all.
                        order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
                        for mode in order:
                            samples[mode].append(sessions[mode].run(
                                call, args.jvm_warmup, args.seconds / args.rounds, servers[mode].process.pid))
                            loads.append(os.getloadavg()[0])
                    for mode in modes:
                        r = results[mode][call] = bench_hms.summarize(samples[mode])
                        print(f"  {mode:9s} {call:32s} {r.ops_per_s:9.1f} ops/s  p50 {r.p50_ms:7.1f} ms  "
                              f"p99 {r.p99_ms:7.1f} ms  CPU ms/call: server {r.server_cpu_ms:.2f} "
                              f"clients {r.client_cpu_ms:.2f}"
                              + (f"  errors {r.errors}" if r.errors else ""), flush=True)
                    # Each round's ratio to plaintext: how much of a ratio the machine's minute-to-minute changes
                    # can move (the rounds of one call run back to back, all modes in each).
                    for mode in modes:
                        if mode == "plain":
                            continue
                        per_round = [_ops(s) / _ops(p) if _ops(p) else float("nan")
                                     for s, p in zip(samples[mode], samples["plain"], strict=True)]
                        print(f"    {mode}/plain by round: " + " ".join(f"{x:.2f}" for x in per_round), flush=True)
                print_table(results, modes, calls, shape, args, loads)
                for mode, server in servers.items():
                    output = getattr(server, "output", "")
                    refused = [ln for ln in output.splitlines() if "failed, closing" in ln]
                    if refused:
                        print(f"{mode}: {len(refused)} refused connections, e.g. {refused[0]}")
            finally:
                for session in sessions.values():
                    session.close()
                for c in reversed(cleanups):
                    c()
    finally:
        drop_scratch_database(db)
        if ref_db is not None:
            drop_scratch_database(ref_db)
    return 0


def connections_per_worker(server_pid: int, port: int) -> list[int]:
    """Established connections to `port` held by each worker process of the server `server_pid` (Linux /proc)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":  # local port, ESTABLISHED
                inodes.add(fields[9])
    table = bench_hms._proc_table()
    workers = sorted(bench_hms.process_tree(table, server_pid) - {server_pid})
    counts = []
    for pid in workers:
        held = 0
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    held += 1
        except OSError:
            continue
        counts.append(held)
    return counts


def _ops(sample: bench_hms.Sample) -> float:
    return len(sample.latencies) / sample.elapsed if sample.elapsed else 0.0


def print_table(results: dict, modes: list[str], calls: list[str], shape: bench_hms.Shape,
                args: argparse.Namespace, loads: list[float]) -> None:
    ours = [m for m in modes if m in OURS]
    secured = [m for m in ours if m != "plain"]
    header = ["call"] + [f"{m} ops/s" for m in modes] + [f"{m} p50 ms" for m in modes]
    header += [f"{m}/plain" for m in secured]
    if "reference" in modes:
        header += [f"{m}/reference" for m in ours]
    header += [f"{m} server CPU ms/call" for m in modes]
    header += [f"{m} clients CPU ms/call" for m in modes]
    print(f"\n{args.clients} JVM clients (Hive 2.3.10's generated client), {args.seconds:g} s per call per mode in "
          f"{args.rounds} rounds, {time.strftime('%Y-%m-%d %H:%M')}, {platform.node()} ({os.cpu_count()} cores), "
          f"1-minute load average {min(loads):.2f} to {max(loads):.2f} (mean {sum(loads) / len(loads):.2f})")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for call in calls:
        row = [bench_hms.describe_call(call, shape)]
        row += [bench_hms.fmt(results[m][call].ops_per_s) for m in modes]
        row += [bench_hms.fmt(results[m][call].p50_ms, 2) for m in modes]
        base = results["plain"][call].ops_per_s
        row += [bench_hms.fmt(results[m][call].ops_per_s / base, 2) if base else "–" for m in secured]
        if "reference" in modes:
            ref = results["reference"][call].ops_per_s
            row += [bench_hms.fmt(results[m][call].ops_per_s / ref, 2) + "×" if ref else "–" for m in ours]
        row += [bench_hms.fmt(results[m][call].server_cpu_ms, 2) for m in modes]
        row += [bench_hms.fmt(results[m][call].client_cpu_ms, 2) for m in modes]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(main())
