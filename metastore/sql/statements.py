"""The statements the shell understands, as the parser builds them (positions kept for error messages)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from metastore.sql.errors import Position
from metastore.sql.hive_types import HiveType


@dataclass(frozen=True)
class Name:
    """An identifier as written (case kept), with its position."""

    value: str
    position: Position

    @property
    def lower(self) -> str:
        return self.value.lower()


@dataclass(frozen=True)
class TableName:
    """`[db.]table`; db None means the current database."""

    db: Name | None
    table: Name

    @property
    def position(self) -> Position:
        return (self.db or self.table).position

    def __str__(self) -> str:
        return f"{self.db.value}.{self.table.value}" if self.db else self.table.value


class LiteralKind(enum.Enum):
    NULL = "null"
    BOOLEAN = "boolean"
    INTEGER = "integer"
    DECIMAL = "decimal"  # a number with a point or an exponent, or a BD suffix; converted per column type
    STRING = "string"
    DATE = "date"  # DATE '2024-01-01'
    TIMESTAMP = "timestamp"  # TIMESTAMP '2024-01-01 10:00:00'


@dataclass(frozen=True)
class Literal:
    """A constant: its kind and its text (numbers keep their digits, so each column type converts exactly)."""

    kind: LiteralKind
    text: str | None
    position: Position
    suffix: str = ""  # a number's Hive suffix: L, S, Y, BD or D

    def __str__(self) -> str:
        if self.kind is LiteralKind.NULL:
            return "NULL"
        if self.kind is LiteralKind.STRING:
            return repr(self.text)
        return str(self.text)


@dataclass(frozen=True)
class PartitionItem:
    """`key = value`, or a bare `key` (any value: dynamic in INSERT, all values in ANALYZE/SHOW)."""

    key: Name
    value: Literal | None


@dataclass(frozen=True)
class PartitionSpec:
    items: tuple[PartitionItem, ...]
    position: Position


@dataclass(frozen=True)
class ColumnDef:
    name: Name
    type: HiveType
    comment: str | None = None


@dataclass(frozen=True)
class Statement:
    """Base: where the statement starts."""

    position: Position


@dataclass(frozen=True)
class CreateDatabase(Statement):
    name: Name
    if_not_exists: bool = False
    comment: str | None = None
    location: str | None = None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DropDatabase(Statement):
    name: Name
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class UseDatabase(Statement):
    name: Name


@dataclass(frozen=True)
class SetVariable(Statement):
    """SET [key [= value]]: show the shell's settings, one of them, or change one (Hive's syntax)."""

    key: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class ShowDatabases(Statement):
    pattern: str | None = None


@dataclass(frozen=True)
class ShowTables(Statement):
    database: Name | None = None
    pattern: str | None = None


@dataclass(frozen=True)
class ShowPartitions(Statement):
    table: TableName
    spec: PartitionSpec | None = None


@dataclass(frozen=True)
class ShowTblProperties(Statement):
    table: TableName
    key: str | None = None


@dataclass(frozen=True)
class CreateTable(Statement):
    table: TableName
    columns: tuple[ColumnDef, ...]
    external: bool = False
    if_not_exists: bool = False
    comment: str | None = None
    partition_columns: tuple[ColumnDef, ...] = ()
    stored_as: Name | None = None
    location: str | None = None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DropTable(Statement):
    table: TableName
    if_exists: bool = False
    purge: bool = False


@dataclass(frozen=True)
class AddPartitions(Statement):
    table: TableName
    partitions: tuple[tuple[PartitionSpec, str | None], ...]
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropPartitions(Statement):
    table: TableName
    specs: tuple[PartitionSpec, ...]
    if_exists: bool = False
    purge: bool = False


@dataclass(frozen=True)
class MsckRepair(Statement):
    """MSCK [REPAIR] TABLE t [ADD|DROP|SYNC PARTITIONS]: without REPAIR it only reports."""

    table: TableName
    repair: bool = True
    add: bool = True
    drop: bool = False


@dataclass(frozen=True)
class InsertValues(Statement):
    table: TableName
    rows: tuple[tuple[Literal, ...], ...]
    spec: PartitionSpec | None = None
    columns: tuple[Name, ...] | None = None
    overwrite: bool = False


@dataclass(frozen=True)
class LoadData(Statement):
    path: str
    path_position: Position
    table: TableName
    local: bool = True
    overwrite: bool = False
    spec: PartitionSpec | None = None


class AnalyzeMode(enum.Enum):
    BASIC = "basic"  # COMPUTE STATISTICS
    NOSCAN = "noscan"  # COMPUTE STATISTICS NOSCAN
    COLUMNS = "columns"  # COMPUTE STATISTICS FOR COLUMNS [...] / FOR ALL COLUMNS


@dataclass(frozen=True)
class Analyze(Statement):
    table: TableName
    mode: AnalyzeMode
    spec: PartitionSpec | None = None
    columns: tuple[Name, ...] | None = None  # None: every column


@dataclass(frozen=True)
class Describe(Statement):
    table: TableName
    detail: str | None = None  # None, "extended" or "formatted"
    spec: PartitionSpec | None = None
    column: Name | None = None


@dataclass(frozen=True)
class DescribeDatabase(Statement):
    name: Name
    extended: bool = False


@dataclass(frozen=True)
class AlterTableProperties(Statement):
    """ALTER TABLE t SET TBLPROPERTIES (...)."""

    table: TableName
    properties: dict[str, str]


# ---------------------------------------------------------------------------------------------- issue 11: indexes
# WHERE clauses are predicate trees (metastore.index.predicate, the tree the split filter takes), each node's
# `where` holding its Position.


@dataclass(frozen=True)
class CreateIndex(Statement):
    """CREATE INDEX [IF NOT EXISTS] name USING btree|bloom|minmax ON [db.]t (col) [WITH (...)] [WHERE ...]."""

    name: Name
    kind: Name
    table: TableName
    column: Name
    properties: dict[str, str] = field(default_factory=dict)
    property_positions: dict[str, Position] = field(default_factory=dict)
    where: Any = None  # predicate.Expr over the partition column
    if_not_exists: bool = False


@dataclass(frozen=True)
class ShowIndex(Statement):
    """SHOW INDEX [name] (SHOW INDEXES too)."""

    name: Name | None = None


@dataclass(frozen=True)
class UpdateIndex(Statement):
    """UPDATE INDEX name [WHERE pcol = v | pcol IN (...)]."""

    name: Name
    where: Any = None


@dataclass(frozen=True)
class DropIndex(Statement):
    """DROP INDEX [IF EXISTS] name [WHERE pcol = v | pcol IN (...)]."""

    name: Name
    if_exists: bool = False
    where: Any = None


@dataclass(frozen=True)
class Select(Statement):
    """SELECT * | cols | count(*) FROM [db.]t [WHERE predicate] [LIMIT n]."""

    table: TableName
    columns: tuple[Name, ...] | None  # None: every column (*)
    count: bool = False
    where: Any = None
    limit: int | None = None


@dataclass(frozen=True)
class Explain(Statement):
    """EXPLAIN SELECT ...: the splits the indexes keep and the bytes to read, without reading rows."""

    select: Select
