"""analyze_files against ground truth computed independently (pyarrow/numpy over the same data), on ORC files
written by pyarrow (ORC C++), by Spark (ORC Java, zstd) and by our writer; partitioned and not."""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest

from metastore.errors import InvalidInput
from metastore.orcio import OrcWriter
from metastore.stats.filecache import FileStatsCache
from metastore.stats.harvest import (
    MISSING_MAX_LENGTH,
    MISSING_NDV,
    HarvestError,
    analyze_files,
    basic_stats,
    merge_results,
    results_by_partition,
)
from metastore.stats.harvest.scan import stat_ref
from metastore.stats.kll import kll_from_bytes
from metastore.stats.model import ColumnStats

HIVE_TYPES = {
    "b": "boolean",
    "t": "tinyint",
    "i": "int",
    "l": "bigint",
    "f": "float",
    "d": "double",
    "dec": "decimal(12,3)",
    "s": "string",
    "bin": "binary",
    "dt": "date",
    "ts": "timestamp",
}


# ----------------------------------------------------------------------------------------- ground truth


def truth(column: pa.ChunkedArray | pa.Array, hive_type: str) -> dict[str, Any]:
    """What Hive's statistics of the column are, computed with pyarrow/numpy (NDV exact, nulls excluded)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = arr.drop_null()
    out: dict[str, Any] = {"num_nulls": arr.null_count}
    n = len(values)
    if hive_type == "boolean":
        trues = int(pc.sum(values.cast(pa.int64())).as_py() or 0)
        return out | {"num_trues": trues, "num_falses": n - trues}
    if hive_type in ("string", "binary") or hive_type.startswith(("varchar", "char")):
        lengths = pc.binary_length(values.cast(pa.binary())).to_numpy(zero_copy_only=False).astype(np.int64)
        out |= {"max_col_len": int(lengths.max()) if n else 0, "avg_col_len": float(lengths.sum()) / n if n else 0.0}
        if hive_type != "binary":
            out["ndv"] = len(set(values.to_pylist()))
        return out
    if pa.types.is_timestamp(values.type):
        nanos = values.cast(pa.timestamp("ns")).cast(pa.int64()).to_numpy()
        keys = np.floor_divide(nanos, 10**9)
    elif pa.types.is_date(values.type):
        keys = values.cast(pa.int32()).to_numpy().astype(np.int64)
    elif pa.types.is_decimal(values.type):
        py = values.to_pylist()
        return out | {"low": min(py) if py else None, "high": max(py) if py else None,
                      "ndv": len({float(v) for v in py})}
    elif pa.types.is_floating(values.type):
        x = values.to_numpy().astype(np.float64)
        finite = x[~np.isnan(x)]
        bits = np.where(np.isnan(x), np.nan, x).view(np.int64)
        return out | {"low": float(finite.min()) if finite.size else None,
                      "high": float(finite.max()) if finite.size else None, "ndv": len(np.unique(bits))}
    else:
        keys = values.to_numpy().astype(np.int64)
    return out | {"low": int(keys.min()) if n else None, "high": int(keys.max()) if n else None,
                  "ndv": len(np.unique(keys))}


def assert_matches(stats: ColumnStats, expected: dict[str, Any], *, ndv_tolerance: float = 0.02,
                   where: str = "") -> None:
    """Every exact field equal; NDV within the relative tolerance (and never above the non-null count)."""
    for name, value in expected.items():
        if name == "ndv":
            got = stats.num_dvs
            assert abs(got - value) <= max(ndv_tolerance * value, 0), f"{where} ndv {got} vs {value}"
            continue
        got = getattr(stats, name)
        if name == "avg_col_len":
            assert got == pytest.approx(value, rel=1e-12), f"{where} {name}"
        else:
            assert got == value, f"{where} {name}: {got!r} != {value!r}"


def all_types_table(n: int, seed: int) -> pa.Table:
    """Every Hive primitive kind with nulls, NaNs, multi-byte UTF-8, empty strings, pre-epoch dates and
    negative timestamps with fractions."""
    rng = np.random.default_rng(seed)

    def nulls(p: float) -> np.ndarray:
        return rng.random(n) < p

    doubles = rng.normal(0, 1e6, n)
    doubles[rng.random(n) < 0.01] = np.nan
    words = np.array(["", "a", "héllo", "日本語", "naïve café", "x" * 40, "zz", "ÿ"], dtype=object)
    strings = [f"{w}{k}" for w, k in zip(words[rng.integers(0, len(words), n)], rng.integers(0, max(n // 3, 1), n), strict=True)]
    return pa.table({
        "b": pa.array(rng.random(n) < 0.3, mask=nulls(0.1)),
        "t": pa.array(rng.integers(-128, 128, n).astype(np.int8)),
        "i": pa.array(rng.integers(-(2**31), 2**31 - 1, n).astype(np.int32), mask=nulls(0.2)),
        "l": pa.array(rng.integers(-(2**62), 2**62, n) // rng.integers(1, 10**9, n)),
        "f": pa.array((rng.random(n) * 1000).astype(np.float32), mask=nulls(0.05)),
        "d": pa.array(doubles, mask=nulls(0.1)),
        "dec": pa.array([Decimal(int(k)).scaleb(-3) for k in rng.integers(-10**11, 10**11, n)],
                        pa.decimal128(12, 3), mask=nulls(0.1)),
        "s": pa.array(strings, pa.string(), mask=nulls(0.15)),
        "bin": pa.array([rng.bytes(int(k)) for k in rng.integers(0, 25, n)], pa.binary(), mask=nulls(0.05)),
        "dt": pa.array(rng.integers(-30000, 30000, n).astype("datetime64[D]"), mask=nulls(0.1)),
        "ts": pa.array(rng.integers(-(10**15), 10**15, n).astype("datetime64[us]"), mask=nulls(0.1)),
    })


def check_table(result, tables: Sequence[pa.Table], types: dict[str, str], *, ndv_tolerance: float = 0.02) -> None:
    for name, hive_type in types.items():
        column = pa.chunked_array([chunk for t in tables for chunk in t[name].chunks], type=tables[0][name].type)
        assert_matches(result.columns[name], truth(column, hive_type), ndv_tolerance=ndv_tolerance, where=name)


# ---------------------------------------------------------------------------------------- pyarrow files


@pytest.mark.parametrize(
    ("compression", "dictionary"),
    [("zstd", 1.0), ("snappy", 0.0), ("zlib", 1.0), ("lz4", 0.0), ("uncompressed", 0.5)],
)
def test_pyarrow_files_match_ground_truth(tmp_path: Path, compression: str, dictionary: float):
    table = all_types_table(30_000, seed=len(compression))
    path = tmp_path / f"{compression}.orc"
    # small stripes: several per file, and with threshold 0.5 some stripes are dictionary-encoded, some not
    po.write_table(table, path, compression=compression, stripe_size=200_000,
                   dictionary_key_size_threshold=dictionary, batch_size=4096)
    result = analyze_files([path], list(HIVE_TYPES), hive_types=HIVE_TYPES, workers=1)
    check_table(result, [table], HIVE_TYPES)
    assert result.num_rows == 30_000 and result.files_read == 1 and result.files_reused == 0


def test_ndv_within_two_percent_at_a_million_distinct_values(tmp_path: Path):
    n = 1_000_000
    rng = np.random.default_rng(2024)
    ids = rng.permutation(n).astype(np.int64) * 7919 - 3_000_000_000
    table = pa.table({
        "l": ids,
        "s": pc.binary_join_element_wise("customer-", pa.array(ids).cast(pa.string()), ""),
        "d": ids.astype(np.float64) / 3.0,
        "ts": (ids * 1_000_000_000 + 123).astype("datetime64[ns]"),
    })
    path = tmp_path / "million.orc"
    po.write_table(table, path, compression="zstd", dictionary_key_size_threshold=0.0)
    types = {"l": "bigint", "s": "string", "d": "double", "ts": "timestamp"}
    result = analyze_files([path], list(types), hive_types=types)
    for name in types:
        ndv = result.columns[name].num_dvs
        assert abs(ndv - n) <= 0.02 * n, f"{name}: {ndv}"


def test_table_ndv_merges_partition_sketches_within_four_percent(tmp_path: Path):
    # five partitions of 400k values over overlapping ranges: 1.2M distinct values in the table
    files = []
    for k in range(5):
        values = np.arange(k * 200_000, k * 200_000 + 400_000, dtype=np.int64)
        table = pa.table({"l": values, "s": pa.array(values).cast(pa.string())})
        path = tmp_path / f"ds={k}" / "part-0.orc"
        path.parent.mkdir()
        po.write_table(table, path, compression="snappy")
        files.append(path)
    types = {"l": "bigint", "s": "string"}
    with FileStatsCache(tmp_path / "cache.sqlite") as cache:
        partitions = [analyze_files([f], list(types), hive_types=types, cache=cache) for f in files]
        table_stats = merge_results(partitions)
        # the whole table from the same files: every per-file result comes from the cache and merges the same
        whole = analyze_files(files, list(types), hive_types=types, cache=cache)
    assert whole.files_reused == 5 and whole.files_read == 0
    # one run over all files split by partition gives each partition's statistics without reading again
    by_partition = results_by_partition(whole, lambda path: Path(path).parent.name)
    assert list(by_partition) == [f"ds={k}" for k in range(5)]
    for k, part in enumerate(partitions):
        assert by_partition[f"ds={k}"].columns == part.columns
        assert by_partition[f"ds={k}"].num_rows == 400_000
    true_ndv = 1_200_000
    for name in types:
        merged = table_stats.columns[name].num_dvs
        largest = max(p.columns[name].num_dvs for p in partitions)
        assert abs(merged - true_ndv) <= 0.04 * true_ndv, f"{name}: {merged}"
        assert merged > 2.5 * largest  # not the max of the partition NDVs (trino#50)
        assert whole.columns[name].num_dvs == merged
    assert table_stats.num_rows == 2_000_000
    assert table_stats.columns["l"].low == 0 and table_stats.columns["l"].high == 1_199_999


# -------------------------------------------------------------------------------------------- our writer


def _write_ours(path: Path, table: pa.Table, types: dict[str, str], metadata: dict[str, bytes] | None = None,
                options: dict[str, str] | None = None) -> None:
    schema = "struct<" + ",".join(f"{k}:{v}" for k, v in types.items()) + ">"
    with OrcWriter(path, schema, options or {"orc.stripe.size": "300000"}, metadata) as writer:
        writer.write_batch({name: table[name].to_pylist() for name in types})


def test_our_writer_files_match_ground_truth(tmp_path: Path):
    table = all_types_table(20_000, seed=99)
    path = tmp_path / "ours.orc"
    _write_ours(path, table, HIVE_TYPES)
    result = analyze_files([path], list(HIVE_TYPES), hive_types=HIVE_TYPES, workers=1)
    # truth from pyarrow reading our file back (pyarrow is the independent reader here)
    check_table(result, [po.read_table(path)], HIVE_TYPES)
    check_table(result, [table], HIVE_TYPES)


# ------------------------------------------------------------------------------------------------ Spark


@pytest.fixture(scope="module")
def spark_table(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A partitioned ORC table written by Spark (ORC Java 2.x, zstd): 4 partitions, 2 files each."""
    out = tmp_path_factory.mktemp("spark") / "events"
    spark.sql("""
        select id,
          cast(id % 1000 as int) as i,
          case when id % 11 = 0 then cast('NaN' as double) when id % 7 = 0 then null
               else cast(id * 1.5 - 1000 as double) end as d,
          cast(id % 100 as float) / 7 as f,
          case when id % 5 = 0 then null else concat('é', cast(id % 5000 as string), repeat('x', cast(id % 3 as int)))
               end as s,
          case when id % 13 = 0 then null else id % 3 = 0 end as b,
          cast(id % 97 as decimal(10,2)) / 3 as dec,
          date_add(date'1970-01-01', cast(id % 400 as int) - 200) as dt,
          timestamp_micros(id * 1234567 - 50000000000) as ts,
          cast(concat('bin', cast(id % 13 as string)) as binary) as bin,
          cast(id % 4 as string) as part
        from range(0, 120000)
    """).repartition(2).write.partitionBy("part").option("compression", "zstd").orc(str(out))
    return out


