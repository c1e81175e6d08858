"""Split-filtering indexes (issue 11 s5): build time, size, split-filter latency, stripes kept, SELECT time.

    python bench/bench_index.py [--rows 50000000] [--files 100] [--stripe-size 1048576] [--runs 2]
                                [--lookups 30] [--cold-runs 3] [--data DIR] [--work DIR] [--sections 1,2,3,4,5]

A table written by Spark in local mode (ORC, zstd, ``--files`` files, stripes cut at ``orc.stripe.size``, ORC
row-group bloom filters on ``id`` and ``country``) with three columns: ``id`` bigint, high-cardinality and
unsorted (``xxhash64`` of the row number), ``ts`` bigint, sorted (row number x 10 plus a constant), ``country``
string, 20 values in no order. It is generated once into ``--data`` and reused. Then, on an embedded metastore
(SQLite) in a fresh work directory, every step measured side by side in one run:

1. build: per column, ``ANALYZE TABLE bench.t COMPUTE STATISTICS FOR COLUMNS col`` (``--no-stats-cache``: every
   file read) against ``CREATE INDEX ... USING btree | bloom | minmax`` on the same column, each a whole
   ``metastore sql`` command, in ``--runs`` rounds whose order alternates; the ratio is of the statements' own
   times (as each command reports it), with the whole commands' wall and CPU (command and its workers) beside.
   ``--kinds`` narrows the index kinds; ``--compare DIR`` runs every build a second time with another checkout's
   code (first on PYTHONPATH), interleaved, for before/after numbers in one run.
2. size: every index against the column's compressed size (its PRESENT/DATA/LENGTH/DICTIONARY streams in every
   stripe; row index and ORC bloom filter streams not counted).
3. split-filter latency: ``metastore.index.filter_splits`` with one index at a time, for ``=``, ``IN`` (10
   values) and ``BETWEEN`` on ``id`` and ``ts``: warm (the index files open in the process's cache, median and
   p90 of ``--lookups`` calls) and cold (a fresh process: imports and the metastore records read first, then the
   index files are evicted from the page cache with posix_fadvise(DONTNEED), checked with ``fincore``, then
   the first call is timed); wall time and the process's CPU time of the call (on a loaded machine the wall
   time mostly measures waiting for a core).
4. stripes kept: per query, the stripes each index keeps, against the stripes ORC's own stripe statistics keep
   and those with a row group that ORC's row index and row-group bloom filters keep (what a reader with
   predicate pushdown skips; computed here with orcio's reading of those statistics: pyorc is not installed and
   pyarrow's ORC reader has no predicate pushdown), and the stripes that really hold a match (from the data).
5. SELECT: ``metastore sql -e "SELECT count(*) FROM t WHERE ..."`` whole commands on the indexed table and on a
   second table over the same files without indexes, interleaved; the counts must agree with the data.

6. pool crossover (only when asked for, ``--sections 6``): in this process, ``build_parts`` of each index kind
   on ``--columns`` over the first 1, 2, 4, ... files of the table, scanning in one process against the harvest
   runner's worker pool (forced on whatever the size), ``--runs`` interleaved rounds, best of each; where the
   pool starts to pay sets metastore.index.build.PARALLEL_MIN_BYTES.

The load average is printed with every step. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KINDS = ("btree", "bloom", "minmax")
COUNTRIES = ("US", "DE", "FR", "GB", "JP", "CN", "IN", "BR", "IT", "ES", "CA", "KR", "AU", "MX", "NL", "SE", "CH",
             "PL", "BE", "AT")
TS_BASE = 1_600_000_000_000


def load() -> str:
    return "/".join(f"{v:.1f}" for v in os.getloadavg())


def log(text: str) -> None:
    print(text, flush=True)


# ------------------------------------------------------------------------------------------------ the table


def generate(data: Path, rows: int, files: int, stripe_size: int) -> Path:
    """The table's files, written by Spark (local[2]) unless ``data`` holds them already."""
    table = data / f"events_{rows}_{files}_{stripe_size}"
    marker = table / "_GENERATED"
    if marker.exists():
        return table
    if table.exists():
        shutil.rmtree(table)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("bench-index")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "3g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter()
    countries = ", ".join(f"'{c}'" for c in COUNTRIES)
    (spark.range(0, rows, 1, files)
     .selectExpr("xxhash64(id, 7) as id", f"{TS_BASE} + id * 10 as ts",
                 f"element_at(array({countries}), cast(pmod(xxhash64(id, 11), {len(COUNTRIES)}) as int) + 1) as country")
     .write.option("compression", "zstd").option("orc.stripe.size", str(stripe_size))
     .option("orc.bloom.filter.columns", "id,country").orc(str(table)))
    spark.stop()
    for crc in table.glob(".*.crc"):
        crc.unlink()
    marker.write_text(f"rows={rows} files={files} stripe_size={stripe_size}\n")
    log(f"generated {rows:,} rows in {time.perf_counter() - started:.0f} s into {table} (load {load()})")
    return table


