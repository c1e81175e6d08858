"""`metastore serve` as a program: startup line, flags and METASTORE_* variables, schema checks, debug timing
lines, and clean shutdown on SIGTERM/SIGINT with the in-flight call completed."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from thrift.transport.TTransport import TTransportException

from metastore.api.hive_metastore import ttypes as tt
from server import thrift_builders as b
from server.harness import connect, free_port, fresh_pg_database, metastore_exe, start_server
from server.wire import call_bytes


def _run(args: list[str], env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    return subprocess.run(
        [metastore_exe(), *args], capture_output=True, text=True, env={**clean, **(env or {})}, timeout=timeout
    )


def test_help_lists_the_flags():
    out = _run(["serve", "--help"])
    assert out.returncode == 0
    for flag in ("--host", "--port", "--db", "--warehouse", "--workers", "--framed", "--max-frame-size",
                 "--max-string-size", "--max-container-size", "--fetch-bitvector", "--fetch-kll", "--log-level"):
        assert flag in out.stdout
    assert "METASTORE_" in out.stdout


def test_startup_line_and_debug_timing_lines(tmp_path):
    db = tmp_path / "m.db"
    server = start_server(tmp_path, f"sqlite:///{db}", extra_args=["--log-level", "DEBUG"])
    try:
        line = server.ready_line
        assert f"listening on thrift://127.0.0.1:{server.port}" in line
        assert str(db) in line and "2 workers" in line and "buffered transport" in line
        with server.client() as c:
            for _ in range(3):
                c.get_all_databases()
            with pytest.raises(tt.NoSuchObjectException):
                c.get_database("nope")
        time.sleep(0.3)
    finally:
        assert server.stop() == 0
    timings = re.findall(r"\[(\d+)\] metastore\.server\.calls: (\w+) took (\d+\.\d+) ms", server.output)
    assert {name for _, name, _ in timings} >= {"get_all_databases", "get_database"}
    assert {int(pid) for pid, _, _ in timings} <= set(range(1, 1 << 22))


def test_environment_variables_configure_and_flags_win(tmp_path):
    port = free_port()
    db = tmp_path / "env.db"
    env = {
        "METASTORE_PORT": str(port),
        "METASTORE_DB": f"sqlite:///{db}",
        "METASTORE_WORKERS": "1",
        "METASTORE_WAREHOUSE": str(tmp_path / "wh"),
        "METASTORE_FETCH_BITVECTOR": "true",
    }
    server = start_server(tmp_path, "", port=port, env=env, only_args=[])
    try:
        assert f"127.0.0.1:{port}" in server.ready_line and str(db) in server.ready_line
        assert "1 workers" in server.ready_line
        with server.client() as c:
            assert c.getMetaConf("metastore.stats.fetch.bitvector") == "true"
            assert c.get_database("default").locationUri == f"file:{tmp_path / 'wh'}"  # qualified, as Hive qualifies the warehouse
    finally:
        assert server.stop() == 0
    port2 = free_port()
    server = start_server(tmp_path, "", port=port2, env=env, only_args=["--port", str(port2), "--workers", "2"])
    try:
        assert f"127.0.0.1:{port2}" in server.ready_line and "2 workers" in server.ready_line
    finally:
        assert server.stop() == 0


def test_bad_environment_value_is_a_clear_error(tmp_path):
    out = _run(["serve"], env={"METASTORE_PORT": "nine", "METASTORE_DB": f"sqlite:///{tmp_path}/x.db"})
    assert out.returncode != 0
    assert "METASTORE_PORT" in out.stderr and "nine" in out.stderr


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        out = _run(["serve", "--port", str(port), "--db", f"sqlite:///{tmp_path}/x.db", "--warehouse", str(tmp_path)])
    assert out.returncode != 0
    assert str(port) in out.stderr


def test_embedded_default_database_upgrades_itself(tmp_path):
    port = free_port()
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)}
    server = start_server(tmp_path, "", port=port, env=env, only_args=["--port", str(port), "--workers", "1"])
    try:
        default_db = tmp_path / "data" / "metastore" / "metastore.db"
        assert str(default_db) in server.ready_line
        assert default_db.exists()
        with server.client() as c:
            assert c.get_all_databases() == ["default"]
    finally:
        assert server.stop() == 0


def test_out_of_date_postgresql_schema_is_refused(tmp_path, pg_server):
    with fresh_pg_database(pg_server) as url:
        server = start_server(tmp_path, url, wait_ready=False)
        code = server.wait(timeout=60)
        assert code != 0
        assert "metastore db upgrade" in server.output
        assert "listening on" not in server.output


def test_postgresql_password_is_not_printed(tmp_path, pg_server, pg_schema_template):
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        import sqlalchemy as sa

        with_password = sa.engine.make_url(url).set(password="s3cret-pw").render_as_string(hide_password=False)
        server = start_server(tmp_path, with_password)
        try:
            assert "s3cret-pw" not in server.ready_line
            assert sa.engine.make_url(url).database in server.ready_line
        finally:
            assert server.stop() == 0
        assert "s3cret-pw" not in server.output


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_shutdown_completes_the_call_in_flight(tmp_path, signum):
    server = start_server(tmp_path, f"sqlite:///{tmp_path}/m.db")
    try:
        with server.client() as c:
            c.create_database(b.database("shut"))
            c.create_table(b.table("shut", "t", [("l", "bigint")]))
        request = call_bytes(
            lambda c: c.send_get_table_statistics_req(
                tt.TableStatsRequest(dbName="shut", tblName="t", colNames=[f"c{i}" for i in range(20000)] + ["l"])
            )
        )
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        # Half the call, so a worker is inside it when the signal arrives; the rest after the signal.
        sock.sendall(request[: len(request) // 2])
        time.sleep(0.5)
        server.signal(signum)
        time.sleep(0.5)
        sock.sendall(request[len(request) // 2 :])
        reply = bytearray()
        while chunk := sock.recv(65536):
            reply += chunk
        sock.close()
        assert b"get_table_statistics_req" in reply and len(reply) > 20
        assert server.wait(timeout=30) == 0
        # The listening socket is gone.
        with pytest.raises(TTransportException):
            connect(server.port, timeout=2)
    finally:
        server.stop()


def test_idle_connections_do_not_delay_shutdown(tmp_path):
    server = start_server(tmp_path, f"sqlite:///{tmp_path}/m.db")
    idle = [connect(server.port) for _ in range(5)]
    for c in idle:
        c.get_all_databases()
    server.signal(signal.SIGTERM)
    assert server.wait(timeout=8) == 0
    for c in idle:
        with pytest.raises(Exception):  # noqa: B017 - closed by the server: any transport error will do
            c.get_all_databases()
    assert not Path(f"/proc/{server.process.pid}").exists() or server.process.poll() is not None


def test_stop_while_workers_are_starting(tmp_path):
    # The ready line comes before the workers have finished starting; a stop request then must not be lost.
    for attempt in range(3):
        server = start_server(tmp_path / str(attempt), f"sqlite:///{tmp_path}/m{attempt}.db", workers=3)
        server.signal(signal.SIGTERM)
        try:
            assert server.wait(timeout=15) == 0
        finally:
            server.stop()


def test_signal_storm_on_the_whole_process_group_stops_the_server(tmp_path):
    # coreutils `timeout` and terminals signal the whole process group, and the parent forwards one more to
    # each worker: handlers run again while a previous one is still running. A handler that takes a lock
    # (threading.Event.set) then deadlocks and the worker never exits.
    server = start_server(tmp_path, f"sqlite:///{tmp_path}/m.db", workers=2)
    client = connect(server.port)
    client.get_all_databases()
    workers = server.worker_pids()
    assert workers
    for _ in range(200):
        for pid in (server.process.pid, *workers):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    try:
        assert server.wait(timeout=20) == 0
        for pid in workers:
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    finally:
        server.stop()


def _gone(pid: int) -> bool:
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


@pytest.mark.parametrize("workers", [1, 2])
def test_sighup_without_tls_is_logged_and_ignored(tmp_path, workers):
    # Admins send HUP after editing the policy or password file; with TLS off there is nothing to reload, and
    # the default action (terminate) would kill the server, or with workers only the parent, orphaning them.
    server = start_server(tmp_path, f"sqlite:///{tmp_path}/m.db", workers=workers)
    try:
        before = server.worker_pids()
        client = connect(server.port)
        client.get_all_databases()
        for _ in range(2):
            server.signal(signal.SIGHUP)
            time.sleep(0.8)  # the accept loop turns the request into the log line within 0.5 s
        assert server.process.poll() is None
        assert server.worker_pids() == before
        assert "default" in client.get_all_databases()  # the connection made before the signals is still served
        with server.client() as fresh:
            assert "default" in fresh.get_all_databases()
        client._iprot.trans.close()
        ignored = [ln for ln in server.output.splitlines() if "SIGHUP: TLS is off, nothing to reload" in ln]
        assert len(ignored) == 2, server.output  # once per signal, not once per worker
    finally:
        assert server.stop() == 0


def test_workers_stop_when_the_server_process_is_killed(tmp_path):
    # SIGKILL leaves the parent no chance to forward a stop: the workers notice it is gone and stop themselves.
    server = start_server(tmp_path, f"sqlite:///{tmp_path}/m.db", workers=2)
    try:
        workers = server.worker_pids()
        assert len(workers) == 2
        parent = server.process.pid
        os.kill(parent, signal.SIGKILL)
        server.process.wait(timeout=10)
        deadline = time.monotonic() + 20
        while not all(_gone(pid) for pid in workers):
            assert time.monotonic() < deadline, server.output
            time.sleep(0.2)
        # (No connect check here: once every process of this server is gone, any other program on this shared
        # machine may already listen on the port.)
        time.sleep(0.3)
        assert server.output.count(f"the server process {parent} is gone") == 2, server.output
    finally:
        server.stop()
