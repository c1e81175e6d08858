"""A Hive-Metastore-compatible server over Thrift as a MetastoreClient.

Imports only the domain values, the generated Thrift code and `metastore.wire`: no store, service or SQLAlchemy,
so a Spark executor or a query planner can use it with the thrift package alone.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TSSLSocket, TTransport
from thrift.transport.TTransport import TTransportException

from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.api.hive_metastore import ttypes as tt
from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE, Database, Partition, Table
from metastore.client.base import AggregateResult, ConnectionFailed, MetastoreClient, StatsWrite
from metastore.client.sasl import SaslClientTransport, SaslCredentials, SaslFailed
from metastore.client.sasl import negotiate as sasl_negotiate
from metastore.errors import (
    AlreadyExists,
    InvalidInput,
    InvalidObject,
    InvalidOperation,
    MetastoreError,
    NoSuchObject,
)
from metastore.index.model import FilterResult, IndexPart, IndexRecord, Split
from metastore.stats.model import ColumnStatsEntry
from metastore.stats.partial_store import FilePartials
from metastore.wire import catalog as convert
from metastore.wire import indexes as convert_indexes
from metastore.wire.file_partials import file_partials_from_thrift, file_partials_to_thrift
from metastore.wire.stats import entry_from_thrift, entry_to_thrift

__all__ = ["DEFAULT_PORT", "SaslCredentials", "ServerAddress", "ThriftMetastoreClient", "parse_thrift_uris"]

DEFAULT_PORT = 9083


@dataclass(frozen=True)
class ServerAddress:
    host: str
    port: int
    #: thrifts://: the connection speaks TLS.
    tls: bool = False

    def __str__(self) -> str:
        return f"{'thrifts' if self.tls else 'thrift'}://{self.host}:{self.port}"


def parse_thrift_uris(uris: str) -> list[ServerAddress]:
    """Addresses of a `hive.metastore.uris`-style value: `thrift://host:port` (or `thrifts://` for TLS),
    comma-separated for failover."""
    out: list[ServerAddress] = []
    for raw in uris.split(","):
        text = raw.strip()
        if not text:
            continue
        parsed = urlparse(text)
        if parsed.scheme not in ("thrift", "thrifts") or not parsed.hostname:
            raise InvalidInput(f"metastore URI {text!r} is not of the form thrift://host:port or thrifts://host:port")
        try:
            port = parsed.port or DEFAULT_PORT
        except ValueError:
            raise InvalidInput(f"metastore URI {text!r} has an invalid port") from None
        out.append(ServerAddress(parsed.hostname, port, tls=parsed.scheme == "thrifts"))
    if not out:
        raise InvalidInput("no metastore URI given (expected thrift://host:port)")
    return out


def client_ssl_context(ca: str | None, cert: str | None = None, key: str | None = None) -> ssl.SSLContext:
    """The client side of TLS: TLS 1.2+, the server's certificate and host name verified against `ca` (PEM)
    or the system CAs, and an optional client certificate."""
    if (cert is None) != (key is None):
        raise InvalidInput("a client certificate needs both tls_cert and tls_key")
    try:
        ctx = ssl.create_default_context(cafile=ca)
    except (ssl.SSLError, OSError) as exc:
        raise InvalidInput(f"cannot load the TLS CA file {ca}: {getattr(exc, 'strerror', None) or exc}") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert is not None:
        try:
            ctx.load_cert_chain(cert, key)
        except (ssl.SSLError, OSError) as exc:
            raise InvalidInput(
                f"cannot load the TLS client certificate {cert} with key {key}: "
                f"{getattr(exc, 'strerror', None) or exc}"
            ) from None
    return ctx


# Thrift exceptions a call may raise, as the domain errors the client raises instead.
_ERRORS: dict[type, type[MetastoreError]] = {
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
    sent once more, as Hive's RetryingMetaStoreClient does; with several URIs the next one is tried.

    `thrifts://` URIs speak TLS (1.2+), verifying the server's certificate and host name against `tls_ca` (a PEM
    file) or, without it, the system's CAs; `tls_cert`/`tls_key` present a client certificate to a server
    that requires one.

    `sasl` authenticates each connection: `SaslCredentials("GSSAPI", kerberos_principal="metastore/_HOST@REALM")`
    with the Kerberos ticket cache, or `SaslCredentials("PLAIN", user=..., password=...)` (thrifts:// only)."""

    def __init__(self, uri: str = f"thrift://127.0.0.1:{DEFAULT_PORT}", *, timeout: float = 600.0,
                 framed: bool = False, tls_ca: str | None = None, tls_cert: str | None = None,
                 tls_key: str | None = None, sasl: SaslCredentials | None = None) -> None:
        self.addresses = parse_thrift_uris(uri)
        self.timeout = timeout
        self.framed = framed
        if sasl is not None and sasl.mechanism == "PLAIN" and not all(a.tls for a in self.addresses):
            raise InvalidInput("PLAIN authentication sends the password: connect with thrifts:// (TLS)")
        self.sasl = sasl
        self._ssl_context = (
            client_ssl_context(tls_ca, tls_cert, tls_key) if any(a.tls for a in self.addresses) else None
        )
        self.target = uri
        self._lock = threading.RLock()
        self._transport: Any = None
        self._client: Any = None
        self._connect()

    # ------------------------------------------------------------------ connection

    def _connect(self) -> None:
        failures: list[str] = []
        for address in self.addresses:
            sock: TSocket.TSocket
            if address.tls:
                sock = TSSLSocket.TSSLSocket(address.host, address.port, ssl_context=self._ssl_context,
                                             server_hostname=address.host)
            else:
                sock = TSocket.TSocket(address.host, address.port)
            sock.setTimeout(self.timeout * 1000)
            transport: Any
            try:
                if self.sasl is None:
                    transport = TTransport.TFramedTransport(sock) if self.framed else TTransport.TBufferedTransport(sock)
                    transport.open()
                else:
                    sock.open()
                    try:
                        layer = sasl_negotiate(sock, address.host, self.sasl)
                    except BaseException:
                        sock.close()
                        raise
                    transport = SaslClientTransport(sock, layer)
                    if self.framed:
                        transport = TTransport.TFramedTransport(transport)
            except SaslFailed as exc:
                failures.append(f"{address}: authentication failed: {exc}")
                continue
            except (TTransportException, OSError) as exc:
                # thrift's message says only "could not connect"; the inner error says why (e.g. a TLS
                # certificate that does not verify).
                inner = getattr(exc, "inner", None)
                failures.append(f"{address}: {exc}" + (f" ({inner})" if inner is not None else ""))
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
                    kind = _ERRORS.get(type(exc))
                    if kind is None:
                        raise
                    raise kind(getattr(exc, "message", None) or str(exc)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ split-filtering indexes (issue 11)

    def create_index(self, record: IndexRecord) -> IndexRecord:
        return convert_indexes.index_from_thrift(
            self._call("metastore_create_index", convert_indexes.index_to_thrift(record))
        )

    def get_index(self, db_name: str, table_name: str, name: str) -> IndexRecord:
        return convert_indexes.index_from_thrift(self._call("metastore_get_index", db_name, table_name, name))

    def list_indexes(self, db_name: str | None = None, table_name: str | None = None) -> list[IndexRecord]:
        found = self._call("metastore_list_indexes", db_name or "", table_name or "")
        return [convert_indexes.index_from_thrift(i) for i in found]

    def finish_index_build(
        self, db_name: str, table_name: str, name: str, parts: Sequence[IndexPart], *, built: int,
        partitions: tuple[str, ...] | None = None,
    ) -> IndexRecord:
        build = tt.MetastoreFinishIndexBuild(
            name=name, dbName=db_name, tableName=table_name, parts=[convert_indexes.part_to_thrift(p) for p in parts], buildTime=built,
            partitions=None if partitions is None else list(partitions),
        )
        return convert_indexes.index_from_thrift(self._call("metastore_finish_index_build", build))

    def drop_index(self, db_name: str, table_name: str, name: str, partitions: Sequence[str] | None = None) -> None:
        self._call("metastore_drop_index", db_name, table_name, name, list(partitions or []))

    def filter_splits(self, db_name: str, table_name: str, predicate: str, splits: Sequence[Split]) -> FilterResult:
        request = tt.MetastoreFilterSplitsRequest(
            dbName=db_name, tableName=table_name, predicate=predicate,
            splits=[convert_indexes.split_to_thrift(s) for s in splits],
        )
        return convert_indexes.filter_result_from_thrift(self._call("metastore_filter_splits", request))

    # ------------------------------------------------------------------ catalog

    def create_database(self, db: Database) -> None:
        self._call("create_database", convert.database_to_thrift(db))

    def get_database(self, name: str) -> Database:
        return convert.database_from_thrift(self._call("get_database", name))

    def list_databases(self, pattern: str | None = None) -> list[str]:
        if pattern is None:
            return list(self._call("get_all_databases"))
        return list(self._call("get_databases", pattern))

    def drop_database(self, name: str, *, delete_data: bool = True, cascade: bool = False) -> None:
        self._call("drop_database", name, delete_data, cascade)

    def create_table(self, table: Table) -> Table:
        self._call("create_table", convert.table_to_thrift(table))
        return self.get_table(table.db_name, table.table_name)

    def get_table(self, db_name: str, table_name: str) -> Table:
        return convert.table_from_thrift(self._call("get_table", db_name, table_name))

    def list_tables(self, db_name: str, pattern: str | None = None) -> list[str]:
        if pattern is None:
            return list(self._call("get_all_tables", db_name))
        return list(self._call("get_tables", db_name, pattern))

    def alter_table(self, db_name: str, table_name: str, table: Table) -> None:
        self._call("alter_table", db_name, table_name, convert.table_to_thrift(table))

    def drop_table(self, db_name: str, table_name: str, *, delete_data: bool = True) -> None:
        self._call("drop_table", db_name, table_name, delete_data)

    def add_partitions(
        self, db_name: str, table_name: str, partitions: Sequence[Partition], *, if_not_exists: bool = False
    ) -> list[Partition]:
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
        return convert.partition_from_thrift(self._call("get_partition", db_name, table_name, list(values)))

    def list_partitions(
        self, db_name: str, table_name: str, partial_values: Sequence[str] | None = None
    ) -> list[Partition]:
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
        if not names:
            return []
        parts = self._call("get_partitions_by_names", db_name, table_name, list(names))
        return [convert.partition_from_thrift(p, db_name=db_name, table_name=table_name) for p in parts]

    def alter_partitions(self, db_name: str, table_name: str, partitions: Sequence[Partition]) -> None:
        if partitions:
            self._call("alter_partitions", db_name, table_name, [convert.partition_to_thrift(p) for p in partitions])

    def drop_partitions(
        self, db_name: str, table_name: str, names: Sequence[str], *, delete_data: bool = True,
        if_exists: bool = False,
    ) -> list[Partition]:
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
        self, db_name: str, table_name: str, columns: Sequence[str], *, engine: str = DEFAULT_ENGINE,
        sketches: bool = True,
    ) -> list[ColumnStatsEntry]:
        request = tt.TableStatsRequest(
            dbName=db_name, tblName=table_name, colNames=list(columns), catName=DEFAULT_CATALOG, engine=engine
        )
        return [entry_from_thrift(o) for o in self._call("get_table_statistics_req", request).tableStats or []]

    def partition_statistics(
        self, db_name: str, table_name: str, partition_names: Sequence[str], columns: Sequence[str], *,
        engine: str = DEFAULT_ENGINE, sketches: bool = True,
    ) -> dict[str, list[ColumnStatsEntry]]:
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

        request = tt.DeleteColumnStatisticsRequest(
            cat_name=DEFAULT_CATALOG, db_name=db_name, tbl_name=table_name,
            part_names=None if partition_names is None else list(partition_names),
            col_names=None if columns is None else list(columns), engine=engine, tableLevel=False,
        )
        self._call("delete_column_statistics_req", request)

    # ------------------------------------------------------------------ per-file partials (issue 10)

    def get_file_partials(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        paths: Sequence[str] | None = None,
    ) -> list[FilePartials]:
        request = tt.MetastoreGetFilePartialsRequest(
            dbName=db_name, tblName=table_name, catName=DEFAULT_CATALOG,
            partNames=None if partition_names is None else list(partition_names),
            paths=None if paths is None else list(paths),
        )
        result = self._call("metastore_get_file_partials", request)
        return [file_partials_from_thrift(f) for f in result.files or []]

    def put_file_partials(self, db_name: str, table_name: str, files: Sequence[FilePartials]) -> None:
        request = tt.MetastorePutFilePartialsRequest(
            dbName=db_name, tblName=table_name, catName=DEFAULT_CATALOG,
            files=[file_partials_to_thrift(f) for f in files],
        )
        self._call("metastore_put_file_partials", request)

    def delete_file_partials(
        self, db_name: str, table_name: str, partition_names: Sequence[str] | None = None,
        paths: Sequence[str] | None = None,
    ) -> None:
        request = tt.MetastoreDeleteFilePartialsRequest(
            dbName=db_name, tblName=table_name, catName=DEFAULT_CATALOG,
            partNames=None if partition_names is None else list(partition_names),
            paths=None if paths is None else list(paths),
        )
        self._call("metastore_delete_file_partials", request)

    def close(self) -> None:
        with self._lock:
            self._disconnect()
