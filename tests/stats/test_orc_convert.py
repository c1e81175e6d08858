"""ORC footer statistics → the statistics model: units per type, the trust rules, and Hive's rawDataSize
(checked against ORC Java's own Reader.getRawDataSize() from pyspark's jars)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest

from metastore.errors import InvalidInput
from metastore.orcio import (
    BinaryStatistics,
    BooleanStatistics,
    Category,
    ColumnStatistics,
    DateStatistics,
    DecimalStatistics,
    DoubleStatistics,
    IntegerStatistics,
    OrcReader,
    OrcWriter,
    StringStatistics,
    TimestampStatistics,
    TypeDescription,
)
from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    DateStats,
    DecimalStats,
    DoubleStats,
    LongStats,
    StringStats,
    TimestampStats,
)
from metastore.stats.orc_convert import (
    OrcWriterFacts,
    column_stats_from_orc,
    orc_column_facts,
    raw_data_size_of,
)

INT = TypeDescription.primitive(Category.INT)
BIGINT = TypeDescription.primitive(Category.LONG)
DOUBLE = TypeDescription.primitive(Category.DOUBLE)
FLOAT = TypeDescription.primitive(Category.FLOAT)
STRING = TypeDescription.primitive(Category.STRING)
BINARY = TypeDescription.primitive(Category.BINARY)
BOOLEAN = TypeDescription.primitive(Category.BOOLEAN)
DATE = TypeDescription.primitive(Category.DATE)
TIMESTAMP = TypeDescription.primitive(Category.TIMESTAMP)

JAVA_CURRENT = OrcWriterFacts(writer_id=0, writer_version=9)


# ------------------------------------------------------------------------------------------- units


def test_integer_statistics_become_long_stats_with_nulls_from_the_row_count():
    stats = IntegerStatistics(number_of_values=90, has_null=True, minimum=-5, maximum=7, sum=3)
    result = column_stats_from_orc(stats, INT, "int", num_rows=100)
    assert result == LongStats(num_nulls=10, num_dvs=0, low=-5, high=7)


def test_has_null_false_means_no_nulls_even_without_a_row_count():
    stats = IntegerStatistics(number_of_values=100, has_null=False, minimum=1, maximum=2)
    assert column_stats_from_orc(stats, BIGINT, "bigint").num_nulls == 0


def test_double_float_and_decimal_units():
    d = column_stats_from_orc(DoubleStatistics(number_of_values=3, has_null=False, minimum=-1.5, maximum=2.25),
                              DOUBLE, "double")
    assert d == DoubleStats(num_nulls=0, num_dvs=0, low=-1.5, high=2.25)
    # ORC widens floats to double: the statistic is the double of the float, as Hive shows it
    f = column_stats_from_orc(
        DoubleStatistics(number_of_values=1, has_null=False, minimum=float(np.float32(11.2)),
                            maximum=float(np.float32(67.2))), FLOAT, "float")
    assert f.low == float(np.float32(11.2)) and f.high == 67.19999694824219
    dec = column_stats_from_orc(
        DecimalStatistics(number_of_values=2, has_null=True, minimum=Decimal("-12.3"), maximum=Decimal("12.2")),
        TypeDescription.decimal(5, 2), "decimal(5,2)", num_rows=3)
    assert dec == DecimalStats(num_nulls=1, num_dvs=0, low=Decimal("-12.3"), high=Decimal("12.2"))


def test_dates_are_days_and_timestamps_floor_seconds():
    d = column_stats_from_orc(DateStatistics(number_of_values=2, has_null=False, minimum=18568, maximum=18573),
                              DATE, "date")
    assert d == DateStats(num_nulls=0, num_dvs=0, low=18568, high=18573)
    ts = TimestampStatistics(number_of_values=2, has_null=False, minimum=-1500, maximum=1_604_275_200_999)
    t = column_stats_from_orc(ts, TIMESTAMP, "timestamp", writer=JAVA_CURRENT)
    # -1.5 s floors to -2 s (Hive's TimestampWritable.getSeconds floors as well)
    assert t == TimestampStats(num_nulls=0, num_dvs=0, low=-2, high=1_604_275_200)


def test_strings_and_binaries_average_over_non_null_values():
    s = StringStatistics(number_of_values=4, has_null=True, minimum="a", maximum="zz", total_length=10)
    assert column_stats_from_orc(s, STRING, "string", num_rows=6) == StringStats(
        num_nulls=2, max_col_len=3, avg_col_len=2.5, num_dvs=0)
    b = BinaryStatistics(number_of_values=5, has_null=False, total_length=15)
    assert column_stats_from_orc(b, BINARY, "binary") == BinaryStats(num_nulls=0, max_col_len=3, avg_col_len=3.0)


def test_string_bounds_do_not_matter_hive_strings_have_no_low_high():
    # Java writes lower/upper bounds instead of min/max for values over 1024 bytes; Hive's string statistics
    # carry no min/max, so the facts are complete anyway
    s = StringStatistics(number_of_values=2, has_null=False, lower_bound="a" * 10, upper_bound="b", total_length=3000)
    facts = orc_column_facts(s, STRING, "string", num_rows=2)
    assert facts.total_length == 3000 and facts.num_nulls == 0


def test_booleans_count_trues_from_the_bucket_and_falses_from_the_rest():
    b = BooleanStatistics(number_of_values=8, has_null=True, true_count=3)
    assert column_stats_from_orc(b, BOOLEAN, "boolean", num_rows=10) == BooleanStats(
        num_nulls=2, num_trues=3, num_falses=5)
    # a bucket count larger than the values is nonsense: not trusted
    assert orc_column_facts(BooleanStatistics(number_of_values=2, has_null=False, true_count=5), BOOLEAN,
                            "boolean").num_trues is None


def test_integers_widen_to_double_and_decimal_tables():
    stats = IntegerStatistics(number_of_values=2, has_null=False, minimum=-3, maximum=9)
    assert orc_column_facts(stats, INT, "double").low == -3.0
    assert orc_column_facts(stats, INT, "decimal(10,2)").high == Decimal(9)


def test_an_unfitting_storage_type_is_refused_with_a_clear_error():
    with pytest.raises(InvalidInput, match="a string column cannot be read from an ORC int column"):
        orc_column_facts(IntegerStatistics(number_of_values=1), INT, "string")
    with pytest.raises(InvalidInput, match="array<int> has no column statistics"):
        orc_column_facts(ColumnStatistics(), INT, "array<int>")


def test_more_values_than_rows_is_an_inconsistent_file():
    with pytest.raises(InvalidInput, match="inconsistent"):
        orc_column_facts(IntegerStatistics(number_of_values=11, has_null=True), INT, "int", num_rows=10)


# -------------------------------------------------------------------------------------------- trust


def test_original_writer_version_ranges_are_not_trusted_but_counts_are():
    stats = IntegerStatistics(number_of_values=9, has_null=True, minimum=1, maximum=5)
    facts = orc_column_facts(stats, INT, "int", num_rows=10, writer=OrcWriterFacts(writer_version=0))
    assert facts.low is None and facts.high is None
    assert facts.num_nulls == 1 and facts.non_null == 9


def test_missing_value_count_leaves_nulls_unknown():
    stats = IntegerStatistics(number_of_values=0, has_null=True, minimum=1, maximum=5)
    facts = orc_column_facts(stats, INT, "int", num_rows=10, has_value_count=False)
    assert facts.num_nulls is None and facts.non_null is None


def test_nan_double_ranges_are_not_trusted():
    stats = DoubleStatistics(number_of_values=3, has_null=False, minimum=float("nan"), maximum=float("nan"))
    assert orc_column_facts(stats, DOUBLE, "double").low is None


def test_timestamp_ranges_need_orc_135_and_utc_stripes_from_non_java_writers():
    ts = TimestampStatistics(number_of_values=1, has_null=False, minimum=1000, maximum=2000)
    assert orc_column_facts(ts, TIMESTAMP, "timestamp", writer=OrcWriterFacts(writer_version=5)).low is None
    cpp_local = OrcWriterFacts(writer_id=1, writer_version=6, utc_stripes=False)
    assert orc_column_facts(ts, TIMESTAMP, "timestamp", writer=cpp_local).low is None
    cpp_utc = OrcWriterFacts(writer_id=1, writer_version=6, utc_stripes=True)
    assert orc_column_facts(ts, TIMESTAMP, "timestamp", writer=cpp_utc).low == 1
    # the pre-ORC-135 local-time fields alone are never used
    local_only = TimestampStatistics(number_of_values=1, has_null=False, minimum_local=5, maximum_local=9)
    assert orc_column_facts(local_only, TIMESTAMP, "timestamp", writer=JAVA_CURRENT).low is None


def test_decimal64_ranges_before_orc_517_are_not_trusted_from_java():
    dec = DecimalStatistics(number_of_values=1, has_null=False, minimum=Decimal(1), maximum=Decimal(2))
    old_java = OrcWriterFacts(writer_id=0, writer_version=6)
    assert orc_column_facts(dec, TypeDescription.decimal(10, 2), "decimal(10,2)", writer=old_java).low is None
    assert orc_column_facts(dec, TypeDescription.decimal(30, 2), "decimal(30,2)", writer=old_java).low == 1
    assert orc_column_facts(dec, TypeDescription.decimal(10, 2), "decimal(10,2)", writer=JAVA_CURRENT).low == 1


def _julian_epoch_day(year: int, month: int, day: int) -> int:
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083 - 2440588


def test_hybrid_calendar_dates_are_converted_like_the_values():
    # ORC Java (hybrid calendar) counts 1000-01-01 as a Julian date; Hive means the proleptic 1000-01-01
    hybrid = _julian_epoch_day(1000, 1, 1)
    proleptic = dt.date(1000, 1, 1).toordinal() - dt.date(1970, 1, 1).toordinal()
    assert hybrid != proleptic
    d = DateStatistics(number_of_values=1, has_null=False, minimum=hybrid, maximum=0)
    facts = orc_column_facts(d, DATE, "date", writer=OrcWriterFacts(hybrid_calendar=True))
    assert facts.low == proleptic and facts.high == 0


# -------------------------------------------------------------------------------------- real files


def test_facts_from_a_pyarrow_file_match_the_data(tmp_path: Path):
    rng = np.random.default_rng(7)
    n = 5000
    ints = rng.integers(-100, 100, n)
    mask = rng.random(n) < 0.2
    table = pa.table({"x": pa.array(ints, mask=mask), "s": pa.array([f"v{k}" for k in ints])})
    path = tmp_path / "a.orc"
    po.write_table(table, path, compression="zlib")
    with OrcReader(path) as reader:
        writer = OrcWriterFacts.from_reader(reader)
        x = reader.schema.children[0]
        got = column_stats_from_orc(reader.column_statistics(x.id), x, "bigint", num_rows=reader.num_rows,
                                    writer=writer)
        s = reader.schema.children[1]
        got_s = column_stats_from_orc(reader.column_statistics(s.id), s, "string", num_rows=reader.num_rows,
                                      writer=writer)
    kept = ints[~mask]
    assert got == LongStats(num_nulls=int(mask.sum()), num_dvs=0, low=int(kept.min()), high=int(kept.max()))
    assert got_s.avg_col_len == pytest.approx(sum(len(f"v{k}") for k in ints) / n, abs=0)


# ------------------------------------------------------------------------------- rawDataSize oracle

_RAW_SIZE_JAVA = """
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;

