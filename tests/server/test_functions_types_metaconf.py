"""Functions, legacy types, get_table_names_by_filter and get/setMetaConf as Hive 2.3 answers them (issue 14,
items 4, 5 and 8), through our generated client, on SQLite and PostgreSQL."""

from __future__ import annotations

import time

import pytest

from metastore.api.hive_metastore import ttypes as tt
from server import thrift_builders as b

# Groups nested deeper than Python's re can parse (it raises RecursionError, not re.error).
DEEPLY_NESTED = "(" * 1999 + "a" + ")" * 1999


def _function(db: str, name: str, cls: str | None = "org.example.Upper", uris: tuple[str, ...] = ()) -> tt.Function:
    return tt.Function(
        functionName=name, dbName=db, className=cls, ownerName="alice", ownerType=tt.PrincipalType.USER,
        createTime=0, functionType=tt.FunctionType.JAVA,
        resourceUris=[tt.ResourceUri(resourceType=tt.ResourceType.JAR, uri=u) for u in uris],
    )


# ---------------------------------------------------------------- functions


def test_function_lifecycle(client, dbname):
    client.create_database(b.database(dbname))
    before = int(time.time())
    client.create_function(_function(dbname, "upper_x", uris=("file:/tmp/a.jar", "file:/tmp/b.jar")))
    client.create_function(_function(dbname, "lower_x"))
    got = client.get_function(dbname, "UPPER_X")
    assert (got.functionName, got.dbName, got.className, got.ownerName) == ("upper_x", dbname, "org.example.Upper", "alice")
    assert got.createTime >= before  # the server's clock, as Hive's, not the client's 0
    assert [r.uri for r in got.resourceUris] == ["file:/tmp/a.jar", "file:/tmp/b.jar"]
    assert client.get_functions(dbname, "*") == ["lower_x", "upper_x"]
    assert client.get_functions(dbname, "up.*|nothing") == ["upper_x"]
    assert client.get_functions("no_such_db_here", "*") == []
    mine = [f for f in client.get_all_functions().functions if f.dbName == dbname]
    assert sorted(f.functionName for f in mine) == ["lower_x", "upper_x"]

    # Hive 2.3 alters name, class, owner and type; create time and resources stay.
    new = _function(dbname, "upper_y", cls="org.example.Upper2", uris=("file:/ignored.jar",))
    client.alter_function(dbname, "upper_x", new)
    with pytest.raises(tt.NoSuchObjectException):
        client.get_function(dbname, "upper_x")
    altered = client.get_function(dbname, "upper_y")
    assert (altered.className, altered.createTime) == ("org.example.Upper2", got.createTime)
    assert [r.uri for r in altered.resourceUris] == ["file:/tmp/a.jar", "file:/tmp/b.jar"]

    client.drop_function(dbname, "upper_y")
    assert client.get_functions(dbname, "*") == ["lower_x"]
    client.drop_database(dbname, True, True)
    assert [f for f in client.get_all_functions().functions if f.dbName == dbname] == []


def test_function_errors_are_hives(client, dbname):
    client.create_database(b.database(dbname))
    client.create_function(_function(dbname, "f"))
    with pytest.raises(tt.AlreadyExistsException, match="Function f already exists"):
        client.create_function(_function(dbname, "f"))
    with pytest.raises(tt.NoSuchObjectException, match="does not exist"):
        client.create_function(_function("no_such_db_here", "f"))
    with pytest.raises(tt.InvalidObjectException, match="not a valid object name"):
        client.create_function(_function(dbname, "bad-name"))
    with pytest.raises(tt.InvalidObjectException, match="class name cannot be null"):
        client.create_function(_function(dbname, "g", cls=None))
    with pytest.raises(tt.NoSuchObjectException, match=f"Function {dbname}.nope does not exist"):
        client.get_function(dbname, "nope")
    with pytest.raises(tt.NoSuchObjectException, match="Function nope does not exist"):
        client.drop_function(dbname, "nope")
    with pytest.raises(tt.MetaException, match="function nope doesn't exist"):
        client.alter_function(dbname, "nope", _function(dbname, "nope"))
    # get_functions declares only MetaException, so a bad pattern comes back as one (as in Hive); so does one
    # that Python's re fails on with RecursionError or OverflowError rather than a syntax error.
    for pattern in ("f(", DEEPLY_NESTED, "f{99999999999}"):
        with pytest.raises(tt.MetaException, match="not a valid regular expression"):
            client.get_functions(dbname, pattern)


# ---------------------------------------------------------------- legacy types


