"""The `metastore` command: serve, db, sql, orc.

Each subcommand lives in its own module, imported only when that subcommand runs (or shows its --help): the
server, the SQL store, SQLAlchemy, numpy and the ORC engine cost up to a second to import, and `metastore --help`,
`metastore sql --connect ...` or `metastore orc meta f.orc` should not wait for what they do not use.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from metastore import __version__

#: name -> (the one-line help `metastore --help` lists, "module:function" adding the full subcommand).
#: The function is called as function(subparsers, help_text).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("run the Hive-Metastore-compatible Thrift server", "metastore.cli:add_serve_command"),
    "db": ("manage the metastore database schema", "metastore.store.cli:add_db_commands"),
    "sql": (
        "Hive-syntax SQL shell: DDL, LOAD DATA/INSERT as ORC, ANALYZE ... COMPUTE STATISTICS, DESCRIBE",
        "metastore.sql.cli:add_sql_commands",
    ),
    "orc": ("inspect and write ORC files", "metastore.orc_tools:add_orc_commands"),
    "passwd": ("add a user to a password file for serve --authentication config",
               "metastore.server.passwd:add_passwd_command"),
    "spark-analyze": (
        "ANALYZE TABLE ... COMPUTE STATISTICS FOR COLUMNS on Spark (needs the spark extra)",
        "metastore.spark.cli:add_spark_analyze_command",
    ),
}


def add_serve_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], help_text: str) -> None:
    """Add `metastore serve` (its options need argparse only; the server is imported when it runs)."""
    p = sub.add_parser(
        "serve",
        help=help_text,
        description=(
            "Serve ThriftHiveMetastore (TBinaryProtocol) on HOST:PORT. Every flag can also be set as a "
            "METASTORE_<FLAG> environment variable (e.g. METASTORE_PORT=9083); flags win."
        ),
    )
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to listen on (default 9083)")
    p.add_argument(
        "--db",
        help="SQLAlchemy database URL (default: an SQLite file in the user's data directory; "
        "PostgreSQL: postgresql://user@host/dbname)",
    )
    p.add_argument("--warehouse", help="default directory for new databases and tables")
    p.add_argument("--index-root", metavar="DIR",
                   help="where split-filtering index files go (default <warehouse>/.indexes)")
    p.add_argument("--workers", type=int, help="worker processes sharing the port (default: one per core)")
    p.add_argument(
        "--framed", action="store_true", default=None, help="use TFramedTransport instead of the buffered transport"
    )
    p.add_argument("--max-frame-size", type=int, help="largest framed-transport frame accepted, bytes")
    p.add_argument("--max-string-size", type=int, help="largest string or binary value accepted, bytes")
    p.add_argument("--max-container-size", type=int, help="most elements accepted in one list, map or set")
    p.add_argument(
        "--fetch-bitvector",
        action="store_true",
        default=None,
        help="return NDV bitVectors in statistics (Hive's metastore.stats.fetch.bitvector; off by default)",
    )
    p.add_argument(
        "--fetch-kll",
        action="store_true",
        default=None,
        help="return KLL histograms in statistics (Hive's metastore.stats.fetch.kll; off by default)",
    )
    p.add_argument(
        "--listing-cache-mb",
        type=int,
        metavar="MIB",
        help="MiB per worker of partition listing replies (get_partitions_by_filter, get_partitions, "
        "get_partitions_ps) kept for repeated requests, checked against the database on every call "
        "(PostgreSQL; default 40, 0 turns it off)",
    )
    p.add_argument(
        "--stats-cache-mb",
        type=int,
        metavar="MIB",
        help="MiB per worker of batched statistics replies kept for repeated requests, checked against the "
        "database on every call (PostgreSQL; default 64, 0 turns it off)",
    )
    p.add_argument("--tls-cert", metavar="FILE", help="serve TLS (1.2+) with this PEM certificate (chain)")
    p.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert (unencrypted)")
    p.add_argument("--tls-client-ca", metavar="FILE",
                   help="require client certificates signed by this PEM CA (needs --tls-cert and --tls-key)")
    p.add_argument("--tls-handshake-timeout", type=float, metavar="SECONDS",
                   help="time a new connection has to finish its TLS handshake (default 10)")
    _add_security_arguments(p)
    p.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log level (default INFO)")
    p.set_defaults(func=_run_serve)


def _add_security_arguments(p: argparse.ArgumentParser) -> None:
    """Authentication and authorization flags of `metastore serve` (issue 13). None takes a secret."""
    p.add_argument(
        "--authentication", choices=["none", "kerberos", "config", "ldap"],
        help="who may connect (Hive 4's metastore.authentication): kerberos = SASL GSSAPI; config = SASL PLAIN "
        "against --password-file; ldap = SASL PLAIN checked by an LDAP bind (PLAIN needs TLS); default none",
    )
    p.add_argument("--kerberos-keytab", metavar="FILE", help="keytab holding the keys of --kerberos-principal")
    p.add_argument("--kerberos-principal", metavar="PRINCIPAL",
                   help="the server's principal, e.g. metastore/_HOST@EXAMPLE.COM (_HOST: this host's canonical name)")
    p.add_argument("--sasl-qop", metavar="QOP",
                   help="Kerberos protection offered (Hadoop's names): auth, auth-int, auth-conf, comma-separated "
                   "(default auth, as hadoop.rpc.protection=authentication)")
    p.add_argument("--password-file", metavar="FILE",
                   help="user:scrypt-hash lines for --authentication config (write them with `metastore passwd`)")
    p.add_argument("--ldap-url", metavar="URL", help="LDAP server for --authentication ldap (ldap:// or ldaps://)")
    p.add_argument("--ldap-base-dn", metavar="DN", help="users bind as uid=<user>,DN")
    p.add_argument("--ldap-user-dn-pattern", metavar="PATTERN",
                   help="users bind as this DN with %%s replaced by the user name (instead of --ldap-base-dn)")
    p.add_argument("--ldap-ca", metavar="FILE",
                   help="PEM CA to verify the LDAP server's certificate with (ldaps:// or --ldap-starttls; "
                   "default: the system's CAs)")
    p.add_argument("--ldap-starttls", action="store_true", default=None,
                   help="upgrade an ldap:// connection with StartTLS before each bind, so passwords never cross "
                   "the network in the clear (a server that refuses StartTLS refuses every login)")
    p.add_argument("--auth-timeout", type=float, metavar="SECONDS",
                   help="time a new connection has to finish its SASL negotiation (default 10)")
    p.add_argument("--authorization-policy", metavar="FILE",
                   help="TOML policy granting read, write_stats, ddl or admin on databases and tables to "
                   "principals and groups (default: no authorization)")


def _run_serve(args: argparse.Namespace) -> int:
    # Deliberately here, not at the top: the server, the store and SQLAlchemy load only when serving.
    from metastore.config import Settings
    from metastore.server.main import serve

    settings = Settings.from_env(
        host=args.host,
        port=args.port,
        db=args.db,
        warehouse=args.warehouse,
        index_root=args.index_root,
        workers=args.workers,
        framed=args.framed,
        max_frame_size=args.max_frame_size,
        max_string_size=args.max_string_size,
        max_container_size=args.max_container_size,
        fetch_bitvector=args.fetch_bitvector,
        fetch_kll=args.fetch_kll,
        stats_cache_mb=args.stats_cache_mb,
        listing_cache_mb=args.listing_cache_mb,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        tls_handshake_timeout=args.tls_handshake_timeout,
        authentication=args.authentication,
        kerberos_keytab=args.kerberos_keytab,
        kerberos_principal=args.kerberos_principal,
        sasl_qop=args.sasl_qop,
        password_file=args.password_file,
        ldap_url=args.ldap_url,
        ldap_base_dn=args.ldap_base_dn,
        ldap_user_dn_pattern=args.ldap_user_dn_pattern,
        ldap_ca=args.ldap_ca,
        ldap_starttls=args.ldap_starttls,
        auth_timeout=args.auth_timeout,
        authorization_policy=args.authorization_policy,
        log_level=args.log_level,
    )
    return serve(settings)


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line: the first argument that is not an option (the top-level
    options, --help and --version, take no value)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `metastore` parser. Only the subcommand `argv` names gets its full parser (its module is imported);
    the others are listed with their one-line help. Without argv every subcommand is built in full."""
    parser = argparse.ArgumentParser(
        prog="metastore",
        description="A Hive-Metastore-compatible column statistics metastore with an embedded ORC engine.",
    )
    parser.add_argument("--version", action="version", version=f"metastore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chosen = _chosen_command(argv) if argv is not None else None
    for name, (help_text, target) in SUBCOMMANDS.items():
        if argv is None or name == chosen:
            # The lazy load per subcommand: only the module of the command being run is imported.
            module_name, function_name = target.split(":")
            getattr(importlib.import_module(module_name), function_name)(sub, help_text)
        else:
            sub.add_parser(name, help=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `metastore` console script; errors are one clear line on stderr."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(arguments)
    args = parser.parse_args(arguments)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the CLI reports every failure as one line
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            raise
        print(f"metastore {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
