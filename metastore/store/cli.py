"""`metastore db upgrade` and `metastore db current`: manage the metastore database schema."""

from __future__ import annotations

import argparse

from metastore.config import Settings
from metastore.store import migrate

_DB_HELP = (
    "SQLAlchemy database URL (default: METASTORE_DB, else the embedded SQLite file in the user's data "
    "directory; PostgreSQL: postgresql://user@host/dbname)"
)


def add_db_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], help_text: str) -> None:
    """Add the `db` command and its subcommands to the main parser's subparsers."""
    db = subparsers.add_parser(
        "db",
        help=help_text,
        description="Create or upgrade the metastore's database schema, or show its revision.",
    )
    commands = db.add_subparsers(dest="db_command", metavar="SUBCOMMAND")
    commands.required = True

    upgrade = commands.add_parser(
        "upgrade",
        help="create or upgrade the schema to the newest revision",
        description="Apply every pending migration (an empty database gets the whole schema). Safe to run "
        "while other servers start: concurrent upgrades queue and the later ones find nothing to do.",
    )
    upgrade.add_argument("--db", help=_DB_HELP)
    upgrade.set_defaults(func=run_upgrade)

    current = commands.add_parser(
        "current",
        help="show the schema revision of the database and of this code",
        description="Print the database's schema revision and the newest one this code knows; exit status "
        "1 when they differ.",
    )
    current.add_argument("--db", help=_DB_HELP)
    current.set_defaults(func=run_current)


def _url(args: argparse.Namespace) -> str:
    return Settings.from_env(db=args.db).db


def run_upgrade(args: argparse.Namespace) -> int:
    """Upgrade the schema; prints the revision reached."""
    url = _url(args)
    migrate.upgrade(url)
    print(f"database {migrate.display_url(url)} is at schema revision {migrate.current_revision(url)} (head)")
    return 0


def run_current(args: argparse.Namespace) -> int:
    """Print the database revision and the head; 0 when up to date, 1 otherwise."""
    url = _url(args)
    current = migrate.current_revision(url)
    head = migrate.head_revision()
    print(f"database: {migrate.display_url(url)}")
    print(f"current revision: {current or 'none (empty database)'}")
    print(f"head revision: {head}")
    if current != head:
        print(f"out of date: run `metastore db upgrade --db {migrate.display_url(url)}`")
        return 1
    return 0
