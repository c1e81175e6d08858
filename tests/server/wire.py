"""Thrift messages as bytes, for sending malformed and hand-made frames to the server."""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Callable

from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TMessageType, TType
from thrift.transport import TTransport

from metastore.api.hive_metastore import ThriftHiveMetastore

VERSION_1 = -2147418112  # 0x80010000 as a signed i32


def call_bytes(send: Callable[[ThriftHiveMetastore.Client], None]) -> bytes:
    """The bytes our client writes for one call, e.g. call_bytes(lambda c: c.send_get_table("db", "t"))."""
    buf = TTransport.TMemoryBuffer()
    client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(buf))
    send(client)
    return buf.getvalue()


def message(name: str, body: bytes, *, seqid: int = 1, mtype: int = TMessageType.CALL) -> bytes:
    """A strict binary-protocol message header followed by `body` (the argument struct's bytes)."""
    raw = name.encode()
    return struct.pack("!ii", VERSION_1 | mtype, len(raw)) + raw + struct.pack("!i", seqid) + body


def field(ftype: int, fid: int, payload: bytes) -> bytes:
    return struct.pack("!bh", ftype, fid) + payload


def string(value: bytes, claimed_length: int | None = None) -> bytes:
    return struct.pack("!i", len(value) if claimed_length is None else claimed_length) + value


def framed(payload: bytes) -> bytes:
    return struct.pack("!i", len(payload)) + payload


def exchange(port: int, data: bytes, *, timeout: float = 20.0) -> tuple[bytes, bool]:
    """Send `data` on a new connection, half-close it and read until the server closes.

    Returns (everything the server sent, whether it closed the connection within the timeout)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may close before reading everything: that is an allowed answer
        received = bytearray()
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return bytes(received), True
                received += chunk
        except TimeoutError:
            return bytes(received), False
        except OSError:
            return bytes(received), True


def flip_bits(data: bytes, rng: random.Random, flips: int) -> bytes:
    out = bytearray(data)
    for _ in range(flips):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


ALL_TTYPES = [TType.BOOL, TType.BYTE, TType.DOUBLE, TType.I16, TType.I32, TType.I64, TType.STRING, TType.STRUCT,
              TType.MAP, TType.SET, TType.LIST]


def value_of_type(ttype: int, rng: random.Random) -> bytes:
    """A small well-formed value of a wire type (for wrong-type arguments)."""
    if ttype in (TType.BOOL, TType.BYTE):
        return bytes([rng.randrange(256)])
    if ttype == TType.I16:
        return struct.pack("!h", rng.randrange(-(2**15), 2**15))
    if ttype == TType.I32:
        return struct.pack("!i", rng.randrange(-(2**31), 2**31))
    if ttype in (TType.I64, TType.DOUBLE):
        return struct.pack("!q", rng.randrange(-(2**63), 2**63))
    if ttype == TType.STRING:
        return string(bytes(rng.randrange(256) for _ in range(rng.randrange(8))))
    if ttype == TType.STRUCT:
        return field(TType.I32, 1, struct.pack("!i", 7)) + b"\x00"
    if ttype == TType.MAP:
        return struct.pack("!bbi", TType.STRING, TType.I32, 1) + string(b"k") + struct.pack("!i", 1)
    return struct.pack("!bi", TType.I32, 2) + struct.pack("!ii", 1, 2)
