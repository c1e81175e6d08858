"""Per-file partial results of harvest: mergeable column statistics, as workers (local or Spark) produce them.

A :class:`ColumnPartial` holds one column's exact counts, low/high and its HLL and KLL sketches as bytes over
some rows (one file, or several merged); partials of the same column merge (:func:`merge_partials`), serialise
(:meth:`ColumnPartial.to_bytes`) and pickle, so they can travel from executors and be kept in the file cache.
A :class:`FileAnalysis` is one file's partials with its facts and how much was read.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from metastore.errors import InvalidInput
from metastore.stats.hll import HyperLogLog, check_sketch_bytes, merge_sketch_bytes
from metastore.stats.kinds import KIND_SPECS
from metastore.stats.kll import kll_from_bytes, kll_merge_all
from metastore.stats.merge import max_present, min_present
from metastore.stats.model import ColumnStats, StatsKind

__all__ = [
    "FILE_PHASES",
    "PHASE_DECODE",
    "PHASE_FOOTERS",
    "PHASE_HASHING",
    "PHASE_SKETCHES",
    "KLL_KINDS",
    "LENGTH_KINDS",
    "MISSING_HISTOGRAM",
    "MISSING_MAX_LENGTH",
    "MISSING_NDV",
    "MISSING_NULLS",
    "MISSING_RANGE",
    "MISSING_TOTAL_LENGTH",
    "MISSING_TRUES",
    "NDV_KINDS",
    "RANGE_KINDS",
    "ColumnPartial",
    "FileAnalysis",
    "PartialAccumulator",
    "check_sketch",
    "merge_partials",
    "parse_sketch",
    "parsed_sketches",
]

#: The phases of one file's analysis, as FileAnalysis.phases names them.
PHASE_FOOTERS = "footers"
PHASE_DECODE = "scan and decode"
PHASE_HASHING = "hashing"
PHASE_SKETCHES = "sketch updates"
FILE_PHASES = (PHASE_FOOTERS, PHASE_DECODE, PHASE_HASHING, PHASE_SKETCHES)

#: Facts a partial may lack (footer-only runs, NDV or histograms not asked for).
MISSING_RANGE = "range"
MISSING_NULLS = "nulls"
MISSING_TRUES = "trues"
MISSING_TOTAL_LENGTH = "total_length"
MISSING_MAX_LENGTH = "max_length"
MISSING_NDV = "ndv"
MISSING_HISTOGRAM = "histogram"

#: Kinds with low/high values, with lengths, with an NDV sketch (booleans and binaries have none) and with a
#: KLL histogram, from the kinds table.
RANGE_KINDS = frozenset(k for k, spec in KIND_SPECS.items() if spec.values is not None)
LENGTH_KINDS = frozenset(k for k, spec in KIND_SPECS.items() if spec.has_lengths)
NDV_KINDS = frozenset(k for k, spec in KIND_SPECS.items() if spec.has_ndv)
KLL_KINDS = frozenset(k for k, spec in KIND_SPECS.items() if spec.has_histogram)


@dataclass(frozen=True)
class ColumnPartial:
    """Mergeable statistics of one column over some rows (one file, or several merged): exact counts plus
    sketches. ``missing`` names the facts that were not computed (see the ``MISSING_*`` names)."""

    kind: StatsKind
    rows: int
    num_nulls: int
    low: Any = None
    high: Any = None
    num_trues: int = 0
    total_length: int = 0
    max_length: int = 0
    sketch: bytes | None = None
    histogram: bytes | None = None
    missing: frozenset[str] = frozenset()

    @property
    def non_null(self) -> int:
        """Rows holding a value."""
        return self.rows - self.num_nulls

    def merged(self, other: ColumnPartial) -> ColumnPartial:
        """The partial of both sets of rows (counts add, ranges widen, sketches merge)."""
        return merge_partials([self, other])

    def ndv(self) -> int:
        """The NDV estimate of the non-null values (0 without a sketch or without values)."""
        if self.sketch is None or self.non_null == 0:
            return 0
        return max(1, min(_stored_estimate(self.sketch), self.non_null))

    def to_stats(self) -> ColumnStats:
        """The Hive statistics these rows have (unknown NDV is 0; unknown maxColLen is ceil(avgColLen))."""
        spec = KIND_SPECS[self.kind]
        non_null = self.non_null
        avg = self.total_length / non_null if non_null else 0.0
        max_len = self.max_length if MISSING_MAX_LENGTH not in self.missing else math.ceil(avg)
        return spec.build(
            num_nulls=self.num_nulls,
            bit_vector=self.sketch if spec.has_ndv else None,
            num_dvs=self.ndv(),
            histogram=self.histogram,
            low=self.low,
            high=self.high,
            num_trues=self.num_trues,
            num_falses=non_null - self.num_trues,
            max_col_len=max_len,
            avg_col_len=avg,
        )

    # ------------------------------------------------------------------------------------------ storage

    def to_bytes(self) -> bytes:
        """A compact serialisation (for the file cache): a JSON header followed by the sketch bytes."""
        header = {
            "kind": self.kind.name,
            "rows": self.rows,
            "nulls": self.num_nulls,
            "low": _encode_value(self.low),
            "high": _encode_value(self.high),
            "trues": self.num_trues,
            "total": self.total_length,
            "max": self.max_length,
            "sketch": None if self.sketch is None else len(self.sketch),
            "hist": None if self.histogram is None else len(self.histogram),
            "missing": sorted(self.missing),
        }
        head = json.dumps(header, separators=(",", ":")).encode()
        return len(head).to_bytes(4, "little") + head + (self.sketch or b"") + (self.histogram or b"")

    @classmethod
    def from_bytes(cls, data: bytes) -> ColumnPartial:
        """Read :meth:`to_bytes` output; ValueError when it is not one."""
        try:
            n = int.from_bytes(data[:4], "little")
            # (the header is ASCII JSON as to_bytes writes it: decoded as UTF-8 straight away, not after
            # json.loads' detection of the encoding of bytes)
            header = _JSON.decode(data[4 : 4 + n].decode())
            if not isinstance(header, dict):
                raise TypeError("the header is not a JSON object")
            pos = 4 + n
            sketch = hist = None
            if header["sketch"] is not None:
                sketch = data[pos : pos + header["sketch"]]
                pos += header["sketch"]
            if header["hist"] is not None:
                hist = data[pos : pos + header["hist"]]
            return cls(
                kind=StatsKind[header["kind"]],
                rows=int(header["rows"]),
                num_nulls=int(header["nulls"]),
                low=_decode_value(header["low"]),
                high=_decode_value(header["high"]),
                num_trues=int(header["trues"]),
                total_length=int(header["total"]),
                max_length=int(header["max"]),
                sketch=sketch,
                histogram=hist,
                missing=frozenset(header["missing"]),
            )
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise ValueError(f"not a serialised column partial: {exc}") from None


def merge_partials(partials: Sequence[ColumnPartial]) -> ColumnPartial:
    """One partial for the rows of all ``partials`` (counts add, ranges widen, sketches merge, each sketch
    parsed and the result serialised once). Raises InvalidInput for partials of different kinds."""
    if not partials:
        raise InvalidInput("merge_partials needs at least one partial")
    first = partials[0]
    if len(partials) == 1:
        return first
    for other in partials[1:]:
        if other.kind is not first.kind:
            raise InvalidInput(f"cannot merge {other.kind.name} statistics into {first.kind.name} statistics")
    low = high = None
    for p in partials:
        low = min_present(low, p.low)
        high = max_present(high, p.high)
    return ColumnPartial(
        kind=first.kind,
        rows=sum(p.rows for p in partials),
        num_nulls=sum(p.num_nulls for p in partials),
        low=low,
        high=high,
        num_trues=sum(p.num_trues for p in partials),
        total_length=sum(p.total_length for p in partials),
        max_length=max(p.max_length for p in partials),
        sketch=_merge_sketches([p.sketch for p in partials if p.sketch is not None]),
        histogram=_merge_histograms([p.histogram for p in partials if p.histogram is not None]),
        missing=frozenset().union(*(p.missing for p in partials)),
    )


class PartialAccumulator:
    """Merges partials one at a time, in order, into what :func:`merge_partials` of the whole list gives (every
    count and HLL byte): a merge as results arrive, keeping one sketch per column instead of every partial."""

    def __init__(self) -> None:
        self._first: ColumnPartial | None = None
        self._count = 0
        self._rows = self._nulls = self._trues = self._total = self._max = 0
        self._low: Any = None
        self._high: Any = None
        self._missing: set[str] = set()
        self._sketch_first: bytes | None = None
        self._sketch: HyperLogLog | None = None
        self._hist_first: bytes | None = None
        self._hist: Any = None

    @property
    def count(self) -> int:
        """Partials added so far."""
        return self._count

    def add(self, partial: ColumnPartial) -> None:
        """Merge the next partial (InvalidInput for a partial of another kind)."""
        first = self._first
        if first is None:
            self._first = first = partial
        elif partial.kind is not first.kind:
            raise InvalidInput(f"cannot merge {partial.kind.name} statistics into {first.kind.name} statistics")
        self._count += 1
        self._rows += partial.rows
        self._nulls += partial.num_nulls
        self._trues += partial.num_trues
        self._total += partial.total_length
        self._max = max(self._max, partial.max_length)
        self._low = min_present(self._low, partial.low)
        self._high = max_present(self._high, partial.high)
        self._missing |= partial.missing
        if partial.sketch is not None:
            self._add_sketch(partial.sketch)
        if partial.histogram is not None:
            if self._hist_first is None and self._hist is None:
                self._hist_first = partial.histogram
            else:
                if self._hist is None:
                    assert self._hist_first is not None
                    self._hist = kll_from_bytes(self._hist_first)
                self._hist.merge(kll_from_bytes(partial.histogram))

    def _add_sketch(self, blob: bytes) -> None:
        # merge_hlls merges in order into a fresh sketch at the smallest p: with one p throughout (every sketch
        # harvest makes) that is exactly a running merge; a sketch of a larger p is squashed by merge() as there
        if self._sketch is None:
            if self._sketch_first is None:
                self._sketch_first = blob
                return
            head = HyperLogLog.from_bytes(self._sketch_first)
            self._sketch = HyperLogLog(head.p)
            self._sketch.merge(head)
        sketch = HyperLogLog.from_bytes(blob)
        if sketch.p < self._sketch.p:
            # a smaller p arriving late: merge_hlls would have squashed each earlier sketch on its own, here their
            # union is squashed (the registers agree but for Hive's squash quirks at ranks above 18)
            self._sketch = self._sketch.squash(sketch.p)
        self._sketch.merge(sketch)

    def result(self) -> ColumnPartial:
        """The merged partial (InvalidInput when nothing was added)."""
        first = self._first
        if first is None:
            raise InvalidInput("merge_partials needs at least one partial")
        if self._count == 1:
            return first
        sketch = self._sketch_first if self._sketch is None else self._sketch.to_bytes()
        histogram = self._hist_first if self._hist is None else bytes(self._hist.serialize())
        return ColumnPartial(
            kind=first.kind, rows=self._rows, num_nulls=self._nulls, low=self._low, high=self._high,
            num_trues=self._trues, total_length=self._total, max_length=self._max, sketch=sketch,
            histogram=histogram, missing=frozenset(self._missing),
        )


def _stored_estimate(sketch: bytes) -> int:
    """The estimate a serialised HyperLogLog carries in its header (written by ``to_bytes`` from ``estimate()``),
    read without decoding the registers."""
    if len(sketch) < 5 or sketch[:3] != b"HLL":
        return HyperLogLog.from_bytes(sketch).estimate()  # raises the format error
    value = shift = 0
    for byte in sketch[4:14]:
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    return HyperLogLog.from_bytes(sketch).estimate()


def _merge_sketches(blobs: list[bytes]) -> bytes | None:
    if not blobs:
        return None
    if len(blobs) == 1:
        return blobs[0]
    # merge_hlls of the parsed sketches, byte for byte; bit-packed dense ones are unpacked together
    return merge_sketch_bytes(blobs, parse_sketch)


def check_sketch(blob: bytes) -> None:
    """Raise HllFormatError (a ValueError) where :func:`parse_sketch` would, parsing only the sketches a merge
    parses (sparse ones, 8-bit registers; kept in a :func:`parsed_sketches` scope): a bit-packed dense sketch's
    header and register bytes are checked and its registers left packed until a merge unpacks them together
    with the others (hll.merge_sketch_bytes)."""
    if not check_sketch_bytes(blob):
        parse_sketch(blob)


def parse_sketch(blob: bytes) -> HyperLogLog:
    """A serialised sketch parsed (HllFormatError, a ValueError, if it is not one); in a :func:`parsed_sketches`
    scope each distinct sketch is parsed once. The result must only be read."""
    parsed = _PARSED.get()
    if parsed is None:
        return HyperLogLog.from_bytes(blob)
    sketch = parsed.get(blob)
    if sketch is None:
        sketch = HyperLogLog.from_bytes(blob)
        limit = _PARSED_LIMIT.get()
        if limit is None or len(parsed) < limit:
            parsed[blob] = sketch
    return sketch


#: Sketches parsed in the current :func:`parsed_sketches` scope, by their bytes (None: no scope, parse each time).
_PARSED: contextvars.ContextVar[dict[bytes, HyperLogLog] | None] = contextvars.ContextVar("_PARSED", default=None)
#: How many parsed sketches the current scope keeps at most (None: every one).
_PARSED_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("_PARSED_LIMIT", default=None)


@contextlib.contextmanager
def parsed_sketches(limit: int | None = None) -> Iterator[None]:
    """A scope in which each serialised sketch merged is parsed once: a run's per-file sketches are merged into
    the table and again into each partition. The parsed sketches are only read (merge_hlls merges into a new
    sketch), never changed, and they are dropped when the scope ends, so nothing outlives the run. With a
    ``limit`` the scope keeps the first ``limit`` sketches parsed and parses later ones each time (memory
    bounded whatever the number of files)."""
    token = _PARSED.set({})
    limit_token = _PARSED_LIMIT.set(limit)
    try:
        yield
    finally:
        _PARSED_LIMIT.reset(limit_token)
        _PARSED.reset(token)


def _merge_histograms(blobs: list[bytes]) -> bytes | None:
    if not blobs:
        return None
    if len(blobs) == 1:
        return blobs[0]
    return kll_merge_all(blobs)


def _encode_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return ["d", str(value)]
    if isinstance(value, float):
        return ["f", repr(value)]
    return ["i", int(value)]


#: One decoder for every partial's header (json.loads makes one per call with arguments: not here).
_JSON = json.JSONDecoder()


def _decode_value(value: Any) -> Any:
    if value is None:
        return None
    tag, raw = value
    if tag == "d":
        return Decimal(raw)
    if tag == "f":
        return float(raw)
    return int(raw)

@dataclass(frozen=True)
class FileAnalysis:
    """One file's result: its facts and, per requested column, its partial statistics."""

    path: str
    size: int
    mtime_ns: int
    num_rows: int
    raw_data_size: int
    columns: dict[str, ColumnPartial]
    source: str  # "cache" (nothing read), "footer" (tail only), "scan" (data read)
    bytes_read: int = 0
    stripes_scanned: int = 0
    sketch_metadata_columns: tuple[str, ...] = ()
    seconds: float = 0.0
    #: CPU seconds of this file's analysis per phase (FILE_PHASES), for ANALYZE --verbose.
    phases: dict[str, float] = field(default_factory=dict)

    def stats(self) -> dict[str, ColumnStats]:
        """This file's statistics per column."""
        return {name: partial.to_stats() for name, partial in self.columns.items()}
