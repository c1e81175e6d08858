"""A PostgreSQL that becomes unreachable (issue 16 §6): calls fail fast as MetaException saying the database
is unavailable, with no host, port, driver text or SQL; the details go to the server log; calls work again
once the database is back. The server reaches PostgreSQL through a TCP proxy this test starts and stops."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from metastore.api.hive_metastore import ttypes as tt
from server import thrift_builders as b
from server.harness import fresh_pg_database, start_server

pytestmark = pytest.mark.pg

UNAVAILABLE = "the metastore database is unavailable; try again later"


class TcpProxy:
    """Forwards connections from 127.0.0.1:port to PostgreSQL; stop() closes the listener and every forwarded
    connection, as a database host going away does; start() listens again on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        assert self._listener is not None
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (close alone does not)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            for s in self._open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for a, z in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, z), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


@pytest.fixture
def proxied_url(pg_server: str, pg_schema_template: str) -> Iterator[tuple[str, TcpProxy]]:
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        parsed = sa.engine.make_url(url)
        proxy = TcpProxy((parsed.host or "127.0.0.1", parsed.port or 5432))
        proxy.start()
        try:
            yield parsed.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False), proxy
        finally:
            proxy.stop()


def _fails_as_unavailable(call: Callable[[], object]) -> str:
    started = time.monotonic()
    with pytest.raises(tt.MetaException) as caught:
        call()
    assert time.monotonic() - started < 20  # fails fast, no hang
    return caught.value.message


def test_an_unreachable_database_is_a_meta_exception_without_details(proxied_url, tmp_path: Path) -> None:
    url, proxy = proxied_url
    server = start_server(tmp_path / "serve", url, workers=1)
    try:
        with server.client() as client:
            db = "s"
            b.create_db_and_table(client, db, "t", partitioned=True)
            client.add_partition(b.partition(db, "t", ["2024-01-01", "1"]))
            request = tt.PartitionsStatsRequest(dbName=db, tblName="t", colNames=["l"], partNames=["ds=2024-01-01/hr=1"])
            table_request = tt.TableStatsRequest(dbName=db, tblName="t", colNames=["l"])
            client.get_partitions_statistics_req(request)  # prepared statements on the pooled connections
            client.get_table_statistics_req(table_request)

            proxy.stop()
            calls = [
                lambda: client.get_partitions_statistics_req(request),  # pooled connection lost mid-use
                lambda: client.get_table_statistics_req(table_request),
                lambda: client.get_aggr_stats_for(request),
                lambda: client.get_table(db, "t"),  # the catalog too
                lambda: client.get_partitions_statistics_req(request),  # no connection can be opened
            ]
            for call in calls:
                message = _fails_as_unavailable(call)
                assert message == UNAVAILABLE, message
                for detail in (str(proxy.port), "127.0.0.1", "psycopg2", "EXECUTE", "SELECT", "connection"):
                    assert detail not in message

            proxy.start()  # the database is back: so are the calls
            deadline = time.monotonic() + 30
            while True:
                try:
                    assert client.get_table_statistics_req(table_request).tableStats == []
                    break
                except tt.MetaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            client.get_partitions_statistics_req(request)
        assert "the metastore database is unavailable" in server.output  # with the details, for operators
        assert str(proxy.port) in server.output
    finally:
        server.stop()
