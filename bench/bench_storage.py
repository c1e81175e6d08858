"""ANALYZE over object storage against the same files on local disk, side by side in one run.

    python bench/bench_storage.py [--rows 4000000] [--partitions 8] [--runs 3] [--write-md]

A partitioned ORC table (pyarrow, zstd, ten columns of the usual kinds; generated once into the user cache
directory) is uploaded to an S3-compatible server started on 127.0.0.1 (moto's standalone server, the one the
tests use: a Python process, far slower per request than a real object store, so the S3 numbers are an upper
bound of the client's overhead). Then, in ``--runs`` interleaved rounds (both sides meet the same machine load;
each line keeps its best time):

1. listing: ``metastore.storage.list_files`` of the table's root (recursive, hidden names skipped);
2. full ANALYZE FOR ALL COLUMNS work: ``analyze_files`` over every file (two worker processes, NDV, no cache);
3. one column (FOR COLUMNS customer): only that column's streams are fetched;
4. footer-only (``scan=False``: counts, nulls, min/max, lengths; no NDV).

Bytes read are what the ORC reader asked for through the storage layer (each read one pread or one ranged GET),
next to the total size of the files: range reads, never whole-file downloads. Prints a table; ``--write-md``
replaces the "ANALYZE on object storage" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import sys
import textwrap
import time
from pathlib import Path

import platformdirs

HIVE_TYPES = {
    "id": "bigint", "customer": "int", "price": "decimal(14,2)", "qty": "int", "discount": "double",
    "status": "string", "note": "string", "ts": "timestamp", "day": "date", "flag": "boolean",
}
SECTION = "ANALYZE on object storage"


def ensure_table(data: Path, rows: int, partitions: int) -> Path:
    """The table's files (one per partition) under ``data``, written by pyarrow unless already there."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.orc as po

    table = data / f"orders_{rows}_{partitions}"
    marker = table / "_GENERATED"
    if marker.exists():
        return table
    started = time.perf_counter()
    per = rows // partitions
    for p in range(partitions):
        ids = np.arange(p * per, (p + 1) * per, dtype=np.int64)
        rng = np.random.default_rng(p)
        discount = rng.random(per)
        note = [None if i % 23 == 0 else f"comment for order {i * 31 % 5000011}" for i in ids.tolist()]
        columns = {
            "id": ids,
            "customer": (ids % 1000003).astype(np.int32),
            "price": pa.array((ids * 7919) % 100000000, pa.int64()).cast(pa.decimal128(19, 0))
            .cast(pa.decimal128(14, 2)),
            "qty": (ids % 50).astype(np.int32),
            "discount": pa.array(discount, mask=(ids % 17 == 0)),
            "status": pa.array(np.array(["NEW", "PAID", "SHIPPED", "DONE", "RETURNED"])[ids % 5]),
            "note": pa.array(note, pa.string()),
            "ts": pa.array((1600000000 + ids * 3) * 1_000_000, pa.timestamp("us")),
            "day": pa.array((18262 + ids % 1500).astype(np.int32), pa.date32()),
            "flag": pa.array(ids % 3 == 0),
        }
        path = table / f"ds=p{p:03d}" / "part-00000.orc"
        path.parent.mkdir(parents=True, exist_ok=True)
        po.write_table(pa.table(columns), path, compression="zstd")
    marker.write_text(f"rows={rows} partitions={partitions}\n")
    print(f"generated {rows:,} rows in {time.perf_counter() - started:.0f} s into {table}", flush=True)
    return table


def load_average() -> str:
    try:
        return "/".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "?"


def machine() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = f"{len(names)} × {names[0]}" if names else platform.machine()
    except OSError:
        cpu = platform.machine()
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        mem = ""
    return f"{cpu}{mem}; Python {platform.python_version()}"


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 2**10:,.0f} KiB"


