"""CREATE INDEX, SHOW INDEX, UPDATE INDEX and DROP INDEX (issue 11): openLooKeng's heuristic-index statements.

The shell builds index files next to the data (in its process, or on Spark when the Spark engine is set), writes
them under the directory the metastore hands out and records them through the client, so the statements work
embedded (`--db`) and against a server (`--connect thrift://...`, through the `metastore_*` extension calls).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence

from metastore.catalog import Table
from metastore.errors import AlreadyExists, InvalidObject, InvalidOperation, MetastoreError, NoSuchObject
from metastore.index import predicate as pred
from metastore.index.build import DEFAULT_FPP, BuildTarget
from metastore.index.columns import INDEXABLE_TYPES, column_type
from metastore.index.errors import IndexBuildError, UnsupportedColumn
from metastore.index.maintain import (
    BuildOutcome,
    IndexStatementError,
    default_level,
    delete_remote_index,
    health_of,
    list_targets,
    partitions_of_where,
    run_build,
)
from metastore.index.model import DataFile, IndexKind, IndexLevel, IndexPart, IndexRecord
from metastore.sql.analysis import FileProgress, human_bytes
from metastore.sql.errors import Position, SqlError
from metastore.sql.output import Result
from metastore.sql.session import Session
from metastore.sql.statements import CreateIndex, DropIndex, Name, ShowIndex, Statement, UpdateIndex
from metastore.sql.table_files import qualified, require_orc
from metastore.storage import StorageError

SHOW_COLUMNS = ["index_name", "table", "column", "index_type", "level", "partitions", "size", "created", "status"]
LEVELS = tuple(level.value for level in IndexLevel)


def _where_position(node: object, fallback: Position) -> Position:
    where = node if isinstance(node, Position) else getattr(node, "where", None)
    return where if isinstance(where, Position) else fallback


def _partitions(ex: Session, table: Table, where: pred.Expr | None, st: Statement) -> list[str] | None:
    if where is None:
        return None
    try:
        return partitions_of_where(ex.client, table, where)
    except IndexStatementError as exc:
        raise SqlError(exc.message, _where_position(exc.node, st.position)) from None


def find_index(ex: Session, name: Name) -> IndexRecord | None:
    """The index of that name (index names are global, as openLooKeng's), or None."""
    wanted = name.lower
    return next((r for r in ex.client.list_indexes() if r.name == wanted), None)


def _require_index(ex: Session, name: Name) -> IndexRecord:
    record = find_index(ex, name)
    if record is None:
        raise SqlError(f"index {name.lower} does not exist", name.position)
    return record


def _progress(ex: Session, total: int, what: str) -> FileProgress:
    return FileProgress(ex.options.progress, ex.options.progress_stream, total, what)


def _build(
    ex: Session, record: IndexRecord, table: Table, targets: Sequence[BuildTarget], st: Statement, *,
    previous: Sequence[IndexPart] = (), untouched: Sequence[IndexPart] = (), partitions: tuple[str, ...] | None = None,
) -> BuildOutcome:
    """Build through the configured engine with a progress bar over the files to scan."""
    old = {f.identity for p in previous for f in p.files}
    to_scan = sum(1 for t in targets for f in t.files if f.identity not in old)
    progress = _progress(ex, to_scan, f"index {record.name}")
    done = [0]

    def on_file(_: DataFile) -> None:
        done[0] += 1
        progress.advance_to(done[0])

    scanner = None
    if _use_spark(ex, targets):
        from metastore.spark.indexes import spark_scanner

        scanner = spark_scanner(ex.spark_session(), record, table, ex.options.storage)
    try:
        return run_build(
            ex.client, record, table, targets, previous=previous, untouched=untouched,
            partitions=partitions, on_file=on_file, scanner=scanner, options=ex.options.storage,
        )
    except (IndexBuildError, StorageError) as exc:
        raise SqlError(str(exc), st.position) from None
    except MetastoreError:
        raise
    except Exception as exc:
        if scanner is None:
            raise
        # Spark's errors (py4j, Connect) become one shell error line
        raise SqlError(f"Spark failed: {' '.join(str(exc).split())[:500]}", st.position) from None
    finally:
        progress.close()


def _use_spark(ex: Session, targets: Sequence[BuildTarget]) -> bool:
    """The ANALYZE engine setting decides (SET metastore.analyze.engine = spark | local | auto)."""
    options = ex.options
    if options.analyze_engine == "spark":
        if not options.spark_master:
            raise SqlError("SET metastore.analyze.engine = spark needs a Spark master: start the shell with --spark")
        return True
    if options.analyze_engine == "auto" and options.spark_master:
        return sum(f.size for t in targets for f in t.files) > options.spark_threshold
    return False


def _summary(verb: str, outcome: BuildOutcome, seconds: float) -> str:
    r = outcome.record
    report = outcome.report
    return (
        f"{verb} index {r.name} ({r.kind.value}, {r.level.value} level) on {r.db_name}.{r.table_name} ({r.column}): "
        f"{report.files_scanned} of {outcome.files_total} data file(s) scanned ({human_bytes(report.bytes_scanned)}), "
        f"{report.parts_written} index file(s) written, {report.parts_kept} kept, index size {human_bytes(r.size)}, "
        f"{seconds:.1f} s"
    )


# ---------------------------------------------------------------------------------------------- CREATE INDEX


def _options(st: CreateIndex, kind: IndexKind, table: Table) -> tuple[IndexLevel, dict[str, str]]:
    properties: dict[str, str] = {}
    level = default_level(kind, table)
    for key, value in st.properties.items():
        where = st.property_positions.get(key, st.position)
        if key == "level":
            if value.upper() not in LEVELS:
                raise SqlError(f"level must be one of {', '.join(LEVELS)}, got '{value}'", where)
            level = IndexLevel(value.upper())
            if level is IndexLevel.PARTITION and not table.partition_keys:
                raise SqlError(f"{qualified(table)} is not partitioned; use level TABLE or STRIPE", where)
            properties["level"] = level.value
        elif key == "bloom.fpp":
            try:
                fpp = float(value)
            except ValueError:
                fpp = -1.0
            if not 0.0 < fpp < 1.0:
                raise SqlError(f"bloom.fpp must be a number between 0 and 1, got '{value}'", where)
            if kind is not IndexKind.BLOOM:
                raise SqlError(f"bloom.fpp applies to BLOOM indexes, not {kind.value.upper()}", where)
            properties["bloom.fpp"] = repr(fpp)
        else:
            raise SqlError(f"unknown index property '{key}' (known: level, bloom.fpp)", where)
    if kind is IndexKind.BLOOM:
        properties.setdefault("bloom.fpp", repr(DEFAULT_FPP))
    return level, properties


def create_index(ex: Session, st: CreateIndex) -> Result:
    started = time.monotonic()
    kind = IndexKind(st.kind.lower)
    table = ex.table(st.table)
    require_orc(table, "CREATE INDEX", st.table.position)
    column = st.column.lower
    if any(k.name.lower() == column for k in table.partition_keys):
        raise SqlError(f"column '{column}' is a partition column of {qualified(table)}; choose partitions with "
                       "WHERE and index a data column", st.column.position)
    found = next((c for c in table.sd.cols if c.name.lower() == column), None)
    if found is None:
        raise SqlError(f"column '{column}' does not exist in {qualified(table)}", st.column.position)
    try:
        ctype = column_type(found.type, column)
    except UnsupportedColumn:
        ctype = None
    if ctype is None or not ctype.indexable:
        raise SqlError(f"column '{column}' is {found.type}; indexes support {', '.join(INDEXABLE_TYPES)}",
                       st.column.position)
    level, properties = _options(st, kind, table)
    partitions = _partitions(ex, table, st.where, st)
    if partitions is not None and level is IndexLevel.TABLE:
        raise SqlError("a TABLE-level index covers the whole table; leave out WHERE or choose level PARTITION or "
                       "STRIPE", _where_position(st.where, st.position))
    if find_index(ex, st.name) is not None:
        if st.if_not_exists:
            return Result(message=f"index {st.name.lower} exists already")
        raise SqlError(f"index {st.name.lower} exists already", st.name.position)
    try:
        record = ex.client.create_index(IndexRecord(
            name=st.name.value, db_name=table.db_name, table_name=table.table_name, column=column,
            column_type=ctype.hive, kind=kind, level=level, properties=properties,
            partitions=None if partitions is None else tuple(partitions), owner=ex.options.user,
        ))
    except AlreadyExists as exc:
        if st.if_not_exists:
            return Result(message=str(exc))
        raise SqlError(str(exc), st.name.position) from None
    except (InvalidObject, NoSuchObject) as exc:
        raise SqlError(str(exc), st.position) from None
    try:
        targets = list_targets(ex.client, table, partitions, ex.options.storage)
        outcome = _build(ex, record, table, targets, st, partitions=record.partitions)
    except BaseException:
        # nothing half-made stays behind: the record (CREATING) and the files written so far go
        try:
            ex.client.drop_index(record.db_name, record.table_name, record.name)
            delete_remote_index(record, ex.options.storage)
        except (MetastoreError, StorageError):
            pass
        raise
    return Result(message=_summary("created", outcome, time.monotonic() - started))


# ---------------------------------------------------------------------------------------------- SHOW INDEX


def _created(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S") if seconds else ""


def _partitions_text(record: IndexRecord, partitioned: bool) -> str:
    if record.partitions is not None:
        return ", ".join(record.partitions)
    return "all" if partitioned else ""


def show_index(ex: Session, st: ShowIndex) -> Result:
    records = ex.client.list_indexes()
    if st.name is not None:
        records = [r for r in records if r.name == st.name.lower]
        if not records:
            raise SqlError(f"index {st.name.lower} does not exist", st.name.position)
    rows = []
    notes: list[str] = []
    for r in records:
        # one index named: every block of its files is read and checked; a listing opens each file only
        health = health_of(ex.client, r, full=st.name is not None, options=ex.options.storage)
        partitioned = bool(r.partitions) or any("=" in p.partition for p in r.parts)
        if not partitioned and r.table_exists:
            try:
                partitioned = bool(ex.client.get_table(r.db_name, r.table_name).partition_keys)
            except NoSuchObject:
                pass
        rows.append([
            r.name, f"{r.db_name}.{r.table_name}", r.column, r.kind.value.upper(), r.level.value,
            _partitions_text(r, partitioned), human_bytes(r.size), _created(r.created), health.status,
        ])
        notes.extend(f"index {r.name}: {problem}" for problem in health.problems)
    return Result(SHOW_COLUMNS, rows, message="\n".join(notes) or None)


# ---------------------------------------------------------------------------------------------- UPDATE INDEX


def update_index(ex: Session, st: UpdateIndex) -> Result:
    started = time.monotonic()
    record = _require_index(ex, st.name)
    try:
        table = ex.client.get_table(record.db_name, record.table_name)
    except NoSuchObject:
        raise SqlError(f"the table of index {record.name} ({record.db_name}.{record.table_name}) was dropped; "
                       "DROP INDEX it", st.name.position) from None
    now = next((c for c in table.sd.cols if c.name.lower() == record.column), None)
    if now is None or column_type(now.type, record.column).hive != record.column_type:
        raise SqlError(f"column {record.column} of {qualified(table)} is now {now.type if now else 'gone'}, the "
                       f"index was built on {record.column_type}; DROP INDEX {record.name} and create it again",
                       st.name.position)
    chosen = _partitions(ex, table, st.where, st)
    coverage = record.partitions
    if chosen is None:
        rebuild = None if coverage is None else list(coverage)
    else:
        if record.level is IndexLevel.TABLE:
            raise SqlError(f"index {record.name} is a TABLE-level index; it is updated as a whole (leave out WHERE)",
                           _where_position(st.where, st.position))
        rebuild = chosen
        if coverage is not None:
            coverage = tuple(sorted(set(coverage) | set(chosen)))
    if record.level is IndexLevel.TABLE or rebuild is None:
        previous, untouched = list(record.parts), []
    else:
        wanted = set(rebuild)
        previous = [p for p in record.parts if p.partition in wanted]
        untouched = [p for p in record.parts if p.partition not in wanted]
    targets = list_targets(ex.client, table, rebuild, ex.options.storage)
    outcome = _build(ex, record, table, targets, st, previous=previous, untouched=untouched, partitions=coverage)
    return Result(message=_summary("updated", outcome, time.monotonic() - started))


# ---------------------------------------------------------------------------------------------- DROP INDEX


def drop_index(ex: Session, st: DropIndex) -> Result:
    record = find_index(ex, st.name)
    if record is None:
        if st.if_exists:
            return Result(message=f"index {st.name.lower} does not exist")
        raise SqlError(f"index {st.name.lower} does not exist", st.name.position)
    partitions = None
    if st.where is not None:
        if not record.table_exists:
            raise SqlError(f"the table of index {record.name} was dropped; DROP INDEX {record.name} drops it whole",
                           _where_position(st.where, st.position))
        table = ex.client.get_table(record.db_name, record.table_name)
        partitions = _partitions(ex, table, st.where, st)
    try:
        ex.client.drop_index(record.db_name, record.table_name, record.name, partitions)
    except InvalidOperation as exc:
        raise SqlError(str(exc), _where_position(st.where, st.position)) from None
    except NoSuchObject:
        if st.if_exists:
            return Result(message=f"index {st.name.lower} does not exist")
        raise SqlError(f"index {st.name.lower} does not exist", st.name.position) from None
    if partitions is None:
        delete_remote_index(record, ex.options.storage)
    else:
        from metastore.index.maintain import delete_remote_parts

        gone = [p.location for p in record.parts if p.partition in set(partitions)]
        delete_remote_parts(record, gone, [], ex.options.storage)
    return Result(message="OK")
