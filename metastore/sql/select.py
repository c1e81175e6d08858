"""SELECT and EXPLAIN SELECT (issue 11): a planner over one ORC table that reads only what the indexes keep.

    SELECT * | cols | count(*) FROM t [WHERE predicate] [LIMIT n]
    EXPLAIN SELECT ...

The WHERE clause is the split filter's predicate tree (metastore.index.predicate). Partitions are pruned by the
predicate's partition columns; every file is cut into splits (byte ranges), the table's indexes keep the splits
that may match (metastore.index.filter, in this process), and only those are read through orcio, skipping the
stripes an index rules out and the row groups the ORC row index and bloom filters rule out; rows are then
filtered exactly. EXPLAIN prints, per index, the splits it considered and kept, and the bytes left to read.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from metastore.catalog import Table
from metastore.index.bind import Bound, Truth, bind, leaves, literal_key, matches_one, restrict
from metastore.index.build import BuildTarget
from metastore.index.columns import ColumnType, Key
from metastore.index.errors import IndexBuildError, PredicateError
from metastore.index.filter import filter_splits, table_columns
from metastore.index.maintain import list_targets
from metastore.index.model import FilterResult, IndexState, Split
from metastore.index.predicate import Const, Value, ValueKind, to_sql
from metastore.index.select import DEFAULT_SPLIT_SIZE, TableReader, TableScan, file_splits
from metastore.partnames import parse_part_name
from metastore.sql.analysis import human_bytes
from metastore.sql.errors import Position, SqlError
from metastore.sql.output import Result
from metastore.sql.session import Session
from metastore.sql.statements import Explain, Select
from metastore.sql.table_files import qualified, require_orc
from metastore.storage import StorageError

#: Hive's name of an unnamed result column (count(*))
COUNT_COLUMN = "_c0"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


@dataclass
class Plan:
    table: Table
    bound: Bound
    output: list[str]
    scan: TableScan
    splits: list[Split]
    files: int
    partitions_total: int
    partitions_read: int
    result: FilterResult


def _bind(st: Select, columns: Mapping[str, ColumnType]) -> Bound:
    if st.where is None:
        return Truth(True)
    try:
        return bind(st.where, columns)
    except PredicateError as exc:
        where = exc.node if isinstance(exc.node, Position) else getattr(exc.node, "where", None)
        raise SqlError(exc.message, where if isinstance(where, Position) else st.position) from None


def _partition_keys(table: Table, name: str, columns: Mapping[str, ColumnType]) -> dict[str, Key | None]:
    """A partition's values as keys of its columns' types (None for the default partition, or a value that
    is not one of the type: no comparison holds for it)."""
    out: dict[str, Key | None] = {}
    for key, value in parse_part_name(name):
        ctype = columns.get(key.lower())
        if ctype is None or value == DEFAULT_PARTITION:
            out[key.lower()] = None
            continue
        try:
            out[key.lower()] = literal_key(Value(ValueKind.STRING, value), ctype, key)
        except PredicateError:
            out[key.lower()] = None
    return out


def plan(ex: Session, st: Select) -> Plan:
    """The table, predicate, splits and what the indexes keep of them."""
    table = ex.table(st.table)
    require_orc(table, "SELECT", st.table.position)
    columns = table_columns(table)
    bound = _bind(st, columns)
    data_columns = [c.name.lower() for c in table.sd.cols]
    partition_columns = [k.name.lower() for k in table.partition_keys]
    every = data_columns + partition_columns
    if st.count:
        output: list[str] = []
    elif st.columns is None:
        output = every
    else:
        output = []
        for name in st.columns:
            if name.lower not in every:
                raise SqlError(f"column '{name.lower}' does not exist in {qualified(table)}", name.position)
            output.append(name.lower)
    try:
        targets = list_targets(ex.client, table, None, ex.options.storage)
    except StorageError as exc:
        raise SqlError(str(exc), st.table.position) from None
    pruning = restrict(bound, partition_columns)
    partition_values: dict[str, dict[str, Key | None]] = {}
    partition_display: dict[str, dict[str, object]] = {}
    kept_targets: list[BuildTarget] = []
    for target in targets:
        if target.partition:
            keys = _partition_keys(table, target.partition, columns)
            if not matches_one(pruning, keys):
                continue
            shown: dict[str, object] = {
                k.lower(): (None if v == DEFAULT_PARTITION else v) for k, v in parse_part_name(target.partition)
            }
            for f in target.files:
                partition_values[f.path] = keys
                partition_display[f.path] = shown
        kept_targets.append(target)
    splits = [s for t in kept_targets for f in t.files for s in file_splits(f, DEFAULT_SPLIT_SIZE)]
    records = [r for r in ex.client.list_indexes(table.db_name, table.table_name) if r.state is IndexState.READY]
    expr = st.where if st.where is not None else Const(True)
    result = filter_splits(table, expr, splits, records, options=ex.options.storage) if splits else FilterResult((), ())
    scan = TableScan(columns, data_columns, bound, output, partition_values, partition_display)
    return Plan(table, bound, output, scan, splits, sum(len(t.files) for t in kept_targets),
                len(targets) if table.partition_keys else 0, len(kept_targets) if table.partition_keys else 0, result)


def _may_stripes(p: Plan) -> dict[str, frozenset[int]]:
    return {path: frozenset(s.offset for s, m in zip(spans, may, strict=True) if m)
            for path, (spans, may) in p.result.stripes.items()}


def _bytes_to_read(p: Plan, kept: list[Split]) -> int:
    """Bytes of the stripes the kept splits read (stripes an index rules out are skipped); a split of a file
    no index judged reads its whole range."""
    total = 0
    for split in kept:
        info = p.result.stripes.get(split.path)
        if info is None:
            total += split.length
            continue
        spans, may = info
        end = split.start + split.length
        total += sum(s.length for s, m in zip(spans, may, strict=True) if m and split.start <= s.offset < end)
    return total


def select(ex: Session, st: Select) -> Result:
    started = time.monotonic()
    p = plan(ex, st)
    kept = [p.splits[i] for i in p.result.kept]
    reader = TableReader(p.scan, stripes=_may_stripes(p), options=ex.options.storage)
    try:
        if st.count:
            rows: list[list[object]] = [[reader.count(kept)]]
            columns = [COUNT_COLUMN]
        else:
            rows = [list(r) for r in reader.read(kept, st.limit)]
            columns = p.output
    except IndexBuildError as exc:
        raise SqlError(str(exc), st.table.position) from None
    if st.count and st.limit == 0:
        rows = []
    stats = reader.stats
    message = (
        f"{len(rows)} row(s) in {time.monotonic() - started:.2f} s; read {stats.splits} of {len(p.splits)} split(s), "
        f"{stats.stripes_read} stripe(s) ({stats.stripes_skipped} skipped by indexes), {stats.row_groups_read} row "
        f"group(s) ({stats.row_groups_skipped} skipped by ORC statistics and bloom filters)"
    )
    if p.result.warnings:
        message += "\n" + "\n".join(f"warning: {w}" for w in p.result.warnings)
    return Result(columns, rows, message=message)


def explain(ex: Session, st: Explain) -> Result:
    p = plan(ex, st.select)
    kept = [p.splits[i] for i in p.result.kept]
    total_bytes = sum(s.length for s in p.splits)
    rows: list[list[object]] = []
    for count in p.result.counts:
        rows.append([count.name, count.kind.upper(), count.column, count.considered, count.kept])
    to_read = _bytes_to_read(p, kept)
    rows.append(["(all)", "", "", len(p.splits), len(kept)])
    predicate = to_sql(st.select.where) if st.select.where is not None else "TRUE"
    columns_used = sorted({leaf.column for leaf in leaves(p.bound)})
    lines = [
        f"scan {qualified(p.table)} where {predicate}"
        + (f" (columns {', '.join(columns_used)})" if columns_used else ""),
        f"{p.files} file(s) in {len(p.splits)} split(s)"
        + (f", {p.partitions_read} of {p.partitions_total} partition(s) after pruning" if p.table.partition_keys else ""),
        f"splits kept: {len(kept)} of {len(p.splits)}; bytes to read: {to_read} ({human_bytes(to_read)}) of "
        f"{total_bytes} ({human_bytes(total_bytes)})",
    ]
    if not p.result.counts:
        lines.append("no index of the table answers this predicate: every split is read")
    lines.extend(f"warning: {w}" for w in p.result.warnings)
    return Result(["index", "type", "column", "splits_considered", "splits_kept"], rows, message="\n".join(lines))
