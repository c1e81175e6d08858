"""SASL on the Thrift port, framed as Thrift's TSaslServerTransport frames it (what Hive Metastore speaks).

Negotiation messages are a status byte (START=1, OK=2, BAD=3, ERROR=4, COMPLETE=5), a 4-byte big-endian length and
the payload. The client opens with START carrying the mechanism's name, then OK (or COMPLETE) with its initial
response; the server answers each response with OK and a challenge, and with COMPLETE once it is satisfied.
Afterwards every Thrift message travels in 4-byte-length-prefixed frames, wrapped by GSSAPI when the client chose
integrity or confidentiality (Hadoop's hadoop.rpc.protection: authentication / integrity / privacy).

Mechanisms: GSSAPI (Kerberos, RFC 4752, as Hive's HadoopThriftAuthBridge serves it) and PLAIN (RFC 4616, Hive 4's
LDAP and CONFIG styles) checked by a `PasswordChecker`. Failures are `SaslRefused` whose message can be logged:
it names the peer's claimed user and the reason, never a password.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Protocol

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
_HEADER = struct.Struct("!BI")
# Negotiation messages are small (a Kerberos ticket with a large PAC is tens of KiB); anything bigger is refused
# before it is allocated.
MAX_NEGOTIATION_MESSAGE = 1 << 20


class SecurityLayer(IntEnum):
    """RFC 4752's security layers, as bits of the server's offer; Hadoop calls them auth, auth-int, auth-conf."""

    NONE = 1
    INTEGRITY = 2
    CONFIDENTIALITY = 4


QOP_NAMES = {"auth": SecurityLayer.NONE, "auth-int": SecurityLayer.INTEGRITY, "auth-conf": SecurityLayer.CONFIDENTIALITY}


def parse_qop(text: str) -> frozenset[SecurityLayer]:
    """`auth,auth-int,auth-conf` (Hadoop's SASL QOP names) as the set of layers the server offers."""
    layers: set[SecurityLayer] = set()
    for part in text.split(","):
        name = part.strip().lower()
        if name not in QOP_NAMES:
            raise ValueError(f"SASL QOP {part.strip()!r} is not one of auth, auth-int, auth-conf")
        layers.add(QOP_NAMES[name])
    if not layers:
        raise ValueError("SASL QOP is empty: give auth, auth-int and/or auth-conf")
    return frozenset(layers)


class SaslRefused(Exception):
    """Negotiation failed; the message is safe for the server log (no secret) and `client_message` for the peer."""

    def __init__(self, message: str, *, client_message: str = "authentication failed", status: int = BAD) -> None:
        super().__init__(message)
        self.client_message = client_message
        self.status = status


class PasswordChecker(Protocol):
    """Verifies a user name and password (a password file, an LDAP bind)."""

    def check(self, user: str, password: str) -> str | None:
        """None when the password is right, else the reason for the log (never the password)."""


class Wrapper(Protocol):
    """A negotiated GSSAPI security layer: protects each data frame."""

    def wrap(self, data: bytes) -> bytes: ...

    def unwrap(self, data: bytes) -> bytes: ...


class ServerMechanism(Protocol):
    """The server side of one SASL mechanism for one connection."""

    complete: bool
    principal: str

    def step(self, response: bytes) -> bytes | None:
        """Evaluate the client's response; the next challenge (None: nothing to send)."""

    def wrapper(self) -> Wrapper | None:
        """The security layer data frames go through, or None (auth only)."""


class PlainServer:
    """RFC 4616 PLAIN: one message `authzid NUL authcid NUL password`. Only ever offered over TLS."""

    name = "PLAIN"

    def __init__(self, checker: PasswordChecker) -> None:
        self._checker = checker
        self.complete = False
        self.principal = ""

    def step(self, response: bytes) -> bytes | None:
        parts = response.split(b"\0")
        if len(parts) != 3:
            raise SaslRefused("malformed PLAIN response", client_message="malformed PLAIN response", status=ERROR)
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslRefused("PLAIN response is not UTF-8", client_message="malformed PLAIN response",
                              status=ERROR) from None
        shown = user[:200]
        if not user or not password:
            raise SaslRefused(f"PLAIN authentication of {shown!r} refused: empty user name or password")
        if authzid and authzid != user:
            # Acting as someone else is not supported (Hive's handlers refuse it too).
            raise SaslRefused(f"PLAIN user {shown!r} may not act as {authzid[:200]!r}")
        reason = self._checker.check(user, password)
        if reason is not None:
            raise SaslRefused(f"PLAIN authentication of {shown!r} failed: {reason}")
        self.principal = user
        self.complete = True
        return None

    def wrapper(self) -> Wrapper | None:
        return None


class _GssWrapper:
    def __init__(self, ctx: Any, encrypt: bool) -> None:
        self._ctx = ctx
        self._encrypt = encrypt

    def wrap(self, data: bytes) -> bytes:
        return bytes(self._ctx.wrap(data, self._encrypt).message)

    def unwrap(self, data: bytes) -> bytes:
        result = self._ctx.unwrap(data)
        if self._encrypt and not result.encrypted:
            raise SaslRefused("a data frame arrived unencrypted on a connection negotiated with auth-conf")
        return bytes(result.message)


class GssapiServer:
    """RFC 4752 GSSAPI over Kerberos: accept the context, offer security layers, read the client's choice."""

    name = "GSSAPI"
    # Largest wrapped frame we accept, advertised to the client (3 bytes).
    MAX_BUFFER = 0xFFFFFF

    def __init__(self, credentials: Any, layers: frozenset[SecurityLayer]) -> None:
        import gssapi  # optional dependency (the kerberos extra), loaded when Kerberos is on

        self._gssapi = gssapi
        self._ctx = gssapi.SecurityContext(creds=credentials, usage="accept")
        self._layers = layers
        self._stage = 1
        self._layer = SecurityLayer.NONE
        self.complete = False
        self.principal = ""

    def step(self, response: bytes) -> bytes | None:
        gss = self._gssapi
        if self._stage == 1:
            # gssapi keeps an acceptor's error (and returns its error token) until the next property access:
            # both belong in the try.
            try:
                token = self._ctx.step(response)
                if not self._ctx.complete:
                    return bytes(token or b"")
                self.principal = str(self._ctx.initiator_name)
            except gss.exceptions.GSSError as exc:
                raise SaslRefused(f"Kerberos authentication failed: {_gss_reason(exc)}") from None
            self._stage = 2
            if token:
                return bytes(token)
            response = b""
        if self._stage == 2:
            # The offer: a bitmask of layers and the largest frame we take, integrity-protected.
            offer = bytes([sum(self._layers)]) + self.MAX_BUFFER.to_bytes(3, "big")
            self._stage = 3
            return bytes(self._ctx.wrap(offer, False).message)
        if self._stage == 3:
            try:
                answer = bytes(self._ctx.unwrap(response).message)
            except gss.exceptions.GSSError as exc:
                raise SaslRefused(f"GSSAPI security layer answer of {self.principal} is invalid: "
                                  f"{_gss_reason(exc)}") from None
            if len(answer) < 4:
                raise SaslRefused(f"GSSAPI security layer answer of {self.principal} is too short", status=ERROR)
            chosen = answer[0]
            if chosen not in {int(layer) for layer in self._layers}:
                raise SaslRefused(
                    f"{self.principal} chose SASL security layer {chosen}, not one offered "
                    f"({', '.join(sorted(n for n, v in QOP_NAMES.items() if v in self._layers))})",
                    client_message="the requested SASL QOP is not offered by this server",
                )
            authzid = answer[4:].decode("utf-8", "replace")
            if authzid and authzid != self.principal:
                raise SaslRefused(f"{self.principal} may not act as {authzid[:200]!r}")
            self._layer = SecurityLayer(chosen)
            self.complete = True
            return None
        raise SaslRefused("GSSAPI negotiation went on after completion", status=ERROR)

    def wrapper(self) -> Wrapper | None:
        if self._layer == SecurityLayer.NONE:
            return None
        return _GssWrapper(self._ctx, self._layer == SecurityLayer.CONFIDENTIALITY)


def _gss_reason(exc: Exception) -> str:
    """GSSAPI's error text in one line (it names the principal or key version, never key material)."""
    text = getattr(exc, "gen_message", lambda: str(exc))()
    return " ".join(str(text).split())[:500]


@dataclass(frozen=True)
class SaslResult:
    """Who negotiated, how, and the layer data frames go through."""

    principal: str
    mechanism: str
    wrapper: Wrapper | None


def _recv_exact(sock: socket.socket, size: int, deadline: float) -> bytes:
    """Exactly `size` bytes, all before `deadline` (TimeoutError), however slowly they trickle in."""
    parts: list[bytes] = []
    have = 0
    while have < size:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("SASL negotiation timed out")
        sock.settimeout(remaining)
        chunk = sock.recv(min(size - have, 65536))
        if not chunk:
            raise ConnectionError("the client closed the connection during SASL negotiation")
        parts.append(chunk)
        have += len(chunk)
    return b"".join(parts)


def _read_message(sock: socket.socket, deadline: float) -> tuple[int, bytes]:
    status, length = _HEADER.unpack(_recv_exact(sock, _HEADER.size, deadline))
    if status not in (START, OK, BAD, ERROR, COMPLETE):
        raise SaslRefused(
            f"no SASL negotiation (first bytes {status:02x} {length:08x}: a client without SASL?)",
            client_message=f"invalid SASL status {status}", status=ERROR,
        )
    if length > MAX_NEGOTIATION_MESSAGE:
        raise SaslRefused(
            f"SASL negotiation message of {length} bytes exceeds the limit of {MAX_NEGOTIATION_MESSAGE}",
            client_message="SASL negotiation message too large", status=ERROR,
        )
    payload = _recv_exact(sock, length, deadline) if length else b""
    if status in (BAD, ERROR):
        text = payload[:300].decode("utf-8", "replace")
        raise SaslRefused(f"the client gave up SASL negotiation: {text}", status=0)
    return status, payload


def send_message(sock: socket.socket, status: int, payload: bytes) -> None:
    """One negotiation message."""
    sock.sendall(_HEADER.pack(status, len(payload)) + payload)


def negotiate(
    sock: socket.socket, mechanisms: dict[str, Callable[[], ServerMechanism]], timeout: float
) -> SaslResult:
    """Run the server side of a negotiation on `sock` within `timeout` seconds.

    Raises SaslRefused (after telling the client), TimeoutError or OSError; the caller closes the connection."""
    deadline = time.monotonic() + timeout
    try:
        status, payload = _read_message(sock, deadline)
        if status != START:
            raise SaslRefused(f"SASL negotiation began with status {status}, not START",
                              client_message="expected a SASL START message", status=ERROR)
        name = payload.decode("ascii", "replace")[:100]
        factory = mechanisms.get(name)
        if factory is None:
            offered = ", ".join(sorted(mechanisms))
            raise SaslRefused(f"the client asked for SASL mechanism {name!r}; this server offers {offered}",
                              client_message=f"unsupported mechanism type {name}; this server offers {offered}")
        mechanism = factory()
        while not mechanism.complete:
            status, payload = _read_message(sock, deadline)
            if status not in (OK, COMPLETE):
                raise SaslRefused(f"expected SASL status OK or COMPLETE, got {status}",
                                  client_message="expected a SASL OK or COMPLETE message", status=ERROR)
            challenge = mechanism.step(payload)
            send_message(sock, COMPLETE if mechanism.complete else OK, challenge or b"")
    except SaslRefused as exc:
        if exc.status:
            try:
                sock.settimeout(1.0)
                send_message(sock, exc.status, exc.client_message.encode())
            except OSError:
                pass
        raise
    finally:
        try:
            sock.settimeout(None)
        except OSError:
            pass
    return SaslResult(principal=mechanism.principal, mechanism=name, wrapper=mechanism.wrapper())
