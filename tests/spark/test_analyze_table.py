"""metastore.spark.analyze_table on a local Spark session equals the shell's in-process ANALYZE: every field and
every sketch byte, per partition and for the table, with large files split by stripe ranges into several tasks;
KLL histograms within their error bounds; cached files reused; a corrupt file failing its partition alone; the
driver's memory flat in the number of files. (Retried tasks counting once: tests/spark/test_cluster.py on a real
cluster, and the driver's guard against a repeated result in tests/spark/test_plan_and_merge.py.)"""

from __future__ import annotations

import logging
import os
import pickle
import tracemalloc
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest
from sql.session import SqlSession

from metastore.client import StatsWrite
from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.errors import InvalidInput, NoSuchObject
from metastore.spark import analyze_table

pytestmark = pytest.mark.spark

COLUMNS = {"id": "bigint", "name": "string", "code": "string", "amount": "double", "price": "decimal(10,2)",
           "flag": "boolean", "day": "date", "ts": "timestamp", "blob": "binary", "qty": "int"}
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]


def _rows(rng: np.random.Generator, n: int) -> pa.Table:
    def mask(p: float) -> np.ndarray:
        return rng.random(n) < p

    return pa.table({
        "id": pa.array(rng.integers(-(2**40), 2**40, n), mask=mask(0.05)),
        "name": pa.array([f"name-{v}" for v in rng.integers(0, 50_000, n)], mask=mask(0.1)),
        "code": pa.array([f"c{v}" for v in rng.integers(0, 120, n)]),
        "amount": pa.array(rng.normal(0, 1000, n), mask=mask(0.2)),
        "price": pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**8, 10**8, n)], pa.decimal128(10, 2)),
        "flag": pa.array(rng.random(n) < 0.4, mask=mask(0.1)),
        "day": pa.array(rng.integers(0, 20000, n).astype("datetime64[D]")),
        "ts": pa.array(rng.integers(0, 10**15, n).astype("datetime64[us]"), mask=mask(0.1)),
        "blob": pa.array([rng.bytes(int(k)) for k in rng.integers(0, 16, n)], pa.binary()),
        "qty": pa.array(rng.integers(0, 1000, n).astype(np.int32)),
    })


def _make(tmp: Path, data: Path) -> tuple[str, EmbeddedMetastoreClient]:
    """A metastore database over the table in ``data`` (created once, the files shared by every database)."""
    url = f"sqlite:///{tmp / 'metastore.db'}"
    client = EmbeddedMetastoreClient(url, str(tmp / "warehouse"))
    session = SqlSession(client, None)
    cols = ", ".join(f"{k} {v}" for k, v in COLUMNS.items())
    session.run("CREATE DATABASE sales")
    session.run(f"CREATE EXTERNAL TABLE sales.events ({cols}) PARTITIONED BY (ds string) STORED AS ORC "
                f"LOCATION '{data}'")
    session.run("MSCK REPAIR TABLE sales.events")
    return url, client


def _pair(tmp_path: Path, data: Path) -> tuple[EmbeddedMetastoreClient, str, EmbeddedMetastoreClient]:
    """Two metastores over the same files: one for the shell's in-process ANALYZE, one (by URL) for Spark's."""
    (tmp_path / "local").mkdir()
    (tmp_path / "spark").mkdir()
    _, local_client = _make(tmp_path / "local", data)
    spark_url, spark_client = _make(tmp_path / "spark", data)
    return local_client, spark_url, spark_client


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("events")
    rng = np.random.default_rng(11)
    for k, day in enumerate(DAYS):
        part = root / f"ds={day}"
        part.mkdir()
        # a multi-stripe file (split into pieces below) and small ones; one partition also has our writer's file
        po.write_table(_rows(rng, 60_000), part / "part-00000.orc", stripe_size=200 * 1024, compression="zstd")
        for f in range(1, 3 + k % 2):
            po.write_table(_rows(rng, 3_000 + 500 * f), part / f"part-0000{f}.orc", compression="zstd")
    session_tmp = tmp_path_factory.mktemp("ours")
    client = EmbeddedMetastoreClient(f"sqlite:///{session_tmp / 'm.db'}", str(session_tmp / "wh"))
    SqlSession(client, None).run(
        "CREATE TABLE t (id bigint, name string) STORED AS ORC; "
        "INSERT INTO t VALUES (1, 'ours-a'), (2, 'ours-b'), (NULL, NULL)"
    )
    client.close()
    ours = next((session_tmp / "wh" / "t").glob("*"))
    target = root / f"ds={DAYS[0]}" / "part-00009-ours.orc"
    target.write_bytes(ours.read_bytes())
    return root


