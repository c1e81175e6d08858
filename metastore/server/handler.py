"""ThriftHiveMetastore handler: Thrift structs in, domain calls, Thrift structs out.

Domain errors become the Thrift exception each method declares, in one place (`_declared_exception`), so a
client always gets an exception it can decode, never an "unknown result".
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import io
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException, TType

from metastore import __version__
from metastore.api.fb303.ttypes import fb_status
from metastore.api.hive_metastore import ThriftHiveMetastore as gen  # noqa: N813 - the generated service module
from metastore.api.hive_metastore import ttypes as tt
from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE, Partition
from metastore.config import Settings
from metastore.errors import (
    AlreadyExists,
    InvalidInput,
    InvalidObject,
    InvalidOperation,
    MetastoreError,
    NoSuchObject,
    StoreUnavailable,
)
from metastore.partnames import parse_part_name
from metastore.service import Metastore, StatsWrite, transactional
from metastore.service.listing_cache import ListingReply
from metastore.service.meta_conf import ConnectionMetaConf
from metastore.service.statistics import PartitionStatsPage
from metastore.service.streams import Stream
from metastore.service.table_filter import table_names_by_filter
from metastore.stats.model import ColumnStatsEntry
from metastore.store.partition_listing import RowPage
from metastore.store.partitions import NamesPage
from metastore.wire import catalog as convert
from metastore.wire import file_partials as convert_partials
from metastore.wire import functions as convert_functions
from metastore.wire import indexes as convert_indexes
from metastore.wire.encoded import (
    CLEARS_CATALOG,
    EncodedResult,
    StreamedResult,
    encode_obj,
    encode_struct,
    list_header,
    partitions_stats_entries,
    partitions_stats_map_header,
    partitions_stats_result,
    string_list_body,
    table_stats_result,
)
from metastore.wire.partition_bytes import PartitionEncoder
from metastore.wire.stats import entry_from_thrift, entry_to_thrift

log = logging.getLogger("metastore.server")

# For each domain error, the Thrift exceptions that may carry it, best first; MetaException is the fallback.
_PREFERRED: dict[type[MetastoreError], tuple[type, ...]] = {
    # Hive itself answers a missing table with InvalidObjectException in add_partition(s) and with
    # InvalidOperationException in alter_table/alter_partition(s), the exceptions those methods declare.
    NoSuchObject: (
        tt.NoSuchObjectException, tt.UnknownTableException, tt.UnknownDBException, tt.InvalidObjectException,
        tt.InvalidOperationException,
    ),
    AlreadyExists: (tt.AlreadyExistsException,),
    InvalidInput: (tt.InvalidInputException, tt.InvalidObjectException, tt.InvalidOperationException),
    InvalidObject: (tt.InvalidObjectException, tt.InvalidInputException, tt.InvalidOperationException),
    InvalidOperation: (tt.InvalidOperationException, tt.InvalidObjectException),
}


@functools.cache
def _declared_exceptions(method: str) -> tuple[type, ...]:
    result = getattr(gen, f"{method}_result", None)
    spec = getattr(result, "thrift_spec", None) or ()
    return tuple(f[3][0] for f in spec if f and f[0] != 0 and isinstance(f[3], list | tuple) and inspect.isclass(f[3][0]))


# Messages often quote what the client sent; a 60 MB name must not come back in a 60 MB error.
_MAX_MESSAGE = 4000


def _bounded(message: str) -> str:
    if len(message) <= _MAX_MESSAGE:
        return message
    return f"{message[:_MAX_MESSAGE]}... ({len(message) - _MAX_MESSAGE} more characters)"


def _declared_exception(method: str, exc: MetastoreError) -> Exception:
    """The Thrift exception `method` declares that best carries `exc`."""
    declared = _declared_exceptions(method)
    message = _bounded(str(exc))
    for kind, candidates in _PREFERRED.items():
        if isinstance(exc, kind):
            for cls in candidates:
                if cls in declared:
                    return cls(message=message)
    if tt.MetaException in declared:
        return tt.MetaException(message=message)
    if declared:
        return declared[0](message=message)
    return TApplicationException(TApplicationException.INTERNAL_ERROR, message)


def _required_arguments(fn: Callable) -> list[tuple[int, str]]:
    """(position, name) of the arguments whose annotation does not admit None."""
    params = list(inspect.signature(fn).parameters.values())[1:]  # without self
    return [
        (i, p.name)
        for i, p in enumerate(params)
        if p.default is inspect.Parameter.empty and "None" not in str(p.annotation)
    ]


def _check_arguments(method: str, required: list[tuple[int, str]], args: tuple) -> None:
    """Refuse missing arguments and request structs lacking required fields, as Hive's Java server does.

    A missing argument is also what a client sending the wrong wire type produces (the reader skips it)."""
    missing = [pname for i, pname in required if i >= len(args) or args[i] is None]
    if missing:
        names = ", ".join(f"'{m}'" for m in missing)
        raise InvalidInput(f"{method}: argument(s) {names} missing or not of the declared type")
    for value in args:
        if value is not None and hasattr(value, "thrift_spec") and hasattr(value, "validate"):
            try:
                value.validate()
            except TProtocolException as exc:
                raise InvalidInput(f"{method}: {type(value).__name__}: {exc.message or exc}") from None


def _thrift_method(fn: Callable) -> Callable:
    name = fn.__name__
    required = _required_arguments(fn)

    @functools.wraps(fn)
    def call(self: Handler, *args: object) -> object:
        try:
            _check_arguments(name, required, args)
            return fn(self, *args)
        except StoreUnavailable as exc:
            # The client learns only that the database is unavailable; host, port, driver text and SQL go here.
            log.warning("%s: %s (%s)", name, exc, exc.__cause__)
            raise _declared_exception(name, exc) from None
        except MetastoreError as exc:
            raise _declared_exception(name, exc) from None
        except ValueError as exc:  # a malformed value inside an otherwise well-formed request
            raise _declared_exception(name, InvalidInput(str(exc))) from None

    return call


def _engine(value: str | None) -> str:
    return value or DEFAULT_ENGINE


def _catalog(value: str | None) -> str:
    return (value or DEFAULT_CATALOG).lower()


def _part_names(names: list[str] | None) -> list[str]:
    """The partition names of a statistics request (the statistics service checks every name of a call)."""
    return list(names or [])


def _max(value: int | None) -> int:
    return -1 if value is None or value < 0 else value


def _keeping(stream: Stream[Any], pieces: Iterator[bytes]) -> Iterator[bytes]:
    """The pieces as they come; at the end, the whole reply goes to stream.keep (the reply cache) if it is
    at most stream.keep_limit bytes (a larger one is not collected). Collected into one growing buffer, kept as
    it is: a 23 MB reply then costs the server 23 MB, not the pieces and their joined copy at once."""
    if stream.keep is None:
        yield from pieces
        return
    kept: io.BytesIO | None = io.BytesIO()
    for piece in pieces:
        if kept is not None:
            if kept.tell() + len(piece) <= stream.keep_limit:
                kept.write(piece)
            else:
                kept = None
        yield piece
    if kept is not None:
        stream.keep(kept.getvalue())  # CPython hands over the buffer itself, without a copy


def _streamed_list(
    element_type: int, stream: Stream[Any], convert: Callable[[Any], list[Any]],
    encode: Callable[[list[Any]], bytes],
) -> StreamedResult:
    """A list reply of the stream's items: each page converted to Thrift values by `convert` and encoded by
    `encode` as it is read."""
    result = StreamedResult(TType.LIST, (), stream.close)

    def pieces() -> Iterator[bytes]:
        yield list_header(element_type, stream.count)
        sent = 0
        for page in stream.pages:
            if sent + len(page) > stream.count:
                raise RuntimeError(f"a listing of {stream.count} items read more")  # the snapshot forbids it
            sent += len(page)
            values = convert(page)
            if result.visit is not None:
                result.visit(values)
            yield encode(values)
        if sent != stream.count:
            raise RuntimeError(f"a listing of {stream.count} items read {sent}")

    result.pieces = pieces()
    return result


def _names_body(pages: list[NamesPage]) -> bytes:
    """The list<string> elements of a page of partition names."""
    (page,) = pages
    return string_list_body(page.names)


def _partition_encoder(page: RowPage, result: StreamedResult) -> PartitionEncoder:
    """The encoder of a partition listing's pages: catName left out when the processor would clear catalog
    fields (result.visit, set for a Hive 2 client before the pieces are written)."""
    return PartitionEncoder(
        page.db_name, page.table_name, None if result.visit is not None else page.catalog, dict(page.columns)
    )


def _sends_catalog() -> bool:
    """Whether this call's reply sends catName: not to a Hive 2 client (the processor sets CLEARS_CATALOG)."""
    return not CLEARS_CATALOG.get()


