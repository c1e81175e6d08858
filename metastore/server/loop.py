"""The serving loop: pre-forked worker processes sharing one listening socket, a thread per connection.

Python's GIL would cap a single process at one core; N worker processes (default: one per core) each accept
from the same socket, and each serves its connections on threads (clients hold connections open for long,
and database round trips release the GIL). Workers keep their shares of the connections even: which worker's
accept wins a new connection is otherwise up to the scheduler, and one worker with three of four long-lived
connections serves them on one core with its threads queueing for the GIL, while the other has one
(`ConnectionBalance`). The parent only supervises: it restarts a worker that dies and
forwards SIGTERM/SIGINT for a clean shutdown, and SIGHUP (reload the TLS certificate) to every worker. SIGHUP
never stops the server: with TLS off there is nothing to reload, and it is logged and ignored (the authorization
policy and password file are re-read by themselves when they change). A worker whose parent is gone (killed with
SIGKILL, so it could not forward a stop) stops too rather than serve on unsupervised.
"""

from __future__ import annotations

import gc
import logging
import mmap
import os
import select
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException
from thrift.transport.TTransport import TTransportException

from metastore.server.auth import Authenticator, AuthOptions
from metastore.server.sasl import SaslRefused, SaslResult, negotiate
from metastore.server.session import ConnectionSession, peer_text
from metastore.server.tls import TlsContext, TlsOptions
from metastore.server.transport import open_connection

log = logging.getLogger("metastore.server")

NOTHING_TO_RELOAD = ("SIGHUP: TLS is off, nothing to reload; ignored (the authorization policy and the password "
                     "file are re-read when they change)")

class Processor(Protocol):
    """Serves one call per `process` on a protocol pair (metastore.server.processor.MetastoreProcessor)."""

    def process(self, iprot: Any, oprot: Any, session: ConnectionSession | None = None) -> bool: ...


ProcessorFactory = Callable[[], Processor]

# How long a worker with more open connections than another leaves a new connection to the other workers before
# taking it itself (a worker that is stuck or gone must not keep connections waiting for long).
ACCEPT_DEFER_SECONDS = 0.1
# How often a deferring worker looks whether the connection was taken meanwhile.
ACCEPT_DEFER_STEP_SECONDS = 0.005
# How long the server waits for every worker to accept before it says it is listening.
WORKERS_READY_SECONDS = 10.0


class ConnectionBalance:
    """Open connections per worker, in memory the forked workers share (one counter per worker slot, written
    only by that slot's worker).

    Every idle worker wakes when a connection arrives; a worker holding more connections than another defers
    (`should_defer`), so the one with fewer takes it. Clients keep their metastore connection for a session, so
    who got the connections at start-up decides how the load spreads for hours: measured with 4 JVM clients on
    2 workers, a 3-and-1 split served a cheap call at two thirds of the throughput of a 2-and-2 split."""

    # The count of a worker that is not accepting (starting, stopping, gone): never deferred to.
    NOT_ACCEPTING = 1 << 62

    def __init__(self, workers: int) -> None:
        self._map = mmap.mmap(-1, 8 * workers)  # anonymous and shared: the same pages in every forked worker
        self._counts = memoryview(self._map).cast("q")
        for slot in range(workers):
            self._counts[slot] = self.NOT_ACCEPTING

    def set(self, slot: int, connections: int) -> None:
        self._counts[slot] = connections

    def counts(self) -> list[int]:
        return list(self._counts)

    def all_accepting(self) -> bool:
        return all(n != self.NOT_ACCEPTING for n in self._counts)

    def should_defer(self, slot: int) -> bool:
        """True when the worker in `slot` holds more connections than some other (accepting) worker."""
        mine = self._counts[slot]
        return any(n < mine for i, n in enumerate(self._counts) if i != slot)


@dataclass(frozen=True)
class ServeOptions:
    host: str
    port: int
    workers: int
    framed: bool
    max_frame_size: int
    max_string_size: int
    max_container_size: int
    # How long a worker waits for in-flight calls when asked to stop.
    grace_seconds: float = 10.0
    # TLS on every accepted connection; None serves plaintext.
    tls: TlsOptions | None = None
    # SASL (Kerberos or PLAIN) on every connection, after TLS; None: no authentication.
    auth: AuthOptions | None = None


