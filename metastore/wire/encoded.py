"""Thrift replies as bytes: structs encoded once (TBinaryProtocol) and written to the wire without decoding.

The server's hot reads answer from ColumnStatisticsObj bytes stored with each statistics row; the functions here
frame those bytes as the reply structs (PartitionsStatsResult, TableStatsResult) and `EncodedResult` carries a
reply value so the processor writes it as is.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport.TTransport import TMemoryBuffer, TTransportException

from metastore.api.hive_metastore import ttypes as tt

try:
    from thrift.protocol.fastbinary import encode_binary as _encode_binary
except ImportError:  # pragma: no cover - thrift built without its C extension
    _encode_binary = None

# (thrift_spec is assigned after each generated class, where mypy does not see it.)
_OBJ_SPEC = [tt.ColumnStatisticsObj, tt.ColumnStatisticsObj.thrift_spec]  # type: ignore[attr-defined]


def encode_obj(obj: tt.ColumnStatisticsObj) -> bytes:
    """The TBinaryProtocol bytes of one ColumnStatisticsObj (a complete struct, ending in its STOP byte)."""
    return encode_struct(obj, _OBJ_SPEC)


def encode_struct(obj: Any, spec: list | None = None) -> bytes:
    """The TBinaryProtocol bytes of a generated Thrift struct (ending in its STOP byte)."""
    if _encode_binary is not None:
        return _encode_binary(obj, spec or [type(obj), obj.thrift_spec])
    buf = TMemoryBuffer()
    obj.write(TBinaryProtocol(buf))
    return buf.getvalue()


class EncodedResult:
    """A reply value already encoded as Thrift: the bytes of the method's return struct. The processor writes
    them as field 0 (success) of the method's result struct."""

    __slots__ = ("struct_bytes",)

    def __init__(self, struct_bytes: bytes) -> None:
        self.struct_bytes = struct_bytes

    def write(self, oprot: Any) -> None:
        """Write the whole result struct ({0: the value}) to the protocol's transport."""
        trans = oprot.trans
        trans.write(b"\x0c\x00\x00")  # field 0 (success), a struct
        data = self.struct_bytes
        send = getattr(trans, "send_pending", None)
        if send is None or len(data) <= STREAM_SEND_BYTES:
            trans.write(data)
        else:
            # A large reply (a cached 23 MB one) leaves STREAM_SEND_BYTES at a time over the buffered transport,
            # which would otherwise copy it whole into one send buffer.
            view = memoryview(data)
            for start in range(0, len(data), STREAM_SEND_BYTES):
                trans.write(view[start : start + STREAM_SEND_BYTES])
                send()
        trans.write(b"\x00")  # end of the result struct


_T_STRING, _T_STRUCT, _T_MAP, _T_LIST = 11, 12, 13, 15

log = logging.getLogger("metastore.server")

# Bytes of a streamed reply collected before they go to the socket (buffered transport): what the server holds
# of a reply of any size at a time.
STREAM_SEND_BYTES = 1 << 20


# Whether the processor clears the catalog fields of the current call's reply (a Hive 2 client's answers; it then
# sets StreamedResult.visit): set for the duration of the call, so a handler answering with stored bytes can pick
# the bytes made for that client before it answers. False outside the processor (in-process calls: visit unset).
CLEARS_CATALOG: ContextVar[bool] = ContextVar("clears_catalog", default=False)


