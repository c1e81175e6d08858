"""ANALYZE end to end on the embedded client: a table partitioned by (ds, src) whose partitions hold ORC written by
our writer (LOAD DATA from CSV) and by pyarrow (files placed in partition folders, found by MSCK REPAIR). Every
number is checked against ground truth computed independently with pyarrow/numpy: min, max, nulls, trues,
falses, avgColLen and maxColLen exactly; NDV within 2 % per partition and 4 % for the table (merged sketches)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.locations import local_path
from metastore.sql.errors import SqlError
from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    ColumnStats,
    StringStats,
)
from sql.ground_truth import (
    COLUMNS,
    CREATE_COLUMNS,
    Expected,
    expected,
    make_table,
    write_csv,
    write_pyarrow_orc,
)
from sql.session import SqlSession

ROWS = 12_000
DISTINCT = 9_000
PARTITIONS = [("d1", "ours"), ("d1", "pyarrow"), ("d2", "ours"), ("d2", "pyarrow")]
HIVE_TYPES = {name: hive for name, hive, _ in COLUMNS}


class Dataset:
    """The table's data per partition name, as generated."""

    def __init__(self, client: EmbeddedMetastoreClient, session: SqlSession, data: dict[str, pa.Table]) -> None:
        self.client = client
        self.session = session
        self.data = data

    def table(self, names: list[str] | None = None) -> pa.Table:
        return pa.concat_tables([self.data[n] for n in names or sorted(self.data)])

    def clear_statistics(self) -> None:
        self.client.delete_partition_statistics("sales", "orders")
        try:
            self.client.delete_table_statistics("sales", "orders")
        except Exception:  # noqa: BLE001 - none stored yet
            pass


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dataset]:
    root = tmp_path_factory.mktemp("analyze")
    client = EmbeddedMetastoreClient(f"sqlite:///{root / 'ms.db'}", str(root / "warehouse"))
    session = SqlSession(client, root / "cache.sqlite")
    session.run(
        f"CREATE DATABASE sales; USE sales; CREATE TABLE orders ({CREATE_COLUMNS}) PARTITIONED BY (ds string, src string) "
        "STORED AS ORC TBLPROPERTIES ('orc.compress'='ZLIB', 'orc.row.index.stride'='5000')"
    )
    location = local_path(client.get_table("sales", "orders").sd.location)
    rng = np.random.default_rng(20240101)
    data: dict[str, pa.Table] = {}
    for ds, src in PARTITIONS:
        table = make_table(rng, ROWS, DISTINCT)
        name = f"ds={ds}/src={src}"
        data[name] = table
        if src == "ours":
            csv_path = root / f"{ds}.csv"
            write_csv(table, csv_path)
            session.run(f"LOAD DATA LOCAL INPATH '{csv_path}' INTO TABLE orders PARTITION (ds='{ds}', src='ours')")
        else:
            # two files, so merging over files is exercised too
            half = ROWS // 2
            write_pyarrow_orc(table.slice(0, half), location / name / "part-00000.orc")
            write_pyarrow_orc(table.slice(half), location / name / "part-00001.orc")
    assert session.one("MSCK REPAIR TABLE orders").message == "2 partition(s) added"
    yield Dataset(client, session, data)
    client.close()


def check(actual: ColumnStats, want: Expected, ndv_tolerance: float, where: str) -> None:
    assert actual.num_nulls == want.num_nulls, where
    if isinstance(actual, BooleanStats):
        assert (actual.num_trues, actual.num_falses) == (want.num_trues, want.num_falses), where
        return
    if isinstance(actual, StringStats | BinaryStats):
        assert actual.max_col_len == want.max_col_len, where
        assert want.avg_col_len is not None and math.isclose(actual.avg_col_len, want.avg_col_len, rel_tol=1e-9), where
        if isinstance(actual, BinaryStats):
            return
    else:
        assert (actual.low, actual.high) == (want.low, want.high), where
    assert want.ndv is not None
    ndv = actual.num_dvs
    assert abs(ndv - want.ndv) <= max(1.0, ndv_tolerance * want.ndv), f"{where}: NDV {ndv}, true {want.ndv}"


def partition_stats(ds: Dataset, names: list[str]) -> dict[str, dict[str, ColumnStats]]:
    found = ds.client.partition_statistics("sales", "orders", names, list(HIVE_TYPES))
    return {n: {e.column: e.stats for e in entries} for n, entries in found.items()}


