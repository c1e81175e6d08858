"""ORC engine benchmark: metastore.orcio against pyarrow (ORC C++ 2.2) and pyorc (ORC C++ 2.3), side by side.

    python bench/bench_orc.py [--rows 1000000] [--files 1000] [--markdown]

A 1M-row table (bigint sequence, random bigint, double, low- and high-cardinality strings, date, timestamp,
decimal(10,2), boolean; nulls in several columns) is written and read with NONE and ZSTD by each engine; then
statistics-only reads of many small files. Prints one table with throughput and ratios (ours / peer).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import numpy as np

SCHEMA = (
    "struct<seq:bigint,rnd:bigint,dbl:double,low:string,high:string,day:date,ts:timestamp,"
    "amount:decimal(10,2),flag:boolean>"
)


def make_table(rows: int, seed: int = 42) -> dict:
    """Columns as numpy arrays (masked where there are nulls) and string lists."""
    rng = np.random.default_rng(seed)
    nulls = rng.random(rows) < 0.05
    words = [f"category-{i:03d}" for i in range(100)]
    low = [words[i] for i in rng.integers(0, 100, rows)]
    high = [f"user-{v:016x}" for v in rng.integers(0, 2**62, rows)]
    high = [None if m else v for v, m in zip(high, nulls.tolist(), strict=True)]
    ts = np.datetime64("2020-01-01T00:00:00", "us") + rng.integers(0, 10**14, rows).astype("timedelta64[us]")
    return {
        "seq": np.arange(rows, dtype=np.int64),
        "rnd": np.ma.masked_array(rng.integers(-(2**40), 2**40, rows), mask=nulls),
        "dbl": np.ma.masked_array(rng.standard_normal(rows) * 1000, mask=np.roll(nulls, 1)),
        "low": low,
        "high": high,
        "day": np.datetime64("2000-01-01") + rng.integers(0, 10000, rows).astype("timedelta64[D]"),
        "ts": ts,
        "amount": rng.integers(-(10**8), 10**8, rows),  # unscaled cents, turned into decimals per engine
        "flag": np.ma.masked_array(rng.random(rows) < 0.3, mask=np.roll(nulls, 2)),
    }


def _decimal_texts(cents: np.ndarray) -> list[Decimal]:
    return [Decimal(int(c)).scaleb(-2) for c in cents.tolist()]


def to_arrow(table: dict):
    import pyarrow as pa

    def masked(a):
        return pa.array(a.data, mask=np.ma.getmaskarray(a)) if isinstance(a, np.ma.MaskedArray) else pa.array(a)

    arrays = {
        "seq": pa.array(table["seq"]),
        "rnd": masked(table["rnd"]),
        "dbl": masked(table["dbl"]),
        "low": pa.array(table["low"], pa.string()),
        "high": pa.array(table["high"], pa.string()),
        "day": pa.array(table["day"].astype("datetime64[D]"), pa.date32()),
        "ts": pa.array(table["ts"], pa.timestamp("ns")),
        "amount": pa.array(_decimal_texts(table["amount"]), pa.decimal128(10, 2)),
        "flag": masked(table["flag"]),
    }
    return pa.table(arrays)


def to_rows(table: dict) -> list[tuple]:
    """Rows as pyorc takes them."""
    n = len(table["seq"])
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

    def values(name):
        a = table[name]
        if isinstance(a, np.ma.MaskedArray):
            return [None if m else v for v, m in zip(a.data.tolist(), np.ma.getmaskarray(a).tolist(), strict=True)]
        return a.tolist() if isinstance(a, np.ndarray) else a

    days = [dt.date(1970, 1, 1) + dt.timedelta(days=int(d)) for d in table["day"].astype(np.int64)]
    stamps = [epoch + dt.timedelta(microseconds=int(us)) for us in table["ts"].astype(np.int64)]
    cols = [values("seq"), values("rnd"), values("dbl"), table["low"], table["high"], days, stamps,
            _decimal_texts(table["amount"]), values("flag")]
    return list(zip(*cols, strict=True)) if n else []


CLOCK = time.process_time  # CPU seconds of this process: steadier than wall time on a shared machine


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = CLOCK()
        fn()
        times.append(CLOCK() - start)
    return min(times)


def interleaved(fns: list, repeat: int) -> list[float]:
    """Best time of each function, running them in turn so that load spikes hit all of them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = CLOCK()
            fn()
            best[i] = min(best[i], CLOCK() - start)
    return best


def bench_write_read(table: dict, rows: int, tmp: Path, repeat: int) -> list[tuple]:
    arrow = to_arrow(table)
    ours_input = dict(table)
    ours_input["amount"] = _decimal_texts(table["amount"])
    pyorc_rows = to_rows(table)
    results = []
    for codec in ("NONE", "ZSTD"):
        results.extend(_bench_codec(codec, rows, tmp, repeat, ours_input, arrow, pyorc_rows))
    return results


