"""What an index file covers: data files (path, size, modification time) and their stripes, and the per-stripe
values a scan of the indexed column found (the input every index kind is built from).

Stripe ids are positions in the part's stripe table: the stripes of the first file, then those of the second,
and so on. Index files store the table as one binary block and the file list in their description.
"""

from __future__ import annotations

import mmap
import os
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from metastore.index import kernels
from metastore.index.columns import Domain
from metastore.index.container import BlockRef, IndexFileReader, IndexFileWriter
from metastore.index.errors import IndexFileCorrupt
from metastore.index.model import DataFile

if TYPE_CHECKING:
    from metastore.index.bloom import StripeBloom
    from metastore.index.container import StagedFile
    from metastore.index.linked import FileLeaves


@dataclass(frozen=True)
class StripeSpan:
    """Where a stripe is in its file (bytes offset..offset+length) and how many rows it holds."""

    file: int  # index into the part's file list
    offset: int
    length: int
    rows: int

    def overlaps(self, start: int, length: int) -> bool:
        """Whether the byte range start..start+length overlaps the stripe."""
        return start < self.offset + self.length and self.offset < start + length


@dataclass
class StripeValues:
    """One stripe's column values as a scan saw them: sorted distinct non-null keys, the null count and the
    number of non-null values. When an index file is rewritten, stripes of unchanged files come back from the
    old file: ``distinct`` may then hold only the minimum and maximum (MINMAX), and ``bloom`` the old filter."""

    offset: int
    length: int
    rows: int
    distinct: np.ndarray
    nulls: int
    values: int | None = None
    bloom: StripeBloom | None = None


