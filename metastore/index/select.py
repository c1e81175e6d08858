"""The planner-side reader behind the shell's SELECT: cut files into splits, read the rows of kept splits.

A split reads the stripes that *start* inside its byte range (each stripe is read by exactly one split, as
Hive's and Trino's ORC readers assign them). Inside a stripe, row groups are skipped with the ORC row index
(each group's min/max and null flags) and the ORC bloom filters written with the file; the rows read are
then filtered exactly with the bound predicate (bind.py), so what the indexes and ORC's own statistics let
through never changes the answer, only the work.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from metastore.index.bind import AllOf, AnyOf, Bound, KeyRange, KeySet, NullTest, Truth, evaluate, leaves
from metastore.index.columns import (
    ColumnType,
    Domain,
    Family,
    Key,
    KeyConversionError,
    Keys,
    keys_of,
    null_keys,
)
from metastore.index.errors import IndexBuildError
from metastore.index.model import DataFile, Split
from metastore.index.scan import data_file, open_data_file, resolve_field
from metastore.orcio import (
    BloomFilter,
    ColumnStatistics,
    ColumnVector,
    DateStatistics,
    DecimalStatistics,
    IntegerStatistics,
    OrcError,
    OrcReader,
    StringStatistics,
)
from metastore.storage import StorageError, StorageOptions

DEFAULT_SPLIT_SIZE = 64 * 1024 * 1024


def file_splits(file: DataFile, split_size: int = DEFAULT_SPLIT_SIZE) -> list[Split]:
    """A file cut into byte ranges of at most ``split_size`` (one empty split for an empty file)."""
    size = max(file.size, 0)
    if size == 0:
        return [Split(file.path, 0, 0, file.size, file.mtime_ns)]
    return [
        Split(file.path, start, min(split_size, size - start), file.size, file.mtime_ns)
        for start in range(0, size, split_size)
    ]


@dataclass
class ReadStats:
    """What reading did: stripes and row groups read or skipped, rows decoded and returned."""

    splits: int = 0
    stripes_read: int = 0
    stripes_skipped: int = 0  # inside read splits, ruled out by an index
    row_groups_read: int = 0
    row_groups_skipped: int = 0
    rows_decoded: int = 0
    rows_returned: int = 0


@dataclass(frozen=True)
class TableScan:
    """What SELECT reads: the table's columns (name -> type, in order), the predicate, the columns to return."""

    columns: Mapping[str, ColumnType]
    data_columns: Sequence[str]  # in the table's order (positional `_colN` files are matched by it)
    predicate: Bound
    output: Sequence[str]  # column names to return; empty for count(*)
    partition_values: Mapping[str, Mapping[str, Key | None]] = field(default_factory=dict)  # per file path
    partition_display: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


def _stats_bounds(stats: ColumnStatistics, ctype: ColumnType) -> tuple[Key, Key] | None:
    """A row group's (min, max) as keys, when its statistics give them reliably for the column's type."""
    family = ctype.family
    if isinstance(stats, IntegerStatistics | DateStatistics) and family in (Family.INTEGER, Family.DATE):
        if (family is Family.DATE) != isinstance(stats, DateStatistics):
            return None
        return None if stats.minimum is None or stats.maximum is None else (stats.minimum, stats.maximum)
    if isinstance(stats, StringStatistics) and family is Family.STRING:
        low, high = stats.lower, stats.upper
        if low is None or high is None:
            return None
        lo = low.encode("utf-8", "surrogateescape") if isinstance(low, str) else bytes(low)
        hi = high.encode("utf-8", "surrogateescape") if isinstance(high, str) else bytes(high)
        return lo, hi
    if isinstance(stats, DecimalStatistics) and family is Family.DECIMAL and ctype.domain is Domain.INT64:
        if stats.minimum is None or stats.maximum is None:
            return None
        lo_d = stats.minimum.scaleb(ctype.scale).to_integral_value(rounding="ROUND_FLOOR")
        hi_d = stats.maximum.scaleb(ctype.scale).to_integral_value(rounding="ROUND_CEILING")
        return int(lo_d), int(hi_d)
    return None


