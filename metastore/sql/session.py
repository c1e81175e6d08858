"""What statement helpers need of the shell's session: a small interface, so they never import the executor.

The executor (`sql/executor.py`) runs statements and hands itself to the helper modules (`describe`,
`partitions`, `loading`, `repair`, `analyze`) as a `Session`; the helpers depend on this module only, so imports
go one way: executor -> helpers -> session.
"""

from __future__ import annotations

import getpass
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from metastore.storage import StorageOptions

if TYPE_CHECKING:
    from metastore.catalog import Table
    from metastore.client import MetastoreClient
    from metastore.sql.statements import TableName


def _user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers; the owner is informational
        return "metastore"


@dataclass
class ExecutorOptions:
    """How statements that touch data behave."""

    #: Show progress bars on `progress_stream` (the shell turns this on for terminals or --progress).
    progress: bool = False
    progress_stream: TextIO = field(default_factory=lambda: sys.stderr)
    #: KLL histograms for numeric, date and timestamp columns in ANALYZE ... FOR COLUMNS (Hive 4's field).
    histograms: bool = False
    #: Where incremental ANALYZE keeps per-file results: "metastore" (the metastore database, shared by every host),
    #: "default" (the local cache in the user's cache dir), a local cache path, or None.
    stats_cache: str | None = "default"
    #: Options for object stores (`--storage-option KEY=VALUE`): endpoint, credentials...
    storage: StorageOptions = field(default_factory=StorageOptions)
    #: ANALYZE reports where its time went, phase by phase (`--verbose`).
    verbose: bool = False
    #: Owner recorded for new databases and tables.
    user: str = field(default_factory=lambda: _user_name())
    #: Spark master for ANALYZE on Spark (`metastore sql --spark MASTER`): local[4], spark://h:7077, sc://h:15002.
    spark_master: str | None = None
    #: SET metastore.analyze.engine: "local", "spark", or "auto" (Spark when a master is set and the data is
    #: larger than `spark_threshold` bytes).
    analyze_engine: str = "auto"
    #: SET metastore.analyze.spark.threshold: bytes of data from which "auto" uses Spark (1 GiB).
    spark_threshold: int = 1 << 30


class Session(Protocol):
    """The state a statement runs in: the client, the current database and the options."""

    client: MetastoreClient
    #: The current database (USE), lower case.
    database: str
    options: ExecutorOptions
    #: Statements started in this session, the running one included (1: the first).
    statements_started: int

    def table(self, name: TableName) -> Table:
        """The table a statement names; SqlError at the name when it (or its database) does not exist."""
        ...

    def changed(self) -> None:
        """Tell the session the catalog changed (the interactive shell refreshes its completions)."""
        ...

    def spark_session(self) -> Any:
        """The SparkSession of `options.spark_master`, started on first use and kept for the session."""
        ...
