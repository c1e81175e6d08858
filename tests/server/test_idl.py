"""Our Thrift IDL against Hive 2.3.10's generated Java classes, and the accelerated codec.

pyspark ships hive-metastore-2.3.10.jar (the classes Spark's built-in Hive client speaks with)
and libfb303. A small Java program (ThriftLayoutDump.java, next to this file) is compiled at
test time and prints, for every generated Thrift class, each field's id and wire type. Every
field Hive has in a struct or method we also declare must appear in ours with the same id and
wire type, and result structs must carry the same exception ids, apart from the documented
ALLOWED_DIFFERENCES below.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TType
from thrift.transport import TTransport

from metastore.api.fb303 import FacebookService
from metastore.api.hive_metastore import ThriftHiveMetastore, constants, ttypes

HERE = Path(__file__).resolve().parent
DUMPER_SOURCE = HERE / "ThriftLayoutDump.java"

# Declarations that are ours on purpose and differ from Hive 2.3.10, keyed by class name and
# field id. Each entry says what Hive 2.3.10 has and why keeping the newer layout is safe.
ALLOWED_DIFFERENCES: dict[tuple[str, int], str] = {
    ("Table", 16): (
        "Hive 2.3.10 has `16: optional string catName`; Hive 3+ has `16: CreationMetadata` and "
        "catName at 17. The wire types differ (STRING vs STRUCT), so each side skips the other's "
        "field 16 instead of misreading it (see test_field_with_other_wire_type_is_skipped)."
    ),
    ("ThriftHiveMetastore.get_partition_names_result", 1): (
        "Hive 2.3 throws only `1: MetaException o2`; Hive 3+ throws `1: NoSuchObjectException o1, "
        "2: MetaException o2`. Both exceptions are {1: string message}, so a 2.3 client reads our "
        "id-1 exception as a MetaException; id 2 is unknown to it."
    ),
    ("ThriftHiveMetastore.get_partition_names_result", 2): "see get_partition_names_result id 1",
}

# What we declare that Hive 2.3.10 does not have at all (Hive 3/4 additions). Listed so that a
# misspelt struct or method name cannot pass as "newer than 2.3".
NEWER_THAN_HIVE_2_3 = {
    "CreationMetadata",
    "DeleteColumnStatisticsRequest",
    "GetPartitionsByNamesRequest",
    "GetPartitionsByNamesResult",
    "GetProjectionsSpec",
    "ObjectDictionary",
    "SetPartitionsStatsResponse",
    "Timestamp",
    "TimestampColumnStatsData",
    *(
        f"ThriftHiveMetastore.{method}_{kind}"
        for method in (
            "truncate_table",
            "get_partitions_by_names_req",
            "update_table_column_statistics_req",
            "update_partition_column_statistics_req",
            "delete_column_statistics_req",
        )
        for kind in ("args", "result")
    ),
}

# The methods the server is built around (the brief of the Thrift interface).
# fmt: off
REQUIRED_METHODS = {
    # fb303
    "getName", "getVersion", "getStatus", "getStatusDetails", "getCounters", "getCounter",
    "setOption", "getOption", "getOptions", "getCpuProfile", "aliveSince", "reinitialize", "shutdown",
    # configuration and session
    "getMetaConf", "setMetaConf", "get_config_value", "set_ugi", "get_all_functions", "get_functions",
    "get_function",
    # databases
    "create_database", "get_database", "get_databases", "get_all_databases", "drop_database",
    "alter_database",
    # tables
    "create_table", "create_table_with_environment_context", "get_table", "get_table_req", "get_tables",
    "get_tables_by_type", "get_all_tables", "get_table_meta", "get_table_objects_by_name",
    "get_table_objects_by_name_req", "get_fields", "get_fields_with_environment_context", "get_schema",
    "get_schema_with_environment_context", "alter_table", "alter_table_with_environment_context",
    "alter_table_with_cascade", "drop_table", "drop_table_with_environment_context",
    "get_table_names_by_filter", "truncate_table",
    # partitions
    "add_partition", "add_partition_with_environment_context", "add_partitions", "add_partitions_req",
    "append_partition", "append_partition_by_name", "get_partition", "get_partition_by_name",
    "get_partition_with_auth", "get_partitions", "get_partitions_with_auth", "get_partitions_ps",
    "get_partitions_ps_with_auth", "get_partition_names", "get_partition_names_ps",
    "get_partitions_by_names", "get_partitions_by_names_req", "get_partitions_by_filter",
    "get_num_partitions_by_filter", "alter_partition", "alter_partitions",
    "alter_partitions_with_environment_context", "alter_partition_with_environment_context",
    "drop_partition", "drop_partition_with_environment_context", "drop_partition_by_name",
    "drop_partition_by_name_with_environment_context", "drop_partitions_req", "partition_name_to_vals",
    "partition_name_to_spec", "markPartitionForEvent",
    # column statistics
    "update_table_column_statistics", "update_partition_column_statistics",
    "update_table_column_statistics_req", "update_partition_column_statistics_req",
    "get_table_column_statistics", "get_partition_column_statistics", "get_table_statistics_req",
    "get_partitions_statistics_req", "get_aggr_stats_for", "set_aggr_stats_for",
    "delete_table_column_statistics", "delete_partition_column_statistics", "delete_column_statistics_req",
    # asked by JVM clients at connect / DDL time
    "get_primary_keys", "get_foreign_keys", "get_current_notificationEventId", "get_indexes",
    "get_index_names",
}
# fmt: on

_SCALAR_NAMES = {
    TType.BOOL: "bool",
    TType.BYTE: "i8",
    TType.DOUBLE: "double",
    TType.I16: "i16",
    TType.I32: "i32",
    TType.I64: "i64",
    TType.STRING: "string",  # binary too: same wire type
}


def _type_name(ttype: int, args: Any) -> str:
    """Wire-level IDL spelling of a thrift_spec type, matching ThriftLayoutDump.typeName."""
    if ttype == TType.STRUCT:
        return "struct:" + args[0].__name__
    if ttype in (TType.LIST, TType.SET):
        kind = "list" if ttype == TType.LIST else "set"
        return f"{kind}<{_type_name(args[0], args[1])}>"
    if ttype == TType.MAP:
        return f"map<{_type_name(args[0], args[1])},{_type_name(args[2], args[3])}>"
    return _SCALAR_NAMES[ttype]


def _layout(cls: type) -> dict[int, tuple[str, str]]:
    """{field id: (name, type)} of one generated Python struct."""
    return {spec[0]: (spec[2], _type_name(spec[1], spec[3])) for spec in cls.thrift_spec if spec}


def _generated_classes(module: Any, prefix: str = "") -> dict[str, type]:
    return {
        prefix + name: cls
        for name, cls in vars(module).items()
        if inspect.isclass(cls)
        and cls.__module__ == module.__name__
        and getattr(cls, "thrift_spec", None) is not None
    }


def our_layouts() -> dict[str, dict[int, tuple[str, str]]]:
    """Layouts of every struct, exception and method args/result we generate."""
    classes = {
        **_generated_classes(ttypes),
        **_generated_classes(ThriftHiveMetastore, "ThriftHiveMetastore."),
        **_generated_classes(FacebookService, "FacebookService."),
    }
    return {name: _layout(cls) for name, cls in classes.items()}


def _pyspark_jars() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    assert (jars / "hive-metastore-2.3.10.jar").is_file(), f"hive-metastore-2.3.10.jar not in {jars}"
    return jars


def _java_tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / name).is_file():
        return str(Path(java_home) / "bin" / name)
    found = shutil.which(name)
    assert found, f"{name} (JDK 17) is required by this test and is not on PATH"
    return found


@pytest.fixture(scope="module")
def hive_layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int, tuple[str, str]]]:
    """Field layouts of Hive 2.3.10's and libfb303's generated classes, read by reflection."""
    jars = _pyspark_jars()
    fb303_jars = sorted(jars.glob("libfb303-*.jar"))
    assert fb303_jars, f"libfb303 jar not in {jars}"
    classpath = f"{jars}/*"
    out_dir = tmp_path_factory.mktemp("thrift_layout_dump")
    subprocess.run(
        [_java_tool("javac"), "-d", str(out_dir), "-cp", classpath, str(DUMPER_SOURCE)],
        check=True,
        capture_output=True,
        text=True,
    )
    dump = out_dir / "hive-2.3.10.json"
    subprocess.run(
        [
            _java_tool("java"),
            "-cp",
            f"{out_dir}{os.pathsep}{classpath}",
            "ThriftLayoutDump",
            str(dump),
            str(jars / "hive-metastore-2.3.10.jar"),
            "org.apache.hadoop.hive.metastore.api",
            str(fb303_jars[0]),
            "com.facebook.fb303",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    raw = json.loads(dump.read_text(encoding="utf-8"))
    return {cls: {fid: (name, ftype) for name, (fid, ftype) in fields.items()} for cls, fields in raw.items()}


def test_dump_reads_the_hive_classes(hive_layouts: dict[str, dict[int, tuple[str, str]]]) -> None:
    """Guards the comparison below against passing on an empty or broken dump."""
    assert hive_layouts["Table"][1] == ("tableName", "string")
    assert hive_layouts["ThriftHiveMetastore.get_table_req_args"] == {1: ("req", "struct:GetTableRequest")}
    assert hive_layouts["FacebookService.getCounter_args"] == {1: ("key", "string")}
    assert len(hive_layouts) > 400  # 2.3.10: about 150 structs and 150 methods (args + result)


# Our extension calls and structs (not Hive's): methods start with `metastore_`, structs with `Metastore`, so no
# HMS client can call them by accident (see the IDL's "issue N" sections).
EXTENSION_PREFIXES = ("Metastore", "ThriftHiveMetastore.metastore_")


def test_declarations_newer_than_hive_2_3_are_the_known_ones(
    hive_layouts: dict[str, dict[int, tuple[str, str]]],
) -> None:
    ours = our_layouts()
    absent_from_hive = {name for name in ours if name not in hive_layouts and not name.startswith(EXTENSION_PREFIXES)}
    assert absent_from_hive == NEWER_THAN_HIVE_2_3
    # the prefix hides no Hive declaration, and the issue-10 calls are there
    assert not {name for name in hive_layouts if name.startswith(EXTENSION_PREFIXES)}
    for method in ("metastore_get_file_partials", "metastore_put_file_partials", "metastore_delete_file_partials"):
        assert f"ThriftHiveMetastore.{method}_args" in ours
    for method in ("metastore_create_index", "metastore_get_index", "metastore_list_indexes",
                   "metastore_finish_index_build", "metastore_drop_index", "metastore_filter_splits"):
        assert f"ThriftHiveMetastore.{method}_args" in ours


def _differences(
    hive: dict[str, dict[int, tuple[str, str]]], ours: dict[str, dict[int, tuple[str, str]]]
) -> list[tuple[str, int, str]]:
    found = []
    for cls in sorted(ours.keys() & hive.keys()):
        theirs, mine = hive[cls], ours[cls]
        for fid, (name, ftype) in sorted(theirs.items()):
            if fid not in mine:
                found.append((cls, fid, f"Hive has {fid}: {ftype} {name}; we do not declare id {fid}"))
            elif mine[fid][1] != ftype:
                found.append(
                    (cls, fid, f"Hive has {fid}: {ftype} {name}; we have {mine[fid][1]} {mine[fid][0]}")
                )
        if cls.endswith("_result"):
            # Every id of a reply (0 = return value, others = exceptions) must be known to the peer.
            for fid in sorted(mine.keys() - theirs.keys()):
                found.append(
                    (cls, fid, f"we reply with {fid}: {mine[fid][1]} {mine[fid][0]}; Hive has no id {fid}")
                )
    return found


def test_wire_layout_matches_hive_2_3(hive_layouts: dict[str, dict[int, tuple[str, str]]]) -> None:
    found = _differences(hive_layouts, our_layouts())
    unexpected = [f"{cls} {msg}" for cls, fid, msg in found if (cls, fid) not in ALLOWED_DIFFERENCES]
    assert not unexpected, "wire layout differs from Hive 2.3.10:\n" + "\n".join(unexpected)
    stale = set(ALLOWED_DIFFERENCES) - {(cls, fid) for cls, fid, _ in found}
    assert not stale, f"allow-listed differences no longer occur, remove them: {sorted(stale)}"


def test_field_names_match_hive_2_3(hive_layouts: dict[str, dict[int, tuple[str, str]]]) -> None:
    """Names do not travel on the wire, but we promise Hive's names (Python keyword arguments)."""
    ours = our_layouts()
    renamed = [
        f"{cls} id {fid}: Hive {hive_layouts[cls][fid][0]!r}, ours {ours[cls][fid][0]!r}"
        for cls in sorted(ours.keys() & hive_layouts.keys())
        for fid in sorted(ours[cls].keys() & hive_layouts[cls].keys())
        if ours[cls][fid][0] != hive_layouts[cls][fid][0] and (cls, fid) not in ALLOWED_DIFFERENCES
    ]
    assert not renamed, "\n".join(renamed)


