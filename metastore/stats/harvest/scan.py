"""Harvest of one ORC file: plan what to read, then read only that (footers first, streams only where needed).

For each requested column :func:`analyze_file` takes what the footer statistics answer
(:mod:`metastore.stats.orc_convert`) and what the file's sketch metadata holds
(:mod:`metastore.stats.orc_sketch_metadata`), then chooses per column the cheapest scan that answers the rest
(``present`` streams for null counts, ``lengths`` for string lengths, ``values`` for sketches and ranges) and
reads those streams stripe by stripe into a :class:`~metastore.stats.sketcher.ColumnSketcher`. The result is
a picklable :class:`FileOutcome`: the file's :class:`~metastore.stats.harvest.partial.FileAnalysis` plus the
entries the file cache keeps. This is the unit of work a process pool or a Spark executor runs.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from time import thread_time
from typing import Any

from metastore import storage
from metastore.errors import MetastoreError
from metastore.orcio import (
    Category,
    OrcError,
    OrcReader,
    ScanMode,
    StripeColumn,
    TypeDescription,
    column_request,
    scan_stripe_columns,
)
from metastore.stats.harvest.partial import (
    KLL_KINDS,
    LENGTH_KINDS,
    MISSING_HISTOGRAM,
    MISSING_MAX_LENGTH,
    MISSING_NDV,
    MISSING_NULLS,
    MISSING_RANGE,
    MISSING_TOTAL_LENGTH,
    MISSING_TRUES,
    NDV_KINDS,
    PHASE_DECODE,
    PHASE_FOOTERS,
    PHASE_HASHING,
    PHASE_SKETCHES,
    RANGE_KINDS,
    ColumnPartial,
    FileAnalysis,
)
from metastore.stats.hll import HyperLogLog
from metastore.stats.model import StatsKind
from metastore.stats.orc_convert import (
    OrcColumnFacts,
    OrcWriterFacts,
    hive_kind,
    orc_column_facts,
    raw_data_size_of,
    storage_kind_fits,
)
from metastore.stats.orc_sketch_metadata import SketchRecord, read_sketch_metadata
from metastore.stats.sketcher import SKETCH_P, ColumnSketcher
from metastore.storage import FileRef, RangeFile, StorageError, StorageOptions

__all__ = [
    "ColumnSpec",
    "FileOutcome",
    "HarvestError",
    "ScanOptions",
    "absent_partial",
    "analyze_file",
    "cache_entry_key",
    "open_orc",
    "raw_size",
    "resolve_field",
    "stat_file",
    "stat_ref",
]

_POSITIONAL_NAME = re.compile(r"^_col\d+$")
_ACID_FIELDS = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row")


class HarvestError(MetastoreError):
    """A file cannot be analysed (unreadable, corrupt or truncated ORC, a column stored as an unfitting type)."""



@dataclass(frozen=True)
class FileOutcome:
    """A freshly analysed file plus what the cache keeps of it."""

    analysis: FileAnalysis
    info: bytes
    entries: dict[str, bytes]


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    hive_type: str
    position: int | None


@dataclass(frozen=True)
class ScanOptions:
    want_ndv: bool
    want_histograms: bool
    scan: bool


def stat_file(path: str, storage_options: StorageOptions | None = None) -> tuple[int, int]:
    """(size, mtime_ns) of a data file (a local path or a URL); HarvestError naming it when it cannot be read."""
    ref = stat_ref(path, storage_options)
    return ref.size, ref.mtime_ns


def stat_ref(path: str, storage_options: StorageOptions | None = None) -> FileRef:
    """The FileRef of a data file (a local path or a URL); HarvestError naming it when it cannot be read."""
    try:
        return storage.stat(path, storage_options)
    except StorageError as exc:
        raise HarvestError(str(exc).replace("cannot read ", "cannot analyze ", 1)) from None


INFO_KEY_VERSION = 1


def file_info(reader: OrcReader, raw: int) -> dict[str, Any]:
    schema = reader.schema
    fields = []
    if schema.category == Category.STRUCT:
        fields = [[name, child.id, str(child)] for name, child in zip(schema.field_names, schema.children, strict=True)]
    return {"v": INFO_KEY_VERSION, "rows": reader.num_rows, "raw": raw, "fields": fields}


def cache_entry_key(spec: ColumnSpec, field_ref: tuple[int, str] | None) -> str:
    where = "absent" if field_ref is None else f"{field_ref[0]}:{field_ref[1]}"
    return f"{where}|{spec.hive_type}"



class open_orc:  # noqa: N801 - used as a context manager: with open_orc(path) as (reader, counter)
    """An ORC reader over a data file (a local path, a URL or a FileRef) opened for range reads; the counter
    is the opened file, which counts the bytes read through it."""

    def __init__(self, file: str | FileRef, storage_options: StorageOptions | None = None) -> None:
        self.file = file
        self.path = file.url if isinstance(file, FileRef) else file
        self.storage_options = storage_options

    def __enter__(self) -> tuple[OrcReader, RangeFile]:
        try:
            self.counter = storage.open_file(self.file, self.storage_options)
        except StorageError as exc:
            raise HarvestError(str(exc).replace("cannot read ", "cannot analyze ", 1)) from None
        try:
            self.reader = OrcReader(self.counter)
        except OrcError as err:
            self.counter.close()
            raise HarvestError(f"cannot analyze {self.path}: not a readable ORC file: {err.reason}") from None
        except StorageError:
            self.counter.close()
            raise
        except Exception as exc:  # noqa: BLE001 - any failure to parse a tail means a corrupt file
            self.counter.close()
            raise HarvestError(f"cannot analyze {self.path}: not a readable ORC file: {exc}") from None
        return self.reader, self.counter

    def __exit__(self, *exc: object) -> None:
        self.counter.close()


def raw_size(reader: OrcReader, path: str) -> int:
    try:
        return raw_data_size_of(reader)
    except OrcError as err:
        raise HarvestError(f"cannot analyze {path}: {err.reason}") from None


def analyze_file(
    path: str, size: int, mtime_ns: int, wanted: tuple[ColumnSpec, ...], options: ScanOptions,
    storage_options: StorageOptions | None = None, version: str = "",
) -> FileOutcome:
    """Analyse one file (a local path or a URL, as listed with this size, mtime and version) for ``wanted``
    columns (the others came from the cache). Object stores are reached with ``storage_options``."""
    started = time.perf_counter()
    cpu_started = thread_time()
    with open_orc(FileRef(path, size, mtime_ns, version), storage_options) as (reader, counter):
        try:
            outcome = _analyze_open_file(reader, counter, path, size, mtime_ns, wanted, options, cpu_started)
            return replace(outcome, analysis=replace(outcome.analysis, seconds=time.perf_counter() - started))
        except HarvestError:
            raise
        except OrcError as err:
            raise HarvestError(f"cannot analyze {path}: corrupt ORC data: {err}") from None
        except (ValueError, IndexError, OverflowError, MemoryError, KeyError) as exc:
            raise HarvestError(f"cannot analyze {path}: corrupt ORC data: {type(exc).__name__}: {exc}") from None


def resolve_field(field_names: Sequence[str], spec: ColumnSpec) -> int | None:
    """Index of the file field holding ``spec`` (None when the file lacks the column)."""
    if field_names and all(_POSITIONAL_NAME.match(n) for n in field_names):
        if spec.position is None:
            return None
        wanted = f"_col{spec.position}"
        return field_names.index(wanted) if wanted in field_names else None
    if spec.name in field_names:
        return field_names.index(spec.name)
    lowered = [n.lower() for n in field_names]
    key = spec.name.lower()
    return lowered.index(key) if key in lowered else None


@dataclass
class _Plan:
    spec: ColumnSpec
    kind: StatsKind
    node: TypeDescription | None
    facts: OrcColumnFacts | None
    metadata: SketchRecord | None = None
    mode: ScanMode | None = None
    with_ids: bool = False
    sketcher: ColumnSketcher | None = None
    scanned_non_null: int = 0
    feed_seconds: float = 0.0


def _analyze_open_file(
    reader: OrcReader, counter: RangeFile, path: str, size: int, mtime_ns: int,
    wanted: tuple[ColumnSpec, ...], options: ScanOptions, cpu_started: float,
) -> FileOutcome:
    schema = reader.schema
    if schema.category != Category.STRUCT:
        raise HarvestError(f"cannot analyze {path}: the file's schema {schema} is not a struct of columns")
    if tuple(schema.field_names) == _ACID_FIELDS:
        raise HarvestError(f"cannot analyze {path}: Hive ACID (transactional) ORC files are not supported")
    rows = reader.num_rows
    raw = raw_size(reader, path)
    writer = OrcWriterFacts.from_reader(reader)
    file_stats = reader.file_statistics
    field_names = list(schema.field_names)
    plans: list[_Plan] = []
    for spec in wanted:
        kind = hive_kind(spec.hive_type)
        index = resolve_field(field_names, spec)
        if index is None:
            plans.append(_Plan(spec, kind, None, None))
            continue
        node = schema.children[index]
        if not storage_kind_fits(kind, node):
            raise HarvestError(
                f"cannot analyze {path}: column '{spec.name}' is {spec.hive_type} in the table but the file stores "
                f"field '{field_names[index]}' as {node}"
            )
        facts = None
        if node.id < len(file_stats):
            column_stats = file_stats[node.id]
            facts = orc_column_facts(column_stats, node, spec.hive_type, num_rows=rows, writer=writer,
                                     has_value_count=column_stats.values_counted)
        plan = _Plan(spec, kind, node, facts)
        record = read_sketch_metadata(reader.user_metadata, field_names[index])
        if record is not None and record.fits(kind, rows, facts.non_null if facts else None):
            plan.metadata = record
        plans.append(plan)

    stripes_scanned = 0
    scan_started = thread_time()
    if options.scan and rows:
        for plan in plans:
            _choose_scan(plan, options)
        scanning = [p for p in plans if p.mode is not None and p.node is not None]
        if scanning:
            requests = [column_request(reader, n.id, m, with_ids=p.with_ids)
                        for p in scanning if (n := p.node) is not None and (m := p.mode) is not None]
            for stripe in range(len(reader.stripes)):
                stripes_scanned += 1
                for plan, chunk in zip(scanning, scan_stripe_columns(reader, stripe, requests), strict=True):
                    _feed(plan, chunk)
    scan_finished = thread_time()
    partials: dict[str, ColumnPartial] = {}
    entries: dict[str, bytes] = {}
    for plan in plans:
        partial = _partial(plan, rows, options)
        partials[plan.spec.name] = partial
        ref = None if plan.node is None else (plan.node.id, str(plan.node))
        entries[cache_entry_key(plan.spec, ref)] = partial.to_bytes()
    from_metadata = tuple(p.spec.name for p in plans if p.metadata is not None)
    source = "scan" if stripes_scanned else "footer"
    # CPU seconds by phase: hashing and sketch updates (with the sketches' serialisation) measured around the
    # sketchers' work, decoding the rest of the scan
    hashing = sum(p.sketcher.hash_seconds for p in plans if p.sketcher is not None)
    feeding = sum(p.feed_seconds for p in plans)
    phases = {
        PHASE_FOOTERS: scan_started - cpu_started,
        PHASE_DECODE: max(0.0, scan_finished - scan_started - feeding),
        PHASE_HASHING: hashing,
        PHASE_SKETCHES: max(0.0, feeding - hashing) + thread_time() - scan_finished,
    }
    analysis = FileAnalysis(path, size, mtime_ns, rows, raw, partials, source, counter.bytes_read, stripes_scanned,
                            from_metadata, phases=phases)
    return FileOutcome(analysis, json.dumps(file_info(reader, raw)).encode(), entries)


def _choose_scan(plan: _Plan, options: ScanOptions) -> None:
    """Decide what (if anything) must be read for a column: the cheapest mode that answers every open fact."""
    if plan.node is None:
        return
    facts = plan.facts
    kind = plan.kind
    meta = plan.metadata
    known_nulls = facts is not None and facts.num_nulls is not None
    non_null = facts.non_null if facts is not None else None
    if non_null == 0 and known_nulls:
        return  # nothing but nulls: every fact is known
    need_nulls = not known_nulls
    need_range = kind in RANGE_KINDS and not (facts is not None and facts.has_range)
    need_trues = kind is StatsKind.BOOLEAN and (facts is None or facts.num_trues is None)
    need_total = kind in LENGTH_KINDS and (facts is None or facts.total_length is None)
    need_max = kind in LENGTH_KINDS and meta is None
    need_ndv = options.want_ndv and kind in NDV_KINDS and meta is None
    need_hist = options.want_histograms and kind in KLL_KINDS and (meta is None or meta.histogram is None)
    if kind in LENGTH_KINDS:
        if need_ndv:
            plan.mode = "values"
        elif need_max or need_total or need_nulls:
            plan.mode = "lengths"
            plan.with_ids = need_total
    elif need_ndv or need_hist or need_range or need_trues:
        plan.mode = "values"
    elif need_nulls:
        plan.mode = "present"
    if plan.mode is not None:
        plan.sketcher = ColumnSketcher(kind, range_=need_range, ndv=need_ndv, histogram=need_hist)


def _feed(plan: _Plan, chunk: StripeColumn) -> None:
    started = thread_time()
    _feed_sketcher(plan, chunk)
    plan.feed_seconds += thread_time() - started


def _feed_sketcher(plan: _Plan, chunk: StripeColumn) -> None:
    sketcher = plan.sketcher
    assert sketcher is not None and plan.node is not None
    plan.scanned_non_null += chunk.non_null
    if chunk.vector is not None:
        sketcher.add_vector(chunk.vector, plan.node.category)
    elif chunk.value_lengths is not None:
        sketcher.add_lengths(chunk.value_lengths)
    elif chunk.dictionary_lengths is not None:
        lengths = chunk.dictionary_lengths
        if chunk.dictionary_ids is not None:
            sketcher.add_lengths(lengths[chunk.dictionary_ids])
        elif lengths.size and chunk.non_null:
            # every dictionary entry stands for at least one value of the stripe
            sketcher.add_lengths(lengths, count_rows=False)


def _partial(plan: _Plan, rows: int, options: ScanOptions) -> ColumnPartial:
    kind = plan.kind
    if plan.node is None:
        # a column the file lacks reads as NULL in every row
        return absent_partial(kind, rows, options)
    facts = plan.facts
    meta = plan.metadata
    sk = plan.sketcher
    missing: set[str] = set()
    if facts is not None and facts.num_nulls is not None:
        nulls = facts.num_nulls
    elif sk is not None:
        nulls = rows - plan.scanned_non_null
    else:
        nulls, missing = 0, missing | {MISSING_NULLS}
    non_null = rows - nulls
    low = high = None
    if kind in RANGE_KINDS and non_null:
        if facts is not None and facts.has_range:
            low, high = facts.low, facts.high
        elif sk is not None and sk.want_range:
            low, high = sk.low, sk.high
        else:
            missing.add(MISSING_RANGE)
    trues = 0
    if kind is StatsKind.BOOLEAN and non_null:
        if facts is not None and facts.num_trues is not None:
            trues = facts.num_trues
        elif sk is not None:
            trues = sk.num_trues
        else:
            missing.add(MISSING_TRUES)
    total = max_len = 0
    if kind in LENGTH_KINDS and non_null:
        if facts is not None and facts.total_length is not None:
            total = facts.total_length
        elif sk is not None:
            # a scan that had to find the total counted every value (values, or lengths with ids)
            total = sk.total_length
        else:
            missing.add(MISSING_TOTAL_LENGTH)
        if meta is not None:
            max_len = meta.max_length
        elif sk is not None:
            max_len = sk.max_length
        else:
            missing.add(MISSING_MAX_LENGTH)
    sketch = None
    if kind in NDV_KINDS:
        if not options.want_ndv:
            missing.add(MISSING_NDV)
        elif meta is not None:
            sketch = meta.sketch
        elif sk is not None and sk.hll is not None:
            sketch = sk.sketch_bytes()
        elif non_null == 0:
            sketch = HyperLogLog(SKETCH_P).to_bytes()
        else:
            missing.add(MISSING_NDV)
    histogram = None
    if kind in KLL_KINDS:
        if not options.want_histograms:
            missing.add(MISSING_HISTOGRAM)
        elif meta is not None and meta.histogram is not None:
            histogram = meta.histogram
        elif sk is not None and sk.kll is not None:
            histogram = sk.histogram_bytes()
        elif non_null:
            missing.add(MISSING_HISTOGRAM)
    return ColumnPartial(kind=kind, rows=rows, num_nulls=nulls, low=low, high=high, num_trues=trues,
                         total_length=total, max_length=max_len, sketch=sketch, histogram=histogram,
                         missing=frozenset(missing))


def absent_partial(kind: StatsKind, rows: int, options: ScanOptions) -> ColumnPartial:
    """All-null rows: an empty sketch (so merges still go through sketches) and nothing else to know."""
    missing = set()
    sketch = None
    if kind in NDV_KINDS:
        if options.want_ndv:
            sketch = HyperLogLog(SKETCH_P).to_bytes()
        else:
            missing.add(MISSING_NDV)
    if kind in KLL_KINDS and not options.want_histograms:
        missing.add(MISSING_HISTOGRAM)
    return ColumnPartial(kind=kind, rows=rows, num_nulls=rows, sketch=sketch, missing=frozenset(missing))
