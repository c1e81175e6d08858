"""Start and stop our own server (`metastore serve`) as a subprocess for interop tests and the benchmark."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from interop.reference_hms import free_port, stop_process
from interop.thrift_probe import ProbeError, probe_thrift_server

READY_MARKER = "listening on"


class OurServerUnavailable(RuntimeError):
    """`metastore serve` is missing, exited, or never said it was listening."""


@dataclass
class OurServer:
    """A running `metastore serve`."""

    host: str
    port: int
    db_url: str
    process: subprocess.Popen[str]
    log_path: Path
    _reader: threading.Thread | None = field(default=None, repr=False)

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no output)"

    def stop(self) -> None:
        stop_process(self.process, grace=15.0)
        if self._reader is not None:
            self._reader.join(timeout=5)


def metastore_command() -> list[str]:
    """The `metastore` entry point next to the running interpreter (the project's virtualenv)."""
    exe = Path(sys.executable).with_name("metastore")
    if exe.exists():
        return [str(exe)]
    raise OurServerUnavailable(
        f"{exe} does not exist: install the project (pip install -e '.[test]') so `metastore serve` is available"
    )


def start_our_server(
    workdir: Path,
    db_url: str,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    timeout: float = 60.0,
    extra_args: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> OurServer:
    """Create the schema (`metastore db upgrade`), run `metastore serve` on db_url, and return once it printed
    "listening on" and answers a Thrift call."""
    workdir.mkdir(parents=True, exist_ok=True)
    upgrade = subprocess.run(
        [*metastore_command(), "db", "upgrade", "--db", db_url], capture_output=True, text=True, timeout=120
    )
    if upgrade.returncode != 0:
        raise OurServerUnavailable(
            f"`metastore db upgrade --db {db_url}` exited {upgrade.returncode}:\n{upgrade.stdout}\n{upgrade.stderr}"
        )
    warehouse = workdir / "warehouse"
    warehouse.mkdir(exist_ok=True)
    port = port or free_port(host)
    cmd = [
        *metastore_command(),
        "serve",
        "--host",
        host,
        "--port",
        str(port),
        "--db",
        db_url,
        "--warehouse",
        str(warehouse),
        *(extra_args or []),
    ]
    log_path = workdir / "server.log"
    process = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=workdir,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    ready = threading.Event()

    def pump() -> None:
        # Copies the server's output to its log file for the whole run, and flags the ready line.
        assert process.stdout is not None
        with open(log_path, "w") as log:
            for line in process.stdout:
                log.write(line)
                log.flush()
                if READY_MARKER in line:
                    ready.set()

    reader = threading.Thread(target=pump, name=f"metastore-serve-{port}", daemon=True)
    reader.start()
    server = OurServer(
        host=host, port=port, db_url=db_url, process=process, log_path=log_path, _reader=reader
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            reader.join(timeout=5)
            raise OurServerUnavailable(
                f"`{' '.join(cmd)}` exited with code {process.returncode} before listening:\n{server.log_tail()}"
            )
        if ready.wait(timeout=0.2):
            break
    else:
        server.stop()
        raise OurServerUnavailable(
            f"`{' '.join(cmd)}` did not print {READY_MARKER!r} within {timeout:.0f} s:\n{server.log_tail()}"
        )
    try:
        probe_thrift_server(host, port, timeout=10.0)
    except (OSError, ProbeError) as exc:
        server.stop()
        raise OurServerUnavailable(
            f"`metastore serve` said it was listening on {host}:{port} but get_all_databases failed: {exc}\n"
            f"{server.log_tail()}"
        ) from exc
    return server
