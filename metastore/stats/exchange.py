"""Column statistics as callers exchange them with a metastore: what one write carries, what an aggregate returns.

Plain values shared by the statistics service, both metastore clients and the Thrift handler, so that a remote
client needs neither the service nor its store to build or read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from metastore.catalog import DEFAULT_CATALOG
from metastore.stats.model import ColumnStatsEntry


@dataclass(frozen=True)
class StatsWrite:
    """Statistics of one table (partition_name None) or one partition, as one ColumnStatistics carries them."""

    db_name: str
    table_name: str
    entries: Sequence[ColumnStatsEntry]
    partition_name: str | None = None
    last_analyzed: int | None = None
    catalog: str = DEFAULT_CATALOG


@dataclass(frozen=True)
class AggregateResult:
    """Statistics merged over a table's partitions (get_aggr_stats_for) and how many partitions had any."""

    entries: list[ColumnStatsEntry]
    parts_found: int
