"""Per-file partial statistics (issue 10): what the `metastore_*_file_partials` extension calls do.

The server stores and serves the bytes; it never reads data files. Writes lock the table's row (PostgreSQL;
SQLite serialises writers), so two hosts storing the same file at once cannot leave partials of one version
under the other's size and mtime.
"""

from __future__ import annotations

from collections.abc import Sequence

from metastore.catalog import DEFAULT_CATALOG
from metastore.errors import InvalidInput, NoSuchObject
from metastore.stats.partial_store import FilePartials
from metastore.store import Store
from metastore.store.file_partials import FilePartialsRepository
from metastore.store.refs import partition_keys, table_ref
from metastore.store.schema import COLUMN_NAME_LEN, URI_LEN

#: Longest object version (ETag, generation) stored.
VERSION_LEN = 256


def _validate(files: Sequence[FilePartials], qualified: str, partitioned: bool) -> None:
    seen: set[str] = set()
    for f in files:
        if not f.path:
            raise InvalidInput(f"a file of {qualified} has an empty path")
        if len(f.path) > URI_LEN:
            raise InvalidInput(f"file path {f.path[:60]!r}... is longer than {URI_LEN} characters")
        if f.path in seen:
            raise InvalidInput(f"file {f.path} of {qualified} is given twice")
        seen.add(f.path)
        if f.size < 0 or f.mtime_ns < 0:
            raise InvalidInput(f"file {f.path}: size and mtime must not be negative (got {f.size}, {f.mtime_ns})")
        if (f.num_rows is not None and f.num_rows < 0) or (f.raw_data_size is not None and f.raw_data_size < 0):
            raise InvalidInput(f"file {f.path}: numRows and rawDataSize must not be negative")
        if len(f.version) > VERSION_LEN:
            raise InvalidInput(f"file {f.path}: version is longer than {VERSION_LEN} characters")
        for key in f.entries:
            if not key or len(key) > COLUMN_NAME_LEN:
                raise InvalidInput(f"file {f.path}: partial key {key[:60]!r} is empty or longer than {COLUMN_NAME_LEN}")
        if partitioned and f.partition is None:
            raise InvalidInput(f"{qualified} is partitioned: file {f.path} must name its partition")
        if not partitioned and f.partition is not None:
            raise InvalidInput(f"{qualified} is not partitioned: file {f.path} names partition {f.partition}")


class FilePartialsService:
    """Per-file partials of the tables of one catalog, one transaction per call."""

    def __init__(self, store: Store, catalog: str = DEFAULT_CATALOG) -> None:
        self.store = store
        self.catalog = catalog

    def get(self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
            paths: Sequence[str] | None = None, catalog: str | None = None) -> list[FilePartials]:
        """Stored files of the table, of the named partitions (names it lacks have none) and/or the given
        paths; NoSuchObject when the table does not exist."""
        with self.store.read() as uow:
            ref = table_ref(uow.connection, catalog or self.catalog, db_name, table_name)
            repo = FilePartialsRepository(uow.connection)
            part_ids = None
            if partition_names is not None:
                part_ids = list(repo.partition_ids(ref.tbl_id, partition_names).values())
                if not part_ids:
                    return []
            return repo.get(ref.tbl_id, part_ids, paths)

    def put(self, db_name: str, table_name: str, files: Sequence[FilePartials], catalog: str | None = None) -> None:
        """Store files' partials in one transaction (see FilePartialsRepository.put). InvalidInput for a bad
        file (naming it), NoSuchObject for a missing table or partition; nothing is written then."""
        if not files:
            return
        with self.store.transaction() as uow:
            ref = table_ref(uow.connection, catalog or self.catalog, db_name, table_name, for_update=True)
            partitioned = bool(partition_keys(uow.connection, ref.tbl_id))
            _validate(files, ref.qualified_name, partitioned)
            repo = FilePartialsRepository(uow.connection)
            names = {f.partition for f in files if f.partition is not None}
            part_ids = repo.partition_ids(ref.tbl_id, sorted(names))
            missing = sorted(names - part_ids.keys())
            if missing:
                raise NoSuchObject(f"partition {missing[0]} of {ref.qualified_name} does not exist")
            repo.put(ref.tbl_id, files, part_ids)

    def delete(self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
               paths: Sequence[str] | None = None, catalog: str | None = None) -> int:
        """Forget stored files of the table (of the named partitions and/or the given paths; every file when
        neither is given); how many were forgotten. NoSuchObject when the table does not exist."""
        with self.store.transaction() as uow:
            ref = table_ref(uow.connection, catalog or self.catalog, db_name, table_name, for_update=True)
            repo = FilePartialsRepository(uow.connection)
            part_ids = None
            if partition_names is not None:
                part_ids = list(repo.partition_ids(ref.tbl_id, partition_names).values())
                if not part_ids:
                    return 0
            return repo.delete(ref.tbl_id, part_ids, paths)
