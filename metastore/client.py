"""The metastore client: one Python API over a remote server (Thrift) or an in-process store (embedded).

    with connect("thrift://127.0.0.1:9083") as client:          # or connect("sqlite:///metastore.db")
        table = client.get_table("sales", "orders")
        client.write_statistics([StatsWrite("sales", "orders", entries, partition_name="ds=2024-01-01")])

Both implementations speak the domain model (metastore.catalog, metastore.stats.model) and raise
metastore.errors; Thrift structs stay inside ThriftMetastoreClient. Statistics are written in batches with
set_aggr_stats_for semantics (replace per column, or Hive's needMerge with merge=True), so the SQL shell and
Spark drivers compute statistics next to the data and persist them the same way against either side.
"""

from __future__ import annotations

import abc
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlparse

from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE, Database, Partition, Table
from metastore.errors import (
    AlreadyExists,
    InvalidInput,
    InvalidObject,
    InvalidOperation,
    MetastoreError,
    NoSuchObject,
)
from metastore.service.statistics import AggregateResult, StatsWrite
from metastore.stats.model import ColumnStatsEntry

__all__ = [
    "AggregateResult",
    "ConnectionFailed",
    "EmbeddedMetastoreClient",
    "MetastoreClient",
    "StatsWrite",
    "ThriftMetastoreClient",
    "connect",
]

#: ColumnStatistics objects (one per table or partition) sent in one set_aggr_stats_for call.
DEFAULT_STATS_BATCH = 100
DEFAULT_PORT = 9083

T = TypeVar("T")


class ConnectionFailed(MetastoreError):
    """The metastore server cannot be reached, or the connection broke and could not be re-established."""


def batches(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    """`items` in consecutive slices of at most `size`."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


class MetastoreClient(abc.ABC):
    """Catalog and statistics operations of a metastore, in domain objects."""

    #: Where the client talks to, for banners and messages (`thrift://host:port`, `sqlite:///...`).
    target: str = ""

    # ------------------------------------------------------------------ databases

    @abc.abstractmethod
    def create_database(self, db: Database) -> None:
        """Create a database (its location defaults to <warehouse>/<name>.db)."""

    @abc.abstractmethod
    def get_database(self, name: str) -> Database: ...

    @abc.abstractmethod
    def list_databases(self, pattern: str | None = None) -> list[str]:
        """Database names, optionally matching a Hive pattern (`*` wildcards, `|` alternatives)."""

    @abc.abstractmethod
    def drop_database(self, name: str, *, delete_data: bool = True, cascade: bool = False) -> None: ...

    # ------------------------------------------------------------------ tables

    @abc.abstractmethod
    def create_table(self, table: Table) -> Table:
        """Create a table and return it as stored (with its location filled in)."""

    @abc.abstractmethod
    def get_table(self, db_name: str, table_name: str) -> Table: ...

    @abc.abstractmethod
    def list_tables(self, db_name: str, pattern: str | None = None) -> list[str]: ...

    @abc.abstractmethod
    def alter_table(self, db_name: str, table_name: str, table: Table) -> None: ...

    @abc.abstractmethod
    def drop_table(self, db_name: str, table_name: str, *, delete_data: bool = True) -> None: ...

    # ------------------------------------------------------------------ partitions

    @abc.abstractmethod
    def add_partitions(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], *, if_not_exists: bool = False
    ) -> list[Partition]:
        """Add partitions in one call (storage defaults to the table's); returns those added."""

    @abc.abstractmethod
    def get_partition(self, db_name: str, table_name: str, values: Sequence[str]) -> Partition: ...

    @abc.abstractmethod
    def list_partitions(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[Partition]:
        """Partitions of a table, or those whose leading values match `partial_values` ('' matches any)."""

    @abc.abstractmethod
    def list_partition_names(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[str]: ...

    @abc.abstractmethod
    def get_partitions_by_names(self, db_name: str, table_name: str, names: Sequence[str]) -> list[Partition]: ...

    @abc.abstractmethod
    def alter_partitions(self, db_name: str, table_name: str, partitions: Sequence[Partition]) -> None:
        """Replace the definitions (storage, parameters) of existing partitions in one call."""

    @abc.abstractmethod
    def drop_partitions(
        self, db_name: str, table_name: str, names: Sequence[str], *, delete_data: bool = True,
        if_exists: bool = False,
    ) -> list[Partition]:
        """Drop partitions by name with their statistics; returns those dropped."""

    # ------------------------------------------------------------------ statistics

    def write_statistics(
        self, writes: Sequence[StatsWrite], *, merge: bool = False, batch_size: int = DEFAULT_STATS_BATCH,
        engine: str = DEFAULT_ENGINE,
    ) -> int:
        """Store column statistics of tables/partitions, `batch_size` owners per call (set_aggr_stats_for).

        Each call is one transaction on the server; merge=True combines with stored statistics (Hive's
        needMerge), otherwise the given columns' statistics are replaced. Returns the number of calls made."""
        writes = [w for w in writes if w.entries]
        calls = 0
        for chunk in batches(writes, batch_size):
            self._write_batch(chunk, merge=merge, engine=engine)
            calls += 1
        return calls

    @abc.abstractmethod
    def _write_batch(self, writes: Sequence[StatsWrite], *, merge: bool, engine: str) -> None: ...

    @abc.abstractmethod
    def table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE
    ) -> list[ColumnStatsEntry]:
        """Table-level statistics of those columns that have them."""

    @abc.abstractmethod
    def partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE,
    ) -> dict[str, list[ColumnStatsEntry]]:
        """{partition name: statistics} of the named partitions that have statistics of the columns."""

    @abc.abstractmethod
    def aggregate_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE,
    ) -> AggregateResult:
        """Table-wide statistics merged over the named partitions (get_aggr_stats_for)."""

    @abc.abstractmethod
    def delete_table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE
    ) -> None: ...

    @abc.abstractmethod
    def delete_partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE,
    ) -> None: ...

    # ------------------------------------------------------------------ lifecycle

    @property
    def returns_sketches(self) -> bool:
        """Whether statistics read back carry their NDV bitVectors (a server returns them only if configured)."""
        return False

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> MetastoreClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