def bind_socket(host: str, port: int) -> socket.socket:
    """Open the listening socket before forking, so every worker accepts from the same one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(512)
    return sock


class Worker:
    """One worker process: accepts connections and serves each on its own thread until told to stop."""

    def __init__(self, listener: socket.socket, make_processor: ProcessorFactory, options: ServeOptions,
                 parent_pid: int | None = None, balance: ConnectionBalance | None = None, slot: int = 0) -> None:
        self._listener = listener
        # Connections per worker, shared with the other workers (None: this is the only worker).
        self._balance = balance
        self._slot = slot
        # The supervising process of a forked worker (None: this process is the server itself).
        self._parent_pid = parent_pid
        self._make_processor = make_processor
        self._options = options
        self._stopping = threading.Event()
        # Set by the signal handler; the accept loop turns it into _stopping. A handler must take no lock:
        # a second signal arriving inside Event.set() would re-enter it and deadlock on the Event's lock.
        self._stop_requested = False
        # Set by SIGHUP's handler, turned into a TLS reload by the accept loop (a handler must not do the work).
        self._reload_requested = False
        self._tls: TlsContext | None = None
        self._auth: Authenticator | None = None
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._busy = 0

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT stop this worker (a request that arrives while it starts up is kept); SIGHUP reloads
        the TLS certificate when TLS is on, and is logged and ignored otherwise (its default action would kill
        the process)."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGHUP, self._on_reload_signal)

    def run(self) -> None:
        self.install_signal_handlers()
        if self._options.tls is not None:
            self._tls = TlsContext(self._options.tls)
        if self._options.auth is not None:
            self._auth = Authenticator(self._options.auth)
        processor = self._make_processor()
        _tune_garbage_collector()
        if self._stop_requested:
            self._stopping.set()
            return
        # Waiting in poll with a timeout lets the loop notice a stop request without another thread closing the
        # socket; accept itself never blocks (another worker may take the connection first).
        self._listener.settimeout(0.0)
        poller = select.poll()
        poller.register(self._listener, select.POLLIN)
        with self._lock:
            self._publish_count()  # accepting from here on (a restarted worker's slot starts from none)
        while not self._stop_requested:
            if self._reload_requested:
                self._reload_requested = False
                if self._tls is not None:
                    self._tls.reload()
                else:
                    log.info(NOTHING_TO_RELOAD)
            try:
                ready = poller.poll(500)
            except OSError as exc:
                log.warning("waiting for connections failed: %s", exc)
                time.sleep(0.05)
                continue
            if not ready:
                if self._parent_pid is not None and os.getppid() != self._parent_pid:
                    log.error("the server process %d is gone; worker %d stops", self._parent_pid, os.getpid())
                    break
                continue
            if self._balance is not None and self._balance.should_defer(self._slot):
                # Leave the connection to a worker with fewer; take it after all if none of them did. Look again
                # every few ms rather than sleeping the whole deferral: as soon as another worker took it (nothing
                # pending) or the counts even out, go on, so connections arriving meanwhile are not kept waiting.
                deadline = time.monotonic() + ACCEPT_DEFER_SECONDS
                while self._balance.should_defer(self._slot) and time.monotonic() < deadline:
                    time.sleep(ACCEPT_DEFER_STEP_SECONDS)
                    if not poller.poll(0):
                        break
            try:
                conn, peer = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                continue  # another worker took it
            except OSError as exc:
                if self._stop_requested:
                    break
                log.warning("accept failed: %s", exc)
                time.sleep(0.05)
                continue
            conn.settimeout(None)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._track(conn)
            try:
                threading.Thread(
                    target=self._serve_connection, args=(processor, conn, peer), daemon=True, name=f"conn-{peer}"
                ).start()
            except RuntimeError as exc:  # no more threads: refuse this connection, keep serving the others
                log.error("cannot serve the connection from %s: %s", peer, exc)
                self._untrack(conn)
                conn.close()
        with self._lock:
            self._stopping.set()
            if self._balance is not None:
                self._balance.set(self._slot, ConnectionBalance.NOT_ACCEPTING)
        self._drain()

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)
            self._publish_count()

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)
            self._publish_count()

    def _publish_count(self) -> None:
        """Tell the other workers how many connections this one holds, while it accepts (under self._lock)."""
        if self._balance is not None and not self._stopping.is_set():
            self._balance.set(self._slot, len(self._connections))

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._stop_requested = True

    def _on_reload_signal(self, signum: int, _frame: object) -> None:
        self._reload_requested = True

    def _handshake(self, conn: socket.socket, peer: object) -> socket.socket | None:
        """Wrap the accepted socket in TLS within the handshake time limit; None (connection closed) if the
        client does not speak TLS, fails verification or is too slow."""
        assert self._tls is not None and self._options.tls is not None
        try:
            wrapped = self._tls.context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        except (ssl.SSLError, OSError) as exc:
            log.info("TLS handshake with %s failed, closing the connection: %s", peer, exc)
            self._untrack(conn)
            conn.close()
            return None
        # wrap_socket detached the plain socket: shutdown (_drain) must now reach the wrapped one.
        with self._lock:
            self._connections.discard(conn)
            self._connections.add(wrapped)
        try:
            _handshake_within(wrapped, self._options.tls.handshake_timeout)
        except (ssl.SSLError, OSError) as exc:
            reason = "handshake timed out" if isinstance(exc, TimeoutError) else str(exc)
            log.info("TLS handshake with %s failed, closing the connection: %s", peer, reason)
            self._untrack(wrapped)
            wrapped.close()
            return None
        wrapped.setblocking(True)
        return wrapped

    def _authenticate(self, conn: socket.socket, peer: str) -> SaslResult | None:
        """Run the SASL negotiation within the time limit; None (connection closed, one log line) if it fails."""
        assert self._auth is not None
        try:
            return negotiate(conn, self._auth.mechanisms, self._auth.options.timeout)
        except SaslRefused as exc:
            log.warning("authentication of the connection from %s failed, closing it: %s", peer, exc)
        except TimeoutError:
            log.info("SASL negotiation with %s timed out, closing the connection", peer)
        except (OSError, ssl.SSLError) as exc:
            log.info("SASL negotiation with %s failed, closing the connection: %s", peer, exc)
        except Exception:  # a mechanism's unexpected failure must close this connection only
            log.exception("SASL negotiation with %s failed unexpectedly; closing the connection", peer)
        self._untrack(conn)
        try:
            conn.close()
        except OSError:
            pass
        return None

    def _drain(self) -> None:
        """Stop taking calls: wait for in-flight calls, then close idle connections."""
        deadline = time.monotonic() + self._options.grace_seconds
        while time.monotonic() < deadline:
            with self._lock:
                if self._busy == 0:
                    break
            time.sleep(0.05)
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _serve_connection(self, processor: Processor, conn: socket.socket, peer: object) -> None:
        opts = self._options
        if self._tls is not None:
            wrapped = self._handshake(conn, peer)
            if wrapped is None:
                return
            conn = wrapped
        session = ConnectionSession(peer=peer_text(peer))
        sasl: SaslResult | None = None
        if self._auth is not None:
            sasl = self._authenticate(conn, session.peer)
            if sasl is None:
                return
            session = ConnectionSession(peer=session.peer, principal=sasl.principal, authenticated=True,
                                        mechanism=sasl.mechanism)
            log.info("connection from %s authenticated as %s (%s)", session.peer, sasl.principal, sasl.mechanism)
        trans, proto = open_connection(
            conn,
            framed=opts.framed,
            max_frame_size=opts.max_frame_size,
            max_string_size=opts.max_string_size,
            max_container_size=opts.max_container_size,
            sasl=sasl is not None,
            sasl_wrapper=sasl.wrapper if sasl is not None else None,
        )
        if sasl is not None and isinstance(conn, ssl.SSLSocket):
            # The negotiation read small pieces straight from TLS: bytes a client sent right behind it may sit
            # decrypted inside the SSL object, where the descriptor will not signal them. Hand them over once.
            try:
                early = conn.recv(conn.pending()) if conn.pending() else b""
            except OSError:
                early = b""
            if early:
                trans.prepend_received(early)
        log.debug("connection from %s", peer)
        pending = _pending_of(trans)
        try:
            while not self._stopping.is_set():
                # Wait for the first byte of the next call outside the busy count, so shutdown does not
                # wait for idle clients.
                # TLS keeps no decrypted bytes back (SocketTransport reads whole records), so the transport's
                # buffers and the descriptor tell everything; SSLSocket.pending() would release the GIL per call.
                if not (_has_buffered_input(trans, pending) or _wait_readable(conn, self._stopping)):
                    break
                with self._lock:
                    self._busy += 1
                try:
                    trans.begin_call()
                    processor.process(proto, proto, session)
                finally:
                    with self._lock:
                        self._busy -= 1
        except TTransportException as exc:
            if exc.type != TTransportException.END_OF_FILE:
                log.info("closing connection from %s: %s", peer, exc)
        except (TProtocolException, TApplicationException, EOFError, UnicodeDecodeError, ValueError) as exc:
            # Malformed input: the stream can no longer be trusted, so this connection ends; others go on.
            log.info("closing connection from %s after malformed input: %s", peer, exc)
        except OSError as exc:
            log.debug("connection from %s lost: %s", peer, exc)
        except Exception:  # one bad connection must never take the worker down
            log.exception("unexpected error on connection from %s; closing it", peer)
        finally:
            self._untrack(conn)
            try:
                trans.close()
            except OSError:
                pass


def _tune_garbage_collector() -> None:
    """Keep the cyclic garbage collector off the hot path.

    A large reply allocates tens of thousands of short-lived (acyclic, reference-counted) objects; with the
    default thresholds they trigger full collections that scan every long-lived object of the worker (modules,
    SQLAlchemy's caches) and took a third of such a call. Objects alive after start-up are frozen out of the
    collections, and collections run after many more allocations (cycles are still collected)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


def _pending_of(trans: object) -> Callable[[], int] | None:
    """The `pending` method of the socket reader (or SASL frame) under a transport, looked up once per
    connection; None when there is none."""
    return getattr(getattr(trans, "_trans", None), "pending", None)


def _has_buffered_input(trans: object, pending: Callable[[], int] | None) -> bool:
    """True when the transport (or the socket reader or SASL frame under it, whose `pending` is given) already
    holds bytes of the next call (a client that pipelined calls)."""
    buf = getattr(trans, "cstringio_buf", None)
    if buf is not None and buf.tell() < len(buf.getbuffer()):
        return True
    return pending is not None and pending() > 0


def _handshake_within(sock: ssl.SSLSocket, seconds: float) -> None:
    """Run the server side of the TLS handshake, all of it within `seconds` (TimeoutError otherwise).

    Non-blocking with poll, so the limit covers the whole handshake: a socket timeout would restart with each
    byte a slow client trickles in."""
    deadline = time.monotonic() + seconds
    sock.setblocking(False)
    poller = select.poll()
    while True:
        try:
            sock.do_handshake()
            return
        except ssl.SSLWantReadError:
            poller.register(sock, select.POLLIN)
        except ssl.SSLWantWriteError:
            poller.register(sock, select.POLLOUT)
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            raise TimeoutError("handshake timed out")
        poller.unregister(sock)


def _wait_readable(conn: socket.socket, stopping: threading.Event) -> bool:
    """Block until the connection has data (True) or is closed / the worker is stopping (False).

    poll, not select: select cannot watch descriptors numbered 1024 and above, which a worker with many
    connections hands out."""
    poller = select.poll()
    poller.register(conn, select.POLLIN | select.POLLPRI)
    while not stopping.is_set():
        try:
            events = poller.poll(500)
        except OSError:
            return False
        if events:
            return True
    return False


def serve_forever(
    listener: socket.socket, make_processor: ProcessorFactory, options: ServeOptions, on_ready: Callable[[], None]
) -> int:
    """Fork `options.workers` workers on `listener` and supervise them until SIGTERM/SIGINT; returns an exit code."""
    if options.workers <= 1:
        worker = Worker(listener, make_processor, options)
        # Handlers before the ready line: a SIGTERM sent as soon as it appears must stop cleanly, not kill.
        worker.install_signal_handlers()
        on_ready()
        worker.run()
        return 0

    children: dict[int, int] = {}
    stopping = False
    parent_pid = os.getpid()
    balance = ConnectionBalance(options.workers)

    def spawn(slot: int) -> None:
        # Signals stay blocked across fork until the child has its own handlers: one arriving in between would
        # otherwise run the parent's handler in the child, and the child would never stop.
        stop_signals = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        try:
            pid = os.fork()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stop_signals)
            raise
        if pid == 0:
            code = 0
            try:
                worker = Worker(listener, make_processor, options, parent_pid=parent_pid, balance=balance,
                                slot=slot)
                worker.install_signal_handlers()
                signal.pthread_sigmask(signal.SIG_UNBLOCK, stop_signals)
                worker.run()
            except BaseException:  # report, then leave the child without running parent code
                log.exception("worker %d failed", slot)
                code = 1
            finally:
                logging.shutdown()
                os._exit(code)
        children[pid] = slot
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stop_signals)

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def on_reload(signum: int, _frame: object) -> None:
        if options.tls is None:
            log.info(NOTHING_TO_RELOAD)  # said once here, not once per worker
            return
        # Each worker holds its own SSLContext: every one of them must reload.
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGHUP)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_reload)
    for first in range(options.workers):
        spawn(first)
    # Say "listening" once every worker accepts: clients that connect right away then spread over all of them
    # (a worker still starting would otherwise leave them all to the first one ready). Bounded: a worker that
    # fails to start is restarted by the loop below.
    deadline = time.monotonic() + WORKERS_READY_SECONDS
    while not stopping and not balance.all_accepting() and time.monotonic() < deadline:
        time.sleep(0.01)
    on_ready()
    restarts: list[float] = []
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        slot = children.pop(pid, None)
        if slot is not None:
            balance.set(slot, ConnectionBalance.NOT_ACCEPTING)
        if slot is None or stopping:
            continue
        code = os.waitstatus_to_exitcode(status)
        log.error("worker %d (pid %d) exited with %s; starting a new one", slot, pid, code)
        now = time.monotonic()
        restarts = [t for t in restarts if now - t < 60] + [now]
        if len(restarts) > 10:
            log.error("workers keep dying (more than 10 restarts in a minute); shutting down")
            on_signal(signal.SIGTERM, None)
            continue
        spawn(slot)
    listener.close()
    sys.stdout.flush()
    return 0