def data_files(table: Path) -> list[Path]:
    return sorted(p for p in table.iterdir() if p.suffix == ".orc" and not p.name.startswith((".", "_")))


DATA_STREAMS = {"PRESENT", "DATA", "LENGTH", "DICTIONARY_DATA", "SECONDARY"}


def describe(files: list[Path], columns: list[str]) -> dict[str, Any]:
    """Stripes, rows, bytes, each column's compressed size, ORC's stripe statistics and compression."""
    from metastore.orcio import OrcReader

    out: dict[str, Any] = {"stripes": 0, "rows": 0, "bytes": 0, "column_bytes": dict.fromkeys(columns, 0)}
    for path in files:
        with OrcReader(str(path)) as reader:
            names = list(reader.schema.field_names)
            ids = {c: names.index(c) + 1 for c in columns}
            out["stripes"] += len(reader.stripes)
            out["rows"] += reader.num_rows
            out["bytes"] += path.stat().st_size
            out["compression"] = str(reader.compression)
            for s in range(len(reader.stripes)):
                for column, kind, length in reader.stream_lengths(s):
                    for c, cid in ids.items():
                        if column == cid and kind in DATA_STREAMS:
                            out["column_bytes"][c] += length
    return out


def pick_values(files: list[Path], rng: Any) -> dict[str, list[int]]:
    """Existing ids (from random stripes) and ts values to look up."""
    import numpy as np

    from metastore.orcio import OrcReader

    ids: list[int] = []
    for path in rng.choice(files, size=min(len(files), 11), replace=False):
        with OrcReader(str(path)) as reader:
            stripe = int(rng.integers(len(reader.stripes)))
            values = np.asarray(reader.read_stripe(stripe, columns=["id"]).columns["id"].values, dtype=np.int64)
            ids.append(int(rng.choice(values)))
    return {"id": ids}


# ------------------------------------------------------------------------------------------------ commands


def metastore_cmd() -> list[str]:
    script = Path(sys.executable).parent / "metastore"
    return [str(script)] if script.exists() else [sys.executable, "-m", "metastore.cli"]


