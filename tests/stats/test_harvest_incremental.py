"""Incremental ANALYZE: per-file results in the cache (only changed files are read again, results equal a full
run) and files of our writer carrying their sketches in ORC user metadata (no data read at all)."""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest

from metastore.orcio import OrcReader, OrcWriter
from metastore.stats.filecache import FileStatsCache
from metastore.stats.harvest import MISSING_NDV, AnalyzeResult, analyze_files, basic_stats
from metastore.stats.hll import HyperLogLog
from metastore.stats.orc_sketch_metadata import (
    SketchMetadataBuilder,
    read_sketch_metadata,
    sketch_metadata,
    sketch_metadata_key,
)

TYPES = {"id": "bigint", "name": "string", "price": "decimal(10,2)", "seen": "timestamp", "ok": "boolean",
         "score": "float", "day": "date", "blob": "binary", "code": "char(4)"}


def _table(seed: int, n: int = 4000) -> pa.Table:
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < 0.1
    return pa.table({
        "id": pa.array(rng.integers(0, 10**9, n)),
        "name": pa.array([f"n{int(k)}é" for k in rng.integers(0, n, n)], pa.string(), mask=mask),
        "price": pa.array([Decimal(int(k)).scaleb(-2) for k in rng.integers(-10**6, 10**6, n)], pa.decimal128(10, 2)),
        "seen": pa.array(rng.integers(0, 2**40, n).astype("datetime64[ms]"), mask=mask),
        "ok": pa.array(rng.random(n) < 0.5),
        "score": pa.array(rng.random(n).astype(np.float32)),
        "day": pa.array(rng.integers(0, 20000, n).astype("datetime64[D]")),
        "blob": pa.array([bytes(int(k)) for k in rng.integers(0, 30, n)], pa.binary()),
        "code": pa.array([f"c{int(k)}" for k in rng.integers(0, 50, n)]),
    })


def _files(tmp_path: Path, count: int) -> list[Path]:
    paths = []
    for k in range(count):
        path = tmp_path / f"part-{k}.orc"
        po.write_table(_table(k).drop(["code"]), path, compression="zstd")
        paths.append(path)
    return paths


FILE_TYPES = {k: v for k, v in TYPES.items() if k != "code"}


def _same(a: AnalyzeResult, b: AnalyzeResult) -> None:
    assert a.columns.keys() == b.columns.keys()
    for name in a.columns:
        x, y = a.columns[name], b.columns[name]
        assert type(x) is type(y)
        for field in x.__dataclass_fields__:
            left, right = getattr(x, field), getattr(y, field)
            if field == "bit_vector" and left is not None and right is not None:
                # the same registers (the sparse/dense byte order may differ with the merge order)
                assert (HyperLogLog.from_bytes(left).registers() == HyperLogLog.from_bytes(right).registers()).all()
            else:
                assert left == right, f"{name}.{field}: {left!r} != {right!r}"
    assert a.num_rows == b.num_rows and a.raw_data_size == b.raw_data_size


