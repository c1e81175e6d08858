"""INSERT INTO/OVERWRITE ... VALUES and LOAD DATA [LOCAL] INPATH: rows written as new ORC files by orcio.

Each statement writes one ORC file per target (the table, or each partition it touches) with the table's
`orc.*` TBLPROPERTIES, plus the per-column NDV sketches in the file's user metadata, so a later ANALYZE needs
no scan of it. Missing partitions are created; OVERWRITE replaces the target's data files only after the new
file is complete. Basic statistics in the target's parameters follow the change (row counts stay exact when
they were), and its column statistics are marked stale, as Hive does.

CSV input (LOAD DATA): comma-separated, RFC 4180 quoting, UTF-8; `\\N` is NULL, and so is an empty field of a
non-string column; a first row naming the table's columns is a header and skipped. ORC input files are copied
as they are.
"""

from __future__ import annotations

import csv
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metastore import ORC_SOFTWARE_VERSION, storage
from metastore.catalog import FieldSchema, Partition, Table
from metastore.errors import InvalidInput, MetastoreError, NoSuchObject
from metastore.orcio import OrcError, OrcWriter, TypeDescription, WriterOptions
from metastore.sql.basic_stats import after_data_change
from metastore.sql.errors import Position, SqlError
from metastore.sql.hive_types import HiveType, HiveTypeError, parse_hive_type
from metastore.sql.output import Result
from metastore.sql.partition_specs import partition_name, resolve_spec
from metastore.sql.statements import InsertValues, Literal, LiteralKind, LoadData, PartitionSpec
from metastore.sql.table_files import data_location, list_data_files, qualified, require_orc
from metastore.sql.values import ConversionError, column_array, from_literal, from_text, partition_value_text

if TYPE_CHECKING:
    from metastore.sql.session import Session

CSV_NULL = "\\N"
_BATCH_ROWS = 65536


# ---------------------------------------------------------------------------------------------- ORC options


def orc_options(params: Mapping[str, str]) -> dict[str, str]:
    """The table's `orc.*` parameters the writer knows (Hive tables may carry others; those are ignored)."""
    return {k: v for k, v in params.items() if k in WriterOptions.KNOWN}


def check_orc_properties(params: Mapping[str, str], columns: Sequence[FieldSchema], position: Position) -> None:
    """Refuse `orc.*` properties the writer would reject (bad values, bloom filters on unknown columns)."""
    options = orc_options(params)
    try:
        WriterOptions.parse(options)
        bloom = options.get("orc.bloom.filter.columns", "").strip()
        if bloom and bloom != "*":
            names = {c.name.lower() for c in columns}
            for name in (n.strip() for n in bloom.split(",")):
                if name and name.lower() not in names:
                    raise OrcError(f"orc.bloom.filter.columns names '{name}', which is not a column of the table")
    except OrcError as exc:
        raise SqlError(f"TBLPROPERTIES: {exc}", position) from None


# ---------------------------------------------------------------------------------------------- rows to targets


@dataclass
class _Columns:
    """Rows of one target, column by column."""

    values: list[list[Any]]
    rows: int = 0


@dataclass
class _RowGrouper:
    """Rows grouped by their partition values (one group, key (), for an unpartitioned table)."""

    data_columns: int
    groups: dict[tuple[str, ...], _Columns] = field(default_factory=dict)

    def add(self, key: tuple[str, ...], row: Sequence[Any]) -> None:
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = _Columns([[] for _ in range(self.data_columns)])
        for column, value in zip(group.values, row, strict=True):
            column.append(value)
        group.rows += 1


@dataclass(frozen=True)
class _Layout:
    """How the values of an input row map to the table: data columns and partition values."""

    table: Table
    data_types: list[HiveType]
    #: For each input value: index of the data column it fills, or -(1 + index) of a dynamic partition key.
    targets: list[int]
    static_values: list[str | None]  # per partition key; None = dynamic (taken from the row)
    key_types: list[HiveType]

    @property
    def width(self) -> int:
        return len(self.targets)

    def describe_input(self) -> str:
        names = []
        for t in self.targets:
            names.append(self.table.sd.cols[t].name if t >= 0 else self.table.partition_keys[-1 - t].name)
        return ", ".join(names)