def test_every_method_has_args_and_result_in_hive_or_is_newer(
    hive_layouts: dict[str, dict[int, tuple[str, str]]],
) -> None:
    """A method we declare must exist in Hive as a pair; oneway methods have no result."""
    ours = our_layouts()
    for name in ours:
        if name.endswith("_args") and name in hive_layouts:
            result = name[: -len("_args")] + "_result"
            assert (result in ours) == (result in hive_layouts), f"{result}: ours/Hive disagree on oneway"


def test_processor_serves_every_required_method() -> None:
    served = set(ThriftHiveMetastore.Processor(ThriftHiveMetastore.Iface())._processMap)
    missing = REQUIRED_METHODS - served
    assert not missing, f"methods missing from the IDL: {sorted(missing)}"


# --- the accelerated codec ---------------------------------------------------------------------


def test_fastbinary_extension_is_available() -> None:
    from thrift.protocol import fastbinary  # noqa: F401 - the C extension must import

    proto = TBinaryProtocol.TBinaryProtocolAccelerated(TTransport.TMemoryBuffer())
    assert proto._fast_encode is not None and proto._fast_decode is not None


def _encode(obj: Any, accelerated: bool) -> bytes:
    buf = TTransport.TMemoryBuffer()
    factory = TBinaryProtocol.TBinaryProtocolAccelerated if accelerated else TBinaryProtocol.TBinaryProtocol
    obj.write(factory(buf))
    return buf.getvalue()


