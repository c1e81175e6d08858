"""Catalog operations with Hive's defaults: qualified locations under the warehouse, directories, data on drop,
and the `transient_lastDdlTime` parameter Hive keeps on tables and partitions."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from metastore import locations, storage
from metastore.catalog import DEFAULT_CATALOG, Database, Partition, Table
from metastore.errors import InvalidInput, InvalidObject, InvalidOperation
from metastore.partnames import make_part_name, values_from_part_name
from metastore.service import spark_statistics
from metastore.service.indexes import (
    default_index_root,
    delete_index_files,
    drop_partition_indexes,
    drop_table_indexes,
)
from metastore.service.listing_cache import ListingCache, ListingReply, open_listing, reply_key
from metastore.service.streams import Stream, open_stream
from metastore.stats.spark_properties import STATISTICS_PREFIX
from metastore.store import Store, UnitOfWork
from metastore.store.partition_listing import (
    ALL_REQUEST,
    Listing,
    RowPage,
    filter_request,
    listing_key,
    ps_request,
)
from metastore.store.partitions import NamesPage

log = logging.getLogger(__name__)

EXTERNAL_TABLE = "EXTERNAL_TABLE"
VIRTUAL_VIEW = "VIRTUAL_VIEW"

#: Hive's hive_metastoreConstants.DDL_TIME: seconds since the epoch of the last DDL change.
DDL_TIME = "transient_lastDdlTime"


def _names_key(tbl_id: int, max_parts: int) -> tuple[str, int, int]:
    """The listing cache's key of a get_partition_names reply (the names depend on the table's partitions
    only, which the version covers; not on the table's name, database or catalog)."""
    return ("names", tbl_id, max_parts if max_parts >= 0 else -1)


def _is_external(table: Table) -> bool:
    return table.table_type == EXTERNAL_TABLE or table.parameters.get("EXTERNAL", "").upper() == "TRUE"


@contextmanager
def _directories(wanted: Sequence[str | None]) -> Iterator[list[str]]:
    """Create the data directories a catalog change needs before it is recorded, as Hive does (a location that
    is a file, or cannot be created, fails the call with StorageError, Hive's MetaException); yields those this
    call created and removes them again when the change fails."""
    made: list[str] = []
    try:
        for location in wanted:
            if location and storage.make_dir(location):
                made.append(location)
        yield made
    except BaseException:
        for location in made:
            _delete_directory(location)
        raise


def _delete_directory(location: str | None) -> None:
    """Delete a data directory tree (a dropped managed table's or partition's, or one made for a change that
    failed), wherever it is stored. As Hive, a failure to delete is logged and does not fail the call: the
    catalog change it follows is already recorded."""
    if not location:
        return
    try:
        storage.delete(location)
    except storage.StorageError as exc:
        log.warning("data left in place: %s", exc)


def _with_ddl_time(parameters: Mapping[str, str], now: int, *, renew_zero: bool = False) -> dict[str, str]:
    """Parameters with DDL_TIME set to `now` unless the client gave one. Hive 2.3 keeps a given value on
    create_table, add_partition(s) and alter_table, and on alter_partition(s)/rename_partition also replaces a
    given "0" (renew_zero)."""
    params = dict(parameters)
    given = params.get(DDL_TIME)
    if given is None or (renew_zero and given.strip().lstrip("+-").isdigit() and int(given) == 0):
        params[DDL_TIME] = str(now)
    return params


