"""Results of harvest runs: statistics of a table or partition merged from its files' partials.

:class:`AnalyzeResult` carries each column's Hive statistics and the mergeable partials behind them, so that
results merge (:func:`merge_results`, partitions into a table) and split (:func:`results_by_partition`, one
run over many partitions' files) without reading files again. :class:`BasicStats` is Hive's basic statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from metastore.errors import InvalidInput
from metastore.stats.harvest.partial import MISSING_HISTOGRAM, ColumnPartial, FileAnalysis, merge_partials
from metastore.stats.harvest.scan import ScanOptions, absent_partial
from metastore.stats.model import ColumnStats

__all__ = ["AnalyzeResult", "BasicStats", "merge_results", "result_of", "results_by_partition", "split_result"]


@dataclass(frozen=True)
class BasicStats:
    """Hive's basic statistics of a table or partition (``numRows``, ``numFiles``, ``totalSize``,
    ``rawDataSize``); row counts and raw size are None for NOSCAN."""

    num_rows: int | None
    num_files: int
    total_size: int
    raw_data_size: int | None


@dataclass(frozen=True)
class AnalyzeResult:
    """Statistics of the requested columns merged over the files, plus how the work went.

    ``columns`` maps each requested column to its Hive statistics; ``partials`` keeps the mergeable form
    (counts and sketches) so that partition results can be merged into table results (:func:`merge_results`).
    ``missing`` names, per column, facts left uncomputed (e.g. ``ndv`` with ``want_ndv=False``).
    """

    columns: dict[str, ColumnStats]
    partials: dict[str, ColumnPartial]
    files: tuple[FileAnalysis, ...]
    num_rows: int
    raw_data_size: int
    files_read: int
    bytes_read: int
    files_reused: int
    seconds: float
    missing: dict[str, frozenset[str]] = field(default_factory=dict)
    want_ndv: bool = True
    want_histograms: bool = False
    #: Seconds per phase of the run that produced this result (empty for merged or split results): the analysed
    #: files' CPU seconds per ``partial.FILE_PHASES``, summed, and this process's wall seconds of ``cache``,
    #: ``harvest`` and ``merge`` (see ``runner``).
    phases: dict[str, float] = field(default_factory=dict)
    #: Partitions failed by an unreadable or corrupt file (``analyze_files(..., partition_failures=True)``): the
    #: partition's name (None: an unpartitioned table's files) and the error naming the file. Their files are
    #: not part of this result.
    failed: dict[str | None, str] = field(default_factory=dict)

    @property
    def num_files(self) -> int:
        """Number of files analysed."""
        return len(self.files)

    @property
    def total_size(self) -> int:
        """Sum of the file sizes."""
        return sum(f.size for f in self.files)



def merge_results(results: Iterable[AnalyzeResult]) -> AnalyzeResult:
    """One result for the rows of several (e.g. per-partition results into table statistics): counts add,
    NDV and histogram sketches merge. The results must cover the same columns."""
    parts = list(results)
    if not parts:
        raise InvalidInput("merge_results needs at least one result")
    names = list(parts[0].partials)
    for other in parts[1:]:
        if list(other.partials) != names:
            raise InvalidInput(f"cannot merge results for columns {list(other.partials)} into {names}")
    merged = {name: merge_partials([r.partials[name] for r in parts]) for name in names}
    return AnalyzeResult(
        columns={n: p.to_stats() for n, p in merged.items()},
        partials=merged,
        files=tuple(f for r in parts for f in r.files),
        num_rows=sum(r.num_rows for r in parts),
        raw_data_size=sum(r.raw_data_size for r in parts),
        files_read=sum(r.files_read for r in parts),
        bytes_read=sum(r.bytes_read for r in parts),
        files_reused=sum(r.files_reused for r in parts),
        seconds=sum(r.seconds for r in parts),
        missing={n: m for n in names if (m := frozenset().union(*(r.missing.get(n, frozenset()) for r in parts)))},
        want_ndv=parts[0].want_ndv,
        want_histograms=parts[0].want_histograms,
    )


def results_by_partition(result: AnalyzeResult, partition_of: Callable[[str], str]) -> dict[str, AnalyzeResult]:
    """Split one run over the files of many partitions into a result per partition, without reading anything:
    ``partition_of(path)`` names the partition of each file (e.g. its directory). Merging the parts with
    :func:`merge_results` gives the table statistics. Partitions keep the order of their first file."""
    groups: dict[str, list[FileAnalysis]] = {}
    for analysis in result.files:
        groups.setdefault(partition_of(analysis.path), []).append(analysis)
    options = ScanOptions(want_ndv=result.want_ndv, want_histograms=result.want_histograms, scan=True)
    names = list(result.partials)
    out = {}
    for key, files in groups.items():
        merged = {name: merge_partials([f.columns[name] for f in files]) for name in names}
        out[key] = result_of(tuple(files), merged, options, sum(f.seconds for f in files))
    return out


def split_result(result: AnalyzeResult, counts: Sequence[int],
                 statistics: Sequence[bool] | None = None) -> list[AnalyzeResult]:
    """Split one run over consecutive groups of files (``counts[i]`` files each, in the order the run was given
    them, e.g. each partition's files) into one result per group, without reading anything; a group of no files
    has all-null statistics of 0 rows. A group whose ``statistics[i]`` is False gets its files' facts (rows,
    sizes, what was read) but no merged statistics (``columns`` and ``partials`` empty), sparing its merges."""
    if sum(counts) != len(result.files) or any(c < 0 for c in counts):
        raise InvalidInput(f"cannot split a result of {len(result.files)} file(s) into groups of {list(counts)}")
    if statistics is not None and len(statistics) != len(counts):
        raise InvalidInput(f"{len(statistics)} statistics flags for {len(counts)} groups")
    options = ScanOptions(want_ndv=result.want_ndv, want_histograms=result.want_histograms, scan=True)
    out = []
    start = 0
    for index, count in enumerate(counts):
        files = result.files[start : start + count]
        start += count
        if statistics is not None and not statistics[index]:
            out.append(result_of(files, {}, options, sum(f.seconds for f in files)))
            continue
        merged = {
            name: merge_partials([f.columns[name] for f in files]) if files else absent_partial(p.kind, 0, options)
            for name, p in result.partials.items()
        }
        out.append(result_of(files, merged, options, sum(f.seconds for f in files)))
    return out


def result_of(analyses: tuple[FileAnalysis, ...], merged: dict[str, ColumnPartial], options: ScanOptions,
            seconds: float) -> AnalyzeResult:
    read = [a for a in analyses if a.source != "cache"]
    return AnalyzeResult(
        columns={name: p.to_stats() for name, p in merged.items()},
        partials=merged,
        files=analyses,
        num_rows=sum(a.num_rows for a in analyses),
        raw_data_size=sum(a.raw_data_size for a in analyses),
        files_read=len(read),
        bytes_read=sum(a.bytes_read for a in read),
        files_reused=len(analyses) - len(read),
        seconds=seconds,
        missing=_reported_missing(merged, options),
        want_ndv=options.want_ndv,
        want_histograms=options.want_histograms,
    )


def _reported_missing(partials: Mapping[str, ColumnPartial], options: ScanOptions) -> dict[str, frozenset[str]]:
    # histograms are optional in Hive's statistics: one not asked for is absent, not missing
    ignored = frozenset() if options.want_histograms else frozenset({MISSING_HISTOGRAM})
    out = {}
    for name, partial in partials.items():
        missing = partial.missing - ignored
        if missing:
            out[name] = missing
    return out


# ----------------------------------------------------------------------------------------- one file
