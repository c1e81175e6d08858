"""Thrift replies as bytes: structs encoded once (TBinaryProtocol) and written to the wire without decoding.

The server's hot reads answer from ColumnStatisticsObj bytes stored with each statistics row; the functions here
frame those bytes as the reply structs (PartitionsStatsResult, TableStatsResult) and `EncodedResult` carries a
reply value so the processor writes it as is.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport.TTransport import TMemoryBuffer

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
        trans.write(self.struct_bytes)
        trans.write(b"\x00")  # end of the result struct


_T_STRING, _T_STRUCT, _T_MAP, _T_LIST = 11, 12, 13, 15


def partitions_stats_result(parts: Sequence[tuple[str, int, bytes]]) -> bytes:
    """A PartitionsStatsResult ({1: map<string, list<ColumnStatisticsObj>> partStats}) from, per partition,
    its name, the number of statistics and their encoded ColumnStatisticsObj structs, concatenated."""
    out = [_pack_field_map(len(parts))]
    for name, count, objs in parts:
        key = name.encode("utf-8")
        out.append(_pack_i32(len(key)))
        out.append(key)
        out.append(_pack_list(_T_STRUCT, count))
        out.append(objs)
    out.append(b"\x00")
    return b"".join(out)


def table_stats_result(count: int, objs: bytes) -> bytes:
    """A TableStatsResult ({1: list<ColumnStatisticsObj> tableStats}) from the number of statistics and their
    encoded ColumnStatisticsObj structs, concatenated."""
    return _pack_field_list(_T_LIST, 1, _T_STRUCT, count) + objs + b"\x00"


_pack_field_list = struct.Struct(">bhbi").pack
_pack_i32 = struct.Struct(">i").pack
_pack_list = struct.Struct(">bi").pack


def _pack_field_map(size: int) -> bytes:
    return struct.pack(">bhbbi", _T_MAP, 1, _T_STRING, _T_LIST, size)