SPARK_TYPES = {"id": "bigint", "i": "int", "d": "double", "f": "double", "s": "string", "b": "boolean",
               "dec": "decimal(15,6)", "dt": "date", "ts": "timestamp", "bin": "binary"}


@pytest.mark.spark
def test_spark_partitioned_table_matches_ground_truth(spark_table: Path):
    partitions = sorted(p for p in spark_table.iterdir() if p.is_dir())
    assert len(partitions) == 4
    results = []
    tables_all = []
    for part in partitions:
        files = sorted(part.glob("*.orc"))
        assert len(files) >= 2
        assert files[0].name.endswith(".zstd.orc")
        result = analyze_files(files, list(SPARK_TYPES), hive_types=SPARK_TYPES)
        tables = [po.read_table(f) for f in files]
        check_table(result, tables, SPARK_TYPES)
        results.append(result)
        tables_all.extend(tables)
    merged = merge_results(results)
    check_table(merged, tables_all, SPARK_TYPES)
    assert merged.num_rows == 120_000
    # the table-level NDV of id (all distinct across partitions) is the union, not one partition's
    assert merged.columns["id"].num_dvs > 100_000


@pytest.mark.spark
def test_spark_hybrid_calendar_dates_keep_their_year_month_day(spark, tmp_path: Path):
    # ORC Java writes these in the hybrid Julian/Gregorian calendar; Hive means proleptic dates
    out = tmp_path / "old_dates"
    spark.sql("select date_add(date'1500-01-01', cast(id as int)) as dt from range(0, 40000)") \
        .coalesce(1).write.option("compression", "zstd").orc(str(out))
    files = sorted(out.glob("*.orc"))
    result = analyze_files(files, ["dt"], hive_types={"dt": "date"})
    first = (dt.date(1500, 1, 1) - dt.date(1970, 1, 1)).days
    stats = result.columns["dt"]
    assert stats.low == first and stats.high == first + 39_999
    assert abs(stats.num_dvs - 40_000) <= 0.02 * 40_000


