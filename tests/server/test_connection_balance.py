"""Workers keep their shares of the connections even (metastore.server.loop.ConnectionBalance): a worker holding
more connections than another leaves a new one to it, and takes it itself only when no other worker does.

Long-lived clients (Spark's driver, the JVM bench) keep the split they got at start-up: a 3-and-1 split of four
connections on two workers served the cheap calls at about two thirds of a 2-and-2 split's throughput."""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from metastore.server import loop
from metastore.server.loop import ConnectionBalance, ServeOptions, Worker, bind_socket
from server.harness import ServerProcess, start_server
from server.test_tls import _tls_thrift_client, make_pki


def test_balance_counts_are_shared_and_defer_only_the_busier_worker() -> None:
    balance = ConnectionBalance(3)
    gone = ConnectionBalance.NOT_ACCEPTING
    assert balance.counts() == [gone] * 3 and not balance.all_accepting()
    balance.set(0, 1)
    assert not balance.should_defer(0)  # workers that do not accept (yet) are never deferred to
    balance.set(0, 2)
    balance.set(1, 1)
    balance.set(2, 2)
    assert balance.counts() == [2, 1, 2] and balance.all_accepting()
    assert balance.should_defer(0) and balance.should_defer(2)
    assert not balance.should_defer(1)
    balance.set(1, 2)
    assert not any(balance.should_defer(slot) for slot in range(3))  # equal shares: everyone accepts

    # Forked workers see each other's counts (the memory is shared, not copied).
    pid = os.fork()
    if pid == 0:
        balance.set(1, 7)
        os._exit(0)
    os.waitpid(pid, 0)
    assert balance.counts() == [2, 7, 2]


class _ReadOnly:
    """A processor that reads a message and answers nothing: the test's clients never send, so a connection
    ends when its client closes it."""

    def process(self, iprot: Any, oprot: Any, session: object = None) -> bool:
        iprot.readMessageBegin()
        return True


def _wait_for(predicate: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


@pytest.fixture
def worker_in_slot_0(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Worker, socket.socket, ConnectionBalance]]:
    """A Worker (slot 0 of 2) accepting on a thread of this process; slot 1 is a worker the test plays."""
    monkeypatch.setattr(Worker, "install_signal_handlers", lambda self: None)  # signals need the main thread
    listener = bind_socket("127.0.0.1", 0)
    balance = ConnectionBalance(2)
    options = ServeOptions(host="127.0.0.1", port=listener.getsockname()[1], workers=2, framed=False,
                           max_frame_size=1 << 20, max_string_size=1 << 20, max_container_size=1 << 16,
                           grace_seconds=1.0)
    worker = Worker(listener, _ReadOnly, options, balance=balance, slot=0)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        yield worker, listener, balance
    finally:
        worker._stop_requested = True
        thread.join(timeout=10)
        listener.close()


def test_a_busier_worker_leaves_new_connections_to_a_less_busy_one(
    worker_in_slot_0: tuple[Worker, socket.socket, ConnectionBalance], monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, listener, balance = worker_in_slot_0
    port = listener.getsockname()[1]
    balance.set(1, 0)  # the other worker accepts, with no connections
    assert _wait_for(lambda: balance.counts()[0] == 0, 5.0), balance.counts()  # this one accepts too
    monkeypatch.setattr(loop, "ACCEPT_DEFER_SECONDS", 1.5)
    clients: list[socket.socket] = []
    try:
        # Equal shares (0 and 0): the worker takes the first connection at once.
        clients.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        assert _wait_for(lambda: balance.counts()[0] == 1, 3.0), balance.counts()

        # 1 against 0: the worker leaves the next one for the other worker (the test), which takes it.
        clients.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        assert select.select([listener], [], [], 3.0)[0], "the connection never became acceptable"
        taken, _ = listener.accept()
        taken.close()
        time.sleep(1.8)  # the worker's deferral is over, and it found nothing left to take
        assert balance.counts()[0] == 1

        # The other worker is busier now (5 against 1): no deferring, the worker takes it well within the 5 s.
        monkeypatch.setattr(loop, "ACCEPT_DEFER_SECONDS", 5.0)
        balance.set(1, 5)
        clients.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        assert _wait_for(lambda: balance.counts()[0] == 2, 2.0), balance.counts()

        # A less busy worker that does not accept (stuck, or gone) delays a connection, never refuses it.
        monkeypatch.setattr(loop, "ACCEPT_DEFER_SECONDS", 0.2)
        balance.set(1, 0)
        clients.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        assert _wait_for(lambda: balance.counts()[0] == 3, 5.0), balance.counts()

        # Closed connections leave the count.
        clients.pop(0).close()
        assert _wait_for(lambda: balance.counts()[0] == 2, 5.0), balance.counts()
    finally:
        for c in clients:
            c.close()
    assert _wait_for(lambda: balance.counts()[0] == 0, 5.0), balance.counts()
    worker._stop_requested = True  # a stopping worker takes itself out of the balance
    assert _wait_for(lambda: balance.counts()[0] == ConnectionBalance.NOT_ACCEPTING, 5.0), balance.counts()


def _connections_per_worker(server: ServerProcess) -> list[int]:
    """Established connections to the server's port held by each worker process (from /proc)."""
    inodes: set[str] = set()
    with open("/proc/net/tcp") as f:
        for line in f.read().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == server.port and fields[3] == "01":
                inodes.add(fields[9])
    workers = [int(p) for p in Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
               .read_text().split()]
    counts = []
    for pid in sorted(workers):
        held = 0
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            held += target.startswith("socket:[") and target[8:-1] in inodes
        counts.append(held)
    return counts


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="counts connections through Linux /proc")
@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
def test_long_lived_connections_spread_evenly_over_workers(tmp_path: Path, tls: bool) -> None:
    """Four clients connected one after another, as the JVM bench's, end up two on each of the two workers."""
    extra: list[str] = []
    if tls:
        pki = make_pki(tmp_path / "pki")
        extra = ["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)]
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=2, extra_args=extra)
    transports = []
    try:
        for _ in range(4):
            if tls:
                client, trans = _tls_thrift_client(server.port, pki.ca)
            else:
                client = server.connect()
                trans = client._iprot.trans
            transports.append(trans)
            assert client.get_all_databases() is not None  # the connection is accepted and served
        assert _wait_for(lambda: sorted(_connections_per_worker(server)) == [2, 2], 5.0), \
            _connections_per_worker(server)
    finally:
        for trans in transports:
            trans.close()
        server.stop()
