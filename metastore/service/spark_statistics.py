"""Spark's optimizer ↔ Hive column statistics, at the places they meet: reading a table, altering a table or its
partitions.

Design: TAB_COL_STATS is the one source of truth. Spark's ``spark.sql.statistics.*`` properties are not stored;
they are composed from the table's statistics whenever a table is read (Spark reads them only from get_table's
parameters). So every statistics write, delete, column drop or retype is visible to Spark at once, with no copy
to keep consistent and nothing added to the statistics write path (one round trip on PostgreSQL). Columns that
COLUMN_STATS_ACCURATE says are not accurate (Hive's own flag; Hive clears it when data is loaded) are not shown.
A column with a KLL sketch gets Spark's equi-height histogram built from it; a histogram Spark's own ANALYZE
wrote is kept (in a parameter of ours, with a digest of the statistics it came with) and shown for as long as
the column's statistics are those it came with.

The other way: when a client (Spark's ANALYZE ... FOR COLUMNS) alters a table with colStats properties that
differ from those the table would show, the difference is a new analysis: it is written to TAB_COL_STATS in the
alter's transaction; its row count and size go to Hive's numRows/totalSize. Properties equal to the composed ones
are what the client read and carries forward (Spark's ALTER TABLE does): nothing to do. Conflicts go to the
newest analysis: the composed properties carry a basis (per column, which statistics they were made from); a
client altering with properties read before someone else analysed a column carries an older basis, and the
stored, newer statistics stay. Spark's ANALYZE rewrites every statistics key, basis included, so what it sends
is its own new analysis. A client that drops every Spark statistics key (Spark does after an INSERT: its
statistics no longer describe the data) takes the shown columns out of COLUMN_STATS_ACCURATE, as Hive does after
a load: Spark sees none of them until they are analysed again; TAB_COL_STATS keeps them for Hive and Trino.
Properties that do not parse are skipped with a WARNING, never an error to the client.

Partitions: Spark's ANALYZE ... PARTITION sends its row count and size in a partition's parameters. They go to
Hive's numRows/totalSize (which Spark reads when its own keys are absent, and sums after pruning) and are never
stored, so no Spark number outlives the partition's basic statistics.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from metastore.catalog import DEFAULT_ENGINE, Partition, Table
from metastore.errors import MetastoreError
from metastore.stats import spark_properties as sp
from metastore.stats.accurate import (
    COLUMN_STATS_ACCURATE,
    columns_marked_accurate,
    params_with_columns_removed,
)
from metastore.stats.model import ColumnStatsEntry
from metastore.stats.spark_histogram import SparkHistogramError, decode_histogram
from metastore.stats.validate import normalize_entry
from metastore.store.store import UnitOfWork

log = logging.getLogger(__name__)

#: Ours: ``<digest of the column's fields>:<Spark's histogram text>``, a histogram Spark's ANALYZE wrote for the
#: column. Never shown to clients; shown as Spark's histogram while the column's fields still have that digest.
SPARK_HISTOGRAM_PREFIX = "metastore.spark.histogram."


@dataclass(frozen=True)
class _View:
    """What a table shows Spark: its parameters, each shown column's basis token, the entries shown."""

    parameters: dict[str, str]
    tokens: dict[str, str]
    entries: dict[str, ColumnStatsEntry]
    stored_histograms: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Absorbed:
    """A new Spark analysis found in an alter: entries to write, and Spark's histogram text of some of them."""

    entries: list[ColumnStatsEntry] = field(default_factory=list)
    histograms: dict[str, str] = field(default_factory=dict)


def _token(entry: ColumnStatsEntry, last_analyzed: int) -> str:
    return f"{last_analyzed}-{sp.fields_digest(entry)}"


def _stored_histogram(parameters: Mapping[str, str], entry: ColumnStatsEntry) -> str | None:
    """Spark's own histogram of the column, if it came with the statistics the column has now."""
    value = parameters.get(SPARK_HISTOGRAM_PREFIX + entry.column.lower())
    if value is None:
        return None
    digest, _, text = value.partition(":")
    return text if text and digest == sp.fields_digest(entry) else None


