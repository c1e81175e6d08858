"""What our server must answer to the interop scenario (tests/interop/scenarios/scenario_common.py), step by step.

These are hard expectations, written from Hive's documented semantics and from what the reference Hive Metastore
2.3.10 answered, minus the reference's known faults (see intentional_differences.py): a missing statistics object
is NoSuchObjectException (not an empty reply), lastAnalyzed is the client's, invalid statistics are rejected and
get_aggr_stats_for keeps decimal scale.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from interop.scenarios.scenario_common import (
    LAST_ANALYZED,
    PART_STATS_COLUMNS,
    PARTITION_NAMES,
    PARTITION_VALUES,
    TABLE_COLUMNS,
    TABLE_STATS,
    Names,
    partition_stats,
)


@dataclass(frozen=True)
class Ok:
    """The step returned exactly `value` (after normalisation)."""

    value: Any

    def check(self, record: dict[str, Any]) -> str | None:
        if "error" in record:
            return f"expected {self.value!r}, got {record['error']} {record.get('message', '')!r}"
        if record["result"] != self.value:
            return f"expected {self.value!r}, got {record['result']!r}"
        return None


@dataclass(frozen=True)
class OkWhere:
    """The step returned a value for which `predicate` holds."""

    predicate: Callable[[Any], bool]
    description: str

    def check(self, record: dict[str, Any]) -> str | None:
        if "error" in record:
            return f"expected {self.description}, got {record['error']} {record.get('message', '')!r}"
        try:
            good = self.predicate(record["result"])
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            return f"expected {self.description}, got {record['result']!r} ({type(exc).__name__}: {exc})"
        return None if good else f"expected {self.description}, got {record['result']!r}"


@dataclass(frozen=True)
class Err:
    """The step raised one of `types` (Thrift exception class names) whose message contains `mentions`."""

    types: tuple[str, ...]
    mentions: tuple[str, ...] = ()

    def check(self, record: dict[str, Any]) -> str | None:
        if "error" not in record:
            return f"expected {'/'.join(self.types)}, got result {record['result']!r}"
        got = record["error"]["type"]
        if got not in self.types:
            return f"expected {'/'.join(self.types)}, got {got} {record.get('message', '')!r}"
        missing = [m for m in self.mentions if m not in record.get("message", "")]
        if missing:
            return f"{got} message {record.get('message')!r} does not mention {missing}"
        return None


Expectation = Ok | OkWhere | Err
NO_SUCH = Err(("NoSuchObjectException",))
# The exceptions update_table_column_statistics declares; which one a bad column gets is the server's choice.
DECLARED_UPDATE_ERRORS = (
    "NoSuchObjectException",
    "InvalidObjectException",
    "MetaException",
    "InvalidInputException",
)


def stats_obj(col: str, member: str, values: dict[str, Any], col_type: str | None = None) -> dict[str, Any]:
    """The normalised ColumnStatisticsObj the scenario's writes should read back as."""
    v: dict[str, Any] = {}
    for k, x in values.items():
        if member == "decimalStats" and k in ("lowValue", "highValue"):
            v[k] = str(x)
        elif member == "dateStats" and k in ("lowValue", "highValue"):
            v[k] = {"daysSinceEpoch": x}
        else:
            v[k] = x
    return {
        "colName": col,
        "colType": col_type or dict(TABLE_COLUMNS)[col],
        "statsData": {member: dict(sorted(v.items()))},
    }


def table_stats_objs(
    cols: list[str], stats: dict[str, tuple[str, dict[str, Any]]] = TABLE_STATS
) -> list[dict[str, Any]]:
    return [stats_obj(c, *stats[c]) for c in sorted(cols)]


def column_statistics(
    names: Names, objs: list[dict[str, Any]], part_name: str | None = None
) -> dict[str, Any]:
    desc: dict[str, Any] = {
        "dbName": names.db,
        "tableName": names.table,
        "isTblLevel": part_name is None,
        "lastAnalyzed": LAST_ANALYZED,
    }
    if part_name is not None:
        desc["partName"] = part_name
    return {"statsDesc": dict(sorted(desc.items())), "statsObj": objs}


