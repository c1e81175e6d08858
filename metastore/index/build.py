"""Building and updating an index's files from the table's data files.

``plan_parts`` groups the data files by the index level; ``build_parts`` writes each part whose files changed
(files added, rewritten or removed, by path, size and mtime) and keeps the others as they are. A rewritten part
takes the stripe values of its unchanged files from the old part file (parts.PartReader.reuse), so only new
and changed data files are scanned. The scan itself is pluggable: by default files are scanned in this process,
one after another, or, from PARALLEL_MIN_BYTES of data files on, in worker processes (the pool of ANALYZE's
harvest runner, one per CPU); or all at once by a ``scanner`` (the Spark pipeline's executors). Each part is
written as soon as the last of its files arrives, in plan order, so a STRIPE-level build never holds more than
the files in flight and the index files do not depend on where or in which order files were scanned. A BLOOM or
MINMAX part of one data file is written where that file is scanned (WORKER_WRITTEN_KINDS: its filters or bounds
never travel to this process). Part files are staged (written in full under a temporary name) and published
(synced, renamed into place) by PUBLISH_THREADS threads while the build goes on; build_parts returns once all
are published. New part files get new names; the caller records them, then deletes the obsolete ones, so a
reader never sees a half-written part.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

import numpy as np

from metastore.index.columns import ColumnType, Domain, column_type, require_indexable
from metastore.index.container import StagedFile
from metastore.index.coverage import FileValues, StripeValues
from metastore.index.errors import IndexBuildError
from metastore.index.linked import planner
from metastore.index.model import DataFile, IndexKind, IndexLevel, IndexPart, IndexRecord
from metastore.index.parts import open_part, stage_part_at
from metastore.index.scan import scan_column
from metastore.locations import local_path
from metastore.storage import StorageOptions

DEFAULT_FPP = 0.001

#: scans data files and yields each file's values, in any order
Scanner = Callable[[Sequence[DataFile]], Iterable[FileValues]]


@dataclass(frozen=True)
class BuildTarget:
    """The data files of the table ('' partition) or of one partition, as listed now."""

    partition: str
    files: tuple[DataFile, ...]


@dataclass(frozen=True)
class PlannedPart:
    key: str
    partition: str
    files: tuple[DataFile, ...]


@dataclass
class BuildReport:
    """What a build did: the parts now recorded, the part files to delete once recorded, and the work done."""

    parts: list[IndexPart] = field(default_factory=list)
    obsolete: list[str] = field(default_factory=list)
    files_scanned: int = 0
    bytes_scanned: int = 0
    files_reused: int = 0
    parts_written: int = 0
    parts_kept: int = 0
    bytes_written: int = 0
    seconds: float = 0.0


def plan_parts(level: IndexLevel, targets: Sequence[BuildTarget]) -> list[PlannedPart]:
    """The parts of an index at ``level`` over the targets' files (in a stable order)."""
    if level is IndexLevel.STRIPE:
        return [PlannedPart(f.path, t.partition, (f,)) for t in targets for f in t.files]
    if level is IndexLevel.PARTITION:
        return [PlannedPart(t.partition, t.partition, t.files) for t in targets]
    files = tuple(f for t in targets for f in t.files)
    return [PlannedPart("", "", files)]


def fpp_of(record: IndexRecord) -> float:
    """The BLOOM false-positive rate of an index (`bloom.fpp`, default 0.001)."""
    return float(record.properties.get("bloom.fpp", DEFAULT_FPP))


def part_location(record: IndexRecord, key: str) -> str:
    """A new, unique location for a part of the index (a new name per build, never overwriting)."""
    digest = hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    token = f"{time.time_ns():x}"
    return f"{record.location.rstrip('/')}/part-{digest}-{token}.idx"


def bounds_only(record: IndexRecord) -> bool:
    """Whether the index needs only each stripe's smallest and largest key (MINMAX), not its distinct keys."""
    return record.kind is IndexKind.MINMAX


