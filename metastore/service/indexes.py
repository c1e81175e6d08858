"""Split-filtering index records and the split filter, one transaction per call (issue 11).

Indexes are built next to the data by the caller (the SQL shell, the Spark pipeline), which writes the index
files under the directory this service hands out and then records the parts here; the metastore deletes index
files when an index, its table or its partitions go. The split filter reads index files (never data) and
checks data files' sizes and modification times.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import time
from collections.abc import Sequence
from dataclasses import replace

from metastore import locations, storage
from metastore.catalog import DEFAULT_CATALOG, Table
from metastore.errors import InvalidObject, InvalidOperation, MetastoreError, NoSuchObject
from metastore.index.model import FilterResult, IndexLevel, IndexPart, IndexRecord, IndexState, Split
from metastore.store import Store
from metastore.store.store import UnitOfWork

log = logging.getLogger(__name__)

#: Hive's rule for object names (word characters)
_VALID_NAME = re.compile(r"[A-Za-z0-9_]+")
INDEX_DIR = ".indexes"


def default_index_root(warehouse: str) -> str:
    """`<warehouse>/.indexes`, qualified."""
    return locations.child(locations.qualify_directory(warehouse), INDEX_DIR)


#: index properties the service understands (`level` is also a field of the record)
KNOWN_PROPERTIES = ("level", "bloom.fpp")


def path_segment(name: str) -> str:
    """A name as one directory name: ASCII letters, digits and _ as they are, every other character
    percent-encoded (UTF-8), so no column name (Hive allows `a/b`, `..`, spaces) can climb out of the
    index directory or collide with another."""
    out = []
    for ch in name:
        if ch.isascii() and (ch.isalnum() or ch == "_"):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def _path_part(location: str) -> tuple[str, str]:
    """(filesystem prefix, path) of a qualified location: ("file:", "/a/b") or ("s3://bucket", "/a/b")."""
    local = locations.local_path(location)
    if local is not None:
        return "file:", os.path.realpath(str(local))
    scheme, sep, rest = location.partition("://")
    if not sep:
        return "", location
    scheme = {"s3a": "s3", "s3n": "s3"}.get(scheme.lower(), scheme.lower())
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.lower()}", "/" + path


def inside(root: str, location: str) -> bool:
    """Whether ``location`` lies strictly inside the directory ``root``: same filesystem, no `.`/`..` segment
    and no NUL anywhere in it, and (for local paths) still inside once symbolic links are resolved."""
    if not location or "\x00" in location:
        return False
    if any(seg in (".", "..") for seg in location.split("/")):
        return False
    try:
        root_fs, root_path = _path_part(locations.qualify_directory(root))
        loc_fs, loc_path = _path_part(locations.qualify(location) or location)
    except MetastoreError:
        return False
    if root_fs != loc_fs:
        return False
    root_path = posixpath.normpath(root_path)
    loc_path = posixpath.normpath(loc_path)
    return loc_path.startswith(root_path.rstrip("/") + "/")


def delete_index_files(paths: Sequence[str], root: str | None) -> None:
    """Delete index files (and directories) inside the index root when their filesystem is reachable;
    anything outside it is left alone with a warning (a record never points there unless the root was
    reconfigured or the database edited by hand), failures are logged."""
    for path in paths:
        if root is None or not inside(root, path):
            log.warning("not deleting %s: it is not inside the index root %s", path, root)
            continue
        try:
            storage.delete(path)
        except storage.StorageError as exc:
            log.warning("index files left in place: %s", exc)


class IndexService:
    """Index records over the store, and the split filter."""

    def __init__(self, store: Store, index_root: str, catalog: str = DEFAULT_CATALOG) -> None:
        self.store = store
        self.index_root = locations.qualify_directory(index_root)
        self.catalog = catalog

    def _directory(self, record: IndexRecord) -> str:
        """One directory per table, column and index under the index root (each name one safe segment)."""
        directory = "/".join([
            self.index_root.rstrip("/"), *(path_segment(n.lower()) for n in
                                           (record.db_name, record.table_name, record.column, record.name)),
        ])
        if not inside(self.index_root, directory):  # pragma: no cover - path_segment makes this impossible
            raise InvalidObject(f"index {record.name}: directory {directory} is outside the index root")
        return directory

    def create(self, record: IndexRecord) -> IndexRecord:
        """Record a new index in state CREATING and return it with its directory and times. The column must be
        a data column of the table, of an indexable type (the record's type, when given, must be the table's);
        InvalidObject names what is wrong."""
        if not _VALID_NAME.fullmatch(record.name or "") or len(record.name) > 128:
            raise InvalidObject(f"{record.name!r} is not a valid index name (letters, digits and _)")
        _check_properties(record)
        now = int(time.time())
        record = replace(
            record, name=record.name.lower(), db_name=record.db_name.lower(), table_name=record.table_name.lower(),
            column=record.column.lower(), state=IndexState.CREATING, created=now, built=0, parts=(),
        )
        with self.store.transaction() as uow:
            table = uow.tables.get(record.db_name, record.table_name, catalog=self.catalog)
            record = _checked_column(record, table)
            record = replace(record, location=self._directory(record))
            uow.split_indexes.create(record, self.catalog)
            return uow.split_indexes.get(record.name)

    def get(self, name: str, db_name: str | None = None, table_name: str | None = None) -> IndexRecord:
        """An index by name; with db_name/table_name it must be that table's (NoSuchObject otherwise)."""
        with self.store.read() as uow:
            return _of_table(uow.split_indexes.get(name), db_name, table_name)

    def list(self, db_name: str | None = None, table_name: str | None = None) -> list[IndexRecord]:
        """Every index, a database's or a table's (by name)."""
        with self.store.read() as uow:
            return uow.split_indexes.list_indexes(db_name or None, table_name or None, catalog=self.catalog)

    def finish_build(
        self, name: str, parts: Sequence[IndexPart], *, built: int | None = None,
        partitions: tuple[str, ...] | None = None, db_name: str | None = None, table_name: str | None = None,
    ) -> IndexRecord:
        """Record a finished build (the index becomes READY) and delete part files it no longer uses."""
        with self.store.transaction() as uow:
            record = _of_table(uow.split_indexes.get(name), db_name, table_name)
            for part in parts:
                _check_part(record, part, self.index_root)
            obsolete = uow.split_indexes.finish_build(
                name, parts, built=built or int(time.time()), partitions=partitions
            )
            done = uow.split_indexes.get(name)
        delete_index_files(obsolete, self.index_root)
        return done

    def drop(
        self, name: str, partitions: Sequence[str] | None = None, db_name: str | None = None,
        table_name: str | None = None,
    ) -> None:
        """Drop an index and its files; with partitions, only its parts for those partitions."""
        if partitions:
            with self.store.transaction() as uow:
                record = _of_table(uow.split_indexes.get(name), db_name, table_name)
                if record.level is IndexLevel.TABLE and record.partitions is None:
                    raise InvalidOperation(
                        f"index {record.name} is a TABLE-level index; it cannot be dropped for one partition"
                    )
                removed = uow.split_indexes.drop_partition_parts(name, partitions)
            delete_index_files(removed, self.index_root)
            return
        with self.store.transaction() as uow:
            _of_table(uow.split_indexes.get(name), db_name, table_name)
            record = uow.split_indexes.drop(name)
        delete_index_files([record.location], self.index_root)

    def filter_splits(self, db_name: str, table_name: str, predicate: str, splits: Sequence[Split]) -> FilterResult:
        """The splits of a table that may match the predicate (its JSON form), judged by its indexes."""
        # numpy and the index readers load on the first filter call, not when the server starts
        from metastore.index.filter import filter_splits

        with self.store.read() as uow:
            table = uow.tables.get(db_name, table_name, catalog=self.catalog)
            records = uow.split_indexes.list_indexes(db_name, table_name, catalog=self.catalog)
        return filter_splits(table, predicate, splits, records)


