"""The split filter: which splits (byte ranges of data files) may hold rows matching a predicate.

    result = filter_splits(table, "id = 42" as a predicate, splits, indexes=records)
    result.kept      # positions of the splits to read
    result.counts    # per index: splits it could judge, and how many of those it kept
    result.warnings  # one line per file or index file that could not be used

It never drops a split that may match. Everything an index cannot decide keeps the split: a predicate leaf
the index does not answer (a range on BLOOM, NOT IN on BTREE), a column without index, a file the index does
not cover or whose size or modification time changed since the build (keyed by path, size and mtime, so a
file copied in with an old mtime is still "unknown"), an index being built, a missing or corrupt index file,
an index whose column changed type. The predicate is evaluated per stripe with SQL's logic: every index on a
leaf's column must admit a stripe (AND of conservative answers is conservative), AND needs all operands, OR
any. A split is kept when its byte range overlaps a stripe that may match; a split overlapping no stripe holds
no rows and is dropped.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from metastore.catalog import Table
from metastore.errors import MetastoreError
from metastore.index.bind import AllOf, AnyOf, Bound, KeyRange, KeySet, NullTest, Truth, bind, leaves
from metastore.index.columns import ColumnType, column_type
from metastore.index.coverage import StripeSpan
from metastore.index.errors import IndexFileCorrupt, UnsupportedColumn
from metastore.index.model import (
    DataFile,
    FilterResult,
    IndexCount,
    IndexPart,
    IndexRecord,
    IndexState,
    Split,
)
from metastore.index.parts import PartReader, open_part
from metastore.index.predicate import Expr, from_json
from metastore.index.scan import data_file, qualified_path
from metastore.locations import local_path
from metastore.storage import StorageOptions

#: warnings returned at most (the rest are counted in the last line)
MAX_WARNINGS = 100


class PartCache:
    """Opened index files, reused while their size and modification time stay the same (LRU by count)."""

    def __init__(self, capacity: int = 2048) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple[str, str, str, str], tuple[tuple[int, int], PartReader]] = OrderedDict()
        self._lock = threading.Lock()

    def open(
        self, location: str, expected_size: int, *, kind: str, column: str, ctype: ColumnType,
        options: StorageOptions | None = None,
    ) -> PartReader:
        """The reader of an index file; IndexFileCorrupt when it is missing, of the wrong size or malformed.
        Local files are reopened when their mtime changes; part files on object stores are never rewritten
        (every build writes new names), so their readers are kept by location and size."""
        path = _local_file(location)
        stamp: tuple[int, int]
        if path is not None:
            try:
                st = os.stat(path)
            except OSError as exc:
                raise IndexFileCorrupt(location, f"cannot be opened: {exc.strerror or exc}") from None
            if st.st_size != expected_size:
                raise IndexFileCorrupt(location, f"is {st.st_size} bytes, the index record says {expected_size}")
            stamp = (st.st_size, st.st_mtime_ns)
        else:
            stamp = (expected_size, 0)
        key = (location, kind, column, ctype.hive)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0] == stamp:
                self._items.move_to_end(key)
                return hit[1]
        reader = open_part(location, expected_size, kind=kind, column=column, ctype=ctype, options=options)
        with self._lock:
            self._items[key] = (stamp, reader)
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return reader

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


@functools.lru_cache(maxsize=1 << 16)
def _local_file(location: str) -> str | None:
    """The local path of an index file's location (None on object stores), kept per location: a split filter
    checks every part it opens, and a STRIPE-level index has a part per data file."""
    path = local_path(location)
    return None if path is None else str(path)


#: the process's cache (the server's workers and the shell each have one)
DEFAULT_CACHE = PartCache()


class _CallCache:
    """One filter_splits call's view of a PartCache: each index file is checked (stat) and opened once per
    call, however many data files it covers; a failure to open it is raised again for each of them."""

    def __init__(self, cache: PartCache) -> None:
        self._cache = cache
        self._opened: dict[tuple[str, int, str, str, str], PartReader | IndexFileCorrupt] = {}

    def open(
        self, location: str, expected_size: int, *, kind: str, column: str, ctype: ColumnType,
        options: StorageOptions | None = None,
    ) -> PartReader:
        key = (location, expected_size, kind, column, ctype.hive)
        hit = self._opened.get(key)
        if hit is None:
            try:
                hit = self._cache.open(location, expected_size, kind=kind, column=column, ctype=ctype,
                                       options=options)
            except IndexFileCorrupt as exc:
                hit = exc
            self._opened[key] = hit
        if isinstance(hit, IndexFileCorrupt):
            raise hit
        return hit


@functools.lru_cache(maxsize=1 << 16)
def normal_path(path: str) -> str:
    """A data file location as index records keep it (qualified: `/x` and `file:///x` are `file:/x`, `s3a://`
    is `s3://`). Kept per path (a pure function of the text), since every split filter asks for each split's."""
    try:
        return qualified_path(path)
    except MetastoreError:
        return path