#: Data files of at least this many bytes in all are scanned in worker processes (for POOLED_KINDS); below it,
#: one process scans them faster than a pool starts (bench/bench_index.py --sections 6 measures the crossover:
#: in BENCHMARKS.md, BLOOM and MINMAX gain 1.1-1.2x from 16 MiB and 1.4-1.7x at 97.5 MiB on two cores).
PARALLEL_MIN_BYTES = 16 << 20
#: Index kinds whose builds use the pool: all. BLOOM filters and MINMAX bounds are made where the file is
#: scanned and come back small; a BTREE's worker sends its stripes' sorted keys back (they once came as one
#: merged run of the file, scan_file's ``merge``, so the parent merged 50 runs instead of 1,000; the table-wide
#: sort now packs and sorts pairs by key range, pairsort.sort_pairs, whose cost does not grow with the runs).
#: The keys travel as narrow gaps when the file's stripes are in order already (a sorted column), else through
#: a file in SHARED_DIR when they are large (_scan_packed): piping 4-5 MB a file cost the scan half its time.
#: When the footers say the files' key ranges do not overlap, the worker sends the file's finished leaves instead
#: (linked.py), and the parent only writes them. A large part of overlapping unique keys is merged and cut into
#: leaves by key range in workers forked when it is written (ranged.py).
POOLED_KINDS = frozenset({IndexKind.BTREE, IndexKind.BLOOM, IndexKind.MINMAX})
#: processes of a pooled local scan (None: one per CPU, as ANALYZE's harvest runner)
WORKERS: int | None = None
#: Index kinds whose parts of one data file (STRIPE level) a local scan writes itself, where the file is scanned
#: (a pool's worker): 700 stripes' BLOOM filters are 100 MB that were pickled, piped, unpickled and copied
#: into the part in this process (about 0.5 s of CPU a 50 M-row build). A BTREE part is written here.
WORKER_WRITTEN_KINDS = frozenset({IndexKind.BLOOM, IndexKind.MINMAX})
#: threads publishing staged part files (sync, rename into place) while the build goes on: syncs one after the
#: other in the build's loop waited for the disk at every part
PUBLISH_THREADS = 4


@dataclass(frozen=True)
class OwnParts:
    """Parts a local scan writes itself (WORKER_WRITTEN_KINDS): the index kind and rate, and the location of
    each data file's part by the file's identity."""

    kind: str
    fpp: float
    locations: dict[tuple[str, int, int], str]


def scan_file(
    file: DataFile, column: str, ctype: ColumnType, position: int | None, options: StorageOptions | None = None,
    *, bounds: bool = False, bloom_fpp: float | None = None, merge: bool = False,
) -> FileValues:
    """One data file's values as a build uses them: per stripe its distinct keys (``bounds``: only the smallest
    and largest), or, with ``bloom_fpp``, the stripe's bloom filter at that rate instead of its keys (what a
    BLOOM part is written from; computed where the file is scanned, so a worker process returns filters, not
    keys). ``merge`` (a BTREE's worker, int64 keys): the stripes' keys as one sorted run of the file
    (FileValues.merged), so the worker does part of the sort the tree needs."""
    values = scan_column(file, column, ctype, position, options, bounds_only=bounds, bloom_fpp=bloom_fpp)
    if merge and bloom_fpp is None and ctype.domain is Domain.INT64:
        return values.merge_stripes()
    return values


def _write_own(
    values: FileValues, part: tuple[str, str, float], column: str, ctype: ColumnType, options: StorageOptions | None,
) -> FileValues:
    """The part (location, kind, rate) of one scanned file, written (staged) here: the file's values with the
    staged part in ``written`` and the stripes' values dropped. The same bytes as build_parts writes from them."""
    location, kind, fpp = part
    staged = stage_part_at(location, kind=kind, column=column, ctype=ctype, files=[values], fpp=fpp, options=options)
    stripes = [StripeValues(s.offset, s.length, s.rows, s.distinct[:0], s.nulls, s.values) for s in values.stripes]
    return FileValues(values.file, stripes, written=staged)


def local_scanner(
    column: str, ctype: ColumnType, position: int | None, options: StorageOptions | None = None,
    *, bounds: bool = False, bloom_fpp: float | None = None, workers: int | None = None,
    parallel_min_bytes: int | None = None, merge: bool = False,
    leaves: Callable[[], Mapping[tuple[str, int, int], tuple[int, int]]] | None = None,
    own_parts: OwnParts | None = None,
) -> Scanner:
    """Scan files in this process, or in ``workers`` processes (default: one per CPU) when there are several
    files of at least ``parallel_min_bytes`` (default PARALLEL_MIN_BYTES) in all; see scan_file for ``bounds``
    and ``bloom_fpp``; ``merge``: pooled workers send each file's int64 keys as one sorted run (scan_file);
    ``leaves`` (asked for only when the scan is pooled; linked.plan_file_leaves): files whose pooled workers
    send finished B+tree leaves instead, each with its first stripe id in its part and its stripe count;
    ``own_parts``: the files whose parts are written where they are scanned (FileValues.written). Files come
    back as they finish."""
    threshold = PARALLEL_MIN_BYTES if parallel_min_bytes is None else parallel_min_bytes
    locations = own_parts.locations if own_parts is not None else {}

    def part_of(f: DataFile) -> tuple[str, str, float] | None:
        location = locations.get(f.identity)
        return None if location is None or own_parts is None else (location, own_parts.kind, own_parts.fpp)

    def scan(files: Sequence[DataFile]) -> Iterable[FileValues]:
        from metastore.stats.harvest.runner import worker_count

        pool_size = min(worker_count(workers), len(files))
        if pool_size <= 1 or sum(f.size for f in files) < threshold:
            for f in files:
                values = scan_file(f, column, ctype, position, options, bounds=bounds, bloom_fpp=bloom_fpp)
                part = part_of(f)
                yield values if part is None else _write_own(values, part, column, ctype, options)
            return
        yield from _pooled(files, pool_size, column, ctype, position, options, bounds, bloom_fpp, merge,
                           leaves() if leaves is not None and merge else None, part_of)

    return scan


