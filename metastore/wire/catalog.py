"""Conversion between Hive's Thrift catalog structs and the domain objects of metastore.catalog."""

from __future__ import annotations

from collections.abc import Iterable

from metastore.api.hive_metastore import ttypes as tt
from metastore.catalog import (
    DEFAULT_CATALOG,
    Database,
    FieldSchema,
    Order,
    Partition,
    SerDeInfo,
    SkewedInfo,
    StorageDescriptor,
    Table,
)
from metastore.errors import InvalidObject


def _name(value: str | None, what: str) -> str:
    if not value or not value.strip():
        raise InvalidObject(f"{what} is missing")
    return value


def field_from_thrift(f: tt.FieldSchema) -> FieldSchema:
    """A column; a missing name or type is InvalidObject."""
    return FieldSchema(name=_name(f.name, "column name"), type=_name(f.type, f"type of column '{f.name}'"), comment=f.comment)


def field_to_thrift(f: FieldSchema) -> tt.FieldSchema:
    """A column as Thrift."""
    return tt.FieldSchema(name=f.name, type=f.type, comment=f.comment)


def sd_from_thrift(sd: tt.StorageDescriptor | None) -> StorageDescriptor:
    """A storage descriptor (an absent one is the empty default)."""
    if sd is None:
        return StorageDescriptor()
    serde = sd.serdeInfo
    skewed = sd.skewedInfo
    return StorageDescriptor(
        cols=[field_from_thrift(c) for c in sd.cols or []],
        location=sd.location,
        input_format=sd.inputFormat,
        output_format=sd.outputFormat,
        compressed=bool(sd.compressed),
        num_buckets=sd.numBuckets if sd.numBuckets is not None else -1,
        serde_info=SerDeInfo(
            name=serde.name, serialization_lib=serde.serializationLib, parameters=dict(serde.parameters or {})
        )
        if serde is not None
        else SerDeInfo(),
        bucket_cols=list(sd.bucketCols or []),
        sort_cols=[Order(col=o.col, order=o.order) for o in sd.sortCols or []],
        parameters=dict(sd.parameters or {}),
        skewed_info=SkewedInfo(
            skewed_col_names=list(skewed.skewedColNames or []),
            skewed_col_values=[list(v) for v in skewed.skewedColValues or []],
            skewed_col_value_location_maps={
                tuple(k): v for k, v in (skewed.skewedColValueLocationMaps or {}).items()
            },
        )
        if skewed is not None
        else None,
        stored_as_sub_directories=bool(sd.storedAsSubDirectories),
        cols_unset=sd.cols is None,
    )


# Columns converted once per list of column objects within one reply: {ids of the columns: (the columns, kept
# alive so that their ids are not reused while the memo lives; their Thrift values)}.
ColumnsMemo = dict[tuple[int, ...], tuple[tuple[FieldSchema, ...], list[tt.FieldSchema]]]


def _columns_to_thrift(cols: list[FieldSchema], memo: ColumnsMemo | None) -> list[tt.FieldSchema]:
    if memo is None:
        return [field_to_thrift(c) for c in cols]
    key = tuple(map(id, cols))
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = (tuple(cols), [field_to_thrift(c) for c in cols])
    return list(hit[1])  # a list of its own; the (never mutated) FieldSchema values are shared


def sd_to_thrift(sd: StorageDescriptor, memo: ColumnsMemo | None = None) -> tt.StorageDescriptor:
    """A storage descriptor as Thrift, always with a SkewedInfo as Hive sends it; columns stored as unset (a
    partition added without any) stay unset, as Hive 2.3 answers. With a memo, descriptors whose columns are the
    same objects (one column descriptor: load_storage shares them) convert those columns once."""
    skewed = sd.skewed_info or SkewedInfo()
    return tt.StorageDescriptor(
        cols=None if sd.cols_unset else _columns_to_thrift(sd.cols, memo),
        location=sd.location,
        inputFormat=sd.input_format,
        outputFormat=sd.output_format,
        compressed=sd.compressed,
        numBuckets=sd.num_buckets,
        serdeInfo=tt.SerDeInfo(
            name=sd.serde_info.name,
            serializationLib=sd.serde_info.serialization_lib,
            parameters=dict(sd.serde_info.parameters),
        ),
        bucketCols=list(sd.bucket_cols),
        sortCols=[tt.Order(col=o.col, order=o.order) for o in sd.sort_cols],
        parameters=dict(sd.parameters),
        # Hive always returns a SkewedInfo (Spark's client dereferences it), empty when there is none.
        skewedInfo=tt.SkewedInfo(
            skewedColNames=list(skewed.skewed_col_names),
            skewedColValues=[list(v) for v in skewed.skewed_col_values],
            # Generated Python uses tuples as keys of map<list<string>, string>.
            skewedColValueLocationMaps={tuple(k): v for k, v in skewed.skewed_col_value_location_maps.items()},
        ),
        storedAsSubDirectories=sd.stored_as_sub_directories,
    )


