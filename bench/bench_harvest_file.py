"""One file's harvest, CPU seconds: this tree against another revision, and the decimal column's scale stream.

    python bench/bench_harvest_file.py [--baseline main] [--rounds 3] [--data DIR]

On the Spark-written table of bench_analyze_cli.py (4,000,000 rows, 8 partitions, two 250,000-row files per
partition; written by Spark first if ``DIR`` lacks it), for its first four files:

1. the decode of the decimal column's SECONDARY (scale) stream, ORC Java's per-value trimmed scales: about
   100,000 RLE v2 runs of 1-4 values per file (CPU ms per stream, the best of 15);
2. ``analyze_file`` of the decimal column alone and of every column (NDV wanted, as ANALYZE ... FOR ALL COLUMNS;
   CPU ms per file, the best of 5), with malloc's default settings and with the harvest workers' ones
   (:func:`metastore.stats.harvest.allocator.keep_freed_memory`).

The baseline is the revision's ``metastore`` package exported with ``git archive`` into a temporary directory;
each measurement runs in a fresh process, baseline and this tree alternating in ``--rounds`` rounds. CPU time
(``time.thread_time``) is steadier than wall time on a shared machine; the load average is printed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import platformdirs

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import glob, os, sys, time
root, mode, table, bench = sys.argv[1:5]
sys.path.insert(0, root)
sys.path.insert(0, bench)
if mode == "kept":
    import ctypes
    libc = ctypes.CDLL(None)
    assert libc.mallopt(-3, 32 << 20) and libc.mallopt(-1, 64 << 20)  # what keep_freed_memory sets
from metastore.orcio import OrcReader
from metastore.orcio import _rle as rle
from metastore.stats.harvest.scan import ColumnSpec, ScanOptions, analyze_file
assert analyze_file.__code__.co_filename.startswith(root), analyze_file.__code__.co_filename
from bench_analyze import HIVE_TYPES
files = sorted(glob.glob(table + "/ds=*/*.orc"))[:4]
streams = []
for f in files:
    reader = OrcReader(f)
    node = reader.schema.children[list(reader.schema.field_names).index("price")]
    for s in range(len(reader.stripes)):
        streams.append((bytes(reader._stripe_streams(s).stream(node.id, 5).data), reader.stripes[s].number_of_rows))
def cpu(fn, reps):
    best = float("inf")
    for _ in range(reps):
        t = time.thread_time(); fn(); best = min(best, time.thread_time() - t)
    return best
decode = cpu(lambda: [rle.decode_int_rle_v2(d, n, True) for d, n in streams], 15) / len(streams)
opts = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
out = [f"{decode * 1e3:.2f}"]
for only in ("price", None):
    specs = tuple(ColumnSpec(nm, t, i) for i, (nm, t) in enumerate(HIVE_TYPES.items()) if only in (None, nm))
    def run():
        for f in files:
            st = os.stat(f)
            analyze_file(f, st.st_size, st.st_mtime_ns, specs, opts)
    out.append(f"{cpu(run, 5) / len(files) * 1e3:.1f}")
print(" ".join(out))
"""


def _measure(root: Path, mode: str, table: Path) -> list[float]:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(root), mode, str(table), str(REPO / "bench")],
                          capture_output=True, text=True, check=True)
    return [float(x) for x in done.stdout.split()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the best is reported)")
    parser.add_argument("--data", type=Path, default=None, help="where bench_analyze_cli.py keeps its tables")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "bench"))
    import bench_analyze_cli as cli  # the table and its generator

    data = args.data or Path(platformdirs.user_cache_dir("metastore", appauthor=False)) / "bench-analyze"
    table = data / "orders2_4000000_8"
    if not (table / "_GENERATED").exists():
        spark = cli._spark(tempfile.mkdtemp(prefix="bench-harvest-file-"))
        try:
            table = cli.ensure_table(spark, data, 4_000_000, 8)
        finally:
            spark.stop()
    with tempfile.TemporaryDirectory(prefix="bench-harvest-baseline-") as base:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.baseline, "metastore"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", base], input=archive, check=True)
        lines = [(f"{args.baseline}, malloc defaults", Path(base), "default"),
                 ("this tree, malloc defaults", REPO, "default"),
                 ("this tree, freed memory kept (harvest workers)", REPO, "kept")]
        results: dict[str, list[list[float]]] = {label: [] for label, _, _ in lines}
        loads = []
        for _ in range(args.rounds):
            loads.append(Path("/proc/loadavg").read_text().split()[:3])
            for label, root, mode in lines:
                results[label].append(_measure(root, mode, table))
    print(f"load average (1/5/15 min) at each round: {', '.join('/'.join(x) for x in loads)}")
    print("| run | scale stream decode, ms CPU per stream | decimal column harvest, ms CPU per file "
          "| every column, ms CPU per file |")
    print("|---|---|---|---|")
    first: list[float] = []
    for label, _, _ in lines:
        best = [min(r[i] for r in results[label]) for i in range(3)]
        first = first or best
        cells = [f"{b:.2f}" if i == 0 else f"{b:.1f}" for i, b in enumerate(best)]
        ratios = [f"{f / b:.2f}×" for f, b in zip(first, best, strict=True)]
        print(f"| {label} | " + " | ".join(f"{c} ({r})" for c, r in zip(cells, ratios, strict=True)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