def _bench_codec(codec: str, rows: int, tmp: Path, repeat: int, ours_input: dict, arrow, pyorc_rows) -> list[tuple]:
    import pyarrow.orc as pa_orc
    import pyorc

    from metastore.orcio import OrcReader, OrcWriter

    ours_path, arrow_path, pyorc_path = tmp / f"ours-{codec}.orc", tmp / f"arrow-{codec}.orc", tmp / f"pyorc-{codec}.orc"

    def write_ours():
        with OrcWriter(ours_path, SCHEMA, {"orc.compress": codec}) as w:
            w.write_batch(ours_input)

    def write_arrow():
        pa_orc.write_table(arrow, str(arrow_path), compression="uncompressed" if codec == "NONE" else "zstd")

    def write_pyorc():
        kind = pyorc.CompressionKind.NONE if codec == "NONE" else pyorc.CompressionKind.ZSTD
        with open(pyorc_path, "wb") as f, pyorc.Writer(f, SCHEMA, compression=kind) as w:
            w.writerows(pyorc_rows)

    def read_ours():
        OrcReader(ours_path).read()

    def read_arrow():
        pa_orc.ORCFile(str(arrow_path)).read()

    def read_pyorc():
        with open(pyorc_path, "rb") as f:
            for _ in pyorc.Reader(f):
                pass

    w_ours, w_arrow = interleaved([write_ours, write_arrow], repeat)
    w_pyorc = best_of(write_pyorc, 1)
    r_ours, r_arrow = interleaved([read_ours, read_arrow], repeat)
    r_pyorc = best_of(read_pyorc, 1)
    sizes = (ours_path.stat().st_size, arrow_path.stat().st_size, pyorc_path.stat().st_size)
    return [
        (f"write {codec}", rows, w_ours, w_arrow, w_pyorc, sizes),
        (f"read {codec}", rows, r_ours, r_arrow, r_pyorc, sizes),
    ]


def bench_statistics(files: int, tmp: Path) -> tuple[float, float, float]:
    """Seconds per file to open a small file and get every column's file statistics."""
    import pyarrow.orc as pa_orc
    import pyorc

    from metastore.orcio import OrcReader, OrcWriter

    small = tmp / "small"
    small.mkdir(exist_ok=True)
    table = make_table(200, seed=1)
    inputs = dict(table)
    inputs["amount"] = _decimal_texts(table["amount"])
    paths = []
    for i in range(files):
        path = small / f"f{i}.orc"
        with OrcWriter(path, SCHEMA, {"orc.compress": "ZSTD"}) as w:
            w.write_batch(inputs)
        paths.append(path)
    columns = 10

    def ours():
        for p in paths:
            OrcReader(p).file_statistics  # noqa: B018 - the property parses the statistics

    def with_pyorc():
        for p in paths:
            with open(p, "rb") as f:
                r = pyorc.Reader(f)
                for c in range(columns):
                    r[c].statistics  # noqa: B018

    def with_arrow():
        for p in paths:
            pa_orc.ORCFile(str(p)).reader.serialized_file_tail()

    ours_s, pyorc_s, arrow_s = interleaved([ours, with_pyorc, with_arrow], 3)
    return ours_s / files, pyorc_s / files, arrow_s / files


def machine() -> str:
    import numpy
    import pyarrow

    mem = subprocess.run(["free", "-h"], capture_output=True, text=True).stdout.splitlines()
    total = mem[1].split()[1] if len(mem) > 1 else "?"
    return (
        f"{dt.date.today()}, {os.cpu_count()} cores (nproc {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()}), "
        f"{total} RAM, {platform.machine()}; Python {platform.python_version()}, numpy {numpy.__version__}, "
        f"pyarrow {pyarrow.__version__}, pyorc {__import__('pyorc').__version__}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table for BENCHMARKS.md")
    args = parser.parse_args(argv)
    table = make_table(args.rows)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        results = bench_write_read(table, args.rows, tmp, args.repeat)
        stats = bench_statistics(args.files, tmp)
    print(machine())
    print("CPU seconds, best of the runs, engines interleaved")
    header = "| operation | ours (s) | pyarrow (s) | pyorc (s) | ours Mrows/s | pyarrow / ours | pyorc / ours | file MB (ours/arrow/pyorc) |"
    print(header)
    print("|" + "---|" * 8)
    for name, rows, ours, arrow, orc, sizes in results:
        mb = "/".join(f"{s / 1e6:.1f}" for s in sizes)
        # ratios as "ours speed relative to peer": peer time / our time
        print(f"| {name} | {ours:.3f} | {arrow:.3f} | {orc:.3f} | {rows / ours / 1e6:.2f} | "
              f"{arrow / ours:.2f}x | {orc / ours:.2f}x | {mb} |")
    ours_s, pyorc_s, arrow_s = stats
    print(f"| file statistics, {args.files} small files | {ours_s * 1e3:.3f} ms/file | {arrow_s * 1e3:.3f} ms/file "
          f"(tail only) | {pyorc_s * 1e3:.3f} ms/file | | {arrow_s / ours_s:.2f}x | {pyorc_s / ours_s:.2f}x | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