@dataclass
class FileValues:
    """Every stripe of one data file. ``merged`` (a BTREE build's worker sends it instead of the stripes'
    ``distinct``, which are then empty): every (key, stripe) pair of the file as int64 keys and stripe numbers
    in the file, ordered by key, then stripe; ``merged_counts``: how many of them each stripe has (what
    distinct_counts would count from the stripe numbers). ``gaps`` (only between a pooled worker and the
    parent, see packed): the stripes' int64 keys, one stripe after the other, as the first key and the
    differences between neighbours in the narrowest unsigned type that holds them, the stripes' ``distinct``
    empty and their counts in ``merged_counts``. ``shared`` (the same trip, see to_shared): ``merged`` written
    to a file in shared memory instead, as its path, key count and id type. ``leaves`` (a pooled BTREE worker
    of a sorted column, linked.py): the file's finished B+tree leaves instead of its keys, the stripes'
    ``distinct`` empty and their counts in ``merged_counts``. ``written``: the part file of this file alone,
    written (staged, not yet published) where the file was scanned (build.py), the stripes' values then
    empty."""

    file: DataFile
    stripes: list[StripeValues]
    merged: tuple[np.ndarray, np.ndarray] | None = None
    merged_counts: tuple[int, ...] | None = None
    gaps: tuple[int, np.ndarray] | None = None
    shared: tuple[str, int, str] | None = None
    leaves: FileLeaves | None = None
    written: StagedFile | None = None

    def distinct_counts(self) -> list[int]:
        """Per stripe, how many distinct non-null keys it holds."""
        if self.merged_counts is not None:
            return list(self.merged_counts)
        if self.merged is None:
            return [len(s.distinct) for s in self.stripes]
        return np.bincount(self.merged[1], minlength=len(self.stripes)).tolist()

    def packed(self) -> FileValues:
        """The values to send to another process: when the stripes hold int64 keys whose neighbours (across
        stripes too) differ by less than 2**32 modulo 2**64 (a sorted column's: ts in steps of 10 takes one
        byte a key instead of eight), those differences (``gaps``); else the values as they are. ``unpacked``
        gives back the same keys in the same stripes."""
        if self.merged is not None or self.gaps is not None:
            return self
        parts = [s.distinct for s in self.stripes if len(s.distinct)]
        if not parts or any(p.dtype != np.int64 for p in parts):
            return self
        n = sum(len(p) for p in parts)
        if n < 2:
            return self
        # the differences sum (modulo 2**64) to the last key less the first: when every one fits 32 bits their
        # true sum, below (n - 1) * (2**32 - 1); a larger span means one does not (a unique hash column's keys:
        # told without the 4 MB concatenation and difference pass that cost its pooled scan 6 ms a file)
        span = (int(parts[-1][-1]) - int(parts[0][0])) & 0xFFFFFFFFFFFFFFFF
        if span > (n - 1) * 0xFFFFFFFF:
            return self
        keys = np.concatenate(parts).view(np.uint64) if len(parts) > 1 else parts[0].view(np.uint64)
        differences = keys[1:] - keys[:-1]  # modulo 2**64: cumsum from the first key gives the keys back
        top = int(differences.max())
        for narrow in (np.uint8, np.uint16, np.uint32):
            if top <= np.iinfo(narrow).max:
                break
        else:
            return self
        stripes = [StripeValues(s.offset, s.length, s.rows, s.distinct[:0], s.nulls, s.values, s.bloom)
                   for s in self.stripes]
        counts = tuple(len(s.distinct) for s in self.stripes)
        return FileValues(self.file, stripes, None, counts, (int(keys[0]), differences.astype(narrow)))

    def to_shared(self, directory: str, prefix: str) -> FileValues:
        """The values to send to another process with the merged run in a new file in ``directory`` (a tmpfs:
        /dev/shm) named ``prefix``..., which ``unpacked`` maps and removes: the run's bytes are written once
        instead of pickled, piped and unpickled (4-5 MB a file). Values without a merged run as they are;
        OSError (no room, say) when the file cannot be written, and then no file is left."""
        if self.merged is None:
            parts = [s.distinct for s in self.stripes if len(s.distinct)]
            if self.gaps is not None or not parts or any(p.dtype != np.int64 for p in parts):
                return self
            # the stripes' sorted keys one stripe after the other (id type ""), their counts in merged_counts
            counts = tuple(len(s.distinct) for s in self.stripes)
            stripes = [StripeValues(s.offset, s.length, s.rows, s.distinct[:0], s.nulls, s.values, s.bloom)
                       for s in self.stripes]
            path = _write_shared(directory, prefix, parts)
            return FileValues(self.file, stripes, None, counts, None, (path, sum(counts), ""))
        keys, ids = self.merged
        path = _write_shared(directory, prefix, [np.ascontiguousarray(keys, dtype=np.int64), ids])
        counts = tuple(self.distinct_counts()) if self.merged_counts is None else self.merged_counts
        return FileValues(self.file, self.stripes, None, counts, None, (path, len(keys), ids.dtype.str))

    def discard(self) -> None:
        """Remove the shared file of values that will not be unpacked, or the part file staged for them (a build
        that failed meanwhile)."""
        if self.written is not None:
            self.written.discard()
        if self.leaves is not None:
            self.leaves.discard()
        if self.shared is not None:
            try:
                os.unlink(self.shared[0])
            except FileNotFoundError:
                pass

    def unpacked(self) -> FileValues:
        """The values ``packed`` or ``to_shared`` sent: every stripe's keys as int64 again (views of one array),
        or the merged run as read-only arrays over the shared file's pages (mapped, then the file removed), or
        leaves with their bytes read back from shared memory."""
        if self.leaves is not None and self.leaves.shared is not None:
            return FileValues(self.file, self.stripes, None, self.merged_counts, leaves=self.leaves.unshared())
        if self.shared is not None:
            path, n, id_type = self.shared
            try:
                with open(path, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
                    view = mmap.mmap(f.fileno(), size, flags=flags, prot=mmap.PROT_READ) if size else b""
            finally:
                os.unlink(path)
            if id_type == "":  # the stripes' keys one after the other
                counts = self.distinct_counts()
                if size != 8 * n or sum(counts) != n:
                    raise ValueError(f"{path} holds {size} bytes, not the stripes' {n} keys")
                keys = np.frombuffer(view, dtype=np.int64, count=n)
                ends = np.cumsum(counts).tolist()
                stripes = [StripeValues(s.offset, s.length, s.rows, keys[end - c : end], s.nulls, s.values, s.bloom)
                           for s, c, end in zip(self.stripes, counts, ends, strict=True)]
                return FileValues(self.file, stripes)
            ids_dtype = np.dtype(id_type)
            if size != n * (8 + ids_dtype.itemsize):
                raise ValueError(f"{path} holds {size} bytes, not {n} keys and ids")
            keys = np.frombuffer(view, dtype=np.int64, count=n)
            ids = np.frombuffer(view, dtype=ids_dtype, count=n, offset=8 * n)
            return FileValues(self.file, self.stripes, (keys, ids), self.merged_counts)
        if self.gaps is None:
            return self
        first, differences = self.gaps
        counts = self.distinct_counts()
        keys = np.empty(len(differences) + 1, dtype=np.uint64)
        keys[0] = first & 0xFFFFFFFFFFFFFFFF
        keys[1:] = differences
        np.cumsum(keys, out=keys)  # modulo 2**64; widened first: a cumsum that casts as it adds is 2x slower
        values = keys.view(np.int64)
        ends = np.cumsum(counts).tolist()
        stripes = [StripeValues(s.offset, s.length, s.rows, values[end - n : end], s.nulls, s.values, s.bloom)
                   for s, n, end in zip(self.stripes, counts, ends, strict=True)]
        return FileValues(self.file, stripes)

    def merge_stripes(self, *, native: bool = True) -> FileValues:
        """The same values with the stripes' int64 keys merged into ``merged`` (one sorted run of the file): by
        the compiled k-way merge when it is built (and ``native``), else numpy's stable sort (the same run).
        Stripes whose keys are in order already (each non-empty stripe's first key above the last key of the
        one before: a sorted column) are left as they are: their concatenation is the run, and the stripes'
        arrays say which stripe each key is in without an array of stripe numbers."""
        parts = [s.distinct for s in self.stripes if len(s.distinct)]
        if self.merged is not None or all(int(b[0]) > int(a[-1]) for a, b in zip(parts[:-1], parts[1:], strict=True)):
            return self
        counts = [len(s.distinct) for s in self.stripes]
        id_type = np.uint16 if len(self.stripes) <= 0x10000 else np.uint32
        stripes = [StripeValues(s.offset, s.length, s.rows, s.distinct[:0], s.nulls, s.values, s.bloom)
                   for s in self.stripes]
        compiled = kernels.native() if native else None
        if compiled is not None:
            total = sum(counts)
            merged_keys = np.empty(total, dtype=np.int64)
            merged_ids = np.empty(total, dtype=id_type)
            runs = [np.ascontiguousarray(r, dtype=np.int64) for r in parts]
            bases = [j for j, c in enumerate(counts) if c]  # each run's stripe id
            compiled.merge_runs(runs, [None] * len(runs), bases, merged_keys, merged_ids)
            return FileValues(self.file, stripes, (merged_keys, merged_ids), tuple(counts))
        keys = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        ids = np.repeat(np.arange(len(self.stripes), dtype=id_type), counts)
        order = np.argsort(keys, kind="stable")  # merges the stripes' sorted runs; equal keys stay in stripe order
        return FileValues(self.file, stripes, (keys[order], ids[order]), tuple(counts))


def _write_shared(directory: str, prefix: str, arrays: Sequence[np.ndarray]) -> str:
    """A new file in ``directory`` named ``prefix``... holding the arrays' bytes one after the other; OSError
    when it cannot be written (then no file is left)."""
    fd, path = tempfile.mkstemp(dir=directory, prefix=prefix)
    try:
        with os.fdopen(fd, "wb") as out:
            for array in arrays:
                out.write(np.ascontiguousarray(array).data.cast("B"))
    except BaseException:
        os.unlink(path)
        raise
    return path


@dataclass(frozen=True)
class Coverage:
    """The files and stripe table of one index file."""

    files: tuple[DataFile, ...]
    first_stripe: tuple[int, ...]  # per file, its first stripe id
    stripes: tuple[StripeSpan, ...]

    @classmethod
    def of(cls, files: Sequence[FileValues]) -> Coverage:
        """The coverage of scanned files, in the given order."""
        spans: list[StripeSpan] = []
        first: list[int] = []
        for i, f in enumerate(files):
            first.append(len(spans))
            spans.extend(StripeSpan(i, s.offset, s.length, s.rows) for s in f.stripes)
        return cls(tuple(f.file for f in files), tuple(first), tuple(spans))

    def stripes_of(self, file_index: int) -> range:
        """The stripe ids of one file."""
        start = self.first_stripe[file_index]
        end = self.first_stripe[file_index + 1] if file_index + 1 < len(self.files) else len(self.stripes)
        return range(start, end)

    def find(self, path: str) -> int | None:
        """The index of a file by path (None when not covered)."""
        return self._positions.get(path)

    @cached_property
    def _positions(self) -> dict[str, int]:
        # the first file of each path, made once per opened index (a split filter asks for every data file:
        # a scan of the files each time made a call quadratic in them)
        out: dict[str, int] = {}
        for i, f in enumerate(self.files):
            out.setdefault(f.path, i)
        return out

    # ------------------------------------------------------------------ storage

    _SPAN = struct.Struct("<QQQ")

    def write(self, writer: IndexFileWriter) -> dict[str, Any]:
        """Store the stripe table as a block; returns the description entries."""
        table = np.zeros((len(self.stripes), 3), dtype="<u8")
        for i, s in enumerate(self.stripes):
            table[i] = (s.offset, s.length, s.rows)
        ref = writer.add_block(table.tobytes())
        files = [[f.path, f.size, f.mtime_ns, self.first_stripe[i], len(self.stripes_of(i))]
                 for i, f in enumerate(self.files)]
        return {"files": files, "stripes_block": ref.to_list()}

    @classmethod
    def read(cls, reader: IndexFileReader) -> Coverage:
        """The coverage stored in an index file; IndexFileCorrupt when it is inconsistent."""
        path = reader.path
        files_obj = reader.description.get("files")
        if not isinstance(files_obj, list):
            raise IndexFileCorrupt(path, "the description has no file list")
        ref = BlockRef.from_list(reader.description.get("stripes_block"), path)
        raw = reader.block(ref, "the stripe table")
        if len(raw) % cls._SPAN.size:
            raise IndexFileCorrupt(path, "the stripe table has a partial entry")
        table = np.frombuffer(raw, dtype="<u8").reshape(-1, 3)
        files: list[DataFile] = []
        first: list[int] = []
        spans: list[StripeSpan] = []
        for i, item in enumerate(files_obj):
            if (
                not isinstance(item, list) or len(item) != 5 or not isinstance(item[0], str)
                or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in item[1:])
            ):
                raise IndexFileCorrupt(path, f"bad file entry {str(item)[:120]}")
            name, size, mtime, start, count = item
            if start != len(spans) or start + count > len(table):
                raise IndexFileCorrupt(path, f"file entry {i} does not match the stripe table")
            files.append(DataFile(name, size, mtime))
            first.append(start)
            for offset, length, rows in table[start : start + count].tolist():
                if offset + length > size:
                    raise IndexFileCorrupt(path, f"a stripe of {name} lies outside the file's {size} bytes")
                spans.append(StripeSpan(i, offset, length, rows))
        if len(spans) != len(table):
            raise IndexFileCorrupt(path, "the stripe table has entries no file claims")
        return cls(tuple(files), tuple(first), tuple(spans))


