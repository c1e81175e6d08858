"""B+tree leaves cut per data file and linked into one tree, for int64 columns whose files' key ranges do not
overlap (a column sorted across the files).

When every file's keys lie strictly between the keys of the files around it (sorted by smallest key; a key
equal at a boundary counts as overlap), a part's tree is written from per-file leaves: each file's keys are cut
into leaves as write_tree cuts a whole part's (from the file's first key, so its last leaf may be short, and
compressed in probe runs counted from its first leaf), the files' leaves follow each other in key order and the
inner nodes above them are built as write_tree builds them. The file format, the keys and each key's stripes
are those of write_tree's tree; only where leaves end differs. Files holding no key are left out of the
order; when two or more files hold keys, each must hold at least LINK_MIN_KEYS (key, stripe) pairs, else the
part is written as a whole (tiny files would leave many short leaves).

Cut so, a file's leaves need only its own keys and its first stripe id in the part. A pooled build's workers
therefore make them where the file is scanned (build._scan_packed: encoded, compressed and checksummed), and
the parent only writes them and the inner nodes: no table-wide merge, no leaf encoding or compression in the
parent. The parent gives each worker its file's first stripe id, from the files' footers read before the scan
(plan_file_leaves), which also tell from their min/max statistics whether the ranges look disjoint. What is
written depends only on the scanned keys: when the scanned ranges do overlap after all, the leaves a worker
made are decoded back into the file's keys (restored) and the part is written as a whole, and builds that scan
in one process (or on Spark) cut the same per-file leaves in the parent, so every path writes the same bytes.
"""

from __future__ import annotations

import bisect
import os
import tempfile
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import cramjam
import numpy as np

from metastore.index import btree
from metastore.index.columns import ColumnType, Domain, Family
from metastore.index.container import FORMAT_VERSION, BlockRef, IndexFileWriter
from metastore.index.coverage import FileValues
from metastore.index.model import DataFile
from metastore.locations import local_path
from metastore.storage import StorageOptions

#: (key, stripe) pairs a file must hold for its leaves to be linked, when two or more files hold keys
LINK_MIN_KEYS = btree.MAX_LEAF_KEYS
_CODEC_NONE = 0


@dataclass(frozen=True)
class FileLeaves:
    """One file's B+tree leaves as stored, stripe ids counted from ``base`` (the file's first stripe in its
    part): per leaf its stored length, raw length, CRC-32 and codec (``blocks``, int64 (n, 4)), its first key
    and its key count; the stored leaves one after the other in ``blob`` (or, on the way from a worker, in the
    file ``shared``). ``pairs``: the file's (key, stripe) pairs; ``low``/``high``: its smallest and largest key
    (0 when it has none)."""

    base: int
    pairs: int
    keys: int
    low: int
    high: int
    blocks: np.ndarray
    firsts: np.ndarray
    counts: np.ndarray
    blob: bytes
    shared: str | None = None

    def to_shared(self, directory: str, prefix: str) -> FileLeaves:
        """The leaves with their bytes in a new file in ``directory`` (a tmpfs) instead of the pool's pipe;
        OSError when it cannot be written (then no file is left)."""
        fd, path = tempfile.mkstemp(dir=directory, prefix=prefix)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(self.blob)
        except BaseException:
            os.unlink(path)
            raise
        return replace(self, blob=b"", shared=path)

    def unshared(self) -> FileLeaves:
        """The leaves with their bytes read back from ``shared`` (and the file removed)."""
        if self.shared is None:
            return self
        try:
            with open(self.shared, "rb") as f:
                blob = f.read()
        finally:
            os.unlink(self.shared)
        if len(blob) != int(self.blocks[:, 0].sum()):
            raise ValueError(f"{self.shared} holds {len(blob)} bytes, not the file's leaves")
        return replace(self, blob=blob, shared=None)

    def discard(self) -> None:
        """Remove the shared file of leaves that will not be read (a build that failed meanwhile)."""
        if self.shared is not None:
            try:
                os.unlink(self.shared)
            except FileNotFoundError:
                pass


