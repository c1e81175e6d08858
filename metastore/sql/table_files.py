"""Where a table's or partition's data lives (a local directory or an object-store prefix), and which files
there are data; file access itself is :mod:`metastore.storage`."""

from __future__ import annotations

from pathlib import Path

from metastore import storage
from metastore.catalog import Table
from metastore.sql.errors import Position, SqlError
from metastore.storage import FileRef, StorageOptions

ORC_INPUT_FORMAT = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"

#: STORED AS formats the catalog accepts: (input format, output format, serde).
STORAGE_FORMATS: dict[str, tuple[str, str, str]] = {
    "ORC": (ORC_INPUT_FORMAT, ORC_OUTPUT_FORMAT, ORC_SERDE),
    "PARQUET": (
        "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
    ),
    "TEXTFILE": (
        "org.apache.hadoop.mapred.TextInputFormat",
        "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
    ),
    "AVRO": (
        "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat",
        "org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat",
        "org.apache.hadoop.hive.serde2.avro.AvroSerDe",
    ),
}


def is_orc(table: Table) -> bool:
    """Whether the table's storage is ORC (by input format or serde, as Hive and Spark set them)."""
    fmt = (table.sd.input_format or "").lower()
    serde = (table.sd.serde_info.serialization_lib or "").lower()
    return "orc" in fmt or "orc" in serde


def require_orc(table: Table, what: str, position: Position | None) -> None:
    if not is_orc(table):
        raise SqlError(
            f"{what} needs an ORC table; {table.db_name}.{table.table_name} is stored as "
            f"{table.sd.input_format or 'an unknown format'}",
            position,
        )


def data_location(location: str | None, owner: str, position: Position | None = None) -> str:
    """The location of a table's or partition's data (local or on an object store); SqlError when it has none."""
    if not location:
        raise SqlError(f"{owner} has no location", position)
    return location


def list_data_files(location: str, options: StorageOptions | None = None) -> list[FileRef]:
    """The data files under a location (recursively), hidden entries left out, in name order; none when the
    location does not exist (a partition added without data)."""
    return storage.list_files(location, options)


def qualified(table: Table) -> str:
    """The table's name as messages spell it: db.table."""
    return f"{table.db_name}.{table.table_name}"


def absolute_location(text: str) -> str:
    """A LOCATION as stored: URIs as given, local paths made absolute (the shell resolves them from its cwd)."""
    if "://" in text or text.startswith("file:"):
        return text
    return str(Path(text).expanduser().absolute())


is_hidden = storage.is_hidden


def data_files(directory: Path) -> list[Path]:
    """The data files under a local directory (recursively), hidden entries left out, in name order.

    A missing directory has no files (a partition added without data)."""
    return [Path(ref.url) for ref in storage.list_files(str(directory))]
