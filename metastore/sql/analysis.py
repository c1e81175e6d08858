"""The engine-independent parts of ANALYZE: which columns and partitions, and how the results are persisted.

The shell's ANALYZE (:mod:`metastore.sql.analyze`, in this process) and the Spark pipeline
(:mod:`metastore.spark`, on executors) compute statistics differently but share everything around it, so that both
write exactly the same things through the client API:

- :func:`statistics_columns` and :func:`list_targets` say what to analyse (a partial partition spec means every
  matching partition);
- each target's computation ends in a :class:`TargetOutcome` (or a failed one: a corrupt file fails its partition
  only);
- :func:`persist_outcomes` writes basic statistics into the table's or partitions' parameters and column
  statistics per partition, then table-level statistics merged from the partitions' sketches (or, when only some
  partitions were analysed, aggregated by the metastore from the stored sketches);
- :func:`summarize` gives the result rows and the one-line summary (naming failed partitions and their files).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TextIO

from metastore.catalog import FieldSchema, Partition, Table
from metastore.client import MetastoreClient, StatsWrite
from metastore.errors import InvalidInput, NoSuchObject
from metastore.partnames import make_part_name
from metastore.sql.basic_stats import with_basic_stats
from metastore.sql.table_files import list_data_files, qualified
from metastore.stats.model import ColumnStats, ColumnStatsEntry, kind_for_type
from metastore.storage import FileRef, StorageOptions

if TYPE_CHECKING:
    from metastore.stats.harvest import AnalyzeResult

__all__ = [
    "ALTER_BATCH",
    "AnalyzeTarget",
    "ColumnRequestError",
    "FileProgress",
    "TargetOutcome",
    "failed_outcome",
    "human_bytes",
    "list_targets",
    "outcome_of",
    "persist_outcomes",
    "spec_values",
    "statistics_columns",
    "summarize",
]

#: Partitions whose parameters are replaced per alter_partitions call.
ALTER_BATCH = 500


class ColumnRequestError(InvalidInput):
    """A requested column cannot have statistics; ``index`` is its position in the request."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


@dataclass
class AnalyzeTarget:
    """The table (partition None) or one partition, its location (local or object store) and data files."""

    partition: Partition | None
    name: str | None  # partition name
    location: str
    files: list[FileRef]


@dataclass
class TargetOutcome:
    """What ANALYZE found for one target; ``error`` (naming the file) when it failed and nothing is written."""

    target: AnalyzeTarget
    num_rows: int | None
    num_files: int
    total_size: int
    raw_data_size: int | None
    columns: dict[str, ColumnStats]
    files_read: int = 0
    bytes_read: int = 0
    files_reused: int = 0
    result: AnalyzeResult | None = None  # FOR COLUMNS: kept for merging into table statistics
    error: str | None = None
    #: Nothing changed since its statistics were computed (metastore.sql.fingerprints): they are kept as stored.
    unchanged: bool = False

    @property
    def failed(self) -> bool:
        return self.error is not None


def outcome_of(target: AnalyzeTarget, result: AnalyzeResult) -> TargetOutcome:
    """The outcome of a target whose columns were harvested into ``result``."""
    return TargetOutcome(
        target, result.num_rows, result.num_files, result.total_size, result.raw_data_size, dict(result.columns),
        result.files_read, result.bytes_read, result.files_reused, result,
    )


def failed_outcome(target: AnalyzeTarget, error: str) -> TargetOutcome:
    """A target that could not be analysed (``error`` names the file and why)."""
    return TargetOutcome(target, None, len(target.files), 0, None, {}, error=error)