def _group_may_match(
    leaf: KeyRange | KeySet | NullTest, stats: ColumnStatistics | None, bloom: BloomFilter | None, ctype: ColumnType,
) -> bool:
    """Whether a row group may hold a row satisfying the leaf, judged by its ORC statistics and bloom filter."""
    if stats is None or not stats.values_counted:
        return True
    if isinstance(leaf, NullTest):
        return stats.has_null if leaf.is_null else stats.number_of_values > 0
    if stats.number_of_values == 0:
        return False  # only nulls: no comparison holds
    bounds = _stats_bounds(stats, ctype)
    if bounds is not None:
        low, high = bounds
        if isinstance(leaf, KeyRange):
            if leaf.low is not None and (high < leaf.low or (high == leaf.low and not leaf.low_inclusive)):  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)
                return False
            if leaf.high is not None and (low > leaf.high or (low == leaf.high and not leaf.high_inclusive)):  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)
                return False
        elif not leaf.negated and not any(low <= k <= high for k in leaf.keys):  # type: ignore[operator]  # keys of one column share one type (int or bytes, by its domain)
            return False
    if bloom is not None:
        points: tuple[Key, ...] | None = None
        if isinstance(leaf, KeyRange) and leaf.is_point:
            assert leaf.low is not None
            points = (leaf.low,)
        elif isinstance(leaf, KeySet) and not leaf.negated:
            points = leaf.keys
        if points is not None:
            if ctype.family in (Family.INTEGER, Family.DATE):
                return any(bloom.test_long(int(k)) for k in points)  # type: ignore[arg-type]  # INTEGER and DATE columns have int keys
            if ctype.family is Family.STRING:
                return any(bloom.test_bytes(bytes(k)) for k in points)  # type: ignore[arg-type]  # STRING columns have bytes keys
    return True


def _evaluate_groups(node: Bound, answer: dict[int, np.ndarray], ids: dict[int, int], n: int) -> np.ndarray:
    if isinstance(node, Truth):
        return np.full(n, node.value, dtype=bool)
    if isinstance(node, AllOf | AnyOf):
        masks = [_evaluate_groups(a, answer, ids, n) for a in node.args]
        return np.logical_and.reduce(masks) if isinstance(node, AllOf) else np.logical_or.reduce(masks)
    return answer[ids[id(node)]]