def _decode(cls: type, data: bytes, accelerated: bool) -> Any:
    factory = TBinaryProtocol.TBinaryProtocolAccelerated if accelerated else TBinaryProtocol.TBinaryProtocol
    obj = cls()
    obj.read(factory(TTransport.TMemoryBuffer(data)))
    return obj


def _sample_table() -> ttypes.Table:
    cols = [ttypes.FieldSchema("id", "bigint", "row id"), ttypes.FieldSchema("name", "string", None)]
    sd = ttypes.StorageDescriptor(
        cols=cols,
        location="file:/warehouse/sales.db/orders",
        inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
        compressed=False,
        numBuckets=-1,
        serdeInfo=ttypes.SerDeInfo(
            None, "org.apache.hadoop.hive.ql.io.orc.OrcSerde", {"serialization.format": "1"}
        ),
        bucketCols=[],
        sortCols=[ttypes.Order("id", 1)],
        parameters={},
        skewedInfo=ttypes.SkewedInfo([], [], {("a", "b"): "file:/x"}),
        storedAsSubDirectories=False,
    )
    grant = ttypes.PrivilegeGrantInfo("SELECT", 1700000000, "admin", ttypes.PrincipalType.USER, True)
    return ttypes.Table(
        tableName="orders",
        dbName="sales",
        owner="alice",
        createTime=1700000000,
        lastAccessTime=0,
        retention=0,
        sd=sd,
        partitionKeys=[ttypes.FieldSchema("dt", "string", None)],
        parameters={"transient_lastDdlTime": "1700000000", "comment": "héllo ✓"},
        tableType="MANAGED_TABLE",
        privileges=ttypes.PrincipalPrivilegeSet(userPrivileges={"alice": [grant]}),
        catName="hive",
        writeId=7,
        accessType=constants.ACCESSTYPE_READWRITE,
        id=42,
    )


