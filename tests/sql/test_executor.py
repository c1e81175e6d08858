"""Statements end to end on the embedded client (SQLite): catalog effects, files written, errors with positions."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow.orc as pa_orc
import pytest

from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.locations import local_path
from metastore.sql.errors import Position, SqlError
from sql.session import SqlSession


def orc_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))


# ------------------------------------------------------------------------------------------ databases and tables


def test_databases(session: SqlSession, embedded: EmbeddedMetastoreClient, tmp_path: Path) -> None:
    session.run("CREATE DATABASE Sales COMMENT 'money' WITH DBPROPERTIES ('team'='x')")
    db = embedded.get_database("sales")
    assert db.description == "money" and db.parameters == {"team": "x"}
    assert db.location_uri and local_path(db.location_uri).is_dir()
    session.run(f"CREATE DATABASE elsewhere LOCATION '{tmp_path / 'else'}'")
    assert embedded.get_database("elsewhere").location_uri == f"file:{tmp_path / 'else'}"
    assert session.rows("SHOW DATABASES") == [{"database_name": n} for n in ("default", "elsewhere", "sales")]
    assert session.rows("SHOW SCHEMAS LIKE 'sa*'") == [{"database_name": "sales"}]
    assert session.one("CREATE DATABASE IF NOT EXISTS sales").message == "database sales exists already"
    with pytest.raises(SqlError) as info:
        session.run("CREATE DATABASE sales")
    assert str(info.value) == "line 1:17: database sales exists already"
    described = session.rows("DESCRIBE DATABASE EXTENDED sales")[0]
    assert described["comment"] == "money" and described["parameters"] == "team=x"
    session.run("USE sales")
    assert session.executor.database == "sales"
    session.run("CREATE TABLE t (a int)")
    with pytest.raises(SqlError, match="not empty|is not empty|has tables|tables"):
        session.run("DROP DATABASE sales")
    session.run("DROP DATABASE sales CASCADE")
    assert session.executor.database == "default"
    assert not local_path(db.location_uri).exists()
    assert session.one("DROP DATABASE IF EXISTS sales").message == "database sales does not exist"
    with pytest.raises(SqlError) as info:
        session.run("USE nothing")
    assert str(info.value) == "line 1:5: database 'nothing' does not exist"


def test_create_table_stores_hive_definitions(session: SqlSession, embedded: EmbeddedMetastoreClient) -> None:
    session.run(
        "CREATE TABLE Orders (ID bigint COMMENT 'key', price DECIMAL(10,2), name varchar(20), code char(3), "
        "f float, d double, b boolean, dt date, ts timestamp, bin binary, tiny tinyint, small smallint, i integer, "
        "dec decimal) COMMENT 'all types' PARTITIONED BY (ds string, hr int) STORED AS ORC "
        "TBLPROPERTIES ('orc.compress'='ZLIB', 'orc.bloom.filter.columns'='id,name')"
    )
    t = embedded.get_table("default", "orders")
    assert [(c.name, c.type) for c in t.sd.cols] == [
        ("id", "bigint"), ("price", "decimal(10,2)"), ("name", "varchar(20)"), ("code", "char(3)"), ("f", "float"),
        ("d", "double"), ("b", "boolean"), ("dt", "date"), ("ts", "timestamp"), ("bin", "binary"),
        ("tiny", "tinyint"), ("small", "smallint"), ("i", "int"), ("dec", "decimal(10,0)"),
    ]
    assert t.sd.cols[0].comment == "key"
    assert [(k.name, k.type) for k in t.partition_keys] == [("ds", "string"), ("hr", "int")]
    assert t.sd.input_format == "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
    assert t.sd.serde_info.serialization_lib == "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
    assert t.table_type == "MANAGED_TABLE"
    assert t.parameters["comment"] == "all types" and t.parameters["orc.compress"] == "ZLIB"
    assert t.sd.location and local_path(t.sd.location).is_dir()
    assert session.rows("SHOW TABLES") == [{"tab_name": "orders"}]
    assert session.rows("SHOW TBLPROPERTIES orders ('orc.compress')") == [
        {"prpt_name": "orc.compress", "prpt_value": "ZLIB"}
    ]
    with pytest.raises(SqlError) as info:
        session.run("SHOW TBLPROPERTIES orders ('nope')")
    assert "does not have property 'nope'" in str(info.value)
    described = session.one("DESCRIBE orders")
    assert described.rows[0] == ["id", "bigint", "key"]
    assert ["# Partition Information", "", ""] in described.rows
    formatted = session.rows("DESCRIBE FORMATTED orders")
    by_name = {r["col_name"]: r for r in formatted}
    assert by_name["Table Type:"]["data_type"] == "MANAGED_TABLE"
    assert by_name["InputFormat:"]["data_type"] == "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
    assert {"col_name": "", "data_type": "orc.compress", "comment": "ZLIB"} in formatted
    extended = session.one("DESCRIBE EXTENDED orders")
    assert extended.rows[-1][0] == "Detailed Table Information" and "tableName:orders" in extended.rows[-1][1]
    assert session.rows("DESCRIBE orders price") == [{"col_name": "price", "data_type": "decimal(10,2)", "comment": ""}]


def test_external_table_keeps_data_on_drop(session: SqlSession, embedded: EmbeddedMetastoreClient, tmp_path: Path) -> None:
    location = tmp_path / "ext"
    session.run(f"CREATE EXTERNAL TABLE e (a int) LOCATION '{location}'")
    t = embedded.get_table("default", "e")
    assert t.table_type == "EXTERNAL_TABLE" and t.parameters["EXTERNAL"] == "TRUE" and t.sd.location == f"file:{location}"
    session.run("INSERT INTO e VALUES (1), (2)")
    session.run("DROP TABLE e")
    assert orc_files(location), "an external table's data stays"
    session.run("CREATE TABLE m (a int)")
    managed = local_path(embedded.get_table("default", "m").sd.location)
    session.run("INSERT INTO m VALUES (1)")
    session.run("DROP TABLE m")
    assert not managed.exists()
    assert session.one("DROP TABLE IF EXISTS m").message == "table default.m does not exist"


def test_table_errors_point_at_names(session: SqlSession) -> None:
    session.run("CREATE TABLE t (a int)")
    with pytest.raises(SqlError) as info:
        session.run("CREATE TABLE t (b int)")
    assert str(info.value) == "line 1:14: table default.t exists already"
    assert session.one("CREATE TABLE IF NOT EXISTS t (b int)").message == "table default.t exists already"
    with pytest.raises(SqlError) as info:
        session.run("DESCRIBE   missing")
    assert str(info.value) == "line 1:12: table default.missing does not exist"
    with pytest.raises(SqlError) as info:
        session.run("DESCRIBE nodb.t")
    assert str(info.value) == "line 1:10: database 'nodb' does not exist"
    with pytest.raises(SqlError) as info:
        session.run("DESCRIBE t nope")
    assert str(info.value) == "line 1:12: column 'nope' does not exist in default.t"
    with pytest.raises(SqlError, match="option orc.compress must be"):
        session.run("CREATE TABLE bad (a int) TBLPROPERTIES ('orc.compress'='FAST')")
    with pytest.raises(SqlError, match="orc.bloom.filter.columns names 'zz'"):
        session.run("CREATE TABLE bad (a int) TBLPROPERTIES ('orc.bloom.filter.columns'='zz')")
    with pytest.raises(SqlError, match="unknown format"):
        session.run("CREATE TABLE bad (a int) STORED AS JSONISH")
    session.run("ALTER TABLE t SET TBLPROPERTIES ('orc.compress'='SNAPPY', 'note'='x')")
    assert session.rows("SHOW TBLPROPERTIES t ('note')")[0]["prpt_value"] == "x"
    session.run("CREATE TABLE p (a int) STORED AS PARQUET")
    with pytest.raises(SqlError, match="INSERT needs an ORC table"):
        session.run("INSERT INTO p VALUES (1)")


# ------------------------------------------------------------------------------------------ partitions


def test_partitions_add_show_drop(session: SqlSession, embedded: EmbeddedMetastoreClient, tmp_path: Path) -> None:
    session.run("CREATE TABLE t (a int) PARTITIONED BY (ds string, hr int)")
    session.run(
        f"ALTER TABLE t ADD PARTITION (ds='2024-01-01', hr=1) PARTITION (hr='02', ds='2024-01-01') "
        f"PARTITION (ds='2024-01-02', hr=1) LOCATION '{tmp_path / 'elsewhere'}'"
    )
    assert [r["partition"] for r in session.rows("SHOW PARTITIONS t")] == [
        "ds=2024-01-01/hr=1", "ds=2024-01-01/hr=2", "ds=2024-01-02/hr=1",
    ]  # hr='02' is normalised to its int value, as Hive does
    assert embedded.get_partition("default", "t", ["2024-01-02", "1"]).sd.location == f"file:{tmp_path / 'elsewhere'}"
    assert [r["partition"] for r in session.rows("SHOW PARTITIONS t PARTITION (hr=1)")] == [
        "ds=2024-01-01/hr=1", "ds=2024-01-02/hr=1",
    ]
    with pytest.raises(SqlError, match="exist"):
        session.run("ALTER TABLE t ADD PARTITION (ds='2024-01-01', hr=1)")
    assert session.one("ALTER TABLE t ADD IF NOT EXISTS PARTITION (ds='2024-01-01', hr=1)").message == (
        "added 0 partition(s), 1 existed already"
    )
    with pytest.raises(SqlError) as info:
        session.run("ALTER TABLE t ADD PARTITION (ds='x')")
    assert str(info.value) == "line 1:19: ADD PARTITION needs a value for every partition column of default.t; missing: hr"
    with pytest.raises(SqlError) as info:
        session.run("ALTER TABLE t ADD PARTITION (ds='x', hr='five')")
    assert str(info.value).startswith("line 1:41: partition column 'hr': 'five' is not a valid int value")
    with pytest.raises(SqlError) as info:
        session.run("ALTER TABLE t ADD PARTITION (ds='x', minute=1)")
    assert str(info.value) == (
        "line 1:38: 'minute' is not a partition column of default.t (partition columns: ds, hr)"
    )
    dropped = session.one("ALTER TABLE t DROP PARTITION (ds='2024-01-01')")  # a partial spec drops all matching
    assert sorted(r[0] for r in dropped.rows) == ["ds=2024-01-01/hr=1", "ds=2024-01-01/hr=2"]
    assert [r["partition"] for r in session.rows("SHOW PARTITIONS t")] == ["ds=2024-01-02/hr=1"]
    with pytest.raises(SqlError, match="no partition of default.t matches"):
        session.run("ALTER TABLE t DROP PARTITION (ds='nope')")
    session.run("ALTER TABLE t DROP IF EXISTS PARTITION (ds='nope')")
    session.run("CREATE TABLE flat (a int)")
    with pytest.raises(SqlError, match="not a partitioned table"):
        session.run("SHOW PARTITIONS flat")


def test_msck_repair_adds_and_drops_partition_folders(
    session: SqlSession, embedded: EmbeddedMetastoreClient
) -> None:
    session.run("CREATE TABLE t (a int) PARTITIONED BY (ds string, hr int)")
    root = local_path(embedded.get_table("default", "t").sd.location)
    for rel in ("ds=2024-01-01/hr=1", "ds=2024-01-01/hr=2", "ds=2024%2F02/hr=3", "ds=x/other=1", "junk",
                "_tmp/hr=1", "ds=2024-01-03"):
        (root / rel).mkdir(parents=True)
    session.run("ALTER TABLE t ADD PARTITION (ds='2024-01-01', hr=1) PARTITION (ds='gone', hr=9)")
    gone = local_path(embedded.get_partition("default", "t", ["gone", "9"]).sd.location)
    gone.rmdir()
    report = session.rows("MSCK TABLE t SYNC PARTITIONS")
    assert report == [
        {"partition": "t:ds=2024%2F02/hr=3", "status": "not in metastore"},
        {"partition": "t:ds=2024-01-01/hr=2", "status": "not in metastore"},
        {"partition": "t:ds=gone/hr=9", "status": "missing from filesystem"},
    ]
    assert len(session.rows("SHOW PARTITIONS t")) == 2, "without REPAIR nothing changes"
    result = session.one("MSCK REPAIR TABLE t")
    assert result.message == "2 partition(s) added"
    names = [r["partition"] for r in session.rows("SHOW PARTITIONS t")]
    assert names == ["ds=2024%2F02/hr=3", "ds=2024-01-01/hr=1", "ds=2024-01-01/hr=2", "ds=gone/hr=9"]
    assert embedded.get_partition("default", "t", ["2024/02", "3"]).sd.location == f"file:{root / 'ds=2024%2F02/hr=3'}"
    assert session.one("MSCK REPAIR TABLE t DROP PARTITIONS").message == "1 partition(s) dropped"
    assert "ds=gone/hr=9" not in [r["partition"] for r in session.rows("SHOW PARTITIONS t")]
    assert session.one("MSCK REPAIR TABLE t").message == "0 partition(s) added"


# ------------------------------------------------------------------------------------------ writing data


def test_insert_values_writes_orc_with_table_options(session: SqlSession, embedded: EmbeddedMetastoreClient) -> None:
    session.run(
        "CREATE TABLE t (i int, s string, v varchar(3), c char(4), dec decimal(6,2), f float, d double, b boolean, "
        "dt date, ts timestamp, bin binary) TBLPROPERTIES ('orc.compress'='SNAPPY', 'orc.row.index.stride'='1000')"
    )
    session.run(
        "INSERT INTO t VALUES "
        "(1, 'one', 'abcdef', 'x', 1.005, 1.5, -2.25e3, true, DATE '2024-02-29', '2024-01-01 10:11:12.123456789', 'by'),"
        "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
        "(-7, 'it''s', 'ab', 'abcd', -99, 0, 1e300, false, '2000-01-01', TIMESTAMP '1969-12-31 23:59:59', 'é')"
    )
    location = local_path(embedded.get_table("default", "t").sd.location)
    (path,) = orc_files(location)
    f = pa_orc.ORCFile(str(path))
    assert f.compression == "SNAPPY" and f.row_index_stride == 1000
    table = f.read()
    rows = table.drop_columns(["ts"]).to_pylist()
    assert rows[0] == {
        "i": 1, "s": "one", "v": "abc", "c": "x   ", "dec": Decimal("1.01"), "f": 1.5, "d": -2250.0, "b": True,
        "dt": dt.date(2024, 2, 29), "bin": b"by",
    }
    ts = table.column("ts").cast("int64").to_pylist()
    assert ts == [1704103872123456789, None, -1_000_000_000]  # wall-clock UTC, nanoseconds kept
    assert all(v is None for v in rows[1].values())
    assert rows[2]["s"] == "its" and rows[2]["dec"] == Decimal("-99.00") and rows[2]["bin"] == "é".encode()
    params = embedded.get_table("default", "t").parameters
    assert params["numRows"] == "3" and params["numFiles"] == "1"
    assert params["totalSize"] == str(path.stat().st_size)
    assert json.loads(params["COLUMN_STATS_ACCURATE"]) == {"BASIC_STATS": "true"}
    session.run("INSERT INTO t (s, i) VALUES ('only s', 5)")
    params = embedded.get_table("default", "t").parameters
    assert params["numRows"] == "4" and params["numFiles"] == "2"
    session.run("INSERT OVERWRITE TABLE t VALUES (9, 'z', 'z', 'z', 9, 9, 9, true, NULL, NULL, NULL)")
    assert len(orc_files(location)) == 1
    assert embedded.get_table("default", "t").parameters["numRows"] == "1"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ("(1, 2)", "line 1:23: a row of VALUES has 2 value(s) but default.t takes 3 (i, d, b)"),
        ("('x', 1, true)", "line 1:23: column 'i' (int): 'x' is not a valid int value"),
        ("(3000000000, 1, true)", "line 1:23: column 'i' (int): 3000000000 is outside the range of int"),
        ("(1.5, 1, true)", "line 1:23: column 'i' (int): '1.5' is not a valid int value (not a whole number)"),
        ("(1, 12345.678, true)", "line 1:26: column 'd' (decimal(6,2)): 12345.678 does not fit decimal(6,2)"),
        ("(1, 1, 'maybe')", "line 1:29: column 'b' (boolean): 'maybe' is not a boolean value"),
        ("(1, TRUE, true)", "line 1:26: column 'd' (decimal(6,2)): TRUE is a boolean, not a decimal(6,2) value"),
        # Numbers past Python's limits (int() of 4,300 digits, a 200-digit decimal context): the same errors.
        (f"({'9' * 5000}, 1, true)", f"line 1:23: column 'i' (int): {'9' * 57}... is outside the range of int"),
        (f"(1, {'9' * 10000}.5, true)", f"line 1:26: column 'd' (decimal(6,2)): {'9' * 57}... does not fit"),
    ],
    ids=lambda v: v[:40],
)
def test_insert_conversion_errors_name_column_and_position(session: SqlSession, values: str, message: str) -> None:
    session.run("CREATE TABLE t (i int, d decimal(6,2), b boolean)")
    with pytest.raises(SqlError) as info:
        session.run(f"INSERT INTO t VALUES {values}")
    assert str(info.value).startswith(message), str(info.value)


def test_partition_value_of_thousands_of_digits_names_column_and_position(session: SqlSession) -> None:
    session.run("CREATE TABLE p (a int) PARTITIONED BY (k bigint)")
    with pytest.raises(SqlError) as info:
        session.run(f"INSERT INTO p PARTITION (k={'9' * 5000}) VALUES (1)")
    assert str(info.value).startswith(f"line 1:28: partition column 'k': {'9' * 57}... is outside the range of bigint")
    assert len(str(info.value)) < 200


def test_insert_into_partitions_static_and_dynamic(session: SqlSession, embedded: EmbeddedMetastoreClient) -> None:
    session.run("CREATE TABLE t (a int) PARTITIONED BY (ds date, hr int)")
    session.run("INSERT INTO t PARTITION (ds='2024-1-2', hr=3) VALUES (1), (2)")
    session.run("INSERT INTO t PARTITION (ds='2024-01-05', hr) VALUES (10, 1), (11, 2), (12, 1)")
    session.run("INSERT INTO t VALUES (20, '2024-02-01', 7)")
    names = [r["partition"] for r in session.rows("SHOW PARTITIONS t")]
    assert names == ["ds=2024-01-02/hr=3", "ds=2024-01-05/hr=1", "ds=2024-01-05/hr=2", "ds=2024-02-01/hr=7"]
    part = embedded.get_partition("default", "t", ["2024-01-05", "1"])
    (path,) = orc_files(local_path(part.sd.location))
    assert pa_orc.ORCFile(str(path)).read().column("a").to_pylist() == [10, 12]
    assert part.parameters["numRows"] == "2"
    with pytest.raises(SqlError, match="a static partition value cannot follow a dynamic one"):
        session.run("INSERT INTO t PARTITION (ds, hr=1) VALUES (1, '2024-01-01')")
    with pytest.raises(SqlError, match="partition column 'hr': 'x' is not a valid int value"):
        session.run("INSERT INTO t PARTITION (ds='2024-01-01', hr) VALUES (1, 'x')")


def test_load_data_csv(session: SqlSession, embedded: EmbeddedMetastoreClient, tmp_path: Path) -> None:
    session.run("CREATE TABLE t (id bigint, name string, price double, ok boolean, d date) PARTITIONED BY (ds string)")
    csv_path = tmp_path / "in.csv"
    csv_path.write_text(
        'id,name,price,ok,d\n1,"Smith, J",1.5,true,2024-01-01\n2,\\N,,false,\n3,,2.5,,2024-01-03\n\n',
        encoding="utf-8",
    )
    result = session.one(f"LOAD DATA LOCAL INPATH '{csv_path}' INTO TABLE t PARTITION (ds='a')")
    assert result.message == "3 row(s) loaded from CSV into default.t into 1 partition(s)"
    part = embedded.get_partition("default", "t", ["a"])
    (path,) = orc_files(local_path(part.sd.location))
    assert pa_orc.ORCFile(str(path)).read().to_pylist() == [
        {"id": 1, "name": "Smith, J", "price": 1.5, "ok": True, "d": dt.date(2024, 1, 1)},
        {"id": 2, "name": None, "price": None, "ok": False, "d": None},
        {"id": 3, "name": "", "price": 2.5, "ok": None, "d": dt.date(2024, 1, 3)},
    ]
    assert part.parameters["numRows"] == "3"
    saved = tmp_path / "saved.orc"
    saved.write_bytes(path.read_bytes())
    # again: appended; then OVERWRITE replaces
    session.run(f"LOAD DATA LOCAL INPATH '{csv_path}' INTO TABLE t PARTITION (ds='a')")
    assert embedded.get_partition("default", "t", ["a"]).parameters["numRows"] == "6"
    session.run(f"LOAD DATA LOCAL INPATH '{csv_path}' OVERWRITE INTO TABLE t PARTITION (ds='a')")
    assert len(orc_files(local_path(part.sd.location))) == 1
    assert embedded.get_partition("default", "t", ["a"]).parameters["numRows"] == "3"
    # the partition columns at the end of each record when the spec leaves them open
    dynamic = tmp_path / "dyn.csv"
    dynamic.write_text("7,x,1,true,2024-01-01,b\n8,y,2,false,2024-01-01,c\n", encoding="utf-8")
    session.run(f"LOAD DATA LOCAL INPATH '{dynamic}' INTO TABLE t")
    assert [r["partition"] for r in session.rows("SHOW PARTITIONS t")] == ["ds=a", "ds=b", "ds=c"]
    # ORC files are copied as they are
    session.run(f"LOAD DATA LOCAL INPATH '{saved}' INTO TABLE t PARTITION (ds='d')")
    (copied,) = orc_files(local_path(embedded.get_partition("default", "t", ["d"]).sd.location))
    assert copied.read_bytes() == saved.read_bytes()
    assert embedded.get_partition("default", "t", ["d"]).parameters["numRows"] == "3"


def test_load_data_errors(session: SqlSession, tmp_path: Path) -> None:
    session.run("CREATE TABLE t (id int, d date)")
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2024-01-01\n2,yesterday\n", encoding="utf-8")
    with pytest.raises(SqlError) as info:
        session.run(f"LOAD DATA LOCAL INPATH '{bad}' INTO TABLE t")
    assert str(info.value) == (
        f"line 1:24: {bad} line 2, column 'd': 'yesterday' is not a valid date value (expected YYYY-MM-DD)"
    )
    short = tmp_path / "short.csv"
    short.write_text("1\n", encoding="utf-8")
    with pytest.raises(SqlError, match=r"line 1: 1 field\(s\), expected 2 \(id, d\)"):
        session.run(f"LOAD DATA LOCAL INPATH '{short}' INTO TABLE t")
    with pytest.raises(SqlError) as info:
        session.run(f"LOAD DATA LOCAL INPATH '{tmp_path / 'none.csv'}' INTO TABLE t")
    assert str(info.value) == f"line 1:24: {tmp_path / 'none.csv'} does not exist"
    with pytest.raises(SqlError, match="not partitioned; LOAD DATA takes no PARTITION"):
        session.run(f"LOAD DATA LOCAL INPATH '{bad}' INTO TABLE t PARTITION (ds='x')")
    assert not orc_files(tmp_path / "warehouse"), "nothing is written when a row is bad"


def test_values_reach_the_file_exactly(session: SqlSession, embedded: EmbeddedMetastoreClient) -> None:
    """Boundary values of each integer type and special doubles survive the round trip."""
    session.run("CREATE TABLE t (a tinyint, b smallint, c int, d bigint, e double)")
    session.run(
        "INSERT INTO t VALUES (-128, -32768, -2147483648, -9223372036854775808, 'NaN'), "
        "(127, 32767, 2147483647, 9223372036854775807, '-Infinity')"
    )
    (path,) = orc_files(local_path(embedded.get_table("default", "t").sd.location))
    table = pa_orc.ORCFile(str(path)).read()
    assert table.column("d").to_pylist() == [-(2**63), 2**63 - 1]
    e = table.column("e").to_numpy()
    assert np.isnan(e[0]) and e[1] == -np.inf


def test_error_position_type() -> None:
    assert str(SqlError("x", Position(3, 4, 20))) == "line 3:4: x"
    assert str(SqlError("x")) == "x"