def _listing_reply(listing: bytes | ListingReply) -> StreamedResult:
    """A list<Partition> reply: the listing cache's bytes found before the listing was opened, or from the
    opened listing the cache's reply or each page encoded from its rows as it is read (and the whole reply kept
    in the cache when it may be)."""
    if isinstance(listing, bytes):
        return StreamedResult(TType.LIST, (listing,))
    result = StreamedResult(TType.LIST, (), listing.close)

    def pieces() -> Iterator[bytes]:
        catalog = result.visit is None  # a Hive 2 client's answers leave catName out
        hit = listing.cached(catalog)
        if hit is not None:
            yield hit
            return
        count, pages = listing.open()
        kept: list[bytes] | None = [] if listing.caching else None
        header = list_header(TType.STRUCT, count)
        size = len(header)
        if kept is not None:
            kept.append(header)
        yield header
        encoder: PartitionEncoder | None = None
        sent = 0
        for page in pages:
            if sent + len(page) > count:
                raise RuntimeError(f"a listing of {count} items read more")  # the snapshot forbids it
            sent += len(page)
            if encoder is None:
                encoder = _partition_encoder(page, result)
            else:
                encoder.columns.update(page.columns)
            piece = encoder.encode(page.rows)
            if kept is not None:
                kept.append(piece)
                size += len(piece)
                if size > listing.keep_limit:
                    kept = None  # too large to keep: not collected
            yield piece
        if sent != count:
            raise RuntimeError(f"a listing of {count} items read {sent}")
        if kept is not None:
            listing.keep(catalog, b"".join(kept))

    result.pieces = pieces()
    return result


# Configuration keys clients may ask for with getMetaConf / get_config_value.
def _meta_conf(settings: Settings) -> dict[str, str]:
    return {
        "hive.metastore.warehouse.dir": settings.warehouse,
        "metastore.warehouse.dir": settings.warehouse,
        "hive.metastore.stats.fetch.bitvector": str(settings.fetch_bitvector).lower(),
        "metastore.stats.fetch.bitvector": str(settings.fetch_bitvector).lower(),
        "metastore.stats.fetch.kll": str(settings.fetch_kll).lower(),
        "hive.metastore.try.direct.sql": "true",
        "hive.metastore.aggregate.stats.cache.enabled": "false",
        "hive.metastore.stats.ndv.tuner": "0.0",
        "hive.metastore.stats.ndv.densityfunction": "false",
        "hive.metastore.stats.legacy.timestamp.as.long": str(settings.stats_timestamp_as_long).lower(),
        "hive.metastore.client.socket.timeout": "600s",
        "metastore.batch.retrieve.max": "300",
    }


