"""Harvesting column statistics from ORC files: what ``ANALYZE TABLE ... COMPUTE STATISTICS [FOR COLUMNS]`` runs.

:func:`analyze_files` computes, for the requested top-level columns of a table (or partition) stored in ORC
files, the statistics Hive's ANALYZE stores, merged over the files:

1. **Footers first.** Row counts, null counts, low/high values, true/false counts and total string/binary lengths
   (→ ``avgColLen``) come from each file's footer statistics (:mod:`metastore.stats.orc_convert` decides what
   is trusted), without reading data.
2. **Sketch metadata.** Files written by this project carry each column's HyperLogLog, longest value and KLL
   histogram in their ORC user metadata (:mod:`metastore.stats.orc_sketch_metadata`); those columns need no scan.
3. **A scan only for what is still missing**, reading only the columns and streams needed: NDV (HyperLogLog
   over vectorised Murmur3 hashes; string dictionaries are hashed once per entry), ``maxColLen`` (LENGTH streams,
   or the dictionary's LENGTH stream, never the string bytes), KLL histograms (behind ``want_histograms``),
   and low/high only where footers have none.
4. **Incremental.** With a :class:`~metastore.stats.filecache.FileStatsCache`, per-file results (sketches
   included) are kept by path, size and mtime; a re-run reads only files that changed and merges again.

Conventions (what the numbers mean):

- ``numNulls`` = rows − non-null values.
- ``numDVs`` counts distinct **non-null** values: NULL is never added to the sketch, which is what Hive does
  (``compute_bit_vector_hll`` skips nulls; Hive 4 reports 6 distinct values for an int column holding 2..7 and
  seven NULLs, ``stats_histogram_null.q.out``). Trino's reader subtracts one when nulls exist, a convention from
  older Hive versions; its fallback for Spark statistics does not. Like Spark, the estimate is capped at the
  non-null count (and is 0 for a column without values).
- NDV sketches are Hive HyperLogLog bitVectors with p = 14 (~0.8 % standard error); Hive's own p = 10 sketches
  merge with them (a merge meets at the smaller p). Values are hashed as Hive hashes them
  (:mod:`metastore.stats.ndv`): decimals as doubles, dates as days, timestamps as whole epoch seconds, strings
  as their stored UTF-8 bytes (char(n) values with their padding).
- ``avgColLen`` = total bytes / non-null values and ``maxColLen`` = the longest value in **bytes** (what ORC's
  LENGTH streams and footers record). Hive 4 itself measures characters (``LENGTH()``) and averages over all
  rows with NULL as 0; for ASCII data without nulls the numbers agree.
- Histograms are DataSketches KLL float sketches (k = 200) of the values as Hive 4 feeds them
  (``ds_kll_sketch(cast(col as float))``; dates and timestamps through ``unix_timestamp``, i.e. epoch seconds).
- Table statistics merged from files (or from partitions with :func:`merge_results`) add counts exactly and
  merge sketches — the table NDV is the estimate of the union, never the largest partition NDV.

Files are matched to table columns by name (exact, then case-insensitive); files whose top-level fields are all
named ``_colN`` (Hive before HIVE-4243, ``orc.force.positional.evolution``) are matched by position in the
table's column order. A column a file lacks reads as all NULL (Hive's schema evolution). Integer files may back
bigint/double/decimal columns (Hive's widening); other mismatches are a :class:`HarvestError`. Hive ACID files
and timestamps of files without a writer time zone (read as UTC) are the known limits.

API: :func:`analyze_files` → :class:`AnalyzeResult` (``columns``: Hive statistics per column; ``partials``: the
mergeable form; ``files``: one :class:`FileAnalysis` each); :func:`results_by_partition` splits one run over many
partitions' files into per-partition results and :func:`merge_results` merges results (partitions → table);
:func:`basic_stats` → :class:`BasicStats` for ``ANALYZE ... COMPUTE STATISTICS [NOSCAN]``.

The package's parts, each usable on its own (the Spark pipeline runs :func:`~.scan.analyze_file` on executors
and merges the partials on the driver with the same code as the local runner):

- :mod:`.partial` — per-file partial results (:class:`ColumnPartial`, :class:`FileAnalysis`): exact counts and
  HLL/KLL sketches as bytes, mergeable, serialisable and picklable;
- :mod:`.scan` — one file: footers first, then a stream-selective scan of what they lack (:func:`~.scan.analyze_file`);
- :mod:`.runner` — the local runner: process pool, file cache, progress (:func:`analyze_files`, :func:`basic_stats`);
- :mod:`.allocator` — worker processes keep freed memory for reuse (numpy's temporaries of a scan);
- :mod:`.result` — merged results per table or partition (:class:`AnalyzeResult`, :func:`merge_results`,
  :func:`results_by_partition`).

Sketching itself (:class:`ColumnSketcher`) is :mod:`metastore.stats.sketcher`, shared with the writers that store
sketches in ORC metadata (:mod:`metastore.stats.orc_sketch_metadata`), which harvest reads.
"""

from metastore.stats.harvest.partial import (
    FILE_PHASES,
    MISSING_HISTOGRAM,
    MISSING_MAX_LENGTH,
    MISSING_NDV,
    MISSING_NULLS,
    MISSING_RANGE,
    MISSING_TOTAL_LENGTH,
    MISSING_TRUES,
    ColumnPartial,
    FileAnalysis,
    merge_partials,
)
from metastore.stats.harvest.result import (
    AnalyzeResult,
    BasicStats,
    merge_results,
    results_by_partition,
    split_result,
)
from metastore.stats.harvest.runner import PHASE_CACHE, PHASE_HARVEST, PHASE_MERGE, analyze_files, basic_stats
from metastore.stats.harvest.scan import HarvestError
from metastore.stats.sketcher import SKETCH_P, ColumnSketcher

__all__ = [
    "FILE_PHASES",
    "PHASE_CACHE",
    "PHASE_HARVEST",
    "PHASE_MERGE",
    "MISSING_HISTOGRAM",
    "MISSING_MAX_LENGTH",
    "MISSING_NDV",
    "MISSING_NULLS",
    "MISSING_RANGE",
    "MISSING_TOTAL_LENGTH",
    "MISSING_TRUES",
    "SKETCH_P",
    "AnalyzeResult",
    "BasicStats",
    "ColumnPartial",
    "ColumnSketcher",
    "FileAnalysis",
    "HarvestError",
    "analyze_files",
    "basic_stats",
    "merge_partials",
    "merge_results",
    "results_by_partition",
    "split_result",
]