# ------------------------------------------------------------------------------------ column matching


def test_positional_col_names_are_matched_by_table_position(tmp_path: Path):
    path = tmp_path / "hive_old.orc"
    po.write_table(pa.table({"_col0": [1, 2, 3], "_col1": ["a", None, "ccc"], "_col2": [1.5, 2.5, None]}), path)
    types = {"id": "int", "name": "string", "price": "double", "added_later": "bigint"}
    result = analyze_files([path], ["price", "name", "added_later"], hive_types=types)
    assert result.columns["price"].low == 1.5 and result.columns["price"].num_nulls == 1
    assert result.columns["name"].max_col_len == 3 and result.columns["name"].num_nulls == 1
    # a column the file does not have reads as NULL everywhere (schema evolution)
    assert result.columns["added_later"].num_nulls == 3 and result.columns["added_later"].num_dvs == 0


def test_names_match_case_insensitively_and_types_widen(tmp_path: Path):
    path = tmp_path / "mixed.orc"
    po.write_table(pa.table({"Price": pa.array([3, 1, 2], pa.int32())}), path)
    as_bigint = analyze_files([path], ["price"], hive_types={"price": "bigint"})
    assert (as_bigint.columns["price"].low, as_bigint.columns["price"].high) == (1, 3)
    as_double = analyze_files([path], ["price"], hive_types={"price": "double"})
    assert (as_double.columns["price"].low, as_double.columns["price"].high) == (1.0, 3.0)
    assert as_double.columns["price"].num_dvs == 3


