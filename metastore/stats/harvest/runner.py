"""The local harvest runner: files shared out to a process pool, results kept in a file cache, progress reported.

:func:`analyze_files` is what ``ANALYZE TABLE ... COMPUTE STATISTICS FOR COLUMNS`` runs in the shell's process:
it takes per-file results from the :class:`~metastore.stats.filecache.FileStatsCache` where the file is
unchanged, runs :func:`~metastore.stats.harvest.scan.analyze_file` for the others (in worker processes; a
single large file is split by columns between workers), stores the new per-file results and merges them.
:func:`basic_stats` gives ``numRows``/``numFiles``/``totalSize``/``rawDataSize``.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import replace
from typing import Any

from metastore import storage
from metastore.errors import InvalidInput
from metastore.stats.harvest.allocator import keep_freed_memory
from metastore.stats.harvest.partial import (
    KLL_KINDS,
    MISSING_HISTOGRAM,
    MISSING_MAX_LENGTH,
    MISSING_NDV,
    MISSING_NULLS,
    MISSING_RANGE,
    MISSING_TOTAL_LENGTH,
    MISSING_TRUES,
    NDV_KINDS,
    ColumnPartial,
    FileAnalysis,
    check_sketch,
    merge_partials,
)
from metastore.stats.harvest.result import AnalyzeResult, BasicStats, result_of
from metastore.stats.harvest.scan import (
    INFO_KEY_VERSION,
    ColumnSpec,
    FileOutcome,
    HarvestError,
    ScanOptions,
    absent_partial,
    analyze_file,
    cache_entry_key,
    open_orc,
    raw_size,
    resolve_field,
    stat_ref,
)
from metastore.stats.model import StatsKind
from metastore.stats.orc_convert import hive_kind
from metastore.stats.partial_store import FilePartials, PartialStore
from metastore.storage import FileRef, StorageOptions

__all__ = [
    "PHASE_CACHE", "PHASE_HARVEST", "PHASE_MERGE", "SPLIT_MIN_BYTES", "DataFile", "analyze_files", "basic_stats",
    "cached_partials", "column_specs", "stored_partials", "worker_count", "worker_pool",
]

#: Phases of a run measured in this process (wall seconds), besides the files' own (partial.FILE_PHASES, CPU
#: seconds in the workers): per-file cache lookups and writes, the files' analysis, merging the files' partials.
PHASE_CACHE = "cache"
PHASE_HARVEST = "harvest"
PHASE_MERGE = "merge"

# A file still to analyse: (position, path, size, mtime_ns, columns to compute, partials the cache had).
_Todo = tuple[int, str, int, int, tuple[ColumnSpec, ...], dict[str, ColumnPartial]]

#: What the runner analyses: local paths, URLs of object stores, or FileRefs from a listing (no stat needed).
DataFile = str | os.PathLike[str] | FileRef


def _refs(files: Sequence[DataFile], storage_options: StorageOptions | None) -> list[FileRef]:
    """FileRefs of the files: listed ones as they are, paths made absolute and stat'ed, URLs stat'ed."""
    if isinstance(files, str):
        raise InvalidInput("files must be a sequence of paths, URLs or FileRefs, not one string")
    out = []
    for f in files:
        if isinstance(f, FileRef):
            out.append(f)
            continue
        text = os.fspath(f)
        if storage.is_local(text):
            text = os.path.abspath(text)
        out.append(stat_ref(text, storage_options))
    return out


def analyze_files(
    files: Sequence[DataFile],
    columns: Sequence[str],
    *,
    hive_types: Mapping[str, str],
    want_ndv: bool = True,
    want_histograms: bool = False,
    cache: PartialStore | None = None,
    progress: Callable[[int, int], None] | None = None,
    scan: bool = True,
    table_columns: Sequence[str] | None = None,
    workers: int | None = None,
    storage_options: StorageOptions | None = None,
    partition: str | None | Sequence[str | None] = None,
    partition_failures: bool = False,
) -> AnalyzeResult:
    """Column statistics of ``columns`` over ORC ``files`` (one table or partition), merged.

    ``hive_types`` maps column names to Hive types: give every (non-partition) column of the table, in table
    order, because that order (or ``table_columns``) places columns in files with positional ``_colN`` field
    names. ``want_ndv`` computes NDV sketches,
    ``want_histograms`` KLL histograms; ``scan=False`` never reads data (footer facts only; what needs data is
    reported in ``result.missing``). ``cache`` keeps per-file results between runs: a
    :class:`~metastore.stats.partial_store.PartialStore` (the local file cache, or the metastore's database),
    asked once per partition and given the new results once; ``partition`` names the partition the files
    belong to (None: an unpartitioned table's files), or is a sequence naming each file's partition (one run over
    several partitions' files, split afterwards with :func:`split_result`). ``progress(done, total)``
    is called after each file. ``workers`` processes scan in parallel (default: one per CPU; 1 = in this process):
    files are shared out, and when fewer files than workers need reading their columns are split between
    workers. Raises :class:`HarvestError` naming the file for unreadable or
    corrupt files and InvalidInput for unknown columns or types without statistics.

    ``partition_failures=True`` makes an unreadable or corrupt file fail its partition instead of the run: the
    other files are analysed all the same (every file is read once, none again), the failed partitions' files
    are neither stored in ``cache`` nor part of the result, and ``result.failed`` maps each failed partition to
    the error of its first failing file (in the order of ``files``). Files of a failed partition not yet started
    are not read.

    ``files`` are local paths, URLs (``s3://``...) or :class:`~metastore.storage.FileRef` values from a listing
    (their size and mtime are trusted, sparing a stat per file); object stores are reached with
    ``storage_options``, and only the byte ranges a file's analysis needs are read.
    """
    started = time.perf_counter()
    clock: dict[str, float] = {}
    order = list(table_columns) if table_columns is not None else list(hive_types)
    specs = column_specs(columns, hive_types, order)
    options = ScanOptions(want_ndv=want_ndv, want_histograms=want_histograms, scan=scan)
    refs = _refs(files, storage_options)
    versions = {ref.url: ref.version for ref in refs}
    if partition is None or isinstance(partition, str):
        partition_of = {ref.url: partition for ref in refs}
    else:
        if len(partition) != len(refs):
            raise InvalidInput(f"{len(partition)} partition names for {len(refs)} files")
        partition_of = {ref.url: name for ref, name in zip(refs, partition, strict=True)}
    lookups_started = time.perf_counter()
    stored: dict[str, FilePartials] = {}
    if cache is not None and refs:
        groups: dict[str | None, list[FileRef]] = {}
        for ref in refs:
            groups.setdefault(partition_of[ref.url], []).append(ref)
        lookup_many = getattr(cache, "lookup_many", None)  # one call for every partition, where a store can
        if lookup_many is not None:
            stored.update(lookup_many(groups))
        else:
            for name, group in groups.items():
                stored.update(cache.lookup(group, name))
    total = len(refs)
    results: list[FileAnalysis | None] = [None] * total
    todo: list[_Todo] = []
    done = 0
    for i, ref in enumerate(refs):
        path, size, mtime_ns = ref.url, ref.size, ref.mtime_ns
        reused = cached_partials(stored.get(ref.url), ref, specs, options)
        if reused is not None and len(reused[1]) == len(specs):
            info, partials = reused
            results[i] = FileAnalysis(path, size, mtime_ns, info["rows"], info["raw"], partials, "cache")
            done += 1
            if progress is not None:
                progress(done, total)
            continue
        have = reused[1] if reused is not None else {}
        todo.append((i, path, size, mtime_ns, tuple(s for s in specs if s.name not in have), have))
    clock[PHASE_CACHE] = time.perf_counter() - lookups_started

    def finished(index: int, analysis: FileAnalysis | None) -> None:
        nonlocal done
        results[index] = analysis
        done += 1
        if progress is not None:
            progress(done, total)

    outcomes: list[FileOutcome] = []
    tasks = _split_tasks(todo, worker_count(workers))
    expected = {index: 0 for index, *_ in todo}
    for index, _ in tasks:
        expected[index] += 1
    pieces: dict[int, list[FileOutcome]] = {index: [] for index in expected}
    haves = {index: have for index, *_, have in todo}

    # partition_failures: the first error of each failed partition (by file index), and its files' outcomes
    failures: dict[str | None, tuple[int, HarvestError]] = {}
    held: dict[str | None, list[FileOutcome]] = {}

    def partition_of_index(index: int) -> str | None:
        return partition_of[by_index[index][1]]

    def failed(index: int, error: HarvestError) -> None:
        name = partition_of_index(index)
        first = failures.get(name)
        if first is None or index < first[0]:
            failures[name] = (index, error)
        if index in pieces:
            del pieces[index]
            finished(index, None)

    def analysed(index: int, outcome: FileOutcome) -> None:
        if index not in pieces:
            return  # a file whose other column group failed
        pieces[index].append(outcome)
        if len(pieces[index]) < expected[index]:
            return
        joined = _join_outcomes(pieces.pop(index))
        if partition_failures:
            held.setdefault(partition_of_index(index), []).append(joined)
        else:
            outcomes.append(joined)
        analysis = joined.analysis
        if haves[index]:
            analysis = replace(analysis, columns={**haves[index], **analysis.columns})
        finished(index, analysis)

    by_index = {item[0]: item for item in todo}
    calls = [(index, (by_index[index][1], by_index[index][2], by_index[index][3], wanted, options,
                      storage_options, versions[by_index[index][1]]))
             for index, wanted in tasks]
    pool_size = min(worker_count(workers), len(calls))
    harvest_started = time.perf_counter()
    if pool_size <= 1:
        for index, call in calls:
            if partition_failures and partition_of_index(index) in failures:
                failed(index, failures[partition_of_index(index)][1])
                continue
            try:
                outcome = analyze_file(*call)
            except HarvestError as exc:
                if not partition_failures:
                    raise
                failed(index, exc)
                continue
            analysed(index, outcome)
    else:
        with worker_pool(pool_size) as pool:
            futures = {pool.submit(analyze_file, *call): index for index, call in calls}
            pending = set(futures)
            while pending:
                completed, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in completed:
                    index = futures[future]
                    error = None if future.cancelled() else future.exception()
                    if future.cancelled():
                        failed(index, failures[partition_of_index(index)][1])
                        continue
                    if isinstance(error, HarvestError) and partition_failures:
                        failed(index, error)
                        # the partition's files not started yet are not read
                        name = partition_of_index(index)
                        for other in pending:
                            if partition_of_index(futures[other]) == name:
                                other.cancel()
                        continue
                    if error is not None:
                        for other in pending:
                            other.cancel()
                        raise error
                    analysed(index, future.result())
    clock[PHASE_HARVEST] = time.perf_counter() - harvest_started
    if partition_failures:
        # the failed partitions' files are left out of the result and the cache
        outcomes = [o for name, group in held.items() if name not in failures for o in group]
        for i, ref in enumerate(refs):
            if partition_of[ref.url] in failures:
                results[i] = None
    analyses = tuple(r for r in results if r is not None)
    if cache is not None and outcomes:
        stores_started = time.perf_counter()
        cache.store([stored_partials(o, versions[o.analysis.path], partition_of[o.analysis.path]) for o in outcomes])
        clock[PHASE_CACHE] += time.perf_counter() - stores_started
    merge_started = time.perf_counter()
    result = _combine(analyses, specs, options, started)
    clock[PHASE_MERGE] = time.perf_counter() - merge_started
    for o in outcomes:
        for phase, seconds in o.analysis.phases.items():
            clock[phase] = clock.get(phase, 0.0) + seconds
    failed_partitions = {name: str(error) for name, (_, error) in sorted(failures.items(), key=lambda f: f[1][0])}
    return replace(result, phases=clock, failed=failed_partitions)


def basic_stats(
    files: Sequence[DataFile], scan: bool = True, *, cache: PartialStore | None = None,
    storage_options: StorageOptions | None = None, partition: str | None = None,
) -> BasicStats:
    """Hive's basic statistics of the data files of a table or partition.

    NOSCAN (``scan=False``) looks only at the file system: ``numFiles`` and ``totalSize``. Otherwise the row
    count comes from the ORC footers and ``rawDataSize`` is what Hive's ORC reader reports
    (``Reader.getRawDataSize()``, an estimate of the deserialised Java size from footer statistics; see
    :func:`metastore.stats.orc_convert.raw_data_size_of`), summed over the files.
    """
    refs = _refs(files, storage_options)
    total_size = sum(ref.size for ref in refs)
    if not scan:
        return BasicStats(num_rows=None, num_files=len(refs), total_size=total_size, raw_data_size=None)
    rows = raw = 0
    stored = cache.lookup(refs, partition) if cache is not None and refs else {}
    for ref in refs:
        found = stored.get(ref.url)
        info = _info(found) if found is not None and found.matches(ref) else None
        if info is not None:
            rows += info["rows"]
            raw += info["raw"]
            continue
        with open_orc(ref, storage_options) as (reader, _):
            rows += reader.num_rows
            raw += raw_size(reader, ref.url)
    return BasicStats(num_rows=rows, num_files=len(refs), total_size=total_size, raw_data_size=raw)


# ------------------------------------------------------------------------------------------ planning


def column_specs(columns: Sequence[str], hive_types: Mapping[str, str], order: Sequence[str]) -> list[ColumnSpec]:
    """The requested columns with their Hive types and table positions (``order``: the table's columns);
    InvalidInput for an unknown or repeated column or a type without statistics."""
    if isinstance(columns, str):
        raise InvalidInput("columns must be a sequence of column names, not one string")
    lowered = {k.lower(): k for k in hive_types}
    positions = {name.lower(): i for i, name in enumerate(order)}
    specs = []
    seen = set()
    for name in columns:
        key = name if name in hive_types else lowered.get(name.lower())
        if key is None:
            known = ", ".join(hive_types) or "none"
            raise InvalidInput(f"column '{name}' has no type in hive_types (columns: {known})")
        hive_kind(hive_types[key])  # types without statistics fail here, naming the type
        if name in seen:
            raise InvalidInput(f"column '{name}' is requested twice")
        seen.add(name)
        specs.append(ColumnSpec(name, hive_types[key].strip().lower(), positions.get(name.lower())))
    return specs


def worker_count(workers: int | None) -> int:
    """Processes a run uses: ``workers``, or one per CPU by default (at least one)."""
    if workers is None:
        workers = os.cpu_count() or 1
    return max(1, workers)


def worker_pool(size: int) -> ProcessPoolExecutor:
    """The pool harvest work runs in: ``size`` processes, forked where the platform can (no re-import), each
    keeping freed memory for reuse (allocator.keep_freed_memory). Also used by local index builds
    (metastore.index.build)."""
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    return ProcessPoolExecutor(max_workers=size, mp_context=context, initializer=keep_freed_memory)


# Files smaller than this are not split by columns between workers: each part re-reads the file's tail, and
# below a few hundred thousand rows a file's scan takes less than starting and joining worker processes.
SPLIT_MIN_BYTES = 32 << 20
# Relative cost of scanning a column of each kind (decimals decode varints and scales, strings hash bytes).
_SCAN_COST = {StatsKind.DECIMAL: 4, StatsKind.STRING: 2, StatsKind.BINARY: 2, StatsKind.TIMESTAMP: 2}


def _split_tasks(todo: list[_Todo], workers: int) -> list[tuple[int, tuple[ColumnSpec, ...]]]:
    """(file index, columns) tasks: one per file, or, when fewer files than workers need reading, each file's
    columns split into groups of similar cost so that every worker has a share (a single changed file still
    uses every core)."""
    if not todo or len(todo) >= workers:
        return [(index, wanted) for index, _, _, _, wanted, _ in todo]
    per_file = -(-workers // len(todo))
    tasks: list[tuple[int, tuple[ColumnSpec, ...]]] = []
    for index, _, size, _, wanted, _ in todo:
        groups = per_file if size >= SPLIT_MIN_BYTES else 1
        tasks.extend((index, group) for group in column_groups(wanted, groups))
    return tasks


def column_groups(wanted: Sequence[ColumnSpec], groups: int) -> list[tuple[ColumnSpec, ...]]:
    """``wanted`` split into at most ``groups`` non-empty groups of similar scan cost (each column in one group),
    for scanning one file's columns in parallel: every column's result is the same whatever group scans it."""
    groups = min(groups, len(wanted))
    if groups <= 1:
        return [tuple(wanted)]
    loads = [0] * groups
    members: list[list[ColumnSpec]] = [[] for _ in range(groups)]
    for spec in sorted(wanted, key=lambda s: -_SCAN_COST.get(hive_kind(s.hive_type), 1)):
        target = loads.index(min(loads))
        members[target].append(spec)
        loads[target] += _SCAN_COST.get(hive_kind(spec.hive_type), 1)
    return [tuple(group) for group in members if group]


def _join_outcomes(parts: list[FileOutcome]) -> FileOutcome:
    """One file's outcome from the outcomes of its column groups."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0].analysis
    columns: dict[str, ColumnPartial] = {}
    entries: dict[str, bytes] = {}
    for part in parts:
        columns.update(part.analysis.columns)
        entries.update(part.entries)
    analyses = [p.analysis for p in parts]
    analysis = replace(
        first,
        columns=columns,
        source="scan" if any(a.source == "scan" for a in analyses) else first.source,
        bytes_read=sum(a.bytes_read for a in analyses),
        stripes_scanned=max(a.stripes_scanned for a in analyses),
        sketch_metadata_columns=tuple(c for a in analyses for c in a.sketch_metadata_columns),
        seconds=max(a.seconds for a in analyses),
        phases={phase: sum(a.phases.get(phase, 0.0) for a in analyses) for phase in first.phases},
    )
    return FileOutcome(analysis, parts[0].info, entries)


# -------------------------------------------------------------------------------------------- cache


def _info(found: FilePartials) -> dict[str, Any] | None:
    """The file facts a stored result holds (rows, raw size, fields), checked and normalised, or None if they
    are unreadable, malformed or of another format version (then the file is analysed again). Stored results
    come from a database any client may write to: nothing in them is trusted unchecked."""
    try:
        info = json.loads(found.info)
        if not isinstance(info, dict) or info.get("v") != INFO_KEY_VERSION:
            return None
        info["rows"], info["raw"] = int(info["rows"]), int(info["raw"])
        info["fields"] = [(str(name), int(cid), str(type_text)) for name, cid, type_text in info["fields"]]
    except (KeyError, TypeError, ValueError):
        return None
    if info["rows"] < 0 or info["raw"] < 0:
        return None
    return info


def stored_partials(outcome: FileOutcome, version: str, partition: str | None) -> FilePartials:
    """What a PartialStore keeps of a freshly analysed file (of ``partition``, listed with ``version``)."""
    analysis = outcome.analysis
    return FilePartials(analysis.path, analysis.size, analysis.mtime_ns, version, partition, analysis.num_rows,
                        analysis.raw_data_size, outcome.info, outcome.entries)


def cached_partials(
    cached: FilePartials | None, ref: FileRef, specs: list[ColumnSpec], options: ScanOptions
) -> tuple[dict[str, Any], dict[str, ColumnPartial]] | None:
    """What a PartialStore's ``cached`` result (from ``lookup``) holds for the file ``ref`` if it is unchanged:
    its info (rows, raw size) and the partials of those ``specs`` it has with every fact ``options`` need (None
    when nothing was stored or the file changed)."""
    if cached is None or not cached.matches(ref):
        return None
    info = _info(cached)
    if info is None:
        return None
    # a partial that is malformed, of another kind or of another row count is taken as not stored (the file
    # is read again), never merged
    rows = info["rows"]
    found: dict[str, ColumnPartial] = {}
    required = _required_facts(options)
    entries = cached.entries
    for spec, key in zip(specs, _entry_keys(tuple(info["fields"]), tuple(specs)), strict=True):
        raw = entries.get(key)
        if raw is None:
            continue
        try:
            partial = ColumnPartial.from_bytes(raw)
            if partial.sketch is not None:
                check_sketch(partial.sketch)  # (sketches parsed are kept for the run's merges, in a parsed_sketches scope)
        except ValueError:
            continue
        if partial.kind is not hive_kind(spec.hive_type) or partial.rows != rows or not 0 <= partial.num_nulls <= rows:
            continue
        if partial.missing & required:
            continue
        found[spec.name] = _trim(partial, options)
    return info, found


@functools.lru_cache(maxsize=64)
def _entry_keys(fields: tuple[tuple[str, int, str], ...], specs: tuple[ColumnSpec, ...]) -> tuple[str, ...]:
    """The cache entry key of each of ``specs`` in a file of ``fields`` (name, id, type text): the files of a
    table mostly share their fields, so a re-run resolves them once, not once a file."""
    names = [f[0] for f in fields]
    keys = []
    for spec in specs:
        index = resolve_field(names, spec)
        keys.append(cache_entry_key(spec, None if index is None else (fields[index][1], fields[index][2])))
    return tuple(keys)


@functools.lru_cache(maxsize=16)
def _required_facts(options: ScanOptions) -> frozenset[str]:
    required = {MISSING_RANGE, MISSING_NULLS, MISSING_TRUES, MISSING_TOTAL_LENGTH}
    if options.scan:
        required.add(MISSING_MAX_LENGTH)
        if options.want_ndv:
            required.add(MISSING_NDV)
        if options.want_histograms:
            required.add(MISSING_HISTOGRAM)
    return frozenset(required)


def _trim(partial: ColumnPartial, options: ScanOptions) -> ColumnPartial:
    """A partial without what this run did not ask for (a cached sketch is dropped when NDV is not wanted)."""
    changes: dict[str, Any] = {}
    missing = set(partial.missing)
    # (a partial that already lacks what is dropped is returned as it is: most cached partials of a run without
    # histograms have none)
    if not options.want_ndv and partial.kind in NDV_KINDS and (
        partial.sketch is not None or MISSING_NDV not in missing
    ):
        changes["sketch"] = None
        missing.add(MISSING_NDV)
    if not options.want_histograms and partial.kind in KLL_KINDS and (
        partial.histogram is not None or MISSING_HISTOGRAM not in missing
    ):
        changes["histogram"] = None
        missing.add(MISSING_HISTOGRAM)
    if changes:
        changes["missing"] = frozenset(missing)
        return replace(partial, **changes)
    return partial


def _combine(
    analyses: tuple[FileAnalysis, ...], specs: list[ColumnSpec], options: ScanOptions, started: float
) -> AnalyzeResult:
    merged: dict[str, ColumnPartial] = {}
    for spec in specs:
        pieces = [analysis.columns[spec.name] for analysis in analyses]
        merged[spec.name] = merge_partials(pieces) if pieces else absent_partial(hive_kind(spec.hive_type), 0, options)
    return result_of(analyses, merged, options, time.perf_counter() - started)

