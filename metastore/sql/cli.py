"""`metastore sql`: command-line options and the entry that builds client, executor and shell.

    metastore sql                                   # interactive, embedded database (METASTORE_DB or the default)
    metastore sql --connect thrift://host:9083 -e "SHOW DATABASES"
    metastore sql --db sqlite:///ms.db -f setup.sql --output json
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from metastore.sql.output import OUTPUT_FORMATS

if TYPE_CHECKING:
    from metastore.client import SaslCredentials
from metastore.storage import add_storage_option_argument

HISTORY_FILE = "sql_history"


def configure_parser(p: argparse.ArgumentParser) -> None:
    """Add the options of `metastore sql` to a parser."""
    target = p.add_mutually_exclusive_group()
    target.add_argument(
        "--connect", metavar="URI",
        help="metastore server(s) to use: thrift://host:9083, or thrifts://host:9083 for TLS (comma-separated "
        "URIs fail over in order)",
    )
    p.add_argument("--tls-ca", metavar="FILE",
                   help="PEM CA to verify a thrifts:// server's certificate with (default: the system's CAs)")
    p.add_argument("--tls-cert", metavar="FILE",
                   help="PEM client certificate for a thrifts:// server that requires one (serve --tls-client-ca)")
    p.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert (unencrypted)")
    p.add_argument("--auth", choices=["kerberos", "plain"],
                   help="authenticate to the server: kerberos (SASL GSSAPI with the ticket cache: kinit first) or "
                   "plain (SASL PLAIN over thrifts://: --user, and the password from METASTORE_PASSWORD or a prompt)")
    p.add_argument("--kerberos-principal", metavar="PRINCIPAL",
                   help="the server's principal for --auth kerberos, e.g. metastore/_HOST@EXAMPLE.COM (Hive's "
                   "hive.metastore.kerberos.principal)")
    p.add_argument("--user", metavar="NAME", help="user name for --auth plain (default: the login name)")
    target.add_argument(
        "--db", metavar="URL",
        help="run embedded on this database: a SQLAlchemy URL (default: METASTORE_DB, else the SQLite file in "
        "the user's data directory)",
    )
    p.add_argument("--warehouse", metavar="DIR", help="where new databases and tables go (embedded only)")
    p.add_argument("--index-root", metavar="DIR",
                   help="where split-filtering index files go, a directory or an object-store URL (embedded only; "
                   "default <warehouse>/.indexes; a server has its own serve --index-root)")
    statements = p.add_mutually_exclusive_group()
    statements.add_argument("-e", dest="execute", metavar="SQL", help="run these statements and exit")
    statements.add_argument("-f", dest="file", metavar="FILE", help="run the statements of this file and exit")
    p.add_argument("--output", choices=OUTPUT_FORMATS, default="table",
                   help="how results are printed: aligned table (default), json (one array per statement), csv")
    p.add_argument("--database", metavar="NAME", default="default", help="the database to start in")
    p.add_argument("--progress", action="store_true",
                   help="show progress bars on stderr in batch mode too (interactive mode always does)")
    p.add_argument("--histograms", action="store_true",
                   help="ANALYZE ... FOR COLUMNS also computes KLL histograms (numeric, date, timestamp columns)")
    p.add_argument("--spark", metavar="MASTER",
                   help="run ANALYZE on Spark (local[4], spark://host:7077 or sc://host:15002) when "
                   "metastore.analyze.engine is spark, or auto and the data is larger than "
                   "metastore.analyze.spark.threshold (1 GiB); needs the `spark` extra")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="ANALYZE also reports where its time went, phase by phase (on stderr)")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--stats-cache", metavar="PATH",
                       help="where incremental ANALYZE keeps per-file results: 'metastore' (the metastore's "
                       "database, shared by every host; the default with --connect) or a local cache file "
                       "(default with --db: METASTORE_ANALYZE_CACHE, else the user's cache directory)")
    cache.add_argument("--no-stats-cache", action="store_true", help="analyze every file afresh, keep no cache")
    add_storage_option_argument(p)


def add_sql_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], help_text: str) -> None:
    """Add the `sql` command to the main parser's subparsers."""
    p = subparsers.add_parser(
        "sql",
        help=help_text,
        description="A SQL shell over the metastore, embedded or against a server. Statements end with ';'. "
        "Errors name the line:column; in batch mode (-e, -f) the first error ends the run with exit code 1.",
    )
    configure_parser(p)
    p.set_defaults(func=run_sql)