def test_unfitting_storage_type_and_unknown_columns_are_clear_errors(tmp_path: Path):
    path = tmp_path / "ints.orc"
    po.write_table(pa.table({"x": pa.array([1, 2], pa.int32())}), path)
    with pytest.raises(HarvestError, match=rf"{path}.*'x' is string in the table but the file stores field 'x' as int"):
        analyze_files([path], ["x"], hive_types={"x": "string"})
    with pytest.raises(InvalidInput, match="column 'y' has no type"):
        analyze_files([path], ["y"], hive_types={"x": "int"})
    with pytest.raises(InvalidInput, match="map<string,int> has no column statistics"):
        analyze_files([path], ["m"], hive_types={"m": "map<string,int>"})


# ------------------------------------------------------------------------------------- corrupt files


def test_truncated_and_garbage_files_name_the_file(tmp_path: Path):
    good = tmp_path / "good.orc"
    po.write_table(all_types_table(2000, seed=1), good, compression="zstd")
    data = good.read_bytes()
    truncated = tmp_path / "truncated.orc"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.orc"
    garbage.write_bytes(b"this is not an orc file at all" * 10)
    missing = tmp_path / "missing.orc"
    for bad in (truncated, garbage, missing):
        with pytest.raises(HarvestError, match=f"cannot analyze {bad}"):
            analyze_files([good, bad], list(HIVE_TYPES), hive_types=HIVE_TYPES, workers=1)


