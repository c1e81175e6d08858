"""`metastore spark-analyze`: ANALYZE one table on Spark, for cron jobs and spark-submit.

    metastore spark-analyze sales.orders --master spark://host:7077 --metastore thrift://host:9083
    metastore spark-analyze sales.orders --partition ds=2024-01-01 --columns id,price --master sc://host:15002

Exit code 0 when every partition was analysed, 1 otherwise (bad input, unreachable metastore or Spark, a
partition with an unreadable file); errors are one line on stderr. The options are parsed with argparse only:
pyspark and the statistics code load when the command runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from metastore.storage import add_storage_option_argument

__all__ = ["add_spark_analyze_command", "main", "run_spark_analyze"]


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def configure_parser(p: argparse.ArgumentParser) -> None:
    """Add the options of `metastore spark-analyze` to a parser."""
    p.add_argument("table", metavar="DB.TABLE", help="the table to analyze (a bare name means database default)")
    p.add_argument("--master", metavar="MASTER", default=os.environ.get("METASTORE_SPARK_MASTER"),
                   help="Spark master: local[4], spark://host:7077, yarn, k8s://..., or sc://host:15002 for Spark "
                   "Connect (default: METASTORE_SPARK_MASTER; under spark-submit, the session it set up)")
    p.add_argument("--metastore", "--connect", dest="metastore", metavar="URI",
                   default=os.environ.get("METASTORE_URI", "thrift://127.0.0.1:9083"),
                   help="metastore to read the table from and write statistics to: thrift://host:9083 "
                   "(default: METASTORE_URI, else thrift://127.0.0.1:9083) or a database URL for embedded use")
    p.add_argument("--columns", metavar="C1,C2", action="append",
                   help="columns to compute statistics of (repeatable or comma-separated; default: all columns)")
    p.add_argument("--basic-only", action="store_true",
                   help="only basic statistics (numRows, rawDataSize, numFiles, totalSize), as COMPUTE STATISTICS")
    p.add_argument("--partition", metavar="KEY=VALUE", action="append", type=_key_value,
                   help="partition spec, possibly partial (repeatable: --partition ds=2024-01-01 --partition hr=5)")
    p.add_argument("--histograms", action="store_true", help="also compute KLL histograms")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--stats-cache", metavar="PATH",
                       help="where per-file results are kept for incremental runs: 'metastore' (the metastore's "
                       "database, shared with every shell and driver; the default with a thrift:// metastore), "
                       "'default' (the user's cache directory, the default for a database URL) or a local path")
    cache.add_argument("--no-stats-cache", action="store_true", help="analyze every file afresh, keep no cache")
    p.add_argument("--conf", metavar="KEY=VALUE", action="append", type=_key_value, default=[],
                   help="Spark configuration for the session (repeatable), e.g. spark.executor.memory=4g")
    p.add_argument("--progress", action="store_true", help="show a progress bar on stderr")
    p.add_argument("--output", choices=("table", "json", "csv"), default="table",
                   help="how the per-partition rows are printed (default: an aligned table)")
    add_storage_option_argument(p)


def add_spark_analyze_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], help_text: str) -> None:
    """Add `spark-analyze` to the main parser's subparsers."""
    p = subparsers.add_parser(
        "spark-analyze",
        help=help_text,
        description="Hive's ANALYZE TABLE ... COMPUTE STATISTICS FOR COLUMNS computed on Spark (executors read the "
        "ORC files, the driver merges and writes through the metastore). Needs the `spark` extra. Exit code 1 "
        "when anything failed.",
    )
    configure_parser(p)
    p.set_defaults(func=run_spark_analyze)


def _one_line(text: str) -> str:
    """Spark's errors carry JVM stack traces: the first line that says something, whitespace squeezed."""
    for line in str(text).splitlines():
        if line.strip():
            return " ".join(line.split())[:600]
    return "unknown error"


