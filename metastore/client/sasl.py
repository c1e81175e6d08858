"""The client side of SASL on the Thrift port, as Hive's clients speak it (Thrift's TSaslClientTransport).

GSSAPI uses the Kerberos ticket cache (kinit, KRB5CCNAME) and the server's principal `service/host@REALM` (Hive's
hive.metastore.kerberos.principal, `_HOST` replaced by the host name of the URI, as Hive's client does); PLAIN sends a
user name and password (only over TLS: `thrifts://`). After negotiation each message travels in a 4-byte-length
frame. Imports the optional `gssapi` package only when Kerberos is used.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from thrift.transport.TTransport import CReadableTransport, TTransportBase, TTransportException

from metastore.errors import InvalidInput

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
_HEADER = struct.Struct("!BI")
_FRAME = struct.Struct("!i")
_MAX_NEGOTIATION_MESSAGE = 1 << 20
_QOP_LAYERS = {"auth": 1, "auth-int": 2, "auth-conf": 4}


class SaslFailed(Exception):
    """Negotiation failed; the message says why (the server's reason when it sent one), never a password."""


@dataclass(frozen=True)
class SaslCredentials:
    """How a client authenticates: `mechanism` GSSAPI (principal: the server's) or PLAIN (user, password)."""

    mechanism: str
    kerberos_principal: str = ""
    qop: str = "auth"
    user: str = ""
    password: str = ""

    def __post_init__(self) -> None:
        if self.mechanism not in ("GSSAPI", "PLAIN"):
            raise InvalidInput(f"SASL mechanism {self.mechanism!r} is not GSSAPI or PLAIN")
        if self.mechanism == "GSSAPI" and not self.kerberos_principal:
            raise InvalidInput("Kerberos needs the server's principal (e.g. metastore/_HOST@EXAMPLE.COM)")
        if self.mechanism == "PLAIN" and not self.user:
            raise InvalidInput("PLAIN authentication needs a user name")
        if self.qop not in _QOP_LAYERS:
            raise InvalidInput(f"SASL QOP {self.qop!r} is not one of auth, auth-int, auth-conf")

    def __repr__(self) -> str:  # never show the password
        return f"SaslCredentials(mechanism={self.mechanism!r}, user={self.user!r}, principal={self.kerberos_principal!r})"


def resolve_principal(pattern: str, host: str) -> str:
    """The server principal with `_HOST` replaced by the host of the URI as written, lower-cased: what Hive's
    client does (Hadoop's SecurityUtil.getServerPrincipal with the URI's host), so both find the same principal.
    Connect by the name the service principal carries (thrift://metastore1.example.com:9083, not an address)."""
    return pattern.replace("_HOST", host.lower())


class _Peer:
    """Negotiation messages over an open Thrift socket transport."""

    def __init__(self, trans: Any) -> None:
        self._trans = trans

    def send(self, status: int, payload: bytes) -> None:
        self._trans.write(_HEADER.pack(status, len(payload)) + payload)
        self._trans.flush()

    def receive(self) -> tuple[int, bytes]:
        status, length = _HEADER.unpack(self._trans.readAll(_HEADER.size))
        if status not in (START, OK, BAD, ERROR, COMPLETE) or length > _MAX_NEGOTIATION_MESSAGE:
            raise SaslFailed(f"the server does not speak SASL (got status {status}, length {length})")
        payload = self._trans.readAll(length) if length else b""
        if status in (BAD, ERROR):
            raise SaslFailed(f"the server refused: {payload[:500].decode('utf-8', 'replace')}")
        return status, payload


class _GssLayer:
    def __init__(self, ctx: Any, encrypt: bool) -> None:
        self._ctx = ctx
        self._encrypt = encrypt

    def wrap(self, data: bytes) -> bytes:
        return bytes(self._ctx.wrap(data, self._encrypt).message)

    def unwrap(self, data: bytes) -> bytes:
        try:
            result = self._ctx.unwrap(data)
        except Exception as exc:  # noqa: BLE001 - gssapi's GSSError: a frame that fails its check ends the connection
            raise TTransportException(TTransportException.UNKNOWN,
                                      f"a SASL frame failed its security layer check: {_one_line(exc)}") from None
        if self._encrypt and not result.encrypted:
            # auth-conf was agreed: a frame that is only signed was not sent by a server keeping the agreement
            # (or was altered on the way); its contents must not be believed.
            raise TTransportException(TTransportException.UNKNOWN,
                                      "a SASL frame arrived unencrypted on a connection negotiated with auth-conf")
        return bytes(result.message)


def negotiate(trans: Any, host: str, creds: SaslCredentials) -> _GssLayer | None:
    """Authenticate on the open transport `trans`; returns the GSSAPI security layer to wrap frames with, if any."""
    peer = _Peer(trans)
    if creds.mechanism == "PLAIN":
        peer.send(START, b"PLAIN")
        peer.send(COMPLETE, b"\0" + creds.user.encode("utf-8") + b"\0" + creds.password.encode("utf-8"))
        status, _ = peer.receive()
        if status != COMPLETE:
            raise SaslFailed(f"expected SASL COMPLETE after PLAIN, got status {status}")
        return None
    return _negotiate_gssapi(peer, host, creds)


def _negotiate_gssapi(peer: _Peer, host: str, creds: SaslCredentials) -> _GssLayer | None:
    try:
        import gssapi  # noqa: PLC0415 - optional dependency (the kerberos extra)
    except ImportError:
        raise SaslFailed("Kerberos needs the gssapi package: pip install 'metastore[kerberos]'") from None
    principal = resolve_principal(creds.kerberos_principal, host)
    try:
        target = gssapi.Name(principal, gssapi.NameType.kerberos_principal)
        flags = int(gssapi.RequirementFlag.mutual_authentication) | int(gssapi.RequirementFlag.integrity)
        if creds.qop == "auth-conf":
            flags |= int(gssapi.RequirementFlag.confidentiality)
        ctx = gssapi.SecurityContext(name=target, usage="initiate", flags=flags)
        token = ctx.step()
    except gssapi.exceptions.GSSError as exc:
        raise SaslFailed(f"Kerberos: cannot get a ticket for {principal}: {_one_line(exc)} (kinit first?)") from None
    peer.send(START, b"GSSAPI")
    peer.send(OK, bytes(token or b""))
    try:
        while True:
            status, challenge = peer.receive()
            if ctx.complete:
                break
            token = ctx.step(challenge)
            peer.send(OK, bytes(token or b""))
        # The server's offer of security layers: pick ours, answer with it, no authorization id.
        offer = bytes(ctx.unwrap(challenge).message)
        wanted = _QOP_LAYERS[creds.qop]
        if len(offer) < 4 or not offer[0] & wanted:
            raise SaslFailed(f"the server does not offer SASL QOP {creds.qop}")
        answer = bytes([wanted]) + offer[1:4]
        peer.send(COMPLETE, bytes(ctx.wrap(answer, False).message))
    except gssapi.exceptions.GSSError as exc:
        raise SaslFailed(f"Kerberos: the server's answer does not verify: {_one_line(exc)}") from None
    status, _ = peer.receive()
    if status != COMPLETE:
        raise SaslFailed(f"expected SASL COMPLETE, got status {status}")
    return None if wanted == 1 else _GssLayer(ctx, wanted == 4)


def _one_line(exc: Exception) -> str:
    text = getattr(exc, "gen_message", lambda: str(exc))()
    return " ".join(str(text).split())[:500]


class SaslClientTransport(TTransportBase, CReadableTransport):
    """Thrift messages in SASL data frames over an open, negotiated transport: one frame per flush."""

    def __init__(self, trans: Any, layer: _GssLayer | None, max_frame: int = 1 << 30) -> None:
        self._trans = trans
        self._layer = layer
        self._max = max_frame
        self._rbuf = BytesIO(b"")
        self._wbuf: list[bytes] = []

    def isOpen(self) -> bool:  # noqa: N802 - Thrift's naming
        return bool(self._trans.isOpen())

    def open(self) -> None:
        pass

    def close(self) -> None:
        self._trans.close()

    def _read_frame(self) -> bytes:
        (size,) = _FRAME.unpack(self._trans.readAll(4))
        if size < 0 or size > self._max:
            raise TTransportException(TTransportException.SIZE_LIMIT, f"SASL frame of {size} bytes from the server")
        data = self._trans.readAll(size)
        return self._layer.unwrap(data) if self._layer is not None else data

    def read(self, sz: int) -> bytes:
        ret = self._rbuf.read(sz)
        if ret:
            return ret
        self._rbuf = BytesIO(self._read_frame())
        return self._rbuf.read(sz)

    def write(self, buf: bytes) -> None:
        self._wbuf.append(buf)

    def flush(self) -> None:
        data = b"".join(self._wbuf)
        self._wbuf = []
        if self._layer is not None:
            data = self._layer.wrap(data)
        self._trans.write(_FRAME.pack(len(data)) + data)
        self._trans.flush()

    @property
    def cstringio_buf(self) -> BytesIO:
        return self._rbuf

    def cstringio_refill(self, partialread: bytes, reqlen: int) -> BytesIO:
        data = partialread
        while len(data) < reqlen:
            data += self._read_frame()
        self._rbuf = BytesIO(data)
        return self._rbuf
