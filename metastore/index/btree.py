"""BTREE: an on-disk B+tree from each distinct value of a column to the stripes holding it.

Keys are the column's distinct non-null keys (columns.py), values the ids of the stripes holding them: ids
into the file's stripe table (coverage.py), the dictionary that keeps the long "path+start+end+mtime" strings
out of the tree. The tree is bulk-loaded bottom-up from sorted keys, so it is balanced and the same input gives
the same bytes.

Blocks (each with a CRC, container.py; zstd-compressed where that pays, see below):

- leaf (format version 2): ``u32 n, u8 flags`` (bit 0: every key has exactly one stripe; bit 1: stripe ids
  are u16), the keys, then either n stripe ids or n+1 u32 offsets into the id array. int64 keys are the first
  key (i64) and n-1 gaps to the next key, each ``u8 width`` bytes little-endian (the width of the leaf's
  largest gap): keys are sorted and distinct, so a gap is positive, and on a unique hash column 10 M keys'
  gaps take 6 bytes instead of 8 (a sorted column's gaps one byte). Bytes keys as in coverage.encode_keys.
  Version 1 files (still read) have plain i64 keys and u32 ids, and no width byte;
- inner node: ``u32 n, u8 level``, the first key of each child, then per child its block reference (offset
  u64, length u32, crc u32, raw length u32, codec u8) and the number of keys below it (u64).

Building int64 trees, the compiled kernels (kernels.py) merge the sorted runs of the files (``merge_runs``, in two
threads over two key ranges) and encode the leaves (``encode_int_leaf``); numpy's stable sort and _encode_leaf
are the reference they are tested against (same postings, same bytes) and run when the extension is not built.
Large parts of unique keys are merged and encoded by key range in worker processes instead (ranged.py: the same
bytes as write_tree).

Leaves are zstd-compressed only where it pays: the first leaf of every COMPRESS_PROBE_EVERY is compressed as a
probe, and the leaves up to the next probe are compressed only when that probe shrank by at least
COMPRESS_MIN_SAVING; else they are stored raw (codec 0 in their reference: no format change, and trees written
with every leaf compressed read the same). A unique hash column's leaves (random 64-bit gaps) shrink by 11 % at
zstd level 3 for 0.6 s of CPU per 400 MB; a sorted column's by 99.5 %. The decision depends on the leaves'
bytes only, so the same input still gives the same file.

A point lookup reads the description, then one block per level (about three for 50 million keys); ranges read
the blocks their keys span. A range spanning more than ``GIVE_UP_KEYS`` keys and at least ``GIVE_UP_FRACTION``
of all keys is not looked up (openLooKeng's rule: filtering would not pay); the answer is then "undecided",
which keeps every stripe. Null values are not keys; the stripes holding nulls are stored beside the tree so
``IS NULL`` / ``IS NOT NULL`` are answered too.
"""

from __future__ import annotations

import bisect
import struct
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from metastore.index import kernels
from metastore.index.bind import KeyRange, KeySet, Leaf, NullTest
from metastore.index.columns import Domain, Key
from metastore.index.container import BlockRef, IndexFileReader, IndexFileWriter, PackedBlock, pack_block
from metastore.index.coverage import Coverage, FileValues, decode_keys, encode_keys
from metastore.index.errors import IndexFileCorrupt
from metastore.index.pairsort import sort_pairs

KIND = "btree"
LEAF_TARGET_BYTES = 32 * 1024
MAX_LEAF_KEYS = 4096
#: decoded inner nodes a reader keeps (a tree of 10 M keys has about 3,000 leaves under a few inner nodes)
MAX_CACHED_NODES = 1024
FANOUT = 512
#: trees of this many leaves or more encode and compress their leaves in PACK_THREADS threads, a probe run
#: (COMPRESS_PROBE_EVERY leaves) a task, up to PACK_AHEAD runs in flight
PACK_THREADS_FROM = 64
PACK_THREADS = 2
PACK_AHEAD = 4
#: a leaf is compressed only when its run's probe leaf shrank by at least this fraction (measured: random int64
#: gaps 11 %, sorted keys 99.5 %)
COMPRESS_MIN_SAVING = 0.20
#: leaves per probe: the first leaf of each run of this many decides whether the rest of the run is compressed
COMPRESS_PROBE_EVERY = 128
GIVE_UP_KEYS = 10_000
GIVE_UP_FRACTION = 0.10
_LEAF_HEAD = struct.Struct("<IB")
_INNER_HEAD = struct.Struct("<IB")
_CHILD = struct.Struct("<QIIIBQ")
_WIDTH = struct.Struct("<B")
_FIRST = struct.Struct("<q")
_SINGLE = 1
_IDS16 = 2