def _check_properties(record: IndexRecord) -> None:
    """InvalidObject for an option the indexes do not know or a `bloom.fpp` that is not a rate."""
    for key, value in record.properties.items():
        if key not in KNOWN_PROPERTIES:
            raise InvalidObject(f"index {record.name}: unknown property {key!r} (known: {', '.join(KNOWN_PROPERTIES)})")
        if key == "bloom.fpp":
            try:
                fpp = float(value)
            except ValueError:
                fpp = -1.0
            if not 0.0 < fpp < 1.0:
                raise InvalidObject(f"index {record.name}: bloom.fpp must be a number between 0 and 1, got {value!r}")
        if key == "level" and value.upper() != record.level.value:
            raise InvalidObject(f"index {record.name}: property level={value!r} contradicts its level {record.level.value}")


def _checked_column(record: IndexRecord, table: Table) -> IndexRecord:
    """The record with the column's type from the table; InvalidObject when the column is not a data column
    of the table, its type differs from the one given, or indexes cannot be built on it."""
    # loaded here, not at start-up: the type rules bring numpy and the ORC engine
    from metastore.index.columns import INDEXABLE_TYPES, column_type, require_indexable
    from metastore.index.errors import UnsupportedColumn

    where = f"{table.db_name}.{table.table_name}"
    if any(k.name.lower() == record.column for k in table.partition_keys):
        raise InvalidObject(
            f"column {record.column!r} is a partition column of {where}; partitions are chosen by the index's "
            "WHERE, index a data column"
        )
    found = next((c for c in table.sd.cols if c.name.lower() == record.column), None)
    if found is None:
        raise InvalidObject(f"column {record.column!r} does not exist in {where}")
    try:
        ctype = column_type(found.type, record.column)
        require_indexable(ctype, record.column)
    except UnsupportedColumn:
        raise InvalidObject(
            f"column {record.column!r} is {found.type}; indexes support {', '.join(INDEXABLE_TYPES)}"
        ) from None
    if record.column_type:
        try:
            given = column_type(record.column_type, record.column).hive
        except UnsupportedColumn as exc:
            raise InvalidObject(str(exc)) from None
        if given != ctype.hive:
            raise InvalidObject(f"column {record.column!r} of {where} is {ctype.hive}, not {record.column_type}")
    if record.partitions is not None:
        if not table.partition_keys:
            raise InvalidObject(f"{where} is not partitioned; an index on it covers the whole table")
        if not record.partitions:
            raise InvalidObject(f"index {record.name}: the list of partitions it covers is empty")
    return replace(record, column_type=ctype.hive)