def _replace_keeping_stat(path: Path, data: bytes) -> None:
    """Overwrite a file with other bytes of the same size and give it back its size and mtime."""
    st = os.stat(path)
    assert len(data) == st.st_size
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_only_changed_files_are_read_and_the_result_equals_a_full_run(tmp_path: Path):
    files = _files(tmp_path, 6)
    cache = FileStatsCache(tmp_path / "cache.sqlite")
    first = analyze_files(files, list(FILE_TYPES), hive_types=FILE_TYPES, cache=cache, workers=1)
    assert (first.files_read, first.files_reused) == (6, 0)

    again = analyze_files(files, list(FILE_TYPES), hive_types=FILE_TYPES, cache=cache, workers=1)
    assert (again.files_read, again.files_reused, again.bytes_read) == (6 - 6, 6, 0)
    _same(again, first)

    # rewrite one file with other rows; make every other file unreadable garbage under its old size and mtime:
    # if the second run opened any of them it would fail
    po.write_table(_table(77).drop(["code"]), files[3], compression="zstd")
    for k, path in enumerate(files):
        if k != 3:
            _replace_keeping_stat(path, b"\0" * os.path.getsize(path))
    incremental = analyze_files(files, list(FILE_TYPES), hive_types=FILE_TYPES, cache=cache, workers=1)
    assert (incremental.files_read, incremental.files_reused) == (1, 5)
    assert [f.source for f in incremental.files] == ["cache"] * 3 + ["scan"] + ["cache"] * 2
    # that file once (plus the reader's first tail-sized read, which may overlap stripe bytes of small files)
    assert os.path.getsize(files[3]) / 2 < incremental.bytes_read <= os.path.getsize(files[3]) + 16 * 1024

    # the same rows analysed from scratch (fresh copies of the five unchanged files, no cache)
    fresh = []
    for k in range(6):
        path = tmp_path / "fresh" / f"part-{k}.orc"
        path.parent.mkdir(exist_ok=True)
        po.write_table(_table(77 if k == 3 else k).drop(["code"]), path, compression="zstd")
        fresh.append(path)
    full = analyze_files(fresh, list(FILE_TYPES), hive_types=FILE_TYPES, workers=1)
    _same(incremental, full)
    cache.close()


def test_cached_results_serve_narrower_requests_and_wider_ones_read_again(tmp_path: Path):
    files = _files(tmp_path, 2)
    with FileStatsCache(tmp_path / "c.sqlite") as cache:
        footer_only = analyze_files(files, ["id", "name"], hive_types=FILE_TYPES, cache=cache, want_ndv=False)
        assert footer_only.files_read == 2 and footer_only.missing["id"] == {MISSING_NDV}
        # NDV was never computed: a run that wants it must read
        with_ndv = analyze_files(files, ["id", "name"], hive_types=FILE_TYPES, cache=cache)
        assert with_ndv.files_read == 2 and not with_ndv.missing
        # a run without NDV is served by the richer cached results, sketches dropped
        again = analyze_files(files, ["name", "id"], hive_types=FILE_TYPES, cache=cache, want_ndv=False)
        assert again.files_reused == 2 and again.columns["id"].num_dvs == 0
        assert again.columns["id"].bit_vector is None and again.missing["id"] == {MISSING_NDV}
        # a new column of already cached files: those files are read for the new column only
        more = analyze_files(files, ["id", "price"], hive_types=FILE_TYPES, cache=cache)
        assert more.files_read == 2
        _same(more, analyze_files(files, ["id", "price"], hive_types=FILE_TYPES))
        everything = analyze_files(files, ["price", "id", "name"], hive_types=FILE_TYPES, cache=cache)
        assert everything.files_reused == 2
        # basic statistics of cached files need no reads either
        for path in files:
            _replace_keeping_stat(path, b"\1" * os.path.getsize(path))
        assert basic_stats(files, cache=cache).num_rows == 8000