class TableReader:
    """Reads the rows of kept splits for one SELECT."""

    def __init__(
        self, scan: TableScan, *, stripes: Mapping[str, frozenset[int]] | None = None,
        options: StorageOptions | None = None,
    ) -> None:
        """``stripes``: per data file, the offsets of the stripes that may match (from the split filter); other
        stripes of those files are not read. ``options``: for data files on object stores."""
        self.scan = scan
        self.stats = ReadStats()
        self._leaves = leaves(scan.predicate)
        self._stripes = stripes or {}
        self._options = options

    def read(self, splits: Sequence[Split], limit: int | None = None) -> Iterator[tuple[object, ...]]:
        """Rows (tuples of the output columns) of the splits, in split order; stops after ``limit`` rows."""
        produced = 0
        for split in splits:
            if limit is not None and produced >= limit:
                return
            self.stats.splits += 1
            for row in self._read_split(split):
                yield row
                produced += 1
                if limit is not None and produced >= limit:
                    return

    def count(self, splits: Sequence[Split]) -> int:
        """The number of matching rows in the splits."""
        return sum(1 for _ in self.read(splits))

    def _read_split(self, split: Split) -> Iterator[tuple[object, ...]]:
        file = DataFile(split.path, split.file_size if split.file_size is not None else -1, split.file_mtime_ns or 0)
        try:
            if file.size < 0:
                file = data_file(split.path, self._options)
            with open_data_file(file, self._options) as reader:
                yield from self._read_open(reader, split)
        except StorageError as exc:
            raise IndexBuildError(f"cannot read {split.path}: {exc}") from None
        except OrcError as err:
            raise IndexBuildError(f"cannot read {split.path}: corrupt ORC data: {err}") from None
        except KeyConversionError as exc:
            raise IndexBuildError(f"cannot read {split.path}: {exc}") from None
        except OSError as exc:
            raise IndexBuildError(f"cannot read {split.path}: {exc.strerror or exc}") from None

    def _fields(self, reader: OrcReader, names: Sequence[str]) -> dict[str, str | None]:
        """Table column -> file field name (None when the file lacks it)."""
        field_names = list(reader.schema.field_names)
        out: dict[str, str | None] = {}
        for name in names:
            position = self.scan.data_columns.index(name) if name in self.scan.data_columns else None
            i = resolve_field(field_names, name, position)
            out[name] = None if i is None else field_names[i]
        return out

    def _read_open(self, reader: OrcReader, split: Split) -> Iterator[tuple[object, ...]]:
        scan = self.scan
        data_columns = set(scan.data_columns)
        wanted = [c for c in dict.fromkeys([*scan.output, *(leaf.column for leaf in self._leaves)]) if c in data_columns]
        fields = self._fields(reader, wanted)
        read_fields = sorted({f for f in fields.values() if f is not None})
        part_keys = scan.partition_values.get(split.path, {})
        part_display = scan.partition_display.get(split.path, {})
        end = split.start + split.length
        may = self._stripes.get(split.path)
        for info in reader.stripes:
            if not split.start <= info.offset < end or info.number_of_rows == 0:
                continue
            if may is not None and info.offset not in may:
                self.stats.stripes_skipped += 1
                continue
            self.stats.stripes_read += 1
            for first_row, count, batch in self._stripe_batches(reader, info.index, fields, read_fields):
                del first_row
                keys: dict[str, Keys] = {}
                vectors: dict[str, ColumnVector | None] = {}
                for name in wanted:
                    fname = fields[name]
                    vector = batch.get(fname) if fname is not None else None
                    vectors[name] = vector
                for leaf_column in {leaf.column for leaf in self._leaves}:
                    ctype = scan.columns[leaf_column]
                    if leaf_column in data_columns:
                        vector = vectors.get(leaf_column)
                        keys[leaf_column] = null_keys(ctype, count) if vector is None else keys_of(vector, ctype)
                    else:
                        keys[leaf_column] = _constant_keys(ctype, part_keys.get(leaf_column), count)
                mask = evaluate(scan.predicate, keys, count)
                self.stats.rows_decoded += count
                selected = np.flatnonzero(mask)
                if len(selected) == 0:
                    continue
                self.stats.rows_returned += len(selected)
                if not scan.output:
                    for _ in range(len(selected)):
                        yield ()
                    continue
                columns_out: list[list[object]] = []
                for name in scan.output:
                    if name not in data_columns:
                        columns_out.append([part_display.get(name)] * len(selected))
                        continue
                    vector = vectors.get(name)
                    if vector is None:
                        columns_out.append([None] * len(selected))
                        continue
                    values = vector.to_pylist()
                    columns_out.append([values[i] for i in selected.tolist()])
                yield from zip(*columns_out, strict=True)

    def _stripe_batches(
        self, reader: OrcReader, stripe: int, fields: Mapping[str, str | None], read_fields: Sequence[str]
    ) -> Iterator[tuple[int, int, dict[str | None, ColumnVector]]]:
        """(first row, rows, vectors by file field) of the row groups worth reading in a stripe."""
        info = reader.stripes[stripe]
        groups = reader.row_group_count(stripe)
        chosen = np.ones(max(groups, 1), dtype=bool)
        if groups > 1:
            chosen = self._chosen_groups(reader, stripe, fields, groups)
        if groups <= 1 or chosen.all():
            self.stats.row_groups_read += max(groups, 1)
            batch = reader.read_stripe(stripe, columns=list(read_fields)) if read_fields else None
            yield 0, info.number_of_rows, _vectors(batch, read_fields)
            return
        stride = reader.row_index_stride
        self.stats.row_groups_skipped += int(np.count_nonzero(~chosen))
        g = 0
        while g < groups:
            if not chosen[g]:
                g += 1
                continue
            run = g
            while run < groups and chosen[run]:
                run += 1
            self.stats.row_groups_read += run - g
            first = g * stride
            count = min(info.number_of_rows, run * stride) - first
            if read_fields:
                batch = reader.read_row_group(stripe, g, columns=list(read_fields), num_groups=run - g)
                yield first, batch.num_rows, _vectors(batch, read_fields)
            else:
                yield first, count, {}
            g = run

    def _chosen_groups(
        self, reader: OrcReader, stripe: int, fields: Mapping[str, str | None], groups: int
    ) -> np.ndarray:
        scan = self.scan
        answers: dict[int, np.ndarray] = {}
        ids: dict[int, int] = {}
        for i, leaf in enumerate(self._leaves):
            ids[id(leaf)] = i
            fname = fields.get(leaf.column)
            answer = np.ones(groups, dtype=bool)
            if fname is not None and leaf.column in scan.columns:
                ctype = scan.columns[leaf.column]
                try:
                    index = reader.row_index(stripe, fname)
                    blooms = reader.bloom_filters(stripe, fname)
                except OrcError:
                    index, blooms = [], None
                if len(index) == groups:
                    for g in range(groups):
                        bloom = blooms[g] if blooms is not None and len(blooms) == groups else None
                        answer[g] = _group_may_match(leaf, index[g].statistics, bloom, ctype)
            answers[i] = answer
        return _evaluate_groups(scan.predicate, answers, ids, groups)


def _vectors(batch: object, read_fields: Sequence[str]) -> dict[str | None, ColumnVector]:
    if batch is None:
        return {}
    columns = batch.columns  # type: ignore[attr-defined]  # an ORC reader's batch (metastore.orcio), typed object here: its columns by name
    return {name: columns[name] for name in read_fields if name in columns}


def _constant_keys(ctype: ColumnType, key: Key | None, count: int) -> Keys:
    if key is None:
        return null_keys(ctype, count)
    if ctype.domain is Domain.INT64:
        return Keys(ctype.domain, np.full(count, int(key), dtype=np.int64), None)  # type: ignore[arg-type]  # INT64-domain keys are int
    values = np.empty(count, dtype=object)
    values[:] = [key] * count
    return Keys(ctype.domain, values, None)