class StreamedResult:
    """A reply value written piece by piece as it is produced (a reply of 100,000 partitions never exists
    whole in the server): `pieces` yields the TBinaryProtocol bytes of the method's return value, in order,
    `field_type` is that value's Thrift type (a struct, a list...). The processor writes it as field 0
    (success) of the method's result struct.

    Over the buffered transport every STREAM_SEND_BYTES go out as they are ready (transports with
    `send_pending`); framed transport needs the frame's length first, so there the pieces are collected (as
    bytes) until the end. Whoever makes a StreamedResult does every check that can fail with a declared error
    before: once bytes have left, a failure can only end the connection (the client sees it closed, never a
    wrong reply). `close` (called once the pieces are written, or not) releases what the pieces read from.
    """

    __slots__ = ("_close", "field_type", "pieces", "visit")

    def __init__(self, field_type: int, pieces: Iterable[bytes], close: Callable[[], None] | None = None) -> None:
        self.field_type = field_type
        self.pieces = pieces
        self._close = close
        # Set by the processor before writing: what to do to each page of decoded values before it is encoded
        # (a Hive 2 client's answers leave catalog fields unset, metastore.wire.generations). Pieces built from
        # values call it; pieces of stored bytes have nothing it could change.
        self.visit: Callable[[Any], None] | None = None

    def close(self) -> None:
        """Release what the pieces read from (a database snapshot); safe to call more than once."""
        close, self._close = self._close, None
        if close is not None:
            close()

    def write(self, oprot: Any) -> None:
        """Write the whole result struct ({0: the value}) to the protocol's transport, sending as it goes."""
        trans = oprot.trans
        send = getattr(trans, "send_pending", None)
        pending = 3
        sent = False
        try:
            trans.write(struct.pack(">bh", self.field_type, 0))
            for piece in self.pieces:
                trans.write(piece)
                pending += len(piece)
                if send is not None and pending >= STREAM_SEND_BYTES:
                    send()
                    sent = True
                    pending = 0
            trans.write(b"\x00")  # end of the result struct
        except TTransportException:
            raise
        except Exception as exc:
            if not sent:
                raise  # nothing left yet: the processor answers with an error instead
            log.exception("a streamed reply failed after part of it was sent; closing the connection")
            raise TTransportException(
                TTransportException.UNKNOWN, f"reply failed after part of it was sent: {exc}"
            ) from exc
        finally:
            self.close()


def list_header(element_type: int, size: int) -> bytes:
    """The TBinaryProtocol header of a list (or set) of `size` elements of `element_type`."""
    return _pack_list(element_type, size)


def string_list_body(values: Sequence[str]) -> bytes:
    """The elements of a list<string> (without its header)."""
    out = []
    for value in values:
        data = value.encode("utf-8")
        out.append(_pack_i32(len(data)))
        out.append(data)
    return b"".join(out)


def struct_list_body(structs: Iterable[object]) -> bytes:
    """The elements of a list of generated Thrift structs (without its header)."""
    return b"".join(encode_struct(s) for s in structs)


def partitions_stats_map_header(size: int) -> bytes:
    """The start of a PartitionsStatsResult whose partStats map has `size` entries (see partitions_stats_entries)."""
    return _pack_field_map(size)


def partitions_stats_entries(parts: Sequence[tuple[str, int, bytes]]) -> bytes:
    """Entries of a PartitionsStatsResult's map (name, number of statistics, their encoded objects)."""
    out = []
    for name, count, objs in parts:
        key = name.encode("utf-8")
        out.append(_pack_i32(len(key)))
        out.append(key)
        out.append(_pack_list(_T_STRUCT, count))
        out.append(objs)
    return b"".join(out)



def partitions_stats_result(parts: Sequence[tuple[str, int, bytes]]) -> bytes:
    """A PartitionsStatsResult ({1: map<string, list<ColumnStatisticsObj>> partStats}) from, per partition,
    its name, the number of statistics and their encoded ColumnStatisticsObj structs, concatenated."""
    return _pack_field_map(len(parts)) + partitions_stats_entries(parts) + b"\x00"


def table_stats_result(count: int, objs: bytes) -> bytes:
    """A TableStatsResult ({1: list<ColumnStatisticsObj> tableStats}) from the number of statistics and their
    encoded ColumnStatisticsObj structs, concatenated."""
    return _pack_field_list(_T_LIST, 1, _T_STRUCT, count) + objs + b"\x00"


_pack_field_list = struct.Struct(">bhbi").pack
_pack_i32 = struct.Struct(">i").pack
_pack_list = struct.Struct(">bi").pack


def _pack_field_map(size: int) -> bytes:
    return struct.pack(">bhbbi", _T_MAP, 1, _T_STRING, _T_LIST, size)