def test_type_lifecycle_and_errors(client):
    name = f"Type_{int(time.time() * 1000) % 10**8}"
    fields = [tt.FieldSchema(name="a", type="int", comment="first"), tt.FieldSchema(name="b", type="string")]
    assert client.create_type(tt.Type(name=name, fields=fields)) is True
    got = client.get_type(name)
    assert (got.name, got.type1, got.type2, got.fields) == (name, None, None, fields)
    with pytest.raises(tt.AlreadyExistsException, match=f"Type {name} already exists"):
        client.create_type(tt.Type(name=name))
    with pytest.raises(tt.NoSuchObjectException, match="not found"):
        client.get_type(name.lower())  # names keep their case, as Hive's
    assert client.create_type(tt.Type(name=f"{name}_list", type1="int")) is True
    assert client.get_type(f"{name}_list") == tt.Type(name=f"{name}_list", type1="int", fields=[])
    with pytest.raises(tt.InvalidObjectException, match="Invalid type name"):
        client.create_type(tt.Type(name="no spaces"))
    assert client.drop_type(name) is True
    assert client.drop_type(name) is True  # Hive 2.3 answers true for a type that does not exist
    with pytest.raises(tt.NoSuchObjectException):
        client.get_type(name)
    with pytest.raises(tt.MetaException, match="Not yet implemented"):
        client.get_type_all(name)


# ---------------------------------------------------------------- get_table_names_by_filter


def _filter_tables(client, db: str) -> None:
    client.create_database(b.database(db))
    for name, owner, last_access, params in (
        ("t1", "testOwner1", 90, {"p1": "hi", "p2": "50"}),
        ("t2", "testOwner2", 30, {"p1": "yellow", "p2": "50"}),
        ("t3", "testOwner1", 30, {"p1": "yellow"}),
    ):
        t = b.table(db, name, cols=[("c", "int")], **params)
        t.owner, t.lastAccessTime = owner, last_access
        client.create_table(t)


def test_table_names_by_filter(client, dbname):
    _filter_tables(client, dbname)
    owner, access, params = "hive_filter_field_owner__", "hive_filter_field_last_access__", "hive_filter_field_params__"
    by = lambda f, n=-1: client.get_table_names_by_filter(dbname, f, n)  # noqa: E731
    assert by(f'{owner} like ".*Owner.*" and {owner} like "test.*"') == ["t1", "t2", "t3"]
    assert by(f'{owner} = "testOwner1"') == ["t1", "t3"]
    assert by(f"{access} < 90") == ["t2", "t3"]
    assert by(f"{access} > 90") == []
    assert by(f'{access} = "30"') == ["t2", "t3"]
    assert by(f'{params}p2 LIKE "50"') == ["t1", "t2"]
    assert by(f'{params}p2 LIKE "5.*"') == ["t1", "t2"]
    assert by(f'{params}p2 = "75"') == []
    assert by(f'{params}missing LIKE ".*"') == []
    assert by(f'{params}p1 <> "yellow"') == ["t1"]
    assert by(f'{owner} = "testOwner1" and ({access} = 30 or {params}p1 LIKE "hi")') == ["t1", "t3"]
    assert by("") == ["t1", "t2", "t3"]
    assert by(f'{owner} like "test.*"', 2) == ["t1", "t2"]
    assert client.get_table_names_by_filter("no_such_db_here", "", -1) == []


def test_table_names_by_filter_errors(client, dbname):
    _filter_tables(client, dbname)
    with pytest.raises(tt.MetaException, match="Invalid key name in filter"):
        client.get_table_names_by_filter(dbname, 'badKey = "testOwner1"', -1)
    with pytest.raises(tt.MetaException, match="Like is not supported for HIVE_FILTER_FIELD_LAST_ACCESS"):
        client.get_table_names_by_filter(dbname, 'hive_filter_field_last_access__ like "1.*"', -1)
    with pytest.raises(tt.InvalidOperationException, match="compares with an integer"):
        client.get_table_names_by_filter(dbname, 'hive_filter_field_last_access__ = "soon"', -1)
    with pytest.raises(tt.MetaException, match="supported operators for HIVE_FILTER_FIELD_PARAMS"):
        client.get_table_names_by_filter(dbname, 'hive_filter_field_params__p1 < "x"', -1)
    with pytest.raises(tt.UnknownDBException, match="DB name is null or empty"):
        client.get_table_names_by_filter("", "", -1)
    # Bad input from the client: the exception meant for it among those the method declares (Hive: MetaException).
    for pattern in ("a(", DEEPLY_NESTED, "a{99999999999}"):
        with pytest.raises(tt.InvalidOperationException, match="not a valid regular expression"):
            client.get_table_names_by_filter(dbname, f'hive_filter_field_owner__ like "{pattern}"', -1)
    with pytest.raises(tt.InvalidOperationException, match="invalid table filter"):
        client.get_table_names_by_filter(dbname, "hive_filter_field_owner__ = ", -1)


# ---------------------------------------------------------------- get/setMetaConf


