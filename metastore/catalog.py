"""Catalog domain objects (databases, tables, partitions) as the store and the server exchange them.

They carry every field Hive clients round-trip through the metastore, so a table Spark creates comes back
unchanged. Thrift structs are converted to and from these in `metastore/server` (and the client) only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_CATALOG = "hive"
DEFAULT_DATABASE = "default"
DEFAULT_ENGINE = "hive"


@dataclass(frozen=True)
class FieldSchema:
    name: str
    type: str
    comment: str | None = None


@dataclass(frozen=True)
class SerDeInfo:
    name: str | None = None
    serialization_lib: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Order:
    """A sort column of a bucketed table; order 1 ascending, 0 descending (Hive's convention)."""

    col: str
    order: int


@dataclass(frozen=True)
class SkewedInfo:
    skewed_col_names: list[str] = field(default_factory=list)
    skewed_col_values: list[list[str]] = field(default_factory=list)
    skewed_col_value_location_maps: dict[tuple[str, ...], str] = field(default_factory=dict)


@dataclass(frozen=True)
class StorageDescriptor:
    cols: list[FieldSchema] = field(default_factory=list)
    location: str | None = None
    input_format: str | None = None
    output_format: str | None = None
    compressed: bool = False
    num_buckets: int = -1
    serde_info: SerDeInfo = field(default_factory=SerDeInfo)
    bucket_cols: list[str] = field(default_factory=list)
    sort_cols: list[Order] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)
    skewed_info: SkewedInfo | None = None
    stored_as_sub_directories: bool = False
    #: The descriptor has no column list (Thrift null) rather than an empty one; `cols` is then empty. Hive 2.3
    #: stores a partition added so without a column descriptor and returns its columns as null, not the table's.
    cols_unset: bool = False


@dataclass(frozen=True)
class Database:
    name: str
    description: str | None = None
    location_uri: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    owner_name: str | None = None
    owner_type: int | None = None  # Hive PrincipalType: 1 USER, 2 ROLE, 3 GROUP
    catalog_name: str = DEFAULT_CATALOG
    create_time: int = 0
    managed_location_uri: str | None = None


@dataclass(frozen=True)
class Table:
    db_name: str
    table_name: str
    owner: str | None = None
    create_time: int = 0
    last_access_time: int = 0
    retention: int = 0
    sd: StorageDescriptor = field(default_factory=StorageDescriptor)
    partition_keys: list[FieldSchema] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)
    view_original_text: str | None = None
    view_expanded_text: str | None = None
    table_type: str = "MANAGED_TABLE"
    temporary: bool = False
    rewrite_enabled: bool = False
    catalog_name: str = DEFAULT_CATALOG
    owner_type: int | None = None
    write_id: int = -1

    def column(self, name: str) -> FieldSchema | None:
        """The data or partition column called `name` (case-insensitive, as Hive), or None."""
        low = name.lower()
        for col in (*self.sd.cols, *self.partition_keys):
            if col.name.lower() == low:
                return col
        return None


@dataclass(frozen=True)
class Partition:
    db_name: str
    table_name: str
    values: list[str]
    create_time: int = 0
    last_access_time: int = 0
    sd: StorageDescriptor = field(default_factory=StorageDescriptor)
    parameters: dict[str, str] = field(default_factory=dict)
    catalog_name: str = DEFAULT_CATALOG
    write_id: int = -1
