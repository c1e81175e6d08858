"""`metastore orc`: inspect ORC files (meta, cat) and write quick ones from CSV (write)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from metastore.storage import add_storage_option_argument


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
    meta.add_argument("file", help="ORC file: a local path or a URL (s3://bucket/key, s3a://, gs://...)")
    add_storage_option_argument(meta)
    meta.set_defaults(func=_meta)

    cat = cmds.add_parser(
        "cat", help="rows as JSON lines", description="Print an ORC file's rows as JSON lines (ORC C++ tools format)."
    )
    cat.add_argument("file", help="ORC file: a local path or a URL (s3://bucket/key, s3a://, gs://...)")
    cat.add_argument("--columns", help="comma-separated top-level columns to print (default: all)")
    add_storage_option_argument(cat)
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


def _source(args: argparse.Namespace) -> Any:
    """The file argument as the ORC reader takes it: a local path as it is (the reader opens it), a URL opened
    through the storage layer for range reads (the tail, then only the streams printed)."""
    from metastore import storage
    from metastore.locations import local_path

    path = local_path(args.file)
    if path is not None:
        return str(path)
    return storage.open_file(args.file, storage.StorageOptions.parse(args.storage_options))


def _meta(args: argparse.Namespace) -> int:
    from metastore.orcio import describe

    source = _source(args)
    try:
        sys.stdout.write(describe(source))
    finally:
        if not isinstance(source, str):
            source.close()
    return 0


def _cat(args: argparse.Namespace) -> int:
    from metastore.orcio import write_json_lines

    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    source = _source(args)
    try:
        write_json_lines(source, sys.stdout.buffer, columns)
    finally:
        if not isinstance(source, str):
            source.close()
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
