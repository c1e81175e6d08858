"""Creating, updating and checking indexes through a metastore client: what the shell's CREATE / UPDATE / SHOW
INDEX statements and the Spark pipeline share.

- :func:`partitions_of_where` turns an index's ``WHERE pcol = v | pcol IN (...)`` into partition names;
- :func:`list_targets` lists the data files of the table or of chosen partitions (local or object storage);
- :func:`run_build` builds the parts (in this process, or with a ``scan`` given by the Spark pipeline) and
  records them (``finish_index_build``); a failed first build drops the half-made index again;
- :func:`health_of` lists the files an index covers now and checks its index files (SHOW INDEX's status).

Index files are written under the directory the metastore hands out (``record.location``), which the shell
and the server share (a shared filesystem or an object store).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation

from metastore import storage
from metastore.catalog import Table
from metastore.client import MetastoreClient
from metastore.errors import InvalidInput, MetastoreError, NoSuchObject
from metastore.index import predicate as pred
from metastore.index.build import BuildReport, BuildTarget, build_parts
from metastore.index.columns import column_type
from metastore.index.coverage import FileValues
from metastore.index.filter import normal_path
from metastore.index.model import DataFile, IndexKind, IndexLevel, IndexPart, IndexRecord
from metastore.index.status import IndexHealth, covered_partitions, index_health
from metastore.partnames import make_part_name, parse_part_name
from metastore.storage import StorageOptions


class IndexStatementError(InvalidInput):
    """A statement about an index that cannot be done; ``node`` is the predicate node at fault (if any)."""

    def __init__(self, message: str, node: object | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node


def default_level(kind: IndexKind, table: Table) -> IndexLevel:
    """openLooKeng's defaults: BTREE per partition (per table when unpartitioned), BLOOM and MINMAX per stripe."""
    if kind is IndexKind.BTREE:
        return IndexLevel.PARTITION if table.partition_keys else IndexLevel.TABLE
    return IndexLevel.STRIPE


def column_position(table: Table, column: str) -> int | None:
    """The column's position among the table's data columns (for Hive's positional `_colN` files)."""
    names = [c.name.lower() for c in table.sd.cols]
    return names.index(column) if column in names else None


# ---------------------------------------------------------------------------------------------- partitions


def _same_value(partition_value: str, literal: pred.Value, key_type: str) -> bool:
    if literal.kind is pred.ValueKind.NULL or literal.text is None:
        return False
    if key_type.split("(", maxsplit=1)[0] in ("tinyint", "smallint", "int", "bigint", "decimal", "float", "double"):
        try:
            return Decimal(partition_value) == Decimal(literal.text)
        except InvalidOperation:
            return False
    return partition_value == literal.text


def partitions_of_where(client: MetastoreClient, table: Table, where: pred.Expr) -> list[str]:
    """The names of the partitions ``WHERE pcol = v | pcol IN (v, ...)`` selects (one partition column);
    IndexStatementError for any other form, a column that is not a partition column, or no match."""
    where_text = pred.to_sql(where)
    if not table.partition_keys:
        raise IndexStatementError(f"{table.db_name}.{table.table_name} is not partitioned; an index WHERE names "
                                  "partitions", where)
    values: tuple[pred.Value, ...]
    if isinstance(where, pred.Compare) and where.op == "=":
        column, values = where.column, (where.value,)
    elif isinstance(where, pred.In):
        column, values = where.column, where.values
    else:
        raise IndexStatementError(f"an index WHERE is `pcol = value` or `pcol IN (values)`, got {where_text}", where)
    keys = {k.name.lower(): k for k in table.partition_keys}
    if column not in keys:
        raise IndexStatementError(
            f"column '{column}' is not a partition column of {table.db_name}.{table.table_name} (partition columns: "
            f"{', '.join(keys)})", where)
    names = client.list_partition_names(table.db_name, table.table_name)
    chosen = []
    for name in names:
        value = dict(parse_part_name(name)).get(column)
        if value is not None and any(_same_value(value, v, keys[column].type) for v in values):
            chosen.append(name)
    if not chosen:
        raise IndexStatementError(f"no partition of {table.db_name}.{table.table_name} matches {where_text}", where)
    return chosen


# ---------------------------------------------------------------------------------------------- files


def data_file_of(ref: storage.FileRef) -> DataFile:
    """A listed file as index records name it (qualified: `file:/x`, `s3://b/k`)."""
    return DataFile(normal_path(ref.url), ref.size, ref.mtime_ns)