def _all_stats(client: EmbeddedMetastoreClient) -> tuple[dict, dict, dict]:
    names = client.list_partition_names("sales", "events")
    parts = client.partition_statistics("sales", "events", names, list(COLUMNS))
    table = {e.column: e.stats for e in client.table_statistics("sales", "events", list(COLUMNS))}
    params = {n: {k: v for k, v in client.get_partitions_by_names("sales", "events", [n])[0].parameters.items()
                  if k in ("numRows", "numFiles", "totalSize", "rawDataSize", "COLUMN_STATS_ACCURATE")}
              for n in names}
    return ({n: {e.column: e.stats for e in entries} for n, entries in parts.items()}, table, params)


def _split_files(caplog: pytest.LogCaptureFixture) -> dict[str, list[int]]:
    """The files the driver joined from pieces, with the tasks the pieces came from (from its debug log)."""
    out = {}
    for record in caplog.records:
        if record.name == "metastore.spark.analyze" and record.msg == "%s: %d pieces from tasks %s":
            path, pieces, tasks = record.args
            assert len(tasks) == pieces
            out[path] = tasks
    return out


def test_spark_equals_the_shell_byte_for_byte(spark, data: Path, tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    local_client, spark_url, spark_client = _pair(tmp_path, data)
    SqlSession(local_client, None).run("ANALYZE TABLE sales.events COMPUTE STATISTICS FOR COLUMNS")
    # small split and task sizes: the multi-stripe files become several pieces, files group several per task
    caplog.set_level(logging.DEBUG, logger="metastore.spark.analyze")
    summary = analyze_table(spark, "sales.events", metastore=spark_url, cache=None, split_bytes=300 * 1024,
                            task_bytes=400 * 1024)
    assert not summary.failed
    # each partition's 60,000-row file (about 1.4 MB, stripes of 200 KiB) was several tasks on Spark
    split = _split_files(caplog)
    assert sorted(Path(p).parent.name for p in split) == [f"ds={d}" for d in DAYS]
    assert all(Path(p).name == "part-00000.orc" and len(set(tasks)) == len(tasks) >= 4 for p, tasks in split.items())
    assert [r[0] for r in summary.rows] == [f"ds={d}" for d in DAYS]
    assert summary.message.startswith("analyzed 4 partition(s) of sales.events on Spark, 10 column(s)")
    local = _all_stats(local_client)
    got = _all_stats(spark_client)
    assert got[2] == local[2]  # basic statistics in the parameters
    assert got[0] == local[0]  # every partition's statistics, sketches included
    assert got[1] == local[1]  # table level, merged from the partitions' sketches
    some = got[0][f"ds={DAYS[0]}"]
    assert some["name"].bit_vector and some["code"].bit_vector and some["id"].bit_vector
    assert int(got[2][f"ds={DAYS[0]}"]["numRows"]) == 60_000 + 3_500 + 4_000 + 3
    local_client.close()
    spark_client.close()


def _planned(caplog: pytest.LogCaptureFixture) -> tuple[int, int]:
    """(tasks, jobs) of the last run, from the driver's log."""
    found = [r.args for r in caplog.records
             if r.name == "metastore.spark.analyze" and str(r.msg).startswith("%d unit(s) of %d file(s) in")]
    assert isinstance(found[-1], tuple)
    return int(found[-1][2]), int(found[-1][3])


@pytest.mark.parametrize("how", ["closure, a job per task", "broadcast"])
def test_plans_in_closures_of_several_jobs_or_broadcast_equal_the_shell(
        spark, data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
        how: str) -> None:
    """Task plans reach the tasks in their function's closure, in as many Spark jobs as the per-job cap on plan
    bytes makes (here one plan a job), each job one Spark job; or, above the closure's cap, as a broadcast table
    joined to the task ids (one Spark job more). Both give the shell's statistics byte for byte."""
    from metastore.spark import analyze as analyze_module
    from metastore.spark import tasks as tasks_module

    if how == "broadcast":
        monkeypatch.setattr(tasks_module, "CLOSURE_PLAN_BYTES", 0)
    else:
        monkeypatch.setattr(analyze_module, "_JOB_PLAN_BYTES", 1)
    local_client, spark_url, spark_client = _pair(tmp_path, data)
    SqlSession(local_client, None).run("ANALYZE TABLE sales.events COMPUTE STATISTICS FOR COLUMNS")
    caplog.set_level(logging.INFO, logger="metastore.spark.analyze")
    context = spark.sparkContext
    group = f"plans-{how}"
    context.setJobGroup(group, group)
    try:
        summary = analyze_table(spark, "sales.events", metastore=spark_url, cache=None, split_bytes=300 * 1024,
                                task_bytes=400 * 1024)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert not summary.failed
    tasks, jobs = _planned(caplog)
    spark_jobs = len(context.statusTracker().getJobIdsForGroup(group))
    if how == "broadcast":
        assert tasks > 1 and jobs == 1 and spark_jobs == 2  # the plans' broadcast, then the tasks
    else:
        assert tasks > 1 and jobs == tasks and spark_jobs == jobs  # no job besides the tasks'
    assert _all_stats(spark_client) == _all_stats(local_client)
    local_client.close()
    spark_client.close()


def test_partial_spec_columns_and_the_cache(spark, data: Path, tmp_path: Path) -> None:
    local_client, url, client = _pair(tmp_path, data)
    SqlSession(local_client, None).run(
        f"ANALYZE TABLE sales.events PARTITION (ds='{DAYS[1]}') COMPUTE STATISTICS FOR COLUMNS name, qty"
    )
    cache = tmp_path / "cache.sqlite"
    first = analyze_table(spark, "sales.events", ["name", "QTY"], {"ds": DAYS[1]}, metastore=url, cache=str(cache),
                          task_bytes=100 * 1024, split_bytes=10 << 20)
    assert [r[0] for r in first.rows] == [f"ds={DAYS[1]}"]
    assert first.rows[0][5:] == [4, 0]  # files read, reused
    names = [f"ds={DAYS[1]}"]
    want = local_client.partition_statistics("sales", "events", names, ["name", "qty"])
    assert client.partition_statistics("sales", "events", names, ["name", "qty"]) == want
    again = analyze_table(spark, "sales.events", ["name", "qty"], {"ds": DAYS[1]}, metastore=url, cache=str(cache))
    assert again.rows[0][5:] == [0, 4] and "0 file(s) read" in again.message
    assert client.partition_statistics("sales", "events", names, ["name", "qty"]) == want
    # only the table level of one partition of four: the metastore aggregates what is stored
    assert {e.column for e in client.table_statistics("sales", "events", ["name", "qty"])} == {"name", "qty"}
    basic = analyze_table(spark, "sales.events", [], metastore=url, cache=None)
    assert not basic.failed and "footers of" in basic.message
    assert client.get_partition("sales", "events", [DAYS[3]]).parameters["numRows"] == str(
        sum(po.ORCFile(str(f)).nrows for f in (data / f"ds={DAYS[3]}").glob("*.orc"))
    )
    local_client.close()
    client.close()


def test_bad_input_is_one_clear_error(spark, data: Path, tmp_path: Path) -> None:
    url, client = _make(tmp_path, data)
    with pytest.raises(InvalidInput, match="column 'nope' does not exist in sales.events"):
        analyze_table(spark, "sales.events", ["nope"], metastore=url)
    with pytest.raises(InvalidInput, match="'dt' is not a partition column of sales.events"):
        analyze_table(spark, "sales.events", partition={"dt": "x"}, metastore=url)
    with pytest.raises(NoSuchObject, match=r"partition \(ds='1999-01-01'\) of sales.events does not exist"):
        analyze_table(spark, "sales.events", partition={"ds": "1999-01-01"}, metastore=url)
    with pytest.raises(NoSuchObject):
        analyze_table(spark, "sales.nothing", metastore=url)
    client.close()


def test_a_corrupt_file_fails_its_partition_only(spark, data: Path, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    for part in data.iterdir():
        (copy / part.name).mkdir(parents=True)
        for f in part.iterdir():
            os.link(f, copy / part.name / f.name)
    bad = copy / f"ds={DAYS[2]}" / "part-00005.orc"
    bad.write_bytes(b"ORC" + os.urandom(3000))
    (tmp_path / "db").mkdir()
    url, client = _make(tmp_path / "db", copy)
    cache = tmp_path / "cache"
    summary = analyze_table(spark, "sales.events", ["id", "name"], metastore=url, cache=str(cache))
    assert summary.failed == (f"ds={DAYS[2]}: cannot analyze {bad}: not a readable ORC file: "
                              + summary.failed[0].split("not a readable ORC file: ", 1)[1],)
    assert [r[0] for r in summary.rows] == [f"ds={d}" for d in DAYS if d != DAYS[2]]
    assert str(bad) in summary.message and "1 partition(s) failed" in summary.message
    stored = client.partition_statistics("sales", "events", client.list_partition_names("sales", "events"), ["id"])
    assert sorted(stored) == [f"ds={d}" for d in DAYS if d != DAYS[2]]
    # the failed partition left nothing in the per-file cache (as the local runner): once the bad file is gone,
    # every file of it is read again; the other partitions' files were kept
    bad.unlink()
    files = len(list(bad.parent.glob("*.orc")))
    repaired = analyze_table(spark, "sales.events", ["id", "name"], {"ds": DAYS[2]}, metastore=url, cache=str(cache))
    assert not repaired.failed and repaired.rows[0][5:] == [files, 0]
    kept = analyze_table(spark, "sales.events", ["id", "name"], {"ds": DAYS[1]}, metastore=url, cache=str(cache))
    assert kept.rows[0][5:] == [0, len(list((copy / f"ds={DAYS[1]}").glob("*.orc")))]
    client.close()


def _ranks(values: np.ndarray, q: float) -> tuple[float, float]:
    """The normalized ranks of ``q`` among ``values``: below it, and at or below it."""
    return float(np.mean(values < q)), float(np.mean(values <= q))


def _kll_values(column: pa.ChunkedArray, hive_type: str) -> np.ndarray:
    """A column's non-null values as the histograms sketch them (float32; dates and timestamps in epoch seconds,
    as Hive 4)."""
    valid = column.drop_null()
    if hive_type == "date":
        return (valid.cast(pa.int32()).to_numpy().astype(np.int64) * 86_400).astype(np.float32)
    if hive_type == "timestamp":
        per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[valid.type.unit]
        return (valid.cast(pa.int64()).to_numpy() // per_second).astype(np.float32)
    if hive_type.startswith("decimal"):
        return np.array([float(v) for v in valid.to_pylist()], dtype=np.float32)
    return valid.to_numpy().astype(np.float32)


def test_histograms_on_spark_agree_with_local_within_kll_bounds(spark, data: Path, tmp_path: Path) -> None:
    """KLL sketches are randomised (their compactions flip coins), so the bytes differ between any two runs; what
    must hold is DataSketches' guarantee: exact count, min and max, and every quantile's true rank within the
    sketch's normalized rank error (99 % confidence for k=200; checked at twice that, in both engines)."""
    from metastore.stats.kll import kll_from_bytes

    local_client, spark_url, spark_client = _pair(tmp_path, data)
    SqlSession(local_client, None, histograms=True).run("ANALYZE TABLE sales.events COMPUTE STATISTICS FOR COLUMNS")
    summary = analyze_table(spark, "sales.events", histograms=True, metastore=spark_url, cache=None,
                            split_bytes=300 * 1024, task_bytes=400 * 1024)
    assert not summary.failed
    local, got = _all_stats(local_client), _all_stats(spark_client)

    def without_histograms(stats: dict) -> dict:
        return {c: replace(s, histogram=None) if hasattr(s, "histogram") else s for c, s in stats.items()}

    numeric = [c for c, t in COLUMNS.items() if t in ("bigint", "int", "double", "date", "timestamp")
               or t.startswith("decimal")]
    checked = 0
    for name in [f"ds={d}" for d in DAYS]:
        # everything but the histograms is byte-equal, as without them
        assert without_histograms(got[0][name]) == without_histograms(local[0][name])
        # (our writer's file has only id and name: the other columns are null in its rows)
        tables = [po.read_table(str(f)) for f in sorted((data / name).glob("*.orc"))]
        for column in numeric:
            values = np.sort(np.concatenate([_kll_values(t.column(column), COLUMNS[column]) for t in tables
                                             if column in t.column_names]))
            for engine, stats in (("spark", got[0][name][column]), ("local", local[0][name][column])):
                sketch = kll_from_bytes(stats.histogram)
                where = f"{engine} {name} {column}"
                assert sketch.n == len(values), where
                assert (sketch.get_min_value(), sketch.get_max_value()) == (values[0], values[-1]), where
                tolerance = 2 * sketch.normalized_rank_error(False)
                for rank in np.linspace(0.05, 0.95, 19):
                    low, high = _ranks(values, sketch.get_quantile(float(rank)))
                    assert low - tolerance <= rank <= high + tolerance, f"{where}: rank {rank:.2f} in {low}..{high}"
                checked += 1
    assert checked == 2 * len(DAYS) * len(numeric) == 48
    local_client.close()
    spark_client.close()


def test_driver_memory_is_flat_in_the_number_of_files(spark, tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """The driver merges each task's results as they arrive and keeps one running sketch per partition and
    column: its Python heap's peak over 4N files is about its peak over N files, far below what holding the 3N
    extra files' results would take."""
    rng = np.random.default_rng(8)
    few = 24
    roots = {n: tmp_path / f"t{n}" for n in (few, 4 * few)}
    for n, root in roots.items():
        for k in range(n):
            part = root / f"ds={k % 2}"
            part.mkdir(parents=True, exist_ok=True)
            rows = 6000
            # high-cardinality columns: every file's sketches are dense (12 KiB a column)
            po.write_table(pa.table({
                "id": pa.array(rng.integers(0, 2**62, rows)),
                "name": pa.array([f"n{v}" for v in rng.integers(0, 10**12, rows)]),
                "amount": pa.array(rng.normal(size=rows)),
                "qty": pa.array(rng.integers(0, 10**9, rows).astype(np.int32)),
            }), str(part / f"part-{k:05d}.orc"))
    caplog.set_level(logging.INFO, logger="metastore.spark.analyze")
    size = max(f.stat().st_size for f in roots[few].glob("*/*.orc"))
    peaks, held = {}, {}
    for n, root in roots.items():
        client = EmbeddedMetastoreClient(f"sqlite:///{tmp_path / f'm{n}.db'}", str(tmp_path / "wh"))
        SqlSession(client, None).run(
            f"CREATE EXTERNAL TABLE t{n} (id bigint, name string, amount double, qty int) PARTITIONED BY (ds string) "
            f"STORED AS ORC LOCATION '{root}'; MSCK REPAIR TABLE t{n}")
        client.close()
    # the first run in this process allocates what every later run reuses (imports, Spark's Python plumbing)
    for n in (few, few, 4 * few):
        caplog.clear()
        tracemalloc.start()
        try:
            # tasks of about three files in both tables: results reach the driver three files at a time
            summary = analyze_table(spark, f"t{n}", metastore=f"sqlite:///{tmp_path / f'm{n}.db'}", cache=None,
                                    task_bytes=3 * size)
            peaks[n] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert not summary.failed and sum(r[5] for r in summary.rows) == n
        (record,) = [r for r in caplog.records if r.msg.startswith("at most %d result(s) held")]
        held[n] = record.args[0]
    # what one file's results weigh on the driver (its pickled piece, as executors send it)
    from metastore.stats.harvest.runner import column_specs
    from metastore.stats.harvest.scan import ScanOptions, analyze_file_piece

    types = {"id": "bigint", "name": "string", "amount": "double", "qty": "int"}
    one = next(roots[few].glob("ds=0/*.orc"))
    piece = analyze_file_piece(str(one), one.stat().st_size, one.stat().st_mtime_ns,
                               tuple(column_specs(list(types), types, list(types))),
                               ScanOptions(want_ndv=True, want_histograms=False, scan=True))
    per_file = len(pickle.dumps(piece))
    assert per_file > 30_000
    extra = 3 * few * per_file  # what holding the extra files' results would add
    # Results wait on the driver only while an earlier file of their partition is still out: with tasks of about
    # three files on two slots that is a task's results or two (plus the one arriving), but a starved task lets
    # more later tasks finish first (CI at load 4 saw 7), so how many wait depends on scheduling, not on the
    # number of files. What must hold: far fewer wait than the files there are (nothing is collected first)...
    assert held[4 * few] < few and held[few] < few, held
    # ...and the driver's memory does not grow with the files (the bound that matters, scheduling-independent)
    assert peaks[4 * few] - peaks[few] < extra / 4, (peaks, extra)


def test_results_reach_the_driver_one_row_a_batch(spark) -> None:
    """Spark re-batches what tasks yield (up to spark.sql.execution.arrow.maxRecordsPerBatch rows), and the driver
    reads a batch whole: a task's 32 results of ~80 KB each were one 2.6 MB batch in the driver's heap. Results
    are collected through a clone of the session whose batches hold one row; the user's session keeps its own
    setting, and its other runtime settings reach the clone."""
    from metastore.spark.analyze import _classic_arrow_batches, _results_session
    from metastore.spark.tasks import run_plans

    key = "spark.sql.execution.arrow.maxRecordsPerBatch"

    def five(payload: bytes):
        import pyarrow as pa

        for n in range(5):
            yield pa.RecordBatch.from_pylist([{"plan": payload.decode(), "n": n}],
                                             schema=pa.schema([("plan", pa.string()), ("n", pa.int32())]))

    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    try:
        own = _results_session(spark)
        assert own is not spark and own.sparkContext is spark.sparkContext
        assert own.conf.get(key) == "1" and spark.conf.get(key) == "10000"
        assert own.conf.get("spark.sql.shuffle.partitions") == "7"
        batches = [b.to_pylist() for b in _classic_arrow_batches(run_plans(own, [b"a", b"b"], five, "plan string, n int"))]
        assert [len(b) for b in batches] == [1] * 10
        assert sorted((r["plan"], r["n"]) for b in batches for r in b) == [(p, n) for p in "ab" for n in range(5)]
        # the user's session, as results were collected before: one batch a task
        theirs = _classic_arrow_batches(run_plans(spark, [b"a", b"b"], five, "plan string, n int"))
        assert sorted(b.num_rows for b in theirs) == [5, 5]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)


def test_a_small_rerun_is_read_on_the_driver_and_equals_the_shell(spark, data: Path, tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A re-ANALYZE that reuses most files from the cache and has little left to read reads it in the driver's
    process (no Spark job: the session function is never called) and writes exactly what the shell's in-process
    ANALYZE writes over the same files."""
    copy = tmp_path / "data"
    for part in data.iterdir():
        (copy / part.name).mkdir(parents=True)
        for f in part.iterdir():
            os.link(f, copy / part.name / f.name)
    local_client, url, client = _pair(tmp_path, copy)
    cache = tmp_path / "cache.sqlite"
    first = analyze_table(spark, "sales.events", metastore=url, cache=str(cache), task_bytes=400 * 1024)
    assert not first.failed and sum(r[6] for r in first.rows) == 0
    # one partition's small file rewritten with other rows (a new file: the old one's inode is shared)
    changed = copy / f"ds={DAYS[1]}" / "part-00001.orc"
    changed.unlink()
    po.write_table(_rows(np.random.default_rng(99), 3_700), changed, compression="zstd")

    def no_spark() -> None:
        raise AssertionError("a Spark session was asked for")

    caplog.set_level(logging.INFO, logger="metastore.spark.analyze")
    again = analyze_table(no_spark, "sales.events", metastore=url, cache=str(cache))
    assert not again.failed
    assert [r[5] for r in again.rows] == [0, 1, 0, 0]  # files read per partition
    assert "3 partition(s) unchanged since the last ANALYZE" in again.message
    assert any(r.msg.startswith("%d file(s) left to read") for r in caplog.records)
    SqlSession(local_client, None).run("ANALYZE TABLE sales.events COMPUTE STATISTICS FOR COLUMNS")
    local, got = _all_stats(local_client), _all_stats(client)
    assert got[2] == local[2]
    assert got[0] == local[0]
    assert got[1] == local[1]
    assert got[0][f"ds={DAYS[1]}"]["name"].bit_vector
    # another client changes one partition's statistics (its files as they were): the next re-run, with nothing
    # to read, does not keep that partition as unchanged but writes it again, in one transaction with the rest
    name = f"ds={DAYS[2]}"
    entry = client.partition_statistics("sales", "events", [name], ["name"])[name][0]
    wrong = replace(entry, stats=replace(entry.stats, num_nulls=entry.stats.num_nulls + 1))
    client.write_statistics([StatsWrite("sales", "events", [wrong], partition_name=name)])
    third = analyze_table(no_spark, "sales.events", metastore=url, cache=str(cache))
    assert not third.failed and [r[5] for r in third.rows] == [0, 0, 0, 0]
    assert "3 partition(s) unchanged since the last ANALYZE" in third.message
    assert _all_stats(client) == local
    local_client.close()
    client.close()
