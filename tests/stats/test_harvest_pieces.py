"""Large files split by stripe ranges (the Spark pipeline's pieces) and partials merged as they arrive give, byte
for byte, what one whole-file analysis and merge_partials give."""

from __future__ import annotations

import pickle
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest

from metastore.errors import InvalidInput
from metastore.orcio import OrcReader
from metastore.stats.harvest import merge_partials
from metastore.stats.harvest.partial import PartialAccumulator
from metastore.stats.harvest.runner import column_groups, column_specs
from metastore.stats.harvest.scan import (
    ScanOptions,
    analyze_file,
    analyze_file_piece,
    join_column_groups,
    join_file_pieces,
    stat_file,
    stripes_of_piece,
)

TYPES = {
    "few": "string", "many": "string", "n": "bigint", "i": "int", "x": "double", "dec": "decimal(12,3)",
    "flag": "boolean", "day": "date", "ts": "timestamp", "blob": "binary",
}


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)

    def mask(p: float) -> np.ndarray:
        return rng.random(rows) < p

    return pa.table({
        # low NDV keeps its HLL sparse (order of entries matters there), high NDV turns it dense
        "few": pa.array([f"k{v}" for v in rng.integers(0, 300, rows)], mask=mask(0.1)),
        "many": pa.array([f"value-{v}" for v in rng.integers(0, 10**9, rows)]),
        "n": pa.array(rng.integers(-(2**40), 2**40, rows), mask=mask(0.05)),
        "i": pa.array(rng.integers(-50, 50, rows).astype(np.int32)),
        "x": pa.array(rng.normal(size=rows), mask=mask(0.2)),
        "dec": pa.array([Decimal(int(k)).scaleb(-3) for k in rng.integers(-10**9, 10**9, rows)],
                        pa.decimal128(12, 3)),
        "flag": pa.array(rng.random(rows) < 0.3, mask=mask(0.1)),
        "day": pa.array(rng.integers(-3000, 30000, rows).astype("datetime64[D]")),
        "ts": pa.array(rng.integers(-(10**15), 10**15, rows).astype("datetime64[us]"), mask=mask(0.1)),
        "blob": pa.array([rng.bytes(int(k)) for k in rng.integers(0, 20, rows)], pa.binary()),
    })


@pytest.fixture(scope="module")
def multi_stripe_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pieces") / "big.orc"
    # small stripes: the file has many, so that pieces get several each and some none
    po.write_table(_table(120_000, 3), path, stripe_size=256 * 1024, compression="zstd")
    with OrcReader(str(path)) as reader:
        assert len(reader.stripes) >= 8
    return path