def local_identity(path: str) -> DataFile | None:
    """A file's identity now (None when it cannot be looked up), under its qualified location: a stat of a
    local file, a metadata request on an object store (with the environment's credentials)."""
    local = local_path(path)
    try:
        if local is None:
            return data_file(path)
        st = os.stat(local)
    except Exception:  # noqa: BLE001 - unknown identity: the filter keeps the file's splits
        return None
    return DataFile(normal_path(path), st.st_size, st.st_mtime_ns)


def table_columns(table: Table) -> dict[str, ColumnType]:
    """The types of a table's data and partition columns that predicates can compare (others left out)."""
    out: dict[str, ColumnType] = {}
    for col in [*table.sd.cols, *table.partition_keys]:
        try:
            out[col.name.lower()] = column_type(col.type, col.name)
        except UnsupportedColumn:
            continue
    return out


class _Warnings:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.seen: set[str] = set()
        self.dropped = 0

    def add(self, line: str) -> None:
        if line in self.seen:
            return
        self.seen.add(line)
        if len(self.lines) < MAX_WARNINGS:
            self.lines.append(line)
        else:
            self.dropped += 1

    def result(self) -> tuple[str, ...]:
        if self.dropped:
            return (*self.lines, f"... and {self.dropped} more warnings")
        return tuple(self.lines)


@dataclass
class _Known:
    """An index that covers a file as it is now: the part, and the file's stripe ids in it."""

    position: int  # of the index in the usable list
    record: IndexRecord
    part: PartReader
    part_key: str
    stripe_ids: range


def _evaluate(node: Bound, answers: Callable[[KeyRange | KeySet | NullTest], np.ndarray], n: int) -> np.ndarray:
    if isinstance(node, Truth):
        return np.full(n, node.value, dtype=bool)
    if isinstance(node, AllOf | AnyOf):
        masks = [_evaluate(a, answers, n) for a in node.args]
        return np.logical_and.reduce(masks) if isinstance(node, AllOf) else np.logical_or.reduce(masks)
    assert isinstance(node, KeyRange | KeySet | NullTest)
    return answers(node)


