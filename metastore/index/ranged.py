"""A large int64 part's B+tree leaves made in forked worker processes, one key range each, and written by them
straight into the index file: the bytes write_tree writes, without the table-wide merge, the leaf encoding or a
copy of the leaves in this process.

write_tree over a part's postings merges every file's sorted run (100 runs, 50 M keys: 1-3 s of this
process's CPU even in two threads), then encodes, checksums and writes every leaf here (400 MB of fresh
memory). Here the keys are cut into RANGE_PAIRS-sized key ranges at splitters sampled from the runs (each run
split where a splitter would go, so equal keys always share a range); workers forked after the runs are in
memory (they see them without copying) sort one range each and encode and checksum its leaves in one pass (the
kernels' encode_range) into a file of its own in a tmpfs (SHARED_DIR: unlinked at once, mapped, kept from range
to range), then, in key order, each sends its range's leaves on into the index file being written (its
temporary name: nothing is published before the parent's finish) at the offset where the ranges before it
ended, by sendfile: a copy in the kernel (on this VM 400 MB took 0.18-0.21 s of CPU that way against 1.2-1.6 s
written from a process's memory into new page cache; without a tmpfs the workers do the latter). The order is
kept by a turn in shared memory (_Turn): the worker of range r waits until range r - 1 is written, takes the end
offset, the compression decision in force and the keys left over (fewer than a leaf), makes the leaf straddling
the two ranges from them, writes, and hands the turn on. This process then writes the inner nodes above the
leaves (linked.link_leaves).

The bytes are write_tree's: when every key has one stripe (a unique column: the case that needs this), leaves
hold btree.single_step() keys counted from the part's first key, so a range's worker knows its leaves from its
first key's position in the part (the keys of the runs below its splitter). Compression decisions cross ranges
(a probe leaf decides the COMPRESS_PROBE_EVERY - 1 leaves after it): a range's leaves before its first probe are
made raw and compressed at its turn when the decision handed on says so. When a range holds a key with several
stripes, leaves are cut by bytes from the part's first leaf on (btree._leaf_bounds), which no range can know
alone: the build then drops what was written this way and write_tree writes the part (write_ranged returns
None), as it does when the kernels are not built, for parts below RANGE_MIN_PAIRS pairs, on one CPU, and where
processes cannot be forked.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metastore.index import btree, kernels
from metastore.index.container import FORMAT_VERSION, IndexFileWriter, PackedBlock, pack_block, write_all
from metastore.index.coverage import FileValues
from metastore.index.linked import link_leaves
from metastore.index.pairsort import kept_buffer, sorted_buckets

#: parts of fewer (key, stripe) pairs are written by write_tree in this process
RANGE_MIN_PAIRS = 1 << 22
#: pairs a range holds, about (the number of ranges is at least twice the workers', at most MAX_RANGES)
RANGE_PAIRS = 1 << 22
MAX_RANGES = 256
#: processes making ranges (None: one per CPU); one CPU: write_tree in this process
WORKERS: int | None = None
#: sample keys taken from each run to place the splitters
SAMPLE_PER_RUN = 256
#: a tmpfs where each worker keeps the file its ranges' leaves are encoded into (sent on into the index file by
#: sendfile); None or missing: a private buffer, written with pwrite (slower on this VM, same bytes)
SHARED_DIR: str | None = "/dev/shm"
#: how long a worker sleeps between looks at the turn (seconds)
TURN_POLL = 0.0005


class _Turn:
    """What the workers of one build share (an anonymous shared mapping made before the fork, and a lock): whose
    turn it is to write (a range number), where the leaves written so far end in the index file, whether the
    build gave up (a range holds a repeated key, or this process stopped it), the compression decision in force
    (of the last probe written), the next leaf's number and the keys and ids left over after the last leaf
    written (fewer than a leaf). Only the worker whose turn it is writes them, the turn last."""

    _FIELDS = 8  # turn, end, gave_up, decision, next_leaf, carried, and two spare

    def __init__(self, start: int, step: int) -> None:
        self.step = step
        self.map = mmap.mmap(-1, 8 * self._FIELDS + 12 * step + 8)
        self.state = np.frombuffer(self.map, dtype=np.int64, count=self._FIELDS)
        self.keys = np.frombuffer(self.map, dtype=np.int64, count=step, offset=8 * self._FIELDS)
        self.ids = np.frombuffer(self.map, dtype=np.uint32, count=step, offset=8 * self._FIELDS + 8 * step)
        self.lock = multiprocessing.get_context("fork").Lock()
        self.state[:] = (0, start, 0, 1, 0, 0, 0, 0)

    @property
    def gave_up(self) -> bool:
        return bool(self.state[2])

    def give_up(self) -> None:
        self.state[2] = 1  # read without the lock: a flag that only ever goes from 0 to 1

    def wait(self, index: int, parent: int) -> bool:
        """Wait until it is range ``index``'s turn; False when the build gave up (or its process is gone)."""
        while True:
            if self.gave_up or os.getppid() != parent:
                return False
            if self.lock.acquire(timeout=0.1):
                try:
                    if int(self.state[0]) == index:
                        return True
                finally:
                    self.lock.release()
            time.sleep(TURN_POLL)

    def hand_on(self, index: int, end: int, decision: bool, next_leaf: int, keys: np.ndarray,
                ids: np.ndarray) -> None:
        with self.lock:
            n = len(keys)
            self.keys[:n] = keys
            self.ids[:n] = ids
            self.state[1], self.state[3], self.state[4], self.state[5] = end, int(decision), next_leaf, n
            self.state[0] = index + 1