def _types(columns: Sequence[FieldSchema], table: Table, position: Position) -> list[HiveType]:
    out = []
    for c in columns:
        try:
            t = parse_hive_type(c.type)
        except HiveTypeError as exc:
            raise SqlError(f"column '{c.name}' of {qualified(table)}: {exc}", position) from None
        out.append(t)
    return out


def _layout(table: Table, spec: PartitionSpec | None, column_names: Sequence[Any] | None, position: Position,
            what: str) -> _Layout:
    data_types = _types(table.sd.cols, table, position)
    key_types = _types(table.partition_keys, table, position)
    for col, t in zip(table.sd.cols, data_types, strict=True):
        if not t.is_primitive:
            raise SqlError(
                f"{what} cannot write {qualified(table)}: column '{col.name}' is {t}; only primitive types are "
                "supported",
                position,
            )
    if table.partition_keys:
        static: list[str | None] = (
            resolve_spec(table, spec, full=False, what=what) if spec is not None else [None] * len(key_types)
        )
        first_dynamic = next((i for i, v in enumerate(static) if v is None), len(static))
        if any(v is not None for v in static[first_dynamic:]):
            raise SqlError("a static partition value cannot follow a dynamic one (Hive's rule)", spec.position if spec else position)
    else:
        if spec is not None:
            raise SqlError(f"{qualified(table)} is not partitioned; {what} takes no PARTITION", spec.position)
        static = []
    dynamic_keys = [i for i, v in enumerate(static) if v is None]
    if column_names is None:
        targets = list(range(len(table.sd.cols))) + [-1 - i for i in dynamic_keys]
    else:
        by_name = {c.name.lower(): i for i, c in enumerate(table.sd.cols)}
        keys = {k.name.lower(): i for i, k in enumerate(table.partition_keys)}
        targets = []
        for name in column_names:
            if name.lower in by_name:
                targets.append(by_name[name.lower])
            elif name.lower in keys and keys[name.lower] in dynamic_keys:
                targets.append(-1 - keys[name.lower])
            else:
                raise SqlError(f"'{name.value}' is not a column of {qualified(table)} that INSERT can fill",
                               name.position)
            if targets.count(targets[-1]) > 1:
                raise SqlError(f"column '{name.value}' is listed twice", name.position)
        missing_keys = [table.partition_keys[i].name for i in dynamic_keys if -1 - i not in targets]
        if missing_keys:
            raise SqlError(
                f"the column list must include the dynamic partition column(s) {', '.join(missing_keys)}", position
            )
    return _Layout(table, data_types, targets, static, key_types)


def _place(layout: _Layout, values: Sequence[Any], key_texts: dict[int, str]) -> tuple[tuple[str, ...], list[Any]]:
    """The (partition values, data row) of converted input values; data columns not given are NULL."""
    row: list[Any] = [None] * len(layout.data_types)
    for target, value in zip(layout.targets, values, strict=True):
        if target >= 0:
            row[target] = value
    key = tuple(v if v is not None else key_texts[i] for i, v in enumerate(layout.static_values))
    return key, row


# ---------------------------------------------------------------------------------------------- writing


def _sketch_user_metadata(table: Table, batch: Sequence[Any]) -> dict[str, bytes]:
    """The written columns' NDV sketches (and longest values, histograms) for the file's user metadata, so
    ANALYZE takes them from the footer instead of scanning the file."""
    from metastore.stats.orc_sketch_metadata import SketchMetadataBuilder

    builder = SketchMetadataBuilder({c.name: c.type for c in table.sd.cols})
    builder.add({c.name: values for c, values in zip(table.sd.cols, batch, strict=True)})
    return builder.metadata()


def _file_name() -> str:
    stamp = time.strftime("%Y%m%d_%H%M%S", time.gmtime())
    return f"{stamp}_{uuid.uuid4().hex[:12]}_000000.orc"