class Handler:
    """Implements ThriftHiveMetastore.Iface over the domain services."""

    def __init__(self, metastore: Metastore, settings: Settings) -> None:
        self.ms = metastore
        self.settings = settings
        self._started = int(time.time())
        self._conf = _meta_conf(settings)
        self._meta_conf = ConnectionMetaConf(self._conf)
        # Statistics as this server answers them (bound once: a large reply converts thousands of entries).
        self._to_thrift = functools.partial(
            entry_to_thrift, bit_vectors=settings.fetch_bitvector, histograms=settings.fetch_kll,
            timestamp_as_long=settings.stats_timestamp_as_long,
        )

    def __getattr__(self, name: str) -> Callable:
        # Methods of the IDL this server does not implement answer with a clear error instead of crashing
        # the generated processor with an AttributeError.
        if hasattr(gen.Iface, name):

            def unsupported(*_args: object) -> None:
                raise TApplicationException(
                    TApplicationException.UNKNOWN_METHOD, f"{name} is not supported by this metastore"
                )

            return unsupported
        raise AttributeError(name)

    # ------------------------------------------------------------------ fb303

    def getName(self) -> str:  # noqa: N802 - Thrift names
        return "metastore"

    def getVersion(self) -> str:  # noqa: N802
        return __version__

    def getStatus(self) -> int:  # noqa: N802
        return fb_status.ALIVE

    def getStatusDetails(self) -> str:  # noqa: N802
        # Which worker process answered: helps operators (and tests) see that every worker serves.
        return f"alive (worker pid {os.getpid()})"

    def getCounters(self) -> dict[str, int]:  # noqa: N802
        return {}

    def getCounter(self, key: str) -> int:  # noqa: N802
        return 0

    def setOption(self, key: str, value: str) -> None:  # noqa: N802
        return None

    def getOption(self, key: str) -> str:  # noqa: N802
        return ""

    def getOptions(self) -> dict[str, str]:  # noqa: N802
        return {}

    def getCpuProfile(self, profileDurationInSec: int) -> str:  # noqa: N802, N803
        return ""

    def aliveSince(self) -> int:  # noqa: N802
        return self._started

    def reinitialize(self) -> None:
        return None

    def shutdown(self) -> None:
        # A remote shutdown request is ignored: stop the server with SIGTERM.
        log.warning("ignoring a shutdown() call from a client")

    # ------------------------------------------------------------------ session and configuration

    @_thrift_method
    def set_ugi(self, user_name: str, group_names: Sequence[str] | None) -> list[str]:
        # HMS 2.3.10 answers the group names as sent (checked by the differential interop test).
        return list(group_names or [])

    @_thrift_method
    def getMetaConf(self, key: str) -> str:  # noqa: N802
        return self._meta_conf.get(key)

    @_thrift_method
    def setMetaConf(self, key: str, value: str) -> None:  # noqa: N802
        self._meta_conf.set(key, value)

    @_thrift_method
    def get_config_value(self, name: str, defaultValue: str | None) -> str | None:  # noqa: N803
        return self._conf.get(name, defaultValue)

    # ------------------------------------------------------------------ functions and legacy types

    @_thrift_method
    def create_function(self, func: tt.Function) -> None:
        self.ms.functions.create(convert_functions.function_from_thrift(func))

    @_thrift_method
    def get_function(self, dbName: str, funcName: str) -> tt.Function:  # noqa: N803
        return convert_functions.function_to_thrift(self.ms.functions.get(dbName, funcName))

    @_thrift_method
    def get_functions(self, dbName: str, pattern: str | None) -> list[str]:  # noqa: N803
        return self.ms.functions.names(dbName, pattern)

    @_thrift_method
    def get_all_functions(self) -> tt.GetAllFunctionsResponse:
        return tt.GetAllFunctionsResponse(functions=[convert_functions.function_to_thrift(f) for f in self.ms.functions.all()])

    @_thrift_method
    def alter_function(self, dbName: str, funcName: str, newFunc: tt.Function) -> None:  # noqa: N803
        self.ms.functions.alter(dbName, funcName, convert_functions.function_from_thrift(newFunc))

    @_thrift_method
    def drop_function(self, dbName: str, funcName: str) -> None:  # noqa: N803
        self.ms.functions.drop(dbName, funcName)

    @_thrift_method
    def create_type(self, type: tt.Type) -> bool:  # noqa: A002 - Hive's argument name
        self.ms.types.create(convert_functions.type_from_thrift(type))
        return True

    @_thrift_method
    def get_type(self, name: str) -> tt.Type:
        return convert_functions.type_to_thrift(self.ms.types.get(name))

    @_thrift_method
    def drop_type(self, type: str) -> bool:  # noqa: A002 - Hive's argument name
        self.ms.types.drop(type)
        return True

    @_thrift_method
    def get_type_all(self, name: str) -> dict[str, tt.Type]:
        return {k: convert_functions.type_to_thrift(v) for k, v in self.ms.types.all_of(name).items()}

    @_thrift_method
    def get_current_notificationEventId(self) -> tt.CurrentNotificationEventId:  # noqa: N802
        return tt.CurrentNotificationEventId(eventId=0)

    @_thrift_method
    def get_primary_keys(self, request: tt.PrimaryKeysRequest) -> tt.PrimaryKeysResponse:
        self.ms.catalog.get_table(request.db_name, request.tbl_name, _catalog(request.catName))
        return tt.PrimaryKeysResponse(primaryKeys=[])

    @_thrift_method
    def get_foreign_keys(self, request: tt.ForeignKeysRequest) -> tt.ForeignKeysResponse:
        return tt.ForeignKeysResponse(foreignKeys=[])

    @_thrift_method
    def get_indexes(self, db_name: str, tbl_name: str, max_indexes: int) -> list:
        self.ms.catalog.get_table(db_name, tbl_name)
        return []

    @_thrift_method
    def get_index_names(self, db_name: str, tbl_name: str, max_indexes: int) -> list[str]:
        self.ms.catalog.get_table(db_name, tbl_name)
        return []

    # ------------------------------------------------------------------ databases

    @_thrift_method
    def create_database(self, database: tt.Database) -> None:
        self.ms.catalog.create_database(convert.database_from_thrift(database))

    @_thrift_method
    def get_database(self, name: str) -> tt.Database:
        return convert.database_to_thrift(self.ms.catalog.get_database(name))

    @_thrift_method
    def get_databases(self, pattern: str | None) -> list[str]:
        return self.ms.catalog.list_databases(pattern)

    @_thrift_method
    def get_all_databases(self) -> list[str]:
        return self.ms.catalog.list_databases()

    @_thrift_method
    def alter_database(self, dbname: str, db: tt.Database) -> None:
        self.ms.catalog.alter_database(dbname, convert.database_from_thrift(db))

    @_thrift_method
    def drop_database(self, name: str, deleteData: bool | None, cascade: bool | None) -> None:  # noqa: N803
        self.ms.catalog.drop_database(name, delete_data=bool(deleteData), cascade=bool(cascade))

    # ------------------------------------------------------------------ tables

    @_thrift_method
    def create_table(self, tbl: tt.Table) -> None:
        self.ms.catalog.create_table(transactional.checked_for_create(convert.table_from_thrift(tbl)))

    @_thrift_method
    def create_table_with_environment_context(self, tbl: tt.Table, environment_context: object | None) -> None:
        self.ms.catalog.create_table(transactional.checked_for_create(convert.table_from_thrift(tbl)))

    @_thrift_method
    def get_table(self, dbname: str, tbl_name: str) -> tt.Table:
        return convert.table_to_thrift(self.ms.catalog.get_table(dbname, tbl_name))

    @_thrift_method
    def get_table_req(self, req: tt.GetTableRequest) -> tt.GetTableResult:
        table = self.ms.catalog.get_table(req.dbName, req.tblName, _catalog(req.catName))
        return tt.GetTableResult(table=convert.table_to_thrift(table))

    @_thrift_method
    def get_tables(self, db_name: str, pattern: str | None) -> list[str]:
        return self.ms.catalog.list_tables(db_name, pattern)

    @_thrift_method
    def get_table_names_by_filter(self, dbname: str | None, filter: str | None, max_tables: int | None) -> list[str]:  # noqa: A002
        if not dbname:
            raise NoSuchObject("DB name is null or empty")  # UnknownDBException, as Hive
        if filter is None:
            raise InvalidOperation("null cannot apply null filter")
        return table_names_by_filter(self.ms.catalog, dbname, filter, _max(max_tables))

    @_thrift_method
    def get_tables_by_type(self, db_name: str, pattern: str | None, tableType: str | None) -> list[str]:  # noqa: N803
        return self.ms.catalog.list_tables(db_name, pattern, tableType or None)

    @_thrift_method
    def get_all_tables(self, db_name: str) -> list[str]:
        return self.ms.catalog.list_tables(db_name)

    @_thrift_method
    def get_table_meta(self, db_patterns: str | None, tbl_patterns: str | None, tbl_types: Sequence[str] | None) -> list[tt.TableMeta]:
        out: list[tt.TableMeta] = []
        types = set(tbl_types or [])
        for db in self.ms.catalog.list_databases("*" if db_patterns is None else db_patterns):
            names = self.ms.catalog.list_tables(db, "*" if tbl_patterns is None else tbl_patterns)
            for t in self.ms.catalog.get_tables(db, names):
                if types and t.table_type not in types:
                    continue
                out.append(
                    tt.TableMeta(
                        dbName=t.db_name, tableName=t.table_name, tableType=t.table_type,
                        comments=t.parameters.get("comment"), catName=t.catalog_name,
                    )
                )
        return out

    @_thrift_method
    def get_table_objects_by_name(self, dbname: str | None, tbl_names: Sequence[str] | None) -> list[tt.Table]:
        # Hive 2.3's checks and messages (its own TestHiveMetaStore asserts them).
        if not dbname:
            raise NoSuchObject("DB name is null or empty")  # UnknownDBException
        if tbl_names is None:
            raise InvalidOperation(f"{dbname} cannot find null tables")
        try:
            self.ms.catalog.get_database(dbname)
        except NoSuchObject:
            raise NoSuchObject(f"Could not find database {dbname}") from None
        return [convert.table_to_thrift(t) for t in self.ms.catalog.get_tables(dbname, list(tbl_names))]

    @_thrift_method
    def get_table_objects_by_name_req(self, req: tt.GetTablesRequest) -> tt.GetTablesResult:
        names = list(req.tblNames or [])
        if not names:
            names = self.ms.catalog.list_tables(req.dbName, getattr(req, "tablesPattern", None), catalog=_catalog(req.catName))
        tables = self.ms.catalog.get_tables(req.dbName, names, _catalog(req.catName))
        return tt.GetTablesResult(tables=[convert.table_to_thrift(t) for t in tables])

    @_thrift_method
    def get_fields(self, db_name: str, table_name: str) -> list[tt.FieldSchema]:
        table = self.ms.catalog.get_table(db_name, table_name)
        return [convert.field_to_thrift(c) for c in table.sd.cols]

    @_thrift_method
    def get_fields_with_environment_context(self, db_name: str, table_name: str, environment_context: object | None) -> list[tt.FieldSchema]:
        table = self.ms.catalog.get_table(db_name, table_name)
        return [convert.field_to_thrift(c) for c in table.sd.cols]

    @_thrift_method
    def get_schema(self, db_name: str, table_name: str) -> list[tt.FieldSchema]:
        table = self.ms.catalog.get_table(db_name, table_name)
        return [convert.field_to_thrift(c) for c in (*table.sd.cols, *table.partition_keys)]

    @_thrift_method
    def get_schema_with_environment_context(self, db_name: str, table_name: str, environment_context: object | None) -> list[tt.FieldSchema]:
        table = self.ms.catalog.get_table(db_name, table_name)
        return [convert.field_to_thrift(c) for c in (*table.sd.cols, *table.partition_keys)]

    def _alter_table(self, dbname: str, tbl_name: str, new_tbl: tt.Table, cascade: bool) -> None:
        # Hive's transactional checks come first: its own tests alter with a Table that holds only parameters.
        params = transactional.checked_alter_parameters(
            self.ms.catalog.get_table(dbname, tbl_name).parameters if new_tbl.parameters else {},
            new_tbl.parameters, lambda: convert.table_from_thrift(new_tbl),
        )
        table = convert.table_from_thrift(new_tbl)
        if params is not None:
            table = dataclasses.replace(table, parameters=params)
        self.ms.catalog.alter_table(dbname, tbl_name, table, cascade=cascade)

    @_thrift_method
    def alter_table(self, dbname: str, tbl_name: str, new_tbl: tt.Table) -> None:
        self._alter_table(dbname, tbl_name, new_tbl, False)

    @_thrift_method
    def alter_table_with_environment_context(
        self, dbname: str, tbl_name: str, new_tbl: tt.Table, environment_context: tt.EnvironmentContext | None
    ) -> None:
        props = (environment_context.properties or {}) if environment_context else {}
        self._alter_table(dbname, tbl_name, new_tbl, str(props.get("CASCADE", "")).lower() == "true")

    @_thrift_method
    def alter_table_with_cascade(self, dbname: str, tbl_name: str, new_tbl: tt.Table, cascade: bool | None) -> None:
        self._alter_table(dbname, tbl_name, new_tbl, bool(cascade))

    @_thrift_method
    def drop_table(self, dbname: str, name: str, deleteData: bool | None) -> None:  # noqa: N803
        self.ms.catalog.drop_table(dbname, name, delete_data=bool(deleteData))

    @_thrift_method
    def drop_table_with_environment_context(
        self, dbname: str, name: str, deleteData: bool | None, environment_context: object | None  # noqa: N803
    ) -> None:
        self.ms.catalog.drop_table(dbname, name, delete_data=bool(deleteData))

    # ------------------------------------------------------------------ partitions

    def _add(self, parts: Sequence[tt.Partition], if_not_exists: bool = False) -> list[Partition]:
        if not parts:
            return []
        domain = [convert.partition_from_thrift(p) for p in parts]
        first = domain[0]
        return self.ms.catalog.add_partitions(
            first.db_name, first.table_name, domain, if_not_exists=if_not_exists, catalog=first.catalog_name
        )

    @_thrift_method
    def add_partition(self, new_part: tt.Partition) -> tt.Partition:
        return convert.partition_to_thrift(self._add([new_part])[0])

    @_thrift_method
    def add_partition_with_environment_context(self, new_part: tt.Partition, environment_context: object | None) -> tt.Partition:
        return convert.partition_to_thrift(self._add([new_part])[0])

    @_thrift_method
    def add_partitions(self, new_parts: Sequence[tt.Partition] | None) -> int:
        return len(self._add(list(new_parts or [])))

    @_thrift_method
    def add_partitions_req(self, request: tt.AddPartitionsRequest) -> tt.AddPartitionsResult:
        parts = [
            convert.partition_from_thrift(p, db_name=request.dbName, table_name=request.tblName)
            for p in request.parts or []
        ]
        added = self.ms.catalog.add_partitions(
            request.dbName, request.tblName, parts, if_not_exists=bool(request.ifNotExists),
            catalog=_catalog(request.catName),
        )
        result = tt.AddPartitionsResult()
        if request.needResult is None or request.needResult:
            result.partitions = convert.partitions_to_thrift(added)
        return result

    @_thrift_method
    def append_partition(self, db_name: str, tbl_name: str, part_vals: Sequence[str]) -> tt.Partition:
        return convert.partition_to_thrift(self.ms.catalog.append_partition(db_name, tbl_name, list(part_vals or [])))

    @_thrift_method
    def append_partition_with_environment_context(
        self, db_name: str, tbl_name: str, part_vals: Sequence[str], environment_context: object | None
    ) -> tt.Partition:
        return convert.partition_to_thrift(self.ms.catalog.append_partition(db_name, tbl_name, list(part_vals or [])))

    @_thrift_method
    def append_partition_by_name(self, db_name: str, tbl_name: str, part_name: str) -> tt.Partition:
        values = [v for _, v in parse_part_name(part_name)]
        return convert.partition_to_thrift(self.ms.catalog.append_partition(db_name, tbl_name, values))

    @_thrift_method
    def append_partition_by_name_with_environment_context(
        self, db_name: str, tbl_name: str, part_name: str, environment_context: object | None
    ) -> tt.Partition:
        # Hive 2.3's HiveMetaStoreClient.appendPartition(db, table, name) calls this one.
        values = [v for _, v in parse_part_name(part_name)]
        return convert.partition_to_thrift(self.ms.catalog.append_partition(db_name, tbl_name, values))

    @_thrift_method
    def get_partition(self, db_name: str, tbl_name: str, part_vals: Sequence[str]) -> tt.Partition:
        return convert.partition_to_thrift(self.ms.catalog.get_partition(db_name, tbl_name, list(part_vals or [])))

    @_thrift_method
    def get_partition_with_auth(
        self, db_name: str, tbl_name: str, part_vals: Sequence[str], user_name: str | None, group_names: object | None
    ) -> tt.Partition:
        return convert.partition_to_thrift(self.ms.catalog.get_partition(db_name, tbl_name, list(part_vals or [])))

    @_thrift_method
    def get_partition_by_name(self, db_name: str, tbl_name: str, part_name: str) -> tt.Partition:
        return convert.partition_to_thrift(self.ms.catalog.get_partition_by_name(db_name, tbl_name, part_name))

    @_thrift_method
    def get_partitions(self, db_name: str, tbl_name: str, max_parts: int) -> StreamedResult:
        # Encoded from rows, a page at a time (see get_partitions_by_filter).
        return _listing_reply(
            self.ms.catalog.partition_listing(db_name, tbl_name, _max(max_parts), send_catalog=_sends_catalog())
        )

    @_thrift_method
    def get_partitions_with_auth(
        self, db_name: str, tbl_name: str, max_parts: int, user_name: str | None, group_names: object | None
    ) -> StreamedResult:
        return _listing_reply(
            self.ms.catalog.partition_listing(db_name, tbl_name, _max(max_parts), send_catalog=_sends_catalog())
        )

    @_thrift_method
    def get_partitions_ps(self, db_name: str, tbl_name: str, part_vals: Sequence[str], max_parts: int) -> StreamedResult:
        return _listing_reply(self.ms.catalog.partition_listing_ps(
            db_name, tbl_name, list(part_vals or []), _max(max_parts), send_catalog=_sends_catalog()
        ))

    @_thrift_method
    def get_partitions_ps_with_auth(
        self, db_name: str, tbl_name: str, part_vals: Sequence[str] | None, max_parts: int, user_name: str | None,
        group_names: object | None,
    ) -> StreamedResult:
        return _listing_reply(self.ms.catalog.partition_listing_ps(
            db_name, tbl_name, list(part_vals or []), _max(max_parts), send_catalog=_sends_catalog()
        ))

    @_thrift_method
    def get_partition_names(self, db_name: str, tbl_name: str, max_parts: int) -> StreamedResult:
        # From the listing cache while the table's set of names is unchanged (PostgreSQL: one statement reads
        # the table and the version of its names); else sent as read, a page at a time (a table of 100,000
        # partitions is never one list here), and kept in the cache when it fits.
        limit = _max(max_parts)
        hit = self.ms.catalog.cached_partition_names(db_name, tbl_name, limit)
        if hit is not None:
            return StreamedResult(TType.LIST, (hit,))
        stream = self.ms.catalog.stream_partition_names(db_name, tbl_name, limit)
        result = _streamed_list(TType.STRING, stream, lambda page: [page], _names_body)
        result.pieces = _keeping(stream, iter(result.pieces))
        return result

    @_thrift_method
    def get_partition_names_ps(self, db_name: str, tbl_name: str, part_vals: Sequence[str], max_parts: int) -> list[str]:
        return self.ms.catalog.list_partition_names_ps(db_name, tbl_name, list(part_vals or []), _max(max_parts))

    @_thrift_method
    def get_partitions_by_names(self, db_name: str, tbl_name: str, names: Sequence[str] | None) -> StreamedResult:
        page = self.ms.catalog.partition_rows_by_names(db_name, tbl_name, list(names or []))
        result = StreamedResult(TType.LIST, ())

        def pieces() -> Iterator[bytes]:
            yield list_header(TType.STRUCT, len(page))
            yield _partition_encoder(page, result).encode(page.rows)

        result.pieces = pieces()
        return result

    @_thrift_method
    def get_partitions_by_names_req(self, req: tt.GetPartitionsByNamesRequest) -> tt.GetPartitionsByNamesResult:
        parts = self.ms.catalog.get_partitions_by_names(req.db_name, req.tbl_name, list(req.names or []))
        return tt.GetPartitionsByNamesResult(partitions=convert.partitions_to_thrift(parts))

    @_thrift_method
    def get_partitions_by_filter(self, db_name: str, tbl_name: str, filter: str | None, max_parts: int) -> StreamedResult:  # noqa: A002
        # Sent as read, a page at a time (see get_partition_names).
        # Each page is encoded from its rows (metastore.wire.partition_bytes), no Partition objects; or the
        # whole reply comes from the listing cache when the table's partitions have not changed since.
        return _listing_reply(self.ms.catalog.partition_listing_by_filter(
            db_name, tbl_name, filter or "", _max(max_parts), send_catalog=_sends_catalog()
        ))

    @_thrift_method
    def get_partition_values(self, request: tt.PartitionValuesRequest) -> tt.PartitionValuesResponse:
        rows = self.ms.catalog.partition_values(
            request.dbName, request.tblName, [k.name for k in request.partitionKeys or []],
            filter_text=request.filter or None,
            distinct=request.applyDistinct is None or bool(request.applyDistinct),
            order_by=[k.name for k in request.partitionOrder or []],
            ascending=request.ascending is None or bool(request.ascending),
            max_parts=_max(request.maxParts), catalog=_catalog(request.catName),
        )
        return tt.PartitionValuesResponse(partitionValues=[tt.PartitionValuesRow(row=r) for r in rows])

    @_thrift_method
    def get_num_partitions_by_filter(self, db_name: str, tbl_name: str, filter: str | None) -> int:  # noqa: A002
        return self.ms.catalog.count_partitions_by_filter(db_name, tbl_name, filter or "")

    def _alter_partitions(self, db_name: str, tbl_name: str, parts: Sequence[tt.Partition] | None) -> None:
        domain = [convert.partition_from_thrift(p, db_name=db_name, table_name=tbl_name) for p in parts or []]
        self.ms.catalog.alter_partitions(db_name, tbl_name, domain)

    @_thrift_method
    def alter_partition(self, db_name: str, tbl_name: str, new_part: tt.Partition) -> None:
        self._alter_partitions(db_name, tbl_name, [new_part])

    @_thrift_method
    def alter_partition_with_environment_context(
        self, db_name: str, tbl_name: str, new_part: tt.Partition, environment_context: object | None
    ) -> None:
        self._alter_partitions(db_name, tbl_name, [new_part])

    @_thrift_method
    def alter_partitions(self, db_name: str, tbl_name: str, new_parts: Sequence[tt.Partition]) -> None:
        self._alter_partitions(db_name, tbl_name, new_parts)

    @_thrift_method
    def alter_partitions_with_environment_context(
        self, db_name: str, tbl_name: str, new_parts: Sequence[tt.Partition], environment_context: object | None
    ) -> None:
        self._alter_partitions(db_name, tbl_name, new_parts)

    @_thrift_method
    def rename_partition(self, db_name: str, tbl_name: str, part_vals: Sequence[str], new_part: tt.Partition) -> None:
        self.ms.catalog.rename_partition(
            db_name, tbl_name, list(part_vals or []),
            convert.partition_from_thrift(new_part, db_name=db_name, table_name=tbl_name),
        )

    @_thrift_method
    def drop_partition(self, db_name: str, tbl_name: str, part_vals: Sequence[str], deleteData: bool | None) -> bool:  # noqa: N803
        self.ms.catalog.drop_partitions(db_name, tbl_name, values=list(part_vals or []), delete_data=bool(deleteData))
        return True

    @_thrift_method
    def drop_partition_with_environment_context(
        self, db_name: str, tbl_name: str, part_vals: Sequence[str], deleteData: bool | None, environment_context: object | None  # noqa: N803
    ) -> bool:
        self.ms.catalog.drop_partitions(db_name, tbl_name, values=list(part_vals or []), delete_data=bool(deleteData))
        return True

    @_thrift_method
    def drop_partition_by_name(self, db_name: str, tbl_name: str, part_name: str, deleteData: bool | None) -> bool:  # noqa: N803
        self.ms.catalog.drop_partitions(db_name, tbl_name, names=[part_name], delete_data=bool(deleteData))
        return True

    @_thrift_method
    def drop_partition_by_name_with_environment_context(
        self, db_name: str, tbl_name: str, part_name: str, deleteData: bool | None, environment_context: object | None  # noqa: N803
    ) -> bool:
        self.ms.catalog.drop_partitions(db_name, tbl_name, names=[part_name], delete_data=bool(deleteData))
        return True

    @_thrift_method
    def drop_partitions_req(self, req: tt.DropPartitionsRequest) -> tt.DropPartitionsResult:
        spec = req.parts
        if spec is None or (spec.names is None and spec.exprs is None):
            raise InvalidInput("drop_partitions_req needs partition names")
        if spec.exprs is not None:
            raise InvalidInput("drop_partitions_req with expressions is not supported; send partition names")
        dropped = self.ms.catalog.drop_partitions(
            req.dbName, req.tblName, names=list(spec.names), delete_data=bool(req.deleteData),
            if_exists=req.ifExists is None or bool(req.ifExists), catalog=_catalog(req.catName),
        )
        result = tt.DropPartitionsResult()
        if req.needResult is None or req.needResult:
            result.partitions = convert.partitions_to_thrift(dropped)
        return result

    @_thrift_method
    def partition_name_to_vals(self, part_name: str) -> list[str]:
        return [v for _, v in parse_part_name(part_name)]

    @_thrift_method
    def partition_name_to_spec(self, part_name: str) -> dict[str, str]:
        return dict(parse_part_name(part_name))

    # ------------------------------------------------------------------ column statistics: writes

    @staticmethod
    def _stats_write(stats: tt.ColumnStatistics, *, table_level: bool | None) -> StatsWrite:
        desc = stats.statsDesc
        if desc is None:
            raise InvalidInput("ColumnStatistics has no statsDesc")
        if not desc.dbName or not desc.tableName:
            raise InvalidInput("ColumnStatisticsDesc needs dbName and tableName")
        is_table = bool(desc.isTblLevel)
        if table_level is not None and is_table != table_level:
            want = "table" if table_level else "partition"
            raise InvalidInput(f"statsDesc.isTblLevel={is_table} in a {want}-level statistics call")
        if not is_table and not desc.partName:
            raise InvalidInput("partition-level statistics need statsDesc.partName")
        return StatsWrite(
            db_name=desc.dbName,
            table_name=desc.tableName,
            entries=[entry_from_thrift(o) for o in stats.statsObj or []],
            partition_name=None if is_table else desc.partName,
            last_analyzed=desc.lastAnalyzed,
            catalog=_catalog(desc.catName),
        )

    @_thrift_method
    def update_table_column_statistics(self, stats_obj: tt.ColumnStatistics) -> bool:
        self.ms.stats.write([self._stats_write(stats_obj, table_level=True)], engine=_engine(stats_obj.engine))
        return True

    @_thrift_method
    def update_partition_column_statistics(self, stats_obj: tt.ColumnStatistics) -> bool:
        self.ms.stats.write([self._stats_write(stats_obj, table_level=False)], engine=_engine(stats_obj.engine))
        return True

    def _write_request(self, req: tt.SetPartitionsStatsRequest, table_level: bool | None) -> None:
        if req is None:
            raise InvalidInput("the statistics request is missing")
        writes = [self._stats_write(cs, table_level=table_level) for cs in req.colStats or []]
        self.ms.stats.write(writes, merge=bool(req.needMerge), engine=_engine(req.engine))

    @_thrift_method
    def update_table_column_statistics_req(self, req: tt.SetPartitionsStatsRequest) -> tt.SetPartitionsStatsResponse:
        self._write_request(req, True)
        return tt.SetPartitionsStatsResponse(result=True)

    @_thrift_method
    def update_partition_column_statistics_req(self, req: tt.SetPartitionsStatsRequest) -> tt.SetPartitionsStatsResponse:
        self._write_request(req, False)
        return tt.SetPartitionsStatsResponse(result=True)

    @_thrift_method
    def set_aggr_stats_for(self, request: tt.SetPartitionsStatsRequest) -> bool:
        self._write_request(request, None)
        return True

    # ------------------------------------------------------------------ column statistics: reads

    def _obj(self, entry: ColumnStatsEntry) -> tt.ColumnStatisticsObj:
        return self._to_thrift(entry)

    @_thrift_method
    def get_table_column_statistics(self, db_name: str, tbl_name: str, col_name: str) -> tt.ColumnStatistics:
        entry, when = self.ms.stats.table_column_stats(db_name, tbl_name, col_name)
        desc = tt.ColumnStatisticsDesc(
            isTblLevel=True, dbName=db_name.lower(), tableName=tbl_name.lower(), lastAnalyzed=when,
            catName=DEFAULT_CATALOG,
        )
        return tt.ColumnStatistics(statsDesc=desc, statsObj=[self._obj(entry)], engine=DEFAULT_ENGINE)

    @_thrift_method
    def get_partition_column_statistics(
        self, db_name: str, tbl_name: str, part_name: str, col_name: str
    ) -> tt.ColumnStatistics:
        entry, name, when = self.ms.stats.partition_column_stats(db_name, tbl_name, part_name, col_name)
        desc = tt.ColumnStatisticsDesc(
            isTblLevel=False, dbName=db_name.lower(), tableName=tbl_name.lower(), partName=name, lastAnalyzed=when,
            catName=DEFAULT_CATALOG,
        )
        return tt.ColumnStatistics(statsDesc=desc, statsObj=[self._obj(entry)], engine=DEFAULT_ENGINE)

    @_thrift_method
    def get_table_statistics_req(self, request: tt.TableStatsRequest) -> tt.TableStatsResult | EncodedResult:
        args = (request.dbName, request.tblName, list(request.colNames or []))
        options = {"engine": _engine(request.engine), "catalog": _catalog(request.catName)}
        # Sent as the bytes stored with each row where they can serve, as get_partitions_statistics_req.
        encoded = self.ms.stats.table_stats_encoded(
            *args, **options, timestamps_as_long=self.settings.stats_timestamp_as_long
        )
        if encoded is not None:
            return EncodedResult(table_stats_result(*encoded))
        entries = self.ms.stats.table_stats(*args, engine=options["engine"], catalog=options["catalog"])
        return tt.TableStatsResult(tableStats=[self._obj(e) for e in entries])

    @_thrift_method
    def get_partitions_statistics_req(self, request: tt.PartitionsStatsRequest) -> EncodedResult | StreamedResult:
        args = (request.dbName, request.tblName, _part_names(request.partNames), list(request.colNames or []))
        options = {"engine": _engine(request.engine), "catalog": _catalog(request.catName)}
        if len(args[2]) > self.ms.stats.batch:
            # Many partitions: sent a batch at a time as they are read (kept whole only if the cache takes it).
            hit = self.ms.stats.cached_reply("partitions", *args, **options)
            if hit is not None:
                return EncodedResult(hit)
            stream = self.ms.stats.partitions_stats_stream(
                *args, **options, timestamps_as_long=self.settings.stats_timestamp_as_long, cache_as="partitions"
            )
            return StreamedResult(TType.STRUCT, _keeping(stream, self._partitions_stats_pieces(stream)), stream.close)

        def compute() -> bytes:
            # Thousands of statistics per call: sent as the bytes stored with each row where they can serve.
            encoded = self.ms.stats.partitions_stats_encoded(
                *args, **options, timestamps_as_long=self.settings.stats_timestamp_as_long
            )
            if encoded is not None:
                return partitions_stats_result(encoded)
            found = self.ms.stats.partitions_stats(*args, engine=options["engine"], catalog=options["catalog"])
            convert = self._to_thrift
            return encode_struct(tt.PartitionsStatsResult(partStats={n: [convert(e) for e in es] for n, es in found.items()}))

        return EncodedResult(self.ms.stats.cached_partition_reply("partitions", *args, compute, **options))

    def _partitions_stats_pieces(self, stream: Stream[PartitionStatsPage]) -> Iterator[bytes]:
        """A PartitionsStatsResult from the stream's pages, one piece per page."""
        yield partitions_stats_map_header(stream.count)
        sent = 0
        for page in stream.pages:
            sent += len(page)
            if sent > stream.count:
                raise RuntimeError(f"partition statistics of {stream.count} partitions read more")
            converted = [
                (name, len(entries), b"".join(encode_obj(self._to_thrift(e)) for e in entries))
                for name, entries in page.entries.items()
            ]
            yield partitions_stats_entries(page.encoded) + partitions_stats_entries(converted)
        if sent != stream.count:
            raise RuntimeError(f"partition statistics of {stream.count} partitions read {sent}")
        yield b"\x00"

    @_thrift_method
    def get_aggr_stats_for(self, request: tt.PartitionsStatsRequest) -> EncodedResult:
        args = (request.dbName, request.tblName, _part_names(request.partNames), list(request.colNames or []))
        options = {"engine": _engine(request.engine), "catalog": _catalog(request.catName)}

        def compute() -> bytes:
            result = self.ms.stats.aggregate(*args, **options)
            return encode_struct(tt.AggrStats(colStats=[self._obj(e) for e in result.entries], partsFound=result.parts_found))

        return EncodedResult(self.ms.stats.cached_partition_reply("aggregate", *args, compute, **options))

    # ------------------------------------------------------------------ column statistics: deletes

    @_thrift_method
    def delete_table_column_statistics(
        self, db_name: str, tbl_name: str, col_name: str | None, engine: str | None = None
    ) -> bool:
        self.ms.stats.delete_table_stats(db_name, tbl_name, None if col_name is None else [col_name], engine=_engine(engine))
        return True

    @_thrift_method
    def delete_partition_column_statistics(
        self, db_name: str, tbl_name: str, part_name: str, col_name: str | None, engine: str | None = None
    ) -> bool:
        self.ms.stats.delete_partition_stats(
            db_name, tbl_name, [part_name], None if col_name is None else [col_name], engine=_engine(engine)
        )
        return True

    @_thrift_method
    def delete_column_statistics_req(self, req: tt.DeleteColumnStatisticsRequest) -> bool:
        columns = None if req.col_names is None else list(req.col_names)
        catalog = _catalog(req.cat_name)
        if req.tableLevel:
            self.ms.stats.delete_table_stats(req.db_name, req.tbl_name, columns, engine=_engine(req.engine), catalog=catalog)
        else:
            parts = None if req.part_names is None else list(req.part_names)
            self.ms.stats.delete_partition_stats(
                req.db_name, req.tbl_name, parts, columns, engine=_engine(req.engine), catalog=catalog
            )
        return True

    # --- issue 10: per-file partial statistics (extension calls; names no HMS client uses) -------------

    @_thrift_method
    def metastore_get_file_partials(self, req: tt.MetastoreGetFilePartialsRequest) -> tt.MetastoreGetFilePartialsResult:
        files = self.ms.file_partials.get(
            req.dbName, req.tblName, None if req.partNames is None else list(req.partNames),
            None if req.paths is None else list(req.paths), catalog=_catalog(req.catName),
        )
        return tt.MetastoreGetFilePartialsResult(files=[convert_partials.file_partials_to_thrift(f) for f in files])

    @_thrift_method
    def metastore_put_file_partials(self, req: tt.MetastorePutFilePartialsRequest) -> None:
        files = [convert_partials.file_partials_from_thrift(f) for f in req.files or []]
        self.ms.file_partials.put(req.dbName, req.tblName, files, catalog=_catalog(req.catName))

    @_thrift_method
    def metastore_delete_file_partials(self, req: tt.MetastoreDeleteFilePartialsRequest) -> None:
        self.ms.file_partials.delete(
            req.dbName, req.tblName, None if req.partNames is None else list(req.partNames),
            None if req.paths is None else list(req.paths), catalog=_catalog(req.catName),
        )

    # --- issue 11: split-filtering indexes (extension calls named metastore_*) ---------------------------

    @_thrift_method
    def metastore_create_index(self, index: tt.MetastoreIndex) -> tt.MetastoreIndex:
        return convert_indexes.index_to_thrift(self.ms.indexes.create(convert_indexes.index_from_thrift(index)))

    @_thrift_method
    def metastore_get_index(self, dbName: str, tableName: str, name: str) -> tt.MetastoreIndex:  # noqa: N803
        return convert_indexes.index_to_thrift(self.ms.indexes.get(name, dbName, tableName))

    @_thrift_method
    def metastore_list_indexes(self, dbName: str | None, tableName: str | None) -> list[tt.MetastoreIndex]:  # noqa: N803
        return [convert_indexes.index_to_thrift(r) for r in self.ms.indexes.list(dbName, tableName)]

    @_thrift_method
    def metastore_finish_index_build(self, build: tt.MetastoreFinishIndexBuild) -> tt.MetastoreIndex:
        parts = [convert_indexes.part_from_thrift(p) for p in build.parts or []]
        partitions = None if build.partitions is None else tuple(build.partitions)
        record = self.ms.indexes.finish_build(
            build.name, parts, built=build.buildTime, partitions=partitions, db_name=build.dbName,
            table_name=build.tableName,
        )
        return convert_indexes.index_to_thrift(record)

    @_thrift_method
    def metastore_drop_index(
        self, dbName: str, tableName: str, name: str, partitions: Sequence[str] | None  # noqa: N803
    ) -> None:
        self.ms.indexes.drop(name, list(partitions) if partitions else None, dbName, tableName)

    @_thrift_method
    def metastore_filter_splits(self, request: tt.MetastoreFilterSplitsRequest) -> tt.MetastoreFilterSplitsResponse:
        if request.dbName is None or request.tableName is None or request.predicate is None or request.splits is None:
            raise InvalidInput("metastore_filter_splits needs dbName, tableName, predicate and splits")
        splits = [convert_indexes.split_from_thrift(s) for s in request.splits]
        result = self.ms.indexes.filter_splits(request.dbName, request.tableName, request.predicate, splits)
        return convert_indexes.filter_result_to_thrift(result, request.splits)