def _view(uow: UnitOfWork, table: Table) -> _View:
    columns = [c.name for c in table.sd.cols]
    params = {k: v for k, v in table.parameters.items() if not k.startswith(SPARK_HISTOGRAM_PREFIX)}
    if not columns:
        return _View(params, {}, {})
    found = uow.column_stats.read_table_stats(
        table.catalog_name, table.db_name, table.table_name, columns, DEFAULT_ENGINE,
        bit_vectors=False, histograms=True,
    )
    accurate_raw = table.parameters.get(COLUMN_STATS_ACCURATE)
    if accurate_raw is not None:
        # Hive's word on which statistics still describe the data; absent, every stored one is taken.
        accurate = {c.lower() for c in columns_marked_accurate(accurate_raw)}
        found = [(e, t) for e, t in found if e.column.lower() in accurate]
    if not found and not has_spark_statistics(params):
        return _View(params, {}, {})
    histograms: dict[str, str] = {}
    stored: dict[str, str] = {}
    for entry, _ in found:
        text = _stored_histogram(table.parameters, entry)
        if text is not None:
            stored[entry.column.lower()] = text
        else:
            text = sp.kll_histogram_text(entry)
        if text is not None:
            histograms[entry.column.lower()] = text
    entries = [e for e, _ in found]
    composed = sp.with_spark_statistics(params, entries, columns, histograms=histograms)
    tokens = {e.column.lower(): _token(e, t) for e, t in found}
    if tokens:
        composed[sp.BASIS] = json.dumps(tokens, separators=(",", ":"), sort_keys=True)
    else:
        composed.pop(sp.BASIS, None)
    return _View(composed, tokens, {e.column.lower(): e for e in entries}, stored)


def spark_view(uow: UnitOfWork, table: Table) -> Table:
    """The table with Spark's statistics properties composed from its table-level column statistics."""
    view = _view(uow, table)
    if view.parameters == table.parameters:
        return table
    return replace(table, parameters=view.parameters)


def _basis(incoming: Mapping[str, str], where: str) -> dict[str, str] | None:
    text = incoming.get(sp.BASIS)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
        log.warning("Spark statistics basis of %s ignored: not a JSON object of strings", where)
        return None
    return {str(k).lower(): v for k, v in doc.items()}


def _table_number(incoming: Mapping[str, str], key: str, where: str) -> int | None:
    """A Spark table/partition number (row count, size): None, with a WARNING, when it is not a count."""
    value = incoming.get(key)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        log.warning("Spark statistics of %s: %s ignored, not an integer: %r", where, key, value)
        return None
    if number < 0:
        log.warning("Spark statistics of %s: %s ignored, negative: %r", where, key, value)
        return None
    return number


def absorb_spark_statistics(uow: UnitOfWork, old: Table, new_table: Table) -> tuple[Table, Absorbed]:
    """Split an altered table's Spark statistics properties from it (call before the alter, in its transaction):
    the table to store (no ``spark.sql.statistics.*``; a new Spark row count/size in Hive's numRows/totalSize)
    and the columns Spark analysed anew, to write after the alter (write_absorbed)."""
    incoming = new_table.parameters
    where = f"{new_table.db_name}.{new_table.table_name}"
    kept = {k: v for k, v in incoming.items()
            if not k.startswith(sp.STATISTICS_PREFIX) and not k.startswith(SPARK_HISTOGRAM_PREFIX)}
    view = _view(uow, old)
    shown = view.parameters
    shown_columns = sp.column_fields(shown)
    if view.entries and not any(k.startswith(sp.COL_STATS_PREFIX) for k in incoming):
        # The client removed Spark's column statistics (Spark does after INSERT, TRUNCATE): those shown no longer
        # describe the data. Hive's way of saying so: out of COLUMN_STATS_ACCURATE.
        kept.setdefault(COLUMN_STATS_ACCURATE, shown.get(COLUMN_STATS_ACCURATE, "{}"))
        kept = params_with_columns_removed(kept, view.entries)
    if not has_spark_statistics(incoming):
        return replace(new_table, parameters=kept), Absorbed()
    for key, hive_key in ((sp.NUM_ROWS, "numRows"), (sp.TOTAL_SIZE, "totalSize")):
        if incoming.get(key) is None or incoming.get(key) == shown.get(key):
            continue
        number = _table_number(incoming, key, where)
        if number is not None:
            kept[hive_key] = str(number)
    basis = _basis(incoming, where)
    by_name = view.entries
    types = {c.name.lower(): c.type for c in new_table.sd.cols}
    old_types = {c.name.lower(): c.type for c in old.sd.cols}

    def keep_as_given(column: str, fields: Mapping[str, str]) -> None:
        # Spark's own statistics of a column we hold none of (e.g. a boolean with both values: Spark does not say
        # how many of each) stay stored for Spark, until the column is analysed, dropped or retyped.
        if column.lower() not in by_name and old_types.get(column.lower()) == types.get(column.lower()):
            kept.update({f"{sp.COL_STATS_PREFIX}{column}.{f}": v for f, v in fields.items()})

    rows_text = kept.get("numRows")
    num_rows = int(rows_text) if rows_text is not None and rows_text.isdigit() else None
    absorbed = Absorbed()
    for column, fields in sp.column_fields(incoming).items():
        name = column.lower()
        hive_type = types.get(name)
        if dict(fields) == dict(shown_columns.get(column, {})):
            keep_as_given(column, fields)  # carried forward from what the client read
            if name in view.stored_histograms and "histogram" in fields:
                kept[SPARK_HISTOGRAM_PREFIX + name] = old.parameters[SPARK_HISTOGRAM_PREFIX + name]
            continue
        if basis is not None and basis.get(name) != view.tokens.get(name):
            # Read before the column's statistics last changed: the stored analysis is the newer one.
            log.warning("Spark statistics of %s ignored for column %r: read before its statistics changed; the "
                        "newer stored statistics are kept", where, column)
            continue
        if hive_type is None:
            log.warning("Spark statistics of %s ignored for column %r: no such column", where, column)
            continue
        try:
            entry = sp.entry_from_properties(
                column, hive_type, fields, num_rows=num_rows, stored=by_name.get(name)
            )
        except sp.SparkPropertyError as e:
            log.warning("Spark statistics of %s ignored for column %r: %s", where, column, e)
            keep_as_given(column, fields)
            continue
        if entry is None:
            continue
        absorbed.entries.append(entry)
        histogram = fields.get("histogram")
        if histogram is not None:
            try:
                decode_histogram(histogram)
            except SparkHistogramError as e:
                log.warning("Spark histogram of %s ignored for column %r: %s", where, column, e)
            else:
                absorbed.histograms[entry.column] = histogram
    return replace(new_table, parameters=kept), absorbed


