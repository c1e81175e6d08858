"""`metastore passwd FILE USER`: add a user to (or change a password in) a password file for
`serve --authentication config`. The password is read from a prompt that does not echo, or from standard input
with --stdin; the file keeps only a salted scrypt hash, with mode 0600."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path


def add_passwd_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], help_text: str) -> None:
    """Add `metastore passwd`."""
    p = sub.add_parser("passwd", help=help_text, description=__doc__)
    p.add_argument("file", metavar="FILE", help="the password file (created if missing)")
    p.add_argument("user", metavar="USER", help="the user name clients give")
    p.add_argument("--stdin", action="store_true", help="read the password from the first line of standard input")
    p.set_defaults(func=run_passwd)


def run_passwd(args: argparse.Namespace) -> int:
    """Write the entry; returns the exit code."""
    from metastore.server.auth import write_password_entry

    if args.stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass(f"New password for {args.user}: ")
        if getpass.getpass("Again: ") != password:
            print("metastore passwd: error: the passwords differ; nothing written", file=sys.stderr)
            return 1
    new = write_password_entry(Path(args.file), args.user, password)
    print(f"{'added' if new else 'changed the password of'} {args.user} in {args.file}")
    return 0
