"""Hive 2.3's semantics of the catalog calls (issue 14), through real Thrift calls, on SQLite and PostgreSQL.

Each expectation was checked against the reference Hive Metastore 2.3.10 (tests/interop/reference_hms.py) on Derby:
qualified locations, `transient_lastDdlTime`, partition keys that are also data columns, name patterns as regular
expressions, LIKE in partition filters as a whole-value regular expression, rename_partition's locations and data.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from metastore.api.hive_metastore import ttypes as tt
from server import thrift_builders as b

DDL_TIME = "transient_lastDdlTime"
COLS = [("a", "string")]


def _table(db: str, name: str, *, keys=(("p", "string"),), location: str | None = None, **params: str) -> tt.Table:
    t = b.table(db, name, cols=COLS, partition_keys=keys, **params)
    t.sd.location = location
    return t


def _part(db: str, tbl: str, values: list[str], location: str | None = None, **params: str) -> tt.Partition:
    p = b.partition(db, tbl, values, cols=COLS)
    p.sd.location = location
    p.parameters = dict(params)
    return p


def _warehouse(client) -> str:
    return client.get_database("default").locationUri


def _local(location: str) -> Path:
    assert location.startswith("file:/") and not location.startswith("file://"), location
    return Path(location[len("file:") :])


# ---------------------------------------------------------------- 1. locations


def test_default_locations_are_qualified_under_the_warehouse(client, dbname):
    warehouse = _warehouse(client)
    assert warehouse.startswith("file:/") and not warehouse.endswith("/")
    client.create_database(b.database(dbname))
    assert client.get_database(dbname).locationUri == f"{warehouse}/{dbname}.db"
    client.create_table(_table(dbname, "T1"))
    table = client.get_table(dbname, "t1")
    assert table.sd.location == f"{warehouse}/{dbname}.db/t1"
    assert _local(table.sd.location).is_dir()
    client.add_partition(_part(dbname, "t1", ["x"]))
    assert client.get_partition(dbname, "t1", ["x"]).sd.location == f"{warehouse}/{dbname}.db/t1/p=x"
    assert client.append_partition(dbname, "t1", ["y"]).sd.location == f"{warehouse}/{dbname}.db/t1/p=y"


def test_given_locations_without_a_scheme_are_qualified(client, dbname, tmp_path):
    client.create_database(b.database(dbname, location=f"{tmp_path}/db.db/"))
    assert client.get_database(dbname).locationUri == f"file:{tmp_path}/db.db"
    client.create_table(_table(dbname, "dflt"))
    assert client.get_table(dbname, "dflt").sd.location == f"file:{tmp_path}/db.db/dflt"
    client.create_table(_table(dbname, "t", location=f"{tmp_path}//x/./t/"))
    assert client.get_table(dbname, "t").sd.location == f"file:{tmp_path}/x/t"
    client.create_table(_table(dbname, "u", location=f"file://{tmp_path}/u"))
    assert client.get_table(dbname, "u").sd.location == f"file:{tmp_path}/u"
    client.add_partition(_part(dbname, "t", ["a"], location=f"{tmp_path}/pa/"))
    assert client.get_partition(dbname, "t", ["a"]).sd.location == f"file:{tmp_path}/pa"
    # Other filesystems keep their text.
    client.create_table(_table(dbname, "s3", location="s3a://bucket/some/path"))
    assert client.get_table(dbname, "s3").sd.location == "s3a://bucket/some/path"


def test_altered_locations_are_qualified(client, dbname, tmp_path):
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "t"))
    t = client.get_table(dbname, "t")
    t.sd.location = f"{tmp_path}/moved/"
    client.alter_table(dbname, "t", t)
    assert client.get_table(dbname, "t").sd.location == f"file:{tmp_path}/moved"
    client.add_partition(_part(dbname, "t", ["a"]))
    p = client.get_partition(dbname, "t", ["a"])
    p.sd.location = f"{tmp_path}/pa"
    client.alter_partition(dbname, "t", p)
    assert client.get_partition(dbname, "t", ["a"]).sd.location == f"file:{tmp_path}/pa"


def test_alter_database_keeps_the_location_as_hive_2_3_does(client, dbname, tmp_path):
    # Hive 2.3 ignores a new locationUri in alter_database (Hive 4 would take it); the other changes apply.
    client.create_database(b.database(dbname))
    before = client.get_database(dbname)
    db = client.get_database(dbname)
    db.locationUri = f"{tmp_path}/newdb"
    db.parameters = {"team": "stats"}
    db.ownerName = "someone"
    client.alter_database(dbname, db)
    after = client.get_database(dbname)
    assert after.locationUri == before.locationUri
    assert after.locationUri != f"file:{tmp_path}/newdb"
    assert (after.parameters, after.ownerName) == ({"team": "stats"}, "someone")


def test_a_relative_location_is_refused_with_a_clear_error(client, dbname):
    client.create_database(b.database(dbname))
    with pytest.raises(tt.InvalidObjectException, match="relative path"):
        client.create_table(_table(dbname, "t", location="relative/dir"))


def test_a_location_that_is_a_file_fails_the_create_and_leaves_nothing(client, dbname, tmp_path):
    # Hive 2.3 creates the directory before recording the object and fails with MetaException when it cannot.
    (tmp_path / "a_file").write_text("x")
    db = b.database(dbname, location=str(tmp_path / "a_file"))
    with pytest.raises(tt.MetaException, match="is not a directory"):
        client.create_database(db)
    with pytest.raises(tt.NoSuchObjectException):
        client.get_database(dbname)
    client.create_database(b.database(dbname, location=str(tmp_path / "db")))
    with pytest.raises(tt.MetaException, match="is not a directory"):
        client.create_table(_table(dbname, "t", location=str(tmp_path / "a_file" / "t")))
    assert client.get_tables(dbname, "*") == []
    client.create_table(_table(dbname, "t"))
    with pytest.raises(tt.MetaException, match="is not a directory"):
        client.add_partitions([_part(dbname, "t", ["ok"]), _part(dbname, "t", ["bad"], location=str(tmp_path / "a_file"))])
    assert client.get_partition_names(dbname, "t", -1) == []
    assert not (tmp_path / "db" / "t" / "p=ok").exists(), "the directory made for the failed call is removed"


def test_new_directories_inherit_the_permission_of_their_parent(client, dbname, tmp_path):
    # hive.warehouse.subdir.inherit.perms (on in Hive 2.3): Hive's testPartition checks rwxr-x---.
    (tmp_path / "db").mkdir()
    (tmp_path / "db").chmod(0o750)
    client.create_database(b.database(dbname, location=str(tmp_path / "db")))
    client.create_table(_table(dbname, "t"))
    client.add_partition(_part(dbname, "t", ["a"]))
    client.add_partition(_part(dbname, "t", ["b"], location=str(tmp_path / "db" / "deep" / "er")))
    for path in ("t", "t/p=a", "deep", "deep/er"):
        assert (tmp_path / "db" / path).stat().st_mode & 0o777 == 0o750, path


# ---------------------------------------------------------------- 2. transient_lastDdlTime


def test_new_tables_and_partitions_get_a_ddl_time(client, dbname):
    client.create_database(b.database(dbname))
    before = int(time.time())
    client.create_table(_table(dbname, "t"))
    after = int(time.time())
    assert before <= int(client.get_table(dbname, "t").parameters[DDL_TIME]) <= after
    client.add_partition(_part(dbname, "t", ["a"]))
    client.add_partitions([_part(dbname, "t", ["b"])])
    client.append_partition(dbname, "t", ["c"])
    for v in "abc":
        assert before <= int(client.get_partition(dbname, "t", [v]).parameters[DDL_TIME]) <= int(time.time())
    # A value the client gives is kept, as Hive does.
    client.create_table(_table(dbname, "given", **{DDL_TIME: "12345"}))
    assert client.get_table(dbname, "given").parameters[DDL_TIME] == "12345"
    client.add_partition(_part(dbname, "t", ["d"], **{DDL_TIME: "7"}))
    assert client.get_partition(dbname, "t", ["d"]).parameters[DDL_TIME] == "7"


def test_alter_table_sets_the_ddl_time_when_the_client_dropped_it(client, dbname):
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "t", **{DDL_TIME: "100"}))
    t = client.get_table(dbname, "t")
    client.alter_table(dbname, "t", t)
    assert client.get_table(dbname, "t").parameters[DDL_TIME] == "100"  # sent back unchanged: kept
    t.parameters.pop(DDL_TIME)
    before = int(time.time())
    client.alter_table(dbname, "t", t)
    assert int(client.get_table(dbname, "t").parameters[DDL_TIME]) >= before
    t.parameters[DDL_TIME] = "0"  # Hive 2.3's alter_table keeps even "0"
    client.alter_table(dbname, "t", t)
    assert client.get_table(dbname, "t").parameters[DDL_TIME] == "0"


def test_alter_partition_renews_a_missing_or_zero_ddl_time(client, dbname):
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "t"))
    client.add_partition(_part(dbname, "t", ["a"], **{DDL_TIME: "100"}))
    p = client.get_partition(dbname, "t", ["a"])
    client.alter_partition(dbname, "t", p)
    assert client.get_partition(dbname, "t", ["a"]).parameters[DDL_TIME] == "100"
    before = int(time.time())
    p.parameters[DDL_TIME] = "0"
    client.alter_partition(dbname, "t", p)
    assert int(client.get_partition(dbname, "t", ["a"]).parameters[DDL_TIME]) >= before
    p.parameters.pop(DDL_TIME)
    client.alter_partitions(dbname, "t", [p])
    assert int(client.get_partition(dbname, "t", ["a"]).parameters[DDL_TIME]) >= before


# ---------------------------------------------------------------- 3. partition keys among the data columns


def test_a_partition_key_may_also_be_a_data_column(client, dbname):
    client.create_database(b.database(dbname))
    t = b.table(dbname, "ov", cols=[("a", "string"), ("p", "int")], partition_keys=[("p", "string")])
    client.create_table(t)
    got = client.get_table(dbname, "ov")
    assert [c.name for c in got.sd.cols] == ["a", "p"]
    assert [k.name for k in got.partitionKeys] == ["p"]
    assert [f.name for f in client.get_schema(dbname, "ov")] == ["a", "p", "p"]
    client.add_partition(_part(dbname, "ov", ["v"]))
    client.alter_table(dbname, "ov", got)
    assert client.get_partition_names(dbname, "ov", -1) == ["p=v"]


# ---------------------------------------------------------------- 4. name patterns


@pytest.fixture
def pattern_db(client, dbname) -> str:
    client.create_database(b.database(dbname))
    for name in ["abc", "abd", "test_1", "xyz", "a_c"]:
        client.create_table(_table(dbname, name, keys=()))
    return dbname


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*", ["a_c", "abc", "abd", "test_1", "xyz"]),
        (".*", ["a_c", "abc", "abd", "test_1", "xyz"]),
        ("", []),
        ("ab.", ["abc", "abd"]),
        ("a.c", ["a_c", "abc"]),
        ("abc|xyz", ["abc", "xyz"]),
        ("AB*", ["abc", "abd"]),
        ("test_.*", ["test_1"]),
        ("*c", ["a_c", "abc"]),
        (" abc ", ["abc"]),
        ("b", []),
        ("abc | xyz", []),  # only the whole pattern is trimmed, as in Hive
        ("a[bz]c", ["abc"]),
        ("ab[^c]", ["abd"]),
        ("x+yz?|a_?c", ["a_c", "xyz"]),
    ],
)
def test_get_tables_patterns_are_regular_expressions(client, pattern_db, pattern, expected):
    assert client.get_tables(pattern_db, pattern) == expected
    assert client.get_tables_by_type(pattern_db, pattern, "MANAGED_TABLE") == expected
    metas = client.get_table_meta(pattern_db, pattern, [])
    assert sorted(m.tableName for m in metas) == expected


def test_java_character_classes_in_patterns_and_filters_match_as_java_and_log_no_warning(client, pattern_db, server):
    # Java's nested classes, intersections and doubled literals (java.util.regex meanings, checked on OpenJDK 17):
    # Python's re would read them otherwise and print a FutureWarning to the server log for each new pattern.
    cases = {
        "a[[bz]]c": ["abc"],
        "ab[a-z&&[^c]]": ["abd"],
        "[a-z&&[^t]][a-z]+": ["abc", "abd", "xyz"],
        "a[--_]c": ["a_c"],  # a range from - to _
    }
    for pattern, expected in cases.items():
        for _ in range(3):
            assert client.get_tables(pattern_db, pattern) == expected, pattern
    client.create_table(_table(pattern_db, "f", keys=(("p1", "string"),)))
    client.add_partitions([_part(pattern_db, "f", [v]) for v in ["a1", "b1", "[1", "&1"]])
    parts = client.get_partitions_by_filter(pattern_db, "f", 'p1 like "[[ab]&&[^b]]1"', -1)
    assert [p.values for p in parts] == [["a1"]]
    parts = client.get_partitions_by_filter(pattern_db, "f", 'p1 like "[b~~&]1"', -1)
    assert sorted(p.values[0] for p in parts) == ["&1", "b1"]
    # A call that logs a line after the others (same connection, so same worker): once the line is in the
    # output, anything the pattern calls printed is too.
    part = client.get_partition(pattern_db, "f", ["a1"])
    part.parameters["spark.sql.statistics.numRows"] = "-1"
    client.alter_partition(pattern_db, "f", part)
    output = server.output_once("numRows ignored, negative")
    assert "numRows ignored, negative" in output
    assert "Warning" not in output, output[-2000:]


def test_get_databases_patterns_are_regular_expressions(client, dbname):
    client.create_database(b.database(dbname))
    client.create_database(b.database(dbname + "x"))
    assert client.get_databases(dbname) == [dbname]
    assert client.get_databases(f"{dbname}.*") == [dbname + "x"]  # `.*` after `*` -> `..*`, as in Hive 2.3
    assert client.get_databases(f"{dbname}*") == [dbname, dbname + "x"]
    assert client.get_databases(f"{dbname.upper()}|{dbname}X") == [dbname, dbname + "x"]
    assert client.get_databases(f"{dbname[:3]}.{dbname[4:]}") == [dbname]
    assert client.get_databases("") == []
    assert "default" in client.get_databases(".*")
    assert [m.tableName for m in client.get_table_meta(f"{dbname}|nomatch", "*", [])] == []


def test_get_table_meta_with_no_pattern_lists_everything_but_an_empty_one_nothing(client, pattern_db):
    assert len(client.get_table_meta(pattern_db, None, None)) == 5
    assert client.get_table_meta(pattern_db, "", []) == []
    assert client.get_table_meta("", "*", []) == []


# Not only syntax errors: Python's re raises RecursionError for groups nested this deep and OverflowError for a
# repetition count this large; each must come back as the declared exception, never as an internal error.
DEEPLY_NESTED = "(" * 1999 + "a" + ")" * 1999
BAD_PATTERNS = ["(", "abc|x[", "a{2,1}", DEEPLY_NESTED, "a{99999999999}"]
BAD_PATTERN_IDS = ["open-group", "open-class", "bad-range", "deeply-nested", "huge-repeat"]


@pytest.mark.parametrize("pattern", BAD_PATTERNS, ids=BAD_PATTERN_IDS)
def test_an_invalid_pattern_is_a_clear_meta_exception(client, pattern_db, pattern):
    # The server raises InvalidInput; these calls declare only MetaException in Hive's IDL, so that is what the
    # client gets (as from Hive), with the message naming the bad alternative.
    for call in (
        lambda: client.get_tables(pattern_db, pattern),
        lambda: client.get_databases(pattern),
        lambda: client.get_table_meta(pattern, "*", []),
        lambda: client.get_tables_by_type(pattern_db, pattern, "MANAGED_TABLE"),
    ):
        with pytest.raises(tt.MetaException, match="is not a valid regular expression"):
            call()


# ---------------------------------------------------------------- 5. LIKE in partition filters


@pytest.fixture
def filter_table(client, dbname) -> str:
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "f", keys=(("p1", "string"), ("p2", "int"))))
    values = ["p11", "p12", "xp1", "P1a", "a_b", "a%b", "axb", "ab.c", "p1", "a\nb"]
    client.add_partitions([_part(dbname, "f", [v, str(i)]) for i, v in enumerate(values)])
    return dbname


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ('p1 like "p1.*"', ["p1", "p11", "p12"]),
        ('p1 like "p1"', ["p1"]),
        ('p1 like "1"', []),  # the whole value must match (String.matches), not a part of it
        ('p1 like "p1%"', []),  # % is no wildcard
        ('p1 like "a_b"', ["a_b"]),  # nor is _
        ('p1 like "a.b"', ["a\nb", "a%b", "a_b", "axb"]),  # `.` matches a line break too, as the reference
        ('p1 like ".*1.*"', ["P1a", "p1", "p11", "p12", "xp1"]),
        ('p1 like "P1.*"', ["P1a"]),  # case-sensitive
        ('p1 like "p1."', ["p11", "p12"]),
        ('p1 like "ab\\.c"', ["ab.c"]),  # the literal's text is the regex: \. is a dot
        ('p1 like "ab\\\\.c"', []),
        ('p1 like "p1[12]"', ["p11", "p12"]),
        ('p1 like "(p|x)p?1.*"', ["p1", "p11", "p12", "xp1"]),
        ('not p1 like "p1.*" and p1 like "p.*"', []),
        ('p1 not like "[a-z]+1.*"', ["P1a", "a\nb", "a%b", "a_b", "ab.c", "axb"]),
        ('p1 like "p1.*" and p2 > 0', ["p12", "p1"]),
        ('p1 like "a.*" or p1 = "xp1"', ["a\nb", "a%b", "a_b", "ab.c", "axb", "xp1"]),
        ('p2 like "[0-2]"', ["p11", "p12", "xp1"]),
    ],
)
def test_like_is_a_whole_value_regular_expression(client, filter_table, flt, expected):
    parts = client.get_partitions_by_filter(filter_table, "f", flt, -1)
    assert sorted(p.values[0] for p in parts) == sorted(expected)
    assert client.get_num_partitions_by_filter(filter_table, "f", flt) == len(expected)


@pytest.mark.parametrize("pattern", BAD_PATTERNS, ids=BAD_PATTERN_IDS)
def test_an_invalid_like_pattern_is_a_clear_meta_exception(client, filter_table, pattern):
    # get_partitions_by_filter declares MetaException and NoSuchObjectException: the former, naming the pattern.
    with pytest.raises(tt.MetaException, match="not a valid regular expression"):
        client.get_partitions_by_filter(filter_table, "f", f'p1 like "{pattern}"', -1)
    with pytest.raises(tt.MetaException, match="not a valid regular expression"):
        client.get_num_partitions_by_filter(filter_table, "f", f'p1 like "{pattern}"')


# ---------------------------------------------------------------- 6. rename_partition


def test_rename_partition_moves_a_managed_partition_and_its_data(client, dbname):
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "r"))
    table_dir = _local(client.get_table(dbname, "r").sd.location)
    client.add_partition(_part(dbname, "r", ["a"]))
    (table_dir / "p=a" / "f.txt").write_text("x")
    p = client.get_partition(dbname, "r", ["a"])
    p.values = ["a2"]
    client.rename_partition(dbname, "r", ["a"], p)
    renamed = client.get_partition(dbname, "r", ["a2"])
    assert renamed.sd.location == f"file:{table_dir}/p=a2"
    assert (table_dir / "p=a2" / "f.txt").read_text() == "x"
    assert not (table_dir / "p=a").exists()
    assert int(renamed.parameters[DDL_TIME]) > 0


def test_rename_partition_of_a_managed_table_moves_a_custom_location_too(client, dbname, tmp_path):
    # Hive 2.3 moves it to the new default path whatever its location was (the reference does so).
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "r"))
    table_dir = _local(client.get_table(dbname, "r").sd.location)
    custom = tmp_path / "custom_b"
    custom.mkdir()
    (custom / "f.txt").write_text("y")
    client.add_partition(_part(dbname, "r", ["b"], location=str(custom)))
    p = client.get_partition(dbname, "r", ["b"])
    p.values = ["b2"]
    p.sd.location = str(tmp_path / "ignored")
    client.rename_partition(dbname, "r", ["b"], p)
    assert client.get_partition(dbname, "r", ["b2"]).sd.location == f"file:{table_dir}/p=b2"
    assert (table_dir / "p=b2" / "f.txt").read_text() == "y"
    assert not custom.exists()


def test_rename_partition_of_an_external_table_keeps_the_location(client, dbname, tmp_path):
    client.create_database(b.database(dbname))
    t = _table(dbname, "e", location=str(tmp_path / "ext"), EXTERNAL="TRUE")
    t.tableType = "EXTERNAL_TABLE"
    client.create_table(t)
    client.add_partition(_part(dbname, "e", ["a"]))
    p = client.get_partition(dbname, "e", ["a"])
    p.values = ["a2"]
    p.sd.location = str(tmp_path / "elsewhere")
    client.rename_partition(dbname, "e", ["a"], p)
    assert client.get_partition(dbname, "e", ["a2"]).sd.location == f"file:{tmp_path}/ext/p=a"
    assert (tmp_path / "ext" / "p=a").is_dir()
    assert not (tmp_path / "ext" / "p=a2").exists()


def test_rename_partition_onto_an_existing_directory_changes_nothing(client, dbname):
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "r"))
    table_dir = _local(client.get_table(dbname, "r").sd.location)
    client.add_partition(_part(dbname, "r", ["d"]))
    (table_dir / "p=d2").mkdir()
    p = client.get_partition(dbname, "r", ["d"])
    p.values = ["d2"]
    with pytest.raises(tt.InvalidOperationException, match="already exists"):
        client.rename_partition(dbname, "r", ["d"], p)
    assert client.get_partition_names(dbname, "r", -1) == ["p=d"]
    assert client.get_partition(dbname, "r", ["d"]).sd.location == f"file:{table_dir}/p=d"


def test_rename_partition_whose_data_cannot_move_is_undone(client, dbname):
    # Hive 2.3 reverts the catalog change and answers InvalidOperationException when the directory move fails.
    # A file where the new partition's parent directory must go makes the move fail, even for root.
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "m", keys=(("p", "string"), ("q", "string"))))
    table_dir = _local(client.get_table(dbname, "m").sd.location)
    client.add_partition(_part(dbname, "m", ["a", "x"], k="v"))
    (table_dir / "p=a" / "q=x" / "f.txt").write_text("data")
    client.update_partition_column_statistics(
        b.partition_stats(dbname, "m", "p=a/q=x", [b.obj("a", "string", b.data_string(3, 1.5, 0, 2))])
    )
    (table_dir / "p=b").write_text("a file, not a directory")
    before = client.get_partition(dbname, "m", ["a", "x"])
    renamed = client.get_partition(dbname, "m", ["a", "x"])
    renamed.values = ["b", "x"]
    with pytest.raises(tt.InvalidOperationException, match="cannot move the data of partition p=a/q=x"):
        client.rename_partition(dbname, "m", ["a", "x"], renamed)
    assert client.get_partition_names(dbname, "m", -1) == ["p=a/q=x"]
    assert client.get_partition(dbname, "m", ["a", "x"]) == before
    assert (table_dir / "p=a" / "q=x" / "f.txt").read_text() == "data"
    stats = client.get_partitions_statistics_req(
        tt.PartitionsStatsRequest(dbName=dbname, tblName="m", colNames=["a"], partNames=["p=a/q=x"])
    ).partStats
    assert [o.colName for o in stats["p=a/q=x"]] == ["a"]


def test_renaming_a_managed_table_moves_its_directory_and_partitions(client, dbname):
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "old"))
    old_dir = _local(client.get_table(dbname, "old").sd.location)
    client.add_partition(_part(dbname, "old", ["a"]))
    (old_dir / "p=a" / "f.txt").write_text("x")
    t = client.get_table(dbname, "old")
    t.tableName = "new"
    client.alter_table(dbname, "old", t)
    moved = client.get_table(dbname, "new")
    assert moved.sd.location == f"file:{old_dir.parent}/new"
    assert client.get_partition(dbname, "new", ["a"]).sd.location == f"file:{old_dir.parent}/new/p=a"
    assert (old_dir.parent / "new" / "p=a" / "f.txt").read_text() == "x"
    assert not old_dir.exists()


def test_a_partition_added_without_columns_keeps_them_unset_as_hive_2_3_does(client, dbname):
    # Hive 2.3's TestHiveMetaStore.testPartition: sd.cols = null comes back null, not as the table's columns;
    # an explicit column list still comes back as given.
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "t"))
    bare = _part(dbname, "t", ["none"])
    bare.sd.cols = None
    client.add_partition(bare)
    client.add_partition(_part(dbname, "t", ["some"]))
    assert client.get_partition(dbname, "t", ["none"]).sd.cols is None
    assert client.get_partition_by_name(dbname, "t", "p=none").sd.cols is None
    listed = {p.values[0]: p.sd.cols for p in client.get_partitions(dbname, "t", -1)}
    assert listed == {"none": None, "some": [tt.FieldSchema(name="a", type="string", comment=None)]}
    # Altering it with columns unset keeps them unset; giving columns then stores them.
    bare = client.get_partition(dbname, "t", ["none"])
    bare.parameters = {"k": "v"}
    client.alter_partition(dbname, "t", bare)
    assert client.get_partition(dbname, "t", ["none"]).sd.cols is None
    bare.sd.cols = [tt.FieldSchema(name="a", type="string")]
    client.alter_partition(dbname, "t", bare)
    assert client.get_partition(dbname, "t", ["none"]).sd.cols == [tt.FieldSchema(name="a", type="string")]


def test_append_partition_with_environment_context_as_hive_2_3_clients_call_it(client, dbname):
    # Hive 2.3's HiveMetaStoreClient.appendPartition sends the *_with_environment_context variants.
    client.create_database(b.database(dbname))
    client.create_table(_table(dbname, "t"))
    by_values = client.append_partition_with_environment_context(dbname, "t", ["x"], None)
    by_name = client.append_partition_by_name_with_environment_context(dbname, "t", "p=y", None)
    assert (by_values.values, by_name.values) == (["x"], ["y"])
    assert sorted(client.get_partition_names(dbname, "t", -1)) == ["p=x", "p=y"]
    with pytest.raises(tt.AlreadyExistsException):
        client.append_partition_by_name_with_environment_context(dbname, "t", "p=y", None)


# ---------------------------------------------------------------- 7. catalog fields by the client's generation


def _catalog_fields(client, db: str) -> dict[str, object]:
    """Every catalog field a client reads back from the usual calls (None where unset)."""
    client.update_table_column_statistics(b.table_stats(db, "c", [b.obj("a", "string", b.data_string(3, 1.5, 0, 2))]))
    return {
        "database": client.get_database(db).catalogName,
        "table": client.get_table(db, "c").catName,
        "table_req": client.get_table_req(tt.GetTableRequest(dbName=db, tblName="c")).table.catName,
        "partition": client.get_partition(db, "c", ["x"]).catName,
        "partitions": {p.catName for p in client.get_partitions(db, "c", -1)},
        "by_names": {p.catName for p in client.get_partitions_by_names(db, "c", ["p=x"])},
        "by_filter": {p.catName for p in client.get_partitions_by_filter(db, "c", "p = 'x'", -1)},  # streamed
        "added": client.add_partitions_req(
            tt.AddPartitionsRequest(dbName=db, tblName="c", parts=[_part(db, "c", [str(time.time_ns())])], ifNotExists=False, needResult=True)
        ).partitions[0].catName,
        "stats_desc": client.get_table_column_statistics(db, "c", "a").statsDesc.catName,
        "table_meta": {m.catName for m in client.get_table_meta(db, "*", [])},
    }


HIVE3 = {
    "database": "hive", "table": "hive", "table_req": "hive", "partition": "hive", "partitions": {"hive"},
    "by_names": {"hive"}, "by_filter": {"hive"}, "added": "hive", "stats_desc": "hive", "table_meta": {"hive"},
}
HIVE2 = {k: ({None} if isinstance(v, set) else None) for k, v in HIVE3.items()}


@pytest.fixture
def catalog_db(client, dbname) -> str:
    client.create_database(b.database(dbname))
    table = _table(dbname, "c")
    table.ownerType = tt.PrincipalType.USER
    client.create_table(table)
    client.add_partition(_part(dbname, "c", ["x"]))
    return dbname


def test_a_hive_3_client_gets_catalog_fields_and_a_hive_2_client_none(catalog_db, new_client):
    # A client that has sent nothing telling its generation: Hive 3+'s answer, which pymetastore's library needs.
    assert _catalog_fields(new_client(), catalog_db) == HIVE3
    # Every client generated from a Hive 3+ IDL sends Table.ownerType (the IDL gives it a default).
    hive3 = new_client()
    table = _table(catalog_db, "t3")
    table.ownerType = tt.PrincipalType.USER
    hive3.create_table(table)
    assert _catalog_fields(hive3, catalog_db) == HIVE3
    # A Table without it can only come from a client generated from a Hive 2 IDL (Hive 2.3.10's Java client,
    # as Hive's own TestHiveMetaStore runs it): answered as HMS 2.3.10 answers, with the catalog fields unset.
    hive2 = new_client()
    hive2.create_table(_table(catalog_db, "t2"))
    assert _catalog_fields(hive2, catalog_db) == HIVE2
    # Per connection: the Hive 3+ client still gets them.
    assert _catalog_fields(hive3, catalog_db) == HIVE3
    # What a table is stored with does not depend on who created it: the Hive 2 client's is its owner's too.
    assert hive3.get_table(catalog_db, "t2").ownerType == tt.PrincipalType.USER


def test_set_ugi_marks_hive_s_java_client_until_a_table_it_sends_says_otherwise(catalog_db, new_client):
    # Hive's Java HiveMetaStoreClient calls set_ugi first on a connection without SASL.
    java = new_client()
    java.set_ugi("alice", ["staff"])
    assert _catalog_fields(java, catalog_db) == HIVE2
    # A Java client of Hive 3+ also calls set_ugi; the first Table it sends carries ownerType and decides.
    table = _table(catalog_db, "j3")
    table.ownerType = tt.PrincipalType.ROLE
    java.create_table(table)
    assert _catalog_fields(java, catalog_db) == HIVE3
    # And a table altered without ownerType (a Hive 2 client's alter_table) decides the other way.
    t = java.get_table(catalog_db, "j3")
    t.ownerType = None
    java.alter_table(catalog_db, "j3", t)
    assert _catalog_fields(java, catalog_db) == HIVE2