def statistics_columns(table: Table, names: Sequence[str] | None) -> list[FieldSchema]:
    """The data columns whose statistics are asked for (``None``: every column with a statistics kind).

    Raises :class:`ColumnRequestError` naming the first column that is unknown, a partition column or complex."""
    if names is None:
        return [c for c in table.sd.cols if kind_for_type(c.type) is not None]
    out: list[FieldSchema] = []
    keys = {k.name.lower() for k in table.partition_keys}
    for index, name in enumerate(names):
        if name.lower() in keys:
            raise ColumnRequestError(
                f"'{name}' is a partition column of {qualified(table)}; its values are in the partition "
                "names, it has no column statistics",
                index,
            )
        col = next((c for c in table.sd.cols if c.name.lower() == name.lower()), None)
        if col is None:
            raise ColumnRequestError(f"column '{name}' does not exist in {qualified(table)}", index)
        if kind_for_type(col.type) is None:
            raise ColumnRequestError(
                f"column '{name}' is {col.type}; Hive keeps no statistics of complex types", index
            )
        if col not in out:
            out.append(col)
    return out


def spec_values(table: Table, spec: Mapping[str, Any]) -> list[str | None]:
    """A partition spec given as a mapping (``{"ds": "2024-01-01"}``; a value None leaves the key open) as
    values in key order, checked and normalised as the shell's PARTITION (...) is; InvalidInput otherwise."""
    from metastore.sql.errors import Position, SqlError
    from metastore.sql.partition_specs import resolve_spec
    from metastore.sql.statements import Literal, LiteralKind, Name, PartitionItem, PartitionSpec

    where = Position(1, 1)
    items = tuple(
        PartitionItem(Name(str(k), where), None if v is None else Literal(LiteralKind.STRING, str(v), where))
        for k, v in spec.items()
    )
    try:
        return resolve_spec(table, PartitionSpec(items, where), full=False, what="ANALYZE")
    except SqlError as exc:
        raise InvalidInput(exc.message) from None


def _spec_text(table: Table, values: Sequence[str | None]) -> str:
    return ", ".join(f"{k.name}='{v}'" for k, v in zip(table.partition_keys, values, strict=True) if v is not None)


def _location(location: str | None, owner: str) -> str:
    if not location:
        raise InvalidInput(f"{owner} has no location")
    return location


def list_targets(
    client: MetastoreClient, table: Table, values: Sequence[str | None] | None,
    storage_options: StorageOptions | None = None,
) -> tuple[list[AnalyzeTarget], int]:
    """The targets of ANALYZE, their files listed, and how many partitions the table has in all (0 when
    unpartitioned).

    ``values`` are the partition spec's values in key order (None leaves a key open; ``values`` None: every
    partition). Raises NoSuchObject when no partition matches, InvalidInput for a target without a location,
    StorageError when a location cannot be listed.
    """
    if not table.partition_keys:
        if values is not None:
            raise InvalidInput(f"{qualified(table)} is not partitioned; ANALYZE takes no PARTITION")
        location = _location(table.sd.location, qualified(table))
        return [AnalyzeTarget(None, None, location, list_data_files(location, storage_options))], 0
    if values is None or all(v is None for v in values):
        # every partition (a bare `PARTITION (ds)` too): the listing is also the count, in one call
        partitions = client.list_partitions(table.db_name, table.table_name)
        if values is not None and not partitions:
            raise NoSuchObject(f"no partition of {qualified(table)} matches ({_spec_text(table, values)})")
        total = len(partitions)
    elif all(v is not None for v in values):
        total = len(client.list_partition_names(table.db_name, table.table_name))
        try:
            partitions = [client.get_partition(table.db_name, table.table_name, [v or "" for v in values])]
        except NoSuchObject:
            raise NoSuchObject(
                f"partition ({_spec_text(table, values)}) of {qualified(table)} does not exist"
            ) from None
    else:
        total = len(client.list_partition_names(table.db_name, table.table_name))
        partitions = client.list_partitions(table.db_name, table.table_name, ["" if v is None else v for v in values])
        if not partitions:
            raise NoSuchObject(f"no partition of {qualified(table)} matches ({_spec_text(table, values)})")
    targets = []
    keys = [k.name for k in table.partition_keys]
    for p in partitions:
        name = make_part_name(keys, p.values)
        location = _location(p.sd.location, f"{qualified(table)} partition {name}")
        targets.append(AnalyzeTarget(p, name, location, list_data_files(location, storage_options)))
    return targets, total