# ====================================================================== embedded


class EmbeddedMetastoreClient(MetastoreClient):
    """The metastore in this process, over its database (SQLite files upgrade their schema themselves)."""

    def __init__(self, db_url: str, warehouse: str | None = None) -> None:
        from metastore.config import Settings
        from metastore.service import Metastore

        settings = Settings.from_env(db=db_url, warehouse=warehouse, fetch_bitvector=True, fetch_kll=True)
        # SQLite is embedded and upgrades itself, as `metastore serve` does; a shared PostgreSQL database is
        # upgraded on purpose with `metastore db upgrade`.
        self._ms = Metastore.open(settings, auto_upgrade=settings.db.startswith("sqlite"))
        self._ms.store.ensure_default_database(settings.warehouse)
        self.warehouse = settings.warehouse
        self.target = settings.db

    @property
    def returns_sketches(self) -> bool:
        return True

    @staticmethod
    def _run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except MetastoreError:
            raise
        except ValueError as exc:  # a malformed value deep inside a request, as the server maps it
            raise InvalidInput(str(exc)) from None

    def create_database(self, db: Database) -> None:
        self._run(self._ms.catalog.create_database, db)

    def get_database(self, name: str) -> Database:
        return self._run(self._ms.catalog.get_database, name)

    def list_databases(self, pattern: str | None = None) -> list[str]:
        return self._run(self._ms.catalog.list_databases, pattern)

    def drop_database(self, name: str, *, delete_data: bool = True, cascade: bool = False) -> None:
        self._run(self._ms.catalog.drop_database, name, delete_data=delete_data, cascade=cascade)

    def create_table(self, table: Table) -> Table:
        self._run(self._ms.catalog.create_table, table)
        return self.get_table(table.db_name, table.table_name)

    def get_table(self, db_name: str, table_name: str) -> Table:
        return self._run(self._ms.catalog.get_table, db_name, table_name)

    def list_tables(self, db_name: str, pattern: str | None = None) -> list[str]:
        return self._run(self._ms.catalog.list_tables, db_name, pattern)

    def alter_table(self, db_name: str, table_name: str, table: Table) -> None:
        self._run(self._ms.catalog.alter_table, db_name, table_name, table)

    def drop_table(self, db_name: str, table_name: str, *, delete_data: bool = True) -> None:
        self._run(self._ms.catalog.drop_table, db_name, table_name, delete_data=delete_data)

    def add_partitions(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], *, if_not_exists: bool = False
    ) -> list[Partition]:
        return self._run(
            self._ms.catalog.add_partitions, db_name, table_name, list(partitions), if_not_exists=if_not_exists
        )

    def get_partition(self, db_name: str, table_name: str, values: Sequence[str]) -> Partition:
        return self._run(self._ms.catalog.get_partition, db_name, table_name, list(values))

    def list_partitions(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[Partition]:
        if partial_values is None:
            return self._run(self._ms.catalog.list_partitions, db_name, table_name)
        return self._run(self._ms.catalog.list_partitions_ps, db_name, table_name, list(partial_values))

    def list_partition_names(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[str]:
        if partial_values is None:
            return self._run(self._ms.catalog.list_partition_names, db_name, table_name)
        return self._run(self._ms.catalog.list_partition_names_ps, db_name, table_name, list(partial_values))

    def get_partitions_by_names(self, db_name: str, table_name: str, names: Sequence[str]) -> list[Partition]:
        return self._run(self._ms.catalog.get_partitions_by_names, db_name, table_name, list(names))

    def alter_partitions(self, db_name: str, table_name: str, partitions: Sequence[Partition]) -> None:
        self._run(self._ms.catalog.alter_partitions, db_name, table_name, list(partitions))

    def drop_partitions(
        self, db_name: str, table_name: str, names: Sequence[str], *, delete_data: bool = True,
        if_exists: bool = False,
    ) -> list[Partition]:
        return self._run(
            self._ms.catalog.drop_partitions, db_name, table_name, names=list(names), delete_data=delete_data,
            if_exists=if_exists,
        )

    def _write_batch(self, writes: Sequence[StatsWrite], *, merge: bool, engine: str) -> None:
        self._run(self._ms.stats.write, list(writes), merge=merge, engine=engine)

    def table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE
    ) -> list[ColumnStatsEntry]:
        return self._run(self._ms.stats.table_stats, db_name, table_name, list(columns), engine=engine)

    def partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE,
    ) -> dict[str, list[ColumnStatsEntry]]:
        return self._run(
            self._ms.stats.partitions_stats, db_name, table_name, list(partition_names), list(columns), engine=engine
        )

    def aggregate_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE,
    ) -> AggregateResult:
        return self._run(
            self._ms.stats.aggregate, db_name, table_name, list(partition_names), list(columns), engine=engine
        )

    def delete_table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE
    ) -> None:
        self._run(
            self._ms.stats.delete_table_stats, db_name, table_name, None if columns is None else list(columns),
            engine=engine,
        )

    def delete_partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE,
    ) -> None:
        self._run(
            self._ms.stats.delete_partition_stats, db_name, table_name,
            None if partition_names is None else list(partition_names),
            None if columns is None else list(columns), engine=engine,
        )

    def close(self) -> None:
        self._ms.close()