def _desc_matches(desc: dict[str, Any], expected: dict[str, Any]) -> bool:
    # catName ("hive") may be present for Hive-3+ clients; everything else must match.
    return {k: v for k, v in desc.items() if k != "catName"} == expected and desc.get(
        "catName", "hive"
    ) == "hive"


def column_statistics_like(names: Names, objs: list[dict[str, Any]], part_name: str | None = None) -> OkWhere:
    want = column_statistics(names, objs, part_name)
    return OkWhere(
        lambda r: (
            _desc_matches(r["statsDesc"], want["statsDesc"])
            and r["statsObj"] == want["statsObj"]
            and set(r) <= {"statsDesc", "statsObj", "isStatsCompliant", "engine"}
        ),
        f"ColumnStatistics {want}",
    )


def aggregate(indices: list[int], cols: list[str]) -> dict[str, Any]:
    """Hive's get_aggr_stats_for rules without bit vectors: counts and nulls add up, low=min, high=max,
    numDVs=max (the lower bound Hive uses with ndv tuner 0), string lengths take the maximum."""
    objs = []
    for col in sorted(cols):
        member, _ = partition_stats(0)[col]
        parts = [partition_stats(i)[col][1] for i in indices]
        if member == "booleanStats":
            agg = {k: sum(p[k] for p in parts) for k in ("numTrues", "numFalses", "numNulls")}
        elif member == "stringStats":
            agg = {
                "maxColLen": max(p["maxColLen"] for p in parts),
                "avgColLen": max(p["avgColLen"] for p in parts),
                "numNulls": sum(p["numNulls"] for p in parts),
                "numDVs": max(p["numDVs"] for p in parts),
            }
        else:
            agg = {
                "lowValue": min(p["lowValue"] for p in parts),
                "highValue": max(p["highValue"] for p in parts),
                "numNulls": sum(p["numNulls"] for p in parts),
                "numDVs": max(p["numDVs"] for p in parts),
            }
        objs.append(stats_obj(col, member, agg))
    return {"colStats": objs, "partsFound": len(indices)}


def _subset(expected: dict[str, Any]) -> Callable[[Any], bool]:
    return lambda r: all(r.get(k) == v for k, v in expected.items())


def _table_ok(names: Names) -> Callable[[Any], bool]:
    def check(t: dict[str, Any]) -> bool:
        sd = t["sd"]
        return (
            t["tableName"] == names.table
            and t["dbName"] == names.db
            and t["owner"] == "interop"
            and t["tableType"] == "MANAGED_TABLE"
            and t["parameters"].get("comment") == "every primitive type"
            and t["parameters"].get("orc.compress") == "ZSTD"
            and [(c["name"], c["type"]) for c in sd["cols"]] == TABLE_COLUMNS
            and [(c["name"], c["type"]) for c in t["partitionKeys"]] == [("ds", "string")]
            and sd["location"] == f"{names.db}.db/{names.table}"
            and sd["inputFormat"] == "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
            and sd["outputFormat"] == "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
            and sd["serdeInfo"]["serializationLib"] == "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
        )

    return check


def _partition_ok(names: Names, value: str) -> Callable[[Any], bool]:
    def check(p: dict[str, Any]) -> bool:
        return (
            p["values"] == [value]
            and p["dbName"] == names.db
            and p["tableName"] == names.table
            and p["sd"]["location"] == f"{names.db}.db/{names.table}/ds={value}"
            and [(c["name"], c["type"]) for c in p["sd"]["cols"]] == TABLE_COLUMNS
        )

    return check