def test_meta_conf_is_per_connection(client, new_client):
    key = "hive.metastore.partition.name.whitelist.pattern"
    assert client.getMetaConf(key) == ""
    assert client.getMetaConf("hive.metastore.try.direct.sql") == "true"
    assert client.getMetaConf("hive.metastore.client.capability.check") == "false"
    client.setMetaConf(key, "[a-z]*")
    client.setMetaConf("hive.metastore.client.socket.timeout", "30s")
    assert client.getMetaConf(key) == "[a-z]*"
    assert client.getMetaConf("hive.metastore.client.socket.timeout") == "30s"
    other = new_client()
    assert other.getMetaConf(key) == ""
    assert other.getMetaConf("hive.metastore.client.socket.timeout") == "600s"
    other.setMetaConf(key, "x")
    assert client.getMetaConf(key) == "[a-z]*"


def test_meta_conf_errors(client):
    with pytest.raises(tt.MetaException, match="Invalid configuration key no.such.key"):
        client.setMetaConf("no.such.key", "1")
    with pytest.raises(tt.MetaException, match="Invalid configuration key hive.metastore.warehouse.dir: it is a server setting"):
        client.setMetaConf("hive.metastore.warehouse.dir", "/elsewhere")
    with pytest.raises(tt.MetaException, match="Invalid configuration value soon for key hive.metastore.client.socket.timeout"):
        client.setMetaConf("hive.metastore.client.socket.timeout", "soon")
    # The statistics settings stay readable (they always were), and a refused set changed nothing.
    assert client.getMetaConf("hive.metastore.warehouse.dir").endswith("warehouse")
    assert client.getMetaConf("hive.metastore.client.socket.timeout") == "600s"



# ---------------------------------------------------------------- get_table_objects_by_name's checks (Hive's tests)


def test_table_objects_by_name_refuses_as_hive(client, dbname):
    client.create_database(b.database(dbname))
    client.create_table(b.table(dbname, "t", cols=[("c", "int")]))
    assert [t.tableName for t in client.get_table_objects_by_name(dbname, ["t", "missing"])] == ["t"]
    with pytest.raises(tt.InvalidOperationException, match=f"{dbname} cannot find null tables"):
        client.get_table_objects_by_name(dbname, None)
    with pytest.raises(tt.UnknownDBException, match="Could not find database no_such_db_here"):
        client.get_table_objects_by_name("no_such_db_here", ["t"])
    with pytest.raises(tt.UnknownDBException, match="DB name is null or empty"):
        client.get_table_objects_by_name("", ["t"])


# ---------------------------------------------------------------- the `transactional` parameter (Hive's listener)

ORC_IN, ORC_OUT = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat", "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"


def _acid_table(db: str, name: str, *, bucketed: bool = True, orc: bool = True, **params: str) -> tt.Table:
    t = b.table(db, name, cols=[("c", "int")], **params)
    if bucketed:
        t.sd.bucketCols, t.sd.numBuckets = ["c"], 1
    t.sd.inputFormat, t.sd.outputFormat = (ORC_IN, ORC_OUT) if orc else (
        "org.apache.hadoop.mapred.TextInputFormat", "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
    )
    return t


def test_transactional_tables_follow_hives_rules(client, dbname):
    client.create_database(b.database(dbname))
    for value in ("", "foobar", "false"):
        with pytest.raises(tt.MetaException, match="may only have value 'true'"):
            client.create_table(_acid_table(dbname, "t", transactional=value))
    with pytest.raises(tt.MetaException, match="must be bucketed and stored using an ACID compliant format"):
        client.create_table(_acid_table(dbname, "t", bucketed=False, transactional="true"))
    with pytest.raises(tt.MetaException, match="must be bucketed and stored using an ACID compliant format"):
        client.create_table(_acid_table(dbname, "t", orc=False, transactional="true"))
    client.create_table(_acid_table(dbname, "t", Transactional="TRUE"))
    assert client.get_table(dbname, "t").parameters["transactional"] == "true"
    assert "Transactional" not in client.get_table(dbname, "t").parameters

    with pytest.raises(tt.MetaException, match="'transactional'='true' cannot be unset"):
        client.alter_table(dbname, "t", tt.Table(parameters={"transactional": "false"}))
    kept = client.get_table(dbname, "t")
    kept.parameters["comment"] = "still transactional"
    client.alter_table(dbname, "t", kept)
    assert client.get_table(dbname, "t").parameters["comment"] == "still transactional"

    client.create_table(_acid_table(dbname, "plain", bucketed=False))
    plain = client.get_table(dbname, "plain")
    plain.parameters["transactional"] = "true"
    with pytest.raises(tt.MetaException, match="must be bucketed"):
        client.alter_table(dbname, "plain", plain)
    plain.sd.bucketCols, plain.sd.numBuckets = ["c"], 1
    client.alter_table(dbname, "plain", plain)
    assert client.get_table(dbname, "plain").parameters["transactional"] == "true"