@dataclass(frozen=True)
class _NewFile:
    """A data file this statement added: where it is, and its rows and rawDataSize (None when unknown)."""

    url: str
    rows: int | None
    raw_data_size: int | None


def _write_orc(ex: Session, table: Table, layout: _Layout, location: str, columns: _Columns) -> _NewFile:
    """Write one ORC file of `columns` into the directory at `location` (a local directory: hidden until
    complete, then renamed; an object store: written locally, then uploaded whole)."""
    schema = TypeDescription.struct(
        [(c.name, TypeDescription.parse(str(t))) for c, t in zip(table.sd.cols, layout.data_types, strict=True)]
    )
    batch = [column_array(values, t) for values, t in zip(columns.values, layout.data_types, strict=True)]
    final = storage.child(location, _file_name())
    temporary = storage.temporary_file(final)
    try:
        metadata = _sketch_user_metadata(table, batch)
        with OrcWriter(
            temporary, schema, orc_options(table.parameters), user_metadata=metadata, software_version=ORC_SOFTWARE_VERSION
        ) as writer:
            writer.write_batch(batch)
        rows, raw = _footer_counts(temporary)
    except (OrcError, InvalidInput) as exc:
        temporary.unlink(missing_ok=True)
        raise SqlError(f"writing {final}: {exc}") from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    storage.publish(temporary, final, ex.options.storage)
    return _NewFile(final, rows, raw)


def _copy_file(ex: Session, source: Path, final: str) -> _NewFile:
    """Copy a local ORC file to `final` (local or remote), complete or not at all."""
    rows, raw = _footer_counts(source)
    temporary = storage.temporary_file(final)
    try:
        shutil.copyfile(source, temporary)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    storage.publish(temporary, final, ex.options.storage)
    return _NewFile(final, rows, raw)


def _footer_counts(path: Path) -> tuple[int | None, int | None]:
    """(rows, rawDataSize) of one local ORC file from its footer, or (None, None) when they cannot be read."""
    from metastore.stats.harvest import basic_stats

    try:
        basic = basic_stats([path], scan=True)
    except MetastoreError:  # a copied file that is not readable ORC: the counts become unknown
        return None, None
    return basic.num_rows, basic.raw_data_size


@dataclass
class _Target:
    """Where one group of rows goes: the table itself or one partition."""

    table: Table
    partition: Partition | None
    created: bool

    @property
    def location(self) -> str | None:
        return self.partition.sd.location if self.partition is not None else self.table.sd.location

    @property
    def owner(self) -> str:
        if self.partition is None:
            return qualified(self.table)
        return f"{qualified(self.table)} partition {partition_name(self.table, self.partition.values)}"


def _target(ex: Session, table: Table, key: tuple[str, ...]) -> _Target:
    if not table.partition_keys:
        return _Target(table, None, False)
    values = list(key)
    try:
        return _Target(table, ex.client.get_partition(table.db_name, table.table_name, values), False)
    except NoSuchObject:
        pass
    new = Partition(db_name=table.db_name, table_name=table.table_name, values=values)
    added = ex.client.add_partitions(table.db_name, table.table_name, [new], if_not_exists=True)
    if added:
        return _Target(table, added[0], True)
    return _Target(table, ex.client.get_partition(table.db_name, table.table_name, values), False)