class CatalogService:
    """Databases, tables and partitions, one transaction per call."""

    def __init__(
        self, store: Store, warehouse: str, index_root: str | None = None, *, spark_statistics: bool = True,
        listing_cache: ListingCache | None = None,
    ) -> None:
        self.store = store
        #: encoded partition listings, validated against PARTITIONS.LISTING_VERSION on every call (PostgreSQL)
        self.listing_cache = listing_cache
        self.warehouse = locations.qualify_directory(warehouse)
        #: index files of dropped tables and partitions are deleted only inside it
        self.index_root = index_root or default_index_root(warehouse)
        #: Spark's statistics properties composed on table reads and absorbed on alters (Settings.spark_statistics)
        self.spark_statistics = spark_statistics

    def _database_location(self, db: Database) -> str:
        """Where a database's tables go by default: its location, else <warehouse>/<name>.db."""
        return locations.qualify(db.location_uri) or locations.child(self.warehouse, f"{db.name.lower()}.db")

    # ------------------------------------------------------------------ databases

    def create_database(self, db: Database) -> None:
        """Create a database; its location defaults to <warehouse>/<name>.db and is qualified (`file:/x`),
        as Hive's."""
        location = self._database_location(db)
        db = replace(db, location_uri=location, create_time=db.create_time or int(time.time()))
        with _directories([location]), self.store.transaction() as uow:
            uow.databases.create(db)

    def get_database(self, name: str, catalog: str = DEFAULT_CATALOG) -> Database:
        with self.store.read() as uow:
            return uow.databases.get(name, catalog=catalog)

    def list_databases(self, pattern: str | None = None, catalog: str = DEFAULT_CATALOG) -> list[str]:
        with self.store.read() as uow:
            return uow.databases.list_names(pattern, catalog=catalog)

    def alter_database(self, name: str, db: Database, catalog: str = DEFAULT_CATALOG) -> None:
        """Replace a database's definition, keeping its location as Hive 2.3 does.

        Hive 2.3's alter_database ignores a new locationUri (the database keeps the one it was created with);
        Hive 4 takes the new location. Where the two differ we follow 2.3 on the wire, so a location change
        sent here is dropped rather than applied."""
        with self.store.transaction() as uow:
            current = uow.databases.get(name, catalog=catalog)
            uow.databases.alter(name, replace(db, location_uri=current.location_uri), catalog=catalog)

    def drop_database(self, name: str, *, delete_data: bool, cascade: bool, catalog: str = DEFAULT_CATALOG) -> None:
        """Drop a database (with its tables when cascade); delete_data removes its managed data directories."""
        with self.store.transaction() as uow:
            managed: list[str | None] = []
            index_dirs: list[str] = []
            if cascade:
                names = uow.tables.list_names(name, catalog=catalog)
                for table_name in names:
                    index_dirs.extend(drop_table_indexes(uow, name, table_name, catalog))
                if delete_data:
                    managed = [t.sd.location for t in uow.tables.get_many(name, names, catalog=catalog)
                               if not _is_external(t)]
            db = uow.databases.drop(name, cascade=cascade, catalog=catalog)
        delete_index_files(index_dirs, self.index_root)
        if delete_data:
            for location in managed:
                _delete_directory(location)
            _delete_directory(db.location_uri)

    # ------------------------------------------------------------------ tables

    def create_table(self, table: Table) -> Table:
        """Create a table; a table without a location gets <database location>/<table name>, a given one is
        qualified (`/x` -> `file:/x`), views get none; `transient_lastDdlTime` is set unless given, as Hive's."""
        now = int(time.time())
        if table.table_type != VIRTUAL_VIEW:
            location = locations.qualify(table.sd.location)
            if not location:
                with self.store.read() as uow:
                    db = uow.databases.get(table.db_name, catalog=table.catalog_name)
                location = locations.child(self._database_location(db), table.table_name.lower())
            table = replace(table, sd=replace(table.sd, location=location))
        table = replace(
            table, create_time=table.create_time or now, parameters=_with_ddl_time(table.parameters, now)
        )
        directory = table.sd.location if table.table_type != VIRTUAL_VIEW else None
        with _directories([directory]), self.store.transaction() as uow:
            uow.tables.create(table)
        return table

    def get_table(self, db_name: str, table_name: str, catalog: str = DEFAULT_CATALOG) -> Table:
        """A table, its parameters with Spark's statistics properties composed from its column statistics."""
        with self.store.read() as uow:
            table = uow.tables.get(db_name, table_name, catalog=catalog)
            return spark_statistics.spark_view(uow, table) if self.spark_statistics else table

    def get_tables(self, db_name: str, table_names: Sequence[str], catalog: str = DEFAULT_CATALOG) -> list[Table]:
        """Tables by name, each as get_table answers it."""
        with self.store.read() as uow:
            tables = uow.tables.get_many(db_name, table_names, catalog=catalog)
            return [spark_statistics.spark_view(uow, t) for t in tables] if self.spark_statistics else tables

    def list_tables(
        self, db_name: str, pattern: str | None = None, table_type: str | None = None, catalog: str = DEFAULT_CATALOG
    ) -> list[str]:
        with self.store.read() as uow:
            return uow.tables.list_names(db_name, pattern, table_type=table_type, catalog=catalog)

    def alter_table(
        self, db_name: str, table_name: str, new_table: Table, *, cascade: bool = False, catalog: str = DEFAULT_CATALOG
    ) -> None:
        """Replace a table's definition; a rename of a managed table in its default location moves its data.
        A new location is qualified; `transient_lastDdlTime` is set when the new definition has none (Hive
        clients drop it before altering, so it is renewed; a value they send is kept, as Hive 2.3 does)."""
        new_table = replace(
            new_table,
            sd=replace(new_table.sd, location=locations.qualify(new_table.sd.location)),
            parameters=_with_ddl_time(new_table.parameters, int(time.time())),
        )
        with self.store.transaction() as uow:
            old = uow.tables.get(db_name, table_name, catalog=catalog)
            # Spark's statistics properties are never stored: a new analysis among them goes to TAB_COL_STATS.
            spark_analysis = spark_statistics.Absorbed()
            if self.spark_statistics:
                new_table, spark_analysis = spark_statistics.absorb_spark_statistics(uow, old, new_table)
            renamed = (new_table.db_name, new_table.table_name) != (old.db_name, old.table_name)
            moved_from = moved_to = None
            if (
                renamed
                and not _is_external(old)
                and locations.same_location(new_table.sd.location, old.sd.location)
            ):
                # Hive moves a managed table's directory with it when the location was not changed explicitly.
                db = uow.databases.get(new_table.db_name, catalog=catalog)
                moved_from = old.sd.location
                moved_to = locations.child(self._database_location(db), new_table.table_name.lower())
                new_table = replace(new_table, sd=replace(new_table.sd, location=moved_to))
                if old.partition_keys:
                    uow.partitions.relocate(
                        db_name, table_name, old_prefix=moved_from or "", new_prefix=moved_to, catalog=catalog
                    )
            uow.tables.alter(db_name, table_name, new_table, cascade=cascade, catalog=catalog)
            spark_statistics.write_absorbed(uow, new_table, spark_analysis)
            if moved_from and moved_to:
                # Inside the transaction: when the data cannot move, the rename is not recorded either.
                try:
                    storage.move_dir(moved_from, moved_to)
                except storage.StorageError as exc:
                    raise InvalidOperation(
                        f"cannot rename {db_name}.{table_name} to {new_table.db_name}.{new_table.table_name}: {exc}"
                    ) from None

    def update_table_parameters(
        self, db_name: str, table_name: str, changes: Mapping[str, str | None], *, catalog: str = DEFAULT_CATALOG
    ) -> None:
        """Set (a value) or remove (None) some of a table's parameters, the rest of its definition untouched: one
        locked update of TABLE_PARAMS instead of alter_table's rewrite of the whole definition. For parameters a
        statistics writer keeps (ANALYZE's fingerprint), not Spark's statistics properties, which alter_table
        absorbs (InvalidInput)."""
        with self.store.transaction() as uow:
            self.update_table_parameters_in(uow, db_name, table_name, changes, catalog=catalog)

    def update_table_parameters_in(
        self, uow: UnitOfWork, db_name: str, table_name: str, changes: Mapping[str, str | None], *,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """:meth:`update_table_parameters` as part of the caller's transaction ``uow``."""
        absorbed = [k for k in changes if k.startswith((STATISTICS_PREFIX, spark_statistics.SPARK_HISTOGRAM_PREFIX))]
        if absorbed:
            raise InvalidInput(f"{', '.join(absorbed)}: Spark's statistics properties are written with alter_table")
        uow.tables.update_parameters(db_name, table_name, dict(changes), catalog=catalog)

    def drop_table(self, db_name: str, table_name: str, *, delete_data: bool, catalog: str = DEFAULT_CATALOG) -> None:
        """Drop a table with its partitions and statistics; delete_data removes a managed table's data."""
        with self.store.transaction() as uow:
            index_dirs = drop_table_indexes(uow, db_name, table_name, catalog)
            table = uow.tables.drop(db_name, table_name, catalog=catalog)
        delete_index_files(index_dirs, self.index_root)
        if delete_data and not _is_external(table):
            _delete_directory(table.sd.location)

    # ------------------------------------------------------------------ partitions

    def _with_defaults(self, table: Table, partition: Partition, now: int) -> Partition:
        """Hive fills a new partition's storage from the table's, puts it under the table's location (a given
        location is qualified) and sets `transient_lastDdlTime` unless given."""
        if len(partition.values) != len(table.partition_keys):
            raise InvalidObject(
                f"partition values {partition.values} do not match the partition keys "
                f"{[k.name for k in table.partition_keys]} of {table.db_name}.{table.table_name}"
            )
        sd = partition.sd
        if not sd.cols and not sd.input_format and not sd.serde_info.serialization_lib:
            sd = replace(table.sd, location=None)
        if sd.location:
            sd = replace(sd, location=locations.qualify(sd.location))
        elif table.sd.location:
            sd = replace(sd, location=self._default_partition_location(table, partition.values))
        filled = replace(
            partition,
            db_name=table.db_name,
            table_name=table.table_name,
            sd=sd,
            create_time=partition.create_time or now,
            parameters=_with_ddl_time(partition.parameters, now),
        )
        if not self.spark_statistics:
            return filled
        return spark_statistics.absorb_partition_statistics(filled, f"{table.db_name}.{table.table_name}")

    @staticmethod
    def _default_partition_location(table: Table, values: Sequence[str]) -> str | None:
        """<table location>/<partition name>, qualified; None for a table without a location."""
        base = locations.qualify(table.sd.location)
        if not base:
            return None
        return locations.child(base, make_part_name([k.name for k in table.partition_keys], list(values)))

    def add_partitions(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], *, if_not_exists: bool = False,
        catalog: str = DEFAULT_CATALOG,
    ) -> list[Partition]:
        """Add partitions of one table in one transaction; returns those added."""
        if not partitions:
            return []
        with self.store.read() as uow:
            table = uow.tables.get(db_name, table_name, catalog=catalog)
        now = int(time.time())
        filled = [self._with_defaults(table, p, now) for p in partitions]
        with _directories([p.sd.location for p in filled]) as made:
            with self.store.transaction() as uow:
                added = uow.partitions.add(filled, if_not_exists=if_not_exists)
            # Directories made for partitions that already existed (if_not_exists skipped them) go again.
            kept = {p.sd.location for p in added}
            for location in made:
                if location not in kept:
                    _delete_directory(location)
        return added

    def append_partition(
        self, db_name: str, table_name: str, values: Sequence[str], catalog: str = DEFAULT_CATALOG
    ) -> Partition:
        """Add a partition with the table's storage (Hive's append_partition)."""
        part = Partition(db_name=db_name, table_name=table_name, values=list(values), catalog_name=catalog)
        (added,) = self.add_partitions(db_name, table_name, [part], catalog=catalog)
        return added

    def get_partition(
        self, db_name: str, table_name: str, values: Sequence[str], catalog: str = DEFAULT_CATALOG
    ) -> Partition:
        with self.store.read() as uow:
            return uow.partitions.get(db_name, table_name, values, catalog=catalog)

    def get_partition_by_name(self, db_name: str, table_name: str, name: str, catalog: str = DEFAULT_CATALOG) -> Partition:
        with self.store.read() as uow:
            return uow.partitions.get_by_name(db_name, table_name, name, catalog=catalog)

    def get_partitions_by_names(
        self, db_name: str, table_name: str, names: Sequence[str], catalog: str = DEFAULT_CATALOG
    ) -> list[Partition]:
        with self.store.read() as uow:
            return uow.partitions.get_by_names(db_name, table_name, names, catalog=catalog)

    def list_partitions(
        self, db_name: str, table_name: str, max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> list[Partition]:
        with self.store.read() as uow:
            return uow.partitions.list(db_name, table_name, max_parts=max_parts, catalog=catalog)

    def list_partition_names(
        self, db_name: str, table_name: str, max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> list[str]:
        with self.store.read() as uow:
            return uow.partitions.list_names(db_name, table_name, max_parts=max_parts, catalog=catalog)

    def _names_cache(self) -> ListingCache | None:
        return self.listing_cache if self.store.features.partition_names_versions else None

    def cached_partition_names(
        self, db_name: str, table_name: str, max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> bytes | None:
        """The encoded reply of get_partition_names (kept by a stream_partition_names reader through
        Stream.keep) if the listing cache holds it at the version the database reports now; None otherwise.
        One statement: the table lookup reads the version of the table's names (migration 0009) with it.
        NoSuchObject for a missing table."""
        cache = self._names_cache()
        if cache is None:
            return None
        with self.store.autocommit() as uow:
            ref, version = uow.partitions.names_version(db_name, table_name, catalog=catalog)
        if version is None:
            return None
        return cache.get(_names_key(ref.tbl_id, max_parts), version)

    def stream_partition_names(
        self, db_name: str, table_name: str, max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> Stream[NamesPage]:
        """list_partition_names a page at a time, inside one snapshot (close the stream when done). With the
        listing cache (PostgreSQL), stream.keep stores the reply the caller encodes from the pages, at the
        version of the table's names read in the same snapshot (see cached_partition_names)."""
        cache = self._names_cache()
        if cache is None:
            return open_stream(
                self.store.snapshot(),
                lambda uow: uow.partitions.stream_names(db_name, table_name, max_parts=max_parts, catalog=catalog),
            )
        read_at: list[tuple[int, int | None]] = []

        def start(uow: UnitOfWork) -> tuple[int, Iterator[NamesPage]]:
            ref, version = uow.partitions.names_version(db_name, table_name, catalog=catalog)
            read_at.append((ref.tbl_id, version))
            return uow.partitions.stream_names_of(ref, max_parts=max_parts)

        stream = open_stream(self.store.snapshot(), start)
        tbl_id, version = read_at[0]
        if version is not None:
            key = _names_key(tbl_id, max_parts)
            stream.keep = lambda reply: cache.put(key, version, reply)
            stream.keep_limit = cache.max_entry
        return stream

    def list_partitions_ps(
        self, db_name: str, table_name: str, values: Sequence[str], max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> list[Partition]:
        with self.store.read() as uow:
            return uow.partitions.list_by_partial_values(
                db_name, table_name, values, max_parts=max_parts, catalog=catalog
            )

    def list_partition_names_ps(
        self, db_name: str, table_name: str, values: Sequence[str], max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> list[str]:
        with self.store.read() as uow:
            return uow.partitions.list_names_by_partial_values(
                db_name, table_name, values, max_parts=max_parts, catalog=catalog
            )

    def list_partitions_by_filter(
        self, db_name: str, table_name: str, filter_text: str, max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> list[Partition]:
        with self.store.read() as uow:
            return uow.partitions.list_by_filter(db_name, table_name, filter_text, max_parts=max_parts, catalog=catalog)

    def stream_partitions_by_filter(
        self, db_name: str, table_name: str, filter_text: str, max_parts: int = -1, catalog: str = DEFAULT_CATALOG
    ) -> Stream[list[Partition]]:
        """list_partitions_by_filter a page at a time, inside one snapshot (close the stream when done)."""
        return open_stream(
            self.store.snapshot(),
            lambda uow: uow.partitions.stream_by_filter(
                db_name, table_name, filter_text, max_parts=max_parts, catalog=catalog
            ),
        )

    def _partition_listing(
        self, request: tuple[Any, ...], db_name: str, table_name: str, max_parts: int, send_catalog: bool,
        catalog: str, make: Callable[[UnitOfWork], Listing],
    ) -> bytes | ListingReply:
        """A partition listing's whole encoded reply from the listing cache when it holds it at the version the
        database reports now, checked before any listing is opened: one statement (the table, its partition
        keys and its listing version: PartitionRepository.listing_lookup), no snapshot, no filter compiled.
        Otherwise the listing made by `make`, opened in a snapshot (a missing table or a bad filter is raised
        here) and read a page at a time (close the reply when done). `request` is the listing's request key
        (partition_listing.filter_request, ALL_REQUEST, ps_request); send_catalog whether the reply sends
        catName (False for a Hive 2 client, whose replies the processor clears)."""
        cache = self.listing_cache
        if cache is not None and self.store.features.autocommit_reads:  # listing versions are PostgreSQL's
            with self.store.autocommit() as uow:  # one statement: one snapshot
                found = uow.partitions.listing_lookup(db_name, table_name, catalog=catalog)
            if found is not None:
                ref, keys, version = found
                hit = cache.get(reply_key(ref, listing_key(request, max_parts, keys), send_catalog), version)
                if hit is not None:
                    return hit
        return open_listing(self.store.snapshot(), make, cache)

    def partition_listing_by_filter(
        self, db_name: str, table_name: str, filter_text: str, max_parts: int = -1, *, send_catalog: bool = True,
        catalog: str = DEFAULT_CATALOG,
    ) -> bytes | ListingReply:
        """list_partitions_by_filter: its cached reply's bytes, or rows for metastore.wire.partition_bytes (or
        the reply cached meanwhile) a page at a time inside one snapshot (see _partition_listing)."""
        return self._partition_listing(
            filter_request(filter_text), db_name, table_name, max_parts, send_catalog, catalog,
            lambda uow: uow.partitions.listing_by_filter(
                db_name, table_name, filter_text, max_parts=max_parts, catalog=catalog
            ),
        )

    def partition_listing(
        self, db_name: str, table_name: str, max_parts: int = -1, *, send_catalog: bool = True,
        catalog: str = DEFAULT_CATALOG,
    ) -> bytes | ListingReply:
        """list_partitions as a listing (see partition_listing_by_filter)."""
        return self._partition_listing(
            ALL_REQUEST, db_name, table_name, max_parts, send_catalog, catalog,
            lambda uow: uow.partitions.listing(db_name, table_name, max_parts=max_parts, catalog=catalog),
        )

    def partition_listing_ps(
        self, db_name: str, table_name: str, values: Sequence[str], max_parts: int = -1, *,
        send_catalog: bool = True, catalog: str = DEFAULT_CATALOG,
    ) -> bytes | ListingReply:
        """list_partitions_ps as a listing (see partition_listing_by_filter)."""
        return self._partition_listing(
            ps_request(values), db_name, table_name, max_parts, send_catalog, catalog,
            lambda uow: uow.partitions.listing_by_partial_values(
                db_name, table_name, values, max_parts=max_parts, catalog=catalog
            ),
        )

    def partition_rows_by_names(
        self, db_name: str, table_name: str, names: Sequence[str], catalog: str = DEFAULT_CATALOG
    ) -> RowPage:
        """get_partitions_by_names as rows for metastore.wire.partition_bytes."""
        with self.store.read() as uow:
            return uow.partitions.rows_by_names(db_name, table_name, names, catalog=catalog)

    def count_partitions_by_filter(
        self, db_name: str, table_name: str, filter_text: str, catalog: str = DEFAULT_CATALOG
    ) -> int:
        with self.store.read() as uow:
            return uow.partitions.count_by_filter(db_name, table_name, filter_text, catalog=catalog)

    def partition_values(
        self,
        db_name: str,
        table_name: str,
        keys: Sequence[str],
        *,
        filter_text: str | None = None,
        distinct: bool = True,
        order_by: Sequence[str] = (),
        ascending: bool = True,
        max_parts: int = -1,
        catalog: str = DEFAULT_CATALOG,
    ) -> list[list[str]]:
        """Values of some partition keys over the partitions (optionally those matching a Hive filter): Hive's
        get_partition_values. Rows follow partition-name order unless order_by names keys (compared as the
        stored strings, as Hive's direct SQL does); distinct drops repeated rows; max_parts >= 0 limits them."""
        with self.store.read() as uow:
            table = uow.tables.get(db_name, table_name, catalog=catalog)
            all_keys = [k.name.lower() for k in table.partition_keys]
            if not all_keys:
                raise InvalidObject(f"{table.db_name}.{table.table_name} is not partitioned")
            if filter_text:
                names = uow.partitions.list_names_by_filter(db_name, table_name, filter_text, catalog=catalog)
            else:
                names = uow.partitions.list_names(db_name, table_name, catalog=catalog)
        position = {}
        for key in [*keys, *order_by]:
            if key.lower() not in all_keys:
                raise InvalidObject(
                    f"{key!r} is not a partition key of {table.db_name}.{table.table_name} (keys: {all_keys})"
                )
            position[key] = all_keys.index(key.lower())
        values = [values_from_part_name(n, all_keys) for n in names]
        if order_by:
            order = [position[k] for k in order_by]
            values.sort(key=lambda v: [v[i] for i in order], reverse=not ascending)
        rows = [[v[position[k]] for k in keys] for v in values]
        if distinct:
            rows = [list(r) for r in dict.fromkeys(tuple(r) for r in rows)]
        return rows if max_parts < 0 else rows[:max_parts]

    def _altered(self, partition: Partition, now: int) -> Partition:
        """A partition's new definition as Hive 2.3 stores it: location qualified, `transient_lastDdlTime`
        renewed when missing or "0"; Spark's statistics properties in Hive's numRows/totalSize."""
        altered = replace(
            partition,
            sd=replace(partition.sd, location=locations.qualify(partition.sd.location)),
            parameters=_with_ddl_time(partition.parameters, now, renew_zero=True),
        )
        if not self.spark_statistics:
            return altered
        return spark_statistics.absorb_partition_statistics(
            altered, f"{partition.db_name}.{partition.table_name} partition {partition.values}"
        )

    def alter_partitions(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], catalog: str = DEFAULT_CATALOG
    ) -> None:
        """Replace the definitions of existing partitions (found by their values) in one transaction."""
        with self.store.transaction() as uow:
            self.alter_partitions_in(uow, db_name, table_name, partitions, catalog=catalog)

    def alter_partitions_in(
        self, uow: UnitOfWork, db_name: str, table_name: str, partitions: Sequence[Partition],
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """:meth:`alter_partitions` as part of the caller's transaction ``uow``."""
        now = int(time.time())
        uow.partitions.alter_many(db_name, table_name, [self._altered(p, now) for p in partitions], catalog=catalog)

    def alter_partition_parameters_in(
        self, uow: UnitOfWork, db_name: str, table_name: str, partitions: Sequence[Partition],
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """:meth:`alter_partitions_in` for partitions that differ from their stored definitions only in their
        parameters (an ANALYZE's partitions as it listed them, with new statistics parameters): the parameters
        alter_partitions would store replace the stored ones and the rest of each definition is not rewritten.
        A partition whose definition alter_partitions would still change (a location to qualify) is altered."""
        now = int(time.time())
        altered = [self._altered(p, now) for p in partitions]
        same = [a for a, p in zip(altered, partitions, strict=True) if a.sd == p.sd]
        if same:
            uow.partitions.replace_parameters(db_name, table_name, same, catalog=catalog)
        if len(same) < len(altered):
            uow.partitions.alter_many(db_name, table_name, [a for a, p in zip(altered, partitions, strict=True)
                                                            if a.sd != p.sd], catalog=catalog)

    def rename_partition(
        self, db_name: str, table_name: str, values: Sequence[str], new_partition: Partition,
        catalog: str = DEFAULT_CATALOG,
    ) -> None:
        """Give a partition new values, as Hive 2.3's HiveAlterHandler.alterPartition does: a managed table's
        partition moves to its new default location <table location>/<new name> (whatever location it had or
        the request gives) and its data directory moves with it; an external table's partition keeps its
        location. InvalidOperation, with nothing changed, when the new directory already exists or the data
        directory cannot be moved (the rename is undone then, as Hive 2.3 reverts it)."""
        now = int(time.time())
        new_partition = self._altered(new_partition, now)
        with self.store.read() as uow:
            table = uow.tables.get(db_name, table_name, catalog=catalog)
            old = uow.partitions.get(db_name, table_name, values, catalog=catalog)
        source = target = None
        if _is_external(table):
            new_partition = replace(new_partition, sd=replace(new_partition.sd, location=old.sd.location))
        else:
            target = self._default_partition_location(table, new_partition.values)
            if target is not None:
                new_partition = replace(new_partition, sd=replace(new_partition.sd, location=target))
                if not locations.same_location(target, old.sd.location):
                    source = old.sd.location
                    try:
                        taken = storage.exists(target)
                    except storage.StorageError as exc:
                        raise InvalidOperation(f"cannot rename partition {list(values)}: {exc}") from None
                    if taken:
                        raise InvalidOperation(
                            f"new location for partition {make_part_name([k.name for k in table.partition_keys], list(new_partition.values))} "
                            f"of {table.db_name}.{table.table_name} already exists: {target}"
                        )
        with self.store.transaction() as uow:
            uow.partitions.rename(db_name, table_name, values, new_partition, catalog=catalog)
        if source is not None and target is not None:
            try:
                storage.move_dir(source, target)
            except storage.StorageError as exc:
                # The catalog already says the new name and place: put the old ones back, so that the
                # partition and its data stay where the catalog points (one directory move cannot be part of
                # the database transaction).
                with self.store.transaction() as uow:
                    uow.partitions.rename(db_name, table_name, new_partition.values, old, catalog=catalog)
                raise InvalidOperation(
                    f"cannot move the data of partition {make_part_name([k.name for k in table.partition_keys], list(values))} "
                    f"of {table.db_name}.{table.table_name} ({exc}); the partition keeps its name and location"
                ) from None

    def drop_partitions(
        self,
        db_name: str,
        table_name: str,
        *,
        names: Sequence[str] | None = None,
        values: Sequence[str] | None = None,
        delete_data: bool,
        if_exists: bool = False,
        catalog: str = DEFAULT_CATALOG,
    ) -> list[Partition]:
        """Drop partitions by names or one by values, with their statistics; delete_data removes their data."""
        with self.store.transaction() as uow:
            table = uow.tables.get(db_name, table_name, catalog=catalog)
            if values is not None:
                dropped = [uow.partitions.drop(db_name, table_name, values, catalog=catalog)]
            else:
                wanted = list(names or [])
                if if_exists:
                    existing = {p for p in uow.partitions.list_names(db_name, table_name, catalog=catalog)}
                    wanted = [n for n in wanted if n in existing]
                elif not wanted:
                    return []
                dropped = uow.partitions.drop_by_names(db_name, table_name, wanted, catalog=catalog) if wanted else []
            keys = [k.name for k in table.partition_keys]
            index_files = drop_partition_indexes(
                uow, db_name, table_name, [make_part_name(keys, list(p.values)) for p in dropped], catalog
            )
        delete_index_files(index_files, self.index_root)
        if delete_data and not _is_external(table):
            for p in dropped:
                _delete_directory(p.sd.location)
        return dropped