def common_expectations(names: Names) -> dict[str, Expectation]:
    """Expected outcome of every step scenario_common.Scenario records, on our server."""
    n = names
    merged_p0_int = stats_obj(
        "c_int", "longStats", {"lowValue": -500, "highValue": 100, "numNulls": 5, "numDVs": 20}
    )
    p0, p1 = partition_stats(0), partition_stats(1)
    exp: dict[str, Expectation] = {
        # databases
        "create_database": Ok(None),
        "create_database_other": Ok(None),
        "create_database_again": Err(("AlreadyExistsException",), (n.db,)),
        "get_database": OkWhere(
            _subset(
                {
                    "name": n.db,
                    "description": "interop scenario database",
                    "locationUri": f"{n.db}.db",
                    "ownerName": "interop",
                    "ownerType": 1,
                    "parameters": {"team": "stats"},
                }
            ),
            "the database as created, located in <warehouse>/<db>.db",
        ),
        "get_database_missing": NO_SUCH,
        "get_all_databases": Ok(sorted(["default", n.db, n.other_db])),
        "drop_database_other": Ok(None),
        "get_all_databases_after_drop": Ok(sorted(["default", n.db])),
        # table and partitions
        "create_table": Ok(None),
        "create_table_again": Err(("AlreadyExistsException",), (n.table,)),
        "get_table": OkWhere(_table_ok(n), "the table as created, located in <db>.db/all_types"),
        "get_table_missing": NO_SUCH,
        "get_all_tables": Ok([n.table]),
        "add_partitions": Ok(3),
        "add_partitions_again": Err(("AlreadyExistsException",)),
        "get_partition_names": Ok(PARTITION_NAMES),
        "get_partitions": OkWhere(
            lambda ps: (
                len(ps) == 3
                and all(_partition_ok(n, v)(p) for p, v in zip(ps, PARTITION_VALUES, strict=True))
            ),
            "the three partitions, each located in <table>/ds=<value>",
        ),
        "get_partition_by_name": OkWhere(_partition_ok(n, PARTITION_VALUES[1]), "partition ds=2024-01-02"),
        "get_partition_by_name_missing": NO_SUCH,
        # statistics that do not exist yet
        "get_table_column_statistics_none": NO_SUCH,
        "get_partition_column_statistics_none": NO_SUCH,
        "get_table_statistics_req_none": OkWhere(
            lambda r: r["tableStats"] == [], "an empty TableStatsResult"
        ),
        "get_partitions_statistics_req_none": OkWhere(
            lambda r: r["partStats"] == {}, "an empty PartitionsStatsResult"
        ),
        "get_aggr_stats_for_none": OkWhere(
            lambda r: r["colStats"] == [] and r["partsFound"] == 0, "AggrStats with no columns, partsFound 0"
        ),
        # writes of every kind
        "update_table_column_statistics": Ok(True),
        "update_partition_column_statistics_0": Ok(True),
        "update_partition_column_statistics_1": Ok(True),
        "set_aggr_stats_for": Ok(True),
        # reads
        "get_table_statistics_req": OkWhere(
            lambda r: r["tableStats"] == table_stats_objs([c for c, _ in TABLE_COLUMNS]),
            "all 14 columns as written",
        ),
        "get_table_statistics_req_subset": OkWhere(
            lambda r: r["tableStats"] == table_stats_objs(["c_int"]),
            "c_int only (unknown columns are left out)",
        ),
        "get_partition_column_statistics": column_statistics_like(
            n, [stats_obj("c_decimal", *p1["c_decimal"])], PARTITION_NAMES[1]
        ),
        "get_partitions_statistics_req": OkWhere(
            lambda r: (
                r["partStats"]
                == {
                    name: [stats_obj(c, *partition_stats(i)[c]) for c in sorted(PART_STATS_COLUMNS)]
                    for i, name in enumerate(PARTITION_NAMES)
                }
            ),
            "every partition's six columns as written (three by update_partition_column_statistics/set_aggr_stats_for)",
        ),
        "get_aggr_stats_for": OkWhere(
            lambda r: (
                {k: r[k] for k in ("colStats", "partsFound")} == aggregate([0, 1, 2], PART_STATS_COLUMNS)
            ),
            f"aggregate {aggregate([0, 1, 2], PART_STATS_COLUMNS)}",
        ),
        "get_aggr_stats_for_two_partitions": OkWhere(
            lambda r: (
                {k: r[k] for k in ("colStats", "partsFound")} == aggregate([0, 1], ["c_int", "c_string"])
            ),
            f"aggregate {aggregate([0, 1], ['c_int', 'c_string'])}",
        ),
        # needMerge=true: low=min, high=max, nulls add up, numDVs=max
        "set_aggr_stats_for_merge": Ok(True),
        "get_partition_column_statistics_after_merge": column_statistics_like(
            n, [merged_p0_int], PARTITION_NAMES[0]
        ),
        # errors
        "get_table_column_statistics_missing_table": Err(("NoSuchObjectException",), (n.missing_table,)),
        "get_table_column_statistics_missing_column": NO_SUCH,
        "get_table_statistics_req_missing_table": Err(("NoSuchObjectException",), (n.missing_table,)),
        "update_table_column_statistics_missing_table": Err(("NoSuchObjectException",), (n.missing_table,)),
        "update_table_column_statistics_missing_column": Err(DECLARED_UPDATE_ERRORS, ("no_such_column",)),
        "update_partition_column_statistics_missing_partition": Err(("NoSuchObjectException",)),
        "update_table_column_statistics_negative_nulls": Err(("InvalidInputException",), ("c_int",)),
        "update_table_column_statistics_low_above_high": Err(("InvalidInputException",), ("c_int",)),
        "update_table_column_statistics_kind_mismatch": Err(("InvalidInputException",), ("c_int",)),
        "get_table_column_statistics_after_invalid": column_statistics_like(n, table_stats_objs(["c_int"])),
        # deletes
        "delete_table_column_statistics": Ok(True),
        "get_table_column_statistics_deleted": NO_SUCH,
        "delete_table_column_statistics_again": NO_SUCH,
        "delete_partition_column_statistics": Ok(True),
        "get_partition_column_statistics_deleted": NO_SUCH,
        "get_partitions_statistics_req_after_delete": OkWhere(
            lambda r: (
                r["partStats"]
                == {
                    PARTITION_NAMES[0]: [merged_p0_int, stats_obj("c_string", *p0["c_string"])],
                    PARTITION_NAMES[1]: [stats_obj("c_string", *p1["c_string"])],
                }
            ),
            "ds=2024-01-01 keeps c_int (merged) and c_string, ds=2024-01-02 only c_string",
        ),
        "get_table_statistics_req_after_delete": OkWhere(
            lambda r: r["tableStats"] == table_stats_objs(["c_int"]), "only c_int left"
        ),
        # clean-up
        "drop_table": Ok(None),
        "get_table_after_drop": NO_SUCH,
        "drop_database": Ok(None),
        "get_database_after_drop": NO_SUCH,
    }
    for col, _type in TABLE_COLUMNS:
        # Pre-Hive-4 clients write timestamp statistics as longStats (their IDL has no timestampStats) and can
        # only decode longStats back; the server must hand them back in that form.
        exp[f"get_table_column_statistics.{col}"] = column_statistics_like(
            n, [stats_obj(col, *TABLE_STATS[col])]
        )
    return exp


