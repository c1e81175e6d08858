"""Split-filtering index records and the split filter, one transaction per call (issue 11).

Indexes are built next to the data by the caller (the SQL shell, the Spark pipeline), which writes the index
files under the directory this service hands out and then records the parts here; the metastore deletes index
files when an index, its table or its partitions go. The split filter reads index files (never data) and
checks data files' sizes and modification times.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import replace

from metastore import locations
from metastore.catalog import DEFAULT_CATALOG
from metastore.errors import InvalidObject, InvalidOperation, NoSuchObject
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


def delete_index_files(paths: Sequence[str]) -> None:
    """Delete index files (and directories) when their filesystem is reachable; failures are logged."""
    for path in paths:
        locations.delete_dir(path)


class IndexService:
    """Index records over the store, and the split filter."""

    def __init__(self, store: Store, index_root: str, catalog: str = DEFAULT_CATALOG) -> None:
        self.store = store
        self.index_root = locations.qualify_directory(index_root)
        self.catalog = catalog

    def _directory(self, record: IndexRecord) -> str:
        """One directory per table, column and index under the index root."""
        return "/".join([
            self.index_root.rstrip("/"), record.db_name.lower(), record.table_name.lower(), record.column.lower(),
            record.name.lower(),
        ])

    def create(self, record: IndexRecord) -> IndexRecord:
        """Record a new index in state CREATING and return it with its directory and times."""
        if not _VALID_NAME.fullmatch(record.name or "") or len(record.name) > 128:
            raise InvalidObject(f"{record.name!r} is not a valid index name (letters, digits and _)")
        now = int(time.time())
        record = replace(
            record, name=record.name.lower(), db_name=record.db_name.lower(), table_name=record.table_name.lower(),
            column=record.column.lower(), state=IndexState.CREATING, created=now, built=0, parts=(),
        )
        record = replace(record, location=self._directory(record))
        with self.store.transaction() as uow:
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
            prefix = record.location.rstrip("/") + "/"
            for part in parts:
                if not part.location.startswith(prefix):
                    raise InvalidObject(f"index {name}: part {part.location} is not in the index directory {prefix}")
            obsolete = uow.split_indexes.finish_build(
                name, parts, built=built or int(time.time()), partitions=partitions
            )
            done = uow.split_indexes.get(name)
        delete_index_files(obsolete)
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
            delete_index_files(removed)
            return
        with self.store.transaction() as uow:
            _of_table(uow.split_indexes.get(name), db_name, table_name)
            record = uow.split_indexes.drop(name)
        delete_index_files([record.location])

    def filter_splits(self, db_name: str, table_name: str, predicate: str, splits: Sequence[Split]) -> FilterResult:
        """The splits of a table that may match the predicate (its JSON form), judged by its indexes."""
        # numpy and the index readers load on the first filter call, not when the server starts
        from metastore.index.filter import filter_splits

        with self.store.read() as uow:
            table = uow.tables.get(db_name, table_name, catalog=self.catalog)
            records = uow.split_indexes.list_indexes(db_name, table_name, catalog=self.catalog)
        return filter_splits(table, predicate, splits, records)


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
