"""Index files ("parts"): one per data file (STRIPE level), partition or table, each of one kind.

``write_part`` builds a part from scanned stripe values; ``PartReader`` opens one and answers bound predicate
leaves per stripe; ``PartReader.reuse`` gives back the stripe values of files that did not change, so UPDATE
INDEX rewrites a part without scanning them again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from metastore import storage
from metastore.index.bind import Leaf
from metastore.index.bloom import PROBES, BloomReader, write_filters
from metastore.index.btree import BTreeReader, write_stripe_sets
from metastore.index.columns import ColumnType, Domain
from metastore.index.container import IndexFileReader, IndexFileWriter, StagedFile
from metastore.index.coverage import Coverage, FileValues, StripeValues
from metastore.index.errors import IndexFileCorrupt
from metastore.index.linked import write_btree
from metastore.index.minmax import MinMaxReader, write_bounds
from metastore.index.model import DataFile
from metastore.locations import local_path
from metastore.storage import StorageOptions

BTREE = "btree"
BLOOM = "bloom"
MINMAX = "minmax"
KINDS = (BTREE, BLOOM, MINMAX)


def write_part(
    path: str | os.PathLike[str], *, kind: str, column: str, ctype: ColumnType, files: Sequence[FileValues],
    fpp: float,
) -> int:
    """Write one index file covering ``files``; returns its size in bytes."""
    with IndexFileWriter(path) as writer:
        return writer.finish(_part_description(writer, kind=kind, column=column, ctype=ctype, files=files, fpp=fpp))


def stage_part(
    path: str | os.PathLike[str], *, kind: str, column: str, ctype: ColumnType, files: Sequence[FileValues],
    fpp: float,
) -> StagedFile:
    """write_part's file, the same bytes, staged beside ``path`` (IndexFileWriter.stage): in place once
    published."""
    with IndexFileWriter(path) as writer:
        return writer.stage(_part_description(writer, kind=kind, column=column, ctype=ctype, files=files, fpp=fpp))


def _part_description(
    writer: IndexFileWriter, *, kind: str, column: str, ctype: ColumnType, files: Sequence[FileValues], fpp: float,
) -> dict[str, Any]:
    """Write the blocks of an index file covering ``files``; its description."""
    if kind not in KINDS:
        raise ValueError(f"unknown index kind {kind!r}")
    domain = ctype.domain
    description: dict[str, Any] = {"kind": kind, "column": column, "type": ctype.hive, "domain": domain.value}
    description.update(Coverage.of(files).write(writer))
    if kind == BTREE:
        description.update(write_btree(writer, files, domain))
        description.update(write_stripe_sets(writer, files))
    elif kind == BLOOM:
        description.update(write_filters(writer, domain, files, fpp))
    else:
        description.update(write_bounds(writer, domain, files))
    return description


class PartReader:
    """One index file, opened and checked against what the index record says it is."""

    def __init__(self, source: str | IndexFileReader, *, kind: str, column: str, ctype: ColumnType) -> None:
        self.file = IndexFileReader.open_path(source) if isinstance(source, str) else source
        self.path = path = self.file.path
        d = self.file.description
        if d.get("kind") != kind or d.get("column") != column or d.get("type") != ctype.hive:
            raise IndexFileCorrupt(
                path, f"holds a {d.get('kind')!r} index of {d.get('column')!r} ({d.get('type')!r}), expected "
                f"{kind} of {column!r} ({ctype.hive})"
            )
        if d.get("domain") != ctype.domain.value:
            raise IndexFileCorrupt(path, "its key domain does not match the column type")
        self.kind = kind
        self.ctype = ctype
        self.coverage = Coverage.read(self.file)
        stripes = len(self.coverage.stripes)
        self._btree: BTreeReader | None = None
        self._bloom: BloomReader | None = None
        self._minmax: MinMaxReader | None = None
        if kind == BTREE:
            self._btree = BTreeReader(self.file, ctype.domain)
        elif kind == BLOOM:
            self._bloom = BloomReader(self.file, ctype.domain, stripes)
        else:
            self._minmax = MinMaxReader(self.file, ctype.domain, stripes)

    @property
    def bytes_read(self) -> int:
        """Bytes read from the index file so far."""
        return self.file.bytes_read

    def answer(self, leaf: Leaf) -> np.ndarray | None:
        """Per stripe of the part, whether it may satisfy ``leaf``; None when this index cannot tell."""
        n = len(self.coverage.stripes)
        if self._btree is not None:
            ids = self._btree.answer(leaf)
            if ids is None:
                return None
            if len(ids) and int(ids.max()) >= n:
                raise IndexFileCorrupt(self.path, f"stripe id {int(ids.max())} is beyond the {n} stripes")
            out = np.zeros(n, dtype=bool)
            out[ids] = True
            return out
        if self._bloom is not None:
            return self._bloom.answer(leaf)
        assert self._minmax is not None
        return self._minmax.answer(leaf)

    def verify(self) -> None:
        """Read and check every block (a full check for SHOW INDEX); IndexFileCorrupt naming the file."""
        self.file.verify()
        if self._btree is not None:
            self._btree.verify()

    def reuse(self, keep: set[tuple[str, int, int]]) -> list[FileValues]:
        """The stripe values of the covered files whose identity (path, size, mtime) is in ``keep``, as the
        kind of this part can rebuild them."""
        coverage = self.coverage
        wanted = [i for i, f in enumerate(coverage.files) if f.identity in keep]
        if not wanted or (self._bloom is not None and self._bloom.probes != PROBES):
            return []  # nothing kept, or filters of an older probe scheme: the files are scanned again
        per_stripe = self._stripe_values()
        out = []
        for i in wanted:
            stripes = [per_stripe[s] for s in coverage.stripes_of(i)]
            out.append(FileValues(coverage.files[i], stripes))
        return out

    def _stripe_values(self) -> list[StripeValues]:
        spans = self.coverage.stripes
        domain = self.ctype.domain
        empty = np.zeros(0, dtype=np.int64 if domain is Domain.INT64 else object)
        if self._btree is not None:
            postings = self._btree.postings()
            counts = np.diff(postings.offsets)
            keys = np.repeat(postings.keys, counts)
            order = np.argsort(postings.ids, kind="stable")
            ids = postings.ids[order]
            keys = keys[order]
            bounds = np.searchsorted(ids, np.arange(len(spans) + 1))
            nulls = set(self._btree.null_stripes().tolist())
            return [
                StripeValues(s.offset, s.length, s.rows, keys[bounds[i] : bounds[i + 1]], int(i in nulls))
                for i, s in enumerate(spans)
            ]
        if self._bloom is not None:
            return [
                StripeValues(s.offset, s.length, s.rows, empty, 0, bloom=self._bloom.filters[i])
                for i, s in enumerate(spans)
            ]
        assert self._minmax is not None
        mm = self._minmax
        out = []
        for i, s in enumerate(spans):
            values = int(mm.values[i])
            distinct = empty
            if values:
                distinct = np.empty(2 if mm.low[i] != mm.high[i] else 1, dtype=empty.dtype)
                distinct[:] = [mm.low[i], mm.high[i]][: len(distinct)]
            out.append(StripeValues(s.offset, s.length, s.rows, distinct, int(mm.nulls[i]), values=values))
        return out


def open_index_file(location: str, expected_size: int | None, options: StorageOptions | None = None) -> IndexFileReader:
    """An index file (local or on an object store) opened for ranged reads; IndexFileCorrupt naming it when it
    is missing, unreachable or not of the recorded size."""
    path = local_path(location)
    if path is not None:
        try:
            size = os.stat(path).st_size
        except OSError as exc:
            raise IndexFileCorrupt(location, f"cannot be opened: {exc.strerror or exc}") from None
        if expected_size is not None and size != expected_size:
            raise IndexFileCorrupt(location, f"is {size} bytes, the index record says {expected_size}")
        return IndexFileReader(str(path), size)
    try:
        ref = storage.stat(location, options)
    except Exception as exc:  # noqa: BLE001 - StorageError and the stores' own errors: the file is unusable
        raise IndexFileCorrupt(location, f"cannot be opened: {exc}") from None
    if expected_size is not None and ref.size != expected_size:
        raise IndexFileCorrupt(location, f"is {ref.size} bytes, the index record says {expected_size}")

    def fetch(offset: int, length: int) -> bytes:
        # one ranged request per block: a B+tree lookup reads only the blocks on its path
        with storage.open_file(ref, options) as f:
            f.seek(offset)
            return f.read(length)

    return IndexFileReader(location, ref.size, fetch)


def open_part(
    location: str, expected_size: int | None, *, kind: str, column: str, ctype: ColumnType,
    options: StorageOptions | None = None,
) -> PartReader:
    """The reader of a part file (local or remote), checked against its record."""
    return PartReader(open_index_file(location, expected_size, options), kind=kind, column=column, ctype=ctype)


def write_part_at(
    location: str, *, kind: str, column: str, ctype: ColumnType, files: Sequence[FileValues], fpp: float,
    options: StorageOptions | None = None,
) -> int:
    """Write a part file at a location (local: written beside it and renamed into place; on an object store:
    written locally, then uploaded whole); returns its size."""
    path = local_path(location)
    if path is not None:
        return write_part(path, kind=kind, column=column, ctype=ctype, files=files, fpp=fpp)
    temporary = storage.temporary_file(location)
    try:
        size = write_part(temporary, kind=kind, column=column, ctype=ctype, files=files, fpp=fpp)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    storage.publish(temporary, location, options)
    return size


def stage_part_at(
    location: str, *, kind: str, column: str, ctype: ColumnType, files: Sequence[FileValues], fpp: float,
    options: StorageOptions | None = None,
) -> StagedFile:
    """write_part_at, staged where it can be: a local part is written beside its location and published later
    (StagedFile.publish: synced, then renamed into place); a part on an object store is uploaded whole now (its
    StagedFile has nothing left to do)."""
    path = local_path(location)
    if path is not None:
        return stage_part(path, kind=kind, column=column, ctype=ctype, files=files, fpp=fpp)
    size = write_part_at(location, kind=kind, column=column, ctype=ctype, files=files, fpp=fpp, options=options)
    return StagedFile(None, location, size)


def covered_files(path: str) -> tuple[DataFile, ...]:
    """The data files an index file covers (reads only its description and stripe table)."""
    return Coverage.read(IndexFileReader.open_path(path)).files