def file_leaves(values: FileValues, base: int, *, native: bool = True) -> FileLeaves:
    """A file's leaves, its stripe ids counted from ``base``: its postings cut and packed as write_tree cuts
    and packs a part's (the same leaf bounds, encoders and probe runs, counted from the file's first key)."""
    postings = _file_postings(restored(values), base)
    ids = postings.ids
    # every id fits 16 bits: each leaf writes u16 ids (what the per-leaf test would find); else ask per leaf
    ids16 = True if base + len(values.stripes) <= 0x10000 else None
    bounds = btree._leaf_bounds(Domain.INT64, postings)
    encode = btree._leaf_encoder(postings, FORMAT_VERSION, ids16, native)
    pairs = list(zip(bounds[:-1], bounds[1:], strict=True))
    packed = []
    for g in range(0, len(pairs), btree.COMPRESS_PROBE_EVERY):
        packed.extend(btree._pack_leaves(encode, pairs[g : g + btree.COMPRESS_PROBE_EVERY]))
    blocks = np.asarray([(len(p[0]), p[1], p[2], p[3]) for p in packed], dtype=np.int64).reshape(-1, 4)
    keys = postings.keys
    starts = np.asarray(bounds[:-1], dtype=np.int64)
    n = len(keys)
    return FileLeaves(base, int(len(ids)), n, int(keys[0]) if n else 0, int(keys[-1]) if n else 0, blocks,
                      np.asarray(keys[starts], dtype=np.int64), np.diff(np.asarray(bounds, dtype=np.int64)),
                      b"".join(p[0] for p in packed))


def _file_postings(values: FileValues, base: int) -> btree.Postings:
    """postings_of([values]) with every stripe id plus ``base``. Stripes whose keys follow each other (a
    sorted column's: each non-empty stripe's first key above the last key of the one before, as
    FileValues.merge_stripes leaves them) are the postings as they are: their keys side by side, each once,
    and each key's stripe (no merge)."""
    parts = [s.distinct for s in values.stripes if len(s.distinct)]
    if (values.merged is None and all(p.dtype == np.int64 for p in parts)
            and all(int(b[0]) > int(a[-1]) for a, b in zip(parts[:-1], parts[1:], strict=True))):
        counts = [len(s.distinct) for s in values.stripes]
        keys = np.concatenate(parts) if len(parts) > 1 else (parts[0] if parts else np.zeros(0, dtype=np.int64))
        ids = np.repeat(np.arange(base, base + len(counts), dtype=np.uint32), counts)
        return btree.Postings(Domain.INT64, keys, None, ids)
    local = btree.postings_of([values], Domain.INT64)
    ids = np.add(local.ids, np.uint32(base), dtype=np.uint32, casting="unsafe")
    return btree.Postings(Domain.INT64, local.keys, local._offsets, ids)


def with_leaves(values: FileValues, base: int) -> FileValues:
    """The values to send from a worker: the file's stripes without their keys, its per-stripe key counts and
    its leaves (file_leaves)."""
    counts = tuple(values.distinct_counts())
    stripes = [replace(s, distinct=s.distinct[:0]) for s in values.stripes]
    return FileValues(values.file, stripes, None, counts, leaves=file_leaves(values, base))


def restored(values: FileValues) -> FileValues:
    """Values that came as leaves (with_leaves) as the file's merged run again (FileValues.merged: keys by key,
    then stripe; stripe numbers in the file); other values as they are."""
    leaves = values.leaves
    if leaves is None:
        return values
    counts = tuple(values.distinct_counts())
    if leaves.pairs == 0:
        return FileValues(values.file, values.stripes, None, counts)
    keys: list[np.ndarray] = []
    ids: list[np.ndarray] = []
    at = 0
    for length, raw_length, _, codec in leaves.blocks.tolist():
        stored = leaves.blob[at : at + length]
        at += length
        raw = stored if codec == _CODEC_NONE else bytes(cramjam.zstd.decompress(stored, output_len=raw_length))
        k, offsets, i = btree._decode_leaf(Domain.INT64, raw, values.file.path, FORMAT_VERSION)
        keys.append(np.repeat(k, np.diff(offsets)))
        ids.append(i)
    id_type = np.uint16 if len(values.stripes) <= 0x10000 else np.uint32
    local = (np.concatenate(ids) - np.uint32(leaves.base)).astype(id_type)
    return FileValues(values.file, values.stripes, (np.concatenate(keys), local), counts)


def _key_span(values: FileValues) -> tuple[int, int, int] | None:
    """A file's (key, stripe) pairs and its smallest and largest key; None when its keys are not int64."""
    if values.leaves is not None:
        return values.leaves.pairs, values.leaves.low, values.leaves.high
    if values.gaps is not None or values.shared is not None:
        return None  # still packed for the trip from a worker (not expected here)
    if values.merged is not None:
        keys = values.merged[0]
        if keys.dtype != np.int64:
            return None
        return (len(keys), int(keys[0]), int(keys[-1])) if len(keys) else (0, 0, 0)
    parts = [s.distinct for s in values.stripes if len(s.distinct)]
    if any(p.dtype != np.int64 for p in parts):
        return None
    if not parts:
        return 0, 0, 0
    return sum(len(p) for p in parts), min(int(p[0]) for p in parts), max(int(p[-1]) for p in parts)


