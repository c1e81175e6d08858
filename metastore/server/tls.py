"""TLS on the Thrift port: the server's SSLContext, built from PEM files and rebuilt on SIGHUP.

Each worker process holds one `TlsContext`; accepted sockets are wrapped with its current SSLContext in the
connection's own thread, so a slow or hostile handshake never blocks the accept loop. A reload replaces the
SSLContext for new connections only: connections already established keep the one they were made with.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from dataclasses import dataclass

log = logging.getLogger("metastore.server")


@dataclass(frozen=True)
class TlsOptions:
    """Where the server's certificate, key and (optionally) the client CA are, and the handshake's time limit."""

    cert: str
    key: str
    client_ca: str = ""
    handshake_timeout: float = 10.0


class TlsConfigError(ValueError):
    """The certificate, key or client CA cannot be used (the message names the file, never its contents)."""


def _refuse_passphrase() -> str:
    # Without a callback OpenSSL would prompt on the terminal for an encrypted key's passphrase.
    raise TlsConfigError("the key is encrypted with a passphrase, which is not supported")


def build_context(options: TlsOptions) -> ssl.SSLContext:
    """An SSLContext for the server side: TLS 1.2 minimum, client certificates required with a client CA."""
    for what, path in (("certificate", options.cert), ("key", options.key), ("client CA", options.client_ca)):
        if path and not os.path.isfile(path):
            raise TlsConfigError(f"TLS {what} file {path} does not exist or is not a file")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(options.cert, options.key, password=_refuse_passphrase)
    except TlsConfigError as exc:
        raise TlsConfigError(f"TLS key {options.key}: {exc}") from None
    except (ssl.SSLError, OSError) as exc:
        # The SSL error names the OpenSSL reason (e.g. KEY_VALUES_MISMATCH), never the file's contents.
        raise TlsConfigError(
            f"cannot load the TLS certificate {options.cert} with key {options.key}: {exc.strerror or exc}"
        ) from None
    if options.client_ca:
        try:
            ctx.load_verify_locations(cafile=options.client_ca)
        except (ssl.SSLError, OSError) as exc:
            raise TlsConfigError(f"cannot load the TLS client CA {options.client_ca}: {exc.strerror or exc}") from None
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class TlsContext:
    """The SSLContext a worker wraps new connections with; `reload` swaps in one built from the files again."""

    def __init__(self, options: TlsOptions) -> None:
        self.options = options
        self._lock = threading.Lock()
        self._context = build_context(options)

    @property
    def context(self) -> ssl.SSLContext:
        with self._lock:
            return self._context

    def reload(self) -> bool:
        """Read the files again; on failure keep serving with the previous certificate (and say why)."""
        try:
            fresh = build_context(self.options)
        except TlsConfigError as exc:
            log.error("TLS reload failed, keeping the previous certificate: %s", exc)
            return False
        with self._lock:
            self._context = fresh
        log.info("TLS certificate reloaded from %s", self.options.cert)
        return True
