"""Conversion between the issue 11 Thrift structs (MetastoreIndex, MetastoreSplit...) and metastore.index.model."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import TypeVar

from metastore.api.hive_metastore import ttypes as tt
from metastore.errors import InvalidInput, InvalidObject
from metastore.index.model import (
    DataFile,
    FilterResult,
    IndexCount,
    IndexKind,
    IndexLevel,
    IndexPart,
    IndexRecord,
    IndexState,
    Split,
)

E = TypeVar("E", bound=Enum)


def _enum(cls: type[E], value: str | None, what: str) -> E:
    try:
        return cls(value)
    except ValueError:
        known = ", ".join(str(m.value) for m in cls)
        raise InvalidObject(f"{what} {value!r} is not one of {known}") from None


def part_to_thrift(part: IndexPart) -> tt.MetastoreIndexPart:
    return tt.MetastoreIndexPart(
        key=part.key, partitionName=part.partition, location=part.location, size=part.size,
        files=[tt.MetastoreIndexFile(path=f.path, size=f.size, mtimeNs=f.mtime_ns) for f in part.files],
    )


def part_from_thrift(part: tt.MetastoreIndexPart) -> IndexPart:
    files = []
    for f in part.files or []:
        if f.path is None or f.size is None or f.mtimeNs is None:
            raise InvalidObject("an index part's file needs a path, size and mtimeNs")
        files.append(DataFile(f.path, f.size, f.mtimeNs))
    if part.key is None or part.location is None or part.size is None:
        raise InvalidObject("an index part needs a key, location and size")
    return IndexPart(part.key, part.partitionName or "", part.location, part.size, tuple(files))


def index_to_thrift(record: IndexRecord) -> tt.MetastoreIndex:
    return tt.MetastoreIndex(
        name=record.name, dbName=record.db_name, tableName=record.table_name, columnName=record.column,
        columnType=record.column_type, indexType=record.kind.value, level=record.level.value,
        properties=dict(record.properties),
        partitions=None if record.partitions is None else list(record.partitions),
        location=record.location, state=record.state.value, createTime=record.created, buildTime=record.built,
        owner=record.owner, tableExists=record.table_exists, parts=[part_to_thrift(p) for p in record.parts],
    )


def index_from_thrift(index: tt.MetastoreIndex) -> IndexRecord:
    if not index.name or not index.dbName or not index.tableName or not index.columnName:
        raise InvalidObject("an index needs a name, dbName, tableName and columnName")
    return IndexRecord(
        name=index.name, db_name=index.dbName, table_name=index.tableName, column=index.columnName,
        column_type=index.columnType or "",
        kind=_enum(IndexKind, index.indexType, "index type"),
        level=_enum(IndexLevel, index.level or "STRIPE", "index level"),
        properties=dict(index.properties or {}),
        partitions=None if index.partitions is None else tuple(index.partitions),
        location=index.location or "",
        state=_enum(IndexState, index.state or "CREATING", "index state"),
        created=index.createTime or 0, built=index.buildTime or 0, owner=index.owner or "",
        table_exists=True if index.tableExists is None else index.tableExists,
        parts=tuple(part_from_thrift(p) for p in index.parts or []),
    )


def split_to_thrift(split: Split) -> tt.MetastoreSplit:
    return tt.MetastoreSplit(
        path=split.path, start=split.start, length=split.length, fileSize=split.file_size,
        fileMtimeNs=split.file_mtime_ns,
    )


def split_from_thrift(split: tt.MetastoreSplit) -> Split:
    if split.path is None or split.start is None or split.length is None:
        raise InvalidInput("a split needs a path, start and length")
    if split.start < 0 or split.length < 0:
        raise InvalidInput(f"split of {split.path} has a negative start or length")
    return Split(split.path, split.start, split.length, split.fileSize, split.fileMtimeNs)


def filter_result_to_thrift(result: FilterResult, splits: Sequence[tt.MetastoreSplit]) -> tt.MetastoreFilterSplitsResponse:
    return tt.MetastoreFilterSplitsResponse(
        keptPositions=list(result.kept),
        keptSplits=[splits[i] for i in result.kept],
        counts=[
            tt.MetastoreIndexCount(indexName=c.name, indexType=c.kind, columnName=c.column, considered=c.considered,
                                   kept=c.kept)
            for c in result.counts
        ],
        warnings=list(result.warnings),
    )


def filter_result_from_thrift(response: tt.MetastoreFilterSplitsResponse) -> FilterResult:
    return FilterResult(
        kept=tuple(response.keptPositions or []),
        counts=tuple(
            IndexCount(c.indexName or "", c.indexType or "", c.columnName or "", c.considered or 0, c.kept or 0)
            for c in response.counts or []
        ),
        warnings=tuple(response.warnings or []),
    )