def _sample_column_statistics() -> ttypes.ColumnStatistics:
    # Sketch bytes are arbitrary binary, not UTF-8: they must survive as bytes.
    hll = b"HLL\xa0\x05\xff\x00\x80"
    kll = bytes(range(256))
    union = ttypes.ColumnStatisticsData
    objs = [
        ttypes.ColumnStatisticsObj(
            "b", "boolean", union(booleanStats=ttypes.BooleanColumnStatsData(3, 4, 1))
        ),
        ttypes.ColumnStatisticsObj(
            "l", "bigint", union(longStats=ttypes.LongColumnStatsData(-(2**63), 2**63 - 1, 0, 10, hll, kll))
        ),
        ttypes.ColumnStatisticsObj(
            "d", "double", union(doubleStats=ttypes.DoubleColumnStatsData(-1.5, 2.25, 0, 3))
        ),
        ttypes.ColumnStatisticsObj(
            "s", "string", union(stringStats=ttypes.StringColumnStatsData(12, 4.5, 2, 9, hll))
        ),
        ttypes.ColumnStatisticsObj(
            "y", "binary", union(binaryStats=ttypes.BinaryColumnStatsData(100, 50.0, 0))
        ),
        ttypes.ColumnStatisticsObj(
            "m",
            "decimal(10,2)",
            union(
                decimalStats=ttypes.DecimalColumnStatsData(
                    lowValue=ttypes.Decimal(unscaled=b"\xff\x85", scale=2),  # -123 -> -1.23
                    highValue=ttypes.Decimal(unscaled=b"\x30\x39", scale=2),  # 12345 -> 123.45
                    numNulls=1,
                    numDVs=5,
                )
            ),
        ),
        ttypes.ColumnStatisticsObj(
            "dt",
            "date",
            union(dateStats=ttypes.DateColumnStatsData(ttypes.Date(0), ttypes.Date(19000), 0, 2)),
        ),
        ttypes.ColumnStatisticsObj(
            "ts",
            "timestamp",
            union(
                timestampStats=ttypes.TimestampColumnStatsData(
                    ttypes.Timestamp(-86400), ttypes.Timestamp(1700000000), 0, 2, hll, kll
                )
            ),
        ),
    ]
    desc = ttypes.ColumnStatisticsDesc(True, "sales", "orders", None, 1700000000, "hive")
    return ttypes.ColumnStatistics(desc, objs, isStatsCompliant=True)