# ====================================================================== Thrift


@dataclass(frozen=True)
class ServerAddress:
    host: str
    port: int

    def __str__(self) -> str:
        return f"thrift://{self.host}:{self.port}"


def parse_thrift_uris(uris: str) -> list[ServerAddress]:
    """Addresses of a `hive.metastore.uris`-style value: `thrift://host:port`, comma-separated for failover."""
    out: list[ServerAddress] = []
    for raw in uris.split(","):
        text = raw.strip()
        if not text:
            continue
        parsed = urlparse(text)
        if parsed.scheme != "thrift" or not parsed.hostname:
            raise InvalidInput(f"metastore URI {text!r} is not of the form thrift://host:port")
        try:
            port = parsed.port or DEFAULT_PORT
        except ValueError:
            raise InvalidInput(f"metastore URI {text!r} has an invalid port") from None
        out.append(ServerAddress(parsed.hostname, port))
    if not out:
        raise InvalidInput("no metastore URI given (expected thrift://host:port)")
    return out


def _thrift_error_map() -> dict[type, type[MetastoreError]]:
    from metastore.api.hive_metastore import ttypes as tt

    return {
        tt.NoSuchObjectException: NoSuchObject,
        tt.UnknownDBException: NoSuchObject,
        tt.UnknownTableException: NoSuchObject,
        tt.UnknownPartitionException: NoSuchObject,
        tt.AlreadyExistsException: AlreadyExists,
        tt.InvalidObjectException: InvalidObject,
        tt.InvalidInputException: InvalidInput,
        tt.InvalidOperationException: InvalidOperation,
        tt.InvalidPartitionException: InvalidObject,
        tt.MetaException: MetastoreError,
    }


