"""A loopback TCP proxy that records the Thrift calls passing through it, with the outcome of each.

Clients connect to the proxy; bytes go on unchanged to the server. Afterwards `calls()` decodes both directions
(TBinaryProtocol, unframed, as every HMS client speaks by default) into (method, outcome) pairs, where outcome is
"ok" (success field 0), "void" (empty reply), "exception <id>" (a declared exception at that field id) or
"application-exception" (TApplicationException). This names the exact methods a client used; the reference
server's own log merges several (get_table_req logs as get_table, *_with_environment_context as the short name).
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field

from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TMessageType, TType
from thrift.transport import TTransport


@dataclass(frozen=True)
class RecordedCall:
    method: str
    outcome: str


@dataclass
class _Conversation:
    to_server: bytearray = field(default_factory=bytearray)
    to_client: bytearray = field(default_factory=bytearray)


class ThriftRecorder:
    """Listens on 127.0.0.1:<port> and forwards every connection to upstream (host, port)."""

    def __init__(self, upstream: tuple[str, int], host: str = "127.0.0.1") -> None:
        self.upstream = upstream
        self._listener = socket.create_server((host, 0))
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._conversations: list[_Conversation] = []
        self._lock = threading.Lock()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._accept_thread = threading.Thread(target=self._accept, name="thrift-recorder", daemon=True)
        self._accept_thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            conv = _Conversation()
            with self._lock:
                self._conversations.append(conv)
            for src, dst, buf in ((client, server, conv.to_server), (server, client, conv.to_client)):
                t = threading.Thread(target=self._pump, args=(src, dst, buf), daemon=True)
                t.start()
                self._threads.append(t)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, buf: bytearray) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                buf.extend(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for t in self._threads:
            t.join(timeout=2)

    def calls(self) -> list[RecordedCall]:
        """Every call of every connection, in order per connection, with its outcome."""
        out: list[RecordedCall] = []
        with self._lock:
            conversations = list(self._conversations)
        for conv in conversations:
            requests = _decode(bytes(conv.to_server), replies=False)
            replies = _decode(bytes(conv.to_client), replies=True)
            outcomes = {seq_name: outcome for seq_name, outcome in replies}
            for key, _ in requests:
                out.append(RecordedCall(key[1], outcomes.get(key, "no reply")))
        return out


def _decode(data: bytes, replies: bool) -> list[tuple[tuple[int, str], str]]:
    """(seqid, method) and, for replies, the outcome of each complete message in a byte stream."""
    proto = TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(data))
    found = []
    index = 0
    while True:
        try:
            name, mtype, seqid = proto.readMessageBegin()
            outcome = "call"
            if mtype == TMessageType.EXCEPTION:
                outcome = "application-exception"
                proto.skip(TType.STRUCT)
            else:
                proto.readStructBegin()
                _fname, ftype, fid = proto.readFieldBegin()
                if ftype == TType.STOP:
                    outcome = "void"
                else:
                    outcome = "ok" if fid == 0 else f"exception {fid}"
                    proto.skip(ftype)
                    proto.readFieldEnd()
                    while True:
                        _fname, ftype, _fid = proto.readFieldBegin()
                        if ftype == TType.STOP:
                            break
                        proto.skip(ftype)
                        proto.readFieldEnd()
                proto.readStructEnd()
            proto.readMessageEnd()
        except (EOFError, TTransport.TTransportException, Exception):  # noqa: BLE001 - end of stream or a cut message
            break
        # Oneway calls and seqid 0 clients (the JVM uses increasing ids): key by position as a fallback.
        key = (seqid if seqid else -(index + 1), name)
        found.append((key, outcome if replies else "call"))
        index += 1
    return found
