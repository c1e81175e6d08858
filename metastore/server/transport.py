"""Per-connection transports and protocols with limits against memory exhaustion from one request."""

from __future__ import annotations

import socket
import struct
from io import BytesIO

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.transport import TTransport
from thrift.transport.TTransport import CReadableTransport, TTransportBase, TTransportException

_FRAME_HEADER = struct.Struct("!i")


class SocketTransport(TTransportBase):
    """A plain blocking socket as a Thrift transport (the server side of TSocket)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def isOpen(self) -> bool:  # noqa: N802 - Thrift's naming
        return self._sock.fileno() >= 0

    def read(self, sz: int) -> bytes:
        try:
            data = self._sock.recv(sz)
        except (ConnectionResetError, TimeoutError) as exc:
            raise TTransportException(TTransportException.END_OF_FILE, f"connection lost: {exc}") from exc
        if not data:
            raise TTransportException(TTransportException.END_OF_FILE, "client closed the connection")
        return data

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


class BoundedFramedTransport(TTransportBase, CReadableTransport):
    """Thrift framed transport that refuses frames larger than `max_frame_size` before allocating them."""

    def __init__(self, trans: TTransportBase, max_frame_size: int) -> None:
        self._trans = trans
        self._max = max_frame_size
        self._rbuf = BytesIO(b"")
        self._wbuf: list[bytes] = []

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

    def write(self, buf: bytes) -> None:
        self._wbuf.append(buf)

    def flush(self) -> None:
        payload = b"".join(self._wbuf)
        self._wbuf = []
        self._trans.write(_FRAME_HEADER.pack(len(payload)) + payload)
        self._trans.flush()

    # CReadableTransport, so the accelerated protocol can decode straight from our buffer.
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
    sock: socket.socket, *, framed: bool, max_frame_size: int, max_string_size: int, max_container_size: int
) -> tuple[TTransportBase, TBinaryProtocolAccelerated]:
    """Wrap an accepted socket in the transport HMS clients speak and a size-limited binary protocol."""
    raw = SocketTransport(sock)
    trans: TTransportBase
    if framed:
        trans = BoundedFramedTransport(raw, max_frame_size)
    else:
        trans = TTransport.TBufferedTransport(raw)
    proto = TBinaryProtocolAccelerated(
        trans,
        strictRead=False,
        strictWrite=True,
        string_length_limit=max_string_size,
        container_length_limit=max_container_size,
    )
    return trans, proto