# ---------------------------------------------------------------------------------------------- key arrays


def encode_keys(domain: Domain, keys: np.ndarray) -> bytes:
    """Keys as bytes: little-endian int64s, or u32 offsets (n+1) followed by the concatenated bytes."""
    if domain is Domain.INT64:
        return np.asarray(keys, dtype="<i8").tobytes()
    items = keys.tolist()
    offsets = np.zeros(len(items) + 1, dtype="<u4")
    if items:
        np.cumsum([len(k) for k in items], out=offsets[1:])
    return offsets.tobytes() + b"".join(items)


def decode_keys(domain: Domain, data: bytes | memoryview, count: int, path: str) -> tuple[np.ndarray, int]:
    """``count`` keys from the start of ``data``; returns them and the number of bytes used."""
    if domain is Domain.INT64:
        need = 8 * count
        if len(data) < need:
            raise IndexFileCorrupt(path, "a key array is cut short")
        return np.frombuffer(data, dtype="<i8", count=count).astype(np.int64), need
    head = 4 * (count + 1)
    if len(data) < head:
        raise IndexFileCorrupt(path, "a key array is cut short")
    offsets = np.frombuffer(data, dtype="<u4", count=count + 1).astype(np.int64)
    if offsets[0] != 0 or (count and np.any(np.diff(offsets) < 0)) or head + int(offsets[-1]) > len(data):
        raise IndexFileCorrupt(path, "a key array has bad offsets")
    body = bytes(data[head : head + int(offsets[-1])])
    out = np.empty(count, dtype=object)
    bounds = offsets.tolist()
    out[:] = [body[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return out, head + int(offsets[-1])