def write_absorbed(uow: UnitOfWork, table: Table, absorbed: Absorbed) -> None:
    """Write the entries absorb_spark_statistics found (after the alter, same transaction); an entry our
    validation refuses is skipped with a WARNING. Spark's histograms are kept beside the statistics they came
    with."""
    if not absorbed.entries:
        return
    target = uow.column_stats.table_target(table.catalog_name, table.db_name, table.table_name, lock="update")
    if target is None:
        return
    valid = []
    num_rows = int(target.num_rows) if target.num_rows and target.num_rows.isdigit() else None
    for entry in absorbed.entries:
        try:
            valid.append(normalize_entry(
                entry, target.column(entry.column), owner=target.qualified_name, num_rows=num_rows
            ))
        except MetastoreError as e:
            log.warning("Spark statistics of %s ignored for column %r: %s", target.qualified_name, entry.column, e)
    if not valid:
        return
    uow.column_stats.write_table_stats(target, valid, engine=DEFAULT_ENGINE, last_analyzed=int(time.time()))
    histograms = {
        SPARK_HISTOGRAM_PREFIX + e.column.lower(): f"{sp.fields_digest(e)}:{absorbed.histograms[e.column]}"
        for e in valid if e.column in absorbed.histograms
    }
    if histograms:
        uow.tables.update_parameters(table.db_name, table.table_name, dict(histograms), catalog=table.catalog_name)


def absorb_partition_statistics(partition: Partition, where: str) -> Partition:
    """A partition as stored: Spark's row count and size (its ANALYZE ... PARTITION) in Hive's numRows and
    totalSize, which Spark reads when its own keys are absent; no ``spark.sql.statistics.*`` key is stored. A
    changed number makes rawDataSize (of an older analysis; Spark prefers it to totalSize after pruning) go."""
    params = partition.parameters
    if not has_spark_statistics(params):
        return partition
    kept = {k: v for k, v in params.items() if not k.startswith(sp.STATISTICS_PREFIX)}
    changed = False
    for key, hive_key in ((sp.NUM_ROWS, "numRows"), (sp.TOTAL_SIZE, "totalSize")):
        number = _table_number(params, key, where)
        if number is not None and kept.get(hive_key) != str(number):
            kept[hive_key] = str(number)
            changed = True
    if changed:
        kept.pop("rawDataSize", None)
    return replace(partition, parameters=kept)


def has_spark_statistics(parameters: Mapping[str, str]) -> bool:
    """Whether parameters carry any Spark statistics property."""
    return any(k.startswith(sp.STATISTICS_PREFIX) for k in parameters)