def filter_splits(
    table: Table | Mapping[str, ColumnType],
    predicate: Expr | str,
    splits: Sequence[Split],
    indexes: Sequence[IndexRecord],
    *,
    identity: Callable[[str], DataFile | None] = local_identity,
    cache: PartCache | None = None,
    options: StorageOptions | None = None,
) -> FilterResult:
    """The splits that may hold rows matching ``predicate`` (a tree or its serialized JSON form), judged by
    the table's ``indexes``; see the module docstring for the rules. PredicateError for a malformed predicate
    or one naming an unknown column or a literal of the wrong type."""
    columns = table_columns(table) if isinstance(table, Table) else dict(table)
    expr = from_json(predicate) if isinstance(predicate, str) else predicate
    bound = bind(expr, columns)
    opened = _CallCache(cache or DEFAULT_CACHE)
    warnings = _Warnings()
    wanted = {leaf.column for leaf in leaves(bound)}
    usable: list[IndexRecord] = []
    ctypes: list[ColumnType] = []  # the recorded type of each usable index, parsed once a call
    for record in indexes:
        if record.column not in wanted:
            continue
        if record.state is not IndexState.READY:
            warnings.add(f"index {record.name} is being built; it is not used")
            continue
        if not record.table_exists:
            continue
        current = columns.get(record.column)
        try:
            ctype = column_type(record.column_type, record.column)
            recorded = ctype.hive
        except Exception as exc:  # noqa: BLE001 - an unreadable record keeps the splits, never fails the call
            warnings.add(f"index {record.name} records the type {record.column_type!r} of {record.column}, which "
                         f"cannot be used ({exc}); it is not used")
            continue
        if current is None or current.hive != recorded:
            warnings.add(
                f"index {record.name} was built on {record.column} {record.column_type}, which the table no longer "
                "has; it is not used (UPDATE INDEX rebuilds it)"
            )
            continue
        usable.append(record)
        ctypes.append(ctype)
    counts = {i: [0, 0] for i in range(len(usable))}
    if isinstance(bound, Truth):
        kept = tuple(range(len(splits))) if bound.value else ()
        return FilterResult(kept, _counts(usable, counts), warnings.result())

    by_file: dict[str, list[int]] = {}
    for i, split in enumerate(splits):
        by_file.setdefault(normal_path(split.path), []).append(i)
    file_maps = [record.files() for record in usable]
    kept_positions: list[int] = []
    stripe_info: dict[str, tuple[tuple[StripeSpan, ...], np.ndarray]] = {}
    part_answers: dict[tuple[int, str, Bound], np.ndarray | None] = {}

    for path, positions in by_file.items():
        try:
            kept_here, judged, stripes = _judge_file(
                path, positions, splits, bound, usable, ctypes, file_maps, identity, opened, warnings, part_answers,
                options,
            )
        except Exception as exc:  # noqa: BLE001 - whatever goes wrong with one file keeps its splits
            warnings.add(f"{path}: the indexes could not judge it ({type(exc).__name__}: {exc}); its splits are kept")
            kept_positions.extend(positions)
            continue
        kept_positions.extend(kept_here)
        for position, (considered, alone) in judged.items():
            counts[position][0] += considered
            counts[position][1] += alone
        if stripes is not None:
            stripe_info[path] = stripes
    return FilterResult(tuple(sorted(kept_positions)), _counts(usable, counts), warnings.result(), stripe_info)


def _judge_file(
    path: str, positions: list[int], splits: Sequence[Split], bound: Bound, usable: Sequence[IndexRecord],
    ctypes: Sequence[ColumnType], file_maps: Sequence[dict[str, tuple[IndexPart, DataFile]]],
    identity: Callable[[str], DataFile | None], cache: _CallCache, warnings: _Warnings, part_answers: dict[tuple[int, str, Bound], np.ndarray | None],
    options: StorageOptions | None,
) -> tuple[list[int], dict[int, tuple[int, int]], tuple[tuple[StripeSpan, ...], np.ndarray] | None]:
    """Judge the splits of one data file: the positions to keep, per index (considered, kept) and the file's
    stripes with those that may match (None when no index could judge the file)."""
    first = splits[positions[0]]
    if first.file_size is not None and first.file_mtime_ns is not None:
        now: DataFile | None = DataFile(path, first.file_size, first.file_mtime_ns)
    else:
        now = identity(path)
    known = _known_indexes(path, now, usable, ctypes, file_maps, cache, warnings, options)
    if not known:
        return list(positions), {}, None
    spans = tuple(known[0].part.coverage.stripes[s] for s in known[0].stripe_ids)
    n = len(spans)

    def answers(leaf: KeyRange | KeySet | NullTest, only: int | None = None, known: list[_Known] = known,
                n: int = n) -> np.ndarray:
        out = np.ones(n, dtype=bool)
        for k in known:
            if k.record.column != leaf.column or (only is not None and k.position != only):
                continue
            key = (k.position, k.part_key, leaf)
            if key not in part_answers:
                try:
                    part_answers[key] = k.part.answer(leaf)
                except IndexFileCorrupt as exc:
                    warnings.add(f"index {k.record.name}: {exc}; its splits are kept")
                    part_answers[key] = None
                except Exception as exc:  # noqa: BLE001 - any failure of an index file keeps the splits
                    warnings.add(f"index {k.record.name}: index file {k.part_key} cannot be used "
                                 f"({type(exc).__name__}: {exc}); its splits are kept")
                    part_answers[key] = None
            whole = part_answers[key]
            if whole is not None:
                out &= whole[k.stripe_ids.start : k.stripe_ids.stop]
        return out

    may = _evaluate(bound, answers, n)
    overlaps = [np.fromiter((s.overlaps(splits[p].start, splits[p].length) for s in spans), dtype=bool, count=n)
                for p in positions]
    kept = [p for p, overlap in zip(positions, overlaps, strict=True) if (overlap & may).any()]
    judged: dict[int, tuple[int, int]] = {}
    for k in known:

        def alone_answers(leaf: KeyRange | KeySet | NullTest, only: int = k.position) -> np.ndarray:
            return answers(leaf, only=only)

        alone = _evaluate(bound, alone_answers, n)
        judged[k.position] = (len(positions), sum(1 for overlap in overlaps if (overlap & alone).any()))
    return kept, judged, (spans, may)


