"""`metastore serve`: check the schema, create `default`, bind, fork workers, serve."""

from __future__ import annotations

import ipaddress
import logging
import sys

from metastore import __version__
from metastore.config import Settings, default_db_url
from metastore.server.loop import ServeOptions, bind_socket, serve_forever
from metastore.server.tls import TlsOptions, build_context
from metastore.store import Store
from metastore.store.migrate import display_url

log = logging.getLogger("metastore.server")


def _is_embedded(url: str) -> bool:
    """SQLite databases are embedded: they upgrade themselves; a shared server database is upgraded on purpose."""
    return url == default_db_url() or url.startswith("sqlite")


def tls_options(settings: Settings) -> TlsOptions | None:
    """The TLS files of the settings, or None for plaintext; a certificate without a key (or the reverse),
    or a client CA without both, is a clear error."""
    if not (settings.tls_cert or settings.tls_key or settings.tls_client_ca):
        return None
    if not settings.tls_cert or not settings.tls_key:
        raise ValueError("TLS needs both --tls-cert and --tls-key (METASTORE_TLS_CERT / METASTORE_TLS_KEY)")
    if not settings.tls_handshake_timeout > 0:
        raise ValueError(f"--tls-handshake-timeout must be a positive number of seconds, not {settings.tls_handshake_timeout}")
    return TlsOptions(
        cert=settings.tls_cert,
        key=settings.tls_key,
        client_ca=settings.tls_client_ca,
        handshake_timeout=settings.tls_handshake_timeout,
    )


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def make_processor_factory(settings: Settings):  # noqa: ANN201 - returns a zero-argument factory
    """A factory run inside each worker process (after fork): its own engine, pool and handler."""

    def factory():  # noqa: ANN202
        from metastore.server.handler import Handler
        from metastore.server.processor import MetastoreProcessor
        from metastore.service import Metastore

        # The parent checked (or upgraded) the schema before forking.
        metastore = Metastore.open(settings, workers=max(1, settings.workers), check_schema=False)
        return MetastoreProcessor(Handler(metastore, settings))

    return factory


def serve(settings: Settings) -> int:
    """Run the server until SIGTERM/SIGINT; returns the process exit code."""
    logging.basicConfig(
        level=getattr(logging, settings.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s",
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)
    tls = tls_options(settings)
    if tls is not None:
        build_context(tls)  # refuse unusable files now, in one line, rather than in every worker
    store = Store.open(settings.db, auto_upgrade=_is_embedded(settings.db))
    try:
        store.ensure_default_database(settings.warehouse)
    finally:
        store.dispose()  # workers open their own connections after fork
    listener = bind_socket(settings.host, settings.port)
    options = ServeOptions(
        host=settings.host,
        port=settings.port,
        workers=max(1, settings.workers),
        framed=settings.framed,
        max_frame_size=settings.max_frame_size,
        max_string_size=settings.max_string_size,
        max_container_size=settings.max_container_size,
        tls=tls,
    )
    host, port = listener.getsockname()[:2]
    if tls is None and not is_loopback(settings.host):
        log.warning(
            "listening on %s without TLS: anyone who can reach the port can read and change every table and "
            "statistic (use --tls-cert and --tls-key)", settings.host,
        )

    def ready() -> None:
        transport = "framed" if settings.framed else "buffered"
        scheme = "thrifts" if tls is not None else "thrift"
        security = ""
        if tls is not None:
            security = f", TLS on with certificate {tls.cert}"
            if tls.client_ca:
                security += f", client certificates required (CA {tls.client_ca})"
        print(
            f"metastore {__version__} listening on {scheme}://{host}:{port} "
            f"(database {display_url(settings.db)}, {options.workers} workers, {transport} transport{security})",
            flush=True,
        )

    code = serve_forever(listener, make_processor_factory(settings), options, ready)
    log.info("stopped")
    sys.stdout.flush()
    return code