def write_markdown(section: str, path: Path) -> None:
    """Replace (or append) this benchmark's section of BENCHMARKS.md, leaving the others alone."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^## {re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(section.rstrip("\n") + "\n\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data", type=Path,
                        default=Path(platformdirs.user_cache_dir("metastore", appauthor=False)) / "bench-storage")
    parser.add_argument("--write-md", action="store_true", help=f"write the '{SECTION}' section of BENCHMARKS.md")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "tests"))
    from s3server import start_s3_server

    from metastore import storage
    from metastore.stats.harvest import analyze_files

    load_before = load_average()
    table = ensure_table(args.data, args.rows, args.partitions)
    server = start_s3_server()
    try:
        os.environ.update(server.env())
        bucket = server.new_bucket()
        import fsspec

        fs = fsspec.filesystem("s3")
        local_files = storage.list_files(str(table))
        for ref in local_files:
            fs.put_file(ref.url, f"{bucket}/orders/{Path(ref.url).relative_to(table)}")
        remote_root = f"s3a://{bucket}/orders"
        total = sum(f.size for f in local_files)
        print(f"{len(local_files)} files, {_mib(total)}, uploaded to {server.endpoint}", flush=True)

        best: dict[tuple[str, str], float] = {}
        read: dict[tuple[str, str], int] = {}
        answers: dict[str, object] = {}
        for round_ in range(args.runs):
            for side, location in (("local", str(table)), ("s3", remote_root)):
                started = time.perf_counter()
                files = storage.list_files(location)
                best[(side, "list")] = min(best.get((side, "list"), float("inf")), time.perf_counter() - started)
                for what, columns, scan in (("full", list(HIVE_TYPES), True), ("one", ["customer"], True),
                                            ("footer", list(HIVE_TYPES), False)):
                    started = time.perf_counter()
                    result = analyze_files(files, columns, hive_types=HIVE_TYPES, workers=2, scan=scan)
                    seconds = time.perf_counter() - started
                    best[(side, what)] = min(best.get((side, what), float("inf")), seconds)
                    read[(side, what)] = result.bytes_read
                    if what == "full":
                        answers[side] = {c: (s.num_nulls, getattr(s, "num_dvs", None)) for c, s in result.columns.items()}
                    print(f"round {round_ + 1} {side:5} {what:6} {seconds:6.2f} s, read {_mib(result.bytes_read)}",
                          flush=True)
        assert answers["local"] == answers["s3"], "the object store gave other statistics than local disk"
    finally:
        server.stop()
    load_after = load_average()

    rows = [
        ("listing (recursive)", "list"),
        ("ANALYZE FOR ALL COLUMNS work (NDV, 2 workers)", "full"),
        ("ANALYZE FOR COLUMNS customer (one int column)", "one"),
        ("footer-only (no NDV)", "footer"),
    ]
    lines = ["| run | local disk s | S3 (moto) s | S3 / local | bytes read local | bytes read S3 |", "|---|---|---|---|---|---|"]
    for label, key in rows:
        local_s, s3_s = best[("local", key)], best[("s3", key)]
        lr = _mib(read[("local", key)]) if key != "list" else "—"
        sr = _mib(read[("s3", key)]) if key != "list" else "—"
        lines.append(f"| {label} | {local_s:.3f} | {s3_s:.3f} | {s3_s / local_s:.1f}× | {lr} | {sr} |")
    table_md = "\n".join(lines)
    print(table_md)
    section = (
        f"## {SECTION}\n\n"
        + textwrap.fill(
            f"`python bench/bench_storage.py --rows {args.rows} --partitions {args.partitions} --runs {args.runs}`: "
            f"one ORC table written by pyarrow (zstd; {args.rows:,} rows, {args.partitions} partitions, "
            f"{len(local_files)} files, {_mib(total)}; ten columns), analysed on local disk and, uploaded, in an "
            "S3 server on 127.0.0.1 (moto_server, the tests' server: every ranged GET goes through HTTP, SigV4 "
            "and a Python server, so S3 times are an upper bound of the client's overhead, not AWS latencies). "
            "Best of the interleaved rounds per line; bytes read are what the ORC reader asked the storage layer "
            "for (tail, then only the needed streams), against the files' total size.", 110)
        + "\n\n"
        + textwrap.fill(
            f"{dt.date.today().isoformat()}, {machine()}. Load average (1/5/15 min) before {load_before}, after "
            f"{load_after}: the machine is shared with other work, so absolute numbers are noisy.", 110)
        + "\n\n" + table_md + "\n\n"
        + textwrap.fill(
            f"Both sides gave the same statistics (nulls and NDV of every column); total size {_mib(total)}.", 110)
        + "\n"
    )
    if args.write_md:
        write_markdown(section, root / "BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