def client_expectations(client: str, names: Names) -> dict[str, Expectation]:
    """Expected outcome of the client-specific steps (their high-level APIs)."""
    n = names
    if client == "pymetastore":
        return {
            "pymetastore.list_databases": Ok(sorted(["default", n.db])),
            "pymetastore.get_database": OkWhere(
                lambda d: (
                    d["name"] == n.db
                    and d["location"].endswith(f"/{n.db}.db")
                    and d["owner_name"] == "interop"
                    and d["owner_type"] == "USER"
                    and d["comment"] == "interop scenario database"
                    and d["parameters"] == {"team": "stats"}
                ),
                "HDatabase as created",
            ),
            "pymetastore.list_tables": Ok([n.table]),
            "pymetastore.get_table": OkWhere(
                lambda t: (
                    [c["name"] for c in t["columns"]] == [c for c, _ in TABLE_COLUMNS]
                    and [c["type"] for c in t["columns"]][7] == "HDecimalType(precision=10, scale=2)"
                    and [c["type"] for c in t["columns"]][11] == "HVarcharType(length=10)"
                    and [c["type"] for c in t["columns"]][12] == "HCharType(length=5)"
                    and [c["name"] for c in t["partition_columns"]] == ["ds"]
                    and t["table_type"] == "MANAGED_TABLE"
                ),
                "HTable with every column type parsed",
            ),
            "pymetastore.list_columns": Ok([c for c, _ in TABLE_COLUMNS]),
            "pymetastore.list_partitions": Ok(PARTITION_NAMES),
            # pymetastore asserts Partition.catName is a string: a Hive 2.3 server (no catName) fails this.
            "pymetastore.get_partitions": OkWhere(
                lambda ps: (
                    [p["values"] for p in ps] == [[v] for v in PARTITION_VALUES]
                    and all(p["cat_name"] == "hive" for p in ps)
                ),
                "three HPartitions in catalog 'hive'",
            ),
            "pymetastore.get_partition": OkWhere(
                lambda p: (
                    p["values"] == [PARTITION_VALUES[1]]
                    and p["sd"]["location"].endswith(f"/{n.db}.db/{n.table}/ds={PARTITION_VALUES[1]}")
                ),
                "HPartition ds=2024-01-02",
            ),
            "pymetastore.get_table_stats": OkWhere(
                lambda rows: (
                    [r["columnName"] for r in rows] == [c for c, _ in TABLE_COLUMNS]
                    and all(r["stats"] is not None for r in rows)
                    and all(r["lastAnalyzed"] == LAST_ANALYZED for r in rows)
                    and next(r for r in rows if r["columnName"] == "c_timestamp")["stats"]["typeName"]
                    == "long"
                ),
                "14 ColumnStats, every one decoded (timestamp as long)",
            ),
            "pymetastore.get_table_stats_decimal": OkWhere(
                lambda rows: (
                    len(rows) == 1
                    and rows[0]["stats"]
                    == {
                        "numNulls": 6,
                        "typeName": "decimal",
                        "cardinality": 70,
                        "lowValue": "-123.45",
                        "highValue": "99999999.99",
                    }
                ),
                "c_decimal's statistics",
            ),
            # One column (c_string) has no statistics any more, and pymetastore reads column by column.
            "pymetastore.get_table_stats_after_delete": NO_SUCH,
        }
    if client == "hmsclient":
        return {
            "hmsclient.check_for_named_partition": Ok(True),
            "hmsclient.check_for_named_partition_missing": Ok(False),
            "hmsclient.parse_schema": Ok([f"{c}\t{t}" for c, t in TABLE_COLUMNS] + ["ds\tstring"]),
        }
    if client == "hive-metastore-client":
        return {
            "hmc.create_database_if_not_exists_again": Ok(None),
            "hmc.get_partition_keys": Ok([["ds", "string"]]),
            "hmc.get_partition_keys_names": Ok(["ds"]),
            # max_parts arrives as i32 (the library's patch); our server honours it, a strict-i16 server skips it.
            "hmc.get_partitions_max_2": OkWhere(
                lambda ps: len(ps) == 2, "two partitions (max_parts=2 honoured)"
            ),
            "hmc.get_partition_values_from_table": Ok([[v] for v in PARTITION_VALUES]),
            "hmc.create_external_table": Ok(None),
            "hmc.get_external_table_type": Ok(["EXTERNAL_TABLE", "TRUE"]),
            "hmc.add_partitions_if_not_exists": Ok(None),
            "hmc.add_partitions_if_not_exists_again": Ok(None),
            "hmc.external_partition_locations": Ok(
                [
                    "file:/tmp/interop-external/built_external/ds=a",
                    "file:/tmp/interop-external/built_external/ds=b",
                ]
            ),
            "hmc.bulk_drop_partitions": Ok(None),
            "hmc.bulk_drop_partitions_missing": Err(("NoSuchObjectException",)),
            "hmc.drop_external_table": Ok(None),
        }
    raise ValueError(f"no expectations for client {client!r}")


def check_steps(
    steps: list[dict[str, Any]], expectations: dict[str, Expectation], only: Callable[[str], bool]
) -> list[str]:
    """Every mismatch between recorded steps and expectations, for the steps `only` selects."""
    recorded = {s["step"]: s for s in steps}
    problems = []
    for name, expectation in expectations.items():
        if not only(name):
            continue
        if name not in recorded:
            problems.append(f"{name}: step was not recorded")
            continue
        msg = expectation.check(recorded[name])
        if msg:
            tb = recorded[name].get("traceback")
            problems.append(f"{name}: {msg}" + (f"\n{tb}" if tb else ""))
    for name in recorded:
        if only(name) and name not in expectations:
            problems.append(f"{name}: recorded but has no expectation")
    return problems