def run_spark_analyze(args: argparse.Namespace) -> int:
    """Run `metastore spark-analyze` with parsed arguments; returns the exit code."""
    logging.getLogger("thrift").setLevel(logging.CRITICAL)
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    from metastore.client import connect
    from metastore.errors import MetastoreError
    from metastore.storage import StorageOptions

    columns: list[str] | None = None
    if args.basic_only:
        if args.columns:
            print("metastore spark-analyze: error: --basic-only takes no --columns", file=sys.stderr)
            return 1
        columns = []
    elif args.columns:
        columns = [c.strip() for text in args.columns for c in text.split(",") if c.strip()]
    partition = dict(args.partition) if args.partition else None
    try:
        storage = StorageOptions.parse(args.storage_options)
        # the metastore first: an unreachable one is one line at once, before a JVM starts
        connect(args.metastore).close()
    except MetastoreError as exc:
        print(f"metastore spark-analyze: error: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    from metastore.spark.analyze import analyze_table

    if not args.master and not _under_spark_submit():
        print(f"metastore spark-analyze: error: {_NO_MASTER}", file=sys.stderr)
        return 1
    # Spark starts when a file has to be read: bad input, an unreachable object store or a re-run with nothing
    # changed answer without a JVM
    spark = _LazySession(args.master, dict(args.conf))
    try:
        summary = analyze_table(
            spark, args.table, columns, partition, args.histograms, args.metastore,
            cache=_cache_option(args), progress=args.progress,
            storage_options=storage,
        )
    except _SparkStartError as exc:
        print(f"metastore spark-analyze: error: {exc}", file=sys.stderr)
        return 1
    except MetastoreError as exc:
        print(f"metastore spark-analyze: error: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a failed Spark job (py4j, Connect) as one line
        print(f"metastore spark-analyze: error: Spark failed: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    from metastore.sql.output import Result, format_result

    text = format_result(Result(summary.columns, summary.rows), args.output)
    if text is not None:
        print(text, flush=True)
    print(summary.message, file=sys.stderr, flush=True)
    return 1 if summary.failed else 0


def _cache_option(args: argparse.Namespace) -> str | None:
    if args.no_stats_cache:
        return None
    # a server keeps per-file results for every host; an embedded database's user keeps them locally
    return str(args.stats_cache) if args.stats_cache else "auto"


_NO_MASTER = ("no Spark master: give --master (local[4], spark://host:7077, sc://host:15002) or set "
              "METASTORE_SPARK_MASTER, or run under spark-submit")


def _under_spark_submit() -> bool:
    return "SPARK_ENV_LOADED" in os.environ or bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


class _SparkStartError(Exception):
    """Spark could not start (no Java, a bad or unreachable master): the message is the one line to print."""


class _LazySession:
    """The session on ``master`` (or the one spark-submit configured), started on the first call."""

    def __init__(self, master: str | None, conf: dict[str, str]) -> None:
        self.master = master
        self.conf = conf
        self.session: Any = None

    def __call__(self) -> Any:
        if self.session is None:
            try:
                self.session = self._start()
            except Exception as exc:  # noqa: BLE001 - Spark's start-up errors (no Java, bad master) as one line
                raise _SparkStartError(f"cannot start Spark on {self.master or 'spark-submit'}: "
                                       f"{_one_line(str(exc))}") from None
        return self.session

    def _start(self) -> Any:
        if self.master:
            from metastore.spark.session import spark_session

            return spark_session(self.master, "metastore spark-analyze", self.conf)
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName("metastore spark-analyze")
        for key, value in self.conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    def stop(self) -> None:
        if self.session is not None:
            from metastore.spark.session import stop_spark_session

            stop_spark_session(self.session)
            self.session = None


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m metastore.spark.cli` (and spark-submit's entry script): the command without the front end."""
    parser = argparse.ArgumentParser(prog="metastore spark-analyze", description=__doc__.splitlines()[0])
    configure_parser(parser)
    args = parser.parse_args(argv)
    try:
        return run_spark_analyze(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
