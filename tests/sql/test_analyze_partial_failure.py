"""ANALYZE with a corrupt file in one partition writes the other partitions and names the file; SET chooses the
ANALYZE engine (metastore.analyze.engine, metastore.analyze.spark.threshold)."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest

from metastore import storage
from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.sql.errors import SqlError
from metastore.sql.executor import Executor
from metastore.sql.parser import parse_statement
from metastore.sql.session import ExecutorOptions
from metastore.sql.shell import Shell
from metastore.sql.statements import SetVariable
from sql.session import SqlSession


def _table_with_a_corrupt_partition(session: SqlSession, warehouse: Path) -> Path:
    session.run("CREATE TABLE t (a int, s string) PARTITIONED BY (ds string)")
    for day in ("1", "2", "3"):
        session.run(f"INSERT INTO t PARTITION (ds='{day}') VALUES (1, 'x'), (2, 'y'), ({day}, 'z{day}')")
    bad = warehouse / "t" / "ds=2" / "bad.orc"
    bad.write_bytes(b"ORC" + b"\x00garbage" * 50)
    return bad


def test_a_corrupt_file_fails_only_its_partition(session: SqlSession, embedded: EmbeddedMetastoreClient,
                                                 warehouse: Path) -> None:
    bad = _table_with_a_corrupt_partition(session, warehouse)
    result = session.one("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS")
    assert result.failed
    assert [r[0] for r in result.rows] == ["ds=1", "ds=3"]
    assert "analyzed 2 partition(s) of default.t" in (result.message or "")
    assert f"1 partition(s) failed, nothing written for them: ds=2: cannot analyze {bad}" in (result.message or "")
    stats = embedded.partition_statistics("default", "t", ["ds=1", "ds=2", "ds=3"], ["a", "s"])
    assert sorted(stats) == ["ds=1", "ds=3"]
    before = embedded.get_partition("default", "t", ["2"]).parameters
    assert before["numFiles"] == "1", "INSERT's parameters stay: ANALYZE wrote nothing for ds=2 (it has 2 files)"
    assert embedded.get_partition("default", "t", ["3"]).parameters["numRows"] == "3"
    # the table level is aggregated by the metastore over the partitions that have statistics
    table_stats = {e.column: e.stats for e in embedded.table_statistics("default", "t", ["a"])}
    assert table_stats["a"].num_nulls == 0
    basic = session.one("ANALYZE TABLE t COMPUTE STATISTICS")
    assert basic.failed and [r[0] for r in basic.rows] == ["ds=1", "ds=3"]
    assert embedded.get_partition("default", "t", ["2"]).parameters == before
    noscan = session.one("ANALYZE TABLE t COMPUTE STATISTICS NOSCAN")
    assert not noscan.failed and embedded.get_partition("default", "t", ["2"]).parameters["numFiles"] == "2"


def test_each_file_is_read_once_when_a_partition_fails(session: SqlSession, warehouse: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # every data file opened by the harvest (in the worker processes too: they inherit the patch) is logged
    bad = _table_with_a_corrupt_partition(session, warehouse)
    log = tmp_path / "opened.log"
    real = storage.open_file

    def logged(file, *args, **kwargs):
        url = file.url if isinstance(file, storage.FileRef) else str(file)
        with open(log, "a") as f:
            f.write("/".join(Path(url).parts[-2:]) + "\n")
        return real(file, *args, **kwargs)

    monkeypatch.setattr(storage, "open_file", logged)
    result = session.one("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS")
    assert result.failed and [r[0] for r in result.rows] == ["ds=1", "ds=3"]
    assert f"ds=2: cannot analyze {bad}" in (result.message or "")
    opened = Counter(log.read_text().split())
    data_files = ["/".join(p.parts[-2:]) for p in sorted(warehouse.glob("t/ds=*/*")) if p.is_file()]
    good = [f for f in data_files if not f.startswith("ds=2/")]
    assert len(good) == 2 and all(opened[f] == 1 for f in good), opened
    # the failed partition's files: the corrupt one read once, its good file at most once (not if it was
    # not started when the failure came)
    assert opened["ds=2/bad.orc"] == 1 and all(opened[f] <= 1 for f in data_files), opened
    assert set(opened) <= set(data_files)


def test_batch_mode_exits_1_after_a_partial_failure(embedded: EmbeddedMetastoreClient, warehouse: Path,
                                                    stats_cache: Path) -> None:
    _table_with_a_corrupt_partition(SqlSession(embedded, stats_cache), warehouse)
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(Executor(embedded, options=ExecutorOptions(stats_cache=str(stats_cache))), out=out, err=err)
    assert shell.run_script("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS a; SHOW TABLES;") == 1
    assert "bad.orc" in err.getvalue() and "ds=3" in out.getvalue()
    assert "t\n" not in out.getvalue().split("ds=3")[1]  # stopped before SHOW TABLES


def test_set_parses_hive_syntax() -> None:
    st = parse_statement("SET")
    assert isinstance(st, SetVariable) and (st.key, st.value) == (None, None)
    st = parse_statement("SET metastore.analyze.engine = spark;")
    assert isinstance(st, SetVariable) and (st.key, st.value) == ("metastore.analyze.engine", "spark")
    st = parse_statement("set hive.exec.dynamic.partition.mode=nonstrict")
    assert isinstance(st, SetVariable) and (st.key, st.value) == ("hive.exec.dynamic.partition.mode", "nonstrict")
    st = parse_statement("SET metastore.analyze.spark.threshold")
    assert isinstance(st, SetVariable) and (st.key, st.value) == ("metastore.analyze.spark.threshold", None)
    with pytest.raises(SqlError, match="expected a value for x.y after '='"):
        parse_statement("SET x.y =")


def test_set_changes_the_engine_settings(session: SqlSession) -> None:
    options = session.executor.options
    session.run("SET metastore.analyze.engine = LOCAL")
    assert options.analyze_engine == "local"
    session.run("SET metastore.analyze.spark.threshold = 512m")
    assert options.spark_threshold == 512 << 20
    session.run("SET metastore.analyze.spark.threshold=2GiB")
    assert options.spark_threshold == 2 << 30
    assert session.rows("SET metastore.analyze.engine") == [{"key": "metastore.analyze.engine", "value": "local"}]
    with pytest.raises(SqlError, match="metastore.analyze.engine must be one of local, spark, auto, got 'fast'"):
        session.run("SET metastore.analyze.engine = fast")
    with pytest.raises(SqlError, match="must be a size in bytes"):
        session.run("SET metastore.analyze.spark.threshold = lots")
    kept = session.one("SET hive.exec.dynamic.partition = true")
    assert kept.message == "hive.exec.dynamic.partition is not used by this shell (kept for SET)"
    listed = {r["key"]: r["value"] for r in session.rows("SET")}
    assert listed["hive.exec.dynamic.partition"] == "true"
    assert listed["metastore.analyze.spark.threshold"] == str(2 << 30)


def test_spark_engine_without_a_master_is_a_clear_error(session: SqlSession, warehouse: Path) -> None:
    session.run("CREATE TABLE u (a int); INSERT INTO u VALUES (1)")
    session.run("SET metastore.analyze.engine = spark")
    with pytest.raises(SqlError, match="no Spark master is configured: start the shell with --spark MASTER"):
        session.run("ANALYZE TABLE u COMPUTE STATISTICS FOR COLUMNS")
    # auto without a master, and NOSCAN always, run here
    session.run("SET metastore.analyze.engine = auto")
    assert session.one("ANALYZE TABLE u COMPUTE STATISTICS FOR COLUMNS").rows[0][1] == 1
