"""A readiness probe for any Hive-Metastore-compatible server that needs no generated code.

It sends one `get_all_databases` call with the plain `thrift` runtime (TSocket, TBufferedTransport,
TBinaryProtocol: what every HMS client speaks) and decodes the list<string> reply by hand, so a server
counts as ready only when it really answers Thrift, not merely when its port accepts connections.
"""

from __future__ import annotations

import logging

from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.transport import TSocket, TTransport


class ProbeError(RuntimeError):
    """The server answered, but not with a well-formed get_all_databases reply."""


def probe_thrift_server(host: str, port: int, timeout: float = 5.0) -> list[str]:
    """Call get_all_databases on host:port and return the database names; raises OSError/ProbeError."""
    # TSocket logs every refused connection at ERROR; while polling a starting server that is only noise.
    logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)
    sock = TSocket.TSocket(host, port)
    sock.setTimeout(timeout * 1000)
    transport = TTransport.TBufferedTransport(sock)
    proto = TBinaryProtocol.TBinaryProtocol(transport)
    try:
        transport.open()
    except TTransport.TTransportException as exc:
        raise OSError(f"cannot connect to {host}:{port}: {exc}") from exc
    try:
        proto.writeMessageBegin("get_all_databases", TMessageType.CALL, 1)
        proto.writeStructBegin("get_all_databases_args")
        proto.writeFieldStop()
        proto.writeStructEnd()
        proto.writeMessageEnd()
        transport.flush()
        name, mtype, _seqid = proto.readMessageBegin()
        if mtype == TMessageType.EXCEPTION:
            exc = TApplicationException()
            exc.read(proto)
            raise ProbeError(f"get_all_databases raised TApplicationException: {exc.message}")
        if name != "get_all_databases":
            raise ProbeError(f"reply names method {name!r}, expected 'get_all_databases'")
        names: list[str] | None = None
        proto.readStructBegin()
        while True:
            _fname, ftype, fid = proto.readFieldBegin()
            if ftype == TType.STOP:
                break
            if fid == 0 and ftype == TType.LIST:
                _etype, size = proto.readListBegin()
                names = [proto.readString() for _ in range(size)]
                proto.readListEnd()
            else:
                proto.skip(ftype)
            proto.readFieldEnd()
        proto.readStructEnd()
        proto.readMessageEnd()
        if names is None:
            raise ProbeError(
                "get_all_databases reply has no success field (the server raised MetaException?)"
            )
        return names
    except TTransport.TTransportException as exc:
        raise OSError(f"{host}:{port} closed the connection during get_all_databases: {exc}") from exc
    finally:
        transport.close()