def run_sql(args: argparse.Namespace) -> int:
    """Run `metastore sql` with parsed arguments; returns the exit code."""
    # Imported here, once the options are known to be valid, so that `--help` and bad options answer at once.
    # Nothing of the store, SQLAlchemy or the server is imported for --connect: `connect` loads the embedded
    # client only for a database URL.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)
    # thrift logs a failed connect itself; the shell reports it once, as its own one-line error
    logging.getLogger("thrift").setLevel(logging.CRITICAL)
    from metastore.client import MetastoreClient, connect
    from metastore.errors import MetastoreError
    from metastore.sql.executor import Executor
    from metastore.sql.session import ExecutorOptions
    from metastore.sql.shell import Shell, one_line
    from metastore.storage import StorageOptions

    script: str | None = None
    if args.file is not None:
        try:
            script = Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(one_line(f"Error: cannot read {args.file}: {exc}"), file=sys.stderr)
            return 1
    elif args.execute is not None:
        script = args.execute
    interactive = script is None
    if interactive and not sys.stdin.isatty():
        script = sys.stdin.read()  # statements piped in run as a batch
        interactive = False
    client: MetastoreClient
    try:
        storage_options = StorageOptions.parse(args.storage_options)
        if args.connect:
            _check_tls_arguments(args)
            from metastore.client.remote import ThriftMetastoreClient

            client = ThriftMetastoreClient(args.connect, tls_ca=args.tls_ca, tls_cert=args.tls_cert,
                                           tls_key=args.tls_key, sasl=_sasl_credentials(args))
        else:
            from metastore.config import Settings  # platformdirs: only where a default path is needed

            settings = Settings.from_env(db=args.db, warehouse=args.warehouse, index_root=args.index_root)
            client = connect(settings.db, warehouse=settings.warehouse, index_root=settings.index_root or None)
    except MetastoreError as exc:
        print(one_line(f"Error: {exc}"), file=sys.stderr)
        return 1
    if args.no_stats_cache:
        stats_cache = None
    elif args.stats_cache:
        stats_cache = args.stats_cache
    else:
        # against a server, per-file results live in its database, so every host's re-ANALYZE reuses them
        stats_cache = "metastore" if args.connect else "default"
    options = ExecutorOptions(progress=interactive or args.progress, histograms=args.histograms,
                              stats_cache=stats_cache, storage=storage_options, spark_master=args.spark,
                              verbose=args.verbose)
    executor: Executor | None = None
    try:
        executor = Executor(client, options=options)
        shell = Shell(executor, output=args.output)
        if args.database and args.database.lower() != executor.database:
            try:
                client.get_database(args.database)
            except MetastoreError as exc:
                print(one_line(f"Error: --database {args.database}: {exc}"), file=sys.stderr)
                return 1
            executor.database = args.database.lower()
        if interactive:
            from metastore.config import default_data_dir

            return shell.interactive(default_data_dir() / HISTORY_FILE)
        assert script is not None
        return shell.run_script(script)
    finally:
        if executor is not None:
            executor.close()
        client.close()


def _check_tls_arguments(args: argparse.Namespace) -> None:
    """--tls-* go with thrifts:// URIs, and a client certificate with its key: anything else is a mistake that
    would otherwise be ignored (and end in a handshake failure far from its cause)."""
    from metastore.errors import InvalidInput

    given = [flag for flag, value in (("--tls-ca", args.tls_ca), ("--tls-cert", args.tls_cert),
                                      ("--tls-key", args.tls_key)) if value]
    if given and not any(u.strip().lower().startswith("thrifts://") for u in args.connect.split(",")):
        raise InvalidInput(f"{', '.join(given)} need a thrifts:// URI in --connect (TLS)")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise InvalidInput("--tls-cert and --tls-key go together: the client certificate and its private key")


def _sasl_credentials(args: argparse.Namespace) -> SaslCredentials | None:
    """SASL credentials from --auth and friends; the PLAIN password from METASTORE_PASSWORD or a prompt that
    does not echo (never from the command line, where `ps` would show it)."""
    from metastore.errors import InvalidInput

    if args.auth is None:
        if args.kerberos_principal or args.user:
            raise InvalidInput("--kerberos-principal and --user need --auth kerberos or --auth plain")
        return None
    from metastore.client.remote import SaslCredentials
    if args.auth == "kerberos":
        return SaslCredentials("GSSAPI", kerberos_principal=args.kerberos_principal or "")
    import getpass
    import os

    user = args.user or getpass.getuser()
    password = os.environ.get("METASTORE_PASSWORD")
    if password is None:
        if not sys.stdin.isatty():
            raise InvalidInput("--auth plain needs a password: set METASTORE_PASSWORD or run interactively")
        password = getpass.getpass(f"Password for {user}: ")
    return SaslCredentials("PLAIN", user=user, password=password)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m metastore.sql`: the same command without the `metastore` front end."""
    parser = argparse.ArgumentParser(prog="metastore sql", description="Hive-syntax SQL shell over the metastore.")
    configure_parser(parser)
    args = parser.parse_args(argv)
    try:
        return run_sql(args)
    except KeyboardInterrupt:
        return 130
