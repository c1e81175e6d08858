"""Planning a read of one table with its indexes: what the shell's SELECT and `metastore.spark.read_table` share.

:func:`plan_read` lists the table's files (pruning partitions by the predicate's partition columns), cuts them into
splits, and asks the split filter which splits the table's indexes keep (in this process: index files are read
directly, local or on an object store). The plan carries what a reader needs to read only those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from metastore.catalog import Table
from metastore.client import MetastoreClient
from metastore.index.bind import Bound, bind, literal_key, matches_one, restrict
from metastore.index.build import BuildTarget
from metastore.index.columns import ColumnType, Key
from metastore.index.errors import PredicateError
from metastore.index.filter import filter_splits, table_columns
from metastore.index.maintain import list_targets
from metastore.index.model import DataFile, FilterResult, IndexRecord, IndexState, Split
from metastore.index.predicate import Const, Expr, Value, ValueKind
from metastore.index.select import DEFAULT_SPLIT_SIZE, file_splits
from metastore.partnames import parse_part_name
from metastore.storage import StorageOptions

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


@dataclass
class ReadPlan:
    """A table's read under a predicate: its columns, the bound predicate, the splits and what the indexes keep."""

    table: Table
    columns: Mapping[str, ColumnType]
    bound: Bound
    targets: list[BuildTarget]  # the partitions (or the table) left after pruning, with their files
    partitions_total: int  # 0 when unpartitioned
    splits: list[Split]
    result: FilterResult
    #: per data file path: its partition's values as keys, and as shown
    partition_values: dict[str, dict[str, Key | None]] = field(default_factory=dict)
    partition_display: dict[str, dict[str, object]] = field(default_factory=dict)
    #: the predicate as given, and the indexes the split filter was given
    predicate: Expr = field(default_factory=lambda: Const(True))
    indexes: list[IndexRecord] = field(default_factory=list)

    @property
    def kept(self) -> list[Split]:
        return [self.splits[i] for i in self.result.kept]

    @property
    def files(self) -> list[DataFile]:
        return [f for t in self.targets for f in t.files]

    def kept_files(self) -> list[DataFile]:
        """The data files with at least one kept split, in listing order."""
        paths = {s.path for s in self.kept}
        return [f for f in self.files if f.path in paths]

    def may_stripes(self) -> dict[str, frozenset[int]]:
        """Per judged data file, the offsets of the stripes that may match."""
        return {path: frozenset(s.offset for s, m in zip(spans, may, strict=True) if m)
                for path, (spans, may) in self.result.stripes.items()}

    def bytes_to_read(self) -> int:
        """Bytes of the stripes the kept splits read (stripes an index rules out are skipped); a split of a file
        no index judged reads its whole range."""
        return bytes_to_read(self.splits, self.result)

    def bytes_to_read_by(self, name: str, options: StorageOptions | None = None) -> int:
        """The bytes the kept splits would read if the index ``name`` alone filtered them (what EXPLAIN shows
        per index)."""
        record = next(r for r in self.indexes if r.name == name)
        alone = filter_splits(self.table, self.predicate, self.splits, [record], options=options)
        return bytes_to_read(self.splits, alone)


def bytes_to_read(splits: Sequence[Split], result: FilterResult) -> int:
    """Bytes of the stripes the kept splits of ``result`` read (a stripe is read by the split it starts in;
    stripes the indexes rule out are skipped); a split of a file no index judged reads its whole range."""
    total = 0
    for split in (splits[i] for i in result.kept):
        info = result.stripes.get(split.path)
        if info is None:
            total += split.length
            continue
        spans, may = info
        end = split.start + split.length
        total += sum(s.length for s, m in zip(spans, may, strict=True) if m and split.start <= s.offset < end)
    return total


def partition_keys(name: str, columns: Mapping[str, ColumnType]) -> dict[str, Key | None]:
    """A partition's values as keys of its columns' types (None for the default partition, or a value that is not
    one of the type: no comparison holds for it)."""
    out: dict[str, Key | None] = {}
    for key, value in parse_part_name(name):
        ctype = columns.get(key.lower())
        if ctype is None or value == DEFAULT_PARTITION:
            out[key.lower()] = None
            continue
        try:
            out[key.lower()] = literal_key(Value(ValueKind.STRING, value), ctype, key)
        except PredicateError:
            out[key.lower()] = None
    return out


def plan_read(
    client: MetastoreClient, table: Table, where: Expr | None, *, options: StorageOptions | None = None,
    split_size: int = DEFAULT_SPLIT_SIZE,
) -> ReadPlan:
    """Plan a read of ``table`` under ``where`` (None: every row). PredicateError for a predicate naming an
    unknown column or a literal that does not fit its column; StorageError when a location cannot be listed."""
    columns = table_columns(table)
    expr = where if where is not None else Const(True)
    bound = bind(expr, columns)
    targets = list_targets(client, table, None, options)
    pruning = restrict(bound, [k.name.lower() for k in table.partition_keys])
    kept_targets: list[BuildTarget] = []
    values: dict[str, dict[str, Key | None]] = {}
    display: dict[str, dict[str, object]] = {}
    for target in targets:
        if target.partition:
            keys = partition_keys(target.partition, columns)
            if not matches_one(pruning, keys):
                continue
            shown: dict[str, object] = {
                k.lower(): (None if v == DEFAULT_PARTITION else v) for k, v in parse_part_name(target.partition)
            }
            for f in target.files:
                values[f.path] = keys
                display[f.path] = shown
        kept_targets.append(target)
    splits = [s for t in kept_targets for f in t.files for s in file_splits(f, split_size)]
    records = [r for r in client.list_indexes(table.db_name, table.table_name) if r.state is IndexState.READY]
    result = filter_splits(table, expr, splits, records, options=options) if splits else FilterResult((), ())
    return ReadPlan(table, columns, bound, kept_targets, len(targets) if table.partition_keys else 0, splits, result,
                    values, display, expr, records)