class Postings:
    """Sorted distinct keys with the sorted stripe ids of each: ``ids[offsets[i]:offsets[i+1]]``. When every key
    has one stripe (a unique column) the offsets are ``0..n`` and are made only if asked for (``single``): an
    array of 50 M fresh int64s costs about a second of page faults that the tree's writing does not need."""

    def __init__(self, domain: Domain, keys: np.ndarray, offsets: np.ndarray | None, ids: np.ndarray) -> None:
        self.domain = domain
        self.keys = keys
        self.ids = ids  # uint32
        self._offsets = offsets  # int64, len(keys) + 1; None: one id per key

    @property
    def single(self) -> bool:
        """Whether every key has exactly one stripe id."""
        return self._offsets is None or len(self.ids) == len(self.keys)

    @property
    def offsets(self) -> np.ndarray:
        """int64, len(keys) + 1: key i's ids are ``ids[offsets[i]:offsets[i+1]]``."""
        if self._offsets is None:
            self._offsets = np.arange(len(self.keys) + 1, dtype=np.int64)
        return self._offsets

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Where the ids of keys start..end lie in ``ids``."""
        if self._offsets is None:
            return start, end
        return int(self._offsets[start]), int(self._offsets[end])

    @classmethod
    def empty(cls, domain: Domain) -> Postings:
        keys = np.zeros(0, dtype=np.int64 if domain is Domain.INT64 else object)
        return cls(domain, keys, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint32))

    @classmethod
    def from_pairs(cls, domain: Domain, keys: np.ndarray, ids: np.ndarray, *, grouped: bool = False) -> Postings:
        """Group (key, stripe id) pairs; each pair at most once, in any order (``grouped``: pairs of equal keys
        come in id order along the arrays, so a stable sort by key orders them)."""
        if len(keys) == 0:
            return cls.empty(domain)
        if domain is not Domain.INT64:
            order = _object_order(keys, ids)
            k = keys[order]
            i = np.asarray(ids, dtype=np.uint32)[order]
            new_key = np.concatenate(([True], k[1:] != k[:-1]))
        else:
            k, i, new_key = _int_pairs_order(np.asarray(keys, dtype=np.int64), np.asarray(ids, dtype=np.uint32),
                                             grouped)
        return cls._of_ordered(domain, k, i, new_key)

    @classmethod
    def _of_ordered(cls, domain: Domain, k: np.ndarray, i: np.ndarray, new_key: np.ndarray) -> Postings:
        """Postings of pairs ordered by key, then id, ``new_key`` marking where each key starts."""
        if bool(new_key.all()):  # every key in one stripe only (a unique column): no grouping to do
            return cls(domain, k, None, i)
        starts = np.flatnonzero(new_key)
        return cls(domain, k[starts], np.append(starts, len(k)).astype(np.int64), i)


def _key_starts(k: np.ndarray) -> np.ndarray:
    """Per position of sorted keys, whether it starts a new key."""
    new_key = np.empty(len(k), dtype=bool)
    new_key[:1] = True
    np.not_equal(k[1:], k[:-1], out=new_key[1:])
    return new_key


def _int_pairs_order(keys: np.ndarray, ids: np.ndarray, grouped: bool = False,
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """int64 (key, stripe id) pairs ordered by key, then id (what ``np.lexsort((ids, keys))`` gives), and per
    position whether it starts a new key.

    When equal keys come in id order along the array (``grouped``, or ids that do not decrease: a scan's
    pairs, stripe after stripe, each stripe's keys sorted, or files' merged runs), a stable sort of the keys
    alone gives the lexsort's order, and numpy's stable sort (a timsort) merges the sorted runs it finds. Keys
    already ascending and distinct need no sort. Otherwise an unstable argsort of the keys leaves pairs of equal
    keys in any order; their ids are then put in order by one sort of (key group, id) numbers, which gives the
    same pairs as the lexsort.

    The stable merge is kept for sorted runs however many there are: numpy's unstable argsort of int64 is fast
    only where its AVX-512 sort is (an Intel host with AVX512_SPR: 0.43 s for 10 M keys against the merge's
    0.50-1.04 s); on an AMD EPYC with AVX-512 it took 0.83-1.17 s against the merge's 0.24 s (20 runs), 0.38 s
    (100-140 runs) and 0.55 s (1,000 runs), unique or repeated keys (BENCHMARKS.md, 2026-11-27)."""
    in_order = grouped or len(ids) < 2 or bool(np.all(ids[1:] >= ids[:-1]))
    if bool(np.all(keys[1:] > keys[:-1])):
        k, i = keys, ids  # keys already ascending and distinct (a sorted column): nothing to order
    else:
        order = np.argsort(keys, kind="stable" if in_order else None)
        k = keys[order]
        i = ids[order]
    new_key = _key_starts(k)
    if len(k) and not in_order and not bool(new_key.all()):
        group = np.cumsum(new_key, dtype=np.int64) - 1
        width = int(i.max()) + 1
        if int(group[-1]) < (1 << 62) // width:
            # groups ascend with position, so sorting group * width + id orders the ids inside each group only
            combined = group * width + i.astype(np.int64)
            combined.sort()
            i = (combined - group * width).astype(np.uint32)
        else:  # too many groups for one int64 number per pair: the lexsort itself
            order = np.lexsort((ids, keys))
            k = keys[order]
            i = ids[order]
    return k, i, new_key


def _object_order(keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
    # bytes keys: a stable sort by id first, then a stable sort by key (Python comparisons)
    by_id = np.argsort(ids, kind="stable")
    by_key = np.argsort(keys[by_id], kind="stable")
    return by_id[by_key]


def postings_of(files: Sequence[FileValues], domain: Domain) -> Postings:
    """The postings of scanned files (stripe ids in coverage order). Along the concatenated keys (stripe after
    stripe, or a file's merged run), equal keys come in stripe-id order, so a stable sort by key alone orders
    the pairs (Postings.from_pairs with ``grouped``)."""
    if domain is Domain.INT64:
        return _int_postings(files)
    key_parts: list[np.ndarray] = []
    id_parts: list[np.ndarray] = []
    base = 0
    for f in files:
        if f.merged is not None:
            keys, local = f.merged
            if len(keys):
                key_parts.append(keys)
                id_parts.append(local.astype(np.uint32) + np.uint32(base))
        else:
            counts = [len(s.distinct) for s in f.stripes]
            key_parts.extend(s.distinct for s in f.stripes if len(s.distinct))
            if sum(counts):
                id_parts.append(np.repeat(np.arange(base, base + len(counts), dtype=np.uint32), counts))
        base += len(f.stripes)
    if not key_parts:
        return Postings.empty(domain)
    return Postings.from_pairs(domain, np.concatenate(key_parts), np.concatenate(id_parts), grouped=True)


def _int_postings(files: Sequence[FileValues], *, native: bool = True) -> Postings:
    """postings_of for int64 keys: the pairs copied once into arrays of their final size (no per-file
    temporaries), then ordered as Postings.from_pairs orders grouped pairs. With the compiled kernel (and
    ``native``) the sorted runs (a file's merged run, or each stripe's sorted distinct keys) are merged straight
    into those arrays instead (merge_sorted_runs: the same pairs in the same order)."""
    total = sum(len(f.merged[0]) if f.merged is not None else sum(len(s.distinct) for s in f.stripes)
                for f in files)
    if total == 0:
        return Postings.empty(Domain.INT64)
    compiled = kernels.native() if native else None
    if compiled is not None:
        runs, run_ids, bases = int_runs(files)
        k = np.empty(total, dtype=np.int64)
        i = np.empty(total, dtype=np.uint32)
        stripes = sum(len(f.stripes) for f in files)
        if merge_sorted_runs(compiled, runs, run_ids, bases, k, i, id_bits=max(1, (stripes - 1).bit_length())) == 0:
            return Postings(Domain.INT64, k, None, i)  # every key distinct: what _of_ordered gives, unscanned
        return Postings._of_ordered(Domain.INT64, k, i, _key_starts(k))
    keys = np.empty(total, dtype=np.int64)
    ids = np.empty(total, dtype=np.uint32)
    at = 0
    base = 0
    for f in files:
        if f.merged is not None:
            run, local = f.merged
            n = len(run)
            keys[at : at + n] = run
            np.add(local, np.uint32(base), out=ids[at : at + n], dtype=np.uint32, casting="unsafe")
            at += n
        else:
            for j, s in enumerate(f.stripes):
                n = len(s.distinct)
                keys[at : at + n] = s.distinct
                ids[at : at + n] = base + j
                at += n
        base += len(f.stripes)
    return Postings.from_pairs(Domain.INT64, keys, ids, grouped=True)


def int_runs(files: Sequence[FileValues]) -> tuple[list[np.ndarray], list[np.ndarray | None], list[int]]:
    """The sorted int64 runs of scanned files as merge_sorted_runs takes them: each file's merged run (its ids the
    stripe numbers in the file) or each non-empty stripe's distinct keys (ids None), and each run's base id."""
    runs: list[np.ndarray] = []
    run_ids: list[np.ndarray | None] = []
    bases: list[int] = []
    base = 0
    for f in files:
        if f.merged is not None:
            runs.append(np.ascontiguousarray(f.merged[0], dtype=np.int64))
            run_ids.append(np.ascontiguousarray(f.merged[1]))
            bases.append(base)
        else:
            for j, s in enumerate(f.stripes):
                if len(s.distinct):
                    runs.append(np.ascontiguousarray(s.distinct, dtype=np.int64))
                    run_ids.append(None)
                    bases.append(base + j)
        base += len(f.stripes)
    return runs, run_ids, bases


#: merge_sorted_runs splits a merge of at least this many keys into MERGE_THREADS key ranges, one thread each
MERGE_SPLIT_FROM = 1 << 20
MERGE_THREADS = 2
#: from this many runs on (stripes sent unmerged by pooled workers), merge_sorted_runs sorts instead of merging
#: when given the ids' width (pairsort.sort_pairs: its cost does not grow with the runs)
SORT_FROM_RUNS = 200


def merge_sorted_runs(compiled: Any, runs: Sequence[np.ndarray], ids: Sequence[np.ndarray | None],
                      bases: Sequence[int], out_keys: np.ndarray, out_ids: np.ndarray, *,
                      id_bits: int | None = None) -> int:
    """The compiled k-way merge (``_kernels.merge_runs``) of sorted int64 runs into ``out_keys``/``out_ids``:
    by key, equal keys in run order (a stable sort of the runs' concatenation), each key's id ``bases[r]`` plus
    its run's id (``ids[r]``, or nothing when None). Large merges are cut at pivot keys into MERGE_THREADS
    ranges (every run split where the pivot would go, keys below it left), merged in threads (the kernel
    releases the GIL): the ranges are disjoint and ascending, so their outputs side by side are the whole merge.
    Returns how many output keys equal the key before them (equal keys never straddle a cut). With ``id_bits``
    (the ids' width; runs as int_runs gives them) and SORT_FROM_RUNS runs or more, each range is sorted by
    pairsort.sort_pairs instead (the same result; uint32 ids)."""
    total = len(out_keys)
    parts = MERGE_THREADS if total >= MERGE_SPLIT_FROM and len(runs) > 1 else 1
    merge: Callable[..., int] = compiled.merge_runs
    if id_bits is not None and len(runs) >= SORT_FROM_RUNS and out_ids.dtype == np.uint32:
        width = id_bits

        def merge(r: list[np.ndarray], x: list[np.ndarray | None], b: list[int], k: np.ndarray, i: np.ndarray) -> int:
            return sort_pairs(compiled, r, x, b, width, k, i)
    if parts == 1:
        return int(merge(list(runs), list(ids), list(bases), out_keys, out_ids))
    sample = np.sort(np.concatenate([r[:: max(1, len(r) // 256)] for r in runs if len(r)]))
    pivots = [sample[(len(sample) * p) // parts] for p in range(1, parts)]
    cuts = np.asarray([[0, *np.searchsorted(r, pivots, side="left").tolist(), len(r)] for r in runs], dtype=np.int64)
    jobs = []
    at = 0
    for p in range(parts):
        lo, hi = cuts[:, p].tolist(), cuts[:, p + 1].tolist()
        size = sum(b - a for a, b in zip(lo, hi, strict=True))
        jobs.append(([r[a:b] for r, a, b in zip(runs, lo, hi, strict=True)],
                     [None if x is None else x[a:b] for x, a, b in zip(ids, lo, hi, strict=True)],
                     out_keys[at : at + size], out_ids[at : at + size]))
        at += size
    with ThreadPoolExecutor(parts, thread_name_prefix="btree-merge") as pool:
        futures = [pool.submit(merge, r, x, list(bases), k, i) for r, x, k, i in jobs]
        return sum(int(done.result()) for done in futures)


# ---------------------------------------------------------------------------------------------- writing


def single_step() -> int:
    """Keys per leaf of int64 postings whose every key has one stripe: every key counts 12 bytes, so
    _leaf_bounds's rule cuts every LEAF_TARGET_BYTES // 12 keys (the same bounds, without a cumulative sum over
    every key); the last leaf holds the rest."""
    return min(max(LEAF_TARGET_BYTES // 12, 1), MAX_LEAF_KEYS)


def compress_after_probe(packed: PackedBlock) -> bool:
    """Whether the leaves after a probe leaf (packed by pack_block with compression) in its run are compressed:
    when the probe shrank by at least COMPRESS_MIN_SAVING."""
    return len(packed[0]) <= (1.0 - COMPRESS_MIN_SAVING) * packed[1]


def _leaf_bounds(domain: Domain, postings: Postings) -> list[int]:
    """Where leaves start (key positions), cut by bytes so a leaf stays near LEAF_TARGET_BYTES."""
    n = len(postings.keys)
    if n == 0:
        return [0]
    if domain is Domain.INT64 and postings.single:
        step = single_step()
        return [*range(0, n, step), n]
    per_key = np.diff(postings.offsets) * 4 + 8
    if domain is Domain.BYTES:
        per_key = per_key + np.fromiter((len(k) for k in postings.keys), dtype=np.int64, count=n)
    cumulative = np.cumsum(per_key)
    bounds = [0]
    start_bytes = 0
    while bounds[-1] < n:
        start = bounds[-1]
        end = int(np.searchsorted(cumulative, start_bytes + LEAF_TARGET_BYTES, side="right"))
        end = min(max(end, start + 1), start + MAX_LEAF_KEYS, n)
        bounds.append(end)
        start_bytes = int(cumulative[end - 1])
    return bounds


@dataclass(frozen=True)
class _IntLeaves:
    """What every int64 leaf (format 2) of a tree is cut from, computed once for the whole tree instead of per
    leaf: the gaps between neighbouring keys as 8 little-endian bytes each, each leaf's gap width, and the ids
    in their stored width. _encode_leaf gives the same bytes with or without it."""

    gap_bytes: np.ndarray  # uint8 (n - 1, 8)
    widths: dict[int, int]  # leaf start -> gap width in bytes
    ids: np.ndarray  # "<u2" or "<u4"

    @classmethod
    def of(cls, postings: Postings, bounds: Sequence[int], ids16: bool) -> _IntLeaves:
        k = np.ascontiguousarray(postings.keys, dtype="<i8").view("<u8")
        gaps = k[1:] - k[:-1]  # wraps modulo 2**64: the true gap, which is below 2**64
        starts = np.asarray(bounds[:-1], dtype=np.int64)
        # each leaf's largest gap: the gaps from its start to the next leaf's start, with the gap across the
        # boundary (to the next leaf's first key) counted as 0; a padding 0 lets a last one-key leaf have one
        masked = np.zeros(len(k), dtype=np.uint64)
        masked[: len(gaps)] = gaps
        masked[np.asarray(bounds[1:-1], dtype=np.int64) - 1] = 0
        largest = np.maximum.reduceat(masked, starts).tolist() if len(starts) else []
        widths = {int(a): (int(m).bit_length() + 7) // 8 for a, m in zip(starts.tolist(), largest, strict=True)}
        ids = postings.ids.astype("<u2" if ids16 else "<u4")  # write_tree passes ids16 True only
        return cls(gaps.view(np.uint8).reshape(-1, 8), widths, ids)


def _encode_leaf(postings: Postings, start: int, end: int, version: int, ids16: bool | None = None,
                 pre: _IntLeaves | None = None) -> bytes:
    """One leaf; ``ids16``: whether every stripe id of the postings fits 16 bits (None: look at the leaf's);
    ``pre``: the tree's int64 leaves computed at once (_IntLeaves; format 2, every id fits 16 bits)."""
    keys = postings.keys[start:end]
    lo, hi = postings.span(start, end)
    single = hi - lo == end - start  # every key of the leaf has one stripe (each has at least one)
    ids = postings.ids[lo:hi]
    flags = _SINGLE if single else 0
    if ids16 is None:
        ids16 = len(ids) == 0 or int(ids.max()) <= 0xFFFF
    if version >= 2 and ids16:
        flags |= _IDS16
        id_bytes = pre.ids[lo:hi].tobytes() if pre is not None else ids.astype("<u2").tobytes()
    else:
        id_bytes = ids.astype("<u4").tobytes()
    parts = [_LEAF_HEAD.pack(end - start, flags)]
    if pre is not None and end > start:
        width = pre.widths[start]
        parts.extend((_WIDTH.pack(width), _FIRST.pack(int(keys[0])), pre.gap_bytes[start : end - 1, :width].tobytes()))
    elif version >= 2 and postings.domain is Domain.INT64:
        parts.extend(_encode_gaps(keys))
    else:
        parts.append(encode_keys(postings.domain, keys))
    if not single:
        parts.append((postings.offsets[start : end + 1] - lo).astype("<u4").tobytes())
    parts.append(id_bytes)
    return b"".join(parts)


def _encode_gaps(keys: np.ndarray) -> list[bytes]:
    """Sorted distinct int64 keys as width, first key and the gaps between neighbours in ``width`` bytes."""
    if len(keys) == 0:
        return [_WIDTH.pack(0)]
    k = np.ascontiguousarray(keys, dtype="<i8").view("<u8")
    gaps = k[1:] - k[:-1]  # wraps modulo 2**64: the true gap, which is below 2**64
    width = (int(gaps.max()).bit_length() + 7) // 8 if len(gaps) else 0
    return [_WIDTH.pack(width), _FIRST.pack(int(keys[0])), gaps.view(np.uint8).reshape(-1, 8)[:, :width].tobytes()]


def _decode_gaps(view: memoryview, count: int, path: str) -> tuple[np.ndarray, int]:
    """The keys _encode_gaps wrote at the start of ``view``, and the bytes they used."""
    if len(view) < _WIDTH.size:
        raise IndexFileCorrupt(path, "a key array is cut short")
    (width,) = _WIDTH.unpack_from(view)
    if count == 0:
        return np.zeros(0, dtype=np.int64), _WIDTH.size
    if width > 8:
        raise IndexFileCorrupt(path, f"a B+tree leaf claims {width}-byte key gaps")
    need = _WIDTH.size + _FIRST.size + width * (count - 1)
    if len(view) < need:
        raise IndexFileCorrupt(path, "a key array is cut short")
    (first,) = _FIRST.unpack_from(view, _WIDTH.size)
    wide = np.zeros((count, 8), dtype=np.uint8)
    if width:
        wide[1:, :width] = np.frombuffer(view, dtype=np.uint8, count=width * (count - 1),
                                         offset=_WIDTH.size + _FIRST.size).reshape(-1, width)
    values = wide.view("<u8").reshape(count)
    values[0] = np.int64(first).view(np.uint64)
    np.cumsum(values, out=values)  # modulo 2**64, as the gaps were taken
    return values.view("<i8").astype(np.int64), need


@dataclass(frozen=True)
class Child:
    first: Key
    ref: BlockRef
    keys: int


def _encode_inner(domain: Domain, level: int, children: Sequence[Child]) -> bytes:
    first = np.empty(len(children), dtype=np.int64 if domain is Domain.INT64 else object)
    first[:] = [c.first for c in children]
    parts = [_INNER_HEAD.pack(len(children), level), encode_keys(domain, first)]
    parts.extend(
        _CHILD.pack(c.ref.offset, c.ref.length, c.ref.crc, c.ref.raw_length, c.ref.codec, c.keys) for c in children
    )
    return b"".join(parts)


def _leaf_encoder(postings: Postings, version: int, ids16: bool | None, native: bool) -> Callable[[int, int], bytes]:
    """The encoder of the tree's leaves (start, end -> the leaf's bytes): the compiled one for int64 keys of
    format 2 when it is built (and ``native``), else _encode_leaf (with _IntLeaves computed once when every id
    fits 16 bits); the same bytes."""
    compiled = kernels.native() if native and postings.domain is Domain.INT64 and version >= 2 else None
    if compiled is not None:
        keys = np.ascontiguousarray(postings.keys, dtype=np.int64)
        ids = np.ascontiguousarray(postings.ids, dtype=np.uint32)
        offsets = postings._offsets

        def native_leaf(a: int, b: int) -> bytes:
            lo, hi = postings.span(a, b)
            small = ids16 if ids16 is not None else hi == lo or int(ids[lo:hi].max()) <= 0xFFFF
            return compiled.encode_int_leaf(keys, ids, offsets, a, b, lo, hi, small)  # type: ignore[no-any-return]

        return native_leaf
    pre = None
    if postings.domain is Domain.INT64 and version >= 2 and len(postings.keys) and ids16:
        pre = _IntLeaves.of(postings, _leaf_bounds(postings.domain, postings), ids16)

    def numpy_leaf(a: int, b: int) -> bytes:
        return _encode_leaf(postings, a, b, version, ids16, pre)

    return numpy_leaf


def _pack_leaves(encode: Callable[[int, int], bytes], group: Sequence[tuple[int, int]]) -> list[PackedBlock]:
    """The leaves of one probe run (COMPRESS_PROBE_EVERY leaves from a multiple of it) as stored: the first is
    compressed as the probe, the others only when the probe shrank by COMPRESS_MIN_SAVING. A run depends on its
    own leaves only, so runs can be packed in any thread and order."""
    out: list[PackedBlock] = []
    compress = True
    for j, (a, b) in enumerate(group):
        data = encode(a, b)
        packed = pack_block(data, compress=compress)
        if j == 0:
            compress = compress_after_probe(packed)
        out.append(packed)
    return out


def write_tree(writer: IndexFileWriter, postings: Postings, *, native: bool = True) -> dict[str, Any]:
    """Bulk-load the tree into the file; returns the description entries (root, height, key count). ``native``:
    int64 leaves encoded by the compiled kernel when it is built (the same bytes as numpy's)."""
    domain = postings.domain
    bounds = _leaf_bounds(domain, postings)
    level: list[Child] = []
    # all ids fit 16 bits: every leaf writes u16 ids (the per-leaf test would say so each time); else ask per leaf
    ids16 = True if len(postings.ids) == 0 or int(postings.ids.max()) <= 0xFFFF else None
    pairs = list(zip(bounds[:-1], bounds[1:], strict=True))
    encode = _leaf_encoder(postings, writer.version, ids16, native)

    def first_key(a: int) -> Key:
        return postings.keys[a].item() if domain is Domain.INT64 else postings.keys[a]  # type: ignore[no-any-return]

    runs = [pairs[g : g + COMPRESS_PROBE_EVERY] for g in range(0, len(pairs), COMPRESS_PROBE_EVERY)]

    def add(run: list[tuple[int, int]], packed: list[PackedBlock]) -> None:
        for (a, b), ref in zip(run, writer.add_packed_run(packed), strict=True):
            level.append(Child(first_key(a), ref, b - a))

    if len(pairs) < PACK_THREADS_FROM:
        for run in runs:
            add(run, _pack_leaves(encode, run))
    else:
        # probe runs of leaves (a probe and the leaves it decides) encoded, compressed and checksummed in
        # threads (the kernel, zstd and crc32 release the GIL), written here in order: the one-thread bytes
        with ThreadPoolExecutor(PACK_THREADS, thread_name_prefix="btree-leaves") as pool:
            pending: deque[tuple[list[tuple[int, int]], Future[list[PackedBlock]]]] = deque()
            for run in runs:
                pending.append((run, pool.submit(_pack_leaves, encode, run)))
                if len(pending) > PACK_AHEAD:
                    done_run, done = pending.popleft()
                    add(done_run, done.result())
            while pending:
                done_run, done = pending.popleft()
                add(done_run, done.result())
    return write_upper_levels(writer, domain, level, int(len(postings.keys)))


def write_upper_levels(writer: IndexFileWriter, domain: Domain, level: list[Child], key_count: int,
                       height: int = 1) -> dict[str, Any]:
    """The inner nodes above ``level`` (the leaves, or with ``height`` 2 and up the inner nodes of that height
    minus one, in key order) bottom-up; the description entries."""
    while len(level) > 1:
        parents: list[Child] = []
        for i in range(0, len(level), FANOUT):
            group = level[i : i + FANOUT]
            ref = writer.add_block(_encode_inner(domain, height, group))
            parents.append(Child(group[0].first, ref, sum(c.keys for c in group)))
        level = parents
        height += 1
    out: dict[str, Any] = {"height": height, "key_count": key_count}
    if level:
        out["root_block"] = level[0].ref.to_list()
    return out


# ---------------------------------------------------------------------------------------------- reading


def _decode_leaf(domain: Domain, raw: bytes, path: str, version: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, offsets, ids) of a leaf block of a file of format ``version``."""
    if len(raw) < _LEAF_HEAD.size:
        raise IndexFileCorrupt(path, "a B+tree leaf is cut short")
    n, flags = _LEAF_HEAD.unpack_from(raw)
    view = memoryview(raw)[_LEAF_HEAD.size :]
    if version >= 2 and domain is Domain.INT64:
        keys, used = _decode_gaps(view, n, path)
    else:
        keys, used = decode_keys(domain, view, n, path)
    rest = view[used:]
    id_type = "<u2" if version >= 2 and flags & _IDS16 else "<u4"
    id_size = 2 if id_type == "<u2" else 4
    if flags & _SINGLE:
        if len(rest) != id_size * n:
            raise IndexFileCorrupt(path, "a B+tree leaf has the wrong number of stripe ids")
        ids = np.frombuffer(rest, dtype=id_type).astype(np.uint32)
        offsets = np.arange(n + 1, dtype=np.int64)
    else:
        if len(rest) < 4 * (n + 1):
            raise IndexFileCorrupt(path, "a B+tree leaf is cut short")
        offsets = np.frombuffer(rest, dtype="<u4", count=n + 1).astype(np.int64)
        tail = rest[4 * (n + 1) :]
        if len(tail) % id_size:
            raise IndexFileCorrupt(path, "a B+tree leaf has a partial stripe id")
        ids = np.frombuffer(tail, dtype=id_type).astype(np.uint32)
        if offsets[0] != 0 or offsets[-1] != len(ids) or np.any(np.diff(offsets) <= 0):
            raise IndexFileCorrupt(path, "a B+tree leaf has bad offsets")
    if n > 1 and not _strictly_increasing(keys):
        raise IndexFileCorrupt(path, "a B+tree leaf's keys are out of order")
    return keys, offsets, ids


def _strictly_increasing(keys: np.ndarray) -> bool:
    if keys.dtype == object:
        items = keys.tolist()
        return all(a < b for a, b in zip(items[:-1], items[1:], strict=True))
    return bool(np.all(keys[1:] > keys[:-1]))


@dataclass(frozen=True)
class _Inner:
    level: int
    first: list[Key]
    children: list[tuple[BlockRef, int]]


def _decode_inner(domain: Domain, raw: bytes, path: str) -> _Inner:
    if len(raw) < _INNER_HEAD.size:
        raise IndexFileCorrupt(path, "a B+tree node is cut short")
    n, level = _INNER_HEAD.unpack_from(raw)
    view = memoryview(raw)[_INNER_HEAD.size :]
    keys, used = decode_keys(domain, view, n, path)
    rest = view[used:]
    if len(rest) != n * _CHILD.size or n == 0:
        raise IndexFileCorrupt(path, "a B+tree node has the wrong number of children")
    children = []
    for i in range(n):
        offset, length, crc, raw_length, codec, count = _CHILD.unpack_from(rest, i * _CHILD.size)
        children.append((BlockRef.from_list([offset, length, crc, raw_length, codec], path), count))
    first = keys.tolist()
    if n > 1 and not all(a < b for a, b in zip(first[:-1], first[1:], strict=True)):
        raise IndexFileCorrupt(path, "a B+tree node's keys are out of order")
    return _Inner(level, first, children)


class BTreeReader:
    """Lookups in one BTREE index file; every answer is a sorted array of stripe ids, or None when undecided."""

    def __init__(self, reader: IndexFileReader, domain: Domain) -> None:
        self.file = reader
        self.path = reader.path
        self.domain = domain
        d = reader.description
        height, key_count = d.get("height"), d.get("key_count")
        if not isinstance(height, int) or not isinstance(key_count, int) or not 0 < height < 64 or key_count < 0:
            raise IndexFileCorrupt(self.path, "the B+tree description has no valid height or key count")
        self.height: int = height
        self.key_count: int = key_count
        self.root = BlockRef.from_list(d["root_block"], self.path) if "root_block" in d else None
        self._null_stripes: np.ndarray | None = None
        self._value_stripes: np.ndarray | None = None
        #: decoded inner nodes by block offset: a warm lookup reads and decodes only its leaf (the file never
        #: changes under a reader; a rebuilt index is a new file)
        self._inner: dict[int, _Inner] = {}

    # ------------------------------------------------------------------ blocks

    def _node(self, ref: BlockRef, level: int) -> _Inner:
        cached = self._inner.get(ref.offset)
        if cached is not None and cached.level == level:
            return cached
        node = _decode_inner(self.domain, self.file.block(ref, "a B+tree node"), self.path)
        if node.level != level:
            raise IndexFileCorrupt(self.path, f"a B+tree node claims level {node.level}, expected {level}")
        if len(self._inner) < MAX_CACHED_NODES:
            self._inner[ref.offset] = node
        return node

    def _leaf(self, ref: BlockRef) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return _decode_leaf(self.domain, self.file.block(ref, "a B+tree leaf"), self.path, self.file.version)

    def _stripe_set(self, name: str) -> np.ndarray:
        ref = BlockRef.from_list(self.file.description.get(name), self.path)
        raw = self.file.block(ref, name.replace("_block", "").replace("_", " "))
        if len(raw) % 4:
            raise IndexFileCorrupt(self.path, f"{name} has a partial entry")
        return np.frombuffer(raw, dtype="<u4").astype(np.uint32)

    # ------------------------------------------------------------------ lookups

    def point(self, keys: Sequence[Key]) -> np.ndarray:
        """Stripes holding any of ``keys`` (a point lookup each, sharing the blocks they touch)."""
        if self.root is None or not keys:
            return np.zeros(0, dtype=np.uint32)
        found: list[np.ndarray] = []
        wanted = sorted(set(keys))  # type: ignore[type-var]  # keys of one column share one type (int or bytes, by its domain), so they sort
        for ref, group in self._descend_points(self.root, self.height - 1, wanted):
            leaf_keys, offsets, ids = self._leaf(ref)
            items = leaf_keys.tolist()
            for k in group:
                i = bisect.bisect_left(items, k)
                if i < len(items) and items[i] == k:
                    found.append(ids[offsets[i] : offsets[i + 1]])
        return _union(found)

    def _descend_points(self, ref: BlockRef, level: int, keys: list[Key]) -> Iterator[tuple[BlockRef, list[Key]]]:
        if level == 0:
            yield ref, keys
            return
        node = self._node(ref, level)
        groups: dict[int, list[Key]] = {}
        for k in keys:
            i = bisect.bisect_right(node.first, k) - 1
            if i >= 0:
                groups.setdefault(i, []).append(k)
        for i in sorted(groups):
            yield from self._descend_points(node.children[i][0], level - 1, groups[i])

    def range(self, leaf: KeyRange) -> np.ndarray | None:
        """Stripes holding a key in the range; None when the range spans too many keys to be worth it."""
        if self.root is None:
            return np.zeros(0, dtype=np.uint32)
        if leaf.is_point:
            assert leaf.low is not None
            return self.point([leaf.low])
        if leaf.low is None and leaf.high is None:
            return self.value_stripes()
        budget = max(GIVE_UP_KEYS, int(GIVE_UP_FRACTION * self.key_count))
        refs = self._range_leaves(self.root, self.height - 1, leaf, budget)
        if refs is None:
            return None
        found: list[np.ndarray] = []
        for ref in refs:
            keys, offsets, ids = self._leaf(ref)
            lo, hi = _slice(keys, leaf)
            if hi > lo:
                found.append(ids[offsets[lo] : offsets[hi]])
        return _union(found)

    def _range_leaves(self, ref: BlockRef, level: int, leaf: KeyRange, budget: int) -> list[BlockRef] | None:
        """The leaves the range spans, or None when they hold more keys than ``budget`` (and at least
        GIVE_UP_FRACTION of all keys)."""
        out: list[BlockRef] = []
        pending: list[tuple[BlockRef, int]] = [(ref, level)]
        spanned = 0
        while pending:
            ref, level = pending.pop(0)
            if level == 0:
                out.append(ref)
                continue
            node = self._node(ref, level)
            a = 0 if leaf.low is None else max(bisect.bisect_right(node.first, leaf.low) - 1, 0)
            b = len(node.first) if leaf.high is None else bisect.bisect_right(node.first, leaf.high)
            if level == 1:
                spanned += sum(count for _, count in node.children[a:b])
                if spanned > budget and spanned >= GIVE_UP_FRACTION * self.key_count:
                    return None
            pending.extend((child, level - 1) for child, _ in node.children[a:b])
        return out

    def null_stripes(self) -> np.ndarray:
        """Stripes holding at least one null."""
        if self._null_stripes is None:
            self._null_stripes = self._stripe_set("null_stripes_block")
        return self._null_stripes

    def value_stripes(self) -> np.ndarray:
        """Stripes holding at least one non-null value."""
        if self._value_stripes is None:
            self._value_stripes = self._stripe_set("value_stripes_block")
        return self._value_stripes

    def answer(self, leaf: Leaf) -> np.ndarray | None:
        """The stripes that may satisfy a leaf (exactly those that do), or None when the tree cannot tell."""
        if isinstance(leaf, NullTest):
            return self.null_stripes() if leaf.is_null else self.value_stripes()
        if isinstance(leaf, KeySet):
            return None if leaf.negated else self.point(list(leaf.keys))
        return self.range(leaf)

    def postings(self) -> Postings:
        """Every key with its stripes (UPDATE INDEX reuses the entries of unchanged files)."""
        if self.root is None:
            return Postings.empty(self.domain)
        keys: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        ids: list[np.ndarray] = []
        for ref in self._all_leaves(self.root, self.height - 1):
            k, o, i = self._leaf(ref)
            keys.append(k)
            counts.append(np.diff(o))
            ids.append(i)
        all_keys = np.concatenate(keys)
        offsets = np.zeros(len(all_keys) + 1, dtype=np.int64)
        np.cumsum(np.concatenate(counts), out=offsets[1:])
        return Postings(self.domain, all_keys, offsets, np.concatenate(ids))

    def _all_leaves(self, ref: BlockRef, level: int) -> Iterator[BlockRef]:
        if level == 0:
            yield ref
            return
        for child, _ in self._node(ref, level).children:
            yield from self._all_leaves(child, level - 1)

    def verify(self) -> None:
        """Read every block of the tree (SHOW INDEX's full check)."""
        self.postings()
        self.null_stripes()
        self.value_stripes()


def _slice(keys: np.ndarray, leaf: KeyRange) -> tuple[int, int]:
    items = keys.tolist() if keys.dtype == object else keys
    lo = 0
    hi = len(keys)
    if leaf.low is not None:
        side = "left" if leaf.low_inclusive else "right"
        lo = bisect.bisect_left(items, leaf.low) if side == "left" else bisect.bisect_right(items, leaf.low)
    if leaf.high is not None:
        hi = bisect.bisect_right(items, leaf.high) if leaf.high_inclusive else bisect.bisect_left(items, leaf.high)
    return lo, hi


def _union(parts: list[np.ndarray]) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=np.uint32)
    return np.unique(np.concatenate(parts)).astype(np.uint32)


def write_stripe_sets(writer: IndexFileWriter, files: Sequence[FileValues]) -> dict[str, Any]:
    """Blocks of the stripes holding nulls and of those holding values."""
    nulls: list[int] = []
    values: list[int] = []
    stripe_id = 0
    for f in files:
        for s, count in zip(f.stripes, f.distinct_counts(), strict=True):
            if s.nulls:
                nulls.append(stripe_id)
            if count:
                values.append(stripe_id)
            stripe_id += 1
    return {
        "null_stripes_block": writer.add_block(np.asarray(nulls, dtype="<u4").tobytes()).to_list(),
        "value_stripes_block": writer.add_block(np.asarray(values, dtype="<u4").tobytes()).to_list(),
    }


def coverage_and_postings(files: Sequence[FileValues], domain: Domain) -> tuple[Coverage, Postings]:
    """The coverage and the postings of scanned files."""
    return Coverage.of(files), postings_of(files, domain)