def _known_indexes(
    path: str, now: DataFile | None, usable: Sequence[IndexRecord], ctypes: Sequence[ColumnType],
    file_maps: Sequence[dict[str, tuple[IndexPart, DataFile]]], cache: _CallCache, warnings: _Warnings,
    options: StorageOptions | None = None,
) -> list[_Known]:
    known: list[_Known] = []
    for position, (record, files) in enumerate(zip(usable, file_maps, strict=True)):
        entry = files.get(path)
        if entry is None:
            warnings.add(f"{path} is not covered by index {record.name} (added after its build); its splits are kept")
            continue
        part, recorded = entry
        if now is None:
            warnings.add(f"{path} cannot be looked up (size and modification time unknown); its splits are kept")
            continue
        if recorded.identity != now.identity:
            warnings.add(
                f"{path} changed since index {record.name} was built (size/mtime {recorded.size}/{recorded.mtime_ns} "
                f"then, {now.size}/{now.mtime_ns} now); its splits are kept"
            )
            continue
        try:
            reader = cache.open(part.location, part.size, kind=record.kind.value, column=record.column,
                                ctype=ctypes[position], options=options)
        except IndexFileCorrupt as exc:
            warnings.add(f"index {record.name}: {exc}; its splits are kept")
            continue
        except Exception as exc:  # noqa: BLE001 - any failure to open an index file keeps the splits
            warnings.add(f"index {record.name}: index file {part.location} cannot be opened "
                         f"({type(exc).__name__}: {exc}); its splits are kept")
            continue
        index = reader.coverage.find(path)
        if index is None or reader.coverage.files[index].identity != recorded.identity:
            warnings.add(f"index {record.name}: index file {part.location} does not cover {path} as recorded; "
                         "its splits are kept")
            continue
        k = _Known(position, record, reader, part.location, reader.coverage.stripes_of(index))
        if known:
            ref = known[0]
            mine = [(s.offset, s.length) for s in (reader.coverage.stripes[i] for i in k.stripe_ids)]
            theirs = [(s.offset, s.length) for s in (ref.part.coverage.stripes[i] for i in ref.stripe_ids)]
            if mine != theirs:
                warnings.add(f"index {record.name}: index file {part.location} disagrees with index "
                             f"{ref.record.name} about the stripes of {path}; it is not used for that file")
                continue
        known.append(k)
    return known


def _counts(usable: Sequence[IndexRecord], counts: Mapping[int, list[int]]) -> tuple[IndexCount, ...]:
    return tuple(
        IndexCount(r.name, r.kind.value, r.column, counts[i][0], counts[i][1]) for i, r in enumerate(usable)
    )
