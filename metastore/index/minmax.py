"""MINMAX: per stripe the smallest and largest key, and the counts of values and nulls, computed by the build's
own scan (never taken from ORC statistics, which some writers get wrong or truncate).

A stripe without values (all null) has no bounds and is always kept for comparisons, as the issue asks; its
counts still answer IS NULL / IS NOT NULL. Blocks: the minimum keys, the maximum keys, and per stripe the
value and null counts (u64 each).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from metastore.index.bind import KeyRange, KeySet, Leaf, NullTest
from metastore.index.columns import Domain, Key
from metastore.index.container import BlockRef, IndexFileReader, IndexFileWriter
from metastore.index.coverage import FileValues, decode_keys, encode_keys
from metastore.index.errors import IndexFileCorrupt

KIND = "minmax"


def write_bounds(writer: IndexFileWriter, domain: Domain, files: Sequence[FileValues]) -> dict[str, Any]:
    """Blocks of every stripe's bounds and counts (an all-null stripe stores 0/b'' bounds and 0 values)."""
    lows: list[Key] = []
    highs: list[Key] = []
    counts: list[tuple[int, int]] = []
    empty: Key = 0 if domain is Domain.INT64 else b""
    for f in files:
        for s in f.stripes:
            if len(s.distinct):
                lows.append(s.distinct[0].item() if domain is Domain.INT64 else s.distinct[0])
                highs.append(s.distinct[-1].item() if domain is Domain.INT64 else s.distinct[-1])
            else:
                lows.append(empty)
                highs.append(empty)
            counts.append((s.values if s.values is not None else len(s.distinct), s.nulls))
    low_arr = np.empty(len(lows), dtype=np.int64 if domain is Domain.INT64 else object)
    high_arr = np.empty(len(highs), dtype=low_arr.dtype)
    low_arr[:] = lows
    high_arr[:] = highs
    return {
        "min_block": writer.add_block(encode_keys(domain, low_arr)).to_list(),
        "max_block": writer.add_block(encode_keys(domain, high_arr)).to_list(),
        "counts_block": writer.add_block(np.asarray(counts, dtype="<u8").reshape(-1, 2).tobytes()).to_list(),
    }


class MinMaxReader:
    """Per-stripe range tests of one MINMAX index file."""

    def __init__(self, reader: IndexFileReader, domain: Domain, stripes: int) -> None:
        self.path = reader.path
        self.domain = domain
        d = reader.description
        raw_min = reader.block(BlockRef.from_list(d.get("min_block"), self.path), "the minimum values")
        raw_max = reader.block(BlockRef.from_list(d.get("max_block"), self.path), "the maximum values")
        raw_counts = reader.block(BlockRef.from_list(d.get("counts_block"), self.path), "the value counts")
        self.low, used_low = decode_keys(domain, raw_min, stripes, self.path)
        self.high, used_high = decode_keys(domain, raw_max, stripes, self.path)
        if used_low != len(raw_min) or used_high != len(raw_max) or len(raw_counts) != 16 * stripes:
            raise IndexFileCorrupt(self.path, "the bounds do not match the stripe table")
        counts = np.frombuffer(raw_counts, dtype="<u8").reshape(-1, 2)
        self.values = counts[:, 0].astype(np.int64)
        self.nulls = counts[:, 1].astype(np.int64)
        bounded = self.values > 0
        if np.any(np.asarray(self.low[bounded] > self.high[bounded], dtype=bool)):
            raise IndexFileCorrupt(self.path, "a stripe's minimum is above its maximum")

    def answer(self, leaf: Leaf) -> np.ndarray:
        """Per stripe, whether it may satisfy the leaf (stripes without bounds: always, for comparisons)."""
        has_values = self.values > 0
        if isinstance(leaf, NullTest):
            return self.nulls > 0 if leaf.is_null else has_values
        unbounded = ~has_values
        low, high = self.low, self.high
        if isinstance(leaf, KeyRange):
            ok = np.ones(len(low), dtype=bool)
            if leaf.low is not None:
                ok &= np.asarray(high >= leaf.low if leaf.low_inclusive else high > leaf.low, dtype=bool)
            if leaf.high is not None:
                ok &= np.asarray(low <= leaf.high if leaf.high_inclusive else low < leaf.high, dtype=bool)
            return ok | unbounded
        assert isinstance(leaf, KeySet)
        if leaf.negated:
            # only a stripe holding one value, which is excluded, cannot match
            single = np.asarray(low == high, dtype=bool)
            excluded = np.fromiter((v in set(leaf.keys) for v in low.tolist()), dtype=bool, count=len(low))
            return ~(single & excluded) | unbounded
        ok = np.zeros(len(low), dtype=bool)
        items = sorted(leaf.keys)  # type: ignore[type-var]  # keys of one column share one type (int or bytes, by its domain), so they sort
        keys = np.empty(len(items), dtype=low.dtype)
        keys[:] = items
        # a stripe may match when some key lies within [low, high]: the first key >= low must be <= high
        first = np.searchsorted(keys, low, side="left")
        inside = first < len(keys)
        ok[inside] = np.asarray(keys[first[inside]] <= high[inside], dtype=bool)
        return ok | unbounded