def _commit(ex: Session, target: _Target, new_files: list[_NewFile], overwrite: bool, position: Position) -> None:
    """Make new files the target's data (dropping the old files on overwrite) and update its parameters."""
    location = data_location(target.location, target.owner, position)
    new_set = {storage.canonical_url(f.url) for f in new_files}
    before = [f for f in list_data_files(location, ex.options.storage) if f.url not in new_set]
    if overwrite:
        for old in before:
            storage.delete(old.url, ex.options.storage)
    files = list_data_files(location, ex.options.storage)
    total_size = sum(f.size for f in files)
    added_rows: int | None = 0
    added_raw: int | None = 0
    for new in new_files:
        rows, raw = new.rows, new.raw_data_size
        added_rows = None if rows is None or added_rows is None else added_rows + rows
        added_raw = None if raw is None or added_raw is None else added_raw + raw
    change = partial(
        after_data_change, num_files=len(files), total_size=total_size, added_rows=added_rows,
        added_raw_size=added_raw, replaced=overwrite or not before,
    )
    if target.partition is not None:
        params = change(target.partition.parameters)
        ex.client.alter_partitions(
            target.table.db_name, target.table.table_name, [replace(target.partition, parameters=params)]
        )
    else:
        current = ex.client.get_table(target.table.db_name, target.table.table_name)
        params = change(current.parameters)
        ex.client.alter_table(current.db_name, current.table_name, replace(current, parameters=params))


def _write_groups(ex: Session, layout: _Layout, grouper: _RowGrouper, overwrite: bool, position: Position) -> Result:
    table = layout.table
    written = 0
    created = 0
    for key, columns in grouper.groups.items():
        target = _target(ex, table, key)
        created += target.created
        location = data_location(target.location, target.owner, position)
        written_file = _write_orc(ex, table, layout, location, columns)
        _commit(ex, target, [written_file], overwrite, position)
        written += columns.rows
    parts = f" into {len(grouper.groups)} partition(s)" if table.partition_keys else ""
    new = f" ({created} new)" if created else ""
    if created:
        ex.changed()
    return Result(message=f"{written} row(s) written to {qualified(table)}{parts}{new}")


# ---------------------------------------------------------------------------------------------- INSERT


def _convert_literal(literal: Literal, hive_type: HiveType, name: str) -> Any:
    try:
        return from_literal(literal, hive_type)
    except ConversionError as exc:
        raise SqlError(f"column '{name}' ({hive_type}): {exc}", literal.position) from None


def insert_values(ex: Session, st: InsertValues) -> Result:
    """INSERT INTO/OVERWRITE TABLE t [PARTITION (...)] [(columns)] VALUES (...), (...)."""
    table = ex.table(st.table)
    require_orc(table, "INSERT", st.table.position)
    layout = _layout(table, st.spec, st.columns, st.position, "INSERT")
    grouper = _RowGrouper(len(layout.data_types))
    for row in st.rows:
        if len(row) != layout.width:
            raise SqlError(
                f"a row of VALUES has {len(row)} value(s) but {qualified(table)} takes {layout.width} "
                f"({layout.describe_input()})",
                row[0].position,
            )
        values: list[Any] = []
        key_texts: dict[int, str] = {}
        for target, literal in zip(layout.targets, row, strict=True):
            if target >= 0:
                col = table.sd.cols[target]
                values.append(_convert_literal(literal, layout.data_types[target], col.name))
            else:
                index = -1 - target
                key = table.partition_keys[index]
                try:
                    key_texts[index] = partition_value_text(literal, layout.key_types[index])
                except ConversionError as exc:
                    raise SqlError(f"partition column '{key.name}': {exc}", literal.position) from None
                values.append(None)
        grouper.add(*_place(layout, values, key_texts))
    return _write_groups(ex, layout, grouper, st.overwrite, st.position)


# ---------------------------------------------------------------------------------------------- LOAD DATA


def _input_files(path_text: str, position: Position) -> list[Path]:
    path = Path(path_text[len("file:"):] if path_text.startswith("file:") else path_text).expanduser()
    if "://" in path_text and not path_text.startswith("file:"):
        raise SqlError(f"'{path_text}' is not a local path; LOAD DATA reads local files", position)
    if path.is_dir():
        files = [p for p in sorted(path.iterdir()) if p.is_file() and not p.name.startswith((".", "_"))]
        if not files:
            raise SqlError(f"directory {path} has no files to load", position)
        return files
    if not path.exists():
        raise SqlError(f"{path} does not exist", position)
    return [path]


