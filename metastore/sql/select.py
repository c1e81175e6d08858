"""SELECT and EXPLAIN SELECT (issue 11): a planner over one ORC table that reads only what the indexes keep.

    SELECT * | cols | count(*) FROM t [WHERE predicate] [LIMIT n]
    EXPLAIN SELECT ...

The WHERE clause is the split filter's predicate tree (metastore.index.predicate). Partitions are pruned by the
predicate's partition columns; every file is cut into splits (byte ranges), the table's indexes keep the splits
that may match (metastore.index.filter, in this process), and only those are read through orcio, skipping the
stripes an index rules out and the row groups the ORC row index and bloom filters rule out; rows are then
filtered exactly. EXPLAIN prints, per index, the splits it considered and kept and the bytes the kept splits would
read with that index alone, then the same for all indexes together.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from metastore.index.bind import leaves
from metastore.index.errors import IndexBuildError, PredicateError
from metastore.index.planning import ReadPlan, plan_read
from metastore.index.predicate import to_sql
from metastore.index.select import TableReader, TableScan
from metastore.sql.analysis import human_bytes
from metastore.sql.errors import Position, SqlError
from metastore.sql.output import Result
from metastore.sql.session import Session
from metastore.sql.statements import Explain, Select
from metastore.sql.table_files import qualified, require_orc
from metastore.storage import StorageError

#: Hive's name of an unnamed result column (count(*))
COUNT_COLUMN = "_c0"


@dataclass
class Plan:
    read: ReadPlan
    output: list[str]
    scan: TableScan


def plan(ex: Session, st: Select) -> Plan:
    """The table, predicate, splits and what the indexes keep of them."""
    table = ex.table(st.table)
    require_orc(table, "SELECT", st.table.position)
    data_columns = [c.name.lower() for c in table.sd.cols]
    every = data_columns + [k.name.lower() for k in table.partition_keys]
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
        read = plan_read(ex.client, table, st.where, options=ex.options.storage)
    except PredicateError as exc:
        where = exc.node if isinstance(exc.node, Position) else getattr(exc.node, "where", None)
        raise SqlError(exc.message, where if isinstance(where, Position) else st.position) from None
    except StorageError as exc:
        raise SqlError(str(exc), st.table.position) from None
    scan = TableScan(read.columns, data_columns, read.bound, output, read.partition_values, read.partition_display)
    return Plan(read, output, scan)


def select(ex: Session, st: Select) -> Result:
    started = time.monotonic()
    p = plan(ex, st)
    read = p.read
    kept = read.kept
    reader = TableReader(p.scan, stripes=read.may_stripes(), options=ex.options.storage)
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
        f"{len(rows)} row(s) in {time.monotonic() - started:.2f} s; read {stats.splits} of {len(read.splits)} split(s), "
        f"{stats.stripes_read} stripe(s) ({stats.stripes_skipped} skipped by indexes), {stats.row_groups_read} row "
        f"group(s) ({stats.row_groups_skipped} skipped by ORC statistics and bloom filters)"
    )
    if read.result.warnings:
        message += "\n" + "\n".join(f"warning: {w}" for w in read.result.warnings)
    return Result(columns, rows, message=message)


def explain(ex: Session, st: Explain) -> Result:
    read = plan(ex, st.select).read
    kept = read.kept
    total_bytes = sum(s.length for s in read.splits)
    to_read = read.bytes_to_read()
    rows: list[list[object]] = [
        [c.name, c.kind.upper(), c.column, c.considered, c.kept, read.bytes_to_read_by(c.name, ex.options.storage)]
        for c in read.result.counts
    ]
    rows.append(["(all)", "", "", len(read.splits), len(kept), to_read])
    predicate = to_sql(st.select.where) if st.select.where is not None else "TRUE"
    columns_used = sorted({leaf.column for leaf in leaves(read.bound)})
    partitioned = bool(read.table.partition_keys)
    lines = [
        f"scan {qualified(read.table)} where {predicate}"
        + (f" (columns {', '.join(columns_used)})" if columns_used else ""),
        f"{len(read.files)} file(s) in {len(read.splits)} split(s)"
        + (f", {len(read.targets)} of {read.partitions_total} partition(s) after pruning" if partitioned else ""),
        f"splits kept: {len(kept)} of {len(read.splits)}; bytes to read: {to_read} ({human_bytes(to_read)}) of "
        f"{total_bytes} ({human_bytes(total_bytes)})",
    ]
    if not read.result.counts:
        lines.append("no index of the table answers this predicate: every split is read")
    lines.extend(f"warning: {w}" for w in read.result.warnings)
    return Result(["index", "type", "column", "splits_considered", "splits_kept", "bytes_to_read"], rows,
                  message="\n".join(lines))