def test_a_changed_size_or_mtime_invalidates(tmp_path: Path):
    files = _files(tmp_path, 1)
    with FileStatsCache(tmp_path / "c.sqlite") as cache:
        analyze_files(files, ["id"], hive_types=FILE_TYPES, cache=cache)
        st = os.stat(files[0])
        os.utime(files[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
        assert analyze_files(files, ["id"], hive_types=FILE_TYPES, cache=cache).files_read == 1
        assert analyze_files(files, ["id"], hive_types=FILE_TYPES, cache=cache).files_reused == 1


# -------------------------------------------------------------------------------------- sketch metadata


def _write(path: Path, table: pa.Table, metadata: dict[str, bytes] | None) -> None:
    schema = "struct<" + ",".join(f"{k}:{v}" for k, v in TYPES.items()) + ">"
    with OrcWriter(path, schema, {"orc.stripe.size": "100000", "orc.compress": "ZSTD"}, metadata) as writer:
        writer.write_batch({name: table[name].to_pylist() for name in TYPES})


def _metadata_for(table: pa.Table) -> dict[str, bytes]:
    columns = {}
    for name, hive_type in TYPES.items():
        column = table[name].combine_chunks()
        values = column.to_pylist()
        mask = np.asarray(column.is_null().to_numpy(zero_copy_only=False))
        columns[name] = (hive_type, values, mask)
    return sketch_metadata(columns)


def test_our_files_with_sketch_metadata_need_no_data_reads(tmp_path: Path):
    table = _table(5, n=30_000)
    with_meta = tmp_path / "with.orc"
    _write(with_meta, table, _metadata_for(table))
    plain = tmp_path / "plain.orc"
    _write(plain, table, None)
    with OrcReader(with_meta) as reader:
        content_end = reader.content_length
        assert len(reader.stripes) > 1
        assert sketch_metadata_key("name") in reader.user_metadata
    result = analyze_files([with_meta], list(TYPES), hive_types=TYPES, want_histograms=True)
    analysis = result.files[0]
    assert analysis.stripes_scanned == 0 and analysis.source == "footer"
    assert set(analysis.sketch_metadata_columns) == set(TYPES)
    # nothing before the tail was read except the reader's first tail-sized read
    assert result.bytes_read <= (os.path.getsize(with_meta) - content_end) + 16 * 1024
    scanned = analyze_files([plain], list(TYPES), hive_types=TYPES, want_histograms=True)
    assert scanned.files[0].stripes_scanned > 0
    for name in TYPES:
        a, b = result.columns[name], scanned.columns[name]
        for field in a.__dataclass_fields__:
            if field == "histogram":
                continue  # KLL sketches are randomised; both exist for the numeric kinds
            if field == "bit_vector" and a.bit_vector is not None:
                assert (HyperLogLog.from_bytes(a.bit_vector).registers()
                        == HyperLogLog.from_bytes(b.bit_vector).registers()).all(), name
                continue
            assert getattr(a, field) == getattr(b, field), f"{name}.{field}"
        if hasattr(a, "histogram") and name != "ok":
            assert (a.histogram is None) == (b.histogram is None)


def test_metadata_that_does_not_fit_the_file_is_ignored(tmp_path: Path):
    table = _table(6, n=5000)
    stale = _metadata_for(table.slice(0, 4000))  # e.g. a tool that rewrote the file but copied the metadata
    path = tmp_path / "stale.orc"
    _write(path, table, stale)
    result = analyze_files([path], ["id", "name"], hive_types=TYPES)
    assert result.files[0].sketch_metadata_columns == ()
    assert result.files[0].stripes_scanned > 0
    plain = tmp_path / "plain.orc"
    _write(plain, table, None)
    expected = analyze_files([plain], ["id", "name"], hive_types=TYPES)
    assert result.columns["name"].max_col_len == expected.columns["name"].max_col_len
    assert result.columns["id"].num_dvs == expected.columns["id"].num_dvs
    # a table that declares another kind than the sketch was made for (int read as double) scans too
    as_double = analyze_files([path], ["id"], hive_types={"id": "double"})
    assert as_double.files[0].stripes_scanned > 0


def test_builder_over_batches_equals_one_batch_and_unknown_input_is_refused():
    table = _table(9, n=3000)
    whole = _metadata_for(table)
    builder = SketchMetadataBuilder(TYPES)
    for start in range(0, 3000, 1000):
        part = table.slice(start, 1000)
        builder.add({name: part[name].to_pylist() for name in TYPES})
    batched = builder.metadata()
    for name in TYPES:
        a = read_sketch_metadata(whole, name)
        b = read_sketch_metadata(batched, name)
        assert a is not None and b is not None
        assert (a.rows, a.values, a.max_length, a.kind) == (b.rows, b.values, b.max_length, b.kind)
        assert (HyperLogLog.from_bytes(a.sketch).registers() == HyperLogLog.from_bytes(b.sketch).registers()).all()
    # char(4) is stored padded: the longest value is 4 bytes whatever was given
    assert read_sketch_metadata(whole, "code").max_length == 4
    with pytest.raises(Exception, match="not declared"):
        builder.add({"nope": [1]})
    with pytest.raises(Exception, match="no column statistics"):
        SketchMetadataBuilder({"m": "map<string,int>"})
    assert read_sketch_metadata({sketch_metadata_key("x"): b"garbage"}, "x") is None
