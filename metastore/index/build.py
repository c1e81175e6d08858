"""Building and updating an index's files from the table's data files.

``plan_parts`` groups the data files by the index level; ``build_parts`` writes each part whose files changed
(files added, rewritten or removed, by path, size and mtime) and keeps the others as they are. A rewritten part
takes the stripe values of its unchanged files from the old part file (parts.PartReader.reuse), so only new
and changed data files are scanned. New part files get new names; the caller records them, then deletes the
obsolete ones, so a reader never sees a half-written part.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from metastore.index.columns import ColumnType, column_type, require_indexable
from metastore.index.coverage import FileValues
from metastore.index.errors import IndexFileCorrupt
from metastore.index.model import DataFile, IndexLevel, IndexPart, IndexRecord
from metastore.index.parts import PartReader, write_part
from metastore.index.scan import scan_column
from metastore.locations import local_path

DEFAULT_FPP = 0.001


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
    parts_written: int = 0
    parts_kept: int = 0
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


def _local(location: str) -> str:
    path = local_path(location)
    if path is None:
        raise IndexFileCorrupt(location, "is not on the local filesystem; index files are local for now")
    return str(path)


def build_parts(
    record: IndexRecord,
    targets: Sequence[BuildTarget],
    *,
    column_position: int | None,
    previous: Sequence[IndexPart] = (),
    force: bool = False,
    on_file: Callable[[DataFile], None] | None = None,
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
    for plan in planned:
        old = old_by_key.get(plan.key)
        wanted = {f.identity for f in plan.files}
        if old is not None and not force and {f.identity for f in old.files} == wanted and _readable(old, record, ctype):
            report.parts.append(IndexPart(plan.key, plan.partition, old.location, old.size, old.files))
            report.parts_kept += 1
            continue
        reused: dict[tuple[str, int, int], FileValues] = {}
        if old is not None and not force:
            try:
                reader = PartReader(_local(old.location), kind=record.kind.value, column=record.column, ctype=ctype)
                reused = {fv.file.identity: fv for fv in reader.reuse(wanted)}
            except IndexFileCorrupt:
                reused = {}  # scan everything again
        values: list[FileValues] = []
        for f in plan.files:
            hit = reused.get(f.identity)
            if hit is None:
                hit = scan_column(f, record.column, ctype, column_position)
                report.files_scanned += 1
                report.bytes_scanned += f.size
                if on_file is not None:
                    on_file(f)
            values.append(hit)
        location = part_location(record, plan.key)
        size = write_part(_local(location), kind=record.kind.value, column=record.column, ctype=ctype,
                          files=values, fpp=fpp_of(record))
        report.parts.append(IndexPart(plan.key, plan.partition, location, size, plan.files))
        report.parts_written += 1
        if old is not None:
            report.obsolete.append(old.location)
    report.obsolete.extend(p.location for p in previous if p.key not in planned_keys)
    report.seconds = time.perf_counter() - started
    return report


def _readable(part: IndexPart, record: IndexRecord, ctype: ColumnType) -> bool:
    try:
        path = _local(part.location)
        if not Path(path).is_file() or Path(path).stat().st_size != part.size:
            return False
        PartReader(path, kind=record.kind.value, column=record.column, ctype=ctype)
    except IndexFileCorrupt:
        return False
    return True


def delete_part_files(locations: Sequence[str]) -> None:
    """Delete index files (missing ones are fine)."""
    for location in locations:
        path = local_path(location)
        if path is not None:
            path.unlink(missing_ok=True)
