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
from dataclasses import dataclass, field, replace
from time import thread_time
from typing import Any

from metastore import storage
from metastore.errors import InvalidInput, MetastoreError
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
    FILE_PHASES,
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
from metastore.stats.hll import HyperLogLog, merge_hlls
from metastore.stats.kll import kll_merge_all
from metastore.stats.merge import max_present, min_present
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
    "ColumnPlan",
    "ColumnScan",
    "ColumnSpec",
    "FileOutcome",
    "FilePiece",
    "HarvestError",
    "ScanOptions",
    "absent_partial",
    "analyze_file",
    "analyze_file_piece",
    "cache_entry_key",
    "join_file_pieces",
    "stripes_of_piece",
    "open_orc",
    "raw_size",
    "read_tail",
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

    def __init__(self, file: str | FileRef, storage_options: StorageOptions | None = None, *,
                 tail_of: OrcReader | None = None) -> None:
        self.file = file
        self.path = file.url if isinstance(file, FileRef) else file
        self.storage_options = storage_options
        self.tail_of = tail_of

    def __enter__(self) -> tuple[OrcReader, RangeFile]:
        try:
            self.counter = storage.open_file(self.file, self.storage_options)
        except StorageError as exc:
            raise HarvestError(str(exc).replace("cannot read ", "cannot analyze ", 1)) from None
        try:
            self.reader = OrcReader(self.counter, tail_of=self.tail_of)
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

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        """Closes the file; what reading it raised for malformed bytes becomes the HarvestError naming the file
        (one place for every reader of data files: the scan, the shared tail, the basic statistics)."""
        self.counter.close()
        if exc is None or isinstance(exc, HarvestError):
            return
        if isinstance(exc, OrcError):
            raise HarvestError(f"cannot analyze {self.path}: corrupt ORC data: {exc}") from None
        if isinstance(exc, _CORRUPT_DATA):
            raise HarvestError(f"cannot analyze {self.path}: corrupt ORC data: {type(exc).__name__}: {exc}") from None


#: what decoding malformed bytes raises besides OrcError (a count or offset out of range, a bad enum value)
_CORRUPT_DATA = (ValueError, IndexError, OverflowError, MemoryError, KeyError)


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
    return join_file_pieces([analyze_file_piece(path, size, mtime_ns, wanted, options,
                                                storage_options=storage_options, version=version)])


