"""A large int64 part's B+tree leaves made in forked worker processes, one key range each: the bytes write_tree
writes, without the table-wide merge and the leaf encoding in this process.

write_tree over a part's postings merges every file's sorted run (100 runs, 50 M keys: 1-3 s of this
process's CPU even in two threads), then encodes, checksums and writes every leaf here (400 MB of fresh
memory). Here the keys are cut into RANGE_PAIRS-sized key ranges at splitters sampled from the runs (each run
split where a splitter would go, so equal keys always share a range); workers forked after the runs are in
memory (they see them without copying) merge one range each, encode and pack its leaves, and leave them in a
file in shared memory (/dev/shm); this process copies each range's leaves into the index file with sendfile,
in key order, while the workers make the next ranges, then writes the inner nodes above them
(linked.link_leaves).

The bytes are write_tree's: when every key has one stripe (a unique column: the case that needs this), leaves
hold btree.single_step() keys counted from the part's first key, so a range's worker knows its leaves from its
first key's position in the part (the keys of the runs below its splitter). The leaves that straddle two ranges
are sent back as keys and made here; so are the compression decisions that cross ranges (a probe leaf decides
the COMPRESS_PROBE_EVERY - 1 leaves after it: a worker leaves the leaves whose probe is not its own uncompressed,
and this process compresses them when their probe says so). When a range holds a key with several stripes,
leaves are cut by bytes from the part's first leaf on (btree._leaf_bounds), which no range can know alone:
the build then drops what it wrote this way and write_tree writes the part (write_ranged returns None), as it
does when the kernels are not built, for parts below RANGE_MIN_PAIRS pairs, on one CPU, without a usable
SHARED_DIR, and where processes cannot be forked.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metastore.index import btree, kernels
from metastore.index.container import FORMAT_VERSION, IndexFileWriter, _write_all, pack_block
from metastore.index.coverage import FileValues

#: parts of fewer (key, stripe) pairs are written by write_tree in this process
RANGE_MIN_PAIRS = 1 << 22
#: pairs a range holds, about (the number of ranges is at least twice the workers', at most MAX_RANGES)
RANGE_PAIRS = 1 << 22
MAX_RANGES = 256
#: processes making ranges (None: one per CPU); one CPU: write_tree in this process
WORKERS: int | None = None
#: where workers leave a range's packed leaves (a tmpfs); the same names as build.py's shared runs, so a build
#: killed meanwhile has its files swept by the next one
SHARED_DIR: str | None = "/dev/shm"
#: sample keys taken from each run to place the splitters
SAMPLE_PER_RUN = 256


@dataclass(frozen=True)
class _Job:
    """What the forked workers read (module global _JOB, inherited at the fork): the runs as
    btree.int_runs gives them, the splitters, the part's key count and leaf size, whether every stripe id fits
    16 bits, and where to leave the leaves."""

    runs: list[np.ndarray]
    ids: list[np.ndarray | None]
    bases: list[int]
    splitters: np.ndarray
    total: int
    step: int
    all16: bool
    id_bits: int
    directory: str
    prefix: str
    token: str


_JOB: _Job | None = None
_JOB_LOCK = threading.Lock()


@dataclass
class RangeLeaves:
    """One range's work: its first pair's position in the part (``start``) and its pairs (``size``); when
    ``repeated`` a key holds several stripes (nothing else is set). Else the leaves wholly inside the range,
    from leaf number ``first_leaf``, packed one after the other in the file ``path`` (per leaf: stored length,
    raw length, CRC-32, codec in ``blocks``; first key; key count), the first ``undecided`` of them stored raw
    because their probe leaf is not in the range; ``decision``: whether the leaves after the range's last probe
    are compressed (None: no probe in the range); ``head``/``tail``: the range's keys and ids before its first
    leaf and after its last (all of them when no leaf is inside)."""

    index: int
    start: int
    size: int
    repeated: bool = False
    first_leaf: int = 0
    path: str | None = None
    blocks: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), dtype=np.int64))
    firsts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    undecided: int = 0
    decision: bool | None = None
    head: tuple[np.ndarray, np.ndarray] | None = None
    tail: tuple[np.ndarray, np.ndarray] | None = None

    def discard(self) -> None:
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


def splitters_of(runs: Sequence[np.ndarray], ranges: int) -> np.ndarray:
    """Up to ``ranges - 1`` distinct ascending keys cutting the runs' keys into ranges of about equal size
    (quantiles of SAMPLE_PER_RUN keys from each run)."""
    picked = [r[:: max(1, len(r) // SAMPLE_PER_RUN)] for r in runs if len(r)]
    if not picked or ranges < 2:
        return np.zeros(0, dtype=np.int64)
    sample = np.sort(np.concatenate(picked))
    at = (len(sample) * np.arange(1, ranges, dtype=np.int64)) // ranges
    splitters = np.unique(sample[at])
    # a splitter at the smallest key leaves the first range empty: harmless, but no use
    return splitters[splitters > sample[0]].astype(np.int64)


def _usable_directory() -> str | None:
    directory = SHARED_DIR
    if directory is None or not os.path.isdir(directory) or not os.access(directory, os.W_OK):
        return None
    return directory


def write_ranged(writer: IndexFileWriter, files: Sequence[FileValues]) -> dict[str, Any] | None:
    """write_tree(writer, postings_of(files)) for int64 files, the same bytes, its leaves made in worker
    processes by key range; None (nothing written) when it does not apply (see the module's doc), and then the
    caller writes the tree itself."""
    compiled = kernels.native()
    if compiled is None or writer.version != FORMAT_VERSION:
        return None
    runs, run_ids, bases = btree.int_runs(files)
    total = sum(len(r) for r in runs)
    from metastore.stats.harvest.runner import worker_count, worker_pool

    workers = worker_count(WORKERS)
    directory = _usable_directory()
    if total < RANGE_MIN_PAIRS or workers < 2 or directory is None or not _can_fork():
        return None
    ranges = min(MAX_RANGES, max(2 * workers, -(-total // RANGE_PAIRS)))
    splitters = splitters_of(runs, ranges)
    if len(splitters) == 0:
        return None
    stripes = sum(len(f.stripes) for f in files)
    global _JOB
    # this build's own names (build.py's sweep still finds the pid): what a killed worker left is removed below
    token = os.urandom(6).hex()
    prefix = f"metastore-index-{os.getpid()}-ranged{token}-"
    job = _Job(runs, run_ids, bases, splitters, total, btree.single_step(), stripes <= 0x10000,
               max(1, (stripes - 1).bit_length()), directory, prefix, token)
    mark = writer.offset
    pool = worker_pool(workers)
    futures: list[Future[RangeLeaves]] = []
    taken: set[int] = set()
    try:
        # builds in other threads (a server's) set _JOB too: the pool's processes fork at the first submission,
        # so the job stays this build's until they have; each task checks it got this build's (token)
        with _JOB_LOCK:
            _JOB = job
            futures = [pool.submit(_range_task, r, token) for r in range(len(splitters) + 1)]
            _JOB = None
        assembler = _Assembler(writer, compiled, job)
        for r, future in enumerate(futures):
            result = future.result()
            taken.add(r)
            try:
                if result.repeated:
                    writer.truncate(mark)
                    return None
                assembler.add(result)
            finally:
                result.discard()
        return assembler.finish()
    except (BrokenProcessPool, OSError):
        # a worker died or shared memory ran out: this process writes the tree (what it wrote dropped)
        writer.truncate(mark)
        return None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for r, future in enumerate(futures):
            if r not in taken and future.done() and not future.cancelled() and future.exception() is None:
                future.result().discard()
        _remove_prefixed(directory, prefix)


def _can_fork() -> bool:
    """Whether worker_pool forks its processes (they see the runs, _JOB, without copies); elsewhere (spawned
    processes) this process writes the tree."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _remove_prefixed(directory: str, prefix: str) -> None:
    """Remove the files of one build's ranges left in ``directory`` (by workers killed while writing them)."""
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


#: keys a bucket of sort_pairs holds, about (a bucket's sort stays in the processor's cache)
BUCKET_PAIRS = 4096

#: per worker process, its arrays reused from range to range (fresh pages cost a fault each: 30-50 ms a range)
_BUFFERS: dict[str, np.ndarray] = {}


def _buffer(name: str, size: int, dtype: type) -> np.ndarray:
    """An array of ``size`` items kept in this process under ``name`` for the next range (contents undefined)."""
    kept = _BUFFERS.get(name)
    if kept is None or len(kept) < size or kept.dtype != dtype:
        kept = _BUFFERS[name] = np.empty(max(size, int(size * 1.25)), dtype=dtype)
    return kept[:size]


def _sorted_buckets(compiled: Any, runs: Sequence[np.ndarray], ids: Sequence[np.ndarray | None],
                    bases: Sequence[int], id_bits: int, total: int, reuse: bool,
                    ) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """The runs' pairs cut into buckets by pack_runs and each bucket sorted (sort_pairs's first steps): the packed
    numbers, the buckets' starts, the smallest key (low) and the shift; None when they do not fit 64 bits."""
    bits = min(20, max(0, (total // BUCKET_PAIRS).bit_length()))
    if reuse:
        packed = _buffer("packed", total, np.uint64)
        starts = _buffer("starts", (1 << bits) + 1, np.int64)
    else:
        packed = np.empty(total, dtype=np.uint64)
        starts = np.empty((1 << bits) + 1, dtype=np.int64)
    got = compiled.pack_runs(list(runs), list(ids), list(bases), packed, starts, bits, id_bits)
    if got is None:
        return None
    low, shift = got
    edges = starts.tolist()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        if b - a > 1:
            packed[a:b].sort()
    return packed, starts, int(low), int(shift)


def sort_pairs(compiled: Any, runs: Sequence[np.ndarray], ids: Sequence[np.ndarray | None], bases: Sequence[int],
               id_bits: int, out_keys: np.ndarray, out_ids: np.ndarray, *, reuse: bool = False) -> int:
    """The kernels' merge_runs (btree.int_runs's runs, whose ids ascend with the runs and along a run's equal
    keys: so by key, then id) into ``out_keys`` and uint32 ``out_ids``, by sorting instead of merging: the pairs
    cut into buckets of about BUCKET_PAIRS by their keys' top bits, each packed into one uint64 (key bits below
    the bucket's, then the id's ``id_bits`` bits), each bucket sorted by numpy (a vectorised sort), unpacked: 0.09 s
    for 4.2 M keys from 100 runs against merge_runs's 0.23 s. merge_runs itself when the keys' bits left and the
    id's do not fit 64 bits. Returns how many keys equal the key before them. ``reuse``: the scratch arrays are
    this process's kept ones (_buffer: a worker's, one range at a time)."""
    got = _sorted_buckets(compiled, runs, ids, bases, id_bits, len(out_keys), reuse)
    if got is None:
        return int(compiled.merge_runs(list(runs), list(ids), list(bases), out_keys, out_ids))
    packed, starts, low, shift = got
    return int(compiled.unpack_runs(packed, starts, low, shift, id_bits, out_keys, out_ids))


def _range_task(index: int, token: str) -> RangeLeaves:
    """In a forked worker: range ``index`` of _JOB (the build ``token`` names) sorted and cut into leaves
    (RangeLeaves). The kernels' encode_range takes the sorted buckets (or merge_runs's output where they do not
    fit) straight to the range's raw leaves with their CRCs, in one buffer; the leaves compressed (the probes, and
    those their probe says) are packed here and take their place when the leaves are written out."""
    job = _JOB
    compiled = kernels.native()
    if job is None or job.token != token or compiled is None:
        raise RuntimeError("a range task runs only in a worker forked by its own write_ranged")
    low = job.splitters[index - 1] if index > 0 else None
    high = job.splitters[index] if index < len(job.splitters) else None
    slices: list[np.ndarray] = []
    id_slices: list[np.ndarray | None] = []
    start = 0
    for run, ids in zip(job.runs, job.ids, strict=True):
        a = int(np.searchsorted(run, low, side="left")) if low is not None else 0
        b = int(np.searchsorted(run, high, side="left")) if high is not None else len(run)
        start += a
        slices.append(run[a:b])
        id_slices.append(None if ids is None else ids[a:b])
    size = sum(len(s) for s in slices)
    if size == 0:
        return RangeLeaves(index, start, 0, head=(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint32)))
    step, end = job.step, start + size
    first_leaf = -(-start // step)
    last = first_leaf  # leaves first_leaf..last-1 lie wholly inside the range
    while last * step < end and min((last + 1) * step, job.total) <= end:
        last += 1
    leaves = last - first_leaf
    lead = first_leaf * step - start if leaves else size
    last_size = min(last * step, job.total) - (last - 1) * step if leaves else step
    inside = (leaves - 1) * step + last_size if leaves else 0
    head = (np.empty(lead, dtype=np.int64), np.empty(lead, dtype=np.uint32))
    tail = (np.empty(size - lead - inside, dtype=np.int64), np.empty(size - lead - inside, dtype=np.uint32))
    out = _buffer("out", leaves * 14 + inside * 12, np.uint8)
    table = _buffer("table", leaves * 5, np.int64).reshape(leaves, 5)
    fixed = (lead, leaves, step, last_size, job.all16, out, table, head[0], head[1], tail[0], tail[1])
    got = _sorted_buckets(compiled, slices, id_slices, job.bases, job.id_bits, size, True)
    if got is None:
        keys = _buffer("keys", size, np.int64)
        ids32 = _buffer("ids", size, np.uint32)
        compiled.merge_runs(slices, id_slices, list(job.bases), keys, ids32)
        repeats = compiled.encode_range(None, None, 0, 0, 0, keys, ids32, *fixed)
    else:
        packed, starts, low_key, shift = got
        repeats = compiled.encode_range(packed, starts, low_key, shift, job.id_bits, None, None, *fixed)
    if repeats:
        return RangeLeaves(index, start, size, repeated=True)
    if leaves == 0:
        return RangeLeaves(index, start, size, head=head)
    blocks = np.zeros((leaves, 4), dtype=np.int64)
    blocks[:, 0] = blocks[:, 1] = table[:, 1]
    blocks[:, 2] = table[:, 2]
    every = btree.COMPRESS_PROBE_EVERY
    first_probe = -(-first_leaf // every) * every
    view = memoryview(out)  # type: ignore[arg-type]  # numpy arrays export the buffer protocol
    pieces: list[bytes | memoryview] = []
    raw_from = 0  # the first byte of out not yet in pieces
    decision: bool | None = None
    for probe in range(first_probe, last, every):
        run_end = min(probe + every, last)
        for leaf in range(probe, run_end):
            if leaf > probe and not decision:
                break
            i = leaf - first_leaf
            at, length = int(table[i, 0]), int(table[i, 1])
            block = pack_block(view[at : at + length], compress=True)
            if leaf == probe:
                decision = btree.compress_after_probe(block)
            if block[3]:
                pieces.append(view[raw_from:at])
                pieces.append(block[0])
                raw_from = at + length
                blocks[i] = (len(block[0]), block[1], block[2], block[3])
    pieces.append(view[raw_from : int(table[-1, 0] + table[-1, 1])])
    fd, path = tempfile.mkstemp(dir=job.directory, prefix=job.prefix)
    try:
        try:
            _write_all(fd, pieces)
        finally:
            os.close(fd)
    except BaseException:
        os.unlink(path)
        raise
    return RangeLeaves(
        index, start, size, first_leaf=first_leaf, path=path, blocks=blocks,
        firsts=table[:, 3].copy(), counts=table[:, 4].copy(),
        undecided=max(0, min(first_probe, last) - first_leaf), decision=decision, head=head, tail=tail,
    )


class _Assembler:
    """Writes the ranges' leaves in key order as they come (RangeLeaves of range 0, 1, ...): each range's own
    leaves copied from its file, the leaves straddling ranges made from their keys, the compression decisions
    carried from probe to probe as _pack_leaves carries them."""

    def __init__(self, writer: IndexFileWriter, compiled: Any, job: _Job) -> None:
        self.writer = writer
        self.compiled = compiled
        self.job = job
        self.next_leaf = 0  # the next leaf to write
        self.decision = True  # of the current probe run (leaf 0 is a probe, so never read before it is set)
        self.keys: list[np.ndarray] = []  # keys and ids not yet written (from the next leaf's first key on)
        self.ids: list[np.ndarray] = []
        self.pending = 0
        self.tables: list[np.ndarray] = []
        self.firsts: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []

    def _leaf_size(self, leaf: int) -> int:
        step = self.job.step
        return min((leaf + 1) * step, self.job.total) - leaf * step

    def _take(self, part: tuple[np.ndarray, np.ndarray] | None) -> None:
        """Add a range's keys outside its leaves, and write every leaf they complete."""
        if part is not None and len(part[0]):
            self.keys.append(part[0])
            self.ids.append(part[1])
            self.pending += len(part[0])
        while self.pending and self.pending >= self._leaf_size(self.next_leaf):
            keys = np.concatenate(self.keys) if len(self.keys) > 1 else self.keys[0]
            ids = np.concatenate(self.ids) if len(self.ids) > 1 else self.ids[0]
            n = self._leaf_size(self.next_leaf)
            self._write_made(keys[:n], ids[:n])
            self.keys, self.ids = ([keys[n:]], [ids[n:]]) if len(keys) > n else ([], [])
            self.pending -= n

    def _write_made(self, keys: np.ndarray, ids: np.ndarray) -> None:
        n = len(keys)
        small = self.job.all16 or int(ids.max()) <= 0xFFFF
        data = self.compiled.encode_int_leaf(keys, ids, None, 0, n, 0, n, small)
        if self.next_leaf % btree.COMPRESS_PROBE_EVERY == 0:
            block = pack_block(data, compress=True)
            self.decision = btree.compress_after_probe(block)
        else:
            block = pack_block(data, compress=self.decision)
        ref = self.writer.add_packed(block)
        self.tables.append(np.asarray([[ref.offset, ref.length, ref.raw_length, ref.crc, ref.codec]], dtype=np.int64))
        self.firsts.append(np.asarray([keys[0]], dtype=np.int64))
        self.counts.append(np.asarray([n], dtype=np.int64))
        self.next_leaf += 1

    def add(self, result: RangeLeaves) -> None:
        self._take(result.head)
        count = len(result.blocks)
        if count:
            if self.pending or self.next_leaf != result.first_leaf or result.path is None:
                raise AssertionError(f"range {result.index}'s leaves do not follow the leaves written before")
            blocks = result.blocks
            lengths = blocks[:, 0]
            skip = 0
            fd = os.open(result.path, os.O_RDONLY)
            try:
                if result.undecided and self.decision:
                    # raw leaves whose probe (written before) says compress: packed again here
                    u = result.undecided
                    raw = os.pread(fd, int(lengths[:u].sum()), 0)
                    repacked = []
                    at = 0
                    for length in lengths[:u].tolist():
                        repacked.append(pack_block(raw[at : at + length], compress=True))
                        at += length
                    refs = self.writer.add_packed_run(repacked)
                    self.tables.append(np.asarray([[r.offset, r.length, r.raw_length, r.crc, r.codec] for r in refs],
                                                  dtype=np.int64).reshape(-1, 5))
                    skip = u
                rest = int(lengths[skip:].sum())
                if skip < count:
                    start = self.writer.add_file_range(fd, int(lengths[:skip].sum()), rest)
                    offsets = start + np.cumsum(lengths[skip:]) - lengths[skip:]
                    # blocks' columns: stored length, raw length, CRC, codec (as linked.link_leaves takes them)
                    self.tables.append(np.column_stack([offsets, blocks[skip:]]))
            finally:
                os.close(fd)
            self.firsts.append(result.firsts)
            self.counts.append(result.counts)
            self.next_leaf += count
            if result.decision is not None:
                self.decision = result.decision
        self._take(result.tail)

    def finish(self) -> dict[str, Any]:
        from metastore.index.linked import link_leaves

        if self.pending:
            raise AssertionError("keys left after the last leaf")
        table = np.concatenate(self.tables) if self.tables else np.zeros((0, 5), dtype=np.int64)
        first = np.concatenate(self.firsts) if self.firsts else np.zeros(0, dtype=np.int64)
        count = np.concatenate(self.counts) if self.counts else np.zeros(0, dtype=np.int64)
        if int(count.sum()) != self.job.total:
            raise AssertionError(f"{int(count.sum())} keys in the leaves, not {self.job.total}")
        return link_leaves(self.writer, table, first, count)
