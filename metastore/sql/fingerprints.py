"""What an ANALYZE may skip: targets whose inputs and stored statistics are exactly those of a previous run.

Every ANALYZE ... FOR COLUMNS records a fingerprint in each analysed partition's parameters (the table's, for an
unpartitioned table) under :data:`FINGERPRINT_KEY`: a digest of the target's *inputs* (each data file's URL,
size, modification time and version; the columns and their types; whether histograms were asked for; the
harvest's format) and a digest of the *statistics written* (every column statistic but the sketches, which a
server need not return, and numFiles, totalSize, numRows and rawDataSize). A partitioned table's own parameters
get the digest of every partition's inputs and of the table-level statistics, when a run covered every
partition.

A later ANALYZE with a per-file store (:func:`find_unchanged`) lists the files, reads nothing, and takes a
target as unchanged when its inputs digest matches and the statistics stored *now*, read back, still digest to
what was written. So statistics written since by anyone else (Hive, Trino, a delete), or a run that failed
between writing parameters and statistics, are noticed and the target is analysed again. Unchanged targets are
neither read nor rewritten; when every target and the table level are unchanged, the run loads none of the
harvest (numpy, the ORC reader) and writes nothing. Statistics depend only on the inputs (HyperLogLog sketches
are deterministic), so skipping gives what a re-run would write, but for lastAnalyzed, which keeps the time of
the run that computed them.

Only the standard library and the client are used here: this runs before anything heavy is imported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import TYPE_CHECKING, TypeVar

from metastore.sql.basic_stats import NUM_FILES, NUM_ROWS, RAW_DATA_SIZE, TOTAL_SIZE, stats_accurate

if TYPE_CHECKING:
    from metastore.catalog import FieldSchema, Table
    from metastore.client import MetastoreClient
    from metastore.sql.analysis import AnalyzeTarget
    from metastore.stats.model import ColumnStatsEntry
    from metastore.storage import FileRef

__all__ = [
    "FINGERPRINT_KEY",
    "Unchanged",
    "find_unchanged",
    "fingerprint",
    "inputs_digest",
    "inputs_digests",
    "stats_digest",
    "table_inputs_digest",
]

#: The table/partition parameter holding the fingerprint (a statistics parameter: writing it needs only the
#: write_stats permission).
FINGERPRINT_KEY = "metastore.analyze.fingerprint"
#: Bumped whenever harvest's results for the same files change meaning (then every fingerprint is stale).
HARVEST_FORMAT = 1
_VERSION = "1"
#: Partitions whose statistics are read back per call.
READ_BATCH = 500
#: Sketches are left out of the statistics digest: a server returns them only when configured to.
_SKETCH_FIELDS = frozenset({"bit_vector", "histogram"})
_BASIC_KEYS = (NUM_FILES, TOTAL_SIZE, NUM_ROWS, RAW_DATA_SIZE)
K = TypeVar("K")


def _hasher() -> hashlib.blake2b:
    return hashlib.blake2b(digest_size=16)


def _column_part(columns: Sequence[FieldSchema], histograms: bool) -> bytes:
    text = "\x1f".join(f"{c.name.lower()}:{' '.join(c.type.lower().split())}" for c in columns)
    return f"harvest={HARVEST_FORMAT}\x1ehistograms={int(histograms)}\x1e{text}\x1e".encode()


def inputs_digest(files: Sequence[FileRef], columns: Sequence[FieldSchema], histograms: bool) -> str:
    """The digest of one target's inputs: its files as listed (URL, size, mtime, version), the columns asked
    for with their types, whether histograms were asked for."""
    return _files_digest(_column_part(columns, histograms), files)


def inputs_digests(
    files_of: Mapping[K, Sequence[FileRef]], columns: Sequence[FieldSchema], histograms: bool
) -> dict[K, str]:
    """:func:`inputs_digest` of each target's files (by target), the columns' part made once, not per target."""
    columns_part = _column_part(columns, histograms)
    return {key: _files_digest(columns_part, files) for key, files in files_of.items()}


def _files_digest(columns_part: bytes, files: Sequence[FileRef]) -> str:
    h = _hasher()
    h.update(columns_part)
    for ref in sorted(files, key=lambda f: f.url):
        h.update(f"{ref.url}\x1f{ref.size}\x1f{ref.mtime_ns}\x1f{ref.version}\x1e".encode())
    return h.hexdigest()


def table_inputs_digest(partition_inputs: Mapping[str, str], columns: Sequence[FieldSchema], histograms: bool) -> str:
    """The digest of a partitioned table's inputs: every partition's inputs digest, by partition name."""
    h = _hasher()
    h.update(_column_part(columns, histograms))
    for name in sorted(partition_inputs):
        h.update(f"{name}\x1f{partition_inputs[name]}\x1e".encode())
    return h.hexdigest()


def stats_digest(entries: Sequence[ColumnStatsEntry], params: Mapping[str, str] | None) -> str:
    """The digest of statistics as stored: each column's values but its sketches, and the basic statistics in
    ``params`` (None: a table level without its own basic statistics). Spelling that a round trip through a
    server may change is left out or normalised: the column type (part of the inputs), the statistics class (a
    timestamp column's statistics may come back as long statistics), a decimal's exponent."""
    h = _hasher()
    if params is not None:
        h.update("\x1f".join(f"{key}={params.get(key)}" for key in _BASIC_KEYS).encode() + b"\x1e")
    for entry in sorted(entries, key=lambda e: e.column.lower()):
        stats = entry.stats
        # the text of repr((column, [(field, value), ...])), its fixed parts made once per class
        values = ", ".join([f"{head}{_canonical(getattr(stats, name))!r})"
                            for name, head in _digested_fields(type(stats))])
        h.update(f"({entry.column.lower()!r}, [{values}])".encode() + b"\x1e")
    return h.hexdigest()


def _digested_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """The fields of a statistics class that stats_digest reads, by name (its values sorted by field name: the
    names are distinct), each with the text its value follows in the digested repr, found once per class (a
    re-run digests every partition's statistics read back)."""
    found = _DIGESTED_FIELDS.get(cls)
    if found is None:
        names = sorted(f.name for f in fields(cls) if f.name not in _SKETCH_FIELDS)
        found = _DIGESTED_FIELDS[cls] = tuple((name, f"({name!r}, ") for name in names)
    return found


#: _digested_fields of each statistics class seen (one entry a kind).
_DIGESTED_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {}


def _canonical(value: object) -> object:
    # repr is exact for ints and floats (the shortest round-tripping form); a Decimal is its normalised digits
    if isinstance(value, Decimal):
        return ("decimal", str(value.normalize()))
    return value


def fingerprint(inputs: str, stats: str) -> str:
    """The parameter value recording both digests."""
    return f"{_VERSION}:{inputs}:{stats}"


def _parse_fingerprint(value: str | None) -> tuple[str, str] | None:
    if not value:
        return None
    parts = value.split(":")
    if len(parts) != 3 or parts[0] != _VERSION:
        return None
    return parts[1], parts[2]


def _accurate(params: Mapping[str, str], columns: Sequence[FieldSchema]) -> bool:
    # COLUMN_STATS_ACCURATE must still vouch for the basic and every column's statistics (Hive clears the flags
    # when data changes behind the statistics)
    return stats_accurate(params, [c.name for c in columns])


@dataclass(frozen=True)
class Unchanged:
    """Which targets need no work: ``targets`` by name (None: an unpartitioned table), ``table_level`` whether
    the table-level statistics of a partitioned table are also unchanged; ``inputs`` each target's inputs
    digest (for the fingerprints the run writes)."""

    targets: frozenset[str | None]
    table_level: bool
    inputs: dict[str | None, str]

    def everything(self, targets: Sequence[AnalyzeTarget], partitioned: bool, covers_table: bool) -> bool:
        """Whether the whole statement has nothing to do."""
        if not all(t.name in self.targets for t in targets):
            return False
        return self.table_level or not partitioned or not covers_table

    def table_level_kept(self, partitioned: bool, covers_table: bool) -> bool:
        """Whether the table level of a partitioned table needs no writing (merged from every partition)."""
        return partitioned and covers_table and self.table_level


def find_unchanged(
    client: MetastoreClient, table: Table, targets: Sequence[AnalyzeTarget], columns: Sequence[FieldSchema],
    *, histograms: bool, partitions_total: int,
) -> Unchanged:
    """The targets (and table level) whose fingerprints match their inputs and whose stored statistics are
    still those written with the fingerprint. Reads statistics back only for targets whose inputs match."""
    names = [c.name for c in columns]
    inputs = inputs_digests({t.name: t.files for t in targets}, columns, histograms)
    if not table.partition_keys:
        recorded = _parse_fingerprint(table.parameters.get(FINGERPRINT_KEY))
        kept = False
        if recorded is not None and recorded[0] == inputs[None] and _accurate(table.parameters, columns):
            entries = client.table_statistics(table.db_name, table.table_name, names, sketches=False)
            kept = stats_digest(entries, table.parameters) == recorded[1]
        return Unchanged(frozenset({None}) if kept else frozenset(), False, inputs)

    candidates: dict[str, str] = {}  # partition name -> recorded statistics digest
    params_of: dict[str, Mapping[str, str]] = {}
    for t in targets:
        assert t.partition is not None and t.name is not None
        params = t.partition.parameters
        recorded = _parse_fingerprint(params.get(FINGERPRINT_KEY))
        if recorded is not None and recorded[0] == inputs[t.name] and _accurate(params, columns):
            candidates[t.name] = recorded[1]
            params_of[t.name] = params
    same: set[str | None] = set()
    pending = list(candidates)
    for start in range(0, len(pending), READ_BATCH):
        chunk = pending[start : start + READ_BATCH]
        stored = client.partition_statistics(table.db_name, table.table_name, chunk, names, sketches=False)
        same.update(n for n in chunk if stats_digest(stored.get(n, []), params_of[n]) == candidates[n])
    table_level = False
    if len(targets) == partitions_total:
        recorded = _parse_fingerprint(table.parameters.get(FINGERPRINT_KEY))
        by_name = {str(name): digest for name, digest in inputs.items()}
        if recorded is not None and recorded[0] == table_inputs_digest(by_name, columns, histograms):
            stored_table = client.table_statistics(table.db_name, table.table_name, names, sketches=False)
            table_level = stats_digest(stored_table, None) == recorded[1]
    return Unchanged(frozenset(same), table_level, inputs)
