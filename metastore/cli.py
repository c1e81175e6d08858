"""The `metastore` command: serve, db, sql, orc."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from metastore import __version__
from metastore.config import Settings


def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="run the Hive-Metastore-compatible Thrift server",
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
        "--stats-cache-mb",
        type=int,
        metavar="MIB",
        help="MiB per worker of batched statistics replies kept for repeated requests, checked against the "
        "database on every call (PostgreSQL; default 64, 0 turns it off)",
    )
    p.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log level (default INFO)")
    p.set_defaults(func=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    from metastore.server.main import serve

    settings = Settings.from_env(
        host=args.host,
        port=args.port,
        db=args.db,
        warehouse=args.warehouse,
        workers=args.workers,
        framed=args.framed,
        max_frame_size=args.max_frame_size,
        max_string_size=args.max_string_size,
        max_container_size=args.max_container_size,
        fetch_bitvector=args.fetch_bitvector,
        fetch_kll=args.fetch_kll,
        stats_cache_mb=args.stats_cache_mb,
        log_level=args.log_level,
    )
    return serve(settings)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="metastore",
        description="A Hive-Metastore-compatible column statistics metastore with an embedded ORC engine.",
    )
    parser.add_argument("--version", action="version", version=f"metastore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_serve(sub)
    from metastore.orc_tools import add_orc_commands
    from metastore.sql.cli import add_sql_commands
    from metastore.store.cli import add_db_commands

    add_db_commands(sub)
    add_sql_commands(sub)
    add_orc_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `metastore` console script; errors are one clear line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the CLI reports every failure as one line
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            raise
        print(f"metastore {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