def database_from_thrift(db: tt.Database) -> Database:
    """A database, its name and catalog lower-cased as Hive stores them."""
    return Database(
        name=_name(db.name, "database name").lower(),
        description=db.description,
        location_uri=db.locationUri,
        parameters=dict(db.parameters or {}),
        owner_name=db.ownerName,
        owner_type=db.ownerType,
        catalog_name=(getattr(db, "catalogName", None) or DEFAULT_CATALOG).lower(),
        create_time=getattr(db, "createTime", None) or 0,
        managed_location_uri=getattr(db, "managedLocationUri", None),
    )


def database_to_thrift(db: Database) -> tt.Database:
    """A database as Thrift."""
    return tt.Database(
        name=db.name,
        description=db.description,
        locationUri=db.location_uri,
        parameters=dict(db.parameters),
        ownerName=db.owner_name,
        ownerType=db.owner_type,
        catalogName=db.catalog_name,
        createTime=db.create_time,
        managedLocationUri=db.managed_location_uri,
    )


def table_from_thrift(t: tt.Table) -> Table:
    """A table, its names lower-cased as Hive stores them; fields older clients lack get their defaults."""
    write_id: int | None = getattr(t, "writeId", None)
    return Table(
        db_name=_name(t.dbName, "table's database name").lower(),
        table_name=_name(t.tableName, "table name").lower(),
        owner=t.owner,
        create_time=t.createTime or 0,
        last_access_time=t.lastAccessTime or 0,
        retention=t.retention or 0,
        sd=sd_from_thrift(t.sd),
        partition_keys=[field_from_thrift(k) for k in t.partitionKeys or []],
        parameters=dict(t.parameters or {}),
        view_original_text=t.viewOriginalText,
        view_expanded_text=t.viewExpandedText,
        table_type=t.tableType or "MANAGED_TABLE",
        temporary=bool(t.temporary),
        rewrite_enabled=bool(t.rewriteEnabled),
        catalog_name=(getattr(t, "catName", None) or DEFAULT_CATALOG).lower(),
        # Hive 3+ clients always send ownerType; a Hive 2 client's table is its owner's, as Hive 3+ stores it.
        owner_type=tt.PrincipalType.USER if t.ownerType is None else t.ownerType,
        write_id=-1 if write_id is None else write_id,
    )


def table_to_thrift(t: Table) -> tt.Table:
    """A table as Thrift."""
    return tt.Table(
        tableName=t.table_name,
        dbName=t.db_name,
        owner=t.owner,
        createTime=t.create_time,
        lastAccessTime=t.last_access_time,
        retention=t.retention,
        sd=sd_to_thrift(t.sd),
        partitionKeys=[field_to_thrift(k) for k in t.partition_keys],
        parameters=dict(t.parameters),
        viewOriginalText=t.view_original_text,
        viewExpandedText=t.view_expanded_text,
        tableType=t.table_type,
        temporary=t.temporary,
        rewriteEnabled=t.rewrite_enabled,
        catName=t.catalog_name,
        # Always sent, as every Hive 3+ client does: the server tells Hive 2 clients by its absence.
        ownerType=tt.PrincipalType.USER if t.owner_type is None else t.owner_type,
        writeId=t.write_id,
    )


def partition_from_thrift(p: tt.Partition, *, db_name: str | None = None, table_name: str | None = None) -> Partition:
    """A partition; db_name/table_name stand in for names a reply leaves out. No values is InvalidObject."""
    values = p.values
    if values is None:
        raise InvalidObject("a partition has no values")
    write_id: int | None = getattr(p, "writeId", None)
    return Partition(
        db_name=_name(p.dbName or db_name, "partition's database name").lower(),
        table_name=_name(p.tableName or table_name, "partition's table name").lower(),
        values=list(values),
        create_time=p.createTime or 0,
        last_access_time=p.lastAccessTime or 0,
        sd=sd_from_thrift(p.sd),
        parameters=dict(p.parameters or {}),
        catalog_name=(getattr(p, "catName", None) or DEFAULT_CATALOG).lower(),
        write_id=-1 if write_id is None else write_id,
    )


def partitions_to_thrift(parts: Iterable[Partition]) -> list[tt.Partition]:
    """partition_to_thrift of each; the partitions' columns are converted once per column descriptor (a table of
    30 columns and 10,000 partitions converts 30 columns, not 300,000)."""
    memo: ColumnsMemo = {}
    return [partition_to_thrift(p, memo) for p in parts]


def partition_to_thrift(p: Partition, memo: ColumnsMemo | None = None) -> tt.Partition:
    """A partition as Thrift."""
    return tt.Partition(
        values=list(p.values),
        dbName=p.db_name,
        tableName=p.table_name,
        createTime=p.create_time,
        lastAccessTime=p.last_access_time,
        sd=sd_to_thrift(p.sd, memo),
        parameters=dict(p.parameters),
        catName=p.catalog_name,
        writeId=p.write_id,
    )