@dataclass(frozen=True)
class _Job:
    """What the forked workers read (module global _JOB, inherited at the fork): the runs as
    btree.int_runs gives them, the splitters, the part's key count and leaf size, whether every stripe id fits
    16 bits, the index file's temporary name, the turn, and the build's process."""

    runs: list[np.ndarray]
    ids: list[np.ndarray | None]
    bases: list[int]
    splitters: np.ndarray
    total: int
    step: int
    all16: bool
    id_bits: int
    target: str
    turn: _Turn
    parent: int
    token: str


_JOB: _Job | None = None
_JOB_LOCK = threading.Lock()


@dataclass
class RangeLeaves:
    """What a range's worker wrote: the leaves from number ``first_leaf`` (the one straddling the range before,
    if any, then the range's own), per leaf its reference in the index file (offset, stored length, raw length,
    CRC-32, codec: ``table``), first key and key count; ``end``: where the leaves written so far end. When
    ``repeated`` a key holds several stripes, or the build gave up before this range's turn: nothing written."""

    index: int
    repeated: bool = False
    first_leaf: int = 0
    end: int = 0
    table: np.ndarray = field(default_factory=lambda: np.zeros((0, 5), dtype=np.int64))
    firsts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


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


def write_ranged(writer: IndexFileWriter, files: Sequence[FileValues]) -> dict[str, Any] | None:
    """write_tree(writer, postings_of(files)) for int64 files, the same bytes, its leaves made and written in
    worker processes by key range; None (nothing written) when it does not apply (see the module's doc), and
    then the caller writes the tree itself."""
    compiled = kernels.native()
    if compiled is None or writer.version != FORMAT_VERSION:
        return None
    runs, run_ids, bases = btree.int_runs(files)
    total = sum(len(r) for r in runs)
    from metastore.stats.harvest.runner import worker_count, worker_pool

    workers = worker_count(WORKERS)
    if total < RANGE_MIN_PAIRS or workers < 2 or not _can_fork():
        return None
    ranges = min(MAX_RANGES, max(2 * workers, -(-total // RANGE_PAIRS)))
    splitters = splitters_of(runs, ranges)
    if len(splitters) == 0:
        return None
    stripes = sum(len(f.stripes) for f in files)
    global _JOB
    token = os.urandom(6).hex()
    target, mark = writer.hand_over()
    step = btree.single_step()
    turn = _Turn(mark, step)
    job = _Job(runs, run_ids, bases, splitters, total, step, stripes <= 0x10000,
               max(1, (stripes - 1).bit_length()), target, turn, os.getpid(), token)
    pool = worker_pool(workers)
    futures: list[Future[RangeLeaves]] = []
    try:
        # builds in other threads (a server's) set _JOB too: the pool's processes fork at the first submission,
        # so the job stays this build's until they have; each task checks it got this build's (token)
        with _JOB_LOCK:
            _JOB = job
            futures = [pool.submit(_range_task, r, token) for r in range(len(splitters) + 1)]
            _JOB = None
        collector = _Collector(writer, job)
        for future in futures:
            result = future.result()
            if result.repeated:
                break
            collector.add(result)
        else:
            pool.shutdown(wait=True)
            return collector.finish()
    except (BrokenProcessPool, OSError):
        pass  # a worker died or the file could not be written: this process writes the tree
    finally:
        turn.give_up()  # workers still waiting for their turn (a repeated key, or this build failed) stop
        pool.shutdown(wait=True, cancel_futures=True)
    # every worker gone (none writes any more): what they wrote is dropped
    writer.truncate(mark)
    return None


def _can_fork() -> bool:
    """Whether worker_pool forks its processes (they see the runs, _JOB, without copies); elsewhere (spawned
    processes) this process writes the tree."""
    return "fork" in multiprocessing.get_all_start_methods()


#: per worker process, the tmpfs file its ranges' leaves are encoded into (descriptor, mapping, size)
_OUT: dict[str, Any] = {}


def _out_buffer(size: int) -> tuple[np.ndarray, int | None]:
    """A buffer of ``size`` bytes for a range's leaves, and the descriptor of the file backing it: an unlinked
    file in SHARED_DIR (a tmpfs; nothing is left behind whatever happens to the worker), mapped, kept for the
    worker's next ranges. A private buffer (descriptor None) where there is no such directory or the file
    cannot be made."""
    directory = SHARED_DIR
    if directory is None or not os.path.isdir(directory):
        return kept_buffer("out", size, np.uint8), None
    if _OUT.get("size", -1) < size:
        grown = max(size + size // 4, 1 << 16)
        try:
            # build.py's name for shared files: one a killed worker left between these two lines is swept
            fd, path = tempfile.mkstemp(dir=directory, prefix=f"metastore-index-{os.getpid()}-ranged-")
        except OSError:
            return kept_buffer("out", size, np.uint8), None
        try:
            os.unlink(path)
            os.ftruncate(fd, grown)
            mapped = mmap.mmap(fd, grown)
        except OSError:
            os.close(fd)
            return kept_buffer("out", size, np.uint8), None
        if "fd" in _OUT:
            os.close(_OUT["fd"])  # the old mapping stays valid while arrays use it
        _OUT.update(fd=fd, map=mapped, size=grown)
    return np.frombuffer(_OUT["map"], dtype=np.uint8, count=size), _OUT["fd"]


def _range_task(index: int, token: str) -> RangeLeaves:
    """In a forked worker: range ``index`` of _JOB (the build ``token`` names) sorted and cut into leaves, which
    are written into the index file at its turn (_write_in_turn). The kernels' encode_range takes the sorted
    buckets (or merge_runs's output where they do not fit) straight to the range's raw leaves with their CRCs,
    in one buffer; the leaves compressed (the probes, and those their probe says) are packed here and take
    their place when the leaves are written."""
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
    out, source = _out_buffer(leaves * 14 + inside * 12)
    table = kept_buffer("table", leaves * 5, np.int64).reshape(leaves, 5)
    if size:
        fixed = (lead, leaves, step, last_size, job.all16, out, table, head[0], head[1], tail[0], tail[1])
        got = sorted_buckets(compiled, slices, id_slices, job.bases, job.id_bits, size, True)
        if got is None:
            keys = kept_buffer("keys", size, np.int64)
            ids32 = kept_buffer("ids", size, np.uint32)
            compiled.merge_runs(slices, id_slices, list(job.bases), keys, ids32)
            repeats = compiled.encode_range(None, None, 0, 0, 0, keys, ids32, *fixed)
        else:
            packed, starts, low_key, shift = got
            repeats = compiled.encode_range(packed, starts, low_key, shift, job.id_bits, None, None, *fixed)
        if repeats:
            job.turn.give_up()
            return RangeLeaves(index, repeated=True)
    # stored length, raw length, CRC, codec of each own leaf: raw unless packed below
    blocks = np.zeros((leaves, 4), dtype=np.int64)
    blocks[:, 0] = blocks[:, 1] = table[:, 1]
    blocks[:, 2] = table[:, 2]
    every = btree.COMPRESS_PROBE_EVERY
    first_probe = -(-first_leaf // every) * every
    view = memoryview(out)  # type: ignore[arg-type]  # numpy arrays export the buffer protocol
    packed_leaves: dict[int, PackedBlock] = {}  # own leaf number (from 0) -> its block when compressed
    decision: bool | None = None
    for probe in range(first_probe, last, every):
        for leaf in range(probe, min(probe + every, last)):
            if leaf > probe and not decision:
                break
            i = leaf - first_leaf
            at, length = int(table[i, 0]), int(table[i, 1])
            block = pack_block(view[at : at + length], compress=True)
            if leaf == probe:
                decision = btree.compress_after_probe(block)
            if block[3]:
                packed_leaves[i] = block
    return _write_in_turn(job, compiled, index, first_leaf, head, tail, view, source, table, blocks,
                          packed_leaves, max(0, min(first_probe, last) - first_leaf), decision)


def _write_pieces(fd: int, at: int, pieces: Sequence[bytes | tuple[int, int]], view: memoryview,
                  source: int | None) -> None:
    """Write ``pieces`` one after the other into the file ``fd`` from offset ``at``: bytes as they are, (offset,
    length) spans of ``view`` (the range's raw leaves) by sendfile from the tmpfs file ``source`` that backs it
    (a copy in the kernel: on this VM writing 400 MB from a process's memory into a new ext4 file took 1.2-1.6 s
    of CPU, sendfile from tmpfs 0.18-0.21 s), or written from the view when there is none."""
    for piece in pieces:
        if not isinstance(piece, tuple):
            write_all(fd, [piece], at)
            at += len(piece)
            continue
        offset, length = piece
        if source is None:
            write_all(fd, [view[offset : offset + length]], at)
        else:
            os.lseek(fd, at, os.SEEK_SET)
            done = 0
            while done < length:
                sent = os.sendfile(fd, source, offset + done, length - done)
                if sent <= 0:
                    raise OSError(f"the range's leaves ended after {done} of {length} bytes")
                done += sent
        at += length


def _write_in_turn(job: _Job, compiled: Any, index: int, first_leaf: int, head: tuple[np.ndarray, np.ndarray],
                   tail: tuple[np.ndarray, np.ndarray], view: memoryview, source: int | None, table: np.ndarray,
                   blocks: np.ndarray, packed_leaves: dict[int, PackedBlock], undecided: int,
                   decision: bool | None) -> RangeLeaves:
    """At range ``index``'s turn: the leaf straddling the range before it (from the keys it left and this range's
    ``head``), the range's own leaves (``view``, ``table``, ``blocks``; those in ``packed_leaves`` compressed,
    the first ``undecided`` compressed now when the decision in force says so) written into the index file
    where the leaves before end; the turn handed on with this range's ``tail`` left over."""
    turn = job.turn
    if not turn.wait(index, job.parent):
        return RangeLeaves(index, repeated=True)
    end, in_force, next_leaf, carried = (int(v) for v in (turn.state[1], turn.state[3], turn.state[4],
                                                          turn.state[5]))
    compress = bool(in_force)
    keys = np.concatenate([turn.keys[:carried], head[0]])
    ids = np.concatenate([turn.ids[:carried], head[1]])
    pieces: list[bytes | tuple[int, int]] = []  # bytes, or (offset, length) of raw leaves in out
    made: list[tuple[int, int, int, int, int]] = []  # straddling leaves: offset, stored, raw, crc, codec
    made_firsts: list[int] = []
    made_counts: list[int] = []
    at = end
    written_from = next_leaf
    while len(keys) and len(keys) >= min((next_leaf + 1) * job.step, job.total) - next_leaf * job.step:
        n = min((next_leaf + 1) * job.step, job.total) - next_leaf * job.step
        small = job.all16 or int(ids[:n].max()) <= 0xFFFF
        data = compiled.encode_int_leaf(keys, ids, None, 0, n, 0, n, small)
        if next_leaf % btree.COMPRESS_PROBE_EVERY == 0:
            block = pack_block(data, compress=True)
            compress = btree.compress_after_probe(block)
        else:
            block = pack_block(data, compress=compress)
        pieces.append(block[0])
        made.append((at, len(block[0]), block[1], block[2], block[3]))
        made_firsts.append(int(keys[0]))
        made_counts.append(n)
        at += len(block[0])
        next_leaf += 1
        keys, ids = keys[n:], ids[n:]
    own = len(table)
    if own:
        if len(keys) or next_leaf != first_leaf:
            raise AssertionError(f"range {index}'s leaves do not follow the leaves written before")
        if undecided and compress:
            # raw leaves whose probe (in a range before) says compress
            for i in range(undecided):
                a, length = int(table[i, 0]), int(table[i, 1])
                block = pack_block(view[a : a + length], compress=True)
                if block[3]:
                    packed_leaves[i] = block
        raw_from = 0
        for i in sorted(packed_leaves):
            stored, raw_length, crc, codec = packed_leaves[i]
            a = int(table[i, 0])
            pieces.append((raw_from, a - raw_from))
            pieces.append(stored)
            raw_from = a + raw_length
            blocks[i] = (len(stored), raw_length, crc, codec)
        pieces.append((raw_from, int(table[-1, 0] + table[-1, 1]) - raw_from))
        if decision is not None:
            compress = decision
        next_leaf += own
        keys, ids = tail
    offsets = at + np.cumsum(blocks[:, 0]) - blocks[:, 0]
    total = sum(p[1] if isinstance(p, tuple) else len(p) for p in pieces)
    fd = os.open(job.target, os.O_WRONLY)
    try:
        _write_pieces(fd, end, pieces, view, source)
    finally:
        os.close(fd)
    turn.hand_on(index, end + total, compress, next_leaf, keys, ids)
    made_table = np.asarray(made, dtype=np.int64).reshape(-1, 5)
    return RangeLeaves(
        index, first_leaf=written_from, end=end + total,
        table=np.concatenate([made_table, np.column_stack([offsets, blocks])]) if own else made_table,
        firsts=np.concatenate([np.asarray(made_firsts, dtype=np.int64), table[:, 3]]),
        counts=np.concatenate([np.asarray(made_counts, dtype=np.int64), table[:, 4]]),
    )


class _Collector:
    """Takes the ranges' results in key order (RangeLeaves of range 0, 1, ...): the leaves' references for the
    inner nodes, the writer told where the leaves written into its file end."""

    def __init__(self, writer: IndexFileWriter, job: _Job) -> None:
        self.writer = writer
        self.job = job
        self.next_leaf = 0
        self.tables: list[np.ndarray] = []
        self.firsts: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []

    def add(self, result: RangeLeaves) -> None:
        count = len(result.table)
        if count and result.first_leaf != self.next_leaf:
            raise AssertionError(f"range {result.index}'s leaves do not follow the leaves written before")
        self.tables.append(result.table)
        self.firsts.append(result.firsts)
        self.counts.append(result.counts)
        self.next_leaf += count
        self.writer.adopt(result.end)

    def finish(self) -> dict[str, Any]:
        if int(self.job.turn.state[5]):
            raise AssertionError("keys left after the last leaf")
        table = np.concatenate(self.tables) if self.tables else np.zeros((0, 5), dtype=np.int64)
        first = np.concatenate(self.firsts) if self.firsts else np.zeros(0, dtype=np.int64)
        count = np.concatenate(self.counts) if self.counts else np.zeros(0, dtype=np.int64)
        if int(count.sum()) != self.job.total:
            raise AssertionError(f"{int(count.sum())} keys in the leaves, not {self.job.total}")
        return link_leaves(self.writer, table, first, count)