def link_order(files: Sequence[FileValues], version: int) -> list[int] | None:
    """The files holding keys in key order when their leaves are to be linked (their key ranges disjoint, each
    holding LINK_MIN_KEYS pairs when two or more hold keys, leaves of this format version); else None."""
    if version != FORMAT_VERSION:
        return None
    spans: list[tuple[int, int, int]] = []
    small = False
    for i, f in enumerate(files):
        span = _key_span(f)
        if span is None:
            return None
        pairs, low, high = span
        if pairs:
            small = small or pairs < LINK_MIN_KEYS
            spans.append((low, high, i))
    if len(spans) > 1 and small:
        return None
    spans.sort()
    if any(a[1] >= b[0] for a, b in zip(spans[:-1], spans[1:], strict=True)):
        return None
    return [i for _, _, i in spans]


def write_btree(writer: IndexFileWriter, files: Sequence[FileValues], domain: Domain) -> dict[str, Any]:
    """The tree of a part's files (write_tree's description entries): linked per-file leaves where link_order
    allows, else write_tree over the files' postings (leaves made by workers decoded back first)."""
    order = link_order(files, writer.version) if domain is Domain.INT64 else None
    if order is None:
        whole = [restored(f) for f in files]
        if domain is Domain.INT64:
            from metastore.index.ranged import write_ranged

            entries = write_ranged(writer, whole)
            if entries is not None:
                return entries
        return btree.write_tree(writer, btree.postings_of(whole, domain))
    bases = np.cumsum([0, *(len(f.stripes) for f in files)]).tolist()

    def made(i: int) -> FileLeaves | None:
        """The leaves a worker made for file i, when they count its stripes from its first stripe id here."""
        leaves = files[i].leaves
        return leaves if leaves is not None and leaves.base == bases[i] else None

    def leaves_of(i: int) -> FileLeaves:
        return made(i) or file_leaves(restored(files[i]), bases[i])

    tables: list[np.ndarray] = []  # per file: per leaf its offset in the file, then its blocks' columns
    firsts: list[np.ndarray] = []
    counts: list[np.ndarray] = []

    def add(leaves: FileLeaves) -> None:
        start = writer.add_stored(leaves.blob)
        lengths = leaves.blocks[:, 0]
        offsets = start + np.cumsum(lengths) - lengths
        tables.append(np.column_stack([offsets, leaves.blocks]))
        firsts.append(leaves.firsts)
        counts.append(leaves.counts)

    missing = sum(1 for i in order if made(i) is None)
    if missing < 2:
        for i in order:
            add(leaves_of(i))
    else:
        # files scanned here (or reused, or from Spark): their leaves cut in threads, written in key order
        with ThreadPoolExecutor(btree.PACK_THREADS, thread_name_prefix="btree-file-leaves") as pool:
            pending: deque[Future[FileLeaves]] = deque()
            for i in order:
                pending.append(pool.submit(leaves_of, i))
                if len(pending) > btree.PACK_AHEAD:
                    add(pending.popleft().result())
            while pending:
                add(pending.popleft().result())
    table = np.concatenate(tables) if tables else np.zeros((0, 5), dtype=np.int64)
    first = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    count = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
    return link_leaves(writer, table, first, count)


def link_leaves(writer: IndexFileWriter, table: np.ndarray, first: np.ndarray, count: np.ndarray) -> dict[str, Any]:
    """The inner nodes above int64 leaves written already, in key order (``table``: per leaf its offset, stored
    length, raw length, CRC and codec; ``first``: its first key; ``count``: its keys), as write_tree builds
    them; write_tree's description entries."""
    keys = int(count.sum())
    if len(table) < 2:  # no leaf, or one leaf that is the root
        level = []
        if len(table):
            offset, length, raw_length, crc, codec = table[0].tolist()
            level.append(btree.Child(int(first[0]), BlockRef(offset, length, crc, raw_length, codec), int(count[0])))
        return btree.write_upper_levels(writer, Domain.INT64, level, keys)
    return btree.write_upper_levels(writer, Domain.INT64, _leaf_parents(writer, table, first, count), keys, height=2)


#: a child reference in an inner node as btree._CHILD packs it (offset, length, crc, raw length, codec, keys)
_CHILD_DTYPE = np.dtype([("offset", "<u8"), ("length", "<u4"), ("crc", "<u4"), ("raw", "<u4"), ("codec", "u1"),
                         ("keys", "<u8")])