class ThriftMetastoreClient(MetastoreClient):
    """A Hive-Metastore-compatible server over Thrift (buffered transport, binary protocol).

    A call that finds the connection broken (server restarted, idle connection dropped) reconnects and is
    sent once more, as Hive's RetryingMetaStoreClient does; with several URIs the next one is tried."""

    def __init__(self, uri: str = f"thrift://127.0.0.1:{DEFAULT_PORT}", *, timeout: float = 600.0,
                 framed: bool = False) -> None:
        self.addresses = parse_thrift_uris(uri)
        self.timeout = timeout
        self.framed = framed
        self.target = uri
        self._lock = threading.RLock()
        self._transport: Any = None
        self._client: Any = None
        self._errors = _thrift_error_map()
        self._connect()

    # ------------------------------------------------------------------ connection

    def _connect(self) -> None:
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport

        from metastore.api.hive_metastore import ThriftHiveMetastore

        failures: list[str] = []
        for address in self.addresses:
            sock = TSocket.TSocket(address.host, address.port)
            sock.setTimeout(self.timeout * 1000)
            transport = TTransport.TFramedTransport(sock) if self.framed else TTransport.TBufferedTransport(sock)
            try:
                transport.open()
            except (TTransport.TTransportException, OSError) as exc:
                failures.append(f"{address}: {exc}")
                continue
            self._transport = transport
            self._client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(transport))
            self.target = str(address)
            return
        raise ConnectionFailed(f"cannot connect to the metastore at {'; '.join(failures)}")

    def _disconnect(self) -> None:
        if self._transport is not None:
            try:
                self._transport.close()
            except Exception:  # noqa: BLE001 - closing a broken socket may fail in any way; it is gone anyway
                pass
        self._transport = None
        self._client = None

    def _call(self, method: str, *args: Any) -> Any:
        """Call a ThriftHiveMetastore method; Thrift exceptions become metastore.errors."""
        from thrift.Thrift import TApplicationException
        from thrift.transport.TTransport import TTransportException

        with self._lock:
            for attempt in (1, 2):
                if self._client is None:
                    try:
                        self._connect()
                    except ConnectionFailed as exc:
                        raise ConnectionFailed(f"{method}: {exc}") from None
                try:
                    return getattr(self._client, method)(*args)
                except (TTransportException, OSError, EOFError) as exc:
                    # The connection is unusable after a transport error: drop it, and retry once.
                    self._disconnect()
                    if attempt == 2 or isinstance(exc, socket.timeout):
                        raise ConnectionFailed(f"{method} on {self.target} failed: {exc}") from None
                except TApplicationException as exc:
                    raise MetastoreError(f"{method}: {exc.message or exc}") from None
                except Exception as exc:
                    kind = self._errors.get(type(exc))
                    if kind is None:
                        raise
                    raise kind(getattr(exc, "message", None) or str(exc)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ catalog

    def create_database(self, db: Database) -> None:
        from metastore.server import convert

        self._call("create_database", convert.database_to_thrift(db))

    def get_database(self, name: str) -> Database:
        from metastore.server import convert

        return convert.database_from_thrift(self._call("get_database", name))

    def list_databases(self, pattern: str | None = None) -> list[str]:
        if pattern is None:
            return list(self._call("get_all_databases"))
        return list(self._call("get_databases", pattern))

    def drop_database(self, name: str, *, delete_data: bool = True, cascade: bool = False) -> None:
        self._call("drop_database", name, delete_data, cascade)

    def create_table(self, table: Table) -> Table:
        from metastore.server import convert

        self._call("create_table", convert.table_to_thrift(table))
        return self.get_table(table.db_name, table.table_name)

    def get_table(self, db_name: str, table_name: str) -> Table:
        from metastore.server import convert

        return convert.table_from_thrift(self._call("get_table", db_name, table_name))

    def list_tables(self, db_name: str, pattern: str | None = None) -> list[str]:
        if pattern is None:
            return list(self._call("get_all_tables", db_name))
        return list(self._call("get_tables", db_name, pattern))

    def alter_table(self, db_name: str, table_name: str, table: Table) -> None:
        from metastore.server import convert

        self._call("alter_table", db_name, table_name, convert.table_to_thrift(table))

    def drop_table(self, db_name: str, table_name: str, *, delete_data: bool = True) -> None:
        self._call("drop_table", db_name, table_name, delete_data)

    def add_partitions(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], *, if_not_exists: bool = False
    ) -> list[Partition]:
        from metastore.api.hive_metastore import ttypes as tt
        from metastore.server import convert

        if not partitions:
            return []
        request = tt.AddPartitionsRequest(
            dbName=db_name, tblName=table_name, parts=[convert.partition_to_thrift(p) for p in partitions],
            ifNotExists=if_not_exists, needResult=True, catName=DEFAULT_CATALOG,
        )
        result = self._call("add_partitions_req", request)
        return [
            convert.partition_from_thrift(p, db_name=db_name, table_name=table_name) for p in result.partitions or []
        ]

    def get_partition(self, db_name: str, table_name: str, values: Sequence[str]) -> Partition:
        from metastore.server import convert

        return convert.partition_from_thrift(self._call("get_partition", db_name, table_name, list(values)))

    def list_partitions(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[Partition]:
        from metastore.server import convert

        if partial_values is None:
            parts = self._call("get_partitions", db_name, table_name, -1)
        else:
            parts = self._call("get_partitions_ps", db_name, table_name, list(partial_values), -1)
        return [convert.partition_from_thrift(p, db_name=db_name, table_name=table_name) for p in parts]

    def list_partition_names(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[str]:
        if partial_values is None:
            return list(self._call("get_partition_names", db_name, table_name, -1))
        return list(self._call("get_partition_names_ps", db_name, table_name, list(partial_values), -1))

    def get_partitions_by_names(self, db_name: str, table_name: str, names: Sequence[str]) -> list[Partition]:
        from metastore.server import convert

        if not names:
            return []
        parts = self._call("get_partitions_by_names", db_name, table_name, list(names))
        return [convert.partition_from_thrift(p, db_name=db_name, table_name=table_name) for p in parts]

    def alter_partitions(self, db_name: str, table_name: str, partitions: Sequence[Partition]) -> None:
        from metastore.server import convert

        if partitions:
            self._call("alter_partitions", db_name, table_name, [convert.partition_to_thrift(p) for p in partitions])

    def drop_partitions(
        self, db_name: str, table_name: str, names: Sequence[str], *, delete_data: bool = True,
        if_exists: bool = False,
    ) -> list[Partition]:
        from metastore.api.hive_metastore import ttypes as tt
        from metastore.server import convert

        if not names:
            return []
        request = tt.DropPartitionsRequest(
            dbName=db_name, tblName=table_name, parts=tt.RequestPartsSpec(names=list(names)),
            deleteData=delete_data, ifExists=if_exists, needResult=True, catName=DEFAULT_CATALOG,
        )
        result = self._call("drop_partitions_req", request)
        return [
            convert.partition_from_thrift(p, db_name=db_name, table_name=table_name) for p in result.partitions or []
        ]

    # ------------------------------------------------------------------ statistics

    def _write_batch(self, writes: Sequence[StatsWrite], *, merge: bool, engine: str) -> None:
        from metastore.api.hive_metastore import ttypes as tt
        from metastore.stats.thrift_codec import entry_to_thrift

        col_stats = [
            tt.ColumnStatistics(
                statsDesc=tt.ColumnStatisticsDesc(
                    isTblLevel=w.partition_name is None, dbName=w.db_name, tableName=w.table_name,
                    partName=w.partition_name, lastAnalyzed=w.last_analyzed, catName=w.catalog,
                ),
                # Sketches go to the server so it can merge them (partition aggregation, needMerge).
                statsObj=[entry_to_thrift(e, bit_vectors=True, histograms=True) for e in w.entries],
                engine=engine,
            )
            for w in writes
        ]
        self._call("set_aggr_stats_for", tt.SetPartitionsStatsRequest(colStats=col_stats, needMerge=merge, engine=engine))

    def table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE
    ) -> list[ColumnStatsEntry]:
        from metastore.api.hive_metastore import ttypes as tt
        from metastore.stats.thrift_codec import entry_from_thrift

        request = tt.TableStatsRequest(
            dbName=db_name, tblName=table_name, colNames=list(columns), catName=DEFAULT_CATALOG, engine=engine
        )
        return [entry_from_thrift(o) for o in self._call("get_table_statistics_req", request).tableStats or []]

    def partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE,
    ) -> dict[str, list[ColumnStatsEntry]]:
        from metastore.api.hive_metastore import ttypes as tt
        from metastore.stats.thrift_codec import entry_from_thrift

        request = tt.PartitionsStatsRequest(
            dbName=db_name, tblName=table_name, colNames=list(columns), partNames=list(partition_names),
            catName=DEFAULT_CATALOG, engine=engine,
        )
        result = self._call("get_partitions_statistics_req", request)
        return {name: [entry_from_thrift(o) for o in objs] for name, objs in (result.partStats or {}).items()}

    def aggregate_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE,
    ) -> AggregateResult:
        from metastore.api.hive_metastore import ttypes as tt
        from metastore.stats.thrift_codec import entry_from_thrift

        request = tt.PartitionsStatsRequest(
            dbName=db_name, tblName=table_name, colNames=list(columns), partNames=list(partition_names),
            catName=DEFAULT_CATALOG, engine=engine,
        )
        result = self._call("get_aggr_stats_for", request)
        return AggregateResult([entry_from_thrift(o) for o in result.colStats or []], result.partsFound or 0)

    def delete_table_statistics(
        self, db_name: str, table_name: str, columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE
    ) -> None:
        if columns is None:
            self._call("delete_table_column_statistics", db_name, table_name, None, engine)
            return
        for column in columns:
            self._call("delete_table_column_statistics", db_name, table_name, column, engine)

    def delete_partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        columns: Sequence[str] | None = None, *, engine: str = DEFAULT_ENGINE,
    ) -> None:
        from metastore.api.hive_metastore import ttypes as tt

        request = tt.DeleteColumnStatisticsRequest(
            cat_name=DEFAULT_CATALOG, db_name=db_name, tbl_name=table_name,
            part_names=None if partition_names is None else list(partition_names),
            col_names=None if columns is None else list(columns), engine=engine, tableLevel=False,
        )
        self._call("delete_column_statistics_req", request)

    def close(self) -> None:
        with self._lock:
            self._disconnect()


# ====================================================================== choosing one


def connect(target: str, *, warehouse: str | None = None, timeout: float = 600.0) -> MetastoreClient:
    """A client for `thrift://host:port[,thrift://...]` (a server) or a SQLAlchemy URL (embedded)."""
    text = target.strip()
    if text.lower().startswith("thrift://"):
        return ThriftMetastoreClient(text, timeout=timeout)
    if "://" not in text:
        raise InvalidInput(
            f"{target!r} is neither a metastore URI (thrift://host:port) nor a database URL "
            "(sqlite:///path/metastore.db, postgresql+psycopg2://user@host/db)"
        )
    return EmbeddedMetastoreClient(text, warehouse)
