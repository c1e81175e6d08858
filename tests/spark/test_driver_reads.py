"""A re-run's few remaining files read on the driver (analyze._driver_rows): with several threads, a file's columns
scanned one a task in parallel and joined give the pieces one thread gives, and a corrupt file still fails
alone, naming itself."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest

from metastore.spark import analyze
from metastore.spark.tasks import Unit
from metastore.stats.harvest.runner import column_specs
from metastore.stats.harvest.scan import ScanOptions, stat_file
from metastore.storage import StorageOptions

TYPES = {"s": "string", "n": "bigint", "x": "double", "dec": "decimal(12,3)", "day": "date", "flag": "boolean"}


def _write(path: Path, rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    po.write_table(pa.table({
        "s": pa.array([f"v{k}" for k in rng.integers(0, 10**6, rows)]),
        "n": pa.array(rng.integers(-(2**40), 2**40, rows)),
        "x": pa.array(rng.normal(size=rows)),
        "dec": pa.array([Decimal(int(k)).scaleb(-3) for k in rng.integers(-10**9, 10**9, rows)], pa.decimal128(12, 3)),
        "day": pa.array(rng.integers(0, 20000, rows).astype("datetime64[D]")),
        "flag": pa.array(rng.random(rows) < 0.5),
    }), path, stripe_size=128 * 1024, compression="zstd")


def _units(paths: list[Path], columns: int) -> list[Unit]:
    units = []
    for k, path in enumerate(paths):
        size, mtime_ns = stat_file(str(path))
        units.append(Unit(0, k, str(path), size, mtime_ns, 0, 1, tuple(range(columns))))
    return units


def test_split_columns_on_threads_give_the_pieces_of_one_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [tmp_path / "a.orc", tmp_path / "b.orc"]
    for seed, path in enumerate(paths):
        _write(path, 60_000, seed)
    specs = tuple(column_specs(list(TYPES), TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
    units = _units(paths, len(specs))
    one = list(analyze._driver_rows(units, specs, options, StorageOptions(), threads=1))
    monkeypatch.setattr(analyze, "_DRIVER_SPLIT_BYTES", 0)  # these small files are split too
    calls: list[tuple[str, ...]] = []
    real = analyze.analyze_file_piece

    def counting(path, size, mtime_ns, wanted, *args, **kwargs):
        calls.append(tuple(s.name for s in wanted))
        return real(path, size, mtime_ns, wanted, *args, **kwargs)

    monkeypatch.setattr(analyze, "analyze_file_piece", counting)
    for threads in (2, 3, 5):
        calls.clear()
        joined = list(analyze._driver_rows(units, specs, options, StorageOptions(), threads=threads))
        if threads > len(units):
            # fewer units than threads: each file's columns were scanned one a task (threads take the next one
            # as they finish)
            assert sorted(calls) == sorted([(s.name,) for s in specs] * len(units)), calls
        else:
            assert sorted(calls) == [tuple(s.name for s in specs)] * len(units), calls
        assert len(joined) == len(one)
        for a, b in zip(one, joined, strict=True):
            assert a[:5] == b[:5] and a[6] is None and b[6] is None
            assert (a[5].plans, a[5].scans, a[5].rows, a[5].info) == (b[5].plans, b[5].scans, b[5].rows, b[5].info)


def test_a_corrupt_file_fails_alone_when_its_columns_are_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good, bad = tmp_path / "good.orc", tmp_path / "bad.orc"
    _write(good, 20_000, 1)
    _write(bad, 20_000, 2)
    bad.write_bytes(bad.read_bytes()[: bad.stat().st_size // 2])  # truncated
    specs = tuple(column_specs(list(TYPES), TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
    monkeypatch.setattr(analyze, "_DRIVER_SPLIT_BYTES", 0)
    rows = list(analyze._driver_rows(_units([bad, good], len(specs)), specs, options, StorageOptions(), threads=4))
    assert rows[0][5] is None and str(bad) in rows[0][6]
    assert rows[1][5] is not None and rows[1][6] is None


def test_column_tasks_share_the_files_parsed_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a split file's tail is read once (scan.read_tail) and every column task takes it (tail_of) instead of
    # parsing the footer again; the pieces are those of tasks that each parse it
    path = tmp_path / "a.orc"
    _write(path, 30_000, 4)
    specs = tuple(column_specs(list(TYPES), TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
    monkeypatch.setattr(analyze, "_DRIVER_SPLIT_BYTES", 0)
    shared: list[object] = []
    real = analyze.analyze_file_piece

    def recording(*args, **kwargs):
        shared.append(kwargs.get("tail_of"))
        return real(*args, **kwargs)

    monkeypatch.setattr(analyze, "analyze_file_piece", recording)
    rows = list(analyze._driver_rows(_units([path], len(specs)), specs, options, StorageOptions(), threads=2))
    assert len(shared) == len(specs) and shared[0] is not None and all(t is shared[0] for t in shared)
    monkeypatch.setattr(analyze, "read_tail", lambda *a, **k: (_ for _ in ()).throw(AssertionError("unused")))
    monkeypatch.setattr(analyze, "_DRIVER_SPLIT_BYTES", 1 << 40)
    whole = list(analyze._driver_rows(_units([path], len(specs)), specs, options, StorageOptions(), threads=2))
    a, b = rows[0][5], whole[0][5]
    assert (a.plans, a.scans, a.rows, a.raw, a.info) == (b.plans, b.scans, b.rows, b.raw, b.info)


def test_the_driver_keeps_freed_memory_once_it_reads_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the scans' temporaries are reused from one re-run's read to the next (allocator.keep_freed_memory); a run
    # with nothing to read leaves the process's allocator alone
    path = tmp_path / "a.orc"
    _write(path, 5_000, 5)
    specs = tuple(column_specs(list(TYPES), TYPES, list(TYPES)))
    options = ScanOptions(want_ndv=True, want_histograms=False, scan=True)
    calls: list[int] = []
    monkeypatch.setattr(analyze, "keep_freed_memory", lambda: calls.append(1) or True)
    assert list(analyze._driver_rows([], specs, options, StorageOptions())) == [] and not calls
    rows = list(analyze._driver_rows(_units([path], len(specs)), specs, options, StorageOptions(), threads=2))
    assert rows[0][5] is not None and calls == [1]
