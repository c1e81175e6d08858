"""Server CPU per call of already-running servers, one call kind at a time from one client, interleaved.

Wall-clock throughput on a shared 2-core machine moves with whatever else runs; the CPU a server spends per call
moves much less. For each server given as NAME=HOST:PORT:PID:DATABASE (PID: the `metastore serve` parent, whose
process tree is counted; DATABASE: the PostgreSQL database it serves, whose backends are counted), this runs N
calls of one kind from one Python client (the generated client, accelerated codec) and reads, from /proc, the
utime+stime of the server's process tree and of the PostgreSQL backends serving that database before and after.
Servers are measured in turn, round after round, alternating which goes first.

    python bench/percall_cpu.py --setup base=127.0.0.1:19301:1234:ab_base new=127.0.0.1:19302:1235:ab_new
    python bench/percall_cpu.py --calls 3000 --rounds 6 base=... new=...

Every request goes to a loopback address; every loop is bounded by --calls and --rounds.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_hms  # the benchmark's set-up, requests and /proc readers, reused as they are


def _backends(table: dict[int, tuple[int, str, float]], database: str) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL client backend serving `database`."""
    out = {}
    for pid, (_, comm, cpu) in table.items():
        if not comm.startswith("postgres"):
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                words = f.read().replace(b"\0", b" ").decode("utf-8", "replace").split()
        except OSError:
            continue
        if words and words[0] == "postgres:" and database in words[1:4]:
            out[pid] = cpu
    return out


def snapshot(pid: int, database: str) -> tuple[float, dict[int, float]]:
    table = bench_hms._proc_table()
    tree = bench_hms.process_tree(table, pid)
    return sum(table[p][2] for p in tree if p in table), _backends(table, database)


def callgrind_instructions(pid: int, zero: bool) -> float:
    """Zero (before) or dump and read (after) the instruction count of a server running under
    `valgrind --tool=callgrind --callgrind-out-file=DIR/cg.%p` (callgrind_control talks to it)."""
    if zero:
        subprocess.run(["callgrind_control", "-z", str(pid)], check=True, capture_output=True, timeout=600)
        return 0.0
    out = subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True, text=True,
                         timeout=600)
    del out
    dumps = sorted(glob.glob(f"{CALLGRIND_DIR}/**/cg.{pid}.*", recursive=True), key=os.path.getmtime)
    with open(dumps[-1]) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return float(line.split()[1])
    raise RuntimeError(f"no totals in {dumps[-1]}")


CALLGRIND_DIR = "."


def measure(address: tuple[str, int], pid: int, database: str, call: str, calls: int,
            callgrind: bool = False) -> dict[str, float]:
    shape = bench_hms.Shape(columns=20, partitions=200)
    client, transport = bench_hms.connect(*address)
    try:
        op = bench_hms.request_for(call, shape, 0)
        for _ in range(20):  # warm-up: the connection, prepared statements, caches of the first calls
            op(client)
        time.sleep(0.2)  # let the clock-tick accounting of the warm-up settle
        if callgrind:
            callgrind_instructions(pid, zero=True)
        s0, pg0 = snapshot(pid, database)
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(calls):
            op(client)
        c1, w1 = time.process_time(), time.perf_counter()
        time.sleep(0.2)
        s1, pg1 = snapshot(pid, database)
        instructions = callgrind_instructions(pid, zero=False) if callgrind else float("nan")
    finally:
        transport.close()
    pg = sum(cpu - pg0.get(p, 0.0) for p, cpu in pg1.items())
    return {
        "server_ms": (s1 - s0) * 1000 / calls,
        "pg_ms": pg * 1000 / calls,
        "client_ms": (c1 - c0) * 1000 / calls,
        "wall_ms": (w1 - w0) * 1000 / calls,
        "instructions": instructions / calls,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("servers", nargs="+", help="NAME=HOST:PORT:PID:DATABASE")
    ap.add_argument("--call", action="append", choices=bench_hms.CALLS, help="call kinds (default: all five)")
    ap.add_argument("--calls", type=int, default=2000, help="calls per sample (default 2000)")
    ap.add_argument("--rounds", type=int, default=5, help="samples per server and call (default 5)")
    ap.add_argument("--setup", action="store_true", help="create bench_hms's table on each (fresh) server first")
    ap.add_argument("--callgrind", metavar="DIR", help="the servers run under callgrind writing to DIR (their "
                    "--callgrind-out-file=DIR/.../cg.%%p): also count the server's instructions per call (PID: the "
                    "process serving the connections, i.e. --workers 1)")
    args = ap.parse_args(argv)
    global CALLGRIND_DIR
    if args.callgrind:
        CALLGRIND_DIR = args.callgrind
    servers = []
    for spec in args.servers:
        name, _, rest = spec.partition("=")
        host, port, pid, database = rest.split(":")
        if not host.startswith("127."):
            raise SystemExit(f"{spec}: loopback addresses only")
        servers.append((name, (host, int(port)), int(pid), database))
    if args.setup:
        for _, address, _, _ in servers:
            bench_hms.set_up(*address, bench_hms.Shape(columns=20, partitions=200))
    calls = args.call or bench_hms.CALLS
    for call in calls:
        results: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in servers}
        for r in range(args.rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            for name, address, pid, database in order:
                with open("/proc/loadavg") as f:
                    load = float(f.read().split()[0])
                sample = measure(address, pid, database, call, args.calls, callgrind=bool(args.callgrind))
                sample["load"] = load
                results[name].append(sample)
                print(json.dumps({"call": call, "server": name, "round": r, **sample}), flush=True)
        for name, samples in results.items():
            keys = ("server_ms", "pg_ms", "wall_ms", "instructions")
            med = {k: statistics.median(s[k] for s in samples) for k in keys}
            print(
                f"SUMMARY {call:32s} {name:6s} instr {med['instructions']:,.0f}  "
                f"server {med['server_ms']:.4f} ms  pg {med['pg_ms']:.4f} ms  "
                f"wall {med['wall_ms']:.3f} ms  (median of {len(samples)}; min server "
                f"{min(s['server_ms'] for s in samples):.4f})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