@pytest.mark.parametrize("pieces", [1, 2, 3, 7, 40])
def test_pieces_joined_equal_the_whole_file_byte_for_byte(multi_stripe_file: Path, pieces: int) -> None:
    path = str(multi_stripe_file)
    size, mtime_ns = stat_file(path)
    specs = tuple(column_specs(list(TYPES), TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
    whole = analyze_file(path, size, mtime_ns, specs, options)
    # pieces travel pickled from executors and arrive in any order
    parts = [pickle.loads(pickle.dumps(analyze_file_piece(path, size, mtime_ns, specs, options, k, pieces)))
             for k in reversed(range(pieces))]
    joined = join_file_pieces(parts)
    assert joined.analysis.columns == whole.analysis.columns  # every field, every sketch byte
    assert joined.entries == whole.entries
    assert joined.info == whole.info
    assert (joined.analysis.num_rows, joined.analysis.raw_data_size) == (whole.analysis.num_rows,
                                                                       whole.analysis.raw_data_size)
    with OrcReader(path) as reader:
        stripes = len(reader.stripes)
    assert sum(p.stripes_scanned for p in parts) == stripes
    assert joined.analysis.stripes_scanned == stripes
    # the sketches that must stay sparse and the dense ones both went through the merge
    few, many = whole.analysis.columns["few"].sketch, whole.analysis.columns["many"].sketch
    assert few is not None and few[3] & 0x0F == 0 and many is not None and many[3] & 0x0F != 0


def test_stripes_are_shared_out_once(multi_stripe_file: Path) -> None:
    with OrcReader(str(multi_stripe_file)) as reader:
        offsets = [s.offset for s in reader.stripes]
        size = reader.file_length
    for pieces in (1, 2, 5, 100):
        shares = [stripes_of_piece(offsets, size, k, pieces) for k in range(pieces)]
        assert sorted(i for share in shares for i in share) == list(range(len(offsets)))


def test_join_refuses_incomplete_or_mixed_pieces(multi_stripe_file: Path, tmp_path: Path) -> None:
    path = str(multi_stripe_file)
    size, mtime_ns = stat_file(path)
    specs = tuple(column_specs(["n"], TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
    a = analyze_file_piece(path, size, mtime_ns, specs, options, 0, 3)
    c = analyze_file_piece(path, size, mtime_ns, specs, options, 2, 3)
    with pytest.raises(InvalidInput, match="are not the 3 piece"):
        join_file_pieces([a, c])
    with pytest.raises(InvalidInput, match="are not the 3 piece"):
        join_file_pieces([a, a, c])
    with pytest.raises(InvalidInput, match="piece 3 of 3 does not exist"):
        analyze_file_piece(path, size, mtime_ns, specs, options, 3, 3)


def test_accumulator_equals_merge_partials(tmp_path: Path) -> None:
    specs = tuple(column_specs(list(TYPES), TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
    analyses = []
    for k, rows in enumerate([50, 2000, 1, 700, 9000, 30]):
        path = tmp_path / f"f{k}.orc"
        po.write_table(_table(rows, 10 + k), path)
        size, mtime_ns = stat_file(str(path))
        analyses.append(analyze_file(str(path), size, mtime_ns, specs, options).analysis)
    for count in (1, 2, len(analyses)):
        for name in TYPES:
            partials = [a.columns[name] for a in analyses[:count]]
            acc = PartialAccumulator()
            for p in partials:
                acc.add(p)
            assert acc.count == count
            assert acc.result() == merge_partials(partials), name
    acc = PartialAccumulator()
    acc.add(analyses[0].columns["n"])
    with pytest.raises(InvalidInput, match="cannot merge STRING statistics into LONG"):
        acc.add(analyses[0].columns["few"])
    with pytest.raises(InvalidInput):
        PartialAccumulator().result()


def test_accumulator_merges_histograms(tmp_path: Path) -> None:
    from metastore.stats.kll import kll_from_bytes

    specs = tuple(column_specs(["x"], TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=True, scan=True)
    partials = []
    for k in range(3):
        path = tmp_path / f"h{k}.orc"
        po.write_table(_table(3000, 40 + k), path)
        size, mtime_ns = stat_file(str(path))
        partials.append(analyze_file(str(path), size, mtime_ns, specs, options).analysis.columns["x"])
    acc = PartialAccumulator()
    for p in partials:
        acc.add(p)
    got = acc.result()
    assert got.histogram is not None
    # KLL compaction is randomised: compare what the sketch says, not its bytes
    assert kll_from_bytes(got.histogram).n == sum(kll_from_bytes(p.histogram).n for p in partials if p.histogram)
    assert got.sketch == merge_partials(partials).sketch


def test_column_groups_joined_equal_one_scan_of_every_column(multi_stripe_file: Path) -> None:
    """A piece scanned as groups of its columns (in parallel on the driver) and joined is the piece one scan of
    every column gives: the same plans and scans, in the wanted order, whatever the grouping (KLL histograms are
    randomised per scan, so they are left out here)."""
    path = str(multi_stripe_file)
    size, mtime_ns = stat_file(path)
    specs = tuple(column_specs(list(TYPES), TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
    for piece, pieces in ((0, 1), (1, 3)):
        whole = analyze_file_piece(path, size, mtime_ns, specs, options, piece, pieces)
        for count in (2, 3, len(specs)):
            groups = column_groups(specs, count)
            assert len(groups) == count and sorted(s.name for g in groups for s in g) == sorted(TYPES)
            parts = [pickle.loads(pickle.dumps(analyze_file_piece(path, size, mtime_ns, g, options, piece, pieces)))
                     for g in reversed(groups)]
            joined = join_column_groups(parts, specs)
            assert (joined.plans, joined.scans) == (whole.plans, whole.scans)
            assert (joined.rows, joined.raw, joined.info, joined.stripes_scanned) == (
                whole.rows, whole.raw, whole.info, whole.stripes_scanned)
    assert column_groups(specs, 1) == [specs]
    assert len(column_groups(specs[:2], 5)) == 2


def test_joining_column_groups_refuses_overlapping_missing_or_mixed_groups(multi_stripe_file: Path) -> None:
    path = str(multi_stripe_file)
    size, mtime_ns = stat_file(path)
    specs = tuple(column_specs(["n", "x", "few"], TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
    n_x = analyze_file_piece(path, size, mtime_ns, specs[:2], options)
    x_few = analyze_file_piece(path, size, mtime_ns, specs[1:], options)
    few = analyze_file_piece(path, size, mtime_ns, specs[2:], options)
    with pytest.raises(InvalidInput, match="'x' of .* is in two column groups"):
        join_column_groups([n_x, x_few], specs)
    with pytest.raises(InvalidInput, match="not the wanted columns"):
        join_column_groups([n_x], specs)
    other_piece = analyze_file_piece(path, size, mtime_ns, specs[2:], options, 1, 2)
    with pytest.raises(InvalidInput, match="different pieces"):
        join_column_groups([n_x, other_piece], specs)
    assert join_column_groups([few, n_x], specs).plans == analyze_file_piece(path, size, mtime_ns, specs, options).plans
