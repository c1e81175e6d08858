"""The Thrift processor: generated dispatch plus integer-width tolerance and per-call timing."""

from __future__ import annotations

import logging
import time

from thrift.Thrift import TType

from metastore.api.hive_metastore import ThriftHiveMetastore

log = logging.getLogger("metastore.server.calls")

_INT_TYPES = (TType.I16, TType.I32, TType.I64)
_READ_INT = {TType.I16: "readI16", TType.I32: "readI32", TType.I64: "readI64"}


def _read_with_any_int_width(self: object, iprot: object) -> None:
    """Read an argument struct accepting i16, i32 or i64 wherever Hive declares an integer.

    hive-metastore-client sends get_partitions' max_parts as i32 where Hive declares i16; generated readers
    would silently skip it (and return every partition). Argument structs are small, so the pure-Python read
    costs nothing that matters.
    """
    spec = {f[0]: f for f in self.thrift_spec if f}  # type: ignore[attr-defined]
    iprot.readStructBegin()  # type: ignore[attr-defined]
    while True:
        _, ftype, fid = iprot.readFieldBegin()  # type: ignore[attr-defined]
        if ftype == TType.STOP:
            break
        field = spec.get(fid)
        if field is None:
            iprot.skip(ftype)  # type: ignore[attr-defined]
        elif field[1] in _INT_TYPES and ftype in _INT_TYPES:
            setattr(self, field[2], getattr(iprot, _READ_INT[ftype])())
        elif field[1] == ftype:
            setattr(self, field[2], iprot.readFieldByTType(ftype, field[3]))  # type: ignore[attr-defined]
        else:
            iprot.skip(ftype)  # type: ignore[attr-defined]
        iprot.readFieldEnd()  # type: ignore[attr-defined]
    iprot.readStructEnd()  # type: ignore[attr-defined]


def _install_lenient_integer_args() -> None:
    for name in dir(ThriftHiveMetastore):
        if not name.endswith("_args"):
            continue
        cls = getattr(ThriftHiveMetastore, name)
        spec = getattr(cls, "thrift_spec", None) or ()
        if any(f and f[1] == TType.I16 for f in spec):
            cls.read = _read_with_any_int_width


_install_lenient_integer_args()


class MetastoreProcessor(ThriftHiveMetastore.Processor):
    """Generated dispatch; each call's name and duration go to the debug log."""

    def __init__(self, handler: object) -> None:
        super().__init__(handler)
        if log.isEnabledFor(logging.DEBUG):
            self._processMap = {name: _timed(name, fn) for name, fn in self._processMap.items()}


def _timed(name: str, fn):  # noqa: ANN001, ANN202 - generated processor callables
    def call(processor, seqid, iprot, oprot):  # noqa: ANN001, ANN202
        start = time.perf_counter()
        try:
            return fn(processor, seqid, iprot, oprot)
        finally:
            log.debug("%s took %.2f ms", name, (time.perf_counter() - start) * 1000)

    return call