def _leaf_parents(writer: IndexFileWriter, table: np.ndarray, first: np.ndarray, count: np.ndarray,
                  ) -> list[btree.Child]:
    """The inner nodes right above the leaves (``table``: per leaf offset, stored length, raw length, CRC,
    codec), FANOUT leaves each, as btree._encode_inner encodes them (the same bytes), made from the leaves'
    columns at once instead of a Child per leaf; returns them as the next level's children."""
    assert _CHILD_DTYPE.itemsize == btree._CHILD.size
    children = np.empty(len(table), dtype=_CHILD_DTYPE)
    children["offset"] = table[:, 0]
    children["length"] = table[:, 1]
    children["raw"] = table[:, 2]
    children["crc"] = table[:, 3]
    children["codec"] = table[:, 4]
    children["keys"] = count
    keys_le = first.astype("<i8")
    out = []
    for a in range(0, len(table), btree.FANOUT):
        b = min(a + btree.FANOUT, len(table))
        node = b"".join((btree._INNER_HEAD.pack(b - a, 1), keys_le[a:b].tobytes(), children[a:b].tobytes()))
        out.append(btree.Child(int(first[a]), writer.add_block(node), int(count[a:b].sum())))
    return out


def plan_file_leaves(
    parts: Sequence[Sequence[DataFile]], column: str, ctype: ColumnType, position: int | None,
    options: StorageOptions | None = None, *, opener: Callable[..., Any] | None = None,
) -> dict[tuple[str, int, int], tuple[int, int]]:
    """For the files of parts whose footers say their key ranges do not overlap (integer columns; the file
    statistics' min and max, checked as the footers are read, so an overlap stops the part's reading early):
    per file identity, its first stripe id in its part and its stripe count (what a worker passes to
    file_leaves, after checking its scan found as many stripes). Parts whose files lack statistics, or hold
    fewer values than linking needs, are left out; so are files in several parts and parts with files that
    are not local."""
    if ctype.family is not Family.INTEGER or ctype.domain is not Domain.INT64:
        return {}
    from metastore.index.scan import open_data_file, resolve_field
    from metastore.orcio import IntegerStatistics, OrcError

    out: dict[tuple[str, int, int], tuple[int, int]] = {}
    seen: set[tuple[str, int, int]] = set()
    repeated: set[tuple[str, int, int]] = set()
    for files in parts:
        for f in files:
            (repeated if f.identity in seen else seen).add(f.identity)
    for files in parts:
        if any(f.identity in repeated or local_path(f.path) is None for f in files):
            continue  # files on object stores: a footer read each, one after the other, would cost more than it saves
        planned: dict[tuple[str, int, int], tuple[int, int]] = {}
        lows: list[int] = []
        highs: list[int] = []
        base = 0
        holding = 0
        small = False
        try:
            for f in files:
                with (opener or open_data_file)(f, options) as reader:
                    stripes = len(reader.stripes)
                    schema = reader.schema
                    field = resolve_field(list(schema.field_names), column, position)
                    if field is not None:
                        stats = reader.file_statistics[schema.children[field].id]
                        if not isinstance(stats, IntegerStatistics) or not stats.values_counted:
                            raise LookupError("no integer statistics")
                        if stats.number_of_values:
                            if stats.minimum is None or stats.maximum is None:
                                raise LookupError("no min/max")
                            at = bisect.bisect_left(lows, stats.minimum)
                            if (at > 0 and highs[at - 1] >= stats.minimum) or (
                                    at < len(lows) and lows[at] <= stats.maximum):
                                raise LookupError("overlap")
                            lows.insert(at, stats.minimum)
                            highs.insert(at, stats.maximum)
                            holding += 1
                            small = small or stats.number_of_values < LINK_MIN_KEYS
                            if holding > 1 and small:
                                raise LookupError("files too small to link")
                planned[f.identity] = (base, stripes)
                base += stripes
        except (LookupError, OrcError, OSError, ValueError, IndexError, KeyError):
            continue  # not linkable as far as the footers tell, or unreadable (the scan reports that)
        out.update(planned)
    return out


def planner(
    parts: Sequence[Sequence[DataFile]], column: str, ctype: ColumnType, position: int | None,
    options: StorageOptions | None = None,
) -> Callable[[], Mapping[tuple[str, int, int], tuple[int, int]]]:
    """plan_file_leaves deferred until a pooled scan asks for it (a scan in one process does not need it)."""
    return lambda: plan_file_leaves(parts, column, ctype, position, options)
