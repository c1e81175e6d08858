"""`metastore orc`: inspect ORC files (meta, cat) and write quick ones from CSV (write)."""

from __future__ import annotations

import argparse
import sys


def add_orc_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], help_text: str) -> None:
    """Register `metastore orc meta|cat|write` on the top-level subcommands."""
    orc = sub.add_parser("orc", help=help_text, description="Inspect and write ORC files.")
    cmds = orc.add_subparsers(dest="orc_command", metavar="COMMAND")
    cmds.required = True

    meta = cmds.add_parser(
        "meta",
        help="schema, stripes, encodings, statistics and bloom filter columns of a file",
        description="Print an ORC file's metadata, like orc-tools meta.",
    )
    meta.add_argument("file", help="ORC file")
    meta.set_defaults(func=_meta)

    cat = cmds.add_parser(
        "cat", help="rows as JSON lines", description="Print an ORC file's rows as JSON lines (ORC C++ tools format)."
    )
    cat.add_argument("file", help="ORC file")
    cat.add_argument("--columns", help="comma-separated top-level columns to print (default: all)")
    cat.set_defaults(func=_cat)

    write = cmds.add_parser(
        "write",
        help="write a CSV file as ORC",
        description="Write a CSV file as an ORC file with the given schema.",
    )
    write.add_argument("--schema", required=True, help="ORC schema, e.g. 'struct<id:bigint,name:string>'")
    write.add_argument("csv", help="input CSV file")
    write.add_argument("out", help="output ORC file")
    write.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="writer option by its ORC name, e.g. -o orc.compress=ZLIB (repeatable)",
    )
    write.add_argument("--header", action="store_true", default=None, help="the first line holds column names")
    write.add_argument("--delimiter", default=",", help="field delimiter (default ',')")
    write.set_defaults(func=_write)


def _meta(args: argparse.Namespace) -> int:
    from metastore.orcio import describe

    sys.stdout.write(describe(args.file))
    return 0


def _cat(args: argparse.Namespace) -> int:
    from metastore.orcio import write_json_lines

    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    write_json_lines(args.file, sys.stdout.buffer, columns)
    sys.stdout.buffer.flush()
    return 0


def _write(args: argparse.Namespace) -> int:
    from metastore import ORC_SOFTWARE_VERSION
    from metastore.orcio import write_csv

    options: dict[str, str] = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--option {item!r} is not KEY=VALUE")
        options[key.strip()] = value.strip()
    rows = write_csv(args.csv, args.out, args.schema, options, header=args.header, delimiter=args.delimiter,
                     software_version=ORC_SOFTWARE_VERSION)
    print(f"wrote {rows} rows to {args.out}", file=sys.stderr)
    return 0
