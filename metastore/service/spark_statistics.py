"""Spark's optimizer ↔ Hive column statistics, at the two places they meet: reading a table, altering it.

Design: TAB_COL_STATS is the one source of truth. Spark's ``spark.sql.statistics.*`` properties are not stored;
they are composed from the table's statistics whenever a table is read (Spark reads them only from get_table's
parameters). So every statistics write, delete, column drop or retype is visible to Spark at once, with no copy
to keep consistent and nothing added to the statistics write path (one round trip on PostgreSQL).

The other way: when a client (Spark's ANALYZE ... FOR COLUMNS) alters a table with colStats properties that
differ from those the table would show, the difference is a new analysis: it is written to TAB_COL_STATS in the
alter's transaction; its row count and size go to Hive's numRows/totalSize. Properties equal to the composed ones
are what the client read and carries forward (Spark's ALTER TABLE does): nothing to do. Properties that do not
parse are skipped with a WARNING, never an error to the client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace

from metastore.catalog import DEFAULT_ENGINE, Table
from metastore.errors import MetastoreError
from metastore.stats import spark_properties as sp
from metastore.stats.model import ColumnStatsEntry
from metastore.stats.validate import normalize_entry
from metastore.store.store import UnitOfWork

log = logging.getLogger(__name__)


def _table_entries(uow: UnitOfWork, table: Table) -> list[ColumnStatsEntry]:
    columns = [c.name for c in table.sd.cols]
    if not columns:
        return []
    found = uow.column_stats.read_table_stats(
        table.catalog_name, table.db_name, table.table_name, columns, DEFAULT_ENGINE,
        bit_vectors=False, histograms=False,
    )
    return [e for e, _ in found]


def spark_view(uow: UnitOfWork, table: Table) -> Table:
    """The table with Spark's statistics properties composed from its table-level column statistics."""
    entries = _table_entries(uow, table)
    if not entries and not has_spark_statistics(table.parameters):
        return table
    columns = [c.name for c in table.sd.cols]
    return replace(table, parameters=sp.with_spark_statistics(table.parameters, entries, columns))


def absorb_spark_statistics(uow: UnitOfWork, old: Table, new_table: Table) -> tuple[Table, list[ColumnStatsEntry]]:
    """Split an altered table's Spark statistics properties from it (call before the alter, in its transaction):
    the table to store (no ``spark.sql.statistics.*``; a new Spark row count/size in Hive's numRows/totalSize)
    and the entries of columns Spark analysed anew, to write after the alter (write_absorbed)."""
    incoming = new_table.parameters
    if not has_spark_statistics(incoming):
        return new_table, []
    stored_entries = _table_entries(uow, old)
    shown = sp.with_spark_statistics(old.parameters, stored_entries, [c.name for c in old.sd.cols])
    kept = {k: v for k, v in incoming.items() if not k.startswith(sp.STATISTICS_PREFIX)}
    where = f"{new_table.db_name}.{new_table.table_name}"
    try:
        spark = sp.parse_table_stats(incoming)
    except sp.SparkPropertyError as e:
        log.warning("Spark statistics of %s ignored: %s", where, e)
        return replace(new_table, parameters=kept), []
    for key, hive_key in ((sp.NUM_ROWS, "numRows"), (sp.TOTAL_SIZE, "totalSize")):
        value = incoming.get(key)
        if value is not None and value != shown.get(key):
            kept[hive_key] = value
    shown_columns = sp.parse_table_stats(shown).columns
    by_name = {e.column.lower(): e for e in stored_entries}
    types = {c.name.lower(): c.type for c in new_table.sd.cols}
    old_types = {c.name.lower(): c.type for c in old.sd.cols}

    def keep_as_given(column: str, fields: Mapping[str, str]) -> None:
        # Spark's own statistics of a column we hold none of (e.g. a boolean with both values: Spark does not say
        # how many of each) stay stored for Spark, until the column is analysed, dropped or retyped.
        if column.lower() not in by_name and old_types.get(column.lower()) == types.get(column.lower()):
            kept.update({f"{sp.COL_STATS_PREFIX}{column}.{f}": v for f, v in fields.items()})

    num_rows = spark.num_rows
    if num_rows is None:
        rows_text = kept.get("numRows")
        num_rows = int(rows_text) if rows_text is not None and rows_text.isdigit() else None
    entries = []
    for column, fields in spark.columns.items():
        hive_type = types.get(column.lower())
        if dict(fields) == dict(shown_columns.get(column, {})):
            keep_as_given(column, fields)  # carried forward from what the client read
            continue
        if hive_type is None:
            log.warning("Spark statistics of %s ignored for column %r: no such column", where, column)
            continue
        try:
            entry = sp.entry_from_properties(
                column, hive_type, fields, num_rows=num_rows, stored=by_name.get(column.lower())
            )
        except sp.SparkPropertyError as e:
            log.warning("Spark statistics of %s ignored for column %r: %s", where, column, e)
            keep_as_given(column, fields)
            continue
        if entry is not None:
            entries.append(entry)
    return replace(new_table, parameters=kept), entries


def write_absorbed(uow: UnitOfWork, table: Table, entries: list[ColumnStatsEntry]) -> None:
    """Write the entries absorb_spark_statistics found (after the alter, same transaction); an entry our
    validation refuses is skipped with a WARNING."""
    if not entries:
        return
    target = uow.column_stats.table_target(table.catalog_name, table.db_name, table.table_name, lock="update")
    if target is None:
        return
    valid = []
    num_rows = int(target.num_rows) if target.num_rows and target.num_rows.isdigit() else None
    for entry in entries:
        try:
            valid.append(normalize_entry(
                entry, target.column(entry.column), owner=target.qualified_name, num_rows=num_rows
            ))
        except MetastoreError as e:
            log.warning("Spark statistics of %s ignored for column %r: %s", target.qualified_name, entry.column, e)
    if valid:
        uow.column_stats.write_table_stats(target, valid, engine=DEFAULT_ENGINE, last_analyzed=int(time.time()))


def has_spark_statistics(parameters: Mapping[str, str]) -> bool:
    """Whether parameters carry any Spark statistics property."""
    return any(k.startswith(sp.STATISTICS_PREFIX) for k in parameters)
