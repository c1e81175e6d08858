"""KLL histograms: byte compatibility with Java DataSketches (pyspark's jar) and the typed helpers."""

from __future__ import annotations

import numpy as np
import pytest

from metastore.stats.kll import KllFormatError, histogram_for, kll_from_bytes, kll_merge, kll_of
from metastore.stats.model import StatsKind


def test_java_reads_our_sketches_and_we_read_javas(java_oracle) -> None:
    ours = [kll_of(np.arange(100) * 0.5), kll_of([]), kll_of(np.arange(100_000)), kll_of([-3.25, 7.0, 7.0])]
    text = "".join(f"P {s.serialize().hex()}\n" for s in ours) + "J 100 0.5\nJ 100000 1\nJ 0 1\n"
    lines = java_oracle("KllOracle", text)
    assert len(lines) == len(ours) + 3
    for sketch, line in zip(ours, lines[: len(ours)], strict=True):
        n, lo, hi, java_bytes = line.split()
        assert int(n) == sketch.n
        if sketch.n:
            assert float(lo) == sketch.get_min_value() and float(hi) == sketch.get_max_value()
        # Java re-serializes our bytes identically
        assert bytes.fromhex(java_bytes) == sketch.serialize()
    small, large, empty = (bytes.fromhex(x) for x in lines[len(ours) :])
    # Below the first compaction the sketch is deterministic: same bytes on both sides.
    assert small == kll_of(np.arange(100, dtype=np.float32) * np.float32(0.5)).serialize()
    assert empty == kll_of([]).serialize()
    java_large = kll_from_bytes(large)
    assert java_large.n == 100_000
    assert (java_large.get_min_value(), java_large.get_max_value()) == (0.0, 99999.0)
    assert abs(java_large.get_quantile(0.5) - 50_000) < 0.02 * 100_000


def test_histogram_for_kinds() -> None:
    dates = np.array(["2024-01-01", "2024-01-11"], dtype="datetime64[D]")
    s = kll_from_bytes(histogram_for(StatsKind.DATE, dates))
    # Dates are sketched as epoch seconds, as Hive 4 (unix_timestamp) and metastore.stats.harvest do.
    assert (s.get_min_value(), s.get_max_value()) == (19723.0 * 86400, 19733.0 * 86400)
    s = kll_from_bytes(histogram_for(StatsKind.DATE, [19723, 19733]))
    assert (s.get_min_value(), s.get_max_value()) == (19723.0 * 86400, 19733.0 * 86400)
    stamps = np.array(["1970-01-01T00:00:10", "1970-01-01T00:01:00"], dtype="datetime64[s]")
    s = kll_from_bytes(histogram_for(StatsKind.TIMESTAMP, stamps))
    assert (s.get_min_value(), s.get_max_value()) == (10.0, 60.0)
    from decimal import Decimal

    s = kll_from_bytes(histogram_for(StatsKind.DECIMAL, [Decimal("1.25"), Decimal("-2")]))
    assert (s.get_min_value(), s.get_max_value()) == (-2.0, 1.25)
    with pytest.raises(ValueError, match="string columns carry no histogram"):
        histogram_for(StatsKind.STRING, ["a"])


def test_merge_and_errors() -> None:
    merged = kll_from_bytes(
        kll_merge(histogram_for(StatsKind.LONG, [1, 2]), histogram_for(StatsKind.LONG, [5]))
    )
    assert merged.n == 3 and merged.get_max_value() == 5.0
    with pytest.raises(KllFormatError):
        kll_from_bytes(b"\x00\x01")