def list_targets(
    client: MetastoreClient, table: Table, partitions: Sequence[str] | None, options: StorageOptions | None = None,
) -> list[BuildTarget]:
    """The data files of the table ('' target) or of the named partitions (every partition when None), listed
    now. A partition without a location has no files."""
    if not table.partition_keys:
        location = table.sd.location
        files = storage.list_files(location, options) if location else []
        return [BuildTarget("", tuple(data_file_of(f) for f in files))]
    keys = [k.name for k in table.partition_keys]
    if partitions is None:
        found = client.list_partitions(table.db_name, table.table_name)
    else:
        found = client.get_partitions_by_names(table.db_name, table.table_name, list(partitions)) if partitions else []
    targets = []
    for p in found:
        location = p.sd.location
        files = storage.list_files(location, options) if location else []
        targets.append(BuildTarget(make_part_name(keys, p.values), tuple(data_file_of(f) for f in files)))
    targets.sort(key=lambda t: t.partition)
    return targets


# ---------------------------------------------------------------------------------------------- building

#: scans data files, yielding each file's values in any order (the local scan, or Spark's executors)
Scanner = Callable[[Sequence[DataFile]], Iterable[FileValues]]


@dataclass
class BuildOutcome:
    record: IndexRecord
    report: BuildReport
    files_total: int


def run_build(
    client: MetastoreClient,
    record: IndexRecord,
    table: Table,
    targets: Sequence[BuildTarget],
    *,
    previous: Sequence[IndexPart] = (),
    untouched: Sequence[IndexPart] = (),
    partitions: tuple[str, ...] | None = None,
    on_file: Callable[[DataFile], None] | None = None,
    scanner: Scanner | None = None,
    options: StorageOptions | None = None,
) -> BuildOutcome:
    """Build (or rebuild) the parts of ``record`` over ``targets``, reusing ``previous`` parts whose files did not
    change, keep ``untouched`` parts as they are, and record the result (the index becomes READY).
    ``partitions``: the partitions the index covers afterwards (None: all)."""
    report = build_parts(
        record, targets, column_position=column_position(table, record.column), previous=previous, on_file=on_file,
        scanner=scanner, options=options,
    )
    parts = [*untouched, *report.parts]
    done = client.finish_index_build(
        record.db_name, record.table_name, record.name, parts, built=int(time.time()), partitions=partitions,
    )
    delete_remote_parts(record, [p.location for p in (*previous, *untouched)], parts, options)
    return BuildOutcome(done, report, sum(len(t.files) for t in targets))


def delete_remote_parts(
    record: IndexRecord, old: Sequence[str], parts: Sequence[IndexPart], options: StorageOptions | None,
) -> None:
    """The metastore server deletes local index files it no longer records; files on object stores (which the
    server never reaches) are deleted here, by the client that wrote them."""
    if storage.is_local(record.location):
        return
    kept = {p.location for p in parts}
    for location in old:
        if location not in kept and location.startswith(record.location.rstrip("/") + "/"):
            try:
                storage.delete(location, options)
            except storage.StorageError:
                pass  # an orphaned index file costs space only; nothing reads an unrecorded part


def delete_remote_index(record: IndexRecord, options: StorageOptions | None) -> None:
    """Delete an index's directory on an object store after DROP INDEX (local ones the server deletes)."""
    if storage.is_local(record.location):
        return
    try:
        storage.delete(record.location, options)
    except storage.StorageError:
        pass


# ---------------------------------------------------------------------------------------------- health


def current_files(
    client: MetastoreClient, record: IndexRecord, options: StorageOptions | None = None,
) -> Mapping[str, Sequence[DataFile]] | None:
    """The data files now in what the index covers, per partition ('' unpartitioned); None when the table is
    gone."""
    if not record.table_exists:
        return None
    try:
        table = client.get_table(record.db_name, record.table_name)
    except NoSuchObject:
        return None
    if not table.partition_keys:
        return {t.partition: t.files for t in list_targets(client, table, None, options)}
    names = client.list_partition_names(table.db_name, table.table_name)
    covered = covered_partitions(record, names)
    return {t.partition: t.files for t in list_targets(client, table, covered, options)}


def part_checker(record: IndexRecord, *, full: bool, options: StorageOptions | None = None) -> Callable[[IndexPart], None]:
    """A function that opens a part file (checking size, trailer, description and the blocks its reader loads)
    and with ``full`` reads and checks every block; it raises naming the file."""
    from metastore.index.parts import open_part

    ctype = column_type(record.column_type, record.column)

    def check(part: IndexPart) -> None:
        reader = open_part(part.location, part.size, kind=record.kind.value, column=record.column, ctype=ctype,
                           options=options)
        if full:
            reader.verify()

    return check


def health_of(
    client: MetastoreClient, record: IndexRecord, *, full: bool, options: StorageOptions | None = None,
) -> IndexHealth:
    """SHOW INDEX's status of an index (see metastore.index.status)."""
    try:
        current = current_files(client, record, options)
    except (MetastoreError, storage.StorageError) as exc:
        return IndexHealth("Unknown", (f"cannot list the table's files: {exc}",))
    try:
        check = part_checker(record, full=full, options=options)
    except MetastoreError as exc:
        return IndexHealth("Corrupt", (str(exc),))
    return index_health(replace(record), current, check)