def table_stats(ds: Dataset) -> dict[str, ColumnStats]:
    return {e.column: e.stats for e in ds.client.table_statistics("sales", "orders", list(HIVE_TYPES))}


def test_basic_statistics(dataset: Dataset) -> None:
    dataset.session.run("USE sales")
    result = dataset.session.one("ANALYZE TABLE orders COMPUTE STATISTICS")
    assert result.message is not None and result.message.startswith(
        "analyzed 4 partition(s) of sales.orders, footers of 6 file(s) read"
    )
    for part in dataset.client.list_partitions("sales", "orders"):
        name = "/".join(f"{k}={v}" for k, v in zip(("ds", "src"), part.values, strict=True))
        files = [p for p in local_path(part.sd.location).iterdir() if not p.name.startswith((".", "_"))]
        params = part.parameters
        assert params["numRows"] == str(dataset.data[name].num_rows)
        assert params["numFiles"] == str(len(files))
        assert params["totalSize"] == str(sum(p.stat().st_size for p in files))
        assert int(params["rawDataSize"]) > 0
        assert json.loads(params["COLUMN_STATS_ACCURATE"])["BASIC_STATS"] == "true"
    result = dataset.session.one("ANALYZE TABLE orders PARTITION (src='pyarrow') COMPUTE STATISTICS NOSCAN")
    assert [r[0] for r in result.rows] == ["ds=d1/src=pyarrow", "ds=d2/src=pyarrow"]
    part = dataset.client.get_partition("sales", "orders", ["d1", "pyarrow"])
    assert part.parameters["numFiles"] == "2" and "numRows" not in part.parameters
    assert "BASIC_STATS" not in json.loads(part.parameters["COLUMN_STATS_ACCURATE"])


def test_column_statistics_partial_spec_then_all(dataset: Dataset) -> None:
    session = dataset.session
    session.run("USE sales")
    dataset.clear_statistics()
    result = session.one("ANALYZE TABLE sales.orders PARTITION (ds='d1') COMPUTE STATISTICS FOR COLUMNS")
    assert [r[0] for r in result.rows] == ["ds=d1/src=ours", "ds=d1/src=pyarrow"]
    assert [r[1] for r in result.rows] == [ROWS, ROWS]
    names = sorted(dataset.data)
    stats = partition_stats(dataset, names)
    assert sorted(stats) == ["ds=d1/src=ours", "ds=d1/src=pyarrow"], "only the matching partitions"
    for name in stats:
        for column, hive in HIVE_TYPES.items():
            check(stats[name][column], expected(dataset.data[name].column(column), hive), 0.02, f"{name} {column}")
    part = dataset.client.get_partition("sales", "orders", ["d1", "ours"])
    accurate = json.loads(part.parameters["COLUMN_STATS_ACCURATE"])
    assert accurate["BASIC_STATS"] == "true" and sorted(accurate["COLUMN_STATS"]) == sorted(HIVE_TYPES)
    assert part.parameters["numRows"] == str(ROWS)
    # table level so far: the metastore's aggregation over all four partitions (two have statistics)
    assert set(table_stats(dataset)) == set(HIVE_TYPES)

    result = session.one("ANALYZE TABLE orders COMPUTE STATISTICS FOR ALL COLUMNS")
    assert len(result.rows) == 4
    stats = partition_stats(dataset, names)
    for name in names:
        for column, hive in HIVE_TYPES.items():
            check(stats[name][column], expected(dataset.data[name].column(column), hive), 0.02, f"{name} {column}")
    whole = dataset.table()
    merged = table_stats(dataset)
    for column, hive in HIVE_TYPES.items():
        check(merged[column], expected(whole.column(column), hive), 0.04, f"table {column}")
    # never the max of partition NDVs: the union has more distinct ids than any partition
    assert merged["id"].num_dvs > max(s["id"].num_dvs for s in stats.values()) * 1.5


