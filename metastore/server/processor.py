"""The Thrift processor: dispatch driven by the generated argument/result structs.

Compared with the generated `Processor` it
- tells malformed requests (unreadable header or arguments: the stream can no longer be trusted) apart from
  errors of the call itself, by raising `MalformedRequest` for the former;
- accepts i16, i32 or i64 wherever an argument is declared as an integer of another width;
- answers an unexpected error with a TApplicationException naming the method and the error (and logs it once),
  and never leaves half a reply on the wire when a reply cannot be encoded;
- logs each call's name and duration at debug level;
- answers each client in the Hive generation it has shown (metastore.wire.generations): a Hive 2 client's
  answers leave the catalog fields unset, as HMS 2.3.10's do.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.transport.TTransport import TTransportException

from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.api.hive_metastore.ttypes import MetaException
from metastore.server.authorization import Authorizer
from metastore.server.session import ConnectionSession
from metastore.wire.encoded import CLEARS_CATALOG, EncodedResult, StreamedResult
from metastore.wire.generations import Visit, catalog_clearer, table_paths, tables_at

log = logging.getLogger("metastore.server.calls")
# Replies whose bytes are already encoded (a tuple: `A | B` would build a union object on every call).
_ENCODED_REPLIES = (EncodedResult, StreamedResult)
denials = logging.getLogger("metastore.server.authorization")

_INT_TYPES = (TType.I16, TType.I32, TType.I64)
_READ_INT = {TType.I16: "readI16", TType.I32: "readI32", TType.I64: "readI64"}


class MalformedRequest(TProtocolException):
    """A request whose bytes cannot be decoded; its connection must be closed."""


def _read_with_any_int_width(self: Any, iprot: Any) -> None:
    """Read an argument struct accepting i16, i32 or i64 wherever Hive declares an integer.

    hive-metastore-client sends get_partitions' max_parts as i32 where Hive declares i16; generated readers
    would silently skip it (and return every partition). Argument structs are small, so the pure-Python read
    costs nothing that matters.
    """
    spec = {f[0]: f for f in self.thrift_spec if f}
    iprot.readStructBegin()
    while True:
        _, ftype, fid = iprot.readFieldBegin()
        if ftype == TType.STOP:
            break
        field = spec.get(fid)
        if field is None:
            iprot.skip(ftype)
        elif field[1] in _INT_TYPES and ftype in _INT_TYPES:
            # The value is kept as sent: max_parts=100000 sent as i32 means 100000, not a wrapped i16.
            setattr(self, field[2], getattr(iprot, _READ_INT[ftype])())
        elif field[1] == ftype:
            setattr(self, field[2], iprot.readFieldByTType(ftype, field[3]))
        else:
            iprot.skip(ftype)
        iprot.readFieldEnd()
    iprot.readStructEnd()


@dataclass(frozen=True)
class MethodSpec:
    """What the processor needs to serve one method of the IDL."""

    name: str
    args_cls: type
    result_cls: type | None  # None for oneway methods
    arg_names: tuple[str, ...]
    returns_value: bool
    # Declared exception class → name of its field in the result struct.
    exceptions: tuple[tuple[type, str], ...]
    lenient_ints: bool
    # Where the arguments carry a Table (which shows the client's IDL generation).
    table_paths: tuple[tuple[str, ...], ...]
    # Unsets the catalog fields of a return value, for Hive 2 clients; None when it cannot hold one.
    clear_catalog: Visit | None


def _method_specs() -> dict[str, MethodSpec]:
    """Every method of ThriftHiveMetastore (and fb303) from the generated structs."""
    dummy = ThriftHiveMetastore.Processor(None)
    specs = {}
    for name, fn in dummy._processMap.items():
        module = sys.modules[fn.__module__]
        args_cls = getattr(module, f"{name}_args")
        result_cls = getattr(module, f"{name}_result", None)
        arg_spec = [f for f in args_cls.thrift_spec or () if f]
        result_spec = [f for f in (result_cls.thrift_spec if result_cls else ()) or () if f] if result_cls else []
        specs[name] = MethodSpec(
            name=name,
            args_cls=args_cls,
            result_cls=result_cls,
            arg_names=tuple(f[2] for f in arg_spec),
            returns_value=any(f[0] == 0 for f in result_spec),
            exceptions=tuple((f[3][0], f[2]) for f in result_spec if f[0] != 0),
            lenient_ints=any(f[1] in _INT_TYPES for f in arg_spec),
            table_paths=table_paths(args_cls),
            clear_catalog=catalog_clearer(result_cls),
        )
    return specs


_METHODS = _method_specs()


class MetastoreProcessor:
    """Serves one call per `process` on a protocol pair; shares nothing mutable between threads."""

    def __init__(self, handler: object, authorizer: Authorizer | None = None) -> None:
        self._handler = handler
        self._authorizer = authorizer
        self._calls: dict[str, tuple[MethodSpec, Callable]] = {
            name: (spec, getattr(handler, name)) for name, spec in _METHODS.items()
        }

    def process(self, iprot: Any, oprot: Any, session: ConnectionSession | None = None) -> bool:
        try:
            name, mtype, seqid = iprot.readMessageBegin()
        except TTransportException:
            raise
        except Exception as exc:  # noqa: BLE001 - any decoding failure means garbage on the wire
            raise MalformedRequest(TProtocolException.INVALID_DATA, f"unreadable message header: {exc}") from None
        if mtype not in (TMessageType.CALL, TMessageType.ONEWAY):
            raise MalformedRequest(TProtocolException.INVALID_DATA, f"message type {mtype} of {name!r} is not a call")
        entry = self._calls.get(name)
        if entry is None:
            self._read_or_fail(name, lambda: iprot.skip(TType.STRUCT))
            self._write(
                oprot, name, TMessageType.EXCEPTION, seqid,
                TApplicationException(TApplicationException.UNKNOWN_METHOD, f"Unknown function {name[:200]}"),
            )
            return True
        spec, call = entry
        args: Any = spec.args_cls()  # a generated struct: its fields are the method's arguments
        if spec.lenient_ints:
            self._read_or_fail(name, lambda: _read_with_any_int_width(args, iprot))
        else:
            self._read_or_fail(name, lambda: args.read(iprot))

        if session is not None:
            if name == "set_ugi":
                session.generation.saw_set_ugi()
            if spec.table_paths:
                for table in tables_at(args, spec.table_paths):
                    session.generation.saw_table(table)

        authorizer = self._authorizer
        if authorizer is not None and session is not None:
            if name == "set_ugi" and not session.authenticated:
                # Without authentication the claim is all there is (as Hive without SASL); never with it.
                session.principal = str(args.user_name or "")
            refusal = authorizer.denial(name, args, session)
            if refusal is not None:
                denials.warning("%s (peer %s)", refusal, session.peer)
                self._refuse(oprot, spec, mtype, seqid, refusal)
                return True

        start = time.perf_counter()
        reply_type = TMessageType.REPLY
        reply: Any  # the result struct, an EncodedResult or a TApplicationException: each has write()
        clears = spec.clear_catalog is not None and session is not None and bool(session.generation.hive2)
        try:
            if clears:
                token = CLEARS_CATALOG.set(True)  # the handler may answer with bytes made for this client
                try:
                    value = call(*(getattr(args, n) for n in spec.arg_names))
                finally:
                    CLEARS_CATALOG.reset(token)
            else:
                value = call(*(getattr(args, n) for n in spec.arg_names))
            if authorizer is not None and session is not None:
                value = authorizer.filter_result(name, args, value, session)
            if isinstance(value, _ENCODED_REPLIES):
                reply = value  # the value's bytes, written as the result struct's success field
                if isinstance(value, StreamedResult) and clears:
                    value.visit = spec.clear_catalog  # applied to each page as it is encoded
            else:
                if clears and value is not None and spec.clear_catalog is not None:
                    spec.clear_catalog(value)  # answers are built per call: nothing shared is changed
                reply = spec.result_cls() if spec.result_cls is not None else None
                if spec.returns_value:
                    reply.success = value
        except TTransportException:
            raise
        except TApplicationException as exc:
            reply_type, reply = TMessageType.EXCEPTION, exc
        except Exception as exc:  # declared exceptions travel in the reply; others are reported
            reply = spec.result_cls() if spec.result_cls is not None else None
            field = next((f for cls, f in spec.exceptions if isinstance(exc, cls)), None)
            if field is not None and reply is not None:
                setattr(reply, field, exc)
            else:
                log.exception("%s failed", name)
                reply_type = TMessageType.EXCEPTION
                reply = TApplicationException(
                    TApplicationException.INTERNAL_ERROR, f"{name} failed: {type(exc).__name__}: {exc}"
                )
        finally:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s took %.2f ms", name, (time.perf_counter() - start) * 1000)
        if mtype == TMessageType.ONEWAY or spec.result_cls is None:
            if isinstance(reply, StreamedResult):
                reply.close()
            return True
        self._write(oprot, name, reply_type, seqid, reply)
        return True

    def _refuse(self, oprot: Any, spec: MethodSpec, mtype: int, seqid: int, message: str) -> None:
        """Answer a denied call with the MetaException it declares (else a TApplicationException)."""
        if mtype == TMessageType.ONEWAY or spec.result_cls is None:
            return
        field = next((f for cls, f in spec.exceptions if cls is MetaException), None)
        if field is not None:
            reply = spec.result_cls()
            setattr(reply, field, MetaException(message=message))
            self._write(oprot, spec.name, TMessageType.REPLY, seqid, reply)
        else:
            self._write(oprot, spec.name, TMessageType.EXCEPTION, seqid,
                        TApplicationException(TApplicationException.UNKNOWN, message))

    @staticmethod
    def _read_or_fail(name: str, read: Callable[[], None]) -> None:
        try:
            read()
        except (TTransportException, MalformedRequest):
            raise
        except Exception as exc:  # noqa: BLE001 - the C decoder raises TypeError, OverflowError, ...
            raise MalformedRequest(
                TProtocolException.INVALID_DATA, f"unreadable arguments of {name[:200]}: {exc}"
            ) from None

    @staticmethod
    def _write(oprot: Any, name: str, mtype: int, seqid: int, reply: Any) -> None:
        try:
            oprot.writeMessageBegin(name, mtype, seqid)
            reply.write(oprot)
            oprot.writeMessageEnd()
        except TTransportException:
            raise
        except Exception as exc:  # a reply that cannot be encoded is our bug: say so, in one piece
            log.exception("cannot encode the reply of %s", name)
            discard = getattr(oprot.trans, "discard_pending_writes", None)
            if discard is None:
                raise
            discard()
            oprot.writeMessageBegin(name, TMessageType.EXCEPTION, seqid)
            TApplicationException(
                TApplicationException.INTERNAL_ERROR, f"{name} failed: its reply cannot be encoded: {exc}"
            ).write(oprot)
            oprot.writeMessageEnd()
        oprot.trans.flush()