public class RawSizeOracle {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    for (String f : args) {
      try (Reader r = OrcFile.createReader(new Path(f), OrcFile.readerOptions(conf))) {
        System.out.println(r.getNumberOfRows() + " " + r.getRawDataSize());
      }
    }
  }
}
"""


@pytest.fixture(scope="module")
def raw_size_oracle(tmp_path_factory: pytest.TempPathFactory):
    """run(paths) -> [(rows, rawDataSize)] from ORC Java (pyspark's orc-core and hive-storage-api)."""
    javac, java = shutil.which("javac"), shutil.which("java")
    try:
        import pyspark
    except ImportError:
        pytest.skip("needs pyspark's jars")
    jars = Path(os.path.dirname(pyspark.__file__)) / "jars"
    if not javac or not java or not jars.is_dir():
        pytest.skip("needs javac/java and pyspark's jars")
    work = tmp_path_factory.mktemp("rawsize-oracle")
    (work / "RawSizeOracle.java").write_text(_RAW_SIZE_JAVA)
    classpath = f"{work}{os.pathsep}{jars}/*"
    subprocess.run([javac, "-nowarn", "-d", str(work), "-cp", classpath, str(work / "RawSizeOracle.java")],
                   check=True, capture_output=True)

    def run(paths: list[Path]) -> list[tuple[int, int]]:
        out = subprocess.run([java, "-cp", classpath, "RawSizeOracle", *map(str, paths)], check=True,
                             capture_output=True, text=True).stdout.split("\n")
        return [tuple(int(v) for v in line.split()) for line in out if line.strip()]

    return run


def test_raw_data_size_equals_orc_javas_for_every_type(tmp_path: Path, raw_size_oracle):
    rng = np.random.default_rng(11)
    n = 3000
    nulls = rng.random(n) < 0.25
    table = pa.table({
        "b": pa.array(rng.random(n) < 0.5, mask=nulls),
        "t": pa.array(rng.integers(-100, 100, n).astype(np.int8)),
        "sm": pa.array(rng.integers(-1000, 1000, n).astype(np.int16)),
        "i": pa.array(rng.integers(-(2**31), 2**31 - 1, n).astype(np.int32), mask=nulls),
        "l": pa.array(rng.integers(-(2**62), 2**62, n)),
        "f": pa.array(rng.random(n).astype(np.float32)),
        "d": pa.array(rng.random(n), mask=nulls),
        "s": pa.array([("x" * int(k)) for k in rng.integers(0, 40, n)], mask=nulls),
        "bin": pa.array([bytes(int(k)) for k in rng.integers(0, 9, n)]),
        "dec": pa.array([Decimal(int(k)) / 100 for k in rng.integers(-10**6, 10**6, n)], pa.decimal128(12, 2)),
        "dt": pa.array(rng.integers(0, 30000, n).astype("datetime64[D]")),
        "ts": pa.array(rng.integers(0, 2**40, n).astype("datetime64[ms]")),
        "lst": pa.array([[1, 2]] * n, pa.list_(pa.int32())),
        "st": pa.array([{"a": 1, "b": "q"}] * n),
    })
    arrow_path = tmp_path / "arrow.orc"
    po.write_table(table, arrow_path, compression="snappy")
    ours_path = tmp_path / "ours.orc"
    with OrcWriter(ours_path, "struct<s:string,v:varchar(5),c:char(3),x:double,e:decimal(20,4)>") as w:
        w.write_batch({"s": ["a", None, "ccc"] * 100, "v": ["abcdefg"] * 300, "c": ["z"] * 300,
                       "x": [1.5] * 300, "e": [Decimal("1.2345")] * 300})
    empty_path = tmp_path / "empty.orc"
    po.write_table(pa.table({"s": pa.array([], pa.string()), "i": pa.array([], pa.int32())}), empty_path)
    paths = [arrow_path, ours_path, empty_path]
    expected = raw_size_oracle(paths)
    got = []
    for p in paths:
        with OrcReader(p) as reader:
            got.append((reader.num_rows, raw_data_size_of(reader)))
    assert got == expected