SAMPLES = {
    "table": _sample_table,
    "column_statistics": _sample_column_statistics,
    "set_partitions_stats_request": lambda: ttypes.SetPartitionsStatsRequest(
        [_sample_column_statistics()], needMerge=True, writeId=3
    ),
    "partitions_stats_result": lambda: ttypes.PartitionsStatsResult(
        {"dt=2024-01-01": _sample_column_statistics().statsObj}, isStatsCompliant=False
    ),
    "drop_partitions_request": lambda: ttypes.DropPartitionsRequest(
        "sales", "orders", ttypes.RequestPartsSpec(names=["dt=2024-01-01"]), deleteData=True
    ),
}


@pytest.mark.parametrize("make", list(SAMPLES.values()), ids=list(SAMPLES))
def test_round_trip_through_accelerated_protocol(make: Any) -> None:
    original = make()
    fast = _encode(original, accelerated=True)
    # The C codec and the pure-Python codec must agree byte for byte and decode each other.
    assert fast == _encode(original, accelerated=False)
    assert _decode(type(original), fast, accelerated=True) == original
    assert _decode(type(original), fast, accelerated=False) == original


def test_binary_sketches_stay_bytes() -> None:
    stats = _decode(ttypes.ColumnStatistics, _encode(_sample_column_statistics(), True), True)
    long_stats = stats.statsObj[1].statsData.longStats
    assert isinstance(long_stats.bitVectors, bytes) and long_stats.bitVectors.startswith(b"HLL")
    assert long_stats.histogram == bytes(range(256))


def test_engine_defaults_to_hive_when_absent() -> None:
    """Hive 2.3/3.x clients never send `engine`; a decoded request must still say "hive"."""
    old_style = TTransport.TMemoryBuffer()
    proto = TBinaryProtocol.TBinaryProtocol(old_style)
    proto.writeStructBegin("TableStatsRequest")
    proto.writeFieldBegin("dbName", TType.STRING, 1)
    proto.writeString("sales")
    proto.writeFieldEnd()
    proto.writeFieldBegin("tblName", TType.STRING, 2)
    proto.writeString("orders")
    proto.writeFieldEnd()
    proto.writeFieldBegin("colNames", TType.LIST, 3)
    proto.writeListBegin(TType.STRING, 1)
    proto.writeString("id")
    proto.writeListEnd()
    proto.writeFieldEnd()
    proto.writeFieldStop()
    proto.writeStructEnd()
    for accelerated in (True, False):
        request = _decode(ttypes.TableStatsRequest, old_style.getvalue(), accelerated)
        assert (request.dbName, request.tblName, request.colNames) == ("sales", "orders", ["id"])
        assert request.engine == "hive"
        assert request.id == -1
    for cls in (
        ttypes.SetPartitionsStatsRequest,
        ttypes.PartitionsStatsRequest,
        ttypes.GetTableRequest,
        ttypes.GetPartitionsByNamesRequest,
        ttypes.DeleteColumnStatisticsRequest,
        ttypes.ColumnStatistics,
    ):
        assert cls().engine == "hive", cls.__name__


def test_field_with_other_wire_type_is_skipped() -> None:
    """Hive 2.3.10 sends Table field 16 as a string (catName); we declare a struct there."""
    buf = TTransport.TMemoryBuffer()
    proto = TBinaryProtocol.TBinaryProtocol(buf)
    proto.writeStructBegin("Table")
    proto.writeFieldBegin("tableName", TType.STRING, 1)
    proto.writeString("orders")
    proto.writeFieldEnd()
    proto.writeFieldBegin("catName", TType.STRING, 16)
    proto.writeString("hive")
    proto.writeFieldEnd()
    proto.writeFieldBegin("retention", TType.I32, 6)
    proto.writeI32(5)
    proto.writeFieldEnd()
    proto.writeFieldStop()
    proto.writeStructEnd()
    for accelerated in (True, False):
        table = _decode(ttypes.Table, buf.getvalue(), accelerated)
        assert (table.tableName, table.retention, table.creationMetadata) == ("orders", 5, None)