def test_corrupt_stripe_data_is_reported_with_the_file(tmp_path: Path):
    path = tmp_path / "stripes.orc"
    table = pa.table({"s": pa.array([f"value-{i}" for i in range(50_000)])})
    po.write_table(table, path, compression="zlib", dictionary_key_size_threshold=0.0)
    data = bytearray(path.read_bytes())
    # overwrite the middle of the first stripe's data (the tail stays readable)
    for k in range(2000, 6000):
        data[k] = (data[k] * 7 + 13) % 256
    path.write_bytes(bytes(data))
    with pytest.raises(HarvestError, match=f"cannot analyze {path}: corrupt ORC data"):
        analyze_files([path], ["s"], hive_types={"s": "string"})


# -------------------------------------------------------------------------------- scans that read less


def test_footer_only_run_reads_no_data_and_says_what_is_missing(tmp_path: Path):
    table = all_types_table(20_000, seed=5)
    path = tmp_path / "f.orc"
    po.write_table(table, path, compression="zstd", stripe_size=100_000)
    result = analyze_files([path], list(HIVE_TYPES), hive_types=HIVE_TYPES, scan=False)
    analysis = result.files[0]
    assert analysis.stripes_scanned == 0 and analysis.source == "footer"
    assert result.bytes_read < os.path.getsize(path) / 4
    assert result.missing["s"] == {MISSING_NDV, MISSING_MAX_LENGTH}
    assert MISSING_NDV in result.missing["l"]
    expected = {name: truth(table[name], t) for name, t in HIVE_TYPES.items()}
    for name in ("b", "t", "i", "l", "f", "dec", "dt", "ts", "bin"):
        exact = {k: v for k, v in expected[name].items() if k not in ("ndv", "max_col_len")}
        if name == "d":
            continue
        assert_matches(result.columns[name], exact, where=name)
    # without the longest value, maxColLen is the least number consistent with the average
    s = result.columns["s"]
    assert s.avg_col_len == pytest.approx(expected["s"]["avg_col_len"]) and s.max_col_len == math.ceil(s.avg_col_len)


def test_max_col_len_without_ndv_reads_only_length_streams(tmp_path: Path):
    rng = np.random.default_rng(3)
    words = [("long-" * int(k)) + "end" for k in rng.integers(0, 60, 100_000)]
    table = pa.table({"s": words})
    for threshold in (0.0, 1.0):
        path = tmp_path / f"s{threshold}.orc"
        po.write_table(table, path, compression="zstd", dictionary_key_size_threshold=threshold)
        lengths_only = analyze_files([path], ["s"], hive_types={"s": "string"}, want_ndv=False)
        with_ndv = analyze_files([path], ["s"], hive_types={"s": "string"})
        expected = truth(table["s"], "string")
        assert lengths_only.columns["s"].max_col_len == expected["max_col_len"]
        assert lengths_only.missing["s"] == {MISSING_NDV}
        assert_matches(with_ndv.columns["s"], expected)
        # the value bytes (DATA / DICTIONARY_DATA) were never read
        assert lengths_only.bytes_read < with_ndv.bytes_read / 3


def test_histograms_follow_the_data(tmp_path: Path):
    rng = np.random.default_rng(8)
    n = 200_000
    values = rng.exponential(1000, n)
    days = rng.integers(0, 20000, n)
    path = tmp_path / "h.orc"
    po.write_table(pa.table({"x": values, "dt": days.astype("datetime64[D]"), "s": ["a"] * n}), path)
    types = {"x": "double", "dt": "date", "s": "string"}
    result = analyze_files([path], list(types), hive_types=types, want_histograms=True)
    x = kll_from_bytes(result.columns["x"].histogram)
    for q in (0.1, 0.5, 0.9):
        assert abs(np.mean(values <= x.get_quantile(q)) - q) < 0.02
    # Hive 4 feeds dates to the sketch as epoch seconds (unix_timestamp)
    d = kll_from_bytes(result.columns["dt"].histogram)
    assert abs(np.mean(days * 86400 <= d.get_quantile(0.5)) - 0.5) < 0.02
    assert d.n == n
    assert not hasattr(result.columns["s"], "histogram")
    assert analyze_files([path], ["x"], hive_types=types).columns["x"].histogram is None