def sql(work: Path, statements: str, *extra: str, code: Path | None = None) -> tuple[float, float, str]:
    """A whole `metastore sql` command: (wall s, CPU s of the command and its children, output); ``code``: a
    checkout whose metastore package the command runs (first on PYTHONPATH) instead of the installed one."""
    env = None
    if code is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(code), os.environ.get("PYTHONPATH")) if p)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(
        [*metastore_cmd(), "sql", "--db", f"sqlite:///{work / 'ms.db'}", "--warehouse", str(work / "warehouse"),
         *extra, "-e", statements], capture_output=True, text=True, cwd=work, timeout=3600, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"metastore sql failed: {statements}\n{result.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout + result.stderr


def statement_seconds(output: str) -> float:
    """The seconds a build or ANALYZE reports for itself (its last ', N.N s')."""
    found = re.findall(r"(\d+\.\d+) s\b", output)
    if not found:
        raise RuntimeError(f"no time in: {output}")
    return float(found[-1])


# ------------------------------------------------------------------------------------------------ 1. build


def build_rounds(work: Path, columns: list[str], runs: int, kinds: tuple[str, ...] = KINDS,
                 compare: Path | None = None) -> dict[str, Any]:
    """``compare``: every build also run with that checkout's code (``other:`` results), right after or before
    this code's (alternating by round), ANALYZE with this code only."""
    results: dict[str, list[dict[str, float]]] = {}

    def analyze(col: str) -> None:
        wall, cpu, out = sql(work, f"ANALYZE TABLE bench.t COMPUTE STATISTICS FOR COLUMNS {col};", "--no-stats-cache")
        results.setdefault(f"{col}:analyze", []).append({"s": statement_seconds(out), "wall": wall, "cpu": cpu})
        log(f"  ANALYZE {col}: {statement_seconds(out):.2f} s (command {wall:.1f} s wall, {cpu:.1f} s CPU) "
            f"load {load()}")

    def build_with(col: str, kind: str, keep: bool, code: Path | None) -> None:
        name = f"ix_{col}_{kind}"
        label = "" if code is None else "other:"
        wall, cpu, out = sql(work, f"CREATE INDEX {name} USING {kind} ON bench.t ({col});", code=code)
        results.setdefault(f"{label}{col}:{kind}", []).append({"s": statement_seconds(out), "wall": wall, "cpu": cpu})
        log(f"  {kind.upper()} {col}{' (' + str(code) + ')' if code else ''}: {statement_seconds(out):.2f} s "
            f"(command {wall:.1f} s wall, {cpu:.1f} s CPU) load {load()}")
        if not keep:
            sql(work, f"DROP INDEX {name};")

    def build(col: str, kind: str, keep: bool, r: int) -> None:
        if compare is None:
            build_with(col, kind, keep, None)
            return
        order = [None, compare] if r % 2 == 0 else [compare, None]
        for j, code in enumerate(order):
            build_with(col, kind, keep and j == 1, code)

    for r in range(runs):
        last = r == runs - 1
        log(f"build round {r + 1} of {runs} (load {load()})")
        for col in columns:
            if r % 2 == 0:
                analyze(col)
                for kind in kinds:
                    build(col, kind, last, r)
            else:
                for kind in reversed(kinds):
                    build(col, kind, last, r)
                analyze(col)
    return results


# ------------------------------------------------------------------------------------------------ 3. latency


def queries(values: dict[str, list[int]], rows: int) -> list[tuple[str, str]]:
    """(label, WHERE text) of the measured predicates."""
    ids = values["id"]
    span = (1 << 64) // max(rows, 1) * 20  # about 20 ids of the 64-bit range
    ts_mid = TS_BASE + (rows // 2) * 10
    ts_span = rows // 100 * 10  # 1 % of the rows
    return [
        ("id =", f"id = {ids[0]}"),
        ("id IN (10)", f"id IN ({', '.join(str(v) for v in ids[1:11])})"),
        ("id BETWEEN", f"id BETWEEN {ids[0] - span // 2} AND {ids[0] + span // 2}"),
        ("ts =", f"ts = {ts_mid + 10 * 7}"),
        ("ts IN (10)", f"ts IN ({', '.join(str(ts_mid + 10 * k * (rows // 40)) for k in range(-5, 5))})"),
        ("ts BETWEEN (1 %)", f"ts BETWEEN {ts_mid} AND {ts_mid + ts_span - 10}"),
    ]


def _setup(work: Path) -> tuple[Any, Any, list[Any], list[Any]]:
    from metastore.client.embedded import EmbeddedMetastoreClient
    from metastore.index.maintain import list_targets
    from metastore.index.select import file_splits

    client = EmbeddedMetastoreClient(f"sqlite:///{work / 'ms.db'}", str(work / "warehouse"))
    table = client.get_table("bench", "t")
    records = client.list_indexes("bench", "t")
    splits = [s for t in list_targets(client, table, None) for f in t.files for s in file_splits(f)]
    return client, table, records, splits


def _index_files(record: Any) -> list[str]:
    from metastore.locations import local_path

    return [p for p in (local_path(part.location) for part in record.parts) if p is not None]


def resident_pages(paths: list[str]) -> int:
    """Pages of the files in the page cache, by `fincore` (-1 when it cannot tell)."""
    if not paths or shutil.which("fincore") is None:
        return -1
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "PAGES", *paths],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return -1
    return sum(int(x) for x in out.stdout.split())


def cold_probe(work: Path, index: str, where: str) -> None:
    """A fresh process: open, read the records, evict the index's files from the page cache, time one call."""
    from metastore.index import filter_splits
    from metastore.sql.parser import parse_predicate

    _, table, records, splits = _setup(work)
    record = next(r for r in records if r.name == index)
    predicate = parse_predicate(where)
    paths = _index_files(record)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    resident = resident_pages(paths)
    cpu = time.process_time()
    started = time.perf_counter()
    result = filter_splits(table, predicate, splits, [record])
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    print(json.dumps({"seconds": seconds, "cpu": cpu, "resident_pages_before": resident, "kept": len(result.kept)}))


def latency(work: Path, qs: list[tuple[str, str]], lookups: int, cold_runs: int) -> list[dict[str, Any]]:
    from metastore.index import filter_splits
    from metastore.index.filter import DEFAULT_CACHE
    from metastore.sql.parser import parse_predicate

    _, table, records, splits = _setup(work)
    out = []
    for label, where in qs:
        column = where.split()[0]
        predicate = parse_predicate(where)
        for record in [r for r in records if r.column == column]:
            if record.kind.value == "bloom" and "BETWEEN" in label:
                continue  # BLOOM answers = and IN only
            DEFAULT_CACHE.clear()
            first = time.perf_counter()
            result = filter_splits(table, predicate, splits, [record])
            first_s = time.perf_counter() - first
            warm = []
            warm_cpu = []
            for _ in range(lookups):
                cpu = time.process_time()
                started = time.perf_counter()
                filter_splits(table, predicate, splits, [record])
                warm.append(time.perf_counter() - started)
                warm_cpu.append(time.process_time() - cpu)
            cold = []
            cold_cpu = []
            resident = []
            for _ in range(cold_runs):
                probe = subprocess.run(
                    [sys.executable, __file__, "--cold-probe", str(work), record.name, where],
                    capture_output=True, text=True, timeout=600)
                if probe.returncode != 0:
                    raise RuntimeError(probe.stderr)
                answer = json.loads(probe.stdout.strip().splitlines()[-1])
                cold.append(answer["seconds"])
                cold_cpu.append(answer.get("cpu", float("nan")))
                resident.append(answer["resident_pages_before"])
            warm.sort()
            row = {
                "query": label, "index": record.kind.value.upper(), "level": record.level.value,
                "splits": len(splits), "kept": len(result.kept), "first_ms": first_s * 1e3,
                "warm_median_ms": statistics.median(warm) * 1e3, "warm_p90_ms": warm[int(0.9 * (len(warm) - 1))] * 1e3,
                "warm_cpu_median_ms": statistics.median(warm_cpu) * 1e3,
                "cold_ms": statistics.median(cold) * 1e3 if cold else None, "cold_resident": max(resident, default=-1),
                "cold_cpu_ms": statistics.median(cold_cpu) * 1e3 if cold_cpu else None,
                "load": load(),
            }
            out.append(row)
            log(f"  {label:18} {row['index']:6} warm {row['warm_median_ms']:.2f} ms (p90 {row['warm_p90_ms']:.2f}, "
                f"CPU {row['warm_cpu_median_ms']:.2f}), cold {row['cold_ms']:.1f} ms (CPU {row['cold_cpu_ms']:.1f}; "
                f"index pages resident before: {row['cold_resident']}), "
                f"first in-process {row['first_ms']:.1f} ms; kept {row['kept']} of {row['splits']} splits; "
                f"load {row['load']}")
    return out


# ------------------------------------------------------------------------------------------------ 4. stripes kept


def stripes_kept(work: Path, files: list[Path], qs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per query: stripes that hold a match, kept by each index, by ORC stripe statistics, and by ORC stripe
    statistics + row index + row-group bloom filters."""
    import numpy as np

    from metastore.index import filter_splits
    from metastore.index.bind import KeyRange, KeySet, bind, leaves
    from metastore.index.filter import table_columns
    from metastore.index.select import TableReader, TableScan, _group_may_match
    from metastore.orcio import OrcReader
    from metastore.sql.parser import parse_predicate

    _, table, records, splits = _setup(work)
    columns = table_columns(table)
    bound = [(label, where, bind(parse_predicate(where), columns)) for label, where in qs]
    truth = {label: 0 for label, _ in qs}
    by_stats = dict.fromkeys(truth, 0)
    by_groups = dict.fromkeys(truth, 0)
    total = 0
    for path in files:
        with OrcReader(str(path)) as reader:
            names = list(reader.schema.field_names)
            stripe_stats = reader.stripe_statistics
            for s in range(len(reader.stripes)):
                total += 1
                data = reader.read_stripe(s, columns=["id", "ts"]).columns
                values = {c: np.asarray(data[c].values, dtype=np.int64) for c in ("id", "ts")}
                for label, _, b in bound:
                    (leaf,) = leaves(b)
                    v = values[leaf.column]
                    if isinstance(leaf, KeySet):
                        hit = bool(np.isin(v, np.asarray(leaf.keys, dtype=np.int64)).any())
                    else:
                        assert isinstance(leaf, KeyRange)
                        m = np.ones(len(v), dtype=bool)
                        if leaf.low is not None:
                            m &= (v >= leaf.low) if leaf.low_inclusive else (v > leaf.low)
                        if leaf.high is not None:
                            m &= (v <= leaf.high) if leaf.high_inclusive else (v < leaf.high)
                        hit = bool(m.any())
                    truth[label] += hit
                    cid = names.index(leaf.column) + 1
                    stats_ok = _group_may_match(leaf, stripe_stats[s][cid], None, columns[leaf.column])
                    by_stats[label] += stats_ok
                    if stats_ok:
                        scan = TableScan(columns, ["id", "ts", "country"], b, [])
                        chosen = TableReader(scan)._chosen_groups(reader, s, {"id": "id", "ts": "ts"},
                                                                  reader.row_group_count(s))
                        by_groups[label] += bool(chosen.any())
    out = []
    for label, where, _ in bound:
        column = where.split()[0]
        row: dict[str, Any] = {"query": label, "stripes": total, "match": truth[label], "orc_stats": by_stats[label],
                               "orc_stats_rowgroups_bloom": by_groups[label]}
        predicate = parse_predicate(where)
        for record in [r for r in records if r.column == column]:
            if record.kind.value == "bloom" and "BETWEEN" in label:
                continue
            result = filter_splits(table, predicate, splits, [record])
            row[record.kind.value.upper()] = sum(int(np.count_nonzero(may)) for _, may in result.stripes.values())
        out.append(row)
        log(f"  {label:18} " + ", ".join(f"{k} {v}" for k, v in row.items() if k != "query"))
    return out


# ------------------------------------------------------------------------------------------------ 5. SELECT


def selects(work: Path, qs: list[tuple[str, str]], runs: int) -> list[dict[str, Any]]:
    out = []
    for label, where in qs:
        times: dict[str, list[float]] = {"t": [], "t_plain": []}
        counts: dict[str, set[str]] = {"t": set(), "t_plain": set()}
        messages: dict[str, str] = {}
        for r in range(runs):
            order = ["t", "t_plain"] if r % 2 == 0 else ["t_plain", "t"]
            for name in order:
                wall, _, output = sql(work, f"SELECT count(*) FROM bench.{name} WHERE {where};", "--output", "csv")
                times[name].append(wall)
                lines = [x for x in output.splitlines() if x.strip()]
                counts[name].add(lines[1])
                messages[name] = next((x for x in lines if "row(s) in" in x), "")
        if counts["t"] != counts["t_plain"] or len(counts["t"]) != 1:
            raise RuntimeError(f"{label}: counts differ with and without indexes: {counts}")
        row = {"query": label, "count": next(iter(counts["t"])), "with_s": min(times["t"]),
               "without_s": min(times["t_plain"]), "with_msg": messages["t"], "without_msg": messages["t_plain"],
               "load": load()}
        out.append(row)
        log(f"  {label:18} count {row['count']}: with indexes {row['with_s']:.2f} s, without {row['without_s']:.2f} s "
            f"({row['without_s'] / row['with_s']:.1f}x) load {row['load']}\n      with: {row['with_msg']}\n"
            f"      without: {row['without_msg']}")
    return out


# ------------------------------------------------------------------------------------------------ 6. pool crossover


def pool_crossover(files: list[Path], columns: list[str], runs: int) -> list[dict[str, Any]]:
    """build_parts in one process against the worker pool, over growing numbers of files (in this process)."""
    from metastore.index import build
    from metastore.index.build import BuildTarget, build_parts
    from metastore.index.model import IndexKind, IndexLevel, IndexRecord, IndexState
    from metastore.index.scan import data_file

    all_files = [data_file(str(p)) for p in files]
    counts = sorted({min(n, len(all_files)) for n in (1, 2, 4, 8, 16, 32, len(all_files))})
    types = {"id": "bigint", "ts": "bigint", "country": "string"}
    out = []
    saved = build.PARALLEL_MIN_BYTES, build.POOLED_KINDS
    build.POOLED_KINDS = frozenset(IndexKind)
    root = Path(tempfile.mkdtemp(prefix="bench-index-pool-"))
    try:
        for column in columns:
            for kind in KINDS:
                level = IndexLevel.TABLE if kind == "btree" else IndexLevel.STRIPE  # CREATE INDEX's defaults
                record = IndexRecord(name=f"ix_{column}_{kind}", db_name="bench", table_name="t", column=column,
                                     column_type=types[column], kind=IndexKind(kind), level=level,
                                     location=f"file:{root / kind}", state=IndexState.READY)
                for n in counts:
                    chosen = tuple(all_files[:n])
                    seconds: dict[str, list[float]] = {"one": [], "pool": []}
                    for r in range(runs):
                        for mode in (("one", "pool") if r % 2 == 0 else ("pool", "one")):
                            build.PARALLEL_MIN_BYTES = 1 << 62 if mode == "one" else 0
                            started = time.perf_counter()
                            report = build_parts(record, [BuildTarget("", chosen)],
                                                 column_position=list(types).index(column))
                            seconds[mode].append(time.perf_counter() - started)
                            for part in report.parts:
                                Path(part.location.removeprefix("file:")).unlink()
                    row = {"column": column, "kind": kind, "files": n, "mib": sum(f.size for f in chosen) / 2**20,
                           "one_s": min(seconds["one"]), "pool_s": min(seconds["pool"]), "load": load()}
                    out.append(row)
                    log(f"  {column} {kind:6} {n:3} files ({row['mib']:.1f} MiB): one process {row['one_s']:.3f} s, "
                        f"pool {row['pool_s']:.3f} s ({row['one_s'] / row['pool_s']:.2f}x) load {row['load']}")
    finally:
        build.PARALLEL_MIN_BYTES, build.POOLED_KINDS = saved
        shutil.rmtree(root, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Split-filtering indexes against ANALYZE, ORC's own statistics and an unindexed SELECT "
                    "(issue 11 s5). Generates the table with Spark once into --data.")
    parser.add_argument("--rows", type=int, default=50_000_000, help="rows of the table (default 50,000,000)")
    parser.add_argument("--files", type=int, default=100, help="data files Spark writes (default 100)")
    parser.add_argument("--stripe-size", type=int, default=1 << 20,
                        help="orc.stripe.size in bytes (default 1 MiB: about 70,000 rows a stripe)")
    parser.add_argument("--runs", type=int, default=2, help="rounds of builds and of SELECTs (default 2)")
    parser.add_argument("--lookups", type=int, default=30, help="warm split-filter calls per query (default 30)")
    parser.add_argument("--cold-runs", type=int, default=3, help="fresh-process calls per query (default 3)")
    parser.add_argument("--columns", default="id,ts,country", help="columns to build indexes on (default all)")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="index kinds section 1 builds (default btree,bloom,minmax); the later sections use "
                             "the indexes it keeps")
    parser.add_argument("--compare", type=Path,
                        help="section 1: also run every build with this checkout's code (put first on PYTHONPATH), "
                             "interleaved with this code's (order alternating by round), as other:col:kind")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "bench-index-data",
                        help="where the generated table is kept between runs")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--work", type=Path,
                        help="the metastore's work directory, kept after the run; when it holds a metastore from "
                             "an earlier run, table creation and the builds are skipped (default: a fresh temporary "
                             "directory, removed)")
    parser.add_argument("--sections", default="1,2,3,4,5",
                        help="which steps to run (default 1,2,3,4,5: build, size, latency, stripes kept, SELECT; "
                             "6: the pool crossover, in process)")
    parser.add_argument("--cold-probe", nargs=3, metavar=("WORK", "INDEX", "WHERE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold_probe:
        cold_probe(Path(args.cold_probe[0]), args.cold_probe[1], args.cold_probe[2])
        return 0
    import numpy as np

    columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    if not set(kinds) <= set(KINDS):
        parser.error(f"--kinds: choose from {', '.join(KINDS)}")
    log(f"bench_index: {args.rows:,} rows, {args.files} files, stripe size {args.stripe_size}; load {load()}")
    args.data.mkdir(parents=True, exist_ok=True)
    table = generate(args.data, args.rows, args.files, args.stripe_size)
    files = data_files(table)
    info = describe(files, ["id", "ts", "country"])
    log(f"table: {info['rows']:,} rows, {len(files)} files, {info['stripes']} stripes, {info['bytes'] / 2**20:.1f} MiB, "
        f"{info['compression']}; column bytes: "
        + ", ".join(f"{c} {b / 2**10:.1f} KiB" for c, b in info["column_bytes"].items()))
    sections = {int(x) for x in args.sections.split(",") if x.strip()}
    if sections == {6}:  # in process only: no metastore, no index built through the shell
        log("6. pool crossover: build_parts in one process against the worker pool (in process)")
        pool = pool_crossover(files, columns, args.runs)
        if args.json:
            args.json.write_text(json.dumps({"pool": pool}, indent=1, default=str))
        log(f"done; load {load()}")
        return 0
    reuse = args.work is not None and (args.work / "ms.db").exists()
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-index-"))
    results: dict[str, Any] = {"rows": info["rows"], "files": len(files), "stripes": info["stripes"],
                               "bytes": info["bytes"], "column_bytes": info["column_bytes"]}
    try:
        if not reuse:
            sql(work, f"CREATE DATABASE bench; CREATE EXTERNAL TABLE bench.t (id bigint, ts bigint, country string) "
                      f"STORED AS ORC LOCATION '{table}'; CREATE EXTERNAL TABLE bench.t_plain (id bigint, ts bigint, "
                      f"country string) STORED AS ORC LOCATION '{table}';")
        if not reuse and 1 in sections:
            log("1. build time: ANALYZE of the column against CREATE INDEX")
            results["build"] = build_rounds(work, columns, args.runs, kinds, args.compare)
        elif not reuse:
            for col in columns:
                for kind in KINDS:
                    sql(work, f"CREATE INDEX ix_{col}_{kind} USING {kind} ON bench.t ({col});")
        log("2. size")
        from metastore.client.embedded import EmbeddedMetastoreClient

        with EmbeddedMetastoreClient(f"sqlite:///{work / 'ms.db'}", str(work / "warehouse")) as client:
            sizes = {r.name: r.size for r in client.list_indexes("bench", "t")}
        results["sizes"] = sizes
        for name, size in sorted(sizes.items()):
            column = name.split("_")[1]
            log(f"  {name}: {size / 2**10:.1f} KiB, {size / info['column_bytes'][column]:.1%} of {column}'s "
                f"{info['column_bytes'][column] / 2**10:.1f} KiB")
        values = pick_values(files, np.random.default_rng(5))
        qs = queries(values, info["rows"])
        results["queries"] = qs
        if 3 in sections:
            log("3. split-filter latency (one index at a time)")
            results["latency"] = latency(work, qs, args.lookups, args.cold_runs)
        if 4 in sections:
            log("4. stripes kept")
            results["stripes_kept"] = stripes_kept(work, files, qs)
        if 5 in sections:
            log("5. SELECT count(*) with and without indexes (whole commands)")
            results["select"] = selects(work, qs, args.runs)
        if 6 in sections:
            log("6. pool crossover: build_parts in one process against the worker pool (in process)")
            results["pool"] = pool_crossover(files, columns, args.runs)
        results["load_end"] = load()
    finally:
        if args.json:
            args.json.write_text(json.dumps(results, indent=1, default=str))
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    log(f"done; load {load()}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
