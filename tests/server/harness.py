"""Running `metastore serve` as a subprocess for the server tests, and connecting our generated client to it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from metastore.api.hive_metastore import ThriftHiveMetastore

READY_MARKER = "listening on"


def metastore_exe() -> str:
    """The `metastore` console script of the interpreter running the tests."""
    exe = Path(sys.executable).with_name("metastore")
    if not exe.exists():
        raise RuntimeError(f"{exe} is missing: install the project with `pip install -e '.[test]'`")
    return str(exe)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerFailed(RuntimeError):
    """`metastore serve` exited or never said it was listening."""


@dataclass
class ServerProcess:
    """One running `metastore serve` and everything it printed."""

    process: subprocess.Popen[str]
    port: int
    db_url: str
    workdir: Path
    log_path: Path
    framed: bool = False
    ready_line: str = ""
    _lines: list[str] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _reader: threading.Thread | None = field(default=None, repr=False)

    @property
    def output(self) -> str:
        with self._lock:
            return "".join(self._lines)

    def output_once(self, text: str, timeout: float = 30.0) -> str:
        """The output once it holds `text` (the server's lines reach it through a pipe and a reader thread, a
        moment after the call that logged them has answered); the output so far if it never does."""
        deadline = time.monotonic() + timeout
        while text not in (out := self.output) and time.monotonic() < deadline:
            time.sleep(0.05)
        return out

    def worker_pids(self) -> list[int]:
        """Pids of the worker processes (children of the server process)."""
        try:
            text = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def connect(self, timeout: float = 30.0) -> ThriftHiveMetastore.Client:
        return connect(self.port, framed=self.framed, timeout=timeout)

    @contextmanager
    def client(self, timeout: float = 30.0) -> Iterator[ThriftHiveMetastore.Client]:
        c = self.connect(timeout)
        try:
            yield c
        finally:
            c._iprot.trans.close()

    def signal(self, signum: int) -> None:
        os.kill(self.process.pid, signum)

    def wait(self, timeout: float = 30.0) -> int:
        code = self.process.wait(timeout=timeout)
        if self._reader is not None:
            self._reader.join(timeout=5)
        return code

    def stop(self) -> int:
        """SIGTERM, then SIGKILL of the whole process group if it does not stop in time; returns the exit code."""
        if self.process.poll() is None:
            try:
                self.process.send_signal(signal.SIGTERM)
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=5)
        return self.process.returncode


def connect(port: int, *, framed: bool = False, timeout: float = 30.0) -> ThriftHiveMetastore.Client:
    """Our generated client over TBufferedTransport (or framed) + TBinaryProtocol, as HMS clients connect."""
    sock = TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(timeout * 1000)
    trans = TTransport.TFramedTransport(sock) if framed else TTransport.TBufferedTransport(sock)
    trans.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(trans))


def start_server(
    workdir: Path,
    db_url: str,
    *,
    workers: int = 2,
    extra_args: list[str] | None = None,
    env: dict[str, str] | None = None,
    port: int | None = None,
    wait_ready: bool = True,
    timeout: float = 60.0,
    only_args: list[str] | None = None,
) -> ServerProcess:
    """Start `metastore serve` and (by default) wait for its "listening on" line.

    only_args replaces every flag this function would pass (to test environment variables and defaults);
    `port` must then be the port the server will use."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    if only_args is not None:
        args = [metastore_exe(), "serve", *only_args]
    else:
        args = [
            metastore_exe(),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--db",
            db_url,
            "--warehouse",
            str(workdir / "warehouse"),
            "--workers",
            str(workers),
            *(extra_args or []),
        ]
    log_path = workdir / f"server-{port}.log"
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_") or k == "METASTORE_TEST_PG"}
    child_env.update(env or {})
    process = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=workdir,
        env=child_env,
        start_new_session=True,
    )
    server = ServerProcess(
        process=process, port=port, db_url=db_url, workdir=workdir, log_path=log_path,
        framed="--framed" in (extra_args or []),
    )
    ready = threading.Event()

    def pump() -> None:
        assert process.stdout is not None
        with open(log_path, "w") as log:
            for line in process.stdout:
                log.write(line)
                log.flush()
                with server._lock:
                    server._lines.append(line)
                if READY_MARKER in line and not ready.is_set():
                    server.ready_line = line.strip()
                    ready.set()

    server._reader = threading.Thread(target=pump, daemon=True, name=f"serve-{port}")
    server._reader.start()
    if not wait_ready:
        return server
    deadline = time.monotonic() + timeout
    while not ready.wait(0.1):
        if process.poll() is not None:
            server._reader.join(timeout=5)
            raise ServerFailed(f"metastore serve exited with {process.returncode}:\n{server.output}")
        if time.monotonic() > deadline:
            server.stop()
            raise ServerFailed(f"metastore serve did not start within {timeout} s:\n{server.output}")
    return server


# ---------------------------------------------------------------- PostgreSQL databases


@contextmanager
def fresh_pg_database(admin_url: str, *, template: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database (URL), empty or a copy of `template` (a database name), dropped afterwards."""
    name = f"mssrv_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    url = sa.engine.make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"), {"n": name}
            )
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()