class FileProgress:
    """One tqdm bar over all files of an ANALYZE (on ``stream``, only when ``enabled``); targets report in turn."""

    def __init__(self, enabled: bool, stream: TextIO, total: int, description: str, unit: str = "file") -> None:
        self.bar = None
        if enabled and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit=unit, desc=description, file=stream, leave=False, dynamic_ncols=True)
        self.done_before = 0
        self.current = 0

    def callback(self, done: int, _total: int) -> None:
        """``progress(done, total)`` of the current target."""
        if self.bar is not None:
            new = self.done_before + done
            self.bar.update(new - self.current)
            self.current = new

    def advance_to(self, done: int) -> None:
        """Set the bar to ``done`` in all."""
        if self.bar is not None and done > self.current:
            self.bar.update(done - self.current)
            self.current = done

    def finish_target(self, files: int) -> None:
        self.done_before += files
        self.advance_to(self.done_before)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def human_bytes(n: int) -> str:
    """A byte count for people (``12.5 MiB``)."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


# ------------------------------------------------------------------------------------------- persisting


def settle_outcomes(cache: Any, outcomes: Sequence[TargetOutcome], kept: Collection[str | None]) -> None:
    """After a harvest (shell or Spark): the per-file store forgets deleted files (``retain_outcomes``, when
    there is a store) and each outcome of a target in ``kept`` (its files and statistics as an earlier run left
    them, metastore.sql.fingerprints) is marked unchanged unless it failed, so it is not written again."""
    if cache is not None:
        retain_outcomes(cache, outcomes)
    for outcome in outcomes:
        outcome.unchanged = not outcome.failed and outcome.target.name in kept


def retain_outcomes(cache: Any, outcomes: Sequence[TargetOutcome]) -> None:
    """Stored per-file results of files deleted from storage since are forgotten, for every target that did not
    fail (a failed target keeps its own): in one call where the store can (``retain_many``)."""
    groups = {o.target.name: o.target.files for o in outcomes if not o.failed}
    retain_many = getattr(cache, "retain_many", None)
    if retain_many is not None:
        retain_many(groups)
        return
    for name, files in groups.items():
        cache.retain(files, name)


def _persist_parameters(
    client: MetastoreClient, table: Table, outcomes: Sequence[TargetOutcome],
    stamp: Callable[[dict[str, str], TargetOutcome], dict[str, str]],
) -> None:
    """Basic statistics into the table's or the partitions' parameters (alter_partitions in batches); ``stamp``
    adds what else the run records (its fingerprint)."""
    if not table.partition_keys:
        for o in outcomes:
            current = client.get_table(table.db_name, table.table_name)
            client.alter_table(table.db_name, table.table_name,
                               replace(current, parameters=_params_of(current.parameters, o, stamp)))
        return
    for start in range(0, len(outcomes), ALTER_BATCH):
        client.alter_partitions(table.db_name, table.table_name,
                                _altered_partitions(outcomes[start : start + ALTER_BATCH], stamp))


def _params_of(current: dict[str, str], o: TargetOutcome,
               stamp: Callable[[dict[str, str], TargetOutcome], dict[str, str]]) -> dict[str, str]:
    return stamp(with_basic_stats(
        current, num_files=o.num_files, total_size=o.total_size, num_rows=o.num_rows, raw_data_size=o.raw_data_size,
    ), o)


def _altered_partitions(outcomes: Sequence[TargetOutcome],
                        stamp: Callable[[dict[str, str], TargetOutcome], dict[str, str]]) -> list[Partition]:
    """The partitions of ``outcomes`` with their basic statistics and what ``stamp`` adds in their parameters."""
    parts = []
    for o in outcomes:
        assert o.target.partition is not None
        parts.append(replace(o.target.partition, parameters=_params_of(o.target.partition.parameters, o, stamp)))
    return parts


def _merges_table_level(outcomes: Sequence[TargetOutcome], partitions_total: int, merged: AnalyzeResult | None) -> bool:
    """Whether _table_level merges the table level from these outcomes (else the metastore aggregates it)."""
    return len(outcomes) == partitions_total and (
        merged is not None or all(o.result is not None and o.result.partials for o in outcomes)
    )


def _table_level(
    client: MetastoreClient, table: Table, columns: list[FieldSchema], outcomes: Sequence[TargetOutcome],
    partitions_total: int, merged: AnalyzeResult | None = None,
) -> tuple[list[ColumnStatsEntry], bool]:
    """Table-level statistics of a partitioned table, merged through the partitions' sketches (``merged``: that
    merge, already done by a run over every partition's files), and whether they were merged here from every
    partition (else the metastore aggregated the stored partition statistics)."""
    if _merges_table_level(outcomes, partitions_total, merged):
        if merged is None:
            from metastore.stats.harvest import merge_results

            merged = merge_results([o.result for o in outcomes if o.result is not None])
        return [
            ColumnStatsEntry(column=c.name, column_type=c.type, stats=merged.columns[c.name])
            for c in columns if c.name in merged.columns
        ], True
    names = client.list_partition_names(table.db_name, table.table_name)
    result = client.aggregate_statistics(table.db_name, table.table_name, names, [c.name for c in columns])
    return list(result.entries), False


def persist_outcomes(
    client: MetastoreClient, table: Table, columns: list[FieldSchema], outcomes: Sequence[TargetOutcome],
    partitions_total: int, merged: AnalyzeResult | None = None, *, histograms: bool = False,
    unchanged: Collection[str | None] = (), table_unchanged: bool = False,
    inputs: Mapping[str | None, str] | None = None,
) -> None:
    """Write what ANALYZE found: basic statistics into parameters, column statistics per target in
    set_aggr_stats_for batches, then the table-level statistics of a partitioned table. Failed targets get
    nothing written; the table level is then aggregated by the metastore over every partition. ``merged``: the
    outcomes' results already merged (one harvest run over all their files), sparing the merge here.

    Targets named in ``unchanged`` (:mod:`metastore.sql.fingerprints`) are not rewritten: their statistics are
    stored already; their results still go into the table level, unless ``table_unchanged`` says the table
    level is stored already too. With columns, each target written records its fingerprint (``histograms``:
    whether the run computed histograms), and so does the table level when this run merged it from every
    partition. ``inputs``: each target's inputs digest when the caller has them already (find_unchanged's, for
    these columns and ``histograms``), else they are computed here."""
    from metastore.sql.fingerprints import (
        FINGERPRINT_KEY,
        fingerprint,
        inputs_digests,
        stats_digest,
        table_inputs_digest,
    )

    done = [o for o in outcomes if not o.failed]
    if not done:
        return
    write = [o for o in done if o.target.name not in unchanged]
    entries: dict[str | None, list[ColumnStatsEntry]] = {
        o.target.name: [ColumnStatsEntry(column=c.name, column_type=c.type, stats=o.columns[c.name])
                        for c in columns if c.name in o.columns]
        for o in write
    }
    if not columns:
        inputs = {}
    elif inputs is None or any(o.target.name not in inputs for o in done):
        inputs = inputs_digests({o.target.name: o.target.files for o in done}, columns, histograms)

    def stamp(params: dict[str, str], o: TargetOutcome) -> dict[str, str]:
        if columns:
            name = o.target.name
            params[FINGERPRINT_KEY] = fingerprint(inputs[name], stats_digest(entries[name], params))
        return params

    whole = merged if len(done) == len(outcomes) else None  # the merge of every outcome, when one was made

    def table_fingerprint(table_entries: list[ColumnStatsEntry]) -> dict[str, str] | None:
        """The table's fingerprint parameter for a table level this run merged from every partition, when it
        differs from the one recorded (else None)."""
        value = fingerprint(table_inputs_digest({str(k): v for k, v in inputs.items()}, columns, histograms),
                            stats_digest(table_entries, None))
        return None if table.parameters.get(FINGERPRINT_KEY) == value else {FINGERPRINT_KEY: value}

    now = int(time.time())
    partition_writes = [
        StatsWrite(table.db_name, table.table_name, entries[o.target.name], partition_name=o.target.name,
                   last_analyzed=now)
        for o in write
    ]
    if columns and table.partition_keys and len(write) <= ALTER_BATCH and (
        table_unchanged or _merges_table_level(done, partitions_total, whole)
    ):
        # everything this run writes is known before writing: one write_analysis (the embedded client's one
        # transaction: all of it stored or nothing; a server gets the calls below in the same order)
        table_writes: list[StatsWrite] = []
        changes: dict[str, str] | None = None
        if not table_unchanged:
            table_entries, _ = _table_level(client, table, columns, done, partitions_total, whole)
            table_writes = [StatsWrite(table.db_name, table.table_name, table_entries, last_analyzed=now)]
            changes = table_fingerprint(table_entries) if table_entries else None
        if write or table_writes or changes:
            # the partitions are those listed with new parameters: only their parameters are written
            client.write_analysis(table.db_name, table.table_name, _altered_partitions(write, stamp),
                                  partition_writes, table_writes, changes, parameters_only=True)
        return
    _persist_parameters(client, table, write, stamp)
    if not columns:
        return
    client.write_statistics(partition_writes)
    if table.partition_keys and not table_unchanged:
        table_entries, merged_here = _table_level(client, table, columns, done, partitions_total, whole)
        if table_entries:
            client.write_statistics([StatsWrite(table.db_name, table.table_name, table_entries, last_analyzed=now)])
            # the fingerprint alone, when it changes (the table as this run read it: the statistics write above
            # changes only COLUMN_STATS_ACCURATE; the embedded client writes one parameter, not alter_table's
            # rewrite of the whole definition)
            if merged_here and (changes := table_fingerprint(table_entries)):
                client.update_table_parameters(table.db_name, table.table_name, changes)


# ---------------------------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class AnalyzeSummary:
    """The result table of an ANALYZE (one row per target) and its one-line summary."""

    columns: list[str]
    rows: list[list[Any]]
    message: str
    failed: tuple[str, ...]  # one "target: error" per failed target


def summarize(
    table: Table, columns: Sequence[FieldSchema], scan: bool, outcomes: Sequence[TargetOutcome], seconds: float,
    engine: str | None = None,
) -> AnalyzeSummary:
    """Rows per target and the summary line (``scan`` False for NOSCAN); failed targets are named with their
    error (the file and why)."""
    partitioned = bool(table.partition_keys)
    rows = [
        [o.target.name or qualified(table), o.num_rows, o.num_files, o.total_size, o.raw_data_size, o.files_read,
         o.files_reused]
        for o in outcomes if not o.failed
    ]
    header = ["partition" if partitioned else "table", "num_rows", "num_files", "total_size", "raw_data_size",
              "files_read", "files_reused"]
    done = [o for o in outcomes if not o.failed]
    failed = [o for o in outcomes if o.failed]
    files_read = sum(o.files_read for o in done)
    bytes_read = sum(o.bytes_read for o in done)
    reused = sum(o.files_reused for o in done)
    what = f"{len(done)} partition(s)" if partitioned else ("the table" if done else "nothing")
    if columns:
        work = (
            f"{len(columns)} column(s): {files_read} file(s) read ({human_bytes(bytes_read)}), {reused} reused "
            f"from the cache"
        )
        kept = sum(1 for o in done if o.unchanged)
        if kept:
            which = f"{kept} partition(s)" if partitioned else "the table"
            work += f", {which} unchanged since the last ANALYZE (statistics kept)"
    elif scan:
        work = f"footers of {sum(o.num_files for o in done)} file(s) read"
    else:
        work = f"sizes of {sum(o.num_files for o in done)} file(s) listed"
    on = f" on {engine}" if engine else ""
    message = f"analyzed {what} of {qualified(table)}{on}, {work}, {seconds:.2f} s"
    failures = tuple(f"{o.target.name or qualified(table)}: {o.error}" for o in failed)
    if failed:
        noun = "partition" if partitioned else "table"
        message += f"; {len(failed)} {noun}(s) failed, nothing written for them: " + "; ".join(failures)
    return AnalyzeSummary(header, rows, message, failures)