# ------------------------------------------------------------------------------------ process & basics


def test_parallel_workers_give_the_same_result_and_report_progress(tmp_path: Path):
    files = []
    tables = []
    for k in range(4):
        table = all_types_table(5000, seed=100 + k)
        path = tmp_path / f"f{k}.orc"
        po.write_table(table, path, compression="snappy")
        files.append(path)
        tables.append(table)
    calls: list[tuple[int, int]] = []
    parallel = analyze_files(files, list(HIVE_TYPES), hive_types=HIVE_TYPES, workers=2,
                             progress=lambda done, total: calls.append((done, total)))
    serial = analyze_files(files, list(HIVE_TYPES), hive_types=HIVE_TYPES, workers=1)
    assert parallel.columns == serial.columns
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert parallel.files_read == 4 and parallel.bytes_read == serial.bytes_read
    check_table(parallel, tables, HIVE_TYPES)


def test_basic_stats_noscan_and_scan(tmp_path: Path):
    files = []
    for k, rows in enumerate((100, 2500, 0)):
        path = tmp_path / f"f{k}.orc"
        po.write_table(all_types_table(rows, seed=k) if rows else all_types_table(1, seed=0).slice(0, 0), path)
        files.append(path)
    sizes = sum(os.path.getsize(f) for f in files)
    noscan = basic_stats(files, scan=False)
    assert (noscan.num_files, noscan.total_size, noscan.num_rows, noscan.raw_data_size) == (3, sizes, None, None)
    scanned = basic_stats(files, scan=True)
    assert scanned.num_rows == 2600 and scanned.num_files == 3 and scanned.total_size == sizes
    result = analyze_files(files, ["i"], hive_types=HIVE_TYPES)
    assert scanned.raw_data_size == result.raw_data_size > 0
    with pytest.raises(HarvestError, match="missing.orc"):
        basic_stats([tmp_path / "missing.orc"], scan=False)


# ------------------------------------------------------------------------ old writers (Hive 0.11, 0.12)

ORC_EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "orc"


def _expected_rows(name: str) -> list[dict[str, Any]]:
    import gzip
    import json

    with gzip.open(ORC_EXAMPLES / "expected" / f"{name}.jsn.gz", "rt") as f:
        return [json.loads(line, parse_float=Decimal) for line in f]


