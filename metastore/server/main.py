"""`metastore serve`: check the schema, create `default`, bind, fork workers, serve."""

from __future__ import annotations

import ipaddress
import logging
import sys

from metastore import __version__
from metastore.config import Settings, default_db_url
from metastore.server.auth import (
    AUTHENTICATION_MODES,
    Authenticator,
    AuthOptions,
    LdapOptions,
    server_principal,
)
from metastore.server.loop import ServeOptions, bind_socket, serve_forever
from metastore.server.sasl import parse_qop
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


def auth_options(settings: Settings, tls: TlsOptions | None) -> AuthOptions | None:
    """The authentication of the settings, or None; settings that cannot work are one clear error."""
    mode = (settings.authentication or "none").lower()
    if mode not in AUTHENTICATION_MODES:
        raise ValueError(f"--authentication {settings.authentication!r} is not one of {', '.join(AUTHENTICATION_MODES)}")
    kerberos_flags = settings.kerberos_keytab or settings.kerberos_principal
    plain_flags = settings.password_file or settings.ldap_url or settings.ldap_base_dn or settings.ldap_user_dn_pattern
    if mode == "none":
        if kerberos_flags or plain_flags:
            raise ValueError("Kerberos, password file or LDAP settings are given but --authentication is none "
                             "(say --authentication kerberos, config or ldap)")
        return None
    if not settings.auth_timeout > 0:
        raise ValueError(f"--auth-timeout must be a positive number of seconds, not {settings.auth_timeout}")
    if mode == "kerberos":
        if not settings.kerberos_keytab or not settings.kerberos_principal:
            raise ValueError("--authentication kerberos needs --kerberos-keytab and --kerberos-principal")
        return AuthOptions(
            mode=mode, timeout=settings.auth_timeout, kerberos_keytab=settings.kerberos_keytab,
            kerberos_principal=server_principal(settings.kerberos_principal, settings.host),
            layers=parse_qop(settings.sasl_qop),
        )
    # PLAIN sends the password itself: never in the clear.
    if tls is None:
        raise ValueError(f"--authentication {mode} (SASL PLAIN) sends passwords: it needs TLS (--tls-cert and --tls-key)")
    if mode == "config":
        if not settings.password_file:
            raise ValueError("--authentication config needs --password-file")
        return AuthOptions(mode=mode, timeout=settings.auth_timeout, password_file=settings.password_file)
    if not settings.ldap_url:
        raise ValueError("--authentication ldap needs --ldap-url")
    return AuthOptions(
        mode=mode, timeout=settings.auth_timeout,
        ldap=LdapOptions(url=settings.ldap_url, base_dn=settings.ldap_base_dn,
                         user_dn_pattern=settings.ldap_user_dn_pattern, ca_file=settings.ldap_ca,
                         starttls=settings.ldap_starttls),
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
        from metastore.server.authorization import Authorizer, PolicyFile
        from metastore.server.handler import Handler
        from metastore.server.processor import MetastoreProcessor
        from metastore.service import Metastore
        from metastore.wire.stats import encode_served

        # The parent checked (or upgraded) the schema before forking.
        metastore = Metastore.open(
            settings, served_encoding=encode_served, workers=max(1, settings.workers), check_schema=False
        )
        handler = Handler(metastore, settings)
        authorizer = None
        if settings.authorization_policy:
            authorizer = Authorizer(
                PolicyFile(settings.authorization_policy),
                current_table=handler.get_table,
                current_partition=handler.get_partition,
            )
        return MetastoreProcessor(handler, authorizer)

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
    auth = auth_options(settings, tls)
    if auth is not None:
        Authenticator(auth)  # the keytab, password file or LDAP settings: refused now, in one line
        if auth.ldap is not None and auth.ldap.sends_passwords_in_clear:
            log.warning(
                "LDAP server %s is reached over ldap:// without --ldap-starttls: every user's password crosses "
                "the network to it in the clear (use ldaps:// or --ldap-starttls)", auth.ldap.url,
            )
    if settings.authorization_policy:
        from metastore.server.authorization import PolicyFile

        PolicyFile(settings.authorization_policy)  # a broken policy: refused now, in one line
        if auth is None:
            log.warning(
                "authorization policy %s without --authentication: principals are the user names clients claim "
                "in set_ugi, which nothing verifies", settings.authorization_policy,
            )
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
        auth=auth,
    )
    host, port = listener.getsockname()[:2]
    if not is_loopback(settings.host):
        if auth is None and not settings.authorization_policy:
            log.warning(
                "listening on %s without authentication or an authorization policy: anyone who can reach the port "
                "can read and change every table and statistic (use --authentication and --authorization-policy)",
                settings.host,
            )
        if tls is None and auth is None:
            log.warning(
                "listening on %s without TLS: calls and replies cross the network in the clear "
                "(use --tls-cert and --tls-key)", settings.host,
            )

    def ready() -> None:
        transport = "framed" if settings.framed else "buffered"
        scheme = "thrifts" if tls is not None else "thrift"
        security = ""
        if tls is not None:
            security = f", TLS on with certificate {tls.cert}"
            if tls.client_ca:
                security += f", client certificates required (CA {tls.client_ca})"
        if auth is not None:
            security += f", authentication {auth.mode} (SASL {auth.mechanism}"
            if auth.mode == "kerberos":
                security += f" as {auth.kerberos_principal}, QOP {settings.sasl_qop}"
            elif auth.mode == "config":
                security += f", password file {auth.password_file}"
            elif auth.ldap is not None:
                security += f", LDAP {auth.ldap.url}{' with StartTLS' if auth.ldap.starttls else ''}"
            security += ")"
        if settings.authorization_policy:
            security += f", authorization policy {settings.authorization_policy}"
        print(
            f"metastore {__version__} listening on {scheme}://{host}:{port} "
            f"(database {display_url(settings.db)}, {options.workers} workers, {transport} transport{security})",
            flush=True,
        )

    code = serve_forever(listener, make_processor_factory(settings), options, ready)
    log.info("stopped")
    sys.stdout.flush()
    return code