def stripes_of_piece(offsets: Sequence[int], size: int, piece: int, pieces: int) -> list[int]:
    """Indexes of the stripes piece ``piece`` of ``pieces`` scans: those starting in its byte range
    ``[piece * size / pieces, (piece + 1) * size / pieces)``, so that the pieces of a file share its stripes out
    without knowing them in advance (the planner splits by size alone)."""
    if pieces <= 1:
        return list(range(len(offsets)))
    return [i for i, offset in enumerate(offsets) if min(pieces - 1, offset * pieces // max(size, 1)) == piece]


def read_tail(path: str, size: int, mtime_ns: int, *, storage_options: StorageOptions | None = None,
              version: str = "") -> tuple[OrcReader, int]:
    """The parsed tail of a file (its reader, the file closed again: footer, statistics, the first stripe's
    footer) and the bytes read for it, for :func:`analyze_file_piece` calls that scan some columns each to
    share (``tail_of``) instead of each parsing it. HarvestError as analyze_file_piece raises it for a file
    whose tail cannot be read."""
    with open_orc(FileRef(path, size, mtime_ns, version), storage_options) as (reader, counter):
        reader.file_statistics  # noqa: B018 - converted once here, then shared
        OrcWriterFacts.from_reader(reader)  # reads the stripe footer naming the writer's time zone
        return reader, counter.bytes_read


def analyze_file_piece(
    path: str, size: int, mtime_ns: int, wanted: tuple[ColumnSpec, ...], options: ScanOptions,
    piece: int = 0, pieces: int = 1, *, storage_options: StorageOptions | None = None, version: str = "",
    tail_of: OrcReader | None = None,
) -> FilePiece:
    """Plan one file from its footer and scan only the stripes of piece ``piece`` of ``pieces``
    (:func:`stripes_of_piece`); :func:`join_file_pieces` of all pieces is the file's outcome. ``tail_of``:
    the file's :func:`read_tail`, when several calls share it (its bytes then count there, not here)."""
    if not 0 <= piece < pieces:
        raise InvalidInput(f"piece {piece} of {pieces} does not exist")
    started = time.perf_counter()
    cpu_started = thread_time()
    with open_orc(FileRef(path, size, mtime_ns, version), storage_options, tail_of=tail_of) as (reader, counter):
        found = _analyze_open_file(reader, counter, path, size, mtime_ns, wanted, options, piece, pieces, cpu_started)
        return replace(found, seconds=time.perf_counter() - started)


def join_file_pieces(pieces: Sequence[FilePiece]) -> FileOutcome:
    """One file's outcome from all its pieces (any order): footer facts once, the pieces' scans merged in stripe
    order, so the result is the one a whole-file scan gives (every count and HLL byte). Raises InvalidInput
    when pieces are missing, repeated or of different files."""
    if not pieces:
        raise InvalidInput("join_file_pieces needs at least one piece")
    ordered = sorted(pieces, key=lambda p: p.piece)
    first = ordered[0]
    if [p.piece for p in ordered] != list(range(first.pieces)) or any(
        (p.path, p.size, p.mtime_ns, p.pieces) != (first.path, first.size, first.mtime_ns, first.pieces)
        for p in ordered
    ):
        raise InvalidInput(
            f"pieces {[p.piece for p in ordered]} of {first.path} are not the {first.pieces} piece(s) of one file"
        )
    joining_started = thread_time()
    partials: dict[str, ColumnPartial] = {}
    entries: dict[str, bytes] = {}
    for index, plan in enumerate(first.plans):
        scans = [p.scans[index] for p in ordered]
        scanned = [c for c in scans if c is not None]
        partial = _partial(plan, first.rows, first.options, _merge_scans(scanned) if scanned else None)
        partials[plan.spec.name] = partial
        ref = None if plan.node_id is None else (plan.node_id, plan.node_text)
        entries[cache_entry_key(plan.spec, ref)] = partial.to_bytes()
    stripes_scanned = sum(p.stripes_scanned for p in ordered)
    analysis = FileAnalysis(
        first.path, first.size, first.mtime_ns, first.rows, first.raw, partials,
        "scan" if stripes_scanned else "footer", sum(p.bytes_read for p in ordered), stripes_scanned,
        tuple(plan.spec.name for plan in first.plans if plan.metadata is not None),
        sum(p.seconds for p in ordered),
        phases={phase: sum(p.phases.get(phase, 0.0) for p in ordered) for phase in FILE_PHASES},
    )
    # merging the pieces' sketches and serialising the partials counts as sketch work
    analysis.phases[PHASE_SKETCHES] += thread_time() - joining_started
    return FileOutcome(analysis, first.info, entries)


def join_column_groups(groups: Sequence[FilePiece], wanted: Sequence[ColumnSpec]) -> FilePiece:
    """One piece of a file from the same piece scanned by disjoint groups of ``wanted`` (runner.column_groups):
    plans and scans in the order of ``wanted``, as one scan of every column gives them (a column's plan and scan
    do not depend on the other columns scanned with it). Raises InvalidInput when the groups are of different
    pieces or do not hold each wanted column exactly once."""
    if not groups:
        raise InvalidInput("join_column_groups needs at least one group")
    first = groups[0]
    if any((g.path, g.size, g.mtime_ns, g.piece, g.pieces) != (first.path, first.size, first.mtime_ns, first.piece,
                                                               first.pieces) for g in groups):
        raise InvalidInput(f"column groups of different pieces of {first.path} cannot be joined")
    by_name: dict[str, tuple[ColumnPlan, ColumnScan | None]] = {}
    for group in groups:
        for plan, scan in zip(group.plans, group.scans, strict=True):
            if plan.spec.name in by_name:
                raise InvalidInput(f"column {plan.spec.name!r} of {first.path} is in two column groups")
            by_name[plan.spec.name] = (plan, scan)
    if sorted(by_name) != sorted(s.name for s in wanted):
        raise InvalidInput(f"the column groups of {first.path} hold {sorted(by_name)}, not the wanted columns")
    ordered = [by_name[s.name] for s in wanted]
    return replace(
        first,
        plans=tuple(plan for plan, _ in ordered),
        scans=tuple(scan for _, scan in ordered),
        stripes_scanned=max(g.stripes_scanned for g in groups),
        bytes_read=sum(g.bytes_read for g in groups),
        seconds=max(g.seconds for g in groups),
        phases={phase: sum(g.phases.get(phase, 0.0) for g in groups) for phase in first.phases},
    )


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


@dataclass(frozen=True)
class ColumnPlan:
    """What the footer and the sketch metadata answer for one column, and what a scan must add (picklable)."""

    spec: ColumnSpec
    kind: StatsKind
    node_id: int | None  # None: the file lacks the column
    node_text: str
    facts: OrcColumnFacts | None
    metadata: SketchRecord | None
    scanned: bool  # a scan computes what is missing (ColumnScan)
    scan_range: bool  # ... including low/high
    scan_histogram: bool  # ... including the KLL histogram


@dataclass(frozen=True)
class ColumnScan:
    """What a scan of some stripes found for one column."""

    non_null: int
    low: Any
    high: Any
    num_trues: int
    total_length: int
    max_length: int
    sketch: bytes | None
    histogram: bytes | None


@dataclass(frozen=True)
class FilePiece:
    """One file's footer plan plus the scan of the stripes of one of its pieces (picklable, for executors)."""

    path: str
    size: int
    mtime_ns: int
    piece: int
    pieces: int
    rows: int
    raw: int
    info: bytes
    options: ScanOptions
    plans: tuple[ColumnPlan, ...]
    scans: tuple[ColumnScan | None, ...]
    stripes_scanned: int
    bytes_read: int
    seconds: float = 0.0
    #: CPU seconds of this piece per phase (partial.FILE_PHASES).
    phases: dict[str, float] = field(default_factory=dict)


def _merge_scans(scans: Sequence[ColumnScan]) -> ColumnScan:
    """The scans of consecutive stripe ranges as one (in stripe order: HLL bytes as one scan gives them)."""
    if len(scans) == 1:
        return scans[0]
    low = high = None
    for scan in scans:
        low = min_present(low, scan.low)
        high = max_present(high, scan.high)
    sketches = [HyperLogLog.from_bytes(c.sketch) for c in scans if c.sketch is not None]
    histograms = [c.histogram for c in scans if c.histogram is not None]
    return ColumnScan(
        non_null=sum(c.non_null for c in scans),
        low=low,
        high=high,
        num_trues=sum(c.num_trues for c in scans),
        total_length=sum(c.total_length for c in scans),
        max_length=max(c.max_length for c in scans),
        sketch=merge_hlls(sketches).to_bytes() if sketches else None,
        histogram=(histograms[0] if len(histograms) == 1 else kll_merge_all(histograms)) if histograms else None,
    )


def _analyze_open_file(
    reader: OrcReader, counter: RangeFile, path: str, size: int, mtime_ns: int,
    wanted: tuple[ColumnSpec, ...], options: ScanOptions, piece: int, pieces: int, cpu_started: float,
) -> FilePiece:
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
            offsets = [stripe.offset for stripe in reader.stripes]
            for stripe in stripes_of_piece(offsets, size, piece, pieces):
                stripes_scanned += 1
                for plan, chunk in zip(scanning, scan_stripe_columns(reader, stripe, requests), strict=True):
                    _feed(plan, chunk)
    scan_finished = thread_time()
    column_plans = tuple(
        ColumnPlan(p.spec, p.kind, None if p.node is None else p.node.id, "" if p.node is None else str(p.node),
                   p.facts, p.metadata, p.sketcher is not None, p.sketcher is not None and p.sketcher.want_range,
                   p.sketcher is not None and p.sketcher.kll is not None)
        for p in plans
    )
    scans = tuple(_scan_of(p) for p in plans)
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
    return FilePiece(path, size, mtime_ns, piece, pieces, rows, raw, json.dumps(file_info(reader, raw)).encode(),
                     options, column_plans, scans, stripes_scanned, counter.bytes_read, phases=phases)


def _scan_of(plan: _Plan) -> ColumnScan | None:
    sk = plan.sketcher
    if sk is None:
        return None
    return ColumnScan(plan.scanned_non_null, sk.low, sk.high, sk.num_trues, sk.total_length, sk.max_length,
                      sk.sketch_bytes(), sk.histogram_bytes())


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


def _partial(plan: ColumnPlan, rows: int, options: ScanOptions, sk: ColumnScan | None) -> ColumnPartial:
    kind = plan.kind
    if plan.node_id is None:
        # a column the file lacks reads as NULL in every row
        return absent_partial(kind, rows, options)
    facts = plan.facts
    meta = plan.metadata
    missing: set[str] = set()
    if facts is not None and facts.num_nulls is not None:
        nulls = facts.num_nulls
    elif sk is not None:
        nulls = rows - sk.non_null
    else:
        nulls, missing = 0, missing | {MISSING_NULLS}
    non_null = rows - nulls
    low = high = None
    if kind in RANGE_KINDS and non_null:
        if facts is not None and facts.has_range:
            low, high = facts.low, facts.high
        elif sk is not None and plan.scan_range:
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
        elif sk is not None and sk.sketch is not None:
            sketch = sk.sketch
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
        elif sk is not None and plan.scan_histogram:
            histogram = sk.histogram
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
