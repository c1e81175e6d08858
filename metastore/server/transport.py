"""Per-connection transports and protocols with limits against memory exhaustion from one request.

Both transports bound the bytes one call may take (`max_message_size`: the frame size for framed transport, the
bytes read since the call began for buffered transport), on top of the protocol's string and container limits,
and read long values in linear time (Thrift's stock `readAll` concatenates chunk by chunk, which is quadratic:
one 60 MB string would pin a core for seconds).
"""

from __future__ import annotations

import socket
import struct
from io import BytesIO
from typing import TYPE_CHECKING

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.transport.TTransport import CReadableTransport, TTransportBase, TTransportException

if TYPE_CHECKING:
    from metastore.server.sasl import Wrapper

_FRAME_HEADER = struct.Struct("!i")
_READ_CHUNK = 64 * 1024


class SocketTransport(TTransportBase):
    """A plain blocking socket (or a TLS socket) as a Thrift transport (the server side of TSocket).

    Reads ask the socket for at least 64 KiB and keep what the caller did not want, so a small read (a SASL frame
    header, the rest of a call) costs no system call of its own, and a TLS socket never holds decrypted bytes
    back (a TLS record carries at most 16 KiB): the bytes of a call already received are always either here
    (`pending`) or signalled by the socket's descriptor, which is what the serving loop waits on. `received`
    counts the bytes handed to the caller."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.received = 0
        self._surplus = b""
        self._surplus_pos = 0

    def isOpen(self) -> bool:  # noqa: N802 - Thrift's naming
        return self._sock.fileno() >= 0

    def pending(self) -> int:
        """Bytes received from the socket and not yet read."""
        return len(self._surplus) - self._surplus_pos

    def unread(self, data: bytes) -> None:
        """Bytes received outside this transport that come before everything it has not yet returned."""
        self._surplus = data + self._surplus[self._surplus_pos:]
        self._surplus_pos = 0

    def read(self, sz: int) -> bytes:
        if self._surplus_pos < len(self._surplus):
            end = min(len(self._surplus), self._surplus_pos + sz)
            data = self._surplus[self._surplus_pos:end]
            self._surplus_pos = end
            self.received += len(data)
            return data
        try:
            data = self._sock.recv(max(sz, _READ_CHUNK))
        except (ConnectionResetError, TimeoutError) as exc:
            raise TTransportException(TTransportException.END_OF_FILE, f"connection lost: {exc}") from exc
        if not data:
            raise TTransportException(TTransportException.END_OF_FILE, "client closed the connection")
        if len(data) > sz:
            self._surplus, self._surplus_pos = data, sz
            data = data[:sz]
        self.received += len(data)
        return data

    def readAll(self, sz: int) -> bytes:  # noqa: N802
        """Exactly sz bytes; memory grows with what arrives, not with what a length field claims."""
        parts: list[bytes] = []
        have = 0
        while have < sz:
            chunk = self.read(min(sz - have, 1 << 20))
            parts.append(chunk)
            have += len(chunk)
        return b"".join(parts)

    def write(self, buf: bytes) -> None:
        self._sock.sendall(buf)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class SaslFrameTransport(SocketTransport):
    """The data phase of a SASL connection (Thrift's TSaslTransport): each side's bytes travel in 4-byte-length
    frames, passed through the negotiated GSSAPI layer (integrity or confidentiality) when there is one.

    Stands where SocketTransport stands, so the buffered or framed transport above is unchanged: one write (a
    whole reply) is one SASL frame. Frames over `max_frame_size` are refused before they are allocated."""

    def __init__(self, sock: socket.socket, max_frame_size: int, wrapper: Wrapper | None = None) -> None:
        super().__init__(sock)
        self._max = max_frame_size
        self._wrapper = wrapper
        self._frame = b""
        self._pos = 0

    def pending(self) -> int:
        """Bytes of a received frame not yet read, and of later frames already received (the socket will not
        signal either again)."""
        return len(self._frame) - self._pos + super().pending()

    def _recv_exact(self, size: int) -> bytes:
        parts: list[bytes] = []
        have = 0
        while have < size:
            chunk = super().read(min(size - have, 1 << 20))
            parts.append(chunk)
            have += len(chunk)
        return b"".join(parts)

    def _next_frame(self) -> None:
        (size,) = _FRAME_HEADER.unpack(self._recv_exact(4))
        if size < 0 or size > self._max:
            raise TTransportException(
                TTransportException.SIZE_LIMIT, f"SASL frame of {size} bytes exceeds the limit of {self._max} bytes"
            )
        payload = self._recv_exact(size)
        if self._wrapper is not None:
            try:
                payload = self._wrapper.unwrap(payload)
            except Exception as exc:  # noqa: BLE001 - a frame that fails its integrity check ends the connection
                raise TTransportException(TTransportException.UNKNOWN,
                                          f"SASL frame failed its security layer check: {exc}") from None
        self._frame = payload
        self._pos = 0

    def read(self, sz: int) -> bytes:
        while self._pos >= len(self._frame):
            self._next_frame()
        end = min(len(self._frame), self._pos + sz)
        data = self._frame[self._pos:end]
        self._pos = end
        return data

    def readAll(self, sz: int) -> bytes:  # noqa: N802
        parts: list[bytes] = []
        have = 0
        while have < sz:
            chunk = self.read(sz - have)
            parts.append(chunk)
            have += len(chunk)
        return b"".join(parts)

    def write(self, buf: bytes) -> None:
        if self._wrapper is not None:
            buf = self._wrapper.wrap(buf)
        self._sock.sendall(_FRAME_HEADER.pack(len(buf)) + buf)


class _BufferedWrites:
    """Writes collected until flush, so a reply goes out in one send."""

    _trans: SocketTransport

    def prepend_received(self, data: bytes) -> None:
        """Bytes of the connection read before this transport existed (after a SASL negotiation over TLS)."""
        self._trans.unread(data)

    def _reset_writes(self) -> None:
        self._wbuf: list[bytes] = []

    def write(self, buf: bytes) -> None:
        self._wbuf.append(buf)

    def discard_pending_writes(self) -> None:
        """Forget what was written since the last flush (a reply that failed half-way)."""
        self._wbuf = []


class BoundedBufferedTransport(_BufferedWrites, TTransportBase, CReadableTransport):
    """Thrift's buffered transport (what HMS clients speak) with a per-call byte budget."""

    def __init__(self, trans: SocketTransport, max_message_size: int, rbuf_size: int = _READ_CHUNK) -> None:
        self._trans = trans
        self._max = max_message_size
        self._rbuf_size = rbuf_size
        self._rbuf = BytesIO(b"")
        self._call_start = 0
        self._reset_writes()

    def begin_call(self) -> None:
        """Start counting the next call's bytes (bytes already buffered belong to it too)."""
        self._call_start = self._trans.received - (len(self._rbuf.getbuffer()) - self._rbuf.tell())

    def _check_budget(self) -> None:
        used = self._trans.received - self._call_start
        if used > self._max:
            raise TTransportException(
                TTransportException.SIZE_LIMIT, f"request larger than the limit of {self._max} bytes"
            )

    def isOpen(self) -> bool:  # noqa: N802
        return self._trans.isOpen()

    def close(self) -> None:
        self._trans.close()

    def read(self, sz: int) -> bytes:
        ret = self._rbuf.read(sz)
        if ret:
            return ret
        self._rbuf = BytesIO(self._trans.read(max(sz, self._rbuf_size)))
        self._check_budget()
        return self._rbuf.read(sz)

    def readAll(self, sz: int) -> bytes:  # noqa: N802
        head = self._rbuf.read(sz)
        if len(head) == sz:
            return head
        # Refill the buffer as a read does: the pure-Python reads of a call's message header (a few bytes each)
        # then come from it, and so does the rest of the call, which the accelerated decoder takes straight from
        # the buffer, instead of each going to the socket reader.
        data = head + self._trans.read(max(self._rbuf_size, min(sz - len(head), 1 << 20)))
        self._check_budget()
        if len(data) < sz:
            data += self._read_exact(sz - len(data))
        self._rbuf = BytesIO(data)
        return self._rbuf.read(sz)

    def _read_exact(self, sz: int) -> bytes:
        parts: list[bytes] = []
        have = 0
        while have < sz:
            chunk = self._trans.read(min(sz - have, 1 << 20))
            self._check_budget()
            parts.append(chunk)
            have += len(chunk)
        return b"".join(parts)

    def flush(self) -> None:
        payload = b"".join(self._wbuf)
        self._wbuf = []
        self._trans.write(payload)

    def send_pending(self) -> None:
        """Send what a reply wrote so far (a streamed reply, wire.encoded.StreamedResult): the buffered
        transport has no frames, so a reply may leave in pieces."""
        self.flush()

    # CReadableTransport, so the accelerated protocol decodes straight from our buffer.
    @property
    def cstringio_buf(self) -> BytesIO:
        return self._rbuf

    def cstringio_refill(self, partialread: bytes, reqlen: int) -> BytesIO:
        data = partialread
        if len(data) < reqlen:
            data += self._trans.read(max(self._rbuf_size, reqlen - len(data)))
            self._check_budget()
        if len(data) < reqlen:
            data += self._read_exact(reqlen - len(data))
        self._rbuf = BytesIO(data)
        return self._rbuf


class BoundedFramedTransport(_BufferedWrites, TTransportBase, CReadableTransport):
    """Thrift framed transport that refuses frames larger than `max_frame_size` before allocating them."""

    def __init__(self, trans: SocketTransport, max_frame_size: int) -> None:
        self._trans = trans
        self._max = max_frame_size
        self._rbuf = BytesIO(b"")
        self._reset_writes()

    def begin_call(self) -> None:
        """Frames carry their own size; nothing to count."""

    def isOpen(self) -> bool:  # noqa: N802
        return self._trans.isOpen()

    def close(self) -> None:
        self._trans.close()

    def read(self, sz: int) -> bytes:
        ret = self._rbuf.read(sz)
        if ret:
            return ret
        self._read_frame()
        return self._rbuf.read(sz)

    def _read_frame(self) -> None:
        (size,) = _FRAME_HEADER.unpack(self._trans.readAll(4))
        if size < 0 or size > self._max:
            raise TTransportException(
                TTransportException.SIZE_LIMIT, f"frame of {size} bytes exceeds the limit of {self._max} bytes"
            )
        self._rbuf = BytesIO(self._trans.readAll(size))

    def flush(self) -> None:
        payload = b"".join(self._wbuf)
        self._wbuf = []
        self._trans.write(_FRAME_HEADER.pack(len(payload)) + payload)

    @property
    def cstringio_buf(self) -> BytesIO:
        return self._rbuf

    def cstringio_refill(self, prefix: bytes, reqlen: int) -> BytesIO:
        while len(prefix) < reqlen:
            self._read_frame()
            prefix += self._rbuf.getvalue()
        self._rbuf = BytesIO(prefix)
        return self._rbuf


def open_connection(
    sock: socket.socket, *, framed: bool, max_frame_size: int, max_string_size: int, max_container_size: int,
    sasl: bool = False, sasl_wrapper: Wrapper | None = None,
) -> tuple[BoundedBufferedTransport | BoundedFramedTransport, TBinaryProtocolAccelerated]:
    """Wrap an accepted socket in the transport HMS clients speak and a size-limited binary protocol.

    max_frame_size bounds one request: a frame for framed transport, the bytes of one call otherwise. With
    `sasl` (negotiation done) the bytes travel in SASL data frames, through `sasl_wrapper` if one was negotiated."""
    raw = SaslFrameTransport(sock, max_frame_size, sasl_wrapper) if sasl else SocketTransport(sock)
    trans: BoundedBufferedTransport | BoundedFramedTransport
    if framed:
        trans = BoundedFramedTransport(raw, max_frame_size)
    else:
        trans = BoundedBufferedTransport(raw, max_frame_size)
    proto = TBinaryProtocolAccelerated(
        trans,
        strictRead=False,
        strictWrite=True,
        string_length_limit=max_string_size,
        container_length_limit=max_container_size,
    )
    return trans, proto
