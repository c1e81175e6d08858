"""DESCRIBE [EXTENDED|FORMATTED] table [PARTITION (...)] [column], laid out as Hive prints it.

`DESCRIBE FORMATTED t col` shows the column's statistics in Hive's columns: col_name, data_type, min, max,
num_nulls, distinct_count, avg_col_len, max_col_len, num_trues, num_falses, bitVector, comment. Without a
partition, a partitioned table shows its table-level statistics (written by ANALYZE, merged from the
partitions' sketches), or else the partitions aggregated as Hive's get_aggr_stats_for does.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from metastore.catalog import FieldSchema, Partition, Table
from metastore.errors import NoSuchObject
from metastore.sql.errors import SqlError
from metastore.sql.output import Result
from metastore.sql.partition_specs import full_values, partition_name
from metastore.sql.statements import Describe
from metastore.sql.table_files import qualified
from metastore.stats.kinds import spec_of
from metastore.stats.model import ColumnStatsEntry, StatsKind
from metastore.stats.ndv import sketch_format

if TYPE_CHECKING:
    from metastore.sql.session import Session

COLUMN_STATS_HEADER = [
    "col_name", "data_type", "min", "max", "num_nulls", "distinct_count", "avg_col_len", "max_col_len",
    "num_trues", "num_falses", "bitVector", "comment",
]
SCHEMA_HEADER = ["col_name", "data_type", "comment"]
_EPOCH_DATE = dt.date(1970, 1, 1)


def _date(value: Any) -> str:
    return (_EPOCH_DATE + dt.timedelta(days=int(value))).isoformat()


def _timestamp(value: Any) -> str:
    return dt.datetime.fromtimestamp(int(value), dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


#: Kinds whose low/high print other than as stored: days and epoch seconds as Hive shows them.
_SHOWN_AS = {StatsKind.DATE: _date, StatsKind.TIMESTAMP: _timestamp}


def column_stats_row(column: FieldSchema, entry: ColumnStatsEntry | None) -> list[Any]:
    """One row under COLUMN_STATS_HEADER; cells a statistics kind does not have are empty (which cells a kind
    has comes from the kinds table)."""
    row: list[Any] = [column.name, column.type] + [""] * 9 + [column.comment or ""]
    if entry is None:
        return row
    spec = spec_of(entry.stats)
    flat = spec.flatten(entry.stats)
    row[4] = flat.num_nulls
    if spec.values is not None:
        shown = _SHOWN_AS.get(spec.kind)
        for i, value in ((2, flat.low), (3, flat.high)):
            row[i] = "" if value is None else shown(value) if shown is not None else value
    if spec.has_ndv:
        row[5] = flat.num_dvs
    if spec.has_lengths:
        row[6], row[7] = flat.avg_col_len, flat.max_col_len
    if spec.has_booleans:
        row[8], row[9] = flat.num_trues, flat.num_falses
    fmt = sketch_format(flat.bit_vector)
    row[10] = {"hll": "HL", "fm": "FM"}.get(fmt or "", "")
    return row


def _schema_rows(table: Table) -> list[list[Any]]:
    rows: list[list[Any]] = [[c.name, c.type, c.comment or ""] for c in (*table.sd.cols, *table.partition_keys)]
    if table.partition_keys:
        rows.append(["", "", ""])
        rows.append(["# Partition Information", "", ""])
        rows.append(["# col_name", "data_type", "comment"])
        rows.extend([k.name, k.type, k.comment or ""] for k in table.partition_keys)
    return rows


def _when(seconds: int) -> str:
    if not seconds:
        return "UNKNOWN"
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")


def _parameter_rows(params: dict[str, str]) -> list[list[Any]]:
    return [["", k, v] for k, v in sorted(params.items())]


def _formatted_rows(table: Table, partition: Partition | None) -> list[list[Any]]:
    rows = [["# col_name", "data_type", "comment"], *_schema_rows(table), ["", "", ""]]
    if partition is not None:
        sd = partition.sd
        rows += [
            ["# Detailed Partition Information", "", ""],
            ["Partition Value:", f"[{', '.join(partition.values)}]", ""],
            ["Database:", table.db_name, ""],
            ["Table:", table.table_name, ""],
            ["CreateTime:", _when(partition.create_time), ""],
            ["LastAccessTime:", _when(partition.last_access_time), ""],
            ["Location:", sd.location or "", ""],
            ["Partition Parameters:", "", ""],
            *_parameter_rows(partition.parameters),
        ]
    else:
        sd = table.sd
        rows += [
            ["# Detailed Table Information", "", ""],
            ["Database:", table.db_name, ""],
            ["Owner:", table.owner or "", ""],
            ["CreateTime:", _when(table.create_time), ""],
            ["LastAccessTime:", _when(table.last_access_time), ""],
            ["Retention:", str(table.retention), ""],
            ["Location:", sd.location or "", ""],
            ["Table Type:", table.table_type, ""],
            ["Table Parameters:", "", ""],
            *_parameter_rows(table.parameters),
        ]
    rows += [
        ["", "", ""],
        ["# Storage Information", "", ""],
        ["SerDe Library:", sd.serde_info.serialization_lib or "", ""],
        ["InputFormat:", sd.input_format or "", ""],
        ["OutputFormat:", sd.output_format or "", ""],
        ["Compressed:", "Yes" if sd.compressed else "No", ""],
        ["Num Buckets:", str(sd.num_buckets), ""],
        ["Bucket Columns:", f"[{', '.join(sd.bucket_cols)}]", ""],
        ["Sort Columns:", f"[{', '.join(f'{o.col}:{o.order}' for o in sd.sort_cols)}]", ""],
    ]
    if sd.serde_info.parameters:
        rows.append(["Storage Desc Params:", "", ""])
        rows.extend(_parameter_rows(sd.serde_info.parameters))
    return rows


def _extended_row(table: Table, partition: Partition | None) -> list[Any]:
    if partition is not None:
        text = (
            f"Partition(values:{partition.values}, dbName:{table.db_name}, tableName:{table.table_name}, "
            f"location:{partition.sd.location}, parameters:{dict(sorted(partition.parameters.items()))})"
        )
        return ["Detailed Partition Information", text, ""]
    text = (
        f"Table(tableName:{table.table_name}, dbName:{table.db_name}, owner:{table.owner}, "
        f"createTime:{table.create_time}, location:{table.sd.location}, "
        f"inputFormat:{table.sd.input_format}, partitionKeys:{[k.name for k in table.partition_keys]}, "
        f"parameters:{dict(sorted(table.parameters.items()))}, tableType:{table.table_type})"
    )
    return ["Detailed Table Information", text, ""]


def _column_entry(ex: Session, table: Table, partition: Partition | None, column: FieldSchema) -> ColumnStatsEntry | None:
    client = ex.client
    if partition is not None:
        name = partition_name(table, partition.values)
        found = client.partition_statistics(table.db_name, table.table_name, [name], [column.name])
        entries = found.get(name, [])
        return entries[0] if entries else None
    entries = client.table_statistics(table.db_name, table.table_name, [column.name])
    if entries:
        return entries[0]
    if table.partition_keys:
        names = client.list_partition_names(table.db_name, table.table_name)
        if names:
            result = client.aggregate_statistics(table.db_name, table.table_name, names, [column.name])
            if result.entries:
                return result.entries[0]
    return None


def describe(ex: Session, st: Describe) -> Result:
    table = ex.table(st.table)
    partition = None
    if st.spec is not None:
        values = full_values(table, st.spec, "DESCRIBE ... PARTITION")
        try:
            partition = ex.client.get_partition(table.db_name, table.table_name, values)
        except NoSuchObject:
            raise SqlError(
                f"partition {partition_name(table, values)} of {qualified(table)} does not exist", st.spec.position
            ) from None
    if st.column is not None:
        column = table.column(st.column.value)
        if column is None:
            raise SqlError(f"column '{st.column.value}' does not exist in {qualified(table)}", st.column.position)
        if st.detail is None:
            return Result(SCHEMA_HEADER, [[column.name, column.type, column.comment or ""]])
        is_partition_key = any(k.name.lower() == column.name.lower() for k in table.partition_keys)
        entry = None if is_partition_key else _column_entry(ex, table, partition, column)
        return Result(COLUMN_STATS_HEADER, [column_stats_row(column, entry)])
    if st.detail == "formatted":
        return Result(SCHEMA_HEADER, _formatted_rows(table, partition))
    rows = _schema_rows(table)
    if st.detail == "extended":
        rows.append(["", "", ""])
        rows.append(_extended_row(table, partition))
    return Result(SCHEMA_HEADER, rows)
