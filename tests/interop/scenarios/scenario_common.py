"""The interop scenario every outside client runs, written against any Thrift-generated Hive Metastore module.

This file runs inside each client's own virtualenv, so it imports only the standard library; the client script
hands it the client object (generated `ThriftHiveMetastore.Client` methods) and the generated `ttypes` module.

Every step's answer is recorded as JSON, normalised so two servers can be compared:
- structs become dicts of their non-empty fields; Decimal becomes its decimal text;
- server clocks are dropped (createTime, lastAccessTime, transient_lastDdlTime); `lastAnalyzed` is kept when it
  equals what the client sent, else recorded as "<server clock>";
- locations keep only the part from the `<db>.db` folder on, so warehouse roots do not matter;
- unordered collections are sorted;
- an error is recorded as its class name (plus the TApplicationException type code) and, apart, its message.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import traceback
from collections.abc import Callable
from decimal import Decimal
from typing import Any

LAST_ANALYZED = 1_700_000_000
VOLATILE_FIELDS = {"createTime", "lastAccessTime"}
VOLATILE_PARAMETERS = {"transient_lastDdlTime"}
SERVER_CLOCK = "<server clock>"

# Column name, Hive type, union member written for it, and the statistics (field name → value).
# Old IDLs have no timestampStats: a Hive 2.3/3 client writes timestamp statistics as longStats (seconds).
TABLE_COLUMNS: list[tuple[str, str]] = [
    ("c_boolean", "boolean"),
    ("c_tinyint", "tinyint"),
    ("c_smallint", "smallint"),
    ("c_int", "int"),
    ("c_bigint", "bigint"),
    ("c_float", "float"),
    ("c_double", "double"),
    ("c_decimal", "decimal(10,2)"),
    ("c_date", "date"),
    ("c_timestamp", "timestamp"),
    ("c_string", "string"),
    ("c_varchar", "varchar(10)"),
    ("c_char", "char(5)"),
    ("c_binary", "binary"),
]
PARTITION_KEYS: list[tuple[str, str]] = [("ds", "string")]
PARTITION_VALUES = ["2024-01-01", "2024-01-02", "2024-01-03"]
PARTITION_NAMES = [f"ds={v}" for v in PARTITION_VALUES]
PART_STATS_COLUMNS = ["c_boolean", "c_int", "c_double", "c_decimal", "c_date", "c_string"]

TABLE_STATS: dict[str, tuple[str, dict[str, Any]]] = {
    "c_boolean": ("booleanStats", {"numTrues": 60, "numFalses": 30, "numNulls": 10}),
    "c_tinyint": ("longStats", {"lowValue": -5, "highValue": 100, "numNulls": 1, "numDVs": 50}),
    "c_smallint": ("longStats", {"lowValue": -300, "highValue": 3000, "numNulls": 2, "numDVs": 200}),
    "c_int": ("longStats", {"lowValue": -100000, "highValue": 100000, "numNulls": 3, "numDVs": 1000}),
    "c_bigint": ("longStats", {"lowValue": -(2**40), "highValue": 2**40, "numNulls": 0, "numDVs": 90}),
    "c_float": ("doubleStats", {"lowValue": -1.5, "highValue": 2.5, "numNulls": 4, "numDVs": 80}),
    "c_double": ("doubleStats", {"lowValue": -1e10, "highValue": 1e10, "numNulls": 5, "numDVs": 85}),
    "c_decimal": (
        "decimalStats",
        {"lowValue": Decimal("-123.45"), "highValue": Decimal("99999999.99"), "numNulls": 6, "numDVs": 70},
    ),
    "c_date": ("dateStats", {"lowValue": 19000, "highValue": 19800, "numNulls": 7, "numDVs": 60}),
    "c_timestamp": (
        "longStats",
        {"lowValue": 1_700_000_000, "highValue": 1_710_000_000, "numNulls": 8, "numDVs": 75},
    ),
    "c_string": ("stringStats", {"maxColLen": 20, "avgColLen": 7.5, "numNulls": 9, "numDVs": 40}),
    "c_varchar": ("stringStats", {"maxColLen": 10, "avgColLen": 4.25, "numNulls": 0, "numDVs": 30}),
    "c_char": ("stringStats", {"maxColLen": 5, "avgColLen": 5.0, "numNulls": 1, "numDVs": 3}),
    "c_binary": ("binaryStats", {"maxColLen": 64, "avgColLen": 12.5, "numNulls": 2}),
}


def partition_stats(index: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """Statistics of partition `index` (0-based) for PART_STATS_COLUMNS; values differ per partition."""
    i = index + 1
    return {
        "c_boolean": ("booleanStats", {"numTrues": 10 * i, "numFalses": 5 * i, "numNulls": i}),
        "c_int": ("longStats", {"lowValue": -10 * i, "highValue": 100 * i, "numNulls": i, "numDVs": 20 * i}),
        "c_double": (
            "doubleStats",
            {"lowValue": -0.5 * i, "highValue": 1.25 * i, "numNulls": 2 * i, "numDVs": 30 + i},
        ),
        "c_decimal": (
            "decimalStats",
            {
                "lowValue": Decimal(f"-{i}.50"),
                "highValue": Decimal(f"{100 * i}.25"),
                "numNulls": i,
                "numDVs": 10 + i,
            },
        ),
        "c_date": (
            "dateStats",
            {"lowValue": 19000 + i, "highValue": 19100 + i, "numNulls": 0, "numDVs": 5 * i},
        ),
        "c_string": (
            "stringStats",
            {"maxColLen": 10 + i, "avgColLen": 3.5 + i, "numNulls": i, "numDVs": 7 * i},
        ),
    }


# ---------------------------------------------------------------- normalisation


def decimal_to_text(unscaled: bytes, scale: int) -> str:
    """Hive's Decimal struct (big-endian two's complement unscaled value, scale) as decimal text."""
    value = int.from_bytes(unscaled, "big", signed=True) if unscaled else 0
    return str(Decimal(value).scaleb(-scale))


def normalise_location(value: str) -> str:
    parts = value.rstrip("/").split("/")
    for i, part in enumerate(parts):
        if part.endswith(".db"):
            return "/".join(parts[i:])
    return "<location>"


def normalise(value: Any, field: str | None = None) -> Any:
    """A JSON-ready, server-independent form of a Thrift value (see the module docstring)."""
    if value is None:
        return None
    if isinstance(value, bool | int | float | str):
        if field in ("location", "locationUri") and isinstance(value, str):
            return normalise_location(value)
        if field == "lastAnalyzed":
            return value if value == LAST_ANALYZED else SERVER_CLOCK
        return value
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(normalise(v) for v in value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if field == "parameters" and k in VOLATILE_PARAMETERS:
                continue
            out[str(k)] = normalise(v)
        return dict(sorted(out.items()))
    cls = type(value).__name__
    attrs = getattr(value, "__dict__", None)
    if attrs is None:
        return repr(value)
    if cls == "Decimal" and "unscaled" in attrs and "scale" in attrs:
        return decimal_to_text(attrs["unscaled"], attrs["scale"])
    out = {}
    for k, v in attrs.items():
        if k.startswith("_") or k in VOLATILE_FIELDS or v is None:
            continue
        out[k] = normalise(v, k)
    return dict(sorted(out.items()))


def sort_stats_objs(objs: list[Any]) -> list[Any]:
    """ColumnStatisticsObj lists in column-name order (servers return them in any order)."""
    return sorted(objs, key=lambda o: o.get("colName", "") if isinstance(o, dict) else "")


def normalise_column_statistics(cs: Any) -> Any:
    n = normalise(cs)
    if isinstance(n, dict) and isinstance(n.get("statsObj"), list):
        n["statsObj"] = sort_stats_objs(n["statsObj"])
    return n


def normalise_table_stats_result(res: Any) -> Any:
    n = normalise(res)
    if isinstance(n, dict):
        n["tableStats"] = sort_stats_objs(n.get("tableStats") or [])
    return n


def normalise_partitions_stats_result(res: Any) -> Any:
    n = normalise(res)
    if isinstance(n, dict):
        n["partStats"] = {k: sort_stats_objs(v) for k, v in sorted((n.get("partStats") or {}).items())}
    return n


def normalise_aggr_stats(res: Any) -> Any:
    n = normalise(res)
    if isinstance(n, dict):
        n["colStats"] = sort_stats_objs(n.get("colStats") or [])
    return n


def normalise_partitions(parts: list[Any]) -> list[Any]:
    return sorted((normalise(p) for p in parts), key=lambda p: p.get("values", []))


# ---------------------------------------------------------------- recording


class Recorder:
    """Runs each step, records its normalised answer or its error, and never lets one step stop the rest."""

    def __init__(self, client_name: str, reconnect: Callable[[], None] | None = None) -> None:
        self.client_name = client_name
        self.steps: list[dict[str, Any]] = []
        # After an error that is not a Thrift answer (a decode failure half-way through a reply), the connection
        # may be out of step with the server; the client script's reconnect opens a fresh one.
        self.reconnect = reconnect

    def step(self, name: str, fn: Callable[[], Any], shape: Callable[[Any], Any] = normalise) -> Any:
        if any(s["step"] == name for s in self.steps):
            raise ValueError(f"step name {name!r} used twice")
        record: dict[str, Any] = {"step": name}
        result = None
        try:
            result = fn()
            record["result"] = shape(result)
        except Exception as exc:  # noqa: BLE001 - every failure is data for the comparison
            record["error"] = error_record(exc)
            record["message"] = error_message(exc)
            if not is_thrift_error(exc):
                record["traceback"] = traceback.format_exc(limit=6)
                if self.reconnect is not None:
                    self.reconnect()
        self.steps.append(record)
        return result

    def note(self, name: str, value: Any) -> None:
        """Record a value computed by the scenario itself (not a server answer)."""
        self.steps.append({"step": name, "result": value})

    def output(self, **extra: Any) -> dict[str, Any]:
        return {"client": self.client_name, **extra, "steps": self.steps}


def is_thrift_error(exc: BaseException) -> bool:
    """A declared exception or TApplicationException: the reply was read whole, the connection is still usable."""
    names = {c.__name__ for c in type(exc).__mro__}
    return (
        bool(names & {"TException", "TApplicationException"})
        and "TTransportException" not in names
        and ("TProtocolException" not in names)
    )


def error_record(exc: BaseException) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": type(exc).__name__}
    if type(exc).__name__ == "TApplicationException":
        rec["code"] = getattr(exc, "type", None)
    return rec


def error_message(exc: BaseException) -> str:
    msg = getattr(exc, "message", None)
    return str(msg if msg is not None else exc)


# ---------------------------------------------------------------- builders over any generated ttypes


class Names:
    """Object names of one scenario run; `prefix` keeps concurrent runs on one server apart."""

    def __init__(self, prefix: str) -> None:
        self.db = f"{prefix}_db"
        self.other_db = f"{prefix}_db2"
        self.table = "all_types"
        self.missing_table = "no_such_table"


def decimal_struct(T: Any, value: Decimal) -> Any:
    sign, digits, exponent = value.as_tuple()
    scale = -int(exponent)
    unscaled = int(value.scaleb(scale))
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return T.Decimal(unscaled=unscaled.to_bytes(length, "big", signed=True), scale=scale)


def stats_data(T: Any, member: str, values: dict[str, Any]) -> Any:
    """A ColumnStatisticsData union with one member set, built from plain values."""
    v = dict(values)
    if member == "booleanStats":
        data = T.BooleanColumnStatsData(**v)
    elif member == "longStats":
        data = T.LongColumnStatsData(**v)
    elif member == "doubleStats":
        data = T.DoubleColumnStatsData(**v)
    elif member == "stringStats":
        data = T.StringColumnStatsData(**v)
    elif member == "binaryStats":
        data = T.BinaryColumnStatsData(**v)
    elif member == "decimalStats":
        for k in ("lowValue", "highValue"):
            if v.get(k) is not None:
                v[k] = decimal_struct(T, v[k])
        data = T.DecimalColumnStatsData(**v)
    elif member == "timestampStats":  # Hive 4 IDLs only
        for k in ("lowValue", "highValue"):
            if v.get(k) is not None:
                v[k] = T.Timestamp(secondsSinceEpoch=v[k])
        data = T.TimestampColumnStatsData(**v)
    elif member == "dateStats":
        for k in ("lowValue", "highValue"):
            if v.get(k) is not None:
                v[k] = T.Date(daysSinceEpoch=v[k])
        data = T.DateColumnStatsData(**v)
    else:
        raise ValueError(f"unknown union member {member}")
    return T.ColumnStatisticsData(**{member: data})


def column_type(name: str) -> str:
    return dict(TABLE_COLUMNS)[name]


def column_statistics(
    T: Any,
    db: str,
    table: str,
    stats: dict[str, tuple[str, dict[str, Any]]],
    part_name: str | None = None,
    col_types: dict[str, str] | None = None,
) -> Any:
    """A ColumnStatistics for the table (part_name None) or one partition."""
    types = col_types or dict(TABLE_COLUMNS)
    desc = T.ColumnStatisticsDesc(
        isTblLevel=part_name is None,
        dbName=db,
        tableName=table,
        partName=part_name,
        lastAnalyzed=LAST_ANALYZED,
    )
    objs = [
        T.ColumnStatisticsObj(
            colName=col, colType=types.get(col, "bigint"), statsData=stats_data(T, member, values)
        )
        for col, (member, values) in stats.items()
    ]
    return T.ColumnStatistics(statsDesc=desc, statsObj=objs)


def orc_storage(T: Any, cols: list[tuple[str, str]], location: str | None = None) -> Any:
    return T.StorageDescriptor(
        cols=[T.FieldSchema(name=n, type=t, comment=None) for n, t in cols],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
        compressed=False,
        numBuckets=-1,
        serdeInfo=T.SerDeInfo(
            name=None, serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde", parameters={}
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
    )


def all_types_table(T: Any, names: Names) -> Any:
    return T.Table(
        tableName=names.table,
        dbName=names.db,
        owner="interop",
        createTime=0,
        lastAccessTime=0,
        retention=0,
        sd=orc_storage(T, TABLE_COLUMNS),
        partitionKeys=[T.FieldSchema(name=n, type=t, comment=None) for n, t in PARTITION_KEYS],
        parameters={"comment": "every primitive type", "orc.compress": "ZSTD"},
        tableType="MANAGED_TABLE",
    )


def partition_for(T: Any, table: Any, value: str) -> Any:
    sd = orc_storage(T, TABLE_COLUMNS, location=f"{table.sd.location}/ds={value}")
    return T.Partition(values=[value], dbName=table.dbName, tableName=table.tableName, sd=sd, parameters={})


# ---------------------------------------------------------------- the scenario


class Scenario:
    """The common steps; a client script runs them in order and adds its own high-level steps between them."""

    def __init__(self, rec: Recorder, client: Any, T: Any, names: Names) -> None:
        self.rec, self.c, self.T, self.n = rec, client, T, names

    # --- databases
    def databases(self, create_db: Callable[[Any], Any] | None = None) -> None:
        T, n, c = self.T, self.n, self.c
        db = T.Database(
            name=n.db,
            description="interop scenario database",
            parameters={"team": "stats"},
            ownerName="interop",
            ownerType=T.PrincipalType.USER,
        )
        self.rec.step("create_database", lambda: (create_db or c.create_database)(db))
        self.rec.step(
            "create_database_other", lambda: c.create_database(T.Database(name=n.other_db, parameters={}))
        )
        self.rec.step("create_database_again", lambda: c.create_database(db))
        self.rec.step("get_database", lambda: c.get_database(n.db))
        self.rec.step("get_database_missing", lambda: c.get_database(f"{n.db}_missing"))
        wanted = {"default", n.db, n.other_db}
        self.rec.step("get_all_databases", lambda: sorted(d for d in c.get_all_databases() if d in wanted))
        self.rec.step("drop_database_other", lambda: c.drop_database(n.other_db, True, False))
        self.rec.step(
            "get_all_databases_after_drop", lambda: sorted(d for d in c.get_all_databases() if d in wanted)
        )

    # --- table and partitions
    def table(self) -> Any:
        T, n, c = self.T, self.n, self.c
        self.rec.step("create_table", lambda: c.create_table(all_types_table(T, n)))
        self.rec.step("create_table_again", lambda: c.create_table(all_types_table(T, n)))
        table = self.rec.step("get_table", lambda: c.get_table(n.db, n.table))
        self.rec.step("get_table_missing", lambda: c.get_table(n.db, n.missing_table))
        self.rec.step("get_all_tables", lambda: sorted(c.get_all_tables(n.db)))
        return table

    def partitions(self, table: Any, add: Callable[[Any, list[Any]], Any] | None = None) -> None:
        T, n, c = self.T, self.n, self.c
        parts = [partition_for(T, table, v) for v in PARTITION_VALUES]
        self.rec.step("add_partitions", lambda: (add or (lambda _t, p: c.add_partitions(p)))(table, parts))
        self.rec.step("add_partitions_again", lambda: c.add_partitions(parts[:1]))
        self.rec.step("get_partition_names", lambda: sorted(c.get_partition_names(n.db, n.table, -1)))
        self.rec.step("get_partitions", lambda: c.get_partitions(n.db, n.table, -1), normalise_partitions)
        self.rec.step(
            "get_partition_by_name", lambda: c.get_partition_by_name(n.db, n.table, PARTITION_NAMES[1])
        )
        self.rec.step(
            "get_partition_by_name_missing", lambda: c.get_partition_by_name(n.db, n.table, "ds=1999-01-01")
        )

    # --- statistics that do not exist yet
    def missing_stats(self) -> None:
        T, n, c = self.T, self.n, self.c
        self.rec.step(
            "get_table_column_statistics_none", lambda: c.get_table_column_statistics(n.db, n.table, "c_int")
        )
        self.rec.step(
            "get_partition_column_statistics_none",
            lambda: c.get_partition_column_statistics(n.db, n.table, PARTITION_NAMES[0], "c_int"),
        )
        self.rec.step(
            "get_table_statistics_req_none",
            lambda: c.get_table_statistics_req(
                T.TableStatsRequest(dbName=n.db, tblName=n.table, colNames=["c_int", "c_string"])
            ),
            normalise_table_stats_result,
        )
        self.rec.step(
            "get_partitions_statistics_req_none",
            lambda: c.get_partitions_statistics_req(
                T.PartitionsStatsRequest(
                    dbName=n.db, tblName=n.table, colNames=["c_int"], partNames=PARTITION_NAMES
                )
            ),
            normalise_partitions_stats_result,
        )
        self.rec.step(
            "get_aggr_stats_for_none",
            lambda: c.get_aggr_stats_for(
                T.PartitionsStatsRequest(
                    dbName=n.db, tblName=n.table, colNames=["c_int"], partNames=PARTITION_NAMES
                )
            ),
            normalise_aggr_stats,
        )

    # --- writing statistics of every kind
    def write_stats(self) -> None:
        T, n, c = self.T, self.n, self.c
        self.rec.step(
            "update_table_column_statistics",
            lambda: c.update_table_column_statistics(column_statistics(T, n.db, n.table, TABLE_STATS)),
        )
        for i in (0, 1):
            self.rec.step(
                f"update_partition_column_statistics_{i}",
                lambda i=i: c.update_partition_column_statistics(
                    column_statistics(T, n.db, n.table, partition_stats(i), PARTITION_NAMES[i])
                ),
            )
        self.rec.step(
            "set_aggr_stats_for",
            lambda: c.set_aggr_stats_for(
                T.SetPartitionsStatsRequest(
                    colStats=[column_statistics(T, n.db, n.table, partition_stats(2), PARTITION_NAMES[2])],
                    needMerge=False,
                )
            ),
        )

    # --- reading them back
    def read_stats(self) -> None:
        T, n, c = self.T, self.n, self.c
        for col, _type in TABLE_COLUMNS:
            self.rec.step(
                f"get_table_column_statistics.{col}",
                lambda col=col: c.get_table_column_statistics(n.db, n.table, col),
                normalise_column_statistics,
            )
        all_cols = [col for col, _ in TABLE_COLUMNS]
        self.rec.step(
            "get_table_statistics_req",
            lambda: c.get_table_statistics_req(
                T.TableStatsRequest(dbName=n.db, tblName=n.table, colNames=all_cols)
            ),
            normalise_table_stats_result,
        )
        self.rec.step(
            "get_table_statistics_req_subset",
            lambda: c.get_table_statistics_req(
                T.TableStatsRequest(dbName=n.db, tblName=n.table, colNames=["c_int", "no_such_column"])
            ),
            normalise_table_stats_result,
        )
        self.rec.step(
            "get_partition_column_statistics",
            lambda: c.get_partition_column_statistics(n.db, n.table, PARTITION_NAMES[1], "c_decimal"),
            normalise_column_statistics,
        )
        self.rec.step(
            "get_partitions_statistics_req",
            lambda: c.get_partitions_statistics_req(
                T.PartitionsStatsRequest(
                    dbName=n.db, tblName=n.table, colNames=all_cols, partNames=PARTITION_NAMES
                )
            ),
            normalise_partitions_stats_result,
        )
        self.rec.step(
            "get_aggr_stats_for",
            lambda: c.get_aggr_stats_for(
                T.PartitionsStatsRequest(
                    dbName=n.db, tblName=n.table, colNames=PART_STATS_COLUMNS, partNames=PARTITION_NAMES
                )
            ),
            normalise_aggr_stats,
        )
        self.rec.step(
            "get_aggr_stats_for_two_partitions",
            lambda: c.get_aggr_stats_for(
                T.PartitionsStatsRequest(
                    dbName=n.db,
                    tblName=n.table,
                    colNames=["c_int", "c_string"],
                    partNames=PARTITION_NAMES[:2],
                )
            ),
            normalise_aggr_stats,
        )

    def merge_stats(self) -> None:
        """set_aggr_stats_for with needMerge=true merges into what partition 0 has."""
        T, n, c = self.T, self.n, self.c
        extra = {"c_int": ("longStats", {"lowValue": -500, "highValue": 50, "numNulls": 4, "numDVs": 15})}
        self.rec.step(
            "set_aggr_stats_for_merge",
            lambda: c.set_aggr_stats_for(
                T.SetPartitionsStatsRequest(
                    colStats=[column_statistics(T, n.db, n.table, extra, PARTITION_NAMES[0])], needMerge=True
                )
            ),
        )
        self.rec.step(
            "get_partition_column_statistics_after_merge",
            lambda: c.get_partition_column_statistics(n.db, n.table, PARTITION_NAMES[0], "c_int"),
            normalise_column_statistics,
        )

    # --- error cases
    def errors(self) -> None:
        T, n, c = self.T, self.n, self.c
        self.rec.step(
            "get_table_column_statistics_missing_table",
            lambda: c.get_table_column_statistics(n.db, n.missing_table, "c_int"),
        )
        self.rec.step(
            "get_table_column_statistics_missing_column",
            lambda: c.get_table_column_statistics(n.db, n.table, "no_such_column"),
        )
        self.rec.step(
            "get_table_statistics_req_missing_table",
            lambda: c.get_table_statistics_req(
                T.TableStatsRequest(dbName=n.db, tblName=n.missing_table, colNames=["c_int"])
            ),
            normalise_table_stats_result,
        )
        one = {"c_int": TABLE_STATS["c_int"]}
        self.rec.step(
            "update_table_column_statistics_missing_table",
            lambda: c.update_table_column_statistics(column_statistics(T, n.db, n.missing_table, one)),
        )
        self.rec.step(
            "update_table_column_statistics_missing_column",
            lambda: c.update_table_column_statistics(
                column_statistics(
                    T,
                    n.db,
                    n.table,
                    {"no_such_column": TABLE_STATS["c_int"]},
                    col_types={"no_such_column": "int"},
                )
            ),
        )
        self.rec.step(
            "update_partition_column_statistics_missing_partition",
            lambda: c.update_partition_column_statistics(
                column_statistics(T, n.db, n.table, one, "ds=1999-01-01")
            ),
        )
        bad = {
            "negative_nulls": {
                "c_int": ("longStats", {"lowValue": 1, "highValue": 2, "numNulls": -1, "numDVs": 2})
            },
            "low_above_high": {
                "c_int": ("longStats", {"lowValue": 10, "highValue": 2, "numNulls": 0, "numDVs": 2})
            },
            "kind_mismatch": {
                "c_int": ("doubleStats", {"lowValue": 1.0, "highValue": 2.0, "numNulls": 0, "numDVs": 2})
            },
        }
        for label, stats in bad.items():
            self.rec.step(
                f"update_table_column_statistics_{label}",
                lambda stats=stats: c.update_table_column_statistics(
                    column_statistics(T, n.db, n.table, stats)
                ),
            )
        # What the table holds for c_int after the invalid writes (unchanged unless the server accepted one).
        self.rec.step(
            "get_table_column_statistics_after_invalid",
            lambda: c.get_table_column_statistics(n.db, n.table, "c_int"),
            normalise_column_statistics,
        )

    # --- deletes
    def _delete(self, method: str, *args: Any) -> Any:
        """Hive 4 IDLs add an `engine` argument to the delete calls; older ones do not have it."""
        fn = getattr(self.c, method)
        if "engine" in inspect.signature(fn).parameters:
            return fn(*args, "hive")
        return fn(*args)

    def deletes(self) -> None:
        T, n, c = self.T, self.n, self.c
        self.rec.step(
            "delete_table_column_statistics",
            lambda: self._delete("delete_table_column_statistics", n.db, n.table, "c_string"),
        )
        self.rec.step(
            "get_table_column_statistics_deleted",
            lambda: c.get_table_column_statistics(n.db, n.table, "c_string"),
        )
        self.rec.step(
            "delete_table_column_statistics_again",
            lambda: self._delete("delete_table_column_statistics", n.db, n.table, "c_string"),
        )
        self.rec.step(
            "delete_partition_column_statistics",
            lambda: self._delete(
                "delete_partition_column_statistics", n.db, n.table, PARTITION_NAMES[1], "c_int"
            ),
        )
        self.rec.step(
            "get_partition_column_statistics_deleted",
            lambda: c.get_partition_column_statistics(n.db, n.table, PARTITION_NAMES[1], "c_int"),
        )
        self.rec.step(
            "get_partitions_statistics_req_after_delete",
            lambda: c.get_partitions_statistics_req(
                T.PartitionsStatsRequest(
                    dbName=n.db,
                    tblName=n.table,
                    colNames=["c_int", "c_string"],
                    partNames=PARTITION_NAMES[:2],
                )
            ),
            normalise_partitions_stats_result,
        )
        self.rec.step(
            "get_table_statistics_req_after_delete",
            lambda: c.get_table_statistics_req(
                T.TableStatsRequest(dbName=n.db, tblName=n.table, colNames=["c_int", "c_string"])
            ),
            normalise_table_stats_result,
        )

    # --- clean-up
    def cleanup(self) -> None:
        n, c = self.n, self.c
        self.rec.step("drop_table", lambda: c.drop_table(n.db, n.table, True))
        self.rec.step("get_table_after_drop", lambda: c.get_table(n.db, n.table))
        self.rec.step("drop_database", lambda: c.drop_database(n.db, True, True))
        self.rec.step("get_database_after_drop", lambda: c.get_database(n.db))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run the interop scenario against a Hive Metastore server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", default="interop", help="prefix of the database names this run creates")
    parser.add_argument("--tls-ca", help="speak TLS (the client library's TSSLSocket), verifying the server's "
                        "certificate against this PEM CA")
    return parser.parse_args(argv)


def open_socket(args: argparse.Namespace) -> Any:
    """The client's Thrift socket to the server: TSocket, or with --tls-ca the TSSLSocket of the client's own
    thrift package, as a user of that library turns TLS on (CA file, certificate and host name checked)."""
    if args.tls_ca:
        import ssl

        from thrift.transport import TSSLSocket

        return TSSLSocket.TSSLSocket(args.host, args.port, ca_certs=args.tls_ca, cert_reqs=ssl.CERT_REQUIRED)
    from thrift.transport import TSocket

    return TSocket.TSocket(args.host, args.port)


def emit(doc: dict[str, Any]) -> None:
    json.dump(doc, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