def _is_orc(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(3) == b"ORC"


def _csv_rows(path: Path, position: Position) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each CSV record."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            for row in reader:
                yield reader.line_num, row
    except UnicodeDecodeError as exc:
        raise SqlError(f"{path} is not UTF-8 text: {exc}", position) from None
    except csv.Error as exc:
        raise SqlError(f"{path}: {exc}", position) from None


def _is_header(row: Sequence[str], layout: _Layout) -> bool:
    table = layout.table
    names = [c.name.lower() for c in table.sd.cols] + [k.name.lower() for k in table.partition_keys]
    fields = [f.strip().lower() for f in row]
    return fields == names[: len(fields)] and len(fields) == layout.width


def _csv_value(text: str, hive_type: HiveType) -> Any:
    if text == CSV_NULL:
        return None
    if text == "" and hive_type.name not in ("string", "varchar", "char"):
        return None
    return from_text(text, hive_type)


def _load_csv(ex: Session, layout: _Layout, path: Path, position: Position, grouper: _RowGrouper) -> int:
    table = layout.table
    count = 0
    for number, row in _csv_rows(path, position):
        if not row or (len(row) == 1 and row[0] == ""):
            continue  # blank line
        if number == 1 and _is_header(row, layout):
            continue
        if len(row) != layout.width:
            raise SqlError(
                f"{path} line {number}: {len(row)} field(s), expected {layout.width} ({layout.describe_input()})",
                position,
            )
        values: list[Any] = []
        key_texts: dict[int, str] = {}
        for target, text in zip(layout.targets, row, strict=True):
            try:
                if target >= 0:
                    values.append(_csv_value(text, layout.data_types[target]))
                else:
                    index = -1 - target
                    key_texts[index] = partition_value_text(
                        Literal(LiteralKind.STRING, text, position), layout.key_types[index]
                    )
                    values.append(None)
            except ConversionError as exc:
                name = table.sd.cols[target].name if target >= 0 else table.partition_keys[-1 - target].name
                raise SqlError(f"{path} line {number}, column '{name}': {exc}", position) from None
        grouper.add(*_place(layout, values, key_texts))
        count += 1
    return count


def load_data(ex: Session, st: LoadData) -> Result:
    """LOAD DATA [LOCAL] INPATH 'file-or-dir' [OVERWRITE] INTO TABLE t [PARTITION (...)]."""
    table = ex.table(st.table)
    require_orc(table, "LOAD DATA", st.table.position)
    layout = _layout(table, st.spec, None, st.position, "LOAD DATA")
    files = _input_files(st.path, st.path_position)
    orc_files = [p for p in files if _is_orc(p)]
    csv_files = [p for p in files if p not in orc_files]
    if orc_files and any(v is None for v in layout.static_values):
        raise SqlError("ORC files can only be loaded into one partition: give every partition value", st.position)
    grouper = _RowGrouper(len(layout.data_types))
    for path in csv_files:
        _load_csv(ex, layout, path, st.path_position, grouper)
    static_key = tuple(v for v in layout.static_values if v is not None)
    if orc_files and static_key not in grouper.groups:
        grouper.groups[static_key] = _Columns([[] for _ in layout.data_types])
    if not grouper.groups:
        return Result(message="no rows to load")
    written = 0
    created = 0
    for key, columns in grouper.groups.items():
        target = _target(ex, table, key)
        created += target.created
        location = data_location(target.location, target.owner, st.position)
        new_files: list[_NewFile] = []
        if columns.rows:
            new_files.append(_write_orc(ex, table, layout, location, columns))
        if orc_files and key == static_key:
            for source in orc_files:
                new_files.append(_copy_file(ex, source, storage.child(location, f"{_file_name()[:-4]}_{source.name}")))
        _commit(ex, target, new_files, st.overwrite, st.position)
        written += columns.rows
    if created:
        ex.changed()
    copied = f", {len(orc_files)} ORC file(s) copied" if orc_files else ""
    parts = f" into {len(grouper.groups)} partition(s)" if table.partition_keys else ""
    return Result(message=f"{written} row(s) loaded from CSV{copied} into {qualified(table)}{parts}")
