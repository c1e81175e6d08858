"""Column statistics in SQL (TAB_COL_STATS, PART_COL_STATS): the one repository the server runs, split by job.

- statements: the SQL shared by every statement and the per-dialect statement cache;
- (metastore.store.prepared: PostgreSQL prepared statements on the DB-API cursor, the hot paths);
- rows: statistics entries <-> rows (the typed columns, and the stored Thrift bytes);
- lookup: a table or partitions as statistics need them (ids, columns, parameters, row locks);
- reads / encoded: statistics by names, as entries or as their stored Thrift bytes;
- versions: the version of a set of partitions' statistics (the reply cache's check);
- sums: partition statistics summed up in SQL (get_aggr_stats_for);
- parameters: COLUMN_STATS_ACCURATE kept by compare-and-set;
- writes: upserts and the one-round-trip table write (metastore_put_table_stats);
- deletes: deletes by request and when columns are dropped or retyped;
- repository: StatsRepository, what the statistics service calls, by intent.

Lists of names travel as one parameter, so every statement is the same whatever the number of names, and
concurrent writers take row locks in one order (tables by name, partitions by PART_ID, rows by key).
"""

from metastore.store.column_stats.deletes import forget_columns, forget_partition_columns
from metastore.store.column_stats.lookup import PartitionTarget, TableTarget
from metastore.store.column_stats.repository import ServedEncoding, StatsRepository
from metastore.store.column_stats.sums import ColumnSums

__all__ = [
    "ColumnSums",
    "PartitionTarget",
    "ServedEncoding",
    "StatsRepository",
    "TableTarget",
    "forget_columns",
    "forget_partition_columns",
]