def test_for_columns_subset_and_describe(dataset: Dataset) -> None:
    session = dataset.session
    session.run("USE sales")
    dataset.clear_statistics()
    session.run("ANALYZE TABLE orders PARTITION (ds='d2', src='ours') COMPUTE STATISTICS FOR COLUMNS name, flag, day")
    stats = partition_stats(dataset, ["ds=d2/src=ours"])["ds=d2/src=ours"]
    assert sorted(stats) == ["day", "flag", "name"]
    data = dataset.data["ds=d2/src=ours"]

    row = session.rows("DESCRIBE FORMATTED orders PARTITION (ds='d2', src='ours') name")[0]
    want = expected(data.column("name"), "string")
    assert row["col_name"] == "name" and row["data_type"] == "string"
    assert row["num_nulls"] == want.num_nulls and row["max_col_len"] == want.max_col_len
    assert math.isclose(row["avg_col_len"], want.avg_col_len or 0.0, rel_tol=1e-9)
    assert abs(row["distinct_count"] - (want.ndv or 0)) <= 0.02 * (want.ndv or 0)
    assert row["bitVector"] == "HL" and row["min"] == "" and row["num_trues"] == ""

    row = session.rows("DESCRIBE FORMATTED orders PARTITION (ds='d2', src='ours') flag")[0]
    want = expected(data.column("flag"), "boolean")
    assert (row["num_trues"], row["num_falses"], row["num_nulls"]) == (want.num_trues, want.num_falses, want.num_nulls)

    row = session.rows("DESCRIBE FORMATTED orders PARTITION (ds='d2', src='ours') day")[0]
    days = data.column("day").drop_null()
    assert (row["min"], row["max"]) == (str(min(days.to_pylist())), str(max(days.to_pylist())))

    # the table level: analyse everything, then DESCRIBE without a partition shows the merged statistics
    session.run("ANALYZE TABLE orders COMPUTE STATISTICS FOR COLUMNS price, ts")
    whole = dataset.table()
    row = session.rows("DESCRIBE FORMATTED orders price")[0]
    want = expected(whole.column("price"), "decimal(12,2)")
    assert (row["min"], row["max"], row["num_nulls"]) == (want.low, want.high, want.num_nulls)
    row = session.rows("DESCRIBE FORMATTED orders ts")[0]
    want = expected(whole.column("ts"), "timestamp")
    import datetime as dt

    as_text = [dt.datetime.fromtimestamp(v, dt.UTC).strftime("%Y-%m-%d %H:%M:%S") for v in (want.low, want.high)]
    assert [row["min"], row["max"]] == as_text
    # a column without statistics shows its name and type with empty cells
    row = session.rows("DESCRIBE FORMATTED orders blob")[0]
    assert row["data_type"] == "binary" and row["num_nulls"] == ""


def test_incremental_reanalysis_reads_only_changed_files(dataset: Dataset) -> None:
    session = dataset.session
    session.run("USE sales")
    session.run("ANALYZE TABLE orders COMPUTE STATISTICS FOR COLUMNS id, name")
    again = session.one("ANALYZE TABLE orders COMPUTE STATISTICS FOR COLUMNS id, name")
    assert sum(r[5] for r in again.rows) == 0, "every file comes from the cache"
    assert sum(r[6] for r in again.rows) == 6
    assert "0 file(s) read" in (again.message or "") and "6 reused from the cache" in (again.message or "")
    session.run("INSERT INTO orders PARTITION (ds='d1', src='pyarrow') VALUES "
                "(424242, 1, 1, 1, 1.5, 0.5, 0.5, true, 'brand new name', 'c', 'g000', '2024-01-01', NULL, NULL)")
    third = session.one("ANALYZE TABLE orders COMPUTE STATISTICS FOR COLUMNS id, name")
    assert sum(r[5] for r in third.rows) == 1 and sum(r[6] for r in third.rows) == 6
    stats = partition_stats(dataset, ["ds=d1/src=pyarrow"])["ds=d1/src=pyarrow"]
    base = dataset.data["ds=d1/src=pyarrow"]
    ids = base.column("id").drop_null().to_pylist() + [424242]
    assert stats["id"].num_nulls == base.column("id").null_count
    assert stats["id"].high == max(ids)
    part = dataset.client.get_partition("sales", "orders", ["d1", "pyarrow"])
    assert part.parameters["numRows"] == str(ROWS + 1)


def test_unpartitioned_table(session: SqlSession, embedded: EmbeddedMetastoreClient, tmp_path: Path) -> None:
    session.run(f"CREATE TABLE flat ({CREATE_COLUMNS})")
    table = make_table(np.random.default_rng(7), 3000, 2000)
    write_csv(table, tmp_path / "flat.csv")
    session.run(f"LOAD DATA LOCAL INPATH '{tmp_path / 'flat.csv'}' INTO TABLE flat")
    result = session.one("ANALYZE TABLE flat COMPUTE STATISTICS FOR COLUMNS")
    assert result.rows[0][:3] == ["default.flat", 3000, 1]
    stats = {e.column: e.stats for e in embedded.table_statistics("default", "flat", list(HIVE_TYPES))}
    for column, hive in HIVE_TYPES.items():
        check(stats[column], expected(table.column(column), hive), 0.02, column)
    params = embedded.get_table("default", "flat").parameters
    assert params["numRows"] == "3000"
    assert sorted(json.loads(params["COLUMN_STATS_ACCURATE"])["COLUMN_STATS"]) == sorted(HIVE_TYPES)