def _check_part(record: IndexRecord, part: IndexPart, root: str) -> None:
    """InvalidObject unless a part of a build is a file directly in the index's directory (its name one
    segment: no `/`, `.` or `..`) inside the index root, with a sane size."""
    prefix = record.location.rstrip("/") + "/"
    name = part.location[len(prefix):] if part.location.startswith(prefix) else ""
    if (
        not name or "/" in name or "\\" in name or name in (".", "..") or "\x00" in name
        or not inside(root, part.location)
    ):
        raise InvalidObject(f"index {record.name}: part {part.location!r} is not a file in the index directory {prefix}")
    if part.size < 0 or any(f.size < 0 for f in part.files):
        raise InvalidObject(f"index {record.name}: part {part.location} has a negative size")


def _of_table(record: IndexRecord, db_name: str | None, table_name: str | None) -> IndexRecord:
    """The record, if it is on the named table (when one is named); NoSuchObject otherwise."""
    if db_name is not None and table_name is not None and (
        record.db_name != db_name.lower() or record.table_name != table_name.lower()
    ):
        raise NoSuchObject(f"index {record.name} does not exist on {db_name.lower()}.{table_name.lower()}")
    return record


def drop_table_indexes(uow: UnitOfWork, db_name: str, table_name: str, catalog: str) -> list[str]:
    """Within a catalog transaction: delete a table's index records; returns their directories (to delete
    after the commit)."""
    return [r.location for r in uow.split_indexes.drop_for_table(db_name, table_name, catalog=catalog)]


def drop_partition_indexes(
    uow: UnitOfWork, db_name: str, table_name: str, partitions: Sequence[str], catalog: str
) -> list[str]:
    """Within a catalog transaction: delete the index parts of dropped partitions; returns their files."""
    return uow.split_indexes.drop_for_partitions(db_name, table_name, partitions, catalog=catalog)