#: where pooled BTREE workers leave merged runs of at least SHARED_MIN_BYTES for the parent to map (a tmpfs;
#: None or missing: runs are pickled through the pool's pipe). Measured with two forked workers: 100 results
#: of 5 MB took 1.3-2.2 s through the pipe (parent CPU 0.5-1.3 s), 0.64-0.66 s through /dev/shm (0.02 s).
SHARED_DIR: str | None = "/dev/shm"
SHARED_MIN_BYTES = 1 << 20
_SHARED_PREFIX = "metastore-index-"


def _shared_prefix(parent: int) -> str:
    return f"{_SHARED_PREFIX}{parent}-"


def _sweep_shared(directory: str) -> None:
    """Remove runs that builds of processes no longer alive left in ``directory`` (killed before mapping them)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not name.startswith(_SHARED_PREFIX):
            continue
        pid = name[len(_SHARED_PREFIX):].partition("-")[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _scan_packed(
    file: DataFile, column: str, ctype: ColumnType, position: int | None, options: StorageOptions | None,
    *, bounds: bool, bloom_fpp: float | None, merge: bool, shared: tuple[str, int] | None = None,
    leaves: tuple[int, int] | None = None, part: tuple[str, str, float] | None = None,
) -> FileValues:
    """scan_file in a pool's worker, its values packed for the trip to the parent (FileValues.packed: a
    sorted column's keys as narrow gaps, a few hundred KB a file instead of 4 MB of int64 through the pool's
    pipe; ``shared``, the directory and the parent's pid: the stripes' keys, from SHARED_MIN_BYTES on, in a file
    there, FileValues.to_shared); the parent unpacks them. ``leaves``, the file's first stripe id in its part
    and its stripe count: the file's finished B+tree leaves instead (linked.with_leaves), when the scan found
    that many stripes (the bytes in a file in ``shared``'s directory from SHARED_MIN_BYTES on). ``part``: the
    file's part written here instead (_write_own)."""
    # the stripes' sorted keys are sent as they are, not merged into one run of the file (merge_stripes, 10 ms
    # a file of 500,000 keys): the parent's tree sorts them whatever the number of runs (pairsort.sort_pairs)
    values = scan_file(file, column, ctype, position, options, bounds=bounds, bloom_fpp=bloom_fpp)
    if part is not None:
        return _write_own(values, part, column, ctype, options)
    if not merge or bounds or bloom_fpp is not None:
        return values
    if leaves is not None and len(values.stripes) == leaves[1] and ctype.domain is Domain.INT64:
        from metastore.index.linked import with_leaves

        linked = with_leaves(values, leaves[0])
        if shared is not None and linked.leaves is not None and len(linked.leaves.blob) >= SHARED_MIN_BYTES:
            try:
                return replace(linked, leaves=linked.leaves.to_shared(shared[0], _shared_prefix(shared[1])))
            except OSError:
                return linked  # no room in shared memory: through the pipe
        return linked
    values = values.packed()
    if shared is not None and _key_bytes(values) >= SHARED_MIN_BYTES:
        try:
            return values.to_shared(shared[0], _shared_prefix(shared[1]))
        except OSError:
            return values  # no room in shared memory: through the pipe
    return values


def _key_bytes(values: FileValues) -> int:
    """The bytes of a file's keys (and ids) as FileValues.to_shared would write them (none once packed as gaps)."""
    if values.merged is not None:
        return int(values.merged[0].nbytes + values.merged[1].nbytes)
    if values.gaps is not None:
        return 0
    return sum(int(s.distinct.nbytes) for s in values.stripes if s.distinct.dtype == np.int64)


def _pooled(
    files: Sequence[DataFile], pool_size: int, column: str, ctype: ColumnType, position: int | None,
    options: StorageOptions | None, bounds: bool, bloom_fpp: float | None, merge: bool = False,
    leaves: Mapping[tuple[str, int, int], tuple[int, int]] | None = None,
    part_of: Callable[[DataFile], tuple[str, str, float] | None] = lambda f: None,
) -> Iterator[FileValues]:
    """Files shared out to the harvest runner's pool (forked workers that keep freed memory), largest first so
    the last file to finish is a small one; results as they finish. The first error stops the scan."""
    from metastore.stats.harvest.runner import worker_pool

    shared = None
    if merge and SHARED_DIR is not None and os.path.isdir(SHARED_DIR) and os.access(SHARED_DIR, os.W_OK):
        _sweep_shared(SHARED_DIR)
        shared = (SHARED_DIR, os.getpid())
    pool = worker_pool(pool_size)
    submitted = []
    taken = set()
    try:
        pending = {
            pool.submit(_scan_packed, f, column, ctype, position, options, bounds=bounds, bloom_fpp=bloom_fpp,
                        merge=merge, shared=shared, leaves=leaves.get(f.identity) if leaves else None,
                        part=part_of(f))
            for f in sorted(files, key=lambda f: -f.size)
        }
        submitted = list(pending)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                taken.add(future)
                yield future.result().unpacked()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        # runs the workers left in shared memory that this build will not map, and parts they staged that it will
        # not publish (it failed or was stopped)
        for future in submitted:
            if future not in taken and future.done() and not future.cancelled() and future.exception() is None:
                future.result().discard()


def build_parts(
    record: IndexRecord,
    targets: Sequence[BuildTarget],
    *,
    column_position: int | None,
    previous: Sequence[IndexPart] = (),
    force: bool = False,
    on_file: Callable[[DataFile], None] | None = None,
    scanner: Scanner | None = None,
    options: StorageOptions | None = None,
) -> BuildReport:
    """Write the parts of ``record`` over the targets' files; parts whose files are unchanged are kept unless
    ``force``. ``column_position`` places the column in positional (``_colN``) files. IndexBuildError names a
    data file that cannot be read."""
    started = time.perf_counter()
    ctype = column_type(record.column_type, record.column)
    require_indexable(ctype, record.column)
    report = BuildReport()
    old_by_key = {p.key: p for p in previous}
    planned = plan_parts(record.level, targets)
    planned_keys = {p.key for p in planned}
    fpp = fpp_of(record)

    # 1. which parts stay, and for the others which file values the old part still gives
    pending: list[tuple[PlannedPart, dict[tuple[str, int, int], FileValues], IndexPart | None]] = []
    for plan in planned:
        old = old_by_key.get(plan.key)
        wanted = {f.identity for f in plan.files}
        if old is not None and not force and {f.identity for f in old.files} == wanted and _readable(
            old, record, ctype, options
        ):
            report.parts.append(IndexPart(plan.key, plan.partition, old.location, old.size, old.files))
            report.parts_kept += 1
            continue
        reused: dict[tuple[str, int, int], FileValues] = {}
        if old is not None and not force and wanted & {f.identity for f in old.files}:
            try:
                reader = open_part(old.location, old.size, kind=record.kind.value, column=record.column,
                                   ctype=ctype, options=options)
                reused = {fv.file.identity: fv for fv in reader.reuse(wanted)}
            except Exception:  # noqa: BLE001 - an unusable old part: scan its files again
                reused = {}
        report.files_reused += len(reused)
        pending.append((plan, reused, old))

    # 2. scan what is missing; write each part when its last file arrives
    waiting: dict[tuple[str, int, int], list[int]] = {}
    values: list[dict[tuple[str, int, int], FileValues]] = []
    missing_count: list[int] = []
    to_scan: dict[tuple[str, int, int], DataFile] = {}
    for i, (plan, reused, _) in enumerate(pending):
        values.append(dict(reused))
        missing = [f for f in plan.files if f.identity not in reused]
        missing_count.append(len({f.identity for f in missing}))
        for f in missing:
            waiting.setdefault(f.identity, []).append(i)
            to_scan.setdefault(f.identity, f)
    written: dict[int, IndexPart] = {}
    publisher = _Publisher()

    def done(i: int, location: str, staged: StagedFile) -> None:
        plan, _, old = pending[i]
        publisher.submit(staged)
        values[i] = {}  # release the scanned values of a written part
        written[i] = IndexPart(plan.key, plan.partition, location, staged.size, plan.files)
        report.parts_written += 1
        report.bytes_written += staged.size
        if old is not None:
            report.obsolete.append(old.location)

    def write(i: int) -> None:
        plan, _, _ = pending[i]
        location = part_location(record, plan.key)
        done(i, location, stage_part_at(
            location, kind=record.kind.value, column=record.column, ctype=ctype,
            files=[values[i][f.identity] for f in plan.files], fpp=fpp, options=options,
        ))

    # the parts of one data file, scanned now and in no other part, that a local scan writes itself
    own: dict[tuple[str, int, int], tuple[int, str]] = {}
    if scanner is None and record.kind in WORKER_WRITTEN_KINDS:
        for i, (plan, reused, _) in enumerate(pending):
            identity = plan.files[0].identity if len(plan.files) == 1 else None
            if identity is not None and not reused and waiting.get(identity) == [i]:
                location = part_location(record, plan.key)
                if local_path(location) is not None:
                    own[identity] = (i, location)
    try:
        for i, count in enumerate(missing_count):
            if count == 0:
                write(i)
        scan = scanner or local_scanner(
            record.column, ctype, column_position, options, bounds=bounds_only(record),
            bloom_fpp=fpp if record.kind is IndexKind.BLOOM else None,
            workers=WORKERS if record.kind in POOLED_KINDS else 1, merge=record.kind is IndexKind.BTREE,
            leaves=planner([pending[i][0].files for i, (_, reused, _) in enumerate(pending) if not reused],
                           record.column, ctype, column_position, options) if record.kind is IndexKind.BTREE else None,
            own_parts=OwnParts(record.kind.value, fpp, {k: v[1] for k, v in own.items()}) if own else None,
        )
        for fv in scan(list(to_scan.values())):
            identity = fv.file.identity
            owners = waiting.pop(identity, None)
            if owners is None or (fv.written is not None and identity not in own):
                fv.discard()
                raise IndexBuildError(f"the scan returned {fv.file.path}, which was not asked for (or twice)")
            report.files_scanned += 1
            report.bytes_scanned += fv.file.size
            if on_file is not None:
                on_file(fv.file)
            if fv.written is not None:
                i, location = own[identity]
                done(i, location, fv.written)
                continue
            for i in owners:
                values[i][identity] = fv
                missing_count[i] -= 1
                if missing_count[i] == 0:
                    write(i)
        if waiting:
            path = next(iter(to_scan[k] for k in waiting)).path
            raise IndexBuildError(f"the scan did not return {len(waiting)} file(s), e.g. {path}")
        publisher.finish()
    except BaseException:
        publisher.abort()
        raise
    report.parts.extend(written[i] for i in sorted(written))
    report.obsolete.extend(p.location for p in previous if p.key not in planned_keys)
    report.seconds = time.perf_counter() - started
    return report


class _Publisher:
    """Publishes staged part files (StagedFile.publish: sync, rename into place) in PUBLISH_THREADS threads as
    they come; finish() waits for all (the first error raised once all are done), abort() stops. A build that
    fails leaves none of its new part files (nothing records them): finish() on an error and abort() remove
    every local file staged, published or not."""

    def __init__(self) -> None:
        self._threads: ThreadPoolExecutor | None = None
        self._jobs: list[tuple[StagedFile, Future[None]]] = []

    def submit(self, staged: StagedFile) -> None:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(PUBLISH_THREADS, thread_name_prefix="index-publish")
        self._jobs.append((staged, self._threads.submit(staged.publish)))

    def finish(self) -> None:
        self._stop()
        errors = [job.exception() for _, job in self._jobs]
        error = next((e for e in errors if e is not None), None)
        if error is not None:
            self._remove()
            raise error
        self._jobs = []

    def abort(self) -> None:
        for _, job in self._jobs:
            job.cancel()
        self._stop()
        self._remove()

    def _remove(self) -> None:
        for staged, _ in self._jobs:
            staged.discard()
            if staged.temporary is not None:
                try:
                    os.unlink(staged.path)
                except FileNotFoundError:
                    pass
        self._jobs = []

    def _stop(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None


def _readable(part: IndexPart, record: IndexRecord, ctype: ColumnType, options: StorageOptions | None) -> bool:
    try:
        open_part(part.location, part.size, kind=record.kind.value, column=record.column, ctype=ctype,
                  options=options)
    except Exception:  # noqa: BLE001 - any failure means "rebuild this part"
        return False
    return True