def _example_truth(values: list[Any], category: str) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    out: dict[str, Any] = {"num_nulls": len(values) - len(present)}
    if category == "boolean":
        trues = sum(1 for v in present if v)
        return out | {"num_trues": trues, "num_falses": len(present) - trues}
    if category in ("string", "binary"):
        lengths = [len(v.encode()) if isinstance(v, str) else len(v) for v in present]
        out |= {"max_col_len": max(lengths, default=0), "avg_col_len": sum(lengths) / len(present) if present else 0.0}
        if category == "string":
            out["ndv"] = len(set(present))
        return out
    if category == "timestamp":
        keys = [int((dt.datetime.fromisoformat(v[:19]) - dt.datetime(1970, 1, 1)).total_seconds()) for v in present]
    elif category == "date":
        keys = [(dt.date.fromisoformat(v) - dt.date(1970, 1, 1)).days for v in present]
    elif category == "float":
        keys = [float(np.float32(float(v))) for v in present]
    elif category == "double":
        keys = [float(v) for v in present]
    elif category == "decimal":
        return out | {"low": min(present), "high": max(present), "ndv": len({float(v) for v in present})}
    else:
        keys = [int(v) for v in present]
    return out | {"low": min(keys), "high": max(keys), "ndv": len(set(keys))}


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        # writerVersion 0 (Hive 0.11 format): statistics before HIVE-8732 are not trusted for ranges
        ("orc-file-11-format", {"boolean1": "boolean", "byte1": "tinyint", "short1": "smallint", "int1": "int",
                                "long1": "bigint", "float1": "float", "double1": "double", "bytes1": "binary",
                                "string1": "string", "ts": "timestamp", "decimal1": "decimal"}),
        # writerVersion 0, positional _colN names, nulls at the end
        ("nulls-at-end-snappy", {"a": "tinyint", "b": "smallint", "c": "int", "d": "bigint", "e": "float",
                                 "f": "double", "g": "boolean"}),
        ("orc_split_elim", {"userid": "bigint", "string1": "string", "subtype": "double", "decimal1": "decimal"}),
        ("over1k_bloom", {"t": "tinyint", "si": "smallint", "i": "int", "b": "bigint", "f": "float", "d": "double",
                          "bo": "boolean", "s": "string", "ts": "timestamp", "dec": "decimal(4,2)", "bin": "binary"}),
        ("TestOrcFile.testDate1900", {"time": "timestamp", "date": "date"}),
    ],
)
def test_files_of_old_writers_match_orcs_own_dump(name: str, columns: dict[str, str]):
    path = ORC_EXAMPLES / f"{name}.orc"
    rows = _expected_rows(name)
    result = analyze_files([path], list(columns), hive_types=columns)
    assert result.num_rows == len(rows)
    positional = next(iter(rows[0])).startswith("_col")
    for position, (column, hive_type) in enumerate(columns.items()):
        key = f"_col{position}" if positional else column
        category = hive_type.split("(")[0]
        category = {"tinyint": "int", "smallint": "int", "bigint": "int"}.get(category, category)
        values = [row[key] for row in rows]
        if category == "binary":
            values = [None if v is None else bytes(v) for v in values]
        expected = _example_truth(values, category)
        stats = result.columns[column]
        if category == "float":
            # ORC's C++ dump prints floats with 7 significant digits: compare at float precision
            for bound in ("low", "high"):
                assert getattr(stats, bound) == pytest.approx(expected.pop(bound), rel=1e-6), f"{name}.{column}"
        if hive_type == "decimal":
            # Hive 0.11 decimals keep each value's scale; ORC C++ (the dump) truncates them to 6 decimals
            for bound in ("low", "high"):
                got = getattr(stats, bound).quantize(Decimal("0.000001"), rounding="ROUND_DOWN")
                assert got == expected.pop(bound), f"{name}.{column} {bound}"
            # the truncated dump merges values that differ in the 7th decimal: its distinct count is a floor
            assert stats.num_dvs >= expected.pop("ndv")
        assert_matches(stats, expected, where=f"{name}.{column}")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_corrupt_file_can_fail_its_partition_alone(tmp_path: Path, workers: int):
    # partition_failures=True: the run goes on; the failed partition's files are left out of the result and
    # the cache, and the failure names the file
    files, names = [], []
    for part in ("p1", "p2", "p3"):
        for k in range(2):
            path = tmp_path / part / f"f{k}.orc"
            path.parent.mkdir(exist_ok=True)
            po.write_table(pa.table({"a": pa.array(np.arange(1000) * (k + 1), pa.int64())}), path)
            files.append(path)
            names.append(part)
    bad = tmp_path / "p2" / "f0.orc"
    bad.write_bytes(b"ORC" + b"\x00garbage" * 50)
    cache = FileStatsCache(tmp_path / "cache.sqlite")
    result = analyze_files(files, ["a"], hive_types={"a": "bigint"}, cache=cache, partition=names,
                           partition_failures=True, workers=workers)
    assert list(result.failed) == ["p2"] and result.failed["p2"].startswith(f"cannot analyze {bad}")
    assert [f.path for f in result.files] == [str(p) for p in files if p.parent.name != "p2"]
    assert result.num_rows == 4000 and result.columns["a"].num_nulls == 0
    stored = {**cache.lookup([stat_ref(str(p)) for p in files[:2]], "p1"),
              **cache.lookup([stat_ref(str(p)) for p in files[2:4]], "p2"),
              **cache.lookup([stat_ref(str(p)) for p in files[4:]], "p3")}
    assert sorted(stored) == sorted(str(p) for p in files if p.parent.name != "p2")
    cache.close()
    # without it, the first corrupt file fails the run
    with pytest.raises(HarvestError, match=f"cannot analyze {bad}"):
        analyze_files(files, ["a"], hive_types={"a": "bigint"}, partition=names, workers=workers)