def test_analyze_errors(session: SqlSession) -> None:
    session.run("CREATE TABLE t (a int, m map<string,int>) PARTITIONED BY (ds string)")
    with pytest.raises(SqlError) as info:
        session.run("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS a, ds")
    assert str(info.value).startswith("line 1:51: 'ds' is a partition column of default.t")
    with pytest.raises(SqlError) as info:
        session.run("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS nope")
    assert str(info.value) == "line 1:48: column 'nope' does not exist in default.t"
    with pytest.raises(SqlError, match="column 'm' is map<string,int>; Hive keeps no statistics of complex types"):
        session.run("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS m")
    with pytest.raises(SqlError) as info:
        session.run("ANALYZE TABLE t PARTITION (ds='9') COMPUTE STATISTICS")
    assert str(info.value) == "line 1:17: partition (ds='9') of default.t does not exist"
    with pytest.raises(SqlError, match="not partitioned; ANALYZE takes no PARTITION"):
        session.run("CREATE TABLE flat (a int); ANALYZE TABLE flat PARTITION (ds='1') COMPUTE STATISTICS")
    session.run("CREATE TABLE pq (a int) STORED AS PARQUET")
    with pytest.raises(SqlError, match="needs an ORC table"):
        session.run("ANALYZE TABLE pq COMPUTE STATISTICS FOR COLUMNS")
    assert session.one("ANALYZE TABLE pq COMPUTE STATISTICS NOSCAN").rows[0][:4] == ["default.pq", None, 0, 0]


def test_verbose_reports_every_phase(dataset: Dataset) -> None:
    verbose = SqlSession(dataset.client, None, verbose=True)  # no per-file cache: every file is read
    result = verbose.one("ANALYZE TABLE sales.orders PARTITION (ds) COMPUTE STATISTICS FOR COLUMNS id, name")
    lines = (result.message or "").splitlines()
    assert lines[0].startswith("analyzed 4 partition(s) of sales.orders")
    phases: dict[str, tuple[float, str]] = {}
    for line in lines[1:]:
        match = re.fullmatch(r"phase (.+?) +(\d+\.\d{3}) s (wall|CPU, summed over the workers)", line)
        assert match, line
        phases[match[1].strip()] = (float(match[2]), match[3])
    files = sum(len(list(Path(p.sd.location.removeprefix("file:")).glob("*")))
                for p in dataset.client.list_partitions("sales", "orders"))
    wall = ["listing (partitions and files)", "per-file store (lookups, writes)", f"harvest ({files} file(s) analysed)",
            "merge (files into partitions and table)", "persistence (parameters and statistics through the client)",
            "statement total"]
    cpu = ["footers", "scan and decode", "hashing", "sketch updates"]
    for name in wall:
        assert phases[name][1] == "wall", name
    for name in cpu:
        assert phases[name][1].startswith("CPU"), name
    # (hashing's clock itself is checked unrounded in tests/stats/test_harvest_parts.py: the compiled Murmur3 loop
    # hashes these 2 x 48,000 values in well under the millisecond this report prints)
    assert phases["scan and decode"][0] > 0 and "hashing" in phases
    assert phases["statement total"][0] >= max(phases[name][0] for name in wall[:-1])
    assert phases["start-up before the first statement (interpreter, imports, connecting)"][0] > 0
    assert "loading the harvest (imports)" in phases
    # the process's start-up belongs to the session's first statement only: a later one would count earlier work
    second = verbose.one("ANALYZE TABLE sales.orders PARTITION (ds) COMPUTE STATISTICS FOR COLUMNS id")
    assert "\nphase statement total" in (second.message or "") and "start-up" not in (second.message or "")
    quiet = SqlSession(dataset.client, None).one("ANALYZE TABLE sales.orders PARTITION (ds) COMPUTE STATISTICS FOR COLUMNS id")
    assert "\nphase " not in (quiet.message or "")
